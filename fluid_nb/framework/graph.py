"""``core.ProgramDesc`` and ``core.Graph``: the C++ handles Fluid scripts build programs and
compiled graphs from.

Here a program's description is the Program itself (``program.desc`` returns it), so
``ProgramDesc()`` is an empty Program. Fluid's ``Graph`` is the SSA graph its passes rewrite;
fluid_nb runs programs, not graphs, so a Graph only keeps the description it was made from,
and a ``CompiledProgram`` made from one has no program of its own (``_program`` is None).
"""
from ..errors import InvalidType, expected
from .program import Program


class ProgramDesc(Program):
    """An empty program description (a Program with its global block)."""


class Graph:
    """The graph of ``program_desc``: holds the description, runs nothing."""

    def __init__(self, program_desc):
        if not isinstance(program_desc, Program):
            raise InvalidType(expected("core.Graph", "program_desc", "a ProgramDesc (or Program)",
                                       type(program_desc).__name__))
        self._program_desc = program_desc

    def origin_program_desc(self):
        return self._program_desc
