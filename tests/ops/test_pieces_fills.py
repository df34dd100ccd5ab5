"""unbind, partial_concat, partial_sum, minus, fill, fill_zeros_like2, seed and
shuffle_batch against NumPy, with float64 finite-difference gradients."""
import numpy as np

import fluid_nb as fluid
from .op_test import OpCase, check_output, table_tests

rng = np.random.RandomState(17)


def r(*shape, dtype="float64"):
    return rng.uniform(-1, 1, shape).astype(dtype)


def unbind_ref(i, a):
    x = i["X"]
    axis = a["axis"] % x.ndim
    return {"Out": [np.take(x, k, axis=axis) for k in range(x.shape[axis])]}


def cols(x, a):
    size = x.shape[1]
    start = a["start_index"] + size if a["start_index"] < 0 else a["start_index"]
    end = size if a["length"] < 0 else start + a["length"]
    return x[:, start:end]


def pconcat_ref(i, a):
    return {"Out": np.concatenate([cols(x, a) for x in i["X"]], axis=1)}


def psum_ref(i, a):
    return {"Out": sum(cols(x, a) for x in i["X"])}


def shuffle_check(outs, inputs, attrs):
    x = inputs["X"]
    idx = np.asarray(outs["ShuffleIdx"])
    assert sorted(idx.tolist()) == list(range(len(x)))
    np.testing.assert_array_equal(np.asarray(outs["Out"]), x[idx])


CASES = [
    OpCase("unbind", {"X": r(3, 2, 4)}, attrs={"axis": 0}, ref=unbind_ref, grad=["X"],
           outputs={"Out": 3}),
    OpCase("unbind", {"X": r(2, 3, 2)}, attrs={"axis": -2}, ref=unbind_ref, grad=["X"],
           outputs={"Out": 3}, name="negative_axis"),
    OpCase("partial_concat", {"X": [r(3, 5), r(3, 5)]},
           attrs={"start_index": 1, "length": 2}, ref=pconcat_ref, grad=["X"]),
    OpCase("partial_concat", {"X": [r(2, 6)]}, attrs={"start_index": -3, "length": -1},
           ref=pconcat_ref, grad=["X"], name="negative_start"),
    OpCase("partial_sum", {"X": [r(3, 5), r(3, 5), r(3, 5)]},
           attrs={"start_index": 0, "length": 3}, ref=psum_ref, grad=["X"]),
    OpCase("minus", {"X": r(3, 4), "Y": r(3, 4)},
           ref=lambda i, a: {"Out": i["X"] - i["Y"]}, grad=["X", "Y"]),
    OpCase("fill", {}, attrs={"value": [1.5, 2.0, -3.0, 4.0, 5.0, 6.0], "shape": [2, 3],
                              "dtype": int(fluid.core.VarDesc.VarType.FP64)},
           ref=lambda i, a: {"Out": np.array(a["value"]).reshape(2, 3)}),
    OpCase("fill", {}, attrs={"value": [1.0, 2.0], "shape": [2],
                              "dtype": int(fluid.core.VarDesc.VarType.INT32)},
           ref=lambda i, a: {"Out": np.array([1, 2], "int32")}, name="int32"),
    OpCase("fill_zeros_like2", {"X": r(2, 3)},
           attrs={"dtype": int(fluid.core.VarDesc.VarType.INT64)},
           ref=lambda i, a: {"Out": np.zeros((2, 3), "int64")}),
    OpCase("seed", {}, attrs={"seed": 123}, ref=lambda i, a: {"Out": np.array([123], "int32")}),
    OpCase("shuffle_batch", {"X": r(6, 3), "Seed": np.array([5], "int64")},
           check=shuffle_check, grad=["X"], grad_outputs=["Out"]),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


def test_seed_zero_draws_a_positive_seed():
    out = check_output(OpCase("seed", {}, attrs={"seed": 0}))["Out"]
    assert np.asarray(out).dtype == np.int32 and int(np.asarray(out)[0]) > 0


def test_shuffle_batch_is_reproducible_from_its_seed_and_passes_a_new_one_on():
    case = OpCase("shuffle_batch", {"X": r(8, 2), "Seed": np.array([9], "int64")},
                  check=shuffle_check)
    first, second = check_output(case), check_output(case)
    np.testing.assert_array_equal(np.asarray(first["ShuffleIdx"]),
                                  np.asarray(second["ShuffleIdx"]))
    assert int(np.asarray(first["SeedOut"])[0]) != 9


def test_partial_sum_rejects_a_range_past_the_columns():
    from .op_test import assert_build_fails
    assert_build_fails("partial_sum", {"X": [r(2, 4)]}, {"start_index": 2, "length": 3},
                       "length", "at most 2")
