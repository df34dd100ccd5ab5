"""Region proposals of two-stage detectors: ``generate_proposals`` (an RPN's anchors moved by
its deltas, clipped, filtered by size and suppressed), and feature-pyramid routing:
``distribute_fpn_proposals`` (each RoI to the pyramid level its size calls for) and
``collect_fpn_proposals`` (the best RoIs over the levels, back in image order). Boxes are in
pixels, a box's width counting its last pixel (x2 - x1 + 1), as Paddle 1.8's kernels.
None has a gradient."""
import numpy as np

from ..errors import InvalidArgument, expected
from ..tensor.tensor import LoDTensor
from ..tensor.dtypes import VarType
from .detection import dtype_of, host_array, nms
from ..framework.registry import def_op, no_gradient

#: the largest log-size change a delta may ask for (Paddle's kBBoxClipDefault)
BBOX_CLIP = float(np.log(1000.0 / 16.0))


def _offsets(tensor, rows, op, slot):
    lod = tensor.lod()
    if not lod:
        raise InvalidArgument(expected(op, f"input '{slot}'", "a LoDTensor with one LoD level "
                                       "(its rows by image)", "a tensor without LoD"))
    offsets = list(lod[-1])
    if offsets[-1] != rows:
        raise InvalidArgument(expected(op, f"input '{slot}' last LoD offset",
                                       f"{rows} (its number of rows)", offsets[-1]))
    return offsets


# --- generate_proposals ------------------------------------------------------------------
def decode_anchors(anchors, deltas, variances):
    """Anchors [M, 4] moved by deltas [M, 4] (scaled by variances [M, 4] or None), the
    log-size deltas clipped at BBOX_CLIP."""
    w = anchors[:, 2] - anchors[:, 0] + 1
    h = anchors[:, 3] - anchors[:, 1] + 1
    cx, cy = anchors[:, 0] + 0.5 * w, anchors[:, 1] + 0.5 * h
    v = variances if variances is not None else np.ones_like(deltas)
    box_cx = v[:, 0] * deltas[:, 0] * w + cx
    box_cy = v[:, 1] * deltas[:, 1] * h + cy
    box_w = np.exp(np.minimum(v[:, 2] * deltas[:, 2], BBOX_CLIP)) * w
    box_h = np.exp(np.minimum(v[:, 3] * deltas[:, 3], BBOX_CLIP)) * h
    return np.stack([box_cx - box_w / 2, box_cy - box_h / 2, box_cx + box_w / 2 - 1,
                     box_cy + box_h / 2 - 1], axis=1)


def _proposals_of_image(a, scores, deltas, anchors, variances, info):
    order = np.argsort(-scores, kind="stable")
    if 0 < a["pre_nms_topN"] < len(order):
        order = order[:a["pre_nms_topN"]]
    boxes = decode_anchors(anchors[order], deltas[order],
                           variances[order] if variances is not None else None)
    im_h, im_w, im_scale = info
    boxes[:, 0::2] = np.clip(boxes[:, 0::2], 0, im_w - 1)
    boxes[:, 1::2] = np.clip(boxes[:, 1::2], 0, im_h - 1)
    min_size = max(a["min_size"], 1.0)
    ws, hs = boxes[:, 2] - boxes[:, 0] + 1, boxes[:, 3] - boxes[:, 1] + 1
    ws_origin = (boxes[:, 2] - boxes[:, 0]) / im_scale + 1
    hs_origin = (boxes[:, 3] - boxes[:, 1]) / im_scale + 1
    keep = np.nonzero((ws_origin >= min_size) & (hs_origin >= min_size)
                      & (boxes[:, 0] + ws / 2 <= im_w) & (boxes[:, 1] + hs / 2 <= im_h))[0]
    if not len(keep):  # Paddle's stand-in: one empty proposal of score 0
        return np.zeros((1, 4)), np.zeros(1)
    boxes, kept_scores = boxes[keep], scores[order][keep]
    if a["nms_thresh"] <= 0:
        return boxes, kept_scores
    selected = nms(boxes, kept_scores, -np.inf, a["nms_thresh"], -1, a["eta"], False)
    if 0 < a["post_nms_topN"] < len(selected):
        selected = selected[:a["post_nms_topN"]]
    return boxes[selected], kept_scores[selected]


