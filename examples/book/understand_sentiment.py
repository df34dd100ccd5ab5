"""Sentiment analysis (the Fluid 1.x book, chapter 06): IMDB reviews, the book's networks.

The book's programs with their two import lines changed, on word-id sequences (LoD):

* ``conv`` (the book's ``train_conv.py``): an embedding, two
  ``fluid.nets.sequence_conv_pool`` (windows of 3 and 4 words, sqrt pooling), a softmax
  over both;
* ``stacked_lstm`` (``train_stacked_lstm.py``): an fc and a ``dynamic_lstm``, then stacked
  fc + ``dynamic_lstm`` pairs running in alternate directions, max-pooled;
* ``dyn_rnn`` (``train_dyn_rnn.py`` as Fluid 1.6-1.8 write it): a tanh fc feeding a
  ``dynamic_lstm``, its last step classified;
* ``dynamic_rnn`` (``train_dyn_rnn.py`` of the earlier Fluid 1.x books): the same LSTM
  written out gate by gate inside a ``fluid.layers.DynamicRNN``, its last step classified.

Adagrad; the inference model is saved, loaded back and run on three reviews given as a
LoD tensor made by ``fluid.create_lod_tensor``.

It reads ``paddle.dataset.imdb``; when aclImdb is not in the dataset cache (and with
``--sample``) it uses a small sample in the same format instead.

    python examples/book/understand_sentiment.py --net conv --num_epochs 1
"""
import argparse
import tempfile

import numpy as np

import fluid_nb.paddle as paddle  # the book: import paddle
import fluid_nb as fluid  # the book: import paddle.fluid as fluid

CLASS_DIM = 2
EMB_DIM = 128
HID_DIM = 512
LSTM_SIZE = 128
STACKED_NUM = 3
BATCH_SIZE = 128
REVIEWS = ["read the book forget the movie", "this is a great movie", "this is very bad"]


def convolution_net(data, input_dim, class_dim=CLASS_DIM, emb_dim=EMB_DIM, hid_dim=HID_DIM):
    emb = fluid.embedding(input=data, size=[input_dim, emb_dim], is_sparse=True)
    conv_3 = fluid.nets.sequence_conv_pool(input=emb, num_filters=hid_dim, filter_size=3,
                                           act="tanh", pool_type="sqrt")
    conv_4 = fluid.nets.sequence_conv_pool(input=emb, num_filters=hid_dim, filter_size=4,
                                           act="tanh", pool_type="sqrt")
    return fluid.layers.fc(input=[conv_3, conv_4], size=class_dim, act="softmax")


def stacked_lstm_net(data, input_dim, class_dim=CLASS_DIM, emb_dim=EMB_DIM, hid_dim=HID_DIM,
                     stacked_num=STACKED_NUM):
    assert stacked_num % 2 == 1
    emb = fluid.embedding(input=data, size=[input_dim, emb_dim], is_sparse=True)
    fc1 = fluid.layers.fc(input=emb, size=hid_dim)
    lstm1, cell1 = fluid.layers.dynamic_lstm(input=fc1, size=hid_dim)
    inputs = [fc1, lstm1]
    for i in range(2, stacked_num + 1):
        fc = fluid.layers.fc(input=inputs, size=hid_dim)
        lstm, cell = fluid.layers.dynamic_lstm(input=fc, size=hid_dim,
                                               is_reverse=(i % 2) == 0)
        inputs = [fc, lstm]
    fc_last = fluid.layers.sequence_pool(input=inputs[0], pool_type="max")
    lstm_last = fluid.layers.sequence_pool(input=inputs[1], pool_type="max")
    return fluid.layers.fc(input=[fc_last, lstm_last], size=class_dim, act="softmax")


def dynamic_rnn_lstm(data, input_dim, class_dim=CLASS_DIM, emb_dim=EMB_DIM,
                     lstm_size=LSTM_SIZE):
    emb = fluid.embedding(input=data, size=[input_dim, emb_dim], is_sparse=True)
    sentence = fluid.layers.fc(input=emb, size=lstm_size * 4, act="tanh")
    lstm, _ = fluid.layers.dynamic_lstm(sentence, size=lstm_size * 4)
    last = fluid.layers.sequence_last_step(lstm)
    return fluid.layers.fc(input=last, size=class_dim, act="softmax")


def dynamic_rnn_gates(data, input_dim, class_dim=CLASS_DIM, emb_dim=EMB_DIM,
                      lstm_size=LSTM_SIZE):
    emb = fluid.embedding(input=data, size=[input_dim, emb_dim], is_sparse=True)
    sentence = fluid.layers.fc(input=emb, size=lstm_size, act="tanh")
    rnn = fluid.layers.DynamicRNN()
    with rnn.block():
        word = rnn.step_input(sentence)
        prev_hidden = rnn.memory(value=0.0, shape=[lstm_size])
        prev_cell = rnn.memory(value=0.0, shape=[lstm_size])

        def gate_common(ipt, hidden, size):
            gate0 = fluid.layers.fc(input=ipt, size=size, bias_attr=True)
            gate1 = fluid.layers.fc(input=hidden, size=size, bias_attr=False)
            return gate0 + gate1

        forget_gate = fluid.layers.sigmoid(x=gate_common(word, prev_hidden, lstm_size))
        input_gate = fluid.layers.sigmoid(x=gate_common(word, prev_hidden, lstm_size))
        output_gate = fluid.layers.sigmoid(x=gate_common(word, prev_hidden, lstm_size))
        cell_gate = fluid.layers.sigmoid(x=gate_common(word, prev_hidden, lstm_size))
        cell = forget_gate * prev_cell + input_gate * cell_gate
        hidden = output_gate * fluid.layers.tanh(x=cell)
        rnn.update_memory(prev_cell, cell)
        rnn.update_memory(prev_hidden, hidden)
        rnn.output(hidden)
    last = fluid.layers.sequence_last_step(rnn())
    return fluid.layers.fc(input=last, size=class_dim, act="softmax")


