"""Tensors live in the host arena: the executor and live cells allocate from it, the
``fluid.memory`` API reads it, the event log says which op and variable each block is for,
and running out of it is a typed error that leaves everything usable."""
import gc
import weakref

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb import flags
from fluid_nb.memory import places
from fluid_nb.memory.arena import Arena, allocating_from
from fluid_nb.memory.events import data_address
from tests.memory.steps import classifier

try:
    from numpy._core.multiarray import get_handler_name
except ImportError:  # NumPy 1.x
    from numpy.core.multiarray import get_handler_name

CPU = fluid.CPUPlace()

# NumPy keeps a small array alive for the process the first time a RandomState is seeded;
# made here, in an arena of its own, it is not counted as one of a run's tensors below
with allocating_from(Arena(1 << 16, 256)):
    np.random.RandomState(1).uniform(size=2)


@pytest.fixture(autouse=True)
def own_arena():
    """Each test gets a fresh host arena (a chunk size no other test uses) and the flags
    as they were afterwards."""
    saved = dict(flags._values)
    fluid.set_flags({"FLAGS_initial_cpu_memory_in_mb": 17})  # 16 MiB chunks
    yield places.fresh_host_arena()  # a new arena, not the last test's
    flags._values.clear()
    flags._values.update(saved)
    flags.version[0] += 1


def mlp(hidden=32, seed=1):
    return classifier(16, hidden, 4, lambda: fluid.optimizer.Adam(0.01), seed)


def feed(batch=8, seed=0):
    rng = np.random.RandomState(seed)
    return {"x": rng.rand(batch, 16).astype("float32"),
            "label": rng.randint(0, 4, (batch, 1)).astype("int64")}


def block_of(arena, array):
    """(address, size) of the arena block holding ``array``'s data, or None."""
    address = data_address(array)
    for start, size in arena.used_blocks():
        if start <= address < start + size:
            return start, size
    return None


def scope_arrays(scope):
    out = {}
    for name, holder in scope.vars.items():
        value = holder.value
        if getattr(value, "array", None) is not None:
            out[name] = value.array
    return out


def test_every_tensor_a_run_leaves_lies_in_the_arena_and_used_is_their_blocks(own_arena):
    arena = own_arena.arena
    assert arena.used == 0
    main, startup, loss = mlp()
    scope = fluid.Scope()
    exe = fluid.Executor(CPU)
    exe.run(startup, scope=scope)
    fetched = [exe.run(main, feed=feed(seed=i), fetch_list=[loss], scope=scope)[0]
               for i in range(3)]
    # the plans hold per-op constants in the arena too: with them gone, what is left in
    # the arena is exactly the scope's tensors and the fetched arrays
    scope.plans.clear()
    del exe
    live = dict(scope_arrays(scope))
    live.update({f"fetched {i}": array for i, array in enumerate(fetched)})
    blocks = {}
    for name, array in live.items():
        found = block_of(arena, array)
        assert found is not None, f"{name} does not lie in the arena"
        blocks[found[0]] = found[1]
        assert found[1] >= array.nbytes  # the block holds the whole tensor
        assert found[1] < 2 * max(array.nbytes, arena.min_block)  # rounded up, no more
    assert arena.used == sum(blocks.values())
    assert set(blocks) == {address for address, _ in arena.used_blocks()}
    # the arrays the user fed are the user's: not copied into the arena
    x = feed()["x"]
    fluid.Executor(CPU).run(main, feed={"x": x, "label": feed()["label"]},
                            fetch_list=[loss], scope=scope)
    assert block_of(arena, x) is None


def test_outside_a_run_numpy_allocates_as_it_did():
    before = get_handler_name()
    main, startup, loss = mlp()
    exe = fluid.Executor(CPU)
    exe.run(startup)
    exe.run(main, feed=feed(), fetch_list=[loss])
    assert get_handler_name() == before == "default_allocator"
    assert get_handler_name(np.ones(3)) == "default_allocator"


def test_results_are_bit_identical_with_the_arena_and_with_the_system_allocator():
    def train(system):
        fluid.set_flags({"FLAGS_use_system_allocator": system})
        main, startup, loss = mlp(seed=3)
        scope, exe = fluid.Scope(), fluid.Executor(CPU)
        exe.run(startup, scope=scope)
        losses = [exe.run(main, feed=feed(seed=i), fetch_list=[loss], scope=scope)[0]
                  for i in range(5)]
        return losses, {n: a.copy() for n, a in scope_arrays(scope).items()}

    arena_run, system_run = train(False), train(True)
    for a, b in zip(arena_run[0], system_run[0]):
        np.testing.assert_array_equal(a, b)
    assert arena_run[1].keys() == system_run[1].keys()
    for name in arena_run[1]:
        np.testing.assert_array_equal(arena_run[1][name], system_run[1][name])


