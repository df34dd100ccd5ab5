"""Shape manipulation: concat, split, stack, unstack, reshape2, flatten2, transpose2, squeeze2,
unsqueeze2, slice.

The ``*2`` ops also write ``XShape``, whose shape is ``[0] + X.shape``: it carries X's shape
(and LoD) to the grad op so X itself can be freed after the forward pass. At run time XShape
holds a zero-size array of that shape.

LoD follows Paddle's InferShape: reshape2/squeeze2/unsqueeze2 pass X's LoD on only when the
first dim is unchanged; slice only when ``axes[0] != 0``; split only when splitting along
axis 0 (Paddle's SplitInferMeta does exactly that); concat and stack take X[0]'s LoD;
transpose2 drops it.
"""
import math

from ..errors import InvalidArgument, expected
from ..tensor.tensor import LoDTensor, LoDTensorArray
from ..tensor.dtypes import VarType
from ..framework.program import EMPTY_VAR_NAME
from .creation import host_int_lists, host_ints, numel_of
from ..framework.registry import def_op, grad_maker, grads_like
from ..framework.memo import remember


def _fail(op, what, want, got):
    raise InvalidArgument(expected(op, what, want, got))


def _norm_axis(op, what, axis, rank):
    """``axis`` in [-rank, rank) made non-negative."""
    if not -rank <= axis < rank:
        _fail(op, what, f"in [{-rank}, {rank})", axis)
    return axis + rank if axis < 0 else axis


def _tensor(array, lod=None):
    return LoDTensor(array, [list(level) for level in lod] if lod else ())


def _same_first_dim(a, b):
    return len(a) > 0 and len(b) > 0 and a[0] == b[0]


# --- XShape plumbing shared by reshape2, transpose2, squeeze2, unsqueeze2 ---------------------
def _set_xshape(ctx):
    if ctx.has_output("XShape"):
        ctx.set_output("XShape", (0,) + tuple(ctx.input_shape("X")), ctx.input_dtype("X"))
        ctx.share_lod("X", "XShape")


def _xshape_value(ctx, x):
    if not ctx.wants("XShape"):
        return None
    return _tensor(ctx.xp.empty((0,) + x.array.shape, dtype=x.array.dtype), x._lod)


def _xshape_grad_infer(ctx):
    ctx.set_output("X@GRAD", ctx.input_shape("XShape")[1:], ctx.input_dtype("Out@GRAD"))


def _xshape_grad_kernel(ctx, xshape, dout):
    return dout.reshape(xshape.shape[1:])


def _with_xshape_grad(op_type, doc):
    """The forward's grad maker and its grad op: X@GRAD = Out@GRAD reshaped to XShape[1:]."""
    grad_type = op_type + "_grad"
    def_op(grad_type, inputs=["XShape", "Out@GRAD"], outputs=["X@GRAD"],
           attrs=_FORWARD_ATTRS[op_type], infer_shape=_xshape_grad_infer,
           share_lod=("XShape", ["X@GRAD"]), kernel=_xshape_grad_kernel, doc=doc)
    return grad_maker(grad_type, outputs=["XShape"], out_grads=["Out"], in_grads=["X"])


_FORWARD_ATTRS = {
    "reshape2": {"shape": ("ints", [])},
    "squeeze2": {"axes": ("ints", [])},
    "unsqueeze2": {"axes": ("ints", [])},
    "flatten2": {"axis": ("int", 1)},
}


# --- reshape2 ------------------------------------------------------------------------------
def reshape_target(op, shape, in_shape):
    """The output shape for Attr(shape) applied to ``in_shape``: 0 copies X's dim at that
    index, one -1 is inferred from the element count (-1 stays unknown at compile time)."""
    out, unknown = [], None
    for i, s in enumerate(shape):
        if s == -1:
            if unknown is not None:
                _fail(op, "attribute 'shape'", "at most one -1", list(shape))
            unknown = i
            out.append(-1)
        elif s == 0:
            if i >= len(in_shape):
                _fail(op, f"attribute 'shape'[{i}] = 0 (copy X's dim)",
                      f"an index below X's rank {len(in_shape)}",
                      f"shape {list(shape)} for X of shape {list(in_shape)}")
            out.append(in_shape[i])
        elif s < 0:
            _fail(op, f"attribute 'shape'[{i}]", "positive, 0 (copy) or -1 (infer)",
                  f"{s} (shape={list(shape)})")
        else:
            out.append(s)
    size = numel_of(in_shape)
    rest = [d for j, d in enumerate(out) if j != unknown]
    if size < 0 or any(d < 0 for d in rest):
        return out
    capacity = math.prod(rest)
    if unknown is not None:
        if capacity == 0 or size % capacity:
            _fail(op, "attribute 'shape'", f"dims whose product divides X's size {size}",
                  f"{list(shape)} for X of shape {list(in_shape)}")
        out[unknown] = size // capacity
    elif capacity != size:
        _fail(op, "attribute 'shape'", f"as many elements as X ({size})",
              f"{list(shape)} ({capacity} elements) for X of shape {list(in_shape)}")
    return out


def _reshape2_infer(ctx):
    _set_xshape(ctx)
    x_shape = ctx.input_shape("X")
    shape = ctx.attr("shape")
    dtype = ctx.input_dtype("X")
    if ctx.has_input("ShapeTensor"):
        out = [x_shape[i] if s == 0 and i < len(x_shape) else s for i, s in enumerate(shape)]
        if len(shape) != len(ctx.op.inputs["ShapeTensor"]):
            out = [-1] * len(ctx.op.inputs["ShapeTensor"])
        ctx.set_output("Out", out, dtype)
        return
    if ctx.has_input("Shape") and not shape:
        n = numel_of(ctx.input_shape("Shape"))
        ctx.set_output("Out", [-1] * n if n >= 0 else [-1], dtype)
        ctx.share_lod("X", "Out")
        return
    out = reshape_target("reshape2", shape, x_shape)
    ctx.set_output("Out", out, dtype)
    if _same_first_dim(x_shape, out):
        ctx.share_lod("X", "Out")


