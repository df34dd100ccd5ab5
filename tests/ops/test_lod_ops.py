"""LoD and tensor-array ops (lod_ops.py, array_ops.py) against NumPy references.

Rank tables and tensor arrays cannot be fed by the table harness, so ops that take them are
tested with small hand-built programs (``_run``) and a finite-difference check over a chain
of ops (``_grad_check``).
"""
import copy
import pickle

import numpy as np
import pytest

import fluid_nb as fluid
import fluid_nb.ops.array_ops  # noqa: F401  (until the family list names these modules)
import fluid_nb.ops.lod_ops  # noqa: F401
from fluid_nb.errors import InvalidArgument, OutOfRange
from fluid_nb.tensor.lod_rank_table import LoDRankTable
from fluid_nb.tensor.tensor import LoDTensor, LoDTensorArray
from fluid_nb.tensor.dtypes import VarType
from fluid_nb.ops import registry

from .op_test import OpCase, assert_build_fails, check_output, table_tests

rng = np.random.RandomState(0)


def r(*shape, dtype="float32"):
    return rng.uniform(-1, 1, shape).astype(dtype)


# --- hand-built programs -------------------------------------------------------------------
def _program(ops, feeds):
    program = fluid.Program()
    block = program.global_block()
    for name, (value, lod) in feeds.items():
        block.create_var(name=name, shape=value.shape, dtype=value.dtype,
                         lod_level=len(lod) if lod else 0)
    made = [block.append_op(type=t, inputs=i, outputs=o, attrs=a or {}) for t, i, o, a in ops]
    return program, made


def _feed(feeds):
    return {n: (v, [list(l) for l in lod]) if lod else v for n, (v, lod) in feeds.items()}


def _run(ops, feeds, fetch, program=None):
    program = program or _program(ops, feeds)[0]
    exe = fluid.Executor(fluid.CPUPlace())
    return exe.run(program, feed=_feed(feeds), fetch_list=list(fetch), scope=fluid.Scope(),
                   return_numpy=False)


def _data(value, lod=None):
    return (np.asarray(value), lod)


def _ix(i):
    return _data(np.array([i], "int64"))


def _rank_op(x="x", out="table", level=0):
    return ("lod_rank_table", {"X": [x]}, {"Out": [out]}, {"level": level})


def _grad_check(ops, feeds, wrt="x", out="y", lod_of_grad=True, delta=1e-6):
    """d sum(w * y) / d wrt: the ops' grad ops (in reverse) against central differences."""
    feeds = {n: (v.astype("float64") if v.dtype.kind == "f" else v, lod)
             for n, (v, lod) in feeds.items()}
    (y,) = _run(ops, feeds, [out])
    w = np.random.RandomState(3).uniform(0.5, 1.5, np.asarray(y).shape)

    def loss(value):
        fed = dict(feeds)
        fed[wrt] = (value, feeds[wrt][1])
        (got,) = _run(ops, fed, [out])
        return float((np.asarray(got) * w).sum())

    program, made = _program(ops, feeds)
    block = program.global_block()
    block.create_var(name=out + "@GRAD", shape=w.shape, dtype="float64")
    grad_feeds = dict(feeds)
    grad_feeds[out + "@GRAD"] = (w, y.lod() if lod_of_grad else None)
    for op in reversed(made):
        for spec in registry.make_grad_ops(op):
            block.append_op(type=spec.type, inputs=spec.inputs, outputs=spec.outputs,
                            attrs=spec.attrs)
    (analytic,) = _run(None, grad_feeds, [wrt + "@GRAD"], program)
    base = feeds[wrt][0]
    numeric = np.zeros_like(base)
    for k in range(base.size):
        plus, minus = base.copy().reshape(-1), base.copy().reshape(-1)
        plus[k] += delta
        minus[k] -= delta
        numeric.reshape(-1)[k] = (loss(plus.reshape(base.shape))
                                  - loss(minus.reshape(base.shape))) / (2 * delta)
    np.testing.assert_allclose(np.asarray(analytic), numeric, rtol=1e-5, atol=1e-7)
    return analytic


# --- NumPy references ------------------------------------------------------------------------
def ref_rank_table(offsets):
    lengths = np.diff(offsets)
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])  # sorted() is stable
    return [(i, int(lengths[i])) for i in order]


def ref_time_steps(x, offsets, table):
    """Step t: row t of each ranked sequence longer than t."""
    steps = []
    for t in range(table[0][1] if table else 0):
        rows = [offsets[i] + t for i, n in table if n > t]
        steps.append(x[rows])
    return steps


# --- the design documents' DynamicRNN example ---------------------------------------------------
DRNN_LOD = [[0, 10, 18, 23, 30]]  # lengths 10, 8, 5, 7


