"""Every op defined by a formula (its record's expression) compiles for both native
targets from that one definition: the C++ and the CUDA source of a program holding each
such op, forward and gradient, build (CUDA with nvcc, which needs no GPU), and the
generated line is the same for both targets. (That the compiled values equal the
interpreter's, edge values included, is the differential test's: tests/targets.)"""
import os
import shutil

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.ops import registry
from fluid_nb.rewriters import native
from fluid_nb.rewriters.native.build import build

HAS_NVCC = shutil.which("nvcc") is not None or os.path.exists("/usr/local/cuda/bin/nvcc")

FORMULA_OPS = sorted(t for t, d in registry.all_ops().items() if d.formula is not None)


def _every_formula_program():
    """One program: each formula op applied to the feeds (its grad ops to a dOut feed)."""
    program = fluid.Program()
    block = program.global_block()
    shape = [4, 3]
    feeds = {}
    for name in ("x", "y", "dout"):
        block.create_var(name=name, shape=shape, dtype="float32")
        feeds[name] = np.random.RandomState(0).rand(*shape).astype("float32") + 0.5
    for index, op_type in enumerate(FORMULA_OPS):
        formula = registry.get(op_type).formula
        slots = {"X": "x", "Y": "y", "Out": "x", "Out@GRAD": "dout"}
        out = block.create_var(name=f"result_{index}", shape=shape, dtype="float32")
        block.append_op(type=op_type,
                        inputs={slot: slots[slot] for slot in formula.inputs.values()},
                        outputs={formula.output: out})
    return program, feeds, [f"result_{i}" for i in range(len(FORMULA_OPS))]


def test_every_formula_op_is_compiled_from_its_record():
    assert {"relu", "sigmoid", "tanh_grad", "elementwise_max", "gelu"} <= set(FORMULA_OPS)
    program, feed, fetch = _every_formula_program()
    source = native.generate(program, feed=feed, fetch=fetch, scope=fluid.Scope())
    assert source.fallbacks == []
    assert "FLUID_LAMBDA(float x) -> float { return max_value<float>(x, 0.0f); }" in \
        source.source


def test_the_cpp_and_cuda_sources_render_each_formula_the_same():
    program, feed, fetch = _every_formula_program()
    cpp = native.generate(program, feed=feed, fetch=fetch, scope=fluid.Scope())
    cuda = native.generate(program, target="cuda", feed=feed, fetch=fetch, scope=fluid.Scope())
    assert len(cpp.functions) == len(cuda.functions) == len(FORMULA_OPS)
    for index, _ in cpp.functions:  # ops of one formula (a zero gradient) share one body
        lambdas = _lambda_lines(cpp, index)
        assert len(lambdas) == 1
        assert lambdas == _lambda_lines(cuda, index)


def _lambda_lines(source, index):
    text = source.function_of(0, index)["source"]
    return [line.strip() for line in text.splitlines() if "FLUID_LAMBDA" in line]


@pytest.mark.skipif(not HAS_NVCC, reason="nvcc is not installed")
def test_every_formula_builds_for_cuda():
    program, feed, fetch = _every_formula_program()
    source = native.generate(program, target="cuda", feed=feed, fetch=fetch,
                             scope=fluid.Scope())
    library, _ = build(source.source, target="cuda")
    assert library.exists()
