"""The live session: a program that runs as it is written.

A :class:`LiveSession` holds a main program, a startup program, a scope and a place. While
live mode is on (``with fluid.live():``, ``fluid.enable_live()``, or a ``%%fluid`` cell), the
session's programs carry an append hook, so every op appended to the main program's global
block runs at once in the session scope (after the startup ops of any new parameters, which
run as the startup program receives them). Shapes are inferred by ``append_op`` before the
hook sees the op, so a bad shape never reaches a kernel.

Rules:
- ops with ``op_role & 2`` (optimizer updates) are recorded, not run, unless
  ``apply_updates`` is set; :meth:`LiveSession.step` (``fluid.live_step()``) runs them once;
- ops of sub-blocks are recorded only; their control-flow op runs them when it is appended;
- ``record_only`` records ops without running them; they run (in order) before the next op
  that runs, or when a value is asked for;
- :meth:`LiveSession.feed` gives a variable a new value and re-runs exactly the ops
  downstream of it.

A transaction (:meth:`LiveSession.snapshot` / :meth:`LiveSession.rollback`) restores both
programs (blocks, ops, variables and their fields), the scope (holders and their values:
values are never mutated in place, so a shallow copy of each ``.value`` is enough), the
unique-name counters and the session's own lists.
"""
import contextlib
import sys
import warnings
import weakref

import numpy as np

from ..errors import FluidError, InvalidArgument, PreconditionNotMet
from ..exec import executor as _executor
from ..exec.run_loop import op_error
from ..exec.scope import Scope, global_scope, switch_scope
from ..exec.steps import LiveHook
from ..flags import version as _flags_version
from ..tensor.place import CPUPlace
from ..tensor.tensor import LoDTensor, LoDTensorArray, SelectedRows
from ..framework import program as _fw
from ..framework import unique_name
from ..framework.callstack import is_internal
from ..framework.program import (Program, Variable, default_main_program,
                                 default_startup_program)
from ..memory import places as _places
from ..memory.places import host_arena
from . import runner as _runner
from .runner import OpRunner
from .step_report import take_step

OP_ROLE_OPTIMIZE = 2
#: live ops between two looks for values nobody can reach any more (a loop appending
#: 100,000 ops keeps the values its user holds, not every one it made). A look also
#: checks again the ops whose values were still held at the last one, so the next look
#: waits for at least as many new ops as it carries: however many values a loop keeps
#: (``losses.append(loss)``), each op costs a bounded number of checks.
SWEEP_EVERY = 1024
#: bytes the host arena may grow by, looked at every SWEEP_WEIGH_EVERY live ops, before
#: the ops run since the last full look are looked at too: a loop over large values (a
#: 1000 x 1000 ``c = c * 0.99``) would otherwise hold a thousand of them, 4 GB, between
#: looks, and one over 64 x 64 values a thousand of 16 KiB, 16 MB its arena writes anew
#: where NumPy's loop reuses two blocks the cache still holds (a core's L2 is about this)
SWEEP_BYTES = 1 << 20
SWEEP_WEIGH_EVERY = 16

_sessions = {}  # name -> LiveSession
_active = []  # stack of [session, depth] in live mode


