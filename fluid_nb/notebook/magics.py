"""``%%fluid`` runs a cell in live mode as a transaction; ``%fluid`` inspects the session.

::

    %%fluid [--program NAME] [--place cpu|gpu] [--record-only] [--quiet] [--step]
    %fluid show | reset | save PATH | graph | ops | scope

A ``%%fluid`` cell's output lists what it added (ops with shapes, new variables with value
previews, new blocks); its last expression, if any, is shown after it. If the cell raises,
everything it added is removed again (see :meth:`LiveSession.rollback`) and the error names
the cell line.
"""
import argparse
import ast
import shlex

from IPython.core.magic import Magics, line_cell_magic, magics_class

from ..errors import InvalidArgument
from ..live import session as _live
from . import display

_CELL_ARGS = argparse.ArgumentParser(prog="%%fluid", add_help=False)
_CELL_ARGS.add_argument("--program", default=None)
_CELL_ARGS.add_argument("--place", choices=("cpu", "gpu"), default=None)
_CELL_ARGS.add_argument("--record-only", action="store_true")
_CELL_ARGS.add_argument("--quiet", action="store_true")
_CELL_ARGS.add_argument("--step", action="store_true")

_LINE_COMMANDS = ("show", "reset", "save", "graph", "ops", "scope")


def _place(name):
    if name is None:
        return None
    from ..exec.place import CPUPlace, CUDAPlace
    return CPUPlace() if name == "cpu" else CUDAPlace(0)


class _ArgError(InvalidArgument):
    pass


def _parse(line):
    try:
        return _CELL_ARGS.parse_args(shlex.split(line))
    except SystemExit:
        raise _ArgError(f"%%fluid: arguments expected [--program NAME] [--place cpu|gpu] "
                        f"[--record-only] [--quiet] [--step], but received '{line}'") from None


@magics_class
class FluidMagics(Magics):
    """The ``fluid`` line and cell magic."""

    @line_cell_magic
    def fluid(self, line, cell=None):
        __tracebackhide__ = True  # noqa: F841  (IPython hides this frame)
        if cell is None:
            return self._command(line)
        return self._run_cell(line, cell)

    # --- %%fluid ----------------------------------------------------------------------
    def _run_cell(self, line, cell):
        __tracebackhide__ = True  # noqa: F841
        args = _parse(line)
        shell = self.shell
        session = _live.enable_live(args.program, place=_place(args.place))
        snap = session.snapshot()
        old_record = session.record_only
        session.record_only = args.record_only
        source = shell.transform_cell(cell)
        filename = shell.compile.cache(source, shell.execution_count, raw_code=cell)
        try:
            result = _exec_cell(source, filename, shell.user_ns)
            if args.step:
                session.step()
        except BaseException as exc:
            session.rollback(snap)
            _live.point_at_user_line(exc, filename)
            raise
        finally:
            session.record_only = old_record
            _live.disable_live()
            _live.refresh_open_views(session.program)
        report = display.CellReport(snap.added(session), session)
        session.last_report = report
        if not args.quiet:
            from IPython.display import display as show
            show(report)
        return result

    # --- %fluid ----------------------------------------------------------------------
    def _command(self, line):
        parts = shlex.split(line)
        command = parts[0] if parts else "show"
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
            return display.Graph(session.program)
        if command == "scope":
            return session.scope
        if command == "reset":
            session.reset()
            _live.refresh_open_views(session.program)
            print(f"live session '{session.name}' reset: empty programs and scope")
            return None
        if len(parts) != 2:
            raise InvalidArgument("%fluid save: a path expected (%fluid save PATH), but "
                                  f"received {parts[1:]}")
        return _save(session, parts[1])


class _Html:
    def __init__(self, html, text):
        self.html, self.text = html, text

    def _repr_html_(self):
        return display._STYLE + f"<div class='fluid-nb'>{self.html}</div>"

    def __repr__(self):
        return self.text


def _save(session, path):
    """The session's program (``<path>.pdmodel``) and persistables (``<path>.pdtensors``)."""
    from .. import io
    from ..exec.scope import scope_guard
    with scope_guard(session.scope):
        io.save(session.program, path)
    print(f"saved {path}.pdmodel and {path}.pdtensors")


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