def test_dynamic_rnn_walkthrough():
    x = np.arange(60, dtype="float32").reshape(30, 2)
    memory = r(4, 3)
    steps = 10
    feeds = {"x": _data(x, DRNN_LOD), "mem": _data(memory)}
    ops = [_rank_op(),
           ("max_sequence_len", {"RankTable": ["table"]}, {"Out": ["max_len"]}, None),
           ("lod_tensor_to_array", {"X": ["x"], "RankTable": ["table"]}, {"Out": ["arr"]}, None),
           ("lod_array_length", {"X": ["arr"]}, {"Out": ["n"]}, None),
           ("reorder_lod_tensor_by_rank", {"X": ["mem"], "RankTable": ["table"]},
            {"Out": ["mem_ranked"]}, None),
           ("array_to_lod_tensor", {"X": ["arr"], "RankTable": ["table"]}, {"Out": ["back"]},
            None)]
    for t in range(steps):
        feeds[f"i{t}"] = _ix(t)
        ops.append(("shrink_rnn_memory", {"X": ["mem_ranked"], "RankTable": ["table"],
                                          "I": [f"i{t}"]}, {"Out": [f"shrunk{t}"]}, None))
    fetch = ["table", "max_len", "arr", "n", "mem_ranked", "back"] + [f"shrunk{t}"
                                                                       for t in range(steps)]
    table, max_len, arr, n, ranked, back, *shrunk = _run(ops, feeds, fetch)

    assert isinstance(table, LoDRankTable) and table.level == 0
    assert table.items() == [(0, 10), (1, 8), (3, 7), (2, 5)]
    assert [i for i, _ in table] == [0, 1, 3, 2]
    assert np.asarray(max_len).tolist() == [10] and np.asarray(n).tolist() == [10]

    assert isinstance(arr, LoDTensorArray) and len(arr) == steps
    sizes = [np.asarray(step).shape[0] for step in arr]
    assert sizes == [4, 4, 4, 4, 4, 3, 3, 2, 1, 1]
    for got, want in zip(arr, ref_time_steps(x, DRNN_LOD[0], table)):
        np.testing.assert_array_equal(np.asarray(got), want)
        assert got.lod() == []
    # step 0 holds the first rows of sequences 0, 1, 3, 2; step 9 only sequence 0's last row
    np.testing.assert_array_equal(np.asarray(arr[0])[:, 0], [0, 20, 46, 36])
    np.testing.assert_array_equal(np.asarray(arr[9]), x[[9]])

    np.testing.assert_array_equal(np.asarray(ranked), memory[[0, 1, 3, 2]])
    for t, got in enumerate(shrunk):
        np.testing.assert_array_equal(np.asarray(got), memory[[0, 1, 3, 2]][:sizes[t]])

    np.testing.assert_array_equal(np.asarray(back), x)  # the round trip restores the order
    assert back.lod() == DRNN_LOD


# --- rank tables -----------------------------------------------------------------------------
def test_rank_table_is_stable_and_keeps_empty_sequences_last():
    offsets = [0, 2, 2, 5, 7, 7]  # lengths 2, 0, 3, 2, 0
    (table,) = _run([_rank_op()], {"x": _data(r(7, 1), [offsets])}, ["table"])
    assert table.items() == ref_rank_table(offsets) == [(2, 3), (0, 2), (3, 2), (1, 0), (4, 0)]
    assert table.lengths_by_index() == [2, 0, 3, 2, 0]
    assert [table.batch_size_at(t) for t in range(4)] == [3, 3, 1, 0]


def test_rank_table_batch_sizes_and_copies():
    table = LoDRankTable([(2, 3), (0, 2), (3, 2), (1, 0)], [[0, 4]])
    assert [table.batch_size_at(t) for t in range(-1, 5)] == [4, 3, 3, 1, 0, 0]
    for other in (table.copy(), copy.deepcopy(table), pickle.loads(pickle.dumps(table))):
        assert isinstance(other, LoDRankTable) and other is not table
        assert other.items() == table.items() and other.coarse_lod == [[0, 4]]
        assert other.coarse_lod is not table.coarse_lod
        assert [other.batch_size_at(t) for t in range(4)] == [3, 3, 1, 0]
    assert LoDRankTable().batch_size_at(0) == 0


def test_rank_table_op_reruns_on_other_and_equal_lods():
    """The op keeps its last table: an equal LoD gets an equal table of its own, another
    LoD a table of its own ranking."""
    program = _program([_rank_op()], {"x": _data(r(6, 1), [[0, 3, 4, 6]])})[0]
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    tables = []
    for offsets in ([0, 3, 4, 6], [0, 1, 4, 6], [0, 3, 4, 6], [0, 3, 4, 6], [0, 2, 2, 6]):
        (table,) = exe.run(program, feed={"x": (r(6, 1), [offsets])}, fetch_list=["table"],
                           scope=scope, return_numpy=False)
        assert table.items() == ref_rank_table(offsets) and table.coarse_lod == []
        lengths = np.diff(offsets)
        assert [table.batch_size_at(t) for t in range(5)] == \
            [int((lengths > t).sum()) for t in range(5)]
        assert all(table is not earlier for earlier in tables)
        tables.append(table)


