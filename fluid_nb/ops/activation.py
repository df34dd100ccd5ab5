"""Activation ops: elementwise functions of one tensor, and clip.

Each grad op takes only what its formula needs, as Paddle's do: Out for relu, sigmoid,
tanh, exp and sqrt; X for leaky_relu, log, square, abs and clip.
"""
import numpy as np

from ..errors import InvalidArgument, InvalidType, expected
from ..tensor.dtypes import VarType, dtype_name
from .common import unary_op
from ..framework.registry import def_op, find, grad_maker, same_shape


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
    # a bound from a tensor is a 0-d array: on a device it is compared with X there, never
    # read on the host (so min <= max is checked on the host only)
    attrs = ctx.attrs
    lo = attrs["min"] if min_t is None else min_t.reshape(-1)[0]
    hi = attrs["max"] if max_t is None else max_t.reshape(-1)[0]
    if ctx.xp is np and lo > hi:
        raise InvalidArgument(expected("clip", "min", f"at most max ({hi})", lo))

    def as_x(bound, tensor):  # Paddle casts the bounds to the tensor's type
        if tensor is not None:
            return bound.astype(x.dtype)
        return int(bound) if x.dtype.kind in "iu" else bound
    return as_x(lo, min_t), as_x(hi, max_t)


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


# --- the rest of Fluid 1.8's activations --------------------------------------------------------
def _erf(xp, x):
    """The error function elementwise (NumPy has none: math.erf per element on the host,
    CuPy's own on the device: cupyx.scipy.special's, which the strict device stands in for
    as its module's ``scipy_special``)."""
    if xp.__name__ == "numpy":
        import math
        return xp.vectorize(math.erf, otypes=[x.dtype])(x) if x.size else x.copy()
    special = getattr(xp, "scipy_special", None)
    if special is None:
        from cupyx.scipy import special
    return special.erf(x)


def _sigmoid_of(xp, x):
    return _sigmoid(xp, x, None)


def _gelu(xp, x, a):
    if a["approximate"]:
        inner = 0.7978845608028654 * (x + 0.044715 * x ** 3)
        return (0.5 * x * (1 + xp.tanh(inner))).astype(x.dtype, copy=False)
    return (0.5 * x * (1 + _erf(xp, x * 0.7071067811865476))).astype(x.dtype, copy=False)


def _gelu_grad(xp, x, dout, a):
    if a["approximate"]:
        inner = 0.7978845608028654 * (x + 0.044715 * x ** 3)
        t = xp.tanh(inner)
        d_inner = 0.7978845608028654 * (1 + 3 * 0.044715 * x * x)
        return dout * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * d_inner)
    pdf = xp.exp(-0.5 * x * x) * 0.3989422804014327
    return dout * (0.5 * (1 + _erf(xp, x * 0.7071067811865476)) + x * pdf)


def _softplus(xp, x, a):
    beta, threshold = a["beta"], a["threshold"]
    scaled = beta * x
    soft = xp.logaddexp(0, scaled) / beta
    return xp.where(scaled > threshold, x, soft).astype(x.dtype, copy=False)


unary_op("logsigmoid", forward=lambda xp, x, a: (-xp.logaddexp(0, -x)).astype(x.dtype),
         backward=lambda xp, x, dout, a: dout * _sigmoid_of(xp, -x),
         uses="X", doc="Out = log(1 / (1 + e^-X)); dX = dOut * sigmoid(-X).")

unary_op("tanh_shrink", forward=lambda xp, x, a: x - xp.tanh(x),
         backward=lambda xp, x, dout, a: dout * xp.tanh(x) ** 2,
         uses="X", doc="Out = X - tanh(X); dX = dOut * tanh(X)^2.")

unary_op("rsqrt", forward=lambda xp, x, a: 1 / xp.sqrt(x),
         backward=lambda xp, out, dout, a: dout * -0.5 * out ** 3,
         uses="Out", doc="Out = 1 / sqrt(X); dX = -0.5 * dOut * Out^3.")

