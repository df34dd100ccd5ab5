"""Sampling and sequence-of-patches ops: affine_grid, grid_sampler, im2sequence, row_conv,
spectral_norm, similarity_focus and random_crop (with grad ops where Paddle has them)."""
import numpy as np

from ..tensor.tensor import LoDTensor, index_add
from ..tensor.dtypes import VarType
from .conv_nd import ConvGeometry, col2im, pad_spatial, windows
from .creation import host_ints
from ..tensor.transfer import host_scalar, to_host
from ..framework.registry import def_op, grad_maker, grads_like, no_gradient


# --- affine_grid ---------------------------------------------------------------------------------
def _linspace(xp, size, align_corners, dtype):
    points = xp.linspace(-1.0, 1.0, size, dtype=dtype) if size > 1 else xp.zeros(1, dtype)
    return points if align_corners else points * (size - 1) / size


def _base_grid(xp, h, w, align_corners, dtype):
    """[H, W, 3]: (x, y, 1) of each output pixel in [-1, 1] coordinates."""
    xs = _linspace(xp, w, align_corners, dtype)
    ys = _linspace(xp, h, align_corners, dtype)
    grid = xp.ones((h, w, 3), dtype=dtype)
    grid[:, :, 0] = xs[None, :]
    grid[:, :, 1] = ys[:, None]
    return grid


def _affine_grid_infer(ctx):
    theta = ctx.input_shape("Theta")
    ctx.check(len(theta) == 3 and theta[1:] in ((2, 3), (-1, 3), (2, -1), (-1, -1)),
              "input 'Theta'", "a [N, 2, 3] tensor", list(theta))
    shape = ctx.attrs().get("output_shape") or []
    if ctx.has_input("OutputShape") or not shape:
        h = w = -1
    else:
        ctx.check(len(shape) == 4, "attribute 'output_shape'", "[N, C, H, W]", shape)
        h, w = shape[2], shape[3]
    ctx.set_output("Output", (theta[0], h, w, 2), ctx.input_dtype("Theta"))


def _grid_size(attrs, output_shape):
    shape = host_ints(output_shape) if output_shape is not None else attrs["output_shape"]
    return int(shape[2]), int(shape[3])


def _affine_grid(ctx, theta, output_shape):
    xp = ctx.xp
    h, w = _grid_size(ctx.attrs, output_shape)
    base = _base_grid(xp, h, w, ctx.attrs.get("align_corners", True), theta.dtype)
    return xp.einsum("hwk,nik->nhwi", base, theta)


def _affine_grid_grad(ctx, theta, output_shape, dout):
    xp = ctx.xp
    h, w = dout.shape[1:3]
    base = _base_grid(xp, h, w, ctx.attrs.get("align_corners", True), dout.dtype)
    return xp.einsum("nhwi,hwk->nik", dout, base).astype(theta.dtype, copy=False)


_AG_ATTRS = {"output_shape": ("ints", []), "align_corners": ("bool", True),
             "use_cudnn": ("bool", None)}
def_op("affine_grid", inputs=["Theta", "OutputShape?"], outputs=["Output"], attrs=_AG_ATTRS,
       infer_shape=_affine_grid_infer,
       grad=grad_maker("affine_grid_grad", inputs=["Theta", "OutputShape"],
                       out_grads=["Output"], in_grads=["Theta"]),
       kernel=_affine_grid, host_reads="OutputShape: the grid's shape",
       doc="""affine_grid: Output[n, h, w] = Theta[n] @ (x_w, y_h, 1), the sampling grid
[N, H, W, 2] of an affine transform; x_w = linspace(-1, 1, W) (times (W-1)/W without
align_corners), y_h likewise; H, W from output_shape [N, C, H, W] or OutputShape.""")
def_op("affine_grid_grad", inputs=["Theta", "OutputShape?", "Output@GRAD"],
       outputs=["Theta@GRAD"], attrs=_AG_ATTRS,
       infer_shape=grads_like(**{"Theta@GRAD": "Theta"}), kernel=_affine_grid_grad,
       doc="Theta@GRAD[n] = sum over pixels of dOutput[n, h, w] (x) (x_w, y_h, 1).")


