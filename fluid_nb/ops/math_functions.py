"""Tensor functions that are not elementwise: shapes as tensors, scans, sorting and
searching, logical reductions, finiteness tests, reversing and rolling, gathers along a
dim, and unique values.

Each op follows Paddle's slots, attributes and output types: ``shape`` gives int32,
``size`` int64, ``where_index`` the int64 coordinates of the true elements, ``argsort`` the
sorted values and their int64 indices, ``unique`` the values in order of first appearance.
"""
import numpy as np

from ..errors import InvalidArgument, expected
from ..tensor.dtypes import VarType, to_numpy_dtype
from ..tensor.transfer import to_host
from .creation import dtype_attr
from ..tensor.tensor import index_add
from ..framework.registry import def_op, grad_maker, grads_like, no_gradient, same_shape


def _axis(ctx_or_op, axis, rank, what="attribute 'axis'"):
    """``axis`` made non-negative, refused outside [-rank, rank)."""
    if not -max(rank, 1) <= axis < max(rank, 1):
        raise InvalidArgument(expected(ctx_or_op, what, f"in [{-rank}, {rank})", axis))
    return axis + rank if axis < 0 else axis


def _host(xp, a):
    """``a`` as a NumPy array (a device array is copied to the host)."""
    return to_host(a)


# --- shape and size: a tensor's dims as data -----------------------------------------------------
def_op("shape", inputs=["Input"], outputs=["Out"],
       infer_shape=lambda ctx: ctx.set_output("Out", (len(ctx.input_shape("Input")),),
                                              VarType.INT32),
       kernel=lambda ctx, x: ctx.xp.asarray(np.array(x.shape, dtype=np.int32)),
       grad=no_gradient, traits=("infer_from_x",), doc="Out = the dims of Input, an int32 vector of its rank.")

def_op("size", inputs=["Input"], outputs=["Out"],
       infer_shape=lambda ctx: ctx.set_output("Out", (1,), VarType.INT64),
       kernel=lambda ctx, x: ctx.xp.asarray(np.array([x.size], dtype=np.int64)),
       grad=no_gradient, traits=("infer_from_x",), doc="Out = [the number of elements of Input] (int64).")


# --- where_index: coordinates of the true elements -----------------------------------------------
def _where_index(ctx, cond):
    coords = np.argwhere(_host(ctx.xp, cond))
    return ctx.xp.asarray(coords.astype(np.int64).reshape(-1, cond.ndim))


def_op("where_index", inputs=["Condition"], outputs=["Out"],
       infer_shape=lambda ctx: ctx.set_output("Out", (-1, len(ctx.input_shape("Condition"))),
                                              VarType.INT64),
       kernel=_where_index, grad=no_gradient, traits=("infer_from_x",),
       host_reads="Condition: the number of true elements is Out's length",
       doc="Out = the coordinates of the non-zero (true) elements of Condition, one int64 row "
           "of rank entries each, in row-major order: shape [count, rank].")


# --- cumsum --------------------------------------------------------------------------------------
def _cumsum(ctx, x):
    attrs, xp = ctx.attrs, ctx.xp
    if attrs.get("flatten"):
        x = x.reshape(-1)
    axis = _axis("cumsum", attrs["axis"], x.ndim)
    if attrs["reverse"]:
        x = xp.flip(x, axis)
    out = x.cumsum(axis=axis, dtype=x.dtype)  # (the method: xp.cumsum is Python around it)
    if attrs["exclusive"]:  # shift by one: the first sum is 0
        out = out - x
    if attrs["reverse"]:
        out = xp.flip(out, axis)
    return xp.ascontiguousarray(out)


def _cumsum_infer(ctx):
    shape = ctx.input_shape("X")
    if ctx.attrs().get("flatten"):
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
       # Paddle 2's flatten stays undeclared: read when a program has it, never added to a
       # Fluid 1.x program (whose cumsum has no such attribute)
       attrs={"axis": ("int", -1), "exclusive": ("bool", False), "reverse": ("bool", False)},
       infer_shape=_cumsum_infer, kernel=_cumsum, grad=_cumsum_grad, traits=("infer_from_x",),
       doc="Out[.., i, ..] = sum of X[.., j, ..] for j <= i along ``axis`` (j < i when "
           "exclusive; from the end when reverse; over X flattened when flatten). "
           "dX = cumsum of dOut in the opposite direction (a cumsum op).")


# --- argsort -------------------------------------------------------------------------------------
def _sort_order(xp, x, axis, descending):
    """Where each sorted value is along ``axis``; equal values keep their order. NaN is the
    largest value, as Paddle's comparator has it: last ascending, first descending."""
    if not descending:
        return xp.argsort(x, axis=axis, kind="stable")
    if x.dtype.kind == "i":
        return xp.argsort(-x, axis=axis, kind="stable")
    if x.dtype.kind != "f":
        return xp.flip(xp.argsort(x, axis=axis, kind="stable"), axis)
    order = xp.argsort(-x, axis=axis, kind="stable")  # NaN last: moved to the front
    numbers = (~xp.isnan(xp.take_along_axis(x, order, axis))).astype(np.int8)
    return xp.take_along_axis(order, xp.argsort(numbers, axis=axis, kind="stable"), axis)


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
    # Indices is a permutation along the axis: its inverse gathers dOut back into place
    return xp.take_along_axis(dout, xp.argsort(indices, axis=axis), axis)


