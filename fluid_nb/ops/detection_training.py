"""Two-stage detector training targets, as Paddle's kernels compute them: which anchors an
RPN or RetinaNet head learns from (``rpn_target_assign``, ``retinanet_target_assign``),
which proposals the second stage samples (``generate_proposal_labels``), their mask targets
(``generate_mask_labels``), and ``roi_perspective_transform`` with its gradient.

Boxes are in pixels, ``[x1, y1, x2, y2]`` with both ends inside the box, so a box is
``x2 - x1 + 1`` wide (Faster R-CNN's convention). A batch of ground truths is a LoD tensor:
one LoD level gives each image's rows; ``ImInfo`` [N, 3] holds each image's
(height, width, scale)."""
import numpy as np

from ..errors import InvalidArgument, expected
from ..tensor.tensor import LoDTensor
from ..tensor.dtypes import VarType
from .detection import host_array
from ..framework.registry import def_op, grad_maker, grads_like, no_gradient

_TIE = 1e-5  # overlaps closer than this are the same overlap


# --- box arithmetic shared by the ops ------------------------------------------------------
def pixel_overlaps(boxes, gts):
    """IoU [len(boxes), len(gts)] of pixel boxes (widths x2 - x1 + 1)."""
    boxes = host_array(boxes, "float64").reshape(-1, 4)
    gts = host_array(gts, "float64").reshape(-1, 4)
    area_b = (boxes[:, 2] - boxes[:, 0] + 1) * (boxes[:, 3] - boxes[:, 1] + 1)
    area_g = (gts[:, 2] - gts[:, 0] + 1) * (gts[:, 3] - gts[:, 1] + 1)
    w = np.minimum(boxes[:, None, 2], gts[None, :, 2]) - \
        np.maximum(boxes[:, None, 0], gts[None, :, 0]) + 1
    h = np.minimum(boxes[:, None, 3], gts[None, :, 3]) - \
        np.maximum(boxes[:, None, 1], gts[None, :, 1]) + 1
    inter = np.maximum(w, 0) * np.maximum(h, 0)
    union = area_b[:, None] + area_g[None, :] - inter
    return np.where(inter == 0, 0.0, inter / np.where(union == 0, 1, union))


def box_to_delta(boxes, gts, weights=None):
    """The regression target of each box towards its ground truth:
    ((gx - bx) / bw, (gy - by) / bh, log(gw / bw), log(gh / bh)), each divided by its
    weight when ``weights`` is given (centres and sizes in pixels)."""
    boxes = host_array(boxes, "float64").reshape(-1, 4)
    gts = host_array(gts, "float64").reshape(-1, 4)
    bw, bh = boxes[:, 2] - boxes[:, 0] + 1, boxes[:, 3] - boxes[:, 1] + 1
    gw, gh = gts[:, 2] - gts[:, 0] + 1, gts[:, 3] - gts[:, 1] + 1
    bx, by = boxes[:, 0] + 0.5 * bw, boxes[:, 1] + 0.5 * bh
    gx, gy = gts[:, 0] + 0.5 * gw, gts[:, 1] + 0.5 * gh
    with np.errstate(divide="ignore", invalid="ignore"):
        delta = np.stack([(gx - bx) / bw, (gy - by) / bh, np.log(gw / bw), np.log(gh / bh)],
                         axis=1)
    if weights is not None:
        delta = delta / host_array(weights, "float64")
    return delta


def reservoir_sample(indices, count, rng, replace_below=None):
    """Keep ``count`` of ``indices``: with ``rng``, reservoir sampling (each later index
    replaces a random kept one, drawn below ``replace_below``, ``count`` by default);
    without, the first ``count``."""
    indices = list(indices)
    if len(indices) <= count:
        return indices
    if rng is not None:
        below = count if replace_below is None else replace_below
        for i in range(count, len(indices)):
            j = int(np.floor(rng.uniform() * i))
            if j < below:
                indices[j], indices[i] = indices[i], indices[j]
    return indices[:count]


def _offsets(tensor, rows, what, op):
    lod = tensor.lod() if isinstance(tensor, LoDTensor) else None
    if not lod:
        raise InvalidArgument(expected(op, f"input '{what}'", "a LoD tensor with 1 level "
                                       "(rows by image)", f"no LoD ({rows} rows)"))
    return list(lod[-1])


def _ragged(parts, width, dtype):
    """Rows of every image, one after another, and the LoD that splits them."""
    offsets = [0]
    for part in parts:
        offsets.append(offsets[-1] + len(part))
    rows = [host_array(p, dtype).reshape(-1, *width) for p in parts]
    array = np.concatenate(rows) if rows else np.zeros((0, *width), dtype)
    return array.astype(dtype), offsets


