"""What the runtime knows about one op, beyond the program: its kernel and last run time.

Kept apart from the program model on purpose: the model is a pure function of the program,
while these facts depend on the place that runs the op and on when it last ran.
"""
from ..errors import Unimplemented
from ..ops import registry


def kernel_name(fn):
    """``module.function`` of a kernel function (``None`` for ops that have no kernel)."""
    if fn is None:
        return None
    module = getattr(fn, "__module__", "") or ""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    return f"{module.removeprefix('fluid_nb.')}.{name}" if module else name


def _same_op(traced, op):
    """Whether a traced op is ``op`` or its copy: ``Executor.run`` runs a clone of the program
    (with feed and fetch ops added), so its trace holds copies with the same block, type and
    arguments."""
    return traced is op or (traced.type == op.type and traced.block.idx == op.block.idx
                            and traced.inputs == op.inputs and traced.outputs == op.outputs)


def last_run_seconds(op, session=None, trace=None):
    """The op's last run time in seconds, or None when nothing recorded one.

    Sources, latest first: ``trace`` (an ``Executor.trace`` list of ``(op, seconds)``), then
    the live session's op runner if it keeps a ``last_run`` mapping op -> seconds."""
    if trace:
        for traced, seconds in reversed(trace):
            if _same_op(traced, op):
                return float(seconds)
    runner = getattr(session, "runner", None)
    recorded = getattr(runner, "last_run", None)
    if recorded and op in recorded:
        return float(recorded[op])
    return None


def op_facts(op, session=None, trace=None):
    """``{"kernel", "device", "last_run_ms"}`` for ``op``; each value None when unknown.

    The kernel is the one the live session bound for the op when it ran there, else the
    one the op's definition gives for the session's device (CPU when there is no session).
    """
    device = session.place.device if session is not None else "cpu"
    facts = {"kernel": None, "device": device, "last_run_ms": None, "defined": True}
    runner = getattr(session, "runner", None)
    bound = runner.bound_kernel(op) if runner is not None else None
    if bound is not None:
        facts["kernel"] = kernel_name(bound)
    else:
        opdef = registry.find(op.type)
        if opdef is None:
            facts["defined"] = False
        else:
            try:
                facts["kernel"] = kernel_name(opdef.kernel_for(device))
            except Unimplemented:  # no kernel for this device: the fact is "none"
                facts["kernel"] = None
    seconds = last_run_seconds(op, session, trace)
    if seconds is not None:
        facts["last_run_ms"] = round(seconds * 1e3, 4)
    return facts
