"""Recognize digits (PaddlePaddle book, chapter 2) on real 8x8 handwritten digits.

The Fluid 1.x program as the book wrote it, with ``import fluid_nb as fluid``, on
``fluid.dataset.digits`` (1,437 training and 360 test images, pixels in [-1, 1]) in
place of MNIST. Two networks, chosen with ``--net``:

* ``mlp``:  fc 128 relu -> fc 64 relu -> fc 10 softmax
* ``conv``: the image as [1, 8, 8] -> simple_img_conv_pool (20 filters) -> batch_norm
            -> simple_img_conv_pool (50 filters) -> fc 10 softmax

Both minimise cross entropy with Adam, report the test loss and accuracy after every epoch
(on a test program cloned before the optimizer), save an inference model, load it back
and classify a few test images.

    python examples/recognize_digits.py --net conv --epochs 10
"""
import argparse
import os
import random
import sys
import tempfile

import numpy as np

try:
    import fluid_nb as fluid
except ImportError:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import fluid_nb as fluid

BATCH_SIZE = 64
LEARNING_RATE = 0.001
NETS = ("mlp", "conv")


def multilayer_perceptron(img):
    hidden = fluid.layers.fc(input=img, size=128, act="relu")
    hidden = fluid.layers.fc(input=hidden, size=64, act="relu")
    prediction = fluid.layers.fc(input=hidden, size=10, act="softmax")
    return prediction


def convolutional_neural_network(img):
    # 8x8 -> conv 3x3 (pad 1) -> 8x8 -> pool 2 -> 4x4
    conv_pool_1 = fluid.nets.simple_img_conv_pool(
        input=img, filter_size=3, conv_padding=1, num_filters=20,
        pool_size=2, pool_stride=2, act="relu")
    conv_pool_1 = fluid.layers.batch_norm(conv_pool_1)
    # 4x4 -> conv 3x3 (pad 1) -> 4x4 -> pool 2 -> 2x2
    conv_pool_2 = fluid.nets.simple_img_conv_pool(
        input=conv_pool_1, filter_size=3, conv_padding=1, num_filters=50,
        pool_size=2, pool_stride=2, act="relu")
    prediction = fluid.layers.fc(input=conv_pool_2, size=10, act="softmax")
    return prediction


def train_program(net):
    """Data layers, prediction, average loss and accuracy (in the current program_guard)."""
    if net == "mlp":
        img = fluid.layers.data(name="img", shape=[64], dtype="float32")
    else:
        img = fluid.layers.data(name="img", shape=[1, 8, 8], dtype="float32")
    label = fluid.layers.data(name="label", shape=[1], dtype="int64")
    if net == "mlp":
        prediction = multilayer_perceptron(img)
    else:
        prediction = convolutional_neural_network(img)
    cost = fluid.layers.cross_entropy(input=prediction, label=label)
    avg_loss = fluid.layers.mean(cost)
    acc = fluid.layers.accuracy(input=prediction, label=label)
    return img, label, prediction, avg_loss, acc


def reader_for(net, reader):
    """The dataset's flat float32[64] images, reshaped to [1, 8, 8] for the conv net."""
    if net == "mlp":
        return reader

    def images():
        for image, label in reader():
            yield image.reshape(1, 8, 8), label
    return images


def train_test(exe, program, reader, feeder, fetch_list):
    """Average loss and accuracy over every test batch (weighted by batch size)."""
    totals, count = np.zeros(len(fetch_list)), 0
    for data in reader():
        values = exe.run(program, feed=feeder.feed(data), fetch_list=fetch_list)
        totals += [float(np.asarray(v).reshape(-1)[0]) * len(data) for v in values]
        count += len(data)
    return totals / count


def epoch_range(epochs, progress):
    """``range(epochs)``, with a progress bar over epochs when ``progress`` and tqdm allow."""
    if progress:
        try:
            from tqdm.auto import trange
            return trange(epochs, desc="training", unit="epoch")
        except ImportError:
            pass
    return range(epochs)


def logger(verbose, epochs_iter):
    """``print`` (through the progress bar, when there is one), or nothing."""
    if not verbose:
        return lambda *args, **kwargs: None
    if hasattr(epochs_iter, "write"):
        return epochs_iter.write
    return print