_ARGSORT_ATTRS = {"axis": ("int", -1), "descending": ("bool", False)}
def_op("argsort", inputs=["X"], outputs=["Out", "Indices"], attrs=_ARGSORT_ATTRS,
       infer_shape=_argsort_infer, kernel=_argsort, traits=("infer_from_x",),
       grad=grad_maker("argsort_grad", inputs=["X"], outputs=["Indices"], out_grads=["Out"]),
       doc="Out = X sorted along ``axis`` (ascending, or descending), Indices = where each "
           "sorted value was (int64; equal values keep their order; NaN is the largest "
           "value). dX[Indices] = dOut.")
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
           # the attributes of Paddle's shared reduce op maker (the dtypes unused here)
           attrs={"dim": ("ints", [0]), "keep_dim": ("bool", False),
                  "reduce_all": ("bool", False), "in_dtype": ("int", -1),
                  "out_dtype": ("int", -1)},
           infer_shape=infer, kernel=kernel, grad=no_gradient,
           doc=f"Out = logical {word} of X over ``dim`` (every dim when reduce_all or dim is "
               f"empty), a bool tensor; keep_dim keeps the reduced dims as 1.")


_logical_reduce("reduce_all", np.all, "and")
_logical_reduce("reduce_any", np.any, "or")


# --- isinf / isnan / isfinite: one bool for the whole tensor -------------------------------------
def _overflow_op(type, test, doc):
    def kernel(ctx, x):
        if x.dtype.kind not in "fc":  # integers are finite and never inf or nan
            return ctx.xp.full((1,), type == "isfinite", dtype=bool)
        return test(ctx.xp, x).reshape(1)  # the answer stays where X is

    def_op(type, inputs=["X"], outputs=["Out"],
           infer_shape=lambda ctx: ctx.set_output("Out", (1,), VarType.BOOL),
           kernel=kernel, grad=no_gradient, doc=doc, traits=("infer_from_x",))


_overflow_op("isinf", lambda xp, x: xp.isinf(x).any(),
             "Out = [True] when any element of X is +-inf (bool, shape [1]).")
_overflow_op("isnan", lambda xp, x: xp.isnan(x).any(),
             "Out = [True] when any element of X is NaN (bool, shape [1]).")
_overflow_op("isfinite", lambda xp, x: xp.isfinite(x).all(),
             "Out = [True] when every element of X is finite (bool, shape [1]).")


# --- reverse, flip and roll ----------------------------------------------------------------------
def _axes_of(op_type, attr_name, axes, rank):
    return tuple(_axis(op_type, a, rank, f"attribute '{attr_name}'") for a in axes)


def _flip_axes(attrs, attr_name, alias):
    """The axes to flip: ``attr_name``, or (a program of later Paddle) ``alias``."""
    axes = attrs.get(attr_name)
    if not axes and alias is not None:
        axes = attrs.get(alias)
    return list(axes or [])


def _flipping_op(type, attr_name, doc, alias=None):
    def infer(ctx):
        axes = _flip_axes(ctx.attrs(), attr_name, alias)
        ctx.check(bool(axes), f"attribute '{attr_name}'", "at least one axis", axes)
        _axes_of(type, attr_name, axes, len(ctx.input_shape("X")))
        same_shape("X", "Out")(ctx)

    def kernel(ctx, x):
        axes = _axes_of(type, attr_name, _flip_axes(ctx.attrs, attr_name, alias), x.ndim)
        return ctx.xp.ascontiguousarray(ctx.xp.flip(x, axes))

    def grad(g):  # flipping twice is the identity: the gradient is the same flip of dOut
        return [g.op(type, {"X": g.output_grad("Out")}, {"Out": g.input_grad("X")})]

    # the alias stays undeclared: it rides along as an extra attribute when a program has
    # it, and a Fluid 1.x program never gains it
    def_op(type, inputs=["X"], outputs=["Out"], attrs={attr_name: ("ints", [])},
           infer_shape=infer, kernel=kernel, grad=grad, doc=doc, traits=("infer_from_x",))


_flipping_op("reverse", "axis", "Out = X reversed along each dim in ``axis``; dX = dOut "
                                "reversed the same way (a reverse op).")
_flipping_op("flip", "dims", "Out = X reversed along each dim in ``dims`` (``axis`` in "
                             "programs of Paddle 2); dX = dOut flipped the same way (a flip "
                             "op).", alias="axis")


def _roll_dims(attrs):
    # Paddle 2 names the attribute axis
    return list(attrs.get("dims") or attrs.get("axis") or [])


def _roll_shift(ctx, x, sign):
    attrs, xp = ctx.attrs, ctx.xp
    shifts = [sign * s for s in attrs["shifts"]]
    dims = _roll_dims(attrs)
    if not dims:  # no dims: roll the flattened tensor
        return xp.roll(x.reshape(-1), shifts[0]).reshape(x.shape)
    return xp.roll(x, shifts, _axes_of("roll", "dims", dims, x.ndim))


def _roll_infer(ctx):
    shifts, dims = ctx.attr("shifts"), _roll_dims(ctx.attrs())
    ctx.check(len(shifts) == len(dims) or (not dims and len(shifts) == 1), "attribute 'shifts'",
              f"one shift per dim ({len(dims)})", shifts)
    _axes_of("roll", "dims", dims, len(ctx.input_shape("X")))
    same_shape("X", "Out")(ctx)


