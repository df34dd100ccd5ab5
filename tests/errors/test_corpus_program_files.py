"""Bad-input corpus, program files: byte-level damage (bit flips, truncations, insertions,
deletions) at many offsets of real Paddle 2.6 programs, and field-level edits made through
the protobuf messages (block parent cycles, bad sub_block indices, attributes retyped as
blocks, non-UTF-8 names, huge repeated fields). Every refusal must name a byte offset."""
import pathlib
import random

import pytest

import fluid_nb as fluid
from fluid_nb.framework.attrs import AttrType
from fluid_nb.proto import framework_pb2 as pb
from tests.errors.corpus import Case, check

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "paddle"
PROGRAMS = {
    "mlp": FIXTURES / "inference" / "mlp" / "separate" / "__model__",
    "control_flow": FIXTURES / "programs" / "control_flow.pb",
    "dynamic_rnn": FIXTURES / "control_flow" / "dynamic_rnn_raw" / "main.pdmodel",
}


def _decode_and_use(data):
    """Decode, then do what a viewer does with a loaded program: print it, save it again,
    and look up every input (a parent cycle would loop here)."""
    program = fluid.Program.parse_from_string(data)
    program.to_string(throw_on_error=False)
    program.serialize_to_string()
    for block in program.blocks:
        for op in block.ops:
            for name in op.input_arg_names:
                block._find_var_recursive(name)
            block._find_var_recursive("a name no block declares")


def _case(family, name, data, must_fail):
    return Case(family, name, act=lambda: _decode_and_use(data), must_fail=must_fail,
                mentions=("byte",))


def _byte_cases():
    cases = []
    for label, path in PROGRAMS.items():
        data = path.read_bytes()
        rng = random.Random(f"bytes-{label}")
        for k in range(20):
            at, bit = rng.randrange(len(data)), rng.randrange(8)
            bad = bytearray(data)
            bad[at] ^= 1 << bit
            cases.append(_case("program_bitflip", f"{label}-{at}-{bit}", bytes(bad), None))
        for k in range(12):
            at = rng.randrange(1, len(data))
            cases.append(_case("program_truncated", f"{label}-{at}", data[:at], None))
        for k in range(10):
            at = rng.randrange(len(data))
            byte = rng.randrange(256)
            cases.append(_case("program_inserted", f"{label}-{at}-{byte}",
                               data[:at] + bytes([byte]) + data[at:], None))
        for k in range(10):
            at = rng.randrange(len(data))
            cases.append(_case("program_deleted", f"{label}-{at}", data[:at] + data[at + 1:],
                               None))
    cases.append(_case("program_truncated", "empty", b"", True))
    cases.append(_case("program_bytes", "not-a-program", b"\x80\x04\x95 pickle", True))
    return cases


def _message(label):
    return pb.ProgramDesc.FromString(PROGRAMS[label].read_bytes())


def _edit(label, change):
    msg = _message(label)
    change(msg)
    return msg.SerializeToString()


def _set_parents(*parents):
    def change(msg):
        for block, parent in zip(msg.blocks, parents):
            block.parent_idx = parent
    return change


def _sub_block_attrs(msg):
    return [(b.idx, a) for b in msg.blocks for o in b.ops for a in o.attrs
            if a.type in (AttrType.BLOCK, AttrType.BLOCKS)]