# --- rpn_target_assign / retinanet_target_assign ------------------------------------------
def label_anchors(overlap, positive, negative, batch_size=-1, fg_fraction=-1.0, rng=None):
    """Faster R-CNN's anchor labels for one image, ``overlap`` [anchors, gts].

    Foreground: each anchor that is some ground truth's best (ties within _TIE) or overlaps
    one by >= ``positive``; background: best overlap < ``negative``, background winning.
    With a positive ``batch_size`` and ``fg_fraction``, at most batch_size * fg_fraction
    foreground and batch_size minus that many background anchors are sampled.

    Returns (fg, bg, located, inside_weight): ``fg``/``bg`` the anchors scored as 1/0 in
    ascending order; ``located`` the anchors given a box target: for each sampled foreground
    anchor that ended as background, the first sampled foreground anchor with weight 0,
    then ``fg`` with weight 1."""
    anchors, gts = overlap.shape
    best = overlap.max(1) if gts else np.zeros(anchors)
    gt_best = overlap.max(0) if anchors else np.zeros(gts)
    is_best = (np.abs(overlap - gt_best[None, :]) < _TIE).any(1) if gts else \
        np.zeros(anchors, bool)
    fg_candidates = [i for i in range(anchors) if is_best[i] or best[i] >= positive]
    sampling = fg_fraction > 0 and batch_size > 0
    if sampling:
        fg_candidates = reservoir_sample(fg_candidates, int(fg_fraction * batch_size), rng)
    label = np.full(anchors, -1)
    label[fg_candidates] = 1
    bg_candidates = [i for i in range(anchors) if best[i] < negative]
    if sampling:
        bg_candidates = reservoir_sample(bg_candidates, batch_size - len(fg_candidates), rng)
    demoted = sum(1 for i in bg_candidates if label[i] == 1)
    label[bg_candidates] = 0
    fg = [i for i in range(anchors) if label[i] == 1]
    bg = [i for i in range(anchors) if label[i] == 0]
    located = [fg_candidates[0]] * demoted + fg
    weight = [0.0] * demoted + [1.0] * len(fg)
    return fg, bg, located, weight


def _inside_anchors(anchors, straddle, height, width):
    """Indices of the anchors inside the image by ``straddle`` pixels (all when < 0)."""
    if straddle < 0:
        return np.arange(len(anchors))
    keep = (anchors[:, 0] >= -straddle) & (anchors[:, 1] >= -straddle) & \
        (anchors[:, 2] < width + straddle) & (anchors[:, 3] < height + straddle)
    return np.nonzero(keep)[0]


def _assign_targets(ctx, op, anchor, gt_boxes, gt_labels, is_crowd, im_info, straddle,
                    positive, negative, batch_size, fg_fraction, rng):
    """The per-image loop both target_assign ops share; returns their outputs."""
    anchors = host_array(anchor.array)
    boxes = host_array(gt_boxes.array).reshape(-1, 4)
    crowd = host_array(is_crowd.array).reshape(-1)
    info = host_array(im_info.array).reshape(-1, 3)
    labels = None if gt_labels is None else host_array(gt_labels.array).reshape(-1)
    gt_lod = _offsets(gt_boxes, len(boxes), "GtBoxes", op)
    crowd_lod = _offsets(is_crowd, len(crowd), "IsCrowd", op)
    label_lod = None if gt_labels is None else _offsets(gt_labels, len(labels), "GtLabels", op)
    dtype = anchors.dtype
    locs, scores, targets, deltas, weights, fg_numbers = [], [], [], [], [], []
    for i in range(len(gt_lod) - 1):
        height, width, scale = info[i]
        inside = _inside_anchors(anchors, straddle, height, width)
        kept = crowd[crowd_lod[i]:crowd_lod[i + 1]] == 0
        gts = boxes[gt_lod[i]:gt_lod[i + 1]][kept].astype("float64") * scale
        overlap = pixel_overlaps(anchors[inside], gts)
        fg, bg, located, weight = label_anchors(overlap, positive, negative, batch_size,
                                                fg_fraction, rng)
        matched = overlap.argmax(1) if len(gts) else np.zeros(len(inside), int)
        offset = i * len(anchors)
        loc = inside[located]
        locs.append(loc + offset)
        scores.append(inside[fg + bg] + offset)
        if labels is None:
            target = [1] * len(fg)
        else:
            image_labels = labels[label_lod[i]:label_lod[i + 1]][kept]
            target = [int(image_labels[matched[a]]) for a in fg]
        targets.append(target + [0] * len(bg))
        deltas.append(box_to_delta(anchors[loc], gts[matched[located]]) if len(loc)
                      else np.zeros((0, 4)))
        weights.append(np.repeat(host_array(weight, "float64")[:, None], 4, 1))
        fg_numbers.append([len(located) + 1])
    xp = ctx.xp

    def out(parts, width, dt):
        array, offsets = _ragged(parts, width, dt)
        return LoDTensor(xp.asarray(array), [offsets])
    return (out(locs, (), "int32"), out(scores, (), "int32"), out(targets, (1,), "int32"),
            out(deltas, (4,), dtype), out(weights, (4,), dtype), out(fg_numbers, (1,), "int32"))


def _assign_infer(ctx, fg_number=False):
    for slot in ("Anchor", "GtBoxes", "ImInfo") + (("GtLabels",) if fg_number else ()):
        shape = ctx.input_shape(slot)
        ctx.check(len(shape) == 2, f"input '{slot}' rank", 2, len(shape))
    dtype = ctx.input_dtype("Anchor")
    ctx.set_output("LocationIndex", (-1,), VarType.INT32, lod_level=1)
    ctx.set_output("ScoreIndex", (-1,), VarType.INT32, lod_level=1)
    ctx.set_output("TargetLabel", (-1, 1), VarType.INT32, lod_level=1)
    ctx.set_output("TargetBBox", (-1, 4), dtype, lod_level=1)
    ctx.set_output("BBoxInsideWeight", (-1, 4), dtype, lod_level=1)
    if fg_number:
        ctx.set_output("ForegroundNumber", (-1, 1), VarType.INT32, lod_level=1)


