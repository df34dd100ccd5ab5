"""Parametrised activation and elementwise-function layers of Fluid 1.8: activations with
parameters (selu, stanh, brelu, soft_relu, hard_swish, mish, hard_shrink,
thresholded_relu), elementwise functions (log1p, erf, atan, acos, asin, sign, pow), and
``sum`` / ``clip_by_norm``. Each appends one op of the same name (``sum``: the op ``sum``)
with Paddle's attributes."""
from ...errors import InvalidArgument, InvalidType, expected
from ...framework import program as _fw
from ...framework.program import Variable
from ...framework.transaction import append_fresh, append_one_op, atomic, lean, replayed
from ...tensor.dtypes import VarType, dtype_name
from ..layer_helper import LayerHelper
from .tensor import _one_op as _appended_op  # (one op to a fresh temporary)
import builtins

from .arg_checks import (INT, NAME, NUMBER, boolean, check, checks, dtype, int_or_ints, ints,
                         optional, real_in, variable, variables)

builtins_range = builtins.range  # this module's own names shadow a few built-ins


__all__ = ["log1p", "erf", "atan", "acos", "asin", "hard_shrink", "thresholded_relu", "selu",
           "stanh", "brelu", "soft_relu", "hard_swish", "mish", "pow", "sum", "sign",
           "clip_by_norm", "shape", "rank", "size", "where", "nonzero", "argsort",
           "reduce_all", "reduce_any", "has_inf", "has_nan", "isfinite", "reverse", "flip",
           "roll", "index_select", "index_sample", "unique", "unique_with_counts", "logsumexp",
           "log_softmax", "clamp", "elementwise_equal", "addcmul", "t", "addmm", "bmm", "dot",
           "dist", "cross", "diag_embed", "meshgrid", "kron", "trace", "allclose",
           "sampling_id"]

_FLOATS = ("float16", "float32", "float64")


def _float_input(where, x):
    """Fluid's check: these layers take float tensors only."""
    check(where, "x", x, variable)
    if dtype_name(x.dtype) not in _FLOATS:
        raise InvalidType(expected(where, "x's dtype", "float16, float32 or float64",
                                   dtype_name(x.dtype)))


def _unary(op_type, x, attrs=None, name=None):
    """One ``op_type`` op on the float tensor ``x``, its attributes as floats: through
    ``append_one_op`` for a fresh output, in a transaction for a named one."""
    _float_input(op_type, x)
    check(op_type, "name", name, NAME)
    attrs = {k: float(v) for k, v in (attrs or {}).items()}
    if name is None:
        return _appended_op(op_type, {"X": (x.name,)}, attrs, x.dtype, op_type)
    with atomic():
        helper = LayerHelper(op_type, name=name)
        out = helper.create_variable(name=name, dtype=x.dtype, persistable=False)
        helper.append_op(type=op_type, inputs={"X": [x]}, outputs={"Out": [out]}, attrs=attrs)
        return out


@lean  # (one op through append_one_op, or a transaction of its own)
def log1p(x, name=None):
    """Out = ln(1 + X)."""
    return _unary("log1p", x, name=name)


log1p = replayed(log1p, globals())


@lean  # (one op through append_one_op, or a transaction of its own)
def erf(x, name=None):
    """Out = erf(X)."""
    return _unary("erf", x, name=name)


erf = replayed(erf, globals())


@lean  # (one op through append_one_op, or a transaction of its own)
def atan(x, name=None):
    """Out = atan(X)."""
    return _unary("atan", x, name=name)


atan = replayed(atan, globals())


@lean  # (one op through append_one_op, or a transaction of its own)
def acos(x, name=None):
    """Out = acos(X)."""
    return _unary("acos", x, name=name)


acos = replayed(acos, globals())


@lean  # (one op through append_one_op, or a transaction of its own)
def asin(x, name=None):
    """Out = asin(X)."""
    return _unary("asin", x, name=name)


asin = replayed(asin, globals())


@lean  # (one op through append_one_op, or a transaction of its own)
@checks(threshold=optional(real_in(0.0)))
def hard_shrink(x, threshold=None):
    """Out = X where |X| > threshold (default 0.5), else 0."""
    return _unary("hard_shrink", x, {"threshold": 0.5 if threshold is None else threshold})


hard_shrink = replayed(hard_shrink, globals())


