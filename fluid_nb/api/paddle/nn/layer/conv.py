"""Convolution layers of ``paddle.nn`` (Fluid 1.8): ``Conv2D``, ``Conv2DTranspose``,
``Conv3D``, ``Conv3DTranspose``, holding their filter and bias as parameters and calling the
``functional`` convolutions."""
import numpy as np

from .....errors import InvalidArgument, expected
from ....initializer import NormalInitializer
from ....layers.nn_conv import as_list
from .. import functional as F
from .layers import Layer

__all__ = ["Conv2D", "Conv2DTranspose", "Conv3D", "Conv3DTranspose"]


def _he_normal(fan_in_channels, shape):
    """Normal(0, sqrt(2 / (channels * prod(shape)))), Fluid 1.8's default for these
    filters."""
    return NormalInitializer(0.0, (2.0 / (fan_in_channels * np.prod(shape))) ** 0.5, 0)


class _ConvBase(Layer):
    _n = 2
    _transpose = False

    def __init__(self, num_channels, num_filters, filter_size, output_size=None, padding=0,
                 stride=1, dilation=1, groups=1, param_attr=None, bias_attr=None,
                 use_cudnn=True, act=None, data_format=None, dtype="float32"):
        super().__init__()
        where = type(self).__name__
        n = self._n
        if param_attr is False:
            raise InvalidArgument(expected(where, "param_attr", "a ParamAttr or None",
                                           "False"))
        if not isinstance(use_cudnn, bool):
            raise InvalidArgument(expected(where, "use_cudnn", "True or False",
                                           repr(use_cudnn)))
        if not self._transpose and num_channels % groups:
            raise InvalidArgument(expected(where, "num_channels", f"divisible by groups "
                                           f"({groups})", num_channels))
        self._num_channels = num_channels
        self._num_filters = num_filters
        self._groups = groups
        self._act = act
        self._use_cudnn = use_cudnn
        self._data_format = data_format
        self._dtype = dtype
        self._padding = padding  # (checked by the functional form at the call)
        self._param_attr = param_attr
        self._bias_attr = bias_attr
        self._stride = as_list(stride, n, where, "stride")
        self._dilation = as_list(dilation, n, where, "dilation")
        self._filter_size = as_list(filter_size, n, where, "filter_size")
        if output_size is None or isinstance(output_size, (list, tuple, int)):
            self._output_size = (None if output_size is None
                                 else as_list(output_size, n, where, "output_size"))
        else:
            raise InvalidArgument(expected(where, "output_size", "an int or a list of ints",
                                           repr(output_size)))
        if self._transpose:
            shape = [num_channels, num_filters // groups] + self._filter_size
            self.weight = self.create_parameter(shape, attr=param_attr, dtype=dtype)
        else:
            shape = [num_filters, num_channels // groups] + self._filter_size
            # (Fluid 1.8 sizes Conv2D's default from the whole filter shape, Conv3D's from
            # the filter size)
            fan = shape if n == 2 else self._filter_size
            self.weight = self.create_parameter(shape, attr=param_attr, dtype=dtype,
                                                default_initializer=_he_normal(num_channels,
                                                                               fan))
        self.bias = self.create_parameter([num_filters], attr=bias_attr, dtype=dtype,
                                          is_bias=True)

    def forward(self, input):
        options = dict(bias=self.bias, padding=self._padding, stride=self._stride,
                       dilation=self._dilation, groups=self._groups,
                       use_cudnn=self._use_cudnn, act=self._act,
                       data_format=self._data_format)
        if self._transpose:
            options["output_size"] = self._output_size
        fn = {(2, False): F.conv2d, (3, False): F.conv3d, (2, True): F.conv2d_transpose,
              (3, True): F.conv3d_transpose}[self._n, self._transpose]
        return fn(input, self.weight, **options)


class Conv2D(_ConvBase):
    """2-D convolution (see ``functional.conv2d``): filter [num_filters, num_channels /
    groups, kH, kW] initialised Normal(0, sqrt(2 / fan)), bias [num_filters] (zeros, none
    when ``bias_attr`` is False)."""

    def __init__(self, num_channels, num_filters, filter_size, padding=0, stride=1,
                 dilation=1, groups=1, param_attr=None, bias_attr=None, use_cudnn=True,
                 act=None, data_format="NCHW", dtype="float32"):
        super().__init__(num_channels, num_filters, filter_size, None, padding, stride,
                         dilation, groups, param_attr, bias_attr, use_cudnn, act,
                         data_format, dtype)


class Conv3D(_ConvBase):
    """3-D convolution (see ``functional.conv3d``): filter [num_filters, num_channels /
    groups, kD, kH, kW], bias [num_filters]."""

    _n = 3

    def __init__(self, num_channels, num_filters, filter_size, padding=0, stride=1,
                 dilation=1, groups=1, param_attr=None, bias_attr=None, use_cudnn=True,
                 act=None, data_format="NCDHW", dtype="float32"):
        super().__init__(num_channels, num_filters, filter_size, None, padding, stride,
                         dilation, groups, param_attr, bias_attr, use_cudnn, act,
                         data_format, dtype)


class Conv2DTranspose(_ConvBase):
    """2-D transposed convolution (see ``functional.conv2d_transpose``): filter
    [num_channels, num_filters / groups, kH, kW] (Xavier), bias [num_filters]."""

    _transpose = True

    def __init__(self, num_channels, num_filters, filter_size, output_size=None, padding=0,
                 stride=1, dilation=1, groups=1, param_attr=None, bias_attr=None,
                 use_cudnn=True, act=None, data_format="NCHW", dtype="float32"):
        super().__init__(num_channels, num_filters, filter_size, output_size, padding,
                         stride, dilation, groups, param_attr, bias_attr, use_cudnn, act,
                         data_format, dtype)


class Conv3DTranspose(_ConvBase):
    """3-D transposed convolution (see ``functional.conv3d_transpose``): filter
    [num_channels, num_filters / groups, kD, kH, kW], bias [num_filters]."""

    _n = 3
    _transpose = True

    def __init__(self, num_channels, num_filters, filter_size, output_size=None, padding=0,
                 stride=1, dilation=1, groups=1, param_attr=None, bias_attr=None,
                 use_cudnn=True, act=None, data_format="NCDHW", dtype="float32"):
        super().__init__(num_channels, num_filters, filter_size, output_size, padding,
                         stride, dilation, groups, param_attr, bias_attr, use_cudnn, act,
                         data_format, dtype)
