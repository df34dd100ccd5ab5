"""Deformable convolution: deformable_conv (v2, modulated by Mask) and deformable_conv_v1,
with their grad ops.

Each filter tap of each output position samples the input at its regular place plus a
learned offset, by bilinear interpolation (zero outside the map). The samples are gathered
for all positions and taps at once (four corner reads, each one take_along_axis), scaled by
the mask, and multiplied with the filter like im2col columns; the gradient scatters back
through the same corners and differentiates the bilinear weights for the offsets.
"""
from ..tensor.tensor import index_add
from ..framework.registry import def_op, grads_like


class _Geometry:
    def __init__(self, attrs, x_shape, w_shape):
        self.n, self.c, self.h, self.w = x_shape
        self.kh, self.kw = w_shape[2:]
        self.sh, self.sw = attrs.get("strides", [1, 1])
        self.ph, self.pw = attrs.get("paddings", [0, 0])
        self.dh, self.dw = attrs.get("dilations", [1, 1])
        self.groups = attrs.get("groups", 1) or 1
        self.dg = attrs.get("deformable_groups", 1) or 1
        self.oh = (self.h + 2 * self.ph - (self.dh * (self.kh - 1) + 1)) // self.sh + 1
        self.ow = (self.w + 2 * self.pw - (self.dw * (self.kw - 1) + 1)) // self.sw + 1


def _sample_grid(xp, g, offset):
    """(y, x) sample coordinates [N, dg, K, oh, ow]."""
    k = g.kh * g.kw
    off = offset.reshape(g.n, g.dg, k, 2, g.oh, g.ow)
    taps_h = (xp.arange(g.kh) * g.dh).repeat(g.kw).reshape(1, 1, k, 1, 1)
    taps_w = xp.tile(xp.arange(g.kw) * g.dw, g.kh).reshape(1, 1, k, 1, 1)
    base_h = (xp.arange(g.oh) * g.sh - g.ph).reshape(1, 1, 1, -1, 1)
    base_w = (xp.arange(g.ow) * g.sw - g.pw).reshape(1, 1, 1, 1, -1)
    return base_h + taps_h + off[:, :, :, 0], base_w + taps_w + off[:, :, :, 1]


def _corners(xp, g, ys, xs):
    """[(flat index, weight, d weight/dy, d weight/dx)] of the four corners of each sample
    (weights 0 for corners off the map and for samples outside (-1, H) x (-1, W))."""
    inside = (ys > -1) & (xs > -1) & (ys < g.h) & (xs < g.w)
    y0, x0 = xp.floor(ys), xp.floor(xs)
    ly, lx = ys - y0, xs - x0
    y0, x0 = y0.astype(xp.int64), x0.astype(xp.int64)
    result = []
    for dy, wy, gy in ((0, 1 - ly, -1.0), (1, ly, 1.0)):
        for dx, wx, gx in ((0, 1 - lx, -1.0), (1, lx, 1.0)):
            yy, xx = y0 + dy, x0 + dx
            ok = inside & (yy >= 0) & (yy < g.h) & (xx >= 0) & (xx < g.w)
            index = xp.clip(yy, 0, g.h - 1) * g.w + xp.clip(xx, 0, g.w - 1)
            result.append((index, wy * wx * ok, gy * wx * ok, wy * gx * ok))
    return result


def _read(xp, g, x, index):
    """x [N, C, H, W] read at index [N, dg, K, oh, ow] per deformable group ->
    [N, dg, C/dg, K, oh, ow]."""
    per = g.c // g.dg
    flat = x.reshape(g.n, g.dg, per, g.h * g.w)
    picked = xp.take_along_axis(flat, index.reshape(g.n, g.dg, 1, -1), axis=3)
    return picked.reshape((g.n, g.dg, per) + index.shape[2:])


def _columns(xp, g, x, offset, mask):
    """(cols [N, C, K, oh*ow], sampled values, corners): the modulated samples."""
    ys, xs = _sample_grid(xp, g, offset)
    corners = _corners(xp, g, ys, xs)
    values = 0
    for index, weight, _, _ in corners:
        values = values + _read(xp, g, x, index) * weight[:, :, None]
    cols = values if mask is None else values * _mask(g, mask)[:, :, None]
    return cols.reshape(g.n, g.c, g.kh * g.kw, g.oh * g.ow), values, corners


