"""Region-of-interest pooling: roi_pool, roi_align, psroi_pool and prroi_pool with their
grad ops.

ROIs [R, 4] hold (x1, y1, x2, y2) in input-image coordinates (scaled by spatial_scale onto
the feature map); which image of X each ROI belongs to comes from the ROIs' LoD, or from
the RoisLod input (offsets, Fluid 1.8) or RoisNum (counts per image, Paddle 2.x).

roi_align, psroi_pool and prroi_pool are linear in X and separable: for one ROI, output bin
(i, j) of channel c is sum_{h, w} A[i, h] * X[c, h, w] * B[j, w], so each ROI is two small
matrices (``A`` over rows, ``B`` over columns) and the gradient is their transpose.
roi_pool takes a max: each ROI's bins are gathered with index matrices (short bins repeat
their last position) and reduced; Argmax keeps the flat position for the gradient.
"""
import math

import numpy as np

from ..errors import InvalidArgument, expected
from ..tensor.tensor import LoDTensor, index_add
from ..tensor.dtypes import VarType
from ..tensor.transfer import host_list, to_host
from ..framework.registry import def_op, grads_like


def _array(t):
    return None if t is None else (t.array if isinstance(t, LoDTensor) else t)


def roi_batch_ids(op, rois, rois_lod, rois_num, batch):
    """The image index of each ROI (a host list: the counts or offsets are read from the
device once, as the ROIs' batch assignment decides which image each one pools)."""
    count = _array(rois).shape[0]
    if rois_num is not None and _array(rois_num) is not None:
        counts = host_list(_array(rois_num))
        offsets = [0]
        for c in counts:
            offsets.append(offsets[-1] + c)
    elif rois_lod is not None and _array(rois_lod) is not None:
        offsets = host_list(_array(rois_lod))
    elif getattr(rois, "_lod", None):
        offsets = list(rois._lod[-1])
    else:
        raise InvalidArgument(expected(op, "input 'ROIs'", "a LoDTensor with LoD (or RoisLod"
                                       " / RoisNum)", "a tensor without LoD"))
    if offsets[-1] != count or len(offsets) - 1 > batch:
        raise InvalidArgument(expected(op, "ROIs per image", f"offsets ending at {count} for "
                                       f"at most {batch} images", offsets))
    ids = []
    for image, (start, end) in enumerate(zip(offsets[:-1], offsets[1:])):
        ids.extend([image] * (end - start))
    return ids


def _by_image(ids):
    """{image: [roi indices]}."""
    groups = {}
    for r, image in enumerate(ids):
        groups.setdefault(image, []).append(r)
    return groups


def _roi_infer_shape(channels_from=None):
    def infer(ctx):
        attrs = ctx.attrs()
        x_shape, r_shape = ctx.input_shape("X"), ctx.input_shape("ROIs")
        ctx.check(len(x_shape) == 4, "input 'X'", "a 4-D tensor [N, C, H, W]", list(x_shape))
        ctx.check(len(r_shape) == 2 and r_shape[1] in (-1, 4), "input 'ROIs'",
                  "a [R, 4] tensor of (x1, y1, x2, y2)", list(r_shape))
        ph, pw = attrs.get("pooled_height", 1), attrs.get("pooled_width", 1)
        ctx.check(ph > 0 and pw > 0, "attributes 'pooled_height'/'pooled_width'",
                  "positive sizes", [ph, pw])
        ctx.check(attrs.get("spatial_scale", 1.0) > 0, "attribute 'spatial_scale'",
                  "a positive value", attrs.get("spatial_scale"))
        c = x_shape[1]
        if channels_from is not None:
            c = attrs.get(channels_from, 1)
            ctx.check(x_shape[1] < 0 or x_shape[1] == c * ph * pw, "input channels of 'X'",
                      f"output_channels * pooled_height * pooled_width = {c * ph * pw}",
                      x_shape[1])
        shape = (r_shape[0], c, ph, pw)
        ctx.set_output("Out", shape, ctx.input_dtype("X"))
        if ctx.has_output("Argmax"):
            ctx.set_output("Argmax", shape, VarType.INT64)
    return infer


