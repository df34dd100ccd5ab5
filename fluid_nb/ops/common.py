"""Pieces many op families share: Paddle's elementwise broadcasting, reducing a gradient
back to an input's shape, factories that make an elementwise op one definition, the
plans an op keeps between runs, and the kernels CuPy compiles for an op."""
import numpy as np

from ..errors import InvalidArgument, InvalidType, expected
from ..tensor.dtypes import VarType, dtype_name
from ..framework.infer import dims_match
from ..framework.registry import def_op, grad_maker, grads_like, no_gradient


#: (array module, kernel name) -> the ElementwiseKernel compiled for it
_compiled = {}


def compiled_elementwise(xp, name, params, outputs, body, preamble="", options=()):
    """CuPy's ElementwiseKernel ``name`` over ``params`` -> ``outputs`` running ``body``,
    compiled once per array module; None where ``xp`` compiles none (NumPy, the strict
    device). For the updates whose array expressions launch many kernels: on a GPU a
    small step's time is its launches."""
    if xp is np or not hasattr(xp, "ElementwiseKernel"):
        return None
    kernel = _compiled.get((xp, name))
    if kernel is None:
        kernel = _compiled[xp, name] = xp.ElementwiseKernel(
            params, outputs, body, name, preamble=preamble, options=options)
    return kernel


def first_out_of_range(ids, size):
    """The first id of the host array ``ids`` outside [0, size) (in C order), or None: for
    integer ids one comparison, a negative id read unsigned being past any size, and a
    count in C (the check a lookup, one_hot or gather makes of its ids every run cost
    more than the op itself on a live batch)."""
    if not ids.size:
        return None
    if ids.dtype.kind in "iu":
        bad = ids.astype(np.int64, copy=False).view(np.uint64) >= size
    else:
        bad = (ids < 0) | (ids >= size)
    if not np.count_nonzero(bad):
        return None
    return ids[bad][0]


def kept_plan(ctx, name, key, make):
    """``make()``, kept in the op's cache under ``name`` with ``key`` and returned again
    while the key is equal: the row plans that depend on a LoD, a rank table or step sizes
    alone, so that a loop fed batches of the same layout works them out once. ``key`` is a
    tuple of numbers and (nested) lists, compared by value and stored as a copy, since the
    lists are the caller's. A plan is working data: never hand it out as a value. A context
    without a cache (a bare one, in a kernel's unit test) makes the plan every time."""
    cache = getattr(ctx, "cache", None)
    held = cache.get(name) if cache is not None else None
    if held is not None and held[0] == key:
        return held[1]
    plan = make()
    if cache is not None:
        cache[name] = (_copied(key), plan)
    return plan


def _copied(key):
    """``key`` with its lists (a rank table too) copied, to any depth."""
    if isinstance(key, tuple):
        return tuple(_copied(item) for item in key)
    if isinstance(key, list):
        return [_copied(item) for item in key]
    return key


def align_for_axis(x_shape, y_shape, axis):
    """Shapes for NumPy broadcasting under Paddle's ``axis`` rule.

    With ``axis == -1`` (or equal ranks) the shapes line up at the right, as in NumPy.
    Otherwise the shorter operand's dims line up with the longer one's starting at ``axis``:
    X ``[2, 3, 4, 5]`` with Y ``[3, 4]`` and ``axis=1`` treats Y as ``[1, 3, 4, 1]``.
    """
    nx, ny = len(x_shape), len(y_shape)
    if axis == -1 or nx == ny:
        return tuple(x_shape), tuple(y_shape)
    if nx > ny:
        return tuple(x_shape), tuple(y_shape) + (1,) * (nx - axis - ny)
    return tuple(x_shape) + (1,) * (ny - axis - nx), tuple(y_shape)


def broadcast_shape(where, x_shape, y_shape, axis):
    """The output shape of an elementwise op (``-1`` stays unknown); raises on a mismatch."""
    if x_shape == y_shape:
        return tuple(x_shape)
    xs, ys = align_for_axis(x_shape, y_shape, axis)
    if axis != -1 and len(x_shape) != len(y_shape):
        shorter = len(y_shape) if len(x_shape) > len(y_shape) else len(x_shape)
        longer = max(len(x_shape), len(y_shape))
        if not 0 <= axis <= longer - shorter:
            raise InvalidArgument(expected(where, "attribute 'axis'",
                                           f"in [0, {longer - shorter}] or -1", axis))
    n = max(len(xs), len(ys))
    xs = (1,) * (n - len(xs)) + xs
    ys = (1,) * (n - len(ys)) + ys
    out = []
    for a, b in zip(xs, ys):
        if a == 1:
            out.append(b)
        elif b == 1:
            out.append(a)
        elif dims_match(a, b):
            out.append(a if a >= 0 else b)
        else:
            raise InvalidArgument(expected(where, f"shapes of X {list(x_shape)} and Y "
                                           f"{list(y_shape)} (axis={axis})",
                                           "broadcastable dims", f"{a} against {b}"))
    return tuple(out)


