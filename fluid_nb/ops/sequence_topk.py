"""``sequence_topk_avg_pooling``: for a batch of match matrices of different sizes (sample
i: channel_num x ROW_i x COLUMN_i values, flattened as sequence i of X), the mean of the k
largest values of every row, for each k of ``topks``."""
import numpy as np

from ..framework.registry import def_op
from ..tensor.dtypes import VarType
from ..tensor.tensor import LoDTensor, index_add
from ..tensor.transfer import to_host
from .var_conv import lod_images


def _infer(ctx):
    topks = ctx.attr("topks")
    ctx.check(bool(topks) and all(k > 0 for k in topks) and list(topks) == sorted(topks),
              "attribute 'topks'", "ascending positive ks", list(topks))
    ctx.check(ctx.attr("channel_num") > 0, "attribute 'channel_num'", "> 0",
              ctx.attr("channel_num"))
    ctx.set_output("Out", [-1, len(topks) * ctx.attr("channel_num")], ctx.input_dtype("X"),
                   lod_level=1)
    ctx.set_output("pos", [-1], VarType.INT32)


def _top_positions(values, k):
    """[..., k] positions of the k largest values of each last-axis row, largest first
    (ties: the later position first); -1 past the row's length."""
    order = np.argsort(values, axis=-1, kind="stable")[..., ::-1][..., :k]
    if order.shape[-1] < k:
        pad = np.full(order.shape[:-1] + (k - order.shape[-1],), -1, order.dtype)
        order = np.concatenate([order, pad], axis=-1)
    return order


def _pool(ctx, x, row, col):
    xp, a = ctx.xp, ctx.attrs
    topks, channels = list(a["topks"]), a["channel_num"]
    max_k = topks[-1]
    flat = to_host(x.array).reshape(-1)
    outs, positions = [], []
    for start, r, c in lod_images("sequence_topk_avg_pooling", x, row, col, channels):
        block = flat[start:start + channels * r * c].reshape(channels, r, c)
        pos = _top_positions(block, max_k)                       # [C, r, max_k]
        picked = np.where(pos >= 0, np.take_along_axis(block, np.maximum(pos, 0), -1), 0)
        running = np.cumsum(picked, axis=-1)
        means = np.stack([running[..., k - 1] / k for k in topks], axis=-1)  # [C, r, T]
        outs.append(means.transpose(1, 0, 2).reshape(r, -1))
        positions.append(pos.transpose(1, 0, 2).reshape(-1))
    dtype = x.array.dtype
    out = np.concatenate(outs) if outs else np.zeros((0, len(topks) * channels))
    pos = np.concatenate(positions) if positions else np.zeros(0)
    return (LoDTensor(xp.asarray(out.astype(dtype)), [list(row.lod()[-1])]),
            LoDTensor(xp.asarray(pos.astype(np.int32))))


def _pool_grad(ctx, x, row, col, pos, dout):
    xp, a = ctx.xp, ctx.attrs
    topks, channels = list(a["topks"]), a["channel_num"]
    max_k = topks[-1]
    positions = to_host(pos.array).reshape(-1)
    d = to_host(dout.array)
    dx = np.zeros(x.array.size, dtype=d.dtype)
    at_pos = at_row = 0
    for start, r, c in lod_images("sequence_topk_avg_pooling_grad", x, row, col, channels):
        p = positions[at_pos:at_pos + r * channels * max_k].reshape(r, channels, max_k)
        g = d[at_row:at_row + r].reshape(r, channels, len(topks))
        at_pos += p.size
        at_row += r
        # position j of a row's top list feeds every k > j, with weight 1 / k
        weights = np.zeros((r, channels, max_k), dtype=d.dtype)
        for t, k in enumerate(topks):
            weights[..., :k] += g[..., t:t + 1] / k
        rows = np.arange(r)[:, None, None]
        chans = np.arange(channels)[None, :, None]
        target = start + chans * r * c + rows * c + np.maximum(p, 0)
        index_add(np, dx, target[p >= 0], weights[p >= 0])
    return LoDTensor(xp.asarray(dx.reshape(x.array.shape)), x.lod())


def _grad_maker(g):
    return [g.op("sequence_topk_avg_pooling_grad",
                 {"X": g.input("X"), "ROW": g.input("ROW"), "COLUMN": g.input("COLUMN"),
                  "pos": g.output("pos"), "Out@GRAD": g.output_grad("Out")},
                 {"X@GRAD": g.input_grad("X")})]


_grad_maker.grad_type = "sequence_topk_avg_pooling_grad"
_ATTRS = {"topks": ("ints", []), "channel_num": ("int", 1)}


def _grad_infer(ctx):
    ctx.set_output("X@GRAD", ctx.input_shape("X"), ctx.input_dtype("X"),
                   lod_level=ctx.input_lod_level("X"))


def_op("sequence_topk_avg_pooling", inputs=["X", "ROW", "COLUMN"], outputs=["Out", "pos!"],
       attrs=_ATTRS, infer_shape=_infer, grad=_grad_maker, kernel=_pool, lod_aware=True,
       host_reads="X, with its LoD: the top-k positions are found on the host",
       doc="Sample i is X's sequence i as [channel_num, ROW_i, COLUMN_i]. Out row r of "
           "sample i: for each channel, for each k of topks, the sum of the k largest "
           "values of that row divided by k (missing values count 0); Out has ROW's LoD. "
           "pos holds each row's top positions (-1 past the row).")
def_op("sequence_topk_avg_pooling_grad", inputs=["X", "ROW", "COLUMN", "pos", "Out@GRAD"],
       outputs=["X@GRAD"], attrs=_ATTRS, infer_shape=_grad_infer, kernel=_pool_grad,
       lod_aware=True, host_reads="pos: where the gradient goes",
       doc="dX at each row's j-th top position = sum over k > j of dOut[k] / k.")
