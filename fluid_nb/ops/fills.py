"""Ops that write given values: ``fill`` (a list of values in a shape), ``fill_zeros_like2``
(zeros like X, of a chosen data type) and ``seed`` (a seed for random ops downstream)."""
import math

from ..framework.registry import def_op, no_gradient
from ..tensor.dtypes import VarType, convert_dtype, to_numpy_dtype


def _fill_infer(ctx):
    shape = list(ctx.attr("shape"))
    values = ctx.attr("value")
    ctx.check(all(d >= 0 for d in shape), "attribute 'shape'", "dims >= 0", shape)
    ctx.check(len(values) == math.prod(shape), "attribute 'value'",
              f"{math.prod(shape)} values (the product of shape {shape})", len(values))
    ctx.set_output("Out", shape, convert_dtype(ctx.attr("dtype")))


def _fill(ctx):
    attrs = ctx.attrs
    values = ctx.xp.asarray(attrs["value"], dtype="float64")
    return values.astype(to_numpy_dtype(attrs["dtype"])).reshape(attrs["shape"])


def_op("fill", outputs=["Out"],
       attrs={"value": ("floats", []), "shape": ("ints", []),
              "dtype": ("int", int(VarType.FP32)), "force_cpu": ("bool", False)},
       infer_shape=_fill_infer, grad=no_gradient, kernel=_fill,
       doc="Out = the ``value`` list in row-major order, of shape ``shape`` and data type "
           "``dtype``.")


def _zeros_like2_infer(ctx):
    dtype = ctx.attr("dtype")
    ctx.set_output("Out", ctx.input_shape("X"),
                   ctx.input_dtype("X") if dtype < 0 else convert_dtype(dtype))


def _zeros_like2(ctx, x):
    dtype = ctx.attrs["dtype"]
    return ctx.xp.zeros(x.shape, dtype=x.dtype if dtype < 0 else to_numpy_dtype(dtype))


def_op("fill_zeros_like2", inputs=["X"], outputs=["Out"],
       attrs={"dtype": ("int", int(VarType.FP32))},
       infer_shape=_zeros_like2_infer, share_lod=("X", ["Out"]), grad=no_gradient,
       kernel=_zeros_like2, doc="Out = zeros of X's shape, of data type ``dtype``.")


def _seed(ctx):
    seed = ctx.attrs["seed"]
    if seed == 0:  # no seed given: a fresh one, as Paddle draws from its random device
        seed = int(ctx.random_state(seed_attr="").randint(1, 2 ** 31 - 1))
    return ctx.xp.asarray([seed], dtype="int32")


def_op("seed", outputs=["Out"], attrs={"seed": ("int", 0)},
       infer_shape=lambda ctx: ctx.set_output("Out", [1], VarType.INT32), grad=no_gradient,
       kernel=_seed, traits=("stateful",),
       doc="Out = [seed] (int32), or a freshly drawn seed when ``seed`` is 0: the Seed input "
           "of a dropout downstream.")
