"""SelectedRows: Fluid's method surface, and the ops that read or write one."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb import core
from fluid_nb.errors import InvalidArgument, OutOfRange
from fluid_nb.tensor.tensor import LoDTensor, SelectedRows


def test_rows_height_and_sync_index_are_methods_as_in_fluid():
    sr = core.SelectedRows([4, 1, 4], 6, LoDTensor(np.arange(6.0).reshape(3, 2)))
    assert sr.rows() == [4, 1, 4] and sr.height() == 6
    sr.set_rows([2, 5])
    sr.set_height(8)
    assert sr.rows() == [2, 5] and sr.height() == 8
    sr.sync_index()
    assert sr.index(5) == 1 and sr.index(2) == 0
    with pytest.raises(OutOfRange, match="SelectedRows.index"):
        sr.index(3)


def test_scope_selected_rows_holder_uses_the_methods():
    scope = fluid.Scope()
    sr = scope.var("w").get_selected_rows()
    sr.set_rows([0, 3])
    sr.set_height(4)
    assert scope.find_var("w").get_selected_rows().rows() == [0, 3]
    assert scope.find_var("w").get_selected_rows().height() == 4


def _run_on_selected_rows(op_type, x, attrs, inputs=None, extra_feed=None):
    """``op_type`` with a SelectedRows variable ``x`` set in the scope as its X."""
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="x", type=fluid.core.VarDesc.VarType.SELECTED_ROWS,
                     shape=(x.height(),) + x.value.array.shape[1:], dtype="float32",
                     persistable=True)
    for name, value in (extra_feed or {}).items():
        block.create_var(name=name, shape=value.shape, dtype=value.dtype)
    block.append_op(type=op_type, inputs=inputs or {"X": ["x"]}, outputs={"Out": ["out"]},
                    attrs=attrs)
    fluid.verify(program)
    scope = fluid.Scope()
    scope.var("x").value = x
    (out,) = fluid.Executor(fluid.CPUPlace()).run(program, feed=extra_feed or {},
                                                  fetch_list=["out"], scope=scope,
                                                  return_numpy=False)
    return block.var("out"), out


def test_scale_of_selected_rows_scales_the_values_and_keeps_the_rows():
    values = np.arange(6, dtype="float32").reshape(3, 2)
    x = SelectedRows([4, 0, 4], 5, LoDTensor(values))
    var, out = _run_on_selected_rows("scale", x, {"scale": 2.0, "bias": 1.0})
    assert var.type == fluid.core.VarDesc.VarType.SELECTED_ROWS
    assert isinstance(out, SelectedRows) and out.rows() == [4, 0, 4] and out.height() == 5
    np.testing.assert_allclose(np.asarray(out.get_tensor()), values * 2 + 1)
    np.testing.assert_array_equal(x.value.array, values)  # the input is left as it was


@pytest.mark.parametrize("op_type, ids", [
    ("lookup_table", np.array([[7], [2], [7], [0]], "int64")),
    ("lookup_table_v2", np.array([[7, 2], [7, 0]], "int64")),
])
def test_lookup_in_a_selected_rows_table_reads_rows_by_their_ids(op_type, ids):
    values = np.arange(8, dtype="float32").reshape(4, 2)
    table = SelectedRows([2, 7, 5, 0], 10, LoDTensor(values))
    var, out = _run_on_selected_rows(op_type, table, {"padding_idx": 0},
                                     inputs={"W": ["x"], "Ids": ["ids"]},
                                     extra_feed={"ids": ids})
    position = {2: 0, 7: 1, 5: 2}
    flat = ids.reshape(-1)
    want = np.stack([values[position[i]] if i else np.zeros(2, "float32") for i in flat])
    shape = ids.shape[:-1] if op_type == "lookup_table" else ids.shape
    np.testing.assert_array_equal(np.asarray(out), want.reshape(shape + (2,)))
    assert var.shape == shape + (2,)


def test_lookup_of_an_id_missing_from_the_selected_rows_table_names_it():
    table = SelectedRows([2, 7], 10, LoDTensor(np.ones((2, 3), "float32")))
    with pytest.raises(InvalidArgument, match=r"lookup_table: Ids expected rows of the "
                                              r"SelectedRows W \[2, 7\], but received 3"):
        _run_on_selected_rows("lookup_table", table, {}, inputs={"W": ["x"], "Ids": ["ids"]},
                              extra_feed={"ids": np.array([[2], [3]], "int64")})


@pytest.mark.parametrize("op_type, attrs, check", [
    ("fill_constant", {"shape": [4, 3], "value": 2.5, "dtype": 5},
     lambda v: np.testing.assert_array_equal(v, np.full((4, 3), 2.5, "float32"))),
    ("uniform_random", {"shape": [4, 3], "min": -1.0, "max": 1.0, "seed": 5, "dtype": 5},
     lambda v: (v.shape == (4, 3) and v.dtype == np.float32 and -1 <= v.min()
                and v.max() < 1) or pytest.fail(f"not U[-1, 1) of [4, 3]: {v}")),
])
@pytest.mark.parametrize("held", [None, SelectedRows([1, 3], 9)])
def test_creation_ops_fill_the_value_of_a_selected_rows_out(op_type, attrs, check, held):
    """As Paddle: the SelectedRows keeps its rows and height; its value is the new tensor."""
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="out", type=fluid.core.VarDesc.VarType.SELECTED_ROWS,
                     dtype="float32", persistable=True)
    block.append_op(type=op_type, outputs={"Out": ["out"]}, attrs=attrs)
    scope = fluid.Scope()
    if held is not None:
        scope.var("out").value = held
    fluid.Executor(fluid.CPUPlace()).run(program, scope=scope)
    out = scope.find_var("out").get_selected_rows()
    assert isinstance(scope.find_var("out").value, SelectedRows)
    assert out.rows() == ([1, 3] if held is not None else [])
    assert out.height() == (9 if held is not None else 0)
    check(np.asarray(out.get_tensor()))
