"""Image resizing: bilinear_interp, nearest_interp, trilinear_interp and bicubic_interp
(Fluid 1.x's interpolation ops) with their grad ops.

Every method is separable: along each spatial dim the output is a fixed linear map of the
input, an (out, in) matrix whose rows hold the interpolation weights. The forward op
contracts each spatial dim with its matrix; the gradient contracts with the transposes.

Source coordinates (ratio = (in-1)/(out-1) with align_corners, in/out without; 0 when
out is 1):
  linear, align_corners or align_mode 1: src = ratio * k;
  linear, align_mode 0 and not align_corners: src = max(ratio * (k + 0.5) - 0.5, 0);
  the two neighbours are floor(src) (truncated, at least 0) and the next one (clamped),
  weighted 1 - frac and frac.
  nearest: int(ratio * k + 0.5) with align_corners, int(ratio * k) without.
  bicubic: src = ratio * k (align_corners) or ratio * (k + 0.5) - 0.5; the four
  neighbours b - 1 .. b + 2 (clamped), b = src truncated toward 0, weighted by Keys'
  cubic convolution with A = -0.75 of the fraction src - b.
Output size: the out_d/out_h/out_w attributes, overridden by ``scale`` (> 0: in * scale),
then by the Scale input, then by OutSize ([out_h, out_w]), then by SizeTensor (one int
tensor per dim).
"""
import numpy as np

from .conv_nd import from_channel_first, spatial_dims, to_channel_first
from ..tensor.transfer import host_list
from ..framework.registry import def_op, grads_like

_SIZE_ATTRS = ("out_d", "out_h", "out_w")


def _channel_last(attrs):
    return attrs.get("data_layout", "NCHW") in ("NHWC", "NDHWC")


def _attr_sizes(attrs, n):
    return [int(attrs.get(name, -1)) for name in _SIZE_ATTRS[3 - n:]]


def out_sizes(attrs, in_sizes, scale_input=None, out_size=None, size_tensor=None, xp=np):
    """The output's spatial sizes, by the rules of the module docstring. Sizes given as
    tensors decide the output's shape, so they are read on the host (one copy)."""
    n = len(in_sizes)
    if size_tensor:
        # one copy for the whole list
        joined = xp.concatenate([t.reshape(-1) for t in size_tensor])
        return [int(v) for v in host_list(joined)]
    sizes = _attr_sizes(attrs, n)
    scale = float(attrs.get("scale", 0.0) or 0.0)
    if out_size is not None:
        return [int(v) for v in host_list(out_size)]
    if scale_input is not None:
        scale = float(host_list(scale_input)[0])
    if scale > 0:
        sizes = [int(s * scale) for s in in_sizes]
    return sizes


def _ratio(size_in, size_out, align_corners):
    if size_out <= 1:
        return 0.0
    return (size_in - 1) / (size_out - 1) if align_corners else size_in / size_out


def linear_matrix(size_in, size_out, align_corners, align_mode):
    ratio = _ratio(size_in, size_out, align_corners)
    half_pixel = align_mode == 0 and not align_corners
    k = np.arange(size_out, dtype=np.float64)
    src = np.maximum(ratio * (k + 0.5) - 0.5, 0.0) if half_pixel else ratio * k
    low = np.maximum(src.astype(np.int64), 0)
    high = np.minimum(low + 1, size_in - 1)
    frac = src - low
    m = np.zeros((size_out, size_in))
    np.add.at(m, (np.arange(size_out), low), 1.0 - frac)
    np.add.at(m, (np.arange(size_out), high), frac)
    return m


def nearest_matrix(size_in, size_out, align_corners):
    ratio = _ratio(size_in, size_out, align_corners)
    k = np.arange(size_out, dtype=np.float64)
    src = (ratio * k + 0.5 if align_corners else ratio * k).astype(np.int64)
    m = np.zeros((size_out, size_in))
    m[np.arange(size_out), np.minimum(src, size_in - 1)] = 1.0
    return m


def _cubic_weights(t, a=-0.75):
    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def cubic_matrix(size_in, size_out, align_corners):
    ratio = _ratio(size_in, size_out, align_corners)
    k = np.arange(size_out, dtype=np.float64)
    src = ratio * k if align_corners else ratio * (k + 0.5) - 0.5
    # truncated toward 0, as Fluid's kernel casts: the first output rows of an upsampling
    # (src in (-0.5, 0)) take base 0 and a negative fraction
    base = np.trunc(src).astype(np.int64)
    weights = _cubic_weights(src - base)
    m = np.zeros((size_out, size_in))
    for i, w in enumerate(weights):
        np.add.at(m, (np.arange(size_out), np.clip(base - 1 + i, 0, size_in - 1)), w)
    return m


def _matrices(method, attrs, in_sizes, sizes):
    align_corners = bool(attrs.get("align_corners", True))
    if method == "nearest":
        return [nearest_matrix(i, o, align_corners) for i, o in zip(in_sizes, sizes)]
    if method == "bicubic":
        return [cubic_matrix(i, o, align_corners) for i, o in zip(in_sizes, sizes)]
    mode = int(attrs.get("align_mode", 1))
    return [linear_matrix(i, o, align_corners, mode) for i, o in zip(in_sizes, sizes)]


def _contract(xp, x, matrices):
    # integer images (uint8) are weighted in float64; the caller's cast back truncates, as
    # Fluid's kernels do
    if x.dtype.kind not in "fc":
        x = x.astype(np.float64)
    for i, m in enumerate(matrices):
        x = xp.moveaxis(xp.tensordot(x, xp.asarray(m, dtype=x.dtype), axes=([2 + i], [1])),
                        -1, 2 + i)
    return x