def _rpn_target_assign(ctx, anchor, gt_boxes, is_crowd, im_info):
    a = ctx.attrs
    rng = ctx.random_state(seed_attr=None) if a["use_random"] else None
    return _assign_targets(ctx, "rpn_target_assign", anchor, gt_boxes, None, is_crowd,
                           im_info, a["rpn_straddle_thresh"], a["rpn_positive_overlap"],
                           a["rpn_negative_overlap"], a["rpn_batch_size_per_im"],
                           a["rpn_fg_fraction"], rng)[:5]


def_op("rpn_target_assign", inputs=["Anchor", "GtBoxes", "IsCrowd", "ImInfo"],
       outputs=["LocationIndex", "ScoreIndex", "TargetLabel", "TargetBBox",
                "BBoxInsideWeight"],
       attrs={"rpn_batch_size_per_im": ("int", 256), "rpn_straddle_thresh": ("float", 0.0),
              "rpn_positive_overlap": ("float", 0.7), "rpn_negative_overlap": ("float", 0.3),
              "rpn_fg_fraction": ("float", 0.25), "use_random": ("bool", True)},
       infer_shape=_assign_infer, grad=no_gradient, kernel=_rpn_target_assign,
       host_reads=("Anchor, GtBoxes, IsCrowd, ImInfo: sampled anchors (data-dependent counts) per"
                   " image on the host"),
       lod_aware=True, traits={"runtime_outputs", "stateful"},  # (use_random draws)
       doc="Per image: anchors inside the image (by rpn_straddle_thresh, none dropped when "
           "< 0) against its non-crowd GtBoxes scaled by ImInfo's scale (pixel IoU); "
           "foreground = a ground truth's best anchor or IoU >= rpn_positive_overlap, "
           "background = best IoU < rpn_negative_overlap; at most rpn_batch_size_per_im * "
           "rpn_fg_fraction foreground and the rest of rpn_batch_size_per_im background "
           "(reservoir sampling when use_random, else the first). ScoreIndex = foreground "
           "then background anchors, TargetLabel 1 then 0; LocationIndex the foreground "
           "anchors with TargetBBox = their deltas to the best ground truth, "
           "BBoxInsideWeight 1 (0 for a sampled foreground demoted to background). Indices "
           "count anchors over the batch (image i adds i * anchors); one LoD level by image.")


def _retinanet_target_assign(ctx, anchor, gt_boxes, gt_labels, is_crowd, im_info):
    a = ctx.attrs
    return _assign_targets(ctx, "retinanet_target_assign", anchor, gt_boxes, gt_labels,
                           is_crowd, im_info, -1.0, a["positive_overlap"],
                           a["negative_overlap"], -1, -1.0, None)


def_op("retinanet_target_assign",
       inputs=["Anchor", "GtBoxes", "GtLabels", "IsCrowd", "ImInfo"],
       outputs=["LocationIndex", "ScoreIndex", "TargetLabel", "TargetBBox",
                "BBoxInsideWeight", "ForegroundNumber"],
       attrs={"positive_overlap": ("float", 0.5), "negative_overlap": ("float", 0.4)},
       infer_shape=lambda ctx: _assign_infer(ctx, fg_number=True), grad=no_gradient,
       kernel=_retinanet_target_assign,
       host_reads=("Anchor, GtBoxes, GtLabels, IsCrowd, ImInfo: assigned anchors "
                   "(data-dependent counts) per image on the host"),
       lod_aware=True, traits={"runtime_outputs"},
       doc="rpn_target_assign's labelling over every anchor, no sampling, thresholds "
           "positive_overlap and negative_overlap: TargetLabel is the class (GtLabels) of "
           "each foreground anchor's best ground truth, 0 for background; "
           "ForegroundNumber [N, 1] = (located anchors + 1) per image.")


# --- generate_proposal_labels -----------------------------------------------------------
def sample_proposals(overlap, crowd, a, rng, boxes):
    """Foreground/background proposals of one image (rows of ``overlap``: ground truths
    first, then proposals). Returns (fg rows, bg rows, gt of each fg row)."""
    fg, bg, fg_gt = [], [], []
    for i in range(len(overlap)):
        best = overlap[i].max() if overlap.shape[1] else 0.0
        if i < len(crowd) and crowd[i]:
            best = -1.0
        if a["is_cascade_rcnn"] and (boxes[i, 2] - boxes[i, 0] + 1 <= 0
                                     or boxes[i, 3] - boxes[i, 1] + 1 <= 0):
            continue
        if best >= a["fg_thresh"]:
            fg.append(i)
            fg_gt.append(int(np.nonzero(np.abs(overlap[i] - best) < _TIE)[0][0]))
        elif a["bg_thresh_lo"] <= best < a["bg_thresh_hi"]:
            bg.append(i)
    if a["is_cascade_rcnn"]:
        return fg, bg, fg_gt
    fg_count = min(int(np.floor(a["batch_size_per_im"] * a["fg_fraction"])), len(fg))
    if rng is not None and len(fg) > fg_count:
        pairs = reservoir_sample(list(zip(fg, fg_gt)), fg_count, rng)
        fg, fg_gt = [p[0] for p in pairs], [p[1] for p in pairs]
    fg, fg_gt = fg[:fg_count], fg_gt[:fg_count]
    bg_count = min(a["batch_size_per_im"] - fg_count, len(bg))
    # Paddle draws the background replacements below the foreground count, not the
    # background one; the same here, so the sampled sets follow the same distribution
    bg = reservoir_sample(bg, bg_count, rng, replace_below=fg_count)
    return fg, bg, fg_gt


