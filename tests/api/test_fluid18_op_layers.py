"""Fluid 1.8 layers that build the first-version ops: one_hot (op one_hot on [..., 1] ids),
argmin (arg_min), reduce_prod, and ctc_greedy_decoder on padded input."""
import numpy as np

import fluid_nb as fluid


def _run(build, feed):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        outs = build()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    fluid.verify(main)
    return main, exe.run(main, feed=feed, fetch_list=list(outs))


def test_one_hot_builds_the_first_version_op():
    ids = np.array([[1], [0], [3]], "int64")

    def build():
        x = fluid.layers.data(name="x", shape=[3, 1], dtype="int64", append_batch_size=False)
        return [fluid.layers.one_hot(x, depth=4)]
    main, (out,) = _run(build, {"x": ids})
    assert [op.type for op in main.global_block().ops] == ["one_hot"]
    np.testing.assert_array_equal(out, np.eye(4, dtype="float32")[[1, 0, 3]])


def test_one_hot_v2_stays_for_fluid_one_hot():
    def build():
        x = fluid.layers.data(name="x", shape=[3], dtype="int64", append_batch_size=False)
        return [fluid.one_hot(x, depth=3)]
    main, (out,) = _run(build, {"x": np.array([2, 0, 1], "int64")})
    assert [op.type for op in main.global_block().ops] == ["one_hot_v2"]
    np.testing.assert_array_equal(out, np.eye(3, dtype="float32")[[2, 0, 1]])


def test_argmin_and_reduce_prod_run():
    x_value = np.array([[3.0, 1.0, 2.0], [0.5, 4.0, -1.0]], "float32")

    def build():
        x = fluid.layers.data(name="x", shape=[2, 3], dtype="float32", append_batch_size=False)
        return [fluid.layers.argmin(x, axis=1), fluid.layers.reduce_prod(x, dim=0),
                fluid.layers.reduce_prod(x)]
    main, (amin, prod0, prod_all) = _run(build, {"x": x_value})
    assert {op.type for op in main.global_block().ops} == {"arg_min", "reduce_prod"}
    np.testing.assert_array_equal(amin, [1, 2])
    np.testing.assert_allclose(prod0, x_value.prod(axis=0), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(prod_all).reshape(-1), [x_value.prod()], rtol=1e-6)


def test_ctc_greedy_decoder_decodes_padded_rows():
    probs = np.zeros((2, 4, 3), "float32")
    best = [[1, 1, 0, 2], [2, 0, 2, 0]]
    for b, row in enumerate(best):
        probs[b, np.arange(4), row] = 1.0

    def build():
        x = fluid.layers.data(name="x", shape=[2, 4, 3], dtype="float32",
                              append_batch_size=False)
        length = fluid.layers.data(name="len", shape=[2, 1], dtype="int64",
                                   append_batch_size=False)
        return list(fluid.layers.ctc_greedy_decoder(x, blank=0, input_length=length))
    _, (out, out_len) = _run(build, {"x": probs, "len": np.array([[4], [3]], "int64")})
    np.testing.assert_array_equal(out, [[1, 2, 0, 0], [2, 2, 0, 0]])
    np.testing.assert_array_equal(out_len, [[2], [2]])
