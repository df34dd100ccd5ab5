"""The Executor: runs a block's ops in order over a scope.

``run`` follows Fluid: it adds ``feed``/``fetch`` ops to a copy of the program (unless the
program already has them, as saved inference models do), creates persistable variables in
the given scope and temporaries in a local child scope whose values are dropped after the
run, runs the ops, and returns the fetched values.

Two stages keep repeated runs cheap:
- ``prepare(block)`` resolves each op's definition and kernel once (:class:`PreparedBlock`);
- ``bind(prepared, scope)`` turns it into a list of step closures that hold the scope's
  variable holders directly, so running an op is one Python call plus its kernel.
Block 0 plans are cached on the program, keyed by place, scope and feed/fetch names, and
dropped when the program changes (``program._version``). Sub-blocks (``while``,
``conditional_block``) reuse their PreparedBlock and bind it to each step scope.

A run is all or nothing: before its ops run, it takes the values of the holders outside
the run that they write (persistables, the feed and fetch lists: references, not copies);
if anything fails (an op's error, memory running out, a KeyboardInterrupt), they are put
back, so every persistable is as it was before the run. Holding the old values is also
what keeps update ops from writing them in place (``_sole_owner`` sees the extra holder):
they write new arrays, and the old ones go when the run ends.

On the host, NumPy allocates from the place's memory arena (:mod:`fluid_nb.memory`) for the
duration of a run, so every array a kernel makes lies in the arena's chunks; temporaries are
dropped at their last use (unless ``FLAGS_eager_delete_tensor_gb`` < 0). With the arena's
event log on, each op's allocations are tagged with the op and the variables they became.
"""
import math
import sys
import time

import numpy as np

from ..errors import (FluidError, InvalidArgument, InvalidType, NotFound, PreconditionNotMet,
                      ResourceExhausted, Unimplemented, expected)
from ..framework.attrs import AttrType
from ..tensor.dtypes import VarType, convert_dtype, to_numpy_dtype
from ..framework.program import (EMPTY_VAR_NAME, GRAD_SUFFIX, Program, Variable,
                                 default_main_program)
from ..framework import prune
from ..ops import registry
from .. import flags
from ..memory import places as memory_places
from ..memory.arena import set_handler
from . import collector
from ..tensor.place import CPUPlace
from .scope import Scope, ScopeVariable, global_scope
from ..tensor.tensor import LoDTensor, LoDTensorArray, SelectedRows, as_tensor, lossless_cast

_RUNTIME_VALUES = (LoDTensor, LoDTensorArray, SelectedRows, list, Scope)

#: counters tests read to prove work is not repeated
stats = {"plans_built": 0, "blocks_prepared": 0, "frames_bound": 0}


class KernelContext:
    """What a kernel sees besides its inputs: attributes, the array module, its place.

    Ops that run sub-blocks or touch the scope (feed, fetch, while) use ``scope``,
    ``executor`` and ``op``.
    """

    __slots__ = ("op", "attrs", "xp", "place", "executor", "scope", "_wanted", "program",
                 "cache", "unused", "donated")

    def __init__(self, op, place, executor, scope, wanted, unused=frozenset()):
        #: output names no later op of the run reads (temporaries dropped right after this
        #: op): an op running a sub-block need not produce them
        self.unused = unused
        #: per-op memo for values that depend on attributes alone (a constant's array)
        self.cache = {}
        #: input slots whose arrays the kernel may overwrite with their update (the op's
        #: ``in_place`` pairs whose input nothing else holds), set before each call
        self.donated = frozenset()
        self.op = op
        self.attrs = op.attrs
        self.place = place
        self.xp = place.xp
        self.executor = executor
        self.scope = scope
        self._wanted = wanted
        self.program = op.block.program

    def wants(self, slot):
        """True when the program binds output ``slot`` to a variable."""
        return slot in self._wanted

    def input_names(self, slot):
        return self.op.inputs.get(slot, [])

    def output_names(self, slot):
        return self.op.outputs.get(slot, [])

    def random_state(self, seed_attr="seed", seed=None):
        """A NumPy RandomState: from ``seed`` when given, else the op's ``seed`` attribute if
        non-zero, else the program's ``random_seed`` (advanced per call so repeated runs
        differ), else fresh entropy."""
        if seed is None:
            seed = (self.attrs.get(seed_attr, 0) or 0) if seed_attr else 0
        if seed:
            return np.random.RandomState(seed)
        program_seed = self.program.random_seed
        if program_seed:
            counter = getattr(self.program, "_seed_counter", 0)
            self.program._seed_counter = counter + 1
            return np.random.RandomState((program_seed * 1000003 + counter) % (2 ** 32))
        return np.random.RandomState()


class PreparedOp:
    __slots__ = ("op", "opdef", "kernel", "index")

    def __init__(self, op, opdef, kernel, index):
        self.op, self.opdef, self.kernel, self.index = op, opdef, kernel, index


class PreparedBlock:
    """A block's ops with definitions and kernels resolved; independent of any scope."""

    def __init__(self, block, place):
        self.block = block
        self.place = place
        self.ops = []
        device = place.device
        for index, op in enumerate(block.ops):
            opdef = registry.find(op.type)
            if opdef is None:
                raise Unimplemented(f"op '{op.type}' (block {block.idx}, op {index}): a "
                                    f"registered op type expected, but fluid_nb has no "
                                    f"definition for it, so the program cannot run; it can still "
                                    f"be inspected, saved and converted")
            self.ops.append(PreparedOp(op, opdef, opdef.kernel_for(device), index))
        self.version = block.program._version
        stats["blocks_prepared"] += 1


