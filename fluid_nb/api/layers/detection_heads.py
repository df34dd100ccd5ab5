"""Detection heads of Fluid 1.8: SSD's multi-scale head (``multi_box_head``) and its
decoding (``detection_output``), dense priors (``density_prior_box``), Faster R-CNN anchors
(``anchor_generator``), per-class decoding (``box_decoder_and_assign``), EAST's geometry
and NMS (``polygon_box_transform``, ``locality_aware_nms``), SOLOv2's ``matrix_nms`` and
RetinaNet's ``retinanet_detection_output``. Their outputs stop gradients, as in Fluid."""
import math

from ...errors import InvalidArgument, InvalidType, expected
from ..layer_helper import LayerHelper
from ...framework.type_checks import check_type
from . import manip, nn, tensor
from .arg_checks import (POSITIVE_INT, Refused, boolean, checks, int_in, int_typed, optional,
                         real_in, variable, variables)
from .detection import box_coder, prior_box

__all__ = ["density_prior_box", "multi_box_head", "detection_output", "anchor_generator",
           "polygon_box_transform", "box_decoder_and_assign", "matrix_nms",
           "locality_aware_nms", "retinanet_detection_output"]


def _as_list(value):
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _numbers(value):
    if not isinstance(value, (list, tuple)) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        raise Refused("a list of numbers", wrong_type=True)


def _number_or_numbers(value):
    _numbers(_as_list(value))


def _two_numbers(value):
    _numbers(value)
    if len(value) != 2:
        raise Refused("a list of two numbers (width, height)")


def _stopped(*variables):
    for v in variables:
        v.stop_gradient = True
    return variables if len(variables) > 1 else variables[0]


@checks(input=variable, image=variable, densities=_numbers, fixed_sizes=_numbers,
        fixed_ratios=_numbers, variance=_numbers, clip=boolean, steps=_two_numbers,
        offset=real_in(0, 1), flatten_to_2d=boolean)
def density_prior_box(input, image, densities=None, fixed_sizes=None, fixed_ratios=None,
                      variance=[0.1, 0.1, 0.2, 0.2], clip=False, steps=[0.0, 0.0],
                      offset=0.5, flatten_to_2d=False, name=None):
    """Dense prior boxes: at each cell of ``input`` [N, C, H, W], for each fixed size s
    (with density d) and ratio r, a d x d grid of boxes ``s sqrt(r) x s / sqrt(r)`` spread
    over the cell, normalised by ``image``'s size. Returns ``(boxes, variances)``, [H, W,
    sum(d^2) len(fixed_ratios), 4] or, with ``flatten_to_2d``, [-1, 4]."""
    if densities is None or fixed_sizes is None or fixed_ratios is None:
        raise InvalidArgument(expected("density_prior_box", "densities, fixed_sizes and "
                                       "fixed_ratios", "three lists", "None"))
    if len(densities) != len(fixed_sizes):
        raise InvalidArgument(expected("density_prior_box", "densities and fixed_sizes",
                                       "lists of one length",
                                       f"{len(densities)} and {len(fixed_sizes)}"))
    helper = LayerHelper("density_prior_box", name=name)
    boxes = helper.create_variable_for_type_inference(input.dtype)
    variances = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(
        type="density_prior_box", inputs={"Input": [input], "Image": [image]},
        outputs={"Boxes": [boxes], "Variances": [variances]},
        attrs={"variances": [float(v) for v in variance], "clip": clip,
               "step_w": float(steps[0]), "step_h": float(steps[1]), "offset": float(offset),
               "densities": [int(d) for d in densities],
               "fixed_sizes": [float(s) for s in fixed_sizes],
               "fixed_ratios": [float(r) for r in fixed_ratios],
               "flatten_to_2d": flatten_to_2d})
    return _stopped(boxes, variances)


@checks(inputs=variables, image=variable, base_size=POSITIVE_INT, num_classes=POSITIVE_INT,
        offset=real_in(0, 1), flip=boolean, clip=boolean, kernel_size=POSITIVE_INT,
        min_max_aspect_ratios_order=boolean)
