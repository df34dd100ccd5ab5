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
    # NaN is the largest value, as Paddle's comparator has it: last going up, first going down
    OpCase("argsort", {"X": np.array([[1.0, np.nan, 3.0, -2.0]], "float32")},
           ref=lambda i, a: {"Out": np.array([[-2.0, 1.0, 3.0, np.nan]], "float32"),
                             "Indices": np.array([[3, 0, 2, 1]])}, name="nan_is_largest"),
    OpCase("argsort", {"X": np.array([[1.0, np.nan, 3.0, -2.0], [np.nan, 0.5, np.nan, 2.0]],
                                     "float32")}, attrs={"descending": True},
           ref=lambda i, a: {"Out": np.array([[np.nan, 3.0, 1.0, -2.0],
                                              [np.nan, np.nan, 2.0, 0.5]], "float32"),
                             "Indices": np.array([[1, 2, 0, 3], [0, 2, 3, 1]])},
           name="nan_is_largest_descending"),
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

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


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


def _kron_ref(x, y):
    rank = max(x.ndim, y.ndim)
    return np.kron(x.reshape((1,) * (rank - x.ndim) + x.shape),
                   y.reshape((1,) * (rank - y.ndim) + y.shape))


def _dist_ref(x, y, p):
    z = np.abs(_f64(x) - _f64(y)).reshape(-1)
    if p == 0:
        return np.array([np.count_nonzero(z)], "float64")
    if np.isinf(p):
        return np.array([z.max() if p > 0 else z.min()])
    return np.array([(z ** p).sum() ** (1 / p)])


def _f64(x):
    return np.asarray(x, "float64")


def _diag_embed_ref(x, offset, dim1, dim2):
    n = x.shape[-1] + abs(offset)
    out = np.zeros(x.shape[:-1] + (n, n), x.dtype)
    for k in range(x.shape[-1]):
        i, j = (k, k + offset) if offset >= 0 else (k - offset, k)
        out[..., i, j] = x[..., k]
    return np.moveaxis(out, (-2, -1), (dim1, dim2))


def _sampled_ids(outputs, inputs, attrs):
    ids = np.asarray(outputs["Out"])
    assert ids.shape == (2000,) and ids.dtype == np.int64  # Fluid 1.8 writes int64 ids
    # row distribution [0.1, 0.6, 0.3]
    freq = np.bincount(ids.astype(int), minlength=3) / ids.size
    np.testing.assert_allclose(freq, [0.1, 0.6, 0.3], atol=0.04)


BROADCAST_Y = r(1, 3)

PRODUCT_CASES = [
    OpCase("addmm", {"Input": r(1, 4), "X": r(3, 2), "Y": r(2, 4)},
           attrs={"Alpha": 2.0, "Beta": 0.5},
           ref=lambda i, a: {"Out": 0.5 * i["Input"] + 2.0 * i["X"] @ i["Y"]},
           grad=["Input", "X", "Y"]),
    OpCase("bmm", {"X": r(2, 3, 4), "Y": r(2, 4, 5)},
           ref=lambda i, a: {"Out": i["X"] @ i["Y"]}, grad=["X", "Y"]),
    OpCase("dot", {"X": r(5), "Y": r(5)},
           ref=lambda i, a: {"Out": np.array([np.dot(_f64(i["X"]), i["Y"])])}, grad=["X", "Y"]),
    OpCase("dot", {"X": r(3, 4), "Y": r(3, 4)},
           ref=lambda i, a: {"Out": (_f64(i["X"]) * i["Y"]).sum(1, keepdims=True)},
           grad=["X", "Y"], name="rows"),
    OpCase("kron", {"X": r(2, 3), "Y": r(3, 2)}, ref=lambda i, a: {"Out": np.kron(i["X"], i["Y"])},
           grad=["X", "Y"]),
    OpCase("kron", {"X": r(2, 2, 2), "Y": r(3, 2)},
           ref=lambda i, a: {"Out": _kron_ref(i["X"], i["Y"])}, grad=["X", "Y"],
           name="ranks_differ"),
    OpCase("dist", {"X": r(2, 3), "Y": BROADCAST_Y},
           ref=lambda i, a: {"Out": _dist_ref(i["X"], np.broadcast_to(i["Y"], (2, 3)), 2.0)},
           grad=["X", "Y"]),
    OpCase("dist", {"X": r(2, 3), "Y": r(2, 3)}, attrs={"p": 3.0},
           ref=lambda i, a: {"Out": _dist_ref(i["X"], i["Y"], 3.0)}, grad=["X", "Y"], name="p3"),
    OpCase("dist", {"X": distinct(2, 3), "Y": np.zeros((2, 3), "float32")},
           attrs={"p": float("inf")}, ref=lambda i, a: {"Out": _dist_ref(i["X"], i["Y"], np.inf)},
           grad=["X"], name="inf"),
    OpCase("dist", {"X": np.array([[3, 3], [3, 3]], "float32"),
                    "Y": np.array([[3, 3], [3, 1]], "float32")}, attrs={"p": 0.0},
           ref=lambda i, a: {"Out": np.array([1.0], "float32")}, name="zero"),
    OpCase("cross", {"X": r(2, 3), "Y": r(2, 3)},
           ref=lambda i, a: {"Out": np.cross(i["X"], i["Y"], axis=1)}, grad=["X", "Y"],
           name="first_dim_of_3"),
    OpCase("cross", {"X": r(3, 3), "Y": r(3, 3)}, attrs={"dim": 0},
           ref=lambda i, a: {"Out": np.cross(i["X"], i["Y"], axis=0)}, grad=["X", "Y"],
           name="dim0"),
    OpCase("trace", {"Input": r(3, 4)}, ref=lambda i, a: {"Out": np.array([np.trace(i["Input"])])},
           grad=["Input"]),
    OpCase("trace", {"Input": r(2, 3, 4)}, attrs={"offset": 1, "dim1": 1, "dim2": 2},
           ref=lambda i, a: {"Out": np.trace(i["Input"], 1, 1, 2)}, grad=["Input"],
           name="batched_offset"),
    OpCase("trace", {"Input": r(4, 2, 3)}, attrs={"offset": -1, "dim1": -1, "dim2": 0},
           ref=lambda i, a: {"Out": np.trace(i["Input"], -1, 2, 0)}, grad=["Input"],
           name="negative_dims"),
    OpCase("diag_embed", {"Input": r(2, 3)},
           ref=lambda i, a: {"Out": _diag_embed_ref(i["Input"], 0, -2, -1)}),
    OpCase("diag_embed", {"Input": r(2, 3)}, attrs={"offset": -1, "dim1": 0, "dim2": 2},
           ref=lambda i, a: {"Out": _diag_embed_ref(i["Input"], -1, 0, 2)}, name="offset_dims"),
    OpCase("meshgrid", {"X": [r(3), r(4), r(2)]},
           ref=lambda i, a: {"Out": list(np.meshgrid(*i["X"], indexing="ij"))}, grad=["X"]),
    OpCase("allclose", {"Input": np.array([1.0, 2.0], "float32"),
                        "Other": np.array([1.0, 2.00001], "float32")},
           ref=lambda i, a: {"Out": np.array([True])}),
    OpCase("allclose", {"Input": np.array([np.nan, 1.0]), "Other": np.array([np.nan, 1.0])},
           attrs={"equal_nan": True}, ref=lambda i, a: {"Out": np.array([True])}, name="nan"),
    OpCase("allclose", {"Input": np.array([1.0]), "Other": np.array([1.1])}, attrs={"atol": 0.01},
           ref=lambda i, a: {"Out": np.array([False])}, name="far"),
    OpCase("sampling_id", {"X": np.tile(np.array([[0.1, 0.6, 0.3]], "float32"), (2000, 1))},
           attrs={"seed": 7}, check=_sampled_ids),
]