class Executor:
    """``Executor(place).run(program, feed, fetch_list, scope, return_numpy)``."""

    #: bind an op's host step, where it has one, instead of its kernel's step (a recorder
    #: that watches the kernel calls turns this off)
    host_steps = True

    #: a list to record (op, seconds) of each op run, or None: set on an executor, or on the
    #: class for every executor (what ``fluid.profiler`` does)
    trace = None

    def __init__(self, place=None):
        self.place = place if place is not None else CPUPlace()
        self._on_host = self.place.device == "cpu"
        #: a CUDAPlace: CuPy allocates from the device's arena during a run
        self._device_arena = getattr(self.place, "device_id", None) is not None
        self._place_key = repr(self.place)  # plain string: hashed in C on every run
        #: the arena's event recorder while a recording run is under way (else None):
        #: sub-blocks run by this executor tag their ops too
        self.watch = None
        self._prepared = {}  # id(block) -> (block, PreparedBlock) for sub-blocks
        #: a fresh object during each ``run``, None outside: values made in one run (a
        #: tensor array being filled step by step) may be updated in place within it
        self.run_token = None

    # --- pruning (Fluid's use_prune) -------------------------------------------------
    def _prune_program(self, program, feed=None, fetch_list=None, optimize_ops=None):
        """``program`` (or a CompiledProgram's program, in a copy of it) pruned to what
        ``fetch_list`` and ``optimize_ops`` need given ``feed``; every optimizer op of the
        program when ``optimize_ops`` is empty."""
        import copy
        origin = getattr(program, "_program", program)
        targets = list(fetch_list or []) + list(optimize_ops or [])
        if not optimize_ops:
            targets += [op for block in origin.blocks for op in block.ops
                        if prune.is_optimize_op(op)]
        pruned = origin._prune_with_input(prune.feed_names(feed), targets)
        if origin is program:
            return pruned
        compiled = copy.copy(program)
        compiled._program = pruned
        return compiled

    def _pruned(self, program, feed, fetch_list, optimize_ops, origin_fetch):
        """The pruned program for this program, feed and fetch list (made once, then
        cached until the program changes) and the feed it still takes."""
        program = default_main_program() if program is None else program
        source = getattr(program, "_program", program)
        key = prune.cache_key(program, feed, origin_fetch)
        cache = self.__dict__.setdefault("_pruned_programs", {})
        entry = cache.get(key)
        if entry is None or entry[0] is not program or entry[1] != source._version:
            if len(cache) > 64:
                cache.clear()
            entry = cache[key] = (program, source._version,
                                  self._prune_program(program, feed, fetch_list, optimize_ops))
        return entry[2], prune.feed_kept(getattr(entry[2], "_program", entry[2]), feed)

    # --- public -----------------------------------------------------------------------
    def run(self, program=None, feed=None, fetch_list=None, feed_var_name="feed",
            fetch_var_name="fetch", scope=None, return_numpy=True, use_program_cache=True,
            use_prune=False, **kwargs):
        """Run block 0 of ``program`` and return the values of ``fetch_list``.

        ``feed`` maps data variable names to arrays, LoDTensors or ``(array, lod)`` pairs;
        ``fetch_list`` holds Variables or names. With ``return_numpy=False`` the result is
        LoDTensors (with their LoD). With ``use_prune`` (or an optimizer op, or what
        ``minimize`` returns, in ``fetch_list``) only the ops the fetches need run, and
        variables of the ops left out are not created in the scope.
        """
        origin_fetch = fetch_list
        fetch_list, optimize_ops = prune.split_fetch_list(fetch_list)
        if use_prune or optimize_ops:
            program, feed = self._pruned(program, feed, fetch_list, optimize_ops, origin_fetch)
        paused = collector.pause()  # a run's objects die by reference counting
        if self._device_arena:
            try:
                return self._run_on_device(program, feed, fetch_list, feed_var_name,
                                           fetch_var_name, scope, return_numpy)
            finally:
                collector.resume(paused)
        arena = memory_places.host_arena() if self._on_host else None
        if arena is None:
            try:
                return self._run(program, feed, fetch_list, feed_var_name, fetch_var_name,
                                 scope, return_numpy)
            finally:
                collector.resume(paused)
        # NumPy allocates from the arena in this context for the run (NEP 49); arrays made
        # here give their blocks back to it whenever they die
        previous = set_handler(arena.capsule)
        if arena.arena.recording:
            self.watch = arena.recorder
        try:
            return self._run(program, feed, fetch_list, feed_var_name, fetch_var_name,
                             scope, return_numpy)
        finally:
            set_handler(previous)
            self.watch = None
            collector.resume(paused)

    def _run_on_device(self, *args):
        """A run on a CUDAPlace: CuPy allocates from the device's arena (the same buddy
        core as the host's, over cudaMalloc) for its duration."""
        from ..memory.device import allocating_on  # imports CuPy: only for a CUDAPlace
        with allocating_on(self.place) as entry:
            if entry.arena.recording:
                self.watch = entry.recorder
            try:
                return self._run(*args)
            finally:
                self.watch = None

    def _run(self, program, feed, fetch_list, feed_var_name, fetch_var_name, scope,
             return_numpy):
        program = default_main_program() if program is None else program
        if hasattr(program, "_executor_run"):  # a program compiled to native code
            return program._executor_run(self, feed, fetch_list, scope, return_numpy)
        compiled = hasattr(program, "_program")
        program = getattr(program, "_program", program)  # CompiledProgram
        if isinstance(feed, (list, tuple)):
            # one dict per place, as a DataLoader yields them; a plain program has one place
            if not compiled and len(feed) != 1:
                raise InvalidArgument(expected(
                    "Executor.run", "feed of a Program (not compiled for several places)",
                    "a dict, or a list of one dict", f"a list of {len(feed)}"))
            feed = _one_place_feed(feed)
        if not isinstance(program, Program):
            raise InvalidType(f"Executor.run: program expected Program, but received "
                              f"{type(program).__name__}")
        scope = global_scope() if scope is None else scope
        if not isinstance(scope, Scope):
            raise InvalidType(expected("Executor.run", "scope", "a Scope (or None for the "
                                           "global scope)", type(scope).__name__))
        feed = {} if feed is None else feed
        if not isinstance(feed, dict):
            raise InvalidType(f"Executor.run: feed expected a dict of name -> value, but "
                              f"received {type(feed).__name__}")
        for name in feed:
            if not isinstance(name, str):
                raise InvalidType(expected("Executor.run", "feed keys", "variable names "
                                               "(str)", f"{name!r} ({type(name).__name__})"))
        for what, name in (("feed_var_name", feed_var_name), ("fetch_var_name", fetch_var_name)):
            if not isinstance(name, str) or not name:
                raise InvalidArgument(expected("Executor.run", what, "a variable name (str)",
                                               repr(name)))
        fetch_names = _fetch_names(fetch_list)
        key = (self._place_key, id(scope), tuple(feed), fetch_names, feed_var_name,
               fetch_var_name, _memory_policy())
        entry = program._plans.get(key)
        if entry is None or entry[0] != program._version or entry[1] is not scope:
            entry = self._build_plan(program, scope, tuple(feed), fetch_names, feed_var_name,
                                     fetch_var_name)
            if len(program._plans) > 32:
                program._plans.clear()
            program._plans[key] = entry
        plan = entry[2]
        self.run_token = object()
        try:
            return plan.run(feed, return_numpy)
        finally:
            self.run_token = None

    #: called with the executor by ``close``: the distributed runtime adds the call that
    #: tells the parameter servers a trainer is done (Fluid's ``Executor::Close``)
    close_hooks = []

    def close(self):
        """Fluid's ``exe.close()``: a trainer tells its parameter servers that it is done
        (the hooks); there is nothing else to release."""
        for hook in Executor.close_hooks:
            hook(self)

    # --- plans ------------------------------------------------------------------------
    def _build_plan(self, program, scope, feed_names, fetch_names, feed_var_name,
                    fetch_var_name):
        version = program._version
        run_program = _with_feed_fetch(program, feed_names, fetch_names, feed_var_name,
                                       fetch_var_name)
        prepared = PreparedBlock(run_program.global_block(), self.place)
        local = scope.new_scope()
        scope.kids.remove(local)  # not a kid between runs: views see it only while it runs
        plan = _RunPlan(self, program, run_program, prepared, scope, local, feed_names,
                        feed_var_name, fetch_var_name, fetch_names, _eager_deletion())
        stats["plans_built"] += 1
        return (version, scope, plan)

    def prepare(self, block):
        """The PreparedBlock for ``block`` (cached until its program changes)."""
        entry = self._prepared.get(id(block))
        if entry is not None and entry[0] is block and entry[1].version == block.program._version:
            return entry[1]
        prepared = PreparedBlock(block, self.place)
        self._prepared[id(block)] = (block, prepared)
        return prepared

    def run_block(self, block, scope):
        """Run ``block`` in ``scope`` (sub-blocks: the caller makes the step scope)."""
        prepared = self.prepare(block)
        steps = bind(prepared, scope, scope, self)
        run_steps(prepared, steps, self.trace, self.watch, scope)

    def run_prepared(self, prepared, scope, local_scope=None):
        steps = bind(prepared, scope, local_scope or scope, self)
        run_steps(prepared, steps, self.trace, self.watch, local_scope or scope)


