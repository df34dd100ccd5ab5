"""Arithmetic ops: elementwise with Paddle's axis broadcast, products, sums and reductions.

Shapes follow Paddle 2.6, where reductions to a single value are 0-D: ``mean``, a
``reduce_*`` over every dim without ``keep_dim``, and ``matmul``/``matmul_v2`` of two
vectors all give shape ``[]``.
"""
import weakref

import numpy as np

from ..errors import InvalidArgument, Unimplemented, expected
from ..tensor.tensor import LoDTensor, LoDTensorArray, SelectedRows, index_add
from ..tensor.dtypes import VarType, convert_dtype, to_numpy_dtype
from ..framework.infer import dims_match
from ..framework.program import EMPTY_VAR_NAME
from .clip_ops import merge_add
from .common import elementwise_op, unbroadcast
from .expr import X, Y, maximum, minimum
from ..framework.registry import def_op, grad_maker, grads_like
from ..memory.arena import outside_the_arena
from ..framework.memo import remember


def _prod(dims):
    """Product of dims; -1 (unknown) when any dim is unknown."""
    total = 1
    for d in dims:
        if d < 0:
            return -1
        total *= d
    return total


# --- elementwise ---------------------------------------------------------------------------
elementwise_op(
    "elementwise_add", X + Y, onnx="Add",
    backward=lambda xp, x, y, out, dout, wx, wy: (dout, dout),
    doc="Out = X + Y (Y broadcast into X from dim ``axis``; -1 aligns the trailing dims).")

elementwise_op(
    "elementwise_sub", X - Y, onnx="Sub",
    backward=lambda xp, x, y, out, dout, wx, wy: (dout, -dout if wy else None),
    doc="Out = X - Y (Paddle's ``axis`` broadcast).")

elementwise_op(
    "elementwise_mul", X * Y, onnx="Mul",
    backward=lambda xp, x, y, out, dout, wx, wy: (dout * y if wx else None,
                                                  dout * x if wy else None),
    doc="Out = X * Y; dX = dOut * Y, dY = dOut * X.")


def _divide(xp, x, y):
    if x.dtype.kind not in "iu":
        return x / y
    # integers divide as in C++: the quotient truncates toward zero
    q = x // y
    return q + ((q < 0) & (q * y != x)).astype(q.dtype)


elementwise_op(
    "elementwise_div",
    forward=_divide,
    backward=lambda xp, x, y, out, dout, wx, wy: (dout / y if wx else None,
                                                  -dout * out / y if wy else None),
    needs_out=True,
    doc="Out = X / Y (integers truncate toward zero); dX = dOut / Y, dY = -dOut * Out / Y.")

elementwise_op(
    "elementwise_max", maximum(X, Y), onnx="Max",
    backward=lambda xp, x, y, out, dout, wx, wy: (dout * (x > y) if wx else None,
                                                  dout * (x <= y) if wy else None),
    doc="Out = max(X, Y); the gradient goes to X where X > Y, else to Y (ties go to Y).")

elementwise_op(
    "elementwise_min", minimum(X, Y), onnx="Min",
    backward=lambda xp, x, y, out, dout, wx, wy: (dout * (x < y) if wx else None,
                                                  dout * (x >= y) if wy else None),
    doc="Out = min(X, Y); the gradient goes to X where X < Y, else to Y (ties go to Y).")


def _power(xp, x, y):
    if x.dtype.kind not in "iu":
        return xp.power(x, y)
    # Paddle rounds the double-precision power for integer tensors
    return xp.rint(xp.power(x.astype("float64"), y.astype("float64"))).astype(x.dtype)


elementwise_op(
    "elementwise_pow",
    forward=_power,
    backward=lambda xp, x, y, out, dout, wx, wy: (
        dout * y * xp.power(x, y - 1) if wx else None,
        dout * xp.log(x) * xp.power(x, y) if wy else None),
    doc="Out = X ^ Y; dX = dOut * Y * X^(Y-1), dY = dOut * log(X) * X^Y.")


elementwise_op(
    "elementwise_floordiv",
    forward=lambda xp, x, y: xp.floor_divide(x, y),
    backward=None,
    doc="Out = floor(X / Y) (Python's //: 7 // -2 = -4, as Paddle 2.6). No gradient.")

elementwise_op(
    "elementwise_mod",
    forward=lambda xp, x, y: xp.mod(x, y),
    backward=None,
    doc="Out = X mod Y with the sign of Y (Python's %: -7 % 2 = 1, 7.5 % -2 = -0.5, as "
        "Paddle 2.6). No gradient.")


# --- scale, sum, mean ------------------------------------------------------------------------
def _scale_kernel(ctx, x, scale_tensor):
    # runtime values in: a SelectedRows X gives a SelectedRows Out (its values scaled)
    if x.__class__ is SelectedRows:
        value = x.value
        return SelectedRows(x.rows(), x.height(),
                            LoDTensor(_scaled(ctx, value.array, scale_tensor), value._lod))
    if x.__class__ is not LoDTensor:
        raise InvalidArgument(expected("scale", "input 'X'", "a LoDTensor or SelectedRows",
                                       type(x).__name__))
    out = _scaled(ctx, x.array, scale_tensor)
    return x if out is x.array else LoDTensor(out, x._lod)


