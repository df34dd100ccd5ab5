"""Running a build of a program whose sizes are read at run time (dynamic.py): one build,
its state (the tensors, arrays and step records the generated code keeps between runs) and
the records feeds and fetches cross in.

A feed goes in as an ``Exchange``: a pointer to the caller's array (no copy), its dims and
its LoD; it must fit the program (the executor's feed rules: rank, the sizes the program
declares, a lossless cast to the declared type), else InvalidArgument names it. Parameters
are the scope's arrays, as in a specialised build. A fetch comes back as an ``Exchange``
the generated code fills (data, dims, LoD), copied out at once.
"""
import ctypes
import math
import weakref

import numpy as np

from ...errors import (InvalidArgument, NotFound, OutOfRange, PreconditionNotMet,
                      ResourceExhausted, Unimplemented, expected)
from ...exec.executor import FetchedArray, feed_tensor
from ...tensor.place import CPUPlace
from ...tensor.lod_rank_table import LoDRankTable
from ...tensor.tensor import LoDTensor, LoDTensorArray
from .bound_call import Parameters

_HOST = CPUPlace()
MAX_RANK = 8
MAX_LOD_LEVELS = 8
#: the generated code's ErrorCode values, as the errors they become
ERRORS = {1: InvalidArgument, 2: OutOfRange, 3: Unimplemented, 4: ResourceExhausted}


class Exchange(ctypes.Structure):
    """runtime/fluid_native_values.h's Exchange."""
    _fields_ = [("data", ctypes.c_void_p), ("rank", ctypes.c_int64),
                ("dims", ctypes.c_int64 * MAX_RANK), ("lod_levels", ctypes.c_int64),
                ("lod", ctypes.c_void_p * MAX_LOD_LEVELS),
                ("lod_sizes", ctypes.c_int64 * MAX_LOD_LEVELS),
                ("initialised", ctypes.c_int64)]


class ArrayExchange(ctypes.Structure):
    """runtime/fluid_native_values.h's ArrayExchange."""
    _fields_ = [("size", ctypes.c_int64), ("items", ctypes.POINTER(Exchange))]


