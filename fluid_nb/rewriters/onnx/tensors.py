"""Converters of the math, comparison, logic, selection and tensor-manipulation ops (opset
17), entries of the one table in :mod:`.converters`.

Each matches fluid_nb's kernel, not a looser reading of the op: ``elementwise_mod`` takes the
divisor's sign as Python's ``%`` does, ``argsort`` and ``top_k`` keep ties in index order,
``unique`` lists values in the order they first appear, ``shape`` is int32.
"""
import numpy as np

from ...tensor.dtypes import to_numpy_dtype
from .converters import (ROW_WISE, UNCONVERTIBLE, NotConvertible, _aligned_y, _in,
                         _no_tensor_attrs, _out, converter)

_INT64_MAX = np.iinfo(np.int64).max


def _ints(ctx, values, hint="ints"):
    return ctx.const(np.array(values, "int64"), hint)


def _reshape_to_declared(ctx, value, out):
    """``value`` reshaped to ``out``'s declared shape (a Fluid 1.x scalar is [1])."""
    shape = list(ctx.shape(out))
    if any(d < 0 for d in shape):
        raise NotConvertible(f"{out}'s declared shape {shape} has unknown dims")
    ctx.node("Reshape", [value, _ints(ctx, shape, "shape")], [out])


def _scalar_of(ctx, name):
    """A 0-D view of the one-element tensor ``name``."""
    scalar = ctx.tmp("scalar")
    ctx.node("Reshape", [name, _ints(ctx, [], "scalar_shape")], [scalar])
    return scalar


def _as_bool(ctx, name):
    if ctx.dtype(name) == np.bool_:
        return name
    as_bool = ctx.tmp("bool")
    ctx.node("Cast", [name], [as_bool], to=ctx.onnx.TensorProto.BOOL)
    return as_bool


def _cast_to(ctx, value, out):
    """Cast ``value`` into ``out`` (a plain copy when the types agree)."""
    ctx.node("Cast", [value], [out], to=ctx.onnx_type(out))


# --- more maps (the activations are lowered from their records' formulas: expressions.py) ----
@converter("pow")
def _pow(op, ctx):
    x = _in(op, "X")
    factor = _in(op, "FactorTensor")
    if factor is None:
        factor = ctx.scalar(op.attrs.get("factor", 1.0), x)
    ctx.node("Pow", [x, factor], [_out(op, "Out")])


# --- elementwise: floor division, modulo, comparisons, logic ---------------------------------------
@converter("elementwise_mod")
def _elementwise_mod(op, ctx):
    x, y, out = _in(op, "X"), _in(op, "Y"), _out(op, "Out")
    y = _aligned_y(op, ctx, x, y)
    if ctx.dtype(x).kind in "iu":
        ctx.node("Mod", [x, y], [out], fmod=0)  # the divisor's sign, as Python's %
        return
    # floats: C's fmod (the dividend's sign), moved by Y where the signs differ
    rem, nonzero, differ, fix = (ctx.tmp(n) for n in ("fmod", "nonzero", "differ", "fix"))
    ctx.node("Mod", [x, y], [rem], fmod=1)
    zero = ctx.scalar(0.0, x)
    is_zero, rem_neg, y_neg = ctx.tmp("is_zero"), ctx.tmp("rem_neg"), ctx.tmp("y_neg")
    ctx.node("Equal", [rem, zero], [is_zero])
    ctx.node("Not", [is_zero], [nonzero])
    ctx.node("Less", [rem, zero], [rem_neg])
    ctx.node("Less", [y, zero], [y_neg])
    ctx.node("Xor", [rem_neg, y_neg], [differ])
    ctx.node("And", [nonzero, differ], [fix])
    moved = ctx.tmp("moved")
    ctx.node("Add", [rem, y], [moved])
    ctx.node("Where", [fix, moved, rem], [out])


@converter("elementwise_floordiv")
def _elementwise_floordiv(op, ctx):
    x, y, out = _in(op, "X"), _in(op, "Y"), _out(op, "Out")
    y = _aligned_y(op, ctx, x, y)
    if ctx.dtype(x).kind in "f":
        quotient = ctx.tmp("quotient")
        ctx.node("Div", [x, y], [quotient])
        ctx.node("Floor", [quotient], [out])
        return
    # integers: (X - X mod Y) / Y is exact, and Mod with fmod=0 floors as Python does
    rem, exact = ctx.tmp("mod"), ctx.tmp("exact")
    ctx.node("Mod", [x, y], [rem], fmod=0)
    ctx.node("Sub", [x, rem], [exact])
    ctx.node("Div", [exact, y], [out])


