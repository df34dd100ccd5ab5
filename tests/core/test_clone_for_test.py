"""``Program.clone(for_test=True)`` keeps the forward part, as Fluid 1.8's: cloned after
``minimize`` it is the program cloned before it (the same ops in every block, the same
variables), it computes the same values, and running it trains nothing."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb import layers


def fc_classifier():
    image = layers.data("image", [16], dtype="float32")
    label = layers.data("label", [1], dtype="int64")
    hidden = layers.dropout(layers.fc(image, 12, act="relu"), dropout_prob=0.5)
    hidden = layers.batch_norm(hidden)
    prediction = layers.fc(hidden, 4, act="softmax")
    return layers.mean(layers.cross_entropy(prediction, label)), {
        "image": np.random.RandomState(0).rand(8, 16).astype("float32"),
        "label": np.random.RandomState(1).randint(0, 4, (8, 1)).astype("int64")}


def rnn_classifier():
    words = layers.data("words", [1], dtype="int64", lod_level=1)
    label = layers.data("label", [1], dtype="int64")
    embedded = layers.embedding(words, size=[50, 8])
    rnn = layers.DynamicRNN()
    with rnn.block():
        step = rnn.step_input(embedded)
        memory = rnn.memory(shape=[6])
        hidden = layers.fc([step, memory], 6, act="tanh")
        rnn.update_memory(memory, hidden)
        rnn.output(hidden)
    last = layers.sequence_last_step(rnn())
    prediction = layers.fc(last, 2, act="softmax")
    feed = {"words": fluid.create_lod_tensor(np.arange(9).reshape(9, 1).astype("int64"),
                                             [[4, 2, 3]], fluid.CPUPlace()),
            "label": np.array([[0], [1], [1]], "int64")}
    return layers.mean(layers.cross_entropy(prediction, label)), feed


def branching_net():
    x = layers.data("x", [4], dtype="float32")
    label = layers.data("label", [1], dtype="int64")
    prediction = layers.fc(x, 3, act="softmax")
    two = layers.fill_constant([1], "int32", 2)
    loss = layers.case([(two == 0, lambda: layers.mean(layers.cross_entropy(prediction,
                                                                             label)))],
                       lambda: layers.mean(-layers.log(layers.reduce_max(prediction, dim=1))))
    return loss, {"x": np.random.RandomState(2).rand(5, 4).astype("float32"),
                  "label": np.zeros((5, 1), "int64")}


NETS = {"fc, dropout, batch_norm with Momentum": (fc_classifier,
                                                  lambda: fluid.optimizer.Momentum(0.1, 0.9)),
        "DynamicRNN with Adam": (rnn_classifier, lambda: fluid.optimizer.Adam(0.01)),
        "case with SGD and an L2 decay": (
            branching_net, lambda: fluid.optimizer.SGD(
                0.1, regularization=fluid.regularizer.L2Decay(1e-4)))}


def build(net, optimizer):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        loss, feed = net()
        before = main.clone(for_test=True)
        optimizer().minimize(loss)
        after = main.clone(for_test=True)
    return main, startup, loss, feed, before, after


def shape_of(program):
    return [([op.type for op in block.ops], sorted(block.vars), block.parent_idx)
            for block in program.blocks]


@pytest.mark.parametrize("name", NETS)
def test_a_test_program_cloned_after_minimize_is_the_one_cloned_before(name):
    main, startup, loss, feed, before, after = build(*NETS[name])
    assert len(main.blocks) > len(before.blocks) or len(main.global_block().ops) > len(
        before.global_block().ops)
    assert shape_of(after) == shape_of(before)
    for block_before, block_after in zip(before.blocks, after.blocks):
        for op_before, op_after in zip(block_before.ops, block_after.ops):
            # (minimize marks the loss's op with the Loss role; nothing else differs)
            assert {k: v for k, v in op_after.attrs.items() if k != "op_role"} == \
                {k: v for k, v in op_before.attrs.items() if k != "op_role"}
        for var in block_before.vars.values():
            twin = block_after.vars[var.name]
            assert (type(twin), twin.shape, twin.dtype, twin.persistable) == \
                (type(var), var.shape, var.dtype, var.persistable)
    assert after._is_test and all(op.attrs["is_test"] for block in after.blocks
                                  for op in block.ops if "is_test" in op.attrs)


@pytest.mark.parametrize("name", NETS)
def test_running_the_test_program_computes_the_loss_and_trains_nothing(name):
    main, startup, loss, feed, before, after = build(*NETS[name])
    scope, exe = fluid.Scope(), fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    params = [p.name for p in main.global_block().all_parameters()]
    start = {p: np.array(scope.find_var(p).get_tensor()) for p in params}
    loss_after, = exe.run(after, feed=feed, fetch_list=[loss.name], scope=scope)
    loss_after_again, = exe.run(after, feed=feed, fetch_list=[loss.name], scope=scope)
    loss_before, = exe.run(before, feed=feed, fetch_list=[loss.name], scope=scope)
    for p in params:
        np.testing.assert_array_equal(np.array(scope.find_var(p).get_tensor()), start[p])
    assert loss_after == loss_after_again == loss_before
    exe.run(main, feed=feed, fetch_list=[loss.name], scope=scope)  # the training program
    assert any(not np.array_equal(np.array(scope.find_var(p).get_tensor()), start[p])
               for p in params)


def test_the_training_program_keeps_its_backward_part():
    main, startup, loss, feed, before, after = build(*NETS["DynamicRNN with Adam"])
    roles = [op.attrs.get("op_role", 0) for block in main.blocks for op in block.ops]
    assert any(role & 1 for role in roles) and any(role & 2 for role in roles)
    assert len(main.blocks) == 3 and len(after.blocks) == 2
    assert main.clone().global_block().ops[-1].type == main.global_block().ops[-1].type


def test_a_program_with_no_backward_part_is_cloned_whole():
    """No loss gradient, nothing pruned: a variable no op names stays, and so does an op
    marked with a backward role by hand."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = layers.data("x", [3], dtype="float32")
        layers.data("unused", [2], dtype="float32")
        y = layers.scale(x, 2.0)
    y.op.attrs["op_role"] = 1
    test = main.clone(for_test=True)
    assert [op.type for op in test.global_block().ops] == ["scale"]
    assert "unused" in test.global_block().vars


