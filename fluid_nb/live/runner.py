"""Running one appended op at once, against the live session's scope.

The executor's machinery is reused for a single op: the op's definition and kernel are
resolved once (a :class:`~fluid_nb.exec.executor.PreparedOp`), its arguments bound to the
scope's holders by the executor's ``_make_step``, and the resulting closure is cached per op,
so re-running an op (re-feeding, ``live_step``) costs one Python call plus its kernel.
Every variable of a live program, temporaries included, lives in the session scope, so
values stay visible after the op ran.
"""
import os
import sys
import linecache

from ..errors import FluidError, PreconditionNotMet, Unimplemented
from ..exec.executor import PreparedOp, _feed_tensor, _located, _make_step
from ..ops import registry

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_CONTEXTLIB = os.path.join("", "contextlib.py")


def _is_internal(filename):
    return filename.startswith(_PKG_DIR) or filename.endswith(_CONTEXTLIB)


def user_source(depth=2):
    """``(filename, lineno, line)`` of the innermost caller outside the fluid_nb package."""
    frame = sys._getframe(depth)
    while frame is not None and _is_internal(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return None
    filename, lineno = frame.f_code.co_filename, frame.f_lineno
    return (filename, lineno, linecache.getline(filename, lineno).strip())


class OpRunner:
    """Builds, caches and runs one step closure per op, over one scope."""

    def __init__(self, scope, place, executor):
        self.scope = scope
        self.place = place
        self.executor = executor
        self.steps = {}  # op -> (step, PreparedOp)

    def clear(self):
        self.steps.clear()

    def forget(self, keep):
        """Drop cached steps of ops not in ``keep`` (a set of ops)."""
        self.steps = {op: entry for op, entry in self.steps.items() if op in keep}

    def run(self, op):
        entry = self.steps.get(op)
        if entry is None:
            entry = self._build(op)
        try:
            entry[0]()
        except FluidError as exc:
            raise _located(exc, entry[1], exc) from exc
        except Exception as exc:  # a kernel's own failure
            raise _located(exc, entry[1], None) from exc

    def _build(self, op):
        opdef = registry.find(op.type)
        if opdef is None:
            raise Unimplemented(f"op '{op.type}': a registered op type expected to run it in "
                                f"live mode, but fluid_nb has no definition for it")
        ops = op.block.ops
        index = len(ops) - 1 if ops and ops[-1] is op else ops.index(op)
        prepared = PreparedOp(op, opdef, opdef.kernel_for(self.place.device), index)
        scope = self.scope
        self._check_inputs(op, scope)

        def holder(name):
            found = scope.find_var(name)
            return found if found is not None else scope.var(name)

        step = _make_step(prepared, holder, self.place, self.executor, scope)
        entry = self.steps[op] = (step, prepared)
        return entry

    def _check_inputs(self, op, scope):
        """Inputs without a value: feed a data variable's sample value, or say what to do."""
        block = op.block
        for names in op.inputs.values():
            for name in names:
                found = scope.find_var(name)
                if found is not None and found.value is not None:
                    continue
                var = block._find_var_recursive(name)
                if var is None:
                    continue
                sample = getattr(var, "_sample_value", None)
                if sample is not None:
                    scope.var(name).value = _feed_tensor(name, var, sample, self.place)
                elif var.is_data:
                    raise PreconditionNotMet(
                        f"{op.type}: input '{name}' expected a value in live mode, but the data "
                        f"variable has none; give it one with fluid.layers.data(..., value=arr) "
                        f"or fluid.feed({name!r}, arr)")
