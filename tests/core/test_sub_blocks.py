"""The blocks an op runs, decided once by the attribute's declared type (framework.blocks),
and the DynamicRNN recogniser every DynamicRNN-aware part uses (framework.loops)."""
import pytest

import fluid_nb as fluid
from fluid_nb import layers
from fluid_nb.api.layers.rnn_layers import DynamicRNN
from fluid_nb.errors import InvalidArgument
from fluid_nb.framework.attrs import AttrType
from fluid_nb.framework.blocks import (block_attr_indices, block_attrs, sub_block,
                                       sub_block_indices, sub_blocks, walk_ops)
from fluid_nb.framework.codec import decode_program, encode_program
from fluid_nb.framework.loops import dynamic_rnn_layout
from fluid_nb.framework.program import Operator


def ops_of(program, op_type):
    return [op for block in program.blocks for op in block.ops if op.type == op_type]


def counting_loop():
    """i = 0; while i < 3: i += 1"""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        i = layers.fill_constant(shape=[1], dtype="int64", value=0)
        limit = layers.fill_constant(shape=[1], dtype="int64", value=3)
        cond = layers.less_than(x=i, y=limit)
        loop = layers.While(cond=cond)
        with loop.block():
            layers.increment(x=i, value=1, in_place=True)
            layers.less_than(x=i, y=limit, cond=cond)
    return main


def two_empty_blocks():
    program = fluid.Program()
    first = program._create_block()
    program._rollback()
    second = program._create_block()
    program._rollback()
    return program, first, second


# --- sub_blocks -----------------------------------------------------------------------------
def test_a_while_runs_its_body():
    main = counting_loop()
    loop, = ops_of(main, "while")
    body = main.block(1)
    assert sub_blocks(loop) == [body] and sub_block(loop) is body
    assert block_attrs(loop) == {"sub_block": [body]}
    assert block_attr_indices(loop) == {"sub_block": [1]}


def test_each_conditional_block_of_cond_runs_its_own_branch():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x = layers.fill_constant(shape=[1], dtype="float32", value=1.0)
        y = layers.fill_constant(shape=[1], dtype="float32", value=2.0)
        layers.cond(layers.less_than(x, y), lambda: layers.scale(x, 2.0),
                    lambda: layers.scale(y, 3.0))
    branches = ops_of(main, "conditional_block")
    assert [[b.idx for b in sub_blocks(op)] for op in branches] == [[1], [2]]


def test_a_blocks_attribute_gives_its_whole_list_declared_or_recorded():
    program, first, second = two_empty_blocks()
    block = program.global_block()
    # declared BLOCKS by the op's definition
    serve = block.append_op(type="listen_and_serv", attrs={"optimize_blocks": [first, second]})
    # an op fluid_nb does not define: the type recorded for it when it was appended
    switch = block.append_op(type="legacy_switch", attrs={"branches": [first, second]})
    assert sub_blocks(serve) == [first, second]
    assert sub_blocks(switch) == [first, second]
    decoded = decode_program(encode_program(program))
    assert [[b.idx for b in sub_blocks(op)] for op in decoded.global_block().ops] == \
        [[1, 2], [1, 2]]
    assert all(b.program is decoded for op in decoded.global_block().ops
               for b in sub_blocks(op))


def test_an_empty_blocks_list_is_still_a_block_attribute():
    program, _, _ = two_empty_blocks()
    serve = program.global_block().append_op(type="listen_and_serv",
                                              attrs={"optimize_blocks": []})
    assert sub_blocks(serve) == [] and block_attrs(serve) == {"optimize_blocks": []}


def test_an_op_without_block_attributes_runs_none():
    main = counting_loop()
    fill = ops_of(main, "fill_constant")[0]
    assert sub_blocks(fill) == [] and block_attrs(fill) == {}
    with pytest.raises(InvalidArgument, match="fill_constant: sub-blocks expected exactly one"):
        sub_block(fill)


