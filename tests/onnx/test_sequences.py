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
        reshaped = fluid.layers.sequence_reshape(input=emb, new_dim=16)
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    report = fluid.onnx.export(main, None, feed=["words"], fetch=[total, reshaped], scope=scope)
    why = {row.op_type: row.note for row in report.not_converted}
    assert why["reduce_sum"].startswith("a LoD input (embedding_0.tmp_0): the padded "
                                        "convention does not cover reduce_sum")
    assert why["sequence_reshape"].startswith("no converter for this op type")
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


def test_a_plain_loop_after_a_dynamic_rnn_exports_as_a_plain_loop(tmp_path):
    """Which loop is a DynamicRNN is decided by the loop's own ops (the recogniser), not by
    an earlier DynamicRNN's arrays: the counting loop after it becomes an ordinary Loop."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[6], dtype="float32", lod_level=1)
        rnn = fluid.layers.DynamicRNN()
        with rnn.block():
            x_t = rnn.step_input(x)
            h_prev = rnn.memory(shape=[8], value=0.0)
            h = fluid.layers.fc(input=[x_t, h_prev], size=8, act="tanh")
            rnn.update_memory(h_prev, h)
            rnn.output(h)
        acc = fluid.layers.scale(fluid.layers.sequence_last_step(rnn()), 1.0)
        i = fluid.layers.fill_constant(shape=[1], dtype="int64", value=0)
        n = fluid.layers.fill_constant(shape=[1], dtype="int64", value=3)
        cond = fluid.layers.less_than(i, n)
        loop = fluid.layers.While(cond)
        with loop.block():
            fluid.layers.assign(fluid.layers.scale(acc, 2.0), acc)
            fluid.layers.increment(i, 1, in_place=True)
            fluid.layers.less_than(i, n, cond=cond)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    program = main.clone(for_test=True)
    data = np.random.RandomState(1).rand(sum(LENGTHS), 6).astype("float32")
    want, = exe.run(program, feed={"x": fluid.create_lod_tensor(data, [LENGTHS],
                                                                fluid.CPUPlace())},
                    fetch_list=[acc], scope=scope)
    report = fluid.onnx.export(program, tmp_path / "two.onnx", feed=["x"], fetch=[acc],
                               scope=scope)
    assert report.complete, str(report)
    assert [n.op_type for n in onnx.load(str(tmp_path / "two.onnx")).graph.node].count(
        "Loop") == 2
    got, = _session(tmp_path / "two.onnx").run(
        None, {"x": padded(data, LENGTHS), "x_lengths": np.array(LENGTHS, "int64")})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# --- the other sequence ops by the convention ---------------------------------------------------
SEQ_LENGTHS, WIDTH = [3, 1, 4, 2], 5


def _run_sequence_op(make, tmp_path, lengths=SEQ_LENGTHS, width=WIDTH, extra_feed=None):
    """A program of one sequence op on the LoD feed x: its output from the executor (padded
    by its own LoD) and from onnxruntime (padded, with the lengths it gives)."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[width], dtype="float32", lod_level=1)
        out = make(x)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    rows = np.random.RandomState(2).uniform(-1, 1, (sum(lengths), width)).astype("float32")
    feed = {"x": fluid.create_lod_tensor(rows, [lengths], fluid.CPUPlace())}
    onnx_feed = {"x": padded(rows, lengths), "x_lengths": np.array(lengths, "int64")}
    for name, (value, onnx_value) in (extra_feed or {}).items():
        feed[name], onnx_feed[name] = value, onnx_value
    report = fluid.onnx.export(main, tmp_path / "s.onnx", feed=list(feed), fetch=[out],
                               scope=scope, strict=True)
    assert report.complete, str(report)
    onnx.checker.check_model(onnx.load(str(tmp_path / "s.onnx")), full_check=True)
    want, = exe.run(main, feed=feed, fetch_list=[out], scope=scope, return_numpy=False)
    got = _session(tmp_path / "s.onnx").run(None, onnx_feed)
    return want, got


