"""The first versions of the shape ops: ``reshape``, ``transpose``, ``squeeze``, ``unsqueeze``.

Programs saved by older Fluid releases use them. Each computes what its ``*2`` successor
computes (the shape rules are :mod:`.shape`'s), without an ``XShape`` output: the grad op
reads X itself for the shape to give the gradient back.

LoD as in Fluid: reshape, squeeze and unsqueeze pass X's LoD on when the first dim is
unchanged; transpose drops it.
"""
from ..errors import InvalidArgument, expected
from ..tensor.tensor import LoDTensor
from ..framework.registry import def_op, grad_maker, grads_like
from .shape import (requested_axes, requested_shape, reshape_target, squeeze_shape,
                    unsqueeze_shape)


def _lod_kept(x_shape, out_shape):
    return len(x_shape) > 0 and len(out_shape) > 0 and x_shape[0] == out_shape[0]


def _shaped(x, out):
    """``out`` (a view of X's array reshaped) with X's LoD when the first dim is kept."""
    lod = x._lod if _lod_kept(x.array.shape, out.shape) else []
    return LoDTensor(out, [list(level) for level in lod])


def _share_lod_if_kept(ctx, x_shape, out):
    if _lod_kept(x_shape, out):
        ctx.share_lod("X", "Out")


def _shape_grad(op_type, attrs, doc):
    """``<op>_grad``: X@GRAD = Out@GRAD reshaped to X's shape (X read for its shape only)."""
    grad_type = op_type + "_grad"
    def_op(grad_type, inputs=["X", "Out@GRAD"], outputs=["X@GRAD"], attrs=attrs,
           infer_shape=grads_like(**{"X@GRAD": "X"}), share_lod=("X", ["X@GRAD"]),
           kernel=lambda ctx, x, dout: dout.reshape(x.shape), doc=doc)
    return grad_maker(grad_type, inputs=["X"], out_grads=["Out"], in_grads=["X"])


# --- reshape ---------------------------------------------------------------------------------
_RESHAPE_ATTRS = {"shape": ("ints", [])}


def _reshape_infer(ctx):
    x_shape = ctx.input_shape("X")
    shape = ctx.attr("shape")
    dtype = ctx.input_dtype("X")
    if ctx.has_input("ShapeTensor"):
        n = len(ctx.op.inputs["ShapeTensor"])
        ctx.set_output("Out", [-1] * n, dtype)
        return
    if ctx.has_input("Shape"):
        n = ctx.input_shape("Shape")
        ctx.set_output("Out", [-1] * (n[0] if n and n[0] > 0 else len(shape) or 1), dtype)
        return
    out = reshape_target("reshape", shape, x_shape)
    ctx.set_output("Out", out, dtype)
    _share_lod_if_kept(ctx, x_shape, out)


def _reshape(ctx, x, shape_input, shape_list):
    shape = requested_shape(ctx, shape_input, shape_list)
    array = x.array
    return _shaped(x, array.reshape(reshape_target("reshape", shape, array.shape)))


def_op("reshape", inputs=["X", "Shape?", "ShapeTensor[]?"], outputs=["Out"],
       attrs=_RESHAPE_ATTRS, infer_shape=_reshape_infer,
       grad=_shape_grad("reshape", _RESHAPE_ATTRS, "X@GRAD = Out@GRAD reshaped to X's shape."),
       kernel=_reshape, lod_aware=True,
       host_reads="ShapeTensor / Shape: Out's shape",
       doc="Out = X reshaped to ShapeTensor (one int per dim), else Shape (an int tensor), "
           "else Attr(shape); in the shape, 0 copies X's dim at that index and one -1 is "
           "inferred.")


# --- transpose -------------------------------------------------------------------------------
_TRANSPOSE_ATTRS = {"axis": ("ints", []), "data_format": ("string", "AnyLayout")}


def _perm(fail, axis, rank):
    """``axis`` made non-negative; ``fail(what, want, got)`` when it is no permutation."""
    if len(axis) != rank:
        fail("attribute 'axis'", f"{rank} entries (X's rank)", list(axis))
    perm = [a + rank if a < 0 else a for a in axis]
    if sorted(perm) != list(range(rank)):
        fail("attribute 'axis'", f"a permutation of 0..{rank - 1}", list(axis))
    return perm


