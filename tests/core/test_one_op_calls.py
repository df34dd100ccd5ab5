"""A Variable's Python operators (``x + y``, ``x * 2``, ``x < y``, ...) and the elementwise
and activation layers (``fluid.layers.elementwise_add``, ``sigmoid``, ...) are
``_op_record.OneOpCall`` objects: the Python function that defines each (``__wrapped__``)
with its commonest calls (two Variables of one dtype, a Variable and a plain number; a
layer's Variables with no name or act) appended in C without its frames. Whatever the
arguments, a call must append what its Python function appends, name for name and field
for field, and return or raise what it returns or raises."""
import pickle

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument, InvalidType
from fluid_nb.api.layers import math_op_patch, ops as layer_ops
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


def _outcome(apply, made=None):
    """What one call leaves: the program's record, and its result's name (or what it
    returned, or the error it raised, as type and text); ``apply`` is given the variables
    ``made()`` (default: :func:`_variables`) makes in a fresh program."""
    main, startup = Program(), Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        variables = (made or _variables)()
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
                2.5 - x, x * 3, 3 * x, x / 4, -x, -x]
    _, _, main = _outcome(cell)
    functions = _innermost(main)
    # every operator appended from the cell's own frame; -x replays a repeated call (its
    # first may be its Python way's, recording it: other tests negate too)
    assert functions[:14] == ["cell"] * 14 and functions[15] == "cell"


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
    assert isinstance(operator, _op_record.OneOpCall)
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


def test_a_one_op_call_refuses_forms_it_does_not_know():
    def python_way(self, other):
        return None
    operator = _op_record.OneOpCall(python_way, _op_record.OPERATOR, "elementwise_add", {})
    assert "elementwise_add" in repr(operator) and operator(1, 2) is None
    for form, scalar, allowed in [(9, 0, None), (_op_record.OPERATOR, 9, None),
                                  (_op_record.ELEMENTWISE, 0, None)]:
        with pytest.raises(ValueError):
            _op_record.OneOpCall(python_way, form, "elementwise_add", {}, allowed=allowed,
                                 scalar=scalar)


#: a layer call's arguments, by what they are: (positional, keywords) from the variables
ELEMENTWISE_CALLS = {
    "x, y": lambda v: ((v["x"], v["y"]), {}),
    "an int axis": lambda v: ((v["x"], v["y"], 1), {}),
    "axis=0": lambda v: ((v["x"], v["row"]), {"axis": 0}),
    "axis=-1 given": lambda v: ((v["x"], v["y"]), {"axis": -1}),
    "every argument by position": lambda v: ((v["x"], v["y"], -1, None, None), {}),
    "a bool axis": lambda v: ((v["x"], v["y"], True), {}),
    "a float axis": lambda v: ((v["x"], v["y"], 1.5), {}),
    "an act": lambda v: ((v["x"], v["y"]), {"act": "relu"}),
    "a name": lambda v: ((v["x"], v["y"]), {"name": "named"}),
    "x and y by keyword": lambda v: ((), {"x": v["x"], "y": v["y"]}),
    "axis twice": lambda v: ((v["x"], v["y"], 1), {"axis": 1}),
    "an unknown keyword": lambda v: ((v["x"], v["y"]), {"scale": 2}),
    "ints and floats": lambda v: ((v["x"], v["ints"]), {}),
    "ints": lambda v: ((v["ints"], v["ints"]), {}),
    "bools": lambda v: ((v["bools"], v["bools"]), {}),
    "a number for y": lambda v: ((v["x"], 3.0), {}),
    "a Parameter": lambda v: ((v["w"], v["w"]), {}),
    "too few": lambda v: ((v["x"],), {}),
}

ACTIVATION_CALLS = {
    "x": lambda v: ((v["x"],), {}),
    "name=None by position": lambda v: ((v["x"], None), {}),
    "name=None": lambda v: ((v["x"],), {"name": None}),
    "a name": lambda v: ((v["x"],), {"name": "named"}),
    "an attribute": lambda v: ((v["x"],), {"use_mkldnn": False}),
    "a list attribute": lambda v: ((v["x"],), {"op_callstack": ["a"]}),
    "name twice": lambda v: ((v["x"], None), {"name": None}),
    "x twice": lambda v: ((v["x"],), {"x": v["x"]}),
    "x by keyword": lambda v: ((), {"x": v["x"]}),
    "ints": lambda v: ((v["ints"],), {}),
    "a number": lambda v: ((3.0,), {}),
    "a Parameter": lambda v: ((v["w"],), {}),
}


def _layer_variables():
    found = _variables()
    found["row"] = fluid.data(name="row", shape=[-1], dtype="float32")
    found["bools"] = fluid.data(name="bools", shape=[-1, 3], dtype="bool")
    found["square"] = fluid.data(name="square", shape=[3, 3], dtype="float32")
    return found


def _layer_outcome(call):
    return _outcome(call, _layer_variables)


def _same_as_python_way(layer, arguments):
    c_record, c_answer, c_main = _layer_outcome(
        lambda v: layer(*arguments(v)[0], **arguments(v)[1]))
    python_record, python_answer, _ = _layer_outcome(
        lambda v: layer.__wrapped__(*arguments(v)[0], **arguments(v)[1]))
    assert c_answer == python_answer
    assert c_record == python_record
    return c_main


@pytest.mark.parametrize("arguments", list(ELEMENTWISE_CALLS))
@pytest.mark.parametrize("op_type", layer_ops._ELEMENTWISE)
def test_an_elementwise_layer_appends_what_its_python_way_appends(op_type, arguments):
    _same_as_python_way(getattr(fluid.layers, op_type), ELEMENTWISE_CALLS[arguments])