class LiveSession:
    """A main program, a startup program, a scope and a place that run as they grow.

    Example::

        with fluid.live() as s:
            x = fluid.layers.data(name='x', shape=[3], dtype='float32',
                                  value=np.ones((2, 3), 'float32'))
            y = fluid.layers.fc(x, size=2)
            print(y.numpy())          # computed already
        fluid.feed(x, np.zeros((2, 3), 'float32'))   # re-runs fc's ops only
    """

    def __init__(self, program=None, startup_program=None, scope=None, place=None,
                 name="main"):
        self.name = name
        self.program = program if program is not None else Program()
        self.startup_program = startup_program if startup_program is not None else Program()
        self.scope = scope if scope is not None else Scope()
        self.place = place if place is not None else CPUPlace()
        self.executor = _executor.Executor(self.place)
        self.runner = OpRunner(self.scope, self.place, self.executor)
        self.apply_updates = False
        self.record_only = False
        self.update_ops = []  # ops with op_role & 2 recorded, not run
        self.pending = []  # ops recorded in record-only mode, not run yet
        self.stats = {"ops_run": 0}
        #: ops run since values nobody can reach were last let go (see OpRunner.drop_unreachable)
        #: after the ops whose values were still held then; the next look is due when it
        #: is ``_sweep_at`` long
        self._since_sweep = []
        self._sweep_at = SWEEP_EVERY
        self._full_held = 0  # how many of _since_sweep's first ops the last full look kept
        #: the host arena's bytes in use after the last look (None: not weighed yet) and
        #: after the last full one, and how many more bytes make a look due (_look_if_grown)
        self._arena_mark = self._full_mark = None
        self._grown_by = SWEEP_BYTES
        self._saved = None  # what activation replaced, restored on deactivation
        self._memory_watchers = weakref.WeakSet()  # see watch_memory
        self._arena_was_recording = None
        _tag(self)

    def __repr__(self):
        ops = len(self.program.global_block().ops)
        return (f"LiveSession({self.name!r}, {ops} ops, {len(self.scope.vars)} scope vars, "
                f"place={self.place})")

    # --- live mode on/off -------------------------------------------------------------
    @property
    def active(self):
        return self._saved is not None

    def _activate(self):
        main, startup = self.program, self.startup_program
        self._saved = (main._append_hook, startup._append_hook,
                       _fw.switch_main_program(main), _fw.switch_startup_program(startup),
                       switch_scope(self.scope))
        main._append_hook = self._main_hook()
        startup._append_hook = self._on_startup_op
        _install_provider()
        self._arena_was_recording = None
        if self._memory_watchers:
            self._record_memory()

    def watch_memory(self, watcher):
        """Record what each op allocates (the arena's event log, which tags every block with
        its op and variable) while this session is active and ``watcher`` (a MemoryView that
        follows the session) lives. Without a watcher the log stays off: it costs each live
        op about a third of its time."""
        self._memory_watchers.add(watcher)
        if self.active and self._arena_was_recording is None:
            self._record_memory()

    def _record_memory(self):
        arena = host_arena() if self.place.device == "cpu" else None
        if arena is not None:
            self._arena_was_recording = arena.arena.recording
            arena.arena.recording = True

    def _deactivate(self):
        main_hook, startup_hook, old_main, old_startup, old_scope = self._saved
        self._saved = None
        arena = host_arena() if self.place.device == "cpu" else None
        if arena is not None and self._arena_was_recording is not None:
            arena.arena.recording = self._arena_was_recording
        self.program._append_hook = main_hook
        self.startup_program._append_hook = startup_hook
        _fw.switch_main_program(old_main)
        _fw.switch_startup_program(old_startup)
        switch_scope(old_scope)

    # --- the hooks --------------------------------------------------------------------
    def _main_hook(self):
        """The main program's append hook: ``_on_main_op``, its common case (a new op of
        the global block with a first-run plan, nothing pending) in one C call
        (``steps.LiveHook``)."""
        return LiveHook(self, self._on_main_op, self._look_due, self._op_failed,
                        self.program.global_block(), _fw.Operator, host_arena, _places._host,
                        _flags_version, _fw.SOURCE_FROM_CALLSTACK, OP_ROLE_OPTIMIZE,
                        SWEEP_WEIGH_EVERY, vars(_runner))

    def forget_ops(self, keep):
        """Let go of every op not in ``keep`` (a set: the ops a rollback left in the
        programs) that the session or its runner still refers to."""
        self._since_sweep = [op for op in self._since_sweep if op in keep]
        self._full_held = 0
        self.runner.forget(keep)

    def _on_main_op(self, op, first_run_tried=False):
        # the user's line, found if someone asks (the ``source`` property's field: no setter
        # call on every live op)
        op._source = _fw.SOURCE_FROM_CALLSTACK
        block = op.block
        if block.idx != 0:
            return  # sub-block ops run when their control-flow op runs
        if op.attrs.get("op_role", 0) & OP_ROLE_OPTIMIZE and not self.apply_updates:
            self.update_ops.append(op)
            return
        if self.record_only:
            self.pending.append(op)
            return
        if self.pending:
            self.run_pending()
        try:
            self.runner.run(op, first_run_tried)
        except BaseException:  # the op is taken back out of the program: so are its holders
            self._drop_empty_holders(op)
            raise
        self.stats["ops_run"] += 1
        swept = self._since_sweep
        swept.append(op)
        if len(swept) >= self._sweep_at or not len(swept) % SWEEP_WEIGH_EVERY:
            self._look_due(op)
        if block.ops[-1] is not op:  # inserted before ops that already ran: refresh them
            start = block.ops.index(op) + 1
            self._rerun(block, set(op.output_arg_names), start)

    def _look_due(self, op):
        """After ``op`` ran: the look for values nobody can reach that the ops run since the
        last one make due (every ``_sweep_at`` ops; every SWEEP_WEIGH_EVERY, on the host,
        when the arena has grown by SWEEP_BYTES). ``op`` itself, the last of them, waits
        for the next look: the next op may read what it wrote by name (ops appended by
        name, ``block.append_op``, leave no Variable a user holds), and letting that go
        would make it computed again from the values before it, let go too."""
        swept = self._since_sweep
        if len(swept) >= self._sweep_at:
            held = self.runner.drop_unreachable(swept[:-1], op.block)
            self._full_held = len(held)  # (the last op is the next look's, full or not)
            held.append(swept[-1])
            self._since_sweep = held
            self._sweep_at = len(held) + max(SWEEP_EVERY, len(held))
            self._mark_arena()
        elif not len(swept) % SWEEP_WEIGH_EVERY and self.runner.on_host:
            self._look_if_grown(op.block)

    def _op_failed(self, op, exc):
        """``op``'s first run raised ``exc`` in the hook's C path: as ``_on_main_op`` does,
        its empty holders go and the error names the op."""
        self._drop_empty_holders(op)
        if isinstance(exc, Exception):  # (a KeyboardInterrupt stays what it is)
            raise op_error(exc, op) from exc
        raise exc

    def _mark_arena(self):
        """The host arena's bytes in use after a full look."""
        arena = host_arena() if self.runner.on_host else None
        if arena is not None:
            self._arena_mark = self._full_mark = arena.arena.used
            self._grown_by = SWEEP_BYTES

    def _look_if_grown(self, block):
        """Let go of the unreachable values of the ops run since the last full look when the
        host arena has grown by ``_grown_by`` since the last look: SWEEP_BYTES, or the bytes
        the values this look kept hold (the arena's growth since the full look), if more.
        A loop that keeps its values (``losses.append(loss)``) makes the looks grow apart
        as it keeps more, so each op costs a bounded number of checks; one that lets them
        go looks every SWEEP_BYTES, and reuses the memory of the values it let go while
        the cache still holds it."""
        arena = host_arena()
        if arena is None:
            return
        used = arena.arena.used
        if self._arena_mark is None:  # (the first weighing: what the arena held before)
            self._arena_mark = self._full_mark = used
        if used - self._arena_mark < self._grown_by:
            return
        swept, held = self._since_sweep, self._full_held
        swept[held:-1] = self.runner.drop_unreachable(swept[held:-1], block)  # (see _look_due)
        self._arena_mark = used = arena.arena.used
        self._grown_by = max(SWEEP_BYTES, used - self._full_mark)

    def _drop_empty_holders(self, op):
        """Remove the scope holders of ``op``'s outputs that hold no value: the ones its
        failed first run made (a holder with a value is an earlier op's, and stays)."""
        values = self.scope.vars
        for names in op.outputs.values():
            for name in names:
                holder = values.get(name)
                if holder is not None and holder.value is None:
                    del values[name]

    def _on_startup_op(self, op):
        op.source = _fw.SOURCE_FROM_CALLSTACK
        if op.block.idx == 0:
            self.runner.run(op)

    # --- running ----------------------------------------------------------------------
    def run_pending(self):
        """Run the ops recorded in record-only mode, in program order."""
        ops, self.pending = self.pending, []
        live = set(self.program.global_block().ops)
        for op in ops:
            if op in live:
                self.runner.run(op)
                self.stats["ops_run"] += 1
        return ops

    def _rerun(self, block, names, start=0, skip=()):
        ops = downstream_ops(block, names, start, self._not_run(), skip)
        for op in ops:
            self.runner.run(op)
        self.stats["ops_run"] += len(ops)
        return ops

    def _not_run(self):
        if self.apply_updates:
            return set(self.pending)
        return set(self.update_ops) | set(self.pending)

    def feed(self, var, value):
        """Give ``var`` (a Variable or name) the value ``value`` (an array, a LoDTensor or an
        ``(array, lod)`` pair) and re-run exactly the ops downstream of it.

        Returns the ops that were re-run."""
        block = self.program.global_block()
        name = var.name if isinstance(var, Variable) else var
        desc = block._find_var_recursive(name)
        if desc is None:
            raise InvalidArgument(f"feed: variable expected in the live program, but "
                                  f"'{name}' is not there")
        tensor = _executor.feed_tensor(name, desc, value, self.place)
        if desc.is_data:
            desc._sample_value = value
        if self.pending:
            self.run_pending()
        self.scope.var(name).value = tensor
        return self._rerun(block, {name})

    def step(self, refresh=True):
        """Run the recorded update ops (``op_role & 2``) once on the current values; with
        ``refresh``, re-run the ops downstream of what they changed so every value shown is
        current. Returns the update ops run."""
        block = self.program.global_block()
        recorded = set(self.update_ops)
        ops = [op for op in block.ops if op in recorded]
        if self.pending:
            self.run_pending()
        changed = set()
        for op in ops:
            self.runner.run(op)
            changed.update(op.output_arg_names)
        self.stats["ops_run"] += len(ops)
        if refresh and changed:
            self._rerun(block, changed, skip=set(ops))
        return ops

    def run_startup(self):
        """Run the whole startup program in the session scope (e.g. to re-initialise)."""
        for op in self.startup_program.global_block().ops:
            self.runner.run(op)

    # --- values -----------------------------------------------------------------------
    def holder(self, var):
        name = var.name if isinstance(var, Variable) else var
        found = self.scope.find_var(name)
        if found is None and name in self.runner.dropped:
            found = self.runner.compute_dropped(name)
        if (found is None or found.value is None) and self.pending:
            self.run_pending()
            found = self.scope.find_var(name)
        if found is None or found.value is None:
            desc = var if isinstance(var, Variable) else None
            sample = getattr(desc, "_sample_value", None)
            if sample is not None:
                found = self.scope.var(name)
                found.value = _executor.feed_tensor(name, desc, sample, self.place)
        return found

    def value(self, var):
        found = self.holder(var)
        if found is None or found.value is None:
            name = var.name if isinstance(var, Variable) else var
            raise PreconditionNotMet(
                f"variable '{name}': a value expected in live session '{self.name}', but it "
                f"has none yet (was it added with --record-only, or is it an optimizer update "
                f"not applied yet? fluid.live_step() applies updates)")
        return found.value

    # --- transactions -----------------------------------------------------------------
    def snapshot(self):
        return _Snapshot(self)

    def rollback(self, snap):
        snap.restore(self)

    # --- reset --------------------------------------------------------------------------
    def reset(self):
        """Empty programs and scope, fresh unique names; parameters are gone."""
        was_active = self.active
        if was_active:
            self._deactivate()
        fresh_main, fresh_startup = Program(), Program()
        if self.program is default_main_program():
            _fw.switch_main_program(fresh_main)
        if self.startup_program is default_startup_program():
            _fw.switch_startup_program(fresh_startup)
        self.program, self.startup_program = fresh_main, fresh_startup
        self.scope.vars.clear()
        self.scope.kids.clear()
        unique_name.switch()
        self.runner.clear()
        self.update_ops, self.pending, self._since_sweep = [], [], []
        self._sweep_at = SWEEP_EVERY
        self._full_held = 0
        self._arena_mark = self._full_mark = None
        self._grown_by = SWEEP_BYTES
        self.stats["ops_run"] = 0
        _tag(self)
        if was_active:
            self._activate()

    def set_place(self, place):
        if place == self.place:
            return
        self.place = place
        self.executor = _executor.Executor(place)
        old = self.runner
        self.runner = OpRunner(self.scope, place, self.executor)
        self.runner.dropped, self.runner._dropped_order = old.dropped, old._dropped_order
        self.runner._dropped_count = old._dropped_count
        if self.active:  # (the hook reads the runner it was made with)
            self.program._append_hook = self._main_hook()


