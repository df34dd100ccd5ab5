"""The converters of ops Paddle 2.x programs hold (the rnn op, flatten_contiguous_range,
fill_constant with a shape read at run time, scale of integers, p_norm, a hand-written
DynamicRNN condition), each checked against the executor on programs built here, beyond what the
saved models of test_paddle_models.py cover: every rnn mode, initial states that are not
zero, sequence lengths with several layers, unknown dims after the flattened range."""
import numpy as np
import pytest

import fluid_nb as fluid

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def run_both(tmp_path, program, scope, feeds, fetch):
    """The executor's and onnxruntime's outputs of ``program`` for each feed in ``feeds``."""
    path = tmp_path / "m.onnx"
    report = fluid.onnx.export(program, path, feed=list(feeds[0]), fetch=fetch, scope=scope,
                               strict=True)
    assert report.complete, str(report)
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    exe = fluid.Executor(fluid.CPUPlace())
    for feed in feeds:
        want = exe.run(program, feed=feed, fetch_list=fetch, scope=scope)
        got = session.run(fetch, feed)
        for name, g, w in zip(fetch, got, want):
            assert g.shape == w.shape and g.dtype == w.dtype, name
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=name)
    return report


def rnn_program(mode, layers, bidirec, lengths, hidden=3, size=4, steps=5):
    """x [T, N, size] -> rnn -> Out, State; parameters and initial states in the scope."""
    rng = np.random.RandomState(len(mode) + 10 * layers + bidirec)
    directions = 2 if bidirec else 1
    program, scope = fluid.Program(), fluid.Scope()
    block = program.global_block()
    block.create_var(name="x", shape=(steps, -1, size), dtype="float32")
    names = []
    for kind in ("w", "b"):
        for layer in range(layers):
            for d in range(directions):
                for part in ("ih", "hh"):
                    name = f"{kind}_{part}_{layer}_{d}"
                    width = size if layer == 0 else directions * hidden
                    shape = (GATES[mode] * hidden, width if part == "ih" else hidden) \
                        if kind == "w" else (GATES[mode] * hidden,)
                    block.create_var(name=name, shape=shape, dtype="float32",
                                     persistable=True)
                    scope.var(name).get_tensor().set(
                        rng.uniform(-0.7, 0.7, shape).astype("float32"), fluid.CPUPlace())
                    names.append(name)
    states = ["h0", "c0"] if mode == "LSTM" else ["h0"]
    for name in states:  # initial states fed: another batch size each run
        block.create_var(name=name, shape=(layers * directions, -1, hidden), dtype="float32")
    inputs = {"Input": ["x"], "PreState": states, "WeightList": names}
    if lengths:
        block.create_var(name="lengths", shape=(-1,), dtype="int64")
        inputs["SequenceLength"] = ["lengths"]
    outs = ["out"] + [f"{s}_final" for s in states]
    for name in outs + ["reserve", "dropout_state"]:
        block.create_var(name=name, dtype="float32")
    block.append_op(type="rnn", inputs=inputs,
                    outputs={"Out": ["out"], "State": outs[1:], "Reserve": ["reserve"],
                             "DropoutState": ["dropout_state"]},
                    attrs={"mode": mode, "num_layers": layers, "is_bidirec": bidirec,
                           "hidden_size": hidden, "input_size": size, "is_test": True})

    def feed(batch, seed):
        r = np.random.RandomState(seed)
        values = {"x": r.uniform(-1, 1, (steps, batch, size)).astype("float32")}
        for name in states:
            values[name] = r.uniform(-1, 1, (layers * directions, batch, hidden)).astype(
                "float32")
        if lengths:
            values["lengths"] = r.randint(1, steps + 1, batch).astype("int64")
        return values

    return program, scope, [feed(3, 1), feed(1, 2), feed(6, 3)], outs


@pytest.mark.parametrize("mode", list(GATES))
@pytest.mark.parametrize("layers, bidirec, lengths", [
    (1, False, False), (2, True, False), (2, True, True), (1, False, True)],
    ids=["one_layer", "two_layers_bidirectional", "two_layers_bidirectional_lengths",
         "lengths"])
def test_the_rnn_op_matches_the_executor(mode, layers, bidirec, lengths, tmp_path):
    program, scope, feeds, fetch = rnn_program(mode, layers, bidirec, lengths)
    run_both(tmp_path, program, scope, feeds, fetch)


def test_a_training_rnn_with_dropout_between_layers_is_declined():
    program, scope, feeds, fetch = rnn_program("LSTM", 2, False, False)
    op, = program.global_block().ops
    op.attrs.update(is_test=False, dropout_prob=0.3)
    row, = fluid.onnx.export(program, None, feed=list(feeds[0]), fetch=fetch,
                             scope=scope).not_converted
    assert row.op_type == "rnn" and "dropout" in row.note


@pytest.mark.parametrize("shape, start, stop", [
    ((-1, 3, 4, 2), 1, 2), ((-1, 3, 4, 2), 0, -1), ((-1, 3, -1, 2), 1, 2),
    ((-1, 3, 4, -1), 1, 2), ((-1, 3, 4, -1), 2, 2), ((-1, 3, 4, 2), -3, -1)])