#: (less_than is the loops' converter: it may be a loop's own condition)
_COMPARE = {"equal": "Equal", "greater_than": "Greater", "greater_equal": "GreaterOrEqual",
            "less_equal": "LessOrEqual"}


@converter(*_COMPARE, "not_equal")
def _compare(op, ctx):
    x, y, out = _in(op, "X"), _in(op, "Y"), _out(op, "Out")
    y = _aligned_y(op, ctx, x, y)
    if op.type not in ("equal", "not_equal"):
        ctx.node(_COMPARE[op.type], [x, y], [out])
        return
    same = ctx.tmp("equal") if op.type == "not_equal" else out
    if ctx.dtype(x).kind == "f":  # Paddle: floats within 1e-8 are equal (NaN never is)
        exact, diff, magnitude, near = (ctx.tmp(n) for n in ("exact", "diff", "abs", "near"))
        ctx.node("Equal", [x, y], [exact])
        ctx.node("Sub", [x, y], [diff])
        ctx.node("Abs", [diff], [magnitude])
        ctx.node("Less", [magnitude, ctx.scalar(1e-8, x)], [near])
        ctx.node("Or", [exact, near], [same])
    else:
        ctx.node("Equal", [x, y], [same])
    if op.type == "not_equal":
        ctx.node("Not", [same], [out])


_LOGIC = {"logical_and": "And", "logical_or": "Or", "logical_xor": "Xor"}


@converter(*_LOGIC)
def _logic(op, ctx):
    ctx.node(_LOGIC[op.type], [_as_bool(ctx, _in(op, "X")), _as_bool(ctx, _in(op, "Y"))],
             [_out(op, "Out")])


@converter("where")
def _where(op, ctx):
    ctx.node("Where", [_as_bool(ctx, _in(op, "Condition")), _in(op, "X"), _in(op, "Y")],
             [_out(op, "Out")])


@converter("clip")
def _clip(op, ctx):
    x = _in(op, "X")
    bounds = []
    for slot, attr in (("Min", "min"), ("Max", "max")):
        tensor = _in(op, slot)
        bounds.append(_scalar_of(ctx, tensor) if tensor else
                      ctx.scalar(op.attrs.get(attr), x))
    ctx.node("Clip", [x] + bounds, [_out(op, "Out")])


ROW_WISE.update(_COMPARE, _LOGIC)
ROW_WISE.update({"pow", "elementwise_mod", "elementwise_floordiv", "not_equal", "where", "clip"})


# --- reductions and products ----------------------------------------------------------------------
def _reduce_dims(op, rank, dim_attr="dim"):
    dims = op.attrs.get(dim_attr, [0])
    if op.attrs.get("reduce_all") or not dims:
        return list(range(rank))
    return sorted({d % rank for d in dims})


@converter("logsumexp")
def _logsumexp(op, ctx):
    x, out = _in(op, "X"), _out(op, "Out")
    dims = _reduce_dims(op, len(ctx.shape(x)), "axis")
    reduced = ctx.tmp("reduced")
    ctx.node("ReduceLogSumExp", [x], [reduced], axes=dims,
             keepdims=int(bool(op.attrs.get("keepdim", False))))
    _reshape_to_declared(ctx, reduced, out)


@converter("reduce_all", "reduce_any")
def _reduce_logic(op, ctx):
    x, out = _in(op, "X"), _out(op, "Out")
    dims = _reduce_dims(op, len(ctx.shape(x)))
    as_int, reduced = ctx.tmp("int"), ctx.tmp("reduced")
    ctx.node("Cast", [_as_bool(ctx, x)], [as_int], to=ctx.onnx.TensorProto.INT32)
    ctx.node("ReduceMin" if op.type == "reduce_all" else "ReduceMax", [as_int], [reduced],
             axes=dims, keepdims=int(bool(op.attrs.get("keep_dim", False))))
    as_bool = ctx.tmp("bool")
    ctx.node("Cast", [reduced], [as_bool], to=ctx.onnx.TensorProto.BOOL)
    _reshape_to_declared(ctx, as_bool, out)


@converter("bmm")
def _bmm(op, ctx):
    ctx.node("MatMul", [_in(op, "X"), _in(op, "Y")], [_out(op, "Out")])


