"""Detection op family: prior boxes, box coding, IoU, non-maximum suppression, YOLO boxes
and clipping, as Paddle's detection kernels compute them. Boxes are [xmin, ymin, xmax,
ymax]; with ``normalized`` false a box's width counts its last pixel (x2 - x1 + 1). None of
these ops has a gradient except box_coder's decode, which is not differentiated here
either (Paddle's detection models train through other ops)."""
import numpy as np

from ..errors import Unimplemented, expected
from ..tensor.tensor import LoDTensor
from ..tensor.dtypes import VarType
from ..tensor.transfer import to_host
from ..framework.registry import def_op, no_gradient


def host_array(value, dtype=None):
    """A tensor's (or array's) values on the host, for the kernels whose per-box loops run
    there: one explicit copy from a device (none on the CPU); ``dtype`` casts."""
    array = to_host(value.array if isinstance(value, LoDTensor) else value)
    return array if dtype is None else array.astype(dtype, copy=False)


def dtype_of(value):
    """A tensor's (or array's) dtype, without reading its values."""
    return (value.array if isinstance(value, LoDTensor) else value).dtype


def _areas(boxes, normalized, xp=np):
    extra = 0.0 if normalized else 1.0
    return (xp.maximum(boxes[:, 2] - boxes[:, 0] + extra, 0)
            * xp.maximum(boxes[:, 3] - boxes[:, 1] + extra, 0))


def iou_matrix(a, b, normalized=True, xp=np):
    """IoU of every box of ``a`` [N, 4] with every box of ``b`` [M, 4]: [N, M] (``xp``:
    the arrays' module)."""
    extra = 0.0 if normalized else 1.0
    x1 = xp.maximum(a[:, None, 0], b[None, :, 0])
    y1 = xp.maximum(a[:, None, 1], b[None, :, 1])
    x2 = xp.minimum(a[:, None, 2], b[None, :, 2])
    y2 = xp.minimum(a[:, None, 3], b[None, :, 3])
    inter = xp.maximum(x2 - x1 + extra, 0) * xp.maximum(y2 - y1 + extra, 0)
    union = _areas(a, normalized, xp)[:, None] + _areas(b, normalized, xp)[None, :] - inter
    return xp.where(union > 0, inter / xp.where(union > 0, union, 1), 0.0)


# --- iou_similarity ---------------------------------------------------------------------------
def _iou_similarity(ctx, x, y):
    xp, xa = ctx.xp, x.array
    out = iou_matrix(xa.astype(xp.float64), y.array.astype(xp.float64),
                     ctx.attrs["box_normalized"], xp)
    return LoDTensor(out.astype(xa.dtype), x.lod())


def_op("iou_similarity", inputs=["X", "Y"], outputs=["Out"],
       attrs={"box_normalized": ("bool", True)},
       infer_shape=lambda ctx: ctx.set_output("Out", (ctx.input_shape("X")[0],
                                                      ctx.input_shape("Y")[0]),
                                              ctx.input_dtype("X")),
       grad=no_gradient, kernel=_iou_similarity, lod_aware=True,
       doc="Out[i, j] = area(X_i n Y_j) / area(X_i u Y_j); X keeps its LoD.")


# --- box_coder --------------------------------------------------------------------------------
def _centres(boxes, normalized):
    extra = 0.0 if normalized else 1.0
    w = boxes[..., 2] - boxes[..., 0] + extra
    h = boxes[..., 3] - boxes[..., 1] + extra
    return boxes[..., 0] + w / 2, boxes[..., 1] + h / 2, w, h


