"""Math op family beyond math.py: shapes as tensors, scans, sorting and searching, logical
reductions, finiteness tests, reversing and rolling, gathers along a dim, and unique values.

Each op follows Paddle's slots, attributes and output types: ``shape`` gives int32,
``size`` int64, ``where_index`` the int64 coordinates of the true elements, ``argsort`` the
sorted values and their int64 indices, ``unique`` the values in order of first appearance.
"""
import numpy as np

from ..errors import InvalidArgument, expected
from ..framework.dtypes import VarType, to_numpy_dtype
from .creation import dtype_attr
from .registry import def_op, grad_maker, grads_like, no_gradient, same_shape


def _axis(ctx_or_op, axis, rank, what="attribute 'axis'"):
    """``axis`` made non-negative, refused outside [-rank, rank)."""
    if not -max(rank, 1) <= axis < max(rank, 1):
        raise InvalidArgument(expected(ctx_or_op, what, f"in [{-rank}, {rank})", axis))
    return axis + rank if axis < 0 else axis


def _host(xp, a):
    """``a`` as a NumPy array (a CuPy array is copied to the host)."""
    return xp.asnumpy(a) if hasattr(xp, "asnumpy") else np.asarray(a)


# --- shape and size: a tensor's dims as data -----------------------------------------------------
def_op("shape", inputs=["Input"], outputs=["Out"],
       infer_shape=lambda ctx: ctx.set_output("Out", (len(ctx.input_shape("Input")),),
                                              VarType.INT32),
       kernel=lambda ctx, x: ctx.xp.asarray(np.array(x.shape, dtype=np.int32)),
       grad=no_gradient, doc="Out = the dims of Input, an int32 vector of its rank.")

def_op("size", inputs=["Input"], outputs=["Out"],
       infer_shape=lambda ctx: ctx.set_output("Out", (1,), VarType.INT64),
       kernel=lambda ctx, x: ctx.xp.asarray(np.array([x.size], dtype=np.int64)),
       grad=no_gradient, doc="Out = [the number of elements of Input] (int64).")


# --- where_index: coordinates of the true elements -----------------------------------------------
def _where_index(ctx, cond):
    coords = np.argwhere(_host(ctx.xp, cond))
    return ctx.xp.asarray(coords.astype(np.int64).reshape(-1, cond.ndim))


def_op("where_index", inputs=["Condition"], outputs=["Out"],
       infer_shape=lambda ctx: ctx.set_output("Out", (-1, len(ctx.input_shape("Condition"))),
                                              VarType.INT64),
       kernel=_where_index, grad=no_gradient,
       doc="Out = the coordinates of the non-zero (true) elements of Condition, one int64 row "
           "of rank entries each, in row-major order: shape [count, rank].")


# --- cumsum --------------------------------------------------------------------------------------
def _cumsum(ctx, x):
    attrs, xp = ctx.attrs, ctx.xp
    if attrs["flatten"]:
        x = x.reshape(-1)
    axis = _axis("cumsum", attrs["axis"], x.ndim)
    if attrs["reverse"]:
        x = xp.flip(x, axis)
    out = xp.cumsum(x, axis=axis, dtype=x.dtype)
    if attrs["exclusive"]:  # shift by one: the first sum is 0
        out = out - x
    if attrs["reverse"]:
        out = xp.flip(out, axis)
    return xp.ascontiguousarray(out)


def _cumsum_infer(ctx):
    shape = ctx.input_shape("X")
    if ctx.attr("flatten"):
        n = int(np.prod(shape)) if all(d >= 0 for d in shape) else -1
        ctx.set_output("Out", (n,), ctx.input_dtype("X"))
        return
    _axis("cumsum", ctx.attr("axis"), len(shape))
    same_shape("X", "Out")(ctx)


def _cumsum_grad(g):
    # the gradient of a running sum is the running sum of dOut the other way round
    attrs = dict(g.attrs)
    attrs["reverse"] = not attrs.get("reverse", False)
    return [g.op("cumsum", {"X": g.output_grad("Out")}, {"Out": g.input_grad("X")}, attrs)]


def_op("cumsum", inputs=["X"], outputs=["Out"],
       attrs={"axis": ("int", -1), "flatten": ("bool", False), "exclusive": ("bool", False),
              "reverse": ("bool", False)},
       infer_shape=_cumsum_infer, kernel=_cumsum, grad=_cumsum_grad,
       doc="Out[.., i, ..] = sum of X[.., j, ..] for j <= i along ``axis`` (j < i when "
           "exclusive; from the end when reverse; over X flattened when flatten). "
           "dX = cumsum of dOut in the opposite direction (a cumsum op).")


