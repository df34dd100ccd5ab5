"""The arena's C core: the same alloc/free sequences through it and through the plain-Python
model (fluid_nb.memory.buddy) give the same blocks at the same offsets of the same chunks;
as NumPy's allocator, arrays made in its scope lie in its chunks and give their blocks back
when they die, whenever that is."""
import ctypes
import gc
import os
import subprocess
import sys
import random
import threading

import numpy as np
import pytest
from hypothesis import given, settings

from fluid_nb.memory import BuddyArena
from fluid_nb.memory.arena import Arena, allocating_from

from .test_buddy import OPS, run_sequence

try:
    from numpy._core.multiarray import get_handler_name
except ImportError:  # NumPy 1.x
    from numpy.core.multiarray import get_handler_name


def relative(blocks, chunk_bases, chunk_size):
    """(chunk index, offset, size) of each (address, size) inside a chunk; huge blocks as
    ("huge", size)."""
    out = []
    for address, size in blocks:
        for k, base in enumerate(chunk_bases):
            if base <= address < base + chunk_size:
                out.append((k, address - base, size))
                break
        else:
            out.append(("huge", size))
    return sorted(out, key=repr)


class ModelSystem:
    def __init__(self):
        self.next = 1 << 40

    def alloc(self, size):
        address = self.next
        self.next += max(size, 1 << 20) * 4
        return address

    def free(self, address, size):
        pass


