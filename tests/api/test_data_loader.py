"""fluid.io.DataLoader and PyReader feed real training loops, iterable or through a read op
at the head of the program, from sample, sample-list and batch generators."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument, PreconditionNotMet

RNG = np.random.RandomState(0)
W = np.array([[1.0], [-2.0], [0.5]], "float32")
XS = RNG.rand(40, 3).astype("float32")
YS = XS @ W


def samples():
    for x, y in zip(XS, YS):
        yield x, y


def _regression():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        y = fluid.data(name="y", shape=[None, 1], dtype="float32")
        loss = fluid.layers.mean(fluid.layers.square_error_cost(
            input=fluid.layers.fc(input=x, size=1, bias_attr=False), label=y))
        fluid.optimizer.SGD(learning_rate=0.5).minimize(loss)
    return main, startup, x, y, loss


def _train(main, startup, loss, batches_of, passes=30):
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    losses = []
    for _ in range(passes):
        for feed in batches_of():
            losses.append(float(exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0]))
    return losses, np.array(scope.find_var("fc_0.w_0").value)


def test_an_iterable_loader_of_samples_feeds_a_training_loop():
    main, startup, x, y, loss = _regression()
    with fluid.program_guard(main, startup):
        loader = fluid.io.DataLoader.from_generator(feed_list=[x, y], capacity=8)
    loader.set_sample_generator(samples, batch_size=8)
    batches = list(loader())
    assert len(batches) == 5 and list(batches[0][0]) == ["x", "y"]
    assert batches[0][0]["x"].shape() == [8, 3]
    losses, w = _train(main, startup, loss, lambda: (data[0] for data in loader()))
    assert losses[-1] < losses[0] / 100
    np.testing.assert_allclose(w, W, atol=0.05)


def test_sample_lists_batches_and_return_list():
    main, startup, x, y, loss = _regression()
    lists = fluid.io.DataLoader.from_generator(feed_list=[x, y], return_list=True)
    lists.set_sample_list_generator(fluid.io.batch(samples, batch_size=16))
    shapes = [[v.shape for v in place] for (place,) in ([d[0]] for d in lists())]
    assert shapes == [[(16, 3), (16, 1)], [(16, 3), (16, 1)], [(8, 3), (8, 1)]]
    whole = fluid.io.DataLoader.from_generator(feed_list=[x, y])
    whole.set_batch_generator(lambda: iter([(XS[:10], YS[:10]), (XS[10:], YS[10:])]))
    np.testing.assert_array_equal(next(iter(whole()))[0]["x"], XS[:10])
    dropped = fluid.io.DataLoader.from_generator(feed_list=[x, y])
    dropped.set_sample_generator(samples, batch_size=16, drop_last=False)
    assert [d[0]["x"].shape() for d in dropped()] == [[16, 3], [16, 3], [8, 3]]


def test_a_non_iterable_loader_feeds_through_a_read_op_until_eof():
    main, startup, x, y, loss = _regression()
    with fluid.program_guard(main, startup):
        loader = fluid.io.DataLoader.from_generator(feed_list=[x, y], iterable=False)
    loader.set_sample_generator(samples, batch_size=10)
    assert main.global_block().ops[0].type == "read"
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    for _ in range(2):
        loader.start()
        runs = 0
        try:
            while True:
                exe.run(main, fetch_list=[loss], scope=scope)
                runs += 1
        except fluid.core.EOFException:
            loader.reset()
        assert runs == 4
    with pytest.raises(PreconditionNotMet, match="start"):
        exe.run(main, fetch_list=[loss], scope=scope)


def test_py_reader_decorates_its_source():
    main, startup, x, y, loss = _regression()
    reader = fluid.io.PyReader(feed_list=[x, y], capacity=4, iterable=True)
    reader.decorate_sample_list_generator(fluid.io.batch(samples, batch_size=20))
    losses, _ = _train(main, startup, loss, lambda: (d[0] for d in reader()), passes=5)
    assert len(losses) == 10 and losses[-1] < losses[0]


def test_loader_arguments_are_checked():
    main, startup, x, y, loss = _regression()
    with pytest.raises(TypeError, match="feed_list expected"):
        fluid.io.DataLoader.from_generator(feed_list=["x"])
    loader = fluid.io.DataLoader.from_generator(feed_list=[x, y])
    with pytest.raises(InvalidArgument, match="batch_size expected a positive int"):
        loader.set_sample_generator(samples, batch_size=0)
    with pytest.raises(PreconditionNotMet, match="a source expected"):
        next(iter(loader()))
    with pytest.raises(PreconditionNotMet, match="iterable=False"):
        loader.start()


def test_collate_and_program_variable_helpers():
    x, y = fluid.io.default_collate_fn([(np.ones(3), 1), (np.zeros(3), 2)])
    assert x.shape == (2, 3) and list(y) == [1, 2]
    main, _, _, _, _ = _regression()
    assert [p.name for p in fluid.io.get_program_parameter(main)] == ["fc_0.w_0"]
    assert "fc_0.w_0" in [v.name for v in fluid.io.get_program_persistable_vars(main)]


def test_several_places_take_consecutive_batches_one_each():
    main, startup, x, y, loss = _regression()
    kept = fluid.io.DataLoader.from_generator(feed_list=[x, y], drop_last=False,
                                              return_list=True)
    kept.set_sample_generator(samples, batch_size=8, drop_last=True,
                              places=fluid.cpu_places(2))
    groups = list(kept())  # 5 batches of 8: two groups of two, and the last batch alone
    assert [[place[0].shape for place in group] for group in groups] == \
        [[(8, 3), (8, 3)], [(8, 3), (8, 3)], [(8, 3)]]
    np.testing.assert_array_equal(groups[0][1][0], XS[8:16])
    dropped = fluid.io.DataLoader.from_generator(feed_list=[x, y])
    dropped.set_sample_generator(samples, batch_size=8, places=fluid.cpu_places(2))
    assert [len(group) for group in dropped()] == [2, 2]
    with pytest.raises(InvalidArgument, match="places expected a place"):
        dropped.set_batch_generator(lambda: iter(()), places=[])