class _RunPlan:
    """Block 0 bound to one scope; ``run`` feeds, steps and fetches."""

    def __init__(self, executor, program, run_program, prepared, scope, local, feed_names,
                 feed_var_name, fetch_var_name, fetch_names, release=True):
        self.executor = executor
        self.program = program
        self.prepared = prepared
        self.scope = scope
        self.local = local
        self.steps = bind(prepared, scope, local, executor, release=release)
        self.feed_holder = scope.var(feed_var_name)
        self.fetch_holder = scope.var(fetch_var_name)
        self.local_holders = list(local.vars.values())
        #: the holders outside the run (persistables, outer variables, the feed and fetch
        #: lists) that it writes: their values before the run are the undo log of a run
        #: that fails
        self.written = _written_outside(run_program.global_block(), scope, local,
                                        (self.feed_holder, self.fetch_holder))
        self.feed_checks = []
        block = run_program.global_block()
        for name in feed_names:
            var = block._find_var_recursive(name)
            if var is None:
                raise NotFound(f"Executor.run: feed '{name}' expected to name a variable of the "
                               f"program, but there is none")
            want = to_numpy_dtype(var.dtype) if var.type == VarType.LOD_TENSOR else None
            check_shape = var.shape if var.need_check_feed and var.shape else None
            self.feed_checks.append((name, var, want, check_shape))
        self.n_fetch = len(fetch_names)
        # fetches a Fluid 1.x program declares [1]: a kernel's 0-D result is given that shape
        self.scalar_fetches = tuple(i for i, name in enumerate(fetch_names)
                                    if declared_scalar(block._find_var_recursive(name)))
        self.place = executor.place

    def run(self, feed, return_numpy):
        tensors = []
        cpu = self.place.device == "cpu"
        for name, var, want, check_shape in self.feed_checks:
            value = feed[name]
            if cpu and value.__class__ is np.ndarray and value.dtype == want and (
                    check_shape is None or _shape_fits(check_shape, value.shape)):
                tensors.append(LoDTensor(value))  # the common case: nothing to convert
            else:
                tensors.append(feed_tensor(name, var, value, self.place))
        scope = self.scope
        # holding the old values also keeps update ops from writing them in place
        # (``_sole_owner``), so after a failure they are intact and simply put back
        undo = [holder.value for holder in self.written]
        scope.kids.append(self.local)
        try:
            try:
                self.feed_holder.value = tensors
                self.fetch_holder.value = [None] * self.n_fetch
                run_steps(self.prepared, self.steps, self.executor.trace,
                          self.executor.watch, self.local)
                results = self.fetch_holder.value
            except BaseException:  # an interrupt too: the run is all or nothing
                _put_back(self.written, undo)
                raise
        except ResourceExhausted as exc:
            raise _with_holders(exc, self.place, scope) from exc.__cause__
        finally:
            scope.kids.remove(self.local)
            # the step scopes a while/conditional_block kept hang under the local scope;
            # as Paddle deletes the local scope with its kids, they go with the run
            self.local.drop_kids()
            for holder in self.local_holders:
                holder.value = None
        for i in self.scalar_fetches:
            results[i] = _as_declared_scalar(results[i])
        if return_numpy:
            return [_to_numpy(t) for t in results]
        return results


def _written_outside(block, scope, local, also=()):
    """``also`` and the holders of ``scope`` (or its ancestors) that the ops of ``block``
    and of the blocks nested in them write, in a fixed order; the run's own temporaries
    (``local``) are not among them."""
    holders = {id(holder): holder for holder in also}
    for name in sorted(_names_written(block)):
        if local.find_local_var(name) is None:
            holder = scope.find_var(name)
            if holder is not None:
                holders[id(holder)] = holder
    return tuple(holders.values())


