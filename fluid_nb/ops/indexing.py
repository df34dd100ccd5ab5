"""Index and repeat ops: expand, expand_as, gather_nd, scatter, scatter_nd_add,
strided_slice, multiplex, shard_index.

Tensors that give shapes or bounds (expand_times, strided_slice's starts/ends/strides) are
read on the host (``host_int_lists``, one copy from a device), as Paddle reads them on the
CPU. Index tensors (gather_nd, scatter, multiplex, shard_index) stay where they are: their
values are checked on the host only. A compile-time dim is -1 where it depends on a
tensor's value.
"""
import numpy as np

from ..errors import InvalidArgument, expected
from ..tensor.dtypes import VarType
from .common import first_out_of_range
from .creation import host_int_lists
from .shape import last_item_picks
from ..tensor.tensor import index_add
from ..framework.registry import def_op, grad_maker, grads_like, no_gradient
from ..framework.memo import remember

_INT_TYPES = (VarType.INT32, VarType.INT64)


def _fail(op, what, want, got):
    raise InvalidArgument(expected(op, what, want, got))


def _norm_axis(op, what, axis, rank):
    if not -rank <= axis < rank:
        _fail(op, what, f"in [{-rank}, {rank})", axis)
    return axis + rank if axis < 0 else axis


def _check_ids(op, what, ids, size):
    """Refuse index values outside [0, size), on the host only: on a device the check would
    copy the indices over and wait for them every run (Paddle's CUDA kernels do not check
    them either), so there an index out of range is the program's error."""
    bad = first_out_of_range(ids, size) if isinstance(ids, np.ndarray) else None
    if bad is not None:
        _fail(op, what, f"values in [0, {size})", int(bad))


# --- expand / expand_as ----------------------------------------------------------------------
def _expand_times(op, ctx, times_tensor, times_list, rank):
    # read on the host (the op declares host_reads): the tensor, else the list, else the
    # attribute
    times_tensor, times_list = host_int_lists(times_tensor, times_list)
    times = next(t for t in (times_tensor, times_list, ctx.attrs["expand_times"])
                 if t is not None)
    if len(times) != rank or any(t <= 0 for t in times):
        _fail(op, "expand_times", f"{rank} positive ints (one per dim of X)", list(times))
    return times


def _expand_infer(ctx):
    x_shape = ctx.input_shape("X")
    dtype = ctx.input_dtype("X")
    times = ctx.attr("expand_times")
    if ctx.has_input("ExpandTimes") or not times:
        ctx.set_output("Out", [-1] * len(x_shape), dtype)
        return
    ctx.check(len(times) == len(x_shape), "attribute 'expand_times'",
              f"{len(x_shape)} entries (X's rank)", list(times))
    for t in times:
        ctx.check(t > 0 or (t == -1 and ctx.has_input("expand_times_tensor")),
                  "attribute 'expand_times'", "positive ints (-1 where a tensor holds one)",
                  list(times))
    out = [d * t if d >= 0 and t > 0 else -1 for d, t in zip(x_shape, times)]
    ctx.set_output("Out", out, dtype)
    if out and out[0] == x_shape[0]:
        ctx.share_lod("X", "Out")


def _expand(ctx, x, times_tensor, times_list):
    return ctx.xp.tile(x, _expand_times("expand", ctx, times_tensor, times_list, x.ndim))


def _sum_tiles(xp, dout, x_shape, times):
    """The gradient of tiling: the ``times[i]`` copies along each dim summed."""
    split = []
    for d, t in zip(x_shape, times):
        split.extend([t, d])
    summed = dout.reshape(split).sum(axis=tuple(range(0, 2 * len(times), 2)))
    return xp.ascontiguousarray(summed.reshape(x_shape))


def _expand_grad(ctx, x, times_tensor, times_list, dout):
    times = _expand_times("expand_grad", ctx, times_tensor, times_list, x.ndim)
    return _sum_tiles(ctx.xp, dout, x.shape, times)


_EXPAND_ATTRS = {"expand_times": ("ints", [])}

