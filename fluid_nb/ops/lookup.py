"""Lookup ops: embedding rows (``lookup_table``, ``lookup_table_v2``), ``one_hot_v2``,
``one_hot`` and ``gather``. Their gradients scatter-add the output gradient back into the
source's rows (a sparse lookup's gradient is SelectedRows: the rows it used).

Ids out of range are an error on the host. A device does not check them (that would copy
the ids to the host every run): there such an id reads zeros and gets no gradient, as a
padding id does."""
import numpy as np

from ..errors import InvalidArgument, expected
from ..tensor.tensor import LoDTensor, SelectedRows, index_add
from ..tensor.dtypes import VarType, convert_dtype, to_numpy_dtype
from ..framework.infer import dims_match
from ..framework.registry import def_op, grad_maker, grads_like
from .common import first_out_of_range
from ..tensor.transfer import host_scalar, to_host

_INT_TYPES = (VarType.INT32, VarType.INT64)
NO_PADDING = -1  # Paddle's kNoPadding


def _check_ids(op, slot, ids, size):
    bad = first_out_of_range(ids, size)
    if bad is not None:
        raise InvalidArgument(expected(op, slot, f"values in [0, {size})", int(bad)))


def _ids_in_range(xp, op, slot, ids, size):
    """(ids safe to index with, the mask of those out of range or None): the host checks
    them (an error), a device masks them (module doc)."""
    if xp is np:
        _check_ids(op, slot, ids, size)
        return ids, None
    bad = (ids < 0) | (ids >= size)
    return xp.where(bad, 0, ids), bad


def _either(mask, other):
    return other if mask is None else mask if other is None else mask | other


# --- lookup_table / lookup_table_v2 ---------------------------------------------------------
_LOOKUP_ATTRS = {
    "is_sparse": ("bool", False),
    "is_distributed": ("bool", False),
    "padding_idx": ("long", NO_PADDING),
    "remote_prefetch": ("bool", False),
    "trainer_id": ("int", 0),
    "height_sections": ("longs", []),
    "epmap": ("strings", []),
    "table_names": ("strings", []),
}


def _lookup_infer(ctx, drop_last):
    w, ids = ctx.input_shape("W"), list(ctx.input_shape("Ids"))
    ctx.check(len(w) == 2, "input 'W'", "rank 2 ([rows, width])", list(w))
    ctx.check(ctx.input_dtype("Ids") in _INT_TYPES, "input 'Ids' dtype", "int64 (or int32)",
              ctx.input_dtype("Ids").name)
    if drop_last:
        ctx.check(len(ids) >= 1 and dims_match(ids[-1], 1), "input 'Ids'",
                  "a last dim of 1", ids)
        ids = ids[:-1]
    ctx.set_output("Out", ids + [w[1]], ctx.input_dtype("W"))


def _padding_mask(ctx, ids):
    padding_idx = ctx.attrs["padding_idx"]
    if padding_idx == NO_PADDING:
        return None
    return ids == padding_idx


def _lookup(ctx, op, w, ids, out_shape):
    xp = ctx.xp
    flat = ids.reshape(-1).astype("int64")
    pad = _padding_mask(ctx, flat)
    if pad is not None:
        flat = xp.where(pad, 0, flat)
    flat, bad = _ids_in_range(xp, op, "Ids", flat, w.shape[0])
    pad = _either(pad, bad)
    rows = w.take(flat, axis=0)  # (the array's method: xp.take is Python around it)
    if pad is not None:
        rows = xp.where(pad[:, None], 0, rows).astype(w.dtype)
    return rows.reshape(tuple(out_shape) + (w.shape[1],))


