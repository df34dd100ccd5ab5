"""Neural-network layers of Fluid 1.x: the ones with parameters (fc, embedding, conv2d,
batch_norm, layer_norm) and the common transforms around them (pool2d, dropout, softmax,
matmul, mul, topk, one_hot, mean, scale, clip, relu, leaky_relu, log, reduce_*).

Each function appends the same ops, with the same slot names and variable names, as the
Fluid 1.8 function of that name.
"""
import functools
import inspect

from ...errors import InvalidArgument
from ...tensor.dtypes import VarType, convert_dtype
from ...framework.type_checks import check_dtype, require_variable
from ...framework import program as _fw
from ...framework.callstack import _op_record
from ...framework.program import Variable
from ...framework.transaction import append_fresh, append_one_op, atomic, lean, replayed
from ..initializer import ConstantInitializer, NormalInitializer
from ..layer_helper import LayerHelper
from ..param_attr import ParamAttr
from .dtype_rules import FLUID18_DTYPES
from .arg_checks import (INT, NAME, NON_NEGATIVE_INT, NUMBER, POSITIVE_INT, PROBABILITY,
                         activation, boolean, check, checks, dtype, int_or_ints, int_typed, ints,
                         one_of, optional, or_variable, real_in, variable, variables)

__all__ = ["fc", "embedding", "conv2d", "pool2d", "batch_norm", "layer_norm", "dropout",
           "softmax", "matmul", "mul", "topk", "one_hot", "mean", "scale", "clip", "relu",
           "leaky_relu", "log", "reduce_sum", "reduce_mean", "reduce_max", "reduce_min",
           "reduce_prod", "l2_normalize"]

# the vision layers live in their own modules, exported as part of this one
from . import nn_conv  # noqa: E402
from .nn_conv import *  # noqa: E402,F401,F403
from .nn_conv import conv_padding  # noqa: E402
__all__ += nn_conv.__all__
from . import nn_image  # noqa: E402
from .nn_image import *  # noqa: E402,F401,F403
__all__ += nn_image.__all__
from . import nn_norm  # noqa: E402
from .nn_norm import *  # noqa: E402,F401,F403
__all__ += nn_norm.__all__
from . import nn_rearrange  # noqa: E402
from .nn_rearrange import *  # noqa: E402,F401,F403
__all__ += nn_rearrange.__all__
# Fluid 1.8 defines uniform_random in layers.nn; its one definition here is in layers.tensor
from .tensor import uniform_random  # noqa: E402,F401


_check_variable = require_variable


def _pair(value, where, name):
    if isinstance(value, int):
        return [value, value]
    value = list(value)
    if len(value) != 2 or not all(isinstance(v, int) for v in value):
        raise InvalidArgument(f"{where}: {name} expected an int or 2 ints, but received "
                              f"{value}")
    return value


def _out_named(helper, dtype, name):
    """Fluid's rule for one-op layers: ``name=`` names the output itself."""
    if name is None:
        return helper.create_variable_for_type_inference(dtype=dtype)
    return helper.create_variable(name=name, dtype=dtype, persistable=False)


# --- layers with parameters -----------------------------------------------------------------
@checks(input=variables, size=POSITIVE_INT, num_flatten_dims=INT, act=activation, name=NAME,
        is_test=boolean)
