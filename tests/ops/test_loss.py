"""Loss ops against NumPy, with float64 finite-difference gradients."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument
from fluid_nb.tensor.dtypes import VarType
from fluid_nb.tensor.tensor import LoDTensor, SelectedRows

from .op_test import (OpCase, _loss_weights, append_one, check_output, grad_program,
                      table_tests)

rng = np.random.RandomState(0)


def softmax(z, axis=-1):
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def probs(*shape):
    """Probabilities well away from 0 (softmax of small logits)."""
    return softmax(rng.uniform(-0.5, 0.5, shape)).astype("float32")


def labels(n, classes, shape=None):
    return rng.randint(0, classes, n).reshape(shape or (n, 1)).astype("int64")


def xe_ref(i, a):
    x, label = i["X"], i["Label"]
    if a.get("soft_label"):
        return {"Y": -(label * np.log(x)).sum(-1, keepdims=True)}
    flat = label.reshape(-1)
    rows = x.reshape(-1, x.shape[-1])
    y = -np.log(rows[np.arange(len(flat)), np.where(flat == a.get("ignore_index", -100), 0,
                                                    flat)])
    y[flat == a.get("ignore_index", -100)] = 0
    shape = label.shape[:-1] + (1,) if label.ndim == x.ndim else label.shape
    return {"Y": y.reshape(shape).astype(x.dtype)}


def xe2_ref(i, a):
    y = xe_ref(i, a)["Y"]
    x, flat = i["X"], i["Label"].reshape(-1)
    rows = x.reshape(-1, x.shape[-1])
    keep = flat != a.get("ignore_index", -100)
    match = np.where(keep, rows[np.arange(len(flat)), np.where(keep, flat, 0)], 0)
    return {"Y": y, "MatchX": match.reshape(x.shape[:-1] + (1,)).astype(x.dtype)}


def swce_ref(i, a):
    logits, label = i["Logits"], i["Label"]
    axis = a.get("axis", -1) % logits.ndim
    use_softmax = a.get("use_softmax", True)
    p = softmax(logits.astype("float64"), axis) if use_softmax else logits.astype("float64")
    if a.get("soft_label"):
        loss = -(label * np.log(p)).sum(axis, keepdims=True)
    else:
        ignore = a.get("ignore_index", -100)
        keep = label != ignore
        loss = -np.log(np.take_along_axis(p, np.where(keep, label, 0), axis))
        loss[~keep] = 0
    return {"Softmax": p.astype(logits.dtype), "Loss": loss.astype(logits.dtype)}


soft = probs(3, 4)

CASES = [
    OpCase("cross_entropy", {"X": probs(4, 5), "Label": labels(4, 5)}, ref=xe_ref,
           grad=["X"], name="hard"),
    OpCase("cross_entropy", {"X": probs(4, 5), "Label": np.array([[1], [3], [1], [0]])},
           attrs={"ignore_index": 1}, ref=xe_ref, grad=["X"], name="ignore_index"),
    OpCase("cross_entropy", {"X": probs(2, 3, 4), "Label": labels(6, 4, (2, 3, 1))},
           ref=xe_ref, grad=["X"], name="rank3"),
    OpCase("cross_entropy", {"X": probs(4, 5), "Label": labels(4, 5, (4,))}, ref=xe_ref,
           grad=["X"], name="label_rank_minus_1"),
    OpCase("cross_entropy", {"X": probs(3, 4), "Label": probs(3, 4)},
           attrs={"soft_label": True}, ref=xe_ref, grad=["X"], name="soft"),
    OpCase("cross_entropy2", {"X": probs(4, 5), "Label": np.array([[2], [0], [2], [4]])},
           ref=xe2_ref, grad=["X"], grad_outputs=["Y"], name="hard"),
    OpCase("cross_entropy2", {"X": probs(2, 3, 4), "Label": np.array([[[1], [3], [1]],
                                                                     [[0], [1], [2]]])},
           attrs={"ignore_index": 1}, ref=xe2_ref, grad=["X"], grad_outputs=["Y"],
           name="ignore_rank3"),
    OpCase("softmax_with_cross_entropy",
           {"Logits": rng.uniform(-1, 1, (4, 5)).astype("float32"), "Label": labels(4, 5)},
           ref=swce_ref, grad=["Logits"], name="hard"),
    OpCase("softmax_with_cross_entropy",
           {"Logits": rng.uniform(-1, 1, (4, 5)).astype("float32"),
            "Label": np.array([[0], [4], [4], [2]])},
           attrs={"ignore_index": 4}, ref=swce_ref, grad=["Logits"], name="ignore_index"),
    OpCase("softmax_with_cross_entropy",
           {"Logits": rng.uniform(-1, 1, (3, 4)).astype("float32"), "Label": probs(3, 4)},
           attrs={"soft_label": True}, ref=swce_ref, grad=["Logits"], name="soft"),
    OpCase("softmax_with_cross_entropy",
           {"Logits": rng.uniform(-1, 1, (2, 4, 3)).astype("float32"),
            "Label": labels(6, 4, (2, 1, 3))},
           attrs={"axis": 1}, ref=swce_ref, grad=["Logits"], name="axis1"),
    OpCase("softmax_with_cross_entropy",
           {"Logits": probs(3, 4), "Label": labels(3, 4)},
           attrs={"use_softmax": False}, ref=swce_ref, grad=["Logits"], name="no_softmax"),
    OpCase("softmax_with_cross_entropy",
           {"Logits": probs(3, 4), "Label": probs(3, 4)},
           attrs={"use_softmax": False, "soft_label": True}, ref=swce_ref, grad=["Logits"],
           name="no_softmax_soft"),
]


def _f(x):
    return np.asarray(x, "float64")


def _sigmoid_ce_ref(i, a):
    x, label = _f(i["X"]), _f(i["Label"])
    keep = label != a.get("ignore_index", -100)
    out = np.where(keep, np.log1p(np.exp(x)) - x * label, 0)
    return {"Out": out / (keep.sum() if a.get("normalize") else 1)}


def _huber_ref(i, a):
    r = _f(i["Y"]) - _f(i["X"])
    d = a["delta"]
    return {"Out": np.where(np.abs(r) <= d, 0.5 * r * r, d * (np.abs(r) - 0.5 * d)),
            "Residual": r}


def _smooth_l1_ref(i, a):
    s2 = a.get("sigma", 1.0) ** 2
    d = (_f(i["X"]) - _f(i["Y"])) * _f(i.get("InsideWeight", 1.0))
    loss = np.where(np.abs(d) < 1 / s2, 0.5 * s2 * d * d, np.abs(d) - 0.5 / s2)
    loss = loss * _f(i.get("OutsideWeight", 1.0))
    return {"Out": loss.reshape(len(d), -1).sum(1, keepdims=True)}


def _away(center, spread, *shape):
    """Values whose distance from the kinks at +-1 (and 0) is at least 0.05."""
    v = rng.uniform(-spread, spread, shape) + center
    v[np.abs(np.abs(v) - 1) < 0.05] += 0.1
    v[np.abs(v) < 0.05] += 0.1
    return v.astype("float32")


LOSS_X, LOSS_Y = rng.uniform(-2, 2, (4, 3)).astype("float32"), np.zeros((4, 3), "float32")
KL_TARGET = softmax(rng.uniform(-1, 1, (3, 4)))
KL_TARGET[0, 0] = 0.0  # a zero target contributes nothing
LABELS_PM = np.array([[1.0], [-1.0], [1.0], [-1.0]], "float32")

CASES += [
    OpCase("sigmoid_cross_entropy_with_logits",
           {"X": rng.uniform(-3, 3, (4, 3)).astype("float32"),
            "Label": rng.uniform(0, 1, (4, 3)).astype("float32")},
           ref=_sigmoid_ce_ref, grad=["X"]),
    OpCase("sigmoid_cross_entropy_with_logits",
           {"X": rng.uniform(-3, 3, (4, 3)).astype("float32"),
            "Label": np.array([[1, 0, -100], [0, 1, 1], [-100, 0, 0], [1, 1, 0]], "float32")},
           attrs={"normalize": True}, ref=_sigmoid_ce_ref, grad=["X"],
           name="ignore_and_normalize"),
    OpCase("huber_loss", {"X": _away(0, 2.5, 4, 3), "Y": LOSS_Y}, attrs={"delta": 1.0},
           ref=_huber_ref, grad=["X", "Y"], grad_outputs=["Out"]),
    OpCase("smooth_l1_loss", {"X": _away(0, 2.5, 4, 3), "Y": LOSS_Y}, ref=_smooth_l1_ref,
           grad=["X", "Y"], grad_outputs=["Out"]),
    OpCase("smooth_l1_loss", {"X": _away(0, 2.5, 4, 3), "Y": LOSS_Y,
                              "InsideWeight": np.full((4, 3), 0.5, "float32"),
                              "OutsideWeight": rng.uniform(0.5, 1, (4, 3)).astype("float32")},
           attrs={"sigma": 2.0},
           ref=lambda i, a: _smooth_l1_ref(i, a), grad=["X"], grad_outputs=["Out"],
           name="weights_sigma"),
    OpCase("log_loss", {"Predicted": rng.uniform(0.1, 0.9, (5, 1)).astype("float32"),
                        "Labels": rng.randint(0, 2, (5, 1)).astype("float32")},
           ref=lambda i, a: {"Loss": -_f(i["Labels"]) * np.log(_f(i["Predicted"]) + 1e-4)
                             - (1 - _f(i["Labels"])) * np.log(1 - _f(i["Predicted"]) + 1e-4)},
           grad=["Predicted"]),
    OpCase("kldiv_loss", {"X": np.log(softmax(rng.uniform(-1, 1, (3, 4)))).astype("float32"),
                          "Target": KL_TARGET.astype("float32")},
           attrs={"reduction": "batchmean"},
           ref=lambda i, a: {"Loss": np.array(np.where(
               _f(i["Target"]) > 0, _f(i["Target"]) * (np.log(np.where(
                   _f(i["Target"]) > 0, _f(i["Target"]), 1)) - _f(i["X"])), 0).sum() / 3)},
           grad=["X"]),
    OpCase("kldiv_loss", {"X": np.log(softmax(rng.uniform(-1, 1, (3, 4)))).astype("float32"),
                          "Target": KL_TARGET.astype("float32")},
           attrs={"reduction": "none"},
           ref=lambda i, a: {"Loss": np.where(_f(i["Target"]) > 0, _f(i["Target"]) * (
               np.log(np.where(_f(i["Target"]) > 0, _f(i["Target"]), 1)) - _f(i["X"])), 0)},
           grad=["X"], name="none"),
    OpCase("margin_rank_loss", {"X1": rng.uniform(-1, 1, (4, 1)).astype("float32"),
                                "X2": rng.uniform(-1, 1, (4, 1)).astype("float32"),
                                "Label": LABELS_PM}, attrs={"margin": 0.1},
           ref=lambda i, a: {"Out": np.maximum(0, -_f(i["Label"]) * (_f(i["X1"]) - _f(
               i["X2"])) + 0.1)}, grad=["X1", "X2"], grad_outputs=["Out"]),
    OpCase("rank_loss", {"Label": np.array([[1.0], [0.0], [0.5], [1.0]], "float32"),
                         "Left": rng.uniform(-2, 2, (4, 1)).astype("float32"),
                         "Right": rng.uniform(-2, 2, (4, 1)).astype("float32")},
           ref=lambda i, a: {"Out": np.log1p(np.exp(_f(i["Left"]) - _f(i["Right"])))
                             - _f(i["Label"]) * (_f(i["Left"]) - _f(i["Right"]))},
           grad=["Left", "Right"]),
    OpCase("bpr_loss", {"X": rng.uniform(-1, 1, (4, 5)).astype("float32"),
                        "Label": np.array([[0], [3], [4], [1]], "int64")},
           ref=lambda i, a: {"Y": np.array([[-sum(
               np.log(1 / (1 + np.exp(-(_f(i["X"])[r, l] - _f(i["X"])[r, j]))))
               for j in range(5) if j != l) / 4] for r, l in enumerate(i["Label"][:, 0])])},
           grad=["X"]),
]


def _softplus(x):
    return np.log1p(np.exp(x))


def _teacher_student_ref(i, a):
    x, label = _f(i["X"]), _f(i["Label"])
    soft, hard = _softplus(x), _softplus(x) - x
    return {"Y": np.where(label < -1, soft, np.where(
        label < 0, hard, np.where(label < 1, 2 * soft - x * label,
                                  hard + soft - x * (label - 1))))}


CENTER_X = rng.uniform(-1, 1, (5, 3)).astype("float32")
CENTER_LABEL = np.array([[0], [2], [0], [1], [2]], "int64")
CENTERS = rng.uniform(-1, 1, (3, 3)).astype("float32")


def _center_ref(i, a):
    ids = i["Label"][:, 0]
    diff = _f(i["X"]) - _f(i["Centers"])[ids]
    moves = np.zeros((3, 3))
    for row, c in enumerate(ids):
        moves[c] += _f(i["Centers"])[c] - _f(i["X"])[row]
    counts = np.bincount(ids, minlength=3)
    return {"Loss": 0.5 * (diff ** 2).sum(1, keepdims=True),
            "CentersOut": _f(i["Centers"]) - 0.1 * moves / (1 + counts)[:, None]}


CASES += [
    OpCase("teacher_student_sigmoid_loss",
           {"X": rng.uniform(-3, 3, (6, 1)).astype("float32"),
            "Label": np.array([[-2.0], [-0.5], [0.3], [0.8], [1.2], [1.9]], "float32")},
           ref=_teacher_student_ref, grad=["X"]),
    OpCase("center_loss", {"X": CENTER_X, "Label": CENTER_LABEL, "Centers": CENTERS,
                           "CenterUpdateRate": np.array([0.1], "float32")},
           attrs={"cluster_num": 3, "need_update": True}, ref=_center_ref, grad=["X"],
           grad_outputs=["Loss"]),
]


def _ctc_brute_force(logits, label, blank=0):
    """-log of the summed probability of every path that collapses to ``label``."""
    import itertools
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    total = 0.0
    for path in itertools.product(range(logits.shape[1]), repeat=len(logits)):
        collapsed = [k for k, _ in itertools.groupby(path) if k != blank]
        if collapsed == list(label):
            total += np.prod([p[t, c] for t, c in enumerate(path)])
    return -np.log(total)


CTC_LOGITS = rng.uniform(-1, 1, (7, 3)).astype("float32")
CTC_LABEL = np.array([1, 2, 2], "int64").reshape(-1, 1)


def _ctc_ref(i, a):
    logits = _f(i["Logits"])
    return {"Loss": np.array([[_ctc_brute_force(logits[0:4], [1, 2])],
                              [_ctc_brute_force(logits[4:7], [2])]])}


CASES += [
    OpCase("warpctc", {"Logits": CTC_LOGITS, "Label": CTC_LABEL},
           lod={"Logits": [[0, 4, 7]], "Label": [[0, 2, 3]]}, ref=_ctc_ref, grad=["Logits"],
           grad_outputs=["Loss"]),
]


def _hsigmoid_ref(i, a):
    """The default tree written out: leaf c + K of a heap, inner node n owns row n - 1.
    Each step short of the widest path (bit_length(K - 1) steps) costs log 2 (pre = 0)."""
    x, w, b = _f(i["X"]), _f(i["W"]), _f(i["Bias"]).reshape(-1)
    width = (a["num_classes"] - 1).bit_length()
    out = []
    for row, c in zip(x, i["Label"][:, 0]):
        node, total, steps = int(c) + a["num_classes"], 0.0, 0
        while node > 1:
            bit, node = node & 1, node // 2
            pre = row @ w[node - 1] + b[node - 1]
            total += np.log1p(np.exp(pre)) - bit * pre
            steps += 1
        out.append([total + (width - steps) * np.log(2.0)])
    return {"Out": np.array(out)}


CASES += [
    OpCase("hierarchical_sigmoid",
           {"X": rng.uniform(-1, 1, (4, 3)).astype("float32"),
            "W": rng.uniform(-1, 1, (5, 3)).astype("float32"),
            "Label": np.array([[0], [5], [2], [3]], "int64"),
            "Bias": rng.uniform(-0.5, 0.5, (5, 1)).astype("float32")},
           attrs={"num_classes": 6}, ref=_hsigmoid_ref, grad=["X", "W", "Bias"],
           grad_outputs=["Out"]),
]


NCE_X = rng.uniform(-1, 1, (3, 4)).astype("float32")
NCE_W = rng.uniform(-1, 1, (6, 4)).astype("float32")
NCE_B = rng.uniform(-0.5, 0.5, (6, 1)).astype("float32")
NCE_LABEL = np.array([[1], [4], [0]], "int64")


def _nce_ref(i, a):
    """The cost from the drawn labels the op reports (custom_neg_classes fixes them)."""
    negatives = np.tile(np.array(a["custom_neg_classes"]), (3, 1))
    labels = np.concatenate([i["Label"], negatives], axis=1)
    z = np.einsum("nd,nkd->nk", _f(i["X"] if "X" in i else i["Input"]), _f(i["Weight"])[labels])
    z = z + _f(i["Bias"]).reshape(-1)[labels]
    o = 1 / (1 + np.exp(-z))
    b = 2 / 6  # two negatives, uniform over six classes
    cost = -np.log(o[:, :1] / (o[:, :1] + b)).sum(1) - np.log(b / (o[:, 1:] + b)).sum(1)
    return {"Cost": cost.reshape(-1, 1)}


def _nce_check(outputs, inputs, attrs):
    labels = np.asarray(outputs["SampleLabels"])
    assert labels.shape == (3, 4) and (labels[:, :1] == inputs["Label"]).all()
    assert ((labels >= 0) & (labels < 6)).all()


CASES += [
    OpCase("nce", {"Input": NCE_X, "Label": NCE_LABEL, "Weight": NCE_W, "Bias": NCE_B},
           attrs={"num_total_classes": 6, "num_neg_samples": 2, "custom_neg_classes": [2, 5]},
           ref=_nce_ref, grad=["Input", "Weight", "Bias"], grad_outputs=["Cost"]),
    OpCase("nce", {"Input": NCE_X, "Label": NCE_LABEL, "Weight": NCE_W, "Bias": NCE_B},
           attrs={"num_total_classes": 6, "num_neg_samples": 3, "seed": 5},
           check=_nce_check, outputs={"Cost": 1, "SampleLabels": 1}, name="drawn"),
]


def _nce_grads(is_sparse, place=None):
    """Input@GRAD, Weight@GRAD and Bias@GRAD of the fixed-negatives nce case in float64 (its
    dense form is checked against finite differences above), and the Weight@GRAD variable."""
    case = OpCase("nce", {"Input": NCE_X, "Label": NCE_LABEL, "Weight": NCE_W,
                          "Bias": NCE_B},
                  attrs={"num_total_classes": 6, "num_neg_samples": 2,
                         "custom_neg_classes": [2, 5], "is_sparse": is_sparse},
                  grad=["Input", "Weight", "Bias"], grad_outputs=["Cost"])
    inputs = {k: (v.astype("float64") if v.dtype.kind == "f" else v)
              for k, v in case.inputs.items()}
    forward, slots, weights = _loss_weights(case, inputs, None)
    program, _, feed, targets = grad_program(case, inputs, None, forward, slots, weights)
    got = fluid.Executor(place or fluid.CPUPlace()).run(
        program, feed=feed, fetch_list=[n + "@GRAD" for _, n in targets],
        scope=fluid.Scope(), return_numpy=False)
    return got, program.global_block().var("weight@GRAD")


def test_nce_sparse_weight_gradient_is_selected_rows_of_the_sampled_ids():
    (dx, dw, db), var = _nce_grads(is_sparse=True)
    (dense_dx, dense_dw, dense_db), dense_var = _nce_grads(is_sparse=False)
    assert var.type == VarType.SELECTED_ROWS and dense_var.type == VarType.LOD_TENSOR
    # the labels 1, 4, 0 and the negatives 2, 5: distinct, ascending; row 3 never sampled
    assert isinstance(dw, SelectedRows) and dw.rows() == [0, 1, 2, 4, 5]
    assert dw.height() == 6 and dw.value.array.dtype == np.float64
    np.testing.assert_allclose(dw.to_dense(), np.asarray(dense_dw), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(np.asarray(dw.value.array),
                               np.asarray(dense_dw)[[0, 1, 2, 4, 5]], rtol=1e-12)
    # Input@GRAD and Bias@GRAD stay dense
    np.testing.assert_array_equal(np.asarray(dx), np.asarray(dense_dx))
    assert isinstance(db, LoDTensor)
    np.testing.assert_array_equal(np.asarray(db), np.asarray(dense_db))


def test_nce_sparse_weight_gradient_on_the_strict_device():
    from fluid_nb.testing.strict_device import StrictDevicePlace
    (_, dw, _), _ = _nce_grads(is_sparse=True, place=StrictDevicePlace())
    (_, want, _), _ = _nce_grads(is_sparse=True)
    assert isinstance(dw, SelectedRows) and dw.rows() == want.rows()
    np.testing.assert_allclose(dw.value.array.get(), want.value.array, rtol=1e-12)


SAMPLE_LOGITS = rng.uniform(-1, 1, (3, 6)).astype("float32")
SAMPLE_LABELS = np.array([[1], [4], [0]], "int64")
SAMPLE_CUSTOM = np.array([[1, 2, 4], [4, 0, 3], [0, 3, 5]], "int64")
SAMPLE_HITS = np.array([[1, 1, 4], [4, 0, 3], [0, 0, 5]], "int64")  # drawn copies of a label
SAMPLE_PROBS = rng.uniform(0.1, 0.9, (3, 3)).astype("float32")


def _sample_logits_ref(i, a):
    """Given samples and their probabilities: the logits gathered, minus log Q, and the
    drawn copies of a true label pushed down by 1e20."""
    gathered = np.take_along_axis(_f(i["Logits"]), i["CustomizedSamples"], axis=1)
    out = gathered - np.log(_f(i["CustomizedProbabilities"]))
    hits = i["CustomizedSamples"][:, 1:] == i["Labels"]
    out[:, 1:][hits] -= 1e20
    return {"SampledLogits": out, "Samples": i["CustomizedSamples"],
            "SampledLabels": np.zeros((3, 1), "int64")}


def _sample_logits_check(outputs, inputs, attrs):
    samples = np.asarray(outputs["Samples"])
    assert samples.shape == (3, 4) and (samples[:, 0] == inputs["Labels"][:, 0]).all()
    drawn = samples[0, 1:]
    assert len(set(drawn.tolist())) == 3 and ((drawn >= 0) & (drawn < 6)).all()
    assert (samples[:, 1:] == drawn).all()  # one draw shared by the rows


CASES += [
    OpCase("sample_logits", {"Logits": SAMPLE_LOGITS, "Labels": SAMPLE_LABELS,
                             "CustomizedSamples": SAMPLE_CUSTOM,
                             "CustomizedProbabilities": SAMPLE_PROBS},
           attrs={"use_customized_samples": True, "num_samples": 2},
           ref=_sample_logits_ref, grad=["Logits"], grad_outputs=["SampledLogits"],
           outputs=dict.fromkeys(["Samples", "Probabilities", "SampledLogits",
                                  "SampledLabels", "LogitsDim", "LabelsDim"], 1)),
    OpCase("sample_logits", {"Logits": SAMPLE_LOGITS, "Labels": SAMPLE_LABELS,
                             "CustomizedSamples": SAMPLE_HITS,
                             "CustomizedProbabilities": SAMPLE_PROBS},
           attrs={"use_customized_samples": True, "num_samples": 2}, ref=_sample_logits_ref,
           atol=1e-3, outputs=dict.fromkeys(["Samples", "Probabilities", "SampledLogits",
                                             "SampledLabels"], 1), name="accidental_hits"),
    OpCase("sample_logits", {"Logits": SAMPLE_LOGITS, "Labels": SAMPLE_LABELS},
           attrs={"num_samples": 3, "seed": 4}, check=_sample_logits_check,
           outputs=dict.fromkeys(["Samples", "Probabilities", "SampledLogits",
                                  "SampledLabels"], 1), name="drawn"),
]


(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


_append = append_one


def test_cross_entropy_label_shape_mismatch_names_the_op():
    with pytest.raises(InvalidArgument, match="cross_entropy: .*Label.*expected"):
        _append("cross_entropy", {"X": ((4, 5), "float32"), "Label": ((4, 2), "int64")}, ["Y"])


def test_cross_entropy_float_hard_label_is_refused():
    with pytest.raises(InvalidArgument, match="cross_entropy: input 'Label' dtype"):
        _append("cross_entropy", {"X": ((4, 5), "float32"), "Label": ((4, 1), "float32")},
                ["Y"])


def test_cross_entropy_label_out_of_range_at_run_time():
    case = OpCase("cross_entropy", {"X": probs(2, 3), "Label": np.array([[0], [3]])})
    with pytest.raises(InvalidArgument, match=r"cross_entropy: Label expected class ids in "
                                              r"\[0, 3\)"):
        check_output(case)


def test_softmax_with_cross_entropy_axis_out_of_range():
    with pytest.raises(InvalidArgument, match="softmax_with_cross_entropy: attribute 'axis'"):
        _append("softmax_with_cross_entropy",
                {"Logits": ((4, 5), "float32"), "Label": ((4, 1), "int64")},
                ["Softmax", "Loss"], {"axis": 2})


def test_softmax_with_cross_entropy_stable_for_large_logits():
    logits = np.array([[1000.0, 0.0, -1000.0]], dtype="float32")
    case = OpCase("softmax_with_cross_entropy", {"Logits": logits, "Label": np.array([[2]])})
    out = check_output(case)
    assert np.isclose(np.asarray(out["Loss"])[0, 0], 2000.0)


def test_cross_entropy2_grad_op_slots():
    from fluid_nb.ops import registry
    op = _append("cross_entropy2", {"X": ((4, 5), "float32"), "Label": ((4, 1), "int64")},
                 ["Y", "XShape", "MatchX"])
    (spec,) = registry.make_grad_ops(op)
    assert spec.type == "cross_entropy_grad2"
    assert sorted(spec.inputs) == ["Label", "MatchX", "XShape", "Y@GRAD"]
    assert list(spec.outputs) == ["X@GRAD"]
    assert op.block.var("xshape_out").shape == (4, 5, 0)


# --- the usual batch: every label a class id, none ignored ------------------------------
def test_cross_entropy_negative_label_is_refused_not_read_as_the_last_class():
    # (an id read unsigned past the class count: -1 must not pick the last column)
    case = OpCase("cross_entropy2", {"X": probs(2, 3), "Label": np.array([[0], [-1]])})
    with pytest.raises(InvalidArgument, match=r"class ids in \[0, 3\).*-1"):
        check_output(case)


def test_cross_entropy_of_a_zero_probability_is_1e20():
    x = np.array([[0.0, 1.0], [0.25, 0.75]], "float32")
    out = check_output(OpCase("cross_entropy2", {"X": x, "Label": np.array([[0], [1]])}))
    assert np.asarray(out["Y"]).tolist() == [[np.float32(1e20)], [-np.log(np.float32(0.75))]]
    assert np.asarray(out["MatchX"]).ravel().tolist() == [0.0, 0.75]


def test_cross_entropy_int32_labels_reach_the_first_and_last_class():
    x = probs(3, 4)
    label = np.array([[0], [3], [3]], "int32")
    out = check_output(OpCase("cross_entropy", {"X": x, "Label": label}))
    np.testing.assert_array_equal(np.asarray(out["Y"])[:, 0],
                                  -np.log(x[[0, 1, 2], [0, 3, 3]]))


def test_softmax_with_cross_entropy_ignores_only_the_ignored_rows():
    logits = np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]], "float32")
    out = check_output(OpCase("softmax_with_cross_entropy",
                              {"Logits": logits, "Label": np.array([[2], [-100]])}))
    loss = np.asarray(out["Loss"])[:, 0]
    assert loss[1] == 0 and np.isclose(loss[0], -np.log(softmax(logits)[0, 2]))
