"""Metric and selection ops against NumPy, with float64 finite-difference gradients."""
import numpy as np
import pytest

from fluid_nb.errors import InvalidArgument

from .op_test import OpCase, append_one, check_output, table_tests

rng = np.random.RandomState(0)


def distinct(*shape):
    """Floats with no ties (top-k and arg_max gradients are exact there)."""
    return (rng.permutation(int(np.prod(shape))).reshape(shape) * 0.1 - 1).astype("float32")


def topk_ref(x, k, axis=-1, largest=True):
    order = np.argsort(-x if largest else x, axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis)
    return {"Out": np.take_along_axis(x, idx, axis), "Indices": idx.astype("int64")}


def accuracy_ref(i, a):
    idx, label = i["Indices"], i["Label"]
    correct = int((idx == label).any(axis=1).sum())
    return {"Accuracy": np.array([correct / len(label)], "float32"),
            "Correct": np.array([correct], "int32"), "Total": np.array([len(label)], "int32")}


def argmax_ref(i, a):
    x = i["X"]
    if a.get("flatten"):
        return {"Out": np.array([np.argmax(x)], "int64")}
    out = np.argmax(x, axis=a["axis"])
    if a.get("keepdims"):
        out = np.expand_dims(out, a["axis"])
    return {"Out": out.astype("int32" if a.get("dtype") == 2 else "int64")}


top = distinct(5, 6)
top_vals = topk_ref(top, 3)

CASES = [
    OpCase("accuracy", {"Out": top_vals["Out"], "Indices": top_vals["Indices"],
                        "Label": np.array([[top_vals["Indices"][0, 1]], [0], [3],
                                           [top_vals["Indices"][3, 0]], [5]])},
           ref=accuracy_ref),
    OpCase("top_k", {"X": distinct(3, 5)}, attrs={"k": 2},
           ref=lambda i, a: topk_ref(i["X"], 2), grad=["X"]),
    OpCase("top_k", {"X": distinct(2, 3, 4), "K": np.array([3], "int32")}, attrs={"k": 1},
           ref=lambda i, a: topk_ref(i["X"], 3), grad=["X"], name="k_tensor"),
    OpCase("top_k", {"X": np.array([[1, 3, 3, 2]], "float32")}, attrs={"k": 3},
           ref=lambda i, a: {"Out": np.array([[3, 3, 2]], "float32"),
                             "Indices": np.array([[1, 2, 3]])}, name="ties_lower_index_first"),
    OpCase("top_k_v2", {"X": distinct(4, 5)}, attrs={"k": 2},
           ref=lambda i, a: topk_ref(i["X"], 2), grad=["X"]),
    OpCase("top_k_v2", {"X": distinct(4, 3, 2)}, attrs={"k": 2, "axis": 0},
           ref=lambda i, a: topk_ref(i["X"], 2, axis=0), grad=["X"], name="axis0"),
    OpCase("top_k_v2", {"X": distinct(3, 4, 2)}, attrs={"k": 3, "axis": 1, "largest": False},
           ref=lambda i, a: topk_ref(i["X"], 3, axis=1, largest=False), grad=["X"],
           name="smallest_axis1"),
    OpCase("top_k_v2", {"X": rng.randint(-9, 9, (3, 6)).astype("int64")}, attrs={"k": 4},
           ref=lambda i, a: topk_ref(i["X"], 4), name="int64"),
    OpCase("top_k_v2", {"X": np.array([[1.0, np.nan, 3.0]], "float32")}, attrs={"k": 2},
           ref=lambda i, a: {"Out": np.array([[np.nan, 3.0]], "float32"),
                             "Indices": np.array([[1, 2]])}, name="nan_is_largest"),
    OpCase("top_k_v2", {"X": np.array([[1.0, np.nan, 3.0, -2.0]], "float32")},
           attrs={"k": 4, "largest": False},
           ref=lambda i, a: {"Out": np.array([[-2.0, 1.0, 3.0, np.nan]], "float32"),
                             "Indices": np.array([[3, 0, 2, 1]])}, name="nan_is_largest_smallest"),
    OpCase("arg_max", {"X": distinct(3, 4)}, attrs={"axis": 1}, ref=argmax_ref),
    OpCase("arg_max", {"X": distinct(2, 3, 4)}, attrs={"axis": -2, "keepdims": True},
           ref=argmax_ref, name="keepdims"),
    OpCase("arg_max", {"X": distinct(2, 3)}, attrs={"axis": 0, "dtype": 2}, ref=argmax_ref,
           name="int32"),
    OpCase("arg_max", {"X": distinct(2, 3)}, attrs={"axis": 1, "flatten": True},
           ref=argmax_ref, name="flatten"),
    OpCase("arg_max", {"X": np.array([[1, 5, 5], [7, 7, 0]], "int64")}, attrs={"axis": 1},
           ref=lambda i, a: {"Out": np.array([1, 0])}, name="ties_first"),
    # a vector's arg_max is 0-D: a 0-D array, not a NumPy scalar
    OpCase("arg_max", {"X": distinct(5)}, attrs={"axis": 0}, ref=argmax_ref, name="vector"),
]