def _box_coder(ctx, prior, prior_var, target):
    a, xp = ctx.attrs, ctx.xp
    normalized = a["box_normalized"]
    prior = prior.astype(xp.float64)
    t = target.astype(xp.float64)
    if prior_var is not None:
        var = prior_var.astype(xp.float64)
    elif a["variance"]:
        var = xp.tile(xp.asarray(a["variance"], dtype=xp.float64), (len(prior), 1))
    else:
        var = xp.ones((len(prior), 4))
    pcx, pcy, pw, ph = _centres(prior, normalized)
    if a["code_type"] == "encode_center_size":
        _, _, tw, th = _centres(t, normalized)
        # a target's centre is its corners' midpoint, even in pixels (Paddle's rule)
        tcx, tcy = (t[:, 0] + t[:, 2]) / 2, (t[:, 1] + t[:, 3]) / 2
        out = xp.stack([(tcx[:, None] - pcx[None]) / pw[None] / var[None, :, 0],
                        (tcy[:, None] - pcy[None]) / ph[None] / var[None, :, 1],
                        xp.log(xp.abs(tw[:, None] / pw[None])) / var[None, :, 2],
                        xp.log(xp.abs(th[:, None] / ph[None])) / var[None, :, 3]], axis=-1)
    else:  # decode_center_size: prior j along dim 1 (axis 0) or dim 0 (axis 1)
        if t.ndim == 2:
            t = t[:, None, :]
        shape = (1, -1) if a["axis"] == 0 else (-1, 1)
        p = [v.reshape(shape) for v in (pcx, pcy, pw, ph)]
        v = [var[:, k].reshape(shape) for k in range(4)]
        cx = v[0] * t[..., 0] * p[2] + p[0]
        cy = v[1] * t[..., 1] * p[3] + p[1]
        w = xp.exp(v[2] * t[..., 2]) * p[2]
        h = xp.exp(v[3] * t[..., 3]) * p[3]
        extra = 0.0 if normalized else 1.0
        out = xp.stack([cx - w / 2, cy - h / 2, cx + w / 2 - extra, cy + h / 2 - extra],
                       axis=-1)
    return out.astype(target.dtype)


def _code_type(value):
    return None if value in ("encode_center_size", "decode_center_size") else \
        "encode_center_size or decode_center_size"


def _box_coder_infer(ctx):
    attrs = ctx.attrs()
    prior, target = ctx.input_shape("PriorBox"), ctx.input_shape("TargetBox")
    if attrs["code_type"] == "encode_center_size":
        shape = (target[0], prior[0], 4)
    else:
        shape = tuple(target) if len(target) == 3 else (target[0], prior[0], 4)
    ctx.set_output("OutputBox", shape, ctx.input_dtype("TargetBox"))


def_op("box_coder", inputs=["PriorBox", "PriorBoxVar?", "TargetBox"], outputs=["OutputBox"],
       attrs={"code_type": ("string", "encode_center_size", _code_type),
              "box_normalized": ("bool", True), "axis": ("int", 0),
              "variance": ("floats", [])},
       infer_shape=_box_coder_infer, grad=no_gradient, kernel=_box_coder,
       share_lod=("TargetBox", ["OutputBox"]),
       doc="encode: OutputBox[i, j] = ((tcx - pcx) / pw / v0, (tcy - pcy) / ph / v1, "
           "log(tw / pw) / v2, log(th / ph) / v3) of target i against prior j; decode: the "
           "inverse, prior j along dim 1 of TargetBox (axis 0) or dim 0 (axis 1); variances "
           "from PriorBoxVar, the variance attribute, or 1.")


# --- prior_box ----------------------------------------------------------------------------------
def _expanded_ratios(ratios, flip):
    out = [1.0]
    for r in ratios:
        if all(abs(r - e) >= 1e-6 for e in out):
            out.append(float(r))
            if flip:
                out.append(1.0 / r)
    return out


def _prior_box(ctx, feature, image):
    # the priors depend only on the attributes and the inputs' shapes: built on the host
    # (no device values read) and moved to the device once
    a = ctx.attrs
    fh, fw = feature.shape[2:]
    ih, iw = image.shape[2:]
    step_w = a["step_w"] or iw / fw
    step_h = a["step_h"] or ih / fh
    ratios = _expanded_ratios(a["aspect_ratios"], a["flip"])
    sizes = []  # (half width, half height) of each prior at a position, in Paddle's order
    for s, low in enumerate(a["min_sizes"]):
        square = [(low / 2, low / 2)]
        big = [(np.sqrt(low * a["max_sizes"][s]) / 2,) * 2] if a["max_sizes"] else []
        shaped = [(low * np.sqrt(r) / 2, low / np.sqrt(r) / 2) for r in ratios]
        if a["min_max_aspect_ratios_order"]:
            sizes += square + big + [(w, h) for r, (w, h) in zip(ratios, shaped)
                                     if abs(r - 1.0) >= 1e-6]
        else:
            sizes += shaped + big
    half = np.array(sizes)
    cx = (np.arange(fw) + a["offset"]) * step_w
    cy = (np.arange(fh) + a["offset"]) * step_h
    boxes = np.empty((fh, fw, len(half), 4))
    boxes[..., 0] = (cx[None, :, None] - half[None, None, :, 0]) / iw
    boxes[..., 1] = (cy[:, None, None] - half[None, None, :, 1]) / ih
    boxes[..., 2] = (cx[None, :, None] + half[None, None, :, 0]) / iw
    boxes[..., 3] = (cy[:, None, None] + half[None, None, :, 1]) / ih
    if a["clip"]:
        boxes = boxes.clip(0, 1)
    variances = np.broadcast_to(np.array(a["variances"]), boxes.shape)
    dtype = feature.dtype
    return ctx.xp.asarray(boxes.astype(dtype)), ctx.xp.asarray(variances.astype(dtype))