def _proposal_labels_one(rois, classes, crowd, gts, info, a, rng):
    scale = float(info[2])
    if a["is_cascade_rcnn"]:
        # a cascade stage's RpnRois already begin with the ground truths (in image
        # scale): they keep their scale and nothing is prepended
        boxes = rois.astype("float64")
        boxes[len(gts):] /= scale
    else:
        boxes = np.concatenate([gts.astype("float64"), rois.astype("float64") / scale])
    overlap = pixel_overlaps(boxes, gts)
    fg, bg, fg_gt = sample_proposals(overlap, crowd, a, rng, boxes)
    picked = boxes[fg + bg]
    labels = np.concatenate([classes[fg_gt], np.zeros(len(bg), classes.dtype)]).astype("int32")
    width = 4 * a["class_nums"]
    targets = np.zeros((len(picked), width))
    weights = np.zeros((len(picked), width))
    if fg:
        delta = box_to_delta(picked[:len(fg)], gts[fg_gt], a["bbox_reg_weights"])
        for row, label in enumerate(labels[:len(fg)]):
            column = 4 * (1 if a["is_cls_agnostic"] else int(label))
            if label > 0:
                targets[row, column:column + 4] = delta[row]
                weights[row, column:column + 4] = 1.0
    return picked * scale, labels, targets, weights


def _generate_proposal_labels(ctx, rpn_rois, gt_classes, is_crowd, gt_boxes, im_info):
    a, op = ctx.attrs, "generate_proposal_labels"
    rois = host_array(rpn_rois.array).reshape(-1, 4)
    classes = host_array(gt_classes.array).reshape(-1)
    crowd = host_array(is_crowd.array).reshape(-1)
    boxes = host_array(gt_boxes.array).reshape(-1, 4)
    info = host_array(im_info.array).reshape(-1, 3)
    roi_lod = _offsets(rpn_rois, len(rois), "RpnRois", op)
    class_lod = _offsets(gt_classes, len(classes), "GtClasses", op)
    crowd_lod = _offsets(is_crowd, len(crowd), "IsCrowd", op)
    box_lod = _offsets(gt_boxes, len(boxes), "GtBoxes", op)
    rng = ctx.random_state(seed_attr=None) if a["use_random"] else None
    results = []
    for i in range(len(roi_lod) - 1):
        if roi_lod[i] == roi_lod[i + 1]:
            results.append(None)
            continue
        results.append(_proposal_labels_one(
            rois[roi_lod[i]:roi_lod[i + 1]], classes[class_lod[i]:class_lod[i + 1]],
            crowd[crowd_lod[i]:crowd_lod[i + 1]], boxes[box_lod[i]:box_lod[i + 1]],
            info[i], a, rng))
    dtype, width = rois.dtype, 4 * a["class_nums"]
    empty = (np.zeros((0, 4)), np.zeros(0, "int32"), np.zeros((0, width)),
             np.zeros((0, width)))
    results = [r if r is not None else empty for r in results]
    xp = ctx.xp

    def out(k, shape, dt):
        array, offsets = _ragged([r[k] for r in results], shape, dt)
        return LoDTensor(xp.asarray(array), [offsets])
    return (out(0, (4,), dtype), out(1, (1,), "int32"), out(2, (width,), dtype),
            out(3, (width,), dtype), out(3, (width,), dtype))


def _proposal_labels_infer(ctx):
    for slot in ("RpnRois", "GtBoxes", "ImInfo"):
        shape = ctx.input_shape(slot)
        ctx.check(len(shape) == 2, f"input '{slot}' rank", 2, len(shape))
    dtype, width = ctx.input_dtype("RpnRois"), 4 * ctx.attr("class_nums")
    ctx.set_output("Rois", (-1, 4), dtype, lod_level=1)
    ctx.set_output("LabelsInt32", (-1, 1), VarType.INT32, lod_level=1)
    for slot in ("BboxTargets", "BboxInsideWeights", "BboxOutsideWeights"):
        ctx.set_output(slot, (-1, width), dtype, lod_level=1)


