"""``MemoryView``: the host memory arena as a widget: the chunks as bars of blocks coloured
by the variable each holds, the used bytes op by op over a recorded run with its peak, and
a table of the variables (the model is :func:`fluid_nb.viz.memory_model.memory_model`'s).

A view records a run with ``with view.recording(): exe.run(...)``; a view of a live
program follows it cell by cell: while a view follows it, the live session records every
cell's blocks (the arena's event log is off otherwise: it costs every live op), and after
each cell :func:`refresh_memory_views` (called by the session with the ProgramViews') gives
the view that cell's events.
"""
import contextlib
import warnings
import weakref

import traitlets

from .. import memory
from ..errors import InvalidType
from ..tensor.place import CPUPlace
from ..exec.scope import Scope, global_scope
from ..framework.program import Program, default_main_program
from ..live import session as _live
from ..viz.memory_model import bytes_text, memory_html, memory_model
from ._base import ViewWidget, json_clean

_open_views = weakref.WeakSet()  # every MemoryView not closed yet


def refresh_memory_views(program):
    """After a live cell of ``program``: every open :class:`MemoryView` that follows it
    takes the cell's events and redraws. Returns the views refreshed; a view that fails is
    reported as a ``RuntimeWarning``, never as the cell's error."""
    refreshed = []
    for view in list(_open_views):
        if view.comm is None:
            _open_views.discard(view)
            continue
        if view._session is None or view._session.program is not program:
            continue
        try:
            view.take_events()
        except Exception as exc:  # noqa: BLE001  (a view must not fail the user's cell)
            warnings.warn(f"MemoryView could not refresh: {type(exc).__name__}: {exc}",
                          RuntimeWarning, stacklevel=2)
            continue
        refreshed.append(view)
    return refreshed


class MemoryView(ViewWidget):
    """The arena of ``place`` with the variables of ``scope``: block map, timeline of the
    last recorded run (or live cell) with its peak, and the variable table.

    Example::

        view = MemoryView(scope=scope)        # the host arena, names from ``scope``
        with view.recording():                # the run's events become the timeline
            exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
        view.peak                             # the most bytes in use during the run
        view.refresh()                        # redraw the arena as it is now

    In live mode (or with a live ``program``) the view follows the session: its scope and
    place, and after each cell the cell's allocations as the timeline.
    """

    _kind = traitlets.Unicode("memory").tag(sync=True)

    def __init__(self, place=None, scope=None, program=None, title=None, **kwargs):
        if program is not None and not isinstance(program, Program):
            raise InvalidType(f"MemoryView: program expected a fluid_nb Program or None, "
                              f"but received {type(program).__name__}")
        if scope is not None and not isinstance(scope, Scope):
            raise InvalidType(f"MemoryView: scope expected a fluid_nb Scope or None, but "
                              f"received {type(scope).__name__}")
        self._session = _session_for(program)
        session = self._session
        self.place = place if place is not None else (
            session.place if session is not None else CPUPlace())
        self.scope = scope if scope is not None else (
            session.scope if session is not None else global_scope())
        self.title = title or (f"memory of live session '{session.name}'" if session
                               else "host memory arena")
        #: the events of the last recording (or live cell), oldest first; a view of a live
        #: session starts empty (its session records allocations only while a view follows it)
        self.events = []
        super().__init__(_model=self._build(), **kwargs)
        _open_views.add(self)
        if session is not None:
            session.watch_memory(self)

    def _build(self):
        return json_clean(memory_model(self.place, self.scope, self.events, title=self.title))

    # --- updates ---------------------------------------------------------------------------
    def refresh(self):
        """Redraw the arena as it is now (the timeline stays the last recording's)."""
        self._model = self._build()

    def take_events(self):
        """Take the events recorded since they were last read (a live cell's) as the
        timeline, when there are any, and redraw. Returns how many were taken."""
        taken = memory.events(self.place)
        if taken:
            self.events = taken
        self.refresh()
        return len(taken)

    @contextlib.contextmanager
    def recording(self):
        """Record what runs inside the ``with`` block: the arena's event log is on for it
        (and as it was after), and its events become the timeline. Events recorded before
        the block are dropped."""
        memory.events(self.place)
        was = memory.record_events(self.place, True)
        try:
            yield self
        finally:
            memory.record_events(self.place, was)
            self.events = memory.events(self.place)
            self.refresh()

    def record(self, run, *args, **kwargs):
        """``run(*args, **kwargs)`` recorded as in :meth:`recording`; returns its result.
        Example: ``view.record(exe.run, main, feed=feed, fetch_list=[loss])``."""
        with self.recording():
            return run(*args, **kwargs)

    # --- what it shows ---------------------------------------------------------------------
    @property
    def timeline(self):
        """The timeline part of the model (None before anything was recorded)."""
        return self._model.get("timeline")

    @property
    def peak(self):
        """The most bytes in use during the last recording (the run's peak, not the
        arena's since it started: that one is ``fluid.memory.peak(place)``), or None."""
        line = self.timeline
        return line["peak"]["used"] if line else None

    @property
    def peak_op(self):
        """The op during which the last recording peaked (``"adam #24"``), or None."""
        line = self.timeline
        return line["peak"]["label"] if line else None

    def _fallback_bundle(self):
        return {"text/html": memory_html(self._model), "text/plain": self._text()}

    def _text(self):
        stats, said = self._model["stats"], self._model["peaks"]
        text = (f"MemoryView: {bytes_text(stats['used'])} used now in "
                f"{stats['used_blocks']} blocks, {stats['chunks']} chunk(s), "
                f"{said['arena']['text']}")
        if self.timeline:
            text += (f"; last recording: {len(self.timeline['points'])} ops, "
                     f"{said['run']['text']}")
        return text

    def __repr__(self):
        return self._text()

    def close(self):
        _open_views.discard(self)
        super().close()


def _session_for(program):
    """The live session a view follows: the active one when no program is given in live
    mode, or the session that owns ``program`` (by default the default main program, which
    ``%%fluid`` cells grow); else None."""
    if program is None and _live.is_live():
        return _live.live_session()
    program = program if program is not None else default_main_program()
    session = program.__dict__.get("_live_session")
    return session if session is not None and session.program is program else None
