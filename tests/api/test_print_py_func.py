"""Print shows tensors as the program runs (forward and backward), py_func runs Python
functions as ops (with their gradients), load reads a saved tensor, and py_reader feeds a
program through read_file."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument

X = np.array([[0.5, -1.0, 2.0]], "float32")


def _run(build, feed, fetch, backward=False):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        outs = build()
        if backward:
            fluid.append_backward(fluid.layers.mean(outs[0]))
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    return exe.run(main, feed=feed, fetch_list=[o if isinstance(o, str) else o
                                                for o in outs + fetch], scope=scope)


def test_print_shows_the_tensor_and_passes_it_on(capsys):
    def build():
        x = fluid.data(name="x", shape=[1, 3], dtype="float32")
        x.stop_gradient = False
        return [fluid.layers.Print(x, message="the input:", summarize=2)]
    (out, grad) = _run(build, {"x": X}, ["x@GRAD"], backward=True)
    np.testing.assert_array_equal(out, X)
    text = capsys.readouterr().out
    assert "the input:" in text and "Tensor[x]" in text and "shape: [1, 3]" in text
    assert "data: 0.5 -1.0\n" in text  # summarize: the first two values
    assert "Tensor[print_0.tmp_0@GRAD]" in text  # "both": the gradient is printed too
    np.testing.assert_allclose(grad, np.full((1, 3), 1 / 3), rtol=1e-6)


def test_print_first_n_and_forward_phase(capsys):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[1, 3], dtype="float32")
        fluid.layers.Print(x, first_n=2, print_phase="forward")
    exe = fluid.Executor(fluid.CPUPlace())
    for _ in range(4):
        exe.run(main, feed={"x": X})
    assert capsys.readouterr().out.count("Tensor[x]") == 2
    with pytest.raises(InvalidArgument, match="print_phase"):
        with fluid.program_guard(main, startup):
            fluid.layers.Print(x, print_phase="sideways")


def test_py_func_forward_and_backward_as_numpy_functions():
    def build():
        x = fluid.data(name="x", shape=[1, 3], dtype="float32")
        x.stop_gradient = False
        block = fluid.default_main_program().current_block()
        y = block.create_var(name="y", shape=[1, 3], dtype="float32")
        fluid.layers.py_func(func=np.tanh, x=x, out=y,
                             backward_func=lambda x, y, dy: dy * (1 - np.asarray(y) ** 2))
        return [y]
    y, grad = _run(build, {"x": X}, ["x@GRAD"], backward=True)
    np.testing.assert_allclose(y, np.tanh(X), rtol=1e-6)
    np.testing.assert_allclose(grad, (1 - np.tanh(X) ** 2) / 3, rtol=1e-5)


def test_py_func_skips_inputs_of_the_backward_and_checks_its_results():
    seen = []

    def backward(*args):
        seen.append(len(args))
        return np.asarray(args[-1]) * 2  # Fluid hands the functions LoDTensors

    def build():
        x = fluid.data(name="x", shape=[1, 3], dtype="float32")
        x.stop_gradient = False
        y = fluid.default_main_program().current_block().create_var(
            name="y", shape=[1, 3], dtype="float32")
        fluid.layers.py_func(func=lambda a: np.asarray(a) * 2, x=x, out=y, backward_func=backward,
                             skip_vars_in_backward_input=[x, y])
        return [y]
    _, grad = _run(build, {"x": X}, ["x@GRAD"], backward=True)
    assert seen == [1]  # only dy: x and y were skipped
    np.testing.assert_allclose(grad, np.full((1, 3), 2 / 3), rtol=1e-6)

    def wrong():
        x = fluid.data(name="x", shape=[1, 3], dtype="float32")
        y = fluid.default_main_program().current_block().create_var(name="y", dtype="float32")
        fluid.layers.py_func(func=lambda a: (a, a), x=x, out=y)
        return [y]
    with pytest.raises(InvalidArgument, match="1 \\(one per out variable\\)"):
        _run(wrong, {"x": X}, [])


def test_load_reads_a_tensor_saved_by_save_vars(tmp_path):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        w = fluid.layers.create_parameter(shape=[2, 3], dtype="float32", name="w")
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    with fluid.scope_guard(scope):
        fluid.io.save_vars(exe, str(tmp_path), main_program=main, vars=[w])
    reader_main = fluid.Program()
    with fluid.program_guard(reader_main, fluid.Program()):
        out = reader_main.global_block().create_var(name="loaded", dtype="float32")
        fluid.layers.load(out, str(tmp_path / "w"))
    (value,) = exe.run(reader_main, fetch_list=["loaded"], scope=fluid.Scope())
    np.testing.assert_array_equal(value, np.array(scope.find_var("w").value))


def test_py_reader_feeds_read_file_variables_until_eof():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        reader = fluid.layers.py_reader(capacity=4, shapes=[[-1, 3], [-1, 1]],
                                        dtypes=["float32", "float32"])
        x, y = fluid.layers.read_file(fluid.layers.double_buffer(reader))
        loss = fluid.layers.mean(fluid.layers.square_error_cost(
            input=fluid.layers.fc(input=x, size=1), label=y))
        fluid.optimizer.SGD(0.5).minimize(loss)
    xs = np.random.RandomState(0).rand(20, 3).astype("float32")
    ys = xs.sum(axis=1, keepdims=True)
    reader.decorate_tensor_provider(lambda: ((xs[i:i + 5], ys[i:i + 5])
                                             for i in range(0, 20, 5)))
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    losses = []
    for _ in range(10):
        reader.start()
        try:
            while True:
                losses.append(float(exe.run(main, fetch_list=[loss], scope=scope)[0]))
        except fluid.core.EOFException:
            reader.reset()
    assert len(losses) == 40 and losses[-1] < losses[0] / 10
