"""How far the compiled W2 and W3 steps stand from what this machine allows, in one run.

    python benchmarks/compiled_floor.py

The machine's matrix-product peak: a 1024 x 1024 x 1024 float32 product through NumPy's
BLAS in a child process, on one core (``OPENBLAS_NUM_THREADS=1``) and on all of them (the
setting is the child's; this process keeps its own).

W2 (compiled.py's MLP step) compiled three ways, its Adam updates, SGD's in their place,
and no update at all (the gradients only), beside NumPy's step by hand and its eight matrix
products alone: the step without updates against the products shows what the rest of the
step costs, Adam against no update what Adam's pass over the parameters and moments costs.

W3 (compiled.py's DynamicRNN batch) compiled, beside NumPy's loop, and the time its matrix
products' multiply-adds take at one core's peak and at all cores' peak. Every ratio is to
NumPy's step in the same run (interleaved rounds, best of each).
"""
import functools
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _timing import row  # noqa: E402
from compiled import report, steps, w2_products, w3  # noqa: E402
from train_step import w2_numpy, w2_program  # noqa: E402
import dynamic_rnn  # noqa: E402

_PEAK = """
import time
import numpy as np
a, b = (np.random.RandomState(0).rand(1024, 1024).astype("float32") for _ in range(2))
c = np.empty_like(a)
np.matmul(a, b, out=c)
best = float("inf")
for _ in range(7):
    start = time.perf_counter()
    np.matmul(a, b, out=c)
    best = min(best, time.perf_counter() - start)
print(2 * 1024 ** 3 / best)
"""


def product_peak(threads):
    """float32 FLOP a second of a large product on ``threads`` BLAS threads (None: the
    BLAS's own choice), measured in a child process."""
    env = dict(os.environ)
    if threads is not None:
        env["OPENBLAS_NUM_THREADS"] = env["OMP_NUM_THREADS"] = str(threads)
    out = subprocess.run([sys.executable, "-c", _PEAK], env=env, capture_output=True,
                         text=True, timeout=120, check=True)
    return float(out.stdout)


def w3_multiply_adds(lengths, inputs, hidden):
    """The multiply-adds of W3's products: forward x_t W and h U, backward dz's products
    with x_t (W's gradient), h (U's) and U (the state's gradient), over every row."""
    return sum(lengths) * (2 * inputs * hidden + 3 * hidden * hidden)


def w2_multiply_adds(batch=64, sizes=(784, 200, 200, 10)):
    """The multiply-adds of W2's eight products: each layer's forward product and weight
    gradient, and the input gradients of all layers but the first (its input is data)."""
    layers = list(zip(sizes, sizes[1:]))
    return sum(2 * batch * m * n for m, n in layers) + \
        sum(batch * m * n for m, n in layers[1:])


def at_peaks(flops, peaks, base, unit):
    """The time ``flops`` take at each of ``peaks`` (label, FLOP a second), in µs ``unit``
    and as a ratio to NumPy's step (``base`` seconds)."""
    for where, peak in peaks:
        row(f"  its products ({flops / 1e6:.0f} MFLOP) at {where} peak", flops / peak * 1e6,
            unit, base * 1e6, "NumPy")


def main():
    one_core, all_cores = product_peak(1), product_peak(None)
    print(f"float32 product peak (1024^3 through NumPy's BLAS): one core "
          f"{one_core / 1e9:.0f} GFLOP/s, {os.cpu_count()} cores {all_cores / 1e9:.0f} GFLOP/s")
    rng = np.random.RandomState(1)
    x = rng.uniform(-1, 1, (64, 784)).astype("float32")
    label = rng.randint(0, 10, (64, 1)).astype("int64")
    feed = {"img": x, "label": label}
    candidates, build_seconds = {}, 0.0
    for name, update in (("Adam", "adam"), ("SGD", "sgd"), ("no update", None)):
        _, candidates[f"fluid_nb compiled, {name}"], seconds = steps(
            functools.partial(w2_program, update), feed)
        build_seconds = max(build_seconds, seconds)
    candidates["NumPy (hand-written)"] = w2_numpy(x, label)
    candidates["NumPy, the 8 matrix products alone"] = w2_products(x, label)
    peaks = (("one core's", one_core), ("all cores'", all_cores))
    times = report("W2 MLP step (784-200-200-10, batch 64)", candidates, build_seconds, 20,
                   1e6, "µs/step")
    at_peaks(2 * w2_multiply_adds(), peaks, times["NumPy (hand-written)"], "µs/step")
    candidates, build_seconds, _ = w3(None)  # (their values checked against NumPy's loop)
    del candidates["fluid_nb interpreter"]
    times = report("W3 DynamicRNN batch (forward + backward)", candidates, build_seconds, 10,
                   1e6, "µs/batch")
    _, lengths = dynamic_rnn.make_batch()
    w, u, _ = dynamic_rnn.make_params()
    at_peaks(2 * w3_multiply_adds(lengths, w.shape[0], u.shape[0]), peaks,
             times["NumPy (hand-written)"], "µs/batch")

if __name__ == "__main__":
    main()
