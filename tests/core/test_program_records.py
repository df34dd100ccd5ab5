"""A program file's records are read from its bytes in C (``proto/_program_records.c``),
exactly as protobuf's parser reads them: whatever order the fields come in, packed or not,
with fields nobody defined among them; and written back byte for byte as protobuf's
serializer writes the same program. The few files whose reading protobuf defines by merging
(a singular message given twice) or that hold SCALAR attributes are left to protobuf's
parser, and values protobuf must judge to its serializer; bytes that are no program never
crash the reader."""
import pathlib
import random

import pytest

import fluid_nb as fluid
from fluid_nb.framework import codec
from fluid_nb.framework.attrs import AttrType
from fluid_nb.proto import framework_pb2 as pb
from fluid_nb.proto import _program_records

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "paddle"
PROGRAMS = sorted([*FIXTURES.rglob("*.pb"), *FIXTURES.rglob("*.pdmodel"),
                   *FIXTURES.rglob("__model__")])
VARINT, I64, LEN, I32 = 0, 1, 2, 5
FD = pb.OpDesc.DESCRIPTOR.fields[0].__class__


def _protobuf_records(data):
    return _comparable(codec._records_of(pb.ProgramDesc.FromString(data)))


def _read(data):
    records = _program_records.read_program(data)
    return records if records is None else _comparable(records)


def _comparable(records):
    """Records with the bytes they keep (a VarType of a kind not modeled, a variable's
    attributes) as protobuf writes them again: the reader keeps a file's own, whose fields
    may come in another order."""
    def again(message_type, raw):
        return raw if raw is None else message_type.FromString(raw).SerializeToString()
    blocks = [(idx, parent, forward,
               [(name, flags, (*var_type[:5], again(pb.VarType, var_type[5])),
                 [again(pb.VarDesc.Attr, raw) for raw in attrs])
                for name, flags, var_type, attrs in variables], ops)
              for idx, parent, forward, variables, ops in records[0]]
    return blocks, records[1], records[2]


# --- a wire writer: a message as its list of fields, and back -------------------------------
def _varint(value):
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _read_varint(data, pos):
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return result, pos


def _fields(data):
    """[(number, wire type, payload bytes)] of a message's bytes."""
    fields, pos = [], 0
    while pos < len(data):
        tag, pos = _read_varint(data, pos)
        number, wire = tag >> 3, tag & 7
        if wire == VARINT:
            _, end = _read_varint(data, pos)
        elif wire == LEN:
            length, pos = _read_varint(data, pos)
            end = pos + length
        else:
            end = pos + (8 if wire == I64 else 4)
        fields.append((number, wire, data[pos:end]))
        pos = end
    return fields


def _write(fields):
    out = bytearray()
    for number, wire, payload in fields:
        out += _varint(number << 3 | wire)
        if wire == LEN:
            out += _varint(len(payload))
        out += payload
    return bytes(out)


def _rewrite(data, descriptor, change, rng):
    """``data`` (a ``descriptor`` message) with ``change(fields, descriptor, rng)`` applied
    to it and, first, to every message inside it."""
    fields = []
    for number, wire, payload in _fields(data):
        field = descriptor.fields_by_number.get(number)
        if field is not None and field.type == FD.TYPE_MESSAGE and wire == LEN:
            payload = _rewrite(payload, field.message_type, change, rng)
        fields.append((number, wire, payload))
    return _write(change(fields, descriptor, rng))


_SCALAR_WIRE = {FD.TYPE_FLOAT: I32, FD.TYPE_DOUBLE: I64}


def _shuffled(fields, descriptor, rng):
    """Fields in another order (each field number's own values keep theirs)."""
    by_number = {}
    for field in fields:
        by_number.setdefault(field[0], []).append(field)
    order = [number for number, _, _ in fields]
    rng.shuffle(order)
    return [by_number[number].pop(0) for number in order]


def _repacked(fields, descriptor, rng):
    """Repeated numbers packed when they were not, and one by one when they were."""
    out = []
    for number, wire, payload in fields:
        field = descriptor.fields_by_number.get(number)
        if field is None or not field.is_repeated or field.type in (
                FD.TYPE_MESSAGE, FD.TYPE_STRING, FD.TYPE_BYTES):
            out.append((number, wire, payload))
        elif wire == LEN:  # packed: one field per value
            element = _SCALAR_WIRE.get(field.type, VARINT)
            pos = 0
            while pos < len(payload):
                end = _read_varint(payload, pos)[1] if element == VARINT else \
                    pos + (8 if element == I64 else 4)
                out.append((number, element, payload[pos:end]))
                pos = end
        else:
            out.append((number, LEN, payload))
    return out