# --- separable (linear) pools ----------------------------------------------------------------
def _align_matrix(start, bin_size, grid, pooled, size):
    """roi_align's (pooled, size) weights along one dim: the bilinear weights of the
    ``grid`` sample points of each bin, summed (samples outside [-1, size] weigh 0)."""
    m = np.zeros((pooled, size))
    for i in range(pooled):
        pts = start + i * bin_size + (np.arange(grid) + 0.5) * bin_size / grid
        valid = (pts >= -1.0) & (pts <= size)
        pts = np.maximum(pts[valid], 0.0)
        low = pts.astype(np.int64)
        top = low >= size - 1
        low = np.where(top, size - 1, low)
        high = np.where(top, size - 1, low + 1)
        frac = np.where(top, 0.0, pts - low)
        np.add.at(m[i], low, 1.0 - frac)
        np.add.at(m[i], high, frac)
    return m


def _roi_align_mats(roi, attrs, h, w):
    scale = attrs.get("spatial_scale", 1.0)
    ph, pw = attrs.get("pooled_height", 1), attrs.get("pooled_width", 1)
    offset = 0.5 if attrs.get("aligned", False) else 0.0
    x1, y1, x2, y2 = (float(v) * scale - offset for v in roi)
    rw, rh = x2 - x1, y2 - y1
    if not attrs.get("aligned", False):
        rw, rh = max(rw, 1.0), max(rh, 1.0)
    ratio = attrs.get("sampling_ratio", -1)
    gh = ratio if ratio > 0 else int(math.ceil(rh / ph))
    gw = ratio if ratio > 0 else int(math.ceil(rw / pw))
    count = max(gh * gw, 1)
    a = _align_matrix(y1, rh / ph, gh, ph, h) / count
    b = _align_matrix(x1, rw / pw, gw, pw, w)
    return a, b


def _psroi_mats(roi, attrs, h, w):
    scale = attrs.get("spatial_scale", 1.0)
    ph, pw = attrs.get("pooled_height", 1), attrs.get("pooled_width", 1)
    x1, y1 = round_half_away(float(roi[0])) * scale, round_half_away(float(roi[1])) * scale
    x2 = (round_half_away(float(roi[2])) + 1.0) * scale
    y2 = (round_half_away(float(roi[3])) + 1.0) * scale
    rh, rw = max(y2 - y1, 0.1), max(x2 - x1, 0.1)

    def mean_matrix(start, bin_size, pooled, size):
        m = np.zeros((pooled, size))
        for i in range(pooled):
            lo = min(max(int(math.floor(bin_size * i + start)), 0), size)
            hi = min(max(int(math.ceil(bin_size * (i + 1) + start)), 0), size)
            if hi > lo:
                m[i, lo:hi] = 1.0 / (hi - lo)
        return m
    return mean_matrix(y1, rh / ph, ph, h), mean_matrix(x1, rw / pw, pw, w)


def _hat_integral(t):
    """The integral of max(0, 1 - |s|) for s from -inf to t."""
    t = np.clip(t, -1.0, 1.0)
    return np.where(t < 0, (t + 1) ** 2 / 2, 1 - (1 - t) ** 2 / 2)


def _prroi_mats(roi, attrs, h, w):
    scale = attrs.get("spatial_scale", 1.0)
    ph, pw = attrs.get("pooled_height", 1), attrs.get("pooled_width", 1)
    x1, y1, x2, y2 = (float(v) * scale for v in roi)
    bh, bw = max(y2 - y1, 0.0) / ph, max(x2 - x1, 0.0) / pw

    def integral_matrix(start, bin_size, pooled, size):
        lo = start + bin_size * np.arange(pooled)[:, None]
        grid = np.arange(size)[None, :]
        return _hat_integral(lo + bin_size - grid) - _hat_integral(lo - grid)
    a = integral_matrix(y1, bh, ph, h)
    area = bh * bw
    a = a / area if area > 0 else a * 0.0
    return a, integral_matrix(x1, bw, pw, w)


