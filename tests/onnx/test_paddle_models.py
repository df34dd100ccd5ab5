"""Real Paddle 2.6 inference models (``paddle.jit.save`` and
``paddle.static.save_inference_model``, see tools/paddle_fixtures/gen_onnx_models.py) load,
run here with Paddle's outputs, and export to ONNX models that give Paddle's outputs in
onnxruntime: MLP, CNNs with batch_norm and paddle.flatten, a MobileNetV3-style block, the
rnn op (LSTM, GRU, SimpleRNN; two layers, bidirectional, sequence lengths; after an
embedding), a Transformer encoder layer, while_loop, cond, DynamicRNNs over a LoD input
(the Fluid 1.x structure and one written by hand) and an embedding + sequence_conv model.

A LoD input goes in by the padded convention ([batch, time, ...] and its lengths), and a
LoD output comes back padded with its lengths; both are compared as Paddle's rows.

Tolerances: float32 throughout. The executor and onnxruntime run Paddle's float32
formulas in other summation orders and kernels (NumPy's BLAS, fused LSTM/GRU gates, erf in
gelu, a layer_norm's variance), and the recurrent models carry each step's rounding into
the next, so results differ from Paddle's by a few units in the last place of values of
order 1 (measured: at most 5.4e-7 absolute, in the attention block; 2.4e-7 elsewhere):
rtol 1e-5, with atol 1e-6 for outputs near zero (softmax tails, the padding)."""
import json
import pathlib

import numpy as np
import pytest

import fluid_nb as fluid

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "paddle" / \
    "onnx_models"
MODELS = sorted(p.name for p in FIXTURES.iterdir() if (p / "meta.json").is_file())
RTOL, ATOL = 1e-5, 1e-6


def _lod(folder, stem):
    path = folder / f"{stem}.lod.json"
    return json.loads(path.read_text()) if path.is_file() else None


def _lengths(offsets):
    return [b - a for a, b in zip(offsets, offsets[1:])]


def fixture(name):
    """(folder, meta, feeds [(array, offset LoD or None)], fetches [(array, LoD)])."""
    folder = FIXTURES / name
    meta = json.loads((folder / "meta.json").read_text())
    feeds = [(np.load(folder / f"feed_{k}.npy"), _lod(folder, f"feed_{k}"))
             for k in range(len(meta["feed_names"]))]
    fetches = [(np.load(folder / f"fetch_{k}.npy"), _lod(folder, f"fetch_{k}"))
               for k in range(len(meta["fetch_names"]))]
    return folder, meta, feeds, fetches


def load(folder):
    scope = fluid.Scope()
    program, feed_names, fetch_vars = fluid.io.load_inference_model(
        str(folder / "model"), fluid.Executor(fluid.CPUPlace()), scope=scope)
    return program, feed_names, [v.name for v in fetch_vars], scope


def padded(rows, lengths):
    """LoD rows [sum(lengths), ...] as [batch, max length, ...], zeros after each end."""
    out = np.zeros((len(lengths), max(lengths)) + rows.shape[1:], rows.dtype)
    start = 0
    for b, n in enumerate(lengths):
        out[b, :n] = rows[start:start + n]
        start += n
    return out


def unpadded(batch, lengths):
    return np.concatenate([batch[b, :n] for b, n in enumerate(lengths)])


@pytest.mark.parametrize("name", MODELS)
def test_the_executor_gives_paddles_outputs(name):
    folder, meta, feeds, fetches = fixture(name)
    program, feed_names, fetch_names, scope = load(folder)
    assert (feed_names, fetch_names) == (meta["feed_names"], meta["fetch_names"])
    place = fluid.CPUPlace()
    feed = {n: fluid.create_lod_tensor(a, [_lengths(lod[0])], place) if lod else a
            for n, (a, lod) in zip(feed_names, feeds)}
    got = fluid.Executor(place).run(program, feed=feed, fetch_list=fetch_names, scope=scope,
                                    return_numpy=False)
    for fetch_name, tensor, (want, lod) in zip(fetch_names, got, fetches):
        if lod:
            assert [list(level) for level in tensor.recursive_sequence_lengths()] == \
                [_lengths(level) for level in lod], fetch_name
        np.testing.assert_allclose(np.array(tensor), want, rtol=RTOL, atol=ATOL,
                                   err_msg=fetch_name)