_ROLL_ATTRS = {"shifts": ("longs", []), "dims": ("longs", [])}  # (axis: an extra, as flip's)
def_op("roll", inputs=["X"], outputs=["Out"], attrs=_ROLL_ATTRS, infer_shape=_roll_infer,
       kernel=lambda ctx, x: _roll_shift(ctx, x, 1),
       grad=grad_maker("roll_grad", inputs=["X"], out_grads=["Out"]),
       doc="Out = X shifted by shifts[i] along dims[i] (``axis`` in programs of Paddle 2), "
           "elements past the end coming back at the start (the flattened tensor when no "
           "dims are given). dX = dOut rolled back.")
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
    # checked on the host only: on a device the check would wait on a copy every run
    if isinstance(index, np.ndarray) and index.size and (
            index.min() < 0 or index.max() >= x.shape[dim]):
        raise InvalidArgument(expected("index_select", "input 'Index'",
                                       f"values in [0, {x.shape[dim]})",
                                       f"{int(index.min())} .. {int(index.max())}"))
    return ctx.xp.take(x, index, axis=dim)


def _index_select_grad(ctx, x, index, dout):
    xp = ctx.xp
    dim = _axis("index_select", ctx.attrs["dim"], x.ndim, "attribute 'dim'")
    dx = xp.zeros(x.shape, dtype=dout.dtype)
    moved = xp.moveaxis(dx, dim, 0)  # a view: adding into it fills dx
    index_add(xp, moved, index.reshape(-1), xp.moveaxis(dout, dim, 0))
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
    # checked on the host only: on a device the check would wait on a copy every run
    if isinstance(index, np.ndarray) and index.size and (
            index.min() < 0 or index.max() >= x.shape[1]):
        raise InvalidArgument(expected("index_sample", "input 'Index'",
                                       f"values in [0, {x.shape[1]})",
                                       f"{int(index.min())} .. {int(index.max())}"))
    return ctx.xp.take_along_axis(x, index.astype(np.int64), 1)


def _index_sample_grad(ctx, x, index, dout):
    xp = ctx.xp
    dx = xp.zeros(x.shape, dtype=dout.dtype)
    rows = xp.arange(x.shape[0])[:, None]
    index_add(xp, dx, (xp.broadcast_to(rows, index.shape), index.astype(np.int64)), dout)
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
       host_reads="X: the number of distinct values is Out's length",
       doc="Out = the distinct values of 1-D X in the order they first appear; Index[i] = the "
           "position of X[i] in Out (of type ``dtype``), so Out[Index] == X.")
def_op("unique_with_counts", inputs=["X"], outputs=["Out", "Index", "Count"],
       attrs={"dtype": ("int", int(VarType.INT32))},
       infer_shape=lambda ctx: _unique_infer(ctx, True),
       kernel=lambda ctx, x: _unique(ctx, x, True), grad=no_gradient,
       host_reads="X: the number of distinct values is Out's length",
       doc="unique, and Count[k] = how many elements of X equal Out[k].")


# --- products: addmm, bmm, dot, kron ---------------------------------------------------------
def _addmm_infer(ctx):
    x, y, inp = ctx.input_shape("X"), ctx.input_shape("Y"), ctx.input_shape("Input")
    ctx.check(len(x) == 2 and len(y) == 2, "inputs 'X' and 'Y'", "2-D tensors",
              f"{list(x)} and {list(y)}")
    ctx.check(x[1] < 0 or y[0] < 0 or x[1] == y[0], "input 'Y'",
              f"{x[1]} rows (X's columns)", y[0])
    ctx.check(len(inp) == 2 and all(d in (1, n) or d < 0 or n < 0
                                    for d, n in zip(inp, (x[0], y[1]))),
              "input 'Input'", f"a 2-D tensor that broadcasts to [{x[0]}, {y[1]}]", list(inp))
    ctx.set_output("Out", (x[0], y[1]), ctx.input_dtype("X"))


def _addmm(ctx, inp, x, y):
    a = ctx.attrs
    return (a["Beta"] * inp + a["Alpha"] * (x @ y)).astype(x.dtype, copy=False)


def _addmm_grad(ctx, inp, x, y, dout):
    from .common import unbroadcast
    a, xp = ctx.attrs, ctx.xp
    d_inp = unbroadcast(xp, a["Beta"] * dout, inp.shape) if ctx.wants("Input@GRAD") else None
    dx = a["Alpha"] * (dout @ y.T) if ctx.wants("X@GRAD") else None
    dy = a["Alpha"] * (x.T @ dout) if ctx.wants("Y@GRAD") else None
    return d_inp, dx, dy


_ADDMM_ATTRS = {"Alpha": ("float", 1.0), "Beta": ("float", 1.0)}
def_op("addmm", inputs=["Input", "X", "Y"], outputs=["Out"], attrs=_ADDMM_ATTRS,
       infer_shape=_addmm_infer, kernel=_addmm,
       grad=grad_maker("addmm_grad", inputs=["Input", "X", "Y"], out_grads=["Out"],
                       in_grads=["Input", "X", "Y"]),
       doc="Out = Beta * Input + Alpha * X Y (X [M, K], Y [K, N], Input broadcast to "
           "[M, N]). dInput = Beta dOut (summed back), dX = Alpha dOut Y^T, "
           "dY = Alpha X^T dOut.")
