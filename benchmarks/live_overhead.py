"""Live-mode overhead: µs per op to record + infer shape + run one op, against NumPy.

    python benchmarks/live_overhead.py [--bytecodes | --layers]

Builds 1,000-op elementwise_add chains (1x1 and 64x64 float32) in live mode, where each
op is checked, its shape inferred and run at once, two ways: through the layers API as
users write it (``fluid.layers.elementwise_add(c, one)`` and ``c + one``: argument checks,
unique names, the output variable, the layer's transaction) and through the raw
``block.append_op``; and a chain of ``fluid.layers.relu(c)``, the activation users write
most. Prints µs per op next to NumPy's ``np.add`` and PyTorch eager (where
installed), and the cost of appending one op to a plain (non-live) program three ways, the
raw one split into its parts; then a live loop of 100,000 ops (1x1 and 64x64): µs per op
and how much of it the cyclic collector takes (with the objects per op it tracks), the
values the session keeps and how much memory it grows by; the same for 20,000 ``c = c *
0.999`` ops (scale) at 64x64 and for 1,000 at 1000x1000, whose 4 MB values are let go as
the arena grows (a look for values nobody holds every 1 MB, not only every 1,024 ops);
and a live loop of 20,000 ops that keeps every value it makes, as a loop collecting its
losses does; and the live cost of the layers users write besides ``+`` and ``relu``
(``softmax``, ``matmul``, the reductions, ``mean``, ``scale``, ``cast``, ``clip``,
``leaky_relu``, ``gelu``, the reshape family, ``argmax``, ``zeros_like``, ``one_hot``, ``-x``,
``x.astype``, ``x @ w``, ``concat``, ``split``, ``unstack``, ``fill_constant``, the losses and metrics a
classifier ends with, ``fc``) beside NumPy doing the same. ``--bytecodes`` prints the Python bytecodes a live op executes instead (a
count the machine's load does not move); ``--layers`` the layers' costs alone. The
candidates take turns over interleaved rounds, so that a busy machine slows them alike:
each line gives the best round, its ratio to NumPy's best and how far the median round
lies above the best.
"""
import gc
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fluid_nb as fluid  # noqa: E402
from fluid_nb.live.session import LiveSession, disable_live, enable_live  # noqa: E402
from _timing import (best_time, interleaved_samples, opcode_tracer, row, spread,  # noqa: E402
                     torch_or_none)

N_OPS = 1000
ROUNDS = 9


def _chain(block, n_ops):
    for i in range(n_ops):
        block.append_op(type="elementwise_add", inputs={"X": f"x{i}", "Y": "y"},
                        outputs={"Out": f"x{i + 1}"})


def _fresh(shape, live):
    program = fluid.Program()
    block = program.global_block()
    x0 = block.create_var(name="x0", shape=shape, dtype="float32")
    block.create_var(name="y", shape=shape, dtype="float32", persistable=True)
    session = None
    if live:
        session = LiveSession(program, fluid.Program(), fluid.Scope(), name="bench")
        session.scope.var("y").get_tensor().set(np.full(shape, 0.5, "float32"))
        x0._sample_value = np.ones(shape, "float32")
    return program, block, session


def _clean_start():
    """Timer start after collecting what earlier rounds left: a live session and its program
    refer to each other, so a finished round's values (16 MB of them at 64x64) are freed by
    the cyclic collector, and it should not do so inside another round's timing."""
    gc.collect()
    return time.perf_counter()


def live_chain(shape):
    program, block, session = _fresh(shape, True)
    from fluid_nb.live import session as s
    s._sessions["bench"] = session
    enable_live("bench")
    try:
        start = _clean_start()
        _chain(block, N_OPS)
        return (time.perf_counter() - start) / N_OPS
    finally:
        disable_live()


def plain_chain(shape):
    program, block, _ = _fresh(shape, False)
    start = _clean_start()
    _chain(block, N_OPS)
    return (time.perf_counter() - start) / N_OPS


