"""The Fluid 1.6+ RNN API: GRUCell and LSTMCell steps against their formulas in NumPy, rnn()
over a padded batch (sequence lengths, reversed) against a NumPy loop; Variable indexing,
which rnn() and scripts use."""
import numpy as np
import pytest

import fluid_nb as fluid

RNG = np.random.RandomState(4)


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def _params(scope, names):
    return [np.array(scope.find_var(n).value, dtype="float64") for n in names]


def _gru_step(x, h, w_gate, w_cand, b_gate, b_cand):
    gates = _sigmoid(np.concatenate([x, h], 1) @ w_gate + b_gate)
    r, u = np.split(gates, 2, axis=1)
    c = np.tanh(np.concatenate([x, r * h], 1) @ w_cand + b_cand)
    return u * h + (1 - u) * c


def _lstm_step(x, h, c, w, b, forget_bias=1.0):
    i, j, f, o = np.split(np.concatenate([x, h], 1) @ w + b, 4, axis=1)
    c = c * _sigmoid(f + forget_bias) + _sigmoid(i) * np.tanh(j)
    return np.tanh(c) * _sigmoid(o), c


def _build_and_run(build, feed, seed=3):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = seed
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        fetches, param_names = build()
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    values = exe.run(main, feed=feed, fetch_list=fetches, scope=scope)
    return values, _params(scope, param_names), (main, exe, scope)


X = RNG.uniform(-1, 1, (3, 5, 4)).astype("float32")   # batch 3, time 5, width 4
LENGTHS = np.array([5, 2, 3], "int64")


