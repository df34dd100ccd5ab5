"""One op run alone (``Executor.run_op``, ``exec.binding.bind_op``): it writes its outputs into
the scope, a bad op raises the typed error naming it, and a failed op leaves the scope as it
was."""
import ast
import os

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument, PreconditionNotMet, Unimplemented
from fluid_nb.exec.binding import bind_op


def _add_op(out="z"):
    """A block with x [-1, 3], y [3] and ``out = x + y`` as its one op."""
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="x", shape=(-1, 3), dtype="float32")
    block.create_var(name="y", shape=(3,), dtype="float32")
    block.append_op(type="elementwise_add", inputs={"X": "x", "Y": "y"},
                    outputs={"Out": out})
    return block.ops[-1]


def _scope(**values):
    scope = fluid.Scope()
    for name, value in values.items():
        scope.var(name).get_tensor().set(np.asarray(value, "float32"), fluid.CPUPlace())
    return scope


def _snapshot(scope):
    """name -> the value object each holder of ``scope`` holds (identity, not a copy)."""
    return {name: holder.value for name, holder in scope.vars.items()}


def test_an_op_run_alone_writes_its_outputs_into_the_scope():
    scope = _scope(x=np.ones((2, 3)), y=[1, 2, 3])
    fluid.Executor(fluid.CPUPlace()).run_op(_add_op(), scope)
    np.testing.assert_array_equal(np.asarray(scope.find_var("z").get_tensor()),
                                  [[2, 3, 4], [2, 3, 4]])
    np.testing.assert_array_equal(np.asarray(scope.find_var("x").get_tensor()), np.ones((2, 3)))


def test_an_op_run_alone_reads_ancestors_and_makes_new_holders_in_the_scope_given():
    outer = _scope(y=[1, 2, 3])
    inner = outer.new_scope()
    inner.var("x").get_tensor().set(np.zeros((1, 3), "float32"), fluid.CPUPlace())
    fluid.Executor(fluid.CPUPlace()).run_op(_add_op(), inner)
    assert sorted(outer.vars) == ["y"] and sorted(inner.vars) == ["x", "z"]
    np.testing.assert_array_equal(np.asarray(inner.find_var("z").get_tensor()), [[1, 2, 3]])


def test_a_bound_op_runs_again_on_new_input_values():
    scope = _scope(x=np.ones((1, 3)), y=[1, 2, 3])
    step, prepared = bind_op(_add_op(), scope, fluid.Executor(fluid.CPUPlace()))
    assert prepared.op.type == "elementwise_add" and scope.find_var("z").value is None
    step()
    scope.find_var("x").get_tensor().set(np.full((1, 3), 10, "float32"), fluid.CPUPlace())
    step()
    np.testing.assert_array_equal(np.asarray(scope.find_var("z").get_tensor()), [[11, 12, 13]])


def test_an_unknown_op_type_is_unimplemented_and_binds_nothing():
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="x", shape=(1,), dtype="float32")
    block.append_op(type="my_custom_op", inputs={"X": ["x"]}, outputs={"Out": ["c"]})
    scope = _scope(x=[1.0])
    before = _snapshot(scope)
    with pytest.raises(Unimplemented, match="op 'my_custom_op'"):
        fluid.Executor(fluid.CPUPlace()).run_op(block.ops[-1], scope)
    with pytest.raises(Unimplemented, match="op 'my_custom_op'"):
        bind_op(block.ops[-1], scope, fluid.Executor(fluid.CPUPlace()))
    assert _snapshot(scope) == before


def test_a_failing_kernel_names_the_op_and_leaves_the_scope_as_it_was():
    old_z = fluid.LoDTensor(np.zeros((2, 3), "float32"))
    scope = _scope(x=np.ones((2, 3)), y=[1, 2, 3, 4])  # y does not broadcast against x
    scope.var("z").value = old_z
    before = _snapshot(scope)
    with pytest.raises(InvalidArgument,
                       match=r"op 'elementwise_add' \(block 0, op 0\): kernel failed on "
                             r"inputs X=\['x'\], Y=\['y'\]"):
        fluid.Executor(fluid.CPUPlace()).run_op(_add_op(), scope)
    after = _snapshot(scope)
    assert after.keys() == before.keys() and all(after[n] is before[n] for n in before)
    assert scope.find_var("z").value is old_z


def test_an_input_without_a_value_is_precondition_not_met_and_no_holder_is_left():
    scope = _scope(y=[1, 2, 3])
    with pytest.raises(PreconditionNotMet, match=r"op 'elementwise_add'.*not initialised"):
        fluid.Executor(fluid.CPUPlace()).run_op(_add_op(out="w"), scope)
    assert sorted(scope.vars) == ["y"]


def test_run_op_refuses_a_scope_that_is_not_a_scope():
    with pytest.raises(InvalidArgument, match="Executor.run_op: scope expected a Scope"):
        fluid.Executor(fluid.CPUPlace()).run_op(_add_op(), {"x": 1})


def test_live_mode_imports_only_public_names_of_the_executor():
    """The live runner and session bind and run ops through exec's public API."""
    live = os.path.join(os.path.dirname(fluid.__file__), "live")
    private = []
    for filename in sorted(os.listdir(live)):
        if not filename.endswith(".py"):
            continue
        with open(os.path.join(live, filename)) as source:
            tree = ast.parse(source.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and "exec" in (node.module or "").split("."):
                private += [f"{filename}: {alias.name}" for alias in node.names
                            if alias.name.startswith("_")]
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") \
                    and isinstance(node.value, ast.Name) and node.value.id == "_executor":
                private.append(f"{filename}: _executor.{node.attr}")
    assert private == []
