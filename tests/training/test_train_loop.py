"""fluid.train_loop and LossHistory: one loss per batch, epoch means, callbacks, the SVG."""
import math

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.api.training import LossHistory

L = fluid.layers


def _fit_a_line(lr=0.01):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data(name="x", shape=[13], dtype="float32")
        y = L.data(name="y", shape=[1], dtype="float32")
        y_predict = L.fc(input=x, size=1)
        avg_cost = L.mean(L.square_error_cost(input=y_predict, label=y))
        fluid.optimizer.SGD(learning_rate=lr).minimize(avg_cost)
    return main, startup, x, y, y_predict, avg_cost


def _small_reader(batches=(3, 3, 2)):
    rng = np.random.RandomState(0)
    data = [[(rng.rand(13).astype("float32"), rng.rand(1).astype("float32"))
             for _ in range(n)] for n in batches]

    def reader():
        for batch in data:
            yield batch
    return reader


def _setup(lr=0.01):
    main, startup, x, y, y_predict, avg_cost = _fit_a_line(lr)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    feeder = fluid.DataFeeder(feed_list=[x, y], place=fluid.CPUPlace())
    return exe, scope, main, feeder, y_predict, avg_cost


def test_history_has_one_loss_per_batch_and_one_mean_per_epoch(capsys):
    exe, scope, main, feeder, _, avg_cost = _setup()
    history = fluid.train_loop(exe, main, _small_reader(), feeder, loss=avg_cost, epochs=2,
                               scope=scope, progress=False)
    assert isinstance(history, LossHistory)
    assert len(history) == 6 and len(history.losses) == 6
    assert history.steps == list(range(6))
    assert all(isinstance(v, float) and math.isfinite(v) for v in history.losses)
    assert history.epoch_ends == [3, 6]
    means = history.epoch_means()
    assert len(means) == 2
    np.testing.assert_allclose(means, [np.mean(history.losses[:3]), np.mean(history.losses[3:])])
    assert history.last == history.losses[-1]
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""  # progress=False prints nothing


def test_losses_are_what_the_executor_computes():
    """train_loop is exe.run(program, feed=feeder.feed(batch), fetch_list=[loss]) per batch."""
    exe, scope, main, feeder, _, avg_cost = _setup()
    other = fluid.Scope()  # the same starting state, for the hand-written loop
    for var in main.global_block().vars.values():
        if var.persistable and scope.find_var(var.name) is not None:
            other.var(var.name).get_tensor().set(
                np.array(scope.find_var(var.name).get_tensor()))
    history = fluid.train_loop(exe, main, _small_reader(), feeder, loss=avg_cost, epochs=1,
                               scope=scope, progress=False)
    manual = [float(np.asarray(exe.run(main, feed=feeder.feed(batch), fetch_list=[avg_cost],
                                       scope=other)[0]).reshape(-1)[0])
              for batch in _small_reader()()]
    np.testing.assert_allclose(history.losses, manual, rtol=1e-6)
    for param in main.global_block().all_parameters():  # and trained the same way
        np.testing.assert_allclose(np.array(scope.find_var(param.name).get_tensor()),
                                   np.array(other.find_var(param.name).get_tensor()), rtol=1e-6)


def test_on_step_gets_the_step_the_loss_and_the_extra_fetches():
    exe, scope, main, feeder, y_predict, avg_cost = _setup()
    calls = []

    def on_step(step, loss, *extra):
        calls.append((step, loss, extra))

    history = fluid.train_loop(exe, main, _small_reader(), feeder, loss=avg_cost, epochs=2,
                               scope=scope, fetch_list=[y_predict], on_step=on_step,
                               progress=False)
    assert [c[0] for c in calls] == list(range(6))
    assert [c[1] for c in calls] == history.losses
    sizes = [3, 3, 2, 3, 3, 2]
    for (_, _, extra), n in zip(calls, sizes):
        assert len(extra) == 1
        assert np.asarray(extra[0]).shape == (n, 1)


def test_history_argument_is_extended():
    exe, scope, main, feeder, _, avg_cost = _setup()
    history = fluid.train_loop(exe, main, _small_reader(), feeder, loss=avg_cost, epochs=1,
                               scope=scope, progress=False)
    again = fluid.train_loop(exe, main, _small_reader(), feeder, loss=avg_cost, epochs=1,
                             scope=scope, progress=False, history=history)
    assert again is history
    assert len(history) == 6 and history.epoch_ends == [3, 6]
    assert len(history.epoch_means()) == 2


def test_feeder_may_be_a_plain_callable():
    exe, scope, main, feeder, _, avg_cost = _setup()
    seen = []

    def feed(batch):
        seen.append(len(batch))
        return feeder.feed(batch)

    history = fluid.train_loop(exe, main, _small_reader(), feed, loss=avg_cost, scope=scope,
                               progress=False)
    assert seen == [3, 3, 2] and len(history) == 3


def test_repr_html_is_an_svg_with_a_polyline():
    history = LossHistory()
    for v in [5.0, 4.0, 3.5, 2.0, 1.0]:
        history.record(v)
    history.end_epoch()
    html = history._repr_html_()
    assert html == history.to_svg()
    assert html.startswith("<svg") and html.endswith("</svg>")
    assert "<polyline" in html
    points = html.split("points='")[1].split("'")[0].split()
    assert len(points) == 5
    ys = [float(p.split(",")[1]) for p in points]
    assert ys == sorted(ys)  # a falling loss is drawn going down the page (y grows)
    assert "5 → 1" in html
    assert "LossHistory(5 steps, first 5, last 1, min 1)" == repr(history)


def test_svg_uses_a_log_scale_over_two_decades_and_skips_non_finite():
    history = LossHistory()
    for v in [1000.0, float("nan"), 10.0, 0.5]:
        history.record(v)
    svg = history.to_svg(width=200, height=100)
    assert "(log)" in svg and "width='200'" in svg
    assert len(svg.split("points='")[1].split("'")[0].split()) == 3


def test_empty_or_single_point_history_renders_an_empty_svg():
    history = LossHistory()
    assert repr(history) == "LossHistory(empty)"
    assert history.last is None
    assert "<polyline" not in history._repr_html_()
    history.record(1.0)
    assert history._repr_html_().startswith("<svg") and "<polyline" not in history.to_svg()


def test_metrics_are_recorded_by_name():
    history = LossHistory()
    history.record(1.0, acc=0.5)
    history.record(0.5, acc=0.75)
    assert history.metrics == {"acc": [0.5, 0.75]}


def test_progress_bar_writes_to_stderr_when_asked(capsys):
    pytest.importorskip("tqdm")
    exe, scope, main, feeder, _, avg_cost = _setup()
    fluid.train_loop(exe, main, _small_reader(), feeder, loss=avg_cost, epochs=1, scope=scope,
                     progress=True)
    out = capsys.readouterr()
    assert out.out == "" and "training (1 epoch)" in out.err


def test_loss_decreases_on_fit_a_line():
    exe, scope, main, feeder, _, avg_cost = _setup(lr=0.01)
    reader = fluid.io.batch(fluid.dataset.uci_housing.train(), 20)
    history = fluid.train_loop(exe, main, reader, feeder, loss=avg_cost, epochs=20,
                               scope=scope, progress=False)
    assert len(history) == 20 * math.ceil(404 / 20)
    means = history.epoch_means()
    assert len(means) == 20
    assert means[-1] < 0.25 * means[0]
    assert means[-1] < means[len(means) // 2] < means[0]
