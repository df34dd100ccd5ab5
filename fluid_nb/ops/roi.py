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
from ..exec.tensor import LoDTensor
from ..framework.dtypes import VarType
from .creation import host_ints
from .lookup import _index_add
from .registry import def_op, grads_like


def _array(t):
    return None if t is None else (t.array if isinstance(t, LoDTensor) else t)


def roi_batch_ids(op, rois, rois_lod, rois_num, batch):
    """The image index of each ROI (a host list)."""
    count = _array(rois).shape[0]
    if rois_num is not None and _array(rois_num) is not None:
        counts = host_ints(_array(rois_num))
        offsets = [0]
        for c in counts:
            offsets.append(offsets[-1] + c)
    elif rois_lod is not None and _array(rois_lod) is not None:
        offsets = host_ints(_array(rois_lod))
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

    def matrices(xp, rois, idx, attrs, h, w, dtype):
        pairs = [mats(rois[r], attrs, h, w) for r in idx]
        return (xp.asarray(np.stack([p[0] for p in pairs]), dtype=dtype),
                xp.asarray(np.stack([p[1] for p in pairs]), dtype=dtype))

    def forward(ctx, x, rois, rois_lod, rois_num):
        xp, attrs = ctx.xp, ctx.attrs
        xa, host_rois = _array(x), np.asarray(_array(rois).tolist())
        ids = roi_batch_ids(op, rois, rois_lod, rois_num, xa.shape[0])
        ph, pw = attrs.get("pooled_height", 1), attrs.get("pooled_width", 1)
        c = attrs["output_channels"] if position_sensitive else xa.shape[1]
        out = xp.zeros((len(ids), c, ph, pw), dtype=xa.dtype)
        for image, idx in _by_image(ids).items():
            a, b = matrices(xp, host_rois, idx, attrs, xa.shape[2], xa.shape[3], xa.dtype)
            out[xp.asarray(idx)] = contract(xp, xa[image], a, b)
        return LoDTensor(out)

    def backward(ctx, x, rois, rois_lod, rois_num, dout):
        xp, attrs = ctx.xp, ctx.attrs
        xa, host_rois, da = _array(x), np.asarray(_array(rois).tolist()), _array(dout)
        ids = roi_batch_ids(op, rois, rois_lod, rois_num, xa.shape[0])
        dx = xp.zeros(xa.shape, dtype=xa.dtype)
        for image, idx in _by_image(ids).items():
            a, b = matrices(xp, host_rois, idx, attrs, xa.shape[2], xa.shape[3], xa.dtype)
            d = da[xp.asarray(idx)]
            if position_sensitive:
                ph, pw = a.shape[1], b.shape[1]
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

for _op, (_mats, _extra_inputs, _extra_attrs, _channels, _doc) in _LINEAR_POOLS.items():
    _forward, _backward = _linear_pool(_mats, _op)

    def _kernel(ctx, x, rois, *rest, _f=_forward, _read=_SLOT_READERS[_op]):
        return _f(ctx, x, rois, *_read(rest))

    def _grad_kernel(ctx, x, rois, *rest, _b=_backward, _read=_SLOT_READERS[_op]):
        return _b(ctx, x, rois, *_read(rest[:-1]), rest[-1])

    _attrs = dict(_POOLED, **_extra_attrs)
    def_op(_op, inputs=["X", "ROIs"] + _extra_inputs, outputs=["Out"], attrs=_attrs,
           infer_shape=_roi_infer_shape(_channels), grad=_linear_grad_maker(_op + "_grad"),
           kernel=_kernel, lod_aware=True, doc=_doc)
    def_op(_op + "_grad", inputs=["X", "ROIs"] + _extra_inputs + ["Out@GRAD"],
           outputs=["X@GRAD"], attrs=_attrs, infer_shape=grads_like(**{"X@GRAD": "X"}),
           kernel=_grad_kernel, lod_aware=True,
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
    xa, host_rois = _array(x), np.asarray(_array(rois).tolist())
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
        # (C, ph, Lh, pw, Lw): every bin's pixels, short bins repeating their last one
        window = xa[image][:, rows[:, :, None, None], cols[None, None, :, :]]
        flat = window.transpose(0, 1, 3, 2, 4).reshape(c, ph, pw, -1)
        best = flat.argmax(axis=-1)
        lh, lw = np.unravel_index(np.asarray(best.tolist()), (rows.shape[1], cols.shape[1]))
        pos = rows[np.arange(ph)[:, None], lh] * w + cols[np.arange(pw)[None, :], lw]
        ok = xp.asarray(row_ok[:, None] & col_ok[None, :])
        out[r] = xp.where(ok, xp.take_along_axis(flat, best[..., None], -1)[..., 0], 0)
        argmax[r] = xp.where(ok, xp.asarray(pos), -1)
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
    _index_add(xp, flat, (base + index)[valid], da[valid])
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
       doc="""roi_pool: max pooling of each ROI (corners times spatial_scale, rounded; at
least 1 x 1) over pooled_height x pooled_width bins; bin i along a dim covers
[floor(i * len / P), ceil((i + 1) * len / P)) from the ROI's start, clipped to the map.
Empty bins give 0 (Argmax -1). Argmax (int64) is the flat h * W + w of each maximum.""")
def_op("roi_pool_grad", inputs=["X", "ROIs", "RoisLod?", "RoisNum?", "Argmax", "Out@GRAD"],
       outputs=["X@GRAD"], attrs=dict(_POOLED), infer_shape=grads_like(**{"X@GRAD": "X"}),
       kernel=_roi_pool_backward, lod_aware=True,
       doc="Gradient of roi_pool: dOut added at each bin's Argmax position of its image.")
