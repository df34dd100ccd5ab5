"""Programs compiled to native code (fluid_nb.rewriters.native) against the interpreter,
hand-written NumPy and PyTorch eager, in one run.

    python benchmarks/compiled.py

W1: fit_a_line, fc 13 -> 1, square error, batch 20, SGD. W2: MLP 784-200-200-10 (relu),
softmax cross-entropy, batch 64, Adam. W3: the DynamicRNN of dynamic_rnn.py (a tanh RNN
over 32 sequences of 5..50 steps, input 64, hidden 128, the mean of each last state),
forward and backward, fetching the loss and the three parameters' gradients; compiled once
(its sizes are read at run time) and checked against the NumPy loop, also on a batch of
other lengths. Each step is one ``Executor.run`` of the program (interpreted) or of the
NativeProgram (compiled). The build time is that of a cold build (an empty cache
directory).
"""
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fluid_nb as fluid  # noqa: E402
from fluid_nb.rewriters import native  # noqa: E402
from _timing import interleaved_best, row, torch_or_none  # noqa: E402
from train_step import (w1_numpy, w1_program, w1_torch, w2_numpy, w2_program,  # noqa: E402
                        w2_torch)
import dynamic_rnn  # noqa: E402


def cold_compile(main, feed, fetch, scope):
    """(the NativeProgram, seconds to build it with an empty cache)."""
    with tempfile.TemporaryDirectory() as cache:
        os.environ["FLUID_NB_CACHE"] = cache  # a cold build
        try:
            start = time.perf_counter()
            program = native.compile(main, feed, fetch, scope=scope)
            return program, time.perf_counter() - start
        finally:
            del os.environ["FLUID_NB_CACHE"]


def steps(build, feed):
    """(interpreted step, compiled step, cold build seconds)."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        loss = build()
    exe = fluid.Executor(fluid.CPUPlace())
    interpreted, compiled = fluid.Scope(), fluid.Scope()
    exe.run(startup, scope=interpreted)
    exe.run(startup, scope=compiled)
    program, build_seconds = cold_compile(main, feed, [loss], compiled)
    return (lambda: exe.run(main, feed=feed, fetch_list=[loss], scope=interpreted),
            lambda: exe.run(program, feed=feed, fetch_list=[loss], scope=compiled),
            build_seconds)


def w3(torch):
    """W3's candidates (their values checked against the NumPy loop first) and the build."""
    data, lengths = dynamic_rnn.make_batch()
    w, u, b = dynamic_rnn.make_params()
    reference = dynamic_rnn.numpy_step(data, lengths, w, u, b)
    main, feed, fetch, scope, exe = dynamic_rnn.fluid_program(data, lengths, w, u, b)
    program, build_seconds = cold_compile(main, feed, fetch, scope)
    compiled = lambda: exe.run(program, feed=feed, fetch_list=fetch, scope=scope)  # noqa
    # the same build on a batch of other lengths (and trip count): the values NumPy gives
    other, other_lengths = dynamic_rnn.make_batch(seed=1)
    for (x, n), run in (((data, lengths), compiled), ((other, other_lengths), None)):
        want = dynamic_rnn.numpy_step(x, n, w, u, b)()
        got = run() if run else exe.run(program, feed={"x": fluid.create_lod_tensor(
            x, [n], fluid.CPUPlace())}, fetch_list=fetch, scope=scope)
        np.testing.assert_allclose(float(np.asarray(got[0]).reshape(-1)[0]), want[0],
                                   rtol=1e-4)
        for g, r in zip(got[1:], want[1:]):
            np.testing.assert_allclose(np.asarray(g), r, rtol=1e-3, atol=1e-6)
    assert len(program._built) == 1 and not program.source.fallbacks
    candidates = {"fluid_nb compiled": compiled,
                  "fluid_nb interpreter": dynamic_rnn.fluid_step(data, lengths, w, u, b),
                  "NumPy (hand-written)": reference}
    if torch is not None:
        candidates["PyTorch eager"] = dynamic_rnn.torch_steps(torch, data, lengths, w, u, b)[0]
    return candidates, build_seconds, len(program.source.functions)


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
        report(name, candidates, build_seconds, number, 1e6, "µs/step")
    if torch is None:
        print("PyTorch is not installed: no PyTorch eager rows")
    candidates, build_seconds, ops = w3(torch)
    report(f"W3 DynamicRNN forward + backward (32 sequences, 5..50 steps, 64 -> 128 tanh; "
           f"{ops} ops in 3 blocks, one build for every LoD)", candidates, build_seconds, 10,
           1e3, "ms/batch")


def report(name, candidates, build_seconds, number, scale, unit):
    for fn in candidates.values():
        for _ in range(5):
            fn()
    times = interleaved_best(candidates, rounds=9, number=number)
    print(f"{name}; cold build {build_seconds:.2f} s")
    base = times["NumPy (hand-written)"]
    for label, seconds in times.items():
        row(f"  {label}", seconds * scale, unit, base * scale, "NumPy")


if __name__ == "__main__":
    main()
