"""Weight decay and gradient clipping: one SGD step compared with NumPy.

The program is ``loss = reduce_sum(fc(x))`` with known parameters, so the raw gradients are
``dW = sum_n x[n, :]`` (for every output column) and ``db = batch size``. As in Fluid 1.x's
``Optimizer.apply_gradients``, gradients are clipped first, then regularized, then applied.
"""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument

L = fluid.layers
LR = 0.1
W0 = np.array([[0.5, -1.0], [2.0, 0.0], [-3.0, 1.5]], dtype="float32")
B0 = np.array([0.25, -0.75], dtype="float32")
X = np.array([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0], [2.0, 2.0, -2.0]], dtype="float32")


def _raw_grads():
    dw = np.repeat(X.astype(np.float64).sum(axis=0)[:, None], W0.shape[1], axis=1)
    db = np.full(B0.shape, float(X.shape[0]))
    return dw, db


def _build(w_attr=None, b_attr=None, before_minimize=None, **optimizer_kwargs):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data(name="x", shape=[3], dtype="float32")
        w_attr = w_attr or {}
        b_attr = b_attr or {}
        out = L.fc(input=x, size=2,
                   param_attr=fluid.ParamAttr(
                       name="w", initializer=fluid.initializer.NumpyArrayInitializer(W0),
                       **w_attr),
                   bias_attr=fluid.ParamAttr(
                       name="b", initializer=fluid.initializer.NumpyArrayInitializer(B0),
                       **b_attr))
        loss = L.reduce_sum(out)
        if before_minimize is not None:
            before_minimize(main)
        fluid.optimizer.SGD(learning_rate=LR, **optimizer_kwargs).minimize(loss)
    fluid.verify(main)
    return main, startup


def _step(main, startup, grads=None):
    """Run the startup program and one step; check ``w@GRAD`` and ``b@GRAD`` against
    ``grads`` (default: the raw gradients) and return the new params."""
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    dw, db, w, b = exe.run(main, feed={"x": X}, fetch_list=["w@GRAD", "b@GRAD", "w", "b"],
                           scope=scope)
    want_dw, want_db = grads if grads is not None else _raw_grads()
    np.testing.assert_allclose(dw, want_dw, rtol=1e-6)
    np.testing.assert_allclose(db, want_db, rtol=1e-6)
    return np.asarray(w, dtype=np.float64), np.asarray(b, dtype=np.float64)


def _sgd(param, grad):
    return param.astype(np.float64) - LR * grad


# --- regularizers -------------------------------------------------------------------------

def test_l2_decay_is_sgd_on_grad_plus_coeff_times_param():
    c = 0.3
    dw, db = _raw_grads()
    # as in Paddle, the decay is summed into the gradient variable itself
    w, b = _step(*_build(regularization=fluid.regularizer.L2Decay(c)),
                 grads=(dw + c * W0, db + c * B0))
    np.testing.assert_allclose(w, _sgd(W0, dw + c * W0), rtol=1e-6)
    np.testing.assert_allclose(b, _sgd(B0, db + c * B0), rtol=1e-6)


def test_l1_decay_adds_coeff_times_sign():
    c = 0.4
    dw, db = _raw_grads()
    w, b = _step(*_build(regularization=fluid.regularizer.L1Decay(c)),
                 grads=(dw + c * np.sign(W0), db + c * np.sign(B0)))
    np.testing.assert_allclose(w, _sgd(W0, dw + c * np.sign(W0)), rtol=1e-6)
    np.testing.assert_allclose(b, _sgd(B0, db + c * np.sign(B0)), rtol=1e-6)
    assert (W0 == 0).any()  # sign(0) = 0: that entry gets no decay


