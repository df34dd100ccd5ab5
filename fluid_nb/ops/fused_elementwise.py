"""``fused_elemwise_activation``: an elementwise binary op and a unary one in one op, as
Fluid's fusion pass writes them into inference and training programs.

``functor_list = [f1, f2]`` reads as a composition: a binary f1 with a unary f2 gives
``Out = f1(X, f2(Y))``; a unary f1 with a binary f2 gives ``Out = f1(f2(X, Y))``. The
binary ops broadcast the smaller operand by Paddle's ``axis`` rule (:mod:`.common`);
IntermediateOut is the inner result, f2(Y) or f2(X, Y)."""
from ..errors import InvalidArgument, expected
from ..framework.registry import def_op, grads_like
from .common import aligned, broadcast_shape, unbroadcast_for_axis

_BINARY = {"elementwise_add", "elementwise_mul"}
_UNARY = {"scale", "relu", "tanh", "sigmoid"}


def _unary(xp, name, v, scale):
    if name == "scale":
        return v * scale
    if name == "relu":
        return xp.maximum(v, 0)
    if name == "tanh":
        return xp.tanh(v)
    return 1 / (1 + xp.exp(-v))


def _unary_grad(xp, name, v, out, scale):
    """d name(v) / dv, from the input ``v`` and the output ``out``."""
    if name == "scale":
        return scale
    if name == "relu":
        return (v > 0).astype(v.dtype)
    if name == "tanh":
        return 1 - out * out
    return out * (1 - out)


def _functors(fail, functors):
    if len(functors) != 2 or not (
            (functors[0] in _BINARY and functors[1] in _UNARY)
            or (functors[0] in _UNARY and functors[1] in _BINARY)):
        fail("attribute 'functor_list'",
             f"a binary op of {sorted(_BINARY)} and a unary op of {sorted(_UNARY)}, in "
             f"either order", list(functors))
    return functors[0], functors[1], functors[0] in _BINARY


def _infer(ctx):
    _, _, binary_first = _functors(ctx.fail, ctx.attr("functor_list"))
    x, y = ctx.input_shape("X"), ctx.input_shape("Y")
    out = broadcast_shape(ctx.op_type, x, y, ctx.attr("axis")) if x != y else tuple(x)
    dtype = ctx.input_dtype("X")
    ctx.set_output("Out", out, dtype)
    if ctx.has_output("IntermediateOut"):
        ctx.set_output("IntermediateOut", y if binary_first else out, dtype)


def _failing(op):
    def fail(what, want, got):
        raise InvalidArgument(expected(op, what, want, got))
    return fail


def _binary(name, a, b):
    return a + b if name == "elementwise_add" else a * b


def _forward(ctx, x, y):
    xp, attrs = ctx.xp, ctx.attrs
    f1, f2, binary_first = _functors(_failing("fused_elemwise_activation"),
                                     attrs["functor_list"])
    axis, scale = attrs["axis"], attrs["scale"]
    if binary_first:
        inner = _unary(xp, f2, y, scale)
        xa, ia = aligned(xp, x, inner, axis)
        out = _binary(f1, xa, ia)
    else:
        xa, ya = aligned(xp, x, y, axis)
        inner = _binary(f2, xa, ya)
        out = _unary(xp, f1, inner, scale)
    return out, inner


def _kernel(ctx, x, y):
    out, inner = _forward(ctx, x, y)
    return out.astype(x.dtype, copy=False), inner.astype(x.dtype, copy=False)


def _grad_kernel(ctx, x, y, dout):
    xp, attrs = ctx.xp, ctx.attrs
    f1, f2, binary_first = _functors(_failing("fused_elemwise_activation_grad"),
                                     attrs["functor_list"])
    axis, scale = attrs["axis"], attrs["scale"]
    out, inner = _forward(ctx, x, y)
    xa, ya = aligned(xp, x, y, axis)
    if binary_first:  # Out = f1(X, u(Y))
        ua = aligned(xp, x, inner, axis)[1]
        du = _unary_grad(xp, f2, ya, ua, scale)
        if f1 == "elementwise_add":
            dx, dy = dout, dout * du
        else:
            dx, dy = dout * ua, dout * xa * du
    else:  # Out = u(X f2 Y)
        dinner = dout * _unary_grad(xp, f1, inner, out, scale)
        if f2 == "elementwise_add":
            dx, dy = dinner, dinner
        else:
            dx, dy = dinner * ya, dinner * xa
    full = out.shape
    return (_reduce(xp, dx, x, y, full, axis) if ctx.wants("X@GRAD") else None,
            _reduce(xp, dy, y, x, full, axis) if ctx.wants("Y@GRAD") else None)


def _reduce(xp, grad, operand, other, full, axis):
    """``grad`` (broadcastable to the output's shape) summed back to ``operand``'s shape."""
    grad = xp.broadcast_to(grad, full)
    if grad.shape != operand.shape:
        grad = unbroadcast_for_axis(xp, grad, operand.shape, other.shape, axis)
    return xp.ascontiguousarray(grad).astype(operand.dtype, copy=False)


def _grad_maker(g):
    return [g.op("fused_elemwise_activation_grad",
                 {"X": g.input("X"), "Y": g.input("Y"), "Out@GRAD": g.output_grad("Out")},
                 {"X@GRAD": g.input_grad("X"), "Y@GRAD": g.input_grad("Y")})]


_grad_maker.grad_type = "fused_elemwise_activation_grad"

_ATTRS = {"functor_list": ("strings", []), "axis": ("int", -1), "scale": ("float", 0.0),
          "save_intermediate_out": ("bool", False)}

def_op("fused_elemwise_activation", inputs=["X", "Y"], outputs=["Out", "IntermediateOut!"],
       attrs=_ATTRS, infer_shape=_infer, grad=_grad_maker, kernel=_kernel,
       doc="[binary, unary]: Out = binary(X, unary(Y)); [unary, binary]: Out = unary("
           "binary(X, Y)). binary: elementwise_add or elementwise_mul (axis broadcast); "
           "unary: scale (by ``scale``), relu, tanh or sigmoid. IntermediateOut = the inner "
           "result.")
def_op("fused_elemwise_activation_grad", inputs=["X", "Y", "Out@GRAD"],
       outputs=["X@GRAD?", "Y@GRAD?"], attrs=_ATTRS,
       infer_shape=grads_like(**{"X@GRAD": "X", "Y@GRAD": "Y"}),
       kernel=_grad_kernel,
       doc="The chain rule through the two functors (the forward recomputed from X and Y), "
           "each gradient summed back over the dims its operand was broadcast along.")

