"""Cells of notebooks/11_fit_a_line.ipynb (the book's chapter 01)."""

CELLS = [
    ("md", """\
# Linear regression: fit a line to house prices

The PaddlePaddle book, chapter 01: predict the median price of a Boston house (in $1000s)
from 13 features of its neighbourhood with one fully connected layer,
$\\hat y = x W + b$, trained on the mean square error with stochastic gradient descent.
The program is the book's, with `import fluid_nb as fluid` in place of
`import paddle.fluid as fluid`; `examples/book/fit_a_line.py` is the same chapter as a
script."""),
    ("code", "setup", """\
%load_ext fluid_nb
import random
import tempfile
from collections import Counter

import numpy as np
import fluid_nb.paddle as paddle     # the book: import paddle
import fluid_nb as fluid             # the book: import paddle.fluid as fluid

random.seed(90)                      # paddle.reader.shuffle draws from `random`
fluid.default_startup_program().random_seed = 90
fluid.default_main_program().random_seed = 90"""),
    ("md", """\
## The data: `uci_housing`

506 houses; every feature column is centred on its mean and divided by its range, the
price is left as is. The first 404 rows are the training set, the last 102 the test set.
A sample is `(features[13], price[1])`; `paddle.batch` groups shuffled samples into lists
of 20."""),
    ("code", "data", """\
BATCH_SIZE = 20
train_reader = paddle.batch(paddle.reader.shuffle(paddle.dataset.uci_housing.train(),
                                                  buf_size=500), batch_size=BATCH_SIZE)
test_reader = paddle.batch(paddle.dataset.uci_housing.test(), batch_size=BATCH_SIZE)

train_rows = list(paddle.dataset.uci_housing.train()())
test_rows = list(paddle.dataset.uci_housing.test()())
print('training samples:', len(train_rows), ' test samples:', len(test_rows))
features, price = train_rows[0]
print('features:', paddle.dataset.uci_housing.FEATURE_NAMES)
print('first sample:', np.round(features, 3).tolist(), '-> price', price.tolist())
print('a batch:', len(next(train_reader())), 'samples')"""),
    ("md", """\
## The program

`fluid.data` declares what is fed (`None` is the batch dimension), `fc` with `size=1` is the
linear model (a `mul` by `W` and an `elementwise_add` of `b`), `square_error_cost` and
`mean` the loss. The test program is cloned **before** the optimizer, so it holds the
forward pass only; `minimize` then appends the backward ops and one `sgd` op per
parameter to the main program."""),
    ("code", "program", """\
x = fluid.data(name='x', shape=[None, 13], dtype='float32')
y = fluid.data(name='y', shape=[None, 1], dtype='float32')
y_predict = fluid.layers.fc(input=x, size=1, act=None)

main_program = fluid.default_main_program()
startup_program = fluid.default_startup_program()

cost = fluid.layers.square_error_cost(input=y_predict, label=y)
avg_loss = fluid.layers.mean(cost)
test_program = main_program.clone(for_test=True)

sgd_optimizer = fluid.optimizer.SGD(learning_rate=0.001)
sgd_optimizer.minimize(avg_loss)

ROLES = {0: 'forward', 1: 'backward', 2: 'optimize', 256: 'loss', 257: 'backward'}
print('parameters:', {p.name: list(p.shape) for p in main_program.global_block().all_parameters()})
print('y_predict shape:', list(y_predict.shape))
print('test program ops:', [op.type for op in test_program.global_block().ops])
print('ops by role:', dict(Counter(ROLES.get(op.attrs.get('op_role', 0), 'other')
                                   for op in main_program.global_block().ops)))"""),
    ("md", """\
The training program as a graph: forward, loss, the gradient ops (dashed) and the two `sgd`
updates (bold); the parameters `fc_0.w_0` and `fc_0.b_0` are drawn inside the ops that read
or update them."""),
    ("code", "graph", "from fluid_nb import viz\n\n# opened at the model itself: the fc layer, its weight and bias\nviz.show(main_program, reveal='fc_0.w_0')"),
    ("md", """\
## Training

The startup program initialises the parameters; each `exe.run` of the main program feeds a
batch through `DataFeeder`, runs forward, backward and SGD, and fetches the loss. After each
pass the test program measures the loss on the held-out houses."""),
    ("code", "train", """\
place = fluid.CPUPlace()
exe = fluid.Executor(place)
feeder = fluid.DataFeeder(place=place, feed_list=[x, y])
exe.run(startup_program)

def test_loss():
    # the mean square error over all test houses: each batch's mean weighted by its size
    # (the last batch holds 2 houses)
    losses = [(float(exe.run(test_program, feed=feeder.feed(data), fetch_list=[avg_loss])[0][0]),
               len(data)) for data in test_reader()]
    return sum(loss * n for loss, n in losses) / sum(n for _, n in losses)

num_epochs = 100
train_costs, test_costs = [], []
print(f'before training: test cost {test_loss():.2f}')
for pass_id in range(num_epochs):
    for data_train in train_reader():
        avg_loss_value, = exe.run(main_program, feed=feeder.feed(data_train),
                                  fetch_list=[avg_loss])
        train_costs.append(float(avg_loss_value[0]))
    test_costs.append(test_loss())
    if pass_id % 20 == 0 or pass_id == num_epochs - 1:
        print(f'pass {pass_id:3}: train cost {np.mean(train_costs[-21:]):7.2f} (mean of the pass), '
              f'test cost {test_costs[-1]:7.2f}')
print(f'{len(train_costs)} steps; test cost per 20 passes:',
      [round(c, 2) for c in test_costs[::20]] + [round(test_costs[-1], 2)])"""),
    ("md", """\
## What SGD is approaching

Linear regression has a closed form: the least-squares fit of the training set, the lowest
training cost any $W, b$ can reach. Gradient descent on the mean square error walks
towards it; with this small learning rate it is still on the way after 100 passes, its
weights smaller than the least-squares ones (directions in which the features vary little
are learnt slowly). On these 102 test houses the unfinished walk even does better than the
exact fit, which over-fits the training set. The test program fed all 102 test houses
as one batch gives the same cost as NumPy."""),
    ("code", "least-squares", """\
scope = fluid.global_scope()
w = np.array(scope.find_var('fc_0.w_0').get_tensor())[:, 0]
b = float(np.array(scope.find_var('fc_0.b_0').get_tensor())[0])
X = np.array([f for f, _ in train_rows]); Y = np.array([p[0] for _, p in train_rows])
Xt = np.array([f for f, _ in test_rows]); Yt = np.array([p[0] for _, p in test_rows])
solution, *_ = np.linalg.lstsq(np.c_[X, np.ones(len(X))], Y, rcond=None)

def mse(features, prices, weights, bias):
    return float(np.mean((features @ weights + bias - prices) ** 2))

whole_test, = exe.run(test_program, feed=feeder.feed(test_rows), fetch_list=[avg_loss])
print(f'training cost: SGD {mse(X, Y, w, b):.2f}, least squares '
      f'{mse(X, Y, solution[:13], solution[13]):.2f}, the mean price {float(np.var(Y)):.2f}')
print(f'test cost: SGD {mse(Xt, Yt, w, b):.2f}, least squares '
      f'{mse(Xt, Yt, solution[:13], solution[13]):.2f}, the mean price '
      f'{float(np.mean((Y.mean() - Yt) ** 2)):.2f}')
print(f'test program on all {len(test_rows)} test houses: {float(whole_test[0]):.2f}')
print(f'weights with the least-squares sign: {int(np.sum(np.sign(w) == np.sign(solution[:13])))} of 13')
for name, learnt, best in sorted(zip(paddle.dataset.uci_housing.FEATURE_NAMES, w, solution),
                                 key=lambda t: -abs(t[2]))[:4]:
    print(f'  {name:8} SGD {learnt:7.2f}   least squares {best:7.2f}')"""),
    ("md", """\
## Save, load, infer

`save_inference_model` prunes the program to what `y_predict` needs from `x` and writes it
with the parameters; `load_inference_model` reads it back into a fresh scope, and the
loaded program predicts ten test houses."""),
    ("code", "infer", """\
params_dirname = tempfile.mkdtemp(prefix='fit_a_line_')
fluid.io.save_inference_model(params_dirname, ['x'], [y_predict], exe)

infer_exe = fluid.Executor(place)
inference_scope = fluid.core.Scope()
with fluid.scope_guard(inference_scope):
    [inference_program, feed_target_names,
     fetch_targets] = fluid.io.load_inference_model(params_dirname, infer_exe)
    infer_data = next(paddle.batch(paddle.dataset.uci_housing.test(), batch_size=10)())
    infer_feat = np.array([data[0] for data in infer_data]).astype('float32')
    infer_label = np.array([data[1] for data in infer_data]).astype('float32')
    results, = infer_exe.run(inference_program, feed={feed_target_names[0]: infer_feat},
                             fetch_list=fetch_targets)
print('feed:', feed_target_names, ' ops:', [op.type for op in inference_program.global_block().ops])
print('results shape:', results.shape)
print('infer results (house price) and ground truth:')
for idx, (val, truth) in enumerate(zip(results, infer_label)):
    print(f'{idx}: {val[0]:.2f}  {truth[0]:.2f}')
print(f'mean square error of the ten: {float(np.mean((results - infer_label) ** 2)):.2f}')"""),
]
