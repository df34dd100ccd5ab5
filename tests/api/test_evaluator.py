"""fluid.evaluator (Fluid 1.8's deprecated evaluators) and fluid.metrics.DetectionMAP: the
running totals live in persistable variables that ops add to at every batch; reset sets
them to 0 and eval computes the result from them."""
import warnings

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.ops import registry

PLACE = fluid.CPUPlace()


def _lod(rows, lengths):
    return fluid.create_lod_tensor(np.array(rows, "int64").reshape(-1, 1), [lengths], PLACE)


@pytest.fixture
def exe():
    with fluid.scope_guard(fluid.Scope()):
        yield fluid.Executor(PLACE)


def test_chunk_evaluator_accumulates_counts_over_batches(exe):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        infer = fluid.layers.data("infer", [1], dtype="int64", lod_level=1)
        label = fluid.layers.data("label", [1], dtype="int64", lod_level=1)
        with pytest.warns(Warning, match="ChunkEvaluator is deprecated"):
            evaluator = fluid.evaluator.ChunkEvaluator(infer, label, "IOB", num_chunk_types=1)
    # named as Fluid 1.8 names them: the helper's name made unique once more, a suffix
    assert [s.name for s in evaluator.states] == [
        "chunk_eval_0_0_num_infer_chunks", "chunk_eval_0_1_num_label_chunks",
        "chunk_eval_0_2_num_correct_chunks"]
    assert all(s.persistable for s in evaluator.states) and len(evaluator.metrics) == 3
    exe.run(startup)
    evaluator.reset(exe)
    # B I O B vs B I O O: 2 inferred, 1 labelled, 1 right; B O vs B O: 1, 1, 1
    batches = [([0, 1, 2, 0], [0, 1, 2, 2], [4]), ([0, 2], [0, 2], [2])]
    for infer_rows, label_rows, lengths in batches:
        precision, _, _ = exe.run(main, feed={"infer": _lod(infer_rows, lengths),
                                              "label": _lod(label_rows, lengths)},
                                  fetch_list=evaluator.metrics)
    assert float(np.asarray(precision).reshape(-1)[0]) == 1.0  # the last batch's own
    precision, recall, f1 = evaluator.eval(exe)
    assert precision.dtype == np.float32 and precision.shape == (1,)
    np.testing.assert_allclose([precision[0], recall[0], f1[0]], [2 / 3, 1.0, 0.8], rtol=1e-6)
    evaluator.reset(exe)
    assert [v[0] for v in evaluator.eval(exe)] == [0.0, 0.0, 0.0]


