"""Detection ops against box-by-box NumPy loops: IoU, box coding (both ways, both axes,
variances from an input or an attribute), SSD prior boxes (both orders, flip, clip), greedy
multi-class NMS (a hand-worked case), YOLOv3 boxes and box clipping."""
import math

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import Unimplemented

from .op_test import OpCase, check_output, table_tests

rng = np.random.RandomState(11)


def boxes(n, scale=1.0, dtype="float32"):
    """n valid boxes: xmin < xmax, ymin < ymax."""
    low = rng.uniform(0, 0.6, (n, 2)) * scale
    size = rng.uniform(0.05, 0.4, (n, 2)) * scale
    return np.concatenate([low, low + size], axis=1).astype(dtype)


def iou(a, b, normalized=True):
    extra = 0.0 if normalized else 1.0
    iw = min(a[2], b[2]) - max(a[0], b[0]) + extra
    ih = min(a[3], b[3]) - max(a[1], b[1]) + extra
    if iw <= 0 or ih <= 0:
        return 0.0
    area = lambda r: (r[2] - r[0] + extra) * (r[3] - r[1] + extra)  # noqa: E731
    return iw * ih / (area(a) + area(b) - iw * ih)


def iou_ref(i, a):
    x, y = i["X"].astype("float64"), i["Y"].astype("float64")
    out = [[iou(p, q, a.get("box_normalized", True)) for q in y] for p in x]
    return {"Out": np.array(out, i["X"].dtype)}


def centre_size(r, normalized):
    extra = 0.0 if normalized else 1.0
    w, h = r[2] - r[0] + extra, r[3] - r[1] + extra
    return r[0] + w / 2, r[1] + h / 2, w, h


def encode_ref(i, a):
    prior, target = i["PriorBox"].astype("float64"), i["TargetBox"].astype("float64")
    var = i.get("PriorBoxVar")
    normalized = a.get("box_normalized", True)
    out = np.zeros((len(target), len(prior), 4))
    for t in range(len(target)):
        _, _, tw, th = centre_size(target[t], normalized)
        tx, ty = (target[t, 0] + target[t, 2]) / 2, (target[t, 1] + target[t, 3]) / 2
        for p in range(len(prior)):
            px, py, pw, ph = centre_size(prior[p], normalized)
            v = var[p] if var is not None else a.get("variance") or [1, 1, 1, 1]
            out[t, p] = [(tx - px) / pw / v[0], (ty - py) / ph / v[1],
                         math.log(tw / pw) / v[2], math.log(th / ph) / v[3]]
    return {"OutputBox": out.astype(i["TargetBox"].dtype)}


def decode_ref(i, a):
    prior, target = i["PriorBox"].astype("float64"), i["TargetBox"].astype("float64")
    var = i.get("PriorBoxVar")
    normalized = a.get("box_normalized", True)
    extra = 0.0 if normalized else 1.0
    axis = a.get("axis", 0)
    out = np.zeros(target.shape)
    for n in range(target.shape[0]):
        for m in range(target.shape[1]):
            p = m if axis == 0 else n
            px, py, pw, ph = centre_size(prior[p], normalized)
            v = var[p] if var is not None else a.get("variance") or [1, 1, 1, 1]
            d = target[n, m]
            cx, cy = v[0] * d[0] * pw + px, v[1] * d[1] * ph + py
            w, h = math.exp(v[2] * d[2]) * pw, math.exp(v[3] * d[3]) * ph
            out[n, m] = [cx - w / 2, cy - h / 2, cx + w / 2 - extra, cy + h / 2 - extra]
    return {"OutputBox": out.astype(i["TargetBox"].dtype)}


def prior_box_ref(i, a):
    _, _, fh, fw = i["Input"].shape
    _, _, ih, iw = i["Image"].shape
    step_w = a.get("step_w") or iw / fw
    step_h = a.get("step_h") or ih / fh
    ratios = [1.0]
    for r in a.get("aspect_ratios", [1.0]):
        if all(abs(r - e) >= 1e-6 for e in ratios):
            ratios.append(r)
            if a.get("flip", True):
                ratios.append(1 / r)
    max_sizes = a.get("max_sizes", [])
    rows = []
    for h in range(fh):
        for w in range(fw):
            cx, cy = (w + a.get("offset", 0.5)) * step_w, (h + a.get("offset", 0.5)) * step_h
            cell = []
            for s, low in enumerate(a["min_sizes"]):
                shaped = [(low * math.sqrt(r), low / math.sqrt(r)) for r in ratios]
                big = [(math.sqrt(low * max_sizes[s]),) * 2] if max_sizes else []
                if a.get("min_max_aspect_ratios_order"):
                    cell += [(low, low)] + big + [wh for r, wh in zip(ratios, shaped)
                                                  if abs(r - 1) >= 1e-6]
                else:
                    cell += shaped + big
            for bw, bh in cell:
                box = [(cx - bw / 2) / iw, (cy - bh / 2) / ih, (cx + bw / 2) / iw,
                       (cy + bh / 2) / ih]
                rows.append([min(max(c, 0.0), 1.0) for c in box] if a.get("clip", True)
                            else box)
    out = np.array(rows).reshape(fh, fw, -1, 4)
    variances = np.tile(np.array(a.get("variances", [0.1, 0.1, 0.2, 0.2])), out.shape[:3] + (1,))
    return {"Boxes": out.astype("float32"), "Variances": variances.astype("float32")}