def round_half_away(v):
    """C's round: halves away from zero."""
    return math.floor(v + 0.5) if v >= 0 else -math.floor(-v + 0.5)


def _linear_pool(mats, op):
    """Forward and backward kernels of a separable ROI pool; ``mats(roi, attrs, h, w)`` ->
    (A, B); with ``op == 'psroi_pool'`` output channel c, bin (i, j) reads input channel
    (c * PH + i) * PW + j."""
    position_sensitive = op == "psroi_pool"

    def contract(xp, x_image, a, b):
        if position_sensitive:
            ph, pw = a.shape[1], b.shape[1]
            cells = x_image.reshape(-1, ph, pw, *x_image.shape[1:])
            return xp.einsum("rih,cijhw,rjw->rcij", a, cells, b)
        return xp.einsum("rciw,rjw->rcij", xp.einsum("rih,chw->rciw", a, x_image), b)

    def matrices(xp, rois, attrs, h, w, dtype):
        """Every ROI's (A, B), built on the host from its coordinates and moved to the
        device once."""
        pairs = [mats(roi, attrs, h, w) for roi in rois]
        ph, pw = attrs.get("pooled_height", 1), attrs.get("pooled_width", 1)
        a = np.stack([p[0] for p in pairs]) if pairs else np.zeros((0, ph, h))
        b = np.stack([p[1] for p in pairs]) if pairs else np.zeros((0, pw, w))
        return xp.asarray(a, dtype=dtype), xp.asarray(b, dtype=dtype)

    def forward(ctx, x, rois, rois_lod, rois_num):
        xp, attrs = ctx.xp, ctx.attrs
        xa, host_rois = _array(x), to_host(_array(rois))
        ids = roi_batch_ids(op, rois, rois_lod, rois_num, xa.shape[0])
        ph, pw = attrs.get("pooled_height", 1), attrs.get("pooled_width", 1)
        c = attrs["output_channels"] if position_sensitive else xa.shape[1]
        out = xp.zeros((len(ids), c, ph, pw), dtype=xa.dtype)
        a_all, b_all = matrices(xp, host_rois, attrs, xa.shape[2], xa.shape[3], xa.dtype)
        for image, idx in _by_image(ids).items():
            # an image's ROIs are contiguous (offsets or counts): slices, no index arrays
            rows = slice(idx[0], idx[-1] + 1)
            out[rows] = contract(xp, xa[image], a_all[rows], b_all[rows])
        return LoDTensor(out)

    def backward(ctx, x, rois, rois_lod, rois_num, dout):
        xp, attrs = ctx.xp, ctx.attrs
        xa, host_rois, da = _array(x), to_host(_array(rois)), _array(dout)
        ids = roi_batch_ids(op, rois, rois_lod, rois_num, xa.shape[0])
        dx = xp.zeros(xa.shape, dtype=xa.dtype)
        a_all, b_all = matrices(xp, host_rois, attrs, xa.shape[2], xa.shape[3], xa.dtype)
        for image, idx in _by_image(ids).items():
            rows = slice(idx[0], idx[-1] + 1)
            a, b, d = a_all[rows], b_all[rows], da[rows]
            if position_sensitive:
                cells = xp.einsum("rih,rcij,rjw->cijhw", a, d, b)
                dx[image] += cells.reshape(xa.shape[1:])
            else:
                dx[image] += xp.einsum("rih,rcij,rjw->chw", a, d, b)
        return LoDTensor(dx)
    return forward, backward


def _linear_grad_maker(grad_type):
    def make(g):
        ins = {"X": g.input("X"), "ROIs": g.input("ROIs"), "Out@GRAD": g.output_grad("Out")}
        for slot in ("RoisLod", "RoisNum", "BatchRoINums"):
            if g.has_input(slot):
                ins[slot] = g.input(slot)
        return [g.op(grad_type, ins, {"X@GRAD": g.input_grad("X")})]
    make.grad_type = grad_type
    return make


_POOLED = {"pooled_height": ("int", 1), "pooled_width": ("int", 1),
           "spatial_scale": ("float", 1.0)}