def _generate_proposals(ctx, scores, deltas, im_info, anchors, variances):
    a = ctx.attrs
    dtype = dtype_of(deltas)
    scores = host_array(scores, "float64")
    deltas = host_array(deltas, "float64")
    info = host_array(im_info, "float64")
    n, count, h, w = scores.shape
    if deltas.shape != (n, 4 * count, h, w):
        raise InvalidArgument(expected("generate_proposals", "BboxDeltas",
                                       f"[N, 4 A, H, W] = {[n, 4 * count, h, w]}",
                                       list(deltas.shape)))
    anchor_rows = host_array(anchors, "float64").reshape(-1, 4)
    variance_rows = host_array(variances, "float64").reshape(-1, 4) \
        if variances is not None else None
    if len(anchor_rows) != h * w * count:
        raise InvalidArgument(expected("generate_proposals", "Anchors", f"[H, W, A, 4] with "
                                       f"H W A = {h * w * count}", list(np.shape(anchors))))
    rois, probs, offsets = [], [], [0]
    for i in range(n):
        # (H, W, A) order, as the anchors are laid out
        image_scores = scores[i].transpose(1, 2, 0).reshape(-1)
        image_deltas = deltas[i].transpose(1, 2, 0).reshape(-1, 4)
        boxes, kept = _proposals_of_image(a, image_scores, image_deltas, anchor_rows,
                                          variance_rows, info[i])
        rois.append(boxes)
        probs.append(kept)
        offsets.append(offsets[-1] + len(boxes))
    xp = ctx.xp
    counts = np.diff(offsets).astype("int32")
    return (LoDTensor(xp.asarray(np.concatenate(rois).astype(dtype)), [offsets]),
            LoDTensor(xp.asarray(np.concatenate(probs).reshape(-1, 1).astype(dtype)),
                      [offsets]),
            LoDTensor(xp.asarray(counts)))


def _generate_proposals_infer(ctx):
    dtype = ctx.input_dtype("BboxDeltas")
    ctx.set_output("RpnRois", (-1, 4), dtype, lod_level=1)
    ctx.set_output("RpnRoiProbs", (-1, 1), ctx.input_dtype("Scores"), lod_level=1)
    if ctx.has_output("RpnRoisLod"):
        ctx.set_output("RpnRoisLod", (-1,), VarType.INT32)


def_op("generate_proposals",
       inputs=["Scores", "BboxDeltas", "ImInfo", "Anchors", "Variances?"],
       outputs=["RpnRois", "RpnRoiProbs", "RpnRoisLod?"],
       attrs={"pre_nms_topN": ("int", 6000), "post_nms_topN": ("int", 1000),
              "nms_thresh": ("float", 0.5), "min_size": ("float", 0.1),
              "eta": ("float", 1.0)},
       infer_shape=_generate_proposals_infer, grad=no_gradient, kernel=_generate_proposals,
       host_reads=("Scores, BboxDeltas, ImInfo, Anchors, Variances: top-k and NMS keep a "
                   "data-dependent number of proposals, on the host"),
       traits={"runtime_outputs"},
       doc="Per image: the pre_nms_topN best anchors by Scores [N, A, H, W], moved by "
           "BboxDeltas [N, 4A, H, W] (times Variances; log-size deltas at most log(1000/16)), "
           "clipped to the image of ImInfo (h, w, scale), those at least max(min_size, 1) "
           "wide and high at the original scale with their centre inside; greedy NMS at "
           "nms_thresh (adaptive with eta) and the post_nms_topN best. RpnRois [R, 4], "
           "RpnRoiProbs [R, 1] with one LoD level by image; RpnRoisLod the counts.")


# --- distribute_fpn_proposals -----------------------------------------------------------
def target_levels(rois, attrs):
    """The pyramid level of each RoI: floor(log2(sqrt(area) / refer_scale) +
    refer_level), kept within [min_level, max_level]."""
    w = rois[:, 2] - rois[:, 0] + 1
    h = rois[:, 3] - rois[:, 1] + 1
    area = np.where((rois[:, 2] < rois[:, 0]) | (rois[:, 3] < rois[:, 1]), 0.0, w * h)
    level = np.floor(np.log2(np.sqrt(area) / attrs["refer_scale"] + 1e-6)
                     + attrs["refer_level"])
    return np.clip(level, attrs["min_level"], attrs["max_level"]).astype(int)


def _distribute_fpn_proposals(ctx, fpn_rois):
    a = ctx.attrs
    rois = host_array(fpn_rois.array)
    offsets = _offsets(fpn_rois, len(rois), "distribute_fpn_proposals", "FpnRois")
    levels = target_levels(rois.astype("float64"), a)
    outputs, order = [], []
    for level in range(a["min_level"], a["max_level"] + 1):
        rows, level_offsets = [], [0]
        for i in range(len(offsets) - 1):
            here = [r for r in range(offsets[i], offsets[i + 1]) if levels[r] == level]
            rows += here
            level_offsets.append(len(rows))
        outputs.append(LoDTensor(ctx.xp.asarray(rois[rows].reshape(-1, 4)), [level_offsets]))
        order += rows
    # RestoreIndex[r]: where RoI r sits in the levels' outputs, concatenated
    restore = np.empty(len(rois), "int32")
    restore[host_array(order, int)] = np.arange(len(order))
    return outputs, LoDTensor(ctx.xp.asarray(restore.reshape(-1, 1)))


