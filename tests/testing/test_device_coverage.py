"""Every registered op runs on the strict device somewhere in the suite: the op tables run
each case forward and backward there (tests/ops/op_test.py), and the programs of
tests/testing/test_models_on_strict_device.py and tests/ops/test_beam_search.py run the ops
a table cannot feed (rank tables, tensor arrays, sub-blocks, sparse gradients, Print,
py_func). Loading parameters onto the device is pinned here."""

import numpy as np

import fluid_nb as fluid
from fluid_nb.ops import registry
from fluid_nb.testing.strict_device import DeviceArray, StrictDevicePlace

from tests.ops.op_test import all_table_cases, build
from tests.testing import test_models_on_strict_device as models

#: ops run on the strict device by a test outside the tables and the model programs
ELSEWHERE = {
    "beam_search": "tests/ops/test_beam_search.py::test_beam_search_step_on_the_strict_device",
    "beam_search_decode": "tests/ops/test_beam_search.py (device tensor arrays)",
    "print": "test_models_on_strict_device.py::test_print_and_py_func_see_device_values...",
    "py_func": "test_models_on_strict_device.py::test_print_and_py_func_see_device_values...",
    "load": "test_parameters_load_onto_the_device (below)",
    "load_combine": "tests/ops/test_file_ops.py::test_load_combine_loads_onto_the_strict_device",
    "read": "a loader's batches are host data, moved to the device by the ops that read "
            "them as feeds are (tests/api/test_data_loader.py runs the op)",
    "split_selected_rows": "tests/ops/test_distributed_ops.py::test_split_selected_rows_runs_"
                           "on_the_strict_device_without_host_copies",
    "lookup_sparse_table": "tests/ops/test_sparse_ids.py::test_lookup_sparse_table_runs_on_"
                           "the_strict_device",
    "pyramid_hash_grad": "tests/ops/test_pyramid_hash.py::test_grad_op_updates_w_in_place_"
                         "by_minus_lr_times_the_gradient[strict_device]",
}
# the RPC ops move values between processes: their kernels are the distributed runtime's
for _op in ("send", "recv", "send_barrier", "fetch_barrier", "listen_and_serv",
            "distributed_lookup_table", "checkpoint_notify"):
    ELSEWHERE[_op] = "no device kernel: an RPC op of the distributed runtime"
#: ops of test_memory_optimize_and_sparse_gradient_clipping_on_the_device's program
CLIPPING_TEST_OPS = {"merge_selected_rows", "get_tensor_from_selected_rows", "delete_var"}
MODEL_PROGRAMS = [models.mlp, models.conv_net, models.dynamic_rnn, models.text_classifier,
                  models.branches, models.sparse_embedding, models.arrays_and_ranks]




def _ops_run_by_the_tables():
    ran = set()
    for case in all_table_cases():
        ran.add(case.op)
        if case.grad:
            inputs = dict(case.inputs)
            expected = case.ref(inputs, dict(case.attrs)) if case.ref is not None else None
            _, op, _, _ = build(case, inputs, expected)
            ran.update(spec.type for spec in registry.make_grad_ops(op))
    return ran


def _ops_of_the_model_programs():
    ran = set()
    for make in MODEL_PROGRAMS:
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup), fluid.unique_name.guard():
            make()
        ran.update(op.type for program in (main, startup) for block in program.blocks
                   for op in block.ops)
    return ran | CLIPPING_TEST_OPS | {"feed", "fetch"}


def test_every_registered_op_runs_on_the_strict_device():
    ran = _ops_run_by_the_tables() | _ops_of_the_model_programs() | set(ELSEWHERE)
    registered = {t for t in registry.all_ops() if not t.startswith("test_")}
    missing = sorted(registered - ran)
    assert not missing, f"ops no test runs on the strict device: {missing}"


def test_the_clipping_test_really_builds_the_sparse_and_release_ops():
    """CLIPPING_TEST_OPS are what a sparse gradient clipped by global norm and
    release_memory add to a program (the device test asserts it of its own program too)."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        words = fluid.layers.data(name="words", shape=[1], dtype="int64")
        emb = fluid.layers.embedding(input=words, size=[30, 4], is_sparse=True)
        loss = fluid.layers.mean(emb)
        fluid.optimizer.SGD(learning_rate=0.1, grad_clip=fluid.clip.GradientClipByGlobalNorm(
            clip_norm=0.5)).minimize(loss)
        fluid.release_memory(main)
    ops = {op.type for op in main.global_block().ops}
    assert CLIPPING_TEST_OPS <= ops


def test_parameters_load_onto_the_device(tmp_path):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[3], dtype="float32")
        y = fluid.layers.fc(input=x, size=2)
    host = fluid.Executor(fluid.CPUPlace())
    host_scope = fluid.Scope()
    host.run(startup, scope=host_scope)
    with fluid.scope_guard(host_scope):
        fluid.io.save_params(host, str(tmp_path), main_program=main)
    feed = {"x": np.ones((2, 3), "float32")}
    want, = host.run(main, feed=feed, fetch_list=[y], scope=host_scope)
    device, scope = fluid.Executor(StrictDevicePlace()), fluid.Scope()
    with fluid.scope_guard(scope):
        fluid.io.load_params(device, str(tmp_path), main_program=main)
    weight = scope.find_var(main.global_block().all_parameters()[0].name).get_tensor()
    assert isinstance(weight.array, DeviceArray)
    got, = device.run(main, feed=feed, fetch_list=[y], scope=scope)
    np.testing.assert_array_equal(got, want)