#: (a float, a float dtype) -> a read-only 0-d array of it, which a host X of that dtype is
#: scaled by: NumPy takes a Python float as a value of X's type, as it takes such an array,
#: but converts the float again at every call (half a 1x1 product's time). A float that is
#: zero (0.0 and -0.0 are one key) or not finite in the dtype keeps its float.
_FLOAT_OPERANDS = {}


def _float_operand(value, dtype):
    operand = _FLOAT_OPERANDS.get((value, dtype))
    if operand is None:
        operand = np.array(value, dtype)
        if not operand or not np.isfinite(operand):  # (kept as the float it is)
            return value
        operand.flags.writeable = False
        remember(_FLOAT_OPERANDS, (value, dtype), operand)
    return operand


def _scaled(ctx, x, scale_tensor):
    attrs = ctx.attrs
    bias = attrs["bias"]
    if scale_tensor is not None:
        # a 0-d array of X's type (Paddle casts the scale to it): on a device it only
        # multiplies there
        scale = scale_tensor.array.reshape(-1)[0].astype(x.dtype)
    else:
        scale = attrs["scale"]
        if scale == 1 and not bias:  # sum's gradient: the same values (never changed in place)
            return x
        if x.__class__ is np.ndarray and x.dtype.kind == "f":  # (see _FLOAT_OPERANDS)
            if bias:
                bias = _float_operand(bias, x.dtype)
                if scale == 1 and attrs["bias_after_scale"]:  # (x * 1 is x, exactly)
                    return (x + bias).astype(x.dtype, copy=False)
            scale = _float_operand(scale, x.dtype)
        elif x.dtype.kind in "iu":  # Paddle casts scale and bias to the tensor's type
            scale = int(scale)
    if x.dtype.kind in "iu":
        bias = int(bias)
    if attrs["bias_after_scale"]:
        out = x * scale + bias if bias else x * scale
    else:
        out = (x + bias) * scale
    return out.astype(x.dtype, copy=False)


def _scale_plain(ctx, x):
    # a dense X and no ScaleTensor: the first run of every live ``x * 2.0``
    return _scaled(ctx, x, None)


def _scale_step(ctx, ins, out, kernel_step):
    """The common case on the host, a dense X and no ScaleTensor, without the kernel call
    (a loop's grad body scales every step)."""
    x_holder, scale_holder = ins
    if scale_holder is not None:
        return kernel_step
    dense = LoDTensor

    def step():
        x = x_holder.value
        if x.__class__ is not dense:
            return kernel_step()
        array = x.array
        scaled = _scaled(ctx, array, None)
        out.value = x if scaled is array else dense(scaled, x._lod)
    return step


def _scale_grad(g):
    # Paddle's own maker: the gradient of a scale is a scale by the same factor, no bias
    inputs = {"X": g.output_grad("Out"), "ScaleTensor": g.input("ScaleTensor")}
    attrs = dict(g.attrs, bias=0.0, bias_after_scale=True)
    return [g.op("scale", inputs, {"Out": g.input_grad("X")}, attrs)]


def _scale_infer(ctx):
    sparse = ctx.input_var_type("X") == VarType.SELECTED_ROWS
    ctx.set_output("Out", ctx.input_shape("X"), ctx.input_dtype("X"),
                   type=VarType.SELECTED_ROWS if sparse else None)
    ctx.share_lod("X", "Out")


def_op("scale", inputs=["X", "ScaleTensor?"], outputs=["Out"],
       attrs={"scale": ("float", 1.0), "bias": ("float", 0.0),
              "bias_after_scale": ("bool", True)},
       infer_shape=_scale_infer, grad=_scale_grad, kernel=_scale_kernel, lod_aware=True,
       host_step=_scale_step, plain_kernel=_scale_plain,
       doc="Out = scale * X + bias (bias_after_scale) or scale * (X + bias); ScaleTensor, "
           "when given, replaces the ``scale`` attribute. Integer tensors use int(scale). "
           "A SelectedRows X gives a SelectedRows Out: the same rows and height, the values "
           "scaled.")


def _sum_infer(ctx):
    shapes = ctx.input_shapes("X")
    ctx.check(bool(shapes), "input 'X'", "at least one variable", "none")
    out = list(shapes[0])
    for i, shape in enumerate(shapes[1:], 1):
        ctx.check(len(shape) == len(out) and all(dims_match(a, b) for a, b in zip(shape, out)),
                  f"shape of X[{i}]", f"{out} (the shape of X[0])", list(shape))
        out = [a if a >= 0 else b for a, b in zip(out, shape)]
    ctx.set_output("Out", out, ctx.input_dtype("X"), lod_level=ctx.input_lod_level("X"))


