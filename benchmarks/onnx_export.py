"""ONNX export: the time to export each model, and onnxruntime's latency on the exported
model next to the executor's on the same feeds, in one run.

    python benchmarks/onnx_export.py

Models: PaddlePaddle 2.6's saved mlp, linreg and cnn (tests/fixtures/paddle/inference),
and the book's recognize_digits LeNet (batch 16). onnxruntime runs on the CPU with its
default threads; each latency is the best of interleaved rounds.
"""
import os
import pathlib
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fluid_nb as fluid  # noqa: E402
from fluid_nb.cli import load_model_for_run  # noqa: E402
from _timing import interleaved_best, row  # noqa: E402

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "paddle" / \
    "inference"


def paddle_model(name):
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    program, feeds, fetches = load_model_for_run(str(FIXTURES / name / "separate"), exe, scope)
    return program, scope, {feeds[0]: np.load(FIXTURES / name / "input.npy")}, fetches


def lenet():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        img = fluid.layers.data(name="img", shape=[1, 28, 28], dtype="float32")
        h = fluid.nets.simple_img_conv_pool(input=img, filter_size=5, num_filters=20,
                                            pool_size=2, pool_stride=2, act="relu")
        h = fluid.layers.batch_norm(h)
        h = fluid.nets.simple_img_conv_pool(input=h, filter_size=5, num_filters=50,
                                            pool_size=2, pool_stride=2, act="relu")
        prediction = fluid.layers.fc(input=h, size=10, act="softmax")
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    images = np.random.RandomState(0).rand(16, 1, 28, 28).astype("float32")
    return main.clone(for_test=True), scope, {"img": images}, [prediction]


def main():
    import onnxruntime as ort
    exe = fluid.Executor(fluid.CPUPlace())
    with tempfile.TemporaryDirectory() as work:
        for name, make in [("Paddle mlp", lambda: paddle_model("mlp")),
                           ("Paddle linreg", lambda: paddle_model("linreg")),
                           ("Paddle cnn", lambda: paddle_model("cnn")),
                           ("book LeNet, batch 16", lenet)]:
            program, scope, feed, fetches = make()
            path = os.path.join(work, "model.onnx")
            start = time.perf_counter()
            report = fluid.onnx.export(program, path, feed=list(feed), fetch=fetches,
                                       scope=scope)
            export_seconds = time.perf_counter() - start
            session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            want, = exe.run(program, feed=feed, fetch_list=fetches, scope=scope)
            got, = session.run(None, feed)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
            times = interleaved_best({
                "executor": lambda: exe.run(program, feed=feed, fetch_list=fetches,
                                            scope=scope),
                "onnxruntime": lambda: session.run(None, feed)}, rounds=9, number=50)
            converted = sum(r.status != "not converted" for r in report.rows)
            print(f"{name}: export {export_seconds * 1e3:.1f} ms, {converted} of "
                  f"{len(report.rows)} ops converted, outputs equal to 1e-5")
            for label, seconds in times.items():
                row(f"  {label}", seconds * 1e6, "µs/run", times["executor"] * 1e6, "executor")


if __name__ == "__main__":
    main()
