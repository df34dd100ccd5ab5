"""``ScopeView``: the scope tree (kid scopes, step scopes of loops) with each variable's
type, shape, dtype, LoD, place and bytes (the model is
:func:`fluid_nb.viz.scope_model.scope_model`'s)."""
import traitlets

from ..errors import InvalidType
from ..exec.scope import Scope, global_scope
from ..live.session import session_of_scope
from ..notebook.display import scope_html
from ..viz.scope_model import scope_model
from ._base import ViewWidget, json_clean


class ScopeView(ViewWidget):
    """The scope tree as a widget; :meth:`refresh` redraws it after the scope changed.
    ``program``: the program that fills the scope, whose ``[1]`` scalars are shown ``[1]``
    (default: the live session's program when the scope is a live session's).

    Example::

        ScopeView()                   # the global scope (the live session's by default)
        ScopeView(exe_scope, max_depth=2, program=main)
    """

    _kind = traitlets.Unicode("scope").tag(sync=True)

    def __init__(self, scope=None, max_depth=4, program=None, **kwargs):
        scope = global_scope() if scope is None else scope
        if not isinstance(scope, Scope):
            raise InvalidType(f"ScopeView: scope expected a fluid_nb Scope or None, but "
                              f"received {type(scope).__name__}")
        self.scope = scope
        self.max_depth = max_depth
        self.program = program
        super().__init__(_model=self._build(), **kwargs)

    def _build(self):
        program = self.program
        if program is None:  # a live session's scope: its program declares the shapes
            session = session_of_scope(self.scope)
            program = session.program if session is not None else None
        return json_clean(scope_model(self.scope, max_depth=self.max_depth, program=program))

    def refresh(self):
        """Rebuild the model from the scope as it is now and send it (scopes are small)."""
        self._model = self._build()

    def _fallback_bundle(self):
        return {"text/html": scope_html(self.scope, program=self.program)}

    def __repr__(self):
        return f"ScopeView({len(self.scope.vars)} variables, {len(self.scope.kids)} kid scopes)"
