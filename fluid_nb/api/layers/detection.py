"""Detection layers of Fluid 1.8 built on one op each: box overlap (``iou_similarity``),
box coding (``box_coder``), SSD prior boxes (``prior_box``), non-maximum suppression
(``multiclass_nms``), YOLOv3 boxes (``yolo_box``), clipping (``box_clip``) and the mean
average precision of detections (``detection_map``).

Boxes are rows ``[xmin, ymin, xmax, ymax]``. With ``box_normalized``/``normalized`` true the
coordinates are fractions of the image; false means pixels, where a box's width counts its
last pixel (``xmax - xmin + 1``). None of these layers is differentiable (their outputs stop
gradients), as in Fluid.
"""
from ...errors import InvalidArgument, expected
from ...framework.program import Variable
from ..layer_helper import LayerHelper
from .arg_checks import Refused, boolean, checks, int_in, one_of, optional, real_in, variable

__all__ = ["iou_similarity", "box_coder", "prior_box", "multiclass_nms", "yolo_box",
           "box_clip", "detection_map"]


def _positive_reals(value):
    values = value if isinstance(value, (list, tuple)) else [value]
    if not values or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                             and v > 0 for v in values):
        raise Refused("a positive number or a list of positive numbers",
                      wrong_type=not all(isinstance(v, (int, float)) for v in values))


def _reals(value):
    values = value if isinstance(value, (list, tuple)) else [value]
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        raise Refused("a number or a list of numbers", wrong_type=True)


def _two_steps(value):
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise Refused("a list of two steps [step_w, step_h]",
                      wrong_type=not isinstance(value, (list, tuple)))


def _variance_source(value):
    if not isinstance(value, Variable) and not (
            isinstance(value, (list, tuple)) and len(value) == 4):
        raise Refused("a Variable [M, 4] or a list of 4 variances",
                      wrong_type=not isinstance(value, (list, tuple)))


def _as_list(value):
    return [float(v) for v in (value if isinstance(value, (list, tuple)) else [value])]


def _stopped(variable):
    variable.stop_gradient = True
    return variable


@checks(x=variable, y=variable, box_normalized=boolean)
def iou_similarity(x, y, box_normalized=True, name=None):
    """IoU of every box of ``x`` [N, 4] with every box of ``y`` [M, 4]: ``Out[i, j] =
    area(x_i n y_j) / area(x_i u y_j)``, [N, M], keeping ``x``'s LoD."""
    helper = LayerHelper("iou_similarity", name=name)
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(type="iou_similarity", inputs={"X": [x], "Y": [y]},
                     outputs={"Out": [out]}, attrs={"box_normalized": box_normalized})
    return _stopped(out)


@checks(prior_box=variable, prior_box_var=_variance_source, target_box=variable,
        code_type=one_of("encode_center_size", "decode_center_size"),
        box_normalized=boolean, axis=one_of(0, 1))
def box_coder(prior_box, prior_box_var, target_box, code_type="encode_center_size",
              box_normalized=True, name=None, axis=0):
    """Encode target boxes against prior boxes, or decode offsets back into boxes.

    With prior ``p`` (centre ``pcx, pcy``, size ``pw, ph``), variance ``v`` and target
    ``t``, ``encode_center_size`` gives [N targets, M priors, 4]::

        ((tcx - pcx) / pw / v0, (tcy - pcy) / ph / v1, log(tw / pw) / v2, log(th / ph) / v3)

    and ``decode_center_size`` inverts it for ``target_box`` [N, M, 4] (prior ``j`` along
    dim 1 with ``axis=0``, along dim 0 with ``axis=1``). ``prior_box_var`` is a Variable
    [M, 4] or a list of four variances shared by every prior.
    """
    helper = LayerHelper("box_coder", name=name)
    output_box = helper.create_variable_for_type_inference(dtype=prior_box.dtype)
    inputs = {"PriorBox": [prior_box], "TargetBox": [target_box]}
    attrs = {"code_type": code_type, "box_normalized": box_normalized, "axis": axis}
    if isinstance(prior_box_var, Variable):
        inputs["PriorBoxVar"] = [prior_box_var]
    else:
        attrs["variance"] = _as_list(prior_box_var)
    helper.append_op(type="box_coder", inputs=inputs, outputs={"OutputBox": [output_box]},
                     attrs=attrs)
    return output_box


