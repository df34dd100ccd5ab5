"""Detection heads' ops: dense prior boxes (``density_prior_box``), Faster R-CNN anchors
(``anchor_generator``), EAST's geometry maps (``polygon_box_transform``), per-class box
decoding with assignment (``box_decoder_and_assign``), and the other suppressions: SOLOv2's
``matrix_nms``, EAST's ``locality_aware_nms`` and RetinaNet's
``retinanet_detection_output``. None has a gradient."""
import numpy as np

from ..errors import InvalidArgument, expected
from ..tensor.tensor import LoDTensor
from ..tensor.dtypes import VarType
from .detection import dtype_of, host_array, iou_matrix, nms
from ..framework.registry import def_op, no_gradient


# --- density_prior_box -------------------------------------------------------------------------
def _density_count(attrs):
    return sum(d * d for d in attrs["densities"]) * len(attrs["fixed_ratios"])


def _density_prior_box(ctx, feature, image):
    a = ctx.attrs
    fh, fw = feature.shape[2:]
    ih, iw = image.shape[2:]
    step_w = a["step_w"] or iw / fw
    step_h = a["step_h"] or ih / fh
    step_average = int((step_w + step_h) * 0.5)
    boxes = np.empty((fh, fw, _density_count(a), 4))
    for h in range(fh):
        for w in range(fw):
            cx, cy = (w + a["offset"]) * step_w, (h + a["offset"]) * step_h
            k = 0
            for size, density in zip(a["fixed_sizes"], a["densities"]):
                shift = step_average // density  # whole pixels, as Paddle counts them
                for ratio in a["fixed_ratios"]:
                    half_w, half_h = size * np.sqrt(ratio) / 2, size / np.sqrt(ratio) / 2
                    first_x = cx - step_average / 2.0 + shift / 2.0
                    first_y = cy - step_average / 2.0 + shift / 2.0
                    for di in range(density):
                        for dj in range(density):
                            x, y = first_x + dj * shift, first_y + di * shift
                            boxes[h, w, k] = [max((x - half_w) / iw, 0), max((y - half_h) / ih, 0),
                                              min((x + half_w) / iw, 1), min((y + half_h) / ih, 1)]
                            k += 1
    if a["clip"]:
        boxes = boxes.clip(0, 1)
    variances = np.broadcast_to(np.array(a["variances"], "float64"), boxes.shape)
    if a["flatten_to_2d"]:
        boxes, variances = boxes.reshape(-1, 4), variances.reshape(-1, 4)
    dtype = dtype_of(feature)
    return ctx.xp.asarray(boxes.astype(dtype)), ctx.xp.asarray(variances.astype(dtype))


def _density_prior_box_infer(ctx):
    attrs = ctx.attrs()
    ctx.check(len(attrs["densities"]) == len(attrs["fixed_sizes"]),
              "attributes 'densities' and 'fixed_sizes'", "lists of one length",
              f"{len(attrs['densities'])} and {len(attrs['fixed_sizes'])}")
    h, w = ctx.input_shape("Input")[2:]
    count = _density_count(attrs)
    shape = (h * w * count if h >= 0 and w >= 0 else -1, 4) if attrs["flatten_to_2d"] \
        else (h, w, count, 4)
    for slot in ("Boxes", "Variances"):
        ctx.set_output(slot, shape, ctx.input_dtype("Input"))


def_op("density_prior_box", inputs=["Input", "Image"], outputs=["Boxes", "Variances"],
       attrs={"variances": ("floats", [0.1, 0.1, 0.2, 0.2]), "clip": ("bool", True),
              "step_w": ("float", 0.0), "step_h": ("float", 0.0), "offset": ("float", 0.5),
              "densities": ("ints", []), "fixed_sizes": ("floats", []),
              "fixed_ratios": ("floats", []), "flatten_to_2d": ("bool", False)},
       infer_shape=_density_prior_box_infer, grad=no_gradient, kernel=_density_prior_box,
       doc="At each feature-map cell, for each fixed size s (density d) and ratio r: a d x d "
           "grid of boxes s sqrt(r) x s / sqrt(r), spread over the cell's mean step "
           "int((step_w + step_h) / 2) (shifts of whole pixels); normalised by the image size and kept inside [0, 1]. "
           "Boxes/Variances [H, W, sum d^2 len(ratios), 4], or flattened to [-1, 4].")


