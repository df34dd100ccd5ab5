"""Live mode without IPython: ops run as they are appended; transactions; re-feeding."""
import contextlib

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument
from fluid_nb.live import disable_live, enable_live, feed, live, live_session, live_step

X = np.arange(6, dtype="float32").reshape(2, 3) / 10


class _Watcher:
    """A memory view's stand-in: while one watches, the arena's event log is on."""


_WATCHER = _Watcher()


@contextlib.contextmanager
def _lod_cell(name, watched, words):
    """A live session (its event log on when ``watched``: every first run the Python path's)
    and ``seq``, a LoD input of ``words``' rows in sequences of 2 and 3."""
    with live(name) as s:
        if watched:
            s.watch_memory(_WATCHER)
        yield s, fluid.layers.data(name="seq", shape=[2], dtype="float32", lod_level=1,
                                   value=fluid.create_lod_tensor(words, [[2, 3]],
                                                                 fluid.CPUPlace()))


def _build(name):
    with live(name) as s:
        x = fluid.layers.data(name="x", shape=[3], dtype="float32", value=X)
        h = fluid.layers.fc(input=x, size=4, act="relu")
        y = fluid.layers.fc(input=h, size=1)
        label = fluid.layers.data(name="label", shape=[1], dtype="float32",
                                  value=np.ones((2, 1), "float32"))
        loss = fluid.layers.mean(fluid.layers.square_error_cost(input=y, label=label))
    return s, x, h, y, label, loss


def test_appended_ops_run_at_once_with_values(session_name):
    s, x, h, y, label, loss = _build(session_name)
    assert np.array_equal(x.numpy(), X)
    w = s.scope.find_var("fc_0.w_0").value.numpy()
    b = s.scope.find_var("fc_0.b_0").value.numpy()
    np.testing.assert_allclose(h.numpy(), np.maximum(X @ w + b, 0), rtol=1e-6)
    assert loss.numpy().shape in ((), (1,))
    assert "value=" in repr(y) and y.name in repr(y)
    assert y.lod() == []
    assert s.stats["ops_run"] == len(s.program.global_block().ops)


def test_each_live_op_remembers_how_long_it_ran(session_name):
    s, *_ = _build(session_name)
    ops = s.program.global_block().ops
    assert all(s.runner.last_run[op] > 0 for op in ops)  # the startup ops' runs too
    assert {op.type for op in s.runner.last_run} - {op.type for op in ops} == {
        "uniform_random", "fill_constant"}


def test_ops_record_user_source_line(session_name):
    with live(session_name) as s:
        x = fluid.layers.data(name="x", shape=[3], dtype="float32", value=X)
        fluid.layers.scale(x, scale=2.0)  # the line recorded
    op = s.program.global_block().ops[-1]
    assert op.source[0] == __file__ and "fluid.layers.scale(x, scale=2.0)" in op.source[2]


def test_live_program_run_whole_gives_the_live_values(session_name):
    s, x, h, y, label, loss = _build(session_name)
    exe = fluid.Executor(fluid.CPUPlace())
    got_h, got_loss = exe.run(s.program, feed={"x": X, "label": np.ones((2, 1), "float32")},
                              fetch_list=[h, loss], scope=s.scope)
    np.testing.assert_allclose(got_h, h.numpy(), rtol=1e-6)
    np.testing.assert_allclose(got_loss, loss.numpy(), rtol=1e-6)


