"""``fluid.transpiler``: programs rewritten into other programs, as Fluid 1.8 has them:
``DistributeTranspiler`` (a training program split into trainer and parameter-server
programs, see :mod:`.distribute_transpiler`), ``memory_optimize`` / ``release_memory``
(variable reuse), and the dispatchers ``RoundRobin`` and ``HashName`` that place variable
blocks on the servers."""
from ..memory_optimize import memory_optimize, release_memory
from .distribute_transpiler import DistributeTranspiler, DistributeTranspilerConfig
from .ps_dispatcher import HashName, RoundRobin

__all__ = ["DistributeTranspiler", "DistributeTranspilerConfig", "memory_optimize",
           "release_memory", "HashName", "RoundRobin"]
