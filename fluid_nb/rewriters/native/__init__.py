"""The Fluid compiler: a native C++ code generator from a ProgramDesc (the seeds' "Fluid:
Towards a Compiled Programming Language").

``generate(program, feed=..., fetch=...)`` gives the source; ``compile(program, feed,
fetch_list)`` builds it and gives a :class:`NativeProgram` that ``Executor.run`` runs in
place of the program.
"""
from .generate import NativeSource, generate  # noqa: F401
from .compiled_program import NativeProgram, compile  # noqa: F401

__all__ = ["generate", "compile", "NativeProgram", "NativeSource"]
