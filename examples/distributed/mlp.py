"""A multi-layer perceptron on handwritten digits (8x8 images, 10 classes) trained by
parameter servers. Its two wide layers' weights ([64, 256] and [256, 64]) are large enough
for the transpiler to cut them into row blocks across the servers.

    fluid-nb launch --pservers 2 --trainers 2 examples/distributed/mlp.py --optimizer adam
    python examples/distributed/mlp.py                 # single-process, whole batches

See ps_job.py for the roles and how each trainer takes its half of every batch.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fluid_nb as fluid  # noqa: E402
from fluid_nb.dataset import digits  # noqa: E402
from ps_job import arguments, run  # noqa: E402

LEARNING_RATE = {"sgd": 0.1, "adam": 0.005}


def network():
    """64 pixels -> 256 -> 64 (ReLU) -> 10 (softmax), cross entropy."""
    image = fluid.layers.data(name="image", shape=[64], dtype="float32")
    label = fluid.layers.data(name="label", shape=[1], dtype="int64")
    hidden = fluid.layers.fc(input=image, size=256, act="relu")
    hidden = fluid.layers.fc(input=hidden, size=64, act="relu")
    prediction = fluid.layers.fc(input=hidden, size=10, act="softmax")
    loss = fluid.layers.mean(fluid.layers.cross_entropy(input=prediction, label=label))
    return ["image", "label"], loss


def data(batch_size, steps):
    """``steps`` batches of the training images in order (wrapping around), and the test
    images: (image, label) each."""
    images, labels, test_images, test_labels = digits.load_data()
    order = np.arange(steps * batch_size) % len(labels)
    batches = [(images[rows], labels[rows].reshape(-1, 1)) for rows in np.split(order, steps)]
    return batches, (test_images, test_labels.reshape(-1, 1))


if __name__ == "__main__":
    args = arguments("an MLP on digits by parameter servers")
    run(args, network, LEARNING_RATE, *data(args.batch_size, args.steps))