def _lookup_rows(ctx, op, table, ids, out_shape):
    """A lookup in a SelectedRows table (Paddle's sparse parameter): id r reads the value
    row at r's position among the table's rows; padding ids read zeros."""
    xp = ctx.xp
    values = table.value.array
    table.sync_index()
    padding_idx = ctx.attrs["padding_idx"]
    # the table's row index is host data: the ids are read there (one copy from a device)
    flat = to_host(ids).reshape(-1).tolist()
    positions, padded = [], []
    for i, row in enumerate(flat):
        if padding_idx != NO_PADDING and row == padding_idx:
            positions.append(0)
            padded.append(i)
            continue
        if row < 0:
            raise InvalidArgument(expected(op, "Ids", "values >= 0", row))
        try:
            positions.append(table.index(row))
        except IndexError:
            raise InvalidArgument(expected(op, "Ids", f"rows of the SelectedRows W "
                                           f"{table.rows()}", row)) from None
    out = xp.take(values, xp.asarray(positions, dtype="int64"), axis=0) if positions else \
        xp.zeros((0,) + values.shape[1:], dtype=values.dtype)
    if padded:
        out[xp.asarray(padded, dtype="int64")] = 0  # out is this kernel's own array
    return out.reshape(tuple(out_shape) + tuple(values.shape[1:]))


def _lookup_kernel(op, drop_last):
    """lookup_table(_v2) over runtime values: a dense W or a SelectedRows one."""
    def kernel(ctx, w, ids):
        ids = ids.array
        shape = ids.shape[:-1] if drop_last else ids.shape
        if w.__class__ is SelectedRows:
            return _lookup_rows(ctx, op, w, ids, shape)
        return _lookup(ctx, op, w.array, ids, shape)
    return kernel


def _lookup_step(op, drop_last):
    """The dense lookup on the host without the kernel call (sequence models look up every
    batch); anything else goes to the kernel."""
    def make(ctx, ins, out, kernel_step):
        w_holder, ids_holder = ins
        dense = LoDTensor

        def step():
            w, ids = w_holder.value, ids_holder.value
            if w.__class__ is not dense or ids.__class__ is not dense:
                return kernel_step()
            array = ids.array
            out.value = dense(_lookup(ctx, op, w.array, array,
                                      array.shape[:-1] if drop_last else array.shape),
                              ids._lod)
        return step
    return make


def _lookup_grad(ctx, op, w, ids, dout):
    xp = ctx.xp
    flat = ids.reshape(-1).astype("int64")
    grads = dout.reshape(-1, w.shape[1])
    pad = _padding_mask(ctx, flat)
    if ctx.attrs["is_sparse"]:
        # Paddle's sparse gradient: one row per looked-up id (repeats kept; the optimizers
        # merge them), so an update touches only the rows the batch used. Its row list is
        # host data: the ids are read there (one copy from a device)
        ids_host = to_host(flat)
        keep = np.ones(ids_host.shape, bool) if pad is None else ids_host != \
            ctx.attrs["padding_idx"]
        ids_host = ids_host[keep]
        _check_ids(op, "Ids", ids_host, w.shape[0])
        kept = grads if keep.all() else grads[xp.asarray(np.flatnonzero(keep))]
        return SelectedRows(ids_host.tolist(), w.shape[0], LoDTensor(kept.copy()))
    if pad is not None:  # the padding row gets no gradient
        flat = xp.where(pad, 0, flat)
    flat, bad = _ids_in_range(xp, op, "Ids", flat, w.shape[0])
    pad = _either(pad, bad)
    if pad is not None:
        grads = xp.where(pad[:, None], 0, grads)
    return index_add(xp, xp.zeros(w.shape, dtype=dout.dtype), flat, grads)


def _lookup_grad_infer(ctx):
    ctx.set_output("W@GRAD", ctx.input_shape("W"), ctx.input_dtype("W"))


def _lookup_grad_var_type(ctx):
    """W@GRAD is SelectedRows when the lookup is sparse."""
    if ctx.attr("is_sparse") and ctx.has_output("W@GRAD"):
        ctx.output_var("W@GRAD").type = VarType.SELECTED_ROWS