# --- grid_sampler ----------------------------------------------------------------------------------
def _unnormalize(g, size, align_corners):
    return (g + 1) * (size - 1) / 2 if align_corners else ((g + 1) * size - 1) / 2


def _unnormalize_slope(size, align_corners):
    return (size - 1) / 2 if align_corners else size / 2


def _grid_sampler_infer(ctx):
    x, grid = ctx.input_shape("X"), ctx.input_shape("Grid")
    ctx.check(len(x) == 4, "input 'X'", "a 4-D tensor [N, C, H, W]", list(x))
    ctx.check(len(grid) == 4 and grid[3] in (-1, 2), "input 'Grid'",
              "a [N, H_out, W_out, 2] tensor", list(grid))
    attrs = ctx.attrs()
    ctx.check(attrs.get("padding_mode", "zeros") in ("zeros", "border"),
              "attribute 'padding_mode'", "'zeros' or 'border' (reflection is not supported)",
              attrs.get("padding_mode"))
    ctx.check(attrs.get("mode", "bilinear") in ("bilinear", "nearest"), "attribute 'mode'",
              "'bilinear' or 'nearest'", attrs.get("mode"))
    ctx.set_output("Output", (x[0], x[1], grid[1], grid[2]), ctx.input_dtype("X"))


def _sample_points(xp, x, grid, attrs):
    """[(flat index into X's H*W, weight, d weight / d grid x, d weight / d grid y,
    in-bounds mask)] of the corners each output pixel reads."""
    n, c, h, w = x.shape
    align = attrs.get("align_corners", True)
    px = _unnormalize(grid[..., 0], w, align)
    py = _unnormalize(grid[..., 1], h, align)
    sx, sy = _unnormalize_slope(w, align), _unnormalize_slope(h, align)
    border = attrs.get("padding_mode", "zeros") == "border"
    if border:
        inside_x, inside_y = (px > 0) & (px < w - 1), (py > 0) & (py < h - 1)
        px, py = xp.clip(px, 0, w - 1), xp.clip(py, 0, h - 1)
        sx, sy = sx * inside_x, sy * inside_y
    if attrs.get("mode", "bilinear") == "nearest":
        ix, iy = xp.rint(px).astype(xp.int64), xp.rint(py).astype(xp.int64)
        ok = (ix >= 0) & (ix < w) & (iy >= 0) & (iy < h)
        zero = xp.zeros_like(px)
        return [(xp.clip(iy, 0, h - 1) * w + xp.clip(ix, 0, w - 1), ok * 1.0, zero, zero, ok)]
    x0, y0 = xp.floor(px), xp.floor(py)
    fx, fy = px - x0, py - y0
    x0, y0 = x0.astype(xp.int64), y0.astype(xp.int64)
    points = []
    for dy, wy, dwy in ((0, 1 - fy, -1.0), (1, fy, 1.0)):
        for dx, wx, dwx in ((0, 1 - fx, -1.0), (1, fx, 1.0)):
            ix, iy = x0 + dx, y0 + dy
            ok = (ix >= 0) & (ix < w) & (iy >= 0) & (iy < h)
            index = xp.clip(iy, 0, h - 1) * w + xp.clip(ix, 0, w - 1)
            points.append((index, wx * wy * ok, dwx * wy * sx * ok, wx * dwy * sy * ok, ok))
    return points


def _gather(xp, x, index):
    """x [N, C, H, W] read at index [N, Ho, Wo] (flat H*W) -> [N, C, Ho, Wo]."""
    n, c = x.shape[:2]
    flat = x.reshape(n, c, -1)
    picked = xp.take_along_axis(flat, index.reshape(n, 1, -1), axis=2)
    return picked.reshape((n, c) + index.shape[1:])


def _grid_sampler(ctx, x, grid):
    xp = ctx.xp
    out = xp.zeros((x.shape[0], x.shape[1]) + grid.shape[1:3], dtype=x.dtype)
    for index, weight, _, _, _ in _sample_points(xp, x, grid, ctx.attrs):
        out += _gather(xp, x, index) * weight[:, None]
    return out.astype(x.dtype, copy=False)


