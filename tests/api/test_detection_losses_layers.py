"""The detection training layers as SSD, RetinaNet and YOLOv3 scripts use them: ssd_loss
equal to its steps done in NumPy, and trains; bipartite_match and target_assign on LoD
batches; the focal and YOLOv3 losses train a small head."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument

from tests.ops.test_detection import encode_ref, iou
from tests.ops.test_detection_losses import (GT_BOX, GT_LABEL, YOLO_ATTRS, assign_ref,
                                             match_ref, mine_ref)

L = fluid.layers
RNG = np.random.RandomState(23)
PRIORS = np.array([[0.0, 0.0, 0.5, 0.5], [0.5, 0.0, 1.0, 0.5], [0.0, 0.5, 0.5, 1.0],
                   [0.5, 0.5, 1.0, 1.0], [0.25, 0.25, 0.75, 0.75]], "float32")
GT = np.array([[0.05, 0.0, 0.5, 0.45], [0.45, 0.55, 1.0, 0.95], [0.2, 0.3, 0.8, 0.7]],
              "float32")
LABELS = np.array([[1], [2], [1]], "int32")
GT_LOD = [[0, 2, 3]]
VARIANCE = [0.1, 0.1, 0.2, 0.2]


def lod(value, offsets):
    lengths = [[b - a for a, b in zip(offsets[0], offsets[0][1:])]]
    return fluid.create_lod_tensor(value, lengths, fluid.CPUPlace())


def ssd_loss_numpy(location, confidence):
    n, priors, classes = confidence.shape
    dist = np.array([[iou(g, p) for p in PRIORS] for g in GT])
    match = match_ref({"DistMat": dist}, {"match_type": "per_prediction",
                                          "dist_threshold": 0.5}, GT_LOD[0])
    indices, match_dist = match["ColToRowMatchIndices"], match["ColToRowMatchDist"]
    logits = confidence.reshape(-1, classes).astype("float64")
    log_softmax = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    labels = assign_ref({"X": LABELS.reshape(-1, 1, 1), "MatchIndices": indices}, {},
                        GT_LOD[0])["Out"].reshape(-1)
    first_loss = -log_softmax[np.arange(n * priors), labels].reshape(n, priors)
    mined = mine_ref({"ClsLoss": first_loss, "MatchIndices": indices, "MatchDist": match_dist},
                     {"mining_type": "max_negative", "neg_pos_ratio": 3.0,
                      "neg_dist_threshold": 0.5})
    negatives, updated = mined["NegIndices"], mined["UpdatedMatchIndices"]
    # the negatives come one image after another: as many as mined for each
    counts = [int(((indices[b] == -1) & (match_dist[b] < 0.5)).sum()) for b in range(n)]
    picked = [min(int((indices[b] != -1).sum() * 3.0), counts[b]) for b in range(n)]
    neg_offsets = list(np.cumsum([0] + picked))
    encoded = encode_ref({"PriorBox": PRIORS, "TargetBox": GT},
                         {"variance": VARIANCE})["OutputBox"]
    boxes = assign_ref({"X": encoded, "MatchIndices": updated}, {}, GT_LOD[0])
    classes_out = assign_ref({"X": LABELS.reshape(-1, 1, 1), "MatchIndices": updated,
                              "NegIndices": negatives}, {}, GT_LOD[0], neg_offsets)
    labels = classes_out["Out"].reshape(-1)
    conf_loss = -log_softmax[np.arange(n * priors), labels] * \
        classes_out["OutWeight"].reshape(-1)
    diff = location.reshape(-1, 4).astype("float64") - boxes["Out"].reshape(-1, 4)
    smooth = np.where(np.abs(diff) < 1, 0.5 * diff ** 2, np.abs(diff) - 0.5).sum(1)
    loc_loss = smooth * boxes["OutWeight"].reshape(-1)
    per_image = (conf_loss + loc_loss).reshape(n, priors).sum(1, keepdims=True)
    return per_image / boxes["OutWeight"].sum()


def test_ssd_loss_is_its_steps_done_in_numpy():
    location = RNG.uniform(-1, 1, (2, 5, 4)).astype("float32")
    confidence = RNG.uniform(-1, 1, (2, 5, 3)).astype("float32")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        loc = fluid.data("loc", [None, 5, 4])
        conf = fluid.data("conf", [None, 5, 3])
        gt_box = fluid.data("gt_box", [None, 4], lod_level=1)
        gt_label = fluid.data("gt_label", [None, 1], dtype="int32", lod_level=1)
        priors = fluid.data("priors", [5, 4])
        loss = L.ssd_loss(loc, conf, gt_box, gt_label, priors, VARIANCE)
    out, = fluid.Executor(fluid.CPUPlace()).run(
        main, feed={"loc": location, "conf": confidence, "gt_box": lod(GT, GT_LOD),
                    "gt_label": lod(LABELS, GT_LOD), "priors": PRIORS}, fetch_list=[loss])
    assert out.shape == (2, 1)
    np.testing.assert_allclose(out, ssd_loss_numpy(location, confidence), rtol=1e-5)


def test_an_ssd_head_trains_on_its_priors():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 1
    with fluid.program_guard(main, startup):
        feature = fluid.data("feature", [None, 4, 2, 2])
        image = fluid.data("image", [None, 3, 16, 16])
        gt_box = fluid.data("gt_box", [None, 4], lod_level=1)
        gt_label = fluid.data("gt_label", [None, 1], dtype="int32", lod_level=1)
        boxes, variances = L.prior_box(feature, image, min_sizes=[6.0], aspect_ratios=[2.0],
                                       flip=True, clip=True)
        priors = 2 * 2 * 3
        loc = L.reshape(L.transpose(L.conv2d(feature, 3 * 4, 3, padding=1), [0, 2, 3, 1]),
                        [-1, priors, 4])
        conf = L.reshape(L.transpose(L.conv2d(feature, 3 * 3, 3, padding=1), [0, 2, 3, 1]),
                         [-1, priors, 3])
        loss = L.mean(L.ssd_loss(loc, conf, gt_box, gt_label, L.reshape(boxes, [-1, 4]),
                                 L.reshape(variances, [-1, 4])))
        fluid.optimizer.SGD(learning_rate=0.05).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    feed = {"feature": RNG.uniform(-1, 1, (2, 4, 2, 2)).astype("float32"),
            "image": np.zeros((2, 3, 16, 16), "float32"),
            "gt_box": lod(GT, GT_LOD), "gt_label": lod(LABELS, GT_LOD)}
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        losses = [float(exe.run(main, feed=feed, fetch_list=[loss])[0][0])
                  for _ in range(20)]
    assert losses[-1] < 0.8 * losses[0], losses


def test_match_and_assign_layers_on_a_lod_batch():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        gt_box = fluid.data("gt_box", [None, 4], lod_level=1)
        priors = fluid.data("priors", [5, 4])
        overlaps = L.iou_similarity(gt_box, priors)
        indices, dist = L.bipartite_match(overlaps)
        boxes, weight = L.target_assign(L.reshape(gt_box, [0, 1, 4]), indices,
                                        mismatch_value=-1)
    got_indices, got_boxes, got_weight = fluid.Executor(fluid.CPUPlace()).run(
        main, feed={"gt_box": lod(GT, GT_LOD), "priors": PRIORS},
        fetch_list=[indices, boxes, weight])
    dist_value = np.array([[iou(g, p) for p in PRIORS] for g in GT])
    want = match_ref({"DistMat": dist_value}, {}, GT_LOD[0])["ColToRowMatchIndices"]
    np.testing.assert_array_equal(got_indices, want)
    assert (got_weight[..., 0] == (want >= 0)).all()
    for b in range(2):
        for j in range(5):
            expected = GT[GT_LOD[0][b] + want[b, j]] if want[b, j] >= 0 else [-1] * 4
            np.testing.assert_allclose(got_boxes[b, j], expected)


def test_focal_loss_trains_a_classifier_head():
    x = RNG.uniform(-1, 1, (8, 5)).astype("float32")
    labels = np.array([[1], [2], [0], [3], [1], [0], [2], [-1]], "int32")
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 4
    with fluid.program_guard(main, startup):
        feature = fluid.data("feature", [None, 5])
        label = fluid.data("label", [None, 1], dtype="int32")
        fg_num = L.reduce_sum(L.cast(L.greater_than(
            label, L.fill_constant([1], "int32", 0)), "int32"))
        logits = L.fc(feature, size=3)
        loss = L.reduce_sum(L.sigmoid_focal_loss(logits, label, fg_num))
        fluid.optimizer.Adam(learning_rate=0.1).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        losses = [float(exe.run(main, feed={"feature": x, "label": labels},
                                fetch_list=[loss])[0]) for _ in range(30)]
    assert losses[-1] < 0.3 * losses[0], losses


def test_yolov3_loss_trains_a_head():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 6
    with fluid.program_guard(main, startup):
        image = fluid.data("image", [None, 3, 4, 4])
        gt_box = fluid.data("gt_box", [None, 3, 4])
        gt_label = fluid.data("gt_label", [None, 3], dtype="int32")
        head = L.conv2d(image, 2 * (5 + 3), 1)
        loss = L.mean(L.yolov3_loss(head, gt_box, gt_label, **YOLO_ATTRS))
        fluid.optimizer.Adam(learning_rate=0.05).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    feed = {"image": RNG.uniform(-1, 1, (2, 3, 4, 4)).astype("float32"), "gt_box": GT_BOX,
            "gt_label": GT_LABEL}
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        losses = [float(exe.run(main, feed=feed, fetch_list=[loss])[0][0])
                  for _ in range(30)]
    assert losses[-1] < 0.5 * losses[0], losses


@pytest.mark.parametrize("call, words", [
    (lambda v: L.bipartite_match(v, match_type="greedy"), "match_type"),
    (lambda v: L.ssd_loss(v, v, v, v, v, mining_type="hard_example"), "mining_type"),
    (lambda v: L.ssd_loss(v, v, v, v, v, prior_box_var=[0.1, 0.2]), "prior_box_var"),
    (lambda v: L.sigmoid_focal_loss(v, v.block.var("label"), v.block.var("fg_num"),
                                    alpha=2.0), "alpha"),
    (lambda v: L.yolov3_loss(v, v, v, anchors=[10, 13, 16], anchor_mask=[0], class_num=2,
                             ignore_thresh=0.7, downsample_ratio=32), "anchors"),
])
def test_bad_arguments_are_refused_at_the_call(call, words):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        v = fluid.data("v", [None, 4])
        fluid.data("label", [None, 1], "int32")
        fluid.data("fg_num", [1], "int32")  # (sigmoid_focal_loss takes int32 ones)
        before = len(main.global_block().vars)
        with pytest.raises(InvalidArgument, match=words):
            call(v)
        assert len(main.global_block().vars) == before
