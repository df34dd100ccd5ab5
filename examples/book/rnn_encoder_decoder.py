"""A sequence-to-sequence translator in the form of Fluid 1.x's book test
``test_rnn_encoder_decoder``: WMT-14 French to English.

The encoder reads the source words both ways with two ``dynamic_lstm`` layers and keeps
the last forward and the first backward state; the decoder is a ``DynamicRNN`` over the
target words whose LSTM step is written out of ``fc`` layers (four gates, each an fc of
the previous hidden state and the input), fed with the encoding at every step, and a
softmax over the target words. Adagrad trains it on ``paddle.dataset.wmt14``; the inference
model is saved, loaded back and run on two random sentences.

The book's imports, changed:

    import fluid_nb.paddle as paddle             # import paddle
    import fluid_nb as fluid                     # import paddle.fluid as fluid
    import fluid_nb.framework as framework       # import paddle.fluid.framework as framework
    from fluid_nb.executor import Executor       # from paddle.fluid.executor import Executor

When wmt14.tgz is not in the dataset cache (and with ``--sample``) it trains on a small
sample in the same format.

    python examples/book/rnn_encoder_decoder.py --batches 20
"""
import argparse
import math
import tempfile

import numpy as np

import fluid_nb.paddle as paddle
import fluid_nb as fluid
import fluid_nb.framework as framework
from fluid_nb.executor import Executor

EMBEDDING_DIM = 16
HIDDEN_DIM = 32
BATCH_SIZE = 10
IS_SPARSE = True
USE_PEEPHOLES = False


def bi_lstm_encoder(input_seq, hidden_size):
    """The last state of a forward LSTM and the first of a backward one."""
    states = []
    for is_reverse in (False, True):
        projected = fluid.layers.fc(input=input_seq, size=hidden_size * 4, bias_attr=True)
        hidden, _ = fluid.layers.dynamic_lstm(input=projected, size=hidden_size * 4,
                                              is_reverse=is_reverse,
                                              use_peepholes=USE_PEEPHOLES)
        states.append(hidden)
    return (fluid.layers.sequence_last_step(input=states[0]),
            fluid.layers.sequence_first_step(input=states[1]))


def lstm_step(x_t, hidden_t_prev, cell_t_prev, size):
    """One LSTM step out of fc layers: every gate reads [h_{t-1}, x_t]."""
    def gate(act):
        return act(x=fluid.layers.fc(input=[hidden_t_prev, x_t], size=size, bias_attr=True))

    forget_gate = gate(fluid.layers.sigmoid)
    input_gate = gate(fluid.layers.sigmoid)
    output_gate = gate(fluid.layers.sigmoid)
    cell_tilde = gate(fluid.layers.tanh)
    cell_t = fluid.layers.sums(input=[
        fluid.layers.elementwise_mul(x=forget_gate, y=cell_t_prev),
        fluid.layers.elementwise_mul(x=input_gate, y=cell_tilde)])
    hidden_t = fluid.layers.elementwise_mul(x=output_gate, y=fluid.layers.tanh(x=cell_t))
    return hidden_t, cell_t


def lstm_decoder_without_attention(target_embedding, decoder_boot, context, decoder_size,
                                   target_dict_dim):
    rnn = fluid.layers.DynamicRNN()
    cell_init = fluid.layers.fill_constant_batch_size_like(
        input=decoder_boot, value=0.0, shape=[-1, decoder_size], dtype="float32")
    cell_init.stop_gradient = False
    with rnn.block():
        current_word = rnn.step_input(target_embedding)
        context = rnn.static_input(context)
        hidden_mem = rnn.memory(init=decoder_boot, need_reorder=True)
        cell_mem = rnn.memory(init=cell_init)
        decoder_inputs = fluid.layers.concat(input=[context, current_word], axis=1)
        h, c = lstm_step(decoder_inputs, hidden_mem, cell_mem, decoder_size)
        rnn.update_memory(hidden_mem, h)
        rnn.update_memory(cell_mem, c)
        rnn.output(fluid.layers.fc(input=h, size=target_dict_dim, bias_attr=True,
                                   act="softmax"))
    return rnn()


