"""detection_map on small detections whose precision-recall curves are worked out by hand,
with and without the accumulated state, difficult boxes and both AP types."""
import numpy as np
import pytest

from fluid_nb.errors import InvalidArgument
from .op_test import OpCase, assert_build_fails, run_case, table_tests

# one image: two boxes of class 1 (the second may be difficult)
GT = np.array([[1, 0, 0.1, 0.1, 0.3, 0.3], [1, 0, 0.6, 0.6, 0.8, 0.8]], "float32")
GT_DIFFICULT = GT.copy()
GT_DIFFICULT[1, 1] = 1
# a hit, the same box again (a duplicate: false positive), a hit on the second box, and a
# class-2 box where the image has no class 2 (a false positive of a class with no
# positives, so it does not enter the mean); boxes past the image are clipped to [0, 1]
DETECT = np.array([[1, 0.8, 0.1, 0.1, 0.3, 0.3], [1, 0.9, 0.1, 0.1, 0.3, 0.3],
                   [1, 0.7, 0.6, 0.6, 0.8, 0.8], [2, 0.4, 0.5, 0.5, 1.3, 1.2]], "float32")
ONE_IMAGE = {"DetectRes": [[0, 4]], "Label": [[0, 2]]}
ATTRS = {"class_num": 3, "overlap_threshold": 0.5, "ap_type": "integral"}
RECORDS_LOD = [[0, 0, 3, 4]]


def records(flags):
    return np.array([[0.9, flags[0]], [0.8, flags[1]], [0.7, flags[2]], [0.4, flags[3]]],
                    "float32")


def outputs(mean_ap, counts, tp=records([1, 0, 1, 0]), fp=records([0, 1, 0, 1]),
            lod=RECORDS_LOD):
    return {"MAP": np.array([mean_ap], "float32"),
            "AccumPosCount": np.array(counts, "int32").reshape(-1, 1),
            "AccumTruePos": (tp, lod), "AccumFalsePos": (fp, lod)}


# integral: precision [1, 1/2, 2/3] at recall [1/2, 1/2, 1]: 1 * 1/2 + 2/3 * 1/2
# 11point: precision 1 up to recall 0.5 (6 points), 2/3 above (5 points)
STATE_TP = np.array([[0.5, 0.0]], "float32")
STATE_FP = np.array([[0.5, 1.0]], "float32")
STATE = {"HasState": np.array([1], "int32"), "PosCount": np.array([[0], [1], [0]], "int32"),
         "TruePos": STATE_TP, "FalsePos": STATE_FP}
STATE_LOD = dict(ONE_IMAGE, TruePos=[[0, 0, 1, 1]], FalsePos=[[0, 0, 1, 1]])
WITH_STATE_TP = np.concatenate([STATE_TP, records([1, 0, 1, 0])])
WITH_STATE_FP = np.concatenate([STATE_FP, records([0, 1, 0, 1])])