def _sum_kernel(ctx, xs):
    if len(xs) == 2:  # the common case (two gradients meeting): two dense tensors
        a, b = xs
        if a.__class__ is LoDTensor and b.__class__ is LoDTensor and a.array is not None \
                and b.array is not None and a.array.size and b.array.size:
            return LoDTensor(a.array + b.array, a._lod)
    xp = ctx.xp
    if xs and all(isinstance(t, list) or t is None for t in xs):
        return _sum_arrays(xp, xs)
    arrays, lod, sparse = [], None, []
    for t in xs:
        if isinstance(t, SelectedRows):
            sparse.append(t)
        elif isinstance(t, LoDTensor):
            # as Paddle: uninitialised or empty inputs (absent gradients) are skipped
            if t.array is None or t.array.size == 0:
                continue
            if not arrays:
                lod = t._lod
            arrays.append(t.array)
        elif t is not None:
            raise Unimplemented(expected("sum", "inputs", "LoDTensors, SelectedRows or "
                                         "LoDTensorArrays", type(t).__name__))
    dense = None
    if arrays:
        dense = arrays[0] + arrays[1] if len(arrays) > 1 else arrays[0].copy()
        for a in arrays[2:]:
            dense += a  # our own array: accumulating in place saves a copy per input
    if dense is None and sparse and len(sparse) == len([t for t in xs if t is not None]):
        return _sum_selected_rows(xp, sparse)
    for s in sparse:
        if dense is None:
            dense = s.to_dense(xp)
        elif s.rows():  # dense is this kernel's own array by now, so adding in place is safe
            index_add(xp, dense, xp.asarray(s.rows()), s.value.array)
    if dense is None:
        raise InvalidArgument(expected("sum", "input X", "at least one initialised tensor",
                                       "none initialised"))
    return LoDTensor(dense, lod or [])


def _sum_selected_rows(xp, inputs):
    """SelectedRows inputs give a SelectedRows: their MergeAdd (rows concatenated, or merged
    and ascending when a row id repeats), or no rows at all when no input has any."""
    rows, height, values = merge_add(xp, inputs, "sum")
    if values is None:
        first = inputs[0].value.array
        values = xp.zeros((0,) + tuple(first.shape[1:] if first is not None else ()),
                          dtype=first.dtype if first is not None else "float32")
    elif any(values is s.value.array for s in inputs):
        values = values.copy()  # Out is a new variable's value, not an input's array
    return SelectedRows(rows.tolist(), height, LoDTensor(values))


def _sum_arrays(xp, arrays):
    """Index-wise sum of LoDTensorArrays (gradients of while loops)."""
    size = max(len(a) for a in arrays if a is not None)
    out = LoDTensorArray()
    for i in range(size):
        items = [a[i] for a in arrays if a is not None and i < len(a) and a[i] is not None
                 and a[i].array is not None]
        if not items:
            out.append(LoDTensor())
            continue
        total = items[0].array.copy()
        for t in items[1:]:
            total = total + t.array
        out.append(LoDTensor(total, items[0]._lod))
    return out


def _sum_grad(g):
    # Paddle's maker: each input's gradient is the output's gradient, copied by a scale op
    og = g.output_grad("Out")
    return [g.op("scale", {"X": og}, {"Out": [name]},
                 {"scale": 1.0, "bias": 0.0, "bias_after_scale": True})
            for name in g.input_grad("X") if name != EMPTY_VAR_NAME]


def_op("sum", inputs=["X[]"], outputs=["Out"], infer_shape=_sum_infer, grad=_sum_grad,
       kernel=_sum_kernel, lod_aware=True, traits=("infer_from_x",),
       doc="Out = X[0] + X[1] + ... (uninitialised inputs skipped; SelectedRows inputs add "
           "their rows; all-SelectedRows inputs give a SelectedRows, merged as Fluid's "
           "MergeAdd: the rows concatenated when no row id repeats, else the distinct ids "
           "ascending with their values summed; LoDTensorArrays add index by index). Out "
           "takes X[0]'s LoD.")


def _filled(xp, shape, dtype, value):
    array = xp.empty(shape, dtype=dtype)
    array[...] = value  # a number, or a 0-d array (assigned on the device it lies on)
    return array


def _mean(ctx, x):
    return ctx.xp.asarray(x.sum() / x.size, dtype=x.dtype)


def_op("mean", inputs=["X"], outputs=["Out"],
       infer_shape=lambda ctx: ctx.set_output("Out", (), ctx.input_dtype("X")),
       grad=grad_maker("mean_grad", inputs=["X"]), kernel=_mean, plain_kernel=_mean,
       doc="Out = sum(X) / numel(X), a 0-D tensor (shape [] as in Paddle 2.6; [1] before).")


def _mean_grad(ctx, x, dout):
    count = max(x.size, 1)
    if dout.__class__ is np.ndarray:  # on the host dOut is read as a number, which is
        dx = np.empty(x.shape, dtype=x.dtype)  # cheaper than a 0-d array's arithmetic
        dx.fill(np.float64(dout.item(0)) / count)  # (cast as the assignment below casts)
        return dx
    # dOut divided in float64 as a 0-d array: on a device it fills dX there
    return _filled(ctx.xp, x.shape, x.dtype, dout.reshape(-1)[0].astype("float64") / count)


def_op("mean_grad", inputs=["X", "Out@GRAD"], outputs=["X@GRAD"],
       infer_shape=grads_like(**{"X@GRAD": "X"}), share_lod=("X", ["X@GRAD"]),
       kernel=_mean_grad, doc="dX = dOut / numel(X) everywhere.")


