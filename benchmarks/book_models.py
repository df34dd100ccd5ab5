"""The book's models with sparse and sequence gradients: one training step each, as the book's
loop runs it (``exe.run(main_program, feed=feeder.feed(batch), fetch_list=[avg_cost])``).

    python benchmarks/book_models.py

- recommender_system: the book's program (``examples/book/recommender_system.py``), SGD,
  sparse embeddings, a batch of 256 ratings shaped as ml-1m's are (titles of 1 to 8 words,
  1 to 3 genres), ids within the tables of the dataset in use;
- word2vec: the N-gram model, Adagrad with L2 decay, a batch of 100 from its reader; and
  the same step compiled to native code (its sparse gradients stay in the interpreter);
- understand_sentiment, conv: two ``sequence_conv_pool`` over 128 reviews from its reader;
- machine_translation: the attention encoder-decoder, Adam with gradient clipping, 64
  sentence pairs from its reader;
- and recommender_system's first 40 batches as the book's loop takes them (its reader
  shuffled and batched, DataFeeder, ``Executor.run``), next to the reading and feeding alone.

Each reads its dataset, or the small sample in the same format when the dataset is not
cached (as the book scripts do). The models take turns, 3 steps each, for 7 rounds, each
keeping its fastest round. (PaddlePaddle 2.6 is no reference here: it lacks ``cos_sim``
and fails on the sparse Adagrad step of a Fluid 1.x program.) The last rows time the
scatter-add these gradients are made of against NumPy's idiom for it (``np.add.at``) and
PyTorch's (``index_add_``) where installed.
"""
import itertools
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "examples", "book"))
import fluid_nb as fluid  # noqa: E402
import fluid_nb.paddle as fluid_paddle  # noqa: E402
from fluid_nb.dataset import samples  # noqa: E402
from fluid_nb.tensor.tensor import index_add  # noqa: E402
from _timing import interleaved_best, interleaved_samples, row, torch_or_none  # noqa: E402


def _dataset(name):
    if not samples.is_cached(name):
        samples.use_samples(name)


def recommender():
    import recommender_system as book
    _dataset("movielens")
    movielens = fluid_paddle.dataset.movielens
    _, avg_cost = book.inference_program()
    fluid.optimizer.SGD(learning_rate=0.2).minimize(avg_cost)
    rng = np.random.RandomState(0)
    titles = len(movielens.get_movie_title_dict())
    genres = len(movielens.movie_categories())
    batch = []
    for _ in range(256):  # Python ints, as the reader yields them
        batch.append([int(rng.randint(1, movielens.max_user_id() + 1)), int(rng.randint(2)),
                      int(rng.randint(len(movielens.age_table))),
                      int(rng.randint(movielens.max_job_id() + 1)),
                      int(rng.randint(1, movielens.max_movie_id() + 1)),
                      rng.randint(0, genres, rng.randint(1, 4)).tolist(),
                      rng.randint(0, titles, rng.randint(1, 9)).tolist(),
                      [float(rng.randint(1, 6)) * 2 - 5.0]])
    return avg_cost, book.FEED_ORDER, batch


def word2vec():
    import word2vec as book
    _dataset("imikolov")
    word_dict = fluid_paddle.dataset.imikolov.build_dict()
    words = [fluid.data(name=name, shape=[None, 1], dtype="int64") for name in book.CONTEXT]
    avg_cost = book.train_program(book.inference_program(words, len(word_dict), True))
    fluid.optimizer.AdagradOptimizer(
        learning_rate=3e-3,
        regularization=fluid.regularizer.L2DecayRegularizer(8e-4)).minimize(avg_cost)
    reader = fluid_paddle.batch(fluid_paddle.dataset.imikolov.train(word_dict, book.N), 100)
    return avg_cost, book.CONTEXT + ["nextw"], next(reader())


def sentiment_conv():
    import understand_sentiment as book
    _dataset("imdb")
    word_dict = fluid_paddle.dataset.imdb.word_dict()
    data = fluid.data(name="words", shape=[None], dtype="int64", lod_level=1)
    prediction = book.convolution_net(data, len(word_dict))
    label = fluid.data(name="label", shape=[None, 1], dtype="int64")
    avg_cost = fluid.layers.mean(fluid.layers.cross_entropy(input=prediction, label=label))
    fluid.optimizer.Adagrad(learning_rate=0.002).minimize(avg_cost)
    reader = fluid_paddle.batch(fluid_paddle.dataset.imdb.train(word_dict), book.BATCH_SIZE)
    return avg_cost, ["words", "label"], next(reader())


def translation():
    import machine_translation as book
    _dataset("wmt16")
    c = book.Config()
    c.dict_size = min(c.dict_size, len(fluid_paddle.dataset.wmt16.get_dict("en", c.dict_size)),
                      len(fluid_paddle.dataset.wmt16.get_dict("de", c.dict_size)))
    avg_cost = book.train_model(c)
    fluid.clip.set_gradient_clip(clip=fluid.clip.GradientClipByGlobalNorm(clip_norm=5.0))
    lr_decay = fluid.layers.learning_rate_scheduler.noam_decay(c.hidden_dim, c.warmup_steps)
    fluid.optimizer.Adam(learning_rate=lr_decay, regularization=fluid.regularizer.
                         L2DecayRegularizer(regularization_coeff=1e-4)).minimize(avg_cost)
    reader = fluid_paddle.batch(fluid_paddle.dataset.wmt16.train(c.dict_size, c.dict_size),
                                c.batch_size)
    return (avg_cost, ["src_word_id", "target_language_word", "target_language_next_word"],
            next(reader()))