def test_flatten_contiguous_range_matches_the_executor(shape, start, stop, tmp_path):
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="x", shape=shape, dtype="float32")
    block.create_var(name="out", dtype="float32")
    block.append_op(type="flatten_contiguous_range", inputs={"X": ["x"]},
                    outputs={"Out": ["out"]}, attrs={"start_axis": start, "stop_axis": stop})
    rng = np.random.RandomState(0)
    feeds = [{"x": rng.randn(*[b if d < 0 else d for d in shape]).astype("float32")}
             for b in (2, 5)]
    run_both(tmp_path, program, fluid.Scope(), feeds, ["out"])


def test_fill_constant_takes_its_shape_and_value_from_tensors(tmp_path):
    """A batch-sized zero state as paddle.nn.LSTM saves it (ShapeTensorList: constants
    and the batch size sliced from the input's shape), and a ShapeTensor with a
    ValueTensor."""
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="x", shape=(-1, 5), dtype="float32")
    block.create_var(name="v", shape=(1,), dtype="float32")
    for name, dtype in (("shape", "int32"), ("batch", "int32"), ("two", "int32"),
                        ("zeros", "float32"), ("filled", "float32")):
        block.create_var(name=name, dtype=dtype)
    block.append_op(type="shape", inputs={"Input": ["x"]}, outputs={"Out": ["shape"]})
    block.append_op(type="slice", inputs={"Input": ["shape"]}, outputs={"Out": ["batch"]},
                    attrs={"axes": [0], "starts": [0], "ends": [1], "decrease_axis": [0]})
    block.append_op(type="fill_constant", outputs={"Out": ["two"]},
                    attrs={"shape": [], "dtype": 2, "value": 2.0})
    block.append_op(type="fill_constant", inputs={"ShapeTensorList": ["two", "batch", "two"]},
                    outputs={"Out": ["zeros"]},
                    attrs={"shape": [2, -1, 2], "dtype": 5, "value": 0.5})
    block.append_op(type="fill_constant", inputs={"ShapeTensor": ["shape"],
                                                  "ValueTensor": ["v"]},
                    outputs={"Out": ["filled"]}, attrs={"shape": [-1, 5], "dtype": 5})
    feeds = [{"x": np.ones((b, 5), "float32"), "v": np.array([b / 4], "float32")}
             for b in (1, 3)]
    run_both(tmp_path, program, fluid.Scope(), feeds, ["zeros", "filled"])


@pytest.mark.parametrize("scale, bias, after", [(3.0, 2.0, True), (2.7, -1.9, False),
                                                (-2.0, 0.0, True)])
def test_scale_of_integers_truncates_scale_and_bias_as_the_kernel(scale, bias, after,
                                                                  tmp_path):
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="i", shape=(-1,), dtype="int64")
    block.create_var(name="out", dtype="int64")
    block.append_op(type="scale", inputs={"X": ["i"]}, outputs={"Out": ["out"]},
                    attrs={"scale": scale, "bias": bias, "bias_after_scale": after})
    run_both(tmp_path, program, fluid.Scope(), [{"i": np.arange(-3, 4, dtype="int64")}],
             ["out"])


def test_a_dynamic_rnn_whose_loop_condition_is_not_its_length_is_declined():
    """The Loop runs max(lengths) steps: a hand-written condition on anything else has no
    such trip count."""
    import json
    import pathlib
    folder = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "paddle" / \
        "onnx_models" / "dynamic_rnn_by_hand"
    scope = fluid.Scope()
    program, _, fetches = fluid.io.load_inference_model(
        str(folder / "model"), fluid.Executor(fluid.CPUPlace()), scope=scope)
    body = program.block(1)
    less_than = [op for op in body.ops if op.type == "less_than"][0]
    less_than.inputs["Y"] = less_than.inputs["X"]  # i < i: not the sequences' length
    report = fluid.onnx.export(program, None, scope=scope)
    assert json.loads((folder / "meta.json").read_text())["feed_names"] == report.inputs
    row = report.not_converted[0]
    assert row.op_type == "while" and "max_sequence_len" in row.note


@pytest.mark.parametrize("attrs, shape", [
    ({"porder": 2.0, "axis": 1}, (3, 4, 2)), ({"porder": 1.0, "axis": -1}, (3, 4)),
    ({"porder": float("inf"), "axis": 0}, (3, 4)), ({"porder": float("-inf"), "axis": 1},
                                                    (3, 4)),
    ({"porder": 0.0, "axis": 1, "keepdim": True}, (3, 4)),
    ({"porder": 3.0, "asvector": True}, (3, 4)),
    ({"porder": 2.0, "asvector": True, "keepdim": True}, (2, 3, 2)),
    ({"porder": 2.0, "axis": 0}, (5,))])
def test_p_norm_matches_the_executor(attrs, shape, tmp_path):
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="x", shape=shape, dtype="float32")
    block.create_var(name="out", dtype="float32")
    block.append_op(type="p_norm", inputs={"X": ["x"]}, outputs={"Out": ["out"]}, attrs=attrs)
    x = np.random.RandomState(1).randn(*shape).astype("float32")
    x.flat[::3] = 0.0  # zeros for the count of non-zeros
    run_both(tmp_path, program, fluid.Scope(), [{"x": x}], ["out"])
