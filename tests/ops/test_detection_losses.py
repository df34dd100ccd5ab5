"""Detection training ops against plain NumPy: matching (bipartite, per prediction), target
assignment with negatives, hard negative mining (both kinds), the sigmoid focal loss and
YOLOv3's loss, with float64 finite-difference gradients for the two losses."""
import math

import numpy as np
import pytest

from fluid_nb.errors import InvalidArgument

from .op_test import OpCase, check_output, table_tests

rng = np.random.RandomState(17)


# --- bipartite_match -------------------------------------------------------------------------
def match_ref(i, a, offsets):
    dist = i["DistMat"].astype("float64")
    cols = dist.shape[1]
    indices = np.full((len(offsets) - 1, cols), -1, "int32")
    dists = np.zeros((len(offsets) - 1, cols))
    for n in range(len(offsets) - 1):
        part = dist[offsets[n]:offsets[n + 1]]
        # every entry, largest first; take it when its row and column are both free
        entries = sorted(((part[r, c], r, c) for r in range(len(part)) for c in range(cols)),
                         key=lambda e: -e[0])
        used_rows = set()
        for value, r, c in entries:
            if value >= 1e-6 and r not in used_rows and indices[n, c] == -1:
                indices[n, c], dists[n, c] = r, value
                used_rows.add(r)
        if a.get("match_type") == "per_prediction":
            for c in range(cols):
                if indices[n, c] == -1 and len(part):
                    r = int(np.argmax(part[:, c]))
                    if part[r, c] >= a["dist_threshold"]:
                        indices[n, c], dists[n, c] = r, part[r, c]
    return {"ColToRowMatchIndices": indices,
            "ColToRowMatchDist": dists.astype(i["DistMat"].dtype)}


def distances(rows, cols):
    values = rng.uniform(0, 1, (rows, cols)).astype("float32")
    values[values < 0.3] = 0  # no overlap
    return values


# --- target_assign -----------------------------------------------------------------------------
def assign_ref(i, a, offsets, neg_offsets=None):
    x, match = i["X"], i["MatchIndices"]
    n, priors = match.shape
    mismatch = a.get("mismatch_value", 0)
    out = np.full((n, priors, x.shape[2]), mismatch, x.dtype)
    weight = np.zeros((n, priors, 1), "float32")
    for b in range(n):
        for j in range(priors):
            if match[b, j] >= 0:
                out[b, j] = x[offsets[b] + match[b, j], j % x.shape[1]]
                weight[b, j] = 1
        if neg_offsets is not None:
            for neg in i["NegIndices"][neg_offsets[b]:neg_offsets[b + 1], 0]:
                out[b, neg] = mismatch
                weight[b, neg] = 1
    return {"Out": out, "OutWeight": weight}


MATCH = np.array([[0, -1, 1, -1, 0, -1, 1], [2, 0, -1, 1, -1, -1, 2]], "int32")


# --- mine_hard_examples --------------------------------------------------------------------
def mine_ref(i, a):
    cls, match, dist = i["ClsLoss"], i["MatchIndices"], i["MatchDist"]
    loc = i.get("LocLoss")
    hard = a["mining_type"] == "hard_example"
    updated = match.copy()
    negatives = []
    for n in range(len(match)):
        if hard:
            pool = [(cls[n, m] + (loc[n, m] if loc is not None else 0), m)
                    for m in range(match.shape[1])]
            count = min(a["sample_size"], len(pool))
        else:
            pool = [(cls[n, m], m) for m in range(match.shape[1])
                    if match[n, m] == -1 and dist[n, m] < a["neg_dist_threshold"]]
            count = min(int((match[n] != -1).sum() * a["neg_pos_ratio"]), len(pool))
        picked = sorted(m for _, m in sorted(pool, key=lambda e: -e[0])[:count])
        if hard:
            for m in range(match.shape[1]):
                if match[n, m] > -1 and m not in picked:
                    updated[n, m] = -1
            picked = [m for m in picked if match[n, m] == -1]
        negatives += picked
    return {"NegIndices": np.array(negatives, "int32").reshape(-1, 1),
            "UpdatedMatchIndices": updated}


# --- sigmoid_focal_loss ----------------------------------------------------------------------
def focal_ref(i, a):
    x, label = i["X"].astype("float64"), i["Label"].reshape(-1)
    gamma, alpha = a.get("gamma", 2.0), a.get("alpha", 0.25)
    fg = max(float(i["FgNum"][0]), 1.0)
    out = np.zeros_like(x)
    for r in range(x.shape[0]):
        for c in range(x.shape[1]):
            p = 1 / (1 + math.exp(-x[r, c]))
            if label[r] == c + 1:
                out[r, c] = -alpha / fg * (1 - p) ** gamma * math.log(p)
            elif label[r] != -1:
                out[r, c] = -(1 - alpha) / fg * p ** gamma * math.log(1 - p)
    return {"Out": out.astype(i["X"].dtype)}


