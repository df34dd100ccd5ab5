"""Gradient-clipping helpers against NumPy: clip_by_norm, squared_l2_norm, sign and the
SelectedRows helpers, plus the op chain Fluid's GradientClipByGlobalNorm builds."""
import numpy as np
import pytest

import fluid_nb as fluid
import fluid_nb.ops.clip_ops  # noqa: F401  (registers the family before _families does)
from fluid_nb.errors import InvalidArgument
from fluid_nb.tensor.tensor import LoDTensor, SelectedRows
from fluid_nb.tensor.dtypes import VarType
from fluid_nb.ops import registry

from .op_test import OpCase, build, table_tests

rng = np.random.RandomState(0)


def r(*shape, low=-1, high=1, dtype="float32"):
    return rng.uniform(low, high, shape).astype(dtype)


def clip_ref(i, a):
    x = i["X"].astype("float64")
    norm = np.sqrt((x * x).sum())
    out = x * a["max_norm"] / norm if norm > a["max_norm"] else x
    return {"Out": out.astype(i["X"].dtype)}


def away_from_zero(*shape):
    x = r(*shape, low=0.2, high=1.0)
    return (x * np.where(rng.rand(*shape) < 0.5, -1, 1)).astype("float32")


CASES = [
    OpCase("clip_by_norm", {"X": r(3, 4)}, attrs={"max_norm": 0.5}, ref=clip_ref,
           name="clipped"),
    OpCase("clip_by_norm", {"X": r(3, 4)}, attrs={"max_norm": 100.0}, ref=clip_ref,
           name="within_norm"),
    OpCase("clip_by_norm", {"X": r(4, 2)}, attrs={"max_norm": 0.5}, lod={"X": [[0, 1, 4]]},
           ref=lambda i, a: {"Out": (clip_ref(i, a)["Out"], [[0, 1, 4]])}, name="lod"),
    OpCase("squared_l2_norm", {"X": r(3, 4)},
           ref=lambda i, a: {"Out": np.array([(i["X"].astype("float64") ** 2).sum()])
                             .astype(i["X"].dtype)}, grad=["X"]),
    OpCase("squared_l2_norm", {"X": r(2, 3, 2)},
           ref=lambda i, a: {"Out": np.array([(i["X"].astype("float64") ** 2).sum()])
                             .astype(i["X"].dtype)}, grad=["X"], name="rank3"),
    OpCase("sign", {"X": np.array([[-2.0, 0.0, 3.5], [0.1, -0.1, 0.0]], "float32")},
           ref=lambda i, a: {"Out": np.sign(i["X"])}, name="zeros"),
    OpCase("sign", {"X": away_from_zero(3, 4)}, ref=lambda i, a: {"Out": np.sign(i["X"])},
           grad=["X"]),
]