def _prior_count(attrs):
    ratios = _expanded_ratios(attrs["aspect_ratios"], attrs["flip"])
    return len(ratios) * len(attrs["min_sizes"]) + len(attrs["max_sizes"])


def _prior_box_infer(ctx):
    attrs = ctx.attrs()
    h, w = ctx.input_shape("Input")[2:]
    shape = (h, w, _prior_count(attrs), 4)
    ctx.set_output("Boxes", shape, ctx.input_dtype("Input"))
    ctx.set_output("Variances", shape, ctx.input_dtype("Input"))


def_op("prior_box", inputs=["Input", "Image"], outputs=["Boxes", "Variances"],
       attrs={"min_sizes": ("floats", None), "max_sizes": ("floats", []),
              "aspect_ratios": ("floats", [1.0]), "variances": ("floats", [0.1, 0.1, 0.2, 0.2]),
              "flip": ("bool", True), "clip": ("bool", True), "step_w": ("float", 0.0),
              "step_h": ("float", 0.0), "offset": ("float", 0.5),
              "min_max_aspect_ratios_order": ("bool", False)},
       infer_shape=_prior_box_infer, grad=no_gradient, kernel=_prior_box,
       doc="SSD's prior boxes: at each feature-map cell (centre (w + offset) step_w, (h + "
           "offset) step_h), one box per min size and aspect ratio (ratios 1, the given ones "
           "and, with flip, their inverses), plus sqrt(min max) squares; normalised by the "
           "image size, optionally clipped; Variances repeat the variances.")


# --- multiclass_nms --------------------------------------------------------------------------
def nms(boxes, scores, score_threshold, nms_threshold, top_k, eta, normalized):
    """Indices kept by greedy non-maximum suppression, best first (adaptive threshold:
    times eta after each kept box while above 0.5)."""
    order = [i for i in np.argsort(-scores, kind="stable") if scores[i] > score_threshold]
    if top_k > -1:
        order = order[:top_k]
    kept, threshold = [], nms_threshold
    for i in order:
        if all(iou_matrix(boxes[i:i + 1], boxes[j:j + 1], normalized)[0, 0] <= threshold
               for j in kept):
            kept.append(i)
            if eta < 1 and threshold > 0.5:
                threshold *= eta
    return kept


def _multiclass_nms_image(a, boxes, scores):
    """(label, score, box index) rows of one image, grouped by label, best first."""
    selected = {}
    for label in range(scores.shape[0]):
        if label == a["background_label"]:
            continue
        kept = nms(boxes, scores[label], a["score_threshold"], a["nms_threshold"],
                   a["nms_top_k"], a["nms_eta"], a["normalized"])
        if kept:
            selected[label] = kept
    pairs = sorted(((scores[label, i], label, i) for label, kept in selected.items()
                    for i in kept), key=lambda p: -p[0])
    if a["keep_top_k"] > -1:
        pairs = pairs[:a["keep_top_k"]]
    rows = []
    for label in sorted({p[1] for p in pairs}):
        rows += [(label, s, i) for s, l, i in pairs if l == label]
    return rows


