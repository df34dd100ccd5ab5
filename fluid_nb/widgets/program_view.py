"""``ProgramView``: a program's graph as a widget that follows the program as it grows.

The front end gets the full program model once (the ``_model`` trait, sent when the widget is
created); after that :meth:`ProgramView.refresh` sends only a delta (a custom message
``{"type": "delta", "delta": ...}``) that the front end applies to the graph it already has.
The live session calls :func:`refresh_views` after each ``%%fluid`` cell, so an open view
grows cell by cell and highlights what the latest cell added.

Clicking an element in the graph sets ``selected`` (synced back from the browser); the kernel
then fills ``_details`` with what only it knows: the op's kernel and last run time, or the
variable's value as a LoD tensor model (drawn as a ``TensorView`` inside the widget).

:meth:`ProgramView.show_memory` attaches what each op allocated in a recorded run (the
``_memory`` trait, :func:`fluid_nb.viz.program_model.program_memory`'s figures, a few bytes
per op): the front end tints the ops by it without laying the graph out again.
"""
import html
import warnings
import weakref

import traitlets

from ..errors import InvalidArgument, InvalidType, PreconditionNotMet, expected
from ..framework.program import Program, default_main_program, without_feed_fetch_ops
from ..live import session as _live
from ..memory.events import Event
from ..rewriters.native.compiled_program import NativeProgram
from ..viz import MIME_TYPE, listing_html, program_delta, program_mark, program_model
from ..viz.lod_model import lod_model
from ..viz.program_model import program_memory
from ._base import ViewWidget, json_clean
from .op_facts import op_facts

PROGRAM_MIME = MIME_TYPE

_open_views = weakref.WeakSet()  # every ProgramView not closed yet; refresh_views walks it


def refresh_views(program):
    """Refresh every open :class:`ProgramView` that shows ``program`` (or follows the live
    session whose program it is). Returns the views refreshed.

    Safe to call after every live cell, whether it succeeded or was rolled back: a view whose
    program did not change sends nothing, and a view that fails to refresh is reported as a
    ``RuntimeWarning`` instead of failing the cell that called this."""
    refreshed = []
    for view in list(_open_views):
        if view.comm is None:  # closed
            _open_views.discard(view)
            continue
        if view.program is not program:
            continue
        try:
            view.refresh()
        except Exception as exc:  # noqa: BLE001  (a view must not fail the user's cell)
            warnings.warn(f"ProgramView {view.title!r} could not refresh: "
                          f"{type(exc).__name__}: {exc}", RuntimeWarning, stacklevel=2)
            continue
        refreshed.append(view)
    return refreshed


def _delta_is_empty(delta):
    return not any(delta[part][kind] for part in ("add", "remove", "update")
                   for kind in delta[part])


class ProgramDiff:
    """What one refresh of a :class:`ProgramView` changed: ops and variables added, removed
    and updated (a readable form of the delta that was sent)."""

    def __init__(self, delta=None):
        empty = {"ops": [], "vars": []}
        delta = delta or {"add": empty, "remove": empty, "update": empty}
        self.added_ops = [(op["id"], op["type"], op["block"]) for op in delta["add"]["ops"]]
        self.added_vars = [v["name"] for v in delta["add"]["vars"]]
        self.removed_ops = list(delta["remove"]["ops"])
        self.removed_vars = list(delta["remove"]["vars"])
        self.updated_vars = [v["name"] for v in delta["update"].get("vars", [])]

    def __bool__(self):
        return bool(self.added_ops or self.added_vars or self.removed_ops or self.removed_vars
                    or self.updated_vars)

    def __repr__(self):
        lines = [f"ProgramDiff: +{len(self.added_ops)} ops, +{len(self.added_vars)} vars, "
                 f"-{len(self.removed_ops)} ops, -{len(self.removed_vars)} vars, "
                 f"~{len(self.updated_vars)} vars"]
        lines += [f"  + op {kind} ({block}, id {op_id})" for op_id, kind, block in self.added_ops]
        lines += [f"  + var {name}" for name in self.added_vars]
        lines += [f"  - op {op_id}" for op_id in self.removed_ops]
        lines += [f"  - var {var_id}" for var_id in self.removed_vars]
        lines += [f"  ~ var {name}" for name in self.updated_vars]
        return "\n".join(lines)

    def _repr_html_(self):
        return f"<pre class='fluid-nb-diff'>{html.escape(repr(self))}</pre>"


