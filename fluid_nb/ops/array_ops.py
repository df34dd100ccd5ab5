"""Tensor arrays and small control-flow helpers: write_to_array, read_from_array,
lod_array_length, tensor_array_to_tensor, is_empty, fill_constant_batch_size_like, select_input, select_output.

A tensor array (``LoDTensorArray``) is a list of LoDTensors written and read by an index
tensor ``I`` (one int64). Paddle's ``write_to_array`` updates the array variable in place;
here it builds a new array holding the old tensors plus the new one (so a reader of the
old array keeps what it read), except for an array it made earlier in the same
``Executor.run``, which only that run can hold: that one grows in place, so a loop of n
writes costs O(n), not O(n^2). The gradient of a
write is a read of the gradient array at the same index, and the other way round.
"""
from ..errors import InvalidArgument, expected
from ..tensor.tensor import LoDTensor, LoDTensorArray, SelectedRows
from ..tensor.dtypes import VarType, to_numpy_dtype
from .creation import dtype_attr, fill_value
from .lod_ops import host_int
from ..framework.registry import def_op, grad_maker, no_gradient


# --- write_to_array / read_from_array -------------------------------------------------------
def _check_index(ctx):
    shape = ctx.input_shape("I")
    ctx.check(all(d < 0 for d in shape) or all(d in (1, -1) for d in shape), "input 'I'",
              "a tensor of one element", list(shape))


def _write_infer(ctx):
    _check_index(ctx)
    if not ctx.has_input("X"):
        return
    ctx.set_output("Out", ctx.input_shape("X"), ctx.input_dtype("X"),
                   lod_level=ctx.input_lod_level("X"), type=VarType.LOD_TENSOR_ARRAY)


def _write_to_array(ctx, x, i):
    offset = host_int("write_to_array", "I", i)
    if offset < 0:
        raise InvalidArgument(expected("write_to_array", "input 'I'", ">= 0", offset))
    holder = ctx.scope.find_var(ctx.output_names("Out")[0])
    token = ctx.executor.run_token if ctx.executor is not None else None
    return _written(holder.value if holder is not None else None, offset, x, token)


def _written(old, offset, x, token):
    """The array Out holds after ``Out[offset] = x``: ``old`` itself when this run
    (``token``) made it, else a new array holding ``old``'s tensors."""
    if token is not None and getattr(old, "run_token", None) is token:
        array = old  # made earlier in this run: nobody else holds it yet
    else:
        array = LoDTensorArray(old if isinstance(old, list) else ())
        array.run_token = token
    while len(array) <= offset:
        array.append(LoDTensor())
    # the item shares X's data and LoD lists (LoD is never changed in place), as Paddle's
    # item shares X's memory
    if isinstance(x, LoDTensor):  # an empty X writes only its LoD, as in Paddle
        array[offset] = LoDTensor(x.array, x._lod)
    return array


def _write_step(ctx, ins, out, kernel_step):
    """write_to_array's host step: a LoDTensor X at a host index of one element (anything
    else goes to the kernel, which names what it expected)."""
    x_holder, index_holder = ins
    executor = ctx.executor

    def step():
        x = x_holder.value
        try:
            offset = int(index_holder.value.array.item())
        except Exception:  # no index of one element
            offset = -1
        if offset >= 0 and x.__class__ is LoDTensor:
            out.value = _written(out.value, offset, x, executor.run_token)
        else:
            kernel_step()
    return step


def_op("write_to_array", inputs=["X", "I"], outputs=["Out"],
       infer_shape=_write_infer, kernel=_write_to_array, lod_aware=True,
       host_step=_write_step, host_reads="I: the index picks the array slot",
       grad=lambda g: [g.op("read_from_array", {"X": g.output_grad("Out"), "I": g.input("I")},
                            {"Out": g.input_grad("X")})],
       doc="Out[I] = X (Out, a tensor array, grows to I + 1 tensors when shorter). "
           "Gradient: read_from_array.")


