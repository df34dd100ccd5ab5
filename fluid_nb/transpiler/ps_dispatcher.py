"""``fluid.transpiler.ps_dispatcher``, the module path Fluid 1.8 scripts import the
dispatchers from; they live in :mod:`fluid_nb.ps_dispatcher`."""
from ..ps_dispatcher import HashName, PSDispatcher, RoundRobin

__all__ = ["PSDispatcher", "HashName", "RoundRobin"]
