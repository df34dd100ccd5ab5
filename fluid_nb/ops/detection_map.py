"""``detection_map``: the mean average precision of detections against ground truth, over
one batch or accumulated over batches (the state ``fluid.metrics.DetectionMAP`` keeps).

Per class, each image's detections (highest score first, clipped to [0, 1]) are matched
to that image's ground-truth boxes of the class by IoU: a detection whose best overlap is
above ``overlap_threshold`` with a box not matched before is a true positive, otherwise a
false positive (a detection whose best box is difficult is left out unless
``evaluate_difficult``). Over all (score, tp, fp) records of a class sorted by score:

    precision_k = TP_k / (TP_k + FP_k),   recall_k = TP_k / positives

``integral`` AP = sum_k precision_k * (recall_k - recall_{k-1}); ``11point`` AP = the mean
over r in {0, 0.1, ..., 1} of the largest precision at recall >= r. mAP is the mean AP of
the classes with positives. As in Fluid 1.8 a class is skipped when its count of
positives equals ``background_label`` (with the default 0: classes without positives).

The state: ``AccumPosCount`` [class_num, 1] int32 (positives per class) and
``AccumTruePos`` / ``AccumFalsePos`` [records, 2] ``(score, flag)`` rows whose LoD groups
them by class. With ``HasState`` non-zero the op starts from ``PosCount`` / ``TruePos`` /
``FalsePos`` (the same variables in an accumulating program) instead of from nothing.
"""
import numpy as np

from ..errors import InvalidArgument, expected
from ..framework.infer import dims_match
from ..framework.registry import def_op, no_gradient
from ..tensor.dtypes import VarType
from ..tensor.tensor import LoDTensor
from ..tensor.transfer import to_host

_OP = "detection_map"
_AP_TYPES = ("integral", "11point")


def _ap_checker(value):
    return None if value in _AP_TYPES else "one of 'integral', '11point'"


def _infer(ctx):
    det, label = list(ctx.input_shape("DetectRes")), list(ctx.input_shape("Label"))
    ctx.check(len(det) == 2 and dims_match(det[1], 6), "input 'DetectRes'",
              "[M, 6] rows (label, score, xmin, ymin, xmax, ymax)", det)
    ctx.check(len(label) == 2 and (label[1] < 0 or label[1] in (5, 6)), "input 'Label'",
              "[G, 6] rows (label, difficult, box) or [G, 5] (label, box)", label)
    if ctx.has_input("PosCount"):
        for slot in ("TruePos", "FalsePos"):
            ctx.check(ctx.has_input(slot), f"input '{slot}'",
                      "a variable when PosCount is given", "none")
    dtype = ctx.input_dtype("DetectRes")
    ctx.set_output("MAP", (1,), dtype)
    ctx.set_output("AccumPosCount", (ctx.attr("class_num"), 1), VarType.INT32)
    ctx.set_output("AccumTruePos", (-1, 2), dtype, lod_level=1)
    ctx.set_output("AccumFalsePos", (-1, 2), dtype, lod_level=1)


def _offsets(tensor, where, rows):
    lod = tensor.lod()
    if not lod:
        return [0, rows]
    if len(lod) != 1:
        raise InvalidArgument(expected(_OP, f"input '{where}' LoD", "one level (per image)",
                                       f"{len(lod)} levels"))
    return list(lod[0])


def _iou(a, b):
    if b[0] > a[2] or b[2] < a[0] or b[1] > a[3] or b[3] < a[1]:
        return 0.0
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    inter = w * h
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def _by_label(rows, start, stop, make):
    groups = {}
    for i in range(start, stop):
        groups.setdefault(int(rows[i, 0]), []).append(make(rows[i]))
    return dict(sorted(groups.items()))


def _restore(pos_count, true_pos, false_pos, class_num):
    """The state tensors as {label: positives} and {label: [(score, flag)]} (a class with
    no records has no entry, which the mAP tells apart from one with records)."""
    counts = to_host(pos_count.array).reshape(-1)
    positives = {i: int(counts[i]) for i in range(class_num)}
    records = []
    for tensor, slot in ((true_pos, "TruePos"), (false_pos, "FalsePos")):
        values = to_host(tensor.array).reshape(-1, 2) if tensor.array is not None else \
            np.zeros((0, 2))
        offsets = _offsets(tensor, slot, len(values))
        table = {}
        for label in range(len(offsets) - 1):
            for j in range(offsets[label], offsets[label + 1]):
                table.setdefault(label, []).append((values[j, 0], int(values[j, 1])))
        records.append(table)
    return positives, records[0], records[1]


def _match(gt, detections, evaluate_difficult, threshold, true_pos, false_pos):
    """Append one image's (score, flag) records to true_pos / false_pos."""
    for label, preds in detections.items():
        boxes = gt.get(label)
        tp, fp = true_pos.setdefault(label, []), false_pos.setdefault(label, [])
        if not boxes:  # nothing of this class here: every detection is a false positive
            for score, _ in preds:
                tp.append((score, 0))
                fp.append((score, 1))
            continue
        visited = [False] * len(boxes)
        for score, box in sorted(preds, key=lambda p: -p[0]):
            box = np.clip(box, 0.0, 1.0)
            overlaps = [_iou(box, gt_box) for gt_box, _ in boxes]
            best = int(np.argmax(overlaps))
            if overlaps[best] <= threshold:
                tp.append((score, 0))
                fp.append((score, 1))
            elif evaluate_difficult or not boxes[best][1]:
                hit = not visited[best]
                visited[best] = True
                tp.append((score, int(hit)))
                fp.append((score, int(not hit)))


def _accumulate(records, dtype):
    ordered = sorted(records, key=lambda r: -r[0])  # stable: ties keep their order
    return np.cumsum([flag for _, flag in ordered]).astype(dtype)


