"""Two-stage detector training ops against box-by-box NumPy loops: RPN and RetinaNet anchor
targets (thresholds, the best-anchor rule, crowd ground truths, straddling anchors, sampling
caps, a foreground demoted to background), proposal sampling with class-wise targets, mask
targets, and the perspective RoI transform with a float64 finite-difference gradient."""
import math

import numpy as np

from .op_test import OpCase, check_output, table_tests

rng = np.random.RandomState(29)


# --- pixel boxes, one pair at a time ---------------------------------------------------------
def pixel_iou(a, b):
    w = min(a[2], b[2]) - max(a[0], b[0]) + 1
    h = min(a[3], b[3]) - max(a[1], b[1]) + 1
    if w <= 0 or h <= 0:
        return 0.0
    inter = w * h
    area = lambda r: (r[2] - r[0] + 1) * (r[3] - r[1] + 1)  # noqa: E731
    return inter / (area(a) + area(b) - inter)


def delta(box, gt, weights=(1, 1, 1, 1)):
    bw, bh = box[2] - box[0] + 1, box[3] - box[1] + 1
    gw, gh = gt[2] - gt[0] + 1, gt[3] - gt[1] + 1
    bx, by, gx, gy = box[0] + bw / 2, box[1] + bh / 2, gt[0] + gw / 2, gt[1] + gh / 2
    return [(gx - bx) / bw / weights[0], (gy - by) / bh / weights[1],
            math.log(gw / bw) / weights[2], math.log(gh / bh) / weights[3]]


def lod_of(offsets):
    return [list(offsets)]


# --- rpn_target_assign / retinanet_target_assign ----------------------------------------------
def anchor_targets(i, a, gt_lod, retina):
    anchors, boxes = i["Anchor"].astype("float64"), i["GtBoxes"].astype("float64")
    crowd, info = i["IsCrowd"].reshape(-1), i["ImInfo"]
    labels = i["GtLabels"].reshape(-1) if retina else None
    straddle = -1.0 if retina else a.get("rpn_straddle_thresh", 0.0)
    pos = a.get("positive_overlap", 0.5) if retina else a.get("rpn_positive_overlap", 0.7)
    neg = a.get("negative_overlap", 0.4) if retina else a.get("rpn_negative_overlap", 0.3)
    batch = -1 if retina else a.get("rpn_batch_size_per_im", 256)
    frac = -1.0 if retina else a.get("rpn_fg_fraction", 0.25)
    out = {k: [] for k in ("loc", "score", "label", "bbox", "weight", "fg")}
    offsets = {k: [0] for k in out}
    for n in range(len(gt_lod) - 1):
        h, w, scale = info[n]
        inside = [k for k, b in enumerate(anchors) if straddle < 0 or (
            b[0] >= -straddle and b[1] >= -straddle and b[2] < w + straddle
            and b[3] < h + straddle)]
        rows = [r for r in range(gt_lod[n], gt_lod[n + 1]) if crowd[r] == 0]
        gts = [boxes[r] * scale for r in rows]
        ov = np.array([[pixel_iou(anchors[k], g) for g in gts] for k in inside]).reshape(
            len(inside), len(gts))
        best = ov.max(1) if gts else np.zeros(len(inside))
        col_best = ov.max(0) if len(inside) else np.zeros(len(gts))
        fg_c = [k for k in range(len(inside))
                if best[k] >= pos or any(abs(ov[k, j] - col_best[j]) < 1e-5
                                         for j in range(len(gts)))]
        if batch > 0 and frac > 0:
            fg_c = fg_c[:int(batch * frac)]
        bg_c = [k for k in range(len(inside)) if best[k] < neg]
        if batch > 0 and frac > 0:
            bg_c = bg_c[:batch - len(fg_c)]
        demoted = len(set(fg_c) & set(bg_c))
        fg = sorted(set(fg_c) - set(bg_c))
        bg = sorted(bg_c)
        located = [fg_c[0]] * demoted + fg
        base = n * len(anchors)
        out["loc"] += [inside[k] + base for k in located]
        out["score"] += [inside[k] + base for k in fg + bg]
        if retina:
            out["label"] += [labels[rows[int(np.argmax(ov[k]))]] for k in fg]
        else:
            out["label"] += [1] * len(fg)
        out["label"] += [0] * len(bg)
        out["bbox"] += [delta(anchors[inside[k]], gts[int(np.argmax(ov[k]))]) for k in located]
        out["weight"] += [[0.0] * 4] * demoted + [[1.0] * 4] * len(fg)
        out["fg"].append(len(located) + 1)
        for k, size in (("loc", len(located)), ("score", len(fg) + len(bg)),
                        ("fg", 1)):
            offsets[k].append(offsets[k][-1] + size)
    dt = anchors.dtype if i["Anchor"].dtype == np.float64 else np.float32
    result = {
        "LocationIndex": (np.array(out["loc"], "int32"), [offsets["loc"]]),
        "ScoreIndex": (np.array(out["score"], "int32"), [offsets["score"]]),
        "TargetLabel": (np.array(out["label"], "int32").reshape(-1, 1), [offsets["score"]]),
        "TargetBBox": (np.array(out["bbox"], dt).reshape(-1, 4), [offsets["loc"]]),
        "BBoxInsideWeight": (np.array(out["weight"], dt).reshape(-1, 4), [offsets["loc"]]),
    }
    if retina:
        result["ForegroundNumber"] = (np.array(out["fg"], "int32").reshape(-1, 1),
                                      [offsets["fg"]])
    return result


