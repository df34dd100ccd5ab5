"""Sequence layers: Fluid 1.x functions over LoD tensors, one sequence op each.

``sequence_pool(x, 'max')`` pools every sequence of ``x`` (by its last LoD level) into one
row; ``sequence_last_step``/``sequence_first_step`` are pools of type LAST/FIRST;
``sequence_conv`` convolves along time within each sequence. Output LoD follows Paddle.
"""
from ...errors import InvalidArgument, InvalidType
from ...tensor.dtypes import VarType, convert_dtype
from ...framework.type_checks import check_type, check_variable_and_dtype, require_variable
from ...framework.program import Variable
from ..layer_helper import LayerHelper
from .arg_checks import (INT, NAME, NUMBER, POSITIVE_INT, activation, boolean, checks, dtype,
                         int_in, ints, one_of, one_of_lower, optional, or_variable, variable,
                         variable_list)

__all__ = ["sequence_pool", "sequence_first_step", "sequence_last_step", "sequence_softmax",
           "sequence_expand", "sequence_expand_as", "sequence_concat", "sequence_conv",
           "sequence_reshape", "sequence_reverse", "sequence_mask", "sequence_pad",
           "sequence_unpad", "sequence_slice", "lod_reset", "cos_sim", "sequence_scatter",
           "sequence_enumerate"]

_POOL_TYPES = ("SUM", "AVERAGE", "SQRT", "MAX", "LAST", "FIRST")


_check = require_variable


def _unary(layer, op_type, x, attrs=None, out_slot="Out", dtype=None, name=None):
    _check(layer, "input", x)
    helper = LayerHelper(layer, name=name)
    out = helper.create_variable_for_type_inference(dtype or x.dtype)
    helper.append_op(type=op_type, inputs={"X": [x]}, outputs={out_slot: [out]},
                     attrs=attrs or {})
    return out


@checks(input=variable,
        pool_type=one_of_lower('sum', 'average', 'sqrt', 'max', 'last', 'first'),
        is_test=boolean, pad_value=NUMBER)
def sequence_pool(input, pool_type, is_test=False, pad_value=0.0):
    """One row per sequence: SUM, AVERAGE, SQRT (sum / sqrt(len)), MAX, LAST or FIRST.

    An empty sequence gives ``pad_value``. The output drops the last LoD level."""
    _check("sequence_pool", "input", input)
    pool = str(pool_type).upper()
    if pool not in _POOL_TYPES:
        raise InvalidArgument(f"sequence_pool: pool_type expected one of {list(_POOL_TYPES)}, "
                              f"but received {pool_type!r}")
    helper = LayerHelper("sequence_pool")
    out = helper.create_variable_for_type_inference(input.dtype)
    max_index = helper.create_variable_for_type_inference(VarType.INT32, stop_gradient=True)
    helper.append_op(type="sequence_pool", inputs={"X": [input]},
                     outputs={"Out": [out], "MaxIndex": [max_index]},
                     attrs={"pooltype": pool, "is_test": is_test, "pad_value": float(pad_value)})
    return out


@checks(input=variable)
def sequence_first_step(input):
    """The first row of each sequence."""
    return sequence_pool(input, "first")


@checks(input=variable)
def sequence_last_step(input):
    """The last row of each sequence."""
    return sequence_pool(input, "last")


@checks(input=variable, use_cudnn=boolean, name=NAME)
def sequence_softmax(input, use_cudnn=False, name=None):
    """Softmax over the rows of each sequence (X of shape [T, 1])."""
    return _unary("sequence_softmax", "sequence_softmax", input, name=name)


@checks(x=variable, y=variable, ref_level=int_in(-1), name=NAME)
def sequence_expand(x, y, ref_level=-1, name=None):
    """Repeat each sequence (or row) of ``x`` as many times as ``y``'s ``ref_level`` says."""
    _check("sequence_expand", "x", x)
    _check("sequence_expand", "y", y)
    helper = LayerHelper("sequence_expand", name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="sequence_expand", inputs={"X": [x], "Y": [y]},
                     outputs={"Out": [out]}, attrs={"ref_level": ref_level})
    return out


@checks(x=variable, y=variable, name=NAME)
def sequence_expand_as(x, y, name=None):
    """Repeat row i of ``x`` as many times as sequence i of ``y`` is long."""
    _check("sequence_expand_as", "x", x)
    _check("sequence_expand_as", "y", y)
    helper = LayerHelper("sequence_expand_as", name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="sequence_expand_as", inputs={"X": [x], "Y": [y]},
                     outputs={"Out": [out]})
    return out


