"""Tensor creation and shape ops against NumPy, with float64 finite-difference gradients."""
import numpy as np
import pytest

import fluid_nb as fluid

from fluid_nb.errors import InvalidArgument
from fluid_nb.tensor.dtypes import VarType
from fluid_nb.ops import registry

from .op_test import EachLoD, OpCase, build, check_output, run_case, table_tests

rng = np.random.RandomState(0)

FP32, FP64, INT32, INT64, BOOL = 5, 6, 2, 3, 0


def r(*shape, dtype="float32"):
    return rng.uniform(-1, 1, shape).astype(dtype)


def ints(*values, dtype="int64"):
    return np.array(values, dtype=dtype)


def _in_range(lo, hi, shape):
    def check(outs, inputs, attrs):
        out = np.asarray(outs["Out"])
        assert out.shape == shape
        assert out.min() >= lo and out.max() < hi
    return check


def _diag_check(outs, inputs, attrs):
    flat = np.asarray(outs["Out"]).reshape(-1)
    np.testing.assert_array_equal(flat[[0, 5, 10]], [7.0, 7.0, 7.0])
    assert (np.delete(flat, [0, 5, 10]) < 1).all()


def _normal_check(outs, inputs, attrs):
    out = np.asarray(outs["Out"])
    assert out.shape == (100, 50) and out.dtype == np.float64
    assert abs(out.mean() - 2.0) < 0.05 and abs(out.std() - 0.5) < 0.05


def _split_ref(x, bounds, axis):
    return {"Out": np.split(x, bounds, axis=axis)}


X234 = r(2, 3, 4)
X23 = r(2, 3)
SEQ = r(5, 2)  # rows carrying LoD [[0, 2, 5]]

CREATION_CASES = [
    OpCase("fill_constant", {}, attrs={"shape": [2, 3], "value": 1.5},
           ref=lambda i, a: {"Out": np.full((2, 3), 1.5, "float32")}, name="value"),
    OpCase("fill_constant", {}, attrs={"shape": [2], "value": 1.0, "str_value": "-inf"},
           ref=lambda i, a: {"Out": np.full((2,), -np.inf, "float32")}, name="str_value_wins"),
    OpCase("fill_constant", {}, attrs={"shape": [3], "dtype": INT64, "str_value": "7",
                                       "value": 7.0},
           ref=lambda i, a: {"Out": np.full((3,), 7, "int64")}, name="int64"),
    OpCase("fill_constant", {}, attrs={"shape": [], "value": 2.0, "dtype": FP64},
           ref=lambda i, a: {"Out": np.array(2.0)}, name="zero_dim"),
    OpCase("fill_constant", {}, attrs={"shape": [2], "value": -0.0, "dtype": FP64},
           ref=lambda i, a: {"Out": np.array([-0.0, -0.0])}, name="negative_zero",
           check=lambda outs, inputs, attrs: np.testing.assert_array_equal(
               np.signbit(outs["Out"]), [True, True])),
    OpCase("fill_constant", {}, attrs={"shape": [2], "str_value": "nan"},
           ref=lambda i, a: {"Out": np.full((2,), np.nan, "float32")}, name="nan"),
    OpCase("fill_constant", {}, attrs={"shape": [3], "value": -2.7, "dtype": INT32},
           ref=lambda i, a: {"Out": np.full((3,), -2, "int32")}, name="int_truncates"),
    OpCase("fill_constant", {}, attrs={"shape": [2], "value": 0.5, "dtype": BOOL},
           ref=lambda i, a: {"Out": np.ones((2,), bool)}, name="bool"),
    OpCase("fill_constant", {"ValueTensor": ints(4.5, dtype="float32")},
           attrs={"shape": [2, 2], "value": 1.0, "str_value": "1.0"},
           ref=lambda i, a: {"Out": np.full((2, 2), 4.5, "float32")}, name="value_tensor"),
    OpCase("fill_constant", {"ShapeTensor": ints(2, 3, dtype="int32")}, attrs={"value": 3.0},
           ref=lambda i, a: {"Out": np.full((2, 3), 3.0, "float32")}, name="shape_tensor"),
    OpCase("fill_constant", {"ShapeTensorList": [ints(2), ints(3)]},
           attrs={"shape": [-1, 3], "value": 1.0, "dtype": INT32},
           ref=lambda i, a: {"Out": np.ones((2, 3), "int32")}, name="shape_tensor_list"),
    OpCase("fill_any_like", {"X": X23}, attrs={"value": 3.0},
           ref=lambda i, a: {"Out": np.full((2, 3), 3.0, "float32")}, name="same_dtype"),
    OpCase("fill_any_like", {"X": X23}, attrs={"value": 2.0, "dtype": INT64},
           ref=lambda i, a: {"Out": np.full((2, 3), 2, "int64")}, name="int64"),
    OpCase("fill_any_like", {"X": SEQ}, attrs={"value": 1.0}, lod={"X": [[0, 2, 5]]},
           ref=lambda i, a: {"Out": (np.ones((5, 2), "float32"), [[0, 2, 5]])}, name="lod"),
    OpCase("fill_any_like", {"X": ints(1, 2, dtype="int32")}, attrs={"value": -2.0 ** 31},
           ref=lambda i, a: {"Out": np.full(2, -2 ** 31, "int32")}, name="int32_lowest"),
    OpCase("fill_any_like", {"X": X23}, attrs={"value": float("-inf")},
           ref=lambda i, a: {"Out": np.full((2, 3), -np.inf, "float32")}, name="float_inf"),
    OpCase("fill_zeros_like", {"X": ints(1, 2, 3)},
           ref=lambda i, a: {"Out": np.zeros(3, "int64")}),
    OpCase("uniform_random", {}, attrs={"shape": [30, 20], "min": -2.0, "max": 3.0, "seed": 3},
           check=_in_range(-2.0, 3.0, (30, 20)), name="range"),
    OpCase("uniform_random", {}, attrs={"shape": [4, 4], "min": 0.0, "max": 1.0, "seed": 1,
                                        "diag_num": 3, "diag_step": 4, "diag_val": 7.0},
           check=_diag_check, name="diag"),
    OpCase("uniform_random", {"ShapeTensorList": [ints(3), ints(2)]}, attrs={"seed": 2},
           check=_in_range(-1.0, 1.0, (3, 2)), name="shape_tensor_list"),
    OpCase("gaussian_random", {}, attrs={"shape": [100, 50], "mean": 2.0, "std": 0.5,
                                         "seed": 5, "dtype": FP64},
           check=_normal_check),
    OpCase("assign", {"X": X234}, ref=lambda i, a: {"Out": i["X"]}, grad=["X"]),
    OpCase("assign", {"X": SEQ}, lod={"X": [[0, 2, 5]]},
           ref=lambda i, a: {"Out": (i["X"], [[0, 2, 5]])}, name="lod"),
    OpCase("cast", {"X": np.array([-1.7, 2.9, 0.0], "float32")},
           attrs={"in_dtype": FP32, "out_dtype": INT32},
           ref=lambda i, a: {"Out": np.array([-1, 2, 0], "int32")}, name="truncates"),
    OpCase("cast", {"X": np.array([-1.5, 0.0, 3.0], "float32")},
           attrs={"in_dtype": FP32, "out_dtype": BOOL},
           ref=lambda i, a: {"Out": np.array([True, False, True])}, name="to_bool"),
    OpCase("cast", {"X": X23}, attrs={"in_dtype": FP32, "out_dtype": FP64},
           ref=lambda i, a: {"Out": i["X"].astype("float64")}, grad=["X"], name="fp64"),
    OpCase("cast", {"X": SEQ}, attrs={"in_dtype": FP32, "out_dtype": FP64},
           lod={"X": [[0, 2, 5]]},
           ref=lambda i, a: {"Out": (i["X"].astype("float64"), [[0, 2, 5]])}, name="lod"),
    OpCase("increment", {"X": ints(5)}, ref=lambda i, a: {"Out": ints(6)}, name="int64"),
    OpCase("increment", {"X": ints(5)}, attrs={"step": 1.5},
           ref=lambda i, a: {"Out": ints(6)}, name="int_step_truncated"),
    OpCase("increment", {"X": np.array([1.0], "float32")}, attrs={"step": -2.5},
           ref=lambda i, a: {"Out": np.array([-1.5], "float32")}, name="float"),
]



