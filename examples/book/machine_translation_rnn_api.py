"""Machine translation (the Fluid 1.x book, chapter 08, in its Fluid 1.8 form on the RNN
API): WMT16 English to German.

Sequences are padded batches fed through ``fluid.data`` (``[batch, time]``, the time dim
unknown until a batch arrives) with their lengths, from a ``DataLoader``. The encoder runs
two ``GRUCell``s with ``layers.rnn``, forward and reversed, masked by the source lengths.
The decoder is an ``RNNCell`` of its own: additive attention over the encoder outputs
(padding masked with -1e9 before the softmax), its context joined to the step input, then
a ``GRUCell``. Training runs it with ``layers.rnn`` over the target words (teacher
forcing), the cross entropy masked by the target lengths, Adam on a Noam schedule with
global-norm gradient clipping. Inference tiles the encoder outputs for every beam
(``BeamSearchDecoder.tile_beam_merge_with_batch``) and runs a ``BeamSearchDecoder`` with
``dynamic_decode``: ids ``[batch, time, beam]``, each beam traced back to its start.
Parameters are saved with ``fluid.io.save_params`` and loaded into the inference program.

It reads ``paddle.dataset.wmt16``; when WMT16 is not in the dataset cache (and with
``--sample``) it uses a small sample in the same format instead.

    python examples/book/machine_translation_rnn_api.py --sample --num_epochs 4
"""
import argparse
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import fluid_nb.paddle as paddle  # noqa: E402  (the book: import paddle)
import fluid_nb as fluid  # noqa: E402  (the book: import paddle.fluid as fluid)
import fluid_nb.layers as layers  # noqa: E402  (the book: import paddle.fluid.layers)
from fluid_nb.dataset import samples  # noqa: E402

BOS_ID, EOS_ID = 0, 1  # <s> starts every target sentence, <e> ends it and pads batches


class Config:
    """The sizes of a run (the book's by default; small ones for a quick run)."""

    def __init__(self, dict_size=30000, word_dim=512, hidden_dim=512, max_length=256,
                 beam_size=4, batch_size=64, warmup_steps=1000):
        self.dict_size, self.word_dim, self.hidden_dim = dict_size, word_dim, hidden_dim
        self.decoder_size = hidden_dim
        self.max_length, self.beam_size, self.batch_size = max_length, beam_size, batch_size
        self.warmup_steps = warmup_steps


class AttentionGRUCell(layers.RNNCell):
    """One decoder step: the context is the encoder outputs weighted by
    ``softmax_j(v . (W h + U e_j) + padding_j)``; the GRU reads ``[input, context]``."""

    def __init__(self, hidden_size):
        self.hidden_size = hidden_size
        self.gru_cell = layers.GRUCell(hidden_size)

    def attention(self, hidden, encoder_output, encoder_output_proj, encoder_padding_mask):
        hidden_proj = layers.unsqueeze(
            layers.fc(hidden, size=self.hidden_size, bias_attr=False), [1])
        # [batch, src_len, hidden]: the state's projection added at every source position
        mixed = layers.elementwise_add(
            encoder_output_proj,
            layers.expand(hidden_proj, [1, layers.shape(encoder_output_proj)[1], 1]))
        scores = layers.squeeze(layers.fc(mixed, size=1, num_flatten_dims=2,
                                          bias_attr=False), [2])
        if encoder_padding_mask is not None:
            scores = layers.elementwise_add(scores, encoder_padding_mask)
        weights = layers.softmax(scores)
        return layers.reduce_sum(layers.elementwise_mul(encoder_output, weights, axis=0),
                                 dim=1)

    def call(self, step_input, hidden, encoder_output, encoder_output_proj,
             encoder_padding_mask=None):
        context = self.attention(hidden, encoder_output, encoder_output_proj,
                                 encoder_padding_mask)
        return self.gru_cell(layers.concat([step_input, context], axis=1), hidden)


def data_func(is_train=True):
    """The padded id batches and their lengths, and the loader that feeds them."""
    src = fluid.data(name="src", shape=[None, None], dtype="int64")
    src_sequence_length = fluid.data(name="src_sequence_length", shape=[None],
                                     dtype="int64")
    inputs = [src, src_sequence_length]
    if is_train:
        trg = fluid.data(name="trg", shape=[None, None], dtype="int64")
        trg_sequence_length = fluid.data(name="trg_sequence_length", shape=[None],
                                         dtype="int64")
        label = fluid.data(name="label", shape=[None, None], dtype="int64")
        inputs += [trg, trg_sequence_length, label]
    loader = fluid.io.DataLoader.from_generator(feed_list=inputs, capacity=10,
                                                iterable=True, use_double_buffer=True)
    return inputs, loader