def fc(input, size, num_flatten_dims=1, param_attr=None, bias_attr=None, act=None,
       name=None, is_test=False):
    """``act(sum_i(flatten(input_i) @ W_i) + b)``: one ``mul`` per input (summed with
    ``sum`` when several), then ``elementwise_add`` of the bias and the activation op."""
    helper = LayerHelper("fc", input=input, param_attr=param_attr, bias_attr=bias_attr,
                         act=act, name=name)
    dtype = helper.input_dtype()
    check_dtype(dtype, "input", ("float16", "float32", "float64"), "fc")
    mul_results = []
    for input_var, attr in helper.iter_inputs_and_params():
        shape = input_var.shape
        flatten = len(shape) - 1 if num_flatten_dims == -1 else num_flatten_dims
        if not 0 < flatten < len(shape):
            raise InvalidArgument(f"fc: num_flatten_dims expected in [1, {len(shape) - 1}] "
                                  f"for input shape {list(shape)}, but received "
                                  f"{num_flatten_dims}")
        in_features = functools.reduce(lambda a, b: a * b, shape[flatten:], 1)
        if in_features < 0:
            raise InvalidArgument(f"fc: input dims after num_flatten_dims expected known, but "
                                  f"received shape {list(shape)}")
        w = helper.create_parameter(attr=attr, shape=[in_features, size], dtype=dtype)
        tmp = helper.create_variable_for_type_inference(dtype)
        helper.append_op(type="mul", inputs={"X": [input_var], "Y": [w]}, outputs={"Out": [tmp]},
                         attrs={"x_num_col_dims": flatten, "y_num_col_dims": 1})
        mul_results.append(tmp)
    if len(mul_results) == 1:
        pre_bias = mul_results[0]
    else:
        pre_bias = helper.create_variable_for_type_inference(dtype)
        helper.append_op(type="sum", inputs={"X": mul_results}, outputs={"Out": [pre_bias]},
                         attrs={"use_mkldnn": False})
    pre_activation = helper.append_bias_op(pre_bias, dim_start=flatten)
    return helper.append_activation(pre_activation)


@checks(input=variable, size=ints(2, 1, 'sizes'), is_sparse=boolean, is_distributed=boolean,
        padding_idx=optional(INT), dtype=dtype)
def embedding(input, size, is_sparse=False, is_distributed=False, padding_idx=None,
              param_attr=None, dtype="float32"):
    """Rows of a [vocab, dim] table picked by int64 ids (``lookup_table``; ids end in a 1)."""
    _check_variable("embedding", "input", input)
    check_dtype(dtype, "dtype", ("float16", "float32", "float64"), "embedding")
    helper = LayerHelper("embedding", input=input, param_attr=param_attr)
    w = helper.create_parameter(attr=helper.param_attr, shape=list(size), dtype=dtype)
    out = helper.create_variable_for_type_inference(dtype)
    padding_idx = _padding_idx(padding_idx, size)
    helper.append_op(type="lookup_table", inputs={"Ids": [input], "W": [w]},
                     outputs={"Out": [out]},
                     attrs={"is_sparse": is_sparse, "is_distributed": is_distributed,
                            "remote_prefetch": is_sparse and not is_distributed,
                            "padding_idx": padding_idx})
    return out


def _padding_idx(padding_idx, size):
    if padding_idx is None:
        return -1
    return padding_idx if padding_idx >= 0 else size[0] + padding_idx


@checks(input=variable, num_filters=POSITIVE_INT, filter_size=int_or_ints(2, 1),
        stride=int_or_ints(2, 1), dilation=int_or_ints(2, 1), groups=optional(POSITIVE_INT),
        use_cudnn=boolean, act=activation, name=NAME, data_format=one_of('NCHW', 'NHWC'))
def conv2d(input, num_filters, filter_size, stride=1, padding=0, dilation=1, groups=None,
           param_attr=None, bias_attr=None, use_cudnn=True, act=None, name=None,
           data_format="NCHW"):
    """2-D convolution (``conv2d``, or ``depthwise_conv2d`` when groups equals the channels
    and use_cudnn is False, as Fluid chooses); bias by elementwise_add on the channel axis."""
    _check_variable("conv2d", "input", input)
    if data_format not in ("NCHW", "NHWC"):
        raise InvalidArgument(f"conv2d: data_format expected 'NCHW' or 'NHWC', but received "
                              f"'{data_format}'")
    channel_last = data_format == "NHWC"
    num_channels = input.shape[3] if channel_last else input.shape[1]
    if num_channels < 0:
        raise InvalidArgument(f"conv2d: input channels expected known, but received shape "
                              f"{list(input.shape)}")
    l_type = "conv2d"
    if num_channels == groups and num_filters % num_channels == 0 and not use_cudnn:
        l_type = "depthwise_conv2d"
    helper = LayerHelper(l_type, input=input, param_attr=param_attr, bias_attr=bias_attr,
                         act=act, name=name, use_cudnn=use_cudnn)
    dtype = helper.input_dtype()
    if groups is None:
        num_filter_channels = num_channels
    else:
        if num_channels % groups != 0:
            raise InvalidArgument(f"conv2d: groups expected to divide the {num_channels} "
                                  f"input channels, but received {groups}")
        num_filter_channels = num_channels // groups
    filter_size = _pair(filter_size, "conv2d", "filter_size")
    stride = _pair(stride, "conv2d", "stride")
    dilation = _pair(dilation, "conv2d", "dilation")
    paddings, algo = conv_padding(padding, "conv2d", data_format)
    filter_shape = [num_filters, int(num_filter_channels)] + filter_size
    std = (2.0 / (filter_size[0] * filter_size[1] * num_channels)) ** 0.5
    w = helper.create_parameter(attr=helper.param_attr, shape=filter_shape, dtype=dtype,
                                default_initializer=NormalInitializer(0.0, std, 0))
    pre_bias = helper.create_variable_for_type_inference(dtype)
    helper.append_op(type=l_type, inputs={"Input": [input], "Filter": [w]},
                     outputs={"Output": [pre_bias]},
                     attrs={"strides": stride, "paddings": paddings, "dilations": dilation,
                            "groups": 1 if groups is None else groups, "use_cudnn": use_cudnn,
                            "use_mkldnn": False, "fuse_relu_before_depthwise_conv": False,
                            "padding_algorithm": algo, "data_format": data_format})
    if channel_last:
        pre_act = helper.append_bias_op(pre_bias, dim_start=3, dim_end=4)
    else:
        pre_act = helper.append_bias_op(pre_bias, dim_start=1, dim_end=2)
    return helper.append_activation(pre_act)