def test_regularizer_aliases_and_ops():
    assert fluid.regularizer.L2DecayRegularizer is fluid.regularizer.L2Decay
    assert fluid.regularizer.L1DecayRegularizer is fluid.regularizer.L1Decay
    main, _ = _build(regularization=fluid.regularizer.L2Decay(0.5))
    types = [op.type for op in main.global_block().ops]
    # per parameter: scale(param) then sum(grad, decay), before the sgd ops
    assert types.count("scale") >= 2 and types.count("sum") >= 2
    assert max(i for i, t in enumerate(types) if t == "sum") < types.index("sgd")
    sgd_grads = sorted(op.input("Grad")[0] for op in main.global_block().ops if op.type == "sgd")
    assert sgd_grads == ["b@GRAD", "w@GRAD"]
    sums = [op for op in main.global_block().ops if op.type == "sum"]
    assert sorted(op.output("Out")[0] for op in sums) == sgd_grads  # in place, as Paddle
    assert all(op.output("Out")[0] == op.input("X")[0] for op in sums)
    assert "L2Decay" in str(fluid.regularizer.L2Decay(0.5))


def test_l2_decay_refuses_non_number_coeff():
    with pytest.raises(InvalidArgument, match="regularization_coeff expected float"):
        fluid.regularizer.L2Decay("0.1")


def test_param_attr_regularizer_wins_over_the_optimizers():
    cw, cb = 0.2, 0.05
    dw, db = _raw_grads()
    w, b = _step(*_build(w_attr={"regularizer": fluid.regularizer.L1Decay(cw)},
                         regularization=fluid.regularizer.L2Decay(cb)),
                 grads=(dw + cw * np.sign(W0), db + cb * B0))
    np.testing.assert_allclose(w, _sgd(W0, dw + cw * np.sign(W0)), rtol=1e-6)  # its own L1
    np.testing.assert_allclose(b, _sgd(B0, db + cb * B0), rtol=1e-6)  # the optimizer's L2


def test_param_attr_regularizer_without_optimizer_regularization():
    c = 0.25
    dw, db = _raw_grads()
    w, b = _step(*_build(b_attr={"regularizer": fluid.regularizer.L2Decay(c)}),
                 grads=(dw, db + c * B0))
    np.testing.assert_allclose(w, _sgd(W0, dw), rtol=1e-6)
    np.testing.assert_allclose(b, _sgd(B0, db + c * B0), rtol=1e-6)


# --- clipping -----------------------------------------------------------------------------

def _clip_by_norm(g, clip_norm):
    norm = np.sqrt((g ** 2).sum())
    return g * clip_norm / norm if norm > clip_norm else g


def test_clip_by_value_clamps_each_gradient():
    clip = fluid.clip.GradientClipByValue(max=2.5, min=-1.0)
    w, b = _step(*_build(grad_clip=clip))
    dw, db = _raw_grads()
    assert dw.max() > 2.5 and dw.min() < -1.0 and db.max() > 2.5  # really clipped
    np.testing.assert_allclose(w, _sgd(W0, np.clip(dw, -1.0, 2.5)), rtol=1e-6)
    np.testing.assert_allclose(b, _sgd(B0, np.clip(db, -1.0, 2.5)), rtol=1e-6)


def test_clip_by_value_min_defaults_to_minus_max_and_checks_order():
    clip = fluid.clip.GradientClipByValue(2.0)
    assert (clip.min, clip.max) == (-2.0, 2.0)
    w, b = _step(*_build(grad_clip=clip))
    dw, db = _raw_grads()
    np.testing.assert_allclose(w, _sgd(W0, np.clip(dw, -2.0, 2.0)), rtol=1e-6)
    np.testing.assert_allclose(b, _sgd(B0, np.clip(db, -2.0, 2.0)), rtol=1e-6)
    with pytest.raises(InvalidArgument, match="min expected <= max"):
        fluid.clip.GradientClipByValue(max=1.0, min=2.0)