def test_rank_table_of_a_lower_level_keeps_the_coarse_lod():
    lod = [[0, 1, 3], [0, 2, 5, 6]]  # 2 paragraphs of 1 and 2 sentences (2, 3, 1 words)
    (t0, t1) = _run([_rank_op(out="t0"), _rank_op(out="t1", level=1)],
                    {"x": _data(r(6, 1), lod)}, ["t0", "t1"])
    assert t0.items() == [(1, 2), (0, 1)] and t0.level == 0 and t0.coarse_lod == []
    assert t1.items() == [(1, 3), (0, 2), (2, 1)] and t1.level == 1
    assert t1.coarse_lod == [[0, 1, 3]]


def test_rank_table_level_past_the_lod_depth_names_the_op():
    with pytest.raises(InvalidArgument, match="lod_rank_table"):
        _run([_rank_op(level=1)], {"x": _data(r(3, 1), [[0, 1, 3]])}, ["table"])


def test_rank_table_compile_time_types():
    program, _ = _program([_rank_op(), ("max_sequence_len", {"RankTable": ["table"]},
                                        {"Out": ["m"]}, None),
                           ("lod_tensor_to_array", {"X": ["x"], "RankTable": ["table"]},
                            {"Out": ["arr"]}, None)],
                          {"x": _data(r(4, 3), [[0, 1, 4]])})
    block = program.global_block()
    assert block.var("table").type == VarType.LOD_RANK_TABLE
    assert block.var("m").shape == (1,) and block.var("m").dtype == VarType.INT64
    assert block.var("arr").type == VarType.LOD_TENSOR_ARRAY
    assert block.var("arr").dtype == VarType.FP32 and block.var("arr").lod_level == 0
    fluid.verify(program)


def test_max_sequence_len_of_empty_table_is_zero():
    (m,) = _run([_rank_op(), ("max_sequence_len", {"RankTable": ["table"]},
                              {"Out": ["m"]}, None)],
                {"x": _data(np.zeros((0, 1), "float32"), [[0]])}, ["m"])
    assert np.asarray(m).tolist() == [0] and np.asarray(m).dtype == np.int64


# --- lod_tensor_to_array / array_to_lod_tensor -----------------------------------------------------
def _round_trip(x, lod, level):
    ops = [_rank_op(level=level),
           ("lod_tensor_to_array", {"X": ["x"], "RankTable": ["table"]}, {"Out": ["arr"]}, None),
           ("array_to_lod_tensor", {"X": ["arr"], "RankTable": ["table"]}, {"Out": ["y"]}, None)]
    return _run(ops, {"x": _data(x, lod)}, ["table", "arr", "y"])


def test_to_array_with_empty_sequences_round_trips():
    lod = [[0, 3, 3, 4, 6]]  # lengths 3, 0, 1, 2
    x = r(6, 2)
    table, arr, y = _round_trip(x, lod, 0)
    assert [np.asarray(a).shape[0] for a in arr] == [3, 2, 1]
    for got, want in zip(arr, ref_time_steps(x, lod[0], table)):
        np.testing.assert_array_equal(np.asarray(got), want)
    np.testing.assert_array_equal(np.asarray(y), x)
    assert y.lod() == lod


def test_round_trip_runs_again_on_larger_and_smaller_batches():
    """array_to_lod_tensor keeps its concatenation buffer between runs; each run's output is
    its own array, and a run of another size is exact too."""
    ops = [_rank_op(),
           ("lod_tensor_to_array", {"X": ["x"], "RankTable": ["table"]}, {"Out": ["arr"]}, None),
           ("array_to_lod_tensor", {"X": ["arr"], "RankTable": ["table"]}, {"Out": ["y"]}, None)]
    small, large = (r(6, 2), [[0, 3, 3, 4, 6]]), (r(10, 2), [[0, 5, 8, 10]])
    program = _program(ops, {"x": _data(*small)})[0]
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    outputs = []
    for x, lod in (small, large, small, large):
        (y,) = exe.run(program, feed={"x": (x, lod)}, fetch_list=["y"], scope=scope,
                       return_numpy=False)
        np.testing.assert_array_equal(np.asarray(y), x)
        assert y.lod() == lod and np.asarray(y).dtype == x.dtype
        outputs.append((np.asarray(y), x))
    for got, want in outputs:  # no output shares memory with a later run's
        np.testing.assert_array_equal(got, want)


