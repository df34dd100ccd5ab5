"""split_ids, merge_ids, ref_by_trainer_id, lookup_table_dequant and lookup_sparse_table
against NumPy references (the SelectedRows cases through hand-built programs)."""
import struct

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument
from fluid_nb.tensor.tensor import LoDTensor, SelectedRows
from .op_test import EachLoD, OpCase, assert_build_fails, run_case, table_tests

rng = np.random.RandomState(5)
SELECTED_ROWS = fluid.core.VarDesc.VarType.SELECTED_ROWS


def split_ids_ref(i, a, shards=3):
    ids = np.unique(np.concatenate([x.reshape(-1) for x in i["Ids"]]))
    return {"Out": [ids[ids % shards == s].reshape(-1, 1) for s in range(shards)]}


def merge_ids_ref(i, a):
    table = {}
    for rows, x in zip(i["Rows"], i["X"]):
        for r, row in zip(rows.reshape(-1), x):
            table.setdefault(int(r), row)
    return {"Out": [(np.array([table[int(k)] for k in ids.reshape(-1)]), lod)
                    for ids, lod in zip(i["Ids"], LODS)]}


def dequant_ref(i, a):
    out = []
    for key in i["Ids"].reshape(-1):
        if key == a.get("padding_idx", -1):
            out.append([0.0] * ((TABLE.shape[1] - 2) * 4))
            continue
        low, high = TABLE[key, 0], TABLE[key, 1]
        codes = b"".join(struct.pack("<f", v) for v in TABLE[key, 2:])
        out.append([c * (high - low) / 256 + low for c in codes])
    return {"Out": np.array(out, "float32")}


IDS = [np.array([[0], [2], [2], [3], [5], [5], [6]], "int64"),
       np.array([[6], [2], [3], [3], [5], [2], [7]], "int64")]
LODS = [[[0, 1, 4]], [[0, 2, 4]]]
MERGE_IDS = [np.array([[0], [2], [5], [6]], "int64"), np.array([[0], [2], [2], [3]], "int64")]
MERGE_ROWS = [np.array([[0], [2]], "int64"), np.array([[3], [5]], "int64"),
              np.array([[6]], "int64")]
MERGE_X = [rng.rand(2, 3).astype("float32"), rng.rand(2, 3).astype("float32"),
           rng.rand(1, 3).astype("float32")]
TABLE = rng.rand(6, 4).astype("float32")
TABLE[:, 1] += 1  # max above min

