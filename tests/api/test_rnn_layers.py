"""The recurrent layers build Paddle's ops and parameter names, and train end to end:
embedding -> fc -> dynamic_lstm/dynamic_gru -> sequence_pool(LAST) -> fc classifier."""
import numpy as np
import pytest

import fluid_nb as fluid
import fluid_nb.ops.rnn  # noqa: F401  (registers the family until _families lists it)
from fluid_nb import layers
from fluid_nb.errors import InvalidArgument
from fluid_nb.api.layer_helper import LayerHelper
from fluid_nb.api.layers.rnn import dynamic_gru, dynamic_lstm, gru_unit, lstm_unit

LOD = [[0, 5, 8, 10, 14]]


def build(fn, seed=1):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = seed
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        out = fn()
    return main, startup, out


def last_step(x):
    """sequence_pool(LAST), appended directly (the layer lives elsewhere)."""
    if hasattr(layers, "sequence_last_step"):
        return layers.sequence_last_step(x)
    helper = LayerHelper("sequence_pool", input=x)
    out = helper.create_variable_for_type_inference(x.dtype)
    index = helper.create_variable_for_type_inference("int32", stop_gradient=True)
    helper.append_op(type="sequence_pool", inputs={"X": [x]},
                     outputs={"Out": [out], "MaxIndex": [index]},
                     attrs={"pooltype": "LAST", "is_test": False})
    return out


def ops_of(program):
    return [op.type for op in program.global_block().ops]


def param(scope, name):
    return np.array(scope.find_var(name).get_tensor())


def classifier(rnn="lstm", **kwargs):
    def fn():
        words = layers.data(name="words", shape=[1], dtype="int64", lod_level=1)
        label = layers.data(name="label", shape=[1], dtype="int64")
        emb = layers.embedding(words, size=[20, 6])
        if rnn == "lstm":
            proj = layers.fc(emb, size=4 * 3)
            hidden, _ = dynamic_lstm(proj, size=4 * 3, **kwargs)
        else:
            proj = layers.fc(emb, size=3 * 3)
            hidden = dynamic_gru(proj, size=3, **kwargs)
        last = last_step(hidden)
        probs = layers.fc(last, size=2, act="softmax")
        loss = layers.mean(layers.cross_entropy(probs, label))
        return loss
    return fn


def feed_batch():
    rng = np.random.RandomState(3)
    words = rng.randint(0, 20, (LOD[0][-1], 1)).astype("int64")
    label = np.array([[0], [1], [0], [1]], dtype="int64")
    return {"words": (words, LOD), "label": label}


@pytest.mark.parametrize("kwargs", [{}, {"use_peepholes": False, "is_reverse": True}])
def test_dynamic_lstm_builds_paddles_op_and_parameters(kwargs):
    main, startup, loss = build(classifier("lstm", **kwargs))
    lstm = [op for op in main.global_block().ops if op.type == "lstm"][0]
    assert sorted(lstm.inputs) == ["Bias", "Input", "Weight"]
    assert lstm.input("Weight") == ["lstm_0.w_0"] and lstm.input("Bias") == ["lstm_0.b_0"]
    assert sorted(lstm.outputs) == ["BatchCellPreAct", "BatchGate", "Cell", "Hidden"]
    assert lstm.output("Hidden") == ["lstm_0.tmp_0"]
    peep = kwargs.get("use_peepholes", True)
    assert lstm.attrs["use_peepholes"] == peep
    assert lstm.attrs["is_reverse"] == kwargs.get("is_reverse", False)
    block = main.global_block()
    assert tuple(block.var("lstm_0.w_0").shape) == (3, 12)
    assert tuple(block.var("lstm_0.b_0").shape) == (1, 21 if peep else 12)
    assert block.var("lstm_0.tmp_0").lod_level == 1
    assert tuple(block.var("lstm_0.tmp_0").shape)[1:] == (3,)