def multi_box_head(inputs, image, base_size, num_classes, aspect_ratios, min_ratio=None,
                   max_ratio=None, min_sizes=None, max_sizes=None, steps=None, step_w=None,
                   step_h=None, offset=0.5, variance=[0.1, 0.1, 0.2, 0.2], flip=True,
                   clip=False, kernel_size=1, pad=0, stride=1, name=None,
                   min_max_aspect_ratios_order=False):
    """SSD's head over several feature maps: for each map, ``prior_box`` (min/max sizes
    from ``min_sizes``/``max_sizes``, or spread between ``min_ratio`` and ``max_ratio``
    percent of ``base_size`` when there are more than two maps) and two convolutions giving
    4 location offsets and ``num_classes`` scores per prior. Returns ``(mbox_locs [N,
    priors, 4], mbox_confs [N, priors, num_classes], boxes [priors, 4], variances)``
    (with one map, the locations and scores stay flat per image, as in Fluid)."""
    if not isinstance(inputs, (list, tuple)):
        raise InvalidType(expected("multi_box_head", "inputs", "a list of feature maps",
                                       type(inputs).__name__))
    layers = len(inputs)
    if layers <= 2:
        if min_sizes is None or max_sizes is None or len(min_sizes) != layers or \
                len(max_sizes) != layers:
            raise InvalidArgument(expected(
                "multi_box_head", "min_sizes and max_sizes",
                f"one per input ({layers}) when there are at most two inputs",
                f"{min_sizes} and {max_sizes}"))
    elif min_sizes is None and max_sizes is None:
        if min_ratio is None or max_ratio is None:
            raise InvalidArgument(expected("multi_box_head", "min_ratio and max_ratio",
                                           "ints when min_sizes and max_sizes are not given",
                                           f"{min_ratio} and {max_ratio}"))
        step = int(math.floor((max_ratio - min_ratio) / (layers - 2)))
        min_sizes = [base_size * .10] + [base_size * ratio / 100.
                                         for ratio in range(min_ratio, max_ratio + 1, step)]
        max_sizes = [base_size * .20] + [base_size * (ratio + step) / 100.
                                         for ratio in range(min_ratio, max_ratio + 1, step)]
    for what, value in (("aspect_ratios", aspect_ratios), ("step_w", step_w),
                        ("step_h", step_h), ("steps", steps)):
        if value is not None and (not isinstance(value, (list, tuple)) or
                                  len(value) != layers):
            raise InvalidArgument(expected("multi_box_head", what,
                                           f"a list with one entry per input ({layers})",
                                           value))
    if steps:
        step_w = step_h = steps
    locs, confs, boxes, variances = [], [], [], []
    for i, feature in enumerate(inputs):
        ratios = _as_list(aspect_ratios[i]) if aspect_ratios is not None else []
        box, var = prior_box(feature, image, _as_list(min_sizes[i]), _as_list(max_sizes[i]),
                             ratios, variance, flip, clip,
                             [step_w[i] if step_w else 0.0, step_h[i] if step_w else 0.0],
                             offset, None, min_max_aspect_ratios_order)
        boxes.append(box)
        variances.append(var)
        priors = box.shape[2]
        for outputs, width in ((locs, priors * 4), (confs, priors * num_classes)):
            conv = nn.conv2d(input=feature, num_filters=width, filter_size=kernel_size,
                             padding=pad, stride=stride)
            outputs.append(manip.flatten(manip.transpose(conv, perm=[0, 2, 3, 1]), axis=1))
    if layers == 1:
        box, var, loc, conf = boxes[0], variances[0], locs[0], confs[0]
    else:
        box = tensor.concat([manip.flatten(b, axis=3) for b in boxes])
        var = tensor.concat([manip.flatten(v, axis=3) for v in variances])
        loc = manip.reshape(tensor.concat(locs, axis=1), shape=[0, -1, 4])
        conf = manip.reshape(tensor.concat(confs, axis=1), shape=[0, -1, num_classes])
    _stopped(box, var)
    return loc, conf, box, var


@checks(loc=variable, scores=variable, prior_box=variable, prior_box_var=variable,
        background_label=int_in(-1), nms_threshold=real_in(0, 1), nms_top_k=int_in(-1),
        keep_top_k=int_in(-1), score_threshold=real_in(), nms_eta=real_in(0, 1),
        return_index=boolean)
def detection_output(loc, scores, prior_box, prior_box_var, background_label=0,
                     nms_threshold=0.3, nms_top_k=400, keep_top_k=200, score_threshold=0.01,
                     nms_eta=1.0, return_index=False):
    """SSD's detections: ``loc`` [N, priors, 4] decoded against the priors
    (``box_coder``), ``scores`` [N, priors, C] through softmax, then ``multiclass_nms``
    (``multiclass_nms2`` with ``return_index``). Returns rows [label, score, xmin, ymin,
    xmax, ymax] with one LoD level by image (and the kept boxes' indices)."""
    helper = LayerHelper("detection_output")
    decoded = box_coder(prior_box=prior_box, prior_box_var=prior_box_var, target_box=loc,
                        code_type="decode_center_size")
    scores = manip.transpose(nn.softmax(input=scores), perm=[0, 2, 1])
    scores.stop_gradient = True
    out = helper.create_variable_for_type_inference(dtype=decoded.dtype)
    attrs = {"background_label": background_label, "nms_threshold": float(nms_threshold),
             "nms_top_k": nms_top_k, "keep_top_k": keep_top_k,
             "score_threshold": float(score_threshold), "nms_eta": float(nms_eta)}
    inputs = {"Scores": [scores], "BBoxes": [decoded]}
    if return_index:
        index = helper.create_variable_for_type_inference(dtype="int32")
        helper.append_op(type="multiclass_nms2", inputs=inputs,
                         outputs={"Out": [out], "Index": [index]}, attrs=attrs)
        return _stopped(out, index)
    helper.append_op(type="multiclass_nms", inputs=inputs, outputs={"Out": [out]},
                     attrs=attrs)
    return _stopped(out)


