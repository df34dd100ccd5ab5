"""Convolution and pooling: conv2d, depthwise_conv2d, pool2d and their grad ops.

Kernels work in NCHW (NHWC inputs are transposed in and out). Convolution is im2col:
the padded input's kh*kw shifted, strided views are gathered into columns (channels
first, the samples side by side) and multiplied with the filter in one matrix product per
group over as many samples as COLUMNS_BUDGET holds; its gradient scatters the columns back
(col2im). Pooling reduces the same shifted views directly.
"""
from ..errors import InvalidArgument, expected
from ..framework.registry import def_op, grad_maker, grads_like

_ALGORITHMS = ("EXPLICIT", "SAME", "VALID")


def _one_of(*choices):
    return lambda v: None if v in choices else f"one of {list(choices)}"


def _all_positive(v):
    return None if all(x > 0 for x in v) else "positive values"


# --- geometry shared by conv and pool ------------------------------------------------------
def resolve_paddings(where, paddings, algorithm, sizes, ksizes, strides):
    """Paddle's UpdatePadding: (before, after) per spatial dim.

    ``paddings`` holds one value per dim (both sides) or two per dim
    ([top, bottom, left, right]); SAME pads so the output is ceil(size / stride), the odd
    pixel going after; VALID pads nothing.
    """
    n = len(sizes)
    if algorithm == "VALID":
        return [(0, 0)] * n
    if algorithm == "SAME":
        pads = []
        for size, k, s in zip(sizes, ksizes, strides):
            if size < 0:
                pads.append((0, 0))
                continue
            total = max(((size + s - 1) // s - 1) * s + k - size, 0)
            pads.append((total // 2, total - total // 2))
        return pads
    p = [int(v) for v in paddings]
    if len(p) == n:
        return [(v, v) for v in p]
    if len(p) == 2 * n:
        return [(p[2 * i], p[2 * i + 1]) for i in range(n)]
    raise InvalidArgument(expected(where, "attribute 'paddings'", f"{n} or {2 * n} values",
                                   p))


class ConvGeometry:
    """Sizes of one conv2d: layout, strides, dilations, (before, after) pads, output H/W."""

    def __init__(self, where, attrs, x_shape, w_shape):
        self.channel_last = attrs.get("data_format", "NCHW") == "NHWC"
        self.strides = [int(s) for s in attrs.get("strides", [1, 1])]
        self.dilations = [int(d) for d in attrs.get("dilations", [1, 1])]
        self.groups = int(attrs.get("groups", 1) or 1)
        algorithm = attrs.get("padding_algorithm", "EXPLICIT")
        self.sizes = tuple(x_shape[1:3] if self.channel_last else x_shape[2:4])
        self.channels = x_shape[3] if self.channel_last else x_shape[1]
        self.ksizes = tuple(w_shape[2:4])
        self.pads = resolve_paddings(where, attrs.get("paddings", [0, 0]), algorithm,
                                     self.sizes, self.ksizes, self.strides)
        if algorithm == "SAME":
            self.dilations = [1, 1]  # Paddle ignores dilations under SAME
        self.out = []
        for size, k, s, d, (p0, p1) in zip(self.sizes, self.ksizes, self.strides,
                                           self.dilations, self.pads):
            if size < 0 or k < 0:
                self.out.append(-1)
            else:
                self.out.append((size + p0 + p1 - (d * (k - 1) + 1)) // s + 1)


def _pad_nchw(xp, x, pads, value=0):
    (pt, pb), (pl, pr) = pads
    if not (pt or pb or pl or pr):
        return x
    if x.dtype.kind != "f" or x.ndim != 4 or min(pt, pb, pl, pr) < 0:
        return xp.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=value)
    # np.pad's values; its Python costs 35 us a call, most of a small image's convolution
    n, c, h, w = x.shape
    padded = xp.full((n, c, h + pt + pb, w + pl + pr), value, dtype=x.dtype)
    padded[:, :, pt:pt + h, pl:pl + w] = x
    return padded


def _window(i, step, count, dilation=1):
    """The slice taking ``count`` positions ``step`` apart, starting at offset ``i``."""
    start = i * dilation
    return slice(start, start + step * (count - 1) + 1, step)


#: bytes of im2col columns a convolution builds at a time: as many samples as fit, each
#: part one matrix product per group (BLAS's threads meet once a product, and on a busy
#: machine each meeting may wait for a thread the system has put aside: with a product per
#: sample, the book's CIFAR ResNet trained 40x slower in a kernel sharing its two cores with
#: a busy process), while the largest buffer of conv2d and its gradient does not grow with
#: the batch
COLUMNS_BUDGET = 16 << 20


def _samples_per_step(x, g):
    """How many samples' columns fit in COLUMNS_BUDGET (at least one)."""
    per_sample = x.shape[1] * g.ksizes[0] * g.ksizes[1] * g.out[0] * g.out[1] * \
        x.dtype.itemsize
    return max(1, COLUMNS_BUDGET // max(per_sample, 1))


def _im2col(xp, x, g):
    """(C, kh, kw, N, OH, OW): every input pixel each output position's filter tap sees,
    channels outermost and the samples side by side, so that one matrix product per group
    takes all the samples (one product per sample waits on BLAS's threads once each)."""
    n, c = x.shape[:2]
    (kh, kw), (oh, ow) = g.ksizes, g.out
    (sh, sw), (dh, dw) = g.strides, g.dilations
    padded = _pad_nchw(xp, x, g.pads).transpose(1, 0, 2, 3)
    cols = xp.empty((c, kh, kw, n, oh, ow), dtype=x.dtype)
    for i in range(kh):
        rows = _window(i, sh, oh, dh)
        for j in range(kw):
            cols[:, i, j] = padded[:, :, rows, _window(j, sw, ow, dw)]
    return cols


def _col2im(xp, cols, g, h, w):
    """The adjoint of :func:`_im2col`: sum each column entry back onto its input pixel;
    (N, C, H, W)."""
    c, n = cols.shape[0], cols.shape[3]
    (kh, kw), (oh, ow) = g.ksizes, g.out
    (sh, sw), (dh, dw) = g.strides, g.dilations
    (pt, pb), (pl, pr) = g.pads
    padded = xp.zeros((n, c, h + pt + pb, w + pl + pr), dtype=cols.dtype)
    channels_first = padded.transpose(1, 0, 2, 3)
    for i in range(kh):
        rows = _window(i, sh, oh, dh)
        for j in range(kw):
            channels_first[:, :, rows, _window(j, sw, ow, dw)] += cols[:, i, j]
    return padded[:, :, pt:pt + h, pl:pl + w]


def _by_group(xp, dout, groups):
    """dOut (N, M, OH, OW) as (groups, M/groups, N * OH * OW): a group's output channels
    by every sample's positions, the layout of a product with the columns."""
    n, m = dout.shape[:2]
    return xp.ascontiguousarray(dout.reshape(n, groups, m // groups, -1).transpose(1, 2, 0, 3)
                                ).reshape(groups, m // groups, -1)


def _to_nchw(x, channel_last):
    return x.transpose(0, 3, 1, 2) if channel_last else x


def _from_nchw(xp, x, channel_last):
    return xp.ascontiguousarray(x.transpose(0, 2, 3, 1)) if channel_last else x


# --- conv2d / depthwise_conv2d ---------------------------------------------------------------
def _conv_infer_shape(ctx):
    op = ctx.op_type
    x_shape, w_shape = ctx.input_shape("Input"), ctx.input_shape("Filter")
    attrs = ctx.attrs()
    ctx.check(len(x_shape) == 4, "input 'Input'", "a 4-D tensor", list(x_shape))
    ctx.check(len(w_shape) == 4, "input 'Filter'", "a 4-D tensor [M, C/groups, kh, kw]",
              list(w_shape))
    for name in ("strides", "dilations"):
        ctx.check(len(attrs.get(name, [1, 1])) == 2, f"attribute '{name}'", "2 values",
                  attrs.get(name))
    ctx.check(all(s > 0 for s in attrs.get("strides", [1, 1])), "attribute 'strides'",
              "positive values", attrs.get("strides"))
    g = ConvGeometry(op, attrs, x_shape, w_shape)
    ctx.check(g.groups > 0, "attribute 'groups'", "a positive value", g.groups)
    if g.channels >= 0 and w_shape[1] >= 0:
        ctx.check(g.channels == w_shape[1] * g.groups,
                  f"input channels of 'Input' {list(x_shape)}",
                  f"Filter dim 1 ({w_shape[1]}) * groups ({g.groups})", g.channels)
    if w_shape[0] >= 0:
        ctx.check(w_shape[0] % g.groups == 0, f"output channels of 'Filter' {list(w_shape)}",
                  f"a multiple of groups ({g.groups})", w_shape[0])
    for size, o in zip(g.sizes, g.out):
        if size >= 0:
            ctx.check(o > 0, f"output size of 'Input' {list(x_shape)} with filter "
                      f"{list(w_shape)}, paddings {g.pads}", "a positive size", o)
    if ctx.has_input("Bias"):
        b_shape = ctx.input_shape("Bias")
        known = w_shape[0] >= 0 and all(d >= 0 for d in b_shape)
        ctx.check(not known or _numel(b_shape) == w_shape[0], "input 'Bias'",
                  f"{w_shape[0]} values (one per output channel)", list(b_shape))
    m = w_shape[0]
    shape = (x_shape[0], g.out[0], g.out[1], m) if g.channel_last else \
        (x_shape[0], m, g.out[0], g.out[1])
    ctx.set_output("Output", shape, ctx.input_dtype("Input"))


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _conv_forward(ctx, x, w, bias, residual):
    """Output = conv(Input, Filter) (+ Bias per output channel) (+ ResidualData)."""
    xp = ctx.xp
    g = ConvGeometry(ctx.op.type, ctx.attrs, x.shape, w.shape)
    x = _to_nchw(x, g.channel_last)
    n, m, groups = x.shape[0], w.shape[0], g.groups
    oh, ow = g.out
    w_g = w.reshape(groups, m // groups, -1)
    out = xp.empty((n, m, oh, ow), dtype=xp.result_type(x.dtype, w.dtype))
    step = _samples_per_step(x, g)
    for start in range(0, n, step):
        part = slice(start, min(start + step, n))
        cols = _im2col(xp, x[part], g)
        count = cols.shape[3]
        # one product per group over the part's samples: (groups, M/groups, count * OH * OW)
        product = xp.matmul(w_g, cols.reshape(groups, w_g.shape[2], -1))
        out[part] = product.reshape(m, count, oh, ow).transpose(1, 0, 2, 3)
        del cols, product
    if bias is not None:
        out += bias.reshape(1, m, 1, 1)
    out = _from_nchw(xp, out, g.channel_last)
    if residual is not None:
        out = out + residual
    return out.astype(x.dtype, copy=False)


def _conv_backward(ctx, x, w, bias, dout):
    xp = ctx.xp
    g = ConvGeometry(ctx.op.type, ctx.attrs, x.shape, w.shape)
    x = _to_nchw(x, g.channel_last)
    dout = _to_nchw(dout, g.channel_last)
    n, c, h, wd = x.shape
    m, groups = w.shape[0], g.groups
    wants_filter, wants_input = ctx.wants("Filter@GRAD"), ctx.wants("Input@GRAD")
    dx = dw = db = None
    w_t = w.reshape(groups, m // groups, -1).transpose(0, 2, 1)
    parts = []
    step = _samples_per_step(x, g)
    # (no part at all when only Bias@GRAD is wanted: it needs no columns)
    starts = range(0, n, step) if wants_filter or wants_input else ()
    for start in starts:
        part = slice(start, min(start + step, n))
        d = _by_group(xp, dout[part], groups)  # (groups, M/groups, count * OH * OW)
        if wants_filter:
            cols = _im2col(xp, x[part], g).reshape(groups, w_t.shape[1], -1)
            term = xp.matmul(d, cols.transpose(0, 2, 1))
            dw = term if dw is None else dw + term
            del cols, term
        if wants_input:
            dcols = xp.matmul(w_t, d).reshape(c, g.ksizes[0], g.ksizes[1], -1, *g.out)
            parts.append(_col2im(xp, dcols, g, h, wd))
            del dcols
    if wants_filter:
        dw = dw.reshape(w.shape).astype(w.dtype, copy=False)
    if wants_input:
        dx = parts[0] if len(parts) == 1 else xp.concatenate(parts, axis=0)
        dx = _from_nchw(xp, dx, g.channel_last)
        dx = xp.ascontiguousarray(dx).astype(x.dtype, copy=False)
    if bias is not None and ctx.wants("Bias@GRAD"):
        db = dout.sum(axis=(0, 2, 3)).reshape(bias.shape).astype(bias.dtype, copy=False)
    return dx, dw, db


def _conv_grad_maker(grad_type):
    def make(g):
        ins = {"Input": g.input("Input"), "Filter": g.input("Filter"),
               "Bias": g.input("Bias"), "Output@GRAD": g.output_grad("Output")}
        outs = {"Input@GRAD": g.input_grad("Input"), "Filter@GRAD": g.input_grad("Filter")}
        if g.has_input("Bias"):
            outs["Bias@GRAD"] = g.input_grad("Bias")
        return [g.op(grad_type, ins, outs)]
    make.grad_type = grad_type
    return make


def _conv_attrs():
    return {
        "strides": ("ints", [1, 1]),
        "paddings": ("ints", [0, 0]),
        "padding_algorithm": ("string", "EXPLICIT", _one_of(*_ALGORITHMS)),
        "groups": ("int", 1),
        "dilations": ("ints", [1, 1], _all_positive),
        "data_format": ("string", "NCHW"),
        # Paddle's "extra" attributes (use_cudnn defaults to True for conv2d, False for
        # depthwise_conv2d there): typed, but not filled in, as Paddle 2.6 does not write
        # them into programs; no effect here
        "use_cudnn": ("bool", None),
        "use_mkldnn": ("bool", None),
    }


_CONV_DOC = """{op}: 2-D convolution.

Output[n, m, i, j] = sum_{{c, p, q}} Input_padded[n, g*C/G + c, i*sh + p*dh, j*sw + q*dw]
                     * Filter[m, c, p, q],  g = m // (M/G)
Input [N, C, H, W] (or NHWC with data_format="NHWC"); Filter [M, C/groups, kh, kw];
paddings: [ph, pw] or [top, bottom, left, right]; padding_algorithm SAME gives
ceil(H/stride) (dilations ignored), VALID no padding.
OH = (H + top + bottom - (dh*(kh-1)+1)) // sh + 1.
Dispensable Bias (per output channel) and ResidualData are added when given: Paddle 2.6
dropped these fused-inference slots, but older programs still name them (empty).{extra}"""

for _type, _extra in (
        ("conv2d", ""),
        ("depthwise_conv2d", "\nDepthwise: groups equals the input channels.")):
    def_op(_type,
           inputs=["Input", "Filter", "Bias?", "ResidualData?"], outputs=["Output"],
           attrs=_conv_attrs(), infer_shape=_conv_infer_shape,
           grad=_conv_grad_maker(_type + "_grad"), kernel=_conv_forward,
           doc=_CONV_DOC.format(op=_type, extra=_extra))
    def_op(_type + "_grad",
           inputs=["Input", "Filter", "Bias?", "Output@GRAD"],
           outputs=["Input@GRAD?", "Filter@GRAD?", "Bias@GRAD?"],
           attrs=_conv_attrs(),
           infer_shape=grads_like(**{"Input@GRAD": "Input", "Filter@GRAD": "Filter",
                                     "Bias@GRAD": "Bias"}),
           kernel=_conv_backward,
           doc=f"Gradient of {_type}: Input@GRAD = col2im(Filter^T @ dOut), "
               f"Filter@GRAD = dOut @ im2col(Input)^T, Bias@GRAD = sum of dOut per channel.")


# --- pool2d ------------------------------------------------------------------------------------
class PoolGeometry:
    """Sizes of one pool2d (Paddle's pool InferShape plus UpdatePadding)."""

    def __init__(self, where, attrs, x_shape):
        self.channel_last = attrs.get("data_format", "NCHW") == "NHWC"
        self.sizes = tuple(x_shape[1:3] if self.channel_last else x_shape[2:4])
        self.global_pooling = bool(attrs.get("global_pooling", False))
        self.adaptive = bool(attrs.get("adaptive", False))
        self.ksizes = tuple(self.sizes if self.global_pooling else
                            (int(k) for k in attrs["ksize"]))
        self.strides = [int(s) for s in attrs.get("strides", [1, 1])]
        algorithm = attrs.get("padding_algorithm", "EXPLICIT")
        if self.global_pooling or self.adaptive:
            self.pads = [(0, 0), (0, 0)]
        else:
            self.pads = resolve_paddings(where, attrs.get("paddings", [0, 0]), algorithm,
                                         self.sizes, self.ksizes, self.strides)
        ceil_mode = bool(attrs.get("ceil_mode", False))
        self.out = []
        for size, k, s, (p0, p1) in zip(self.sizes, self.ksizes, self.strides, self.pads):
            if self.adaptive:
                self.out.append(k)
            elif size < 0:
                self.out.append(-1)
            else:
                self.out.append((size - k + p0 + p1 + (s - 1 if ceil_mode else 0)) // s + 1)


def _pool_infer_shape(ctx):
    attrs = ctx.attrs()
    x_shape = ctx.input_shape("X")
    ctx.check(len(x_shape) == 4, "input 'X'", "a 4-D tensor", list(x_shape))
    ctx.check(attrs.get("pooling_type") in ("max", "avg"), "attribute 'pooling_type'",
              "'max' or 'avg'", attrs.get("pooling_type"))
    ksize = attrs.get("ksize")
    ctx.check(ksize is not None and len(ksize) == 2, "attribute 'ksize'", "2 values", ksize)
    strides = attrs.get("strides", [1, 1])
    ctx.check(len(strides) == 2 and all(s > 0 for s in strides), "attribute 'strides'",
              "2 positive values", strides)
    g = PoolGeometry(ctx.op_type, attrs, x_shape)
    for size, o in zip(g.sizes, g.out):
        if size >= 0:
            ctx.check(o > 0, f"output size of 'X' {list(x_shape)} with ksize {list(g.ksizes)}",
                      "a positive size", o)
    c = x_shape[3] if g.channel_last else x_shape[1]
    shape = (x_shape[0], g.out[0], g.out[1], c) if g.channel_last else \
        (x_shape[0], c, g.out[0], g.out[1])
    ctx.set_output("Out", shape, ctx.input_dtype("X"))


def _adaptive_bins(size, out):
    """Paddle's adaptive bins: [floor(i*size/out), ceil((i+1)*size/out))."""
    return [((i * size) // out, -((-(i + 1) * size) // out)) for i in range(out)]


def _pool_sizes(g, which):
    """Divisors of average pooling along one spatial dim: (the whole window ``ksize``, as
    Fluid 1.8's kernels divide unless ``exclusive``; the window clipped to the input)."""
    size, k, s, o = g.sizes[which], g.ksizes[which], g.strides[which], g.out[which]
    pad = g.pads[which][0]
    counts = []
    for i in range(o):
        start = i * s - pad
        counts.append((k, min(start + k, size) - max(start, 0)))
    return counts


def _strided_views(g):
    """(i, j, rows slice, cols slice) of each kernel tap over the padded input."""
    (kh, kw), (sh, sw), (oh, ow) = g.ksizes, g.strides, g.out
    for i in range(kh):
        for j in range(kw):
            yield i, j, _window(i, sh, oh), _window(j, sw, ow)


def _pool_padded(xp, x, g, value):
    """X padded before by Paddle's top/left pads and after by as much as the windows reach.

    Paddle's kernels pad before by pads[0] only (the after pads only size the output), so
    the windows run from i*stride - pad_before."""
    h, w = x.shape[2:]
    pt, pl = g.pads[0][0], g.pads[1][0]
    reach_h = (g.out[0] - 1) * g.strides[0] + g.ksizes[0]
    reach_w = (g.out[1] - 1) * g.strides[1] + g.ksizes[1]
    pads = [(pt, max(reach_h - h - pt, 0)), (pl, max(reach_w - w - pl, 0))]
    return _pad_nchw(xp, x, pads, value), pt, pl


def _pool_forward(ctx, x):
    xp, attrs = ctx.xp, ctx.attrs
    g = PoolGeometry(ctx.op.type, attrs, x.shape)
    xn = _to_nchw(x, g.channel_last)
    is_max = attrs["pooling_type"] == "max"
    if g.adaptive and not is_max:
        out = _adaptive_avg_pool(xp, xn, g)
    elif is_max:
        padded, _, _ = _pool_padded(xp, xn, g, -xp.inf)
        out = None
        for _, _, rows, cols in _strided_views(g):
            view = padded[:, :, rows, cols]
            out = view.copy() if out is None else xp.maximum(out, view)
    else:
        padded, _, _ = _pool_padded(xp, xn, g, 0)
        out = None
        for _, _, rows, cols in _strided_views(g):
            view = padded[:, :, rows, cols]
            out = view.copy() if out is None else out + view
        out = out / _divisors(xp, g, attrs, xn.dtype)
    return _from_nchw(xp, out, g.channel_last).astype(x.dtype, copy=False)


def _divisors(xp, g, attrs, dtype):
    pick = 1 if attrs.get("exclusive", True) else 0
    rows = xp.asarray([c[pick] for c in _pool_sizes(g, 0)], dtype=dtype)
    cols = xp.asarray([c[pick] for c in _pool_sizes(g, 1)], dtype=dtype)
    return rows[:, None] * cols[None, :]


def _adaptive_avg_pool(xp, x, g):
    n, c, h, w = x.shape
    out = xp.empty((n, c, g.out[0], g.out[1]), dtype=x.dtype)
    for i, (h0, h1) in enumerate(_adaptive_bins(h, g.out[0])):
        for j, (w0, w1) in enumerate(_adaptive_bins(w, g.out[1])):
            out[:, :, i, j] = x[:, :, h0:h1, w0:w1].mean(axis=(2, 3))
    return out


def _pool_backward(ctx, x, out, dout):
    xp, attrs = ctx.xp, ctx.attrs
    g = PoolGeometry(ctx.op.type, attrs, x.shape)
    xn, doutn = _to_nchw(x, g.channel_last), _to_nchw(dout, g.channel_last)
    n, c, h, w = xn.shape
    is_max = attrs["pooling_type"] == "max"
    if g.adaptive and not is_max:
        dx = xp.zeros(xn.shape, dtype=xn.dtype)
        for i, (h0, h1) in enumerate(_adaptive_bins(h, g.out[0])):
            for j, (w0, w1) in enumerate(_adaptive_bins(w, g.out[1])):
                share = doutn[:, :, i, j] / ((h1 - h0) * (w1 - w0))
                dx[:, :, h0:h1, w0:w1] += share[:, :, None, None]
    else:
        padded, pt, pl = _pool_padded(xp, xn, g, -xp.inf if is_max else 0)
        first = None
        if is_max:
            taps = xp.stack([padded[:, :, r, s] for _, _, r, s in _strided_views(g)], axis=-1)
            first = taps.argmax(axis=-1)  # Paddle: only the first (row-major) maximum
            del taps
        # the padded input goes before its gradient, as big as it, is made
        shape, padded = padded.shape, None
        dpad = xp.zeros(shape, dtype=xn.dtype)
        if is_max:
            kw = g.ksizes[1]
            for i, j, rows, cols in _strided_views(g):
                dpad[:, :, rows, cols] += doutn * (first == i * kw + j)
        else:
            share = doutn / _divisors(xp, g, attrs, xn.dtype)
            for _, _, rows, cols in _strided_views(g):
                dpad[:, :, rows, cols] += share
        dx = dpad[:, :, pt:pt + h, pl:pl + w]
    dx = _from_nchw(xp, dx, g.channel_last)
    return xp.ascontiguousarray(dx).astype(x.dtype, copy=False)


_POOL_ATTRS = {
    "pooling_type": ("string", None, _one_of("max", "avg")),
    "ksize": ("ints", None),
    "global_pooling": ("bool", False),
    "strides": ("ints", [1, 1]),
    "paddings": ("ints", [0, 0]),
    "exclusive": ("bool", True),
    "adaptive": ("bool", False),
    "ceil_mode": ("bool", False),
    "data_format": ("string", "NCHW"),
    "padding_algorithm": ("string", "EXPLICIT", _one_of(*_ALGORITHMS)),
    "use_cudnn": ("bool", False),
    "use_mkldnn": ("bool", None),  # Paddle extra, not filled in
}

def_op("pool2d", inputs=["X"], outputs=["Out"], attrs=_POOL_ATTRS,
       infer_shape=_pool_infer_shape,
       grad=grad_maker("pool2d_grad", inputs=["X"], outputs=["Out"], out_grads=["Out"],
                       in_grads=["X"]),
       kernel=_pool_forward,
       doc="""pool2d: max or average over kh x kw windows of X [N, C, H, W] (or NHWC).

Window (i, j) covers rows i*sh - top .. i*sh - top + kh (clipped to the input).
OH = (H - kh + top + bottom) // sh + 1, or with ceil_mode (H - kh + top + bottom + sh - 1)
// sh + 1. avg divides by the clipped window size (exclusive=True) or by the window's extent
up to H + top (exclusive=False). global_pooling: one window over H x W. adaptive: OH = ksize,
avg over bin i = [floor(i*H/OH), ceil((i+1)*H/OH)); as in Paddle's kernels, max pooling
ignores ``adaptive`` apart from the output size (kh x kw windows at the strides, no
padding; Paddle's adaptive max pooling is the max_pool2d_with_index op).
SAME/VALID as in conv2d.""")
def_op("pool2d_grad", inputs=["X", "Out", "Out@GRAD"], outputs=["X@GRAD"], attrs=_POOL_ATTRS,
       infer_shape=grads_like(**{"X@GRAD": "X"}), kernel=_pool_backward,
       doc="Gradient of pool2d: avg spreads dOut evenly over each window; max routes it to "
           "the first maximum of the window.")

