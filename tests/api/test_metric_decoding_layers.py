"""mean_iou, edit_distance and ctc_greedy_decoder as users call them."""
import numpy as np

import fluid_nb as fluid


def _run(build, feed, n_out):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        outs = build()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    return exe.run(main, feed=feed, fetch_list=list(outs)[:n_out], return_numpy=False)


def test_mean_iou_of_a_segmentation():
    pred = np.array([[0, 1], [1, 1]], "int32")
    label = np.array([[0, 1], [0, 1]], "int32")

    def build():
        p = fluid.data(name="p", shape=[2, 2], dtype="int32")
        l = fluid.data(name="l", shape=[2, 2], dtype="int32")
        return fluid.layers.mean_iou(p, l, num_classes=2)
    miou, wrong, correct = _run(build, {"p": pred, "l": label}, 3)
    # class 0: 1 correct, 1 wrong (a 0 predicted 1); class 1: 2 correct, 1 wrong
    np.testing.assert_allclose(np.array(miou), [(1 / 2 + 2 / 3) / 2], rtol=1e-6)
    np.testing.assert_array_equal(np.array(correct), [1, 2])


def test_edit_distance_with_ignored_tokens():
    place = fluid.CPUPlace()
    hyps = fluid.create_lod_tensor([[1, 2, 0, 3], [4, 0]], [[4, 2]], place)
    refs = fluid.create_lod_tensor([[1, 3], [4, 5]], [[2, 2]], place)

    def build():
        h = fluid.data(name="h", shape=[None, 1], dtype="int64", lod_level=1)
        r = fluid.data(name="r", shape=[None, 1], dtype="int64", lod_level=1)
        return fluid.layers.edit_distance(h, r, normalized=False, ignored_tokens=[0])
    distance, number = _run(build, {"h": hyps, "r": refs}, 2)
    # [1, 2, 3] vs [1, 3]: one deletion; [4] vs [4, 5]: one insertion
    np.testing.assert_array_equal(np.array(distance), [[1.0], [1.0]])
    np.testing.assert_array_equal(np.array(number), [2])


def test_ctc_greedy_decoder_merges_repeats_and_drops_blanks():
    steps = np.eye(4, dtype="float32")[[0, 2, 2, 0, 3, 3, 1, 1, 0]] * 0.9 + 0.025
    probs = fluid.create_lod_tensor(steps, [[6, 3]], fluid.CPUPlace())

    def build():
        x = fluid.data(name="x", shape=[None, 4], dtype="float32", lod_level=1)
        return [fluid.layers.ctc_greedy_decoder(x, blank=0)]
    (decoded,) = _run(build, {"x": probs}, 1)
    assert decoded.lod() == [[0, 2, 3]]
    np.testing.assert_array_equal(np.array(decoded).reshape(-1), [2, 3, 1])