def test_clip_by_norm_rescales_each_gradient_on_its_own():
    clip_norm = 4.0
    w, b = _step(*_build(grad_clip=fluid.clip.GradientClipByNorm(clip_norm)))
    dw, db = _raw_grads()
    assert np.linalg.norm(dw) > clip_norm and np.linalg.norm(db) > clip_norm
    np.testing.assert_allclose(w, _sgd(W0, _clip_by_norm(dw, clip_norm)), rtol=1e-5)
    np.testing.assert_allclose(b, _sgd(B0, _clip_by_norm(db, clip_norm)), rtol=1e-5)
    # each clipped gradient has norm clip_norm exactly
    np.testing.assert_allclose(np.linalg.norm((W0 - w) / LR), clip_norm, rtol=1e-5)
    np.testing.assert_allclose(np.linalg.norm((B0 - b) / LR), clip_norm, rtol=1e-5)


def test_clip_by_norm_leaves_small_gradients_alone():
    w, b = _step(*_build(grad_clip=fluid.clip.GradientClipByNorm(1e3)))
    dw, db = _raw_grads()
    np.testing.assert_allclose(w, _sgd(W0, dw), rtol=1e-6)
    np.testing.assert_allclose(b, _sgd(B0, db), rtol=1e-6)


@pytest.mark.parametrize("clip_norm", [5.0, 1e3])
def test_clip_by_global_norm_scales_all_gradients_together(clip_norm):
    w, b = _step(*_build(grad_clip=fluid.clip.GradientClipByGlobalNorm(clip_norm)))
    dw, db = _raw_grads()
    global_norm = np.sqrt((dw ** 2).sum() + (db ** 2).sum())
    scale = clip_norm / max(global_norm, clip_norm)
    if clip_norm == 5.0:
        assert global_norm > clip_norm and scale < 1
    np.testing.assert_allclose(w, _sgd(W0, dw * scale), rtol=1e-5)
    np.testing.assert_allclose(b, _sgd(B0, db * scale), rtol=1e-5)
    if scale < 1:  # the clipped gradients together have norm clip_norm
        steps = np.concatenate([((W0 - w) / LR).ravel(), ((B0 - b) / LR).ravel()])
        np.testing.assert_allclose(np.linalg.norm(steps), clip_norm, rtol=1e-4)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_clip_by_global_norm_of_a_sparse_embedding_is_that_of_the_dense_one(optimizer):
    """A sparse embedding's gradient (SelectedRows, a row repeated) counts in the global
    norm by its merged rows and stays sparse when scaled: the same steps as the dense
    embedding's."""
    ids = np.array([[1], [3], [1], [0]], "int64")
    table = np.random.RandomState(2).uniform(-1, 1, (5, 3)).astype("float32")

    def train(is_sparse):
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup), fluid.unique_name.guard():
            x = L.data(name="ids", shape=[1], dtype="int64")
            emb = L.embedding(x, size=[5, 3], is_sparse=is_sparse, param_attr=fluid.ParamAttr(
                name="table", initializer=fluid.initializer.NumpyArrayInitializer(table)))
            loss = L.reduce_sum(L.square(emb))
            fluid.clip.set_gradient_clip(fluid.clip.GradientClipByGlobalNorm(clip_norm=0.5))
            opt = fluid.optimizer.SGD(0.1) if optimizer == "sgd" else fluid.optimizer.Adam(0.1)
            opt.minimize(loss)
        exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
        exe.run(startup, scope=scope)
        for _ in range(3):
            exe.run(main, feed={"ids": ids}, scope=scope)
        return main, np.array(scope.find_var("table").value)
    sparse_main, sparse = train(True)
    _, dense = train(False)
    assert "merge_selected_rows" in [op.type for op in sparse_main.global_block().ops]
    np.testing.assert_allclose(sparse, dense, rtol=1e-5, atol=1e-6)
    assert not np.allclose(sparse, table)


