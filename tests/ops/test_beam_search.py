"""beam_search and beam_search_decode on the cases Paddle pins its ops with (inputs and
expected outputs as facts), plus the structure a machine translation loop relies on."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument
from fluid_nb.tensor.tensor import LoDTensor, LoDTensorArray
from fluid_nb.ops import registry

from .op_test import OpCase, check_on_device, check_output

LOD = [[0, 2, 4], [0, 1, 2, 3, 4]]
IDS = np.array([[4, 2], [7, 3], [3, 5], [8, 1]], "int64")


def _case(name, pre_ids, pre_scores, ids, scores, beam_size, accumulated, out_ids, out_scores,
          out_lod, parents, lod=LOD):
    def ref(i, a):
        return {"selected_ids": (np.array(out_ids, "int64").reshape(-1, 1), out_lod),
                "selected_scores": (np.array(out_scores, "float32").reshape(-1, 1), out_lod),
                "parent_idx": np.array(parents, "int32")}
    return OpCase("beam_search",
                  {"pre_ids": np.array(pre_ids, "int64").reshape(-1, 1),
                   "pre_scores": np.array(pre_scores, "float32").reshape(-1, 1),
                   "ids": np.array(ids, "int64"), "scores": np.array(scores, "float32")},
                  attrs={"level": 0, "beam_size": beam_size, "end_id": 0,
                         "is_accumulated": accumulated},
                  lod={"ids": lod, "scores": lod}, ref=ref, name=name)


CASES = [
    _case("three_candidates", [1, 2, 3, 4], [0.1, 0.2, 0.3, 0.4],
          [[4, 2, 5], [2, 1, 3], [3, 5, 2], [8, 2, 1]],
          [[0.5, 0.3, 0.2], [0.6, 0.3, 0.1], [0.9, 0.5, 0.1], [0.7, 0.5, 0.1]], 2, True,
          [4, 2, 3, 8], [0.5, 0.6, 0.9, 0.7], [[0, 2, 4], [0, 1, 2, 3, 4]], [0, 1, 2, 3]),
    _case("one_prefix_keeps_both", [1, 2, 3, 4], [0.1, 0.2, 0.3, 0.4], IDS,
          [[0.6, 0.9], [0.5, 0.3], [0.9, 0.5], [0.1, 0.7]], 2, True,
          [2, 4, 3, 1], [0.9, 0.6, 0.9, 0.7], [[0, 2, 4], [0, 2, 2, 3, 4]], [0, 0, 2, 3]),
    _case("ended_prefix_carries_itself", [1, 0, 0, 4], [0.1, 1.2, 0.5, 0.4], IDS,
          [[0.6, 0.9], [0.5, 0.3], [0.9, 0.5], [0.6, 0.7]], 2, True,
          [2, 0, 1, 8], [0.9, 1.2, 0.7, 0.6], [[0, 2, 4], [0, 1, 2, 2, 4]], [0, 1, 3, 3]),
    _case("finished_source_drops_out", [0, 0, 0, 4], [0.1, 1.2, 0.5, 0.4], IDS,
          [[0.6, 0.9], [0.5, 0.3], [0.9, 0.5], [0.6, 0.7]], 2, True,
          [1, 8], [0.7, 0.6], [[0, 2, 4], [0, 0, 0, 0, 2]], [3, 3]),
    _case("not_accumulated", [1, 2, 3, 4], [0.1, 2.2, 0.3, 0.4], IDS,
          [[0.6, 0.9], [0.5, 0.3], [0.9, 0.5], [0.1, 0.7]], 2, False,
          [7, 3, 3, 1], [1.50685, 0.996027, 0.194639, 0.043325],
          [[0, 2, 4], [0, 0, 2, 3, 4]], [1, 1, 2, 3]),
    _case("beam_of_one", [1, 2, 3, 4], [0.1, 0.2, 0.3, 0.4], IDS,
          [[0.6, 0.9], [0.5, 0.3], [0.9, 0.5], [0.1, 0.7]], 1, True,
          [2, 7, 3, 1], [0.9, 0.5, 0.9, 0.7], [[0, 1, 2, 3, 4], [0, 1, 2, 3, 4]],
          [0, 1, 2, 3], lod=[[0, 1, 2, 3, 4], [0, 1, 2, 3, 4]]),
    # level 0 counts entries of level 1: its sources' prefixes are rows 0-1 and 2-3 once
    # level 1 is applied (Paddle's absolute offsets), and the output keeps those offsets
    _case("sources_found_through_level_1", [1, 2, 3, 4], [0.1, 0.2, 0.3, 0.4], IDS,
          [[0.6, 0.9], [0.5, 0.3], [0.9, 0.5], [0.1, 0.7]], 2, True,
          [2, 4, 3, 1], [0.9, 0.6, 0.9, 0.7], [[0, 2, 4], [0, 2, 2, 3, 4]], [0, 0, 2, 3],
          lod=[[0, 1, 3], [0, 2, 3, 4]]),
    # equal scores: the later prefix row ranks higher, and a full beam gives its last place
    # to the later of two equal candidates of one row
    _case("ties_favour_the_later_prefix", [1, 2], [0.0, 0.0], [[3, 4], [5, 6]],
          [[0.5, 0.5], [0.5, 0.5]], 2, True, [5, 6], [0.5, 0.5], [[0, 2], [0, 0, 2]], [1, 1],
          lod=[[0, 2], [0, 1, 2]]),
    _case("ties_within_a_row", [1], [0.0], [[3, 4, 5]], [[0.5, 0.5, 0.5]], 2, True,
          [3, 5], [0.5, 0.5], [[0, 1], [0, 2]], [0, 0], lod=[[0, 1], [0, 1]]),
]


def _whole_vocabulary_ref(i, a):
    lod = [[0, 2], [0, 1, 2]]
    return {"selected_ids": (np.array([[1], [2]], "int64"), lod),
            "selected_scores": (np.array([[0.6], [0.5]], "float32"), lod),
            "parent_idx": np.array([0, 1], "int32")}


# without ids, a candidate's id is its column: the scores cover the whole vocabulary
CASES.append(OpCase("beam_search",
                    {"pre_ids": np.array([[1], [2]], "int64"),
                     "pre_scores": np.zeros((2, 1), "float32"),
                     "scores": np.array([[0.1, 0.6, 0.3], [0.2, 0.2, 0.5]], "float32")},
                    attrs={"level": 0, "beam_size": 2, "end_id": 0, "is_accumulated": True},
                    lod={"scores": [[0, 2], [0, 1, 2]]}, ref=_whole_vocabulary_ref,
                    name="ids_are_columns_without_ids"))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_beam_search_step(case):
    check_output(case)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_beam_search_step_on_the_strict_device(case):
    check_on_device(case)


def _array(steps, dtype):
    return LoDTensorArray([LoDTensor(np.array(values, dtype), lod) for lod, values in steps])


# five steps of two sources, beam 2, end_id 1: the hypotheses branch, end, and carry their end
STEPS = [([[0, 1, 2], [0, 1, 2]], [0, 0]), ([[0, 1, 2], [0, 2, 4]], [2, 3, 4, 5]),
         ([[0, 2, 4], [0, 2, 2, 4, 4]], [3, 1, 5, 4]),
         ([[0, 2, 4], [0, 1, 2, 3, 4]], [1, 1, 3, 5]), ([[0, 2, 4], [0, 0, 0, 2, 2]], [5, 1])]


def test_beam_search_decode_backtraces_the_steps_into_sentences():
    kernel = registry.get("beam_search_decode").kernel_for("cpu")
    ctx = type("Ctx", (), {"attrs": {"beam_size": 2, "end_id": 1}, "xp": np})()
    ids, scores = kernel(ctx, _array(STEPS, "int64"), _array(STEPS, "float32"))
    assert ids.lod() == [[0, 2, 4], [0, 4, 7, 12, 17]] == scores.lod()
    np.testing.assert_array_equal(
        np.asarray(ids), [0, 2, 3, 1, 0, 2, 1, 0, 4, 5, 3, 5, 0, 4, 5, 3, 1])
    with pytest.raises(InvalidArgument, match="tensor arrays"):
        kernel(ctx, LoDTensor(np.zeros(2, "int64")), _array(STEPS, "float32"))


def test_beam_search_decode_on_the_strict_device_gives_device_sentences():
    from fluid_nb.testing.strict_device import DeviceArray, xp

    def on_device(steps, dtype):
        return LoDTensorArray([LoDTensor(xp.asarray(np.array(values, dtype)), lod)
                               for lod, values in steps])
    kernel = registry.get("beam_search_decode").kernel_for("gpu")
    ctx = type("Ctx", (), {"attrs": {"beam_size": 2, "end_id": 1}, "xp": xp})()
    ids, scores = kernel(ctx, on_device(STEPS, "int64"), on_device(STEPS, "float32"))
    assert isinstance(ids.array, DeviceArray) and isinstance(scores.array, DeviceArray)
    assert ids.lod() == [[0, 2, 4], [0, 4, 7, 12, 17]]
    np.testing.assert_array_equal(
        np.asarray(ids), [0, 2, 3, 1, 0, 2, 1, 0, 4, 5, 3, 5, 0, 4, 5, 3, 1])


def test_the_layers_check_their_inputs_as_fluid_does():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        pre_ids = fluid.data(name="pre_ids", shape=[None, 1], dtype="int64", lod_level=2)
        pre_scores = fluid.data(name="pre_scores", shape=[None, 1], dtype="float32",
                                lod_level=2)
        scores = fluid.data(name="scores", shape=[None, 4], dtype="float32", lod_level=2)
        with pytest.raises(TypeError, match="pre_ids"):
            fluid.layers.beam_search(np.zeros((2, 1), "int64"), pre_scores, None, scores,
                                     beam_size=2, end_id=0)
        with pytest.raises(TypeError, match="pre_scores's dtype"):
            fluid.layers.beam_search(pre_ids, pre_ids, None, scores, beam_size=2, end_id=0)
        with pytest.raises(TypeError, match="tensor array"):
            fluid.layers.beam_search_decode(pre_ids, pre_scores, beam_size=2, end_id=0)
        ids, kept = fluid.layers.beam_search(pre_ids, pre_scores, None, scores, beam_size=2,
                                             end_id=0)
        assert ids.lod_level == 2 and kept.shape == (-1, 1)
