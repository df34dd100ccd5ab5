"""fluid.contrib (Fluid 1.8): the RNNs built from basic operators. basic_lstm and basic_gru
against a NumPy loop of the LSTM/GRU equations with Fluid's gate order and parameter layout
(one and two layers, both directions, sequence lengths, initial states, batch first), the
parameter names Fluid 1.8 gives, the units one step at a time, gradients against finite
differences and training that lowers a loss."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.api.contrib.layers import BasicGRUUnit, BasicLSTMUnit, basic_gru, basic_lstm

RNG = np.random.RandomState(7)
T, N, D, H = 5, 3, 4, 6
X = RNG.uniform(-1, 1, (T, N, D))              # time major
LENGTHS = np.array([5, 2, 3], "int64")


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def _gru_step(x, h, params):
    w_gate, w_cand, b_gate, b_cand = params
    r, u = np.split(_sigmoid(np.concatenate([x, h], 1) @ w_gate + b_gate), 2, axis=1)
    m = np.tanh(np.concatenate([x, r * h], 1) @ w_cand + b_cand)
    return (u * h + (1 - u) * m,)


def _lstm_step(x, h, c, params, forget_bias=1.0):
    w, b = params
    i, j, f, o = np.split(np.concatenate([x, h], 1) @ w + b, 4, axis=1)
    c = c * _sigmoid(f + forget_bias) + _sigmoid(i) * np.tanh(j)
    return np.tanh(c) * _sigmoid(o), c


def _direction(x, states, params, step, lengths, reverse):
    """One direction over time-major ``x`` (states[l]: layer l's tuple of states). The
    backward run reads the reversed padded batch and mask, as Fluid 1.8 does."""
    alive = np.ones((x.shape[0], x.shape[1]), bool) if lengths is None else \
        np.arange(x.shape[0])[:, None] < lengths[None]
    if reverse:
        x, alive = x[::-1], alive[::-1]
    states = [tuple(s) for s in states]
    out = []
    for t in range(x.shape[0]):
        inp = x[t]
        for layer, layer_params in enumerate(params):
            new = step(inp, *states[layer], layer_params)
            states[layer] = tuple(np.where(alive[t][:, None], n, p)
                                  for n, p in zip(new, states[layer]))
            inp = states[layer][0]
        out.append(inp)
    out = np.stack(out)
    return (out[::-1] if reverse else out), states


def _reference(x, init, params, step, lengths, bidirectional):
    """Fluid 1.8's stacked RNN: init[k] [L * dirs, N, H] per state kind, params[d][l]
    per direction and layer. Returns (output [T, N, H * dirs], [last state [L * dirs, N,
    H] per kind])."""
    num_layers = len(params[0])
    dirs = 2 if bidirectional else 1
    grids = [s.reshape(num_layers, dirs, -1, H) for s in init]
    outs, lasts = [], []
    for d in range(dirs):
        states = [tuple(g[l, d] for g in grids) for l in range(num_layers)]
        out, final = _direction(x, states, params[d], step, lengths, reverse=d == 1)
        outs.append(out)
        lasts.append([np.stack([f[k] for f in final]) for k in range(len(init))])
    last = [np.stack([lasts[d][k] for d in range(dirs)], 1).reshape(num_layers * dirs, -1, H)
            for k in range(len(init))]
    return np.concatenate(outs, axis=2), last


def _param_names(kind, name, num_layers, bidirectional):
    unit = "BasicGRUUnit" if kind == "gru" else "BasicLSTMUnit"
    suffixes = ["w_0", "w_1", "b_0", "b_1"] if kind == "gru" else ["w_0", "b_0"]
    scopes = ["_layers_", "_reverse_layers_"][:2 if bidirectional else 1]
    return [[[f"{name}{scope}{l}/{unit}_0.{s}" for s in suffixes] for l in range(num_layers)]
            for scope in scopes]


def _run(kind, num_layers, bidirectional, batch_first, with_lengths, with_init,
         dtype="float64"):
    dirs = 2 if bidirectional else 1
    init_values = [RNG.uniform(-1, 1, (num_layers * dirs, N, H))
                   for _ in range(1 if kind == "gru" else 2)]
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        shape = [N, None, D] if batch_first else [None, N, D]
        x = fluid.data(name="x", shape=shape, dtype=dtype)
        lengths = fluid.data(name="lengths", shape=[N], dtype="int64") if with_lengths \
            else None
        inits = [fluid.data(name=f"init{k}", shape=[num_layers * dirs, N, H], dtype=dtype)
                 for k in range(len(init_values))] if with_init else [None] * len(init_values)
        args = dict(hidden_size=H, num_layers=num_layers, sequence_length=lengths,
                    bidirectional=bidirectional, batch_first=batch_first, dtype=dtype)
        if kind == "gru":
            fetches = list(basic_gru(x, inits[0], **args))
        else:
            fetches = list(basic_lstm(x, inits[0], inits[1], **args))
    fluid.verify(main)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    names = _param_names(kind, "basic_" + kind, num_layers, bidirectional)
    params = []
    for per_dir in names:
        params.append([])
        for per_layer in per_dir:
            values = []
            for n in per_layer:  # non-zero biases, so the bias layout is checked too
                value = RNG.uniform(-0.5, 0.5, np.array(scope.find_var(n).value).shape)
                scope.find_var(n).get_tensor().set(value.astype(dtype), fluid.CPUPlace())
                values.append(value)
            params[-1].append(values)
    feed = {"x": X.transpose(1, 0, 2) if batch_first else X}
    if with_lengths:
        feed["lengths"] = LENGTHS
    if with_init:
        feed.update({f"init{k}": v for k, v in enumerate(init_values)})
    got = exe.run(main, feed=feed, fetch_list=fetches, scope=scope)
    init = init_values if with_init else [np.zeros_like(v) for v in init_values]
    step = _gru_step if kind == "gru" else _lstm_step
    want_out, want_last = _reference(X, init, params, step,
                                     LENGTHS if with_lengths else None, bidirectional)
    if batch_first:
        want_out = want_out.transpose(1, 0, 2)
    return got, [want_out] + want_last


CASES = [
    # layers, bidirectional, batch_first, lengths, init
    (1, False, False, False, False),
    (1, False, True, True, True),
    (2, False, False, True, False),
    (2, True, False, True, True),
    (2, True, True, False, False),
]


@pytest.mark.parametrize("kind", ["gru", "lstm"])
@pytest.mark.parametrize("num_layers,bidirectional,batch_first,with_lengths,with_init", CASES)
def test_basic_rnn_matches_the_equations_in_numpy(kind, num_layers, bidirectional,
                                                  batch_first, with_lengths, with_init):
    got, want = _run(kind, num_layers, bidirectional, batch_first, with_lengths, with_init)
    assert [g.shape for g in got] == [w.shape for w in want]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9)


def test_basic_lstm_in_float32_matches_too():
    got, want = _run("lstm", 2, True, False, True, False, dtype="float32")
    for g, w in zip(got, want):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def _parameters(build):
    with fluid.program_guard(fluid.Program(), fluid.Program()), fluid.unique_name.guard():
        build(fluid.data(name="x", shape=[None, 4, 8], dtype="float32"))
        return [p.name for p in fluid.default_main_program().all_parameters()]


def test_parameters_are_named_as_fluid_18_names_them():
    names = _parameters(lambda x: basic_gru(x, None, 5, num_layers=2, bidirectional=True))
    assert sorted(names) == sorted(n for d in _param_names("gru", "basic_gru", 2, True)
                                   for layer in d for n in layer)
    named = _parameters(lambda x: basic_gru(
        x, None, 5, bidirectional=True, param_attr=fluid.ParamAttr(name="test1"),
        bias_attr=fluid.ParamAttr(name="test1")))
    assert set(named) == {f"test1_{d}_{k}_0_{part}" for d in ("fw", "bw") for k in "wb"
                          for part in ("gate", "candidate")}
    named = _parameters(lambda x: basic_lstm(
        x, None, None, 5, num_layers=2, bidirectional=True, name="enc",
        param_attr=fluid.ParamAttr(name="test1"), bias_attr=fluid.ParamAttr(name="test1")))
    assert set(named) == {f"test1_{d}_{k}_{l}" for d in ("fw", "bw") for k in "wb"
                          for l in (0, 1)}
    shapes = {}
    with fluid.program_guard(fluid.Program(), fluid.Program()), fluid.unique_name.guard():
        basic_lstm(fluid.data(name="x", shape=[None, 4, 8], dtype="float32"), None, None, 5,
                   num_layers=2, name="enc")
        for p in fluid.default_main_program().all_parameters():
            shapes[p.name] = list(p.shape)
    assert shapes == {"enc_layers_0/BasicLSTMUnit_0.w_0": [13, 20],
                      "enc_layers_0/BasicLSTMUnit_0.b_0": [20],
                      "enc_layers_1/BasicLSTMUnit_0.w_0": [10, 20],
                      "enc_layers_1/BasicLSTMUnit_0.b_0": [20]}


def test_units_append_one_step_and_name_their_parameters():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, D], dtype="float64")
        h = fluid.data(name="h", shape=[None, H], dtype="float64")
        c = fluid.data(name="c", shape=[None, H], dtype="float64")
        new_h = BasicGRUUnit("gru_unit", H, dtype="float64")(x, h)
        lstm_h, lstm_c = BasicLSTMUnit("lstm_unit", H, forget_bias=0.5, dtype="float64")(
            x, h, c)
    names = [p.name for p in main.all_parameters()]
    assert names == ["gru_unit/BasicGRUUnit_0.w_0", "gru_unit/BasicGRUUnit_0.w_1",
                     "gru_unit/BasicGRUUnit_0.b_0", "gru_unit/BasicGRUUnit_0.b_1",
                     "lstm_unit/BasicLSTMUnit_0.w_0", "lstm_unit/BasicLSTMUnit_0.b_0"]
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    values = {n: np.array(scope.find_var(n).value) for n in names}
    xv, hv, cv = X[0], RNG.uniform(-1, 1, (N, H)), RNG.uniform(-1, 1, (N, H))
    got = exe.run(main, feed={"x": xv, "h": hv, "c": cv}, fetch_list=[new_h, lstm_h, lstm_c],
                  scope=scope)
    np.testing.assert_allclose(got[0], _gru_step(xv, hv, [values[n] for n in names[:4]])[0],
                               rtol=1e-10)
    want_h, want_c = _lstm_step(xv, hv, cv, [values[n] for n in names[4:]], forget_bias=0.5)
    np.testing.assert_allclose(got[1], want_h, rtol=1e-10)
    np.testing.assert_allclose(got[2], want_c, rtol=1e-10)


def test_gradients_match_finite_differences():
    """d(weighted sum of the output and last states)/d(input, a weight) of a two-layer
    bidirectional LSTM with lengths, against float64 central differences."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, N, 2], dtype="float64")
        x.stop_gradient = False
        lengths = fluid.data(name="lengths", shape=[N], dtype="int64")
        out, last_h, last_c = basic_lstm(x, None, None, 3, num_layers=2, bidirectional=True,
                                         sequence_length=lengths, batch_first=False,
                                         dtype="float64")
        w_out = fluid.data(name="w_out", shape=[None, N, 6], dtype="float64")
        w_c = fluid.data(name="w_c", shape=[4, N, 3], dtype="float64")
        loss = fluid.layers.reduce_sum(out * w_out) + fluid.layers.reduce_sum(last_c * w_c)
        fluid.append_backward(loss)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    weight = "basic_lstm_reverse_layers_1/BasicLSTMUnit_0.w_0"
    feed = {"x": RNG.uniform(-1, 1, (4, N, 2)), "lengths": np.array([4, 1, 3], "int64"),
            "w_out": RNG.uniform(-1, 1, (4, N, 6)), "w_c": RNG.uniform(-1, 1, (4, N, 3))}
    dx, dw = exe.run(main, feed=feed, fetch_list=["x@GRAD", weight + "@GRAD"], scope=scope)
    param = scope.find_var(weight).get_tensor()
    w_value = np.array(param)

    def loss_at(x_value, w):
        param.set(w, fluid.CPUPlace())
        return float(exe.run(main, feed=dict(feed, x=x_value), fetch_list=[loss],
                             scope=scope)[0])

    delta = 1e-6
    for index in [(0, 0, 0), (3, 1, 1), (2, 2, 0), (3, 2, 1)]:
        up, down = feed["x"].copy(), feed["x"].copy()
        up[index] += delta
        down[index] -= delta
        numeric = (loss_at(up, w_value) - loss_at(down, w_value)) / (2 * delta)
        assert abs(dx[index] - numeric) < 1e-6, (index, dx[index], numeric)
    for index in [(0, 0), (4, 11), (2, 7)]:
        up, down = w_value.copy(), w_value.copy()
        up[index] += delta
        down[index] -= delta
        numeric = (loss_at(feed["x"], up) - loss_at(feed["x"], down)) / (2 * delta)
        assert abs(dw[index] - numeric) < 1e-6, (index, dw[index], numeric)


@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_a_few_sgd_steps_lower_the_loss(kind):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, None, D], dtype="float32")
        lengths = fluid.data(name="lengths", shape=[None], dtype="int64")
        target = fluid.data(name="target", shape=[None, None, 2 * H], dtype="float32")
        args = dict(hidden_size=H, num_layers=2, bidirectional=True, sequence_length=lengths)
        out = basic_gru(x, None, **args)[0] if kind == "gru" else \
            basic_lstm(x, None, None, **args)[0]
        loss = fluid.layers.mean(fluid.layers.square(out - target))
        fluid.optimizer.SGD(learning_rate=3.0).minimize(loss)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": X.transpose(1, 0, 2).astype("float32"), "lengths": LENGTHS,
            "target": np.full((N, T, 2 * H), 0.3, "float32")}
    losses = [float(exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0])
              for _ in range(10)]
    assert all(b < a for a, b in zip(losses, losses[1:])), losses
    assert losses[-1] < 0.5 * losses[0], losses


