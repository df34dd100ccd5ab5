"""Activation ops: elementwise functions of one tensor, and clip.

Each grad op takes only what its formula needs, as Paddle's do: Out for relu, sigmoid,
tanh, exp and sqrt; X for leaky_relu, log, square, abs and clip.
"""
from ..errors import InvalidArgument, expected
from .common import unary_op
from .registry import def_op, grad_maker, same_shape


def _sigmoid(xp, x, attrs):
    # e^min(x,0) / (1 + e^-|x|) equals 1 / (1 + e^-x) but only ever takes exp of a
    # non-positive number: no overflow for very negative x, full precision for tiny outputs
    return xp.exp(xp.minimum(x, 0)) / (1 + xp.exp(-xp.abs(x)))


unary_op("relu",
         forward=lambda xp, x, a: xp.maximum(x, 0).astype(x.dtype, copy=False),
         backward=lambda xp, out, dout, a: dout * (out > 0),
         uses="Out", doc="Out = max(X, 0); dX = dOut where Out > 0.")

unary_op("leaky_relu",
         forward=lambda xp, x, a: xp.where(x > 0, x, x * a["alpha"]).astype(x.dtype, copy=False),
         backward=lambda xp, x, dout, a: xp.where(x > 0, dout, dout * a["alpha"]),
         uses="X", attrs={"alpha": ("float", 0.02)},
         doc="Out = X where X > 0, else alpha * X; dX = dOut or alpha * dOut likewise.")

unary_op("sigmoid", forward=_sigmoid,
         backward=lambda xp, out, dout, a: dout * out * (1 - out),
         uses="Out", doc="Out = 1 / (1 + exp(-X)); dX = dOut * Out * (1 - Out).")

def _tanh_grad(xp, out, dout, a):
    if out.dtype != dout.dtype or out.shape != dout.shape:
        return dout * (1 - out * out)
    grad = out * out  # a new array of our own: the rest is done in it, in place
    xp.subtract(1, grad, out=grad)
    grad *= dout
    return grad


unary_op("tanh", forward=lambda xp, x, a: xp.tanh(x),
         backward=_tanh_grad,
         uses="Out", doc="Out = tanh(X); dX = dOut * (1 - Out^2).")

unary_op("exp", forward=lambda xp, x, a: xp.exp(x),
         backward=lambda xp, out, dout, a: dout * out,
         uses="Out", doc="Out = e^X; dX = dOut * Out.")

unary_op("log", forward=lambda xp, x, a: xp.log(x),
         backward=lambda xp, x, dout, a: dout / x,
         uses="X", doc="Out = ln(X); dX = dOut / X.")

unary_op("sqrt", forward=lambda xp, x, a: xp.sqrt(x),
         backward=lambda xp, out, dout, a: dout * 0.5 / out,
         uses="Out", doc="Out = sqrt(X); dX = 0.5 * dOut / Out.")

unary_op("square", forward=lambda xp, x, a: x * x,
         backward=lambda xp, x, dout, a: dout * 2 * x,
         uses="X", doc="Out = X^2; dX = 2 * X * dOut.")

unary_op("abs", forward=lambda xp, x, a: xp.abs(x),
         backward=lambda xp, x, dout, a: dout * xp.sign(x),
         uses="X", doc="Out = |X|; dX = sign(X) * dOut (0 at X = 0).")


# --- clip: bounds from attributes, or from the optional Min / Max tensors -------------------
def _clip_bounds(ctx, x, min_t, max_t):
    attrs = ctx.attrs
    lo = attrs["min"] if min_t is None else min_t.reshape(-1)[0].item()
    hi = attrs["max"] if max_t is None else max_t.reshape(-1)[0].item()
    if lo > hi:
        raise InvalidArgument(expected("clip", "min", f"at most max ({hi})", lo))
    if x.dtype.kind in "iu":  # Paddle casts the bounds to the tensor's type
        lo, hi = int(lo), int(hi)
    return lo, hi


def _clip_infer(ctx):
    attrs = ctx.attrs()
    for name in ("min", "max"):
        ctx.check(name in attrs, f"attribute '{name}'", "a float", "none")
    if not ctx.has_input("Min") and not ctx.has_input("Max"):
        ctx.check(attrs["min"] <= attrs["max"], "attribute 'min'",
                  f"at most max ({attrs['max']})", attrs["min"])
    same_shape("X", "Out")(ctx)


def _clip_kernel(ctx, x, min_t, max_t):
    lo, hi = _clip_bounds(ctx, x, min_t, max_t)
    return ctx.xp.clip(x, lo, hi).astype(x.dtype, copy=False)


def _clip_grad_kernel(ctx, x, min_t, max_t, dout):
    lo, hi = _clip_bounds(ctx, x, min_t, max_t)
    return (dout * ((x > lo) & (x < hi))).astype(dout.dtype, copy=False)


_CLIP_ATTRS = {"min": ("float", None), "max": ("float", None)}
def_op("clip", inputs=["X", "Min?", "Max?"], outputs=["Out"], attrs=_CLIP_ATTRS,
       infer_shape=_clip_infer, share_lod=("X", ["Out"]),
       grad=grad_maker("clip_grad", inputs=["X", "Min", "Max"]),
       kernel=_clip_kernel,
       doc="Out = min(max(X, min), max); the Min / Max tensors (one element), when given, "
           "replace the attributes, which Paddle still requires. dX = dOut where "
           "min < X < max, else 0.")
def_op("clip_grad", inputs=["X", "Min?", "Max?", "Out@GRAD"], outputs=["X@GRAD"],
       attrs=_CLIP_ATTRS, infer_shape=same_shape("X", "X@GRAD"), kernel=_clip_grad_kernel,
       doc="Gradient of clip.")
