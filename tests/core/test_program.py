"""The in-memory program: building, printing, cloning, verifying, and the codec."""
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument, NotFound, OutOfRange
from fluid_nb.framework.attrs import AttrType
from fluid_nb.proto import framework_pb2 as pb


def _add_program():
    program = fluid.Program()
    block = program.global_block()
    x = block.create_var(name="x", shape=(-1, 3), dtype="float32", need_check_feed=True)
    y = block.create_var(name="y", shape=(3,), dtype="float32", persistable=True)
    block.append_op(type="elementwise_add", inputs={"X": x, "Y": y}, outputs={"Out": "z"})
    return program


def test_append_op_infers_output_shape_and_fills_default_attrs():
    program = _add_program()
    op = program.global_block().ops[0]
    assert program.global_block().var("z").shape == (-1, 3)
    assert op.attr("axis") == -1
    assert op.input("X") == ["x"] and op.output("Out") == ["z"]


def test_str_shows_one_line_per_op_with_inputs_and_attrs():
    text = str(_add_program())
    assert "{Out=['z']} = elementwise_add(inputs={X=['x'], Y=['y']}, axis = -1)" in text
    assert "persist var y : LOD_TENSOR.shape(3,).dtype(float32)" in text


def test_sub_blocks_print_nested_inside_their_op():
    program = _add_program()
    sub = program._create_block()
    sub.append_op(type="elementwise_add", inputs={"X": "x", "Y": "y"}, outputs={"Out": "w"})
    program._rollback()
    program.global_block().append_op(type="elementwise_add", inputs={"X": "x", "Y": "y"},
                                     outputs={"Out": "v"}, attrs={"sub_block": sub})
    lines = program.to_string(True).splitlines()
    nested = [l for l in lines if "block_idx:1" in l]
    assert nested and nested[0].startswith("        {")
    assert program.global_block().ops[1].attr_type("sub_block") == AttrType.BLOCK


def test_failed_append_leaves_no_op_and_no_variable():
    program = _add_program()
    block = program.global_block()
    block.create_var(name="bad", shape=(4, 5), dtype="float32")
    before_ops, before_vars = len(block.ops), set(block.vars)
    with pytest.raises(InvalidArgument, match="elementwise_add"):
        block.append_op(type="elementwise_add", inputs={"X": "x", "Y": "bad"},
                        outputs={"Out": "fresh"})
    assert len(block.ops) == before_ops and set(block.vars) == before_vars


def test_wrong_attribute_type_names_op_and_attribute():
    program = _add_program()
    with pytest.raises(InvalidArgument, match=r"elementwise_add: attribute 'axis' expected int"):
        program.global_block().append_op(type="elementwise_add", inputs={"X": "x", "Y": "y"},
                                         outputs={"Out": "q"}, attrs={"axis": "one"})


def test_missing_input_is_a_typed_error():
    program = _add_program()
    with pytest.raises(InvalidArgument, match=r"elementwise_add: input 'Y' expected a variable"):
        program.global_block().append_op(type="elementwise_add", inputs={"X": "x"},
                                         outputs={"Out": "q"})


def test_unknown_slot_is_a_typed_error():
    program = _add_program()
    with pytest.raises(InvalidArgument, match=r"input slot 'Z' expected one of"):
        program.global_block().append_op(type="elementwise_add",
                                         inputs={"X": "x", "Y": "y", "Z": "x"},
                                         outputs={"Out": "q"})


def test_lookups_raise_typed_errors():
    program = _add_program()
    with pytest.raises(NotFound, match="'nope'"):
        program.global_block().var("nope")
    with pytest.raises(OutOfRange):
        program.block(5)


def test_clone_is_deep_and_for_test_sets_is_test():
    program = _add_program()
    program.global_block().ops[0]._set_attr("is_test", False)
    twin = program.clone(for_test=True)
    assert twin.global_block().ops[0].attr("is_test") is True
    assert program.global_block().ops[0].attr("is_test") is False
    twin.global_block().var("z").shape = (1, 1)
    assert program.global_block().var("z").shape == (-1, 3)