@checks(input=variable, image=variable, min_sizes=_positive_reals,
        max_sizes=optional(_reals), aspect_ratios=_positive_reals, variance=_reals,
        flip=boolean, clip=boolean, steps=_two_steps, offset=real_in(0, 1),
        min_max_aspect_ratios_order=boolean)
def prior_box(input, image, min_sizes, max_sizes=None, aspect_ratios=[1.],
              variance=[0.1, 0.1, 0.2, 0.2], flip=False, clip=False, steps=[0.0, 0.0],
              offset=0.5, name=None, min_max_aspect_ratios_order=False):
    """SSD's prior (default) boxes of a feature map ``input`` [N, C, H, W] over ``image``
    [N, C', H', W']: at each cell, centred at ``((w + offset) step_w, (h + offset) step_h)``
    (steps default to the image size over the map size), one box per min size and aspect
    ratio (1, the given ratios and, with ``flip``, their inverses), plus a
    ``sqrt(min max)`` square per max size; coordinates normalised by the image size.

    Returns ``(boxes, variances)``, both [H, W, num_priors, 4].
    """
    helper = LayerHelper("prior_box", name=name)
    attrs = {"min_sizes": _as_list(min_sizes), "aspect_ratios": _as_list(aspect_ratios),
             "variances": _as_list(variance), "flip": flip, "clip": clip,
             "step_w": float(steps[0]), "step_h": float(steps[1]), "offset": float(offset),
             "min_max_aspect_ratios_order": min_max_aspect_ratios_order}
    max_sizes = _as_list(max_sizes) if max_sizes is not None else []
    if max_sizes and max_sizes[0] > 0:
        if len(max_sizes) != len(attrs["min_sizes"]):
            raise InvalidArgument(expected(
                "prior_box", "max_sizes",
                f"as many max sizes as min sizes ({len(attrs['min_sizes'])})", max_sizes))
        attrs["max_sizes"] = max_sizes
    boxes = helper.create_variable_for_type_inference(dtype=input.dtype)
    variances = helper.create_variable_for_type_inference(dtype=input.dtype)
    helper.append_op(type="prior_box", inputs={"Input": [input], "Image": [image]},
                     outputs={"Boxes": [boxes], "Variances": [variances]}, attrs=attrs)
    return _stopped(boxes), _stopped(variances)


@checks(bboxes=variable, scores=variable, score_threshold=real_in(),
        nms_top_k=int_in(-1), keep_top_k=int_in(-1), nms_threshold=real_in(0, 1),
        normalized=boolean, nms_eta=real_in(0, 1), background_label=int_in(-1))
def multiclass_nms(bboxes, scores, score_threshold, nms_top_k, keep_top_k, nms_threshold=0.3,
                   normalized=True, nms_eta=1., background_label=0, name=None):
    """Non-maximum suppression per image and class.

    ``bboxes`` [N, M, 4] and ``scores`` [N, C, M]. For each class but ``background_label``:
    the boxes scoring above ``score_threshold``, the ``nms_top_k`` best of them, then greedy
    suppression of any box whose IoU with a kept one exceeds ``nms_threshold`` (lowered by
    ``nms_eta`` after each kept box while above 0.5). Then the ``keep_top_k`` best over all
    classes. Returns rows ``[label, score, xmin, ymin, xmax, ymax]`` grouped by class, with
    one LoD level by image; a single row ``[-1]`` when nothing is found anywhere.
    """
    helper = LayerHelper("multiclass_nms", name=name)
    output = helper.create_variable_for_type_inference(dtype=bboxes.dtype)
    helper.append_op(type="multiclass_nms", inputs={"BBoxes": [bboxes], "Scores": [scores]},
                     outputs={"Out": [output]},
                     attrs={"background_label": background_label,
                            "score_threshold": float(score_threshold),
                            "nms_top_k": nms_top_k, "nms_threshold": float(nms_threshold),
                            "nms_eta": float(nms_eta), "keep_top_k": keep_top_k,
                            "normalized": normalized})
    return _stopped(output)


