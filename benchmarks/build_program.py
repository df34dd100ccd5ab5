"""Building a program through the layers API, as a user's script or notebook cell does.

    python benchmarks/build_program.py [--bytecodes]

Times, per op appended: the study programs built whole (the book's ResNet-56 with Momentum,
a 12-layer Transformer encoder with Adam: every layer call, its parameters and their
initializers, backward and the optimizer); a 100-layer ``fc(h, 64, act='relu')`` stack
built plain and built in a live session, where each layer's startup ops and ops run at once
on a batch of 16 (the layers' own cost beside NumPy's: the 100 products and activations
by hand); binding the stack with a mean loss and Adam for its first run (the first
``Executor.run`` less the second); and the live 1x1 chains of two kinds of op: ``c * 0.999`` (scale, LoD-aware) and
``softmax(c)`` (a layer with argument checks and attributes). Best of ``ROUNDS``
interleaved rounds. ``--bytecodes`` prints the Python bytecodes each takes instead (a count
the machine's load does not move).
"""
import contextlib
import gc
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fluid_nb as fluid  # noqa: E402
from tests.browser.study_models import resnet_training, transformer_training  # noqa: E402
from _timing import interleaved_samples, opcode_tracer, row  # noqa: E402

ROUNDS = 5
LAYERS, WIDTH, BATCH = 100, 64, 16
CHAIN = 500


def _mlp(live):
    """The fc stack built in fresh programs, plain or live: (ops appended, seconds)."""
    main, startup, scope = fluid.Program(), fluid.Program(), fluid.Scope()
    sample = np.ones((BATCH, WIDTH), "float32")
    session = fluid.live(program=main, startup_program=startup, scope=scope) if live \
        else contextlib.nullcontext()
    with fluid.program_guard(main, startup), fluid.unique_name.guard(), session:
        h = fluid.layers.data(name="x", shape=[WIDTH], dtype="float32",
                              value=sample if live else None)
        gc.collect()
        start = time.perf_counter()
        for _ in range(LAYERS):
            h = fluid.layers.fc(h, WIDTH, act="relu")
        seconds = time.perf_counter() - start
    return len(main.global_block().ops) + len(startup.global_block().ops), seconds


def _first_run(cost=None):
    """The fc stack with a loss and Adam, its startup run: the first ``Executor.run`` less
    the second (binding the plan: every op's kernel, holders, last uses), per op run;
    ``cost(fn)``: what a run costs (its seconds by default)."""
    main, startup, scope = fluid.Program(), fluid.Program(), fluid.Scope()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        h = fluid.layers.data(name="x", shape=[WIDTH], dtype="float32")
        for _ in range(LAYERS):
            h = fluid.layers.fc(h, WIDTH, act="relu")
        loss = fluid.layers.mean(h)
        fluid.optimizer.Adam(learning_rate=1e-3).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    feed = {"x": np.ones((BATCH, WIDTH), "float32")}
    first, second = (
        (cost or _seconds)(lambda: exe.run(main, feed=feed, fetch_list=[loss], scope=scope))
        for _ in range(2))
    return len(main.global_block().ops), first - second


def _seconds(fn):
    gc.collect()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _numpy_mlp():
    rng = np.random.RandomState(0)
    weights = [rng.uniform(-0.2, 0.2, (WIDTH, WIDTH)).astype("float32") for _ in range(LAYERS)]
    h = np.ones((BATCH, WIDTH), "float32")
    start = time.perf_counter()
    for w in weights:
        h = np.maximum(h @ w + 0.0, 0)
    return time.perf_counter() - start


def _chain(step):
    main, startup, scope = fluid.Program(), fluid.Program(), fluid.Scope()
    with fluid.program_guard(main, startup), fluid.unique_name.guard(), \
            fluid.live(program=main, startup_program=startup, scope=scope):
        c = fluid.layers.fill_constant([1, 1], "float32", 1.0)
        gc.collect()
        start = time.perf_counter()
        for _ in range(CHAIN):
            c = step(c)
        return time.perf_counter() - start


def _whole(build):
    gc.collect()
    start = time.perf_counter()
    with fluid.unique_name.guard():
        program = build()
    return sum(len(block.ops) for block in program.blocks), time.perf_counter() - start


STEPS = {"c * 0.999": lambda c: c * 0.999, "softmax(c)": lambda c: fluid.layers.softmax(c)}


def bytecodes(fn):
    """The Python bytecodes ``fn`` runs, after a first call (which fills caches and imports
    what it needs)."""
    fn()
    return _counted(fn)


def _counted(fn):
    counts = {}
    sys.settrace(opcode_tracer(counts))
    try:
        fn()
    finally:
        sys.settrace(None)
    return sum(counts.values())


def main():
    gc.collect()
    gc.freeze()
    n_ops = {}
    fns = {
        "ResNet-56 + Momentum": lambda: _whole(resnet_training),
        "Transformer, 12 layers + Adam": lambda: _whole(transformer_training),
        f"{LAYERS} fc layers, plain": lambda: _mlp(False),
        f"{LAYERS} fc layers, live (each runs)": lambda: _mlp(True),
        f"binding {LAYERS} fc layers + Adam for a first run": _first_run,
    }
    if "--bytecodes" in sys.argv:
        for name, fn in fns.items():
            if name.startswith("binding"):
                ops, count = _first_run(cost=_counted)
                print(f"{name}: {count / ops:,.0f} bytecodes per op run ({ops} ops)")
                continue
            ops = fn()[0]
            print(f"{name}: {bytecodes(fn) / ops:,.0f} bytecodes per op appended ({ops} ops)")
        for name, step in STEPS.items():
            count = bytecodes(lambda: _chain(step))
            print(f"live {name}, 1x1: {count / CHAIN:,.0f} bytecodes/op")
        return
    timed = {}
    for name, fn in fns.items():
        def per_op(fn=fn, name=name):
            ops, seconds = fn()
            n_ops[name] = ops
            return seconds / ops
        timed[name] = per_op
    for name, step in STEPS.items():
        timed[f"live {name}, 1x1"] = lambda step=step: _chain(step) / CHAIN
    timed["numpy"] = _numpy_mlp
    samples = interleaved_samples(timed, ROUNDS)
    numpy_seconds = samples.pop("numpy")[0]
    print(f"Building programs through the layers API; best of {ROUNDS} interleaved rounds")
    for name, values in samples.items():
        ops = f" ({n_ops[name]} ops)" if name in n_ops else ""
        row(f"{name}{ops}", values[0] * 1e6,
            "µs per op run" if name.startswith("binding") else "µs per op appended")
    live = samples[f"{LAYERS} fc layers, live (each runs)"][0] * n_ops[
        f"{LAYERS} fc layers, live (each runs)"]
    print(f"{LAYERS} live fc layers: {live * 1e3:.1f} ms, {live / numpy_seconds:.0f}x NumPy's "
          f"{LAYERS} products and activations by hand ({numpy_seconds * 1e6:.0f} µs)")


if __name__ == "__main__":
    main()