@checks(input=variable, pool_size=int_or_ints(2, -1), pool_type=one_of('max', 'avg'),
        pool_stride=int_or_ints(2, 1), global_pooling=boolean, use_cudnn=boolean,
        ceil_mode=boolean, name=NAME, exclusive=boolean, data_format=one_of('NCHW', 'NHWC'))
def pool2d(input, pool_size=-1, pool_type="max", pool_stride=1, pool_padding=0,
           global_pooling=False, use_cudnn=True, ceil_mode=False, name=None, exclusive=True,
           data_format="NCHW"):
    """Max or average pooling (``pool2d``)."""
    _check_variable("pool2d", "input", input)
    if pool_type not in ("max", "avg"):
        raise InvalidArgument(f"pool2d: pool_type expected 'max' or 'avg', but received "
                              f"'{pool_type}'")
    if not global_pooling and pool_size == -1:
        raise InvalidArgument("pool2d: pool_size expected a size when global_pooling is False, "
                              "but received -1")
    pool_size = _pair(pool_size, "pool2d", "pool_size")
    pool_stride = _pair(pool_stride, "pool2d", "pool_stride")
    paddings, algo = conv_padding(pool_padding, "pool2d", data_format)
    if algo == "VALID" and ceil_mode:
        raise InvalidArgument("pool2d: ceil_mode expected False with padding 'VALID', but "
                              "received True")
    helper = LayerHelper("pool2d", input=input, name=name)
    out = helper.create_variable_for_type_inference(helper.input_dtype())
    helper.append_op(type="pool2d", inputs={"X": [input]}, outputs={"Out": [out]},
                     attrs={"pooling_type": pool_type, "ksize": pool_size,
                            "global_pooling": global_pooling, "strides": pool_stride,
                            "paddings": paddings, "padding_algorithm": algo,
                            "use_cudnn": use_cudnn, "ceil_mode": ceil_mode, "use_mkldnn": False,
                            "exclusive": exclusive, "data_format": data_format})
    return out


@checks(input=variable, act=activation, is_test=boolean, momentum=or_variable(PROBABILITY),
        epsilon=real_in(0.0), data_layout=one_of('NCHW', 'NHWC'), in_place=boolean, name=NAME,
        moving_mean_name=NAME, moving_variance_name=NAME,
        do_model_average_for_mean_and_var=boolean, use_global_stats=boolean)
