"""Sequence ops over LoD batches: ``sequence_pool``, ``sequence_softmax``,
``sequence_expand``, ``sequence_expand_as``, ``sequence_concat``, ``sequence_scatter``,
``sequence_enumerate`` (``sequence_conv`` and the
layout ops live in ``sequence_conv.py`` and ``sequence_layout.py``).

A LoD batch stacks variable-length sequences along dim 0; the last LoD level's offsets say
where each sequence starts (``[[0, 5, 8, 10, 14]]``: four sequences of 5, 3, 2, 4 rows).
All these kernels are ``lod_aware``: they read ``x.array`` and ``x._lod`` and return
LoDTensors carrying the output LoD. At compile time the row count of an output whose rows
depend on the LoD is -1. Row bookkeeping (offsets, index vectors) is host-side metadata;
the math runs on ``ctx.xp``.
"""
import numpy as np

from ..errors import InvalidArgument, expected
from ..tensor.tensor import LoDTensor, index_add, offsets_to_lengths, sequence_max
from ..tensor.dtypes import VarType
from ..framework.infer import dims_match
from .common import kept_plan
from ..framework.registry import def_op, grad_maker, grads_like


# --- helpers shared by the sequence family ---------------------------------------------------
def lod_of(op, tensor, slot="X", levels=None):
    """The tensor's LoD, checked against its rows; InvalidArgument names ``op`` when it has
    none (or, with ``levels``, not exactly that many levels)."""
    lod = tensor._lod
    if not lod:
        raise InvalidArgument(expected(op, f"input '{slot}'", "a LoDTensor with LoD",
                                       "a tensor without LoD"))
    if levels is not None and len(lod) != levels:
        raise InvalidArgument(expected(op, f"input '{slot}' LoD", f"{levels} level(s)",
                                       f"{len(lod)} levels: {lod}"))
    rows = tensor.array.shape[0]
    if lod[-1][-1] != rows:
        raise InvalidArgument(expected(op, f"input '{slot}' last LoD offset",
                                       f"{rows} (its number of rows)", lod[-1][-1]))
    return lod


def last_level(op, tensor, slot="X"):
    return lod_of(op, tensor, slot)[-1]


def segment_ids(offsets):
    """Host vector: the sequence number of every row (empty sequences own no row)."""
    lengths = offsets_to_lengths(offsets)
    return np.repeat(np.arange(len(lengths), dtype="int64"), lengths)


def gather_rows(xp, data, rows):
    """``data[rows]`` for a host index vector (an empty one gives zero rows)."""
    return xp.take(data, xp.asarray(np.asarray(rows, dtype="int64")), axis=0)


def scatter_rows(xp, shape, dtype, rows, values):
    """Zeros of ``shape`` with ``values[k]`` added at row ``rows[k]`` (repeats summed)."""
    target = xp.zeros(shape, dtype=dtype)
    if len(rows):
        index_add(xp, target, xp.asarray(np.asarray(rows, dtype="int64")), values)
    return target


def rows_unknown(shape):
    """The compile-time shape of an output whose row count comes from the LoD."""
    return (-1,) + tuple(shape[1:])


def require_lod_level(ctx, slot, least=1):
    level = ctx.input_lod_level(slot)
    ctx.check(level >= least, f"input '{slot}' lod_level", f">= {least} (a LoD input)", level)
    return level


def one_of(*choices):
    return lambda v: None if v in choices else f"one of {list(choices)}"


# --- sequence_pool ----------------------------------------------------------------------------
_POOL_TYPES = ("AVERAGE", "SUM", "SQRT", "LAST", "FIRST", "MAX")
_POOL_ATTRS = {"is_test": ("bool", False),
               "pooltype": ("string", "AVERAGE", one_of(*_POOL_TYPES)),
               "pad_value": ("float", 0.0)}


def _pool_infer(ctx):
    level = require_lod_level(ctx, "X")
    x = ctx.input_shape("X")
    out = rows_unknown(x)
    ctx.set_output("Out", out, ctx.input_dtype("X"), lod_level=level - 1)
    if ctx.has_output("MaxIndex"):
        ctx.set_output("MaxIndex", out, VarType.INT32)


