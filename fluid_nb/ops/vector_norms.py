"""Vector norms and distances: ``norm`` (L2 normalisation along an axis), ``p_norm``,
``l1_norm``, ``frobenius_norm`` and ``squared_l2_distance``."""
import math

from ..errors import InvalidArgument, expected
from ..framework.infer import dims_match
from ..framework.registry import def_op, grad_maker, grads_like


def _axis(fail, axis, rank):
    if not -rank <= axis < max(rank, 1):
        fail("attribute 'axis'", f"in [{-rank}, {rank})", axis)
    return axis % max(rank, 1)


def _failing(op):
    def fail(what, want, got):
        raise InvalidArgument(expected(op, what, want, got))
    return fail


# --- norm: L2 normalisation -------------------------------------------------------------------
_NORM_ATTRS = {"axis": ("int", 1), "epsilon": ("float", 1e-10), "is_test": ("bool", False)}


def _norm_infer(ctx):
    x = list(ctx.input_shape("X"))
    axis = _axis(ctx.fail, ctx.attr("axis"), len(x))
    dtype = ctx.input_dtype("X")
    ctx.set_output("Out", x, dtype)
    if ctx.has_output("Norm"):
        ctx.set_output("Norm", x[:axis] + [1] + x[axis + 1:], dtype)


def _norm(ctx, x):
    axis = _axis(_failing("norm"), ctx.attrs["axis"], x.ndim)
    norm = ctx.xp.sqrt((x * x).sum(axis=axis, keepdims=True) + ctx.attrs["epsilon"])
    norm = norm.astype(x.dtype, copy=False)
    return (x / norm).astype(x.dtype, copy=False), norm


def _norm_grad(ctx, x, norm, dout):
    axis = _axis(_failing("norm_grad"), ctx.attrs["axis"], x.ndim)
    inner = (x * dout).sum(axis=axis, keepdims=True)
    return (dout / norm - x * inner / (norm * norm * norm)).astype(x.dtype, copy=False)


def_op("norm", inputs=["X"], outputs=["Out", "Norm!"], attrs=_NORM_ATTRS,
       infer_shape=_norm_infer, share_lod=("X", ["Out"]),
       grad=grad_maker("norm_grad", inputs=["X"], outputs=["Norm"], out_grads=["Out"],
                       in_grads=["X"]),
       kernel=_norm,
       doc="Norm = sqrt(sum(X^2, axis) + epsilon) (kept as a size-1 dim); Out = X / Norm.")
def_op("norm_grad", inputs=["X", "Norm", "Out@GRAD"], outputs=["X@GRAD"], attrs=_NORM_ATTRS,
       infer_shape=grads_like(**{"X@GRAD": "X"}), kernel=_norm_grad,
       doc="dX = dOut / Norm - X * sum(X * dOut, axis) / Norm^3.")


# --- p_norm ------------------------------------------------------------------------------------
_P_NORM_ATTRS = {"porder": ("float", 2.0), "axis": ("int", -1), "epsilon": ("float", 1e-12),
                 "keepdim": ("bool", False), "asvector": ("bool", False)}


def _p_norm_shape(fail, attrs, shape):
    shape = list(shape)
    if attrs["asvector"]:
        return [1] * len(shape) if attrs["keepdim"] else [1]
    axis = _axis(fail, attrs["axis"], len(shape))
    if attrs["keepdim"]:
        return shape[:axis] + [1] + shape[axis + 1:]
    out = shape[:axis] + shape[axis + 1:]
    return out or [1]


def _p_norm_infer(ctx):
    shape = _p_norm_shape(ctx.fail, ctx.attrs(), ctx.input_shape("X"))
    ctx.set_output("Out", shape, ctx.input_dtype("X"))


def _p_norm_kept(xp, x, attrs):
    """The norm with the reduced dims kept as 1s (broadcasts against X)."""
    p = attrs["porder"]
    axis = None if attrs["asvector"] else attrs["axis"] % max(x.ndim, 1)
    a = xp.abs(x)
    if p == float("inf"):
        return a.max(axis=axis, keepdims=True)
    if p == float("-inf"):
        return a.min(axis=axis, keepdims=True)
    if p == 0:
        return (a != 0).sum(axis=axis, keepdims=True).astype(x.dtype)
    return (a ** p).sum(axis=axis, keepdims=True) ** (1.0 / p)


