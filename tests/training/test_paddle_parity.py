"""Training follows PaddlePaddle 2.6's loss curves: same initial parameters, same batches,
50 steps, losses and parameters within the drift float32 allows two machines' kernels
(tests/trajectories.py; the reference curves were made with real Paddle)."""
import hashlib
import json
import pathlib

import numpy as np
import pytest

import fluid_nb as fluid

from ..trajectories import assert_float32_losses_agree, assert_float32_runs_agree

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "paddle" / "training"


def _checked(array, expected):
    assert hashlib.sha256(array.tobytes()).hexdigest() == expected["sha256"], \
        "regenerated data differs from the data Paddle trained on"
    return array


def fit_a_line_data(meta):
    rs = np.random.RandomState(2024)
    x = rs.uniform(-1.0, 1.0, (50, 20, 13)).astype(np.float32)
    w_true = rs.uniform(-1.0, 1.0, (13, 1)).astype(np.float32)
    noise = rs.normal(0.0, 0.1, (50, 20, 1)).astype(np.float32)
    y = (np.matmul(x.astype(np.float64), w_true.astype(np.float64)) + 0.5
         + noise.astype(np.float64)).astype(np.float32)
    sums = meta["data_sha256"]
    return [{"x": a, "y": b} for a, b in zip(_checked(x, sums["x"]), _checked(y, sums["y"]))]


def mlp_data(meta):
    rs = np.random.RandomState(4242)
    x = rs.uniform(0.0, 1.0, (50, 64, 784)).astype(np.float32)
    teacher = rs.normal(0.0, 1.0, (784, 10))
    logits = np.matmul(x.astype(np.float64) - 0.5, teacher)
    label = np.argmax(logits, axis=-1).astype(np.int64)[..., None]
    sums = meta["data_sha256"]
    return [{"x": a, "label": b}
            for a, b in zip(_checked(x, sums["x"]), _checked(label, sums["label"]))]


def fit_a_line_net():
    x = fluid.layers.data(name="x", shape=[13], dtype="float32")
    y = fluid.layers.data(name="y", shape=[1], dtype="float32")
    pred = fluid.layers.fc(input=x, size=1)
    return fluid.layers.mean(fluid.layers.square_error_cost(input=pred, label=y))


def mlp_net():
    x = fluid.layers.data(name="x", shape=[784], dtype="float32")
    label = fluid.layers.data(name="label", shape=[1], dtype="int64")
    h = fluid.layers.fc(input=x, size=128, act="relu")
    h = fluid.layers.fc(input=h, size=64, act="relu")
    prob = fluid.layers.fc(input=h, size=10, act="softmax")
    return fluid.layers.mean(fluid.layers.cross_entropy(input=prob, label=label))


RUNS = {
    "fit_a_line_sgd": (fit_a_line_net, fit_a_line_data,
                       lambda: fluid.optimizer.SGD(learning_rate=0.01)),
    "fit_a_line_momentum": (fit_a_line_net, fit_a_line_data,
                            lambda: fluid.optimizer.Momentum(learning_rate=0.01, momentum=0.9)),
    "mlp_sgd": (mlp_net, mlp_data, lambda: fluid.optimizer.SGD(learning_rate=0.1)),
    "mlp_adam": (mlp_net, mlp_data, lambda: fluid.optimizer.Adam(learning_rate=0.001)),
}
# the longest sum of a step (the batch of 20 rows; 784 features) and, for Adam, the most
# one update moves one element
DRIFT = {"fit_a_line_sgd": dict(reduction=20), "fit_a_line_momentum": dict(reduction=20),
         "mlp_sgd": dict(reduction=784), "mlp_adam": dict(reduction=784, largest_step=0.001)}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_loss_curve_follows_paddle(name):
    folder = FIXTURES / name
    meta = json.loads((folder / "meta.json").read_text())
    net, data, make_optimizer = RUNS[name]
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        loss = net()
        make_optimizer().minimize(loss)
    fluid.verify(main)
    params = {p.name for p in main.all_parameters()}
    assert params == {p["name"] for p in meta["params"]}  # Paddle's parameter names
    assert {v["name"] for v in meta["persistable_vars"]} <= {
        v.name for v in main.list_vars() if v.persistable}  # and accumulator names
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    for pname, value in np.load(folder / "init_params.npz").items():
        scope.var(pname).get_tensor().set(value)
    losses = [float(exe.run(main, feed=batch, fetch_list=[loss], scope=scope)[0])
              for batch in data(meta)]
    assert_float32_losses_agree(losses, np.load(folder / "losses.npy"),
                                DRIFT[name]["reduction"])
    for pname, value in np.load(folder / "final_params.npz").items():
        assert_float32_runs_agree(np.asarray(scope.find_var(pname).value), value, len(losses),
                                  name=pname, **DRIFT[name])


@pytest.mark.parametrize("name", sorted(RUNS))
def test_paddles_saved_training_program_trains_here(name):
    """The training program Paddle saved (forward, backward, optimizer ops) runs here as is."""
    folder = FIXTURES / name
    meta = json.loads((folder / "meta.json").read_text())
    main = fluid.Program.parse_from_string((folder / "main.pdmodel").read_bytes())
    startup = fluid.Program.parse_from_string((folder / "startup.pdmodel").read_bytes())
    fluid.verify(main)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    for pname, value in np.load(folder / "init_params.npz").items():
        scope.var(pname).get_tensor().set(value)
    data = RUNS[name][1](meta)
    losses = [float(exe.run(main, feed=batch, fetch_list=[meta["loss_name"]],
                            scope=scope)[0]) for batch in data]
    assert_float32_losses_agree(losses, np.load(folder / "losses.npy"),
                                DRIFT[name]["reduction"])