def main(net="conv", epochs=None, save_dir=None, seed=90, progress=True, num_predictions=10,
         verbose=True):
    """Train ``net`` ('mlp' or 'conv'), evaluate per epoch, save and reload; returns a dict.

    Keys: ``test_accuracy`` / ``test_loss`` (after the last epoch), their ``..._per_epoch``
    lists, ``train_losses`` (one per step), ``predictions`` (labels from the reloaded
    inference model for the first ``num_predictions`` test images), ``probabilities``
    (its softmax outputs), ``in_memory_probabilities`` (the same images through the trained
    test program), ``labels`` (the true ones) and ``save_dir``.
    """
    if net not in NETS:
        raise ValueError(f"net expected one of {NETS}, but received {net!r}")
    if epochs is None:
        epochs = 20 if net == "mlp" else 15
    random.seed(seed)  # fluid.io.shuffle draws from Python's random module
    np.random.seed(seed)

    main_program = fluid.Program()
    startup_program = fluid.Program()
    main_program.random_seed = seed
    startup_program.random_seed = seed

    with fluid.program_guard(main_program, startup_program), fluid.unique_name.guard():
        img, label, prediction, avg_loss, acc = train_program(net)
        # The test program: cloned before the optimizer; batch_norm uses its running stats.
        test_program = main_program.clone(for_test=True)
        optimizer = fluid.optimizer.Adam(learning_rate=LEARNING_RATE)
        optimizer.minimize(avg_loss)

    train_reader = fluid.io.batch(
        fluid.io.shuffle(reader_for(net, fluid.dataset.digits.train()), buf_size=500),
        batch_size=BATCH_SIZE)
    test_reader = fluid.io.batch(reader_for(net, fluid.dataset.digits.test()),
                                 batch_size=BATCH_SIZE)

    place = fluid.CPUPlace()
    exe = fluid.Executor(place)
    feeder = fluid.DataFeeder(feed_list=[img, label], place=place)
    scope = fluid.Scope()

    test_loss_per_epoch, test_accuracy_per_epoch = [], []
    with fluid.scope_guard(scope):
        exe.run(startup_program)

        history = fluid.LossHistory()
        epoch_iter = epoch_range(epochs, progress)
        log = logger(verbose, epoch_iter)
        for epoch in epoch_iter:
            fluid.train_loop(exe, main_program, train_reader, feeder, avg_loss, epochs=1,
                             progress=False, history=history)
            test_loss, test_acc = train_test(exe, test_program, test_reader, feeder,
                                             [avg_loss, acc])
            test_loss_per_epoch.append(float(test_loss))
            test_accuracy_per_epoch.append(float(test_acc))
            log(f"Epoch {epoch:2d}: train loss {history.epoch_means()[-1]:.4f}   "
                f"test loss {test_loss:.4f}   test accuracy {test_acc:.4f}")
            if not np.isfinite(test_loss):
                raise RuntimeError("training diverged (non-finite loss)")

        save_dir = save_dir or tempfile.mkdtemp(prefix=f"recognize_digits_{net}.inference.model.")
        fluid.io.save_inference_model(save_dir, ["img"], [prediction], exe,
                                      main_program=main_program)

        _, _, test_images, test_labels = fluid.dataset.digits.load_data()
        images = test_images[:num_predictions]
        if net == "conv":
            images = images.reshape(-1, 1, 8, 8)
        labels = test_labels[:num_predictions]
        in_memory, = exe.run(test_program,
                             feed={"img": images, "label": labels.reshape(-1, 1)},
                             fetch_list=[prediction])

    # Reload in a fresh scope, as an inference service would, and classify.
    infer_scope = fluid.Scope()
    infer_exe = fluid.Executor(place)
    with fluid.scope_guard(infer_scope):
        [inference_program, feed_target_names, fetch_targets] = (
            fluid.io.load_inference_model(save_dir, infer_exe))
        probabilities, = infer_exe.run(inference_program,
                                       feed={feed_target_names[0]: images},
                                       fetch_list=fetch_targets)
    probabilities = np.asarray(probabilities)
    predicted = probabilities.argmax(axis=1)

    log("Reloaded inference model on test images:")
    for i, (p, truth) in enumerate(zip(predicted, labels)):
        log(f"  image {i:2d}: predicted {p}  (p={probabilities[i, p]:.3f})   label {truth}")

    return {
        "net": net,
        "train_losses": list(history.losses),
        "test_loss_per_epoch": test_loss_per_epoch,
        "test_accuracy_per_epoch": test_accuracy_per_epoch,
        "test_loss": test_loss_per_epoch[-1] if epochs else None,
        "test_accuracy": test_accuracy_per_epoch[-1] if epochs else None,
        "predictions": predicted,
        "probabilities": probabilities,
        "in_memory_probabilities": np.asarray(in_memory),
        "labels": labels,
        "save_dir": save_dir,
    }


def _parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--net", choices=NETS, default="conv", help="which network")
    parser.add_argument("--epochs", type=int, default=None,
                        help="passes over the training set (default: 20 mlp, 15 conv)")
    parser.add_argument("--save-dir", default=None,
                        help="where the inference model goes "
                             "(default: recognize_digits_<net>.inference.model)")
    parser.add_argument("--seed", type=int, default=90, help="random seed")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser.parse_args(argv)


if __name__ == "__main__":
    args = _parse_args()
    out = main(net=args.net, epochs=args.epochs,
               save_dir=args.save_dir or f"recognize_digits_{args.net}.inference.model",
               seed=args.seed, progress=not args.no_progress)
    print(f"Final test accuracy ({args.net}): {out['test_accuracy']:.4f}  "
          f"(model saved to {out['save_dir']})")
