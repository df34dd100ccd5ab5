"""One arena per place, configured by Fluid's flags, and the public ``fluid.memory`` API.

The host's arena is a C buddy allocator (:mod:`fluid_nb.memory.arena`) that NumPy allocates
from while the executor runs, so the tensors of a program live in its chunks. Its shape
comes from the flags, as Paddle's CPU allocator's does:

- ``FLAGS_fraction_of_cpu_memory_to_use`` (default 1.0): the arena takes at most that
  fraction of the machine's physical memory from the system; past it a request fails with
  ``ResourceExhausted``;
- ``FLAGS_initial_cpu_memory_in_mb`` (default 500): the chunk size, rounded down to a power
  of two and at most a 32nd of the limit (Paddle's rule), so the default chunk is 256 MiB of
  address space, paged in only as it is used;
- ``FLAGS_use_system_allocator`` (default False): NumPy's own allocator instead;
- ``FLAGS_memory_event_limit`` (default 2**20): the most events the log keeps unread.

The arena keeps its chunks between runs (``release`` hands wholly free ones back). Changing
one of these flags gives the place a new arena from the next run on; the old one lives on
until the last array in it dies.
"""
import bisect
import inspect
import os
import sys

import numpy as np

from .. import flags
from ..errors import (InvalidArgument, InvalidType, NotFound, ResourceExhausted, Unimplemented,
                      expected)
from .arena import Arena
from .events import Recorder, arrays_in, data_address

__all__ = ["alloc", "free", "used", "peak", "reset_peak", "stats", "release", "blocks",
           "holders", "record_events", "events", "arena_of"]

#: the smallest block (and alignment) of the host arena: NumPy makes many small arrays
MIN_BLOCK = 256


class PlaceArena:
    """The arena of one place with its event recorder and the flags it was made from."""

    __slots__ = ("arena", "capsule", "recorder", "limit", "version", "given")

    def __init__(self, arena, limit, version):
        self.arena = arena
        #: the addresses ``alloc`` gave out and ``free`` has not taken back: the only
        #: blocks ``free`` takes (the others hold tensors)
        self.given = set()
        #: NumPy's handler capsule over the arena, made once (each keeps the arena alive)
        self.capsule = arena.handler
        self.recorder = Recorder(arena)
        self.limit = limit
        self.version = version


_host = [None]  # the host's PlaceArena (None: not made yet)
_system = object()  # _host's value while FLAGS_use_system_allocator is on
_last_host = [None]  # the last arena made: turning the system allocator off again finds it


def host_arena():
    """The host's PlaceArena for this run, or None with ``FLAGS_use_system_allocator``.
    Cheap when the flags have not changed: the executor asks on every run."""
    entry = _host[0]
    if entry is None or entry is _system or entry.version != flags.version[0]:
        entry = _host[0] = _configured(entry)
    return None if entry is _system else entry


def fresh_host_arena():
    """Give the host a new, empty arena from now on (the old one lives until its last
    array dies): for measuring one program's memory on its own."""
    _host[0] = _last_host[0] = None
    return host_arena()


def _configured(previous):
    version = flags.version[0]
    if flags.flag("FLAGS_use_system_allocator"):
        return _system
    chunk_size, limit = host_layout()
    if previous is _system or previous is None:
        previous = _last_host[0]
    if (previous is not None and previous.arena.chunk_size == chunk_size
            and previous.limit == limit):
        previous.version = version
        previous.arena.event_limit = _event_limit()
        return previous
    entry = PlaceArena(Arena(chunk_size=chunk_size, min_block=MIN_BLOCK, limit=limit),
                       limit, version)
    entry.arena.event_limit = _event_limit()
    if previous is not None:
        entry.arena.recording = previous.arena.recording
    _last_host[0] = entry
    return entry


