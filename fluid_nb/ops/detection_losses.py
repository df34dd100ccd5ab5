"""What detection training is built from: matching ground truths to priors
(``bipartite_match``), gathering each prior's target (``target_assign``), picking the hard
negatives (``mine_hard_examples``), and two losses with gradients, ``sigmoid_focal_loss``
(RetinaNet) and ``yolov3_loss``; as Paddle's kernels compute them.

A batch of ground truths is a LoD tensor: one LoD level gives each image's rows."""
import numpy as np

from ..errors import InvalidArgument, expected
from ..tensor.tensor import LoDTensor
from ..tensor.dtypes import VarType
from .detection import dtype_of, host_array
from ..framework.registry import def_op, grads_like, no_gradient

_EPS = 1e-6  # a distance below this is no overlap at all


def _instances(tensor, rows):
    """Row offsets of each instance: the last LoD level, or one instance of every row."""
    lod = tensor.lod() if isinstance(tensor, LoDTensor) else None
    return list(lod[-1]) if lod else [0, rows]


# --- bipartite_match ----------------------------------------------------------------------
def bipartite_match(dist):
    """Greedy bipartite matching of rows to columns of ``dist`` [K, M]: repeatedly the
    largest remaining entry (above _EPS) whose row and column are both free. Returns
    (row index per column or -1, its distance or 0)."""
    rows, cols = dist.shape
    indices = np.full(cols, -1, "int64")
    dists = np.zeros(cols, dist.dtype)
    free_rows = list(range(rows))
    while free_rows:
        best, best_row, best_col = -1.0, -1, -1
        for col in range(cols):
            if indices[col] != -1:
                continue
            for row in free_rows:
                value = dist[row, col]
                if value >= _EPS and value > best:
                    best, best_row, best_col = value, row, col
        if best_col == -1:
            break
        indices[best_col], dists[best_col] = best_row, best
        free_rows.remove(best_row)
    return indices, dists


def _per_prediction_match(dist, indices, dists, threshold):
    """Each column still unmatched takes its best row when that overlap >= threshold."""
    for col in range(dist.shape[1]):
        if indices[col] != -1:
            continue
        column = np.where(dist[:, col] >= _EPS, dist[:, col], -1.0)
        row = int(np.argmax(column)) if len(column) else -1
        if row >= 0 and column[row] >= threshold:
            indices[col], dists[col] = row, column[row]


def _bipartite_match(ctx, dist_mat):
    dist = host_array(dist_mat.array)
    offsets = _instances(dist_mat, dist.shape[0])
    n, cols = len(offsets) - 1, dist.shape[1]
    indices = np.full((n, cols), -1, "int32")
    dists = np.zeros((n, cols), dist.dtype)
    for i in range(n):
        part = dist[offsets[i]:offsets[i + 1]]
        if not len(part):
            continue
        match, match_dist = bipartite_match(part)
        if ctx.attrs["match_type"] == "per_prediction":
            _per_prediction_match(part, match, match_dist, ctx.attrs["dist_threshold"])
        indices[i], dists[i] = match, match_dist
    return LoDTensor(ctx.xp.asarray(indices)), LoDTensor(ctx.xp.asarray(dists))


def _bipartite_match_infer(ctx):
    shape = ctx.input_shape("DistMat")
    ctx.check(len(shape) == 2, "input 'DistMat' rank", "2 ([rows, columns])", len(shape))
    ctx.set_output("ColToRowMatchIndices", (-1, shape[1]), VarType.INT32)
    ctx.set_output("ColToRowMatchDist", (-1, shape[1]), ctx.input_dtype("DistMat"))


