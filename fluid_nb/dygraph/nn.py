"""``fluid.dygraph.nn``: Fluid 1.8's imperative layer classes, each refusing when made (see
``fluid.dygraph``); the names exist so modules that import them load."""
from .base import refuse

_LAYERS = ("Layer", "Linear", "Conv2D", "Conv3D", "Conv2DTranspose", "Conv3DTranspose", "Pool2D",
           "BatchNorm", "Dropout", "Embedding", "GRUUnit", "LayerNorm", "NCE", "PRelu",
           "BilinearTensorProduct", "GroupNorm", "SpectralNorm", "TreeConv", "InstanceNorm")

__all__ = list(_LAYERS)


def _refusing_layer(name):
    def __init__(self, *args, **kwargs):
        refuse(f"fluid.dygraph.{name}")
    return type(name, (), {"__init__": __init__, "__doc__": f"Fluid's dygraph {name}: "
                           f"refused (imperative mode is not built)."})


for _name in _LAYERS:
    globals()[_name] = _refusing_layer(_name)
del _name
