"""Cells of notebooks/13_image_classification.ipynb (the book's chapter 03)."""

CELLS = [
    ("md", """\
# Image classification: a ResNet on CIFAR-10

The PaddlePaddle book, chapter 03: label 32x32 colour images with one of ten classes
(airplane, automobile, bird, ...). The book's networks are a **ResNet** for CIFAR (stages of
basic blocks: two 3x3 convolutions with batch normalisation, added to a shortcut of the
block's input) and **VGG-16** with batch norm and dropout. The ResNet here is the book's
`resnet_cifar10` at depth 8 (one basic block per stage) instead of 32, trained for a few
steps on a few hundred images; the code is the book's, with `import fluid_nb as fluid`.
`examples/book/image_classification.py` is the chapter as a script."""),
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
## The data: `cifar`

`paddle.dataset.cifar.train10()` reads the pickled batches of `cifar-10-python.tar.gz`; a
sample is `(image float32[3072], label)`: the red, green and blue 32x32 planes one after
the other, scaled to $[0, 1]$. Without the real tarball in the cache,
`samples.use_samples('cifar')` writes 256 training and 64 test images in the same format,
whose colour levels follow the class."""),
    ("code", "data", """\
REAL_DATA = samples.is_cached('cifar')
print('CIFAR-10 in the dataset cache:', REAL_DATA)
if not REAL_DATA:
    samples.use_samples('cifar')
BATCH_SIZE = 32
train_samples = list(paddle.reader.firstn(paddle.dataset.cifar.train10(), 256)())
test_samples = list(paddle.reader.firstn(paddle.dataset.cifar.test10(), 64)())
train_reader = paddle.batch(paddle.reader.shuffle(lambda: iter(train_samples), buf_size=500),
                            batch_size=BATCH_SIZE)
test_reader = paddle.batch(lambda: iter(test_samples), batch_size=BATCH_SIZE)
image, label = train_samples[0]
print('image:', image.shape, image.dtype, f'in [{image.min():.2f}, {image.max():.2f}]', ' label:', label)
print('training and test images:', len(train_samples), len(test_samples))
print('mean of each colour plane:', np.round(image.reshape(3, -1).mean(axis=1), 3).tolist())"""),
    ("md", """\
## The ResNet

`conv_bn_layer` is a `conv2d` without bias followed by `batch_norm` (which carries the
activation). A basic block adds two of them to its shortcut: the input itself, or a 1x1
convolution with stride 2 when the block halves the image and changes the number of
channels. Three stages (16, 32, 64 channels at 32x32, 16x16, 8x8), an 8x8 average pool
and a softmax `fc`.

One change from the book: it trains with `Adam(learning_rate=0.001)`, whose update op
keeps four accumulators per parameter; this notebook uses `Momentum` (one velocity per
parameter, the optimizer of the book's earlier edition of this chapter): the training
program's graph, stored below with the notebook, is a fifth smaller, where with Adam it
alone would pass 1 MB."""),
    ("code", "resnet", """\
def conv_bn_layer(input, ch_out, filter_size, stride, padding, act='relu', bias_attr=False):
    tmp = fluid.layers.conv2d(input=input, filter_size=filter_size, num_filters=ch_out,
                              stride=stride, padding=padding, act=None, bias_attr=bias_attr)
    return fluid.layers.batch_norm(input=tmp, act=act)


def shortcut(input, ch_in, ch_out, stride):
    if ch_in != ch_out:
        return conv_bn_layer(input, ch_out, 1, stride, 0, None)
    else:
        return input


def basicblock(input, ch_in, ch_out, stride):
    tmp = conv_bn_layer(input, ch_out, 3, stride, 1)
    tmp = conv_bn_layer(tmp, ch_out, 3, 1, 1, act=None, bias_attr=True)
    short = shortcut(input, ch_in, ch_out, stride)
    return fluid.layers.elementwise_add(x=tmp, y=short, act='relu')


def layer_warp(block_func, input, ch_in, ch_out, count, stride):
    tmp = block_func(input, ch_in, ch_out, stride)
    for i in range(1, count):
        tmp = block_func(tmp, ch_out, ch_out, 1)
    return tmp


def resnet_cifar10(ipt, depth=32):
    # depth should be 6n + 2: 8, 20, 32, 44, 56, 110, 1202
    assert (depth - 2) % 6 == 0
    n = (depth - 2) // 6
    conv1 = conv_bn_layer(ipt, ch_out=16, filter_size=3, stride=1, padding=1)
    res1 = layer_warp(basicblock, conv1, 16, 16, n, 1)
    res2 = layer_warp(basicblock, res1, 16, 32, n, 2)
    res3 = layer_warp(basicblock, res2, 32, 64, n, 2)
    pool = fluid.layers.pool2d(input=res3, pool_size=8, pool_type='avg', pool_stride=1)
    predict = fluid.layers.fc(input=pool, size=10, act='softmax')
    STAGES.extend([conv1, res1, res2, res3, pool, predict])
    return predict


DEPTH = 8
STAGES = []                          # the tensors between the stages, to look at below

def inference_program():
    data_shape = [None, 3, 32, 32]
    images = fluid.data(name='pixel', shape=data_shape, dtype='float32')
    predict = resnet_cifar10(images, DEPTH)
    return predict


def train_program():
    predict = inference_program()
    label = fluid.data(name='label', shape=[None, 1], dtype='int64')
    cost = fluid.layers.cross_entropy(input=predict, label=label)
    avg_cost = fluid.layers.mean(cost)
    accuracy = fluid.layers.accuracy(input=predict, label=label)
    return [avg_cost, accuracy, predict]


def optimizer_program():
    # the book: fluid.optimizer.Adam(learning_rate=0.001); see the note above
    return fluid.optimizer.Momentum(learning_rate=0.01, momentum=0.9)


main_program, startup_program = fluid.default_main_program(), fluid.default_startup_program()
main_program.random_seed = startup_program.random_seed = 90
avg_cost, acc, predict = train_program()
test_program = main_program.clone(for_test=True)
optimizer_program().minimize(avg_cost)

block = main_program.global_block()
forward = Counter(op.type for op in block.ops if op.attrs.get('op_role', 0) == 0)
print('forward ops:', dict(forward))
trained = [p for p in block.all_parameters() if p.trainable]
statistics = [p for p in block.all_parameters() if not p.trainable]
print('trained parameters:', len(trained), ' weights:', f"{sum(int(np.prod(p.shape)) for p in trained):,}")
print('batch-norm moving statistics (parameters, not trained):', len(statistics),
      [p.name for p in statistics[:2]], '...')
print('optimizer ops:', dict(Counter(op.type for op in block.ops if op.attrs.get('op_role') == 2)))"""),
    ("md", """\
## Shapes through the stages

Running the test program (forward only, batch norm with its moving statistics) on one
batch: each stage after the first halves the image and doubles the channels; the average
pool leaves one value per channel."""),
    ("code", "shapes", """\
exe.run(startup_program)
feeder = fluid.DataFeeder(feed_list=['pixel', 'label'], place=place, program=main_program)
values = exe.run(test_program, feed=feeder.feed(test_samples[:BATCH_SIZE]),
                 fetch_list=[v.name for v in STAGES])
for stage, var, value in zip(['conv1', 'res1', 'res2', 'res3', 'pool', 'predict'], STAGES, values):
    print(f'{stage:8} compile time {list(var.shape)!s:18} run {value.shape}')
print('probabilities sum to one:', bool(np.allclose(values[-1].sum(axis=1), 1, atol=1e-5)))"""),
    ("md", """\
The training program: convolutions, batch norms and the residual additions, then their
gradients (dashed) and a `momentum` update for each trained parameter (bold), its velocity
drawn as a row of the op."""),
    ("code", "graph", "from fluid_nb import viz\n\n# opened at a residual block: two conv + batch_norm layers and the shortcut added back\nviz.show(main_program, reveal='basicblock')"),
    ("md", """\
## Training a few steps

Two passes over the 256 training images in batches of 32 (16 momentum steps), printing the
cost and the batch's accuracy; then the test program on the test images. Batch norm keeps
moving averages of each channel's mean and variance while training, and the test program
normalises with them (`is_test=True`)."""),
    ("code", "train", """\
moving_mean = 'batch_norm_0.w_1'
before = np.array(fluid.global_scope().find_var(moving_mean).get_tensor()).copy()
costs = []
for pass_id in range(2):
    for batch_id, data in enumerate(train_reader()):
        cost_value, acc_value = exe.run(main_program, feed=feeder.feed(data),
                                        fetch_list=[avg_cost, acc])
        costs.append(float(cost_value[0]))
        if batch_id % 4 == 0:
            print(f'Pass {pass_id}, Batch {batch_id}, Cost {cost_value[0]:.3f}, Acc {acc_value[0]:.3f}')
after = np.array(fluid.global_scope().find_var(moving_mean).get_tensor())
print(f'cost over {len(costs)} steps: first four {np.mean(costs[:4]):.3f}, last four {np.mean(costs[-4:]):.3f}')
print(f'{moving_mean} (moving mean of conv1\\'s channels) moved by {np.abs(after - before).max():.3f}')

figures = [(exe.run(test_program, feed=feeder.feed(data), fetch_list=[avg_cost, acc]), len(data))
           for data in test_reader()]
count = sum(n for _, n in figures)
test_cost = sum(float(c[0]) * n for (c, _), n in figures) / count
test_acc = sum(float(a[0]) * n for (_, a), n in figures) / count
print(f'Test: cost {test_cost:.3f}, accuracy {test_acc:.3f} (chance 0.1)')
print('test program batch_norm is_test:',
      sorted({op.attrs['is_test'] for op in test_program.global_block().ops if op.type == 'batch_norm'}))"""),
    ("md", """\
## VGG-16, the book's other network

`fluid.nets.img_conv_group` stacks 3x3 convolutions (each with batch norm and dropout)
and ends with a max pool; five groups take the image from 32x32 to 1x1. Built here to
count its layers, not trained."""),
    ("code", "vgg", """\
def vgg_bn_drop(input):
    def conv_block(ipt, num_filter, groups, dropouts):
        return fluid.nets.img_conv_group(
            input=ipt, pool_size=2, pool_stride=2, conv_num_filter=[num_filter] * groups,
            conv_filter_size=3, conv_act='relu', conv_with_batchnorm=True,
            conv_batchnorm_drop_rate=dropouts, pool_type='max')

    conv1 = conv_block(input, 64, 2, [0.3, 0])
    conv2 = conv_block(conv1, 128, 2, [0.4, 0])
    conv3 = conv_block(conv2, 256, 3, [0.4, 0.4, 0])
    conv4 = conv_block(conv3, 512, 3, [0.4, 0.4, 0])
    conv5 = conv_block(conv4, 512, 3, [0.4, 0.4, 0])

    drop = fluid.layers.dropout(x=conv5, dropout_prob=0.5)
    fc1 = fluid.layers.fc(input=drop, size=512, act=None)
    bn = fluid.layers.batch_norm(input=fc1, act='relu')
    drop2 = fluid.layers.dropout(x=bn, dropout_prob=0.5)
    fc2 = fluid.layers.fc(input=drop2, size=512, act=None)
    predict = fluid.layers.fc(input=fc2, size=10, act='softmax')
    return predict

vgg_program = fluid.Program()
with fluid.program_guard(vgg_program, fluid.Program()), fluid.unique_name.guard():
    vgg_predict = vgg_bn_drop(fluid.data(name='pixel', shape=[None, 3, 32, 32], dtype='float32'))
vgg_ops = Counter(op.type for op in vgg_program.global_block().ops)
print('VGG-16:', vgg_ops['conv2d'], 'conv2d +', vgg_ops['mul'], 'fc =',
      vgg_ops['conv2d'] + vgg_ops['mul'], 'weight layers;', vgg_ops['pool2d'], 'max pools,',
      vgg_ops['dropout'], 'dropouts; output', list(vgg_predict.shape))
print(f"weights: {sum(int(np.prod(p.shape)) for p in vgg_program.global_block().all_parameters()):,}")"""),
    ("md", """\
## Save, load, infer

The trained ResNet is saved as an inference model, loaded into a fresh scope, and run on a
test image written to a PNG and read back with PIL, as the book reads its `dog.png`
(the file is height x width x colour; the network reads colour x height x width)."""),
    ("code", "infer", """\
params_dirname = tempfile.mkdtemp(prefix='image_classification_')
fluid.io.save_inference_model(params_dirname, ['pixel'], [predict], exe)

image, label = test_samples[0]
image_file = os.path.join(params_dirname, f'test_{label}.png')
Image.fromarray((image.reshape(3, 32, 32).transpose(1, 2, 0) * 255).round().astype(np.uint8)).save(image_file)

def load_image(infer_file):
    im = Image.open(infer_file)
    im = im.resize((32, 32), Image.LANCZOS)
    im = np.array(im).astype(np.float32)
    im = im.transpose((2, 0, 1))  # CHW
    im = im / 255.0
    im = np.expand_dims(im, axis=0)
    return im

img = load_image(image_file)
inference_scope = fluid.core.Scope()
with fluid.scope_guard(inference_scope):
    [inference_program, feed_target_names,
     fetch_targets] = fluid.io.load_inference_model(params_dirname, exe)
    results = exe.run(inference_program, feed={feed_target_names[0]: img},
                      fetch_list=fetch_targets)
label_list = ['airplane', 'automobile', 'bird', 'cat', 'deer', 'dog', 'frog', 'horse', 'ship', 'truck']
print('input:', img.shape, ' output:', results[0].shape, ' sum', round(float(results[0].sum()), 3))
print(f'infer results: {label_list[np.argmax(results[0])]} (the image is a {label_list[label]})')"""),
]
