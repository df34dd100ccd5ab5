"""Region proposals of Fluid 1.8's two-stage detectors: an RPN's ``generate_proposals``,
and the feature-pyramid routing ``distribute_fpn_proposals`` / ``collect_fpn_proposals``.
Their outputs stop gradients, as in Fluid."""
from ...errors import InvalidArgument, expected
from ..layer_helper import LayerHelper
from .arg_checks import (POSITIVE_INT, boolean, checks, int_in, optional, real_in, variable,
                         variable_list)

__all__ = ["generate_proposals", "distribute_fpn_proposals", "collect_fpn_proposals"]


def _stopped(*variables):
    for v in variables:
        v.stop_gradient = True
    return variables


@checks(scores=variable, bbox_deltas=variable, im_info=variable, anchors=variable,
        variances=optional(variable), pre_nms_top_n=int_in(-1), post_nms_top_n=int_in(-1),
        nms_thresh=real_in(), min_size=real_in(0), eta=real_in(0, 1), return_rois_num=boolean)
def generate_proposals(scores, bbox_deltas, im_info, anchors, variances, pre_nms_top_n=6000,
                       post_nms_top_n=1000, nms_thresh=0.5, min_size=0.1, eta=1.0, name=None,
                       return_rois_num=False):
    """An RPN's proposals per image: the ``pre_nms_top_n`` best anchors by ``scores`` [N,
    A, H, W], moved by ``bbox_deltas`` [N, 4A, H, W] (scaled by ``variances``), clipped
    to the image (``im_info`` rows (h, w, scale)), those smaller than ``min_size`` dropped,
    NMS at ``nms_thresh`` and the ``post_nms_top_n`` best kept. Returns ``(rpn_rois [R, 4],
    rpn_roi_probs [R, 1])``, one LoD level by image (and the counts with
    ``return_rois_num``)."""
    helper = LayerHelper("generate_proposals", name=name)
    rois = helper.create_variable_for_type_inference(dtype=bbox_deltas.dtype)
    probs = helper.create_variable_for_type_inference(dtype=scores.dtype)
    counts = helper.create_variable_for_type_inference(dtype="int32")
    inputs = {"Scores": [scores], "BboxDeltas": [bbox_deltas], "ImInfo": [im_info],
              "Anchors": [anchors]}
    if variances is not None:
        inputs["Variances"] = [variances]
    helper.append_op(type="generate_proposals", inputs=inputs,
                     outputs={"RpnRois": [rois], "RpnRoiProbs": [probs],
                              "RpnRoisLod": [counts]},
                     attrs={"pre_nms_topN": pre_nms_top_n, "post_nms_topN": post_nms_top_n,
                            "nms_thresh": float(nms_thresh), "min_size": float(min_size),
                            "eta": float(eta)})
    _stopped(rois, probs, counts)
    return (rois, probs, counts) if return_rois_num else (rois, probs)


@checks(fpn_rois=variable, min_level=int_in(0), max_level=int_in(0), refer_level=int_in(0),
        refer_scale=POSITIVE_INT)
def distribute_fpn_proposals(fpn_rois, min_level, max_level, refer_level, refer_scale,
                             name=None):
    """Route each RoI to its pyramid level, ``floor(log2(sqrt(area) / refer_scale) +
    refer_level)`` within [min_level, max_level]. Returns ``(multi_rois, restore_ind)``:
    one LoD tensor per level, and where each RoI went in their concatenation (to put the
    levels' results back in the RoIs' order)."""
    if max_level < min_level:
        raise InvalidArgument(expected("distribute_fpn_proposals", "min_level and max_level",
                                       "min_level <= max_level", f"{min_level} and {max_level}"))
    helper = LayerHelper("distribute_fpn_proposals", name=name)
    multi_rois = [helper.create_variable_for_type_inference(fpn_rois.dtype)
                  for _ in range(max_level - min_level + 1)]
    restore_ind = helper.create_variable_for_type_inference(dtype="int32")
    helper.append_op(type="distribute_fpn_proposals", inputs={"FpnRois": [fpn_rois]},
                     outputs={"MultiFpnRois": multi_rois, "RestoreIndex": [restore_ind]},
                     attrs={"min_level": min_level, "max_level": max_level,
                            "refer_level": refer_level, "refer_scale": refer_scale})
    _stopped(restore_ind, *multi_rois)
    return multi_rois, restore_ind


@checks(multi_rois=variable_list, multi_scores=variable_list, min_level=int_in(0),
        max_level=int_in(0), post_nms_top_n=POSITIVE_INT)
def collect_fpn_proposals(multi_rois, multi_scores, min_level, max_level, post_nms_top_n,
                          name=None):
    """The ``post_nms_top_n`` best RoIs over the levels ``min_level``..``max_level`` (their
    RoIs and scores, LoD by image), ordered by image: [R, 4], one LoD level by image."""
    levels = max_level - min_level + 1
    if levels < 1 or len(multi_rois) < levels or len(multi_scores) < levels:
        raise InvalidArgument(expected(
            "collect_fpn_proposals", "multi_rois and multi_scores",
            f"at least {max(levels, 1)} levels each (min_level {min_level} to max_level "
            f"{max_level})", f"{len(multi_rois)} and {len(multi_scores)}"))
    helper = LayerHelper("collect_fpn_proposals", name=name)
    out = helper.create_variable_for_type_inference(dtype=multi_rois[0].dtype)
    helper.append_op(type="collect_fpn_proposals",
                     inputs={"MultiLevelRois": list(multi_rois[:levels]),
                             "MultiLevelScores": list(multi_scores[:levels])},
                     outputs={"FpnRois": [out]}, attrs={"post_nms_topN": post_nms_top_n})
    _stopped(out)
    return out
