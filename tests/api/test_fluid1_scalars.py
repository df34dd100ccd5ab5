"""Fluid 1.x had no 0-D tensors: a scalar (a mean loss, a full reduction, the product of two
vectors) had shape [1], and scripts index ``loss[0]`` or call ``float(loss)``. Programs
built with the 1.x API get those shapes; programs decoded from Paddle 2.x files keep the 0-D
their variables declare. The rule belongs to the program, not to a global switch."""
import os

import numpy as np
import pytest

import fluid_nb as fluid

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "paddle")
X = np.arange(26, dtype="float32").reshape(2, 13) / 26


def load_program(path):
    with open(path, "rb") as f:
        return fluid.Program.parse_from_string(f.read())


def _fit_a_line():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[13], dtype="float32")
        y = fluid.layers.data(name="y", shape=[1], dtype="float32")
        prediction = fluid.layers.fc(input=x, size=1)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(input=prediction, label=y))
        fluid.optimizer.SGD(learning_rate=0.01).minimize(loss)
    return main, startup, loss


def test_a_mean_loss_is_declared_and_fetched_with_shape_one():
    main, startup, loss = _fit_a_line()
    assert loss.shape == (1,)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    (value,) = exe.run(main, feed={"x": X, "y": np.ones((2, 1), "float32")},
                       fetch_list=[loss], scope=scope)
    assert value.shape == (1,) and isinstance(value, np.ndarray)
    # both ways 1.x scripts read it, under any NumPy
    assert value[0] == float(value) and int(value) == int(value[0])
    assert repr(value).startswith("array(")


@pytest.mark.parametrize("build", [
    lambda x: fluid.layers.reduce_sum(x),
    lambda x: fluid.layers.reduce_max(x, dim=[0, 1]),
    lambda x: fluid.layers.matmul(fluid.layers.reshape(x, [-1]), fluid.layers.reshape(x, [-1])),
], ids=["reduce_sum", "reduce_max_all_dims", "matmul_of_vectors"])
def test_full_reductions_and_vector_products_give_shape_one(build):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[2, 13], dtype="float32")
        out = build(x)
    assert out.shape == (1,)
    (value,) = fluid.Executor(fluid.CPUPlace()).run(main, feed={"x": X}, fetch_list=[out])
    assert value.shape == (1,)


def test_a_program_from_a_paddle_2_file_keeps_its_0d_loss():
    folder = os.path.join(FIXTURES, "training", "fit_a_line_sgd")
    main = load_program(os.path.join(folder, "main.pdmodel"))
    startup = load_program(os.path.join(folder, "startup.pdmodel"))
    assert main.version >= 2000000 and main.global_block().var("mean_0.tmp_0").shape == ()
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    (value,) = exe.run(main, feed={"x": X, "y": np.ones((2, 1), "float32")},
                       fetch_list=["mean_0.tmp_0"], scope=scope)
    assert value.shape == ()


def test_a_saved_fluid1_inference_model_keeps_shape_one_after_reloading(tmp_path):
    main = fluid.Program()
    startup = fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[13], dtype="float32")
        score = fluid.layers.mean(fluid.layers.fc(input=x, size=3))
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    with fluid.scope_guard(scope):
        fluid.io.save_inference_model(str(tmp_path), ["x"], [score], exe, main_program=main)
        program, feeds, fetches = fluid.io.load_inference_model(str(tmp_path), exe)
        (value,) = exe.run(program, feed={"x": X}, fetch_list=fetches)
    assert value.shape == (1,)


def test_a_live_mean_reads_as_shape_one():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.live(program=main, startup_program=startup):
        x = fluid.layers.data(name="x", shape=[13], dtype="float32", value=X)
        loss = fluid.layers.mean(fluid.layers.fc(input=x, size=1))
    value = loss.numpy()
    assert value.shape == (1,) and float(value) == value[0]


def test_float_of_a_fetched_array_with_more_than_one_element_is_refused():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[1], dtype="float32")
        doubled = fluid.layers.scale(x, 2.0)
    (value,) = fluid.Executor(fluid.CPUPlace()).run(
        main, feed={"x": np.array([1.5], "float32")}, fetch_list=[doubled])
    assert float(value) == 3.0
    with pytest.raises(TypeError, match="one-element"):
        float(np.concatenate([value, value]).view(type(value)))