# --- anchor_generator --------------------------------------------------------------------------
def _anchor_generator(ctx, feature):
    a = ctx.attrs
    fh, fw = feature.shape[2:]
    stride_w, stride_h = a["stride"][0], a["stride"][1]
    per_cell = []
    for ratio in a["aspect_ratios"]:
        for size in a["anchor_sizes"]:
            base_w = np.round(np.sqrt(stride_w * stride_h / ratio))
            base_h = np.round(base_w * ratio)
            per_cell.append((size / stride_w * base_w, size / stride_h * base_h))
    sizes = np.array(per_cell)
    cx = np.arange(fw) * stride_w + a["offset"] * (stride_w - 1)
    cy = np.arange(fh) * stride_h + a["offset"] * (stride_h - 1)
    anchors = np.empty((fh, fw, len(sizes), 4))
    anchors[..., 0] = cx[None, :, None] - 0.5 * (sizes[None, None, :, 0] - 1)
    anchors[..., 1] = cy[:, None, None] - 0.5 * (sizes[None, None, :, 1] - 1)
    anchors[..., 2] = cx[None, :, None] + 0.5 * (sizes[None, None, :, 0] - 1)
    anchors[..., 3] = cy[:, None, None] + 0.5 * (sizes[None, None, :, 1] - 1)
    variances = np.broadcast_to(np.array(a["variances"], "float64"), anchors.shape)
    dtype = dtype_of(feature)
    return ctx.xp.asarray(anchors.astype(dtype)), ctx.xp.asarray(variances.astype(dtype))


def _anchor_generator_infer(ctx):
    attrs = ctx.attrs()
    ctx.check(len(attrs["stride"]) == 2, "attribute 'stride'", "[stride_w, stride_h]",
              attrs["stride"])
    h, w = ctx.input_shape("Input")[2:]
    shape = (h, w, len(attrs["anchor_sizes"]) * len(attrs["aspect_ratios"]), 4)
    ctx.set_output("Anchors", shape, ctx.input_dtype("Input"))
    ctx.set_output("Variances", shape, ctx.input_dtype("Input"))


def_op("anchor_generator", inputs=["Input"], outputs=["Anchors", "Variances"],
       attrs={"anchor_sizes": ("floats", [64.0, 128.0, 256.0, 512.0]),
              "aspect_ratios": ("floats", [0.5, 1.0, 2.0]),
              "variances": ("floats", [0.1, 0.1, 0.2, 0.2]),
              "stride": ("floats", [16.0, 16.0]), "offset": ("float", 0.5)},
       infer_shape=_anchor_generator_infer, grad=no_gradient, kernel=_anchor_generator,
       doc="Faster R-CNN anchors in pixels: at cell (h, w), centre (w s_w + offset (s_w - "
           "1), h s_h + offset (s_h - 1)); for each ratio r (outer) and size s (inner), base "
           "w0 = round(sqrt(s_w s_h / r)), h0 = round(w0 r), anchor s w0 / s_w x s h0 / s_h; "
           "corners centre -+ (size - 1) / 2. Anchors/Variances [H, W, A, 4].")


# --- polygon_box_transform ----------------------------------------------------------------
def _polygon_box_transform(ctx, x):
    xp, values = ctx.xp, x
    if values.ndim != 4:
        raise InvalidArgument(expected("polygon_box_transform", "input 'Input'",
                                       "[N, geometry channels, H, W]", list(values.shape)))
    _, channels, h, w = values.shape
    grid = xp.where((xp.arange(channels) % 2 == 0)[:, None, None],
                    xp.broadcast_to(xp.arange(w)[None, None, :], (channels, h, w)),
                    xp.broadcast_to(xp.arange(h)[None, :, None], (channels, h, w)))
    return (4 * grid[None] - values).astype(values.dtype)