def_op("addmm_grad", inputs=["Input", "X", "Y", "Out@GRAD"],
       outputs=["Input@GRAD?", "X@GRAD?", "Y@GRAD?"], attrs=_ADDMM_ATTRS,
       infer_shape=grads_like(**{"Input@GRAD": "Input", "X@GRAD": "X", "Y@GRAD": "Y"}),
       kernel=_addmm_grad, doc="Gradient of addmm.")


def _bmm_infer(ctx):
    x, y = ctx.input_shape("X"), ctx.input_shape("Y")
    ctx.check(len(x) == 3 and len(y) == 3, "inputs 'X' and 'Y'", "3-D tensors",
              f"{list(x)} and {list(y)}")
    ctx.check(x[0] < 0 or y[0] < 0 or x[0] == y[0], "input 'Y'", f"batch {x[0]} (X's)", y[0])
    ctx.check(x[2] < 0 or y[1] < 0 or x[2] == y[1], "input 'Y'",
              f"{x[2]} rows (X's columns)", y[1])
    ctx.set_output("Out", (x[0], x[1], y[2]), ctx.input_dtype("X"))


def _bmm_grad(ctx, x, y, dout):
    t = (0, 2, 1)
    return (dout @ y.transpose(t) if ctx.wants("X@GRAD") else None,
            x.transpose(t) @ dout if ctx.wants("Y@GRAD") else None)


def_op("bmm", inputs=["X", "Y"], outputs=["Out"], infer_shape=_bmm_infer,
       kernel=lambda ctx, x, y: x @ y,
       grad=grad_maker("bmm_grad", inputs=["X", "Y"], out_grads=["Out"], in_grads=["X", "Y"]),
       doc="Out[b] = X[b] Y[b] (X [B, M, K], Y [B, K, N]); dX[b] = dOut[b] Y[b]^T, "
           "dY[b] = X[b]^T dOut[b].")
def_op("bmm_grad", inputs=["X", "Y", "Out@GRAD"], outputs=["X@GRAD?", "Y@GRAD?"],
       infer_shape=grads_like(**{"X@GRAD": "X", "Y@GRAD": "Y"}), kernel=_bmm_grad,
       doc="Gradient of bmm.")


def _dot_infer(ctx):
    x, y = ctx.input_shape("X"), ctx.input_shape("Y")
    ctx.check(len(x) in (1, 2), "input 'X'", "a 1-D or 2-D tensor", list(x))
    ctx.check(len(x) == len(y) and all(a == b or a < 0 or b < 0 for a, b in zip(x, y)),
              "input 'Y'", f"X's shape {list(x)}", list(y))
    ctx.set_output("Out", tuple(x[:-1]) + (1,), ctx.input_dtype("X"))


def_op("dot", inputs=["X", "Y"], outputs=["Out"], infer_shape=_dot_infer,
       kernel=lambda ctx, x, y: (x * y).sum(axis=-1, keepdims=True).astype(x.dtype, copy=False),
       grad=grad_maker("dot_grad", inputs=["X", "Y"], out_grads=["Out"], in_grads=["X", "Y"]),
       doc="Out = sum(X * Y) over the last dim, kept as 1: [1] for vectors, [B, 1] for rows "
           "of a matrix. dX = dOut Y, dY = dOut X.")
def_op("dot_grad", inputs=["X", "Y", "Out@GRAD"], outputs=["X@GRAD?", "Y@GRAD?"],
       infer_shape=grads_like(**{"X@GRAD": "X", "Y@GRAD": "Y"}),
       kernel=lambda ctx, x, y, dout: (dout * y if ctx.wants("X@GRAD") else None,
                                       dout * x if ctx.wants("Y@GRAD") else None),
       doc="Gradient of dot.")


def _kron_operands(x, y):
    """``x`` and ``y`` with leading 1s added so both have the larger rank."""
    rank = max(x.ndim, y.ndim)
    return x.reshape((1,) * (rank - x.ndim) + x.shape), y.reshape((1,) * (rank - y.ndim) + y.shape)


def _kron_infer(ctx):
    x, y = list(ctx.input_shape("X")), list(ctx.input_shape("Y"))
    rank = max(len(x), len(y))
    x, y = [1] * (rank - len(x)) + x, [1] * (rank - len(y)) + y
    ctx.set_output("Out", tuple(a * b if a >= 0 and b >= 0 else -1 for a, b in zip(x, y)),
                   ctx.input_dtype("X"))


def _kron_grad(ctx, x, y, dout):
    # Out viewed as [x0, y0, x1, y1, ...]: each gradient sums the other operand's dims away
    xs, ys = _kron_operands(x, y)
    rank = xs.ndim
    blocks = dout.reshape([n for pair in zip(xs.shape, ys.shape) for n in pair])
    x_axes, y_axes = tuple(range(0, 2 * rank, 2)), tuple(range(1, 2 * rank, 2))
    x_view = xs.reshape([n for d in xs.shape for n in (d, 1)])
    y_view = ys.reshape([n for d in ys.shape for n in (1, d)])
    dx = (blocks * y_view).sum(axis=y_axes).reshape(x.shape) if ctx.wants("X@GRAD") else None
    dy = (blocks * x_view).sum(axis=x_axes).reshape(y.shape) if ctx.wants("Y@GRAD") else None
    return dx, dy