def test_round_trip_keeps_unknown_ops_and_attribute_types():
    program = _add_program()
    block = program.global_block()
    block.append_op(type="my_custom_op", inputs={"X": ["x"]}, outputs={"Out": ["c"]},
                    attrs={"alpha": 0.5, "big": 1 << 40, "names": ["a", "b"], "flag": True})
    data = program.serialize_to_string()
    again = fluid.Program.parse_from_string(data)
    op = again.global_block().ops[-1]
    assert op.type == "my_custom_op" and op.attr("big") == 1 << 40
    assert op.attr_type("big") == AttrType.LONG and op.attr_type("names") == AttrType.STRINGS
    assert pb.ProgramDesc.FromString(again.serialize_to_string()) == pb.ProgramDesc.FromString(data)


def test_unknown_op_runs_into_a_clear_error():
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="x", shape=(1,), dtype="float32")
    block.append_op(type="my_custom_op", inputs={"X": ["x"]}, outputs={"Out": ["c"]})
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(fluid.errors.Unimplemented, match="my_custom_op"):
        exe.run(program, feed={"x": [1.0]}, fetch_list=["c"], scope=fluid.Scope())


@pytest.mark.parametrize("data", [b"\x0a\xff\xff", b"garbage-bytes-not-a-program", b""])
def test_corrupt_or_truncated_program_bytes_raise_invalid_argument(data):
    with pytest.raises(InvalidArgument, match="ProgramDesc"):
        fluid.Program.parse_from_string(data)