_LINEAR_POOLS = {
    "roi_align": (_roi_align_mats, ["RoisLod?", "RoisNum?"],
                  {"sampling_ratio": ("int", -1), "aligned": ("bool", False)}, None,
                  """roi_align: each ROI (scaled by spatial_scale, minus 0.5 when aligned;
at least 1 x 1 unless aligned) cut into pooled_height x pooled_width bins; a bin is the mean
of grid_h x grid_w bilinear samples at its sub-cell centres (grid = sampling_ratio, or
ceil(roi size / pooled size)); samples beyond [-1, size] count as 0."""),
    "psroi_pool": (_psroi_mats, [], {"output_channels": ("int", 1)}, "output_channels",
                   """psroi_pool: position-sensitive ROI average pooling. X has
output_channels * pooled_height * pooled_width channels; bin (i, j) of output channel c
averages input channel (c * PH + i) * PW + j over the bin's pixels [floor(start), ceil(end))
(ROI corners rounded, the end one pixel on, times spatial_scale; empty bins 0)."""),
    "prroi_pool": (_prroi_mats, ["BatchRoINums?"], {}, None,
                   """prroi_pool: precise ROI pooling. Each bin is the integral of the
bilinear interpolation of X (zero outside the map) over the bin's continuous area,
divided by that area (0 for an empty ROI); ROIs are not rounded."""),
}

# each op's kernels with its own slots: (RoisLod, RoisNum), none, or (BatchRoINums)
_SLOT_READERS = {
    "roi_align": lambda rest: (rest[0], rest[1]),
    "psroi_pool": lambda rest: (None, None),
    "prroi_pool": lambda rest: (None, rest[0]),
}

_HOST_READS = ("ROIs: each ROI's bin weight matrices are built on the host from its corners; "
               "RoisLod / RoisNum / BatchRoINums: which image each ROI pools")

for _op, (_mats, _extra_inputs, _extra_attrs, _channels, _doc) in _LINEAR_POOLS.items():
    _forward, _backward = _linear_pool(_mats, _op)

    def _kernel(ctx, x, rois, *rest, _f=_forward, _read=_SLOT_READERS[_op]):
        return _f(ctx, x, rois, *_read(rest))

    def _grad_kernel(ctx, x, rois, *rest, _b=_backward, _read=_SLOT_READERS[_op]):
        return _b(ctx, x, rois, *_read(rest[:-1]), rest[-1])

    _attrs = dict(_POOLED, **_extra_attrs)
    def_op(_op, inputs=["X", "ROIs"] + _extra_inputs, outputs=["Out"], attrs=_attrs,
           infer_shape=_roi_infer_shape(_channels), grad=_linear_grad_maker(_op + "_grad"),
           kernel=_kernel, lod_aware=True, doc=_doc, host_reads=_HOST_READS)
    def_op(_op + "_grad", inputs=["X", "ROIs"] + _extra_inputs + ["Out@GRAD"],
           outputs=["X@GRAD"], attrs=_attrs, infer_shape=grads_like(**{"X@GRAD": "X"}),
           kernel=_grad_kernel, lod_aware=True, host_reads=_HOST_READS,
           doc=f"Gradient of {_op} with respect to X: each ROI's dOut spread back through "
               f"its bin weights (the transposed row and column matrices).")


# --- roi_pool (max) -----------------------------------------------------------------------------
def _roi_pool_bins(start, end, pooled, size):
    """(index matrix (pooled, longest), valid mask) of the pixels of each bin along one dim;
    Paddle: bin i covers [floor(i * len / pooled), ceil((i + 1) * len / pooled)) from the
    ROI's start, clipped to [0, size)."""
    length = max(end - start + 1, 1)
    bin_size = length / pooled
    lo = np.array([min(max(int(math.floor(i * bin_size)) + start, 0), size)
                   for i in range(pooled)])
    hi = np.array([min(max(int(math.ceil((i + 1) * bin_size)) + start, 0), size)
                   for i in range(pooled)])
    longest = max(int((hi - lo).max()), 1)
    index = np.minimum(lo[:, None] + np.arange(longest)[None, :],
                       np.maximum(hi - 1, lo)[:, None])
    return np.minimum(index, size - 1), hi > lo