CASES = [
    OpCase("detection_map", {"DetectRes": DETECT, "Label": GT}, attrs=ATTRS,
           lod=ONE_IMAGE, ref=lambda i, a: outputs(0.5 + 1 / 3, [0, 2, 0]), name="integral"),
    OpCase("detection_map", {"DetectRes": DETECT, "Label": GT},
           attrs=dict(ATTRS, ap_type="11point"), lod=ONE_IMAGE,
           ref=lambda i, a: outputs((6 + 5 * 2 / 3) / 11, [0, 2, 0]), name="11point"),
    OpCase("detection_map", {"DetectRes": DETECT, "Label": GT[:, [0, 2, 3, 4, 5]]},
           attrs=ATTRS, lod=ONE_IMAGE, ref=lambda i, a: outputs(0.5 + 1 / 3, [0, 2, 0]),
           name="label_without_difficult_column"),
    # the difficult box is not a positive, and the detection matching it is no record
    OpCase("detection_map", {"DetectRes": DETECT, "Label": GT_DIFFICULT},
           attrs=dict(ATTRS, evaluate_difficult=False), lod=ONE_IMAGE,
           ref=lambda i, a: outputs(1.0, [0, 1, 0], records([1, 0, 1, 0])[[0, 1, 3]],
                                    records([0, 1, 0, 1])[[0, 1, 3]], [[0, 0, 2, 3]]),
           name="skip_difficult"),
    OpCase("detection_map", {"DetectRes": DETECT, "Label": GT_DIFFICULT},
           attrs=ATTRS, lod=ONE_IMAGE, ref=lambda i, a: outputs(0.5 + 1 / 3, [0, 2, 0]),
           name="evaluate_difficult"),
    # the state adds one positive and a false positive at 0.5: precision [1, 1/2, 2/3, 1/2]
    # at recall [1/3, 1/3, 2/3, 2/3]
    OpCase("detection_map", {"DetectRes": DETECT, "Label": GT, **STATE}, attrs=ATTRS,
           lod=STATE_LOD,
           ref=lambda i, a: outputs(1 / 3 + 2 / 9, [0, 3, 0], WITH_STATE_TP, WITH_STATE_FP,
                                    [[0, 0, 4, 5]]),
           name="continues_the_state"),
    OpCase("detection_map",
           {"DetectRes": DETECT, "Label": GT, **dict(STATE, HasState=np.array([0], "int32"))},
           attrs=ATTRS, lod=STATE_LOD, ref=lambda i, a: outputs(0.5 + 1 / 3, [0, 2, 0]),
           name="has_state_0_starts_afresh"),
    # two images: the second has only a miss of class 1 at the top score: precision
    # [0, 1/2, 1/3, 1/2] at recall [0, 1/3, 1/3, 2/3]
    OpCase("detection_map",
           {"DetectRes": np.concatenate([DETECT, [[1, 0.95, 0.0, 0.7, 0.1, 0.8]]]).astype(
               "float32"), "Label": np.concatenate([GT, GT[:1]])},
           attrs=ATTRS, lod={"DetectRes": [[0, 4, 5]], "Label": [[0, 2, 3]]},
           ref=lambda i, a: {"MAP": np.array([0.5 / 3 + 0.5 / 3], "float32"),
                             "AccumPosCount": np.array([[0], [3], [0]], "int32")},
           name="two_images"),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


def test_detection_rows_must_have_six_columns():
    assert_build_fails("detection_map", {"DetectRes": DETECT[:, :5], "Label": GT}, ATTRS,
                       "DetectRes", "[M, 6]")


def test_ap_type_is_checked():
    assert_build_fails("detection_map", {"DetectRes": DETECT, "Label": GT},
                       dict(ATTRS, ap_type="voc"), "ap_type", "'11point'")


def test_images_of_labels_and_detections_must_agree():
    case = OpCase("detection_map", {"DetectRes": DETECT, "Label": GT}, attrs=ATTRS,
                  lod={"DetectRes": [[0, 2, 4]], "Label": [[0, 2]]})
    with pytest.raises(InvalidArgument, match="the same number of images"):
        run_case(case)


def test_detection_map_layer_gives_the_batch_map():
    import fluid_nb as fluid
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        detect = fluid.layers.data(name="detect", shape=[6], dtype="float32", lod_level=1)
        label = fluid.layers.data(name="label", shape=[6], dtype="float32", lod_level=1)
        mean_ap = fluid.layers.detection_map(detect, label, class_num=3,
                                             overlap_threshold=0.5, ap_version="11point")
    place = fluid.CPUPlace()
    (got,) = fluid.Executor(place).run(
        main, feed={"detect": fluid.create_lod_tensor(DETECT, [[4]], place),
                    "label": fluid.create_lod_tensor(GT, [[2]], place)},
        fetch_list=[mean_ap], scope=fluid.Scope())
    assert float(np.asarray(got).reshape(-1)[0]) == pytest.approx((6 + 5 * 2 / 3) / 11,
                                                                  rel=1e-6)
    with pytest.raises(InvalidArgument, match="ap_version"):
        with fluid.program_guard(fluid.Program(), fluid.Program()):
            detect = fluid.layers.data(name="detect", shape=[6], dtype="float32")
            fluid.layers.detection_map(detect, detect, class_num=3, ap_version="voc")
