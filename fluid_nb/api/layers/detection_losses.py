"""Detection training layers of Fluid 1.8: matching ground truths to priors
(``bipartite_match``), assigning each prior its target (``target_assign``), SSD's multibox
loss (``ssd_loss``, composed as Fluid composes it), RetinaNet's ``sigmoid_focal_loss`` and
``yolov3_loss``."""
from ...framework.program import Variable
from ..layer_helper import LayerHelper
from . import loss as losses
from . import manip, math, nn, tensor
from .arg_checks import (POSITIVE_INT, Refused, boolean, checks, int_in, ints, one_of, optional,
                         real_in, variable)
from .detection import iou_similarity

__all__ = ["bipartite_match", "target_assign", "ssd_loss", "sigmoid_focal_loss",
           "yolov3_loss"]


@checks(dist_matrix=variable, match_type=optional(one_of("bipartite", "per_prediction")),
        dist_threshold=optional(real_in()))
def bipartite_match(dist_matrix, match_type=None, dist_threshold=None, name=None):
    """Match the rows (ground truths) of each instance of ``dist_matrix`` [K, M] (a LoD
    tensor, one segment per instance) to its columns (priors): greedily the largest free
    distance first; with ``match_type='per_prediction'`` every column left then takes its
    best row if that distance >= ``dist_threshold`` (0.5). Returns ``(match_indices [N, M]
    int32, row or -1; match_distance [N, M])``."""
    helper = LayerHelper("bipartite_match", name=name)
    match_indices = helper.create_variable_for_type_inference(dtype="int32")
    match_distance = helper.create_variable_for_type_inference(dtype=dist_matrix.dtype)
    attrs = {}
    if match_type is not None:
        attrs["match_type"] = match_type
    if dist_threshold is not None:
        attrs["dist_threshold"] = float(dist_threshold)
    helper.append_op(type="bipartite_match", inputs={"DistMat": [dist_matrix]},
                     outputs={"ColToRowMatchIndices": [match_indices],
                              "ColToRowMatchDist": [match_distance]}, attrs=attrs)
    return match_indices, match_distance


@checks(input=variable, matched_indices=variable, negative_indices=optional(variable),
        mismatch_value=optional(int_in()))
def target_assign(input, matched_indices, negative_indices=None, mismatch_value=None,
                  name=None):
    """Each prior's target: ``out[i, j] = input[lod[i] + matched_indices[i, j], j % P]``
    with weight 1 where matched, ``mismatch_value`` with weight 0 where not; each negative
    index (``negative_indices``, a LoD segment per instance) gets ``mismatch_value`` with
    weight 1. ``input`` [rows, P, K] with one LoD level. Returns ``(out [N, M, K],
    out_weight [N, M, 1])``."""
    helper = LayerHelper("target_assign", name=name)
    out = helper.create_variable_for_type_inference(dtype=input.dtype)
    out_weight = helper.create_variable_for_type_inference(dtype="float32")
    inputs = {"X": [input], "MatchIndices": [matched_indices]}
    if negative_indices is not None:
        inputs["NegIndices"] = [negative_indices]
    attrs = {} if mismatch_value is None else {"mismatch_value": mismatch_value}
    helper.append_op(type="target_assign", inputs=inputs,
                     outputs={"Out": [out], "OutWeight": [out_weight]}, attrs=attrs)
    return out, out_weight


def _encode_boxes(prior_box, prior_box_var, target_box):
    helper = LayerHelper("box_coder")
    encoded = helper.create_variable_for_type_inference(dtype=prior_box.dtype)
    inputs = {"PriorBox": [prior_box], "TargetBox": [target_box]}
    attrs = {"code_type": "encode_center_size"}
    if isinstance(prior_box_var, Variable):
        inputs["PriorBoxVar"] = [prior_box_var]
    elif prior_box_var is not None:
        attrs["variance"] = [float(v) for v in prior_box_var]
    helper.append_op(type="box_coder", inputs=inputs, outputs={"OutputBox": [encoded]},
                     attrs=attrs)
    return encoded


def _variances(value):
    if value is not None and not isinstance(value, Variable) and not (
            isinstance(value, (list, tuple)) and len(value) == 4):
        raise Refused("None, a Variable [Np, 4] or a list of 4 variances",
                      wrong_type=not isinstance(value, (list, tuple)))