def_op("lookup_table",
       inputs=["W", "Ids"], outputs=["Out"],
       attrs=dict(_LOOKUP_ATTRS, grad_inplace=("bool", False)),
       infer_shape=lambda ctx: _lookup_infer(ctx, drop_last=True),
       share_lod=("Ids", ["Out"]),
       grad=grad_maker("lookup_table_grad", inputs=["W", "Ids"], out_grads=["Out"],
                       in_grads=["W"]),
       kernel=_lookup_kernel("lookup_table", True), lod_aware=True,
       host_step=_lookup_step("lookup_table", True),
       host_reads="Ids, only when W is a SelectedRows table: its row index is host data",
       doc="Out[..., :] = W[Ids[..., 0], :]; Ids has a last dim of 1, which Out drops "
           "(Out: Ids.shape[:-1] + [W.shape[1]]). Rows whose id equals padding_idx (unless "
           "-1) are zeros. A SelectedRows W is a sparse table: id r reads the value row at "
           "r's position among W's rows (an id not among them is an error).")

def_op("lookup_table_grad",
       inputs=["W", "Ids", "Out@GRAD"], outputs=["W@GRAD"],
       attrs=dict(_LOOKUP_ATTRS, grad_inplace=("bool", False)),
       infer_shape=_lookup_grad_infer, infer_var_type=_lookup_grad_var_type,
       traits=("runtime_outputs",),
       kernel=lambda ctx, w, ids, dout: _lookup_grad(ctx, "lookup_table_grad", w, ids, dout),
       host_reads="Ids, only with is_sparse: the SelectedRows gradient's row list is host data",
       doc="Gradient of lookup_table: dW[r] = sum of dOut rows whose id is r (dense; the "
           "padding row gets 0). W is read only for its shape.")

def_op("lookup_table_v2",
       inputs=["W", "Ids"], outputs=["Out"],
       attrs=_LOOKUP_ATTRS,
       infer_shape=lambda ctx: _lookup_infer(ctx, drop_last=False),
       share_lod=("Ids", ["Out"]),
       grad=grad_maker("lookup_table_v2_grad", inputs=["W", "Ids"], out_grads=["Out"],
                       in_grads=["W"]),
       kernel=_lookup_kernel("lookup_table_v2", False), lod_aware=True,
       host_step=_lookup_step("lookup_table_v2", False),
       host_reads="Ids, only when W is a SelectedRows table: its row index is host data",
       doc="Out[idx, :] = W[Ids[idx], :] (Out: Ids.shape + [W.shape[1]]). Rows whose id "
           "equals padding_idx (unless -1) are zeros. A SelectedRows W reads as in "
           "lookup_table.")

def_op("lookup_table_v2_grad",
       inputs=["W", "Ids", "Out@GRAD"], outputs=["W@GRAD"],
       attrs=_LOOKUP_ATTRS,
       infer_shape=_lookup_grad_infer, infer_var_type=_lookup_grad_var_type,
       traits=("runtime_outputs",),
       kernel=lambda ctx, w, ids, dout: _lookup_grad(ctx, "lookup_table_v2_grad", w, ids,
                                                     dout),
       host_reads="Ids, only with is_sparse: the SelectedRows gradient's row list is host data",
       doc="Gradient of lookup_table_v2: dW[r] = sum of dOut rows whose id is r (dense; the "
           "padding row gets 0). W is read only for its shape.")


# --- one_hot_v2 -----------------------------------------------------------------------------
def _one_hot_infer(ctx):
    x = list(ctx.input_shape("X"))
    ctx.check(len(x) >= 1, "input 'X'", "rank >= 1", x)
    # the ids' dtype is the kernel's choice, checked when they arrive: the layers check the
    # declared dtype, and a program may feed int ids to a variable declared otherwise
    depth = -1 if ctx.has_input("depth_tensor") else ctx.attr("depth")
    if not ctx.has_input("depth_tensor"):
        ctx.check(depth > 0, "attribute 'depth'", "> 0 (or a depth_tensor input)", depth)
    ctx.set_output("Out", x + [depth], convert_dtype(ctx.attr("dtype")))