def_op("kron", inputs=["X", "Y"], outputs=["Out"], infer_shape=_kron_infer,
       kernel=lambda ctx, x, y: ctx.xp.kron(*_kron_operands(x, y)).astype(x.dtype, copy=False),
       grad=grad_maker("kron_grad", inputs=["X", "Y"], out_grads=["Out"], in_grads=["X", "Y"]),
       doc="Out = the Kronecker product of X and Y (ranks padded with leading 1s): "
           "Out[i * Y.shape + j] = X[i] Y[j]. dX[i] = sum_j dOut[i, j] Y[j], and likewise dY.")
def_op("kron_grad", inputs=["X", "Y", "Out@GRAD"], outputs=["X@GRAD?", "Y@GRAD?"],
       infer_shape=grads_like(**{"X@GRAD": "X", "Y@GRAD": "Y"}), kernel=_kron_grad,
       doc="Gradient of kron.")


# --- dist, cross ---------------------------------------------------------------------------------
def _dist(ctx, x, y):
    p = ctx.attrs["p"]
    z = ctx.xp.abs(x - y)
    if p == 0:
        value = (z != 0).sum()
    elif p == float("inf"):
        value = z.max()
    elif p == float("-inf"):
        value = z.min()
    else:
        value = (z ** p).sum() ** (1.0 / p)
    return ctx.xp.asarray(value, dtype=x.dtype).reshape(1)


def _dist_grad(ctx, x, y, out, dout):
    from .common import unbroadcast
    xp, p = ctx.xp, ctx.attrs["p"]
    z = x - y
    norm = out.reshape(-1)[0]
    if p == 0:
        dz = xp.zeros_like(z)
    elif p in (float("inf"), float("-inf")):
        dz = xp.sign(z) * (xp.abs(z) == norm)  # a zero norm: z is all 0, and so is sign(z)
    else:
        # a zero norm (z all 0) gives a zero gradient: chosen with where, so that the norm
        # stays on a device; dividing by 1 there keeps clear of 0 / 0
        zero = norm == 0
        dz = xp.sign(z) * xp.abs(z) ** (p - 1) / xp.where(zero, 1, norm) ** (p - 1)
        dz = xp.where(zero, 0, dz)
    dz = dz * dout.reshape(-1)[0]
    return (unbroadcast(xp, dz, x.shape) if ctx.wants("X@GRAD") else None,
            unbroadcast(xp, -dz, y.shape) if ctx.wants("Y@GRAD") else None)


def _dist_infer(ctx):
    from .common import broadcast_shape
    broadcast_shape("dist", ctx.input_shape("X"), ctx.input_shape("Y"), -1)
    ctx.set_output("Out", (1,), ctx.input_dtype("X"))


def_op("dist", inputs=["X", "Y"], outputs=["Out"], attrs={"p": ("float", 2.0)},
       infer_shape=_dist_infer, kernel=_dist,
       grad=grad_maker("dist_grad", inputs=["X", "Y"], outputs=["Out"], out_grads=["Out"],
                       in_grads=["X", "Y"]),
       doc="Out = [||X - Y||_p] over every element (X, Y broadcast): (sum |z|^p)^(1/p); "
           "p = 0 counts the non-zeros, p = inf / -inf takes the largest / smallest |z|. "
           "dX = -dY = dOut sign(z) |z|^(p-1) / Out^(p-1) (summed back to each shape).")
def_op("dist_grad", inputs=["X", "Y", "Out", "Out@GRAD"], outputs=["X@GRAD?", "Y@GRAD?"],
       attrs={"p": ("float", 2.0)}, infer_shape=grads_like(**{"X@GRAD": "X", "Y@GRAD": "Y"}),
       kernel=_dist_grad, doc="Gradient of dist.")

#: Paddle's "no dim given" value for cross (its DDim's largest rank)
CROSS_DEFAULT_DIM = 9


def _cross_dim(where, shape, dim):
    if dim == CROSS_DEFAULT_DIM:
        for i, n in enumerate(shape):
            if n == 3:
                return i
        raise InvalidArgument(expected(where, "inputs 'X' and 'Y'", "a dim of size 3",
                                       list(shape)))
    dim = _axis(where, dim, len(shape), "attribute 'dim'")
    if shape[dim] not in (3, -1):
        raise InvalidArgument(expected(where, "attribute 'dim'", "a dim of size 3",
                                       f"{dim} (size {shape[dim]})"))
    return dim


def _cross_infer(ctx):
    x, y = ctx.input_shape("X"), ctx.input_shape("Y")
    ctx.check(len(x) == len(y) and all(a == b or a < 0 or b < 0 for a, b in zip(x, y)),
              "input 'Y'", f"X's shape {list(x)}", list(y))
    _cross_dim("cross", x, ctx.attr("dim"))
    same_shape("X", "Out")(ctx)


def _cross(ctx, x, y):
    dim = _cross_dim("cross", x.shape, ctx.attrs["dim"])
    return ctx.xp.cross(x, y, axis=dim).astype(x.dtype, copy=False)


def _cross_grad(ctx, x, y, dout):
    xp = ctx.xp
    dim = _cross_dim("cross", x.shape, ctx.attrs["dim"])
    return (xp.cross(y, dout, axis=dim) if ctx.wants("X@GRAD") else None,
            xp.cross(dout, x, axis=dim) if ctx.wants("Y@GRAD") else None)


def_op("cross", inputs=["X", "Y"], outputs=["Out"], attrs={"dim": ("int", CROSS_DEFAULT_DIM)},
       infer_shape=_cross_infer, kernel=_cross,
       grad=grad_maker("cross_grad", inputs=["X", "Y"], out_grads=["Out"], in_grads=["X", "Y"]),
       doc="Out = X x Y, the cross product of the 3-vectors along ``dim`` (the first dim of "
           "size 3 when not given). dX = Y x dOut, dY = dOut x X.")