@converter("dot")
def _dot(op, ctx):
    product = ctx.tmp("product")
    ctx.node("Mul", [_in(op, "X"), _in(op, "Y")], [product])
    ctx.node("ReduceSum", [product, _ints(ctx, [-1], "axis")], [_out(op, "Out")], keepdims=1)


@converter("dist")
def _dist(op, ctx):
    x, out = _in(op, "X"), _out(op, "Out")
    p = float(op.attrs.get("p", 2.0))
    diff, magnitude, value = ctx.tmp("diff"), ctx.tmp("abs"), ctx.tmp("value")
    ctx.node("Sub", [x, _in(op, "Y")], [diff])
    ctx.node("Abs", [diff], [magnitude])
    if p == 0:
        nonzero, counted = ctx.tmp("nonzero"), ctx.tmp("counted")
        ctx.node("Greater", [magnitude, ctx.scalar(0.0, x)], [nonzero])
        ctx.node("Cast", [nonzero], [counted], to=ctx.onnx_type(x))
        ctx.node("ReduceSum", [counted], [value], keepdims=0)
    elif p in (float("inf"), float("-inf")):
        ctx.node("ReduceMax" if p > 0 else "ReduceMin", [magnitude], [value], keepdims=0)
    else:
        powered, total = ctx.tmp("powered"), ctx.tmp("total")
        ctx.node("Pow", [magnitude, ctx.scalar(p, x)], [powered])
        ctx.node("ReduceSum", [powered], [total], keepdims=0)
        ctx.node("Pow", [total, ctx.scalar(1.0 / p, x)], [value])
    _reshape_to_declared(ctx, value, out)


@converter("cumsum")
def _cumsum(op, ctx):
    x = _in(op, "X")
    axis = int(op.attrs.get("axis", -1))
    if op.attrs.get("flatten"):
        flat = ctx.tmp("flat")
        ctx.node("Reshape", [x, _ints(ctx, [-1], "flat")], [flat])
        x, axis = flat, 0
    ctx.node("CumSum", [x, ctx.const(np.array(axis, "int64"), "axis")], [_out(op, "Out")],
             exclusive=int(bool(op.attrs.get("exclusive", False))),
             reverse=int(bool(op.attrs.get("reverse", False))))


@converter("softmax_with_cross_entropy")
def _softmax_with_cross_entropy(op, ctx):
    a = op.attrs
    logits, label = _in(op, "Logits"), _in(op, "Label")
    softmax, loss = _out(op, "Softmax"), _out(op, "Loss")
    rank = len(ctx.shape(logits))
    axis = int(a.get("axis", -1)) % rank
    if not a.get("use_softmax", True):
        raise NotConvertible("use_softmax=False (Logits already probabilities)")
    ctx.node("Softmax", [logits], [softmax], axis=axis)
    log_probs, picked = ctx.tmp("log_probs"), ctx.tmp("picked")
    ctx.node("LogSoftmax", [logits], [log_probs], axis=axis)
    if a.get("soft_label"):
        weighted = ctx.tmp("weighted")
        ctx.node("Mul", [log_probs, label], [weighted])
        ctx.node("ReduceSum", [weighted, _ints(ctx, [axis], "axis")], [picked], keepdims=1)
        ctx.node("Neg", [picked], [loss])
        return None
    index = ctx.tmp("label")
    ctx.node("Cast", [label], [index], to=ctx.onnx.TensorProto.INT64)
    ignore = int(a.get("ignore_index", -100))
    # an ignored label may be out of range: gather at 0 instead, then zero that row
    ignored, safe = ctx.tmp("ignored"), ctx.tmp("safe_label")
    zero_index = ctx.const(np.array(0, "int64"), "zero")
    ctx.node("Equal", [index, ctx.const(np.array(ignore, "int64"), "ignore")], [ignored])
    ctx.node("Where", [ignored, zero_index, index], [safe])
    ctx.node("GatherElements", [log_probs, safe], [picked], axis=axis)
    negated = ctx.tmp("negated")
    ctx.node("Neg", [picked], [negated])
    ctx.node("Where", [ignored, ctx.scalar(0.0, logits), negated], [loss])


