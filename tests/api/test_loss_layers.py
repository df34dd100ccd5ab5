"""The further loss layers of fluid.layers against NumPy, built as users call them, and a
small training loop on each trainable one."""
import numpy as np
import pytest

import fluid_nb as fluid

RNG = np.random.RandomState(3)


def _run(build, feed):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        out = build({name: fluid.data(name=name, shape=list(v.shape), dtype=str(v.dtype))
                     for name, v in feed.items()})
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    return exe.run(main, feed=feed, fetch_list=[out])[0]


X = RNG.uniform(-2, 2, (4, 3)).astype("float32")
P = RNG.uniform(0.1, 0.9, (4, 1)).astype("float32")
Y01 = RNG.randint(0, 2, (4, 1)).astype("float32")


@pytest.mark.parametrize("build, feed, reference", [
    (lambda v: fluid.layers.sigmoid_cross_entropy_with_logits(v["x"], v["y"]),
     {"x": X, "y": (X > 0).astype("float32")},
     lambda f: np.log1p(np.exp(f["x"])) - f["x"] * f["y"]),
    (lambda v: fluid.layers.huber_loss(v["x"], v["y"], delta=1.0),
     {"x": X, "y": np.zeros_like(X)},
     lambda f: np.where(np.abs(f["x"]) <= 1, 0.5 * f["x"] ** 2, np.abs(f["x"]) - 0.5)),
    (lambda v: fluid.layers.smooth_l1(v["x"], v["y"]), {"x": X, "y": np.zeros_like(X)},
     lambda f: np.where(np.abs(f["x"]) < 1, 0.5 * f["x"] ** 2,
                        np.abs(f["x"]) - 0.5).sum(1, keepdims=True)),
    (lambda v: fluid.layers.log_loss(v["p"], v["y"]), {"p": P, "y": Y01},
     lambda f: -f["y"] * np.log(f["p"] + 1e-4) - (1 - f["y"]) * np.log(1 - f["p"] + 1e-4)),
    (lambda v: fluid.layers.mse_loss(v["x"], v["y"]), {"x": X, "y": np.ones_like(X)},
     lambda f: np.mean((f["x"] - 1) ** 2)),
    (lambda v: fluid.layers.rank_loss(v["y"], v["l"], v["r"]),
     {"y": Y01, "l": P, "r": P[::-1].copy()},
     lambda f: np.log1p(np.exp(f["l"] - f["r"])) - f["y"] * (f["l"] - f["r"])),
    (lambda v: fluid.layers.margin_rank_loss(v["y"], v["l"], v["r"], margin=0.2),
     {"y": Y01 * 2 - 1, "l": P, "r": P[::-1].copy()},
     lambda f: np.maximum(0, -f["y"] * (f["l"] - f["r"]) + 0.2)),
], ids=["sigmoid_ce", "huber", "smooth_l1", "log_loss", "mse", "rank", "margin_rank"])
def test_loss_layer_matches_numpy(build, feed, reference):
    got = _run(build, feed)
    np.testing.assert_allclose(np.asarray(got).reshape(-1),
                               np.asarray(reference({k: v.astype("float64")
                                                     for k, v in feed.items()})).reshape(-1),
                               rtol=1e-5, atol=1e-6)