def_op("cross_grad", inputs=["X", "Y", "Out@GRAD"], outputs=["X@GRAD?", "Y@GRAD?"],
       attrs={"dim": ("int", CROSS_DEFAULT_DIM)},
       infer_shape=grads_like(**{"X@GRAD": "X", "Y@GRAD": "Y"}), kernel=_cross_grad,
       doc="Gradient of cross.")


# --- diagonals: trace, diag_embed ----------------------------------------------------------------
def _trace_dims(where, rank, attrs):
    d1 = _axis(where, attrs["dim1"], rank, "attribute 'dim1'")
    d2 = _axis(where, attrs["dim2"], rank, "attribute 'dim2'")
    if d1 == d2:
        raise InvalidArgument(expected(where, "attribute 'dim2'", f"a dim other than dim1 "
                                       f"({d1})", d2))
    return d1, d2


def _trace_infer(ctx):
    shape = ctx.input_shape("Input")
    ctx.check(len(shape) >= 2, "input 'Input'", "a tensor of rank 2 or more", list(shape))
    d1, d2 = _trace_dims("trace", len(shape), ctx.attrs())
    out = tuple(n for i, n in enumerate(shape) if i not in (d1, d2))
    ctx.set_output("Out", out or (1,), ctx.input_dtype("Input"))


def _trace(ctx, x):
    d1, d2 = _trace_dims("trace", x.ndim, ctx.attrs)
    out = ctx.xp.trace(x, offset=ctx.attrs["offset"], axis1=d1, axis2=d2).astype(x.dtype)
    return out.reshape(1) if out.ndim == 0 else out


def _trace_grad(ctx, x, dout):
    xp = ctx.xp
    d1, d2 = _trace_dims("trace", x.ndim, ctx.attrs)
    rows, cols = x.shape[d1], x.shape[d2]
    mask = xp.eye(rows, cols, k=ctx.attrs["offset"], dtype=dout.dtype)
    # dOut spread over the diagonal: move the two dims last, multiply, move them back
    spread = dout.reshape(tuple(n for i, n in enumerate(x.shape) if i not in (d1, d2))
                          + (1, 1)) * mask
    return xp.moveaxis(spread, (-2, -1), (d1, d2))


_TRACE_ATTRS = {"offset": ("int", 0), "dim1": ("int", 0), "dim2": ("int", 1)}
def_op("trace", inputs=["Input"], outputs=["Out"], attrs=_TRACE_ATTRS,
       infer_shape=_trace_infer, kernel=_trace,
       grad=grad_maker("trace_grad", inputs=["Input"], out_grads=["Out"], in_grads=["Input"]),
       doc="Out = the sums of the diagonal ``offset`` of the matrices in dims dim1, dim2 "
           "(above the main one when positive); [1] for a matrix. dInput = dOut on that "
           "diagonal, 0 elsewhere.")
def_op("trace_grad", inputs=["Input", "Out@GRAD"], outputs=["Input@GRAD"], attrs=_TRACE_ATTRS,
       infer_shape=grads_like(**{"Input@GRAD": "Input"}), kernel=_trace_grad,
       doc="Gradient of trace.")


def _diag_embed_dims(rank, attrs):
    out_rank = rank + 1
    d1 = _axis("diag_embed", attrs["dim1"], out_rank, "attribute 'dim1'")
    d2 = _axis("diag_embed", attrs["dim2"], out_rank, "attribute 'dim2'")
    if d1 == d2:
        raise InvalidArgument(expected("diag_embed", "attribute 'dim2'",
                                       f"a dim other than dim1 ({d1})", d2))
    return d1, d2


def _diag_embed_shape(shape, attrs):
    d1, d2 = _diag_embed_dims(len(shape), attrs)
    n = shape[-1] + abs(attrs["offset"]) if shape[-1] >= 0 else -1
    rest = list(shape[:-1])
    out = []
    for i in range(len(shape) + 1):
        out.append(n if i in (d1, d2) else rest.pop(0))
    return tuple(out)


def _diag_embed(ctx, x):
    xp, attrs = ctx.xp, ctx.attrs
    d1, d2 = _diag_embed_dims(x.ndim, attrs)
    offset = attrs["offset"]
    n = x.shape[-1] + abs(offset)
    square = xp.zeros(x.shape[:-1] + (n, n), dtype=x.dtype)
    idx = xp.arange(x.shape[-1])
    rows, cols = (idx, idx + offset) if offset >= 0 else (idx - offset, idx)
    square[..., rows, cols] = x
    # the two new dims sit last; move them to dim1 and dim2
    return xp.ascontiguousarray(xp.moveaxis(square, (-2, -1), (d1, d2)))


def_op("diag_embed", inputs=["Input"], outputs=["Out"],
       attrs={"offset": ("int", 0), "dim1": ("int", -2), "dim2": ("int", -1)},
       infer_shape=lambda ctx: ctx.set_output(
           "Out", _diag_embed_shape(ctx.input_shape("Input"), ctx.attrs()),
           ctx.input_dtype("Input")),
       kernel=_diag_embed, grad=no_gradient,
       doc="Out: for each vector in Input's last dim, the (N + |offset|)-square matrix with "
           "it on diagonal ``offset``, placed in dims dim1, dim2 of the output (rank + 1).")


