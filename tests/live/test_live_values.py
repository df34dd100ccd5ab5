"""What a live session keeps: every op and variable it recorded, and the values its user can
still reach. A formula op's output (a pure function of its inputs) that nobody holds is let go
and computed again when it is read, so a long live loop does not keep every value it made."""
import gc

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.live import session as live_session_module

L = fluid.layers


@pytest.fixture
def sweep_every(monkeypatch):
    monkeypatch.setattr(live_session_module, "SWEEP_EVERY", 16)
    return 16


def _live():
    main, startup, scope = fluid.Program(), fluid.Program(), fluid.Scope()
    return main, scope, fluid.live(program=main, startup_program=startup, scope=scope)


def _looks(monkeypatch, session):
    """The number of ops each look for values to let go walks, a list that grows."""
    walked = []
    sweep = session.runner.drop_unreachable
    monkeypatch.setattr(session.runner, "drop_unreachable",
                        lambda ops, block: walked.append(len(ops)) or sweep(ops, block))
    return walked


def test_a_long_live_loop_keeps_the_values_its_user_holds_not_every_one(sweep_every):
    main, scope, session = _live()
    with session as s, fluid.unique_name.guard():
        c = L.fill_constant([4, 4], "float32", 0.0)
        one = L.fill_constant([4, 4], "float32", 1.0)
        held = []
        for i in range(10 * sweep_every):
            c = L.elementwise_add(c, one) if i % 2 else c + one
            if i % 50 == 0:
                held.append(c)
        assert len(main.global_block().ops) == 2 + 10 * sweep_every  # every op recorded
        assert len(scope.vars) < 2 * sweep_every + len(held) + 2  # not every value
        assert len(s.runner.dropped) > 8 * sweep_every - len(held)
        np.testing.assert_array_equal(c.numpy(), np.full((4, 4), 10 * sweep_every))
        for k, var in enumerate(held):  # held values were never let go
            assert scope.find_var(var.name).value is not None
            np.testing.assert_array_equal(var.numpy(), np.full((4, 4), 50 * k + 1))


def test_a_long_live_loop_leaves_the_cyclic_collector_two_records_per_op(sweep_every):
    """An op keeps its arguments as tuples of names and a let-go value is remembered by name,
    so once collected, what a loop adds for the cyclic collector to walk at every full
    collection is each op and its output variable, not their bookkeeping."""
    main, scope, session = _live()
    with session, fluid.unique_name.guard():
        c = L.fill_constant([2], "float32", 0.0)
        one = L.fill_constant([2], "float32", 1.0)
        for _ in range(sweep_every):
            c = c + one
        gc.collect()
        before = len(gc.get_objects())
        n_ops = 40 * sweep_every
        for i in range(n_ops):
            c = L.elementwise_add(c, one) if i % 2 else c + one
        gc.collect()
        walked = len(gc.get_objects()) - before
        ops = main.global_block().ops
        assert len(ops) == 2 + sweep_every + n_ops
        assert ops[-1].inputs == {"X": (ops[-2].output("Out")[0],), "Y": (one.name,)}
        assert not gc.is_tracked(ops[-1].inputs) and not gc.is_tracked(ops[-1].inputs["X"])
        assert walked < 2.5 * n_ops  # (other objects may go meanwhile: no lower bound)


def test_a_loop_that_keeps_every_value_costs_each_op_a_bounded_number_of_checks(
        sweep_every, monkeypatch):
    """``losses.append(loss)`` in a live loop: every value stays held, and each look for
    values to let go checks the held ones again. The looks grow as far apart as the held
    values are many, so the checks stay linear in the ops (they were quadratic: a look at
    every op once more values were held than ops between two looks)."""
    main, scope, session = _live()
    with session as s, fluid.unique_name.guard():
        checked = _looks(monkeypatch, s)
        c = L.fill_constant([2], "float32", 0.0)
        one = L.fill_constant([2], "float32", 1.0)
        held = []
        n_ops = 30 * sweep_every
        for _ in range(n_ops):
            c = c + one
            held.append(c)
        assert not s.runner.dropped  # every value is held: none let go
        assert 2 <= len(checked) <= 8  # looks double their spacing: 16, 32, 64, ...
        assert sum(checked) <= 3 * n_ops
        np.testing.assert_array_equal(held[100].numpy(), [101.0, 101.0])