def sigmoid(v):
    return 1 / (1 + math.exp(-v))


def yolo_box_ref(i, a):
    x = i["X"].astype("float64")
    n, _, h, w = x.shape
    anchors = a["anchors"]
    count, classes = len(anchors) // 2, a["class_num"]
    boxes_out = np.zeros((n, count * h * w, 4))
    scores_out = np.zeros((n, count * h * w, classes))
    for b in range(n):
        img_h, img_w = i["ImgSize"][b]
        for k in range(count):
            for r in range(h):
                for c in range(w):
                    t = x[b, k * (5 + classes):(k + 1) * (5 + classes), r, c]
                    row = (k * h + r) * w + c
                    conf = sigmoid(t[4])
                    if conf < a["conf_thresh"]:
                        continue
                    scale = a.get("scale_x_y", 1.0)
                    cx = (c + sigmoid(t[0]) * scale - (scale - 1) / 2) * img_w / w
                    cy = (r + sigmoid(t[1]) * scale - (scale - 1) / 2) * img_h / h
                    bw = math.exp(t[2]) * anchors[2 * k] * img_w / (a["downsample_ratio"] * w)
                    bh = math.exp(t[3]) * anchors[2 * k + 1] * img_h / (a["downsample_ratio"] * h)
                    box = [cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2]
                    if a.get("clip_bbox", True):
                        box = [max(box[0], 0), max(box[1], 0), min(box[2], img_w - 1),
                               min(box[3], img_h - 1)]
                    boxes_out[b, row] = box
                    scores_out[b, row] = [conf * sigmoid(v) for v in t[5:]]
    return {"Boxes": boxes_out.astype("float32"), "Scores": scores_out.astype("float32")}


def box_clip_ref(i, a, offsets):
    out = i["Input"].astype("float64").copy()
    for n in range(len(offsets) - 1):
        h, w, scale = i["ImInfo"][n]
        for row in range(offsets[n], offsets[n + 1]):
            out[row, 0::2] = np.clip(out[row, 0::2], 0, round(w / scale) - 1)
            out[row, 1::2] = np.clip(out[row, 1::2], 0, round(h / scale) - 1)
    return {"Output": out.astype(i["Input"].dtype)}


prior, target = boxes(5), boxes(3)
pixel_prior, pixel_target = boxes(4, scale=100, dtype="float64"), boxes(3, scale=100,
                                                                         dtype="float64")
offsets = rng.uniform(-0.5, 0.5, (2, 5, 4)).astype("float32")
head = rng.uniform(-2, 2, (2, 2 * (5 + 3), 3, 4)).astype("float32")
clip_boxes = rng.uniform(-20, 120, (5, 4)).astype("float32")
im_info = np.array([[80, 100, 1.0], [60, 50, 0.5]], "float32")