def _names_written(block):
    """Every name the ops of ``block`` and of the blocks nested in them write."""
    names = set()
    for op in block.ops:
        names.update(op.output_arg_names)
        for name, value in op.attrs.items():
            if op.attr_type(name) in (AttrType.BLOCK, AttrType.BLOCKS):
                for idx in (value if isinstance(value, list) else [value]):
                    names |= _names_written(block.program.block(idx))
    return names


def _put_back(holders, values):
    """Give each holder its value from before the run. Only reference assignments, and
    started over if an interrupt lands among them, so it always finishes whole."""
    while True:
        try:
            for holder, value in zip(holders, values):
                holder.value = value
            return
        except KeyboardInterrupt:
            continue


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
                    watch.after(p.op, _output_values(p.op, scope))
                if trace is not None:
                    trace.append((p.op, clock() - start))
    except FluidError as exc:
        raise _located(exc, prepared.ops[_index_of(steps, step)], exc) from exc
    except Exception as exc:  # a kernel's own failure: name the op, its inputs and shapes
        raise _located(exc, prepared.ops[_index_of(steps, step)], None) from exc


def _output_values(op, scope):
    """``[(name, value)]`` of the op's outputs found in ``scope``."""
    values = []
    if scope is not None:
        for names in op.outputs.values():
            for name in names:
                holder = scope.find_var(name)
                if holder is not None:
                    values.append((name, holder.value))
    return values


_policy = [None, (True, True)]  # (flags version read, (eager deletion, in-place updates))


def _memory_policy():
    """(eager deletion, in-place updates), the plan-shaping memory flags: temporaries go at
    their last use unless Paddle's ``FLAGS_eager_delete_tensor_gb`` is negative, and update
    ops write parameters in place unless ``FLAGS_inplace_update`` is off. Read again only
    after set_flags; plans are keyed by it."""
    if _policy[0] != flags.version[0]:
        _policy[:] = [flags.version[0], (flags.flag("FLAGS_eager_delete_tensor_gb") >= 0,
                                         flags.flag("FLAGS_inplace_update"))]
    return _policy[1]


def _eager_deletion():
    return _memory_policy()[0]


def _with_holders(exc, place, scope):
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


def _located(exc, prepared_op, fluid_exc):
    op = prepared_op.op
    if getattr(exc, "_fluid_located", False):
        return exc
    where = f"op '{op.type}' (block {op.block.idx}, op {prepared_op.index})"
    if op.source is not None:
        where += f", added at {op.source[0]}:{op.source[1]}"
    shapes = ", ".join(f"{slot}={args}" for slot, args in op.inputs.items())
    if fluid_exc is not None:
        message = str(exc)
        if not message.startswith(op.type) and "op '" not in message:
            message = f"{where}: {message}"
        new = type(exc)(message)
    elif isinstance(exc, MemoryError):
        outputs = ", ".join(f"{slot}={args}" for slot, args in op.outputs.items())
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


# --- binding a prepared block to holders -------------------------------------------------
def bind(prepared, scope, local, executor, release=False, unwanted=None):
    """Step closures for ``prepared`` over holders found in ``scope`` (persistables and
    outer variables) and ``local`` (temporaries, created there when missing). With
    ``release``, each temporary's value is dropped after its last use. ``unwanted`` maps
    an op's index to output names nobody needs: its kernel is not asked for a slot whose
    names all are, and an op whose outputs all are does not run."""
    block = prepared.block
    place = prepared.place

    def holder(name):
        found = local.find_var(name)
        if found is not None:
            return found
        var = block._find_var_recursive(name)
        if var is not None and var.persistable:
            return scope.var(name) if scope.find_var(name) is None else scope.find_var(name)
        return local.var(name)

    for var in block.vars.values():  # as Fluid: every declared variable exists before ops run
        if var.persistable:
            if scope.find_var(var.name) is None:
                scope.var(var.name)
        elif local.find_local_var(var.name) is None:
            local.var(var.name)

    dead_after = _last_uses(prepared, local) if release else {}
    unwanted = unwanted or {}
    steps = []
    for i, p in enumerate(prepared.ops):
        dead = dead_after.get(i, ())
        unused = frozenset(dead).intersection(p.op.output_arg_names) if dead else frozenset()
        steps.append(_make_step(p, holder, place, executor, local,
                                tuple(local.vars[n] for n in dead), unused,
                                unwanted.get(i, frozenset())))
    return steps


def _last_uses(prepared, local):
    """op index -> temporaries no later op reads, so their values can go right after it.

    As Paddle's eager deletion: a run's temporaries are dropped at its end anyway, so
    freeing each at its last use changes nothing visible and keeps memory hot. Names used
    inside an op's sub-blocks count as used by that op.
    """
    last = {}
    program = prepared.block.program
    for index, p in enumerate(prepared.ops):
        names = set(p.op.input_arg_names) | set(p.op.output_arg_names)
        for name, value in p.op.attrs.items():
            if p.op.attr_type(name) in (AttrType.BLOCK, AttrType.BLOCKS):
                for idx in (value if isinstance(value, list) else [value]):
                    names |= names_in_block(program.block(idx))
        for name in names:
            last[name] = index
    dead = {}
    for name, index in last.items():
        if name in local.vars:
            dead.setdefault(index, []).append(name)
    return dead


def names_in_block(block, writes=True):
    """Every name the ops of ``block`` and of the blocks nested in them read, and (unless
    ``writes`` is False) write."""
    names = set()
    for op in block.ops:
        names.update(op.input_arg_names)
        if writes:
            names.update(op.output_arg_names)
        for name, value in op.attrs.items():
            if op.attr_type(name) in (AttrType.BLOCK, AttrType.BLOCKS):
                for idx in (value if isinstance(value, list) else [value]):
                    names |= names_in_block(block.program.block(idx), writes)
    return names


_HOST = CPUPlace()


