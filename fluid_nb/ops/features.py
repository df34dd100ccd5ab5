"""Feature ops of click-through-rate models: hash, cvm, filter_by_instag."""
import numpy as np

from ..errors import InvalidArgument, expected
from ..tensor.tensor import LoDTensor
from ..tensor.transfer import host_list, host_scalar, to_host
from ..tensor.dtypes import VarType
from ..framework.registry import def_op, grad_maker, grads_like, no_gradient

_MASK = (1 << 64) - 1
_P1, _P2, _P3 = 11400714785074694791, 14029467366897019727, 1609587929392839161
_P4, _P5 = 9650029242287828579, 2870177450012600261


def _rotl(value, bits):
    return ((value << bits) | (value >> (64 - bits))) & _MASK


def _round(acc, lane):
    return _rotl((acc + lane * _P2) & _MASK, 31) * _P1 & _MASK


def _merge(acc, value):
    return ((acc ^ _round(0, value)) * _P1 + _P4) & _MASK


def xxh64(data, seed=0):
    """The 64-bit xxHash (XXH64) of ``data`` (bytes) with ``seed``, as an int in [0, 2**64)."""
    n, at = len(data), 0
    word = int.from_bytes
    if n >= 32:
        lanes = [(seed + _P1 + _P2) & _MASK, (seed + _P2) & _MASK, seed & _MASK,
                 (seed - _P1) & _MASK]
        while at + 32 <= n:
            for k in range(4):
                lanes[k] = _round(lanes[k], word(data[at + 8 * k:at + 8 * k + 8], "little"))
            at += 32
        h = (_rotl(lanes[0], 1) + _rotl(lanes[1], 7) + _rotl(lanes[2], 12)
             + _rotl(lanes[3], 18)) & _MASK
        for lane in lanes:
            h = _merge(h, lane)
    else:
        h = (seed + _P5) & _MASK
    h = (h + n) & _MASK
    while at + 8 <= n:
        h ^= _round(0, word(data[at:at + 8], "little"))
        h = (_rotl(h, 27) * _P1 + _P4) & _MASK
        at += 8
    if at + 4 <= n:
        h ^= word(data[at:at + 4], "little") * _P1 & _MASK
        h = (_rotl(h, 23) * _P2 + _P3) & _MASK
        at += 4
    while at < n:
        h ^= data[at] * _P5 & _MASK
        h = _rotl(h, 11) * _P1 & _MASK
        at += 1
    h ^= h >> 33
    h = h * _P2 & _MASK
    h ^= h >> 29
    h = h * _P3 & _MASK
    return h ^ (h >> 32)


# --- hash ------------------------------------------------------------------------------------
def _hash_infer(ctx):
    shape = list(ctx.input_shape("X"))
    ctx.check(len(shape) >= 2, "input 'X'", "rank >= 2 (rows of ids)", shape)
    ctx.check(ctx.input_dtype("X") in (VarType.INT32, VarType.INT64), "input 'X' dtype",
              "int32 or int64", ctx.input_dtype("X").name)
    ctx.check(ctx.attr("mod_by") > 0, "attribute 'mod_by'", "> 0", ctx.attr("mod_by"))
    ctx.set_output("Out", shape[:-1] + [ctx.attr("num_hash"), 1], ctx.input_dtype("X"))


def _hash(ctx, x):
    array = np.ascontiguousarray(to_host(x.array))  # XXH64 runs on the host
    num_hash, mod_by = ctx.attrs["num_hash"], ctx.attrs["mod_by"]
    rows = array.reshape(-1, array.shape[-1]) if array.size else array.reshape(0, 1)
    out = np.array([[xxh64(row.tobytes(), seed) % mod_by for seed in range(num_hash)]
                    for row in rows], dtype=array.dtype)
    out = out.reshape(array.shape[:-1] + (num_hash, 1))
    return LoDTensor(ctx.xp.asarray(out), x._lod)


def_op("hash", inputs=["X"], outputs=["Out"],
       attrs={"num_hash": ("int", 1), "mod_by": ("long", 100000)},
       infer_shape=_hash_infer, share_lod=("X", ["Out"]), grad=no_gradient,
       kernel=_hash, lod_aware=True, host_reads="X: XXH64 of each row runs on the host",
       doc="Out[..., k, 0] = XXH64(bytes of the row X[..., :], seed=k) % mod_by for k < "
           "num_hash, the row's bytes being its ids in X's dtype, little-endian (Paddle "
           "hashes the rows of a 2-D X the same way). Out: X.shape[:-1] + [num_hash, 1], "
           "of X's dtype.")