def test_gru_cell_step_matches_its_formula():
    h0 = RNG.uniform(-1, 1, (3, 6)).astype("float32")

    def build():
        x = fluid.data(name="x", shape=[3, 4], dtype="float32")
        h = fluid.data(name="h", shape=[3, 6], dtype="float32")
        out, new = fluid.layers.GRUCell(6)(x, h)
        return [out, new], ["GRUCell/BasicGRUUnit_0.w_0", "GRUCell/BasicGRUUnit_0.w_1",
                            "GRUCell/BasicGRUUnit_0.b_0", "GRUCell/BasicGRUUnit_0.b_1"]
    (out, new), params, _ = _build_and_run(build, {"x": X[:, 0], "h": h0})
    np.testing.assert_allclose(out, _gru_step(X[:, 0], h0, *params), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(out, new)


def test_lstm_cell_step_matches_its_formula():
    h0, c0 = (RNG.uniform(-1, 1, (3, 6)).astype("float32") for _ in range(2))

    def build():
        x = fluid.data(name="x", shape=[3, 4], dtype="float32")
        h = fluid.data(name="h", shape=[3, 6], dtype="float32")
        c = fluid.data(name="c", shape=[3, 6], dtype="float32")
        out, (new_h, new_c) = fluid.layers.LSTMCell(6, forget_bias=0.5)(x, [h, c])
        return [out, new_c], ["LSTMCell/BasicLSTMUnit_0.w_0", "LSTMCell/BasicLSTMUnit_0.b_0"]
    (out, new_c), params, _ = _build_and_run(build, {"x": X[:, 0], "h": h0, "c": c0})
    want_h, want_c = _lstm_step(X[:, 0], h0, c0, *params, forget_bias=0.5)
    np.testing.assert_allclose(out, want_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(new_c, want_c, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("is_reverse", [False, True])
def test_rnn_runs_the_cell_over_time_keeping_ended_states(is_reverse):
    def build():
        x = fluid.data(name="x", shape=[3, 5, 4], dtype="float32")
        lengths = fluid.data(name="lengths", shape=[3], dtype="int64")
        outputs, final = fluid.layers.rnn(fluid.layers.GRUCell(6), x, sequence_length=lengths,
                                          is_reverse=is_reverse)
        return [outputs, final], ["GRUCell/BasicGRUUnit_0.w_0",
                                  "GRUCell/BasicGRUUnit_0.w_1",
                                  "GRUCell/BasicGRUUnit_0.b_0",
                                  "GRUCell/BasicGRUUnit_0.b_1"]
    (outputs, final), params, _ = _build_and_run(build, {"x": X, "lengths": LENGTHS})
    h = np.zeros((3, 6))
    want = np.zeros((3, 5, 6))
    steps = range(4, -1, -1) if is_reverse else range(5)
    for t in steps:
        new = _gru_step(X[:, t], h, *params)
        want[:, t] = new
        alive = (t < LENGTHS)[:, None]
        h = np.where(alive, new, h)
    np.testing.assert_allclose(outputs, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(final, h, rtol=1e-5, atol=1e-5)


def test_initial_states_follow_the_batch_and_wrong_cells_are_refused():
    def build():
        x = fluid.data(name="x", shape=[-1, 5, 4], dtype="float32")
        states = fluid.layers.LSTMCell(6).get_initial_states(batch_ref=x, init_value=0.5)
        return states, []
    (h, c), _, _ = _build_and_run(build, {"x": X})
    np.testing.assert_array_equal(h, np.full((3, 6), 0.5, "float32"))
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data(name="x", shape=[3, 5, 4], dtype="float32")
        with pytest.raises(TypeError, match="cell expected an RNNCell"):
            fluid.layers.rnn("gru", x)
        with pytest.raises(TypeError, match="hidden_size expected a positive int"):
            fluid.layers.GRUCell(0)


def test_initial_states_of_given_shapes_put_the_batch_first_once():
    def build():
        x = fluid.data(name="x", shape=[5, -1, 4], dtype="float32")  # time-major
        cell = fluid.layers.GRUCell(2)
        states = cell.get_initial_states(batch_ref=x, shape=[[-1, 3], [[2], (2, 2)]],
                                         dtype="float64", init_value=1.5, batch_dim_idx=1)
        (first, (second, third)) = states
        return [first, second, third], []
    values, _, _ = _build_and_run(build, {"x": X.transpose(1, 0, 2)})
    assert [v.shape for v in values] == [(3, 3), (3, 2), (3, 2, 2)]
    assert all(v.dtype == np.float64 and (v == 1.5).all() for v in values)


def test_cells_are_numbered_when_made_and_their_parameters_made_at_the_first_call():
    with fluid.program_guard(fluid.Program(), fluid.Program()), fluid.unique_name.guard():
        first, second = fluid.layers.GRUCell(4), fluid.layers.LSTMCell(4, name="dec")
        third = fluid.layers.GRUCell(4)
        x = fluid.data(name="x", shape=[-1, 3, 5], dtype="float32")
        assert fluid.default_main_program().global_block().all_parameters() == []
        fluid.layers.rnn(third, x)
        fluid.layers.rnn(second, x)
        fluid.layers.rnn(first, x)
        names = [p.name for p in fluid.default_main_program().global_block().all_parameters()]
    assert names == ["GRUCell/BasicGRUUnit_1.w_0", "GRUCell/BasicGRUUnit_1.w_1",
                     "GRUCell/BasicGRUUnit_1.b_0", "GRUCell/BasicGRUUnit_1.b_1",
                     "dec/BasicLSTMUnit_0.w_0", "dec/BasicLSTMUnit_0.b_0",
                     "GRUCell/BasicGRUUnit_0.w_0", "GRUCell/BasicGRUUnit_0.w_1",
                     "GRUCell/BasicGRUUnit_0.b_0", "GRUCell/BasicGRUUnit_0.b_1"]


def test_variable_indexing_slices_as_numpy_does():
    def build():
        x = fluid.data(name="x", shape=[3, 5, 4], dtype="float32")
        return [x[-1], x[:, 1], x[0, 1:3], x[::-1], x[:, :, 2], x[1:, ::2, -2]], []
    values, _, _ = _build_and_run(build, {"x": X})
    for got, want in zip(values, [X[-1], X[:, 1], X[0, 1:3], X[::-1], X[:, :, 2],
                                  X[1:, ::2, -2]]):
        np.testing.assert_array_equal(got, want)


def test_rnn_gradients_match_finite_differences():
    """The StaticRNN under rnn() differentiates: the gradient of a weighted sum of every
    output with respect to the input and a parameter, against float64 central differences
    (the backward pass restores the step counter it reads the step slices by)."""
    x_value = RNG.uniform(-1, 1, (2, 3, 2))
    weights = RNG.uniform(-1, 1, (2, 3, 3))
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[2, 3, 2], dtype="float64")
        x.stop_gradient = False
        w = fluid.data(name="w", shape=[2, 3, 3], dtype="float64")
        outputs, _ = fluid.layers.rnn(fluid.layers.GRUCell(3, dtype="float64"), x)
        loss = fluid.layers.reduce_sum(outputs * w)
        fluid.append_backward(loss)
    weight_name = "GRUCell/BasicGRUUnit_0.w_0"
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": x_value, "w": weights}
    dx, dw = exe.run(main, feed=feed, fetch_list=["x@GRAD", weight_name + "@GRAD"],
                     scope=scope)
    param = scope.find_var(weight_name).get_tensor()

    def loss_at(x_in, w_param):
        param.set(w_param, fluid.CPUPlace())
        return float(exe.run(main, feed={"x": x_in, "w": weights}, fetch_list=[loss],
                             scope=scope)[0])

    w_value = np.array(param)
    delta = 1e-6
    for index in [(0, 0, 0), (1, 2, 1), (0, 1, 1)]:
        up, down = x_value.copy(), x_value.copy()
        up[index] += delta
        down[index] -= delta
        numeric = (loss_at(up, w_value) - loss_at(down, w_value)) / (2 * delta)
        assert abs(dx[index] - numeric) < 1e-6, (index, dx[index], numeric)
    for index in [(0, 0), (4, 5), (2, 3)]:
        up, down = w_value.copy(), w_value.copy()
        up[index] += delta
        down[index] -= delta
        numeric = (loss_at(x_value, up) - loss_at(x_value, down)) / (2 * delta)
        assert abs(dw[index] - numeric) < 1e-6, (index, dw[index], numeric)


def test_rnn_reads_the_number_of_steps_when_the_program_runs():
    """Batch and time dims unknown (-1) when the program is built, as fluid.data([None,
    None, ...]) declares them: one program runs batches of 5 and of 2 steps, the LSTM's
    (h, c) states kept after each sequence's end."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, None, 4], dtype="float32")
        lengths = fluid.data(name="lengths", shape=[None], dtype="int64")
        outputs, (h, c) = fluid.layers.rnn(fluid.layers.LSTMCell(6), x,
                                           sequence_length=lengths)
    assert list(outputs.shape) == [-1, -1, 6] and list(h.shape) == [-1, 6]
    fluid.verify(main)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    w, b = _params(scope, ["LSTMCell/BasicLSTMUnit_0.w_0", "LSTMCell/BasicLSTMUnit_0.b_0"])
    for x_value, length_value in [(X, LENGTHS), (X[:2, :2], np.array([1, 2], "int64"))]:
        got = exe.run(main, feed={"x": x_value, "lengths": length_value},
                      fetch_list=[outputs, h, c], scope=scope)
        batch, time = x_value.shape[:2]
        want_h, want_c = np.zeros((batch, 6)), np.zeros((batch, 6))
        want_out = np.zeros((batch, time, 6))
        for t in range(time):
            new_h, new_c = _lstm_step(x_value[:, t], want_h, want_c, w, b)
            want_out[:, t] = new_h
            alive = (t < length_value)[:, None]
            want_h, want_c = np.where(alive, new_h, want_h), np.where(alive, new_c, want_c)
        for value, want in zip(got, [want_out, want_h, want_c]):
            np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-5)


def test_rnn_final_state_gradients_match_finite_differences():
    """Gradients reach the input through the masked final state and a time-major,
    reversed run with a given initial state, against float64 central differences."""
    x_value = RNG.uniform(-1, 1, (3, 2, 2))   # time 3, batch 2 (time major)
    h0_value = RNG.uniform(-1, 1, (2, 3))
    weights = RNG.uniform(-1, 1, (2, 3))
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, None, 2], dtype="float64")
        x.stop_gradient = False
        h0 = fluid.data(name="h0", shape=[None, 3], dtype="float64")
        h0.stop_gradient = False
        lengths = fluid.data(name="lengths", shape=[None], dtype="int64")
        w = fluid.data(name="w", shape=[None, 3], dtype="float64")
        _, final = fluid.layers.rnn(fluid.layers.GRUCell(3, dtype="float64"), x,
                                    initial_states=h0, sequence_length=lengths,
                                    time_major=True, is_reverse=True)
        loss = fluid.layers.reduce_sum(final * w)
        fluid.append_backward(loss)
    fluid.verify(main)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": x_value, "h0": h0_value, "lengths": np.array([3, 1], "int64"), "w": weights}
    dx, dh0 = exe.run(main, feed=feed, fetch_list=["x@GRAD", "h0@GRAD"], scope=scope)

    def loss_at(**changed):
        return float(exe.run(main, feed=dict(feed, **changed), fetch_list=[loss],
                             scope=scope)[0])

    delta = 1e-6
    for name, value, grad, index in [("x", x_value, dx, (0, 0, 1)),
                                     ("x", x_value, dx, (2, 1, 0)),
                                     ("x", x_value, dx, (0, 1, 1)),
                                     ("h0", h0_value, dh0, (1, 2))]:
        up, down = value.copy(), value.copy()
        up[index] += delta
        down[index] -= delta
        numeric = (loss_at(**{name: up}) - loss_at(**{name: down})) / (2 * delta)
        assert abs(grad[index] - numeric) < 1e-6, (name, index, grad[index], numeric)