def _read_infer(ctx):
    _check_index(ctx)
    ctx.set_output("Out", ctx.input_shape("X"), ctx.input_dtype("X"),
                   lod_level=ctx.input_lod_level("X"), type=VarType.LOD_TENSOR)


def _read_from_array(ctx, array, i):
    if not isinstance(array, list):
        raise InvalidArgument(expected("read_from_array", "input 'X'", "a LoDTensorArray",
                                       type(array).__name__))
    offset = host_int("read_from_array", "I", i)
    if not 0 <= offset < len(array):
        return None  # as Paddle: Out is left as it was
    item = array[offset]
    return LoDTensor(item.array, item._lod)  # shares the item's data and LoD lists


def _read_step(ctx, ins, out, kernel_step):
    """read_from_array's host step: a tensor array X at a host index of one element
    (anything else goes to the kernel, which names what it expected)."""
    array_holder, index_holder = ins
    new = LoDTensor

    def step():
        array = array_holder.value
        try:
            offset = int(index_holder.value.array.item())
            if 0 <= offset < len(array):
                item = array[offset]
                out.value = new(item.array, item._lod)
            return  # past the end: Out is left as it was
        except Exception:  # no tensor array, no index of one element
            pass
        kernel_step()
    return step


def_op("read_from_array", inputs=["X", "I"], outputs=["Out"],
       infer_shape=_read_infer, kernel=_read_from_array, lod_aware=True,
       host_step=_read_step, host_reads="I: the index picks the array slot",
       grad=lambda g: [g.op("write_to_array", {"X": g.output_grad("Out"), "I": g.input("I")},
                            {"Out": g.input_grad("X")})],
       doc="Out = X[I] (X a tensor array; Out unchanged when I is past its end). "
           "Gradient: write_to_array.")


# --- lod_array_length, is_empty ---------------------------------------------------------------
def _array_length(ctx, array):
    if not isinstance(array, list):
        raise InvalidArgument(expected("lod_array_length", "input 'X'", "a LoDTensorArray",
                                       type(array).__name__))
    return LoDTensor(ctx.xp.asarray([len(array)], dtype="int64"))


def_op("lod_array_length", inputs=["X"], outputs=["Out"],
       infer_shape=lambda ctx: ctx.set_output("Out", (1,), VarType.INT64),
       kernel=_array_length, lod_aware=True, traits=("host_output",),
       doc="Out = [len(X)] (int64), X a tensor array; on the host whatever the place (a "
           "loop bound, as in Paddle).")


# --- tensor_array_to_tensor ------------------------------------------------------------------
def _array_items(op, x):
    if not isinstance(x, list) or not x:
        raise InvalidArgument(expected(op, "input 'X'", "a non-empty LoDTensorArray",
                                       type(x).__name__ if not isinstance(x, list) else "[]"))
    return list(x)


def _array_axis(op, axis, rank):
    if not -rank <= axis < rank:
        raise InvalidArgument(expected(op, "attribute 'axis'", f"in [{-rank}, {rank})", axis))
    return axis + rank if axis < 0 else axis


def _array_to_tensor_infer(ctx):
    shape = list(ctx.input_shape("X"))
    dtype = ctx.input_dtype("X")
    if ctx.attr("use_stack"):
        axis = _array_axis("tensor_array_to_tensor", ctx.attr("axis"), len(shape) + 1)
        shape.insert(axis, -1)
    elif shape:
        axis = _array_axis("tensor_array_to_tensor", ctx.attr("axis"), len(shape))
        shape[axis] = -1
    ctx.set_output("Out", shape, dtype)
    ctx.set_output("OutIndex", (-1,), VarType.INT32)