def requested_shape(ctx, shape_input, shape_list):
    """The shape a reshape asks for at run time: ShapeTensor (one int per dim), else Shape
    (an int tensor), else Attr(shape)."""
    if shape_list:
        return host_ints(shape_list)
    if shape_input is not None:
        return host_ints(shape_input)
    return ctx.attrs["shape"]


#: (the shape asked for, X's shape) -> Out's shape, for the reshapes that passed: a loop
#: reshapes alike at every step
_RESHAPED = {}


def _reshape2(ctx, x, shape_input, shape_list):
    shape = requested_shape(ctx, shape_input, shape_list)
    array = x.array
    key = (tuple(shape), array.shape)
    target = _RESHAPED.get(key)
    if target is None:
        target = remember(_RESHAPED, key,
                          tuple(reshape_target("reshape2", shape, array.shape)))
    out = array.reshape(target)
    lod = x._lod if _same_first_dim(array.shape, out.shape) else None
    return _tensor(out, lod), _xshape_value(ctx, x)


def_op("reshape2", inputs=["X", "Shape?", "ShapeTensor[]?"], outputs=["Out", "XShape!"],
       attrs=_FORWARD_ATTRS["reshape2"], infer_shape=_reshape2_infer,
       grad=_with_xshape_grad("reshape2", "X@GRAD = Out@GRAD reshaped to X's shape "
                              "(XShape[1:])."),
       kernel=_reshape2, lod_aware=True, traits=("infer_from_x",),
       host_reads="ShapeTensor / Shape: Out's shape",
       doc="Out = X reshaped to ShapeTensor (one int per dim), else Shape (an int tensor), "
           "else Attr(shape); in the shape, 0 copies X's dim at that index and one -1 is "
           "inferred. XShape = [0] + X.shape.")


# --- flatten2 / flatten ----------------------------------------------------------------------
def flatten_shape(op, axis, in_shape):
    """[prod(in_shape[:axis]), prod(in_shape[axis:])]; -1 where a factor is unknown."""
    if not 0 <= axis <= len(in_shape):
        _fail(op, "attribute 'axis'", f"in [0, {len(in_shape)}] (X's rank)", axis)
    return [numel_of(in_shape[:axis]), numel_of(in_shape[axis:])]


def _flatten_infer(ctx):
    _set_xshape(ctx)
    x_shape = ctx.input_shape("X")
    out = flatten_shape(ctx.op.type, ctx.attr("axis"), x_shape)
    ctx.set_output("Out", out, ctx.input_dtype("X"))
    if _same_first_dim(x_shape, out):
        ctx.share_lod("X", "Out")


def _flatten(ctx, x):
    array = x.array
    out = array.reshape(flatten_shape(ctx.op.type, ctx.attrs["axis"], array.shape))
    lod = x._lod if _same_first_dim(array.shape, out.shape) else None
    if ctx.op.type == "flatten":
        return _tensor(out, lod)
    return _tensor(out, lod), _xshape_value(ctx, x)


def_op("flatten2", inputs=["X"], outputs=["Out", "XShape!"], attrs=_FORWARD_ATTRS["flatten2"],
       infer_shape=_flatten_infer,
       grad=_with_xshape_grad("flatten2", "X@GRAD = Out@GRAD reshaped to XShape[1:]."),
       kernel=_flatten, lod_aware=True, traits=("infer_from_x",),
       doc="Out = X as a matrix: Out.shape = [prod(X.shape[:axis]), prod(X.shape[axis:])], "
           "axis in [0, rank] (axis 0 gives [1, numel]). XShape = [0] + X.shape.")
def_op("flatten", inputs=["X"], outputs=["Out"], attrs={"axis": ("int", 1)},
       infer_shape=_flatten_infer,
       grad=grad_maker("flatten_grad", inputs=["X"], out_grads=["Out"], in_grads=["X"]),
       kernel=_flatten, lod_aware=True,
       doc="flatten2 without XShape (the older op): Out.shape = [prod(X.shape[:axis]), "
           "prod(X.shape[axis:])].")
def_op("flatten_grad", inputs=["X", "Out@GRAD"], outputs=["X@GRAD"],
       attrs={"axis": ("int", 1)}, infer_shape=grads_like(**{"X@GRAD": "X"}),
       kernel=lambda ctx, x, dout: dout.reshape(x.shape),
       doc="X@GRAD = Out@GRAD reshaped to X's shape.")


def contiguous_range_shape(op, start, stop, in_shape):
    """X's shape with the dims start..stop (inclusive, negative from the end) merged into
    their product (-1 where a factor is unknown); a 0-D X gives [1]."""
    rank = len(in_shape)
    if rank == 0:
        return [1]
    start, stop = _norm_axis(op, "attribute 'start_axis'", start, rank), \
        _norm_axis(op, "attribute 'stop_axis'", stop, rank)
    if start > stop:
        _fail(op, "attributes 'start_axis' and 'stop_axis'", "start_axis <= stop_axis (after "
              "counting negative axes from the end)", f"{start} > {stop}")
    return list(in_shape[:start]) + [numel_of(in_shape[start:stop + 1])] + \
        list(in_shape[stop + 1:])


_FORWARD_ATTRS["flatten_contiguous_range"] = {"start_axis": ("int", 1), "stop_axis": ("int", 1)}


