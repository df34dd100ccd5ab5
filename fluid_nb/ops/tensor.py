"""The tensor family: creation ops (creation.py), shape manipulation ops (shape.py), pad and
crop ops (padding.py) and the feature ops of click-through-rate models (features.py).

Importing this module registers them all."""
from . import creation, features, padding, shape  # noqa: F401