def _grid_sampler_grad(ctx, x, grid, dout):
    xp = ctx.xp
    n, c, h, w = x.shape
    dx = xp.zeros(n * c * h * w, dtype=x.dtype) if ctx.wants("X@GRAD") else None
    dgrid = xp.zeros(grid.shape, dtype=grid.dtype) if ctx.wants("Grid@GRAD") else None
    base = (xp.arange(n * c) * (h * w)).reshape(n, c, 1, 1)
    for index, weight, dwx, dwy, _ in _sample_points(xp, x, grid, ctx.attrs):
        if dx is not None:
            index_add(xp, dx, (base + index[:, None]).reshape(-1),
                       (dout * weight[:, None]).reshape(-1))
        if dgrid is not None:
            seen = (_gather(xp, x, index) * dout).sum(axis=1)
            dgrid[..., 0] += seen * dwx
            dgrid[..., 1] += seen * dwy
    return (dx.reshape(x.shape) if dx is not None else None), dgrid


_GS_ATTRS = {"align_corners": ("bool", True), "mode": ("string", "bilinear"),
             "padding_mode": ("string", "zeros"), "use_cudnn": ("bool", None)}
def_op("grid_sampler", inputs=["X", "Grid"], outputs=["Output"], attrs=_GS_ATTRS,
       infer_shape=_grid_sampler_infer,
       grad=grad_maker("grid_sampler_grad", inputs=["X", "Grid"], out_grads=["Output"],
                       in_grads=["X", "Grid"]),
       kernel=_grid_sampler,
       doc="""grid_sampler: Output[n, c, i, j] = X[n, c] sampled at Grid[n, i, j] = (gx, gy)
in [-1, 1]: px = (gx + 1) * (W - 1) / 2 with align_corners (else ((gx + 1) * W - 1) / 2),
likewise py; bilinear (or nearest) interpolation, corners outside the map reading 0
(padding_mode 'zeros') or the coordinates clipped to the map ('border').""")
def_op("grid_sampler_grad", inputs=["X", "Grid", "Output@GRAD"],
       outputs=["X@GRAD?", "Grid@GRAD?"], attrs=_GS_ATTRS,
       infer_shape=grads_like(**{"X@GRAD": "X", "Grid@GRAD": "Grid"}),
       kernel=_grid_sampler_grad,
       doc="Gradient of grid_sampler: dOutput spread onto the corners by their weights; "
           "Grid@GRAD from the weights' slopes times the corner values.")


# --- im2sequence ------------------------------------------------------------------------------------
def _im2seq_geometry(attrs, sizes):
    up, left, down, right = attrs.get("paddings", [0, 0, 0, 0])
    return ConvGeometry("im2sequence", {"strides": attrs.get("strides", [1, 1]),
                                        "paddings": [up, down, left, right]},
                        sizes, attrs.get("kernels", [1, 1]))


def _im2seq_infer(ctx):
    x = ctx.input_shape("X")
    ctx.check(len(x) == 4, "input 'X'", "a 4-D tensor [N, C, H, W]", list(x))
    attrs = ctx.attrs()
    ctx.check(len(attrs.get("paddings", [])) == 4, "attribute 'paddings'",
              "4 values [up, left, down, right]", attrs.get("paddings"))
    kh, kw = attrs.get("kernels", [1, 1])
    ctx.set_output("Out", (-1, x[1] * kh * kw if x[1] >= 0 else -1), ctx.input_dtype("X"),
                   lod_level=1)