FOCAL_LABELS = np.array([[0], [1], [4], [-1], [2], [3]], "int32")


# --- yolov3_loss ---------------------------------------------------------------------------
def sigmoid(v):
    return 1 / (1 + math.exp(-v))


def sce(x, label):
    return max(x, 0) - x * label + math.log1p(math.exp(-abs(x)))


def iou_centre(a, b):
    w = min(a[0] + a[2] / 2, b[0] + b[2] / 2) - max(a[0] - a[2] / 2, b[0] - b[2] / 2)
    h = min(a[1] + a[3] / 2, b[1] + b[3] / 2) - max(a[1] - a[3] / 2, b[1] - b[3] / 2)
    inter = 0.0 if w < 0 or h < 0 else w * h
    return inter / (a[2] * a[3] + b[2] * b[3] - inter)


def yolo_ref(i, a):
    x = i["X"].astype("float64")
    boxes, labels = i["GTBox"].astype("float64"), i["GTLabel"]
    scores = i.get("GTScore")
    n, _, h, w = x.shape
    anchors, mask, classes = a["anchors"], a["anchor_mask"], a["class_num"]
    size = a["downsample_ratio"] * h
    smooth = min(1 / classes, 1 / 40) if a.get("use_label_smooth", True) else 0.0
    entry = lambda b, j, e, r, c: x[b, j * (5 + classes) + e, r, c]  # noqa: E731
    loss = np.zeros(n)
    for b in range(n):
        target_obj = np.zeros((len(mask), h, w))
        gts = [t for t in range(boxes.shape[1]) if boxes[b, t, 2] > 1e-6 and boxes[b, t, 3] > 1e-6]
        for j, an in enumerate(mask):
            for r in range(h):
                for c in range(w):
                    pred = ((c + sigmoid(entry(b, j, 0, r, c))) / w,
                            (r + sigmoid(entry(b, j, 1, r, c))) / h,
                            math.exp(entry(b, j, 2, r, c)) * anchors[2 * an] / size,
                            math.exp(entry(b, j, 3, r, c)) * anchors[2 * an + 1] / size)
                    if any(iou_centre(pred, boxes[b, t]) > a["ignore_thresh"] for t in gts):
                        target_obj[j, r, c] = -1
        for t in gts:
            gx, gy, gw, gh = boxes[b, t]
            best = max(range(len(anchors) // 2), key=lambda k: (iou_centre(
                (0, 0, anchors[2 * k] / size, anchors[2 * k + 1] / size), (0, 0, gw, gh)), -k))
            if best not in mask:
                continue
            j, c, r = mask.index(best), int(gx * w), int(gy * h)
            score = scores[b, t] if scores is not None else 1.0
            scale = (2 - gw * gh) * score
            loss[b] += scale * (sce(entry(b, j, 0, r, c), gx * w - c)
                                + sce(entry(b, j, 1, r, c), gy * h - r)
                                + abs(entry(b, j, 2, r, c) - math.log(gw * size / anchors[2 * best]))
                                + abs(entry(b, j, 3, r, c)
                                      - math.log(gh * size / anchors[2 * best + 1])))
            for k in range(classes):
                target = 1 - smooth if k == labels[b, t] else smooth
                loss[b] += sce(entry(b, j, 5 + k, r, c), target) * score
            target_obj[j, r, c] = score
        for j in range(len(mask)):
            for r in range(h):
                for c in range(w):
                    obj = target_obj[j, r, c]
                    if obj > 1e-5:
                        loss[b] += sce(entry(b, j, 4, r, c), 1.0) * obj
                    elif obj > -0.5:
                        loss[b] += sce(entry(b, j, 4, r, c), 0.0)
    return {"Loss": loss.astype(i["X"].dtype)}


YOLO_ATTRS = {"anchors": [10, 13, 16, 30, 33, 23, 30, 61], "anchor_mask": [1, 2],
              "class_num": 3, "ignore_thresh": 0.5, "downsample_ratio": 8}
GT_BOX = np.array([[[0.3, 0.4, 0.2, 0.3], [0.7, 0.6, 0.5, 0.4], [0, 0, 0, 0]],
                   [[0.5, 0.5, 0.1, 0.1], [0.2, 0.8, 0.3, 0.2], [0.9, 0.1, 0.15, 0.2]]],
                  "float32")
GT_LABEL = np.array([[0, 2, 0], [1, 1, 2]], "int32")


def yolo_input(dtype="float32", scale=2.0):
    return rng.uniform(-scale, scale, (2, 2 * 8, 4, 4)).astype(dtype)