def_op("bipartite_match", inputs=["DistMat"],
       outputs=["ColToRowMatchIndices", "ColToRowMatchDist"],
       attrs={"match_type": ("string", "bipartite",
                             lambda v: None if v in ("bipartite", "per_prediction")
                             else "bipartite or per_prediction"),
              "dist_threshold": ("float", 0.5)},
       infer_shape=_bipartite_match_infer, grad=no_gradient, kernel=_bipartite_match,
       host_reads="DistMat: the greedy matching runs per instance on the host",
       lod_aware=True,
       doc="Per instance (a LoD segment of DistMat [K, M], rows = ground truths, columns = "
           "priors): greedy bipartite matching, the largest free entry first; with "
           "per_prediction, every column left takes its best row if that distance >= "
           "dist_threshold. ColToRowMatchIndices [N, M] (row within the instance, or -1), "
           "ColToRowMatchDist [N, M].")


# --- target_assign -------------------------------------------------------------------------
def _target_assign(ctx, x, match_indices, neg_indices):
    values = host_array(x.array)
    if values.ndim != 3:
        raise InvalidArgument(expected("target_assign", "input 'X'",
                                       "a 3-D LoD tensor [rows, P, K]", list(values.shape)))
    match = host_array(match_indices.array)
    offsets = _instances(x, values.shape[0])
    n, priors = match.shape
    if len(offsets) - 1 != n:
        raise InvalidArgument(expected("target_assign", "instances of X (its LoD)",
                                       f"{n} (MatchIndices' rows)", len(offsets) - 1))
    k, p = values.shape[2], values.shape[1]
    mismatch = ctx.attrs["mismatch_value"]
    out = np.full((n, priors, k), mismatch, values.dtype)
    weight = np.zeros((n, priors, 1), "float32")
    for i in range(n):
        for j in range(priors):
            row = match[i, j]
            if row > -1:
                out[i, j] = values[offsets[i] + row, j % p]
                weight[i, j] = 1.0
    if neg_indices is not None:
        negatives = host_array(neg_indices.array).reshape(-1)
        neg_offsets = _instances(neg_indices, len(negatives))
        for i in range(len(neg_offsets) - 1):
            for j in negatives[neg_offsets[i]:neg_offsets[i + 1]]:
                out[i, j] = mismatch
                weight[i, j] = 1.0
    return LoDTensor(ctx.xp.asarray(out)), LoDTensor(ctx.xp.asarray(weight))


def _target_assign_infer(ctx):
    x, match = ctx.input_shape("X"), ctx.input_shape("MatchIndices")
    ctx.check(len(x) == 3, "input 'X' rank", "3 ([rows, P, K])", len(x))
    ctx.set_output("Out", (match[0], match[1], x[2]), ctx.input_dtype("X"))
    ctx.set_output("OutWeight", (match[0], match[1], 1), VarType.FP32)


def_op("target_assign", inputs=["X", "MatchIndices", "NegIndices?"],
       outputs=["Out", "OutWeight"], attrs={"mismatch_value": ("int", 0)},
       infer_shape=_target_assign_infer, grad=no_gradient, kernel=_target_assign,
       host_reads=("MatchIndices, NegIndices: which rows each target takes, per instance on the "
                   "host"),
       lod_aware=True,
       doc="Out[i, j] = X[lod[i] + MatchIndices[i, j], j % P] with OutWeight 1 where the "
           "prior is matched; mismatch_value with weight 0 where not; each NegIndices entry "
           "of instance i (its LoD) sets Out[i, neg] = mismatch_value with weight 1.")


# --- mine_hard_examples --------------------------------------------------------------------
def _mine_hard_examples(ctx, cls_loss, loc_loss, match_indices, match_dist):
    a = ctx.attrs
    cls = host_array(cls_loss.array, "float64")
    loc = host_array(loc_loss.array, "float64") if loc_loss is not None else None
    match = host_array(match_indices.array)
    dist = host_array(match_dist.array)
    hard = a["mining_type"] == "hard_example"
    updated = match.copy()
    negatives, offsets = [], [0]
    for n in range(match.shape[0]):
        if hard:
            eligible = list(range(match.shape[1]))
        else:
            eligible = [m for m in range(match.shape[1])
                        if match[n, m] == -1 and dist[n, m] < a["neg_dist_threshold"]]
        losses = [cls[n, m] + (loc[n, m] if hard and loc is not None else 0.0)
                  for m in eligible]
        if hard:
            count = min(a["sample_size"], len(eligible))
        else:
            positives = int((match[n] != -1).sum())
            count = min(int(positives * a["neg_pos_ratio"]), len(eligible))
        order = sorted(range(len(eligible)), key=lambda e: -losses[e])
        selected = sorted(eligible[e] for e in order[:count])
        if hard:
            chosen = set(selected)
            for m in range(match.shape[1]):
                if match[n, m] > -1 and m not in chosen:
                    updated[n, m] = -1
            selected = [m for m in selected if match[n, m] == -1]
        negatives += selected
        offsets.append(len(negatives))
    neg = host_array(negatives, "int32").reshape(-1, 1)
    return (LoDTensor(ctx.xp.asarray(neg), [offsets]),
            LoDTensor(ctx.xp.asarray(updated.astype(match.dtype))))