def test_round_trip_reruns_on_batches_with_the_same_step_sizes():
    """Both ops keep the row plan of their last run; batches whose steps have the same sizes
    but whose sequences are ranked differently, or that start elsewhere, get their own."""
    ops = [_rank_op(),
           ("lod_tensor_to_array", {"X": ["x"], "RankTable": ["table"]}, {"Out": ["arr"]}, None),
           ("array_to_lod_tensor", {"X": ["arr"], "RankTable": ["table"]}, {"Out": ["y"]}, None)]
    program = _program(ops, {"x": _data(r(6, 2), [[0, 3, 4, 6]])})[0]
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    # lengths 3, 1, 2 / 1, 3, 2 / 2, 1, 3: steps of 3, 2 and 1 rows each time
    for offsets in ([0, 3, 4, 6], [0, 1, 4, 6], [0, 3, 4, 6], [0, 2, 3, 6], [0, 2, 3, 6]):
        x = r(6, 2)
        table, arr, y = exe.run(program, feed={"x": (x, [offsets])},
                                fetch_list=["table", "arr", "y"], scope=scope,
                                return_numpy=False)
        assert table.items() == ref_rank_table(offsets)
        want = ref_time_steps(x, offsets, table)
        assert len(arr) == len(want)
        for got, step in zip(arr, want):
            np.testing.assert_array_equal(np.asarray(got), step)
            assert got.lod() == []
        np.testing.assert_array_equal(np.asarray(y), x)
        assert y.lod() == [offsets]


def test_to_array_at_level_0_of_two_level_lod_keeps_the_inner_lod():
    # 3 paragraphs of 2, 1, 2 sentences; sentences of 1, 2 | 3 | 1, 1 words
    lod = [[0, 2, 3, 5], [0, 1, 3, 6, 7, 8]]
    x = np.arange(8, dtype="float32").reshape(8, 1)
    table, arr, y = _round_trip(x, lod, 0)
    assert table.items() == [(0, 2), (2, 2), (1, 1)]
    # step 0: first sentence of paragraphs 0, 2, 1; step 1: second sentence of 0, 2
    assert arr[0].lod() == [[0, 1, 2, 5]]
    np.testing.assert_array_equal(np.asarray(arr[0]).ravel(), [0, 6, 3, 4, 5])
    assert arr[1].lod() == [[0, 2, 3]]
    np.testing.assert_array_equal(np.asarray(arr[1]).ravel(), [1, 2, 7])
    np.testing.assert_array_equal(np.asarray(y), x)
    assert y.lod() == lod


def test_to_array_at_level_1_round_trips_with_coarse_lod():
    lod = [[0, 2, 3], [0, 2, 5, 6]]
    x = np.arange(6, dtype="float32").reshape(6, 1)
    table, arr, y = _round_trip(x, lod, 1)
    assert table.items() == [(1, 3), (0, 2), (2, 1)]
    np.testing.assert_array_equal(np.asarray(arr[0]).ravel(), [2, 0, 5])
    np.testing.assert_array_equal(np.asarray(arr[2]).ravel(), [4])
    np.testing.assert_array_equal(np.asarray(y), x)
    assert y.lod() == lod


def test_to_array_and_back_gradients():
    ops = [_rank_op(),
           ("lod_tensor_to_array", {"X": ["x"], "RankTable": ["table"]}, {"Out": ["arr"]}, None),
           ("array_to_lod_tensor", {"X": ["arr"], "RankTable": ["table"]}, {"Out": ["y"]}, None)]
    feeds = {"x": _data(r(6, 2), [[0, 1, 4, 6]])}
    _grad_check(ops, feeds)
    _grad_check(ops, feeds, lod_of_grad=False)  # a gradient without LoD: the table's lengths


def test_array_to_lod_tensor_rejects_empty_array():
    ops = [_rank_op(), ("lod_tensor_to_array", {"X": ["x"], "RankTable": ["table"]},
                        {"Out": ["arr"]}, None),
           ("array_to_lod_tensor", {"X": ["arr"], "RankTable": ["table"]}, {"Out": ["y"]}, None)]
    with pytest.raises(InvalidArgument, match="array_to_lod_tensor: input 'X'"):
        _run(ops, {"x": _data(np.zeros((0, 1), "float32"), [[0]])}, ["y"])


# --- shrink_rnn_memory -------------------------------------------------------------------------
def _shrink(x, lod, step, table_lod=DRNN_LOD):
    ops = [_rank_op("t", "table"),
           ("shrink_rnn_memory", {"X": ["x"], "RankTable": ["table"], "I": ["i"]},
            {"Out": ["y"]}, None)]
    feeds = {"t": _data(r(table_lod[-1][-1], 1), table_lod), "x": _data(x, lod), "i": _ix(step)}
    return ops, feeds


def test_shrink_rnn_memory_with_lod_shrinks_sequences():
    x = r(6, 2)
    ops, feeds = _shrink(x, [[0, 1, 3, 4, 6]], 5)  # 3 sequences longer than 5
    (y,) = _run(ops, feeds, ["y"])
    np.testing.assert_array_equal(np.asarray(y), x[:4])
    assert y.lod() == [[0, 1, 3, 4]]
    ops, feeds = _shrink(x, [[0, 1, 3], [0, 1, 3, 6]], 8)  # two levels: keep 1 paragraph
    (y,) = _run(ops, feeds, ["y"])
    np.testing.assert_array_equal(np.asarray(y), x[:1])
    assert y.lod() == [[0, 1], [0, 1]]