def host_layout():
    """``(chunk_size, limit)`` in bytes from the flags (see the module's text; the flags
    module keeps their values in range). The limit is at least one byte: the arena
    reads 0 as "no limit", which no positive fraction means."""
    fraction = flags.flag("FLAGS_fraction_of_cpu_memory_to_use")
    initial_mb = flags.flag("FLAGS_initial_cpu_memory_in_mb")
    limit = max(1, int(fraction * physical_memory()))
    chunk = min(initial_mb << 20, max(limit // 32, MIN_BLOCK))
    return 1 << (chunk.bit_length() - 1), limit


def physical_memory():
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # not a POSIX system: assume 8 GiB
        return 8 << 30


def _event_limit():
    return flags.flag("FLAGS_memory_event_limit")  # in range: the flags module checks it


def _entry(place, where):
    """The arena of ``place`` (the check of every public function's place argument).
    Attributes are looked up statically: checking an argument runs none of its code."""
    device = inspect.getattr_static(place, "device", None)
    a_class = issubclass(type(place), type)  # CPUPlace without its ()
    if type(device) is not str or a_class:
        got = f"the class {place.__name__}" if a_class else type(place).__name__
        raise InvalidType(expected(f"fluid.memory.{where}", "place",
                                   "a place (fluid.CPUPlace() or fluid.CUDAPlace(i))", got))
    if device != "cpu":
        if type(inspect.getattr_static(place, "device_id", None)) is not int:
            raise Unimplemented(expected(
                f"fluid.memory.{where}", "place",
                "a place with an arena (only the host and CUDAPlaces have one)",
                f"a {type(place).__name__} on {device!r}"))
        from .device import device_arena  # imports CuPy: only for a CUDAPlace
        return device_arena(place)
    entry = host_arena()
    if entry is None:
        raise NotFound(expected(f"fluid.memory.{where}", "the host arena",
                                "an arena (FLAGS_use_system_allocator off)",
                                "FLAGS_use_system_allocator on: NumPy's own allocator"))
    return entry


# --- checking the public functions' arguments ------------------------------------------------
#: the types a size or an address may have (exactly: a subclass could run code of its own)
_INTEGERS = frozenset([int, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                       np.uint32, np.uint64, np.intc, np.uintc, np.longlong, np.ulonglong])


def _size(size, where):
    """``size`` as a byte count: an int (or NumPy integer) in [1, 2**63 - 1]."""
    if type(size) not in _INTEGERS:
        raise InvalidType(expected(where, "size", "an int >= 1 (bytes)", _shown(size)))
    size = int(size)
    if not 1 <= size <= sys.maxsize:
        raise InvalidArgument(expected(where, "size", f"an int >= 1 and at most {sys.maxsize} "
                                       "(bytes)", _shown(size)))
    return size


def _given(entry, address, where):
    """``address`` as one of the blocks ``alloc`` gave out from ``entry`` and not yet
    taken back: a tensor's block, a place inside a block or a block given back already
    is refused, and the refusal says which it is."""
    if type(address) not in _INTEGERS:
        raise InvalidType(expected(where, "address", "an int from fluid.memory.alloc",
                                   _shown(address)))
    address = int(address)
    if address not in entry.given:
        raise InvalidArgument(expected(where, "address", "the address of a block "
                                       "fluid.memory.alloc gave out and not yet freed",
                                       f"{_hex(address)} ({_what_is(entry.arena, address)})"))
    return address


def _what_is(arena, address):
    for start, size in arena.used_blocks():
        if start == address:
            return "a block holding an array's data"
        if start < address < start + size:
            return f"{address - start} bytes into a block at {_hex(start)}"
    return "no block in use of this place's arena"


def _scope(scope, where, optional=False):
    """``scope`` as a scope (a ``vars`` dict and a ``kids`` list), or None if optional."""
    if scope is None and optional:
        return None
    if not (type(inspect.getattr_static(scope, "vars", None)) is dict
            and type(inspect.getattr_static(scope, "kids", None)) is list):
        raise InvalidType(expected(where, "scope", "a fluid.Scope" + (" or None" if optional
                                                                        else ""),
                                   type(scope).__name__))
    return scope


def _hex(address):
    return hex(address) if address >= 0 else f"-{hex(-address)}"


#: the types whose repr a message may show (no code of the caller's runs)
_SHOWN = frozenset([int, float, bool, str, bytes, type(None), complex]) | _INTEGERS \
    | frozenset([np.float16, np.float32, np.float64, np.bool_])


def _shown(value):
    """A short description of an argument for a message: its repr where that is plain
    data, else its type's name."""
    kind = type(value)
    if kind not in _SHOWN:
        return f"a {kind.__name__} object"
    if kind is int and value.bit_length() > 64:  # repr refuses ints of > 4300 digits
        return f"an int of {value.bit_length()} bits"
    text = repr(value)
    text = text if len(text) <= 60 else text[:40] + f"... ({len(text)} characters)"
    return f"{text} ({kind.__name__})"


# --- the public API (the developer's guide's Alloc/Free/Used, and what views read) ----------
def alloc(place, size):
    """A block of at least ``size`` bytes from the place's arena: its address (an int).
    Blocks are ``2**k`` bytes (at least 256), aligned to their size within their chunk.
    Only the addresses alloc gives out can be given back with :func:`free`."""
    size = _size(size, "fluid.memory.alloc")
    entry = _entry(place, "alloc")
    if entry.limit and size > entry.limit:  # more than the arena may ever hold
        raise _exhausted(entry, size)
    try:
        address = entry.arena.alloc(size)
    except MemoryError:
        raise _exhausted(entry, size) from None
    entry.given.add(address)
    return address


def _exhausted(entry, size):
    return ResourceExhausted(expected(
        "fluid.memory.alloc", "memory", f"{size} bytes within the arena's limit "
        f"({entry.limit} bytes, FLAGS_fraction_of_cpu_memory_to_use)",
        f"{entry.arena.system_bytes} bytes taken from the system already"))


def free(place, address):
    """Give back the block at ``address``, which :func:`alloc` gave out and nothing has
    freed since; any other address (a tensor's block, a place inside a block, a block
    freed already) is refused, and the arena is left as it was."""
    entry = _entry(place, "free")
    address = _given(entry, address, "fluid.memory.free")
    entry.arena.free(address)
    entry.given.discard(address)


def used(place):
    """Bytes of the blocks handed out (each rounded up to its block's size)."""
    return _entry(place, "used").arena.used


def peak(place):
    """The largest :func:`used` since the arena was made or :func:`reset_peak`."""
    return _entry(place, "peak").arena.peak


def reset_peak(place):
    """Start measuring the peak from the bytes used now."""
    _entry(place, "reset_peak").arena.reset_peak()


def release(place):
    """Hand the wholly free chunks back to the system; returns the bytes released."""
    return _entry(place, "release").arena.release()


def stats(place):
    """The arena's state as a dict: ``chunk_size``, ``min_block``, ``chunks``,
    ``system_bytes`` (taken from the system), ``limit``, ``used``, ``peak``, ``free`` (free
    bytes in the chunks), ``largest_free`` (the largest free block), ``fragmentation``
    (``1 - largest_free / free``: how much of the free space no single request can use),
    ``used_blocks``, ``free_blocks``, ``huge_bytes`` (blocks larger than a chunk, from the
    system directly), ``allocs`` and ``frees`` (counts so far)."""
    entry = _entry(place, "stats")
    arena = entry.arena
    free_bytes, largest = arena.free_space()
    return {
        "chunk_size": arena.chunk_size, "min_block": arena.min_block,
        "chunks": arena.n_chunks, "system_bytes": arena.system_bytes,
        "limit": entry.limit, "used": arena.used, "peak": arena.peak,
        "free": free_bytes, "largest_free": largest,
        "fragmentation": 1.0 - largest / free_bytes if free_bytes else 0.0,
        "used_blocks": len(arena.used_blocks()), "free_blocks": len(arena.free_blocks()),
        "huge_bytes": arena.huge_bytes, "allocs": arena.allocs, "frees": arena.frees,
    }


def blocks(place, scope=None):
    """The block map: ``[(chunk, offset, size, state)]`` by chunk and offset, where
    ``chunk`` is the chunk's index (None for a block larger than a chunk) and ``state`` is
    ``"free"``, or the name of the variable of ``scope`` (and its kids) whose tensor lies
    in the block, or ``"used"`` when no variable of the scope holds it."""
    scope = _scope(scope, "fluid.memory.blocks", optional=True)
    arena = _entry(place, "blocks").arena
    bases = arena.chunks()
    names = _names_by_block(arena, scope) if scope is not None else {}
    out = []
    for kind, listing in (("free", arena.free_blocks()), ("used", arena.used_blocks())):
        for address, size in listing:
            chunk, offset = _locate(bases, arena.chunk_size, address)
            out.append((chunk, offset, size,
                        kind if kind == "free" else names.get(address, "used")))
    out.sort(key=lambda b: (b[0] is None, b[0] or 0, b[1]))
    return out


def holders(place, scope):
    """``[(variable name, bytes)]`` of the variables of ``scope`` (and its kids) whose
    tensors lie in the place's arena, the largest first."""
    scope = _scope(scope, "fluid.memory.holders")
    arena = _entry(place, "holders").arena
    sizes = dict(arena.used_blocks())
    held = {}
    for address, name in _names_by_block(arena, scope).items():
        held[name] = held.get(name, 0) + sizes.get(address, 0)
    return sorted(held.items(), key=lambda item: (-item[1], item[0]))


def record_events(place, on=True):
    """Switch the place's event log on or off (it starts off; live sessions turn it on).
    Returns whether it was on."""
    if type(on) not in (bool, np.bool_):
        raise InvalidType(expected("fluid.memory.record_events", "on", "a bool",
                                   _shown(on)))
    entry = _entry(place, "record_events")
    was = entry.arena.recording
    entry.arena.recording = bool(on)
    return was


def events(place):
    """The events recorded since the last call, oldest first: :class:`Event` records
    (``kind``, ``address``, ``size``, ``requested``, ``used``, ``op``, ``variable``)."""
    return _entry(place, "events").recorder.events()


def arena_of(place):
    """The place's C arena object (``used``, ``peak``, ``chunks()``, ``used_blocks()``,
    ``free_blocks()``, ``handler``, ...)."""
    return _entry(place, "arena_of").arena


# --- finding variables in blocks -------------------------------------------------------------
def _locate(bases, chunk_size, address):
    for index, base in enumerate(bases):
        if base <= address < base + chunk_size:
            return index, address - base
    return None, address


def _names_by_block(arena, scope):
    """block address -> the name of a variable of ``scope`` (or its kids) whose tensor
    lies in the block (the outermost scope's name, when several hold it)."""
    starts = [address for address, _ in arena.used_blocks()]
    sizes = dict(arena.used_blocks())
    found = {}
    for name, holder in _all_vars(scope):
        for array in arrays_in(getattr(holder, "value", None)):
            address = data_address(array)
            if address is None:
                continue
            at = bisect.bisect_right(starts, address) - 1
            if at >= 0 and address < starts[at] + sizes[starts[at]]:
                found.setdefault(starts[at], name)
    return found


def _all_vars(scope):
    stack = [scope]
    while stack:
        current = stack.pop()
        yield from current.vars.items()
        stack.extend(getattr(current, "kids", ()))
