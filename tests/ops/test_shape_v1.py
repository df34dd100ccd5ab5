"""The first versions of the shape ops (reshape, transpose, squeeze, unsqueeze) and of
one_hot, against NumPy, with float64 finite-difference gradients."""
import numpy as np

from .op_test import OpCase, check_output, table_tests

rng = np.random.RandomState(11)


def r(*shape, dtype="float64"):
    return rng.uniform(-1, 1, shape).astype(dtype)


def reshaped(shape):
    return lambda i, a: {"Out": i["X"].reshape(shape)}


def one_hot_ref(i, a):
    depth = int(i["depth_tensor"]) if "depth_tensor" in i else a["depth"]
    ids = i["X"][..., 0]
    return {"Out": (ids[..., None] == np.arange(depth)).astype("float32")}


CASES = [
    OpCase("reshape", {"X": r(2, 3, 4)}, attrs={"shape": [0, -1]}, ref=reshaped((2, 12)),
           grad=["X"]),
    OpCase("reshape", {"X": r(2, 6), "Shape": np.array([3, 4], "int32")},
           attrs={"shape": [4, 3]}, ref=reshaped((3, 4)), name="shape_tensor"),
    OpCase("reshape", {"X": r(2, 6), "ShapeTensor": [np.array([4], "int64"),
                                                    np.array([3], "int64")]},
           ref=reshaped((4, 3)), name="shape_tensor_list"),
    OpCase("transpose", {"X": r(2, 3, 4)}, attrs={"axis": [2, 0, 1]},
           ref=lambda i, a: {"Out": i["X"].transpose(2, 0, 1)}, grad=["X"]),
    OpCase("squeeze", {"X": r(1, 3, 1, 4)}, attrs={"axes": [0, -2]}, ref=reshaped((3, 4)),
           grad=["X"]),
    OpCase("squeeze", {"X": r(6, 1, 5, 1)}, attrs={"axes": []}, ref=reshaped((6, 5)),
           name="all_ones"),
    OpCase("unsqueeze", {"X": r(3, 4)}, attrs={"axes": [0, -1]}, ref=reshaped((1, 3, 4, 1)),
           grad=["X"]),
    OpCase("unsqueeze", {"X": r(3, 4), "AxesTensor": np.array([1], "int32")},
           ref=reshaped((3, 1, 4)), name="axes_tensor"),
    OpCase("one_hot", {"X": np.array([[1], [0], [3]], "int64")}, attrs={"depth": 4},
           ref=one_hot_ref),
    OpCase("one_hot", {"X": np.array([[2], [1]], "int32"), "depth_tensor": np.array(5)},
           ref=one_hot_ref, name="depth_tensor"),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


def test_reshape_keeps_lod_only_when_the_first_dim_stays():
    x = r(4, 6)
    kept = check_output(OpCase("reshape", {"X": x}, attrs={"shape": [4, 2, 3]},
                               lod={"X": [[0, 1, 4]]}, ref=reshaped((4, 2, 3))))
    assert kept["Out"].lod() == [[0, 1, 4]]
    dropped = check_output(OpCase("reshape", {"X": x}, attrs={"shape": [8, 3]},
                                  lod={"X": [[0, 1, 4]]}, ref=reshaped((8, 3))))
    assert dropped["Out"].lod() == []


def test_transpose_rejects_an_axis_that_is_no_permutation():
    from .op_test import assert_build_fails
    assert_build_fails("transpose", {"X": r(2, 3)}, {"axis": [0, 0]}, "axis", "permutation")


def test_one_hot_wants_ids_with_a_trailing_one():
    import pytest
    from fluid_nb.errors import InvalidArgument
    from .op_test import assert_build_fails
    assert_build_fails("one_hot", {"X": np.array([1, 2], "int64")}, {"depth": 3}, "X",
                       "rank >= 2")
    with pytest.raises(InvalidArgument, match=r"one_hot: input 'X' expected ids of shape"):
        check_output(OpCase("one_hot", {"X": np.array([[1, 2]], "int64")}, attrs={"depth": 3}))


def test_one_hot_passes_the_lod_of_x_on():
    result = check_output(OpCase("one_hot", {"X": np.array([[1], [0], [2]], "int64")},
                                 attrs={"depth": 3}, lod={"X": [[0, 2, 3]]}, ref=one_hot_ref))
    assert result["Out"].lod() == [[0, 2, 3]]