# --- selection: arg max, sorting, top k, unique, nonzero --------------------------------------------
@converter("arg_max", "arg_min")
def _arg_max(op, ctx):
    x, out = _in(op, "X"), _out(op, "Out")
    if op.attrs.get("flatten"):
        flat = ctx.tmp("flat")
        ctx.node("Reshape", [x, _ints(ctx, [-1], "flat")], [flat])
        x, axis = flat, 0
    else:
        axis = int(op.attrs.get("axis") or 0)
    index = ctx.tmp("index")
    ctx.node("ArgMax" if op.type == "arg_max" else "ArgMin", [x], [index], axis=axis,
             keepdims=int(bool(op.attrs.get("keepdims", False))))
    if op.attrs.get("flatten"):  # a flattened arg max is the [1] Fluid declares
        _cast_reshaped(ctx, index, out)
    else:
        _cast_to(ctx, index, out)


def _cast_reshaped(ctx, value, out):
    cast = ctx.tmp("cast")
    ctx.node("Cast", [value], [cast], to=ctx.onnx_type(out))
    _reshape_to_declared(ctx, cast, out)


def _size_along(ctx, x, axis):
    """The size of ``x``'s dim ``axis`` as an int64 [1] (a constant when declared)."""
    size = ctx.shape(x)[axis]
    if size >= 0:
        return _ints(ctx, [size], "k")
    shape, k = ctx.tmp("shape"), ctx.tmp("k")
    ctx.node("Shape", [x], [shape])
    ctx.node("Gather", [shape, _ints(ctx, [axis % len(ctx.shape(x))], "axis")], [k], axis=0)
    return k


def _top_k_nodes(ctx, x, k, values, indices, axis, largest):
    """TopK in Paddle's order, where NaN is the largest value: for floats the order is
    taken over ``x`` with each NaN read as +inf (onnxruntime's TopK has placed NaN
    differently from one version to the next), and the values gathered from ``x``."""
    if ctx.dtype(x).kind != "f":
        ctx.node("TopK", [x, k], [values, indices], axis=axis, largest=int(largest), sorted=1)
        return None
    nan_at, key, ordered = ctx.tmp("nan"), ctx.tmp("key"), ctx.tmp("ordered")
    ctx.node("IsNaN", [x], [nan_at])
    ctx.node("Where", [nan_at, ctx.scalar(np.inf, x), x], [key])
    ctx.node("TopK", [key, k], [ordered, indices], axis=axis, largest=int(largest), sorted=1)
    ctx.node("GatherElements", [x, indices], [values], axis=axis)
    return None


@converter("top_k", "top_k_v2")
def _top_k(op, ctx):
    x = _in(op, "X")
    values = _out(op, "Out")
    indices = _out(op, "Indices") or ctx.tmp("indices")
    if _in(op, "K"):
        k = ctx.tmp("k")
        ctx.node("Cast", [_in(op, "K")], [k], to=ctx.onnx.TensorProto.INT64)
        shaped = ctx.tmp("k1")
        ctx.node("Reshape", [k, _ints(ctx, [1], "one")], [shaped])
        k = shaped
    else:
        k = _ints(ctx, [int(op.attrs.get("k", 1))], "k")
    axis = int(op.attrs.get("axis", -1)) if op.type == "top_k_v2" else -1
    largest = bool(op.attrs.get("largest", True)) if op.type == "top_k_v2" else True
    if ctx.dtype(x) == np.bool_:
        raise NotConvertible("a bool X (TopK takes numbers)")
    return _top_k_nodes(ctx, x, k, values, indices, axis, largest)


@converter("argsort")
def _argsort(op, ctx):
    x = _in(op, "X")
    axis = int(op.attrs.get("axis", -1))
    if ctx.dtype(x) == np.bool_:
        raise NotConvertible("a bool X (TopK takes numbers)")
    # a full TopK: the whole axis in order, ties in index order as Paddle's stable sort
    return _top_k_nodes(ctx, x, _size_along(ctx, x, axis), _out(op, "Out"),
                        _out(op, "Indices"), axis, bool(op.attrs.get("descending", False)))


