"""Converters of the sequence ops by the padded-plus-lengths convention (see export.py): a
sequence variable is a padded ``[batch, time, ...]`` tensor with its lengths ``[batch]``
(int64), zeros past each end. Each converter reads the lengths, keeps the padding zero in
what it gives, and records the lengths of a sequence it makes.
"""
import numpy as np

from .converters import SEQUENCE_AWARE, NotConvertible, _in, _out, converter


def _require(ctx, name, slot):
    lengths = ctx.lengths(name)
    if lengths is None:
        raise NotConvertible(f"{slot} without a LoD (fed as a plain tensor)")
    return lengths


def _padded_rank(ctx, name):
    """A sequence's rank held padded: its declared rows [N, ...] become [batch, time, ...]."""
    return len(ctx.shape(name)) + 1


def _mask(ctx, padded, lengths, rank):
    """[batch, time, 1, ...] (to ``rank``): true inside each sequence."""
    mask = ctx.mask(padded, lengths)
    if rank > 2:
        wide = ctx.tmp("mask_wide")
        ctx.node("Unsqueeze", [mask, _ints(ctx, list(range(2, rank)))], [wide])
        mask = wide
    return mask


def _ints(ctx, values, hint="ints"):
    return ctx.const(np.array(values, "int64"), hint)


def _zero_padding(ctx, value, lengths, rank, out, dtype_of):
    """``out`` = ``value`` inside each sequence, zero past its end (a zero of the program
    variable ``dtype_of``'s type)."""
    mask = _mask(ctx, value, lengths, rank)
    ctx.node("Where", [mask, value, ctx.scalar(0, dtype_of)], [out])


def _time_steps(ctx, padded):
    """int64 [time] = 0, 1, ..., time - 1 and the int64 scalar time of ``padded``."""
    shape, time, steps = ctx.tmp("shape"), ctx.tmp("time"), ctx.tmp("steps")
    ctx.node("Shape", [padded], [shape])
    ctx.node("Gather", [shape, ctx.const(np.array(1, "int64"), "one")], [time], axis=0)
    ctx.node("Range", [ctx.const(np.array(0, "int64"), "zero"), time,
                       ctx.const(np.array(1, "int64"), "one")], [steps])
    return steps, time


def _gather_time(ctx, padded, index, rank, out):
    """out[b, t, ...] = padded[b, index[b, t], ...] (``index`` [batch, time'])."""
    if rank > 2:
        wide, shape, target = ctx.tmp("index_wide"), ctx.tmp("shape"), ctx.tmp("index_shape")
        ctx.node("Unsqueeze", [index, _ints(ctx, list(range(2, rank)))], [wide])
        # [batch, time', rest of padded's dims]
        index_shape, rest = ctx.tmp("index_dims"), ctx.tmp("rest")
        ctx.node("Shape", [index], [index_shape])
        ctx.node("Shape", [padded], [shape])
        ctx.node("Slice", [shape, _ints(ctx, [2]), _ints(ctx, [rank])], [rest])
        ctx.node("Concat", [index_shape, rest], [target], axis=0)
        expanded = ctx.tmp("index_expanded")
        ctx.node("Expand", [wide, target], [expanded])
        index = expanded
    ctx.node("GatherElements", [padded, index], [out], axis=1)


@converter("sequence_softmax")
def _sequence_softmax(op, ctx):
    x, out = _in(op, "X"), _out(op, "Out")
    lengths = _require(ctx, x, "X")
    rank = _padded_rank(ctx, x)
    mask = _mask(ctx, x, lengths, rank)
    kept, soft = ctx.tmp("kept"), ctx.tmp("softmax")
    ctx.node("Where", [mask, x, ctx.scalar(-np.inf, x)], [kept])
    ctx.node("Softmax", [kept], [soft], axis=1)  # over each sequence's steps
    ctx.node("Where", [mask, soft, ctx.scalar(0, x)], [out])
    ctx.sequences[out] = lengths


@converter("sequence_reverse")
def _sequence_reverse(op, ctx):
    x, out = _in(op, "X"), _out(op, "Y")
    lengths = _require(ctx, x, "X")
    rank = _padded_rank(ctx, x)
    steps, _ = _time_steps(ctx, x)
    # step t of sequence b reads step length_b - 1 - t (clamped into the padding past it)
    last, column, index, clamped = (ctx.tmp(n) for n in ("last", "column", "index", "clamped"))
    ctx.node("Sub", [lengths, ctx.const(np.array(1, "int64"), "one")], [last])
    ctx.node("Unsqueeze", [last, _ints(ctx, [1])], [column])
    ctx.node("Sub", [column, steps], [index])
    ctx.node("Max", [index, ctx.const(np.array(0, "int64"), "zero")], [clamped])
    reversed_ = ctx.tmp("reversed")
    _gather_time(ctx, x, clamped, rank, reversed_)
    _zero_padding(ctx, reversed_, lengths, rank, out, x)
    ctx.sequences[out] = lengths