def test_fill_zeros_like_of_tensors_and_arrays_keeps_shapes_dtypes_and_lod():
    from fluid_nb.tensor.tensor import LoDTensor, LoDTensorArray
    kernel = registry.get("fill_zeros_like").kernel_for("cpu")

    class Ctx:
        attrs = {}
        xp = np
        cache = {}
    items = [LoDTensor(r(3, 2), [[0, 1, 3]]), LoDTensor(ints(4, 5, dtype="int32")),
             LoDTensor(np.asfortranarray(r(2, 3)).astype("float64")),
             LoDTensor(np.array(2.5, "float32"))]
    for x in (LoDTensorArray(items), LoDTensorArray(), *items):
        got = kernel(Ctx, x)
        assert type(got) is type(x)
        if isinstance(x, LoDTensorArray):
            assert len(got) == len(x)
        pairs = zip(got, x) if isinstance(x, LoDTensorArray) else [(got, x)]
        for out, t in pairs:
            want = np.zeros_like(t.array)
            np.testing.assert_array_equal(out.array, want)
            assert out.array.dtype == want.dtype and out.array.shape == want.shape
            assert out.lod() == t.lod() and out.array is not t.array


def test_increment_reruns_on_other_dtypes_and_shapes():
    """The op keeps its step converted to the last X's type and shape; another X gets its
    own."""
    kernel = registry.get("increment").kernel_for("cpu")

    class Ctx:
        attrs = {"step": 1.5}
        xp = np
        cache = {}
    for x, want in ((ints(5), ints(6)), (ints(5), ints(6)),
                    (np.array([[2.0]], "float32"), np.array([[3.5]], "float32")),
                    (np.array([7], "int32"), np.array([8], "int32")),
                    (np.array([1.0], "float64"), np.array([2.5], "float64"))):
        got = kernel(Ctx, x)
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert x.tolist() != got.tolist()  # X itself is not changed


A, B, C = r(2, 3), r(2, 1), r(2, 2)

