"""gather_tree against a beam-by-beam NumPy backtrack."""
import numpy as np
import pytest

from fluid_nb.errors import InvalidArgument

from .op_test import OpCase, check_output, table_tests

rng = np.random.RandomState(8)


def gather_tree_ref(i, a):
    ids, parents = i["Ids"], i["Parents"]
    steps, batch, beam = ids.shape
    out = np.zeros_like(ids)
    for b in range(batch):
        for k in range(beam):
            out[steps - 1, b, k] = ids[steps - 1, b, k]
            parent = parents[steps - 1, b, k]
            for t in range(steps - 2, -1, -1):
                out[t, b, k] = ids[t, b, parent]
                parent = parents[t, b, parent]
    return {"Out": out}


# Paddle's documented example: ids and parents of 3 steps, 2 entries, beam 2
DOC_IDS = np.array([[[2, 2], [6, 1]], [[3, 9], [6, 1]], [[0, 1], [9, 0]]], "int64")
DOC_PARENTS = np.array([[[0, 0], [1, 1]], [[1, 0], [1, 0]], [[0, 0], [0, 1]]], "int64")

CASES = [
    OpCase("gather_tree", {"Ids": DOC_IDS, "Parents": DOC_PARENTS}, ref=gather_tree_ref,
           name="documented"),
    OpCase("gather_tree", {"Ids": rng.randint(0, 9, (5, 3, 4)).astype("int64"),
                           "Parents": rng.randint(0, 4, (5, 3, 4)).astype("int64")},
           ref=gather_tree_ref, name="random_int64"),
    OpCase("gather_tree", {"Ids": rng.randint(0, 9, (1, 2, 3)).astype("int32"),
                           "Parents": rng.randint(0, 3, (1, 2, 3)).astype("int32")},
           ref=gather_tree_ref, name="one_step_int32"),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


def test_documented_example_gives_the_documented_sequences():
    out = check_output(CASES[0])["Out"]
    assert np.asarray(out).tolist() == [[[2, 2], [1, 6]], [[3, 3], [6, 1]], [[0, 1], [9, 0]]]


def test_a_parent_outside_the_beam_is_refused():
    parents = DOC_PARENTS.copy()
    parents[2, 0, 1] = 5
    with pytest.raises(InvalidArgument, match="Parents"):
        check_output(OpCase("gather_tree", {"Ids": DOC_IDS, "Parents": parents},
                            ref=lambda i, a: {}))
