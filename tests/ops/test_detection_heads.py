"""The detection heads' ops against box-by-box NumPy loops: dense priors, anchors, EAST's
geometry, per-class decoding with assignment, Matrix NMS (linear and Gaussian), locality-
aware NMS (merges carried across classes) and RetinaNet's multi-level output."""
import math

import numpy as np
import pytest

from fluid_nb.errors import InvalidArgument

from .op_test import OpCase, check_output, table_tests
from .test_detection import iou

rng = np.random.RandomState(29)


def density_ref(i, a):
    _, _, fh, fw = i["Input"].shape
    _, _, ih, iw = i["Image"].shape
    step_w, step_h = a["step_w"] or iw / fw, a["step_h"] or ih / fh
    average = int((step_w + step_h) / 2)
    rows = []
    for h in range(fh):
        for w in range(fw):
            cx, cy = (w + a["offset"]) * step_w, (h + a["offset"]) * step_h
            for size, density in zip(a["fixed_sizes"], a["densities"]):
                shift = average // density
                for ratio in a["fixed_ratios"]:
                    bw, bh = size * math.sqrt(ratio), size / math.sqrt(ratio)
                    for di in range(density):
                        for dj in range(density):
                            x = cx - average / 2 + shift / 2 + dj * shift
                            y = cy - average / 2 + shift / 2 + di * shift
                            box = [max((x - bw / 2) / iw, 0), max((y - bh / 2) / ih, 0),
                                   min((x + bw / 2) / iw, 1), min((y + bh / 2) / ih, 1)]
                            rows.append([min(max(v, 0), 1) for v in box] if a["clip"] else box)
    boxes = np.array(rows, "float32")
    variances = np.tile(np.array(a["variances"], "float32"), (len(rows), 1))
    if not a["flatten_to_2d"]:
        boxes, variances = boxes.reshape(fh, fw, -1, 4), variances.reshape(fh, fw, -1, 4)
    return {"Boxes": boxes, "Variances": variances}


def anchor_ref(i, a):
    _, _, fh, fw = i["Input"].shape
    sw, sh = a["stride"]
    out = []
    for h in range(fh):
        for w in range(fw):
            x, y = w * sw + a["offset"] * (sw - 1), h * sh + a["offset"] * (sh - 1)
            for ratio in a["aspect_ratios"]:
                for size in a["anchor_sizes"]:
                    base_w = round(math.sqrt(sw * sh / ratio))
                    base_h = round(base_w * ratio)
                    aw, ah = size / sw * base_w, size / sh * base_h
                    out.append([x - (aw - 1) / 2, y - (ah - 1) / 2, x + (aw - 1) / 2,
                                y + (ah - 1) / 2])
    anchors = np.array(out, "float32").reshape(fh, fw, -1, 4)
    return {"Anchors": anchors,
            "Variances": np.broadcast_to(np.array(a["variances"], "float32"), anchors.shape)}


def polygon_ref(i, a):
    x = i["Input"]
    out = np.empty_like(x)
    for c in range(x.shape[1]):
        for h in range(x.shape[2]):
            for w in range(x.shape[3]):
                out[:, c, h, w] = (4 * w if c % 2 == 0 else 4 * h) - x[:, c, h, w]
    return {"Output": out}


def decode_assign_ref(i, a):
    prior, var = i["PriorBox"].astype("float64"), i["PriorBoxVar"].astype("float64")
    deltas, scores = i["TargetBox"].astype("float64"), i["BoxScore"]
    rois, classes = scores.shape
    decoded = np.zeros((rois, classes * 4))
    assigned = np.zeros((rois, 4))
    for r in range(rois):
        w, h = prior[r, 2] - prior[r, 0] + 1, prior[r, 3] - prior[r, 1] + 1
        cx, cy = prior[r, 0] + w / 2, prior[r, 1] + h / 2
        for c in range(classes):
            d = deltas[r, 4 * c:4 * c + 4]
            bx, by = var[0] * d[0] * w + cx, var[1] * d[1] * h + cy
            bw = math.exp(min(var[2] * d[2], a["box_clip"])) * w
            bh = math.exp(min(var[3] * d[3], a["box_clip"])) * h
            decoded[r, 4 * c:4 * c + 4] = [bx - bw / 2, by - bh / 2, bx + bw / 2 - 1,
                                           by + bh / 2 - 1]
        best = max(range(1, classes), key=lambda c: scores[r, c]) if classes > 1 else 0
        assigned[r] = decoded[r, 4 * best:4 * best + 4] if best > 0 else prior[r]
    return {"DecodeBox": decoded.astype("float32"), "OutputAssignBox": assigned.astype("float32")}


