"""Host kernels at a model's sizes: one layer's program run through ``Executor.run`` on a
[256, 512] float32 batch (the metrics on [256, 1000] class scores), against NumPy doing the
same on arrays.

    python benchmarks/host_kernels.py [LAYER ...]

Each line gives the fastest of nine runs of each way (taking turns), and the ratio. A layer
whose kernel falls off NumPy's vector paths (a Python loop over elements, a full sort
where a partition does) stands out by a ratio far above the others', which the fixed cost
of a run (about 10 µs) explains for the cheap ones. NumPy has no error function: its GELU
is ``math.erf`` over the elements, as a NumPy user writes it.
"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fluid_nb as fluid  # noqa: E402
from _timing import interleaved_best  # noqa: E402

ROWS, WIDTH, CLASSES = 256, 512, 1000
rng = np.random.RandomState(0)
X = rng.randn(ROWS, WIDTH).astype("float32")
SCORES = rng.rand(ROWS, CLASSES).astype("float32")
LABELS = rng.randint(0, CLASSES, (ROWS, 1)).astype("int64")
_ERF = np.vectorize(math.erf, otypes=[np.float32])


def _softmax(a):
    e = np.exp(a - a.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _top_k(a, k):
    """NumPy's top k as its users write it: a partition, then its k sorted."""
    part = np.argpartition(-a, k - 1, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(a, part, axis=1), axis=1, kind="stable")
    indices = np.take_along_axis(part, order, axis=1)
    return np.take_along_axis(a, indices, axis=1), indices


#: layer -> (the layer on the data variables x [256, 512], scores [256, 1000], label
#: [256, 1]; NumPy's same on the arrays)
LAYERS = {
    "softmax": (lambda v: fluid.layers.softmax(v["x"]), lambda: _softmax(X)),
    "layer_norm": (lambda v: fluid.layers.layer_norm(v["x"]),
                   lambda: (X - X.mean(1, keepdims=True)) / np.sqrt(X.var(1, keepdims=True)
                                                                    + 1e-5)),
    "gelu": (lambda v: fluid.layers.gelu(v["x"]),
             lambda: 0.5 * X * (1 + _ERF(X * np.float32(0.7071067811865476)))),
    "tanh": (lambda v: fluid.layers.tanh(v["x"]), lambda: np.tanh(X)),
    "sigmoid": (lambda v: fluid.layers.sigmoid(v["x"]), lambda: 1 / (1 + np.exp(-X))),
    "reduce_mean": (lambda v: fluid.layers.reduce_mean(v["x"], dim=1), lambda: X.mean(1)),
    "cumsum": (lambda v: fluid.layers.cumsum(v["x"], axis=1), lambda: np.cumsum(X, 1)),
    "argsort": (lambda v: fluid.layers.argsort(v["x"], axis=1)[1],
                lambda: np.argsort(X, 1, kind="stable")),
    "concat": (lambda v: fluid.layers.concat([v["x"], v["x"]], 1),
               lambda: np.concatenate([X, X], 1)),
    "transpose": (lambda v: fluid.layers.transpose(v["x"], [1, 0]),
                  lambda: np.ascontiguousarray(X.T)),
    "topk, k=5": (lambda v: fluid.layers.topk(v["scores"], 5)[1],
                  lambda: _top_k(SCORES, 5)),
    "accuracy": (lambda v: fluid.layers.accuracy(v["scores"], v["label"]),
                 lambda: (SCORES.argmax(1) == LABELS[:, 0]).mean()),
    "cross_entropy": (lambda v: fluid.layers.cross_entropy(v["scores"], v["label"]),
                      lambda: -np.log(SCORES[np.arange(ROWS), LABELS[:, 0]])[:, None]),
    "softmax_with_xe": (lambda v: fluid.layers.softmax_with_cross_entropy(v["scores"],
                                                                          v["label"]),
                        lambda: np.log(np.exp(SCORES).sum(1)) -
                        SCORES[np.arange(ROWS), LABELS[:, 0]]),
}


def layer_step(layer):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        variables = {"x": fluid.data("x", [ROWS, WIDTH], "float32"),
                     "scores": fluid.data("scores", [ROWS, CLASSES], "float32"),
                     "label": fluid.data("label", [ROWS, 1], "int64")}
        out = layer(variables)
    executor = fluid.Executor(fluid.CPUPlace())
    executor.run(startup)
    feed = {"x": X, "scores": SCORES, "label": LABELS}
    executor.run(main, feed=feed, fetch_list=[out])
    return lambda: executor.run(main, feed=feed, fetch_list=[out])


def main():
    chosen = sys.argv[1:] or list(LAYERS)
    print(f"host kernels through Executor.run, [{ROWS}, {WIDTH}] float32 (the metrics on "
          f"[{ROWS}, {CLASSES}] scores), best of 9 runs each way")
    for name in chosen:
        layer, numpy_way = LAYERS[name]
        best = interleaved_best({"fluid": layer_step(layer), "numpy": numpy_way},
                                rounds=9, number=1)
        print(f"  {name:<18s}{best['fluid'] * 1e3:9.3f} ms  (NumPy {best['numpy'] * 1e3:8.3f} "
              f"ms, {best['fluid'] / best['numpy']:6.2f}x)")


if __name__ == "__main__":
    main()
