"""Learning-rate schedules: the value each run sees equals Paddle Fluid 1.x's closed form.

Fluid's schedules read ``@LR_DECAY_COUNTER@``, made by ``autoincreased_step_counter(begin=0)``:
its startup value is ``begin - 1`` and an ``increment`` op prepended to the main program
advances it once per run, so the first run sees step 0 (``noam_decay`` uses ``begin=1``, so
its first run sees step 1). The formulas below are those of Paddle 1.8's
``python/paddle/fluid/layers/learning_rate_scheduler.py``.
"""
import math

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument

L = fluid.layers
N = 12


def _run_schedule(make_lr, runs=N, optimizer=True):
    """Build ``loss = mean(fc(x))`` and an SGD optimizer on the schedule; return the rate
    fetched on each of ``runs`` runs of the main program, the main program and the lr var."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data(name="x", shape=[3], dtype="float32")
        loss = L.mean(L.fc(input=x, size=1))
        lr = make_lr()
        if optimizer:
            fluid.optimizer.SGD(learning_rate=lr).minimize(loss)
    fluid.verify(main)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": np.ones((2, 3), dtype="float32")}
    values = []
    for _ in range(runs):
        (value,) = exe.run(main, feed=feed, fetch_list=[lr], scope=scope)
        value = np.asarray(value)
        assert value.shape == (1,) and value.dtype == np.float32
        values.append(float(value[0]))
    return np.array(values), main, lr


STEPS = np.arange(N, dtype=np.float64)


def test_schedules_are_reachable_as_fluid_layers():
    for name in ["exponential_decay", "natural_exp_decay", "inverse_time_decay",
                 "polynomial_decay", "piecewise_decay", "noam_decay", "cosine_decay",
                 "linear_lr_warmup"]:
        assert getattr(fluid.layers, name) is getattr(fluid.layers.learning_rate_scheduler, name)
        assert name in fluid.layers.__all__


def test_step_counter_starts_at_zero_like_fluids_decay_step_counter():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        L.exponential_decay(0.1, 10, 0.5)
        L.cosine_decay(0.1, 10, 3)  # a second schedule shares the one counter
    ops = main.global_block().ops
    assert ops[0].type == "increment" and ops[0].input("X") == ["@LR_DECAY_COUNTER@"]
    assert [op.type for op in ops].count("increment") == 1
    counter = main.global_block().var("@LR_DECAY_COUNTER@")
    assert counter.persistable
    init = [op for op in startup.global_block().ops
            if op.output("Out") == ["@LR_DECAY_COUNTER@"]]
    assert len(init) == 1 and init[0].type == "fill_constant"
    assert init[0].attr("value") == -1.0  # begin - 1 with begin=0
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    seen = [int(np.asarray(exe.run(main, fetch_list=["@LR_DECAY_COUNTER@"], scope=scope)[0])
                .reshape(-1)[0]) for _ in range(4)]
    assert seen == [0, 1, 2, 3]


@pytest.mark.parametrize("staircase", [False, True])
def test_exponential_decay(staircase):
    lr0, decay_steps, decay_rate = 0.1, 3, 0.5
    got, _, _ = _run_schedule(lambda: L.exponential_decay(lr0, decay_steps, decay_rate,
                                                          staircase=staircase))
    div = STEPS / decay_steps
    if staircase:
        div = np.floor(div)
    np.testing.assert_allclose(got, lr0 * decay_rate ** div, rtol=1e-6)
    assert got[0] == pytest.approx(lr0)


@pytest.mark.parametrize("staircase", [False, True])
def test_natural_exp_decay(staircase):
    lr0, decay_steps, decay_rate = 0.1, 4, 0.5
    got, _, _ = _run_schedule(lambda: L.natural_exp_decay(lr0, decay_steps, decay_rate,
                                                          staircase=staircase))
    div = STEPS / decay_steps
    if staircase:
        div = np.floor(div)
    np.testing.assert_allclose(got, lr0 * np.exp(-1 * decay_rate * div), rtol=1e-6)


@pytest.mark.parametrize("staircase", [False, True])
def test_inverse_time_decay(staircase):
    lr0, decay_steps, decay_rate = 0.1, 3, 0.5
    got, _, _ = _run_schedule(lambda: L.inverse_time_decay(lr0, decay_steps, decay_rate,
                                                           staircase=staircase))
    div = STEPS / decay_steps
    if staircase:
        div = np.floor(div)
    np.testing.assert_allclose(got, lr0 / (1 + decay_rate * div), rtol=1e-6)


def _polynomial(lr0, decay_steps, end_lr, power, cycle):
    out = []
    for step in STEPS:
        steps = decay_steps
        if cycle:
            div = math.ceil(step / decay_steps)
            if step == 0:
                div = 1.0
            steps = decay_steps * div
        else:
            step = min(step, decay_steps)
        out.append((lr0 - end_lr) * (1 - step / steps) ** power + end_lr)
    return np.array(out)


@pytest.mark.parametrize("power", [1.0, 2.0])
@pytest.mark.parametrize("cycle", [False, True])
def test_polynomial_decay(cycle, power):
    lr0, decay_steps, end_lr = 0.1, 4, 0.01
    got, _, _ = _run_schedule(lambda: L.polynomial_decay(lr0, decay_steps, end_lr,
                                                         power=power, cycle=cycle))
    np.testing.assert_allclose(got, _polynomial(lr0, decay_steps, end_lr, power, cycle),
                               rtol=1e-6, atol=1e-8)
    if not cycle:
        assert got[decay_steps:] == pytest.approx([end_lr] * (N - decay_steps))
    else:  # the horizon grows: step 5 decays over 8 steps, not 4
        assert got[4] == pytest.approx(end_lr) and got[5] > got[4]


def test_piecewise_decay():
    boundaries, values = [2, 5, 9], [0.1, 0.01, 0.001, 0.0001]
    got, _, _ = _run_schedule(lambda: L.piecewise_decay(boundaries, values))
    expected = [values[int(np.searchsorted(boundaries, s, side="right"))] for s in STEPS]
    # Fluid fills the chosen value with fill_constant: exact float32 values
    np.testing.assert_array_equal(np.float32(got), np.float32(expected))


def test_piecewise_decay_refuses_mismatched_lengths():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        with pytest.raises(InvalidArgument, match="len\\(boundaries\\) \\+ 1"):
            L.piecewise_decay([10, 20], [1.0, 0.5])


def test_noam_decay_counts_from_one():
    d_model, warmup_steps, lr0 = 16, 4, 2.0
    got, _, _ = _run_schedule(lambda: L.noam_decay(d_model, warmup_steps, lr0))
    step = STEPS + 1  # Fluid: _decay_step_counter(1)
    expected = lr0 * d_model ** -0.5 * np.minimum(step ** -0.5, warmup_steps ** -1.5 * step)
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_cosine_decay():
    lr0, step_each_epoch, epochs = 0.1, 2, 5
    got, _, _ = _run_schedule(lambda: L.cosine_decay(lr0, step_each_epoch, epochs))
    epoch = np.floor(STEPS / step_each_epoch)
    np.testing.assert_allclose(got, lr0 * 0.5 * (np.cos(epoch * math.pi / epochs) + 1),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("after", ["float", "schedule"])
def test_linear_lr_warmup(after):
    warmup_steps, start_lr, end_lr = 4, 0.0, 0.1

    def make():
        lr = 0.05 if after == "float" else L.piecewise_decay([7], [0.05, 0.005])
        return L.linear_lr_warmup(lr, warmup_steps, start_lr, end_lr)

    got, _, _ = _run_schedule(make)
    expected = []
    for step in STEPS:
        if step < warmup_steps:
            expected.append(start_lr + (end_lr - start_lr) * (step / float(warmup_steps)))
        elif after == "float" or step < 7:
            expected.append(0.05)
        else:
            expected.append(0.005)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-9)


def test_schedule_drives_the_sgd_update():
    """The sgd op reads the schedule's value of the same run."""
    main, startup = fluid.Program(), fluid.Program()
    w0 = np.array([[1.0], [2.0], [3.0]], dtype="float32")
    with fluid.program_guard(main, startup):
        x = L.data(name="x", shape=[3], dtype="float32")
        out = L.fc(input=x, size=1, bias_attr=False,
                   param_attr=fluid.ParamAttr(
                       name="w", initializer=fluid.initializer.NumpyArrayInitializer(w0)))
        loss = L.reduce_sum(out)
        lr = L.exponential_decay(0.1, 1, 0.5)
        fluid.optimizer.SGD(learning_rate=lr).minimize(loss)
    sgd = [op for op in main.global_block().ops if op.type == "sgd"]
    assert sgd[0].input("LearningRate") == [lr.name]
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    xv = np.array([[1.0, -1.0, 2.0], [0.5, 0.5, 0.5]], dtype="float32")
    w = w0.astype(np.float64)
    for step in range(4):
        (w_now,) = exe.run(main, feed={"x": xv}, fetch_list=["w"], scope=scope)
        w = w - 0.1 * 0.5 ** step * xv.sum(axis=0).reshape(3, 1)
        np.testing.assert_allclose(w_now, w, rtol=1e-6)


def test_schedule_ops_carry_the_lr_sched_role():
    from fluid_nb.autodiff.backward import OP_ROLE_LR_SCHED
    _, main, _ = _run_schedule(lambda: L.cosine_decay(0.1, 2, 5), runs=1)
    sched = [op for op in main.global_block().ops if op.type in ("increment", "cos", "floor")]
    assert sched and all(op.attr("op_role") == OP_ROLE_LR_SCHED for op in sched)
