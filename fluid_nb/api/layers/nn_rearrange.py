"""Feature-map layers of Fluid 1.8 that rearrange or mix channels: maxout, space_to_depth,
pixel_shuffle, shuffle_channel, temporal_shift, affine_channel, unfold, fsp_matrix,
bilinear_tensor_product, add_position_encoding.

Each builds the op type and attributes of the Fluid 1.8 function of the same name;
``fluid.layers`` exports them through ``nn``.
"""
from ...errors import InvalidArgument
from ...framework.program import Variable
from ..layer_helper import LayerHelper
from .arg_checks import (NAME, NUMBER, POSITIVE_INT, activation, checks, int_or_ints, one_of,
                         real_in, variable)

__all__ = ["maxout", "space_to_depth", "pixel_shuffle", "shuffle_channel", "temporal_shift",
           "affine_channel", "unfold", "fsp_matrix", "bilinear_tensor_product",
           "add_position_encoding"]


def _one_op(op_type, x, attrs, name=None, out_slot="Out", inputs=None, act=None):
    helper = LayerHelper(op_type, name=name, act=act)
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(type=op_type, inputs=inputs or {"X": [x]}, outputs={out_slot: [out]},
                     attrs=attrs)
    return helper.append_activation(out) if act else out


@checks(x=variable, groups=POSITIVE_INT, name=NAME, axis=one_of(1, -1, 3))
def maxout(x, groups, name=None, axis=1):
    """Out[:, c] = max over g < groups of x[:, c * groups + g] (``maxout``; channels on
    ``axis`` 1, or 3 / -1 for NHWC)."""
    return _one_op("maxout", x, {"groups": groups, "axis": 3 if axis == -1 else axis}, name)


@checks(x=variable, blocksize=POSITIVE_INT, name=NAME)
def space_to_depth(x, blocksize, name=None):
    """[N, C, H, W] -> [N, C * blocksize^2, H / blocksize, W / blocksize] with Paddle's
    (darknet reorg) ordering (``space_to_depth``)."""
    return _one_op("space_to_depth", x, {"blocksize": blocksize}, name)


@checks(x=variable, upscale_factor=POSITIVE_INT)
def pixel_shuffle(x, upscale_factor):
    """[N, C * r^2, H, W] -> [N, C, H * r, W * r]:
    Out[n, c, h*r + i, w*r + j] = x[n, c*r*r + i*r + j, h, w] (``pixel_shuffle``)."""
    return _one_op("pixel_shuffle", x, {"upscale_factor": upscale_factor})


@checks(x=variable, group=POSITIVE_INT, name=NAME)
def shuffle_channel(x, group, name=None):
    """Channels viewed as [group, C / group] and transposed (``shuffle_channel``)."""
    return _one_op("shuffle_channel", x, {"group": group}, name)


@checks(x=variable, seg_num=POSITIVE_INT, shift_ratio=real_in(0.0, 0.5), name=NAME)
def temporal_shift(x, seg_num, shift_ratio=0.25, name=None):
    """Temporal shift over clips of ``seg_num`` segments ([N * seg_num, C, H, W]): the
    first C * shift_ratio channels read the previous segment, the next as many the
    following one (``temporal_shift``)."""
    return _one_op("temporal_shift", x, {"seg_num": seg_num, "shift_ratio": float(shift_ratio)},
                   name)


@checks(x=variable, data_layout=one_of("NCHW", "NHWC"), name=NAME, act=activation)
def affine_channel(x, scale=None, bias=None, data_layout="NCHW", name=None, act=None):
    """x * scale[c] + bias[c] per channel (``affine_channel``); scale and bias are [C]
    Variables."""
    for what, value in (("scale", scale), ("bias", bias)):
        if not isinstance(value, Variable):
            raise InvalidArgument(f"affine_channel: {what} expected a Variable of shape [C], "
                                  f"but received {value!r}")
    return _one_op("affine_channel", x, {"data_layout": data_layout}, name,
                   inputs={"X": [x], "Scale": [scale], "Bias": [bias]}, act=act)


