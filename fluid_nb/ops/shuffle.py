"""``shuffle_batch``: the rows of X (every dim but the last) in a random order, reproducible
from a seed that is passed on from batch to batch."""
import math

import numpy as np

from ..framework.registry import def_op, grad_maker
from ..tensor.dtypes import VarType
from ..tensor.transfer import host_scalar


def _infer(ctx):
    x = list(ctx.input_shape("X"))
    ctx.check(len(x) >= 1, "input 'X'", "rank >= 1", x)
    rows = -1 if any(d < 0 for d in x[:-1]) else math.prod(x[:-1])
    ctx.set_output("Out", x, ctx.input_dtype("X"))
    ctx.set_output("ShuffleIdx", [rows], VarType.INT64)
    ctx.set_output("SeedOut", [1], VarType.INT64)


def _shuffle_batch(ctx, x, seed):
    xp = ctx.xp
    start = int(host_scalar(seed)) if seed is not None and seed.size else 0
    start = start or ctx.attrs["startup_seed"]
    state = np.random.RandomState(start % (2 ** 32)) if start else ctx.random_state("")
    rows = x.reshape(-1, x.shape[-1]) if x.ndim else x.reshape(1, 1)
    order = state.permutation(rows.shape[0]).astype("int64")
    next_seed = np.array([state.randint(1, 2 ** 31 - 1)], dtype="int64")
    index = xp.asarray(order)
    return rows[index].reshape(x.shape), index, xp.asarray(next_seed)


def _shuffle_batch_grad(ctx, index, dout):
    rows = dout.reshape(-1, dout.shape[-1])
    dx = ctx.xp.empty_like(rows)
    dx[index] = rows
    return dx.reshape(dout.shape)


def_op("shuffle_batch", inputs=["X", "Seed?"], outputs=["Out", "ShuffleIdx", "SeedOut"],
       attrs={"startup_seed": ("int", 0)}, infer_shape=_infer,
       grad=grad_maker("shuffle_batch_grad", outputs=["ShuffleIdx"], out_grads=["Out"],
                       in_grads=["X"]),
       kernel=_shuffle_batch, traits=("stateful",),
       host_reads="Seed: the random stream is drawn on the host",
       doc="Out[i] = X[ShuffleIdx[i]] over the rows of X (all dims but the last), "
           "ShuffleIdx a random permutation drawn from the Seed input's value (else "
           "startup_seed, else the program's stream); SeedOut is the seed for the next "
           "batch.")
def_op("shuffle_batch_grad", inputs=["ShuffleIdx", "Out@GRAD"], outputs=["X@GRAD"],
       infer_shape=lambda ctx: ctx.set_output("X@GRAD", ctx.input_shape("Out@GRAD"),
                                              ctx.input_dtype("Out@GRAD")),
       kernel=_shuffle_batch_grad,
       doc="X@GRAD[ShuffleIdx[i]] = Out@GRAD[i]: the rows put back in their places.")