@pytest.mark.parametrize("arguments", list(ACTIVATION_CALLS))
@pytest.mark.parametrize("op_type", layer_ops._ACTIVATIONS)
def test_an_activation_layer_appends_what_its_python_way_appends(op_type, arguments):
    layer = getattr(layer_ops, op_type)
    if not isinstance(layer, _op_record.OneOpCall):  # (one taking its attributes in order)
        layer = layer_ops._activation_layer(op_type)
    _same_as_python_way(layer, ACTIVATION_CALLS[arguments])


#: a checked layer's calls besides the activation's: its own arguments given
CHECKED_CALLS = dict(ACTIVATION_CALLS, **{
    "softmax's axis": lambda v: ((v["x"],), {"axis": 0}),
    "softmax's use_cudnn by position": lambda v: ((v["x"], True), {}),
})

PAIR_CALLS = {
    "x, y": lambda v: ((v["x"], v["square"]), {}),
    "name=None": lambda v: ((v["x"], v["square"]), {"name": None}),
    "a name": lambda v: ((v["x"], v["square"]), {"name": "named"}),
    "a transpose by position": lambda v: ((v["x"], v["square"], True), {}),
    "alpha": lambda v: ((v["x"], v["square"]), {"alpha": 2}),
    "x and y by keyword": lambda v: ((), {"x": v["x"], "y": v["square"]}),
    "shapes that do not multiply": lambda v: ((v["x"], v["y"]), {}),
    "ints": lambda v: ((v["ints"], v["ints"]), {}),
    "a Parameter": lambda v: ((v["x"], v["w"]), {}),
    "a number": lambda v: ((v["x"], 2.0), {}),
    "an unknown keyword": lambda v: ((v["x"], v["square"]), {"axis": 1}),
    "too few": lambda v: ((v["x"],), {}),
}


@pytest.mark.parametrize("arguments", list(CHECKED_CALLS))
@pytest.mark.parametrize("op_type", ["relu", "log", "softmax"])
def test_a_checked_unary_layer_appends_what_its_python_way_appends(op_type, arguments):
    layer = getattr(fluid.layers, op_type)
    assert isinstance(layer, _op_record.OneOpCall)
    _same_as_python_way(layer, CHECKED_CALLS[arguments])


@pytest.mark.parametrize("arguments", list(PAIR_CALLS))
def test_matmul_appends_what_its_python_way_appends(arguments):
    assert isinstance(fluid.layers.matmul, _op_record.OneOpCall)
    _same_as_python_way(fluid.layers.matmul, PAIR_CALLS[arguments])


def test_a_checked_unary_layer_refuses_the_dtypes_fluid_refuses():
    from fluid_nb.api.layers.dtype_rules import FLUID18_DTYPES
    assert FLUID18_DTYPES["log"]["x"] == ("float32", "float64")
    main = Program()
    with fluid.program_guard(main, Program()):
        half = fluid.data(name="half", shape=[2], dtype="float16")
        fluid.layers.relu(half)  # (relu takes float16, log does not)
        with pytest.raises(InvalidType, match="log: x's dtype expected one of float32"):
            fluid.layers.log(half)
    assert [op.type for op in main.global_block().ops] == ["relu"]


def test_a_layers_common_call_appends_without_its_python_function():
    def cell(v):
        x, y = v["x"], v["y"]
        return [fluid.layers.elementwise_add(x, y), fluid.layers.elementwise_mul(x, y, axis=1),
                fluid.layers.sigmoid(x), fluid.layers.exp(x, name=None), fluid.layers.relu(x),
                fluid.layers.log(x, name=None), fluid.layers.softmax(x),
                fluid.layers.matmul(x, v["square"]),
                fluid.layers.elementwise_sub(x, y, name="named")]
    _, _, main = _layer_outcome(cell)
    # the last (a name) is the layer's Python function's
    assert _innermost(main) == ["cell"] * 8 + ["layer"]


def test_a_layer_of_an_op_not_defined_yet_goes_the_python_way(monkeypatch):
    from fluid_nb.framework import program as fw
    monkeypatch.setattr(fw, "_op_defs", {})  # (every type looked up as if not loaded)
    _, _, main = _layer_outcome(lambda v: fluid.layers.softsign(v["x"]))
    assert _innermost(main) == ["layer"]


def test_a_layer_is_its_python_functions_stand_in():
    import inspect
    layer = fluid.layers.elementwise_add
    assert isinstance(layer, _op_record.OneOpCall) and layer.__name__ == "elementwise_add"
    assert str(inspect.signature(layer)) == "(x, y, axis=-1, act=None, name=None)"
    assert str(inspect.signature(fluid.layers.sigmoid)) == "(x, name=None, **attrs)"
    assert layer.__wrapped_transaction__  # (all or nothing itself: no wrapper around it)
    assert "axis" in layer.__doc__ and layer.__module__ == layer_ops.__name__


@pytest.mark.parametrize("protocol", [2, pickle.HIGHEST_PROTOCOL])
def test_one_op_calls_pickle_by_reference_as_functions_do(protocol):
    for call in [fluid.layers.elementwise_add, fluid.layers.sigmoid, fluid.layers.relu,
                 fluid.layers.matmul, Variable.__add__, Variable.__rtruediv__]:
        assert pickle.loads(pickle.dumps(call, protocol=protocol)) is call
