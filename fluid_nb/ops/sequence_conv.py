"""``sequence_conv``: a 1-D convolution along the rows of each sequence (context projection
followed by a matmul with Filter), with zero or trainable padding at sequence edges."""
import numpy as np

from ..tensor.tensor import LoDTensor
from ..framework.infer import dims_match
from ..framework.registry import def_op, grads_like
from .sequence import lod_of, scatter_rows

_CONV_ATTRS = {
    "paddingTrainable": ("bool", False),
    "contextLength": ("int", None, lambda v: None if v > 0 else "> 0"),
    "contextStart": ("int", 0),
    "contextStride": ("int", 1, lambda v: None if v == 1 else "1 (the only stride Paddle "
                                                              "supports)"),
}


def _pads(attrs):
    start, length = attrs["contextStart"], attrs["contextLength"]
    return max(0, -start), max(0, start + length - 1)


def _conv_infer(ctx):
    x, w = ctx.input_shape("X"), ctx.input_shape("Filter")
    ctx.check("contextLength" in ctx.attrs(), "attribute 'contextLength'", "an int > 0",
              "none")
    length = ctx.attr("contextLength")
    ctx.check(len(x) == 2, "input 'X'", "rank 2 ([rows, width])", list(x))
    ctx.check(len(w) == 2, "input 'Filter'", "rank 2", list(w))
    ctx.check(dims_match(w[0], length * x[1]) if x[1] >= 0 else True, "input 'Filter' dim 0",
              f"contextLength * X width = {length} * {x[1]}", w[0])
    if ctx.attr("paddingTrainable"):
        ctx.check(not (ctx.attr("contextStart") == 0 and length == 1), "attribute "
                  "'paddingTrainable'", "false when contextStart is 0 and contextLength 1",
                  True)
        ctx.check(ctx.has_input("PaddingData"), "input 'PaddingData'",
                  "a variable when paddingTrainable", "none")
        up, down = _pads(ctx.attrs())
        pad = ctx.input_shape("PaddingData")
        ctx.check(len(pad) == 2 and dims_match(pad[0], up + down) and dims_match(pad[1], x[1]),
                  "input 'PaddingData'", f"shape [{up + down}, {x[1]}]", list(pad))
    ctx.set_output("Out", (x[0], w[1]), ctx.input_dtype("X"))


def _context_plan(op, x, attrs):
    """Host index matrices [rows, contextLength]: the X row feeding each context slot (-1 when
    the slot falls outside its sequence) and the PaddingData row standing in for it."""
    offsets = np.asarray(lod_of(op, x, levels=1)[0], dtype="int64")
    start, length = attrs["contextStart"], attrs["contextLength"]
    up, _ = _pads(attrs)
    rows = x.array.shape[0]
    src = np.full((rows, length), -1, dtype="int64")
    pad = np.full((rows, length), -1, dtype="int64")
    # one row per position of every sequence at once (a loop over rows costs seconds on a
    # batch of long titles)
    lengths = np.diff(offsets)
    begin = np.repeat(offsets[:-1], lengths)[:, None]
    size = np.repeat(lengths, lengths)[:, None]
    t = np.arange(offsets[0], offsets[-1])[:, None]
    pos = t - begin + start + np.arange(length)  # positions within the sequence
    inside = (pos >= 0) & (pos < size)
    src[offsets[0]:offsets[-1]] = np.where(inside, begin + pos, -1)
    # rows above the sequence use padding rows [0, up), rows below [up, up + down)
    pad[offsets[0]:offsets[-1]] = np.where(pos < 0, pos + up,
                                           np.where(inside, -1, up + pos - size))
    return src, pad


def _context_matrix(xp, x, padding, src, pad):
    rows, length = src.shape
    width = x.shape[1]
    col = xp.zeros((rows * length, width), dtype=x.dtype)
    flat_src, flat_pad = src.reshape(-1), pad.reshape(-1)
    hit = np.nonzero(flat_src >= 0)[0]
    if hit.size:
        col[xp.asarray(hit)] = xp.take(x, xp.asarray(flat_src[hit]), axis=0)
    if padding is not None:
        hit = np.nonzero(flat_pad >= 0)[0]
        if hit.size:
            col[xp.asarray(hit)] = xp.take(padding, xp.asarray(flat_pad[hit]), axis=0)
    return col.reshape(rows, length * width)