def _levenshtein(a, b):
    table = np.arange(len(b) + 1)
    for i, x in enumerate(a, 1):
        row = [i]
        for j, y in enumerate(b, 1):
            row.append(min(table[j] + 1, row[j - 1] + 1, table[j - 1] + (x != y)))
        table = np.array(row)
    return table[-1]


HYPS = np.array([1, 2, 3, 4, 5, 5, 7], "int64").reshape(-1, 1)
REFS = np.array([1, 3, 3, 5, 5, 6], "int64").reshape(-1, 1)
HYPS_LOD, REFS_LOD = [[0, 4, 7]], [[0, 3, 6]]


def _edit_ref(i, a):
    hyps = [HYPS[0:4, 0], HYPS[4:7, 0]]
    refs = [REFS[0:3, 0], REFS[3:6, 0]]
    d = np.array([[_levenshtein(h, r) / (len(r) if a.get("normalized") else 1)]
                  for h, r in zip(hyps, refs)], "float32")
    return {"Out": d, "SequenceNum": np.array([2], "int64")}


CASES += [
    OpCase("mean_iou", {"Predictions": np.array([0, 1, 1, 2, 2, 2], "int32"),
                        "Labels": np.array([0, 1, 2, 2, 2, 0], "int32")},
           attrs={"num_classes": 3},
           # class 0: 1 correct, 1 wrong; 1: 1, 1; 2: 2, 2 -> (1/2 + 1/2 + 2/4) / 3
           ref=lambda i, a: {"OutMeanIou": np.array([0.5], "float32"),
                             "OutWrong": np.array([1, 1, 2], "int32"),
                             "OutCorrect": np.array([1, 1, 2], "int32")}),
    OpCase("edit_distance", {"Hyps": HYPS, "Refs": REFS},
           lod={"Hyps": HYPS_LOD, "Refs": REFS_LOD}, ref=_edit_ref),
    OpCase("edit_distance", {"Hyps": HYPS, "Refs": REFS}, attrs={"normalized": True},
           lod={"Hyps": HYPS_LOD, "Refs": REFS_LOD}, ref=_edit_ref, name="normalized"),
    OpCase("ctc_align", {"Input": np.array([0, 1, 1, 0, 2, 2, 3, 0, 0, 4, 4], "int64")
                         .reshape(-1, 1)},
           lod={"Input": [[0, 7, 11]]}, attrs={"blank": 0},
           ref=lambda i, a: {"Output": (np.array([1, 2, 3, 4], "int64").reshape(-1, 1),
                                        [[0, 3, 4]])}),
    OpCase("ctc_align", {"Input": np.array([0, 0, 0], "int64").reshape(-1, 1)},
           lod={"Input": [[0, 1, 3]]}, attrs={"blank": 0},
           ref=lambda i, a: {"Output": (np.array([[-1]], "int64"), [[0, 1]])},
           name="all_blank"),
    OpCase("sequence_erase", {"X": np.array([2, 9, 3, 9, 9, 1], "int64").reshape(-1, 1)},
           lod={"X": [[0, 3, 6]]}, attrs={"tokens": [9]},
           ref=lambda i, a: {"Out": (np.array([2, 3, 1], "int64").reshape(-1, 1),
                                     [[0, 2, 3]])}),
]


def _exact_auc(scores, labels):
    """The probability that a positive outranks a negative (ties count half)."""
    pos, neg = scores[labels == 1], scores[labels == 0]
    return np.mean([(p > n) + 0.5 * (p == n) for p in pos for n in neg])


AUC_SCORES = np.array([0.1, 0.35, 0.4, 0.8, 0.7, 0.2], "float32")
AUC_LABELS = np.array([0, 0, 1, 1, 1, 0], "int64")
AUC_PREDICT = np.stack([1 - AUC_SCORES, AUC_SCORES], 1)


def _auc_case(slide_steps, stat_shape, ref_stats):
    def ref(i, a):  # the rank statistic of the buckets (scores in one bucket tie)
        buckets = np.floor(AUC_SCORES * 9)
        return dict(ref_stats(), AUC=np.array(_exact_auc(buckets, AUC_LABELS)))
    return OpCase("auc", {"Predict": AUC_PREDICT, "Label": AUC_LABELS.reshape(-1, 1),
                          "StatPos": np.zeros(stat_shape, "int64"),
                          "StatNeg": np.zeros(stat_shape, "int64")},
                  attrs={"num_thresholds": 9, "slide_steps": slide_steps, "curve": "ROC"},
                  ref=ref, name=f"slide_steps_{slide_steps}")


def _global_stats():
    pos, neg = np.zeros((1, 10), "int64"), np.zeros((1, 10), "int64")
    for score, label in zip(AUC_SCORES, AUC_LABELS):
        (pos if label else neg)[0, int(score * 9)] += 1
    return {"StatPosOut": pos, "StatNegOut": neg}


