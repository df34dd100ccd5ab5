"""Arithmetic ops against NumPy, with float64 finite-difference gradients."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument
from fluid_nb.tensor.tensor import LoDTensor, SelectedRows
from fluid_nb.ops import registry
from fluid_nb.proto.paddle_versions import PADDLE_VERSION

from .op_test import OpCase, build, table_tests

rng = np.random.RandomState(0)


def r(*shape, dtype="float32", low=-1, high=1):
    return rng.uniform(low, high, shape).astype(dtype)


def apart(*shape):
    """Values in [-1, 1] at least 0.05 apart from each other (no ties for max/min)."""
    n = int(np.prod(shape))
    values = np.linspace(-1, 1, n) + rng.uniform(-0.01, 0.01, n)
    return rng.permutation(values).reshape(shape).astype("float32")


def reduce_ref(fn):
    def ref(i, a):
        x = i["X"]
        dims = a.get("dim", [0])
        if a.get("reduce_all") or not dims or len(dims) == x.ndim:
            axes = None
        else:
            axes = tuple(d % x.ndim for d in dims)
        return {"Out": np.asarray(fn(x, axis=axes, keepdims=a.get("keep_dim", False)))}
    return ref


def matmul_ref(i, a):
    x, y = i["X"], i["Y"]
    x = x.reshape(1, -1) if x.ndim == 1 else x
    y = y.reshape(-1, 1) if y.ndim == 1 else y
    if a.get("transpose_X"):
        x = np.swapaxes(x, -1, -2)
    if a.get("transpose_Y"):
        y = np.swapaxes(y, -1, -2)
    return x, y


LOD_ROWS = apart(5, 3)  # two sequences, rows [0, 2) and [2, 5)

CASES = [
    # elementwise
    OpCase("elementwise_add", {"X": r(3, 4), "Y": r(3, 4)},
           ref=lambda i, a: {"Out": i["X"] + i["Y"]}, grad=["X", "Y"], name="same_shape"),
    OpCase("elementwise_add", {"X": r(2, 3, 4), "Y": r(3)}, attrs={"axis": 1},
           ref=lambda i, a: {"Out": i["X"] + i["Y"].reshape(1, 3, 1)}, grad=["X", "Y"],
           name="axis1"),
    OpCase("elementwise_add", {"X": r(2, 3, 4), "Y": r(4)},
           ref=lambda i, a: {"Out": i["X"] + i["Y"]}, grad=["X", "Y"], name="trailing"),
    OpCase("elementwise_sub", {"X": r(3, 4), "Y": r(3, 4)},
           ref=lambda i, a: {"Out": i["X"] - i["Y"]}, grad=["X", "Y"], name="same_shape"),
    OpCase("elementwise_sub", {"X": r(2, 3, 4), "Y": r(3, 4)}, attrs={"axis": 1},
           ref=lambda i, a: {"Out": i["X"] - i["Y"]}, grad=["X", "Y"], name="axis1"),
    OpCase("elementwise_mul", {"X": r(3, 4), "Y": r(3, 4)},
           ref=lambda i, a: {"Out": i["X"] * i["Y"]}, grad=["X", "Y"], name="same_shape"),
    OpCase("elementwise_mul", {"X": r(2, 3, 4), "Y": r(2, 3)}, attrs={"axis": 0},
           ref=lambda i, a: {"Out": i["X"] * i["Y"][:, :, None]}, grad=["X", "Y"],
           name="axis0"),
    OpCase("elementwise_div", {"X": r(3, 4), "Y": r(3, 4, low=0.5, high=2)},
           ref=lambda i, a: {"Out": i["X"] / i["Y"]}, grad=["X", "Y"], name="same_shape"),
    OpCase("elementwise_div", {"X": r(2, 3, 4), "Y": r(4, low=0.5, high=2)},
           ref=lambda i, a: {"Out": i["X"] / i["Y"]}, grad=["X", "Y"], name="trailing"),
    OpCase("elementwise_div", {"X": np.array([7, -7, 7, -7, 6], "int32"),
                               "Y": np.array([2, 2, -2, -2, 3], "int32")},
           ref=lambda i, a: {"Out": np.array([3, -3, -3, 3, 2], "int32")}, name="int_truncates"),
    OpCase("elementwise_max", {"X": apart(3, 4), "Y": apart(3, 4)},
           ref=lambda i, a: {"Out": np.maximum(i["X"], i["Y"])}, grad=["X", "Y"]),
    OpCase("elementwise_max", {"X": apart(2, 3), "Y": apart(3)},
           ref=lambda i, a: {"Out": np.maximum(i["X"], i["Y"])}, grad=["X", "Y"],
           name="broadcast"),
    OpCase("elementwise_min", {"X": apart(3, 4), "Y": apart(3, 4)},
           ref=lambda i, a: {"Out": np.minimum(i["X"], i["Y"])}, grad=["X", "Y"]),
    OpCase("elementwise_pow", {"X": r(3, 4, low=0.5, high=2), "Y": r(3, 4, low=-2, high=2)},
           ref=lambda i, a: {"Out": np.power(i["X"], i["Y"])}, grad=["X", "Y"], rtol=1e-4),
    OpCase("elementwise_pow", {"X": np.array([2, 3, -2], "int64"),
                               "Y": np.array([3, 2, 3], "int64")},
           ref=lambda i, a: {"Out": np.array([8, 9, -8], "int64")}, name="int"),
    # floordiv and mod round like Python's // and % (Paddle 2.6's outputs on these inputs)
    OpCase("elementwise_floordiv", {"X": np.array([7, -7, 7, -7], "int64"),
                                    "Y": np.array([2, 2, -2, -2], "int64")},
           ref=lambda i, a: {"Out": np.array([3, -4, -4, 3], "int64")}),
    OpCase("elementwise_floordiv", {"X": np.array([[7, -7], [9, -9]], "int32"),
                                    "Y": np.array([4, -4], "int32")},
           ref=lambda i, a: {"Out": np.floor_divide(i["X"], i["Y"])}, name="broadcast"),
    OpCase("elementwise_mod", {"X": np.array([7, -7, 7, -7], "int64"),
                               "Y": np.array([2, 2, -2, -2], "int64")},
           ref=lambda i, a: {"Out": np.array([1, 1, -1, -1], "int64")}),
    OpCase("elementwise_mod", {"X": np.array([7.5, -7.5, 7.5, -7.5], "float32"),
                               "Y": np.array([2, 2, -2, -2], "float32")},
           ref=lambda i, a: {"Out": np.array([1.5, 0.5, -0.5, -1.5], "float32")}, name="float"),
    # scale, sum, mean
    OpCase("scale", {"X": r(3, 4)}, attrs={"scale": 2.5, "bias": 0.5},
           ref=lambda i, a: {"Out": i["X"] * 2.5 + 0.5}, grad=["X"], name="bias_after"),
    OpCase("scale", {"X": r(3, 4)}, attrs={"scale": 2.5, "bias": 0.5, "bias_after_scale": False},
           ref=lambda i, a: {"Out": (i["X"] + 0.5) * 2.5}, grad=["X"], name="bias_before"),
    OpCase("scale", {"X": r(3, 4), "ScaleTensor": np.array([3.0], "float32")},
           attrs={"scale": 2.5},
           ref=lambda i, a: {"Out": i["X"] * 3.0}, grad=["X"], name="scale_tensor"),
    OpCase("scale", {"X": np.array([1, 2, 3], "int32")}, attrs={"scale": 2.0, "bias": 1.0},
           ref=lambda i, a: {"Out": np.array([3, 5, 7], "int32")}, name="int"),
    OpCase("sum", {"X": [r(2, 3), r(2, 3), r(2, 3)]},
           ref=lambda i, a: {"Out": i["X"][0] + i["X"][1] + i["X"][2]}, grad=["X"]),
    OpCase("sum", {"X": [r(2, 3)]}, ref=lambda i, a: {"Out": i["X"][0]}, name="one"),
    OpCase("sum", {"X": [r(4, 2), r(4, 2)]}, lod={"X": [[0, 1, 4]]},
           ref=lambda i, a: {"Out": (i["X"][0] + i["X"][1], [[0, 1, 4]])}, name="lod"),
    OpCase("mean", {"X": r(3, 4)}, ref=lambda i, a: {"Out": np.asarray(i["X"].mean())},
           grad=["X"]),
    # reductions
    OpCase("reduce_sum", {"X": r(2, 3, 4)}, attrs={"dim": [1]},
           ref=reduce_ref(np.sum), grad=["X"], name="dim1"),
    OpCase("reduce_sum", {"X": r(2, 3, 4)}, attrs={"dim": [0, -1], "keep_dim": True},
           ref=reduce_ref(np.sum), grad=["X"], name="keep_dim"),
    OpCase("reduce_sum", {"X": r(2, 3)}, attrs={"reduce_all": True},
           ref=reduce_ref(np.sum), grad=["X"], name="all"),
    OpCase("reduce_sum", {"X": r(2, 3)}, ref=reduce_ref(np.sum), grad=["X"], name="default"),
    OpCase("reduce_sum", {"X": np.arange(6, dtype="int32").reshape(2, 3)}, attrs={"dim": [1]},
           ref=lambda i, a: {"Out": np.array([3, 12], "int64")}, name="int32_to_int64"),
    OpCase("reduce_sum", {"X": r(2, 3)}, attrs={"dim": [1], "out_dtype": 6},
           ref=lambda i, a: {"Out": i["X"].astype("float64").sum(1)}, name="out_dtype"),
    OpCase("reduce_mean", {"X": r(2, 3, 4)}, attrs={"dim": [1, 2]},
           ref=reduce_ref(np.mean), grad=["X"], name="dims"),
    OpCase("reduce_mean", {"X": r(2, 3)}, attrs={"dim": [], "keep_dim": True},
           ref=reduce_ref(np.mean), grad=["X"], name="empty_dim_all"),
    OpCase("reduce_max", {"X": apart(2, 3, 4)}, attrs={"dim": [-1]},
           ref=reduce_ref(np.max), grad=["X"]),
    OpCase("reduce_max", {"X": apart(3, 4)}, attrs={"reduce_all": True},
           ref=reduce_ref(np.max), grad=["X"], name="all"),
    OpCase("reduce_min", {"X": apart(2, 3, 4)}, attrs={"dim": [0, 2], "keep_dim": True},
           ref=reduce_ref(np.min), grad=["X"]),
    # 0-D in, 0-D out: arrays, never NumPy scalars
    OpCase("sum", {"X": [np.array(1.5, "float32"), np.array(2.0, "float32")]},
           ref=lambda i, a: {"Out": np.array(3.5, "float32")}, name="two_0d"),
    OpCase("sum", {"X": [np.array(1.5), np.array(2.0), np.array(-1.0)]},
           ref=lambda i, a: {"Out": np.array(2.5)}, name="three_0d"),
    OpCase("elementwise_add", {"X": np.array(1.5), "Y": np.array(2.0)},
           ref=lambda i, a: {"Out": np.array(3.5)}, grad=["X", "Y"], name="0d"),
    # a gradient is laid out as its input: X@GRAD carries X's LoD (Paddle's ShareLoD)
    OpCase("mean_grad", {"X": LOD_ROWS, "Out@GRAD": np.array(2.0, "float32")},
           lod={"X": [[0, 2, 5]]},
           ref=lambda i, a: {"X@GRAD": (np.full((5, 3), 2 / 15, "float32"), [[0, 2, 5]])},
           name="keeps_lod"),
    OpCase("reduce_sum_grad", {"X": LOD_ROWS, "Out@GRAD": np.arange(3, dtype="float32")},
           attrs={"dim": [0]}, lod={"X": [[0, 2, 5]]},
           ref=lambda i, a: {"X@GRAD": (np.tile(np.arange(3, dtype="float32"), (5, 1)),
                                         [[0, 2, 5]])},
           name="keeps_lod"),
    OpCase("reduce_mean_grad", {"X": LOD_ROWS, "Out@GRAD": np.full(5, 3, "float32")},
           attrs={"dim": [1]}, lod={"X": [[0, 2, 5]]},
           ref=lambda i, a: {"X@GRAD": (np.ones((5, 3), "float32"), [[0, 2, 5]])},
           name="keeps_lod"),
    OpCase("reduce_max_grad", {"X": LOD_ROWS, "Out": LOD_ROWS.max(1),
                               "Out@GRAD": np.ones(5, "float32")},
           attrs={"dim": [1]}, lod={"X": [[0, 2, 5]]},
           ref=lambda i, a: {"X@GRAD": ((LOD_ROWS == LOD_ROWS.max(1, keepdims=True))
                                         .astype("float32"), [[0, 2, 5]])},
           name="keeps_lod"),
    OpCase("reduce_min_grad", {"X": LOD_ROWS, "Out": LOD_ROWS.min(1),
                               "Out@GRAD": np.ones(5, "float32")},
           attrs={"dim": [1]}, lod={"X": [[0, 2, 5]]},
           ref=lambda i, a: {"X@GRAD": ((LOD_ROWS == LOD_ROWS.min(1, keepdims=True))
                                         .astype("float32"), [[0, 2, 5]])},
           name="keeps_lod"),
    # products
    OpCase("mul", {"X": r(3, 4), "Y": r(4, 5)},
           ref=lambda i, a: {"Out": i["X"] @ i["Y"]}, grad=["X", "Y"]),
    OpCase("mul", {"X": r(2, 3, 4), "Y": r(2, 2, 5)},
           attrs={"x_num_col_dims": 2, "y_num_col_dims": 2},
           ref=lambda i, a: {"Out": (i["X"].reshape(6, 4) @ i["Y"].reshape(4, 5)).reshape(
               2, 3, 5)}, grad=["X", "Y"], name="num_col_dims"),
    OpCase("mul", {"X": r(5, 2), "Y": r(2, 3)}, lod={"X": [[0, 2, 5]]},
           ref=lambda i, a: {"Out": (i["X"] @ i["Y"], [[0, 2, 5]])}, name="lod"),
    OpCase("matmul", {"X": r(3, 4), "Y": r(4, 2)},
           ref=lambda i, a: {"Out": i["X"] @ i["Y"]}, grad=["X", "Y"]),
    OpCase("matmul", {"X": r(2, 4, 3), "Y": r(2, 2, 4)},
           attrs={"transpose_X": True, "transpose_Y": True, "alpha": 0.5},
           ref=lambda i, a: {"Out": 0.5 * np.swapaxes(i["X"], 1, 2) @ np.swapaxes(i["Y"], 1, 2)},
           grad=["X", "Y"], name="batched_transposed"),
    OpCase("matmul", {"X": r(2, 3, 4), "Y": r(4, 2)},
           ref=lambda i, a: {"Out": i["X"] @ i["Y"]}, grad=["X", "Y"], name="batch_x_only"),
    OpCase("matmul", {"X": r(3, 4), "Y": r(2, 4, 2)},
           ref=lambda i, a: {"Out": i["X"] @ i["Y"]}, grad=["X", "Y"], name="batch_y_only"),
    OpCase("matmul", {"X": r(4), "Y": r(4, 3)},
           ref=lambda i, a: {"Out": i["X"] @ i["Y"]}, grad=["X", "Y"], name="vec_mat"),
    OpCase("matmul", {"X": r(2, 3, 4), "Y": r(4)},
           ref=lambda i, a: {"Out": i["X"] @ i["Y"]}, grad=["X", "Y"], name="mat_vec"),
    OpCase("matmul", {"X": r(4), "Y": r(4)},
           ref=lambda i, a: {"Out": np.asarray(i["X"] @ i["Y"])}, grad=["X", "Y"],
           name="vec_vec"),
    OpCase("matmul", {"X": r(3), "Y": r(1, 2)}, attrs={"transpose_X": True},
           ref=lambda i, a: {"Out": i["X"].reshape(3, 1) @ i["Y"]}, grad=["X", "Y"],
           name="vec_transposed"),
    OpCase("matmul_v2", {"X": r(3, 4), "Y": r(4, 2)},
           ref=lambda i, a: {"Out": i["X"] @ i["Y"]}, grad=["X", "Y"]),
    OpCase("matmul_v2", {"X": r(2, 1, 4, 3), "Y": r(3, 2, 4)},
           attrs={"trans_x": True, "trans_y": True},
           ref=lambda i, a: {"Out": np.swapaxes(i["X"], -1, -2) @ np.swapaxes(i["Y"], -1, -2)},
           grad=["X", "Y"], name="broadcast_batch"),
    OpCase("matmul_v2", {"X": r(4), "Y": r(2, 4, 3)},
           ref=lambda i, a: {"Out": i["X"] @ i["Y"]}, grad=["X", "Y"], name="vec_batch"),
    OpCase("matmul_v2", {"X": r(2, 3, 4), "Y": r(4)}, attrs={"trans_y": True},
           ref=lambda i, a: {"Out": i["X"] @ i["Y"]}, grad=["X", "Y"], name="batch_vec"),
    OpCase("matmul_v2", {"X": r(4), "Y": r(4)},
           ref=lambda i, a: {"Out": np.asarray(i["X"] @ i["Y"])}, grad=["X", "Y"],
           name="vec_vec"),
]


(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


# --- shapes, errors and runtime details ------------------------------------------------------
def _infer(op_type, inputs, attrs=None, outputs=("Out",), version=PADDLE_VERSION):
    """Append one op over variables of the given shapes, in a program of the given file
    version (Paddle 2.6's unless told); return the output shapes."""
    program = fluid.Program()
    program.version = version
    block = program.global_block()
    ins = {}
    for slot, shape in inputs.items():
        block.create_var(name=slot.lower(), shape=shape, dtype="float32")
        ins[slot] = [slot.lower()]
    outs = {slot: [slot.lower() + "_out"] for slot in outputs}
    for names in outs.values():
        block.create_var(name=names[0])
    block.append_op(type=op_type, inputs=ins, outputs=outs, attrs=attrs or {})
    return [block.var(names[0]).shape for names in outs.values()]


@pytest.mark.parametrize("op_type, inputs, attrs, shape", [
    ("reduce_sum", {"X": (-1, 3, 4)}, {"dim": [1, 2]}, (-1,)),
    ("reduce_sum", {"X": (-1, 3)}, {"reduce_all": True}, ()),
    ("reduce_max", {"X": (2, 3)}, {"dim": [0, 1], "keep_dim": True}, (1, 1)),
    ("mean", {"X": (-1, 5)}, {}, ()),
    ("mul", {"X": (-1, 2, 3), "Y": (6, 7)}, {}, (-1, 7)),
    ("matmul", {"X": (-1, 3, 4), "Y": (4, 5)}, {}, (-1, 3, 5)),
    ("matmul", {"X": (4,), "Y": (4,)}, {}, ()),
    ("matmul_v2", {"X": (-1, 4), "Y": (4,)}, {}, (-1,)),
    ("matmul_v2", {"X": (5, 1, 2, 3), "Y": (4, 3, 6)}, {}, (5, 4, 2, 6)),
    ("sum", {"X": (-1, 3)}, {}, (-1, 3)),
])
def test_compile_time_shapes(op_type, inputs, attrs, shape):
    assert _infer(op_type, inputs, attrs) == [shape]


@pytest.mark.parametrize("version", [None, 1008005, 0])
@pytest.mark.parametrize("op_type, inputs, attrs", [
    ("mean", {"X": (-1, 5)}, {}),
    ("reduce_sum", {"X": (-1, 3)}, {"reduce_all": True}),
    ("reduce_max", {"X": (2, 3)}, {"dim": [0, 1]}),
    ("matmul", {"X": (4,), "Y": (4,)}, {}),
])
def test_a_fluid1_program_declares_its_scalars_with_shape_one(op_type, inputs, attrs, version):
    """Fluid 1.x had no 0-D tensors: in a program built here (no file version) or decoded
    from a file older than Paddle 2.0, a scalar result is declared [1]."""
    assert _infer(op_type, inputs, attrs, version=version) == [(1,)]


@pytest.mark.parametrize("op_type, inputs, attrs, words", [
    ("elementwise_sub", {"X": (2, 3), "Y": (4,)}, {}, "broadcastable"),
    ("elementwise_mul", {"X": (2, 3, 4), "Y": (3,)}, {"axis": 5}, "axis"),
    ("reduce_sum", {"X": (2, 3)}, {"dim": [2]}, "dim"),
    ("mul", {"X": (2, 3), "Y": (4, 5)}, {}, "width"),
    ("mul", {"X": (2, 3), "Y": (3, 5)}, {"x_num_col_dims": 2}, "x_num_col_dims"),
    ("matmul", {"X": (2, 3), "Y": (4, 5)}, {}, "width"),
    ("matmul", {"X": (2, 3, 4), "Y": (3, 4, 5)}, {}, "batch"),
    ("matmul_v2", {"X": (2, 3, 4), "Y": (3, 4, 5)}, {}, "batch"),
    ("matmul_v2", {"X": (2, 3), "Y": (2, 3)}, {}, "width"),
])
def test_bad_shapes_raise_invalid_argument(op_type, inputs, attrs, words):
    with pytest.raises(InvalidArgument) as info:
        _infer(op_type, inputs, attrs)
    assert str(info.value).startswith(op_type + ":") and words in str(info.value)


def test_sum_with_two_inputs_of_different_shapes_names_the_input():
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="a", shape=(2, 3), dtype="float32")
    block.create_var(name="b", shape=(3, 3), dtype="float32")
    block.create_var(name="c")
    with pytest.raises(InvalidArgument, match=r"sum: shape of X\[1\]"):
        block.append_op(type="sum", inputs={"X": ["a", "b"]}, outputs={"Out": ["c"]})


