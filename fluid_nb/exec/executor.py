"""The Executor: runs a block's ops in order over a scope.

``run`` follows Fluid: it adds ``feed``/``fetch`` ops to a copy of the program (unless the
program already has them, as saved inference models do), creates persistable variables in
the given scope and temporaries in a local child scope whose values are dropped after the
run, runs the ops, and returns the fetched values. ``run_op`` runs one op alone (live mode).

The work is split by job:
- :mod:`.binding` turns a block's ops into steps bound to a scope's holders;
- :mod:`.steps` holds the step flavours the binder chooses from;
- :mod:`.run_loop` runs bound steps and gives their errors the op's context;
- :mod:`.run_plan` is block 0 bound to one scope, all or nothing, with its feed and fetch;
- :mod:`.feed_fetch` converts what goes in and what comes out.
A block 0 plan belongs to the scope it is bound to (``scope.plans``, the last
``SCOPE_PLANS`` of them), so that a dropped scope takes its values with it; the program
finds its plans through weak references keyed by place, scope and feed/fetch names, and
drops them when it changes (``program._version``); a repeated call whose fetch list
holds only Variables and names finds its plan before the argument checks, which the
plan's key passed when it was built. A run that repeats the executor's last one (the same
program at the same version, scope, feed names, fetch items, flags and arena) is one C
call (``_steps.fast_run``, with what ``_remember`` kept of that run). Sub-blocks (``while``,
``conditional_block``) reuse their PreparedBlock and bind it to each step scope.

On the host, NumPy allocates from the place's memory arena (:mod:`fluid_nb.memory`) for the
duration of a run, so every array a kernel makes lies in the arena's chunks; temporaries are
dropped at their last use (unless ``FLAGS_eager_delete_tensor_gb`` < 0). With the arena's
event log on, each op's allocations are tagged with the op and the variables they became.
"""
import weakref

from ..errors import InvalidArgument, InvalidType, expected
from ..framework.program import Program, default_main_program
from ..framework import prune
from ..memory import places as memory_places
from ..memory.places import _host as _host_arena_entry
from .. import flags as _flags
from ..memory.arena import _module as memory_arena_module, set_handler
from . import collector
from . import scope as _scope_module
from ..tensor.place import CPUPlace
from .binding import PreparedBlock, bind, bind_op, memory_policy, stats
from . import feed_fetch
from .run_loop import op_error, run_steps
from .run_plan import RunPlan, names_written, put_back
from .steps import fast_run
from .scope import Scope, global_scope, scope_guard  # noqa: F401  (fluid.executor has them)

# names other modules import from here
from .binding import KernelContext, PreparedOp, names_in_block  # noqa: F401,E402
from .feed_fetch import (FetchedArray, as_declared_scalar, as_numpy,  # noqa: F401,E402
                         declared_scalar, feed_tensor)

#: how many plans a scope keeps (its programs x feed/fetch lists); past it, they are
#: rebuilt as they are needed
SCOPE_PLANS = 8

#: what a job's process reports its runs to (``fluid_nb.distributed.status`` sets it when
#: the process has a status file), else None: each run tests only this
run_reporter = None

_switch_allocator = None  # the arena's C ``set_handler`` once loaded (every host run's switch)

#: positions in what ``_remember`` keeps that Python reads again (exec/_steps.c's LAST_*)
_SCOPE_WAS_NONE, _FLAGS_AT, _HOST_ENTRY, _PLAN = 2, 9, 11, 18


def _load_switch():
    global _switch_allocator
    _switch_allocator = memory_arena_module().set_handler
    return _switch_allocator