def test_the_c_core_and_the_python_model_agree_on_10000_random_sequences():
    rng = random.Random(1)
    for _ in range(10000):
        chunk_size, min_block = 1 << rng.randint(8, 13), 1 << rng.randint(4, 7)
        c_arena = Arena(chunk_size=chunk_size, min_block=min_block)
        model = BuddyArena(ModelSystem().alloc, ModelSystem().free, chunk_size=chunk_size,
                           min_block=min_block)
        c_live, model_live = [], []
        for _ in range(rng.randint(1, 30)):
            if rng.random() < 0.6 or not c_live:
                size = rng.randint(1, chunk_size + chunk_size // 2)
                c_live.append(c_arena.alloc(size))
                model_live.append(model.alloc(size))
            else:
                k = rng.randrange(len(c_live))
                c_arena.free(c_live.pop(k))
                model.free(model_live.pop(k))
            if rng.random() < 0.1:
                assert c_arena.release() == model.release()
            c_bases = c_arena.chunks()
            model_bases = [chunk.address for chunk in model.chunks]
            assert c_arena.used == model.used
            assert relative(c_arena.used_blocks(), c_bases, chunk_size) == \
                relative(model.used_blocks(), model_bases, chunk_size)
            assert relative(c_arena.free_blocks(), c_bases, chunk_size) == \
                relative(model.free_blocks(), model_bases, chunk_size)
        for address in c_live:
            c_arena.free(address)
        assert c_arena.used == 0
        assert [size for _, size in c_arena.free_blocks()] == [chunk_size] * c_arena.n_chunks


def in_chunks(arena, array):
    address = array.__array_interface__["data"][0]
    return any(base <= address < base + arena.chunk_size for base in arena.chunks())


def test_numpy_arrays_made_in_its_scope_live_in_its_chunks():
    arena = Arena(chunk_size=1 << 20, min_block=256)
    with allocating_from(arena):
        assert get_handler_name() == "fluid_nb_arena"
        x = np.ones((100, 100))
        y = x @ x
        z = np.arange(10, dtype="float32") * 2
    outside = np.ones(10)
    assert get_handler_name() == "default_allocator"
    assert get_handler_name(outside) == "default_allocator"
    arrays = [x, y, z]
    assert all(get_handler_name(a) == "fluid_nb_arena" and in_chunks(arena, a) for a in arrays)
    np.testing.assert_array_equal(y, np.full((100, 100), 100.0))
    held = {address: size for address, size in arena.used_blocks()}
    for a in arrays:
        assert a.__array_interface__["data"][0] in held
    used_before = arena.used
    del x, y, z, arrays, a  # (a: the loop above left the last array in it)
    gc.collect()
    assert arena.used == 0 and used_before == 2 * 131072 + 256  # two 80,000-byte arrays, one small


def test_realloc_moves_data_within_the_arena():
    arena = Arena(chunk_size=1 << 16, min_block=64)
    with allocating_from(arena):
        grown = np.arange(10.0)
        grown.resize(3000, refcheck=False)  # NumPy reallocates the data
    assert in_chunks(arena, grown) and arena.used == 32768  # 24,000 bytes in a 2^15 block
    np.testing.assert_array_equal(grown[:10], np.arange(10.0))
    assert np.all(grown[10:] == 0)


def test_the_arena_outlives_its_object_while_an_array_lives_in_it():
    arena = Arena(chunk_size=1 << 16, min_block=64)
    with allocating_from(arena):
        kept = np.full(1000, 7.0)
    del arena
    gc.collect()
    np.testing.assert_array_equal(kept, np.full(1000, 7.0))  # its data is still there
    del kept
    gc.collect()


def test_a_new_thread_allocates_as_numpy_does():
    arena = Arena()
    names = []
    with allocating_from(arena):
        thread = threading.Thread(target=lambda: names.append(get_handler_name(np.ones(3))))
        thread.start()
        thread.join()
    assert names == ["default_allocator"]


def test_a_limit_is_a_memory_error_and_the_arena_stays_usable():
    arena = Arena(chunk_size=1 << 12, min_block=64, limit=1 << 13)
    first = arena.alloc(1 << 12)
    second = arena.alloc(1 << 12)
    with pytest.raises(MemoryError, match="refused"):
        arena.alloc(10)
    arena.free(first)
    assert arena.alloc(10) == first
    arena.free(second)


def test_bad_arguments_say_what_was_expected():
    with pytest.raises(ValueError, match="powers of two"):
        Arena(chunk_size=1000)
    arena = Arena()
    with pytest.raises(ValueError, match="size expected an int >= 1"):
        arena.alloc(0)
    with pytest.raises(ValueError, match="a block of this arena"):
        arena.free(12345)


class RecordingSystem:
    """A system allocator over real host buffers that records what it hands out and gets
    back, standing in for a device's (the arena only does address arithmetic on it)."""

    def __init__(self, fail_after=None):
        self.buffers, self.calls, self.fail_after = {}, [], fail_after

    def alloc(self, size):
        if self.fail_after is not None and len(self.buffers) >= self.fail_after:
            raise MemoryError(f"out of device memory asking for {size} bytes")
        buffer = ctypes.create_string_buffer(size + 4096)
        address = (ctypes.addressof(buffer) + 4095) & ~4095  # page-aligned, as devices are
        self.buffers[address] = (buffer, size)
        self.calls.append(("alloc", size))
        return address

    def free(self, address, size):
        _, held = self.buffers.pop(address)
        assert held == size
        self.calls.append(("free", size))


def test_over_another_system_allocator_the_core_gives_the_same_blocks():
    """The same algorithm over a Python system allocator (how a device's memory is
    managed): 2,000 random sequences agree with the model block for block, and every
    chunk and huge block goes back to the system allocator it came from."""
    rng = random.Random(2)
    for _ in range(2000):
        chunk_size, min_block = 1 << rng.randint(8, 12), 1 << rng.randint(4, 7)
        system = RecordingSystem()
        arena = Arena(chunk_size=chunk_size, min_block=min_block,
                      system=(system.alloc, system.free))
        model = BuddyArena(ModelSystem().alloc, ModelSystem().free, chunk_size=chunk_size,
                           min_block=min_block)
        live, model_live = [], []
        for _ in range(rng.randint(1, 25)):
            if rng.random() < 0.6 or not live:
                size = rng.randint(1, chunk_size + chunk_size // 2)
                live.append(arena.alloc(size))
                model_live.append(model.alloc(size))
            else:
                k = rng.randrange(len(live))
                arena.free(live.pop(k))
                model.free(model_live.pop(k))
            if rng.random() < 0.1:
                assert arena.release() == model.release()
            assert relative(arena.used_blocks(), arena.chunks(), chunk_size) == relative(
                model.used_blocks(), [c.address for c in model.chunks], chunk_size)
            assert arena.system_bytes == sum(size for _, size in system.buffers.values())
        for address in live:
            arena.free(address)
        arena.release()
        assert system.buffers == {} and arena.system_bytes == 0


def test_a_failing_system_allocator_fails_the_alloc_and_leaves_the_arena_usable():
    system = RecordingSystem(fail_after=1)
    arena = Arena(chunk_size=1024, min_block=64, system=(system.alloc, system.free))
    first = arena.alloc(1000)
    with pytest.raises(MemoryError, match="out of device memory asking for 1024 bytes"):
        arena.alloc(1000)  # a second chunk is needed, and the system has none
    assert (arena.used, arena.n_chunks) == (1024, 1)
    arena.free(first)
    assert arena.alloc(512) and arena.used == 512  # the first chunk serves again
    with pytest.raises(TypeError, match="cannot be NumPy's allocator"):
        arena.handler


# measured in a process of its own: in the test run's process other threads (gRPC's, the
# browser tests' helpers) fault in pages of their own between two reads
_CHUNK_TABLES_PROBE = """
from fluid_nb.memory.arena import Arena

def resident_bytes():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024

before = resident_bytes()
arena = Arena(chunk_size=1 << 28, min_block=256)
blocks = [arena.alloc(1000) for _ in range(4)]
grown = resident_bytes() - before
for block in blocks:
    arena.free(block)
print(grown, arena.used)
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads Linux's /proc")
def test_a_chunk_costs_memory_only_where_its_blocks_are():
    # a 256 MiB chunk has 1 Mi units of 256 bytes, two bytes of tables each: written only
    # where a block starts, untouched pages of them take no memory
    probe = subprocess.run([sys.executable, "-c", _CHUNK_TABLES_PROBE], capture_output=True,
                           text=True, timeout=120, check=True)
    grown, used = map(int, probe.stdout.split())
    assert grown < (1 << 20)
    assert used == 0


def test_an_arena_gives_its_system_memory_back_when_it_goes():
    system = RecordingSystem()
    arena = Arena(chunk_size=1024, min_block=64, system=(system.alloc, system.free))
    arena.alloc(100)
    arena.alloc(5000)  # larger than a chunk: a block of its own from the system
    assert sorted(size for _, size in system.buffers.values()) == [1024, 5000]
    del arena
    gc.collect()
    assert system.buffers == {}
    with pytest.raises(TypeError, match="a pair \\(alloc\\(size\\) -> address"):
        Arena(system=print)


# in a process of its own: the failure this pins freed the arena's tables twice (an abort)
_FAILING_FREE_AT_TEARDOWN = """
import ctypes
from fluid_nb.memory.arena import Arena

buffers = []

def alloc(size):
    buffers.append(ctypes.create_string_buffer(size + 4096))
    return (ctypes.addressof(buffers[-1]) + 4095) & ~4095

def free(address, size):
    raise RuntimeError("the device is gone")  # as cudaFree fails while CUDA shuts down

arena = Arena(chunk_size=1 << 16, min_block=256, system=(alloc, free))
arena.free(arena.alloc(1000))
del arena
print("the process goes on")
"""


def test_a_system_free_failing_as_the_arena_goes_is_reported_once():
    # the error names the system free that failed, and the arena is torn down once
    probe = subprocess.run([sys.executable, "-c", _FAILING_FREE_AT_TEARDOWN],
                           capture_output=True, text=True, timeout=120)
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout == "the process goes on\n"
    assert probe.stderr.count("RuntimeError: the device is gone") == 1
    assert "Exception ignored in: <function free" in probe.stderr


@settings(max_examples=10000, deadline=None)
@given(OPS)
def test_hypothesis_sequences_keep_the_invariants_and_the_c_core_agrees(ops):
    """10,000 generated alloc/free sequences: the model keeps the buddy invariants (no
    overlap, alignment, ``used`` exact, all merged back at the end), and the C core, given
    the same sequence, hands out the same blocks at the same offsets after every step."""
    chunk_size, min_block = 1 << 12, 64
    model = run_sequence(ops, chunk_size, min_block)  # checks the invariants step by step
    assert model.used == 0
    c_arena = Arena(chunk_size=chunk_size, min_block=min_block)
    twin = BuddyArena(ModelSystem().alloc, ModelSystem().free, chunk_size=chunk_size,
                      min_block=min_block)
    c_live, twin_live = [], []
    for kind, value in ops:
        if kind == "alloc":
            c_live.append(c_arena.alloc(value))
            twin_live.append(twin.alloc(value))
        elif c_live:
            k = value % len(c_live)
            c_arena.free(c_live.pop(k))
            twin.free(twin_live.pop(k))
        assert relative(c_arena.used_blocks(), c_arena.chunks(), chunk_size) == relative(
            twin.used_blocks(), [c.address for c in twin.chunks], chunk_size)
    for address in c_live:
        c_arena.free(address)
    assert c_arena.used == 0
    assert [size for _, size in c_arena.free_blocks()] == [chunk_size] * c_arena.n_chunks


_READ_WHILE_GARBAGE_WAITS = """
import gc
import numpy as np
from fluid_nb.memory.arena import Arena, allocating_from

arena = Arena(chunk_size=1 << 16, min_block=64)
readers = (arena.used_blocks, arena.free_blocks, arena.chunks, arena.take_events)
gc.set_threshold(1)  # (a subprocess of its own: the next tracked object made collects)
for reader in readers:
    gc.disable()  # (no collection until the reader makes its objects)
    with allocating_from(arena):
        cycle = [np.ones(100)]
    cycle.append(cycle)  # freed by the collector alone, its array with it
    del cycle
    # CPython reuses freed lists and pairs without asking the collector: hold enough of
    # them that the reader's own are new objects, each of which may start a collection
    held = [[(k, -k)] for k in range(5000)]
    gc.enable()
    reader()
    del held
print("read", arena.used)
"""


def test_reading_the_arena_while_the_collector_frees_its_arrays_does_not_deadlock():
    # the readers make Python objects, which may run the cyclic collector, whose frees of
    # the arena's arrays come back to the arena's lock: they make them after releasing it
    done = subprocess.run([sys.executable, "-c", _READ_WHILE_GARBAGE_WAITS],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["read", "0"]
