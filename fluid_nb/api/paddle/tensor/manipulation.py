"""Reordering of ``paddle.tensor.manipulation`` (Fluid 1.8): ``flip`` and ``roll``, the
layers of ``fluid_nb.api.layers`` themselves (same signature, checks and ops)."""
from ...layers.math import flip, roll

__all__ = ["flip", "roll"]