def test_edit_distance_evaluator_averages_over_sequences(exe):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        hyps = fluid.data(name="h", shape=[None, 1], dtype="int64", lod_level=1)
        refs = fluid.data(name="r", shape=[None, 1], dtype="int64", lod_level=1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            evaluator = fluid.evaluator.EditDistance(hyps, refs)
    exe.run(startup)
    evaluator.reset(exe)
    # normalised distances: [1, 2, 3] vs [1, 3] -> 1/2; [4] vs [4] -> 0; [7] vs [8] -> 1
    batches = [([1, 2, 3, 4], [3, 1], [1, 3, 4], [2, 1]), ([7], [1], [8], [1])]
    totals = []
    for h, hl, r, rl in batches:
        total, wrong = exe.run(main, feed={"h": _lod(h, hl), "r": _lod(r, rl)},
                               fetch_list=evaluator.metrics)
        totals.append((float(np.asarray(total).reshape(-1)[0]),
                       int(np.asarray(wrong).reshape(-1)[0])))
    assert totals == [(0.5, 1), (1.0, 1)]
    avg_distance, avg_error = evaluator.eval(exe)
    np.testing.assert_allclose(np.asarray(avg_distance).reshape(-1), [1.5 / 3], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(avg_error).reshape(-1), [2 / 3], rtol=1e-6)


def test_evaluators_are_made_in_the_root_block_only():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        infer = fluid.layers.data("infer", [1], dtype="int64", lod_level=1)
        cond = fluid.layers.fill_constant([1], "bool", True)
        with fluid.layers.While(cond).block():
            with pytest.raises(ValueError, match="ChunkEvaluator: the block it is made in "
                                                 "expected the root block"):
                fluid.evaluator.ChunkEvaluator(infer, infer, "IOB", num_chunk_types=1)
            fluid.layers.assign(fluid.layers.fill_constant([1], "bool", False), cond)


def _detection_inputs():
    detect = fluid.layers.data(name="detect_res", shape=[10, 6], append_batch_size=False,
                               dtype="float32", lod_level=1)
    label = fluid.layers.data(name="label", shape=[10, 1], append_batch_size=False,
                              dtype="int32", lod_level=1)
    box = fluid.layers.data(name="bbox", shape=[10, 4], append_batch_size=False,
                            dtype="float32", lod_level=1)
    return detect, label, box


@pytest.mark.parametrize("make", [
    lambda *args, **kw: fluid.metrics.DetectionMAP(*args, **kw),
    lambda *args, **kw: fluid.evaluator.DetectionMAP(*args, **kw)],
    ids=["metrics", "evaluator"])
def test_detection_map_builds_the_batch_and_the_accumulated_map(make):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard(), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        map_eval = make(*_detection_inputs(), class_num=21, overlap_threshold=0.4,
                        ap_version="11point")
    cur_map, accum_map = map_eval.get_map_var()
    ops = [op for op in main.global_block().ops if op.type == "detection_map"]
    assert [op.output("MAP") for op in ops] == [[cur_map.name], [accum_map.name]]
    first, second = ops
    assert first.input("DetectRes") == ["detect_res"] and "HasState" not in first.inputs
    assert second.input("HasState") == [map_eval.has_state.name]
    # the accumulated counts are read and written in place, as persistable states
    states = [second.input(slot)[0] for slot in ("PosCount", "TruePos", "FalsePos")]
    assert states == [second.output(slot)[0]
                      for slot in ("AccumPosCount", "AccumTruePos", "AccumFalsePos")]
    assert all(main.global_block().var(n).persistable for n in states)
    assert states[0].endswith("_accum_pos_count")
    assert second.attr("class_num") == 21 and second.attr("ap_type") == "11point"
    assert abs(second.attr("overlap_threshold") - 0.4) < 1e-6
    # the label rows: [label, x1, y1, x2, y2]; has_state starts at 0 and is set to 1
    concat = [op for op in main.global_block().ops if op.type == "concat"][0]
    assert concat.output("Out") == first.input("Label")
    assert main.global_block().ops[-1].type == "fill_constant"
    assert main.global_block().ops[-1].output("Out") == [map_eval.has_state.name]
    assert map_eval.has_state.name in startup.global_block().vars


def test_detection_map_with_difficult_flags_and_bad_class_num():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        detect, label, box = _detection_inputs()
        difficult = fluid.layers.data(name="difficult", shape=[10, 1], dtype="int32",
                                      append_batch_size=False, lod_level=1)
        map_eval = fluid.metrics.DetectionMAP(detect, label, box, difficult, class_num=3)
        concat = [op for op in fluid.default_main_program().global_block().ops
                  if op.type == "concat"][0]
        assert len(concat.input("X")) == 3
        assert map_eval.get_map_var()[0] is not None
        with pytest.raises(TypeError, match="class_num expected a positive int"):
            fluid.metrics.DetectionMAP(detect, label, box, class_num=None)


@pytest.mark.skipif(registry.find("detection_map") is None,
                    reason="the detection_map op is not defined")
def test_detection_map_accumulates_until_reset(exe):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        map_eval = fluid.metrics.DetectionMAP(*_detection_inputs(), class_num=3)
    cur_map, accum_map = map_eval.get_map_var()
    exe.run(startup)
    # one image, one ground-truth box of class 1; a hit in batch 1, a miss in batch 2
    gt_label = fluid.create_lod_tensor(np.array([[1]], "int32"), [[1]], PLACE)
    gt_box = fluid.create_lod_tensor(np.array([[0, 0, 1, 1]], "float32"), [[1]], PLACE)

    def detections(box):
        return fluid.create_lod_tensor(np.array([[1, 0.9] + box], "float32"), [[1]], PLACE)
    hit, miss = detections([0, 0, 1, 1]), detections([2, 2, 3, 3])
    feed = {"label": gt_label, "bbox": gt_box}
    first = exe.run(main, feed=dict(feed, detect_res=hit), fetch_list=[cur_map, accum_map])
    second = exe.run(main, feed=dict(feed, detect_res=miss), fetch_list=[cur_map, accum_map])
    assert float(np.asarray(first[0]).reshape(-1)[0]) == pytest.approx(1.0)
    assert float(np.asarray(second[0]).reshape(-1)[0]) == pytest.approx(0.0)
    assert 0.0 < float(np.asarray(second[1]).reshape(-1)[0]) < 1.0
    map_eval.reset(exe)
    third = exe.run(main, feed=dict(feed, detect_res=miss), fetch_list=[accum_map])
    assert float(np.asarray(third[0]).reshape(-1)[0]) == pytest.approx(0.0)