def _im2sequence_real_sizes(xp, attrs, x, image_size):
    """Per-image patch grids: image i's real size Y[i] = (h, w), divided by out_stride
    (rounded up), gives its grid oh_i x ow_i; its rows are the first oh_i x ow_i patches
    of the (zero-padded) full image, in the same order as without Y."""
    kh, kw = attrs.get("kernels", [1, 1])
    sh, sw = attrs.get("strides", [1, 1])
    up, left, down, right = attrs.get("paddings", [0, 0, 0, 0])
    out_h, out_w = attrs.get("out_stride", [1, 1])
    channels, height, width = x.shape[1:]
    rows, lod = [], [0]
    for k, (real_h, real_w) in enumerate(to_host(image_size).reshape(-1, 2).tolist()):
        oh = (-(-int(real_h) // out_h) + up + down - kh) // sh + 1
        ow = (-(-int(real_w) // out_w) + left + right - kw) // sw + 1
        canvas = xp.zeros((channels, max(up + height, (oh - 1) * sh + kh),
                           max(left + width, (ow - 1) * sw + kw)), dtype=x.dtype)
        canvas[:, up:up + height, left:left + width] = x[k]
        r = (xp.arange(oh) * sh)[:, None] + xp.arange(kh)[None, :]
        c = (xp.arange(ow) * sw)[:, None] + xp.arange(kw)[None, :]
        patches = canvas[:, r[:, None, :, None], c[None, :, None, :]]  # [C, oh, ow, kh, kw]
        rows.append(patches.transpose(1, 2, 0, 3, 4).reshape(oh * ow, -1))
        lod.append(lod[-1] + oh * ow)
    return LoDTensor(xp.ascontiguousarray(xp.concatenate(rows)), [lod])


def _im2sequence(ctx, x, image_size):
    xp = ctx.xp
    if image_size is not None and x.shape[0] > 1:  # (one image: Y is not read)
        return _im2sequence_real_sizes(xp, ctx.attrs, x, image_size)
    g = _im2seq_geometry(ctx.attrs, x.shape[2:])
    cols = windows(xp, pad_spatial(xp, x, g.pads), g.ksizes, g.strides, g.dilations, g.out)
    n, blocks = x.shape[0], g.out[0] * g.out[1]
    rows = xp.ascontiguousarray(cols.reshape(n, -1, blocks).transpose(0, 2, 1))
    return LoDTensor(rows.reshape(n * blocks, -1), [[i * blocks for i in range(n + 1)]])


def _im2sequence_grad(ctx, x, dout):
    g = _im2seq_geometry(ctx.attrs, x.shape[2:])
    n, blocks = x.shape[0], g.out[0] * g.out[1]
    cols = dout.reshape(n, blocks, -1).transpose(0, 2, 1)
    cols = cols.reshape(x.shape[:2] + tuple(g.ksizes) + tuple(g.out))
    return col2im(ctx.xp, cols, x.shape[2:], g).astype(x.dtype, copy=False)


def _im2seq_kernel(ctx, x, image_size):
    return _im2sequence(ctx, x.array, None if image_size is None else image_size.array)


_IM2SEQ_ATTRS = {"kernels": ("ints", None), "strides": ("ints", [1, 1]),
                 "paddings": ("ints", [0, 0, 0, 0]), "out_stride": ("ints", [1, 1])}
def_op("im2sequence", inputs=["X", "Y?"], outputs=["Out"], attrs=_IM2SEQ_ATTRS,
       infer_shape=_im2seq_infer,
       grad=grad_maker("im2sequence_grad", inputs=["X"], out_grads=["Out"], in_grads=["X"]),
       kernel=_im2seq_kernel, lod_aware=True,
       host_reads="Y: the real sizes decide each image's number of rows",
       doc="""im2sequence: each image's kh x kw patches (stride, paddings [up, left, down,
right]) as rows of a LoDTensor, one sequence of oh * ow rows per image, each row the patch
in (channel, row, column) order. With Y (N > 1 images, Y[i] = real (h, w)): image i's grid
is computed from ceil(Y[i] / out_stride) and holds the first oh_i x ow_i patches.""")
def_op("im2sequence_grad", inputs=["X", "Out@GRAD"], outputs=["X@GRAD"], attrs=_IM2SEQ_ATTRS,
       infer_shape=grads_like(**{"X@GRAD": "X"}), kernel=_im2sequence_grad,
       doc="Gradient of im2sequence: every row entry added back to its pixel (col2im).")


# --- row_conv -----------------------------------------------------------------------------------------
def _sequence_ends(x):
    """For each row of a LoD (or [B, T, D] padded) input, the end of its sequence."""
    a = x.array
    if a.ndim == 3:
        return None
    offsets = x._lod[-1] if x._lod else [0, a.shape[0]]
    ends = np.empty(a.shape[0], dtype=np.int64)
    for start, end in zip(offsets[:-1], offsets[1:]):
        ends[start:end] = end
    return ends


def _row_conv_infer(ctx):
    x, f = ctx.input_shape("X"), ctx.input_shape("Filter")
    ctx.check(len(f) == 2 and (f[1] < 0 or x[-1] < 0 or f[1] == x[-1]), "input 'Filter'",
              f"[future_context + 1, {x[-1]}]", list(f))
    ctx.set_output("Out", x, ctx.input_dtype("X"))


def _shifted(xp, a, i, ends):
    """Rows t + i of ``a`` where t + i stays inside t's sequence, zero elsewhere."""
    if ends is None:  # padded [B, T, D]
        out = xp.zeros_like(a)
        if i < a.shape[1]:
            out[:, :a.shape[1] - i] = a[:, i:]
        return out
    t = np.arange(a.shape[0])
    ok = t + i < ends
    out = xp.zeros_like(a)
    out[xp.asarray(t[ok])] = a[xp.asarray(t[ok] + i)]
    return out


def _row_conv(ctx, x, filt):
    xp, ends = ctx.xp, _sequence_ends(x)
    a, f = x.array, filt.array
    out = xp.zeros_like(a)
    for i in range(f.shape[0]):
        out = out + _shifted(xp, a, i, ends) * f[i]
    return LoDTensor(out.astype(a.dtype, copy=False), x._lod)


def _row_conv_grad(ctx, x, filt, dout):
    xp, ends = ctx.xp, _sequence_ends(x)
    a, f, d = x.array, filt.array, dout.array
    dx = xp.zeros_like(a) if ctx.wants("X@GRAD") else None
    df = xp.zeros_like(f) if ctx.wants("Filter@GRAD") else None
    for i in range(f.shape[0]):
        shifted = _shifted(xp, a, i, ends)
        if df is not None:
            df[i] = (shifted * d).reshape(-1, a.shape[-1]).sum(axis=0)
        if dx is not None:  # row t + i of X received dOut[t] * F[i]
            dx = dx + _unshifted(xp, d * f[i], i, ends)
    return (LoDTensor(dx, x._lod) if dx is not None else None,
            LoDTensor(df) if df is not None else None)


def _unshifted(xp, a, i, ends):
    """The adjoint of :func:`_shifted`: row t of ``a`` moved to row t + i."""
    out = xp.zeros_like(a)
    if ends is None:
        if i < a.shape[1]:
            out[:, i:] = a[:, :a.shape[1] - i]
        return out
    t = np.arange(a.shape[0])
    ok = t + i < ends
    out[xp.asarray(t[ok] + i)] = a[xp.asarray(t[ok])]
    return out


def_op("row_conv", inputs=["X", "Filter"], outputs=["Out"], infer_shape=_row_conv_infer,
       share_lod=("X", ["Out"]),
       grad=grad_maker("row_conv_grad", inputs=["X", "Filter"], out_grads=["Out"],
                       in_grads=["X", "Filter"]),
       kernel=_row_conv, lod_aware=True,
       doc="""row_conv (lookahead convolution): Out[t] = sum_{i=0}^{k} X[t + i] * Filter[i]
(elementwise over the D features), rows t + i past the end of t's sequence left out;
X a LoDTensor [T, D] or padded [B, T, D], Filter [k + 1, D].""")
def_op("row_conv_grad", inputs=["X", "Filter", "Out@GRAD"], outputs=["X@GRAD?",
                                                                     "Filter@GRAD?"],
       infer_shape=grads_like(**{"X@GRAD": "X", "Filter@GRAD": "Filter"}),
       kernel=_row_conv_grad, lod_aware=True,
       doc="Gradient of row_conv: X@GRAD[t + i] += dOut[t] * Filter[i], Filter@GRAD[i] = "
           "sum_t dOut[t] * X[t + i] (inside each sequence).")


# --- spectral_norm --------------------------------------------------------------------------------
def _as_matrix(xp, weight, dim):
    moved = xp.moveaxis(weight, dim, 0)
    return moved.reshape(moved.shape[0], -1)


def _power_iteration(xp, mat, u, v, attrs):
    eps = attrs.get("eps", 1e-12)
    for _ in range(attrs.get("power_iters", 1)):
        v = mat.T @ u
        v = v / (xp.sqrt((v * v).sum()) + eps)
        u = mat @ v
        u = u / (xp.sqrt((u * u).sum()) + eps)
    return u, v, u @ mat @ v


def _spectral_norm_infer(ctx):
    w = ctx.input_shape("Weight")
    dim = ctx.attrs().get("dim", 0)
    ctx.check(2 <= len(w) <= 5 and 0 <= dim < len(w), "attribute 'dim'",
              f"a dim of Weight {list(w)} (rank 2 to 5)", dim)
    ctx.set_output("Out", w, ctx.input_dtype("Weight"))


def _spectral_norm(ctx, weight, u, v):
    xp = ctx.xp
    mat = _as_matrix(xp, weight, ctx.attrs.get("dim", 0))
    _, _, sigma = _power_iteration(xp, mat, u.reshape(-1), v.reshape(-1), ctx.attrs)
    return (weight / sigma).astype(weight.dtype, copy=False)


def _spectral_norm_grad(ctx, weight, u, v, dout):
    xp, dim = ctx.xp, ctx.attrs.get("dim", 0)
    mat = _as_matrix(xp, weight, dim)
    u, v, sigma = _power_iteration(xp, mat, u.reshape(-1), v.reshape(-1), ctx.attrs)
    dmat = _as_matrix(xp, dout, dim)
    grad = dmat / sigma - (dmat * mat).sum() / sigma ** 2 * xp.outer(u, v)
    moved = xp.moveaxis(weight, dim, 0).shape
    return xp.ascontiguousarray(xp.moveaxis(grad.reshape(moved), 0, dim)).astype(weight.dtype)


_SN_ATTRS = {"dim": ("int", 0), "power_iters": ("int", 1, lambda v: None if v >= 0
                                                   else "a count >= 0"),
             "eps": ("float", 1e-12)}
def_op("spectral_norm", inputs=["Weight", "U", "V"], outputs=["Out"], attrs=_SN_ATTRS,
       infer_shape=_spectral_norm_infer,
       grad=grad_maker("spectral_norm_grad", inputs=["Weight", "U", "V"], out_grads=["Out"],
                       in_grads=["Weight"]),
       kernel=_spectral_norm,
       doc="""spectral_norm: W viewed as a matrix [h, w] (dim ``dim`` first); power_iters
steps of v = W^T u / (|W^T u| + eps), u = W v / (|W v| + eps) from U and V (not written
back); sigma = u^T W v; Out = Weight / sigma.""")
def_op("spectral_norm_grad", inputs=["Weight", "U", "V", "Out@GRAD"],
       outputs=["Weight@GRAD"], attrs=_SN_ATTRS,
       infer_shape=grads_like(**{"Weight@GRAD": "Weight"}), kernel=_spectral_norm_grad,
       doc="Gradient of spectral_norm with u, v held fixed: Weight@GRAD = dOut / sigma - "
           "sum(dOut * W) / sigma^2 * u v^T.")


# --- similarity_focus -----------------------------------------------------------------------------
def _similarity_focus_infer(ctx):
    x = ctx.input_shape("X")
    attrs = ctx.attrs()
    ctx.check(len(x) == 4, "input 'X'", "a 4-D tensor", list(x))
    ctx.check(attrs.get("axis") in (1, 2, 3), "attribute 'axis'", "1, 2 or 3",
              attrs.get("axis"))
    ctx.check(bool(attrs.get("indexes")), "attribute 'indexes'", "a non-empty list",
              attrs.get("indexes"))
    ctx.set_output("Out", x, ctx.input_dtype("X"))


def _similarity_focus(ctx, x):
    """For each index, the slice of X at that index along ``axis`` (a [N, P, Q] table):
    repeatedly take its largest value whose row and column are both still free, min(P, Q)
    times; every taken (row, column) is set to 1 across the whole ``axis``."""
    xp, attrs = ctx.xp, ctx.attrs
    axis = attrs["axis"]
    moved = xp.moveaxis(x, axis, 1)
    n, _, p, q = moved.shape
    mask = xp.zeros((n, p, q), dtype=bool)
    for index in attrs["indexes"]:
        table = moved[:, index].astype(xp.float64)
        free_rows = xp.ones((n, p), dtype=bool)
        free_cols = xp.ones((n, q), dtype=bool)
        for _ in range(min(p, q)):
            allowed = free_rows[:, :, None] & free_cols[:, None, :]
            best = xp.where(allowed, table, -xp.inf).reshape(n, -1).argmax(axis=1)
            rows, cols = best // q, best % q
            mask[xp.arange(n), rows, cols] = True
            free_rows[xp.arange(n), rows] = False
            free_cols[xp.arange(n), cols] = False
    out = xp.broadcast_to(mask[:, None], moved.shape).astype(x.dtype)
    return xp.ascontiguousarray(xp.moveaxis(out, 1, axis))


def_op("similarity_focus", inputs=["X"], outputs=["Out"],
       attrs={"axis": ("int", 1), "indexes": ("ints", [])},
       infer_shape=_similarity_focus_infer, grad=no_gradient, kernel=_similarity_focus,
       doc=_similarity_focus.__doc__.replace("For each index", "similarity_focus: for each "
                                             "index") + " Out is that 0/1 mask.")


# --- random_crop --------------------------------------------------------------------------------------
def _random_crop_infer(ctx):
    x = ctx.input_shape("X")
    shape = ctx.attrs().get("shape") or []
    ctx.check(0 < len(shape) <= len(x), "attribute 'shape'",
              f"1 to {len(x)} sizes (the cropped trailing dims)", shape)
    lead = len(x) - len(shape)
    for d, s in zip(x[lead:], shape):
        ctx.check(d < 0 or 0 < s <= d, "attribute 'shape'", f"sizes within X {list(x)}",
                  shape)
    ctx.set_output("Out", tuple(x[:lead]) + tuple(shape), ctx.input_dtype("X"))
    if ctx.has_output("SeedOut"):
        ctx.set_output("SeedOut", (1,), VarType.INT64)


def _random_crop(ctx, x, seed):
    xp = ctx.xp
    a = x.array
    held = seed.array if seed is not None else None
    # the offsets come from the host's generator, seeded by Seed: one copy
    start = int(host_scalar(held)) if held is not None and held.size else \
        int(ctx.attrs.get("startup_seed", 0))
    rng = np.random.RandomState(start % (2 ** 32))
    shape = list(ctx.attrs["shape"])
    lead = a.ndim - len(shape)
    instances = int(np.prod(a.shape[:lead])) if lead else 1
    flat = a.reshape((instances,) + a.shape[lead:])
    offsets = [rng.randint(0, d - s + 1, size=instances) for d, s in zip(a.shape[lead:], shape)]
    index = [xp.arange(instances).reshape((-1,) + (1,) * len(shape))]
    for k, (off, s) in enumerate(zip(offsets, shape)):
        index.append((xp.asarray(off)[:, None] + xp.arange(s)[None, :]).reshape(
            [instances] + [s if j == k else 1 for j in range(len(shape))]))
    out = flat[tuple(index)].reshape(a.shape[:lead] + tuple(shape))
    next_seed = xp.asarray([rng.randint(0, 2 ** 31 - 1)], dtype=xp.int64)
    return LoDTensor(out), LoDTensor(next_seed)


def_op("random_crop", inputs=["X", "Seed?"], outputs=["Out", "SeedOut?"],
       attrs={"shape": ("ints", []), "startup_seed": ("int", 0)},
       infer_shape=_random_crop_infer, grad=no_gradient, kernel=_random_crop,
       lod_aware=True, traits=("stateful",),
       host_reads="Seed: it seeds the host's generator that draws the offsets",
       doc="""random_crop: every instance (the leading dims of X) cropped to ``shape`` (the
trailing dims) at its own uniformly drawn offset. The draw starts from Seed (or
startup_seed when Seed holds no value) and SeedOut carries the next seed, so a Seed
variable written back by SeedOut gives a new crop each run.""")