def _roi_pool_forward(ctx, x, rois, rois_lod, rois_num):
    xp, attrs = ctx.xp, ctx.attrs
    # each ROI's bins are integer pixel ranges: its corners are read on the host once
    xa, host_rois = _array(x), to_host(_array(rois))
    ids = roi_batch_ids("roi_pool", rois, rois_lod, rois_num, xa.shape[0])
    n, c, h, w = xa.shape
    ph, pw = attrs.get("pooled_height", 1), attrs.get("pooled_width", 1)
    scale = attrs.get("spatial_scale", 1.0)
    out = xp.zeros((len(ids), c, ph, pw), dtype=xa.dtype)
    argmax = xp.full((len(ids), c, ph, pw), -1, dtype=xp.int64)
    for r, image in enumerate(ids):
        x1, y1, x2, y2 = (round_half_away(float(v) * scale) for v in host_rois[r])
        rows, row_ok = _roi_pool_bins(y1, y2, ph, h)
        cols, col_ok = _roi_pool_bins(x1, x2, pw, w)
        rows, cols = xp.asarray(rows), xp.asarray(cols)
        # (C, ph, Lh, pw, Lw): every bin's pixels, short bins repeating their last one
        window = xa[image][:, rows[:, :, None, None], cols[None, None, :, :]]
        flat = window.transpose(0, 1, 3, 2, 4).reshape(c, ph, pw, -1)
        best = flat.argmax(axis=-1)
        lh, lw = best // cols.shape[1], best % cols.shape[1]
        pos = rows[xp.arange(ph)[:, None], lh] * w + cols[xp.arange(pw)[None, :], lw]
        ok = xp.asarray(row_ok[:, None] & col_ok[None, :])
        out[r] = xp.where(ok, xp.take_along_axis(flat, best[..., None], -1)[..., 0], 0)
        argmax[r] = xp.where(ok, pos, -1)
    return LoDTensor(out), LoDTensor(argmax)


def _roi_pool_backward(ctx, x, rois, rois_lod, rois_num, argmax, dout):
    xp = ctx.xp
    xa, index, da = _array(x), _array(argmax), _array(dout)
    ids = roi_batch_ids("roi_pool", rois, rois_lod, rois_num, xa.shape[0])
    n, c, h, w = xa.shape
    flat = xp.zeros(n * c * h * w, dtype=xa.dtype)
    base = ((xp.asarray(ids, dtype=xp.int64)[:, None] * c + xp.arange(c)[None, :])
            * (h * w))[:, :, None, None]
    valid = index >= 0
    index_add(xp, flat, (base + index)[valid], da[valid])
    return LoDTensor(flat.reshape(xa.shape))


def _roi_pool_grad_maker(g):
    ins = {"X": g.input("X"), "ROIs": g.input("ROIs"), "Argmax": g.output("Argmax"),
           "Out@GRAD": g.output_grad("Out")}
    for slot in ("RoisLod", "RoisNum"):
        if g.has_input(slot):
            ins[slot] = g.input(slot)
    return [g.op("roi_pool_grad", ins, {"X@GRAD": g.input_grad("X")})]


_roi_pool_grad_maker.grad_type = "roi_pool_grad"

def_op("roi_pool", inputs=["X", "ROIs", "RoisLod?", "RoisNum?"], outputs=["Out", "Argmax!"],
       attrs=dict(_POOLED), infer_shape=_roi_infer_shape(), grad=_roi_pool_grad_maker,
       kernel=_roi_pool_forward, lod_aware=True,
       host_reads="ROIs: per-ROI bin bounds are integer pixel ranges computed on the host; "
                  "RoisLod / RoisNum: which image each ROI pools",
       doc="""roi_pool: max pooling of each ROI (corners times spatial_scale, rounded; at
least 1 x 1) over pooled_height x pooled_width bins; bin i along a dim covers
[floor(i * len / P), ceil((i + 1) * len / P)) from the ROI's start, clipped to the map.
Empty bins give 0 (Argmax -1). Argmax (int64) is the flat h * W + w of each maximum.""")
def_op("roi_pool_grad", inputs=["X", "ROIs", "RoisLod?", "RoisNum?", "Argmax", "Out@GRAD"],
       outputs=["X@GRAD"], attrs=dict(_POOLED), infer_shape=grads_like(**{"X@GRAD": "X"}),
       kernel=_roi_pool_backward, lod_aware=True,
       host_reads="RoisLod / RoisNum: which image each ROI's gradient goes to",
       doc="Gradient of roi_pool: dOut added at each bin's Argmax position of its image.")