# --- argsort -------------------------------------------------------------------------------------
def _sort_order(xp, x, axis, descending):
    if not descending:
        return xp.argsort(x, axis=axis, kind="stable")
    if x.dtype.kind in "fi":  # equal values keep their order when sorted downwards too
        return xp.argsort(-x, axis=axis, kind="stable")
    return xp.flip(xp.argsort(x, axis=axis, kind="stable"), axis)


def _argsort(ctx, x):
    xp, attrs = ctx.xp, ctx.attrs
    axis = _axis("argsort", attrs["axis"], x.ndim)
    order = _sort_order(xp, x, axis, attrs["descending"])
    return xp.take_along_axis(x, order, axis), order.astype(np.int64)


def _argsort_infer(ctx):
    shape = ctx.input_shape("X")
    _axis("argsort", ctx.attr("axis"), len(shape))
    ctx.set_output("Out", shape, ctx.input_dtype("X"))
    ctx.set_output("Indices", shape, VarType.INT64)


def _argsort_grad(ctx, indices, x, dout):
    xp = ctx.xp
    axis = _axis("argsort", ctx.attrs["axis"], x.ndim)
    dx = xp.zeros_like(x, dtype=dout.dtype)
    xp.put_along_axis(dx, indices, dout, axis)
    return dx


_ARGSORT_ATTRS = {"axis": ("int", -1), "descending": ("bool", False)}
def_op("argsort", inputs=["X"], outputs=["Out", "Indices"], attrs=_ARGSORT_ATTRS,
       infer_shape=_argsort_infer, kernel=_argsort,
       grad=grad_maker("argsort_grad", inputs=["X"], outputs=["Indices"], out_grads=["Out"]),
       doc="Out = X sorted along ``axis`` (ascending, or descending), Indices = where each "
           "sorted value was (int64; equal values keep their order). dX[Indices] = dOut.")
def_op("argsort_grad", inputs=["Indices", "X", "Out@GRAD"], outputs=["X@GRAD"],
       attrs=_ARGSORT_ATTRS, infer_shape=grads_like(**{"X@GRAD": "X"}), kernel=_argsort_grad,
       doc="Gradient of argsort: dOut scattered back to where the values came from.")


# --- reduce_all / reduce_any ---------------------------------------------------------------------
def _logical_axes(op_type, rank, attrs):
    dims = list(attrs["dim"] or [])
    if attrs["reduce_all"] or not dims or rank == 0:
        return tuple(range(rank))
    return tuple(sorted({_axis(op_type, d, rank, "attribute 'dim'") for d in dims}))


def _logical_reduce(type, fn, word):
    def infer(ctx):
        shape = list(ctx.input_shape("X"))
        axes = _logical_axes(type, len(shape), ctx.attrs())
        if ctx.attr("keep_dim"):
            out = [1 if i in axes else d for i, d in enumerate(shape)]
        else:
            out = [d for i, d in enumerate(shape) if i not in axes]
        ctx.set_output("Out", tuple(out), VarType.BOOL)

    def kernel(ctx, x):
        axes = _logical_axes(type, x.ndim, ctx.attrs)
        return ctx.xp.asarray(fn(x.astype(bool, copy=False), axis=axes,
                                 keepdims=ctx.attrs["keep_dim"]))

    def_op(type, inputs=["X"], outputs=["Out"],
           attrs={"dim": ("ints", [0]), "keep_dim": ("bool", False),
                  "reduce_all": ("bool", False)},
           infer_shape=infer, kernel=kernel, grad=no_gradient,
           doc=f"Out = logical {word} of X over ``dim`` (every dim when reduce_all or dim is "
               f"empty), a bool tensor; keep_dim keeps the reduced dims as 1.")


_logical_reduce("reduce_all", np.all, "and")
_logical_reduce("reduce_any", np.any, "or")


# --- isinf / isnan / isfinite: one bool for the whole tensor -------------------------------------
def _overflow_op(type, test, doc):
    def kernel(ctx, x):
        if x.dtype.kind not in "fc":
            found = type == "isfinite"  # integers are finite and never inf or nan
        else:
            found = bool(test(ctx.xp, x))
        return ctx.xp.asarray(np.array([found]))

    def_op(type, inputs=["X"], outputs=["Out"],
           infer_shape=lambda ctx: ctx.set_output("Out", (1,), VarType.BOOL),
           kernel=kernel, grad=no_gradient, doc=doc)


_overflow_op("isinf", lambda xp, x: xp.isinf(x).any(),
             "Out = [True] when any element of X is +-inf (bool, shape [1]).")
_overflow_op("isnan", lambda xp, x: xp.isnan(x).any(),
             "Out = [True] when any element of X is NaN (bool, shape [1]).")
_overflow_op("isfinite", lambda xp, x: xp.isfinite(x).all(),
             "Out = [True] when every element of X is finite (bool, shape [1]).")


