"""scale and lookup_table do their dense case in a host step of their own; whatever the
inputs (LoD, integer tensors, a SelectedRows, bad ids), the host step leaves what the
kernel leaves or raises what it raises."""
import numpy as np
import pytest

from fluid_nb.tensor.tensor import LoDTensor, SelectedRows
from fluid_nb.ops import registry
from tests.core.test_host_steps import _host_agrees, _run_one, Executor, KernelsOnly


def _tensor(array, lod=()):
    return LoDTensor(np.asarray(array), lod)


X = np.arange(10, dtype="float32").reshape(5, 2) - 4
W = np.arange(12, dtype="float32").reshape(6, 2)


@pytest.mark.parametrize("x, attrs", [
    (_tensor(X), {"scale": 2.0, "bias": 1.0}),
    (_tensor(X, [[0, 2, 5]]), {"scale": 0.5, "bias": 3.0, "bias_after_scale": False}),
    (_tensor(X), {}),  # the same values: handed on unchanged
    (_tensor(np.arange(4, dtype="int32")), {"scale": 2.5, "bias": 1.0}),
    (_tensor(np.array(3.0)), {"scale": -1.0}),
])
def test_scale(x, attrs):
    _host_agrees("scale", {"X": x}, attrs=attrs)


def test_scale_with_a_scale_tensor_binds_the_kernel():
    _host_agrees("scale", {"X": _tensor(X), "ScaleTensor": _tensor(np.array([3.0], "float32"))},
                 host_bound=False)


def test_scale_of_something_else_fails_as_the_kernel_does():
    _host_agrees("scale", {"X": [_tensor(X)]})


def test_scale_of_selected_rows_goes_to_the_kernel():
    x = SelectedRows([3, 1], 4, _tensor(X[:2]))
    (kind, host), _ = _run_one(Executor, "scale", {"X": x}, ["Out"], {"scale": 2.0})
    (_, kernel), _ = _run_one(KernelsOnly, "scale", {"X": x}, ["Out"], {"scale": 2.0})
    for out in (host, kernel):
        assert isinstance(out, SelectedRows) and out.rows() == [3, 1] and out.height() == 4
        np.testing.assert_array_equal(out.value.array, X[:2] * 2)


@pytest.mark.parametrize("op_type, ids, attrs", [
    ("lookup_table", _tensor(np.array([[1], [5], [1]], "int64"), [[0, 1, 3]]), {}),
    ("lookup_table", _tensor(np.array([[1], [0], [2]], "int64")), {"padding_idx": 0}),
    ("lookup_table", _tensor(np.array([[1], [6]], "int64")), {}),  # out of range
    ("lookup_table_v2", _tensor(np.array([[1, 2], [3, 1]], "int32")), {"padding_idx": 3}),
])
def test_lookup(op_type, ids, attrs):
    _host_agrees(op_type, {"W": _tensor(W), "Ids": ids}, attrs=attrs)


def test_the_dense_host_steps_are_registered():
    for op_type in ("scale", "lookup_table", "lookup_table_v2"):
        assert registry.get(op_type).host_step is not None, op_type