class DynamicBuild:
    """One library built from a dynamic source, with its state. ``run`` takes feeds (arrays,
    LoDTensors or (array, lod) pairs) of any batch and LoD the program accepts."""

    def __init__(self, program, source, library, cached, lib, declared):
        self.source, self.library, self.cached = source, library, cached
        self._declared = declared  # name -> the block-0 Variable the program declares
        lib.fluid_create.restype = ctypes.c_void_p
        lib.fluid_destroy.argtypes = [ctypes.c_void_p]
        lib.fluid_error.argtypes = [ctypes.c_void_p]
        lib.fluid_error.restype = ctypes.c_char_p
        lib.fluid_run.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        lib.fluid_run.restype = ctypes.c_int
        self._lib = lib
        self._state = lib.fluid_create()
        weakref.finalize(self, lib.fluid_destroy, self._state)
        self._run = lib.fluid_run
        variables = source.variables
        self.pointers = (ctypes.c_void_p * max(len(variables), 1))()
        self.address = ctypes.addressof(self.pointers)
        self.by_name = {v.name: v for v in variables}
        self.exchanges = {v.name: Exchange() if v.kind == "dense" else ArrayExchange()
                          for v in variables if v.role != "persistable"}
        self.persistables = [v for v in variables if v.role == "persistable"]
        self.parameters = Parameters(self.persistables, self.pointers, _bind_persistable)
        self.feeds = [v for v in variables if v.role == "feed"]
        #: feed name -> (the value fed last, its LoD and array, what it became): the same
        #: LoDTensor fed again (its LoD and data are replaced, never changed in place) is
        #: not checked and converted again
        self._last = {}

    def bind(self, scope):
        """Point at the scope's arrays of the parameters (again only where one changed)."""
        self.parameters.bind(scope)

    def run(self, feed, fetch_names, scope, return_numpy):
        kept = []  # the arrays the exchanges point into, alive until the run is over
        for v in self.feeds:
            if v.name not in feed:
                raise NotFound(expected("a compiled program", "feed",
                                        f"a value for {v.name!r} (the program reads it)",
                                        sorted(feed)))
            self._feed(v, feed[v.name], kept)
        for ids in self.source.id_ranges:  # before anything runs (id_ranges.py)
            ids.check(kept_feed(kept, ids.name).array)
        self.bind(scope)
        wanted = []
        for name in fetch_names:
            v = self.by_name.get(name)
            if v is not None and v.role == "temporary":
                self.pointers[v.index] = ctypes.addressof(self.exchanges[name])
                wanted.append(v)
        try:
            code = self._run(self._state, self.address)
        finally:
            for v in wanted:
                self.pointers[v.index] = None
        if code:
            message = self._lib.fluid_error(self._state).decode(errors="replace")
            raise ERRORS.get(code, PreconditionNotMet)(f"a compiled program: {message}")
        results = []
        for name in fetch_names:
            if name in self.source.not_computed:
                raise NotFound(expected(
                    "a compiled program", f"fetch {name!r}", "a variable the build computes "
                    "(no op reads this one, so it is computed only when it is in compile's "
                    "fetch_list)", "one it does not compute"))
            v = self.by_name.get(name)
            if v is not None and v.role == "temporary" and v.kind != "dense":
                results.append(self._fetched_values(v, return_numpy))
                continue
            if v is not None and v.role == "temporary":
                array, lod = self._fetched(self.exchanges[name], v)
            elif v is not None and v.role == "feed":
                tensor = kept_feed(kept, name)
                array, lod = np.array(tensor.array), tensor.lod()
            else:
                held = scope.find_var(name)
                value = getattr(held, "value", None)
                if not isinstance(value, LoDTensor) or value.array is None:
                    raise NotFound(expected("a compiled program", "fetch",
                                            "a variable the compiled code computes",
                                            repr(name)))
                array, lod = np.array(value.array), value.lod()
            results.append(array.view(FetchedArray) if return_numpy else LoDTensor(array, lod))
        return results

    def _feed(self, v, value, kept):
        last = self._last.get(v.name)
        if last is not None and last[0] is value and last[1] is getattr(value, "_lod", None) \
                and last[2] is getattr(value, "array", None):
            kept.append(last[3])
            self.pointers[v.index] = ctypes.addressof(self.exchanges[v.name])
            return
        where = f"a compiled program: feed {v.name!r}"
        # the executor's rules (value, lossless cast, rank, the sizes a data layer fixes)
        tensor = feed_tensor(v.name, self._declared[v.name], value, _HOST)
        array = tensor.array
        declared = self._declared[v.name].shape
        # and every size the program declares, which the compiled code has as a literal
        if len(array.shape) != len(declared) or any(
                d >= 0 and d != g for d, g in zip(declared, array.shape)):
            raise InvalidArgument(expected(where, "shape", f"{list(declared)} (-1 is any "
                                           f"size; the program's declared shape)",
                                           list(array.shape)))
        if len(declared) > MAX_RANK or len(tensor.lod()) > MAX_LOD_LEVELS:
            raise InvalidArgument(expected(where, "rank and LoD depth",
                                           f"at most {MAX_RANK} and {MAX_LOD_LEVELS}",
                                           f"{len(declared)} and {len(tensor.lod())}"))
        if not array.flags.c_contiguous:
            array = np.ascontiguousarray(array)
        e = self.exchanges[v.name]
        e.data = array.ctypes.data
        e.rank = array.ndim
        for k, d in enumerate(array.shape):
            e.dims[k] = d
        levels = [np.ascontiguousarray(level, dtype=np.int64) for level in tensor.lod()]
        e.lod_levels = len(levels)
        for k, level in enumerate(levels):
            e.lod[k] = level.ctypes.data
            e.lod_sizes[k] = level.shape[0]
        e.initialised = 1
        converted = (v.name, LoDTensor(array, tensor.lod()), levels)
        kept.append(converted)
        self.pointers[v.index] = ctypes.addressof(e)
        if isinstance(value, LoDTensor):
            self._last[v.name] = (value, value._lod, value.array, converted)

    def _fetched_values(self, v, return_numpy):
        """A tensor array (a list of arrays with return_numpy) or a rank table fetched."""
        e = self.exchanges[v.name]
        items = [e.items[k] for k in range(e.size)]
        if v.kind == "rank_table":
            index, lengths = (self._fetched(item, v, np.dtype(np.int64)) for item in items)
            return LoDRankTable(zip(index[0].tolist(), lengths[0].tolist()), index[1])
        tensors = LoDTensorArray(LoDTensor(*self._fetched(item, v)) if item.initialised
                                 else LoDTensor() for item in items)
        return [np.asarray(t).view(FetchedArray) for t in tensors] if return_numpy \
            else tensors

    def _fetched(self, e, v, dtype=None):
        """(array, LoD) of the tensor an Exchange describes, copied out."""
        dtype = v.dtype if dtype is None else dtype
        if not e.initialised:
            raise NotFound(expected("a compiled program", f"fetch {v.name!r}",
                                    "a value the run computed", "none"))
        shape = tuple(e.dims[k] for k in range(e.rank))
        count = math.prod(shape)
        if count:
            buffer = (ctypes.c_char * (count * dtype.itemsize)).from_address(e.data)
            array = np.frombuffer(buffer, dtype=dtype).reshape(shape).copy()
        else:
            array = np.empty(shape, dtype)
        lod = [np.ctypeslib.as_array((ctypes.c_int64 * e.lod_sizes[k]).from_address(e.lod[k]))
               .tolist() for k in range(e.lod_levels)]
        return array, lod


def _bind_persistable(scope, v):
    from .compiled_program import bind_persistable
    return bind_persistable(scope, v, np)


def kept_feed(kept, name):
    return next(tensor for fed, tensor, _ in kept if fed == name)