def _tag(session):
    session.program._live_session = session
    session.startup_program._live_session = session


# --- downstream ------------------------------------------------------------------------
def downstream_ops(block, names, start=0, exclude=(), skip=()):
    """Ops of ``block`` from ``start`` that read (transitively) any of ``names``, in order."""
    dirty = set(names)
    result = []
    for op in block.ops[start:]:
        if op in exclude or op in skip:
            continue
        for args in op.inputs.values():
            if not dirty.isdisjoint(args):
                result.append(op)
                dirty.update(op.output_arg_names)
                break
    return result


# --- snapshots ---------------------------------------------------------------------------
def _program_state(program):
    return (program, len(program.blocks), program.current_block_idx,
            [(block, list(block.ops), dict(block.vars),
              [(v, dict(v.__dict__)) for v in block.vars.values()]) for block in program.blocks])


def _fields_changed(now, saved):
    """Whether a variable's fields differ from the saved ones, by identity: a field may hold
    an array (a data variable's sample value), which ``==`` would compare elementwise."""
    return now.keys() != saved.keys() or any(now[k] is not v for k, v in saved.items())


class _Snapshot:
    """What a transaction restores; O(variables + scope holders), taken once per cell."""

    def __init__(self, session):
        self.session = session
        self.main = _program_state(session.program)
        self.startup = _program_state(session.startup_program)
        scope = session.scope
        self.holders = dict(scope.vars)
        self.values = [(h, h.value) for h in scope.vars.values()]
        self.kids = list(scope.kids)
        self.generator = unique_name._generator
        self.name_ids = dict(self.generator.ids)
        self.lists = (list(session.update_ops), list(session.pending))
        self.ops_before = (len(session.program.global_block().ops),
                           len(session.startup_program.global_block().ops))

    def restore(self, session):
        for state in (self.main, self.startup):
            program, n_blocks, current, blocks = state
            del program.blocks[n_blocks:]
            for block, ops, vars_, fields in blocks:
                block.ops[:] = ops
                block.vars.clear()
                block.vars.update(vars_)
                for var, saved in fields:
                    if _fields_changed(var.__dict__, saved):
                        var.__dict__.clear()
                        var.__dict__.update(saved)
            program.current_block_idx = current
            program._plans.clear()
            program._changed()
        scope = session.scope
        scope.vars.clear()
        scope.vars.update(self.holders)
        for holder, value in self.values:
            holder.value = value
        scope.kids[:] = self.kids
        unique_name.switch(self.generator)
        self.generator.ids.clear()
        self.generator.ids.update(self.name_ids)
        session.update_ops, session.pending = list(self.lists[0]), list(self.lists[1])
        keep = set(session.program.global_block().ops) | set(
            session.startup_program.global_block().ops)
        session.forget_ops(keep)

    def added(self, session):
        """What happened since the snapshot: (new ops per program, new var names, new blocks)."""
        result = {}
        for label, state, program in (("main", self.main, session.program),
                                      ("startup", self.startup, session.startup_program)):
            if state[0] is not program:  # reset inside the cell: everything is new
                state = (program, 0, 0, [])
            old_ops = set()
            old_vars = set()
            for block, ops, vars_, _ in state[3]:
                old_ops.update(ops)
                old_vars.update((block.idx, n) for n in vars_)
            new_ops = [op for block in program.blocks for op in block.ops if op not in old_ops]
            new_vars = [v for block in program.blocks for n, v in block.vars.items()
                        if (block.idx, n) not in old_vars]
            new_blocks = program.blocks[state[1]:]
            result[label] = (new_ops, new_vars, new_blocks)
        return result


