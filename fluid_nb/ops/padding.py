"""Pad and crop ops: pad, pad2d, pad_constant_like, crop, crop_tensor.

A pad's gradient is the crop of the output gradient back to X's region; a crop's is the
output gradient placed at the offsets in zeros shaped like X. pad2d's reflect and edge
modes read some inputs more than once, so their gradients add every read.
"""
from ..errors import InvalidArgument, expected
from .creation import host_int_lists, host_ints
from ..tensor.tensor import index_add
from ..framework.registry import def_op, grad_maker, grads_like


def _fail(op, what, want, got):
    raise InvalidArgument(expected(op, what, want, got))


def _pairs(op, paddings, rank):
    if len(paddings) != 2 * rank or any(p < 0 for p in paddings):
        _fail(op, "attribute 'paddings'", f"{2 * rank} ints >= 0 (before, after per dim)",
              list(paddings))
    return [(paddings[2 * i], paddings[2 * i + 1]) for i in range(rank)]


def _padded(shape, pairs):
    return [d + a + b if d >= 0 else -1 for d, (a, b) in zip(shape, pairs)]


def _cropped(dout, pairs):
    return dout[tuple(slice(a, dout.shape[i] - b) for i, (a, b) in enumerate(pairs))]


# --- pad -------------------------------------------------------------------------------------
def _pad_infer(ctx):
    shape = ctx.input_shape("X")
    pairs = _pairs("pad", ctx.attr("paddings"), len(shape))
    ctx.set_output("Out", _padded(shape, pairs), ctx.input_dtype("X"))


def _pad(ctx, x):
    pairs = _pairs("pad", ctx.attrs["paddings"], x.ndim)
    return ctx.xp.pad(x, pairs, mode="constant", constant_values=ctx.attrs["pad_value"])


def _pad_grad_infer(ctx):
    shape = ctx.input_shape("Out@GRAD")
    pairs = _pairs("pad_grad", ctx.attr("paddings"), len(shape))
    ctx.set_output("X@GRAD", [d - a - b if d >= 0 else -1 for d, (a, b) in zip(shape, pairs)],
                   ctx.input_dtype("Out@GRAD"))


def _pad_grad(ctx, dout):
    return ctx.xp.ascontiguousarray(
        _cropped(dout, _pairs("pad_grad", ctx.attrs["paddings"], dout.ndim)))


_PAD_ATTRS = {"paddings": ("ints", []), "pad_value": ("float", 0.0)}

def_op("pad", inputs=["X"], outputs=["Out"], attrs=_PAD_ATTRS, infer_shape=_pad_infer,
       grad=grad_maker("pad_grad", out_grads=["Out"], in_grads=["X"]), kernel=_pad,
       doc="Out = X with paddings[2i] values before and paddings[2i+1] after along each dim i, "
           "all equal to pad_value.")
def_op("pad_grad", inputs=["Out@GRAD"], outputs=["X@GRAD"], attrs=_PAD_ATTRS,
       infer_shape=_pad_grad_infer, kernel=_pad_grad,
       doc="X@GRAD = Out@GRAD without the padding.")


# --- pad2d -----------------------------------------------------------------------------------
_PAD2D_MODES = ("constant", "reflect", "edge")


def _pad2d_layout(op, data_format):
    if data_format not in ("NCHW", "NHWC"):
        _fail(op, "attribute 'data_format'", "'NCHW' or 'NHWC'", repr(data_format))
    return (2, 3) if data_format == "NCHW" else (1, 2)


def _pad2d_paddings(op, ctx, paddings_tensor):
    pads = host_ints(paddings_tensor) if paddings_tensor is not None else ctx.attrs["paddings"]
    if len(pads) != 4 or any(p < 0 for p in pads):
        _fail(op, "paddings", "4 ints >= 0 (top, bottom, left, right)", list(pads))
    return pads


def _pad2d_infer(ctx):
    shape = list(ctx.input_shape("X"))
    ctx.check(len(shape) == 4, "input 'X'", "a 4-D tensor", list(shape))
    ctx.check(ctx.attr("mode") in _PAD2D_MODES, "attribute 'mode'",
              "one of " + ", ".join(_PAD2D_MODES), repr(ctx.attr("mode")))
    h, w = _pad2d_layout("pad2d", ctx.attr("data_format"))
    if ctx.has_input("Paddings"):
        shape[h] = shape[w] = -1
    else:
        pads = ctx.attr("paddings")
        ctx.check(len(pads) == 4 and all(p >= 0 for p in pads), "attribute 'paddings'",
                  "4 ints >= 0 (top, bottom, left, right)", list(pads))
        shape[h] = shape[h] + pads[0] + pads[1] if shape[h] >= 0 else -1
        shape[w] = shape[w] + pads[2] + pads[3] if shape[w] >= 0 else -1
    ctx.set_output("Out", shape, ctx.input_dtype("X"))