CASES = [
    OpCase("iou_similarity", {"X": boxes(4), "Y": boxes(3)}, ref=iou_ref),
    OpCase("iou_similarity", {"X": pixel_prior, "Y": pixel_target},
           attrs={"box_normalized": False}, ref=iou_ref, name="pixels"),
    OpCase("box_coder", {"PriorBox": prior, "PriorBoxVar": np.full((5, 4), 0.1, "float32")
                         + rng.uniform(0, 0.1, (5, 4)).astype("float32"),
                         "TargetBox": target}, ref=encode_ref, atol=1e-4),
    OpCase("box_coder", {"PriorBox": pixel_prior, "TargetBox": pixel_target},
           attrs={"box_normalized": False, "variance": [0.1, 0.1, 0.2, 0.2]},
           ref=encode_ref, name="encode_pixels_variance_attr"),
    OpCase("box_coder", {"PriorBox": prior, "TargetBox": offsets},
           attrs={"code_type": "decode_center_size", "variance": [0.1, 0.1, 0.2, 0.2]},
           ref=decode_ref, name="decode_axis0"),
    OpCase("box_coder", {"PriorBox": boxes(2), "PriorBoxVar": np.full((2, 4), 0.2, "float32"),
                         "TargetBox": offsets},
           attrs={"code_type": "decode_center_size", "axis": 1}, ref=decode_ref,
           name="decode_axis1"),
    OpCase("prior_box", {"Input": np.zeros((1, 2, 3, 4), "float32"),
                         "Image": np.zeros((1, 3, 30, 40), "float32")},
           attrs={"min_sizes": [4.0, 8.0], "max_sizes": [9.0, 12.0], "aspect_ratios": [2.0],
                  "flip": True, "clip": False, "variances": [0.1, 0.1, 0.2, 0.2]},
           ref=prior_box_ref),
    OpCase("prior_box", {"Input": np.zeros((1, 2, 2, 3), "float32"),
                         "Image": np.zeros((1, 3, 16, 24), "float32")},
           attrs={"min_sizes": [10.0], "aspect_ratios": [0.5],
                  "variances": [0.1, 0.1, 0.2, 0.2]},
           ref=prior_box_ref, name="op_defaults_flip_and_clip"),
    OpCase("prior_box", {"Input": np.zeros((1, 2, 2, 2), "float32"),
                         "Image": np.zeros((1, 3, 20, 20), "float32")},
           attrs={"min_sizes": [12.0], "max_sizes": [18.0], "aspect_ratios": [2.0, 3.0],
                  "flip": True, "clip": True, "min_max_aspect_ratios_order": True,
                  "step_w": 9.0, "step_h": 9.0, "offset": 0.4, "variances": [1, 2, 3, 4]},
           ref=prior_box_ref, name="caffe_order_clip_steps"),
    OpCase("yolo_box", {"X": head, "ImgSize": np.array([[96, 128], [64, 64]], "int32")},
           attrs={"anchors": [10, 13, 16, 30], "class_num": 3, "conf_thresh": 0.3,
                  "downsample_ratio": 32}, ref=yolo_box_ref, atol=1e-4),
    OpCase("yolo_box", {"X": head, "ImgSize": np.array([[96, 128], [64, 64]], "int32")},
           attrs={"anchors": [10, 13, 16, 30], "class_num": 3, "conf_thresh": 0.01,
                  "downsample_ratio": 8, "clip_bbox": False}, ref=yolo_box_ref, atol=1e-3,
           name="unclipped"),
    OpCase("yolo_box", {"X": head, "ImgSize": np.array([[96, 128], [64, 64]], "int32")},
           attrs={"anchors": [10, 13, 16, 30], "class_num": 3, "conf_thresh": 0.2,
                  "downsample_ratio": 16, "scale_x_y": 1.2}, ref=yolo_box_ref, atol=1e-3,
           name="scale_x_y"),
    OpCase("box_clip", {"Input": clip_boxes, "ImInfo": im_info}, lod={"Input": [[0, 2, 5]]},
           ref=lambda i, a: box_clip_ref(i, a, [0, 2, 5])),
]

# --- multiclass NMS: a case worked by hand ------------------------------------------------
# one image, four boxes in pixels, three classes (0 = background). Boxes 0 and 1 overlap
# with IoU 100/121 > 0.5; box 2 overlaps box 0 with IoU 66/176; box 3 is apart.
nms_boxes = np.array([[[0, 0, 10, 10], [1, 1, 10, 10], [5, 0, 15, 10], [20, 20, 30, 30]]],
                     "float32")
nms_scores = np.array([[[0.9, 0.9, 0.9, 0.9],       # background: ignored
                        [0.8, 0.7, 0.6, 0.05],      # class 1: 0 kept, 1 suppressed, 2 kept,
                        #                             3 under the score threshold
                        [0.1, 0.95, 0.2, 0.5]]],    # class 2: 1, 3, 2, 0 overlaps 1: out
                      "float32")
NMS_ATTRS = {"score_threshold": 0.15, "nms_top_k": 10, "keep_top_k": 10, "nms_threshold": 0.5,
             "normalized": False, "background_label": 0}


def nms_expected(keep_top_k=10):
    rows = [(1, 0.8, 0), (1, 0.6, 2), (2, 0.95, 1), (2, 0.5, 3), (2, 0.2, 2)]
    best = sorted(rows, key=lambda r: -r[1])[:keep_top_k]
    rows = [r for r in rows if r in best]
    out = np.array([[label, score] + list(nms_boxes[0, i]) for label, score, i in rows],
                   "float32")
    return out, np.array([[i] for _, _, i in rows], "int32")


