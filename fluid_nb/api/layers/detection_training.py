"""Fluid 1.8's layers for training two-stage and RetinaNet detectors: the anchors an RPN or
RetinaNet head learns from (``rpn_target_assign``, ``retinanet_target_assign``), the
proposals a Faster/Mask R-CNN box head samples (``generate_proposal_labels``), their mask
targets (``generate_mask_labels``), and ``roi_perspective_transform``."""
from ..layer_helper import LayerHelper
from . import manip
from .arg_checks import (POSITIVE_INT, Refused, boolean, checks, float_typed, int_typed, optional,
                         real_in, variable)

__all__ = ["rpn_target_assign", "retinanet_target_assign", "generate_proposal_labels",
           "roi_perspective_transform", "generate_mask_labels"]

_OVERLAP = real_in(0.0, 1.0, want="an overlap in [0, 1]")


def _four_numbers(value):
    if not isinstance(value, (list, tuple)) or len(value) != 4 or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        raise Refused("a list of 4 numbers", wrong_type=not isinstance(value, (list, tuple)))


def _positive_number(value):
    real_in(want="a number > 0")(value)
    if value <= 0:
        raise Refused("a number > 0")


def _no_gradient(*variables):
    for var in variables:
        var.stop_gradient = True


def _pick_predictions(cls_logits, bbox_pred, classes, score_index, loc_index):
    """The predictions the targets are for: logits [.., classes] and box deltas [.., 4]
    flattened to rows and gathered at the sampled anchors."""
    cls_rows = manip.reshape(x=cls_logits, shape=(-1, classes))
    bbox_rows = manip.reshape(x=bbox_pred, shape=(-1, 4))
    return manip.gather(cls_rows, score_index), manip.gather(bbox_rows, loc_index)


@checks(bbox_pred=variable, cls_logits=variable, anchor_box=variable, anchor_var=variable,
        gt_boxes=variable, is_crowd=variable, im_info=variable,
        rpn_batch_size_per_im=POSITIVE_INT, rpn_straddle_thresh=real_in(),
        rpn_fg_fraction=real_in(0.0, 1.0), rpn_positive_overlap=_OVERLAP,
        rpn_negative_overlap=_OVERLAP, use_random=boolean)
def rpn_target_assign(bbox_pred, cls_logits, anchor_box, anchor_var, gt_boxes, is_crowd,
                      im_info, rpn_batch_size_per_im=256, rpn_straddle_thresh=0.0,
                      rpn_fg_fraction=0.5, rpn_positive_overlap=0.7,
                      rpn_negative_overlap=0.3, use_random=True):
    """Faster R-CNN's RPN targets (op ``rpn_target_assign``): per image, an anchor is
    foreground when it is a ground truth's best anchor or its IoU with one is >=
    ``rpn_positive_overlap``, background when its best IoU < ``rpn_negative_overlap``;
    ``rpn_batch_size_per_im`` anchors are sampled, at most ``rpn_fg_fraction`` of them
    foreground. Anchors reaching past the image by more than ``rpn_straddle_thresh`` pixels
    are ignored (-1 keeps all). Crowd ground truths (``is_crowd``) are ignored.

    Returns ``(predicted_scores [F+B, 1], predicted_location [F, 4], target_label [F+B, 1]
    int32, target_bbox [F, 4], bbox_inside_weight [F, 4])``: the predictions gathered at
    the sampled anchors and their targets, ``target_bbox`` the deltas
    ((gx - ax) / aw, (gy - ay) / ah, log(gw / aw), log(gh / ah)) in pixels.

    Example::

        scores, loc, label, target, weight = fluid.layers.rpn_target_assign(
            bbox_pred, cls_logits, anchors, variances, gt_boxes, is_crowd, im_info)
        loss = fluid.layers.sigmoid_cross_entropy_with_logits(
            scores, fluid.layers.cast(label, "float32"))
    """
    helper = LayerHelper("rpn_target_assign")
    loc_index = helper.create_variable_for_type_inference(dtype="int32")
    score_index = helper.create_variable_for_type_inference(dtype="int32")
    target_label = helper.create_variable_for_type_inference(dtype="int32")
    target_bbox = helper.create_variable_for_type_inference(dtype=anchor_box.dtype)
    bbox_inside_weight = helper.create_variable_for_type_inference(dtype=anchor_box.dtype)
    helper.append_op(
        type="rpn_target_assign",
        inputs={"Anchor": [anchor_box], "GtBoxes": [gt_boxes], "IsCrowd": [is_crowd],
                "ImInfo": [im_info]},
        outputs={"LocationIndex": [loc_index], "ScoreIndex": [score_index],
                 "TargetLabel": [target_label], "TargetBBox": [target_bbox],
                 "BBoxInsideWeight": [bbox_inside_weight]},
        attrs={"rpn_batch_size_per_im": rpn_batch_size_per_im,
               "rpn_straddle_thresh": float(rpn_straddle_thresh),
               "rpn_positive_overlap": float(rpn_positive_overlap),
               "rpn_negative_overlap": float(rpn_negative_overlap),
               "rpn_fg_fraction": float(rpn_fg_fraction), "use_random": use_random})
    _no_gradient(loc_index, score_index, target_label, target_bbox, bbox_inside_weight)
    scores, location = _pick_predictions(cls_logits, bbox_pred, 1, score_index, loc_index)
    return scores, location, target_label, target_bbox, bbox_inside_weight


