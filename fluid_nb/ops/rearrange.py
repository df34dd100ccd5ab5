"""Feature-map rearrangements and small per-channel maps: maxout, space_to_depth,
pixel_shuffle, shuffle_channel, temporal_shift, affine_channel, unfold, fsp,
bilinear_tensor_product and add_position_encoding, with their grad ops.

The rearrangements are reshapes and transposes; their gradients are the inverse
permutation of the output gradient.
"""
import numpy as np

from ..tensor.tensor import LoDTensor
from .conv_nd import ConvGeometry, col2im, pad_spatial, windows
from ..framework.registry import def_op, grad_maker, grads_like, same_shape


def _positive(name):
    return lambda v: None if v > 0 else f"a positive {name}"


def _rank4(ctx, slot="X"):
    shape = ctx.input_shape(slot)
    ctx.check(len(shape) == 4, f"input '{slot}'", "a 4-D tensor [N, C, H, W]", list(shape))
    return shape


def _divisible(ctx, what, size, by, label):
    ctx.check(size < 0 or size % by == 0, what, f"a multiple of {label} ({by})", size)


def _x_grad_only(grad_type, inputs=(), outputs=()):
    return grad_maker(grad_type, inputs=list(inputs), outputs=list(outputs),
                      out_grads=["Out"], in_grads=["X"])


# --- maxout ------------------------------------------------------------------------------------
def _maxout_axis(attrs, ndim):
    axis = attrs.get("axis", 1)
    return axis + ndim if axis < 0 else axis


def _maxout_infer(ctx):
    shape = _rank4(ctx)
    attrs = ctx.attrs()
    axis, groups = _maxout_axis(attrs, 4), attrs.get("groups", 1)
    ctx.check(axis in (1, 3), "attribute 'axis'", "1 or 3 (or -1)", attrs.get("axis"))
    _divisible(ctx, f"channels of 'X' {list(shape)}", shape[axis], groups, "groups")
    out = list(shape)
    out[axis] = shape[axis] // groups if shape[axis] >= 0 else -1
    ctx.set_output("Out", out, ctx.input_dtype("X"))


