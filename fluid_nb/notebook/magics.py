"""``%%fluid`` runs a cell in live mode as a transaction; ``%fluid`` inspects the session.

::

    %%fluid [--program NAME] [--place cpu|gpu] [--record-only] [--quiet] [--step]
    %fluid show | reset | save PATH | graph | dot | ops | scope | step

A ``%%fluid`` cell's output lists what it added (ops with shapes, new variables with value
previews, new blocks); its last expression, if any, is shown after it. If the cell raises,
everything it added is removed again (see :meth:`LiveSession.rollback`) and the error is
shown short: the cell's line, the message, and what the rollback removed; ``%tb`` then
shows the full traceback.
"""
import argparse
import ast
import shlex

from IPython.core.magic import Magics, line_cell_magic, magics_class

from ..errors import InvalidArgument
from ..live import session as _live
from . import display

class _Arguments(argparse.ArgumentParser):
    """argparse that raises instead of printing usage on stderr and exiting."""

    def error(self, message):
        raise InvalidArgument(f"%%fluid: arguments expected [--program NAME] [--place cpu|gpu] "
                              f"[--record-only] [--quiet] [--step], but received "
                              f"'{self._line}' ({message})")


_CELL_ARGS = _Arguments(prog="%%fluid", add_help=False)
_CELL_ARGS.add_argument("--program", default=None)
_CELL_ARGS.add_argument("--place", choices=("cpu", "gpu"), default=None)
_CELL_ARGS.add_argument("--record-only", action="store_true")
_CELL_ARGS.add_argument("--quiet", action="store_true")
_CELL_ARGS.add_argument("--step", action="store_true")

_LINE_COMMANDS = ("show", "reset", "save", "graph", "dot", "ops", "scope", "step")


def _place(name):
    if name is None:
        return None
    from ..tensor.place import CPUPlace, CUDAPlace
    return CPUPlace() if name == "cpu" else CUDAPlace(0)


def _parse(line):
    _CELL_ARGS._line = line
    return _CELL_ARGS.parse_args(shlex.split(line))


@magics_class
class FluidMagics(Magics):
    """The ``fluid`` line and cell magic."""

    @line_cell_magic
    def fluid(self, line, cell=None):
        __tracebackhide__ = True  # noqa: F841  (IPython hides this frame)
        try:
            if cell is None:
                return self._command(line)
            args = _parse(line)
        except InvalidArgument as exc:  # a mistyped magic line: one line, as IPython's own
            if not hasattr(exc, "_render_traceback_"):
                exc._render_traceback_ = _ShortTraceback(
                    self.shell, exc, [f"{type(exc).__name__}: {exc}", "(the full traceback: %tb)"])
            raise
        return self._run_cell(args, cell)

    # --- %%fluid ----------------------------------------------------------------------
    def _run_cell(self, args, cell):
        __tracebackhide__ = True  # noqa: F841
        shell = self.shell
        session = _live.enable_live(args.program, place=_place(args.place))
        snap = session.snapshot()
        old_record = session.record_only
        session.record_only = args.record_only
        source = shell.transform_cell(cell)
        number = _cell_number(shell)
        filename = shell.compile.cache(source, number, raw_code=cell)
        step_report = None
        try:
            result = _exec_cell(source, filename, shell.user_ns)
            if args.step:
                step_report = _apply_step(session)
        except BaseException as exc:
            removed = snap.added(session)
            session.rollback(snap)
            message = str(exc)
            _live.point_at_user_line(exc, filename)
            if isinstance(exc, Exception):
                where = _user_line(exc, filename, number)
                exc._render_traceback_ = _ShortTraceback(shell, exc, [
                    f"{type(exc).__name__}" + (f" in {where}" if where else ""),
                    f"    {message}", _rollback_text(removed), "(the full traceback: %tb)"])
            raise
        finally:
            session.record_only = old_record
            _live.disable_live()
            _live.refresh_open_views(session.program)
        report = display.CellReport(snap.added(session), session)
        session.last_report = report
        session.last_step_report = step_report
        if not args.quiet:
            from IPython.display import display as show
            # a `--step` cell that builds nothing is about the step alone: no "+0 ops" line
            if step_report is None or _added_anything(report):
                show(report)
            if step_report is not None:
                show(step_report)
        return result

    # --- %fluid ----------------------------------------------------------------------
    def _command(self, line):
        parts = shlex.split(line)
        command = parts[0] if parts else "show"
        if command.startswith("--"):
            # IPython refuses a ``%%fluid --step`` cell with no body and suggests the line
            # magic: that line is a step of the named (or current) session
            args = _parse(line)
            if not args.step:
                raise InvalidArgument(f"%fluid: a command or --step expected (options "
                                      f"without a cell body do nothing), but received '{line}'")
            return _apply_step(_live.live_session(args.program))
        if command not in _LINE_COMMANDS:
            raise InvalidArgument(f"%fluid: command expected one of {list(_LINE_COMMANDS)}, "
                                  f"but received '{command}'")
        session = _live.live_session()
        if command == "show":
            return session.program
        if command == "ops":
            return _Html(display.ops_table_html(
                [op for b in session.program.blocks for op in b.ops]),
                "\n".join(display.op_text(op) for b in session.program.blocks for op in b.ops))
        if command == "graph":
            from ..widgets import ProgramView
            return ProgramView(session.program)
        if command == "dot":
            return display.Graph(session.program)
        if command == "scope":
            return session.scope
        if command == "step":
            return _apply_step(session)
        if command == "reset":
            session.reset()
            _live.refresh_open_views(session.program)
            print(f"live session '{session.name}' reset: empty programs and scope")
            return None
        if len(parts) != 2:
            raise InvalidArgument("%fluid save: a path expected (%fluid save PATH), but "
                                  f"received {parts[1:]}")
        return _save(session, parts[1])