@converter("unique")
def _unique(op, ctx):
    x, out, index = _in(op, "X"), _out(op, "Out"), _out(op, "Index")
    inverse = ctx.tmp("inverse")
    flat = ctx.tmp("flat")
    ctx.node("Reshape", [x, _ints(ctx, [-1], "flat")], [flat])
    values = out
    if ctx.dtype(x) not in (np.float32, np.int64):  # what onnxruntime's Unique takes
        wide, values = ctx.tmp("wide"), ctx.tmp("values")
        wide_type = np.int64 if ctx.dtype(x).kind in "iub" else np.float32
        if wide_type == np.float32 and ctx.dtype(x) == np.float64:
            raise NotConvertible("a float64 X (onnxruntime's Unique takes float32, which "
                                 "would merge values)")
        ctx.node("Cast", [flat], [wide], to=ctx.onnx.helper.np_dtype_to_tensor_dtype(
            np.dtype(wide_type)))
        flat = wide
    ctx.node("Unique", [flat], [values, "", inverse], sorted=0)  # first-appearance order
    if values != out:
        _cast_to(ctx, values, out)
    if index:
        _cast_to(ctx, inverse, index)


@converter("where_index")
def _where_index(op, ctx):
    positions = ctx.tmp("nonzero")
    ctx.node("NonZero", [_in(op, "Condition")], [positions])
    ctx.node("Transpose", [positions], [_out(op, "Out")], perm=[1, 0])


# --- gathering and scattering ---------------------------------------------------------------------
@converter("gather")
def _gather(op, ctx):
    _no_tensor_attrs(op, "Axis")
    index = _in(op, "Index")
    if len(ctx.shape(index)) == 2 and ctx.shape(index)[1] == 1:  # [N, 1] reads as [N]
        flat = ctx.tmp("index")
        ctx.node("Reshape", [index, _ints(ctx, [-1], "flat")], [flat])
        index = flat
    ctx.node("Gather", [_in(op, "X"), index], [_out(op, "Out")],
             axis=int(op.attrs.get("axis", 0)))


@converter("index_select")
def _index_select(op, ctx):
    ctx.node("Gather", [_in(op, "X"), _in(op, "Index")], [_out(op, "Out")],
             axis=int(op.attrs.get("dim", 0)))


@converter("gather_nd")
def _gather_nd(op, ctx):
    index = _in(op, "Index")
    as_int64 = ctx.tmp("index")
    ctx.node("Cast", [index], [as_int64], to=ctx.onnx.TensorProto.INT64)
    ctx.node("GatherND", [_in(op, "X"), as_int64], [_out(op, "Out")])


@converter("index_sample")
def _index_sample(op, ctx):
    index = ctx.tmp("index")
    ctx.node("Cast", [_in(op, "Index")], [index], to=ctx.onnx.TensorProto.INT64)
    ctx.node("GatherElements", [_in(op, "X"), index], [_out(op, "Out")], axis=1)


@converter("scatter")
def _scatter(op, ctx):
    x, ids, updates, out = _in(op, "X"), _in(op, "Ids"), _in(op, "Updates"), _out(op, "Out")
    rows = ctx.tmp("rows")
    ctx.node("Reshape", [ids, _ints(ctx, [-1, 1], "rows")], [rows])
    as_int64 = ctx.tmp("rows64")
    ctx.node("Cast", [rows], [as_int64], to=ctx.onnx.TensorProto.INT64)
    if op.attrs.get("overwrite", True):
        ctx.node("ScatterND", [x, as_int64, updates], [out])
        return "a row listed twice: onnxruntime keeps one of its updates, Paddle the last"
    # the listed rows are zeroed, then every update is added
    zeros, cleared = ctx.tmp("zeros"), ctx.tmp("cleared")
    ctx.node("Mul", [updates, ctx.scalar(0.0, updates)], [zeros])
    ctx.node("ScatterND", [x, as_int64, zeros], [cleared])
    ctx.node("ScatterND", [cleared, as_int64, updates], [out], reduction="add")


@converter("scatter_nd_add")
def _scatter_nd_add(op, ctx):
    index = ctx.tmp("index")
    ctx.node("Cast", [_in(op, "Index")], [index], to=ctx.onnx.TensorProto.INT64)
    ctx.node("ScatterND", [_in(op, "X"), index, _in(op, "Updates")], [_out(op, "Out")],
             reduction="add")


# --- shapes, slices, joins ------------------------------------------------------------------------
@converter("shape")
def _shape(op, ctx):
    shape = ctx.tmp("shape")
    ctx.node("Shape", [_in(op, "Input")], [shape])
    _cast_to(ctx, shape, _out(op, "Out"))


@converter("size")
def _size(op, ctx):
    size = ctx.tmp("size")
    ctx.node("Size", [_in(op, "Input")], [size])
    _cast_reshaped(ctx, size, _out(op, "Out"))


