"""Sequence layout ops: ``sequence_reshape``, ``sequence_reverse``, ``sequence_mask``,
``sequence_pad`` / ``sequence_unpad``, ``sequence_slice`` and ``lod_reset``. They move rows
between LoD and padded layouts, or rewrite the LoD; the data itself is only rearranged."""
import numpy as np

from ..errors import InvalidArgument, expected
from ..tensor.tensor import LoDTensor, check_lod, lengths_to_offsets, offsets_to_lengths
from ..tensor.dtypes import VarType, convert_dtype, to_numpy_dtype
from ..framework.infer import dims_match
from ..framework.registry import def_op, grad_maker, grads_like
from .sequence import gather_rows, lod_of, require_lod_level, rows_unknown, scatter_rows


def _host_ints(tensor):
    """A small integer tensor (lengths, offsets) as a host list."""
    array = tensor.array if isinstance(tensor, LoDTensor) else tensor
    if not isinstance(array, np.ndarray):
        array = array.get()
    return [int(v) for v in np.asarray(array).reshape(-1)]


# --- sequence_reshape -------------------------------------------------------------------------
def _reshape_infer(ctx):
    x = ctx.input_shape("X")
    new_dim = ctx.attr("new_dim")
    ctx.check(len(x) == 2, "input 'X'", "rank 2", list(x))
    ctx.check(new_dim > 0, "attribute 'new_dim'", "> 0", new_dim)
    ctx.set_output("Out", (-1, new_dim), ctx.input_dtype("X"), lod_level=1)