class ProgramView(ViewWidget):
    """An interactive graph of a program (Graphviz in the browser), updated by deltas.

    Example::

        view = ProgramView()          # the live program in live mode, else the default main
        view                          # shows it; each %%fluid cell then grows it
        view.refresh()                # after changing the program by hand
        view.diff()                   # what the latest refresh added and removed

    ``scope`` (default: the live session's scope when the program is live) gives clicked
    variables their values; ``trace`` (an ``Executor.trace`` list of ``(op, seconds)``) gives
    ops their last run time. ``ProgramView(compiled)`` of a compiled program
    (``fluid_nb.rewriters.native.compile``) draws its program and gives each clicked op the function
    generated for it (``native``: the source it reads them from).

    Invariant: after every :meth:`refresh`, ``_model`` here equals the model the front end
    holds (it applied the same delta), and the ops marked ``new`` are those the refresh added.
    """

    _kind = traitlets.Unicode("program").tag(sync=True)
    title = traitlets.Unicode("").tag(sync=True)
    #: the model id (op id or ``v:<block>:<name>``) of the element clicked in the graph
    selected = traitlets.Unicode("").tag(sync=True)
    #: the search string typed in the view; matching ops and variables are highlighted
    search = traitlets.Unicode("").tag(sync=True)
    #: an op or variable id, or a search text: a folded graph opens the groups holding it
    #: (the first match) and scrolls to it; set it again to go elsewhere
    reveal = traitlets.Unicode("").tag(sync=True)
    #: what the kernel adds about ``selected``: kernel, last run, the variable's value
    _details = traitlets.Dict().tag(sync=True)
    #: bytes allocated per op in a recorded run (``program_memory``'s figures; {} for none)
    _memory = traitlets.Dict().tag(sync=True)

    def __init__(self, program=None, title=None, scope=None, trace=None, native=None,
                 **kwargs):
        if isinstance(program, NativeProgram):  # a compiled program: its ops' functions
            if program.source is None:
                raise PreconditionNotMet(expected("ProgramView", "the compiled program",
                                                  "built (compiled or run once)",
                                                  "not built yet"))
            title = title or f"compiled ({program.target})"
            program, native = without_feed_fetch_ops(program.program), program.source
        if program is not None and not isinstance(program, Program):
            raise InvalidType(f"ProgramView: program expected a fluid_nb Program, a "
                              f"compiled program or None, but received "
                              f"{type(program).__name__}")
        self._session = _session_for(program)
        self._fixed_program = program if program is not None else default_main_program()
        self._scope = scope
        self.trace = trace
        #: a compiled program's source (``NativeProgram.view``): op details name the op's
        #: generated function
        self.native = native
        program = self.program
        if title is None:
            title = f"live program '{self._session.name}'" if self._session else "program"
        model = program_model(program, title=title)  # (plain JSON types already)
        self._shown = program  # the program the front end's model describes
        self._mark = program_mark(program)
        self._last_delta = None
        super().__init__(title=title, _model=model, **kwargs)
        self.on_msg(self._on_front_end_message)
        _open_views.add(self)

    # --- what it shows -------------------------------------------------------------------
    @property
    def program(self):
        """The program shown: the live session's current one when the view follows a
        session (a reset gives the session a new program), else the one given."""
        if self._session is None:
            # a program shown before its first live cell: follow the session once it has one
            self._session = _session_for(self._fixed_program)
        if self._session is not None:
            return self._session.program
        return self._fixed_program

    @property
    def scope(self):
        """Where clicked variables get their values: the one given, else the live session's
        scope (None for a program that is not live)."""
        if self._scope is not None:
            return self._scope
        self.program  # noqa: B018  (binds the session if the program has become live)
        return self._session.scope if self._session is not None else None

    # --- updates -------------------------------------------------------------------------
    def refresh(self):
        """Send the front end what changed since the last refresh (a delta), or the full
        model if the view now shows another program. Returns the message sent, or None when
        nothing changed."""
        program = self.program
        mark = self._mark if program is self._shown else None
        new = program_model(program, mark=mark, title=self.title)
        if program is not self._shown:
            message = {"type": "model", "model": new}
            self._last_delta = None
            self._memory = {}  # figures of another program's ops
        else:
            delta = program_delta(self._model, new)
            if _delta_is_empty(delta):
                return None
            message = {"type": "delta", "delta": json_clean(delta)}
            self._last_delta = message["delta"]
        self._shown = program
        self._mark = program_mark(program)
        self.send(message)
        self._set_model_quietly(new)
        if self.selected:
            self._details = self._details_of(self.selected)
        return message

    def diff(self):
        """What the latest :meth:`refresh` added, removed and updated (a :class:`ProgramDiff`)."""
        return ProgramDiff(self._last_delta)

    # --- memory figures ------------------------------------------------------------------
    def show_memory(self, events):
        """Tint the ops by the bytes each allocated in a recorded run, or clear the tint
        (``None``). Returns the figures shown (None when cleared).

        ``events``: the arena's event records of a run of this program
        (``fluid.memory.events(place)`` after ``fluid.memory.record_events(place)``), or a
        :class:`~fluid_nb.widgets.MemoryView` whose last recording to use. Per op: the
        bytes of the blocks it allocated (and the bytes asked), how many blocks, and the
        variables they hold; ops of sub-blocks are matched by (block, index) and summed over
        a loop's iterations. The front end colours each op that allocated something on a
        log scale, draws a legend, and lists the figures in the op's details.

        Example::

            view = ProgramView(main)
            mem = MemoryView(place, scope)
            mem.record(exe.run, main, feed=feed, fetch_list=[loss], scope=scope)
            view.show_memory(mem)            # or view.show_memory(fluid.memory.events(place))
            view.memory["ops"]               # {op id: {"bytes", "requested", "blocks", "vars"}}
            view.show_memory(None)           # back to the colours by role
        """
        if events is None:
            self._memory = {}
            return None
        from .memory_view import MemoryView

        if isinstance(events, MemoryView):
            events = events.events
        if isinstance(events, (str, bytes, dict)) or not hasattr(events, "__iter__"):
            raise InvalidType(f"ProgramView.show_memory: events expected a list of "
                              f"fluid.memory events, a MemoryView or None, but received "
                              f"{type(events).__name__}")
        events = list(events)
        wrong = next((e for e in events if not isinstance(e, Event)), None)
        if wrong is not None:
            raise InvalidType(f"ProgramView.show_memory: events expected Event records "
                              f"(fluid.memory.events(place)), but received an item of "
                              f"type {type(wrong).__name__}")
        figures = json_clean(program_memory(self._model, events))
        self._memory = figures
        return figures

    @property
    def memory(self):
        """The per-op memory figures shown (see :meth:`show_memory`), or None."""
        return self._memory or None

    def _on_front_end_message(self, _widget, content, _buffers):
        """Clicks and searches come as messages (not trait writes) so the front end never
        sends its large ``_model`` back; "need-model" means a delta did not fit its copy."""
        kind = content.get("type") if isinstance(content, dict) else None
        if kind == "select":
            self.selected = str(content.get("id") or "")
        elif kind == "search":
            self.search = str(content.get("text") or "")
        elif kind == "need-model":
            self.send({"type": "model", "model": self._model})

    # --- details of the selected element -------------------------------------------------
    @traitlets.observe("selected")
    def _selected_changed(self, change):
        self._details = self._details_of(change["new"])

    def _details_of(self, element_id):
        if not element_id:
            return {}
        if element_id.startswith("v:"):
            return self._var_details(element_id)
        op = self._op_of(element_id)
        if op is None:
            return {"id": element_id, "error": f"no op or variable with id '{element_id}'"}
        facts = op_facts(op, self._session, self.trace)
        facts.update({"id": element_id, "kind": "op"})
        if self.native is not None:  # the op's generated function, or why it has none
            facts["native"] = self.native.function_of(op.block.idx, op.block.ops.index(op))
        return facts

    def _op_of(self, op_id):
        for entry in self._model.get("ops", ()):
            if entry["id"] == op_id:
                block = self.program.blocks[int(entry["block"][1:])]
                index = entry["index"]
                return block.ops[index] if index < len(block.ops) else None
        return None

    def _var_details(self, var_id):
        _, block_idx, name = var_id.split(":", 2)
        details = {"id": var_id, "kind": "var", "name": name}
        scope = self.scope
        found = scope.find_var(name) if scope is not None else None
        if found is None or found.value is None:
            details["value_note"] = ("no value: the program is not live and no scope was "
                                     "given" if scope is None else "no value in the scope yet")
            return details
        try:
            details["value"] = json_clean(lod_model(found.value))
        except InvalidArgument as exc:  # not a tensor (an array of tensors, a rank table...)
            details["value_note"] = f"{type(found.value).__name__}: {exc}"
        return details

    # --- display without widgets ---------------------------------------------------------
    def _fallback_bundle(self):
        program = self.program
        model = {**self._model, "memory": self._memory} if self._memory else self._model
        return {PROGRAM_MIME: model, "text/html": listing_html(program, memory=self.memory),
                "text/plain": str(program)}

    def __repr__(self):
        stats = self._model.get("stats", {})
        return (f"ProgramView({self.title!r}, {stats.get('ops', 0)} ops, "
                f"{stats.get('vars', 0)} vars, {stats.get('blocks', 0)} blocks)")

    def close(self):
        _open_views.discard(self)
        super().close()


def _session_for(program):
    """The live session a view follows: the active one when no program is given in live
    mode, or the session that owns the given (or default) program; else None."""
    if program is None and _live.is_live():
        return _live.live_session()
    program = program if program is not None else default_main_program()
    session = getattr(program, "_live_session", None)  # set by the session that owns it
    return session if session is not None and session.program is program else None