def _picked_rows(ctx, offsets, pooltype):
    """LAST/FIRST pooling: (the non-empty sequences, the row of each that is picked), as
    index arrays, or (None, rows) when every sequence is non-empty. They depend on the LoD
    alone, so the op keeps the last ones it made."""
    def make():
        nonempty = [i for i in range(len(offsets) - 1) if offsets[i + 1] > offsets[i]]
        rows = [offsets[i + 1] - 1 if pooltype == "LAST" else offsets[i] for i in nonempty]
        return (None if len(nonempty) == len(offsets) - 1
                else _index_array(ctx.xp, nonempty), _index_array(ctx.xp, rows))
    return kept_plan(ctx, "picked", (offsets, pooltype), make)


def _index_array(xp, positions):
    return xp.asarray(np.asarray(positions, dtype="int64"))


def _sequence_pool(ctx, x):
    xp, pooltype = ctx.xp, ctx.attrs["pooltype"]
    lod = lod_of("sequence_pool", x)
    offsets, data = lod[-1], x.array
    shape = (len(offsets) - 1,) + data.shape[1:]
    index = xp.full(shape, -1, dtype="int32") if ctx.wants("MaxIndex") else None
    # the pooled rows are the sequences of the next level up
    out_lod = [list(level) for level in lod[:-1]]
    if pooltype in ("LAST", "FIRST"):  # one row per non-empty sequence: one gather
        nonempty, rows = _picked_rows(ctx, offsets, pooltype)
        if nonempty is None:  # no sequence is empty: the gather is all of Out
            out = xp.take(data, rows, axis=0)
        else:
            out = xp.full(shape, ctx.attrs["pad_value"], dtype=data.dtype)
            if len(rows):
                out[nonempty] = xp.take(data, rows, axis=0)
        return LoDTensor(out, out_lod), (LoDTensor(index) if index is not None else None)
    out = xp.full(shape, ctx.attrs["pad_value"], dtype=data.dtype)
    bounds = np.asarray(offsets, dtype="int64")
    lengths = np.diff(bounds)
    nonempty = np.flatnonzero(lengths)  # an empty sequence pools to pad_value (MaxIndex -1)
    if not nonempty.size:
        return LoDTensor(out, out_lod), (LoDTensor(index) if index is not None else None)
    if pooltype == "MAX":
        if xp is np and sequence_max(data, bounds, out, index):
            return LoDTensor(out, out_lod), (LoDTensor(index) if index is not None else None)
        for i in nonempty.tolist():
            seq = data[offsets[i]:offsets[i + 1]]
            out[i] = xp.max(seq, axis=0)
            if index is not None:  # the first maximal row wins, its absolute row number kept
                index[i] = (xp.argmax(seq, axis=0) + offsets[i]).astype("int32")
        return LoDTensor(out, out_lod), (LoDTensor(index) if index is not None else None)
    # each sequence's rows added in order into its own output row (index_add: one C loop)
    rows = data[offsets[0]:offsets[-1]]
    sums = index_add(xp, xp.zeros(shape, dtype=data.dtype), xp.asarray(segment_ids(offsets)),
                     rows)
    if pooltype != "SUM":
        count = np.maximum(lengths, 1).reshape((-1,) + (1,) * (data.ndim - 1))
        # AVERAGE divides in the data's type, SQRT by the float64 root of the length
        sums = sums / xp.asarray(count.astype(data.dtype) if pooltype == "AVERAGE"
                                 else np.sqrt(count.astype("float64")))
    out[xp.asarray(nonempty)] = sums[xp.asarray(nonempty)]
    return LoDTensor(out, out_lod), (LoDTensor(index) if index is not None else None)


def _pool_grad_maker(g):
    inputs = {"X": g.input("X"), "Out@GRAD": g.output_grad("Out")}
    if g.attrs.get("pooltype", "AVERAGE") == "MAX":
        inputs["MaxIndex"] = g.output("MaxIndex")
    return [g.op("sequence_pool_grad", inputs, {"X@GRAD": g.input_grad("X")})]


_pool_grad_maker.grad_type = "sequence_pool_grad"


