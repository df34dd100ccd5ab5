"""Whole programs on the strict device: training (an MLP with Adam, a conv net, a DynamicRNN,
an LoD text model), a while loop and live mode give the host's values, and a step copies to
the host only its fetches and the values the program's meaning needs (loop conditions)."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.live import live
from fluid_nb.testing.strict_device import DeviceArray, StrictDevicePlace, counting

HOST, DEVICE = fluid.CPUPlace(), StrictDevicePlace()


def train(build, feed, place, steps=3):
    """(losses, transfers of the last step) of ``steps`` runs of the program ``build()``
    makes, from the same seeded initialisation."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 11
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        loss = build()
    exe, scope = fluid.Executor(place), fluid.Scope()
    exe.run(startup, scope=scope)
    losses = []
    for _ in range(steps):
        with counting() as count:
            value, = exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
        losses.append(float(value.reshape(-1)[0]))
    return losses, count, scope


def same_training(build, feed, rtol=1e-5):
    on_host, _, _ = train(build, feed, HOST)
    on_device, count, scope = train(build, feed, DEVICE)
    np.testing.assert_allclose(on_device, on_host, rtol=rtol)
    assert on_device[-1] < on_device[0], on_device
    return count, scope


def mlp():
    img = fluid.layers.data(name="img", shape=[784], dtype="float32")
    label = fluid.layers.data(name="label", shape=[1], dtype="int64")
    h = fluid.layers.fc(input=img, size=200, act="relu")
    h = fluid.layers.fc(input=h, size=200, act="relu")
    logits = fluid.layers.fc(input=h, size=10)
    loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits, label))
    fluid.optimizer.Adam(learning_rate=0.001).minimize(loss)
    return loss


def test_the_mlp_trains_with_adam_on_the_device_copying_only_feeds_and_the_loss():
    rng = np.random.RandomState(0)
    feed = {"img": rng.rand(64, 784).astype("float32"),
            "label": rng.randint(0, 10, (64, 1)).astype("int64")}
    count, scope = same_training(mlp, feed)
    assert (count["to_device"], count["to_host"]) == (2, 1), count
    assert isinstance(scope.find_var("fc_0.w_0").get_tensor().array, DeviceArray)


def conv_net():
    img = fluid.layers.data(name="img", shape=[1, 12, 12], dtype="float32")
    label = fluid.layers.data(name="label", shape=[1], dtype="int64")
    conv = fluid.nets.simple_img_conv_pool(input=img, filter_size=3, num_filters=4,
                                           pool_size=2, pool_stride=2, act="relu")
    conv = fluid.layers.batch_norm(conv)
    prediction = fluid.layers.fc(input=conv, size=10, act="softmax")
    loss = fluid.layers.mean(fluid.layers.cross_entropy(input=prediction, label=label))
    fluid.optimizer.Momentum(learning_rate=0.05, momentum=0.9).minimize(loss)
    return loss


def test_a_conv_net_with_batch_norm_and_momentum_trains_on_the_device():
    rng = np.random.RandomState(1)
    feed = {"img": rng.rand(8, 1, 12, 12).astype("float32"),
            "label": rng.randint(0, 10, (8, 1)).astype("int64")}
    count, _ = same_training(conv_net, feed, rtol=1e-4)
    assert (count["to_device"], count["to_host"]) == (2, 1), count


LENGTHS = [3, 5, 2, 4]


def dynamic_rnn():
    x = fluid.layers.data(name="x", shape=[6], dtype="float32", lod_level=1)
    rnn = fluid.layers.DynamicRNN()
    with rnn.block():
        x_t = rnn.step_input(x)
        h_prev = rnn.memory(shape=[8], value=0.0)
        h = fluid.layers.fc(input=[x_t, h_prev], size=8, act="tanh")
        rnn.update_memory(h_prev, h)
        rnn.output(h)
    last = fluid.layers.sequence_last_step(rnn())
    loss = fluid.layers.mean(fluid.layers.fc(input=last, size=1))
    fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    return loss


def test_a_dynamic_rnn_trains_on_the_device_reading_only_its_loop_conditions():
    data = np.random.RandomState(2).rand(sum(LENGTHS), 6).astype("float32")
    feed = {"x": fluid.create_lod_tensor(data, [LENGTHS], HOST)}
    count, _ = same_training(dynamic_rnn, feed)
    # the loop counters, conditions and rank table live on the host (force_cpu, as in
    # Paddle): the loop reads nothing back from the device, and only the loss comes back
    assert count["to_host"] == 1, count


