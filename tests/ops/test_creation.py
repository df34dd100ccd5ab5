"""Creation ops of Fluid 1.8: range, linspace, eye, diag, tril_triu (with its gradient),
randint, randperm and the random ``*_batch_size_like`` ops."""
import numpy as np
import pytest

from fluid_nb.errors import InvalidArgument

from .op_test import OpCase, check_output, run_case, table_tests

rng = np.random.RandomState(3)


def one(value, dtype):
    return np.array([value], dtype)


def _ints_in(low, high, shape, dtype):
    def check(outputs, inputs, attrs):
        values = np.asarray(outputs["Out"])
        assert values.shape == shape and values.dtype == dtype
        assert values.min() >= low and values.max() < high
        assert len(np.unique(values)) == high - low  # every value turns up in 600 draws
    return check


def _permutation_of(n, dtype):
    def check(outputs, inputs, attrs):
        values = np.asarray(outputs["Out"])
        assert values.dtype == dtype
        np.testing.assert_array_equal(np.sort(values), np.arange(n))
        assert not np.array_equal(values, np.arange(n))  # shuffled (50! orders)
    return check


def _uniform_batch(batch, low, high):
    def check(outputs, inputs, attrs):
        values = np.asarray(outputs["Out"])
        assert values.shape == (batch, 500) and values.dtype == np.float32
        assert values.min() >= low and values.max() < high
        assert abs(values.mean() - (low + high) / 2) < 0.05
    return check


def _gaussian_batch(outputs, inputs, attrs):
    values = np.asarray(outputs["Out"])
    assert values.shape == (1000, 4) and values.dtype == np.float64
    assert abs(values.mean() - 2.0) < 0.05 and abs(values.std() - 0.5) < 0.03


CASES = [
    OpCase("range", {"Start": one(1, "int64"), "End": one(10, "int64"),
                     "Step": one(3, "int64")},
           ref=lambda i, a: {"Out": np.arange(1, 10, 3, dtype="int64")}),
    OpCase("range", {"Start": one(0.5, "float32"), "End": one(-1.0, "float32"),
                     "Step": one(-0.25, "float32")},
           ref=lambda i, a: {"Out": np.arange(0.5, -1.0, -0.25, dtype="float32")},
           name="negative_step"),
    OpCase("range", {"Start": one(0, "int32"), "End": one(7, "int32"), "Step": one(2, "int32")},
           ref=lambda i, a: {"Out": np.array([0, 2, 4, 6], "int32")}, name="int32"),
    OpCase("linspace", {"Start": one(0, "float32"), "Stop": one(10, "float32"),
                        "Num": one(5, "int32")},
           ref=lambda i, a: {"Out": np.linspace(0, 10, 5, dtype="float32")}),
    OpCase("linspace", {"Start": one(3, "float64"), "Stop": one(10, "float64"),
                        "Num": one(1, "int32")},
           ref=lambda i, a: {"Out": np.array([3.0])}, name="one"),
    OpCase("eye", {}, attrs={"num_rows": 3},
           ref=lambda i, a: {"Out": np.eye(3, dtype="float32")}),
    OpCase("eye", {}, attrs={"num_rows": 2, "num_columns": 4, "dtype": 3},
           ref=lambda i, a: {"Out": np.eye(2, 4, dtype="int64")}, name="rectangle_int64"),
    OpCase("diag", {"Diagonal": np.array([3, 4, 5], "int32")},
           ref=lambda i, a: {"Out": np.diag(np.array([3, 4, 5], "int32"))}),
    OpCase("tril_triu", {"X": rng.uniform(-1, 1, (2, 3, 4)).astype("float32")},
           ref=lambda i, a: {"Out": np.tril(i["X"])}, grad=["X"], name="tril"),
    OpCase("tril_triu", {"X": rng.uniform(-1, 1, (3, 4)).astype("float32")},
           attrs={"diagonal": 1, "lower": False},
           ref=lambda i, a: {"Out": np.triu(i["X"], 1)}, grad=["X"], name="triu_above"),
    OpCase("tril_triu", {"X": rng.uniform(-1, 1, (4, 3)).astype("float32")},
           attrs={"diagonal": -1, "lower": True},
           ref=lambda i, a: {"Out": np.tril(i["X"], -1)}, grad=["X"], name="tril_below"),
    OpCase("tril_triu", {"X": np.arange(12, dtype="int64").reshape(3, 4)},
           attrs={"diagonal": -1, "lower": False},
           ref=lambda i, a: {"Out": np.triu(i["X"], -1)}, name="triu_int64"),
    OpCase("randint", {}, attrs={"shape": [20, 30], "low": -2, "high": 5, "seed": 11},
           check=_ints_in(-2, 5, (20, 30), np.int64)),
    OpCase("randint", {}, attrs={"shape": [600], "low": 0, "high": 3, "dtype": 2, "seed": 5},
           check=_ints_in(0, 3, (600,), np.int32), name="int32"),
    OpCase("randperm", {}, attrs={"n": 50, "seed": 9}, check=_permutation_of(50, np.int64)),
    OpCase("randperm", {}, attrs={"n": 50, "dtype": 2, "seed": 2},
           check=_permutation_of(50, np.int32), name="int32"),
    OpCase("uniform_random_batch_size_like", {"Input": np.zeros((7, 2), "float32")},
           attrs={"shape": [-1, 500], "min": 2.0, "max": 3.0, "seed": 4},
           check=_uniform_batch(7, 2.0, 3.0)),
    OpCase("uniform_random_batch_size_like", {"Input": np.zeros((3, 2), "float32")},
           attrs={"shape": [-1, 3], "diag_num": 3, "diag_step": 3, "diag_val": 5.0, "seed": 1},
           check=lambda o, i, a: np.testing.assert_array_equal(
               np.diag(np.asarray(o["Out"])), [5.0, 5.0, 5.0]), name="diagonal"),
    OpCase("gaussian_random_batch_size_like", {"Input": np.zeros((3, 1000), "float32")},
           attrs={"shape": [-1, 4], "input_dim_idx": 1, "mean": 2.0, "std": 0.5, "seed": 8,
                  "dtype": 6},
           check=_gaussian_batch),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


@pytest.mark.parametrize("op", ["randint", "randperm", "uniform_random_batch_size_like",
                                "gaussian_random_batch_size_like"])
def test_random_op_with_a_seed_repeats(op):
    case = next(c for c in CASES if c.op == op)
    first = np.asarray(run_case(case)[2]["Out"])
    second = np.asarray(run_case(case)[2]["Out"])
    np.testing.assert_array_equal(first, second)


def test_range_step_pointing_away_from_the_end_is_refused():
    case = OpCase("range", {"Start": one(0, "int64"), "End": one(5, "int64"),
                            "Step": one(-1, "int64")})
    with pytest.raises(InvalidArgument, match="^range: input 'Step' expected a step that goes"):
        check_output(case)


def test_range_step_of_zero_is_refused():
    case = OpCase("range", {"Start": one(0.0, "float32"), "End": one(5.0, "float32"),
                            "Step": one(0.0, "float32")})
    with pytest.raises(InvalidArgument, match="^range: input 'Step' expected a non-zero value"):
        check_output(case)


def test_randint_low_not_below_high_is_refused_when_built():
    with pytest.raises(InvalidArgument, match="^randint: attribute 'low' expected less than"):
        check_output(OpCase("randint", {}, attrs={"shape": [2], "low": 3, "high": 3}))