SHAPE_CASES = [
    OpCase("concat", {"X": [A, B, C]}, attrs={"axis": 1},
           ref=lambda i, a: {"Out": np.concatenate(i["X"], axis=1)}, grad=["X"], name="axis1"),
    OpCase("concat", {"X": [A, r(1, 3)]}, attrs={"axis": -2},
           ref=lambda i, a: {"Out": np.concatenate(i["X"], axis=0)}, grad=["X"],
           name="negative_axis"),
    OpCase("concat", {"X": [A, C], "AxisTensor": ints(1, dtype="int32")},
           ref=lambda i, a: {"Out": np.concatenate(i["X"], axis=1)}, name="axis_tensor"),
    OpCase("concat", {"X": [SEQ, SEQ]}, attrs={"axis": 1}, lod={"X": [[0, 2, 5]]},
           ref=lambda i, a: {"Out": (np.concatenate(i["X"], 1), [[0, 2, 5]])}, name="lod"),
    # joined rows: the sequences of each input, one after another (offsets shifted)
    OpCase("concat", {"X": [SEQ, SEQ[:3]]}, lod={"X": EachLoD([[[0, 2, 5]], [[0, 1, 1, 3]]])},
           ref=lambda i, a: {"Out": (np.concatenate(i["X"]), [[0, 2, 5, 6, 6, 8]])},
           grad=["X"], name="rows_join_lods"),
    OpCase("concat", {"X": [SEQ[:3], SEQ]},
           lod={"X": EachLoD([[[0, 1, 3], [0, 1, 2, 3]], [[0, 2, 3], [0, 2, 4, 5]]])},
           ref=lambda i, a: {"Out": (np.concatenate(i["X"]),
                                     [[0, 1, 3, 5, 6], [0, 1, 2, 3, 5, 7, 8]])},
           name="rows_join_two_level_lods"),
    OpCase("concat", {"X": [SEQ, SEQ[:3]]}, lod={"X": EachLoD([[[0, 2, 5]], None])},
           ref=lambda i, a: {"Out": (np.concatenate(i["X"]), [[0, 2, 5]])},
           name="rows_one_without_lod"),
    OpCase("split", {"X": r(2, 6)}, attrs={"axis": 1, "num": 3}, outputs={"Out": 3},
           ref=lambda i, a: _split_ref(i["X"], [2, 4], 1), grad=["X"], grad_outputs=["Out"],
           name="num"),
    OpCase("split", {"X": r(5, 2)}, attrs={"axis": 0, "sections": [2, -1]},
           outputs={"Out": 2}, ref=lambda i, a: _split_ref(i["X"], [2], 0), grad=["X"],
           grad_outputs=["Out"], name="sections_infer"),
    OpCase("split", {"X": r(2, 5), "SectionsTensorList": [ints(1, dtype="int32"),
                                                          ints(4, dtype="int32")]},
           attrs={"axis": 1, "sections": [-1, -1]}, outputs={"Out": 2},
           ref=lambda i, a: _split_ref(i["X"], [1], 1), name="sections_tensor"),
    OpCase("split", {"X": r(4, 2), "AxisTensor": ints(-1, dtype="int32")},
           attrs={"num": 2}, outputs={"Out": 2},
           ref=lambda i, a: _split_ref(i["X"], [1], 1), name="axis_tensor"),
    OpCase("reshape2", {"X": X234}, attrs={"shape": [0, -1]},
           ref=lambda i, a: {"Out": i["X"].reshape(2, 12)}, grad=["X"], name="copy_and_infer"),
    OpCase("reshape2", {"X": X234}, attrs={"shape": [4, 3, 2]},
           ref=lambda i, a: {"Out": i["X"].reshape(4, 3, 2)}, grad=["X"], name="explicit"),
    OpCase("reshape2", {"X": X234, "Shape": ints(6, 4, dtype="int32")},
           ref=lambda i, a: {"Out": i["X"].reshape(6, 4)}, name="shape_input"),
    OpCase("reshape2", {"X": X234, "ShapeTensor": [ints(3, dtype="int32"),
                                                   ints(8, dtype="int32")]},
           attrs={"shape": [-1, -1]},
           ref=lambda i, a: {"Out": i["X"].reshape(3, 8)}, name="shape_tensor"),
    OpCase("reshape2", {"X": SEQ}, attrs={"shape": [5, 2, 1]}, lod={"X": [[0, 2, 5]]},
           ref=lambda i, a: {"Out": (i["X"].reshape(5, 2, 1), [[0, 2, 5]])},
           name="lod_kept"),
    OpCase("reshape2", {"X": SEQ}, attrs={"shape": [2, 5]}, lod={"X": [[0, 2, 5]]},
           ref=lambda i, a: {"Out": (i["X"].reshape(2, 5), [])}, name="lod_dropped"),
    OpCase("transpose2", {"X": X234}, attrs={"axis": [1, 2, 0]},
           ref=lambda i, a: {"Out": i["X"].transpose(1, 2, 0)}, grad=["X"]),
    OpCase("transpose2", {"X": X23}, attrs={"axis": [-1, 0]},
           ref=lambda i, a: {"Out": i["X"].T}, grad=["X"], name="negative_axis"),
    OpCase("squeeze2", {"X": r(1, 3, 1)}, ref=lambda i, a: {"Out": i["X"].reshape(3)},
           grad=["X"], name="all"),
    OpCase("squeeze2", {"X": r(1, 3, 1, 2)}, attrs={"axes": [0, -2, 1]},
           ref=lambda i, a: {"Out": i["X"].reshape(3, 2)}, grad=["X"],
           name="listed_non_one_kept"),
    OpCase("squeeze2", {"X": SEQ.reshape(5, 1, 2)}, attrs={"axes": [1]},
           lod={"X": [[0, 2, 5]]},
           ref=lambda i, a: {"Out": (i["X"].reshape(5, 2), [[0, 2, 5]])}, name="lod"),
    OpCase("unsqueeze2", {"X": X23}, attrs={"axes": [0, 2]},
           ref=lambda i, a: {"Out": i["X"].reshape(1, 2, 1, 3)}, grad=["X"]),
    OpCase("unsqueeze2", {"X": X23}, attrs={"axes": [-1, 0]},
           ref=lambda i, a: {"Out": i["X"].reshape(1, 2, 3, 1)}, grad=["X"],
           name="negative"),
    OpCase("unsqueeze2", {"X": X23, "AxesTensor": ints(1, dtype="int32")},
           ref=lambda i, a: {"Out": i["X"].reshape(2, 1, 3)}, name="axes_tensor"),
    OpCase("unsqueeze2", {"X": X23, "AxesTensorList": [ints(0), ints(3)]},
           ref=lambda i, a: {"Out": i["X"].reshape(1, 2, 3, 1)}, name="axes_tensor_list"),
    OpCase("unsqueeze2", {"X": np.array(3.0, "float32")}, attrs={"axes": [0]},
           ref=lambda i, a: {"Out": i["X"].reshape(1)}, name="zero_dim"),
    OpCase("stack", {"X": [A, X23, A]}, ref=lambda i, a: {"Y": np.stack(i["X"])},
           grad=["X"]),
    OpCase("stack", {"X": [A, X23]}, attrs={"axis": -1},
           ref=lambda i, a: {"Y": np.stack(i["X"], axis=-1)}, grad=["X"], name="last"),
    OpCase("stack", {"X": [SEQ, SEQ]}, attrs={"axis": 1}, lod={"X": [[0, 2, 5]]},
           ref=lambda i, a: {"Y": (np.stack(i["X"], 1), [[0, 2, 5]])}, name="lod"),
    OpCase("slice", {"Input": X234}, attrs={"axes": [0, 2], "starts": [-1, 1],
                                            "ends": [100, -1]},
           ref=lambda i, a: {"Out": i["Input"][1:, :, 1:3]}, grad=["Input"], name="clipped"),
    OpCase("slice", {"Input": X234}, attrs={"axes": [1], "starts": [1], "ends": [2],
                                            "decrease_axis": [1]},
           ref=lambda i, a: {"Out": i["Input"][:, 1, :]}, grad=["Input"], name="decrease"),
    OpCase("slice", {"Input": r(4)}, attrs={"axes": [0], "starts": [2], "ends": [3],
                                            "decrease_axis": [0]},
           ref=lambda i, a: {"Out": i["Input"][2]}, grad=["Input"], name="to_zero_dim"),
    OpCase("slice", {"Input": X234}, attrs={"axes": [1], "starts": [3], "ends": [5]},
           ref=lambda i, a: {"Out": i["Input"][:, 3:5]}, name="empty"),
    OpCase("slice", {"Input": X234, "StartsTensor": ints(1, 0, dtype="int32"),
                     "EndsTensorList": [ints(2, dtype="int32"), ints(3, dtype="int32")]},
           attrs={"axes": [0, 2], "starts": [-1, -1], "ends": [-1, -1],
                  "infer_flags": [-1, -1]},
           ref=lambda i, a: {"Out": i["Input"][1:2, :, 0:3]}, grad=["Input"],
           name="tensor_bounds"),
    OpCase("slice", {"Input": SEQ}, attrs={"axes": [1], "starts": [0], "ends": [1]},
           lod={"Input": [[0, 2, 5]]},
           ref=lambda i, a: {"Out": (i["Input"][:, :1], [[0, 2, 5]])}, name="lod_kept"),
    OpCase("slice", {"Input": SEQ}, attrs={"axes": [0], "starts": [0], "ends": [2]},
           lod={"Input": [[0, 2, 5]]},
           ref=lambda i, a: {"Out": (i["Input"][:2], [])}, name="lod_dropped"),
]