def test_bad_shape_rolls_back_and_names_the_line(session_name):
    s, x, h, y, label, loss = _build(session_name)
    n_ops = len(s.program.global_block().ops)
    names = set(s.program.global_block().vars)
    startup_ops = len(s.startup_program.global_block().ops)
    holders = {n: hd.value for n, hd in s.scope.vars.items()}
    with pytest.raises(InvalidArgument) as err:
        with live(session_name):
            z = fluid.layers.fc(input=x, size=5)  # new parameters, run at once
            fluid.layers.elementwise_add(z, h)  # [-1, 5] + [-1, 4]
    message = str(err.value)
    assert "elementwise_add" in message and "[-1, 5]" in message and "[-1, 4]" in message
    assert "fluid.layers.elementwise_add(z, h)" in message
    assert len(s.program.global_block().ops) == n_ops
    assert set(s.program.global_block().vars) == names
    assert len(s.startup_program.global_block().ops) == startup_ops
    assert {n: hd.value for n, hd in s.scope.vars.items()} == holders
    with live(session_name):  # names restored: the next fc is fc_2 again, as if nothing ran
        z = fluid.layers.fc(input=x, size=5)
    assert z.name.startswith("fc_2.")


def test_refeed_reruns_exactly_the_downstream_ops(session_name):
    with live(session_name) as s:
        x = fluid.layers.data(name="x", shape=[3], dtype="float32", value=X)
        other = fluid.layers.data(name="o", shape=[3], dtype="float32", value=X)
        a = fluid.layers.scale(x, scale=2.0)
        b = fluid.layers.relu(a)
        c = fluid.layers.scale(other, scale=3.0)  # not downstream of x
        d = fluid.layers.elementwise_add(b, c)
    before = s.stats["ops_run"]
    c_value = c.value
    new = -np.ones((2, 3), "float32")
    rerun = feed(x, new)
    assert [op.type for op in rerun] == ["scale", "relu", "elementwise_add"]
    assert s.stats["ops_run"] - before == 3
    assert c.value is c_value  # untouched
    np.testing.assert_allclose(d.numpy(), np.maximum(2 * new, 0) + 3 * X)
    assert len(feed(d, np.zeros((2, 3), "float32"))) == 0


def test_an_op_keeps_a_bound_step_once_it_runs_a_second_time(session_name):
    """Most live ops run once: a plain one-output op's first run keeps nothing but its time.
    An op that runs again (a re-feed) is bound then, and its step is kept for the runs
    after."""
    with live(session_name) as s:
        x = fluid.layers.data(name="x", shape=[3], dtype="float32", value=X)
        a = fluid.layers.scale(x, scale=2.0)
        b = fluid.layers.elementwise_add(a, x)
    scale, add = s.program.global_block().ops[-2:]
    assert add not in s.runner.steps
    assert s.runner.last_run[add] > 0
    add_kernel = s.runner.bound_kernel(add)
    assert add_kernel is not None  # a view can still say which kernel ran
    feed(x, 2 * X)
    assert {scale, add} <= set(s.runner.steps)
    assert s.runner.bound_kernel(add) is add_kernel
    kept = s.runner.steps[add]
    feed(x, 3 * X)
    assert s.runner.steps[add] is kept  # bound once, run again
    np.testing.assert_allclose(b.numpy(), 9 * X, rtol=1e-6)


