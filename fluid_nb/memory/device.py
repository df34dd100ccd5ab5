"""The arena of a GPU: CuPy allocates device memory through the same buddy core as the host.

One C core, two system allocators: the host's arena takes its chunks from
``posix_memalign``, a device's from ``cudaMalloc`` (``cupy.cuda.runtime.malloc``), and
during ``Executor.run`` on a ``CUDAPlace`` CuPy allocates from it (``cupy.cuda.
using_allocator``, scoped to the run's thread: CuPy's own pool stays the allocator
everywhere else). A block goes back to the arena when the last CuPy array on it dies. Its
shape comes from Paddle's GPU flags:

- ``FLAGS_fraction_of_gpu_memory_to_use`` (default 0.92): the arena takes at most that
  fraction of the device's memory; past it a request fails with ``ResourceExhausted``;
- ``FLAGS_initial_gpu_memory_in_mb`` (default 0): the chunk size, rounded down to a power
  of two; 0 gives 256 MiB chunks (Paddle's default of one chunk of almost all the device's
  memory suits a training job better than a notebook that shares the device).

CuPy is imported only here, and only when a CUDAPlace's arena is asked for.
"""
import contextlib
import sys

from .. import flags
from ..errors import ResourceExhausted, expected
from .arena import Arena
from .events import Recorder

#: the smallest block (and alignment) of a device arena: CuPy's own pool rounds to 512 bytes
MIN_BLOCK = 512
DEFAULT_CHUNK = 256 << 20

_arenas = {}  # device id -> DeviceArena


class DeviceArena:
    """The arena of one device, its event recorder and CuPy's allocator over it."""

    __slots__ = ("arena", "recorder", "limit", "version", "device_id", "allocate", "given")

    def __init__(self, arena, limit, version, device_id, cupy):
        self.arena = arena
        self.recorder = Recorder(arena)
        self.limit = limit
        self.version = version
        self.device_id = device_id
        self.allocate = _allocator(self, cupy)
        #: the addresses fluid.memory.alloc gave out and free has not taken back
        self.given = set()


class _Block:
    """Owns one arena block for CuPy's memory object; gives it back when that dies."""

    __slots__ = ("arena", "address")

    def __init__(self, arena, address):
        self.arena, self.address = arena, address

    def __del__(self):
        self.arena.free(self.address)


def _allocator(entry, cupy):
    arena, device_id = entry.arena, entry.device_id

    def allocate(size):
        try:
            address = arena.alloc(max(int(size), 1))
        except MemoryError:
            raise ResourceExhausted(expected(
                f"the arena of CUDAPlace({device_id})", "memory",
                f"{size} bytes within its limit ({entry.limit} bytes, "
                f"FLAGS_fraction_of_gpu_memory_to_use)",
                f"{arena.system_bytes} bytes taken from the device already")) from None
        memory = cupy.cuda.UnownedMemory(address, size, _Block(arena, address), device_id)
        return cupy.cuda.MemoryPointer(memory, 0)
    return allocate


def device_layout(total_bytes):
    """``(chunk_size, limit)`` in bytes for a device of ``total_bytes`` (see the module;
    the flags module keeps the flags in range). The limit is at least one byte: the
    arena reads 0 as "no limit", which no positive fraction means."""
    fraction = flags.flag("FLAGS_fraction_of_gpu_memory_to_use")
    initial_mb = flags.flag("FLAGS_initial_gpu_memory_in_mb")
    limit = max(1, int(fraction * total_bytes))
    chunk = min((initial_mb << 20) or DEFAULT_CHUNK, max(limit, MIN_BLOCK))
    return 1 << (chunk.bit_length() - 1), limit


def device_arena(place):
    """The DeviceArena of ``place`` (a CUDAPlace), made on first use and again after the
    flags that shape it change (the old one lives until its last array dies)."""
    cupy = place.xp
    device_id = place.device_id
    entry = _arenas.get(device_id)
    if entry is not None and entry.version == flags.version[0]:
        return entry
    with cupy.cuda.Device(device_id):
        total = cupy.cuda.runtime.memGetInfo()[1]
    chunk_size, limit = device_layout(total)
    if entry is not None and (entry.arena.chunk_size, entry.limit) == (chunk_size, limit):
        entry.version = flags.version[0]
        return entry

    def system_alloc(size):
        with cupy.cuda.Device(device_id):
            return cupy.cuda.runtime.malloc(size)

    def system_free(address, size, finalizing=sys.is_finalizing):
        try:
            with cupy.cuda.Device(device_id):
                cupy.cuda.runtime.free(address)
        except Exception:
            # an arena that lives to the end of the process goes as the interpreter shuts
            # down, when CUDA may be unloading already (cudaFree fails): the driver
            # releases the context's memory then anyway
            if not finalizing():
                raise

    arena = Arena(chunk_size=chunk_size, min_block=MIN_BLOCK, limit=limit,
                  system=(system_alloc, system_free))
    new = DeviceArena(arena, limit, flags.version[0], device_id, cupy)
    if entry is not None:
        arena.recording = entry.arena.recording
    _arenas[device_id] = new
    return new


@contextlib.contextmanager
def allocating_on(place):
    """CuPy allocates from ``place``'s arena inside the block (in this thread)."""
    entry = device_arena(place)
    with place.xp.cuda.using_allocator(entry.allocate):
        yield entry