def _p_norm(ctx, x):
    shape = _p_norm_shape(_failing("p_norm"), ctx.attrs, x.shape)
    return _p_norm_kept(ctx.xp, x, ctx.attrs).astype(x.dtype, copy=False).reshape(shape)


def _p_norm_grad(ctx, x, out, dout):
    xp, attrs = ctx.xp, ctx.attrs
    p = attrs["porder"]
    norm = _p_norm_kept(xp, x, attrs)
    dout = dout.reshape(norm.shape)
    a = xp.abs(x)
    if p in (float("inf"), float("-inf")):  # the gradient goes to the entries that decide
        dx = xp.sign(x) * (a == norm) * dout
    elif p == 0:
        dx = xp.zeros_like(x)
    else:
        dx = a ** (p - 1) * xp.sign(x) * dout / (norm ** (p - 1) + attrs["epsilon"])
    return dx.astype(x.dtype, copy=False)


def_op("p_norm", inputs=["X"], outputs=["Out"], attrs=_P_NORM_ATTRS,
       infer_shape=_p_norm_infer,
       grad=grad_maker("p_norm_grad", inputs=["X"], outputs=["Out"], out_grads=["Out"],
                       in_grads=["X"]),
       kernel=_p_norm,
       doc="Out = (sum(|X|^p, axis))^(1/p) (over all of X when asvector); p = porder, with "
           "inf: max |X|, -inf: min |X|, 0: the count of non-zeros.")
def_op("p_norm_grad", inputs=["X", "Out", "Out@GRAD"], outputs=["X@GRAD"],
       attrs=_P_NORM_ATTRS, infer_shape=grads_like(**{"X@GRAD": "X"}), kernel=_p_norm_grad,
       doc="dX = |X|^(p-1) sign(X) dOut / (Out^(p-1) + epsilon); for p = +-inf dOut goes to "
           "the entries whose |X| is the norm.")


# --- l1_norm -----------------------------------------------------------------------------------
def_op("l1_norm", inputs=["X"], outputs=["Out"],
       infer_shape=lambda ctx: ctx.set_output("Out", [1], ctx.input_dtype("X")),
       grad=grad_maker("l1_norm_grad", inputs=["X"], out_grads=["Out"], in_grads=["X"]),
       kernel=lambda ctx, x: ctx.xp.abs(x).sum().reshape(1).astype(x.dtype, copy=False),
       doc="Out = sum(|X|) over every entry, of shape [1].")
def_op("l1_norm_grad", inputs=["X", "Out@GRAD"], outputs=["X@GRAD"],
       infer_shape=grads_like(**{"X@GRAD": "X"}),
       kernel=lambda ctx, x, dout: (ctx.xp.sign(x) * dout.reshape(())).astype(x.dtype),
       doc="dX = sign(X) * dOut.")


# --- frobenius_norm ----------------------------------------------------------------------------
_FROBENIUS_ATTRS = {"dim": ("ints", [0]), "keep_dim": ("bool", False),
                    "reduce_all": ("bool", False)}


def _frobenius_axes(fail, attrs, rank):
    dims = attrs["dim"]
    for d in dims:
        if rank and not -rank <= d < rank:
            fail("attribute 'dim'", f"values in [{-rank}, {rank})", list(dims))
    if attrs["reduce_all"] or not dims or len(dims) == rank or rank == 0:
        return tuple(range(rank))
    return tuple(sorted({d % rank for d in dims}))


def _frobenius_shape(shape, axes, keep):
    if keep:
        return [1 if i in axes else d for i, d in enumerate(shape)]
    return [d for i, d in enumerate(shape) if i not in axes] or [1]


def _frobenius_infer(ctx):
    shape = ctx.input_shape("X")
    attrs = ctx.attrs()
    axes = _frobenius_axes(ctx.fail, attrs, len(shape))
    ctx.set_output("Out", _frobenius_shape(shape, axes, attrs["keep_dim"]),
                   ctx.input_dtype("X"))


def _frobenius(ctx, x):
    attrs = ctx.attrs
    axes = _frobenius_axes(_failing("frobenius_norm"), attrs, x.ndim)
    out = ctx.xp.sqrt((x * x).sum(axis=axes))
    return out.reshape(_frobenius_shape(x.shape, axes, attrs["keep_dim"])).astype(x.dtype)