def _mask(g, mask):
    return mask.reshape(g.n, g.dg, g.kh * g.kw, g.oh, g.ow)


def _infer(with_mask):
    def infer(ctx):
        attrs = ctx.attrs()
        x, w, off = (ctx.input_shape(s) for s in ("Input", "Filter", "Offset"))
        ctx.check(len(x) == 4 and len(w) == 4, "inputs 'Input' and 'Filter'", "4-D tensors",
                  [list(x), list(w)])
        groups = attrs.get("groups", 1) or 1
        dg = attrs.get("deformable_groups", 1) or 1
        ctx.check(x[1] < 0 or x[1] == w[1] * groups, f"input channels of 'Input' {list(x)}",
                  f"Filter dim 1 ({w[1]}) * groups ({groups})", x[1])
        ctx.check(x[1] < 0 or x[1] % dg == 0, "attribute 'deformable_groups'",
                  f"a divisor of the {x[1]} channels", dg)
        if x[2] >= 0 and x[3] >= 0:
            g = _Geometry(attrs, x, w)
            ctx.check(g.oh > 0 and g.ow > 0, "output size", "positive", [g.oh, g.ow])
            k = w[2] * w[3]
            ctx.check(list(off[1:]) == [2 * dg * k, g.oh, g.ow], "input 'Offset'",
                      f"[N, {2 * dg * k}, {g.oh}, {g.ow}]", list(off))
            if with_mask:
                ctx.check(list(ctx.input_shape("Mask")[1:]) == [dg * k, g.oh, g.ow],
                          "input 'Mask'", f"[N, {dg * k}, {g.oh}, {g.ow}]",
                          list(ctx.input_shape("Mask")))
            out = (x[0], w[0], g.oh, g.ow)
        else:
            out = (x[0], w[0], -1, -1)
        ctx.set_output("Output", out, ctx.input_dtype("Input"))
    return infer