@lean  # (one op through append_one_op, or a transaction of its own)
@checks(threshold=optional(NUMBER))
def thresholded_relu(x, threshold=None):
    """Out = X where X > threshold (default 1.0), else 0."""
    return _unary("thresholded_relu", x, {"threshold": 1.0 if threshold is None else threshold})


thresholded_relu = replayed(thresholded_relu, globals())


@lean  # (one op through append_one_op, or a transaction of its own)
@checks(scale=optional(real_in(1.0)), alpha=optional(real_in(0.0)))
def selu(x, scale=None, alpha=None, name=None):
    """Out = scale * (X where X > 0, else alpha (e^X - 1)); the defaults keep the
    activations' mean and variance (Klambauer et al.)."""
    attrs = {}
    if scale is not None:
        attrs["scale"] = scale
    if alpha is not None:
        attrs["alpha"] = alpha
    return _unary("selu", x, attrs, name)


selu = replayed(selu, globals())


@lean  # (one op through append_one_op, or a transaction of its own)
@checks(scale_a=NUMBER, scale_b=NUMBER)
def stanh(x, scale_a=0.67, scale_b=1.7159, name=None):
    """Out = scale_b * tanh(scale_a * X)."""
    return _unary("stanh", x, {"scale_a": scale_a, "scale_b": scale_b}, name)


stanh = replayed(stanh, globals())


@lean  # (one op through append_one_op, or a transaction of its own)
@checks(t_min=NUMBER, t_max=NUMBER)
def brelu(x, t_min=0.0, t_max=24.0, name=None):
    """Out = min(max(X, t_min), t_max)."""
    if t_min > t_max:
        raise InvalidArgument(f"brelu: t_min expected <= t_max ({t_max}), but received {t_min}")
    return _unary("brelu", x, {"t_min": t_min, "t_max": t_max}, name)


brelu = replayed(brelu, globals())


@lean  # (one op through append_one_op, or a transaction of its own)
@checks(threshold=real_in(0.0))
def soft_relu(x, threshold=40.0, name=None):
    """Out = ln(1 + e^clip(X, -threshold, threshold))."""
    return _unary("soft_relu", x, {"threshold": threshold}, name)


soft_relu = replayed(soft_relu, globals())


@lean  # (one op through append_one_op, or a transaction of its own)
@checks(threshold=NUMBER, scale=real_in(0.0), offset=NUMBER)
def hard_swish(x, threshold=6.0, scale=6.0, offset=3.0, name=None):
    """Out = X * min(max(X + offset, 0), threshold) / scale (Howard et al.)."""
    return _unary("hard_swish", x, {"threshold": threshold, "scale": scale, "offset": offset},
                  name)


hard_swish = replayed(hard_swish, globals())


@lean  # (one op through append_one_op, or a transaction of its own)
@checks(threshold=NUMBER)
def mish(x, threshold=20, name=None):
    """Out = X * tanh(softplus(X)) (Misra)."""
    return _unary("mish", x, {"threshold": threshold}, name)


mish = replayed(mish, globals())


