"""RecomputeOptimizer: the backward pass re-runs the forward ops between checkpoints into
``<name>.subprog_<n>`` copies, and training is the same as without recomputation."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import PreconditionNotMet, Unimplemented

RNG = np.random.RandomState(4)
X = RNG.rand(8, 6).astype("float32")
Y = RNG.rand(8, 1).astype("float32")
PARAMS = ["fc_0.w_0", "fc_0.b_0", "fc_1.w_0", "fc_1.b_0", "fc_2.w_0", "fc_2.b_0"]


def _mlp(make_optimizer, checkpoints=None, dropout_seed=7, program_seed=3):
    """x -> fc relu (h1) -> dropout -> fc tanh (h2) -> fc -> squared error; ``checkpoints``
    picks among h1, h2 (None: no recomputation). The dropout's seed, when None, is the
    program's (as in Fluid), and when that is 0 too, a fresh one each run."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = program_seed
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, 6], dtype="float32")
        y = fluid.data(name="y", shape=[None, 1], dtype="float32")
        h1 = fluid.layers.fc(x, 16, act="relu")
        dropped = fluid.layers.dropout(h1, 0.3, seed=dropout_seed)
        h2 = fluid.layers.fc(dropped, 16, act="tanh")
        pred = fluid.layers.fc(h2, 1)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
        optimizer = make_optimizer()
        if checkpoints is not None:
            optimizer = fluid.optimizer.RecomputeOptimizer(optimizer)
            optimizer._set_checkpoints([{"h1": h1, "h2": h2}[c] for c in checkpoints])
        optimizer.minimize(loss)
    return main, startup, loss


def _train(main, startup, loss, steps=6, fetch=()):
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    losses, fetched = [], []
    for _ in range(steps):
        values = exe.run(main, feed={"x": X, "y": Y}, fetch_list=[loss, *fetch], scope=scope)
        losses.append(float(values[0]))
        fetched.append(values[1:])
    params = {name: np.array(scope.find_var(name).value) for name in PARAMS}
    return losses, params, fetched


def _types(main):
    return [op.type for op in main.global_block().ops]


@pytest.mark.parametrize("checkpoints", [["h2"], ["h1", "h2"], ["h2", "h1"], ["h1"], []])
@pytest.mark.parametrize("make", [lambda: fluid.optimizer.SGD(0.1),
                                  lambda: fluid.optimizer.Adam(0.01)], ids=["sgd", "adam"])
def test_training_with_recomputation_equals_training_without(make, checkpoints):
    plain = _train(*_mlp(make))
    recomputed = _train(*_mlp(make, checkpoints))
    assert recomputed[0] == plain[0]
    for name in PARAMS:
        np.testing.assert_array_equal(recomputed[1][name], plain[1][name], err_msg=name)
    assert plain[0][-1] < plain[0][0]


def test_the_forward_ops_between_checkpoints_are_rerun_before_their_grad_ops():
    main, _, _ = _mlp(lambda: fluid.optimizer.SGD(0.1), ["h1", "h2"])
    forward = ["mul", "elementwise_add", "relu", "seed", "dropout", "mul", "elementwise_add",
               "tanh", "mul", "elementwise_add", "elementwise_sub", "square", "mean"]
    # after the loss's segment (not recomputed), the h1..h2 segment, then x..h1: each
    # recomputation writes what is not kept and comes just before the segment's grad ops
    backward = ["fill_constant", "mean_grad", "square_grad", "elementwise_sub_grad",
                "elementwise_add_grad", "mul_grad",
                "dropout", "mul", "elementwise_add",
                "tanh_grad", "elementwise_add_grad", "mul_grad", "dropout_grad",
                "mul", "elementwise_add",
                "relu_grad", "elementwise_add_grad", "mul_grad"]
    assert _types(main) == forward + backward + ["sgd"] * 6
    fluid.verify(main)


def test_recomputed_ops_write_subprog_copies_that_the_grad_ops_read():
    main, _, _ = _mlp(lambda: fluid.optimizer.SGD(0.1), ["h1", "h2"])
    block = main.global_block()
    ops = block.ops
    first_grad = _types(main).index("fill_constant")
    recomputed = [op for op in ops[first_grad:] if not op.type.endswith("_grad")
                  and op.type not in ("fill_constant", "sgd", "sum")]
    written = [n for op in recomputed for n in op.output_arg_names]
    assert written == ["dropout_0.tmp_0.subprog_0", "dropout_0.tmp_1.subprog_0",
                       "fc_1.tmp_0.subprog_0", "fc_1.tmp_1.subprog_0",
                       "fc_0.tmp_0.subprog_1", "fc_0.tmp_1.subprog_1"]
    for name in written:
        original = block.var(name.rsplit(".subprog_", 1)[0])
        assert block.var(name).shape == original.shape
        assert block.var(name).dtype == original.dtype
    # the checkpoints, the parameters and the input are read as they are, never renamed
    assert not any(n.startswith(("fc_0.tmp_2.", "fc_1.tmp_2.", "x.", "fc_1.w_0."))
                   for n in block.vars if ".subprog_" in n)
    readers = {n for op in ops[first_grad:] if op.type.endswith("_grad")
               for n in op.input_arg_names}
    assert {"dropout_0.tmp_1.subprog_0", "fc_1.tmp_0.subprog_0",
            "fc_0.tmp_0.subprog_1"} <= readers
    assert not {"dropout_0.tmp_1", "fc_1.tmp_0", "fc_0.tmp_0"} & readers
    mask_grad = [op for op in ops if op.type == "dropout_grad"][0]
    assert mask_grad.input("Mask") == ["dropout_0.tmp_1.subprog_0"]