# --- meshgrid --------------------------------------------------------------------------------
def _meshgrid_infer(ctx):
    shapes = ctx.input_shapes("X")
    for i, s in enumerate(shapes):
        ctx.check(len(s) == 1, f"input 'X'[{i}]", "a 1-D tensor", list(s))
    grid = tuple(s[0] for s in shapes)
    ctx.set_outputs("Out", [grid] * len(shapes), ctx.input_dtype("X"))


def _meshgrid_grad(ctx, xs, douts):
    outs = []
    for i, x in enumerate(xs):
        axes = tuple(a for a in range(len(xs)) if a != i)
        outs.append(douts[i].sum(axis=axes).astype(x.dtype, copy=False)
                    if douts[i] is not None else ctx.xp.zeros_like(x))
    return outs


def_op("meshgrid", inputs=["X[]"], outputs=["Out[]"], infer_shape=_meshgrid_infer,
       kernel=lambda ctx, xs: [ctx.xp.ascontiguousarray(g)
                               for g in ctx.xp.meshgrid(*xs, indexing="ij")],
       grad=grad_maker("meshgrid_grad", inputs=["X"], out_grads=["Out"]),
       doc="Out[k][i0, i1, ...] = X[k][ik]: N 1-D tensors spread over the N-D grid of their "
           "lengths (matrix indexing). dX[k] = dOut[k] summed over the other dims.")
def_op("meshgrid_grad", inputs=["X[]", "Out@GRAD[]"], outputs=["X@GRAD[]"],
       infer_shape=grads_like(**{"X@GRAD": "X"}), kernel=_meshgrid_grad,
       doc="Gradient of meshgrid.")


# --- allclose, sampling_id -----------------------------------------------------------------------
def _allclose(ctx, a, b):
    attrs = ctx.attrs
    close = ctx.xp.allclose(a, b, rtol=attrs["rtol"], atol=attrs["atol"],
                            equal_nan=attrs["equal_nan"])
    return ctx.xp.asarray(np.array([bool(close)]))


def_op("allclose", inputs=["Input", "Other"], outputs=["Out"],
       attrs={"rtol": ("float", 1e-5), "atol": ("float", 1e-8), "equal_nan": ("bool", False)},
       infer_shape=lambda ctx: ctx.set_output("Out", (1,), VarType.BOOL),
       kernel=_allclose, grad=no_gradient,
       doc="Out = [all |Input - Other| <= atol + rtol |Other|] (NaNs equal when equal_nan).")


def _sampling_id(ctx, x):
    attrs = ctx.attrs
    xp = ctx.xp
    # the draws come from the host's generator (as every random op's), the rest stays on x's
    draws = xp.asarray(ctx.random_state().uniform(attrs["min"], attrs["max"], x.shape[0]))
    # the first column whose running total passes the draw; the last one when none does
    passed = xp.cumsum(x, axis=1) > draws[:, None]
    ids = xp.where(passed.any(axis=1), passed.argmax(axis=1), x.shape[1] - 1)
    return ids.astype("int64")  # Fluid 1.8's kernel writes int64 ids, whatever X's type


def _sampling_id_infer(ctx):
    shape = ctx.input_shape("X")
    ctx.check(len(shape) == 2, "input 'X'", "a 2-D tensor [batch, classes]", list(shape))
    ctx.set_output("Out", (shape[0],), VarType.INT64)


def_op("sampling_id", inputs=["X"], outputs=["Out"],
       attrs={"min": ("float", 0.0), "max": ("float", 1.0), "seed": ("int", 0)},
       infer_shape=_sampling_id_infer, kernel=_sampling_id, grad=no_gradient,
       traits=("stateful",),
       doc="Out[i] = a column drawn from row i of X taken as a distribution: the first j "
           "with X[i, 0] + ... + X[i, j] > r, r ~ U[min, max) (the last column when none); "
           "Out is int64.")


# --- where (three inputs) and log_softmax: the single ops later Paddle programs use ------------------
def _where_infer(ctx):
    shapes = [ctx.input_shape(s) for s in ("Condition", "X", "Y")]
    ctx.check(all(len(s) == len(shapes[1]) and all(a == b or a < 0 or b < 0
                                                  for a, b in zip(s, shapes[1]))
                  for s in shapes), "inputs 'Condition', 'X' and 'Y'", "one shape",
              [list(s) for s in shapes])
    same_shape("X", "Out")(ctx)


def _where_grad(ctx, cond, x, y, dout):
    zeros = ctx.xp.zeros_like(dout)
    return (ctx.xp.where(cond, dout, zeros) if ctx.wants("X@GRAD") else None,
            ctx.xp.where(cond, zeros, dout) if ctx.wants("Y@GRAD") else None)


def_op("where", inputs=["Condition", "X", "Y"], outputs=["Out"], infer_shape=_where_infer,
       kernel=lambda ctx, cond, x, y: ctx.xp.where(cond, x, y),
       grad=grad_maker("where_grad", inputs=["Condition", "X", "Y"], out_grads=["Out"],
                       in_grads=["X", "Y"]),
       doc="Out = X where Condition, else Y (one shape); dX = dOut where Condition, dY = dOut "
           "elsewhere. (Fluid 1.8's one-argument ``where`` layer is where_index.)")
def_op("where_grad", inputs=["Condition", "X", "Y", "Out@GRAD"], outputs=["X@GRAD?", "Y@GRAD?"],
       infer_shape=grads_like(**{"X@GRAD": "X", "Y@GRAD": "Y"}), kernel=_where_grad,
       doc="Gradient of where.")