def grid_anchors(size=4, step=8, extent=(12, 20)):
    """Square anchors of each side in ``extent`` centred on a size x size grid."""
    boxes = []
    for y in range(size):
        for x in range(size):
            for side in extent:
                cx, cy = x * step + step / 2, y * step + step / 2
                boxes.append([cx - side / 2, cy - side / 2, cx + side / 2 - 1,
                              cy + side / 2 - 1])
    return np.array(boxes, "float32")


ANCHORS = grid_anchors()
# image 0: two boxes (one crowd); image 1: one box overlapping nothing well (best-anchor
# rule) and one large box; the second image is at scale 0.5
GT_BOXES = np.array([[2, 3, 17, 15], [10, 10, 30, 30], [0, 0, 3, 3], [8, 8, 60, 60]],
                    "float32")
GT_LABELS = np.array([[3], [1], [2], [5]], "int32")
IS_CROWD = np.array([[0], [1], [0], [0]], "int32")
IM_INFO = np.array([[32, 32, 1.0], [30, 40, 0.5]], "float32")
GT_LOD = [0, 2, 4]
ASSIGN_LOD = {"GtBoxes": [GT_LOD], "GtLabels": [GT_LOD], "IsCrowd": [GT_LOD]}
RPN_INPUTS = {"Anchor": ANCHORS, "GtBoxes": GT_BOXES, "IsCrowd": IS_CROWD,
              "ImInfo": IM_INFO}
RETINA_INPUTS = dict(RPN_INPUTS, GtLabels=GT_LABELS)


