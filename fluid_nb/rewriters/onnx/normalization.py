"""Converters of the normalisation ops and the per-channel maps: layer_norm,
instance_norm, group_norm, data_norm, prelu and affine_channel, and the vector norms norm
(L2 normalisation) and p_norm (opset 17).

Y is what inference reads; the statistics beside it (Mean, Variance, SavedMean, ...) serve
training, so an op whose statistics a later op reads is not converted.
"""
import numpy as np

from .converters import NotConvertible, _in, _out, converter
from .vision import _channel_first, _ints, _known


def _channel_view(ctx, name, rank, axis):
    """A per-channel vector [C] shaped to broadcast along ``axis`` of a rank-``rank``
    tensor."""
    if axis == rank - 1:
        return name
    return ctx.reshaped(name, [-1] + [1] * (rank - 1 - axis))


def _filled_channels(ctx, x, axis, value):
    """A [C] vector of ``value`` (C = x's dim ``axis``)."""
    c = ctx.shape(x)[axis]
    if c >= 0:
        return ctx.const(np.full(c, value, ctx.dtype(x)), "filled")
    shape, count, out = ctx.tmp("dims"), ctx.tmp("count"), ctx.tmp("constant")
    ctx.node("Shape", [x], [shape])
    ctx.node("Gather", [shape, _ints(ctx, [axis], "axis")], [count], axis=0)
    ctx.node("ConstantOfShape", [count], [out],
             value=ctx.onnx.numpy_helper.from_array(np.array([value], ctx.dtype(x))))
    return out


@converter("prelu")
def _prelu(op, ctx):
    """PRelu with Alpha shaped as the executor broadcasts it (one value, one per channel,
    or one per element of a sample)."""
    x, alpha, out = _in(op, "X"), _in(op, "Alpha"), _out(op, "Out")
    shape, mode = ctx.shape(x), op.attrs.get("mode", "all")
    rank = len(shape)
    if mode == "channel":
        axis = rank - 1 if op.attrs.get("data_format", "NCHW") == "NHWC" else 1
        slope = _channel_view(ctx, alpha, rank, axis)
    elif mode == "element":
        _known(shape[1:], "prelu's per-element Alpha")
        slope = ctx.reshaped(alpha, [1] + list(shape[1:]))
    else:
        slope = ctx.reshaped(alpha, [1])
    ctx.node("PRelu", [x, slope], [out])


def _stat_outputs_unread(op, ctx, slots):
    for slot in slots:
        if ctx.consumed(_out(op, slot)):
            raise NotConvertible(f"{slot} is read by a later op (the export gives Y only)")


@converter("layer_norm")
def _layer_norm(op, ctx):
    """LayerNormalization over the dims from begin_norm_axis on; Scale and Bias [right]
    take those dims' shape."""
    x, y = _in(op, "X"), _out(op, "Y")
    _stat_outputs_unread(op, ctx, ("Mean", "Variance"))
    shape = ctx.shape(x)
    begin = int(op.attrs.get("begin_norm_axis", 1))
    tail = list(shape[begin:])
    inputs = []
    for slot, fill in (("Scale", 1.0), ("Bias", 0.0)):
        given = _in(op, slot)
        if given is None and slot == "Bias":
            break
        if all(d >= 0 for d in tail):
            inputs.append(ctx.reshaped(given, tail) if given else
                          ctx.const(np.full(tail, fill, ctx.dtype(x)), "ones"))
            continue
        whole, trailing, shaped = ctx.tmp("dims"), ctx.tmp("trailing"), ctx.tmp(slot)
        ctx.node("Shape", [x], [whole])
        ctx.node("Slice", [whole, _ints(ctx, [begin], "start"), _ints(ctx, [len(shape)],
                                                                       "end")], [trailing])
        if given:
            ctx.node("Reshape", [given, trailing], [shaped])
        else:
            ctx.node("ConstantOfShape", [trailing], [shaped],
                     value=ctx.onnx.numpy_helper.from_array(np.array([fill], ctx.dtype(x))))
        inputs.append(shaped)
    ctx.node("LayerNormalization", [x] + inputs, [y], axis=begin,
             epsilon=float(op.attrs.get("epsilon", 1e-5)))


@converter("instance_norm")
def _instance_norm(op, ctx):
    x, y = _in(op, "X"), _out(op, "Y")
    _stat_outputs_unread(op, ctx, ("SavedMean", "SavedVariance"))
    scale = _in(op, "Scale") or _filled_channels(ctx, x, 1, 1.0)
    bias = _in(op, "Bias") or _filled_channels(ctx, x, 1, 0.0)
    ctx.node("InstanceNormalization", [x, scale, bias], [y],
             epsilon=float(op.attrs.get("epsilon", 1e-5)))