def batch_norm(input, act=None, is_test=False, momentum=0.9, epsilon=1e-05, param_attr=None,
               bias_attr=None, data_layout="NCHW", in_place=False, name=None,
               moving_mean_name=None, moving_variance_name=None,
               do_model_average_for_mean_and_var=True, use_global_stats=False):
    """Batch normalisation. Parameters as Paddle names them: scale ``batch_norm_0.w_0``,
    bias ``.b_0``, moving mean ``.w_1`` and variance ``.w_2`` (persistable, not trainable;
    MeanOut/VarianceOut write back into them)."""
    _check_variable("batch_norm", "input", input)
    helper = LayerHelper("batch_norm", input=input, act=act, param_attr=param_attr,
                         bias_attr=bias_attr, name=name)
    dtype = helper.input_dtype()
    if dtype == VarType.FP16:
        dtype = VarType.FP32
    if data_layout == "NCHW":
        channels = input.shape[1]
    elif data_layout == "NHWC":
        channels = input.shape[-1]
    else:
        raise InvalidArgument(f"batch_norm: data_layout expected 'NCHW' or 'NHWC', but "
                              f"received '{data_layout}'")
    shape = [channels]
    scale = helper.create_parameter(attr=helper.param_attr, shape=shape, dtype=dtype,
                                    default_initializer=ConstantInitializer(1.0))
    bias = helper.create_parameter(attr=helper.bias_attr, shape=shape, dtype=dtype,
                                   is_bias=True)
    mean = helper.create_parameter(
        attr=ParamAttr(name=moving_mean_name, initializer=ConstantInitializer(0.0),
                       trainable=False, do_model_average=do_model_average_for_mean_and_var),
        shape=shape, dtype=dtype)
    mean.stop_gradient = True
    variance = helper.create_parameter(
        attr=ParamAttr(name=moving_variance_name, initializer=ConstantInitializer(1.0),
                       trainable=False, do_model_average=do_model_average_for_mean_and_var),
        shape=shape, dtype=dtype)
    variance.stop_gradient = True
    saved_mean = helper.create_variable_for_type_inference(dtype=dtype, stop_gradient=True)
    saved_variance = helper.create_variable_for_type_inference(dtype=dtype, stop_gradient=True)
    out = input if in_place else helper.create_variable_for_type_inference(dtype)
    inputs = {"X": [input], "Scale": [scale], "Bias": [bias], "Mean": [mean],
              "Variance": [variance]}
    attrs = {"epsilon": epsilon, "is_test": is_test, "data_layout": data_layout,
             "use_mkldnn": False, "fuse_with_relu": False, "use_global_stats": use_global_stats}
    if isinstance(momentum, Variable):
        inputs["MomentumTensor"] = [momentum]
    else:
        attrs["momentum"] = momentum
    helper.append_op(type="batch_norm", inputs=inputs,
                     outputs={"Y": [out], "MeanOut": [mean], "VarianceOut": [variance],
                              "SavedMean": [saved_mean], "SavedVariance": [saved_variance]},
                     attrs=attrs)
    return helper.append_activation(out)


@checks(input=variable, scale=boolean, shift=boolean, begin_norm_axis=POSITIVE_INT,
        epsilon=real_in(0.0), act=activation, name=NAME)
def layer_norm(input, scale=True, shift=True, begin_norm_axis=1, epsilon=1e-05,
               param_attr=None, bias_attr=None, act=None, name=None):
    """Normalise over dims ``begin_norm_axis:``; optional scale (``.w_0``, ones) and shift
    (``.b_0``, zeros) of their flattened size."""
    _check_variable("layer_norm", "input", input)
    helper = LayerHelper("layer_norm", input=input, act=act, param_attr=param_attr,
                         bias_attr=bias_attr, name=name)
    dtype = helper.input_dtype()
    if not 0 < begin_norm_axis < len(input.shape):
        raise InvalidArgument(f"layer_norm: begin_norm_axis expected in [1, "
                              f"{len(input.shape) - 1}], but received {begin_norm_axis}")
    shape = [functools.reduce(lambda a, b: a * b, input.shape[begin_norm_axis:], 1)]
    inputs = {"X": [input]}
    if scale:
        inputs["Scale"] = [helper.create_parameter(
            attr=helper.param_attr, shape=shape, dtype=dtype,
            default_initializer=ConstantInitializer(1.0))]
    if shift:
        if bias_attr is False:
            raise InvalidArgument("layer_norm: bias_attr expected not False when shift is "
                                  "True, but received False")
        inputs["Bias"] = [helper.create_parameter(attr=helper.bias_attr, shape=shape,
                                                  dtype=dtype, is_bias=True)]
    mean_out = helper.create_variable_for_type_inference(dtype=dtype, stop_gradient=True)
    variance_out = helper.create_variable_for_type_inference(dtype=dtype, stop_gradient=True)
    out = helper.create_variable_for_type_inference(dtype)
    helper.append_op(type="layer_norm", inputs=inputs,
                     outputs={"Y": [out], "Mean": [mean_out], "Variance": [variance_out]},
                     attrs={"epsilon": epsilon, "begin_norm_axis": begin_norm_axis})
    return helper.append_activation(out)


