"""Pruning as Fluid 1.8 prunes: ``Program._prune(targets)`` and
``_prune_with_input(feeds, targets)`` keep the ops the targets need (fed variables cut
their producers off; optimizer ops stay only as targets), the variables those ops name,
and the sub-blocks of kept ops; ``Executor.run(use_prune=True)`` runs the pruned program,
made once per program, feed and fetch list, and creates no variable of a pruned-away op
in the scope."""
import warnings

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument, InvalidType

X = np.random.RandomState(0).rand(6, 2).astype("float32")
LABEL = np.zeros((6, 1), "int64")


def _two_heads(optimizer=None):
    """Two losses over one input: each with its own fc (weights named w1, w2)."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, 2], dtype="float32")
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        losses, preds = [], []
        for i in (1, 2):
            pred = fluid.layers.fc(input=x, size=2, act="softmax",
                                   param_attr=fluid.ParamAttr(name=f"w{i}"),
                                   bias_attr=fluid.ParamAttr(name=f"b{i}"))
            loss = fluid.layers.mean(fluid.layers.cross_entropy(input=pred, label=label))
            loss.persistable = True
            preds.append(pred)
            losses.append(loss)
        trains = []
        if optimizer is not None:
            trains = [optimizer().minimize(loss) for loss in losses[:1]]
    return main, startup, x, label, preds, losses, trains


def _types(program, block=0):
    return [op.type for op in program.block(block).ops]


def test_prune_keeps_what_the_target_needs_and_leaves_the_program_alone():
    main, _, _, _, _, losses, _ = _two_heads()
    before = _types(main)
    pruned = main._prune(losses[0])  # one target needs no list
    assert _types(pruned) == ["mul", "elementwise_add", "softmax", "cross_entropy2", "mean"]
    assert _types(main) == before
    names = set(pruned.global_block().vars)
    assert "w1" in names and "w2" not in names and losses[1].name not in names
    assert isinstance(pruned.global_block().var("w1"), fluid.framework.Parameter)
    fluid.verify(pruned, check_shapes=False)


def test_a_fed_variable_cuts_off_the_ops_that_make_it():
    main, _, _, label, preds, losses, _ = _two_heads()
    pruned = main._prune_with_input([preds[0].name, label.name], [losses[0]])
    assert _types(pruned) == ["cross_entropy2", "mean"]
    assert preds[0].name in pruned.global_block().vars  # a kept op reads it


def test_targets_may_be_names_and_ops_and_bad_ones_get_typed_errors():
    main, _, _, _, _, losses, _ = _two_heads()
    mean_op = [op for op in main.global_block().ops if op.type == "mean"][1]
    assert _types(main._prune([losses[1].name])) == _types(main._prune([mean_op]))
    with pytest.raises(InvalidType):  # a ValueError too, as Fluid raises
        main._prune(None)
    with pytest.raises(ValueError):
        main._prune_with_input([3], [losses[0]])
    with pytest.raises(InvalidArgument, match="no op writes"):
        main._prune(["x"])  # a data variable nobody feeds has no op to keep


def test_an_optimizer_op_stays_only_as_a_target():
    main, _, _, _, _, losses, trains = _two_heads(lambda: fluid.optimizer.SGD(0.1))
    forward = main._prune([losses[0]])  # the loss reads w1, which sgd writes
    assert "sgd" not in _types(forward) and "mul_grad" not in _types(forward)
    train_ops, _ = trains[0]
    training = main._prune([losses[0]] + list(train_ops))
    assert _types(training).count("sgd") == len(train_ops)
    assert "mul_grad" in _types(training)


def test_sub_blocks_of_kept_ops_are_kept_and_renumbered():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[1], dtype="float32")
        unused = fluid.layers.fill_constant(shape=[1], dtype="float32", value=1.0)
        cond_unused = fluid.layers.less_than(unused, x)
        ie_unused = fluid.layers.IfElse(cond_unused)
        with ie_unused.true_block():
            ie_unused.output(fluid.layers.scale(unused, 2.0))
        with ie_unused.false_block():
            ie_unused.output(fluid.layers.scale(unused, 3.0))
        i = fluid.layers.fill_constant(shape=[1], dtype="int64", value=0)
        limit = fluid.layers.fill_constant(shape=[1], dtype="int64", value=3)
        acc = fluid.layers.fill_constant(shape=[1], dtype="float32", value=0.0)
        cond = fluid.layers.less_than(i, limit)
        loop = fluid.layers.While(cond)
        with loop.block():
            fluid.layers.assign(fluid.layers.elementwise_add(acc, x), acc)
            fluid.layers.increment(i, in_place=True)
            fluid.layers.less_than(i, limit, cond=cond)
        # a name stands for the first op writing it (here acc's fill_constant), so the
        # target is read after the loop
        result = fluid.layers.scale(acc, 1.0)
    assert main.num_blocks > 2
    pruned = main._prune([result])
    assert pruned.num_blocks == 2 and pruned.block(1).parent_idx == 0
    (while_op,) = [op for op in pruned.global_block().ops if op.type == "while"]
    assert while_op.attrs["sub_block"] == 1
    assert "conditional_block" not in _types(pruned)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    out, = exe.run(pruned, feed={"x": np.array([2.0], "float32")}, fetch_list=[result],
                   scope=scope)
    np.testing.assert_allclose(out, [6.0])


def test_use_prune_creates_no_variable_of_a_pruned_away_op():
    main, startup, _, _, _, losses, _ = _two_heads()
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    exe.run(main, feed={"x": X, "label": LABEL}, fetch_list=[losses[0]], scope=scope,
            use_prune=True)
    assert scope.find_var(losses[0].name) is not None
    assert scope.find_var(losses[1].name) is None
    exe.run(main, feed={"x": X, "label": LABEL}, fetch_list=[losses[0]], scope=scope)
    assert scope.find_var(losses[1].name) is not None  # without pruning every op runs


def test_optimizer_ops_in_fetch_list_prune_and_train_only_their_loss():
    main, startup, _, _, _, losses, trains = _two_heads(lambda: fluid.optimizer.SGD(0.5))
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    w1 = np.array(scope.find_var("w1").value)
    w2 = np.array(scope.find_var("w2").value)
    exe.run(main, feed={"x": X, "label": LABEL}, fetch_list=[losses[0], trains[0]],
            scope=scope)  # what minimize returned: use_prune is implied
    assert not np.array_equal(np.array(scope.find_var("w1").value), w1)
    np.testing.assert_array_equal(np.array(scope.find_var("w2").value), w2)
    assert scope.find_var(losses[1].name) is None
    with pytest.raises(InvalidType):  # only optimizer ops may be fetched
        exe.run(main, feed={"x": X, "label": LABEL}, scope=scope,
                fetch_list=[main.global_block().ops[0]])


def test_a_pruned_program_is_made_once_per_program_feed_and_fetch(monkeypatch):
    main, startup, _, _, _, losses, _ = _two_heads()
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    calls = []
    original = fluid.Executor._prune_program

    def counting(self, *args):
        calls.append(args[2])
        return original(self, *args)

    monkeypatch.setattr(fluid.Executor, "_prune_program", counting)
    for _ in range(3):
        exe.run(main, feed={"x": X, "label": LABEL}, fetch_list=[losses[0]], scope=scope,
                use_prune=True)
    assert len(calls) == 1
    exe.run(main, feed={"x": X, "label": LABEL}, fetch_list=[losses[1]], scope=scope,
            use_prune=True)
    assert len(calls) == 2
    with fluid.program_guard(main):
        fluid.layers.scale(losses[0], 2.0)  # the program changed: pruned again
    exe.run(main, feed={"x": X, "label": LABEL}, fetch_list=[losses[0]], scope=scope,
            use_prune=True)
    assert len(calls) == 3


def test_a_fed_variable_can_also_be_fetched():
    main, startup, _, label, preds, losses, _ = _two_heads()
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    y = np.full((6, 2), 0.5, "float32")
    fed, loss = exe.run(main, feed={preds[0].name: y, "label": LABEL},
                        fetch_list=[preds[0], losses[0]], scope=scope, use_prune=True)
    np.testing.assert_array_equal(fed, y)  # the softmax that makes it was pruned away
    np.testing.assert_allclose(loss, -np.log(0.5), rtol=1e-6)
    x_back, = exe.run(main, feed={"x": X}, fetch_list=["x"], scope=scope, use_prune=True)
    np.testing.assert_array_equal(x_back, X)


def test_a_feed_the_pruned_program_does_not_take_is_dropped_with_a_warning():
    main, startup, _, _, _, losses, _ = _two_heads()
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": X, "label": LABEL}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exe.run(main, feed=feed, fetch_list=[main.global_block().var("fc_0.tmp_0")],
                scope=scope, use_prune=True)
    assert any("label" in str(w.message) for w in caught)
    assert set(feed) == {"x", "label"}  # the caller's dict is left alone


def test_a_compiled_program_prunes_its_program_in_a_copy():
    main, startup, _, _, _, losses, trains = _two_heads(lambda: fluid.optimizer.SGD(0.5))
    compiled = fluid.CompiledProgram(main).with_data_parallel(loss_name=losses[0].name)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    exe.run(compiled, feed={"x": X, "label": LABEL}, fetch_list=[losses[0]], scope=scope,
            use_prune=True)
    assert compiled._program is main
    assert scope.find_var(losses[1].name) is None


def test_fetch_var_reads_a_persistable_after_the_run():
    main, startup, _, _, _, losses, _ = _two_heads()
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    loss, = exe.run(main, feed={"x": X, "label": LABEL}, fetch_list=[losses[0]], scope=scope)
    np.testing.assert_array_equal(fluid.executor._fetch_var(losses[0].name, scope), loss)
    assert isinstance(fluid.executor._fetch_var(losses[0], scope, return_numpy=False),
                      fluid.LoDTensor)
    with pytest.raises(KeyError):
        fluid.executor._fetch_var("no_such_var", scope)