def _contiguous_infer(ctx):
    _set_xshape(ctx)
    x_shape = ctx.input_shape("X")
    out = contiguous_range_shape(ctx.op.type, ctx.attr("start_axis"), ctx.attr("stop_axis"),
                                 x_shape)
    ctx.set_output("Out", out, ctx.input_dtype("X"))
    if _same_first_dim(x_shape, out):
        ctx.share_lod("X", "Out")


def _contiguous(ctx, x):
    array = x.array
    out = array.reshape(contiguous_range_shape(ctx.op.type, ctx.attrs["start_axis"],
                                               ctx.attrs["stop_axis"], array.shape))
    lod = x._lod if _same_first_dim(array.shape, out.shape) else None
    return _tensor(out, lod), _xshape_value(ctx, x)


def_op("flatten_contiguous_range", inputs=["X"], outputs=["Out", "XShape!"],
       attrs=_FORWARD_ATTRS["flatten_contiguous_range"], infer_shape=_contiguous_infer,
       grad=_with_xshape_grad("flatten_contiguous_range",
                              "X@GRAD = Out@GRAD reshaped to XShape[1:]."),
       kernel=_contiguous, lod_aware=True,
       doc="paddle.flatten: Out = X with dims start_axis..stop_axis (inclusive) merged, "
           "Out.shape = X.shape[:start] + [prod(X.shape[start:stop+1])] + X.shape[stop+1:]. "
           "XShape = [0] + X.shape.")


# --- transpose2 ----------------------------------------------------------------------------
#: (attribute 'axis', X's rank) -> the permutation, for the axes that passed
_PERMS = {}


def _perm(op, axis, rank):
    """``axis`` as a permutation of X's ``rank`` dims (negative axes counted from the end),
    a tuple; InvalidArgument naming ``op`` when it is none."""
    key = (tuple(axis), rank)
    perm = _PERMS.get(key)
    if perm is not None:
        return perm
    if len(axis) != rank:
        _fail(op, "attribute 'axis'", f"{rank} entries (X's rank)", list(axis))
    perm = tuple(_norm_axis(op, "attribute 'axis'", a, rank) if rank else a for a in axis)
    if sorted(perm) != list(range(rank)):
        _fail(op, "attribute 'axis'", f"a permutation of 0..{rank - 1}", list(axis))
    return remember(_PERMS, key, perm)


def _transpose2_infer(ctx):
    _set_xshape(ctx)
    x_shape = ctx.input_shape("X")
    perm = _perm("transpose2", ctx.attr("axis"), len(x_shape))
    ctx.set_output("Out", [x_shape[p] for p in perm], ctx.input_dtype("X"))


def _transpose2(ctx, x):
    array = x.array
    out = ctx.xp.ascontiguousarray(array.transpose(_perm("transpose2", ctx.attrs["axis"],
                                                         array.ndim)))
    return _tensor(out), _xshape_value(ctx, x)


def _transpose2_grad_infer(ctx):
    d_shape = ctx.input_shape("Out@GRAD")
    perm = _perm("transpose2_grad", ctx.attr("axis"), len(d_shape))
    shape = [0] * len(perm)
    for i, p in enumerate(perm):
        shape[p] = d_shape[i]
    ctx.set_output("X@GRAD", shape, ctx.input_dtype("Out@GRAD"))


def _transpose2_grad(ctx, xshape, dout):
    perm = _perm("transpose2_grad", ctx.attrs["axis"], dout.ndim)
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return ctx.xp.ascontiguousarray(ctx.xp.transpose(dout, inverse))


def_op("transpose2", inputs=["X"], outputs=["Out", "XShape!"], attrs={"axis": ("ints", [])},
       infer_shape=_transpose2_infer,
       grad=grad_maker("transpose2_grad", outputs=["XShape"], out_grads=["Out"],
                       in_grads=["X"]),
       kernel=_transpose2, lod_aware=True, traits=("infer_from_x",),
       doc="Out = X with its dims permuted: Out.shape[i] = X.shape[axis[i]]. "
           "XShape = [0] + X.shape.")
def_op("transpose2_grad", inputs=["XShape?", "Out@GRAD"], outputs=["X@GRAD"],
       attrs={"axis": ("ints", [])}, infer_shape=_transpose2_grad_infer,
       kernel=_transpose2_grad, doc="X@GRAD = Out@GRAD permuted by the inverse of axis.")


# --- squeeze2 / unsqueeze2 -----------------------------------------------------------------
def squeeze_shape(op, axes, in_shape, runtime):
    """Drop the listed dims of size 1 (every size-1 dim when ``axes`` is empty). Listed dims
    of another size stay; at compile time an unknown (-1) listed dim is dropped."""
    rank = len(in_shape)
    drop = [False] * rank
    if not axes:
        drop = [d == 1 for d in in_shape]
    for a in axes:
        if rank == 0:
            continue
        i = _norm_axis(op, "attribute 'axes'", a, rank)
        if in_shape[i] == 1 or (not runtime and in_shape[i] == -1):
            drop[i] = True
    return [d for d, gone in zip(in_shape, drop) if not gone]


def unsqueeze_shape(op, axes, in_shape):
    """Insert a 1 at each axis in turn; a negative axis counts from the end of the shape
    built so far (``axis + rank_so_far + 1``)."""
    out = list(in_shape)
    for a in axes:
        cur = a + len(out) + 1 if a < 0 else a
        if not 0 <= cur <= len(out):
            _fail(op, "attribute 'axes'", f"values in [{-len(out) - 1}, {len(out)}] when "
                  f"inserting into a rank-{len(out)} shape", list(axes))
        out.insert(cur, 1)
    return out