class Executor:
    """``Executor(place).run(program, feed, fetch_list, scope, return_numpy)``."""

    #: bind an op's host step, where it has one, instead of its kernel's step (a recorder
    #: that watches the kernel calls turns this off)
    host_steps = True

    #: a list to record (op, seconds) of each op run, or None: set on an executor, or on the
    #: class for every executor (what ``fluid.profiler`` does)
    trace = None

    #: what the next run must match to go through ``fast_run`` (see ``_remember``), or None
    _last_run = None

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
        if self._last_run is not None:  # the last run again: one C call, or NotImplemented
            fetched = fast_run(self._last_run, self, program, feed, fetch_list, scope,
                               return_numpy, feed_var_name, fetch_var_name, use_prune)
            if fetched is not NotImplemented:
                return fetched
        if program.__class__ in self.direct_programs and self._on_host and not use_prune:
            return self._run_direct(program, feed, fetch_list, scope, return_numpy)
        # names: the fetch list's names, known without checks for a list of Variables and
        # names (a run's usual fetch list), else None (checked and flattened in _run)
        names = None if use_prune else feed_fetch.plain_fetch_names(fetch_list)
        if names is None:
            origin_fetch = fetch_list
            fetch_list, optimize_ops = prune.split_fetch_list(fetch_list)
            if use_prune or optimize_ops:
                program, feed = self._pruned(program, feed, fetch_list, optimize_ops,
                                             origin_fetch)
        paused = collector.pause()  # a run's objects die by reference counting
        if self._device_arena:
            try:
                return self._run_on_device(program, feed, fetch_list, feed_var_name,
                                           fetch_var_name, scope, return_numpy, names)
            finally:
                collector.resume(paused)
        arena = memory_places.host_arena() if self._on_host else None
        if arena is None:
            try:
                return self._run(program, feed, fetch_list, feed_var_name, fetch_var_name,
                                 scope, return_numpy, names)
            finally:
                collector.resume(paused)
        # NumPy allocates from the arena in this context for the run (NEP 49); arrays made
        # here give their blocks back to it whenever they die
        switch = _switch_allocator or _load_switch()
        previous = switch(arena.capsule)
        if arena.arena.recording:
            self.watch = arena.recorder
        try:
            return self._run(program, feed, fetch_list, feed_var_name, fetch_var_name,
                             scope, return_numpy, names)
        finally:
            switch(previous)
            self.watch = None
            collector.resume(paused)

    #: classes of programs that run themselves (a program compiled to native code):
    #: ``program._executor_run(executor, feed, fetch_list, scope, return_numpy)`` checks
    #: the arguments, so a step of one costs the executor this test and the arena switch
    direct_programs = set()

    def _run_direct(self, program, feed, fetch_list, scope, return_numpy):
        arena = memory_places.host_arena()
        if arena is None:
            return program._executor_run(self, feed, fetch_list, scope, return_numpy)
        switch = _switch_allocator or _load_switch()
        previous = switch(arena.capsule)  # what the build's ops allocate lies in the arena
        if arena.arena.recording:
            self.watch = arena.recorder
        try:
            return program._executor_run(self, feed, fetch_list, scope, return_numpy)
        finally:
            switch(previous)
            self.watch = None

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
             return_numpy, names=None):
        given, given_scope = program, scope  # (as the caller gave them: see _remember)
        program = default_main_program() if program is None else program
        if names is not None and program.__class__ is Program and feed.__class__ is dict:
            # a repeated call finds its plan before any check: a plan's key holds only
            # what was checked when it was built (a Scope, feed names that are str, good
            # feed/fetch variable names), and each run checks its fed values
            in_scope = global_scope() if scope is None else scope
            entry = program._plans.get((self._place_key, id(in_scope), tuple(feed), names,
                                        feed_var_name, fetch_var_name, memory_policy()))
            if entry is not None and entry[0] == program._version:
                plan = entry[1]()
                if plan is not None and plan.scope is in_scope:
                    fetched = self._run_plan(plan, feed, return_numpy)
                    if given is not None:
                        self._remember(program, feed, fetch_list, given_scope,
                                       feed_var_name, fetch_var_name, plan)
                    return fetched
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
            feed = feed_fetch.one_place_feed(feed)
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
        fetch_names = feed_fetch.fetch_names(fetch_list)
        key = (self._place_key, id(scope), tuple(feed), fetch_names, feed_var_name,
               fetch_var_name, memory_policy())
        entry = program._plans.get(key)
        plan = entry[1]() if entry is not None and entry[0] == program._version else None
        if plan is None or plan.scope is not scope:
            plan = self._build_plan(program, scope, tuple(feed), fetch_names, feed_var_name,
                                    fetch_var_name)
            if len(program._plans) > 32:
                program._plans.clear()
            program._plans[key] = (program._version, weakref.ref(plan))
            # the scope owns the plan (the program finds it through a weak reference): a
            # plan holds its scope's values, the feed and fetch lists among them, which
            # must go with a scope the caller drops (exe.run(..., scope=fluid.Scope()))
            if len(scope.plans) >= SCOPE_PLANS:
                scope.plans.clear()
            scope.plans[id(program), key] = plan
        fetched = self._run_plan(plan, feed, return_numpy)
        if names is not None and given is not None and program.__class__ is Program and \
                feed.__class__ is dict:
            self._remember(program, feed, fetch_list, given_scope, feed_var_name,
                           fetch_var_name, plan)
        return fetched

    def _remember(self, program, feed, fetch_list, scope, feed_var_name, fetch_var_name,
                  plan):
        """Keep what a run that just ran ``plan`` on the host must match for the next run
        to go through ``fast_run`` (exec/_steps.c), which does in one call what ``run``,
        ``_run_plan`` and ``RunPlan.run`` do: the program at this version, the scope
        argument (None: the global scope, the same one), the feed's names in this order,
        the fetch list's items, the flags and the host's arena, and nothing recording,
        tracing or reporting. Anything else forgets it (None)."""
        last = self._last_run
        if last is not None and last[_PLAN]() is plan and \
                last[_SCOPE_WAS_NONE] == (scope is None) and \
                last[_FLAGS_AT] == _flags.version[0] and last[_HOST_ENTRY] is _host_arena_entry[0]:
            return  # kept already: this run differed in what it fed (a LoD, say), not kept
        arena = memory_places.host_arena() if self._on_host else None
        if plan.fast is None or self._device_arena or not self._on_host or \
                self.watch is not None or self.trace is not None or run_reporter is not None \
                or (arena is not None and arena.arena.recording):
            self._last_run = None
            return
        self._last_run = (
            weakref.ref(program), program._version, scope is None,
            weakref.ref(global_scope() if scope is None else scope), tuple(feed),
            tuple(fetch_list or ()), feed_var_name, fetch_var_name, _flags.version,
            _flags.version[0], _host_arena_entry, _host_arena_entry[0],
            None if arena is None else arena.capsule, None if arena is None else arena.arena,
            _switch_allocator or _load_switch(), globals(), vars(_scope_module),
            collector.PAUSING, weakref.ref(plan))

    def _run_plan(self, plan, feed, return_numpy):
        self.run_token = object()
        try:
            fetched = plan.run(feed, return_numpy)
        finally:
            self.run_token = None
        if run_reporter is not None:
            run_reporter.ran(plan, fetched)
        return fetched

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
        run_program = feed_fetch.with_feed_fetch(program, feed_names, fetch_names,
                                                 feed_var_name, fetch_var_name)
        prepared = PreparedBlock(run_program.global_block(), self.place)
        local = scope.new_scope()
        scope.kids.remove(local)  # not a kid between runs: views see it only while it runs
        plan = RunPlan(self, program, run_program, prepared, scope, local, feed_names,
                       feed_var_name, fetch_var_name, fetch_names, memory_policy()[0])
        stats["plans_built"] += 1
        return plan

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

    def run_op(self, op, scope):
        """Run the one op ``op`` now, alone, over ``scope`` (what live mode does with each op
        it appends).

        Binds each input and output name of ``op`` to the holder ``scope`` or one of its
        ancestors has (a holder made in ``scope`` for a name that has none), runs the op's
        kernel (its host step where it has one) on this executor's place, NumPy allocating
        from the place's arena on the host, and stores each output's value in its holder;
        the ops of its sub-blocks, if any, run in step scopes under ``scope``. Nothing else
        is written: no feed or fetch, and no value is dropped after the op.

        All or nothing: an op type without a definition raises Unimplemented before
        anything is bound; a failing op raises the typed error that names it (the kernel's
        own exception as InvalidArgument, an input without a value as PreconditionNotMet,
        memory running out as ResourceExhausted, a FluidError keeps its type) after every
        holder it wrote has its value from before, the holders and step scopes made for it
        are gone, and ``scope`` is as it was.

        >>> exe.run_op(block.ops[-1], scope)   # doctest: +SKIP
        >>> scope.find_var("z").get_tensor()   # doctest: +SKIP
        """
        if not isinstance(scope, Scope):
            raise InvalidType(expected("Executor.run_op", "scope", "a Scope",
                                       type(scope).__name__))
        had, kids = set(scope.vars), len(scope.kids)
        step, prepared = bind_op(op, scope, self)
        written = [h for h in map(scope.find_var, sorted(names_written([op]))) if h is not None]
        undo = [holder.value for holder in written]
        arena = memory_places.host_arena() if self._on_host else None
        previous = set_handler(arena.capsule) if arena is not None else None
        try:
            step()
        except BaseException as exc:  # an interrupt too: the op is all or nothing
            put_back(written, undo)
            del scope.kids[kids:]
            scope.erase([name for name in scope.vars if name not in had])
            if isinstance(exc, Exception):
                raise op_error(exc, op, prepared.index) from exc
            raise
        finally:
            if arena is not None:
                set_handler(previous)
