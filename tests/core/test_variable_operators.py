"""A Variable's Python operators (``x + y``, ``x * 2``, ``x < y``, ...) are
``_op_record.VariableOperator`` objects: the Python function ``math_op_patch`` defines
(``__wrapped__``, the definition) with its two commonest cases, two Variables of one dtype and
a Variable and a plain number, appended in C without its frames. Whatever the operands, an
operator must append what its Python way appends, name for name and field for field, and
return or raise what it returns or raises."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument
from fluid_nb.api.layers import math_op_patch
from fluid_nb.framework import callstack, transaction
from fluid_nb.framework.callstack import _op_record
from fluid_nb.framework.program import Program, Variable
from tests.core.op_records import record

OPERATORS = [method for method, *_ in math_op_patch._TABLE]


class Counted(int):
    """An int subclass: a number the C path leaves to the Python way."""


#: the right operands every operator is tried with, by what they are
OPERANDS = {
    "a Variable of the same dtype": lambda v: v["y"],
    "a Variable of another dtype": lambda v: v["ints"],
    "a batch-leading Variable with fewer dims": lambda v: v["bias"],
    "a batch-leading Variable with as many dims": lambda v: v["y"],
    "a Parameter": lambda v: v["w"],
    "a float": lambda v: 0.25,
    "a negative int": lambda v: -3,
    "zero": lambda v: 0,
    "zero as a float": lambda v: 0.0,
    "an int past a double": lambda v: 10 ** 400,
    "a bool": lambda v: True,
    "an int subclass": lambda v: Counted(2),
    "a numpy scalar": lambda v: np.float32(1.5),
    "None": lambda v: None,
    "a list": lambda v: [1.0],
}


def _variables():
    x = fluid.data(name="x", shape=[-1, 3], dtype="float32")
    y = fluid.data(name="y", shape=[-1, 3], dtype="float32")
    ints = fluid.data(name="ints", shape=[-1, 3], dtype="int64")
    bias = fluid.data(name="bias", shape=[-1], dtype="float32")
    w = fluid.layers.create_parameter([2, 3], "float32", name="w")
    return {"x": x, "y": y, "ints": ints, "bias": bias, "w": w}


def _outcome(apply):
    """What one operator call leaves: the program's record, and its result's name (or what it
    returned, or the error it raised, as type and text)."""
    main, startup = Program(), Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        variables = _variables()
        try:
            result = apply(variables)
            answer = result.name if isinstance(result, Variable) else ("returned", result)
        except Exception as error:  # (the same error either way is part of the contract)
            answer = ("raised", type(error), str(error))
    return record(main), answer, main


@pytest.mark.parametrize("operand", list(OPERANDS))
@pytest.mark.parametrize("method", OPERATORS)
def test_an_operator_appends_what_its_python_way_appends(method, operand):
    operator = getattr(Variable, method)
    python_way = operator.__wrapped__
    given = OPERANDS[operand]
    c_record, c_answer, _ = _outcome(lambda v: operator(v["x"], given(v)))
    python_record, python_answer, _ = _outcome(lambda v: python_way(v["x"], given(v)))
    assert c_answer == python_answer
    assert c_record == python_record


def _innermost(program):
    """The function of each op's innermost frame: a C operator has no frame of its own, so
    its op's stack starts at the line that applied it."""
    return [callstack.frames(op)[-1][2] for op in program.global_block().ops
            if op.type not in ("fill_constant",)]


def _in_python_way(program):
    """Whether the last op's stack starts in math_op_patch (the Python way's frames)."""
    return callstack.frames(program.global_block().ops[-1])[-1][0] == math_op_patch.__file__


def test_two_variables_and_plain_numbers_append_without_the_python_way():
    def cell(v):
        x, y = v["x"], v["y"]
        return [x + y, x - y, x * y, x / y, x < y, x == y, y + x, x + 1, 1 + x, x - 2.5,
                2.5 - x, x * 3, 3 * x, x / 4, -x]
    _, _, main = _outcome(cell)
    functions = _innermost(main)
    # every operator appended from the cell's own frame; -x is a Python layer (scale)
    assert functions[:-1] == ["cell"] * 14 and functions[-1] != "cell"