def test_the_system_allocator_flag_turns_the_arena_off():
    fluid.set_flags({"FLAGS_use_system_allocator": True})
    assert places.host_arena() is None
    main, startup, loss = mlp()
    scope, exe = fluid.Scope(), fluid.Executor(CPU)
    exe.run(startup, scope=scope)
    exe.run(main, feed=feed(), fetch_list=[loss], scope=scope)
    assert all(get_handler_name(a) == "default_allocator"
               for a in scope_arrays(scope).values())
    with pytest.raises(fluid.errors.NotFound, match="FLAGS_use_system_allocator"):
        fluid.memory.used(CPU)


def test_the_event_log_names_the_op_and_the_variable_of_each_block(own_arena):
    main, startup, loss = mlp(hidden=1024)  # 64 KiB of weights
    scope, exe = fluid.Scope(), fluid.Executor(CPU)
    exe.run(startup, scope=scope)
    exe.run(main, feed=feed(), fetch_list=[loss], scope=scope)
    assert fluid.memory.events(CPU) == []  # off by default in Executor.run
    assert fluid.memory.record_events(CPU) is False
    exe.run(main, feed=feed(), fetch_list=[loss], scope=scope)
    log = fluid.memory.events(CPU)
    fluid.memory.record_events(CPU, False)
    allocs = [e for e in log if e.kind == "alloc"]
    kinds = {e.kind for e in log}
    assert {"alloc", "free"} <= kinds
    named = {e.variable: e for e in allocs if e.variable is not None}
    assert named["fc_0.tmp_0"].op[0] == "mul"
    assert named["fc_0.w_0@GRAD"].op[0] == "mul_grad"
    # the updates, which come last, are written in place all at once: no new blocks
    assert not {"fc_0.w_0", "fc_0.w_0_moment1_0", "fc_0.b_0"} & set(named)
    assert named["fc_0.tmp_0"].requested == 8 * 1024 * 4
    assert named["fc_0.tmp_0"].size == 32768
    # used after each event is the running total of alloc minus free
    total = log[0].used - (log[0].size if log[0].kind == "alloc" else
                           -log[0].size if log[0].kind == "free" else 0)
    for event in log:
        if event.kind in ("alloc", "huge_alloc"):
            total += event.size
        elif event.kind in ("free", "huge_free"):
            total -= event.size
        assert event.used == total
    # splits and merges name blocks of 2^k bytes at offsets that are multiples of their size
    base = fluid.memory.arena_of(CPU).chunks()[0]
    for event in log:
        if event.kind in ("split", "merge"):
            assert event.size & (event.size - 1) == 0
            assert (event.address - base) % event.size == 0


class _Watcher:
    """Stands for a MemoryView following the session (what watch_memory keeps weakly)."""


def test_watched_live_cells_record_their_blocks_by_op_and_variable():
    main, startup, scope = fluid.Program(), fluid.Program(), fluid.Scope()
    fluid.memory.events(CPU)  # start from an empty log
    watcher = _Watcher()
    with fluid.live(program=main, startup_program=startup, scope=scope) as session:
        session.watch_memory(watcher)
        x = fluid.layers.fill_constant([64, 64], "float32", 1.0)
        y = fluid.layers.relu(x * 2.0)
    log = fluid.memory.events(CPU)
    named = {e.variable: e.op for e in log if e.kind == "alloc" and e.variable}
    assert named[x.name][0] == "fill_constant"
    assert named[y.name][0] == "relu"
    assert fluid.memory.arena_of(CPU).recording is False  # back off after the session
    assert block_of(fluid.memory.arena_of(CPU), scope.find_var(y.name).value.array)


