"""Personalized recommendation (the Fluid 1.x book, chapter 05): MovieLens ratings.

The book's program with its two import lines changed. A user is the embeddings of their
id, gender, age group and job, each through an fc, joined by an fc; a movie is the
embedding of its id, the summed embeddings of its categories (a LoD sequence) and a
``sequence_conv_pool`` over its title words; the predicted rating is 5 x the cosine
similarity of the two (``layers.cos_sim``), trained with square error and SGD. The
inference model is saved, loaded back and asked for one user's rating of one movie.

It reads ``paddle.dataset.movielens``; when ml-1m is not in the dataset cache (and with
``--sample``) it uses a small sample in the same format instead.

    python examples/book/recommender_system.py --num_epochs 1
"""
import argparse
import tempfile

import numpy as np

import fluid_nb.paddle as paddle  # the book: import paddle
import fluid_nb as fluid  # the book: import paddle.fluid as fluid

layers = fluid.layers
nets = fluid.nets
IS_SPARSE = True
FEED_ORDER = ["user_id", "gender_id", "age_id", "job_id", "movie_id", "category_id",
              "movie_title", "score"]


def embedded_fc(name, dict_size, emb_size, fc_size, table):
    ids = layers.data(name=name, shape=[1], dtype="int64")
    emb = layers.embedding(input=ids, dtype="float32", size=[dict_size, emb_size],
                           param_attr=table, is_sparse=IS_SPARSE)
    return layers.fc(input=emb, size=fc_size)


def user_features():
    movielens = paddle.dataset.movielens
    parts = [embedded_fc("user_id", movielens.max_user_id() + 1, 32, 32, "user_table"),
             embedded_fc("gender_id", 2, 16, 16, "gender_table"),
             embedded_fc("age_id", len(movielens.age_table), 16, 16, "age_table"),
             embedded_fc("job_id", movielens.max_job_id() + 1, 16, 16, "job_table")]
    return layers.fc(input=layers.concat(input=parts, axis=1), size=200, act="tanh")


def movie_features():
    movielens = paddle.dataset.movielens
    movie = embedded_fc("movie_id", movielens.max_movie_id() + 1, 32, 32, "movie_table")
    category_id = layers.data(name="category_id", shape=[1], dtype="int64", lod_level=1)
    categories = layers.sequence_pool(
        input=layers.embedding(input=category_id, is_sparse=IS_SPARSE,
                               size=[len(movielens.movie_categories()), 32]),
        pool_type="sum")
    title_id = layers.data(name="movie_title", shape=[1], dtype="int64", lod_level=1)
    title = nets.sequence_conv_pool(
        input=layers.embedding(input=title_id, is_sparse=IS_SPARSE,
                               size=[len(movielens.get_movie_title_dict()), 32]),
        num_filters=32, filter_size=3, act="tanh", pool_type="sum")
    return layers.fc(input=layers.concat(input=[movie, categories, title], axis=1), size=200,
                     act="tanh")


def inference_program():
    similarity = layers.cos_sim(X=user_features(), Y=movie_features())
    scale_infer = layers.scale(x=similarity, scale=5.0)
    label = layers.data(name="score", shape=[1], dtype="float32")
    avg_cost = layers.mean(layers.square_error_cost(input=scale_infer, label=label))
    return scale_infer, avg_cost


def main(num_epochs=1, batch_size=256, max_batches=None, save_dir=None, sample=False,
         seed=90):
    """Train, test, save, reload and predict; returns the batch costs, the test costs and
    the predicted rating."""
    if sample or not paddle.dataset.samples.is_cached("movielens"):
        paddle.dataset.samples.use_samples("movielens")
    place = fluid.CPUPlace()
    save_dir = save_dir or tempfile.mkdtemp(prefix="recommender_system_")
    train_reader = paddle.batch(paddle.reader.shuffle(paddle.dataset.movielens.train(),
                                                      buf_size=8192), batch_size=batch_size)
    test_reader = paddle.batch(paddle.dataset.movielens.test(), batch_size=batch_size)

    main_program = fluid.default_main_program()
    startup_program = fluid.default_startup_program()
    main_program.random_seed = startup_program.random_seed = seed
    scale_infer, avg_cost = inference_program()
    test_program = main_program.clone(for_test=True)
    fluid.optimizer.SGD(learning_rate=0.2).minimize(avg_cost)

    exe = fluid.Executor(place)
    feeder = fluid.DataFeeder(feed_list=FEED_ORDER, place=place, program=main_program)
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
        test_cost = np.mean([exe.run(test_program, feed=feeder.feed(data),
                                     fetch_list=[avg_cost])[0][0] for data in test_reader()])
        test_costs.append(test_cost)
        print("Test with Pass %d, Cost %.3f" % (pass_id, test_cost))
        fluid.io.save_inference_model(save_dir, FEED_ORDER[:-1], [scale_infer], exe)

    infer_exe = fluid.Executor(place)
    with fluid.scope_guard(fluid.core.Scope()):
        program, feed_names, fetch_targets = fluid.io.load_inference_model(save_dir, infer_exe)
        user_id, gender, age, job, movie_id, categories, title, score = \
            next(paddle.dataset.movielens.test()())

        def one(value):
            return fluid.create_lod_tensor([[np.int64(value)]], [[1]], place)

        def sequence(values):
            return fluid.create_lod_tensor([[np.int64(v) for v in values]], [[len(values)]],
                                           place)
        feed = dict(zip(feed_names, [one(user_id), one(gender), one(age), one(job),
                                     one(movie_id), sequence(categories), sequence(title)]))
        (rating,) = infer_exe.run(program, feed=feed, fetch_list=fetch_targets,
                                  return_numpy=False)
    predicted = float(np.array(rating)[0][0])
    print("user %d would rate movie %d %.2f (the data says %.1f)" % (
        user_id, movie_id, predicted, score[0]))
    return {"costs": costs, "test_costs": test_costs, "rating": predicted,
            "save_dir": save_dir}


if __name__ == "__main__":
    parser = argparse.ArgumentParser("recommender_system")
    parser.add_argument("--num_epochs", type=int, default=1)
    parser.add_argument("--max_batches", type=int, default=None,
                        help="batches per pass (default: all)")
    parser.add_argument("--sample", action="store_true",
                        help="train on the small sample even when ml-1m is cached")
    args = parser.parse_args()
    main(args.num_epochs, max_batches=args.max_batches, sample=args.sample)
