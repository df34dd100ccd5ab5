"""Activation ops: elementwise functions of one tensor, each one record (``unary_op``)
whose forward and gradient are expressions (``ops/expr.py``) that every target renders:
the interpreter's NumPy/CuPy kernels, the native C++/CUDA code and ONNX nodes.

Each grad op takes only what its formula needs, as Paddle's do: Out for relu, sigmoid,
tanh, exp and sqrt; X for leaky_relu, log, square, abs and clip. Written in the stable form
once (sigmoid takes exp of a non-positive number only; softplus is ln(1 + e^x) without
overflow), every target gets that form. ``api`` holds what the layers API reads: a
``fluid.layers`` function of the op's name (``layer``), a name ``act=`` accepts (``act``),
the dtypes the layer takes (float types unless given) and its positional arguments.

clip (bounds from tensors too) is written out at the end.
"""
import numpy as np

from ..errors import InvalidArgument, expected
from .common import unary_op
from .expr import (DOUT, OUT, X, abs_, acos, asin, atan, attr, ceil, choose, cos, erf, exp,
                   floor, log,
                   log1p, maximum, minimum, round_, sigmoid, sign, sin, softplus, sqrt, tanh,
                   where)
from ..framework.registry import def_op, grad_maker, same_shape

#: the dtypes of the layers that take integers too (Fluid 1.8's exp, abs, square)
INT_OR_FLOAT = ("int32", "int64", "float16", "float32", "float64")
LAYER = {"layer": True, "act": True}


def _clip(value, low, high):
    """min(max(value, low), high), NaN kept (NumPy's clip)."""
    return minimum(maximum(value, low), high)


unary_op("relu", maximum(X, 0), DOUT * (OUT > 0), onnx="Relu", api={"act": True},
         doc="Out = max(X, 0); dX = dOut where Out > 0.")

unary_op("leaky_relu", where(X > 0, X, X * attr("alpha")),
         where(X > 0, DOUT, DOUT * attr("alpha")), attrs={"alpha": ("float", 0.02)},
         onnx=("LeakyRelu", {"alpha": "alpha"}), api={"act": True},
         doc="Out = X where X > 0, else alpha * X; dX = dOut or alpha * dOut likewise.")

# (no ONNX Sigmoid: onnxruntime's clamps its input, giving 0 from X = -88 on where
# e^min(X, 0) / (1 + e^-|X|) keeps the tiny outputs)
unary_op("sigmoid", sigmoid(X), DOUT * OUT * (1 - OUT), float_only=True, api=LAYER,
         doc="Out = 1 / (1 + exp(-X)); dX = dOut * Out * (1 - Out).")

unary_op("tanh", tanh(X), DOUT * (1 - OUT * OUT), float_only=True, onnx="Tanh", api=LAYER,
         doc="Out = tanh(X); dX = dOut * (1 - Out^2).")

unary_op("exp", exp(X), DOUT * OUT, onnx="Exp", api={**LAYER, "dtypes": INT_OR_FLOAT},
         doc="Out = e^X; dX = dOut * Out.")

unary_op("log", log(X), DOUT / X, float_only=True, onnx="Log", api={"act": True},
         doc="Out = ln(X); dX = dOut / X.")

unary_op("sqrt", sqrt(X), DOUT * 0.5 / OUT, float_only=True, onnx="Sqrt", api=LAYER,
         doc="Out = sqrt(X); dX = 0.5 * dOut / Out.")

unary_op("square", X * X, DOUT * 2 * X, api={**LAYER, "dtypes": INT_OR_FLOAT},
         doc="Out = X^2; dX = 2 * X * dOut.")

unary_op("abs", abs_(X), DOUT * sign(X), onnx="Abs", api={**LAYER, "dtypes": INT_OR_FLOAT},
         doc="Out = |X|; dX = sign(X) * dOut (0 at X = 0).")

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


def _clip_plain(ctx, x):
    return _clip_kernel(ctx, x, None, None)


def _clip_grad_kernel(ctx, x, min_t, max_t, dout):
    lo, hi = _clip_bounds(ctx, x, min_t, max_t)
    return (dout * ((x > lo) & (x < hi))).astype(dout.dtype, copy=False)