def _one_hot_v2(ctx, x, depth_tensor):
    xp, attrs = ctx.xp, ctx.attrs
    if x.dtype.kind not in "iu":  # one_hot's kernels are int32 and int64 ones
        raise InvalidArgument(expected(ctx.op.type, "input 'X' dtype", "int64 (or int32)",
                                       str(x.dtype)))
    # the depth decides the output's shape: read on the host
    depth = host_scalar(depth_tensor) if depth_tensor is not None else attrs["depth"]
    if not attrs["allow_out_of_range"] and xp is np:  # a device does not check (module doc)
        _check_ids("one_hot_v2", "X", x, depth)
    # an out-of-range id matches no column, so its row stays zeros
    hot = x[..., None] == xp.arange(depth, dtype=x.dtype)
    return hot.astype(to_numpy_dtype(attrs["dtype"]))


def _valid_dtype(value):
    try:
        to_numpy_dtype(value)
    except (InvalidArgument, ValueError):
        return "a data type id NumPy can hold"
    return None


#: both one_hot versions' attributes
_ONE_HOT_ATTRS = {"depth": ("int", -1), "dtype": ("int", int(VarType.FP32), _valid_dtype),
                  "allow_out_of_range": ("bool", False)}


def_op("one_hot_v2",
       inputs=["X", "depth_tensor?"], outputs=["Out"],
       attrs=_ONE_HOT_ATTRS,
       infer_shape=_one_hot_infer, share_lod=("X", ["Out"]),
       kernel=_one_hot_v2,
       host_reads="depth_tensor: the depth decides the output's shape",
       doc="Out[..., j] = 1 if X[...] == j else 0, for j < depth (the depth_tensor's value "
           "when given); Out: X.shape + [depth], of data type ``dtype`` (FP32). An id outside "
           "[0, depth) is an error unless allow_out_of_range, which gives a zero row.")


# --- one_hot (the first version) --------------------------------------------------------------
def _one_hot_v1_infer(ctx):
    x = list(ctx.input_shape("X"))
    # the last dim is checked when the ids arrive: Fluid programs declare [-1, k] data
    ctx.check(len(x) >= 2, "input 'X'", "rank >= 2 ([..., 1] ids)", x)
    depth = -1 if ctx.has_input("depth_tensor") else ctx.attr("depth")
    if not ctx.has_input("depth_tensor"):
        ctx.check(depth > 0, "attribute 'depth'", "> 0 (or a depth_tensor input)", depth)
    ctx.set_output("Out", x[:-1] + [depth], convert_dtype(ctx.attr("dtype")))


def _one_hot_v1(ctx, x, depth_tensor):
    if x.shape[-1] != 1:
        raise InvalidArgument(expected("one_hot", "input 'X'", "ids of shape [..., 1]",
                                       list(x.shape)))
    return _one_hot_v2(ctx, x[..., 0], depth_tensor)


def_op("one_hot",
       inputs=["X", "depth_tensor?"], outputs=["Out"],
       attrs=_ONE_HOT_ATTRS,
       infer_shape=_one_hot_v1_infer, share_lod=("X", ["Out"]),
       kernel=_one_hot_v1, plain_kernel=_one_hot_v1,
       host_reads="depth_tensor: the depth decides the output's shape",
       doc="one_hot_v2 of ids with a trailing dim of 1: X [..., 1] -> Out [..., depth], "
           "Out[..., j] = 1 if X[..., 0] == j else 0 (the first version of the op, which "
           "Fluid 1.x's layers.one_hot builds).")