# --- cvm -------------------------------------------------------------------------------------
def _cvm_infer(ctx):
    x, cvm = ctx.input_shape("X"), ctx.input_shape("CVM")
    ctx.check(len(x) == 2, "input 'X'", "a 2-D tensor [N, D]", list(x))
    ctx.check(len(cvm) == 2 and cvm[1] in (2, -1), "input 'CVM'", "a tensor [N, 2]",
              list(cvm))
    width = x[1] if ctx.attr("use_cvm") or x[1] < 0 else x[1] - 2
    ctx.set_output("Y", [x[0], width], ctx.input_dtype("X"))


def _cvm(ctx, x, cvm):
    array = x.array
    if array.ndim != 2 or array.shape[1] < 2:
        raise InvalidArgument(expected("cvm", "input 'X'", "a 2-D tensor [N, D >= 2]",
                                       list(array.shape)))
    if not ctx.attrs["use_cvm"]:
        return LoDTensor(ctx.xp.ascontiguousarray(array[:, 2:]), x._lod)
    xp = ctx.xp
    show = xp.log(array[:, :1] + 1)
    click = xp.log(array[:, 1:2] + 1) - show
    return LoDTensor(xp.concatenate([show, click, array[:, 2:]], axis=1), x._lod)


def _cvm_grad(ctx, x, cvm, dy):
    """The first two columns' gradients are the CVM rows (one per sequence when X has LoD),
    not derivatives: the show and click counts are fed back as Paddle does."""
    xp = ctx.xp
    rows = x.array.shape[0]
    values = cvm.array
    if x._lod:
        offsets = x._lod[0]
        values = xp.repeat(values, [b - a for a, b in zip(offsets, offsets[1:])], axis=0)
    if values.shape[0] != rows:
        raise InvalidArgument(expected("cvm_grad", "input 'CVM'", f"{rows} rows (one per row "
                                       "of X, or per sequence of X's LoD)",
                                       list(cvm.array.shape)))
    grad = dy.array[:, 2:] if ctx.attrs["use_cvm"] else dy.array
    dx = xp.concatenate([values[:, :2].astype(dy.array.dtype), grad], axis=1)
    return LoDTensor(dx, x._lod)


def_op("cvm", inputs=["X", "CVM"], outputs=["Y"], attrs={"use_cvm": ("bool", True)},
       infer_shape=_cvm_infer, share_lod=("X", ["Y"]),
       grad=grad_maker("cvm_grad", inputs=["X", "CVM"], out_grads=["Y"], in_grads=["X"]),
       kernel=_cvm, lod_aware=True,
       doc="X's first two columns are show and click counts. use_cvm: Y = [log(show + 1), "
           "log(click + 1) - log(show + 1), X[:, 2:]]; otherwise Y = X[:, 2:].")
def_op("cvm_grad", inputs=["X", "CVM", "Y@GRAD"], outputs=["X@GRAD"],
       attrs={"use_cvm": ("bool", True)}, infer_shape=grads_like(**{"X@GRAD": "X"}),
       share_lod=("X", ["X@GRAD"]), kernel=_cvm_grad, lod_aware=True,
       doc="X@GRAD = [CVM (the row's sequence's show and click), the Y@GRAD of X[:, 2:]]: "
           "the first two columns carry the counts, not derivatives.")


# --- filter_by_instag ------------------------------------------------------------------------
def _instag_infer(ctx):
    ins = ctx.input_shape("Ins")
    # Fluid reads dims [N, D, ...] as rows of D values (a trailing 1 from layers.data)
    ctx.check(len(ins) >= 2 and all(d == 1 for d in ins[2:]), "input 'Ins'",
              "a tensor [N, D] (or [N, D, 1, ...])", list(ins))
    ctx.set_output("Out", [-1, ins[1]], ctx.input_dtype("Ins"), lod_level=1)
    ctx.set_output("LossWeight", [-1, 1], VarType.FP32, lod_level=1)
    ctx.set_output("IndexMap", [-1, 3], VarType.INT64, lod_level=1)


def _instance_offsets(ins, is_lod):
    if is_lod:
        if not ins._lod:
            raise InvalidArgument(expected("filter_by_instag", "input 'Ins'",
                                           "a LoD when is_lod is True", "no LoD"))
        return list(ins._lod[0])
    return list(range(ins.array.shape[0] + 1))


