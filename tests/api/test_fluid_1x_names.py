"""Names Fluid 1.x scripts use that sit outside fluid.layers: fluid.embedding and
fluid.one_hot (ids without a trailing 1), fluid.cpu_places, fluid.create_random_int_lodtensor,
the fluid.executor module path, memory_optimize/release_memory's arguments, and the
parameter-server dispatchers HashName and RoundRobin."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument


def _run(build, feed, fetch_names=(), seed=3):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = seed
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        outs = build()
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    values = exe.run(main, feed=feed, fetch_list=list(outs) + list(fetch_names), scope=scope)
    return main, scope, values


IDS = np.array([[1, 2, 3, 9], [0, 0, 5, 4]], "int64")


def test_embedding_picks_rows_by_ids_of_any_shape():
    def build():
        ids = fluid.data("ids", [None, 4], "int64")
        return [fluid.embedding(ids, size=[10, 3])]
    main, scope, (out,) = _run(build, {"ids": IDS})
    table = scope.find_var("embedding_0.w_0").value.numpy()
    assert out.shape == (2, 4, 3)
    np.testing.assert_array_equal(out, table[IDS])
    assert [op.type for op in main.global_block().ops] == ["lookup_table_v2"]


def test_embedding_padding_rows_are_zero_and_counted_from_the_end_when_negative():
    def build():
        ids = fluid.data("ids", [None, 4], "int64")
        return [fluid.embedding(ids, size=[10, 3], padding_idx=-1)]
    main, scope, (out,) = _run(build, {"ids": IDS})
    assert main.global_block().ops[0].attrs["padding_idx"] == 9
    np.testing.assert_array_equal(out[0, 3], np.zeros(3, "float32"))  # id 9 is the padding


def test_embedding_gradient_is_the_count_of_each_id_over_the_mean():
    """d mean(W[ids]) / dW[v] = (times v occurs) / (ids * dim), against a float64
    finite difference of the same program."""
    def build():
        ids = fluid.data("ids", [None, 4], "int64")
        emb = fluid.embedding(ids, size=[10, 3], dtype="float64")
        loss = fluid.layers.mean(emb)
        fluid.append_backward(loss)
        return [loss]
    main, scope, (loss, grad) = _run(build, {"ids": IDS}, ["embedding_0.w_0@GRAD"])
    counts = np.bincount(IDS.ravel(), minlength=10)[:, None] / (IDS.size * 3)
    np.testing.assert_allclose(grad, np.repeat(counts, 3, axis=1), rtol=1e-12)
    table = scope.find_var("embedding_0.w_0").value.numpy()
    eps, row, col = 1e-6, 0, 1
    bumped = table.copy()
    bumped[row, col] += eps
    numeric = (bumped[IDS].mean() - table[IDS].mean()) / eps
    np.testing.assert_allclose(grad[row, col], numeric, rtol=1e-5)


def test_one_hot_adds_a_depth_dimension_without_a_trailing_one():
    def build():
        ids = fluid.data("ids", [None, 4], "int64")
        return [fluid.one_hot(ids, depth=10)]
    _, _, (out,) = _run(build, {"ids": IDS})
    np.testing.assert_array_equal(out, np.eye(10, dtype="float32")[IDS])


def test_one_hot_out_of_range_is_refused_unless_allowed():
    def build(allow):
        def make():
            ids = fluid.data("ids", [None, 4], "int64")
            return [fluid.one_hot(ids, depth=5, allow_out_of_range=allow)]
        return make
    _, _, (out,) = _run(build(True), {"ids": IDS})
    assert not out[0, 3].any()  # id 9 >= depth: a row of zeros
    with pytest.raises(fluid.errors.FluidError, match="expected"):
        _run(build(False), {"ids": IDS})


def test_bad_arguments_are_refused_and_leave_nothing():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        ids = fluid.data("ids", [None, 4], "int64")
        with pytest.raises(InvalidArgument, match="embedding: size"):
            fluid.embedding(ids, size=[10])
        with pytest.raises(InvalidArgument, match="one_hot: depth"):
            fluid.one_hot(ids, depth=0)
    assert len(main.global_block().ops) == 0 and not startup.global_block().ops


def test_cpu_places_and_random_int_lod_tensors():
    assert fluid.cpu_places(3) == [fluid.CPUPlace()] * 3
    with pytest.raises(InvalidArgument, match="device_count"):
        fluid.cpu_places(0)
    np.random.seed(0)
    tensor = fluid.create_random_int_lodtensor([[2, 3]], [1], fluid.CPUPlace(), low=0, high=9)
    values = np.asarray(tensor)
    assert values.shape == (5, 1) and values.dtype == np.int64
    assert tensor.lod() == [[0, 2, 5]] and values.min() >= 0 and values.max() <= 9
    draws = np.asarray(fluid.create_random_int_lodtensor([[4000]], [], None, low=3, high=4))
    assert set(np.unique(draws)) == {3, 4}  # high is included, as in Fluid
    with pytest.raises(InvalidArgument, match="low and high"):
        fluid.create_random_int_lodtensor([[2]], [1], None, low=5, high=1)


def test_the_executor_module_path_scripts_import():
    from fluid_nb.executor import Executor, global_scope, scope_guard
    assert Executor is fluid.Executor and global_scope is fluid.global_scope
    assert scope_guard is fluid.scope_guard


def test_memory_optimize_and_release_memory_transform_the_program_and_check_arguments():
    import warnings
    from fluid_nb.errors import InvalidType
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, 2], dtype="float32")
        hidden = fluid.layers.fc(input=x, size=2)
        loss = fluid.layers.mean(fluid.layers.fc(input=hidden, size=1))
    version = main._version
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no longer deprecated no-ops: nothing to warn about
        assert fluid.memory_optimize(main, level=1) is None
        assert fluid.release_memory(main) is None
    reuses = main._memory_optimize_log
    assert [(r.var, r.reuses) for r in reuses] == [("fc_1.tmp_0", "fc_0.tmp_0"),
                                                   ("fc_1.tmp_1", "fc_0.tmp_1")]
    assert main._version > version
    assert [op.type for op in main.global_block().ops].count("delete_var") >= 1
    fluid.verify(main)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    exe.run(main, feed={"x": np.ones((3, 2), "float32")}, fetch_list=[loss], scope=scope)
    with pytest.raises(InvalidArgument, match="level expected 0 or 1"):
        fluid.memory_optimize(main, level=2)
    with pytest.raises(InvalidType, match="input_program expected a Program"):
        fluid.release_memory("main")
    with pytest.raises(InvalidType, match="input_program expected a Program"):
        fluid.memory_optimize(None)
    with pytest.raises(InvalidType, match="skip_opt_set expected a set of variable names"):
        fluid.memory_optimize(main, skip_opt_set="fc_0.tmp_0")


def test_round_robin_takes_the_servers_in_turn_across_calls():
    endpoints = ["127.0.0.1:6170", "127.0.0.1:6171", "127.0.0.1:6172"]
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        w = fluid.layers.create_parameter([2, 2], "float32", name="w")
    dispatcher = fluid.RoundRobin(endpoints)
    assert dispatcher.dispatch([w, "b", "v", "u"]) == endpoints + endpoints[:1]
    assert dispatcher.dispatch(["z"]) == endpoints[1:2]
    dispatcher.reset()
    assert dispatcher.dispatch(["z"]) == endpoints[:1]
    assert dispatcher.eps == endpoints


def test_hash_name_sends_a_name_to_the_same_server_in_every_process():
    import zlib
    endpoints = ["127.0.0.1:6170", "127.0.0.1:6171"]
    names = ["fc_0.w_0", "fc_0.b_0", "embedding_0.w_0", "fc_1.w_0"]
    placed = fluid.HashName(endpoints).dispatch(names)
    assert placed == [endpoints[zlib.crc32(n.encode()) % 2] for n in names]
    assert len(set(placed)) == 2  # these names spread over both servers
    assert fluid.HashName(endpoints).dispatch(names[::-1]) == placed[::-1]
    with pytest.raises(InvalidArgument, match="pserver_endpoints expected a non-empty list"):
        fluid.HashName([])
