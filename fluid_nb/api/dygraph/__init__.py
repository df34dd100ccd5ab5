"""``fluid.dygraph``: present so Fluid 1.8 code that imports it loads, refusing when used.

fluid_nb records static programs (a notebook cell's ops run at once in live mode, which is
what imperative mode gives a reader); Fluid 1.8's separate imperative engine is not part of
it. ``enabled()`` is False, so code that branches on the mode takes its static path; every
entry into imperative mode (``guard``, ``to_variable``, a ``dygraph.nn`` layer) raises
:class:`~fluid_nb.errors.Unimplemented` saying so.
"""
from . import base, nn  # noqa: F401
from .base import enabled, guard, no_grad, to_variable  # noqa: F401
from .nn import *  # noqa: F401,F403  (fluid.dygraph.BatchNorm and the rest, as in Fluid 1.8)

__all__ = ["base", "nn", "enabled", "guard", "no_grad", "to_variable"] + list(nn.__all__)
