"""N-dimensional convolution and pooling: conv3d, conv2d_transpose, conv3d_transpose,
depthwise_conv2d_transpose, pool3d and max pooling with index (2-D and 3-D), with their
grad ops.

One geometry serves every spatial rank. A convolution gathers the padded input's windows
with a strided view (``windows``: entry [n, c, *tap, *pos] is the pixel tap ``tap`` of
output position ``pos`` sees) and multiplies them with the filter as one batched matmul
per group; its adjoint (``col2im``) adds the columns back, one strided slice per filter tap.
A transposed convolution is that adjoint applied to ``Filter^T @ Input``.
Pooling works per spatial dim: average pooling contracts each dim with a window matrix
(1 where a position lies in an output's window), max pooling gathers every window with
index matrices and takes the first maximum.
"""
import itertools

from ..errors import InvalidArgument, expected
from .conv import _ALGORITHMS, _all_positive, _one_of, resolve_paddings
from ..tensor.tensor import index_add
from ..framework.registry import def_op, grad_maker, grads_like

CHANNEL_LAST_FORMATS = ("NHWC", "NDHWC")


def is_channel_last(attrs):
    return attrs.get("data_format", "NCHW") in CHANNEL_LAST_FORMATS


def spatial_dims(shape, channel_last):
    return tuple(shape[1:-1]) if channel_last else tuple(shape[2:])


def channels_of(shape, channel_last):
    return shape[-1] if channel_last else shape[1]


def to_channel_first(x, channel_last):
    if not channel_last:
        return x
    return x.transpose((0, x.ndim - 1) + tuple(range(1, x.ndim - 1)))


def from_channel_first(xp, x, channel_last):
    if not channel_last:
        return x
    return xp.ascontiguousarray(x.transpose((0,) + tuple(range(2, x.ndim)) + (1,)))


def product(values):
    n = 1
    for v in values:
        n *= v
    return n


def pad_spatial(xp, x, pads, value=0):
    """``x`` (N, C, *spatial) padded by (before, after) per spatial dim."""
    if not any(p0 or p1 for p0, p1 in pads):
        return x
    return xp.pad(x, ((0, 0), (0, 0)) + tuple(tuple(p) for p in pads),
                  constant_values=value)


def windows(xp, padded, ksizes, strides, dilations, out):
    """A strided view (N, C, *ksizes, *out) of ``padded``: [n, c, *t, *o] is
    padded[n, c, o * stride + t * dilation] (no copy)."""
    padded = xp.ascontiguousarray(padded)
    step = padded.strides
    d = len(ksizes)
    shape = tuple(padded.shape[:2]) + tuple(ksizes) + tuple(out)
    strides = (tuple(step[:2]) + tuple(step[2 + i] * dilations[i] for i in range(d))
               + tuple(step[2 + i] * strides[i] for i in range(d)))
    return xp.lib.stride_tricks.as_strided(padded, shape=shape, strides=strides)


def col2im(xp, cols, sizes, g):
    """The adjoint of :func:`windows` over ``pad_spatial``: every column entry (N, C,
    *ksizes, *out) added back onto the input pixel of ``sizes`` it came from."""
    n, c = cols.shape[:2]
    padded = xp.zeros((n, c) + tuple(s + p0 + p1 for s, (p0, p1) in zip(sizes, g.pads)),
                      dtype=cols.dtype)
    whole = (slice(None), slice(None))
    for taps in itertools.product(*(range(k) for k in g.ksizes)):
        region = tuple(slice(t * d, t * d + s * (o - 1) + 1, s) for t, d, s, o in
                       zip(taps, g.dilations, g.strides, g.out))
        padded[whole + region] += cols[whole + taps]
    crop = tuple(slice(p0, p0 + s) for s, (p0, _) in zip(sizes, g.pads))
    return padded[whole + crop]


