"""Programs compiled to native code (fluid_nb.native) against the interpreter, hand-written
NumPy and PyTorch eager, in one run.

    python benchmarks/compiled.py

W1: fit_a_line, fc 13 -> 1, square error, batch 20, SGD. W2: MLP 784-200-200-10 (relu),
softmax cross-entropy, batch 64, Adam. Each step is one ``Executor.run`` of the program
(interpreted) or of the NativeProgram (compiled), fetching the loss. The build time is that
of a cold build (an empty cache directory).
"""
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fluid_nb as fluid  # noqa: E402
from fluid_nb import native  # noqa: E402
from _timing import interleaved_best, row, torch_or_none  # noqa: E402
from train_step import (w1_numpy, w1_program, w1_torch, w2_numpy, w2_program,  # noqa: E402
                        w2_torch)


def steps(build, feed):
    """(interpreted step, compiled step, cold build seconds)."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        loss = build()
    exe = fluid.Executor(fluid.CPUPlace())
    interpreted, compiled = fluid.Scope(), fluid.Scope()
    exe.run(startup, scope=interpreted)
    exe.run(startup, scope=compiled)
    with tempfile.TemporaryDirectory() as cache:
        os.environ["FLUID_NB_CACHE"] = cache  # a cold build
        start = time.perf_counter()
        program = native.compile(main, feed, [loss], scope=compiled)
        build_seconds = time.perf_counter() - start
        del os.environ["FLUID_NB_CACHE"]
        return (lambda: exe.run(main, feed=feed, fetch_list=[loss], scope=interpreted),
                lambda: exe.run(program, feed=feed, fetch_list=[loss], scope=compiled),
                build_seconds)


def main():
    torch = torch_or_none()
    rng = np.random.RandomState(1)
    w1 = (rng.uniform(-1, 1, (20, 13)).astype("float32"),
          rng.uniform(-1, 1, (20, 1)).astype("float32"))
    w2 = (rng.uniform(-1, 1, (64, 784)).astype("float32"),
          rng.randint(0, 10, (64, 1)).astype("int64"))
    for name, build, data, feed, by_numpy, by_torch, number in [
            ("W1 fit_a_line step (13->1, batch 20, SGD)", w1_program, w1,
             {"x": w1[0], "y": w1[1]}, w1_numpy, w1_torch, 200),
            ("W2 MLP step (784-200-200-10, batch 64, Adam)", w2_program, w2,
             {"img": w2[0], "label": w2[1]}, w2_numpy, w2_torch, 20)]:
        interpreted, compiled, build_seconds = steps(build, feed)
        candidates = {"fluid_nb compiled": compiled, "fluid_nb interpreter": interpreted,
                      "NumPy (hand-written)": by_numpy(*data)}
        if torch is not None:
            candidates["PyTorch eager"] = by_torch(torch, *data)
        for fn in candidates.values():
            for _ in range(5):
                fn()
        times = interleaved_best(candidates, rounds=9, number=number)
        print(f"{name}; cold build {build_seconds:.2f} s")
        base = times["NumPy (hand-written)"]
        for label, seconds in times.items():
            row(f"  {label}", seconds * 1e6, "µs/step", base * 1e6, "NumPy")
    print("W3 DynamicRNN: not compiled yet (while, tensor arrays and LoD have no emitters)")


if __name__ == "__main__":
    main()