def _sequence_reshape(ctx, x):
    offsets = lod_of("sequence_reshape", x, levels=1)[0]
    width, new_dim = x.array.shape[1], ctx.attrs["new_dim"]
    out_offsets = [0]
    for n in offsets_to_lengths(offsets):
        if n * width % new_dim:
            raise InvalidArgument(expected("sequence_reshape", "each sequence's element count",
                                           f"a multiple of new_dim {new_dim}", n * width))
        out_offsets.append(out_offsets[-1] + n * width // new_dim)
    return LoDTensor(x.array.reshape(-1, new_dim).copy(), [out_offsets])


def_op("sequence_reshape",
       inputs=["X"], outputs=["Out"], attrs={"new_dim": ("int", None)},
       infer_shape=_reshape_infer,
       grad=grad_maker("sequence_reshape_grad", inputs=["X"], out_grads=["Out"],
                       in_grads=["X"]),
       kernel=_sequence_reshape, lod_aware=True,
       doc="Each sequence of L rows of width D becomes L*D/new_dim rows of width new_dim "
           "(one LoD level); Out: [rows * D / new_dim, new_dim] with the new offsets.")

def_op("sequence_reshape_grad",
       inputs=["X", "Out@GRAD"], outputs=["X@GRAD"], attrs={"new_dim": ("int", None)},
       infer_shape=grads_like(**{"X@GRAD": "X"}), share_lod=("X", ["X@GRAD"]),
       kernel=lambda ctx, x, dout: dout.array.reshape(x.array.shape).copy(), lod_aware=True,
       doc="dX = dOut reshaped to X's shape (X read only for its shape and LoD).")


# --- sequence_reverse -------------------------------------------------------------------------
def _reverse_index(op, x):
    offsets = lod_of(op, x)[-1]
    index = np.arange(x.array.shape[0])
    for begin, end in zip(offsets, offsets[1:]):
        index[begin:end] = index[begin:end][::-1]
    return index


def _sequence_reverse(ctx, x):
    return gather_rows(ctx.xp, x.array, _reverse_index("sequence_reverse", x))


def _sequence_reverse_grad(ctx, x, dy):
    return gather_rows(ctx.xp, dy.array, _reverse_index("sequence_reverse_grad", x))


def_op("sequence_reverse",
       inputs=["X"], outputs=["Y"],
       infer_shape=lambda ctx: (ctx.check(len(ctx.input_shape("X")) >= 2, "input 'X'",
                                          "rank >= 2", list(ctx.input_shape("X"))),
                                ctx.set_output("Y", ctx.input_shape("X"),
                                               ctx.input_dtype("X"))),
       share_lod=("X", ["Y"]),
       grad=grad_maker("sequence_reverse_grad", inputs=["X"], out_grads=["Y"], in_grads=["X"]),
       kernel=_sequence_reverse, lod_aware=True,
       doc="Y = the rows of each sequence (X's last LoD level) in reverse order.")

def_op("sequence_reverse_grad",
       inputs=["X", "Y@GRAD"], outputs=["X@GRAD"],
       infer_shape=grads_like(**{"X@GRAD": "X"}), share_lod=("X", ["X@GRAD"]),
       kernel=_sequence_reverse_grad, lod_aware=True,
       doc="dX = dY reversed within each sequence of X (Paddle emits a sequence_reverse of "
           "dY; X is taken here for its LoD, which a fed dY lacks).")


# --- sequence_mask ----------------------------------------------------------------------------
def _valid_dtype(value):
    try:
        to_numpy_dtype(value)
    except (InvalidArgument, ValueError):
        return "a data type id NumPy can hold"
    return None


def _mask_infer(ctx):
    x = tuple(ctx.input_shape("X"))
    maxlen = ctx.attr("maxlen")
    last = -1 if ctx.has_input("MaxLenTensor") or maxlen <= 0 else maxlen
    ctx.set_output("Y", x + (last,), convert_dtype(ctx.attr("out_dtype")))


def _sequence_mask(ctx, x, maxlen_tensor):
    xp = ctx.xp
    maxlen = _host_ints(maxlen_tensor)[0] if maxlen_tensor is not None else ctx.attrs["maxlen"]
    if maxlen_tensor is not None and maxlen <= 0:
        raise InvalidArgument(expected("sequence_mask", "input 'MaxLenTensor'", "> 0",
                                       maxlen))
    if maxlen < 0:
        maxlen = int(x.max()) if x.size else 0
    mask = x[..., None] > xp.arange(maxlen, dtype=x.dtype)
    return mask.astype(to_numpy_dtype(ctx.attrs["out_dtype"]))


def_op("sequence_mask",
       inputs=["X", "MaxLenTensor?"], outputs=["Y"],
       attrs={"maxlen": ("int", -1), "out_dtype": ("int", int(VarType.INT64), _valid_dtype)},
       infer_shape=_mask_infer,
       kernel=_sequence_mask,
       doc="Y[..., j] = j < X[...] for j < maxlen (MaxLenTensor's value when given; max(X) "
           "when maxlen < 0), in data type out_dtype. No gradient.")


# --- sequence_pad / sequence_unpad ------------------------------------------------------------
def _pad_infer(ctx):
    require_lod_level(ctx, "X")
    x, pad = tuple(ctx.input_shape("X")), tuple(ctx.input_shape("PadValue"))
    ctx.check(len(x) >= 2, "input 'X'", "rank >= 2", list(x))
    step = x[1:]
    ctx.check(list(pad) == [1] or (len(pad) == len(step)
                                   and all(dims_match(a, b) for a, b in zip(pad, step))),
              "input 'PadValue'", f"shape [1] or the time step shape {list(step)}", list(pad))
    padded = ctx.attr("padded_length")
    # Paddle says 1 here when padded_length is -1; -1 (unknown) is what it means
    ctx.set_output("Out", (-1, padded if padded > 0 else -1) + step, ctx.input_dtype("X"),
                   lod_level=0)
    ctx.set_output("Length", (-1,), VarType.INT64, lod_level=0)


def _pad_plan(op, x, padded_length):
    """(offsets, lengths, padded length) of sequence_pad over LoD level 0."""
    offsets = lod_of(op, x)[0]
    if offsets[-1] != x.array.shape[0]:
        raise InvalidArgument(expected(op, "input 'X' LoD", "one level",
                                       f"{len(x._lod)} levels"))
    lengths = offsets_to_lengths(offsets)
    longest = max(lengths, default=0)
    if padded_length == -1:
        padded_length = longest
    if padded_length < longest:
        raise InvalidArgument(expected(op, "attribute 'padded_length'",
                                       f">= the longest sequence ({longest})", padded_length))
    return offsets, lengths, padded_length


def _padded_slots(lengths, padded_length):
    """Host vectors: for every X row, its flat slot in [sequences * padded_length]."""
    return np.concatenate([i * padded_length + np.arange(n) for i, n in enumerate(lengths)]
                          + [np.zeros(0, "int64")]).astype("int64")


def _sequence_pad(ctx, x, pad_value):
    xp = ctx.xp
    offsets, lengths, padded = _pad_plan("sequence_pad", x, ctx.attrs["padded_length"])
    data = x.array
    step = data.shape[1:]
    out = xp.empty((len(lengths) * padded,) + step, dtype=data.dtype)
    out[...] = pad_value.array.reshape(step if pad_value.array.size > 1 else ())
    slots = _padded_slots(lengths, padded)
    if slots.size:
        out[xp.asarray(slots)] = data
    return (LoDTensor(out.reshape((len(lengths), padded) + step)),
            LoDTensor(xp.asarray(np.asarray(lengths, dtype="int64"))))


def _sequence_pad_grad(ctx, x, dout):
    offsets, lengths, padded = _pad_plan("sequence_pad_grad", x, ctx.attrs["padded_length"])
    d = dout.array
    flat = d.reshape((-1,) + d.shape[2:])
    return LoDTensor(gather_rows(ctx.xp, flat, _padded_slots(lengths, padded)),
                     x.lod())


def_op("sequence_pad",
       inputs=["X", "PadValue"], outputs=["Out", "Length"],
       attrs={"padded_length": ("int", -1)},
       infer_shape=_pad_infer,
       grad=grad_maker("sequence_pad_grad", inputs=["X"], out_grads=["Out"], in_grads=["X"]),
       kernel=_sequence_pad, lod_aware=True,
       doc="Out[i, t] = row t of sequence i of X (LoD level 0), PadValue for t >= its length "
           "(padded_length: -1 means the longest sequence); Length[i] = that length (int64). "
           "Out: [sequences, padded_length, ...].")

def_op("sequence_pad_grad",
       inputs=["X", "Out@GRAD"], outputs=["X@GRAD"], attrs={"padded_length": ("int", -1)},
       infer_shape=grads_like(**{"X@GRAD": "X"}),
       kernel=_sequence_pad_grad, lod_aware=True,
       doc="dX = the unpadded rows of dOut (X read only for its LoD and shape).")


def _unpad_infer(ctx):
    x, length = ctx.input_shape("X"), ctx.input_shape("Length")
    ctx.check(len(x) >= 2, "input 'X'", "rank >= 2", list(x))
    ctx.check(len(length) == 1, "input 'Length'", "rank 1", list(length))
    ctx.check(dims_match(length[0], x[0]), "input 'Length' dim 0", f"X dim 0 ({x[0]})",
              length[0])
    out = (-1,) + (tuple(x[2:]) if len(x) > 2 else (1,))
    ctx.set_output("Out", out, ctx.input_dtype("X"), lod_level=1)


def _unpad_plan(op, x, length):
    lengths = length if isinstance(length, list) else _host_ints(length)
    padded = x.shape[1]
    bad = [n for n in lengths if not 0 <= n <= padded]
    if bad:
        raise InvalidArgument(expected(op, "input 'Length' values", f"in [0, {padded}]",
                                       bad[0]))
    return lengths, _padded_slots(lengths, padded)


def _sequence_unpad(ctx, x, length):
    data = x.array
    lengths, slots = _unpad_plan("sequence_unpad", data, length)
    flat = data.reshape((-1,) + data.shape[2:])
    rows = gather_rows(ctx.xp, flat, slots)
    if data.ndim == 2:
        rows = rows.reshape(-1, 1)
    return LoDTensor(rows, [lengths_to_offsets(lengths)])


def _sequence_unpad_grad(ctx, x, length, dout):
    data = x.array
    if length is None:  # Paddle's grad op has no Length: dOut's LoD holds the lengths
        length = offsets_to_lengths(lod_of("sequence_unpad_grad", dout, "Out@GRAD")[-1])
    lengths, slots = _unpad_plan("sequence_unpad_grad", data, length)
    d = dout.array.reshape((-1,) + data.shape[2:])
    flat_shape = (data.shape[0] * data.shape[1],) + data.shape[2:]
    return scatter_rows(ctx.xp, flat_shape, d.dtype, slots, d).reshape(data.shape)


def_op("sequence_unpad",
       inputs=["X", "Length"], outputs=["Out"],
       infer_shape=_unpad_infer,
       grad=grad_maker("sequence_unpad_grad", inputs=["X", "Length"], out_grads=["Out"],
                       in_grads=["X"]),
       kernel=_sequence_unpad, lod_aware=True,
       doc="The first Length[i] steps of each X[i] stacked into a LoD batch (one level); a "
           "rank-2 X gives [rows, 1].")

def_op("sequence_unpad_grad",
       inputs=["X", "Length?", "Out@GRAD"], outputs=["X@GRAD"],
       infer_shape=grads_like(**{"X@GRAD": "X"}),
       kernel=_sequence_unpad_grad, lod_aware=True,
       doc="dX = dOut rows put back at their padded slots, zeros elsewhere (X read only for "
           "its shape). The lengths are Length's, or without it (Paddle's grad op reads "
           "only X and Out@GRAD) those of dOut's LoD.")


# --- sequence_slice ---------------------------------------------------------------------------
def _slice_infer(ctx):
    x = ctx.input_shape("X")
    for slot in ("Offset", "Length"):
        shape = ctx.input_shape(slot)
        ctx.check(len(shape) == 2, f"input '{slot}'", "rank 2 ([sequences, 1])", list(shape))
    ctx.set_output("Out", rows_unknown(x), ctx.input_dtype("X"),
                   lod_level=max(ctx.input_lod_level("X"), 1))


def _slice_rows(op, x, offset, length):
    offsets = lod_of(op, x, levels=1)[0]
    starts, counts = _host_ints(offset), _host_ints(length)
    count = len(offsets) - 1
    for slot, values in (("Offset", starts), ("Length", counts)):
        if len(values) != count:
            raise InvalidArgument(expected(op, f"input '{slot}' rows",
                                           f"{count} (one per sequence)", len(values)))
    rows = []
    for i, (start, n) in enumerate(zip(starts, counts)):
        size = offsets[i + 1] - offsets[i]
        if start < 0 or n < 0 or start + n > size:
            raise InvalidArgument(expected(op, f"Offset + Length of sequence {i}",
                                           f"within [0, {size}]", f"{start} + {n}"))
        rows.extend(range(offsets[i] + start, offsets[i] + start + n))
    return rows, [lengths_to_offsets(counts)]


def _sequence_slice(ctx, x, offset, length):
    rows, lod = _slice_rows("sequence_slice", x, offset, length)
    return LoDTensor(gather_rows(ctx.xp, x.array, rows), lod)


def _sequence_slice_grad(ctx, x, offset, length, dout):
    rows, _ = _slice_rows("sequence_slice_grad", x, offset, length)
    d = dout.array
    return LoDTensor(scatter_rows(ctx.xp, x.array.shape, d.dtype, rows, d), x.lod())


def_op("sequence_slice",
       inputs=["X", "Offset", "Length"], outputs=["Out"],
       infer_shape=_slice_infer,
       grad=grad_maker("sequence_slice_grad", inputs=["X", "Offset", "Length"],
                       out_grads=["Out"], in_grads=["X"]),
       kernel=_sequence_slice, lod_aware=True,
       doc="Out's sequence i = rows [Offset[i], Offset[i] + Length[i]) of sequence i of X "
           "(one LoD level; Offset and Length are [sequences, 1] int64).")

def_op("sequence_slice_grad",
       inputs=["X", "Offset", "Length", "Out@GRAD"], outputs=["X@GRAD"],
       infer_shape=grads_like(**{"X@GRAD": "X"}),
       kernel=_sequence_slice_grad, lod_aware=True,
       doc="dX = dOut rows put back where they were sliced from, zeros elsewhere.")


# --- lod_reset --------------------------------------------------------------------------------
_LOD_RESET_ATTRS = {"target_lod": ("ints", []), "append": ("bool", False)}


def _lod_reset_infer(ctx):
    if not ctx.has_input("Y"):
        ctx.check(len(ctx.attr("target_lod")) > 0, "attribute 'target_lod'",
                  "a non-empty level when Input(Y) is not given", ctx.attr("target_lod"))
    if ctx.has_input("Y"):
        level = max(ctx.input_lod_level("Y"), 1)
    elif ctx.attr("append"):
        level = max(ctx.input_lod_level("X"), 1) + 1
    else:
        level = 1
    ctx.set_output("Out", ctx.input_shape("X"), ctx.input_dtype("X"), lod_level=level)


def _lod_reset(ctx, x, y):
    if y is not None and y._lod:
        return LoDTensor(x.array.copy(), y.lod())
    level = _host_ints(y) if y is not None else list(ctx.attrs["target_lod"])
    rows = x.array.shape[0]
    if len(level) < 2 or level[0] != 0 or level[-1] != rows or any(
            b < a for a, b in zip(level, level[1:])):
        raise InvalidArgument(expected("lod_reset", "the target LoD level",
                                       f"non-decreasing offsets from 0 to {rows} (X's rows)",
                                       level))
    lod = x.lod() + [level] if ctx.attrs["append"] else [level]
    check_lod(lod, rows, "lod_reset")
    return LoDTensor(x.array.copy(), lod)


def_op("lod_reset",
       inputs=["X", "Y?"], outputs=["Out"], attrs=_LOD_RESET_ATTRS,
       infer_shape=_lod_reset_infer,
       grad=grad_maker("lod_reset_grad", inputs=["X"], out_grads=["Out"], in_grads=["X"]),
       kernel=_lod_reset, lod_aware=True,
       doc="Out = X with a new LoD: Y's LoD when Y has one, else one level of offsets from Y's "
           "data (int32) or from target_lod; with append the level is added below X's LoD.")

def_op("lod_reset_grad",
       inputs=["X", "Out@GRAD"], outputs=["X@GRAD"], attrs=_LOD_RESET_ATTRS,
       infer_shape=grads_like(**{"X@GRAD": "X"}), share_lod=("X", ["X@GRAD"]),
       kernel=lambda ctx, x, dout: dout.array.copy(), lod_aware=True,
       doc="dX = dOut with X's LoD.")
