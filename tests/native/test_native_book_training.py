"""The book's image models, built by examples/book's own functions and trained with the
optimizers Fluid 1.x scripts use, compile and take the interpreter's steps: recognize_digits
(softmax regression, MLP, LeNet with batch norm) and image_classification (ResNet-20, and
VGG, whose training dropouts draw their masks in the interpreter). Each runs three steps
compiled and interpreted from one start and fetches the loss and the accuracy."""
import os
import sys

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.rewriters import native

from tests.native.same_steps import assert_same_persistables

BOOK = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "book")


@pytest.fixture(scope="module")
def book():
    sys.path.insert(0, BOOK)
    try:
        import image_classification
        import recognize_digits
        yield recognize_digits, image_classification
    finally:
        sys.path.remove(BOOK)


OPTIMIZERS = {
    "SGD": lambda: fluid.optimizer.SGD(0.01),
    "Adam": lambda: fluid.optimizer.Adam(0.001),
    "Momentum": lambda: fluid.optimizer.Momentum(0.01, 0.9),
    "Adagrad": lambda: fluid.optimizer.Adagrad(0.01),
    "RMSProp": lambda: fluid.optimizer.RMSProp(0.01),
    "centered RMSProp": lambda: fluid.optimizer.RMSProp(0.01, momentum=0.5, centered=True),
    "SGD with L2 decay": lambda: fluid.optimizer.SGD(
        0.01, regularization=fluid.regularizer.L2Decay(1e-4)),
}


def _digits(book, net):
    img = fluid.data(name="img", shape=[None, 1, 28, 28], dtype="float32")
    label = fluid.data(name="label", shape=[None, 1], dtype="int64")
    _, loss, accuracy = book[0].NETS[net](img, label)
    rng = np.random.RandomState(0)
    feeds = [{"img": rng.rand(16, 1, 28, 28).astype("float32"),
              "label": rng.randint(0, 10, (16, 1)).astype("int64")} for _ in range(3)]
    return loss, accuracy, feeds


def _cifar(book, net):
    loss, accuracy = book[1].train_network(book[1].inference_network(net, depth=20))
    rng = np.random.RandomState(0)
    feeds = [{"pixel": rng.rand(8, 3, 32, 32).astype("float32"),
              "label": rng.randint(0, 10, (8, 1)).astype("int64")} for _ in range(3)]
    return loss, accuracy, feeds


@pytest.mark.parametrize("model, net, optimizer, interpreted, same_parameters", [
    (_digits, "softmax_regression", "SGD", set(), True),
    (_digits, "mlp", "Adam", set(), True),
    (_digits, "mlp", "Adagrad", set(), True),
    (_digits, "mlp", "RMSProp", set(), True),
    (_digits, "mlp", "centered RMSProp", set(), True),
    (_digits, "mlp", "SGD with L2 decay", set(), True),
    # (LeNet's first bias feeds a batch norm, so its gradient is rounding noise, which Adam
    # would scale up to whole steps: SGD here)
    (_digits, "conv", "SGD", set(), True),
    # (in float32 a ReLU whose input is a rounding away from 0 lets a gradient through in
    # one and not the other, and 20 layers spread it: the losses and accuracies agree, the
    # parameters' small gradients do not; test_native_training_models holds ResNet steps to
    # 1e-9 in float64)
    (_cifar, "resnet", "Momentum", set(), False),
    (_cifar, "vgg", "Momentum", {"dropout"}, True),
])
def test_a_book_model_compiles_and_takes_the_interpreters_steps(book, model, net, optimizer,
                                                                 interpreted, same_parameters):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        loss, accuracy, feeds = model(book, net)
        OPTIMIZERS[optimizer]().minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    interpreter_scope, compiled_scope = fluid.Scope(), fluid.Scope()
    exe.run(startup, scope=interpreter_scope)
    exe.run(startup, scope=compiled_scope)
    program = native.compile(main, feeds[0], [loss, accuracy], scope=compiled_scope)
    assert {op_type for _, op_type, _ in program.source.fallbacks} == interpreted
    for feed in feeds:
        want = exe.run(main, feed=feed, fetch_list=[loss, accuracy], scope=interpreter_scope)
        got = exe.run(program, feed=feed, fetch_list=[loss, accuracy], scope=compiled_scope)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-4)
        np.testing.assert_array_equal(got[1], want[1])
    if not same_parameters:
        return
    # (float32: to rounding, which three steps grow)
    assert_same_persistables(main, compiled_scope, interpreter_scope, rtol=1e-3, atol=1e-4)