def _filter_by_instag(ctx, ins, ins_tag, filter_tag):
    xp = ctx.xp
    # the tags decide which rows are kept (the output's size): read on the host, together
    wanted = {int(t) for t in host_list(filter_tag.array)}
    tags = host_list(ins_tag.array)
    if not ins_tag._lod:
        raise InvalidArgument(expected("filter_by_instag", "input 'Ins_tag'",
                                       "a LoD (the tags of each instance)", "no LoD"))
    tag_offsets = ins_tag._lod[0]
    offsets = _instance_offsets(ins, ctx.attrs["is_lod"])
    kept = [i for i in range(len(tag_offsets) - 1)
            if any(t in wanted for t in tags[tag_offsets[i]:tag_offsets[i + 1]])]
    array = ins.array.reshape(ins.array.shape[:2])  # trailing 1s dropped: rows of D values
    if not kept:  # one row of out_val_if_empty, weight 0
        out = xp.full((1, array.shape[1]), ctx.attrs["out_val_if_empty"], dtype=array.dtype)
        return (LoDTensor(out, [[0, 1]]),
                LoDTensor(xp.zeros((1, 1), "float32"), [[0, 1]]),
                LoDTensor(xp.asarray([[0, 1, 1]], dtype="int64"), [[0, 1]]))
    out_offsets, index_map, rows = [0], [], []
    for i in kept:
        start, length = offsets[i], offsets[i + 1] - offsets[i]
        index_map.append([out_offsets[-1], start, length])
        out_offsets.append(out_offsets[-1] + length)
        rows.extend(range(start, start + length))
    k = len(kept)
    out = array[xp.asarray(rows, dtype="int64")] if rows else array[:0]
    map_lod = [list(range(k + 1))]
    return (LoDTensor(xp.ascontiguousarray(out), [out_offsets]),
            LoDTensor(xp.ones((k, 1), "float32"), map_lod),
            LoDTensor(xp.asarray(index_map, dtype="int64"), map_lod))


def _filter_by_instag_grad(ctx, index_map, loss_weight, ins, dout):
    xp = ctx.xp
    dx = xp.zeros(ins.array.shape[:2], dtype=dout.array.dtype)
    weights = loss_weight.array.reshape(-1)
    if weights.size == 1 and host_scalar(weights) == 0:
        return LoDTensor(dx.reshape(ins.array.shape), ins._lod)  # nothing was kept
    rows = dout.array.reshape(dout.array.shape[0], -1)
    for out_at, in_at, length in to_host(index_map.array).reshape(-1, 3).tolist():
        dx[in_at:in_at + length] = rows[out_at:out_at + length]
    return LoDTensor(dx.reshape(ins.array.shape), ins._lod)


_INSTAG_ATTRS = {"is_lod": ("bool", False), "out_val_if_empty": ("long", 0)}

def_op("filter_by_instag", inputs=["Ins", "Ins_tag", "Filter_tag"],
       outputs=["Out", "LossWeight", "IndexMap"], attrs=_INSTAG_ATTRS,
       infer_shape=_instag_infer,
       grad=grad_maker("filter_by_instag_grad", inputs=["Ins"],
                       outputs=["IndexMap", "LossWeight"], out_grads=["Out"], in_grads=["Ins"]),
       kernel=_filter_by_instag, lod_aware=True,
       host_reads="Ins_tag, Filter_tag: the tags decide which instances are kept",
       doc="Keeps the instances of Ins (its rows, or its sequences when is_lod) having a tag "
           "(Ins_tag, one LoD sequence of int64 tags per instance) in Filter_tag. Out: the kept "
           "rows, one LoD sequence per instance; IndexMap[k] = [row in Out, row in Ins, "
           "rows]; LossWeight = 1 per kept instance. None kept: one row of out_val_if_empty "
           "with LossWeight 0.")
def_op("filter_by_instag_grad", inputs=["IndexMap", "LossWeight", "Ins", "Out@GRAD"],
       outputs=["Ins@GRAD"], attrs=_INSTAG_ATTRS, infer_shape=grads_like(**{"Ins@GRAD": "Ins"}),
       kernel=_filter_by_instag_grad, lod_aware=True,
       host_reads="IndexMap, LossWeight: where each kept instance's rows go back",
       doc="Ins@GRAD = zeros like Ins with each kept instance's Out@GRAD rows put back.")
