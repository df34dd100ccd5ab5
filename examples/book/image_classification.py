"""Image classification (the Fluid 1.x book, chapter 03): CIFAR-10 with a ResNet or a VGG.

The book's program with its two import lines changed: a ResNet for CIFAR (3 stages of
basic blocks, conv-batch_norm pairs with identity or 1x1 shortcuts, global average pool)
or VGG-16 with batch norm and dropout (``fluid.nets.img_conv_group``), softmax cross
entropy, Adam; a test program cloned before the optimizer; the inference model saved,
loaded back and run on a test image, written as a PNG and read back with PIL as the book
reads its ``image/dog.png``.

It reads ``paddle.dataset.cifar``; when CIFAR-10 is not in the dataset cache (and with
``--sample``) it uses a small sample in the same format instead.

    python examples/book/image_classification.py --net resnet --num_epochs 1
"""
import argparse
import os
import tempfile

import numpy
from PIL import Image

import fluid_nb.paddle as paddle  # the book: import paddle
import fluid_nb as fluid  # the book: import paddle.fluid as fluid


def conv_bn_layer(input, ch_out, filter_size, stride, padding, act="relu", bias_attr=False):
    conv = fluid.layers.conv2d(input=input, filter_size=filter_size, num_filters=ch_out,
                               stride=stride, padding=padding, act=None, bias_attr=bias_attr)
    return fluid.layers.batch_norm(input=conv, act=act)


def shortcut(input, ch_in, ch_out, stride):
    if ch_in != ch_out:
        return conv_bn_layer(input, ch_out, 1, stride, 0, None)
    return input


def basic_block(input, ch_in, ch_out, stride):
    conv = conv_bn_layer(input, ch_out, 3, stride, 1)
    conv = conv_bn_layer(conv, ch_out, 3, 1, 1, act=None, bias_attr=True)
    return fluid.layers.elementwise_add(x=conv, y=shortcut(input, ch_in, ch_out, stride),
                                        act="relu")


def stage(input, ch_in, ch_out, count, stride):
    out = basic_block(input, ch_in, ch_out, stride)
    for _ in range(1, count):
        out = basic_block(out, ch_out, ch_out, 1)
    return out


def resnet_cifar10(image, depth=32):
    assert (depth - 2) % 6 == 0, "a CIFAR ResNet has depth 6n + 2"
    n = (depth - 2) // 6
    conv1 = conv_bn_layer(image, ch_out=16, filter_size=3, stride=1, padding=1)
    res1 = stage(conv1, 16, 16, n, 1)
    res2 = stage(res1, 16, 32, n, 2)
    res3 = stage(res2, 32, 64, n, 2)
    pool = fluid.layers.pool2d(input=res3, pool_size=8, pool_type="avg", pool_stride=1)
    return fluid.layers.fc(input=pool, size=10, act="softmax")


def vgg_bn_drop(image):
    def conv_block(input, num_filter, groups, dropouts):
        return fluid.nets.img_conv_group(
            input=input, pool_size=2, pool_stride=2, conv_num_filter=[num_filter] * groups,
            conv_filter_size=3, conv_act="relu", conv_with_batchnorm=True,
            conv_batchnorm_drop_rate=dropouts, pool_type="max")

    conv = conv_block(image, 64, 2, [0.3, 0])
    conv = conv_block(conv, 128, 2, [0.4, 0])
    conv = conv_block(conv, 256, 3, [0.4, 0.4, 0])
    conv = conv_block(conv, 512, 3, [0.4, 0.4, 0])
    conv = conv_block(conv, 512, 3, [0.4, 0.4, 0])
    drop = fluid.layers.dropout(x=conv, dropout_prob=0.5)
    fc1 = fluid.layers.fc(input=drop, size=512, act=None)
    bn = fluid.layers.batch_norm(input=fc1, act="relu")
    drop2 = fluid.layers.dropout(x=bn, dropout_prob=0.5)
    fc2 = fluid.layers.fc(input=drop2, size=512, act=None)
    return fluid.layers.fc(input=fc2, size=10, act="softmax")


def inference_network(net, depth=32):
    images = fluid.layers.data(name="pixel", shape=[3, 32, 32], dtype="float32")
    return resnet_cifar10(images, depth) if net == "resnet" else vgg_bn_drop(images)


def train_network(predict):
    label = fluid.layers.data(name="label", shape=[1], dtype="int64")
    cost = fluid.layers.cross_entropy(input=predict, label=label)
    avg_cost = fluid.layers.mean(cost)
    accuracy = fluid.layers.accuracy(input=predict, label=label)
    return [avg_cost, accuracy]


