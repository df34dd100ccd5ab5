"""Opening a saved program: ``fluid.Program.parse_from_string`` against protobuf's own parser.

    python benchmarks/open_program.py

Serializes the study programs as a user saves them (op call stacks included): the book's
ResNet-56 with Momentum, a 12-layer Transformer encoder with Adam and a 72-layer one (about
5,000 ops), and times opening each: fluid_nb's ``parse_from_string`` (the check of the wire
bytes, which refuses what protobuf's parser lets through and names the byte offset, then
protobuf's parse, the structure's checks and the decode into Blocks, Operators and
Variables); of it, the check (``wire.check_file``: in C, walking in Python only bytes the C
check is unsure of); the Python walk a damaged file gets; and protobuf's ``ParseFromString``
of the same bytes (upb, in C: the floor); and writing the opened program back
(``serialize_to_string``) against protobuf's ``SerializeToString`` of the parsed message.
Then a saved model as a user opens one:
``fluid.io.load_inference_model`` of the book's ResNet-56 for inference, its parameters in a
file each and in one file, against NumPy's ``np.load`` of the same arrays from an ``.npz``.
Best of ``ROUNDS`` interleaved rounds.
"""
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fluid_nb as fluid  # noqa: E402
from fluid_nb.proto import framework_pb2 as pb, wire  # noqa: E402
from tests.browser.study_models import (_book_example, resnet_training,  # noqa: E402
                                        transformer_training)
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
        opened, parsed = fluid.Program.parse_from_string(data), pb.ProgramDesc.FromString(data)
        best = interleaved_best({
            "parse_from_string": lambda: fluid.Program.parse_from_string(data),
            "serialize_to_string": opened.serialize_to_string,
            "protobuf serialize": parsed.SerializeToString,
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
        row("  writing it again: serialize_to_string", best["serialize_to_string"] * 1e3, "ms",
            best["protobuf serialize"] * 1e3, "protobuf")
        row("  protobuf SerializeToString", best["protobuf serialize"] * 1e3, "ms")
    with tempfile.TemporaryDirectory() as folder:
        opening_a_saved_model(folder)


def opening_a_saved_model(folder, depth=56):
    book = _book_example("image_classification")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        images = fluid.layers.data(name="pixel", shape=[3, 32, 32], dtype="float32")
        predict = book.resnet_cifar10(images, depth)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    separate, combined = os.path.join(folder, "separate"), os.path.join(folder, "combined")
    with fluid.scope_guard(scope):
        fluid.io.save_inference_model(separate, ["pixel"], [predict], exe, main_program=main)
        fluid.io.save_inference_model(combined, ["pixel"], [predict], exe, main_program=main,
                                      params_filename="params")
    arrays = {name: np.asarray(scope.find_var(name).get_tensor()) for name in
              sorted(f for f in os.listdir(separate) if f != "__model__")}
    npz = os.path.join(folder, "params.npz")
    np.savez(npz, **arrays)

    def load(path, **kwargs):
        with fluid.scope_guard(fluid.Scope()):
            fluid.io.load_inference_model(path, exe, **kwargs)

    def numpy_load():
        with np.load(npz) as held:
            for name in held.files:
                held[name]
    best = interleaved_best({
        "separate": lambda: load(separate),
        "combined": lambda: load(combined, params_filename="params"),
        "numpy": numpy_load}, rounds=ROUNDS, number=1)
    program = fluid.Program.parse_from_string(
        open(os.path.join(separate, "__model__"), "rb").read())
    print(f"ResNet-{depth} for inference, saved: {len(program.global_block().ops)} ops, "
          f"{len(arrays)} parameters, {sum(a.nbytes for a in arrays.values()) / 2**20:.1f} MB")
    row("  load_inference_model, a file per parameter", best["separate"] * 1e3, "ms",
        best["numpy"] * 1e3, "NumPy")
    row("  load_inference_model, one params file", best["combined"] * 1e3, "ms",
        best["numpy"] * 1e3, "NumPy")
    row("  NumPy np.load of the same arrays (.npz)", best["numpy"] * 1e3, "ms")


if __name__ == "__main__":
    main()