def _window_stats():
    g = _global_stats()
    pos, neg = np.zeros(2 * 10 + 1, "int64"), np.zeros(2 * 10 + 1, "int64")
    # one step of a one-batch window: the ring row, the sum row, the step counter
    pos[0:10] = pos[10:20] = g["StatPosOut"][0]
    neg[0:10] = neg[10:20] = g["StatNegOut"][0]
    pos[20] = neg[20] = 1
    return {"StatPosOut": pos, "StatNegOut": neg}


CASES += [_auc_case(0, (1, 10), _global_stats), _auc_case(1, (2 * 10 + 1,), _window_stats)]


(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


_append = append_one


def test_accuracy_output_types():
    op = _append("accuracy", {"Out": ((-1, 3), "float32"), "Indices": ((-1, 3), "int64"),
                              "Label": ((-1, 1), "int64")}, ["Accuracy", "Correct", "Total"])
    block = op.block
    assert [block.var(n).dtype.name for n in ("accuracy_out", "correct_out", "total_out")] \
        == ["FP32", "INT32", "INT32"]


def test_accuracy_label_rank_is_checked():
    with pytest.raises(InvalidArgument, match="accuracy: input 'Label' expected rank 2"):
        _append("accuracy", {"Out": ((4, 3), "float32"), "Indices": ((4, 3), "int64"),
                             "Label": ((4,), "int64")}, ["Accuracy", "Correct", "Total"])


def test_top_k_larger_than_dim_is_refused():
    with pytest.raises(InvalidArgument, match="top_k: attribute 'k' expected <= 4"):
        _append("top_k", {"X": ((3, 4), "float32")}, ["Out", "Indices"], {"k": 5})


def test_top_k_tensor_k_too_large_at_run_time():
    case = OpCase("top_k", {"X": distinct(2, 3), "K": np.array([4], "int32")})
    with pytest.raises(InvalidArgument, match=r"top_k: k expected in \[1, 3\]"):
        check_output(case)


def test_arg_max_dtype_must_be_int32_or_int64():
    with pytest.raises(InvalidArgument, match="arg_max: attribute 'dtype'"):
        _append("arg_max", {"X": ((3, 4), "float32")}, ["Out"], {"axis": 0, "dtype": 5})


def test_arg_max_axis_is_required():
    with pytest.raises(InvalidArgument, match="arg_max: attribute 'axis' expected a value"):
        _append("arg_max", {"X": ((3, 4), "float32")}, ["Out"])


def test_accuracy_and_arg_max_have_no_gradient():
    from fluid_nb.ops import registry
    assert registry.get("accuracy").grad is None
    assert registry.get("arg_max").grad is None


def test_top_k_along_the_last_axis_of_a_3d_input_keeps_ties_in_order():
    x = np.array([[[1, 3, 3, 0], [2, 2, 2, 2]], [[np.nan, 5, np.inf, 5], [-0.0, 0.0, -1, 1]]],
                 "float32")
    out = check_output(OpCase("top_k", {"X": x}, attrs={"k": 3}))
    np.testing.assert_array_equal(np.asarray(out["Indices"]),
                                  [[[1, 2, 0], [0, 1, 2]], [[0, 2, 1], [3, 0, 1]]])
    np.testing.assert_array_equal(np.asarray(out["Out"]),
                                  np.take_along_axis(x, np.asarray(out["Indices"]), -1))


def test_accuracy_counts_a_row_once_however_many_of_its_k_hit():
    out = check_output(OpCase("accuracy", {"Out": np.zeros((3, 2), "float32"),
                                           "Indices": np.array([[1, 1], [0, 2], [2, 1]]),
                                           "Label": np.array([[1], [2], [0]])}))
    assert np.asarray(out["Correct"]).tolist() == [2]
    assert np.asarray(out["Total"]).tolist() == [3]
    assert np.asarray(out["Accuracy"]).dtype == np.float32
    assert np.asarray(out["Accuracy"]).tolist() == [np.float32(2) / np.float32(3)]


def test_top_k_of_long_rows_takes_the_lowest_columns_among_ties():
    # (rows of 300: each partitioned before its k are sorted; many values equal the k-th)
    x = np.random.RandomState(3).randint(0, 6, (4, 300)).astype("float32")
    x[1, ::17] = np.nan
    x[2] = 2.0
    for k in (7, 40, 75):
        out = check_output(OpCase("top_k", {"X": x}, attrs={"k": k}))
        wanted = topk_ref(np.where(np.isnan(x), np.inf, x), k)["Indices"]
        np.testing.assert_array_equal(np.asarray(out["Indices"]), wanted)
        np.testing.assert_array_equal(np.asarray(out["Out"]),
                                      np.take_along_axis(x, wanted, 1))


@pytest.mark.parametrize("largest", [True, False])
def test_top_k_of_one_is_the_first_best_of_each_row(largest):
    x = np.array([[1.0, 3.0, 3.0, np.nan, 0.0], [2.0, -1.0, -1.0, 5.0, 5.0]], "float32")
    out = check_output(OpCase("top_k_v2", {"X": x}, attrs={"k": 1, "largest": largest}))
    assert np.asarray(out["Indices"]).tolist() == ([[3], [3]] if largest else [[4], [1]])
