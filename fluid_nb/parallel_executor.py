"""``fluid.parallel_executor``: the module path of ``ParallelExecutor`` in Fluid 1.x
(defined with ``CompiledProgram`` in ``compiler.py``)."""
from .compiler import ParallelExecutor  # noqa: F401

__all__ = ["ParallelExecutor"]