unary_op("sin", forward=lambda xp, x, a: xp.sin(x),
         backward=lambda xp, x, dout, a: dout * xp.cos(x),
         uses="X", doc="Out = sin(X); dX = dOut * cos(X).")

unary_op("round", forward=lambda xp, x, a: xp.round(x),
         backward=lambda xp, x, dout, a: xp.zeros_like(dout),
         uses="X", doc="Out = X rounded to the nearest integer (halves to even); dX = 0.")

unary_op("reciprocal", forward=lambda xp, x, a: 1 / x,
         backward=lambda xp, out, dout, a: dout * -(out * out),
         uses="Out", doc="Out = 1 / X; dX = -dOut * Out^2.")

unary_op("softplus", forward=_softplus,
         backward=lambda xp, x, dout, a: xp.where(a["beta"] * x > a["threshold"], dout,
                                                  dout * _sigmoid_of(xp, a["beta"] * x)),
         uses="X", attrs={"beta": ("float", 1.0), "threshold": ("float", 20.0)},
         doc="Out = log(1 + e^(beta X)) / beta (X where beta X > threshold); dX = dOut * "
             "sigmoid(beta X) (dOut past the threshold).")

unary_op("softsign", forward=lambda xp, x, a: x / (1 + xp.abs(x)),
         backward=lambda xp, x, dout, a: dout / (1 + xp.abs(x)) ** 2,
         uses="X", doc="Out = X / (1 + |X|); dX = dOut / (1 + |X|)^2.")

unary_op("relu6",
         forward=lambda xp, x, a: xp.clip(x, 0, a["threshold"]).astype(x.dtype, copy=False),
         backward=lambda xp, out, dout, a: dout * ((out > 0) & (out < a["threshold"])),
         uses="Out", attrs={"threshold": ("float", 6.0)},
         doc="Out = min(max(X, 0), threshold); dX = dOut where 0 < Out < threshold.")

unary_op("softshrink",
         forward=lambda xp, x, a: xp.where(x > a["lambda"], x - a["lambda"], xp.where(
             x < -a["lambda"], x + a["lambda"], 0)).astype(x.dtype, copy=False),
         backward=lambda xp, x, dout, a: dout * (xp.abs(x) > a["lambda"]),
         uses="X", attrs={"lambda": ("float", 0.5)},
         doc="Out = X - lambda where X > lambda, X + lambda where X < -lambda, else 0; "
             "dX = dOut where |X| > lambda.")

unary_op("hard_sigmoid",
         forward=lambda xp, x, a: xp.clip(a["slope"] * x + a["offset"], 0, 1).astype(
             x.dtype, copy=False),
         backward=lambda xp, out, dout, a: dout * a["slope"] * ((out > 0) & (out < 1)),
         uses="Out", attrs={"slope": ("float", 0.2), "offset": ("float", 0.5)},
         doc="Out = clip(slope * X + offset, 0, 1); dX = slope * dOut where 0 < Out < 1.")

unary_op("swish",
         forward=lambda xp, x, a: (x * _sigmoid_of(xp, a["beta"] * x)).astype(x.dtype),
         backward=lambda xp, x, dout, a: dout * (
             _sigmoid_of(xp, a["beta"] * x) + a["beta"] * x * _sigmoid_of(xp, a["beta"] * x)
             * (1 - _sigmoid_of(xp, a["beta"] * x))),
         uses="X", attrs={"beta": ("float", 1.0)},
         doc="Out = X * sigmoid(beta X); dX = dOut * (s + beta X s (1 - s)), s = sigmoid(beta X).")

unary_op("gelu", forward=_gelu, backward=_gelu_grad, uses="X",
         attrs={"approximate": ("bool", False)},
         doc="Out = X * Phi(X) = 0.5 X (1 + erf(X / sqrt 2)) (with approximate: 0.5 X (1 + "
             "tanh(sqrt(2/pi) (X + 0.044715 X^3)))); dX = dOut * (Phi(X) + X phi(X)).")