# --- transforms ---------------------------------------------------------------------------
@lean  # (one op through append_fresh, or a transaction of its own)
@checks(x=variable, dropout_prob=PROBABILITY, is_test=boolean, seed=optional(NON_NEGATIVE_INT),
        name=NAME, dropout_implementation=one_of('downgrade_in_infer', 'upscale_in_train'))
def dropout(x, dropout_prob, is_test=False, seed=None, name=None,
            dropout_implementation="downgrade_in_infer"):
    """Zero elements with probability ``dropout_prob`` (``dropout`` op with a uint8 Mask)."""
    _check_variable("dropout", "x", x)
    if dropout_implementation not in ("downgrade_in_infer", "upscale_in_train"):
        raise InvalidArgument(f"dropout: dropout_implementation expected 'downgrade_in_infer' "
                              f"or 'upscale_in_train', but received '{dropout_implementation}'")
    program = _fw._main_program
    if not seed and program.random_seed != 0:
        seed = program.random_seed
    attrs = {"dropout_prob": float(dropout_prob), "is_test": is_test,
             "fix_seed": seed is not None, "seed": seed if seed is not None else 0,
             "dropout_implementation": dropout_implementation}
    if name is None:  # (the usual call)
        return append_fresh(program.blocks[program.current_block_idx], "dropout",
                            {"X": (x.name,)},
                            {"Out": [(x.dtype, False)], "Mask": [(VarType.UINT8, True)]},
                            attrs, "dropout")["Out"][0]
    with atomic():
        helper = LayerHelper("dropout", name=name)
        out = helper.create_variable_for_type_inference(dtype=x.dtype)
        mask = helper.create_variable_for_type_inference(dtype=VarType.UINT8,
                                                         stop_gradient=True)
        helper.append_op(type="dropout", inputs={"X": [x]},
                         outputs={"Out": [out], "Mask": [mask]}, attrs=attrs)
        return out


def _one_op_call(layer, op_type, inputs=("x",), attrs=None):
    """``layer`` (checked, appending one ``op_type`` op) with its common call in C
    (``_op_record.OneOpCall``): its ``inputs`` arguments alone, Variables of a dtype Fluid
    1.8's table gives them, no name; the op's attributes ``attrs`` (op attribute -> the
    layer argument whose default it takes). ``layer`` answers every other call."""
    allowed = {frozenset(map(convert_dtype, FLUID18_DTYPES[op_type][arg])) for arg in inputs}
    (allowed,) = allowed  # (the inputs share their dtypes' rule)
    parameters = inspect.signature(layer).parameters
    template = None if attrs is None else {
        attr: parameters[argument].default for attr, argument in attrs.items()}
    return _op_record.OneOpCall(layer, _op_record.UNARY if len(inputs) == 1 else _op_record.PAIR,
                                op_type, globals(), allowed=allowed, attrs=template)


@lean  # (one op through append_one_op, or a transaction of its own)
@checks(input=variable, use_cudnn=boolean, name=NAME, axis=INT)
def softmax(input, use_cudnn=False, name=None, axis=-1):
    _check_variable("softmax", "input", input)
    attrs = {"axis": axis, "use_cudnn": use_cudnn}
    if name is None:  # one op to a fresh temporary, all or nothing itself
        program = _fw._main_program
        return append_one_op(program.blocks[program.current_block_idx], "softmax",
                             {"X": (input.name,)}, attrs, input.dtype, "softmax")
    with atomic():
        helper = LayerHelper("softmax", input=input, name=name)
        out = helper.create_variable_for_type_inference(helper.input_dtype())
        helper.append_op(type="softmax", inputs={"X": [input]}, outputs={"Out": [out]},
                         attrs=attrs)
    return out


softmax = _one_op_call(softmax, "softmax", ("input",),
                       {"axis": "axis", "use_cudnn": "use_cudnn"})


