"""Machine translation (the Fluid 1.x book, chapter 08, in its DynamicRNN + beam search
form): WMT16 English to German.

The book's program with its two import lines changed. The encoder embeds the source words
and runs a bidirectional GRU (``dynamic_gru`` forward and reverse); the decoder is a GRU
cell with attention over the encoder states. Training runs the decoder as a
``DynamicRNN`` over the target words (teacher forcing). Inference builds another program:
a ``While`` loop that reads the previous step's ids, scores and state from tensor arrays,
takes the ``topk`` words of the softmax, keeps the best ``beam_size`` continuations per
source with ``beam_search``, reorders the states with ``sequence_expand`` and stops when
every hypothesis ended or ``max_length`` is reached; ``beam_search_decode`` backtraces the
sentences. Parameters are saved with ``fluid.io.save_params`` and loaded into the
inference program, as the book does.

It reads ``paddle.dataset.wmt16``; when WMT16 is not in the dataset cache (and with
``--sample``) it uses a small sample in the same format instead.

    python examples/book/machine_translation.py --num_epochs 2
"""
import argparse
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import fluid_nb.paddle as paddle  # noqa: E402  (the book: import paddle)
import fluid_nb as fluid  # noqa: E402  (the book: import paddle.fluid as fluid)
from fluid_nb.dataset import samples  # noqa: E402

DICT_SIZE = 30000
WORD_DIM = 512
HIDDEN_DIM = 512
MAX_LENGTH = 256
BEAM_SIZE = 4
BATCH_SIZE = 64
IS_SPARSE = True


class Config:
    """The sizes of a run (the book's by default; small ones for a quick run)."""

    def __init__(self, dict_size=DICT_SIZE, word_dim=WORD_DIM, hidden_dim=HIDDEN_DIM,
                 max_length=MAX_LENGTH, beam_size=BEAM_SIZE, batch_size=BATCH_SIZE,
                 warmup_steps=1000):
        self.dict_size, self.word_dim, self.hidden_dim = dict_size, word_dim, hidden_dim
        self.decoder_size = hidden_dim
        self.max_length, self.beam_size, self.batch_size = max_length, beam_size, batch_size
        self.warmup_steps = warmup_steps


def encoder(c):
    src_word_id = fluid.layers.data(name="src_word_id", shape=[1], dtype="int64",
                                    lod_level=1)
    src_embedding = fluid.layers.embedding(input=src_word_id, size=[c.dict_size, c.word_dim],
                                           dtype="float32", is_sparse=IS_SPARSE)
    fc_forward = fluid.layers.fc(input=src_embedding, size=c.hidden_dim * 3, bias_attr=False)
    src_forward = fluid.layers.dynamic_gru(input=fc_forward, size=c.hidden_dim)
    fc_backward = fluid.layers.fc(input=src_embedding, size=c.hidden_dim * 3, bias_attr=False)
    src_backward = fluid.layers.dynamic_gru(input=fc_backward, size=c.hidden_dim,
                                            is_reverse=True)
    return fluid.layers.concat(input=[src_forward, src_backward], axis=1)


def cell(c, x, hidden, encoder_out, encoder_out_proj):
    def simple_attention(encoder_vec, encoder_proj, decoder_state):
        decoder_state_proj = fluid.layers.fc(input=decoder_state, size=c.decoder_size,
                                             bias_attr=False)
        decoder_state_expand = fluid.layers.sequence_expand(x=decoder_state_proj,
                                                            y=encoder_proj)
        mixed_state = fluid.layers.elementwise_add(encoder_proj, decoder_state_expand)
        attention_weights = fluid.layers.fc(input=mixed_state, size=1, bias_attr=False)
        attention_weights = fluid.layers.sequence_softmax(input=attention_weights)
        weights_reshape = fluid.layers.reshape(x=attention_weights, shape=[-1])
        scaled = fluid.layers.elementwise_mul(x=encoder_vec, y=weights_reshape, axis=0)
        return fluid.layers.sequence_pool(input=scaled, pool_type="sum")

    context = simple_attention(encoder_out, encoder_out_proj, hidden)
    out = fluid.layers.fc(input=[x, context], size=c.decoder_size * 3, bias_attr=False)
    out = fluid.layers.gru_unit(input=out, hidden=hidden, size=c.decoder_size * 3)[0]
    return out, out


def decoder_states(c, encoder_out):
    encoder_last = fluid.layers.sequence_last_step(input=encoder_out)
    encoder_last_proj = fluid.layers.fc(input=encoder_last, size=c.decoder_size, act="tanh")
    encoder_out_proj = fluid.layers.fc(input=encoder_out, size=c.decoder_size,
                                       bias_attr=False)
    return encoder_last_proj, encoder_out_proj