def _slice_nodes(op, ctx, steps=None):
    _no_tensor_attrs(op, "StartsTensor", "EndsTensor", "StartsTensorList", "EndsTensorList",
                     "StridesTensor", "StridesTensorList")
    x, out = _in(op, "Input"), _out(op, "Out")
    axes = [int(a) for a in op.attrs["axes"]]
    inputs = [x, _ints(ctx, op.attrs["starts"], "starts"), _ints(ctx, op.attrs["ends"], "ends"),
              _ints(ctx, axes, "axes")]
    if steps is not None:
        inputs.append(_ints(ctx, steps, "steps"))
    decrease = [int(a) for a in op.attrs.get("decrease_axis", [])]
    sliced = ctx.tmp("sliced") if decrease else out
    ctx.node("Slice", inputs, [sliced])
    if decrease:
        if len(decrease) == len(ctx.shape(x)):  # every dim dropped: Fluid keeps [1]
            _reshape_to_declared(ctx, sliced, out)
        else:
            ctx.node("Squeeze", [sliced, _ints(ctx, decrease, "axes")], [out])


@converter("slice")
def _slice(op, ctx):
    _slice_nodes(op, ctx)


@converter("strided_slice")
def _strided_slice(op, ctx):
    _slice_nodes(op, ctx, [int(s) for s in op.attrs["strides"]])


@converter("split")
def _split(op, ctx):
    _no_tensor_attrs(op, "AxisTensor", "SectionsTensorList")
    x, outs = _in(op, "X"), list(op.outputs["Out"])
    axis = int(op.attrs.get("axis", 0)) % len(ctx.shape(x))
    sections = [int(s) for s in op.attrs.get("sections", [])]
    if not sections:
        ctx.node("Split", [x], outs, axis=axis) if len(outs) > 1 else \
            ctx.node("Identity", [x], outs)
        return
    if -1 in sections:  # one section takes what the others leave
        size = ctx.shape(x)[axis]
        if size < 0:
            raise NotConvertible(f"a -1 section of dim {axis}, whose size is unknown")
        sections[sections.index(-1)] = size - sum(s for s in sections if s != -1)
    ctx.node("Split", [x, _ints(ctx, sections, "sections")], outs, axis=axis)


@converter("stack")
def _stack(op, ctx):
    xs = list(op.inputs["X"])
    axis = int(op.attrs.get("axis", 0))
    rank = len(ctx.shape(xs[0])) + 1
    axis %= rank
    expanded = []
    for x in xs:
        e = ctx.tmp("expanded")
        ctx.node("Unsqueeze", [x, _ints(ctx, [axis], "axis")], [e])
        expanded.append(e)
    ctx.node("Concat", expanded, [_out(op, "Y")], axis=axis)


@converter("unstack")
def _unstack(op, ctx):
    x, outs = _in(op, "X"), list(op.outputs["Y"])
    axis = int(op.attrs.get("axis", 0)) % len(ctx.shape(x))
    pieces = [ctx.tmp("piece") for _ in outs]
    if len(outs) > 1:
        ctx.node("Split", [x], pieces, axis=axis)
    else:
        pieces = [x]
    for piece, out in zip(pieces, outs):
        ctx.node("Squeeze", [piece, _ints(ctx, [axis], "axis")], [out])


@converter("expand")
def _expand(op, ctx):
    _no_tensor_attrs(op, "ExpandTimes", "expand_times_tensor")
    ctx.node("Tile", [_in(op, "X"), _ints(ctx, op.attrs["expand_times"], "repeats")],
             [_out(op, "Out")])


@converter("expand_as")
def _expand_as(op, ctx):
    x, target = _in(op, "X"), _in(op, "target_tensor")
    x_shape, t_shape, repeats = ctx.tmp("x_shape"), ctx.tmp("target_shape"), ctx.tmp("repeats")
    ctx.node("Shape", [x], [x_shape])
    ctx.node("Shape", [target], [t_shape])
    ctx.node("Div", [t_shape, x_shape], [repeats])
    ctx.node("Tile", [x, repeats], [_out(op, "Out")])


