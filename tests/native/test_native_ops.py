"""Every emitter has op table cases to be checked on (here or, for ops only a program can
feed, in test_native_lod_ops.py). The cases themselves run compiled, forward and backward,
against the interpreter in tests/targets/test_targets_agree.py, with every other target
that claims their ops."""
from fluid_nb.rewriters.native.emitters import EMITTERS

from tests.ops.op_test import all_table_cases
from tests.targets.targets import claims_grad, grad_op_types

FORWARD = [c for c in all_table_cases() if c.op in EMITTERS]
BACKWARD = [c for c in FORWARD if "native" in claims_grad(c)]


def test_every_emitter_has_table_cases_to_be_checked_on():
    from .test_native_lod_ops import op_types  # the ops only a program can feed
    covered = {c.op for c in FORWARD} | {t for c in BACKWARD for t in grad_op_types(c)} \
        | op_types()
    missing = sorted(set(EMITTERS) - covered)
    assert not missing, f"emitters no op table case exercises: {missing}"