def _make_step(prepared_op, holder, place, executor, scope, dead=(), unused=frozenset(),
               unwanted=frozenset()):
    if place.device != "cpu":
        op, opdef = prepared_op.op, prepared_op.opdef
        if op.attrs.get("force_cpu") is True or "host_output" in opdef.traits:
            # Paddle's force_cpu, and ops whose Paddle kernel is the host's (a rank table's
            # max_sequence_len, an array's length): the output lives on the host whatever
            # the place, so the loop counters and conditions they feed need no device copy
            place = _HOST
        elif opdef.kernel_place_of is not None and op.inputs.get(opdef.kernel_place_of):
            return _following_step(prepared_op, holder, place, executor, scope, dead, unused,
                                   unwanted)
    return _step_on(prepared_op, holder, place, executor, scope, dead, unused, unwanted)


def _step_on(prepared_op, holder, place, executor, scope, dead, unused, unwanted):
    step, ctx, ins, outs = _kernel_step(prepared_op, holder, place, executor, scope, dead,
                                        unused, unwanted)
    host_step = prepared_op.opdef.host_step
    if host_step is not None and place.device == "cpu" and len(outs) == 1 \
            and outs[0].__class__ is ScopeVariable and getattr(executor, "host_steps", True):
        return _releasing(host_step(ctx, ins, outs[0], step), dead)
    return step


def _following_step(prepared_op, holder, place, executor, scope, dead, unused, unwanted):
    """On a device place, the step of an op whose kernel runs where its input
    ``opdef.kernel_place_of`` lives (Paddle's increment): on the host for a host counter."""
    source = holder(prepared_op.op.inputs[prepared_op.opdef.kernel_place_of][0])
    on_device = _step_on(prepared_op, holder, place, executor, scope, dead, unused, unwanted)
    on_host = _step_on(prepared_op, holder, _HOST, executor, scope, dead, unused, unwanted)

    def step():
        value = source.value
        array = getattr(value, "array", None)
        (on_host if array.__class__ is np.ndarray else on_device)()
    return step


def _kernel_step(prepared_op, holder, place, executor, scope, dead, unused, unwanted):
    """(the step that runs the op's kernel, its context, the input holders, the output
    holders): holders in slot order, a list for a duplicable slot, None for an absent one."""
    op, opdef, fn = prepared_op.op, prepared_op.opdef, prepared_op.kernel
    wanted = frozenset(s for s, args in op.outputs.items()
                       if args and any(a != EMPTY_VAR_NAME and a not in unwanted
                                       for a in args))
    ctx = KernelContext(op, place, executor, scope, wanted, unused)
    if fn is None or (unwanted and not wanted):  # markers; ops nobody needs
        return _releasing(_noop, dead), ctx, (), ()
    if place.device != "cpu" and not opdef.lod_aware:
        fn = _on_device(fn, place.xp)

    ins = []
    for slot in opdef.inputs:
        args = op.inputs.get(slot.name)
        if not args:
            ins.append(None)
        elif slot.duplicable:
            ins.append([holder(a) for a in args])
        else:
            ins.append(holder(args[0]))
    outs = []
    for slot in opdef.outputs:
        args = op.outputs.get(slot.name)
        if not args or all(a == EMPTY_VAR_NAME for a in args):
            outs.append(None)
        elif slot.duplicable:
            outs.append([holder(a) if a != EMPTY_VAR_NAME else None for a in args])
        else:
            outs.append(holder(args[0]))
    lod_src = None
    if opdef.share_lod is not None:
        src_args = op.inputs.get(opdef.share_lod[0])
        if src_args:
            lod_src = holder(src_args[0])
    lod_dsts = set(opdef.share_lod[1]) if opdef.share_lod is not None else set()
    plain = all(not s.duplicable for s in opdef.inputs) and len(outs) == 1 \
        and not opdef.outputs[0].duplicable and not opdef.lod_aware \
        and "runtime_outputs" not in opdef.traits  # may return SelectedRows etc.
    grad_lods = _grad_lod_sources(op, opdef, holder) if opdef.share_lod is None else None
    if grad_lods:  # the fast paths below, each with the gradients' LoD sources
        if plain and outs[0] is not None and _leading_present(ins) > 0 \
                and not _donors(op, opdef, ins):
            return _plain_step(fn, ctx, ins, outs[0], grad_lods.get(0), dead), ctx, ins, outs
        if len(outs) > 1 and not dead and ins and ins[0] is not None \
                and not any(isinstance(h, list) for h in ins + outs):
            return _arrays_step(fn, ctx, ins, outs, grad_lods), ctx, ins, outs
        return _general_step(fn, ctx, opdef, ins, outs, None, (), dead, grad_lods), \
            ctx, ins, outs
    if opdef.lod_aware and len(ins) == 1 and len(outs) == 1 and ins[0] is not None \
            and not isinstance(ins[0], list) and not isinstance(outs[0], list) and not dead \
            and outs[0] is not None and opdef.share_lod is None:
        return _runtime_step(fn, ctx, ins[0], outs[0]), ctx, ins, outs
    donors = _donors(op, opdef, ins)
    if donors:
        return _donating_step(_general_step(fn, ctx, opdef, ins, outs, lod_src, lod_dsts,
                                            dead), ctx, donors), ctx, ins, outs
    if plain and outs[0] is not None and _leading_present(ins) > 0:
        out = outs[0]
        src = lod_src if opdef.outputs[0].name in lod_dsts else None
        return _plain_step(fn, ctx, ins, out, src, dead), ctx, ins, outs
    if opdef.lod_aware and len(outs) == 1 and outs[0] is not None \
            and not isinstance(outs[0], list) and opdef.outputs[0].name not in lod_dsts:
        return _releasing(_values_step(fn, ctx, ins, outs[0]), dead), ctx, ins, outs
    if not opdef.lod_aware and len(outs) > 1 and lod_src is None and not dead \
            and not any(isinstance(h, list) for h in ins + outs) and ins and ins[0] is not None:
        return _arrays_step(fn, ctx, ins, outs), ctx, ins, outs
    return _general_step(fn, ctx, opdef, ins, outs, lod_src, lod_dsts, dead), ctx, ins, outs


def _on_device(fn, xp):
    """An array kernel on a device place, given its host inputs (a force_cpu constant, a
    host counter) moved to the device first, as Paddle's data transform moves a kernel's
    inputs to its place: a copy to the device, never back."""
    def kernel(ctx, *args):
        return fn(ctx, *[_to_device(a, xp) for a in args])
    return kernel