@converter("group_norm")
def _group_norm(op, ctx):
    """Each (sample, group) as one instance of InstanceNormalization over X reshaped to
    [N, groups, C/groups * spatial], then Scale and Bias per channel."""
    x, y = _in(op, "X"), _out(op, "Y")
    _stat_outputs_unread(op, ctx, ("Mean", "Variance"))
    groups = int(op.attrs.get("groups", 1))
    last = op.attrs.get("data_layout", "NCHW") == "NHWC"
    rank = len(ctx.shape(x))
    xi, yo, finish = _channel_first(ctx, x, y, last)
    grouped, normed, shape = ctx.tmp("grouped"), ctx.tmp("normed"), ctx.tmp("dims")
    ctx.node("Reshape", [xi, _ints(ctx, [0, groups, -1])], [grouped])
    ones = ctx.const(np.ones(groups, ctx.dtype(x)), "ones")
    zeros = ctx.const(np.zeros(groups, ctx.dtype(x)), "zeros")
    ctx.node("InstanceNormalization", [grouped, ones, zeros], [normed],
             epsilon=float(op.attrs.get("epsilon", 1e-5)))
    ctx.node("Shape", [xi], [shape])
    steps = [(slot, kind) for slot, kind in (("Scale", "Mul"), ("Bias", "Add")) if _in(op, slot)]
    current = yo if not steps else ctx.tmp("back")
    ctx.node("Reshape", [normed, shape], [current])
    for k, (slot, kind) in enumerate(steps):
        result = yo if k == len(steps) - 1 else ctx.tmp(slot.lower())
        ctx.node(kind, [current, _channel_view(ctx, _in(op, slot), rank, 1)], [result])
        current = result
    finish()