@converter("flip")
def _flip(op, ctx):
    x = _in(op, "X")
    rank = len(ctx.shape(x))
    # (Paddle 2's programs name the attribute axis)
    dims = sorted({int(d) % rank for d in op.attrs.get("dims") or op.attrs.get("axis") or []})
    if not dims:
        ctx.node("Identity", [x], [_out(op, "Out")])
        return
    n = len(dims)
    ctx.node("Slice", [x, _ints(ctx, [-1] * n, "starts"),
                       _ints(ctx, [-_INT64_MAX] * n, "ends"), _ints(ctx, dims, "axes"),
                       _ints(ctx, [-1] * n, "steps")], [_out(op, "Out")])


@converter("roll")
def _roll(op, ctx):
    x, out = _in(op, "X"), _out(op, "Out")
    shifts = [int(s) for s in op.attrs.get("shifts", [])]
    dims = [int(d) for d in op.attrs.get("dims") or op.attrs.get("axis") or []]
    shape = list(ctx.shape(x))
    value = x
    if not dims:  # the flattened tensor rolls, then takes its shape back
        if any(d < 0 for d in shape):
            raise NotConvertible(f"rolling the flattened X {shape}, whose size is unknown")
        flat = ctx.tmp("flat")
        ctx.node("Reshape", [x, _ints(ctx, [-1], "flat")], [flat])
        value, dims, shape = flat, [0] * len(shifts), [int(np.prod(shape))]
    for shift, dim in zip(shifts, dims):
        size = shape[dim]
        if size < 0:
            raise NotConvertible(f"rolling dim {dim}, whose size is unknown")
        shift %= size
        if shift == 0:
            continue
        tail, head, rolled = ctx.tmp("tail"), ctx.tmp("head"), ctx.tmp("rolled")
        axis = _ints(ctx, [dim], "axis")
        ctx.node("Slice", [value, _ints(ctx, [size - shift], "s"), _ints(ctx, [size], "e"), axis],
                 [tail])
        ctx.node("Slice", [value, _ints(ctx, [0], "s"), _ints(ctx, [size - shift], "e"), axis],
                 [head])
        ctx.node("Concat", [tail, head], [rolled], axis=dim)
        value = rolled
    if list(ctx.shape(x)) != shape:
        _reshape_to_declared(ctx, value, out)
    else:
        ctx.node("Identity", [value], [out])


@converter("pad")
def _pad(op, ctx):
    x = _in(op, "X")
    paddings = [int(p) for p in op.attrs["paddings"]]
    pads = paddings[0::2] + paddings[1::2]  # Paddle: (before, after) per dim; ONNX: all befores
    ctx.node("Pad", [x, _ints(ctx, pads, "pads"), ctx.scalar(op.attrs.get("pad_value", 0.0), x)],
             [_out(op, "Out")], mode="constant")


@converter("pad2d")
def _pad2d(op, ctx):
    _no_tensor_attrs(op, "Paddings")
    if op.attrs.get("data_format", "NCHW") != "NCHW":
        raise NotConvertible("NHWC layout")
    x = _in(op, "X")
    top, bottom, left, right = (int(p) for p in op.attrs["paddings"])
    mode = {"constant": "constant", "reflect": "reflect", "edge": "edge"}[
        op.attrs.get("mode", "constant")]
    inputs = [x, _ints(ctx, [0, 0, top, left, 0, 0, bottom, right], "pads")]
    if mode == "constant":
        inputs.append(ctx.scalar(op.attrs.get("pad_value", 0.0), x))
    ctx.node("Pad", inputs, [_out(op, "Out")], mode=mode)


@converter("tril_triu")
def _tril_triu(op, ctx):
    ctx.node("Trilu", [_in(op, "X"), ctx.const(np.array(int(op.attrs.get("diagonal", 0)),
                                                        "int64"), "k")],
             [_out(op, "Out")], upper=int(not op.attrs.get("lower", True)))


@converter("meshgrid")
def _meshgrid(op, ctx):
    xs, outs = list(op.inputs["X"]), list(op.outputs["Out"])
    sizes = []
    for x in xs:
        size = ctx.tmp("size")
        ctx.node("Shape", [x], [size])
        sizes.append(size)
    full = ctx.tmp("full_shape")
    ctx.node("Concat", sizes, [full], axis=0)
    n = len(xs)
    for i, (x, out) in enumerate(zip(xs, outs)):
        shaped = ctx.tmp("shaped")
        ctx.node("Reshape", [x, _ints(ctx, [1] * i + [-1] + [1] * (n - i - 1), "shape")],
                 [shaped])
        ctx.node("Expand", [shaped, full], [out])


