"""Unpooling and pyramid pooling ops: ``unpool`` (max-unpooling: values put back where a
max pool found them) and ``spp`` (spatial pyramid pooling: max or average pools over 1,
2x2, 4x4 ... bins, flattened and concatenated)."""
import math

import numpy as np

from ..errors import InvalidArgument, expected
from ..framework.registry import def_op, grad_maker, grads_like


# --- unpool --------------------------------------------------------------------------------------
_UNPOOL_ATTRS = {"ksize": ("ints", []), "strides": ("ints", [1, 1]),
                 "paddings": ("ints", [0, 0]), "unpooling_type": ("string", "max"),
                 "output_size": ("ints", []), "data_format": ("string", "NCHW")}


def _unpool_hw(attrs, h, w):
    if attrs["output_size"]:
        return list(attrs["output_size"][-2:])
    k, s, p = attrs["ksize"], attrs["strides"], attrs["paddings"]
    return [(d - 1) * s[i] - 2 * p[i] + k[i] if d >= 0 else -1 for i, d in enumerate((h, w))]


def _unpool_infer(ctx):
    x, idx = list(ctx.input_shape("X")), list(ctx.input_shape("Indices"))
    ctx.check(len(x) == 4, "input 'X'", "rank 4 ([N, C, H, W])", x)
    ctx.check(idx == x, "input 'Indices'", f"X's shape {x}", idx)
    ctx.check(ctx.attr("unpooling_type") == "max", "attribute 'unpooling_type'", "'max'",
              ctx.attr("unpooling_type"))
    ctx.check(len(ctx.attr("ksize")) == 2 or ctx.attr("output_size"), "attribute 'ksize'",
              "2 values", ctx.attr("ksize"))
    ctx.set_output("Out", x[:2] + _unpool_hw(ctx.attrs(), x[2], x[3]), ctx.input_dtype("X"))


def _flat_index(xp, indices, hw, where):
    index = indices.reshape(indices.shape[0], indices.shape[1], -1).astype("int64")
    if xp is np and index.size and (int(index.min()) < 0 or int(index.max()) >= hw):
        raise InvalidArgument(expected(where, "input 'Indices'", f"positions in [0, {hw})",
                                       int(index[(index < 0) | (index >= hw)][0])))
    return index


def _unpool(ctx, x, indices):
    xp = ctx.xp
    h, w = _unpool_hw(ctx.attrs, x.shape[2], x.shape[3])
    index = _flat_index(xp, indices, h * w, "unpool")
    out = xp.zeros((x.shape[0], x.shape[1], h * w), dtype=x.dtype)
    n, c = xp.arange(x.shape[0])[:, None, None], xp.arange(x.shape[1])[None, :, None]
    out[n, c, index] = x.reshape(index.shape)
    return out.reshape(x.shape[0], x.shape[1], h, w)


def _unpool_grad(ctx, x, indices, dout):
    xp = ctx.xp
    index = _flat_index(xp, indices, dout.shape[2] * dout.shape[3], "unpool_grad")
    flat = dout.reshape(dout.shape[0], dout.shape[1], -1)
    return xp.take_along_axis(flat, index, axis=2).reshape(x.shape)


def_op("unpool", inputs=["X", "Indices"], outputs=["Out"], attrs=_UNPOOL_ATTRS,
       infer_shape=_unpool_infer,
       grad=grad_maker("unpool_grad", inputs=["X", "Indices"], out_grads=["Out"],
                       in_grads=["X"]),
       kernel=_unpool,
       doc="Out[n, c] = zeros of H_out x W_out, H_out = (H - 1) stride - 2 pad + ksize (or "
           "output_size), with Out[n, c].flat[Indices[n, c, h, w]] = X[n, c, h, w].")
def_op("unpool_grad", inputs=["X", "Indices", "Out@GRAD"], outputs=["X@GRAD"],
       attrs=_UNPOOL_ATTRS, infer_shape=grads_like(**{"X@GRAD": "X"}), kernel=_unpool_grad,
       doc="dX[n, c, h, w] = dOut[n, c].flat[Indices[n, c, h, w]].")


