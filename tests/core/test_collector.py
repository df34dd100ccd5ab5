"""The cyclic garbage collector waits while a program runs, and only then."""
import gc
import os
import subprocess
import sys

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb import layers
from fluid_nb.exec import collector
from tests.core.test_loop_frames import build_rnn

STEPS = 400  # a loop whose kept step scopes alone outnumber the collector's threshold


def build_loop():
    main, startup, loss = build_rnn(
        backward=False, size=3,
        cell=lambda word, prev: layers.elementwise_add(layers.scale(prev, scale=0.5), word))
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": fluid.create_lod_tensor(np.ones((STEPS, 3)), [[STEPS]], fluid.CPUPlace())}
    return lambda: exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0]


class _Passes:
    """Counts the collector's passes while it is installed."""

    def __init__(self):
        self.count = 0

    def __call__(self, phase, info):
        if phase == "start":
            self.count += 1

    def __enter__(self):
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc):
        gc.callbacks.remove(self)


@pytest.fixture
def collecting():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_no_collector_pass_runs_during_a_run(collecting):
    run = build_loop()
    with _Passes() as passes:
        value = run()
    assert passes.count == 0
    # the loop: h_t = 0.5 h_{t-1} + 1 from h_0 = 0, so h_400 = 2 (1 - 0.5^400) in every
    # column, and so is their mean
    np.testing.assert_allclose(value, 2.0)
    assert gc.isenabled()


def test_the_same_run_with_the_collector_running_makes_it_pass(collecting, monkeypatch):
    # what the pause saves: this run's allocations do start collector passes
    run = build_loop()
    monkeypatch.setattr(collector, "PAUSING", False)
    with _Passes() as passes:
        run()
    assert passes.count > 0


def test_a_failing_run_enables_the_collector_again(collecting):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 2], dtype="float32")
        y = layers.scale(x, scale=2.0)
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(fluid.errors.FluidError):  # a feed of the wrong shape
        exe.run(main, feed={"x": np.ones((1, 3), "float32")}, fetch_list=[y])
    assert gc.isenabled()


def test_a_collector_the_program_disabled_stays_disabled(collecting):
    run = build_loop()
    gc.disable()
    run()
    assert not gc.isenabled()


def test_a_nested_pause_leaves_the_collector_to_the_outer_one(collecting):
    outer = collector.pause()
    inner = collector.pause()
    assert (outer, inner) == (True, False)
    collector.resume(inner)
    assert not gc.isenabled()
    collector.resume(outer)
    assert gc.isenabled()


def test_environment_keeps_the_collector_running():
    env = dict(os.environ, FLUID_NB_COLLECTOR="always")
    code = ("import gc, fluid_nb.exec.collector as c; "
            "print(c.PAUSING, c.pause(), gc.isenabled())")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True, timeout=120)
    assert out.stdout.split() == ["False", "False", "True"]