def encoder(c, src_embedding, src_sequence_length):
    """A bidirectional GRU: outputs [batch, src_len, 2 hidden], last states [batch, 2 hidden]."""
    forward_output, forward_state = layers.rnn(
        cell=layers.GRUCell(hidden_size=c.hidden_dim), inputs=src_embedding,
        sequence_length=src_sequence_length, time_major=False, is_reverse=False)
    backward_output, backward_state = layers.rnn(
        cell=layers.GRUCell(hidden_size=c.hidden_dim), inputs=src_embedding,
        sequence_length=src_sequence_length, time_major=False, is_reverse=True)
    return (layers.concat(input=[forward_output, backward_output], axis=2),
            layers.concat(input=[forward_state, backward_state], axis=1))


def decoder(c, encoder_output, encoder_output_proj, encoder_state, encoder_padding_mask,
            trg=None, is_train=True):
    """Training: the logits of every target step. Inference: the beams' ids."""
    cell = AttentionGRUCell(hidden_size=c.decoder_size)
    initial_state = layers.fc(encoder_state, size=c.decoder_size, act="tanh")

    def embed_target(ids):
        return fluid.embedding(input=ids, size=[c.dict_size, c.word_dim], dtype="float32",
                               param_attr=fluid.ParamAttr(name="trg_emb_table"))

    def to_logits(x):
        return layers.fc(x, size=c.dict_size, num_flatten_dims=len(x.shape) - 1,
                         param_attr=fluid.ParamAttr(name="output_w"))

    if is_train:
        output, _ = layers.rnn(cell=cell, inputs=embed_target(trg),
                               initial_states=initial_state, time_major=False,
                               encoder_output=encoder_output,
                               encoder_output_proj=encoder_output_proj,
                               encoder_padding_mask=encoder_padding_mask)
        return to_logits(output)
    tile = layers.BeamSearchDecoder.tile_beam_merge_with_batch
    beam_search = layers.BeamSearchDecoder(cell=cell, start_token=BOS_ID, end_token=EOS_ID,
                                           beam_size=c.beam_size, embedding_fn=embed_target,
                                           output_fn=to_logits)
    ids, _ = layers.dynamic_decode(
        decoder=beam_search, inits=initial_state, max_step_num=c.max_length,
        output_time_major=False,
        encoder_output=tile(encoder_output, c.beam_size),
        encoder_output_proj=tile(encoder_output_proj, c.beam_size),
        encoder_padding_mask=tile(encoder_padding_mask, c.beam_size))
    return ids


def model_func(c, inputs, is_train=True):
    src, src_sequence_length = inputs[0], inputs[1]
    src_embedding = fluid.embedding(input=src, size=[c.dict_size, c.word_dim],
                                    dtype="float32",
                                    param_attr=fluid.ParamAttr(name="src_emb_table"))
    encoder_output, encoder_state = encoder(c, src_embedding, src_sequence_length)
    encoder_output_proj = layers.fc(input=encoder_output, size=c.decoder_size,
                                    num_flatten_dims=2, bias_attr=False)
    # 0 on the words, -1e9 on the padding: added to the attention scores
    src_mask = layers.sequence_mask(src_sequence_length, maxlen=layers.shape(src)[1],
                                    dtype="float32")
    encoder_padding_mask = (src_mask - 1.0) * 1e9
    return decoder(c, encoder_output, encoder_output_proj, encoder_state,
                   encoder_padding_mask, trg=inputs[2] if is_train else None,
                   is_train=is_train)


def loss_func(logits, label, trg_sequence_length):
    """The cross entropy averaged over the target words (the padding masked out)."""
    loss = layers.cross_entropy(input=layers.softmax(logits), label=label)
    trg_mask = layers.sequence_mask(trg_sequence_length, maxlen=layers.shape(logits)[1],
                                    dtype="float32")
    return layers.reduce_sum(loss * trg_mask) / layers.reduce_sum(trg_mask)


def optimizer_func(c):
    fluid.clip.set_gradient_clip(clip=fluid.clip.GradientClipByGlobalNorm(clip_norm=5.0))
    lr_decay = layers.learning_rate_scheduler.noam_decay(c.hidden_dim, c.warmup_steps)
    return fluid.optimizer.Adam(
        learning_rate=lr_decay,
        regularization=fluid.regularizer.L2DecayRegularizer(regularization_coeff=1e-4))


def inputs_generator(c, pad_id, is_train=True):
    """Batches of [src, src lengths(, trg, trg lengths, label)], each padded with pad_id to
    its longest sentence."""
    if is_train:
        samples_reader = fluid.io.shuffle(paddle.dataset.wmt16.train(c.dict_size, c.dict_size),
                                          buf_size=10000)
    else:
        samples_reader = paddle.dataset.wmt16.test(c.dict_size, c.dict_size)
    batches = fluid.io.batch(samples_reader, batch_size=c.batch_size)

    def padded(sentences):
        lengths = np.array([len(s) for s in sentences], dtype="int64")
        width = lengths.max()
        return (np.array([list(s) + [pad_id] * (width - len(s)) for s in sentences],
                         dtype="int64"), lengths)

    def generate():
        for batch in batches():
            inputs = list(padded([sample[0] for sample in batch]))
            if is_train:
                inputs += padded([sample[1] for sample in batch])
                inputs.append(padded([sample[2] for sample in batch])[0])
            yield inputs
    return generate


