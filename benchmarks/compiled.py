"""Programs compiled to native code (fluid_nb.rewriters.native) against the interpreter,
hand-written NumPy, PyTorch eager, and (where installed) torch.compile and jax.jit of the
same steps, in one run.

    python benchmarks/compiled.py

W1: fit_a_line, fc 13 -> 1, square error, batch 20, SGD. W2: MLP 784-200-200-10 (relu),
softmax cross-entropy, batch 64, Adam. W3: the DynamicRNN of dynamic_rnn.py (a tanh RNN
over 32 sequences of 5..50 steps, input 64, hidden 128, the mean of each last state),
forward and backward, fetching the loss and the three parameters' gradients; compiled once
(its sizes are read at run time) and checked against the NumPy loop, also on a batch of
other lengths. Each step is one ``Executor.run`` of the program (interpreted) or of the
NativeProgram (compiled). The build time is that of a cold build (an empty cache
directory). Last, the cold builds of two study programs, ResNet-56 + Momentum and a
12-layer Transformer encoder + Adam (batch 32), with the distinct bodies their ops compile
to, and a training step of each compiled (the ops without native code run in the
interpreter between the compiled runs) against the interpreter's. W2 also times its eight
matrix products alone through NumPy's BLAS: the floor of any W2 step on that BLAS.
"""
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import fluid_nb as fluid  # noqa: E402
from fluid_nb.rewriters import native  # noqa: E402
from _timing import interleaved_best, row, torch_or_none  # noqa: E402
from train_step import (w1_numpy, w1_program, w1_torch, w2_numpy, w2_program,  # noqa: E402
                        w2_torch)
import dynamic_rnn  # noqa: E402


# --- whole-step compilers of other frameworks, where installed -----------------------------------
# W1 and W2 as jax.jit (forward, gradient and update traced as one function) and
# torch.compile run them; each only where its framework is installed (nothing here installs
# anything), each step returning its loss on the host as a fluid_nb step fetches it. W3 has
# no such rows: its per-step batch sizes are shapes both would specialise on, one trace each.
def jax_or_none():
    try:
        import jax
    except ImportError:
        return None
    return jax


def torch_compile_or_none(torch):
    """``torch.compile`` where this PyTorch has it (2.0 and later), else None."""
    return getattr(torch, "compile", None) if torch is not None else None


# jax.jit ------------------------------------------------------------------------------------
def w1_jax(jax, x, y):
    """W1 (fc 13 -> 1, square error, SGD 0.01) as one jitted step."""
    jnp = jax.numpy
    rng = np.random.RandomState(0)
    params = (jnp.asarray(rng.uniform(-0.5, 0.5, (13, 1)).astype("float32")),
              jnp.zeros(1, "float32"))

    def loss_of(p, x, y):
        diff = x @ p[0] + p[1] - y
        return jnp.mean(diff * diff)

    @jax.jit
    def update(p, x, y):
        loss, grads = jax.value_and_grad(loss_of)(p, x, y)
        return tuple(a - 0.01 * g for a, g in zip(p, grads)), loss

    tx, ty = jnp.asarray(x), jnp.asarray(y)
    state = [params]

    def step():
        state[0], loss = update(state[0], tx, ty)
        return np.asarray(loss)
    return step


def w2_jax(jax, x, label):
    """W2 (MLP 784-200-200-10, softmax cross-entropy, Adam 0.001) as one jitted step."""
    jnp = jax.numpy
    rng = np.random.RandomState(0)
    params = []
    for fan_in, fan_out in [(784, 200), (200, 200), (200, 10)]:
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        params += [jnp.asarray(rng.uniform(-limit, limit, (fan_in, fan_out)).astype("float32")),
                   jnp.zeros(fan_out, "float32")]
    params = tuple(params)
    moments = tuple((jnp.zeros_like(p), jnp.zeros_like(p)) for p in params)
    beta1, beta2, eps, lr = 0.9, 0.999, 1e-8, 0.001

    def loss_of(p, x, labels):
        h = jax.nn.relu(x @ p[0] + p[1])
        h = jax.nn.relu(h @ p[2] + p[3])
        logits = h @ p[4] + p[5]
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))

    @jax.jit
    def update(p, m, t, x, labels):
        loss, grads = jax.value_and_grad(loss_of)(p, x, labels)
        t = t + 1
        rate = lr * jnp.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
        new_p, new_m = [], []
        for a, (m1, m2), g in zip(p, m, grads):
            m1 = beta1 * m1 + (1 - beta1) * g
            m2 = beta2 * m2 + (1 - beta2) * g * g
            new_p.append(a - rate * m1 / (jnp.sqrt(m2) + eps))
            new_m.append((m1, m2))
        return tuple(new_p), tuple(new_m), t, loss

    tx, tl = jnp.asarray(x), jnp.asarray(label.reshape(-1).astype("int32"))
    state = [params, moments, jnp.zeros((), "float32")]

    def step():
        state[0], state[1], state[2], loss = update(*state, tx, tl)
        return np.asarray(loss)
    return step


# torch.compile ------------------------------------------------------------------------------
def w1_torch_compiled(torch, x, y):
    return w1_torch(torch, x, y, compiled=True)


def w2_torch_compiled(torch, x, label):
    return w2_torch(torch, x, label, compiled=True)


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