LAYOUT_CASES = [
    OpCase("flatten2", {"X": X234}, ref=lambda i, a: {"Out": i["X"].reshape(2, 12)},
           grad=["X"]),
    OpCase("flatten2", {"X": X234}, attrs={"axis": 0},
           ref=lambda i, a: {"Out": i["X"].reshape(1, 24)}, grad=["X"], name="axis0"),
    OpCase("flatten2", {"X": X234}, attrs={"axis": 3},
           ref=lambda i, a: {"Out": i["X"].reshape(24, 1)}, name="axis_rank"),
    OpCase("flatten2", {"X": SEQ.reshape(5, 2, 1)}, lod={"X": [[0, 2, 5]]},
           ref=lambda i, a: {"Out": (i["X"].reshape(5, 2), [[0, 2, 5]])}, name="lod_kept"),
    OpCase("flatten", {"X": X234}, attrs={"axis": 2},
           ref=lambda i, a: {"Out": i["X"].reshape(6, 4)}, grad=["X"]),
    OpCase("flatten_contiguous_range", {"X": X234}, attrs={"start_axis": 1, "stop_axis": 2},
           ref=lambda i, a: {"Out": i["X"].reshape(2, 12)}, grad=["X"]),
    OpCase("flatten_contiguous_range", {"X": X234.reshape(2, 3, 2, 2)},
           attrs={"start_axis": 1, "stop_axis": -2},
           ref=lambda i, a: {"Out": i["X"].reshape(2, 6, 2)}, grad=["X"], name="middle"),
    OpCase("flatten_contiguous_range", {"X": X234}, attrs={"start_axis": 0, "stop_axis": -1},
           ref=lambda i, a: {"Out": i["X"].reshape(24)}, name="all"),
    OpCase("flatten_contiguous_range", {"X": X234}, attrs={"start_axis": 2, "stop_axis": 2},
           ref=lambda i, a: {"Out": i["X"]}, name="one_axis"),
    OpCase("flatten_contiguous_range", {"X": np.array(2.5, "float32")},
           attrs={"start_axis": 0, "stop_axis": -1},
           ref=lambda i, a: {"Out": i["X"].reshape(1)}, name="scalar"),
    OpCase("flatten_contiguous_range", {"X": SEQ.reshape(5, 2, 1)}, lod={"X": [[0, 2, 5]]},
           attrs={"start_axis": 1, "stop_axis": 2},
           ref=lambda i, a: {"Out": (i["X"].reshape(5, 2), [[0, 2, 5]])}, name="lod_kept"),
    OpCase("unstack", {"X": X234}, attrs={"axis": 1, "num": 3},
           ref=lambda i, a: {"Y": [i["X"][:, k] for k in range(3)]}, grad=["X"]),
    OpCase("unstack", {"X": X234}, attrs={"axis": -1},
           ref=lambda i, a: {"Y": [i["X"][..., k] for k in range(4)]}, grad=["X"],
           name="last_axis"),
]

