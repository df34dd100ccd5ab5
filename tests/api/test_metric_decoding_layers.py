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


def test_auc_over_a_window_of_batches_and_over_all_of_them():
    """The batch AUC covers the last slide_steps batches, the global one every batch; with
    enough thresholds both equal the exact rank statistic of the scores they cover."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        p = fluid.data(name="p", shape=[None, 2], dtype="float32")
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        global_auc, batch_auc, states = fluid.layers.auc(p, label, num_thresholds=1000,
                                                         slide_steps=1)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    rng = np.random.RandomState(0)
    seen_scores, seen_labels = [], []
    for _ in range(3):
        scores = np.round(rng.rand(40), 3).astype("float32")
        labels = (rng.rand(40) < scores).astype("int64")
        seen_scores.append(scores)
        seen_labels.append(labels)
        g, b = exe.run(main, feed={"p": np.stack([1 - scores, scores], 1),
                                   "label": labels.reshape(-1, 1)},
                       fetch_list=[global_auc, batch_auc])
        np.testing.assert_allclose(b, [_exact(scores, labels)], atol=0.02)
        np.testing.assert_allclose(g, [_exact(np.concatenate(seen_scores),
                                              np.concatenate(seen_labels))], atol=0.02)
    assert len(states) == 4


def _exact(scores, labels):
    pos, neg = scores[labels == 1], scores[labels == 0]
    return np.mean([(a > b) + 0.5 * (a == b) for a in pos for b in neg])
