"""Image layers of Fluid 1.8: resizing (image_resize, resize_bilinear, resize_nearest,
resize_trilinear, image_resize_short, interpolate).

Each builds the op types and attributes of the Fluid 1.8 function of the same name;
``fluid.layers`` exports them through ``nn``.
"""
from ..errors import InvalidArgument
from ..framework.program import Variable
from ..layer_helper import LayerHelper
from .arg_checks import NAME, POSITIVE_INT, boolean, checks, one_of, variable

__all__ = ["image_resize", "resize_bilinear", "resize_nearest", "resize_trilinear",
           "image_resize_short", "interpolate"]

_RESAMPLE = {"BILINEAR": "bilinear", "TRILINEAR": "trilinear", "NEAREST": "nearest",
             "BICUBIC": "bicubic"}


def _resize(where, input, out_shape, scale, name, resample, actual_shape, align_corners,
            align_mode, data_format, methods):
    if resample not in methods:
        raise InvalidArgument(f"{where}: resample expected one of {list(methods)}, but "
                              f"received {resample!r}")
    method = _RESAMPLE[resample]
    rank = len(input.shape)
    want_rank = 5 if method == "trilinear" else 4
    if rank != want_rank:
        raise InvalidArgument(f"{where}: input expected a {want_rank}-D tensor for "
                              f"{resample}, but received shape {list(input.shape)}")
    if align_mode not in (0, 1):
        raise InvalidArgument(f"{where}: align_mode expected 0 or 1, but received "
                              f"{align_mode!r}")
    if out_shape is None and scale is None:
        raise InvalidArgument(f"{where}: out_shape or scale expected, but received neither")
    formats = ("NCHW", "NHWC") if rank == 4 else ("NCDHW", "NDHWC")
    if data_format not in formats:
        raise InvalidArgument(f"{where}: data_format expected one of {list(formats)} for a "
                              f"{rank}-D input, but received {data_format!r}")
    helper = LayerHelper(f"{method}_interp", input=input, name=name)
    inputs = {"X": [input]}
    attrs = {"out_d": -1, "out_h": -1, "out_w": -1, "interp_method": method,
             "align_corners": align_corners, "align_mode": align_mode,
             "data_layout": "NHWC" if data_format in ("NHWC", "NDHWC") else "NCHW"}
    n = rank - 2
    size_attrs = ("out_d", "out_h", "out_w")[3 - n:]
    if out_shape is not None:
        if isinstance(out_shape, Variable):
            out_shape.stop_gradient = True
            inputs["OutSize"] = [out_shape]
        else:
            sizes = _out_shape_list(where, out_shape, n, helper, inputs)
            attrs.update(zip(size_attrs, sizes))
    elif isinstance(scale, Variable):
        scale.stop_gradient = True
        inputs["Scale"] = [scale]
    elif isinstance(scale, (int, float)) and not isinstance(scale, bool):
        if scale <= 0:
            raise InvalidArgument(f"{where}: scale expected > 0, but received {scale}")
        attrs["scale"] = float(scale)
    else:
        raise InvalidArgument(f"{where}: scale expected a number or a Variable, but "
                              f"received {scale!r}")
    if isinstance(actual_shape, Variable):
        actual_shape.stop_gradient = True
        inputs["OutSize"] = [actual_shape]
    elif actual_shape is not None:
        raise InvalidArgument(f"{where}: actual_shape expected a Variable or None, but "
                              f"received {actual_shape!r}")
    out = helper.create_variable_for_type_inference(helper.input_dtype())
    helper.append_op(type=f"{method}_interp", inputs=inputs, outputs={"Out": [out]},
                     attrs=attrs)
    return out


def _out_shape_list(where, out_shape, n, helper, inputs):
    """The size attributes of a list out_shape; dims given as Variables make the list a
    SizeTensor (the int dims filled in as int32 constants, the attribute -1 for the
    Variables)."""
    from .tensor import fill_constant
    if not isinstance(out_shape, (list, tuple)) or len(out_shape) != n:
        raise InvalidArgument(f"{where}: out_shape expected a list of {n} sizes or a "
                              f"Variable, but received {out_shape!r}")
    for dim in out_shape:
        if not isinstance(dim, Variable) and not (isinstance(dim, int) and dim > 0):
            raise InvalidArgument(f"{where}: out_shape expected positive ints or Variables, "
                                  f"but received {list(out_shape)}")
    if not any(isinstance(d, Variable) for d in out_shape):
        return [int(d) for d in out_shape]
    tensors, sizes = [], []
    for dim in out_shape:
        if isinstance(dim, Variable):
            dim.stop_gradient = True
            tensors.append(dim)
            sizes.append(-1)
        else:
            holder = helper.create_variable_for_type_inference("int32")
            fill_constant([1], "int32", dim, force_cpu=True, out=holder)
            tensors.append(holder)
            sizes.append(dim)
    inputs["SizeTensor"] = tensors
    return sizes


