"""``gather_tree``: the full sequences of a beam search, traced back from its last step
through each step's parent beams."""
import numpy as np

from ..errors import InvalidArgument, expected
from ..framework.registry import def_op, no_gradient


def _gather_tree(ctx, ids, parents):
    xp = ctx.xp
    ids_values, parent_values = ids, parents
    if ids_values.shape != parent_values.shape or ids_values.ndim != 3:
        raise InvalidArgument(expected("gather_tree", "Ids and Parents",
                                       "two tensors of one shape [time, batch, beam]",
                                       f"{list(ids_values.shape)} and "
                                       f"{list(parent_values.shape)}"))
    steps, batch, beam = ids_values.shape
    out = xp.empty_like(ids_values)
    if steps == 0:
        return out
    out[-1] = ids_values[-1]
    parent = parent_values[-1]
    for t in range(steps - 2, -1, -1):
        if xp is np:  # checked on the host only: a device would copy the parents every step
            if parent.size and (parent.min() < 0 or parent.max() >= beam):
                raise InvalidArgument(expected("gather_tree", f"Parents at step {t + 1}",
                                               f"beam indices in [0, {beam})",
                                               f"{int(parent.min())}..{int(parent.max())}"))
        else:  # a device keeps a bad parent inside the beam rather than read out of bounds
            parent = xp.clip(parent, 0, beam - 1)
        out[t] = xp.take_along_axis(ids_values[t], parent, axis=1)
        parent = xp.take_along_axis(parent_values[t], parent, axis=1)
    return out


def_op("gather_tree", inputs=["Ids", "Parents"], outputs=["Out"],
       infer_shape=lambda ctx: ctx.set_output("Out", ctx.input_shape("Ids"),
                                              ctx.input_dtype("Ids")),
       grad=no_gradient, kernel=_gather_tree,
       doc="Out[T-1] = Ids[T-1]; going back, Out[t, b, k] = Ids[t, b, p] where p is the "
           "parent (Parents[t+1]) of the beam Out[t+1, b, k] came from: each beam's whole "
           "sequence. Ids, Parents, Out: [time, batch, beam].")
