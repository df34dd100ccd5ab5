"""Recognize digits (the Fluid 1.x book, chapter 02): MNIST with three networks.

The book's program with its two import lines changed: softmax regression, a two-layer
tanh perceptron, or the LeNet-style convolutional network (two
``fluid.nets.simple_img_conv_pool`` with batch norm between), softmax cross entropy and
Adam; the test program is cloned before the optimizer; the inference model is saved,
loaded back and run on a test image, written as a PNG and read back with PIL as the book
reads its ``image/infer_3.png``.

It reads ``paddle.dataset.mnist``; when MNIST is not in the dataset cache (and with
``--sample``) it uses a small sample in the same format instead.

    python examples/book/recognize_digits.py --nn_type conv --num_epochs 1
"""
import argparse
import os
import tempfile

import numpy
from PIL import Image

import fluid_nb.paddle as paddle  # the book: import paddle
import fluid_nb as fluid  # the book: import paddle.fluid as fluid


def loss_net(hidden, label):
    prediction = fluid.layers.fc(input=hidden, size=10, act="softmax")
    loss = fluid.layers.cross_entropy(input=prediction, label=label)
    return prediction, fluid.layers.mean(loss), fluid.layers.accuracy(input=prediction,
                                                                      label=label)


def softmax_regression(img, label):
    return loss_net(img, label)


def multilayer_perceptron(img, label):
    hidden = fluid.layers.fc(input=img, size=200, act="tanh")
    hidden = fluid.layers.fc(input=hidden, size=200, act="tanh")
    return loss_net(hidden, label)


def convolutional_neural_network(img, label):
    conv_pool = fluid.nets.simple_img_conv_pool(input=img, filter_size=5, num_filters=20,
                                                pool_size=2, pool_stride=2, act="relu")
    conv_pool = fluid.layers.batch_norm(conv_pool)
    conv_pool = fluid.nets.simple_img_conv_pool(input=conv_pool, filter_size=5,
                                                num_filters=50, pool_size=2, pool_stride=2,
                                                act="relu")
    return loss_net(conv_pool, label)


NETS = {"softmax_regression": softmax_regression, "mlp": multilayer_perceptron,
        "conv": convolutional_neural_network}


def main(nn_type="conv", num_epochs=1, batch_size=64, max_batches=None, save_dir=None,
         sample=False, seed=90):
    """Train, test, save, reload and classify a test image; returns the batch costs, the
    test figures and the image's class probabilities."""
    if sample or not paddle.dataset.samples.is_cached("mnist"):
        paddle.dataset.samples.use_samples("mnist")
    place = fluid.CPUPlace()
    save_dir = save_dir or tempfile.mkdtemp(prefix="recognize_digits_")
    train_reader = paddle.batch(paddle.reader.shuffle(paddle.dataset.mnist.train(),
                                                      buf_size=500), batch_size=batch_size)
    test_reader = paddle.batch(paddle.dataset.mnist.test(), batch_size=batch_size)

    main_program = fluid.default_main_program()
    startup_program = fluid.default_startup_program()
    main_program.random_seed = startup_program.random_seed = seed
    img = fluid.data(name="img", shape=[None, 1, 28, 28], dtype="float32")
    label = fluid.data(name="label", shape=[None, 1], dtype="int64")
    prediction, avg_loss, acc = NETS[nn_type](img, label)
    test_program = main_program.clone(for_test=True)
    fluid.optimizer.Adam(learning_rate=0.001).minimize(avg_loss)

    exe = fluid.Executor(place)
    feeder = fluid.DataFeeder(feed_list=[img, label], place=place)
    exe.run(startup_program)
    costs, tests = [], []
    for pass_id in range(num_epochs):
        for batch_id, data in enumerate(train_reader()):
            if max_batches is not None and batch_id >= max_batches:
                break
            loss, accuracy = exe.run(main_program, feed=feeder.feed(data),
                                     fetch_list=[avg_loss, acc])
            costs.append(float(loss[0]))
            print("Pass %d, Batch %d, Cost %f, Acc %f" % (pass_id, batch_id, loss[0],
                                                          accuracy[0]))
        figures = [exe.run(test_program, feed=feeder.feed(data), fetch_list=[avg_loss, acc])
                   for data in test_reader()]
        tests.append((numpy.mean([f[0][0] for f in figures]),
                      numpy.mean([f[1][0] for f in figures])))
        print("Test with Epoch %d, avg_cost: %s, acc: %s" % (pass_id, *tests[-1]))
        fluid.io.save_inference_model(save_dir, ["img"], [prediction], exe)

    # the book reads image/infer_3.png; here the first test image is written as a PNG
    image, digit = next(paddle.dataset.mnist.test()())
    image_file = os.path.join(save_dir, "infer_%d.png" % digit)
    Image.fromarray(((image.reshape(28, 28) + 1) * 127.5).round().astype(numpy.uint8)).save(
        image_file)

    def load_image(file):
        im = Image.open(file).convert("L")
        im = im.resize((28, 28), Image.LANCZOS)
        im = numpy.array(im).reshape(1, 1, 28, 28).astype(numpy.float32)
        return im / 255.0 * 2.0 - 1.0

    tensor_img = load_image(image_file)
    infer_exe = fluid.Executor(place)
    with fluid.scope_guard(fluid.core.Scope()):
        program, feed_names, fetch_targets = fluid.io.load_inference_model(save_dir, infer_exe)
        results = infer_exe.run(program, feed={feed_names[0]: tensor_img},
                                fetch_list=fetch_targets)
    probabilities = results[0]
    lab = numpy.argsort(results)
    print("Inference result of %s is: %d" % (os.path.basename(image_file), lab[0][0][-1]))
    return {"costs": costs, "tests": tests, "probabilities": probabilities, "digit": digit,
            "save_dir": save_dir}


if __name__ == "__main__":
    parser = argparse.ArgumentParser("recognize_digits")
    parser.add_argument("--nn_type", choices=sorted(NETS), default="conv")
    parser.add_argument("--num_epochs", type=int, default=1)
    parser.add_argument("--max_batches", type=int, default=None,
                        help="batches per pass (default: all)")
    parser.add_argument("--sample", action="store_true",
                        help="train on the small sample even when MNIST is cached")
    args = parser.parse_args()
    main(args.nn_type, args.num_epochs, max_batches=args.max_batches, sample=args.sample)