def layers_chain(shape, live_mode, operator=False, relu=False):
    """µs per op of the chain as users write it: ``fluid.layers.elementwise_add(c, one)``
    (``c + one`` with ``operator``; ``fluid.layers.relu(c)`` with ``relu``, the activation
    users write most), in live mode or appended to a plain program."""
    main, startup, scope = fluid.Program(), fluid.Program(), fluid.Scope()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        # an unnamed session lives on its program, so it goes with it after the round
        session = fluid.live(program=main, startup_program=startup, scope=scope) \
            if live_mode else None
        if session is not None:
            session.__enter__()
        try:
            c = fluid.layers.fill_constant(list(shape), "float32", 1.0)
            one = fluid.layers.fill_constant(list(shape), "float32", 0.5)
            add = fluid.layers.elementwise_add
            start = _clean_start()
            if operator:
                for _ in range(N_OPS):
                    c = c + one
            elif relu:
                for _ in range(N_OPS):
                    c = fluid.layers.relu(c)
            else:
                for _ in range(N_OPS):
                    c = add(c, one)
            return (time.perf_counter() - start) / N_OPS
        finally:
            if session is not None:
                session.__exit__(None, None, None)


#: layers users write besides ``+`` and ``relu``, each called live on a [4, 8] float32 value
#: ``x`` (``x``, ``ids``: a [4, 1] int64; ``w``: an [8, 4] float32; ``index``: a [2]
#: int64), and NumPy doing the same on arrays, which the ratio is to
LAYERS = {
    "softmax": (lambda L, v: L.softmax(v["x"]), lambda a: _softmax(a["x"])),
    "matmul": (lambda L, v: L.matmul(v["x"], v["w"]), lambda a: a["x"] @ a["w"]),
    "reduce_mean": (lambda L, v: L.reduce_mean(v["x"]), lambda a: a["x"].mean()),
    "reduce_sum, dim 1": (lambda L, v: L.reduce_sum(v["x"], dim=1), lambda a: a["x"].sum(1)),
    "mean": (lambda L, v: L.mean(v["x"]), lambda a: a["x"].mean()),
    "scale": (lambda L, v: L.scale(v["x"], 2.0, 1.0), lambda a: a["x"] * 2.0 + 1.0),
    "cast": (lambda L, v: L.cast(v["x"], "float64"), lambda a: a["x"].astype("float64")),
    "clip": (lambda L, v: L.clip(v["x"], 0.2, 0.8), lambda a: np.clip(a["x"], 0.2, 0.8)),
    "leaky_relu": (lambda L, v: L.leaky_relu(v["x"], 0.1),
                   lambda a: np.where(a["x"] > 0, a["x"], a["x"] * 0.1)),
    # (NumPy has no erf: math.erf over the elements, as a NumPy user writes it)
    "gelu": (lambda L, v: L.gelu(v["x"]),
             lambda a: 0.5 * a["x"] * (1 + _ERF(a["x"] * np.float32(0.7071067811865476)))),
    "unsqueeze": (lambda L, v: L.unsqueeze(v["x"], [0]), lambda a: a["x"][None]),
    "argmax": (lambda L, v: L.argmax(v["x"], 1), lambda a: a["x"].argmax(1)),
    "zeros_like": (lambda L, v: L.zeros_like(v["x"]), lambda a: np.zeros_like(a["x"])),
    "one_hot": (lambda L, v: L.one_hot(v["ids"], 8),
                lambda a: np.eye(8, dtype="float32")[a["ids"][:, 0]]),
    "-x": (lambda L, v: -v["x"], lambda a: -a["x"]),
    "x.astype": (lambda L, v: v["x"].astype("float64"), lambda a: a["x"].astype("float64")),
    "x @ w": (lambda L, v: v["x"] @ v["w"], lambda a: a["x"] @ a["w"]),
    "reshape": (lambda L, v: L.reshape(v["x"], [8, 4]), lambda a: a["x"].reshape(8, 4)),
    "transpose": (lambda L, v: L.transpose(v["x"], [1, 0]),
                  lambda a: np.ascontiguousarray(a["x"].T)),
    "concat": (lambda L, v: L.concat([v["x"], v["x"]], axis=1),
               lambda a: np.concatenate([a["x"], a["x"]], axis=1)),
    "split": (lambda L, v: L.split(v["x"], 2, dim=1),
              lambda a: [np.ascontiguousarray(p) for p in np.split(a["x"], 2, axis=1)]),
    "unstack": (lambda L, v: L.unstack(v["x"]), lambda a: [a["x"][i].copy() for i in range(4)]),
    "x < x": (lambda L, v: v["x"] < v["x"], lambda a: a["x"] < a["x"]),
    "x ** x": (lambda L, v: v["x"] ** v["x"], lambda a: a["x"] ** a["x"]),
    # (a number on the other side: Fluid puts it in a [1] tensor first, two ops)
    "x > 0.5": (lambda L, v: v["x"] > 0.5, lambda a: a["x"] > 0.5),
    "x ** 2": (lambda L, v: v["x"] ** 2, lambda a: a["x"] ** 2),
    "x[:, 0:4]": (lambda L, v: v["x"][:, 0:4], lambda a: a["x"][:, 0:4]),
    "x[1]": (lambda L, v: v["x"][1], lambda a: a["x"][1]),
    "x[::2]": (lambda L, v: v["x"][::2], lambda a: a["x"][::2]),
    "slice": (lambda L, v: L.slice(v["x"], axes=[1], starts=[0], ends=[4]),
              lambda a: a["x"][:, 0:4]),
    "fill_constant": (lambda L, v: L.fill_constant([4, 8], "float32", 1.0),
                      lambda a: np.full((4, 8), 1.0, "float32")),
    "pow": (lambda L, v: L.pow(v["x"], 2.0), lambda a: a["x"] ** 2.0),
    "sum": (lambda L, v: L.sum([v["x"], v["x"]]), lambda a: a["x"] + a["x"]),
    "assign": (lambda L, v: L.assign(v["x"]), lambda a: a["x"].copy()),
    "expand": (lambda L, v: L.expand(v["x"], [2, 1]), lambda a: np.tile(a["x"], (2, 1))),
    "cumsum": (lambda L, v: L.cumsum(v["x"], axis=1), lambda a: np.cumsum(a["x"], axis=1)),
    "isfinite": (lambda L, v: L.isfinite(v["x"]), lambda a: np.isfinite(a["x"]).all()),
    "less_than": (lambda L, v: L.less_than(v["x"], v["x"]), lambda a: a["x"] < a["x"]),
    "gather": (lambda L, v: L.gather(v["x"], v["index"]), lambda a: a["x"][a["index"]]),
    "uniform_random": (lambda L, v: L.uniform_random([4, 8]),
                       lambda a: np.random.uniform(-1, 1, (4, 8)).astype("float32")),
    # (the layers a classifier ends with; ``p``: softmax(x), the probabilities they read)
    "cross_entropy": (lambda L, v: L.cross_entropy(v["p"], v["ids"]),
                      lambda a: -np.log(a["p"][np.arange(4), a["ids"][:, 0]])[:, None]),
    "softmax_with_xe": (lambda L, v: L.softmax_with_cross_entropy(v["x"], v["ids"]),
                        lambda a: _softmax_with_xe(a["x"], a["ids"])),
    "topk": (lambda L, v: L.topk(v["x"], 2), lambda a: _topk(a["x"], 2)),
    "accuracy": (lambda L, v: L.accuracy(v["p"], v["ids"]),
                 lambda a: (_topk(a["p"], 1)[1] == a["ids"]).any(1).mean()),
    # (a live fc makes its parameters and runs their initializers: so does NumPy's)
    "fc": (lambda L, v: L.fc(v["x"], 4, act="relu"),
           lambda a: np.maximum(a["x"] @ np.random.uniform(-0.6, 0.6, (8, 4)).astype(
               "float32") + np.zeros(4, "float32"), 0)),
}


