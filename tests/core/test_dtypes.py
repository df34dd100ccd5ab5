"""``convert_dtype``: every spelling of a data type to its VarType, names and NumPy dtypes
remembered apart (a name and a dtype that compare equal may mean different types), a
spelling it refuses refused every time."""
import numpy as np
import pytest

from fluid_nb.errors import InvalidArgument, InvalidType
from fluid_nb.tensor.dtypes import VarType, convert_dtype


def test_a_name_and_a_dtype_equal_to_it_keep_their_own_meanings():
    # np.dtype('float64') == 'float', yet Fluid's 'float' is float32
    assert np.dtype("float64") == "float"
    for _ in range(2):  # (the second time from what was remembered)
        assert convert_dtype(np.dtype("float64")) == VarType.FP64
        assert convert_dtype("float") == VarType.FP32
        assert convert_dtype(np.dtype("float64")) == VarType.FP64
        assert convert_dtype("float64") == VarType.FP64


@pytest.mark.parametrize("spelling, want", [
    ("float32", VarType.FP32), ("FP64", VarType.FP64), ("VarType.FP16", VarType.FP16),
    ("double", VarType.FP64), ("int64", VarType.INT64), ("bool", VarType.BOOL),
    (np.dtype("int32"), VarType.INT32), (np.float16, VarType.FP16), (5, VarType.FP32),
    (VarType.UINT8, VarType.UINT8)])
def test_every_spelling_gives_its_type_each_time(spelling, want):
    assert [convert_dtype(spelling) for _ in range(3)] == [want] * 3


@pytest.mark.parametrize("spelling, error", [
    ("float31", InvalidType), (np.dtype("datetime64[s]"), InvalidArgument),
    (True, InvalidType), (1.0, InvalidType), (99, InvalidType)])
def test_a_refused_spelling_is_refused_every_time(spelling, error):
    for _ in range(2):
        with pytest.raises(error, match="dtype"):
            convert_dtype(spelling)