@lean  # (one op through append_one_op, or a transaction of its own)
@checks(x=variable, name=NAME)  # (and Fluid 1.8's dtypes of x and a factor tensor)
def pow(x, factor=1.0, name=None):
    """Out = X ^ factor; ``factor`` a number or a Variable of one value (FactorTensor)."""
    if not isinstance(factor, Variable):
        check("pow", "factor", factor, NUMBER)
        if name is None:  # (the usual call: a number, no name)
            return _appended_op("pow", {"X": (x.name,)}, {"factor": float(factor)}, x.dtype,
                                "pow")
    with atomic():
        helper = LayerHelper("pow", name=name)
        out = helper.create_variable_for_type_inference(x.dtype)
        inputs, attrs = {"X": [x]}, {}
        if isinstance(factor, Variable):
            inputs["FactorTensor"] = [factor]
        else:
            attrs["factor"] = float(factor)
        helper.append_op(type="pow", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
        return out


pow = replayed(pow, globals())


@lean  # (one op through append_fresh, which takes an X of several names in C)
@checks(x=variables)
def sum(x):
    """Out = x[0] + x[1] + ... (a Variable or a list of them, LoD from the first)."""
    xs = [x] if isinstance(x, Variable) else list(x)
    for var in xs:
        _dtype_among("sum", "x", var, ("float32", "float64", "int32", "int64"))
    program = _fw._main_program
    return append_fresh(program.blocks[program.current_block_idx], "sum",
                        {"X": tuple(var.name for var in xs)}, {"Out": [(xs[0].dtype, False)]},
                        {"use_mkldnn": False}, "sum")["Out"][0]


@lean  # (one op through append_one_op, or a transaction of its own)
def sign(x):
    """Out = -1, 0 or 1 by the sign of X (a NumPy array is assigned to a variable first)."""
    import numpy as np
    if isinstance(x, np.ndarray):
        with atomic():  # (two ops: the array's assign_value, then sign)
            from .tensor import assign
            return sign(assign(x))
    check("sign", "x", x, variable)
    _dtype_among("sign", "x", x, _FLOATS)
    return _appended_op("sign", {"X": (x.name,)}, None, x.dtype, "sign")


sign = replayed(sign, globals())


@lean  # (one op through append_one_op, or a transaction of its own)
@checks(x=variable, max_norm=real_in(0.0))
def clip_by_norm(x, max_norm, name=None):
    """Out = X * max_norm / ||X||_2 where ||X||_2 > max_norm, else X."""
    attrs = {"max_norm": float(max_norm)}
    if name is None:  # (the usual call)
        return _appended_op("clip_by_norm", {"X": (x.name,)}, attrs, x.dtype,
                            "clip_by_norm")
    with atomic():
        helper = LayerHelper("clip_by_norm", name=name)
        out = helper.create_variable_for_type_inference(x.dtype)
        helper.append_op(type="clip_by_norm", inputs={"X": [x]}, outputs={"Out": [out]},
                         attrs=attrs)
        return out


clip_by_norm = replayed(clip_by_norm, globals())


# --- shapes, searching and sorting ----------------------------------------------------------
def _dtype_among(where, name, var, allowed):
    """Fluid's check_variable_and_dtype: ``var``'s type is one of ``allowed``."""
    got = dtype_name(var.dtype)
    if got not in allowed:
        raise InvalidType(expected(where, f"{name}'s dtype", "one of " + ", ".join(allowed),
                                   got))


def _one_op(op_type, inputs, out_dtype, attrs=None, layer=None, stop_gradient=False):
    """One ``op_type`` op on ``inputs`` (slot -> list of Variables) to a fresh temporary
    named for ``layer`` (``op_type`` by default), all or nothing itself."""
    out = _appended_op(op_type, {slot: tuple(var.name for var in variables)
                                 for slot, variables in inputs.items()}, attrs, out_dtype,
                       layer or op_type)
    if stop_gradient:
        out.stop_gradient = True
    return out


@lean  # (one op through append_one_op)
@checks(input=variable)
def shape(input):
    """The dims of ``input`` as an int32 tensor of its rank (``shape``); dims unknown when
    the program was built (-1) are the real ones at run time."""
    _dtype_among("shape", "input", input, ("float32", "float64", "int32", "int64"))
    return _one_op("shape", {"Input": [input]}, VarType.INT32)


@checks(input=variable)
def rank(input):
    """The number of dims of ``input``, an int32 constant (``assign_value``)."""
    import numpy as np
    from .tensor import assign
    return assign(np.array(len(input.shape), "int32"))


@lean  # (one op through append_one_op)
@checks(input=variable)
def size(input):
    """The number of elements of ``input``, an int64 tensor of shape [1] (``size``)."""
    return _one_op("size", {"Input": [input]}, VarType.INT64)


@lean  # (one op through append_one_op)
@checks(condition=variable)
def where(condition):
    """The coordinates of the true elements of ``condition``: an int64 tensor [count, rank]
    (Fluid 1.8's one-argument ``where`` is the ``where_index`` op)."""
    return _one_op("where_index", {"Condition": [condition]}, VarType.INT64)


@checks(input=variable, as_tuple=boolean)
def nonzero(input, as_tuple=False):
    """The coordinates of the non-zero elements (``where_index``); with ``as_tuple``, one
    [count, 1] tensor per dim (sliced from them)."""
    from .manip import slice
    coords = where(input)
    if not as_tuple:
        return coords
    rank_ = len(input.shape)
    if rank_ == 1:
        return (coords,)
    return tuple(slice(coords, axes=[1], starts=[i], ends=[i + 1]) for i in builtins_range(rank_))


@lean  # (one op through append_fresh, or a transaction of its own)
@checks(input=variable, axis=INT, descending=boolean, name=NAME)
def argsort(input, axis=-1, descending=False, name=None):
    """``input`` sorted along ``axis`` and the int64 indices of the sorted values:
    returns (out, indices) (``argsort``)."""
    _dtype_among("argsort", "input", input,
                 ("float32", "float64", "int16", "int32", "int64", "uint8"))
    rank_ = len(input.shape)
    if not -rank_ <= axis < max(rank_, 1):
        raise InvalidArgument(f"argsort: axis expected in [{-rank_}, {rank_}), but received "
                              f"{axis}")
    attrs = {"axis": axis, "descending": descending}
    if name is None:  # (the usual call)
        program = _fw._main_program
        made = append_fresh(program.blocks[program.current_block_idx], "argsort",
                            {"X": (input.name,)},
                            {"Out": [(input.dtype, True)], "Indices": [(VarType.INT64, True)]},
                            attrs, "argsort")
        return made["Out"][0], made["Indices"][0]
    with atomic():
        helper = LayerHelper("argsort", name=name)
        out = helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
        ids = helper.create_variable_for_type_inference(VarType.INT64, stop_gradient=True)
        helper.append_op(type="argsort", inputs={"X": [input]},
                         outputs={"Out": [out], "Indices": [ids]}, attrs=attrs)
        return out, ids


def _logical_reduce(op_type, input, dim, keep_dim, name):
    _dtype_among(op_type, "input", input, ("bool",))
    if dim is not None and not isinstance(dim, list):
        dim = [dim]
    helper = LayerHelper(op_type, name=name)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type=op_type, inputs={"X": [input]}, outputs={"Out": [out]},
                     attrs={"dim": dim if dim else [0], "keep_dim": keep_dim,
                            "reduce_all": not dim})
    return out


