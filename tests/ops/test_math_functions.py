"""The math_functions op family against NumPy, with float64 finite-difference gradients."""
import numpy as np
import pytest

from fluid_nb.errors import InvalidArgument
from fluid_nb.ops import registry

from .op_test import OpCase, build, check_output, table_tests

rng = np.random.RandomState(5)


def r(*shape, low=-1, high=1, dtype="float32"):
    return rng.uniform(low, high, shape).astype(dtype)


def distinct(*shape):
    """Values far enough apart that sorting is stable under finite differences."""
    n = int(np.prod(shape))
    return (rng.permutation(n) * 0.1 + rng.uniform(0, 0.01, n)).reshape(shape).astype("float32")


def _cumsum_ref(x, axis=-1, exclusive=False, reverse=False):
    x = np.flip(x, axis) if reverse else x
    out = np.cumsum(x, axis=axis)
    if exclusive:
        out = out - x
    return np.flip(out, axis) if reverse else out


UNSORTED = np.array([[3.0, 1.0, 2.0, 1.0], [0.5, -1.0, 0.5, 4.0]], "float32")

CASES = [
    OpCase("shape", {"Input": r(2, 3, 4)},
           ref=lambda i, a: {"Out": np.array([2, 3, 4], "int32")}),
    OpCase("size", {"Input": r(2, 3, 4)}, ref=lambda i, a: {"Out": np.array([24], "int64")}),
    OpCase("where_index", {"Condition": np.array([[True, False], [False, True]])},
           ref=lambda i, a: {"Out": np.array([[0, 0], [1, 1]], "int64")}),
    OpCase("where_index", {"Condition": np.array([0.0, 2.0, 0.0, -1.0], "float32")},
           ref=lambda i, a: {"Out": np.array([[1], [3]], "int64")}, name="float_1d"),
    OpCase("where_index", {"Condition": np.zeros((2, 3), bool)},
           ref=lambda i, a: {"Out": np.zeros((0, 2), "int64")}, name="none_true"),
    OpCase("cumsum", {"X": r(3, 4)}, ref=lambda i, a: {"Out": _cumsum_ref(i["X"])},
           grad=["X"]),
    OpCase("cumsum", {"X": r(3, 4)}, attrs={"axis": 0, "exclusive": True},
           ref=lambda i, a: {"Out": _cumsum_ref(i["X"], 0, exclusive=True)}, grad=["X"],
           name="exclusive"),
    OpCase("cumsum", {"X": r(3, 4)}, attrs={"axis": 1, "reverse": True},
           ref=lambda i, a: {"Out": _cumsum_ref(i["X"], 1, reverse=True)}, grad=["X"],
           name="reverse"),
    OpCase("cumsum", {"X": r(2, 3)}, attrs={"axis": 1, "reverse": True, "exclusive": True},
           ref=lambda i, a: {"Out": _cumsum_ref(i["X"], 1, True, True)}, grad=["X"],
           name="reverse_exclusive"),
    OpCase("cumsum", {"X": np.arange(6, dtype="int64").reshape(2, 3)}, attrs={"flatten": True},
           ref=lambda i, a: {"Out": np.cumsum(np.arange(6))}, name="flatten_int64"),
    OpCase("argsort", {"X": UNSORTED},
           ref=lambda i, a: {"Out": np.sort(i["X"], axis=-1),
                             "Indices": np.argsort(i["X"], axis=-1, kind="stable")}),
    OpCase("argsort", {"X": UNSORTED}, attrs={"axis": 0, "descending": True},
           ref=lambda i, a: {"Out": -np.sort(-i["X"], axis=0),
                             "Indices": np.argsort(-i["X"], axis=0, kind="stable")},
           name="descending_axis0"),
    OpCase("argsort", {"X": distinct(3, 4)}, attrs={"descending": True},
           ref=lambda i, a: {"Out": -np.sort(-i["X"], axis=-1)}, grad=["X"],
           grad_outputs=["Out"], name="grad"),
    OpCase("reduce_all", {"X": np.array([[True, False], [True, True]])},
           attrs={"dim": [1]}, ref=lambda i, a: {"Out": np.array([False, True])}),
    OpCase("reduce_all", {"X": np.array([[True, True], [True, True]])},
           attrs={"reduce_all": True}, ref=lambda i, a: {"Out": np.array(True)}, name="all"),
    OpCase("reduce_any", {"X": np.array([[True, False], [False, False]])},
           attrs={"dim": [0], "keep_dim": True}, ref=lambda i, a: {"Out": np.array([[True, False]])}),
    OpCase("reduce_any", {"X": np.zeros((2, 3), bool)}, attrs={"dim": []},
           ref=lambda i, a: {"Out": np.array(False)}, name="empty_dim_reduces_all"),
    OpCase("isinf", {"X": np.array([1.0, np.inf, np.nan], "float32")},
           ref=lambda i, a: {"Out": np.array([True])}),
    OpCase("isnan", {"X": np.array([1.0, 2.0], "float64")},
           ref=lambda i, a: {"Out": np.array([False])}),
    OpCase("isfinite", {"X": np.array([1.0, np.nan], "float32")},
           ref=lambda i, a: {"Out": np.array([False])}),
    OpCase("isfinite", {"X": np.array([1, 2], "int32")}, ref=lambda i, a: {"Out": np.array([True])},
           name="int"),
    OpCase("reverse", {"X": r(2, 3, 4)}, attrs={"axis": [0, 2]},
           ref=lambda i, a: {"Out": i["X"][::-1, :, ::-1]}, grad=["X"]),
    OpCase("flip", {"X": r(2, 3)}, attrs={"dims": [-1]},
           ref=lambda i, a: {"Out": i["X"][:, ::-1]}, grad=["X"]),
    OpCase("roll", {"X": r(3, 4)}, attrs={"shifts": [1, -2], "dims": [0, 1]},
           ref=lambda i, a: {"Out": np.roll(i["X"], (1, -2), (0, 1))}, grad=["X"]),
    OpCase("roll", {"X": np.arange(6, dtype="int64").reshape(2, 3)}, attrs={"shifts": [2]},
           ref=lambda i, a: {"Out": np.roll(np.arange(6), 2).reshape(2, 3)}, name="flat"),
    OpCase("index_select", {"X": r(3, 4), "Index": np.array([2, 0, 2], "int64")},
           attrs={"dim": 0}, ref=lambda i, a: {"Out": i["X"][[2, 0, 2]]}, grad=["X"]),
    OpCase("index_select", {"X": r(2, 4, 3), "Index": np.array([3, 1], "int32")},
           attrs={"dim": 1}, ref=lambda i, a: {"Out": i["X"][:, [3, 1]]}, grad=["X"],
           name="dim1"),
    OpCase("index_sample", {"X": r(2, 5), "Index": np.array([[4, 0, 4], [1, 2, 3]], "int64")},
           ref=lambda i, a: {"Out": np.take_along_axis(i["X"], i["Index"], 1)}, grad=["X"]),
    OpCase("unique", {"X": np.array([2, 3, 3, 1, 5, 3], "int32")},
           ref=lambda i, a: {"Out": np.array([2, 3, 1, 5], "int32"),
                             "Index": np.array([0, 1, 1, 2, 3, 1], "int32")}),
    OpCase("unique", {"X": np.array([0.5, -1.0, 0.5], "float32")}, attrs={"dtype": 3},
           ref=lambda i, a: {"Out": np.array([0.5, -1.0], "float32"),
                             "Index": np.array([0, 1, 0], "int64")}, name="int64_index"),
    OpCase("unique_with_counts", {"X": np.array([2, 3, 3, 1, 5, 3], "int64")},
           ref=lambda i, a: {"Out": np.array([2, 3, 1, 5], "int64"),
                             "Index": np.array([0, 1, 1, 2, 3, 1], "int32"),
                             "Count": np.array([1, 3, 1, 1], "int32")}),
]

test_output_matches_numpy, test_grad_matches_finite_differences = table_tests(CASES)


def test_cumsum_gradient_is_a_cumsum_the_other_way():
    _, op, _, _ = build(OpCase("cumsum", {"X": r(2, 3)}, attrs={"axis": 0}))
    (spec,) = registry.make_grad_ops(op)
    assert spec.type == "cumsum" and spec.attrs["reverse"] is True
    assert spec.inputs == {"X": ["out_out@GRAD"]} and spec.outputs == {"Out": ["x@GRAD"]}


def test_index_select_out_of_range_index_is_refused():
    case = OpCase("index_select", {"X": r(3, 2), "Index": np.array([3], "int64")})
    with pytest.raises(InvalidArgument, match=r"^index_select: input 'Index' expected values in"):
        check_output(case)


def test_argsort_axis_outside_the_rank_is_refused_when_built():
    with pytest.raises(InvalidArgument, match=r"^argsort: attribute 'axis' expected in \[-2, 2\)"):
        build(OpCase("argsort", {"X": r(2, 3)}, attrs={"axis": 2}))
