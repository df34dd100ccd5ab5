"""An RPN's proposals routed over a feature pyramid, as Faster R-CNN with FPN builds them:
anchor_generator -> generate_proposals -> distribute_fpn_proposals -> (per level) ->
collect_fpn_proposals, against the op references; arguments refused at the call."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument

from tests.ops.test_detection_fpn import FPN, level_ref, proposals_ref

L = fluid.layers
RNG = np.random.RandomState(41)


def test_rpn_proposals_routed_over_the_pyramid():
    scores = RNG.uniform(0, 1, (2, 3, 4, 4)).astype("float32")
    deltas = RNG.uniform(-0.3, 0.3, (2, 12, 4, 4)).astype("float32")
    info = np.array([[64, 64, 1.0], [60, 50, 1.0]], "float32")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        feature = fluid.data("feature", [None, 8, 4, 4])
        score = fluid.data("score", [None, 3, 4, 4])
        delta = fluid.data("delta", [None, 12, 4, 4])
        im_info = fluid.data("im_info", [None, 3])
        anchors, variances = L.anchor_generator(feature, anchor_sizes=[16, 32, 64],
                                                aspect_ratios=[1.0], stride=[16.0, 16.0])
        rois, probs, counts = L.generate_proposals(score, delta, im_info, anchors, variances,
                                                   pre_nms_top_n=30, post_nms_top_n=12,
                                                   nms_thresh=0.6, min_size=2.0,
                                                   return_rois_num=True)
        multi_rois, restore = L.distribute_fpn_proposals(rois, **FPN)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    feed = {"feature": np.zeros((2, 8, 4, 4), "float32"), "score": scores, "delta": deltas,
            "im_info": info}
    got_rois, got_probs, got_counts, got_anchors, got_variances, got_restore, *levels = \
        exe.run(main, feed=feed, fetch_list=[rois, probs, counts, anchors, variances, restore,
                                             *multi_rois], return_numpy=False)
    want = proposals_ref({"Scores": scores, "BboxDeltas": deltas, "ImInfo": info,
                          "Anchors": np.asarray(got_anchors),
                          "Variances": np.asarray(got_variances)},
                         {"pre_nms_topN": 30, "post_nms_topN": 12, "nms_thresh": 0.6,
                          "min_size": 2.0})
    np.testing.assert_allclose(np.asarray(got_rois), want["RpnRois"], atol=1e-4)
    np.testing.assert_allclose(np.asarray(got_probs), want["RpnRoiProbs"], atol=1e-6)
    assert np.asarray(got_counts).tolist() == np.diff(got_rois.lod()[0]).tolist()
    # every RoI on its level, and the restore index puts the levels back in the RoIs' order
    concatenated = np.concatenate([np.asarray(t).reshape(-1, 4) for t in levels])
    np.testing.assert_allclose(concatenated[np.asarray(got_restore).ravel()],
                               np.asarray(got_rois))
    wanted_levels = level_ref(np.asarray(got_rois), FPN)
    assert [len(np.asarray(t).reshape(-1, 4)) for t in levels] == [
        wanted_levels.count(level) for level in range(2, 6)]


def test_collect_takes_the_best_over_levels_in_image_order():
    level_rois = [RNG.uniform(0, 50, (4, 4)).astype("float32") for _ in range(2)]
    level_scores = [np.array([[0.9], [0.1], [0.5], [0.7]], "float32"),
                    np.array([[0.8], [0.95], [0.2], [0.3]], "float32")]
    lods = [[[0, 3, 4]], [[0, 1, 4]]]

    def lod_tensor(value, lod):
        return fluid.create_lod_tensor(value, [list(np.diff(lod[0]))], fluid.CPUPlace())
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        rois = [fluid.data(f"r{k}", [None, 4], lod_level=1) for k in range(2)]
        scores = [fluid.data(f"s{k}", [None, 1], lod_level=1) for k in range(2)]
        out = L.collect_fpn_proposals(rois, scores, min_level=2, max_level=3,
                                      post_nms_top_n=4)
    feed = {}
    for k in range(2):
        feed[f"r{k}"] = lod_tensor(level_rois[k], lods[k])
        feed[f"s{k}"] = lod_tensor(level_scores[k], lods[k])
    got, = fluid.Executor(fluid.CPUPlace()).run(main, feed=feed, fetch_list=[out],
                                                return_numpy=False)
    # best four: 0.95 (level 3, image 1), 0.9 (level 2, image 0), 0.8 (level 3, image 0),
    # 0.7 (level 2, image 1); image 0 first, best first within
    want = [level_rois[0][0], level_rois[1][0], level_rois[1][1], level_rois[0][3]]
    np.testing.assert_allclose(np.asarray(got), want)
    assert got.lod() == [[0, 2, 4]]


@pytest.mark.parametrize("call, words", [
    (lambda v: L.distribute_fpn_proposals(v, min_level=5, max_level=2, refer_level=4,
                                          refer_scale=224), "min_level"),
    (lambda v: L.collect_fpn_proposals([v], [v], min_level=2, max_level=5, post_nms_top_n=10),
     "levels"),
    (lambda v: L.generate_proposals(v, v, v, v, v, nms_thresh="0.5"), "nms_thresh"),
])
def test_bad_arguments_are_refused_at_the_call(call, words):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        v = fluid.data("v", [None, 4], lod_level=1)
        before = len(main.global_block().vars)
        with pytest.raises((InvalidArgument, TypeError), match=words):
            call(v)
        assert len(main.global_block().vars) == before
