"""fluid.contrib.layers (Fluid 1.8) that append one op each: partial_concat, partial_sum,
shuffle_batch, tree_conv and rank_attention build Fluid 1.8's op types, slots and attributes,
and the ones whose ops run agree with NumPy; the dygraph.nn classes Fluid 1.8 keeps for
static graphs (SequenceConv, RowConv) build what their layer functions build."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb import layers
from fluid_nb.api.contrib import layers as contrib
from fluid_nb.api.dygraph import nn
from fluid_nb.errors import InvalidArgument

RNG = np.random.RandomState(3)


def run(build, feed, seed=None):
    main, startup = fluid.Program(), fluid.Program()
    if seed is not None:
        main.random_seed = startup.random_seed = seed
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        outs = build()
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    return main, exe.run(main, feed=feed, fetch_list=list(outs), scope=scope,
                         return_numpy=False)


def test_partial_concat_and_partial_sum_take_one_column_range_of_each_input():
    x, y = RNG.rand(4, 5).astype("float32"), RNG.rand(4, 5).astype("float32")

    def build():
        a = fluid.data(name="x", shape=[None, 5], dtype="float32")
        b = fluid.data(name="y", shape=[None, 5], dtype="float32")
        return (contrib.partial_concat([a, b], start_index=1, length=2),
                contrib.partial_sum([a, b], start_index=-2),
                contrib.partial_concat(a))
    main, (cat, total, whole) = run(build, {"x": x, "y": y})
    assert [op.type for op in main.global_block().ops] == \
        ["partial_concat", "partial_sum", "partial_concat"]
    np.testing.assert_allclose(np.array(cat), np.concatenate([x[:, 1:3], y[:, 1:3]], 1))
    np.testing.assert_allclose(np.array(total), x[:, 3:] + y[:, 3:], rtol=1e-6)
    np.testing.assert_allclose(np.array(whole), x)


def test_shuffle_batch_permutes_rows_and_keeps_a_persistable_seed():
    x = np.arange(12, dtype="float32").reshape(6, 2)

    def build():
        data = fluid.data(name="x", shape=[None, 2], dtype="float32")
        return (contrib.shuffle_batch(data, seed=7),)
    main, (out,) = run(build, {"x": x})
    op = main.global_block().ops[-1]
    assert op.type == "shuffle_batch" and op.attr("startup_seed") == 7
    seed = main.global_block().var(op.input("Seed")[0])
    assert seed.persistable and op.output("SeedOut") == op.input("Seed")
    out = np.array(out)
    assert sorted(map(tuple, out.tolist())) == sorted(map(tuple, x.tolist()))


def test_shuffle_batch_takes_the_program_seed_when_none_is_given():
    main = fluid.Program()
    main.random_seed = 1000
    with fluid.program_guard(main, fluid.Program()):
        contrib.shuffle_batch(fluid.data(name="x", shape=[None, 3], dtype="float32"))
    assert main.global_block().ops[-1].attr("startup_seed") == 1000


def test_tree_conv_builds_filter_bias_and_activation():
    def build():
        nodes = fluid.data(name="nodes", shape=[1, 10, 5], dtype="float32")
        edges = fluid.data(name="edges", shape=[1, 9, 2], dtype="int32")
        return (contrib.tree_conv(nodes, edges, output_size=6, num_filters=2, max_depth=2),)
    edges = np.array([1, 2, 1, 3, 1, 4, 1, 5, 2, 6, 2, 7, 2, 8, 4, 9, 4, 10],
                     "int32").reshape(1, 9, 2)
    main, (out,) = run(build, {"nodes": RNG.rand(1, 10, 5).astype("float32"),
                               "edges": edges})
    block = main.global_block()
    assert [op.type for op in block.ops] == ["tree_conv", "elementwise_add", "tanh"]
    assert block.var("tree_conv_0.w_0").shape == (5, 3, 6, 2)
    assert np.array(out).shape == (1, 10, 6, 2)
    assert np.all(np.abs(np.array(out)) <= 1)


def test_rank_attention_appends_its_op_with_the_rank_parameter_and_runs():
    param = RNG.rand(18, 3).astype("float32")
    init = fluid.initializer.NumpyArrayInitializer(param)

    def build():
        x = fluid.data(name="input", shape=[None, 2], dtype="float32")
        offset = fluid.data(name="rank_offset", shape=[None, 7], dtype="int32")
        return (contrib.rank_attention(x, offset, rank_param_shape=[18, 3],
                                       rank_param_attr=fluid.ParamAttr(name="ubm.w_0",
                                                                       initializer=init),
                                       max_rank=3),)
    x = RNG.rand(2, 2).astype("float32")
    # instance 0 (rank 1) reads itself as rank 1 and instance 1 as rank 2; instance 1 has
    # no rank of its own, so its output is 0
    offset = np.array([[1, 1, 0, 2, 1, -1, 0], [-1, 1, 1, 1, 0, 1, 0]], "int32")
    main, (out,) = run(build, {"input": x, "rank_offset": offset})
    op = main.global_block().ops[-1]
    assert op.type == "rank_attention" and op.input("RankParam") == ["ubm.w_0"]
    assert op.attr("MaxRank") == 3 and op.attr("MaxSize") == 0
    assert main.global_block().var("ubm.w_0").shape == (18, 3)
    want = np.stack([x[0] @ param[0:2] + x[1] @ param[2:4], np.zeros(3, "float32")])
    np.testing.assert_allclose(np.array(out), want, rtol=1e-5)


def test_rank_attention_refuses_a_parameter_of_the_wrong_height():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data(name="input", shape=[None, 2], dtype="float32")
        offset = fluid.data(name="rank_offset", shape=[None, 7], dtype="int32")
        with pytest.raises(InvalidArgument, match="rank_param_shape"):
            contrib.rank_attention(x, offset, [10, 3], None, max_rank=3)


@pytest.mark.parametrize("make_layer, make_ref", [
    (lambda: nn.RowConv("RowConv", future_context_size=2),
     lambda x: layers.row_conv(x, future_context_size=2)),
    (lambda: nn.SequenceConv("seq_conv", num_filters=2, act="sigmoid"),
     lambda x: layers.sequence_conv(x, 2, act="sigmoid")),
])
def test_static_graph_dygraph_classes_build_what_their_layers_build(make_layer, make_ref):
    data = np.arange(12, dtype="float32").reshape(3, 4)
    feed = {"x": fluid.create_lod_tensor(data, [[1, 2]], fluid.CPUPlace())}

    def build_with(fn):
        def build():
            x = layers.data(name="x", shape=[3, 4], dtype="float32", lod_level=1,
                            append_batch_size=False)
            return (fn(x),)
        return build
    layer = make_layer()
    main, (got,) = run(build_with(lambda x: layer(x)), feed, seed=90)
    _, (want,) = run(build_with(make_ref), feed, seed=90)
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-6)
    assert got.lod() == want.lod()
    assert layer.full_name() + ".w_0" in [p.name for p in main.all_parameters()]