@checks(input=variable_list, name=NAME)
def sequence_concat(input, name=None):
    """Concatenate the i-th sequences of every input into the i-th output sequence."""
    if not isinstance(input, (list, tuple)) or not input:
        raise InvalidArgument("sequence_concat: input expected a non-empty list of Variables, "
                              f"but received {input!r}")
    helper = LayerHelper("sequence_concat", name=name)
    out = helper.create_variable_for_type_inference(input[0].dtype)
    helper.append_op(type="sequence_concat", inputs={"X": list(input)}, outputs={"Out": [out]})
    return out


@checks(input=variable, num_filters=POSITIVE_INT, filter_size=POSITIVE_INT,
        filter_stride=one_of(1), padding=boolean, padding_start=optional(INT), act=activation,
        name=NAME)
def sequence_conv(input, num_filters, filter_size=3, filter_stride=1, padding=True,
                  padding_start=None, bias_attr=None, param_attr=None, act=None, name=None):
    """Convolution along time inside each sequence: a window of ``filter_size`` rows
    (starting ``padding_start`` rows before the current one, default ``-(filter_size // 2)``)
    times a ``[filter_size * width, num_filters]`` filter, then bias and ``act``."""
    _check("sequence_conv", "input", input)
    helper = LayerHelper("sequence_conv", param_attr=param_attr, bias_attr=bias_attr, act=act,
                         name=name)
    dtype = input.dtype
    filter_param = helper.create_parameter(attr=helper.param_attr,
                                           shape=[filter_size * input.shape[1], num_filters],
                                           dtype=dtype)
    pre_bias = helper.create_variable_for_type_inference(dtype)
    start = -int(filter_size // 2) if padding_start is None else padding_start
    helper.append_op(type="sequence_conv", inputs={"X": [input], "Filter": [filter_param]},
                     outputs={"Out": [pre_bias]},
                     attrs={"contextStride": filter_stride, "contextStart": start,
                            "contextLength": filter_size})
    pre_act = helper.append_bias_op(pre_bias)
    return helper.append_activation(pre_act)


@checks(input=variable, new_dim=POSITIVE_INT)
def sequence_reshape(input, new_dim):
    """Re-split each sequence's data into rows of width ``new_dim``."""
    return _unary("sequence_reshape", "sequence_reshape", input, {"new_dim": new_dim})


@checks(x=variable, name=NAME)
def sequence_reverse(x, name=None):
    """Reverse the rows inside each sequence."""
    return _unary("sequence_reverse", "sequence_reverse", x, out_slot="Y", name=name)


@checks(x=variable, maxlen=optional(or_variable(POSITIVE_INT)), dtype=dtype, name=NAME)
def sequence_mask(x, maxlen=None, dtype="int64", name=None):
    """``mask[i, j] = j < x[i]`` for lengths ``x``; ``maxlen`` defaults to ``max(x)``."""
    _check("sequence_mask", "x", x)
    helper = LayerHelper("sequence_mask", name=name)
    out = helper.create_variable_for_type_inference(convert_dtype(dtype), stop_gradient=True)
    inputs = {"X": [x]}
    attrs = {"out_dtype": int(convert_dtype(dtype))}
    if isinstance(maxlen, Variable):
        inputs["MaxLenTensor"] = [maxlen]
    else:
        attrs["maxlen"] = -1 if maxlen is None else int(maxlen)
    helper.append_op(type="sequence_mask", inputs=inputs, outputs={"Y": [out]}, attrs=attrs)
    return out


@checks(x=variable, pad_value=variable, maxlen=optional(POSITIVE_INT), name=NAME)
def sequence_pad(x, pad_value, maxlen=None, name=None):
    """Pad every sequence to ``maxlen`` rows (default: the longest) with ``pad_value``;
    returns (padded [N, maxlen, ...], lengths [N])."""
    _check("sequence_pad", "x", x)
    _check("sequence_pad", "pad_value", pad_value)
    helper = LayerHelper("sequence_pad", name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    length = helper.create_variable_for_type_inference(VarType.INT64, stop_gradient=True)
    helper.append_op(type="sequence_pad", inputs={"X": [x], "PadValue": [pad_value]},
                     outputs={"Out": [out], "Length": [length]},
                     attrs={"padded_length": -1 if maxlen is None else int(maxlen)})
    return out, length


@checks(x=variable, length=variable, name=NAME)
def sequence_unpad(x, length, name=None):
    """Inverse of sequence_pad: keep the first ``length[i]`` rows of each padded sequence."""
    _check("sequence_unpad", "x", x)
    _check("sequence_unpad", "length", length)
    helper = LayerHelper("sequence_unpad", name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="sequence_unpad", inputs={"X": [x], "Length": [length]},
                     outputs={"Out": [out]})
    return out


@checks(input=variable, offset=variable, length=variable, name=NAME)
def sequence_slice(input, offset, length, name=None):
    """Rows ``offset[i] .. offset[i] + length[i]`` of each sequence."""
    _check("sequence_slice", "input", input)
    helper = LayerHelper("sequence_slice", name=name)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="sequence_slice",
                     inputs={"X": [input], "Offset": [offset], "Length": [length]},
                     outputs={"Out": [out]})
    return out


@checks(x=variable, y=optional(variable), target_lod=optional(ints(None, 0)))
def lod_reset(x, y=None, target_lod=None):
    """``x`` with a new LoD: ``y``'s LoD (or ``y``'s data as offsets), else ``target_lod``."""
    _check("lod_reset", "x", x)
    helper = LayerHelper("lod_reset")
    out = helper.create_variable_for_type_inference(x.dtype)
    inputs = {"X": [x]}
    attrs = {}
    if y is not None:
        check_type(y, "y", Variable, "lod_reset")
        if y.lod_level == 0:  # then y's data are the offsets themselves
            check_variable_and_dtype(y, "y", ("int32",), "lod_reset")
        inputs["Y"] = [y]
    elif target_lod is not None:
        attrs["target_lod"] = list(target_lod)
    else:
        raise InvalidArgument("lod_reset: y or target_lod expected, but received neither")
    helper.append_op(type="lod_reset", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return out


@checks(X=variable, Y=variable)
def cos_sim(X, Y):
    """Cosine similarity of matching rows: ``Out[i] = <X[i], Y[i]> / (|X[i]| |Y[i]|)`` over
    every dimension after the first, shape ``[N, 1]``; a ``Y`` of one row is compared
    with every row of ``X``. ``Out`` keeps ``X``'s LoD.

    Example::

        x = fluid.data(name='x', shape=[3, 7], dtype='float32')
        y = fluid.data(name='y', shape=[1, 7], dtype='float32')
        out = fluid.layers.cos_sim(x, y)
    """
    for name, value in (("X", X), ("Y", Y)):
        if value.dtype not in (VarType.FP32, VarType.FP64):
            raise InvalidType(f"cos_sim: {name} expected a Variable of float32 or float64, "
                              f"but received {value.dtype.name.lower()}")
    helper = LayerHelper("cos_sim")
    out = helper.create_variable_for_type_inference(X.dtype)
    x_norm = helper.create_variable_for_type_inference(X.dtype)
    y_norm = helper.create_variable_for_type_inference(X.dtype)
    helper.append_op(type="cos_sim", inputs={"X": [X], "Y": [Y]},
                     outputs={"Out": [out], "XNorm": [x_norm], "YNorm": [y_norm]})
    return out


@checks(input=variable, index=variable, updates=variable, name=NAME)
def sequence_scatter(input, index, updates, name=None):
    """``out = input`` with ``updates`` added at the positions ``index`` gives, sequence by
    sequence: for element ``j`` of sequence ``i`` of ``index`` (int64 with one LoD level),
    ``out[i, index[j]] += updates[j]`` (``updates`` has ``index``'s shape and LoD).

    Example::

        x = fluid.data(name='x', shape=[3, 6], dtype='float32')
        ids = fluid.data(name='ids', shape=[-1, 1], dtype='int64', lod_level=1)
        upd = fluid.data(name='upd', shape=[-1, 1], dtype='float32', lod_level=1)
        out = fluid.layers.sequence_scatter(x, ids, upd)
    """
    helper = LayerHelper("sequence_scatter", name=name)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="sequence_scatter",
                     inputs={"X": [input], "Ids": [index], "Updates": [updates]},
                     outputs={"Out": [out]})
    return out


@checks(input=variable, win_size=int_in(2, want="an int >= 2"), pad_value=INT, name=NAME)
def sequence_enumerate(input, win_size, pad_value=0, name=None):
    """Every window of ``win_size`` consecutive ids of each sequence: ``out[r, k] =
    input[r + k]`` while ``r + k`` is in the same sequence, else ``pad_value``. ``input``
    is int32/int64 ``[N, 1]`` with a LoD; ``out`` is ``[N, win_size]`` with the same LoD.

    Example::

        ids = fluid.data(name='ids', shape=[-1, 1], dtype='int64', lod_level=1)
        windows = fluid.layers.sequence_enumerate(ids, win_size=2)  # bigrams
    """
    helper = LayerHelper("sequence_enumerate", name=name)
    out = helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
    helper.append_op(type="sequence_enumerate", inputs={"X": [input]}, outputs={"Out": [out]},
                     attrs={"win_size": win_size, "pad_value": pad_value})
    return out
