"""Index, repeat, pad and crop ops against NumPy, with float64 finite-difference gradients."""
import numpy as np
import pytest

from fluid_nb.errors import InvalidArgument

from .op_test import OpCase, assert_build_fails, check_output, table_tests

rng = np.random.RandomState(3)


def r(*shape, dtype="float32"):
    return rng.uniform(-1, 1, shape).astype(dtype)


def ints(*values, dtype="int64"):
    return np.array(values, dtype=dtype)


X23 = r(2, 3)
X234 = r(2, 3, 4)
X45 = r(4, 5)


def _gather_nd_ref(i, a):
    x, index = i["X"], i["Index"]
    return {"Out": x[tuple(index[..., k] for k in range(index.shape[-1]))]}


def _scatter_nd_add_ref(i, a):
    out = i["X"].copy()
    index, updates = i["Index"], i["Updates"]
    depth = index.shape[-1]
    flat_index = index.reshape(-1, depth)
    rows = updates.reshape((flat_index.shape[0],) + out.shape[depth:])
    for coord, row in zip(flat_index, rows):
        out[tuple(coord)] += row
    return {"Out": out}


def _scatter_ref(i, a):
    out = i["X"].copy()
    ids = i["Ids"].reshape(-1)
    if a.get("overwrite", True):
        for k, row in enumerate(ids):
            out[row] = i["Updates"][k]
    else:
        out[ids] = 0
        for k, row in enumerate(ids):
            out[row] += i["Updates"][k]
    return {"Out": out}


def _strided_ref(index, drop=()):
    def ref(i, a):
        out = i["Input"][index]
        return {"Out": out.reshape([d for k, d in enumerate(out.shape) if k not in drop])}
    return ref


def _multiplex_ref(i, a):
    ids = i["Ids"].reshape(-1)
    return {"Out": np.stack([i["X"][k][row] for row, k in enumerate(ids)])}


