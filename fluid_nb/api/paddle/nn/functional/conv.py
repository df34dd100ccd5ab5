"""Convolutions of ``paddle.nn.functional`` (Fluid 1.8), with the filter and bias passed
in as Variables (``fluid.layers.conv2d`` creates its own).

``padding`` takes every form Fluid 1.8 does: 'SAME' / 'VALID'; an int; one int per spatial
dim; a (before, after) int per spatial dim; or one [before, after] pair per dim of the data
layout, batch and channel pairs [0, 0]. A bad option is a ValueError, as in Fluid 1.8.
"""
from .... import layers
from .....errors import InvalidArgument, expected
from .....framework.type_checks import check_variable_and_dtype, require_variable
from ....layer_helper import LayerHelper
from ....layers.nn_conv import as_list, conv_padding

__all__ = ["conv2d", "conv2d_transpose", "conv3d", "conv3d_transpose"]

_FORMATS = {2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}


def _prepare(where, n, input, weight, groups, use_cudnn, data_format):
    """Entry checks shared by the four functions; returns (channels, channel_dim)."""
    require_variable(where, "input", input)
    require_variable(where, "weight", weight)
    if not isinstance(use_cudnn, bool):
        raise InvalidArgument(expected(where, "use_cudnn", "True or False", repr(use_cudnn)))
    if data_format not in _FORMATS[n]:
        raise InvalidArgument(expected(where, "data_format",
                                       " or ".join(repr(f) for f in _FORMATS[n]),
                                       repr(data_format)))
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise InvalidArgument(expected(where, "groups", "a positive int", repr(groups)))
    channel_dim = -1 if data_format == _FORMATS[n][1] else 1
    channels = input.shape[channel_dim]
    if channels < 0:
        raise InvalidArgument(expected(where, "input's channel dim", "known (>= 0)",
                                       f"shape {list(input.shape)}"))
    if channels % groups:
        raise InvalidArgument(expected(where, "input channels", f"divisible by groups "
                                       f"({groups})", f"{channels} (shape "
                                       f"{list(input.shape)})"))
    return channels, channel_dim


def _finish(helper, op_type, inputs, attrs, input, bias, channel_dim, where):
    check_variable_and_dtype(input, "input", ("float16", "float32", "float64"), where)
    pre_bias = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type=op_type, inputs=inputs, outputs={"Output": [pre_bias]},
                     attrs=attrs)
    pre_act = pre_bias if bias is None else layers.elementwise_add(pre_bias, bias,
                                                                   axis=channel_dim)
    return helper.append_activation(pre_act)


def _conv(n, input, weight, bias, padding, stride, dilation, groups, use_cudnn, act,
          data_format, name):
    where = f"conv{n}d"
    channels, channel_dim = _prepare(where, n, input, weight, groups, use_cudnn, data_format)
    filters = weight.shape[0]
    if filters % groups:
        raise InvalidArgument(expected(where, "the number of filters", f"divisible by groups "
                                       f"({groups})", f"{filters} (weight shape "
                                       f"{list(weight.shape)})"))
    paddings, algorithm = conv_padding(padding, where, data_format, n)
    op_type = where
    if n == 2 and channels == groups and filters % channels == 0 and not use_cudnn:
        op_type = "depthwise_conv2d"
    attrs = {"strides": as_list(stride, n, where, "stride"), "paddings": paddings,
             "dilations": as_list(dilation, n, where, "dilation"), "groups": groups,
             "use_cudnn": use_cudnn, "use_mkldnn": False, "padding_algorithm": algorithm,
             "data_format": data_format}
    if n == 2:
        attrs["fuse_relu_before_depthwise_conv"] = False
    helper = LayerHelper(op_type, act=act, use_cudnn=use_cudnn, name=name)
    return _finish(helper, op_type, {"Input": [input], "Filter": [weight]}, attrs, input,
                   bias, channel_dim, where)


def _conv_transpose(n, input, weight, bias, output_size, padding, stride, dilation, groups,
                    use_cudnn, act, data_format, name):
    where = f"conv{n}d_transpose"
    channels, channel_dim = _prepare(where, n, input, weight, groups, use_cudnn, data_format)
    paddings, algorithm = conv_padding(padding, where, data_format, n)
    if output_size is None:
        output_size = []
    elif isinstance(output_size, (list, tuple, int)):
        output_size = as_list(output_size, n, where, "output_size")
    else:
        raise InvalidArgument(expected(where, "output_size", "an int or a list of ints",
                                       repr(output_size)))
    op_type = where
    if n == 2 and channels == groups and weight.shape[1] == 1 and not use_cudnn:
        op_type = "depthwise_conv2d_transpose"
    attrs = {"output_size": output_size, "strides": as_list(stride, n, where, "stride"),
             "paddings": paddings, "padding_algorithm": algorithm,
             "dilations": as_list(dilation, n, where, "dilation"), "groups": groups,
             "use_cudnn": use_cudnn,
             # the 3-D transpose op names its layouts as the 2-D one does
             "data_format": {"NCDHW": "NCHW", "NDHWC": "NHWC"}.get(data_format, data_format)}
    helper = LayerHelper(op_type, act=act, use_cudnn=use_cudnn, name=name)
    return _finish(helper, op_type, {"Input": [input], "Filter": [weight]}, attrs, input,
                   bias, channel_dim, where)


def conv2d(input, weight, bias=None, padding=0, stride=1, dilation=1, groups=1,
           use_cudnn=True, act=None, data_format="NCHW", name=None):
    """``out = act(W * X + b)``: ``input`` NCHW or NHWC, ``weight`` [M, C / groups, kH, kW],
    ``bias`` [M] or None (``conv2d``; ``depthwise_conv2d`` when each group is one channel
    and cuDNN is off). ``H_out = (H + pad_before + pad_after - (dilation * (kH - 1) + 1))
    / stride + 1``."""
    return _conv(2, input, weight, bias, padding, stride, dilation, groups, use_cudnn, act,
                 data_format, name)


def conv3d(input, weight, bias=None, padding=0, stride=1, dilation=1, groups=1,
           use_cudnn=True, act=None, data_format="NCDHW", name=None):
    """``out = act(W * X + b)`` over D, H, W: ``input`` NCDHW or NDHWC, ``weight``
    [M, C / groups, kD, kH, kW], ``bias`` [M] or None (``conv3d``)."""
    return _conv(3, input, weight, bias, padding, stride, dilation, groups, use_cudnn, act,
                 data_format, name)


def conv2d_transpose(input, weight, bias=None, output_size=None, padding=0, stride=1,
                     dilation=1, groups=1, use_cudnn=True, act=None, data_format="NCHW",
                     name=None):
    """The gradient of conv2d with respect to its input, as a layer: ``weight``
    [C, M / groups, kH, kW]; ``H_out = (H - 1) * stride - pad_before - pad_after +
    dilation * (kH - 1) + 1`` (``output_size`` may ask for up to ``stride - 1`` more)
    (``conv2d_transpose``)."""
    return _conv_transpose(2, input, weight, bias, output_size, padding, stride, dilation,
                           groups, use_cudnn, act, data_format, name)


def conv3d_transpose(input, weight, bias=None, output_size=None, padding=0, stride=1,
                     dilation=1, groups=1, use_cudnn=True, act=None, data_format="NCDHW",
                     name=None):
    """conv2d_transpose over D, H, W (``conv3d_transpose``), ``weight``
    [C, M / groups, kD, kH, kW]."""
    return _conv_transpose(3, input, weight, bias, output_size, padding, stride, dilation,
                           groups, use_cudnn, act, data_format, name)
