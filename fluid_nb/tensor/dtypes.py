"""Data types as Paddle's ``VarType.Type`` enum, and the conversions users expect.

A dtype may be given as a ``VarType`` member, its int, a NumPy dtype or a string such as
``'float32'``; :func:`convert_dtype` turns any of them into the ``VarType`` member.
"""
import enum

import numpy as np

from ..errors import InvalidArgument, InvalidType


class VarType(enum.IntEnum):
    """Paddle's ``VarDesc.VarType``: data types and variable kinds share one enum."""
    BOOL = 0
    INT16 = 1
    INT32 = 2
    INT64 = 3
    FP16 = 4
    FP32 = 5
    FP64 = 6
    LOD_TENSOR = 7
    SELECTED_ROWS = 8
    FEED_MINIBATCH = 9
    FETCH_LIST = 10
    STEP_SCOPES = 11
    LOD_RANK_TABLE = 12
    LOD_TENSOR_ARRAY = 13
    PLACE_LIST = 14
    READER = 15
    RAW = 17
    TUPLE = 18
    SIZE_T = 19
    UINT8 = 20
    INT8 = 21
    BF16 = 22
    COMPLEX64 = 23
    COMPLEX128 = 24
    STRING = 25
    STRINGS = 26
    VOCAB = 27
    FEED_LIST = 28
    PSTRING = 29
    SPARSE_COO = 30
    SPARSE_CSR = 31
    FP8_E4M3FN = 32
    FP8_E5M2 = 33


_NUMPY_OF = {
    VarType.BOOL: "bool", VarType.INT16: "int16", VarType.INT32: "int32",
    VarType.INT64: "int64", VarType.FP16: "float16", VarType.FP32: "float32",
    VarType.FP64: "float64", VarType.UINT8: "uint8", VarType.INT8: "int8",
    VarType.COMPLEX64: "complex64", VarType.COMPLEX128: "complex128",
    VarType.SIZE_T: "uint64",
}
_VARTYPE_OF = {np.dtype(name): vt for vt, name in _NUMPY_OF.items() if vt != VarType.SIZE_T}
_ALIASES = {"float": VarType.FP32, "double": VarType.FP64, "int": VarType.INT32,
            "long": VarType.INT64, "bfloat16": VarType.BF16, "uint16": VarType.BF16,
            "fp16": VarType.FP16, "fp32": VarType.FP32, "fp64": VarType.FP64}

#: the data types a tensor may hold (the rest of VarType names variable kinds)
DATA_TYPES = frozenset(_NUMPY_OF) | {VarType.BF16, VarType.FP8_E4M3FN, VarType.FP8_E5M2}


#: convert_dtype's answers to the names, numbers (an op's dtype attribute) and NumPy dtypes
#: it has been asked about, each kind in a map of its own: a name and a dtype may compare
#: equal and mean different types (``np.dtype('float64') == 'float'``, Fluid's float32)
_BY_NAME, _BY_NUMBER, _BY_NUMPY = {}, {}, {}


def convert_dtype(dtype):
    """Return the ``VarType`` member for any spelling of a data type."""
    kind = dtype.__class__
    if kind is VarType:
        return dtype
    if kind is str or kind is int:  # (exactly: True is no number here)
        known = _BY_NAME if kind is str else _BY_NUMBER
        vt = known.get(dtype)
        if vt is None:
            vt = known[dtype] = _convert(dtype)
        return vt
    if isinstance(dtype, VarType):
        return dtype
    if isinstance(dtype, np.dtype):
        vt = _BY_NUMPY.get(dtype)
        if vt is None:
            vt = _BY_NUMPY[dtype] = _convert(dtype)
        return vt
    return _convert(dtype)


def _convert(dtype):
    if isinstance(dtype, int) and not isinstance(dtype, bool):
        try:
            return VarType(dtype)
        except ValueError:
            pass
    elif isinstance(dtype, str):
        low = dtype.lower()
        if low in _ALIASES:
            return _ALIASES[low]
        if low.startswith("vartype."):
            low = low[len("vartype."):]
        if low.upper() in VarType.__members__:
            return VarType[low.upper()]
    try:
        return _VARTYPE_OF[np.dtype(dtype)]
    except (TypeError, KeyError) as error:
        # a spelling NumPy does not know is a TypeError in Fluid 1.8 (np.dtype's), a NumPy
        # dtype Fluid has no VarType for a wrong value
        kind = InvalidType if isinstance(error, TypeError) else InvalidArgument
        raise kind(f"dtype: expected one of bool, int8/16/32/64, uint8, float16/32/64, "
                   f"complex64/128 or a VarType, but received {dtype!r}") from None


_NUMPY_DTYPE_CACHE = {}


def to_numpy_dtype(dtype):
    """Return the NumPy dtype that holds data of ``dtype``."""
    try:
        return _NUMPY_DTYPE_CACHE[dtype]
    except (KeyError, TypeError):
        pass
    result = _to_numpy_dtype(dtype)
    if isinstance(dtype, (int, str)):
        _NUMPY_DTYPE_CACHE[dtype] = result
    return result


def _to_numpy_dtype(dtype):
    vt = convert_dtype(dtype)
    try:
        return np.dtype(_NUMPY_OF[vt])
    except KeyError:
        raise InvalidArgument(f"dtype: expected a type NumPy can hold, but received {vt.name}") from None


def dtype_name(dtype):
    """``'float32'`` for FP32 and so on; the enum name for types NumPy lacks."""
    vt = convert_dtype(dtype)
    return _NUMPY_OF.get(vt, vt.name.lower())


def dtype_size(dtype):
    """Bytes per element."""
    vt = convert_dtype(dtype)
    if vt == VarType.BF16:
        return 2
    if vt in (VarType.FP8_E4M3FN, VarType.FP8_E5M2):
        return 1
    return to_numpy_dtype(vt).itemsize


def is_float_dtype(dtype):
    return convert_dtype(dtype) in (VarType.FP16, VarType.FP32, VarType.FP64, VarType.BF16)