def _log_softmax_ref(x, axis):
    x = _f64(x)
    shifted = x - x.max(axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis, keepdims=True))


CONDITION = np.array([[True, False, True], [False, False, True]])

PRODUCT_CASES += [
    OpCase("where", {"Condition": CONDITION, "X": r(2, 3), "Y": r(2, 3)},
           ref=lambda i, a: {"Out": np.where(i["Condition"], i["X"], i["Y"])}, grad=["X", "Y"]),
    OpCase("log_softmax", {"X": r(3, 4, low=-3, high=3)},
           ref=lambda i, a: {"Out": _log_softmax_ref(i["X"], -1)}, grad=["X"]),
    OpCase("log_softmax", {"X": r(3, 4, low=-3, high=3)}, attrs={"axis": 0},
           ref=lambda i, a: {"Out": _log_softmax_ref(i["X"], 0)}, grad=["X"], name="axis0"),
]

def _logsumexp_ref(x, axis, keepdims=False):
    x = _f64(x)
    return np.log(np.exp(x).sum(axis=axis, keepdims=keepdims))


SPECIALS = np.array([1.0, np.inf, -np.inf, np.nan, 0.0], "float32")

PRODUCT_CASES += [
    OpCase("flip", {"X": r(2, 3)}, attrs={"axis": [0]},
           ref=lambda i, a: {"Out": i["X"][::-1]}, name="paddle2_axis"),
    OpCase("roll", {"X": r(2, 3)}, attrs={"shifts": [1], "axis": [1]},
           ref=lambda i, a: {"Out": np.roll(i["X"], 1, 1)}, name="paddle2_axis"),
    OpCase("isinf_v2", {"X": SPECIALS}, ref=lambda i, a: {"Out": np.isinf(i["X"])}),
    OpCase("isnan_v2", {"X": SPECIALS}, ref=lambda i, a: {"Out": np.isnan(i["X"])}),
    OpCase("isfinite_v2", {"X": SPECIALS}, ref=lambda i, a: {"Out": np.isfinite(i["X"])}),
    OpCase("isfinite_v2", {"X": np.array([3, 4], "int64")},
           ref=lambda i, a: {"Out": np.array([True, True])}, name="int"),
    OpCase("logsumexp", {"X": r(3, 4, low=-3, high=3)}, attrs={"axis": [1]},
           ref=lambda i, a: {"Out": _logsumexp_ref(i["X"], 1)}, grad=["X"]),
    OpCase("logsumexp", {"X": r(2, 3, 2, low=-3, high=3)}, attrs={"axis": [0, 2], "keepdim": True},
           ref=lambda i, a: {"Out": _logsumexp_ref(i["X"], (0, 2), True)}, grad=["X"],
           name="keepdim"),
    OpCase("logsumexp", {"X": np.array([[1000.0, 1000.0]], "float32")}, attrs={"reduce_all": True},
           ref=lambda i, a: {"Out": np.array(1000.0 + np.log(2.0), "float32")}, name="large"),
]

CASES = CASES + PRODUCT_CASES  # a new list: the table above keeps its own rows

(test_products_match_numpy, test_products_grads_match_finite_differences,
 test_products_run_on_the_strict_device) = table_tests(PRODUCT_CASES)


def test_cross_without_a_dim_of_three_is_refused_when_built():
    with pytest.raises(InvalidArgument, match=r"^cross: inputs 'X' and 'Y' expected a dim of "
                                              r"size 3"):
        build(OpCase("cross", {"X": r(2, 4), "Y": r(2, 4)}))