@checks(input=variable, dim=optional(int_or_ints(None)), keep_dim=boolean, name=NAME)
def reduce_all(input, dim=None, keep_dim=False, name=None):
    """Logical and of a bool tensor over ``dim`` (every dim when None) (``reduce_all``)."""
    return _logical_reduce("reduce_all", input, dim, keep_dim, name)


@checks(input=variable, dim=optional(int_or_ints(None)), keep_dim=boolean, name=NAME)
def reduce_any(input, dim=None, keep_dim=False, name=None):
    """Logical or of a bool tensor over ``dim`` (every dim when None) (``reduce_any``)."""
    return _logical_reduce("reduce_any", input, dim, keep_dim, name)


@lean  # (one op through append_one_op)
@checks(x=variable)
def has_inf(x):
    """[True] when any element of ``x`` is infinite (``isinf``, a bool of shape [1])."""
    return _one_op("isinf", {"X": [x]}, x.dtype)


has_inf = replayed(has_inf, globals())


@lean  # (one op through append_one_op)
@checks(x=variable)
def has_nan(x):
    """[True] when any element of ``x`` is NaN (``isnan``, a bool of shape [1])."""
    return _one_op("isnan", {"X": [x]}, x.dtype)


has_nan = replayed(has_nan, globals())


@lean  # (one op through append_one_op)
@checks(x=variable)
def isfinite(x):
    """[True] when every element of ``x`` is finite (``isfinite``, a bool of shape [1])."""
    _dtype_among("isfinite", "x", x, ("float32", "float64", "int32", "int64"))
    return _one_op("isfinite", {"X": [x]}, VarType.BOOL)


isfinite = replayed(isfinite, globals())


@lean  # (one op through append_one_op)
@checks(x=variable, axis=int_or_ints(None))
def reverse(x, axis):
    """``x`` reversed along ``axis`` (an int or a list of them) (``reverse``)."""
    _dtype_among("reverse", "x", x, ("float32", "float64", "int32", "int64", "uint8"))
    axis = [axis] if not isinstance(axis, (list, tuple)) else list(axis)
    return _one_op("reverse", {"X": [x]}, x.dtype, {"axis": axis})


reverse = replayed(reverse, globals())


