"""Ops of sparse (id-keyed) parameters as Fluid 1.8's distributed lookup tables use them:
``split_ids`` shards ids (or a SelectedRows) by ``id % shards``; ``merge_ids`` puts the
rows fetched per shard back in the order of the original ids; ``lookup_sparse_table``
reads rows of a SelectedRows table by id, adding unseen ids to it; ``lookup_table_dequant``
reads rows of an 8-bit quantised table; ``ref_by_trainer_id`` picks one tensor of a list
by the trainer's id. None has a gradient.
"""
import numpy as np

from ..errors import InvalidArgument, expected
from ..framework.registry import def_op, no_gradient
from ..tensor.dtypes import VarType
from ..tensor.tensor import LoDTensor, SelectedRows
from ..tensor.transfer import host_scalar, to_host


# --- split_ids ------------------------------------------------------------------------------
def _split_ids_infer(ctx):
    kind = ctx.input_var_type("Ids")
    shape = list(ctx.input_shape("Ids"))
    if kind == VarType.LOD_TENSOR:
        ctx.check(len(shape) == 2, "input 'Ids'", "a [N, 1] tensor of ids", shape)
    for i in range(len(ctx.op.outputs.get("Out", ()))):
        ctx.set_output("Out", [-1] + shape[1:], ctx.input_dtype("Ids"), index=i, type=kind)


def _split_ids(ctx, ids):
    shards = len(ctx.output_names("Out"))
    xp = ctx.xp
    if isinstance(ids[0], SelectedRows):
        x = ids[0]
        rows = list(x.rows())
        values = x.value.array
        if values is None or values.shape[0] != len(rows):
            raise InvalidArgument(expected("split_ids", "input 'Ids' value",
                                           f"{len(rows)} rows (one per row id)",
                                           None if values is None else list(values.shape)))
        # a repeated row id keeps the value of its last occurrence
        last = {row: i for i, row in enumerate(rows)}
        outs = []
        for shard in range(shards):
            mine = [row for row in rows if row % shards == shard]
            picked = xp.asarray(np.array([last[row] for row in mine], "int64"))
            outs.append(SelectedRows(mine, x.height(), LoDTensor(values[picked])))
        return outs
    arrays = [to_host(t.array).reshape(-1) for t in ids]
    dtype = arrays[0].dtype
    unique = np.unique(np.concatenate(arrays)) if arrays else np.zeros(0, dtype)
    shard_of = unique.astype("int64") % shards
    return [xp.asarray(unique[shard_of == s].reshape(-1, 1).astype(dtype))
            for s in range(shards)]


def_op("split_ids", inputs=["Ids[]"], outputs=["Out[]"],
       infer_shape=_split_ids_infer, kernel=_split_ids, lod_aware=True, grad=no_gradient,
       host_reads="Ids: the ids decide each shard's size",
       traits=("runtime_outputs",),
       doc="LoDTensor Ids: Out[s] = the distinct ids of all Ids (ascending) with "
           "id % len(Out) == s, as [k, 1]. SelectedRows Ids: Out[s] = its rows r with "
           "r % len(Out) == s, with their value rows and Ids' height.")


# --- merge_ids ------------------------------------------------------------------------------
def _merge_ids_infer(ctx):
    ids = ctx.input_shapes("Ids")
    for shape in ids:
        ctx.check(len(shape) == 2 and shape[1] in (1, -1), "input 'Ids'",
                  "[N, 1] tensors of ids", list(shape))
    ctx.check(len(ctx.op.inputs.get("Rows", ())) == len(ctx.op.inputs.get("X", ())),
              "inputs 'Rows' and 'X'", "as many of each (one Rows per X)",
              f"{len(ctx.op.inputs.get('Rows', ()))} and {len(ctx.op.inputs.get('X', ()))}")
    ctx.check(len(ids) == len(ctx.op.outputs.get("Out", ())), "outputs 'Out'",
              f"one per Ids ({len(ids)})", len(ctx.op.outputs.get("Out", ())))
    width = ctx.input_shape("X")[1] if len(ctx.input_shape("X")) > 1 else -1
    for i, shape in enumerate(ids):
        ctx.set_output("Out", [shape[0], width], ctx.input_dtype("X"), index=i,
                       lod_level=ctx.input_lod_level("Ids", i))