def _sequence_pool_grad(ctx, x, max_index, dout):
    xp, pooltype = ctx.xp, ctx.attrs["pooltype"]
    offsets = last_level("sequence_pool_grad", x)
    dout = dout.array
    shape, dtype = x.array.shape, dout.dtype
    if pooltype == "MAX":
        if max_index is None:
            raise InvalidArgument(expected("sequence_pool_grad", "input 'MaxIndex'",
                                           "a tensor for pooltype MAX", "none"))
        flat = dout.reshape(dout.shape[0], -1)
        idx = max_index.array.reshape(flat.shape[0], -1).astype("int64")
        dx = xp.zeros((shape[0], flat.shape[1]), dtype=dtype)
        cols = xp.arange(flat.shape[1])
        keep = idx >= 0  # empty sequences have no row to send their gradient to
        # each (row, column) is one sequence's maximum at most: a plain assignment
        dx[idx[keep], xp.broadcast_to(cols, idx.shape)[keep]] = flat[keep]
        return LoDTensor(dx.reshape(shape), x.lod())
    if pooltype in ("LAST", "FIRST"):
        nonempty, rows = _picked_rows(ctx, offsets, pooltype)
        # each non-empty sequence has a row of its own: a plain assignment, no summing
        dx = xp.zeros(shape, dtype=dtype)
        if len(rows):
            dx[rows] = dout[:len(rows)] if nonempty is None \
                else xp.take(dout, nonempty, axis=0)
        return LoDTensor(dx, x.lod())
    lengths = offsets_to_lengths(offsets)
    seg = segment_ids(offsets)
    dx = gather_rows(xp, dout, seg)
    if pooltype != "SUM":
        n = np.asarray(lengths, dtype="float64")[seg]
        scale = n if pooltype == "AVERAGE" else np.sqrt(n)
        dx = dx / xp.asarray(scale.reshape((-1,) + (1,) * (dx.ndim - 1)).astype(dtype))
    return LoDTensor(dx.astype(dtype, copy=False), x.lod())


def_op("sequence_pool",
       inputs=["X"], outputs=["Out", "MaxIndex!"],
       attrs=_POOL_ATTRS,
       infer_shape=_pool_infer, grad=_pool_grad_maker,
       kernel=_sequence_pool, lod_aware=True,
       doc="Pools each sequence of X's last LoD level to one row: SUM, AVERAGE (sum / len), "
           "SQRT (sum / sqrt(len)), MAX (MaxIndex: the absolute row of each maximum, first on "
           "ties), LAST, FIRST. An empty sequence gives pad_value (MaxIndex -1). Out: "
           "[num_sequences, ...], its LoD X's minus the last level.")

def_op("sequence_pool_grad",
       inputs=["X", "MaxIndex?", "Out@GRAD"], outputs=["X@GRAD"],
       attrs=_POOL_ATTRS,
       infer_shape=grads_like(**{"X@GRAD": "X"}),
       kernel=_sequence_pool_grad, lod_aware=True,
       doc="Gradient of sequence_pool: each row of a sequence gets dOut of its sequence (SUM), "
           "/ len (AVERAGE), / sqrt(len) (SQRT); MAX, LAST, FIRST send it to one row. X is read "
           "only for its LoD and shape.")


# --- sequence_softmax -------------------------------------------------------------------------
_SOFTMAX_ATTRS = {"use_cudnn": ("bool", False), "data_format": ("string", "AnyLayout")}


def _softmax_infer(ctx):
    # the width of 1 is checked when the op runs, as Fluid's kernel does (a program may be
    # built over an input whose width only reshaping makes 1)
    ctx.set_output("Out", ctx.input_shape("X"), ctx.input_dtype("X"))


def _sequence_softmax(ctx, x):
    xp = ctx.xp
    shape = x.array.shape
    if not (len(shape) == 1 or (len(shape) == 2 and shape[1] == 1)):
        raise InvalidArgument(expected("sequence_softmax", "input 'X'", "shape [N] or [N, 1] "
                                       "(one value per time step)", list(shape)))
    offsets = last_level("sequence_softmax", x)
    flat = x.array.reshape(-1)
    out = xp.empty_like(flat)
    for start, end in zip(offsets, offsets[1:]):
        if start < end:
            e = xp.exp(flat[start:end] - flat[start:end].max())
            out[start:end] = e / e.sum()
    return out.reshape(x.array.shape)