@converter("data_norm")
def _data_norm(op, ctx):
    """Y = (X - BatchSum / BatchSize) * sqrt(BatchSize / BatchSquareSum) (* scale_w + bias),
    per channel (axis 1, or the last with NHWC); with slot_dim (2-D X), a slot whose show
    count (its first value) is 0 gives 0. Means and Scales are the values on the way."""
    x, y = _in(op, "X"), _out(op, "Y")
    size, total, squares = (_in(op, s) for s in ("BatchSize", "BatchSum", "BatchSquareSum"))
    shifted = op.attrs.get("enable_scale_and_shift") and _in(op, "scale_w")
    slot_dim = int(op.attrs.get("slot_dim", -1))
    means = _out(op, "Means") or ctx.tmp("means")
    scales = _out(op, "Scales") or ctx.tmp("scales")
    ratio, centred = ctx.tmp("ratio"), ctx.tmp("centred")
    normed = y if not (shifted or slot_dim > 0) else ctx.tmp("normed")
    rank = len(ctx.shape(x))
    axis = rank - 1 if op.attrs.get("data_layout", "NCHW") == "NHWC" else 1

    def per_channel(name):  # a [C] vector against X's channel axis
        return name if rank == 2 else _channel_view(ctx, name, rank, axis)
    ctx.node("Div", [total, size], [means])
    ctx.node("Div", [size, squares], [ratio])
    ctx.node("Sqrt", [ratio], [scales])
    ctx.node("Sub", [x, per_channel(means)], [centred])
    ctx.node("Mul", [centred, per_channel(scales)], [normed])
    if shifted:
        scaled, result = ctx.tmp("scaled"), y if slot_dim <= 0 else ctx.tmp("shifted")
        ctx.node("Mul", [normed, per_channel(_in(op, "scale_w"))], [scaled])
        ctx.node("Add", [scaled, per_channel(_in(op, "bias"))], [result])
        normed = result
    if slot_dim > 0 and rank != 2:
        raise NotConvertible(f"data_norm's slot_dim over a {rank}-D input (slots are read "
                             "from rows [N, C])")
    if slot_dim > 0:
        c = ctx.shape(x)[1]
        _known([c], "data_norm's slots")
        slots, shows, magnitude, empty, wide, full = (ctx.tmp(n) for n in (
            "slots", "shows", "magnitude", "empty", "wide", "empty"))
        ctx.node("Reshape", [x, _ints(ctx, [-1, c // slot_dim, slot_dim])], [slots])
        ctx.node("Slice", [slots, _ints(ctx, [0], "start"), _ints(ctx, [1], "end"),
                           _ints(ctx, [2], "axes")], [shows])
        ctx.node("Abs", [shows], [magnitude])
        ctx.node("Less", [magnitude, ctx.scalar(1e-5, x)], [empty])
        ctx.node("Expand", [empty, _ints(ctx, [1, c // slot_dim, slot_dim])], [wide])
        ctx.node("Reshape", [wide, _ints(ctx, [-1, c])], [full])
        ctx.node("Where", [full, ctx.scalar(0.0, x), normed], [y])


@converter("affine_channel")
def _affine_channel(op, ctx):
    x, out = _in(op, "X"), _out(op, "Out")
    rank = len(ctx.shape(x))
    axis = rank - 1 if op.attrs.get("data_layout", "AnyLayout") == "NHWC" else 1
    scaled = ctx.tmp("scaled")
    ctx.node("Mul", [x, _channel_view(ctx, _in(op, "Scale"), rank, axis)], [scaled])
    ctx.node("Add", [scaled, _channel_view(ctx, _in(op, "Bias"), rank, axis)], [out])


def _sum_over(ctx, x, axes, out=None):
    """ReduceSum of ``x`` over ``axes`` (None: all), the dims kept."""
    out = out or ctx.tmp("sum")
    inputs = [x] if axes is None else [x, ctx.const(np.array(axes, "int64"), "axes")]
    ctx.node("ReduceSum", inputs, [out], keepdims=1)
    return out


@converter("norm")
def _norm(op, ctx):
    """Norm = sqrt(sum(X^2, axis) + epsilon) (the axis kept), Out = X / Norm."""
    x = _in(op, "X")
    rank = len(ctx.shape(x))
    axis = op.attrs.get("axis", 1) % max(rank, 1)
    square = ctx.tmp("square")
    ctx.node("Mul", [x, x], [square])
    shifted, norm = ctx.tmp("shifted"), _out(op, "Norm") or ctx.tmp("norm")
    ctx.node("Add", [_sum_over(ctx, square, [axis]),
                     ctx.const(np.array(op.attrs.get("epsilon", 1e-10), ctx.dtype(x)), "eps")],
             [shifted])
    ctx.node("Sqrt", [shifted], [norm])
    ctx.node("Div", [x, norm], [_out(op, "Out")])


@converter("p_norm")
def _p_norm(op, ctx):
    """(sum |X|^p)^(1/p) along axis (over all of X when asvector); p = inf: ReduceMax of |X|,
    -inf: ReduceMin, 0: the count of non-zeros; then the dims the kernel keeps."""
    x, out = _in(op, "X"), _out(op, "Out")
    rank = len(ctx.shape(x))
    p = float(op.attrs.get("porder", 2.0))
    asvector = bool(op.attrs.get("asvector", False))
    axes = None if asvector else [op.attrs.get("axis", -1) % max(rank, 1)]
    magnitude, kept = ctx.tmp("abs"), ctx.tmp("kept")
    ctx.node("Abs", [x], [magnitude])
    every = list(range(rank)) if axes is None else axes
    if p in (float("inf"), float("-inf")):
        ctx.node("ReduceMax" if p > 0 else "ReduceMin", [magnitude], [kept], axes=every,
                 keepdims=1)
    elif p == 0:
        nonzero, count = ctx.tmp("nonzero"), ctx.tmp("count")
        ctx.node("Equal", [magnitude, ctx.const(np.array(0, ctx.dtype(x)), "zero")], [nonzero])
        ctx.node("Not", [nonzero], [count])
        as_float = ctx.tmp("count")
        ctx.node("Cast", [count], [as_float], to=ctx.onnx_type(x))
        _sum_over(ctx, as_float, axes, kept)
    else:
        powered, total = ctx.tmp("powered"), ctx.tmp("total")
        ctx.node("Pow", [magnitude, ctx.const(np.array(p, ctx.dtype(x)), "p")], [powered])
        _sum_over(ctx, powered, axes, total)
        ctx.node("Pow", [total, ctx.const(np.array(1.0 / p, ctx.dtype(x)), "inverse")], [kept])
    keep = bool(op.attrs.get("keepdim", False))
    if keep:
        ctx.node("Identity", [kept], [out])
    elif asvector or rank == 1:  # everything reduced: the kernel gives [1]
        ctx.node("Reshape", [kept, ctx.const(np.array([1], "int64"), "shape")], [out])
    else:
        ctx.node("Squeeze", [kept, ctx.const(np.array(axes, "int64"), "axes")], [out])