def seq_to_seq_net(dict_size):
    src_word_idx = fluid.layers.data(name="source_sequence", shape=[1], dtype="int64",
                                     lod_level=1)
    src_embedding = fluid.layers.embedding(input=src_word_idx, size=[dict_size, EMBEDDING_DIM],
                                           dtype="float32", is_sparse=IS_SPARSE)
    src_forward_last, src_backward_first = bi_lstm_encoder(src_embedding, HIDDEN_DIM)
    encoded_vector = fluid.layers.concat(input=[src_forward_last, src_backward_first], axis=1)
    decoder_boot = fluid.layers.fc(input=src_backward_first, size=HIDDEN_DIM, bias_attr=False,
                                   act="tanh")
    trg_word_idx = fluid.layers.data(name="target_sequence", shape=[1], dtype="int64",
                                     lod_level=1)
    trg_embedding = fluid.layers.embedding(input=trg_word_idx, size=[dict_size, EMBEDDING_DIM],
                                           dtype="float32", is_sparse=IS_SPARSE)
    prediction = lstm_decoder_without_attention(trg_embedding, decoder_boot, encoded_vector,
                                                HIDDEN_DIM, dict_size)
    label = fluid.layers.data(name="label_sequence", shape=[1], dtype="int64", lod_level=1)
    cost = fluid.layers.cross_entropy(input=prediction, label=label)
    return fluid.layers.mean(cost), prediction


def train(save_dirname, dict_size, batches, learning_rate):
    avg_cost, prediction = seq_to_seq_net(dict_size)
    fluid.optimizer.Adagrad(learning_rate=learning_rate).minimize(avg_cost)
    train_data = paddle.batch(paddle.reader.shuffle(paddle.dataset.wmt14.train(dict_size),
                                                    buf_size=1000), batch_size=BATCH_SIZE)
    place = fluid.CPUPlace()
    exe = Executor(place)
    exe.run(framework.default_startup_program())
    feed_order = ["source_sequence", "target_sequence", "label_sequence"]
    feed_list = [framework.default_main_program().global_block().var(name)
                 for name in feed_order]
    feeder = fluid.DataFeeder(feed_list, place)
    costs = []
    while len(costs) < batches:  # passes over the data until enough batches
        for data in train_data():
            (cost,) = exe.run(framework.default_main_program(), feed=feeder.feed(data),
                              fetch_list=[avg_cost])
            costs.append(float(np.array(cost)[0]))
            if math.isnan(costs[-1]):
                raise SystemExit("got NaN loss, training failed.")
            if len(costs) % 10 == 1:
                print("batch %d avg_cost=%.4f" % (len(costs) - 1, costs[-1]))
            if len(costs) >= batches:
                break
    fluid.io.save_inference_model(save_dirname, ["source_sequence", "target_sequence"],
                                  [prediction], exe)
    return costs


def infer(save_dirname):
    place = fluid.CPUPlace()
    exe = fluid.Executor(place)
    with fluid.scope_guard(fluid.core.Scope()):
        program, feed_names, fetch_targets = fluid.io.load_inference_model(save_dirname, exe)
        # two sentences of 4 and 6 words, the word ids random in [0, 1]
        lengths = [[4, 6]]
        words = fluid.create_random_int_lodtensor(lengths, [1], place, low=0, high=1)
        targets = fluid.create_random_int_lodtensor(lengths, [1], place, low=0, high=1)
        assert feed_names == ["source_sequence", "target_sequence"]
        (result,) = exe.run(program, feed={feed_names[0]: words, feed_names[1]: targets},
                            fetch_list=fetch_targets, return_numpy=False)
    print("inference lengths", result.recursive_sequence_lengths(), "shape",
          np.array(result).shape)
    return result


def main(save_dir=None, dict_size=30000, batches=5, learning_rate=1e-4, sample=False,
         seed=90):
    """Train ``batches`` batches, save, reload and infer; returns the costs and the
    inference result (one probability row per target word)."""
    if sample or not paddle.dataset.samples.is_cached("wmt14"):
        paddle.dataset.samples.use_samples("wmt14")
    save_dir = save_dir or tempfile.mkdtemp(prefix="rnn_encoder_decoder_")
    framework.default_main_program().random_seed = seed
    framework.default_startup_program().random_seed = seed
    costs = train(save_dir, dict_size, batches, learning_rate)
    return {"costs": costs, "inference": infer(save_dir), "save_dir": save_dir}


if __name__ == "__main__":
    parser = argparse.ArgumentParser("rnn_encoder_decoder")
    parser.add_argument("--batches", type=int, default=5,
                        help="training batches (the book's test stops after 5)")
    parser.add_argument("--sample", action="store_true",
                        help="train on the small sample even when wmt14.tgz is cached")
    args = parser.parse_args()
    main(batches=args.batches, sample=args.sample)