# --- reverse, flip and roll ----------------------------------------------------------------------
def _axes_of(op_type, attr_name, axes, rank):
    return tuple(_axis(op_type, a, rank, f"attribute '{attr_name}'") for a in axes)


def _flipping_op(type, attr_name, doc):
    def infer(ctx):
        axes = ctx.attr(attr_name)
        ctx.check(bool(axes), f"attribute '{attr_name}'", "at least one axis", axes)
        _axes_of(type, attr_name, axes, len(ctx.input_shape("X")))
        same_shape("X", "Out")(ctx)

    def kernel(ctx, x):
        axes = _axes_of(type, attr_name, ctx.attrs[attr_name], x.ndim)
        return ctx.xp.ascontiguousarray(ctx.xp.flip(x, axes))

    def grad(g):  # flipping twice is the identity: the gradient is the same flip of dOut
        return [g.op(type, {"X": g.output_grad("Out")}, {"Out": g.input_grad("X")})]

    def_op(type, inputs=["X"], outputs=["Out"], attrs={attr_name: ("ints", [])},
           infer_shape=infer, kernel=kernel, grad=grad, doc=doc)


_flipping_op("reverse", "axis", "Out = X reversed along each dim in ``axis``; dX = dOut "
                                "reversed the same way (a reverse op).")
_flipping_op("flip", "dims", "Out = X reversed along each dim in ``dims``; dX = dOut flipped "
                             "the same way (a flip op).")


def _roll_shift(ctx, x, sign):
    attrs, xp = ctx.attrs, ctx.xp
    shifts = [sign * s for s in attrs["shifts"]]
    dims = list(attrs["dims"])
    if not dims:  # no dims: roll the flattened tensor
        return xp.roll(x.reshape(-1), shifts[0]).reshape(x.shape)
    return xp.roll(x, shifts, _axes_of("roll", "dims", dims, x.ndim))


def _roll_infer(ctx):
    shifts, dims = ctx.attr("shifts"), ctx.attr("dims")
    ctx.check(len(shifts) == len(dims) or (not dims and len(shifts) == 1), "attribute 'shifts'",
              f"one shift per dim ({len(dims)})", shifts)
    _axes_of("roll", "dims", dims, len(ctx.input_shape("X")))
    same_shape("X", "Out")(ctx)


_ROLL_ATTRS = {"shifts": ("longs", []), "dims": ("longs", [])}
def_op("roll", inputs=["X"], outputs=["Out"], attrs=_ROLL_ATTRS, infer_shape=_roll_infer,
       kernel=lambda ctx, x: _roll_shift(ctx, x, 1),
       grad=grad_maker("roll_grad", inputs=["X"], out_grads=["Out"]),
       doc="Out = X shifted by shifts[i] along dims[i], elements past the end coming back at "
           "the start (the flattened tensor when dims is empty). dX = dOut rolled back.")
def_op("roll_grad", inputs=["X", "Out@GRAD"], outputs=["X@GRAD"], attrs=_ROLL_ATTRS,
       infer_shape=grads_like(**{"X@GRAD": "X"}),
       kernel=lambda ctx, x, dout: _roll_shift(ctx, dout, -1), doc="Gradient of roll.")


# --- index_select and index_sample ---------------------------------------------------------------
def _index_select_infer(ctx):
    shape = list(ctx.input_shape("X"))
    dim = _axis("index_select", ctx.attr("dim"), len(shape), "attribute 'dim'")
    index = ctx.input_shape("Index")
    ctx.check(len(index) == 1 or (len(index) == 2 and index[1] == 1), "input 'Index'",
              "a 1-D tensor", list(index))
    shape[dim] = index[0]
    ctx.set_output("Out", tuple(shape), ctx.input_dtype("X"))


def _index_select(ctx, x, index):
    dim = _axis("index_select", ctx.attrs["dim"], x.ndim, "attribute 'dim'")
    index = index.reshape(-1)
    if index.size and (index.min() < 0 or index.max() >= x.shape[dim]):
        raise InvalidArgument(expected("index_select", "input 'Index'",
                                       f"values in [0, {x.shape[dim]})",
                                       f"{int(index.min())} .. {int(index.max())}"))
    return ctx.xp.take(x, index, axis=dim)


def _index_select_grad(ctx, x, index, dout):
    xp = ctx.xp
    dim = _axis("index_select", ctx.attrs["dim"], x.ndim, "attribute 'dim'")
    dx = xp.zeros(x.shape, dtype=dout.dtype)
    moved = xp.moveaxis(dx, dim, 0)  # a view: adding into it fills dx
    xp.add.at(moved, index.reshape(-1), xp.moveaxis(dout, dim, 0))
    return dx


