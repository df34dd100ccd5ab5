"""``var_conv_2d``: a 2-D convolution over a batch of images of different sizes. Image i
has InputChannel channels of ROW_i x COLUMN_i pixels (the lengths of sequence i of the ROW
and COLUMN inputs), stored flattened as sequence i of X; the kernel is centred on each
strided position (offset KernelH // 2, KernelW // 2, zeros outside the image)."""
import numpy as np

from ..errors import InvalidArgument, expected
from ..framework.registry import def_op
from ..tensor.tensor import LoDTensor

_ATTRS = {name: ("int", 1) for name in ("InputChannel", "OutputChannel", "StrideH",
                                        "StrideW", "KernelH", "KernelW")}


def _infer(ctx):
    a = ctx.attrs()
    w = list(ctx.input_shape("W"))
    window = a["InputChannel"] * a["KernelH"] * a["KernelW"]
    ctx.check(len(w) == 2 and w[0] in (-1, a["OutputChannel"]) and w[1] in (-1, window),
              "input 'W'", f"[{a['OutputChannel']}, {window}] (OutputChannel, "
              f"InputChannel * KernelH * KernelW)", w)
    for name in ("StrideH", "StrideW", "KernelH", "KernelW", "InputChannel", "OutputChannel"):
        ctx.check(a[name] > 0, f"attribute '{name}'", "> 0", a[name])
    dtype = ctx.input_dtype("X")
    ctx.set_output("Out", [-1, 1], dtype, lod_level=1)
    ctx.set_output("Col", [-1, 1], dtype, lod_level=1)


def lod_images(where, x, row, col, channels):
    """Per image of X (its LoD: one sequence of channels * h * w values per image, whose h
    and w are the lengths of ROW's and COLUMN's sequences): (offset in X, h, w)."""
    xo, ro, co = (t.lod()[-1] if t.lod() else None for t in (x, row, col))
    if xo is None or ro is None or co is None or not len(xo) == len(ro) == len(co):
        raise InvalidArgument(expected(where, "inputs 'X', 'ROW', 'COLUMN'",
                                       "LoD tensors with one sequence per image",
                                       f"{x.lod()}, {row.lod()}, {col.lod()}"))
    images = []
    for i in range(len(xo) - 1):
        h, w = ro[i + 1] - ro[i], co[i + 1] - co[i]
        if xo[i + 1] - xo[i] != channels * h * w:
            raise InvalidArgument(expected(where, f"input 'X' sequence {i}",
                                           f"{channels} * {h} * {w} values",
                                           xo[i + 1] - xo[i]))
        images.append((xo[i], h, w))
    return images


def _gather_plan(a, h, w):
    """(index into the image's flat pixels [C*kh*kw, ty*tx], valid mask, ty*tx)."""
    kh, kw, sh, sw, c = a["KernelH"], a["KernelW"], a["StrideH"], a["StrideW"], \
        a["InputChannel"]
    ys, xs = np.arange(0, h, sh), np.arange(0, w, sw)
    iy = ys[None, None, :, None] + np.arange(kh)[:, None, None, None] - kh // 2
    ix = xs[None, None, None, :] + np.arange(kw)[None, :, None, None] - kw // 2
    valid = (iy >= 0) & (iy < h) & (ix >= 0) & (ix < w)
    flat = np.where(valid, iy * w + ix, 0)
    index = np.arange(c)[:, None, None, None, None] * h * w + flat[None]
    cols = len(ys) * len(xs)
    shape = (c * kh * kw, cols)
    return (index.reshape(shape), np.broadcast_to(valid[None], index.shape).reshape(shape),
            cols)