# --- live mode on/off --------------------------------------------------------------------
def live_session(name=None, program=None, startup_program=None, scope=None, place=None):
    """The live session ``name`` (the active one, else ``'main'``), created on first use.

    Session ``'main'`` uses the default main and startup programs and the global scope, so
    ``fluid.default_main_program()`` and a plain ``Executor.run`` see what live cells built.
    Other names get fresh programs and a fresh scope.
    """
    if name is None:
        if _active:
            return _active[-1][0]
        name = "main"
    session = _sessions.get(name)
    if session is None:
        if name == "main":
            program = program if program is not None else default_main_program()
            startup_program = startup_program if startup_program is not None \
                else default_startup_program()
            scope = scope if scope is not None else global_scope()
        session = _sessions[name] = LiveSession(program, startup_program, scope, place, name)
    elif place is not None:
        session.set_place(place)
    return session


def _program_session(program, startup_program, scope, place):
    """The unnamed session of ``program``: kept on the program itself, so a second
    ``live(program=p)`` resumes it (same scope, same ops run) and it goes when ``p`` does,
    where a registry entry would keep every program it ever saw alive."""
    session = program.__dict__.get("_live_session")
    if session is None:
        session = program._live_session = LiveSession(
            program, startup_program, scope, place, f"program_{id(program)}")
    elif place is not None:
        session.set_place(place)
    return session