(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


def test_sign_grad_is_a_scale_by_zero():
    _, op, _, _ = build(OpCase("sign", {"X": r(2)}))
    (spec,) = registry.make_grad_ops(op)
    assert spec.type == "scale" and spec.inputs == {"X": ["out_out@GRAD"]}
    assert spec.outputs == {"Out": ["x@GRAD"]} and spec.attrs["scale"] == 0.0
    assert registry.make_grad_ops(op, no_grad_set={"x"}) == []


def test_squared_l2_norm_grad_takes_x_and_out_grad():
    _, op, _, _ = build(OpCase("squared_l2_norm", {"X": r(2)}))
    (spec,) = registry.make_grad_ops(op)
    assert spec.type == "squared_l2_norm_grad" and set(spec.inputs) == {"X", "Out@GRAD"}


def test_clip_by_norm_has_no_gradient():
    assert registry.get("clip_by_norm").grad is None


# --- SelectedRows ---------------------------------------------------------------------------------
def run_ops(ops, values, fetch):
    """Run ``ops`` ([(type, inputs, outputs, attrs)]) over persistable variables holding
    ``values`` (arrays or SelectedRows); return the fetched runtime values."""
    program = fluid.Program()
    block = program.global_block()
    scope = fluid.Scope()
    for name, value in values.items():
        if isinstance(value, SelectedRows):
            array = value.value.array
            block.create_var(name=name, type=VarType.SELECTED_ROWS, dtype=array.dtype,
                             shape=(value.height(),) + array.shape[1:], persistable=True)
            scope.var(name).value = value
        else:
            block.create_var(name=name, shape=value.shape, dtype=value.dtype, persistable=True)
            scope.var(name).value = LoDTensor(value)
    for op_type, ins, outs, attrs in ops:
        for names in outs.values():
            for n in names:
                block.create_var(name=n)
        block.append_op(type=op_type, inputs=ins, outputs=outs, attrs=attrs)
    fluid.verify(program)
    return program, fluid.Executor(fluid.CPUPlace()).run(
        program, fetch_list=fetch, scope=scope, return_numpy=False)


def sparse():
    return SelectedRows([4, 1, 4, 0], 6, LoDTensor(r(4, 3)))


def test_merge_selected_rows_sums_repeated_rows_and_sorts():
    x = sparse()
    before = x.value.array.copy()
    program, (out,) = run_ops([("merge_selected_rows", {"X": ["x"]}, {"Out": ["m"]}, {})],
                              {"x": x}, ["m"])
    assert isinstance(out, SelectedRows) and out.rows() == [0, 1, 4] and out.height() == 6
    np.testing.assert_allclose(out.to_dense(), x.to_dense(), rtol=1e-6)
    np.testing.assert_allclose(out.value.array[2], before[0] + before[2], rtol=1e-6)
    np.testing.assert_array_equal(x.value.array, before)
    assert program.global_block().var("m").type == VarType.SELECTED_ROWS


def test_get_tensor_from_selected_rows_gives_the_value():
    x = sparse()
    program, (out,) = run_ops(
        [("merge_selected_rows", {"X": ["x"]}, {"Out": ["m"]}, {}),
         ("get_tensor_from_selected_rows", {"X": ["m"]}, {"Out": ["t"]}, {})],
        {"x": x}, ["t"])
    assert isinstance(out, LoDTensor)
    dense = x.to_dense()
    np.testing.assert_allclose(np.asarray(out), dense[[0, 1, 4]], rtol=1e-6)
    assert program.global_block().var("t").shape == (-1, 3)


def test_clip_by_norm_merges_a_sparse_input():
    x = sparse()
    _, (out,) = run_ops([("clip_by_norm", {"X": ["x"]}, {"Out": ["c"]}, {"max_norm": 0.3})],
                        {"x": x}, ["c"])
    assert isinstance(out, SelectedRows) and out.rows() == [0, 1, 4]
    dense = x.to_dense().astype("float64")
    want = dense * 0.3 / np.linalg.norm(dense)
    np.testing.assert_allclose(out.to_dense(), want, rtol=1e-5)


def test_clip_by_norm_sparse_input_reads_row_ids_only_as_keys():
    # Fluid's merge reads row ids as keys: a height of 0 (unset) is no bound, and distinct
    # ids keep their order
    x = SelectedRows([2, 0, 2, 5], 0, LoDTensor(r(4, 2)))
    _, (out,) = run_ops([("clip_by_norm", {"X": ["x"]}, {"Out": ["c"]}, {"max_norm": 0.5})],
                        {"x": x}, ["c"])
    merged = np.stack([x.value.array[1], x.value.array[0] + x.value.array[2],
                       x.value.array[3]]).astype("float64")
    assert out.rows() == [0, 2, 5] and out.height() == 0
    np.testing.assert_allclose(out.value.array, merged * 0.5 / np.linalg.norm(merged),
                               rtol=1e-5)
    distinct = SelectedRows([3, 1], 4, LoDTensor(r(2, 2)))
    _, (kept,) = run_ops([("merge_selected_rows", {"X": ["x"]}, {"Out": ["m"]}, {})],
                         {"x": distinct}, ["m"])
    assert kept.rows() == [3, 1]
    np.testing.assert_array_equal(kept.value.array, distinct.value.array)


def test_selected_rows_helpers_refuse_dense_variables():
    with pytest.raises(InvalidArgument, match="merge_selected_rows: input 'X' expected"):
        run_ops([("merge_selected_rows", {"X": ["x"]}, {"Out": ["m"]}, {})],
                {"x": r(2, 3)}, ["m"])
    with pytest.raises(InvalidArgument, match="get_tensor_from_selected_rows: input 'X'"):
        run_ops([("get_tensor_from_selected_rows", {"X": ["x"]}, {"Out": ["m"]}, {})],
                {"x": r(2, 3)}, ["m"])


def test_clip_by_norm_needs_max_norm():
    with pytest.raises(InvalidArgument, match="clip_by_norm: attribute 'max_norm'"):
        run_ops([("clip_by_norm", {"X": ["x"]}, {"Out": ["c"]}, {})], {"x": r(2, 3)}, ["c"])


def test_global_norm_clip_chain():
    """The ops GradientClipByGlobalNorm appends, over a dense and a sparse gradient."""
    dense, sp, clip = r(3, 4), sparse(), np.array([0.5], "float32")
    ops = [
        ("merge_selected_rows", {"X": ["sp"]}, {"Out": ["sp_m"]}, {}),
        ("get_tensor_from_selected_rows", {"X": ["sp_m"]}, {"Out": ["sp_t"]}, {}),
        ("squared_l2_norm", {"X": ["sp_t"]}, {"Out": ["sq1"]}, {}),
        ("squared_l2_norm", {"X": ["dense"]}, {"Out": ["sq2"]}, {}),
        ("sum", {"X": ["sq1", "sq2"]}, {"Out": ["total"]}, {}),
        ("sqrt", {"X": ["total"]}, {"Out": ["norm"]}, {}),
        ("elementwise_max", {"X": ["clip"], "Y": ["norm"]}, {"Out": ["biggest"]}, {}),
        ("elementwise_div", {"X": ["clip"], "Y": ["biggest"]}, {"Out": ["scale"]}, {}),
        ("elementwise_mul", {"X": ["dense"], "Y": ["scale"]}, {"Out": ["clipped"]}, {}),
    ]
    _, (norm, clipped) = run_ops(ops, {"dense": dense, "sp": sp, "clip": clip},
                                 ["norm", "clipped"])
    want_norm = np.sqrt((dense.astype("float64") ** 2).sum() + (sp.to_dense() ** 2).sum())
    np.testing.assert_allclose(np.asarray(norm), [want_norm], rtol=1e-5)
    np.testing.assert_allclose(np.asarray(clipped), dense * 0.5 / want_norm, rtol=1e-5)


def test_clips_bounds_are_checked_whether_or_not_a_bound_tensor_came_first():
    # (clip's inference is remembered per X's fields and attributes: a call with a Min
    # tensor, which skips the attributes' order check, must not answer one without)
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data(name="x", shape=[2, 3], dtype="float32")
        low = fluid.data(name="low", shape=[1], dtype="float32")
        block = main.global_block()
        for _ in range(2):
            out = block.create_var(name=fluid.unique_name.generate("out"), dtype="float32")
            block.append_op(type="clip", inputs={"X": x, "Min": low}, outputs={"Out": out},
                            attrs={"min": 0.8, "max": 0.2})
        with pytest.raises(InvalidArgument, match="at most max"):
            fluid.layers.clip(x, 0.8, 0.2)
        with pytest.raises(InvalidArgument, match="at most max"):
            block.append_op(type="clip", inputs={"X": x}, outputs={"Out": out},
                            attrs={"min": 0.8, "max": 0.2})
    assert [op.type for op in block.ops] == ["clip", "clip"]