def test_a_loop_over_large_values_lets_them_go_as_the_arena_grows(monkeypatch):
    """A loop whose values are large looks for values to let go when the host arena has
    grown by SWEEP_BYTES (weighed every SWEEP_WEIGH_EVERY ops), not only every SWEEP_EVERY
    ops: it holds about SWEEP_BYTES of them, not a thousand (4 GB of 1000 x 1000 floats).
    Such a look walks only the ops run since the last one, so the values a user keeps
    cost it nothing; the values the user holds stay, and the rest read back right."""
    monkeypatch.setattr(live_session_module, "SWEEP_BYTES", 1 << 20)  # 16 of these values
    main, scope, session = _live()
    with session as s, fluid.unique_name.guard():
        looked = _looks(monkeypatch, s)
        c = L.fill_constant([128, 128], "float32", 0.0)  # 64 KiB a value
        held = []
        for i in range(300):
            c = c * 0.5 + 1.0
            if i % 100 == 0:
                held.append(c)
        assert len(scope.vars) < 2 * 16 + 2 * live_session_module.SWEEP_WEIGH_EVERY + 8
        assert looked and max(looked) <= 16 + 2 * live_session_module.SWEEP_WEIGH_EVERY
        assert all(scope.find_var(v.name).value is not None for v in held)
        np.testing.assert_allclose(c.numpy(), np.full((128, 128), 2 - 0.5 ** 300))
        np.testing.assert_allclose(held[1].numpy(), np.full((128, 128), 2 - 0.5 ** 101))


def test_a_chain_appended_by_name_never_computes_a_value_again(sweep_every, monkeypatch):
    """Ops appended by name (``block.append_op``, as Paddle's own tests do) leave no
    Variable a user holds, so a look lets go of every value but the one the last op wrote,
    which the next op reads: a chain across many looks computes nothing twice (letting
    the last one go had the next op compute it again from the values before it, all let
    go: the whole chain again at every look)."""
    main, scope, session = _live()
    with session as s, fluid.unique_name.guard():
        block = main.global_block()
        L.fill_constant([2], "float32", 1.0, out=block.create_var(
            name="x0", shape=[2], dtype="float32"))
        L.fill_constant([2], "float32", 0.5, out=block.create_var(
            name="half", shape=[2], dtype="float32"))
        computed = []
        again = s.runner.compute_dropped
        monkeypatch.setattr(s.runner, "compute_dropped",
                            lambda name: computed.append(name) or again(name))
        n_ops = 5 * sweep_every
        for i in range(n_ops):
            block.append_op(type="elementwise_add", inputs={"X": f"x{i}", "Y": "half"},
                            outputs={"Out": f"x{i + 1}"})
        assert computed == [] and len(s.runner.dropped) >= 3 * sweep_every
        np.testing.assert_array_equal(scope.find_var(f"x{n_ops}").get_tensor().numpy(),
                                      [1.0 + 0.5 * n_ops] * 2)


def test_a_loop_over_64x64_values_holds_about_a_cache_of_them():
    """SWEEP_BYTES is about a core's L2 cache: a loop over 64 x 64 values (16 KiB each)
    lets them go once a megabyte of them is made, long before the look every SWEEP_EVERY
    ops, so its arena hands out again blocks the cache still holds."""
    assert live_session_module.SWEEP_BYTES == 1 << 20
    main, scope, session = _live()
    with session as s, fluid.unique_name.guard():
        c = L.fill_constant([64, 64], "float32", 0.0)
        one = L.fill_constant([64, 64], "float32", 1.0)
        for _ in range(400):
            c = c + one
        per_megabyte = (1 << 20) // (64 * 64 * 4)
        assert len(scope.vars) <= per_megabyte + 2 * live_session_module.SWEEP_WEIGH_EVERY + 4
        assert len(s.runner.dropped) >= 400 - len(scope.vars)
        np.testing.assert_array_equal(c.numpy(), np.full((64, 64), 400.0))


def test_a_loop_that_keeps_its_large_values_looks_less_often_as_it_keeps_more(monkeypatch):
    """A loop over large values that keeps every one: the arena grows at every op, and each
    look it makes due checks again the ops since the last full look, so the looks grow
    apart as the values kept grow (each op checked a bounded number of times, not once per
    look: a look every SWEEP_BYTES would check them quadratically often)."""
    monkeypatch.setattr(live_session_module, "SWEEP_BYTES", 64 << 10)  # one value's bytes
    main, scope, session = _live()
    with session as s, fluid.unique_name.guard():
        checked = _looks(monkeypatch, s)
        c = L.fill_constant([128, 128], "float32", 0.0)  # 64 KiB a value
        held, n_ops = [], 600
        for _ in range(n_ops):
            c = c + 1.0
            held.append(c)
        assert len(checked) >= 4 and sum(checked) <= 3 * n_ops
        assert all(scope.find_var(v.name).value is not None for v in held[::50])
        np.testing.assert_array_equal(held[99].numpy(), np.full((128, 128), 100.0))