def test_shrink_rnn_memory_past_the_longest_is_empty():
    ops, feeds = _shrink(r(4, 3), None, 10)
    (y,) = _run(ops, feeds, ["y"])
    assert np.asarray(y).shape == (0, 3)


def test_shrink_rnn_memory_gradient_pads_with_zeros():
    ops, feeds = _shrink(r(4, 3), None, 7)
    dx = _grad_check(ops, feeds)
    assert np.all(np.asarray(dx)[2:] == 0)


# --- reorder_lod_tensor_by_rank ------------------------------------------------------------------
def _reorder(x, lod, table_lod):
    ops = [_rank_op("t", "table"),
           ("reorder_lod_tensor_by_rank", {"X": ["x"], "RankTable": ["table"]},
            {"Out": ["y"]}, None)]
    return ops, {"t": _data(r(table_lod[-1][-1], 1), table_lod), "x": _data(x, lod)}


def test_reorder_by_rank_moves_whole_sequences():
    x = np.arange(7, dtype="float32").reshape(7, 1)
    ops, feeds = _reorder(x, [[0, 1, 3, 3, 7]], [[0, 1, 3, 6, 8]])  # ranks 2, 1, 3, 0
    (y,) = _run(ops, feeds, ["y"])
    np.testing.assert_array_equal(np.asarray(y).ravel(), [1, 2, 3, 4, 5, 6, 0])
    assert y.lod() == [[0, 0, 2, 6, 7]]


def test_reorder_by_rank_of_a_two_level_tensor():
    x = np.arange(5, dtype="float32").reshape(5, 1)
    ops, feeds = _reorder(x, [[0, 1, 3], [0, 2, 3, 5]], [[0, 1, 3]])  # ranks 1, 0
    (y,) = _run(ops, feeds, ["y"])
    np.testing.assert_array_equal(np.asarray(y).ravel(), [2, 3, 4, 0, 1])
    assert y.lod() == [[0, 2, 3], [0, 1, 3, 5]]


def test_reorder_by_rank_gradient():
    ops, feeds = _reorder(r(4, 2), None, DRNN_LOD)
    _grad_check(ops, feeds)
    ops, feeds = _reorder(r(5, 1), [[0, 2, 3, 3, 5]], DRNN_LOD)
    _grad_check(ops, feeds)


def test_reorder_by_rank_gradient_through_a_mean():
    # mean_grad must hand back X's LoD, or the reorder's grad sees rows, not sequences
    ops, feeds = _reorder(r(5, 2), [[0, 2, 3, 3, 5]], DRNN_LOD)
    ops.append(("mean", {"X": ["y"]}, {"Out": ["m"]}, None))
    _grad_check(ops, feeds, out="m")


def test_split_and_merge_gradient_through_a_reduce_sum():
    # the merge's grad splits y@GRAD by sequences: reduce_sum_grad must give it y's LoD
    ops = [("split_lod_tensor", {"X": ["x"], "Mask": ["mask"]},
            {"OutTrue": ["t"], "OutFalse": ["f"]}, None),
           ("merge_lod_tensor", {"X": ["x"], "Mask": ["mask"], "InTrue": ["t"],
                                 "InFalse": ["f"]}, {"Out": ["y"]}, None),
           ("reduce_sum", {"X": ["y"]}, {"Out": ["s"]}, {"dim": [1]})]
    feeds = {"x": _data(r(6, 2), [[0, 2, 2, 5, 6]]), "mask": _data(MASK)}
    _grad_check(ops, feeds, out="s")


def test_reorder_index_out_of_range():
    ops, feeds = _reorder(r(2, 1), None, DRNN_LOD)
    with pytest.raises(OutOfRange, match="reorder_lod_tensor_by_rank"):
        _run(ops, feeds, ["y"])


# --- tensor arrays -----------------------------------------------------------------------------
def test_write_then_read_array_and_its_length():
    a, b = r(2, 3), r(1, 3)
    ops = [("write_to_array", {"X": ["a"], "I": ["i0"]}, {"Out": ["arr"]}, None),
           ("write_to_array", {"X": ["b"], "I": ["i2"]}, {"Out": ["arr"]}, None),
           ("lod_array_length", {"X": ["arr"]}, {"Out": ["n"]}, None),
           ("read_from_array", {"X": ["arr"], "I": ["i2"]}, {"Out": ["back_b"]}, None),
           ("read_from_array", {"X": ["arr"], "I": ["i0"]}, {"Out": ["back_a"]}, None)]
    feeds = {"a": _data(a, [[0, 2]]), "b": _data(b), "i0": _ix(0), "i2": _ix(2)}
    arr, n, back_b, back_a = _run(ops, feeds, ["arr", "n", "back_b", "back_a"])
    assert isinstance(arr, LoDTensorArray) and len(arr) == 3
    assert not arr[1]._is_initialized()
    assert np.asarray(n).tolist() == [3]
    np.testing.assert_array_equal(np.asarray(back_a), a)
    assert back_a.lod() == [[0, 2]]
    np.testing.assert_array_equal(np.asarray(back_b), b)