def aligned(xp, x, y, axis):
    """``x`` and ``y`` reshaped so NumPy/CuPy broadcasting does Paddle's ``axis`` rule."""
    if axis == -1 or x.ndim == y.ndim:
        return x, y
    xs, ys = align_for_axis(x.shape, y.shape, axis)
    return x.reshape(xs), y.reshape(ys)


def unbroadcast(xp, grad, shape):
    """Sum ``grad`` over the dims that broadcasting expanded, returning ``shape``."""
    shape = tuple(shape)
    if grad.shape == shape:
        return grad
    extra = grad.ndim - len(shape)
    axes = tuple(range(extra)) + tuple(i + extra for i, n in enumerate(shape)
                                       if n == 1 and grad.shape[i + extra] != 1)
    if axes:
        grad = grad.sum(axis=axes, keepdims=True)
    return grad.reshape(shape)


_SUM_AXES = {}  # (grad shape, operand shape, other shape, axis) -> axes to sum over
_LEADING = [tuple(range(n)) for n in range(65)]  # n -> the first n axes (a bias's sum)


def _in_operand_types(dx, dy, x, y, want_x, want_y):
    """An elementwise op's wanted gradients, shaped as their operands already, in their
    operands' types."""
    return ((dx.astype(x.dtype, copy=False) if want_x and dx is not None else None),
            (dy.astype(y.dtype, copy=False) if want_y and dy is not None else None))


def unbroadcast_for_axis(xp, grad, shape, other_shape, axis):
    """The gradient of an operand of ``shape`` broadcast against ``other_shape`` under
    Paddle's ``axis`` rule: ``grad`` summed over the broadcast dims, reshaped to ``shape``."""
    key = (grad.shape, shape, other_shape, axis)
    axes = _SUM_AXES.get(key)
    if axes is None:
        if axis == -1 or len(shape) >= len(other_shape):
            padded = tuple(shape)
        else:
            padded = align_for_axis(other_shape, shape, axis)[1]
        padded = (1,) * (grad.ndim - len(padded)) + tuple(padded)
        axes = _SUM_AXES[key] = tuple(i for i, (g, n) in enumerate(zip(grad.shape, padded))
                                      if n == 1 and g != 1)
    if axes:
        grad = grad.sum(axis=axes)
    return grad.reshape(shape)


def _operand_grad(xp, grad, operand, other, dout, axis):
    """An elementwise op's gradient ``grad`` (of the broadcast result's shape, or of a shape
    that broadcasts to it) brought back to ``operand``'s shape and dtype."""
    if grad is None:
        return None
    if grad.shape != operand.shape:  # the operand was broadcast: sum over what was expanded
        if grad.shape != dout.shape:
            grad = xp.broadcast_to(grad, dout.shape)
        grad = unbroadcast_for_axis(xp, grad, operand.shape, other.shape, axis)
    return grad if grad.dtype == operand.dtype else grad.astype(operand.dtype)


def binary_infer_shape(ctx):
    x, y = ctx.input_var("X"), ctx.input_var("Y")
    shape = x.shape
    if y.shape != shape:
        shape = broadcast_shape(ctx.op.type, shape, y.shape, ctx.op.attrs["axis"])
    ctx.set_output("Out", shape, x.dtype)


