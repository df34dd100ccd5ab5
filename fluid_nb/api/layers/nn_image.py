"""Image layers of Fluid 1.8: resizing (image_resize, resize_bilinear, resize_nearest,
resize_trilinear, image_resize_short, interpolate), ROI pooling (roi_pool, roi_align,
psroi_pool, prroi_pool), sampling (affine_grid, grid_sampler, random_crop) and patches
(im2sequence, row_conv, spectral_norm, similarity_focus).

Each builds the op types and attributes of the Fluid 1.8 function of the same name;
``fluid.layers`` exports them through ``nn``.
"""
import numpy as np

from ...errors import InvalidArgument, InvalidType
from ...framework import unique_name
from ...tensor.dtypes import VarType
from ...framework.program import Variable
from ...framework.type_checks import check_type
from ..initializer import NormalInitializer
from ..layer_helper import LayerHelper
from ..param_attr import ParamAttr
from .arg_checks import (INT, NAME, NON_NEGATIVE_INT, POSITIVE_INT, activation, boolean,
                         checks, float_typed, int_or_ints, int_typed, ints, one_of, optional,
                         real_in, variable)

__all__ = ["image_resize", "resize_bilinear", "resize_nearest", "resize_trilinear",
           "image_resize_short", "interpolate", "roi_pool", "roi_align", "psroi_pool",
           "prroi_pool", "affine_grid", "grid_sampler", "random_crop", "im2sequence",
           "row_conv", "spectral_norm", "similarity_focus", "deformable_roi_pooling"]

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
    elif scale is None:
        raise InvalidArgument(f"{where}: out_shape or scale expected, but received neither")
    else:  # Fluid 1.8 refuses another type of scale with a TypeError
        raise InvalidType(f"{where}: scale expected a number or a Variable, but "
                          f"received {scale!r}")
    if isinstance(actual_shape, Variable):
        actual_shape.stop_gradient = True
        inputs["OutSize"] = [actual_shape]
    elif actual_shape is not None:
        raise InvalidType(f"{where}: actual_shape expected a Variable or None, but "
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


# --- ROI pooling ---------------------------------------------------------------------------------
_ROI_CHECKS = dict(input=variable, rois=variable, pooled_height=POSITIVE_INT,
                   pooled_width=POSITIVE_INT, spatial_scale=real_in(0.0))


@checks(rois_lod=optional(variable), **_ROI_CHECKS)
def roi_pool(input, rois, pooled_height=1, pooled_width=1, spatial_scale=1.0, rois_lod=None):
    """Max pooling of each ROI (x1, y1, x2, y2, in the ROIs' LoD order of images, or by
    ``rois_lod`` offsets) into pooled_height x pooled_width bins (``roi_pool``)."""
    helper = LayerHelper("roi_pool", input=input)
    out = helper.create_variable_for_type_inference(helper.input_dtype())
    argmax = helper.create_variable_for_type_inference(dtype=VarType.INT32)
    inputs = {"X": [input], "ROIs": [rois]}
    if rois_lod is not None:
        inputs["RoisLod"] = [rois_lod]
    helper.append_op(type="roi_pool", inputs=inputs,
                     outputs={"Out": [out], "Argmax": [argmax]},
                     attrs={"pooled_height": pooled_height, "pooled_width": pooled_width,
                            "spatial_scale": float(spatial_scale)})
    return out


@checks(sampling_ratio=INT, name=NAME, rois_lod=optional(variable), **_ROI_CHECKS)
def roi_align(input, rois, pooled_height=1, pooled_width=1, spatial_scale=1.0,
              sampling_ratio=-1, name=None, rois_lod=None):
    """ROI Align (``roi_align``): each bin the mean of bilinear samples on a grid of
    sampling_ratio (or ceil(bin size)) points per side, no rounding of the ROI."""
    helper = LayerHelper("roi_align", input=input, name=name)
    out = helper.create_variable_for_type_inference(helper.input_dtype())
    inputs = {"X": [input], "ROIs": [rois]}
    if rois_lod is not None:
        inputs["RoisLod"] = [rois_lod]
    helper.append_op(type="roi_align", inputs=inputs, outputs={"Out": [out]},
                     attrs={"pooled_height": pooled_height, "pooled_width": pooled_width,
                            "spatial_scale": float(spatial_scale),
                            "sampling_ratio": sampling_ratio})
    return out


@checks(input=variable, rois=variable, output_channels=POSITIVE_INT,
        spatial_scale=real_in(0.0), pooled_height=POSITIVE_INT, pooled_width=POSITIVE_INT,
        name=NAME)
def psroi_pool(input, rois, output_channels, spatial_scale, pooled_height, pooled_width,
               name=None):
    """Position-sensitive ROI average pooling (``psroi_pool``): input has output_channels
    * pooled_height * pooled_width channels; bin (i, j) of channel c averages input channel
    (c * pooled_height + i) * pooled_width + j."""
    helper = LayerHelper("psroi_pool", input=input, name=name)
    out = helper.create_variable_for_type_inference(helper.input_dtype())
    helper.append_op(type="psroi_pool", inputs={"X": [input], "ROIs": [rois]},
                     outputs={"Out": [out]},
                     attrs={"output_channels": output_channels,
                            "spatial_scale": float(spatial_scale),
                            "pooled_height": pooled_height, "pooled_width": pooled_width})
    return out


@checks(input=variable, rois=variable, spatial_scale=float_typed(real_in(0.0)),
        pooled_height=int_typed(POSITIVE_INT), pooled_width=int_typed(POSITIVE_INT),
        batch_roi_nums=optional(variable), name=NAME)
def prroi_pool(input, rois, spatial_scale=1.0, pooled_height=1, pooled_width=1,
               batch_roi_nums=None, name=None):
    """Precise ROI pooling (``prroi_pool``): each bin the integral of the bilinearly
    interpolated map over the bin's area, divided by the area."""
    helper = LayerHelper("prroi_pool", input=input, name=name)
    out = helper.create_variable_for_type_inference(helper.input_dtype())
    inputs = {"X": [input], "ROIs": [rois]}
    if batch_roi_nums is not None:
        inputs["BatchRoINums"] = [batch_roi_nums]
    helper.append_op(type="prroi_pool", inputs=inputs, outputs={"Out": [out]},
                     attrs={"spatial_scale": float(spatial_scale),
                            "pooled_height": pooled_height, "pooled_width": pooled_width})
    return out


# --- sampling -----------------------------------------------------------------------------------
@checks(theta=variable, name=NAME)
def affine_grid(theta, out_shape, name=None):
    """The sampling grid [N, H, W, 2] of the affine transforms ``theta`` [N, 2, 3]
    (``affine_grid``): grid[n, h, w] = theta[n] @ (x_w, y_h, 1), x and y evenly spaced in
    [-1, 1]; ``out_shape`` [N, C, H, W] as a list or an int32 Variable."""
    helper = LayerHelper("affine_grid", name=name)
    out = helper.create_variable_for_type_inference(theta.dtype)
    inputs, attrs = {"Theta": [theta]}, {}
    if isinstance(out_shape, Variable):
        inputs["OutputShape"] = [out_shape]
    elif isinstance(out_shape, (list, tuple)) and len(out_shape) == 4:
        attrs["output_shape"] = [int(d) for d in out_shape]
    else:
        raise InvalidArgument(f"affine_grid: out_shape expected a list of 4 ints or a "
                              f"Variable, but received {out_shape!r}")
    helper.append_op(type="affine_grid", inputs=inputs, outputs={"Output": [out]},
                     attrs=attrs)
    return out


@checks(x=variable, grid=variable, name=NAME)
def grid_sampler(x, grid, name=None):
    """x [N, C, H, W] sampled bilinearly at ``grid`` [N, H_out, W_out, 2] ((x, y) in
    [-1, 1], corners aligned, zero outside the map) (``grid_sampler``)."""
    helper = LayerHelper("grid_sampler", name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="grid_sampler", inputs={"X": [x], "Grid": [grid]},
                     outputs={"Output": [out]})
    return out


@checks(x=variable, shape=ints(None, 1))
def random_crop(x, shape, seed=None):
    """Crop every instance of ``x`` to ``shape`` (its trailing dims) at a random offset
    (``random_crop``). ``seed`` an int (the first draw; a persistable int64 variable keeps
    the next seed between runs) or a Variable holding it."""
    helper = LayerHelper("random_crop")
    out = helper.create_variable_for_type_inference(x.dtype)
    if seed is None:
        seed = int(np.random.randint(-65536, 65536))
    attrs = {"shape": list(shape)}
    if isinstance(seed, int):
        attrs["startup_seed"] = seed
        seed = helper.create_variable(name=unique_name.generate("random_crop_seed"),
                                      dtype="int64", persistable=True)
    elif not isinstance(seed, Variable):
        raise InvalidArgument(f"random_crop: seed expected an int or a Variable, but "
                              f"received {seed!r}")
    helper.append_op(type="random_crop", inputs={"X": [x], "Seed": [seed]},
                     outputs={"Out": [out], "SeedOut": [seed]}, attrs=attrs)
    return out


# --- patches and sequences ---------------------------------------------------------------------
@checks(input=variable, filter_size=int_or_ints(2, 1), stride=int_or_ints(2, 1),
        padding=int_or_ints(None, 0), input_image_size=optional(variable),
        out_stride=int_or_ints(2, 1), name=NAME)
def im2sequence(input, filter_size=1, stride=1, padding=0, input_image_size=None,
                out_stride=1, name=None):
    """Each image's filter_size patches as the rows of one sequence (``im2sequence``):
    [N, C, H, W] -> a LoDTensor [N * oh * ow, C * kh * kw]; padding an int, [ph, pw] or
    [up, left, down, right]."""
    filter_size = [filter_size] * 2 if isinstance(filter_size, int) else list(filter_size)
    stride = [stride] * 2 if isinstance(stride, int) else list(stride)
    padding = [padding] * 2 if isinstance(padding, int) else list(padding)
    if len(padding) == 2:
        padding = padding + padding
    if len(padding) != 4:
        raise InvalidArgument(f"im2sequence: padding expected an int, 2 or 4 ints, but "
                              f"received {padding}")
    inputs = {"X": [input]}
    attrs = {"kernels": filter_size, "strides": stride, "paddings": padding}
    if input_image_size is not None:
        inputs["Y"] = [input_image_size]
        attrs["out_stride"] = [out_stride] * 2 if isinstance(out_stride, int) \
            else list(out_stride)
    helper = LayerHelper("im2sequence", input=input, name=name)
    out = helper.create_variable_for_type_inference(dtype=helper.input_dtype())
    helper.append_op(type="im2sequence", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return out


@checks(input=variable, future_context_size=NON_NEGATIVE_INT, act=activation)
def row_conv(input, future_context_size, param_attr=None, act=None):
    """Lookahead convolution (``row_conv``): out[t] = sum_{i=0}^{k} input[t + i] * W[i]
    within each sequence, W ``row_conv_0.w_0`` [future_context_size + 1, D]."""
    helper = LayerHelper("row_conv", input=input, param_attr=param_attr, act=act)
    dtype = helper.input_dtype()
    w = helper.create_parameter(attr=helper.param_attr, dtype=dtype,
                                shape=[future_context_size + 1, input.shape[-1]])
    out = helper.create_variable_for_type_inference(dtype)
    helper.append_op(type="row_conv", inputs={"X": [input], "Filter": [w]},
                     outputs={"Out": [out]})
    return helper.append_activation(out)


@checks(weight=variable, dim=INT, power_iters=NON_NEGATIVE_INT, eps=real_in(0.0), name=NAME)
def spectral_norm(weight, dim=0, power_iters=1, eps=1e-12, name=None):
    """weight / sigma, sigma its largest singular value by power iteration
    (``spectral_norm``) from U [h] and V [w] parameters (Normal(0, 1), no gradient)."""
    helper = LayerHelper("spectral_norm", name=name)
    dtype = weight.dtype
    h = weight.shape[dim]
    w = int(np.prod(weight.shape)) // h
    u = helper.create_parameter(attr=ParamAttr(), shape=[h], dtype=dtype,
                                default_initializer=NormalInitializer(0.0, 1.0))
    u.stop_gradient = True
    v = helper.create_parameter(attr=ParamAttr(), shape=[w], dtype=dtype,
                                default_initializer=NormalInitializer(0.0, 1.0))
    v.stop_gradient = True
    out = helper.create_variable(dtype=dtype)
    helper.append_op(type="spectral_norm", inputs={"Weight": [weight], "U": [u], "V": [v]},
                     outputs={"Out": [out]},
                     attrs={"dim": dim, "power_iters": power_iters, "eps": float(eps)})
    return out


@checks(input=variable, axis=one_of(1, 2, 3), indexes=ints(None, 0), name=NAME)
def similarity_focus(input, axis, indexes, name=None):
    """A 0/1 mask of ``input``'s shape (``similarity_focus``): for each index, the slice
    along ``axis`` picks, greedily by value, one cell per row and column."""
    if not indexes:
        raise InvalidArgument("similarity_focus: indexes expected a non-empty list, but "
                              "received []")
    helper = LayerHelper("similarity_focus", name=name)
    out = helper.create_variable_for_type_inference(dtype=input.dtype)
    helper.append_op(type="similarity_focus", inputs={"X": [input]}, outputs={"Out": [out]},
                     attrs={"axis": axis, "indexes": list(indexes)})
    return out


@checks(input=variable, rois=variable, trans=variable, no_trans=boolean,
        spatial_scale=real_in(0.0), group_size=int_or_ints(2, 1), pooled_height=POSITIVE_INT,
        pooled_width=POSITIVE_INT, part_size=optional(int_or_ints(2, 1)),
        sample_per_part=POSITIVE_INT, trans_std=real_in(0.0), position_sensitive=boolean,
        name=NAME)
def deformable_roi_pooling(input, rois, trans, no_trans=False, spatial_scale=1.0,
                           group_size=[1, 1], pooled_height=1, pooled_width=1, part_size=None,
                           sample_per_part=1, trans_std=0.1, position_sensitive=False,
                           name=None):
    """Deformable (PS)ROI pooling (``deformable_psroi_pooling``): each bin of each ROI
    moved by ``trans`` [R, 2 * classes, part_h, part_w] * trans_std * the ROI's size and
    averaged over sample_per_part^2 bilinear samples; position_sensitive reads channel
    groups as psroi_pool does (output channels C / (pooled_height * pooled_width))."""
    check_type(group_size, "group_size", (list, tuple), "deformable_roi_pooling")
    if part_size is not None:
        check_type(part_size, "part_size", (list, tuple), "deformable_roi_pooling")
    channels = input.shape[1]
    output_channels = channels // pooled_height // pooled_width if position_sensitive \
        else channels
    part_size = [pooled_height, pooled_width] if part_size is None else (
        [part_size] * 2 if isinstance(part_size, int) else list(part_size))
    group_size = [group_size] * 2 if isinstance(group_size, int) else list(group_size)
    helper = LayerHelper("deformable_psroi_pooling", input=input, name=name)
    dtype = helper.input_dtype()
    out = helper.create_variable_for_type_inference(dtype)
    top_count = helper.create_variable_for_type_inference(dtype="int32")
    helper.append_op(type="deformable_psroi_pooling",
                     inputs={"Input": [input], "ROIs": [rois], "Trans": [trans]},
                     outputs={"Output": [out], "TopCount": [top_count]},
                     attrs={"no_trans": no_trans, "spatial_scale": float(spatial_scale),
                            "output_dim": output_channels, "group_size": group_size,
                            "pooled_height": pooled_height, "pooled_width": pooled_width,
                            "part_size": part_size, "sample_per_part": sample_per_part,
                            "trans_std": float(trans_std)})
    return out
