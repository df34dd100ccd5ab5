"""``fluid.memory``'s public functions check their arguments at one point each: a wrong
type or range is a typed error that names the argument and what it got, and the arena is
as it was. ``free`` takes back only what ``alloc`` gave out, never a live tensor's block."""
import gc
import math

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb import flags
from fluid_nb.errors import InvalidArgument, InvalidType, ResourceExhausted
from fluid_nb.memory import places

CPU = fluid.CPUPlace()


@pytest.fixture(autouse=True)
def own_arena():
    saved = dict(flags._values)
    fluid.set_flags({"FLAGS_initial_cpu_memory_in_mb": 4})
    yield places.fresh_host_arena()
    flags._values.clear()
    flags._values.update(saved)
    flags.version[0] += 1


def arena_state():
    # the garbage of earlier tests (cycles the collector has not reached yet) would free
    # arena blocks between two looks; collect it so a difference is this test's doing
    gc.collect()
    arena = fluid.memory.arena_of(CPU)
    return arena.used, sorted(arena.used_blocks()), sorted(arena.free_blocks())


def trained():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 64], "float32")
        loss = fluid.layers.mean(fluid.layers.fc(x, 64))
        fluid.optimizer.SGD(0.1).minimize(loss)
    scope, exe = fluid.Scope(), fluid.Executor(CPU)
    exe.run(startup, scope=scope)
    fetched, = exe.run(main, feed={"x": np.ones((4, 64), "float32")}, fetch_list=[loss],
                       scope=scope)
    return scope, fetched


def test_free_refuses_the_block_of_a_parameter_and_the_next_alloc_does_not_reuse_it():
    scope, _ = trained()
    weight = scope.find_var("fc_0.w_0").value.array
    kept = weight.copy()
    address = weight.__array_interface__["data"][0]
    before = arena_state()
    with pytest.raises(InvalidArgument, match=f"{hex(address)}.*holding an array"):
        fluid.memory.free(CPU, address)
    assert arena_state() == before
    block = fluid.memory.alloc(CPU, weight.nbytes)
    assert block != address
    np.ctypeslib.as_array((np.ctypeslib.ctypes.c_char * weight.nbytes).from_address(block))[:] \
        = b"\xff"
    np.testing.assert_array_equal(weight, kept)
    fluid.memory.free(CPU, block)


def test_free_refuses_a_fetched_array_an_offset_into_a_block_and_a_second_free():
    _, fetched = trained()
    address = fetched.__array_interface__["data"][0]
    with pytest.raises(InvalidArgument, match="fluid.memory.alloc gave out"):
        fluid.memory.free(CPU, address)
    block = fluid.memory.alloc(CPU, 4096)
    with pytest.raises(InvalidArgument, match="16 bytes into a block"):
        fluid.memory.free(CPU, block + 16)
    fluid.memory.free(CPU, block)
    before = arena_state()
    with pytest.raises(InvalidArgument, match=hex(block)):
        fluid.memory.free(CPU, block)
    assert arena_state() == before


@pytest.mark.parametrize("size, error", [
    (2 ** 63, InvalidArgument), (2 ** 64, InvalidArgument), (0, InvalidArgument),
    (-1, InvalidArgument), (1.5, InvalidType), (math.nan, InvalidType), ("8", InvalidType),
    (None, InvalidType), (True, InvalidType), (2 ** 62, ResourceExhausted)])
def test_alloc_sizes_outside_a_byte_count_are_typed_errors(size, error):
    before = arena_state()
    with pytest.raises(error, match="expected"):
        fluid.memory.alloc(CPU, size)
    assert arena_state() == before


def test_a_numpy_integer_is_a_size():
    block = fluid.memory.alloc(CPU, np.int64(300))
    assert fluid.memory.used(CPU) == 512
    fluid.memory.free(CPU, np.int64(block))
    assert fluid.memory.used(CPU) == 0


@pytest.mark.parametrize("scope", ["x", None, fluid.Program(), 3])
def test_holders_and_blocks_want_a_scope(scope):
    with pytest.raises(InvalidType, match="scope expected a fluid.Scope"):
        fluid.memory.holders(CPU, scope)
    if scope is not None:
        with pytest.raises(InvalidType, match="scope expected a fluid.Scope or None"):
            fluid.memory.blocks(CPU, scope)


@pytest.mark.parametrize("function", ["alloc", "free", "used", "peak", "reset_peak",
                                      "stats", "release", "blocks", "events", "arena_of"])
@pytest.mark.parametrize("place", [None, "cpu", 0, fluid.Program()])
def test_every_function_wants_a_place(function, place):
    args = {"alloc": (256,), "free": (0,)}.get(function, ())
    with pytest.raises(InvalidType, match="place expected a place"):
        getattr(fluid.memory, function)(place, *args)


@pytest.mark.parametrize("name, value", [
    ("FLAGS_memory_event_limit", 2 ** 64), ("FLAGS_memory_event_limit", -1),
    ("FLAGS_fraction_of_cpu_memory_to_use", math.nan),
    ("FLAGS_fraction_of_cpu_memory_to_use", 0.0),
    ("FLAGS_fraction_of_cpu_memory_to_use", 10 ** 400),
    ("FLAGS_initial_cpu_memory_in_mb", 0), ("FLAGS_initial_cpu_memory_in_mb", 2 ** 80)])
def test_memory_flags_out_of_range_are_refused_when_set(name, value):
    before = flags.get_flags([name])
    with pytest.raises(InvalidArgument, match=f"{name} expected"):
        fluid.set_flags({name: value})
    assert flags.get_flags([name]) == before
    assert fluid.memory.used(CPU) == 0  # the arena is still built from the flags


def test_a_tiny_positive_fraction_is_a_tiny_limit_not_no_limit():
    fluid.set_flags({"FLAGS_fraction_of_cpu_memory_to_use": 1e-12})
    assert fluid.memory.stats(CPU)["limit"] >= 1
    with pytest.raises(ResourceExhausted, match="within the arena's limit"):
        fluid.memory.alloc(CPU, 256)
    assert fluid.memory.used(CPU) == 0