# --- creation -----------------------------------------------------------------------------------
@converter("assign_value")
def _assign_value(op, ctx):
    out = _out(op, "Out")
    dtype = np.dtype(to_numpy_dtype(op.attrs.get("dtype", 5)))
    field = next((f for f in ("fp32_values", "int32_values", "int64_values", "bool_values",
                              "fp64_values") if op.attrs.get(f)), None)
    values = op.attrs.get(field, []) if field else []
    array = np.array(values, dtype=dtype).reshape(op.attrs.get("shape", [len(values)]))
    ctx.node("Identity", [ctx.const(array, "value")], [out])


@converter("eye")
def _eye(op, ctx):
    rows = int(op.attrs.get("num_rows", 0))
    columns = int(op.attrs.get("num_columns", -1))
    columns = rows if columns < 0 else columns
    array = np.eye(rows, columns, dtype=to_numpy_dtype(op.attrs.get("dtype", 5)))
    ctx.node("Identity", [ctx.const(array, "eye")], [_out(op, "Out")])


@converter("fill_any_like", "fill_zeros_like")
def _fill_like(op, ctx):
    x, out = _in(op, "X"), _out(op, "Out")
    value = float(op.attrs.get("value", 0.0)) if op.type == "fill_any_like" else 0.0
    shape = ctx.tmp("shape")
    ctx.node("Shape", [x], [shape])
    ctx.node("ConstantOfShape", [shape], [out], value=ctx.onnx.numpy_helper.from_array(
        np.array([value], dtype=ctx.dtype(out))))


@converter("range")
def _range(op, ctx):
    ends = [_scalar_of(ctx, _in(op, slot)) for slot in ("Start", "End", "Step")]
    ctx.node("Range", ends, [_out(op, "Out")])


@converter("linspace")
def _linspace(op, ctx):
    start, stop = _scalar_of(ctx, _in(op, "Start")), _scalar_of(ctx, _in(op, "Stop"))
    out = _out(op, "Out")
    count = ctx.tmp("num")
    ctx.node("Cast", [_scalar_of(ctx, _in(op, "Num"))], [count], to=ctx.onnx.TensorProto.INT64)
    steps, positions = ctx.tmp("steps"), ctx.tmp("positions")
    ctx.node("Range", [ctx.const(np.array(0, "int64"), "zero"), count,
                       ctx.const(np.array(1, "int64"), "one")], [steps])
    ctx.node("Cast", [steps], [positions], to=ctx.onnx_type(out))
    # step = (stop - start) / max(num - 1, 1): a single point is start itself
    gaps, width, span, step = ctx.tmp("gaps"), ctx.tmp("width"), ctx.tmp("span"), ctx.tmp("step")
    ctx.node("Sub", [count, ctx.const(np.array(1, "int64"), "one")], [gaps])
    clamped = ctx.tmp("clamped")
    ctx.node("Max", [gaps, ctx.const(np.array(1, "int64"), "one")], [clamped])
    ctx.node("Cast", [clamped], [width], to=ctx.onnx_type(out))
    ctx.node("Sub", [stop, start], [span])
    ctx.node("Div", [span, width], [step])
    scaled = ctx.tmp("scaled")
    ctx.node("Mul", [positions, step], [scaled])
    ctx.node("Add", [scaled, start], [out])


@converter("one_hot_v2")
def _one_hot_v2(op, ctx):
    _no_tensor_attrs(op, "depth_tensor")
    x, out = _in(op, "X"), _out(op, "Out")
    depth = int(op.attrs.get("depth", -1))
    # onnxruntime's OneHot takes int64 indices to float32 (among few pairs): cast around it
    hot, index = ctx.tmp("one_hot"), ctx.tmp("index")
    ctx.node("Cast", [x], [index], to=ctx.onnx.TensorProto.INT64)
    ctx.node("OneHot", [index, _ints(ctx, [depth], "depth"),
                        ctx.const(np.array([0, 1], dtype="float32"), "values")],
             [hot], axis=-1)
    _cast_to(ctx, hot, out)


UNCONVERTIBLE.update({
    op_type: "random values: ONNX's random ops draw from another generator, so no run "
             "would give the executor's numbers"
    for op_type in ("gaussian_random", "uniform_random", "truncated_gaussian_random",
                    "randint", "randperm", "sampling_id", "bernoulli", "multinomial")})