def _forward(ctx, x, offset, w, mask=None):
    xp = ctx.xp
    g = _Geometry(ctx.attrs, x.shape, w.shape)
    cols, _, _ = _columns(xp, g, x, offset, mask)
    m = w.shape[0]
    cols = cols.reshape(g.n, g.groups, -1, g.oh * g.ow)
    out = xp.matmul(w.reshape(g.groups, m // g.groups, -1), cols)
    return out.reshape(g.n, m, g.oh, g.ow).astype(x.dtype, copy=False)


def _backward(ctx, x, offset, w, mask, dout):
    xp = ctx.xp
    g = _Geometry(ctx.attrs, x.shape, w.shape)
    m, k = w.shape[0], g.kh * g.kw
    cols, values, corners = _columns(xp, g, x, offset, mask)
    dout_g = dout.reshape(g.n, g.groups, m // g.groups, g.oh * g.ow)
    grads = {}
    if ctx.wants("Filter@GRAD"):
        grads["Filter"] = xp.matmul(dout_g, cols.reshape(g.n, g.groups, -1, g.oh * g.ow)
                                    .transpose(0, 1, 3, 2)).sum(axis=0).reshape(w.shape)
    w_t = w.reshape(g.groups, m // g.groups, -1).transpose(0, 2, 1)
    dcols = xp.matmul(w_t, dout_g).reshape(g.n, g.dg, g.c // g.dg, k, g.oh, g.ow)
    modulation = 1 if mask is None else _mask(g, mask)[:, :, None]
    dsample = dcols * modulation  # gradient reaching each bilinear sample
    if ctx.wants("Input@GRAD"):
        flat = xp.zeros(x.size, dtype=x.dtype)
        channel_base = (xp.arange(g.n * g.c) * (g.h * g.w)).reshape(g.n, g.dg, g.c // g.dg,
                                                                    1, 1, 1)
        for index, weight, _, _ in corners:
            index_add(xp, flat, (channel_base + index[:, :, None]).reshape(-1),
                       (dsample * weight[:, :, None]).reshape(-1))
        grads["Input"] = flat.reshape(x.shape)
    if ctx.wants("Offset@GRAD"):
        d_y = d_x = 0
        for index, _, wy, wx in corners:
            seen = (_read(xp, g, x, index) * dsample).sum(axis=2)
            d_y, d_x = d_y + seen * wy, d_x + seen * wx
        grads["Offset"] = xp.stack([d_y, d_x], axis=3).reshape(offset.shape)
    if mask is not None and ctx.wants("Mask@GRAD"):
        grads["Mask"] = (dcols * values).sum(axis=2).reshape(mask.shape)
    dtype = x.dtype
    return tuple(None if grads.get(s) is None else grads[s].astype(dtype, copy=False)
                 for s in ("Input", "Offset", "Filter", "Mask"))


def _check_im2col_step(v):
    return None if v > 0 else "a positive step"


_ATTRS = {"strides": ("ints", [1, 1]), "paddings": ("ints", [0, 0]),
          "dilations": ("ints", [1, 1]), "groups": ("int", 1),
          "deformable_groups": ("int", 1), "im2col_step": ("int", 64, _check_im2col_step)}


def _grad_maker(grad_type, with_mask):
    def make(g):
        ins = {"Input": g.input("Input"), "Offset": g.input("Offset"),
               "Filter": g.input("Filter"), "Output@GRAD": g.output_grad("Output")}
        slots = ["Input", "Offset", "Filter"]
        if with_mask:
            ins["Mask"] = g.input("Mask")
            slots.append("Mask")
        return [g.op(grad_type, ins, {s + "@GRAD": g.input_grad(s) for s in slots})]
    make.grad_type = grad_type
    return make


_DOC = """{op}: deformable convolution{v}. Input [N, C, H, W], Offset [N, 2*dg*kh*kw, OH, OW]
({{dy, dx}} per deformable group and tap){mask}, Filter [M, C/groups, kh, kw]:
Output[n, m, i, j] = sum_{{c, p, q}} Filter[m, c, p, q]
    * bilinear(Input[n, c], i*sh - ph + p*dh + dy, j*sw - pw + q*dw + dx){mod}
with c's deformable group giving the offsets; samples outside (-1, H) x (-1, W) read 0,
and corners off the map read 0. OH as in conv2d with symmetric paddings [ph, pw]."""

def_op("deformable_conv", inputs=["Input", "Offset", "Mask", "Filter"], outputs=["Output"],
       attrs=_ATTRS, infer_shape=_infer(True),
       grad=_grad_maker("deformable_conv_grad", True),
       kernel=lambda ctx, x, off, mask, w: _forward(ctx, x, off, w, mask),
       doc=_DOC.format(op="deformable_conv", v=" v2", mask=", Mask [N, dg*kh*kw, OH, OW]",
                       mod=" * Mask[n, tap, i, j]"))
def_op("deformable_conv_grad",
       inputs=["Input", "Offset", "Mask", "Filter", "Output@GRAD"],
       outputs=["Input@GRAD?", "Offset@GRAD?", "Filter@GRAD?", "Mask@GRAD?"], attrs=_ATTRS,
       infer_shape=grads_like(**{"Input@GRAD": "Input", "Offset@GRAD": "Offset",
                                 "Filter@GRAD": "Filter", "Mask@GRAD": "Mask"}),
       kernel=lambda ctx, x, off, mask, w, d: _backward(ctx, x, off, w, mask, d),
       doc="Gradient of deformable_conv: Filter@GRAD from the modulated columns; Input@GRAD "
           "scattered onto the bilinear corners; Offset@GRAD from the bilinear weights' "
           "slopes; Mask@GRAD the sampled values times the columns' gradient.")
def_op("deformable_conv_v1", inputs=["Input", "Offset", "Filter"], outputs=["Output"],
       attrs=_ATTRS, infer_shape=_infer(False),
       grad=_grad_maker("deformable_conv_v1_grad", False),
       kernel=lambda ctx, x, off, w: _forward(ctx, x, off, w),
       doc=_DOC.format(op="deformable_conv_v1", v=" v1 (no modulation)", mask="", mod=""))
def_op("deformable_conv_v1_grad", inputs=["Input", "Offset", "Filter", "Output@GRAD"],
       outputs=["Input@GRAD?", "Offset@GRAD?", "Filter@GRAD?"], attrs=_ATTRS,
       infer_shape=grads_like(**{"Input@GRAD": "Input", "Offset@GRAD": "Offset",
                                 "Filter@GRAD": "Filter"}),
       kernel=lambda ctx, x, off, w, d: _backward(ctx, x, off, w, None, d)[:3],
       doc="Gradient of deformable_conv_v1 (deformable_conv_grad without a mask).")