def test_any_op_s_first_run_keeps_nothing_and_computes_what_a_run_does(session_name):
    """An op the plain step does not fit (a LoD-aware kernel with an absent optional input,
    several outputs, a LoD to carry) runs its first time through the executor's general
    step over its holders, keeping no step: the values equal a whole run of the program,
    and a re-feed binds each op then (its host step where it has one)."""
    words = np.arange(10, dtype="float32").reshape(5, 2)
    with live(session_name) as s:
        x = fluid.layers.data(name="x", shape=[3], dtype="float32", value=X)
        seq = fluid.layers.data(name="seq", shape=[2], dtype="float32", lod_level=1,
                                value=fluid.create_lod_tensor(words, [[2, 3]],
                                                              fluid.CPUPlace()))
        scaled = x * 0.5 + 1.0  # scale, twice: LoD-aware, its plain kernel's case
        reshaped = fluid.layers.reshape(scaled, [3, 2])  # reshape2: Out and XShape
        values, indices = fluid.layers.topk(x, k=2)  # two outputs of their own
        pooled = fluid.layers.sequence_pool(seq * 2.0, "sum")  # MaxIndex absent, LoD read
        product = fluid.layers.matmul(x, reshaped)
    ops = s.program.global_block().ops
    assert not set(ops) & set(s.runner.steps)  # each ran once, nothing kept
    assert all(s.runner.last_run[op] >= 0 and s.runner.bound_kernel(op) is not None
               for op in ops)
    np.testing.assert_allclose(scaled.numpy(), X * 0.5 + 1.0, rtol=1e-6)
    np.testing.assert_allclose(reshaped.numpy(), (X * 0.5 + 1.0).reshape(3, 2), rtol=1e-6)
    np.testing.assert_allclose(values.numpy(), -np.sort(-X, axis=1)[:, :2], rtol=1e-6)
    np.testing.assert_array_equal(indices.numpy(), np.argsort(-X, axis=1)[:, :2])
    np.testing.assert_allclose(pooled.numpy(), [[4, 8], [36, 42]], rtol=1e-6)
    np.testing.assert_allclose(product.numpy(), X @ (X * 0.5 + 1.0).reshape(3, 2), rtol=1e-6)
    exe = fluid.Executor(fluid.CPUPlace())
    fetched = exe.run(s.program, feed={"x": X, "seq": s.scope.var("seq").value},
                      fetch_list=[scaled, reshaped, values, indices, pooled, product],
                      scope=fluid.Scope())
    for live_value, run_value in zip((scaled, reshaped, values, indices, pooled, product),
                                     fetched):
        np.testing.assert_array_equal(live_value.numpy(), run_value)
    rerun = feed(x, 2 * X)
    assert len(rerun) == 5 and set(rerun) <= set(s.runner.steps)  # bound on a second run
    np.testing.assert_allclose(product.numpy(), 2 * X @ (X + 1.0).reshape(3, 2), rtol=1e-6)


def test_formula_ops_of_one_type_each_run_with_their_own_attributes(session_name):
    """A formula op's first run borrows its type's kernel context, pointed at the op: ops
    of that type one after another each broadcast by their own axis, and an op bound for
    later runs keeps a context of its own."""
    column = np.array([1.0, 2.0], "float32")
    row = np.array([10.0, 20.0, 30.0], "float32")
    with live(session_name) as s:
        x = fluid.layers.data(name="x", shape=[3], dtype="float32", value=X)
        by_column = fluid.layers.data(name="c", shape=[2], dtype="float32",
                                      append_batch_size=False, value=column)
        by_row = fluid.layers.data(name="r", shape=[3], dtype="float32",
                                   append_batch_size=False, value=row)
        down = fluid.layers.elementwise_add(x, by_column, axis=0)
        across = fluid.layers.elementwise_add(x, by_row)
        again = fluid.layers.elementwise_add(down, by_column, axis=0)
    np.testing.assert_allclose(down.numpy(), X + column[:, None])
    np.testing.assert_allclose(across.numpy(), X + row)
    np.testing.assert_allclose(again.numpy(), X + 2 * column[:, None])
    first_add = s.program.global_block().ops[-3]
    assert first_add.attrs["axis"] == 0
    feed(x, 2 * X)  # all three run again, now through bound steps of their own
    step_context = s.runner.steps[first_add][0].args[2]
    assert step_context.op is first_add and step_context.attrs is first_add.attrs
    np.testing.assert_allclose(down.numpy(), 2 * X + column[:, None])
    np.testing.assert_allclose(across.numpy(), 2 * X + row)
    np.testing.assert_allclose(again.numpy(), 2 * X + 2 * column[:, None])


