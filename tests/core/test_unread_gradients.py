"""A run leaves out the gradient ops whose results nothing reads: a gradient is a function of
the values it is computed from, and a run's temporaries are dropped at their last use, so
one that nothing takes further is never seen. Fetching it, or running with eager deletion
off (``FLAGS_eager_delete_tensor_gb`` < 0), computes it; ops with state run regardless."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.ops import registry

L = fluid.layers


@pytest.fixture
def tanh_grad_runs(monkeypatch):
    """The runs of the ``tanh_grad`` kernel, counted."""
    opdef = registry.get("tanh_grad")
    kernel = opdef.kernel_for("cpu")
    runs = []

    def counted(ctx, *args):
        runs.append(ctx.op.type)
        return kernel(ctx, *args)
    monkeypatch.setitem(opdef.kernels, ("cpu", None), counted)
    return runs


def _tanh_regression():
    """x (its gradient wanted) -> tanh -> fc -> mean, trained by SGD: tanh's gradient op
    makes only x@GRAD, which no op reads."""
    main, startup = fluid.Program(), fluid.Program()
    startup.random_seed = 7  # (the same weights every time)
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = L.data(name="x", shape=[3], dtype="float32")
        x.stop_gradient = False
        loss = L.mean(L.fc(L.tanh(x), size=1, param_attr=fluid.ParamAttr(name="w")))
        fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    return main, loss, exe, scope


def _flag(value):
    before = fluid.get_flags(["FLAGS_eager_delete_tensor_gb"])
    fluid.set_flags({"FLAGS_eager_delete_tensor_gb": value})
    return before


def test_a_gradient_nothing_reads_is_not_computed(tanh_grad_runs):
    main, loss, exe, scope = _tanh_regression()
    assert "tanh_grad" in [op.type for op in main.global_block().ops]
    x = np.random.RandomState(0).rand(4, 3).astype("float32")
    exe.run(main, feed={"x": x}, fetch_list=[loss], scope=scope)
    assert tanh_grad_runs == []
    w = np.asarray(scope.find_var("w").value).copy()
    (grad,) = exe.run(main, feed={"x": x}, fetch_list=["x@GRAD"], scope=scope)
    assert tanh_grad_runs == ["tanh_grad"]  # fetched: the gradient op runs
    # x@GRAD = dL/dtanh(x) * (1 - tanh(x)^2), dL/dtanh(x) = w.T / rows (w before this step)
    np.testing.assert_allclose(grad, w.T / 4 * (1 - np.tanh(x) ** 2), rtol=1e-5)


def test_without_eager_deletion_every_gradient_is_computed(tanh_grad_runs):
    main, loss, exe, scope = _tanh_regression()
    before = _flag(-1.0)
    try:
        exe.run(main, feed={"x": np.ones((4, 3), "float32")}, fetch_list=[loss], scope=scope)
    finally:
        fluid.set_flags(before)
    assert tanh_grad_runs == ["tanh_grad"]


def test_training_is_the_same_with_and_without_the_unread_gradients():
    feed = {"x": np.random.RandomState(0).rand(4, 3).astype("float32")}
    weights = []
    for eager in (0.0, -1.0):
        main, loss, exe, scope = _tanh_regression()
        before = _flag(eager)
        try:
            losses = [exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0]
                      for _ in range(3)]
        finally:
            fluid.set_flags(before)
        weights.append((np.asarray(scope.find_var("w").value).copy(), losses))
    np.testing.assert_array_equal(weights[0][0], weights[1][0])
    np.testing.assert_array_equal(weights[0][1], weights[1][1])


def test_a_gradient_op_with_state_runs_though_nothing_reads_it(capfd):
    """Print's gradient op prints the gradient on its way back: nothing reads what it
    passes on here (x takes no gradient), and it prints all the same."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = L.data(name="x", shape=[3], dtype="float32")
        shown = L.Print(L.scale(x, 2.0), message="the gradient on its way back",
                        print_phase="backward")
        loss = L.mean(L.fc(shown, size=1))
        fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    capfd.readouterr()
    exe.run(main, feed={"x": np.ones((2, 3), "float32")}, fetch_list=[loss], scope=scope)
    assert "the gradient on its way back" in capfd.readouterr().out


def _dynamic_rnn():
    """A tanh DynamicRNN over x (3 sequences) whose loss is the last steps' mean: after its
    while_grad, block 0 sums the two parts of the input array's gradient, which nothing
    reads (x takes no gradient)."""
    main, startup = fluid.Program(), fluid.Program()
    startup.random_seed = 7
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = L.data(name="x", shape=[3], dtype="float32", lod_level=1)
        rnn = L.DynamicRNN()
        with rnn.block():
            x_t = rnn.step_input(x)
            h_prev = rnn.memory(shape=[4], value=0.0)
            h = L.fc(input=[x_t, h_prev], size=4, act="tanh")
            rnn.update_memory(h_prev, h)
            rnn.output(h)
        loss = L.mean(L.sequence_last_step(rnn()))
        fluid.backward.append_backward(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    data = np.random.RandomState(1).rand(9, 3).astype("float32")
    feed = {"x": fluid.create_lod_tensor(data, [[2, 4, 3]], fluid.CPUPlace())}
    params = [p.name for p in main.global_block().all_parameters()]
    return main, exe, scope, feed, [loss] + [p + "@GRAD" for p in params]


def test_a_loop_leaves_out_the_gradient_of_its_input_array(monkeypatch):
    opdef = registry.get("sum")
    kernel = opdef.kernel_for("cpu")
    block_0_sums = []

    def counted(ctx, *args):
        if ctx.op.block.idx == 0:
            block_0_sums.append(ctx.op.output("Out")[0])
        return kernel(ctx, *args)
    monkeypatch.setitem(opdef.kernels, ("cpu", None), counted)
    fetched = []
    for eager in (0.0, -1.0):
        main, exe, scope, feed, fetch = _dynamic_rnn()
        before = _flag(eager)
        try:
            fetched.append(exe.run(main, feed=feed, fetch_list=fetch, scope=scope))
        finally:
            fluid.set_flags(before)
    assert block_0_sums == ["dynamic_rnn_input_array_0@GRAD"]  # with eager deletion off only
    for skipped, computed in zip(*fetched):  # the loss and every parameter's gradient
        np.testing.assert_array_equal(skipped, computed)