def test_inference_optimize_keeps_a_backward_part_as_fluids_does():
    """``_inference_optimize`` (save_inference_model's last step, after its own pruning)
    only sets ``is_test``: on a training program it keeps every op."""
    main = build(*NETS["fc, dropout, batch_norm with Momentum"])[0]
    optimized = main._inference_optimize(prune_read_op=False)
    assert [op.type for op in optimized.global_block().ops] == \
        [op.type for op in main.global_block().ops]
    assert all(op.attrs["is_test"] for op in optimized.global_block().ops
               if "is_test" in op.attrs)


def test_sub_block_attributes_follow_their_renumbered_blocks():
    """Gradient blocks between forward ones go; the forward blocks after them are
    renumbered, and a sub-block attribute given as an index stays an index, one given as
    a Block becomes the test program's Block."""
    main, startup, loss, feed, before, after = build(*NETS["case with SGD and an L2 decay"])
    first_grad_block = len(before.blocks)
    with fluid.program_guard(main, startup):  # a forward branch appended after minimize
        three = layers.fill_constant([1], "int32", 3)
        scaled = layers.case([(three == 3, lambda: loss * 2.0)], lambda: loss * 3.0)
    branches = [op for op in main.global_block().ops if op.type == "conditional_block"]
    late = [op for op in branches if op.attrs["sub_block"] > first_grad_block]
    assert len(late) == 2 and any(main.block(i).ops[0].attrs.get("op_role", 0) & 1
                                  for i in range(first_grad_block, len(main.blocks)))
    test = main.clone(for_test=True)
    assert len(test.blocks) == first_grad_block + 2
    kept = [op for op in test.global_block().ops if op.type == "conditional_block"]
    assert len(kept) == len(branches)
    assert [op.attrs["sub_block"] for op in kept[-2:]] == [first_grad_block,
                                                           first_grad_block + 1]
    assert all(test.blocks[i].parent_idx == 0 for i in range(1, len(test.blocks)))
    scope, exe = fluid.Scope(), fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    want, = exe.run(before, feed=feed, fetch_list=[loss.name], scope=scope)
    got, = exe.run(test, feed=feed, fetch_list=[scaled.name], scope=scope)
    np.testing.assert_allclose(got, want * 2.0, rtol=1e-6)
    late[0].attrs["sub_block"] = main.block(late[0].attrs["sub_block"])
    again = main.clone(for_test=True)
    given = [op for op in again.global_block().ops if op.type == "conditional_block"][-2]
    assert given.attrs["sub_block"] is again.blocks[first_grad_block]