def test_a_formula_ops_first_run_allocates_from_the_arena_and_gives_numpy_back_its_own(
        session_name):
    """A formula op's first run (one C call) lets NumPy allocate from the session's arena
    for its kernel only: its value lies in an arena block, and NumPy's allocator is the one
    it was after the op, also after a kernel that failed; an op taken back after a failed
    run leaves no holder in the scope."""
    try:
        from numpy._core.multiarray import get_handler_name
    except ImportError:  # NumPy 1.x
        from numpy.core.multiarray import get_handler_name
    from fluid_nb.memory.events import data_address
    before = get_handler_name()
    with live(session_name) as s:
        x = fluid.layers.data(name="x", shape=[-1, 3], dtype="float32", value=X)
        wide = fluid.layers.data(name="w", shape=[-1, 3], dtype="float32",
                                 value=np.ones((4, 3), "float32"))
        total = fluid.layers.elementwise_add(x, x)
        assert get_handler_name() == before
        address = data_address(total.numpy())
        blocks = fluid.memory.arena_of(fluid.CPUPlace()).used_blocks()
        assert any(start <= address < start + size for start, size in blocks)
        assert s.runner.last_run[s.program.global_block().ops[-1]] > 0
        with pytest.raises(InvalidArgument, match="elementwise_add"):
            fluid.layers.elementwise_add(x, wide)  # 2 rows and 4: NumPy refuses to add
        assert get_handler_name() == before
        held = set(s.scope.vars)
        with pytest.raises(InvalidArgument, match="elementwise_add"):  # raw: no layer's undo
            s.program.global_block().append_op(type="elementwise_add",
                                               inputs={"X": x, "Y": wide},
                                               outputs={"Out": "raw_out"})
        assert set(s.scope.vars) == held  # no holder left for the op taken back
        assert get_handler_name() == before
    np.testing.assert_array_equal(total.numpy(), 2 * X)


def test_a_formula_ops_first_run_gives_what_the_general_path_gives(session_name,
                                                                    monkeypatch):
    """The C first run and the Python path it stands for (taken when the arena's event log
    is on) store the same values and LoD: a LoD input's LoD carried to the output, an axis
    broadcast, a unary op."""
    words = np.arange(10, dtype="float32").reshape(5, 2) - 4
    column = np.array([1.0, -2.0], "float32")

    def cell(name, watched):
        with _lod_cell(name, watched, words) as (s, seq):
            by_column = fluid.layers.data(name="c", shape=[2], dtype="float32",
                                          append_batch_size=False, value=column)
            outs = [fluid.layers.relu(seq), fluid.layers.elementwise_add(seq, seq),
                    fluid.layers.elementwise_mul(seq, by_column, axis=1),
                    fluid.layers.tanh(seq)]
            return [(out.numpy(), out.lod()) for out in outs]

    from fluid_nb.exec.steps import first_run
    from fluid_nb.live import runner
    calls = []
    monkeypatch.setattr(runner, "first_run",
                        lambda *args: calls.append(args[0].type) or first_run(*args))
    lean = cell(session_name, False)
    assert calls == ["relu", "elementwise_add", "elementwise_mul", "tanh"]
    general = cell(session_name + "_watched", True)
    assert len(calls) == 4  # the event log on: none of these through the C call
    for (value, lod), (expected, expected_lod) in zip(lean, general):
        np.testing.assert_array_equal(value, expected)
        assert lod == expected_lod == [[0, 2, 5]]
    np.testing.assert_array_equal(lean[2][0], words * column)