@lean  # (one op through append_one_op, or a transaction of its own)
@checks(input=variable, dims=ints(), name=NAME)
def flip(input, dims, name=None):
    """``input`` reversed along each dim in ``dims`` (``flip``)."""
    _dtype_among("flip", "input", input,
                 ("float16", "float32", "float64", "int32", "int64", "bool"))
    if not dims:
        raise InvalidArgument(f"flip: dims expected at least one dim, but received {dims}")
    if name is None:  # (the usual call)
        return _appended_op("flip", {"X": (input.name,)}, {"dims": list(dims)}, input.dtype,
                            "flip")
    with atomic():
        helper = LayerHelper("flip", name=name)
        out = helper.create_variable(name=name, dtype=input.dtype, persistable=False)
        helper.append_op(type="flip", inputs={"X": [input]}, outputs={"Out": [out]},
                         attrs={"dims": list(dims)})
        return out


flip = replayed(flip, globals())


@checks(input=variable, shifts=int_or_ints(None), dims=optional(int_or_ints(None)))
def roll(input, shifts, dims=None):
    """``input`` shifted by ``shifts`` along ``dims``, wrapping round (``roll``); with no
    dims, the flattened tensor is rolled (reshape to [-1, 1], roll, reshape back)."""
    from .manip import reshape
    shifts = [shifts] if not isinstance(shifts, (list, tuple)) else list(shifts)
    dims = [dims] if isinstance(dims, int) else dims
    origin = list(input.shape)
    if not dims:
        input, dims = reshape(input, shape=[-1, 1]), [0]
    out = _one_op("roll", {"X": [input]}, input.dtype, {"dims": list(dims), "shifts": shifts})
    return reshape(out, shape=origin, inplace=True)


@lean  # (one op through append_one_op)
@checks(input=variable, index=variable, dim=INT)
def index_select(input, index, dim=0):
    """The slices of ``input`` at ``index`` (int32/int64, 1-D) along ``dim``
    (``index_select``)."""
    _dtype_among("index_select", "x", input, ("float32", "float64", "int32", "int64"))
    _dtype_among("index_select", "index", index, ("int32", "int64"))
    return _one_op("index_select", {"X": [input], "Index": [index]}, input.dtype, {"dim": dim})


@lean  # (one op through append_one_op)
@checks(x=variable, index=variable)
def index_sample(x, index):
    """Out[i, j] = x[i, index[i, j]] (``index_sample``)."""
    _dtype_among("index_sample", "x", x, ("float32", "float64", "int32", "int64"))
    _dtype_among("index_sample", "index", index, ("int32", "int64"))
    return _one_op("index_sample", {"X": [x], "Index": [index]}, x.dtype)


def _unique(op_type, x, index_dtype, outputs):
    from ...tensor.dtypes import convert_dtype, dtype_name
    _dtype_among(op_type, "x", x, ("float32", "float64", "int32", "int64"))
    vt = convert_dtype(index_dtype)
    if dtype_name(vt) not in ("int32", "int64"):
        from ...errors import InvalidType
        raise InvalidType(f"{op_type}: dtype expected int32 or int64, but received "
                          f"{dtype_name(vt)}")
    if len(x.shape) != 1:
        raise InvalidArgument(f"{op_type}: x expected a 1-D tensor, but received shape "
                              f"{list(x.shape)}")
    helper = LayerHelper(op_type)
    outs = {"Out": [helper.create_variable_for_type_inference(x.dtype)]}
    for slot in outputs:
        outs[slot] = [helper.create_variable_for_type_inference(vt)]
    helper.append_op(type=op_type, inputs={"X": [x]}, outputs=outs, attrs={"dtype": int(vt)})
    return tuple(outs[slot][0] for slot in ["Out"] + outputs)


@checks(x=variable, dtype=dtype)
def unique(x, dtype="int32"):
    """The distinct values of 1-D ``x`` in the order they first appear and, for each
    element, the position of its value among them: returns (out, index) (``unique``)."""
    return _unique("unique", x, dtype, ["Index"])


@checks(x=variable, dtype=dtype)
def unique_with_counts(x, dtype="int32"):
    """``unique`` and how often each distinct value occurs: returns (out, index, count)
    (``unique_with_counts``)."""
    return _unique("unique_with_counts", x, dtype, ["Index", "Count"])


