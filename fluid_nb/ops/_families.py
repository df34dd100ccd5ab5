"""Imports every op family so each registers its ops (the registry loads this lazily)."""
from . import io_ops, math, activation, nn, loss, tensor, metric, lookup, compare  # noqa: F401