def _squeeze2_infer(ctx):
    _set_xshape(ctx)
    x_shape = ctx.input_shape("X")
    out = squeeze_shape("squeeze2", ctx.attr("axes"), x_shape, runtime=False)
    ctx.set_output("Out", out, ctx.input_dtype("X"))
    if _same_first_dim(x_shape, out):
        ctx.share_lod("X", "Out")


def _squeeze2(ctx, x):
    array = x.array
    out = array.reshape(squeeze_shape("squeeze2", ctx.attrs["axes"], array.shape, True))
    return (_tensor(out, x._lod if _same_first_dim(array.shape, out.shape) else None),
            _xshape_value(ctx, x))


def_op("squeeze2", inputs=["X"], outputs=["Out", "XShape!"], attrs=_FORWARD_ATTRS["squeeze2"],
       infer_shape=_squeeze2_infer,
       grad=_with_xshape_grad("squeeze2", "X@GRAD = Out@GRAD reshaped to XShape[1:]."),
       kernel=_squeeze2, lod_aware=True, traits=("infer_from_x",),
       doc="Out = X without the size-1 dims listed in axes (all size-1 dims when axes is "
           "empty); listed dims of another size are kept. XShape = [0] + X.shape.")


def _unsqueeze2_infer(ctx):
    _set_xshape(ctx)
    x_shape = ctx.input_shape("X")
    dtype = ctx.input_dtype("X")
    if ctx.has_input("AxesTensorList") or ctx.has_input("AxesTensor"):
        if ctx.has_input("AxesTensorList"):
            n = len(ctx.op.inputs["AxesTensorList"])
        else:
            n = numel_of(ctx.input_shape("AxesTensor"))
            n = n if n >= 0 else len(ctx.attr("axes"))
        ctx.set_output("Out", [-1] * (len(x_shape) + n), dtype)
        return
    out = unsqueeze_shape("unsqueeze2", ctx.attr("axes"), x_shape)
    ctx.set_output("Out", out, dtype)
    if _same_first_dim(x_shape, out):
        ctx.share_lod("X", "Out")


def requested_axes(ctx, axes_tensor, axes_list):
    """The axes an unsqueeze asks for at run time: AxesTensor, else AxesTensorList (one int
    each), else Attr(axes)."""
    if axes_tensor is not None:
        return host_ints(axes_tensor)
    if axes_list:
        return host_ints(axes_list)
    return ctx.attrs["axes"]


def _unsqueeze2(ctx, x, axes_tensor, axes_list):
    axes = requested_axes(ctx, axes_tensor, axes_list)
    array = x.array
    out = array.reshape(unsqueeze_shape("unsqueeze2", axes, array.shape))
    return (_tensor(out, x._lod if _same_first_dim(array.shape, out.shape) else None),
            _xshape_value(ctx, x))


def_op("unsqueeze2", inputs=["X", "AxesTensor?", "AxesTensorList[]?"],
       outputs=["Out", "XShape!"], attrs=_FORWARD_ATTRS["unsqueeze2"],
       infer_shape=_unsqueeze2_infer,
       grad=_with_xshape_grad("unsqueeze2", "X@GRAD = Out@GRAD reshaped to XShape[1:]."),
       kernel=_unsqueeze2, lod_aware=True, traits=("infer_from_x",),
       host_reads="AxesTensor / AxesTensorList: where Out's dims go",
       doc="Out = X with a size-1 dim inserted at each of axes (AxesTensor / AxesTensorList "
           "first), in order. XShape = [0] + X.shape.")


# --- concat / stack ------------------------------------------------------------------------
def _joins_an_array(ctx):
    """True when an X of concat or stack is a tensor array (its items are joined; how many
    there are is known only at run time)."""
    return any(v.type == VarType.LOD_TENSOR_ARRAY for v in ctx.input_vars("X"))


def _joined_items(op, xs):
    """The tensors an X list names: a tensor array stands for its items, in order."""
    items = []
    for x in xs:
        if isinstance(x, LoDTensorArray):
            items.extend(x)
        else:
            items.append(x)
    if not items:
        _fail(op, "input 'X'", "at least one tensor", "an empty tensor array")
    return items


def _joined_lod(op, items):
    """Out's LoD when concat joins rows: the inputs' LoDs one after another, each shifted
    past the ones before (Paddle's concat kernel on axis 0); X[0]'s when any input has none."""
    first = items[0]._lod
    if not first or any(not t._lod for t in items[1:]):
        return first
    for k, t in enumerate(items[1:], 1):
        if len(t._lod) != len(first):
            _fail(op, f"LoD levels of X[{k}]", f"{len(first)} (as X[0])", len(t._lod))
    lod = [list(level) for level in first]
    for t in items[1:]:
        for joined, level in zip(lod, t._lod):
            base = joined[-1]
            joined.extend(base + offset for offset in level[1:])
    return lod


def _concat_infer(ctx):
    shapes = ctx.input_shapes("X")
    rank = len(shapes[0])
    ctx.check(rank > 0, "input 'X'", "tensors of rank >= 1", "0-D tensors")
    dtype = ctx.input_dtype("X")
    ctx.share_lod("X", "Out")
    if ctx.has_input("AxisTensor"):
        ctx.set_output("Out", [-1] * rank, dtype)
        return
    if _joins_an_array(ctx):
        axis = _norm_axis("concat", "attribute 'axis'", ctx.attr("axis"), rank)
        out = list(shapes[0])
        out[axis] = -1
        ctx.set_output("Out", out, dtype)
        return
    axis = _norm_axis("concat", "attribute 'axis'", ctx.attr("axis"), rank)
    out = list(shapes[0])
    for k, shape in enumerate(shapes[1:], 1):
        ok = len(shape) == rank and all(
            i == axis or a == b or a < 0 or b < 0 for i, (a, b) in enumerate(zip(out, shape)))
        ctx.check(ok, f"shape of X[{k}]", f"{list(shapes[0])} except along axis {axis}",
                  list(shape))
        out = [(a if a >= 0 else b) if i != axis else a for i, (a, b) in
               enumerate(zip(out, shape))]
    sizes = [s[axis] for s in shapes]
    out[axis] = -1 if any(s < 0 for s in sizes) else sum(sizes)
    ctx.set_output("Out", out, dtype)


