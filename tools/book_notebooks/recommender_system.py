"""Cells of notebooks/14_recommender_system.ipynb (the book's chapter 05)."""

CELLS = [
    ("md", """\
# Personalized recommendation: two towers and a cosine

The PaddlePaddle book, chapter 05: predict how a user rates a movie (MovieLens). Each side
gets a feature vector from its own small network, a **tower**: the user from embeddings of
their id, gender, age group and job, each through an `fc`, joined by a 200-wide `fc`; the
movie from an embedding of its id, the summed embeddings of its genres (a sequence of any
length) and a convolution over the words of its title (`sequence_conv_pool`), joined the
same way. The predicted rating is 5 times the **cosine similarity** of the two vectors,
trained on the square error. The code is the book's, with `import fluid_nb as fluid`;
`examples/book/recommender_system.py` is the chapter as a script."""),
    ("code", "setup", """\
%load_ext fluid_nb
import random, tempfile
from collections import Counter

import numpy as np
import fluid_nb.paddle as paddle     # the book: import paddle
import fluid_nb as fluid             # the book: import paddle.fluid as fluid
from fluid_nb.dataset import samples

random.seed(90)                      # paddle.reader.shuffle draws from `random`
IS_SPARSE = True
BATCH_SIZE = 256
place = fluid.CPUPlace()
exe = fluid.Executor(place)"""),
    ("md", """\
## The data: `movielens`

`paddle.dataset.movielens` reads `ml-1m.zip`: users, movies and ratings. A sample is one
rating with everything known about its user and movie:
`[user_id, gender, age, job, movie_id, category_ids, title_ids, [score]]`, the score being
`stars * 2 - 5` (-3 to 5). Without the real zip in the cache, `samples.use_samples` writes
a small one in the same format (60 users, 120 movies, 6,400 ratings) where a user rates a
movie high when its first genre is one the user's group likes. With the real data the
notebook takes its first ratings only."""),
    ("code", "data", """\
REAL_DATA = samples.is_cached('movielens')
print('ml-1m in the dataset cache:', REAL_DATA)
if not REAL_DATA:
    samples.use_samples('movielens')
movielens = paddle.dataset.movielens
train_samples = list(paddle.reader.firstn(movielens.train(), 6000)())
test_samples = list(paddle.reader.firstn(movielens.test(), 700)())
train_reader = paddle.batch(paddle.reader.shuffle(lambda: iter(train_samples), buf_size=8192),
                            batch_size=BATCH_SIZE)
test_reader = paddle.batch(lambda: iter(test_samples), batch_size=BATCH_SIZE)

print('ratings: training', len(train_samples), ' test', len(test_samples))
print('max user id', movielens.max_user_id(), ' max movie id', movielens.max_movie_id(),
      ' max job id', movielens.max_job_id(), ' age groups', len(movielens.age_table))
print('genres:', len(movielens.movie_categories()), ' title words:', len(movielens.get_movie_title_dict()))
sample = train_samples[0]
for field, value in zip(['user_id', 'gender_id', 'age_id', 'job_id', 'movie_id', 'category_id',
                         'movie_title', 'score'], sample):
    print(f'  {field:12} {value if not isinstance(value, list) or len(value) < 8 else value[:8] + ["..."]}')
print('movie:', movielens.movie_info()[sample[4]].title, movielens.movie_info()[sample[4]].categories)"""),
    ("md", """\
## The user tower

Four ids, four embedding tables (named, so the inference program finds them again), four
`fc`s, one `concat` and a 200-wide `tanh` layer."""),
    ("code", "user", """\
def get_usr_combined_features():
    USR_DICT_SIZE = paddle.dataset.movielens.max_user_id() + 1
    uid = fluid.data(name='user_id', shape=[None], dtype='int64')
    usr_emb = fluid.embedding(input=uid, dtype='float32', size=[USR_DICT_SIZE, 32],
                              param_attr='user_table', is_sparse=IS_SPARSE)
    usr_fc = fluid.layers.fc(input=usr_emb, size=32)

    USR_GENDER_DICT_SIZE = 2
    usr_gender_id = fluid.data(name='gender_id', shape=[None], dtype='int64')
    usr_gender_emb = fluid.embedding(input=usr_gender_id, size=[USR_GENDER_DICT_SIZE, 16],
                                     param_attr='gender_table', is_sparse=IS_SPARSE)
    usr_gender_fc = fluid.layers.fc(input=usr_gender_emb, size=16)

    USR_AGE_DICT_SIZE = len(paddle.dataset.movielens.age_table)
    usr_age_id = fluid.data(name='age_id', shape=[None], dtype='int64')
    usr_age_emb = fluid.embedding(input=usr_age_id, size=[USR_AGE_DICT_SIZE, 16],
                                  is_sparse=IS_SPARSE, param_attr='age_table')
    usr_age_fc = fluid.layers.fc(input=usr_age_emb, size=16)

    USR_JOB_DICT_SIZE = paddle.dataset.movielens.max_job_id() + 1
    usr_job_id = fluid.data(name='job_id', shape=[None], dtype='int64')
    usr_job_emb = fluid.embedding(input=usr_job_id, size=[USR_JOB_DICT_SIZE, 16],
                                  param_attr='job_table', is_sparse=IS_SPARSE)
    usr_job_fc = fluid.layers.fc(input=usr_job_emb, size=16)

    concat_embed = fluid.layers.concat(input=[usr_fc, usr_gender_fc, usr_age_fc, usr_job_fc], axis=1)
    usr_combined_features = fluid.layers.fc(input=concat_embed, size=200, act='tanh')
    return usr_combined_features"""),
    ("md", """\
## The movie tower

The genres and the title are **LoD** inputs (`lod_level=1`): one row per genre or word, and
offsets saying where each movie's start. `sequence_pool(sum)` adds a movie's genre
embeddings into one row; `sequence_conv_pool` slides a window of 3 words over each title
(`sequence_conv`), then sums over the title's positions."""),
    ("code", "movie", """\
def get_mov_combined_features():
    MOV_DICT_SIZE = paddle.dataset.movielens.max_movie_id() + 1
    mov_id = fluid.data(name='movie_id', shape=[None], dtype='int64')
    mov_emb = fluid.embedding(input=mov_id, dtype='float32', size=[MOV_DICT_SIZE, 32],
                              param_attr='movie_table', is_sparse=IS_SPARSE)
    mov_fc = fluid.layers.fc(input=mov_emb, size=32)

    CATEGORY_DICT_SIZE = len(paddle.dataset.movielens.movie_categories())
    category_id = fluid.data(name='category_id', shape=[None], dtype='int64', lod_level=1)
    mov_categories_emb = fluid.embedding(input=category_id, size=[CATEGORY_DICT_SIZE, 32],
                                         is_sparse=IS_SPARSE)
    mov_categories_hidden = fluid.layers.sequence_pool(input=mov_categories_emb, pool_type='sum')

    MOV_TITLE_DICT_SIZE = len(paddle.dataset.movielens.get_movie_title_dict())
    mov_title_id = fluid.data(name='movie_title', shape=[None], dtype='int64', lod_level=1)
    mov_title_emb = fluid.embedding(input=mov_title_id, size=[MOV_TITLE_DICT_SIZE, 32],
                                    is_sparse=IS_SPARSE)
    mov_title_conv = fluid.nets.sequence_conv_pool(input=mov_title_emb, num_filters=32,
                                                   filter_size=3, act='tanh', pool_type='sum')

    concat_embed = fluid.layers.concat(input=[mov_fc, mov_categories_hidden, mov_title_conv], axis=1)
    mov_combined_features = fluid.layers.fc(input=concat_embed, size=200, act='tanh')
    return mov_combined_features"""),
    ("md", """\
## Cosine similarity, the cost, the optimizer

`cos_sim` gives one number per row, $\\frac{u \\cdot m}{\\|u\\| \\|m\\|}$ in $[-1, 1]$;
`scale` stretches it to the range of the scores. The test program is cloned before the
optimizer."""),
    ("code", "program", """\
def inference_program():
    usr_combined_features = get_usr_combined_features()
    mov_combined_features = get_mov_combined_features()
    inference = fluid.layers.cos_sim(X=usr_combined_features, Y=mov_combined_features)
    scale_infer = fluid.layers.scale(x=inference, scale=5.0)
    label = fluid.data(name='score', shape=[None, 1], dtype='float32')
    square_cost = fluid.layers.square_error_cost(input=scale_infer, label=label)
    avg_cost = fluid.layers.mean(square_cost)
    return scale_infer, avg_cost, (usr_combined_features, mov_combined_features, inference)


main_program = fluid.default_main_program()
startup_program = fluid.default_startup_program()
main_program.random_seed = startup_program.random_seed = 90
scale_infer, avg_cost, (usr_features, mov_features, similarity) = inference_program()
test_program = main_program.clone(for_test=True)
# the book: fluid.optimizer.SGD(learning_rate=0.2), see "Training" below
optimizer = fluid.optimizer.Adam(learning_rate=0.002)
optimizer.minimize(avg_cost)

block = main_program.global_block()
print('towers:', list(usr_features.shape), list(mov_features.shape), '-> cos_sim', list(similarity.shape),
      '-> scale', list(scale_infer.shape))
print('embedding tables:', {p.name: list(p.shape) for p in block.all_parameters()
                            if p.name.endswith('table') or p.name.startswith('embedding')})
print('optimizer ops:', dict(Counter(op.type for op in block.ops if op.attrs.get('op_role') == 2)))"""),
    ("md", """\
## One batch through the towers

The test program on the first batch: each user and movie becomes a 200-wide vector, and
the cosine of each pair worked out with NumPy is `cos_sim`'s. The genres and titles arrive
as LoD tensors."""),
    ("code", "towers", """\
feed_order = ['user_id', 'gender_id', 'age_id', 'job_id', 'movie_id', 'category_id',
              'movie_title', 'score']
feeder = fluid.DataFeeder(feed_list=feed_order, place=place, program=main_program)
exe.run(startup_program)
batch = next(test_reader())
feed = feeder.feed(batch)
print('category_id lod (first 6 offsets):', feed['category_id'].lod()[0][:6], ' rows', np.array(feed['category_id']).shape)
print('movie_title lod (first 4 offsets):', feed['movie_title'].lod()[0][:4], ' rows', np.array(feed['movie_title']).shape)
u, m, cos, rating = exe.run(test_program, feed=feed,
                            fetch_list=[usr_features, mov_features, similarity, scale_infer])
by_hand = (u * m).sum(axis=1) / (np.linalg.norm(u, axis=1) * np.linalg.norm(m, axis=1))
print('user features', u.shape, ' movie features', m.shape, ' cos_sim', cos.shape, ' rating', rating.shape)
print('cos_sim by hand equals the op:', bool(np.allclose(by_hand, cos[:, 0], atol=1e-5)),
      ' rating = 5 cos:', bool(np.allclose(rating, 5 * cos, atol=1e-5)))
print(f'untrained ratings in [{rating.min():.2f}, {rating.max():.2f}]')"""),
    ("md", """\
The training program: the two towers side by side meeting at `cos_sim`, the loss, the
gradients, and an `adam` update per parameter; the embedding tables' gradients are sparse
(`is_sparse=True`: only the rows a batch looked up)."""),
    ("code", "graph", "from fluid_nb import viz\n\n# opened where the two towers meet: the cosine similarity of user and movie features\nviz.show(main_program, reveal='cos_sim')"),
    ("md", """\
## Training

The book's loop: batches of 256 ratings, the test program after each pass. A constant
guess (the mean training score) has a cost equal to the scores' variance; the towers have
to beat it by learning which users like which movies.

One change from the book: it trains with `SGD(learning_rate=0.2)` over ml-1m's 900,000
training ratings, some 3,500 steps a pass. On the sample's 23 batches a pass, SGD's small
steps get no further than the mean score in a few passes (the cosine's gradient is
divided by the vectors' norms and the batch), so this notebook uses `Adam`, which scales
each step by the gradient's running size."""),
    ("code", "train", """\
def test_cost():
    costs = [(float(exe.run(test_program, feed=feeder.feed(data), fetch_list=[avg_cost])[0][0]), len(data))
             for data in test_reader()]
    return sum(c * n for c, n in costs) / sum(n for _, n in costs)

scores = np.array([s[-1][0] for s in train_samples])
test_scores = np.array([s[-1][0] for s in test_samples])
print(f'constant guess {scores.mean():.2f}: test cost {np.mean((test_scores - scores.mean()) ** 2):.3f}')
print(f'before training: test cost {test_cost():.3f}')
pass_costs, test_costs = [], []
for pass_id in range(3):
    costs = [float(exe.run(main_program, feed=feeder.feed(data), fetch_list=[avg_cost])[0][0])
             for data in train_reader()]
    pass_costs.append(float(np.mean(costs)))
    test_costs.append(test_cost())
    print(f'pass {pass_id}: {len(costs)} batches, train cost {pass_costs[-1]:.3f}, test cost {test_costs[-1]:.3f}')"""),
    ("md", """\
## Save, load, infer

The inference model is pruned to `scale_infer` from the seven id inputs; loaded back into a
fresh scope it predicts the ratings of a few test pairs (single ids as `[[id]]`, the genres
and title as one-sequence LoD tensors, as the book feeds them)."""),
    ("code", "infer", """\
params_dirname = tempfile.mkdtemp(prefix='recommender_system_')
fluid.io.save_inference_model(params_dirname, feed_order[:-1], [scale_infer], exe)

def one(value):
    return fluid.create_lod_tensor([[np.int64(value)]], [[1]], place)

def sequence(values):
    return fluid.create_lod_tensor([[np.int64(v) for v in values]], [[len(values)]], place)

inference_scope = fluid.core.Scope()
with fluid.scope_guard(inference_scope):
    [inferencer, feed_target_names,
     fetch_targets] = fluid.io.load_inference_model(params_dirname, exe)
    print('feed:', feed_target_names)
    for user_id, gender, age, job, movie_id, categories, title, score in test_samples[:5]:
        feed = dict(zip(feed_target_names, [one(user_id), one(gender), one(age), one(job),
                                            one(movie_id), sequence(categories), sequence(title)]))
        results = exe.run(inferencer, feed=feed, fetch_list=fetch_targets, return_numpy=False)
        predicted = float(np.array(results[0])[0][0])
        print(f'user {user_id:2} movie {movie_id:3}: predicted {predicted:5.2f}, the data says {score[0]:4.1f}')"""),
]