@lean  # (one op through append_one_op, or a transaction of its own)
@checks(x=variable, y=variable, transpose_x=boolean, transpose_y=boolean, alpha=NUMBER,
        name=NAME)
def matmul(x, y, transpose_x=False, transpose_y=False, alpha=1.0, name=None):
    """``alpha * op(x) @ op(y)`` (``matmul``), batched over leading dims."""
    _check_variable("matmul", "x", x)
    _check_variable("matmul", "y", y)
    return _pair_op("matmul", x, y, {"transpose_X": transpose_x, "transpose_Y": transpose_y,
                                     "alpha": float(alpha)}, name)


def _pair_op(op_type, x, y, attrs, name):
    """One ``op_type`` op on X = ``x`` and Y = ``y``: to a fresh temporary through
    ``append_one_op`` (all or nothing itself), to the variable ``name`` names in a
    transaction of its own."""
    if name is None:
        program = _fw._main_program
        return append_one_op(program.blocks[program.current_block_idx], op_type,
                             {"X": (x.name,), "Y": (y.name,)}, attrs, x.dtype, op_type)
    with atomic():
        helper = LayerHelper(op_type, name=name)
        out = helper.create_variable_for_type_inference(dtype=x.dtype)
        helper.append_op(type=op_type, inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]},
                         attrs=attrs)
        return out


matmul = _one_op_call(matmul, "matmul", ("x", "y"), {"transpose_X": "transpose_x",
                                                      "transpose_Y": "transpose_y",
                                                      "alpha": "alpha"})


@lean  # (one op through append_one_op, or a transaction of its own)
@checks(x=variable, y=variable, x_num_col_dims=POSITIVE_INT, y_num_col_dims=POSITIVE_INT,
        name=NAME)
def mul(x, y, x_num_col_dims=1, y_num_col_dims=1, name=None):
    """``flatten(x, x_num_col_dims) @ flatten(y, y_num_col_dims)`` (``mul``)."""
    _check_variable("mul", "x", x)
    _check_variable("mul", "y", y)
    return _pair_op("mul", x, y, {"x_num_col_dims": x_num_col_dims,
                                  "y_num_col_dims": y_num_col_dims}, name)


@lean  # (one op through append_fresh, or a transaction of its own)
@checks(input=variable, k=or_variable(POSITIVE_INT), name=NAME)
def topk(input, k, name=None):
    """(values, int64 indices) of the ``k`` largest along the last dim (``top_k``)."""
    _check_variable("topk", "input", input)
    if name is None and not isinstance(k, Variable):  # (the usual call)
        program = _fw._main_program
        made = append_fresh(program.blocks[program.current_block_idx], "top_k",
                            {"X": (input.name,)},
                            {"Out": [(input.dtype, True)], "Indices": [(VarType.INT64, True)]},
                            {"k": k}, "top_k")
        return made["Out"][0], made["Indices"][0]
    with atomic():
        return _topk(input, k, name)


def _topk(input, k, name):
    helper = LayerHelper("top_k", name=name)
    values = helper.create_variable_for_type_inference(dtype=input.dtype)
    indices = helper.create_variable_for_type_inference(dtype=VarType.INT64)
    inputs = {"X": [input]}
    attrs = {}
    if isinstance(k, Variable):
        inputs["K"] = [k]
    else:
        attrs["k"] = k
    helper.append_op(type="top_k", inputs=inputs, outputs={"Out": [values], "Indices": [indices]},
                     attrs=attrs)
    values.stop_gradient = True
    indices.stop_gradient = True
    return values, indices


@lean  # (one op through append_one_op, or a transaction of its own)
@checks(input=variable, depth=or_variable(int_typed(POSITIVE_INT)), allow_out_of_range=boolean)
def one_hot(input, depth, allow_out_of_range=False):
    """Fluid 1.x one_hot: int ids of shape [..., 1] -> float32 [..., depth].

    Uses the ``one_hot`` op when registered; otherwise ``squeeze2`` of the trailing 1 then
    ``one_hot_v2`` (same values and shape)."""
    _check_variable("one_hot", "input", input)
    from ...ops import registry
    defined = registry.find("one_hot") is not None
    if defined and not isinstance(depth, Variable):  # the usual call: one op
        out = _unary("one_hot", input,
                     {"allow_out_of_range": allow_out_of_range, "depth": depth},
                     dtype=VarType.FP32)
        out.stop_gradient = True
        return out
    with atomic():
        return _one_hot(input, depth, allow_out_of_range, defined)


