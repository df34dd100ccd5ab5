"""Memory arenas. ``buddy`` is the allocator's core: integer-offset arithmetic over chunks
a system allocator hands out, independent of any device."""
from .buddy import BuddyArena, OutOfArena  # noqa: F401