# --- deformable_psroi_pooling ------------------------------------------------------------------
def _dpsroi_samples(xp, attrs, rois, ids, trans, x_shape):
    """Every sample of every output bin: (flat index of its 4 corners, their weights,
    d weight / dx and / dy, valid mask [R, OC, PH, PW, S, S], the bins' trans positions and
    the ROI sizes) as Paddle's deformable PSROI pooling places them."""
    n, c, h, w = x_shape
    oc, ph, pw = attrs["output_dim"], attrs["pooled_height"], attrs["pooled_width"]
    gh, gw = attrs.get("group_size", [1, 1])
    part_h, part_w = attrs.get("part_size", [ph, pw]) or [ph, pw]
    spp, scale = attrs.get("sample_per_part", 1), attrs.get("spatial_scale", 1.0)
    r = len(ids)
    rounded = np.vectorize(round_half_away)(np.asarray(rois, dtype=np.float64).reshape(r, 4))
    start_w, start_h = rounded[:, 0] * scale - 0.5, rounded[:, 1] * scale - 0.5
    roi_w = np.maximum((rounded[:, 2] + 1) * scale - 0.5 - start_w, 0.1)
    roi_h = np.maximum((rounded[:, 3] + 1) * scale - 0.5 - start_h, 0.1)
    bin_h, bin_w = roi_h / ph, roi_w / pw
    p_h = np.floor(np.arange(ph) / ph * part_h).astype(np.int64)
    p_w = np.floor(np.arange(pw) / pw * part_w).astype(np.int64)
    no_trans = attrs.get("no_trans", False) or trans is None
    classes = 1 if no_trans else trans.shape[1] // 2
    class_of = np.arange(oc) // (oc // classes)
    std = attrs.get("trans_std", 0.1)
    if no_trans:
        tx = ty = xp.zeros((r, oc, ph, pw), dtype=xp.float64)
    else:
        d_h, d_w, d_class = xp.asarray(p_h), xp.asarray(p_w), xp.asarray(class_of)
        t = trans.astype(xp.float64)[:, :, d_h][:, :, :, d_w]  # [R, 2*classes, PH, PW]
        tx = t[:, 2 * d_class] * std
        ty = t[:, 2 * d_class + 1] * std
    rw, rh = xp.asarray(roi_w)[:, None, None, None], xp.asarray(roi_h)[:, None, None, None]
    wstart = (xp.asarray(np.arange(pw)[None, :] * bin_w[:, None] + start_w[:, None])
              [:, None, None, :] + tx * rw)
    hstart = (xp.asarray(np.arange(ph)[None, :] * bin_h[:, None] + start_h[:, None])
              [:, None, :, None] + ty * rh)
    steps = xp.arange(spp, dtype=xp.float64)
    ws = wstart[..., None, None] + steps[None, :] * xp.asarray(bin_w / spp).reshape(-1, 1, 1, 1, 1, 1)
    hs = hstart[..., None, None] + steps[:, None] * xp.asarray(bin_h / spp).reshape(-1, 1, 1, 1, 1, 1)
    valid = (ws >= -0.5) & (ws <= w - 0.5) & (hs >= -0.5) & (hs <= h - 0.5)
    # a sample clamped onto the map's edge does not move with Trans
    free_x, free_y = (ws >= 0) & (ws <= w - 1), (hs >= 0) & (hs <= h - 1)
    ws, hs = xp.clip(ws, 0, w - 1), xp.clip(hs, 0, h - 1)
    g_h = np.clip(np.floor(np.arange(ph) * gh / ph), 0, gh - 1).astype(np.int64)
    g_w = np.clip(np.floor(np.arange(pw) * gw / pw), 0, gw - 1).astype(np.int64)
    channel = (np.arange(oc)[:, None, None] * gh + g_h[None, :, None]) * gw + g_w[None, None, :]
    plane = (xp.asarray(ids, dtype=xp.int64)[:, None, None, None] * c
             + xp.asarray(channel)[None]) * (h * w)
    x0, y0 = xp.floor(ws), xp.floor(hs)
    fx, fy = ws - x0, hs - y0
    x0, y0 = x0.astype(xp.int64), y0.astype(xp.int64)
    corners = []
    for dy, wy, gy in ((0, 1 - fy, -1.0), (1, fy, 1.0)):
        for dx, wx, gx in ((0, 1 - fx, -1.0), (1, fx, 1.0)):
            index = plane[..., None, None] + xp.minimum(y0 + dy, h - 1) * w + \
                xp.minimum(x0 + dx, w - 1)
            corners.append((index, wy * wx, gx * wy * free_x, wx * gy * free_y))
    return corners, valid, (p_h, p_w, class_of), (rw, rh, std)