@pytest.mark.parametrize("rnn", ["lstm", "gru"])
def test_classifier_forward_backward_and_training(rnn):
    main, startup, loss = build(classifier(rnn))
    with fluid.program_guard(main, startup):
        fluid.optimizer.SGD(learning_rate=0.5).minimize(loss)
    types = ops_of(main)
    assert rnn in types and rnn + "_grad" in types
    grads = {f"{rnn}_0.w_0@GRAD", f"{rnn}_0.b_0@GRAD"}
    assert grads <= set(main.global_block().vars)
    fluid.verify(main)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    feed = feed_batch()
    first = None
    for _ in range(15):
        value, gw = exe.run(main, feed=feed, fetch_list=[loss.name, f"{rnn}_0.w_0@GRAD"],
                            scope=scope)
        first = float(value) if first is None else first
        assert np.abs(gw).sum() > 0
    assert float(value) < first


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def test_dynamic_lstm_forward_matches_numpy_and_gradient_matches_differences():
    """float64 end to end: hidden from the layer's own parameters, and d(loss)/d(weight)
    from append_backward against central differences through the whole program."""
    def fn():
        x = layers.data(name="x", shape=[8], dtype="float64", lod_level=1)
        hidden, cell = dynamic_lstm(x, size=8, dtype="float64")
        loss = layers.mean(last_step(hidden))
        return x, hidden, loss

    main, startup, (x, hidden, loss) = build(fn)
    fluid.append_backward(loss)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    lod = [[0, 1, 4, 6]]
    data = np.random.RandomState(5).uniform(-1, 1, (6, 8))
    feed = {"x": (data, lod)}
    h, gw = exe.run(main, feed=feed, fetch_list=[hidden.name, "lstm_0.w_0@GRAD"], scope=scope)
    w, b = param(scope, "lstm_0.w_0"), param(scope, "lstm_0.b_0").reshape(-1)
    want = np.zeros((6, 2))
    for s, e in zip(lod[0], lod[0][1:]):
        hh, c = np.zeros(2), np.zeros(2)
        for row in range(s, e):
            z = data[row] + hh @ w + b[:8]
            i = _sigmoid(z[2:4] + b[8:10] * c)
            f = _sigmoid(z[4:6] + b[10:12] * c)
            c = f * c + i * np.tanh(z[:2])
            o = _sigmoid(z[6:] + b[12:14] * c)
            hh = o * np.tanh(c)
            want[row] = hh
    np.testing.assert_allclose(h, want, rtol=1e-10)

    tensor = scope.find_var("lstm_0.w_0").get_tensor()
    numeric = np.zeros_like(w)
    for k in range(w.size):
        values = []
        for sign in (1, -1):
            moved = w.copy().reshape(-1)
            moved[k] += sign * 1e-6
            tensor.set(moved.reshape(w.shape), fluid.CPUPlace())
            values.append(float(exe.run(main, feed=feed, fetch_list=[loss.name],
                                        scope=scope)[0]))
        numeric.reshape(-1)[k] = (values[0] - values[1]) / 2e-6
    np.testing.assert_allclose(gw, numeric, rtol=1e-5, atol=1e-9)


def test_dynamic_lstm_with_initial_states():
    def fn():
        x = layers.data(name="x", shape=[8], dtype="float32", lod_level=1)
        h0 = layers.data(name="h0", shape=[2], dtype="float32")
        c0 = layers.data(name="c0", shape=[2], dtype="float32")
        hidden, cell = dynamic_lstm(x, size=8, h_0=h0, c_0=c0)
        return hidden, cell

    main, startup, (hidden, cell) = build(fn)
    op = [op for op in main.global_block().ops if op.type == "lstm"][0]
    assert op.input("H0") == ["h0"] and op.input("C0") == ["c0"]
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    rng = np.random.RandomState(0)
    feed = {"x": (rng.rand(14, 8).astype("float32"), LOD),
            "h0": rng.rand(4, 2).astype("float32"), "c0": rng.rand(4, 2).astype("float32")}
    h, c = exe.run(main, feed=feed, fetch_list=[hidden, cell], scope=scope,
                   return_numpy=False)
    assert h.lod() == LOD and np.asarray(c).shape == (14, 2)


