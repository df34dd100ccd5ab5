"""``paddle.nn.InstanceNorm`` (Fluid 1.8): instance normalisation with a scale and a bias
parameter per channel."""
from .....errors import InvalidArgument, expected
from .....framework.type_checks import check_variable_and_dtype
from ....initializer import ConstantInitializer
from ....layer_helper import LayerHelper
from .layers import Layer

__all__ = ["InstanceNorm"]


class InstanceNorm(Layer):
    """``y = scale_c * (x - mean) / sqrt(var + epsilon) + bias_c``, mean and variance
    over each sample's channel ``c`` (the spatial dims of an NCHW input)
    (``instance_norm``); scale [num_channels] starts at ones, bias at zeros."""

    def __init__(self, num_channels, epsilon=1e-5, param_attr=None, bias_attr=None,
                 dtype="float32"):
        super().__init__()
        if bias_attr is False:
            raise InvalidArgument(expected("InstanceNorm", "bias_attr", "not False",
                                           "False"))
        self._epsilon = epsilon
        self._param_attr = param_attr
        self._bias_attr = bias_attr
        self._dtype = dtype
        self.scale = self.create_parameter([num_channels], attr=param_attr, dtype=dtype,
                                           default_initializer=ConstantInitializer(1.0))
        self.bias = self.create_parameter([num_channels], attr=bias_attr, dtype=dtype,
                                          is_bias=True,
                                          default_initializer=ConstantInitializer(0.0))

    def forward(self, input):
        check_variable_and_dtype(input, "input", ("float32", "float64"), "InstanceNorm")
        helper = LayerHelper("instance_norm")
        saved_mean = helper.create_variable_for_type_inference(self._dtype, True)
        saved_variance = helper.create_variable_for_type_inference(self._dtype, True)
        out = helper.create_variable_for_type_inference(self._dtype)
        helper.append_op(type="instance_norm",
                         inputs={"X": [input], "Scale": [self.scale], "Bias": [self.bias]},
                         outputs={"Y": [out], "SavedMean": [saved_mean],
                                  "SavedVariance": [saved_variance]},
                         attrs={"epsilon": self._epsilon})
        return out
