"""Comparison and logical ops against NumPy."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument

from .op_test import OpCase, case_id, check_output

rng = np.random.RandomState(0)


def ints(*shape):
    return rng.randint(-2, 3, shape).astype("int64")


def bools(*shape):
    return rng.rand(*shape) > 0.5


COMPARE = {"less_than": np.less, "less_equal": np.less_equal, "greater_than": np.greater,
           "greater_equal": np.greater_equal, "equal": np.equal, "not_equal": np.not_equal}
LOGICAL = {"logical_and": np.logical_and, "logical_or": np.logical_or,
           "logical_xor": np.logical_xor}


def cmp_ref(fn, y_shape=None):
    def ref(i, a):
        y = i["Y"] if y_shape is None else i["Y"].reshape(y_shape)
        return {"Out": fn(i["X"], y)}
    return ref


CASES = []
for _op, _fn in COMPARE.items():
    CASES += [
        OpCase(_op, {"X": ints(3, 4), "Y": ints(3, 4)}, ref=cmp_ref(_fn), name="int64"),
        OpCase(_op, {"X": ints(2, 3, 4).astype("float32"), "Y": ints(4).astype("float32")},
               ref=cmp_ref(_fn), name="broadcast_trailing"),
        OpCase(_op, {"X": ints(2, 3, 4).astype("float64"), "Y": ints(3).astype("float64")},
               attrs={"axis": 1}, ref=cmp_ref(_fn, (1, 3, 1)), name="axis1"),
    ]
for _op, _fn in LOGICAL.items():
    CASES += [
        OpCase(_op, {"X": bools(3, 4), "Y": bools(3, 4)}, ref=cmp_ref(_fn)),
        OpCase(_op, {"X": bools(2, 3, 4), "Y": bools(3, 1)}, ref=cmp_ref(_fn),
               name="broadcast"),
    ]
CASES += [
    OpCase("logical_not", {"X": bools(3, 4)}, ref=lambda i, a: {"Out": ~i["X"]}),
    OpCase("logical_not", {"X": ints(5)}, ref=lambda i, a: {"Out": i["X"] == 0},
           name="nonzero_is_true"),
    OpCase("logical_and", {"X": ints(6), "Y": ints(6)},
           ref=lambda i, a: {"Out": (i["X"] != 0) & (i["Y"] != 0)}, name="ints"),
    OpCase("equal", {"X": np.array([1.0, 1.0, np.inf, np.nan], "float64"),
                     "Y": np.array([1.0 + 1e-9, 1.1, np.inf, np.nan], "float64")},
           ref=lambda i, a: {"Out": np.array([True, False, True, False])},
           name="float_tolerance"),
    OpCase("not_equal", {"X": np.array([1.0, 1.0], "float64"),
                         "Y": np.array([1.0 + 1e-9, 1.1], "float64")},
           ref=lambda i, a: {"Out": np.array([False, True])}, name="float_tolerance"),
    OpCase("less_than", {"X": np.array([[1], [2], [3]], "int64"),
                         "Y": np.array([[2], [2], [2]], "int64")},
           lod={"X": [[0, 1, 3]]},
           ref=lambda i, a: {"Out": (np.array([[True], [False], [False]]), [[0, 1, 3]])},
           name="lod"),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_output_matches_numpy(case):
    check_output(case)


def _append(op_type, inputs, attrs=None):
    program = fluid.Program()
    block = program.global_block()
    for name, (shape, dtype) in inputs.items():
        block.create_var(name=name, shape=shape, dtype=dtype)
    return block.append_op(type=op_type, inputs={k: [k] for k in inputs},
                           outputs={"Out": ["out"]}, attrs=attrs or {})


def test_out_is_bool_with_broadcast_shape():
    op = _append("less_than", {"X": ((-1, 3, 4), "float32"), "Y": ((4,), "float32")})
    out = op.block.var("out")
    assert out.shape == (-1, 3, 4) and out.dtype.name == "BOOL"
    op = _append("logical_or", {"X": ((2, 1), "bool"), "Y": ((1, 5), "bool")})
    assert op.block.var("out").shape == (2, 5)


def test_mismatched_shapes_name_the_op():
    with pytest.raises(InvalidArgument, match="greater_equal: shapes of X"):
        _append("greater_equal", {"X": ((3, 4), "float32"), "Y": ((5,), "float32")})


def test_axis_below_minus_one_is_refused():
    with pytest.raises(InvalidArgument, match="equal: attribute 'axis'"):
        _append("equal", {"X": ((3, 4), "float32"), "Y": ((3, 4), "float32")}, {"axis": -2})


def test_no_gradients():
    from fluid_nb.ops import registry
    for op in list(COMPARE) + list(LOGICAL) + ["logical_not"]:
        assert registry.get(op).grad is None, op


def test_same_shape_with_a_bool_dtype_gives_bool():
    """BOOL is VarType 0: same_shape(dtype=BOOL) must not take it for "no dtype given"."""
    from fluid_nb.tensor.dtypes import VarType
    from fluid_nb.ops import registry
    infer = registry.same_shape("X", "Out", dtype=VarType.BOOL)
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="x", shape=(2, 3), dtype="float32")
    out = block.create_var(name="out")

    class Ctx:
        def input_shape(self, slot):
            return (2, 3)

        def input_dtype(self, slot):
            return VarType.FP32

        def set_output(self, slot, shape, dtype):
            out.shape, out.dtype = shape, dtype
    infer(Ctx())
    assert out.dtype == VarType.BOOL and out.shape == (2, 3)