def text_classifier():
    words = fluid.layers.data(name="words", shape=[1], dtype="int64", lod_level=1)
    label = fluid.layers.data(name="label", shape=[1], dtype="int64")
    emb = fluid.layers.embedding(input=words, size=[50, 8])
    conv = fluid.nets.sequence_conv_pool(input=emb, num_filters=6, filter_size=3,
                                         act="tanh", pool_type="sqrt")
    prediction = fluid.layers.fc(input=conv, size=2, act="softmax")
    loss = fluid.layers.mean(fluid.layers.cross_entropy(input=prediction, label=label))
    fluid.optimizer.Adagrad(learning_rate=0.1).minimize(loss)
    return loss


def test_an_lod_text_classifier_trains_on_the_device():
    rng = np.random.RandomState(3)
    words = rng.randint(0, 50, (sum(LENGTHS), 1)).astype("int64")
    feed = {"words": fluid.create_lod_tensor(words, [LENGTHS], HOST),
            "label": rng.randint(0, 2, (4, 1)).astype("int64")}
    count, _ = same_training(text_classifier, feed)
    # the sequence ops gather by index arrays made from the LoD, which lives on the host
    # (Paddle copies a LoD to the device for its kernels too): copies to the device; to
    # the host, only the loss
    assert count["to_host"] == 1, count


def test_a_while_loop_reads_one_condition_per_iteration():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.layers.data(name="x", shape=[3], dtype="float32",
                              append_batch_size=False)
        i = fluid.layers.fill_constant(shape=[1], dtype="int64", value=0)
        limit = fluid.layers.fill_constant(shape=[1], dtype="int64", value=5)
        total = fluid.layers.fill_constant(shape=[3], dtype="float32", value=0.0)
        cond = fluid.layers.less_than(i, limit)
        loop = fluid.layers.While(cond=cond)
        with loop.block():
            fluid.layers.assign(fluid.layers.elementwise_add(total, x), total)
            fluid.layers.increment(i, in_place=True)
            fluid.layers.less_than(i, limit, cond=cond)
    feed = {"x": np.array([1, 2, 3], "float32")}
    want, = fluid.Executor(HOST).run(main, feed=feed, fetch_list=[total])
    with counting() as count:
        got, = fluid.Executor(DEVICE).run(main, feed=feed, fetch_list=[total])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, [5, 10, 15])
    # counters made without force_cpu live on the device: the while op copies its
    # condition to the host once before each of the 6 tests, and nothing else comes back
    assert count["to_host"] == 1 + 6, count


def branches():
    x = fluid.layers.data(name="x", shape=[1], dtype="float32")
    y = fluid.layers.fc(input=x, size=1)
    limit = fluid.layers.fill_constant(shape=[1], dtype="float32", value=0.5)
    rows = fluid.layers.IfElse(fluid.layers.less_than(x, limit))  # a condition per row
    with rows.true_block():
        rows.output(fluid.layers.scale(rows.input(y), scale=2.0))
    with rows.false_block():
        rows.output(fluid.layers.scale(rows.input(y), scale=-1.0))
    per_row = rows()[0]
    total = fluid.layers.reduce_sum(per_row)
    whole = fluid.layers.cond(total > 0.0,  # one condition for the batch
                              lambda: fluid.layers.scale(per_row, scale=0.5),
                              lambda: fluid.layers.scale(per_row, scale=3.0))
    loss = fluid.layers.mean(fluid.layers.square(whole))
    fluid.optimizer.SGD(learning_rate=0.05).minimize(loss)
    return loss


def test_if_else_and_cond_train_on_the_device():
    feed = {"x": np.linspace(0, 1, 8, dtype="float32").reshape(8, 1)}
    count, _ = same_training(branches, feed)
    # besides the loss, what the branches' meaning needs on the host: IfElse's row mask,
    # read to split its input and merge its output, forward and backward (4); cond's
    # predicate and its negation, read by the two conditional_blocks, forward and backward
    # (4); select_input's and select_output's mask (2)
    assert count["to_host"] == 1 + 4 + 4 + 2, count


def sparse_embedding():
    words = fluid.layers.data(name="words", shape=[1], dtype="int64")
    label = fluid.layers.data(name="label", shape=[1], dtype="float32")
    emb = fluid.layers.embedding(input=words, size=[30, 4], is_sparse=True)
    loss = fluid.layers.mean(fluid.layers.square_error_cost(
        fluid.layers.fc(input=emb, size=1), label))
    fluid.optimizer.Adam(learning_rate=0.05).minimize(loss)
    return loss


def test_a_sparse_embedding_trains_with_adam_on_the_device():
    rng = np.random.RandomState(4)
    feed = {"words": rng.randint(0, 30, (16, 1)).astype("int64"),
            "label": rng.rand(16, 1).astype("float32")}
    count, _ = same_training(sparse_embedding, feed)
    # a sparse gradient's rows are host data (SelectedRows): one copy of the ids
    assert count["to_host"] == 1 + 1, count


