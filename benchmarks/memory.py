"""The host memory arena: peak bytes of three programs under each way of freeing, the
cost of the step transaction on W2, the arena's alloc/free time against NumPy's own
allocator, W1-W3 with the arena on and off, and W1-W2 with its event log on and off.

    python benchmarks/memory.py

Peaks (arena bytes at most during one training step, parameters and optimizer state
included, each configuration in a fresh arena) of W2 (MLP 784-200-200-10, batch 64, Adam),
a small CNN (conv 3x3x16, pool, conv 3x3x32, pool, fc 10; batch 32 of 1x28x28, SGD) and W3
(the tanh DynamicRNN of dynamic_rnn.py, forward and backward):

- none: no memory optimisation at all: every temporary kept to the end of the run
  (``FLAGS_eager_delete_tensor_gb=-1``) and update ops making new parameter arrays
  (``FLAGS_inplace_update=False``);
- in place: ``FLAGS_inplace_update`` on; an ``Executor.run`` keeps the values its step
  started from until the step ends (a failed step puts them back), and its trailing
  update ops are committed in place at once after everything that can fail
  (``exec/update_commit.py``), where they write 64 KiB or more in all;
- memory_optimize: the program rewritten by ``fluid.memory_optimize`` (and then
  ``fluid.release_memory``), with in-place updates, temporaries otherwise kept to the end
  (and once alone, without in-place updates);
- eager: the executor's defaults, each temporary freed after its last use and in-place
  updates;
- transaction: W2's step time and peak with the step transaction (its updates committed
  in place) and with the undo log emptied (each update op writing in place as it runs, as
  before the transaction);
- lower bound: the largest total of simultaneously live variables' blocks (each from its
  alloc to the end of its last use, read from the eager run's event log), in block bytes
  (what this allocator must hold) and in the bytes the tensors need.
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fluid_nb as fluid  # noqa: E402
from fluid_nb import flags  # noqa: E402
from fluid_nb.exec import run_plan  # noqa: E402
from fluid_nb.memory import places  # noqa: E402
from fluid_nb.memory.arena import Arena, allocating_from  # noqa: E402
from _timing import interleaved_best  # noqa: E402
import dynamic_rnn  # noqa: E402
import train_step  # noqa: E402

CPU = fluid.CPUPlace()


# --- the programs ---------------------------------------------------------------------------
def mlp():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 1
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        img = fluid.data(name="img", shape=[None, 784], dtype="float32")
        lab = fluid.data(name="label", shape=[None, 1], dtype="int64")
        h = fluid.layers.fc(input=img, size=200, act="relu")
        h = fluid.layers.fc(input=h, size=200, act="relu")
        logits = fluid.layers.fc(input=h, size=10)
        loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits, lab))
        fluid.optimizer.Adam(learning_rate=0.001).minimize(loss)
    rng = np.random.RandomState(1)
    feed = {"img": rng.uniform(-1, 1, (64, 784)).astype("float32"),
            "label": rng.randint(0, 10, (64, 1)).astype("int64")}
    return main, startup, feed, [loss]


def cnn():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 1
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        img = fluid.data(name="img", shape=[None, 1, 28, 28], dtype="float32")
        lab = fluid.data(name="label", shape=[None, 1], dtype="int64")
        c = fluid.layers.conv2d(img, 16, 3, padding=1, act="relu")
        c = fluid.layers.pool2d(c, 2, pool_stride=2)
        c = fluid.layers.conv2d(c, 32, 3, padding=1, act="relu")
        c = fluid.layers.pool2d(c, 2, pool_stride=2)
        logits = fluid.layers.fc(c, 10)
        loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits, lab))
        fluid.optimizer.SGD(learning_rate=0.01).minimize(loss)
    rng = np.random.RandomState(2)
    feed = {"img": rng.uniform(-1, 1, (32, 1, 28, 28)).astype("float32"),
            "label": rng.randint(0, 10, (32, 1)).astype("int64")}
    return main, startup, feed, [loss]


def dynamic_rnn_program():
    data, lengths = dynamic_rnn.make_batch()
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[dynamic_rnn.INPUT], dtype="float32",
                              lod_level=1)
        rnn = fluid.layers.DynamicRNN()
        with rnn.block():
            x_t = rnn.step_input(x)
            h_prev = rnn.memory(shape=[dynamic_rnn.HIDDEN], value=0.0)
            h = fluid.layers.fc(input=[x_t, h_prev], size=dynamic_rnn.HIDDEN, act="tanh")
            rnn.update_memory(h_prev, h)
            rnn.output(h)
        loss = fluid.layers.mean(fluid.layers.sequence_last_step(rnn()))
        fluid.optimizer.SGD(learning_rate=0.01).minimize(loss)
    feed = {"x": fluid.create_lod_tensor(data, [lengths], CPU)}
    return main, startup, feed, [loss]


PROGRAMS = [("W2 MLP step", mlp), ("small CNN step", cnn), ("W3 DynamicRNN step",
                                                              dynamic_rnn_program)]


# --- peaks ------------------------------------------------------------------------------------
def _fresh_arena():
    return places.fresh_host_arena()  # nothing of earlier runs in it


def step_peak(build, optimize=False, eager=True, record=False, in_place=True):
    """(peak arena bytes during the second training step, its event log or None)."""
    fluid.set_flags({"FLAGS_eager_delete_tensor_gb": 0.0 if eager else -1.0,
                     "FLAGS_inplace_update": in_place})
    main, startup, feed, fetch = build()
    if optimize:
        fluid.memory_optimize(main)
        fluid.release_memory(main)
    _fresh_arena()
    scope, exe = fluid.Scope(), fluid.Executor(CPU)
    exe.run(startup, scope=scope)
    exe.run(main, feed=feed, fetch_list=fetch, scope=scope)
    fluid.memory.reset_peak(CPU)
    fluid.memory.record_events(CPU, record)
    fluid.memory.events(CPU)  # drop what the first step logged
    exe.run(main, feed=feed, fetch_list=fetch, scope=scope)
    fluid.memory.record_events(CPU, False)
    log = fluid.memory.events(CPU) if record else None
    return fluid.memory.peak(CPU), log


def live_bound(log, used_at_start):
    """(block bytes, requested bytes): the most held at once by variables' tensors. What
    was in the arena when the step began (parameters, optimizer state, the last step's
    fetches) counts until it is freed; a block made during the step counts from its alloc
    to its free when it became a variable's, not at all when it was a kernel's scratch.
    From the log of a run that frees each tensor after its last use, this is the most the
    live variables need at once."""
    held_blocks = held_requested = used_at_start
    best_blocks = best_requested = used_at_start
    made, named = set(), {}
    for event in log:
        if event.kind in ("alloc", "huge_alloc"):
            made.add(event.address)
            if event.variable is not None:
                named[event.address] = (event.size, event.requested)
                held_blocks += event.size
                held_requested += event.requested
        elif event.kind in ("free", "huge_free"):
            if event.address in named:
                size, requested = named.pop(event.address)
                held_blocks -= size
                held_requested -= requested
            elif event.address not in made:  # held since before the step
                held_blocks -= event.size
                held_requested -= event.size
            made.discard(event.address)
        best_blocks = max(best_blocks, held_blocks)
        best_requested = max(best_requested, held_requested)
    return best_blocks, best_requested


def peaks():
    rows = {}
    for name, build in PROGRAMS:
        none, _ = step_peak(build, eager=False, in_place=False)
        in_place, _ = step_peak(build, eager=False)
        optimized_alone, _ = step_peak(build, optimize=True, eager=False, in_place=False)
        optimized, _ = step_peak(build, optimize=True, eager=False)
        eager, log = step_peak(build, record=True)
        start = log[0].used - (log[0].size if log[0].kind in ("alloc", "huge_alloc") else
                               -log[0].size if log[0].kind in ("free", "huge_free") else 0)
        bound_blocks, bound_requested = live_bound(log, start)
        rows[name] = (none, in_place, optimized_alone, optimized, eager, bound_blocks,
                      bound_requested)
        print(f"{name}")
        for label, value in (("none (no memory optimisation)", none),
                             ("in-place updates only", in_place),
                             ("memory_optimize + release_memory alone", optimized_alone),
                             ("memory_optimize + release_memory", optimized),
                             ("eager freeing (the executor's default)", eager),
                             ("lower bound: live tensors' blocks", bound_blocks),
                             ("lower bound: live tensors' bytes", bound_requested)):
            print(f"  {label:44s} {value / 1024:10.1f} KiB  "
                  f"({value / bound_blocks:4.2f}x the bound in blocks)")
        print(f"  memory_optimize saves {1 - optimized / none:.0%} of none; "
              f"eager saves {1 - eager / none:.0%}; above the {start / 1024:.0f} KiB held "
              f"before the step: none {(none - start) / 1024:.0f} KiB, memory_optimize "
              f"{(optimized - start) / 1024:.0f} KiB "
              f"({1 - (optimized - start) / (none - start):.0%} less), eager "
              f"{(eager - start) / 1024:.0f} KiB")
    return rows


# --- the step transaction's cost ------------------------------------------------------------------
def _step_without_undo(build_step):
    """A step built with the run's undo log empty (but for the feed and fetch lists): what
    the executor did before a failed step was put back, update ops writing parameters in
    place. The plan, made at the first run, keeps that."""
    real = run_plan.written_outside
    run_plan.written_outside = lambda block, scope, local, also=(): tuple(also)
    try:
        step = build_step()
        step()
    finally:
        run_plan.written_outside = real
    return step


def transaction_cost():
    """W2 (MLP + Adam) with the step transaction (old values kept until the step ends;
    the updates committed in place at its end) and without it (each update in place as
    it runs): time per step and the arena's peak during a step, each in a fresh arena."""
    rng = np.random.RandomState(1)
    x = rng.uniform(-1, 1, (64, 784)).astype("float32")
    label = rng.randint(0, 10, (64, 1)).astype("int64")

    def build():
        return train_step.w2_fluid(x, label)

    print("the step transaction on W2 (a failed step leaves every persistable as it was)")
    peaks = {}
    for name, make in (("transaction", lambda: _warm(build)),
                       ("in place, no undo", lambda: _step_without_undo(build))):
        _fresh_arena()
        step = make()
        step()
        fluid.memory.reset_peak(CPU)
        step()
        peaks[name] = fluid.memory.peak(CPU)
    steps = {"transaction": _warm(build), "in place, no undo": _step_without_undo(build)}
    times = interleaved_best(steps, rounds=9, number=20)
    state = 3 * 4 * (784 * 200 + 200 + 200 * 200 + 200 + 200 * 10 + 10)  # params, 2 moments
    for name in steps:
        print(f"  {name:18s} {times[name] * 1e6:9.1f} µs   peak {peaks[name] / 1024:8.1f} KiB")
    print(f"  cost: time x{times['transaction'] / times['in place, no undo']:.3f}, peak "
          f"+{(peaks['transaction'] - peaks['in place, no undo']) / 1024:.1f} KiB "
          f"(parameters and Adam moments: {state / 1024:.1f} KiB)")
    return times, peaks


