"""An RNN encoder-decoder on WMT14 French to English, as Fluid 1.x tests its book models
(``test_rnn_encoder_decoder``): the program with its two import lines changed.

The encoder embeds the source words and runs an LSTM forward and one in reverse
(``dynamic_lstm`` over an ``fc`` projection of width ``4 * hidden``); its summary is the
forward LSTM's last step and the backward LSTM's first, concatenated. The decoder is a
``DynamicRNN`` over the target words whose step is an LSTM written out of ``fc`` layers:

    f = sigmoid(W_f [h, x] + b_f)   i = sigmoid(W_i [h, x] + b_i)
    o = sigmoid(W_o [h, x] + b_o)   c~ = tanh(W_c [h, x] + b_c)
    c' = f * c + i * c~             h' = o * tanh(c')

with ``x`` the current word's embedding next to the encoder summary, the hidden state
started from ``tanh(W src_backward_first)`` (a memory reordered with the target
sequences) and the cell from zeros; each step predicts the next word by a softmax. It
trains with Adagrad on cross entropy for a few batches, saves an inference model
(``source_sequence``, ``target_sequence`` -> the per-word softmax), loads it into a new
scope and runs it on random word ids, as the original does.

It reads ``paddle.dataset.wmt14``; when WMT14 is not in the dataset cache (and with
``--sample``) it uses a small sample in the same format instead.

    python examples/rnn_encoder_decoder.py --num_batches 20
"""
import argparse
import math
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import fluid_nb.paddle as paddle  # noqa: E402  (the original: import paddle)
import fluid_nb as fluid  # noqa: E402  (the original: import paddle.fluid as fluid)
import fluid_nb.framework as framework  # noqa: E402
from fluid_nb.dataset import samples  # noqa: E402
from fluid_nb.executor import Executor  # noqa: E402

dict_size = 30000
source_dict_dim = target_dict_dim = dict_size
hidden_dim = 32
embedding_dim = 16
batch_size = 10
max_length = 50
topk_size = 50
encoder_size = decoder_size = hidden_dim
IS_SPARSE = True
USE_PEEPHOLES = False


def bi_lstm_encoder(input_seq, hidden_size):
    input_forward_proj = fluid.layers.fc(input=input_seq, size=hidden_size * 4,
                                         bias_attr=True)
    forward, _ = fluid.layers.dynamic_lstm(input=input_forward_proj, size=hidden_size * 4,
                                           use_peepholes=USE_PEEPHOLES)
    input_backward_proj = fluid.layers.fc(input=input_seq, size=hidden_size * 4,
                                          bias_attr=True)
    backward, _ = fluid.layers.dynamic_lstm(input=input_backward_proj, size=hidden_size * 4,
                                            is_reverse=True, use_peepholes=USE_PEEPHOLES)

    forward_last = fluid.layers.sequence_last_step(input=forward)
    backward_first = fluid.layers.sequence_first_step(input=backward)
    return forward_last, backward_first


def lstm_step(x_t, hidden_t_prev, cell_t_prev, size):
    """One LSTM step out of fc layers (each gate its own fc over [h, x])."""
    def linear(inputs):
        return fluid.layers.fc(input=inputs, size=size, bias_attr=True)

    forget_gate = fluid.layers.sigmoid(x=linear([hidden_t_prev, x_t]))
    input_gate = fluid.layers.sigmoid(x=linear([hidden_t_prev, x_t]))
    output_gate = fluid.layers.sigmoid(x=linear([hidden_t_prev, x_t]))
    cell_tilde = fluid.layers.tanh(x=linear([hidden_t_prev, x_t]))

    cell_t = fluid.layers.sums(input=[
        fluid.layers.elementwise_mul(x=forget_gate, y=cell_t_prev),
        fluid.layers.elementwise_mul(x=input_gate, y=cell_tilde)])
    hidden_t = fluid.layers.elementwise_mul(x=output_gate, y=fluid.layers.tanh(x=cell_t))
    return hidden_t, cell_t


def lstm_decoder_without_attention(target_embedding, decoder_boot, context, decoder_size):
    rnn = fluid.layers.DynamicRNN()

    cell_init = fluid.layers.fill_constant_batch_size_like(
        input=decoder_boot, value=0.0, shape=[-1, decoder_size], dtype='float32')
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
        out = fluid.layers.fc(input=h, size=target_dict_dim, bias_attr=True, act='softmax')
        rnn.output(out)
    return rnn()


def seq_to_seq_net():
    """Construct a seq2seq network."""
    src_word_idx = fluid.layers.data(name='source_sequence', shape=[1], dtype='int64',
                                     lod_level=1)
    src_embedding = fluid.layers.embedding(input=src_word_idx,
                                           size=[source_dict_dim, embedding_dim],
                                           dtype='float32')

    src_forward_last, src_backward_first = bi_lstm_encoder(input_seq=src_embedding,
                                                           hidden_size=encoder_size)
    encoded_vector = fluid.layers.concat(input=[src_forward_last, src_backward_first],
                                         axis=1)
    decoder_boot = fluid.layers.fc(input=src_backward_first, size=decoder_size,
                                   bias_attr=False, act='tanh')

    trg_word_idx = fluid.layers.data(name='target_sequence', shape=[1], dtype='int64',
                                     lod_level=1)
    trg_embedding = fluid.layers.embedding(input=trg_word_idx,
                                           size=[target_dict_dim, embedding_dim],
                                           dtype='float32')

    prediction = lstm_decoder_without_attention(trg_embedding, decoder_boot, encoded_vector,
                                                decoder_size)
    label = fluid.layers.data(name='label_sequence', shape=[1], dtype='int64', lod_level=1)
    cost = fluid.layers.cross_entropy(input=prediction, label=label)
    avg_cost = fluid.layers.mean(cost)
    return avg_cost, prediction