def test_a_plain_kernels_first_run_is_the_kernels_meaning(session_name, monkeypatch):
    """A plain kernel (scale's dense case, LoD-aware otherwise; softmax's kernel) runs a live
    op's first run in the one C call, and stores what the op's kernel stores: the LoD
    carried, an integer tensor scaled by int(scale), a scale of 1 sharing its input's
    values, softmax along its axis; the kernel's own
    cases (a ScaleTensor, a SelectedRows X) go the general way, and so does every first run
    while the arena's event log is on."""
    from fluid_nb.exec.steps import first_run
    from fluid_nb.live import runner
    from fluid_nb.tensor.tensor import LoDTensor, SelectedRows
    words = np.arange(10, dtype="float32").reshape(5, 2) - 4
    calls = []

    def counted(*args):
        took = first_run(*args)
        calls.append((args[0].type, took is not None))
        return took
    monkeypatch.setattr(runner, "first_run", counted)

    def cell(name, watched):
        with _lod_cell(name, watched, words) as (s, seq):
            counts = fluid.layers.data(name="n", shape=[3], dtype="int64",
                                       value=np.array([[1, -2, 7]], "int64"))
            factor = fluid.layers.data(name="f", shape=[1], dtype="float32",
                                       append_batch_size=False,
                                       value=np.array([3.0], "float32"))
            block = s.program.global_block()
            rows = block.create_var(name="rows", shape=[5, 2], dtype="float32",
                                    type=fluid.core.VarDesc.VarType.SELECTED_ROWS)
            s.scope.var("rows").value = SelectedRows([4, 0], 5, LoDTensor(words[:2].copy()))
            outs = [seq * 0.5 - 1.0, counts * 2.5,
                    fluid.layers.scale(seq, 2.0, bias=1.0, bias_after_scale=False),
                    fluid.layers.scale(seq, 1.0), fluid.layers.scale(seq, factor),
                    fluid.layers.softmax(seq), fluid.layers.softmax(seq, axis=0)]
            sparse = fluid.layers.scale(rows, 3.0)
            assert sparse.type == fluid.core.VarDesc.VarType.SELECTED_ROWS
            values = [(out.numpy(), out.lod()) for out in outs]
            held = s.scope.var(sparse.name).value
            return values, (held.rows(), np.asarray(held.get_tensor()))

    lean, lean_sparse = cell(session_name, False)
    # (a data variable's first reader goes the general way, which feeds its sample value)
    assert calls == [("scale", taken) for taken in (False, True, False, True, True, False)] \
        + [("softmax", True)] * 2 + [("scale", False)]  # a ScaleTensor, a SelectedRows
    general, general_sparse = cell(session_name + "_watched", True)
    assert len(calls) == 9  # the event log on: none through the C call
    for (value, lod), (expected, expected_lod) in zip(lean, general):
        np.testing.assert_array_equal(value, expected)
        assert value.dtype == expected.dtype and lod == expected_lod
    np.testing.assert_array_equal(lean[0][0], words * 0.5 - 1.0)
    assert lean[0][1] == [[0, 2, 5]]
    np.testing.assert_array_equal(lean[1][0], [[2, -4, 14]])  # int(2.5): Paddle's cast
    assert lean[1][0].dtype == np.int64
    np.testing.assert_array_equal(lean[2][0], (words + 1.0) * 2.0)
    np.testing.assert_array_equal(lean[3][0], words)
    np.testing.assert_array_equal(lean[4][0], words * 3.0)
    exp = np.exp(words - words.max(axis=1, keepdims=True))
    np.testing.assert_allclose(lean[5][0], exp / exp.sum(axis=1, keepdims=True), rtol=1e-6)
    assert lean[5][1] == [[0, 2, 5]]  # softmax shares X's LoD with Out
    exp = np.exp(words - words.max(axis=0))
    np.testing.assert_allclose(lean[6][0], exp / exp.sum(axis=0), rtol=1e-6)
    assert lean_sparse[0] == general_sparse[0] == [4, 0]
    np.testing.assert_array_equal(lean_sparse[1], words[:2] * 3.0)