def _sequence_softmax_grad(ctx, out, dout):
    xp = ctx.xp
    offsets = last_level("sequence_softmax_grad", out, "Out")
    y, dy = out.array.reshape(-1), dout.array.reshape(-1)
    dx = xp.empty_like(y)
    for start, end in zip(offsets, offsets[1:]):
        if start < end:
            ys, dys = y[start:end], dy[start:end]
            dx[start:end] = ys * (dys - (ys * dys).sum())
    return dx.reshape(out.array.shape)


def_op("sequence_softmax",
       inputs=["X"], outputs=["Out"], attrs=_SOFTMAX_ATTRS,
       infer_shape=_softmax_infer, share_lod=("X", ["Out"]),
       grad=grad_maker("sequence_softmax_grad", inputs=["X"], outputs=["Out"],
                       out_grads=["Out"], in_grads=["X"]),
       kernel=_sequence_softmax, lod_aware=True,
       doc="Out = softmax over the rows of each sequence (X's last LoD level); X is [N] or "
           "[N, 1].")

def_op("sequence_softmax_grad",
       inputs=["X", "Out", "Out@GRAD"], outputs=["X@GRAD"], attrs=_SOFTMAX_ATTRS,
       infer_shape=grads_like(**{"X@GRAD": "X"}), share_lod=("X", ["X@GRAD"]),
       kernel=lambda ctx, x, out, dout: _sequence_softmax_grad(ctx, out, dout),
       lod_aware=True,
       doc="dX = Out * (dOut - sum_seq(dOut * Out)) within each sequence. X is read only for "
           "its LoD (Out carries the same).")


# --- sequence_expand --------------------------------------------------------------------------
def _expand_infer(ctx):
    x = ctx.input_shape("X")
    ctx.check(len(x) >= 2, "input 'X'", "rank >= 2", list(x))
    # the LoD levels of X (<= 1) and Y (>= 1) are checked at run time, as Paddle does
    ctx.set_output("Out", rows_unknown(x), ctx.input_dtype("X"))


def _expand_plan(op, x, y, ref_level):
    """(row index into X for every Out row, Out LoD) of sequence_expand."""
    y_lod = lod_of(op, y, "Y")
    if not -1 <= ref_level < len(y_lod):
        raise InvalidArgument(expected(op, "attribute 'ref_level'",
                                       f"-1 or in [0, {len(y_lod)})", ref_level))
    ref = y_lod[ref_level]
    rows = x.array.shape[0]
    if len(ref) <= 1:
        return list(range(rows)), [list(level) for level in x._lod]
    if len(x._lod) > 1:
        raise InvalidArgument(expected(op, "input 'X' LoD", "at most 1 level",
                                       f"{len(x._lod)} levels"))
    x_offsets = x._lod[0] if x._lod else list(range(rows + 1))
    if len(x_offsets) != len(ref):
        raise InvalidArgument(expected(
            op, "the number of sequences of X", f"{len(ref) - 1} (the sequences of Y's LoD "
            f"level {ref_level})", len(x_offsets) - 1))
    index, out_offsets = [], [0]
    for i, repeat in enumerate(offsets_to_lengths(ref)):
        seq = list(range(x_offsets[i], x_offsets[i + 1]))
        for _ in range(repeat):
            index.extend(seq)
            out_offsets.append(out_offsets[-1] + len(seq))
    return index, ([out_offsets] if x._lod else [])


def _sequence_expand(ctx, x, y):
    index, lod = _expand_plan("sequence_expand", x, y, ctx.attrs["ref_level"])
    return LoDTensor(gather_rows(ctx.xp, x.array, index), lod)


def _sequence_expand_grad(ctx, x, y, dout):
    index, _ = _expand_plan("sequence_expand_grad", x, y, ctx.attrs["ref_level"])
    d = dout.array
    return LoDTensor(scatter_rows(ctx.xp, x.array.shape, d.dtype, index, d), x.lod())