# --- reductions ------------------------------------------------------------------------------
_REDUCE_ATTRS = {"dim": ("ints", [0]), "keep_dim": ("bool", False),
                 "reduce_all": ("bool", False), "in_dtype": ("int", -1),
                 "out_dtype": ("int", -1)}


def _reduce_axes(op_type, rank, attrs):
    """The reduced dims, sorted and non-negative (all dims when Paddle reduces all: the
    ``reduce_all`` flag, an empty ``dim``, or ``dim`` naming as many dims as X has)."""
    dims = attrs["dim"]
    for d in dims:
        if rank and not -rank <= d < rank:
            raise InvalidArgument(expected(op_type, "attribute 'dim'",
                                           f"values in [{-rank}, {rank})", dims))
    if attrs["reduce_all"] or not dims or len(dims) == rank or rank == 0:
        return tuple(range(rank))
    return tuple(sorted({d % rank for d in dims}))


def _reduced_shape(shape, axes, keep_dim):
    if keep_dim:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _sum_out_dtype(x_dtype, out_dtype):
    if out_dtype >= 0:
        return convert_dtype(out_dtype)
    # Paddle 2.6 sums booleans and int32 into int64 unless told otherwise
    return VarType.INT64 if x_dtype in (VarType.BOOL, VarType.INT32) else x_dtype


def _reduce_op(type, forward, backward, grad_needs_out, doc):
    """Define reduce op ``type`` and its grad. ``forward(xp, x, axes, keep, attrs)``;
    ``backward(xp, x, out_kept, dout_kept, axes)`` gets Out and Out@GRAD with the reduced
    dims kept as 1s so they broadcast against X."""
    def infer(ctx):
        shape, attrs = ctx.input_shape("X"), ctx.attrs()
        axes = _reduce_axes(ctx.op_type, len(shape), attrs)
        dtype = ctx.input_dtype("X")
        if type == "reduce_sum":
            dtype = _sum_out_dtype(dtype, attrs["out_dtype"])
        ctx.set_output("Out", _reduced_shape(shape, axes, attrs["keep_dim"]), dtype)

    def kernel(ctx, x):
        attrs = ctx.attrs
        axes = _reduce_axes(type, x.ndim, attrs)
        return ctx.xp.asarray(forward(ctx.xp, x, axes, attrs["keep_dim"], attrs))

    def grad_kernel(ctx, x, *rest):
        out, dout = rest if grad_needs_out else (None, rest[0])
        axes = _reduce_axes(type, x.ndim, ctx.attrs)
        kept = _reduced_shape(x.shape, axes, True)
        dout = dout.reshape(kept)
        out = out.reshape(kept) if out is not None else None
        # astype copies: sum/mean grads are broadcast views of dOut, read-only
        return backward(ctx.xp, x, out, dout, axes).astype(x.dtype)

    grad_type = type + "_grad"
    fwd_out = ["Out"] if grad_needs_out else []
    def_op(type, inputs=["X"], outputs=["Out"], attrs=_REDUCE_ATTRS, infer_shape=infer,
           grad=grad_maker(grad_type, inputs=["X"], outputs=fwd_out), kernel=kernel,
           plain_kernel=kernel, doc=doc)
    def_op(grad_type, inputs=["X"] + fwd_out + ["Out@GRAD"], outputs=["X@GRAD"],
           attrs=_REDUCE_ATTRS, infer_shape=grads_like(**{"X@GRAD": "X"}),
           share_lod=("X", ["X@GRAD"]), kernel=grad_kernel, doc=f"Gradient of {type}.")


def _reduce_sum(xp, x, axes, keep, attrs):
    dtype = to_numpy_dtype(_sum_out_dtype(convert_dtype(x.dtype), attrs["out_dtype"]))
    return x.sum(axis=axes, dtype=dtype, keepdims=keep)


def _count(x, axes):
    n = 1
    for a in axes:
        n *= x.shape[a]
    return max(n, 1)


_reduce_op(
    "reduce_sum", _reduce_sum,
    lambda xp, x, out, dout, axes: xp.broadcast_to(dout, x.shape),
    grad_needs_out=False,
    doc="Out = sum of X over ``dim`` (all dims when ``reduce_all``); int32/bool sum to int64 "
        "unless ``out_dtype`` says otherwise (``in_dtype`` is accepted and ignored).")

def _reduce_mean(xp, x, axes, keep, attrs):
    """NumPy's ``mean`` without its Python steps on the host: the sum in X's float type
    (float32 for float16, float64 for integers and bools, as ``mean`` sums), divided by
    the count in float64 and cast to X's dtype, bit for bit ``x.mean(...).astype(x.dtype)``
    (a live reduction's cost was a third ``mean``'s frames); an empty reduction, whose
    mean warns and is NaN, is left to ``mean``."""
    count = _count(x, axes) if x.size else 0
    if xp is not np or not count:
        return x.mean(axis=axes, keepdims=keep).astype(x.dtype)
    kind = x.dtype.kind
    total = np.add.reduce(x, axes, None if kind == "f" and x.itemsize >= 4 else
                          np.float32 if kind == "f" else np.float64, None, keep)
    if kind == "f" and total.__class__ is not np.ndarray:  # (one number: divided as one)
        return x.dtype.type(float(total) / count)
    return np.true_divide(total, count, dtype=np.float64).astype(x.dtype)


