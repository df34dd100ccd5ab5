"""A strict stand-in for CuPy, so that machines without a GPU check what device code does.

``strict_device`` (the module object :data:`xp`) computes with NumPy but keeps its arrays in
a type of their own, :class:`DeviceArray`, with the rules of device memory made strict:

- nothing converts a device array to host data implicitly: ``np.asarray(a)``, ``float(a)``,
  ``int(a)``, ``bool(a)``, ``a.item()``, ``a.tolist()`` and iterating over it raise
  :class:`HostTransfer`; mixing it with a NumPy array in an operation raises too (CuPy
  refuses that as well);
- data moves only through the explicit transfers CuPy has, and each is counted in
  :data:`transfers`: ``xp.asarray(host)`` / ``xp.array(host)`` (host to device),
  ``a.get()`` / ``xp.asnumpy(a)`` (device to host). :func:`counting` scopes a count;
- every other function of the module is NumPy's, taking and giving device arrays
  (``xp.matmul``, ``xp.zeros``, ``xp.where``...), as CuPy's mirror NumPy's; NumPy functions
  called on device arrays (``np.sum(a)``) dispatch here too, as they do for CuPy's arrays.

A kernel that keeps to ``ctx.xp`` runs unchanged on it; one that reaches for host NumPy, or a
loop that copies to the host every step, fails or shows in the counts.
"""
import contextlib
import math
import types

import numpy as np

__all__ = ["DeviceArray", "HostTransfer", "xp", "transfers", "counting", "to_device",
           "to_host"]


class HostTransfer(TypeError):
    """A device array was used as host data without an explicit transfer."""


#: explicit transfers so far: {"to_device": count, "to_host": count, "bytes": total}
transfers = {"to_device": 0, "to_host": 0, "bytes": 0}


@contextlib.contextmanager
def counting():
    """``with counting() as count:`` — ``count`` holds the transfers made inside."""
    before = dict(transfers)
    count = {}
    try:
        yield count
    finally:
        count.update({key: transfers[key] - before[key] for key in transfers})


def _refuse(what):
    raise HostTransfer(f"strict device: {what} expected an explicit transfer (a.get() or "
                       f"xp.asnumpy(a)), but a device array was used as host data")


class DeviceArray:
    """An array in (simulated) device memory: NumPy underneath, no implicit way out."""

    __slots__ = ("_data", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, data):
        self._data = data

    # --- explicit transfers ---------------------------------------------------------------
    def get(self):
        """A host copy (device to host, counted)."""
        return to_host(self)

    # --- no implicit way to the host -------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        _refuse("np.asarray / np.array of a device array")

    def __float__(self):
        _refuse("float()")

    def __int__(self):
        _refuse("int()")

    def __index__(self):
        _refuse("an index")

    def __bool__(self):
        _refuse("bool() (a condition)")

    def __complex__(self):
        _refuse("complex()")

    def item(self, *args):
        _refuse(".item()")

    def tolist(self):
        _refuse(".tolist()")

    def __iter__(self):
        _refuse("iterating over a device array")

    # --- what it is --------------------------------------------------------------------------
    shape = property(lambda self: self._data.shape)
    dtype = property(lambda self: self._data.dtype)
    ndim = property(lambda self: self._data.ndim)
    size = property(lambda self: self._data.size)
    nbytes = property(lambda self: self._data.nbytes)
    itemsize = property(lambda self: self._data.itemsize)
    strides = property(lambda self: self._data.strides)
    flags = property(lambda self: self._data.flags)
    T = property(lambda self: DeviceArray(self._data.T))

    @property
    def base(self):
        base = self._data.base
        return None if base is None else DeviceArray(base)

    def __len__(self):
        return len(self._data)

    def __repr__(self):
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype})"

    # --- methods: NumPy's, device arrays in and out ----------------------------------------------
    def __getattr__(self, name):
        if name.startswith("__"):  # __array_interface__ and the like would read host data
            raise AttributeError(f"DeviceArray has no attribute {name!r}")
        method = getattr(self._data, name)
        if not callable(method):
            return _wrap(method)

        def device_method(*args, **kwargs):
            return _wrap(method(*_unwrap(args), **_unwrap(kwargs)))
        return device_method

    def __getitem__(self, key):
        return _wrap(self._data[_unwrap_key(key)])

    def __setitem__(self, key, value):
        self._data[_unwrap_key(key)] = _unwrap_operand(value)

    # --- NumPy's protocols: ufuncs and functions stay on the device -----------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = tuple(_unwrap_operand(o) for o in out)
        result = getattr(ufunc, method)(*[_unwrap_operand(i) for i in inputs], **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return _wrap(result)

    def __array_function__(self, func, types_, args, kwargs):
        return _wrap(func(*_unwrap(args, operand=True), **_unwrap(kwargs, operand=True)))


def _binary(name):
    ufunc_name = {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "divide",
                  "floordiv": "floor_divide", "mod": "remainder", "pow": "power",
                  "matmul": "matmul", "and": "bitwise_and", "or": "bitwise_or",
                  "xor": "bitwise_xor", "lshift": "left_shift", "rshift": "right_shift",
                  "lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal",
                  "eq": "equal", "ne": "not_equal"}[name]
    ufunc = getattr(np, ufunc_name)

    def forward(self, other):
        return _wrap(ufunc(self._data, _unwrap_operand(other)))

    def reverse(self, other):
        return _wrap(ufunc(_unwrap_operand(other), self._data))

    def in_place(self, other):
        ufunc(self._data, _unwrap_operand(other), out=self._data)
        return self
    return forward, reverse, in_place


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or",
              "xor", "lshift", "rshift"):
    _f, _r, _i = _binary(_name)
    setattr(DeviceArray, f"__{_name}__", _f)
    setattr(DeviceArray, f"__r{_name}__", _r)
    setattr(DeviceArray, f"__i{_name}__", _i)