def _to_device(value, xp):
    if value.__class__ is np.ndarray:
        return xp.asarray(value)
    if value.__class__ is list:
        return [_to_device(v, xp) for v in value]
    return value


#: the smallest variable (declared bytes) worth updating in place: below it a new array
#: costs less than checking that the old one may be written
DONATE_MIN_BYTES = 64 << 10


def _donors(op, opdef, ins):
    """(input slot, holder) of the op's ``in_place`` pairs whose output names the same
    variable as the input, a variable of at least DONATE_MIN_BYTES."""
    if not opdef.in_place or not _memory_policy()[1]:
        return ()
    position = {slot.name: i for i, slot in enumerate(opdef.inputs)}
    donors = []
    for out_slot, in_slot in opdef.in_place.items():
        out_args, in_args = op.outputs.get(out_slot), op.inputs.get(in_slot)
        if out_args and in_args and len(out_args) == len(in_args) == 1 \
                and out_args[0] == in_args[0] and ins[position[in_slot]] is not None \
                and _declared_bytes(op.block._find_var_recursive(in_args[0])) \
                >= DONATE_MIN_BYTES:
            donors.append((in_slot, ins[position[in_slot]]))
    return tuple(donors)


def _declared_bytes(var):
    """A variable's size from its declaration (0 when unknown or not a tensor)."""
    if var is None or var.type != VarType.LOD_TENSOR or not var.shape \
            or any(d < 0 for d in var.shape):
        return 0
    count = 1
    for d in var.shape:
        count *= d
    return count * np.dtype(to_numpy_dtype(var.dtype)).itemsize


def _donating_step(inner, ctx, donors):
    """``inner`` with ``ctx.donated`` set first to the donor slots nothing else holds."""
    nothing = frozenset()
    if len(donors) == 1:  # sgd: the usual case, without building a set per run
        (slot, holder), = donors
        only = frozenset((slot,))

        def donating_step():
            ctx.donated = only if _sole_owner(holder) else nothing
            inner()
        return donating_step

    def donating_step():
        ctx.donated = frozenset([slot for slot, holder in donors if _sole_owner(holder)])
        inner()
    return donating_step


def _sole_owner(holder):
    """True when the holder's tensor and its array are held by nothing else (no other
    holder, view, fetched result or user reference; counted by reference counts: the
    holder's and this frame's for the tensor, the tensor's for the array), so writing the
    array changes nothing anyone else can see."""
    value = holder.value
    if value.__class__ is not LoDTensor or sys.getrefcount(value) != 3:
        return False
    array = value.array
    return (array is not None and array.base is None and sys.getrefcount(array) == 3
            and array.flags.writeable)


def _runtime_step(fn, ctx, a, out):
    """One runtime value in, one out (feed, fetch): no array unwrapping."""
    new = LoDTensor

    def step():
        value = fn(ctx, a.value)
        if value is not None:
            out.value = new(value) if value.__class__ is np.ndarray \
                or isinstance(value, np.generic) else value
    return step


def _values_step(fn, ctx, ins, out):
    """Runtime values in (duplicable slots as lists), one output that takes no LoD from
    an input: tensor arrays, rank tables, LoD ops. What the kernel returns is stored as
    ``_stored`` says (an array becomes a LoDTensor; None leaves Out as it was). Two
    gradients meeting in a ``sum`` (a loop's grad body has one per step) get a step of
    their own; the loop's other runtime-value ops have host steps."""
    if len(ins) == 1 and isinstance(ins[0], list) and len(ins[0]) == 2:
        (a, b), = ins

        def step():
            value = fn(ctx, [a.value, b.value])
            if value is not None:
                out.value = _stored(value)
        return step
    readers = tuple((h, isinstance(h, list)) for h in ins)

    def step():
        value = fn(ctx, *[None if h is None else [x.value for x in h] if many else h.value
                          for h, many in readers])
        if value is not None:
            out.value = _stored(value)
    return step


def _lod_of(source):
    """The LoD a holder's value has (None for no holder or a value without LoD)."""
    return getattr(source.value, "_lod", None) or None if source is not None else None


def _stored(value, lod=None):
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


def _releasing(step, dead):
    if not dead:
        return step

    def releasing_step():
        step()
        for h in dead:
            h.value = None
    return releasing_step


def _noop():
    pass


def _leading_present(ins):
    """How many inputs come before the first absent one (absent ones must all trail)."""
    count = 0
    for h in ins:
        if h is None:
            break
        count += 1
    return count if all(h is None for h in ins[count:]) else -1


def _plain_step(fn, ctx, ins, out, src, dead):
    """Fast paths: one plain output, inputs not duplicable, absent optional inputs only at
    the end (passed as None). The common chain case, one temporary dying here, is inlined."""
    new = LoDTensor
    if len(ins) == 2 and ins[1] is None and ins[0] is not None:  # an optional input absent
        a = ins[0]
        if src is None:
            def step():
                out.value = new(fn(ctx, a.value.array, None))
        else:
            def step():
                out.value = new(fn(ctx, a.value.array, None), src.value._lod)
        return _releasing(step, dead)
    if len(ins) > 2 or len(dead) > 1 or ins[-1] is None:  # absent inputs come last
        present = [h for h in ins if h is not None]
        absent = (None,) * (len(ins) - len(present))

        def step():
            out.value = new(fn(ctx, *[h.value.array for h in present], *absent),
                            src.value._lod if src is not None else ())
        return _releasing(step, dead)
    d = dead[0] if dead else None
    if len(ins) == 1:
        (a,) = ins
        if src is None and d is None:
            def step():
                out.value = new(fn(ctx, a.value.array))
        elif src is None:
            def step():
                out.value = new(fn(ctx, a.value.array))
                d.value = None
        else:
            def step():
                out.value = new(fn(ctx, a.value.array), src.value._lod)
        return step if src is None or d is None else _releasing(step, dead)
    a, b = ins
    if src is None and d is None:
        def step():
            out.value = new(fn(ctx, a.value.array, b.value.array))
    elif src is None:
        def step():
            out.value = new(fn(ctx, a.value.array, b.value.array))
            d.value = None
    elif d is None:
        def step():
            out.value = new(fn(ctx, a.value.array, b.value.array), src.value._lod)
    else:
        def step():
            out.value = new(fn(ctx, a.value.array, b.value.array), src.value._lod)
            d.value = None
    return step