def _frobenius_grad(ctx, x, out, dout):
    axes = _frobenius_axes(_failing("frobenius_norm_grad"), ctx.attrs, x.ndim)
    kept = _frobenius_shape(x.shape, axes, True)
    return (x * dout.reshape(kept) / out.reshape(kept)).astype(x.dtype, copy=False)


def_op("frobenius_norm", inputs=["X"], outputs=["Out"], attrs=_FROBENIUS_ATTRS,
       infer_shape=_frobenius_infer,
       grad=grad_maker("frobenius_norm_grad", inputs=["X"], outputs=["Out"],
                       out_grads=["Out"], in_grads=["X"]),
       kernel=_frobenius,
       doc="Out = sqrt(sum(X^2)) over ``dim`` (all dims with reduce_all), as the reduce ops "
           "reduce.")
def_op("frobenius_norm_grad", inputs=["X", "Out", "Out@GRAD"], outputs=["X@GRAD"],
       attrs=_FROBENIUS_ATTRS, infer_shape=grads_like(**{"X@GRAD": "X"}),
       kernel=_frobenius_grad, doc="dX = X * dOut / Out.")


# --- squared_l2_distance -----------------------------------------------------------------------
def _rows(a):
    return a.reshape(a.shape[0], -1)


def _sq_l2_infer(ctx):
    x, y = list(ctx.input_shape("X")), list(ctx.input_shape("Y"))
    ctx.check(len(x) == len(y) and all(dims_match(a, b) for a, b in zip(x[1:], y[1:])),
              "input 'Y'", f"the shape of X {x} after dim 0", y)
    ctx.check(dims_match(y[0], x[0]) or y[0] == 1, "input 'Y' dim 0",
              f"X's dim 0 ({x[0]}) or 1", y[0])
    cols = -1 if any(d < 0 for d in x[1:]) else math.prod(x[1:])
    dtype = ctx.input_dtype("X")
    ctx.set_output("sub_result", [x[0], cols], dtype)
    ctx.set_output("Out", [x[0], 1], dtype)


def _sq_l2(ctx, x, y):
    sub = _rows(x) - _rows(y)
    return sub, (sub * sub).sum(axis=1, keepdims=True)


def _sq_l2_grad(ctx, sub, x, y, dout):
    d_sub = 2 * sub * dout
    dx = d_sub.reshape(x.shape).astype(x.dtype) if ctx.wants("X@GRAD") else None
    dy = None
    if ctx.wants("Y@GRAD"):
        dy = -d_sub
        if y.shape[0] != x.shape[0]:
            dy = dy.sum(axis=0, keepdims=True)
        dy = dy.reshape(y.shape).astype(y.dtype)
    return dx, dy


def _sq_l2_grad_maker(g):
    return [g.op("squared_l2_distance_grad",
                 {"sub_result": g.output("sub_result"), "X": g.input("X"), "Y": g.input("Y"),
                  "Out@GRAD": g.output_grad("Out")},
                 {"X@GRAD": g.input_grad("X"), "Y@GRAD": g.input_grad("Y")})]


_sq_l2_grad_maker.grad_type = "squared_l2_distance_grad"

def_op("squared_l2_distance", inputs=["X", "Y"], outputs=["sub_result!", "Out"],
       infer_shape=_sq_l2_infer, share_lod=("X", ["Out"]), grad=_sq_l2_grad_maker,
       kernel=_sq_l2,
       doc="sub_result = X - Y with every dim after the first flattened ([N, D]; a Y of one "
           "row is used for every row of X); Out[i] = sum_j sub_result[i, j]^2 ([N, 1]).")
def_op("squared_l2_distance_grad", inputs=["sub_result", "X", "Y", "Out@GRAD"],
       outputs=["X@GRAD", "Y@GRAD"], infer_shape=grads_like(**{"X@GRAD": "X", "Y@GRAD": "Y"}),
       kernel=_sq_l2_grad, traits=("optional_outputs",),
       doc="dX = 2 sub_result dOut; dY = -2 sub_result dOut, summed over rows when Y was "
           "broadcast.")