def _shard_ref(index_num, nshards, shard_id, ignore=-1):
    def ref(i, a):
        size = (index_num + nshards - 1) // nshards
        x = i["X"]
        return {"Out": np.where(x // size == shard_id, x - shard_id * size, ignore)}
    return ref


INDEX_CASES = [
    OpCase("expand", {"X": X23}, attrs={"expand_times": [2, 3]},
           ref=lambda i, a: {"Out": np.tile(i["X"], (2, 3))}, grad=["X"]),
    OpCase("expand", {"X": X234}, attrs={"expand_times": [1, 2, 1]},
           ref=lambda i, a: {"Out": np.tile(i["X"], (1, 2, 1))}, grad=["X"], name="rank3"),
    OpCase("expand", {"X": X23, "ExpandTimes": ints(3, 1, dtype="int32")},
           ref=lambda i, a: {"Out": np.tile(i["X"], (3, 1))}, grad=["X"],
           name="expand_times_tensor_whole"),
    OpCase("expand", {"X": X23, "expand_times_tensor": [ints(1, dtype="int32"),
                                                        ints(2, dtype="int32")]},
           attrs={"expand_times": [1, -1]},
           ref=lambda i, a: {"Out": np.tile(i["X"], (1, 2))}, grad=["X"],
           name="expand_times_tensor_list"),
    OpCase("expand", {"X": ints(1, 2, dtype="int32").reshape(2, 1)},
           attrs={"expand_times": [1, 3]},
           ref=lambda i, a: {"Out": np.tile(i["X"], (1, 3))}, name="int32"),
    OpCase("expand_as", {"X": X23, "target_tensor": r(4, 6)},
           ref=lambda i, a: {"Out": np.tile(i["X"], (2, 2))}, grad=["X"]),
    OpCase("gather_nd", {"X": X234, "Index": ints([1, 2], [0, 0], [1, 0])},
           ref=_gather_nd_ref, grad=["X"]),
    OpCase("gather_nd", {"X": X234, "Index": ints([[1], [1]], [[0], [1]])},
           ref=_gather_nd_ref, grad=["X"], name="rows_repeated"),
    OpCase("gather_nd", {"X": X234, "Index": ints([1, 2, 3], [0, 1, 0], dtype="int32")},
           ref=_gather_nd_ref, grad=["X"], name="full_coordinates"),
    OpCase("scatter_nd_add", {"X": X234, "Index": ints([1, 2], [0, 0], [1, 2]),
                              "Updates": r(3, 4)},
           ref=_scatter_nd_add_ref, grad=["X", "Updates"]),
    OpCase("scatter_nd_add", {"X": X234, "Index": ints([[1]], [[0]]), "Updates": r(2, 1, 3, 4)},
           ref=_scatter_nd_add_ref, grad=["X", "Updates"], name="rows"),
    OpCase("scatter", {"X": X45, "Ids": ints(3, 0), "Updates": r(2, 5)},
           ref=_scatter_ref, grad=["X", "Updates"]),
    OpCase("scatter", {"X": X45, "Ids": ints(1, 1, 2), "Updates": r(3, 5)},
           attrs={"overwrite": False}, ref=_scatter_ref, grad=["X", "Updates"],
           name="accumulate_repeats"),
    OpCase("scatter", {"X": X45, "Ids": ints(2, 2, dtype="int32"), "Updates": r(2, 5)},
           ref=_scatter_ref, name="overwrite_last_wins"),
    OpCase("strided_slice", {"Input": X234},
           attrs={"axes": [1, 2], "starts": [0, -1], "ends": [3, 0], "strides": [2, -2]},
           ref=_strided_ref(np.s_[:, 0:3:2, -1:0:-2]), grad=["Input"]),
    OpCase("strided_slice", {"Input": X234},
           attrs={"axes": [0, 2], "starts": [1, 1], "ends": [2, 100], "strides": [1, 1],
                  "decrease_axis": [0]},
           ref=_strided_ref(np.s_[1:2, :, 1:], drop=(0,)), grad=["Input"],
           name="decrease_and_clip"),
    OpCase("strided_slice", {"Input": r(6), "StartsTensor": ints(5, dtype="int32"),
                             "EndsTensor": ints(-7, dtype="int32"),
                             "StridesTensor": ints(-2, dtype="int32")},
           attrs={"axes": [0]}, ref=_strided_ref(np.s_[5::-2]), grad=["Input"],
           name="tensors_reverse_to_start"),
    OpCase("strided_slice", {"Input": X234, "StartsTensorList": [ints(1, dtype="int32")],
                             "EndsTensorList": [ints(3, dtype="int32")],
                             "StridesTensorList": [ints(1, dtype="int32")]},
           attrs={"axes": [1], "starts": [-1], "ends": [3], "strides": [1],
                  "infer_flags": [-1]},
           ref=_strided_ref(np.s_[:, 1:3]), name="tensor_lists"),
    OpCase("multiplex", {"Ids": ints([1], [0], [2]), "X": [r(3, 2), r(3, 2), r(3, 2)]},
           ref=_multiplex_ref, grad=["X"]),
    OpCase("shard_index", {"X": ints([1], [6], [12], [19])},
           attrs={"index_num": 20, "nshards": 2, "shard_id": 0},
           ref=_shard_ref(20, 2, 0)),
    OpCase("shard_index", {"X": ints([1], [6], [12], [19])},
           attrs={"index_num": 20, "nshards": 3, "shard_id": 2, "ignore_value": -5},
           ref=_shard_ref(20, 3, 2, -5), name="uneven_shards"),
]

CASES = INDEX_CASES

test_output_matches_numpy, test_grad_matches_finite_differences = table_tests(CASES)


def test_expand_refuses_times_of_another_rank():
    assert_build_fails("expand", {"X": X23}, {"expand_times": [2]}, "expand_times")


def test_gather_nd_refuses_coordinates_outside_x():
    with pytest.raises(InvalidArgument, match="gather_nd"):
        check_output(OpCase("gather_nd", {"X": X23, "Index": ints([2, 0])},
))


def test_strided_slice_refuses_an_empty_range():
    assert_build_fails("strided_slice", {"Input": X23},
                       {"axes": [1], "starts": [2], "ends": [1], "strides": [1]}, "start < end")