# --- gather ---------------------------------------------------------------------------------
def _gather_infer(ctx):
    x, index = list(ctx.input_shape("X")), ctx.input_shape("Index")
    ctx.check(ctx.input_dtype("Index") in _INT_TYPES, "input 'Index' dtype",
              "int64 (or int32)", ctx.input_dtype("Index").name)
    ctx.check(len(index) in (0, 1) or (len(index) == 2 and dims_match(index[1], 1)),
              "input 'Index'", "shape [N] or [N, 1]", list(index))
    if ctx.has_input("Axis"):  # the axis is known only at run time
        out = [-1] * len(x) if len(index) else [-1] * (len(x) - 1)
    else:
        axis, rank = ctx.attr("axis"), len(x)
        ctx.check(-rank <= axis < rank, "attribute 'axis'", f"in [{-rank}, {rank})", axis)
        axis %= rank
        out = x[:axis] + ([index[0]] if len(index) else []) + x[axis + 1:]
    ctx.set_output("Out", out, ctx.input_dtype("X"))


def _gather_axis(ctx, x, axis_tensor):
    # the axis decides the output's shape: read on the host
    axis = host_scalar(axis_tensor) if axis_tensor is not None else ctx.attrs["axis"]
    if not -x.ndim <= axis < x.ndim:
        raise InvalidArgument(expected("gather", "axis", f"in [{-x.ndim}, {x.ndim})", axis))
    return axis % x.ndim


def _gather_index(xp, op, index, size):
    """(the index, flat and safe, the mask of those out of range or None)."""
    flat = index.reshape(-1) if index.ndim else index
    return _ids_in_range(xp, op, "Index", flat, size)


def _gather(ctx, x, index, axis_tensor):
    xp = ctx.xp
    axis = _gather_axis(ctx, x, axis_tensor)
    flat, bad = _gather_index(xp, "gather", index, x.shape[axis])
    out = x.take(flat, axis=axis)
    if bad is not None:  # an index out of range reads zeros (module doc)
        out = xp.where(bad.reshape((1,) * axis + bad.shape + (1,) * (x.ndim - axis - 1)),
                       0, out).astype(x.dtype, copy=False)
    return out


def _gather_grad(ctx, x, index, axis_tensor, dout):
    xp = ctx.xp
    axis = _gather_axis(ctx, x, axis_tensor)
    flat, bad = _gather_index(xp, "gather_grad", index, x.shape[axis])
    flat = flat.reshape(-1)
    # accumulate on dim 0 of a moved view, then move the axis back
    grads = xp.moveaxis(dout.reshape(x.shape[:axis] + (flat.size,) + x.shape[axis + 1:]),
                        axis, 0)
    if bad is not None:  # an index out of range gets no gradient
        grads = xp.where(bad.reshape((-1,) + (1,) * (grads.ndim - 1)), 0, grads)
    target = xp.zeros((x.shape[axis],) + grads.shape[1:], dtype=dout.dtype)
    return xp.moveaxis(index_add(xp, target, flat, grads), 0, axis)


def_op("gather",
       inputs=["X", "Index", "Axis?"], outputs=["Out"],
       attrs={"axis": ("int", 0)},
       infer_shape=_gather_infer, traits=("infer_from_inputs",),
       grad=grad_maker("gather_grad", inputs=["X", "Index", "Axis"], out_grads=["Out"],
                       in_grads=["X"]),
       kernel=_gather,
       host_reads="Axis: the axis decides the output's shape",
       doc="Out = X[Index] along ``axis`` (the Axis tensor's value when given): Out has X's "
           "shape with dim ``axis`` replaced by len(Index). Index is [N] or [N, 1].")

def_op("gather_grad",
       inputs=["X", "Index", "Axis?", "Out@GRAD"], outputs=["X@GRAD"],
       attrs={"axis": ("int", 0)},
       infer_shape=grads_like(**{"X@GRAD": "X"}),
       kernel=_gather_grad,
       host_reads="Axis: the axis decides the gradient's layout",
       doc="Gradient of gather: dX = zeros like X with dOut slices added at Index along "
           "``axis`` (repeated indices sum). X is read only for its shape.")