# --- generate_proposal_labels -------------------------------------------------------------------
def proposal_labels(i, a, roi_lod, gt_lod):
    rois, classes = i["RpnRois"].astype("float64"), i["GtClasses"].reshape(-1)
    crowd, gts_all, info = i["IsCrowd"].reshape(-1), i["GtBoxes"].astype("float64"), i["ImInfo"]
    width = 4 * a["class_nums"]
    weights = a.get("bbox_reg_weights", [0.1, 0.1, 0.2, 0.2])
    out_rois, out_labels, targets, inside = [], [], [], []
    offsets = [0]
    for n in range(len(roi_lod) - 1):
        scale = float(info[n][2])
        gts = gts_all[gt_lod[n]:gt_lod[n + 1]]
        own = rois[roi_lod[n]:roi_lod[n + 1]]
        if a.get("is_cascade_rcnn"):  # the RpnRois begin with the ground truths, unscaled
            cands = [r if k < len(gts) else r / scale for k, r in enumerate(own)]
        else:
            cands = list(gts) + [r / scale for r in own]
        fg, fg_gt, bg = [], [], []
        for k, box in enumerate(cands):
            if a.get("is_cascade_rcnn") and (box[2] - box[0] + 1 <= 0 or
                                             box[3] - box[1] + 1 <= 0):
                continue
            ious = [pixel_iou(box, g) for g in gts]
            best = -1.0 if k < len(gts) and crowd[gt_lod[n] + k] else max(ious)
            if best >= a.get("fg_thresh", 0.25):
                fg.append(k)
                fg_gt.append(ious.index(best))
            elif a.get("bg_thresh_lo", 0.0) <= best < a.get("bg_thresh_hi", 0.5):
                bg.append(k)
        if not a.get("is_cascade_rcnn"):
            batch = a.get("batch_size_per_im", 256)
            count = min(int(batch * a.get("fg_fraction", 0.25)), len(fg))
            fg, fg_gt = fg[:count], fg_gt[:count]
            bg = bg[:batch - count]
        for k, g in zip(fg, fg_gt):
            label = int(classes[gt_lod[n] + g])
            row_t, row_w = np.zeros(width), np.zeros(width)
            col = 4 * (1 if a.get("is_cls_agnostic") else label)
            if label > 0:
                row_t[col:col + 4] = delta(cands[k], gts[g], weights)
                row_w[col:col + 4] = 1
            out_rois.append(cands[k] * scale)
            out_labels.append(label)
            targets.append(row_t)
            inside.append(row_w)
        for k in bg:
            out_rois.append(cands[k] * scale)
            out_labels.append(0)
            targets.append(np.zeros(width))
            inside.append(np.zeros(width))
        offsets.append(len(out_rois))
    dt = i["RpnRois"].dtype
    lod = [offsets]
    return {"Rois": (np.array(out_rois, dt).reshape(-1, 4), lod),
            "LabelsInt32": (np.array(out_labels, "int32").reshape(-1, 1), lod),
            "BboxTargets": (np.array(targets, dt).reshape(-1, width), lod),
            "BboxInsideWeights": (np.array(inside, dt).reshape(-1, width), lod),
            "BboxOutsideWeights": (np.array(inside, dt).reshape(-1, width), lod)}


def random_rois(count, extent=48, scale=1.0):
    x1 = rng.uniform(0, extent - 10, count)
    y1 = rng.uniform(0, extent - 10, count)
    w = rng.uniform(4, 30, count)
    h = rng.uniform(4, 30, count)
    return (np.stack([x1, y1, x1 + w, y1 + h], 1) * scale).astype("float32")


PROPOSAL_GTS = np.array([[4, 4, 20, 24], [20, 18, 44, 40], [0, 0, 10, 10], [5, 5, 30, 30]],
                        "float32")
PROPOSAL_CLASSES = np.array([[2], [3], [1], [4]], "int32")
PROPOSAL_CROWD = np.array([[0], [0], [1], [0]], "int32")
PROPOSAL_INFO = np.array([[48, 48, 1.0], [96, 96, 2.0]], "float32")
PROPOSAL_ROIS = np.concatenate([random_rois(12), random_rois(10, scale=2.0)])
PROPOSAL_INPUTS = {"RpnRois": PROPOSAL_ROIS, "GtClasses": PROPOSAL_CLASSES,
                   "IsCrowd": PROPOSAL_CROWD, "GtBoxes": PROPOSAL_GTS,
                   "ImInfo": PROPOSAL_INFO}
