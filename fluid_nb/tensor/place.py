"""Places: where a tensor lives and which array module (``xp``) computes on it.

CuPy is imported only when a CUDAPlace is used, never at ``import fluid_nb``.
"""
import numpy as np

from ..errors import PreconditionNotMet


class Place:
    device = "cpu"

    def __eq__(self, other):
        return type(self) is type(other) and self._key() == other._key()

    def __hash__(self):
        return hash((type(self).__name__,) + self._key())

    def _key(self):
        return ()

    def is_cpu_place(self):
        return self.device == "cpu"

    def is_gpu_place(self):
        return self.device == "gpu"


class CPUPlace(Place):
    """The host: NumPy arrays."""
    device = "cpu"
    xp = np

    def __repr__(self):
        return "CPUPlace"


class CUDAPlace(Place):
    """GPU ``device_id``: CuPy arrays. Needs the ``[cuda]`` extra and a GPU."""
    device = "gpu"

    def __init__(self, device_id=0):
        self.device_id = int(device_id)
        self._xp = None

    def _key(self):
        return (self.device_id,)

    @property
    def xp(self):
        if self._xp is None:
            self._xp = cupy_module()
        return self._xp

    def gpu_device_id(self):
        return self.device_id

    def __repr__(self):
        return f"CUDAPlace({self.device_id})"


class CUDAPinnedPlace(CPUPlace):
    def __repr__(self):
        return "CUDAPinnedPlace"


def cupy_module():
    try:
        import cupy
    except ImportError:
        raise PreconditionNotMet("CUDAPlace: CuPy expected (pip install 'fluid_nb[cuda]'), "
                                 "but it is not installed") from None
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("no device")
    except Exception as exc:  # CuPy raises its own types when no driver is present
        raise PreconditionNotMet(f"CUDAPlace: a CUDA GPU expected, but none is usable ({exc})") \
            from None
    return cupy


def is_compiled_with_cuda():
    """True when CuPy is installed and sees a GPU (the analogue of a CUDA build of Paddle)."""
    try:
        cupy_module()
    except PreconditionNotMet:
        return False
    return True


def cuda_places(device_ids=None):
    """CUDAPlaces of ``device_ids`` (default: the ids in ``FLAGS_selected_gpus``, else every
    GPU CuPy sees; ``CUDA_VISIBLE_DEVICES`` limits those as it does for any CUDA program).
    Without a usable GPU: PreconditionNotMet saying why."""
    import os
    cupy = cupy_module()
    if device_ids is None:
        selected = os.environ.get("FLAGS_selected_gpus", "").strip()
        device_ids = ([int(i) for i in selected.split(",") if i.strip()] if selected
                      else range(cupy.cuda.runtime.getDeviceCount()))
    elif isinstance(device_ids, (int, np.integer)) and not isinstance(device_ids, bool):
        device_ids = [device_ids]
    return [CUDAPlace(int(i)) for i in device_ids]


def cuda_pinned_places(device_count=None):
    """``device_count`` CUDAPinnedPlaces (default as :func:`cpu_places`): page-locked host
    memory, which here is host memory."""
    return [CUDAPinnedPlace() for _ in cpu_places(device_count)]


def place_of(array):
    """The place an array lives on (NumPy -> CPUPlace, CuPy -> CUDAPlace(device))."""
    if isinstance(array, np.ndarray):
        return CPUPlace()
    device = getattr(array, "device", None)
    if device is not None and hasattr(device, "id"):
        return CUDAPlace(device.id)
    return CPUPlace()


def cpu_places(device_count=None):
    """``device_count`` CPUPlaces (default: the ``CPU_NUM`` environment variable, else the
    number of CPUs), as Fluid's data-parallel helpers take them."""
    import os
    if device_count is None:
        device_count = int(os.environ.get("CPU_NUM", os.cpu_count() or 1))
    if isinstance(device_count, bool) or not isinstance(device_count, (int, np.integer)) \
            or device_count < 1:
        from ..errors import InvalidArgument, expected
        raise InvalidArgument(expected("cpu_places", "device_count", "an int >= 1",
                                       repr(device_count)))
    return [CPUPlace() for _ in range(int(device_count))]
