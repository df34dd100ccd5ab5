"""The step flavours: builders of the no-argument callables the executor's loop runs.

Every builder takes the op's kernel ``fn``, its KernelContext and the holders of its
inputs and outputs (bound by :mod:`.binding`), and returns a step that reads the inputs'
values, calls ``fn(ctx, *inputs)`` and stores what it returns. ``general`` runs any op; the
others run one shape of op with less work per call, each kept for the gain it measured
on a named benchmark (noted where the binder picks it).

Storing follows one rule (``stored``): an array becomes a LoDTensor with the LoD of the
output's LoD source (see ``binding._lod_sources``), a runtime value (tensor array, rank
table, scopes) is stored as it is, and None leaves the output as it was.
"""
import sys

import numpy as np

from .. import c_parts
from ..framework import registry
from ..tensor.tensor import LoDTensor, LoDTensorArray, SelectedRows
from .scope import Scope, ScopeVariable

_RUNTIME_VALUES = (LoDTensor, LoDTensorArray, SelectedRows, list, Scope)

_steps = c_parts.load("fluid_nb.exec._steps", "the interpreter's C steps")


def noop():
    """The step of a marker op, or of an op none of whose outputs anyone needs."""


def releasing(step, dead):
    """``step``, then the ``dead`` holders emptied (temporaries at their last use)."""
    if not dead:
        return step

    def releasing_step():
        step()
        for h in dead:
            h.value = None
    return releasing_step


def lod_of(source):
    """The LoD a holder's value has (None for no holder or a value without LoD)."""
    return getattr(source.value, "_lod", None) or None if source is not None else None


def stored(value, lod=None):
    """What a holder keeps of a kernel's result: an array (or scalar) as a LoDTensor with
    ``lod`` (none when None), a LoDTensor without LoD of its own given ``lod``, any other
    runtime value (tensor array, rank table, scopes) as it is."""
    cls = value.__class__
    if lod is None and (cls is LoDTensor or cls is LoDTensorArray):  # the common results
        return value
    if cls is np.ndarray or not isinstance(value, _RUNTIME_VALUES):
        return LoDTensor(value, lod)
    if lod is not None and isinstance(value, LoDTensor) and not value._lod:
        return LoDTensor(value.array, lod)
    return value


# the C steps store what they do not make themselves through ``stored``
_steps.configure(LoDTensor, LoDTensorArray, ScopeVariable, np.ndarray, stored)


def general(fn, ctx, opdef, ins, outs, lod_sources, dead):
    """Any op: duplicable slots (lists of holders), several outputs, absent slots (None),
    runtime values in (``lod_aware`` kernels) or arrays. ``lod_sources``: output position ->
    the holder (a list, for a duplicable slot) whose LoD that output takes. Without
    duplicable slots (the usual case) a C step (``_steps.KernelStep``), else
    :func:`general_closure`."""
    stores = tuple((i, h, lod_sources.get(i)) for i, h in enumerate(outs) if h is not None)
    if any(h.__class__ is list for h in ins) or any(h.__class__ is list for _, h, _ in stores):
        return general_closure(fn, ctx, opdef, ins, outs, lod_sources, dead)
    return _steps.KernelStep(fn, ctx, tuple(ins), stores, tuple(dead), opdef.lod_aware,
                             len(outs) == 1)


def general_closure(fn, ctx, opdef, ins, outs, lod_sources, dead):
    """:func:`general`'s step in Python, for any op: what every C step is tested against."""
    lod_aware = opdef.lod_aware
    # outputs worth storing: (position in the result, holder or holder list, LoD source)
    stores = tuple((i, h, lod_sources.get(i)) for i, h in enumerate(outs) if h is not None)

    def read(h):  # a slot of an op with duplicable slots: None, a list or one holder
        if h is None:
            return None
        if h.__class__ is list:
            return [x.value for x in h] if lod_aware else [x.value.array for x in h]
        return h.value if lod_aware else h.value.array

    single = len(outs) == 1

    def step():
        result = fn(ctx, *[read(h) for h in ins])
        if single:
            result = (result,)
        for i, h, source in stores:
            value = result[i]
            if value is None:
                continue
            if h.__class__ is list:
                sources = source if source.__class__ is list else [source] * len(h)
                for hh, v, src in zip(h, value, sources):
                    if hh is not None and v is not None:
                        hh.value = stored(v, lod_of(src))
            else:
                h.value = stored(value, lod_of(source))
        for h in dead:
            h.value = None
    return step


def runtime(fn, ctx, a, out):
    """One runtime value in, one out with no LoD source, nothing to free (feed, fetch)."""
    return _steps.KernelStep(fn, ctx, (a,), ((0, out, None),), (), True, True)


def values(fn, ctx, ins, out):
    """Runtime values in (duplicable slots as lists), one output with no LoD source (tensor
    arrays, rank tables, LoD ops), stored as ``stored`` says; None leaves it as it was."""
    if len(ins) == 1 and ins[0].__class__ is list and len(ins[0]) == 2:
        (a, b), = ins  # two gradients meeting in a sum: one per step of a loop's grad body

        def step():
            value = fn(ctx, [a.value, b.value])
            if value is not None:
                out.value = stored(value)
        return step
    readers = tuple((h, h.__class__ is list) for h in ins)

    def step():
        value = fn(ctx, *[None if h is None else [x.value for x in h] if many else h.value
                          for h, many in readers])
        if value is not None:
            out.value = stored(value)
    return step