def _warm(build):
    step = build()
    step()
    return step


# --- alloc/free time ---------------------------------------------------------------------------
def alloc_free_times():
    """ns per np.empty + its free, by size: NumPy's allocator against the arena's."""
    arena = Arena(chunk_size=1 << 26, min_block=256)
    keep = []
    with allocating_from(arena):
        keep.append(np.ones(1000))  # a chunk already there: the steady state of a run
    print("np.empty(n bytes) and its free, ns per pair (NumPy's allocator / the arena's)")
    out = {}
    for size in (64, 1024, 16 << 10, 256 << 10, 4 << 20):
        count = size // 8

        def pairs(n=20000 if size < (1 << 20) else 2000):
            start = time.perf_counter()
            for _ in range(n):
                np.empty(count)
            return (time.perf_counter() - start) / n

        def in_arena():
            with allocating_from(arena):
                return pairs()

        system = min(pairs() for _ in range(5))
        buddy = min(in_arena() for _ in range(5))
        out[size] = (system, buddy)
        print(f"  {size:>9} B   malloc {system * 1e9:8.1f} ns   arena {buddy * 1e9:8.1f} ns "
              f"  ({buddy / system:4.2f}x)")
    return out


# --- W1-W3 with the arena on and off -------------------------------------------------------------
def on_off():
    rng = np.random.RandomState(1)
    w1 = train_step.w1_fluid(rng.uniform(-1, 1, (20, 13)).astype("float32"),
                             rng.uniform(-1, 1, (20, 1)).astype("float32"))
    w2 = train_step.w2_fluid(rng.uniform(-1, 1, (64, 784)).astype("float32"),
                             rng.randint(0, 10, (64, 1)).astype("int64"))
    data, lengths = dynamic_rnn.make_batch()
    w3 = dynamic_rnn.fluid_step(data, lengths, *dynamic_rnn.make_params())
    print("W1-W3 with the arena on and off (FLAGS_use_system_allocator), best of "
          "interleaved rounds")
    out = {}
    for name, step, number in (("W1 fit_a_line", w1, 400), ("W2 MLP", w2, 20),
                               ("W3 DynamicRNN", w3, 5)):
        def with_arena(on, step=step):
            def run():
                if flags._values.get("FLAGS_use_system_allocator") is on:
                    fluid.set_flags({"FLAGS_use_system_allocator": not on})
                step()
            return run
        # the flag changes at the first call of each turn (a turn is ``number`` calls)
        times = interleaved_best({"on": with_arena(True), "off": with_arena(False)},
                                 rounds=9, number=number)
        out[name] = times
        print(f"  {name:16s} arena on {times['on'] * 1e6:9.1f} µs   off "
              f"{times['off'] * 1e6:9.1f} µs   on/off {times['on'] / times['off']:.3f}")
    flags._values.pop("FLAGS_use_system_allocator", None)
    flags.version[0] += 1
    return out


