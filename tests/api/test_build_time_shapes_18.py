"""Fluid 1.8 builds sequence_softmax and filter_by_instag over inputs whose dims are only
partly known (an fc output [-1, 20], a data layer [-1, 32, 1]); what the kernels need is
checked when the op runs."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb import layers
from fluid_nb.errors import InvalidArgument


def test_sequence_softmax_builds_over_any_width_and_runs_over_width_one():
    def build(width):
        main = fluid.Program()
        with fluid.program_guard(main, fluid.Program()):
            seq = layers.data(name="seq", shape=[width], dtype="float32", lod_level=1)
            out = layers.sequence_softmax(seq)
        return main, out
    wide_program, wide = build(20)
    narrow_program, narrow = build(1)
    assert wide.shape == (-1, 20)
    x = np.random.RandomState(0).rand(5, 20).astype("float32")
    sums = x.sum(1, keepdims=True)
    exe = fluid.Executor(fluid.CPUPlace())
    feed = {"seq": fluid.create_lod_tensor(sums, [[2, 3]], fluid.CPUPlace())}
    got, = exe.run(narrow_program, feed=feed, fetch_list=[narrow], scope=fluid.Scope())
    sums = sums.reshape(-1)
    want = np.concatenate([np.exp(s - s.max()) / np.exp(s - s.max()).sum()
                           for s in (sums[:2], sums[2:])])
    np.testing.assert_allclose(got.reshape(-1), want, rtol=1e-5)
    feed = {"seq": fluid.create_lod_tensor(x, [[2, 3]], fluid.CPUPlace())}
    with pytest.raises(InvalidArgument, match=r"sequence_softmax.*\[N\] or \[N, 1\]"):
        exe.run(wide_program, feed=feed, fetch_list=[wide], scope=fluid.Scope())


def test_filter_by_instag_takes_rows_of_a_data_layer_with_a_trailing_one():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        ins = layers.data(name="Ins", shape=[4, 1], dtype="float32")
        tags = layers.data(name="Ins_tag", shape=[1], dtype="int64", lod_level=1)
        wanted = layers.data(name="Filter_tag", shape=[1], dtype="int64",
                             append_batch_size=False)
        out, _ = layers.filter_by_instag(ins, tags, wanted, is_lod=False)
    assert out.shape == (-1, 4)
    rows = np.arange(12, dtype="float32").reshape(3, 4, 1)
    feed = {"Ins": rows,
            "Ins_tag": fluid.create_lod_tensor(np.array([[1], [2], [1]], "int64"),
                                               [[1, 1, 1]], fluid.CPUPlace()),
            "Filter_tag": np.array([1], "int64")}
    got, = fluid.Executor(fluid.CPUPlace()).run(main, feed=feed, fetch_list=[out],
                                                scope=fluid.Scope())
    np.testing.assert_array_equal(got, rows[[0, 2], :, 0])
