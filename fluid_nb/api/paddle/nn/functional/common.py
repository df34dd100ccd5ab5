"""``paddle.nn.functional.interpolate`` (Fluid 1.8): the image resize of
``fluid.layers.interpolate``."""
from .... import layers
from .....errors import InvalidType, expected
from .....framework.program import Variable
from .....framework.type_checks import require_variable

__all__ = ["interpolate"]


def _refuse_type(name, want, value):
    raise InvalidType(expected("interpolate", name, want,
                               f"{type(value).__name__}"))


def interpolate(input, out_shape=None, scale=None, name=None, resample="BILINEAR",
                actual_shape=None, align_corners=True, align_mode=1, data_format="NCHW"):
    """Resize the spatial dims of a 4-D (``BILINEAR``, ``NEAREST``, ``BICUBIC``) or 5-D
    (``TRILINEAR``) ``input`` to ``out_shape`` or by ``scale`` (``<resample>_interp``).
    Linear methods with ``align_corners``: ``src = k * (in - 1) / (out - 1)``; otherwise
    ``align_mode`` 0 takes ``src = (k + 0.5) * in / out - 0.5``, 1 ``src = k * in / out``.
    Bicubic uses Keys' kernel (A = -0.75) over the 4 x 4 neighbours. A wrong kind of
    argument (not a Variable, a list, a number) is a TypeError, a wrong value a
    ValueError."""
    require_variable("interpolate", "input", input)
    if not isinstance(align_corners, bool):
        _refuse_type("align_corners", "a bool", align_corners)
    if out_shape is not None and not isinstance(out_shape, (Variable, list, tuple)):
        _refuse_type("out_shape", "a list, a tuple or a Variable", out_shape)
    if out_shape is None and scale is not None and (
            isinstance(scale, bool) or not isinstance(scale, (int, float, Variable))):
        _refuse_type("scale", "a number or a Variable", scale)
    if actual_shape is not None and not isinstance(actual_shape, Variable):
        _refuse_type("actual_shape", "a Variable or None", actual_shape)
    return layers.interpolate(input, out_shape=out_shape, scale=scale, name=name,
                              resample=resample, actual_shape=actual_shape,
                              align_corners=align_corners, align_mode=align_mode,
                              data_format=data_format)