def_op("polygon_box_transform", inputs=["Input"], outputs=["Output"],
       infer_shape=lambda ctx: ctx.set_output("Output", ctx.input_shape("Input"),
                                              ctx.input_dtype("Input")),
       grad=no_gradient, kernel=_polygon_box_transform,
       doc="EAST's geometry offsets to coordinates: Output[n, c, h, w] = 4 w - Input (even c, "
           "x) or 4 h - Input (odd c, y).")


# --- box_decoder_and_assign -------------------------------------------------------------------
def _box_decoder_and_assign(ctx, prior, prior_var, target, score):
    xp = ctx.xp
    prior = prior.astype(xp.float64)
    var = prior_var.astype(xp.float64).reshape(-1)
    deltas = target.astype(xp.float64)
    scores = score
    rois, classes = scores.shape
    deltas = deltas.reshape(rois, classes, 4)
    width = prior[:, 2] - prior[:, 0] + 1
    height = prior[:, 3] - prior[:, 1] + 1
    cx, cy = prior[:, 0] + 0.5 * width, prior[:, 1] + 0.5 * height
    clip = ctx.attrs["box_clip"]
    dw = xp.minimum(var[2] * deltas[..., 2], clip)
    dh = xp.minimum(var[3] * deltas[..., 3], clip)
    box_cx = var[0] * deltas[..., 0] * width[:, None] + cx[:, None]
    box_cy = var[1] * deltas[..., 1] * height[:, None] + cy[:, None]
    box_w, box_h = xp.exp(dw) * width[:, None], xp.exp(dh) * height[:, None]
    decoded = xp.stack([box_cx - box_w / 2, box_cy - box_h / 2, box_cx + box_w / 2 - 1,
                        box_cy + box_h / 2 - 1], axis=-1)
    # each RoI takes the box of its best class but the background (class 0), or stays
    best = xp.argmax(xp.where(xp.arange(classes)[None] > 0, scores, -xp.inf), axis=1) \
        if classes > 1 else xp.zeros(rois, dtype=xp.int64)
    every = xp.arange(rois)
    has_best = (best > 0) & (scores[every, best] > -1)
    assigned = xp.where(has_best[:, None], decoded[every, best], prior)
    dtype = target.dtype
    return decoded.reshape(rois, classes * 4).astype(dtype), assigned.astype(dtype)


def _box_decoder_and_assign_infer(ctx):
    target = ctx.input_shape("TargetBox")
    ctx.set_output("DecodeBox", tuple(target), ctx.input_dtype("TargetBox"))
    ctx.set_output("OutputAssignBox", (target[0], 4), ctx.input_dtype("TargetBox"))


def_op("box_decoder_and_assign", inputs=["PriorBox", "PriorBoxVar", "TargetBox", "BoxScore"],
       outputs=["DecodeBox", "OutputAssignBox"],
       attrs={"box_clip": ("float", float(np.log(1000.0 / 16.0)))},
       infer_shape=_box_decoder_and_assign_infer, grad=no_gradient,
       kernel=_box_decoder_and_assign,
       doc="Decode each RoI's per-class deltas TargetBox [R, 4 C] against its PriorBox (pixel "
           "boxes, variances PriorBoxVar [4], dw and dh clipped at box_clip) into DecodeBox; "
           "OutputAssignBox is the decoded box of the RoI's best-scoring class other than 0 "
           "(BoxScore [R, C]), or the prior itself.")


