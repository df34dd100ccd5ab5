"""``rank_attention``: each instance attends to up to K = MaxRank related instances through
parameter blocks chosen by the ranks of the pair.

RankOffset [N, 2K + 1] (int32) holds, per instance i, its own rank r_i and K pairs
(r_ik, index_ik); a rank below 1 marks a missing entry. With D the width of X and C that of
RankParam [D K K, C]:

    InputHelp[i] = concat_k(X[index_ik])                  ([N, K D]; 0 where missing)
    P_i          = stack_k(RankParam[((r_i - 1) K + r_ik - 1) D : ... + D])   ([K D, C])
    Out[i]       = InputHelp[i] @ P_i                     ([N, C])
    InsRank[i]   = r_i

The gradient flows to RankParam (Fluid trains the parameter; X gets none).
"""
import numpy as np

from ..errors import InvalidArgument, expected
from ..framework.registry import def_op, grad_maker
from ..tensor.transfer import to_host
from ..tensor.tensor import index_add


def _infer(ctx):
    x, offset, param = (list(ctx.input_shape(s)) for s in ("X", "RankOffset", "RankParam"))
    k = ctx.attr("MaxRank")
    ctx.check(len(x) == 2, "input 'X'", "a 2-D tensor [N, D]", x)
    ctx.check(len(offset) == 2, "input 'RankOffset'", "a 2-D tensor [N, 2 MaxRank + 1]",
              offset)
    ctx.check(offset[1] < 0 or offset[1] == 2 * k + 1, "input 'RankOffset'",
              f"{2 * k + 1} columns (2 MaxRank + 1)", offset)
    ctx.check(len(param) == 2, "input 'RankParam'", "a 2-D tensor [D MaxRank^2, C]", param)
    if x[1] >= 0 and param[0] >= 0:
        ctx.check(param[0] == x[1] * k * k, "input 'RankParam'",
                  f"{x[1] * k * k} rows (X width x MaxRank^2)", param)
    dtype = ctx.input_dtype("X")
    ctx.set_output("Out", [x[0], param[1]], dtype)
    if ctx.has_output("InputHelp"):
        ctx.set_output("InputHelp", [x[0], -1 if x[1] < 0 else k * x[1]], dtype)
    if ctx.has_output("InsRank"):
        ctx.set_output("InsRank", [x[0], 1], dtype)


def _layout(op, x, offset, k):
    """Host arrays from RankOffset: ``help_rows`` [N, K] (the row of X each slot reads),
    ``param_rows`` [N, K D] (the RankParam row of each InputHelp column) and ``mask``
    [N, K D] (0 where the slot's entry is missing)."""
    n, width = x.shape
    offset = to_host(offset).astype("int64")
    if offset.shape != (n, 2 * k + 1):
        raise InvalidArgument(expected(op, "input 'RankOffset'",
                                       f"shape [{n}, {2 * k + 1}] (X rows, 2 MaxRank + 1)",
                                       list(offset.shape)))
    own, other, index = offset[:, :1] - 1, offset[:, 1::2] - 1, offset[:, 2::2]
    valid = (own >= 0) & (other >= 0)
    if ((own >= k) | (other >= k))[valid].any():
        raise InvalidArgument(expected(op, "RankOffset ranks", f"in [1, {k}] (MaxRank)",
                                       offset[:, :1].tolist()))
    if ((index < 0) | (index >= n))[valid].any():
        raise InvalidArgument(expected(op, "RankOffset indices", f"rows of X in [0, {n})",
                                       index[valid].tolist()))
    first = (own * k + other) * width
    param_rows = (first[:, :, None] + np.arange(width)).reshape(n, k * width)
    mask = valid.repeat(width, axis=1)
    return np.where(valid, index, 0), np.where(mask, param_rows, 0), mask


def _input_help(xp, x, help_rows, mask):
    n, width = x.shape
    rows = x[xp.asarray(help_rows)].reshape(n, -1)
    return rows * xp.asarray(mask).astype(x.dtype)


def _rank_attention(ctx, x, offset, param):
    xp = ctx.xp
    help_rows, param_rows, mask = _layout("rank_attention", x, offset, ctx.attrs["MaxRank"])
    help_ = _input_help(xp, x, help_rows, mask)
    blocks = param[xp.asarray(param_rows)]  # [N, K D, C]; masked through InputHelp's zeros
    out = xp.einsum("nj,njc->nc", help_, blocks)
    ins_rank = xp.asarray(to_host(offset)[:, :1]).astype(x.dtype)
    return out, help_, ins_rank


def _rank_attention_grad(ctx, x, offset, param, dout):
    xp = ctx.xp
    help_rows, param_rows, mask = _layout("rank_attention_grad", x, offset,
                                          ctx.attrs["MaxRank"])
    help_ = _input_help(xp, x, help_rows, mask)
    # each block row gets help^T dOut; a block shared by several instances adds them up
    per_row = (help_[:, :, None] * dout[:, None, :]).reshape(-1, dout.shape[1])
    keep = mask.reshape(-1)
    dparam = xp.zeros_like(param)
    return index_add(xp, dparam, xp.asarray(param_rows.reshape(-1)[keep]),
                      per_row[xp.asarray(keep)])


def_op("rank_attention", inputs=["X", "RankOffset", "RankParam"],
       outputs=["Out", "InputHelp?", "InsRank?"],
       attrs={"MaxRank": ("int", 3), "MaxSize": ("int", 0)}, infer_shape=_infer,
       grad=grad_maker("rank_attention_grad", inputs=["X", "RankOffset", "RankParam"],
                       outputs=["InsRank"], out_grads=["Out"], in_grads=["RankParam"]),
       kernel=_rank_attention,
       host_reads="RankOffset: the ranks choose each instance's rows and parameter blocks",
       doc="Out[i] = concat_k(X[index_ik]) @ stack_k(RankParam block of (r_i, r_ik)); "
           "InputHelp the concatenated rows, InsRank r_i (see the module docstring).")
def_op("rank_attention_grad", inputs=["X", "RankOffset", "RankParam", "InsRank", "Out@GRAD"],
       outputs=["RankParam@GRAD"], attrs={"MaxRank": ("int", 3), "MaxSize": ("int", 0)},
       infer_shape=lambda ctx: ctx.set_output("RankParam@GRAD", ctx.input_shape("RankParam"),
                                              ctx.input_dtype("RankParam")),
       kernel=lambda ctx, x, offset, param, ins_rank, dout:
           _rank_attention_grad(ctx, x, offset, param, dout),
       host_reads="RankOffset: the ranks choose the parameter blocks",
       doc="dRankParam[block of (r_i, r_ik)] += X[index_ik]^T dOut[i], summed over "
           "instances and slots.")
