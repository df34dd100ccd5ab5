"""One optimizer step of a live program, and what it changed.

``fluid.live_step()`` and ``%%fluid --step`` (or ``%fluid step``) run the recorded update
ops once (:meth:`LiveSession.step`) and return a :class:`StepReport`: per updated
parameter ``|after - before|`` and ``|after|`` (L2 norms over all its values), and the
loss before and after the step when the program has one (the output of the op marked
forward|loss, re-run by the step's refresh).
"""
import numpy as np

from ..autodiff.backward import OP_ROLE_LOSS
from ..tensor.tensor import SelectedRows


class StepReport:
    """What one step applied. ``ops`` are the update ops run; ``changes`` is
    ``[(parameter, |after - before|, |after|)]``; ``loss_before``/``loss_after`` are the
    loss's mean (None without a loss)."""

    def __init__(self, ops, changes, loss_name=None, loss_before=None, loss_after=None):
        self.ops = list(ops)
        self.changes = changes
        self.loss_name, self.loss_before, self.loss_after = loss_name, loss_before, loss_after

    @property
    def n_ops(self):
        return len(self.ops)

    def lines(self):
        if not self.ops:
            return ["step: no update ops recorded (optimizer.minimize(loss) records them)"]
        lines = [f"step: ran {len(self.ops)} update ops, changing {len(self.changes)} parameters"]
        if self.loss_name is not None and self.loss_before is not None:
            lines.append(f"  loss {self.loss_name}: {self.loss_before:.6g} -> "
                         f"{self.loss_after:.6g}")
        for name, delta, norm in self.changes:
            lines.append(f"  {name}: |update| {delta:.4g} (|{name}| {norm:.4g})")
        return lines

    def __repr__(self):
        return "\n".join(self.lines())


def loss_name(block):
    """The loss the backward pass started from: the output of the op marked forward|loss."""
    for op in block.ops:
        role = op.attrs.get("op_role", 0)
        if isinstance(role, int) and role & OP_ROLE_LOSS and not role & 1:
            names = op.output_arg_names
            return names[0] if names else None
    return None


def take_step(session, refresh=True):
    """Run ``session``'s recorded updates once and measure what they changed."""
    block = session.program.global_block()
    recorded = set(session.update_ops)
    params = []
    for op in block.ops:
        if op in recorded:
            for name in op.output_arg_names:
                var = block.vars.get(name)
                if var is not None and var.is_parameter and name not in params:
                    params.append(name)

    def current(name):
        found = session.scope.find_var(name)
        if found is None or found.value is None:
            return None
        value = found.value
        if isinstance(value, SelectedRows):  # a sparse parameter: its dense values
            value = value.to_dense()
        return np.array(np.asarray(value), dtype=np.float64)

    loss = loss_name(block)
    if session.pending:
        session.run_pending()
    before = {name: current(name) for name in params}
    loss_before = current(loss) if loss else None
    ops = session.step(refresh)
    changes = []
    for name in params:
        after = current(name)
        if after is not None and before[name] is not None:
            changes.append((name, float(np.linalg.norm(after - before[name])),
                            float(np.linalg.norm(after))))
    loss_after = current(loss) if loss and refresh else None
    mean = lambda v: None if v is None else float(v.mean())  # noqa: E731
    return StepReport(ops, changes, loss, mean(loss_before), mean(loss_after))
