"""Fluid 1.8's further optimizers in real training loops: Ftrl, LarsMomentum, Dpsgd, Adam with
Variable betas, Lookahead, Recompute, ExponentialMovingAverage and ModelAverage."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument, PreconditionNotMet

RNG = np.random.RandomState(1)
X = RNG.rand(16, 3).astype("float32")
Y = X @ np.array([[1.0], [-2.0], [0.5]], "float32")


def _train(make_optimizer, steps=30, wrap=None):
    """Train a linear regression; returns losses, the weight after every step, and what
    the test needs to look inside (executor, scope, programs, optimizer)."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        y = fluid.data(name="y", shape=[None, 1], dtype="float32")
        pred = fluid.layers.fc(input=x, size=1, bias_attr=False)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(input=pred, label=y))
        optimizer = make_optimizer()
        optimizer.minimize(loss)
        extra = wrap() if wrap else None
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    losses, weights = [], []
    for _ in range(steps):
        (value,) = exe.run(main, feed={"x": X, "y": Y}, fetch_list=[loss], scope=scope)
        losses.append(float(value))
        weights.append(np.array(scope.find_var("fc_0.w_0").value).copy())
    return losses, weights, (exe, scope, main, startup, optimizer, extra)


@pytest.mark.parametrize("make", [
    lambda: fluid.optimizer.Ftrl(learning_rate=0.5, l1=0.001, l2=0.001),
    lambda: fluid.optimizer.FtrlOptimizer(learning_rate=0.5, lr_power=-0.6),
    lambda: fluid.optimizer.LarsMomentum(learning_rate=1.0, momentum=0.5, lars_coeff=0.1),
    lambda: fluid.optimizer.DpsgdOptimizer(learning_rate=0.3, clip=10.0, batch_size=16.0,
                                           sigma=0.01),
], ids=["ftrl", "ftrl_lr_power", "lars_momentum", "dpsgd"])
def test_the_loss_falls(make):
    losses, _, _ = _train(make)
    assert losses[-1] < losses[0] / 4, losses


def test_adam_takes_its_betas_as_variables():
    def with_variable():
        beta1 = fluid.layers.create_global_var([1], 0.9, "float32", persistable=True,
                                               name="beta1")
        return fluid.optimizer.Adam(learning_rate=0.1, beta1=beta1)
    a, _, (_, _, main, _, _, _) = _train(with_variable, steps=5)
    b, _, _ = _train(lambda: fluid.optimizer.Adam(learning_rate=0.1, beta1=0.9), steps=5)
    np.testing.assert_allclose(a, b, rtol=1e-6)
    assert [op for op in main.global_block().ops if op.type == "adam"][0].inputs[
        "Beta1Tensor"] == ("beta1",)


def test_lookahead_pulls_the_fast_weights_back_every_k_steps():
    sgd = lambda: fluid.optimizer.SGD(learning_rate=0.1)  # noqa: E731
    _, plain, _ = _train(sgd, steps=1)
    _, ahead, (_, scope, main, _, _, _) = _train(
        lambda: fluid.optimizer.LookaheadOptimizer(sgd(), alpha=0.5, k=2), steps=4)
    np.testing.assert_allclose(ahead[0], plain[0], rtol=1e-6)  # step 1: the inner update
    slow = [v for v in main.global_block().vars if v.startswith("fc_0.w_0@SLOW")][0]
    np.testing.assert_allclose(np.array(scope.find_var(slow).value), ahead[3], rtol=1e-6)
    losses, _, _ = _train(lambda: fluid.optimizer.LookaheadOptimizer(sgd(), alpha=0.5, k=3))
    assert losses[-1] < losses[0] / 2
    with pytest.raises(TypeError, match="inner_optimizer"):
        fluid.optimizer.LookaheadOptimizer("sgd")