def _var_conv(ctx, x, row, column, w):
    xp, a = ctx.xp, ctx.attrs
    xa, wa = x.array.reshape(-1), w.array
    outs, cols, out_lod, col_lod = [], [], [0], [0]
    for start, h, width in lod_images("var_conv_2d", x, row, column, a["InputChannel"]):
        if h == 0 or width == 0:
            out_lod.append(out_lod[-1])
            col_lod.append(col_lod[-1])
            continue
        index, valid, n = _gather_plan(a, h, width)
        col = xp.where(xp.asarray(valid), xa[start + xp.asarray(index)], 0)
        out = wa @ col
        outs.append(out.reshape(-1))
        cols.append(col.reshape(-1))
        out_lod.append(out_lod[-1] + out.size)
        col_lod.append(col_lod[-1] + col.size)
    dtype = xa.dtype
    out = xp.concatenate(outs) if outs else xp.zeros(0, dtype)
    col = xp.concatenate(cols) if cols else xp.zeros(0, dtype)
    return (LoDTensor(out.reshape(-1, 1).astype(dtype, copy=False), [out_lod]),
            LoDTensor(col.reshape(-1, 1).astype(dtype, copy=False), [col_lod]))


def _var_conv_grad(ctx, x, row, column, w, col, dout):
    xp, a = ctx.xp, ctx.attrs
    xa, wa = x.array.reshape(-1), w.array
    cols, d = col.array.reshape(-1), dout.array.reshape(-1)
    dx, dw = xp.zeros_like(xa), xp.zeros_like(wa)
    at_col = at_out = 0
    for start, h, width in lod_images("var_conv_2d_grad", x, row, column, a["InputChannel"]):
        if h == 0 or width == 0:
            continue
        index, valid, n = _gather_plan(a, h, width)
        c = cols[at_col:at_col + index.size].reshape(index.shape)
        g = d[at_out:at_out + wa.shape[0] * n].reshape(wa.shape[0], n)
        at_col += index.size
        at_out += g.size
        dw += g @ c.T
        dcol = (wa.T @ g) * xp.asarray(valid)
        _scatter_add(xp, dx, start + xp.asarray(index).reshape(-1), dcol.reshape(-1))
    return (LoDTensor(dx.reshape(x.array.shape), x.lod()) if ctx.wants("X@GRAD") else None,
            LoDTensor(dw) if ctx.wants("W@GRAD") else None)


def _scatter_add(xp, target, index, values):
    add_at = getattr(getattr(xp, "add", None), "at", None)
    if add_at is not None:
        add_at(target, index, values)
    else:  # older CuPy spells it cupyx.scatter_add
        import cupyx
        cupyx.scatter_add(target, index, values)


def _grad_maker(g):
    return [g.op("var_conv_2d_grad",
                 {"X": g.input("X"), "ROW": g.input("ROW"), "COLUMN": g.input("COLUMN"),
                  "W": g.input("W"), "Col": g.output("Col"), "Out@GRAD": g.output_grad("Out")},
                 {"X@GRAD": g.input_grad("X"), "W@GRAD": g.input_grad("W")})]


_grad_maker.grad_type = "var_conv_2d_grad"


def _grad_infer(ctx):
    for slot in ("X", "W"):
        if ctx.has_output(slot + "@GRAD"):
            ctx.set_output(slot + "@GRAD", ctx.input_shape(slot), ctx.input_dtype(slot),
                           lod_level=ctx.input_lod_level(slot))


def_op("var_conv_2d", inputs=["X", "ROW", "COLUMN", "W"], outputs=["Out", "Col!"],
       attrs=_ATTRS, infer_shape=_infer, grad=_grad_maker, kernel=_var_conv, lod_aware=True,
       doc="Per image i (C x H_i x W_i, H_i and W_i the lengths of ROW's and COLUMN's "
           "sequence i): Col_i = im2col of the KernelH x KernelW windows centred at every "
           "(StrideH, StrideW)-th pixel, [C kh kw, ty tx] with ty = (H_i - 1) / StrideH + 1; "
           "Out_i = W Col_i ([OutputChannel, ty tx]), flattened, one LoD sequence per image.")
def_op("var_conv_2d_grad", inputs=["X", "ROW", "COLUMN", "W", "Col", "Out@GRAD"],
       outputs=["X@GRAD?", "W@GRAD?"], attrs=_ATTRS, infer_shape=_grad_infer,
       kernel=_var_conv_grad, lod_aware=True,
       doc="dW = sum_i dOut_i Col_i^T; dX: W^T dOut_i put back through the im2col windows "
           "(added where windows overlap).")
