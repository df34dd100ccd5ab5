"""A run that repeats the executor's last one on the host (the same program at the same
version, scope, feed names, fetch items, flags and arena) is one C call
(``_steps.fast_run``). It must be that run exactly: the same values and types back, the
same typed error when an op fails, every persistable put back, the collector, NumPy's
allocator and the run token as they were; and any difference from the last run (a changed
program, another scope, a LoD fed, the event log on, a profiler, ...) sends the run the
Python way, which gives what a first run gives."""
import gc

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.exec import executor as executor_module
from fluid_nb.exec.feed_fetch import FetchedArray
from fluid_nb.exec.run_plan import RunPlan
from fluid_nb.memory import places as memory_places

CPU = fluid.CPUPlace()
IDS = np.array([[1], [2], [7]], "int64")


class FastRuns:
    """executor.fast_run, counting the runs it took (not NotImplemented)."""

    def __init__(self, real):
        self.real, self.taken = real, 0

    def __call__(self, *args):
        result = self.real(*args)
        self.taken += result is not NotImplemented
        return result


@pytest.fixture
def fast(monkeypatch):
    spy = FastRuns(executor_module.fast_run)
    monkeypatch.setattr(executor_module, "fast_run", spy)
    return spy


@pytest.fixture
def python_way(monkeypatch):
    """Every run the Python way: what fast_run must match."""
    monkeypatch.setattr(executor_module, "fast_run", lambda *args: NotImplemented)


def embedding_program():
    """counter += 1; s = mean(lookup_table(w, ids)), s declared [1]; ids fed [-1, 1]."""
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="counter", shape=(1,), dtype="float32", persistable=True)
    block.create_var(name="w", shape=(10, 4), dtype="float32", persistable=True)
    block.create_var(name="ids", shape=(-1, 1), dtype="int64", need_check_feed=True)
    block.create_var(name="s", shape=(1,), dtype="float32")
    block.append_op(type="increment", inputs={"X": "counter"}, outputs={"Out": "counter"},
                    attrs={"step": 1.0})
    block.append_op(type="lookup_table", inputs={"W": "w", "Ids": "ids"},
                    outputs={"Out": "emb"})
    block.append_op(type="mean", inputs={"X": "emb"}, outputs={"Out": "s"})
    return program


def embedding_scope():
    scope = fluid.Scope()
    scope.var("counter").get_tensor().set(np.zeros(1, "float32"), CPU)
    scope.var("w").get_tensor().set(np.arange(40, dtype="float32").reshape(10, 4), CPU)
    return scope


def counter(scope):
    return float(np.array(scope.find_var("counter").get_tensor())[0])


def expected_mean(ids):
    return np.arange(40, dtype="float32").reshape(10, 4)[ids.reshape(-1)].mean()


def test_a_repeated_run_is_one_c_call_with_the_python_ways_results(fast):
    program, scope = embedding_program(), embedding_scope()
    exe = fluid.Executor(CPU)
    results = [exe.run(program, feed={"ids": IDS}, fetch_list=["s", "emb"], scope=scope)
               for _ in range(4)]
    assert fast.taken == 3 and counter(scope) == 4
    for s, emb in results:
        assert type(s) is FetchedArray and s.shape == (1,) and s.dtype == np.float32
        assert float(s) == pytest.approx(expected_mean(IDS))
        np.testing.assert_array_equal(emb, np.arange(40, dtype="float32").reshape(10, 4)[[1, 2, 7]])
    assert scope.kids == [] and exe.run_token is None


def test_return_numpy_false_gives_lodtensors_with_the_declared_shape(fast):
    program, scope = embedding_program(), embedding_scope()
    exe = fluid.Executor(CPU)
    for _ in range(3):
        s, = exe.run(program, feed={"ids": IDS}, fetch_list=["s"], scope=scope,
                     return_numpy=False)
        assert isinstance(s, fluid.LoDTensor) and np.array(s).shape == (1,)
    assert fast.taken == 2


def test_the_global_scope_is_read_as_it_is_at_each_run(fast):
    program, exe = embedding_program(), fluid.Executor(CPU)
    first, second = embedding_scope(), embedding_scope()
    with fluid.scope_guard(first):
        for _ in range(3):
            exe.run(program, feed={"ids": IDS}, fetch_list=["s"])
    with fluid.scope_guard(second):
        exe.run(program, feed={"ids": IDS}, fetch_list=["s"])
    assert (counter(first), counter(second)) == (3, 1)
    assert fast.taken == 2  # the second scope's run went the Python way


@pytest.mark.parametrize("change", [
    "another scope", "the program changed", "feed names in another order",
    "another fetch variable", "use_prune", "the flags changed", "a fresh arena",
    "a LoD fed", "a LoDTensor fed", "another dtype fed", "another feed name"])