def _grad_types(op_type, inputs, attrs=None):
    case = OpCase(op_type, inputs, attrs=attrs or {})
    _, op, _, _ = build(case)
    return [(s.type, s.inputs, s.outputs, s.attrs) for s in registry.make_grad_ops(op)]


def test_grad_makers_name_only_what_the_gradient_needs():
    (g,) = _grad_types("elementwise_mul", {"X": r(2), "Y": r(2)})
    assert g[0] == "elementwise_mul_grad" and set(g[1]) == {"X", "Y", "Out@GRAD"}
    (g,) = _grad_types("elementwise_div", {"X": r(2), "Y": r(2)})
    assert set(g[1]) == {"X", "Y", "Out", "Out@GRAD"}
    (g,) = _grad_types("reduce_max", {"X": r(2)})
    assert set(g[1]) == {"X", "Out", "Out@GRAD"}
    (g,) = _grad_types("reduce_sum", {"X": r(2)})
    assert set(g[1]) == {"X", "Out@GRAD"}


def test_scale_and_sum_grads_are_scale_ops():
    (g,) = _grad_types("scale", {"X": r(2)}, {"scale": 3.0, "bias": 2.0})
    assert g[0] == "scale" and g[1] == {"X": ["out_out@GRAD"]} and g[2] == {"Out": ["x@GRAD"]}
    assert g[3]["scale"] == 3.0 and g[3]["bias"] == 0.0 and g[3]["bias_after_scale"]
    grads = _grad_types("sum", {"X": [r(2), r(2)]})
    assert [(g[0], g[1], g[2], g[3]["scale"]) for g in grads] == [
        ("scale", {"X": ["out_out@GRAD"]}, {"Out": ["x_0@GRAD"]}, 1.0),
        ("scale", {"X": ["out_out@GRAD"]}, {"Out": ["x_1@GRAD"]}, 1.0)]