unary_op("elu",
         forward=lambda xp, x, a: xp.where(x > 0, x, a["alpha"] * (xp.exp(xp.minimum(x, 0))
                                                                    - 1)).astype(x.dtype),
         backward=lambda xp, x, dout, a: xp.where(x > 0, dout,
                                                  dout * a["alpha"] * xp.exp(xp.minimum(x, 0))),
         uses="X", attrs={"alpha": ("float", 1.0)},
         doc="Out = X where X > 0, else alpha (e^X - 1); dX = dOut, or dOut alpha e^X.")


def _selu_scale(a):
    return a["scale"], a["alpha"]


def _softplus_plain(xp, x):
    return xp.logaddexp(0, x)


unary_op("log1p", forward=lambda xp, x, a: xp.log1p(x),
         backward=lambda xp, x, dout, a: dout / (1 + x),
         uses="X", doc="Out = ln(1 + X); dX = dOut / (1 + X).")

unary_op("erf", forward=lambda xp, x, a: _erf(xp, x),
         backward=lambda xp, x, dout, a: dout * 1.1283791670955126 * xp.exp(-x * x),
         uses="X", doc="Out = erf(X); dX = dOut * 2 / sqrt(pi) * e^(-X^2).")

unary_op("atan", forward=lambda xp, x, a: xp.arctan(x),
         backward=lambda xp, x, dout, a: dout / (1 + x * x),
         uses="X", doc="Out = atan(X); dX = dOut / (1 + X^2).")

unary_op("acos", forward=lambda xp, x, a: xp.arccos(x),
         backward=lambda xp, x, dout, a: -dout / xp.sqrt(1 - x * x),
         uses="X", doc="Out = acos(X); dX = -dOut / sqrt(1 - X^2).")

unary_op("asin", forward=lambda xp, x, a: xp.arcsin(x),
         backward=lambda xp, x, dout, a: dout / xp.sqrt(1 - x * x),
         uses="X", doc="Out = asin(X); dX = dOut / sqrt(1 - X^2).")

unary_op("hard_shrink",
         forward=lambda xp, x, a: xp.where(xp.abs(x) > a["threshold"], x, 0).astype(x.dtype),
         backward=lambda xp, x, dout, a: dout * (xp.abs(x) > a["threshold"]),
         uses="X", attrs={"threshold": ("float", 0.5)},
         doc="Out = X where |X| > threshold, else 0; dX = dOut there.")

unary_op("thresholded_relu",
         forward=lambda xp, x, a: xp.where(x > a["threshold"], x, 0).astype(x.dtype),
         backward=lambda xp, x, dout, a: dout * (x > a["threshold"]),
         uses="X", attrs={"threshold": ("float", 1.0)},
         doc="Out = X where X > threshold, else 0; dX = dOut there.")

unary_op("selu",
         forward=lambda xp, x, a: (a["scale"] * xp.where(
             x > 0, x, a["alpha"] * (xp.exp(xp.minimum(x, 0)) - 1))).astype(x.dtype),
         backward=lambda xp, out, dout, a: dout * xp.where(
             out > 0, a["scale"], out + a["scale"] * a["alpha"]),
         uses="Out", attrs={"scale": ("float", 1.0507009873554805),
                            "alpha": ("float", 1.6732632423543772)},
         doc="Out = scale * (X where X > 0, else alpha (e^X - 1)); dX = dOut * scale, or "
             "dOut * (Out + scale alpha).")

unary_op("stanh",
         forward=lambda xp, x, a: (a["scale_b"] * xp.tanh(a["scale_a"] * x)).astype(x.dtype),
         backward=lambda xp, x, dout, a: dout * a["scale_a"] * a["scale_b"] * (
             1 - xp.tanh(a["scale_a"] * x) ** 2),
         uses="X", attrs={"scale_a": ("float", 0.67), "scale_b": ("float", 1.7159)},
         doc="Out = scale_b tanh(scale_a X); dX = dOut scale_a scale_b (1 - tanh^2).")

unary_op("brelu",
         forward=lambda xp, x, a: xp.clip(x, a["t_min"], a["t_max"]).astype(x.dtype),
         backward=lambda xp, x, dout, a: dout * ((x > a["t_min"]) & (x < a["t_max"])),
         uses="X", attrs={"t_min": ("float", 0.0), "t_max": ("float", 24.0)},
         doc="Out = min(max(X, t_min), t_max); dX = dOut where t_min < X < t_max.")

