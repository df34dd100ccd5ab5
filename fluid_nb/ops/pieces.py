"""A tensor cut into pieces and pieces joined: ``unbind`` (one output per index along an
axis), ``partial_concat`` and ``partial_sum`` (the same column range of several matrices,
concatenated or added)."""
from ..errors import InvalidArgument, expected
from ..framework.infer import dims_match
from ..framework.program import EMPTY_VAR_NAME
from ..framework.registry import def_op, grad_maker


# --- unbind ------------------------------------------------------------------------------------
def _unbind_axis(fail, axis, rank):
    if not -rank <= axis < rank:
        fail("attribute 'axis'", f"in [{-rank}, {rank})", axis)
    return axis % rank


def _unbind_infer(ctx):
    x = list(ctx.input_shape("X"))
    axis = _unbind_axis(ctx.fail, ctx.attr("axis"), len(x))
    n = len(ctx.op.outputs.get("Out", ()))
    ctx.check(x[axis] < 0 or x[axis] == n, "output 'Out'",
              f"{x[axis]} variables (X's dim {axis})", n)
    ctx.set_outputs("Out", [x[:axis] + x[axis + 1:]] * n, ctx.input_dtype("X"))


def _unbind(ctx, x):
    def fail(what, want, got):
        raise InvalidArgument(expected("unbind", what, want, got))
    axis = _unbind_axis(fail, ctx.attrs["axis"], x.ndim)
    return [ctx.xp.take(x, i, axis=axis) for i in range(x.shape[axis])]


def _unbind_grad(g):
    dx = g.input_grad("X")
    if all(n == EMPTY_VAR_NAME for n in dx):
        return []
    return [g.op("stack", {"X": g.output_grad("Out")}, {"Y": dx},
                 {"axis": g.attrs.get("axis", 0)})]


def_op("unbind", inputs=["X"], outputs=["Out[]"], attrs={"axis": ("int", 0)},
       infer_shape=_unbind_infer, grad=_unbind_grad, kernel=_unbind,
       doc="Out[i] = X taken at index i along axis (the axis removed), one output per "
           "index. The gradient is stack(Out@GRAD) along axis.")


# --- partial_concat / partial_sum ----------------------------------------------------------------
_PARTIAL_ATTRS = {"start_index": ("int", 0), "length": ("int", -1)}


def _columns(fail, size, start, length):
    """The column range [begin, end) of ``start_index`` and ``length`` in ``size`` columns."""
    if not -size <= start < size:
        fail("attribute 'start_index'", f"in [{-size}, {size})", start)
    begin = start + size if start < 0 else start
    end = size if length < 0 else begin + length
    if end > size:
        fail("attribute 'length'", f"at most {size - begin} (columns from {begin})", length)
    return begin, end


def _partial_infer(ctx):
    shapes = [list(s) for s in ctx.input_shapes("X")]
    first = shapes[0]
    ctx.check(len(first) == 2, "input 'X'", "matrices ([N, D])", first)
    for shape in shapes[1:]:
        ctx.check(len(shape) == 2 and all(dims_match(a, b) for a, b in zip(shape, first)),
                  "input 'X'", f"matrices of one shape {first}", shape)
    width = -1
    if first[1] >= 0:
        begin, end = _columns(ctx.fail, first[1], ctx.attr("start_index"), ctx.attr("length"))
        width = end - begin
    if ctx.op_type == "partial_concat":
        width = width * len(shapes) if width >= 0 else -1
    ctx.set_output("Out", [first[0], width], ctx.input_dtype("X"))


def _kernel_columns(op, ctx, x):
    def fail(what, want, got):
        raise InvalidArgument(expected(op, what, want, got))
    return _columns(fail, x.shape[1], ctx.attrs["start_index"], ctx.attrs["length"])


def _partial_concat(ctx, xs):
    begin, end = _kernel_columns("partial_concat", ctx, xs[0])
    return ctx.xp.concatenate([x[:, begin:end] for x in xs], axis=1)


def _partial_sum(ctx, xs):
    begin, end = _kernel_columns("partial_sum", ctx, xs[0])
    out = xs[0][:, begin:end].copy()
    for x in xs[1:]:
        out += x[:, begin:end]
    return out


def _partial_grad(op, split):
    def kernel(ctx, xs, dout):
        xp = ctx.xp
        begin, end = _kernel_columns(op, ctx, xs[0])
        width = end - begin
        grads = []
        for i, x in enumerate(xs):
            dx = xp.zeros_like(x)
            dx[:, begin:end] = dout[:, i * width:(i + 1) * width] if split else dout
            grads.append(dx)
        return grads
    return kernel


def _grads_like_x(ctx):
    ctx.set_outputs("X@GRAD", ctx.input_shapes("X"), ctx.input_dtype("X"))


for _type, _kernel, _split, _doc in (
        ("partial_concat", _partial_concat, True,
         "Out = concat(X[0][:, s:s+l], X[1][:, s:s+l], ...) along dim 1, for the column "
         "range of start_index s (negative counts from the end) and length l (-1: to the "
         "end)."),
        ("partial_sum", _partial_sum, False,
         "Out = X[0][:, s:s+l] + X[1][:, s:s+l] + ..., for the column range of start_index "
         "s (negative counts from the end) and length l (-1: to the end).")):
    def_op(_type, inputs=["X[]"], outputs=["Out"], attrs=_PARTIAL_ATTRS,
           infer_shape=_partial_infer,
           grad=grad_maker(_type + "_grad", inputs=["X"], out_grads=["Out"], in_grads=["X"]),
           kernel=_kernel, doc=_doc)
    def_op(_type + "_grad", inputs=["X[]", "Out@GRAD"], outputs=["X@GRAD[]"],
           attrs=_PARTIAL_ATTRS, infer_shape=_grads_like_x, kernel=_partial_grad(_type, _split),
           doc=f"Gradient of {_type}: each X@GRAD is dOut's part in the column range, 0 "
               f"elsewhere.")