def _kernel(op_type):
    return registry.get(op_type).kernel_for("cpu")


class _Ctx:
    xp = np
    attrs = {}


def test_sum_skips_uninitialised_and_adds_selected_rows():
    a = LoDTensor(np.ones((4, 2), "float32"), [[0, 1, 4]])
    rows = SelectedRows([1, 3, 1], 4, LoDTensor(np.full((3, 2), 2.0, "float32")))
    out = _kernel("sum")(_Ctx(), [a, LoDTensor(), rows])
    want = np.ones((4, 2), "float32")
    want[1] += 4
    want[3] += 2
    np.testing.assert_array_equal(out.array, want)
    assert out.lod() == [[0, 1, 4]]
    assert a.array.sum() == 8  # the input is untouched


def test_sum_of_selected_rows_merges_repeated_rows():
    # Fluid's MergeAdd: a repeated row id gives the distinct ids ascending, values summed
    a = SelectedRows([4, 0], 5, LoDTensor(np.array([[1, 2], [3, 4]], "float64")))
    b = SelectedRows([2, 0], 5, LoDTensor(np.array([[5, 6], [7, 8]], "float64")))
    out = _kernel("sum")(_Ctx(), [a, b])
    assert isinstance(out, SelectedRows) and out.rows() == [0, 2, 4] and out.height() == 5
    np.testing.assert_array_equal(out.value.array, [[10, 12], [5, 6], [1, 2]])
    np.testing.assert_array_equal(out.to_dense(), a.to_dense() + b.to_dense())


