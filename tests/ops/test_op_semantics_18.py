"""Op behaviours as Fluid 1.8 runs them: nce's custom sampler, gradients of a duplicable
input with some entries not wanted, scatter_nd_add with an empty coordinate, run-time
indices in ``Variable.__getitem__``, sampling_id's int64 ids, one_hot's run-time id
check, py_func of no inputs, retinanet_detection_output's tie order, and the core and
transpiler names Fluid scripts use."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import FluidError
from fluid_nb.tensor.dtypes import VarType

from .op_test import OpCase, check_grad, check_output

L = fluid.layers


def _run(build, feed, fetch_grads=()):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        outs = build()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    return main, exe.run(main, feed=feed, fetch_list=list(outs), scope=scope)


# --- nce with sampler 2 (custom distribution) --------------------------------------------------
def test_alias_tables_draw_the_custom_distribution():
    from fluid_nb.layers.loss import _alias_tables
    probs = np.array([0.5, 0.1, 0.05, 0.25, 0.1])
    alias, keep = _alias_tables(list(probs))
    n = len(probs)
    # P(i) = (keep[i] + sum of (1 - keep[j]) over j aliasing to i) / n
    drawn = np.array(keep, float)
    for j, a in enumerate(alias):
        if a >= 0:
            drawn[a] += 1 - keep[j]
    np.testing.assert_allclose(drawn / n, probs, atol=1e-12)


def _nce_custom_case(grad):
    rng = np.random.RandomState(3)
    classes = 6
    probs = rng.dirichlet(np.ones(classes)).astype("float32")
    from fluid_nb.layers.loss import _alias_tables
    alias, keep = _alias_tables([float(p) for p in probs])
    inputs = {"Input": rng.randn(4, 3), "Label": rng.randint(0, classes, (4, 1)),
              "Weight": rng.randn(classes, 3), "Bias": rng.randn(classes),
              "CustomDistProbs": probs, "CustomDistAlias": np.array(alias, "int32"),
              "CustomDistAliasProbs": np.array(keep, "float32")}
    negatives = [0, 2, 5]

    def ref(i, a):
        x, w, b, label = i["Input"], i["Weight"], i["Bias"], i["Label"]
        ids = np.concatenate([label, np.tile(negatives, (len(x), 1))], axis=1)
        o = 1 / (1 + np.exp(-(np.einsum("nd,nkd->nk", x, w[ids]) + b[ids])))
        q = i["CustomDistProbs"].astype("float64")[ids] * len(negatives)
        cost = np.where(np.arange(ids.shape[1]) < 1, -np.log(o / (o + q)),
                        -np.log(q / (o + q))).sum(1, keepdims=True)
        return {"Cost": cost}

    return OpCase("nce", inputs, attrs={"num_total_classes": classes, "num_neg_samples": 3,
                                        "sampler": 2, "custom_neg_classes": negatives},
                  ref=ref, grad=["Input", "Weight", "Bias"] if grad else [],
                  grad_outputs=["Cost"], name="custom_dist")


def test_nce_custom_distribution_weighs_by_its_probabilities():
    check_output(_nce_custom_case(grad=False))


def test_nce_custom_distribution_gradient():
    check_grad(_nce_custom_case(grad=True))


def test_nce_layer_draws_negatives_from_custom_dist():
    freq = np.array([0.0, 0.0, 0.7, 0.3, 0.0], "float32")

    def build():
        x = L.data(name="x", shape=[4], dtype="float32")
        label = L.data(name="label", shape=[1], dtype="int64")
        cost = L.nce(x, label, num_total_classes=5, num_neg_samples=40, sampler="custom_dist",
                     custom_dist=freq.tolist(), seed=7)
        labels = [op for op in fluid.default_main_program().global_block().ops
                  if op.type == "nce"][0].output("SampleLabels")[0]
        return cost, fluid.default_main_program().global_block().var(labels)

    _, (cost, labels) = _run(build, {"x": np.ones((3, 4), "float32"),
                                     "label": np.zeros((3, 1), "int64")})
    drawn = labels[:, 1:]
    assert set(np.unique(drawn)) <= {2, 3}  # never a class of probability 0
    assert np.isfinite(cost).all() and cost.shape == (3, 1)


def test_nce_custom_dist_needs_one_probability_a_class():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = L.data(name="x", shape=[4], dtype="float32")
        label = L.data(name="label", shape=[1], dtype="int64")
        with pytest.raises(ValueError, match="custom_dist"):
            L.nce(x, label, num_total_classes=5, sampler="custom_dist", custom_dist=[1.0])


# --- a list input whose gradient is wanted for some entries only -------------------------------
def test_concat_gradient_keeps_each_input_in_its_place():
    def build():
        a = L.data(name="a", shape=[2], dtype="float32")  # data: no gradient
        c = L.fc(a, 2, bias_attr=False,
                 param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(1.0)))
        loss = L.mean(L.concat([a, c], axis=1))
        _, params_grads = fluid.optimizer.SGD(0.1).minimize(loss)
        return [params_grads[0][1]]

    main, (w_grad,) = _run(build, {"a": np.ones((3, 2), "float32")})
    concat_grad = [op for op in main.global_block().ops if op.type == "concat_grad"][0]
    assert concat_grad.output("X@GRAD")[0] == fluid.framework.program.EMPTY_VAR_NAME
    # dLoss/dW[i, j] = sum over the 3 rows of a[i] / 12 (the mean of 3 x 4 values)
    np.testing.assert_allclose(w_grad, np.full((2, 2), 0.25), rtol=1e-6)


def test_multiplex_gradient_with_candidates_not_wanted():
    def build():
        xs = [L.data(name=f"x{k}", shape=[3], dtype="float32") for k in range(3)]
        for x in xs[1:]:
            x.stop_gradient = False
        ids = L.data(name="ids", shape=[1], dtype="int32")
        out = L.multiplex(xs, ids)
        return fluid.backward.gradients([L.reduce_sum(out)], xs[1:])

    feed = {f"x{k}": np.full((3, 3), k, "float32") for k in range(3)}
    feed["ids"] = np.array([[2], [0], [1]], "int32")
    _, (g1, g2) = _run(build, feed)
    np.testing.assert_array_equal(g1[:, 0], [0, 0, 1])
    np.testing.assert_array_equal(g2[:, 0], [1, 0, 0])


# --- scatter_nd_add: an empty coordinate addresses the whole of X ------------------------------
def test_scatter_nd_add_with_an_empty_index():
    rng = np.random.RandomState(0)
    case = OpCase("scatter_nd_add",
                  {"X": rng.rand(3, 4), "Index": np.zeros((2, 0), "int32"),
                   "Updates": rng.rand(2, 3, 4)},
                  ref=lambda i, a: {"Out": i["X"] + i["Updates"].sum(0)},
                  grad=["X", "Updates"], name="empty_index")
    check_output(case)
    check_grad(case)


# --- Variable.__getitem__ with run-time indices ------------------------------------------------
def test_getitem_takes_variables_as_bounds_and_indices():
    data = np.arange(3 * 4 * 5, dtype="float32").reshape(3, 4, 5)

    def build():
        x = L.data(name="x", shape=[3, 4, 5], append_batch_size=False, dtype="float32")
        minus_1 = L.fill_constant([1], "int32", -1)
        one = L.fill_constant([1], "int32", 1)
        return (x[minus_1], x[one:3, :, 1:minus_1], x[minus_1, 0:4:2, ::-1],
                x[:, one])

    _, (last, sliced, strided, column) = _run(build, {"x": data})
    np.testing.assert_array_equal(last, data[-1])
    np.testing.assert_array_equal(sliced, data[1:3, :, 1:-1])
    np.testing.assert_array_equal(strided, data[-1, 0:4:2, ::-1])
    np.testing.assert_array_equal(column, data[:, 1])


# --- sampling_id, one_hot, py_func -------------------------------------------------------------
def test_sampling_id_gives_int64_ids():
    def build():
        x = L.data(name="x", shape=[3], dtype="float32")
        ids = L.sampling_id(x, seed=1)
        assert ids.dtype == VarType.INT64
        return [ids]

    _, (ids,) = _run(build, {"x": np.tile(np.array([[0.0, 1.0, 0.0]], "float32"), (4, 1))})
    assert ids.dtype == np.int64
    np.testing.assert_array_equal(ids, [1, 1, 1, 1])


def test_one_hot_op_checks_the_ids_it_gets_at_run_time():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = L.data(name="x", shape=[1], dtype="float32")  # declared float: not refused here
        block = main.global_block()
        out = block.create_var(name="hot", dtype="float32")
        block.append_op(type="one_hot", inputs={"X": [x]}, outputs={"Out": [out]},
                        attrs={"depth": 4})
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(FluidError, match="one_hot: input 'X' dtype"):
        exe.run(main, feed={"x": np.array([[1.0]], "float32")}, fetch_list=[out])


def test_py_func_of_no_inputs():
    def build():
        out = fluid.default_main_program().current_block().create_var(
            name="made", dtype="float32", shape=[1])
        L.py_func(func=lambda: np.array([7.0], "float32"), x=None, out=out)
        return [out]

    _, (made,) = _run(build, {})
    np.testing.assert_array_equal(made, [7.0])


# --- retinanet_detection_output: equal scores keep class order --------------------------------
def test_retinanet_detection_output_breaks_score_ties_by_class():
    # one anchor per level, two classes with equal scores: the lower class comes first
    anchors = np.array([[0, 0, 9, 9]], "float32")
    deltas = np.zeros((1, 1, 4), "float32")
    scores = np.array([[[0.9, 0.9]]], "float32")
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        block = main.global_block()
        names = {"BBoxes": deltas, "Scores": scores, "Anchors": anchors,
                 "ImInfo": np.array([[20, 20, 1]], "float32")}
        for name, value in names.items():
            block.create_var(name=name, shape=list(value.shape), dtype="float32")
        out = block.create_var(name="out", dtype="float32", lod_level=1)
        block.append_op(type="retinanet_detection_output",
                        inputs={k: [k] for k in names}, outputs={"Out": [out]},
                        attrs={"score_threshold": 0.05, "nms_top_k": 10,
                               "nms_threshold": 0.3, "keep_top_k": 10})
    got, = fluid.Executor(fluid.CPUPlace()).run(main, feed=names, fetch_list=[out])
    np.testing.assert_array_equal(got[:, 0], [1, 2])


# --- core and transpiler names -----------------------------------------------------------------
def test_set_eager_deletion_mode_sets_the_memory_flags():
    before = fluid.get_flags(["FLAGS_eager_delete_tensor_gb",
                              "FLAGS_memory_fraction_of_eager_deletion",
                              "FLAGS_fast_eager_deletion_mode"])
    try:
        fluid.core._set_eager_deletion_mode(-1.0, 0.5, False)
        now = fluid.get_flags(list(before))
        assert now == {"FLAGS_eager_delete_tensor_gb": -1.0,
                       "FLAGS_memory_fraction_of_eager_deletion": 0.5,
                       "FLAGS_fast_eager_deletion_mode": False}
    finally:
        fluid.set_flags(before)


def test_distributed_mode_names_the_server_modes():
    from fluid_nb.transpiler.distribute_transpiler import DistributedMode
    assert (DistributedMode.SYNC, DistributedMode.ASYNC, DistributedMode.HALF_ASYNC,
            DistributedMode.GEO) == (0, 1, 2, 3)