def test_a_first_run_without_its_holders_goes_the_general_way(session_name):
    """``steps.first_run`` answers None where a first run needs more than it does: an input
    with no value yet (a data variable's sample is fed first), an output bound to no
    variable; a plan that is not one is a TypeError."""
    from fluid_nb.exec.steps import first_run
    with live(session_name) as s:
        x = fluid.layers.data(name="x", shape=[3], dtype="float32", value=X)
        doubled = x + x
    op = s.program.global_block().ops[-1]
    plan = s.runner._first_plans[op.type]
    values = {name: holder for name, holder in s.scope.vars.items()
              if name not in ("x", doubled.name)}
    assert first_run(op, plan, values, lambda capsule: None, None) is None
    assert doubled.name not in values  # nothing made for an op that did not run
    op.outputs = {"Out": ("@EMPTY@",)}
    assert first_run(op, plan, dict(s.scope.vars), lambda capsule: None, None) is None
    with pytest.raises(TypeError, match="plan"):
        first_run(op, plan[:4], dict(s.scope.vars), lambda capsule: None, None)
    with live(session_name):  # a data variable given its value only now: fed, then run
        late = fluid.layers.data(name="late", shape=[3], dtype="float32")
        fluid.feed(late, X)
        np.testing.assert_array_equal((late + late).numpy(), 2 * X)


def test_a_reset_lets_the_old_program_and_its_ops_go(session_name):
    """Nothing the runner keeps between runs (bound steps, times, the formula ops' shared
    contexts) holds on to the program a reset replaced."""
    import gc
    import weakref
    with live(session_name) as s:
        x = fluid.layers.data(name="x", shape=[3], dtype="float32", value=X)
        fluid.layers.relu(fluid.layers.elementwise_add(x, x))
    old_program = weakref.ref(s.program)
    old_op = weakref.ref(s.program.global_block().ops[-1])
    del x
    s.reset()
    gc.collect()
    assert old_op() is None and old_program() is None


def test_a_rolled_back_cell_leaves_its_ops_to_the_collector(session_name):
    import gc
    import weakref
    with live(session_name) as s:
        x = fluid.layers.data(name="x", shape=[3], dtype="float32", value=X)
    with pytest.raises(RuntimeError, match="the cell fails"):
        with live(session_name):
            fluid.layers.elementwise_add(x, x)
            added = weakref.ref(s.program.global_block().ops[-1])
            raise RuntimeError("the cell fails")
    gc.collect()
    assert added() is None
    assert [op.type for op in s.program.global_block().ops] == []


def test_minimize_records_updates_and_live_step_applies_them(session_name):
    s, x, h, y, label, loss = _build(session_name)
    with live(session_name):
        fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    block = s.program.global_block()
    updates = [op for op in block.ops if op.attrs.get("op_role", 0) & 2]
    assert updates and all(op.type == "sgd" for op in updates) and s.update_ops == updates
    w_before = s.scope.find_var("fc_0.w_0").value.numpy().copy()
    grad = s.scope.find_var("fc_0.w_0@GRAD").value.numpy()  # backward ran at once
    assert grad.shape == w_before.shape
    assert np.array_equal(s.scope.find_var("fc_0.w_0").value.numpy(), w_before)
    loss_before = float(loss.numpy())
    live_step(s)
    np.testing.assert_allclose(s.scope.find_var("fc_0.w_0").value.numpy(),
                               w_before - 0.1 * grad, rtol=1e-6)
    assert float(loss.numpy()) < loss_before  # forward refreshed after the step
    exe = fluid.Executor(fluid.CPUPlace())  # the ordinary loop, same scope
    feed_ = {"x": X, "label": np.ones((2, 1), "float32")}
    losses = [float(exe.run(s.program, feed=feed_, fetch_list=[loss], scope=s.scope)[0])
              for _ in range(5)]
    assert losses[-1] < losses[0]


def test_parameters_keep_values_across_cells(session_name):
    s, x, h, y, label, loss = _build(session_name)
    w = s.scope.find_var("fc_0.w_0").value
    with live(session_name):
        fluid.layers.fc(input=h, size=2)
    assert s.scope.find_var("fc_0.w_0").value is w


def test_record_only_defers_running(session_name):
    with live(session_name, record_only=True) as s:
        x = fluid.layers.data(name="x", shape=[3], dtype="float32", value=X)
        a = fluid.layers.scale(x, scale=2.0)
    assert s.stats["ops_run"] == 0 and s.scope.find_var(a.name) is None
    np.testing.assert_allclose(a.numpy(), 2 * X)  # asking for a value catches up
    assert s.stats["ops_run"] == 1


