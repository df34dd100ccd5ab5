"""Memory arenas: where tensors live.

``buddy`` is the allocator's core as integer-offset arithmetic (the plain-Python model);
``arena`` the same algorithm in C, which NumPy allocates from (NEP 49); ``places`` one arena
per place, configured by Fluid's flags, with the public API the developer's guide names:

    fluid.memory.alloc(place, size)   fluid.memory.free(place, address)   fluid.memory.used(place)

and ``peak``, ``reset_peak``, ``stats``, ``blocks``, ``holders``, ``release``, and an event
log (``record_events``, ``events``) that views read.
"""
from .buddy import BuddyArena, OutOfArena  # noqa: F401
from .events import Event  # noqa: F401
from .places import (alloc, arena_of, blocks, events, free, holders, peak,  # noqa: F401
                     record_events, release, reset_peak, stats, used)
