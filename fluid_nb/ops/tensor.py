"""The tensor family: creation ops (creation.py) and shape manipulation ops (shape.py).

Importing this module registers both."""
from . import creation, shape  # noqa: F401
