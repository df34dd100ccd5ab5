"""The step of a compiled program as Executor.run makes it again and again: its argument
layout is worked out once, and what the step reads is still what was fed and what the
scope holds now (an array changed in place, another shape, a replaced parameter, a feed
an op overwrites or that shares memory with a parameter)."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument
from fluid_nb.rewriters import native


def _predictor(size=3):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[4], dtype="float32")
        out = fluid.layers.fc(input=x, size=size, act="tanh")
    return main, startup, out


def _compiled(main, startup, feed, fetch):
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    return exe, scope, native.compile(main, feed, fetch, scope=scope)


def _set_weight(main, scope, value):
    """Replace the predictor's weight (its one 2-D parameter) in ``scope`` by ``value``s."""
    weight = next(v.name for v in main.global_block().vars.values() if v.persistable
                  and len(v.shape) == 2)
    scope.find_var(weight).get_tensor().set(np.full((4, 3), value, "float32"),
                                            fluid.CPUPlace())


def _same_as_interpreter(exe, main, program, scope, feed, fetch):
    want = exe.run(main, feed=feed, fetch_list=fetch, scope=scope)
    got = exe.run(program, feed=feed, fetch_list=fetch, scope=scope)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6, atol=1e-7)
    return got


def test_an_array_fed_again_is_read_as_it_is_now():
    main, startup, out = _predictor()
    x = np.random.RandomState(0).rand(5, 4).astype("float32")
    exe, scope, program = _compiled(main, startup, {"x": x}, [out])
    first = _same_as_interpreter(exe, main, program, scope, {"x": x}, [out])
    x *= -2.0  # the same array object, new values
    second = _same_as_interpreter(exe, main, program, scope, {"x": x}, [out])
    assert not np.allclose(first[0], second[0])


def test_other_shapes_and_layouts_take_the_general_path_and_come_back():
    main, startup, out = _predictor()
    rng = np.random.RandomState(1)
    x = rng.rand(5, 4).astype("float32")
    exe, scope, program = _compiled(main, startup, {"x": x}, [out])
    for fed in [x, rng.rand(7, 4).astype("float32"), x, np.asfortranarray(x * 3),
                x[:, ::-1], x.astype("float64"), x]:
        _same_as_interpreter(exe, main, program, scope, {"x": fed}, [out])
    assert len(program._built) == 2  # batch 5 and batch 7


def test_a_fetched_feed_is_the_value_fed():
    main, startup, out = _predictor()
    x = np.random.RandomState(2).rand(5, 4).astype("float32")
    exe, scope, program = _compiled(main, startup, {"x": x}, [out, "x"])
    for _ in range(2):
        got = exe.run(program, feed={"x": x}, fetch_list=[out, "x"], scope=scope)
        np.testing.assert_array_equal(got[1], x)
        assert not np.shares_memory(got[1], x)


def test_a_parameter_replaced_in_the_scope_is_read_by_the_next_step():
    main, startup, out = _predictor()
    x = np.random.RandomState(3).rand(5, 4).astype("float32")
    exe, scope, program = _compiled(main, startup, {"x": x}, [out])
    before = _same_as_interpreter(exe, main, program, scope, {"x": x}, [out])
    _set_weight(main, scope, 0.5)
    after = _same_as_interpreter(exe, main, program, scope, {"x": x}, [out])
    assert not np.allclose(before[0], after[0])


def test_a_feed_an_op_overwrites_leaves_the_callers_array_as_it_was():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[4], dtype="float32")
        fluid.layers.assign(fluid.layers.scale(x, scale=2.0), output=x)
        out = fluid.layers.scale(x, scale=1.0)
    fed = np.arange(8, dtype="float32").reshape(2, 4)
    kept = fed.copy()
    exe, scope, program = _compiled(main, startup, {"x": fed}, [out])
    for _ in range(3):
        got = exe.run(program, feed={"x": fed}, fetch_list=[out], scope=scope)
        np.testing.assert_array_equal(got[0], kept * 2)
        np.testing.assert_array_equal(fed, kept)