def _source_rows(xp, size, before, after, mode):
    """For each output position along a dim, the input index it reads (-1: the pad value)."""
    index = xp.arange(size)
    if mode == "constant":
        return xp.pad(index, (before, after), mode="constant", constant_values=-1)
    if mode == "reflect" and (before >= size or after >= size):
        _fail("pad2d", "reflect paddings", f"smaller than the padded dim ({size})",
              [before, after])
    return xp.pad(index, (before, after), mode=mode)


def _pad2d_maps(op, ctx, x_shape, paddings_tensor):
    pads = _pad2d_paddings(op, ctx, paddings_tensor)
    h, w = _pad2d_layout(op, ctx.attrs["data_format"])
    mode = ctx.attrs["mode"]
    if mode not in _PAD2D_MODES:
        _fail(op, "attribute 'mode'", "one of " + ", ".join(_PAD2D_MODES), repr(mode))
    rows = _source_rows(ctx.xp, x_shape[h], pads[0], pads[1], mode)
    cols = _source_rows(ctx.xp, x_shape[w], pads[2], pads[3], mode)
    return h, rows, cols


def _pad2d(ctx, x, paddings_tensor):
    xp = ctx.xp
    h, rows, cols = _pad2d_maps("pad2d", ctx, x.shape, paddings_tensor)
    moved = xp.moveaxis(x, (h, h + 1), (0, 1))  # (H, W, ...) whatever the layout
    out = moved[xp.clip(rows, 0, None)][:, xp.clip(cols, 0, None)]
    # only constant mode reads outside X (the -1s), where it pads: known from the shapes
    if ctx.attrs["mode"] == "constant" and out.shape[:2] != moved.shape[:2]:
        outside = (rows < 0)[:, None] | (cols < 0)[None, :]
        out[outside] = ctx.attrs["pad_value"]
    return xp.ascontiguousarray(xp.moveaxis(out, (0, 1), (h, h + 1)))


def _pad2d_grad(ctx, x, paddings_tensor, dout):
    xp = ctx.xp
    h, rows, cols = _pad2d_maps("pad2d_grad", ctx, x.shape, paddings_tensor)
    moved = xp.moveaxis(dout, (h, h + 1), (0, 1))
    inside = (rows >= 0)[:, None] & (cols >= 0)[None, :]
    grid_r, grid_c = xp.meshgrid(rows, cols, indexing="ij")
    dx = xp.zeros((x.shape[h], x.shape[h + 1]) + moved.shape[2:], dtype=dout.dtype)
    index_add(xp, dx, (grid_r[inside], grid_c[inside]), moved[inside])
    return xp.ascontiguousarray(xp.moveaxis(dx, (0, 1), (h, h + 1)))


_PAD2D_ATTRS = {"paddings": ("ints", [0, 0, 0, 0]), "mode": ("string", "constant"),
                "pad_value": ("float", 0.0), "data_format": ("string", "NCHW")}

def_op("pad2d", inputs=["X", "Paddings?"], outputs=["Out"], attrs=_PAD2D_ATTRS,
       infer_shape=_pad2d_infer,
       grad=grad_maker("pad2d_grad", inputs=["X", "Paddings"], out_grads=["Out"],
                       in_grads=["X"]),
       kernel=_pad2d, host_reads="Paddings: Out's shape",
       doc="Out = the 4-D X padded on its H and W dims (data_format NCHW or NHWC) by "
           "paddings = [top, bottom, left, right] (the Paddings tensor when given): "
           "'constant' fills pad_value, 'reflect' mirrors without repeating the edge "
           "(x[1], x[0] | x[0] ...: in_h = -out_h), 'edge' repeats the edge.")
def_op("pad2d_grad", inputs=["X", "Paddings?", "Out@GRAD"], outputs=["X@GRAD"],
       attrs=_PAD2D_ATTRS, infer_shape=grads_like(**{"X@GRAD": "X"}), kernel=_pad2d_grad,
       host_reads="Paddings: where X sits in Out",
       doc="X@GRAD[j] = the sum of Out@GRAD over every output position that read X[j].")


