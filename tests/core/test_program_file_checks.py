"""Program and parameter files are checked at one point each: a bad file is refused with a
typed error naming its byte offset, a failed load leaves the scope as it was, and saved
models hold only what the pruned program uses, stamped with Paddle's format version."""
import io
import os
import pathlib
import re
import struct

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb import layers
from fluid_nb.errors import InvalidArgument, NotFound
from fluid_nb.framework.attrs import AttrType
from fluid_nb.proto import framework_pb2 as pb
from fluid_nb.proto import tensor_stream
from fluid_nb.proto.paddle_versions import OP_VERSIONS, PADDLE_VERSION
from tests.core.test_loop_frames import build_rnn
from tests.errors.corpus import time_limit

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "paddle"
CONTROL_FLOW = FIXTURES / "programs" / "control_flow.pb"
MLP = FIXTURES / "inference" / "mlp"


def _message(path=CONTROL_FLOW):
    return pb.ProgramDesc.FromString(path.read_bytes())


def _refused(data, *words):
    with time_limit(5):
        with pytest.raises(InvalidArgument) as info:
            fluid.Program.parse_from_string(data)
    message = str(info.value)
    assert re.search(r"byte \d+", message), message
    for word in ("expected",) + words:
        assert word in message, message
    return message


def _first_op(msg, op_type):
    for b in msg.blocks:
        for o in b.ops:
            if o.type == op_type:
                return b, o
    raise AssertionError(op_type)


# --- program files ----------------------------------------------------------------------
def test_block_parents_forming_a_cycle_are_refused():
    msg = _message()
    msg.blocks[1].parent_idx, msg.blocks[2].parent_idx = 2, 1
    _refused(msg.SerializeToString(), "parent_idx")


def test_block_that_is_its_own_parent_is_refused():
    msg = _message()
    msg.blocks[1].parent_idx = 1
    _refused(msg.SerializeToString(), "parent_idx")


def test_global_block_with_a_parent_is_refused():
    msg = _message()
    msg.blocks[0].parent_idx = 0
    _refused(msg.SerializeToString(), "parent_idx")


def test_sub_block_attribute_naming_its_own_block_is_refused():
    msg = _message()
    _, op = _first_op(msg, "conditional_block")
    for a in op.attrs:
        if a.name == "sub_block":
            a.block_idx = 0
    _refused(msg.SerializeToString(), "sub_block")


def test_attribute_retyped_as_blocks_is_refused():
    msg = pb.ProgramDesc.FromString((MLP / "separate" / "__model__").read_bytes())
    _, op = _first_op(msg, "mul")
    a = next(a for a in op.attrs if a.name == "x_num_col_dims")
    a.type = AttrType.BLOCKS
    a.blocks_idx.extend([0, 0])
    _refused(msg.SerializeToString())


def test_attribute_of_a_known_op_with_another_type_is_refused():
    msg = pb.ProgramDesc.FromString((MLP / "separate" / "__model__").read_bytes())
    _, op = _first_op(msg, "mul")
    a = next(a for a in op.attrs if a.name == "x_num_col_dims")
    a.type, a.s = AttrType.STRING, "two"
    _refused(msg.SerializeToString(), "mul", "x_num_col_dims", "INT")


def test_an_attribute_written_twice_is_read_as_paddle_reads_it_the_later_value_winning():
    """Paddle 2.6 saves some ops (reshape2; the concat of split's gradient) with an attribute
    twice, and its OpDesc keeps the later one: such files open and run here too."""
    msg = pb.ProgramDesc.FromString((MLP / "separate" / "__model__").read_bytes())
    _, op = _first_op(msg, "mul")
    first = next(a for a in op.attrs if a.name == "x_num_col_dims")
    for value in (3, first.i):  # an odd value, then the file's own again, last
        again = op.attrs.add()
        again.CopyFrom(first)
        again.i = value
    extra = op.attrs.add()
    extra.name, extra.type, extra.s = "mkldnn_data_type", AttrType.STRING, "float32"
    op.attrs.add().CopyFrom(extra)
    program = fluid.Program.parse_from_string(msg.SerializeToString())
    mul = next(op for op in program.global_block().ops if op.type == "mul")
    assert mul.attrs["x_num_col_dims"] == first.i and mul.attrs["mkldnn_data_type"] == "float32"
    # written back once each, and a retyped duplicate is still checked
    again_msg = pb.ProgramDesc.FromString(program.serialize_to_string())
    _, saved = _first_op(again_msg, "mul")
    assert [a.name for a in saved.attrs].count("x_num_col_dims") == 1
    op.attrs.add().CopyFrom(first)
    op.attrs[-1].type, op.attrs[-1].s = AttrType.STRING, "two"
    _refused(msg.SerializeToString(), "mul", "x_num_col_dims", "INT")