def test_a_feed_sharing_memory_with_an_updated_parameter_is_read_as_fed():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 4
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[1], dtype="float32")
        predict = fluid.layers.fc(input=x, size=1, bias_attr=False)
        loss = fluid.layers.mean(fluid.layers.square(predict))
        fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    weight = main.global_block().all_parameters()[0].name
    exe, scope, program = _compiled(main, startup, {"x": np.ones((1, 1), "float32")},
                                    [loss, "x"])
    exe.run(program, feed={"x": np.ones((1, 1), "float32")}, fetch_list=[loss, "x"],
            scope=scope)
    for _ in range(2):
        w = scope.find_var(weight).get_tensor().array  # what SGD updates in place
        start = float(w[0, 0])
        loss_value, fetched = exe.run(program, feed={"x": w}, fetch_list=[loss, "x"],
                                      scope=scope)
        # the step read x = w as fed: loss = (w * w)^2, and x fetched is w before the step
        np.testing.assert_allclose(float(loss_value), start ** 4, rtol=1e-6)
        np.testing.assert_allclose(float(fetched), start, rtol=1e-6)
        assert float(scope.find_var(weight).get_tensor().array[0, 0]) != start


def test_a_scope_without_the_parameters_is_refused_by_name_on_every_step():
    main, startup, out = _predictor()
    x = np.random.RandomState(4).rand(5, 4).astype("float32")
    exe, scope, program = _compiled(main, startup, {"x": x}, [out])
    empty = fluid.Scope()
    for name in scope.local_var_names():
        empty.var(name).get_tensor()  # every holder there, each with a tensor of no data
    for _ in range(2):
        with pytest.raises(fluid.errors.NotFound, match="run the startup program first"):
            exe.run(program, feed={"x": x}, fetch_list=[out], scope=empty)
    exe.run(program, feed={"x": x}, fetch_list=[out], scope=scope)  # the layout is bound
    with pytest.raises(fluid.errors.NotFound, match="run the startup program first"):
        exe.run(program, feed={"x": x}, fetch_list=[out], scope=empty)


def test_a_step_through_the_executor_allocates_what_it_returns_in_the_host_arena():
    # Executor.run hands a compiled program its step directly, with NumPy still allocating
    # from the place's arena: the fetched arrays are blocks of it, as an interpreted run's
    main, startup, out = _predictor()
    x = np.random.RandomState(5).rand(5, 4).astype("float32")
    exe, scope, program = _compiled(main, startup, {"x": x}, [out])
    place = fluid.CPUPlace()
    for _ in range(2):  # the general path's step, then the bound one
        got = exe.run(program, feed={"x": x}, fetch_list=[out], scope=scope)
        address = got[0].__array_interface__["data"][0]
        used = fluid.memory.arena_of(place).used_blocks()
        assert any(start <= address < start + size for start, size in used), \
            "the fetched array lies outside the host arena"


def test_a_compiled_program_on_another_place_is_refused_by_the_executor():
    main, startup, out = _predictor()
    x = np.random.RandomState(6).rand(5, 4).astype("float32")
    _, scope, program = _compiled(main, startup, {"x": x}, [out])
    program.target = "cuda"  # as compiled for a GPU: a CPUPlace executor cannot run it
    with pytest.raises(InvalidArgument, match="a CUDAPlace"):
        fluid.Executor(fluid.CPUPlace()).run(program, feed={"x": x}, fetch_list=[out],
                                             scope=scope)


def test_two_fetch_lists_taking_turns_each_read_the_array_fed_to_them():
    # both bound calls point the one feed slot of the build at their own array; a step
    # whose array the slot no longer points at points it back before the native call
    main, startup, out = _predictor()
    rng = np.random.RandomState(4)
    a, b = rng.rand(5, 4).astype("float32"), rng.rand(5, 4).astype("float32")
    exe, scope, program = _compiled(main, startup, {"x": a}, [out])
    for _ in range(3):
        got_a = _same_as_interpreter(exe, main, program, scope, {"x": a}, [out])
        got_b = _same_as_interpreter(exe, main, program, scope, {"x": b}, [out, "x"])
        np.testing.assert_array_equal(got_b[1], b)
    assert not np.allclose(got_a[0], got_b[0])


