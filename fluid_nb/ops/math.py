"""Arithmetic ops: elementwise with Paddle's axis broadcast, products, sums and reductions."""
from .common import elementwise_op

elementwise_op(
    "elementwise_add",
    forward=lambda xp, x, y: x + y,
    backward=lambda xp, x, y, out, dout, wx, wy: (dout, dout),
    doc="Out = X + Y (Y broadcast into X from dim ``axis``; -1 aligns the trailing dims).")
