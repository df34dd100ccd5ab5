"""``equal_reduce``: whether two tensors are equal everywhere (one bool), comparing as
``equal`` does after Paddle's ``axis`` broadcast. No gradient."""
from ..framework.registry import def_op, no_gradient
from ..tensor.dtypes import VarType
from .common import aligned, broadcast_shape
from .compare import _equal


def _infer(ctx):
    x, y = ctx.input_shape("X"), ctx.input_shape("Y")
    if tuple(x) != tuple(y):
        broadcast_shape(ctx.op_type, x, y, ctx.attr("axis"))  # raises when they do not
    ctx.set_output("Out", [1], VarType.BOOL)


def _equal_reduce(ctx, x, y):
    xp = ctx.xp
    xa, ya = aligned(xp, x, y, ctx.attrs["axis"])
    return xp.all(_equal(xp, xa, ya)).reshape(1)


def_op("equal_reduce", inputs=["X", "Y"], outputs=["Out"], attrs={"axis": ("int", -1)},
       infer_shape=_infer, grad=no_gradient, kernel=_equal_reduce,
       doc="Out = [all(X == Y)] after broadcasting by the axis rule (floats equal within "
           "1e-8, as in ``equal``).")
