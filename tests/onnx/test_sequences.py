"""LoD models in ONNX by the padded convention: a LoD input becomes a padded batch
[batch, time, ...] and its lengths [batch]; row-wise ops keep the padding, sequence_pool
reads the lengths, dynamic_lstm becomes ONNX's LSTM with sequence_lens. The exported text
classifier (embedding + dynamic_lstm + sequence_pool) matches the executor in onnxruntime."""
import numpy as np
import pytest

import fluid_nb as fluid

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

LENGTHS = [3, 5, 2, 4]
VOCAB, HIDDEN = 30, 6


def padded(rows, lengths):
    """The LoD rows [sum(lengths), ...] as [batch, max length, ...], zeros after each end."""
    out = np.zeros((len(lengths), max(lengths)) + rows.shape[1:], rows.dtype)
    start = 0
    for b, n in enumerate(lengths):
        out[b, :n] = rows[start:start + n]
        start += n
    return out


def classifier(pool, peepholes, reverse):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        words = fluid.layers.data(name="words", shape=[1], dtype="int64", lod_level=1)
        emb = fluid.layers.embedding(input=words, size=[VOCAB, 8])
        projected = fluid.layers.fc(input=emb, size=4 * HIDDEN)
        hidden, _ = fluid.layers.dynamic_lstm(input=projected, size=4 * HIDDEN,
                                              use_peepholes=peepholes, is_reverse=reverse)
        pooled = fluid.layers.sequence_pool(hidden, pool_type=pool)
        prediction = fluid.layers.fc(input=pooled, size=2, act="softmax")
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    return main.clone(for_test=True), scope, prediction, hidden


def _ids():
    return np.random.RandomState(0).randint(0, VOCAB, (sum(LENGTHS), 1)).astype("int64")


def _session(path):
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("pool", ["max", "sum", "average", "sqrt", "last", "first"])
@pytest.mark.parametrize("peepholes, reverse", [(True, False), (False, True)],
                         ids=["peepholes", "reverse"])
def test_the_lod_text_classifier_exports_and_matches(pool, peepholes, reverse, tmp_path):
    program, scope, prediction, _ = classifier(pool, peepholes, reverse)
    ids = _ids()
    want, = fluid.Executor(fluid.CPUPlace()).run(
        program, feed={"words": fluid.create_lod_tensor(ids, [LENGTHS], fluid.CPUPlace())},
        fetch_list=[prediction], scope=scope)
    report = fluid.onnx.export(program, tmp_path / "m.onnx", feed=["words"],
                               fetch=[prediction], scope=scope)
    assert report.complete, str(report)
    assert report.conventions == ["words has a LoD: the model takes it padded, [batch, time, "
                                  "...], with words_lengths [batch] (int64)"]
    model = onnx.load(str(tmp_path / "m.onnx"))
    onnx.checker.check_model(model, full_check=True)
    assert "words_lengths [batch]" in model.doc_string
    assert [n.op_type for n in model.graph.node].count("LSTM") == 1
    got, = _session(tmp_path / "m.onnx").run(
        None, {"words": padded(ids, LENGTHS), "words_lengths": np.array(LENGTHS, "int64")})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_sequence_output_comes_back_padded_with_its_lengths(tmp_path):
    program, scope, _, hidden = classifier("max", True, False)
    ids = _ids()
    tensor, = fluid.Executor(fluid.CPUPlace()).run(
        program, feed={"words": fluid.create_lod_tensor(ids, [LENGTHS], fluid.CPUPlace())},
        fetch_list=[hidden], scope=scope, return_numpy=False)
    report = fluid.onnx.export(program, tmp_path / "h.onnx", feed=["words"], fetch=[hidden],
                               scope=scope)
    assert report.conventions[-1] == (f"{hidden.name} has a LoD: the model gives it padded, "
                                      f"with words_lengths")
    got, lengths = _session(tmp_path / "h.onnx").run(
        None, {"words": padded(ids, LENGTHS), "words_lengths": np.array(LENGTHS, "int64")})
    np.testing.assert_array_equal(lengths, LENGTHS)
    np.testing.assert_allclose(got, padded(np.array(tensor), LENGTHS), rtol=1e-5, atol=1e-6)


def test_lod_ops_outside_the_convention_are_reported(tmp_path):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        words = fluid.layers.data(name="words", shape=[1], dtype="int64", lod_level=1)
        emb = fluid.layers.embedding(input=words, size=[VOCAB, 8])
        total = fluid.layers.reduce_sum(emb)  # mixes rows of different sequences
        conv = fluid.layers.sequence_conv(input=emb, num_filters=4, filter_size=3)
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    report = fluid.onnx.export(main, None, feed=["words"], fetch=[total, conv], scope=scope)
    why = {row.op_type: row.note for row in report.not_converted}
    assert why["reduce_sum"].startswith("a LoD input (embedding_0.tmp_0): the padded "
                                        "convention does not cover reduce_sum")
    assert why["sequence_conv"].startswith("no converter for this op type")
    assert report.path is None  # asked for no file