@pytest.mark.parametrize("operand", ["a Variable of another dtype", "a bool",
                                     "a numpy scalar", "an int subclass",
                                     "a batch-leading Variable with fewer dims"])
def test_other_operands_go_the_python_way(operand):
    given = OPERANDS[operand]
    _, _, main = _outcome(lambda v: v["x"] * given(v))
    assert _in_python_way(main)


def test_a_reversed_operator_of_two_variables_goes_the_python_way():
    _, answer, main = _outcome(lambda v: Variable.__rsub__(v["x"], v["y"]))
    assert _in_python_way(main)
    op = main.global_block().ops[-1]
    assert op.inputs == {"X": ("y",), "Y": ("x",)}  # y - x
    assert answer == op.outputs["Out"][0]


def test_an_operator_appends_to_the_programs_current_block():
    main = Program()
    with fluid.program_guard(main, Program()):
        x = fluid.data(name="x", shape=[2], dtype="float32")
        sub = main._create_block()
        out = x * 2.0
        main._rollback()
    assert [op.type for op in sub.ops] == ["scale"] and out.block is sub
    assert not [op for op in main.global_block().ops if op.type == "scale"]


def test_a_program_subclass_answers_its_current_block_itself():
    asked = []

    class Watched(Program):
        def current_block(self):
            asked.append(self)
            return super().current_block()
    main = Watched()
    with fluid.program_guard(main, Program()):
        x = fluid.data(name="x", shape=[2], dtype="float32")
        x + x
    assert asked == [main]


def test_another_append_one_op_has_every_call_go_the_python_way(monkeypatch):
    seen = []

    def spy(*args):
        seen.append(args[1])
        return transaction._append_one_op(*args)
    monkeypatch.setattr(math_op_patch, "append_one_op", spy)
    _, _, main = _outcome(lambda v: [v["x"] + v["y"], v["x"] * 2])
    assert seen == ["elementwise_add", "scale"]
    add, scale = ([function for _, _, function in callstack.frames(op)]
                  for op in main.global_block().ops)
    assert "impl" in add and "_scale" in scale


def test_the_operator_is_a_method_with_its_python_ways_name_and_doc():
    operator = Variable.__add__
    assert isinstance(operator, _op_record.VariableOperator)
    assert operator.__name__ == "__add__" and operator.__qualname__ == "Variable.__add__"
    assert "elementwise_add" in operator.__doc__ and operator.op_type == "elementwise_add"
    assert operator.__wrapped__.__name__ == "__add__"
    _, answer, main = _outcome(lambda v: v["x"].__add__(v["y"]))  # a bound method
    assert main.global_block().ops[-1].type == "elementwise_add"
    with pytest.raises(TypeError):
        Variable.__add__(Variable.__add__)  # (one argument: the Python function's error)


def test_an_operator_failing_in_a_live_op_leaves_nothing_behind():
    main, startup, scope = Program(), Program(), fluid.Scope()
    with fluid.program_guard(main, startup), fluid.unique_name.guard(), \
            fluid.live(program=main, startup_program=startup, scope=scope):
        a = fluid.layers.fill_constant([2, 3], "float32", 1.0)
        b = fluid.layers.fill_constant([3, 2], "float32", 1.0)
        variables, ops, _ = record(main)
        with pytest.raises(InvalidArgument, match="elementwise_add"):
            a + b  # shapes that do not broadcast
        assert record(main)[:2] == (variables, ops)  # (the version moves on: memos forget)
        assert float((a * 3).numpy().sum()) == 18.0


def test_operators_are_collectable_objects():
    operator = _op_record.VariableOperator(lambda self, other: None, "elementwise_add",
                                           False, 0, None, {})
    assert "elementwise_add" in repr(operator)
    with pytest.raises(ValueError):
        _op_record.VariableOperator(lambda self, other: None, "elementwise_add", False, 9,
                                    None, {})