for _name in ("lt", "le", "gt", "ge", "eq", "ne"):
    setattr(DeviceArray, f"__{_name}__", _binary(_name)[0])
DeviceArray.__hash__ = None
DeviceArray.__neg__ = lambda self: DeviceArray(-self._data)
DeviceArray.__pos__ = lambda self: DeviceArray(+self._data)
DeviceArray.__abs__ = lambda self: DeviceArray(abs(self._data))
DeviceArray.__invert__ = lambda self: DeviceArray(~self._data)


# --- wrapping -----------------------------------------------------------------------------------
def _wrap(value):
    """Device arrays for NumPy arrays (and NumPy scalars: a reduction stays on the device,
    as CuPy's give 0-d arrays), through tuples and lists."""
    if isinstance(value, np.ndarray):
        return DeviceArray(value)
    if isinstance(value, np.generic):
        return DeviceArray(np.asarray(value))
    if isinstance(value, tuple):
        return tuple(_wrap(v) for v in value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


def _unwrap_operand(value):
    """The data of a device array; a host NumPy array here is a mix CuPy refuses."""
    if isinstance(value, DeviceArray):
        return value._data
    if isinstance(value, np.ndarray) and value.ndim > 0:
        raise HostTransfer(f"strict device: an operation expected device arrays, but received "
                           f"a host NumPy array of shape {list(value.shape)} (move it with "
                           f"xp.asarray first)")
    if isinstance(value, (list, tuple)):
        return type(value)(_unwrap_operand(v) for v in value)
    return value


def _unwrap(value, operand=False):
    if isinstance(value, DeviceArray):
        return value._data
    if operand and isinstance(value, np.ndarray) and value.ndim > 0:
        return _unwrap_operand(value)
    if isinstance(value, tuple):
        return tuple(_unwrap(v, operand) for v in value)
    if isinstance(value, list):
        return [_unwrap(v, operand) for v in value]
    if isinstance(value, dict):
        return {k: _unwrap(v, operand) for k, v in value.items()}
    return value


def _unwrap_key(key):
    if isinstance(key, tuple):
        return tuple(_unwrap_key(k) for k in key)
    if isinstance(key, DeviceArray):
        return key._data
    if isinstance(key, np.ndarray) and key.ndim > 0:
        raise HostTransfer("strict device: an index expected a device array or Python "
                           "values, but received a host NumPy array (move it with "
                           "xp.asarray first)")
    if isinstance(key, list):
        return [_unwrap_key(k) for k in key]
    return key


# --- transfers -------------------------------------------------------------------------------------
def to_device(value, dtype=None):
    """Host data to a device array (counted); a device array stays (cast when asked)."""
    if isinstance(value, DeviceArray):
        return value if dtype is None or value.dtype == dtype else value.astype(dtype)
    array = np.array(value, dtype=dtype)  # a copy: device memory is the array's own
    transfers["to_device"] += 1
    transfers["bytes"] += array.nbytes
    return DeviceArray(array)


def to_host(value):
    """A device array to a host NumPy copy (counted)."""
    if not isinstance(value, DeviceArray):
        raise TypeError(f"strict device: to_host expected a DeviceArray, but received "
                        f"{type(value).__name__}")
    transfers["to_host"] += 1
    transfers["bytes"] += value._data.nbytes
    return value._data.copy()


# --- the module ---------------------------------------------------------------------------------------
class _Namespace(types.ModuleType):
    """NumPy's names (of ``numpy`` or one of its submodules), device arrays in and out."""

    def __init__(self, name, host):
        super().__init__(name)
        self._host = host

    def __getattr__(self, name):
        found = getattr(self._host, name)
        if isinstance(found, types.ModuleType):  # np.linalg, np.random: wrapped the same way
            return _Namespace(f"{self.__name__}.{name}", found)
        if isinstance(found, (type, np.dtype)) or not callable(found):
            return found  # dtypes, constants (inf, pi, newaxis), classes

        def device_function(*args, **kwargs):
            return _wrap(found(*_unwrap(args, operand=True), **_unwrap(kwargs, operand=True)))
        device_function.__name__ = name
        if isinstance(found, np.ufunc):  # CuPy's ufuncs have .at (xp.add.at scatter-adds)
            device_function.at = lambda a, index, b=None: found.at(
                _unwrap_operand(a), _unwrap_key(index),
                *(() if b is None else (_unwrap_operand(b),)))
        return device_function


class _Module(_Namespace):
    """The array module: NumPy's names, device arrays in and out."""

    ndarray = DeviceArray

    @staticmethod
    def asarray(value, dtype=None):
        """Host data to the device (counted), as ``cupy.asarray``; device arrays stay."""
        return to_device(value, dtype)

    @staticmethod
    def array(value, dtype=None, copy=True):
        if isinstance(value, DeviceArray):
            data = value._data.astype(dtype) if dtype is not None else value._data
            return DeviceArray(data.copy() if copy else data)
        return to_device(value, dtype)

    @staticmethod
    def asnumpy(value):
        """A device array to the host (counted), as ``cupy.asnumpy``; host data stays."""
        return to_host(value) if isinstance(value, DeviceArray) else np.asarray(value)

    @staticmethod
    def ascontiguousarray(value, dtype=None):
        if not isinstance(value, DeviceArray):
            return to_device(value, dtype)
        return DeviceArray(np.ascontiguousarray(value._data, dtype=dtype))

    @staticmethod
    def get_array_module(*arrays):
        return xp if any(isinstance(a, DeviceArray) for a in arrays) else np

    #: stands in for ``cupyx.scipy.special`` (CuPy keeps SciPy's special functions there, out
    #: of its array module); kernels look it up as ``getattr(xp, "scipy_special", None)``
    scipy_special = types.SimpleNamespace(
        erf=lambda a: DeviceArray(np.vectorize(math.erf, otypes=[a.dtype])(a._data)))


#: the strict array module (what a test-only device place gives kernels as ``ctx.xp``)
xp = _Module("strict_device", np)


# --- the place ----------------------------------------------------------------------------------------
def _place_class():
    from ..tensor.place import Place

    class StrictDevicePlace(Place):
        """A test-only device place: kernels run with ``xp`` the strict module above (the
        device's kernels, as on a CUDAPlace), feeds go to it and fetches come back through
        the counted transfers."""

        device = "gpu"
        xp = globals()["xp"]

        def __repr__(self):
            return "StrictDevicePlace"

    return StrictDevicePlace


StrictDevicePlace = _place_class()