@pytest.mark.parametrize("name", MODELS)
def test_the_onnx_export_gives_paddles_outputs(name, tmp_path):
    folder, meta, feeds, fetches = fixture(name)
    program, feed_names, fetch_names, scope = load(folder)
    path = tmp_path / f"{name}.onnx"
    report = fluid.onnx.export(program, path, scope=scope, strict=True)
    assert report.complete, str(report)
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    inputs = {}
    for n, (array, lod) in zip(feed_names, feeds):
        if lod:
            lengths = _lengths(lod[0])
            inputs[n] = padded(array, lengths)
            inputs[f"{n}_lengths"] = np.array(lengths, "int64")
        else:
            inputs[n] = array
    assert sorted(i.name for i in session.get_inputs()) == sorted(inputs)
    outputs = [o.name for o in session.get_outputs()]
    got = dict(zip(outputs, session.run(None, inputs)))
    for fetch_name, (want, lod) in zip(fetch_names, fetches):
        value = got[fetch_name]
        if lod:  # the padded value's lengths are the output after it
            lengths = got[outputs[outputs.index(fetch_name) + 1]]
            assert list(lengths) == _lengths(lod[0]), fetch_name
            value = unpadded(value, lengths)
        assert value.dtype == want.dtype and value.shape == want.shape, fetch_name
        np.testing.assert_allclose(value, want, rtol=RTOL, atol=ATOL, err_msg=fetch_name)


def _variant(program, feed_names, feeds, k):
    """Inputs other than the fixture's for the same model: another batch size where the
    program declares it unknown, other sequence lengths for a LoD input, another loop bound
    (an int64 [1] input), the other branch's sign (a float [1] input), other valid lengths
    for a lengths input (int64 [batch]), other word ids (int64 [batch, ...])."""
    rs = np.random.RandomState(100 + k)
    batch, lod_lengths = [1, 5, 2][k], [[3, 1, 5, 2], [1], [7, 2]][k]
    block = program.global_block()
    out = []
    for name, (array, lod) in zip(feed_names, feeds):
        declared = list(block.var(name).shape)
        if lod:
            shape = (sum(lod_lengths),) + array.shape[1:]
            value = rs.randint(0, 20, shape) if array.dtype.kind in "iu" else \
                rs.uniform(-1, 1, shape)
            out.append((value.astype(array.dtype), [np.cumsum([0] + lod_lengths).tolist()]))
        elif declared == [1]:
            value = [0, 1, 7][k] if array.dtype.kind in "iu" else [-1.5, 1.5, 0.5][k]
            out.append((np.array([value], array.dtype), None))
        elif array.dtype.kind in "iu" and len(declared) == 1:  # a padded batch's lengths
            out.append((rs.randint(1, 6, batch).astype(array.dtype), None))
        else:  # a batch of floats, or of ids (every model's vocabulary has 20 words)
            shape = [batch if d < 0 else d for d in declared]
            value = rs.randint(0, 20, shape) if array.dtype.kind in "iu" else \
                rs.uniform(-1, 1, shape)
            out.append((value.astype(array.dtype), None))
    return out


@pytest.mark.parametrize("name", MODELS)
def test_the_onnx_model_follows_the_executor_on_other_inputs(name, tmp_path):
    """The exported model is checked against the executor (the op's living definition) on
    batch sizes, sequence lengths, loop bounds and branches the fixture does not have."""
    folder, meta, feeds, _ = fixture(name)
    program, feed_names, fetch_names, scope = load(folder)
    path = tmp_path / f"{name}.onnx"
    assert fluid.onnx.export(program, path, scope=scope, strict=True).complete
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    outputs = [o.name for o in session.get_outputs()]
    place = fluid.CPUPlace()
    for k in range(3):
        variant = _variant(program, feed_names, feeds, k)
        want = fluid.Executor(place).run(
            program, feed={n: fluid.create_lod_tensor(a, [_lengths(lod[0])], place) if lod
                           else a for n, (a, lod) in zip(feed_names, variant)},
            fetch_list=fetch_names, scope=scope, return_numpy=False)
        inputs = {}
        for n, (array, lod) in zip(feed_names, variant):
            inputs[n] = padded(array, _lengths(lod[0])) if lod else array
            if lod:
                inputs[f"{n}_lengths"] = np.array(_lengths(lod[0]), "int64")
        got = dict(zip(outputs, session.run(None, inputs)))
        for fetch_name, tensor in zip(fetch_names, want):
            value = got[fetch_name]
            if tensor.lod():
                value = unpadded(value, got[outputs[outputs.index(fetch_name) + 1]])
            np.testing.assert_allclose(value, np.array(tensor), rtol=RTOL, atol=ATOL,
                                       err_msg=f"{fetch_name}, inputs {k}")
