"""Random tensors of ``paddle.tensor.random`` (Fluid 1.8): ``randint`` (uniform integers),
``randn`` (standard normal) and ``randperm`` (a permutation), the layers of
``fluid_nb.api.layers`` themselves (same signature, checks and ops: ``randint``,
``gaussian_random``, ``randperm``)."""
from ...layers.creation import randint, randn, randperm

__all__ = ["randperm", "randn", "randint"]