def _failing(op):
    def fail(what, want, got):
        raise InvalidArgument(expected(op, what, want, got))
    return fail


def _transpose_infer(ctx):
    x_shape = ctx.input_shape("X")
    perm = _perm(ctx.fail, ctx.attr("axis"), len(x_shape))
    ctx.set_output("Out", [x_shape[p] for p in perm], ctx.input_dtype("X"))


def _transpose(ctx, x):
    perm = _perm(_failing("transpose"), ctx.attrs["axis"], x.ndim)
    return ctx.xp.ascontiguousarray(ctx.xp.transpose(x, perm))


def _transpose_grad(ctx, x, dout):
    perm = _perm(_failing("transpose_grad"), ctx.attrs["axis"], dout.ndim)
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return ctx.xp.ascontiguousarray(ctx.xp.transpose(dout, inverse))


def_op("transpose", inputs=["X"], outputs=["Out"], attrs=_TRANSPOSE_ATTRS,
       infer_shape=_transpose_infer,
       grad=grad_maker("transpose_grad", inputs=["X"], out_grads=["Out"], in_grads=["X"]),
       kernel=_transpose,
       doc="Out = X with its dims permuted: Out.shape[i] = X.shape[axis[i]].")
def_op("transpose_grad", inputs=["X", "Out@GRAD"], outputs=["X@GRAD"],
       attrs=_TRANSPOSE_ATTRS, infer_shape=grads_like(**{"X@GRAD": "X"}),
       kernel=_transpose_grad, doc="X@GRAD = Out@GRAD permuted by the inverse of axis.")


# --- squeeze / unsqueeze -----------------------------------------------------------------------
_SQUEEZE_ATTRS = {"axes": ("ints", [])}


def _squeeze_infer(ctx):
    x_shape = ctx.input_shape("X")
    out = squeeze_shape("squeeze", ctx.attr("axes"), x_shape, runtime=False)
    ctx.set_output("Out", out, ctx.input_dtype("X"))
    _share_lod_if_kept(ctx, x_shape, out)


def _squeeze(ctx, x):
    array = x.array
    return _shaped(x, array.reshape(squeeze_shape("squeeze", ctx.attrs["axes"], array.shape,
                                                  True)))


def_op("squeeze", inputs=["X"], outputs=["Out"], attrs=_SQUEEZE_ATTRS,
       infer_shape=_squeeze_infer,
       grad=_shape_grad("squeeze", _SQUEEZE_ATTRS, "X@GRAD = Out@GRAD reshaped to X's shape."),
       kernel=_squeeze, lod_aware=True,
       doc="Out = X without the size-1 dims listed in axes (all size-1 dims when axes is "
           "empty); listed dims of another size are kept.")


def _unsqueeze_infer(ctx):
    x_shape = ctx.input_shape("X")
    dtype = ctx.input_dtype("X")
    if ctx.has_input("AxesTensorList") or ctx.has_input("AxesTensor"):
        if ctx.has_input("AxesTensorList"):
            n = len(ctx.op.inputs["AxesTensorList"])
        else:
            n = ctx.input_shape("AxesTensor")
            n = n[0] if n and n[0] > 0 else len(ctx.attr("axes"))
        ctx.set_output("Out", [-1] * (len(x_shape) + n), dtype)
        return
    out = unsqueeze_shape("unsqueeze", ctx.attr("axes"), x_shape)
    ctx.set_output("Out", out, dtype)
    _share_lod_if_kept(ctx, x_shape, out)


def _unsqueeze(ctx, x, axes_tensor, axes_list):
    axes = requested_axes(ctx, axes_tensor, axes_list)
    array = x.array
    return _shaped(x, array.reshape(unsqueeze_shape("unsqueeze", axes, array.shape)))


def_op("unsqueeze", inputs=["X", "AxesTensor?", "AxesTensorList[]?"], outputs=["Out"],
       attrs=_SQUEEZE_ATTRS, infer_shape=_unsqueeze_infer,
       grad=_shape_grad("unsqueeze", _SQUEEZE_ATTRS,
                        "X@GRAD = Out@GRAD reshaped to X's shape."),
       kernel=_unsqueeze, lod_aware=True,
       host_reads="AxesTensor / AxesTensorList: where Out's dims go",
       doc="Out = X with a size-1 dim inserted at each of axes (AxesTensor / AxesTensorList "
           "first), in order.")
