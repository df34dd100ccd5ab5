"""``match_matrix_tensor``: per pair of sequences (X_i, Y_i), the bilinear match of every
row of X_i with every row of Y_i through each of dim_t matrices of W."""

from ..errors import InvalidArgument, expected
from ..framework.infer import dims_match
from ..framework.registry import def_op
from ..tensor.tensor import LoDTensor


def _infer(ctx):
    x, y, w = (list(ctx.input_shape(s)) for s in ("X", "Y", "W"))
    t = ctx.attr("dim_t")
    ctx.check(len(x) == 2 and len(y) == 2 and dims_match(x[1], y[1]), "inputs 'X', 'Y'",
              "[rows, h] each, of one h", f"{x} and {y}")
    ctx.check(len(w) == 3 and dims_match(w[0], x[1]) and dims_match(w[1], t)
              and dims_match(w[2], x[1]), "input 'W'", f"[{x[1]}, {t}, {x[1]}] ([h, dim_t, h])",
              w)
    dtype = ctx.input_dtype("X")
    ctx.set_output("Out", [-1, 1], dtype, lod_level=1)
    ctx.set_output("Tmp", [-1, 1], dtype)


def _pairs(where, x, y):
    """[(x rows, y rows)] of each sequence pair, by the last LoD level of each."""
    xo, yo = (t.lod()[-1] if t.lod() else None for t in (x, y))
    if xo is None or yo is None or len(xo) != len(yo):
        raise InvalidArgument(expected(where, "inputs 'X' and 'Y'",
                                       "LoD tensors with as many sequences",
                                       f"{x.lod()} and {y.lod()}"))
    return [((xo[i], xo[i + 1]), (yo[i], yo[i + 1])) for i in range(len(xo) - 1)]


def _match(ctx, x, y, w):
    xp = ctx.xp
    xa, ya, wa = x.array, y.array, w.array
    outs, tmps, offsets = [], [], [0]
    for (xb, xe), (yb, ye) in _pairs("match_matrix_tensor", x, y):
        tmp = xp.einsum("ap,ptq->atq", xa[xb:xe], wa)         # [lx, dim_t, h]
        out = xp.einsum("atq,bq->tab", tmp, ya[yb:ye])         # [dim_t, lx, ly]
        tmps.append(tmp.reshape(-1))
        outs.append(out.reshape(-1))
        offsets.append(offsets[-1] + out.size)
    dtype = xa.dtype
    out = xp.concatenate(outs).reshape(-1, 1) if outs else xp.zeros((0, 1), dtype)
    tmp = xp.concatenate(tmps).reshape(-1, 1) if tmps else xp.zeros((0, 1), dtype)
    return LoDTensor(out.astype(dtype, copy=False), [offsets]), LoDTensor(tmp.astype(dtype))


def _match_grad(ctx, x, y, w, dout):
    xp = ctx.xp
    xa, ya, wa, d = x.array, y.array, w.array, dout.array.reshape(-1)
    t = wa.shape[1]
    dx, dy, dw = xp.zeros_like(xa), xp.zeros_like(ya), xp.zeros_like(wa)
    at = 0
    for (xb, xe), (yb, ye) in _pairs("match_matrix_tensor_grad", x, y):
        xs, ys = xa[xb:xe], ya[yb:ye]
        size = t * (xe - xb) * (ye - yb)
        do = d[at:at + size].reshape(t, xe - xb, ye - yb)
        at += size
        dx[xb:xe] += xp.einsum("tab,ptq,bq->ap", do, wa, ys)
        dy[yb:ye] += xp.einsum("tab,ap,ptq->bq", do, xs, wa)
        dw += xp.einsum("tab,ap,bq->ptq", do, xs, ys)
    wants = ctx.wants
    return (LoDTensor(dx, x.lod()) if wants("X@GRAD") else None,
            LoDTensor(dy, y.lod()) if wants("Y@GRAD") else None,
            LoDTensor(dw) if wants("W@GRAD") else None)


def _grad_maker(g):
    return [g.op("match_matrix_tensor_grad",
                 {"X": g.input("X"), "Y": g.input("Y"), "W": g.input("W"),
                  "Out@GRAD": g.output_grad("Out")},
                 {"X@GRAD": g.input_grad("X"), "Y@GRAD": g.input_grad("Y"),
                  "W@GRAD": g.input_grad("W")})]


_grad_maker.grad_type = "match_matrix_tensor_grad"


def _grad_infer(ctx):
    for slot in ("X", "Y", "W"):
        if ctx.has_output(slot + "@GRAD"):
            ctx.set_output(slot + "@GRAD", ctx.input_shape(slot), ctx.input_dtype(slot),
                           lod_level=ctx.input_lod_level(slot))


def_op("match_matrix_tensor", inputs=["X", "Y", "W"], outputs=["Out", "Tmp!"],
       attrs={"dim_t": ("int", 1)}, infer_shape=_infer, grad=_grad_maker, kernel=_match,
       lod_aware=True,
       doc="For sequence pair i (X_i [lx, h], Y_i [ly, h]) and t < dim_t: M_i[t, a, b] = "
           "X_i[a] W[:, t, :] Y_i[b]^T; Out stacks each M_i flattened into one column, its "
           "LoD one sequence of dim_t * lx * ly values per pair. Tmp holds X_i W flattened.")
def_op("match_matrix_tensor_grad", inputs=["X", "Y", "W", "Out@GRAD"],
       outputs=["X@GRAD?", "Y@GRAD?", "W@GRAD?"], attrs={"dim_t": ("int", 1)},
       infer_shape=_grad_infer, kernel=_match_grad, lod_aware=True,
       doc="dX_i[a] = sum dM[t, a, b] W[:, t, :] Y_i[b]; dY_i[b] = sum dM[t, a, b] X_i[a] "
           "W[:, t, :]; dW[:, t, :] = sum over pairs of dM[t, a, b] X_i[a]^T Y_i[b].")