def _merge_ids(ctx, ids, rows, xs):
    op = "merge_ids"
    xp = ctx.xp
    widths = {int(x.array.shape[1]) for x in xs}
    if len(widths) != 1:
        raise InvalidArgument(expected(op, "inputs 'X'", "one embedding width",
                                       sorted(widths)))
    where = {}  # the first (shard, row) holding each id
    total = 0
    for shard, r in enumerate(rows):
        keys = to_host(r.array).reshape(-1)
        if keys.size != xs[shard].array.shape[0]:
            raise InvalidArgument(expected(op, f"input 'Rows'[{shard}]",
                                           f"one id per row of X[{shard}] "
                                           f"({xs[shard].array.shape[0]})", keys.size))
        total += keys.size
        for j, key in enumerate(keys.tolist()):
            where.setdefault(key, (shard, j))
    if len(where) != total:
        raise InvalidArgument(expected(op, "inputs 'Rows'", "each id once over all shards",
                                       f"{total} rows holding {len(where)} distinct ids"))
    table = xp.concatenate([x.array for x in xs])
    starts = np.cumsum([0] + [x.array.shape[0] for x in xs])
    outs = []
    for t in ids:
        keys = to_host(t.array).reshape(-1).tolist()
        missing = [k for k in keys if k not in where]
        if missing:
            raise InvalidArgument(expected(op, "input 'Ids'", "ids present in Rows",
                                           missing[0]))
        picked = np.array([starts[where[k][0]] + where[k][1] for k in keys], "int64")
        outs.append(LoDTensor(table[xp.asarray(picked)], t.lod()))
    return outs


def_op("merge_ids", inputs=["Ids[]", "Rows[]", "X[]"], outputs=["Out[]"],
       infer_shape=_merge_ids_infer, kernel=_merge_ids, lod_aware=True,
       host_reads="Ids, Rows: the ids map each output row to a shard's row",
       doc="Out[i][k] = the row of X[s] at the position of Ids[i][k] in Rows[s] (the "
           "shard holding that id): the rows fetched per shard back in the ids' order; "
           "Out[i] keeps Ids[i]'s LoD.")


# --- ref_by_trainer_id ----------------------------------------------------------------------
def _ref_infer(ctx):
    ctx.check(len(ctx.input_shape("TrainerId")) == 1, "input 'TrainerId'", "a [1] tensor",
              list(ctx.input_shape("TrainerId")))
    ctx.set_output("Out", ctx.input_shape("X"), ctx.input_dtype("X"))


def _ref_by_trainer_id(ctx, xs, trainer_id):
    index = int(host_scalar(trainer_id))
    if not 0 <= index < len(xs):
        raise InvalidArgument(expected("ref_by_trainer_id", "input 'TrainerId'",
                                       f"in [0, {len(xs)}) (one X per trainer)", index))
    return xs[index].copy()


def_op("ref_by_trainer_id", inputs=["X[]", "TrainerId"], outputs=["Out"],
       infer_shape=_ref_infer, kernel=_ref_by_trainer_id,
       host_reads="TrainerId: it picks which X is copied",
       doc="Out = X[TrainerId].")


# --- lookup_table_dequant -------------------------------------------------------------------
def _dequant_infer(ctx):
    w, ids = list(ctx.input_shape("W")), list(ctx.input_shape("Ids"))
    ctx.check(len(w) == 2 and (w[1] < 0 or w[1] >= 2), "input 'W'",
              "[rows, 2 + k] (min, max, then k floats holding 4k bytes)", w)
    ctx.check(ids and ids[-1] in (1, -1), "input 'Ids'", "a last dim of 1", ids)
    ctx.check(ctx.input_dtype("W") == VarType.FP32, "input 'W' dtype", "float32",
              ctx.input_dtype("W").name)
    width = (w[1] - 2) * 4 if w[1] >= 0 else -1
    ctx.set_output("Out", ids[:-1] + [width], VarType.FP32)
    ctx.share_lod("Ids", "Out")