def train(c, num_epochs, save_dir, max_batches, place):
    train_prog, startup_prog = fluid.Program(), fluid.Program()
    train_prog.random_seed = startup_prog.random_seed = 90
    with fluid.program_guard(train_prog, startup_prog), fluid.unique_name.guard():
        inputs, loader = data_func(is_train=True)
        logits = model_func(c, inputs, is_train=True)
        loss = loss_func(logits, inputs[-1], inputs[-2])
        optimizer_func(c).minimize(loss)
    loader.set_batch_generator(inputs_generator(c, EOS_ID, is_train=True), places=[place])
    exe = fluid.Executor(place)
    exe.run(startup_prog)
    prog = fluid.CompiledProgram(train_prog).with_data_parallel(loss_name=loss.name)
    costs = []
    for pass_id in range(num_epochs):
        for batch_id, data in enumerate(loader()):
            if max_batches is not None and batch_id >= max_batches:
                break
            (loss_val,) = exe.run(prog, feed=data, fetch_list=[loss])
            costs.append(float(np.asarray(loss_val).reshape(-1)[0]))
            if batch_id % 10 == 0:
                print("pass_id: %d, batch_id: %d, loss: %f" % (pass_id, batch_id, costs[-1]))
        fluid.io.save_params(exe, save_dir, main_program=train_prog)
    return costs


def infer(c, save_dir, place, max_batches=1):
    """Beam search over the test set's first batches with the saved parameters; returns
    the id arrays [batch, time, beam] and, per source sentence, its beams' words."""
    infer_prog, startup_prog = fluid.Program(), fluid.Program()
    with fluid.program_guard(infer_prog, startup_prog), fluid.unique_name.guard():
        inputs, loader = data_func(is_train=False)
        predict_seqs = model_func(c, inputs, is_train=False)
    loader.set_batch_generator(inputs_generator(c, EOS_ID, is_train=False), places=[place])
    src_idx2word = paddle.dataset.wmt16.get_dict("en", c.dict_size, reverse=True)
    trg_idx2word = paddle.dataset.wmt16.get_dict("de", c.dict_size, reverse=True)
    exe = fluid.Executor(place)
    exe.run(startup_prog)
    fluid.io.load_params(exe, save_dir, main_program=infer_prog)
    prog = fluid.CompiledProgram(infer_prog).with_data_parallel()
    all_ids, translations = [], []
    for batch_id, data in enumerate(loader()):
        if batch_id >= max_batches:
            break
        (seq_ids,) = exe.run(prog, feed=data, fetch_list=[predict_seqs])
        seq_ids = np.asarray(seq_ids)
        all_ids.append(seq_ids)
        src_seqs = np.array(data[0]["src"])
        for i in range(seq_ids.shape[0]):
            print("Original sentence:")
            print(" ".join(src_idx2word[w] for w in src_seqs[i][1:] if w != EOS_ID))
            print("Translated sentence:")
            beams = [" ".join(trg_idx2word[w] for w in seq_ids[i, :, beam] if w != EOS_ID)
                     for beam in range(c.beam_size)]
            for words in beams:
                print("  " + words)
            translations.append(beams)
    return {"ids": all_ids, "translations": translations}


def main(num_epochs=1, save_dir=None, sample=False, max_batches=None, config=None):
    """Train, save the parameters, load them into the inference program and translate;
    returns the batch costs, the decoded ids and the translations."""
    if sample or not samples.is_cached("wmt16"):
        samples.use_samples("wmt16")
    config = config or Config()
    # the dictionaries are capped at the vocabulary: the softmax covers what they hold
    config.dict_size = min(config.dict_size,
                           len(paddle.dataset.wmt16.get_dict("en", config.dict_size)),
                           len(paddle.dataset.wmt16.get_dict("de", config.dict_size)))
    place = fluid.CPUPlace()
    save_dir = save_dir or tempfile.mkdtemp(prefix="machine_translation_rnn_api_")
    costs = train(config, num_epochs, save_dir, max_batches, place)
    result = infer(config, save_dir, place)
    result.update(costs=costs, save_dir=save_dir, config=config)
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser("machine_translation_rnn_api")
    parser.add_argument("--num_epochs", type=int, default=1)
    parser.add_argument("--max_batches", type=int, default=None)
    parser.add_argument("--sample", action="store_true",
                        help="train on the small sample even when WMT16 is cached; the "
                             "sizes shrink to fit it")
    args = parser.parse_args()
    small = Config(word_dim=32, hidden_dim=32, max_length=10, beam_size=3, batch_size=16,
                   warmup_steps=20) if args.sample else None
    main(args.num_epochs, sample=args.sample, max_batches=args.max_batches, config=small)
