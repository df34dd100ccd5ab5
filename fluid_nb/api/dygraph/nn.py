"""``fluid.dygraph.nn``: Fluid 1.8's imperative layer classes.

Most refuse when made (see ``fluid.dygraph``); the names exist so modules that import them
load. ``SequenceConv`` and ``RowConv`` are static-graph only in Fluid 1.8 as well: calling
one appends the same ops as ``layers.sequence_conv`` / ``layers.row_conv``, its parameters
made on the first call (input width known) and reused after.
"""
import copy

from .. import layers
from ...framework import unique_name
from ..param_attr import ParamAttr
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


class _StaticLayer:
    """A layer object over a static layer function: the first call names the parameter
    (unless ``param_attr`` does) so later calls share it."""

    def __init__(self, name_scope, param_attr=None):
        self._full_name = unique_name.generate(name_scope)
        self._param_attr = copy.copy(ParamAttr._to_attr(param_attr))
        if self._param_attr.name is None:
            self._param_attr.name = self._full_name + ".w_0"

    def full_name(self):
        return self._full_name

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)


class SequenceConv(_StaticLayer):
    """Convolution along time inside each sequence (``layers.sequence_conv``), as an object
    holding its filter ``[filter_size * width, num_filters]`` and bias."""

    def __init__(self, name_scope, num_filters, filter_size=3, filter_stride=1,
                 padding=None, bias_attr=None, param_attr=None, act=None):
        super().__init__(name_scope, param_attr)
        self._num_filters = num_filters
        self._filter_size = filter_size
        self._filter_stride = filter_stride
        self._padding = padding
        self._bias_attr = bias_attr
        if bias_attr is None or bias_attr is True:
            self._bias_attr = ParamAttr(name=self._full_name + ".b_0")
        self._act = act

    def forward(self, input):
        return layers.sequence_conv(input, self._num_filters, filter_size=self._filter_size,
                                    filter_stride=self._filter_stride,
                                    bias_attr=self._bias_attr, param_attr=self._param_attr,
                                    act=self._act)


class RowConv(_StaticLayer):
    """Lookahead convolution (``layers.row_conv``) as an object holding its filter
    ``[future_context_size + 1, width]``."""

    def __init__(self, name_scope, future_context_size, param_attr=None, act=None):
        super().__init__(name_scope, param_attr)
        self._future_context_size = future_context_size
        self._act = act

    def forward(self, input):
        return layers.row_conv(input, self._future_context_size, param_attr=self._param_attr,
                               act=self._act)