def _with_unknown_fields(fields, descriptor, rng):
    """Fields nobody defined slipped in, of every wire type."""
    out = list(fields)
    for wire, payload in ((VARINT, _varint(rng.randrange(1 << 40))),
                          (I64, bytes(8)), (I32, b"\x01\x02\x03\x04"), (LEN, b"abc")):
        number = 200 + rng.randrange(50)
        out.insert(rng.randrange(len(out) + 1), (number, wire, payload))
    return out


def _with_scalars_again(fields, descriptor, rng):
    """Each singular scalar field also given before, with another value (the later wins)."""
    out = []
    for number, wire, payload in fields:
        field = descriptor.fields_by_number.get(number)
        if field is not None and not field.is_repeated and field.type != FD.TYPE_MESSAGE:
            decoy = b"\x07" if wire == VARINT else b"zz" if wire == LEN else \
                bytes(8 if wire == I64 else 4)
            if field.enum_type is None:
                out.append((number, wire, decoy))
        out.append((number, wire, payload))
    return out


# --- the records ---------------------------------------------------------------------------
@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_fixture_program_reads_as_protobuf_parses_it(path):
    data = path.read_bytes()
    assert _read(data) == _protobuf_records(data)


@pytest.mark.parametrize("change", [_shuffled, _repacked, _with_unknown_fields,
                                    _with_scalars_again])
def test_field_order_packing_and_unknown_fields_read_as_protobuf_reads_them(change):
    rng = random.Random(change.__name__)
    for path in PROGRAMS[::3]:
        data = _rewrite(path.read_bytes(), pb.ProgramDesc.DESCRIPTOR, change, rng)
        records = _read(data)
        assert records is not None, path
        assert records == _protobuf_records(data), path


def test_values_read_at_their_protobuf_types():
    """int32 negative numbers (ten-byte varints), float32 values widened as protobuf widens
    them, int64 past 32 bits, bools, and each attribute's default when its field is
    missing."""
    msg = pb.ProgramDesc.FromString(PROGRAMS[0].read_bytes())
    op = msg.blocks[0].ops[0]
    for name, attr_type, field, value in (("an_int", AttrType.INT, "i", -7),
                                          ("a_float", AttrType.FLOAT, "f", 0.1),
                                          ("a_long", AttrType.LONG, "l", -(1 << 40)),
                                          ("a_double", AttrType.FLOAT64, "float64", 0.1)):
        attr = op.attrs.add()
        attr.name, attr.type = name, attr_type
        setattr(attr, field, value)
    for name, attr_type in (("no_ints", AttrType.INTS), ("no_string", AttrType.STRING),
                            ("no_bool", AttrType.BOOLEAN)):
        attr = op.attrs.add()
        attr.name, attr.type = name, attr_type
    data = msg.SerializeToString()
    records = _read(data)
    assert records == _protobuf_records(data)
    attrs = {name: value for name, _, value in records[0][0][4][0][3]}
    assert attrs["an_int"] == -7 and attrs["a_long"] == -(1 << 40)
    assert attrs["a_float"] == pytest.approx(0.1, rel=1e-7) and attrs["a_float"] != 0.1
    assert attrs["a_double"] == 0.1
    assert (attrs["no_ints"], attrs["no_string"], attrs["no_bool"]) == ([], "", False)


# --- what is left to protobuf ----------------------------------------------------------------
def _twice(data, number):
    """ProgramDesc bytes whose every ``number`` field of each VarDesc comes twice."""
    def again(fields, descriptor, rng):
        if descriptor is not pb.VarDesc.DESCRIPTOR:
            return fields
        return [f for field in fields for f in ([field, field] if field[0] == number
                                                else [field])]
    return _rewrite(data, pb.ProgramDesc.DESCRIPTOR, again, None)


def test_a_singular_message_given_twice_is_left_to_protobuf_which_merges_it():
    data = _twice(PROGRAMS[0].read_bytes(), 2)  # each VarDesc's VarType twice
    assert _program_records.read_program(data) is None
    program = fluid.Program.parse_from_string(data)
    merged = pb.ProgramDesc.FromString(data).blocks[0].vars[0]
    var = program.global_block().vars[merged.name]
    # protobuf merges the two: the dims of the two descriptions, one after the other
    assert list(var.shape) == list(merged.type.lod_tensor.tensor.dims)


def test_scalar_attributes_are_left_to_protobuf():
    msg = pb.ProgramDesc.FromString(PROGRAMS[0].read_bytes())
    attr = msg.blocks[0].ops[0].attrs.add()
    attr.name, attr.type = "a_scalar", AttrType.SCALAR
    attr.scalar.type, attr.scalar.i = pb.Scalar.LONG, 3
    data = msg.SerializeToString()
    assert _program_records.read_program(data) is None
    program = fluid.Program.parse_from_string(data)
    assert program.global_block().ops[0].attrs["a_scalar"] == 3