# --- pad_constant_like -----------------------------------------------------------------------
def _pad_like_infer(ctx):
    x, y = ctx.input_shape("X"), ctx.input_shape("Y")
    ctx.check(len(x) == len(y) and all(a < 0 or b < 0 or a >= b for a, b in zip(x, y)),
              "input 'Y'", f"a shape no larger than X's {list(x)} in any dim", list(y))
    ctx.set_output("Out", x, ctx.input_dtype("Y"))


def _pad_like(ctx, x, y):
    if y.ndim != x.ndim or any(b > a for a, b in zip(x.shape, y.shape)):
        _fail("pad_constant_like", "input 'Y'", f"a shape no larger than X's {list(x.shape)}",
              list(y.shape))
    pairs = [(0, a - b) for a, b in zip(x.shape, y.shape)]
    return ctx.xp.pad(y, pairs, mode="constant", constant_values=ctx.attrs["pad_value"])


def_op("pad_constant_like", inputs=["X", "Y"], outputs=["Out"],
       attrs={"pad_value": ("float", 0.0)}, infer_shape=_pad_like_infer,
       grad=grad_maker("pad_constant_like_grad", inputs=["Y"], out_grads=["Out"],
                       in_grads=["Y"]),
       kernel=_pad_like,
       doc="Out = Y padded at the end of each dim with pad_value up to X's shape (X is read "
           "only for its shape).")
def_op("pad_constant_like_grad", inputs=["Y", "Out@GRAD"], outputs=["Y@GRAD"],
       attrs={"pad_value": ("float", 0.0)}, infer_shape=grads_like(**{"Y@GRAD": "Y"}),
       kernel=lambda ctx, y, dout: ctx.xp.ascontiguousarray(
           dout[tuple(slice(0, d) for d in y.shape)]),
       doc="Y@GRAD = Out@GRAD cropped to Y's shape.")


# --- crop / crop_tensor ----------------------------------------------------------------------
def _crop_region(op, x_shape, shape, offsets):
    """The index tuple of the crop; -1 in shape takes the rest of that dim."""
    if len(shape) != len(x_shape) or len(offsets) != len(x_shape):
        _fail(op, "shape and offsets", f"{len(x_shape)} entries each (X's rank)",
              f"shape={list(shape)}, offsets={list(offsets)}")
    index = []
    for i, (dim, size, at) in enumerate(zip(x_shape, shape, offsets)):
        size = dim - at if size == -1 else size
        if at < 0 or size <= 0 or at + size > dim:
            _fail(op, f"crop of dim {i} (size {dim})", "0 <= offset, 0 < size, offset + size "
                  "<= dim", f"offset={at}, size={shape[i]}")
        index.append(slice(at, at + size))
    return tuple(index)


def _crop_offsets(ctx, offsets_tensor, offsets_list=None):
    # read on the host (the op declares host_reads): the crop's region
    offsets_tensor, offsets_list = host_int_lists(offsets_tensor, offsets_list)
    return next(o for o in (offsets_tensor, offsets_list, ctx.attrs["offsets"]) if o is not None)


def _crop_infer(ctx):
    x_shape = ctx.input_shape("X")
    shape = ctx.input_shape("Y") if ctx.has_input("Y") else ctx.attr("shape")
    ctx.check(len(shape) == len(x_shape), "shape (attribute or Y's)",
              f"{len(x_shape)} dims (X's rank)", list(shape))
    ctx.set_output("Out", shape, ctx.input_dtype("X"))


def _crop_offsets_or_zero(ctx, x, offsets_tensor):
    offsets = _crop_offsets(ctx, offsets_tensor)
    return offsets if offsets else [0] * x.ndim


def _crop(ctx, x, y, offsets_tensor):
    shape = list(y.shape) if y is not None else ctx.attrs["shape"]
    index = _crop_region("crop", x.shape, shape, _crop_offsets_or_zero(ctx, x, offsets_tensor))
    return ctx.xp.ascontiguousarray(x[index])


def _crop_grad(ctx, x, y, offsets_tensor, dout):
    index = _crop_region("crop_grad", x.shape, list(dout.shape),
                         _crop_offsets_or_zero(ctx, x, offsets_tensor))
    dx = ctx.xp.zeros(x.shape, dtype=dout.dtype)
    dx[index] = dout
    return dx