def _assert_same_sequences(want, got):
    """The padded value holds the executor's rows sequence by sequence. (sequence_expand of
    rows without a LoD gives rows without one; they follow x's sequences.)"""
    value, lengths = got
    want_lengths = np.diff(want.lod()[-1]).tolist() if want.lod() else SEQ_LENGTHS
    np.testing.assert_array_equal(lengths, want_lengths)
    np.testing.assert_allclose(value[:, :max(want_lengths)],
                               padded(np.array(want), want_lengths), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("make", [
    lambda x: fluid.layers.sequence_softmax(fluid.layers.fc(x, size=1)),
    lambda x: fluid.layers.sequence_reverse(x),
    lambda x: fluid.layers.sequence_conv(x, num_filters=3, filter_size=3),
    lambda x: fluid.layers.sequence_conv(x, num_filters=2, filter_size=2, padding_start=0),
    lambda x: fluid.layers.sequence_conv(x, num_filters=2, filter_size=4, padding_start=-3),
    lambda x: fluid.layers.sequence_concat([x, fluid.layers.scale(x, 2.0), x]),
    lambda x: fluid.layers.sequence_expand_as(
        fluid.layers.sequence_pool(x, "max"), x),
    lambda x: fluid.layers.sequence_expand(fluid.layers.sequence_pool(x, "sum"), x),
], ids=["softmax", "reverse", "conv3", "conv2_from0", "conv4_before", "concat", "expand_as",
        "expand"])
def test_a_sequence_op_matches_by_the_convention(make, tmp_path):
    want, got = _run_sequence_op(make, tmp_path)
    _assert_same_sequences(want, got)


def test_sequence_slice_takes_each_sequences_window(tmp_path):
    offsets = np.array([[1], [0], [2], [0]], "int64")
    counts = np.array([[2], [1], [1], [2]], "int64")

    def make(x):
        offset = fluid.layers.data(name="offset", shape=[1], dtype="int64")
        length = fluid.layers.data(name="length", shape=[1], dtype="int64")
        return fluid.layers.sequence_slice(x, offset, length)
    want, got = _run_sequence_op(make, tmp_path, extra_feed={
        "offset": (offsets, offsets), "length": (counts, counts)})
    _assert_same_sequences(want, got)


def test_sequence_pad_gives_the_padded_batch_and_unpad_takes_it_back(tmp_path):
    def make(x):
        pad = fluid.layers.assign(np.array([-1.0], "float32"))
        padded_x, length = fluid.layers.sequence_pad(x, pad)
        return fluid.layers.sequence_unpad(padded_x * 3.0, length)
    want, got = _run_sequence_op(make, tmp_path)
    _assert_same_sequences(want, got)

    def make_padded(x):
        return fluid.layers.sequence_pad(x, fluid.layers.assign(np.array([-1.0], "float32")))[0]
    want, (got,) = _run_sequence_op(make_padded, tmp_path)
    np.testing.assert_allclose(got, np.array(want), rtol=1e-6)


def test_sequence_mask_of_lengths(tmp_path):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        lengths = fluid.layers.data(name="n", shape=[-1], dtype="int64",
                                    append_batch_size=False)
        masks = [fluid.layers.sequence_mask(lengths, dtype="float32"),
                 fluid.layers.sequence_mask(lengths, maxlen=6, dtype="int64")]
    feed = {"n": np.array([3, 1, 4], "int64")}
    report = fluid.onnx.export(main, tmp_path / "m.onnx", feed=["n"], fetch=masks,
                               scope=fluid.Scope(), strict=True)
    assert report.complete
    want = fluid.Executor(fluid.CPUPlace()).run(main, feed=feed, fetch_list=masks,
                                                scope=fluid.Scope())
    got = _session(tmp_path / "m.onnx").run(None, feed)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
