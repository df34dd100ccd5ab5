"""One op's kernel run inside another's: a fused op of an inference program means a
composition of ops fluid_nb already has (``fusion_lstm`` is ``fc`` then ``lstm``), so its
kernel calls theirs, found in the registry, instead of writing their maths a second time.
"""
from ..framework.registry import get


class InnerContext:
    """What the inner op's kernel sees: the outer kernel's place and array module, and the
    inner op's own attributes (completed with its defaults and checked by its checkers)."""

    __slots__ = ("op", "attrs", "xp", "place", "cache")

    def __init__(self, outer, attrs):
        self.op = outer.op
        self.attrs = attrs
        self.xp = outer.xp
        self.place = outer.place
        self.cache = {}

    def wants(self, slot):
        return True


def run_kernel(ctx, op_type, *inputs, **attrs):
    """``op_type``'s kernel on ``inputs`` (as that kernel takes them: runtime tensors for a
    LoD-aware op, arrays otherwise) with attributes ``attrs``; returns what it returns."""
    opdef = get(op_type)
    complete, _ = opdef.complete_attrs(attrs)
    return opdef.kernel_for(ctx.place.device)(InnerContext(ctx, complete), *inputs)