@checks(bbox_pred=variable, cls_logits=variable, anchor_box=variable, anchor_var=variable,
        gt_boxes=variable, gt_labels=variable, is_crowd=variable, im_info=variable,
        num_classes=POSITIVE_INT, positive_overlap=_OVERLAP, negative_overlap=_OVERLAP)
def retinanet_target_assign(bbox_pred, cls_logits, anchor_box, anchor_var, gt_boxes,
                            gt_labels, is_crowd, im_info, num_classes=1,
                            positive_overlap=0.5, negative_overlap=0.4):
    """RetinaNet's targets (op ``retinanet_target_assign``): rpn_target_assign's rule over
    every anchor with no sampling; a foreground anchor's label is its best ground truth's
    class (``gt_labels``), background 0.

    Returns ``(predicted_scores [F+B, num_classes], predicted_location [F, 4], target_label
    [F+B, 1] int32, target_bbox [F, 4], bbox_inside_weight [F, 4], fg_num [N, 1] int32)``;
    ``fg_num`` (foreground anchors + 1 per image) normalises ``sigmoid_focal_loss``.

    Example::

        scores, loc, label, target, weight, fg_num = \\
            fluid.layers.retinanet_target_assign(bbox_pred, cls_logits, anchors, variances,
                                                 gt_boxes, gt_labels, is_crowd, im_info,
                                                 num_classes=80)
        loss = fluid.layers.sigmoid_focal_loss(scores, label, fg_num)
    """
    helper = LayerHelper("retinanet_target_assign")
    loc_index = helper.create_variable_for_type_inference(dtype="int32")
    score_index = helper.create_variable_for_type_inference(dtype="int32")
    target_label = helper.create_variable_for_type_inference(dtype="int32")
    target_bbox = helper.create_variable_for_type_inference(dtype=anchor_box.dtype)
    bbox_inside_weight = helper.create_variable_for_type_inference(dtype=anchor_box.dtype)
    fg_num = helper.create_variable_for_type_inference(dtype="int32")
    helper.append_op(
        type="retinanet_target_assign",
        inputs={"Anchor": [anchor_box], "GtBoxes": [gt_boxes], "GtLabels": [gt_labels],
                "IsCrowd": [is_crowd], "ImInfo": [im_info]},
        outputs={"LocationIndex": [loc_index], "ScoreIndex": [score_index],
                 "TargetLabel": [target_label], "TargetBBox": [target_bbox],
                 "BBoxInsideWeight": [bbox_inside_weight], "ForegroundNumber": [fg_num]},
        attrs={"positive_overlap": float(positive_overlap),
               "negative_overlap": float(negative_overlap)})
    _no_gradient(loc_index, score_index, target_label, target_bbox, bbox_inside_weight,
                 fg_num)
    scores, location = _pick_predictions(cls_logits, bbox_pred, num_classes, score_index,
                                         loc_index)
    return scores, location, target_label, target_bbox, bbox_inside_weight, fg_num


