"""The fed class ids and embedding ids a host build checks before a step runs.

Compiled kernels cannot raise in the middle of a step without leaving it half done (a
batch norm's running statistics, or a parameter an earlier run of ops updated, would have
changed), and a static build has no error channel, so they treat an id out of range as a
device does: a label is ignored, an embedding row is zeros. The interpreter on the host
refuses such an id with a typed error instead. For ids fed straight to an op that reads
them (the usual case: the ``label`` and ``words`` of a training step, read by a loss,
``lookup_table`` or ``one_hot``), a host build checks the feed before anything runs and
raises the interpreter's error, naming the first op in block order that would have raised
it; ids a program computes keep the device behaviour.
"""
import dataclasses
from typing import Optional

import numpy as np

from ...errors import InvalidArgument, expected

#: Paddle's kNoPadding: lookup_table's padding_idx when no id is padding
_NO_PADDING = -1


@dataclasses.dataclass(frozen=True)
class IdRange:
    """Feed ``name`` holds ids an op reads in slot ``slot``: each must lie in ``[0, size)``
    or equal ``also`` (an ignore_index or padding_idx; None: no such value). ``op_type``:
    the op the interpreter's error names."""
    name: str
    op_type: str
    slot: str
    size: int
    also: Optional[int]
    wanted: str  # the range as the interpreter's error states it

    def first_bad(self, array):
        """The first id of ``array`` out of range (in storage order), or None."""
        ids = np.asarray(array).reshape(-1)
        if not ids.size or (int(ids.min()) >= 0 and int(ids.max()) < self.size):
            return None
        bad = (ids < 0) | (ids >= self.size)
        if self.also is not None:
            bad &= ids != self.also
        return int(ids[bad][0]) if bad.any() else None

    def check(self, array):
        """Raise the interpreter's InvalidArgument when ``array`` holds an id out of range."""
        bad = self.first_bad(array)
        if bad is not None:
            raise InvalidArgument(expected(self.op_type, self.slot, self.wanted, bad))


def _cross_entropy(op, size_of, probabilities):
    if op.attrs.get("soft_label"):
        return None
    axis = op.attrs.get("axis", -1) if op.type.startswith("softmax") else -1
    classes, ignore = size_of(op.inputs[probabilities][0], axis), \
        int(op.attrs.get("ignore_index", -100))
    if classes is None:
        return None
    return ("Label", classes, ignore, f"class ids in [0, {classes}) or ignore_index {ignore}",
            op.type)


def _lookup(op, size_of):
    rows = size_of(op.inputs["W"][0], 0)
    if rows is None:
        return None
    padding = int(op.attrs.get("padding_idx", _NO_PADDING))
    return ("Ids", rows, None if padding == _NO_PADDING else padding,
            f"values in [0, {rows})", op.type)


def _one_hot(op, size_of):
    depth = int(op.attrs.get("depth", -1))
    if op.attrs.get("allow_out_of_range") or op.inputs.get("depth_tensor") or depth <= 0:
        return None
    # (both versions' kernel is one_hot_v2's, and its error names it)
    return "X", depth, None, f"values in [0, {depth})", "one_hot_v2"


#: op type -> (op, size_of) -> (slot, size, also, wanted, the op the error names) or None
_READERS = {
    "softmax_with_cross_entropy": lambda op, size_of: _cross_entropy(op, size_of, "Logits"),
    "cross_entropy": lambda op, size_of: _cross_entropy(op, size_of, "X"),
    "cross_entropy2": lambda op, size_of: _cross_entropy(op, size_of, "X"),
    "lookup_table": _lookup,
    "lookup_table_v2": _lookup,
    "one_hot": _one_hot,
    "one_hot_v2": _one_hot,
}


def fed_id_ranges(block, feed_names, shapes, dynamic=False):
    """The IdRange of each fed name an op of ``block`` reads as ids, in block order (the
    first that fails is the op the interpreter would raise at), whichever ops compiled.
    ``shapes``: {name: (shape, dtype)} of the trace run; in a build whose sizes are read at
    run time (``dynamic``) only a size the program declares is taken."""
    def size_of(name, axis):
        traced = shapes.get(name, ((), None))[0]
        if not -len(traced) <= axis < len(traced):
            return None
        if dynamic:
            var = block._find_var_recursive(name)
            declared = tuple(var.shape) if var is not None else ()
            if len(declared) != len(traced) or declared[axis] < 0:
                return None
        return int(traced[axis])

    ranges = []
    fed = set(feed_names)
    written = {n for op in block.ops for args in op.outputs.values() for n in args}
    for op in block.ops:
        reader = _READERS.get(op.type)
        found = reader(op, size_of) if reader is not None else None
        if found is None:
            continue
        slot, size, also, wanted, where = found
        names = op.inputs.get(slot) or ()
        name = names[0] if len(names) == 1 else None
        if name is None or name not in fed or name in written:
            continue
        if np.dtype(shapes[name][1]).kind not in "iu":
            continue  # the op's own checks refuse it
        ranges.append(IdRange(name, where, slot, size, also, wanted))
    return tuple(ranges)
