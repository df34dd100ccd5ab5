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
    # an empty coordinate (Index's last dim 0) takes the whole of X for each index row
    OpCase("gather_nd", {"X": X23, "Index": np.zeros((2, 0), "int32")},
           ref=lambda i, a: {"Out": np.stack([i["X"], i["X"]])}, grad=["X"],
           name="empty_coordinates"),
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

def _pad2d_ref(pads, mode="constant", value=0.0, layout="NCHW"):
    def ref(i, a):
        x = i["X"]
        hw = [(pads[0], pads[1]), (pads[2], pads[3])]
        pairs = [(0, 0), (0, 0)] + hw if layout == "NCHW" else [(0, 0)] + hw + [(0, 0)]
        extra = {"constant_values": value} if mode == "constant" else {}
        return {"Out": np.pad(x, pairs, mode=mode, **extra)}
    return ref


X1234 = r(1, 2, 3, 4)

PAD_CROP_CASES = [
    OpCase("pad", {"X": X23}, attrs={"paddings": [1, 0, 2, 1], "pad_value": 0.5},
           ref=lambda i, a: {"Out": np.pad(i["X"], [(1, 0), (2, 1)], constant_values=0.5)},
           grad=["X"]),
    OpCase("pad2d", {"X": X1234}, attrs={"paddings": [1, 2, 0, 3], "pad_value": -1.0},
           ref=_pad2d_ref([1, 2, 0, 3], value=-1.0), grad=["X"]),
    OpCase("pad2d", {"X": X1234}, attrs={"paddings": [2, 1, 3, 2], "mode": "reflect"},
           ref=_pad2d_ref([2, 1, 3, 2], "reflect"), grad=["X"], name="reflect"),
    OpCase("pad2d", {"X": X1234}, attrs={"paddings": [2, 0, 1, 3], "mode": "edge"},
           ref=_pad2d_ref([2, 0, 1, 3], "edge"), grad=["X"], name="edge"),
    OpCase("pad2d", {"X": X1234}, attrs={"paddings": [1, 1, 2, 0], "mode": "reflect",
                                         "data_format": "NHWC"},
           ref=_pad2d_ref([1, 1, 2, 0], "reflect", layout="NHWC"), grad=["X"], name="nhwc"),
    OpCase("pad2d", {"X": X1234, "Paddings": ints(0, 1, 1, 1, dtype="int32")},
           attrs={"mode": "edge", "data_format": "NHWC"},
           ref=_pad2d_ref([0, 1, 1, 1], "edge", layout="NHWC"), grad=["X"],
           name="paddings_tensor"),
    OpCase("pad_constant_like", {"X": r(3, 4), "Y": X23}, attrs={"pad_value": 2.0},
           ref=lambda i, a: {"Out": np.pad(i["Y"], [(0, 1), (0, 1)], constant_values=2.0)},
           grad=["Y"]),
    OpCase("crop", {"X": X234}, attrs={"shape": [1, 2, 2], "offsets": [1, 0, 2]},
           ref=lambda i, a: {"Out": i["X"][1:2, 0:2, 2:4]}, grad=["X"]),
    OpCase("crop", {"X": X234, "Y": r(2, 1, 3), "Offsets": ints(0, 2, 1, dtype="int32")},
           ref=lambda i, a: {"Out": i["X"][:, 2:3, 1:4]}, grad=["X"], name="y_and_offsets"),
    OpCase("crop_tensor", {"X": X234}, attrs={"shape": [2, -1, 2], "offsets": [0, 1, 1]},
           ref=lambda i, a: {"Out": i["X"][:, 1:, 1:3]}, grad=["X"]),
    OpCase("crop_tensor", {"X": X234, "Shape": ints(1, 2, 3, dtype="int32"),
                           "Offsets": ints(1, 1, 0, dtype="int32")},
           ref=lambda i, a: {"Out": i["X"][1:, 1:3, 0:3]}, grad=["X"], name="tensors"),
    OpCase("crop_tensor", {"X": X234, "ShapeTensor": [ints(1, dtype="int32"),
                                                      ints(2, dtype="int32"),
                                                      ints(2, dtype="int32")],
                           "OffsetsTensor": [ints(0, dtype="int32"), ints(1, dtype="int32"),
                                             ints(2, dtype="int32")]},
           attrs={"shape": [0, 2, 2], "offsets": [-1, 1, -1]},
           ref=lambda i, a: {"Out": i["X"][0:1, 1:3, 2:4]}, grad=["X"], name="tensor_lists"),
]


def _hash_ref(num_hash, mod_by):
    from fluid_nb.ops.features import xxh64

    def ref(i, a):
        x = i["X"]
        out = [[xxh64(row.tobytes(), k) % mod_by for k in range(num_hash)] for row in x]
        return {"Out": np.array(out, x.dtype).reshape(x.shape[0], num_hash, 1)}
    return ref


