"""Math layers of Fluid 1.8 beyond the elementwise ones: more activations with their
parameters (selu, stanh, brelu, soft_relu, hard_swish, mish, hard_shrink,
thresholded_relu), elementwise functions (log1p, erf, atan, acos, asin, sign, pow), and
``sum`` / ``clip_by_norm``. Each appends one op of the same name (``sum``: the op ``sum``)
with Paddle's attributes."""
from ..errors import InvalidArgument
from ..framework.program import Variable
from ..layer_helper import LayerHelper
from .arg_checks import NAME, NUMBER, check, checks, optional, real_in, variable, variables

__all__ = ["log1p", "erf", "atan", "acos", "asin", "hard_shrink", "thresholded_relu", "selu",
           "stanh", "brelu", "soft_relu", "hard_swish", "mish", "pow", "sum", "sign",
           "clip_by_norm"]

_FLOATS = ("float16", "float32", "float64")


def _float_input(where, x):
    """Fluid's check: these layers take float tensors only."""
    from ..framework.dtypes import dtype_name
    from ..errors import InvalidType, expected
    check(where, "x", x, variable)
    if dtype_name(x.dtype) not in _FLOATS:
        raise InvalidType(expected(where, "x's dtype", "float16, float32 or float64",
                                   dtype_name(x.dtype)))


def _unary(op_type, x, attrs=None, name=None):
    _float_input(op_type, x)
    check(op_type, "name", name, NAME)
    helper = LayerHelper(op_type, name=name)
    out = helper.create_variable_for_type_inference(x.dtype) if name is None else \
        helper.create_variable(name=name, dtype=x.dtype, persistable=False)
    helper.append_op(type=op_type, inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={k: float(v) for k, v in (attrs or {}).items()})
    return out


def log1p(x, name=None):
    """Out = ln(1 + X)."""
    return _unary("log1p", x, name=name)


def erf(x, name=None):
    """Out = erf(X)."""
    return _unary("erf", x, name=name)


def atan(x, name=None):
    """Out = atan(X)."""
    return _unary("atan", x, name=name)


def acos(x, name=None):
    """Out = acos(X)."""
    return _unary("acos", x, name=name)


def asin(x, name=None):
    """Out = asin(X)."""
    return _unary("asin", x, name=name)


@checks(threshold=optional(real_in(0.0)))
def hard_shrink(x, threshold=None):
    """Out = X where |X| > threshold (default 0.5), else 0."""
    return _unary("hard_shrink", x, {"threshold": 0.5 if threshold is None else threshold})


@checks(threshold=optional(NUMBER))
def thresholded_relu(x, threshold=None):
    """Out = X where X > threshold (default 1.0), else 0."""
    return _unary("thresholded_relu", x, {"threshold": 1.0 if threshold is None else threshold})


@checks(scale=optional(real_in(1.0)), alpha=optional(real_in(0.0)))
def selu(x, scale=None, alpha=None, name=None):
    """Out = scale * (X where X > 0, else alpha (e^X - 1)); the defaults keep the
    activations' mean and variance (Klambauer et al.)."""
    attrs = {}
    if scale is not None:
        attrs["scale"] = scale
    if alpha is not None:
        attrs["alpha"] = alpha
    return _unary("selu", x, attrs, name)


@checks(scale_a=NUMBER, scale_b=NUMBER)
def stanh(x, scale_a=0.67, scale_b=1.7159, name=None):
    """Out = scale_b * tanh(scale_a * X)."""
    return _unary("stanh", x, {"scale_a": scale_a, "scale_b": scale_b}, name)


@checks(t_min=NUMBER, t_max=NUMBER)
def brelu(x, t_min=0.0, t_max=24.0, name=None):
    """Out = min(max(X, t_min), t_max)."""
    if t_min > t_max:
        raise InvalidArgument(f"brelu: t_min expected <= t_max ({t_max}), but received {t_min}")
    return _unary("brelu", x, {"t_min": t_min, "t_max": t_max}, name)


@checks(threshold=real_in(0.0))
def soft_relu(x, threshold=40.0, name=None):
    """Out = ln(1 + e^clip(X, -threshold, threshold))."""
    return _unary("soft_relu", x, {"threshold": threshold}, name)


@checks(threshold=NUMBER, scale=real_in(0.0), offset=NUMBER)
def hard_swish(x, threshold=6.0, scale=6.0, offset=3.0, name=None):
    """Out = X * min(max(X + offset, 0), threshold) / scale (Howard et al.)."""
    return _unary("hard_swish", x, {"threshold": threshold, "scale": scale, "offset": offset},
                  name)


@checks(threshold=NUMBER)
def mish(x, threshold=20, name=None):
    """Out = X * tanh(softplus(X)) (Misra)."""
    return _unary("mish", x, {"threshold": threshold}, name)


def pow(x, factor=1.0, name=None):
    """Out = X ^ factor; ``factor`` a number or a Variable of one value (FactorTensor)."""
    _float_input("pow", x)
    check("pow", "name", name, NAME)
    helper = LayerHelper("pow", name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    inputs, attrs = {"X": [x]}, {}
    if isinstance(factor, Variable):
        inputs["FactorTensor"] = [factor]
    else:
        check("pow", "factor", factor, NUMBER)
        attrs["factor"] = float(factor)
    helper.append_op(type="pow", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return out


@checks(x=variables)
def sum(x):
    """Out = x[0] + x[1] + ... (a Variable or a list of them, LoD from the first)."""
    xs = [x] if isinstance(x, Variable) else list(x)
    helper = LayerHelper("sum")
    out = helper.create_variable_for_type_inference(xs[0].dtype)
    helper.append_op(type="sum", inputs={"X": xs}, outputs={"Out": [out]},
                     attrs={"use_mkldnn": False})
    return out


def sign(x):
    """Out = -1, 0 or 1 by the sign of X (a NumPy array is assigned to a variable first)."""
    import numpy as np
    if isinstance(x, np.ndarray):
        from .tensor import assign
        x = assign(x)
    check("sign", "x", x, variable)
    helper = LayerHelper("sign")
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="sign", inputs={"X": [x]}, outputs={"Out": [out]})
    return out


@checks(x=variable, max_norm=real_in(0.0))
def clip_by_norm(x, max_norm, name=None):
    """Out = X * max_norm / ||X||_2 where ||X||_2 > max_norm, else X."""
    helper = LayerHelper("clip_by_norm", name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="clip_by_norm", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"max_norm": float(max_norm)})
    return out