CASES = [
    OpCase("split_ids", {"Ids": IDS}, ref=split_ids_ref, outputs={"Out": 3}),
    OpCase("split_ids", {"Ids": IDS[:1]}, ref=lambda i, a: split_ids_ref(i, a, 2),
           outputs={"Out": 2}, name="two_shards"),
    OpCase("merge_ids", {"Ids": MERGE_IDS, "Rows": MERGE_ROWS, "X": MERGE_X},
           lod={"Ids": EachLoD([[[0, 1, 4]], [[0, 2, 4]]])}, ref=merge_ids_ref,
           outputs={"Out": 2}),
    OpCase("ref_by_trainer_id", {"X": [rng.rand(2, 3).astype("float32") for _ in range(3)],
                                 "TrainerId": np.array([2], "int64")},
           ref=lambda i, a: {"Out": i["X"][2]}),
    OpCase("lookup_table_dequant", {"W": TABLE, "Ids": np.array([[4], [0], [4]], "int64")},
           ref=dequant_ref, rtol=1e-6),
    OpCase("lookup_table_dequant", {"W": TABLE, "Ids": np.array([[1], [3], [5]], "int64")},
           attrs={"padding_idx": 3}, ref=dequant_ref, rtol=1e-6, name="padding"),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


def _run_on(op_type, inputs, outputs, attrs=None, scope=None):
    """Run one op whose inputs are given as runtime values (SelectedRows among them)."""
    program = fluid.Program()
    block = program.global_block()
    scope = scope or fluid.Scope()
    for slot, (name, value) in inputs.items():
        if isinstance(value, SelectedRows):
            block.create_var(name=name, type=SELECTED_ROWS, dtype="float32",
                             shape=[value.height()] + list(value.value.array.shape[1:]),
                             persistable=True)
        else:
            block.create_var(name=name, dtype=value.array.dtype,
                             shape=value.array.shape, persistable=True)
        scope.var(name).value = value
    for name in outputs:
        block.create_var(name=name)
    block.append_op(type=op_type, inputs={s: [n] for s, (n, _) in inputs.items()},
                    outputs={"Out": list(outputs)}, attrs=attrs or {})
    fluid.verify(program)
    return fluid.Executor(fluid.CPUPlace()).run(program, fetch_list=list(outputs),
                                                scope=scope, return_numpy=False)


def test_split_ids_shards_a_selected_rows_by_row_id():
    values = np.arange(10, dtype="float32").reshape(5, 2)
    x = SelectedRows([0, 5, 7, 4, 9], 20, LoDTensor(values))
    outs = _run_on("split_ids", {"Ids": ("x", x)}, ["o0", "o1", "o2"])
    assert [o.rows() for o in outs] == [[0, 9], [7, 4], [5]]
    assert all(o.height() == 20 for o in outs)
    np.testing.assert_array_equal(np.asarray(outs[0].get_tensor()), values[[0, 4]])
    np.testing.assert_array_equal(np.asarray(outs[1].get_tensor()), values[[2, 3]])


def test_lookup_sparse_table_grows_the_table_with_unseen_ids():
    values = np.arange(8, dtype="float32").reshape(4, 2) * np.array([1, 10], "float32")
    table = SelectedRows([], 100, LoDTensor(values))
    scope = fluid.Scope()
    ids = LoDTensor(np.array([[7], [3], [7]], "int64"), [[0, 2, 3]])
    (out,) = _run_on("lookup_sparse_table", {"W": ("w", table), "Ids": ("ids", ids)},
                     ["out"], scope=scope)
    # 7 and 3 take the first two free rows; the repeated 7 reads its row again
    np.testing.assert_array_equal(np.asarray(out), values[[0, 1, 0]])
    assert out.lod() == [[0, 2, 3]]
    assert scope.find_var("w").value.rows() == [7, 3]
    ids = LoDTensor(np.array([[3], [9], [5]], "int64"))
    (out,) = _run_on("lookup_sparse_table", {"W": ("w", scope.find_var("w").value),
                                             "Ids": ("ids", ids)},
                     ["out"], attrs={"is_test": True}, scope=scope)
    # at test time unseen ids read zeros and the table stays as it is
    np.testing.assert_array_equal(np.asarray(out), [values[1], [0, 0], [0, 0]])
    assert scope.find_var("w").value.rows() == [7, 3]


def test_lookup_sparse_table_refuses_to_grow_past_its_rows():
    table = SelectedRows([1], 100, LoDTensor(np.ones((1, 2), "float32")))
    ids = LoDTensor(np.array([[1], [2]], "int64"))
    with pytest.raises(InvalidArgument, match="a free row for id 2"):
        _run_on("lookup_sparse_table", {"W": ("w", table), "Ids": ("ids", ids)}, ["out"])


def test_merge_ids_needs_every_id_in_rows():
    case = OpCase("merge_ids", {"Ids": [np.array([[4]], "int64")], "Rows": MERGE_ROWS,
                                "X": MERGE_X}, outputs={"Out": 1})
    with pytest.raises(InvalidArgument, match="ids present in Rows"):
        run_case(case)


def test_ref_by_trainer_id_checks_the_id():
    case = OpCase("ref_by_trainer_id", {"X": [np.ones((1, 1), "float32")],
                                        "TrainerId": np.array([1], "int64")})
    with pytest.raises(InvalidArgument, match=r"in \[0, 1\)"):
        run_case(case)


def test_lookup_table_dequant_needs_a_float_table():
    assert_build_fails("lookup_table_dequant", {"W": TABLE.astype("float64"),
                                                "Ids": np.array([[1]], "int64")}, {},
                       "W", "float32")


def test_lookup_sparse_table_runs_on_the_strict_device():
    from fluid_nb.testing.strict_device import DeviceArray, StrictDevicePlace, to_device
    values = np.arange(8, dtype="float32").reshape(4, 2)
    table = SelectedRows([5], 100, LoDTensor(to_device(values)))
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="w", type=SELECTED_ROWS, dtype="float32", shape=[100, 2],
                     persistable=True)
    block.create_var(name="ids", dtype="int64", shape=[3, 1], persistable=True)
    block.create_var(name="out", persistable=True)
    block.append_op(type="lookup_sparse_table", inputs={"W": ["w"], "Ids": ["ids"]},
                    outputs={"Out": ["out"]})
    scope = fluid.Scope()
    scope.var("w").value = table
    scope.var("ids").value = LoDTensor(to_device(np.array([[5], [8], [5]], "int64")))
    fluid.Executor(StrictDevicePlace()).run(program, scope=scope)
    out = scope.find_var("out").value.array
    assert isinstance(out, DeviceArray)
    np.testing.assert_array_equal(out.get(), values[[0, 1, 0]])
    assert table.rows() == [5, 8]
