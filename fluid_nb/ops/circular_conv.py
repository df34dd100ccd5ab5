"""``conv_shift``: the circular convolution of each row of X with the matching row of a
short odd-length kernel Y (a soft shift of X, as in Neural Turing Machines)."""
from ..framework.infer import dims_match
from ..framework.registry import def_op, grad_maker, grads_like


def _infer(ctx):
    x, y = list(ctx.input_shape("X")), list(ctx.input_shape("Y"))
    ctx.check(len(x) == 2, "input 'X'", "rank 2 ([B, M])", x)
    ctx.check(len(y) == 2 and dims_match(y[0], x[0]), "input 'Y'", f"shape [{x[0]}, N]", y)
    if y[1] >= 0:
        ctx.check(y[1] % 2 == 1, "input 'Y' dim 1", "odd", y[1])
        ctx.check(x[1] < 0 or y[1] <= x[1], "input 'Y' dim 1", f"at most X's dim 1 ({x[1]})",
                  y[1])
    ctx.set_output("Out", x, ctx.input_dtype("X"))


def _positions(xp, m, n):
    """[M, N]: the column of X that Y[:, j] meets at output column i."""
    half = (n - 1) // 2
    return (xp.arange(m)[:, None] + xp.arange(n)[None, :] - half) % m


def _conv_shift(ctx, x, y):
    idx = _positions(ctx.xp, x.shape[1], y.shape[1])
    return (x[:, idx] * y[:, None, :]).sum(axis=2).astype(x.dtype, copy=False)


def _conv_shift_grad(ctx, x, y, dout):
    xp = ctx.xp
    m, n = x.shape[1], y.shape[1]
    idx = _positions(xp, m, n)
    dx = dy = None
    if ctx.wants("X@GRAD"):
        # dX[:, k] = sum of dOut[:, i] Y[:, j] over the (i, j) that read column k
        meets = (idx[:, :, None] == xp.arange(m)[None, None, :]).astype(x.dtype)
        dx = xp.einsum("bi,bj,ijk->bk", dout, y, meets).astype(x.dtype, copy=False)
    if ctx.wants("Y@GRAD"):
        dy = (dout[:, :, None] * x[:, idx]).sum(axis=1).astype(y.dtype, copy=False)
    return dx, dy


def_op("conv_shift", inputs=["X", "Y"], outputs=["Out"], infer_shape=_infer,
       grad=grad_maker("conv_shift_grad", inputs=["X", "Y"], out_grads=["Out"],
                       in_grads=["X", "Y"]),
       kernel=_conv_shift,
       doc="Out[b, i] = sum_j X[b, (i + j - (N - 1) / 2) mod M] Y[b, j], X [B, M], Y [B, N] "
           "with N odd and N <= M.")
def_op("conv_shift_grad", inputs=["X", "Y", "Out@GRAD"], outputs=["X@GRAD?", "Y@GRAD?"],
       infer_shape=grads_like(**{"X@GRAD": "X", "Y@GRAD": "Y"}), kernel=_conv_shift_grad,
       doc="dX[b, k] = sum of dOut[b, i] Y[b, j] over (i, j) reading column k; dY[b, j] = "
           "sum_i dOut[b, i] X[b, (i + j - (N - 1) / 2) mod M].")