def _maxout_groups(x, attrs):
    """X as [..., C/groups, groups, ...] around the channel axis."""
    axis, groups = _maxout_axis(attrs, x.ndim), attrs.get("groups", 1)
    shape = x.shape[:axis] + (x.shape[axis] // groups, groups) + x.shape[axis + 1:]
    return x.reshape(shape), axis + 1


def _maxout(ctx, x):
    grouped, axis = _maxout_groups(x, ctx.attrs)
    return grouped.max(axis=axis)


def _maxout_grad(ctx, x, out, dout):
    xp = ctx.xp
    grouped, axis = _maxout_groups(x, ctx.attrs)
    first = xp.expand_dims(grouped.argmax(axis=axis), axis)  # only the first maximum
    hit = xp.arange(grouped.shape[axis]).reshape(
        [-1 if i == axis else 1 for i in range(grouped.ndim)]) == first
    return (hit * xp.expand_dims(dout, axis)).reshape(x.shape).astype(x.dtype, copy=False)


_MAXOUT_ATTRS = {"groups": ("int", 1, _positive("group count")), "axis": ("int", 1)}
def_op("maxout", inputs=["X"], outputs=["Out"], attrs=_MAXOUT_ATTRS, infer_shape=_maxout_infer,
       grad=_x_grad_only("maxout_grad", ["X"], ["Out"]), kernel=_maxout,
       doc="maxout: Out[n, c, h, w] = max_{g < groups} X[n, c * groups + g, h, w] (channels "
           "on ``axis``, 1 or 3).")
def_op("maxout_grad", inputs=["X", "Out", "Out@GRAD"], outputs=["X@GRAD"],
       attrs=_MAXOUT_ATTRS, infer_shape=grads_like(**{"X@GRAD": "X"}), kernel=_maxout_grad,
       doc="Gradient of maxout: dOut goes to the first maximum of each group.")


# --- space_to_depth, pixel_shuffle, shuffle_channel -----------------------------------------------
def _space_to_depth_infer(ctx):
    n, c, h, w = _rank4(ctx)
    bs = ctx.attrs().get("blocksize", 1)
    _divisible(ctx, "height of 'X'", h, bs, "blocksize")
    _divisible(ctx, "width of 'X'", w, bs, "blocksize")
    _divisible(ctx, "channels of 'X'", c, bs * bs, "blocksize^2")
    ctx.set_output("Out", (n, c * bs * bs if c >= 0 else -1, h // bs if h >= 0 else -1,
                           w // bs if w >= 0 else -1), ctx.input_dtype("X"))


def _space_to_depth_order(shape, bs):
    """(6-D view of X, axes): X [B, C, H, W] as [B, bs, bs, C/bs^2, H, W] transposed to
    [B, C/bs^2, H, bs, W, bs] is Out's buffer (Paddle's reorg index mapping)."""
    b, c, h, w = shape
    return (b, bs, bs, c // (bs * bs), h, w), (0, 3, 4, 1, 5, 2)


def _space_to_depth(ctx, x):
    bs = ctx.attrs.get("blocksize", 1)
    view, axes = _space_to_depth_order(x.shape, bs)
    b, c, h, w = x.shape
    return ctx.xp.ascontiguousarray(x.reshape(view).transpose(axes)).reshape(
        b, c * bs * bs, h // bs, w // bs)


def _space_to_depth_grad(ctx, x, dout):
    bs = ctx.attrs.get("blocksize", 1)
    view, axes = _space_to_depth_order(x.shape, bs)
    moved = tuple(view[a] for a in axes)
    back = np.argsort(axes)
    return ctx.xp.ascontiguousarray(dout.reshape(moved).transpose(back)).reshape(x.shape)


_S2D_ATTRS = {"blocksize": ("long", 1, _positive("block size"))}
def_op("space_to_depth", inputs=["X"], outputs=["Out"], attrs=_S2D_ATTRS,
       infer_shape=_space_to_depth_infer, grad=_x_grad_only("space_to_depth_grad", ["X"]),
       kernel=_space_to_depth,
       doc="""space_to_depth: X [B, C, H, W] -> Out [B, C*bs^2, H/bs, W/bs], Paddle's (darknet
reorg) mapping: with out_c = C / bs^2 and k = off * out_c + c2, X[b, k, j, i] lands at
position [b, c2, j*bs + off // bs, i*bs + off % bs] of Out's buffer viewed as
[B, out_c, H*bs, W*bs].""")
def_op("space_to_depth_grad", inputs=["X", "Out@GRAD"], outputs=["X@GRAD"],
       attrs=_S2D_ATTRS, infer_shape=grads_like(**{"X@GRAD": "X"}),
       kernel=_space_to_depth_grad, doc="Gradient of space_to_depth: the inverse mapping.")


def _pixel_shuffle_infer(ctx):
    n, c, h, w = _rank4(ctx)
    attrs = ctx.attrs()
    r = attrs.get("upscale_factor", 1)
    channel_last = attrs.get("data_format", "NCHW") == "NHWC"
    if channel_last:
        n, h, w, c = n, c, h, w
    _divisible(ctx, "channels of 'X'", c, r * r, "upscale_factor^2")
    dims = (n, c // (r * r) if c >= 0 else -1, h * r if h >= 0 else -1,
            w * r if w >= 0 else -1)
    if channel_last:
        dims = (dims[0], dims[2], dims[3], dims[1])
    ctx.set_output("Out", dims, ctx.input_dtype("X"))


def _pixel_shuffle(ctx, x):
    xp, r = ctx.xp, ctx.attrs.get("upscale_factor", 1)
    last = ctx.attrs.get("data_format", "NCHW") == "NHWC"
    xc = x.transpose(0, 3, 1, 2) if last else x
    n, c, h, w = xc.shape
    out = xc.reshape(n, c // (r * r), r, r, h, w).transpose(0, 1, 4, 2, 5, 3)
    out = out.reshape(n, c // (r * r), h * r, w * r)
    return xp.ascontiguousarray(out.transpose(0, 2, 3, 1) if last else out)


def _pixel_shuffle_grad(ctx, dout):
    xp, r = ctx.xp, ctx.attrs.get("upscale_factor", 1)
    last = ctx.attrs.get("data_format", "NCHW") == "NHWC"
    dc = dout.transpose(0, 3, 1, 2) if last else dout
    n, c, hr, wr = dc.shape
    dx = dc.reshape(n, c, hr // r, r, wr // r, r).transpose(0, 1, 3, 5, 2, 4)
    dx = dx.reshape(n, c * r * r, hr // r, wr // r)
    return xp.ascontiguousarray(dx.transpose(0, 2, 3, 1) if last else dx)


_PS_ATTRS = {"upscale_factor": ("int", 1, _positive("factor")),
             "data_format": ("string", "NCHW")}
def_op("pixel_shuffle", inputs=["X"], outputs=["Out"], attrs=_PS_ATTRS,
       infer_shape=_pixel_shuffle_infer, grad=_x_grad_only("pixel_shuffle_grad"),
       kernel=_pixel_shuffle,
       doc="pixel_shuffle: Out[n, c, h*r + i, w*r + j] = X[n, c*r*r + i*r + j, h, w], "
           "r = upscale_factor (NHWC with data_format).")
def_op("pixel_shuffle_grad", inputs=["Out@GRAD"], outputs=["X@GRAD"], attrs=_PS_ATTRS,
       infer_shape=lambda ctx: _pixel_unshuffle_shape(ctx), kernel=_pixel_shuffle_grad,
       doc="Gradient of pixel_shuffle: the inverse rearrangement.")


def _pixel_unshuffle_shape(ctx):
    shape = list(ctx.input_shape("Out@GRAD"))
    r = ctx.attrs().get("upscale_factor", 1)
    c, h, w = (3, 1, 2) if ctx.attrs().get("data_format", "NCHW") == "NHWC" else (1, 2, 3)
    shape[c] = shape[c] * r * r if shape[c] >= 0 else -1
    shape[h] = shape[h] // r if shape[h] >= 0 else -1
    shape[w] = shape[w] // r if shape[w] >= 0 else -1
    ctx.set_output("X@GRAD", shape, ctx.input_dtype("Out@GRAD"))


def _shuffle_channel_infer(ctx):
    shape = _rank4(ctx)
    _divisible(ctx, "channels of 'X'", shape[1], ctx.attrs().get("group", 1), "group")
    ctx.set_output("Out", shape, ctx.input_dtype("X"))


def _shuffle(xp, x, first, second):
    n, c, h, w = x.shape
    return xp.ascontiguousarray(x.reshape(n, first, second, h, w).transpose(0, 2, 1, 3, 4)
                                ).reshape(x.shape)


_SC_ATTRS = {"group": ("int", 1, _positive("group count"))}
def_op("shuffle_channel", inputs=["X"], outputs=["Out"], attrs=_SC_ATTRS,
       infer_shape=_shuffle_channel_infer, grad=_x_grad_only("shuffle_channel_grad"),
       kernel=lambda ctx, x: _shuffle(ctx.xp, x, ctx.attrs.get("group", 1),
                                      x.shape[1] // ctx.attrs.get("group", 1)),
       doc="shuffle_channel: channels viewed as [group, C/group] and transposed: "
           "Out[:, j * group + g] = X[:, g * (C/group) + j].")
def_op("shuffle_channel_grad", inputs=["Out@GRAD"], outputs=["X@GRAD"], attrs=_SC_ATTRS,
       infer_shape=same_shape("Out@GRAD", "X@GRAD"),
       kernel=lambda ctx, d: _shuffle(ctx.xp, d, d.shape[1] // ctx.attrs.get("group", 1),
                                      ctx.attrs.get("group", 1)),
       doc="Gradient of shuffle_channel: the inverse transpose.")


# --- temporal_shift ----------------------------------------------------------------------------
def _temporal_shift_infer(ctx):
    shape = _rank4(ctx)
    _divisible(ctx, "batch of 'X' (N * seg_num)", shape[0], ctx.attrs().get("seg_num", 1),
               "seg_num")
    ctx.set_output("Out", shape, ctx.input_dtype("X"))


def _temporal_shift(xp, x, attrs, direction):
    """Channels [0, c1) read from segment t - direction, [c1, c2) from t + direction, the
    rest from t; reads outside the clip give 0 (direction -1 is the gradient)."""
    last = attrs.get("data_format", "NCHW") == "NHWC"
    xc = x.transpose(0, 3, 1, 2) if last else x
    t = attrs.get("seg_num", 1)
    nt, c, h, w = xc.shape
    ratio = attrs.get("shift_ratio", 0.25)
    c1, c2 = int(c * ratio), int(c * 2 * ratio)
    clip = xc.reshape(nt // t, t, c, h, w)
    out = xp.zeros_like(clip)
    if direction > 0:
        out[:, 1:, :c1] = clip[:, :-1, :c1]
        out[:, :-1, c1:c2] = clip[:, 1:, c1:c2]
    else:
        out[:, :-1, :c1] = clip[:, 1:, :c1]
        out[:, 1:, c1:c2] = clip[:, :-1, c1:c2]
    out[:, :, c2:] = clip[:, :, c2:]
    out = out.reshape(xc.shape)
    return xp.ascontiguousarray(out.transpose(0, 2, 3, 1)) if last else out


_TS_ATTRS = {"seg_num": ("int", 1, _positive("segment count")),
             "shift_ratio": ("float", 0.25,
                             lambda v: None if 0 <= v <= 0.5 else "a value in [0, 0.5]"),
             "data_format": ("string", "NCHW")}
def_op("temporal_shift", inputs=["X"], outputs=["Out"], attrs=_TS_ATTRS,
       infer_shape=_temporal_shift_infer, grad=_x_grad_only("temporal_shift_grad"),
       kernel=lambda ctx, x: _temporal_shift(ctx.xp, x, ctx.attrs, 1),
       doc="""temporal_shift: X [N*T, C, H, W] (T = seg_num) as clips of T segments;
c1 = int(C * shift_ratio), c2 = int(C * 2 * shift_ratio): Out[t, :c1] = X[t-1, :c1],
Out[t, c1:c2] = X[t+1, c1:c2], Out[t, c2:] = X[t, c2:], zero where t -/+ 1 leaves the
clip.""")
def_op("temporal_shift_grad", inputs=["Out@GRAD"], outputs=["X@GRAD"], attrs=_TS_ATTRS,
       infer_shape=same_shape("Out@GRAD", "X@GRAD"),
       kernel=lambda ctx, d: _temporal_shift(ctx.xp, d, ctx.attrs, -1),
       doc="Gradient of temporal_shift: the opposite shifts.")


# --- affine_channel --------------------------------------------------------------------------------
def _channel_view(x, attrs, v):
    shape = [1] * x.ndim
    shape[x.ndim - 1 if attrs.get("data_layout", "NCHW") == "NHWC" else 1] = -1
    return v.reshape(shape)


def _affine_channel_infer(ctx):
    shape = ctx.input_shape("X")
    axis = len(shape) - 1 if ctx.attrs().get("data_layout", "NCHW") == "NHWC" else 1
    c = shape[axis]
    for slot in ("Scale", "Bias"):
        s = ctx.input_shape(slot)
        ctx.check(len(s) == 1 and (c < 0 or s[0] < 0 or s[0] == c), f"input '{slot}'",
                  f"shape [{c}] (the channels of X)", list(s))
    ctx.set_output("Out", shape, ctx.input_dtype("X"))


def _affine_channel_grad(ctx, x, scale, dout):
    attrs = ctx.attrs
    axis = x.ndim - 1 if attrs.get("data_layout", "NCHW") == "NHWC" else 1
    others = tuple(i for i in range(x.ndim) if i != axis)
    dx = (dout * _channel_view(x, attrs, scale)).astype(x.dtype, copy=False) \
        if ctx.wants("X@GRAD") else None
    ds = (dout * x).sum(axis=others).astype(scale.dtype) if ctx.wants("Scale@GRAD") else None
    db = dout.sum(axis=others).astype(scale.dtype) if ctx.wants("Bias@GRAD") else None
    return dx, ds, db


_AC_ATTRS = {"data_layout": ("string", "AnyLayout")}
def_op("affine_channel", inputs=["X", "Scale", "Bias"], outputs=["Out"], attrs=_AC_ATTRS,
       infer_shape=_affine_channel_infer,
       grad=grad_maker("affine_channel_grad", inputs=["X", "Scale"], out_grads=["Out"],
                       in_grads=["X", "Scale", "Bias"]),
       kernel=lambda ctx, x, s, b: (x * _channel_view(x, ctx.attrs, s)
                                    + _channel_view(x, ctx.attrs, b)).astype(x.dtype),
       doc="affine_channel: Out = X * Scale[c] + Bias[c] per channel (dim 1, or the last "
           "with data_layout NHWC).")
def_op("affine_channel_grad", inputs=["X", "Scale", "Out@GRAD"],
       outputs=["X@GRAD?", "Scale@GRAD?", "Bias@GRAD?"], attrs=_AC_ATTRS,
       infer_shape=grads_like(**{"X@GRAD": "X", "Scale@GRAD": "Scale", "Bias@GRAD": "Scale"}),
       kernel=_affine_channel_grad,
       doc="Gradient of affine_channel: X@GRAD = dOut * Scale[c], Scale@GRAD = sum of "
           "dOut * X, Bias@GRAD = sum of dOut per channel.")


# --- unfold ---------------------------------------------------------------------------------------
def _unfold_geometry(attrs, sizes):
    top, left, bottom, right = attrs.get("paddings", [0, 0, 0, 0])
    geometry = ConvGeometry("unfold", {"strides": attrs.get("strides", [1, 1]),
                                       "dilations": attrs.get("dilations", [1, 1]),
                                       "paddings": [top, bottom, left, right]},
                            sizes, attrs.get("kernel_sizes", [1, 1]))
    return geometry


def _unfold_infer(ctx):
    n, c, h, w = _rank4(ctx)
    attrs = ctx.attrs()
    for name in ("kernel_sizes", "strides", "dilations"):
        v = attrs.get(name)
        ctx.check(v is not None and len(v) == 2 and all(i > 0 for i in v),
                  f"attribute '{name}'", "2 positive values", v)
    ctx.check(len(attrs.get("paddings", [])) == 4, "attribute 'paddings'",
              "4 values [top, left, bottom, right]", attrs.get("paddings"))
    g = _unfold_geometry(attrs, (h, w))
    for size, o in zip((h, w), g.out):
        if size >= 0:
            ctx.check(o > 0, f"blocks of 'X' {[n, c, h, w]}", "a positive count", o)
    kh, kw = attrs["kernel_sizes"]
    blocks = g.out[0] * g.out[1] if h >= 0 and w >= 0 else -1
    ctx.set_output("Y", (n, c * kh * kw if c >= 0 else -1, blocks), ctx.input_dtype("X"))


def _unfold(ctx, x):
    xp = ctx.xp
    g = _unfold_geometry(ctx.attrs, x.shape[2:])
    cols = windows(xp, pad_spatial(xp, x, g.pads), g.ksizes, g.strides, g.dilations, g.out)
    return xp.ascontiguousarray(cols).reshape(x.shape[0], -1, g.out[0] * g.out[1])


def _unfold_grad(ctx, x, dy):
    g = _unfold_geometry(ctx.attrs, x.shape[2:])
    cols = dy.reshape(x.shape[:2] + tuple(g.ksizes) + tuple(g.out))
    return col2im(ctx.xp, cols, x.shape[2:], g).astype(x.dtype, copy=False)


_UNFOLD_ATTRS = {"kernel_sizes": ("ints", None), "strides": ("ints", [1, 1]),
                 "paddings": ("ints", [0, 0, 0, 0]), "dilations": ("ints", [1, 1])}
def_op("unfold", inputs=["X"], outputs=["Y"], attrs=_UNFOLD_ATTRS, infer_shape=_unfold_infer,
       grad=grad_maker("unfold_grad", inputs=["X"], out_grads=["Y"], in_grads=["X"]),
       kernel=_unfold,
       doc="""unfold (im2col): X [N, C, H, W] -> Y [N, C*kh*kw, L], column l the block at
output position l (row-major over oh x ow) with rows ordered (c, i, j); paddings [top,
left, bottom, right]; oh = (H + top + bottom - (dh*(kh-1)+1)) // sh + 1.""")
def_op("unfold_grad", inputs=["X", "Y@GRAD"], outputs=["X@GRAD"], attrs=_UNFOLD_ATTRS,
       infer_shape=grads_like(**{"X@GRAD": "X"}), kernel=_unfold_grad,
       doc="Gradient of unfold: col2im, every column entry added back to its pixel.")


# --- fsp, bilinear_tensor_product ------------------------------------------------------------------
def _fsp_infer(ctx):
    x, y = _rank4(ctx, "X"), _rank4(ctx, "Y")
    ctx.check(all(a < 0 or b < 0 or a == b for a, b in zip(x[2:], y[2:])),
              f"height and width of 'Y' {list(y)}", f"those of 'X' {list(x)}", list(y[2:]))
    ctx.set_output("Out", (x[0], x[1], y[1]), ctx.input_dtype("X"))


def _fsp(ctx, x, y):
    n, c1, h, w = x.shape
    out = ctx.xp.matmul(x.reshape(n, c1, -1), y.reshape(n, y.shape[1], -1).transpose(0, 2, 1))
    return (out / (h * w)).astype(x.dtype, copy=False)


def _fsp_grad(ctx, x, y, dout):
    xp = ctx.xp
    n, c1, h, w = x.shape
    xf, yf = x.reshape(n, c1, -1), y.reshape(n, y.shape[1], -1)
    dx = (xp.matmul(dout, yf) / (h * w)).reshape(x.shape).astype(x.dtype) \
        if ctx.wants("X@GRAD") else None
    dy = (xp.matmul(dout.transpose(0, 2, 1), xf) / (h * w)).reshape(y.shape).astype(y.dtype) \
        if ctx.wants("Y@GRAD") else None
    return dx, dy


def_op("fsp", inputs=["X", "Y"], outputs=["Out"], infer_shape=_fsp_infer,
       grad=grad_maker("fsp_grad", inputs=["X", "Y"], out_grads=["Out"],
                       in_grads=["X", "Y"]),
       kernel=_fsp,
       doc="fsp: the flow-of-solution-procedure matrix, Out[n, i, j] = sum_{h,w} X[n, i, h, w]"
           " * Y[n, j, h, w] / (H * W).")
def_op("fsp_grad", inputs=["X", "Y", "Out@GRAD"], outputs=["X@GRAD?", "Y@GRAD?"],
       infer_shape=grads_like(**{"X@GRAD": "X", "Y@GRAD": "Y"}), kernel=_fsp_grad,
       doc="Gradient of fsp: X@GRAD = dOut @ Y / HW, Y@GRAD = dOut^T @ X / HW per sample.")


def _btp_infer(ctx):
    x, y, w = ctx.input_shape("X"), ctx.input_shape("Y"), ctx.input_shape("Weight")
    ctx.check(len(x) == 2 and len(y) == 2, "inputs 'X' and 'Y'", "2-D tensors",
              [list(x), list(y)])
    ctx.check(len(w) == 3 and (w[1] < 0 or x[1] < 0 or w[1] == x[1])
              and (w[2] < 0 or y[1] < 0 or w[2] == y[1]), "input 'Weight'",
              f"[size, {x[1]}, {y[1]}]", list(w))
    if ctx.has_input("Bias"):
        b = ctx.input_shape("Bias")
        ctx.check(len(b) == 2 and b[0] == 1 and (b[1] < 0 or w[0] < 0 or b[1] == w[0]),
                  "input 'Bias'", f"[1, {w[0]}]", list(b))
    ctx.set_output("Out", (x[0], w[0]), ctx.input_dtype("X"))


def _btp(ctx, x, y, weight, bias):
    out = ctx.xp.einsum("nm,smk,nk->ns", x, weight, y)
    if bias is not None:
        out = out + bias
    return out.astype(x.dtype, copy=False)


def _btp_grad(ctx, x, y, weight, dout):
    xp = ctx.xp
    grads = [None, None, None, None]
    if ctx.wants("X@GRAD"):
        grads[0] = xp.einsum("ns,smk,nk->nm", dout, weight, y).astype(x.dtype)
    if ctx.wants("Y@GRAD"):
        grads[1] = xp.einsum("ns,smk,nm->nk", dout, weight, x).astype(y.dtype)
    if ctx.wants("Weight@GRAD"):
        grads[2] = xp.einsum("ns,nm,nk->smk", dout, x, y).astype(weight.dtype)
    if ctx.wants("Bias@GRAD"):
        grads[3] = dout.sum(axis=0, keepdims=True).astype(x.dtype)
    return tuple(grads)


def def_btp():
    def make(g):
        ins = {"X": g.input("X"), "Y": g.input("Y"), "Weight": g.input("Weight"),
               "Out@GRAD": g.output_grad("Out")}
        outs = {s + "@GRAD": g.input_grad(s) for s in ("X", "Y", "Weight", "Bias")
                if g.has_input(s)}
        return [g.op("bilinear_tensor_product_grad", ins, outs)]
    make.grad_type = "bilinear_tensor_product_grad"
    def_op("bilinear_tensor_product", inputs=["X", "Y", "Weight", "Bias?"], outputs=["Out"],
           infer_shape=_btp_infer, grad=make, kernel=_btp,
           doc="bilinear_tensor_product: Out[n, i] = X[n] @ Weight[i] @ Y[n]^T + Bias[0, i];"
               " X [N, M], Y [N, K], Weight [size, M, K], Bias [1, size].")

    def grad_shapes(ctx):
        grads_like(**{"X@GRAD": "X", "Y@GRAD": "Y", "Weight@GRAD": "Weight"})(ctx)
        if ctx.has_output("Bias@GRAD"):
            ctx.set_output("Bias@GRAD", (1, ctx.input_shape("Weight")[0]),
                           ctx.input_dtype("X"))
    def_op("bilinear_tensor_product_grad", inputs=["X", "Y", "Weight", "Out@GRAD"],
           outputs=["X@GRAD?", "Y@GRAD?", "Weight@GRAD?", "Bias@GRAD?"],
           infer_shape=grad_shapes, kernel=_btp_grad,
           doc="Gradient of bilinear_tensor_product: each factor's gradient contracts dOut "
               "with the other two; Bias@GRAD = sum of dOut over the batch.")


def_btp()


# --- add_position_encoding ---------------------------------------------------------------------
def _positions(x):
    """Each row's position within its sequence: by the LoD of a 2-D LoDTensor, or the
    index along dim 1 of a [N, M, P] tensor."""
    a = x.array
    if a.ndim == 3:
        return np.broadcast_to(np.arange(a.shape[1])[None, :, None], a.shape[:2] + (1,))
    offsets = x._lod[-1] if x._lod else [0, a.shape[0]]
    pos = np.concatenate([np.arange(e - s) for s, e in zip(offsets[:-1], offsets[1:])] or
                         [np.zeros(0)])
    return pos.reshape(-1, 1)


def _position_encoding(ctx, x):
    xp, attrs = ctx.xp, ctx.attrs
    a = x.array
    half = a.shape[-1] // 2
    k = np.arange(half)
    denom = 10000.0 ** (k / (half - 1)) if half > 1 else np.full(half, 10000.0)
    angle = _positions(x) / denom
    table = xp.asarray(np.concatenate([np.sin(angle), np.cos(angle)], axis=-1), dtype=a.dtype)
    out = a * attrs.get("alpha", 1.0) + table * attrs.get("beta", 1.0)
    return LoDTensor(out.astype(a.dtype, copy=False), x._lod)


def _position_encoding_infer(ctx):
    shape = ctx.input_shape("X")
    ctx.check(len(shape) in (2, 3), "input 'X'", "a [N, M, P] tensor or a 2-D LoDTensor",
              list(shape))
    ctx.check(shape[-1] < 0 or shape[-1] % 2 == 0, "last dim of 'X'", "an even size",
              shape[-1])
    ctx.set_output("Out", shape, ctx.input_dtype("X"))


_PE_ATTRS = {"alpha": ("float", 1.0), "beta": ("float", 1.0)}
def_op("add_position_encoding", inputs=["X"], outputs=["Out"], attrs=_PE_ATTRS,
       infer_shape=_position_encoding_infer, share_lod=("X", ["Out"]),
       grad=grad_maker("add_position_encoding_grad", out_grads=["Out"], in_grads=["X"]),
       kernel=_position_encoding, lod_aware=True,
       doc="""add_position_encoding: Out = alpha * X + beta * PE, P = 2 * half channels;
for position j (within its sequence) and k < half: PE[j, k] = sin(j / 10000^(k/(half-1))),
PE[j, half + k] = cos(the same) (10000 alone when half is 1).""")
def_op("add_position_encoding_grad", inputs=["Out@GRAD"], outputs=["X@GRAD"],
       attrs=_PE_ATTRS, infer_shape=same_shape("Out@GRAD", "X@GRAD"),
       kernel=lambda ctx, d: (d * ctx.attrs.get("alpha", 1.0)).astype(d.dtype),
       doc="X@GRAD = alpha * dOut.")
