"""One ``Executor.run`` is all or nothing: a step that fails anywhere (out of memory, a
kernel's error, a KeyboardInterrupt) leaves every persistable bitwise as it was before the
step, and the next step gives what it gives on a scope that never failed."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument, ResourceExhausted

from .steps import (CPU, KINDS, OPTIMIZERS, batch, failing_step, persistables, restore_flags,
                    small_arena, trained_scope)


@pytest.fixture(autouse=True)
def limited_arena():
    saved = small_arena()
    yield
    restore_flags(saved)


FEEDS = 2  # x and y: the executor runs their feed ops first


def n_ops(main):
    """Ops of one run of ``main``: its own, the two feed ops and the fetch op."""
    return len(main.global_block().ops) + FEEDS + 1


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_a_step_failing_after_any_op_leaves_every_persistable_as_it_was(optimizer, kind):
    exe, main, scope, loss = trained_scope(optimizer)
    twin_exe, twin_main, twin, twin_loss = trained_scope(optimizer)
    failed = 0
    for index in range(n_ops(main)):
        before = persistables(scope)
        failure = failing_step(exe, main, scope, batch(7), [loss], index, kind)
        if failure is None:  # out of memory only where no later op allocates
            assert kind == "memory", f"op {index}: the injected {kind} did not fail the run"
            twin_exe.run(twin_main, feed=batch(7), fetch_list=[twin_loss], scope=twin)
            assert persistables(scope) == persistables(twin)
            continue
        failed += 1
        want = {"interrupt": KeyboardInterrupt, "kernel": InvalidArgument,
                "memory": ResourceExhausted}[kind]
        assert isinstance(failure, want), f"op {index}: {failure!r}"
        after = persistables(scope)
        changed = sorted(name for name in before if after.get(name) != before[name])
        assert not changed, f"{optimizer}, {kind} after op {index}: {changed} changed"
        assert after.keys() == before.keys()
    assert failed >= n_ops(main) // 2
    # the next normal steps agree bitwise with the scope that never failed
    for step in (8, 9):
        got = exe.run(main, feed=batch(step), fetch_list=[loss], scope=scope)
        want = twin_exe.run(twin_main, feed=batch(step), fetch_list=[twin_loss], scope=twin)
        np.testing.assert_array_equal(got[0], want[0])
    assert persistables(scope) == persistables(twin)


@pytest.mark.parametrize("optimizer", ["momentum", "adam"])
def test_running_out_inside_an_update_op_leaves_its_accumulators_and_parameter_as_they_were(
        optimizer):
    """Room for one 64 KiB array: an update op gets its first new array and fails on the
    next one, after which its velocity (momentum) or moments (adam) must be untouched."""
    exe, main, scope, loss = trained_scope(optimizer)
    ops = main.global_block().ops
    update = next(i for i, op in enumerate(ops) if op.type == optimizer
                  and op.input("Param")[0] == "fc_0.w_0")
    before = persistables(scope)
    failure = failing_step(exe, main, scope, batch(7), [loss], FEEDS + update - 1, "memory",
                           room=64 << 10)
    assert isinstance(failure, ResourceExhausted)
    assert persistables(scope) == before


def test_a_startup_program_that_fails_leaves_the_scope_without_half_made_values():
    main, startup, loss = fluid.Program(), fluid.Program(), None
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        fluid.layers.fc(fluid.data("x", [None, 4], "float32"), 3)
    exe, scope = fluid.Executor(CPU), fluid.Scope()
    failure = failing_step(exe, startup, scope, None, None, 0, "kernel")
    assert isinstance(failure, InvalidArgument)
    assert persistables(scope) == {}
    exe.run(startup, scope=scope)
    assert set(persistables(scope)) == {"fc_0.w_0", "fc_0.b_0"}