def test_write_to_array_types_at_compile_time():
    program, _ = _program([("write_to_array", {"X": ["a"], "I": ["i"]}, {"Out": ["arr"]}, None),
                           ("read_from_array", {"X": ["arr"], "I": ["i"]}, {"Out": ["y"]}, None)],
                          {"a": _data(r(2, 3), [[0, 2]]), "i": _ix(0)})
    block = program.global_block()
    assert block.var("arr").type == VarType.LOD_TENSOR_ARRAY
    assert block.var("arr").lod_level == 1
    assert block.var("y").type == VarType.LOD_TENSOR and block.var("y").shape == (2, 3)
    grads = registry.make_grad_ops(program.global_block().ops[0])
    assert [(g.type, g.inputs, g.outputs) for g in grads] == [
        ("read_from_array", {"X": ["arr@GRAD"], "I": ["i"]}, {"Out": ["a@GRAD"]})]


def test_write_and_read_array_gradients():
    ops = [("write_to_array", {"X": ["x"], "I": ["i"]}, {"Out": ["arr"]}, None),
           ("read_from_array", {"X": ["arr"], "I": ["i"]}, {"Out": ["y"]}, None)]
    _grad_check(ops, {"x": _data(r(2, 3)), "i": _ix(1)})


def test_write_to_array_with_a_bad_index_shape():
    with pytest.raises(InvalidArgument, match="write_to_array: input 'I'"):
        _program([("write_to_array", {"X": ["a"], "I": ["i"]}, {"Out": ["arr"]}, None)],
                 {"a": _data(r(2)), "i": _data(np.array([0, 1], "int64"))})


def test_write_to_array_does_not_change_an_array_already_read():
    ops = [("write_to_array", {"X": ["a"], "I": ["i"]}, {"Out": ["arr"]}, None)]
    (arr,) = _run(ops, {"a": _data(r(2)), "i": _ix(0)}, ["arr"])
    kernel = registry.get("write_to_array").kernel_for("cpu")

    class Ctx:
        xp = np
        attrs = {}

        class executor:  # a later run than the one that made ``arr``
            run_token = object()

        class scope:
            @staticmethod
            def find_var(name):
                class Holder:
                    value = arr
                return Holder

        @staticmethod
        def output_names(slot):
            return ["arr"]
    new = kernel(Ctx, LoDTensor(np.ones(2, "float32")), LoDTensor(np.array([1])))
    assert len(arr) == 1 and len(new) == 2 and new[0] is arr[0]


# --- harness cases -----------------------------------------------------------------------------
def ref_split(i, a):
    mask = i["Mask"].ravel().astype(bool)
    return {"OutTrue": i["X"][mask], "OutFalse": i["X"][~mask]}


def ref_merge(i, a):
    mask = i["Mask"].ravel().astype(bool)
    out = np.zeros((mask.size,) + i["InTrue"].shape[1:], i["InTrue"].dtype)
    out[mask], out[~mask] = i["InTrue"], i["InFalse"]
    return {"Out": out}


def _only_selected(outs, branch, x):
    for k, out in enumerate(outs):
        if k == branch:
            np.testing.assert_array_equal(np.asarray(out), x)
        else:
            assert out is None, f"select_output wrote the unselected Out[{k}]"


def _same_table(table, items, level=0):
    assert isinstance(table, LoDRankTable) and table.items() == items and table.level == level


def _written_at_0(array, x):
    assert isinstance(array, LoDTensorArray) and len(array) == 1
    np.testing.assert_array_equal(np.asarray(array[0]), x)
    assert array[0].lod() == [[0, 2]]


MASK = np.array([[True], [False], [False], [True]])