_reduce_op(
    "reduce_mean", _reduce_mean,
    lambda xp, x, out, dout, axes: xp.broadcast_to(dout / _count(x, axes), x.shape),
    grad_needs_out=False,
    doc="Out = mean of X over ``dim``; dX = dOut / (number of reduced elements).")

_reduce_op(
    "reduce_max",
    lambda xp, x, axes, keep, attrs: x.max(axis=axes, keepdims=keep),
    lambda xp, x, out, dout, axes: dout * (x == out),
    grad_needs_out=True,
    doc="Out = max of X over ``dim``; dX = dOut where X equals the max (every tie).")

_reduce_op(
    "reduce_min",
    lambda xp, x, axes, keep, attrs: x.min(axis=axes, keepdims=keep),
    lambda xp, x, out, dout, axes: dout * (x == out),
    grad_needs_out=True,
    doc="Out = min of X over ``dim``; dX = dOut where X equals the min (every tie).")



def _prod_others(xp, x, out, dout, axes):
    """dOut times the product of the other reduced entries: exclusive prefix and suffix
    products along the reduced dims, so zeros in X need no division."""
    keep = [i for i in range(x.ndim) if i not in axes]
    moved = xp.transpose(x, keep + list(axes))
    flat = moved.reshape(moved.shape[:len(keep)] + (-1,))
    ones = xp.ones(flat.shape[:-1] + (1,), dtype=x.dtype)
    before = xp.cumprod(xp.concatenate([ones, flat[..., :-1]], axis=-1), axis=-1)
    after = xp.cumprod(xp.concatenate([ones, flat[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    others = (before * after).reshape(moved.shape)
    inverse = [0] * x.ndim
    for i, p in enumerate(keep + list(axes)):
        inverse[p] = i
    return xp.transpose(others, inverse) * dout


_reduce_op(
    "reduce_prod",
    lambda xp, x, axes, keep, attrs: x.prod(axis=axes, keepdims=keep),
    _prod_others,
    grad_needs_out=False,
    doc="Out = product of X over ``dim``; dX = dOut * (product of the other reduced "
        "entries), which is dOut * Out / X where X is not 0.")

# --- matrix products ---------------------------------------------------------------------------
def _swap(a):
    return a.swapaxes(-1, -2)


def _batch_of(a_batch, b_batch):
    """The broadcast of two batch-dim tuples, or None when they do not broadcast."""
    n = max(len(a_batch), len(b_batch))
    a = (1,) * (n - len(a_batch)) + tuple(a_batch)
    b = (1,) * (n - len(b_batch)) + tuple(b_batch)
    out = []
    for p, q in zip(a, b):
        if p == 1 or q == 1:
            out.append(q if p == 1 else p)
        elif dims_match(p, q):
            out.append(p if p >= 0 else q)
        else:
            return None
    return tuple(out)


def _product_grads(xp, xm, ym, dm, want_x, want_y):
    """Gradients of ``xm @ ym`` (batched, broadcasting) summed back to each operand."""
    dx = unbroadcast(xp, xp.matmul(dm, _swap(ym)), xm.shape) if want_x else None
    dy = unbroadcast(xp, xp.matmul(_swap(xm), dm), ym.shape) if want_y else None
    return dx, dy


def _from_matrix(grad, trans, shape):
    """Undo the transpose and reshape that turned an input into its matrix form."""
    if grad is None:
        return None
    return (_swap(grad) if trans else grad).reshape(shape)


# mul: flatten both to 2-D
def _mul_matrices(x, y, attrs):
    xn, yn = attrs["x_num_col_dims"], attrs["y_num_col_dims"]
    xm = x.reshape(_prod(x.shape[:xn]), _prod(x.shape[xn:]))
    ym = y.reshape(_prod(y.shape[:yn]), _prod(y.shape[yn:]))
    return xm, ym, tuple(x.shape[:xn]) + tuple(y.shape[yn:])


def _mul_infer(ctx):
    xs, ys = ctx.input_shape("X"), ctx.input_shape("Y")
    xn, yn = ctx.attr("x_num_col_dims"), ctx.attr("y_num_col_dims")
    ctx.check(0 < xn < len(xs), "attribute 'x_num_col_dims'", f"in [1, rank(X)={len(xs)})", xn)
    ctx.check(0 < yn < len(ys), "attribute 'y_num_col_dims'", f"in [1, rank(Y)={len(ys)})", yn)
    width, height = _prod(xs[xn:]), _prod(ys[:yn])
    ctx.check(dims_match(width, height), f"X {list(xs)} flattened at {xn} and Y {list(ys)} "
              f"flattened at {yn}", "X's width equal to Y's height", f"{width} against {height}")
    ctx.set_output("Out", tuple(xs[:xn]) + tuple(ys[yn:]), ctx.input_dtype("X"))


def _plain_matrices(x, y, attrs):
    """True for the fc layer's case: two matrices, nothing to flatten."""
    return x.ndim == 2 and y.ndim == 2 and attrs["x_num_col_dims"] == 1 \
        and attrs["y_num_col_dims"] == 1


def _mul_kernel(ctx, x, y):
    if _plain_matrices(x, y, ctx.attrs):
        return x.dot(y)  # for 2-D the same product as @, without the matmul ufunc's setup
    xm, ym, shape = _mul_matrices(x, y, ctx.attrs)
    return ctx.xp.matmul(xm, ym).reshape(shape)


def _transposed_weight(ctx, y):
    """Y^T laid out row-major, kept for the rest of the run while Y is the same array: BLAS
    multiplies by a row-major matrix up to twice as fast as by a transposed view, and a
    loop's weight is the same array for each of its steps. Not past the run, whose updates
    may write the weight in place as it ends (exec/update_commit.py), and through a weak
    reference, which does not keep them from it."""
    executor = getattr(ctx, "executor", None)
    run = None if executor is None else executor.run_token
    if y.size > (1 << 20) or run is None:  # (no second copy of a big weight; no run)
        return y.T
    held = ctx.cache.get("y_t")
    if held is None or held[1] is not run or held[0]() is not y:
        try:  # first sight of this Y in the run (a training step's weight): no copy
            ctx.cache["y_t"] = (weakref.ref(y), run, None)
        except TypeError:  # (an array type without weak references)
            pass
        return y.T
    if held[2] is None:  # seen again: a loop's weight, worth laying out once (a copy,
        # outside the arena on the host: kept past the run, it would split the arena)
        copy = y.T.copy if ctx.xp is np else None
        ctx.cache["y_t"] = held = (held[0], run, outside_the_arena(copy) if copy else
                                   y.T.copy())
    return held[2]


def _mul_grad_kernel(ctx, x, y, dout):
    if _plain_matrices(x, y, ctx.attrs):
        return (dout.dot(_transposed_weight(ctx, y)) if ctx.wants("X@GRAD") else None,
                x.T.dot(dout) if ctx.wants("Y@GRAD") else None)
    xm, ym, _ = _mul_matrices(x, y, ctx.attrs)
    dm = dout.reshape(xm.shape[0], ym.shape[1])
    dx, dy = _product_grads(ctx.xp, xm, ym, dm, ctx.wants("X@GRAD"), ctx.wants("Y@GRAD"))
    return _from_matrix(dx, False, x.shape), _from_matrix(dy, False, y.shape)


_MUL_ATTRS = {"x_num_col_dims": ("int", 1), "y_num_col_dims": ("int", 1)}
def_op("mul", inputs=["X", "Y"], outputs=["Out"], attrs=_MUL_ATTRS, infer_shape=_mul_infer,
       share_lod=("X", ["Out"]),
       grad=grad_maker("mul_grad", inputs=["X", "Y"], in_grads=["X", "Y"]),
       kernel=_mul_kernel, plain_kernel=_mul_kernel,
       doc="Out = flatten(X, x_num_col_dims) @ flatten(Y, y_num_col_dims), shaped "
           "X.shape[:x_num_col_dims] + Y.shape[y_num_col_dims:].")
def_op("mul_grad", inputs=["X", "Y", "Out@GRAD"], outputs=["X@GRAD?", "Y@GRAD?"],
       attrs=_MUL_ATTRS, infer_shape=grads_like(**{"X@GRAD": "X", "Y@GRAD": "Y"}),
       kernel=_mul_grad_kernel, doc="Gradient of mul: dX = dOut @ Y^T, dY = X^T @ dOut.")


# matmul (legacy): a vector X is a row [1, K], a vector Y a column [K, 1], before transposing
def _matmul_dims(op_type, xs, ys, tx, ty, heads=1):
    """(batch, height, width) of X and Y and the output shape, by Paddle's matmul rules;
    with ``heads`` > 1 see :func:`_head_pieces`."""
    def describe(shape, as_row, trans):
        s = list(shape)
        if len(s) == 1:
            s = [1, s[0]] if as_row else [s[0], 1]
        batch = 0 if len(s) == 2 else _prod(s[:-2])
        h, w = (s[-1], s[-2]) if trans else (s[-2], s[-1])
        return batch, h, w
    bx, hx, wx = describe(xs, True, tx)
    by, hy, wy = describe(ys, False, ty)
    if heads > 1:
        wy = _head_width(op_type, xs, ys, wx, hy, wy, heads)
    elif not dims_match(wx, hy):
        raise InvalidArgument(expected(op_type, f"X {list(xs)} and Y {list(ys)} (transpose_X="
                                       f"{tx}, transpose_Y={ty})",
                                       "X's width equal to Y's height", f"{wx} against {hy}"))
    if bx > 0 and by > 0 and bx != by:
        raise InvalidArgument(expected(op_type, f"batch sizes of X {list(xs)} and Y "
                                       f"{list(ys)}", "equal, or one operand 2-D",
                                       f"{bx} against {by}"))
    if bx != 0:
        out = list(xs[:-2]) + [hx, wy]
    elif by != 0:
        out = list(ys[:-2]) + [hx, wy]
    else:
        out = [hx, wy]
    if len(xs) == 1 and out[-2] == 1:
        out = out[:-2] + [out[-1]]
    if len(ys) == 1 and out[-1] == 1:
        out = out[:-1]
    return tuple(out)


def _head_width(op_type, xs, ys, wx, hy, wy, heads):
    """Out's width with ``heads`` heads: Y's width times heads when X's width is Y's height
    (Y cut into row blocks), Y's width when X's width is heads times Y's height (Y cut into
    column blocks)."""
    where = f"X {list(xs)} and Y {list(ys)} with head_number={heads}"
    if wx >= 0 and wx % heads:
        raise InvalidArgument(expected(op_type, where, "X's width a multiple of head_number",
                                       wx))
    if dims_match(wx, hy):
        return wy * heads if wy >= 0 else -1
    if wx == heads * hy and (wy < 0 or wy % heads == 0):
        return wy
    raise InvalidArgument(expected(op_type, where, "X's width equal to Y's height, or to "
                                   "head_number times it (Y's width a multiple of "
                                   "head_number)", f"{wx} against {hy} x {wy}"))


def _head_pieces(xp, xm, ym, heads):
    """The per-head operands of a multi-head matmul: X cut into ``heads`` column blocks,
    Y into row blocks (or column blocks when X's width is heads times Y's height); and the
    axis Y was cut along."""
    y_axis = -2 if xm.shape[-1] == ym.shape[-2] else -1
    return xp.split(xm, heads, axis=-1), xp.split(ym, heads, axis=y_axis), y_axis


def _matmul_matrices(x, y, tx, ty):
    def as_matrix(a, as_row, trans):
        if a.ndim == 1:
            a = a.reshape((1, -1) if as_row else (-1, 1))
        elif a.ndim > 2:
            a = a.reshape((-1,) + a.shape[-2:])
        return _swap(a) if trans else a
    return as_matrix(x, True, tx), as_matrix(y, False, ty)


def _matmul_infer(ctx):
    shape = _matmul_dims(ctx.op_type, ctx.input_shape("X"), ctx.input_shape("Y"),
                         ctx.attr("transpose_X"), ctx.attr("transpose_Y"),
                         ctx.attr("head_number"))
    ctx.set_output("Out", shape, ctx.input_dtype("X"))


#: (X's shape, Y's shape, transpose_X, transpose_Y, head_number) -> Out's shape, for the
#: kernel: the rules' walk was a third of a live matmul's Python
_MATMUL_SHAPES = {}


def _matmul_kernel(ctx, x, y):
    attrs = ctx.attrs
    tx, ty, alpha = attrs["transpose_X"], attrs["transpose_Y"], attrs["alpha"]
    heads = attrs["head_number"]
    key = (x.shape, y.shape, tx, ty, heads)
    shape = _MATMUL_SHAPES.get(key)
    if shape is None:
        shape = _MATMUL_SHAPES[key] = _matmul_dims("matmul", x.shape, y.shape, tx, ty, heads)
    xm, ym = _matmul_matrices(x, y, tx, ty)
    if heads > 1:
        xs, ys, _ = _head_pieces(ctx.xp, xm, ym, heads)
        out = ctx.xp.concatenate([ctx.xp.matmul(a, b) for a, b in zip(xs, ys)], axis=-1)
    else:
        out = ctx.xp.matmul(xm, ym)
    if alpha != 1.0:
        out = out * alpha
    return out.reshape(shape).astype(x.dtype, copy=False)


def _matmul_grad_kernel(ctx, x, y, dout):
    attrs = ctx.attrs
    tx, ty, alpha = attrs["transpose_X"], attrs["transpose_Y"], attrs["alpha"]
    xp, heads = ctx.xp, attrs["head_number"]
    xm, ym = _matmul_matrices(x, y, tx, ty)
    batch = xm.shape[:-2] or ym.shape[:-2]
    dm = dout.reshape(batch + (xm.shape[-2], -1))
    if alpha != 1.0:
        dm = dm * alpha
    want_x, want_y = ctx.wants("X@GRAD"), ctx.wants("Y@GRAD")
    if heads > 1:
        xs, ys, y_axis = _head_pieces(xp, xm, ym, heads)
        pieces = [_product_grads(xp, a, b, d, want_x, want_y)
                  for a, b, d in zip(xs, ys, xp.split(dm, heads, axis=-1))]
        dx = xp.concatenate([p[0] for p in pieces], axis=-1) if want_x else None
        dy = xp.concatenate([p[1] for p in pieces], axis=y_axis) if want_y else None
    else:
        dx, dy = _product_grads(xp, xm, ym, dm, want_x, want_y)
    return _from_matrix(dx, tx, x.shape), _from_matrix(dy, ty, y.shape)


_MATMUL_ATTRS = {"transpose_X": ("bool", False), "transpose_Y": ("bool", False),
                 "alpha": ("float", 1.0),
                 "head_number": ("int", 1, lambda v: None if v >= 1 else ">= 1")}
def_op("matmul", inputs=["X", "Y"], outputs=["Out"], attrs=_MATMUL_ATTRS,
       infer_shape=_matmul_infer, share_lod=("X", ["Out"]),
       grad=grad_maker("matmul_grad", inputs=["X", "Y"], in_grads=["X", "Y"]),
       kernel=_matmul_kernel, plain_kernel=_matmul_kernel,
       doc="Out = alpha * op(X) @ op(Y), batched over the leading dims (equal batch sizes, or "
           "one operand 2-D). A vector X is [1, K] and a vector Y is [K, 1] before the "
           "transposes; the vector's dim is dropped from Out again (two vectors give []). "
           "With head_number H > 1, X's columns are cut into H blocks and Y's rows (or, "
           "when X's width is H times Y's height, Y's columns) into H blocks, and Out "
           "concatenates the H block products along its last dim.")
def_op("matmul_grad", inputs=["X", "Y", "Out@GRAD"], outputs=["X@GRAD?", "Y@GRAD?"],
       attrs=_MATMUL_ATTRS, infer_shape=grads_like(**{"X@GRAD": "X", "Y@GRAD": "Y"}),
       kernel=_matmul_grad_kernel, doc="Gradient of matmul.")


# matmul_v2: numpy.matmul semantics plus trans_x / trans_y (ignored for vectors)
def _v2_matrix_shapes(xs, ys, tx, ty):
    xs, ys = tuple(xs), tuple(ys)
    xm = (1,) + xs if len(xs) == 1 else (xs[:-2] + (xs[-1], xs[-2]) if tx else xs)
    ym = ys + (1,) if len(ys) == 1 else (ys[:-2] + (ys[-1], ys[-2]) if ty else ys)
    return xm, ym


def _v2_out_shape(op_type, xs, ys, tx, ty):
    if not xs or not ys:
        raise InvalidArgument(expected(op_type, "ranks of X and Y", "at least 1",
                                       f"X {list(xs)}, Y {list(ys)}"))
    xm, ym = _v2_matrix_shapes(xs, ys, tx, ty)
    if not dims_match(xm[-1], ym[-2]):
        raise InvalidArgument(expected(op_type, f"X {list(xs)} and Y {list(ys)} (trans_x="
                                       f"{tx}, trans_y={ty})", "X's width equal to Y's height",
                                       f"{xm[-1]} against {ym[-2]}"))
    batch = _batch_of(xm[:-2], ym[:-2])
    if batch is None:
        raise InvalidArgument(expected(op_type, f"batch dims of X {list(xs)} and Y {list(ys)}",
                                       "broadcastable dims", f"{list(xm[:-2])} against "
                                       f"{list(ym[:-2])}"))
    return (batch + ((xm[-2],) if len(xs) > 1 else ()) + ((ym[-1],) if len(ys) > 1 else ()),
            xm, ym, batch)


def _v2_matrices(x, y, tx, ty):
    xm = x.reshape(1, -1) if x.ndim == 1 else (_swap(x) if tx else x)
    ym = y.reshape(-1, 1) if y.ndim == 1 else (_swap(y) if ty else y)
    return xm, ym


def _matmul_v2_infer(ctx):
    shape = _v2_out_shape(ctx.op_type, ctx.input_shape("X"), ctx.input_shape("Y"),
                          ctx.attr("trans_x"), ctx.attr("trans_y"))[0]
    ctx.set_output("Out", shape, ctx.input_dtype("X"))


def _matmul_v2_kernel(ctx, x, y):
    tx, ty = ctx.attrs["trans_x"], ctx.attrs["trans_y"]
    xm, ym = _v2_matrices(x, y, tx, ty)
    if x.ndim > 1 and y.ndim > 1:
        return ctx.xp.matmul(xm, ym)
    shape = _v2_out_shape("matmul_v2", x.shape, y.shape, tx, ty)[0]
    return ctx.xp.matmul(xm, ym).reshape(shape)


def _matmul_v2_grad_kernel(ctx, x, y, dout):
    tx, ty = ctx.attrs["trans_x"], ctx.attrs["trans_y"]
    _, xms, yms, batch = _v2_out_shape("matmul_v2_grad", x.shape, y.shape, tx, ty)
    xm, ym = _v2_matrices(x, y, tx, ty)
    dm = dout.reshape(batch + (xms[-2], yms[-1]))
    dx, dy = _product_grads(ctx.xp, xm, ym, dm, ctx.wants("X@GRAD"), ctx.wants("Y@GRAD"))
    return (_from_matrix(dx, tx and x.ndim > 1, x.shape),
            _from_matrix(dy, ty and y.ndim > 1, y.shape))


_MATMUL_V2_ATTRS = {"trans_x": ("bool", False), "trans_y": ("bool", False)}
def_op("matmul_v2", inputs=["X", "Y"], outputs=["Out"], attrs=_MATMUL_V2_ATTRS,
       infer_shape=_matmul_v2_infer,
       grad=grad_maker("matmul_v2_grad", inputs=["X", "Y"], in_grads=["X", "Y"]),
       kernel=_matmul_v2_kernel,
       doc="Out = op(X) @ op(Y) as numpy.matmul: batch dims broadcast, a vector X gains and "
           "loses a leading 1, a vector Y a trailing 1 (two vectors give []); trans_* apply "
           "to operands of rank >= 2. Out carries no LoD.")
def_op("matmul_v2_grad", inputs=["X", "Y", "Out@GRAD"], outputs=["X@GRAD?", "Y@GRAD?"],
       attrs=_MATMUL_V2_ATTRS, infer_shape=grads_like(**{"X@GRAD": "X", "Y@GRAD": "Y"}),
       kernel=_matmul_v2_grad_kernel, doc="Gradient of matmul_v2.")
