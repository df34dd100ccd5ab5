"""The buddy allocator's core as a property: over random alloc/free sequences no two live
blocks overlap, every block is aligned to its size within its chunk and to min_block,
``used`` is the sum of the live blocks, and freeing everything merges every chunk back
into one free block; plus the buddy rules on small cases worked by hand."""
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluid_nb.memory import BuddyArena, OutOfArena


class System:
    """A system allocator handing out chunks at increasing, chunk-aligned addresses (and
    refusing beyond ``limit`` bytes in use)."""

    def __init__(self, limit=None):
        self.next, self.live, self.limit = 1 << 30, {}, limit

    def alloc(self, size):
        if self.limit is not None and sum(self.live.values()) + size > self.limit:
            return None
        address = self.next
        self.next += max(size, 1 << 20) * 2
        self.live[address] = size
        return address

    def free(self, address, size):
        assert self.live.pop(address) == size


def check(arena, live):
    used = arena.used_blocks()
    for (a, size_a), (b, _) in zip(used, used[1:]):
        assert a + size_a <= b, "live blocks overlap"
    free = arena.free_blocks()
    everything = sorted(used + free)
    for (a, size_a), (b, _) in zip(everything, everything[1:]):
        assert a + size_a <= b, "a free block overlaps another block"
    for address, size in used:
        assert address % arena.min_block == 0
        if size <= arena.chunk_size:
            chunk = next(c for c in arena.chunks if c.address <= address < c.address +
                         arena.chunk_size)
            assert (address - chunk.address) % size == 0, "block not aligned to its size"
    assert arena.used == sum(size for _, size in used)
    assert set(addr for addr, _ in used) == set(live)
    for address, requested in live.items():
        assert dict(used)[address] >= requested
    assert arena.used + sum(size for _, size in free) == \
        arena.chunk_size * len(arena.chunks) + sum(s for _, s in used if s > arena.chunk_size)


def run_sequence(ops, chunk_size=1 << 12, min_block=64):
    system = System()
    arena = BuddyArena(system.alloc, system.free, chunk_size=chunk_size, min_block=min_block)
    live = {}
    for kind, value in ops:
        if kind == "alloc":
            live[arena.alloc(value)] = value
        elif live:
            address = sorted(live)[value % len(live)]
            arena.free(address)
            del live[address]
        check(arena, live)
    for address in list(live):
        arena.free(address)
    # everything merged back: each chunk is one free block of its whole size
    assert arena.free_blocks() == sorted((c.address, chunk_size) for c in arena.chunks)
    assert arena.used == 0 and arena.requested == 0
    arena.release()
    assert not arena.chunks and not system.live
    return arena


OPS = st.lists(st.one_of(
    st.tuples(st.just("alloc"), st.integers(1, 5000)),
    st.tuples(st.just("free"), st.integers(0, 1000))), max_size=60)


@settings(max_examples=300, deadline=None)
@given(OPS)
def test_random_sequences_keep_the_buddy_invariants(ops):
    run_sequence(ops)


def test_ten_thousand_seeded_sequences():
    rng = random.Random(0)
    for _ in range(10000):
        ops = [("alloc", rng.choice([rng.randint(1, 64), rng.randint(1, 700),
                                     rng.randint(1, 6000)]))
               if rng.random() < 0.6 else ("free", rng.randint(0, 99))
               for _ in range(rng.randint(1, 25))]
        run_sequence(ops)


def test_a_split_and_its_merge_worked_by_hand():
    system = System()
    arena = BuddyArena(system.alloc, system.free, chunk_size=1024, min_block=64)
    a = arena.alloc(100)  # 128: the chunk split 1024 -> 512 -> 256 -> 128
    base = arena.chunks[0].address
    assert a == base and arena.used == 128 and arena.requested == 100
    assert arena.free_blocks() == [(base + 128, 128), (base + 256, 256), (base + 512, 512)]
    b = arena.alloc(64)  # best fit: the 128 free block, split into two 64s
    assert b == base + 128
    assert arena.free_blocks() == [(base + 192, 64), (base + 256, 256), (base + 512, 512)]
    arena.free(a)
    assert (base, 128) in arena.free_blocks()  # a's buddy (128 + 192) is not wholly free
    arena.free(b)
    assert arena.free_blocks() == [(base, 1024)]  # merged back up to the chunk
    stats = arena.stats()
    assert stats["used"] == 0 and stats["largest_free"] == 1024 and stats["peak"] == 192


def test_huge_requests_go_to_the_system_and_come_back():
    system = System()
    arena = BuddyArena(system.alloc, system.free, chunk_size=1024, min_block=64)
    big = arena.alloc(5000)
    assert not arena.chunks and system.live[big] == 5000 and arena.used == 5000
    arena.free(big)
    assert not system.live and arena.used == 0


def test_a_refused_chunk_is_out_of_arena_and_the_arena_stays_usable():
    system = System(limit=2048)
    arena = BuddyArena(system.alloc, system.free, chunk_size=1024, min_block=64)
    kept = [arena.alloc(1024), arena.alloc(1024)]
    with pytest.raises(OutOfArena, match="refused 1024 bytes"):
        arena.alloc(10)
    assert arena.used == 2048
    arena.free(kept[0])
    assert arena.alloc(10) == kept[0]  # the freed chunk serves again


def test_bad_arguments_say_what_was_expected():
    system = System()
    with pytest.raises(ValueError, match="chunk_size expected a power of two"):
        BuddyArena(system.alloc, system.free, chunk_size=1000)
    arena = BuddyArena(system.alloc, system.free)
    with pytest.raises(ValueError, match="size expected an int >= 1"):
        arena.alloc(0)
    with pytest.raises(ValueError, match="a block of this arena"):
        arena.free(12345)
