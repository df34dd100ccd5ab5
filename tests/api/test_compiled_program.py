"""CompiledProgram, the strategies, ParallelExecutor and the module paths Fluid 1.x scripts
import (fluid.compiler, fluid.core, fluid.unique_name, ...), driven as the book drives them:
a program compiled with data parallelism over places, fed by a DataLoader, trains as the
program itself does on one place."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import (FluidError, InvalidArgument, InvalidType, NotFound,
                             PreconditionNotMet)

RNG = np.random.RandomState(3)
W = np.array([[0.5], [-1.0], [2.0]], "float32")
XS = RNG.rand(48, 3).astype("float32")
YS = XS @ W + 0.25


def _regression(seed=1):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = seed
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        y = fluid.data(name="y", shape=[None, 1], dtype="float32")
        loss = fluid.layers.mean(fluid.layers.square_error_cost(
            input=fluid.layers.fc(input=x, size=1), label=y))
        test_program = main.clone(for_test=True)
        fluid.optimizer.SGD(learning_rate=0.3).minimize(loss)
    return main, startup, test_program, x, y, loss


def _batches(size):
    return [{"x": XS[i:i + size], "y": YS[i:i + size]} for i in range(0, len(XS), size)]


def _train(program, startup, loss, feeds, passes=20):
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    losses = [float(exe.run(program, feed=feed, fetch_list=[loss], scope=scope)[0])
              for _ in range(passes) for feed in feeds()]
    return losses, scope


def test_a_program_compiled_with_every_strategy_trains_as_the_program_does():
    main, startup, _, _, _, loss = _regression()
    build, execution = fluid.BuildStrategy(), fluid.ExecutionStrategy()
    build.reduce_strategy = fluid.BuildStrategy.ReduceStrategy.Reduce
    build.fuse_elewise_add_act_ops = True
    build.enable_inplace = True
    execution.num_threads = 4
    execution.num_iteration_per_drop_scope = 10
    compiled = fluid.compiler.CompiledProgram(main).with_data_parallel(
        loss_name=loss.name, build_strategy=build, exec_strategy=execution,
        places=fluid.cpu_places(2))
    plain, _ = _train(main, startup, loss, lambda: _batches(16), passes=100)
    through_compiled, scope = _train(compiled, startup, loss, lambda: _batches(16),
                                     passes=100)
    assert through_compiled == plain
    assert plain[-1] < plain[0] / 50
    np.testing.assert_allclose(np.array(scope.find_var("fc_0.w_0").value), W, atol=0.1)


def test_a_compiled_program_fed_by_a_loader_over_two_places_steps_once_per_two_batches():
    """Fluid's iterable loader gives each of N places its own batch; the one place here
    runs the group joined, as one step (the mean loss of the joined batch equals the mean
    of the places' equal-sized means)."""
    main, startup, _, x, y, loss = _regression()
    with fluid.program_guard(main, startup):
        loader = fluid.io.DataLoader.from_generator(feed_list=[x, y], capacity=4)
    loader.set_batch_generator(lambda: ((b["x"], b["y"]) for b in _batches(8)),
                               places=fluid.cpu_places(2))
    groups = list(loader())
    assert [len(group) for group in groups] == [2, 2, 2]
    compiled = fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name,
                                                              places=fluid.cpu_places(2))
    grouped, _ = _train(compiled, startup, loss, loader, passes=1)
    whole, _ = _train(main, startup, loss, lambda: _batches(16), passes=1)
    np.testing.assert_allclose(grouped, whole, rtol=1e-5)


def test_a_test_program_shares_the_trained_parameters():
    main, startup, test_program, _, _, loss = _regression()
    train = fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name)
    test = fluid.CompiledProgram(test_program).with_data_parallel(share_vars_from=train)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    for _ in range(30):
        for feed in _batches(16):
            exe.run(train, feed=feed, fetch_list=[loss], scope=scope)
    w_before = np.array(scope.find_var("fc_0.w_0").value)
    (test_loss,) = exe.run(test, feed=_batches(48)[0], fetch_list=[loss.name], scope=scope)
    assert float(test_loss) < 0.01
    np.testing.assert_array_equal(np.array(scope.find_var("fc_0.w_0").value), w_before)


def test_parallel_executor_trains_with_its_strategies():
    main, startup, _, _, _, loss = _regression()
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    runner = fluid.ParallelExecutor(use_cuda=False, loss_name=loss.name, main_program=main,
                                    build_strategy=fluid.BuildStrategy(),
                                    exec_strategy=fluid.ExecutionStrategy(), scope=scope)
    assert runner.device_count == 1
    losses = [float(runner.run(fetch_list=[loss.name], feed=feed)[0])
              for _ in range(20) for feed in _batches(16)]
    assert losses[-1] < losses[0] / 50
    import fluid_nb.parallel_executor
    assert fluid_nb.parallel_executor.ParallelExecutor is fluid.ParallelExecutor


def test_strategies_are_bags_of_fluids_fields_and_refuse_unknown_ones():
    build, execution = fluid.BuildStrategy(), fluid.ExecutionStrategy()
    assert build.reduce_strategy == fluid.BuildStrategy.ReduceStrategy.AllReduce
    assert build.gradient_scale_strategy == \
        fluid.BuildStrategy.GradientScaleStrategy.CoeffNumDevice
    assert (build.fuse_all_optimizer_ops, build.memory_optimize, build.num_trainers) == \
        (False, False, 1)
    assert (execution.num_threads, execution.num_iteration_per_drop_scope) == (0, 100)
    build.trainers_endpoints.append("127.0.0.1:6170")  # each strategy owns its lists
    assert fluid.BuildStrategy().trainers_endpoints == []
    assert (build.nccl_comm_num, execution.use_cuda) == (1, False)
    execution.use_experimental_executor = True
    assert "use_experimental_executor" in repr(execution)
    with pytest.raises(InvalidArgument, match="ExecutionStrategy: attribute expected"):
        execution.threads = 2


