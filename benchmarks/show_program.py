"""The kernel's share of showing a program in a notebook, for programs of 688 to 4,916 ops.

    python benchmarks/show_program.py [--quick]

1. A program as a cell's result: ``Program._repr_mimebundle_()`` (the graph's model, the
   HTML listing, the text listing and the DOT text) and the JSON text the kernel writes of
   it, for the study programs (ResNet-56 + Momentum, a 12-layer Transformer + Adam) and a
   72-layer Transformer + Adam, with each part's share.
2. A ``ProgramView`` following a live program: its ``refresh()`` after a cell that added
   one op (what a ``%%fluid`` cell or a ``fluid.live`` block does at its end), with the
   bytes of the delta it sends.

Each against ``json.dumps`` of the same program's model (the least a kernel does to send
the graph), measured in the same run. Best of ``ROUNDS`` interleaved rounds. ``--quick``
leaves out the 72-layer Transformer.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fluid_nb as fluid  # noqa: E402
import fluid_nb.notebook  # noqa: E402,F401  (the programs' notebook representation)
from fluid_nb.viz import assemble_dot, listing_html, program_model  # noqa: E402
from tests.browser.study_models import resnet_training, transformer_training  # noqa: E402
from _timing import interleaved_samples  # noqa: E402

ROUNDS = 5


def _program(made):
    return made[0] if isinstance(made, tuple) else made


def programs(quick):
    found = {"ResNet-56 + Momentum": _program(resnet_training()),
             "Transformer-12 + Adam": _program(transformer_training())}
    if not quick:
        found["Transformer-72 + Adam"] = _program(transformer_training(72))
    return found


def _timed(fn):
    def timed():
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start
    return timed


def cell_result(name, program):
    """The bundle and its JSON, its parts, and json.dumps of the model alone."""
    model = program_model(program)
    sent = {}

    def bundle():
        sent["text"] = json.dumps(program._repr_mimebundle_())
    fns = {"bundle + JSON": _timed(bundle),
           "model": _timed(lambda: program_model(program)),
           "HTML listing": _timed(lambda: listing_html(program)),
           "text listing": _timed(lambda: str(program)),
           "DOT text": _timed(lambda: assemble_dot(model)),
           "json.dumps(model)": _timed(lambda: json.dumps(model))}
    best = {label: values[0] for label, values in interleaved_samples(fns, ROUNDS).items()}
    reference = best["json.dumps(model)"]
    ops = sum(len(block.ops) for block in program.blocks)
    print(f"{name}, {ops:,} ops: shown as a cell's result {best['bundle + JSON'] * 1e3:7.1f} ms "
          f"({best['bundle + JSON'] / reference:4.1f}x json.dumps of its model, "
          f"{reference * 1e3:.1f} ms); {len(sent['text']) / 2**20:.1f} MiB of JSON")
    print("    " + ", ".join(f"{label} {best[label] * 1e3:.1f}" for label in
                             ("model", "HTML listing", "text listing", "DOT text")) + " ms")


def view_refresh(name, program):
    """A ProgramView's refresh after one op appended, as a live cell's end runs it."""
    from fluid_nb.widgets import ProgramView
    view = ProgramView(program)
    messages = []
    view.send = messages.append  # (what the comm would carry to the page)
    source = program.global_block().create_var(name="refresh_bench_x", shape=(1,),
                                               dtype="float32")

    def one_cell():
        with fluid.program_guard(program):
            fluid.layers.scale(source, 2.0)
        start = time.perf_counter()
        view.refresh()
        return time.perf_counter() - start

    model = program_model(program)
    samples = interleaved_samples({"refresh": one_cell,
                                   "json": _timed(lambda: json.dumps(model))}, ROUNDS)
    best, reference = samples["refresh"][0], samples["json"][0]
    delta = json.dumps(messages[-1])
    print(f"{name}: a ProgramView's refresh after a one-op cell {best * 1e3:7.1f} ms "
          f"({best / reference:4.1f}x json.dumps of the model); delta {len(delta) / 1024:.1f} KiB")
    view.close()


def main():
    quick = "--quick" in sys.argv
    found = programs(quick)
    print(f"best of {ROUNDS} interleaved rounds")
    for name, program in found.items():
        cell_result(name, program)
    for name, program in found.items():
        view_refresh(name, program)


if __name__ == "__main__":
    main()
