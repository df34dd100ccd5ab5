"""Sequence layers on LoD input: values against NumPy per sequence, and a LoD text
classifier (embedding -> sequence_conv -> sequence_pool -> fc) that trains."""
import numpy as np

import fluid_nb as fluid

LOD = [[0, 5, 8, 10, 14]]  # the design documents' batch: sequences of 5, 3, 2 and 4 rows


def _run(build, feed, fetch_count=1):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        outputs = build()
    fluid.verify(main)
    scope, exe = fluid.Scope(), fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    return exe.run(main, feed=feed, fetch_list=list(outputs), scope=scope, return_numpy=False)


def test_first_and_last_step_and_max_pool_per_sequence():
    data = np.arange(28, dtype="float32").reshape(14, 2) % 7

    def build():
        x = fluid.layers.data(name="x", shape=[2], dtype="float32", lod_level=1)
        return (fluid.layers.sequence_first_step(x), fluid.layers.sequence_last_step(x),
                fluid.layers.sequence_pool(x, "max"))

    first, last, pooled = _run(build, {"x": fluid.create_lod_tensor(data, [[5, 3, 2, 4]],
                                                                    fluid.CPUPlace())})
    offsets = LOD[0]
    seqs = [data[a:b] for a, b in zip(offsets, offsets[1:])]
    np.testing.assert_array_equal(np.asarray(first), [s[0] for s in seqs])
    np.testing.assert_array_equal(np.asarray(last), [s[-1] for s in seqs])
    np.testing.assert_array_equal(np.asarray(pooled), [s.max(axis=0) for s in seqs])


def test_reverse_keeps_the_lod_and_reverses_each_sequence():
    data = np.arange(14, dtype="float32").reshape(14, 1)

    def build():
        x = fluid.layers.data(name="x", shape=[1], dtype="float32", lod_level=1)
        return (fluid.layers.sequence_reverse(x),)

    (out,) = _run(build, {"x": fluid.create_lod_tensor(data, [[5, 3, 2, 4]], fluid.CPUPlace())})
    assert out.lod() == LOD
    want = np.concatenate([data[a:b][::-1] for a, b in zip(LOD[0], LOD[0][1:])])
    np.testing.assert_array_equal(np.asarray(out), want)


def test_lod_text_classifier_trains():
    rng = np.random.RandomState(0)
    lengths = [5, 3, 2, 4]
    labels = np.array([[0], [1], [0], [1]], "int64")
    # class 1 sentences use ids 10..19, class 0 ids 0..9
    ids = np.concatenate([rng.randint(10 * int(l), 10 * int(l) + 10, n)
                          for n, l in zip(lengths, labels[:, 0])]).reshape(-1, 1).astype("int64")
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        words = fluid.layers.data(name="words", shape=[1], dtype="int64", lod_level=1)
        label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        emb = fluid.layers.embedding(input=words, size=[20, 8])
        conv = fluid.layers.sequence_conv(input=emb, num_filters=6, filter_size=3, act="tanh")
        pooled = fluid.layers.sequence_pool(conv, "max")
        prob = fluid.layers.fc(input=pooled, size=2, act="softmax")
        loss = fluid.layers.mean(fluid.layers.cross_entropy(input=prob, label=label))
        fluid.optimizer.Adam(learning_rate=0.05).minimize(loss)
    fluid.verify(main)
    types = [op.type for op in main.global_block().ops]
    assert "sequence_conv_grad" in types and "sequence_pool_grad" in types
    scope, exe = fluid.Scope(), fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    feed = {"words": fluid.create_lod_tensor(ids, [lengths], fluid.CPUPlace()), "label": labels}
    losses = [float(exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0])
              for _ in range(30)]
    assert losses[-1] < 0.2 * losses[0]


def test_cos_sim_compares_rows_and_broadcasts_a_single_y_row():
    rng = np.random.RandomState(4)
    x, y = rng.randn(4, 3).astype("float32"), rng.randn(1, 3).astype("float32")

    def build():
        xs = fluid.data(name="x", shape=[4, 3], dtype="float32")
        ys = fluid.data(name="y", shape=[1, 3], dtype="float32")
        xs.stop_gradient = ys.stop_gradient = False
        out = fluid.layers.cos_sim(xs, ys)
        fluid.backward.append_backward(fluid.layers.reduce_sum(out))
        return out, fluid.default_main_program().global_block().var("y@GRAD")

    out, dy = _run(build, {"x": x, "y": y})
    want = (x @ y[0]) / (np.linalg.norm(x, axis=1) * np.linalg.norm(y))
    np.testing.assert_allclose(np.asarray(out), want.reshape(4, 1), rtol=1e-5)
    assert np.asarray(dy).shape == (1, 3)


def test_sequence_scatter_adds_updates_into_each_sequences_row():
    x = np.zeros((2, 4), "float32")
    ids, upd = np.array([[1], [3], [1], [0]]), np.array([[1.], [2.], [3.], [4.]], "float32")
    place = fluid.CPUPlace()

    def build():
        xs = fluid.data(name="x", shape=[2, 4], dtype="float32")
        index = fluid.data(name="ids", shape=[-1, 1], dtype="int64", lod_level=1)
        updates = fluid.data(name="upd", shape=[-1, 1], dtype="float32", lod_level=1)
        return (fluid.layers.sequence_scatter(xs, index, updates),)

    (out,) = _run(build, {"x": x, "ids": fluid.create_lod_tensor(ids, [[2, 2]], place),
                          "upd": fluid.create_lod_tensor(upd, [[2, 2]], place)})
    # sequence 0 (ids 1, 3) goes to row 0, sequence 1 (ids 1, 0) to row 1
    np.testing.assert_array_equal(np.asarray(out), [[0, 1, 0, 2], [4, 3, 0, 0]])


def test_sequence_enumerate_makes_windows_inside_each_sequence():
    ids = np.array([[1], [2], [3], [4], [5]])

    def build():
        x = fluid.data(name="ids", shape=[-1, 1], dtype="int64", lod_level=1)
        return (fluid.layers.sequence_enumerate(x, win_size=2, pad_value=0),)

    (out,) = _run(build, {"ids": fluid.create_lod_tensor(ids, [[3, 2]], fluid.CPUPlace())})
    np.testing.assert_array_equal(np.asarray(out), [[1, 2], [2, 3], [3, 0], [4, 5], [5, 0]])
    assert out.lod() == [[0, 3, 5]]


def test_sequence_enumerate_refuses_a_window_below_two():
    import pytest
    from fluid_nb.errors import InvalidArgument
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data(name="ids", shape=[-1, 1], dtype="int64", lod_level=1)
        with pytest.raises(InvalidArgument, match="sequence_enumerate: win_size expected"):
            fluid.layers.sequence_enumerate(x, win_size=1)


def test_cos_sim_refuses_integer_input_as_a_type_error():
    import pytest
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data(name="x", shape=[2, 3], dtype="int64")
        y = fluid.data(name="y", shape=[1, 3], dtype="float32")
        with pytest.raises(TypeError, match="cos_sim: X's dtype expected one of float32, but received int64"):
            fluid.layers.cos_sim(x, y)