def train_decoder(c, encoder_out):
    encoder_last_proj, encoder_out_proj = decoder_states(c, encoder_out)
    trg_language_word = fluid.layers.data(name="target_language_word", shape=[1],
                                          dtype="int64", lod_level=1)
    trg_embedding = fluid.layers.embedding(input=trg_language_word,
                                           size=[c.dict_size, c.word_dim], dtype="float32",
                                           is_sparse=IS_SPARSE)
    rnn = fluid.layers.DynamicRNN()
    with rnn.block():
        x = rnn.step_input(trg_embedding)
        pre_state = rnn.memory(init=encoder_last_proj, need_reorder=True)
        encoder_out = rnn.static_input(encoder_out)
        encoder_out_proj = rnn.static_input(encoder_out_proj)
        out, current_state = cell(c, x, pre_state, encoder_out, encoder_out_proj)
        prob = fluid.layers.fc(input=out, size=c.dict_size, act="softmax")
        rnn.update_memory(pre_state, current_state)
        rnn.output(prob)
    return rnn()


def train_model(c):
    rnn_out = train_decoder(c, encoder(c))
    label = fluid.layers.data(name="target_language_next_word", shape=[1], dtype="int64",
                              lod_level=1)
    cost = fluid.layers.cross_entropy(input=rnn_out, label=label)
    return fluid.layers.mean(cost)


def infer_decoder(c, encoder_out):
    encoder_last_proj, encoder_out_proj = decoder_states(c, encoder_out)
    max_len = fluid.layers.fill_constant(shape=[1], dtype="int64", value=c.max_length)
    counter = fluid.layers.zeros(shape=[1], dtype="int64", force_cpu=True)
    init_ids = fluid.layers.data(name="init_ids", shape=[1], dtype="int64", lod_level=2)
    init_scores = fluid.layers.data(name="init_scores", shape=[1], dtype="float32",
                                    lod_level=2)
    # tensor arrays of each step's selected ids, their scores and the decoder states
    ids_array = fluid.layers.array_write(init_ids, i=counter)
    scores_array = fluid.layers.array_write(init_scores, i=counter)
    state_array = fluid.layers.array_write(encoder_last_proj, i=counter)

    cond = fluid.layers.less_than(x=counter, y=max_len)
    while_op = fluid.layers.While(cond=cond)
    with while_op.block():
        pre_ids = fluid.layers.array_read(array=ids_array, i=counter)
        pre_score = fluid.layers.array_read(array=scores_array, i=counter)
        pre_state = fluid.layers.array_read(array=state_array, i=counter)
        pre_ids_emb = fluid.layers.embedding(input=pre_ids, size=[c.dict_size, c.word_dim],
                                             dtype="float32", is_sparse=IS_SPARSE)
        out, current_state = cell(c, pre_ids_emb, pre_state, encoder_out, encoder_out_proj)
        prob = fluid.layers.fc(input=current_state, size=c.dict_size, act="softmax")

        topk_scores, topk_indices = fluid.layers.topk(prob, k=c.beam_size)
        accu_scores = fluid.layers.elementwise_add(
            x=fluid.layers.log(topk_scores), y=fluid.layers.reshape(pre_score, shape=[-1]),
            axis=0)
        accu_scores = fluid.layers.lod_reset(x=accu_scores, y=pre_ids)
        selected_ids, selected_scores = fluid.layers.beam_search(
            pre_ids, pre_score, topk_indices, accu_scores, c.beam_size, end_id=1)

        fluid.layers.increment(x=counter, value=1, in_place=True)
        fluid.layers.array_write(selected_ids, array=ids_array, i=counter)
        fluid.layers.array_write(selected_scores, array=scores_array, i=counter)
        # the states follow their hypotheses: sequence_expand by the selection gathers them
        current_state = fluid.layers.sequence_expand(current_state, selected_ids)
        fluid.layers.array_write(current_state, array=state_array, i=counter)
        current_enc_out = fluid.layers.sequence_expand(encoder_out, selected_ids)
        fluid.layers.assign(current_enc_out, encoder_out)
        current_enc_out_proj = fluid.layers.sequence_expand(encoder_out_proj, selected_ids)
        fluid.layers.assign(current_enc_out_proj, encoder_out_proj)

        length_cond = fluid.layers.less_than(x=counter, y=max_len)
        finish_cond = fluid.layers.logical_not(fluid.layers.is_empty(x=selected_ids))
        fluid.layers.logical_and(x=length_cond, y=finish_cond, out=cond)

    return fluid.layers.beam_search_decode(ids=ids_array, scores=scores_array,
                                           beam_size=c.beam_size, end_id=1)


def to_lod(rows, place):
    return fluid.create_lod_tensor([np.array(r, "int64").reshape(-1, 1) for r in rows],
                                   [[len(r) for r in rows]], place)


