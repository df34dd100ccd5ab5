"""Fluid 1.8's framework-level names: name and device scopes, flags, places, the compiled
and parallel program runners, the profiler, version checks and the install check."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument, NotFound, PreconditionNotMet, Unimplemented

X = np.arange(12, dtype="float32").reshape(4, 3) / 12


def _line():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[3], dtype="float32")
        loss = fluid.layers.mean(fluid.layers.fc(input=x, size=1))
        fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    return main, startup, loss


def test_name_scopes_nest_number_repeats_and_are_saved_with_the_ops():
    # the numbering is the process's, as Fluid's: a name no other test uses starts at none
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.layers.data(name="x", shape=[3], dtype="float32")
        with fluid.name_scope("numbered_encoder"):
            h = fluid.layers.fc(input=x, size=2)
            with fluid.name_scope("attention"):
                a = fluid.layers.relu(h)
        with fluid.name_scope("numbered_encoder"):
            fluid.layers.relu(a)
        fluid.layers.relu(a)
    scopes = [op.attrs.get("op_namescope") for op in main.global_block().ops]
    assert scopes == ["/numbered_encoder/", "/numbered_encoder/",
                      "/numbered_encoder/attention/", "/numbered_encoder_1/", None]
    again = fluid.Program.parse_from_string(main.serialize_to_string())
    assert again.global_block().ops[2].attrs["op_namescope"] == "/numbered_encoder/attention/"


def test_device_guard_marks_ops_and_refuses_unknown_devices():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.layers.data(name="x", shape=[3], dtype="float32")
        with fluid.device_guard("cpu"):
            fluid.layers.relu(x)
        fluid.layers.relu(x)
        with pytest.raises(InvalidArgument, match="device_guard: device expected"):
            with fluid.device_guard("tpu"):
                pass
    assert [op.attrs.get("op_device") for op in main.global_block().ops] == ["cpu", None]
    assert fluid.framework.device_guard is fluid.device_guard


def test_flags_are_typed_and_unknown_ones_refused():
    before = fluid.get_flags(["FLAGS_eager_delete_tensor_gb"])
    fluid.set_flags({"FLAGS_eager_delete_tensor_gb": 1})
    try:
        assert fluid.get_flags("FLAGS_eager_delete_tensor_gb") == {
            "FLAGS_eager_delete_tensor_gb": 1.0}
        with pytest.raises(InvalidArgument, match="FLAGS_check_nan_inf expected a bool"):
            fluid.set_flags({"FLAGS_check_nan_inf": "yes"})
        with pytest.raises(NotFound, match="one of Fluid's flags"):
            fluid.get_flags("FLAGS_no_such_flag")
    finally:
        fluid.set_flags(before)


def test_places_of_the_framework_module():
    assert fluid.framework.cpu_places(3) == [fluid.CPUPlace()] * 3
    assert len(fluid.cuda_pinned_places(2)) == 2
    if not fluid.is_compiled_with_cuda():
        with pytest.raises(PreconditionNotMet):
            fluid.cuda_places()
    assert fluid.in_dygraph_mode() is False and fluid.framework.in_dygraph_mode() is False


def test_a_compiled_program_with_data_parallel_runs_as_its_program():
    main, startup, loss = _line()
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    plain_scope = fluid.Scope()
    exe.run(startup, scope=plain_scope)
    for name in ("fc_0.w_0", "fc_0.b_0"):  # the same starting point for both
        plain_scope.var(name).get_tensor().set(np.array(scope.find_var(name).value))
    build = fluid.BuildStrategy()
    build.fuse_all_reduce_ops = True
    compiled = fluid.CompiledProgram(main).with_data_parallel(
        loss_name=loss.name, build_strategy=build, places=fluid.cpu_places(2))
    for _ in range(3):
        (a,) = exe.run(compiled, feed={"x": X}, fetch_list=[loss], scope=scope)
        (b,) = exe.run(main, feed={"x": X}, fetch_list=[loss], scope=plain_scope)
        np.testing.assert_array_equal(a, b)
    with pytest.raises(InvalidArgument, match="BuildStrategy: attribute expected"):
        build.no_such_option = 1
    with pytest.raises(InvalidArgument, match="loss_name expected a variable of the program"):
        fluid.CompiledProgram(main).with_data_parallel(loss_name="nope")


def test_a_compiled_program_takes_its_feed_per_place_as_fluid_scripts_give_it():
    """``exe.run(compiled, feed=data)`` with a DataLoader's list of one dict per place (the
    book's scripts), or several places' batches, which the one place runs joined."""
    main, startup, loss = _line()
    exe = fluid.Executor(fluid.CPUPlace())
    first = fluid.Scope()
    exe.run(startup, scope=first)

    def scope_like_first():  # the same starting parameters for each run (they train)
        scope = fluid.Scope()
        exe.run(startup, scope=scope)
        for name in ("fc_0.w_0", "fc_0.b_0"):
            scope.var(name).get_tensor().set(np.array(first.find_var(name).value))
        return scope
    compiled = fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name)
    (whole,) = exe.run(main, feed={"x": X}, fetch_list=[loss], scope=scope_like_first())
    (listed,) = exe.run(compiled, feed=[{"x": X}], fetch_list=[loss],
                        scope=scope_like_first())
    (halves,) = exe.run(compiled, feed=[{"x": X[:2]}, {"x": X[2:]}], fetch_list=[loss],
                        scope=scope_like_first())
    np.testing.assert_array_equal(listed, whole)
    np.testing.assert_allclose(halves, whole, rtol=1e-6)
    scope = first
    with pytest.raises(TypeError, match="one per place"):
        exe.run(compiled, feed=[X], fetch_list=[loss], scope=scope)
    # a plain program takes a DataLoader's list of one dict, and no more places
    (plain,) = exe.run(main, feed=[{"x": X}], fetch_list=[loss], scope=scope_like_first())
    np.testing.assert_array_equal(plain, whole)
    with pytest.raises(InvalidArgument, match="a list of one dict"):
        exe.run(main, feed=[{"x": X[:2]}, {"x": X[2:]}], fetch_list=[loss], scope=scope)


def test_parallel_executor_joins_per_place_feeds():
    main, startup, loss = _line()
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    runner = fluid.ParallelExecutor(use_cuda=False, loss_name=loss.name, main_program=main,
                                    scope=scope)
    w = np.array(scope.find_var("fc_0.w_0").value)
    b = np.array(scope.find_var("fc_0.b_0").value)
    (value,) = runner.run([loss.name], feed=[{"x": X[:2]}, {"x": X[2:]}])
    np.testing.assert_allclose(value, [(X @ w + b).mean()], rtol=1e-6)


def test_the_profiler_times_every_op_run_inside_it(tmp_path, capsys):
    main, startup, loss = _line()
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    path = tmp_path / "profile.txt"
    with fluid.profiler.profiler("CPU", sorted_key="calls", profile_path=str(path)):
        for _ in range(4):
            exe.run(main, feed={"x": X}, fetch_list=[loss], scope=scope)
    table = capsys.readouterr().out
    assert "Profiling Report" in table and path.read_text().strip() in table
    rows = {line.split()[0]: int(line.split()[1]) for line in table.splitlines()[2:]}
    assert rows["mul"] == 4 and rows["sgd"] == 8  # two parameters, four runs
    assert fluid.Executor.trace is None  # stopped: nothing is timed any more
    with pytest.raises(PreconditionNotMet, match="a started profiler expected"):
        fluid.profiler.stop_profiler()


def test_version_checks_and_op_libraries():
    fluid.require_version("1.6.0")
    fluid.require_version("1.8", "1.8.9")
    with pytest.raises(PreconditionNotMet, match="expected >= 2.0"):
        fluid.require_version("2.0")
    with pytest.raises(TypeError):
        fluid.require_version(1.6)
    with pytest.raises(Unimplemented, match="load_op_library"):
        fluid.load_op_library("custom_op.so")


def test_install_check_trains_a_small_network(capsys):
    fluid.install_check.run_check()
    assert "works well" in capsys.readouterr().out
