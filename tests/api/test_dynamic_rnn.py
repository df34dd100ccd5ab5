"""DynamicRNN and StaticRNN: the programs they build are Fluid's machinery (rank table, tensor
arrays, shrink_rnn_memory inside a ``while`` sub-block), and they compute what a NumPy loop
over each sequence computes, forward and backward."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb import layers
from fluid_nb.errors import InvalidArgument
from fluid_nb.tensor.tensor import LoDTensorArray
from fluid_nb.api.layers.rnn_layers import DynamicRNN, StaticRNN

import fluid_nb.ops.control_flow  # noqa: F401  (registers while/while_grad until _families does)

# the design documents' batch: lengths 10, 8, 5, 7 -> ranked 10, 8, 7, 5
LENGTHS = [10, 8, 5, 7]
STEP_BATCHES = [4, 4, 4, 4, 4, 3, 3, 2, 1, 1]


def offsets(lengths):
    return np.concatenate([[0], np.cumsum(lengths)]).astype(int)


def per_sequence(values, lengths):
    off = offsets(lengths)
    return [values[off[i]:off[i + 1]] for i in range(len(lengths))]


def run(main, startup, feed, fetch, scope=None):
    scope = scope or fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    return exe.run(main, feed=feed, fetch_list=fetch, scope=scope, return_numpy=False), scope


def lod_feed(value, lengths):
    return fluid.create_lod_tensor(value, [list(lengths)], fluid.CPUPlace())


# --- the design documents' example ------------------------------------------------------------
def build_design_example():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = layers.data("x", [2], dtype="float32", lod_level=1)
        boot = layers.data("boot", [2], dtype="float32")
        static = layers.data("static", [3], dtype="float32")
        drnn = DynamicRNN()
        with drnn.block():
            word = drnn.step_input(x)
            seen = drnn.static_input(static)
            count = drnn.memory(shape=[1], value=0.0)
            acc = drnn.memory(init=boot, need_reorder=True)
            new_count = layers.scale(count, bias=1.0)
            new_acc = layers.elementwise_add(acc, word)
            drnn.update_memory(count, new_count)
            drnn.update_memory(acc, new_acc)
            drnn.output(word, new_count, new_acc, seen)
        outs = drnn()
    return main, startup, drnn, outs


def test_design_example_program_is_the_fluid_machinery():
    main, _, drnn, _ = build_design_example()
    top = [op.type for op in main.global_block().ops]
    assert top[:5] == ["fill_constant", "lod_rank_table", "max_sequence_len", "less_than",
                       "lod_tensor_to_array"]
    assert top.count("while") == 1 and top[-4:] == ["array_to_lod_tensor"] * 4
    assert top.index("reorder_lod_tensor_by_rank") < top.index("while")
    assert "fill_constant_batch_size_like" in top[:top.index("while")]
    while_op = main.global_block().ops[top.index("while")]
    assert sorted(while_op.input_names) == ["Condition", "X"]
    assert sorted(while_op.output_names) == ["Out", "StepScopes"]
    assert while_op.input("Condition") == [drnn.cond.name]
    body = while_op.block_attr("sub_block")
    types = [op.type for op in body.ops]
    assert types[0] == "read_from_array" and types.count("shrink_rnn_memory") == 3
    assert types[-4:] == ["increment", "write_to_array", "write_to_array", "less_than"]
    assert set(while_op.output("Out")) >= {a.name for a in drnn.output_array}
    fluid.verify(main)


def test_design_example_steps_shrink_as_the_rank_table_says():
    main, startup, drnn, (word, count, acc, seen) = build_design_example()
    rows = sum(LENGTHS)
    x = np.arange(rows * 2, dtype="float32").reshape(rows, 2)
    boot = np.array([[100, 1000], [200, 2000], [300, 3000], [400, 4000]], "float32")
    static = np.arange(12, dtype="float32").reshape(4, 3)
    fetch = [drnn.lod_rank_table, drnn.output_array[0], drnn.output_array[3],
             word, count, acc, seen]
    (table, steps, static_steps, *got), _ = run(
        main, startup, {"x": lod_feed(x, LENGTHS), "boot": boot, "static": static}, fetch)

    assert table.items() == [(0, 10), (1, 8), (3, 7), (2, 5)]
    assert isinstance(steps, LoDTensorArray)
    assert [np.asarray(s).shape[0] for s in steps] == STEP_BATCHES
    assert [np.asarray(s).shape[0] for s in static_steps] == STEP_BATCHES
    ranked = [0, 1, 3, 2]
    off = offsets(LENGTHS)
    for t, step in enumerate(steps):  # step t: row t of each ranked sequence still running
        want = [x[off[i] + t] for i in ranked[:STEP_BATCHES[t]]]
        np.testing.assert_array_equal(np.asarray(step), want)
        np.testing.assert_array_equal(np.asarray(static_steps[t]),
                                      static[ranked[:STEP_BATCHES[t]]])

    # the outputs come back in the input order, as a per-sequence NumPy loop computes them
    word, count, acc, seen = (np.asarray(v) for v in got)
    for v in got:
        assert v.recursive_sequence_lengths() == [LENGTHS]
    np.testing.assert_array_equal(word, x)
    for i, seq in enumerate(per_sequence(x, LENGTHS)):
        n = LENGTHS[i]
        np.testing.assert_array_equal(per_sequence(count, LENGTHS)[i][:, 0],
                                      np.arange(1, n + 1))
        np.testing.assert_array_equal(per_sequence(acc, LENGTHS)[i],
                                      boot[i] + np.cumsum(seq, axis=0))
        np.testing.assert_array_equal(per_sequence(seen, LENGTHS)[i], np.tile(static[i], (n, 1)))


# --- a tanh RNN cell -------------------------------------------------------------------------
D, H = 3, 4


def build_tanh_rnn(dtype="float32", boot_memory=True, x_gradient=True):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = layers.data("x", [D], dtype=dtype, lod_level=1, stop_gradient=not x_gradient)
        h0 = layers.data("h0", [H], dtype=dtype, stop_gradient=False)
        drnn = DynamicRNN()
        with drnn.block():
            word = drnn.step_input(x)
            prev = (drnn.memory(init=h0, need_reorder=True) if boot_memory
                    else drnn.memory(shape=[H], dtype=dtype))
            hidden = layers.fc(input=[word, prev], size=H, act="tanh",
                               param_attr=[fluid.ParamAttr(name="W"), fluid.ParamAttr(name="U")],
                               bias_attr=fluid.ParamAttr(name="b"))
            drnn.update_memory(prev, hidden)
            drnn.output(hidden)
        out = drnn()
    return main, startup, out


def train_tanh_rnn(**kwargs):
    """``build_tanh_rnn`` in float64 with loss = mean of its outputs and the backward."""
    main, startup, out = build_tanh_rnn("float64", **kwargs)
    with fluid.program_guard(main, startup):
        loss = layers.mean(out)
        fluid.backward.append_backward(loss)
    return main, startup, loss


def ref_tanh_rnn(x, h0, lengths, w, u, b):
    outs = []
    for i, seq in enumerate(per_sequence(x, lengths)):
        h = h0[i]
        for row in seq:
            h = np.tanh(row @ w + h @ u + b)
            outs.append(h)
    return np.array(outs)


def params(scope, names=("W", "U", "b")):
    return [np.asarray(scope.find_var(n).get_tensor()) for n in names]


@pytest.mark.parametrize("boot_memory", [True, False])
def test_tanh_rnn_matches_numpy(boot_memory):
    lengths = [3, 1, 4, 2]
    rng = np.random.RandomState(1)
    x = rng.uniform(-1, 1, (sum(lengths), D)).astype("float32")
    h0 = rng.uniform(-1, 1, (len(lengths), H)).astype("float32")
    main, startup, out = build_tanh_rnn(boot_memory=boot_memory)
    (got,), scope = run(main, startup, {"x": lod_feed(x, lengths), "h0": h0}, [out])
    want = ref_tanh_rnn(x, h0 if boot_memory else np.zeros_like(h0), lengths, *params(scope))
    assert got.recursive_sequence_lengths() == [lengths]
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)


# WAITING on shared code, not on this layer: lod_rank_table needs Paddle's empty grad maker
# (backward stops at it), and fill_zeros_like must accept a LoDTensorArray (the gradient of a
# memory array nobody reads after the loop). strict: drop this marker once it passes.
def test_tanh_rnn_gradients_match_finite_differences():
    lengths = [2, 1, 3]
    rng = np.random.RandomState(2)
    x = rng.uniform(-1, 1, (sum(lengths), D))
    h0 = rng.uniform(-1, 1, (len(lengths), H))
    weight = rng.uniform(0.5, 1.5, (sum(lengths), H))
    main, startup, out = build_tanh_rnn(dtype="float64")
    with fluid.program_guard(main, startup):
        wt = layers.data("wt", [H], dtype="float64")
        loss = layers.reduce_sum(layers.elementwise_mul(out, wt))
        fluid.backward.append_backward(loss)
    feeds = {"x": lod_feed(x, lengths), "h0": h0, "wt": weight}
    names = ["x@GRAD", "h0@GRAD", "W@GRAD", "U@GRAD", "b@GRAD"]
    analytic, scope = run(main, startup, feeds, [loss] + names)
    analytic = [np.asarray(a) for a in analytic[1:]]
    exe = fluid.Executor(fluid.CPUPlace())

    def loss_at(feed):
        (value,) = exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
        return float(np.asarray(value).sum())

    delta = 1e-6
    for name, grad in zip(names, analytic):
        var = name[:-len("@GRAD")]
        if var in ("x", "h0"):
            base = feeds[var] if var == "h0" else x
        else:
            base = np.asarray(scope.find_var(var).get_tensor()).copy()
        numeric = np.zeros_like(base)
        for k in range(base.size):
            values = []
            for sign in (1, -1):
                moved = base.copy()
                moved.reshape(-1)[k] += sign * delta
                feed = dict(feeds)
                if var == "x":
                    feed["x"] = lod_feed(moved, lengths)
                elif var == "h0":
                    feed["h0"] = moved
                else:
                    scope.find_var(var).get_tensor().set(moved, fluid.CPUPlace())
                values.append(loss_at(feed))
            numeric.reshape(-1)[k] = (values[0] - values[1]) / (2 * delta)
            if var not in ("x", "h0"):
                scope.find_var(var).get_tensor().set(base, fluid.CPUPlace())
        np.testing.assert_allclose(grad.reshape(base.shape), numeric, rtol=1e-5, atol=1e-8,
                                   err_msg=name)


def test_repeated_runs_bind_each_loop_body_once_and_follow_each_batch():
    """A plan run again reuses the bindings of the while and while_grad bodies, and gives
    what a fresh program gives, for batches of other lengths and step counts too."""
    from fluid_nb.exec import executor as executor_module

    names = ["x@GRAD", "h0@GRAD", "W@GRAD", "U@GRAD", "b@GRAD"]
    rng = np.random.RandomState(3)
    batches = []
    for lengths in ([2, 1, 3], [5, 2, 4, 1], [2, 1, 3]):
        batches.append({"x": lod_feed(rng.uniform(-1, 1, (sum(lengths), D)), lengths),
                        "h0": rng.uniform(-1, 1, (len(lengths), H))})
    main, startup, loss = train_tanh_rnn()
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    for k, feed in enumerate(batches):
        bound = executor_module.stats["frames_bound"]
        got = exe.run(main, feed=feed, fetch_list=[loss] + names, scope=scope)
        if k:  # the first run bound both bodies; later runs bind nothing
            assert executor_module.stats["frames_bound"] == bound
        fresh_main, fresh_startup, fresh_loss = train_tanh_rnn()
        want, _ = run(fresh_main, fresh_startup, feed, [fresh_loss] + names)
        for name, a, b in zip(["loss"] + names, got, want):  # equal up to BLAS rounding
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-15,
                                       err_msg=name)


def test_gradients_nobody_reads_are_not_computed_inside_the_loop():
    """With x not needing a gradient, the grad body leaves out the gradient of each step's
    input (mul_grad's X@GRAD and its write into the input array's gradient); the parameter
    gradients are those of the program that does compute it."""
    from fluid_nb.exec.frame import _unwanted

    lengths = [3, 1, 4]
    feed = {"x": lod_feed(np.random.RandomState(4).uniform(-1, 1, (sum(lengths), D)),
                          lengths)}
    names = ["W@GRAD", "U@GRAD", "b@GRAD"]
    results = []
    for x_grad in (True, False):
        main, startup, loss = train_tanh_rnn(boot_memory=False, x_gradient=x_grad)
        got, _ = run(main, startup, feed, [loss] + names)
        results.append([np.asarray(g) for g in got])
    for name, a, b in zip(["loss"] + names, *results):
        np.testing.assert_allclose(a, b, rtol=1e-12, err_msg=name)
    grad_op = next(op for op in main.global_block().ops if op.type == "while_grad")
    grad_block = main.block(grad_op.attr("sub_block"))
    prepared = fluid.Executor(fluid.CPUPlace()).prepare(grad_block)
    reads = {n + "@GRAD" for n in grad_op.input("X") if n in ("W", "U", "b")}
    unwanted = _unwanted(prepared, fluid.Scope(), set(), reads)
    dropped = {grad_block.ops[i].type: names for i, names in unwanted.items()}
    assert any(n.endswith("@GRAD") for n in dropped["mul_grad"])  # an input's gradient
    assert grad_block.ops[max(unwanted)].type == "write_to_array"  # into the input array


# --- misuse ----------------------------------------------------------------------------------
def test_dynamic_rnn_misuse_is_reported():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = layers.data("x", [2], dtype="float32", lod_level=1)
        drnn = DynamicRNN()
        with pytest.raises(InvalidArgument, match="DynamicRNN.step_input"):
            drnn.step_input(x)
        with pytest.raises(InvalidArgument, match="DynamicRNN.static_input: step_input"):
            with drnn.block():
                drnn.static_input(x)
        with pytest.raises(InvalidArgument, match="DynamicRNN: outputs"):
            DynamicRNN()()


# --- StaticRNN ---------------------------------------------------------------------------------
T, N = 4, 3


def build_static_rnn(boot_memory):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = layers.data("x", [T, N, D], dtype="float32", append_batch_size=False)
        h0 = layers.data("h0", [N, H], dtype="float32", append_batch_size=False)
        rnn = StaticRNN()
        with rnn.step():
            word = rnn.step_input(x)
            prev = (rnn.memory(init=h0) if boot_memory
                    else rnn.memory(shape=[-1, H], batch_ref=word))
            hidden = layers.fc(input=[word, prev], size=H, act="tanh",
                               param_attr=[fluid.ParamAttr(name="W"), fluid.ParamAttr(name="U")],
                               bias_attr=fluid.ParamAttr(name="b"))
            rnn.update_memory(prev, hidden)
            rnn.step_output(hidden)
            rnn.step_output(word)
        out, words = rnn()
    return main, startup, out, words


@pytest.mark.parametrize("boot_memory", [True, False])
def test_static_rnn_matches_numpy(boot_memory):
    rng = np.random.RandomState(4)
    x = rng.uniform(-1, 1, (T, N, D)).astype("float32")
    h0 = rng.uniform(-1, 1, (N, H)).astype("float32")
    main, startup, out, words = build_static_rnn(boot_memory)
    assert out.shape == (T, N, H) or out.shape == (T, -1, H)
    (got, got_words), scope = run(main, startup, {"x": x, "h0": h0}, [out, words])
    w, u, b = params(scope)
    h = h0 if boot_memory else np.zeros((N, H), "float32")
    want = []
    for t in range(T):
        h = np.tanh(x[t] @ w + h @ u + b)
        want.append(h)
    np.testing.assert_allclose(np.asarray(got), np.array(want), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(got_words), x)
    types = [op.type for op in main.global_block().ops]
    assert "while" in types and types[-1] == "stack"


def test_static_rnn_rejects_unequal_lengths():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        a = layers.data("a", [T, N, D], dtype="float32", append_batch_size=False)
        b = layers.data("b", [T + 1, N, D], dtype="float32", append_batch_size=False)
        rnn = StaticRNN()
        with pytest.raises(InvalidArgument, match="StaticRNN.step_input: x expected sequence"):
            with rnn.step():
                rnn.step_input(a)
                rnn.step_input(b)


def test_gradient_stops_at_a_memory_made_from_the_batch_size():
    """``memory(shape=...)`` fills zeros shaped like the step's batch
    (fill_constant_batch_size_like): its value depends on no input's values, so the gradient
    stops there as in Paddle, and an embedding in front of the RNN still trains."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64", lod_level=1)
        emb = fluid.layers.embedding(ids, size=[10, 4])
        rnn = fluid.layers.DynamicRNN()
        with rnn.block():
            x_t = rnn.step_input(emb)
            h_prev = rnn.memory(shape=[3], value=0.0)
            h = fluid.layers.fc(input=[x_t, h_prev], size=3, act="tanh")
            rnn.update_memory(h_prev, h)
            rnn.output(h)
        loss = fluid.layers.mean(fluid.layers.sequence_last_step(rnn()))
        fluid.backward.append_backward(loss)
    types = [op.type for op in main.global_block().ops]
    assert "fill_constant_batch_size_like" in types
    assert "fill_constant_batch_size_like_grad" not in types
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    feed = {"ids": fluid.create_lod_tensor(np.array([[1], [2], [3], [4], [5]], "int64"),
                                           [[3, 2]], fluid.CPUPlace())}
    (grad,) = exe.run(main, feed=feed, fetch_list=["embedding_0.w_0@GRAD"], scope=scope)
    assert np.abs(np.asarray(grad)).sum() > 0
