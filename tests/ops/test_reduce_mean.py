"""reduce_mean's host kernel is NumPy's ``mean`` bit for bit: the sum in X's float type
(float32 for float16, float64 for integers), divided in float64, cast to X's dtype."""
import warnings

import numpy as np
import pytest

from fluid_nb.ops.math import _reduce_mean
from tests.ops.op_test import OpCase, run_case


def _numpy_mean(x, axes, keep):
    return x.mean(axis=axes, keepdims=keep).astype(x.dtype)


def _same(expected, got):
    return (np.asarray(expected).dtype == np.asarray(got).dtype
            and np.shape(expected) == np.shape(got)
            and np.asarray(expected).tobytes() == np.asarray(got).tobytes())


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "int64"])
@pytest.mark.parametrize("dims, keep_dim", [([1, 2], False), ([0], True), ([], False),
                                             ([-1], False)])
def test_the_op_gives_numpys_mean_bit_for_bit(dtype, dims, keep_dim):
    x = (np.random.RandomState(3).randn(5, 300, 7) * 1e3).astype(dtype)
    axes = tuple(sorted(d % 3 for d in dims)) or (0, 1, 2)
    _, _, out = run_case(OpCase("reduce_mean", {"X": x},
                                attrs={"dim": dims, "keep_dim": keep_dim}))
    assert _same(_numpy_mean(x, axes, keep_dim), out["Out"].numpy())


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "uint8", "bool"])
def test_a_whole_reduction_divided_as_one_number_matches_the_arrays_division(dtype):
    rng = np.random.RandomState(0)
    for shape in [(1,), (7,), (4, 8), (3, 5, 7), (70001,)]:
        for scale in (1.0, 1e-30, 3e4, 1e30):
            with np.errstate(all="ignore"):
                x = (rng.randn(*shape) * scale).astype(dtype)
            axes = tuple(range(len(shape)))
            with np.errstate(all="ignore"):
                assert _same(_numpy_mean(x, axes, False), _reduce_mean(np, x, axes, False, {}))
                assert _same(_numpy_mean(x, axes, True), _reduce_mean(np, x, axes, True, {}))


@pytest.mark.parametrize("special", [np.nan, np.inf, -np.inf])
def test_nan_and_inf_propagate_as_in_numpy(special):
    x = np.arange(12, dtype="float32").reshape(3, 4)
    x[1, 2] = special
    for axes in [(0,), (1,), (0, 1)]:
        with np.errstate(invalid="ignore"):
            assert _same(_numpy_mean(x, axes, False), _reduce_mean(np, x, axes, False, {}))


def test_an_empty_reduction_is_nan_and_warns_as_numpy_does():
    x = np.zeros((2, 0, 3), "float32")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = _reduce_mean(np, x, (1,), False, {})
    assert got.shape == (2, 3) and np.isnan(got).all()
    assert any("empty" in str(w.message) for w in caught)
    assert _reduce_mean(np, x, (0,), False, {}).shape == (0, 3)


def test_a_0d_input_is_its_own_mean():
    x = np.array(2.5, "float32")
    assert _same(_numpy_mean(x, (), False), _reduce_mean(np, x, (), False, {}))