CASES = [
    OpCase("split_lod_tensor", {"X": r(4, 3), "Mask": MASK}, ref=ref_split, grad=["X"],
           name="rows"),
    OpCase("split_lod_tensor", {"X": np.arange(6, dtype="float32").reshape(6, 1),
                                "Mask": MASK}, lod={"X": [[0, 2, 2, 5, 6]]},
           ref=lambda i, a: {"OutTrue": (i["X"][[0, 1, 5]], [[0, 2, 3]]),
                             "OutFalse": (i["X"][[2, 3, 4]], [[0, 0, 3]])},
           name="lod_with_empty_sequence"),
    OpCase("split_lod_tensor", {"X": np.arange(5, dtype="float32").reshape(5, 1),
                                "Mask": np.array([[False], [True], [True]])},
           attrs={"level": 1}, lod={"X": [[0, 1, 3], [0, 2, 3, 5]]},
           ref=lambda i, a: {"OutTrue": (i["X"][[2, 3, 4]], [[0, 1, 3]]),
                             "OutFalse": (i["X"][[0, 1]], [[0, 2]])},
           name="level1"),
    OpCase("merge_lod_tensor", {"X": r(4, 1), "Mask": MASK, "InTrue": r(2, 3),
                                "InFalse": r(2, 3)},
           ref=ref_merge, grad=["InTrue", "InFalse"], name="rows"),
    *[OpCase(op_type, {"X": r(5, 1), "Mask": np.array([[False], [True], [True]]),
                       "InTrue": np.arange(3, dtype="float32").reshape(3, 1),
                       "InFalse": np.arange(10, 12, dtype="float32").reshape(2, 1)},
             attrs={"level": 1}, lod={"X": [[0, 1, 3], [0, 2, 3, 5]], "InTrue": [[0, 1, 3]],
                                      "InFalse": [[0, 2]]},
             ref=lambda i, a: {"Out": (np.array([[10], [11], [0], [1], [2]], "float32"),
                                       [[0, 1, 3], [0, 2, 3, 5]])},
             name="level1")
      # merge_lod_tensor_infer (what Paddle's inference rewrite uses) merges the same way
      for op_type in ("merge_lod_tensor", "merge_lod_tensor_infer")],
    OpCase("merge_lod_tensor", {"X": r(3, 1), "Mask": np.array([[True], [False], [True]]),
                                "InTrue": np.arange(3, dtype="float32").reshape(3, 1),
                                "InFalse": np.zeros((0, 1), "float32")},
           lod={"InTrue": [[0, 2, 3]], "InFalse": [[0, 0]]},
           ref=lambda i, a: {"Out": (np.array([[0], [1], [2]], "float32"), [[0, 2, 2, 3]])},
           name="empty_sequence"),
    OpCase("lod_rank_table", {"X": r(7, 1)}, lod={"X": [[0, 2, 2, 5, 7]]},
           check=lambda res, i, a: _same_table(res["Out"], [(2, 3), (0, 2), (3, 2), (1, 0)])),
    OpCase("lod_rank_table", {"X": r(6, 1)}, attrs={"level": 1},
           lod={"X": [[0, 1, 3], [0, 2, 5, 6]]},
           check=lambda res, i, a: _same_table(res["Out"], [(1, 3), (0, 2), (2, 1)], 1)),
    # (the harness reads an array output as a list of tensors: index 0 keeps it initialised)
    OpCase("write_to_array", {"X": r(2, 3), "I": np.array([0], "int64")},
           lod={"X": [[0, 2]]}, check=lambda res, i, a: _written_at_0(res["Out"], i["X"])),
    OpCase("is_empty", {"X": r(2, 3)}, ref=lambda i, a: {"Out": np.array([False])}),
    OpCase("is_empty", {"X": np.zeros((0, 3), "float32")},
           ref=lambda i, a: {"Out": np.array([True])}, name="empty"),
    OpCase("fill_constant_batch_size_like", {"Input": r(5, 2)},
           attrs={"shape": [-1, 3], "value": 1.5},
           ref=lambda i, a: {"Out": np.full((5, 3), 1.5, "float32")}),
    OpCase("fill_constant_batch_size_like", {"Input": r(2, 7)},
           attrs={"shape": [4, -1, 2], "dtype": int(VarType.INT64), "input_dim_idx": 1,
                  "output_dim_idx": 1, "str_value": "9000000000"},
           ref=lambda i, a: {"Out": np.full((4, 7, 2), 9000000000, "int64")}, name="dims"),
    OpCase("fill_constant_batch_size_like", {"Input": r(3, 2)},
           attrs={"shape": [-1, 2], "dtype": int(VarType.BOOL), "value": 0.5},
           ref=lambda i, a: {"Out": np.ones((3, 2), bool)}, name="bool_is_the_truth"),
    OpCase("select_input", {"X": [r(2, 3), r(2, 3), r(2, 3)],
                            "Mask": np.array([1], "int32")},
           ref=lambda i, a: {"Out": i["X"][1]}),
    OpCase("select_output", {"X": r(2, 3), "Mask": np.array([2], "int32")},
           outputs={"Out": 3}, check=lambda res, i, a: _only_selected(res["Out"], 2, i["X"])),
]


