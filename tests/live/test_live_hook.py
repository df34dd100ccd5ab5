"""A live session's append hook: its common op (a new op of the global block whose type has
a first-run plan, nothing pending, no memory event log) runs in one C call
(``steps.LiveHook``); everything else goes to the Python hook, which defines it, and the
session's state is read at each op, as the Python hook reads it."""
import sys

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import FluidError
from fluid_nb.live import live, runner


def _python_calls(body):
    """The names of the Python functions ``body()`` calls."""
    names = []

    def profile(frame, event, arg):
        if event == "call":
            names.append(frame.f_code.co_name)
    sys.setprofile(profile)
    try:
        body()
    finally:
        sys.setprofile(None)
    return names


def _chain(s):
    """``c`` and ``one`` 2x2 in live session ``s``, ``c + one`` run once (the Python hook
    works out the type's first-run plan then)."""
    c = fluid.layers.fill_constant([2, 2], "float32", 1.0)
    one = fluid.layers.fill_constant([2, 2], "float32", 0.5)
    return c + one, one


def test_a_formula_op_runs_without_the_python_hook(session_name):
    with live(session_name) as s:
        c, one = _chain(s)
        ran_before = s.stats["ops_run"]
        box = [c]

        def five_ops():
            for _ in range(5):
                box[0] = box[0] + one
        called = _python_calls(five_ops)
        assert "_on_main_op" not in called and "run" not in called
        ops = s.program.global_block().ops
        assert s.stats["ops_run"] == ran_before + 5
        assert all(s.runner.last_run[op] > 0 for op in ops[-5:])
        assert ops[-1] is s._since_sweep[-1]  # counted towards the next look
        np.testing.assert_array_equal(box[0].numpy(), np.full((2, 2), 4.0, "float32"))
    assert ops[-1].source[0] == __file__ and "box[0] + one" in ops[-1].source[2]


def test_the_session_state_is_read_at_each_op(session_name):
    """record_only and a pending op set between two ops of a cell, a replaced pending list,
    an update op: each goes the Python hook's way."""
    with live(session_name) as s:
        c, one = _chain(s)
        s.record_only = True
        deferred = c + one
        assert s.scope.find_var(deferred.name) is None and s.pending
        s.record_only = False
        after = deferred + one  # the pending op runs first, then this one
        assert not s.pending
        np.testing.assert_array_equal(after.numpy(), np.full((2, 2), 2.5, "float32"))
        s.pending = [s.program.global_block().ops[-1]]  # a new list, read at the next op
        ran = s.stats["ops_run"]
        c + one
        assert s.stats["ops_run"] == ran + 2 and s.pending == []
        with s.program.op_role_guard(2):  # an optimizer update
            update = c + one
        assert s.scope.find_var(update.name) is None
        assert s.update_ops[-1] is s.program.global_block().ops[-1]


@pytest.mark.parametrize("raised, expected", [(ValueError("the kernel broke"), FluidError),
                                              (KeyboardInterrupt(), KeyboardInterrupt)])
def test_a_first_run_that_fails_in_the_hook_takes_the_op_back(session_name, monkeypatch,
                                                              raised, expected):
    """A kernel's error names the op (a KeyboardInterrupt stays one), and the op, its
    output variable and holder are taken back."""
    with live(session_name) as s:
        c, one = _chain(s)
        block = s.program.global_block()
        ops, names, held = list(block.ops), set(block.vars), set(s.scope.vars)

        def failing(*args):
            raise raised
        monkeypatch.setattr(runner, "first_run", failing)
        with pytest.raises(expected) as caught:
            c + one
        if expected is FluidError:
            assert "elementwise_add" in str(caught.value)
        assert block.ops == ops and set(block.vars) == names and set(s.scope.vars) == held
        monkeypatch.undo()
        np.testing.assert_array_equal((c + one).numpy(), np.full((2, 2), 2.0, "float32"))


def test_the_hook_follows_the_allocator_flag(session_name):
    """FLAGS_use_system_allocator set between two ops: the next first run allocates from
    NumPy's own allocator; unset, from the arena again."""
    try:
        from numpy._core.multiarray import get_handler_name
    except ImportError:  # NumPy 1.x
        from numpy.core.multiarray import get_handler_name

    def allocator(variable):
        array = variable.numpy()
        while isinstance(array.base, np.ndarray):  # (the array that owns the memory)
            array = array.base
        return get_handler_name(array)
    try:
        with live(session_name) as s:
            c, one = _chain(s)
            assert allocator(c + one) == "fluid_nb_arena"
            fluid.set_flags({"FLAGS_use_system_allocator": True})
            assert allocator(c + one) == "default_allocator"
            fluid.set_flags({"FLAGS_use_system_allocator": False})
            assert allocator(c + one) == "fluid_nb_arena"
    finally:
        fluid.set_flags({"FLAGS_use_system_allocator": False})


def test_ops_of_a_sub_block_and_inserted_ops_go_the_python_way(session_name):
    """An op appended to another block is recorded, not run; one inserted before ops that
    ran runs, and the ops after it run again."""
    with live(session_name) as s:
        c, one = _chain(s)
        block = s.program.global_block()
        sub = s.program._create_block()
        sub.create_var(name="inner", shape=[2, 2], dtype="float32")
        sub.append_op(type="elementwise_add", inputs={"X": c.name, "Y": one.name},
                      outputs={"Out": "inner"})
        s.program._rollback()
        assert s.scope.find_var("inner") is None
        last = block.ops[-1]
        block._insert_op(len(block.ops) - 1, type="scale", inputs={"X": one.name},
                         outputs={"Out": one.name}, attrs={"scale": 2.0})
        np.testing.assert_array_equal(one.numpy(), np.ones((2, 2), "float32"))
        np.testing.assert_array_equal(s.scope.find_var(last.output("Out")[0]).value.numpy(),
                                      np.full((2, 2), 2.0, "float32"))