def _distribute_infer(ctx):
    attrs = ctx.attrs()
    levels = attrs["max_level"] - attrs["min_level"] + 1
    ctx.check(levels >= 1, "attributes 'min_level' and 'max_level'", "min_level <= max_level",
              f"{attrs['min_level']} and {attrs['max_level']}")
    ctx.set_outputs("MultiFpnRois", [(-1, 4)] * levels, ctx.input_dtype("FpnRois"),
                    lod_level=1)
    ctx.set_output("RestoreIndex", (-1, 1), VarType.INT32)


def_op("distribute_fpn_proposals", inputs=["FpnRois"],
       outputs=["MultiFpnRois[]", "RestoreIndex"],
       attrs={"min_level": ("int", None), "max_level": ("int", None),
              "refer_level": ("int", None), "refer_scale": ("int", None)},
       infer_shape=_distribute_infer, grad=no_gradient, kernel=_distribute_fpn_proposals,
       host_reads=("FpnRois (and its RoisNum): each RoI's level decides the outputs' sizes, on "
                   "the host"),
       lod_aware=True, traits={"runtime_outputs"},
       doc="Each RoI of FpnRois (LoD by image) goes to level floor(log2(sqrt(area) / "
           "refer_scale) + refer_level), kept within [min_level, max_level]; MultiFpnRois "
           "has one LoD tensor per level (image order kept) and RestoreIndex [R, 1] says "
           "where each RoI went in their concatenation.")


# --- collect_fpn_proposals --------------------------------------------------------------------
def _collect_fpn_proposals(ctx, multi_rois, multi_scores):
    a = ctx.attrs
    if len(multi_rois) != len(multi_scores):
        raise InvalidArgument(expected("collect_fpn_proposals", "MultiLevelRois and "
                                       "MultiLevelScores", "one tensor per level each",
                                       f"{len(multi_rois)} and {len(multi_scores)}"))
    entries = []  # (score, image, row): every level's RoIs, levels in order
    all_rois = []
    images, base = None, 0
    for rois, scores in zip(multi_rois, multi_scores):
        values = host_array(rois.array).reshape(-1, 4)
        score_values = host_array(scores.array).reshape(-1)
        offsets = _offsets(rois, len(values), "collect_fpn_proposals", "MultiLevelRois")
        if images is None:
            images = len(offsets) - 1
        for i in range(len(offsets) - 1):
            for r in range(offsets[i], offsets[i + 1]):
                entries.append((float(score_values[r]), i, base + r))
        all_rois.append(values)
        base += len(values)
    rois = np.concatenate(all_rois) if all_rois else np.zeros((0, 4))
    order = sorted(range(len(entries)), key=lambda e: -entries[e][0])  # stable
    kept = [entries[e] for e in order[:min(a["post_nms_topN"], len(entries))]]
    kept.sort(key=lambda entry: entry[1])  # stable: by image, best first within
    offsets = [0]
    for i in range(images or 0):
        offsets.append(offsets[-1] + sum(1 for entry in kept if entry[1] == i))
    out = rois[[entry[2] for entry in kept]].reshape(-1, 4)
    counts = np.diff(offsets).astype("int32")
    return (LoDTensor(ctx.xp.asarray(out.astype(dtype_of(multi_rois[0].array))),
                      [offsets]),
            LoDTensor(ctx.xp.asarray(counts)))


def _collect_infer(ctx):
    ctx.set_output("FpnRois", (-1, 4), ctx.input_dtype("MultiLevelRois"), lod_level=1)
    if ctx.has_output("RoisNum"):
        ctx.set_output("RoisNum", (-1,), VarType.INT32)


def_op("collect_fpn_proposals", inputs=["MultiLevelRois[]", "MultiLevelScores[]"],
       outputs=["FpnRois", "RoisNum?"], attrs={"post_nms_topN": ("int", 100)},
       infer_shape=_collect_infer, grad=no_gradient, kernel=_collect_fpn_proposals,
       host_reads=("MultiLevelRois, MultiLevelScores (and their RoisNum): the top post_nms_topN "
                   "per image, on the host"),
       lod_aware=True, traits={"runtime_outputs"},
       doc="The post_nms_topN best RoIs of all levels (MultiLevelRois with their "
           "MultiLevelScores, LoD by image) by score, then ordered by image (best first "
           "within one): FpnRois with one LoD level by image.")
