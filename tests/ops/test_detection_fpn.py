"""Region proposals against box-by-box NumPy: an RPN's generate_proposals (top-k, decoding,
clipping, the size filter, NMS), and FPN routing (distribute_fpn_proposals and
collect_fpn_proposals) with their LoDs and restore index."""
import math

import numpy as np
import pytest

from fluid_nb.errors import InvalidArgument

from .op_test import EachLoD, OpCase, check_output, table_tests
from .test_detection import iou

rng = np.random.RandomState(37)


def proposals_ref(i, a):
    scores, deltas, info = i["Scores"], i["BboxDeltas"], i["ImInfo"]
    n, count, h, w = scores.shape
    anchors = i["Anchors"].reshape(-1, 4).astype("float64")
    variances = i["Variances"].reshape(-1, 4).astype("float64")
    rois, probs = [], []
    for b in range(n):
        s = scores[b].transpose(1, 2, 0).reshape(-1).astype("float64")
        d = deltas[b].transpose(1, 2, 0).reshape(-1, 4).astype("float64")
        order = sorted(range(len(s)), key=lambda k: -s[k])
        if 0 < a["pre_nms_topN"] < len(order):
            order = order[:a["pre_nms_topN"]]
        candidates = []
        im_h, im_w, scale = info[b]
        for k in order:
            an, v = anchors[k], variances[k]
            aw, ah = an[2] - an[0] + 1, an[3] - an[1] + 1
            cx = v[0] * d[k, 0] * aw + an[0] + aw / 2
            cy = v[1] * d[k, 1] * ah + an[1] + ah / 2
            bw = math.exp(min(v[2] * d[k, 2], math.log(1000 / 16))) * aw
            bh = math.exp(min(v[3] * d[k, 3], math.log(1000 / 16))) * ah
            box = [min(max(cx - bw / 2, 0), im_w - 1), min(max(cy - bh / 2, 0), im_h - 1),
                   min(max(cx + bw / 2 - 1, 0), im_w - 1), min(max(cy + bh / 2 - 1, 0), im_h - 1)]
            size = max(a["min_size"], 1.0)
            if (box[2] - box[0]) / scale + 1 >= size and (box[3] - box[1]) / scale + 1 >= size \
                    and box[0] + (box[2] - box[0] + 1) / 2 <= im_w \
                    and box[1] + (box[3] - box[1] + 1) / 2 <= im_h:
                candidates.append((s[k], box))
        kept = []
        for score, box in candidates:  # already best first
            if all(iou(box, other, False) <= a["nms_thresh"] for _, other in kept):
                kept.append((score, box))
        if 0 < a["post_nms_topN"] < len(kept):
            kept = kept[:a["post_nms_topN"]]
        rois += [box for _, box in kept]
        probs += [score for score, _ in kept]
    return {"RpnRois": np.array(rois, "float32"),
            "RpnRoiProbs": np.array(probs, "float32").reshape(-1, 1)}


def grid_anchors(h, w, count, stride=8):
    out = np.zeros((h, w, count, 4), "float32")
    for r in range(h):
        for c in range(w):
            for k in range(count):
                half = 6 * (k + 1)
                out[r, c, k] = [c * stride - half, r * stride - half, c * stride + half,
                                r * stride + half]
    return out


def level_ref(rois, a):
    out = []
    for box in rois:
        w, h = box[2] - box[0] + 1, box[3] - box[1] + 1
        level = math.floor(math.log2(math.sqrt(w * h) / a["refer_scale"] + 1e-6)
                           + a["refer_level"])
        out.append(min(max(level, a["min_level"]), a["max_level"]))
    return out


def distribute_ref(offsets):
    def ref(i, a):
        rois = i["FpnRois"]
        levels = level_ref(rois, a)
        outputs, order = [], []
        for level in range(a["min_level"], a["max_level"] + 1):
            rows = [r for b in range(len(offsets) - 1) for r in range(offsets[b], offsets[b + 1])
                    if levels[r] == level]
            outputs.append(rois[rows].reshape(-1, 4))
            order += rows
        restore = np.zeros((len(rois), 1), "int32")
        for position, r in enumerate(order):
            restore[r] = position
        return {"MultiFpnRois": outputs, "RestoreIndex": restore}
    return ref