# --- matrix_nms ----------------------------------------------------------------------------
def matrix_nms_class(boxes, scores, a):
    """(index, decayed score) of the boxes of one class kept by Matrix NMS."""
    order = [int(i) for i in np.argsort(-scores, kind="stable")
             if scores[i] > a["score_threshold"]]
    if a["nms_top_k"] > -1:
        order = order[:a["nms_top_k"]]
    if not order:
        return []
    ious = iou_matrix(boxes[order], boxes[order], a["normalized"])
    ious = np.tril(ious, -1)  # ious[i, j]: box i against the better box j < i
    max_iou = ious.max(axis=1)  # each box's largest overlap with a better one
    kept = []
    if scores[order[0]] > a["post_threshold"]:
        kept.append((order[0], float(scores[order[0]])))
    for i in range(1, len(order)):
        iou, compensate = ious[i, :i], max_iou[:i]
        if a["use_gaussian"]:
            decay = np.exp((compensate ** 2 - iou ** 2) * a["gaussian_sigma"])
        else:
            decay = (1 - iou) / (1 - compensate)
        decayed = min(1.0, float(decay.min())) * float(scores[order[i]])
        if decayed > a["post_threshold"]:
            kept.append((order[i], decayed))
    return kept


def _matrix_nms(ctx, bboxes, scores):
    a = ctx.attrs
    boxes_all = host_array(bboxes, "float64")
    scores_all = host_array(scores, "float64")
    rows, index, offsets = [], [], [0]
    for n in range(len(scores_all)):
        found = []
        for label in range(scores_all.shape[1]):
            if label == a["background_label"]:
                continue
            found += [(score, label, i) for i, score in
                      matrix_nms_class(boxes_all[n], scores_all[n, label], a)]
        found.sort(key=lambda f: -f[0])
        if a["keep_top_k"] > -1:
            found = found[:a["keep_top_k"]]
        rows += [[label, score] + list(boxes_all[n, i]) for score, label, i in found]
        index += [n * boxes_all.shape[1] + i for _, _, i in found]
        offsets.append(len(rows))
    dtype = dtype_of(bboxes)
    xp = ctx.xp
    out = np.array(rows, dtype).reshape(-1, 6)
    counts = np.diff(offsets).astype("int32")
    return (LoDTensor(xp.asarray(out), [offsets]),
            LoDTensor(xp.asarray(np.array(index, "int32").reshape(-1, 1)), [offsets]),
            LoDTensor(xp.asarray(counts)))


def _matrix_nms_infer(ctx):
    ctx.set_output("Out", (-1, 6), ctx.input_dtype("BBoxes"), lod_level=1)
    ctx.set_output("Index", (-1, 1), VarType.INT32, lod_level=1)
    if ctx.has_output("RoisNum"):
        ctx.set_output("RoisNum", (-1,), VarType.INT32)


def_op("matrix_nms", inputs=["BBoxes", "Scores"], outputs=["Out", "Index", "RoisNum?"],
       attrs={"background_label": ("int", 0), "score_threshold": ("float", None),
              "post_threshold": ("float", 0.0), "nms_top_k": ("int", None),
              "keep_top_k": ("int", None), "normalized": ("bool", True),
              "use_gaussian": ("bool", False), "gaussian_sigma": ("float", 2.0)},
       infer_shape=_matrix_nms_infer, grad=no_gradient, kernel=_matrix_nms,
       host_reads=("BBoxes, Scores: per-class decay and the data-dependent number of kept boxes "
                   "are computed on the host"),
       traits={"runtime_outputs"},
       doc="Matrix NMS (SOLOv2): per image and class, the nms_top_k boxes above "
           "score_threshold, best first; box i's score decays by min over better boxes j of "
           "(1 - iou_ij) / (1 - max_iou_j) (or exp((max_iou_j^2 - iou_ij^2) sigma) with "
           "use_gaussian), max_iou_j being j's largest overlap with a box better than it; "
           "decayed scores <= post_threshold drop. Then the keep_top_k best over classes, "
           "best first. Out rows [label, score, box], Index into BBoxes flattened, RoisNum "
           "per image.")