def_op("sequence_expand",
       inputs=["X", "Y"], outputs=["Out"], attrs={"ref_level": ("int", -1)},
       infer_shape=_expand_infer, share_lod=("X", ["Out"]),
       grad=grad_maker("sequence_expand_grad", inputs=["X", "Y"], out_grads=["Out"],
                       in_grads=["X"]),
       kernel=_sequence_expand, lod_aware=True,
       doc="Repeats sequence i of X (row i when X has no LoD) as many times as sequence i of "
           "Y's LoD level ref_level (-1: the last) has elements. When X has a LoD, Out's LoD "
           "has one sequence per repeat; else Out has none.")

def_op("sequence_expand_grad",
       inputs=["X", "Y", "Out@GRAD"], outputs=["X@GRAD"], attrs={"ref_level": ("int", -1)},
       infer_shape=grads_like(**{"X@GRAD": "X"}),
       kernel=_sequence_expand_grad, lod_aware=True,
       doc="dX = the sum of dOut over the repeats of each X row. X and Y are read only for "
           "their LoD and shape.")


# --- sequence_expand_as -----------------------------------------------------------------------
def _expand_as_infer(ctx):
    x = ctx.input_shape("X")
    ctx.check(len(x) >= 2, "input 'X'", "rank >= 2", list(x))
    ctx.set_output("Out", rows_unknown(x), ctx.input_dtype("X"))


def _expand_as_index(op, x, y):
    offsets = lod_of(op, y, "Y", levels=1)[0]
    if x.array.shape[0] != len(offsets) - 1:
        raise InvalidArgument(expected(op, "the rows of X", f"{len(offsets) - 1} (the "
                                       f"sequences of Y)", x.array.shape[0]))
    return segment_ids(offsets)


def _sequence_expand_as(ctx, x, y):
    index = _expand_as_index("sequence_expand_as", x, y)
    return LoDTensor(gather_rows(ctx.xp, x.array, index), y.lod())


def _sequence_expand_as_grad(ctx, x, y, dout):
    index = _expand_as_index("sequence_expand_as_grad", x, y)
    d = dout.array
    return LoDTensor(scatter_rows(ctx.xp, x.array.shape, d.dtype, index, d), x.lod())


def_op("sequence_expand_as",
       inputs=["X", "Y"], outputs=["Out"],
       infer_shape=_expand_as_infer, share_lod=("Y", ["Out"]),
       grad=grad_maker("sequence_expand_as_grad", inputs=["X", "Y"], out_grads=["Out"],
                       in_grads=["X"]),
       kernel=_sequence_expand_as, lod_aware=True,
       doc="Row i of X repeated len(sequence i of Y) times (Y has one LoD level); Out takes "
           "Y's LoD.")

def_op("sequence_expand_as_grad",
       inputs=["X", "Y", "Out@GRAD"], outputs=["X@GRAD"],
       infer_shape=grads_like(**{"X@GRAD": "X"}),
       kernel=_sequence_expand_as_grad, lod_aware=True,
       doc="dX[i] = sum of dOut over sequence i of Y. X and Y are read only for their LoD and "
           "shape.")


# --- sequence_concat --------------------------------------------------------------------------
def _concat_infer(ctx):
    shapes = ctx.input_shapes("X")
    ctx.check(len(shapes) > 1, "input 'X'", "at least two sequences", len(shapes))
    width = None
    for shape in shapes:
        ctx.check(len(shape) >= 1, "input 'X'", "rank >= 1", list(shape))
        if all(d >= 0 for d in shape[1:]):
            w = int(np.prod(shape[1:], dtype="int64"))
            ctx.check(width is None or w == width, "input 'X' row widths", "all equal",
                      [list(s) for s in shapes])
            width = w
    rows = sum(s[0] for s in shapes) if all(s[0] >= 0 for s in shapes) else -1
    ctx.set_output("Out", (rows,) + tuple(shapes[0][1:]), ctx.input_dtype("X"),
                   lod_level=1)


