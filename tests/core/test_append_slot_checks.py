"""append_op remembers slot layouts that passed its check; a layout that fails the check is
refused however often a good one of the same op passed before, and refused whole."""
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument


def _block():
    block = fluid.Program().global_block()
    for name in ("a", "b", "c"):
        block.create_var(name=name, shape=[2, 3], dtype="float32")
    return block


def _contents(block):
    return [op.type for op in block.ops], list(block.vars)


@pytest.mark.parametrize("inputs, outputs, message", [
    ({"X": "a", "Z": "b"}, {"Out": "out"}, "input slot 'Z'"),
    ({"X": "a"}, {"Out": "out"}, "input 'Y' expected a variable"),
    ({"X": ["a", "c"], "Y": "b"}, {"Out": "out"}, "input 'X' expected one variable"),
    ({"X": "a", "Y": []}, {"Out": "out"}, "input 'Y' expected a variable"),
    ({"X": "a", "Y": "b"}, {"Result": "out"}, "output slot 'Result'"),
    ({"X": "a", "Y": "b"}, {}, "output 'Out' expected a variable"),
])
def test_a_bad_slot_layout_is_refused_after_good_ones_passed(inputs, outputs, message):
    block = _block()
    for i in range(3):  # the good layout, as Variables and as names, passes and is remembered
        block.append_op(type="elementwise_add", inputs={"X": "a", "Y": block.var("b")},
                        outputs={"Out": f"good_{i}"})
    before = _contents(block)
    with pytest.raises(InvalidArgument, match=message):
        block.append_op(type="elementwise_add", inputs=inputs, outputs=outputs)
    assert _contents(block) == before


def test_the_same_slots_of_another_op_are_checked_against_that_op():
    block = _block()
    block.append_op(type="elementwise_add", inputs={"X": "a", "Y": "b"}, outputs={"Out": "o"})
    with pytest.raises(InvalidArgument, match="relu: input slot 'Y'"):
        block.append_op(type="relu", inputs={"X": "a", "Y": "b"}, outputs={"Out": "p"})


def test_one_variable_in_a_list_is_the_same_layout_as_a_bare_one():
    block = _block()
    first = block.append_op(type="elementwise_add", inputs={"X": ["a"], "Y": ("b",)},
                            outputs={"Out": [block.var("c")]})
    second = block.append_op(type="elementwise_add", inputs={"X": "a", "Y": "b"},
                             outputs={"Out": "d"})
    # an op keeps each slot's names as a tuple, whatever form they were given in
    assert first.inputs == second.inputs == {"X": ("a",), "Y": ("b",)}
    assert first.outputs == {"Out": ("c",)} and second.outputs == {"Out": ("d",)}
    assert block.var("d").shape == (2, 3)
