"""Fused sequence pooling for inference programs: ``fusion_seqpool_concat`` (each input's
sequences pooled, the pools concatenated) and ``fusion_seqpool_cvm_concat`` (the same with
the CVM transform of click-through features applied to each pool first). No gradient."""
import numpy as np

from ..errors import InvalidArgument, expected
from ..framework.registry import def_op, no_gradient
from ..tensor.tensor import LoDTensor

_POOLS = ("SUM", "AVERAGE", "SQRT")


def _pool(xp, tensor, pooltype, where):
    """[sequences, width]: each sequence of ``tensor`` (last LoD level) pooled; an empty
    sequence pools to 0."""
    lod = tensor.lod()
    if not lod:
        raise InvalidArgument(expected(where, "input 'X'", "LoD tensors (sequences)",
                                       "a tensor without LoD"))
    x = tensor.array
    offsets = np.asarray(lod[-1], dtype=np.int64)
    starts, ends = xp.asarray(offsets[:-1]), xp.asarray(offsets[1:])
    running = xp.concatenate([xp.zeros((1, x.shape[1]), x.dtype), xp.cumsum(x, axis=0)])
    sums = running[ends] - running[starts]
    lengths = np.diff(offsets).astype(x.dtype)[:, None]
    if pooltype == "AVERAGE":
        return sums / xp.asarray(np.maximum(lengths, 1))
    if pooltype == "SQRT":
        return sums / xp.asarray(np.sqrt(np.maximum(lengths, 1)))
    return sums


def _infer(cvm):
    def infer(ctx):
        shapes = ctx.input_shapes("X")
        ctx.check(ctx.attr("axis") == 1, "attribute 'axis'", "1", ctx.attr("axis"))
        for shape in shapes:
            ctx.check(len(shape) == 2, "input 'X'", "[T, width] LoD tensors", list(shape))
        drop = 2 if cvm and not ctx.attr("use_cvm") else 0
        widths = [shape[1] for shape in shapes]
        width = -1 if any(w < 0 for w in widths) else sum(w - drop for w in widths)
        ctx.set_output("Out", [-1, width], ctx.input_dtype("X"), lod_level=0)
    return infer


def _concat_pools(xp, pools, where):
    if len({p.shape[0] for p in pools}) > 1:
        raise InvalidArgument(expected(where, "input 'X'", "as many sequences in each input",
                                       [p.shape[0] for p in pools]))
    return LoDTensor(xp.concatenate(pools, axis=1))


def _seqpool_concat(ctx, xs):
    xp = ctx.xp
    pools = [_pool(xp, x, ctx.attrs["pooltype"], "fusion_seqpool_concat") for x in xs]
    return _concat_pools(xp, pools, "fusion_seqpool_concat")


def _cvm(xp, pooled, use_cvm):
    """show/click columns: [log(show + 1), log(click + 1) - log(show + 1)] kept in front,
    or dropped (use_cvm false)."""
    if not use_cvm:
        return pooled[:, 2:]
    show = xp.log(pooled[:, :1] + 1)
    click = xp.log(pooled[:, 1:2] + 1) - show
    return xp.concatenate([show, click, pooled[:, 2:]], axis=1)


def _seqpool_cvm_concat(ctx, xs, cvm):
    xp, attrs = ctx.xp, ctx.attrs
    pools = [_cvm(xp, _pool(xp, x, attrs["pooltype"], "fusion_seqpool_cvm_concat"),
                  attrs["use_cvm"]) for x in xs]
    return _concat_pools(xp, pools, "fusion_seqpool_cvm_concat")


_ATTRS = {"pooltype": ("string", "SUM",
                       lambda v: None if v in _POOLS else f"one of {list(_POOLS)}"),
          "axis": ("int", 1)}

def_op("fusion_seqpool_concat", inputs=["X[]"], outputs=["Out"], attrs=_ATTRS,
       infer_shape=_infer(False), grad=no_gradient, kernel=_seqpool_concat, lod_aware=True,
       doc="Out = concat(sequence_pool(X_1), sequence_pool(X_2), ...) along dim 1, each "
           "pool SUM, AVERAGE or SQRT (sum / sqrt(length)) per sequence; an empty sequence "
           "gives 0.")
def_op("fusion_seqpool_cvm_concat", inputs=["X[]", "CVM"], outputs=["Out"],
       attrs={**_ATTRS, "use_cvm": ("bool", True)},
       infer_shape=_infer(True), grad=no_gradient, kernel=_seqpool_cvm_concat,
       lod_aware=True,
       doc="As fusion_seqpool_concat, each pool first put through CVM: with use_cvm, "
           "columns 0, 1 become log(p0 + 1), log(p1 + 1) - log(p0 + 1); without, they are "
           "dropped. The CVM input is not read.")