CASES = CREATION_CASES + SHAPE_CASES + LAYOUT_CASES


(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


# --- focused tests -------------------------------------------------------------------------
def _grad_specs(case):
    _, op, _, _ = build(case)
    return registry.make_grad_ops(op)


def test_xshape_is_zero_size_with_x_shape():
    _, _, outs = run_case(OpCase("reshape2", {"X": X234}, attrs={"shape": [6, 4]}))
    xshape = np.asarray(outs["XShape"])
    assert xshape.shape == (0, 2, 3, 4) and xshape.dtype == np.float32


def test_reshape_like_grads_need_only_xshape_and_out_grad():
    for op, attrs in [("reshape2", {"shape": [6, 4]}), ("transpose2", {"axis": [2, 0, 1]}),
                      ("squeeze2", {}), ("unsqueeze2", {"axes": [0]})]:
        (spec,) = _grad_specs(OpCase(op, {"X": X234}, attrs=attrs))
        assert spec.type == op + "_grad"
        assert sorted(spec.inputs) == ["Out@GRAD", "XShape"], spec
        assert list(spec.outputs) == ["X@GRAD"]


def test_cast_grad_casts_back():
    (spec,) = _grad_specs(OpCase("cast", {"X": X23}, attrs={"in_dtype": FP32,
                                                             "out_dtype": FP64}))
    assert spec.type == "cast"
    assert spec.attrs["in_dtype"] == FP64 and spec.attrs["out_dtype"] == FP32
    assert spec.inputs == {"X": ["out_out@GRAD"]} and spec.outputs == {"Out": ["x@GRAD"]}


def test_assign_and_split_grads_reuse_forward_ops():
    (spec,) = _grad_specs(OpCase("assign", {"X": X23}))
    assert spec.type == "assign" and spec.inputs == {"X": ["out_out@GRAD"]}
    (spec,) = _grad_specs(OpCase("split", {"X": r(2, 4)}, attrs={"axis": 1, "num": 2},
                                 outputs={"Out": 2}))
    assert spec.type == "concat" and spec.attrs == {"axis": 1}
    assert spec.inputs == {"X": ["out_out_0@GRAD", "out_out_1@GRAD"]}


@pytest.mark.parametrize("x, attrs, words", [
    (ints(1, 2, dtype="int32"), {"value": 1e12}, ["1000000000000.0", "2147483647", "int32"]),
    (ints(1, 2, dtype="int32"), {"value": 2.0 ** 31}, ["2147483648.0", "int32"]),
    (X23, {"value": 300.0, "dtype": 20}, ["300.0", "[0, 255]", "uint8"]),
    (X23, {"value": float("nan"), "dtype": INT64}, ["nan", "int64"]),
    (X23, {"value": 1e39, "dtype": FP32}, ["1e+39", "float32"]),
])
def test_fill_any_like_refuses_a_value_its_dtype_cannot_hold(x, attrs, words):
    with pytest.raises(InvalidArgument) as info:
        run_case(OpCase("fill_any_like", {"X": x}, attrs=attrs))
    message = str(info.value)
    assert "fill_any_like: attribute 'value' expected a value in" in message, message
    for word in words:
        assert word in message, message


def test_concat_of_lods_with_other_level_counts_names_the_input():
    case = OpCase("concat", {"X": [SEQ, SEQ]},
                  lod={"X": EachLoD([[[0, 2, 5]], [[0, 1, 3], [0, 2, 3, 5]]])})
    with pytest.raises(InvalidArgument, match=r"concat: .*LoD levels of X\[1\] expected 1"):
        run_case(case)


def _joined_array(op, slot, attrs, items):
    """``op`` over one tensor array holding ``items`` (written by write_to_array)."""
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="arr", type=VarType.LOD_TENSOR_ARRAY, dtype="float32")
    feed = {}
    for k, (value, lod) in enumerate(items):
        block.create_var(name=f"x{k}", shape=(-1,) + value.shape[1:], dtype=value.dtype,
                         lod_level=len(lod or ()))
        block.create_var(name=f"i{k}", shape=(1,), dtype="int64")
        feed[f"x{k}"] = (value, lod) if lod else value
        feed[f"i{k}"] = np.array([k], "int64")
        block.append_op(type="write_to_array", inputs={"X": [f"x{k}"], "I": [f"i{k}"]},
                        outputs={"Out": ["arr"]})
    op = block.append_op(type=op, inputs={"X": ["arr"]}, outputs={slot: ["out"]}, attrs=attrs)
    fluid.verify(program)
    (out,) = fluid.Executor(fluid.CPUPlace()).run(program, feed=feed, fetch_list=["out"],
                                                  scope=fluid.Scope(), return_numpy=False)
    return block.var("out").shape, out