def _mine_infer(ctx):
    ctx.set_output("NegIndices", (-1, 1), VarType.INT32, lod_level=1)
    ctx.set_output("UpdatedMatchIndices", ctx.input_shape("MatchIndices"),
                   ctx.input_dtype("MatchIndices"))


def_op("mine_hard_examples", inputs=["ClsLoss", "LocLoss?", "MatchIndices", "MatchDist"],
       outputs=["NegIndices", "UpdatedMatchIndices"],
       attrs={"neg_pos_ratio": ("float", 1.0), "neg_dist_threshold": ("float", 0.5),
              "sample_size": ("int", 0),
              "mining_type": ("string", "max_negative",
                              lambda v: None if v in ("max_negative", "hard_example")
                              else "max_negative or hard_example")},
       infer_shape=_mine_infer, grad=no_gradient, kernel=_mine_hard_examples,
       host_reads=("ClsLoss, LocLoss, MatchIndices, MatchDist: the data-dependent negatives are "
                   "chosen on the host"),
       lod_aware=True, traits={"runtime_outputs"},
       doc="Per image: max_negative picks, among the unmatched priors with MatchDist < "
           "neg_dist_threshold, the neg_pos_ratio x (matched count) of highest ClsLoss; "
           "hard_example picks the sample_size priors of highest ClsLoss + LocLoss and "
           "unmatches the matched ones not picked. NegIndices: the picked unmatched priors "
           "in ascending order, one LoD level by image.")


# --- sigmoid_focal_loss --------------------------------------------------------------------
def _focal_parts(xp, x, label, fg_num, gamma, alpha):
    """(pos weight, neg weight, p): Out = pos * (1-p)^g log p + neg * p^g log(1-p); all on
    x's device (FgNum only divides, so it stays there too)."""
    classes = xp.arange(1, x.shape[1] + 1)[None, :]
    g = label.reshape(-1, 1)
    fg = xp.maximum(fg_num.reshape(-1)[0].astype(xp.float64), 1.0)
    positive = (g == classes)
    negative = (g != -1) & (g != classes)
    p = 1 / (1 + xp.exp(-x))
    return -alpha / fg * positive, -(1 - alpha) / fg * negative, p


def _log_sigmoid(x, xp=np):
    """log sigmoid(x) = -log(1 + e^-x), without overflow."""
    return -xp.logaddexp(0, -x)


def _sigmoid_focal_loss(ctx, x, label, fg_num):
    a, xp = ctx.attrs, ctx.xp
    values = x.astype(xp.float64)
    pos, neg, p = _focal_parts(xp, values, label, fg_num, a["gamma"], a["alpha"])
    out = pos * (1 - p) ** a["gamma"] * _log_sigmoid(values, xp) + \
        neg * p ** a["gamma"] * _log_sigmoid(-values, xp)
    return out.astype(x.dtype)


def _sigmoid_focal_loss_grad(ctx, x, label, fg_num, dout):
    a, xp = ctx.attrs, ctx.xp
    gamma = a["gamma"]
    values = x.astype(xp.float64)
    pos, neg, p = _focal_parts(xp, values, label, fg_num, gamma, a["alpha"])
    # d/dx (1-p)^g log p = (1-p)^g ((1-p) - g p log p); d/dx p^g log(1-p) = p^g (g (1-p)
    # log(1-p) - p)
    d_pos = (1 - p) ** gamma * ((1 - p) - gamma * p * _log_sigmoid(values, xp))
    d_neg = p ** gamma * (gamma * (1 - p) * _log_sigmoid(-values, xp) - p)
    dx = dout.astype(xp.float64) * (pos * d_pos + neg * d_neg)
    return dx.astype(x.dtype)