def_op("generate_proposal_labels",
       inputs=["RpnRois", "GtClasses", "IsCrowd", "GtBoxes", "ImInfo"],
       outputs=["Rois", "LabelsInt32", "BboxTargets", "BboxInsideWeights",
                "BboxOutsideWeights"],
       attrs={"batch_size_per_im": ("int", 256), "fg_fraction": ("float", 0.25),
              "fg_thresh": ("float", 0.25), "bg_thresh_hi": ("float", 0.5),
              "bg_thresh_lo": ("float", 0.0),
              "bbox_reg_weights": ("floats", [0.1, 0.1, 0.2, 0.2]),
              "class_nums": ("int", 1), "use_random": ("bool", True),
              "is_cls_agnostic": ("bool", False), "is_cascade_rcnn": ("bool", False)},
       infer_shape=_proposal_labels_infer, grad=no_gradient,
       kernel=_generate_proposal_labels,
       host_reads=("RpnRois, GtClasses, IsCrowd, GtBoxes, ImInfo: sampled RoIs "
                   "(data-dependent counts) per image on the host"),
       lod_aware=True, traits={"runtime_outputs", "stateful"},  # (use_random draws)
       doc="Per image: the candidates are its GtBoxes then its RpnRois / scale (with "
           "is_cascade_rcnn: its RpnRois alone, whose first rows, the ground truths, keep "
           "their scale); a crowd "
           "ground truth is never picked; foreground = best pixel IoU >= fg_thresh (its "
           "ground truth the first best), background = bg_thresh_lo <= IoU < bg_thresh_hi; "
           "at most floor(batch_size_per_im * fg_fraction) foreground, the rest of "
           "batch_size_per_im background (reservoir sampling when use_random; with "
           "is_cascade_rcnn, no sampling and boxes of no size dropped). Rois = picked * "
           "scale, LabelsInt32 the ground truth's class (0 for background); BboxTargets "
           "[P, 4 * class_nums] holds the deltas / bbox_reg_weights in the label's four "
           "columns (column group 1 when is_cls_agnostic), the weights 1 there.")


# --- roi_perspective_transform -------------------------------------------------------------
_NEAR = 1e-4  # coordinates this close count as equal


def _at_least(a, b):
    return a > b or abs(a - b) < _NEAR


def _on_or_inside(x, y, qx, qy):
    """Whether (x, y) lies in the quadrilateral (qx, qy): on an edge, or inside by the
    crossing count of a ray to the right."""
    edges = [(qx[k], qy[k], qx[(k + 1) % 4], qy[(k + 1) % 4]) for k in range(4)]
    for xs, ys, xe, ye in edges:
        if abs(ys - ye) < _NEAR:
            if abs(y - ys) < _NEAR and abs(y - ye) < _NEAR and \
                    _at_least(x, min(xs, xe)) and _at_least(max(xs, xe), x):
                return True
        elif abs((y - ys) * (xe - xs) / (ye - ys) + xs - x) < _NEAR and \
                _at_least(y, min(ys, ye)) and _at_least(max(ys, ye), y):
            return True
    crossings = 0
    for xs, ys, xe, ye in edges:
        if abs(ys - ye) < _NEAR or _at_least(min(ys, ye), y) or y - max(ys, ye) > _NEAR:
            continue
        cross = (y - ys) * (xe - xs) / (ye - ys) + xs
        if abs(cross - x) < _NEAR:
            return True
        if cross - x > _NEAR:
            crossings += 1
    return crossings % 2 == 1


def perspective_matrix(qx, qy, height, width):
    """The 3 x 3 homography (row-major, last entry 1) taking output pixel (w, h, 1) to the
    quadrilateral: corner 0 at (0, 0), 1 at (W' - 1, 0), 2 at (W' - 1, H' - 1), 3 at
    (0, H' - 1), with H' = max(2, height) and W' the quad's aspect ratio at that height,
    within [2, width]."""
    x0, x1, x2, x3 = qx
    y0, y1, y2, y3 = qy
    side = lambda ax, ay, bx, by: np.sqrt((ax - bx) ** 2 + (ay - by) ** 2)  # noqa: E731
    est_h = (side(x1, y1, x2, y2) + side(x3, y3, x0, y0)) / 2
    est_w = (side(x0, y0, x1, y1) + side(x2, y2, x3, y3)) / 2
    norm_h = max(2, height)
    norm_w = max(2, min(int(np.round(est_w * (norm_h - 1) / est_h)) + 1, width))
    dx1, dx2, dx3 = x1 - x2, x3 - x2, x0 - x1 + x2 - x3
    dy1, dy2, dy3 = y1 - y2, y3 - y2, y0 - y1 + y2 - y3
    det = dx1 * dy2 - dx2 * dy1 + 1e-5
    m = np.zeros(9)
    m[6] = (dx3 * dy2 - dx2 * dy3) / det / (norm_w - 1)
    m[7] = (dx1 * dy3 - dx3 * dy1) / det / (norm_h - 1)
    m[8] = 1
    m[3] = (y1 - y0 + m[6] * (norm_w - 1) * y1) / (norm_w - 1)
    m[4] = (y3 - y0 + m[7] * (norm_h - 1) * y3) / (norm_h - 1)
    m[5] = y0
    m[0] = (x1 - x0 + m[6] * (norm_w - 1) * x1) / (norm_w - 1)
    m[1] = (x3 - x0 + m[7] * (norm_h - 1) * x3) / (norm_h - 1)
    m[2] = x0
    return m


def _bilinear_taps(x, y, height, width):
    """The four (row, column, weight) taps of bilinear sampling at (x, y); a point within
    half a pixel outside is clamped to the border."""
    x = 0.0 if _at_least(0, x) else x
    y = 0.0 if _at_least(0, y) else y
    xf, yf = int(np.floor(x)), int(np.floor(y))
    if _at_least(xf, width - 1):
        xf = xc = width - 1
        x = float(xf)
    else:
        xc = xf + 1
    if _at_least(yf, height - 1):
        yf = yc = height - 1
        y = float(yf)
    else:
        yc = yf + 1
    ax, ay = x - xf, y - yf
    return [(yf, xf, (1 - ax) * (1 - ay)), (yc, xf, (1 - ax) * ay), (yc, xc, ax * ay),
            (yf, xc, ax * (1 - ay))]


