"""Word embeddings (the Fluid 1.x book, chapter 04): an N-gram language model on PTB.

The book's program with its two import lines changed: four context words, each looked up
in one shared embedding table (``param_attr='shared_w'``), concatenated, a sigmoid hidden
layer and a softmax over the dictionary predict the fifth word; Adagrad with L2 decay,
sparse embedding gradients. The inference model is saved, loaded back and asked for the
word after four given ones.

It reads ``paddle.dataset.imikolov``; when PTB is not in the dataset cache (and with
``--sample``) it uses a small sample in the same format instead.

    python examples/book/word2vec.py --num_epochs 1
"""
import argparse
import tempfile

import numpy

import fluid_nb.paddle as paddle  # the book: import paddle
import fluid_nb as fluid  # the book: import paddle.fluid as fluid

EMBED_SIZE = 32
HIDDEN_SIZE = 256
N = 5
CONTEXT = ["firstw", "secondw", "thirdw", "fourthw"]


def inference_program(words, dict_size, is_sparse):
    embeddings = [fluid.embedding(input=word, size=[dict_size, EMBED_SIZE], dtype="float32",
                                  is_sparse=is_sparse, param_attr="shared_w")
                  for word in words]
    concat_embed = fluid.layers.concat(input=embeddings, axis=1)
    hidden = fluid.layers.fc(input=concat_embed, size=HIDDEN_SIZE, act="sigmoid")
    return fluid.layers.fc(input=hidden, size=dict_size, act="softmax")


def train_program(predict_word):
    next_word = fluid.data(name="nextw", shape=[None, 1], dtype="int64")
    cost = fluid.layers.cross_entropy(input=predict_word, label=next_word)
    return fluid.layers.mean(cost)


def main(num_epochs=1, batch_size=100, max_batches=None, save_dir=None, sample=False,
         is_sparse=True, seed=90):
    """Train, test, save, reload and predict; returns the batch costs, the test costs and
    the predicted next word."""
    if sample or not paddle.dataset.samples.is_cached("imikolov"):
        paddle.dataset.samples.use_samples("imikolov")
    word_dict = paddle.dataset.imikolov.build_dict()
    dict_size = len(word_dict)
    place = fluid.CPUPlace()
    save_dir = save_dir or tempfile.mkdtemp(prefix="word2vec_")
    train_reader = paddle.batch(paddle.dataset.imikolov.train(word_dict, N), batch_size)
    test_reader = paddle.batch(paddle.dataset.imikolov.test(word_dict, N), batch_size)

    main_program = fluid.default_main_program()
    startup_program = fluid.default_startup_program()
    main_program.random_seed = startup_program.random_seed = seed
    words = [fluid.data(name=name, shape=[None, 1], dtype="int64") for name in CONTEXT]
    predict_word = inference_program(words, dict_size, is_sparse)
    avg_cost = train_program(predict_word)
    test_program = main_program.clone(for_test=True)
    fluid.optimizer.AdagradOptimizer(
        learning_rate=3e-3,
        regularization=fluid.regularizer.L2DecayRegularizer(8e-4)).minimize(avg_cost)

    exe = fluid.Executor(place)
    feeder = fluid.DataFeeder(feed_list=CONTEXT + ["nextw"], place=place,
                              program=main_program)
    exe.run(startup_program)
    costs, test_costs = [], []
    for pass_id in range(num_epochs):
        for batch_id, data in enumerate(train_reader()):
            if max_batches is not None and batch_id >= max_batches:
                break
            (cost,) = exe.run(main_program, feed=feeder.feed(data), fetch_list=[avg_cost])
            costs.append(float(cost[0]))
            if batch_id % 10 == 0:
                print("Pass %d, Batch %d, Cost %f" % (pass_id, batch_id, cost[0]))
        test_cost = numpy.mean([exe.run(test_program, feed=feeder.feed(data),
                                        fetch_list=[avg_cost])[0][0] for data in test_reader()])
        test_costs.append(test_cost)
        print("Test with Pass %d, Cost %.3f" % (pass_id, test_cost))
        fluid.io.save_inference_model(save_dir, CONTEXT, [predict_word], exe)

    infer_exe = fluid.Executor(place)
    with fluid.scope_guard(fluid.core.Scope()):
        program, feed_names, fetch_targets = fluid.io.load_inference_model(save_dir, infer_exe)
        context = next(paddle.dataset.imikolov.test(word_dict, N)())[:4]
        feed = {name: fluid.create_lod_tensor([[numpy.int64(word)]], [[1]], place)
                for name, word in zip(feed_names, context)}
        (probabilities,) = infer_exe.run(program, feed=feed, fetch_list=fetch_targets,
                                         return_numpy=False)
    words_of = {index: word for word, index in word_dict.items()}
    best = int(numpy.argmax(numpy.array(probabilities)[0]))
    print("after %s comes %r" % ([words_of[w] for w in context], words_of[best]))
    return {"costs": costs, "test_costs": test_costs, "next_word": words_of[best],
            "probabilities": numpy.array(probabilities), "dict_size": dict_size,
            "save_dir": save_dir}


if __name__ == "__main__":
    parser = argparse.ArgumentParser("word2vec")
    parser.add_argument("--num_epochs", type=int, default=1)
    parser.add_argument("--max_batches", type=int, default=None,
                        help="batches per pass (default: all)")
    parser.add_argument("--sample", action="store_true",
                        help="train on the small sample even when PTB is cached")
    args = parser.parse_args()
    main(args.num_epochs, max_batches=args.max_batches, sample=args.sample)