PROPOSAL_LOD = {"RpnRois": [[0, 12, 22]], "GtClasses": [[0, 2, 4]], "IsCrowd": [[0, 2, 4]],
                "GtBoxes": [[0, 2, 4]]}
PROPOSAL_ATTRS = {"batch_size_per_im": 8, "fg_fraction": 0.5, "fg_thresh": 0.5,
                  "bg_thresh_hi": 0.5, "bg_thresh_lo": 0.0, "class_nums": 5,
                  "use_random": False, "bbox_reg_weights": [0.1, 0.1, 0.2, 0.2]}



# --- roi_perspective_transform ------------------------------------------------------------------
def homography(corners, width, height):
    """The 3 x 3 map from the output grid's corners (0, 0), (W-1, 0), (W-1, H-1), (0, H-1)
    to ``corners``, solved as an 8 x 8 linear system."""
    grid = [(0, 0), (width - 1, 0), (width - 1, height - 1), (0, height - 1)]
    rows, rhs = [], []
    for (u, v), (x, y) in zip(grid, corners):
        rows.append([u, v, 1, 0, 0, 0, -u * x, -v * x])
        rows.append([0, 0, 0, u, v, 1, -u * y, -v * y])
        rhs += [x, y]
    return np.append(np.linalg.solve(np.array(rows, "float64"), rhs), 1.0)


def inside_convex(x, y, corners, tol=1e-3):
    signs = []
    for k in range(4):
        (ax, ay), (bx, by) = corners[k], corners[(k + 1) % 4]
        cross = (bx - ax) * (y - ay) - (by - ay) * (x - ax)
        length = math.hypot(bx - ax, by - ay)
        signs.append(cross / length)
    return all(c >= -tol for c in signs) or all(c <= tol for c in signs)


def bilinear(image, x, y):
    h, w = image.shape[1:]
    x, y = max(x, 0.0), max(y, 0.0)
    x0, y0 = min(int(x), w - 1), min(int(y), h - 1)
    x1, y1 = min(x0 + 1, w - 1), min(y0 + 1, h - 1)
    fx, fy = min(x - x0, 1.0) if x0 < w - 1 else 0.0, min(y - y0, 1.0) if y0 < h - 1 else 0.0
    return (image[:, y0, x0] * (1 - fx) * (1 - fy) + image[:, y0, x1] * fx * (1 - fy)
            + image[:, y1, x0] * (1 - fx) * fy + image[:, y1, x1] * fx * fy)


def perspective_ref(i, a, offsets):
    x, rois = i["X"].astype("float64"), i["ROIs"].astype("float64")
    th, tw, scale = a["transformed_height"], a["transformed_width"], a["spatial_scale"]
    height, width = x.shape[2:]
    out = np.zeros((len(rois), x.shape[1], th, tw))
    mask = np.zeros((len(rois), 1, th, tw), "int32")
    matrices = []
    for n, roi in enumerate(rois):
        image = int(np.searchsorted(offsets, n, side="right") - 1)
        corners = [(roi[2 * k] * scale, roi[2 * k + 1] * scale) for k in range(4)]
        side = lambda p, q: math.hypot(p[0] - q[0], p[1] - q[1])  # noqa: E731
        est_h = (side(corners[1], corners[2]) + side(corners[3], corners[0])) / 2
        est_w = (side(corners[0], corners[1]) + side(corners[2], corners[3])) / 2
        norm_h = max(2, th)
        norm_w = max(2, min(int(round(est_w * (norm_h - 1) / est_h)) + 1, tw))
        m = homography(corners, norm_w, norm_h)
        matrices.append(m)
        for oh in range(th):
            for ow in range(tw):
                u, v, s = m.reshape(3, 3) @ [ow, oh, 1]
                px, py = u / s, v / s
                if not inside_convex(px, py, corners):
                    continue
                if px <= -0.5 or py <= -0.5 or px >= width - 0.5 or py >= height - 0.5:
                    continue
                out[n, :, oh, ow] = bilinear(x[image], px, py)
                mask[n, 0, oh, ow] = 1
    return {"Out": out.astype(i["X"].dtype), "Mask": mask,
            "TransformMatrix": np.array(matrices).astype(i["X"].dtype)}