def collect_ref(lods):
    def ref(i, a):
        entries = []
        for level, (rois, scores) in enumerate(zip(i["MultiLevelRois"], i["MultiLevelScores"])):
            offsets = lods[level][0]
            for b in range(len(offsets) - 1):
                for r in range(offsets[b], offsets[b + 1]):
                    entries.append((scores[r, 0], b, rois[r]))
        best = sorted(entries, key=lambda e: -e[0])[:a["post_nms_topN"]]
        best = sorted(best, key=lambda e: e[1])
        return {"FpnRois": np.array([e[2] for e in best], "float32")}
    return ref


def pixel_rois(n, span=300):
    start = rng.uniform(0, 50, (n, 2))
    return np.concatenate([start, start + rng.uniform(2, span, (n, 2))], 1).astype("float32")


ANCHORS = grid_anchors(3, 4, 2)
PROPOSAL_INPUTS = {"Scores": rng.uniform(0, 1, (2, 2, 3, 4)).astype("float32"),
                   "BboxDeltas": rng.uniform(-0.5, 0.5, (2, 8, 3, 4)).astype("float32"),
                   "ImInfo": np.array([[24, 32, 1.0], [20, 30, 2.0]], "float32"),
                   "Anchors": ANCHORS, "Variances": np.full(ANCHORS.shape, 0.5, "float32")}
FPN = {"min_level": 2, "max_level": 5, "refer_level": 4, "refer_scale": 224}
COLLECT_LODS = [[[0, 2, 6]], [[0, 3, 4]]]

CASES = [
    OpCase("generate_proposals", PROPOSAL_INPUTS,
           attrs={"pre_nms_topN": 10, "post_nms_topN": 5, "nms_thresh": 0.5, "min_size": 2.0,
                  "eta": 1.0}, ref=proposals_ref, outputs={"RpnRois": 1, "RpnRoiProbs": 1},
           atol=1e-4),
    OpCase("generate_proposals", PROPOSAL_INPUTS,
           attrs={"pre_nms_topN": -1, "post_nms_topN": -1, "nms_thresh": 0.7,
                  "min_size": 0.1, "eta": 1.0}, ref=proposals_ref,
           outputs={"RpnRois": 1, "RpnRoiProbs": 1}, atol=1e-4, name="everything"),
    OpCase("distribute_fpn_proposals", {"FpnRois": pixel_rois(12)},
           lod={"FpnRois": [[0, 5, 12]]}, attrs=FPN, ref=distribute_ref([0, 5, 12]),
           outputs={"MultiFpnRois": 4, "RestoreIndex": 1}),
    OpCase("collect_fpn_proposals",
           {"MultiLevelRois": [pixel_rois(6), pixel_rois(4)],
            "MultiLevelScores": [rng.uniform(0, 1, (6, 1)).astype("float32"),
                                 rng.uniform(0, 1, (4, 1)).astype("float32")]},
           lod={"MultiLevelRois": EachLoD(COLLECT_LODS),
                "MultiLevelScores": EachLoD(COLLECT_LODS)},
           attrs={"post_nms_topN": 7}, ref=collect_ref(COLLECT_LODS)),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


def test_proposals_and_levels_carry_one_lod_level_by_image():
    out = check_output(CASES[0])
    assert np.diff(out["RpnRois"].lod()[0]).tolist() == [5, 5]
    routed = check_output(CASES[2])
    levels = level_ref(CASES[2].inputs["FpnRois"], FPN)
    for k, tensor in enumerate(routed["MultiFpnRois"]):
        level = FPN["min_level"] + k
        per_image = [sum(1 for r in range(0, 5) if levels[r] == level),
                     sum(1 for r in range(5, 12) if levels[r] == level)]
        assert np.diff(tensor.lod()[0]).tolist() == per_image


def test_rois_without_lod_are_refused_by_name():
    case = OpCase("distribute_fpn_proposals", {"FpnRois": pixel_rois(3)}, attrs=FPN,
                  ref=lambda i, a: {}, outputs={"MultiFpnRois": 4, "RestoreIndex": 1})
    with pytest.raises(InvalidArgument, match="FpnRois"):
        check_output(case)
