"""Comparison and logical ops: elementwise, bool output, no gradient.

Comparisons broadcast Y into X with Paddle's elementwise ``axis`` rule; logical ops broadcast
NumPy-style and treat any nonzero input as true. Each kernel is a pure function of its arrays
and attributes, so it is the op's plain kernel too (a live ``x < y`` appends and first runs
in C).
"""
import numpy as np

from ..tensor.tensor import LoDTensor
from ..tensor.dtypes import VarType
from .common import aligned, broadcast_shape
from ..framework.registry import def_op

#: Paddle compares floats for equality within this absolute tolerance
_EQUAL_EPS = 1e-8


def _equal(xp, x, y):
    if x.dtype.kind == "f" or y.dtype.kind == "f":
        # equal infinities match exactly; their difference (NaN) is never taken
        finite = xp.isfinite(x) & xp.isfinite(y)
        diff = xp.where(finite, x, 0) - xp.where(finite, y, 0)
        return (x == y) | (finite & (xp.abs(diff) < _EQUAL_EPS))
    return x == y


_COMPARISONS = {
    "less_than": ("X < Y", lambda xp, x, y: x < y),
    "less_equal": ("X <= Y", lambda xp, x, y: x <= y),
    "greater_than": ("X > Y", lambda xp, x, y: x > y),
    "greater_equal": ("X >= Y", lambda xp, x, y: x >= y),
    "equal": ("X == Y (floats: |X - Y| < 1e-8)", _equal),
    "not_equal": ("X != Y (floats: |X - Y| >= 1e-8)",
                  lambda xp, x, y: ~_equal(xp, x, y)),
}


def _binary_bool_infer(axis_attr):
    def infer(ctx):
        x, y = ctx.input_shape("X"), ctx.input_shape("Y")
        axis = ctx.attr("axis") if axis_attr else -1
        shape = x if tuple(x) == tuple(y) else broadcast_shape(ctx.op_type, x, y, axis)
        ctx.set_output("Out", shape, VarType.BOOL)
    return infer


def _comparison(type, formula, fn):
    def kernel(ctx, x, y):
        xa, ya = aligned(ctx.xp, x, y, ctx.attrs["axis"])
        return fn(ctx.xp, xa, ya)

    def host_step(ctx, ins, out, kernel_step):
        """Y aligned to X's trailing dims, as NumPy broadcasts (a loop's condition:
        counter < length); anything else goes to the kernel."""
        if ctx.attrs["axis"] != -1:  # the kernel aligns Y to X by the axis
            return kernel_step
        x_holder, y_holder = ins
        new = LoDTensor

        def step():
            x = x_holder.value
            try:
                out.value = new(fn(np, x.array, y_holder.value.array), x._lod)
            except Exception:  # no tensors, or no broadcast: the kernel says which
                kernel_step()
        return step

    def_op(type,
           inputs=["X", "Y"], outputs=["Out"],
           attrs={"axis": ("int", -1, lambda v: None if v >= -1 else "an int >= -1"),
                  "force_cpu": ("bool", False)},
           infer_shape=_binary_bool_infer(axis_attr=True), share_lod=("X", ["Out"]),
           kernel=kernel, plain_kernel=kernel, host_step=host_step,
           doc=f"Out = {formula}, elementwise (bool); Y broadcasts into X from dim ``axis`` "
               f"(-1 aligns the trailing dims). force_cpu only chooses the output's place in "
               f"Paddle. No gradient.")


for _type, (_formula, _fn) in _COMPARISONS.items():
    _comparison(_type, _formula, _fn)


def _logical(type, formula, fn):
    def kernel(ctx, x, y):
        return fn(ctx.xp, x, y)

    def_op(type,
           inputs=["X", "Y"], outputs=["Out"],
           infer_shape=_binary_bool_infer(axis_attr=False), share_lod=("X", ["Out"]),
           kernel=kernel, plain_kernel=kernel,
           doc=f"Out = {formula}, elementwise with NumPy broadcasting (bool; nonzero inputs "
               f"count as true). No gradient.")


_logical("logical_and", "X and Y", lambda xp, x, y: xp.logical_and(x, y))
_logical("logical_or", "X or Y", lambda xp, x, y: xp.logical_or(x, y))
_logical("logical_xor", "X xor Y", lambda xp, x, y: xp.logical_xor(x, y))

def _logical_not(ctx, x):
    return ctx.xp.logical_not(x)


def_op("logical_not",
       inputs=["X"], outputs=["Out"],
       infer_shape=lambda ctx: ctx.set_output("Out", ctx.input_shape("X"), VarType.BOOL),
       share_lod=("X", ["Out"]),
       kernel=_logical_not, plain_kernel=_logical_not,
       doc="Out = not X, elementwise (bool; nonzero counts as true). No gradient.")