def _focal_grad_maker(g):
    return [g.op("sigmoid_focal_loss_grad",
                 {"X": g.input("X"), "Label": g.input("Label"), "FgNum": g.input("FgNum"),
                  "Out@GRAD": g.output_grad("Out")},
                 {"X@GRAD": g.input_grad("X")})]


_focal_grad_maker.grad_type = "sigmoid_focal_loss_grad"
_FOCAL_ATTRS = {"gamma": ("float", 2.0), "alpha": ("float", 0.25)}

def_op("sigmoid_focal_loss", inputs=["X", "Label", "FgNum"], outputs=["Out"],
       attrs=_FOCAL_ATTRS,
       infer_shape=lambda ctx: ctx.set_output("Out", ctx.input_shape("X"),
                                              ctx.input_dtype("X")),
       grad=_focal_grad_maker, kernel=_sigmoid_focal_loss,
       doc="RetinaNet's focal loss, per column j (class j + 1) of X [N, C] with p = "
           "sigmoid(x) and g = Label[i] (0 background, -1 ignored): Out = -alpha (1-p)^gamma "
           "log p / FgNum where g = j + 1; -(1-alpha) p^gamma log(1-p) / FgNum where g is "
           "another class or background; 0 where g = -1. FgNum (the foreground count) is "
           "at least 1.")
def_op("sigmoid_focal_loss_grad", inputs=["X", "Label", "FgNum", "Out@GRAD"],
       outputs=["X@GRAD"], attrs=_FOCAL_ATTRS,
       infer_shape=grads_like(**{"X@GRAD": "X"}), kernel=_sigmoid_focal_loss_grad,
       doc="dX = dOut * d Out / dX of sigmoid_focal_loss.")


# --- yolov3_loss -------------------------------------------------------------------------------
def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def _sce(x, label):
    """Sigmoid cross entropy of logit x against a soft label."""
    return np.maximum(x, 0) - x * label + np.log1p(np.exp(-np.abs(x)))


def _center_iou(a, b):
    """IoU of two boxes given as (cx, cy, w, h)."""
    inter_w = min(a[0] + a[2] / 2, b[0] + b[2] / 2) - max(a[0] - a[2] / 2, b[0] - b[2] / 2)
    inter_h = min(a[1] + a[3] / 2, b[1] + b[3] / 2) - max(a[1] - a[3] / 2, b[1] - b[3] / 2)
    inter = 0.0 if inter_w < 0 or inter_h < 0 else inter_w * inter_h
    return inter / (a[2] * a[3] + b[2] * b[3] - inter)