QUADS = np.array([[1, 1, 8, 2, 7, 6, 0, 5],          # a tilted quadrilateral
                  [2.5, 1, 9.5, 1, 11, 8, 1, 8],     # a trapezoid
                  [-1, 3, 6, 2, 7, 12, -2, 11]],     # reaching past the map
                 "float32")
PERSPECTIVE_ATTRS = {"transformed_height": 4, "transformed_width": 6, "spatial_scale": 1.0}


# --- generate_mask_labels --------------------------------------------------------------------
def centre_mask(polys, box, m):
    """Pixels whose centre (c + 0.5, r + 0.5) is inside any polygon scaled into the box."""
    w, h = max(box[2] - box[0], 1), max(box[3] - box[1], 1)
    mask = np.zeros((m, m), "int32")
    for poly in polys:
        pts = np.asarray(poly, "float64").reshape(-1, 2)
        xs, ys = (pts[:, 0] - box[0]) * m / w, (pts[:, 1] - box[1]) * m / h
        for r in range(m):
            for c in range(m):
                inside = False
                for k in range(len(xs)):
                    x0, y0, x1, y1 = xs[k], ys[k], xs[k - 1], ys[k - 1]
                    cy, cx = r + 0.5, c + 0.5
                    if (y0 > cy) != (y1 > cy) and cx < x0 + (cy - y0) * (x1 - x0) / (y1 - y0):
                        inside = not inside
                mask[r, c] |= inside
    return mask


def mask_labels_ref(i, a, roi_lod, gt_lod, segms):
    m, classes_n = a["resolution"], a["num_classes"]
    rois, labels = i["Rois"].astype("float64"), i["LabelsInt32"].reshape(-1)
    out_rois, has, targets, offsets = [], [], [], [0]
    for n in range(len(roi_lod) - 1):
        scale = i["ImInfo"][n][2]
        objs = [g for g in range(gt_lod[n], gt_lod[n + 1])
                if i["GtClasses"][g, 0] > 0 and i["IsCrowd"][g, 0] == 0]
        for r in range(roi_lod[n], roi_lod[n + 1]):
            if labels[r] <= 0:
                continue
            box = rois[r] / scale
            ious = []
            for g in objs:
                pts = np.concatenate(segms[g])
                ious.append(pixel_iou(box, [pts[:, 0].min(), pts[:, 1].min(),
                                            pts[:, 0].max(), pts[:, 1].max()]))
            g = objs[int(np.argmax(ious))]
            row = np.full(classes_n * m * m, -1, "int32")
            row[labels[r] * m * m:(labels[r] + 1) * m * m] = centre_mask(segms[g], box,
                                                                         m).reshape(-1)
            out_rois.append(rois[r])
            has.append(r - roi_lod[n])
            targets.append(row)
        offsets.append(len(out_rois))
    lod = [offsets]
    return {"MaskRois": (np.array(out_rois, "float32"), lod),
            "RoiHasMaskInt32": (np.array(has, "int32").reshape(-1, 1), lod),
            "MaskInt32": (np.array(targets, "int32"), lod)}


# object 0: a square; object 1: a triangle in two polygons (one small square apart);
# object 2 (crowd) and object 3 (image 1) a rectangle
SEGMS = [[np.array([[2.2, 2.3], [9.7, 2.3], [9.7, 9.6], [2.2, 9.6]])],
         [np.array([[12.3, 3.2], [20.6, 3.2], [12.3, 12.7]]),
          np.array([[17.3, 10.2], [19.6, 10.2], [19.6, 12.7], [17.3, 12.7]])],
         [np.array([[0.3, 0.3], [5.6, 0.3], [5.6, 5.6]])],
         [np.array([[4.3, 4.2], [15.8, 4.2], [15.8, 11.7], [4.3, 11.7]])]]