unary_op("soft_relu",
         forward=lambda xp, x, a: _softplus_plain(xp, xp.clip(
             x, -a["threshold"], a["threshold"])).astype(x.dtype),
         backward=lambda xp, out, dout, a: dout * (1 - xp.exp(-out)) * (
             (out > -a["threshold"]) & (out < a["threshold"])),
         uses="Out", attrs={"threshold": ("float", 40.0)},
         doc="Out = ln(1 + e^clip(X, -threshold, threshold)); dX = dOut (1 - e^-Out) where "
             "-threshold < Out < threshold (Paddle's rule: it compares Out, not X).")

unary_op("hard_swish",
         forward=lambda xp, x, a: (x * xp.clip(x + a["offset"], 0, a["threshold"])
                                   / a["scale"]).astype(x.dtype),
         backward=lambda xp, x, dout, a: dout * xp.where(
             x + a["offset"] <= 0, 0, xp.where(x + a["offset"] >= a["threshold"],
                                               a["threshold"] / a["scale"],
                                               (2 * x + a["offset"]) / a["scale"])),
         uses="X", attrs={"threshold": ("float", 6.0), "scale": ("float", 6.0),
                          "offset": ("float", 3.0)},
         doc="Out = X * min(max(X + offset, 0), threshold) / scale; dX piecewise: 0, (2X + "
             "offset) / scale, threshold / scale.")


def _mish_softplus(xp, x, threshold):
    """softplus(X) as Paddle's mish takes it: X above threshold and e^X below -threshold
    (when threshold > 0), ln(1 + e^X) otherwise."""
    soft = xp.logaddexp(0, x)
    if threshold > 0:
        soft = xp.where(x > threshold, x, xp.where(x < -threshold, xp.exp(x), soft))
    return soft


def _mish(xp, x, a):
    return (x * xp.tanh(_mish_softplus(xp, x, a["threshold"]))).astype(x.dtype)


def _mish_grad(xp, x, dout, a):
    threshold = a["threshold"]
    t = xp.tanh(_mish_softplus(xp, x, threshold))
    dsoft = _sigmoid_of(xp, x)
    if threshold > 0:
        dsoft = xp.where(x > threshold, 1.0, xp.where(x < -threshold, xp.exp(x), dsoft))
    return dout * (t + x * (1 - t * t) * dsoft)


unary_op("mish", forward=_mish, backward=_mish_grad, uses="X",
         attrs={"threshold": ("float", 20.0)},
         doc="Out = X tanh(sp(X)), sp(X) = ln(1 + e^X), or X above threshold and e^X below "
             "-threshold when threshold > 0; dX = dOut (tanh(sp) + X (1 - tanh(sp)^2) sp'(X)).")


# --- the ops whose Paddle kernels take floating-point tensors only ------------------------------
FLOAT_TYPES = (VarType.FP16, VarType.FP32, VarType.FP64, VarType.BF16)

#: activations defined on real numbers only: an integer tensor is refused when the op is built
FLOAT_ONLY = ("sigmoid", "logsigmoid", "tanh", "tanh_shrink", "log", "sqrt", "rsqrt",
              "reciprocal", "softplus", "softsign", "softshrink", "hard_shrink", "hard_sigmoid",
              "swish", "gelu", "elu", "selu", "stanh", "brelu", "soft_relu", "hard_swish", "mish",
              "relu6", "thresholded_relu", "atan", "acos", "asin", "sin", "round", "erf")


def _refusing_integers(op_type, infer):
    def infer_floats(ctx):
        dtype = ctx.input_dtype("X")
        if dtype not in FLOAT_TYPES:
            raise InvalidType(expected(op_type, "input 'X'", "a float16, float32 or float64 "
                                       "tensor", dtype_name(dtype)))
        infer(ctx)
    return infer_floats


for _type in FLOAT_ONLY:
    _opdef = find(_type)
    _opdef.infer_shape = _refusing_integers(_type, _opdef.infer_shape)
del _type, _opdef
