"""The table of emitters: op type -> ``emit(op, env) -> [C++ lines]`` (see emitters.py)."""
from ...errors import InvalidArgument


class NoEmitter(Exception):
    """This op instance has no native code (the message says why)."""


EMITTERS = {}


def emitter(*op_types):
    """Register the decorated function as the emitter of ``op_types``."""
    def register(fn):
        for op_type in op_types:
            if op_type in EMITTERS:
                raise InvalidArgument(f"emitter: op type {op_type!r} expected to be new, "
                                      f"but it has an emitter already")
            EMITTERS[op_type] = fn
        return fn
    return register