def_op("index_select", inputs=["X", "Index"], outputs=["Out"], attrs={"dim": ("int", 0)},
       infer_shape=_index_select_infer, kernel=_index_select,
       grad=grad_maker("index_select_grad", inputs=["X", "Index"], out_grads=["Out"]),
       doc="Out = X's slices Index[0], Index[1], ... along ``dim`` (Index int32/int64, 1-D). "
           "dX = dOut's slices added back at their indices (repeats add up).")
def_op("index_select_grad", inputs=["X", "Index", "Out@GRAD"], outputs=["X@GRAD"],
       attrs={"dim": ("int", 0)}, infer_shape=grads_like(**{"X@GRAD": "X"}),
       kernel=_index_select_grad, doc="Gradient of index_select.")


def _index_sample_infer(ctx):
    x, index = ctx.input_shape("X"), ctx.input_shape("Index")
    ctx.check(len(x) == 2, "input 'X'", "a 2-D tensor", list(x))
    ctx.check(len(index) == 2, "input 'Index'", "a 2-D tensor", list(index))
    ctx.check(x[0] < 0 or index[0] < 0 or x[0] == index[0], "input 'Index'",
              f"as many rows as X ({x[0]})", index[0])
    ctx.set_output("Out", tuple(index), ctx.input_dtype("X"))


def _index_sample(ctx, x, index):
    if index.size and (index.min() < 0 or index.max() >= x.shape[1]):
        raise InvalidArgument(expected("index_sample", "input 'Index'",
                                       f"values in [0, {x.shape[1]})",
                                       f"{int(index.min())} .. {int(index.max())}"))
    return ctx.xp.take_along_axis(x, index.astype(np.int64), 1)


def _index_sample_grad(ctx, x, index, dout):
    xp = ctx.xp
    dx = xp.zeros(x.shape, dtype=dout.dtype)
    rows = xp.arange(x.shape[0])[:, None]
    xp.add.at(dx, (xp.broadcast_to(rows, index.shape), index.astype(np.int64)), dout)
    return dx


def_op("index_sample", inputs=["X", "Index"], outputs=["Out"],
       infer_shape=_index_sample_infer, kernel=_index_sample,
       grad=grad_maker("index_sample_grad", inputs=["X", "Index"], out_grads=["Out"]),
       doc="Out[i, j] = X[i, Index[i, j]] (X [N, M], Index [N, K] int32/int64 -> Out [N, K]). "
           "dX[i, Index[i, j]] += dOut[i, j].")
def_op("index_sample_grad", inputs=["X", "Index", "Out@GRAD"], outputs=["X@GRAD"],
       infer_shape=grads_like(**{"X@GRAD": "X"}), kernel=_index_sample_grad,
       doc="Gradient of index_sample.")


# --- unique and unique_with_counts (Fluid 1.8: order of first appearance) ------------------------
def _first_appearance(x):
    """The distinct values of 1-D ``x`` in the order they first appear, the position of
    each element's value among them, and how often each occurs."""
    values, first, inverse, counts = np.unique(x, return_index=True, return_inverse=True,
                                               return_counts=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return values[order], rank[inverse.reshape(-1)], counts[order]


def _unique_infer(ctx, with_counts):
    shape = ctx.input_shape("X")
    ctx.check(len(shape) == 1, "input 'X'", "a 1-D tensor", list(shape))
    index_type = dtype_attr(ctx, "dtype")
    ctx.check(index_type in (VarType.INT32, VarType.INT64), "attribute 'dtype'",
              "int32 or int64", index_type.name)
    ctx.set_output("Out", (-1,), ctx.input_dtype("X"))
    ctx.set_output("Index", tuple(shape), index_type)
    if with_counts:
        ctx.set_output("Count", (-1,), index_type)


def _unique(ctx, x, with_counts):
    values, index, counts = _first_appearance(_host(ctx.xp, x).reshape(-1))
    index_type = to_numpy_dtype(ctx.attrs["dtype"])
    xp = ctx.xp
    outs = (xp.asarray(values), xp.asarray(index.astype(index_type)))
    return outs + (xp.asarray(counts.astype(index_type)),) if with_counts else outs


def_op("unique", inputs=["X"], outputs=["Out", "Index"],
       attrs={"dtype": ("int", int(VarType.INT32))},
       infer_shape=lambda ctx: _unique_infer(ctx, False),
       kernel=lambda ctx, x: _unique(ctx, x, False), grad=no_gradient,
       doc="Out = the distinct values of 1-D X in the order they first appear; Index[i] = the "
           "position of X[i] in Out (of type ``dtype``), so Out[Index] == X.")
def_op("unique_with_counts", inputs=["X"], outputs=["Out", "Index", "Count"],
       attrs={"dtype": ("int", int(VarType.INT32))},
       infer_shape=lambda ctx: _unique_infer(ctx, True),
       kernel=lambda ctx, x: _unique(ctx, x, True), grad=no_gradient,
       doc="unique, and Count[k] = how many elements of X equal Out[k].")