@converter("sequence_conv")
def _sequence_conv(op, ctx):
    """Each step's context window (zero outside its sequence) times Filter: the padded
    input shifted once per window position, concatenated, one MatMul."""
    x, weight, out = _in(op, "X"), _in(op, "Filter"), _out(op, "Out")
    lengths = _require(ctx, x, "X")
    if op.attrs.get("paddingTrainable") or op.inputs.get("PaddingData"):
        raise NotConvertible("trainable padding (rows learned for steps outside a sequence)")
    if int(op.attrs.get("contextStride", 1)) != 1:
        raise NotConvertible(f"contextStride {op.attrs['contextStride']}")
    if len(ctx.shape(x)) != 2:
        raise NotConvertible(f"X rows of shape {list(ctx.shape(x)[1:])} (flat rows expected)")
    start, count = int(op.attrs.get("contextStart", 0)), int(op.attrs["contextLength"])
    rank = 3
    masked = ctx.tmp("masked")
    _zero_padding(ctx, x, lengths, rank, masked, x)
    before, after = max(0, -start), max(0, start + count - 1)
    padded = ctx.tmp("padded")
    ctx.node("Pad", [masked, _ints(ctx, [0, before, 0, 0, after, 0], "pads")], [padded])
    _, time = _time_steps(ctx, x)
    windows = []
    for j in range(count):
        first = start + j + before
        begin, end, window = ctx.tmp("begin"), ctx.tmp("end"), ctx.tmp("window")
        ctx.node("Identity", [_ints(ctx, [first])], [begin])
        time1 = ctx.tmp("time1")
        ctx.node("Unsqueeze", [time, _ints(ctx, [0])], [time1])
        ctx.node("Add", [time1, begin], [end])
        ctx.node("Slice", [padded, begin, end, _ints(ctx, [1])], [window])
        windows.append(window)
    context = ctx.tmp("context")
    if count > 1:
        ctx.node("Concat", windows, [context], axis=2)
    else:
        ctx.node("Identity", windows, [context])
    product = ctx.tmp("product")
    ctx.node("MatMul", [context, weight], [product])
    _zero_padding(ctx, product, lengths, rank, out, x)
    ctx.sequences[out] = lengths


@converter("sequence_expand_as", "sequence_expand")
def _sequence_expand(op, ctx):
    """Row b of X (one row per sequence, no LoD) repeated over sequence b of Y's steps."""
    x, y, out = _in(op, "X"), _in(op, "Y"), _out(op, "Out")
    lengths = _require(ctx, y, "Y")
    if ctx.lengths(x) is not None:
        raise NotConvertible("X with a LoD of its own (sequences repeated, not rows)")
    if op.type == "sequence_expand" and op.attrs.get("ref_level", -1) not in (-1, 0):
        raise NotConvertible(f"ref_level {op.attrs['ref_level']} of a one-level LoD")
    rank = len(ctx.shape(x)) + 1
    column, shape, target, steps = (ctx.tmp(n) for n in ("column", "shape", "target", "steps"))
    ctx.node("Unsqueeze", [x, _ints(ctx, [1])], [column])
    ctx.node("Shape", [column], [shape])
    _, time = _time_steps(ctx, y)
    time1 = ctx.tmp("time1")
    ctx.node("Unsqueeze", [time, _ints(ctx, [0])], [time1])
    # [batch, time, rest of X]
    batch, rest = ctx.tmp("batch"), ctx.tmp("rest")
    ctx.node("Slice", [shape, _ints(ctx, [0]), _ints(ctx, [1])], [batch])
    ctx.node("Slice", [shape, _ints(ctx, [2]), _ints(ctx, [rank])], [rest])
    ctx.node("Concat", [batch, time1, rest], [target], axis=0)
    ctx.node("Expand", [column, target], [steps])
    _zero_padding(ctx, steps, lengths, rank, out, x)
    ctx.sequences[out] = lengths


@converter("sequence_pad")
def _sequence_pad(op, ctx):
    """The padded form is the convention's own: the padding gets PadValue, and Length is
    the lengths."""
    x, pad_value = _in(op, "X"), _in(op, "PadValue")
    out, length = _out(op, "Out"), _out(op, "Length")
    lengths = _require(ctx, x, "X")
    rank = _padded_rank(ctx, x)
    if int(op.attrs.get("padded_length", -1)) != -1:
        raise NotConvertible(f"padded_length {op.attrs['padded_length']} (the convention pads "
                             "to the batch's longest sequence)")
    mask = _mask(ctx, x, lengths, rank)
    ctx.node("Where", [mask, x, pad_value], [out])
    if length:
        ctx.node("Cast", [lengths], [length], to=ctx.onnx_type(length))


@converter("sequence_unpad")
def _sequence_unpad(op, ctx):
    x, length, out = _in(op, "X"), _in(op, "Length"), _out(op, "Out")
    if ctx.lengths(x) is not None:
        raise NotConvertible("X with a LoD (a padded batch expected)")
    lengths = ctx.tmp("lengths")
    ctx.node("Cast", [length], [lengths], to=ctx.onnx.TensorProto.INT64)
    flat = ctx.tmp("lengths_flat")
    ctx.node("Reshape", [lengths, _ints(ctx, [-1])], [flat])
    _zero_padding(ctx, x, flat, len(ctx.shape(x)), out, x)
    ctx.sequences[out] = flat