# --- composites of existing ops -----------------------------------------------------------
@checks(x=variable, dim=optional(int_or_ints(None)), keepdim=boolean, out=optional(variable),
        name=NAME)
def logsumexp(x, dim=None, keepdim=False, out=None, name=None):
    """log(sum(exp(x))) over ``dim`` (every dim when None): ``exp``, ``reduce_sum`` and
    ``log`` ops, as Fluid 1.8 builds it."""
    from .nn import log, reduce_sum
    from .ops import exp
    _dtype_among("logsumexp", "x", x, ("float32", "float64"))
    total = reduce_sum(exp(x), dim, keepdim)
    if out is None:
        return log(total, name)
    helper = LayerHelper("logsumexp")
    helper.append_op(type="log", inputs={"X": [total]}, outputs={"Out": [out]})
    return out


@checks(input=variable, axis=optional(INT), name=NAME)
def log_softmax(input, axis=None, dtype=None, name=None):
    """log(softmax(input)) along ``axis`` (the last when None): an optional ``cast`` to
    ``dtype``, then ``softmax`` and ``log`` ops."""
    from ...tensor.dtypes import convert_dtype
    axis = -1 if axis is None else axis
    helper = LayerHelper("log_softmax", name=name)
    source = input
    if dtype is None:
        _dtype_among("log_softmax", "input", input, ("float16", "float32", "float64"))
    else:
        vt = convert_dtype(dtype)
        source = helper.create_variable_for_type_inference(vt)
        helper.append_op(type="cast", inputs={"X": [input]}, outputs={"Out": [source]},
                         attrs={"in_dtype": int(input.dtype), "out_dtype": int(vt)})
    soft = helper.create_variable_for_type_inference(source.dtype)
    helper.append_op(type="softmax", inputs={"X": [source]}, outputs={"Out": [soft]},
                     attrs={"axis": axis, "use_cudnn": False})
    out = helper.create_variable_for_type_inference(soft.dtype)
    helper.append_op(type="log", inputs={"X": [soft]}, outputs={"Out": [out]})
    return out


_BOUND = optional(lambda v: None if isinstance(v, Variable) else NUMBER(v))


@checks(input=variable, min=_BOUND, max=_BOUND, output=optional(variable), name=NAME)
def clamp(input, min=None, max=None, output=None, name=None):
    """``input`` limited to [min, max] (a ``clip`` op; a bound left out is the largest
    float's, a Variable bound goes to the Min / Max input)."""
    import sys
    if min is None and max is None:
        raise InvalidArgument("clamp: min or max expected, but received neither")
    inputs = {"X": [input]}
    attrs = {"min": sys.float_info.min, "max": sys.float_info.max}
    for key, slot, bound in (("min", "Min", min), ("max", "Max", max)):
        if isinstance(bound, Variable):
            _dtype_among("clamp", key, bound, ("float32", "float64", "int32"))
            bound.stop_gradient = True
            inputs[slot] = [bound]
        elif bound is not None:
            attrs[key] = float(bound)
    helper = LayerHelper("clamp", name=name)
    if output is None:
        output = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="clip", inputs=inputs, outputs={"Out": [output]}, attrs=attrs)
    return output


@checks(x=variable, y=variable, name=NAME)
def elementwise_equal(x, y, name=None):
    """x == y elementwise, a bool tensor (the ``equal`` op)."""
    helper = LayerHelper("elementwise_equal", name=name)
    out = helper.create_variable_for_type_inference(VarType.BOOL)
    out.stop_gradient = True
    helper.append_op(type="equal", inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]},
                     attrs={"force_cpu": False})
    return out


@checks(input=variable, tensor1=variable, tensor2=variable, value=NUMBER,
        out=optional(variable), name=NAME)
def addcmul(input, tensor1, tensor2, value=1.0, out=None, name=None):
    """input + value * tensor1 * tensor2 (``elementwise_mul``, ``scale``,
    ``elementwise_add``; ``assign`` into ``out`` when given)."""
    from .nn import scale
    from .ops import elementwise_add, elementwise_mul
    from .tensor import assign
    allowed = ("float32", "float64", "int32", "int64")
    for arg, var in (("input", input), ("tensor1", tensor1), ("tensor2", tensor2)):
        _dtype_among("addcmul", arg, var, allowed)
    result = elementwise_add(input, scale(elementwise_mul(tensor1, tensor2), scale=value))
    return result if out is None else assign(result, out)


