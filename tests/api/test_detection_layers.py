"""The one-op detection layers as SSD and YOLOv3 inference programs use them: prior boxes
decoded into boxes and suppressed, YOLO heads turned into boxes and suppressed, boxes
clipped per image; the op each layer appends; arguments refused at the call."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument, InvalidType

from tests.ops.test_detection import iou, nms_boxes, nms_expected, nms_scores

rng = np.random.RandomState(3)


def run(main, feed, fetch, return_numpy=True):
    return fluid.Executor(fluid.CPUPlace()).run(main, feed=feed, fetch_list=fetch,
                                                return_numpy=return_numpy)


def test_ssd_head_decodes_its_priors_and_suppresses():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        feature = fluid.data("feature", [None, 4, 2, 2])
        image = fluid.data("image", [None, 3, 32, 32])
        loc = fluid.data("loc", [None, 8, 4])  # 2 x 2 cells x 2 priors
        conf = fluid.data("conf", [None, 3, 8])
        boxes, variances = fluid.layers.prior_box(feature, image, min_sizes=[8.0],
                                                  aspect_ratios=[2.0])
        assert boxes.shape == (2, 2, 2, 4) and boxes.stop_gradient
        priors = fluid.layers.reshape(boxes, [-1, 4])
        prior_vars = fluid.layers.reshape(variances, [-1, 4])
        decoded = fluid.layers.box_coder(priors, prior_vars, loc,
                                         code_type="decode_center_size")
        found = fluid.layers.multiclass_nms(decoded, conf, score_threshold=0.3, nms_top_k=8,
                                            keep_top_k=4, nms_threshold=0.45)
    assert [op.type for op in main.global_block().ops] == [
        "prior_box", "reshape2", "reshape2", "box_coder", "multiclass_nms"]
    loc_value = np.zeros((1, 8, 4), "float32")  # zero offsets: the priors themselves
    conf_value = np.zeros((1, 3, 8), "float32")
    conf_value[0, 1, 0] = 0.9  # prior 0 (square) and prior 1 (wide) at cell (0, 0)
    conf_value[0, 1, 1] = 0.8
    conf_value[0, 2, 7] = 0.7
    out, prior_value = run(main, {"feature": np.zeros((1, 4, 2, 2), "float32"),
                                  "image": np.zeros((1, 3, 32, 32), "float32"),
                                  "loc": loc_value, "conf": conf_value},
                           [found, priors])
    # the square and the wide prior of one cell overlap beyond 0.45: the wide one goes
    assert iou(prior_value[0], prior_value[1]) > 0.45
    assert out[:, 0].tolist() == [1.0, 2.0]
    np.testing.assert_allclose(out[0, 2:], prior_value[0], atol=1e-6)
    np.testing.assert_allclose(out[-1, 2:], prior_value[7], atol=1e-6)
    np.testing.assert_allclose(out[:, 1], [0.9, 0.7], atol=1e-6)


def test_encode_then_decode_gives_the_targets_back():
    main, startup = fluid.Program(), fluid.Program()
    priors_value = np.array([[0.1, 0.1, 0.4, 0.5], [0.3, 0.2, 0.9, 0.6]], "float32")
    targets_value = np.array([[0.2, 0.1, 0.5, 0.4], [0.0, 0.3, 0.7, 0.9], [0.4, 0.4, 0.6, 0.8]],
                             "float32")
    with fluid.program_guard(main, startup):
        priors = fluid.data("priors", [2, 4])
        targets = fluid.data("targets", [3, 4])
        encoded = fluid.layers.box_coder(priors, [0.1, 0.1, 0.2, 0.2], targets)
        decoded = fluid.layers.box_coder(priors, [0.1, 0.1, 0.2, 0.2], encoded,
                                         code_type="decode_center_size")
    encoded_value, decoded_value = run(main, {"priors": priors_value,
                                              "targets": targets_value}, [encoded, decoded])
    assert encoded_value.shape == (3, 2, 4)
    for prior in range(2):
        np.testing.assert_allclose(decoded_value[:, prior], targets_value, atol=1e-5)


def test_yolo_boxes_then_nms():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        head = fluid.data("head", [None, 2 * (5 + 2), 2, 2])
        size = fluid.data("size", [None, 2], dtype="int32")
        boxes, scores = fluid.layers.yolo_box(head, size, anchors=[10, 14, 20, 24],
                                              class_num=2, conf_thresh=0.5,
                                              downsample_ratio=32)
        found = fluid.layers.multiclass_nms(boxes, fluid.layers.transpose(scores, [0, 2, 1]),
                                            score_threshold=0.3, nms_top_k=10, keep_top_k=5,
                                            background_label=-1, normalized=False)
    value = np.full((1, 14, 2, 2), -6.0, "float32")  # every confidence ~0
    value[0, 4, 1, 0] = 4.0  # anchor 0, cell (row 1, col 0): confident
    value[0, 5 + 1, 1, 0] = 4.0  # ... of class 1
    value[0, 0:4, 1, 0] = 0.0  # centred in its cell, the anchor's size (input 2 x 32 = 64)
    out, boxes_value = run(main, {"head": value, "size": np.array([[64, 64]], "int32")},
                           [found, boxes])
    cell = 2  # row-major over (anchor, row, col): anchor 0, row 1, col 0
    np.testing.assert_allclose(boxes_value[0, cell], [16 - 5, 48 - 7, 16 + 5, 48 + 7],
                               atol=1e-4)
    assert out.shape == (1, 6) and out[0, 0] == 1
    np.testing.assert_allclose(out[0, 1], 1 / (1 + np.exp(-4.0)) ** 2, rtol=1e-5)


def test_box_clip_clips_each_image_to_its_own_size():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        boxes = fluid.data("boxes", [None, 4], lod_level=1)
        info = fluid.data("info", [None, 3])
        clipped = fluid.layers.box_clip(boxes, info)
    value = np.array([[-5, -5, 200, 200], [10, 10, 20, 20], [-1, 30, 90, 90]], "float32")
    tensor = fluid.create_lod_tensor(value, [[2, 1]], fluid.CPUPlace())
    out, = run(main, {"boxes": tensor, "info": np.array([[100, 150, 1], [80, 60, 2]],
                                                        "float32")}, [clipped],
               return_numpy=False)
    assert out.lod() == [[0, 2, 3]]
    np.testing.assert_array_equal(np.asarray(out), [[0, 0, 149, 99], [10, 10, 20, 20],
                                                    [0, 30, 29, 39]])


def test_iou_similarity_layer_and_nms_layer_match_the_op_tables():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        b = fluid.data("b", [None, 4, 4])
        s = fluid.data("s", [None, 3, 4])
        found = fluid.layers.multiclass_nms(b, s, 0.15, 10, 10, nms_threshold=0.5,
                                            normalized=False)
        overlaps = fluid.layers.iou_similarity(fluid.layers.reshape(b, [-1, 4]),
                                               fluid.layers.reshape(b, [-1, 4]),
                                               box_normalized=False)
    out, overlap = run(main, {"b": nms_boxes, "s": nms_scores}, [found, overlaps])
    np.testing.assert_allclose(out, nms_expected()[0], atol=1e-6)
    assert abs(overlap[0, 1] - 100 / 121) < 1e-6 and abs(overlap[0, 2] - 66 / 176) < 1e-6


@pytest.mark.parametrize("call, error, words", [
    (lambda x, img: fluid.layers.prior_box(x, img, min_sizes="8"), InvalidType, "min_sizes"),
    (lambda x, img: fluid.layers.prior_box(x, img, min_sizes=[8.0], steps=[8.0]),
     InvalidArgument, "steps"),
    (lambda x, img: fluid.layers.prior_box(x, img, min_sizes=[8.0, 4.0], max_sizes=[9.0]),
     InvalidArgument, "max_sizes"),
    (lambda x, img: fluid.layers.box_coder(x, [0.1, 0.1], x), InvalidArgument,
     "prior_box_var"),
    (lambda x, img: fluid.layers.box_coder(x, [0.1] * 4, x, code_type="encode"),
     InvalidArgument, "code_type"),
    (lambda x, img: fluid.layers.multiclass_nms(x, x, 0.1, nms_top_k=2.5, keep_top_k=1),
     InvalidArgument, "nms_top_k"),
    (lambda x, img: fluid.layers.yolo_box(x, img, anchors=[10, 13, 16], class_num=2,
                                          conf_thresh=0.1, downsample_ratio=32),
     InvalidArgument, "anchors"),
])
def test_bad_arguments_are_refused_at_the_call(call, error, words):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 4, 2, 2])
        img = fluid.data("img", [None, 3, 8, 8])
        before = len(main.global_block().ops), len(main.global_block().vars)
        with pytest.raises(error, match=words):
            call(x, img)
        assert (len(main.global_block().ops), len(main.global_block().vars)) == before