# --- the event log's cost ------------------------------------------------------------------------
def recording_cost():
    """W1 and W2 with the arena's event log on and off (read every 50 allocations)."""
    rng = np.random.RandomState(1)
    w1 = train_step.w1_fluid(rng.uniform(-1, 1, (20, 13)).astype("float32"),
                             rng.uniform(-1, 1, (20, 1)).astype("float32"))
    w2 = train_step.w2_fluid(rng.uniform(-1, 1, (64, 784)).astype("float32"),
                             rng.randint(0, 10, (64, 1)).astype("int64"))
    print("the event log on and off in Executor.run (on: tagged by op, named by variable)")
    out = {}
    for name, step, number in (("W1 fit_a_line", w1, 400), ("W2 MLP", w2, 20)):
        def with_log(on, step=step):
            def run():
                arena = fluid.memory.arena_of(CPU)
                if arena.recording != on:
                    fluid.memory.record_events(CPU, on)
                step()
                if on and arena.allocs % 50 == 0:
                    fluid.memory.events(CPU)
            return run
        times = interleaved_best({"on": with_log(True), "off": with_log(False)}, rounds=9,
                                 number=number)
        fluid.memory.record_events(CPU, False)
        fluid.memory.events(CPU)
        out[name] = times
        print(f"  {name:16s} log on {times['on'] * 1e6:9.1f} µs   off "
              f"{times['off'] * 1e6:9.1f} µs   on/off {times['on'] / times['off']:.3f}")
    return out


def main():
    saved = dict(flags._values)
    try:
        peaks()
        transaction_cost()
        alloc_free_times()
        on_off()
        recording_cost()
    finally:
        flags._values.clear()
        flags._values.update(saved)
        flags.version[0] += 1


if __name__ == "__main__":
    main()