def test_concat_of_a_tensor_array_joins_its_items():
    shape, out = _joined_array("concat", "Out", {"axis": 0},
                               [(SEQ, [[0, 2, 5]]), (SEQ[:3], [[0, 3]])])
    assert shape == (-1, 2)
    np.testing.assert_array_equal(np.asarray(out), np.concatenate([SEQ, SEQ[:3]]))
    assert out.lod() == [[0, 2, 5, 8]]
    shape, out = _joined_array("concat", "Out", {"axis": 1}, [(X23, None), (X23, None)])
    assert shape == (-1, -1)
    np.testing.assert_array_equal(np.asarray(out), np.concatenate([X23, X23], 1))


def test_stack_of_a_tensor_array_stacks_its_items():
    shape, out = _joined_array("stack", "Y", {"axis": 1}, [(X23, None), (A, None), (X23, None)])
    assert shape == (-1, -1, 3)
    np.testing.assert_array_equal(np.asarray(out), np.stack([X23, A, X23], 1))


def test_concat_grad_keeps_positions_of_unwanted_inputs():
    case = OpCase("concat", {"X": [A, B]}, attrs={"axis": 1})
    _, op, _, _ = build(case)
    (spec,) = registry.make_grad_ops(op, no_grad_set={"x_0"})
    assert spec.outputs == {"X@GRAD": ["@EMPTY@", "x_1@GRAD"]}


def test_random_ops_are_stateful_and_seeded():
    for op in ("uniform_random", "gaussian_random"):
        assert "stateful" in registry.get(op).traits
    case = OpCase("uniform_random", {}, attrs={"shape": [5], "seed": 11})
    first = np.asarray(run_case(case)[2]["Out"])
    again = np.asarray(run_case(case)[2]["Out"])
    np.testing.assert_array_equal(first, again)
    other = np.asarray(run_case(OpCase("uniform_random", {}, attrs={"shape": [5],
                                                                    "seed": 12}))[2]["Out"])
    assert not np.array_equal(first, other)