def test_sum_of_distinct_selected_rows_concatenates_in_order():
    a = SelectedRows([3, 1], 4, LoDTensor(np.array([[1.0], [2.0]], "float32")))
    b = SelectedRows([0], 4, LoDTensor(np.array([[3.0]], "float32")))
    out = _kernel("sum")(_Ctx(), [a, b])
    assert out.rows() == [3, 1, 0] and out.height() == 4
    np.testing.assert_array_equal(out.value.array, [[1], [2], [3]])
    # a single input with rows is copied, not shared
    alone = _kernel("sum")(_Ctx(), [a, SelectedRows([], 4, LoDTensor(np.ones((2, 1))))])
    assert alone.rows() == [3, 1] and alone.value.array is not a.value.array


def test_sum_of_selected_rows_skips_inputs_without_rows():
    # an input without rows adds nothing, whatever its value tensor holds
    full = SelectedRows([1, 1], 3, LoDTensor(np.ones((2, 2), "float32")))
    empty = SelectedRows([], 3, LoDTensor(np.full((5, 2), 9.0, "float32")))
    out = _kernel("sum")(_Ctx(), [empty, full, empty])
    assert out.rows() == [1] and out.height() == 3
    np.testing.assert_array_equal(out.value.array, [[2, 2]])
    none = _kernel("sum")(_Ctx(), [empty, empty])
    assert isinstance(none, SelectedRows) and none.rows() == [] and none.value.array.size == 0


