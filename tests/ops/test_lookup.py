"""Lookup ops against NumPy, with float64 finite-difference gradients."""
import numpy as np
import pytest

from fluid_nb.errors import InvalidArgument

from .op_test import OpCase, append_one, check_grad, check_output, table_tests

rng = np.random.RandomState(0)


def r(*shape, dtype="float32"):
    return rng.uniform(-1, 1, shape).astype(dtype)


def lookup_ref(drop_last):
    def ref(i, a):
        w, ids = i["W"], i["Ids"]
        if drop_last:
            ids = ids[..., 0]
        out = w[ids]
        pad = a.get("padding_idx", -1)
        if pad != -1:
            out[ids == pad] = 0
        return {"Out": out}
    return ref


def one_hot_ref(i, a):
    depth = int(i["depth_tensor"][0]) if "depth_tensor" in i else a["depth"]
    x = i["X"]
    out = np.zeros(x.shape + (depth,), "float32")
    for pos in np.ndindex(x.shape):
        if 0 <= x[pos] < depth:
            out[pos + (x[pos],)] = 1
    return {"Out": out.astype("float64" if a.get("dtype") == 6 else "float32")}


def gather_ref(i, a):
    axis = int(i["Axis"][0]) if "Axis" in i else a.get("axis", 0)
    return {"Out": np.take(i["X"], i["Index"].reshape(-1), axis=axis)}


ids_lod = np.array([[1], [3], [1], [0], [2]], "int64")

CASES = [
    OpCase("lookup_table", {"W": r(4, 3), "Ids": ids_lod}, ref=lookup_ref(True), grad=["W"]),
    OpCase("lookup_table", {"W": r(5, 2), "Ids": np.array([[[1], [4]], [[4], [0]]])},
           attrs={"padding_idx": 4}, ref=lookup_ref(True), grad=["W"], name="padding_rank3"),
    OpCase("lookup_table", {"W": r(4, 3), "Ids": ids_lod}, lod={"Ids": [[0, 2, 5]]},
           ref=lambda i, a: {"Out": (i["W"][i["Ids"][:, 0]], [[0, 2, 5]])}, name="lod"),
    OpCase("lookup_table_v2", {"W": r(4, 3), "Ids": np.array([[1, 3, 1], [0, 2, 2]])},
           ref=lookup_ref(False), grad=["W"]),
    OpCase("lookup_table_v2", {"W": r(4, 2), "Ids": np.array([0, 3, 3, 1], "int32")},
           attrs={"padding_idx": 3}, ref=lookup_ref(False), grad=["W"], name="padding_int32"),
    OpCase("one_hot_v2", {"X": np.array([1, 1, 3, 0])}, attrs={"depth": 4}, ref=one_hot_ref),
    OpCase("one_hot_v2", {"X": np.array([[2, 0], [1, 2]], "int32")},
           attrs={"depth": 3, "dtype": 6}, ref=one_hot_ref, name="rank2_fp64"),
    OpCase("one_hot_v2", {"X": np.array([0, 5, -1, 2]), "depth_tensor": np.array([3], "int32")},
           attrs={"allow_out_of_range": True}, ref=one_hot_ref, name="depth_tensor_out_of_range"),
    OpCase("one_hot_v2", {"X": np.array([[1], [0], [2]])}, attrs={"depth": 3},
           lod={"X": [[0, 1, 3]]},
           ref=lambda i, a: {"Out": (np.eye(3, dtype="float32")[[1, 0, 2]][:, None, :],
                                     [[0, 1, 3]])}, name="lod"),
    OpCase("gather", {"X": r(4, 3), "Index": np.array([1, 3, 1])}, ref=gather_ref, grad=["X"]),
    OpCase("gather", {"X": r(2, 4, 3), "Index": np.array([[3], [0]], "int32")},
           attrs={"axis": 1}, ref=gather_ref, grad=["X"], name="axis1_index2d"),
    OpCase("gather", {"X": r(3, 4), "Index": np.array([2, 2, 0]),
                      "Axis": np.array([1], "int32")},
           ref=gather_ref, grad=["X"], name="axis_tensor"),
]


(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


_append = append_one


def test_lookup_table_ids_need_last_dim_1():
    with pytest.raises(InvalidArgument, match="lookup_table: input 'Ids' expected a last dim"):
        _append("lookup_table", {"W": ((10, 4), "float32"), "Ids": ((3, 2), "int64")}, ["Out"])


def test_lookup_table_shapes_at_compile_time():
    op = _append("lookup_table", {"W": ((10, 4), "float32"), "Ids": ((-1, 1), "int64")},
                 ["Out"])
    assert op.block.var("out_out").shape == (-1, 4)
    op = _append("lookup_table_v2", {"W": ((10, 4), "float32"), "Ids": ((-1, 7), "int64")},
                 ["Out"])
    assert op.block.var("out_out").shape == (-1, 7, 4)


def test_lookup_table_id_out_of_range_at_run_time():
    case = OpCase("lookup_table_v2", {"W": r(3, 2), "Ids": np.array([0, 3])})
    with pytest.raises(InvalidArgument, match=r"lookup_table_v2: Ids expected values in "
                                              r"\[0, 3\), but received 3"):
        check_output(case)


def test_lookup_table_grad_sums_repeated_ids_and_skips_padding():
    case = OpCase("lookup_table_v2", {"W": r(3, 2), "Ids": np.array([2, 0, 2, 1])},
                  attrs={"padding_idx": 1}, grad=["W"])
    check_grad(case)


def test_one_hot_v2_out_of_range_raises():
    case = OpCase("one_hot_v2", {"X": np.array([0, 4])}, attrs={"depth": 4})
    with pytest.raises(InvalidArgument, match=r"one_hot_v2: X expected values in \[0, 4\), "
                                              r"but received 4"):
        check_output(case)


def test_one_hot_v2_depth_tensor_leaves_depth_unknown():
    op = _append("one_hot_v2", {"X": ((5,), "int64"), "depth_tensor": ((1,), "int32")},
                 ["Out"])
    assert op.block.var("out_out").shape == (5, -1)


def test_gather_index_shape_is_checked():
    with pytest.raises(InvalidArgument, match="gather: input 'Index' expected shape"):
        _append("gather", {"X": ((4, 3), "float32"), "Index": ((2, 2), "int64")}, ["Out"])


def test_gather_grad_op_slots():
    from fluid_nb.ops import registry
    op = _append("gather", {"X": ((4, 3), "float32"), "Index": ((2,), "int64")}, ["Out"])
    (spec,) = registry.make_grad_ops(op)
    assert spec.type == "gather_grad"
    assert sorted(spec.inputs) == ["Index", "Out@GRAD", "X"]