# --- locality_aware_nms --------------------------------------------------------------------
def _merge_consecutive(boxes, scores, threshold, normalized):
    """EAST's locality-aware pass, in place: walking the boxes in order, a box overlapping
    the last kept one beyond ``threshold`` merges into it (coordinates weighted by score,
    scores added). Returns the indices of the kept (merged-into) boxes. As in Paddle,
    ``boxes`` are shared by the classes: a later class sees the earlier classes' merges."""
    kept = []
    for i in range(len(boxes)):
        if kept:
            last = kept[-1]
            if iou_matrix(boxes[i:i + 1], boxes[last:last + 1], normalized)[0, 0] > threshold:
                total = scores[i] + scores[last]
                boxes[last] = (boxes[i] * scores[i] + boxes[last] * scores[last]) / total
                scores[last] = total
                continue
        kept.append(i)
    return kept


def _locality_aware_nms(ctx, bboxes, scores):
    a = ctx.attrs
    boxes_all = host_array(bboxes, "float64")
    scores_all = host_array(scores, "float64")
    if boxes_all.shape[2] != 4:
        raise InvalidArgument(expected("locality_aware_nms", "BBoxes", "[N, M, 4] (axis-"
                                       "aligned boxes; quadrilaterals are not supported)",
                                       list(boxes_all.shape)))
    rows, offsets = [], [0]
    for n in range(len(scores_all)):
        boxes = boxes_all[n].copy()
        found = []
        for label in range(scores_all.shape[1]):
            if label == a["background_label"]:
                continue
            class_scores = scores_all[n, label].copy()
            candidates = _merge_consecutive(boxes, class_scores, a["nms_threshold"],
                                            a["normalized"])
            masked = np.full(len(class_scores), -np.inf)
            masked[candidates] = class_scores[candidates]
            kept = nms(boxes, masked, a["score_threshold"], a["nms_threshold"],
                       a["nms_top_k"], a["nms_eta"], a["normalized"])
            found += [(class_scores[i], label, i) for i in kept]
        if a["keep_top_k"] > -1 and len(found) > a["keep_top_k"]:
            found = sorted(found, key=lambda f: -f[0])[:a["keep_top_k"]]
        # the boxes as every class's merges left them (Paddle reads them after the loop)
        for label in sorted({f[1] for f in found}):
            rows += [[label, score] + list(boxes[i]) for score, l, i in found if l == label]
        offsets.append(len(rows))
    dtype = dtype_of(bboxes)
    if not rows:
        return LoDTensor(ctx.xp.asarray(np.array([[-1.0]], dtype)), [[0, 1]])
    return LoDTensor(ctx.xp.asarray(np.array(rows, dtype)), [offsets])


def_op("locality_aware_nms", inputs=["BBoxes", "Scores"], outputs=["Out"],
       attrs={"background_label": ("int", -1), "score_threshold": ("float", None),
              "nms_top_k": ("int", None), "nms_threshold": ("float", 0.3),
              "nms_eta": ("float", 1.0), "keep_top_k": ("int", None),
              "normalized": ("bool", True)},
       infer_shape=lambda ctx: ctx.set_output("Out", (-1, 6), ctx.input_dtype("BBoxes"),
                                              lod_level=1),
       grad=no_gradient, kernel=_locality_aware_nms,
       host_reads=("BBoxes, Scores: merging and NMS keep a data-dependent number of boxes, on"
                   " the host"),
       traits={"runtime_outputs"},
       doc="EAST's NMS: per image and class, consecutive boxes overlapping beyond "
           "nms_threshold are first merged into the earlier one (score-weighted coordinates, "
           "summed scores; the merged boxes carry over to the next class, as in Paddle), "
           "then multiclass_nms's greedy suppression and keep_top_k. Out rows [label, "
           "score, box] grouped by class, LoD by image (one -1 row if nothing).")