def test_running_out_of_the_arena_is_resource_exhausted_and_everything_stays_usable():
    fluid.set_flags({"FLAGS_fraction_of_cpu_memory_to_use":
                     (64 << 20) / places.physical_memory()})  # a 64 MiB limit
    arena = places.host_arena().arena
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        size = fluid.data("size", [1], "float32")
        keep = fluid.layers.create_global_var([1024, 1024], 1.0, "float32", persistable=True,
                                              name="keep")
        small = fluid.layers.scale(keep, 2.0)
        big = fluid.layers.fill_constant([8192, 4096], "float32", 1.0)  # 128 MiB
        total = fluid.layers.reduce_sum(big) + fluid.layers.reduce_sum(small)
        fluid.layers.assign(fluid.layers.scale(keep, 3.0), keep)
    scope, exe = fluid.Scope(), fluid.Executor(CPU)
    exe.run(startup, scope=scope)
    keep_before = scope.find_var("keep").value.array.copy()
    used_before = arena.used
    with pytest.raises(fluid.errors.ResourceExhausted) as caught:
        exe.run(main, feed={"size": np.ones(1, "float32")}, fetch_list=[total], scope=scope)
    message = str(caught.value)
    assert "fill_constant" in message and big.name in message
    assert "134217728 bytes" in message and "[8192, 4096]" in message
    assert "keep (4.0 MiB)" in message  # what holds the arena, the largest first
    assert "limit 64.0 MiB" in message
    # the scope holds what it held, the arena what it held, and both keep working
    np.testing.assert_array_equal(scope.find_var("keep").value.array, keep_before)
    assert arena.used == used_before
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        fine = fluid.layers.scale(fluid.data("keep", [1024, 1024], "float32"), 0.5)
    (out,) = exe.run(fine.block.program, feed={"keep": keep_before}, fetch_list=[fine],
                     scope=fluid.Scope())
    np.testing.assert_array_equal(out, keep_before * 0.5)
    del out
    gc.collect()  # the run's scope (with its plan, a cycle) and its values are gone
    assert arena.used == used_before


def test_changing_the_flags_gives_a_new_arena_and_old_tensors_stay_valid():
    main, startup, loss = mlp()
    scope, exe = fluid.Scope(), fluid.Executor(CPU)
    exe.run(startup, scope=scope)
    (first,) = exe.run(main, feed=feed(), fetch_list=[loss], scope=scope)
    old = fluid.memory.arena_of(CPU)
    assert old.chunk_size == 16 << 20
    fluid.set_flags({"FLAGS_initial_cpu_memory_in_mb": 8})
    (second,) = exe.run(main, feed=feed(), fetch_list=[loss], scope=scope)
    new = fluid.memory.arena_of(CPU)
    assert new is not old and new.chunk_size == 8 << 20
    assert block_of(old, first) is not None and block_of(new, second) is not None
    assert np.isfinite(first).all() and old.used > 0


def test_eager_deletion_keeps_the_peak_below_keeping_every_temporary():
    def peak(eager):
        fluid.set_flags({"FLAGS_eager_delete_tensor_gb": 0.0 if eager else -1.0})
        main, startup, loss = mlp(hidden=256)
        scope, exe = fluid.Scope(), fluid.Executor(CPU)
        exe.run(startup, scope=scope)
        exe.run(main, feed=feed(batch=64), fetch_list=[loss], scope=scope)
        fluid.memory.reset_peak(CPU)
        exe.run(main, feed=feed(batch=64), fetch_list=[loss], scope=scope)
        return fluid.memory.peak(CPU) - fluid.memory.used(CPU)

    assert peak(eager=True) < 0.8 * peak(eager=False)


def test_alloc_free_used_and_stats_follow_the_developers_guide(own_arena):
    address = fluid.memory.alloc(CPU, 1000)
    assert fluid.memory.used(CPU) == 1024
    other = fluid.memory.alloc(CPU, 3000)
    base = fluid.memory.arena_of(CPU).chunks()[0]
    assert fluid.memory.used(CPU) == 1024 + 4096
    assert (address - base) % 1024 == 0 and (other - base) % 4096 == 0
    stats = fluid.memory.stats(CPU)
    assert (stats["chunks"], stats["chunk_size"], stats["used_blocks"]) == (1, 16 << 20, 2)
    assert stats["free"] == (16 << 20) - 5120 and stats["largest_free"] == 8 << 20
    assert stats["fragmentation"] == pytest.approx(1 - (8 << 20) / ((16 << 20) - 5120))
    blocks = fluid.memory.blocks(CPU)
    assert [b for b in blocks if b[3] != "free"] == [(0, 0, 1024, "used"), (0, 4096, 4096, "used")]
    fluid.memory.free(CPU, address)
    fluid.memory.free(CPU, other)
    assert fluid.memory.used(CPU) == 0 and fluid.memory.peak(CPU) == 5120
    assert fluid.memory.blocks(CPU) == [(0, 0, 16 << 20, "free")]
    fluid.memory.reset_peak(CPU)
    assert fluid.memory.peak(CPU) == 0
    assert fluid.memory.release(CPU) == 16 << 20 and fluid.memory.stats(CPU)["chunks"] == 0