def test_an_ops_argument_names_and_its_values_holder_are_not_tracked_by_the_collector():
    """An op's arguments (slot -> tuple of names) and its call stack hold no container, so
    they are made untracked: the collector passes over them from the start, instead of
    walking them until its next pass finds them untrackable. So is the scope's holder of
    its output's value (a name and a tensor of an array)."""
    main, scope, session = _live()
    with session, fluid.unique_name.guard():
        c = L.fill_constant([2], "float32", 0.0)
        one = L.fill_constant([2], "float32", 1.0)
        gc.disable()
        try:
            c = c + one
            op = main.global_block().ops[-1]
            for record in (op.inputs, op.outputs, *op.inputs.values(),
                           *op.outputs.values(), op.callstack):
                assert not gc.is_tracked(record), record
            assert gc.is_tracked(op) and gc.is_tracked(main.global_block().var(c.name))
            assert not gc.is_tracked(scope.find_var(c.name))
        finally:
            gc.enable()
        np.testing.assert_array_equal(c.numpy(), [1.0, 1.0])


def test_a_live_program_let_go_is_collected_with_its_values_step_scopes_and_session():
    """A value's holder is left out of the cyclic collector's passes only while it holds a
    tensor: the holder of a while loop's step scopes, which refer back to their scope, is
    walked, so a program nobody holds any more is collected whole, with its scope, the step
    scopes of its loop and its session (ops appended in C, through the Python way, and in
    a loop's sub-block alike)."""
    import weakref
    main, scope, session = _live()
    with session, fluid.unique_name.guard():
        c = L.fill_constant([2, 3], "float32", 1.0)
        for _ in range(5):
            c = c + c
        c = L.fc(L.relu(c), 4, act="tanh")
        i = L.fill_constant([1], "int64", 0)
        limit = L.fill_constant([1], "int64", 3)
        cond = L.less_than(i, limit)
        loop = L.While(cond)
        with loop.block():
            L.increment(i, in_place=True)
            L.less_than(i, limit, cond=cond)
        assert int(i.numpy()[0]) == 3 and c.numpy().shape == (2, 4)
        assert scope.kids  # (the loop's step scopes, held by a holder in scope)
    gone = [weakref.ref(x) for x in (main, main.global_block(), main.block(1), scope,
                                     scope.kids[0], session)]
    del main, scope, session, c, i, limit, cond, loop
    gc.collect()
    assert [ref() for ref in gone] == [None] * len(gone)


def test_a_dropped_value_read_by_name_is_computed_again(sweep_every):
    main, scope, session = _live()
    with session as s, fluid.unique_name.guard():
        c = L.fill_constant([2], "float32", 1.0)
        one = L.fill_constant([2], "float32", 1.0)
        for _ in range(3 * sweep_every):
            c = L.elementwise_mul(c, one) + one  # the k-th sum is k + 2
        sums = [op for op in main.global_block().ops if op.type == "elementwise_add"]
        name = sums[5].output_arg_names[0]
        assert scope.find_var(name) is None and name in s.runner.dropped
        np.testing.assert_array_equal(main.global_block().var(name).numpy(), [7.0, 7.0])
        assert name not in s.runner.dropped and scope.find_var(name) is not None


def test_a_long_chain_of_dropped_values_is_computed_again_in_program_order(monkeypatch):
    """Reading the end of 1,200 values let go in one look runs their ops first to last,
    one after the other (not each asking for its input in turn: that recursion would be
    1,200 deep)."""
    monkeypatch.setattr(live_session_module, "SWEEP_EVERY", 1200)
    main, scope, session = _live()
    with session as s, fluid.unique_name.guard():
        c = L.fill_constant([2], "float32", 0.0)
        one = L.fill_constant([2], "float32", 1.0)
        for _ in range(1300):
            c = c + one
        sums = [op for op in main.global_block().ops if op.type == "elementwise_add"]
        name = sums[1149].output_arg_names[0]
        assert all(op.output_arg_names[0] in s.runner.dropped for op in sums[:1150])
        np.testing.assert_array_equal(main.global_block().var(name).numpy(), [1150.0, 1150.0])


def test_refeeding_runs_through_dropped_values(sweep_every):
    main, scope, session = _live()
    with session, fluid.unique_name.guard():
        x = L.data(name="x", shape=[3], dtype="float32", value=np.ones((1, 3), "float32"))
        c = x
        for _ in range(4 * sweep_every):
            c = L.relu(c) + x
        fluid.feed(x, np.full((1, 3), 2.0, "float32"))
        np.testing.assert_array_equal(c.numpy(), np.full((1, 3), 2.0 * (4 * sweep_every + 1)))