MODELS = {"recommender_system (256 ratings)": recommender,
          "word2vec (100 5-grams)": word2vec,
          "understand_sentiment, conv (128 reviews)": sentiment_conv,
          "machine_translation (64 pairs)": translation}


def recommender_epoch():
    """The book's loop over recommender_system's first 40 batches (or its whole epoch, when
    shorter): the reader shuffled and batched as the book does it, DataFeeder, then
    ``Executor.run``; and the same batches read and fed without running. Seconds a batch."""
    run, feeder = trained(recommender)[:2]
    reader = fluid_paddle.batch(fluid_paddle.reader.shuffle(
        fluid_paddle.dataset.movielens.train(), buf_size=8192), batch_size=256)

    def loop(train):
        start, count = time.perf_counter(), 0
        for batch in itertools.islice(reader(), 40):
            feed = feeder.feed(batch)
            if train:
                run(feed)
            count += 1
        return (time.perf_counter() - start) / count
    loop(True)
    return interleaved_samples({"the book's loop": lambda: loop(True),
                                "reading and feeding alone": lambda: loop(False)}, rounds=5)


def trained(build, compiled=False):
    """(run, feeder, batch, ops compiled, ops in all) of the program ``build`` makes, its
    startup run in a scope of its own: ``run(feed)`` is one training step, fetching the
    cost; ``compiled``: of the program compiled to native code (on the batch it gives)."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 90
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        avg_cost, feed_order, batch = build()
    place = fluid.CPUPlace()
    feeder = fluid.DataFeeder(feed_list=feed_order, place=place, program=main)
    exe, scope = fluid.Executor(place), fluid.Scope()
    exe.run(startup, scope=scope)
    program, ops = main, len(main.global_block().ops)
    if compiled:
        from fluid_nb.rewriters import native
        program = native.compile(main, feeder.feed(batch), [avg_cost], scope=scope)
    return (lambda feed: exe.run(program, feed=feed, fetch_list=[avg_cost], scope=scope)[0],
            feeder, batch, len(program.source.functions) if compiled else ops, ops)


def fluid_model(build, compiled=False):
    """A training step of the program ``build`` makes (compiled to native code with
    ``compiled``), on the batch it gives; with the ops compiled and the ops in all."""
    run, feeder, batch, compiled_ops, ops = trained(build, compiled)
    return (lambda: run(feeder.feed(batch))), compiled_ops, ops


def scatter_rows(torch):
    """The scatter-add of a title convolution's gradient (ml-1m: about 900 title words a
    batch, 3 context rows each, 32 wide) in fluid_nb, NumPy and PyTorch."""
    rng = np.random.RandomState(0)
    index = rng.randint(0, 900, 2700)
    values = rng.standard_normal((2700, 32)).astype("float32")
    candidates = {
        "fluid_nb index_add": lambda: index_add(np, np.zeros((900, 32), "float32"), index,
                                                values),
        "NumPy np.add.at": lambda: np.add.at(np.zeros((900, 32), "float32"), index, values)}
    if torch is not None:
        t_index, t_values = torch.from_numpy(index), torch.from_numpy(values)
        candidates["PyTorch index_add_"] = lambda: torch.zeros(900, 32).index_add_(
            0, t_index, t_values)
    times = interleaved_best(candidates, rounds=9, number=50)
    print("scatter-add, 2,700 rows of 32 floats into 900")
    for label, seconds in times.items():
        row(f"  {label}", seconds * 1e6, "us", times["NumPy np.add.at"] * 1e6, "NumPy")


def main():
    torch = torch_or_none()
    print("The book's models, one training step (feed + Executor.run), ms per batch")
    steps = {}
    for title, build in MODELS.items():
        step = fluid_model(build)[0]
        for _ in range(3):  # plans, caches, the allocator
            step()
        steps[title] = step
    # word2vec's step compiled (its sizes fixed by the batch, no LoD): the sparse gradients
    # run in the interpreter between the compiled runs
    compiled, ops, total = fluid_model(word2vec, compiled=True)
    compiled_title = f"word2vec (100 5-grams), compiled ({ops} of {total} ops)"
    steps[compiled_title] = compiled
    times = interleaved_best(steps, rounds=7, number=3)
    for title, seconds in times.items():
        row(f"  {title}", seconds * 1e3, "ms")
    print("recommender_system's epoch as the book's loop runs it (40 batches of 256), ms a batch")
    for label, timings in recommender_epoch().items():
        row(f"  {label}", timings[0] * 1e3, "ms")
    scatter_rows(torch)


if __name__ == "__main__":
    main()