@checks(location=variable, confidence=variable, gt_box=variable, gt_label=variable,
        prior_box=variable, prior_box_var=_variances, background_label=int_in(0),
        overlap_threshold=real_in(0, 1), neg_pos_ratio=real_in(0), neg_overlap=real_in(0, 1),
        loc_loss_weight=real_in(), conf_loss_weight=real_in(),
        match_type=one_of("bipartite", "per_prediction"), mining_type=one_of("max_negative"),
        normalize=boolean, sample_size=optional(int_in(0)))
def ssd_loss(location, confidence, gt_box, gt_label, prior_box, prior_box_var=None,
             background_label=0, overlap_threshold=0.5, neg_pos_ratio=3.0, neg_overlap=0.5,
             loc_loss_weight=1.0, conf_loss_weight=1.0, match_type="per_prediction",
             mining_type="max_negative", normalize=True, sample_size=None):
    """SSD's multibox loss for ``location`` [N, Np, 4] and ``confidence`` [N, Np, C]
    against ``gt_box`` [Ng, 4] and ``gt_label`` [Ng, 1] (one LoD level by image) over
    ``prior_box`` [Np, 4]:

    1. match priors to ground truths by IoU (``bipartite_match``, ``match_type``);
    2. mine hard negatives: the unmatched priors overlapping less than ``neg_overlap`` with
       the highest confidence loss, ``neg_pos_ratio`` per match (``mine_hard_examples``);
    3. per image, ``conf_loss_weight`` x softmax cross entropy over the matched and mined
       priors (label ``background_label`` for the negatives) + ``loc_loss_weight`` x
       smooth L1 between ``location`` and the matched boxes encoded against their priors
       (``box_coder``, variances ``prior_box_var``);
    4. with ``normalize``, divided by the number of matched priors.

    Returns the loss [N, 1].
    """
    helper = LayerHelper("ssd_loss")
    conf_shape = math.shape(confidence)

    def to_2d(var):
        return manip.flatten(x=var, axis=2)

    # 1. match
    iou = iou_similarity(x=gt_box, y=prior_box)
    matched_indices, matched_dist = bipartite_match(iou, match_type, overlap_threshold)
    # 2. confidence loss of every prior against its matched label, for mining
    gt_label = manip.reshape(x=gt_label, shape=(len(gt_label.shape) - 1) * (0,) + (-1, 1))
    gt_label.stop_gradient = True
    target_label, _ = target_assign(gt_label, matched_indices,
                                    mismatch_value=background_label)
    confidence = to_2d(confidence)
    target_label = to_2d(tensor.cast(x=target_label, dtype="int64"))
    target_label.stop_gradient = True
    conf_loss = losses.softmax_with_cross_entropy(confidence, target_label)
    # 3. mining
    actual_shape = manip.slice(conf_shape, axes=[0], starts=[0], ends=[2])
    actual_shape.stop_gradient = True
    conf_loss = manip.reshape(x=conf_loss, shape=(-1, 0), actual_shape=actual_shape)
    conf_loss.stop_gradient = True
    neg_indices = helper.create_variable_for_type_inference(dtype="int32")
    updated_matched_indices = helper.create_variable_for_type_inference(
        dtype=matched_indices.dtype)
    helper.append_op(type="mine_hard_examples",
                     inputs={"ClsLoss": [conf_loss], "MatchIndices": [matched_indices],
                             "MatchDist": [matched_dist]},
                     outputs={"NegIndices": [neg_indices],
                              "UpdatedMatchIndices": [updated_matched_indices]},
                     attrs={"neg_pos_ratio": float(neg_pos_ratio),
                            "neg_dist_threshold": float(neg_overlap),
                            "mining_type": mining_type, "sample_size": sample_size or 0})
    # 4. targets
    encoded_bbox = _encode_boxes(prior_box, prior_box_var, gt_box)
    target_bbox, target_loc_weight = target_assign(
        encoded_bbox, updated_matched_indices, mismatch_value=background_label)
    target_label, target_conf_weight = target_assign(
        gt_label, updated_matched_indices, negative_indices=neg_indices,
        mismatch_value=background_label)
    # 5. the losses
    target_label = tensor.cast(x=to_2d(target_label), dtype="int64")
    conf_loss = losses.softmax_with_cross_entropy(confidence, target_label)
    target_conf_weight = to_2d(target_conf_weight)
    conf_loss = conf_loss * target_conf_weight
    target_label.stop_gradient = True
    target_conf_weight.stop_gradient = True
    location = to_2d(location)
    target_bbox = to_2d(target_bbox)
    loc_loss = losses.smooth_l1(location, target_bbox)
    target_loc_weight = to_2d(target_loc_weight)
    loc_loss = loc_loss * target_loc_weight
    target_bbox.stop_gradient = True
    target_loc_weight.stop_gradient = True
    loss = conf_loss_weight * conf_loss + loc_loss_weight * loc_loss
    loss = manip.reshape(x=loss, shape=(-1, 0), actual_shape=actual_shape)
    loss = nn.reduce_sum(loss, dim=1, keep_dim=True)
    if normalize:
        loss = loss / nn.reduce_sum(target_loc_weight)
    return loss