@checks(input=variable, name=NAME)
def t(input, name=None):
    """The transpose of a matrix (``transpose2`` with axis [1, 0]); a tensor of rank 0 or
    1 is returned as it is."""
    if len(input.shape) > 2:
        raise InvalidArgument(f"t: input expected a tensor of rank 2 or less (use "
                              f"transpose), but received shape {list(input.shape)}")
    _dtype_among("t", "input", input, ("float16", "float32", "float64", "int32", "int64"))
    if len(input.shape) < 2:
        return input
    helper = LayerHelper("t", name=name)
    out = helper.create_variable_for_type_inference(input.dtype)
    x_shape = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="transpose2", inputs={"X": [input]},
                     outputs={"Out": [out], "XShape": [x_shape]}, attrs={"axis": [1, 0]})
    return out


# --- products, distances and diagonals -------------------------------------------------------
_FLOAT_ONLY = ("float32", "float64")
_NUMBERS = ("float32", "float64", "int32", "int64")


def _named_out(helper, dtype, name):
    if name is None:
        return helper.create_variable_for_type_inference(dtype)
    return helper.create_variable(name=name, dtype=dtype, persistable=False)


@lean  # (one op through append_one_op)
@checks(input=variable, x=variable, y=variable, alpha=NUMBER, beta=NUMBER, name=NAME)
def addmm(input, x, y, alpha=1.0, beta=1.0, name=None):
    """beta * input + alpha * (x @ y) for matrices x [M, K], y [K, N], input broadcast to
    [M, N] (``addmm``)."""
    for arg, var in (("Input", input), ("X", x), ("Y", y)):
        _dtype_among("addmm", arg, var, _FLOAT_ONLY)
    return _one_op("addmm", {"Input": [input], "X": [x], "Y": [y]}, x.dtype,
                   {"Alpha": float(alpha), "Beta": float(beta)})


@lean  # (one op through append_one_op)
@checks(x=variable, y=variable, name=NAME)
def bmm(x, y, name=None):
    """The batched matrix product out[b] = x[b] @ y[b] of [B, M, K] and [B, K, N]
    (``bmm``)."""
    if len(x.shape) != 3 or len(y.shape) != 3:
        raise InvalidArgument(f"bmm: x and y expected 3-D tensors, but received shapes "
                              f"{list(x.shape)} and {list(y.shape)}")
    return _one_op("bmm", {"X": [x], "Y": [y]}, x.dtype)


@checks(x=variable, y=variable, name=NAME)
def dot(x, y, name=None):
    """The inner product of vectors, or of each row of two matrices: shape [1] or [B, 1]
    (``dot``)."""
    _dtype_among("dot", "x", x, _NUMBERS)
    _dtype_among("dot", "y", y, _NUMBERS)
    helper = LayerHelper("dot", name=name)
    out = _named_out(helper, x.dtype, name)
    helper.append_op(type="dot", inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]})
    return out


@lean  # (one op through append_one_op)
@checks(x=variable, y=variable, p=real_in(finite=False))
def dist(x, y, p=2):
    """The p-norm of x - y over every element (x and y broadcast), shape [1] (``dist``):
    p = 0 counts the non-zeros, inf / -inf take the largest / smallest |x - y|."""
    _dtype_among("dist", "x", x, _FLOAT_ONLY)
    _dtype_among("dist", "y", y, _FLOAT_ONLY)
    return _one_op("dist", {"X": [x], "Y": [y]}, x.dtype, {"p": float(p)})


@lean  # (one op through append_one_op)
@checks(input=variable, other=variable, dim=optional(INT))
def cross(input, other, dim=None):
    """The cross product of the 3-vectors along ``dim`` (the first dim of size 3 when None)
    (``cross``)."""
    return _one_op("cross", {"X": [input], "Y": [other]}, input.dtype,
                   {"dim": dim} if dim else None)