def enable_live(name=None, program=None, startup_program=None, scope=None, place=None):
    """Turn live mode on for session ``name`` (see :func:`live_session`) and return it.

    Until :func:`disable_live`, layers add ops to the session's programs, which run at once.
    Calls nest; each ``enable_live`` needs one ``disable_live``.
    """
    if program is not None and name is None:
        session = _program_session(program, startup_program, scope, place)
    else:
        session = live_session(name, program, startup_program, scope, place)
    if _active and _active[-1][0] is session:
        _active[-1][1] += 1
        return session
    if _active:  # another session was live: it pauses until this one is off
        _active[-1][0]._deactivate()
    session._activate()
    _active.append([session, 1])
    return session


def disable_live():
    """Turn off the live mode the last :func:`enable_live` turned on."""
    if not _active:
        return None
    entry = _active[-1]
    entry[1] -= 1
    session = entry[0]
    if entry[1] == 0:
        _active.pop()
        session._deactivate()
        if _active:
            _active[-1][0]._activate()
    return session


def is_live():
    return bool(_active)


@contextlib.contextmanager
def live(name=None, program=None, startup_program=None, scope=None, place=None,
         transaction=True, record_only=None):
    """Live mode inside the ``with`` block; yields the :class:`LiveSession`.

    With ``transaction`` (the default), an exception inside rolls back everything the block
    added (ops, variables, blocks, parameters, scope values, unique names), and its message
    gains the user's line.
    """
    session = enable_live(name, program, startup_program, scope, place)
    snap = session.snapshot() if transaction else None
    old_record = session.record_only
    if record_only is not None:
        session.record_only = record_only
    try:
        yield session
    except BaseException as exc:
        if snap is not None:
            session.rollback(snap)
            point_at_user_line(exc)
        raise
    finally:
        session.record_only = old_record
        disable_live()
        refresh_open_views(session.program)