def test_truncated_real_program_raises_invalid_argument(tmp_path):
    good = _add_program().serialize_to_string()
    with pytest.raises(InvalidArgument):
        fluid.Program.parse_from_string(good[: len(good) // 2])


def test_verify_reports_unbound_inputs_and_redefinitions():
    program = _add_program()
    block = program.global_block()
    block.ops[0].inputs["X"] = ["ghost"]
    block.append_op(type="elementwise_add", inputs={"X": "y", "Y": "y"}, outputs={"Out": "z"})
    with pytest.raises(InvalidArgument) as info:
        fluid.verify(program)
    assert "'ghost' is unbound" in str(info.value)
    assert "already written" in str(info.value)


def test_verify_accepts_a_clean_program():
    assert fluid.verify(_add_program())


def test_program_guard_switches_default_programs():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        assert fluid.default_main_program() is main
        assert fluid.default_startup_program() is startup
    assert fluid.default_main_program() is not main
    with pytest.raises(InvalidArgument):
        with fluid.program_guard("main"):
            pass


def test_an_ops_stack_starts_at_the_code_that_asked_its_block_for_it():
    from fluid_nb.framework import callstack
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data(name="x", shape=[-1, 3], dtype="float32")
        fluid.layers.elementwise_add(x, x)  # a one-op layer
        x * x  # a Variable operator
        main.global_block().append_op(type="scale", inputs={"X": x}, outputs={"Out": "y"})
    stacks = [[function for _, _, function in callstack.frames(op)]
              for op in main.global_block().ops]
    block_methods = {"append_op", "_append_args", "capture"}
    assert all(not block_methods & set(functions) for functions in stacks)
    this_test = "test_an_ops_stack_starts_at_the_code_that_asked_its_block_for_it"
    layer, operator, raw = (functions[::-1] for functions in stacks)  # innermost first
    # a one-op layer's common call and a Variable operator's two-Variable case are C, with
    # no frame of their own: their ops' stacks start at the line using them, whichever way
    # append_one_op then took (the first call of a signature is Python)
    assert layer[0] == operator[0] == this_test
    assert raw[0] == this_test


def _python_walk(skip, max_frames):
    """The walk ``capture`` makes, written with sys._getframe: (code, f_lasti) pairs."""
    import sys
    frame, items = sys._getframe(skip), []  # (this function stands where capture would)
    while frame is not None and len(items) < 2 * max_frames:
        items += frame.f_code, frame.f_lasti
        frame = None if frame.f_code.co_name == "<module>" else frame.f_back
    return tuple(items)


def test_a_captured_stack_is_the_frames_above_the_caller_up_to_the_first_module_body():
    from fluid_nb.framework.callstack import capture, frames, MAX_FRAMES

    def nested(depth, skip, max_frames):
        if depth:
            return nested(depth - 1, skip, max_frames)
        return capture(skip, max_frames), _python_walk(skip, max_frames)

    for skip in (2, 3, 5):
        captured, walked = nested(4, skip, MAX_FRAMES)
        assert captured == walked  # the same code objects, at the same instructions
        assert captured[-2].co_name == "<module>" or len(captured) == 2 * MAX_FRAMES
    captured, _ = nested(4, 1, MAX_FRAMES)
    assert [code.co_name for code in captured[::2][:5]] == ["nested"] * 5
    assert nested(40, 2, 3)[0] == nested(40, 2, 3)[1] and len(nested(40, 2, 3)[0]) == 6
    assert capture(10_000) == ()  # above the outermost frame: nothing
    op = type("Op", (), {"callstack": nested(0, 1, MAX_FRAMES)[0]})()
    filename, line, function = frames(op)[-1]  # outermost first: the innermost is last
    assert (filename, function) == (__file__, "nested")
    assert "return capture(skip, max_frames)" in open(__file__).readlines()[line - 1]
    with pytest.raises(TypeError):
        capture(1, 2, 3)


def test_a_captured_stack_walks_through_c_calls_generators_and_comprehensions():
    """The frames above a C call (``map``), a generator's and a comprehension's are the
    ones Python's own frames list, at the same instructions."""
    from fluid_nb.framework.callstack import capture, MAX_FRAMES

    def both(skip):
        return capture(skip, MAX_FRAMES), _python_walk(skip, MAX_FRAMES)

    def through_map(skip):
        return list(map(both, [skip]))[0]

    def from_generator(skip):
        yield both(skip)

    for skip in (2, 3, 4):  # (frame 1 is both's own, at two different instructions)
        for captured, walked in (through_map(skip), next(from_generator(skip)),
                                 [both(skip) for _ in range(1)][0]):
            assert captured == walked


def test_argument_records_holding_only_names_are_untracked_and_tracked_again_if_that_changes():
    import gc
    from fluid_nb.framework.callstack import untrack_arguments
    def made(*items):  # (a tuple literal of constants is made untracked when compiled)
        return tuple(items)
    names = {"X": made("a", "b"), "Y": made("c"), "Z": "d"}
    with_a_list = {"X": made("a"), "Y": ["c"]}
    with_a_variable = {"X": made(object())}
    assert gc.is_tracked(names) and gc.is_tracked(names["X"])
    untrack_arguments(names, with_a_list, with_a_variable, "not a dict")
    assert not gc.is_tracked(names) and not any(map(gc.is_tracked, names.values()))
    # a dict holding a container is left as it was, its tuples too
    assert gc.is_tracked(with_a_list) and gc.is_tracked(with_a_list["X"])
    assert gc.is_tracked(with_a_variable) and gc.is_tracked(with_a_variable["X"])
    names["W"] = [names]  # a cycle through the dict: CPython tracks it again
    assert gc.is_tracked(names)
    assert untrack_arguments() is None


def test_a_layer_temporary_is_named_as_two_generated_names_and_taken_back_as_two():
    from fluid_nb.framework.unique_name import UniqueNameGenerator
    two_calls, one_call = UniqueNameGenerator("p/"), UniqueNameGenerator("p/")
    for _ in range(3):
        assert one_call.temporary("relu") == two_calls(two_calls("relu") + ".tmp")
    assert one_call.ids == two_calls.ids
    one_call.undo = []
    one_call.temporary("relu")
    one_call.take_back(one_call.undo)
    assert one_call.ids == two_calls.ids
    # without a log, the last temporary of a layer type is taken back from the counters
    one_call.undo = None
    one_call.temporary("relu")
    one_call.take_back_temporary("relu")
    assert one_call.ids == two_calls.ids
    fresh = UniqueNameGenerator("p/")
    fresh.temporary("sigmoid")
    fresh.take_back_temporary("sigmoid")
    assert fresh.ids == {}


def test_unique_names_count_per_key_and_guard_restarts():
    with fluid.unique_name.guard():
        assert fluid.unique_name.generate("fc") == "fc_0"
        assert fluid.unique_name.generate("fc") == "fc_1"
        assert fluid.unique_name.generate("conv") == "conv_0"
    with fluid.unique_name.guard():
        assert fluid.unique_name.generate("fc") == "fc_0"


def test_a_variable_holds_only_the_fields_it_was_given_and_reads_fluids_defaults_for_the_rest():
    """Programs make thousands of temporaries: a field left at its default is the class's,
    read the same, and a failed layer that changed such a variable gives it back."""
    program = fluid.Program()
    block = program.global_block()
    plain = block.create_var(name="plain")
    assert set(vars(plain)) == {"block", "name"}
    assert (plain.type, plain.shape, plain.dtype, plain.lod_level, plain.persistable,
            plain.stop_gradient, plain.need_check_feed, plain.is_data, plain.error_clip) == (
        fluid.core.VarDesc.VarType.LOD_TENSOR, (), fluid.core.VarDesc.VarType.FP32, 0,
        False, False, False, False, None)
    given = block.create_var(name="given", shape=[2, 3], dtype="int64", lod_level=1,
                             persistable=True, stop_gradient=True)
    assert (given.shape, given.dtype, given.lod_level, given.persistable,
            given.stop_gradient) == ((2, 3), fluid.core.VarDesc.VarType.INT64, 1, True, True)
    with fluid.program_guard(program, fluid.Program()):
        x = fluid.layers.data(name="x", shape=[4], dtype="float32")
        with pytest.raises(InvalidArgument):
            with fluid.framework.transaction.atomic(program):
                block.append_op(type="scale", inputs={"X": x}, outputs={"Out": plain})
                assert plain.shape == (-1, 4)  # (inference wrote it)
                fluid.layers.fc(x, size=-2)
    assert set(vars(plain)) == {"block", "name"} and plain.shape == ()


def test_the_collectors_walk_of_an_op_visits_its_block_alone_and_still_finds_its_cycles():
    """An op's fields besides its block hold names and plain values, nothing that refers
    back to it, so the cyclic collector's walk of an op visits its class and block alone
    (a live loop keeps every op, and each pass walked each field of each); the cycle
    through the block (its ops hold the op) is still found, and so is one through a
    subclass's own field."""
    import gc
    import weakref
    from fluid_nb.framework.program import Operator
    program = fluid.Program()
    block = program.global_block()
    x = block.create_var(name="x", shape=[2], dtype="float32")
    op = block.append_op(type="scale", inputs={"X": x}, outputs={"Out": "y"},
                         attrs={"scale": 2.0})
    assert gc.get_referents(op) == [Operator, block]

    class NotedOp(Operator):
        __slots__ = ("note",)
    noted = NotedOp(block, "scale", {"X": ("x",)}, {"Out": ("z",)}, {"scale": 3.0})
    noted.note = [noted]  # a cycle of its own, through the subclass's field
    assert gc.get_referents(noted) == [noted.note, NotedOp, block]
    block.ops.append(noted)
    gone = [weakref.ref(v) for v in (program, block, op, noted)]
    del program, block, x, op, noted
    gc.collect()
    assert [ref() for ref in gone] == [None] * 4