def _pair_list(value, where, name):
    if isinstance(value, int):
        return [value, value]
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return list(value)
    raise InvalidArgument(f"{where}: {name} expected an int or 2 ints, but received {value!r}")


@checks(x=variable, kernel_sizes=int_or_ints(2, 1), strides=int_or_ints(2, 1),
        paddings=int_or_ints(None, 0), dilations=int_or_ints(2, 1), name=NAME)
def unfold(x, kernel_sizes, strides=1, paddings=0, dilations=1, name=None):
    """im2col (``unfold``): [N, C, H, W] -> [N, C * kh * kw, L], one column per sliding
    block; paddings an int, [ph, pw] or [top, left, bottom, right]."""
    if len(x.shape) != 4:
        raise InvalidArgument(f"unfold: x expected a 4-D tensor, but received shape "
                              f"{list(x.shape)}")
    if isinstance(paddings, int):
        paddings = [paddings] * 4
    elif len(paddings) == 2:
        paddings = list(paddings) * 2
    elif len(paddings) != 4:
        raise InvalidArgument(f"unfold: paddings expected an int, 2 or 4 ints, but received "
                              f"{paddings}")
    attrs = {"kernel_sizes": _pair_list(kernel_sizes, "unfold", "kernel_sizes"),
             "strides": _pair_list(strides, "unfold", "strides"),
             "paddings": list(paddings),
             "dilations": _pair_list(dilations, "unfold", "dilations")}
    return _one_op("unfold", x, attrs, name, out_slot="Y")


@checks(x=variable, y=variable)
def fsp_matrix(x, y):
    """The FSP matrix of two feature maps (``fsp``): [N, C1, H, W] and [N, C2, H, W] ->
    [N, C1, C2], Out[n, i, j] = mean over positions of x[n, i] * y[n, j]."""
    helper = LayerHelper("fsp_matrix")
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(type="fsp", inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]})
    return out


@checks(x=variable, y=variable, size=POSITIVE_INT, act=activation, name=NAME)
def bilinear_tensor_product(x, y, size, act=None, name=None, param_attr=None,
                            bias_attr=None):
    """Out[n, i] = x[n] @ W[i] @ y[n]^T + b[i] (``bilinear_tensor_product``), weight
    ``bilinear_tensor_product_0.w_0`` [size, M, K] and bias ``.b_0`` [1, size]."""
    helper = LayerHelper("bilinear_tensor_product", x=x, act=act, name=name,
                         param_attr=param_attr, bias_attr=bias_attr)
    dtype = helper.input_dtype("x")
    w = helper.create_parameter(attr=helper.param_attr, shape=[size, x.shape[1], y.shape[1]],
                                dtype=dtype, is_bias=False)
    out = helper.create_variable_for_type_inference(dtype=dtype)
    inputs = {"X": [x], "Y": [y], "Weight": [w]}
    if helper.bias_attr:
        inputs["Bias"] = [helper.create_parameter(attr=helper.bias_attr, shape=[1, size],
                                                  dtype=dtype, is_bias=True)]
    helper.append_op(type="bilinear_tensor_product", inputs=inputs, outputs={"Out": [out]})
    return helper.append_activation(out)


@checks(input=variable, alpha=NUMBER, beta=NUMBER, name=NAME)
def add_position_encoding(input, alpha, beta, name=None):
    """alpha * input + beta * PE (``add_position_encoding``), PE the sinusoid table of each
    row's position within its sequence (LoD) or along dim 1 ([N, M, P])."""
    helper = LayerHelper("add_position_encoding", name=name)
    out = helper.create_variable_for_type_inference(dtype=input.dtype)
    helper.append_op(type="add_position_encoding", inputs={"X": [input]},
                     outputs={"Out": [out]},
                     attrs={"alpha": float(alpha), "beta": float(beta)})
    return out
