"""``fluid.memory_optimize`` and ``fluid.release_memory``: in Fluid 1.8 both are deprecated
and change nothing (Fluid frees tensors by garbage collection instead), so scripts written
for older releases still call them. Here they do what Fluid 1.8's do: check their
arguments, warn that they are deprecated, and leave the program as it is."""
import warnings

from .errors import InvalidArgument, InvalidType, expected
from .framework.program import Program

__all__ = ["memory_optimize", "release_memory"]


def _check_program(where, program):
    if not isinstance(program, Program):
        raise InvalidType(expected(where, "input_program", "a Program",
                                   type(program).__name__))


def memory_optimize(input_program, skip_opt_set=None, print_log=False, level=0,
                    skip_grads=True):
    """Deprecated since Fluid 1.6: warns and changes nothing (``level`` must be 0 or 1)."""
    _check_program("memory_optimize", input_program)
    if level not in (0, 1):
        raise InvalidArgument(expected("memory_optimize", "level", "0 or 1", repr(level)))
    warnings.warn("fluid.memory_optimize is deprecated (as in Fluid 1.8) and leaves the "
                  "program unchanged", DeprecationWarning, stacklevel=2)


def release_memory(input_program, skip_opt_set=None):
    """Deprecated since Fluid 1.6: warns and changes nothing."""
    _check_program("release_memory", input_program)
    warnings.warn("fluid.release_memory is deprecated (as in Fluid 1.8) and leaves the "
                  "program unchanged", DeprecationWarning, stacklevel=2)