_COMMON_CHECKS = dict(input=variable, name=NAME, align_corners=boolean)


@checks(**_COMMON_CHECKS)
def image_resize(input, out_shape=None, scale=None, name=None, resample="BILINEAR",
                 actual_shape=None, align_corners=True, align_mode=1, data_format="NCHW"):
    """Resize the spatial dims of ``input`` (``bilinear_interp``, ``nearest_interp`` or
    ``trilinear_interp``): to ``out_shape`` (ints, Variables, or one int tensor), or by
    ``scale`` (out = int(in * scale)); ``actual_shape`` (a Variable) overrides at run time.
    Bilinear, align_corners: src = k * (in - 1) / (out - 1); otherwise align_mode 0 takes
    half-pixel centres src = (k + 0.5) * in / out - 0.5, align_mode 1 src = k * in / out;
    the output mixes the two neighbours of src by its fraction."""
    return _resize("image_resize", input, out_shape, scale, name, resample, actual_shape,
                   align_corners, align_mode, data_format, ("BILINEAR", "TRILINEAR",
                                                            "NEAREST"))


@checks(**_COMMON_CHECKS)
def resize_bilinear(input, out_shape=None, scale=None, name=None, actual_shape=None,
                    align_corners=True, align_mode=1, data_format="NCHW"):
    """image_resize with resample='BILINEAR' (``bilinear_interp``)."""
    return _resize("resize_bilinear", input, out_shape, scale, name, "BILINEAR",
                   actual_shape, align_corners, align_mode, data_format, ("BILINEAR",))


@checks(**_COMMON_CHECKS)
def resize_trilinear(input, out_shape=None, scale=None, name=None, actual_shape=None,
                     align_corners=True, align_mode=1, data_format="NCDHW"):
    """image_resize of a 5-D input with resample='TRILINEAR' (``trilinear_interp``)."""
    return _resize("resize_trilinear", input, out_shape, scale, name, "TRILINEAR",
                   actual_shape, align_corners, align_mode, data_format, ("TRILINEAR",))


@checks(**_COMMON_CHECKS)
def resize_nearest(input, out_shape=None, scale=None, name=None, actual_shape=None,
                   align_corners=True, data_format="NCHW"):
    """image_resize with resample='NEAREST' (``nearest_interp``): src = int(k * ratio +
    0.5) with align_corners, int(k * ratio) without."""
    return _resize("resize_nearest", input, out_shape, scale, name, "NEAREST", actual_shape,
                   align_corners, 1, data_format, ("NEAREST",))


@checks(input=variable, out_short_len=POSITIVE_INT,
        resample=one_of("BILINEAR", "NEAREST"))
def image_resize_short(input, out_short_len, resample="BILINEAR"):
    """Resize so the shorter of H and W becomes ``out_short_len``, keeping the aspect
    ratio (the longer side rounded: int(long * out_short_len / short + 0.5))."""
    if len(input.shape) != 4:
        raise InvalidArgument(f"image_resize_short: input expected a 4-D tensor, but "
                              f"received shape {list(input.shape)}")
    hw = list(input.shape[2:4])
    short = hw.index(min(hw))
    out_shape = list(hw)
    out_shape[short] = out_short_len
    out_shape[1 - short] = int(float(hw[1 - short]) * (float(out_short_len)
                                                       / float(hw[short])) + 0.5)
    return image_resize(input=input, out_shape=out_shape, resample=resample)


@checks(**_COMMON_CHECKS)
def interpolate(input, out_shape=None, scale=None, name=None, resample="BILINEAR",
                actual_shape=None, align_corners=True, align_mode=1, data_format="NCHW"):
    """image_resize that also takes resample='BICUBIC' (``bicubic_interp``, Keys' cubic
    convolution with A = -0.75 over the 4 x 4 neighbours)."""
    return _resize("interpolate", input, out_shape, scale, name, resample, actual_shape,
                   align_corners, align_mode, data_format, tuple(_RESAMPLE))