def matrix_nms_ref(i, a):
    boxes_all, scores_all = i["BBoxes"].astype("float64"), i["Scores"].astype("float64")
    rows, index = [], []
    for n in range(len(boxes_all)):
        found = []
        for label in range(scores_all.shape[1]):
            if label == a["background_label"]:
                continue
            s = scores_all[n, label]
            order = sorted((m for m in range(len(s)) if s[m] > a["score_threshold"]),
                           key=lambda m: -s[m])
            if a["nms_top_k"] > -1:
                order = order[:a["nms_top_k"]]
            overlap = lambda p, q: iou(boxes_all[n, p], boxes_all[n, q], a["normalized"])  # noqa: E731
            max_iou = [max([overlap(order[k], order[j]) for j in range(k)] or [0.0])
                       for k in range(len(order))]
            for k, m in enumerate(order):
                decay = 1.0
                for j in range(k):
                    o = overlap(m, order[j])
                    if a["use_gaussian"]:
                        d = math.exp((max_iou[j] ** 2 - o ** 2) * a["gaussian_sigma"])
                    else:
                        d = (1 - o) / (1 - max_iou[j])
                    decay = min(decay, d)
                if decay * s[m] > a["post_threshold"]:
                    found.append((decay * s[m], label, m))
        found.sort(key=lambda f: -f[0])
        if a["keep_top_k"] > -1:
            found = found[:a["keep_top_k"]]
        rows += [[label, score] + list(boxes_all[n, m]) for score, label, m in found]
        index += [n * boxes_all.shape[1] + m for _, _, m in found]
    return {"Out": np.array(rows, "float32").reshape(-1, 6),
            "Index": np.array(index, "int32").reshape(-1, 1)}


def greedy_nms(boxes, scores, candidates, a):
    order = sorted((m for m in candidates if scores[m] > a["score_threshold"]),
                   key=lambda m: -scores[m])[:a["nms_top_k"]]
    kept = []
    for m in order:
        if all(iou(boxes[m], boxes[k], a["normalized"]) <= a["nms_threshold"] for k in kept):
            kept.append(m)
    return kept


def locality_ref(i, a):
    rows = []
    for n in range(len(i["BBoxes"])):
        boxes = i["BBoxes"][n].astype("float64").copy()
        found = []
        for label in range(i["Scores"].shape[1]):
            scores = i["Scores"][n, label].astype("float64").copy()
            heads = []
            for m in range(len(boxes)):
                if heads and iou(boxes[m], boxes[heads[-1]], a["normalized"]) > \
                        a["nms_threshold"]:
                    h = heads[-1]
                    boxes[h] = (boxes[m] * scores[m] + boxes[h] * scores[h]) / (
                        scores[m] + scores[h])
                    scores[h] += scores[m]
                else:
                    heads.append(m)
            found += [(scores[m], label, m) for m in greedy_nms(boxes, scores, heads, a)]
        if len(found) > a["keep_top_k"]:
            found = sorted(found, key=lambda f: -f[0])[:a["keep_top_k"]]
        for label in sorted({f[1] for f in found}):
            rows += [[label, s] + list(boxes[m]) for s, l, m in found if l == label]
    return {"Out": np.array(rows, "float32")}


