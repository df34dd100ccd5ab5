"""Transposed, 3-D, adaptive and deformable convolution and pooling layers of Fluid 1.8:
conv2d_transpose, conv3d, conv3d_transpose, pool3d, adaptive_pool2d, adaptive_pool3d,
deformable_conv; and the padding rules every conv and pool layer shares (``conv_padding``).

Each builds the op types, attributes and parameter names of the Fluid 1.8 function of the
same name; ``fluid.layers`` exports them through ``nn``.
"""
from ...errors import InvalidArgument
from ...tensor.dtypes import VarType
from ..initializer import NormalInitializer
from ..layer_helper import LayerHelper
from .arg_checks import (NAME, POSITIVE_INT, activation, boolean, checks, int_or_ints, one_of,
                         optional, variable)

__all__ = ["conv2d_transpose", "conv3d", "conv3d_transpose", "pool3d", "adaptive_pool2d",
           "adaptive_pool3d", "deformable_conv"]

_CHANNEL_LAST = ("NHWC", "NDHWC")


def as_list(value, n, where, name):
    """An int repeated ``n`` times, or a list/tuple of ``n`` ints."""
    if isinstance(value, int) and not isinstance(value, bool):
        return [value] * n
    if isinstance(value, (list, tuple)) and len(value) == n and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        return list(value)
    raise InvalidArgument(f"{where}: {name} expected an int or {n} ints, but received "
                          f"{value!r}")


def conv_padding(padding, where, data_format, n=2, collapse=True):
    """(paddings attribute, padding_algorithm) from the forms Fluid's conv and pool layers
    take: 'SAME'/'VALID'; an int; ``n`` ints; ``2n`` ints (before and after per dim); or
    one [before, after] pair per dim of the data layout, whose batch and channel pairs must
    be [0, 0]. ``2n`` values that are symmetric collapse to ``n`` when ``collapse``."""
    if isinstance(padding, str):
        algorithm = padding.upper()
        if algorithm not in ("SAME", "VALID"):
            raise InvalidArgument(f"{where}: padding expected 'SAME', 'VALID', an int or a "
                                  f"list, but received '{padding}'")
        return [0] * n, algorithm
    if isinstance(padding, int) and not isinstance(padding, bool):
        return [padding] * n, "EXPLICIT"
    if not isinstance(padding, (list, tuple)):
        raise InvalidArgument(f"{where}: padding expected 'SAME', 'VALID', an int or a list, "
                              f"but received {padding!r}")
    padding = list(padding)
    if len(padding) == n + 2 and all(isinstance(p, (list, tuple)) for p in padding):
        channel_last = data_format in _CHANNEL_LAST
        outer = (0, n + 1) if channel_last else (0, 1)
        if any(list(padding[i]) != [0, 0] for i in outer):
            raise InvalidArgument(
                f"{where}: padding of the batch and channel dims expected [0, 0] (for "
                f"{data_format}, pairs {outer[0]} and {outer[1]}), but received {padding}")
        spatial = padding[1:n + 1] if channel_last else padding[2:]
        padding = [int(p) for pair in spatial for p in pair]
    if len(padding) not in (n, 2 * n) or not all(
            isinstance(p, int) and not isinstance(p, bool) for p in padding):
        raise InvalidArgument(f"{where}: padding expected an int, {n} ints, {2 * n} ints or "
                              f"{n + 2} pairs, but received {padding}")
    if collapse and len(padding) == 2 * n and all(
            padding[2 * i] == padding[2 * i + 1] for i in range(n)):
        padding = padding[0::2]
    return padding, "EXPLICIT"


def _channels(input, data_format, where):
    c = input.shape[-1] if data_format in _CHANNEL_LAST else input.shape[1]
    if c < 0:
        raise InvalidArgument(f"{where}: input channels expected known, but received shape "
                              f"{list(input.shape)}")
    return c


