"""rnn_memory_helper: the identity, its gradient Out@GRAD or zeros when none arrives."""
import numpy as np

import fluid_nb as fluid
from .op_test import OpCase, table_tests

rng = np.random.RandomState(25)

CASES = [
    OpCase("rnn_memory_helper", {"X": rng.uniform(-1, 1, (2, 3))},
           ref=lambda i, a: {"Out": i["X"]}, grad=["X"]),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


def test_grad_is_zeros_when_no_gradient_reaches_out():
    program = fluid.Program()
    block = program.global_block()
    for name in ("X", "Out", "X@GRAD"):
        block.create_var(name=name, shape=[2, 3], dtype="float32")
    block.append_op(type="rnn_memory_helper_grad", inputs={"X": ["X"], "Out": ["Out"]},
                    outputs={"X@GRAD": ["X@GRAD"]})
    x = rng.uniform(-1, 1, (2, 3)).astype("float32")
    out, = fluid.Executor(fluid.CPUPlace()).run(program, feed={"X": x, "Out": x},
                                                fetch_list=["X@GRAD"], scope=fluid.Scope())
    np.testing.assert_array_equal(out, np.zeros((2, 3), "float32"))