def test_sum_of_selected_rows_needs_one_height_and_row_shape():
    a = SelectedRows([0], 3, LoDTensor(np.ones((1, 2), "float32")))
    with pytest.raises(InvalidArgument, match="sum: height of each SelectedRows"):
        _kernel("sum")(_Ctx(), [a, SelectedRows([0], 4, LoDTensor(np.ones((1, 2), "float32")))])
    with pytest.raises(InvalidArgument, match="sum: row shape of each SelectedRows"):
        _kernel("sum")(_Ctx(), [a, SelectedRows([1], 3, LoDTensor(np.ones((1, 3), "float32")))])


def test_equal_shape_elementwise_keeps_dtype_and_skips_alignment():
    ctx = _Ctx()
    ctx.attrs = {"axis": -1}
    for op_type in ("elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div",
                    "elementwise_max", "elementwise_min", "elementwise_pow",
                    "elementwise_mod"):
        out = _kernel(op_type)(ctx, np.full((1, 1), 2.0, "float32"),
                               np.full((1, 1), 4.0, "float32"))
        assert out.shape == (1, 1) and out.dtype == np.float32, op_type


def test_python_operators_floordiv_and_mod_build_checked_ops():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.layers.data("x", [3], dtype="int64", append_batch_size=False)
        y = fluid.layers.data("y", [3], dtype="int64", append_batch_size=False)
        q, m = x // y, x % y
    fluid.verify(main)
    exe = fluid.Executor(fluid.CPUPlace())
    got_q, got_m = exe.run(main, feed={"x": np.array([7, -7, 9], "int64"),
                                       "y": np.array([2, 2, -4], "int64")},
                           fetch_list=[q, m], scope=fluid.Scope())
    np.testing.assert_array_equal(got_q, [3, -4, -3])
    np.testing.assert_array_equal(got_m, [1, 1, -3])