def retinanet_ref(i, a):
    rows = []
    for n in range(len(i["ImInfo"])):
        im_h, im_w, scale = i["ImInfo"][n]
        per_class = {}
        levels = len(i["Scores"])
        for level in range(levels):
            scores = i["Scores"][level][n]
            threshold = a["score_threshold"] if level < levels - 1 else 0.0
            entries = sorted(((scores[m, c], m, c) for m in range(scores.shape[0])
                              for c in range(scores.shape[1]) if scores[m, c] > threshold),
                             key=lambda e: -e[0])[:a["nms_top_k"]]
            for score, m, c in entries:
                an, d = i["Anchors"][level][m], i["BBoxes"][level][n, m]
                w, h = an[2] - an[0] + 1, an[3] - an[1] + 1
                x, y = d[0] * w + an[0] + w / 2, d[1] * h + an[1] + h / 2
                bw, bh = math.exp(d[2]) * w, math.exp(d[3]) * h
                box = [(x - bw / 2) / scale, (y - bh / 2) / scale, (x + bw / 2 - 1) / scale,
                       (y + bh / 2 - 1) / scale]
                box = [min(max(box[0], 0), round(im_w / scale) - 1),
                       min(max(box[1], 0), round(im_h / scale) - 1),
                       min(max(box[2], 0), round(im_w / scale) - 1),
                       min(max(box[3], 0), round(im_h / scale) - 1)]
                per_class.setdefault(c, []).append((score, box))
        found = []
        for c, entries in per_class.items():
            entries.sort(key=lambda e: -e[0])
            kept = []
            for score, box in entries:
                if all(iou(box, k, False) <= a["nms_threshold"] for _, k in kept):
                    kept.append((score, box))
            found += [(s, c, b) for s, b in kept]
        found.sort(key=lambda f: -f[0])
        rows += [[c + 1, s] + list(b) for s, c, b in found[:a["keep_top_k"]]]
    return {"Out": np.array(rows, "float32")}


def corner_boxes(n, m, low, size):
    start = rng.uniform(0, low, (n, m, 2))
    return np.concatenate([start, start + rng.uniform(size / 4, size, (n, m, 2))],
                          axis=2).astype("float32")


def in_a_row(n, m):
    """Boxes in pixels each overlapping the next: merges for locality-aware NMS."""
    x0 = np.cumsum(rng.uniform(0, 4, (n, m, 1)), axis=1)
    y0 = rng.uniform(0, 3, (n, m, 1))
    return np.concatenate([x0, y0, x0 + rng.uniform(4, 8, (n, m, 1)),
                           y0 + rng.uniform(4, 8, (n, m, 1))], axis=2).astype("float32")


def level_anchors(m, size):
    start = rng.uniform(0, 40, (m, 2))
    return np.concatenate([start, start + rng.uniform(5, size, (m, 2))], 1).astype("float32")


DENSITY = {"variances": [0.1, 0.1, 0.2, 0.2], "clip": False, "step_w": 0.0, "step_h": 0.0,
           "offset": 0.5, "densities": [2, 1], "fixed_sizes": [8.0, 16.0],
           "fixed_ratios": [1.0, 2.0], "flatten_to_2d": False}
MATRIX = {"background_label": 0, "score_threshold": 0.1, "post_threshold": 0.2,
          "nms_top_k": 5, "keep_top_k": 6, "normalized": True, "use_gaussian": False,
          "gaussian_sigma": 2.0}
LOCALITY = {"background_label": -1, "score_threshold": 0.2, "nms_top_k": 8, "keep_top_k": 5,
            "nms_threshold": 0.3, "nms_eta": 1.0, "normalized": False}
RETINA = {"score_threshold": 0.3, "nms_top_k": 5, "nms_threshold": 0.4, "nms_eta": 1.0,
          "keep_top_k": 6}

