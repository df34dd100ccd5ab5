"""fluid.metrics and fluid.average as Fluid 1.x training loops use them: batch results
fetched from the layers that compute them (accuracy, chunk_eval, edit_distance, a
softmax) accumulated over batches, against the same figures computed on all the data at
once in NumPy."""
import numpy as np
import pytest

import fluid_nb as fluid

RNG = np.random.RandomState(43)


def test_accuracy_over_batches_weighted_by_batch_size_is_the_overall_accuracy():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        scores = fluid.data("scores", [None, 4])
        label = fluid.data("label", [None, 1], dtype="int64")
        accuracy = fluid.layers.accuracy(input=scores, label=label)
    exe = fluid.Executor(fluid.CPUPlace())
    all_scores = RNG.uniform(0, 1, (23, 4)).astype("float32")
    all_labels = RNG.randint(0, 4, (23, 1)).astype("int64")
    metric, average = fluid.metrics.Accuracy(), fluid.average.WeightedAverage()
    for start in range(0, 23, 5):  # batches of 5, 5, 5, 5, 3
        batch = slice(start, start + 5)
        value, = exe.run(main, feed={"scores": all_scores[batch], "label": all_labels[batch]},
                         fetch_list=[accuracy])
        size = len(all_labels[batch])
        metric.update(value=value, weight=size)
        average.add(value, size)
    want = np.mean(all_scores.argmax(axis=1) == all_labels[:, 0])
    np.testing.assert_allclose(metric.eval(), want, rtol=1e-6)
    np.testing.assert_allclose(average.eval(), want, rtol=1e-6)
    metric.reset()
    assert metric.value == 0.0 and metric.weight == 0.0
    with pytest.raises(ValueError, match="no data"):
        metric.eval()


def test_chunk_evaluator_adds_chunk_eval_counts():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        inferred = fluid.data("inferred", [None, 1], dtype="int64", lod_level=1)
        label = fluid.data("label", [None, 1], dtype="int64", lod_level=1)
        *_, num_infer, num_label, num_correct = fluid.layers.chunk_eval(
            input=inferred, label=label, chunk_scheme="IOB", num_chunk_types=2)
    exe = fluid.Executor(fluid.CPUPlace())
    metric = fluid.metrics.ChunkEvaluator()
    totals = np.zeros(3)
    for _ in range(3):
        tags = RNG.randint(0, 5, (12, 1)).astype("int64")
        truth = RNG.randint(0, 5, (12, 1)).astype("int64")
        counts = exe.run(main, feed={
            "inferred": fluid.create_lod_tensor(tags, [[5, 7]], fluid.CPUPlace()),
            "label": fluid.create_lod_tensor(truth, [[5, 7]], fluid.CPUPlace())},
            fetch_list=[num_infer, num_label, num_correct])
        metric.update(*counts)
        totals += [int(np.asarray(c).sum()) for c in counts]
    precision, recall, f1 = metric.eval()
    assert precision == pytest.approx(totals[2] / totals[0])
    assert recall == pytest.approx(totals[2] / totals[1])
    assert f1 == pytest.approx(2 * precision * recall / (precision + recall)
                               if totals[2] else 0.0)


def test_edit_distance_metric_over_batches():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        hyp = fluid.data("hyp", [None, 1], dtype="int64", lod_level=1)
        ref = fluid.data("ref", [None, 1], dtype="int64", lod_level=1)
        distances, seq_num = fluid.layers.edit_distance(hyp, ref, normalized=False)
    exe = fluid.Executor(fluid.CPUPlace())
    metric = fluid.metrics.EditDistance("wer")
    place = fluid.CPUPlace()
    batches = [([[1, 2, 3], [4, 5]], [[1, 2, 3], [4, 6]]), ([[7, 7]], [[7]])]
    for hyps, refs in batches:
        def lod(seqs):
            return fluid.create_lod_tensor(np.concatenate(seqs).reshape(-1, 1).astype("int64"),
                                           [[len(s) for s in seqs]], place)
        d, n = exe.run(main, feed={"hyp": lod(hyps), "ref": lod(refs)},
                       fetch_list=[distances, seq_num])
        metric.update(d, n)
    average_distance, instance_error = metric.eval()
    # distances 0, 1 and 1 over three sequences, two of them wrong
    assert average_distance == pytest.approx(2 / 3) and instance_error == pytest.approx(2 / 3)
    assert str(metric) == "wer"


def test_auc_matches_the_rank_statistic():
    positive = RNG.beta(4, 2, 300)
    negative = RNG.beta(2, 4, 500)
    metric = fluid.metrics.Auc("auc", num_thresholds=2 ** 16)
    for part in range(4):  # four batches
        p, n = positive[part::4], negative[part::4]
        scores = np.concatenate([p, n])
        metric.update(np.stack([1 - scores, scores], axis=1),
                      np.concatenate([np.ones(len(p)), np.zeros(len(n))]).astype("int64"))
    # the share of (positive, negative) pairs the score orders rightly
    want = np.mean(positive[:, None] > negative[None, :])
    assert metric.eval() == pytest.approx(want, abs=1e-3)
    metric.reset()
    assert metric.eval() == 0.0


def test_precision_recall_composite():
    preds = np.array([0.9, 0.2, 0.7, 0.6, 0.1, 0.8])
    labels = np.array([1, 0, 0, 1, 1, 1])
    composite = fluid.metrics.CompositeMetric()
    composite.add_metric(fluid.metrics.Precision())
    composite.add_metric(fluid.metrics.Recall())
    composite.update(preds[:3], labels[:3])
    composite.update(preds[3:], labels[3:])
    precision, recall = composite.eval()
    # predicted 1: samples 0, 2, 3, 5 (three right); labelled 1: 0, 3, 4, 5 (three found)
    assert precision == pytest.approx(3 / 4) and recall == pytest.approx(3 / 4)
    config = composite._metrics[0].get_config()
    assert config["states"] == {"tp": 3, "fp": 1}


def test_bad_values_are_refused_with_what_was_expected():
    with pytest.raises(ValueError, match="weight expected a number"):
        fluid.metrics.Accuracy().update(0.5, weight="3")
    with pytest.raises(ValueError, match="value expected a number"):
        fluid.average.WeightedAverage().add("x", 1)
    with pytest.raises(ValueError, match="no data"):
        fluid.average.WeightedAverage().eval()
    with pytest.raises(ValueError, match="MetricBase"):
        fluid.metrics.CompositeMetric().add_metric(object())