def _field_cases():
    cases = []
    blocks = len(_message("control_flow").blocks)
    for parents in [(-1, 1, 0, 0), (-1, 2, 1, 0), (-1, 0, 3, 2), (0, 0, 0, 0), (-1, 0, 0, 3),
                    (-1, 5, 0, 0), (-1, -2, 0, 0), (1, 0, 0, 0), (-1, 0, 2, 0)]:
        cases.append(_case("program_parents", "-".join(map(str, parents)),
                           _edit("control_flow", _set_parents(*parents)), True))
    for label in ("control_flow", "dynamic_rnn"):
        count = len(_message(label).blocks)
        for k, (owner, _) in enumerate(_sub_block_attrs(_message(label))):
            for target in sorted({owner, 0, -1, count, 1 << 30, max(owner - 1, 0)}):
                def change(msg, k=k, target=target):
                    _, attr = _sub_block_attrs(msg)[k]
                    if attr.type == AttrType.BLOCK:
                        attr.block_idx = target
                    else:
                        attr.blocks_idx[:] = [target]
                cases.append(_case("program_sub_block", f"{label}-{k}-{target}",
                                   _edit(label, change), True))
        for forward in (-5, 0, count):
            def change(msg, forward=forward):
                msg.blocks[-1].forward_block_idx = forward
            cases.append(_case("program_forward_block", f"{label}-{forward}",
                               _edit(label, change), None if forward == 0 else True))
    rng = random.Random("retype")
    for label in PROGRAMS:
        msg = _message(label)
        spots = [(i, j, k) for i, b in enumerate(msg.blocks) for j, o in enumerate(b.ops)
                 for k, a in enumerate(o.attrs)]
        for i, j, k in rng.sample(spots, 8):
            for new_type, values in ((AttrType.BLOCK, [0]), (AttrType.BLOCKS, [0, blocks + 3]),
                                     (AttrType.BLOCK, [1 << 20])):
                def change(msg, i=i, j=j, k=k, new_type=new_type, values=values):
                    attr = msg.blocks[i].ops[j].attrs[k]
                    attr.type = new_type
                    if new_type == AttrType.BLOCK:
                        attr.block_idx = values[0]
                    else:
                        attr.blocks_idx[:] = values
                cases.append(_case("program_attr_retyped",
                                   f"{label}-{i}-{j}-{k}-{new_type.name}-{values[0]}",
                                   _edit(label, change), True))
    for label in PROGRAMS:
        for where in ("var", "op_type", "attr_name", "slot", "argument", "attr_string"):
            data = _edit(label, lambda msg, where=where: _mark(msg, where))
            at = data.index(b"zz_mark")
            cases.append(_case("program_utf8", f"{label}-{where}",
                               data[:at] + b"\xc3\x28" + data[at + 2:], True))
    for count in (1000, 100000):
        def change(msg, count=count):
            msg.blocks[0].vars[0].type.lod_tensor.tensor.dims.extend([1] * count)
        cases.append(_case("program_huge_repeated", f"dims-{count}", _edit("mlp", change), None))

        def many_blocks(msg, count=count):
            for i in range(count // 100):
                b = msg.blocks.add()
                b.idx, b.parent_idx = len(msg.blocks) - 1, len(msg.blocks) - 2
        cases.append(_case("program_huge_repeated", f"nested-blocks-{count // 100}",
                           _edit("mlp", many_blocks), None))
    cases.append(_case("program_blocks", "none", _edit("mlp", lambda m: m.ClearField("blocks")),
                       True))
    cases.append(_case("program_blocks", "idx-swapped",
                       _edit("control_flow", _swap_idx), True))
    cases.append(_case("program_vars", "duplicate-name", _edit("mlp", _duplicate_var), True))
    return cases


def _mark(msg, where):
    block = msg.blocks[0]
    op = next(o for o in block.ops if o.attrs and o.inputs and o.inputs[0].arguments)
    if where == "var":
        block.vars[0].name = "zz_mark"
    elif where == "op_type":
        op.type = "zz_mark"
    elif where == "attr_name":
        op.attrs[0].name = "zz_mark"
    elif where == "slot":
        op.inputs[0].parameter = "zz_mark"
    elif where == "argument":
        op.inputs[0].arguments[0] = "zz_mark"
    else:
        a = op.attrs.add()
        a.name, a.type, a.s = "marker", AttrType.STRING, "zz_mark"


def _swap_idx(msg):
    msg.blocks[1].idx, msg.blocks[2].idx = 2, 1


def _duplicate_var(msg):
    msg.blocks[0].vars.add().CopyFrom(msg.blocks[0].vars[0])


CASES = _byte_cases() + _field_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_program_file(case):
    check(case)


def test_program_file_corpus_size():
    assert len(CASES) >= 200