def test_fill_constant_of_float16_rounds_as_numpy_does():
    """fill_constant fills a float tensor with ``fill`` (NumPy's full is the same two steps
    behind a Python frame): float16's rounding and overflow are NumPy's (no native target
    has float16 kernels, so this case is the interpreter's alone)."""
    import warnings
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        small = fluid.layers.fill_constant([3], "float16", 0.1)
        large = fluid.layers.fill_constant([2], "float16", 1e10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (the cast's overflow, as NumPy's)
        got = fluid.Executor(fluid.CPUPlace()).run(main, fetch_list=[small, large])
    np.testing.assert_array_equal(got[0], np.full((3,), 0.1, "float16"))
    assert got[0].dtype == np.float16 and list(got[1]) == [np.inf, np.inf]


def test_fill_constant_defaults_match_paddle():
    opdef = registry.get("fill_constant")
    assert opdef.attrs["dtype"].default == int(VarType.FP32)
    assert opdef.attrs["shape"].type.name == "LONGS"
    assert opdef.attrs["place_type"].default == -1
    assert registry.get("fill_constant").grad is None


def test_assign_copies_lod_tensor_array():
    from fluid_nb.tensor.tensor import LoDTensor, LoDTensorArray
    kernel = registry.get("assign").kernel_for("cpu")
    src = LoDTensorArray([LoDTensor(np.ones(2), [[0, 1, 2]])])
    out = kernel(None, src)
    assert isinstance(out, LoDTensorArray) and out[0].lod() == [[0, 1, 2]]
    assert out[0].array is not src[0].array


def _bad(op, inputs, attrs, outputs=None):
    case = OpCase(op, inputs, attrs=attrs, outputs=outputs)
    with pytest.raises(InvalidArgument) as info:
        check_output(case)
    assert str(info.value).startswith(op) or f"'{op}'" in str(info.value), info.value
    return str(info.value)


@pytest.mark.parametrize("op,inputs,attrs,outputs,words", [
    ("reshape2", {"X": X234}, {"shape": [5, -1]}, None, "divides"),
    ("reshape2", {"X": X234}, {"shape": [-1, -1]}, None, "at most one -1"),
    ("reshape2", {"X": X234}, {"shape": [5, 5]}, None, "as many elements"),
    ("reshape2", {"X": X23}, {"shape": [0, 0, 0]}, None, "rank"),
    ("concat", {"X": [A, r(3, 3)]}, {"axis": 1}, None, "except along axis 1"),
    ("concat", {"X": [A, C]}, {"axis": 2}, None, "attribute 'axis'"),
    ("transpose2", {"X": X234}, {"axis": [0, 0, 1]}, None, "permutation"),
    ("flatten_contiguous_range", {"X": X234}, {"start_axis": 2, "stop_axis": 1}, None,
     "start_axis <= stop_axis"),
    ("flatten_contiguous_range", {"X": X234}, {"start_axis": 1, "stop_axis": 3}, None,
     "stop_axis"),
    ("transpose2", {"X": X234}, {"axis": [0, 1]}, None, "3 entries"),
    ("slice", {"Input": X234}, {"axes": [1], "starts": [2], "ends": [1]}, None, "end >= start"),
    ("slice", {"Input": X234}, {"axes": [3], "starts": [0], "ends": [1]}, None, "axes"),
    ("slice", {"Input": X234}, {"axes": [1], "starts": [0], "ends": [3],
                                "decrease_axis": [1]}, None, "size 1"),
    ("split", {"X": r(2, 5)}, {"axis": 1, "sections": [2, 2]}, {"Out": 2}, "summing to"),
    ("split", {"X": r(2, 5)}, {"axis": 1, "num": 2}, {"Out": 2}, "divisor"),
    ("stack", {"X": [A, C]}, {}, None, "shape of X[1]"),
    ("unsqueeze2", {"X": X23}, {"axes": [4]}, None, "attribute 'axes'"),
    ("cast", {"X": X23}, {"in_dtype": FP32}, None, "out_dtype"),
    ("fill_constant", {}, {"shape": [2, -3]}, None, "no less than 0"),
    ("fill_constant", {}, {"shape": [2], "dtype": 7}, None, "data type"),
    ("increment", {"X": ints(1, 2)}, {}, None, "one element"),
    ("uniform_random", {}, {"shape": [2], "min": 1.0, "max": 1.0}, None, "less than max"),
    ("uniform_random", {}, {"shape": [2], "diag_num": -1}, None, "attribute 'diag_num'"),
])
def test_errors_name_the_op(op, inputs, attrs, outputs, words):
    assert words in _bad(op, inputs, attrs, outputs)


@pytest.mark.parametrize("case, shapes", [
    (OpCase("slice", {"Input": X234, "StartsTensorList": [ints(1)], "EndsTensor": ints(3)},
            attrs={"axes": [2], "starts": [0], "ends": [1]}), {"Out": (2, 3, -1)}),
    (OpCase("split", {"X": X234, "SectionsTensorList": [ints(1, dtype="int32"),
                                                         ints(3, dtype="int32")]},
            attrs={"axis": 2, "sections": [-1, -1]}, outputs={"Out": 2}),
     {"Out": (2, 3, -1)}),
    (OpCase("split", {"X": X234, "AxisTensor": ints(1, dtype="int32")}, attrs={"num": 3},
            outputs={"Out": 3}), {"Out": (-1, -1, -1)}),
    (OpCase("unsqueeze2", {"X": X23, "AxesTensor": ints(0, 2, dtype="int32")}),
     {"Out": (-1, -1, -1, -1)}),
])
def test_values_known_only_from_tensors_infer_as_unknown_dims(case, shapes):
    """Bounds, sections, axes given as tensors are read at run time: the dims they decide
    are -1 at build time, and the kernel then fills them in."""
    program, op, _, outputs = build(case)
    for slot, shape in shapes.items():
        for name in op.outputs[slot]:
            assert program.global_block().var(name).shape == shape
    check_output(case)


def test_concat_grad_of_a_tensor_array_is_a_tensor_array_of_slices():
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="arr", type=VarType.LOD_TENSOR_ARRAY, dtype="float32")
    items = [(SEQ, [[0, 2, 5]]), (SEQ[:3], [[0, 3]])]
    feed = {}
    for k, (value, lod) in enumerate(items):
        block.create_var(name=f"x{k}", shape=(-1, 2), dtype="float32", lod_level=1)
        block.create_var(name=f"i{k}", shape=(1,), dtype="int64")
        feed[f"x{k}"], feed[f"i{k}"] = (value, lod), np.array([k], "int64")
        block.append_op(type="write_to_array", inputs={"X": [f"x{k}"], "I": [f"i{k}"]},
                        outputs={"Out": ["arr"]})
    op = block.append_op(type="concat", inputs={"X": ["arr"]}, outputs={"Out": ["out"]},
                         attrs={"axis": 0})
    block.create_var(name="out@GRAD", shape=(-1, 2), dtype="float32")
    (spec,) = registry.make_grad_ops(op)
    block.append_op(type=spec.type, inputs=spec.inputs, outputs=spec.outputs, attrs=spec.attrs)
    assert block.var("arr@GRAD").type == VarType.LOD_TENSOR_ARRAY
    block.var("arr@GRAD").persistable = True  # kept in the scope for the checks below
    dout = np.arange(16, dtype="float32").reshape(8, 2)
    feed["out@GRAD"] = dout
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(program, feed=feed, scope=scope)
    grads = scope.find_var("arr@GRAD").value
    assert len(grads) == 2
    np.testing.assert_array_equal(np.asarray(grads[0]), dout[:5])
    np.testing.assert_array_equal(np.asarray(grads[1]), dout[5:])
    assert grads[0].lod() == [[0, 2, 5]] and grads[1].lod() == [[0, 3]]