def test_a_run_unlike_the_last_goes_the_python_way_and_gives_its_results(change, fast):
    program = fluid.Program()
    with fluid.program_guard(program, fluid.Program()):
        x = fluid.data("x", [-1, 3], "float32")
        y = fluid.data("y", [-1, 3], "float32", lod_level=1)
        total = fluid.layers.reduce_sum(x * 2.0 + y)
        doubled = x * 2.0
    exe, scope = fluid.Executor(CPU), fluid.Scope()
    xs, ys = np.ones((2, 3), "float32"), np.full((2, 3), 0.5, "float32")
    feed, fetch, kwargs = {"x": xs, "y": ys}, [total], {}
    for _ in range(2):
        exe.run(program, feed=feed, fetch_list=fetch, scope=scope)
    assert fast.taken == 1
    want = 2 * xs.sum() + ys.sum()
    if change == "another scope":
        scope = fluid.Scope()
    elif change == "the program changed":
        with fluid.program_guard(program, fluid.Program()):
            fluid.layers.scale(doubled, 3.0)
    elif change == "feed names in another order":
        feed = {"y": ys, "x": xs}
    elif change == "another fetch variable":
        fetch, want = [doubled], 2 * xs
    elif change == "use_prune":
        kwargs = {"use_prune": True}
    elif change == "the flags changed":
        fluid.set_flags({"FLAGS_eager_delete_tensor_gb": 0.0})
    elif change == "a fresh arena":
        memory_places.fresh_host_arena()
    elif change == "a LoD fed":
        feed = {"x": xs, "y": fluid.create_lod_tensor(ys, [[2]], CPU)}
    elif change == "a LoDTensor fed":
        tensor = fluid.LoDTensor()
        tensor.set(xs, CPU)
        feed = {"x": tensor, "y": ys}
    elif change == "another dtype fed":  # (converted the Python way)
        feed = {"x": xs.astype("float64"), "y": ys}
    elif change == "another feed name":
        feed, want = {"x": xs}, None
    if want is None:  # the Python way's typed error
        with pytest.raises(fluid.errors.FluidError) as raised:
            exe.run(program, feed=feed, fetch_list=fetch, scope=scope)
        assert "'x'" in str(raised.value) or "'y'" in str(raised.value)
        assert fast.taken == 1
        return
    got, = exe.run(program, feed=feed, fetch_list=fetch, scope=scope, **kwargs)
    np.testing.assert_allclose(np.asarray(got).reshape(np.shape(want)), want)
    taken = 1 if change not in ("a LoDTensor fed",) else 2  # (a LoDTensor of no LoD is fast)
    assert fast.taken == taken
    exe.run(program, feed=feed, fetch_list=fetch, scope=scope, **kwargs)  # now the last run
    assert fast.taken == taken + (change not in ("use_prune", "a LoD fed", "another dtype fed"))


def test_a_program_fed_nothing_repeats_the_c_way_with_feed_none_or_empty(fast):
    program, scope = fluid.Program(), embedding_scope()
    block = program.global_block()
    block.create_var(name="counter", shape=(1,), dtype="float32", persistable=True)
    block.append_op(type="increment", inputs={"X": "counter"}, outputs={"Out": "counter"},
                    attrs={"step": 1.0})
    exe = fluid.Executor(CPU)
    for feed in (None, None, {}, None):
        exe.run(program, feed=feed, fetch_list=["counter"], scope=scope)
    assert counter(scope) == 4 and fast.taken == 3


def test_the_event_log_a_profiler_or_a_run_reporter_take_the_python_way(fast, monkeypatch):
    program, scope = embedding_program(), embedding_scope()
    exe = fluid.Executor(CPU)
    run = lambda: exe.run(program, feed={"ids": IDS}, fetch_list=["s"], scope=scope)  # noqa
    run(), run()
    assert fast.taken == 1
    fluid.memory.record_events(CPU)
    try:
        fluid.memory.events(CPU)
        run()
        ops = {e.op[0] for e in fluid.memory.events(CPU) if e.op is not None}
    finally:
        fluid.memory.record_events(CPU, False)
    assert "lookup_table" in ops and fast.taken == 1
    exe.trace = []
    run()
    assert [op.type for op, _ in exe.trace][:3] == ["feed", "increment", "lookup_table"]
    assert fast.taken == 1
    exe.trace = None

    class Reporter:
        runs = 0

        def ran(self, plan, fetched):
            Reporter.runs += 1
    monkeypatch.setattr(executor_module, "run_reporter", Reporter())
    run()
    assert Reporter.runs == 1 and fast.taken == 1
    monkeypatch.setattr(executor_module, "run_reporter", None)
    run(), run()
    assert fast.taken == 3  # (what the executor kept of the last run still held)
    assert counter(scope) == 7


def failing_run(exe, program, scope):
    with pytest.raises(fluid.errors.InvalidArgument) as raised:
        exe.run(program, feed={"ids": np.array([[1], [99]], "int64")}, fetch_list=["s"],
                scope=scope)
    return raised.value


def allocator_name():
    multiarray = getattr(np, "_core", None) or np.core
    return multiarray.multiarray.get_handler_name()