def _concat_plan(op, xs):
    """For every Out row, (input number, row), and Out's offsets: sequence i of Out is
    sequence i of X[0], then of X[1], ..."""
    levels = [lod_of(op, x, f"X[{k}]")[0] for k, x in enumerate(xs)]
    count = len(levels[0]) - 1
    for k, offsets in enumerate(levels):
        if len(offsets) - 1 != count:
            raise InvalidArgument(expected(op, f"input 'X[{k}]' sequences", count,
                                           len(offsets) - 1))
    plan, out_offsets = [], [0]
    for i in range(count):
        for k, offsets in enumerate(levels):
            plan.extend((k, r) for r in range(offsets[i], offsets[i + 1]))
        out_offsets.append(len(plan))
    return plan, out_offsets


def _sequence_concat(ctx, xs):
    xp = ctx.xp
    plan, offsets = _concat_plan("sequence_concat", xs)
    stacked = xp.concatenate([x.array for x in xs], axis=0)
    starts = np.cumsum([0] + [x.array.shape[0] for x in xs])
    rows = [starts[k] + r for k, r in plan]
    return LoDTensor(gather_rows(xp, stacked, rows), [offsets])


def _sequence_concat_grad(ctx, xs, dout):
    xp = ctx.xp
    plan, _ = _concat_plan("sequence_concat_grad", xs)
    d = dout.array
    grads = []
    for k, x in enumerate(xs):
        out_rows = [j for j, (kk, _) in enumerate(plan) if kk == k]
        in_rows = [r for kk, r in plan if kk == k]
        grads.append(LoDTensor(scatter_rows(xp, x.array.shape, d.dtype, in_rows,
                                            gather_rows(xp, d, out_rows)), x.lod()))
    return grads


def_op("sequence_concat",
       inputs=["X[]"], outputs=["Out"],
       infer_shape=_concat_infer,
       grad=grad_maker("sequence_concat_grad", inputs=["X"], out_grads=["Out"],
                       in_grads=["X"]),
       kernel=_sequence_concat, lod_aware=True,
       doc="Concatenates sequence-wise: Out's sequence i is sequence i of X[0], X[1], ... in "
           "turn (LoD level 0 of each input; all have the same number of sequences).")

def _concat_grad_infer(ctx):
    if ctx.has_output("X@GRAD"):
        ctx.set_outputs("X@GRAD", ctx.input_shapes("X"), ctx.input_dtype("X"))


def_op("sequence_concat_grad",
       inputs=["X[]", "Out@GRAD"], outputs=["X@GRAD[]"],
       infer_shape=_concat_grad_infer,
       kernel=_sequence_concat_grad, lod_aware=True,
       doc="dX[k] = the rows of dOut that came from X[k]. X is read only for its LoD and "
           "shapes.")



# --- sequence_scatter -------------------------------------------------------------------------
def _scatter_infer(ctx):
    x, ids, updates = (ctx.input_shape(s) for s in ("X", "Ids", "Updates"))
    ctx.check(len(x) >= 2, "input 'X'", "rank >= 2", list(x))
    ctx.check(len(ids) == len(updates) and all(dims_match(a, b) for a, b in zip(ids, updates)),
              "input 'Updates'", f"the shape of Ids {list(ids)}", list(updates))
    require_lod_level(ctx, "Ids")
    ctx.set_output("Out", x, ctx.input_dtype("X"))


def _scatter_slots(op, x_shape, ids):
    """(flat slot in X of every Ids row, its sequence): sequence i of Ids indexes into row i
    of X, all X's dims after the first taken as one."""
    offsets = lod_of(op, ids, "Ids")[0]
    rows = x_shape[0]
    width = int(np.prod(x_shape[1:], dtype="int64"))
    if len(offsets) - 1 > rows:
        raise InvalidArgument(expected(op, "the sequences of Ids",
                                       f"at most {rows} (the rows of X)", len(offsets) - 1))
    index = ids.array.get() if hasattr(ids.array, "get") else np.asarray(ids.array)
    index = index.reshape(-1).astype("int64")
    if index.size and not 0 <= index.min() <= index.max() < width:
        raise InvalidArgument(expected(op, "input 'Ids' values", f"in [0, {width})",
                                       int(index.max() if index.max() >= width
                                           else index.min())))
    seq = segment_ids(offsets)
    return seq * width + index


def _sequence_scatter(ctx, x, ids, updates):
    xp = ctx.xp
    data = x.array
    slots = _scatter_slots("sequence_scatter", data.shape, ids)
    flat = scatter_rows(xp, (data.size,), data.dtype, slots,
                        updates.array.reshape(-1).astype(data.dtype, copy=False))
    return (data + flat.reshape(data.shape)).astype(data.dtype, copy=False)