NETS = {"conv": convolution_net, "stacked_lstm": stacked_lstm_net, "dyn_rnn": dynamic_rnn_lstm,
        "dynamic_rnn": dynamic_rnn_gates}


def main(net="conv", num_epochs=1, batch_size=BATCH_SIZE, max_batches=None, save_dir=None,
         sample=False, seed=90, learning_rate=0.002, **sizes):
    """Train, test, save, reload and classify three reviews; returns the batch costs, the
    test figures and the three reviews' class probabilities. ``sizes`` (``emb_dim``,
    ``hid_dim``, ``lstm_size``) replace the book's layer widths for a quicker run."""
    if sample or not paddle.dataset.samples.is_cached("imdb"):
        paddle.dataset.samples.use_samples("imdb")
    word_dict = paddle.dataset.imdb.word_dict()
    place = fluid.CPUPlace()
    save_dir = save_dir or tempfile.mkdtemp(prefix="understand_sentiment_")
    train_reader = paddle.batch(paddle.reader.shuffle(paddle.dataset.imdb.train(word_dict),
                                                      buf_size=25000), batch_size=batch_size)
    test_reader = paddle.batch(paddle.dataset.imdb.test(word_dict), batch_size=batch_size)

    main_program = fluid.default_main_program()
    startup_program = fluid.default_startup_program()
    main_program.random_seed = startup_program.random_seed = seed
    data = fluid.data(name="words", shape=[None], dtype="int64", lod_level=1)
    prediction = NETS[net](data, len(word_dict), **sizes)
    label = fluid.data(name="label", shape=[None, 1], dtype="int64")
    avg_cost = fluid.layers.mean(fluid.layers.cross_entropy(input=prediction, label=label))
    accuracy = fluid.layers.accuracy(input=prediction, label=label)
    test_program = main_program.clone(for_test=True)
    fluid.optimizer.Adagrad(learning_rate=learning_rate).minimize(avg_cost)

    exe = fluid.Executor(place)
    feeder = fluid.DataFeeder(feed_list=["words", "label"], place=place,
                              program=main_program)
    exe.run(startup_program)
    costs, tests = [], []
    for pass_id in range(num_epochs):
        for batch_id, batch in enumerate(train_reader()):
            if max_batches is not None and batch_id >= max_batches:
                break
            cost, acc = exe.run(main_program, feed=feeder.feed(batch),
                                fetch_list=[avg_cost, accuracy])
            costs.append(float(cost[0]))
            print("Pass %d, Batch %d, Cost %f, Acc %f" % (pass_id, batch_id, cost[0], acc[0]))
        figures = [exe.run(test_program, feed=feeder.feed(batch),
                           fetch_list=[avg_cost, accuracy]) for batch in test_reader()]
        tests.append((np.mean([f[0][0] for f in figures]), np.mean([f[1][0] for f in figures])))
        print("Test with Pass %d, Cost %.3f, Acc %.3f" % (pass_id, *tests[-1]))
        fluid.io.save_inference_model(save_dir, ["words"], [prediction], exe)

    infer_exe = fluid.Executor(place)
    with fluid.scope_guard(fluid.core.Scope()):
        program, feed_names, fetch_targets = fluid.io.load_inference_model(save_dir, infer_exe)
        unk = word_dict["<unk>"]
        ids = [[np.int64(word_dict.get(w, unk)) for w in review.split()] for review in REVIEWS]
        words = fluid.create_lod_tensor(ids, [[len(i) for i in ids]], place)
        (probabilities,) = infer_exe.run(program, feed={feed_names[0]: words},
                                         fetch_list=fetch_targets, return_numpy=False)
    probabilities = np.array(probabilities)
    for review, (positive, negative) in zip(REVIEWS, probabilities):
        print("%r: positive %.3f, negative %.3f" % (review, positive, negative))
    return {"costs": costs, "tests": tests, "probabilities": probabilities,
            "save_dir": save_dir}


if __name__ == "__main__":
    parser = argparse.ArgumentParser("understand_sentiment")
    parser.add_argument("--net", choices=sorted(NETS), default="conv")
    parser.add_argument("--num_epochs", type=int, default=1)
    parser.add_argument("--learning_rate", type=float, default=0.002)
    parser.add_argument("--batch_size", type=int, default=BATCH_SIZE)
    parser.add_argument("--max_batches", type=int, default=None,
                        help="batches per pass (default: all)")
    parser.add_argument("--sample", action="store_true",
                        help="train on the small sample even when aclImdb is cached")
    args = parser.parse_args()
    main(args.net, args.num_epochs, args.batch_size, max_batches=args.max_batches,
         sample=args.sample, learning_rate=args.learning_rate)
