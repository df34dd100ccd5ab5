"""A run repeated with the same program, scope, feed names and fetch list takes its plan
straight from the cache; it must still behave as a first run: the right scope, the same
typed errors for bad arguments, fetched values that belong to the caller."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidType, NotFound
from fluid_nb.exec import executor as executor_module


def _add_program():
    """z = x + y, x fed ([-1, 3], checked), y a persistable; s = mean(z), declared [1]."""
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="x", shape=(-1, 3), dtype="float32", need_check_feed=True)
    block.create_var(name="y", shape=(3,), dtype="float32", persistable=True)
    block.create_var(name="s", shape=(1,), dtype="float32")
    block.append_op(type="elementwise_add", inputs={"X": "x", "Y": "y"}, outputs={"Out": "z"})
    block.append_op(type="mean", inputs={"X": "z"}, outputs={"Out": "s"})
    return program


def _scope_with_y(y):
    scope = fluid.Scope()
    scope.var("y").get_tensor().set(np.asarray(y, "float32"), fluid.CPUPlace())
    return scope


X = np.ones((2, 3), "float32")


def test_a_repeated_run_in_the_global_scope_reuses_its_plan_and_reads_that_scope():
    program = _add_program()
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(_scope_with_y([1, 2, 3])):
        exe.run(program, feed={"x": X}, fetch_list=["z"])
        built = executor_module.stats["plans_built"]
        (z,) = exe.run(program, feed={"x": X}, fetch_list=["z"])
        assert executor_module.stats["plans_built"] == built
    np.testing.assert_array_equal(z, X + [1, 2, 3])
    with fluid.scope_guard(_scope_with_y([5, 5, 5])):  # another global scope: its own plan
        (z,) = exe.run(program, feed={"x": X}, fetch_list=["z"])
    assert executor_module.stats["plans_built"] == built + 1
    np.testing.assert_array_equal(z, X + 5)


def test_a_run_after_the_program_changed_builds_a_new_plan():
    program, scope = _add_program(), _scope_with_y([1, 2, 3])
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(program, feed={"x": X}, fetch_list=["z"], scope=scope)
    program.global_block().append_op(type="scale", inputs={"X": "z"}, outputs={"Out": "z2"},
                                     attrs={"scale": 2.0})
    built = executor_module.stats["plans_built"]
    z, z2 = exe.run(program, feed={"x": X}, fetch_list=["z", "z2"], scope=scope)
    (z_again,) = exe.run(program, feed={"x": X}, fetch_list=["z"], scope=scope)
    assert executor_module.stats["plans_built"] == built + 2  # two fetch lists, two plans
    np.testing.assert_array_equal(z2, 2 * z)
    np.testing.assert_array_equal(z_again, z)


def test_bad_arguments_after_a_cached_run_raise_as_on_a_first_run():
    program, scope = _add_program(), _scope_with_y([1, 2, 3])
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(program, feed={"x": X}, fetch_list=["z"], scope=scope)
    with pytest.raises(InvalidType, match="feed keys expected variable names"):
        exe.run(program, feed={"x": X, 3: X}, fetch_list=["z"], scope=scope)
    with pytest.raises(InvalidType, match="fetch_list items expected Variable"):
        exe.run(program, feed={"x": X}, fetch_list=["z", 3.5], scope=scope)
    with pytest.raises(NotFound, match="fetch 'nope'"):
        exe.run(program, feed={"x": X}, fetch_list=["nope"], scope=scope)
    with pytest.raises(fluid.errors.InvalidArgument, match=r"feed 'x': shape expected"):
        exe.run(program, feed={"x": np.ones((2, 4), "float32")}, fetch_list=["z"],
                scope=scope)


def test_fetched_arrays_are_the_callers_own():
    program, scope = _add_program(), _scope_with_y([1, 2, 3])
    exe = fluid.Executor(fluid.CPUPlace())
    y_before = np.array(scope.find_var("y").get_tensor())
    first, y_fetched = exe.run(program, feed={"x": X}, fetch_list=["z", "y"], scope=scope)
    y_fetched[:] = 0  # the caller's copy: the persistable is untouched
    first[:] = -1
    second, _ = exe.run(program, feed={"x": X}, fetch_list=["z", "y"], scope=scope)
    np.testing.assert_array_equal(np.array(scope.find_var("y").get_tensor()), y_before)
    np.testing.assert_array_equal(second, X + [1, 2, 3])


def test_a_fetched_scalar_is_the_one_element_array_its_variable_declares():
    program, scope = _add_program(), _scope_with_y([1, 2, 3])
    exe = fluid.Executor(fluid.CPUPlace())
    for _ in range(2):  # the first run and the cached one
        (s,) = exe.run(program, feed={"x": X}, fetch_list=["s"], scope=scope)
        assert s.shape == (1,) and float(s) == pytest.approx(3.0)
        (held,) = scope.find_var("fetch").get_fetch_list()  # the run's fetch list too
        assert np.array(held).shape == (1,)
        (t,) = exe.run(program, feed={"x": X}, fetch_list=["s"], scope=scope,
                       return_numpy=False)
        assert isinstance(t, fluid.LoDTensor) and np.array(t).shape == (1,)


def test_a_fetch_list_given_as_a_tuple_or_a_lone_variable_gives_the_same_values():
    program, scope = _add_program(), _scope_with_y([1, 2, 3])
    exe = fluid.Executor(fluid.CPUPlace())
    z_var = program.global_block().var("z")
    (by_tuple,) = exe.run(program, feed={"x": X}, fetch_list=(z_var,), scope=scope)
    (by_variable,) = exe.run(program, feed={"x": X}, fetch_list=z_var, scope=scope)
    (by_name,) = exe.run(program, feed={"x": X}, fetch_list="z", scope=scope)
    np.testing.assert_array_equal(by_tuple, X + [1, 2, 3])
    np.testing.assert_array_equal(by_variable, by_tuple)
    np.testing.assert_array_equal(by_name, by_tuple)