def _arrays_step(fn, ctx, ins, outs, lod_sources=None):
    """Arrays in (no duplicable slots, the first input present; an absent optional input
    is passed as None), several outputs, nothing to free: the grad ops of plain ops
    (mul_grad, elementwise grads). What the kernel returns is stored as ``_stored`` says,
    with the LoD of the holder ``lod_sources`` names for its position (a gradient takes
    its input's)."""
    lod_sources = lod_sources or {}
    stores = tuple((i, h, lod_sources.get(i)) for i, h in enumerate(outs) if h is not None)

    def store(result):
        for i, h, source in stores:
            value = result[i]
            if value is not None:
                h.value = _stored(value, _lod_of(source))

    present = tuple(h is not None for h in ins)
    if present == (True, True, True):
        a, b, c = ins

        def step():
            store(fn(ctx, a.value.array, b.value.array, c.value.array))
        return step
    if present == (True, True):
        a, b = ins

        def step():
            store(fn(ctx, a.value.array, b.value.array))
        return step
    if present == (True, True, False, True):  # elementwise grads that take no Out
        a, b, _, d = ins

        def step():
            store(fn(ctx, a.value.array, b.value.array, None, d.value.array))
        return step

    def step():
        store(fn(ctx, *[h.value.array if h is not None else None for h in ins]))
    return step


def _grad_lod_sources(op, opdef, holder):
    """Paddle's grad ops give each input's gradient that input's LoD (``ShareLoD(X,
    X@GRAD)`` in their shape inference), one rule for every grad op here: output position
    -> the holder(s) of the forward input whose gradient it is (the LoD is read when the
    step runs: a value's LoD, not its declaration, decides). None when no output takes
    one."""
    if not opdef.type.endswith("_grad") or opdef.lod_aware:
        return None
    sources = {}
    for index, slot in enumerate(opdef.outputs):
        if not slot.name.endswith(GRAD_SUFFIX):
            continue
        forward = op.inputs.get(slot.name[:-len(GRAD_SUFFIX)])
        if not forward or not op.outputs.get(slot.name):
            continue
        holders = [holder(name) for name in forward]
        sources[index] = holders if slot.duplicable else holders[0]
    return sources or None


def _general_step(fn, ctx, opdef, ins, outs, lod_src, lod_dsts, dead, lod_sources=None):
    """Any op: duplicable slots, several outputs, runtime tensors (``lod_aware``).
    ``lod_sources``: output position -> the holder (a list for a duplicable slot) whose LoD
    that output takes, beside ``lod_src``'s one source for the ``lod_dsts`` slots."""
    lod_aware = opdef.lod_aware
    single = len(outs) == 1
    # outputs worth storing: (position in the result, holder or holder list, LoD source)
    lod_sources = lod_sources or {}
    stores = tuple((i, h, lod_src if opdef.outputs[i].name in lod_dsts else lod_sources.get(i))
                   for i, h in enumerate(outs) if h is not None)
    single_slots = not any(isinstance(h, list) for h in ins)
    arrays_only = not lod_aware and single_slots
    values_only = lod_aware and single_slots  # optimizer updates: runtime values, no lists

    def read(h):
        if h is None:
            return None
        if isinstance(h, list):
            return [x.value if lod_aware else x.value.array for x in h]
        return h.value if lod_aware else h.value.array

    def step():
        if arrays_only:
            result = fn(ctx, *[h.value.array if h is not None else None for h in ins])
        elif values_only:
            result = fn(ctx, *[h.value if h is not None else None for h in ins])
        else:
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
                        hh.value = _stored(v, _lod_of(src))
            else:
                h.value = _stored(value, _lod_of(source))
        for h in dead:
            h.value = None
    return step


# --- feed and fetch --------------------------------------------------------------------
def _fetch_names(fetch_list):
    if fetch_list is None:
        return ()
    if not isinstance(fetch_list, (list, tuple)):
        fetch_list = [fetch_list]
    names = []
    for item in fetch_list:
        # a list of variables among the items (what fluid.gradients returns) is fetched as
        # its members, one level deep, as Fluid 1.8 does
        for member in item if isinstance(item, (list, tuple)) else (item,):
            if isinstance(member, str):
                names.append(member)
            elif isinstance(member, Variable):
                names.append(member.name)
            else:
                raise InvalidType(f"Executor.run: fetch_list items expected Variable, name or "
                                  f"a list of them, but received {type(member).__name__}")
    return tuple(names)


def _with_feed_fetch(program, feed_names, fetch_names, feed_var_name, fetch_var_name):
    """The program to run: the original when it already has matching feed/fetch ops (saved
    inference models), else a copy with ``feed`` ops first and ``fetch`` ops last."""
    block = program.global_block()
    existing_feeds = {op.output("Out")[0]: op.attrs.get("col") for op in block.ops
                      if op.type == "feed"}
    existing_fetches = {op.input("X")[0]: op.attrs.get("col") for op in block.ops
                        if op.type == "fetch"}
    if existing_feeds or existing_fetches:
        ok_feed = not existing_feeds or set(feed_names) <= set(existing_feeds)
        ok_fetch = not existing_fetches or set(fetch_names) <= set(existing_fetches)
        if ok_feed and ok_fetch and (existing_feeds or not feed_names) \
                and (existing_fetches or not fetch_names):
            run = program.clone()
            _renumber(run.global_block(), "feed", "Out", feed_names)
            _renumber(run.global_block(), "fetch", "X", fetch_names)
            return run
        raise InvalidArgument(f"Executor.run: feed/fetch expected to match the program's own "
                              f"feed ops {sorted(existing_feeds)} and fetch ops "
                              f"{sorted(existing_fetches)}, but received feed {list(feed_names)} "
                              f"and fetch {list(fetch_names)}")
    run = program.clone()
    glob = run.global_block()
    for name in feed_names:
        if glob._find_var_recursive(name) is None:
            raise NotFound(f"Executor.run: feed '{name}' expected to name a variable of the "
                           f"program, but there is none")
    for name in fetch_names:
        if glob._find_var_recursive(name) is None:
            raise NotFound(f"Executor.run: fetch '{name}' expected to name a variable of the "
                           f"program, but there is none")
    glob.create_var(name=feed_var_name, type=VarType.FEED_MINIBATCH, persistable=True)
    glob.create_var(name=fetch_var_name, type=VarType.FETCH_LIST, persistable=True)
    for col, name in enumerate(feed_names):
        glob._prepend_op("feed", {"X": [feed_var_name]}, {"Out": [name]}, {"col": col})
    # ops before these in the copy: views and the event log number ops as in the program
    # the user built (the added feed ops count negative)
    glob.ops_prepended = len(feed_names)
    for col, name in enumerate(fetch_names):
        glob.append_op("fetch", {"X": [name]}, {"Out": [fetch_var_name]}, {"col": col})
    return run