def _perspective_taps(rois, image_of, attrs, height, width):
    """Per RoI: its matrix, and per output pixel inside the quad and the feature map, the
    bilinear taps [(roi, out_h, out_w, image, row, column, weight)]."""
    th, tw, scale = attrs["transformed_height"], attrs["transformed_width"], \
        attrs["spatial_scale"]
    matrices, taps = [], []
    for n, roi in enumerate(host_array(rois, "float64").reshape(-1, 8)):
        qx, qy = roi[0::2] * scale, roi[1::2] * scale
        m = perspective_matrix(qx, qy, th, tw)
        matrices.append(m)
        for oh in range(th):
            for ow in range(tw):
                u, v, w = m[0:3] @ (ow, oh, 1), m[3:6] @ (ow, oh, 1), m[6:9] @ (ow, oh, 1)
                x, y = u / w, v / w
                if not _on_or_inside(x, y, qx, qy) or _at_least(-0.5, x) or \
                        _at_least(x, width - 0.5) or _at_least(-0.5, y) or \
                        _at_least(y, height - 0.5):
                    continue
                for row, col, weight in _bilinear_taps(x, y, height, width):
                    taps.append((n, oh, ow, image_of[n], row, col, weight))
    return host_array(matrices).reshape(-1, 9), taps


def _image_of_rois(rois, count):
    lod = rois.lod() if isinstance(rois, LoDTensor) else None
    offsets = list(lod[-1]) if lod else [0, count]
    return np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))


def _roi_perspective_transform(ctx, x, rois):
    a = ctx.attrs
    values = host_array(x.array)
    boxes = host_array(rois.array)
    _, channels, height, width = values.shape
    th, tw = a["transformed_height"], a["transformed_width"]
    matrices, taps = _perspective_taps(boxes, _image_of_rois(rois, len(boxes)), a, height,
                                       width)
    out = np.zeros((len(boxes), channels, th, tw), "float64")
    mask = np.zeros((len(boxes), 1, th, tw), "int32")
    for n, oh, ow, image, row, col, weight in taps:
        out[n, :, oh, ow] += weight * values[image, :, row, col]
        mask[n, 0, oh, ow] = 1
    xp = ctx.xp
    return (LoDTensor(xp.asarray(out.astype(values.dtype)), rois.lod()),
            LoDTensor(xp.asarray(mask)),
            LoDTensor(xp.asarray(matrices.astype(values.dtype))), None, None)


def _roi_perspective_transform_grad(ctx, x, rois, out_grad):
    values = host_array(x.array)
    boxes = host_array(rois.array)
    dout = host_array(out_grad.array, "float64")
    _, _, height, width = values.shape
    _, taps = _perspective_taps(boxes, _image_of_rois(rois, len(boxes)), ctx.attrs, height,
                                width)
    dx = np.zeros(values.shape, "float64")
    for n, oh, ow, image, row, col, weight in taps:
        dx[image, :, row, col] += weight * dout[n, :, oh, ow]
    return LoDTensor(ctx.xp.asarray(dx.astype(values.dtype)))


def _perspective_infer(ctx):
    x, rois = ctx.input_shape("X"), ctx.input_shape("ROIs")
    ctx.check(len(x) == 4, "input 'X' rank", "4 (NCHW)", len(x))
    ctx.check(len(rois) == 2 and rois[1] == 8, "input 'ROIs' shape",
              "[rois, 8] (four corners x, y)", list(rois))
    th, tw = ctx.attr("transformed_height"), ctx.attr("transformed_width")
    dtype = ctx.input_dtype("X")
    ctx.set_output("Out", (rois[0], x[1], th, tw), dtype)
    ctx.set_output("Mask", (rois[0], 1, th, tw), VarType.INT32)
    ctx.set_output("TransformMatrix", (rois[0], 9), dtype)
    ctx.share_lod("ROIs", "Out")


def _positive(what):
    return lambda v: None if v > 0 else f"{what} > 0"


def_op("roi_perspective_transform", inputs=["X", "ROIs"],
       outputs=["Out", "Mask", "TransformMatrix", "Out2InIdx!", "Out2InWeights!"],
       attrs={"spatial_scale": ("float", 1.0, _positive("a scale")),
              "transformed_height": ("int", 1, _positive("a height")),
              "transformed_width": ("int", 1, _positive("a width"))},
       infer_shape=_perspective_infer,
       grad=grad_maker("roi_perspective_transform_grad", inputs=["X", "ROIs"]),
       kernel=_roi_perspective_transform,
       host_reads=("ROIs: each ROI's perspective taps come from its corners on the host"),
       lod_aware=True,
       doc="Each RoI (x0, y0, ..., x3, y3: top left, top right, bottom right, bottom left, "
           "times spatial_scale) warped onto a transformed_height x transformed_width grid: "
           "output pixel (w, h) samples X of the RoI's image (ROIs' LoD) bilinearly at "
           "(u / s, v / s), (u, v, s) = TransformMatrix (w, h, 1); pixels falling outside "
           "the quad or the map are 0 with Mask 0. Out [R, C, H, W], Mask [R, 1, H, W], "
           "TransformMatrix [R, 9].")