@checks(rpn_rois=variable, gt_classes=variable, is_crowd=variable, gt_boxes=variable,
        im_info=variable, batch_size_per_im=POSITIVE_INT, fg_fraction=real_in(0.0, 1.0),
        fg_thresh=real_in(), bg_thresh_hi=real_in(), bg_thresh_lo=real_in(),
        bbox_reg_weights=_four_numbers,
        class_nums=optional(POSITIVE_INT), use_random=boolean, is_cls_agnostic=boolean,
        is_cascade_rcnn=boolean)
def generate_proposal_labels(rpn_rois, gt_classes, is_crowd, gt_boxes, im_info,
                             batch_size_per_im=256, fg_fraction=0.25, fg_thresh=0.25,
                             bg_thresh_hi=0.5, bg_thresh_lo=0.0,
                             bbox_reg_weights=[0.1, 0.1, 0.2, 0.2], class_nums=None,
                             use_random=True, is_cls_agnostic=False, is_cascade_rcnn=False):
    """The RoIs a Faster R-CNN box head trains on (op ``generate_proposal_labels``): per
    image, the ground truths and ``rpn_rois`` / scale are the candidates; foreground when
    the best pixel IoU >= ``fg_thresh``, background when in [``bg_thresh_lo``,
    ``bg_thresh_hi``); ``batch_size_per_im`` are sampled, at most ``fg_fraction`` of them
    foreground (none sampled with ``is_cascade_rcnn``).

    Returns ``(rois [P, 4], labels_int32 [P, 1], bbox_targets [P, 4 * class_nums],
    bbox_inside_weights, bbox_outside_weights)``: a foreground RoI's targets are the deltas
    to its ground truth divided by ``bbox_reg_weights``, in the four columns of its class
    (of class 1 with ``is_cls_agnostic``), with weights 1 there.

    Example::

        rois, labels, targets, inside, outside = fluid.layers.generate_proposal_labels(
            rpn_rois, gt_classes, is_crowd, gt_boxes, im_info, class_nums=81)
    """
    helper = LayerHelper("generate_proposal_labels")
    rois = helper.create_variable_for_type_inference(dtype=rpn_rois.dtype)
    labels_int32 = helper.create_variable_for_type_inference(dtype=gt_classes.dtype)
    bbox_targets = helper.create_variable_for_type_inference(dtype=rpn_rois.dtype)
    bbox_inside_weights = helper.create_variable_for_type_inference(dtype=rpn_rois.dtype)
    bbox_outside_weights = helper.create_variable_for_type_inference(dtype=rpn_rois.dtype)
    attrs = {"batch_size_per_im": batch_size_per_im, "fg_fraction": float(fg_fraction),
             "fg_thresh": float(fg_thresh), "bg_thresh_hi": float(bg_thresh_hi),
             "bg_thresh_lo": float(bg_thresh_lo),
             "bbox_reg_weights": [float(w) for w in bbox_reg_weights],
             "use_random": use_random, "is_cls_agnostic": is_cls_agnostic,
             "is_cascade_rcnn": is_cascade_rcnn}
    if class_nums is not None:
        attrs["class_nums"] = class_nums
    helper.append_op(
        type="generate_proposal_labels",
        inputs={"RpnRois": [rpn_rois], "GtClasses": [gt_classes], "IsCrowd": [is_crowd],
                "GtBoxes": [gt_boxes], "ImInfo": [im_info]},
        outputs={"Rois": [rois], "LabelsInt32": [labels_int32],
                 "BboxTargets": [bbox_targets], "BboxInsideWeights": [bbox_inside_weights],
                 "BboxOutsideWeights": [bbox_outside_weights]},
        attrs=attrs)
    outputs = (rois, labels_int32, bbox_targets, bbox_inside_weights, bbox_outside_weights)
    _no_gradient(*outputs)
    return outputs


@checks(input=variable, rois=variable, transformed_height=int_typed(POSITIVE_INT),
        transformed_width=int_typed(POSITIVE_INT),
        spatial_scale=float_typed(_positive_number), name=optional(lambda v: None))