def refresh_open_views(program):
    """Open ProgramViews of a live program follow it block by block, sent as deltas
    (after a rolled-back block too: the delta then removes what the block had added)."""
    views = sys.modules.get("fluid_nb.widgets.program_view")  # none open if never imported
    if views is None:
        return
    try:
        views.refresh_views(program)
    except Exception as exc:  # a view must never change what the block did
        warnings.warn(f"refreshing the open program views failed: {exc}")
    _refresh_memory_views(program)


def _refresh_memory_views(program):
    """Open MemoryViews of a live program take the block's allocations as their timeline."""
    views = sys.modules.get("fluid_nb.widgets.memory_view")  # none open if never imported
    if views is not None:
        views.refresh_memory_views(program)


def feed(var, value, session=None):
    """Give a live variable a new value; the ops downstream of it re-run. Returns them."""
    if session is None:
        session = _session_of(var) or live_session()
    return session.feed(var, value)


def live_step(session=None, refresh=True):
    """Run the live program's optimizer update ops once (see :meth:`LiveSession.step`) and
    return a :class:`~.step_report.StepReport`: the ops run (``.ops``), each parameter's
    ``|update|``, the loss before and after. Its repr is the report a cell shows."""
    session = session if session is not None else live_session()
    return take_step(session, refresh)