def _concat_axis(ctx, axis_tensor, rank):
    # AxisTensor is read on the host (the op declares host_reads)
    axis = host_ints(axis_tensor)[0] if axis_tensor is not None else ctx.attrs["axis"]
    return _norm_axis(ctx.op.type, "axis", axis, rank)


def _concat(ctx, xs, axis_tensor):
    items = _joined_items("concat", xs)
    arrays = [t.array for t in items]
    axis = _concat_axis(ctx, axis_tensor.array if axis_tensor is not None else None,
                        arrays[0].ndim)
    lod = _joined_lod("concat", items) if axis == 0 else items[0]._lod
    return LoDTensor(ctx.xp.concatenate(arrays, axis=axis), lod)


def _concat_grad(ctx, xs, dout, axis_tensor):
    dout = dout.array
    axis = _concat_axis(ctx, axis_tensor.array if axis_tensor is not None else None,
                        dout.ndim)
    items = _joined_items("concat_grad", xs)
    bounds, at = [], 0
    for t in items[:-1]:
        at += t.array.shape[axis]
        bounds.append(at)
    pieces = iter(ctx.xp.split(dout, bounds, axis=axis))
    # each gradient is laid out as its input: a tensor array's is a tensor array
    return [LoDTensorArray(LoDTensor(next(pieces), t._lod) for t in x)
            if isinstance(x, LoDTensorArray) else LoDTensor(next(pieces), x._lod) for x in xs]


def _concat_grad_infer(ctx):
    for k, var in enumerate(ctx.input_vars("X")):
        ctx.set_output("X@GRAD", var.shape, var.dtype, lod_level=var.lod_level, index=k,
                       type=var.type)


def_op("concat", inputs=["X[]", "AxisTensor?"], outputs=["Out"], attrs={"axis": ("int", 0)},
       infer_shape=_concat_infer,
       grad=grad_maker("concat_grad", inputs=["X", "AxisTensor"], out_grads=["Out"],
                       in_grads=["X"]),
       kernel=_concat, lod_aware=True, host_reads="AxisTensor: the axis to join on",
       traits=("infer_from_x",),
       doc="Out = the X tensors (a tensor array: its items) joined along axis (AxisTensor "
           "first; negative counts from the end); all other dims must agree. Joined on axis "
           "0, inputs that all carry LoD give Out their LoDs one after another; otherwise Out "
           "takes X[0]'s LoD.")
def_op("concat_grad", inputs=["X[]", "Out@GRAD", "AxisTensor?"], outputs=["X@GRAD[]?"],
       attrs={"axis": ("int", 0)}, infer_shape=_concat_grad_infer,
       kernel=_concat_grad, lod_aware=True, host_reads="AxisTensor: the axis to cut along",
       doc="X@GRAD[k] = the slice of Out@GRAD that X[k] filled (a tensor array's: one slice "
           "per item), with X[k]'s LoD.")


def _stack_axis(op, axis, rank):
    if not -(rank + 1) <= axis < rank + 1:
        _fail(op, "attribute 'axis'", f"in [{-(rank + 1)}, {rank + 1})", axis)
    return axis + rank + 1 if axis < 0 else axis


def _stack_infer(ctx):
    shapes = ctx.input_shapes("X")
    for k, shape in enumerate(shapes[1:], 1):
        ok = len(shape) == len(shapes[0]) and all(
            a == b or a < 0 or b < 0 for a, b in zip(shapes[0], shape))
        ctx.check(ok, f"shape of X[{k}]", f"{list(shapes[0])} (the shape of X[0])", list(shape))
    axis = _stack_axis("stack", ctx.attr("axis"), len(shapes[0]))
    out = list(shapes[0])
    out.insert(axis, -1 if _joins_an_array(ctx) else len(shapes))
    ctx.set_output("Y", out, ctx.input_dtype("X"))
    ctx.share_lod("X", "Y")


def _stack_grad_infer(ctx):
    if ctx.has_input("X"):
        _concat_grad_infer(ctx)
        return
    shape = list(ctx.input_shape("Y@GRAD"))
    axis = _stack_axis("stack_grad", ctx.attr("axis"), len(shape) - 1)
    del shape[axis]
    n = len(ctx.op.outputs.get("X@GRAD", ()))
    ctx.set_outputs("X@GRAD", [shape] * n, ctx.input_dtype("Y@GRAD"))


def _stack_grad(ctx, dy, xs):
    dy = dy.array
    axis = _stack_axis("stack_grad", ctx.attrs["axis"], dy.ndim - 1)
    pieces = [LoDTensor(ctx.xp.take(dy, i, axis=axis)) for i in range(dy.shape[axis])]
    if xs is None:
        return pieces
    # laid out as the forward's X: a tensor array's gradient is a tensor array
    at, grads = iter(pieces), []
    for x in xs:
        if isinstance(x, LoDTensorArray):
            grads.append(LoDTensorArray(LoDTensor(next(at).array, t._lod) for t in x))
        else:
            grads.append(LoDTensor(next(at).array, x._lod))
    return grads