def test_bad_calls_say_what_was_expected():
    with pytest.raises(fluid.errors.InvalidArgument, match="size expected an int >= 1"):
        fluid.memory.alloc(CPU, 0)
    with pytest.raises(fluid.errors.InvalidType, match="place expected a place"):
        fluid.memory.used("cpu")
    from fluid_nb.testing.strict_device import StrictDevicePlace
    with pytest.raises(fluid.errors.Unimplemented, match="only the host and CUDAPlaces"):
        fluid.memory.used(StrictDevicePlace())
    if not fluid.is_compiled_with_cuda():  # a CUDAPlace's arena needs CuPy and a GPU
        with pytest.raises(fluid.errors.PreconditionNotMet, match="CUDAPlace: .* expected"):
            fluid.memory.used(fluid.CUDAPlace(0))
    with pytest.raises(fluid.errors.InvalidArgument, match="fluid.memory.alloc gave out"):
        fluid.memory.free(CPU, 12345)
    with pytest.raises(fluid.errors.InvalidArgument, match="a fraction in \\(0, 1\\]"):
        fluid.set_flags({"FLAGS_fraction_of_cpu_memory_to_use": 1.5})
    fluid.set_flags({"FLAGS_fraction_of_cpu_memory_to_use": 1.0})
    fluid.set_flags({"FLAGS_fraction_of_cpu_memory_to_use": 1e-9})
    with pytest.raises(fluid.errors.ResourceExhausted, match="within the arena's limit"):
        fluid.memory.alloc(CPU, 1 << 20)


def test_turning_the_system_allocator_on_and_off_keeps_the_same_arena(own_arena):
    fluid.set_flags({"FLAGS_use_system_allocator": True})
    assert places.host_arena() is None
    fluid.set_flags({"FLAGS_use_system_allocator": False})
    assert places.host_arena() is own_arena  # its chunks (and what lives there) kept


@pytest.mark.parametrize("optimizer", [lambda: fluid.optimizer.SGD(0.1),
                                       lambda: fluid.optimizer.Momentum(0.1, 0.9),
                                       lambda: fluid.optimizer.Momentum(0.1, 0.9,
                                                                        use_nesterov=True),
                                       lambda: fluid.optimizer.Adam(0.01)],
                         ids=["sgd", "momentum", "nesterov", "adam"])
def test_a_step_writes_in_place_only_the_arrays_nobody_else_holds_and_holding_them_changes_nothing(
        optimizer):
    """A step's trailing updates write parameters and optimizer state in place when nothing
    but the scope (and the run's undo log) holds them; an array someone holds is never
    written (the step gives new ones), and the values are bit for bit the same either
    way."""
    def train(hold):
        main, startup = fluid.Program(), fluid.Program()
        main.random_seed = startup.random_seed = 5
        with fluid.program_guard(main, startup), fluid.unique_name.guard():
            x = fluid.data("x", [None, 16], "float32")
            label = fluid.data("label", [None, 1], "int64")
            h = fluid.layers.fc(x, 5000, act="relu")  # 80,000 weights: adam in two slices
            logits = fluid.layers.fc(h, 4)
            loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits, label))
            optimizer().minimize(loss)
        scope, exe = fluid.Scope(), fluid.Executor(CPU)
        exe.run(startup, scope=scope)
        persistable = [v.name for v in main.list_vars() if v.persistable
                       and scope.find_var(v.name) is not None]
        held, copies, same_array = [], [], True
        losses = []
        for i in range(4):
            weights = weakref.ref(scope.find_var("fc_0.w_0").value.array)
            if hold:
                arrays = {n: scope.find_var(n).value.array for n in persistable}
                held.append(arrays)
                copies.append({n: a.copy() for n, a in arrays.items()})
            losses.append(exe.run(main, feed=feed(seed=i), fetch_list=[loss], scope=scope)[0])
            same_array &= scope.find_var("fc_0.w_0").value.array is weights()
        for arrays, saved in zip(held, copies):  # what was held was never written
            for name in arrays:
                np.testing.assert_array_equal(arrays[name], saved[name])
        return losses, {n: scope.find_var(n).value.array.copy() for n in persistable}, \
            same_array

    free_losses, free_state, in_place = train(hold=False)
    held_losses, held_state, held_in_place = train(hold=True)
    assert in_place and not held_in_place
    for a, b in zip(free_losses, held_losses):
        np.testing.assert_array_equal(a, b)
    assert free_state.keys() == held_state.keys()
    for name in free_state:
        np.testing.assert_array_equal(free_state[name], held_state[name])