def _comparisons(count):
    """A ProgramDesc of ``count`` less_than ops alike (``axis`` -1 each, checked to be >= -1)."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = layers.data("x", [4], dtype="float32")
        for _ in range(count):
            layers.less_than(x, x)
    return pb.ProgramDesc.FromString(main.serialize_to_string())


def _axis(op):
    return next(a for a in op.attrs if a.name == "axis")


def test_each_op_is_checked_though_earlier_ops_of_its_type_repeat_its_attributes():
    """One check serves the ops of a file whose attributes repeat an earlier op's (name, wire
    type and value alike): an op that differs in any of them is checked for itself."""
    msg = _comparisons(3)
    ops = [o for o in msg.blocks[0].ops if o.type == "less_than"]
    program = fluid.Program.parse_from_string(msg.SerializeToString())
    assert [op.attrs["axis"] for op in program.global_block().ops
            if op.type == "less_than"] == [-1, -1, -1]
    _axis(ops[2]).i = -2  # the same name and wire type, a value the checker refuses
    assert "op 2 'less_than'" in _refused(msg.SerializeToString(), "axis", ">= -1")
    _axis(ops[2]).i = -1
    _axis(ops[2]).type, _axis(ops[2]).l = AttrType.LONG, -1  # an int written as LONG: fits
    program = fluid.Program.parse_from_string(msg.SerializeToString())
    assert program.global_block().ops[-1].attr_type("axis") == AttrType.LONG
    _axis(ops[1]).type, _axis(ops[1]).f = AttrType.FLOAT, -1.0  # the same value as a float
    assert "op 1 'less_than'" in _refused(msg.SerializeToString(), "axis", "INT")
    _axis(ops[1]).type = AttrType.INT
    keep = [a for a in ops[1].attrs if a.name != "axis"]  # required? (no: it has a default)
    del ops[1].attrs[:]
    ops[1].attrs.extend(keep)
    program = fluid.Program.parse_from_string(msg.SerializeToString())
    assert program.global_block().ops[1].attrs["axis"] == -1


def test_non_utf8_variable_name_is_refused_with_its_offset():
    msg = pb.ProgramDesc.FromString((MLP / "separate" / "__model__").read_bytes())
    msg.blocks[0].vars[0].name = "zz_marker"
    data = msg.SerializeToString()
    at = data.index(b"zz_marker")
    bad = data[:at] + b"\xff" + data[at + 1:]
    assert f"byte {at}" in _refused(bad, "UTF-8")


def test_truncated_program_names_a_byte_offset():
    data = (MLP / "separate" / "__model__").read_bytes()
    _refused(data[:len(data) // 2])


def test_missing_required_attribute_is_refused_at_decode_naming_op_and_attribute():
    msg = _message()
    _, op = _first_op(msg, "conditional_block")
    keep = [a for a in op.attrs if a.name != "sub_block"]
    del op.attrs[:]
    op.attrs.extend(keep)
    _refused(msg.SerializeToString(), "conditional_block", "sub_block", "required")


def test_verify_reports_a_missing_required_attribute_instead_of_a_key_error():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = layers.data("x", [4], dtype="float32")
        layers.clip(x, min=-1.0, max=1.0)
    op = next(op for op in main.global_block().ops if op.type == "clip")
    del op.attrs["max"]
    with pytest.raises(InvalidArgument, match="'max'.*required"):
        fluid.verify(main)


def test_decoded_op_missing_a_defaulted_attribute_gets_the_default_and_runs():
    msg = pb.ProgramDesc.FromString((MLP / "separate" / "__model__").read_bytes())
    _, op = _first_op(msg, "mul")
    keep = [a for a in op.attrs if a.name != "y_num_col_dims"]
    del op.attrs[:]
    op.attrs.extend(keep)
    program = fluid.Program.parse_from_string(msg.SerializeToString())
    mul = next(op for op in program.global_block().ops if op.type == "mul")
    assert mul.attrs["y_num_col_dims"] == 1
    fluid.verify(program, check_shapes=False)


def test_unknown_op_types_are_kept():
    msg = _message()
    msg.blocks[0].ops[0].type = "an_op_no_one_defined"
    program = fluid.Program.parse_from_string(msg.SerializeToString())
    assert program.global_block().ops[0].type == "an_op_no_one_defined"


# --- parameter files --------------------------------------------------------------------
def _record(array, lod=()):
    out = io.BytesIO()
    tensor_stream.write_lod_tensor(out, array, lod)
    return out.getvalue()


def _varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _with_desc(dims, data_type=5, data=b""):
    """A record whose TensorDesc is written field by field (any data_type code, any dims)."""
    desc = b"\x08" + _varint(data_type) + b"".join(b"\x10" + _varint(d) for d in dims)
    return struct.pack("<IQI", 0, 0, 0) + struct.pack("<i", len(desc)) + desc + data


def _stream_refused(data, *words):
    with pytest.raises(InvalidArgument) as info:
        tensor_stream.read_one(data, "w.bin")
    message = str(info.value)
    assert re.search(r"byte \d+", message), message
    for word in ("w.bin", "expected") + words:
        assert word in message, message
    return message


def test_dims_whose_product_passes_int64_are_refused_as_truncation():
    _stream_refused(_with_desc([1 << 40, 1 << 40]), "bytes")


def test_negative_dims_name_a_byte_offset():
    _stream_refused(_with_desc([2, -3]), "dims")


def test_unknown_dtype_code_names_a_byte_offset():
    _stream_refused(_with_desc([1], data_type=99), "data_type")


def test_non_element_dtype_names_a_byte_offset():
    _stream_refused(_with_desc([1], data_type=7), "LOD_TENSOR")


def test_stream_version_names_a_byte_offset():
    data = bytearray(_record(np.zeros(2, "float32")))
    data[0] = 1
    assert "byte 0" in _stream_refused(bytes(data), "version")


def test_lod_not_ending_at_the_row_count_names_a_byte_offset():
    _stream_refused(_record(np.zeros((3, 1), "float32"), [[0, 1, 5]]), "LoD level 0")


def test_lod_level_size_not_in_uint64s_names_a_byte_offset():
    data = bytearray(_record(np.zeros((3, 1), "float32"), [[0, 1, 3]]))
    data[12] = 7
    _stream_refused(bytes(data), "LoD level 0 size")


# --- loads are transactions -------------------------------------------------------------
def _two_params(tmp_path):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = layers.data("x", [3], dtype="float32")
        layers.fc(x, size=2)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    with fluid.scope_guard(scope):
        fluid.io.save_params(exe, str(tmp_path), main)
    return main, exe


def test_failed_load_leaves_the_scope_as_it_was(tmp_path):
    main, exe = _two_params(tmp_path)
    names = sorted(p.name for p in main.all_parameters())
    bias = next(n for n in names if n.endswith("b_0"))
    weight = next(n for n in names if n.endswith("w_0"))
    # the last file loaded carries a LoD that does not fit its rows
    last = sorted(names)[-1]
    array = np.asarray(tensor_stream.read_one((tmp_path / last).read_bytes(), last)[0])
    (tmp_path / last).write_bytes(_record(array, [[0, 1, array.shape[0] + 4]]))
    scope = fluid.Scope()
    scope.var(bias).get_tensor().set(np.full([2], 7, "float32"))
    before = {n: np.asarray(v.value).copy() for n, v in scope.vars.items()}
    with pytest.raises(InvalidArgument, match="byte"):
        fluid.io.load_vars(exe, str(tmp_path), main, predicate=fluid.io.is_parameter,
                           scope=scope)
    assert sorted(scope.vars) == sorted(before) and weight not in scope.vars
    np.testing.assert_array_equal(np.asarray(scope.vars[bias].value), before[bias])


def test_loaded_parameters_are_the_scopes_own_arrays_not_the_files_bytes(tmp_path):
    """A parameter file is read as views of its bytes; the scope gets copies it may write."""
    main, exe = _two_params(tmp_path)
    names = sorted(p.name for p in main.all_parameters())
    for folder, filename in ((tmp_path, None), (tmp_path / "one", "params")):
        scope = fluid.Scope()
        fluid.io.load_vars(exe, str(folder), main, predicate=fluid.io.is_parameter,
                           filename=filename, scope=scope)
        saved = {name: np.asarray(scope.vars[name].value).copy() for name in names}
        with fluid.scope_guard(scope):  # (the next round loads these from one file)
            fluid.io.save_params(exe, str(tmp_path / "one"), main, filename="params")
        for name in names:
            value = np.asarray(scope.vars[name].value)
            assert value.flags.writeable, name
            value[...] = 5.0
            np.testing.assert_array_equal(np.asarray(scope.vars[name].value), 5.0)
        reloaded = fluid.Scope()
        fluid.io.load_vars(exe, str(tmp_path / "one"), main, predicate=fluid.io.is_parameter,
                           filename="params", scope=reloaded)
        for name in names:  # (the writes above reached neither the files nor their reading)
            np.testing.assert_array_equal(np.asarray(reloaded.vars[name].value), saved[name])


def test_directory_where_a_parameter_file_is_expected_names_the_path(tmp_path):
    main, exe = _two_params(tmp_path)
    name = main.all_parameters()[0].name
    os.unlink(tmp_path / name)
    os.mkdir(tmp_path / name)
    with pytest.raises(InvalidArgument, match="directory") as info:
        fluid.io.load_vars(exe, str(tmp_path), main, predicate=fluid.io.is_parameter,
                           scope=fluid.Scope())
    assert str(tmp_path / name) in str(info.value)


def test_file_where_a_directory_is_expected_names_the_path(tmp_path):
    main, exe = _two_params(tmp_path)
    target = tmp_path / main.all_parameters()[0].name
    with pytest.raises(InvalidArgument, match="a directory") as info:
        fluid.io.load_vars(exe, str(target), main, predicate=fluid.io.is_parameter,
                           scope=fluid.Scope())
    assert str(target) in str(info.value)


def test_missing_model_file_is_not_found_naming_the_path(tmp_path):
    with pytest.raises(NotFound) as info:
        fluid.io.load_inference_model(str(tmp_path), fluid.Executor(fluid.CPUPlace()))
    assert "__model__" in str(info.value)


# --- saved models ----------------------------------------------------------------------
def test_saved_dynamic_rnn_model_keeps_only_the_blocks_and_variables_it_uses(tmp_path):
    main, startup, _ = build_rnn(backward=False)
    with fluid.program_guard(main, startup), fluid.unique_name.guard("opt"):
        out = main.global_block().ops[-1].output_arg_names[0]
        loss = main.global_block().var(out)
        fluid.optimizer.SGD(learning_rate=0.1).minimize(loss, startup_program=startup)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    assert any(op.type == "while_grad" for op in main.global_block().ops)
    with fluid.scope_guard(scope):
        fluid.io.save_inference_model(str(tmp_path), ["x"], [loss], exe, main_program=main)
    msg = pb.ProgramDesc.FromString((tmp_path / "__model__").read_bytes())
    ops = [o.type for b in msg.blocks for o in b.ops]
    names = [v.name for b in msg.blocks for v in b.vars]
    assert "while_grad" not in ops and not [n for n in names if "@GRAD" in n]
    assert len(msg.blocks) == 2 and msg.blocks[1].parent_idx == 0
    assert msg.version.version == PADDLE_VERSION == 2006002
    assert {p.op_name: p.op_version.version for p in msg.op_version_map.pair} == OP_VERSIONS
    program, feeds, fetches = fluid.io.load_inference_model(str(tmp_path), exe,
                                                            scope=fluid.Scope())
    fluid.verify(program, check_shapes=False)
    x = fluid.create_lod_tensor(np.ones((4, 3)), [[3, 1]], fluid.CPUPlace())
    again = fluid.Scope()
    fluid.io.load_inference_model(str(tmp_path), exe, scope=again)
    value, = exe.run(program, feed={"x": x}, fetch_list=fetches, scope=again)
    assert np.isfinite(np.asarray(value)).all()


def test_saved_model_keeps_the_version_of_a_loaded_paddle_program(tmp_path):
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    program, feeds, fetches = fluid.io.load_inference_model(str(MLP / "separate"), exe,
                                                            scope=scope)
    with fluid.scope_guard(scope):
        fluid.io.save_inference_model(str(tmp_path), feeds, fetches, exe, main_program=program)
    original = pb.ProgramDesc.FromString((MLP / "separate" / "__model__").read_bytes())
    saved = pb.ProgramDesc.FromString((tmp_path / "__model__").read_bytes())
    assert saved.version == original.version and saved.op_version_map == original.op_version_map