def test_bytes_that_are_no_program_never_crash_the_reader():
    """Truncated, flipped and spliced bytes: records or None, never a crash or a hang (the
    wire check refuses such files before the reader sees them; the reader still holds)."""
    rng = random.Random(7)
    sources = [path.read_bytes() for path in PROGRAMS[:6]]
    for _ in range(1500):
        data = bytearray(rng.choice(sources))
        cut = rng.randrange(len(data))
        kind = rng.randrange(3)
        if kind == 0:
            data = data[:cut]
        elif kind == 1:
            for _ in range(rng.randrange(1, 8)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        else:
            data = data[:cut] + bytes(rng.randrange(256) for _ in range(16)) + data[cut:]
        records = _program_records.read_program(bytes(data))
        assert records is None or isinstance(records, tuple)
    with pytest.raises(TypeError):
        _program_records.read_program("not bytes")


def test_a_parameter_files_tensor_headers_read_as_protobuf_parses_them():
    """Each tensor of a parameter file starts with a TensorDesc (data type, dims): read in
    C whichever way its dims are written; bytes it leaves are walked and checked."""
    rng = random.Random(3)
    for data_type, dims in ((5, []), (5, [3, 4]), (3, [1 << 40, 0, 7]), (6, [-1, 2]),
                            (20, [2] * 9)):
        raw = pb.VarType.TensorDesc(data_type=data_type, dims=dims).SerializeToString()
        for change in (_repacked, _shuffled, _with_unknown_fields):
            for data in (raw, _rewrite(raw, pb.VarType.TensorDesc.DESCRIPTOR, change, rng)):
                parsed = pb.VarType.TensorDesc.FromString(data)
                assert _program_records.read_tensor_desc(data) == (parsed.data_type,
                                                                  tuple(parsed.dims))
    assert _program_records.read_tensor_desc(b"") is None  # (no data type: left to the walk)
    assert _program_records.read_tensor_desc(b"\x08") is None  # (truncated)


# --- writing -----------------------------------------------------------------------------
def _protobuf_bytes(program, *stamp):
    records = codec._program_records(program, *(stamp or (None, None)))
    return codec._message_of(records).SerializeToString()


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_fixture_program_is_written_as_protobuf_writes_it(path):
    program = fluid.Program.parse_from_string(path.read_bytes())
    for stamp in ((), (2006000, {"conv2d": 1, "matmul": 2})):  # (a file's own stamp wins)
        records = codec._program_records(program, *stamp) if stamp else \
            codec._program_records(program, None, None)
        assert _program_records.write_program(records) == _protobuf_bytes(program, *stamp)


def _built_program():
    """A program built here (no format stamp), with values at the edges of their types:
    negative int32s, floats float32 rounds, int64s past 32 bits, texts long enough for two-
    and three-byte lengths, lists empty and long."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[-1, 3], dtype="float32")
        y = fluid.layers.fc(x, 4, act="relu")
        fluid.layers.reshape(y, [-1, 2, 2])
        fluid.layers.scale(y, scale=0.1, bias=-(2.0 ** 40))
        fluid.optimizer.Adam(0.001).minimize(fluid.layers.mean(y))
    op = main.global_block().ops[0]
    op.attr_types.update({"long_text": AttrType.STRING, "big": AttrType.LONG,
                          "many": AttrType.INTS, "none": AttrType.FLOATS})
    op.attrs.update({"long_text": "é" * 9000, "big": -(1 << 40), "many": list(range(-300, 300)),
                     "none": []})
    return main


def test_values_at_the_edges_of_their_types_are_written_as_protobuf_writes_them():
    program = _built_program()
    records = codec._program_records(program, 2006000, {"scale": 1})
    data = _program_records.write_program(records)
    assert data == _protobuf_bytes(program, 2006000, {"scale": 1})
    assert fluid.Program.parse_from_string(data).global_block().ops[0].attrs["big"] == -(1 << 40)


@pytest.mark.parametrize("attr_type, value", [
    (AttrType.INT, 1.5),  # a float where an int is due
    (AttrType.INT, 1 << 31),  # past int32
    (AttrType.FLOAT, 1e39),  # past float32
    (AttrType.STRING, "\ud800"),  # a lone surrogate: no UTF-8 for it
    (AttrType.BOOLEAN, 1),  # an int where a bool is due
    (AttrType.INTS, (1, "2")),
    (AttrType.SCALAR, 3)])
def test_values_protobuf_must_judge_are_left_to_it(attr_type, value):
    program = _built_program()
    op = program.global_block().ops[0]
    op.attr_types["odd"], op.attrs["odd"] = attr_type, value
    assert _program_records.write_program(codec._program_records(program, None, None)) is None
    try:
        expected = _protobuf_bytes(program)
    except Exception as refused:  # what protobuf says of the value is what the save says
        with pytest.raises(type(refused)):
            program.serialize_to_string()
    else:
        assert program.serialize_to_string() == expected
