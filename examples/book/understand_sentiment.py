"""Sentiment analysis (the Fluid 1.x book, chapter 06): IMDB reviews, three networks.

The book's programs with their two import lines changed, on word-id sequences (LoD):

* ``conv``: an embedding, two ``fluid.nets.sequence_conv_pool`` (windows of 3 and 4
  words, sqrt pooling), a softmax over both;
* ``stacked_lstm``: an fc and a ``dynamic_lstm``, then stacked fc + ``dynamic_lstm``
  pairs running in alternate directions, max-pooled;
* ``dyn_rnn``: a ``DynamicRNN`` whose step is an fc of the word and the previous memory,
  the last step's output classified.

Adagrad; the inference model is saved, loaded back and run on three reviews given as a
LoD tensor made by ``fluid.create_lod_tensor``.

It reads ``paddle.dataset.imdb``; when aclImdb is not in the dataset cache (and with
``--sample``) it uses a small sample in the same format instead.

    python examples/book/understand_sentiment.py --net conv --num_epochs 1
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

CLASS_DIM = 2
EMB_DIM = 64
HID_DIM = 64
STACKED_LAYERS = 3
REVIEWS = ["read the book forget the movie", "this is a great movie", "this is very bad"]


def convolution_net(data, input_dim):
    emb = fluid.embedding(input=data, size=[input_dim, EMB_DIM], is_sparse=True)
    conv_3 = fluid.nets.sequence_conv_pool(input=emb, num_filters=HID_DIM, filter_size=3,
                                           act="tanh", pool_type="sqrt")
    conv_4 = fluid.nets.sequence_conv_pool(input=emb, num_filters=HID_DIM, filter_size=4,
                                           act="tanh", pool_type="sqrt")
    return fluid.layers.fc(input=[conv_3, conv_4], size=CLASS_DIM, act="softmax")


def stacked_lstm_net(data, input_dim):
    emb = fluid.embedding(input=data, size=[input_dim, EMB_DIM], is_sparse=True)
    fc1 = fluid.layers.fc(input=emb, size=HID_DIM)
    lstm1, _ = fluid.layers.dynamic_lstm(input=fc1, size=HID_DIM)
    inputs = [fc1, lstm1]
    for i in range(2, STACKED_LAYERS + 1):
        fc = fluid.layers.fc(input=inputs, size=HID_DIM)
        lstm, _ = fluid.layers.dynamic_lstm(input=fc, size=HID_DIM, is_reverse=(i % 2) == 0)
        inputs = [fc, lstm]
    fc_last = fluid.layers.sequence_pool(input=inputs[0], pool_type="max")
    lstm_last = fluid.layers.sequence_pool(input=inputs[1], pool_type="max")
    return fluid.layers.fc(input=[fc_last, lstm_last], size=CLASS_DIM, act="softmax")


def dynamic_rnn_net(data, input_dim):
    sentence = fluid.embedding(input=data, size=[input_dim, EMB_DIM], is_sparse=True)
    rnn = fluid.layers.DynamicRNN()
    with rnn.block():
        word = rnn.step_input(sentence)
        prev = rnn.memory(shape=[HID_DIM])
        hidden = fluid.layers.fc(input=[word, prev], size=HID_DIM, act="relu")
        rnn.update_memory(prev, hidden)
        rnn.output(hidden)
    last = fluid.layers.sequence_last_step(rnn())
    return fluid.layers.fc(input=last, size=CLASS_DIM, act="softmax")


NETS = {"conv": convolution_net, "stacked_lstm": stacked_lstm_net, "dyn_rnn": dynamic_rnn_net}


def main(net="conv", num_epochs=1, batch_size=32, max_batches=None, save_dir=None,
         sample=False, seed=90, learning_rate=0.002):
    """Train, test, save, reload and classify three reviews; returns the batch costs, the
    test figures and the three reviews' class probabilities."""
    if sample or not samples.is_cached("imdb"):
        samples.use_samples("imdb")
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
    prediction = NETS[net](data, len(word_dict))
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
    parser.add_argument("--max_batches", type=int, default=None,
                        help="batches per pass (default: all)")
    parser.add_argument("--sample", action="store_true",
                        help="train on the small sample even when aclImdb is cached")
    args = parser.parse_args()
    main(args.net, args.num_epochs, max_batches=args.max_batches, sample=args.sample,
         learning_rate=args.learning_rate)
