"""Opening a saved program: ``fluid.Program.parse_from_string`` against protobuf's own parser.

    python benchmarks/open_program.py

Serializes the study programs as a user saves them (op call stacks included): the book's
ResNet-56 with Momentum, a 12-layer Transformer encoder with Adam and a 72-layer one (about
5,000 ops), and times opening each: fluid_nb's ``parse_from_string`` (the check of the wire
bytes, which refuses what protobuf's parser lets through and names the byte offset, then
protobuf's parse, the structure's checks and the decode into Blocks, Operators and
Variables); of it, the check (``wire.check_file``: in C, walking in Python only bytes the C
check is unsure of); the Python walk a damaged file gets; and protobuf's ``ParseFromString``
of the same bytes (upb, in C: the floor). Best of ``ROUNDS`` interleaved rounds.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fluid_nb as fluid  # noqa: E402
from fluid_nb.proto import framework_pb2 as pb, wire  # noqa: E402
from tests.browser.study_models import resnet_training, transformer_training  # noqa: E402
from _timing import interleaved_best, row  # noqa: E402

ROUNDS = 5


def main():
    programs = {"ResNet-56 + Momentum": resnet_training(),
                "Transformer, 12 layers + Adam": transformer_training(n_layer=12),
                "Transformer, 72 layers + Adam": transformer_training(n_layer=72)}
    print(f"opening a saved program; best of {ROUNDS} interleaved rounds")
    for label, program in programs.items():
        data = program.desc.serialize_to_string()
        ops = sum(len(block.ops) for block in program.blocks)
        best = interleaved_best({
            "parse_from_string": lambda: fluid.Program.parse_from_string(data),
            "check": lambda: wire.check_file(data, pb.ProgramDesc.DESCRIPTOR, "bench"),
            "walk": lambda: wire.check_message(data, pb.ProgramDesc.DESCRIPTOR, "bench"),
            "protobuf": lambda: pb.ProgramDesc.FromString(data),
        }, rounds=ROUNDS, number=1)
        print(f"{label}: {ops:,} ops, {len(data) / 2**20:.1f} MB")
        row("  fluid.Program.parse_from_string", best["parse_from_string"] * 1e3, "ms",
            best["protobuf"] * 1e3, "protobuf")
        row("  of which the check of the bytes", best["check"] * 1e3, "ms")
        row("  the Python walk (a file the check is unsure of)", best["walk"] * 1e3, "ms")
        row("  protobuf ParseFromString", best["protobuf"] * 1e3, "ms")


if __name__ == "__main__":
    main()