def _dpsroi_forward(ctx, x, rois, trans):
    xp, attrs = ctx.xp, ctx.attrs
    xa, ta = _array(x), _array(trans)
    ids = roi_batch_ids("deformable_psroi_pooling", rois, None, None, xa.shape[0])
    host_rois = to_host(_array(rois))  # sample positions come from rounded corners
    corners, valid, _, _ = _dpsroi_samples(xp, attrs, host_rois, ids, ta, xa.shape)
    flat = xa.reshape(-1).astype(xp.float64)
    total = 0
    for index, weight, _, _ in corners:
        total = total + flat[index] * weight
    count = valid.sum(axis=(-2, -1))
    summed = (total * valid).sum(axis=(-2, -1))
    out = xp.where(count > 0, summed / xp.maximum(count, 1), 0)
    return LoDTensor(out.astype(xa.dtype)), LoDTensor(count.astype(xp.int32))


def _dpsroi_backward(ctx, x, rois, trans, top_count, dout):
    xp, attrs = ctx.xp, ctx.attrs
    xa, ta, d = _array(x), _array(trans), _array(dout).astype(xp.float64)
    ids = roi_batch_ids("deformable_psroi_pooling", rois, None, None, xa.shape[0])
    corners, valid, (p_h, p_w, class_of), (rw, rh, std) = _dpsroi_samples(
        xp, attrs, to_host(_array(rois)), ids, ta, xa.shape)
    count = valid.sum(axis=(-2, -1))
    share = (d / xp.maximum(count, 1))[..., None, None] * valid  # dL/d(each sample)
    dx = dtrans = None
    if ctx.wants("Input@GRAD"):
        flat = xp.zeros(xa.size, dtype=xp.float64)
        for index, weight, _, _ in corners:
            index_add(xp, flat, index.reshape(-1), (share * weight).reshape(-1))
        dx = flat.reshape(xa.shape).astype(xa.dtype)
    if ta is not None and ctx.wants("Trans@GRAD") and not attrs.get("no_trans", False):
        values = xa.reshape(-1).astype(xp.float64)
        d_w = d_h = 0
        for index, _, slope_x, slope_y in corners:
            d_w = d_w + values[index] * slope_x
            d_h = d_h + values[index] * slope_y
        gx = (share * d_w).sum(axis=(-2, -1)) * rw * std  # [R, OC, PH, PW]
        gy = (share * d_h).sum(axis=(-2, -1)) * rh * std
        dtrans = xp.zeros(ta.shape, dtype=xp.float64)
        r, oc, ph, pw = gx.shape
        rr = xp.arange(r)[:, None, None, None]
        cls = xp.asarray(class_of)[None, :, None, None]
        hh = xp.asarray(p_h)[None, None, :, None]
        ww = xp.asarray(p_w)[None, None, None, :]
        shape = (r, oc, ph, pw)
        for k, g in ((0, gx), (1, gy)):
            target = ((rr * ta.shape[1] + 2 * cls + k) * ta.shape[2] + hh) * ta.shape[3] + ww
            flat_t = dtrans.reshape(-1)
            index_add(xp, flat_t, xp.broadcast_to(target, shape).reshape(-1), g.reshape(-1))
        dtrans = dtrans.astype(ta.dtype)
    return (LoDTensor(dx) if dx is not None else None,
            LoDTensor(dtrans) if dtrans is not None else None)