(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


def test_split_and_merge_with_lod_gradients():
    ops = [("split_lod_tensor", {"X": ["x"], "Mask": ["m"]},
            {"OutTrue": ["t"], "OutFalse": ["f"]}, None),
           ("merge_lod_tensor", {"X": ["x"], "Mask": ["m"], "InTrue": ["t"], "InFalse": ["f"]},
            {"Out": ["y"]}, None)]
    feeds = {"x": _data(r(6, 2), [[0, 2, 2, 5, 6]]), "m": _data(MASK)}
    (y,) = _run(ops, feeds, ["y"])
    np.testing.assert_array_equal(np.asarray(y), feeds["x"][0])
    assert y.lod() == [[0, 2, 2, 5, 6]]
    _grad_check(ops, feeds)


def test_split_mask_must_be_a_column():
    assert_build_fails("split_lod_tensor", {"X": r(4, 3), "Mask": np.ones((4, 2), bool)}, {},
                       "Mask", "[4, 2]")


def test_split_mask_must_match_the_sequences():
    case = OpCase("split_lod_tensor", {"X": r(4, 3), "Mask": MASK[:3]})
    with pytest.raises(InvalidArgument, match="split_lod_tensor: input 'Mask'"):
        check_output(case)


def test_fill_constant_batch_size_like_counts_sequences():
    ops = [("fill_constant_batch_size_like", {"Input": ["x"]}, {"Out": ["y"]},
            {"shape": [-1, 2], "value": 3.0})]
    feeds = {"x": _data(r(6, 1), [[0, 2, 6]])}
    program, _ = _program(ops, feeds)
    (y,) = _run(None, feeds, ["y"], _relaxed(program))
    np.testing.assert_array_equal(np.asarray(y), np.full((2, 2), 3.0, "float32"))


def _relaxed(program):
    """The same program with its rows unknown at compile time (as data layers declare)."""
    for var in program.global_block().vars.values():
        if var.shape:
            var.shape = (-1,) + tuple(var.shape[1:])
    program._changed()
    return program


def test_fill_constant_batch_size_like_bad_index():
    assert_build_fails("fill_constant_batch_size_like", {"Input": r(2, 3)},
                       {"shape": [-1, 3], "output_dim_idx": 2}, "output_dim_idx")


def test_select_input_and_output_gradients_reach_the_selected_branch():
    ops = [("select_output", {"X": ["x"], "Mask": ["m"]}, {"Out": ["o0", "o1"]}, None),
           ("select_input", {"X": ["o0", "o1"], "Mask": ["m"]}, {"Out": ["y"]}, None)]
    feeds = {"x": _data(r(2, 3)), "m": _data(np.array([1], "int32"))}
    (y,) = _run(ops, feeds, ["y"])
    np.testing.assert_array_equal(np.asarray(y), feeds["x"][0])
    _grad_check(ops, feeds)


def test_select_input_passes_tensor_arrays():
    ops = [("write_to_array", {"X": ["a"], "I": ["i"]}, {"Out": ["arr0"]}, None),
           ("write_to_array", {"X": ["b"], "I": ["i"]}, {"Out": ["arr1"]}, None),
           ("select_input", {"X": ["arr0", "arr1"], "Mask": ["m"]}, {"Out": ["arr"]}, None)]
    feeds = {"a": _data(r(1)), "b": _data(r(1)), "i": _ix(0),
             "m": _data(np.array([0], "int32"))}
    program, _ = _program(ops, feeds)
    assert program.global_block().var("arr").type == VarType.LOD_TENSOR_ARRAY
    (arr,) = _run(None, feeds, ["arr"], program)
    assert isinstance(arr, LoDTensorArray)
    np.testing.assert_array_equal(np.asarray(arr[0]), feeds["a"][0])


def test_select_mask_out_of_range():
    ops = [("select_input", {"X": ["a", "b"], "Mask": ["m"]}, {"Out": ["y"]}, None)]
    feeds = {"a": _data(r(1)), "b": _data(r(1)), "m": _data(np.array([2], "int32"))}
    with pytest.raises(InvalidArgument, match=r"select_input: input 'Mask'"):
        _run(ops, feeds, ["y"])


def test_grad_makers_use_paddles_grad_ops():
    program, made = _program(
        [_rank_op(),
         ("lod_tensor_to_array", {"X": ["x"], "RankTable": ["table"]}, {"Out": ["arr"]}, None),
         ("array_to_lod_tensor", {"X": ["arr"], "RankTable": ["table"]}, {"Out": ["y"]}, None),
         ("reorder_lod_tensor_by_rank", {"X": ["x"], "RankTable": ["table"]}, {"Out": ["z"]},
          None)],
        {"x": _data(r(3, 1), [[0, 1, 3]])})
    types = [[(g.type, g.inputs, g.outputs) for g in registry.make_grad_ops(op)] for op in made]
    assert types[0] == []
    assert types[1] == [("array_to_lod_tensor", {"X": ["arr@GRAD"], "RankTable": ["table"]},
                         {"Out": ["x@GRAD"]})]
    assert types[2] == [("lod_tensor_to_array", {"X": ["y@GRAD"], "RankTable": ["table"]},
                         {"Out": ["arr@GRAD"]})]
    assert types[3] == [("reorder_lod_tensor_by_rank_grad",
                         {"X": ["z@GRAD"], "RankTable": ["table"]}, {"Out": ["x@GRAD"]})]