def test_stack_grad_of_a_tensor_array_is_a_tensor_array_of_slices():
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="arr", type=VarType.LOD_TENSOR_ARRAY, dtype="float32")
    feed = {}
    for k, value in enumerate([X23, A, X23 * 2]):
        block.create_var(name=f"x{k}", shape=(2, 3), dtype="float32")
        block.create_var(name=f"i{k}", shape=(1,), dtype="int64")
        feed[f"x{k}"], feed[f"i{k}"] = value, np.array([k], "int64")
        block.append_op(type="write_to_array", inputs={"X": [f"x{k}"], "I": [f"i{k}"]},
                        outputs={"Out": ["arr"]})
    op = block.append_op(type="stack", inputs={"X": ["arr"]}, outputs={"Y": ["y"]},
                         attrs={"axis": 1})
    block.create_var(name="y@GRAD", shape=(2, 3, 3), dtype="float32")
    (spec,) = registry.make_grad_ops(op)
    block.append_op(type=spec.type, inputs=spec.inputs, outputs=spec.outputs, attrs=spec.attrs)
    assert block.var("arr@GRAD").type == VarType.LOD_TENSOR_ARRAY
    block.var("arr@GRAD").persistable = True
    dy = np.arange(18, dtype="float32").reshape(2, 3, 3)
    feed["y@GRAD"] = dy
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(program, feed=feed, scope=scope)
    grads = scope.find_var("arr@GRAD").value
    assert len(grads) == 3
    for k in range(3):
        np.testing.assert_array_equal(np.asarray(grads[k]), dy[:, k])


def test_stack_grad_of_tensors_takes_only_the_output_gradient():
    (spec,) = _grad_specs(OpCase("stack", {"X": [X23, A]}))
    assert spec.type == "stack_grad" and list(spec.inputs) == ["Y@GRAD"]


# tensor arrays cannot be fed by the op table: the tests below pin tensor_array_to_tensor


def _array_to_tensor_program(items, attrs):
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="arr", type=VarType.LOD_TENSOR_ARRAY, dtype="float32")
    feed = {}
    for k, value in enumerate(items):
        block.create_var(name=f"x{k}", shape=(-1, 3), dtype="float32")
        block.create_var(name=f"i{k}", shape=(1,), dtype="int64")
        feed[f"x{k}"], feed[f"i{k}"] = value, np.array([k], "int64")
        block.append_op(type="write_to_array", inputs={"X": [f"x{k}"], "I": [f"i{k}"]},
                        outputs={"Out": ["arr"]})
    op = block.append_op(type="tensor_array_to_tensor", inputs={"X": ["arr"]},
                         outputs={"Out": ["out"], "OutIndex": ["index"]}, attrs=attrs)
    return program, op, feed


@pytest.mark.parametrize("attrs, join", [
    ({"axis": 0}, lambda xs: np.concatenate(xs, 0)),
    ({"axis": 1, "use_stack": True}, lambda xs: np.stack(xs, 1)),
])
def test_tensor_array_to_tensor_joins_items_and_splits_the_gradient(attrs, join):
    items = [X23, A, X23 * 3] if attrs.get("use_stack") else [X23, A[:1], X23 * 3]
    program, op, feed = _array_to_tensor_program(items, attrs)
    block = program.global_block()
    (spec,) = registry.make_grad_ops(op)
    want = join(items)
    block.create_var(name="out@GRAD", shape=want.shape, dtype="float32")
    block.append_op(type=spec.type, inputs=spec.inputs, outputs=spec.outputs, attrs=spec.attrs)
    assert block.var("arr@GRAD").type == VarType.LOD_TENSOR_ARRAY
    block.var("arr@GRAD").persistable = True
    dout = rng.uniform(-1, 1, want.shape).astype("float32")
    feed["out@GRAD"] = dout
    scope = fluid.Scope()
    out, index = fluid.Executor(fluid.CPUPlace()).run(
        program, feed=feed, fetch_list=["out", "index"], scope=scope)
    np.testing.assert_array_equal(out, want)
    sizes = [1] * 3 if attrs.get("use_stack") else [2, 1, 2]
    np.testing.assert_array_equal(index, np.array(sizes, "int32"))
    grads = scope.find_var("arr@GRAD").value
    if attrs.get("use_stack"):
        expected = [dout[:, k] for k in range(3)]
    else:
        expected = np.split(dout, [2, 3], axis=0)
    for got, piece in zip(grads, expected):
        np.testing.assert_array_equal(np.asarray(got), piece)