@checks(x=variable, label=variable, fg_num=variable, gamma=real_in(0), alpha=real_in(0, 1))
def sigmoid_focal_loss(x, label, fg_num, gamma=2.0, alpha=0.25):
    """RetinaNet's focal loss per element of ``x`` [N, C] (column j is class j + 1), p =
    sigmoid(x), g = ``label`` [N, 1] int32 (0 background, -1 ignored), over ``fg_num``
    [1] int32 foreground examples (at least 1)::

        -alpha (1 - p)^gamma log(p) / fg_num         where g = j + 1
        -(1 - alpha) p^gamma log(1 - p) / fg_num     where g is another class or 0
        0                                            where g = -1
    """
    helper = LayerHelper("sigmoid_focal_loss")
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(type="sigmoid_focal_loss",
                     inputs={"X": [x], "Label": [label], "FgNum": [fg_num]},
                     outputs={"Out": [out]},
                     attrs={"gamma": float(gamma), "alpha": float(alpha)})
    return out


def _anchor_sizes(value):
    ints(None, 1)(value)
    if len(value) % 2 or not value:
        raise Refused("a list of anchor sizes [w0, h0, w1, h1, ...]")


@checks(x=variable, gt_box=variable, gt_label=variable, anchors=_anchor_sizes,
        anchor_mask=ints(None, 0), class_num=POSITIVE_INT, ignore_thresh=real_in(0, 1),
        downsample_ratio=POSITIVE_INT, gt_score=optional(variable),
        use_label_smooth=boolean, scale_x_y=real_in(0))
def yolov3_loss(x, gt_box, gt_label, anchors, anchor_mask, class_num, ignore_thresh,
                downsample_ratio, gt_score=None, use_label_smooth=True, name=None,
                scale_x_y=1.):
    """YOLOv3's training loss per image for a head ``x`` [N, len(anchor_mask) (5 +
    class_num), H, W] against ``gt_box`` [N, B, 4] (centre x, centre y, width, height as
    fractions of the image; zero-sized rows are padding) and ``gt_label`` [N, B] int32:
    box offsets (sigmoid cross entropy), log sizes (L1), classes and objectness (sigmoid
    cross entropy; predictions overlapping a ground truth beyond ``ignore_thresh`` are not
    negatives), each ground truth on the anchor of ``anchor_mask`` of best shape. Returns
    [N]."""
    helper = LayerHelper("yolov3_loss", name=name)
    loss = helper.create_variable_for_type_inference(dtype=x.dtype) if name is None else \
        helper.create_variable(name=name, dtype=x.dtype, persistable=False)
    objectness_mask = helper.create_variable_for_type_inference(dtype=x.dtype)
    gt_match_mask = helper.create_variable_for_type_inference(dtype="int32")
    inputs = {"X": [x], "GTBox": [gt_box], "GTLabel": [gt_label]}
    if gt_score is not None:
        inputs["GTScore"] = [gt_score]
    helper.append_op(type="yolov3_loss", inputs=inputs,
                     outputs={"Loss": [loss], "ObjectnessMask": [objectness_mask],
                              "GTMatchMask": [gt_match_mask]},
                     attrs={"anchors": list(anchors), "anchor_mask": list(anchor_mask),
                            "class_num": class_num, "ignore_thresh": float(ignore_thresh),
                            "downsample_ratio": downsample_ratio,
                            "use_label_smooth": use_label_smooth,
                            "scale_x_y": float(scale_x_y)})
    return loss

