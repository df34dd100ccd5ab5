"""Cells of notebooks/12_recognize_digits.ipynb (the book's chapter 02)."""

CELLS = [
    ("md", """\
# Recognize digits: softmax regression, a perceptron, LeNet-5

The PaddlePaddle book, chapter 02: classify 28x28 grey images of handwritten digits into
the ten classes 0-9 with three networks of growing power: **softmax regression** (one `fc`
straight to the ten probabilities), a **multilayer perceptron** (two hidden `fc` layers of
200 `tanh` units) and a **convolutional network** in the style of LeNet-5 (two
convolution + max-pooling stages, batch normalisation between). Each is trained with
cross entropy and Adam, measured on the test images, and the conv net is saved, reloaded
and asked for the digit of one image. The code is the book's, with
`import fluid_nb as fluid`; `examples/book/recognize_digits.py` is the chapter as a
script."""),
    ("code", "setup", """\
%load_ext fluid_nb
import os, random, tempfile
from collections import Counter

import numpy as np
from PIL import Image
import fluid_nb.paddle as paddle     # the book: import paddle
import fluid_nb as fluid             # the book: import paddle.fluid as fluid
from fluid_nb.dataset import samples

random.seed(90)                      # paddle.reader.shuffle draws from `random`
place = fluid.CPUPlace()
exe = fluid.Executor(place)"""),
    ("md", """\
## The data: `mnist`

`paddle.dataset.mnist` reads four gzipped IDX files (images and labels, training and test)
from the dataset cache. A sample is `(image float32[784], label)`, the pixels scaled to
$[-1, 1]$. When the real files are not cached, `samples.use_samples('mnist')` writes 512
training and 128 test images in the same format: faint noise and a bright square whose
place is the digit, a task the three networks can learn in one pass. With the real data
the notebook trains on its first 512 images."""),
    ("code", "data", """\
REAL_DATA = samples.is_cached('mnist')
print('MNIST in the dataset cache:', REAL_DATA)
if not REAL_DATA:
    samples.use_samples('mnist')
BATCH_SIZE = 64
train_samples = list(paddle.reader.firstn(paddle.dataset.mnist.train(), 512)())
test_samples = list(paddle.reader.firstn(paddle.dataset.mnist.test(), 256)())
train_reader = paddle.batch(paddle.reader.shuffle(lambda: iter(train_samples), buf_size=500),
                            batch_size=BATCH_SIZE)
test_reader = paddle.batch(lambda: iter(test_samples), batch_size=BATCH_SIZE)
image, label = train_samples[0]
print('image:', image.shape, image.dtype, f'in [{image.min():.0f}, {image.max():.0f}]', ' label:', label)
print('training and test images:', len(train_samples), len(test_samples))
print('labels of the training images:', sorted(Counter(l for _, l in train_samples).items()))
rows = (image.reshape(28, 28)[::2, ::2] > 0)
print('\\n'.join(''.join('#' if p else '.' for p in row) for row in rows))"""),
    ("md", """\
## Three networks

As in the book, each network function declares the image input and returns the softmax
prediction; `train_program` adds the label, the cross-entropy cost, its mean and the
accuracy. `fc` on a `[N, 1, 28, 28]` image flattens it to 784 columns first
(`num_flatten_dims=1`). `simple_img_conv_pool` is a `conv2d` followed by a 2x2 max
`pool2d`; with 5x5 filters and no padding the image goes 28 -> 24 -> 12 through the first
and 12 -> 8 -> 4 through the second."""),
    ("code", "networks", """\
def softmax_regression():
    img = fluid.data(name='img', shape=[None, 1, 28, 28], dtype='float32')
    predict = fluid.layers.fc(input=img, size=10, act='softmax')
    return predict


def multilayer_perceptron():
    img = fluid.data(name='img', shape=[None, 1, 28, 28], dtype='float32')
    hidden = fluid.layers.fc(input=img, size=200, act='tanh')
    hidden = fluid.layers.fc(input=hidden, size=200, act='tanh')
    prediction = fluid.layers.fc(input=hidden, size=10, act='softmax')
    return prediction


def convolutional_neural_network():
    img = fluid.data(name='img', shape=[None, 1, 28, 28], dtype='float32')
    conv_pool_1 = fluid.nets.simple_img_conv_pool(
        input=img, filter_size=5, num_filters=20, pool_size=2, pool_stride=2, act='relu')
    conv_pool_1 = fluid.layers.batch_norm(conv_pool_1)
    conv_pool_2 = fluid.nets.simple_img_conv_pool(
        input=conv_pool_1, filter_size=5, num_filters=50, pool_size=2, pool_stride=2, act='relu')
    prediction = fluid.layers.fc(input=conv_pool_2, size=10, act='softmax')
    return prediction


def train_program(network):
    label = fluid.data(name='label', shape=[None, 1], dtype='int64')
    predict = network()
    cost = fluid.layers.cross_entropy(input=predict, label=label)
    avg_cost = fluid.layers.mean(cost)
    acc = fluid.layers.accuracy(input=predict, label=label)
    return predict, [avg_cost, acc]


def optimizer_program():
    return fluid.optimizer.Adam(learning_rate=0.001)


NETWORKS = {'softmax_regression': softmax_regression, 'multilayer_perceptron': multilayer_perceptron,
            'convolutional_neural_network': convolutional_neural_network}
built = {}
for name, network in NETWORKS.items():
    main_program, startup_program = fluid.Program(), fluid.Program()
    main_program.random_seed = startup_program.random_seed = 90
    with fluid.program_guard(main_program, startup_program), fluid.unique_name.guard():
        prediction, [avg_loss, acc] = train_program(network)
        test_program = main_program.clone(for_test=True)
        optimizer_program().minimize(avg_loss)
    parameters = main_program.global_block().all_parameters()
    built[name] = dict(main=main_program, startup=startup_program, test=test_program,
                       prediction=prediction, loss=avg_loss, acc=acc, scope=fluid.Scope())
    print(f'{name}: {len(parameters)} parameters, '
          f'{sum(int(np.prod(p.shape)) for p in parameters):,} weights, '
          f'{len(main_program.global_block().ops)} ops')"""),
    ("md", """\
## Shapes through the conv net

At compile time the batch dimension is `-1`; running the forward part of the conv net on
one batch gives the same shapes with the batch size in it."""),
    ("code", "shapes", """\
conv = built['convolutional_neural_network']
block = conv['main'].global_block()
stages = [op.output('Out')[0] for op in block.ops if op.type == 'pool2d']
with fluid.scope_guard(conv['scope']):
    exe.run(conv['startup'])
    feeder = fluid.DataFeeder(feed_list=['img', 'label'], place=place, program=conv['test'])
    values = exe.run(conv['test'], feed=feeder.feed(test_samples[:BATCH_SIZE]),
                     fetch_list=stages + [conv['prediction'].name])
for name, value in zip(stages + ['prediction'], values):
    var = block.var(conv['prediction'].name if name == 'prediction' else name)
    print(f'{name:16} compile time {list(var.shape)!s:18} run {value.shape}')
print('filters:', {p.name: list(p.shape) for p in block.all_parameters() if p.name.startswith('conv2d')})
print('probabilities sum to one:', bool(np.allclose(values[-1].sum(axis=1), 1, atol=1e-5)))"""),
    ("md", """\
The conv net's training program: the two conv-pool stages, batch norm (its moving mean
and variance are persistable and updated in the forward pass), the softmax `fc`, the loss
and accuracy, their gradients, and one `adam` op per trained parameter with its two
moments and the powers of $\\beta_1, \\beta_2$."""),
    ("code", "graph", "from fluid_nb import viz\n\n# opened at the first convolution of the conv net\nviz.show(conv['main'], reveal='conv2d')"),
    ("md", """\
## Training and testing

The book's loop for each network: one pass over the training images in batches of 64,
then the test program over the test images (the accuracy of each batch weighted by its
size). A random guess is right one time in ten."""),
    ("code", "train", """\
def train_and_test(name, epochs=1):
    net = built[name]
    feeder = fluid.DataFeeder(feed_list=['img', 'label'], place=place, program=net['main'])
    costs = []
    with fluid.scope_guard(net['scope']):
        exe.run(net['startup'])
        for epoch_id in range(epochs):
            for data in train_reader():
                loss, accuracy = exe.run(net['main'], feed=feeder.feed(data),
                                         fetch_list=[net['loss'], net['acc']])
                costs.append(float(loss[0]))
        results = [(exe.run(net['test'], feed=feeder.feed(data),
                            fetch_list=[net['loss'], net['acc']]), len(data))
                   for data in test_reader()]
    count = sum(n for _, n in results)
    test_cost = sum(float(c[0]) * n for (c, _), n in results) / count
    test_acc = sum(float(a[0]) * n for (_, a), n in results) / count
    return costs, test_cost, test_acc

for name in NETWORKS:
    costs, test_cost, test_acc = train_and_test(name)
    print(f'{name:28} cost {costs[0]:.3f} -> {costs[-1]:.3f} in {len(costs)} batches; '
          f'test cost {test_cost:.3f}, test accuracy {test_acc:.3f}')"""),
    ("md", """\
## Save, load, infer

The conv net is saved as an inference model (pruned to `prediction` from `img`: the batch
norm runs with its moving statistics), reloaded in a fresh scope and asked about one test
image, written to a PNG and read back with PIL as the book reads its `infer_3.png`."""),
    ("code", "infer", """\
params_dirname = tempfile.mkdtemp(prefix='recognize_digits_')
with fluid.scope_guard(conv['scope']):
    fluid.io.save_inference_model(params_dirname, ['img'], [conv['prediction']], exe,
                                  main_program=conv['main'])

image, digit = test_samples[0]
image_file = os.path.join(params_dirname, f'infer_{digit}.png')
Image.fromarray(((image.reshape(28, 28) + 1) * 127.5).round().astype(np.uint8)).save(image_file)

def load_image(file):
    im = Image.open(file).convert('L')
    im = im.resize((28, 28), Image.LANCZOS)
    im = np.array(im).reshape(1, 1, 28, 28).astype(np.float32)
    im = im / 255.0 * 2.0 - 1.0
    return im

tensor_img = load_image(image_file)
inference_scope = fluid.core.Scope()
with fluid.scope_guard(inference_scope):
    [inference_program, feed_target_names,
     fetch_targets] = fluid.io.load_inference_model(params_dirname, exe)
    results = exe.run(inference_program, feed={feed_target_names[0]: tensor_img},
                      fetch_list=fetch_targets)
lab = np.argsort(results)
print('inference ops:', dict(Counter(op.type for op in inference_program.global_block().ops)))
print('batch_norm is_test:', [op.attrs['is_test'] for op in inference_program.global_block().ops
                               if op.type == 'batch_norm'])
print('probabilities:', [round(float(p), 3) for p in results[0][0]], ' sum', round(float(results[0].sum()), 3))
print(f'Inference result of infer_{digit}.png is: {lab[0][0][-1]}')"""),
]
