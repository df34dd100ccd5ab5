"""Kernels allocate from the host arena through NumPy's handler, a context variable: they run
in a copy of the caller's context that holds the arena's handler. The copy follows the
caller's context (what a kernel reads of it, such as ``np.errstate``, is the caller's at
the time of the run), the caller's context is left as it was, and a run that cannot enter
the copy (a thread's, while another is inside it) sets the handler and puts it back."""
import contextvars
import threading

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import FluidError
from fluid_nb.memory import places

try:
    from numpy._core.multiarray import get_handler_name
except ImportError:  # NumPy 1.x
    from numpy.core.multiarray import get_handler_name

L = fluid.layers
CPU = fluid.CPUPlace()


@pytest.fixture(autouse=True)
def host_arena():
    return places.fresh_host_arena()


def _division():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = L.data(name="x", shape=[3], dtype="float32")
        y = L.data(name="y", shape=[3], dtype="float32")
        out = L.elementwise_div(x, y)
    return main, out


def test_a_repeated_run_reads_numpy_error_state_as_the_caller_set_it():
    main, out = _division()
    exe, scope = fluid.Executor(CPU), fluid.Scope()
    feed = {"x": np.ones((2, 3), "float32"), "y": np.zeros((2, 3), "float32")}
    for divide in ("ignore", "ignore", "raise", "raise", "ignore"):
        with np.errstate(divide=divide):
            if divide == "raise":
                with pytest.raises(FluidError, match="divide by zero"):
                    exe.run(main, feed=feed, fetch_list=[out], scope=scope)
            else:
                got, = exe.run(main, feed=feed, fetch_list=[out], scope=scope)
                assert np.isinf(got).all()
    assert get_handler_name() == "default_allocator"


def test_a_live_op_reads_numpy_error_state_as_the_caller_set_it():
    main, startup, scope = fluid.Program(), fluid.Program(), fluid.Scope()
    with fluid.program_guard(main, startup), fluid.unique_name.guard(), \
            fluid.live(program=main, startup_program=startup, scope=scope):
        zero = L.fill_constant([2], "float32", 0.0)
        with np.errstate(divide="ignore"):
            for _ in range(3):  # (log is a formula op: its first run is one C call)
                assert (L.log(zero).numpy() == -np.inf).all()
        with np.errstate(divide="raise"), pytest.raises(FluidError, match="divide by zero"):
            L.log(zero)
        with np.errstate(divide="ignore"):
            assert (L.log(zero).numpy() == -np.inf).all()
    assert get_handler_name() == "default_allocator"


def test_kernels_allocate_from_the_arena_and_the_caller_keeps_its_allocator(host_arena):
    seen = []

    def look(x):  # a py_func kernel: NumPy's allocator while the run's kernels run
        seen.append(get_handler_name())
        return np.asarray(x) * 2

    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = L.data(name="x", shape=[3], dtype="float32")
        doubled = main.global_block().create_var(name="doubled", shape=[-1, 3],
                                                 dtype="float32")
        L.py_func(func=look, x=x, out=doubled)
        out = L.scale(doubled, scale=0.5)
    exe, scope = fluid.Executor(CPU), fluid.Scope()
    for _ in range(3):
        got, = exe.run(main, feed={"x": np.ones((2, 3), "float32")}, fetch_list=[out],
                       scope=scope, return_numpy=False)
        assert get_handler_name() == "default_allocator"
    assert len(set(seen)) == 1 and seen[0] != "default_allocator"
    assert any(start <= got.array.__array_interface__["data"][0] < start + size
               for start, size in fluid.memory.arena_of(CPU).used_blocks())


def test_runs_inside_a_kernel_and_from_another_thread_meanwhile_allocate_from_the_arena():
    """A kernel of a repeated run runs another program, in its thread and in a thread of
    the caller's context (which finds the context the kernel runs in entered, and sets
    the handler itself): every run gives its values and leaves each thread's allocator as
    it found it."""
    inner, inner_out = _division()
    inner_exe, inner_scope = fluid.Executor(CPU), fluid.Scope()
    feed = {"x": np.full((1, 3), 6.0, "float32"), "y": np.full((1, 3), 2.0, "float32")}
    caller = contextvars.copy_context()  # (the run's caller's context, as it is now)
    results = []

    def run_inner():
        results.append((inner_exe.run(inner, feed=feed, fetch_list=[inner_out],
                                      scope=inner_scope)[0], get_handler_name()))

    def in_worker():  # (its second run is a repeated one: the one that looks for the copy)
        run_inner()
        run_inner()

    def kernel(x):
        worker = threading.Thread(target=caller.copy().run, args=(in_worker,))
        worker.start()
        worker.join()
        run_inner()
        return np.asarray(x) + 1

    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = L.data(name="x", shape=[3], dtype="float32")
        out = main.global_block().create_var(name="plus_one", shape=[-1, 3], dtype="float32")
        L.py_func(func=kernel, x=x, out=out)
    exe, scope = fluid.Executor(CPU), fluid.Scope()
    for _ in range(3):
        got, = exe.run(main, feed={"x": np.zeros((1, 3), "float32")}, fetch_list=[out],
                       scope=scope)
        np.testing.assert_array_equal(got, np.ones((1, 3)))
    assert len(results) == 9
    for value, _ in results:
        np.testing.assert_array_equal(value, np.full((1, 3), 3.0))
    # the worker's allocator after its runs is its own; the kernel's is the arena's
    assert [handler for _, handler in results] == [
        "default_allocator", "default_allocator", results[2][1]] * 3
    assert results[2][1] != "default_allocator"
    assert get_handler_name() == "default_allocator"


class _Incomparable:
    def __eq__(self, other):
        raise TypeError("not comparable")

    __hash__ = object.__hash__


_SETTING = contextvars.ContextVar("a_setting_of_the_callers")


def test_a_context_variable_whose_values_refuse_comparison_does_not_stop_a_run():
    """The caller's context is compared with the one the kept copy was made from: a value
    that refuses to be compared makes a new copy, and the run goes on."""
    main, out = _division()
    exe, scope = fluid.Executor(CPU), fluid.Scope()
    feed = {"x": np.full((1, 3), 6.0, "float32"), "y": np.full((1, 3), 2.0, "float32")}
    for _ in range(3):
        token = _SETTING.set(_Incomparable())
        try:
            got, = exe.run(main, feed=feed, fetch_list=[out], scope=scope)
        finally:
            _SETTING.reset(token)
        np.testing.assert_array_equal(got, np.full((1, 3), 3.0))