def test_a_view_of_a_parameter_keeps_its_values():
    main, startup, loss = mlp()
    scope, exe = fluid.Scope(), fluid.Executor(CPU)
    exe.run(startup, scope=scope)
    view = scope.find_var("fc_0.w_0").value.array[:2]
    before = view.copy()
    exe.run(main, feed=feed(), fetch_list=[loss], scope=scope)
    np.testing.assert_array_equal(view, before)
    assert not np.array_equal(scope.find_var("fc_0.w_0").value.array[:2], before)


@pytest.mark.parametrize("in_place", [False, True])
def test_the_inplace_flag_decides_whether_a_steps_updates_keep_the_parameters_arrays(
        in_place):
    main, startup, loss = mlp(hidden=1024)
    scope, exe = fluid.Scope(), fluid.Executor(CPU)
    exe.run(startup, scope=scope)
    fluid.set_flags({"FLAGS_inplace_update": in_place})
    weights = scope.find_var("fc_0.w_0").value.array
    before = weights.copy()
    del weights  # nothing but the scope holds the array
    address = data_address(scope.find_var("fc_0.w_0").value.array)
    for seed in range(3):  # (the first step through Python, the next ones through C)
        exe.run(main, feed=feed(seed=seed), fetch_list=[loss], scope=scope)
        kept = data_address(scope.find_var("fc_0.w_0").value.array) == address
        assert kept == in_place
    assert not np.array_equal(scope.find_var("fc_0.w_0").value.array, before)


def adam_step_log(in_place_flag=True, fetch=()):
    """The arena's events of a second Adam step of ``mlp(hidden=1024)`` (64 KiB weights),
    the scope, and what the step fetched (the loss, then ``fetch``)."""
    main, startup, loss = mlp(hidden=1024)
    fluid.set_flags({"FLAGS_inplace_update": in_place_flag})
    scope, exe = fluid.Scope(), fluid.Executor(CPU)
    exe.run(startup, scope=scope)
    exe.run(main, feed=feed(), fetch_list=[loss], scope=scope)
    fluid.memory.record_events(CPU)
    fluid.memory.events(CPU)
    fetched = exe.run(main, feed=feed(seed=1), fetch_list=[loss, *fetch], scope=scope)
    log = fluid.memory.events(CPU)
    fluid.memory.record_events(CPU, False)
    return log, scope, fetched


WEIGHT_BYTES = 16 * 1024 * 4


def test_an_adam_step_commits_its_updates_in_place_and_allocates_nothing_for_them(own_arena):
    # the step's adam ops come last: each one's update is prepared, then all are written
    # in place at once, so the 64 KiB weight and its moments keep their blocks
    log, scope, _ = adam_step_log()  # (the second step: the first made the state)
    by_adam = [e for e in log if e.kind == "alloc" and e.op is not None and e.op[0] == "adam"]
    assert all(e.requested < 64 for e in by_adam)  # (only the scalars it works out)
    assert not {e.variable for e in by_adam} - {None}
    freed = {e.address for e in log if e.kind == "free"}
    for name in ("fc_0.w_0", "fc_0.w_0_moment1_0", "fc_0.w_0_moment2_0"):
        assert data_address(scope.find_var(name).value.array) not in freed


def test_a_timed_adam_step_runs_each_update_as_itself(own_arena):
    # an executor timing its ops sees each adam op run: under the undo log it writes new
    # moments, and the new weight goes over its gradient, which dies with the update, so
    # a 64 KiB weight costs two blocks of its size a step (Moment1Out, Moment2Out)
    seen = []

    class Trace(list):
        def append(self, entry):
            seen.append(entry)

    main, startup, loss = mlp(hidden=1024)
    scope, exe = fluid.Scope(), fluid.Executor(CPU)
    exe.run(startup, scope=scope)
    exe.run(main, feed=feed(), fetch_list=[loss], scope=scope)
    fluid.memory.record_events(CPU)
    fluid.memory.events(CPU)
    exe.trace = Trace()
    try:
        exe.run(main, feed=feed(seed=1), fetch_list=[loss], scope=scope)
    finally:
        exe.trace = None
    log = fluid.memory.events(CPU)
    fluid.memory.record_events(CPU, False)
    assert len(seen) == len(main.global_block().ops) + 3  # (two feeds and a fetch)
    by_adam = [e for e in log if e.kind == "alloc" and e.op is not None
               and e.op[0] == "adam" and e.requested == WEIGHT_BYTES]
    assert sorted(e.variable for e in by_adam) == ["fc_0.w_0_moment1_0",
                                                   "fc_0.w_0_moment2_0"]
    gradient, = [e for e in log if e.kind == "alloc" and e.variable == "fc_0.w_0@GRAD"]
    assert data_address(scope.find_var("fc_0.w_0").value.array) == gradient.address


