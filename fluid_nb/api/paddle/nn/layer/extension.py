"""``paddle.nn.RowConv`` (Fluid 1.8): the lookahead convolution with its filter as a
parameter."""
from .. import functional
from .layers import Layer

__all__ = ["RowConv"]


class RowConv(Layer):
    """``row_conv`` over ``num_channels`` features looking ``future_context_size`` steps
    ahead: its weight [future_context_size + 1, num_channels] is a parameter, ``act``
    follows."""

    def __init__(self, num_channels, future_context_size, param_attr=None, act=None,
                 dtype="float32"):
        super().__init__()
        self._dtype = dtype
        self._param_attr = param_attr
        self._act = act
        self.weight = self.create_parameter([future_context_size + 1, num_channels],
                                            attr=param_attr, dtype=dtype)

    def forward(self, input):
        return functional.row_conv(input, self.weight, act=self._act)