def _array_to_tensor(ctx, x):
    items = [t.array for t in _array_items("tensor_array_to_tensor", x)]
    xp = ctx.xp
    if ctx.attrs["use_stack"]:
        axis = _array_axis("tensor_array_to_tensor", ctx.attrs["axis"], items[0].ndim + 1)
        return (LoDTensor(xp.stack(items, axis=axis)),
                LoDTensor(xp.ones(len(items), dtype="int32")))
    axis = _array_axis("tensor_array_to_tensor", ctx.attrs["axis"], items[0].ndim)
    sizes = [a.shape[axis] for a in items]
    return (LoDTensor(xp.concatenate(items, axis=axis)),
            LoDTensor(xp.asarray(sizes, dtype="int32")))


def _array_to_tensor_grad(ctx, x, dout):
    items = _array_items("tensor_array_to_tensor_grad", x)
    dout = dout.array
    xp = ctx.xp
    if ctx.attrs["use_stack"]:
        axis = _array_axis("tensor_array_to_tensor_grad", ctx.attrs["axis"], dout.ndim)
        pieces = [xp.take(dout, i, axis=axis) for i in range(len(items))]
    else:
        axis = _array_axis("tensor_array_to_tensor_grad", ctx.attrs["axis"], dout.ndim)
        bounds, at = [], 0
        for t in items[:-1]:
            at += t.array.shape[axis]
            bounds.append(at)
        pieces = xp.split(dout, bounds, axis=axis)
    return LoDTensorArray(LoDTensor(xp.ascontiguousarray(p), t._lod)
                          for p, t in zip(pieces, items))


def _array_to_tensor_grad_infer(ctx):
    var = ctx.input_var("X")
    ctx.set_output("X@GRAD", var.shape, var.dtype, lod_level=var.lod_level,
                   type=VarType.LOD_TENSOR_ARRAY)


_ARRAY_TO_TENSOR_ATTRS = {"axis": ("int", 0), "use_stack": ("bool", False)}

def_op("tensor_array_to_tensor", inputs=["X"], outputs=["Out", "OutIndex"],
       attrs=_ARRAY_TO_TENSOR_ATTRS, infer_shape=_array_to_tensor_infer,
       grad=grad_maker("tensor_array_to_tensor_grad", inputs=["X"], out_grads=["Out"],
                       in_grads=["X"]),
       kernel=_array_to_tensor, lod_aware=True,
       doc="Out = the items of the tensor array X concatenated along axis (use_stack: "
           "stacked along a new dim axis); OutIndex (int32) = each item's size along axis "
           "(1 each when stacked).")
def_op("tensor_array_to_tensor_grad", inputs=["X", "Out@GRAD"], outputs=["X@GRAD"],
       attrs=_ARRAY_TO_TENSOR_ATTRS, infer_shape=_array_to_tensor_grad_infer,
       kernel=_array_to_tensor_grad, lod_aware=True,
       doc="X@GRAD = a tensor array of the slices of Out@GRAD each item of X filled, each "
           "with its item's LoD.")


def _is_empty(ctx, x):
    if isinstance(x, SelectedRows):
        x = x.value
    empty = not isinstance(x, LoDTensor) or x.array is None or x.array.size == 0
    return LoDTensor(ctx.xp.asarray([empty], dtype="bool"))


def_op("is_empty", inputs=["X"], outputs=["Out"],
       infer_shape=lambda ctx: ctx.set_output("Out", (1,), VarType.BOOL),
       kernel=_is_empty, lod_aware=True,
       doc="Out = [numel(X) == 0] (bool).")


# --- fill_constant_batch_size_like -------------------------------------------------------------
def _batch_like_infer(ctx):
    op_shape = list(ctx.attr("shape"))
    in_shape = ctx.input_shape("Input")
    in_idx, out_idx = ctx.attr("input_dim_idx"), ctx.attr("output_dim_idx")
    ctx.check(bool(op_shape), "attribute 'shape'", "a non-empty list", op_shape)
    ctx.check(0 <= out_idx < len(op_shape), "attribute 'output_dim_idx'",
              f"in [0, {len(op_shape)}) (the rank of attribute 'shape')", out_idx)
    ctx.check(0 <= in_idx < len(in_shape), "attribute 'input_dim_idx'",
              f"in [0, {len(in_shape)}) (the rank of Input)", in_idx)
    op_shape[out_idx] = in_shape[in_idx]
    ctx.set_output("Out", tuple(op_shape), dtype_attr(ctx, "dtype"))