def test_the_declared_type_decides_not_the_name():
    program, first, _ = two_empty_blocks()
    block = program.global_block()
    counter = block.append_op(type="legacy_counter", attrs={"sub_block": 1})  # recorded INT
    assert sub_blocks(counter) == []
    # nothing declares the attribute (an op made by hand): the conventional names decide
    bare = Operator(block, "legacy_loop", {}, {}, {"sub_block": 1, "level": 1})
    bare_list = Operator(block, "legacy_loops", {}, {}, {"sub_blocks": [1, 2]})
    assert sub_blocks(bare) == [first]
    assert [b.idx for b in sub_blocks(bare_list)] == [1, 2]


def test_a_recorded_type_decides_before_the_declared_one():
    program, first, _ = two_empty_blocks()
    block = program.global_block()
    op = block.append_op(type="fill_constant", outputs={"Out": "out"},
                         attrs={"shape": [1], "dtype": 5, "value": 1.0})
    assert sub_blocks(op) == []
    op.attrs["dtype"], op.attr_types["dtype"] = 1, AttrType.BLOCK  # (a file's record)
    op.attrs["tag"], op.attr_types["tag"] = 1, AttrType.INT
    assert sub_blocks(op) == [first] and block_attr_indices(op) == {"dtype": [1]}


def test_the_indices_are_those_of_the_block_attributes_in_order():
    main = counting_loop()
    program, first, second = two_empty_blocks()
    serve = program.global_block().append_op(type="listen_and_serv",
                                              attrs={"optimize_blocks": [second, first]})
    for op in [*main.global_block().ops, serve]:
        assert sub_block_indices(op) == [b.idx for b in sub_blocks(op)]
    assert sub_block_indices(serve) == [2, 1]


def test_walk_ops_visits_a_body_right_after_the_op_that_runs_it():
    main = counting_loop()
    walked = [(block.idx, index, op.type) for block, index, op in walk_ops(main.global_block())]
    assert walked == [(0, 0, "fill_constant"), (0, 1, "fill_constant"), (0, 2, "less_than"),
                      (0, 3, "while"), (1, 0, "increment"), (1, 1, "less_than")]
    flat = [op.type for _, _, op in walk_ops(main.global_block(), nested=False)]
    assert flat == ["fill_constant", "fill_constant", "less_than", "while"]


# --- the DynamicRNN recogniser --------------------------------------------------------------
def rnn_program():
    """A step input, a static input, a memory from a shape and one from an initial value,
    two outputs."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x = layers.data("x", [2], dtype="float32", lod_level=1)
        boot = layers.data("boot", [2], dtype="float32")
        static = layers.data("static", [3], dtype="float32")
        drnn = DynamicRNN()
        with drnn.block():
            word = drnn.step_input(x)
            seen = drnn.static_input(static)
            count = drnn.memory(shape=[1], value=0.0)
            acc = drnn.memory(init=boot)
            drnn.update_memory(count, layers.scale(count, bias=1.0))
            new_acc = layers.elementwise_add(acc, word)
            drnn.update_memory(acc, new_acc)
            drnn.output(new_acc, seen)
        outs = drnn()
    return main, drnn, outs, {"count": count, "acc": acc, "seen": seen}


def test_a_dynamic_rnn_is_recognised_with_its_parts():
    main, drnn, outs, shrunk = rnn_program()
    loop, = ops_of(main, "while")
    layout = dynamic_rnn_layout(loop)
    assert layout.while_op is loop and layout.body is main.block(1)
    assert layout.rank_table == drnn.lod_rank_table.name
    step_array = drnn.input_array[0][0].name
    assert layout.step_inputs == {step_array: "x"}
    memory_arrays = set(drnn.mem_dict.values())
    assert layout.memory_arrays == {a.name for a in memory_arrays} and len(memory_arrays) == 2
    assert layout.read_arrays == {step_array} | layout.memory_arrays
    assert {shrunk_name: kind for shrunk_name, (_, kind) in layout.shrinks.items()} == {
        shrunk["count"].name: "memory", shrunk["acc"].name: "memory",
        shrunk["seen"].name: "static_input"}
    assert layout.outputs == {out.name: array.name
                              for out, array in zip(outs, drnn.output_array)}
    assert layout.counter == drnn.step_idx.name


def test_a_plain_while_loop_is_no_dynamic_rnn():
    loop, = ops_of(counting_loop(), "while")
    assert dynamic_rnn_layout(loop) is None