# --- the small-tensor paths pinned to the general ones --------------------------------------
class _Wanting(_Ctx):
    """A kernel context that wants every output slot."""

    def __init__(self, axis):
        self.attrs = {"axis": axis}

    def wants(self, slot):
        return True


def _grads(op_type, x, y, dout, axis):
    out = x / y if op_type == "elementwise_div" else None  # the only grad that reads Out
    return _kernel(op_type + "_grad")(_Wanting(axis), x, y, out, dout)


BIAS_SHAPES = [((20, 1), (1,), 1),        # fc's bias, its axis given
               ((5, 3, 4), (4,), -1),     # trailing alignment
               ((5, 3, 4), (3, 4), 1),
               ((1, 3, 4), (4,), 2),      # a leading dim of 1 summed too
               ((0, 4), (4,), 1)]         # an empty batch: dY is zeros


@pytest.mark.parametrize("op_type", ["elementwise_add", "elementwise_sub", "elementwise_mul",
                                     "elementwise_div", "elementwise_max", "elementwise_min"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("x_shape,y_shape,axis", BIAS_SHAPES)
def test_bias_gradient_is_the_general_sum_over_broadcast_dims(op_type, dtype, x_shape,
                                                              y_shape, axis):
    # the general path: Y given its leading dims as 1s (equal ranks), then reshaped back
    x, dout = apart(*x_shape).astype(dtype), r(*x_shape, dtype=dtype)
    y = r(*y_shape, dtype=dtype, low=0.5, high=2)
    padded = y.reshape((1,) * (len(x_shape) - len(y_shape)) + y_shape)
    dx, dy = _grads(op_type, x, y, dout, axis)
    general_dx, general_dy = _grads(op_type, x, padded, dout, -1)
    np.testing.assert_array_equal(dx, general_dx)
    np.testing.assert_array_equal(dy, general_dy.reshape(y_shape))
    assert dx.dtype == dy.dtype == np.dtype(dtype) and dy.shape == y_shape


def test_bias_gradient_of_strided_and_integer_operands():
    base = r(13, 20)
    x, dout = base.T, r(20, 13)  # a transposed view, and a plain array
    y = r(13)
    dx, dy = _grads("elementwise_add", x, y, dout, 1)
    np.testing.assert_array_equal(dy, dout.sum(axis=0))
    np.testing.assert_array_equal(dx, dout)
    dx, dy = _grads("elementwise_mul", x, y, dout[:, ::-1], 1)  # a reversed view as dOut
    np.testing.assert_array_equal(dy, (dout[:, ::-1] * x).sum(axis=0))
    xi, yi = np.arange(12, dtype="int32").reshape(4, 3), np.array([1, 2, 3], "int32")
    dx, dy = _grads("elementwise_sub", xi, yi, np.ones((4, 3), "int32"), -1)
    assert dy.dtype == np.int32 and dy.tolist() == [-4, -4, -4] and dx.dtype == np.int32


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32"])
def test_mean_grad_on_the_host_fills_as_on_a_device(dtype):
    from fluid_nb.testing import strict_device as device
    x = np.zeros((7, 3), dtype)
    for value in (3.0, 1.0, -2.5):
        dout = np.array(value, dtype)
        host = _kernel("mean_grad")(_Ctx(), x, dout)
        ctx = _Ctx()
        ctx.xp = device.xp
        on_device = device.to_host(_kernel("mean_grad")(ctx, device.to_device(x),
                                                        device.to_device(dout)))
        want = np.empty((7, 3), dtype)
        want[...] = np.float64(dout) / 21
        np.testing.assert_array_equal(host, want)
        np.testing.assert_array_equal(on_device, want)
        assert host.dtype == on_device.dtype == np.dtype(dtype)


def test_mean_grad_casts_out_of_range_values_as_numpy_casts():
    # a negative gradient for unsigned X wraps as NumPy's float64 -> uint8 cast does
    got = _kernel("mean_grad")(_Ctx(), np.zeros(3, "uint8"), np.array(-9.0, "float32"))
    want = np.empty(3, "uint8")
    want[...] = np.float64(-3.0)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_mul_of_plain_matrices_is_the_matrix_product_for_any_layout(dtype):
    ctx = _Ctx()
    ctx.attrs = {"x_num_col_dims": 1, "y_num_col_dims": 1}
    ctx.wants = lambda slot: True
    ctx.cache = {}
    x = (r(6, 4) * 8).astype(dtype).T  # a transposed view: [4, 6]
    y = np.asfortranarray((r(6, 5) * 8).astype(dtype))
    np.testing.assert_allclose(_kernel("mul")(ctx, x, y), np.matmul(x, y), rtol=1e-6)
    dout = (r(4, 5) * 8).astype(dtype)
    dx, dy = _kernel("mul_grad")(ctx, x, y, dout)
    np.testing.assert_allclose(dx, np.matmul(dout, y.T), rtol=1e-6)
    np.testing.assert_allclose(dy, np.matmul(x.T, dout), rtol=1e-6)
    assert dx.dtype == dy.dtype == np.dtype(dtype)


def test_matmuls_kernel_remembers_out_shapes_per_signature_and_refuses_each_time():
    """The kernel answers Paddle's shape rules from a memo per (X's shape, Y's shape, the
    transposes, head_number): the same arrays transposed otherwise get their own shape, and
    operands the rules refuse are refused at every run, not remembered."""
    from fluid_nb.ops import math as math_ops
    kernel = registry.get("matmul").kernel_for("cpu")

    class Context:
        xp = np

        def __init__(self, **attrs):
            self.attrs = {"transpose_X": False, "transpose_Y": False, "alpha": 1.0,
                          "head_number": 1, **attrs}
    x, y = r(3, 3), r(3, 3)
    plain = kernel(Context(), x, y)
    flipped = kernel(Context(transpose_X=True), x, y)
    np.testing.assert_allclose(plain, x @ y, rtol=1e-6)
    np.testing.assert_allclose(flipped, x.T @ y, rtol=1e-6)
    assert ((3, 3), (3, 3), True, False, 1) in math_ops._MATMUL_SHAPES
    wide = r(3, 5)
    for _ in range(2):
        with pytest.raises(InvalidArgument, match="X's width equal to Y's height"):
            kernel(Context(), wide, y)
    assert ((3, 5), (3, 3), False, False, 1) not in math_ops._MATMUL_SHAPES
    np.testing.assert_allclose(kernel(Context(transpose_X=True), wide, y), wide.T @ y,
                               rtol=1e-6)