def elementwise_op(type, forward, backward, needs=("X", "Y"), doc=None, needs_out=False,
                   onnx=None):
    """Define an elementwise op with Paddle's ``axis`` broadcast, and its grad op.

    ``forward`` is an expression over ``X`` and ``Y`` (``ops/expr.py``: the same meaning
    for integers and floats), kept in the record for every target to render (``onnx``: an
    ONNX operator of exactly that meaning), or, where integers mean something else (a
    quotient truncated toward zero), ``forward(xp, x, y) -> out`` on aligned operands.
    ``backward(xp, x, y, out, dout) -> (dx, dy)`` on aligned operands (either may be None
    when not wanted); the factory sums each gradient back to its operand's shape.
    ``backward=None``: no gradient (as Paddle's empty grad maker).
    """
    from . import expr as ex
    formula = None
    if isinstance(forward, ex.Expr):
        formula = ex.Formula(forward, {"x": "X", "y": "Y"}, "Out", onnx)
        forward = ex.numpy_function(forward, ["x", "y"], cast_like="x", attrs=False)
        doc = doc or f"Out = {formula.expr} (Paddle's ``axis`` broadcast)."
    def kernel(ctx, x, y):
        axis = ctx.attrs["axis"]
        if axis == -1 or axis == x.ndim - y.ndim or x.shape == y.shape:
            return forward(ctx.xp, x, y)  # NumPy's trailing broadcast is Paddle's rule here
        xa, ya = aligned(ctx.xp, x, y, axis)
        return forward(ctx.xp, xa, ya)
    if formula is not None:
        kernel = ex.host_kernel(formula.expr, ["x", "y"], kernel, axis_rule=True)

    def grad_kernel(ctx, x, y, out, dout):
        xp, axis = ctx.xp, ctx.attrs["axis"]
        want_x, want_y = ctx.wants("X@GRAD"), ctx.wants("Y@GRAD")
        if x.shape == y.shape == dout.shape:  # nothing was broadcast: nothing to sum back
            return _in_operand_types(*backward(xp, x, y, out, dout, want_x, want_y), x, y,
                                     want_x, want_y)
        lead = x.ndim - y.ndim
        if axis == -1 or axis == lead:  # trailing alignment: NumPy's own rule
            xa, ya = x, y
            if lead > 0 and x.shape == dout.shape and y.shape == dout.shape[lead:]:
                # a bias (fc's): Y is dOut's last dims, so dY sums the leading ones away
                # (a gradient has dOut's shape: its formula is elementwise in dOut)
                dx, dy = backward(xp, x, y, out, dout, want_x, want_y)
                if want_y and dy is not None:
                    dy = dy.sum(axis=_LEADING[lead])
                return _in_operand_types(dx, dy, x, y, want_x, want_y)
        else:
            xa, ya = aligned(xp, x, y, axis)
        dx, dy = backward(xp, xa, ya, out, dout, want_x, want_y)
        return (_operand_grad(xp, dx, x, y, dout, axis) if want_x else None,
                _operand_grad(xp, dy, y, x, dout, axis) if want_y else None)

    # (a forward without a formula: the kernel, a pure function of the arrays, is the plain
    # one, so a live op's inference is remembered and its first run is plain)
    plain = kernel if formula is None else None
    if backward is None:  # integer-valued ops (floordiv, mod): the gradient stops here
        def_op(type, inputs=["X", "Y"], outputs=["Out"], attrs={"axis": ("int", -1)},
               infer_shape=binary_infer_shape, share_lod=("X", ["Out"]), grad=no_gradient,
               kernel=kernel, doc=doc, traits=("elementwise",), formula=formula,
               plain_kernel=plain)
        return
    grad_type = type + "_grad"
    grad_inputs = ["X", "Y", "Out?", "Out@GRAD"]
    fwd_outputs = ["Out"] if needs_out else []
    def_op(type, inputs=["X", "Y"], outputs=["Out"], attrs={"axis": ("int", -1)},
           infer_shape=binary_infer_shape, share_lod=("X", ["Out"]),
           grad=grad_maker(grad_type, inputs=["X", "Y"], outputs=fwd_outputs, out_grads=["Out"],
                           in_grads=["X", "Y"]),
           kernel=kernel, doc=doc, traits=("elementwise",), formula=formula, plain_kernel=plain)
    def_op(grad_type, inputs=grad_inputs, outputs=["X@GRAD?", "Y@GRAD?"],
           attrs={"axis": ("int", -1)}, infer_shape=grads_like(**{"X@GRAD": "X", "Y@GRAD": "Y"}),
           kernel=grad_kernel, doc=f"Gradient of {type}.")