@pytest.mark.parametrize("origin_mode, reverse", [(False, False), (True, True)],
                         ids=["paddle_mode", "origin_mode_reversed"])
def test_a_dynamic_gru_classifier_exports_and_matches(origin_mode, reverse, tmp_path):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 4
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        words = fluid.layers.data(name="words", shape=[1], dtype="int64", lod_level=1)
        emb = fluid.layers.embedding(input=words, size=[VOCAB, 8])
        projected = fluid.layers.fc(input=emb, size=3 * HIDDEN)
        hidden = fluid.layers.dynamic_gru(input=projected, size=HIDDEN, is_reverse=reverse,
                                          origin_mode=origin_mode)
        prediction = fluid.layers.fc(input=fluid.layers.sequence_pool(hidden, "last"), size=2,
                                     act="softmax")
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    program = main.clone(for_test=True)
    ids = _ids()
    want, = exe.run(program, feed={"words": fluid.create_lod_tensor(ids, [LENGTHS],
                                                                    fluid.CPUPlace())},
                    fetch_list=[prediction], scope=scope)
    report = fluid.onnx.export(program, tmp_path / "g.onnx", feed=["words"],
                               fetch=[prediction], scope=scope)
    assert report.complete, str(report)
    onnx.checker.check_model(onnx.load(str(tmp_path / "g.onnx")), full_check=True)
    got, = _session(tmp_path / "g.onnx").run(
        None, {"words": padded(ids, LENGTHS), "words_lengths": np.array(LENGTHS, "int64")})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def dynamic_rnn(fetch_sequence=False):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[6], dtype="float32", lod_level=1)
        rnn = fluid.layers.DynamicRNN()
        with rnn.block():
            x_t = rnn.step_input(x)
            h_prev = rnn.memory(shape=[8], value=0.0)
            c_prev = rnn.memory(shape=[8], value=0.5)
            h = fluid.layers.fc(input=[x_t, h_prev], size=8, act="tanh")
            c = fluid.layers.elementwise_add(fluid.layers.scale(c_prev, scale=0.9), h)
            rnn.update_memory(h_prev, h)
            rnn.update_memory(c_prev, c)
            rnn.output(h, c)
        hs, cs = rnn()
        target = hs if fetch_sequence else fluid.layers.fc(
            input=[fluid.layers.sequence_last_step(hs), fluid.layers.sequence_pool(cs, "max")],
            size=3, act="softmax")
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    return main.clone(for_test=True), scope, target


@pytest.mark.parametrize("fetch_sequence", [False, True], ids=["pooled", "sequence"])
def test_a_dynamic_rnn_exports_as_an_onnx_loop_and_matches(fetch_sequence, tmp_path):
    """Two memories, two outputs: the while loop becomes a Loop over the padded batch's
    time steps, memories frozen past each end and outputs zero there."""
    program, scope, target = dynamic_rnn(fetch_sequence)
    data = np.random.RandomState(1).rand(sum(LENGTHS), 6).astype("float32")
    want, = fluid.Executor(fluid.CPUPlace()).run(
        program, feed={"x": fluid.create_lod_tensor(data, [LENGTHS], fluid.CPUPlace())},
        fetch_list=[target], scope=scope, return_numpy=False)
    report = fluid.onnx.export(program, tmp_path / "rnn.onnx", feed=["x"], fetch=[target],
                               scope=scope)
    assert report.complete, str(report)
    assert {"while", "lod_rank_table", "shrink_rnn_memory"} & {r.op_type for r in report.rows}
    model = onnx.load(str(tmp_path / "rnn.onnx"))
    onnx.checker.check_model(model, full_check=True)
    assert [n.op_type for n in model.graph.node].count("Loop") == 1
    feed = {"x": padded(data, LENGTHS), "x_lengths": np.array(LENGTHS, "int64")}
    got = _session(tmp_path / "rnn.onnx").run(None, feed)
    if fetch_sequence:
        np.testing.assert_array_equal(got[1], LENGTHS)
        np.testing.assert_allclose(got[0], padded(np.array(want), LENGTHS), rtol=1e-5,
                                   atol=1e-6)
    else:
        np.testing.assert_allclose(got[0], np.array(want), rtol=1e-5, atol=1e-6)
