"""softmax_with_cross_entropy compiles in the forms a training program uses besides the plain
one: soft labels (the label smoothing of a Transformer's recipe) and hard labels along a
middle axis (a class per position of a [batch, classes, positions] output); in float64 the
compiled steps keep the interpreter's losses and parameters. (Every form, use_softmax=False
included, is compared op by op in tests/targets.)"""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument
from fluid_nb.rewriters import native

from tests.native.same_steps import assert_same_losses, assert_same_persistables

STEPS, CLASSES, POSITIONS = 4, 5, 3


def _smoothed_labels():
    """Softmax cross entropy against label-smoothed one-hot targets (soft labels)."""
    x = fluid.data(name="x", shape=[-1, 6], dtype="float64")
    label = fluid.data(name="label", shape=[-1, 1], dtype="int64")
    logits = fluid.layers.fc(fluid.layers.fc(x, 8, act="tanh"), CLASSES)
    one_hot = fluid.layers.cast(fluid.layers.one_hot(label, CLASSES), "float64")
    target = fluid.layers.label_smooth(one_hot, epsilon=0.1, dtype="float64")
    return fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(
        logits, target, soft_label=True))


def _per_position():
    """A class for each of 3 positions: logits [batch, classes, positions], hard labels
    [batch, 1, positions] along axis 1."""
    x = fluid.data(name="x", shape=[-1, 6], dtype="float64")
    label = fluid.data(name="label", shape=[-1, 1, POSITIONS], dtype="int64")
    logits = fluid.layers.reshape(fluid.layers.fc(x, CLASSES * POSITIONS),
                                  [-1, CLASSES, POSITIONS])
    return fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits, label, axis=1))


def _feeds(labels_shape):
    rng = np.random.RandomState(3)
    return [{"x": rng.uniform(-1, 1, (4, 6)), "label": rng.randint(0, CLASSES, labels_shape)}
            for _ in range(STEPS)]


@pytest.mark.parametrize("build, labels_shape", [
    (_smoothed_labels, (4, 1)), (_per_position, (4, 1, POSITIONS))],
    ids=["soft labels", "hard labels along axis 1"])
def test_the_loss_compiles_and_trains_as_the_interpreter(build, labels_shape):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        loss = build()
        fluid.optimizer.Adam(learning_rate=0.05).minimize(loss)
    feeds = _feeds(labels_shape)
    exe = fluid.Executor(fluid.CPUPlace())
    interpreted, compiled = fluid.Scope(), fluid.Scope()
    exe.run(startup, scope=interpreted)
    exe.run(startup, scope=compiled)
    program = native.compile(main, feed=feeds[0], fetch_list=[loss], scope=compiled)
    types = set(program.source.op_types.values())
    assert {"softmax_with_cross_entropy", "softmax_with_cross_entropy_grad"} <= types
    assert program.source.fallbacks == []  # (one_hot and label_smooth too)
    assert_same_losses(exe, main, program, loss, feeds, interpreted, compiled, rtol=1e-10)
    assert_same_persistables(main, compiled, interpreted, rtol=1e-9, atol=1e-12)


def test_a_smoothed_label_out_of_range_raises_one_hots_error_before_the_step_runs():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        loss = _smoothed_labels()
        fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    feed = _feeds((4, 1))[0]
    program = native.compile(main, feed=feed, fetch_list=[loss], scope=scope)
    weights = np.array(scope.find_var("fc_0.w_0").get_tensor())
    feed["label"][2, 0] = CLASSES
    for run in (program, main):  # compiled, then the interpreter: one error
        with pytest.raises(InvalidArgument, match=r"^one_hot_v2: X expected values in "
                                                  r"\[0, 5\), but received 5$"):
            exe.run(run, feed=feed, fetch_list=[loss], scope=scope)
    np.testing.assert_array_equal(np.array(scope.find_var("fc_0.w_0").get_tensor()), weights)
