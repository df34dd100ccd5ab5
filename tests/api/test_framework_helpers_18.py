"""Fluid 1.8's framework behaviour beyond the layers: backward's module helpers
(_get_stop_gradients_, _find_op_path_, _find_no_grad_vars), a second minimize in one program
(its own parameters only), updates written where the gradients are, feed and fetch list
variables of a scope, a rank table read back from a scope, LoDTensor(lengths), parameter
values by name, the global step counter that noam_decay starts at 1, x[i, j, k] of shape [1],
and the words Fluid's errors use for cond branches and prune targets."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb import backward, core, layers
from fluid_nb.errors import InvalidArgument


def _two_branch_net():
    x = fluid.data(name="x", shape=[None, 4], dtype="float32")
    y = fluid.data(name="y", shape=[None, 1], dtype="float32")
    used = layers.fc(x, size=1, param_attr=fluid.ParamAttr(name="w"), name="used")
    layers.fc(x, size=1, param_attr=fluid.ParamAttr(name="w"), name="unused")
    loss = layers.mean(layers.square_error_cost(used, y))
    return x, y, loss


def test_backward_helpers_find_the_path_to_the_loss_and_the_stop_gradient_names():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x, y, loss = _two_branch_net()
        backward.append_backward(loss)
    stopped = backward._get_stop_gradients_(main)
    assert stopped[0] == {"x@GRAD", "y@GRAD"}
    no_grad = {backward._strip_grad_suffix_(n) for n in stopped[0]}
    block = main.global_block()
    path = backward._find_op_path_(block, [loss], [], no_grad)
    assert [op.type for op in path] == ["mul", "elementwise_add", "elementwise_sub",
                                        "square", "mean"]
    assert backward._find_no_grad_vars(block, path, [loss], no_grad) == set()
    assert backward._append_grad_suffix_("w") == "w@GRAD"
    assert backward._strip_grad_suffix_("w@GRAD@RENAME@block0@1") == "w"


def test_a_second_minimize_updates_only_the_parameters_of_its_loss():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x1 = fluid.data(name="x1", shape=[None, 2], dtype="float32")
        x2 = fluid.data(name="x2", shape=[None, 2], dtype="float32")
        loss1 = layers.mean(layers.fc(x1, 2, param_attr=fluid.ParamAttr(name="w1")))
        loss2 = layers.mean(layers.fc(x2, 2, param_attr=fluid.ParamAttr(name="w2")))
        fluid.optimizer.Adam(0.1).minimize(loss1)
        ops, params_grads = fluid.optimizer.Adam(0.1).minimize(loss2)
    assert sorted(p.name for p, _ in params_grads) == ["fc_1.b_0", "w2"]
    updated = {op.input("Param")[0] for op in ops if op.type == "adam"}
    assert updated == {"fc_1.b_0", "w2"}


def test_updates_go_to_the_block_the_backward_pass_wrote_the_gradients_to():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        main._create_block()  # the current block is no longer the global one
        x = fluid.data(name="x", shape=[None, 13], dtype="float32")
        loss = layers.mean(layers.fc(x, size=10))
        fluid.optimizer.SGD(0.01).minimize(loss)
    assert [p.name for p in main.all_parameters()] == ["fc_0.w_0", "fc_0.b_0"]
    sgd = [op for block in main.blocks for op in block.ops if op.type == "sgd"]
    assert len(sgd) == 2 and all(op.block.idx == 1 for op in sgd)


def test_feed_and_fetch_list_variables_hold_tensors_by_column():
    scope = core.Scope()
    tensor = core.LoDTensor([[2, 2]])
    tensor.set(np.arange(24, dtype="float32").reshape(4, 6), core.CPUPlace())
    core.set_feed_variable(scope, tensor, "feed", 1)
    assert scope.find_var("feed").value[1] is tensor
    scope.var("fetch").get_fetch_list().append(tensor)
    fetched = core.get_fetch_variable(scope, "fetch", 0)
    assert fetched.recursive_sequence_lengths() == [[2, 2]]
    np.testing.assert_array_equal(np.array(fetched), np.array(tensor))
    with pytest.raises(fluid.errors.PreconditionNotMet):
        core.get_fetch_variable(scope, "fetch", 3)


def test_a_rank_table_is_read_back_from_its_scope_variable():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = layers.data(name="x", shape=[3], dtype="float32", lod_level=1)
        table = layers.lod_rank_table(x)
        table.persistable = True
    scope = core.Scope()
    value = fluid.create_lod_tensor(np.zeros((6, 3), "float32"), [[1, 3, 2]],
                                    fluid.CPUPlace())
    fluid.Executor(fluid.CPUPlace()).run(main, feed={"x": value}, scope=scope)
    assert scope.find_var(table.name).get_lod_rank_table().items() == [(1, 3), (2, 2), (0, 1)]


def test_parameter_values_are_read_by_name():
    main = fluid.Program()
    # a parameter created on a block is initialised by an op of that block
    main.global_block().create_parameter(
        name="fc.w", shape=[3, 2], dtype="float32",
        initializer=fluid.initializer.ConstantInitializer(1.0625))
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(main)
        value = fluid.io.get_parameter_value_by_name("fc.w", exe, main)
    np.testing.assert_array_equal(value, np.full((3, 2), 1.0625, "float32"))


def test_noam_decay_starts_the_shared_step_counter_at_one():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        lr = layers.linear_lr_warmup(layers.noam_decay(0.01, 200, 2.0), 10, 0.0, 1.0)
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        got = [float(exe.run(main, fetch_list=[lr])[0][0]) for _ in range(3)]
    np.testing.assert_allclose(got, [0.1, 0.2, 0.3], rtol=1e-6)  # steps 1, 2, 3


def test_indexing_every_dim_gives_shape_one_as_in_fluid_1x():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        w = main.global_block().create_var(name="w", dtype="float64", shape=[4, 5, 6])
        item = w[1, 2, 3]
    assert item.shape == (1,)
    value = np.arange(120, dtype="float64").reshape(4, 5, 6)
    got, = fluid.Executor(fluid.CPUPlace()).run(main, feed={"w": value}, fetch_list=[item],
                                                scope=fluid.Scope())
    assert got.shape == (1,) and got[0] == value[1, 2, 3]


def test_cond_branches_that_cannot_merge_say_so_in_fluids_words():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        i = fluid.data(name="i", shape=[1], dtype="int32")
        pred = (i % 2) == 0
        one = lambda: layers.fill_constant(shape=[2], dtype="int32", value=3)  # noqa: E731
        two = lambda: (one(), one())  # noqa: E731
        for true_fn, false_fn in ((lambda: None, one), (one, two)):
            with pytest.raises(InvalidArgument,
                               match="Incompatible return values of true_fn and false_fn"):
                layers.cond(pred, true_fn, false_fn)


def test_pruning_to_a_target_of_the_wrong_type_says_what_targets_may_be():
    program = fluid.Program()
    with pytest.raises(ValueError, match=r"All targets of Program\._prune_with_input\(\) "
                                         r"can only be Variable or Operator"):
        program._prune(targets=None)


def test_the_rnn_builders_are_reached_under_control_flow_too():
    from fluid_nb.layers import control_flow
    assert control_flow.StaticRNN is layers.StaticRNN
    assert control_flow.DynamicRNN is layers.DynamicRNN


def test_a_program_compiled_from_a_graph_has_no_program_to_save():
    graph = core.Graph(core.ProgramDesc())
    compiled = fluid.CompiledProgram(graph)
    assert compiled._program is None
    with pytest.raises(TypeError):
        fluid.io._get_valid_program(compiled)
    with pytest.raises(TypeError):
        core.Graph("program")
