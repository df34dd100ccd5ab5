"""Small real datasets as Fluid-style readers (callables returning sample iterators).

The data ships inside the package; nothing is downloaded.
"""
from . import digits, uci_housing  # noqa: F401