def _anchor_pairs(value):
    if not isinstance(value, (list, tuple)) or not value or len(value) % 2 or \
            not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise Refused("a list of anchor sizes [w0, h0, w1, h1, ...] (ints)",
                      wrong_type=not isinstance(value, (list, tuple)))


@checks(x=variable, img_size=variable, anchors=_anchor_pairs, class_num=int_in(1),
        conf_thresh=real_in(), downsample_ratio=int_in(1), clip_bbox=boolean)
def yolo_box(x, img_size, anchors, class_num, conf_thresh, downsample_ratio, clip_bbox=True,
             name=None):
    """YOLOv3's boxes and scores from a head ``x`` [N, A (5 + class_num), H, W] (A =
    len(anchors) / 2) and ``img_size`` [N, 2] int32 (height, width):

        cx = (j + sigmoid(tx)) W_img / W     w = e^tw anchor_w W_img / (downsample_ratio H)
        score = sigmoid(t_obj) sigmoid(t_class)   (boxes under conf_thresh are zero)

    Returns ``(boxes [N, A H W, 4], scores [N, A H W, class_num])``, boxes clipped to the
    image when ``clip_bbox``.
    """
    helper = LayerHelper("yolo_box", name=name)
    boxes = helper.create_variable_for_type_inference(dtype=x.dtype)
    scores = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(type="yolo_box", inputs={"X": [x], "ImgSize": [img_size]},
                     outputs={"Boxes": [boxes], "Scores": [scores]},
                     attrs={"anchors": list(anchors), "class_num": class_num,
                            "conf_thresh": float(conf_thresh),
                            "downsample_ratio": downsample_ratio, "clip_bbox": clip_bbox})
    return _stopped(boxes), _stopped(scores)


@checks(input=variable, im_info=variable)
def box_clip(input, im_info, name=None):
    """Clip each image's boxes (``input`` [M, 4] with one LoD level by image, or [N, M, 4])
    to that image: ``[0, round(w / scale) - 1] x [0, round(h / scale) - 1]`` from its
    ``im_info`` row ``(h, w, scale)``."""
    helper = LayerHelper("box_clip", name=name)
    output = helper.create_variable_for_type_inference(dtype=input.dtype)
    helper.append_op(type="box_clip", inputs={"Input": [input], "ImInfo": [im_info]},
                     outputs={"Output": [output]})
    return output


@checks(class_num=int_in(1), background_label=int_in(), overlap_threshold=real_in(0, 1),
        evaluate_difficult=boolean, ap_version=one_of("integral", "11point"))
def detection_map(detect_res, label, class_num, background_label=0, overlap_threshold=0.3,
                  evaluate_difficult=True, has_state=None, input_states=None,
                  out_states=None, ap_version="integral"):
    """The mean average precision of ``detect_res`` [M, 6] (label, score, box; LoD per
    image) against ``label`` [G, 6] (label, difficult, box) or [G, 5]: per class the area
    under the precision-recall curve (``integral``) or its 11-point mean, averaged over the
    classes with ground truth. With ``input_states`` (pos_count, true_pos, false_pos) and
    a non-zero ``has_state`` it continues from those counts; ``out_states`` receive the
    updated ones.

    Example::

        map_out = fluid.layers.detection_map(detect_res, label, class_num=21)
    """
    helper = LayerHelper("detection_map")
    out = helper.create_variable_for_type_inference(dtype="float32")
    states = list(out_states) if out_states is not None else [
        helper.create_variable_for_type_inference(dtype=dtype)
        for dtype in ("int32", "float32", "float32")]
    inputs = {"Label": [label], "DetectRes": [detect_res]}
    if has_state is not None:
        inputs["HasState"] = [has_state]
    if input_states is not None:
        inputs.update(PosCount=[input_states[0]], TruePos=[input_states[1]],
                      FalsePos=[input_states[2]])
    helper.append_op(type="detection_map", inputs=inputs,
                     outputs={"MAP": [out], "AccumPosCount": [states[0]],
                              "AccumTruePos": [states[1]], "AccumFalsePos": [states[2]]},
                     attrs={"overlap_threshold": float(overlap_threshold),
                            "evaluate_difficult": evaluate_difficult, "ap_type": ap_version,
                            "class_num": class_num, "background_label": background_label})
    return out