def test_any_op_that_is_a_function_of_its_inputs_has_its_values_let_go(sweep_every):
    """``c * 0.5 + 1`` (scale, a hand-written kernel), a product and a reduction: ops that
    are no formula but a function of their inputs are let go of, and computed again
    (the chain back to what is held) when read."""
    main, scope, session = _live()
    with session as s, fluid.unique_name.guard():
        c = L.fill_constant([2, 2], "float32", 1.0)
        eye = L.assign(np.eye(2, dtype="float32"))
        firsts = []
        for i in range(3 * sweep_every):
            c = L.matmul(c * 0.5 + 1.0, eye)  # scale, then matmul: c -> c / 2 + 1
            if i == 2:
                firsts.append(L.reduce_sum(c))
        kinds = {s.runner.dropped[name].type for name in s.runner.dropped}
        assert {"scale", "matmul"} <= kinds
        assert len(scope.vars) < 2 * 2 * sweep_every + 8
        expected = 1.0
        for _ in range(3):
            expected = expected / 2 + 1
        np.testing.assert_allclose(firsts[0].numpy(), [4 * expected])  # held: kept
        # two scales a round (* 0.5, + 1): the sixth is the third round's + 1
        gone = [op for op in main.global_block().ops if op.type == "scale"][5]
        name = gone.output_arg_names[0]
        assert name in s.runner.dropped and scope.find_var(name) is None
        np.testing.assert_allclose(main.global_block().var(name).numpy(),
                                   np.full((2, 2), expected))


def test_values_of_stateful_ops_and_of_ops_writing_in_place_are_kept(sweep_every):
    """A random draw (a second one would differ), a tensor array (later ops write into
    it) and an op writing its own input are never let go."""
    main, scope, session = _live()
    with session as s, fluid.unique_name.guard():
        x = L.fill_constant([4], "float32", 1.0)
        counter = L.fill_constant([1], "int64", 0)
        array = L.create_array("float32")
        draws = []
        for i in range(2 * sweep_every):
            drawn = L.uniform_random([4], "float32", -1.0, 1.0)
            draws.append(float(drawn.numpy()[0]))
            dropped_out = L.dropout(x, dropout_prob=0.5)
            L.array_write(dropped_out, counter, array=array)
            L.increment(counter, value=1.0, in_place=True)
            del drawn, dropped_out
        assert not {"uniform_random", "dropout", "write_to_array", "increment"} & {
            op.type for op in s.runner.dropped.values()}
        uniform = [op for op in main.global_block().ops if op.type == "uniform_random"]
        assert [float(scope.find_var(op.output_arg_names[0]).value.array[0])
                for op in uniform] == draws
        assert int(counter.numpy()[0]) == 2 * sweep_every


def test_refeeding_again_after_more_values_were_let_go_gives_the_new_values(sweep_every):
    main, scope, session = _live()
    with session, fluid.unique_name.guard():
        x = L.data(name="x", shape=[2], dtype="float32", value=np.ones((1, 2), "float32"))
        c = x
        for _ in range(2 * sweep_every):
            c = L.relu(c) + x  # (k + 1) * x after k rounds
        fluid.feed(x, np.full((1, 2), 2.0, "float32"))  # the reruns bind steps of their own
        d = c
        for _ in range(2 * sweep_every):
            d = L.elementwise_max(d, x)  # more live ops: a sweep lets c's inputs go
        fluid.feed(x, np.full((1, 2), 3.0, "float32"))
        np.testing.assert_array_equal(c.numpy(), np.full((1, 2), 3.0 * (2 * sweep_every + 1)))
        np.testing.assert_array_equal(d.numpy(), c.numpy())


def test_values_read_from_or_written_as_no_dense_tensor_are_kept(sweep_every):
    """An op that is a function of its inputs is let go of only when its inputs and outputs
    are all dense tensors: a read of a tensor array (a later write changes what it read), a
    rank table, and an op writing over its own input keep their values; the dense ops
    around them still let go of theirs."""
    main, scope, session = _live()
    with session as s, fluid.unique_name.guard():
        x = L.data(name="x", shape=[2], dtype="float32", lod_level=1, value=fluid.create_lod_tensor(
            np.arange(6, dtype="float32").reshape(3, 2), [[1, 2]], fluid.CPUPlace()))
        zero = L.fill_constant([1], "int64", 0)
        array = L.create_array("float32")
        L.array_write(L.scale(x, 2.0), zero, array=array)
        for _ in range(2 * sweep_every):
            length = L.array_length(array)  # reads a tensor array
            table = L.lod_rank_table(x)  # writes a rank table
            read = L.array_read(array, zero)  # reads a tensor array
            doubled = L.scale(read, 2.0)  # dense in and out: let go
            del length, table, read, doubled
        kinds = {op.type for op in s.runner.dropped.values()}
        assert "scale" in kinds
        assert not {"array_length", "lod_rank_table", "read_from_array"} & kinds
        for op in main.global_block().ops:
            if op.type in ("array_length", "lod_rank_table", "read_from_array"):
                assert scope.find_var(op.output_arg_names[0]) is not None, op.type
