"""The decoding API run as scripts use it, against NumPy loops over the same weights: beam
search with BeamSearchDecoder, teacher forcing with TrainingHelper (equal to rnn()), greedy
and sampled decoding with the embedding helpers, and a decoder that trains."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument

L = fluid.layers
RNG = np.random.RandomState(12)
VOCAB, EMB, HIDDEN = 7, 3, 4
START, END = 0, 1
GRU_PARAMS = ["GRUCell/BasicGRUUnit_0.w_0", "GRUCell/BasicGRUUnit_0.w_1",
              "GRUCell/BasicGRUUnit_0.b_0", "GRUCell/BasicGRUUnit_0.b_1"]


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def gru_step(x, h, w_gate, w_cand, b_gate, b_cand):
    gates = sigmoid(np.concatenate([x, h], 1) @ w_gate + b_gate)
    r, u = np.split(gates, 2, axis=1)
    c = np.tanh(np.concatenate([x, r * h], 1) @ w_cand + b_cand)
    return u * h + (1 - u) * c


def log_softmax(v):
    v = v - v.max(axis=-1, keepdims=True)
    return v - np.log(np.exp(v).sum(axis=-1, keepdims=True))


def embedder(ids):
    return fluid.embedding(ids, size=[VOCAB, EMB], param_attr=fluid.ParamAttr(name="emb"))


def output_layer(x):
    return L.fc(x, size=VOCAB, num_flatten_dims=len(x.shape) - 1, bias_attr=False,
                param_attr=fluid.ParamAttr(name="out_w"))


def run(build, feed, fetch_names=()):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 9
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        fetches = build()
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    values = exe.run(main, feed=feed, fetch_list=fetches, scope=scope)
    weights = {name: np.array(scope.find_var(name).get_tensor(), dtype="float64")
               for name in list(fetch_names)}
    return values, weights, main


def numpy_beam_search(enc, w, beam, max_step):
    batch = len(enc)
    gru = [w[n] for n in GRU_PARAMS]
    h = np.repeat(enc[:, None], beam, axis=1)
    log_probs = np.tile([0.0] + [-1e9] * (beam - 1), (batch, 1))
    finished = np.zeros((batch, beam), bool)
    lengths = np.zeros((batch, beam), "int64")
    inputs = np.full((batch, beam), START)
    noend = np.full(VOCAB, -1e9)
    noend[END] = 0
    rows = np.arange(batch)[:, None]
    ids, parents, step = [], [], 0
    while True:
        x = w["emb"][inputs].reshape(-1, EMB)
        h_new = gru_step(x, h.reshape(-1, HIDDEN), *gru).reshape(batch, beam, HIDDEN)
        step_log_probs = log_softmax(h_new @ w["out_w"])
        step_log_probs = np.where(finished[..., None], noend, step_log_probs)
        scores = (step_log_probs + log_probs[..., None]).reshape(batch, -1)
        top = np.argsort(-scores, axis=1, kind="stable")[:, :beam]
        beam_index, tokens = top // VOCAB, top % VOCAB
        log_probs = np.take_along_axis(scores, top, axis=1)
        h = h_new[rows, beam_index]
        was_finished = finished[rows, beam_index]
        lengths = lengths[rows, beam_index] + ~was_finished
        finished = was_finished | (tokens == END)
        ids.append(tokens)
        parents.append(beam_index)
        inputs, step = tokens, step + 1
        if finished.all() or step > max_step:
            break
    # trace back each beam
    out = np.zeros((len(ids), batch, beam), "int64")
    for b in range(batch):
        for k in range(beam):
            parent = k
            for t in range(len(ids) - 1, -1, -1):
                out[t, b, k] = ids[t][b, parent]
                parent = parents[t][b, parent]
    return out.transpose(1, 0, 2), lengths


@pytest.mark.parametrize("is_test", [True, False])
def test_beam_search_decoder_matches_a_numpy_beam_search(is_test):
    enc = RNG.uniform(-1, 1, (2, HIDDEN)).astype("float32")

    def build():
        encoded = fluid.data("enc", [None, HIDDEN])
        cell = L.GRUCell(hidden_size=HIDDEN)
        decoder = L.BeamSearchDecoder(cell, start_token=START, end_token=END, beam_size=3,
                                      embedding_fn=embedder, output_fn=output_layer)
        ids, states, lengths = L.dynamic_decode(decoder, inits=encoded, max_step_num=6,
                                                is_test=is_test, return_length=True)
        assert isinstance(states, L.BeamSearchDecoder.StateWrapper)
        return [ids, lengths]
    (ids, lengths), w, _ = run(build, {"enc": enc}, GRU_PARAMS + ["emb", "out_w"])
    want_ids, want_lengths = numpy_beam_search(enc.astype("float64"), w, 3, 6)
    assert ids.shape == want_ids.shape
    np.testing.assert_array_equal(ids, want_ids)
    np.testing.assert_array_equal(lengths, want_lengths)


def test_tile_beam_merge_with_batch_repeats_each_entry():
    value = np.arange(6, dtype="float32").reshape(2, 3)
    (tiled,), _, _ = run(lambda: [L.BeamSearchDecoder.tile_beam_merge_with_batch(
        fluid.data("x", [None, 3]), 2)], {"x": value})
    np.testing.assert_array_equal(tiled, value[[0, 0, 1, 1]])


def test_beams_merge_and_split_with_an_unknown_source_length():
    """An encoder's [batch, src_len, width] output with src_len unknown while building
    (the book tiles it for every beam) merges to [batch * beam, ...] and splits back."""
    value = np.arange(24, dtype="float32").reshape(2, 3, 4)

    def build():
        x = fluid.data("x", [None, None, 4])
        tiled = L.BeamSearchDecoder.tile_beam_merge_with_batch(x, 3)
        decoder = L.BeamSearchDecoder(L.GRUCell(2), START, END, beam_size=3)
        return [tiled, decoder._split_batch_beams(tiled)]
    (tiled, split), _, _ = run(build, {"x": value})
    np.testing.assert_array_equal(tiled, np.repeat(value, 3, axis=0))
    np.testing.assert_array_equal(split, np.repeat(value[:, None], 3, axis=1))


def test_training_helper_decodes_as_rnn_over_the_same_cell():
    tokens = RNG.randint(0, VOCAB, (3, 5)).astype("int64")

    def build():
        target = fluid.data("target", [None, 5], dtype="int64")
        lengths = fluid.data("lengths", [None], dtype="int64")
        embedded = embedder(target)
        cell = L.GRUCell(hidden_size=HIDDEN)
        by_rnn, _ = L.rnn(cell, embedded)
        helper = L.TrainingHelper(embedded, lengths)
        outputs, _, decoded_lengths = L.dynamic_decode(
            L.BasicDecoder(cell, helper), inits=cell.get_initial_states(embedded),
            return_length=True)
        return [outputs.cell_outputs, by_rnn, decoded_lengths]
    (decoded, by_rnn, lengths), _, main = run(
        build, {"target": tokens, "lengths": np.array([5, 5, 5], "int64")})
    assert decoded.shape == (3, 5, HIDDEN)
    np.testing.assert_allclose(decoded, by_rnn, rtol=1e-5, atol=1e-6)
    assert lengths.tolist() == [5, 5, 5]
    # one cell, one set of parameters
    assert len([p for p in main.global_block().all_parameters()
                if p.name.startswith("GRUCell")]) == 4


def numpy_greedy(enc, start, w, max_step):
    gru = [w[n] for n in GRU_PARAMS]
    h, inputs = enc, start
    finished = np.zeros(len(enc), bool)
    lengths = np.zeros(len(enc), "int64")
    ids, step = [], 0
    while True:
        h = gru_step(w["emb"][inputs], h, *gru)
        sample = (h @ w["out_w"]).argmax(axis=1)
        lengths += ~finished
        finished = finished | (sample == END)
        ids.append(sample)
        inputs, step = sample, step + 1
        if finished.all() or step > max_step:
            break
    return np.stack(ids, axis=1), lengths


def test_greedy_embedding_helper_matches_a_numpy_greedy_loop():
    enc = RNG.uniform(-1, 1, (3, HIDDEN)).astype("float32")
    start = np.array([START] * 3, "int64")

    def build():
        encoded = fluid.data("enc", [None, HIDDEN])
        start_tokens = fluid.data("start", [None], dtype="int64")
        cell = L.GRUCell(hidden_size=HIDDEN)
        helper = L.GreedyEmbeddingHelper(embedder, start_tokens, end_token=END)
        outputs, _, lengths = L.dynamic_decode(L.BasicDecoder(cell, helper, output_layer),
                                               inits=encoded, max_step_num=5, is_test=True,
                                               return_length=True)
        return [outputs.sample_ids, lengths]
    (ids, lengths), w, _ = run(build, {"enc": enc, "start": start},
                               GRU_PARAMS + ["emb", "out_w"])
    want_ids, want_lengths = numpy_greedy(enc.astype("float64"), start, w, 5)
    np.testing.assert_array_equal(ids, want_ids)
    np.testing.assert_array_equal(lengths, want_lengths)


def test_sample_embedding_helper_draws_valid_ids_time_major():
    def build():
        encoded = fluid.data("enc", [None, HIDDEN])
        start_tokens = fluid.data("start", [None], dtype="int64")
        cell = L.GRUCell(hidden_size=HIDDEN)
        helper = L.SampleEmbeddingHelper(embedder, start_tokens, end_token=END,
                                         softmax_temperature=0.5, seed=3)
        outputs, _ = L.dynamic_decode(L.BasicDecoder(cell, helper, output_layer),
                                      inits=encoded, max_step_num=4,
                                      output_time_major=True)
        return [outputs.sample_ids, outputs.cell_outputs]
    (ids, logits), _, _ = run(build, {"enc": RNG.uniform(-1, 1, (4, HIDDEN)).astype(
        "float32"), "start": np.zeros(4, "int64")})
    assert ids.shape[1] == 4 and 1 <= ids.shape[0] <= 5 and logits.shape[2] == VOCAB
    assert ids.min() >= 0 and ids.max() < VOCAB


def test_a_teacher_forced_decoder_trains():
    tokens = RNG.randint(2, VOCAB, (4, 5)).astype("int64")

    def build():
        target = fluid.data("target", [None, 5], dtype="int64")
        label = fluid.data("label", [None, 5], dtype="int64")
        lengths = fluid.data("lengths", [None], dtype="int64")
        embedded = embedder(target)
        cell = L.GRUCell(hidden_size=8)
        decoder = L.BasicDecoder(cell, L.TrainingHelper(embedded, lengths), output_layer)
        outputs, _ = L.dynamic_decode(decoder, inits=cell.get_initial_states(embedded))
        loss = L.mean(L.softmax_with_cross_entropy(outputs.cell_outputs,
                                                   L.unsqueeze(label, [2])))
        fluid.optimizer.Adam(learning_rate=0.05).minimize(loss)
        return [loss]
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 2
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        loss, = build()
    exe = fluid.Executor(fluid.CPUPlace())
    feed = {"target": tokens, "label": np.roll(tokens, -1, axis=1),
            "lengths": np.full(4, 5, "int64")}
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        losses = [float(exe.run(main, feed=feed, fetch_list=[loss])[0][0])
                  for _ in range(25)]
    assert losses[-1] < 0.5 * losses[0], losses


def test_a_decoder_without_a_step_says_so():
    class Unfinished(L.Decoder):
        def initialize(self, inits):
            return inits, inits, L.fill_constant([1], "bool", False)
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        with pytest.raises(NotImplementedError, match="step"):
            L.dynamic_decode(Unfinished(), inits=fluid.data("x", [None, 2]))
    with pytest.raises(InvalidArgument, match="max_step_num"):
        with fluid.program_guard(fluid.Program(), fluid.Program()):
            L.dynamic_decode(Unfinished(), inits=None, max_step_num=-2)