def _fill_batch_like(ctx, x):
    attrs = ctx.attrs
    shape = list(attrs["shape"])
    in_idx, out_idx = attrs["input_dim_idx"], attrs["output_dim_idx"]
    if x._lod and in_idx == 0:  # a sequence batch: one row per sequence of the last level
        shape[out_idx] = len(x._lod[-1]) - 1
    else:
        shape[out_idx] = x.array.shape[in_idx]
    value = fill_value("fill_constant_batch_size_like", attrs)
    return LoDTensor(ctx.xp.full(shape, value, dtype=to_numpy_dtype(attrs["dtype"])))


def_op("fill_constant_batch_size_like", inputs=["Input"], outputs=["Out"],
       attrs={"shape": ("ints", []), "dtype": ("int", int(VarType.FP32)),
              "value": ("float", 0.0), "str_value": ("string", ""),
              "input_dim_idx": ("int", 0), "output_dim_idx": ("int", 0),
              "force_cpu": ("bool", False)},
       infer_shape=_batch_like_infer, kernel=_fill_batch_like, lod_aware=True,
       grad=no_gradient, traits=("infer_from_x",),
       doc="Out = full(shape, value) with shape[output_dim_idx] = "
           "Input.dims[input_dim_idx] (the number of sequences when Input has LoD and "
           "input_dim_idx is 0).")


# --- select_input / select_output --------------------------------------------------------------
def _branch(op, mask, count):
    branch = host_int(op, "Mask", mask)
    if not 0 <= branch < count:
        raise InvalidArgument(expected(op, "input 'Mask'", f"a branch in [0, {count})",
                                       branch))
    return branch


def _select_input_infer(ctx):
    shapes = ctx.input_shapes("X")
    vars_ = ctx.input_vars("X")
    shape = tuple(shapes[0])
    for other in shapes[1:]:  # branches may differ in size: those dims are run-time
        shape = tuple(a if a == b else -1 for a, b in zip(shape, other)) \
            if len(other) == len(shape) else shape
    ctx.set_output("Out", shape, vars_[0].dtype, lod_level=vars_[0].lod_level,
                   type=vars_[0].type)


def _select_input(ctx, xs, mask):
    return xs[_branch("select_input", mask, len(xs))]


def_op("select_input", inputs=["X[]", "Mask"], outputs=["Out"],
       infer_shape=_select_input_infer, kernel=_select_input, lod_aware=True,
       host_reads="Mask: it picks the branch",
       grad=lambda g: [g.op("select_output", {"X": g.output_grad("Out"),
                                              "Mask": g.input("Mask")},
                            {"Out": g.input_grad("X")})],
       doc="Out = X[Mask] (Mask an int32 tensor of one element; any variable kind).")


def _select_output_infer(ctx):
    var = ctx.input_var("X")
    for index in range(len(ctx.op.outputs.get("Out", ()))):
        ctx.set_output("Out", ctx.input_shape("X"), var.dtype, lod_level=var.lod_level,
                       index=index, type=var.type)


def _select_output(ctx, x, mask):
    count = len(ctx.output_names("Out"))
    outs = [None] * count
    outs[_branch("select_output", mask, count)] = x
    return outs


def_op("select_output", inputs=["X", "Mask"], outputs=["Out[]"],
       infer_shape=_select_output_infer, kernel=_select_output, lod_aware=True,
       host_reads="Mask: it picks the branch",
       grad=lambda g: [g.op("select_input", {"X": g.output_grad("Out"),
                                             "Mask": g.input("Mask")},
                            {"Out": g.input_grad("X")})],
       doc="Out[Mask] = X; the other outputs are left as they are.")
