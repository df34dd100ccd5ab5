"""The C check of a program file's bytes (``proto/_wire.c``) against the Python walk it
stands for (``proto/wire.py``): it may say "not sure" of bytes the walk accepts (the walk
then runs), but never "valid" of bytes the walk refuses."""
import pathlib
import random

import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument
from fluid_nb.proto import framework_pb2 as pb
from fluid_nb.proto import wire

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "paddle"
FILES = sorted([*FIXTURES.glob("programs/*.pb"), *FIXTURES.glob("**/__model__"),
                *FIXTURES.glob("**/*.pdmodel")])


def _c_says_valid(data):
    tables, root = wire._tables_for(pb.ProgramDesc.DESCRIPTOR)
    return wire._core.valid(bytes(data), tables, root)


def _walk_accepts(data):
    try:
        wire.check_message(data, pb.ProgramDesc.DESCRIPTOR, "test")
        return True
    except InvalidArgument:
        return False


def test_every_saved_paddle_program_is_valid_to_both():
    assert len(FILES) > 20
    for path in FILES:
        data = path.read_bytes()
        assert _walk_accepts(data), path
        assert _c_says_valid(data), path


def _damaged(data, rng):
    at = rng.randrange(len(data))
    kind = rng.randrange(4)
    if kind == 0:
        bad = bytearray(data)
        bad[at] ^= 1 << rng.randrange(8)
        return bytes(bad)
    if kind == 1:
        return data[:at]
    if kind == 2:
        return data[:at] + bytes([rng.randrange(256)]) + data[at:]
    return data[:at] + data[at + 1:]


@pytest.mark.parametrize("path", FILES[:6], ids=lambda p: p.name)
def test_damaged_bytes_are_never_valid_to_c_and_refused_by_the_walk(path):
    data = path.read_bytes()
    rng = random.Random(f"wire-{path.name}")
    agreed = accepted = 0
    for _ in range(400):
        bad = _damaged(data, rng)
        walk, c = _walk_accepts(bad), _c_says_valid(bad)
        assert walk or not c, f"C says valid where the walk refuses: {path.name}"
        accepted += walk
        agreed += walk and c
    # (it is sure of what the walk accepts, bar the rare unknown groups and huge varints)
    assert agreed >= 0.9 * accepted


def _program_with_var(var_bytes_edit):
    """A one-block program whose variable's bytes ``var_bytes_edit`` changes (same length)."""
    message = pb.ProgramDesc()
    block = message.blocks.add()
    block.idx, block.parent_idx = 0, -1
    var = block.vars.add()
    var.name = "x_var"
    var.type.type = pb.VarType.LOD_TENSOR
    original = var.SerializeToString()
    data = message.SerializeToString()
    edited = var_bytes_edit(original)
    assert len(edited) == len(original) and data.count(original) == 1
    return data.replace(original, edited)


@pytest.mark.parametrize("edit, words", [
    (lambda var: var.replace(b"x_var", b"x\xffvar"), "UTF-8"),
    (lambda var: var.replace(b"\x08\x07", b"\x08\x63"), "VarType"),  # type 99: undefined
    (lambda var: var.replace(b"\x12\x02", b"\x15\x02"), "wire type"),  # type as fixed32
])
def test_a_refused_file_is_worded_by_the_walk_with_its_byte_offset(edit, words):
    assert _c_says_valid(_program_with_var(lambda var: var))
    data = _program_with_var(edit)
    assert not _c_says_valid(data)
    with pytest.raises(InvalidArgument, match=r"byte \d+") as refused:
        fluid.Program.parse_from_string(data)
    assert words in str(refused.value)


def test_a_valid_file_works_out_its_offsets_only_when_a_later_check_asks():
    data = FILES[0].read_bytes()
    root = wire.check_file(data, pb.ProgramDesc.DESCRIPTOR, "test")
    assert isinstance(root, wire.Deferred)
    node = wire.check_message(data, pb.ProgramDesc.DESCRIPTOR, "test")
    assert root.at("blocks", 0).at("ops", 1).offset("type") == \
        node.at("blocks", 0).at("ops", 1).offset("type")
    assert root.offset() == 0


def test_a_varint_longer_than_64_bits_is_left_to_the_walk():
    # field 1 (blocks) with an 11-byte length: the walk refuses it, C is not sure
    data = bytes([0x0A]) + bytes([0xFF] * 10) + bytes([0x01])
    assert not _c_says_valid(data) and not _walk_accepts(data)
    # a 10-byte tag whose number overflows 64 bits: unknown to the walk, left to it by C
    overflowing = bytes([0x88] + [0x80] * 8 + [0x02]) + bytes([0x00])
    assert not _c_says_valid(overflowing)