@checks(input=variable, anchor_sizes=_number_or_numbers, aspect_ratios=_number_or_numbers,
        variance=_numbers, stride=_two_numbers, offset=real_in(0, 1))
def anchor_generator(input, anchor_sizes=None, aspect_ratios=None,
                     variance=[0.1, 0.1, 0.2, 0.2], stride=None, offset=0.5, name=None):
    """Faster R-CNN's anchors over ``input`` [N, C, H, W], in pixels: at cell (h, w),
    centred at ``(w s_w + offset (s_w - 1), h s_h + offset (s_h - 1))`` for ``stride`` (s_w,
    s_h), one anchor per aspect ratio and size (ratios outer). Returns ``(anchors,
    variances)``, [H, W, len(ratios) len(sizes), 4]."""
    if stride is None:
        raise InvalidArgument(expected("anchor_generator", "stride",
                                       "a list of two numbers (width, height)", None))
    helper = LayerHelper("anchor_generator", name=name)
    anchors = helper.create_variable_for_type_inference(input.dtype)
    variances = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(
        type="anchor_generator", inputs={"Input": [input]},
        outputs={"Anchors": [anchors], "Variances": [variances]},
        attrs={"anchor_sizes": [float(s) for s in _as_list(anchor_sizes or [])],
               "aspect_ratios": [float(r) for r in _as_list(aspect_ratios or [])],
               "variances": [float(v) for v in variance],
               "stride": [float(s) for s in stride], "offset": float(offset)})
    return _stopped(anchors, variances)


@checks(input=variable)
def polygon_box_transform(input, name=None):
    """EAST's geometry map to coordinates: ``out[n, c, h, w] = 4 w - input`` on even
    channels (x), ``4 h - input`` on odd ones (y)."""
    helper = LayerHelper("polygon_box_transform", name=name)
    output = helper.create_variable_for_type_inference(dtype=input.dtype)
    helper.append_op(type="polygon_box_transform", inputs={"Input": [input]},
                     outputs={"Output": [output]})
    return output


@checks(prior_box=variable, prior_box_var=variable, target_box=variable,
        box_score=variable, box_clip=real_in())
def box_decoder_and_assign(prior_box, prior_box_var, target_box, box_score, box_clip,
                           name=None):
    """Decode each RoI's per-class deltas ``target_box`` [R, 4 C] against ``prior_box``
    [R, 4] (pixels, variances ``prior_box_var`` [4], log-size deltas clipped at
    ``box_clip``), and pick each RoI's box of its best class but the background. Returns
    ``(decoded_box [R, 4 C], output_assign_box [R, 4])``."""
    helper = LayerHelper("box_decoder_and_assign", name=name)
    decoded = helper.create_variable_for_type_inference(dtype=prior_box.dtype)
    assigned = helper.create_variable_for_type_inference(dtype=prior_box.dtype)
    helper.append_op(type="box_decoder_and_assign",
                     inputs={"PriorBox": [prior_box], "PriorBoxVar": [prior_box_var],
                             "TargetBox": [target_box], "BoxScore": [box_score]},
                     outputs={"DecodeBox": [decoded], "OutputAssignBox": [assigned]},
                     attrs={"box_clip": float(box_clip)})
    return decoded, assigned


@checks(bboxes=variable, scores=variable, score_threshold=real_in(),
        post_threshold=real_in(), nms_top_k=int_in(-1), keep_top_k=int_in(-1),
        use_gaussian=boolean, gaussian_sigma=real_in(), background_label=int_in(-1),
        normalized=boolean, return_index=boolean)