def_op("roi_perspective_transform_grad", inputs=["X", "ROIs", "Out@GRAD"],
       outputs=["X@GRAD"],
       attrs={"spatial_scale": ("float", 1.0), "transformed_height": ("int", 1),
              "transformed_width": ("int", 1)},
       infer_shape=grads_like(**{"X@GRAD": "X"}), kernel=_roi_perspective_transform_grad,
       host_reads="ROIs: each ROI's perspective taps come from its corners on the host",
       lod_aware=True,
       doc="X@GRAD: each output pixel's gradient added back to its four bilinear taps with "
           "their weights.")


# --- generate_mask_labels ---------------------------------------------------------------------
_SUPERSAMPLE = 5  # polygon vertices are rounded on a grid this many times finer than pixels


def _edge_points(x, y):
    """The supersampled points along each closed-polygon edge, stepping along its longer
    axis (always in increasing order, so both directions round alike)."""
    u, v = [], []
    for j in range(len(x) - 1):
        xs, xe, ys, ye = x[j], x[j + 1], y[j], y[j + 1]
        dx, dy = abs(xe - xs), abs(ys - ye)
        flip = (dx >= dy and xs > xe) or (dx < dy and ys > ye)
        if flip:
            xs, xe, ys, ye = xe, xs, ye, ys
        if dx >= dy:
            slope = (ye - ys) / dx if dx else 0.0
            for d in range(dx + 1):
                t = dx - d if flip else d
                u.append(t + xs)
                v.append(int(ys + slope * t + .5))
        else:
            slope = (xe - xs) / dy
            for d in range(dy + 1):
                t = dy - d if flip else d
                v.append(t + ys)
                u.append(int(xs + slope * t + .5))
    return u, v


def polygon_mask(xy, height, width):
    """A polygon (x, y pairs; pixel (c, r) spans [c, c + 1) x [r, r + 1)) rasterised into
    a uint8 [height, width] mask as COCO's API does, a pixel set when its centre is inside:
    edges traced on a 5x finer grid, each pixel column
    entered or left where an edge crosses it, then the column runs filled alternately."""
    xy = host_array(xy, "float64").reshape(-1, 2)
    x = [int(_SUPERSAMPLE * p + .5) for p in xy[:, 0]]
    y = [int(_SUPERSAMPLE * p + .5) for p in xy[:, 1]]
    u, v = _edge_points(x + x[:1], y + y[:1])
    starts = []
    for j in range(1, len(u)):
        if u[j] == u[j - 1]:
            continue
        column = u[j] if u[j] < u[j - 1] else u[j] - 1
        column = (column + .5) / _SUPERSAMPLE - .5
        if np.floor(column) != column or column < 0 or column > width - 1:
            continue
        row = (min(v[j], v[j - 1]) + .5) / _SUPERSAMPLE - .5
        row = float(np.ceil(min(max(row, 0.0), float(height))))
        starts.append(int(column) * height + int(row))
    bounds = sorted(starts) + [height * width]
    runs, previous = [], 0
    for b in bounds:
        runs.append(b - previous)
        previous = b
    merged = [runs[0]]  # an empty run joins its neighbours
    j = 1
    while j < len(runs):
        if runs[j] > 0:
            merged.append(runs[j])
            j += 1
        else:
            j += 1
            if j < len(runs):
                merged[-1] += runs[j]
                j += 1
    flat = np.concatenate([np.full(n, k % 2, "uint8") for k, n in enumerate(merged)])
    return flat[:height * width].reshape(width, height).T


def _polygons_mask(polygons, box, resolution):
    """The union of ``polygons`` rasterised in ``box`` scaled to resolution x resolution."""
    f32 = np.float32
    w = max(f32(box[2]) - f32(box[0]), f32(1))
    h = max(f32(box[3]) - f32(box[1]), f32(1))
    mask = np.zeros((resolution, resolution), "uint8")
    for poly in polygons:
        pts = host_array(poly, "float32").reshape(-1, 2)
        scaled = np.stack([(pts[:, 0] - f32(box[0])) * f32(resolution) / w,
                           (pts[:, 1] - f32(box[1])) * f32(resolution) / h], 1)
        mask |= polygon_mask(scaled.astype("float64"), resolution, resolution)
    return mask


def _polygon_boxes(objects):
    """Each object's box around all its polygons' points."""
    tiny = float(np.finfo("float32").tiny)  # the initial maximum, as Paddle starts it
    boxes = []
    for polys in objects:
        pts = np.concatenate([host_array(p, "float32").reshape(-1, 2) for p in polys])
        boxes.append([min(pts[:, 0].min(), np.finfo("float32").max), min(pts[:, 1].min(),
                      np.finfo("float32").max), max(pts[:, 0].max(), tiny),
                      max(pts[:, 1].max(), tiny)])
    return host_array(boxes, "float32").reshape(-1, 4)


def _mask_targets_one(rois, labels, classes, crowd, objects, scale, a):
    """(mask rois, their row in the image's rois, targets [P, classes * M * M])."""
    m = a["resolution"]
    keep = [g for g in range(len(classes)) if classes[g] > 0 and crowd[g] == 0]
    polys = [objects[g] for g in keep]
    fg = [r for r in range(len(rois)) if labels[r] > 0]
    f32 = np.float32
    targets = np.full((max(len(fg), 1), a["num_classes"] * m * m), -1, "int32")
    if fg:
        picked = rois[fg].astype("float32") / f32(scale)
        overlap = pixel_overlaps(picked, _polygon_boxes(polys))
        for row, r in enumerate(fg):
            best = int(np.argmax(overlap[row])) if overlap.shape[1] and \
                overlap[row].max() > 0 else 0
            mask = _polygons_mask(polys[best], picked[row], m)
            label = int(labels[r])
            targets[row, label * m * m:(label + 1) * m * m] = mask.reshape(-1)
        return picked * f32(scale), fg, targets
    # no foreground: the first background row stands in with class 0 and no target
    background = [r for r in range(len(rois)) if labels[r] == 0][:1]
    stand_in = rois[:1].astype("float32") / f32(scale) * f32(scale)
    return stand_in, background, targets