def test_the_weight_takes_its_gradients_block_only_while_in_place_updates_are_on(own_arena):
    log, scope, _ = adam_step_log(in_place_flag=False)
    by_adam = [e.variable for e in log if e.kind == "alloc" and e.op is not None
               and e.op[0] == "adam" and e.requested == WEIGHT_BYTES]
    assert sorted(by_adam) == ["fc_0.w_0", "fc_0.w_0_moment1_0", "fc_0.w_0_moment2_0"]


def test_a_gradient_read_after_the_update_keeps_its_block_and_its_values(own_arena):
    # fetched after the step, the gradient lives past adam, which only reads it: what is
    # fetched is the gradient, not the new weight
    log, scope, fetched = adam_step_log(fetch=["fc_0.w_0@GRAD"])
    _, reference_scope, reference = adam_step_log(in_place_flag=False,
                                                  fetch=["fc_0.w_0@GRAD"])
    np.testing.assert_array_equal(fetched[1], reference[1])
    assert not np.array_equal(fetched[1], scope.find_var("fc_0.w_0").value.array)
    np.testing.assert_array_equal(scope.find_var("fc_0.w_0").value.array,
                                  reference_scope.find_var("fc_0.w_0").value.array)


def test_training_over_the_gradients_blocks_gives_the_same_values_bit_for_bit():
    def train(in_place_flag):
        main, startup, loss = mlp(hidden=1024, seed=4)
        fluid.set_flags({"FLAGS_inplace_update": in_place_flag})
        scope, exe = fluid.Scope(), fluid.Executor(CPU)
        exe.run(startup, scope=scope)
        losses = [exe.run(main, feed=feed(seed=i), fetch_list=[loss], scope=scope)[0]
                  for i in range(5)]
        return losses, {v.name: np.array(scope.find_var(v.name).value.array)
                        for v in main.list_vars() if v.persistable
                        and scope.find_var(v.name) is not None
                        and scope.find_var(v.name).value is not None}
    over_gradients, new_blocks = train(True), train(False)
    for a, b in zip(over_gradients[0], new_blocks[0]):
        np.testing.assert_array_equal(a, b)
    assert over_gradients[1].keys() == new_blocks[1].keys()
    for name, value in over_gradients[1].items():
        np.testing.assert_array_equal(value, new_blocks[1][name], err_msg=name)


def test_a_small_constant_is_kept_outside_the_arena_from_its_ops_second_run_on(monkeypatch):
    """A constant the same every run (a loss gradient's 1.0) is kept, copied outside the
    arena, once its op runs a second time, and handed out from then on; a live op, which
    runs once, copies nothing."""
    from fluid_nb.ops import creation
    copies = []
    keep = creation.outside_the_arena

    def counted(make):
        copies.append(make)
        return keep(make)
    monkeypatch.setattr(creation, "outside_the_arena", counted)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        one = fluid.layers.fill_constant([2, 3], "float32", 1.5)
        two = one * 2.0
    exe, scope = fluid.Executor(CPU), fluid.Scope()
    kept = []
    for _ in range(4):
        np.testing.assert_array_equal(exe.run(main, scope=scope, fetch_list=[two])[0],
                                      np.full((2, 3), 3.0, "float32"))
        kept.append(len(copies))
    assert kept == [0, 1, 1, 1]
    main, startup, live_scope = fluid.Program(), fluid.Program(), fluid.Scope()
    with fluid.program_guard(main, startup), fluid.unique_name.guard(), \
            fluid.live(program=main, startup_program=startup, scope=live_scope):
        values = [fluid.layers.fill_constant([2], "float32", float(v)) for v in range(5)]
        assert [float(v.numpy()[0]) for v in values] == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert len(copies) == 1  # (the live ops' first runs copied nothing)