@pytest.mark.parametrize("kind,implementation", [("gru", "downgrade_in_infer"),
                                                 ("lstm", "upscale_in_train")])
def test_dropout_drops_each_layer_output_as_fluid_18_does(kind, implementation):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, None, D], dtype="float32")
        if kind == "gru":
            basic_gru(x, None, H, num_layers=2, dropout_prob=0.3)
        else:
            basic_lstm(x, None, None, H, num_layers=2, dropout_prob=0.3)
    dropouts = [op for block in main.blocks for op in block.ops if op.type == "dropout"]
    assert len(dropouts) == 2  # after each of the two layers, the last one included
    assert {op.attr("dropout_implementation") for op in dropouts} == {implementation}
    assert {round(op.attr("dropout_prob"), 6) for op in dropouts} == {0.3}


def test_wrong_arguments_are_refused_with_typed_errors():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data(name="x", shape=[None, 4, 8], dtype="float32")
        with pytest.raises(TypeError, match="input expected a Variable"):
            basic_gru(np.zeros((2, 4, 8)), None, 5)
        with pytest.raises(TypeError, match="input expected a 3-D Variable"):
            basic_lstm(fluid.data(name="y", shape=[None, 8], dtype="float32"), None, None, 5)
        with pytest.raises(TypeError, match="num_layers expected a positive int"):
            basic_gru(x, None, 5, num_layers=0)
        with pytest.raises(TypeError, match="init_hidden and init_cell expected both"):
            basic_lstm(x, fluid.data(name="h", shape=[1, 4, 5], dtype="float32"), None, 5)
        with pytest.raises(TypeError, match="name_scope expected a str"):
            BasicGRUUnit(None, 5)