_CROP_ATTRS = {"offsets": ("ints", []), "shape": ("ints", [])}

def_op("crop", inputs=["X", "Y?", "Offsets?"], outputs=["Out"], attrs=_CROP_ATTRS,
       infer_shape=_crop_infer,
       grad=grad_maker("crop_grad", inputs=["X", "Y", "Offsets"], out_grads=["Out"],
                       in_grads=["X"]),
       kernel=_crop, host_reads="Offsets: the crop's region",
       doc="Out = X[offsets[i] : offsets[i] + shape[i]] along every dim i; shape is Y's "
           "shape when Y is given, offsets the Offsets tensor's values when given.")
def_op("crop_grad", inputs=["X", "Y?", "Offsets?", "Out@GRAD"], outputs=["X@GRAD"],
       attrs=_CROP_ATTRS, infer_shape=grads_like(**{"X@GRAD": "X"}), kernel=_crop_grad,
       host_reads="Offsets: where Out@GRAD goes",
       doc="X@GRAD = zeros like X with Out@GRAD placed at the offsets.")


def _crop_tensor_infer(ctx):
    x_shape = ctx.input_shape("X")
    dtype = ctx.input_dtype("X")
    if ctx.has_input("Shape"):
        ctx.set_output("Out", [-1] * len(x_shape), dtype)
        return
    shape = ctx.attr("shape")
    ctx.check(len(shape) == len(x_shape), "attribute 'shape'", f"{len(x_shape)} dims (X's rank)",
              list(shape))
    offsets = ctx.attr("offsets")
    known_offsets = not (ctx.has_input("Offsets") or ctx.has_input("OffsetsTensor")) and \
        len(offsets) == len(x_shape)
    out = []
    for i, size in enumerate(shape):
        if size > 0:
            out.append(size)
        elif size == -1 and known_offsets and x_shape[i] >= 0:
            out.append(x_shape[i] - offsets[i])
        else:
            out.append(-1)
    ctx.set_output("Out", out, dtype)


def _crop_tensor(ctx, x, shape_tensor, offsets_tensor, shape_list, offsets_list):
    # the shape and offset tensors read at once: one copy from a device
    shape_tensor, offsets_tensor, shape_list, offsets_list = host_int_lists(
        shape_tensor, offsets_tensor, shape_list, offsets_list)
    shape = next(s for s in (shape_tensor, shape_list, ctx.attrs["shape"]) if s is not None)
    offsets = next(o for o in (offsets_tensor, offsets_list, ctx.attrs["offsets"])
                   if o is not None) or [0] * x.ndim
    index = _crop_region("crop_tensor", x.shape, shape, offsets)
    return ctx.xp.ascontiguousarray(x[index])


def _crop_tensor_grad(ctx, x, offsets_tensor, offsets_list, dout):
    offsets = _crop_offsets(ctx, offsets_tensor, offsets_list) or [0] * x.ndim
    index = _crop_region("crop_tensor_grad", x.shape, list(dout.shape), offsets)
    dx = ctx.xp.zeros(x.shape, dtype=dout.dtype)
    dx[index] = dout
    return dx


def_op("crop_tensor", inputs=["X", "Shape?", "Offsets?", "ShapeTensor[]?", "OffsetsTensor[]?"],
       outputs=["Out"], attrs=_CROP_ATTRS, infer_shape=_crop_tensor_infer,
       grad=grad_maker("crop_tensor_grad", inputs=["X", "Offsets", "OffsetsTensor"],
                       out_grads=["Out"], in_grads=["X"]),
       kernel=_crop_tensor, host_reads="Shape / ShapeTensor, Offsets / OffsetsTensor: the "
                                       "crop's region",
       doc="Out = X[offsets[i] : offsets[i] + shape[i]] along every dim i, where shape[i] = "
           "-1 takes the rest of the dim; Shape / ShapeTensor and Offsets / OffsetsTensor "
           "override the attributes.")
def_op("crop_tensor_grad", inputs=["X", "Offsets?", "OffsetsTensor[]?", "Out@GRAD"],
       outputs=["X@GRAD"], attrs=_CROP_ATTRS, infer_shape=grads_like(**{"X@GRAD": "X"}),
       kernel=_crop_tensor_grad, host_reads="Offsets / OffsetsTensor: where Out@GRAD goes",
       doc="X@GRAD = zeros like X with Out@GRAD placed at the offsets.")
