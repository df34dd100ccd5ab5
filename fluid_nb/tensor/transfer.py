"""Explicit copies between a device and the host, for kernels.

A device array (CuPy's, or the strict stand-in's) reaches host data only through ``get()``;
these helpers are the one place kernels do it, so every copy is deliberate and, on the strict
device, counted. Host (NumPy) arrays pass through without a copy.
"""
import numpy as np


def to_host(array):
    """``array`` as a NumPy array: a device array copied to the host (one transfer), a host
    array or a Python value as it is."""
    if isinstance(array, np.ndarray) or not hasattr(array, "get"):
        return np.asarray(array)
    return array.get()


def host_scalar(array):
    """The single value of a one-element array as a Python number (one transfer from a
    device)."""
    return to_host(array).reshape(-1)[0].item()


def host_list(array):
    """The values of an array as a flat Python list (one transfer from a device)."""
    return to_host(array).reshape(-1).tolist()
