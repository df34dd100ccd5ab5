"""The two-stage detector training layers as Faster R-CNN and RetinaNet scripts use them:
the ops each appends, the predictions gathered at the sampled anchors equal to the targets'
indices, a RetinaNet head trained through retinanet_target_assign and sigmoid_focal_loss,
proposal sampling on a LoD batch, and arguments refused at the call."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument, InvalidType

from tests.ops.test_detection_training import (ANCHORS, GT_BOXES, GT_LABELS, GT_LOD,
                                               IM_INFO, IS_CROWD, PROPOSAL_ATTRS,
                                               PROPOSAL_CLASSES, PROPOSAL_CROWD,
                                               PROPOSAL_GTS, PROPOSAL_INFO, PROPOSAL_ROIS,
                                               QUADS, MASK_INPUTS, MASK_LOD, SEGMS,
                                               anchor_targets, mask_labels_ref,
                                               perspective_ref, proposal_labels)

L = fluid.layers
RNG = np.random.RandomState(5)
A = len(ANCHORS)


def lod_tensor(value, offsets):
    lengths = [[b - a for a, b in zip(offsets, offsets[1:])]]
    return fluid.create_lod_tensor(value, lengths, fluid.CPUPlace())


def ground_truth_feed():
    return {"gt_boxes": lod_tensor(GT_BOXES, GT_LOD), "gt_labels": lod_tensor(GT_LABELS, GT_LOD),
            "is_crowd": lod_tensor(IS_CROWD, GT_LOD), "im_info": IM_INFO,
            "anchors": ANCHORS}


def ground_truth_vars():
    return (fluid.data("anchors", [A, 4]), fluid.data("gt_boxes", [None, 4], lod_level=1),
            fluid.data("gt_labels", [None, 1], "int32", lod_level=1),
            fluid.data("is_crowd", [None, 1], "int32", lod_level=1),
            fluid.data("im_info", [None, 3]))


def test_rpn_target_assign_gathers_the_sampled_predictions():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        anchors, gt_boxes, _, is_crowd, im_info = ground_truth_vars()
        bbox_pred = fluid.data("bbox_pred", [2, A, 4])
        cls_logits = fluid.data("cls_logits", [2, A, 1])
        outs = L.rpn_target_assign(bbox_pred, cls_logits, anchors, anchors, gt_boxes,
                                   is_crowd, im_info, rpn_batch_size_per_im=6,
                                   rpn_straddle_thresh=0.0, rpn_fg_fraction=0.5,
                                   rpn_positive_overlap=0.5, rpn_negative_overlap=0.2,
                                   use_random=False)
    assert [op.type for op in main.global_block().ops] == [
        "rpn_target_assign", "reshape2", "reshape2", "gather", "gather"]
    assert all(v.stop_gradient for v in outs[2:])
    fluid.verify(main)
    feed = ground_truth_feed()
    del feed["gt_labels"]
    feed["bbox_pred"] = RNG.uniform(-1, 1, (2, A, 4)).astype("float32")
    feed["cls_logits"] = RNG.uniform(-1, 1, (2, A, 1)).astype("float32")
    scores, location, label, target, weight = fluid.Executor(fluid.CPUPlace()).run(
        main, feed=feed, fetch_list=list(outs))
    want = anchor_targets({"Anchor": ANCHORS, "GtBoxes": GT_BOXES, "IsCrowd": IS_CROWD,
                           "ImInfo": IM_INFO},
                          {"rpn_batch_size_per_im": 6, "rpn_fg_fraction": 0.5,
                           "rpn_straddle_thresh": 0.0, "rpn_positive_overlap": 0.5,
                           "rpn_negative_overlap": 0.2}, GT_LOD, retina=False)
    score_index = want["ScoreIndex"][0]
    loc_index = want["LocationIndex"][0]
    np.testing.assert_allclose(scores, feed["cls_logits"].reshape(-1, 1)[score_index])
    np.testing.assert_allclose(location, feed["bbox_pred"].reshape(-1, 4)[loc_index])
    np.testing.assert_array_equal(label, want["TargetLabel"][0])
    np.testing.assert_allclose(target, want["TargetBBox"][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(weight, want["BBoxInsideWeight"][0])


def test_retinanet_head_trains_on_its_assigned_targets():
    classes = 5
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.program_guard(main, startup):
        anchors, gt_boxes, gt_labels, is_crowd, im_info = ground_truth_vars()
        feature = fluid.data("feature", [2, A, 8])
        cls_logits = L.fc(feature, classes, num_flatten_dims=2)
        bbox_pred = L.fc(feature, 4, num_flatten_dims=2)
        scores, location, label, target, weight, fg_num = L.retinanet_target_assign(
            bbox_pred, cls_logits, anchors, anchors, gt_boxes, gt_labels, is_crowd, im_info,
            num_classes=classes)
        cls_loss = L.reduce_sum(L.sigmoid_focal_loss(scores, label, fg_num))
        loc_loss = L.reduce_sum(L.smooth_l1(location, target, inside_weight=weight,
                                            outside_weight=weight))
        loss = cls_loss + loc_loss
        fluid.optimizer.SGD(0.05).minimize(loss)
    types = [op.type for op in main.global_block().ops]
    assert types.index("retinanet_target_assign") < types.index("sigmoid_focal_loss")
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    feed = ground_truth_feed()
    feed["feature"] = RNG.uniform(-1, 1, (2, A, 8)).astype("float32")
    losses = [float(np.asarray(exe.run(main, feed=feed, fetch_list=[loss])[0]).reshape(-1)[0])
              for _ in range(30)]
    assert losses[-1] < 0.7 * losses[0]
    # the targets equal the op's own reference
    want = anchor_targets({"Anchor": ANCHORS, "GtBoxes": GT_BOXES, "GtLabels": GT_LABELS,
                           "IsCrowd": IS_CROWD, "ImInfo": IM_INFO}, {}, GT_LOD, retina=True)
    got_label, got_fg = exe.run(main, feed=feed, fetch_list=[label, fg_num])
    np.testing.assert_array_equal(got_label, want["TargetLabel"][0])
    np.testing.assert_array_equal(got_fg, want["ForegroundNumber"][0])


def test_generate_proposal_labels_samples_a_lod_batch():
    main, startup = fluid.Program(), fluid.Program()
    attrs = {k: v for k, v in PROPOSAL_ATTRS.items()}
    with fluid.program_guard(main, startup):
        rois = fluid.data("rois", [None, 4], lod_level=1)
        classes = fluid.data("classes", [None, 1], "int32", lod_level=1)
        crowd = fluid.data("crowd", [None, 1], "int32", lod_level=1)
        gts = fluid.data("gts", [None, 4], lod_level=1)
        info = fluid.data("info", [None, 3])
        outs = L.generate_proposal_labels(rois, classes, crowd, gts, info, **attrs)
    assert [op.type for op in main.global_block().ops] == ["generate_proposal_labels"]
    assert outs[2].shape[1] == 4 * attrs["class_nums"]
    feed = {"rois": lod_tensor(PROPOSAL_ROIS, [0, 12, 22]),
            "classes": lod_tensor(PROPOSAL_CLASSES, [0, 2, 4]),
            "crowd": lod_tensor(PROPOSAL_CROWD, [0, 2, 4]),
            "gts": lod_tensor(PROPOSAL_GTS, [0, 2, 4]), "info": PROPOSAL_INFO}
    got = fluid.Executor(fluid.CPUPlace()).run(main, feed=feed, fetch_list=list(outs),
                                               return_numpy=False)
    want = proposal_labels({"RpnRois": PROPOSAL_ROIS, "GtClasses": PROPOSAL_CLASSES,
                            "IsCrowd": PROPOSAL_CROWD, "GtBoxes": PROPOSAL_GTS,
                            "ImInfo": PROPOSAL_INFO}, attrs, [0, 12, 22], [0, 2, 4])
    for tensor, slot in zip(got, ["Rois", "LabelsInt32", "BboxTargets", "BboxInsideWeights",
                                  "BboxOutsideWeights"]):
        value, lod = want[slot]
        assert tensor.lod() == lod
        np.testing.assert_allclose(np.asarray(tensor), value, rtol=1e-5, atol=1e-5)


def test_training_target_layers_refuse_bad_arguments():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        anchors, gt_boxes, gt_labels, is_crowd, im_info = ground_truth_vars()
        pred = fluid.data("pred", [2, A, 4])
        with pytest.raises(InvalidArgument, match="rpn_target_assign: rpn_fg_fraction"):
            L.rpn_target_assign(pred, pred, anchors, anchors, gt_boxes, is_crowd, im_info,
                                rpn_fg_fraction=1.5)
        with pytest.raises(InvalidType, match="retinanet_target_assign: gt_labels"):
            L.retinanet_target_assign(pred, pred, anchors, anchors, gt_boxes, [1], is_crowd,
                                      im_info)
        with pytest.raises(InvalidArgument, match="generate_proposal_labels: bbox_reg_w"):
            L.generate_proposal_labels(gt_boxes, gt_labels, is_crowd, gt_boxes, im_info,
                                       bbox_reg_weights=[1.0, 1.0], class_nums=3)
    assert not main.global_block().ops


def test_roi_perspective_transform_warps_quads_and_trains_through_them():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup):
        image = fluid.data("image", [2, 1, 10, 12])
        quads = fluid.data("quads", [None, 8], lod_level=1)
        feature = L.conv2d(image, 2, 3, padding=1)
        warped, mask, matrix = L.roi_perspective_transform(feature, quads, 4, 6)
        loss = L.reduce_mean(L.square(warped - 0.5))
        fluid.optimizer.SGD(0.5).minimize(loss)
    types = [op.type for op in main.global_block().ops]
    assert "roi_perspective_transform" in types and "roi_perspective_transform_grad" in types
    assert tuple(warped.shape[1:]) == (2, 4, 6) and tuple(mask.shape[1:]) == (1, 4, 6)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    feed = {"image": RNG.uniform(0, 1, (2, 1, 10, 12)).astype("float32"),
            "quads": lod_tensor(QUADS, [0, 2, 3])}
    first, got_mask = exe.run(main, feed=feed, fetch_list=[loss, mask])
    for _ in range(15):
        last, = exe.run(main, feed=feed, fetch_list=[loss])
    assert float(np.asarray(last).reshape(-1)[0]) < 0.5 * float(np.asarray(first).reshape(-1)[0])
    want = perspective_ref({"X": feed["image"], "ROIs": QUADS},
                           {"transformed_height": 4, "transformed_width": 6,
                            "spatial_scale": 1.0}, [0, 2, 3])
    np.testing.assert_array_equal(got_mask, want["Mask"])


def test_roi_perspective_transform_refuses_bad_sizes():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        image = fluid.data("image", [2, 1, 10, 12])
        quads = fluid.data("quads", [None, 8], lod_level=1)
        with pytest.raises(InvalidArgument, match="roi_perspective_transform: transformed_h"):
            L.roi_perspective_transform(image, quads, 0, 6)
        with pytest.raises(InvalidArgument, match="roi_perspective_transform: spatial_scale"):
            L.roi_perspective_transform(image, quads, 4, 6, spatial_scale=0.0)
    assert not main.global_block().ops


def test_generate_mask_labels_rasterises_the_matched_objects():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        info = fluid.data("info", [None, 3])
        classes = fluid.data("classes", [None, 1], "int32", lod_level=1)
        crowd = fluid.data("crowd", [None, 1], "int32", lod_level=1)
        segms = fluid.data("segms", [None, 2], lod_level=3)
        rois = fluid.data("rois", [None, 4], lod_level=1)
        labels = fluid.data("labels", [None, 1], "int32", lod_level=1)
        outs = L.generate_mask_labels(info, classes, crowd, segms, rois, labels,
                                      num_classes=4, resolution=8)
    assert [op.type for op in main.global_block().ops] == ["generate_mask_labels"]
    assert outs[2].shape[1] == 4 * 64

    def lengths(offsets):
        return [b - a for a, b in zip(offsets, offsets[1:])]
    segm_tensor = fluid.create_lod_tensor(MASK_INPUTS["GtSegms"],
                                          [lengths(level) for level in MASK_LOD["GtSegms"]],
                                          fluid.CPUPlace())
    feed = {"info": MASK_INPUTS["ImInfo"], "segms": segm_tensor,
            "classes": lod_tensor(MASK_INPUTS["GtClasses"], [0, 3, 4]),
            "crowd": lod_tensor(MASK_INPUTS["IsCrowd"], [0, 3, 4]),
            "rois": lod_tensor(MASK_INPUTS["Rois"], [0, 3, 5]),
            "labels": lod_tensor(MASK_INPUTS["LabelsInt32"], [0, 3, 5])}
    got = fluid.Executor(fluid.CPUPlace()).run(main, feed=feed, fetch_list=list(outs),
                                               return_numpy=False)
    want = mask_labels_ref(MASK_INPUTS, {"num_classes": 4, "resolution": 8}, [0, 3, 5],
                           [0, 3, 4], SEGMS)
    for tensor, slot in zip(got, ["MaskRois", "RoiHasMaskInt32", "MaskInt32"]):
        value, lod = want[slot]
        assert tensor.lod() == lod
        np.testing.assert_allclose(np.asarray(tensor), value)