def test_recompute_updates_as_its_inner_optimizer():
    def recompute():
        optimizer = fluid.optimizer.RecomputeOptimizer(fluid.optimizer.SGD(0.1))
        optimizer._set_checkpoints([])
        return optimizer
    a, _, _ = _train(recompute, steps=5)
    b, _, _ = _train(lambda: fluid.optimizer.SGD(0.1), steps=5)
    assert a == b
    with pytest.raises(PreconditionNotMet, match="checkpoints"):
        _train(lambda: fluid.optimizer.RecomputeOptimizer(fluid.optimizer.SGD(0.1)))


def test_exponential_moving_average_applies_the_bias_corrected_average_and_restores():
    decay = 0.8
    _, weights, (exe, scope, *_, extra) = _train(
        lambda: fluid.optimizer.SGD(0.1), steps=6,
        wrap=lambda: _updated(fluid.optimizer.ExponentialMovingAverage(decay)))
    ema = np.zeros_like(weights[0], "float64")
    for w in weights:
        ema = decay * ema + (1 - decay) * w
    want = ema / (1 - decay ** len(weights))
    with fluid.scope_guard(scope):
        with extra.apply(exe):
            np.testing.assert_allclose(np.array(scope.find_var("fc_0.w_0").value), want,
                                       rtol=1e-5)
        np.testing.assert_allclose(np.array(scope.find_var("fc_0.w_0").value), weights[-1])


def _updated(ema):
    ema.update()
    return ema


def test_model_average_applies_the_mean_over_the_window():
    _, weights, (exe, scope, *_, extra) = _train(
        lambda: fluid.optimizer.SGD(0.1), steps=5,
        wrap=lambda: fluid.optimizer.ModelAverage(0.15, min_average_window=100,
                                                  max_average_window=200))
    with fluid.scope_guard(scope):
        with extra.apply(exe):
            np.testing.assert_allclose(np.array(scope.find_var("fc_0.w_0").value),
                                       np.mean(weights, axis=0), rtol=1e-5)
        np.testing.assert_allclose(np.array(scope.find_var("fc_0.w_0").value), weights[-1])
    with pytest.raises(InvalidArgument, match="max_average_window"):
        fluid.optimizer.ModelAverage(0.15, min_average_window=10, max_average_window=5)


def test_adam_reads_both_beta_variables_at_run_time():
    """As in Fluid, betas given as Variables are read by the op at run time while their
    powers start from the defaults 0.9 and 0.999 (the values are unknown when the program
    is built): the first step is checked against that rule."""
    def with_variables():
        beta1 = fluid.layers.create_global_var([1], 0.8, "float32", persistable=True,
                                               name="beta1")
        beta2 = fluid.layers.create_global_var([1], 0.99, "float32", persistable=True,
                                               name="beta2")
        return fluid.optimizer.Adam(learning_rate=0.1, beta1=beta1, beta2=beta2)
    _, (w1,), (_, _, main, _, _, _) = _train(with_variables, steps=1)
    _, (w0,), _ = _train(lambda: fluid.optimizer.SGD(learning_rate=0.0), steps=1)
    g = 2 * X.T.astype("float64") @ (X @ w0 - Y) / len(X)
    m, v = (1 - 0.8) * g, (1 - 0.99) * g * g
    step = 0.1 * np.sqrt(1 - 0.999) / (1 - 0.9) * m / (np.sqrt(v) + 1e-8)
    np.testing.assert_allclose(w1, w0 - step, rtol=1e-4)
    adam = [op for op in main.global_block().ops if op.type == "adam"][0]
    assert (adam.inputs["Beta1Tensor"], adam.inputs["Beta2Tensor"]) == (("beta1",), ("beta2",))


def test_the_multi_device_optimizers_refuse_saying_why():
    from fluid_nb.errors import Unimplemented
    with pytest.raises(Unimplemented, match="several trainers"):
        fluid.optimizer.DGCMomentumOptimizer(learning_rate=0.1, momentum=0.9,
                                             rampup_begin_step=0)
    with pytest.raises(Unimplemented, match="minimize with the inner optimizer"):
        fluid.optimizer.PipelineOptimizer(fluid.optimizer.SGD(learning_rate=0.1))