def roi_perspective_transform(input, rois, transformed_height, transformed_width,
                              spatial_scale=1.0, name=None):
    """Warp each quadrilateral RoI of ``input`` (NCHW) onto a ``transformed_height`` x
    ``transformed_width`` grid (op ``roi_perspective_transform``), as text-detection
    heads read rotated words. ``rois`` [R, 8] (one LoD level by image) holds the corners
    (x0, y0) top left, (x1, y1) top right, (x2, y2) bottom right, (x3, y3) bottom left,
    multiplied by ``spatial_scale``. Output pixel (w, h) samples the RoI's image
    bilinearly at (u / s, v / s), where (u, v, s) = M (w, h, 1) and M maps the grid's
    corners to the quad's; pixels outside the quad or the map are 0.

    Returns ``(out [R, C, H, W], mask [R, 1, H, W] int32, transform_matrix [R, 9])``;
    ``out`` has a gradient with respect to ``input``.

    Example::

        words, mask, matrix = fluid.layers.roi_perspective_transform(
            feature, quads, transformed_height=8, transformed_width=64, spatial_scale=0.25)
    """
    helper = LayerHelper("roi_perspective_transform", name=name)
    dtype = input.dtype
    out = helper.create_variable_for_type_inference(dtype)
    mask = helper.create_variable_for_type_inference(dtype="int32")
    transform_matrix = helper.create_variable_for_type_inference(dtype)
    out2in_idx = helper.create_variable_for_type_inference(dtype="int32")
    out2in_w = helper.create_variable_for_type_inference(dtype)
    helper.append_op(
        type="roi_perspective_transform", inputs={"X": [input], "ROIs": [rois]},
        outputs={"Out": [out], "Out2InIdx": [out2in_idx], "Out2InWeights": [out2in_w],
                 "Mask": [mask], "TransformMatrix": [transform_matrix]},
        attrs={"transformed_height": transformed_height,
               "transformed_width": transformed_width,
               "spatial_scale": float(spatial_scale)})
    return out, mask, transform_matrix


@checks(im_info=variable, gt_classes=variable, is_crowd=variable, gt_segms=variable,
        rois=variable, labels_int32=variable, num_classes=POSITIVE_INT,
        resolution=POSITIVE_INT)
def generate_mask_labels(im_info, gt_classes, is_crowd, gt_segms, rois, labels_int32,
                         num_classes, resolution):
    """Mask R-CNN's mask targets (op ``generate_mask_labels``): each foreground RoI
    (``labels_int32`` > 0, from generate_proposal_labels) takes the non-crowd object whose
    polygons' box it overlaps most, and that object's polygons (``gt_segms`` [S, 2], LoD
    levels: objects by image, polygons by object, points by polygon) are rasterised inside
    the RoI at ``resolution`` x ``resolution`` (COCO's polygon rule).

    Returns ``(mask_rois [P, 4], roi_has_mask_int32 [P, 1], mask_int32 [P, num_classes *
    resolution^2])``: the foreground RoIs, their row among the image's RoIs, and the mask
    in the block of the RoI's class, -1 elsewhere.

    Example::

        mask_rois, has_mask, mask_int32 = fluid.layers.generate_mask_labels(
            im_info, gt_classes, is_crowd, gt_segms, rois, labels_int32,
            num_classes=81, resolution=14)
    """
    helper = LayerHelper("generate_mask_labels")
    mask_rois = helper.create_variable_for_type_inference(dtype=rois.dtype)
    roi_has_mask_int32 = helper.create_variable_for_type_inference(dtype=gt_classes.dtype)
    mask_int32 = helper.create_variable_for_type_inference(dtype=gt_classes.dtype)
    helper.append_op(
        type="generate_mask_labels",
        inputs={"ImInfo": [im_info], "GtClasses": [gt_classes], "IsCrowd": [is_crowd],
                "GtSegms": [gt_segms], "Rois": [rois], "LabelsInt32": [labels_int32]},
        outputs={"MaskRois": [mask_rois], "RoiHasMaskInt32": [roi_has_mask_int32],
                 "MaskInt32": [mask_int32]},
        attrs={"num_classes": num_classes, "resolution": resolution})
    _no_gradient(mask_rois, roi_has_mask_int32, mask_int32)
    return mask_rois, roi_has_mask_int32, mask_int32
