"""``minus``: the difference of two tensors of one shape (the op before elementwise_sub)."""
from ..framework.infer import dims_match
from ..framework.program import EMPTY_VAR_NAME
from ..framework.registry import def_op


def _infer(ctx):
    x, y = list(ctx.input_shape("X")), list(ctx.input_shape("Y"))
    ctx.check(len(x) == len(y) and all(dims_match(a, b) for a, b in zip(x, y)), "input 'Y'",
              f"the shape of X {x}", y)
    ctx.set_output("Out", x, ctx.input_dtype("X"))


def _grad(g):
    """dX = dOut and dY = -dOut, each a scale op (no grad op of its own, as in Fluid)."""
    ops = []
    for slot, factor in (("X", 1.0), ("Y", -1.0)):
        names = g.input_grad(slot)
        if names and names[0] != EMPTY_VAR_NAME:
            ops.append(g.op("scale", {"X": g.output_grad("Out")}, {"Out": names},
                            {"scale": factor, "bias": 0.0, "bias_after_scale": True}))
    return ops


def_op("minus", inputs=["X", "Y"], outputs=["Out"], infer_shape=_infer,
       share_lod=("X", ["Out"]), grad=_grad, kernel=lambda ctx, x, y: x - y,
       doc="Out = X - Y (X and Y of one shape).")