def_op("expand", inputs=["X", "ExpandTimes?", "expand_times_tensor[]?"], outputs=["Out"],
       attrs=_EXPAND_ATTRS, infer_shape=_expand_infer,
       grad=grad_maker("expand_grad", inputs=["X", "ExpandTimes", "expand_times_tensor"],
                       out_grads=["Out"], in_grads=["X"]),
       kernel=_expand, host_reads="ExpandTimes / expand_times_tensor: Out's shape",
       traits=("infer_from_x",),
       doc="Out = X tiled expand_times[i] times along each dim i: Out.shape[i] = "
           "X.shape[i] * expand_times[i]. ExpandTimes (one int tensor) or "
           "expand_times_tensor (one single-int tensor per dim) override the attribute.")
def_op("expand_grad", inputs=["X", "ExpandTimes?", "expand_times_tensor[]?", "Out@GRAD"],
       outputs=["X@GRAD"], attrs=_EXPAND_ATTRS, infer_shape=grads_like(**{"X@GRAD": "X"}),
       kernel=_expand_grad, host_reads="ExpandTimes / expand_times_tensor: X's copies",
       doc="X@GRAD[j] = sum of Out@GRAD over the expand_times copies of element j.")


def _expand_as_times(op, x_shape, target_shape):
    if len(x_shape) != len(target_shape) or any(
            d <= 0 or t % d for d, t in zip(x_shape, target_shape)):
        _fail(op, "input 'target_tensor'", f"a shape whose dims are multiples of X's "
              f"{list(x_shape)}", list(target_shape))
    return [t // d for d, t in zip(x_shape, target_shape)]


def _expand_as_infer(ctx):
    x_shape, target = ctx.input_shape("X"), ctx.input_shape("target_tensor")
    ctx.check(len(x_shape) == len(target), "input 'target_tensor'",
              f"rank {len(x_shape)} (X's rank)", list(target))
    ctx.set_output("Out", target, ctx.input_dtype("X"))


def_op("expand_as", inputs=["X", "target_tensor"], outputs=["Out"],
       infer_shape=_expand_as_infer,
       grad=grad_maker("expand_as_grad", inputs=["X", "target_tensor"], out_grads=["Out"],
                       in_grads=["X"]),
       kernel=lambda ctx, x, target: ctx.xp.tile(
           x, _expand_as_times("expand_as", x.shape, target.shape)),
       doc="Out = X tiled to target_tensor's shape (each of its dims a multiple of X's).")
def_op("expand_as_grad", inputs=["X", "target_tensor", "Out@GRAD"], outputs=["X@GRAD"],
       infer_shape=grads_like(**{"X@GRAD": "X"}),
       kernel=lambda ctx, x, target, dout: _sum_tiles(
           ctx.xp, dout, x.shape, _expand_as_times("expand_as_grad", x.shape, target.shape)),
       doc="X@GRAD[j] = sum of Out@GRAD over the copies of element j.")


# --- gather_nd / scatter_nd_add --------------------------------------------------------------
def _nd_out_shape(ctx, x_shape, index_shape):
    ctx.check(ctx.input_dtype("Index") in _INT_TYPES, "input 'Index' dtype", "int32 or int64",
              ctx.input_dtype("Index").name)
    # Fluid's own words in brackets: scripts and tests search the message for them
    ctx.check(len(index_shape) >= 1 and 0 <= index_shape[-1] <= len(x_shape),
              "input 'Index'", f"a last dim <= X's rank {len(x_shape)} (Input(Index).shape[-1] "
              "should be no greater than Input(X).rank)", list(index_shape))
    return list(index_shape[:-1]) + list(x_shape[index_shape[-1]:])


def _nd_index(op, index, x_shape):
    """The tuple of index arrays ``x[...]`` takes for Index (last dim: a coordinate)."""
    depth = index.shape[-1]
    if depth > len(x_shape):
        _fail(op, "input 'Index'", f"a last dim <= X's rank {len(x_shape)}", list(index.shape))
    coords = []
    for k in range(depth):
        ids = index[..., k]
        _check_ids(op, f"Index[..., {k}]", ids, x_shape[k])
        coords.append(ids)
    return tuple(coords)


def _gather_nd(ctx, x, index):
    coords = _nd_index("gather_nd", index, x.shape)
    if not coords:  # an empty coordinate picks the whole of X, once per index row
        return ctx.xp.ascontiguousarray(ctx.xp.broadcast_to(x, index.shape[:-1] + x.shape))
    return ctx.xp.ascontiguousarray(x[coords])


def _scatter_nd_into(xp, target, index, updates):
    """``target[index[i]] += updates[i]`` for every coordinate i, repeats summed."""
    depth = index.shape[-1]
    count = int(np.prod(index.shape[:-1], dtype=np.int64))  # (-1 is ambiguous at depth 0)
    flat_index = index.reshape(count, depth)
    rows = updates.reshape((count,) + target.shape[depth:])
    if depth == 0:
        target += rows.sum(axis=0)
        return target
    strides, size = [], 1
    for d in reversed(target.shape[:depth]):
        strides.insert(0, size)
        size *= d
    linear = sum(flat_index[:, k].astype("int64") * strides[k] for k in range(depth))
    view = target.reshape((size,) + target.shape[depth:])
    index_add(xp, view, linear, rows)
    return view.reshape(target.shape)


def _gather_nd_grad(ctx, x, index, dout):
    _nd_index("gather_nd_grad", index, x.shape)
    return _scatter_nd_into(ctx.xp, ctx.xp.zeros(x.shape, dout.dtype), index, dout)


def _gather_nd_infer(ctx):
    out = _nd_out_shape(ctx, ctx.input_shape("X"), ctx.input_shape("Index"))
    ctx.set_output("Out", out, ctx.input_dtype("X"))


def_op("gather_nd", inputs=["X", "Index"], outputs=["Out"], infer_shape=_gather_nd_infer,
       grad=grad_maker("gather_nd_grad", inputs=["X", "Index"], out_grads=["Out"],
                       in_grads=["X"]),
       kernel=_gather_nd,
       doc="Out[i...] = X[Index[i..., 0], ..., Index[i..., k-1]] (k = Index's last dim): "
           "Out.shape = Index.shape[:-1] + X.shape[k:].")
def_op("gather_nd_grad", inputs=["X", "Index", "Out@GRAD"], outputs=["X@GRAD"],
       infer_shape=grads_like(**{"X@GRAD": "X"}), kernel=_gather_nd_grad,
       doc="X@GRAD = zeros like X with each Out@GRAD slice added at its coordinate "
           "(repeated coordinates sum).")


def _scatter_nd_add_infer(ctx):
    x_shape, index_shape = ctx.input_shape("X"), ctx.input_shape("Index")
    want = _nd_out_shape(ctx, x_shape, index_shape)
    got = list(ctx.input_shape("Updates"))
    ctx.check(len(got) == len(want) and all(a == b or a < 0 or b < 0 for a, b in zip(got, want)),
              "input 'Updates'", f"shape Index.shape[:-1] + X.shape[Index.shape[-1]:] = {want} "
              "(Updates has wrong shape)", got)
    ctx.check(ctx.input_dtype("Updates") == ctx.input_dtype("X"), "input 'Updates' dtype",
              ctx.input_dtype("X").name, ctx.input_dtype("Updates").name)
    ctx.set_output("Out", x_shape, ctx.input_dtype("X"))


def _scatter_nd_add(ctx, x, index, updates):
    _nd_index("scatter_nd_add", index, x.shape)
    return _scatter_nd_into(ctx.xp, x.copy(), index, updates)


def _scatter_nd_add_grad(ctx, index, updates, dout):
    coords = _nd_index("scatter_nd_add_grad", index, dout.shape)
    # an empty coordinate added each update row to the whole of X: each gets all of dOut
    dupdates = dout[coords] if coords else ctx.xp.broadcast_to(dout, updates.shape)
    return dout.copy(), ctx.xp.ascontiguousarray(dupdates.reshape(updates.shape))


def _scatter_like_grad_infer(ctx):
    if ctx.has_output("X@GRAD"):
        ctx.set_output("X@GRAD", ctx.input_shape("Out@GRAD"), ctx.input_dtype("Out@GRAD"))
    if ctx.has_output("Updates@GRAD"):
        ctx.set_output("Updates@GRAD", ctx.input_shape("Updates"), ctx.input_dtype("Out@GRAD"))


def_op("scatter_nd_add", inputs=["X", "Index", "Updates"], outputs=["Out"],
       infer_shape=_scatter_nd_add_infer,
       grad=grad_maker("scatter_nd_add_grad", inputs=["Index", "Updates"], out_grads=["Out"],
                       in_grads=["X", "Updates"]),
       kernel=_scatter_nd_add,
       doc="Out = X, then Out[Index[i...]] += Updates[i...] for every coordinate of Index "
           "(repeated coordinates sum). Updates.shape = Index.shape[:-1] + "
           "X.shape[Index.shape[-1]:].")
def_op("scatter_nd_add_grad", inputs=["Index", "Updates", "Out@GRAD"],
       outputs=["X@GRAD?", "Updates@GRAD?"], infer_shape=_scatter_like_grad_infer,
       kernel=_scatter_nd_add_grad,
       doc="X@GRAD = Out@GRAD; Updates@GRAD = gather_nd(Out@GRAD, Index).")


# --- scatter ---------------------------------------------------------------------------------
def _scatter_ids(op, ids, rows):
    flat = ids.reshape(-1)
    if ids.ndim > 2 or (ids.ndim == 2 and ids.shape[1] != 1):
        _fail(op, "input 'Ids'", "shape [N] or [N, 1]", list(ids.shape))
    _check_ids(op, "input 'Ids'", flat, rows)
    return flat


def _scatter_infer(ctx):
    x_shape, updates = ctx.input_shape("X"), ctx.input_shape("Updates")
    ctx.check(ctx.input_dtype("Ids") in _INT_TYPES, "input 'Ids' dtype", "int32 or int64",
              ctx.input_dtype("Ids").name)
    ctx.check(len(updates) == len(x_shape) and all(
        a == b or a < 0 or b < 0 for a, b in zip(updates[1:], x_shape[1:])),
        "input 'Updates'", f"shape [len(Ids)] + {list(x_shape[1:])}", list(updates))
    ctx.set_output("Out", x_shape, ctx.input_dtype("X"))


def _scatter(ctx, x, ids, updates):
    flat = _scatter_ids("scatter", ids, x.shape[0])
    out = x.copy()
    if ctx.attrs["overwrite"]:
        # of repeated ids the last update stays: every write of an id writes its last
        # update (found in a stable sort), so the order a device writes repeats in does not
        # matter
        xp = ctx.xp
        order = xp.argsort(flat, kind="stable")
        ids = flat[order]
        last = xp.searchsorted(ids, ids, side="right") - 1
        out[ids] = updates[order[last]]
        return out
    out[flat] = 0
    return index_add(ctx.xp, out, flat, updates)


def _scatter_grad(ctx, ids, updates, dout):
    flat = _scatter_ids("scatter_grad", ids, dout.shape[0])
    dx = None
    if ctx.wants("X@GRAD"):
        dx = dout.copy()
        dx[flat] = 0
    dupdates = dout[flat].reshape(updates.shape) if ctx.wants("Updates@GRAD") else None
    return dx, dupdates


def_op("scatter", inputs=["X", "Ids", "Updates"], outputs=["Out"],
       attrs={"overwrite": ("bool", True)}, infer_shape=_scatter_infer,
       grad=grad_maker("scatter_grad", inputs=["Ids", "Updates"], out_grads=["Out"],
                       in_grads=["X", "Updates"]),
       kernel=_scatter,
       doc="Out = X with rows replaced: overwrite: Out[Ids[i]] = Updates[i] (of repeated ids "
           "the last one stays); otherwise the rows at Ids are zeroed and "
           "Out[Ids[i]] += Updates[i] (repeats sum). Ids is [N] or [N, 1].")
def_op("scatter_grad", inputs=["Ids", "Updates", "Out@GRAD"],
       outputs=["X@GRAD?", "Updates@GRAD?"], attrs={"overwrite": ("bool", True)},
       infer_shape=_scatter_like_grad_infer, kernel=_scatter_grad,
       doc="X@GRAD = Out@GRAD with the rows at Ids zeroed; Updates@GRAD[i] = "
           "Out@GRAD[Ids[i]].")


# --- strided_slice ---------------------------------------------------------------------------
def strided_ranges(op, in_shape, axes, starts, ends, strides):
    """(axis, start, end, stride) per sliced axis, as Python slices take them: negative
    start/end count from the end; the range must not be empty before clipping (start <
    end for a positive stride, start > end for a negative one); then Python clips."""
    rank = len(in_shape)
    if not len(starts) == len(ends) == len(strides) == len(axes):
        _fail(op, "starts/ends/strides", f"{len(axes)} entries each (one per axis)",
              f"starts={list(starts)}, ends={list(ends)}, strides={list(strides)}")
    ranges = []
    for a, start, end, stride in zip(axes, starts, ends, strides):
        axis = _norm_axis(op, "attribute 'axes'", a, rank)
        dim = in_shape[axis]
        if stride == 0:
            _fail(op, f"stride of axis {axis}", "non-zero", 0)
        start = start + dim if start < 0 else start
        end = end + dim if end < 0 else end
        if (stride > 0 and start >= end) or (stride < 0 and start <= end):
            _fail(op, f"slice of axis {axis} (size {dim})",
                  "start < end for a positive stride, start > end for a negative one",
                  f"start={start}, end={end}, stride={stride}")
        if stride < 0 and end < 0:
            end = None  # reaching past index 0 (a Python slice's -1 would wrap)
        ranges.append((axis, start, end, stride))
    return ranges


def _strided_shape(in_shape, ranges):
    out = list(in_shape)
    for axis, start, end, stride in ranges:
        out[axis] = len(range(*slice(start, end, stride).indices(in_shape[axis])))
    return out


def _decrease(op, shape, decrease_axis):
    gone = {_norm_axis(op, "attribute 'decrease_axis'", a, len(shape)) for a in decrease_axis}
    return [d for i, d in enumerate(shape) if i not in gone]


_STRIDED_TENSORS = ["StartsTensor?", "EndsTensor?", "StridesTensor?", "StartsTensorList[]?",
                    "EndsTensorList[]?", "StridesTensorList[]?"]


def _strided_infer(ctx):
    in_shape = list(ctx.input_shape("Input"))
    axes = ctx.attr("axes")
    flags = ctx.attr("infer_flags")
    # a whole-list tensor hides every bound; a list of tensors only those infer_flags marks
    whole = any(ctx.has_input(s) for s in ("StartsTensor", "EndsTensor", "StridesTensor"))
    out = list(in_shape)
    for i, a in enumerate(axes):
        axis = _norm_axis("strided_slice", "attribute 'axes'", a, len(in_shape))
        if whole or in_shape[axis] < 0 or (i < len(flags) and flags[i] == -1):
            out[axis] = -1
            continue
        (_, start, end, stride), = strided_ranges(
            "strided_slice", in_shape, [axis], [ctx.attr("starts")[i]], [ctx.attr("ends")[i]],
            [ctx.attr("strides")[i]])
        out[axis] = len(range(*slice(start, end, stride).indices(in_shape[axis])))
    out = _decrease("strided_slice", out, ctx.attr("decrease_axis"))
    ctx.set_output("Out", out, ctx.input_dtype("Input"))


def _strided_index(ctx, shape, tensors):
    attrs = ctx.attrs
    if not any(t is not None and (t.__class__ is not list or t) for t in tensors) and \
            -1 not in attrs["infer_flags"]:
        # the bounds in the attributes alone (an index of ints: no tensor to read, no
        # run-time -1 to tell from the last item)
        ranges = strided_ranges(ctx.op.type, shape, attrs["axes"], attrs["starts"],
                                attrs["ends"], attrs["strides"])
        return _strided_slices(shape, ranges), _strided_shape(shape, ranges)
    # every bound tensor read at once (one copy from a device; the op declares host_reads)
    starts_t, ends_t, strides_t, starts_l, ends_l, strides_l = host_int_lists(*tensors)

    def pick(tensor, tensor_list, name):
        return next(v for v in (tensor, tensor_list, attrs[name]) if v is not None)

    starts, ends = pick(starts_t, starts_l, "starts"), pick(ends_t, ends_l, "ends")
    strides = pick(strides_t, strides_l, "strides")
    # x[i] with a run-time i of -1 (start -1, end 0): the last item, stepping either way
    ends = [(2 ** 31 - 1 if stride > 0 else -2) if picks_last else end for end, stride, picks_last
            in zip(ends, strides, last_item_picks(starts, ends, attrs))]
    ranges = strided_ranges(ctx.op.type, shape, attrs["axes"], starts, ends, strides)
    return _strided_slices(shape, ranges), _strided_shape(shape, ranges)


def _strided_slices(shape, ranges):
    index = [slice(None)] * len(shape)
    for axis, start, end, stride in ranges:
        index[axis] = slice(start, end, stride)
    return tuple(index)


#: (X's shape, axes, starts, ends, strides, decrease_axis) -> (index, Out's shape) of the
#: strided slices whose bounds are attributes alone: worked out once (as shape's
#: _ATTR_SLICES keeps slice's)
_ATTR_STRIDED = {}


def _strided_slice(ctx, x, *tensors):
    attrs = ctx.attrs
    if not any(t is not None and (t.__class__ is not list or t) for t in tensors) and \
            -1 not in attrs["infer_flags"]:
        key = (x.shape, *attrs["axes"], None, *attrs["starts"], None, *attrs["ends"], None,
               *attrs["strides"], None, *attrs["decrease_axis"])
        found = _ATTR_STRIDED.get(key)
        if found is None:
            index, sliced = _strided_index(ctx, x.shape, tensors)
            found = remember(_ATTR_STRIDED, key, (index, tuple(
                _decrease("strided_slice", sliced, attrs["decrease_axis"]))))
        return ctx.xp.ascontiguousarray(x[found[0]].reshape(found[1]))
    index, sliced = _strided_index(ctx, x.shape, tensors)
    out = x[index].reshape(_decrease("strided_slice", sliced, attrs["decrease_axis"]))
    return ctx.xp.ascontiguousarray(out)


def _strided_slice_grad(ctx, x, *rest):
    *tensors, dout = rest
    index, sliced = _strided_index(ctx, x.shape, tensors)
    dx = ctx.xp.zeros(x.shape, dtype=dout.dtype)
    dx[index] = dout.reshape(sliced)
    return dx


_STRIDED_ATTRS = {"axes": ("ints", []), "starts": ("ints", []), "ends": ("ints", []),
                  "strides": ("ints", []), "infer_flags": ("ints", []),
                  "decrease_axis": ("ints", [])}

def_op("strided_slice", inputs=["Input"] + _STRIDED_TENSORS, outputs=["Out"],
       attrs=_STRIDED_ATTRS, infer_shape=_strided_infer, traits=("infer_from_x",),
       grad=grad_maker("strided_slice_grad",
                       inputs=["Input"] + [s.rstrip("?[]") for s in _STRIDED_TENSORS],
                       out_grads=["Out"], in_grads=["Input"]),
       kernel=_strided_slice,
       host_reads="Starts/Ends/Strides Tensor(List): the bounds of the slice",
       doc="Out = Input[starts[i]:ends[i]:strides[i]] along each axes[i], with Python's "
           "slice rules (negative indices count from the end, clipped to the dim); the "
           "range may not be empty; the *Tensor / *TensorList inputs override the "
           "attributes; then the decrease_axis dims are removed.")
def_op("strided_slice_grad", inputs=["Input"] + _STRIDED_TENSORS + ["Out@GRAD"],
       outputs=["Input@GRAD"], attrs=_STRIDED_ATTRS,
       infer_shape=grads_like(**{"Input@GRAD": "Input"}), kernel=_strided_slice_grad,
       host_reads="Starts/Ends/Strides Tensor(List): the bounds of the slice",
       doc="Input@GRAD = zeros like Input with the strided region set to Out@GRAD.")


# --- multiplex -------------------------------------------------------------------------------
def _multiplex_infer(ctx):
    shapes = ctx.input_shapes("X")
    ctx.check(len(shapes) >= 2, "input 'X'", "at least 2 tensors", len(shapes))
    ctx.check(ctx.input_dtype("Ids") in _INT_TYPES, "input 'Ids' dtype", "int32 or int64",
              ctx.input_dtype("Ids").name)
    for k, shape in enumerate(shapes[1:], 1):
        ctx.check(len(shape) == len(shapes[0]) and all(
            a == b or a < 0 or b < 0 for a, b in zip(shape, shapes[0])),
            f"shape of X[{k}]", f"{list(shapes[0])} (X[0]'s)", list(shape))
    ctx.set_output("Out", shapes[0], ctx.input_dtype("X"))


def _multiplex_rows(op, ids, n, count):
    flat = ids.reshape(-1)
    if flat.size != n:
        _fail(op, "input 'Ids'", f"{n} ids (one per row of X)", list(ids.shape))
    _check_ids(op, "input 'Ids'", flat, count)
    return flat


def _multiplex(ctx, ids, xs):
    flat = _multiplex_rows("multiplex", ids, xs[0].shape[0], len(xs))
    stacked = ctx.xp.stack(xs)
    return stacked[flat, ctx.xp.arange(flat.size)]


def _multiplex_grad(ctx, ids, dout):
    count = len(ctx.output_names("X@GRAD"))
    flat = _multiplex_rows("multiplex_grad", ids, dout.shape[0], count)
    grads = []
    for k in range(count):
        mask = (flat == k).reshape((-1,) + (1,) * (dout.ndim - 1))
        grads.append(ctx.xp.where(mask, dout, ctx.xp.zeros_like(dout)))
    return grads


def _multiplex_grad_infer(ctx):
    n = len(ctx.op.outputs.get("X@GRAD", ()))
    ctx.set_outputs("X@GRAD", [ctx.input_shape("Out@GRAD")] * n, ctx.input_dtype("Out@GRAD"))


def_op("multiplex", inputs=["Ids", "X[]"], outputs=["Out"], infer_shape=_multiplex_infer,
       grad=grad_maker("multiplex_grad", inputs=["Ids"], out_grads=["Out"], in_grads=["X"]),
       kernel=_multiplex,
       doc="Out[i] = X[Ids[i]][i]: row i taken from the candidate tensor Ids[i] names "
           "(Ids: [N, 1]).")
def_op("multiplex_grad", inputs=["Ids", "Out@GRAD"], outputs=["X@GRAD[]?"],
       infer_shape=_multiplex_grad_infer, kernel=_multiplex_grad,
       doc="X@GRAD[k][i] = Out@GRAD[i] where Ids[i] == k, else 0.")


# --- shard_index -----------------------------------------------------------------------------
def _shard_index_infer(ctx):
    ctx.check(ctx.input_dtype("X") in _INT_TYPES, "input 'X' dtype", "int32 or int64",
              ctx.input_dtype("X").name)
    nshards, shard_id = ctx.attr("nshards"), ctx.attr("shard_id")
    ctx.check(nshards > 0, "attribute 'nshards'", "> 0", nshards)
    ctx.check(0 <= shard_id < nshards, "attribute 'shard_id'", f"in [0, {nshards})", shard_id)
    ctx.check(ctx.attr("index_num") > 0, "attribute 'index_num'", "> 0", ctx.attr("index_num"))
    ctx.set_output("Out", ctx.input_shape("X"), ctx.input_dtype("X"))


def _shard_index(ctx, x):
    a = ctx.attrs
    _check_ids("shard_index", "input 'X'", x, a["index_num"])
    shard_size = (a["index_num"] + a["nshards"] - 1) // a["nshards"]
    mine = x // shard_size == a["shard_id"]
    return ctx.xp.where(mine, x - a["shard_id"] * shard_size,
                        ctx.xp.asarray(a["ignore_value"], dtype=x.dtype)).astype(x.dtype)


def_op("shard_index", inputs=["X"], outputs=["Out"],
       attrs={"index_num": ("int", 0), "nshards": ("int", 0), "shard_id": ("int", 0),
              "ignore_value": ("int", -1)},
       infer_shape=_shard_index_infer, share_lod=("X", ["Out"]), grad=no_gradient,
       kernel=_shard_index,
       doc="With shard_size = ceil(index_num / nshards): Out = X - shard_id * shard_size "
           "where X // shard_size == shard_id, else ignore_value.")
