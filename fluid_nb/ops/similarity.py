"""Similarity op family: ``cos_sim``, the cosine similarity of matching rows."""
from ..framework.infer import dims_match
from ..framework.registry import def_op


def _rows(a):
    """``a`` as [rows, features]: every dimension after the first is one feature axis."""
    return a.reshape(a.shape[0], -1)


def _cos_sim(ctx, x, y):
    xp = ctx.xp
    x2, y2 = _rows(x), _rows(y)
    x_norm = xp.sqrt((x2 * x2).sum(axis=1, keepdims=True))
    y_norm = xp.sqrt((y2 * y2).sum(axis=1, keepdims=True))
    # a one-row Y broadcasts against every row of X
    out = (x2 * y2).sum(axis=1, keepdims=True) / (x_norm * y_norm)
    return out.astype(x.dtype, copy=False), x_norm, y_norm


def _cos_sim_grad(ctx, x, y, x_norm, y_norm, out, d_out):
    """d out / d x = y / (|x| |y|) - out * x / |x|^2 (and symmetrically for y); a broadcast
    Y sums its gradient over the rows of X."""
    x2, y2 = _rows(x), _rows(y)
    d_x = d_y = None
    if ctx.wants("X@GRAD"):
        d_x = (d_out * (y2 / (x_norm * y_norm) - out * x2 / (x_norm * x_norm)))
        d_x = d_x.reshape(x.shape).astype(x.dtype, copy=False)
    if ctx.wants("Y@GRAD"):
        d_y = d_out * (x2 / (x_norm * y_norm) - out * y2 / (y_norm * y_norm))
        if y2.shape[0] != x2.shape[0]:
            d_y = d_y.sum(axis=0, keepdims=True)
        d_y = d_y.reshape(y.shape).astype(y.dtype, copy=False)
    return d_x, d_y


def _check_pair(ctx):
    x, y = ctx.input_shape("X"), ctx.input_shape("Y")
    ctx.check(len(x) >= 2, "input 'X'", "rank >= 2", list(x))
    ctx.check(len(x) == len(y) and all(dims_match(a, b) for a, b in zip(x[1:], y[1:])),
              "input 'Y'", f"the shape of X {list(x)} after dim 0", list(y))
    ctx.check(dims_match(y[0], x[0]) or y[0] == 1, "input 'Y' dim 0",
              f"X's dim 0 ({x[0]}) or 1", y[0])
    return x, y


def _cos_sim_infer(ctx):
    x, y = _check_pair(ctx)
    dtype = ctx.input_dtype("X")
    ctx.set_output("Out", (x[0], 1), dtype)
    for slot, rows in (("XNorm", x[0]), ("YNorm", y[0])):
        if ctx.has_output(slot):
            ctx.set_output(slot, (rows, 1), dtype)


def _cos_sim_grad_infer(ctx):
    for slot in ("X", "Y"):
        if ctx.has_output(slot + "@GRAD"):
            ctx.set_output(slot + "@GRAD", ctx.input_shape(slot), ctx.input_dtype(slot))


def _cos_sim_grad_maker(g):
    return [g.op("cos_sim_grad",
                 {"X": g.input("X"), "Y": g.input("Y"), "XNorm": g.output("XNorm"),
                  "YNorm": g.output("YNorm"), "Out": g.output("Out"),
                  "Out@GRAD": g.output_grad("Out")},
                 {"X@GRAD": g.input_grad("X"), "Y@GRAD": g.input_grad("Y")})]


_cos_sim_grad_maker.grad_type = "cos_sim_grad"

def_op("cos_sim",
       inputs=["X", "Y"], outputs=["Out", "XNorm!", "YNorm!"],
       infer_shape=_cos_sim_infer, share_lod=("X", ["Out"]), grad=_cos_sim_grad_maker,
       kernel=_cos_sim,
       doc="Out[i] = <X[i], Y[i]> / (|X[i]| |Y[i]|) over all dims after the first ([N, 1]); "
           "a Y of one row is used for every row of X. XNorm = |X[i]|, YNorm = |Y[j]|.")

def_op("cos_sim_grad",
       inputs=["X", "Y", "XNorm", "YNorm", "Out", "Out@GRAD"], outputs=["X@GRAD", "Y@GRAD"],
       infer_shape=_cos_sim_grad_infer, kernel=_cos_sim_grad, traits=("optional_outputs",),
       doc="dX = dOut (Y / (|X||Y|) - Out X / |X|^2), dY = dOut (X / (|X||Y|) - Out Y / "
           "|Y|^2), summed over X's rows when Y was broadcast.")
