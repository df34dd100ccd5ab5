"""dynamic_lstmp and lstm as scripts use them: Paddle's parameters, outputs equal to the
per-step NumPy references, and a few training steps that lower the loss."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument
from fluid_nb.ops.rnn_lstm import weight_size

from tests.ops.test_rnn_lstm import cudnn_lstm_ref, lstmp_ref

rng = np.random.RandomState(4)
LOD = [[0, 3, 5, 9]]


def lod_feed(value, lod):
    lengths = [[b - a for a, b in zip(lod[0], lod[0][1:])]]
    return fluid.create_lod_tensor(value, lengths, fluid.CPUPlace())


def test_dynamic_lstmp_parameters_and_output():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 8], lod_level=1)
        projection, cell = fluid.layers.dynamic_lstmp(x, size=8, proj_size=3,
                                                      cell_clip=0.5, proj_clip=0.9)
    params = {p.name: p.shape for p in main.global_block().all_parameters()}
    assert params == {"lstmp_0.w_0": (3, 8), "lstmp_0.w_1": (2, 3), "lstmp_0.b_0": (1, 14)}
    assert projection.shape == (-1, 3) and cell.shape == (-1, 2)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        value = rng.uniform(-1, 1, (9, 8)).astype("float32")
        out, cell_value = exe.run(main, feed={"x": lod_feed(value, LOD)},
                                  fetch_list=[projection, cell], return_numpy=False)
        weights = {name: np.asarray(scope.find_var(name).get_tensor()) for name in params}
    expected = lstmp_ref(LOD)({"Input": value, "Weight": weights["lstmp_0.w_0"],
                               "ProjWeight": weights["lstmp_0.w_1"],
                               "Bias": weights["lstmp_0.b_0"]},
                              {"cell_clip": 0.5, "proj_clip": 0.9})
    np.testing.assert_allclose(np.asarray(out), expected["Projection"], atol=1e-5)
    np.testing.assert_allclose(np.asarray(cell_value), expected["Cell"], atol=1e-5)
    assert out.lod() == LOD


def test_dynamic_lstmp_trains():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        words = fluid.data("words", [None, 1], dtype="int64", lod_level=1)
        label = fluid.data("label", [None, 1], dtype="float32")
        emb = fluid.embedding(words, size=[20, 6])
        projection, _ = fluid.layers.dynamic_lstmp(fluid.layers.fc(emb, size=16), size=16,
                                                   proj_size=4)
        last = fluid.layers.sequence_pool(projection, "last")
        loss = fluid.layers.mean(fluid.layers.square_error_cost(
            fluid.layers.fc(last, size=1), label))
        fluid.optimizer.Adam(learning_rate=0.05).minimize(loss)
    ids = rng.randint(0, 20, (9, 1)).astype("int64")
    target = np.array([[1.0], [-1.0], [0.5]], "float32")
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        losses = [float(exe.run(main, feed={"words": lod_feed(ids, LOD), "label": target},
                                fetch_list=[loss])[0][0]) for _ in range(15)]
    assert losses[-1] < 0.3 * losses[0], losses


def test_lstm_two_layers_bidirectional_matches_numpy():
    seq, batch, size, hidden = 4, 3, 5, 3
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [seq, batch, size])
        init_h = fluid.layers.fill_constant([4, batch, hidden], "float32", 0.1)
        init_c = fluid.layers.fill_constant([4, batch, hidden], "float32", -0.2)
        out, last_h, last_c = fluid.layers.lstm(x, init_h, init_c, max_len=seq,
                                                hidden_size=hidden, num_layers=2,
                                                is_bidirec=True, is_test=True)
    weight, = main.global_block().all_parameters()
    assert weight.name == "cudnn_lstm_0.w_0"
    assert weight.shape == (weight_size(size, hidden, 2, True),)
    assert out.shape == (seq, batch, 2 * hidden) and last_h.shape == (4, batch, hidden)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        value = rng.uniform(-1, 1, (seq, batch, size)).astype("float32")
        results = exe.run(main, feed={"x": value}, fetch_list=[out, last_h, last_c])
        flat = np.asarray(scope.find_var(weight.name).get_tensor())
    expected = cudnn_lstm_ref({"Input": value, "InitH": np.full((4, batch, hidden), 0.1),
                               "InitC": np.full((4, batch, hidden), -0.2), "W": flat},
                              {"hidden_size": hidden, "num_layers": 2, "is_bidirec": True})
    for got, slot in zip(results, ["Out", "LastH", "LastC"]):
        np.testing.assert_allclose(got, expected[slot], atol=1e-5)


def test_lstm_trains_with_dropout_between_layers():
    seq, batch, size, hidden = 5, 4, 3, 6
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [seq, batch, size])
        y = fluid.data("y", [batch, 1])
        zeros = fluid.layers.fill_constant([2, batch, hidden], "float32", 0.0)
        _, last_h, _ = fluid.layers.lstm(x, zeros, zeros, max_len=seq, hidden_size=hidden,
                                         num_layers=2, dropout_prob=0.1,
                                         default_initializer=fluid.initializer.Uniform(-0.3,
                                                                                       0.3))
        top = fluid.layers.slice(last_h, axes=[0], starts=[1], ends=[2])
        prediction = fluid.layers.fc(fluid.layers.reshape(top, [batch, hidden]), size=1)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(prediction, y))
        fluid.optimizer.Adam(learning_rate=0.03).minimize(loss)
    value = rng.uniform(-1, 1, (seq, batch, size)).astype("float32")
    target = value.sum(axis=(0, 2)).reshape(batch, 1) / 3
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        losses = [float(exe.run(main, feed={"x": value, "y": target},
                                fetch_list=[loss])[0][0]) for _ in range(40)]
    assert losses[-1] < 0.3 * losses[0], losses


@pytest.mark.parametrize("call, words", [
    (lambda x: fluid.layers.dynamic_lstmp(x, size=6, proj_size=2), "size"),
    (lambda x: fluid.layers.dynamic_lstmp(x, size=8, proj_size=0), "proj_size"),
    (lambda x: fluid.layers.dynamic_lstmp(x, size=8, proj_size=2, proj_activation="gelu"),
     "proj_activation"),
    (lambda x: fluid.layers.lstm(x, x, x, 3, hidden_size=2, num_layers=0), "num_layers"),
    (lambda x: fluid.layers.lstm(x, x, x, 3, hidden_size=2, num_layers=1, dropout_prob=2.0),
     "dropout_prob"),
])
def test_bad_arguments_are_refused_before_anything_is_added(call, words):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 8], lod_level=1)
        before = dict(main.global_block().vars)
        with pytest.raises(InvalidArgument, match=words):
            call(x)
        assert dict(main.global_block().vars) == before
        assert not startup.global_block().ops
