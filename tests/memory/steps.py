"""Training steps that fail part way, for the tests of the step transaction.

A small model (fc 128 -> batch_norm -> relu -> fc 1, a square loss) is trained by one of
several optimizers; its first weight is 128 x 128 float32 (64 KiB), large enough for the
executor to consider updating it in place. A failure is injected right after the op at a
given position of the step has run, through the executor's ``trace`` (it is told of every
op as soon as the op returns):

- ``interrupt``: a KeyboardInterrupt, as Ctrl-C in a notebook raises it;
- ``kernel``: an exception from inside the op loop, as a kernel's own failure;
- ``memory``: the arena is filled up (leaving ``room`` bytes free), so that the next op
  that allocates runs out of memory for real.
"""
import numpy as np

import fluid_nb as fluid
from fluid_nb import flags
from fluid_nb.errors import FluidError, ResourceExhausted
from fluid_nb.memory import places

CPU = fluid.CPUPlace()
WIDTH = 128
OPTIMIZERS = {
    "sgd": lambda: fluid.optimizer.SGD(0.1),
    "momentum": lambda: fluid.optimizer.Momentum(0.1, momentum=0.9),
    "adam": lambda: fluid.optimizer.Adam(0.01),
    "rmsprop": lambda: fluid.optimizer.RMSProp(0.01),
}
KINDS = ("interrupt", "kernel", "memory")


def model(optimizer, seed=3):
    """(main, startup, loss) of one training step with ``optimizer`` (a key of OPTIMIZERS)."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = seed
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, WIDTH], "float32")
        y = fluid.data("y", [None, 1], "float32")
        h = fluid.layers.fc(x, WIDTH)
        h = fluid.layers.relu(fluid.layers.batch_norm(h))
        out = fluid.layers.fc(h, 1)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(out, y))
        OPTIMIZERS[optimizer]().minimize(loss)
    return main, startup, loss


def classifier(width, hidden, classes, optimizer, seed):
    """(main, startup, loss) of a two-layer classifier's training step: fc ``width`` ->
    ``hidden`` (relu) -> ``classes``, softmax cross entropy, minimized by ``optimizer()``."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = seed
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, width], "float32")
        label = fluid.data("label", [None, 1], "int64")
        h = fluid.layers.fc(x, hidden, act="relu")
        logits = fluid.layers.fc(h, classes)
        loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits, label))
        optimizer().minimize(loss)
    return main, startup, loss


def batch(seed):
    rng = np.random.RandomState(seed)
    return {"x": rng.uniform(-1, 1, (16, WIDTH)).astype("float32"),
            "y": rng.uniform(-1, 1, (16, 1)).astype("float32")}


def persistables(scope):
    """name -> (dtype, shape, bytes) of every tensor the scope holds: a bitwise record."""
    out = {}
    for name, value in scope.local_values().items():
        array = getattr(value, "array", None)
        if array is not None:
            data = np.ascontiguousarray(np.asarray(array))
            out[name] = (str(data.dtype), data.shape, data.tobytes())
    return out


def small_arena(limit=64 << 20):
    """Give the host a fresh arena limited to about ``limit`` bytes; returns the flags to
    give back to :func:`restore_flags`."""
    saved = dict(flags._values)
    fluid.set_flags({"FLAGS_fraction_of_cpu_memory_to_use":
                     min(1.0, limit / places.physical_memory())})
    places.fresh_host_arena()
    return saved


def restore_flags(saved):
    flags._values.clear()
    flags._values.update(saved)
    flags.version[0] += 1
    places.fresh_host_arena()


def exhaust(room=0):
    """Allocate every block the arena can give, then give back the smallest one of at
    least ``room`` bytes (a power of two) and take all of it again but ``room`` bytes, so
    that exactly ``room`` bytes are free; returns the addresses still held (for
    :func:`give_back`)."""
    held = []
    size = places.host_arena().arena.chunk_size
    while size >= places.MIN_BLOCK:
        try:
            held.append((fluid.memory.alloc(CPU, size), size))
        except ResourceExhausted:
            size //= 2
    if room:
        fitting = [entry for entry in held if entry[1] >= room]
        if fitting:
            smallest = min(fitting, key=lambda entry: entry[1])
            held.remove(smallest)
            fluid.memory.free(CPU, smallest[0])
            size = smallest[1] // 2  # (its halves, quarters, ... down to room)
            while size >= room:
                held.append((fluid.memory.alloc(CPU, size), size))
                size //= 2
    return [address for address, _ in held]


def give_back(addresses):
    for address in addresses:
        fluid.memory.free(CPU, address)


class InjectedFailure(RuntimeError):
    """What the ``kernel`` kind raises inside the op loop."""


class FailAfter:
    """An executor trace that fails the run right after op ``index`` has run."""

    def __init__(self, index, kind, room=0):
        self.index, self.kind, self.room = index, kind, room
        self.seen = 0
        self.filler = []

    def append(self, entry):
        self.seen += 1
        if self.seen - 1 != self.index:
            return
        if self.kind == "interrupt":
            raise KeyboardInterrupt
        if self.kind == "kernel":
            raise InjectedFailure(f"injected after op {self.index}")
        self.filler = exhaust(self.room)


def failing_step(exe, main, scope, feed, fetch, index, kind, room=0):
    """Run one step that fails after op ``index``: the exception (None when the step went
    through, which only a ``memory`` failure after the last allocating op allows)."""
    trace = FailAfter(index, kind, room)
    exe.trace = trace
    try:
        exe.run(main, feed=feed, fetch_list=fetch, scope=scope)
    except (FluidError, KeyboardInterrupt) as failure:
        return failure
    finally:
        exe.trace = None
        give_back(trace.filler)
    return None


def trained_scope(optimizer, steps=1):
    """(exe, main, scope, loss) after the startup and ``steps`` normal steps."""
    main, startup, loss = model(optimizer)
    exe, scope = fluid.Executor(CPU), fluid.Scope()
    exe.run(startup, scope=scope)
    for step in range(steps):
        exe.run(main, feed=batch(step), fetch_list=[loss], scope=scope)
    return exe, main, scope, loss