def test_compiled_program_arguments_are_checked():
    main, _, _, _, _, loss = _regression()
    with pytest.raises(InvalidType, match="program_or_graph expected a Program"):
        fluid.CompiledProgram("main")
    with pytest.raises(InvalidType, match="build_strategy expected a BuildStrategy"):
        fluid.CompiledProgram(main, build_strategy=fluid.ExecutionStrategy())
    with pytest.raises(InvalidType, match="exec_strategy expected an? ExecutionStrategy"):
        fluid.CompiledProgram(main).with_data_parallel(exec_strategy=fluid.BuildStrategy())
    with pytest.raises(InvalidArgument, match="places expected at least one place"):
        fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name, places=[])


def test_gpu_places_and_the_cuda_build_question():
    if fluid.is_compiled_with_cuda():
        assert fluid.core.get_cuda_device_count() >= 1
        assert all(isinstance(p, fluid.CUDAPlace) for p in fluid.cuda_places())
        assert fluid.cuda_places(0) == [fluid.CUDAPlace(0)]
    else:
        assert fluid.core.get_cuda_device_count() == 0
        with pytest.raises(PreconditionNotMet, match="CuPy|GPU"):
            fluid.cuda_places()
        with pytest.raises(PreconditionNotMet):
            fluid.framework.cuda_places()
    assert fluid.core.is_compiled_with_cuda() == fluid.is_compiled_with_cuda()


def test_the_module_paths_scripts_import():
    import fluid_nb.compiler
    import fluid_nb.core
    import fluid_nb.executor
    import fluid_nb.framework
    import fluid_nb.initializer
    import fluid_nb.io
    import fluid_nb.lod_tensor
    import fluid_nb.param_attr
    import fluid_nb.profiler
    import fluid_nb.unique_name
    from fluid_nb.executor import Executor, global_scope, scope_guard  # noqa: F401
    from fluid_nb.framework import Program, cpu_places, name_scope  # noqa: F401
    assert fluid_nb.compiler.CompiledProgram is fluid.CompiledProgram
    assert fluid_nb.lod_tensor.create_lod_tensor is fluid.create_lod_tensor
    assert fluid_nb.param_attr.ParamAttr is fluid.ParamAttr
    assert fluid_nb.initializer.Constant is fluid.initializer.Constant
    tensor = fluid.core.LoDTensor()
    tensor.set(np.ones((2, 3), "float32"), fluid.core.CPUPlace())
    assert np.array(tensor).shape == (2, 3)
    assert fluid.core.VarDesc.VarType.FP32 == fluid.framework.VarType.FP32
    assert isinstance(fluid.core.Scope(), fluid.Scope)
    assert issubclass(fluid.core.EOFException, fluid.core.EnforceNotMet)


def test_unique_names_through_the_module_path():
    from fluid_nb import unique_name
    with unique_name.guard():
        assert [unique_name.generate("fc"), unique_name.generate("fc")] == ["fc_0", "fc_1"]
        with unique_name.guard("block_"):
            assert unique_name.generate("fc") == "block_fc_0"


DATA_FEED = '''name: "MultiSlotDataFeed"
batch_size: 2
multi_slot_desc {
    slots {
         name: "words"
         type: "uint64"
         is_dense: false
         is_used: true
     }
     slots {
         name: "label"
         type: "float"
         shape: 1
    }
}
'''


def test_data_feed_desc_reads_changes_and_writes_its_text(tmp_path):
    path = tmp_path / "data.proto"
    path.write_text(DATA_FEED)
    desc = fluid.DataFeedDesc(str(path))
    desc.set_batch_size(128)
    desc.set_dense_slots(["label"])
    desc.set_use_slots(["label"])
    assert desc.desc() == (
        'name: "MultiSlotDataFeed"\nbatch_size: 128\nmulti_slot_desc {\n'
        '  slots {\n    name: "words"\n    type: "uint64"\n    is_dense: false\n'
        '    is_used: true\n  }\n'
        '  slots {\n    name: "label"\n    type: "float"\n    is_dense: true\n'
        '    is_used: true\n    shape: 1\n  }\n}\npipe_command: "cat"\n')
    again = tmp_path / "again.proto"
    again.write_text(desc.desc())
    assert fluid.DataFeedDesc(str(again)).desc() == desc.desc()


def test_data_feed_desc_refuses_what_it_cannot_describe(tmp_path):
    path = tmp_path / "data.proto"
    path.write_text(DATA_FEED)
    desc = fluid.DataFeedDesc(str(path))
    with pytest.raises(NotFound, match="slot name expected one of words, label"):
        desc.set_use_slots(["clicks"])
    with pytest.raises(InvalidArgument, match="batch_size expected a positive int"):
        desc.set_batch_size(0)
    path.write_text('name: "MultiSlotDataFeed"\nbatch_sise: 2\n')
    with pytest.raises(InvalidArgument, match="a field of DataFeedDesc expected one of"):
        fluid.DataFeedDesc(str(path))
    path.write_text('name: "PrivateQueueDataFeed"\n')
    with pytest.raises(InvalidArgument, match="only it has slots"):
        fluid.DataFeedDesc(str(path)).set_dense_slots(["words"])
    path.write_text('multi_slot_desc {\n slots { name: "a" }\n')
    with pytest.raises(FluidError, match="closing"):
        fluid.DataFeedDesc(str(path))
