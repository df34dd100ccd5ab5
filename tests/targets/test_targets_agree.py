"""Every target that claims an op gives the interpreter's values on every op table case.

The interpreter is the reference. Each case (the op tables' rows, and for an elementwise
op the edge-value variants of edge_values.py: NaN and infinities, overflow, subnormals, an
empty batch, sizes 1) runs on each target that claims its op: compiled C++, ONNX in
onnxruntime, and compiled CUDA where CuPy sees a GPU. Native code is also checked
backward: the op's grad ops compiled give the interpreter's gradients. The values agree
as agreement.py says (dtype, shape, LoD where the target keeps it, NaN and inf at the same
places, finite values to the type's tolerance).

A target may decline a case, saying why; the last test fails when a target declines more
cases than tests/targets/declines.json allows, so a claim only grows.
"""
import numpy as np
import pytest

from tests.ops.op_test import all_table_cases

from .agreement import assert_agree
from .edge_values import is_elementwise, variants
from .one_build import OneBuildPerOp
from .tally import TALLY
from .targets import (Declined, claims, claims_grad, forward_program, gradient_program,
                      native_values, onnx_outputs)

#: the edge values make the interpreter's NumPy warn (an overflow, an invalid value), as
#: they are meant to
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

TABLE = all_table_cases()
CASES = TABLE + variants(TABLE)

FORWARD = [(target, case) for case in CASES for target in sorted(claims(case.op))]
BACKWARD = [(target, case) for case in CASES for target in sorted(claims_grad(case))]

#: the native targets' names for the generator
NATIVE = {"native": "cpp", "cuda": "cuda"}
#: (target, program maker) -> the one build per op of the cases it is asked for
BUILDS = {(target, make): OneBuildPerOp([c for t, c in pairs if t == target], make,
                                        NATIVE[target])
          for target in NATIVE
          for make, pairs in ((forward_program, FORWARD), (gradient_program, BACKWARD))}


def _forward(target, case, tmp_path):
    """[(name, interpreter's value, target's value)] of the case's outputs."""
    if target == "onnx":
        return onnx_outputs(case, tmp_path)
    return native_values(case, forward_program, NATIVE[target],
                         BUILDS[target, forward_program])


def _id(pair):
    target, case = pair
    return f"{target}-{case.id}"


def _run(tally_as, case, run, what):
    """Run the case on its target: record a decline (which must say why) or compare."""
    try:
        values = run()
    except Declined as why:
        assert str(why), f"{tally_as} {case.id}: declined without a reason"
        TALLY.decline(tally_as, case, str(why))
        return
    TALLY.compare(tally_as, case)
    elementwise = is_elementwise(case.op) and what == "output"
    scale = _input_scale(case) if elementwise and tally_as == "onnx" else None
    for name, want, got in values:
        assert_agree(f"{tally_as} {case.id}: {what} {name}", want, got,
                     elementwise=elementwise, input_scale=scale)


def _input_scale(case):
    """The largest magnitude of an elementwise op's inputs at each place (their shapes
    alike), or None."""
    arrays = [np.abs(np.asarray(v, "float64")) for v in case.inputs.values()
              if not isinstance(v, list)]
    if not arrays or any(a.shape != arrays[0].shape for a in arrays):
        return None
    return np.maximum.reduce(arrays) if len(arrays) > 1 else arrays[0]


@pytest.mark.parametrize("pair", FORWARD, ids=_id)
def test_each_target_gives_the_interpreters_outputs(pair, request, tmp_path):
    target, case = pair
    TALLY.ran.add(request.node.nodeid)
    _run(target, case, lambda: _forward(target, case, tmp_path), "output")


@pytest.mark.parametrize("pair", BACKWARD, ids=_id)
def test_compiled_grad_ops_give_the_interpreters_gradients(pair, request):
    target, case = pair
    TALLY.ran.add(request.node.nodeid)
    _run(f"{target}-grad", case, lambda: native_values(
        case, gradient_program, NATIVE[target], BUILDS[target, gradient_program]), "gradient")


def test_no_target_declines_more_cases_than_its_baseline(request):
    """(Runs last: the counts need every case of the module to have run.)"""
    ours = {item.nodeid for item in request.session.items
            if item.module is request.module and hasattr(item, "callspec")}
    total = len(FORWARD) + len(BACKWARD)
    if len(ours) < total or not ours <= TALLY.ran:
        pytest.skip(f"{len(ours & TALLY.ran)} of the module's {total} cases ran: the "
                    f"decline counts are checked on a run of them all")
    risen = TALLY.check_baseline()
    assert not risen, "targets decline more cases than before:\n" + "\n".join(risen)
