"""``fluid.lod_tensor``: the module path of ``create_lod_tensor`` and
``create_random_int_lodtensor`` in Fluid 1.x (they live in ``exec/``)."""
from .exec import create_lod_tensor, create_random_int_lodtensor  # noqa: F401

__all__ = ["create_lod_tensor", "create_random_int_lodtensor"]