def _lookup_table_dequant(ctx, w, ids):
    xp = ctx.xp
    keys = ids.reshape(ids.shape[:-1]).astype("int64")
    rows = w.shape[0]
    padding = ctx.attrs["padding_idx"]
    real = keys != padding if padding != -1 else xp.ones(keys.shape, bool)
    host_keys, host_real = to_host(keys), to_host(real)
    bad = host_real & ((host_keys < 0) | (host_keys >= rows))
    if bad.any():
        raise InvalidArgument(expected("lookup_table_dequant", "input 'Ids'",
                                       f"ids in [0, {rows})", int(host_keys[bad][0])))
    picked = w[xp.where(real, keys, 0)]
    low, high = picked[..., :1], picked[..., 1:2]
    codes = xp.ascontiguousarray(picked[..., 2:]).view(xp.uint8).astype("float32")
    out = ((high - low) / xp.float32(256)) * codes + low
    return xp.where(real[..., None], out, xp.float32(0)).astype("float32")


def_op("lookup_table_dequant", inputs=["W", "Ids"], outputs=["Out"],
       attrs={"padding_idx": ("long", -1)},
       infer_shape=_dequant_infer, grad=no_gradient, kernel=_lookup_table_dequant,
       host_reads="Ids: ids are checked against the table's rows",
       doc="Row r of W is [min, max, q...]: the floats q hold 8-bit codes c (their bytes). "
           "Out[i] = (max - min) / 256 * c + min of row Ids[i], 4 * (W.shape[1] - 2) "
           "values; zeros where Ids[i] == padding_idx.")


# --- lookup_sparse_table --------------------------------------------------------------------
def _sparse_infer(ctx):
    kind = ctx.input_var_type("W")
    ctx.check(kind == VarType.SELECTED_ROWS, "input 'W'", "a SELECTED_ROWS table",
              getattr(kind, "name", kind))
    w = list(ctx.input_shape("W"))
    ctx.set_output("Out", [-1] + w[1:], ctx.input_dtype("W"))
    ctx.share_lod("Ids", "Out")


def _lookup_sparse_table(ctx, w, ids):
    op = "lookup_sparse_table"
    if not isinstance(w, SelectedRows):
        raise InvalidArgument(expected(op, "input 'W'", "a SelectedRows table",
                                       type(w).__name__))
    values = w.value.array
    if values is None:
        raise InvalidArgument(expected(op, "input 'W'", "a table with a value tensor",
                                       "no value"))
    if values.dtype != np.float32:
        raise InvalidArgument(expected(op, "input 'W' dtype", "float32", values.dtype))
    rows = list(w.rows())
    index = {row: i for i, row in enumerate(rows)}
    keys = to_host(ids.array).reshape(-1).astype("int64").tolist()
    positions = []
    grown = False
    for key in keys:
        position = index.get(key)
        if position is None and not ctx.attrs["is_test"]:
            # an unseen id takes the table's next free row, kept for later lookups
            if len(rows) == values.shape[0]:
                raise InvalidArgument(expected(op, "input 'W'",
                                               f"a free row for id {key}",
                                               f"a full table of {len(rows)} rows"))
            position = index[key] = len(rows)
            rows.append(key)
            grown = True
        positions.append(-1 if position is None else position)
    if grown:
        w.set_rows(rows)
    xp = ctx.xp
    positions = np.array(positions, "int64")
    out = values[xp.asarray(np.maximum(positions, 0))]
    out = xp.where(xp.asarray(positions >= 0).reshape((-1,) + (1,) * (out.ndim - 1)),
                   out, xp.zeros((), values.dtype))
    return LoDTensor(out, ids.lod())


def_op("lookup_sparse_table", inputs=["W", "Ids"], outputs=["Out"],
       attrs={"padding_idx": ("long", -1), "auto_grown_table": ("bool", True),
              "is_test": ("bool", False)},
       infer_shape=_sparse_infer, grad=no_gradient, kernel=_lookup_sparse_table,
       lod_aware=True, traits=("stateful",),
       host_reads="Ids: ids are looked up in the table's row index",
       doc="Out[i] = the value row of SelectedRows W whose row id is Ids[i]. An id not in W "
           "is appended to W's rows (the table grows: it takes the next value row) unless "
           "is_test, where its Out row is 0. Out keeps Ids' LoD.")
