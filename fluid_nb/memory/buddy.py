"""The buddy allocator's core: integer offsets only, nothing of devices.

An arena asks a system allocator for chunks (``system_alloc(size) -> address``,
``system_free(address, size)``) and serves requests from them as Paddle's BuddyAllocator
does (the developer's guide, memory chapter):

- every block is ``2**k`` bytes, at least ``min_block`` (which is also the alignment), at an
  address that is a multiple of its size within its chunk, so a block of order ``k`` at
  offset ``o`` has its buddy at ``o ^ 2**k``;
- a request takes the smallest free block that fits (best fit), split in halves until the
  half would be too small; the halves not taken go back to the free lists;
- a freed block merges with its buddy while the buddy is wholly free, up to the chunk;
- when no free block fits, a new chunk of ``chunk_size`` is taken from the system; a request
  larger than a chunk goes to the system on its own (a "huge" block);
- ``release()`` gives back the chunks that are wholly free.

``used`` counts the bytes of the blocks handed out (their rounded sizes), ``requested`` the
bytes asked for; ``peak`` the largest ``used`` seen since ``reset_peak``.
"""

__all__ = ["BuddyArena", "OutOfArena"]


class OutOfArena(MemoryError):
    """The system allocator refused a chunk (the arena's limit, or the place is full)."""


def _order_of(size):
    """The smallest k with 2**k >= size (size >= 1)."""
    return (size - 1).bit_length()


class _Chunk:
    __slots__ = ("address", "order", "free", "used_blocks")

    def __init__(self, address, order):
        self.address = address
        self.order = order
        self.free = {k: set() for k in range(order + 1)}  # order -> offsets of free blocks
        self.free[order].add(0)
        self.used_blocks = 0


class BuddyArena:
    """A buddy allocator over chunks of ``chunk_size`` bytes (a power of two) from
    ``system_alloc``/``system_free``, blocks of at least ``min_block`` bytes (a power of
    two, also the alignment)."""

    def __init__(self, system_alloc, system_free, chunk_size=1 << 20, min_block=256):
        for name, value in (("chunk_size", chunk_size), ("min_block", min_block)):
            if not isinstance(value, int) or value <= 0 or value & (value - 1):
                raise ValueError(f"BuddyArena: {name} expected a power of two, but received "
                                 f"{value!r}")
        if min_block > chunk_size:
            raise ValueError(f"BuddyArena: min_block expected at most chunk_size "
                             f"({chunk_size}), but received {min_block}")
        self.system_alloc, self.system_free = system_alloc, system_free
        self.chunk_size, self.min_block = chunk_size, min_block
        self.min_order, self.chunk_order = _order_of(min_block), _order_of(chunk_size)
        self.chunks = []     # in the order they were taken
        self.blocks = {}     # address -> (chunk or None for huge, offset, order or size)
        self.used = 0        # bytes of the blocks handed out
        self.requested = 0   # bytes asked for
        self.peak = 0
        self._requests = {}  # address -> bytes asked for

    # --- alloc / free --------------------------------------------------------------------
    def alloc(self, size):
        """The address of a block of at least ``size`` bytes (``size`` >= 1)."""
        if not isinstance(size, int) or size < 1:
            raise ValueError(f"BuddyArena.alloc: size expected an int >= 1, but received "
                             f"{size!r}")
        if size > self.chunk_size:
            address = self._system(size)
            self.blocks[address] = (None, 0, size)
            return self._handed(address, size, size)
        order = max(_order_of(size), self.min_order)
        found = self._best_fit(order)
        if found is None:
            address = self._system(self.chunk_size)
            chunk = _Chunk(address, self.chunk_order - self.min_order)
            self.chunks.append(chunk)
            found = (chunk, self.chunk_order)
        chunk, have = found
        offset = min(chunk.free[have - self.min_order])  # lowest address: compact arenas
        chunk.free[have - self.min_order].discard(offset)
        while have > order:  # split: keep the lower half, free the upper buddy
            have -= 1
            chunk.free[have - self.min_order].add(offset + (1 << have))
        chunk.used_blocks += 1
        address = chunk.address + offset
        self.blocks[address] = (chunk, offset, order)
        return self._handed(address, 1 << order, size)

    def free(self, address):
        """Give back the block at ``address``; it merges with its free buddies."""
        block = self.blocks.pop(address, None)
        if block is None:
            raise ValueError(f"BuddyArena.free: address expected a block of this arena, "
                             f"but received {address!r}")
        chunk, offset, order = block
        self.requested -= self._requests.pop(address)
        if chunk is None:  # a huge block, straight back to the system
            self.used -= order
            self.system_free(address, order)
            return
        self.used -= 1 << order
        chunk.used_blocks -= 1
        while order < self.chunk_order:
            buddy = offset ^ (1 << order)
            free_here = chunk.free[order - self.min_order]
            if buddy not in free_here:
                break
            free_here.discard(buddy)
            offset = min(offset, buddy)
            order += 1
        chunk.free[order - self.min_order].add(offset)

    def release(self):
        """Give the wholly free chunks back to the system; returns the bytes released."""
        kept, released = [], 0
        for chunk in self.chunks:
            if chunk.used_blocks == 0:
                self.system_free(chunk.address, self.chunk_size)
                released += self.chunk_size
            else:
                kept.append(chunk)
        self.chunks = kept
        return released

    # --- what it holds ---------------------------------------------------------------------
    def reset_peak(self):
        self.peak = self.used

    def stats(self):
        """Chunks, blocks, used/free bytes, the largest free block and fragmentation (1 -
        largest free block / free bytes)."""
        free_sizes = [1 << (k + self.min_order) for chunk in self.chunks
                      for k, offsets in chunk.free.items() for _ in offsets]
        free = sum(free_sizes)
        largest = max(free_sizes, default=0)
        return {"chunks": len(self.chunks), "chunk_bytes": len(self.chunks) * self.chunk_size,
                "blocks": len(self.blocks), "used": self.used, "requested": self.requested,
                "free": free, "largest_free": largest, "peak": self.peak,
                "fragmentation": 1.0 - largest / free if free else 0.0}

    def free_blocks(self):
        """(address, size) of every free block, by address."""
        return sorted((chunk.address + offset, 1 << (k + self.min_order))
                      for chunk in self.chunks for k, offsets in chunk.free.items()
                      for offset in offsets)

    def used_blocks(self):
        """(address, size) of every block handed out, by address."""
        return sorted((address, (1 << order) if chunk is not None else order)
                      for address, (chunk, _, order) in self.blocks.items())

    # --- helpers ---------------------------------------------------------------------------------
    def _best_fit(self, order):
        """(chunk, order) of the smallest free block of at least ``order``, lowest chunk
        first among equals; None when none fits."""
        for have in range(order, self.chunk_order + 1):
            for chunk in self.chunks:
                if chunk.free[have - self.min_order]:
                    return chunk, have
        return None

    def _system(self, size):
        address = self.system_alloc(size)
        if address is None:
            raise OutOfArena(f"BuddyArena: the system allocator refused {size} bytes "
                             f"(the arena holds {self.used} in {len(self.chunks)} chunks)")
        return address

    def _handed(self, address, block_bytes, size):
        self.used += block_bytes
        self.requested += size
        self._requests[address] = size
        self.peak = max(self.peak, self.used)
        return address
