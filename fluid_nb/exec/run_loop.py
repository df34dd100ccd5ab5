"""Running bound steps: the interpreter's core loop and the context of its errors.

``run_steps`` runs a block's steps in order (timing each op for a trace, telling the
arena's event recorder each op and the values it wrote). Whatever a step raises leaves
the loop as a typed error that names the op, where it was added and its inputs
(``op_error``): a kernel's own exception becomes ``InvalidArgument``, a ``MemoryError``
``ResourceExhausted`` with the size asked for, a read of an input with no value
``PreconditionNotMet``.
"""
import math
import time

import numpy as np

from ..errors import (FluidError, InvalidArgument, PreconditionNotMet, ResourceExhausted,
                      expected)
from ..memory import places as memory_places


def run_steps(prepared, steps, trace=None, watch=None, scope=None):
    """The interpreter's core loop: run each step; on failure name the op and its slots.
    The loop counts nothing: a failing step is found by identity afterwards (each op has
    a closure of its own; only ``_noop``, which cannot fail, is shared). ``trace`` gets
    ``(op, seconds)`` per op; ``watch`` (the arena's event recorder) is told each op
    before it runs and the values of its outputs in ``scope`` after."""
    step = None
    try:
        if trace is None and watch is None:
            for step in steps:
                step()
        elif watch is None:
            clock = time.perf_counter
            for p, step in zip(prepared.ops, steps):
                start = clock()
                step()
                trace.append((p.op, clock() - start))
        else:
            clock = time.perf_counter
            for p, step in zip(prepared.ops, steps):
                start = clock()
                watch.before(p.op)
                try:
                    step()
                finally:
                    watch.after(p.op, output_values(p.op, scope))
                if trace is not None:
                    trace.append((p.op, clock() - start))
    except Exception as exc:  # a FluidError, or a kernel's own failure
        failed = prepared.ops[_index_of(steps, step)]
        raise op_error(exc, failed.op, failed.index) from exc


def output_values(op, scope):
    """``[(name, value)]`` of the op's outputs found in ``scope``."""
    values = []
    if scope is not None:
        for names in op.outputs.values():
            for name in names:
                holder = scope.find_var(name)
                if holder is not None:
                    values.append((name, holder.value))
    return values


def with_holders(exc, place, scope):
    """``exc`` (memory ran out) with what holds the place's arena, the largest first."""
    try:
        held = memory_places.holders(place, scope)
    except FluidError:  # no arena on this place: nothing more to say
        return exc
    arena = memory_places.arena_of(place)
    listing = ", ".join(f"{name} ({_human_bytes(size)})" for name, size in held[:8])
    more = f" and {len(held) - 8} more" if len(held) > 8 else ""
    new = ResourceExhausted(
        f"{exc}; the arena holds {_human_bytes(arena.used)} in blocks (limit "
        f"{_human_bytes(memory_places.host_arena().limit)}, "
        f"FLAGS_fraction_of_cpu_memory_to_use), the largest holders: "
        f"{listing or 'none of the scope’s variables'}{more}")
    new._fluid_located = True
    return new


def _index_of(steps, step):
    for index, candidate in enumerate(steps):
        if candidate is step:
            return index
    raise AssertionError("run_steps: the failing step is not one of the block's steps")


def op_error(exc, op, index=None):
    """The typed error to raise for ``exc``, raised while ``op`` ran: a FluidError keeps its
    type, its message prefixed with where the op is (its type, block, index and the line
    that added it) unless it names the op already; a MemoryError becomes
    ResourceExhausted, an input read without a value PreconditionNotMet, any other
    exception InvalidArgument naming the op's inputs. An error already located is
    returned as it is. ``index`` is the op's position in its block (looked up when None)."""
    if getattr(exc, "_fluid_located", False):
        return exc
    if index is None:
        index = _position(op)
    where = f"op '{op.type}' (block {op.block.idx}, op {index})"
    if op.source is not None:
        where += f", added at {op.source[0]}:{op.source[1]}"
    shapes = ", ".join(f"{slot}={list(args)}" for slot, args in op.inputs.items())
    if isinstance(exc, FluidError):
        message = str(exc)
        if not message.startswith(op.type) and "op '" not in message:
            message = f"{where}: {message}"
        new = type(exc)(message)
    elif isinstance(exc, MemoryError):
        outputs = ", ".join(f"{slot}={list(args)}" for slot, args in op.outputs.items())
        new = ResourceExhausted(_memory_summary(f"{where} computing {outputs}", exc))
    elif isinstance(exc, AttributeError) and "'NoneType'" in str(exc):
        new = PreconditionNotMet(f"{where}: inputs expected to hold values, but one of "
                                 f"{shapes} is not initialised (was it fed or computed "
                                 f"earlier?)")
    else:
        new = InvalidArgument(f"{where}: kernel failed on inputs {shapes}: "
                              f"{type(exc).__name__}: {exc}")
    new._fluid_located = True
    return new


def _position(op):
    """``op``'s index in its block (the last op in live mode: looked at first)."""
    ops = op.block.ops
    if ops and ops[-1] is op:
        return len(ops) - 1
    for index, candidate in enumerate(ops):
        if candidate is op:
            return index
    return "?"


def _memory_summary(where, exc):
    """What a kernel asked for when memory ran out: bytes, shape and dtype where NumPy
    says them (its allocation error carries ``shape`` and ``dtype``), else its message."""
    shape, dtype = getattr(exc, "shape", None), getattr(exc, "dtype", None)
    if shape is None or dtype is None:
        return expected(where, "memory", "enough for the op's outputs",
                        f"MemoryError: {exc}")
    # plain ints: the arena that just ran out is still NumPy's allocator here
    size = math.prod(int(d) for d in shape) * np.dtype(dtype).itemsize
    return expected(where, "memory", "enough for the op's outputs",
                    f"a request of {size} bytes ({_human_bytes(size)}) for an array of shape "
                    f"{list(shape)} and dtype {np.dtype(dtype)}")


def _human_bytes(size):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.1f} {unit}" if unit != "B" else f"{size} B"
        size /= 1024
