"""The detection heads as inference scripts build them: SSD's multi_box_head over three
feature maps into detection_output, Faster R-CNN anchors, dense priors, the NMS variants and
RetinaNet's output layer; each against the op references; arguments refused at the call."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument

from tests.ops.test_detection import decode_ref, nms_expected, prior_box_ref
from tests.ops.test_detection_heads import (LOCALITY, MATRIX, RETINA, anchor_ref,
                                            corner_boxes, decode_assign_ref, density_ref,
                                            in_a_row, level_anchors, locality_ref,
                                            matrix_nms_ref, polygon_ref, retinanet_ref)

L = fluid.layers
RNG = np.random.RandomState(31)


def run(build, feed, return_numpy=True):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        fetches = build()
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    return exe.run(main, feed=feed, fetch_list=fetches, scope=scope,
                   return_numpy=return_numpy), main


def test_multi_box_head_spreads_sizes_and_feeds_detection_output():
    maps = {"c1": (4, 4), "c2": (2, 2), "c3": (1, 1)}
    feed = {name: RNG.uniform(-1, 1, (2, 4) + hw).astype("float32")
            for name, hw in maps.items()}
    feed["img"] = np.zeros((2, 3, 32, 32), "float32")
    ratios = [[2.0], [2.0, 3.0], [2.0]]

    def build():
        image = fluid.data("img", [None, 3, 32, 32])
        features = [fluid.data(name, [None, 4, h, w]) for name, (h, w) in maps.items()]
        loc, conf, box, var = L.multi_box_head(features, image, base_size=32, num_classes=3,
                                               aspect_ratios=ratios, min_ratio=20,
                                               max_ratio=90, flip=True, clip=True)
        out = L.detection_output(loc, conf, box, var, score_threshold=0.3, keep_top_k=20)
        return [loc, conf, box, var, out]
    (loc, conf, box, var, out), main = run(build, feed, return_numpy=False)
    # sizes: 10% and 20% of the base, then from 20% to 90% in steps of (90 - 20) / (3 - 2)
    min_sizes, max_sizes = [3.2, 6.4, 28.8], [6.4, 28.8, 51.2]
    want_boxes = np.concatenate([
        prior_box_ref({"Input": feed[name], "Image": feed["img"]},
                      {"min_sizes": [min_sizes[k]], "max_sizes": [max_sizes[k]],
                       "aspect_ratios": ratios[k], "flip": True, "clip": True})["Boxes"]
        .reshape(-1, 4) for k, name in enumerate(maps)])
    np.testing.assert_allclose(np.asarray(box), want_boxes, atol=1e-5)
    assert np.asarray(loc).shape == (2, len(want_boxes), 4)
    assert np.asarray(conf).shape == (2, len(want_boxes), 3)
    assert len([p for p in main.global_block().all_parameters()]) == 12  # 6 convs
    # detection_output: decode, softmax over classes, multiclass NMS
    decoded = decode_ref({"PriorBox": np.asarray(box), "PriorBoxVar": np.asarray(var),
                          "TargetBox": np.asarray(loc)},
                         {"code_type": "decode_center_size"})["OutputBox"]
    logits = np.asarray(conf).astype("float64")
    probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    from tests.ops.op_test import OpCase, check_output
    want = check_output(OpCase("multiclass_nms", {"BBoxes": decoded,
                                                  "Scores": probs.transpose(0, 2, 1).astype(
                                                      "float32")},
                               attrs={"score_threshold": 0.3, "nms_top_k": 400,
                                      "keep_top_k": 20, "nms_threshold": 0.3},
                               ref=lambda i, a: {}))["Out"]
    np.testing.assert_allclose(np.asarray(out), np.asarray(want), atol=1e-4)
    assert out.lod() == want.lod()


def test_anchor_generator_and_density_prior_box_layers():
    feature = np.zeros((1, 2, 3, 2), "float32")
    image = np.zeros((1, 3, 24, 16), "float32")

    def build():
        x = fluid.data("x", [None, 2, 3, 2])
        img = fluid.data("img", [None, 3, 24, 16])
        anchors, anchor_vars = L.anchor_generator(x, anchor_sizes=[32, 64],
                                                  aspect_ratios=[0.5, 1.0, 2.0],
                                                  stride=[16.0, 8.0])
        dense, dense_vars = L.density_prior_box(x, img, densities=[2, 1],
                                                fixed_sizes=[4.0, 8.0], fixed_ratios=[1.0],
                                                clip=True, flatten_to_2d=True)
        assert anchors.stop_gradient and dense.stop_gradient
        return [anchors, anchor_vars, dense, dense_vars]
    (anchors, anchor_vars, dense, dense_vars), _ = run(build, {"x": feature, "img": image})
    want = anchor_ref({"Input": feature}, {"anchor_sizes": [32, 64],
                                           "aspect_ratios": [0.5, 1.0, 2.0],
                                           "stride": [16.0, 8.0], "offset": 0.5,
                                           "variances": [0.1, 0.1, 0.2, 0.2]})
    np.testing.assert_allclose(anchors, want["Anchors"], atol=1e-5)
    np.testing.assert_allclose(anchor_vars, want["Variances"])
    want = density_ref({"Input": feature, "Image": image},
                       {"variances": [0.1, 0.1, 0.2, 0.2], "clip": True, "step_w": 0.0,
                        "step_h": 0.0, "offset": 0.5, "densities": [2, 1],
                        "fixed_sizes": [4.0, 8.0], "fixed_ratios": [1.0],
                        "flatten_to_2d": True})
    assert dense.shape == (3 * 2 * 5, 4)
    np.testing.assert_allclose(dense, want["Boxes"], atol=1e-6)


def test_nms_variants_and_decoding_layers():
    boxes, scores = corner_boxes(2, 6, 0.5, 0.5), RNG.uniform(0, 1, (2, 3, 6)).astype(
        "float32")
    row, row_scores = in_a_row(2, 10), RNG.uniform(0, 1, (2, 2, 10)).astype("float32")
    geometry = RNG.uniform(0, 5, (1, 8, 2, 3)).astype("float32")
    prior = np.array([[10, 10, 40, 30], [5, 20, 25, 60]], "float32")
    deltas = RNG.uniform(-1, 1, (2, 8)).astype("float32")
    box_scores = RNG.uniform(0, 1, (2, 2)).astype("float32")

    def build():
        b, s = fluid.data("b", [None, 6, 4]), fluid.data("s", [None, 3, 6])
        r, rs = fluid.data("r", [None, 10, 4]), fluid.data("rs", [None, 2, 10])
        g = fluid.data("g", [None, 8, 2, 3])
        p, d = fluid.data("p", [None, 4]), fluid.data("d", [None, 8])
        bs = fluid.data("bs", [None, 2])
        var = L.assign(np.array([0.1, 0.1, 0.2, 0.2], "float32"))
        matrix, index = L.matrix_nms(b, s, score_threshold=0.1, post_threshold=0.2,
                                     nms_top_k=5, keep_top_k=6, return_index=True)
        local = L.locality_aware_nms(r, rs, score_threshold=0.2, nms_top_k=8, keep_top_k=5,
                                     normalized=False)
        decoded, assigned = L.box_decoder_and_assign(p, var, d, bs, box_clip=4.135)
        return [matrix, index, local, L.polygon_box_transform(g), decoded, assigned]
    results, _ = run(build, {"b": boxes, "s": scores, "r": row, "rs": row_scores,
                             "g": geometry, "p": prior, "d": deltas, "bs": box_scores})
    matrix, index, local, polygon, decoded, assigned = results
    want = matrix_nms_ref({"BBoxes": boxes, "Scores": scores}, MATRIX)
    np.testing.assert_allclose(matrix, want["Out"], atol=1e-5)
    np.testing.assert_array_equal(index, want["Index"])
    np.testing.assert_allclose(local, locality_ref({"BBoxes": row, "Scores": row_scores},
                                                   LOCALITY)["Out"], atol=1e-4)
    np.testing.assert_allclose(polygon, polygon_ref({"Input": geometry}, {})["Output"])
    want = decode_assign_ref({"PriorBox": prior, "PriorBoxVar": np.array([.1, .1, .2, .2]),
                              "TargetBox": deltas, "BoxScore": box_scores},
                             {"box_clip": 4.135})
    np.testing.assert_allclose(decoded, want["DecodeBox"], atol=1e-4)
    np.testing.assert_allclose(assigned, want["OutputAssignBox"], atol=1e-4)


def test_retinanet_detection_output_layer():
    inputs = {"BBoxes": [RNG.uniform(-0.5, 0.5, (1, 6, 4)).astype("float32"),
                         RNG.uniform(-0.5, 0.5, (1, 4, 4)).astype("float32")],
              "Scores": [RNG.uniform(0, 1, (1, 6, 3)).astype("float32"),
                         RNG.uniform(0, 0.3, (1, 4, 3)).astype("float32")],
              "Anchors": [level_anchors(6, 20), level_anchors(4, 40)],
              "ImInfo": np.array([[60, 50, 1.0]], "float32")}
    feed = {f"{slot}{k}": value for slot in ("BBoxes", "Scores", "Anchors")
            for k, value in enumerate(inputs[slot])}
    feed["info"] = inputs["ImInfo"]

    def build():
        levels = {slot: [fluid.data(f"{slot}{k}", list(v.shape))
                         for k, v in enumerate(inputs[slot])]
                  for slot in ("BBoxes", "Scores", "Anchors")}
        return [L.retinanet_detection_output(levels["BBoxes"], levels["Scores"],
                                             levels["Anchors"], fluid.data("info", [1, 3]),
                                             **RETINA)]
    (out,), _ = run(build, feed)
    np.testing.assert_allclose(out, retinanet_ref(inputs, RETINA)["Out"], atol=1e-3)


@pytest.mark.parametrize("call, words", [
    (lambda x: L.density_prior_box(x, x, densities=[2, 1], fixed_sizes=[4.0],
                                   fixed_ratios=[1.0]), "densities and fixed_sizes"),
    (lambda x: L.anchor_generator(x, anchor_sizes=[32], aspect_ratios=[1.0], stride=[16]),
     "stride"),
    (lambda x: L.multi_box_head([x], x, base_size=32, num_classes=3, aspect_ratios=[[2.]]),
     "min_sizes"),
    (lambda x: L.multi_box_head([x, x, x], x, base_size=32, num_classes=3,
                                aspect_ratios=[[2.]], min_ratio=20, max_ratio=90),
     "aspect_ratios"),
    (lambda x: L.matrix_nms(x, x, 0.1, 0.1, nms_top_k=-2, keep_top_k=5), "nms_top_k"),
    (lambda x: L.retinanet_detection_output([x, x], [x], [x, x], x), "one entry per level"),
])
def test_bad_arguments_are_refused_at_the_call(call, words):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 4, 2, 2])
        before = len(main.global_block().vars), len(main.global_block().ops)
        with pytest.raises(InvalidArgument, match=words):
            call(x)
        assert (len(main.global_block().vars), len(main.global_block().ops)) == before
