"""Host memory a run frees stays with the process for the next run.

Paddle's CPU allocator keeps the chunks it has handed out and gives them to the next
request; it does not return memory to the system between runs. glibc's malloc, which
NumPy allocates through, does: when more than ``M_TRIM_THRESHOLD`` (128 KiB unless glibc
has raised it) is free at the top of its heap it hands that back, and it maps each array
above ``M_MMAP_THRESHOLD`` afresh and unmaps it when freed. Every page handed back is
page-faulted in again (and zeroed by the kernel) when next used.

A run that builds up memory and frees it at its end is exactly that pattern: a
DynamicRNN keeps each step's values in a step scope for the backward pass and frees them
all when the run ends, so every run paid for its whole working set in page faults again
(about 175 faults and 0.6 ms per W3 batch, a seventh of its time). Raising both thresholds
once, the first time an executor is made for the host, makes glibc behave like Paddle's
allocator: memory a run frees is kept and reused by the next run. The process holds on to
its peak heap, as a Paddle process does.

The setting is process-wide (it is glibc's). ``FLUID_NB_HOST_MEMORY=system`` in the
environment leaves glibc's own policy; on a C library other than glibc nothing is changed.
"""
import ctypes
import os
import platform

# glibc's mallopt parameters (malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3

#: free heap top kept rather than handed back to the system
TRIM_THRESHOLD = 256 << 20
#: arrays up to this size come from the heap (glibc's ceiling on 64-bit is 32 MiB)
MMAP_THRESHOLD = 16 << 20

_state = {"applied": None}  # None: not tried yet; then True or False


def keep_freed_memory():
    """Raise glibc's trim and mmap thresholds once per process (see the module's text).
    Returns True when the thresholds are set, False when left alone (not glibc, or
    ``FLUID_NB_HOST_MEMORY=system``)."""
    if _state["applied"] is None:
        _state["applied"] = _apply()
    return _state["applied"]


def _apply():
    if os.environ.get("FLUID_NB_HOST_MEMORY", "").strip().lower() == "system":
        return False
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    # mallopt returns 1 on success; the mmap threshold goes first so that a failure leaves
    # glibc's dynamic policy (which setting either threshold turns off) as it was
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and \
        bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
