"""``fluid.executor``: the module path Fluid 1.x scripts import the executor from
(``from paddle.fluid.executor import Executor``); the executor itself is ``exec/executor.py``."""
from .exec import Executor, global_scope, scope_guard  # noqa: F401

__all__ = ["Executor", "global_scope", "scope_guard"]


def _fetch_var(name, scope=None, return_numpy=True):
    """The value of variable ``name`` in ``scope`` (the global scope by default): a NumPy
    array, or the LoDTensor with ``return_numpy=False``. Only persistables outlive a run."""
    import numpy as np
    from .errors import InvalidType, NotFound, expected
    from .framework.program import Variable
    if isinstance(name, Variable):
        name = name.name
    if not isinstance(name, str):
        raise InvalidType(expected("_fetch_var", "name", "a variable name (str)",
                                   type(name).__name__))
    scope = global_scope() if scope is None else scope
    holder = scope.find_var(name)
    if holder is None:
        raise NotFound(expected("_fetch_var", f"variable '{name}'", "in the scope (make it "
                                "persistable: var.persistable = True)", "not there"))
    tensor = holder.get_tensor()
    return np.array(tensor) if return_numpy else tensor
