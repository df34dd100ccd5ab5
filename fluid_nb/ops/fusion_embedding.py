"""``fused_embedding_seq_pool``: lookup_table then a SUM sequence_pool, in one op (Fluid 1.8's
``contrib.fused_embedding_seq_pool`` builds it; it trains, so it has a grad op, dense or
sparse like lookup_table's). Both kernels run the kernels of the ops it fuses."""
import math

from ..framework.infer import dims_match
from ..framework.registry import def_op, grad_maker
from ..tensor.dtypes import VarType
from ..tensor.tensor import LoDTensor
from .compose import run_kernel
from .fusion_seqpool import _pool
from .lookup import NO_PADDING, _lookup_grad_var_type
from .sequence import lod_of, segment_ids

_ATTRS = {
    "combiner": ("string", "sum", lambda v: None if v == "sum" else "'sum' (the only "
                                                                    "pooling supported)"),
    "padding_idx": ("long", NO_PADDING),
    "grad_inplace": ("bool", False),
    "is_sparse": ("bool", False),
}


def _infer(ctx):
    w, ids = list(ctx.input_shape("W")), list(ctx.input_shape("Ids"))
    ctx.check(len(w) == 2, "input 'W'", "rank 2 ([rows, width])", w)
    ctx.check(len(ids) >= 2 and dims_match(ids[-1], 1), "input 'Ids'",
              "shape [T, ..., 1] (a last dim of 1)", ids)
    ctx.check(ctx.input_dtype("Ids") in (VarType.INT64, VarType.INT32), "input 'Ids' dtype",
              "int64", ctx.input_dtype("Ids").name)
    ctx.check(ctx.input_lod_level("Ids") == 1, "input 'Ids' LoD level", "1 (sequences of ids)",
              ctx.input_lod_level("Ids"))
    dims = [w[1]] + ids[1:]
    width = -1 if any(v < 0 for v in dims) else math.prod(dims)
    ctx.set_output("Out", [-1, width], ctx.input_dtype("W"), lod_level=0)


def _id_columns(op, ids):
    """(the sequences' offsets, ids as [T, columns, 1]): a row of Ids may hold several ids
    (Ids [T, K, 1]), each pooled into its own block of Out's columns."""
    offsets = lod_of(op, ids, "Ids", levels=1)[0]
    shape = ids.array.shape
    return offsets, ids.array.reshape(shape[0], math.prod(shape[1:]), 1)


def _forward(ctx, w, ids):
    offsets, grid = _id_columns("fused_embedding_seq_pool", ids)
    rows = run_kernel(ctx, "lookup_table", w, LoDTensor(grid),
                      padding_idx=ctx.attrs["padding_idx"])
    flat = rows.reshape(rows.shape[0], -1)
    return _pool(ctx.xp, LoDTensor(flat, [offsets]), "SUM", "fused_embedding_seq_pool")


def _backward(ctx, ids, w, dout):
    """Each sequence's dOut block reaches every id of the sequence's rows in that column
    (sequence_expand), then lookup_table's gradient gathers them by id."""
    offsets, grid = _id_columns("fused_embedding_seq_pool_grad", ids)
    xp = ctx.xp
    table = w.array
    per_row = xp.take(dout.array, xp.asarray(segment_ids(offsets)), axis=0)
    return run_kernel(ctx, "lookup_table_grad", table, grid,
                      per_row.reshape(-1, table.shape[1]),
                      padding_idx=ctx.attrs["padding_idx"], is_sparse=ctx.attrs["is_sparse"])


def_op("fused_embedding_seq_pool",
       inputs=["W", "Ids"], outputs=["Out"], attrs=_ATTRS, infer_shape=_infer,
       grad=grad_maker("fused_embedding_seq_pool_grad", inputs=["Ids", "W"],
                       out_grads=["Out"], in_grads=["W"]),
       kernel=_forward, lod_aware=True,
       host_reads="Ids, only when W is a SelectedRows table: its row index is host data",
       doc="Out[s] = concat_k sum_{t in sequence s} W[Ids[t, k]]: lookup_table of Ids [T, K, "
           "1] (int64, one LoD level; [T, 1] gives K = 1) summed over each sequence (combiner "
           "'sum'), the K columns' sums side by side: Out [N, K * W.shape[1]], no LoD. An id "
           "equal to padding_idx (unless -1) adds zeros.")

def_op("fused_embedding_seq_pool_grad",
       inputs=["Ids", "W", "Out@GRAD"], outputs=["W@GRAD"], attrs=_ATTRS,
       infer_shape=lambda ctx: ctx.set_output("W@GRAD", ctx.input_shape("W"),
                                              ctx.input_dtype("W")),
       infer_var_type=_lookup_grad_var_type, traits=("runtime_outputs",),
       kernel=_backward, lod_aware=True,
       host_reads="Ids, only with is_sparse: the SelectedRows gradient's row list is host data",
       doc="Gradient of fused_embedding_seq_pool: dW[r] = sum over the (t, k) with Ids[t, k] "
           "= r of dOut[sequence of t, block k] (padding ids give none). With is_sparse, "
           "SelectedRows with one row per looked-up id (padding ids left out).")