_ERF = np.vectorize(math.erf, otypes=[np.float32])


def _softmax(a):
    e = np.exp(a - a.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _softmax_with_xe(a, ids):
    shifted = a - a.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    total = e.sum(axis=1, keepdims=True)
    return e / total, np.log(total) - shifted[np.arange(len(a)), ids[:, 0]][:, None]


def _topk(a, k):
    indices = np.argsort(-a, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(a, indices, axis=1), indices

LAYER_CALLS = 300


def live_layers():
    """µs per live call of each of LAYERS (a new session per round, the calls on one
    input), beside NumPy's same operation; best of ROUNDS interleaved rounds."""
    rng = np.random.RandomState(0)
    arrays = {"x": rng.rand(4, 8).astype("float32"), "w": rng.rand(8, 4).astype("float32"),
              "ids": rng.randint(0, 8, (4, 1)).astype("int64"),
              "index": np.array([3, 0], "int64")}
    arrays["p"] = _softmax(arrays["x"])

    def live(layer):
        def timed():
            main, startup, scope = fluid.Program(), fluid.Program(), fluid.Scope()
            with fluid.program_guard(main, startup), fluid.unique_name.guard(), \
                    fluid.live(program=main, startup_program=startup, scope=scope):
                values = {name: fluid.layers.data(name=name, shape=list(a.shape),
                                                  dtype=str(a.dtype), append_batch_size=False,
                                                  value=a) for name, a in arrays.items()}
                layer(fluid.layers, values)  # the op type's first call: its plans made
                start = _clean_start()
                for _ in range(LAYER_CALLS):
                    layer(fluid.layers, values)
                return (time.perf_counter() - start) / LAYER_CALLS
        return timed

    def by_hand(fn):
        def timed():
            start = time.perf_counter()
            for _ in range(LAYER_CALLS):
                fn(arrays)
            return (time.perf_counter() - start) / LAYER_CALLS
        return timed

    fns = {}
    for name, (layer, numpy_fn) in LAYERS.items():
        fns[name] = live(layer)
        fns["numpy " + name] = by_hand(numpy_fn)
    samples = interleaved_samples(fns, ROUNDS)
    print(f"\nlive layers users write, [4, 8] float32, {LAYER_CALLS} calls a round, best of "
          f"{ROUNDS}; NumPy doing the same on arrays")
    for name in LAYERS:
        values, numpy_best = samples[name], samples["numpy " + name][0]
        print(f"  live {name:<16s}{values[0] * 1e6:8.2f} µs/call  (NumPy {numpy_best * 1e6:5.2f}"
              f" µs, {values[0] / numpy_best:6.1f}x)  median +{spread(values) * 100:.0f}%")


def append_breakdown():
    """µs per op of stages of Block.append_op on the 1x1 chain (plain program); the slot
    check is timed itself, although append_op remembers a layout that passed it."""
    from fluid_nb.framework import program as fw
    from fluid_nb.ops import registry
    program, block, _ = _fresh((1, 1), False)
    _chain(block, N_OPS)
    spec = registry.find("elementwise_add")
    ops = block.ops
    parts = {}
    parts["complete_attrs"] = best_time(lambda: [spec.complete_attrs({}, program)
                                                 for _ in range(N_OPS)])
    parts["check_slots"] = best_time(lambda: [spec.check_slots(op.inputs, op.outputs)
                                              for op in ops])
    parts["Operator()"] = best_time(lambda: [fw.Operator(block, "elementwise_add", op.inputs,
                                                         op.outputs, op.attrs) for op in ops])
    parts["infer_shape (+share_lod)"] = best_time(lambda: [spec.run_infer_shape(op)
                                                           for op in ops])
    return {k: v / N_OPS for k, v in parts.items()}


def _per_op(fn):
    """A callable returning fn's seconds per op over one N_OPS-long chain."""
    def timed():
        start = time.perf_counter()
        fn()
        return (time.perf_counter() - start) / N_OPS
    return timed


def _report(label, values, numpy_best):
    print(f"{label:<42s}{values[0] * 1e6:8.2f} µs/op  ({values[0] / numpy_best:5.2f}x NumPy)"
          f"  median +{spread(values) * 100:.0f}%")


def _rss_bytes():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


#: a long loop's statement: ``c + one`` (elementwise_add, a formula op) or ``c * 0.999``
#: (scale: a hand-written kernel) and the value c holds after ``n`` of them
LOOP_BODIES = {"c = c + one": (lambda c, one: c + one, lambda n: n),
               "c = c * 0.999": (lambda c, one: c * 0.999, lambda n: 0.999 ** n)}


def long_loop(n_ops, shape, keep_every_value=False, body="c = c + one"):
    """A live loop of ``n_ops`` ``body`` ops: µs per op, the values the session keeps and
    the memory it grows by per op (the program's record; the values nobody holds are let go
    and computed again when read). ``keep_every_value``: the loop also appends each ``c``
    to a list, as a loop collecting its losses does, so no value can be let go."""
    step, expected = LOOP_BODIES[body]
    main, startup, scope = fluid.Program(), fluid.Program(), fluid.Scope()
    with fluid.program_guard(main, startup), fluid.unique_name.guard(), \
            fluid.live(program=main, startup_program=startup, scope=scope) as session:
        c = fluid.layers.fill_constant(list(shape), "float32", 0.0 if "one" in body else 1.0)
        one = fluid.layers.fill_constant(list(shape), "float32", 1.0)
        gc.collect()
        tracked = len(gc.get_objects())
        rss = _rss_bytes()
        collecting = [0.0, 0.0]  # (seconds in the cyclic collector, the current pass's start)

        def timed(phase, info):
            if phase == "start":
                collecting[1] = time.perf_counter()
            else:
                collecting[0] += time.perf_counter() - collecting[1]
        values = []
        gc.callbacks.append(timed)
        start = time.perf_counter()
        try:
            if keep_every_value:
                for _ in range(n_ops):
                    c = step(c, one)
                    values.append(c)
            else:
                for _ in range(n_ops):
                    c = step(c, one)
        finally:
            gc.callbacks.remove(timed)
        seconds = time.perf_counter() - start
        grown = _rss_bytes() - rss
        gc.collect()
        tracked = len(gc.get_objects()) - tracked
        assert abs(float(c.numpy().ravel()[0]) - expected(n_ops)) <= 1e-3 * expected(n_ops)
        kept = sum(h.value.array.nbytes for h in scope.vars.values()
                   if getattr(h.value, "array", None) is not None)
        kept_too = ", each value appended to a list" if keep_every_value else ""
        large = c.numpy().nbytes >= 1 << 20
        print(f"live loop of {n_ops:,} `{body}` ops{kept_too}, "
              f"{'x'.join(map(str, shape))}: "
              f"{seconds / n_ops * 1e6:.1f} µs/op ({collecting[0] / n_ops * 1e6:.1f} in the "
              f"cyclic collector, which tracks {tracked / n_ops:.2f} objects more per op); "
              f"{len(scope.vars)} values kept ({kept / 1024:.0f} KiB), "
              f"{len(session.runner.dropped):,} let go; RSS grew {grown / 2**20:.0f} MB "
              + ("(the values made between two looks for values nobody holds)" if large else
                 f"({grown / n_ops:.0f} B/op: the program's record"
                 f"{' and the values' if keep_every_value else ''})"))


def bytecodes_per_op(n_ops=200, operator=False):
    """Python bytecodes executed per live op of the 1x1 chain (``sys.settrace`` with opcode
    events): a count that does not move with the machine's load, with the functions that
    execute most of them."""
    counts = {}
    main, startup, scope = fluid.Program(), fluid.Program(), fluid.Scope()
    with fluid.program_guard(main, startup), fluid.unique_name.guard(), \
            fluid.live(program=main, startup_program=startup, scope=scope):
        c = fluid.layers.fill_constant([1, 1], "float32", 1.0)
        one = fluid.layers.fill_constant([1, 1], "float32", 0.5)
        add = fluid.layers.elementwise_add
        for _ in range(10):  # (first calls fill caches)
            c = add(c, one)
        sys.settrace(opcode_tracer(counts))
        try:
            for _ in range(n_ops):
                c = c + one if operator else add(c, one)
        finally:
            sys.settrace(None)
    total = sum(counts.values()) / n_ops
    top = sorted(counts.items(), key=lambda item: -item[1])[:8]
    print(f"live {'c + one' if operator else 'layers.elementwise_add'}, 1x1: {total:,.0f} "
          f"bytecodes/op; most in " + ", ".join(f"{name} {count / n_ops:.0f}"
                                               for (_, name), count in top))


def main():
    if "--bytecodes" in sys.argv:
        bytecodes_per_op()
        bytecodes_per_op(operator=True)
        return
    if "--layers" in sys.argv:
        live_layers()
        return
    torch = torch_or_none()
    gc.collect()
    gc.freeze()  # the imported libraries' objects (torch's many) are not rescanned by GC
    print(f"fluid_nb live-mode overhead, {N_OPS}-op elementwise_add chain, float32; "
          f"best of {ROUNDS} interleaved rounds, ratios to NumPy from the same rounds")
    best = {}
    for shape in [(1, 1), (64, 64)]:
        label = "x".join(map(str, shape))
        x, y = np.ones(shape, "float32"), np.full(shape, 0.5, "float32")

        def numpy_chain():
            v = x
            for _ in range(N_OPS):
                v = np.add(v, y)
        fns = {
            f"live, layers.elementwise_add, {label}": lambda: layers_chain(shape, True),
            f"live, c + one, {label}": lambda: layers_chain(shape, True, operator=True),
            f"live, raw block.append_op, {label}": lambda: live_chain(shape),
            f"live, layers.relu, {label}": lambda: layers_chain(shape, True, relu=True),
            "numpy": _per_op(numpy_chain),
        }
        if torch is not None:
            tx, ty = torch.from_numpy(x), torch.from_numpy(y)

            def torch_chain():
                v = tx
                for _ in range(N_OPS):
                    v = torch.add(v, ty)
            fns[f"PyTorch eager torch.add, {label}"] = _per_op(torch_chain)
        if shape == (1, 1):  # appends to a plain program: the shape does not matter
            fns["plain, layers.elementwise_add"] = lambda: layers_chain(shape, False)
            fns["plain, c + one"] = lambda: layers_chain(shape, False, operator=True)
            fns["plain, raw block.append_op"] = lambda: plain_chain(shape)
        samples = interleaved_samples(fns, ROUNDS)
        numpy_best = samples.pop("numpy")[0]
        for name, values in samples.items():
            _report(name, values, numpy_best)
            best[name] = values[0]
        row(f"NumPy np.add, {label}", numpy_best * 1e6, "µs/op")
    for part, seconds in append_breakdown().items():
        row(f"  raw append, of which {part}", seconds * 1e6, "µs/op")
    print(f"\nlive 1x1 through layers: {best['live, layers.elementwise_add, 1x1'] * 1e6:.1f} "
          f"µs/op (c + one {best['live, c + one, 1x1'] * 1e6:.1f}, raw append_op "
          f"{best['live, raw block.append_op, 1x1'] * 1e6:.1f}); plain append through layers "
          f"{best['plain, layers.elementwise_add'] * 1e6:.1f} µs/op (raw "
          f"{best['plain, raw block.append_op'] * 1e6:.1f})")
    live_layers()
    for shape in [(1, 1), (64, 64)]:
        long_loop(100_000, shape)
    long_loop(20_000, (64, 64), body="c = c * 0.999")
    long_loop(1_000, (1000, 1000), body="c = c * 0.999")  # 4 MB a value
    long_loop(20_000, (1, 1), keep_every_value=True)


if __name__ == "__main__":
    main()
