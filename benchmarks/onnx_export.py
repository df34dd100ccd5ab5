"""ONNX export: the time to export each model, and onnxruntime's latency on the exported
model next to the executor's on the same feeds, in one run.

    python benchmarks/onnx_export.py

Models: PaddlePaddle 2.6's saved mlp, linreg and cnn (tests/fixtures/paddle/inference),
the book's recognize_digits LeNet (batch 16), three LoD models by the padded convention
(an embedding + dynamic_lstm + sequence_pool classifier, a DynamicRNN, a sequence_conv_pool
text CNN), four sequences of lengths 3, 5, 2, 4, and control flow (cond, then a While loop
of 4 fc steps: If and Loop nodes). onnxruntime runs on the CPU with its
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


LENGTHS = [3, 5, 2, 4]


def _padded(rows):
    out = np.zeros((len(LENGTHS), max(LENGTHS)) + rows.shape[1:], rows.dtype)
    for b, (start, n) in enumerate(zip(np.cumsum([0] + LENGTHS[:-1]), LENGTHS)):
        out[b, :n] = rows[start:start + n]
    return out


def lod_model(kind):
    """The LoD text classifier (embedding, dynamic_lstm, sequence_pool) or a DynamicRNN:
    (program, scope, the executor's feed, onnxruntime's padded feed, fetch list)."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        if kind == "lstm":
            source = fluid.layers.data(name="seq", shape=[1], dtype="int64", lod_level=1)
            emb = fluid.layers.embedding(input=source, size=[30, 16])
            hidden, _ = fluid.layers.dynamic_lstm(input=fluid.layers.fc(input=emb, size=64),
                                                  size=64)
            pooled = fluid.layers.sequence_pool(hidden, "max")
        elif kind == "conv":
            source = fluid.layers.data(name="seq", shape=[1], dtype="int64", lod_level=1)
            emb = fluid.layers.embedding(input=source, size=[30, 16])
            pooled = fluid.nets.sequence_conv_pool(emb, num_filters=32, filter_size=3,
                                                   act="tanh", pool_type="max")
        else:
            source = fluid.layers.data(name="seq", shape=[16], dtype="float32", lod_level=1)
            rnn = fluid.layers.DynamicRNN()
            with rnn.block():
                step = rnn.step_input(source)
                memory = rnn.memory(shape=[32], value=0.0)
                new = fluid.layers.fc(input=[step, memory], size=32, act="tanh")
                rnn.update_memory(memory, new)
                rnn.output(new)
            pooled = fluid.layers.sequence_last_step(rnn())
        prediction = fluid.layers.fc(input=pooled, size=2, act="softmax")
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    rng = np.random.RandomState(0)
    rows = rng.randint(0, 30, (sum(LENGTHS), 1)).astype("int64") if kind != "rnn" else \
        rng.rand(sum(LENGTHS), 16).astype("float32")
    feed = {"seq": fluid.create_lod_tensor(rows, [LENGTHS], fluid.CPUPlace())}
    padded = {"seq": _padded(rows), "seq_lengths": np.array(LENGTHS, "int64")}
    return main.clone(for_test=True), scope, feed, padded, [prediction]


def control_flow():
    """cond picks a branch by the input's sign, then a While loop applies a layer 4 times."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[32], dtype="float32")
        positive = fluid.layers.greater_than(fluid.layers.reduce_sum(x),
                                             fluid.layers.fill_constant([1], "float32", 0.0))
        y = fluid.layers.cond(positive, lambda: fluid.layers.scale(x, 2.0),
                              lambda: fluid.layers.relu(x) - 1.0)
        i = fluid.layers.fill_constant([1], "int64", 0)
        four = fluid.layers.fill_constant([1], "int64", 4)
        condition = fluid.layers.less_than(i, four)
        loop = fluid.layers.While(condition)
        with loop.block():
            fluid.layers.assign(fluid.layers.fc(y, size=32, act="tanh"), y)
            fluid.layers.increment(i, in_place=True)
            fluid.layers.less_than(i, four, cond=condition)
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    feed = {"x": np.random.RandomState(0).rand(8, 32).astype("float32")}
    return main, scope, feed, [y]


def main():
    import onnxruntime as ort
    exe = fluid.Executor(fluid.CPUPlace())
    with tempfile.TemporaryDirectory() as work:
        for name, make in [("Paddle mlp", lambda: paddle_model("mlp")),
                           ("Paddle linreg", lambda: paddle_model("linreg")),
                           ("Paddle cnn", lambda: paddle_model("cnn")),
                           ("book LeNet, batch 16", lenet),
                           ("LoD text classifier (dynamic_lstm)", lambda: lod_model("lstm")),
                           ("DynamicRNN (tanh, hidden 32)", lambda: lod_model("rnn")),
                           ("LoD text CNN (sequence_conv_pool)", lambda: lod_model("conv")),
                           ("cond + While loop (4 fc steps)", control_flow)]:
            made = make()
            if len(made) == 4:
                program, scope, feed, fetches = made
                onnx_feed = feed
            else:
                program, scope, feed, onnx_feed, fetches = made
            path = os.path.join(work, "model.onnx")
            start = time.perf_counter()
            report = fluid.onnx.export(program, path, feed=list(feed), fetch=fetches,
                                       scope=scope)
            assert report.complete, str(report)
            export_seconds = time.perf_counter() - start
            session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            want, = exe.run(program, feed=feed, fetch_list=fetches, scope=scope)
            got, = session.run(None, onnx_feed)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
            times = interleaved_best({
                "executor": lambda: exe.run(program, feed=feed, fetch_list=fetches,
                                            scope=scope),
                "onnxruntime": lambda: session.run(None, onnx_feed)}, rounds=9, number=50)
            converted = sum(r.status != "not converted" for r in report.rows)
            print(f"{name}: export {export_seconds * 1e3:.1f} ms, {converted} of "
                  f"{len(report.rows)} ops converted, outputs equal to 1e-5")
            for label, seconds in times.items():
                row(f"  {label}", seconds * 1e6, "µs/run", times["executor"] * 1e6, "executor")


if __name__ == "__main__":
    main()
