"""A prepared op keeps the indices of the blocks it runs: binding a plan asks each op of
the block once (for what is read after it, the temporaries' last uses and what the run
writes outside its scope), and what the answer decides still holds: a run that fails puts
back what a loop body wrote outside, and a loop whose body changes is prepared again."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import FluidError
from fluid_nb.exec import binding, run_plan
from fluid_nb.framework.blocks import sub_block_indices


def _loop_then_reshape(limit=3):
    """acc (a persistable) += 1 in a While body ``limit`` times, then x reshaped to
    [5, -1], which fails for a batch whose size is no multiple of 5."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[4], dtype="float32")
        acc = fluid.layers.create_global_var(shape=[1], value=0.0, dtype="float32",
                                             persistable=True, name="acc")
        i = fluid.layers.zeros(shape=[1], dtype="int64")
        end = fluid.layers.fill_constant(shape=[1], dtype="int64", value=limit)
        cond = fluid.layers.less_than(i, end)
        loop = fluid.layers.While(cond)
        with loop.block():
            fluid.layers.increment(acc, value=1.0, in_place=True)
            fluid.layers.increment(i, in_place=True)
            fluid.layers.less_than(i, end, cond=cond)
        out = fluid.layers.reshape(x, [5, -1])
    return main, startup, out


def _acc(scope):
    return float(np.array(scope.find_var("acc").get_tensor())[0])


class Counted:
    """sub_block_indices, counting the ops of one block it is asked about."""

    def __init__(self, block):
        self.block, self.asked = block, []

    def __call__(self, op):
        if op.block is self.block:
            self.asked.append(op)
        return sub_block_indices(op)


def test_binding_a_plan_asks_each_op_for_its_blocks_once(monkeypatch):
    main, startup, out = _loop_then_reshape()
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    counted = Counted(None)
    monkeypatch.setattr(binding, "sub_block_indices", counted)
    monkeypatch.setattr(run_plan, "sub_block_indices", counted)
    original_bind = binding.bind

    def bind(prepared, *args, **kwargs):  # count the ops of the block being bound
        counted.block = prepared.block
        return original_bind(prepared, *args, **kwargs)
    monkeypatch.setattr(run_plan, "bind", bind)
    exe.run(main, feed={"x": np.ones((5, 4), "float32")}, fetch_list=[out], scope=scope)
    ops = counted.block.ops
    assert len(counted.asked) == len(ops) and {id(op) for op in counted.asked} == {
        id(op) for op in ops}
    assert _acc(scope) == 3.0


def test_a_prepared_op_answers_as_the_op_does():
    main, _, _ = _loop_then_reshape()
    prepared = fluid.Executor(fluid.CPUPlace()).prepare(main.global_block())
    answers = [p.block_indices() for p in prepared.ops]
    assert answers == [sub_block_indices(p.op) for p in prepared.ops]
    assert [1] in answers  # the While op runs block 1


def test_what_a_run_writes_takes_in_what_its_loop_bodies_write():
    main, _, _ = _loop_then_reshape()
    block = main.global_block()
    loop = next(op for op in block.ops if op.type == "while")
    # a body's write that its op does not list among its outputs is found in the body
    loop.outputs["Out"] = tuple(name for name in loop.outputs["Out"] if name != "acc")
    assert "acc" not in {name for op in block.ops for name in op.output_arg_names}
    prepared = fluid.Executor(fluid.CPUPlace()).prepare(block)
    assert "acc" in run_plan.names_written(prepared.ops)
    assert run_plan.names_written(prepared.ops) == run_plan.names_written(block.ops)


def test_a_failing_run_puts_back_what_a_loop_body_wrote_outside():
    main, startup, out = _loop_then_reshape()
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    for _ in range(2):  # the first run and a repeated one
        with pytest.raises(FluidError):
            exe.run(main, feed={"x": np.ones((2, 4), "float32")}, fetch_list=[out],
                    scope=scope)
        assert _acc(scope) == 0.0  # the body's three increments taken back
    exe.run(main, feed={"x": np.ones((5, 4), "float32")}, fetch_list=[out], scope=scope)
    assert _acc(scope) == 3.0


def test_a_changed_loop_is_prepared_again():
    main, startup, out = _loop_then_reshape(limit=2)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": np.ones((5, 4), "float32")}
    exe.run(main, feed=feed, fetch_list=[out], scope=scope)
    assert _acc(scope) == 2.0
    body = main.block(1)
    with fluid.program_guard(main):  # one more write of acc in the body
        body.append_op(type="increment", inputs={"X": "acc"}, outputs={"Out": "acc"},
                       attrs={"step": 10.0})
    exe.run(main, feed=feed, fetch_list=[out], scope=scope)
    assert _acc(scope) == 2.0 + 2 * 11.0