# --- retinanet_detection_output --------------------------------------------------------
def _retinanet_image(a, deltas, scores, anchors, info):
    """Rows [label, score, box] of one image, over the levels."""
    im_h, im_w, scale = info
    candidates = {}  # class -> [(score, box)]
    levels = len(scores)
    for level in range(levels):
        level_scores = scores[level]  # [M, C]
        threshold = a["score_threshold"] if level < levels - 1 else 0.0
        flat = level_scores.reshape(-1)
        order = [int(i) for i in np.argsort(-flat, kind="stable") if flat[i] > threshold]
        order = order[:a["nms_top_k"]]
        classes = level_scores.shape[1]
        for entry in order:
            m, c = divmod(entry, classes)
            anchor, delta = anchors[level][m], deltas[level][m]
            w = anchor[2] - anchor[0] + 1
            h = anchor[3] - anchor[1] + 1
            cx, cy = anchor[0] + 0.5 * w, anchor[1] + 0.5 * h
            bx, by = delta[0] * w + cx, delta[1] * h + cy
            bw, bh = np.exp(delta[2]) * w, np.exp(delta[3]) * h
            box = np.array([bx - bw / 2, by - bh / 2, bx + bw / 2 - 1, by + bh / 2 - 1]) / scale
            box[0::2] = np.clip(box[0::2], 0, np.round(im_w / scale) - 1)
            box[1::2] = np.clip(box[1::2], 0, np.round(im_h / scale) - 1)
            candidates.setdefault(c, []).append((float(flat[entry]), box))
    found = []
    for c in sorted(candidates):  # by class, so the stable sort below breaks ties as Fluid
        entries = candidates[c]
        boxes = np.array([b for _, b in entries])
        class_scores = np.array([s for s, _ in entries])
        kept = nms(boxes, class_scores, -np.inf, a["nms_threshold"], -1, a["nms_eta"], False)
        found += [(class_scores[i], c, boxes[i]) for i in kept]
    found.sort(key=lambda f: -f[0])
    return [[c + 1, score] + list(box) for score, c, box in found[:a["keep_top_k"]]]


def _retinanet_detection_output(ctx, bboxes, scores, anchors, im_info):
    a = ctx.attrs
    deltas = [host_array(b, "float64") for b in bboxes]
    level_scores = [host_array(s, "float64") for s in scores]
    level_anchors = [host_array(an, "float64").reshape(-1, 4) for an in anchors]
    info = host_array(im_info, "float64")
    rows, offsets = [], [0]
    for n in range(len(info)):
        rows += _retinanet_image(a, [d[n] for d in deltas], [s[n] for s in level_scores],
                                 level_anchors, info[n])
        offsets.append(len(rows))
    out = np.array(rows, dtype_of(scores[0])).reshape(-1, 6)
    return LoDTensor(ctx.xp.asarray(out), [offsets])


def_op("retinanet_detection_output", inputs=["BBoxes[]", "Scores[]", "Anchors[]", "ImInfo"],
       outputs=["Out"],
       attrs={"score_threshold": ("float", 0.05), "nms_top_k": ("int", 1000),
              "nms_threshold": ("float", 0.3), "nms_eta": ("float", 1.0),
              "keep_top_k": ("int", 100)},
       infer_shape=lambda ctx: ctx.set_output("Out", (-1, 6), ctx.input_dtype("Scores"),
                                              lod_level=1),
       grad=no_gradient, kernel=_retinanet_detection_output,
       host_reads=("BBoxes, Scores, Anchors, ImInfo: per-level top-k, decoding and NMS keep a"
                   " data-dependent number of boxes, on the host"),
       traits={"runtime_outputs"},
       doc="RetinaNet's detections: per image and FPN level, the nms_top_k (anchor, class) "
           "scores above score_threshold (any score on the last level), their anchors "
           "decoded by BBoxes deltas (pixel boxes, then over ImInfo's scale and clipped to "
           "the image); per class greedy NMS at nms_threshold; the keep_top_k best. Out rows "
           "[class + 1, score, box], best first, LoD by image.")