_CLIP_ATTRS = {"min": ("float", None), "max": ("float", None)}
def_op("clip", inputs=["X", "Min?", "Max?"], outputs=["Out"], attrs=_CLIP_ATTRS,
       infer_shape=_clip_infer, share_lod=("X", ["Out"]),
       grad=grad_maker("clip_grad", inputs=["X", "Min", "Max"]),
       kernel=_clip_kernel, plain_kernel=_clip_plain,
       doc="Out = min(max(X, min), max); the Min / Max tensors (one element), when given, "
           "replace the attributes, which Paddle still requires. dX = dOut where "
           "min < X < max, else 0.")
def_op("clip_grad", inputs=["X", "Min?", "Max?", "Out@GRAD"], outputs=["X@GRAD"],
       attrs=_CLIP_ATTRS, infer_shape=same_shape("X", "X@GRAD"), kernel=_clip_grad_kernel,
       doc="Gradient of clip.")


# --- the rest of Fluid 1.8's activations --------------------------------------------------------
unary_op("logsigmoid", -softplus(-X), DOUT * sigmoid(-X), float_only=True, api=LAYER,
         doc="Out = log(1 / (1 + e^-X)); dX = dOut * sigmoid(-X).")

unary_op("tanh_shrink", X - tanh(X), DOUT * tanh(X) ** 2, float_only=True, api=LAYER,
         doc="Out = X - tanh(X); dX = dOut * tanh(X)^2.")

unary_op("rsqrt", 1 / sqrt(X), DOUT * -0.5 * OUT ** 3, float_only=True, api=LAYER,
         doc="Out = 1 / sqrt(X); dX = -0.5 * dOut * Out^3.")

unary_op("sin", sin(X), DOUT * cos(X), float_only=True, onnx="Sin", api=LAYER,
         doc="Out = sin(X); dX = dOut * cos(X).")

unary_op("cos", cos(X), -DOUT * sin(X), onnx="Cos", api=LAYER,
         doc="Out = cos(X); dX = -dOut * sin(X).")

# the gradient of a step function is 0 everywhere it exists (a NaN dOut gives 0 too)
unary_op("round", round_(X), 0, float_only=True, onnx="Round", api=LAYER,
         doc="Out = X rounded to the nearest integer (halves to even); dX = 0.")

unary_op("floor", floor(X), 0, onnx="Floor", api=LAYER,
         doc="Out = floor(X); dX = 0 (it needs neither X nor Out).")

unary_op("ceil", ceil(X), 0, onnx="Ceil", api=LAYER,
         doc="Out = ceil(X); dX = 0 (it needs neither X nor Out).")

unary_op("reciprocal", 1 / X, DOUT * -(OUT * OUT), float_only=True, onnx="Reciprocal",
         api=LAYER, doc="Out = 1 / X; dX = -dOut * Out^2.")

_BETA_X = attr("beta") * X
unary_op("softplus", where(_BETA_X > attr("threshold"), X, softplus(_BETA_X) / attr("beta")),
         where(_BETA_X > attr("threshold"), DOUT, DOUT * sigmoid(_BETA_X)), float_only=True,
         attrs={"beta": ("float", 1.0), "threshold": ("float", 20.0)}, api=LAYER,
         doc="Out = log(1 + e^(beta X)) / beta (X where beta X > threshold); dX = dOut * "
             "sigmoid(beta X) (dOut past the threshold).")

unary_op("softsign", X / (1 + abs_(X)), DOUT / ((1 + abs_(X)) * (1 + abs_(X))),
         float_only=True, onnx="Softsign", api=LAYER,
         doc="Out = X / (1 + |X|); dX = dOut / (1 + |X|)^2.")

unary_op("relu6", _clip(X, 0, attr("threshold")),
         DOUT * ((OUT > 0) & (OUT < attr("threshold"))), float_only=True,
         attrs={"threshold": ("float", 6.0)},
         api={**LAYER, "arguments": [("threshold", "threshold", 6.0)]},
         doc="Out = min(max(X, 0), threshold); dX = dOut where 0 < Out < threshold.")