def _log_softmax(ctx, x):
    xp = ctx.xp
    axis = _axis("log_softmax", ctx.attrs["axis"], x.ndim)
    shifted = x - x.max(axis=axis, keepdims=True)
    return (shifted - xp.log(xp.exp(shifted).sum(axis=axis, keepdims=True))).astype(
        x.dtype, copy=False)


def _log_softmax_grad(ctx, out, dout):
    xp = ctx.xp
    axis = _axis("log_softmax", ctx.attrs["axis"], out.ndim)
    return dout - xp.exp(out) * dout.sum(axis=axis, keepdims=True)


def _log_softmax_infer(ctx):
    _axis("log_softmax", ctx.attr("axis"), len(ctx.input_shape("X")))
    same_shape("X", "Out")(ctx)


def_op("log_softmax", inputs=["X"], outputs=["Out"], attrs={"axis": ("int", -1)},
       infer_shape=_log_softmax_infer, kernel=_log_softmax, share_lod=("X", ["Out"]),
       grad=grad_maker("log_softmax_grad", outputs=["Out"], out_grads=["Out"]),
       doc="Out = X - log(sum(exp(X))) along ``axis``, computed from X - max(X); "
           "dX = dOut - exp(Out) * sum(dOut) along the axis.")
def_op("log_softmax_grad", inputs=["Out", "Out@GRAD"], outputs=["X@GRAD"],
       attrs={"axis": ("int", -1)}, infer_shape=same_shape("Out", "X@GRAD"),
       kernel=_log_softmax_grad, doc="Gradient of log_softmax.")



# --- elementwise finiteness and logsumexp as single ops (programs of Paddle 2) ---------------
def _elementwise_test(type, test, doc):
    def kernel(ctx, x):
        if x.dtype.kind not in "fc":  # integers are finite, never inf or nan
            return ctx.xp.full(x.shape, type == "isfinite_v2", dtype=bool)
        return test(ctx.xp, x)

    def_op(type, inputs=["X"], outputs=["Out"],
           infer_shape=lambda ctx: ctx.set_output("Out", ctx.input_shape("X"), VarType.BOOL),
           share_lod=("X", ["Out"]), kernel=kernel, grad=no_gradient, doc=doc)


_elementwise_test("isinf_v2", lambda xp, x: xp.isinf(x), "Out = isinf(X) elementwise (bool).")
_elementwise_test("isnan_v2", lambda xp, x: xp.isnan(x), "Out = isnan(X) elementwise (bool).")
_elementwise_test("isfinite_v2", lambda xp, x: xp.isfinite(x),
                  "Out = isfinite(X) elementwise (bool).")


def _logsumexp_axes(rank, attrs):
    axes = list(attrs["axis"] or [])
    if attrs["reduce_all"] or not axes or rank == 0:
        return tuple(range(rank))
    return tuple(sorted({_axis("logsumexp", a, rank) for a in axes}))


def _logsumexp_infer(ctx):
    shape = list(ctx.input_shape("X"))
    axes = _logsumexp_axes(len(shape), ctx.attrs())
    keep = ctx.attr("keepdim")
    out = [1 if i in axes else d for i, d in enumerate(shape)] if keep else \
        [d for i, d in enumerate(shape) if i not in axes]
    ctx.set_output("Out", tuple(out), ctx.input_dtype("X"))


def _logsumexp(ctx, x):
    xp = ctx.xp
    axes = _logsumexp_axes(x.ndim, ctx.attrs)
    top = x.max(axis=axes, keepdims=True) if x.size else xp.zeros((1,) * x.ndim, x.dtype)
    top = xp.where(xp.isfinite(top), top, 0)
    out = xp.log(xp.exp(x - top).sum(axis=axes, keepdims=True)) + top
    if not ctx.attrs["keepdim"]:
        out = out.reshape([d for i, d in enumerate(x.shape) if i not in axes])
    return out.astype(x.dtype, copy=False)


def _logsumexp_grad(ctx, x, out, dout):
    axes = _logsumexp_axes(x.ndim, ctx.attrs)
    kept = [1 if i in axes else d for i, d in enumerate(x.shape)]
    return (dout.reshape(kept) * ctx.xp.exp(x - out.reshape(kept))).astype(x.dtype, copy=False)


_LOGSUMEXP_ATTRS = {"axis": ("ints", [0]), "keepdim": ("bool", False),
                    "reduce_all": ("bool", False)}
def_op("logsumexp", inputs=["X"], outputs=["Out"], attrs=_LOGSUMEXP_ATTRS,
       infer_shape=_logsumexp_infer, kernel=_logsumexp,
       grad=grad_maker("logsumexp_grad", inputs=["X"], outputs=["Out"], out_grads=["Out"]),
       doc="Out = log(sum(exp(X))) over ``axis`` (every dim when reduce_all or axis is "
           "empty), computed from X - max(X); dX = dOut * exp(X - Out). (Fluid 1.8's "
           "logsumexp layer builds exp, reduce_sum and log instead.)")
def_op("logsumexp_grad", inputs=["X", "Out", "Out@GRAD"], outputs=["X@GRAD"],
       attrs=_LOGSUMEXP_ATTRS, infer_shape=grads_like(**{"X@GRAD": "X"}),
       kernel=_logsumexp_grad, doc="Gradient of logsumexp.")