def _interp_infer_shape(method, rank):
    def infer(ctx):
        attrs = ctx.attrs()
        x_shape = ctx.input_shape("X")
        ctx.check(len(x_shape) == rank, "input 'X'", f"a {rank}-D tensor", list(x_shape))
        ctx.check(attrs.get("interp_method", method) == method, "attribute 'interp_method'",
                  f"'{method}'", attrs.get("interp_method"))
        ctx.check(attrs.get("align_mode", 1) in (0, 1), "attribute 'align_mode'", "0 or 1",
                  attrs.get("align_mode"))
        last = _channel_last(attrs)
        in_sizes = spatial_dims(x_shape, last)
        n = rank - 2
        if ctx.has_input("SizeTensor"):
            sizes = _attr_sizes(attrs, n)
        elif ctx.has_input("Scale") or ctx.has_input("OutSize"):
            sizes = [-1] * n
        else:
            sizes = out_sizes(attrs, in_sizes)
            # scaled from a size known only at run time: known then too (-1 until then)
            scaled = float(attrs.get("scale", 0.0) or 0.0) > 0
            unknown = [scaled and i < 0 for i in in_sizes]
            sizes = [-1 if u else s for s, u in zip(sizes, unknown)]
            for s, u in zip(sizes, unknown):
                ctx.check(u or s > 0, "output size (out_d/out_h/out_w or scale)",
                          "positive sizes", sizes)
        c = x_shape[-1] if last else x_shape[1]
        shape = ((x_shape[0],) + tuple(sizes) + (c,)) if last else \
            ((x_shape[0], c) + tuple(sizes))
        ctx.set_output("Out", shape, ctx.input_dtype("X"))
    return infer


def _interp_kernel(method):
    def kernel(ctx, x, out_size, size_tensor, scale):
        xp, attrs = ctx.xp, ctx.attrs
        last = _channel_last(attrs)
        xc = to_channel_first(x, last)
        sizes = out_sizes(attrs, xc.shape[2:], scale, out_size, size_tensor, xp)
        out = _contract(xp, xc, _matrices(method, attrs, xc.shape[2:], sizes))
        return from_channel_first(xp, out, last).astype(x.dtype, copy=False)
    return kernel


def _interp_grad_kernel(method):
    def kernel(ctx, x, out_size, size_tensor, scale, dout):
        xp, attrs = ctx.xp, ctx.attrs
        last = _channel_last(attrs)
        xc, dc = to_channel_first(x, last), to_channel_first(dout, last)
        mats = _matrices(method, attrs, xc.shape[2:], dc.shape[2:])
        dx = _contract(xp, dc, [m.T for m in mats])
        return from_channel_first(xp, dx, last).astype(x.dtype, copy=False)
    return kernel


def _interp_grad_maker(grad_type):
    def make(g):
        ins = {"X": g.input("X"), "OutSize": g.input("OutSize"),
               "SizeTensor": g.input("SizeTensor"), "Scale": g.input("Scale"),
               "Out@GRAD": g.output_grad("Out")}
        return [g.op(grad_type, ins, {"X@GRAD": g.input_grad("X")})]
    make.grad_type = grad_type
    return make


def _interp_attrs(method):
    return {"data_layout": ("string", "NCHW"), "out_d": ("int", -1), "out_h": ("int", -1),
            "out_w": ("int", -1), "scale": ("float", 0.0),
            "interp_method": ("string", method), "align_corners": ("bool", True),
            "align_mode": ("int", 1)}


_INTERP_DOC = """{op}: {what} resize of X ({layout}) over {dims}; see the interp module for
the source coordinates and the output-size rules (attributes out_d/out_h/out_w, scale, and
the OutSize, SizeTensor and Scale inputs). align_corners (default True) maps corner pixel
centres onto each other; {extra}"""

for _method, _rank, _what, _extra in (
        ("bilinear", 4, "bilinear", "align_mode 0 (with align_corners False) takes "
         "half-pixel centres, 1 the top-left corners."),
        ("nearest", 4, "nearest-neighbour", "align_mode is not used."),
        ("trilinear", 5, "trilinear", "align_mode as in bilinear_interp."),
        ("bicubic", 4, "bicubic (Keys, A = -0.75)", "align_mode is not used.")):
    _type = f"{_method}_interp"
    _dims = "D, H and W" if _rank == 5 else "H and W"
    _layout = "[N, C, D, H, W], or channel-last with data_layout NHWC" if _rank == 5 else \
        "[N, C, H, W], or NHWC with data_layout NHWC"
    def_op(_type, inputs=["X", "OutSize?", "SizeTensor[]?", "Scale?"], outputs=["Out"],
           attrs=_interp_attrs(_method), infer_shape=_interp_infer_shape(_method, _rank),
           grad=_interp_grad_maker(_type + "_grad"), kernel=_interp_kernel(_method),
           host_reads="OutSize / SizeTensor / Scale: the output's spatial sizes",
           doc=_INTERP_DOC.format(op=_type, what=_what, layout=_layout, dims=_dims,
                                  extra=_extra))
    def_op(_type + "_grad", inputs=["X", "OutSize?", "SizeTensor[]?", "Scale?", "Out@GRAD"],
           outputs=["X@GRAD"], attrs=_interp_attrs(_method),
           infer_shape=grads_like(**{"X@GRAD": "X"}), kernel=_interp_grad_kernel(_method),
           doc=f"Gradient of {_type}: dOut contracted with the transposed interpolation "
               f"matrix of each spatial dim.")