def _multiclass_nms(ctx, bboxes, scores):
    a = ctx.attrs
    # greedy NMS keeps a data-dependent number of boxes: it runs on the host
    boxes_all = to_host(bboxes).astype("float64")
    scores_all = to_host(scores).astype("float64")
    if boxes_all.ndim != 3 or scores_all.ndim != 3:
        raise Unimplemented(expected(
            f"{ctx.op.type}", "BBoxes [N, M, 4] and Scores [N, C, M]", "(the per-class LoD "
            "form is not supported)", f"BBoxes {boxes_all.shape}, Scores {scores_all.shape}"))
    rows, index, offsets = [], [], [0]
    for n in range(len(scores_all)):
        image_rows = _multiclass_nms_image(a, boxes_all[n], scores_all[n])
        for label, score, i in image_rows:
            rows.append([label, score] + list(boxes_all[n, i]))
            index.append(n * boxes_all.shape[1] + i)
        offsets.append(len(rows))
    dtype = bboxes.dtype
    xp = ctx.xp
    if not rows:
        if ctx.wants("Index"):  # multiclass_nms2: empty results, every image empty
            return (LoDTensor(xp.asarray(np.zeros((0, 6), dtype)), [offsets]),
                    LoDTensor(xp.asarray(np.zeros((0, 1), "int32")), [offsets]))
        # nothing found anywhere: Fluid's single row of -1
        return LoDTensor(xp.asarray(np.array([[-1.0]], dtype)), [[0, 1]]), None
    return (LoDTensor(xp.asarray(np.array(rows, dtype)), [offsets]),
            LoDTensor(xp.asarray(np.array(index, "int32").reshape(-1, 1)), [offsets]))


_NMS_ATTRS = {"background_label": ("int", 0), "score_threshold": ("float", None),
              "nms_top_k": ("int", None), "nms_threshold": ("float", 0.3),
              "nms_eta": ("float", 1.0), "keep_top_k": ("int", None),
              "normalized": ("bool", True)}


_NMS_READS = "BBoxes, Scores: greedy NMS keeps a data-dependent number of boxes"


def _nms_infer(ctx):
    ctx.set_output("Out", (-1, 6), ctx.input_dtype("BBoxes"), lod_level=1)
    if ctx.has_output("Index"):
        ctx.set_output("Index", (-1, 1), VarType.INT32, lod_level=1)


def_op("multiclass_nms", inputs=["BBoxes", "Scores"], outputs=["Out"], attrs=_NMS_ATTRS,
       infer_shape=_nms_infer, grad=no_gradient,
       kernel=lambda ctx, b, s: _multiclass_nms(ctx, b, s)[0], lod_aware=False,
       traits={"runtime_outputs"}, host_reads=_NMS_READS,
       doc="Per image and class (but background_label): the boxes scoring above "
           "score_threshold, the nms_top_k best, greedy NMS at nms_threshold (adaptive with "
           "nms_eta); then the keep_top_k best over the classes. Out rows [label, score, "
           "xmin, ymin, xmax, ymax] grouped by label, LoD by image (one -1 row if nothing).")
def_op("multiclass_nms2", inputs=["BBoxes", "Scores"], outputs=["Out", "Index"],
       attrs=_NMS_ATTRS, infer_shape=_nms_infer, grad=no_gradient,
       kernel=_multiclass_nms, traits={"runtime_outputs"}, host_reads=_NMS_READS,
       doc="multiclass_nms, with Index: each kept box's row in BBoxes flattened over the "
           "images.")


# --- yolo_box ---------------------------------------------------------------------------------
def _sigmoid(v, xp=np):
    return 1 / (1 + xp.exp(-v))