# --- spp -----------------------------------------------------------------------------------------
_SPP_ATTRS = {"pyramid_height": ("int", 1, lambda v: None if v >= 1 else ">= 1"),
              "pooling_type": ("string", "max",
                               lambda v: None if v in ("max", "avg") else "'max' or 'avg'")}


def _spp_infer(ctx):
    x = list(ctx.input_shape("X"))
    ctx.check(len(x) == 4, "input 'X'", "rank 4 ([N, C, H, W])", x)
    bins = sum(4 ** i for i in range(ctx.attr("pyramid_height")))
    ctx.set_output("Out", [x[0], x[1] * bins if x[1] >= 0 else -1], ctx.input_dtype("X"))


def _windows(size, bins):
    """[(start, end)] of each bin along a dim of ``size``: kernel ceil(size / bins), stride
    the kernel, padding (kernel * bins - size + 1) // 2, clipped to the data."""
    kernel = math.ceil(size / bins)
    pad = (kernel * bins - size + 1) // 2
    return [(max(b * kernel - pad, 0), min(b * kernel - pad + kernel, size))
            for b in range(bins)]


def _levels(x, height):
    """Per level, per bin (i, j): the bin's window slices."""
    for level in range(height):
        bins = 2 ** level
        rows, cols = _windows(x.shape[2], bins), _windows(x.shape[3], bins)
        yield [(slice(*rows[i]), slice(*cols[j])) for i in range(bins) for j in range(bins)]


def _spp(ctx, x):
    xp, attrs = ctx.xp, ctx.attrs
    is_max = attrs["pooling_type"] == "max"
    parts = []
    for windows in _levels(x, attrs["pyramid_height"]):
        pooled = [x[:, :, r, c].max(axis=(2, 3)) if is_max else x[:, :, r, c].mean(axis=(2, 3))
                  for r, c in windows]
        # [N, C, bins * bins] flattened channel-major, as pool2d's output is
        parts.append(xp.stack(pooled, axis=2).reshape(x.shape[0], -1))
    return xp.concatenate(parts, axis=1).astype(x.dtype, copy=False)


def _spp_grad(ctx, x, dout):
    xp, attrs = ctx.xp, ctx.attrs
    is_max = attrs["pooling_type"] == "max"
    dx = xp.zeros_like(x)
    n, c = x.shape[:2]
    at = 0
    for windows in _levels(x, attrs["pyramid_height"]):
        level = dout[:, at:at + c * len(windows)].reshape(n, c, len(windows))
        at += c * len(windows)
        for k, (r, col) in enumerate(windows):
            window = x[:, :, r, col]
            g = level[:, :, k][:, :, None, None]
            if is_max:  # the first maximum of each window takes the gradient
                flat = window.reshape(n, c, -1)
                first = flat.argmax(axis=2)[:, :, None]
                hit = (xp.arange(flat.shape[2])[None, None, :] == first).reshape(window.shape)
                dx[:, :, r, col] += hit * g
            else:
                dx[:, :, r, col] += g / (window.shape[2] * window.shape[3])
    return dx


def_op("spp", inputs=["X"], outputs=["Out"], attrs=_SPP_ATTRS, infer_shape=_spp_infer,
       grad=grad_maker("spp_grad", inputs=["X"], out_grads=["Out"], in_grads=["X"]),
       kernel=_spp,
       doc="For level l < pyramid_height: bins b = 2^l per side, kernel k = ceil(H / b) "
           "(and W), stride k, padding (k b - H + 1) / 2; each bin's max (or average over "
           "its part inside X) gives [N, C * b * b]; Out concatenates the levels along dim 1.")
def_op("spp_grad", inputs=["X", "Out@GRAD"], outputs=["X@GRAD"], attrs=_SPP_ATTRS,
       infer_shape=grads_like(**{"X@GRAD": "X"}), kernel=_spp_grad,
       doc="dX: each bin's dOut to its first maximum (max), or spread evenly over the bin "
           "(avg).")

