"""The CUDA target's code for every op it claims builds with nvcc, on any machine with nvcc.

Running compiled CUDA needs a GPU (test_targets_agree.py does it there); building it does
not. A case of each op with code for both targets, forward and backward, the static
(specialised) cases merged into one program per direction: one nvcc build each, so a
kernel call the CUDA runtime header lacks fails here, where no GPU is lent, too.
"""
import os
import shutil

import pytest

import fluid_nb as fluid
from fluid_nb.rewriters.native import generate
from fluid_nb.rewriters.native.build import build

from tests.ops.op_test import all_table_cases

from .one_build import merge
from .targets import claims, claims_grad, forward_program, gradient_program

HAS_NVCC = shutil.which("nvcc") is not None or os.path.exists("/usr/local/cuda/bin/nvcc")


def _parts(make, wanted):
    """(program, feed, fetch) of the first case of each op that ``wanted`` accepts whose
    CUDA code the generator writes without falling back, for a build of static sizes."""
    parts, ops = [], set()
    for case in all_table_cases():
        if case.op in ops or case.lod or not wanted(case):
            continue
        try:
            program, feed, fetch = make(case)
            source = generate(program, target="cuda", feed=feed, fetch=fetch,
                              scope=fluid.Scope())
        except Exception:  # noqa: BLE001  (the case's own tests report it)
            continue
        if source.fallbacks or source.dynamic:
            continue
        parts.append((program, feed, fetch))
        ops.add(case.op)
    return parts, ops


@pytest.mark.skipif(not HAS_NVCC, reason="nvcc is not installed")
@pytest.mark.parametrize("make, wanted, among_them", [
    (forward_program, lambda case: "cuda" in claims(case.op),
     {"equal", "less_than", "elementwise_add", "softmax", "adam"}),
    (gradient_program, lambda case: "cuda" in claims_grad(case),
     {"elementwise_add", "mul", "softmax_with_cross_entropy", "tanh"}),
], ids=["forward", "backward"])
def test_every_claimed_op_builds_for_cuda(make, wanted, among_them):
    parts, ops = _parts(make, wanted)
    assert among_them <= ops
    merged, feed, fetch, _ = merge(parts)
    source = generate(merged, target="cuda", feed=feed, fetch=fetch, scope=fluid.Scope())
    assert source.fallbacks == [] and not source.dynamic
    library, _ = build(source.source, target="cuda")  # nvcc's errors name the op's call
    assert library.exists()
