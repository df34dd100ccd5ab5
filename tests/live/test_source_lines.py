"""Every op recorded in live mode names the user's line that added it, whichever way it was
added: a layer, a layer calling layers, a Variable operator, or the raw Block methods."""
import numpy as np

import fluid_nb as fluid
from fluid_nb.live import live

X = np.arange(6, dtype="float32").reshape(2, 3)


def _recorded_line(op):
    assert op.source is not None
    filename, _, line = op.source
    assert filename == __file__
    return line


def test_a_layer_op_names_the_layer_call(session_name):
    with live(session_name) as s:
        x = fluid.layers.data(name="x", shape=[3], dtype="float32", value=X)
        fluid.layers.elementwise_add(x, x)  # the elementwise line
    assert "the elementwise line" in _recorded_line(s.program.global_block().ops[-1])


def test_every_op_of_a_nested_layer_names_the_outer_call(session_name):
    with live(session_name) as s:
        x = fluid.layers.data(name="x", shape=[3], dtype="float32", value=X)
        fluid.layers.fc(input=x, size=2, act="relu")  # the fc line
    ops = s.program.global_block().ops[-3:]
    assert [op.type for op in ops] == ["mul", "elementwise_add", "relu"]
    assert all("the fc line" in _recorded_line(op) for op in ops)


def test_a_variable_operator_names_the_expression(session_name):
    with live(session_name) as s:
        x = fluid.layers.data(name="x", shape=[3], dtype="float32", value=X)
        y = x * x + x  # the operator line
    ops = s.program.global_block().ops[-2:]
    assert [op.type for op in ops] == ["elementwise_mul", "elementwise_add"]
    assert all("the operator line" in _recorded_line(op) for op in ops)
    np.testing.assert_array_equal(y.numpy(), X * X + X)


def test_raw_block_appends_and_inserts_name_their_own_lines(session_name):
    with live(session_name) as s:
        x = fluid.layers.data(name="x", shape=[3], dtype="float32", value=X)
        block = s.program.global_block()
        block.append_op(type="scale", inputs={"X": x}, outputs={"Out": "y"})  # the append line
        block._insert_op(len(block.ops), type="scale", inputs={"X": "y"},  # the insert
                         outputs={"Out": "z"}, attrs={"scale": 2.0})
    appended, inserted = block.ops[-2:]
    assert "the append line" in _recorded_line(appended)
    assert "the insert" in _recorded_line(inserted)
    np.testing.assert_array_equal(s.scope.find_var("z").value.numpy(), 2 * X)


def test_a_clone_names_the_same_lines_and_finds_them_only_when_asked(session_name,
                                                                    monkeypatch):
    """Cloning (an executor's run program, a test copy, a pruned program) copies an op's
    unfound line as unfound: a live session's clone of 10,000 ops searched 10,000 stacks."""
    from fluid_nb.framework import callstack
    with live(session_name) as s:
        x = fluid.layers.data(name="x", shape=[3], dtype="float32", value=X)
        fluid.layers.fc(input=x, size=2, act="relu")  # the cloned line
    searched = []
    search = callstack.user_line
    monkeypatch.setattr(callstack, "user_line", lambda stack: searched.append(1) or
                        search(stack))
    twin = s.program.clone()
    pruned = s.program._prune([s.program.global_block().ops[-1].output("Out")[0]])
    assert not searched
    for program in (twin, pruned):
        ops = program.global_block().ops[-3:]
        assert [op.type for op in ops] == ["mul", "elementwise_add", "relu"]
        assert all("the cloned line" in _recorded_line(op) for op in ops)
    assert len(searched) == 6
    assert all("the cloned line" in _recorded_line(op)
               for op in s.program.global_block().ops[-3:])