class ConvGeometry:
    """One convolution's sizes over ``sizes`` (the spatial dims it reads): ksizes, strides,
    dilations, (before, after) pads and ``out`` (the spatial dims it writes; -1 unknown)."""

    def __init__(self, where, attrs, sizes, ksizes):
        d = len(sizes)
        self.sizes, self.ksizes = tuple(sizes), tuple(ksizes)
        self.strides = [int(s) for s in attrs.get("strides", [1] * d)]
        self.dilations = [int(v) for v in attrs.get("dilations", [1] * d)]
        algorithm = attrs.get("padding_algorithm", "EXPLICIT")
        self.pads = resolve_paddings(where, attrs.get("paddings", [0] * d), algorithm,
                                     self.sizes, self.ksizes, self.strides)
        if algorithm == "SAME":
            self.dilations = [1] * d  # Paddle ignores dilations under SAME
        self.out = [-1 if size < 0 or k < 0 else
                    (size + p0 + p1 - (dl * (k - 1) + 1)) // s + 1
                    for size, k, s, dl, (p0, p1) in zip(self.sizes, self.ksizes, self.strides,
                                                        self.dilations, self.pads)]


class TransposeGeometry(ConvGeometry):
    """A transposed convolution from ``sizes``: ``out`` = (size - 1) * stride - pads +
    dilation * (k - 1) + 1 (+ output_padding), or output_size where given (it must lie in
    [that, that + stride)). ``conv`` is the convolution it is the adjoint of (from ``out``
    back to ``sizes``)."""

    def __init__(self, where, attrs, sizes, ksizes):
        super().__init__(where, attrs, sizes, ksizes)
        output_size = list(attrs.get("output_size") or [])
        output_padding = list(attrs.get("output_padding") or [])
        self.out = []
        for i, (size, k, s, dl, (p0, p1)) in enumerate(zip(
                self.sizes, self.ksizes, self.strides, self.dilations, self.pads)):
            if size < 0 or k < 0:
                self.out.append(-1)
                continue
            least = (size - 1) * s - p0 - p1 + dl * (k - 1) + 1
            if output_size:
                want = int(output_size[i])
                if not least <= want < least + s:
                    raise InvalidArgument(expected(
                        where, "attribute 'output_size'", f"dim {i} in [{least}, "
                        f"{least + s}) for input size {size}", list(output_size)))
                self.out.append(want)
            else:
                self.out.append(least + (int(output_padding[i]) if output_padding else 0))
        self.conv = _AdjointConv(self)


class _AdjointConv:
    """The convolution a TransposeGeometry undoes: it reads ``out`` and writes ``sizes``."""

    def __init__(self, t):
        self.ksizes, self.strides, self.dilations, self.pads = (
            t.ksizes, t.strides, t.dilations, t.pads)
        self.out = list(t.sizes)