def _bias_dims(data_format, rank):
    """(dim_start, dim_end) of the channel dim, for append_bias_op."""
    return (rank - 1, rank) if data_format in _CHANNEL_LAST else (1, 2)


# --- conv3d -------------------------------------------------------------------------------
@checks(input=variable, num_filters=POSITIVE_INT, filter_size=int_or_ints(3, 1),
        stride=int_or_ints(3, 1), dilation=int_or_ints(3, 1), groups=optional(POSITIVE_INT),
        use_cudnn=boolean, act=activation, name=NAME, data_format=one_of("NCDHW", "NDHWC"))
def conv3d(input, num_filters, filter_size, stride=1, padding=0, dilation=1, groups=None,
           param_attr=None, bias_attr=None, use_cudnn=True, act=None, name=None,
           data_format="NCDHW"):
    """3-D convolution (``conv3d``) of [N, C, D, H, W] (or NDHWC) with a filter
    ``conv3d_0.w_0`` [num_filters, C/groups, kd, kh, kw] (Normal(0, sqrt(2 / (kd*kh*kw*C))))
    and a bias on the channel dim:

    Out[n, m, z, y, x] = sum_{c,p,q,r} In_pad[n, c, z*sd + p*dd, y*sh + q*dh, x*sw + r*dw]
    * W[m, c, p, q, r] + b[m]."""
    if param_attr is False:
        raise InvalidArgument("conv3d: param_attr expected a ParamAttr or None, but received "
                              "False")
    helper = LayerHelper("conv3d", input=input, param_attr=param_attr, bias_attr=bias_attr,
                         act=act, name=name)
    dtype = helper.input_dtype()
    channels = _channels(input, data_format, "conv3d")
    if groups is not None and channels % groups != 0:
        raise InvalidArgument(f"conv3d: groups expected to divide the {channels} input "
                              f"channels, but received {groups}")
    filter_size = as_list(filter_size, 3, "conv3d", "filter_size")
    stride = as_list(stride, 3, "conv3d", "stride")
    dilation = as_list(dilation, 3, "conv3d", "dilation")
    paddings, algorithm = conv_padding(padding, "conv3d", data_format, 3)
    filter_shape = [num_filters, channels // (groups or 1)] + filter_size
    std = (2.0 / (filter_size[0] * filter_size[1] * filter_size[2] * channels)) ** 0.5
    w = helper.create_parameter(attr=helper.param_attr, shape=filter_shape, dtype=dtype,
                                default_initializer=NormalInitializer(0.0, std, 0))
    pre_bias = helper.create_variable_for_type_inference(dtype)
    helper.append_op(type="conv3d", inputs={"Input": [input], "Filter": [w]},
                     outputs={"Output": [pre_bias]},
                     attrs={"strides": stride, "paddings": paddings, "dilations": dilation,
                            "groups": groups or 1, "use_cudnn": use_cudnn,
                            "use_mkldnn": False, "padding_algorithm": algorithm,
                            "data_format": data_format})
    start, end = _bias_dims(data_format, 5)
    return helper.append_activation(helper.append_bias_op(pre_bias, dim_start=start,
                                                          dim_end=end))


# --- transposed convolutions -----------------------------------------------------------------
def _conv_transpose(where, n, input, num_filters, output_size, filter_size, padding, stride,
                    dilation, groups, param_attr, bias_attr, use_cudnn, act, name,
                    data_format):
    if param_attr is False:
        raise InvalidArgument(f"{where}: param_attr expected a ParamAttr or None, but "
                              f"received False")
    channels = _channels(input, data_format, where)
    op_type = f"conv{n}d_transpose"
    if n == 2 and channels == groups and num_filters == channels and not use_cudnn:
        op_type = "depthwise_conv2d_transpose"
    helper = LayerHelper(op_type, input=input, param_attr=param_attr, bias_attr=bias_attr,
                         act=act, name=name)
    stride = as_list(stride, n, where, "stride")
    dilation = as_list(dilation, n, where, "dilation")
    paddings, algorithm = conv_padding(padding, where, data_format, n, collapse=False)
    if len(paddings) == n:
        paddings = [p for v in paddings for p in (v, v)]
    spatial = input.shape[1:1 + n] if data_format in _CHANNEL_LAST else input.shape[2:]
    if output_size is not None:
        output_size = as_list(output_size, n, where, "output_size")
    if filter_size is None:
        if output_size is None:
            raise InvalidArgument(f"{where}: output_size expected when filter_size is None, "
                                  f"but received None")
        filter_size = [(output_size[i] - (spatial[i] - 1) * stride[i] + paddings[2 * i]
                        + paddings[2 * i + 1] - 1) // dilation[i] + 1 for i in range(n)]
    else:
        filter_size = as_list(filter_size, n, where, "filter_size")
    if all(paddings[2 * i] == paddings[2 * i + 1] for i in range(n)):
        paddings = paddings[0::2]
    groups = 1 if groups is None else groups
    if channels % groups or num_filters % groups:
        raise InvalidArgument(f"{where}: groups expected to divide the {channels} input "
                              f"channels and num_filters ({num_filters}), but received "
                              f"{groups}")
    w = helper.create_parameter(attr=helper.param_attr, dtype=input.dtype,
                                shape=[channels, num_filters // groups] + filter_size)
    pre_bias = helper.create_variable_for_type_inference(dtype=input.dtype)
    # Fluid 1.8 writes conv3d_transpose's layout with the 2-D names
    op_format = {"NCDHW": "NCHW", "NDHWC": "NHWC"}.get(data_format, data_format)
    helper.append_op(type=op_type, inputs={"Input": [input], "Filter": [w]},
                     outputs={"Output": [pre_bias]},
                     attrs={"output_size": output_size or [], "strides": stride,
                            "paddings": paddings, "padding_algorithm": algorithm,
                            "dilations": dilation, "groups": groups, "use_cudnn": use_cudnn,
                            "data_format": op_format})
    start, end = _bias_dims(data_format, n + 2)
    return helper.append_activation(helper.append_bias_op(pre_bias, dim_start=start,
                                                          dim_end=end))


@checks(input=variable, num_filters=POSITIVE_INT, output_size=optional(int_or_ints(2, 1)),
        filter_size=optional(int_or_ints(2, 1)), stride=int_or_ints(2, 1),
        dilation=int_or_ints(2, 1), groups=optional(POSITIVE_INT), use_cudnn=boolean,
        act=activation, name=NAME, data_format=one_of("NCHW", "NHWC"))
def conv2d_transpose(input, num_filters, output_size=None, filter_size=None, padding=0,
                     stride=1, dilation=1, groups=None, param_attr=None, bias_attr=None,
                     use_cudnn=True, act=None, name=None, data_format="NCHW"):
    """Transposed 2-D convolution (``conv2d_transpose``; ``depthwise_conv2d_transpose``
    when groups, num_filters and the channels are equal and use_cudnn is False), the
    gradient of conv2d with respect to its input. Filter ``conv2d_transpose_0.w_0``
    [C, num_filters/groups, kh, kw]; bias on the channel dim.

    H_out = (H - 1) * stride - pad_top - pad_bottom + dilation * (kh - 1) + 1, or
    output_size (in [H_out, H_out + stride)); without filter_size, kh is worked out from
    output_size."""
    return _conv_transpose("conv2d_transpose", 2, input, num_filters, output_size,
                           filter_size, padding, stride, dilation, groups, param_attr,
                           bias_attr, use_cudnn, act, name, data_format)


@checks(input=variable, num_filters=POSITIVE_INT, output_size=optional(int_or_ints(3, 1)),
        filter_size=optional(int_or_ints(3, 1)), stride=int_or_ints(3, 1),
        dilation=int_or_ints(3, 1), groups=optional(POSITIVE_INT), use_cudnn=boolean,
        act=activation, name=NAME, data_format=one_of("NCDHW", "NDHWC"))
def conv3d_transpose(input, num_filters, output_size=None, filter_size=None, padding=0,
                     stride=1, dilation=1, groups=None, param_attr=None, bias_attr=None,
                     use_cudnn=True, act=None, name=None, data_format="NCDHW"):
    """Transposed 3-D convolution (``conv3d_transpose``), the gradient of conv3d with
    respect to its input; sizes as in conv2d_transpose, per D, H and W."""
    return _conv_transpose("conv3d_transpose", 3, input, num_filters, output_size,
                           filter_size, padding, stride, dilation, groups, param_attr,
                           bias_attr, use_cudnn, act, name, data_format)


# --- pooling ----------------------------------------------------------------------------------
@checks(input=variable, pool_size=int_or_ints(3, -1), pool_type=one_of("max", "avg"),
        pool_stride=int_or_ints(3, 1), global_pooling=boolean, use_cudnn=boolean,
        ceil_mode=boolean, name=NAME, exclusive=boolean, data_format=one_of("NCDHW", "NDHWC"))
def pool3d(input, pool_size=-1, pool_type="max", pool_stride=1, pool_padding=0,
           global_pooling=False, use_cudnn=True, ceil_mode=False, name=None, exclusive=True,
           data_format="NCDHW"):
    """Max or average pooling over kd x kh x kw windows (``pool3d``); padding forms as in
    conv3d; D_out = (D + pads - kd) // stride + 1 (ceil_mode rounds up)."""
    if not global_pooling and pool_size == -1:
        raise InvalidArgument("pool3d: pool_size expected a size when global_pooling is "
                              "False, but received -1")
    pool_size = as_list(pool_size, 3, "pool3d", "pool_size")
    pool_stride = as_list(pool_stride, 3, "pool3d", "pool_stride")
    paddings, algorithm = conv_padding(pool_padding, "pool3d", data_format, 3)
    if algorithm == "VALID" and ceil_mode:
        raise InvalidArgument("pool3d: ceil_mode expected False with padding 'VALID', but "
                              "received True")
    helper = LayerHelper("pool3d", input=input, name=name)
    out = helper.create_variable_for_type_inference(helper.input_dtype())
    helper.append_op(type="pool3d", inputs={"X": [input]}, outputs={"Out": [out]},
                     attrs={"pooling_type": pool_type, "ksize": pool_size,
                            "global_pooling": global_pooling, "strides": pool_stride,
                            "paddings": paddings, "padding_algorithm": algorithm,
                            "use_cudnn": use_cudnn, "ceil_mode": ceil_mode,
                            "use_mkldnn": False, "exclusive": exclusive,
                            "data_format": data_format})
    return out


def _adaptive_pool(n, input, pool_size, pool_type, require_index, name):
    where = f"adaptive_pool{n}d"
    if pool_type == "avg" and require_index:
        raise InvalidArgument(f"{where}: require_index expected False when pool_type is "
                              f"'avg', but received True")
    pool_size = as_list(pool_size, n, where, "pool_size")
    op_type = f"max_pool{n}d_with_index" if pool_type == "max" else f"pool{n}d"
    helper = LayerHelper(op_type, input=input, name=name)
    out = helper.create_variable_for_type_inference(helper.input_dtype())
    outputs = {"Out": [out]}
    mask = None
    if pool_type == "max":
        mask = helper.create_variable_for_type_inference(VarType.INT32)
        outputs["Mask"] = [mask]
    helper.append_op(type=op_type, inputs={"X": [input]}, outputs=outputs,
                     attrs={"pooling_type": pool_type, "ksize": pool_size, "adaptive": True})
    return (out, mask) if require_index else out


@checks(input=variable, pool_size=int_or_ints(2, 1), pool_type=one_of("max", "avg"),
        require_index=boolean, name=NAME)
def adaptive_pool2d(input, pool_size, pool_type="max", require_index=False, name=None):
    """Pooling to a fixed output size [N, C, ph, pw]: bin i along H covers rows
    [floor(i*H/ph), ceil((i+1)*H/ph)). max uses ``max_pool2d_with_index`` (its Mask, the
    flat index of each maximum, is returned too with require_index), avg ``pool2d`` with
    adaptive=True."""
    return _adaptive_pool(2, input, pool_size, pool_type, require_index, name)


@checks(input=variable, pool_size=int_or_ints(3, 1), pool_type=one_of("max", "avg"),
        require_index=boolean, name=NAME)
def adaptive_pool3d(input, pool_size, pool_type="max", require_index=False, name=None):
    """adaptive_pool2d over D, H and W (``max_pool3d_with_index`` or ``pool3d``)."""
    return _adaptive_pool(3, input, pool_size, pool_type, require_index, name)


# --- deformable convolution -----------------------------------------------------------------
@checks(input=variable, offset=variable, mask=optional(variable), num_filters=POSITIVE_INT,
        filter_size=int_or_ints(2, 1), stride=int_or_ints(2, 1), padding=int_or_ints(2, 0),
        dilation=int_or_ints(2, 1), groups=optional(POSITIVE_INT),
        deformable_groups=optional(POSITIVE_INT), im2col_step=optional(POSITIVE_INT),
        modulated=boolean, name=NAME)
def deformable_conv(input, offset, mask, num_filters, filter_size, stride=1, padding=0,
                    dilation=1, groups=None, deformable_groups=None, im2col_step=None,
                    param_attr=None, bias_attr=None, modulated=True, name=None):
    """Deformable convolution: each filter tap samples ``input`` at its place plus the
    learned ``offset`` [N, 2 * deformable_groups * kh * kw, OH, OW] (bilinearly), scaled by
    ``mask`` [N, deformable_groups * kh * kw, OH, OW] when ``modulated``
    (``deformable_conv``; ``deformable_conv_v1`` without a mask). Filter
    ``deformable_conv_0.w_0`` (Normal(0, sqrt(2 / (kh*kw*C)))), bias on the channels."""
    if param_attr is False:
        raise InvalidArgument("deformable_conv: param_attr expected a ParamAttr or None, but "
                              "received False")
    if modulated and mask is None:
        raise InvalidArgument("deformable_conv: mask expected a Variable when modulated, "
                              "but received None")
    helper = LayerHelper("deformable_conv", input=input, param_attr=param_attr,
                         bias_attr=bias_attr, name=name)
    dtype = helper.input_dtype()
    channels = _channels(input, "NCHW", "deformable_conv")
    if groups is not None and channels % groups:
        raise InvalidArgument(f"deformable_conv: groups expected to divide the {channels} "
                              f"input channels, but received {groups}")
    filter_size = as_list(filter_size, 2, "deformable_conv", "filter_size")
    std = (2.0 / (filter_size[0] * filter_size[1] * channels)) ** 0.5
    w = helper.create_parameter(attr=helper.param_attr, dtype=dtype,
                                shape=[num_filters, channels // (groups or 1)] + filter_size,
                                default_initializer=NormalInitializer(0.0, std, 0))
    pre_bias = helper.create_variable_for_type_inference(dtype)
    inputs = {"Input": [input], "Filter": [w], "Offset": [offset]}
    if modulated:
        inputs["Mask"] = [mask]
    helper.append_op(type="deformable_conv" if modulated else "deformable_conv_v1",
                     inputs=inputs, outputs={"Output": [pre_bias]},
                     attrs={"strides": as_list(stride, 2, "deformable_conv", "stride"),
                            "paddings": as_list(padding, 2, "deformable_conv", "padding"),
                            "dilations": as_list(dilation, 2, "deformable_conv", "dilation"),
                            "groups": groups, "deformable_groups": deformable_groups,
                            "im2col_step": im2col_step})
    return helper.append_bias_op(pre_bias, dim_start=1, dim_end=2)