def _generate_mask_labels(ctx, im_info, gt_classes, is_crowd, gt_segms, rois, labels_int32):
    a, op = ctx.attrs, "generate_mask_labels"
    info = host_array(im_info.array).reshape(-1, 3)
    classes = host_array(gt_classes.array).reshape(-1)
    crowd = host_array(is_crowd.array).reshape(-1)
    points = host_array(gt_segms.array).reshape(-1, 2)
    boxes = host_array(rois.array).reshape(-1, 4)
    labels = host_array(labels_int32.array).reshape(-1)
    segm_lod = gt_segms.lod() if isinstance(gt_segms, LoDTensor) else None
    if not segm_lod or len(segm_lod) != 3:
        raise InvalidArgument(expected(op, "input 'GtSegms' LoD", "3 levels (objects by "
                                       "image, polygons by object, points by polygon)",
                                       f"{len(segm_lod or [])} levels"))
    class_lod = _offsets(gt_classes, len(classes), "GtClasses", op)
    crowd_lod = _offsets(is_crowd, len(crowd), "IsCrowd", op)
    roi_lod = _offsets(rois, len(boxes), "Rois", op)
    label_lod = _offsets(labels_int32, len(labels), "LabelsInt32", op)
    objects_lod, polys_lod, points_lod = segm_lod

    def object_polygons(g):
        return [points[points_lod[p]:points_lod[p + 1]]
                for p in range(polys_lod[g], polys_lod[g + 1])]
    parts = []
    for i in range(len(class_lod) - 1):
        if roi_lod[i] == roi_lod[i + 1]:
            continue
        objects = [object_polygons(g) for g in range(objects_lod[i], objects_lod[i + 1])]
        parts.append(_mask_targets_one(
            boxes[roi_lod[i]:roi_lod[i + 1]], labels[label_lod[i]:label_lod[i + 1]],
            classes[class_lod[i]:class_lod[i + 1]], crowd[crowd_lod[i]:crowd_lod[i + 1]],
            objects, info[i][2], a))
    # images with rois add their masks; those without keep the offset where it is
    k, counts = 0, []
    for i in range(len(class_lod) - 1):
        counts.append(len(parts[k][1]) if roi_lod[i] != roi_lod[i + 1] else 0)
        k += roi_lod[i] != roi_lod[i + 1]
    offsets = list(np.cumsum([0] + counts))
    width = a["num_classes"] * a["resolution"] ** 2
    mask_rois = np.concatenate([p[0] for p in parts]) if parts else np.zeros((0, 4))
    has_mask = np.concatenate([host_array(p[1], "int32") for p in parts]) if parts else \
        np.zeros(0, "int32")
    targets = np.concatenate([p[2][:len(p[1])] for p in parts]) if parts else \
        np.zeros((0, width), "int32")
    xp, lod = ctx.xp, [[int(o) for o in offsets]]
    return (LoDTensor(xp.asarray(mask_rois.astype(boxes.dtype).reshape(-1, 4)), lod),
            LoDTensor(xp.asarray(has_mask.reshape(-1, 1)), lod),
            LoDTensor(xp.asarray(targets.reshape(-1, width)), lod))


def _mask_labels_infer(ctx):
    width = ctx.attr("num_classes") * ctx.attr("resolution") ** 2
    ctx.set_output("MaskRois", (-1, 4), ctx.input_dtype("Rois"), lod_level=1)
    ctx.set_output("RoiHasMaskInt32", (-1, 1), VarType.INT32, lod_level=1)
    ctx.set_output("MaskInt32", (-1, width), VarType.INT32, lod_level=1)


def_op("generate_mask_labels",
       inputs=["ImInfo", "GtClasses", "IsCrowd", "GtSegms", "Rois", "LabelsInt32"],
       outputs=["MaskRois", "RoiHasMaskInt32", "MaskInt32"],
       attrs={"num_classes": ("int", 1), "resolution": ("int", 14)},
       infer_shape=_mask_labels_infer, grad=no_gradient, kernel=_generate_mask_labels,
       host_reads=("ImInfo, GtClasses, IsCrowd, GtSegms, Rois, LabelsInt32: polygons rasterised "
                   "per RoI on the host (data-dependent counts)"),
       lod_aware=True, traits={"runtime_outputs"},
       doc="Per image: each foreground RoI (LabelsInt32 > 0) takes the non-crowd object "
           "whose polygons' box overlaps it most (pixel IoU, RoIs / scale); its polygons "
           "(GtSegms: LoD objects by image, polygons by object, points by polygon) are "
           "rasterised COCO-style in the RoI at resolution x resolution. MaskRois the "
           "foreground RoIs, RoiHasMaskInt32 their rows within the image, MaskInt32 [P, "
           "num_classes * resolution^2] -1 except the label's block. With no foreground, "
           "the image's first RoI stands in for its first background row with all -1.")
