"""Tensor arrays and small control-flow helpers: write_to_array, read_from_array,
lod_array_length, is_empty, fill_constant_batch_size_like, select_input, select_output.

A tensor array (``LoDTensorArray``) is a list of LoDTensors written and read by an index
tensor ``I`` (one int64). Paddle's ``write_to_array`` updates the array variable in place;
here it builds a new array holding the old tensors plus the new one (so a reader of the
old array keeps what it read), except for an array it made earlier in the same
``Executor.run``, which only that run can hold: that one grows in place, so a loop of n
writes costs O(n), not O(n^2). The gradient of a
write is a read of the gradient array at the same index, and the other way round.
"""
from ..errors import InvalidArgument, expected
from ..exec.tensor import LoDTensor, LoDTensorArray, SelectedRows
from ..framework.dtypes import VarType, to_numpy_dtype
from .creation import _parse_str_value, dtype_attr
from .lod_ops import host_int
from .registry import def_op, no_gradient


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
       host_step=_write_step,
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
       host_step=_read_step,
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
       kernel=_array_length, lod_aware=True,
       doc="Out = [len(X)] (int64), X a tensor array.")


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
    text = attrs.get("str_value") or ""
    value = _parse_str_value(text) if text else attrs["value"]
    return LoDTensor(ctx.xp.full(shape, value, dtype=to_numpy_dtype(attrs["dtype"])))


def_op("fill_constant_batch_size_like", inputs=["Input"], outputs=["Out"],
       attrs={"shape": ("ints", []), "dtype": ("int", int(VarType.FP32)),
              "value": ("float", 0.0), "str_value": ("string", ""),
              "input_dim_idx": ("int", 0), "output_dim_idx": ("int", 0),
              "force_cpu": ("bool", False)},
       infer_shape=_batch_like_infer, kernel=_fill_batch_like, lod_aware=True,
       grad=no_gradient,
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
       grad=lambda g: [g.op("select_input", {"X": g.output_grad("Out"),
                                             "Mask": g.input("Mask")},
                            {"Out": g.input_grad("X")})],
       doc="Out[Mask] = X; the other outputs are left as they are.")
