"""Fit a line (UCI housing linear regression) trained by parameter servers.

    fluid-nb launch --pservers 2 --trainers 2 examples/distributed/fit_a_line.py
    fluid-nb launch --pservers 2 --trainers 2 examples/distributed/fit_a_line.py --async
    python examples/distributed/fit_a_line.py          # single-process, whole batches

See ps_job.py for the roles and how each trainer takes its half of every batch.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fluid_nb as fluid  # noqa: E402
from fluid_nb.dataset import uci_housing  # noqa: E402
from ps_job import arguments, run  # noqa: E402

LEARNING_RATE = {"sgd": 0.01, "adam": 0.1}


def network():
    """The book's network: 13 features -> fc -> price, squared error."""
    x = fluid.layers.data(name="x", shape=[13], dtype="float32")
    y = fluid.layers.data(name="y", shape=[1], dtype="float32")
    y_predict = fluid.layers.fc(input=x, size=1, act=None)
    loss = fluid.layers.mean(fluid.layers.square_error_cost(input=y_predict, label=y))
    return ["x", "y"], loss


def data(batch_size, steps):
    """``steps`` batches of the training rows in order (wrapping around), and the test
    set: (x, y) each."""
    train, test = uci_housing.load_data()
    order = np.arange(steps * batch_size) % len(train)
    batches = [(train[rows, :13], train[rows, 13:]) for rows in np.split(order, steps)]
    return batches, (test[:, :13], test[:, 13:])


if __name__ == "__main__":
    args = arguments("fit_a_line by parameter servers")
    run(args, network, LEARNING_RATE, *data(args.batch_size, args.steps))