def _average_precision(ap_type, positives, tp_records, fp_records, dtype):
    tp, fp = _accumulate(tp_records, dtype), _accumulate(fp_records, dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = (tp / (tp + fp)).astype(dtype)
        recall = (tp / dtype.type(positives)).astype(dtype)
    if ap_type == "11point":
        best = [0.0] * 11
        start = len(tp) - 1
        for j in range(10, -1, -1):
            for i in range(start, -1, -1):
                if recall[i] < j / 10.0:
                    start = i
                    if j > 0:
                        best[j - 1] = best[j]
                    break
                best[j] = max(best[j], float(precision[i]))
        return sum(b / 11 for b in best)
    total, previous = np.float32(0.0), np.float32(0.0)
    for p, r in zip(precision, recall):
        if abs(r - previous) > 1e-6:
            total += np.float32(p * abs(r - previous))
        previous = np.float32(r)
    return float(total)


def _mean_ap(ap_type, positives, true_pos, false_pos, background, dtype):
    total, classes = 0.0, 0
    for label, count in sorted(positives.items()):
        if count == background:
            continue
        classes += 1
        if label not in true_pos:
            continue
        fp = false_pos.get(label, [])
        if len(fp) != len(true_pos[label]):
            raise InvalidArgument(expected(_OP, f"TruePos and FalsePos records of class "
                                                f"{label}", "as many of each",
                                           f"{len(true_pos[label])} and {len(fp)}"))
        total += _average_precision(ap_type, count, true_pos[label], fp, dtype)
    return total / classes if classes else 0.0


def _pack(table, class_num, dtype, xp):
    rows, offsets = [], [0]
    for label in range(class_num):
        rows.extend(table.get(label, []))
        offsets.append(len(rows))
    values = np.array(rows, dtype).reshape(-1, 2)
    return LoDTensor(xp.asarray(values), [offsets])


def _detection_map(ctx, detect, label, has_state, pos_count, true_pos, false_pos):
    a = ctx.attrs
    class_num, threshold = a["class_num"], a["overlap_threshold"]
    evaluate_difficult = a["evaluate_difficult"]
    det = to_host(detect.array)
    dtype = det.dtype if det.dtype.kind == "f" else np.dtype("float32")
    gt_rows = to_host(label.array).astype("float64")
    det = det.astype("float64")
    if gt_rows.ndim != 2 or gt_rows.shape[1] not in (5, 6):
        raise InvalidArgument(expected(_OP, "input 'Label'", "[G, 5] or [G, 6] rows",
                                       list(gt_rows.shape)))
    gt_offsets = _offsets(label, "Label", len(gt_rows))
    det_offsets = _offsets(detect, "DetectRes", len(det))
    if len(gt_offsets) != len(det_offsets):
        raise InvalidArgument(expected(_OP, "inputs 'Label' and 'DetectRes' LoD",
                                       "the same number of images",
                                       f"{len(gt_offsets) - 1} and {len(det_offsets) - 1}"))
    state = has_state is not None and has_state.array is not None and \
        int(to_host(has_state.array).reshape(-1)[0]) != 0
    if state and pos_count is not None and pos_count.array is not None:
        positives, tp_records, fp_records = _restore(pos_count, true_pos, false_pos,
                                                     class_num)
    else:
        positives, tp_records, fp_records = {}, {}, {}
    difficult_col = gt_rows.shape[1] == 6
    box_at = 2 if difficult_col else 1
    images = len(gt_offsets) - 1
    gts = [_by_label(gt_rows, gt_offsets[n], gt_offsets[n + 1],
                     lambda r: (r[box_at:box_at + 4],
                                difficult_col and abs(r[1]) >= 1e-6))
           for n in range(images)]
    for gt in gts:
        for cls, boxes in gt.items():
            count = sum(1 for _, difficult in boxes if evaluate_difficult or not difficult)
            if count:
                positives[cls] = positives.get(cls, 0) + count
    for n in range(images):
        detections = _by_label(det, det_offsets[n], det_offsets[n + 1],
                               lambda r: (r[1], r[2:6]))
        _match(gts[n], detections, evaluate_difficult, threshold, tp_records, fp_records)
    positives = dict(sorted(positives.items()))
    mean_ap = _mean_ap(a["ap_type"], positives, tp_records, fp_records,
                       a["background_label"], dtype)
    xp = ctx.xp
    counts = np.array([positives.get(i, 0) for i in range(class_num)], "int32")
    counts = counts.reshape(class_num, 1)
    return (xp.asarray(counts), _pack(tp_records, class_num, dtype, xp),
            _pack(fp_records, class_num, dtype, xp), xp.asarray(np.array([mean_ap], dtype)))


def_op(_OP, inputs=["DetectRes", "Label", "HasState?", "PosCount?", "TruePos?", "FalsePos?"],
       outputs=["AccumPosCount", "AccumTruePos", "AccumFalsePos", "MAP"],
       attrs={"class_num": ("int", None),
              "background_label": ("int", 0),
              "overlap_threshold": ("float", 0.5),
              "evaluate_difficult": ("bool", True),
              "ap_type": ("string", "integral", _ap_checker)},
       infer_shape=_infer, grad=no_gradient, kernel=_detection_map, lod_aware=True,
       host_reads="all inputs: matching and ranking detections runs on the host",
       doc="MAP = mean over classes of the average precision of the detections DetectRes "
           "[M, 6] (label, score, box; LoD per image) against Label [G, 6] (label, "
           "difficult, box) or [G, 5]; 'integral' or '11point' AP. Accum* hold the "
           "positives per class and the (score, tp/fp) records, continued from PosCount/"
           "TruePos/FalsePos when HasState is non-zero.")