def _renumber(block, op_type, slot, names):
    """Saved programs number their feed/fetch columns; align them with this call's order."""
    order = {name: i for i, name in enumerate(names)}
    keep = []
    for op in block.ops:
        if op.type == op_type:
            arg = op.inputs[slot][0] if slot == "X" else op.outputs[slot][0]
            if arg not in order:
                continue
            op.attrs["col"] = order[arg]
        keep.append(op)
    block.ops[:] = keep




def _shape_fits(declared, shape):
    return len(declared) == len(shape) and all(d < 0 or d == g for d, g in zip(declared, shape))


def _to_rank(got, declared):
    """``got`` with trailing dims of size 1 dropped or added to reach ``declared``'s rank
    (where ``declared`` has 1 or -1 there), or None. Fluid 1.x scripts feed sequences of ids
    as [N, 1] (``create_lod_tensor`` of lists makes them so) into variables declared [-1],
    which Paddle lets through without comparing ranks."""
    rank = len(declared)
    if len(got) > rank and all(d == 1 for d in got[rank:]):
        return tuple(got[:rank])
    if 0 < len(got) < rank and all(d in (1, -1) for d in declared[len(got):]):
        return tuple(got) + (1,) * (rank - len(got))
    return None


def feed_tensor(name, var, value, place):
    """Convert a fed value to a LoDTensor of the variable's dtype, checking what Fluid
    checks: rank (up to trailing dims of size 1, see ``_to_rank``) and known dims must
    match; a lossless-kind cast (float64 -> float32,
    int32 -> int64, int -> float) is done, a lossy one (float -> int) is refused."""
    tensor = as_tensor(value, place=place, where=f"feed '{name}'")
    array = tensor.array
    want = to_numpy_dtype(var.dtype) if var.type == VarType.LOD_TENSOR else None
    if want is not None and array.dtype != want:
        array = lossless_cast(array, want, f"feed '{name}'")
        tensor = LoDTensor(array, tensor._lod)
    if var.need_check_feed and var.shape:
        shape = var.shape
        got = array.shape
        if len(got) != len(shape):
            conformed = _to_rank(got, shape)
            if conformed is not None:  # [15, 1] ids into a [-1] variable: the same values
                array = array.reshape(conformed)
                tensor = LoDTensor(array, tensor._lod)
                got = conformed
        if len(got) != len(shape) or any(s >= 0 and s != g for s, g in zip(shape, got)):
            raise InvalidArgument(f"feed '{name}': shape expected {list(shape)} (-1 is any "
                                  f"size), but received {list(got)}")
    if place.device != "cpu" and isinstance(array, np.ndarray):
        tensor = LoDTensor(place.xp.asarray(array), tensor._lod)
    return tensor


def declared_scalar(var):
    """True for a variable declared [1] in a program of Fluid 1.x shapes, where a kernel's
    0-D result (a mean, a full reduction) stands for that [1]."""
    return var is not None and var.shape == (1,)


def _as_declared_scalar(value):
    """A 0-D tensor as the [1] its variable declares (Fluid 1.x had no 0-D tensors)."""
    if isinstance(value, LoDTensor) and getattr(value.array, "ndim", None) == 0:
        return LoDTensor(value.array.reshape(1), value._lod)
    return value


class FetchedArray(np.ndarray):
    """What a run fetches: an ndarray that, as NumPy's arrays did when Fluid 1.x scripts
    were written, also converts to a Python scalar when it holds one element, so the
    scripts' ``float(loss)``, ``"%.2f" % row`` and ``loss[0]`` all work under NumPy 2
    (slices and results of arithmetic stay FetchedArrays; shown as a plain array)."""

    def _item(self, convert):
        if self.size != 1:
            raise TypeError(f"only one-element arrays convert to a Python scalar, but "
                            f"this one has shape {self.shape}")
        return convert(self.reshape(-1)[0])

    def __float__(self):
        return self._item(float)

    def __int__(self):
        return self._item(int)

    def __complex__(self):
        return self._item(complex)

    def __repr__(self):
        return repr(self.view(np.ndarray))


def _to_numpy(value):
    if isinstance(value, LoDTensor):
        return np.asarray(value).view(FetchedArray)
    if isinstance(value, LoDTensorArray):
        return [np.asarray(t).view(FetchedArray) for t in value]
    return value


def as_numpy(tensor):
    return _to_numpy(tensor)


def dtype_of(var):
    return convert_dtype(var.dtype)


def _one_place_feed(feeds):
    """A compiled program's feed given per place (a list of dicts, one per place, as Fluid's
    data-parallel runs take it) as the one place here runs it: one dict, or the places'
    batches joined in order (what they would have split)."""
    if not feeds or not all(isinstance(f, dict) for f in feeds):
        raise InvalidType(expected("Executor.run", "feed of a CompiledProgram",
                                   "a dict, or a list of dicts (one per place)",
                                   repr(feeds)[:60]))
    if len(feeds) == 1:
        return feeds[0]
    names = set(feeds[0])
    if any(set(f) != names for f in feeds):
        raise InvalidArgument(expected("Executor.run", "the places' feeds",
                                       "dicts with the same names",
                                       [sorted(f) for f in feeds]))
    if any(isinstance(f[name], LoDTensor) or isinstance(f[name], tuple)
           for f in feeds for name in names):
        raise Unimplemented(expected("Executor.run", "the places' feeds",
                                     "dense arrays to join (one dict when they carry LoD)",
                                     "LoD tensors in several places' feeds"))
    return {name: np.concatenate([np.asarray(f[name]) for f in feeds]) for name in names}
