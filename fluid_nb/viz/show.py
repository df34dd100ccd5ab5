"""A program to show as a notebook result, opened at a chosen part: ``viz.show(main,
reveal="conv2d_40.w_0")`` draws the graph as a program's own result does, with the groups
around the first op matching ``reveal`` open and that op selected and in sight."""
from ..errors import InvalidArgument, InvalidType, expected
from ..framework.program import Program
from .dot import assemble_dot
from .listing import listing_html
from .program_model import MIME_TYPE, program_model

#: roles ``hide`` may name (the graph's Backward and Optimizer switches)
HIDEABLE = ("backward", "optimize")


class ProgramShown:
    """What :func:`show` returns: displays as the interactive graph (the model carries a
    ``view`` the renderer opens with), with the readable listing for other frontends."""

    def __init__(self, program, view, title):
        self.program, self.view, self.title = program, view, title

    def _repr_mimebundle_(self, include=None, exclude=None):
        model = program_model(self.program, title=self.title)
        model["view"] = dict(self.view)
        return {MIME_TYPE: model, "text/html": listing_html(self.program),
                "text/plain": str(self.program),
                "text/vnd.graphviz": assemble_dot(model, hidden_roles=self.view.get(
                    "hiddenRoles", ()))}

    def __repr__(self):
        return f"<program shown at {self.view.get('reveal', 'its first sight')!r}>"


def show(program, reveal=None, hide=(), title=None):
    """The program's graph as a cell result, opened at ``reveal`` (an op or variable id, a
    variable name or an op type: its first match) with the roles in ``hide`` (``"backward"``,
    ``"optimize"``) hidden."""
    if not isinstance(program, Program):
        raise InvalidType(expected("viz.show", "program", "a Program",
                                   type(program).__name__))
    if reveal is not None and (not isinstance(reveal, str) or not reveal.strip()):
        raise InvalidArgument(expected("viz.show", "reveal", "a non-empty str or None",
                                       repr(reveal)))
    hide = (hide,) if isinstance(hide, str) else tuple(hide)
    unknown = [role for role in hide if role not in HIDEABLE]
    if unknown:
        raise InvalidArgument(expected("viz.show", "hide", f"roles among {list(HIDEABLE)}",
                                       repr(unknown)))
    view = {}
    if reveal is not None:
        view["reveal"] = reveal
    if hide:
        view["hiddenRoles"] = list(hide)
    return ProgramShown(program, view, title)