def test_data_without_value_says_how_to_give_one(session_name):
    from fluid_nb.errors import PreconditionNotMet
    with pytest.raises(PreconditionNotMet, match="fluid.feed"):
        with live(session_name):
            x = fluid.layers.data(name="x", shape=[3], dtype="float32")
            fluid.layers.scale(x, scale=2.0)


def test_enable_disable_and_default_session():
    s = enable_live("enable_disable")
    try:
        assert live_session() is s and fluid.default_main_program() is s.program
        assert s.program._append_hook is not None
    finally:
        disable_live()
    assert s.program._append_hook is None and fluid.default_main_program() is not s.program


def test_reset_empties_the_session(session_name):
    s, *_ = _build(session_name)
    s.reset()
    assert not s.program.global_block().ops and not s.scope.vars


def test_display_renderers_show_state_without_changing_it(session_name):
    from fluid_nb.notebook import display
    s, x, h, y, label, loss = _build(session_name)
    version = s.program._version
    page = s.program._repr_html_()
    assert "mul" in page and "fc_0.w_0" in page and "digraph" in page
    bundle = s.program._repr_mimebundle_()
    assert "text/vnd.graphviz" in bundle and "->" in bundle["text/vnd.graphviz"]
    assert "fc_0.w_0" in s.scope._repr_html_()
    assert "LoDTensor" in h.value._repr_html_()
    assert "Variable" in h._repr_mimebundle_()["text/html"]
    assert s.program._version == version
    assert "relu" in display.op_text(s.program.global_block().ops[2])


def test_an_unnamed_program_session_resumes_and_goes_with_its_program():
    """``live(program=p)`` twice is one session (the first block's values are there in the
    second); when the program is dropped, its session and values go with it."""
    import gc
    import weakref
    main, startup = fluid.Program(), fluid.Program()
    with live(program=main, startup_program=startup) as first:
        c = fluid.layers.fill_constant([2, 2], "float32", 1.5)
    with live(program=main, startup_program=startup) as second:
        d = c * 2.0
    assert second is first
    np.testing.assert_array_equal(d.numpy(), np.full((2, 2), 3.0, "float32"))
    gone = weakref.ref(first)
    del main, startup, first, second, c, d
    gc.collect()
    assert gone() is None


def test_live_scalars_show_the_1_their_fluid_1x_program_declares(session_name):
    """A mean and the learning rate are [1] in a Fluid 1.x program: the scope views, the
    cell report's preview and the program's declarations all say [1], never []."""
    from fluid_nb.notebook import display
    from fluid_nb.viz import scope_model
    from fluid_nb.widgets import ScopeView
    s, *_, loss = _build(session_name)
    with live(session_name):
        fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    block = s.program.global_block()
    assert block.var(loss.name).shape == (1,) and block.var("learning_rate_0").shape == (1,)

    def shapes(model):
        return {v["name"]: v["shape"] for v in model["root"]["vars"]}
    for model in (scope_model(s.scope, program=s.program), ScopeView(s.scope)._model):
        assert shapes(model)[loss.name] == [1] and shapes(model)["learning_rate_0"] == [1]
    assert shapes(scope_model(s.scope))["fc_1.b_0"] == [1]  # (a real [1] needs no program)
    page = display.scope_html(s.scope)  # what `%fluid scope` shows for the live session
    row = page.split(f"<code>{loss.name}</code>", 1)[1].split("</tr>", 1)[0]
    assert "<td>[1]</td>" in row and "<td>[]</td>" not in page
    report = display.CellReport(
        {"main": ([], [block.var(loss.name)], []), "startup": ([], [], [])}, s)
    assert "scalar" not in repr(report) and repr(report).rstrip().endswith(" 1")