def train(c, num_epochs, save_dir, max_batches, place):
    main_program = fluid.default_main_program()
    startup_program = fluid.default_startup_program()
    main_program.random_seed = startup_program.random_seed = 90
    avg_cost = train_model(c)
    fluid.clip.set_gradient_clip(clip=fluid.clip.GradientClipByGlobalNorm(clip_norm=5.0))
    lr_decay = fluid.layers.learning_rate_scheduler.noam_decay(c.hidden_dim, c.warmup_steps)
    fluid.optimizer.Adam(learning_rate=lr_decay,
                         regularization=fluid.regularizer.L2DecayRegularizer(
                             regularization_coeff=1e-4)).minimize(avg_cost)
    train_reader = paddle.batch(paddle.reader.shuffle(
        paddle.dataset.wmt16.train(c.dict_size, c.dict_size), buf_size=1000),
        batch_size=c.batch_size)
    exe = fluid.Executor(place)
    exe.run(startup_program)
    costs = []
    for pass_id in range(num_epochs):
        for batch_id, data in enumerate(train_reader()):
            if max_batches is not None and batch_id >= max_batches:
                break
            feed = {"src_word_id": to_lod([x[0] for x in data], place),
                    "target_language_word": to_lod([x[1] for x in data], place),
                    "target_language_next_word": to_lod([x[2] for x in data], place)}
            (cost,) = exe.run(main_program, feed=feed, fetch_list=[avg_cost])
            costs.append(float(cost[0]))
            if batch_id % 10 == 0:
                print("pass %d, batch %d, cost %f" % (pass_id, batch_id, cost[0]))
        fluid.io.save_params(exe, save_dir, main_program=main_program)
    return costs


def infer(c, save_dir, place, sentences=3):
    infer_program, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(infer_program, startup), fluid.unique_name.guard():
        translation_ids, translation_scores = infer_decoder(c, encoder(c))
    exe = fluid.Executor(place)
    fluid.io.load_params(exe, save_dir, main_program=infer_program)
    data = list(paddle.dataset.wmt16.test(c.dict_size, c.dict_size)())[:sentences]
    src_words = paddle.dataset.wmt16.get_dict("en", c.dict_size, reverse=True)
    trg_words = paddle.dataset.wmt16.get_dict("de", c.dict_size, reverse=True)
    init_ids = fluid.create_lod_tensor(np.zeros((len(data), 1), "int64"),
                                       [[1] * len(data)] * 2, place)
    init_scores = fluid.create_lod_tensor(np.zeros((len(data), 1), "float32"),
                                          [[1] * len(data)] * 2, place)
    seq_ids, seq_scores = exe.run(
        infer_program, feed={"src_word_id": to_lod([x[0] for x in data], place),
                             "init_ids": init_ids, "init_scores": init_scores},
        fetch_list=[translation_ids, translation_scores], return_numpy=False)
    source_level, sentence_level = seq_ids.lod()
    ids, scores = np.array(seq_ids), np.array(seq_scores)
    translations = []
    for i in range(len(source_level) - 1):
        print("Original sentence:", " ".join(src_words[w] for w in data[i][0][1:-1]))
        hypotheses = []
        for j in range(source_level[i], source_level[i + 1]):
            start, end = sentence_level[j], sentence_level[j + 1]
            words = " ".join(trg_words[w] for w in ids[start:end][1:-1])
            hypotheses.append((float(scores[end - 1]), words))
            print("  %.3f %s" % hypotheses[-1])
        translations.append(hypotheses)
    return {"translations": translations, "lod": seq_ids.lod(), "sources": data}


def main(num_epochs=1, save_dir=None, sample=False, max_batches=None, config=None):
    """Train, save the parameters, load them into the inference program and translate;
    returns the batch costs and the translations (per source, (score, words) best first)."""
    if sample or not samples.is_cached("wmt16"):
        samples.use_samples("wmt16")
    config = config or Config()
    # the dictionaries are capped at the vocabulary: the softmax covers what they hold
    config.dict_size = min(config.dict_size,
                           len(paddle.dataset.wmt16.get_dict("en", config.dict_size)),
                           len(paddle.dataset.wmt16.get_dict("de", config.dict_size)))
    place = fluid.CPUPlace()
    save_dir = save_dir or tempfile.mkdtemp(prefix="machine_translation_")
    costs = train(config, num_epochs, save_dir, max_batches, place)
    result = infer(config, save_dir, place)
    result.update(costs=costs, save_dir=save_dir)
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser("machine_translation")
    parser.add_argument("--num_epochs", type=int, default=1)
    parser.add_argument("--max_batches", type=int, default=None)
    parser.add_argument("--sample", action="store_true",
                        help="train on the small sample even when WMT16 is cached; the "
                             "sizes shrink to fit it")
    args = parser.parse_args()
    small = Config(word_dim=32, hidden_dim=32, max_length=10, beam_size=3, batch_size=16,
                   warmup_steps=20) if args.sample else None
    main(args.num_epochs, sample=args.sample, max_batches=args.max_batches, config=small)