def test_contrib_is_an_attribute_of_fluid_with_fluid_18_names():
    assert fluid.contrib.layers.basic_lstm is fluid.contrib.basic_lstm is basic_lstm
    for name in ["BasicGRUUnit", "basic_gru", "BasicLSTMUnit", "basic_lstm"]:
        assert name in fluid.contrib.__all__ and name in fluid.contrib.layers.__all__
    assert fluid.contrib.memory_usage_calc.memory_usage is fluid.contrib.memory_usage
    assert fluid.contrib.op_frequence.op_freq_statistic is fluid.contrib.op_freq_statistic


def _small_program():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[13], dtype="float32")
        hidden = fluid.layers.fc(input=x, size=10, act="relu")
        fluid.layers.fc(input=hidden, size=1)
    return main


def test_op_freq_statistic_counts_ops_and_the_ops_feeding_them():
    ops, pairs = fluid.contrib.op_freq_statistic(_small_program())
    assert dict(ops) == {"mul": 2, "elementwise_add": 2, "relu": 1}
    assert ops[0][1] == 2 and ops[-1] == ("relu", 1)
    assert dict(pairs) == {"mul->elementwise_add": 2, "elementwise_add->relu": 1,
                           "relu->mul": 1}
    with pytest.raises(TypeError, match="program expected a Program"):
        fluid.contrib.op_freq_statistic("main")


def test_memory_usage_sums_the_written_tensors_for_a_batch_size():
    # per sample: mul [10], add [10], relu [10], mul [1], add [1] floats = 128 bytes
    low, high, unit = fluid.contrib.memory_usage(_small_program(), batch_size=2)
    assert unit == "B"
    assert (low, high) == pytest.approx((256 * 1.05, 256 * 1.1))
    low, _, unit = fluid.contrib.memory_usage(_small_program(), batch_size=10000)
    assert unit == "MB" and low == pytest.approx(1280000 / 1024 / 1024 * 1.05)
    with pytest.raises(ValueError, match="batch_size expected a positive int"):
        fluid.contrib.memory_usage(_small_program(), batch_size=0)