def _stack_grad_maker(g):
    """stack_grad from Y@GRAD alone, as Paddle's; when an X is a tensor array, the
    forward X too, so that the gradient can be split back into arrays of the right length."""
    dx = g.input_grad("X")
    if all(n == EMPTY_VAR_NAME for n in dx):
        return []
    block = g.fwd.block
    ins = {"Y@GRAD": g.output_grad("Y")}
    if any(block.var_recursive(n).type == VarType.LOD_TENSOR_ARRAY for n in g.input("X")):
        ins["X"] = g.input("X")
    return [g.op("stack_grad", ins, {"X@GRAD": dx})]


def _stack(ctx, xs):
    items = _joined_items("stack", xs)
    arrays = [t.array for t in items]
    axis = _stack_axis("stack", ctx.attrs["axis"], arrays[0].ndim)
    return LoDTensor(ctx.xp.stack(arrays, axis=axis), items[0]._lod)


def_op("stack", inputs=["X[]"], outputs=["Y"], attrs={"axis": ("int", 0)},
       infer_shape=_stack_infer, traits=("infer_from_x",),
       grad=_stack_grad_maker,
       kernel=_stack, lod_aware=True,
       doc="Y = the equally shaped X tensors (a tensor array: its items) stacked along a new "
           "dim at axis (in [-(rank+1), rank+1)); Y takes X[0]'s LoD.")
def_op("stack_grad", inputs=["Y@GRAD", "X[]?"], outputs=["X@GRAD[]?"],
       attrs={"axis": ("int", 0)}, infer_shape=_stack_grad_infer, kernel=_stack_grad,
       lod_aware=True,
       doc="X@GRAD[k] = Y@GRAD taken at index k of axis. When X (the forward's, given only "
           "when one is a tensor array) is given, the gradients are laid out as X: a tensor "
           "array's gradient is an array of its items' slices.")


# --- unstack ---------------------------------------------------------------------------------
def _unstack_infer(ctx):
    shape = list(ctx.input_shape("X"))
    axis = _norm_axis("unstack", "attribute 'axis'", ctx.attr("axis"), len(shape))
    n = len(ctx.op.outputs["Y"])
    ctx.check(shape[axis] < 0 or shape[axis] == n, "output 'Y'",
              f"{shape[axis]} variables (X's dim {axis})", n)
    ctx.check(ctx.attr("num") in (n, 0), "attribute 'num'", f"{n} (the number of Y)",
              ctx.attr("num"))
    del shape[axis]
    ctx.set_outputs("Y", [shape] * n, ctx.input_dtype("X"))


def _unstack(ctx, x):
    axis = _norm_axis("unstack", "attribute 'axis'", ctx.attrs["axis"], x.ndim)
    n = len(ctx.output_names("Y"))
    if x.shape[axis] != n:
        _fail("unstack", "output 'Y'", f"{x.shape[axis]} variables (X's dim {axis})", n)
    return [ctx.xp.ascontiguousarray(x.take(i, axis=axis)) for i in range(n)]


def _unstack_grad_infer(ctx):
    shape = list(ctx.input_shape("Y@GRAD"))
    axis = _stack_axis("unstack_grad", ctx.attr("axis"), len(shape))
    shape.insert(axis, len(ctx.op.inputs["Y@GRAD"]))
    ctx.set_output("X@GRAD", shape, ctx.input_dtype("Y@GRAD"))


def _unstack_grad(ctx, dys):
    axis = _stack_axis("unstack_grad", ctx.attrs["axis"], dys[0].ndim)
    return ctx.xp.stack(dys, axis=axis)


_UNSTACK_ATTRS = {"axis": ("int", 0), "num": ("int", 0)}

def_op("unstack", inputs=["X"], outputs=["Y[]"], attrs=_UNSTACK_ATTRS,
       infer_shape=_unstack_infer, traits=("infer_from_x",),
       grad=grad_maker("unstack_grad", out_grads=["Y"], in_grads=["X"]),
       kernel=_unstack,
       doc="Y[k] = X taken at index k of axis, for k < num = X.shape[axis]: the inverse of "
           "stack.")
def_op("unstack_grad", inputs=["Y@GRAD[]"], outputs=["X@GRAD"], attrs=_UNSTACK_ATTRS,
       infer_shape=_unstack_grad_infer, kernel=_unstack_grad,
       doc="X@GRAD = the Y@GRAD stacked along axis.")