MASK_POINTS = np.concatenate([p for obj in SEGMS for p in obj]).astype("float32")
MASK_SEGM_LOD = [[0, 3, 4], [0, 1, 3, 4, 5], list(np.cumsum(
    [0] + [len(p) for obj in SEGMS for p in obj]))]
MASK_INPUTS = {
    "ImInfo": np.array([[24, 24, 1.0], [32, 32, 2.0]], "float32"),
    "GtClasses": np.array([[1], [2], [1], [3]], "int32"),
    "IsCrowd": np.array([[0], [0], [1], [0]], "int32"),
    "GtSegms": MASK_POINTS,
    "Rois": np.array([[1, 1, 11, 11], [11, 2, 21, 13], [0, 0, 4, 4], [6, 6, 34, 26],
                      [2, 2, 8, 8]], "float32"),
    "LabelsInt32": np.array([[1], [2], [0], [3], [0]], "int32")}
MASK_LOD = {"GtClasses": [[0, 3, 4]], "IsCrowd": [[0, 3, 4]], "GtSegms": MASK_SEGM_LOD,
            "Rois": [[0, 3, 5]], "LabelsInt32": [[0, 3, 5]]}

CASES = [
    OpCase("rpn_target_assign", RPN_INPUTS, lod=ASSIGN_LOD,
           attrs={"rpn_batch_size_per_im": 256, "rpn_fg_fraction": 0.5, "use_random": False,
                  "rpn_straddle_thresh": -1.0},
           ref=lambda i, a: anchor_targets(i, a, GT_LOD, retina=False), name="all_anchors"),
    OpCase("rpn_target_assign", RPN_INPUTS, lod=ASSIGN_LOD,
           attrs={"rpn_batch_size_per_im": 6, "rpn_fg_fraction": 0.5, "use_random": False,
                  "rpn_straddle_thresh": 0.0, "rpn_positive_overlap": 0.5,
                  "rpn_negative_overlap": 0.2},
           ref=lambda i, a: anchor_targets(i, a, GT_LOD, retina=False),
           name="straddle_and_sampling_caps"),
    OpCase("rpn_target_assign", RPN_INPUTS, lod=ASSIGN_LOD,
           attrs={"rpn_batch_size_per_im": 4, "rpn_fg_fraction": 0.5, "use_random": False,
                  "rpn_straddle_thresh": -1.0, "rpn_positive_overlap": 0.9,
                  "rpn_negative_overlap": 0.9},
           ref=lambda i, a: anchor_targets(i, a, GT_LOD, retina=False),
           name="foreground_demoted"),
    OpCase("retinanet_target_assign", RETINA_INPUTS, lod=ASSIGN_LOD,
           ref=lambda i, a: anchor_targets(i, a, GT_LOD, retina=True)),
    OpCase("retinanet_target_assign",
           dict(RETINA_INPUTS, Anchor=ANCHORS.astype("float64"),
                GtBoxes=GT_BOXES.astype("float64"), ImInfo=IM_INFO.astype("float64")),
           lod=ASSIGN_LOD, attrs={"positive_overlap": 0.3, "negative_overlap": 0.1},
           ref=lambda i, a: anchor_targets(i, a, GT_LOD, retina=True), name="float64"),
    OpCase("generate_proposal_labels", PROPOSAL_INPUTS, lod=PROPOSAL_LOD,
           attrs=PROPOSAL_ATTRS,
           ref=lambda i, a: proposal_labels(i, a, [0, 12, 22], [0, 2, 4])),
    OpCase("generate_proposal_labels", PROPOSAL_INPUTS, lod=PROPOSAL_LOD,
           attrs=dict(PROPOSAL_ATTRS, fg_thresh=0.3, bg_thresh_lo=0.05, class_nums=2,
                      is_cls_agnostic=True, bbox_reg_weights=[1.0, 1.0, 1.0, 1.0]),
           ref=lambda i, a: proposal_labels(i, a, [0, 12, 22], [0, 2, 4]),
           name="class_agnostic"),
    OpCase("generate_proposal_labels", PROPOSAL_INPUTS, lod=PROPOSAL_LOD,
           attrs=dict(PROPOSAL_ATTRS, batch_size_per_im=2, is_cascade_rcnn=True),
           ref=lambda i, a: proposal_labels(i, a, [0, 12, 22], [0, 2, 4]),
           name="cascade_takes_all"),
    OpCase("roi_perspective_transform",
           {"X": rng.uniform(-1, 1, (2, 2, 10, 12)).astype("float32"), "ROIs": QUADS},
           lod={"ROIs": [[0, 2, 3]]}, attrs=PERSPECTIVE_ATTRS,
           ref=lambda i, a: perspective_ref(i, a, [0, 2, 3]), atol=1e-4, rtol=1e-4),
    OpCase("roi_perspective_transform",
           {"X": rng.uniform(-1, 1, (1, 1, 12, 14)).astype("float32"), "ROIs": QUADS * 2},
           lod={"ROIs": [[0, 3]]},
           attrs={"transformed_height": 3, "transformed_width": 8, "spatial_scale": 0.5},
           ref=lambda i, a: perspective_ref(i, a, [0, 3]), atol=1e-4, rtol=1e-4,
           name="scaled_narrow_output"),
    OpCase("roi_perspective_transform",
           {"X": rng.uniform(-1, 1, (2, 2, 10, 12)), "ROIs": QUADS},
           lod={"ROIs": [[0, 2, 3]]}, attrs=PERSPECTIVE_ATTRS,
           ref=lambda i, a: perspective_ref(i, a, [0, 2, 3]), grad=["X"],
           grad_outputs=["Out"], atol=1e-4, rtol=1e-4, name="float64_grad"),
    OpCase("generate_mask_labels", MASK_INPUTS, lod=MASK_LOD,
           attrs={"num_classes": 4, "resolution": 8},
           ref=lambda i, a: mask_labels_ref(i, a, [0, 3, 5], [0, 3, 4], SEGMS)),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


def test_rpn_sampling_draws_within_the_caps():
    case = OpCase("rpn_target_assign", RPN_INPUTS, lod=ASSIGN_LOD,
                  attrs={"rpn_batch_size_per_im": 6, "rpn_fg_fraction": 0.5,
                         "use_random": True, "rpn_straddle_thresh": -1.0,
                         "rpn_positive_overlap": 0.3, "rpn_negative_overlap": 0.3})
    result = check_output(case)
    scores = result["ScoreIndex"]
    lod = scores.lod()[0]
    labels = np.asarray(result["TargetLabel"]).reshape(-1)
    for n in range(2):
        image = labels[lod[n]:lod[n + 1]]
        assert len(image) <= 6 and (image == 1).sum() <= 3
    # every sampled index is an anchor of its own image
    index = np.asarray(scores)
    for n in range(2):
        part = index[lod[n]:lod[n + 1]]
        assert ((part >= n * len(ANCHORS)) & (part < (n + 1) * len(ANCHORS))).all()


def test_proposal_sampling_keeps_the_foreground_share():
    case = OpCase("generate_proposal_labels", PROPOSAL_INPUTS, lod=PROPOSAL_LOD,
                  attrs=dict(PROPOSAL_ATTRS, use_random=True, batch_size_per_im=4,
                             fg_fraction=0.25, fg_thresh=0.3))
    result = check_output(case)
    lod = result["Rois"].lod()[0]
    labels = np.asarray(result["LabelsInt32"]).reshape(-1)
    for n in range(2):
        image = labels[lod[n]:lod[n + 1]]
        assert len(image) <= 4 and (image > 0).sum() <= 1