def test_a_failing_op_raises_what_the_python_way_raises_and_puts_everything_back(
        fast, monkeypatch):
    program, scope = embedding_program(), embedding_scope()
    exe = fluid.Executor(CPU)
    for _ in range(2):
        exe.run(program, feed={"ids": IDS}, fetch_list=["s"], scope=scope)
    handler, collecting = allocator_name(), gc.isenabled()
    ended = []
    step_failed = RunPlan._step_failed
    monkeypatch.setattr(RunPlan, "_step_failed",
                        lambda *args: ended.append(args[2]) or step_failed(*args))
    error = failing_run(exe, program, scope)
    assert fast.taken == 1 and ended == [2]  # the C way ran; step 2 (after the feed) failed
    assert counter(scope) == 2  # the increment before the failing op, taken back
    assert scope.kids == [] and exe.run_token is None and gc.isenabled() == collecting
    plan, = scope.plans.values()
    assert all(holder.value is None for holder in plan.local_holders)
    # the same error the Python way gives
    monkeypatch.setattr(executor_module, "fast_run", lambda *args: NotImplemented)
    other_scope = embedding_scope()
    expected = failing_run(fluid.Executor(CPU), program, other_scope)
    assert type(error) is type(expected) and str(error) == str(expected)
    assert type(error.__cause__) is type(expected.__cause__)
    # and the executor runs on, the C way
    monkeypatch.setattr(executor_module, "fast_run", fast)
    exe.run(program, feed={"ids": IDS}, fetch_list=["s"], scope=scope)
    exe.run(program, feed={"ids": IDS}, fetch_list=["s"], scope=scope)
    assert counter(scope) == 4 and fast.taken == 3
    assert allocator_name() == handler


def ran_twice_with_a_step_replaced(op_type, step):
    """(exe, program, scope) of the embedding program run twice, the step of its op
    ``op_type`` then replaced by ``step`` in what only the C way runs (plan.fast)."""
    program, scope = embedding_program(), embedding_scope()
    exe = fluid.Executor(CPU)
    for _ in range(2):
        exe.run(program, feed={"ids": IDS}, fetch_list=["s"], scope=scope)
    plan, = scope.plans.values()
    steps = list(plan.fast[7])
    steps[[op.op.type for op in plan.prepared.ops].index(op_type)] = step
    plan.fast = plan.fast[:7] + (tuple(steps),) + plan.fast[8:]
    return exe, program, scope


def test_an_interrupt_in_a_step_puts_everything_back_and_is_not_wrapped(fast):
    def interrupted():
        raise KeyboardInterrupt
    exe, program, scope = ran_twice_with_a_step_replaced("mean", interrupted)
    collecting = gc.isenabled()
    with pytest.raises(KeyboardInterrupt):  # (only plan.fast has that step: the C way ran)
        exe.run(program, feed={"ids": IDS}, fetch_list=["s"], scope=scope)
    assert counter(scope) == 2 and scope.kids == []
    assert exe.run_token is None and gc.isenabled() == collecting


@pytest.mark.parametrize("pausing", [True, False])
def test_the_collector_is_paused_during_the_run_unless_asked_to_run(pausing, fast,
                                                                    monkeypatch):
    """FLUID_NB_COLLECTOR=always (collector.PAUSING False) keeps it running, the C way too."""
    from fluid_nb.exec import collector
    monkeypatch.setattr(collector, "PAUSING", pausing)
    seen = []
    exe, program, scope = ran_twice_with_a_step_replaced(
        "increment", lambda: seen.append(gc.isenabled()))
    gc.enable()
    try:
        exe.run(program, feed={"ids": IDS}, fetch_list=["s"], scope=scope)
    finally:
        collecting = gc.isenabled()
        gc.enable()
    assert seen == [not pausing] and collecting and fast.taken == 2


def test_memory_running_out_in_a_step_names_what_holds_the_arena(fast):
    def out_of_memory():
        raise MemoryError("no room for 1 GiB")
    exe, program, scope = ran_twice_with_a_step_replaced("lookup_table", out_of_memory)
    with pytest.raises(fluid.errors.ResourceExhausted, match="largest holders") as raised:
        exe.run(program, feed={"ids": IDS}, fetch_list=["s"], scope=scope)
    assert "no room for 1 GiB" in str(raised.value) and counter(scope) == 2


def test_what_the_executor_keeps_of_the_last_run_keeps_nothing_alive(fast):
    import weakref
    program, scope = embedding_program(), embedding_scope()
    exe = fluid.Executor(CPU)
    for _ in range(2):
        exe.run(program, feed={"ids": IDS}, fetch_list=["s"], scope=scope)
    assert fast.taken == 1
    program_ref, scope_ref = weakref.ref(program), weakref.ref(scope)
    del program, scope
    gc.collect()
    assert program_ref() is None and scope_ref() is None
    # the memo of a dead run takes nothing
    other_program, other_scope = embedding_program(), embedding_scope()
    exe.run(other_program, feed={"ids": IDS}, fetch_list=["s"], scope=other_scope)
    assert fast.taken == 1 and counter(other_scope) == 1


def test_fast_run_refuses_a_memo_that_is_not_one():
    with pytest.raises(TypeError, match="last expected a tuple"):
        executor_module.fast_run((), None, None, {}, None, None, True, "feed", "fetch", False)
    with pytest.raises(TypeError, match="10 arguments"):
        executor_module.fast_run(())
