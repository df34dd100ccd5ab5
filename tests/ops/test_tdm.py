"""tdm_child against a loop over the tree's info table; tdm_sampler's draws checked
against the tree they come from (positives on the path, distinct negatives of the layer)."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument
from .op_test import OpCase, assert_build_fails, run_case, table_tests

# rows: item id, layer id, parent id, child 0, child 1 (node 0 pads)
TREE = np.array([[0, 0, 0, 1, 2], [0, 1, 0, 3, 4], [0, 1, 0, 5, 0], [7, 2, 1, 0, 0],
                 [8, 2, 1, 0, 0], [9, 2, 2, 0, 0]], "int64")


def child_ref(i, a):
    x, info = i["X"], i["TreeInfo"]
    child = np.zeros(x.shape + (2,), "int32")
    leaf = np.zeros_like(child)
    for idx in np.ndindex(*x.shape):
        if x[idx] != 0:
            child[idx] = info[x[idx], 3:5]
        leaf[idx] = [int(info[c, 0] != 0) for c in child[idx]]
    return {"Child": child, "LeafMask": leaf}


# a 3-layer tree numbered layer after layer: each leaf's path below the root (0 pads a
# short path), and the nodes of each layer one after another
TRAVEL = np.array([[1, 3, 7], [1, 3, 8], [1, 4, 9], [2, 5, 10], [2, 6, 11], [2, 6, 0]],
                  "int64")
LAYERS = [[1, 2], [3, 4, 5, 6], [7, 8, 9, 10, 11]]
OFFSETS = list(np.cumsum([0] + [len(l) for l in LAYERS]))
LAYER = np.array(sum(LAYERS, []), "int64").reshape(-1, 1)
INT64 = int(fluid.core.VarDesc.VarType.INT64)


def sampler_check(outs, inputs, attrs):
    """Each row: per layer the path's node first (label 1), then distinct nodes of that
    layer other than it (label 0); a padded step is all zeros with mask 0."""
    out, labels, mask = (np.asarray(outs[s]) for s in ("Out", "Labels", "Mask"))
    negatives, positive = attrs["neg_samples_num_list"], int(attrs["output_positive"])
    assert out.shape == (inputs["X"].size, sum(n + positive for n in negatives))
    for row, leaf in enumerate(inputs["X"].reshape(-1)):
        col = 0
        for depth, n in enumerate(negatives):
            width = n + positive
            got, lab, msk = (a[row, col:col + width] for a in (out, labels, mask))
            target = TRAVEL[leaf, depth]
            if target == 0:
                assert not got.any() and not lab.any() and not msk.any()
            else:
                assert msk.all()
                if positive:
                    assert got[0] == target and lab[0] == 1
                negs = got[positive:]
                assert not lab[positive:].any() and target not in negs
                assert len(set(negs.tolist())) == n
                assert set(negs.tolist()) <= set(LAYERS[depth])
            col += width


def sampler_case(negatives, positive=True, dtype=INT64, name=""):
    return OpCase("tdm_sampler", {"X": np.array([[0], [3], [5], [4], [2]], "int64"),
                                  "Travel": TRAVEL, "Layer": LAYER},
                  attrs={"neg_samples_num_list": negatives, "output_positive": positive,
                         "layer_offset_lod": [int(o) for o in OFFSETS], "seed": 3,
                         "dtype": dtype},
                  check=sampler_check, name=name)


CASES = [
    sampler_case([0, 0, 0], name="positives_only"),
    sampler_case([1, 2, 3], name="some_negatives"),
    sampler_case([1, 3, 4], name="every_other_node"),
    sampler_case([1, 1, 2], positive=False, dtype=2, name="negatives_only_int32"),
    OpCase("tdm_child", {"X": np.array([[0, 1, 2], [3, 2, 1]], "int64"), "TreeInfo": TREE},
           attrs={"child_nums": 2, "dtype": int(fluid.core.VarDesc.VarType.INT32)},
           ref=child_ref),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


def test_sampler_with_a_seed_repeats_its_draws():
    case = sampler_case([1, 2, 3])
    first = np.asarray(run_case(case)[2]["Out"])
    assert np.array_equal(first, np.asarray(run_case(case)[2]["Out"]))


def test_sampler_rejects_more_negatives_than_a_layer_has():
    case = sampler_case([2, 0, 0])
    assert_build_fails("tdm_sampler", case.inputs, case.attrs, "neg_samples_num_list", "[0, 1]")


def test_sampler_rejects_a_leaf_outside_the_travel_table():
    case = sampler_case([0, 0, 0])
    case.inputs = dict(case.inputs, X=np.array([[6]], "int64"))
    with pytest.raises(InvalidArgument, match=r"leaf ids in \[0, 6\)"):
        run_case(case)


def test_contrib_layers_build_and_run_the_tree_ops():
    main, startup = fluid.Program(), fluid.Program()
    init = fluid.initializer.NumpyArrayInitializer
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[1], dtype="int64")
        samples, labels, mask = fluid.contrib.layers.tdm_sampler(
            x, [1, 2, 3], [len(l) for l in LAYERS], leaf_node_num=len(TRAVEL),
            tree_travel_attr=fluid.ParamAttr(initializer=init(TRAVEL)),
            tree_layer_attr=fluid.ParamAttr(initializer=init(LAYER.reshape(-1))),
            seed=1, tree_dtype="int64", dtype="int64")
        child, leaf = fluid.contrib.layers.tdm_child(
            x, node_nums=len(TREE), child_nums=2, dtype="int64",
            param_attr=fluid.ParamAttr(initializer=init(TREE)))
    assert [list(s.shape) for s in samples] == [[-1, 2, 1], [-1, 3, 1], [-1, 4, 1]]
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    ids = np.array([[0], [4]], "int64")
    got = exe.run(main, feed={"x": ids}, fetch_list=[samples[2], labels[0], child, leaf],
                  scope=scope)
    assert got[0][:, 0, 0].tolist() == [7, 11]
    assert got[1][:, 0, 0].tolist() == [1, 1]
    assert got[2].tolist() == [[[0, 0]], [[0, 0]]] == got[3].tolist()


def test_contrib_tdm_sampler_checks_its_lists():
    x = fluid.layers.data(name="x", shape=[1], dtype="int64")
    with pytest.raises(InvalidArgument, match="neg_samples_num_list"):
        fluid.contrib.layers.tdm_sampler(x, [1, 2], [2, 4, 5], leaf_node_num=5)
    with pytest.raises(InvalidArgument, match=r"neg_samples_num_list\[0\]"):
        fluid.contrib.layers.tdm_sampler(x, [2, 2], [2, 4], leaf_node_num=4)