def _one_hot(input, depth, allow_out_of_range, defined):
    helper = LayerHelper("one_hot")
    attrs = {"allow_out_of_range": allow_out_of_range}
    inputs = {"X": [input]}
    if isinstance(depth, Variable):
        inputs["depth_tensor"] = [depth]
    else:
        attrs["depth"] = depth
    if defined:
        out = helper.create_variable_for_type_inference(dtype=VarType.FP32)
        helper.append_op(type="one_hot", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    else:
        if input.shape and input.shape[-1] == 1:
            ids = helper.create_variable_for_type_inference(dtype=input.dtype)
            xshape = helper.create_variable_for_type_inference(dtype=input.dtype)
            helper.append_op(type="squeeze2", inputs={"X": [input]},
                             outputs={"Out": [ids], "XShape": [xshape]},
                             attrs={"axes": [len(input.shape) - 1]})
            inputs["X"] = [ids]
        out = helper.create_variable_for_type_inference(dtype=VarType.FP32)
        helper.append_op(type="one_hot_v2", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    out.stop_gradient = True
    return out


one_hot = replayed(one_hot, globals())


@lean  # (_unary keeps itself all or nothing)
@checks(x=variable, name=NAME)
def mean(x, name=None):
    """The mean of all elements, a one-element tensor (``mean``)."""
    _check_variable("mean", "x", x)
    return _unary("mean", x, name=name)


mean = replayed(mean, globals())


@lean  # (one op through append_one_op, or a transaction of its own)
@checks(x=variable, scale=or_variable(NUMBER), bias=NUMBER, bias_after_scale=boolean,
        act=activation, name=NAME)
def scale(x, scale=1.0, bias=0.0, bias_after_scale=True, act=None, name=None):
    """``scale * x + bias`` (or ``scale * (x + bias)``) with the ``scale`` op."""
    _check_variable("scale", "x", x)
    attrs = {"bias": float(bias), "bias_after_scale": bias_after_scale}
    scale_tensor = isinstance(scale, Variable)
    if not scale_tensor:
        attrs["scale"] = float(scale)
        if name is None and act is None:  # one op to a fresh temporary, all or nothing
            program = _fw._main_program
            return append_one_op(program.blocks[program.current_block_idx], "scale",
                                 {"X": (x.name,)}, attrs, x.dtype, "scale")
    with atomic():
        helper = LayerHelper("scale", act=act, name=name)
        out = _out_named(helper, x.dtype, name)
        inputs = {"X": [x]}
        if scale_tensor:
            inputs["ScaleTensor"] = [scale]
        helper.append_op(type="scale", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
        return helper.append_activation(out)


scale = replayed(scale, globals())


@lean  # (_unary keeps itself all or nothing)
@checks(x=variable, min=NUMBER, max=NUMBER, name=NAME)
def clip(x, min, max, name=None):
    """Elements limited to [min, max] (``clip``)."""
    _check_variable("clip", "x", x)
    return _unary("clip", x, {"min": float(min), "max": float(max)}, name=name)


clip = replayed(clip, globals())


def _unary(op_type, x, attrs=None, name=None, dtype=None):
    # (x is a Variable: each caller's checks say so, x=variable; Out of dtype, x's if None)
    dtype = x.dtype if dtype is None else dtype
    if name is None:  # one op to a fresh temporary, all or nothing itself
        program = _fw._main_program
        return append_one_op(program.blocks[program.current_block_idx], op_type,
                             {"X": (x.name,)}, attrs, dtype, op_type)
    with atomic():
        helper = LayerHelper(op_type, name=name)
        out = helper.create_variable_for_type_inference(dtype=dtype)
        helper.append_op(type=op_type, inputs={"X": [x]}, outputs={"Out": [out]},
                         attrs=attrs or {})
    return out


@lean  # (_unary keeps itself all or nothing)
@checks(x=variable, name=NAME)
def relu(x, name=None):
    return _unary("relu", x, name=name)


relu = _one_op_call(relu, "relu")


@lean
@checks(x=variable, alpha=NUMBER, name=NAME)
def leaky_relu(x, alpha=0.02, name=None):
    return _unary("leaky_relu", x, {"alpha": float(alpha)}, name=name)


leaky_relu = replayed(leaky_relu, globals())


@lean
@checks(x=variable, name=NAME)
def log(x, name=None):
    return _unary("log", x, name=name)


log = _one_op_call(log, "log")


def _reduce(op_type, input, dim, keep_dim, name):
    _check_variable(op_type, "input", input)
    if dim is not None and not isinstance(dim, (list, tuple)):
        dim = [dim]
    rank = len(input.shape)
    check(op_type, "dim", dim, optional(ints(None, -rank, f"dims below {rank} (the rank)")))
    if dim and any(d >= rank for d in dim):
        raise InvalidArgument(f"{op_type}: dim expected values in [{-rank}, {rank}), but "
                              f"received {list(dim)}")
    reduce_all = not dim or len(dim) == len(input.shape)
    attrs = {"dim": list(dim) if dim else [0], "keep_dim": keep_dim, "reduce_all": reduce_all}
    if op_type == "reduce_sum" and input.dtype in (VarType.BOOL, VarType.INT32):
        # Fluid 1.8 sums in X's dtype; the op's default (Paddle 2's) would widen to int64
        attrs["out_dtype"] = int(input.dtype)
    if name is None:  # one op to a fresh temporary, all or nothing itself
        program = _fw._main_program
        return append_one_op(program.blocks[program.current_block_idx], op_type,
                             {"X": (input.name,)}, attrs, input.dtype, op_type)
    with atomic():
        helper = LayerHelper(op_type, input=input, name=name)
        out = helper.create_variable_for_type_inference(dtype=helper.input_dtype())
        helper.append_op(type=op_type, inputs={"X": [input]}, outputs={"Out": [out]},
                         attrs=attrs)
    return out


@lean  # (one op through append_one_op, or a transaction of its own)
@checks(input=variable, dim=optional(int_or_ints(None)), keep_dim=boolean, name=NAME)
def reduce_sum(input, dim=None, keep_dim=False, name=None):
    return _reduce("reduce_sum", input, dim, keep_dim, name)


reduce_sum = replayed(reduce_sum, globals())


@lean  # (one op through append_one_op, or a transaction of its own)
@checks(input=variable, dim=optional(int_or_ints(None)), keep_dim=boolean, name=NAME)
def reduce_mean(input, dim=None, keep_dim=False, name=None):
    return _reduce("reduce_mean", input, dim, keep_dim, name)


reduce_mean = replayed(reduce_mean, globals())


@lean  # (one op through append_one_op, or a transaction of its own)
@checks(input=variable, dim=optional(int_or_ints(None)), keep_dim=boolean, name=NAME)
def reduce_max(input, dim=None, keep_dim=False, name=None):
    return _reduce("reduce_max", input, dim, keep_dim, name)


reduce_max = replayed(reduce_max, globals())


@lean  # (one op through append_one_op, or a transaction of its own)
@checks(input=variable, dim=optional(int_or_ints(None)), keep_dim=boolean, name=NAME)
def reduce_min(input, dim=None, keep_dim=False, name=None):
    return _reduce("reduce_min", input, dim, keep_dim, name)


reduce_min = replayed(reduce_min, globals())


@lean  # (one op through append_one_op, or a transaction of its own)
@checks(input=variable, dim=optional(int_or_ints(None)), keep_dim=boolean, name=NAME)
def reduce_prod(input, dim=None, keep_dim=False, name=None):
    return _reduce("reduce_prod", input, dim, keep_dim, name)


reduce_prod = replayed(reduce_prod, globals())


@checks(x=variable, axis=INT, epsilon=real_in(0.0), name=NAME)
def l2_normalize(x, axis, epsilon=1e-12, name=None):
    """``x / sqrt(max(sum(x^2, axis), epsilon))`` built from square, reduce_sum, clip-free
    elementwise ops (the ``norm`` op is not available)."""
    from .ops import elementwise_div, sqrt, square
    if axis < 0:
        axis += len(x.shape)
    total = reduce_sum(square(x), dim=[axis], keep_dim=True)
    from .ops import elementwise_max
    from .tensor import fill_constant
    floor = fill_constant([1], x.dtype, epsilon)
    return elementwise_div(x, sqrt(elementwise_max(total, floor)), name=name)