# --- convolution kernels (channel-first arrays) ----------------------------------------------
def conv_forward(xp, x, w, groups, g):
    """Convolution of x (N, C, *S) with w (M, C/groups, *k) -> (N, M, *out)."""
    n, c = x.shape[:2]
    m = w.shape[0]
    cols = windows(xp, pad_spatial(xp, x, g.pads), g.ksizes, g.strides, g.dilations, g.out)
    cols = cols.reshape(n, groups, (c // groups) * product(g.ksizes), product(g.out))
    out = xp.matmul(w.reshape(groups, m // groups, -1), cols)
    return out.reshape((n, m) + tuple(g.out))


def conv_backward(xp, x, w, dout, groups, g, want_x, want_w):
    """(dx, dw) of :func:`conv_forward` for dout (N, M, *out)."""
    n, c = x.shape[:2]
    m = w.shape[0]
    dout_g = dout.reshape(n, groups, m // groups, product(g.out))
    dx = dw = None
    if want_w:
        cols = windows(xp, pad_spatial(xp, x, g.pads), g.ksizes, g.strides, g.dilations,
                       g.out)
        cols = cols.reshape(n, groups, (c // groups) * product(g.ksizes), product(g.out))
        dw = xp.matmul(dout_g, cols.transpose(0, 1, 3, 2)).sum(axis=0).reshape(w.shape)
    if want_x:
        w_t = w.reshape(groups, m // groups, -1).transpose(0, 2, 1)
        dcols = xp.matmul(w_t, dout_g).reshape((n, c) + tuple(g.ksizes) + tuple(g.out))
        dx = col2im(xp, dcols, x.shape[2:], g)
    return dx, dw


def conv_transpose_forward(xp, x, w, groups, t):
    """Transposed convolution of x (N, C, *S) with w (C, M/groups, *k) -> (N, M, *out)."""
    n, c = x.shape[:2]
    per_group = w.shape[1]
    xg = x.reshape(n, groups, c // groups, -1)
    wg = w.reshape(groups, c // groups, -1)
    cols = xp.matmul(wg.transpose(0, 2, 1), xg)
    cols = cols.reshape((n, groups * per_group) + tuple(t.ksizes) + tuple(x.shape[2:]))
    return col2im(xp, cols, t.out, t.conv)


def conv_transpose_backward(xp, x, w, dout, groups, t, want_x, want_w):
    n, c = x.shape[:2]
    cols = windows(xp, pad_spatial(xp, dout, t.pads), t.ksizes, t.strides, t.dilations,
                   x.shape[2:])
    cols = cols.reshape(n, groups, -1, product(x.shape[2:]))
    xg = x.reshape(n, groups, c // groups, -1)
    dx = dw = None
    if want_x:
        dx = xp.matmul(w.reshape(groups, c // groups, -1), cols).reshape(x.shape)
    if want_w:
        dw = xp.matmul(xg, cols.transpose(0, 1, 3, 2)).sum(axis=0).reshape(w.shape)
    return dx, dw


# --- conv3d ------------------------------------------------------------------------------------
def _check_rank_and_steps(ctx, slot, rank, attrs):
    x_shape = ctx.input_shape(slot)
    d = rank - 2
    ctx.check(len(x_shape) == rank, f"input '{slot}'", f"a {rank}-D tensor", list(x_shape))
    for name in ("strides", "dilations"):
        value = attrs.get(name, [1] * d)
        ctx.check(len(value) == d and all(v > 0 for v in value), f"attribute '{name}'",
                  f"{d} positive values", value)
    return x_shape


def _conv_nd_infer_shape(rank):
    def infer(ctx):
        attrs = ctx.attrs()
        x_shape = _check_rank_and_steps(ctx, "Input", rank, attrs)
        w_shape = ctx.input_shape("Filter")
        ctx.check(len(w_shape) == rank, "input 'Filter'",
                  f"a {rank}-D tensor [M, C/groups, *k]", list(w_shape))
        last = is_channel_last(attrs)
        groups = int(attrs.get("groups", 1) or 1)
        c = channels_of(x_shape, last)
        if c >= 0 and w_shape[1] >= 0:
            ctx.check(c == w_shape[1] * groups, f"input channels of 'Input' {list(x_shape)}",
                      f"Filter dim 1 ({w_shape[1]}) * groups ({groups})", c)
        if w_shape[0] >= 0:
            ctx.check(w_shape[0] % groups == 0, f"output channels of 'Filter' "
                      f"{list(w_shape)}", f"a multiple of groups ({groups})", w_shape[0])
        g = ConvGeometry(ctx.op_type, attrs, spatial_dims(x_shape, last), w_shape[2:])
        for size, o in zip(g.sizes, g.out):
            if size >= 0:
                ctx.check(o > 0, f"output size of 'Input' {list(x_shape)} with filter "
                          f"{list(w_shape)}, paddings {g.pads}", "a positive size", o)
        ctx.set_output("Output", _layout(x_shape[0], w_shape[0], g.out, last),
                       ctx.input_dtype("Input"))
    return infer


def _layout(n, c, sizes, channel_last):
    return (n,) + tuple(sizes) + (c,) if channel_last else (n, c) + tuple(sizes)


def _conv_nd_kernel(ctx, x, w):
    xp, last = ctx.xp, is_channel_last(ctx.attrs)
    xc = to_channel_first(x, last)
    g = ConvGeometry(ctx.op.type, ctx.attrs, xc.shape[2:], w.shape[2:])
    out = conv_forward(xp, xc, w, int(ctx.attrs.get("groups", 1) or 1), g)
    return from_channel_first(xp, out, last).astype(x.dtype, copy=False)


def _conv_nd_grad_kernel(ctx, x, w, dout):
    xp, last = ctx.xp, is_channel_last(ctx.attrs)
    xc, dc = to_channel_first(x, last), to_channel_first(dout, last)
    g = ConvGeometry(ctx.op.type, ctx.attrs, xc.shape[2:], w.shape[2:])
    dx, dw = conv_backward(xp, xc, w, dc, int(ctx.attrs.get("groups", 1) or 1), g,
                           ctx.wants("Input@GRAD"), ctx.wants("Filter@GRAD"))
    if dx is not None:
        dx = from_channel_first(xp, dx, last).astype(x.dtype, copy=False)
    if dw is not None:
        dw = dw.astype(w.dtype, copy=False)
    return dx, dw


def _conv_attrs(d, data_format):
    return {
        "strides": ("ints", [1] * d),
        "paddings": ("ints", [0] * d),
        "padding_algorithm": ("string", "EXPLICIT", _one_of(*_ALGORITHMS)),
        "groups": ("int", 1),
        "dilations": ("ints", [1] * d, _all_positive),
        "data_format": ("string", data_format),
        # Paddle's "extra" attributes: typed, not filled in; no effect here
        "use_cudnn": ("bool", None),
        "use_mkldnn": ("bool", None),
    }


def _filter_grad_maker(grad_type):
    return grad_maker(grad_type, inputs=["Input", "Filter"], out_grads=["Output"],
                      in_grads=["Input", "Filter"])


_CONV_GRAD_SHAPES = grads_like(**{"Input@GRAD": "Input", "Filter@GRAD": "Filter"})

def_op("conv3d", inputs=["Input", "Filter"], outputs=["Output"],
       attrs=_conv_attrs(3, "NCDHW"), infer_shape=_conv_nd_infer_shape(5),
       grad=_filter_grad_maker("conv3d_grad"), kernel=_conv_nd_kernel,
       doc="""conv3d: 3-D convolution of Input [N, C, D, H, W] (NDHWC with data_format
"NDHWC") with Filter [M, C/groups, kd, kh, kw].

Output[n, m, z, y, x] = sum_{c, p, q, r} Input_padded[n, g*C/G + c, z*sd + p*dd,
y*sh + q*dh, x*sw + r*dw] * Filter[m, c, p, q, r], g = m // (M/G);
OD = (D + front + back - (dd*(kd-1)+1)) // sd + 1 (likewise H, W); paddings [pd, ph, pw]
or [front, back, top, bottom, left, right]; SAME/VALID as in conv2d.""")
def_op("conv3d_grad", inputs=["Input", "Filter", "Output@GRAD"],
       outputs=["Input@GRAD?", "Filter@GRAD?"], attrs=_conv_attrs(3, "NCDHW"),
       infer_shape=_CONV_GRAD_SHAPES, kernel=_conv_nd_grad_kernel,
       doc="Gradient of conv3d: Input@GRAD = col2im(Filter^T @ dOut), "
           "Filter@GRAD = dOut @ im2col(Input)^T.")


# --- transposed convolutions --------------------------------------------------------------------
def _transpose_infer_shape(rank):
    def infer(ctx):
        attrs = ctx.attrs()
        x_shape = _check_rank_and_steps(ctx, "Input", rank, attrs)
        w_shape = ctx.input_shape("Filter")
        ctx.check(len(w_shape) == rank, "input 'Filter'",
                  f"a {rank}-D tensor [C, M/groups, *k]", list(w_shape))
        last = is_channel_last(attrs)
        groups = int(attrs.get("groups", 1) or 1)
        c = channels_of(x_shape, last)
        if c >= 0 and w_shape[0] >= 0:
            ctx.check(c == w_shape[0], f"input channels of 'Input' {list(x_shape)}",
                      f"Filter dim 0 ({w_shape[0]})", c)
            ctx.check(c % groups == 0, f"input channels of 'Input' {list(x_shape)}",
                      f"a multiple of groups ({groups})", c)
        output_size = attrs.get("output_size") or []
        ctx.check(not output_size or len(output_size) == rank - 2, "attribute 'output_size'",
                  f"{rank - 2} values or none", output_size)
        t = TransposeGeometry(ctx.op_type, attrs, spatial_dims(x_shape, last), w_shape[2:])
        for o in t.out:
            ctx.check(o == -1 or o > 0, f"output size of 'Input' {list(x_shape)} with filter "
                      f"{list(w_shape)}, paddings {t.pads}", "a positive size", o)
        m = w_shape[1] * groups if w_shape[1] >= 0 else -1
        ctx.set_output("Output", _layout(x_shape[0], m, t.out, last), ctx.input_dtype("Input"))
    return infer


def _transpose_kernel(ctx, x, w):
    xp, last = ctx.xp, is_channel_last(ctx.attrs)
    xc = to_channel_first(x, last)
    t = TransposeGeometry(ctx.op.type, ctx.attrs, xc.shape[2:], w.shape[2:])
    out = conv_transpose_forward(xp, xc, w, int(ctx.attrs.get("groups", 1) or 1), t)
    return from_channel_first(xp, out, last).astype(x.dtype, copy=False)


def _transpose_grad_kernel(ctx, x, w, dout):
    xp, last = ctx.xp, is_channel_last(ctx.attrs)
    xc, dc = to_channel_first(x, last), to_channel_first(dout, last)
    t = TransposeGeometry(ctx.op.type, ctx.attrs, xc.shape[2:], w.shape[2:])
    dx, dw = conv_transpose_backward(xp, xc, w, dc, int(ctx.attrs.get("groups", 1) or 1), t,
                                     ctx.wants("Input@GRAD"), ctx.wants("Filter@GRAD"))
    if dx is not None:
        dx = from_channel_first(xp, dx, last).astype(x.dtype, copy=False)
    if dw is not None:
        dw = dw.astype(w.dtype, copy=False)
    return dx, dw


def _transpose_attrs(d, data_format):
    attrs = _conv_attrs(d, data_format)
    attrs["output_size"] = ("ints", [])
    attrs["output_padding"] = ("ints", [])
    return attrs


_TRANSPOSE_DOC = """{op}: the transposed ({d}-D) convolution, the adjoint of {fwd} (the
gradient of {fwd} with respect to its input).

Input [N, C, *S] (channel-last with data_format "{last}"), Filter [C, M/groups, *k]:
Output[n, g*M/G + m, o*s + t*d - pad_before] += Input[n, g*C/G + c, o] * Filter[g*C/G + c,
m, t] over every input position o and filter tap t (positions outside the output dropped).
Output size (S - 1) * stride - pad_before - pad_after + dilation * (k - 1) + 1
(+ output_padding), or output_size, which must lie in [that, that + stride).{extra}"""

for _type, _rank, _fmt, _last, _extra in (
        ("conv2d_transpose", 4, "NCHW", "NHWC", ""),
        ("depthwise_conv2d_transpose", 4, "NCHW", "NHWC",
         "\nDepthwise: groups equals the input channels."),
        ("conv3d_transpose", 5, "NCDHW", "NDHWC", "")):
    _d = _rank - 2
    def_op(_type, inputs=["Input", "Filter"], outputs=["Output"],
           attrs=_transpose_attrs(_d, _fmt), infer_shape=_transpose_infer_shape(_rank),
           grad=_filter_grad_maker(_type + "_grad"), kernel=_transpose_kernel,
           doc=_TRANSPOSE_DOC.format(op=_type, d=_d, fwd=f"conv{_d}d", last=_last,
                                     extra=_extra))
    def_op(_type + "_grad", inputs=["Input", "Filter", "Output@GRAD"],
           outputs=["Input@GRAD?", "Filter@GRAD?"], attrs=_transpose_attrs(_d, _fmt),
           infer_shape=_CONV_GRAD_SHAPES, kernel=_transpose_grad_kernel,
           doc=f"Gradient of {_type}: Input@GRAD = conv{_d}d(dOut, Filter), "
               f"Filter@GRAD = Input @ im2col(dOut)^T per group.")


# --- pooling, any spatial rank ----------------------------------------------------------------
class PoolGeometry:
    """Per spatial dim: each output's window [start, end) clipped to the input, and the
    divisor extent of inclusive average pooling (the window up to size + pad_before)."""

    def __init__(self, where, attrs, sizes, with_index=False):
        d = len(sizes)
        self.sizes = tuple(sizes)
        self.global_pooling = bool(attrs.get("global_pooling", False))
        self.adaptive = bool(attrs.get("adaptive", False))
        self.ksizes = tuple(self.sizes) if self.global_pooling else \
            tuple(int(k) for k in attrs["ksize"])
        self.strides = [int(s) for s in attrs.get("strides", [1] * d)]
        algorithm = "EXPLICIT" if with_index else attrs.get("padding_algorithm", "EXPLICIT")
        if self.global_pooling or self.adaptive:
            self.pads = [(0, 0)] * d
        else:
            self.pads = resolve_paddings(where, attrs.get("paddings", [0] * d), algorithm,
                                         self.sizes, self.ksizes, self.strides)
        ceil_mode = bool(attrs.get("ceil_mode", False)) and not with_index
        self.out = []
        for size, k, s, (p0, p1) in zip(self.sizes, self.ksizes, self.strides, self.pads):
            if self.adaptive:
                self.out.append(k)
            elif size < 0:
                self.out.append(-1)
            else:
                self.out.append((size - k + p0 + p1 + (s - 1 if ceil_mode else 0)) // s + 1)

    def bounds(self, dim):
        """[(start, end, inclusive extent)] of each output along ``dim``."""
        size, k, s, o = self.sizes[dim], self.ksizes[dim], self.strides[dim], self.out[dim]
        pad = self.pads[dim][0]
        result = []
        for i in range(o):
            if self.adaptive:
                start, end = (i * size) // o, -((-(i + 1) * size) // o)
                result.append((start, end, end - start))
                continue
            start = i * s - pad
            # the divisor of a non-exclusive average is the whole window (Fluid 1.8)
            end, extent = min(start + k, size), k
            start = min(max(start, 0), size - 1)
            result.append((start, max(end, start + 1), extent))
        return result


def _window_matrix(xp, bounds, size, dtype):
    """(out, size): 1 where input position j lies in output i's window."""
    rows = xp.arange(size)[None, :]
    starts = xp.asarray([b[0] for b in bounds])[:, None]
    ends = xp.asarray([b[1] for b in bounds])[:, None]
    return ((rows >= starts) & (rows < ends)).astype(dtype)


def _contract(xp, x, matrices):
    """x (N, C, *S) with dim i contracted against matrices[i] (o_i, S_i) -> (N, C, *o)."""
    for i, m in enumerate(matrices):
        x = xp.moveaxis(xp.tensordot(x, m, axes=([2 + i], [1])), -1, 2 + i)
    return x


def _avg_divisor(xp, g, attrs, dtype):
    exclusive = attrs.get("exclusive", True) or g.adaptive
    divisor = None
    for dim in range(len(g.sizes)):
        counts = xp.asarray([(b[1] - b[0]) if exclusive else b[2] for b in g.bounds(dim)],
                            dtype=dtype)
        shape = [1] * len(g.sizes)
        shape[dim] = -1
        counts = counts.reshape(shape)
        divisor = counts if divisor is None else divisor * counts
    return divisor


def avg_pool(xp, x, g, attrs):
    matrices = [_window_matrix(xp, g.bounds(i), s, x.dtype) for i, s in enumerate(g.sizes)]
    return _contract(xp, x, matrices) / _avg_divisor(xp, g, attrs, x.dtype)


def avg_pool_grad(xp, dout, g, attrs):
    matrices = [_window_matrix(xp, g.bounds(i), s, dout.dtype).T
                for i, s in enumerate(g.sizes)]
    return _contract(xp, dout / _avg_divisor(xp, g, attrs, dout.dtype), matrices)


def max_pool(xp, x, g):
    """(max, flat spatial index of each window's first maximum), both (N, C, *out)."""
    d = len(g.sizes)
    index_mats = []
    for dim in range(d):
        bounds = g.bounds(dim)
        longest = max(b[1] - b[0] for b in bounds)
        starts = xp.asarray([b[0] for b in bounds])[:, None]
        lasts = xp.asarray([b[1] - 1 for b in bounds])[:, None]
        # positions past a short window repeat its last one: they change neither the max nor
        # which position is the first maximum in row-major order
        index_mats.append(xp.minimum(starts + xp.arange(longest)[None, :], lasts))
    picks = []
    for dim, m in enumerate(index_mats):
        shape = [1] * (2 * d)
        shape[dim], shape[d + dim] = m.shape
        picks.append(m.reshape(shape))
    gathered = x[(slice(None), slice(None)) + tuple(picks)]  # (N, C, *out, *window)
    n, c = x.shape[:2]
    flat = gathered.reshape((n, c) + tuple(g.out) + (-1,))
    best = flat.argmax(axis=-1)
    out = xp.take_along_axis(flat, best[..., None], axis=-1)[..., 0]
    lengths = [m.shape[1] for m in index_mats]
    taps = xp.unravel_index(best, lengths)
    index = 0
    for dim, (m, tap) in enumerate(zip(index_mats, taps)):
        shape = [1] * d
        shape[dim] = -1
        pos = xp.arange(g.out[dim]).reshape(shape)
        index = index * g.sizes[dim] + m[pos, tap]
    return out, index


def max_pool_grad(xp, x_shape, index, dout):
    n, c = x_shape[:2]
    volume = product(x_shape[2:])
    base = (xp.arange(n * c) * volume).reshape((n, c) + (1,) * (dout.ndim - 2))
    flat = xp.zeros(n * c * volume, dtype=dout.dtype)
    index_add(xp, flat, (base + index).reshape(-1), dout.reshape(-1))
    return flat.reshape(x_shape)


def _pool_infer_shape(rank, with_index=False):
    def infer(ctx):
        attrs = ctx.attrs()
        d = rank - 2
        x_shape = ctx.input_shape("X")
        ctx.check(len(x_shape) == rank, "input 'X'", f"a {rank}-D tensor", list(x_shape))
        if not with_index:
            ctx.check(attrs.get("pooling_type") in ("max", "avg"), "attribute 'pooling_type'",
                      "'max' or 'avg'", attrs.get("pooling_type"))
        ksize = attrs.get("ksize")
        ctx.check(ksize is not None and len(ksize) == d, "attribute 'ksize'", f"{d} values",
                  ksize)
        strides = attrs.get("strides", [1] * d)
        ctx.check(len(strides) == d and all(s > 0 for s in strides), "attribute 'strides'",
                  f"{d} positive values", strides)
        last = is_channel_last(attrs) and not with_index
        g = PoolGeometry(ctx.op_type, attrs, spatial_dims(x_shape, last), with_index)
        for size, o in zip(g.sizes, g.out):
            if size >= 0:
                ctx.check(o > 0, f"output size of 'X' {list(x_shape)} with ksize "
                          f"{list(g.ksizes)}", "a positive size", o)
        shape = _layout(x_shape[0], channels_of(x_shape, last), g.out, last)
        ctx.set_output("Out", shape, ctx.input_dtype("X"))
        if with_index and ctx.has_output("Mask"):
            from ..tensor.dtypes import VarType
            ctx.set_output("Mask", shape, VarType.INT32)
    return infer


def _pool_kernel(ctx, x):
    xp, attrs, last = ctx.xp, ctx.attrs, is_channel_last(ctx.attrs)
    xc = to_channel_first(x, last)
    g = PoolGeometry(ctx.op.type, attrs, xc.shape[2:])
    if attrs["pooling_type"] == "max":
        out, _ = max_pool(xp, xc, g)
    else:
        out = avg_pool(xp, xc, g, attrs)
    return from_channel_first(xp, out, last).astype(x.dtype, copy=False)


def _pool_grad_kernel(ctx, x, out, dout):
    xp, attrs, last = ctx.xp, ctx.attrs, is_channel_last(ctx.attrs)
    xc, dc = to_channel_first(x, last), to_channel_first(dout, last)
    g = PoolGeometry(ctx.op.type, attrs, xc.shape[2:])
    if attrs["pooling_type"] == "max":
        _, index = max_pool(xp, xc, g)
        dx = max_pool_grad(xp, xc.shape, index, dc)
    else:
        dx = avg_pool_grad(xp, dc, g, attrs)
    return from_channel_first(xp, dx, last).astype(x.dtype, copy=False)


def _pool3d_attrs():
    return {
        "pooling_type": ("string", None, _one_of("max", "avg")),
        "ksize": ("ints", None),
        "global_pooling": ("bool", False),
        "strides": ("ints", [1, 1, 1]),
        "paddings": ("ints", [0, 0, 0]),
        "exclusive": ("bool", True),
        "adaptive": ("bool", False),
        "ceil_mode": ("bool", False),
        "data_format": ("string", "NCDHW"),
        "padding_algorithm": ("string", "EXPLICIT", _one_of(*_ALGORITHMS)),
        "use_cudnn": ("bool", False),
        "use_mkldnn": ("bool", None),
    }


def_op("pool3d", inputs=["X"], outputs=["Out"], attrs=_pool3d_attrs(),
       infer_shape=_pool_infer_shape(5),
       grad=grad_maker("pool3d_grad", inputs=["X"], outputs=["Out"], out_grads=["Out"],
                       in_grads=["X"]),
       kernel=_pool_kernel,
       doc="""pool3d: max or average over kd x kh x kw windows of X [N, C, D, H, W]
(or NDHWC).

Window i along a dim covers [i*s - pad_before, i*s - pad_before + k) clipped to the
input; OD = (D - kd + front + back) // sd + 1 (ceil_mode: + sd - 1 before the division).
avg divides by the clipped window's volume (exclusive, or adaptive) or by the product of
the extents up to size + pad_before (exclusive=False). adaptive: OD = ksize, bin i =
[floor(i*D/OD), ceil((i+1)*D/OD)) for max and avg. global_pooling: one window.""")
def_op("pool3d_grad", inputs=["X", "Out", "Out@GRAD"], outputs=["X@GRAD"],
       attrs=_pool3d_attrs(), infer_shape=grads_like(**{"X@GRAD": "X"}),
       kernel=_pool_grad_kernel,
       doc="Gradient of pool3d: avg spreads dOut evenly over each window; max routes it "
           "to the window's first maximum (row-major).")


def _with_index_kernel(ctx, x):
    g = PoolGeometry(ctx.op.type, ctx.attrs, x.shape[2:], with_index=True)
    out, index = max_pool(ctx.xp, x, g)
    return out.astype(x.dtype, copy=False), index.astype(ctx.xp.int32)


def _with_index_grad_kernel(ctx, x, mask, dout):
    dx = max_pool_grad(ctx.xp, x.shape, mask.astype(ctx.xp.int64), dout)
    return dx.astype(x.dtype, copy=False)


def _with_index_attrs(d):
    return {"ksize": ("ints", None), "global_pooling": ("bool", False),
            "strides": ("ints", [1] * d), "paddings": ("ints", [0] * d),
            "adaptive": ("bool", False)}


for _type, _rank in (("max_pool2d_with_index", 4), ("max_pool3d_with_index", 5)):
    def_op(_type, inputs=["X"], outputs=["Out", "Mask"], attrs=_with_index_attrs(_rank - 2),
           infer_shape=_pool_infer_shape(_rank, with_index=True),
           grad=grad_maker(_type + "_grad", inputs=["X"], outputs=["Mask"],
                           out_grads=["Out"], in_grads=["X"]),
           kernel=_with_index_kernel,
           doc=f"""{_type}: max pooling of X [N, C, *S] (channel-first) that also
gives, in Mask (int32), the flat index within the spatial volume of each window's first
maximum (row-major). Windows [i*s - pad, i*s - pad + k) clipped to the input, output
(S - k + 2*pad) // s + 1; adaptive: output = ksize, bin i = [floor(i*S/O),
ceil((i+1)*S/O)); global_pooling: one window.""")
    def_op(_type + "_grad", inputs=["X", "Mask", "Out@GRAD"], outputs=["X@GRAD"],
           attrs=_with_index_attrs(_rank - 2), infer_shape=grads_like(**{"X@GRAD": "X"}),
           kernel=_with_index_grad_kernel,
           doc=f"Gradient of {_type}: dOut added at each window's Mask position.")