def _sequence_scatter_grad(ctx, ids, updates, dout):
    d = dout.array
    slots = _scatter_slots("sequence_scatter_grad", d.shape, ids)
    d_updates = None
    if ctx.wants("Updates@GRAD"):
        picked = gather_rows(ctx.xp, d.reshape(-1), slots)
        # no LoD, as Paddle's sequence_scatter_grad gives dUpdates
        d_updates = LoDTensor(picked.reshape(updates.array.shape))
    d_x = d.copy() if ctx.wants("X@GRAD") else None
    return d_x, d_updates


def _scatter_grad_infer(ctx):
    if ctx.has_output("X@GRAD"):
        ctx.set_output("X@GRAD", ctx.input_shape("Out@GRAD"), ctx.input_dtype("Out@GRAD"))
    if ctx.has_output("Updates@GRAD"):
        ctx.set_output("Updates@GRAD", ctx.input_shape("Updates"), ctx.input_dtype("Updates"))


def_op("sequence_scatter",
       inputs=["X", "Ids", "Updates"], outputs=["Out"],
       infer_shape=_scatter_infer,
       grad=grad_maker("sequence_scatter_grad", inputs=["Ids", "Updates"], out_grads=["Out"],
                       in_grads=["X", "Updates"]),
       kernel=_sequence_scatter, lod_aware=True,
       doc="Out = X, then Out[i, Ids[j]] += Updates[j] for every element j of sequence i of "
           "Ids (LoD level 0; Updates has Ids' shape and LoD; X's dims after the first "
           "count as one).")

def_op("sequence_scatter_grad",
       inputs=["Ids", "Updates", "Out@GRAD"], outputs=["X@GRAD", "Updates@GRAD"],
       infer_shape=_scatter_grad_infer, traits=("optional_outputs",),
       kernel=_sequence_scatter_grad, lod_aware=True,
       doc="dX = dOut; dUpdates[j] = dOut[i, Ids[j]] for j in sequence i. Updates is read "
           "only for its shape; dUpdates has no LoD (as in Paddle).")


# --- sequence_enumerate -----------------------------------------------------------------------
def _enumerate_infer(ctx):
    x = ctx.input_shape("X")
    ctx.check(len(x) == 2 and dims_match(x[1], 1), "input 'X'", "shape [N, 1]", list(x))
    require_lod_level(ctx, "X")
    win = ctx.attr("win_size")
    ctx.check(win >= 2, "attribute 'win_size'", ">= 2", win)
    ctx.set_output("Out", (x[0], win), ctx.input_dtype("X"))


def _sequence_enumerate(ctx, x):
    xp, win, pad = ctx.xp, ctx.attrs["win_size"], ctx.attrs["pad_value"]
    offsets = last_level("sequence_enumerate", x)
    rows = x.array.shape[0]
    # position r + k of the window starting at row r, kept only inside r's own sequence
    ends = np.repeat(np.asarray(offsets[1:], "int64"), offsets_to_lengths(offsets))
    source = np.arange(rows, dtype="int64")[:, None] + np.arange(win, dtype="int64")[None, :]
    inside = source < ends[:, None]
    values = gather_rows(xp, x.array.reshape(-1), np.where(inside, source, 0).reshape(-1))
    out = xp.where(xp.asarray(inside.reshape(-1)), values,
                   xp.asarray(pad, dtype=x.array.dtype))
    return out.reshape(rows, win).astype(x.array.dtype, copy=False)


def_op("sequence_enumerate",
       inputs=["X"], outputs=["Out"],
       attrs={"win_size": ("int", None), "pad_value": ("int", 0)},
       infer_shape=_enumerate_infer, share_lod=("X", ["Out"]),
       kernel=_sequence_enumerate, lod_aware=True,
       doc="Out[r, k] = X[r + k] while r + k is in r's sequence (X's last LoD level), else "
           "pad_value: every window of win_size ids. X: int32/int64 [N, 1]; Out [N, win_size] "
           "with X's LoD. No gradient.")