def test_kldiv_bpr_and_dice():
    logits = RNG.uniform(-1, 1, (3, 4)).astype("float32")
    log_q = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    target = np.exp(RNG.uniform(-1, 1, (3, 4))).astype("float32")
    target /= target.sum(1, keepdims=True)
    got = _run(lambda v: fluid.layers.kldiv_loss(v["x"], v["t"], reduction="sum"),
               {"x": log_q, "t": target})
    np.testing.assert_allclose(got, [(target * (np.log(target) - log_q)).sum()], rtol=1e-5)

    scores = RNG.uniform(-1, 1, (2, 3)).astype("float32")
    label = np.array([[2], [0]], "int64")
    got = _run(lambda v: fluid.layers.bpr_loss(v["x"], v["y"]), {"x": scores, "y": label})
    want = [[-np.mean([np.log(1 / (1 + np.exp(-(scores[r, l] - scores[r, j]))))
                       for j in range(3) if j != l])] for r, l in enumerate(label[:, 0])]
    np.testing.assert_allclose(got, want, rtol=1e-5)

    probs = np.array([[[0.9, 0.1], [0.2, 0.8]]], "float32")
    truth = np.array([[[0], [1]]], "int64")
    got = _run(lambda v: fluid.layers.dice_loss(v["p"], v["t"]), {"p": probs, "t": truth})
    one_hot = np.array([[[1, 0], [0, 1]]], "float32")
    want = 1 - 2 * (probs * one_hot).sum() / (probs.sum() + one_hot.sum() + 1e-5)
    np.testing.assert_allclose(got, [want], rtol=1e-5)


def test_npair_loss_trains_embeddings_apart():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        a = fluid.data(name="a", shape=[4, 3], dtype="float32")
        p = fluid.data(name="p", shape=[4, 3], dtype="float32")
        labels = fluid.data(name="labels", shape=[4], dtype="float32")
        ea = fluid.layers.fc(a, 3, name="emb", param_attr=fluid.ParamAttr(name="w"))
        ep = fluid.layers.fc(p, 3, param_attr=fluid.ParamAttr(name="w"))
        loss = fluid.layers.npair_loss(ea, ep, labels)
        fluid.optimizer.SGD(0.5).minimize(loss)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    feed = {"a": np.eye(4, 3, dtype="float32"), "p": np.eye(4, 3, dtype="float32") * 0.9,
            "labels": np.array([0, 1, 2, 3], "float32")}
    losses = [float(exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0])
              for _ in range(30)]
    assert losses[-1] < losses[0]


def test_center_loss_pulls_the_centers_to_their_classes():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, 2], dtype="float32")
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        loss = fluid.layers.mean(fluid.layers.center_loss(
            x, label, num_classes=2, alpha=0.5, param_attr=fluid.ParamAttr(name="centers")))
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": np.array([[1, 1], [1.2, 0.8], [-1, -1]], "float32"),
            "label": np.array([[0], [0], [1]], "int64")}
    losses = [float(exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0])
              for _ in range(20)]
    assert losses[-1] < losses[0] / 10
    np.testing.assert_allclose(np.array(scope.find_var("centers").value),
                               [[1.1, 0.9], [-1, -1]], atol=0.05)


def test_teacher_student_sigmoid_loss_layer():
    x = np.array([[0.5], [-1.0]], "float32")
    label = np.array([[-2.0], [1.3]], "float32")  # click 0 without teacher; click 1, q = 0.3
    got = _run(lambda v: fluid.layers.teacher_student_sigmoid_loss(v["x"], v["y"]),
               {"x": x, "y": label})
    soft = np.log1p(np.exp(x.astype("float64")))
    want = [soft[0], (soft[1] - x[1]) + soft[1] - x[1] * 0.3]
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_warpctc_trains_a_sequence_labeller():
    """A per-step classifier over a LoD batch learns to emit its label sequences: the CTC
    loss falls, and best-path decoding gives the labels."""
    place = fluid.CPUPlace()
    steps = np.eye(6, dtype="float32")[[0, 1, 2, 2, 3, 4, 5, 5]]
    features = fluid.create_lod_tensor(steps, [[4, 4]], place)
    labels = fluid.create_lod_tensor([[1, 2], [3, 1]], [[2, 2]], place)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, 6], dtype="float32", lod_level=1)
        y = fluid.data(name="y", shape=[None, 1], dtype="int64", lod_level=1)
        scores = fluid.layers.fc(x, size=4)
        loss = fluid.layers.mean(fluid.layers.warpctc(scores, y, blank=0))
        decoded = fluid.layers.ctc_greedy_decoder(fluid.layers.softmax(scores), blank=0)
        fluid.optimizer.Adam(0.1).minimize(loss)
    exe, scope = fluid.Executor(place), fluid.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": features, "y": labels}
    losses = [float(exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0])
              for _ in range(60)]
    assert losses[-1] < losses[0] / 10
    (out,) = exe.run(main, feed=feed, fetch_list=[decoded], scope=scope, return_numpy=False)
    np.testing.assert_array_equal(np.array(out).reshape(-1), [1, 2, 3, 1])