def test_an_array_fed_again_after_its_shape_was_set_in_place_takes_the_general_path():
    main, startup, out = _predictor()
    x = np.random.RandomState(5).rand(6, 4).astype("float32")
    exe, scope, program = _compiled(main, startup, {"x": x}, [out])
    _same_as_interpreter(exe, main, program, scope, {"x": x}, [out])
    x.shape = (3, 8)  # the same array object: another shape, the step refuses it
    with pytest.raises(InvalidArgument, match="x"):
        exe.run(program, feed={"x": x}, fetch_list=[out], scope=scope)
    x.shape = (6, 4)
    _same_as_interpreter(exe, main, program, scope, {"x": x}, [out])
    x.shape = (12, 2)
    with pytest.raises(InvalidArgument, match="x"):
        exe.run(program, feed={"x": x}, fetch_list=[out], scope=scope)


def test_two_scopes_taking_turns_each_give_the_step_their_parameters():
    main, startup, out = _predictor()
    x = np.random.RandomState(6).rand(5, 4).astype("float32")
    exe, scope, program = _compiled(main, startup, {"x": x}, [out])
    other = fluid.Scope()
    exe.run(startup, scope=other)
    _set_weight(main, other, -0.25)
    fetch = [out]  # one list object for every step
    for _ in range(2):
        mine = _same_as_interpreter(exe, main, program, scope, {"x": x}, fetch)
        theirs = _same_as_interpreter(exe, main, program, other, {"x": x}, fetch)
        assert not np.allclose(mine[0], theirs[0])


def test_the_usual_step_is_one_call_and_other_arguments_take_the_checked_path(monkeypatch):
    """After a step has bound its layout, the same arguments run as one C call (the Python
    bound call is not asked); arguments that do not fit it (another type, a name for the
    variable, another list) are left to the path that checks and converts them."""
    from fluid_nb.exec.feed_fetch import FetchedArray
    from fluid_nb.rewriters.native.bound_call import BoundCall
    main, startup, out = _predictor()
    rng = np.random.RandomState(7)
    x = rng.rand(5, 4).astype("float32")
    exe, scope, program = _compiled(main, startup, {"x": x}, [out])
    fetch = [out]
    _same_as_interpreter(exe, main, program, scope, {"x": x}, fetch)
    python_steps = []
    python_run = BoundCall.run
    monkeypatch.setattr(BoundCall, "run", lambda self, *args: (
        python_steps.append(args), python_run(self, *args))[1])
    for _ in range(2):
        fresh = rng.rand(5, 4).astype("float32")  # a new array each step, as a reader gives
        got = _same_as_interpreter(exe, main, program, scope, {"x": fresh}, fetch)
        assert type(got[0]) is FetchedArray
    same = _same_as_interpreter(exe, main, program, scope, {"x": x}, fetch)
    assert python_steps == []  # every step so far: the C call
    as_float64 = _same_as_interpreter(exe, main, program, scope,
                                      {"x": x.astype("float64")}, fetch)
    by_name = _same_as_interpreter(exe, main, program, scope, {"x": x}, [out.name])
    np.testing.assert_allclose(as_float64[0], same[0], rtol=1e-6)
    np.testing.assert_allclose(by_name[0], same[0], rtol=1e-6)
    assert len(python_steps) >= 2  # each asked the Python bound call first
    with pytest.raises(fluid.errors.InvalidType, match="Scope"):
        exe.run(program, feed={"x": x}, fetch_list=fetch, scope="not a scope")


def test_a_step_call_not_made_by_its_constructor_refuses_to_run():
    from fluid_nb.rewriters.native import _bound_step
    unmade = _bound_step.BoundStep.__new__(_bound_step.BoundStep)
    with pytest.raises(TypeError, match="before it was made"):
        unmade({}, [], fluid.Scope())