@converter("sequence_mask")
def _sequence_mask(op, ctx):
    x, out = _in(op, "X"), _out(op, "Y")
    if op.inputs.get("MaxLenTensor"):
        raise NotConvertible("MaxLenTensor: a value read at run time")
    counts = ctx.tmp("counts")
    ctx.node("Cast", [x], [counts], to=ctx.onnx.TensorProto.INT64)
    maxlen = int(op.attrs.get("maxlen", -1))
    if maxlen < 0:
        limit = ctx.tmp("maxlen")
        ctx.node("ReduceMax", [counts], [limit], keepdims=0)
    else:
        limit = ctx.const(np.array(maxlen, "int64"), "maxlen")
    steps, wide, inside = ctx.tmp("steps"), ctx.tmp("wide"), ctx.tmp("inside")
    ctx.node("Range", [ctx.const(np.array(0, "int64"), "zero"), limit,
                       ctx.const(np.array(1, "int64"), "one")], [steps])
    ctx.node("Unsqueeze", [counts, _ints(ctx, [-1])], [wide])
    ctx.node("Less", [steps, wide], [inside])
    ctx.node("Cast", [inside], [out], to=ctx.onnx_type(out))


@converter("sequence_concat")
def _sequence_concat(op, ctx):
    """Sequence b of Out is sequence b of each X in turn: the Xs padded side by side, each
    step gathering from the X it falls in."""
    xs, out = list(op.inputs["X"]), _out(op, "Out")
    all_lengths = [_require(ctx, x, "X") for x in xs]
    rank = _padded_rank(ctx, xs[0])
    joined = ctx.tmp("joined")
    ctx.node("Concat", xs, [joined], axis=1)
    steps, _ = _time_steps(ctx, joined)
    index = None  # index[b, t]: where step t of the joined sequence b is in `joined`
    offset_in_joined, length_so_far = None, None
    for x, lengths in zip(xs, all_lengths):
        _, time = _time_steps(ctx, x)
        column = ctx.tmp("length")
        ctx.node("Unsqueeze", [lengths, _ints(ctx, [1])], [column])
        if index is None:
            index, offset_in_joined, length_so_far = steps, time, column
            continue
        # steps at or past the lengths so far read this X: its step t - so_far, placed
        # after the earlier Xs' paddings
        past, shifted, moved, picked = (ctx.tmp(n) for n in ("past", "shifted", "moved",
                                                             "picked"))
        ctx.node("GreaterOrEqual", [steps, length_so_far], [past])
        ctx.node("Sub", [steps, length_so_far], [shifted])
        ctx.node("Add", [shifted, offset_in_joined], [moved])
        ctx.node("Where", [past, moved, index], [picked])
        total, offset = ctx.tmp("so_far"), ctx.tmp("offset")
        ctx.node("Add", [length_so_far, column], [total])
        ctx.node("Add", [offset_in_joined, time], [offset])
        index, length_so_far, offset_in_joined = picked, total, offset
    gathered = ctx.tmp("gathered")
    # (steps past every sequence read the last padded step, then become padding)
    _gather_time(ctx, joined, _clamped(ctx, index, offset_in_joined), rank, gathered)
    lengths = ctx.tmp("lengths")
    ctx.node("Squeeze", [length_so_far, _ints(ctx, [1])], [lengths])
    _zero_padding(ctx, gathered, lengths, rank, out, xs[0])
    ctx.sequences[out] = lengths


def _clamped(ctx, index, size):
    """``index`` limited to [0, size - 1]."""
    top, clamped = ctx.tmp("top"), ctx.tmp("clamped")
    ctx.node("Sub", [size, ctx.const(np.array(1, "int64"), "one")], [top])
    ctx.node("Min", [index, top], [clamped])
    return clamped


@converter("sequence_slice")
def _sequence_slice(op, ctx):
    x, offset, length, out = _in(op, "X"), _in(op, "Offset"), _in(op, "Length"), \
        _out(op, "Out")
    _require(ctx, x, "X")
    rank = _padded_rank(ctx, x)
    starts, counts = ctx.tmp("starts"), ctx.tmp("counts")
    ctx.node("Cast", [offset], [starts], to=ctx.onnx.TensorProto.INT64)  # [batch, 1]
    ctx.node("Cast", [length], [counts], to=ctx.onnx.TensorProto.INT64)
    steps, time = _time_steps(ctx, x)
    index = ctx.tmp("index")
    ctx.node("Add", [steps, starts], [index])
    gathered = ctx.tmp("gathered")
    _gather_time(ctx, x, _clamped(ctx, index, time), rank, gathered)
    lengths = ctx.tmp("lengths")
    ctx.node("Reshape", [counts, _ints(ctx, [-1])], [lengths])
    _zero_padding(ctx, gathered, lengths, rank, out, x)
    ctx.sequences[out] = lengths


SEQUENCE_AWARE.update({"sequence_softmax", "sequence_reverse", "sequence_conv",
                       "sequence_expand_as", "sequence_expand", "sequence_pad",
                       "sequence_unpad", "sequence_concat", "sequence_slice"})
