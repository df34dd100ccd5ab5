"""The arena's event log, read back: what happened to which block, during which op, for
which variable.

The C core appends a fixed-size record per change while ``arena.recording`` is on, stamped
with ``arena.tag``. A runner (the executor, a live session) sets the tag to the op it is
about to run (:meth:`Recorder.before`) and afterwards tells which variable each new array
is for (:meth:`Recorder.after`); reading the log joins the two, so an ``alloc`` event knows
its op and its variable.
"""
import struct
import weakref
from collections import namedtuple

import numpy as np

from .arena import _module

__all__ = ["Event", "EVENT_KINDS", "Recorder", "parse_events"]

#: the C record: address, size, requested, used after, kind, tag (little-endian, 40 bytes)
EVENT_FORMAT = struct.Struct("<QQQQii")

#: kind number -> name, in the C core's order
EVENT_KINDS = ("alloc", "free", "split", "merge", "chunk", "release", "huge_alloc",
               "huge_free")

#: tag of changes made outside any op (feeding, fetching, the user's own arrays)
NO_OP = -1


class Event(namedtuple("Event", "kind address size requested used op variable")):
    """One change of the arena. ``size``: the block's bytes (a chunk's for ``chunk`` and
    ``release``); ``requested``: what the caller asked for (alloc events); ``used``: the
    arena's used bytes after it; ``op``: ``(op type, block index, op index)`` of the op
    that ran, or None; ``variable``: the variable an alloc's block ended up holding, or
    None (a kernel's temporary)."""

    __slots__ = ()


def parse_events(raw):
    """``[(kind, address, size, requested, used, tag)]`` of packed C records."""
    return [(EVENT_KINDS[kind], address, size, requested, used, tag)
            for address, size, requested, used, kind, tag in EVENT_FORMAT.iter_unpack(raw)]


class Recorder:
    """Tags the arena's events with the op running and names the blocks its outputs hold.

    ``before(op)`` stamps the coming events with the op's tag; ``after(op, values)``
    takes ``{variable name: value}`` of the op's outputs and remembers which block each
    array lies in. ``events()`` drains the arena's log into :class:`Event` records.
    """

    def __init__(self, arena):
        self.arena = arena
        # id(op) -> (weak reference to the op, tag): weak, so recording keeps no program
        # (and no scope) alive
        self._tags = {}
        self._ops = []        # tag -> (op type, block index, op index)
        self._names = {}      # (tag, block address) -> variable name
        self._log = []
        #: events the arena could not log (its log was full: FLAGS_memory_event_limit)
        self.dropped = 0

    def tag_of(self, op):
        known = self._tags.get(id(op))
        if known is not None and known[0]() is op:
            return known[1]
        if len(self._tags) > 1 << 16:  # ops that died leave entries behind
            self._tags = {key: entry for key, entry in self._tags.items()
                          if entry[0]() is not None}
        tag = len(self._ops)
        self._tags[id(op)] = (weakref.ref(op), tag)
        block = getattr(op, "block", None)
        self._ops.append((op.type, getattr(block, "idx", 0), _index_in(block, op)))
        return tag

    def before(self, op):
        self.arena.tag = self.tag_of(op)

    def before_new(self, op):
        """``before`` for an op seen once (a live cell's): a tag of its own, not cached."""
        ops = self._ops
        block = op.block
        self.arena.tag = len(ops)
        ops.append((op.type, block.idx, _index_in(block, op)))

    def after(self, op, values):
        tag, names = self.arena.tag, self._names
        for name, value in values:
            array = getattr(value, "array", None)  # the common case: a tensor's array
            if array.__class__ is np.ndarray:
                names[(tag, _address_of(array))] = name
                continue
            for array in arrays_in(value):
                names[(tag, data_address(array))] = name
        self.arena.tag = NO_OP

    def events(self):
        """The events recorded since the last call (oldest first)."""
        self._take()
        log, self._log = self._log, []
        return log

    def _take(self):
        raw, dropped = self.arena.take_events()
        self.dropped += dropped
        taken = []
        # newest first: within one op a block may be a temporary freed and handed out
        # again; only its last alloc is the block the variable kept
        for kind, address, size, requested, used, tag in reversed(parse_events(raw)):
            op = self._ops[tag] if 0 <= tag < len(self._ops) else None
            variable = self._names.pop((tag, address), None) \
                if kind in ("alloc", "huge_alloc") else None
            taken.append(Event(kind, address, size, requested, used, op, variable))
        taken.reverse()
        self._log.extend(taken)
        self._names.clear()


def _index_in(block, op):
    """The op's index in its block as the user's program numbers it: a block an executor
    copied and gave ``ops_prepended`` ops of its own (feeds) counts those negative."""
    ops = getattr(block, "ops", None)
    if not ops:
        return -1
    shift = block.ops_prepended
    if ops[-1] is op:
        return len(ops) - 1 - shift
    for index, candidate in enumerate(ops):
        if candidate is op:
            return index - shift
    return -1


def _address_of(array):
    global _address_of
    _address_of = _module().data_address  # bound once the C module is loaded
    return _address_of(array)


def arrays_in(value):
    """The arrays a holder's value keeps: a tensor's, a SelectedRows' values, an array of
    tensors' (nested lists of them), a bare array's."""
    if value is None:
        return ()
    array = getattr(value, "array", None)
    if array is not None:
        return (array,)
    if isinstance(value, (list, tuple)):
        return [a for item in value for a in arrays_in(item)]
    inner = getattr(value, "value", None)
    if inner is not None and hasattr(inner, "__array_interface__"):
        return (inner,)
    if hasattr(value, "__array_interface__"):
        return (value,)
    return ()


def data_address(array):
    """The address of the block an array's data starts in: its owner's data (a view's
    base owns the block). NumPy arrays only; CuPy's say it as ``data.ptr``; None for an
    array of another kind."""
    if array.__class__ is np.ndarray or isinstance(array, np.ndarray):
        return _address_of(array)
    pointer = getattr(array.data, "ptr", None)  # None: an array in no arena (the strict
    return pointer                              # device's, a foreign module's)