def _yolo_box(ctx, x, img_size):
    a, xp = ctx.attrs, ctx.xp
    dtype = x.dtype
    x = x.astype(xp.float64)
    n, _, h, w = x.shape
    anchors = xp.asarray(a["anchors"], dtype=xp.float64).reshape(-1, 2)
    classes = a["class_num"]
    values = x.reshape(n, len(anchors), 5 + classes, h, w)
    sizes = img_size.astype(xp.float64).reshape(n, 2)  # (height, width)
    img_h, img_w = sizes[:, 0, None, None, None], sizes[:, 1, None, None, None]
    grid_x = xp.arange(w)[None, None, None, :]
    grid_y = xp.arange(h)[None, None, :, None]
    scale, bias = a["scale_x_y"], -0.5 * (a["scale_x_y"] - 1)
    cx = (grid_x + _sigmoid(values[:, :, 0], xp) * scale + bias) * img_w / w
    cy = (grid_y + _sigmoid(values[:, :, 1], xp) * scale + bias) * img_h / h
    # the network's input size along each axis (Paddle 2.x; 1.8 used the height for both)
    bw = xp.exp(values[:, :, 2]) * anchors[None, :, 0, None, None] * img_w / (
        a["downsample_ratio"] * w)
    bh = xp.exp(values[:, :, 3]) * anchors[None, :, 1, None, None] * img_h / (
        a["downsample_ratio"] * h)
    conf = _sigmoid(values[:, :, 4], xp)
    keep = conf >= a["conf_thresh"]
    boxes = xp.stack([cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2], axis=-1)
    if a["clip_bbox"]:
        boxes[..., 0] = xp.maximum(boxes[..., 0], 0)
        boxes[..., 1] = xp.maximum(boxes[..., 1], 0)
        boxes[..., 2] = xp.minimum(boxes[..., 2], img_w - 1)
        boxes[..., 3] = xp.minimum(boxes[..., 3], img_h - 1)
    boxes = xp.where(keep[..., None], boxes, 0.0)
    scores = xp.where(keep[:, :, None], conf[:, :, None] * _sigmoid(values[:, :, 5:], xp),
                      0.0)
    boxes = boxes.reshape(n, -1, 4)
    scores = scores.transpose(0, 1, 3, 4, 2).reshape(n, -1, classes)
    return boxes.astype(dtype), scores.astype(dtype)


def _yolo_box_infer(ctx):
    attrs = ctx.attrs()
    n, _, h, w = ctx.input_shape("X")
    count = len(attrs["anchors"]) // 2 * h * w if h > 0 and w > 0 else -1
    ctx.set_output("Boxes", (n, count, 4), ctx.input_dtype("X"))
    ctx.set_output("Scores", (n, count, attrs["class_num"]), ctx.input_dtype("X"))


def_op("yolo_box", inputs=["X", "ImgSize"], outputs=["Boxes", "Scores"],
       attrs={"anchors": ("ints", None), "class_num": ("int", None),
              "conf_thresh": ("float", 0.01), "downsample_ratio": ("int", 32),
              "clip_bbox": ("bool", True), "scale_x_y": ("float", 1.0)},
       infer_shape=_yolo_box_infer, grad=no_gradient, kernel=_yolo_box,
       doc="YOLOv3 boxes from X [N, A (5 + C), H, W]: centre (cell + s sigmoid(t) - (s - 1) "
           "/ 2) times the image size over the grid (s = scale_x_y), size e^t times the "
           "anchor over the input size (downsample_ratio times the grid), times the image; "
           "confidence sigmoid(t_obj) (boxes under conf_thresh zeroed); Scores = confidence "
           "times sigmoid(t_class); Boxes [N, A H W, 4] clipped to the image.")


# --- box_clip -----------------------------------------------------------------------------------
def _box_clip(ctx, boxes, im_info):
    xp = ctx.xp
    values = boxes.array.astype(xp.float64)
    info = im_info.array.astype(xp.float64)
    lod = boxes.lod()
    offsets = lod[0] if lod else [0, len(values)]
    # each box's image (the LoD is host metadata), so every image's bounds gather at once
    image = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    rows = info[xp.asarray(image)]
    h = xp.round(rows[:, 0] / rows[:, 2]).reshape((-1,) + (1,) * (values.ndim - 1))
    w = xp.round(rows[:, 1] / rows[:, 2]).reshape(h.shape)
    out = values.copy()
    out[..., 0::2] = xp.minimum(xp.maximum(out[..., 0::2], 0), w - 1)
    out[..., 1::2] = xp.minimum(xp.maximum(out[..., 1::2], 0), h - 1)
    return LoDTensor(out.astype(boxes.array.dtype), lod)


def_op("box_clip", inputs=["Input", "ImInfo"], outputs=["Output"],
       infer_shape=lambda ctx: ctx.set_output("Output", ctx.input_shape("Input"),
                                              ctx.input_dtype("Input")),
       grad=no_gradient, kernel=_box_clip, lod_aware=True,
       doc="Boxes of image n (LoD) clipped to [0, round(w / scale) - 1] x [0, round(h / "
           "scale) - 1], ImInfo rows (h, w, scale).")