def main(net="resnet", num_epochs=1, batch_size=128, max_batches=None, save_dir=None,
         sample=False, seed=90, depth=32):
    """Train, test, save, reload and infer; returns the batch costs, the test figures
    and the inference output. ``depth`` is the ResNet's (6n + 2: 20, 32, 44, ...)."""
    if sample or not paddle.dataset.samples.is_cached("cifar"):
        paddle.dataset.samples.use_samples("cifar")
    place = fluid.CPUPlace()
    save_dir = save_dir or tempfile.mkdtemp(prefix="image_classification_")
    train_reader = paddle.batch(paddle.reader.shuffle(paddle.dataset.cifar.train10(),
                                                      buf_size=128 * 100), batch_size=batch_size)
    test_reader = paddle.batch(paddle.dataset.cifar.test10(), batch_size=batch_size)

    main_program = fluid.default_main_program()
    startup_program = fluid.default_startup_program()
    main_program.random_seed = startup_program.random_seed = seed
    predict = inference_network(net, depth)
    avg_cost, acc = train_network(predict)
    test_program = main_program.clone(for_test=True)
    fluid.optimizer.Adam(learning_rate=0.001).minimize(avg_cost)

    exe = fluid.Executor(place)
    feeder = fluid.DataFeeder(feed_list=["pixel", "label"], place=place, program=main_program)
    exe.run(startup_program)
    costs, tests = [], []
    for pass_id in range(num_epochs):
        for batch_id, data in enumerate(train_reader()):
            if max_batches is not None and batch_id >= max_batches:
                break
            cost_value, acc_value = exe.run(main_program, feed=feeder.feed(data),
                                            fetch_list=[avg_cost, acc])
            costs.append(float(cost_value[0]))
            print("Pass %d, Batch %d, Cost %f, Acc %f" % (pass_id, batch_id, cost_value[0],
                                                          acc_value[0]))
        figures = [exe.run(test_program, feed=feeder.feed(data), fetch_list=[avg_cost, acc])
                   for data in test_reader()]
        test_cost = numpy.mean([f[0][0] for f in figures])
        test_acc = numpy.mean([f[1][0] for f in figures])
        tests.append((test_cost, test_acc))
        print("Test with Pass %d, Loss %.3f, Acc %.3f" % (pass_id, test_cost, test_acc))
        fluid.io.save_inference_model(save_dir, ["pixel"], [predict], exe)

    # the book reads image/dog.png; here the first test image is written as a PNG
    image, label = next(paddle.dataset.cifar.test10()())
    image_file = os.path.join(save_dir, "test_%d.png" % label)
    Image.fromarray((image.reshape(3, 32, 32).transpose(1, 2, 0) * 255).round().astype(
        numpy.uint8)).save(image_file)

    def load_image(infer_file):
        im = Image.open(infer_file)
        im = im.resize((32, 32), Image.LANCZOS)
        im = numpy.array(im).astype(numpy.float32)
        im = im.transpose((2, 0, 1))  # the file is HWC, the network reads CHW
        im = im / 255.0
        return numpy.expand_dims(im, axis=0)

    img = load_image(image_file)
    infer_exe = fluid.Executor(place)
    with fluid.scope_guard(fluid.core.Scope()):
        program, feed_names, fetch_targets = fluid.io.load_inference_model(save_dir, infer_exe)
        results = infer_exe.run(program, feed={feed_names[0]: img}, fetch_list=fetch_targets)
    probabilities = results[0]
    label_list = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse",
                  "ship", "truck"]
    print("infer results: %s (the image is a %s)" % (label_list[numpy.argmax(results[0])],
                                                      label_list[label]))
    return {"costs": costs, "tests": tests, "probabilities": probabilities,
            "save_dir": save_dir}


if __name__ == "__main__":
    parser = argparse.ArgumentParser("image_classification")
    parser.add_argument("--net", choices=["resnet", "vgg"], default="resnet")
    parser.add_argument("--num_epochs", type=int, default=1)
    parser.add_argument("--batch_size", type=int, default=128)
    parser.add_argument("--depth", type=int, default=32, help="the ResNet's depth, 6n + 2")
    parser.add_argument("--max_batches", type=int, default=None,
                        help="batches per pass (default: all)")
    parser.add_argument("--sample", action="store_true",
                        help="train on the small sample even when CIFAR-10 is cached")
    args = parser.parse_args()
    main(args.net, args.num_epochs, args.batch_size, args.max_batches, sample=args.sample,
         depth=args.depth)