@lean  # (one op through append_one_op)
@checks(input=variable, offset=INT, dim1=INT, dim2=INT)
def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Each vector of ``input``'s last dim placed on diagonal ``offset`` of a square matrix
    in dims ``dim1``, ``dim2`` of the result, one rank higher (``diag_embed``)."""
    _dtype_among("diag_embed", "Input", input, ("int32", "int64", "float16") + _FLOAT_ONLY)
    rank_ = len(input.shape)
    d1 = dim1 if dim1 >= 0 else rank_ + dim1 + 1
    d2 = dim2 if dim2 >= 0 else rank_ + dim2 + 1
    if not (0 <= d1 <= rank_ and 0 <= d2 <= rank_) or d1 == d2:
        raise InvalidArgument(f"diag_embed: dim1 and dim2 expected two different dims in "
                              f"[{-rank_ - 1}, {rank_}], but received {dim1} and {dim2}")
    return _one_op("diag_embed", {"Input": [input]}, input.dtype,
                   {"offset": offset, "dim1": dim1, "dim2": dim2}, stop_gradient=True)


@checks(input=variables, name=NAME)
def meshgrid(input, name=None):
    """N 1-D tensors spread over the N-D grid of their lengths: returns N tensors, the k-th
    varying along dim k (``meshgrid``, matrix indexing)."""
    if not isinstance(input, list):
        from ...errors import InvalidType
        raise InvalidType(f"meshgrid: input expected a list of Variables, but received "
                          f"{type(input).__name__}")
    for var in input:
        _dtype_among("meshgrid", "input", var, ("float16", "float32", "float64", "int32",
                                                 "int64"))
    helper = LayerHelper("meshgrid", name=name)
    outs = [helper.create_variable_for_type_inference(var.dtype) for var in input]
    helper.append_op(type="meshgrid", inputs={"X": list(input)}, outputs={"Out": outs})
    return outs


@checks(x=variable, y=variable, out=optional(variable), name=NAME)
def kron(x, y, out=None, name=None):
    """The Kronecker product of ``x`` and ``y`` (``kron``)."""
    allowed = ("float16",) + _NUMBERS
    _dtype_among("kron", "x", x, allowed)
    _dtype_among("kron", "y", y, allowed)
    if out is None:
        return _one_op("kron", {"X": [x], "Y": [y]}, x.dtype)
    LayerHelper("kron").append_op(type="kron", inputs={"X": [x], "Y": [y]},
                                  outputs={"Out": [out]})
    return out


@checks(input=variable, offset=INT, dim1=INT, dim2=INT, out=optional(variable), name=NAME)
def trace(input, offset=0, dim1=0, dim2=1, out=None, name=None):
    """The sums of diagonal ``offset`` of the matrices in dims ``dim1``, ``dim2``
    (``trace``)."""
    rank_ = len(input.shape)
    if rank_ < 2:
        raise InvalidArgument(f"trace: input expected a tensor of rank 2 or more, but "
                              f"received shape {list(input.shape)}")
    d1, d2 = (dim1 + rank_ if dim1 < 0 else dim1), (dim2 + rank_ if dim2 < 0 else dim2)
    if not (0 <= d1 < rank_ and 0 <= d2 < rank_) or d1 == d2:
        raise InvalidArgument(f"trace: dim1 and dim2 expected two different dims in "
                              f"[{-rank_}, {rank_}), but received {dim1} and {dim2}")
    attrs = {"offset": offset, "dim1": dim1, "dim2": dim2}
    if out is None:
        return _one_op("trace", {"Input": [input]}, input.dtype, attrs)
    LayerHelper("trace").append_op(type="trace", inputs={"Input": [input]},
                                   outputs={"Out": [out]}, attrs=attrs)
    return out


@checks(input=variable, other=variable, rtol=NUMBER, atol=NUMBER, equal_nan=boolean,
        name=NAME)
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False, name=None):
    """[True] when every |input - other| <= atol + rtol * |other| (``allclose``)."""
    return _one_op("allclose", {"Input": [input], "Other": [other]}, VarType.BOOL,
                   {"rtol": float(rtol), "atol": float(atol), "equal_nan": equal_nan})


@checks(x=variable, min=NUMBER, max=NUMBER, seed=INT, dtype=dtype)
def sampling_id(x, min=0.0, max=1.0, seed=0, dtype="float32"):
    """One column drawn per row of ``x`` [batch, classes], each row taken as a probability
    distribution (``sampling_id``)."""
    from ...tensor.dtypes import convert_dtype
    return _one_op("sampling_id", {"X": [x]}, convert_dtype(dtype),
                   {"min": float(min), "max": float(max), "seed": seed})