def point_at_user_line(exc, filename=None):
    """Add the user's line to a FluidError's message (the innermost traceback frame outside
    fluid_nb, or the innermost in ``filename``), once."""
    if not isinstance(exc, FluidError) or getattr(exc, "_live_line", False):
        return
    found = None
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if (filename is not None and code.co_filename == filename) or \
                (filename is None and not is_internal(code.co_filename)):
            found = (code.co_filename, tb.tb_lineno)
        tb = tb.tb_next
    if found is None:
        return
    import linecache
    line = linecache.getline(found[0], found[1]).strip()
    where = f"line {found[1]}" + (f" `{line}`" if line else "")
    message = str(exc)
    exc.args = (f"{where}: {message}",) + tuple(exc.args[1:])
    exc._live_line = True


# --- the value provider behind Variable.numpy() / .value / repr ------------------------------
def _session_of(var):
    block = getattr(var, "block", None)
    program = getattr(block, "program", None)
    session = getattr(program, "_live_session", None)
    if session is not None and (session.program is program or session.startup_program is program):
        return session
    return None


def session_of_scope(scope):
    """The live session whose scope is ``scope`` (an active one first), or None."""
    for session in [entry[0] for entry in reversed(_active)] + list(_sessions.values()):
        if session.scope is scope:
            return session
    return None


class _ValueProvider:
    """Answers ``Variable.numpy()``/``value``/``repr`` from the session that owns the
    variable's program."""

    @staticmethod
    def _session(var):
        session = _session_of(var)
        if session is None:
            raise PreconditionNotMet(f"variable '{var.name}': a value expected (live mode), "
                                     f"but its program belongs to no live session; run it with "
                                     f"an Executor and fetch it, or build it under fluid.live()")
        return session

    def value(self, var):
        return self._session(var).value(var)

    def numpy(self, var):
        value = self.value(var)
        if _executor.declared_scalar(var):  # a 0-D result read as the [1] it is declared
            value = _executor.as_declared_scalar(value)
        return to_numpy(value)

    def preview(self, var):
        session = _session_of(var)
        if session is None:
            return None
        found = session.scope.find_var(var.name)
        if found is None or found.value is None:
            return None
        return preview(found.value)


def to_numpy(value):
    if isinstance(value, LoDTensor):
        return _executor.as_numpy(value)  # a [1] scalar as a fetch gives it
    if isinstance(value, LoDTensorArray):
        return [np.asarray(t) for t in value]
    if isinstance(value, SelectedRows):
        return np.asarray(value.to_dense())
    return value


def preview(value, limit=4):
    """A short text of a value: ``[0.1, 0.2, 0.3, ...]`` with the run-time shape."""
    if isinstance(value, (LoDTensor, np.ndarray)):
        if isinstance(value, LoDTensor) and value.array is None:
            return "not initialised"
        array = np.asarray(value)
        flat = array.ravel()
        items = ", ".join(_fmt(x) for x in flat[:limit])
        text = f"[{items}{', ...' if flat.size > limit else ''}]"
        text += f" {'x'.join(map(str, array.shape)) or 'scalar'}"
        if getattr(value, "_lod", None):
            text += f" lod={value._lod}"
        return text
    if isinstance(value, LoDTensorArray):
        return f"array of {len(value)} tensors"
    if isinstance(value, SelectedRows):
        return f"selected rows {value.rows()[:limit]} of {value.height()}"
    return type(value).__name__


def _fmt(x):
    if isinstance(x, (np.floating, float)):
        return f"{float(x):.4g}"
    return str(x)


_provider = _ValueProvider()


def _install_provider():
    if _fw._value_provider is not _provider:
        _fw.set_value_provider(_provider)