def test_hsigmoid_learns_the_classes_of_a_tree():
    x_value = np.eye(6, dtype="float32")
    label_value = np.arange(6, dtype="int64").reshape(-1, 1)
    main, startup = fluid.Program(), fluid.Program()
    startup.random_seed = 7
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, 6], dtype="float32")
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        cost = fluid.layers.mean(fluid.layers.hsigmoid(x, label, num_classes=6))
        fluid.optimizer.SGD(1.0).minimize(cost)
    names = [v.name for v in main.global_block().all_parameters()]
    assert names == ["hierarchical_sigmoid_0.w_0", "hierarchical_sigmoid_0.b_0"]
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    costs = [float(exe.run(main, feed={"x": x_value, "label": label_value},
                           fetch_list=[cost], scope=scope)[0]) for _ in range(100)]
    # Each class's path costs log(2) per node at chance (about 1.8 in all for
    # six leaves); learnt, every node's sigmoid points down the right branch. The two
    # classes whose path is a step shorter than the widest (3 steps) keep paying log(2)
    # for it, as Fluid's kernel sums the full PreOut row.
    floor = 2 / 6 * np.log(2.0)
    assert costs[0] > 1.0
    assert all(later < earlier for earlier, later in zip(costs, costs[1:]))
    assert costs[-1] - floor < 0.2


def test_nce_trains_against_sampled_negatives():
    """Rows learn their classes among 50: the cost falls and the true class's score rises
    above the others'."""
    x_value = np.eye(10, dtype="float32")
    label_value = (np.arange(10, dtype="int64") * 4).reshape(-1, 1)
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, 10], dtype="float32")
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        cost = fluid.layers.mean(fluid.layers.nce(x, label, num_total_classes=50,
                                                  num_neg_samples=5))
        fluid.optimizer.Adam(0.1).minimize(cost)
    assert [p.name for p in main.global_block().all_parameters()] == ["nce_0.w_0", "nce_0.b_0"]
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    costs = [float(exe.run(main, feed={"x": x_value, "label": label_value},
                           fetch_list=[cost], scope=scope)[0]) for _ in range(60)]
    assert np.mean(costs[-5:]) < np.mean(costs[:5]) / 3
    scores = x_value @ np.array(scope.find_var("nce_0.w_0").value).T
    assert (scores.argmax(axis=1) == label_value[:, 0]).all()


def test_sampled_softmax_trains_a_large_output_layer():
    x_value = np.eye(12, dtype="float32")
    label_value = (np.arange(12, dtype="int64") * 7 % 40).reshape(-1, 1)
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 2
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, 12], dtype="float32")
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        logits = fluid.layers.fc(x, size=40)
        loss = fluid.layers.mean(fluid.layers.sampled_softmax_with_cross_entropy(
            logits, label, num_samples=8))
        fluid.optimizer.Adam(0.1).minimize(loss)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    losses = [float(exe.run(main, feed={"x": x_value, "label": label_value},
                            fetch_list=[loss], scope=scope)[0]) for _ in range(40)]
    assert np.mean(losses[-5:]) < np.mean(losses[:5]) / 3
    full = x_value @ np.array(scope.find_var("fc_0.w_0").value) + np.array(
        scope.find_var("fc_0.b_0").value)
    assert (full.argmax(axis=1) == label_value[:, 0]).mean() > 0.8