# --- split -----------------------------------------------------------------------------------
def split_sizes(op, dim, num, sections, n_out):
    """Sizes of the pieces of a dim of size ``dim`` (-1: unknown): ``num`` equal pieces, or
    ``sections`` with at most one -1 taking what is left."""
    if num > 0:
        if n_out != num:
            _fail(op, "output 'Out'", f"{num} variables (attribute num)", n_out)
        if dim < 0:
            return [-1] * num
        if dim % num:
            _fail(op, "attribute 'num'", f"a divisor of the split dim {dim}", num)
        return [dim // num] * num
    if not sections:
        _fail(op, "attributes 'num' and 'sections'", "num > 0 or non-empty sections",
              f"num={num}, sections=[]")
    if len(sections) != n_out:
        _fail(op, "attribute 'sections'", f"{n_out} entries (one per output)", list(sections))
    unknown = [i for i, s in enumerate(sections) if s == -1]
    if len(unknown) > 1:
        _fail(op, "attribute 'sections'", "at most one -1", list(sections))
    if dim < 0:
        return [-1] * len(sections)
    known = sum(s for s in sections if s != -1)
    sizes = list(sections)
    if unknown:
        if known > dim:
            _fail(op, "attribute 'sections'", f"known sizes summing to at most {dim}",
                  list(sections))
        sizes[unknown[0]] = dim - known
    elif known != dim:
        _fail(op, "attribute 'sections'", f"sizes summing to the split dim {dim}",
              list(sections))
    return sizes


def _split_infer(ctx):
    x_shape = ctx.input_shape("X")
    n_out = len(ctx.op.outputs["Out"])
    dtype = ctx.input_dtype("X")
    if ctx.has_input("AxisTensor"):
        ctx.set_outputs("Out", [[-1] * len(x_shape)] * n_out, dtype)
        return
    axis = _norm_axis("split", "attribute 'axis'", ctx.attr("axis"), len(x_shape))
    if ctx.has_input("SectionsTensorList"):
        sizes = [-1] * n_out
    else:
        sizes = split_sizes("split", x_shape[axis], ctx.attr("num"), ctx.attr("sections"),
                            n_out)
    shapes = []
    for size in sizes:
        shape = list(x_shape)
        shape[axis] = size
        shapes.append(shape)
    ctx.set_outputs("Out", shapes, dtype)
    if axis == 0:
        ctx.share_lod("X", "Out")


def _split(ctx, x, axis_tensor, sections_list):
    array = x.array
    # AxisTensor and SectionsTensorList read together: one copy from a device
    axis, sections = host_int_lists(axis_tensor, sections_list)
    axis = _norm_axis("split", "axis", axis[0] if axis else ctx.attrs["axis"], array.ndim)
    sections = sections if sections is not None else ctx.attrs["sections"]
    n_out = len(ctx.output_names("Out"))
    sizes = split_sizes("split", array.shape[axis], ctx.attrs["num"], sections, n_out)
    lod = x._lod if axis == 0 else None
    # the pieces as views of X, as np.split cuts them (its Python swaps the axes twice a
    # piece: more than the views cost at this size)
    before, pieces, at = (slice(None),) * axis, [], 0
    for size in sizes:
        pieces.append(_tensor(array[before + (slice(at, at + size),)], lod))
        at += size
    return pieces


def _split_grad(g):
    dx = g.input_grad("X")
    if all(n == EMPTY_VAR_NAME for n in dx):
        return []
    ins = {"X": g.output_grad("Out"), "AxisTensor": g.input("AxisTensor")}
    return [g.op("concat", ins, {"Out": dx}, {"axis": g.attrs.get("axis", 0)})]


def_op("split", inputs=["X", "AxisTensor?", "SectionsTensorList[]?"], outputs=["Out[]"],
       attrs={"axis": ("int", 0), "num": ("int", 0), "sections": ("ints", [])},
       infer_shape=_split_infer, grad=_split_grad, kernel=_split, lod_aware=True,
       traits=("infer_from_x",),
       host_reads="AxisTensor, SectionsTensorList: the axis and Out's sizes",
       doc="Out = X cut along axis into num equal pieces, or pieces of the given sections "
           "(one -1 takes the rest); AxisTensor and SectionsTensorList override the "
           "attributes. The gradient is concat(Out@GRAD) along axis.")


# --- slice -----------------------------------------------------------------------------------
def slice_bounds(op, in_shape, axes, starts, ends, infer_flags=()):
    """(axis, start, end) per sliced axis with Paddle's clipping: negative indices count
    from the end, then both are clipped to [0, dim]; end < start is an error. start/end
    are None where unknown (a -1 dim or infer_flags -1)."""
    rank = len(in_shape)
    if len(starts) != len(axes) or len(ends) != len(axes):
        _fail(op, "attributes 'starts'/'ends'", f"{len(axes)} entries each (one per axis)",
              f"starts={list(starts)}, ends={list(ends)}")
    bounds = []
    for i, a in enumerate(axes):
        axis = _norm_axis(op, "attribute 'axes'", a, rank)
        dim = in_shape[axis]
        if (i < len(infer_flags) and infer_flags[i] == -1) or dim < 0:
            bounds.append((axis, None, None))
            continue
        start = starts[i] + dim if starts[i] < 0 else starts[i]
        end = ends[i] + dim if ends[i] < 0 else ends[i]
        start = min(max(start, 0), dim)
        end = max(min(end, dim), 0)
        if end < start:
            _fail(op, f"slice of axis {axis} (size {dim})", "end >= start after clipping",
                  f"start={starts[i]}, end={ends[i]}")
        bounds.append((axis, start, end))
    return bounds


def _decrease(op, shape, decrease_axis, runtime):
    """``shape`` without the decrease_axis dims (each must be 1); no dims left gives 0-D."""
    rank = len(shape)
    gone = set()
    for a in decrease_axis:
        axis = _norm_axis(op, "attribute 'decrease_axis'", a, rank)
        if runtime and shape[axis] != 1:
            _fail(op, f"dim {axis} listed in decrease_axis", "size 1 after slicing",
                  shape[axis])
        gone.add(axis)
    return [d for i, d in enumerate(shape) if i not in gone]


def _slice_infer(ctx):
    in_shape = ctx.input_shape("Input")
    axes = ctx.attr("axes")
    from_tensor = any(ctx.has_input(s) for s in ("StartsTensor", "EndsTensor",
                                                  "StartsTensorList", "EndsTensorList"))
    out = list(in_shape)
    if from_tensor:
        for a in axes:
            out[_norm_axis("slice", "attribute 'axes'", a, len(in_shape))] = -1
    else:
        for axis, start, end in slice_bounds("slice", in_shape, axes, ctx.attr("starts"),
                                             ctx.attr("ends"), ctx.attr("infer_flags")):
            out[axis] = -1 if start is None else end - start
    out = _decrease("slice", out, ctx.attr("decrease_axis"), runtime=False)
    ctx.set_output("Out", out, ctx.input_dtype("Input"))
    if axes and axes[0] != 0:
        ctx.share_lod("Input", "Out")


def last_item_picks(starts, ends, attrs):
    """Per sliced axis: whether it is ``x[i]`` for a run-time i that held -1, which Fluid's
    ``__getitem__`` records as start i, end i + 1 = 0 (a tensor, so infer_flags -1) on a
    decrease_axis; Fluid's kernels read that pair as the last item, not an empty range."""
    flags, decrease = attrs.get("infer_flags") or [], set(attrs.get("decrease_axis") or ())
    return [start == -1 and end == 0 and i < len(flags) and flags[i] == -1 and axis in decrease
            for i, (axis, start, end) in enumerate(zip(attrs["axes"], starts, ends))]


def _slice_index(ctx, shape, starts_t, ends_t, starts_l, ends_l):
    """The runtime index tuple and the un-decreased slice shape."""
    attrs = ctx.attrs
    if starts_t is None is ends_t and not starts_l and not ends_l and \
            -1 not in attrs["infer_flags"]:
        # the bounds in the attributes alone (an index of ints: no tensor to read, no
        # run-time -1 to tell from the last item)
        starts, ends = attrs["starts"], attrs["ends"]
    else:
        # every bound tensor read at once: one copy from a device; a whole tensor overrides
        # a list
        starts_t, ends_t, starts_l, ends_l = host_int_lists(starts_t, ends_t, starts_l,
                                                            ends_l)
        starts = next(b for b in (starts_t, starts_l, attrs["starts"]) if b is not None)
        ends = next(b for b in (ends_t, ends_l, attrs["ends"]) if b is not None)
        ends = [2 ** 31 - 1 if picks_last else end for end, picks_last in
                zip(ends, last_item_picks(starts, ends, attrs))]
    index = [slice(None)] * len(shape)
    sliced = list(shape)
    for axis, start, end in slice_bounds(ctx.op.type, shape, attrs["axes"], starts, ends):
        index[axis] = slice(start, end)
        sliced[axis] = end - start
    return tuple(index), sliced


#: (X's shape, axes, starts, ends, decrease_axis) -> (index, Out's shape) of the slices
#: whose bounds are attributes alone: worked out once (a live x[i] or a loop's step slices
#: alike each time, and the bounds' checks cost ten times NumPy's slicing)
_ATTR_SLICES = {}


def _slice(ctx, x, starts_t, ends_t, starts_l, ends_l):
    array, attrs = x.array, ctx.attrs
    axes = attrs["axes"]
    if starts_t is None is ends_t and not starts_l and not ends_l and \
            -1 not in attrs["infer_flags"]:
        key = (array.shape, *axes, None, *attrs["starts"], None, *attrs["ends"], None,
               *attrs["decrease_axis"])
        found = _ATTR_SLICES.get(key)
        if found is None:
            index, sliced = _slice_index(ctx, array.shape, None, None, None, None)
            found = remember(_ATTR_SLICES, key, (index, tuple(
                _decrease("slice", sliced, attrs["decrease_axis"], True))))
        out = array[found[0]].reshape(found[1])
    else:
        index, sliced = _slice_index(ctx, array.shape, _arr(starts_t), _arr(ends_t),
                                     _arrs(starts_l), _arrs(ends_l))
        out = array[index].reshape(_decrease("slice", sliced, attrs["decrease_axis"], True))
    return _tensor(out, x._lod if axes and axes[0] != 0 else None)


def _arr(t):
    return t.array if t is not None else None


def _arrs(ts):
    return [t.array for t in ts] if ts else ts


def _slice_grad(ctx, x, starts_t, ends_t, starts_l, ends_l, dout):
    index, sliced = _slice_index(ctx, x.shape, starts_t, ends_t, starts_l, ends_l)
    dx = ctx.xp.zeros(x.shape, dtype=dout.dtype)
    dx[index] = dout.reshape(sliced)
    return dx


_SLICE_ATTRS = {"axes": ("ints", []), "starts": ("ints", []), "ends": ("ints", []),
                "infer_flags": ("ints", []), "decrease_axis": ("ints", [])}
_SLICE_TENSORS = ["StartsTensor?", "EndsTensor?", "StartsTensorList[]?", "EndsTensorList[]?"]

def_op("slice", inputs=["Input"] + _SLICE_TENSORS, outputs=["Out"], attrs=_SLICE_ATTRS,
       infer_shape=_slice_infer,
       grad=grad_maker("slice_grad", inputs=["Input", "StartsTensor", "EndsTensor",
                                             "StartsTensorList", "EndsTensorList"],
                       out_grads=["Out"], in_grads=["Input"]),
       kernel=_slice, lod_aware=True, traits=("infer_from_x",),
       host_reads="StartsTensor(List) / EndsTensor(List): the bounds of the slice",
       doc="Out = Input[starts[i]:ends[i]] along each axes[i] (tensor inputs override the "
           "attributes; negative indices count from the end; both are clipped to [0, dim]), "
           "then the decrease_axis dims (size 1) are removed (none left: 0-D).")
def_op("slice_grad", inputs=["Input"] + _SLICE_TENSORS + ["Out@GRAD"], outputs=["Input@GRAD"],
       attrs=_SLICE_ATTRS, infer_shape=grads_like(**{"Input@GRAD": "Input"}),
       kernel=_slice_grad,
       host_reads="StartsTensor(List) / EndsTensor(List): the bounds of the slice",
       doc="Input@GRAD = zeros shaped like Input, with the sliced region set to Out@GRAD.")