_LAMBDA = attr("lambda")
unary_op("softshrink", where(X > _LAMBDA, X - _LAMBDA, where(X < -_LAMBDA, X + _LAMBDA, 0)),
         DOUT * (abs_(X) > _LAMBDA), float_only=True, attrs={"lambda": ("float", 0.5)},
         onnx=("Shrink", {"lambd": "lambda", "bias": "lambda"}),
         api={**LAYER, "arguments": [("alpha", "lambda", None)]},
         doc="Out = X - lambda where X > lambda, X + lambda where X < -lambda, else 0; "
             "dX = dOut where |X| > lambda.")

unary_op("hard_sigmoid", _clip(attr("slope") * X + attr("offset"), 0, 1),
         DOUT * attr("slope") * ((OUT > 0) & (OUT < 1)), float_only=True,
         attrs={"slope": ("float", 0.2), "offset": ("float", 0.5)},
         onnx=("HardSigmoid", {"alpha": "slope", "beta": "offset"}),
         api={**LAYER, "arguments": [("slope", "slope", 0.2), ("offset", "offset", 0.5)]},
         doc="Out = clip(slope * X + offset, 0, 1); dX = slope * dOut where 0 < Out < 1.")

_S = sigmoid(_BETA_X)
unary_op("swish", X * _S, DOUT * (_S + _BETA_X * _S * (1 - _S)), float_only=True,
         attrs={"beta": ("float", 1.0)},
         api={**LAYER, "arguments": [("beta", "beta", 1.0)]},
         doc="Out = X * sigmoid(beta X); dX = dOut * (s + beta X s (1 - s)), s = sigmoid(beta X).")

_INNER = 0.7978845608028654 * (X + 0.044715 * X ** 3)  # sqrt(2/pi) (X + 0.044715 X^3)
_T = tanh(_INNER)
_PHI = 0.5 * (1 + erf(X * 0.7071067811865476))          # the normal CDF
unary_op("gelu",
         choose(attr("approximate"), 0.5 * X * (1 + _T), 0.5 * X * (1 + erf(X * 0.7071067811865476))),
         choose(attr("approximate"),
                DOUT * (0.5 * (1 + _T) + 0.5 * X * (1 - _T * _T)
                        * (0.7978845608028654 * (1 + 3 * 0.044715 * X * X))),
                DOUT * (_PHI + X * (exp(-0.5 * X * X) * 0.3989422804014327))),
         float_only=True, attrs={"approximate": ("bool", False)},
         api={**LAYER, "arguments": [("approximate", "approximate", False)]},
         doc="Out = X * Phi(X) = 0.5 X (1 + erf(X / sqrt 2)) (with approximate: 0.5 X (1 + "
             "tanh(sqrt(2/pi) (X + 0.044715 X^3)))); dX = dOut * (Phi(X) + X phi(X)).")

_EXPM1_NEG = exp(minimum(X, 0)) - 1  # e^X - 1 taken where X <= 0 only: no overflow
unary_op("elu", where(X > 0, X, attr("alpha") * _EXPM1_NEG),
         where(X > 0, DOUT, DOUT * attr("alpha") * exp(minimum(X, 0))), float_only=True,
         attrs={"alpha": ("float", 1.0)}, onnx=("Elu", {"alpha": "alpha"}),
         api={**LAYER, "arguments": [("alpha", "alpha", 1.0)]},
         doc="Out = X where X > 0, else alpha (e^X - 1); dX = dOut, or dOut alpha e^X.")

unary_op("log1p", log1p(X), DOUT / (1 + X),
         doc="Out = ln(1 + X); dX = dOut / (1 + X).")

unary_op("erf", erf(X), DOUT * 1.1283791670955126 * exp(-X * X), float_only=True,
         onnx="Erf", doc="Out = erf(X); dX = dOut * 2 / sqrt(pi) * e^(-X^2).")

unary_op("atan", atan(X), DOUT / (1 + X * X), float_only=True, onnx="Atan",
         doc="Out = atan(X); dX = dOut / (1 + X^2).")

unary_op("acos", acos(X), -DOUT / sqrt(1 - X * X), float_only=True, onnx="Acos",
         doc="Out = acos(X); dX = -dOut / sqrt(1 - X^2).")

unary_op("asin", asin(X), DOUT / sqrt(1 - X * X), float_only=True, onnx="Asin",
         doc="Out = asin(X); dX = dOut / sqrt(1 - X^2).")