def train(use_cuda, save_dirname=None, num_batches=5, learning_rate=1e-4, num_passes=2):
    [avg_cost, prediction] = seq_to_seq_net()

    optimizer = fluid.optimizer.Adagrad(learning_rate=learning_rate)
    optimizer.minimize(avg_cost)

    train_data = paddle.batch(
        paddle.reader.shuffle(paddle.dataset.wmt14.train(dict_size), buf_size=1000),
        batch_size=batch_size)

    place = fluid.CUDAPlace(0) if use_cuda else fluid.CPUPlace()
    exe = Executor(place)
    exe.run(framework.default_startup_program())

    feed_order = ['source_sequence', 'target_sequence', 'label_sequence']
    feed_list = [framework.default_main_program().global_block().var(var_name)
                 for var_name in feed_order]
    feeder = fluid.DataFeeder(feed_list, place)

    costs = []
    batch_id = 0
    for pass_id in range(num_passes):
        for data in train_data():
            outs = exe.run(framework.default_main_program(), feed=feeder.feed(data),
                           fetch_list=[avg_cost])

            avg_cost_val = np.array(outs[0])
            costs.append(float(avg_cost_val.reshape(-1)[0]))
            print('pass_id=' + str(pass_id) + ' batch=' + str(batch_id) +
                  " avg_cost=" + str(avg_cost_val))
            if math.isnan(float(avg_cost_val[0])):
                sys.exit("got NaN loss, training failed.")
            if batch_id >= num_batches - 1:
                if save_dirname is not None:
                    fluid.io.save_inference_model(
                        save_dirname, ['source_sequence', 'target_sequence'], [prediction],
                        exe)
                return costs
            batch_id += 1
    return costs


def infer(use_cuda, save_dirname=None):
    if save_dirname is None:
        return None

    place = fluid.CUDAPlace(0) if use_cuda else fluid.CPUPlace()
    exe = fluid.Executor(place)

    inference_scope = fluid.core.Scope()
    with fluid.scope_guard(inference_scope):
        # the inference program, the names of the variables to feed and the variables to
        # fetch, as save_inference_model wrote them
        [inference_program, feed_target_names,
         fetch_targets] = fluid.io.load_inference_model(save_dirname, exe)

        # two source sentences of 4 and 6 words (and targets of the same lengths), each
        # word an id in [low, high]
        recursive_seq_lens = [[4, 6]]
        base_shape = [1]
        word_data = fluid.create_random_int_lodtensor(recursive_seq_lens, base_shape, place,
                                                      low=0, high=1)
        trg_word = fluid.create_random_int_lodtensor(recursive_seq_lens, base_shape, place,
                                                     low=0, high=1)

        assert feed_target_names[0] == 'source_sequence'
        assert feed_target_names[1] == 'target_sequence'
        results = exe.run(inference_program,
                          feed={feed_target_names[0]: word_data,
                                feed_target_names[1]: trg_word},
                          fetch_list=fetch_targets, return_numpy=False)
        print(results[0].recursive_sequence_lengths())
        np_data = np.array(results[0])
        print("Inference shape: ", np_data.shape)
        print("Inference results: ", np_data)
        return results[0]


def main(use_cuda=False, save_dir=None, sample=False, num_batches=5, learning_rate=1e-4,
         size=None):
    """Train for ``num_batches`` batches, save the inference model, reload and run it;
    returns the batch costs and the fetched prediction (a LoDTensor)."""
    global dict_size, source_dict_dim, target_dict_dim
    if use_cuda and not fluid.core.is_compiled_with_cuda():
        return None
    if sample or not samples.is_cached("wmt14"):
        samples.use_samples("wmt14")
    # the softmax covers the words the dictionaries hold (all 30000 of the real ones)
    src_dict, trg_dict = paddle.dataset.wmt14.get_dict(size or dict_size)
    dict_size = min(size or dict_size, len(src_dict), len(trg_dict))
    source_dict_dim = target_dict_dim = dict_size

    save_dirname = os.path.join(save_dir or tempfile.mkdtemp(prefix="rnn_encoder_decoder_"),
                                "rnn_encoder_decoder.inference.model")
    costs = train(use_cuda, save_dirname, num_batches=num_batches,
                  learning_rate=learning_rate)
    prediction = infer(use_cuda, save_dirname)
    return {"costs": costs, "prediction": prediction, "save_dir": save_dirname,
            "dict_size": dict_size}


if __name__ == '__main__':
    parser = argparse.ArgumentParser("rnn_encoder_decoder")
    parser.add_argument("--num_batches", type=int, default=5)
    parser.add_argument("--learning_rate", type=float, default=1e-4)
    parser.add_argument("--sample", action="store_true",
                        help="train on the small sample even when WMT14 is cached")
    args = parser.parse_args()
    main(sample=args.sample, num_batches=args.num_batches, learning_rate=args.learning_rate)