def _trainable_padding(attrs, padding):
    return padding.array if attrs["paddingTrainable"] and padding is not None else None


def _sequence_conv(ctx, x, filter, padding):
    src, pad = _context_plan("sequence_conv", x, ctx.attrs)
    col = _context_matrix(ctx.xp, x.array, _trainable_padding(ctx.attrs, padding), src, pad)
    return (col @ filter.array).astype(x.array.dtype, copy=False)


def _sequence_conv_grad(ctx, x, filter, padding, dout):
    xp = ctx.xp
    src, pad = _context_plan("sequence_conv_grad", x, ctx.attrs)
    p = _trainable_padding(ctx.attrs, padding)
    d = dout.array
    rows, length = src.shape
    width = x.array.shape[1]
    dx = dw = dp = None
    if ctx.wants("Filter@GRAD"):
        col = _context_matrix(xp, x.array, p, src, pad)
        dw = LoDTensor(col.T @ d)
    dcol = (d @ filter.array.T).reshape(rows * length, width)
    if ctx.wants("X@GRAD"):
        flat = src.reshape(-1)
        hit = np.nonzero(flat >= 0)[0]
        dx = LoDTensor(scatter_rows(xp, x.array.shape, d.dtype, flat[hit],
                                    dcol[xp.asarray(hit)] if hit.size else dcol[:0]), x.lod())
    if p is not None and ctx.wants("PaddingData@GRAD"):
        flat = pad.reshape(-1)
        hit = np.nonzero(flat >= 0)[0]
        dp = LoDTensor(scatter_rows(xp, p.shape, d.dtype, flat[hit],
                                    dcol[xp.asarray(hit)] if hit.size else dcol[:0]))
    return dx, dw, dp


def _conv_grad_maker(g):
    inputs = {"X": g.input("X"), "Filter": g.input("Filter"),
              "Out@GRAD": g.output_grad("Out")}
    outputs = {"X@GRAD": g.input_grad("X"), "Filter@GRAD": g.input_grad("Filter")}
    if g.attrs.get("paddingTrainable") and g.has_input("PaddingData"):
        inputs["PaddingData"] = g.input("PaddingData")
        outputs["PaddingData@GRAD"] = g.input_grad("PaddingData")
    return [g.op("sequence_conv_grad", inputs, outputs)]


_conv_grad_maker.grad_type = "sequence_conv_grad"

def_op("sequence_conv",
       inputs=["X", "Filter", "PaddingData?"], outputs=["Out"],
       attrs=_CONV_ATTRS,
       infer_shape=_conv_infer, share_lod=("X", ["Out"]), grad=_conv_grad_maker,
       kernel=_sequence_conv, lod_aware=True,
       doc="Out[t] = concat(X[t + contextStart + j] for j < contextLength) @ Filter, within "
           "each sequence (one LoD level); context rows outside the sequence are zeros, or "
           "PaddingData rows when paddingTrainable (rows [0, up) above the sequence, "
           "[up, up + down) below, up = max(0, -contextStart), down = max(0, contextStart + "
           "contextLength - 1)). Filter: [contextLength * width, out_width].")

def_op("sequence_conv_grad",
       inputs=["X", "Filter", "PaddingData?", "Out@GRAD"],
       outputs=["X@GRAD?", "Filter@GRAD?", "PaddingData@GRAD?"],
       attrs=_CONV_ATTRS,
       infer_shape=grads_like(**{"X@GRAD": "X", "Filter@GRAD": "Filter",
                                 "PaddingData@GRAD": "PaddingData"}),
       kernel=_sequence_conv_grad, lod_aware=True,
       doc="Gradient of sequence_conv: dFilter = context^T @ dOut; dContext = dOut @ "
           "Filter^T scattered back to the X rows (and PaddingData rows when trainable) it "
           "came from.")