def unary_op(type, forward, backward, uses=None, attrs=None, doc=None, float_only=False,
             onnx=None, api=None):
    """Define an elementwise one-input op and its grad op: one record, every target.

    ``forward`` is an expression (``ops/expr.py``) over ``X`` and the float attributes,
    ``backward`` one over ``DOUT`` and either ``X`` or ``OUT`` (name only what the gradient
    needs: relu's reads Out). The interpreter's kernels are generated from them, and the
    expressions are kept in the records (``OpDef.formula``) for the native and ONNX
    targets to render. ``float_only``: an integer X is refused when the op is built;
    ``onnx``: an ONNX operator of exactly this meaning (see ``expr.Formula``); ``api``: the
    op's facts for the layers API (``layer``: a ``fluid.layers`` function of the same name;
    ``act``: a name ``act=`` accepts; ``dtypes``: what its layer takes; ``arguments``: the
    positional (argument, attribute, default) after x).
    """
    from ..framework.registry import same_shape
    from . import expr as ex

    forward, backward = ex.lift(forward), ex.lift(backward)
    reads = ex.variables(backward) - {"dout"}
    if uses is None:  # a step function's zero gradient reads neither (Paddle's kDepNone)
        uses = "Out" if reads == {"out"} else "X" if reads else "none"
    if not reads <= {uses.lower()} or ex.variables(forward) - {"x"}:
        raise InvalidArgument(expected(type, "expressions", "a forward over X and a backward "
                                       f"over dOut and {uses}", f"{forward} and {backward}"))
    grad_reads = [uses.lower()] if uses != "none" else []
    # the kernels' Python is generated and compiled when the op first runs, not when its
    # family loads: most programs run few of the activations a family defines
    forward_kernel = backward_kernel = None

    def compiled_forward():
        nonlocal forward_kernel
        forward_kernel = ex.numpy_function(forward, ["x"], cast_like="x", in_place=True)
        return forward_kernel

    def kernel(ctx, x):
        return (forward_kernel or compiled_forward())(ctx.xp, x, ctx.attrs)
    kernel = ex.host_kernel(forward, ["x"], kernel, cast_like="x")

    def compiled_backward():
        nonlocal backward_kernel
        backward_kernel = ex.numpy_function(backward, grad_reads + ["dout"], cast_like="dout",
                                            in_place=True)
        return backward_kernel

    if grad_reads:
        def grad_kernel(ctx, v, dout):
            return (backward_kernel or compiled_backward())(ctx.xp, v, dout, ctx.attrs)
    else:
        def grad_kernel(ctx, dout):
            return (backward_kernel or compiled_backward())(ctx.xp, dout, ctx.attrs)

    grad_type = type + "_grad"
    attrs = attrs or {}
    doc = doc or f"Out = {forward}; dX = {backward}."
    fwd_in = ["X"] if uses == "X" else []  # what the grad maker hands the grad op
    fwd_out = ["Out"] if uses == "Out" else []
    infer = same_shape("X", "Out")
    if float_only:
        infer = _refusing_integers(type, infer)
    def_op(type, inputs=["X"], outputs=["Out"], attrs=attrs, infer_shape=infer,
           share_lod=("X", ["Out"]),
           grad=grad_maker(grad_type, inputs=fwd_in, outputs=fwd_out, out_grads=["Out"],
                           in_grads=["X"]),
           kernel=kernel, doc=doc, traits=("elementwise",), api=api,
           formula=ex.Formula(forward, {"x": "X"}, "Out", onnx))
    # dX takes the LoD of the forward tensor the gradient reads (Paddle's grad infer-meta
    # shares X's, or Out's for the ops whose gradient needs only Out), at run time
    grad_slots = [uses] if grad_reads else []
    def_op(grad_type, inputs=grad_slots + ["Out@GRAD"], outputs=["X@GRAD"], attrs=attrs,
           infer_shape=same_shape("Out@GRAD", "X@GRAD"),
           share_lod=((grad_slots or ["Out@GRAD"])[0], ["X@GRAD"]),
           kernel=grad_kernel, doc=f"Gradient of {type}: dX = {backward}.",
           traits=("elementwise",),
           formula=ex.Formula(backward, {**{v: s for v, s in zip(grad_reads, grad_slots)},
                                         "dout": "Out@GRAD"}, "X@GRAD"))


#: the tensor types a float-only op takes (Paddle registers their kernels for these)
FLOAT_TYPES = (VarType.FP16, VarType.FP32, VarType.FP64, VarType.BF16)


def _refusing_integers(op_type, infer):
    def infer_floats(ctx):
        dtype = ctx.input_dtype("X")
        if dtype not in FLOAT_TYPES:
            raise InvalidType(expected(op_type, "input 'X'", "a float16, float32 or float64 "
                                       "tensor", dtype_name(dtype)))
        infer(ctx)
    return infer_floats