# --- --step ---------------------------------------------------------------------------------
def _added_anything(report):
    return bool(report.ops or report.vars or report.blocks or report.startup_ops)


def _apply_step(session):
    """Run the recorded updates once and say what they changed, as HTML in a notebook."""
    report = _live.live_step(session)
    return display.StepReport(report.ops, report.changes, report.loss_name,
                              report.loss_before, report.loss_after)


# --- a failed cell, told short ------------------------------------------------------------
def _cell_number(shell):
    """The number of the cell running now (its ``In [n]``). IPython 9 counts the next cell
    in ``execution_count`` while one runs (IPython 8 counted it after), so the running
    cell's own result is asked first; a magic called from code outside a cell falls back
    to the counter."""
    running = getattr(getattr(shell, "displayhook", None), "exec_result", None)
    number = getattr(running, "execution_count", None)
    return number if number is not None else shell.execution_count


def _user_line(exc, filename, execution_count):
    """``In [7], line 3: <source>`` for the innermost traceback frame in the cell (or None)."""
    import linecache
    found = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            found = tb.tb_lineno
        tb = tb.tb_next
    if found is None:  # a SyntaxError points at the cell through its own fields
        if getattr(exc, "filename", None) == filename and getattr(exc, "lineno", None):
            found = exc.lineno
        else:
            return None
    source = linecache.getline(filename, found).strip()
    return f"In [{execution_count}], line {found}" + (f": {source}" if source else "")


def _names(items, limit=6):
    shown = ", ".join(items[:limit])
    return shown + (f", ... ({len(items) - limit} more)" if len(items) > limit else "")


def _rollback_text(added):
    """One sentence on what the rollback took away (from ``_Snapshot.added``)."""
    ops, variables, blocks = added["main"]
    startup_ops = added["startup"][0]
    params = [v.name for v in variables if v.is_parameter]
    others = [v.name for v in variables if not v.is_parameter]
    parts = []
    if ops:
        parts.append(f"{len(ops)} op{'s' * (len(ops) != 1)} ({_names([op.type for op in ops])})")
    if others:
        parts.append(f"{len(others)} variable{'s' * (len(others) != 1)} ({_names(others)})")
    if params:
        parts.append(f"{len(params)} parameter{'s' * (len(params) != 1)} ({_names(params)})")
    if blocks:
        parts.append(f"{len(blocks)} block{'s' * (len(blocks) != 1)}")
    if startup_ops:
        parts.append(f"{len(startup_ops)} startup op{'s' * (len(startup_ops) != 1)}")
    if not parts:
        return "rolled back: the cell had added nothing; the live session is unchanged"
    listed = ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
    return (f"rolled back: removed {listed}; the live session is as it was before the cell")


class _ShortTraceback:
    """The error of a failed ``%%fluid`` cell (or a mistyped magic line) as IPython shows it
    (``_render_traceback_``): the first time short, as ``lines`` (for a cell: its line, the
    message, the rollback), then in full, so that
    ``%tb`` right after shows the whole traceback. Set on the one exception; nothing else in
    IPython changes."""

    def __init__(self, shell, exc, lines):
        self.shell, self.exc, self.lines = shell, exc, list(lines)
        self.shown = False

    def __call__(self):
        if not self.shown:
            self.shown = True
            return list(self.lines)
        exc = self.exc
        return self.shell.InteractiveTB.structured_traceback(type(exc), exc, exc.__traceback__)


class _Html:
    def __init__(self, html, text):
        self.html, self.text = html, text

    def _repr_html_(self):
        return display._STYLE + f"<div class='fluid-nb'>{self.html}</div>"

    def __repr__(self):
        return self.text


def _save(session, path):
    """The session's program (``<path>.pdmodel``), parameters (``<path>.pdparams``) and
    other persistables (``<path>.pdopt``), as ``fluid.save`` writes them."""
    from ..api import io
    from ..exec.scope import scope_guard
    with scope_guard(session.scope):
        io.save(session.program, path)
    print(f"saved {path}.pdmodel, {path}.pdparams and {path}.pdopt")


def _exec_cell(source, filename, namespace):
    """Run the cell's code; return the value of a trailing expression (or None)."""
    __tracebackhide__ = True  # noqa: F841
    tree = ast.parse(source, filename, "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, filename, "exec"), namespace)
    if last is not None:
        return eval(compile(last, filename, "eval"), namespace)
    return None