def test_a_recomputed_dropout_draws_the_forward_mask_and_a_new_one_each_step():
    main, startup, loss = _mlp(lambda: fluid.optimizer.SGD(0.1), ["h2"],
                                        dropout_seed=None, program_seed=0)
    dropout = [op for op in main.global_block().ops if op.type == "dropout"][0]
    assert dropout.input("Seed") and not dropout.has_attr("fix_seed")
    seed_op = [op for op in main.global_block().ops if op.type == "seed"][0]
    assert seed_op.attr("seed") == 0  # no fixed seed: drawn afresh each run
    mask = dropout.output("Mask")[0]
    _, _, fetched = _train(main, startup, loss, steps=4, fetch=[mask, mask + ".subprog_0"])
    for forward, recomputed in fetched:
        np.testing.assert_array_equal(forward, recomputed)
    assert any((fetched[0][0] != f[0]).any() for f in fetched[1:])


def test_a_fixed_dropout_seed_becomes_the_seed_op_s():
    main, _, _ = _mlp(lambda: fluid.optimizer.SGD(0.1), ["h2"], dropout_seed=11)
    assert [op.attr("seed") for op in main.global_block().ops if op.type == "seed"] == [11]


def test_no_checkpoints_give_the_plain_backward_pass():
    plain, _, _ = _mlp(lambda: fluid.optimizer.SGD(0.1))
    main, _, _ = _mlp(lambda: fluid.optimizer.SGD(0.1), [])
    assert _types(main) == _types(plain)
    assert "seed" not in _types(main)


def test_backward_then_apply_gradients_equals_minimize():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, 6], dtype="float32")
        h1 = fluid.layers.fc(x, 4, act="relu")
        loss = fluid.layers.mean(fluid.layers.fc(h1, 1))
        optimizer = fluid.optimizer.RecomputeOptimizer(fluid.optimizer.SGD(0.1))
        optimizer._set_checkpoints([h1])
        params_grads = optimizer.backward(loss)
        optimizer.apply_gradients(params_grads)
    minimized, _, _ = _mlp(lambda: fluid.optimizer.SGD(0.1), ["h1"])
    types = _types(main)
    assert types.count("sgd") == 4
    assert types[types.index("fill_constant"):].count("mul") == 1  # the x..h1 segment
    assert _types(minimized).count("mul") == 3 + 1


def test_arguments_are_checked_and_load_is_refused():
    sgd = fluid.optimizer.SGD(0.1)
    with pytest.raises(TypeError, match="inner_optimizer"):
        fluid.optimizer.RecomputeOptimizer("sgd")
    optimizer = fluid.optimizer.RecomputeOptimizer(sgd)
    with pytest.raises(TypeError, match="checkpoints"):
        optimizer._set_checkpoints("h1")
    with pytest.raises(TypeError, match="checkpoints"):
        optimizer._set_checkpoints(["h1"])
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        loss = fluid.layers.mean(fluid.layers.fc(fluid.data("x", [None, 6], "float32"), 1))
        with pytest.raises(PreconditionNotMet, match="checkpoints"):
            optimizer.minimize(loss)
    with pytest.raises(TypeError, match="loss"):
        optimizer.minimize("loss")
    with pytest.raises(NotImplementedError,
                       match="load function is not supported by Recompute Optimizer"):
        optimizer.load({})


def test_a_sub_block_op_is_refused_and_the_program_left_as_it_was():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, 6], dtype="float32")
        h1 = fluid.layers.dropout(fluid.layers.fc(x, 4), 0.5)
        flag = fluid.layers.fill_constant([1], "bool", True)
        out = fluid.layers.cond(flag, lambda: fluid.layers.scale(h1, 2.0),
                                lambda: fluid.layers.scale(h1, 3.0))
        loss = fluid.layers.mean(out)
        before = [(op.type, dict(op.inputs), dict(op.attrs)) for op in main.global_block().ops]
        optimizer = fluid.optimizer.RecomputeOptimizer(fluid.optimizer.SGD(0.1))
        optimizer._set_checkpoints([h1, out])
        with pytest.raises(Unimplemented, match="sub-block"):
            optimizer.minimize(loss)
    after = [(op.type, dict(op.inputs), dict(op.attrs)) for op in main.global_block().ops]
    assert after == before