def arrays_and_ranks():
    x = fluid.layers.data(name="x", shape=[6], dtype="float32", lod_level=1)
    table = fluid.layers.lod_rank_table(x)
    hidden = fluid.layers.fc(input=x, size=4, act="tanh")
    reordered = fluid.layers.reorder_lod_tensor_by_rank(hidden, table)
    items = fluid.layers.create_array("float32")
    for k in range(3):
        index = fluid.layers.fill_constant(shape=[1], dtype="int64", value=k)
        fluid.layers.array_write(fluid.layers.scale(reordered, scale=float(k + 1)), index,
                                 array=items)
    length = fluid.layers.array_length(items)
    joined, _ = fluid.layers.tensor_array_to_tensor(items, axis=1)
    loss = fluid.layers.mean(joined) + fluid.layers.reduce_sum(
        fluid.layers.cast(length, "float32")) * 0.0
    fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    return loss


def test_tensor_arrays_and_rank_tables_train_on_the_device():
    data = np.random.RandomState(5).rand(sum(LENGTHS), 6).astype("float32")
    feed = {"x": fluid.create_lod_tensor(data, [LENGTHS], HOST)}
    count, _ = same_training(arrays_and_ranks, feed)
    # the array positions are fill_constants without force_cpu, so they live on the
    # device: write_to_array reads each (3), and the backward's read_from_array each (3)
    assert count["to_host"] == 1 + 3 + 3, count


def test_memory_optimize_and_sparse_gradient_clipping_on_the_device():
    def build():
        words = fluid.layers.data(name="words", shape=[1], dtype="int64")
        label = fluid.layers.data(name="label", shape=[1], dtype="float32")
        emb = fluid.layers.embedding(input=words, size=[30, 4], is_sparse=True)
        hidden = fluid.layers.fc(input=emb, size=8, act="relu")
        loss = fluid.layers.mean(fluid.layers.square_error_cost(
            fluid.layers.fc(input=hidden, size=1), label))
        fluid.optimizer.SGD(
            learning_rate=0.1,
            grad_clip=fluid.clip.GradientClipByGlobalNorm(clip_norm=0.5)).minimize(loss)
        main = fluid.default_main_program()
        fluid.memory_optimize(main)
        fluid.release_memory(main)
        ops = {op.type for op in main.global_block().ops}
        assert {"merge_selected_rows", "get_tensor_from_selected_rows", "delete_var"} <= ops
        return loss
    rng = np.random.RandomState(6)
    feed = {"words": rng.randint(0, 30, (16, 1)).astype("int64"),
            "label": rng.rand(16, 1).astype("float32")}
    count, _ = same_training(build, feed)
    # the sparse gradient's rows are host data: lookup_table_grad copies the ids once
    assert count["to_host"] == 1 + 1, count


def test_print_and_py_func_see_device_values_through_explicit_copies(capsys):
    seen = []

    def double(x):
        seen.append(type(x).__name__)
        return np.asarray(x) * 2  # a LoDTensor: np.asarray copies it to the host

    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.layers.data(name="x", shape=[3], dtype="float32")
        shown = fluid.layers.Print(x, message="on the device")
        out = main.current_block().create_var(name="doubled", dtype="float32", shape=[-1, 3])
        fluid.layers.py_func(double, shown, out)
    feed = {"x": np.arange(6, dtype="float32").reshape(2, 3)}
    with counting() as count:
        got, = fluid.Executor(DEVICE).run(main, feed=feed, fetch_list=[out])
    np.testing.assert_array_equal(got, feed["x"] * 2)
    assert "on the device" in capsys.readouterr().out and seen == ["LoDTensor"]
    # Print copies what it shows, py_func's function copies its input; its result goes to
    # the device and comes back as the fetch
    assert (count["to_device"], count["to_host"]) == (1 + 1, 1 + 1 + 1), count


def test_live_mode_runs_each_cell_on_the_device(session_name):
    x_value = np.arange(6, dtype="float32").reshape(2, 3) / 10
    with live(session_name, place=DEVICE, scope=fluid.Scope()) as session:
        x = fluid.layers.data(name="x", shape=[3], dtype="float32", value=x_value)
        h = fluid.layers.fc(input=x, size=4, act="relu")
        loss = fluid.layers.mean(h)
    weight = session.scope.find_var("fc_0.w_0").get_tensor()
    assert isinstance(weight.array, DeviceArray)
    w, b = np.array(weight), np.array(session.scope.find_var("fc_0.b_0").get_tensor())
    np.testing.assert_allclose(h.numpy(), np.maximum(x_value @ w + b, 0), rtol=1e-6)
    np.testing.assert_allclose(loss.numpy().reshape(-1)[0], np.maximum(x_value @ w + b, 0).mean(),
                               rtol=1e-6)


@pytest.fixture
def session_name(request):
    """A fresh live session name, in a fresh unique-name space (fc_0 is this test's)."""
    with fluid.unique_name.guard():
        yield f"strict-{request.node.name}"