def w2_products(x, label):
    """W2's eight matrix products alone (forward, input and weight gradients, as the step
    by hand makes them) through NumPy's BLAS: what no W2 step on this BLAS can go below."""
    rng = np.random.RandomState(0)
    w1, w2, w3 = (rng.uniform(-0.1, 0.1, shape).astype("float32")
                  for shape in [(784, 200), (200, 200), (200, 10)])
    h1, h2, dz = (rng.uniform(-1, 1, shape).astype("float32")
                  for shape in [(64, 200), (64, 200), (64, 10)])

    def products():
        x @ w1, h1 @ w2, h2 @ w3
        dh2, dh1 = dz @ w3.T, h2 @ w2.T
        return x.T @ dh1, h1.T @ dh2, h2.T @ dz
    return products


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
    jax = jax_or_none()
    for name, build, data, feed, by_numpy, by_torch, by_torch_compiled, by_jax, number in [
            ("W1 fit_a_line step (13->1, batch 20, SGD)", w1_program, w1,
             {"x": w1[0], "y": w1[1]}, w1_numpy, w1_torch, w1_torch_compiled, w1_jax, 200),
            ("W2 MLP step (784-200-200-10, batch 64, Adam)", w2_program, w2,
             {"img": w2[0], "label": w2[1]}, w2_numpy, w2_torch, w2_torch_compiled, w2_jax,
             20)]:
        interpreted, compiled, build_seconds = steps(build, feed)
        candidates = {"fluid_nb compiled": compiled, "fluid_nb interpreter": interpreted,
                      "NumPy (hand-written)": by_numpy(*data)}
        if torch is not None:
            candidates["PyTorch eager"] = by_torch(torch, *data)
        if torch_compile_or_none(torch) is not None:
            candidates["PyTorch torch.compile"] = by_torch_compiled(torch, *data)
        if jax is not None:
            candidates["JAX jax.jit"] = by_jax(jax, *data)
        if by_numpy is w2_numpy:
            candidates["NumPy, the 8 matrix products alone"] = w2_products(*data)
        report(name, candidates, build_seconds, number, 1e6, "µs/step")
    if torch is None:
        print("PyTorch is not installed: no PyTorch eager or torch.compile rows")
    if jax is None:
        print("JAX is not installed: no jax.jit rows")
    candidates, build_seconds, ops = w3(torch)
    report(f"W3 DynamicRNN forward + backward (32 sequences, 5..50 steps, 64 -> 128 tanh; "
           f"{ops} ops in 3 blocks, one build for every LoD)", candidates, build_seconds, 10,
           1e3, "ms/batch")
    study_builds()


def study_builds():
    """The cold build of the study programs (a ResNet and a Transformer as the graph view
    opens them, their training steps whole): seconds, and what the source holds."""
    from tests.browser.study_models import resnet_training, transformer_training
    rng = np.random.RandomState(0)
    for name, made, feed in [
            ("ResNet-56 + Momentum", resnet_training(56, with_startup=True),
             {"pixel": rng.rand(32, 3, 32, 32).astype("float32"),
              "label": rng.randint(0, 10, (32, 1)).astype("int64")}),
            ("Transformer-12 + Adam", transformer_training(12, with_startup=True),
             {"words": rng.randint(0, 1000, (32, 16, 1)).astype("int64"),
              "label": rng.randint(0, 2, (32, 1)).astype("int64")})]:
        main, startup, loss = made
        exe = fluid.Executor(fluid.CPUPlace())
        scope, interpreted = fluid.Scope(), fluid.Scope()
        exe.run(startup, scope=scope)
        exe.run(startup, scope=interpreted)
        program, seconds = cold_compile(main, feed, [loss], scope)
        source = program.source
        bodies = len(set(source.shared_bodies.values()))
        alone = len(source.functions) - len(source.shared_bodies)
        print(f"{name} ({len(main.global_block().ops)} ops): cold build {seconds:.2f} s; "
              f"{len(source.functions)} ops compiled as {alone + bodies} distinct bodies "
              f"({len(source.shared_bodies)} ops share {bodies}), "
              f"{len(source.fallbacks)} in the interpreter; "
              f"{len(source.source.splitlines())} source lines")
        # a training step of each (the ops that fall back run in the interpreter between
        # the compiled runs)
        steps = {"compiled": lambda: exe.run(program, feed=feed, fetch_list=[loss],
                                             scope=scope),
                 "interpreter": lambda: exe.run(main, feed=feed, fetch_list=[loss],
                                                scope=interpreted)}
        for step in steps.values():
            step()
        times = interleaved_best(steps, rounds=3, number=2)
        print(f"  a step: compiled {times['compiled'] * 1e3:.1f} ms, interpreter "
              f"{times['interpreter'] * 1e3:.1f} ms "
              f"({times['compiled'] / times['interpreter']:.2f}x the interpreter)")


def report(name, candidates, build_seconds, number, scale, unit):
    """Each candidate warmed, timed in interleaved rounds and printed as a ratio to NumPy's
    step; returns {label: seconds per call}."""
    for fn in candidates.values():
        for _ in range(5):
            fn()
    times = interleaved_best(candidates, rounds=9, number=number)
    print(f"{name}; cold build {build_seconds:.2f} s")
    base = times["NumPy (hand-written)"]
    for label, seconds in times.items():
        row(f"  {label}", seconds * scale, unit, base * scale, "NumPy")
    return times


if __name__ == "__main__":
    main()