unary_op("hard_shrink", where(abs_(X) > attr("threshold"), X, 0),
         DOUT * (abs_(X) > attr("threshold")), float_only=True,
         attrs={"threshold": ("float", 0.5)}, onnx=("Shrink", {"lambd": "threshold"}),
         doc="Out = X where |X| > threshold, else 0; dX = dOut there.")

unary_op("thresholded_relu", where(X > attr("threshold"), X, 0),
         DOUT * (X > attr("threshold")), float_only=True, attrs={"threshold": ("float", 1.0)},
         onnx=("ThresholdedRelu", {"alpha": "threshold"}), api={"act": True},
         doc="Out = X where X > threshold, else 0; dX = dOut there.")

unary_op("selu", attr("scale") * where(X > 0, X, attr("alpha") * _EXPM1_NEG),
         DOUT * where(OUT > 0, attr("scale"), OUT + attr("scale") * attr("alpha")),
         float_only=True, attrs={"scale": ("float", 1.0507009873554805),
                                 "alpha": ("float", 1.6732632423543772)},
         onnx=("Selu", {"alpha": "alpha", "gamma": "scale"}), api={"act": True},
         doc="Out = scale * (X where X > 0, else alpha (e^X - 1)); dX = dOut * scale, or "
             "dOut * (Out + scale alpha).")

_TANH_A = tanh(attr("scale_a") * X)
unary_op("stanh", attr("scale_b") * _TANH_A,
         DOUT * attr("scale_a") * attr("scale_b") * (1 - _TANH_A ** 2), float_only=True,
         attrs={"scale_a": ("float", 0.67), "scale_b": ("float", 1.7159)}, api={"act": True},
         doc="Out = scale_b tanh(scale_a X); dX = dOut scale_a scale_b (1 - tanh^2).")

unary_op("brelu", _clip(X, attr("t_min"), attr("t_max")),
         DOUT * ((X > attr("t_min")) & (X < attr("t_max"))), float_only=True,
         attrs={"t_min": ("float", 0.0), "t_max": ("float", 24.0)}, api={"act": True},
         doc="Out = min(max(X, t_min), t_max); dX = dOut where t_min < X < t_max.")

_SOFT_T = attr("threshold")
unary_op("soft_relu", softplus(_clip(X, -_SOFT_T, _SOFT_T)),
         DOUT * (1 - exp(-OUT)) * ((OUT > -_SOFT_T) & (OUT < _SOFT_T)), float_only=True,
         attrs={"threshold": ("float", 40.0)}, api={"act": True},
         doc="Out = ln(1 + e^clip(X, -threshold, threshold)); dX = dOut (1 - e^-Out) where "
             "-threshold < Out < threshold (Paddle's rule: it compares Out, not X).")

_SHIFTED = X + attr("offset")
unary_op("hard_swish", X * _clip(_SHIFTED, 0, attr("threshold")) / attr("scale"),
         DOUT * where(_SHIFTED <= 0, 0, where(_SHIFTED >= attr("threshold"),
                                              attr("threshold") / attr("scale"),
                                              (2 * X + attr("offset")) / attr("scale"))),
         float_only=True, attrs={"threshold": ("float", 6.0), "scale": ("float", 6.0),
                                 "offset": ("float", 3.0)}, api={"act": True},
         doc="Out = X * min(max(X + offset, 0), threshold) / scale; dX piecewise: 0, (2X + "
             "offset) / scale, threshold / scale.")

# mish's softplus as Paddle takes it: X above threshold and e^X below -threshold (when
# threshold > 0), ln(1 + e^X) otherwise; and its derivative likewise
_MT = attr("threshold")
_SP = choose(_MT > 0, where(X > _MT, X, where(X < -_MT, exp(X), softplus(X))), softplus(X))
_DSP = choose(_MT > 0, where(X > _MT, 1, where(X < -_MT, exp(X), sigmoid(X))), sigmoid(X))
_TSP = tanh(_SP)
unary_op("mish", X * _TSP, DOUT * (_TSP + X * (1 - _TSP * _TSP) * _DSP), float_only=True,
         attrs={"threshold": ("float", 20.0)},
         doc="Out = X tanh(sp(X)), sp(X) = ln(1 + e^X), or X above threshold and e^X below "
             "-threshold when threshold > 0; dX = dOut (tanh(sp) + X (1 - tanh(sp)^2) sp'(X)).")