def _cvm_ref(i, a):
    x = i["X"]
    if not a.get("use_cvm", True):
        return {"Y": x[:, 2:]}
    show = np.log(x[:, :1] + 1)
    return {"Y": np.concatenate([show, np.log(x[:, 1:2] + 1) - show, x[:, 2:]], 1)}


COUNTS = np.abs(r(4, 5)) * 10
INS = r(5, 3)

FEATURE_CASES = [
    OpCase("hash", {"X": ints([1, 2], [3, 4], [1, 2])}, attrs={"num_hash": 3, "mod_by": 1000},
           ref=_hash_ref(3, 1000)),
    OpCase("hash", {"X": ints([7], [123456789], dtype="int32")},
           attrs={"num_hash": 2, "mod_by": 97}, ref=_hash_ref(2, 97), name="int32"),
    OpCase("cvm", {"X": COUNTS, "CVM": r(4, 2)}, ref=_cvm_ref),
    OpCase("cvm", {"X": COUNTS, "CVM": np.zeros((4, 2), "float32")},
           attrs={"use_cvm": False}, ref=_cvm_ref, grad=["X"], name="no_cvm"),
    OpCase("filter_by_instag", {"Ins": INS, "Ins_tag": ints(1, 2, 3, 2, 4, 5),
                                "Filter_tag": ints(2, 9)},
           lod={"Ins_tag": [[0, 1, 3, 4, 5, 6]]},
           ref=lambda i, a: {"Out": (i["Ins"][[1, 2]], [[0, 1, 2]]),
                             "LossWeight": np.ones((2, 1), "float32"),
                             "IndexMap": ints([0, 1, 1], [1, 2, 1])},
           grad=["Ins"], grad_outputs=["Out"]),
    OpCase("filter_by_instag", {"Ins": INS, "Ins_tag": ints(1, 2, 3),
                                "Filter_tag": ints(3)},
           attrs={"is_lod": True}, lod={"Ins": [[0, 2, 5]], "Ins_tag": [[0, 2, 3]]},
           ref=lambda i, a: {"Out": (i["Ins"][2:], [[0, 3]]),
                             "IndexMap": ints([0, 2, 3])},
           grad=["Ins"], grad_outputs=["Out"], name="sequences"),
    OpCase("filter_by_instag", {"Ins": INS, "Ins_tag": ints(1, 2), "Filter_tag": ints(3)},
           attrs={"out_val_if_empty": 7}, lod={"Ins_tag": [[0, 1, 2, 2, 2, 2]]},
           ref=lambda i, a: {"Out": (np.full((1, 3), 7, "float32"), [[0, 1]]),
                             "LossWeight": np.zeros((1, 1), "float32"),
                             "IndexMap": ints([0, 1, 1])}, name="none_kept"),
]

CASES = INDEX_CASES + PAD_CROP_CASES + FEATURE_CASES

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


def test_expand_refuses_times_of_another_rank():
    assert_build_fails("expand", {"X": X23}, {"expand_times": [2]}, "expand_times")


def test_gather_nd_refuses_coordinates_outside_x():
    with pytest.raises(InvalidArgument, match="gather_nd"):
        check_output(OpCase("gather_nd", {"X": X23, "Index": ints([2, 0])},
))


def test_strided_slice_refuses_an_empty_range():
    assert_build_fails("strided_slice", {"Input": X23},
                       {"axes": [1], "starts": [2], "ends": [1], "strides": [1]}, "start < end")


def test_xxh64_matches_the_reference_vectors():
    from fluid_nb.ops.features import xxh64
    assert xxh64(b"") == 0xEF46DB3751D8E999
    assert xxh64(b"abc") == 0x44BC2CF5AD770999


def test_cvm_grad_feeds_back_the_counts_of_each_sequence():
    case = OpCase("cvm", {"X": COUNTS, "CVM": ints([1, 2], [3, 4], dtype="float32")},
                  lod={"X": [[0, 3, 4]]})
    from .op_test import build
    import fluid_nb as fluid
    from fluid_nb.ops import registry
    program, op, feed, _ = build(case)
    block = program.global_block()
    (spec,) = registry.make_grad_ops(op)
    block.create_var(name="out_y@GRAD", shape=(4, 5), dtype="float32")
    feed["out_y@GRAD"] = np.ones((4, 5), "float32")
    block.append_op(type=spec.type, inputs=spec.inputs, outputs=spec.outputs, attrs=spec.attrs)
    (dx,) = fluid.Executor(fluid.CPUPlace()).run(program, feed=feed, fetch_list=["x@GRAD"],
                                                 scope=fluid.Scope())
    np.testing.assert_array_equal(dx[:, :2], [[1, 2], [1, 2], [1, 2], [3, 4]])
    np.testing.assert_array_equal(dx[:, 2:], np.ones((4, 3)))