def _yolo_terms(attrs, x, gt_box, gt_label, gt_score):
    """(loss [N], d loss / d x (same shape as x), objectness mask, gt match mask)."""
    n, _, h, w = x.shape
    anchors = attrs["anchors"]
    mask = list(attrs["anchor_mask"])
    classes = attrs["class_num"]
    input_size = attrs["downsample_ratio"] * h
    scale, bias = attrs["scale_x_y"], -0.5 * (attrs["scale_x_y"] - 1)
    label_pos, label_neg = 1.0, 0.0
    if attrs["use_label_smooth"]:
        smooth = min(1.0 / classes, 1.0 / 40)
        label_pos, label_neg = 1.0 - smooth, smooth
    values = x.reshape(n, len(mask), 5 + classes, h, w)
    grad = np.zeros_like(values)
    loss = np.zeros(n)
    objectness = np.zeros((n, len(mask), h, w))
    boxes = gt_box.shape[1]
    match = np.zeros((n, boxes), "int32")
    for i in range(n):
        valid = [t for t in range(boxes) if gt_box[i, t, 2] >= _EPS and gt_box[i, t, 3] >= _EPS]
        # predictions overlapping a ground truth beyond ignore_thresh are not negatives
        for j, an in enumerate(mask):
            for k in range(h):
                for col in range(w):
                    pred = ((col + _sigmoid(values[i, j, 0, k, col]) * scale + bias) / w,
                            (k + _sigmoid(values[i, j, 1, k, col]) * scale + bias) / h,
                            np.exp(values[i, j, 2, k, col]) * anchors[2 * an] / input_size,
                            np.exp(values[i, j, 3, k, col]) * anchors[2 * an + 1] / input_size)
                    best = max([_center_iou(pred, gt_box[i, t]) for t in valid] or [0.0])
                    if best > attrs["ignore_thresh"]:
                        objectness[i, j, k, col] = -1
        for t in range(boxes):
            if t not in valid:
                match[i, t] = -1
                continue
            gx, gy, gw, gh = gt_box[i, t]
            gi, gj = int(gx * w), int(gy * h)
            ious = [_center_iou((0, 0, anchors[2 * a] / input_size,
                                 anchors[2 * a + 1] / input_size), (0, 0, gw, gh))
                    for a in range(len(anchors) // 2)]
            best_n = int(np.argmax(ious))
            j = mask.index(best_n) if best_n in mask else -1
            match[i, t] = j
            if j < 0:
                continue
            score = gt_score[i, t] if gt_score is not None else 1.0
            v = values[i, j, :, gj, gi]
            weight = (2.0 - gw * gh) * score
            tx, ty = gx * w - gi, gy * h - gj
            tw = np.log(gw * input_size / anchors[2 * best_n])
            th = np.log(gh * input_size / anchors[2 * best_n + 1])
            loss[i] += (_sce(v[0], tx) + _sce(v[1], ty) + abs(v[2] - tw) + abs(v[3] - th)) \
                * weight
            grad[i, j, 0, gj, gi] += (_sigmoid(v[0]) - tx) * weight
            grad[i, j, 1, gj, gi] += (_sigmoid(v[1]) - ty) * weight
            grad[i, j, 2, gj, gi] += np.sign(v[2] - tw) * weight
            grad[i, j, 3, gj, gi] += np.sign(v[3] - th) * weight
            objectness[i, j, gj, gi] = score
            target = np.where(np.arange(classes) == gt_label[i, t], label_pos, label_neg)
            loss[i] += (_sce(v[5:], target) * score).sum()
            grad[i, j, 5:, gj, gi] += (_sigmoid(v[5:]) - target) * score
        obj_logits = values[i, :, 4]
        positive = objectness[i] > 1e-5
        negative = ~positive & (objectness[i] > -0.5)
        loss[i] += (_sce(obj_logits, 1.0) * objectness[i])[positive].sum() + \
            _sce(obj_logits, 0.0)[negative].sum()
        grad[i, :, 4] += np.where(positive, (_sigmoid(obj_logits) - 1.0) * objectness[i], 0.0) \
            + np.where(negative, _sigmoid(obj_logits), 0.0)
    return loss, grad.reshape(x.shape), objectness, match


def _check_yolo(attrs, x):
    mask, classes = attrs["anchor_mask"], attrs["class_num"]
    if x.ndim != 4 or x.shape[1] != len(mask) * (5 + classes):
        raise InvalidArgument(expected(
            "yolov3_loss", "input 'X'", f"[N, {len(mask)} * (5 + {classes}), H, W] (one "
            f"group per anchor of anchor_mask)", list(x.shape)))
    if any(m < 0 or 2 * m + 1 >= len(attrs["anchors"]) for m in mask):
        raise InvalidArgument(expected("yolov3_loss", "anchor_mask",
                                       f"indices of the {len(attrs['anchors']) // 2} anchors",
                                       list(mask)))


def _yolov3_loss(ctx, x, gt_box, gt_label, gt_score):
    values = host_array(x, "float64")
    _check_yolo(ctx.attrs, values)
    loss, _, objectness, match = _yolo_terms(
        ctx.attrs, values, host_array(gt_box, "float64"), host_array(gt_label),
        None if gt_score is None else host_array(gt_score, "float64"))
    dtype = dtype_of(x)
    xp = ctx.xp
    return (xp.asarray(loss.astype(dtype)), xp.asarray(objectness.astype(dtype)),
            xp.asarray(match))


def _yolov3_loss_grad(ctx, x, gt_box, gt_label, gt_score, dloss):
    values = host_array(x, "float64")
    _, grad, _, _ = _yolo_terms(ctx.attrs, values, host_array(gt_box, "float64"),
                                host_array(gt_label),
                                None if gt_score is None else host_array(gt_score, "float64"))
    dx = grad * host_array(dloss, "float64").reshape(-1, 1, 1, 1)
    return ctx.xp.asarray(dx.astype(dtype_of(x)))


def _yolov3_loss_infer(ctx):
    attrs = ctx.attrs()
    x, box = ctx.input_shape("X"), ctx.input_shape("GTBox")
    ctx.check(len(x) == 4, "input 'X' rank", "4 ([N, C, H, W])", len(x))
    ctx.check(len(box) == 3 and box[2] in (4, -1), "input 'GTBox'", "[N, B, 4]", list(box))
    ctx.set_output("Loss", (x[0],), ctx.input_dtype("X"))
    ctx.set_output("ObjectnessMask", (x[0], len(attrs["anchor_mask"]), x[2], x[3]),
                   ctx.input_dtype("X"))
    ctx.set_output("GTMatchMask", (box[0], box[1]), VarType.INT32)


def _yolov3_grad_maker(g):
    return [g.op("yolov3_loss_grad",
                 {"X": g.input("X"), "GTBox": g.input("GTBox"), "GTLabel": g.input("GTLabel"),
                  "GTScore": g.input("GTScore"), "Loss@GRAD": g.output_grad("Loss")},
                 {"X@GRAD": g.input_grad("X")})]


_yolov3_grad_maker.grad_type = "yolov3_loss_grad"
_YOLO_ATTRS = {"anchors": ("ints", None), "anchor_mask": ("ints", None),
               "class_num": ("int", None), "ignore_thresh": ("float", 0.7),
               "downsample_ratio": ("int", 32), "use_label_smooth": ("bool", True),
               "scale_x_y": ("float", 1.0)}

def_op("yolov3_loss", inputs=["X", "GTBox", "GTLabel", "GTScore?"],
       outputs=["Loss", "ObjectnessMask!", "GTMatchMask!"], attrs=_YOLO_ATTRS,
       infer_shape=_yolov3_loss_infer, grad=_yolov3_grad_maker, kernel=_yolov3_loss,
       host_reads=("X, GTBox, GTLabel, GTScore: each ground-truth box's anchor and cell are "
                   "chosen on the host"),
       doc="YOLOv3's loss per image. Each ground truth (GTBox rows (cx, cy, w, h) as "
           "fractions of the image; w or h 0 = padding) goes to the grid cell of its centre "
           "and the anchor of best shape IoU; if that anchor is in anchor_mask: sigmoid "
           "cross entropy on the cell offsets, L1 on log(size / anchor), both times (2 - w h) "
           "GTScore, and sigmoid cross entropy on the classes (labels smoothed to 1 - s / s "
           "with s = min(1 / class_num, 1 / 40) when use_label_smooth), times GTScore; "
           "objectness: target GTScore there, 0 where no prediction overlaps a ground truth "
           "beyond ignore_thresh.")
def_op("yolov3_loss_grad", inputs=["X", "GTBox", "GTLabel", "GTScore?", "Loss@GRAD"],
       outputs=["X@GRAD"], attrs=_YOLO_ATTRS,
       infer_shape=grads_like(**{"X@GRAD": "X"}), kernel=_yolov3_loss_grad,
       host_reads=("X, GTBox, GTLabel, GTScore: each ground-truth box's anchor and cell are "
                   "chosen on the host"),
       doc="dX = dLoss[n] * d Loss[n] / dX (the ignore mask held fixed).")