def arrays(fn, ctx, ins, outs, lod_sources, dead=()):
    """Arrays in (no duplicable slots; absent ones passed as None), several outputs (none a
    list), ``dead`` emptied after: the grad ops of plain ops. Output i takes the LoD of
    ``lod_sources[i]`` (none when absent); each result is kept as ``stored`` keeps it. A C
    step (``_steps.KernelStep``)."""
    stores = tuple((i, h, lod_sources.get(i)) for i, h in enumerate(outs) if h is not None)
    return _steps.KernelStep(fn, ctx, tuple(ins), stores, tuple(dead), False, False)


def plain(fn, ctx, ins, out, src, dead):
    """Arrays in (absent optional inputs only at the end, passed as None), one array out
    as a LoDTensor with ``src``'s LoD (none when ``src`` is None), ``dead`` emptied after:
    ``out.value = LoDTensor(fn(ctx, *arrays), src.value._lod)``. A C step
    (``_steps.PlainStep``): the bookkeeping of the commonest op shape, run per op."""
    present = tuple(h for h in ins if h is not None)
    return _steps.PlainStep(fn, ctx, present, len(ins) - len(present), out, src, tuple(dead))


#: ``plain_step(out, fn, ctx, src, *ins)``: what ``plain``'s step of these does (src None:
#: no LoD source; nothing to free), called once with no step made: a live op's first run
plain_step = _steps.plain_step
fast_run, configure_fetches = _steps.fast_run, _steps.configure_fetches

#: ``first_run(op, plan, values, set_handler, capsule)``: a live op's first run in one
#: call, its holders found by name in ``values``, through the plain step or the general one
#: (``exec/_steps.c``): the seconds the kernel took, or None when an input holds no
#: LoDTensor or an output is not the plan's
first_run = _steps.first_run

#: ``drop_unreachable(ops, block_vars, values, kinds, kind_of, lod_tensor, dropped, order,
#: first)``: a live session's look for values nobody holds, the walk of
#: ``OpRunner.drop_unreachable`` (``exec/_steps.c``)
drop_unreachable = _steps.drop_unreachable


def _array_step(reads):
    """The host step of read_from_array (``reads``) or write_to_array over the op's own
    (``ops/array_ops.py``): its common case (an int index on the host, tensors in a
    LoDTensorArray, a write to an array this run made) in C (``_steps.ArrayStep``), every
    other case the op's own step, called before anything is changed. A loop's reads and
    writes are 4 of W3's 25 ops a step."""
    def wrap(own_step):
        def host_step(ctx, ins, out, kernel_step):
            fallback = own_step(ctx, ins, out, kernel_step)
            executor = None if reads else ctx.executor
            if not reads and executor is None:
                return fallback
            x, index = ins
            return _steps.ArrayStep(x, index, out, executor, fallback)
        return host_step
    return wrap


registry.attach_host_step("read_from_array", _array_step(reads=True))
registry.attach_host_step("write_to_array", _array_step(reads=False))

#: ``LiveHook(session, ...)``: a live session's append hook, the common case of
#: ``LiveSession._on_main_op`` in C (``exec/_steps.c``)
LiveHook = _steps.LiveHook


def donating(inner, ctx, donors):
    """``inner`` with ``ctx.donated`` set first to the slots of ``donors`` ((input slot,
    holder) pairs) whose values nothing else holds: update ops (sgd, momentum, adam) then
    write those parameters in place, and adam its new parameter over a gradient that dies
    with it. ``Executor.run`` holds the old value of everything a run writes, to put it
    back if the run fails, so there an update writes new state arrays (W2's step peaks at
    9.3 MB of blocks where in place it took 5.4): all or nothing costs one copy of the
    optimizer state, less the parameters that take over their gradients' arrays."""
    nothing = frozenset()
    if len(donors) == 1:  # sgd: the usual case, without building a set per run
        (slot, holder), = donors
        only = frozenset((slot,))

        def donating_step():
            ctx.donated = only if sole_owner(holder) else nothing
            inner()
        return donating_step

    def donating_step():
        ctx.donated = frozenset([slot for slot, holder in donors if sole_owner(holder)])
        inner()
    return donating_step


def sole_owner(holder, also_held=0):
    """True when the holder's tensor and its array are held by nothing else (no other
    holder, view, fetched result or user reference; counted by reference counts: the
    holder's and this frame's for the tensor, the tensor's for the array) but the
    ``also_held`` references to the tensor the caller knows of (a run's undo log: one,
    for ``update_commit``), so writing the array changes nothing anyone else can see."""
    value = holder.value
    if value.__class__ is not LoDTensor or sys.getrefcount(value) != 3 + also_held:
        return False
    array = value.array
    return (array is not None and array.base is None and sys.getrefcount(array) == 3
            and array.flags.writeable)