def matrix_nms(bboxes, scores, score_threshold, post_threshold, nms_top_k, keep_top_k,
               use_gaussian=False, gaussian_sigma=2., background_label=0, normalized=True,
               return_index=False, name=None):
    """Matrix NMS (SOLOv2): instead of removing overlapping boxes, decay each box's score
    by its overlaps with better boxes, ``min_j (1 - iou_ij) / (1 - max_iou_j)`` (or the
    Gaussian form), in one pass per class; boxes whose decayed score stays above
    ``post_threshold`` are kept, then the ``keep_top_k`` best. ``bboxes`` [N, M, 4],
    ``scores`` [N, C, M]. Returns rows [label, decayed score, box], best first, one LoD
    level by image (and with ``return_index`` the rows' box indices)."""
    helper = LayerHelper("matrix_nms", name=name)
    output = helper.create_variable_for_type_inference(dtype=bboxes.dtype)
    index = helper.create_variable_for_type_inference(dtype="int32")
    helper.append_op(type="matrix_nms", inputs={"BBoxes": [bboxes], "Scores": [scores]},
                     outputs={"Out": [output], "Index": [index]},
                     attrs={"background_label": background_label,
                            "score_threshold": float(score_threshold),
                            "post_threshold": float(post_threshold), "nms_top_k": nms_top_k,
                            "gaussian_sigma": float(gaussian_sigma),
                            "use_gaussian": use_gaussian, "keep_top_k": keep_top_k,
                            "normalized": normalized})
    _stopped(output, index)
    return (output, index) if return_index else output


@checks(bboxes=variable, scores=variable, score_threshold=real_in(),
        nms_top_k=int_typed(int_in(-1)), keep_top_k=int_typed(int_in(-1)),
        nms_threshold=real_in(0, 1), normalized=boolean, nms_eta=real_in(0, 1),
        background_label=int_typed(int_in(-1)))
def locality_aware_nms(bboxes, scores, score_threshold, nms_top_k, keep_top_k,
                       nms_threshold=0.3, normalized=True, nms_eta=1., background_label=-1,
                       name=None):
    """EAST's locality-aware NMS: consecutive boxes overlapping beyond ``nms_threshold``
    merge first (score-weighted), then greedy NMS per class as ``multiclass_nms``.
    ``bboxes`` [N, M, 4], ``scores`` [N, C, M]. Returns rows [label, score, box] grouped
    by class, one LoD level by image."""
    for arg, value in (("score_threshold", score_threshold), ("nms_threshold", nms_threshold),
                       ("nms_eta", nms_eta)):
        check_type(value, arg, float, "locality_aware_nms")  # an int is refused, as in Fluid
    helper = LayerHelper("locality_aware_nms", name=name)
    output = helper.create_variable_for_type_inference(dtype=bboxes.dtype)
    helper.append_op(type="locality_aware_nms",
                     inputs={"BBoxes": [bboxes], "Scores": [scores]},
                     outputs={"Out": [output]},
                     attrs={"background_label": background_label,
                            "score_threshold": float(score_threshold),
                            "nms_top_k": nms_top_k, "nms_threshold": float(nms_threshold),
                            "nms_eta": float(nms_eta), "keep_top_k": keep_top_k,
                            "normalized": normalized})
    return _stopped(output)


@checks(bboxes=variables, scores=variables, anchors=variables, im_info=variable,
        score_threshold=real_in(), nms_top_k=int_in(-1), keep_top_k=int_in(-1),
        nms_threshold=real_in(0, 1), nms_eta=real_in(0, 1))
def retinanet_detection_output(bboxes, scores, anchors, im_info, score_threshold=0.05,
                               nms_top_k=1000, keep_top_k=100, nms_threshold=0.3,
                               nms_eta=1.0):
    """RetinaNet's detections from its FPN levels: ``bboxes`` (deltas [N, Mi, 4]),
    ``scores`` ([N, Mi, C], sigmoid outputs) and ``anchors`` ([Mi, 4]) per level, and
    ``im_info`` [N, 3] (height, width, scale). Per level the ``nms_top_k`` scores above
    ``score_threshold`` are decoded and scaled back to the image, NMS runs per class and
    the ``keep_top_k`` best stay. Returns rows [class + 1, score, box], one LoD level by
    image."""
    if not (len(bboxes) == len(scores) == len(anchors)):
        raise InvalidArgument(expected("retinanet_detection_output", "bboxes, scores and "
                                       "anchors", "one entry per level each",
                                       f"{len(bboxes)}, {len(scores)} and {len(anchors)}"))
    helper = LayerHelper("retinanet_detection_output")
    output = helper.create_variable_for_type_inference(dtype=scores[0].dtype)
    helper.append_op(type="retinanet_detection_output",
                     inputs={"BBoxes": list(bboxes), "Scores": list(scores),
                             "Anchors": list(anchors), "ImInfo": [im_info]},
                     outputs={"Out": [output]},
                     attrs={"score_threshold": float(score_threshold),
                            "nms_top_k": nms_top_k, "keep_top_k": keep_top_k,
                            "nms_threshold": float(nms_threshold), "nms_eta": float(nms_eta)})
    return _stopped(output)