CASES = [
    OpCase("density_prior_box", {"Input": np.zeros((1, 2, 3, 4), "float32"),
                                 "Image": np.zeros((1, 3, 24, 32), "float32")},
           attrs=DENSITY, ref=density_ref),
    OpCase("density_prior_box", {"Input": np.zeros((1, 2, 2, 2), "float32"),
                                 "Image": np.zeros((1, 3, 20, 20), "float32")},
           attrs=dict(DENSITY, clip=True, step_w=7.0, step_h=9.0, offset=0.4, densities=[3],
                      fixed_sizes=[12.0], fixed_ratios=[0.5], flatten_to_2d=True),
           ref=density_ref, name="uneven_steps_flat"),
    OpCase("anchor_generator", {"Input": np.zeros((1, 2, 3, 2), "float32")},
           attrs={"anchor_sizes": [32.0, 64.0], "aspect_ratios": [0.5, 1.0, 2.0],
                  "variances": [0.1, 0.1, 0.2, 0.2], "stride": [16.0, 8.0], "offset": 0.5},
           ref=anchor_ref),
    OpCase("polygon_box_transform", {"Input": rng.uniform(0, 5, (2, 8, 3, 4)).astype(
        "float32")}, ref=polygon_ref),
    OpCase("box_decoder_and_assign",
           {"PriorBox": np.array([[10, 10, 40, 30], [5, 20, 25, 60], [0, 0, 15, 15]],
                                 "float32"),
            "PriorBoxVar": np.array([0.1, 0.1, 0.2, 0.2], "float32"),
            "TargetBox": rng.uniform(-2, 2, (3, 12)).astype("float32"),
            "BoxScore": rng.uniform(0, 1, (3, 3)).astype("float32")},
           attrs={"box_clip": 0.3}, ref=decode_assign_ref, atol=1e-4),
    OpCase("matrix_nms", {"BBoxes": corner_boxes(2, 6, 0.5, 0.5),
                          "Scores": rng.uniform(0, 1, (2, 3, 6)).astype("float32")},
           attrs=MATRIX, ref=matrix_nms_ref, outputs={"Out": 1, "Index": 1}),
    OpCase("matrix_nms", {"BBoxes": corner_boxes(2, 6, 0.5, 0.5) * 20,
                          "Scores": rng.uniform(0, 1, (2, 3, 6)).astype("float32")},
           attrs=dict(MATRIX, background_label=-1, score_threshold=0.05, post_threshold=0.1,
                      nms_top_k=-1, keep_top_k=-1, normalized=False, use_gaussian=True),
           ref=matrix_nms_ref, outputs={"Out": 1, "Index": 1}, name="gaussian_pixels"),
    OpCase("locality_aware_nms", {"BBoxes": in_a_row(2, 10),
                                  "Scores": rng.uniform(0, 1, (2, 2, 10)).astype("float32")},
           attrs=LOCALITY, ref=locality_ref, atol=1e-4),
    OpCase("locality_aware_nms", {"BBoxes": in_a_row(1, 8),
                                  "Scores": rng.uniform(0, 1, (1, 3, 8)).astype("float32")},
           attrs=dict(LOCALITY, nms_threshold=0.5, keep_top_k=20), ref=locality_ref,
           atol=1e-4, name="three_classes"),
    OpCase("retinanet_detection_output",
           {"BBoxes": [rng.uniform(-0.5, 0.5, (2, 6, 4)).astype("float32"),
                       rng.uniform(-0.5, 0.5, (2, 4, 4)).astype("float32")],
            "Scores": [rng.uniform(0, 1, (2, 6, 3)).astype("float32"),
                       rng.uniform(0, 0.3, (2, 4, 3)).astype("float32")],
            "Anchors": [level_anchors(6, 20), level_anchors(4, 40)],
            "ImInfo": np.array([[60, 50, 1.0], [90, 80, 1.5]], "float32")},
           attrs=RETINA, ref=retinanet_ref, atol=1e-3),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


def test_outputs_carry_one_lod_level_by_image():
    out = check_output(CASES[5])
    counts = np.diff(out["Out"].lod()[0])
    assert len(counts) == 2 and out["Index"].lod() == out["Out"].lod()


def test_locality_aware_nms_refuses_quadrilaterals_by_name():
    case = OpCase("locality_aware_nms", {"BBoxes": rng.uniform(0, 1, (1, 3, 8)).astype(
        "float32"), "Scores": rng.uniform(0, 1, (1, 1, 3)).astype("float32")},
        attrs=LOCALITY, ref=lambda i, a: {})
    with pytest.raises(InvalidArgument, match="quadrilaterals"):
        check_output(case)