def test_clipping_happens_before_regularization():
    """Fluid 1.x apply_gradients: grad_clip, then append_regularization_ops."""
    c, clip_norm = 0.3, 5.0
    w, b = _step(*_build(grad_clip=fluid.clip.GradientClipByGlobalNorm(clip_norm),
                         regularization=fluid.regularizer.L2Decay(c)))
    dw, db = _raw_grads()
    scale = clip_norm / max(np.sqrt((dw ** 2).sum() + (db ** 2).sum()), clip_norm)
    np.testing.assert_allclose(w, _sgd(W0, dw * scale + c * W0), rtol=1e-5)
    np.testing.assert_allclose(b, _sgd(B0, db * scale + c * B0), rtol=1e-5)


@pytest.mark.parametrize("clip", [fluid.clip.GradientClipByValue(2.0),
                                  fluid.clip.GradientClipByNorm(4.0),
                                  fluid.clip.GradientClipByGlobalNorm(5.0)],
                         ids=["value", "norm", "global_norm"])
def test_set_gradient_clip_has_the_same_effect_as_grad_clip(clip):
    expected = _step(*_build(grad_clip=clip))
    got = _step(*_build(before_minimize=lambda main: fluid.clip.set_gradient_clip(clip)))
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-6)
    np.testing.assert_allclose(got[1], expected[1], rtol=1e-6)
    dw, _ = _raw_grads()
    assert not np.allclose(got[0], _sgd(W0, dw))  # and it did clip


def test_set_gradient_clip_with_param_list_clips_only_those():
    clip = fluid.clip.GradientClipByValue(2.0)
    w, b = _step(*_build(before_minimize=lambda main: fluid.clip.set_gradient_clip(
        clip, param_list=["w"], program=main)))
    dw, db = _raw_grads()
    np.testing.assert_allclose(w, _sgd(W0, np.clip(dw, -2.0, 2.0)), rtol=1e-6)
    np.testing.assert_allclose(b, _sgd(B0, db), rtol=1e-6)


def test_set_gradient_clip_does_not_leak_into_other_programs():
    fluid.clip.set_gradient_clip(fluid.clip.GradientClipByValue(1.0), param_list=[],
                                 program=fluid.Program())
    w, b = _step(*_build())
    dw, db = _raw_grads()
    np.testing.assert_allclose(w, _sgd(W0, dw), rtol=1e-6)
    np.testing.assert_allclose(b, _sgd(B0, db), rtol=1e-6)


def test_l2_decay_of_a_sparse_gradient_decays_every_row_into_a_dense_newgrad():
    """As in Paddle 2.x: the decay term covers the whole table, so the regularized gradient
    is dense, ``<grad>@NEWGRAD@``, and every row decays, looked up or not."""
    c = 0.5
    table = np.arange(10, dtype="float32").reshape(5, 2)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        ids = L.data(name="ids", shape=[1], dtype="int64")
        emb = L.embedding(ids, size=[5, 2], is_sparse=True, param_attr=fluid.ParamAttr(
            name="emb", initializer=fluid.initializer.NumpyArrayInitializer(table)))
        loss = L.reduce_sum(emb)
        fluid.optimizer.SGD(learning_rate=LR,
                            regularization=fluid.regularizer.L2Decay(c)).minimize(loss)
    fluid.verify(main)
    (sgd,) = [op for op in main.global_block().ops if op.type == "sgd"]
    assert sgd.input("Grad") == ["emb@GRAD@NEWGRAD@"]
    assert main.global_block().var("emb@GRAD").type == fluid.core.VarDesc.VarType.SELECTED_ROWS
    assert main.global_block().var("emb@GRAD@NEWGRAD@").type == \
        fluid.core.VarDesc.VarType.LOD_TENSOR
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    (new_table,) = exe.run(main, feed={"ids": np.array([[1], [3], [1]], dtype="int64")},
                           fetch_list=["emb"], scope=scope)
    raw = np.zeros((5, 2))
    raw[1] += 2.0  # id 1 looked up twice
    raw[3] += 1.0
    np.testing.assert_allclose(new_table, table - LR * (raw + c * table), rtol=1e-6)