CASES = [
    OpCase("bipartite_match", {"DistMat": distances(5, 7)}, lod={"DistMat": [[0, 2, 5]]},
           ref=lambda i, a: match_ref(i, a, [0, 2, 5])),
    OpCase("bipartite_match", {"DistMat": distances(3, 6)},
           ref=lambda i, a: match_ref(i, a, [0, 3]), name="one_instance_no_lod"),
    OpCase("bipartite_match", {"DistMat": distances(6, 8)}, lod={"DistMat": [[0, 2, 2, 6]]},
           attrs={"match_type": "per_prediction", "dist_threshold": 0.4},
           ref=lambda i, a: match_ref(i, a, [0, 2, 2, 6]), name="per_prediction_empty"),
    OpCase("target_assign", {"X": rng.uniform(-1, 1, (5, 7, 4)).astype("float32"),
                             "MatchIndices": MATCH,
                             "NegIndices": np.array([[1], [3], [4], [5]], "int32")},
           lod={"X": [[0, 2, 5]], "NegIndices": [[0, 2, 4]]}, attrs={"mismatch_value": 3},
           ref=lambda i, a: assign_ref(i, a, [0, 2, 5], [0, 2, 4])),
    OpCase("target_assign", {"X": rng.randint(0, 5, (5, 1, 1)).astype("int32"),
                             "MatchIndices": MATCH},
           lod={"X": [[0, 2, 5]]}, ref=lambda i, a: assign_ref(i, a, [0, 2, 5]),
           name="labels_one_per_box"),
    OpCase("mine_hard_examples", {"ClsLoss": rng.uniform(0, 3, (2, 7)).astype("float32"),
                                  "MatchIndices": MATCH,
                                  "MatchDist": rng.uniform(0, 1, (2, 7)).astype("float32")},
           attrs={"neg_pos_ratio": 1.0, "neg_dist_threshold": 0.6,
                  "mining_type": "max_negative"}, ref=mine_ref),
    OpCase("mine_hard_examples", {"ClsLoss": rng.uniform(0, 3, (2, 7)).astype("float32"),
                                  "LocLoss": rng.uniform(0, 3, (2, 7)).astype("float32"),
                                  "MatchIndices": MATCH,
                                  "MatchDist": rng.uniform(0, 1, (2, 7)).astype("float32")},
           attrs={"neg_pos_ratio": 1.0, "neg_dist_threshold": 0.6, "sample_size": 4,
                  "mining_type": "hard_example"}, ref=mine_ref, name="hard_example"),
    OpCase("sigmoid_focal_loss", {"X": rng.uniform(-3, 3, (6, 4)).astype("float32"),
                                  "Label": FOCAL_LABELS, "FgNum": np.array([3], "int32")},
           ref=focal_ref),
    OpCase("sigmoid_focal_loss", {"X": rng.uniform(-2, 2, (6, 4)), "Label": FOCAL_LABELS,
                                  "FgNum": np.array([0], "int32")},
           attrs={"gamma": 1.5, "alpha": 0.4}, ref=focal_ref, grad=["X"],
           name="grad_no_foreground"),
    OpCase("yolov3_loss", {"X": yolo_input(), "GTBox": GT_BOX, "GTLabel": GT_LABEL,
                           "GTScore": rng.uniform(0.5, 1, (2, 3)).astype("float32")},
           attrs=YOLO_ATTRS, ref=yolo_ref, atol=1e-4, rtol=1e-5),
    OpCase("yolov3_loss", {"X": yolo_input(), "GTBox": GT_BOX, "GTLabel": GT_LABEL},
           attrs=dict(YOLO_ATTRS, use_label_smooth=False, anchor_mask=[0, 3]), ref=yolo_ref,
           atol=1e-4, rtol=1e-5, name="no_smoothing_other_mask"),
    OpCase("yolov3_loss", {"X": yolo_input("float64", scale=1.0), "GTBox": GT_BOX,
                           "GTLabel": GT_LABEL},
           attrs=dict(YOLO_ATTRS, ignore_thresh=0.95), ref=yolo_ref, grad=["X"],
           grad_outputs=["Loss"], name="grad"),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


def test_target_assign_wants_one_instance_per_match_row():
    case = OpCase("target_assign", {"X": rng.uniform(-1, 1, (5, 7, 4)).astype("float32"),
                                    "MatchIndices": MATCH}, lod={"X": [[0, 5]]},
                  ref=lambda i, a: {})
    with pytest.raises(InvalidArgument, match="instances"):
        check_output(case)


def test_yolov3_loss_wants_one_group_per_masked_anchor():
    case = OpCase("yolov3_loss", {"X": yolo_input(), "GTBox": GT_BOX, "GTLabel": GT_LABEL},
                  attrs=dict(YOLO_ATTRS, anchor_mask=[0, 1, 2]), ref=lambda i, a: {})
    with pytest.raises(InvalidArgument, match="anchor_mask"):
        check_output(case)
