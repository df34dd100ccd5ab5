"""The memory arena in C (``_arena``, compiled when the package is installed): the buddy
allocator of :mod:`fluid_nb.memory.buddy` over chunks of host memory, which NumPy can use as
its data allocator (NEP 49) for a scope of code:

    arena = Arena(chunk_size=1 << 20, min_block=256)
    with allocating_from(arena):
        x = np.ones((100, 100))     # x's data lies in one of arena.chunks()
    arena.used                      # bytes of the blocks handed out (x's, while it lives)

An array remembers the allocator it was made with and gives its data back to it when it
dies, whenever that is; the arena (its chunks) lives until its last such array has died.
"""
import contextlib

from .. import c_parts

__all__ = ["Arena", "allocating_from", "outside_the_arena", "set_handler"]


_loaded = []  # the C module once imported (an import statement per call costs a lookup)


def _module():
    if _loaded:
        return _loaded[0]
    _loaded.append(c_parts.load("fluid_nb.memory._arena", "the arena's C core"))
    return _loaded[0]


def Arena(chunk_size=1 << 20, min_block=256, limit=0, system=None):
    """A buddy allocator over system chunks of ``chunk_size`` bytes, blocks of at least
    ``min_block`` bytes (both powers of two); ``limit`` > 0 caps the bytes it takes from
    the system (a request past it raises MemoryError).

    ``system``: None for host memory (``posix_memalign``), or a pair of callables
    ``(alloc(size) -> address, free(address, size))`` the chunks come from instead, a
    device's memory (CuPy's ``cupy.cuda.runtime.malloc``/``free``): the same algorithm over
    another system allocator. They are called with the arena unlocked; an error they raise
    is the alloc's. Such an arena hands out addresses only (it is never NumPy's allocator)."""
    return _module().Arena(chunk_size=chunk_size, min_block=min_block, limit=limit,
                           system=system)


def set_handler(capsule):
    """Make ``capsule`` (an arena's ``handler``, or None for NumPy's default) NumPy's data
    allocator in the current context; returns the one it replaces."""
    return _module().set_handler(capsule)


@contextlib.contextmanager
def allocating_from(arena):
    """NumPy allocates array data from ``arena`` inside the block (in this thread and
    context; the allocator NumPy had before is restored after)."""
    module = _module()
    previous = module.set_handler(arena.handler)
    try:
        yield arena
    finally:
        module.set_handler(previous)


def outside_the_arena(make):
    """``make()`` with NumPy's default allocator (an array made for good, as a kernel's
    cached constant: a block held for the process would split the arena around it)."""
    module = _module()
    previous = module.set_handler(None)
    try:
        return make()
    finally:
        module.set_handler(previous)
