"""``Block.append_op`` takes each slot's argument as a name, a Variable, or a list or tuple
of them (None: no argument), and keeps it as a tuple of names. One C call
(``_op_record.op_arguments``) puts both slot maps in that form; the Python way
(``program._slot_arguments``) is the definition, and names the error of an argument of any
other kind. The two must agree on every form, ``single`` (every slot one name: the slot
check's verdict is remembered) included."""
import collections

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidType
from fluid_nb.framework import program as fw
from fluid_nb.framework.callstack import _op_record


class Named(str):
    """A str subclass: a name all the same."""


class Slots(collections.abc.Mapping):
    """A slot map that is no dict: the Python way reads it."""

    def __init__(self, **slots):
        self._slots = slots

    def __getitem__(self, key):
        return self._slots[key]

    def __iter__(self):
        return iter(self._slots)

    def __len__(self):
        return len(self._slots)


@pytest.fixture
def block():
    program = fluid.Program()
    with fluid.program_guard(program, fluid.Program()):
        block = program.global_block()
        for name in ("a", "b", "c"):
            block.create_var(name=name, shape=[2, 3], dtype="float32")
        block.create_parameter(name="w", shape=[3, 3], dtype="float32")
        yield block


def both_ways(inputs, outputs):
    in_args, single_in = fw._slot_arguments("sum", "input", inputs)
    out_args, single_out = fw._slot_arguments("sum", "output", outputs)
    return (in_args, out_args, single_in and single_out), \
        _op_record.op_arguments(inputs, outputs, fw.Variable)


def test_every_form_of_argument_is_kept_as_the_python_way_keeps_it(block):
    a, b, w = block.var("a"), block.var("b"), block.var("w")
    forms = [
        ({"X": "a"}, {"Out": "c"}),                                # names
        ({"X": a}, {"Out": block.var("c")}),                       # Variables
        ({"X": w, "Y": [w]}, {"Out": ["c"]}),                      # a Parameter (a subclass)
        ({"X": [a]}, {"Out": [block.var("c")]}),                   # a layer's usual form
        ({"X": [a, "b", w]}, {"Out": ("c",)}),                     # several, mixed, a tuple
        ({"X": (a, b)}, {"Out": "c"}),
        ({"X": []}, {"Out": "c"}),                                 # an empty slot
        ({"X": [a], "Bias": None}, {"Out": "c", "XShape": None}),  # no argument
        ({"X": Named("a")}, {"Out": [Named("c")]}),                # a str subclass
        (None, {"Out": "c"}), ({}, {}), (None, None),              # no slots
        (collections.OrderedDict(X=a), {"Out": "c"}),              # a dict subclass
    ]
    for inputs, outputs in forms:
        python_way, c_way = both_ways(inputs, outputs)
        assert c_way == python_way, (inputs, outputs)
        for args in (*c_way[0].values(), *c_way[1].values()):
            assert type(args) is tuple and all(isinstance(n, str) for n in args)
    # single: every slot holds one name
    assert both_ways({"X": [a], "Y": "b"}, {"Out": "c"})[1][2] is True
    assert both_ways({"X": [a, b]}, {"Out": "c"})[1][2] is False
    assert both_ways({"X": []}, {"Out": "c"})[1][2] is False
    assert both_ways({"X": a}, {"Out": ["c", "a"]})[1][2] is False


def test_slot_maps_that_are_no_dicts_go_the_python_way(block):
    assert _op_record.op_arguments(Slots(X="a"), {"Out": "c"}, fw.Variable) is None
    assert _op_record.op_arguments({"X": "a"}, Slots(Out="c"), fw.Variable) is None
    op = block.append_op(type="sum", inputs=Slots(X=["a", "b"]), outputs=Slots(Out="c"))
    assert op.inputs == {"X": ("a", "b")} and op.outputs == {"Out": ("c",)}


@pytest.mark.parametrize("kind, inputs, outputs, found", [
    ("input", {"X": 3}, {"Out": "c"}, "int"),
    ("input", {"X": ["a", np.zeros(2)]}, {"Out": "c"}, "ndarray"),
    ("output", {"X": "a"}, {"Out": [1.5]}, "float"),
    ("output", {"X": "a"}, {"Out": {"c": 1}}, "dict"),
])
def test_an_argument_of_another_kind_is_refused_by_name_and_leaves_nothing(
        block, kind, inputs, outputs, found):
    assert _op_record.op_arguments(inputs, outputs, fw.Variable) is None
    n_ops, names, version = len(block.ops), list(block.vars), block.program._version
    slot = "X" if kind == "input" else "Out"
    with pytest.raises(InvalidType, match=f"sum: {kind} '{slot}' expected Variable or "
                                          f"variable name, but received {found}"):
        block.append_op(type="sum", inputs=inputs, outputs=outputs)
    assert (len(block.ops), list(block.vars), block.program._version) == \
        (n_ops, names, version)


def test_a_new_output_name_is_made_a_variable_and_taken_back_on_failure(block):
    op = block.append_op(type="sum", inputs={"X": ["a", "b"]}, outputs={"Out": ["fresh"]})
    assert op.outputs == {"Out": ("fresh",)} and block.var("fresh").shape == (2, 3)
    with pytest.raises(Exception):
        block.append_op(type="mul", inputs={"X": ["a"], "Y": ["b"]},  # [2, 3] x [2, 3]
                        outputs={"Out": ["never"]})
    assert "never" not in block.vars


class ShiftingName(fw.Variable):
    """A Variable whose name, read, empties the list it was given in."""
    holder = None

    @property
    def name(self):
        if ShiftingName.holder:
            ShiftingName.holder.clear()
        return "a"

    @name.setter
    def name(self, value):
        pass


def test_a_list_changed_while_its_names_are_read_goes_the_python_way(block):
    odd = ShiftingName.__new__(ShiftingName)
    odd.block = block
    arguments = [odd, "b", "c"]
    ShiftingName.holder = arguments
    try:
        # (no crash; the Python way reads the list as it is then)
        assert _op_record.op_arguments({"X": arguments}, {"Out": "c"}, fw.Variable) is None
    finally:
        ShiftingName.holder = None
