"""A tensor handle taken from a scope stays bound to its variable: Fluid updates tensors in
place, and scripts keep ``scope.find_var(name).get_tensor()`` across runs."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument


def _trained_line(scope):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[3], dtype="float32")
        loss = fluid.layers.mean(fluid.layers.fc(input=x, size=1))
        fluid.optimizer.SGD(learning_rate=0.5).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    return exe, main


def test_a_handle_taken_before_a_run_reads_the_run_s_update():
    scope = fluid.Scope()
    exe, main = _trained_line(scope)
    weight = scope.find_var("fc_0.w_0").get_tensor()
    before = np.array(weight).copy()
    exe.run(main, feed={"x": np.ones((2, 3), "float32")}, scope=scope)
    after = np.array(scope.find_var("fc_0.w_0").value)
    assert not np.array_equal(before, after)
    np.testing.assert_array_equal(np.array(weight), after)  # SGD: w - 0.5 * dw
    np.testing.assert_allclose(before - after, np.full((3, 1), 0.5), rtol=1e-6)


def test_writing_through_an_old_handle_sets_what_the_next_run_reads():
    scope = fluid.Scope()
    exe, main = _trained_line(scope)
    weight = scope.find_var("fc_0.w_0").get_tensor()
    exe.run(main, feed={"x": np.ones((2, 3), "float32")}, scope=scope)
    weight.set(np.zeros((3, 1), "float32"))
    bias = np.array(scope.find_var("fc_0.b_0").value)
    (prediction,) = exe.run(main.clone(for_test=True), feed={"x": np.ones((2, 3), "float32")},
                            fetch_list=["fc_0.tmp_1"], scope=scope)
    np.testing.assert_allclose(prediction, np.broadcast_to(bias, (2, 1)), rtol=1e-6)


def test_a_handle_keeps_lod_and_shape_of_the_current_tensor():
    scope = fluid.Scope()
    handle = scope.var("seq").get_tensor()
    handle.set(np.arange(6, dtype="float32").reshape(3, 2))
    handle.set_lod([[0, 1, 3]])
    assert scope.find_var("seq").value.lod() == [[0, 1, 3]]
    assert handle.shape() == [3, 2] and handle.lod() == [[0, 1, 3]]
    assert isinstance(handle, fluid.LoDTensor)


def test_a_handle_to_a_variable_now_holding_an_array_says_so():
    scope = fluid.Scope()
    handle = scope.var("v").get_tensor()
    scope.var("v").value = fluid.LoDTensorArray()
    with pytest.raises(InvalidArgument, match="LoDTensor expected"):
        handle.shape()