def test_dynamic_gru_builds_paddles_op():
    def fn():
        x = layers.data(name="x", shape=[9], dtype="float32", lod_level=1)
        h0 = layers.data(name="h0", shape=[3], dtype="float32")
        return dynamic_gru(x, size=3, h_0=h0, is_reverse=True, origin_mode=True,
                           candidate_activation="relu")

    main, _, hidden = build(fn)
    op = main.global_block().ops[-1]
    assert op.type == "gru"
    assert {k: list(v) for k, v in op.inputs.items()} == {
        "Input": ["x"], "Weight": ["gru_0.w_0"], "Bias": ["gru_0.b_0"], "H0": ["h0"]}
    assert sorted(op.outputs) == ["BatchGate", "BatchHidden", "BatchResetHiddenPrev", "Hidden"]
    assert op.attrs["activation"] == "relu" and op.attrs["origin_mode"] is True
    assert tuple(main.global_block().var("gru_0.w_0").shape) == (3, 9)
    assert tuple(main.global_block().var("gru_0.b_0").shape) == (1, 9)


def test_gru_unit_layer_runs_and_names_parameters():
    def fn():
        x = layers.data(name="x", shape=[9], dtype="float32")
        h = layers.data(name="h", shape=[3], dtype="float32")
        hidden, reset, gate = gru_unit(x, h, size=9)
        loss = layers.mean(hidden)
        fluid.append_backward(loss)
        return hidden, reset, gate

    main, startup, (hidden, reset, gate) = build(fn)
    op = [op for op in main.global_block().ops if op.type == "gru_unit"][0]
    assert op.input("Weight") == ["gru_unit_0.w_0"] and op.input("Bias") == ["gru_unit_0.b_0"]
    assert op.attrs["activation"] == 2 and op.attrs["gate_activation"] == 1
    assert "gru_unit_grad" in ops_of(main)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    rng = np.random.RandomState(0)
    out = exe.run(main, feed={"x": rng.rand(4, 9).astype("float32"),
                              "h": rng.rand(4, 3).astype("float32")},
                  fetch_list=[hidden, gate, "gru_unit_0.w_0@GRAD"], scope=scope)
    assert out[0].shape == (4, 3) and out[1].shape == (4, 9) and out[2].shape == (3, 9)


def test_lstm_unit_layer_builds_concat_fc_lstm_unit_and_trains():
    def fn():
        x = layers.data(name="x", shape=[5], dtype="float32")
        h = layers.data(name="h", shape=[3], dtype="float32")
        c = layers.data(name="c", shape=[3], dtype="float32")
        hidden, cell = lstm_unit(x, h, c, forget_bias=1.0)
        loss = layers.mean(hidden)
        fluid.append_backward(loss)
        return hidden, cell

    main, startup, (hidden, cell) = build(fn)
    types = ops_of(main)
    assert types[:4] == ["concat", "mul", "elementwise_add", "lstm_unit"]
    assert "lstm_unit_grad" in types
    op = main.global_block().ops[3]
    assert op.attrs["forget_bias"] == 1.0
    assert (list(op.outputs["C"]), list(op.outputs["H"])) == (["lstm_unit_0.tmp_0"],
                                                             ["lstm_unit_0.tmp_1"])
    assert tuple(main.global_block().var("fc_0.w_0").shape) == (8, 12)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    rng = np.random.RandomState(0)
    out = exe.run(main, feed={"x": rng.rand(2, 5).astype("float32"),
                              "h": rng.rand(2, 3).astype("float32"),
                              "c": rng.rand(2, 3).astype("float32")},
                  fetch_list=[hidden, cell, "fc_0.w_0@GRAD"], scope=scope)
    assert out[0].shape == (2, 3) and out[2].shape == (8, 12) and np.abs(out[2]).sum() > 0


def test_layer_argument_errors():
    def bad_size():
        x = layers.data(name="x", shape=[8], dtype="float32", lod_level=1)
        dynamic_lstm(x, size=10)

    with pytest.raises(InvalidArgument, match="dynamic_lstm: size"):
        build(bad_size)

    def bad_h0():
        x = layers.data(name="x", shape=[8], dtype="float32", lod_level=1)
        h0 = layers.data(name="h0", shape=[5], dtype="float32")
        dynamic_lstm(x, size=8, h_0=h0, c_0=h0)

    with pytest.raises(InvalidArgument, match="dynamic_lstm: h_0"):
        build(bad_h0)

    def bad_act():
        x = layers.data(name="x", shape=[9], dtype="float32")
        h = layers.data(name="h", shape=[3], dtype="float32")
        gru_unit(x, h, size=9, activation="softmax")

    with pytest.raises(InvalidArgument, match="gru_unit: activation"):
        build(bad_act)