def _dpsroi_infer(ctx):
    attrs = ctx.attrs()
    x, r_shape = ctx.input_shape("Input"), ctx.input_shape("ROIs")
    ctx.check(len(x) == 4, "input 'Input'", "a 4-D tensor [N, C, H, W]", list(x))
    oc, ph, pw = attrs.get("output_dim", 1), attrs["pooled_height"], attrs["pooled_width"]
    gh, gw = attrs.get("group_size", [1, 1])
    ctx.check(x[1] < 0 or x[1] == oc * gh * gw, "input channels of 'Input'",
              f"output_dim * group_size[0] * group_size[1] = {oc * gh * gw}", x[1])
    shape = (r_shape[0], oc, ph, pw)
    ctx.set_output("Output", shape, ctx.input_dtype("Input"))
    if ctx.has_output("TopCount"):
        ctx.set_output("TopCount", shape, VarType.INT32)


def _dpsroi_grad_maker(g):
    ins = {"Input": g.input("Input"), "ROIs": g.input("ROIs"), "Trans": g.input("Trans"),
           "TopCount": g.output("TopCount"), "Output@GRAD": g.output_grad("Output")}
    return [g.op("deformable_psroi_pooling_grad", ins,
                 {"Input@GRAD": g.input_grad("Input"), "Trans@GRAD": g.input_grad("Trans")})]


_dpsroi_grad_maker.grad_type = "deformable_psroi_pooling_grad"
_DPSROI_ATTRS = {"no_trans": ("bool", False), "spatial_scale": ("float", 1.0),
                 "output_dim": ("int", 1), "group_size": ("ints", [1, 1]),
                 "pooled_height": ("int", 1), "pooled_width": ("int", 1),
                 "part_size": ("ints", []), "sample_per_part": ("int", 1),
                 "trans_std": ("float", 0.1)}

def_op("deformable_psroi_pooling", inputs=["Input", "ROIs", "Trans?"],
       outputs=["Output", "TopCount!"], attrs=_DPSROI_ATTRS, infer_shape=_dpsroi_infer,
       grad=_dpsroi_grad_maker, kernel=_dpsroi_forward, lod_aware=True,
       host_reads="ROIs: the bins' start and size come from rounded corners on the host",
       doc="""deformable_psroi_pooling: each ROI (corners rounded, times spatial_scale,
minus 0.5) in pooled_height x pooled_width bins, each bin moved by Trans[roi, 2*class
(+1), part] * trans_std * roi size (no move with no_trans) and averaged over
sample_per_part^2 bilinear samples inside [-0.5, size - 0.5] (clamped to the map); output
channel c of bin (i, j) reads input channel (c * gh + i*gh//PH) * gw + j*gw//PW
(group_size [gh, gw]). TopCount (int32) is the number of samples averaged.""")
def_op("deformable_psroi_pooling_grad",
       inputs=["Input", "ROIs", "Trans?", "TopCount", "Output@GRAD"],
       outputs=["Input@GRAD?", "Trans@GRAD?"], attrs=_DPSROI_ATTRS,
       infer_shape=grads_like(**{"Input@GRAD": "Input", "Trans@GRAD": "Trans"}),
       kernel=_dpsroi_backward, lod_aware=True,
       host_reads="ROIs: the bins' start and size come from rounded corners on the host",
       doc="Gradient of deformable_psroi_pooling: each sample's share of dOutput onto its "
           "bilinear corners; Trans@GRAD from the weights' slopes times roi size * trans_std.")