def nms_ref(keep_top_k):
    out, index = nms_expected(keep_top_k)
    return lambda i, a: {"Out": out, "Index": index}


CASES += [
    OpCase("multiclass_nms", {"BBoxes": nms_boxes, "Scores": nms_scores}, attrs=NMS_ATTRS,
           ref=lambda i, a: {"Out": nms_expected()[0]}),
    OpCase("multiclass_nms2", {"BBoxes": nms_boxes, "Scores": nms_scores},
           attrs=dict(NMS_ATTRS, keep_top_k=3), ref=nms_ref(3), name="keep_top_k"),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


def test_iou_keeps_the_lod_of_x():
    result = check_output(OpCase("iou_similarity", {"X": boxes(3), "Y": boxes(2)},
                                 lod={"X": [[0, 1, 3]]}, ref=iou_ref))
    assert result["Out"].lod() == [[0, 1, 3]]


def test_nms_gives_one_lod_level_by_image():
    two_images = np.concatenate([nms_boxes, nms_boxes[:, ::-1]])
    scores = np.concatenate([nms_scores, np.zeros_like(nms_scores)])
    result = check_output(OpCase("multiclass_nms2", {"BBoxes": two_images, "Scores": scores},
                                 attrs=NMS_ATTRS, ref=lambda i, a: {}))
    assert result["Out"].lod() == [[0, 5, 5]]
    assert result["Index"].lod() == [[0, 5, 5]]


def test_nms_of_nothing_is_a_row_of_minus_one_and_nms2_is_empty():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        b = fluid.data("b", [None, 4, 4])
        s = fluid.data("s", [None, 3, 4])
        out = fluid.layers.multiclass_nms(b, s, 0.15, 10, 10, 0.5, normalized=False)
    exe = fluid.Executor(fluid.CPUPlace())
    feed = {"b": nms_boxes, "s": np.zeros_like(nms_scores)}
    found, = exe.run(main, feed=feed, fetch_list=[out], return_numpy=False)
    assert np.asarray(found).tolist() == [[-1.0]] and found.lod() == [[0, 1]]
    v2 = check_output(OpCase("multiclass_nms2", {"BBoxes": nms_boxes,
                                                 "Scores": np.zeros_like(nms_scores)},
                             attrs=NMS_ATTRS, ref=lambda i, a: {}))
    assert np.asarray(v2["Out"]).shape == (0, 6) and v2["Out"].lod() == [[0, 0]]


def test_adaptive_threshold_lowers_after_each_kept_box():
    # three boxes in a row, each overlapping the next with IoU 0.6 (the first and the third
    # 1/3): at threshold 0.7 all three stay; with eta 0.8 the threshold falls to 0.56 once
    # the first is kept, so the second is suppressed and the third kept
    row = np.array([[[0, 0, 10, 10], [2.5, 0, 12.5, 10], [5, 0, 15, 10]]], "float32")
    overlap = iou(row[0, 0], row[0, 1], normalized=True)
    assert abs(overlap - 0.6) < 1e-6
    scores = np.array([[[0, 0, 0], [0.9, 0.8, 0.7]]], "float32")
    attrs = dict(NMS_ATTRS, normalized=True, nms_threshold=0.7)
    plain = check_output(OpCase("multiclass_nms2", {"BBoxes": row, "Scores": scores},
                                attrs=attrs, ref=lambda i, a: {}))
    assert np.asarray(plain["Index"]).ravel().tolist() == [0, 1, 2]
    adaptive = check_output(OpCase("multiclass_nms2", {"BBoxes": row, "Scores": scores},
                                   attrs=dict(attrs, nms_eta=0.8), ref=lambda i, a: {}))
    assert np.asarray(adaptive["Index"]).ravel().tolist() == [0, 2]


def test_nms_refuses_the_per_class_lod_form_by_name():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        b = fluid.data("b", [None, 3, 4], lod_level=1)
        s = fluid.data("s", [None, 3], lod_level=1)
        out = fluid.layers.multiclass_nms(b, s, 0.1, 10, 10)
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(Unimplemented, match="multiclass_nms"):
        exe.run(main, feed={"b": fluid.create_lod_tensor(np.zeros((2, 3, 4), "float32"),
                                                         [[2]], fluid.CPUPlace()),
                            "s": fluid.create_lod_tensor(np.zeros((2, 3), "float32"),
                                                         [[2]], fluid.CPUPlace())},
                fetch_list=[out])
