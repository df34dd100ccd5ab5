"""ONNX export: the models export, pass onnx's checker with full checks, and onnxruntime
gives the executor's numbers on the same feeds (float32 within 1e-5 relative); what cannot
be exported is reported op by op with the reason."""
import json
import pathlib
import re

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.cli import load_model_for_run, main as cli
from fluid_nb.errors import InvalidArgument

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "paddle" / "inference"


def run_onnx(path, feed):
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, feed)


def check_model(path):
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)


def assert_same(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("model", ["mlp", "linreg", "cnn"])
def test_paddles_own_models_export_and_run_in_onnxruntime(model, tmp_path):
    meta = json.loads((FIXTURES / model / "meta.json").read_text())
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    program, feeds, fetches = load_model_for_run(str(FIXTURES / model / "separate"), exe, scope)
    report = fluid.onnx.export(program, tmp_path / "m.onnx", scope=scope)
    assert report.complete and report.inputs == meta["feed_names"], str(report)
    check_model(tmp_path / "m.onnx")
    x = np.load(FIXTURES / model / "input.npy")
    got, = run_onnx(tmp_path / "m.onnx", {feeds[0]: x})
    assert_same(got, np.load(FIXTURES / model / "expected.npy"))
    # the batch dimension is symbolic: another batch size runs too
    more = np.concatenate([x, x])
    got, = run_onnx(tmp_path / "m.onnx", {feeds[0]: more})
    want, = exe.run(program, feed={feeds[0]: more}, fetch_list=fetches, scope=scope)
    assert_same(got, want)


def _books_models():
    def fit_a_line():
        x = fluid.layers.data(name="x", shape=[13], dtype="float32")
        return {"x": (5, 13)}, fluid.layers.fc(input=x, size=1)

    def digits(kind):
        def build():
            img = fluid.layers.data(name="img", shape=[1, 28, 28], dtype="float32")
            if kind == "mlp":
                h = fluid.layers.fc(input=img, size=200, act="tanh")
                h = fluid.layers.fc(input=h, size=200, act="tanh")
            else:
                h = fluid.nets.simple_img_conv_pool(input=img, filter_size=5, num_filters=20,
                                                    pool_size=2, pool_stride=2, act="relu")
                h = fluid.layers.batch_norm(h)
                h = fluid.nets.simple_img_conv_pool(input=h, filter_size=5, num_filters=50,
                                                    pool_size=2, pool_stride=2, act="relu")
            return {"img": (4, 1, 28, 28)}, fluid.layers.fc(input=h, size=10, act="softmax")
        return build

    def vgg_block():
        img = fluid.layers.data(name="img", shape=[3, 16, 16], dtype="float32")
        conv = fluid.nets.img_conv_group(input=img, pool_size=2, pool_stride=2,
                                         conv_num_filter=[8, 8], conv_filter_size=3,
                                         conv_act="relu", conv_with_batchnorm=True,
                                         conv_batchnorm_drop_rate=[0.3, 0.0], pool_type="max")
        drop = fluid.layers.dropout(x=conv, dropout_prob=0.5)
        fc = fluid.layers.fc(input=drop, size=16)
        bn = fluid.layers.batch_norm(input=fc, act="relu")
        pool = fluid.layers.pool2d(input=conv, pool_size=8, pool_type="avg", global_pooling=True)
        both = fluid.layers.concat([bn, fluid.layers.flatten(pool)], axis=1)
        return {"img": (2, 3, 16, 16)}, fluid.layers.fc(input=both, size=10, act="softmax")

    return {"fit_a_line": fit_a_line, "digits_mlp": digits("mlp"),
            "digits_conv": digits("conv"), "image_classification_vgg_block": vgg_block}


@pytest.mark.parametrize("name", sorted(_books_models()))
def test_the_books_inference_models_export_and_match_the_executor(name, tmp_path):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        shapes, prediction = _books_models()[name]()
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    with fluid.scope_guard(scope):  # a saved and reloaded inference model, as users ship it
        fluid.io.save_inference_model(str(tmp_path / "model"), list(shapes), [prediction], exe,
                                      main_program=main)
        program, feeds, fetches = fluid.io.load_inference_model(str(tmp_path / "model"), exe)
    report = fluid.onnx.export(program, tmp_path / "m.onnx", scope=scope)
    assert report.complete, str(report)
    check_model(tmp_path / "m.onnx")
    rng = np.random.RandomState(0)
    feed = {n: rng.rand(*shape).astype("float32") for n, shape in shapes.items()}
    want, = exe.run(program, feed=feed, fetch_list=fetches, scope=scope)
    got, = run_onnx(tmp_path / "m.onnx", feed)
    assert_same(got, want)
    names = {node.name for node in onnx.load(str(tmp_path / "m.onnx")).graph.node}
    assert any(n.startswith("conv2d_") or n.startswith("mul_") for n in names)


def _lod_program():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        words = fluid.layers.data(name="words", shape=[1], dtype="int64", lod_level=1)
        emb = fluid.layers.embedding(input=words, size=[20, 4])
        # two steps' rows become one: a LoD the padded convention does not cover
        reshaped = fluid.layers.sequence_reshape(input=emb, new_dim=8)
        pooled = fluid.layers.sequence_pool(reshaped, pool_type="sum")
        out = fluid.layers.fc(input=pooled, size=2, act="softmax")
    return main, startup, out


def test_what_cannot_be_exported_is_reported_op_by_op(tmp_path):
    main, startup, out = _lod_program()
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    report = fluid.onnx.export(main, tmp_path / "m.onnx", feed=["words"], fetch=[out],
                               scope=scope)
    statuses = {row.op_type: row.status for row in report.rows}
    assert statuses["lookup_table"] == "converted" and statuses["softmax"] == "converted"
    assert statuses["sequence_pool"] == "converted"  # by the padded convention
    assert statuses["sequence_reshape"] == "not converted"
    row, = report.not_converted
    assert row.note.startswith("no converter for this op type")
    assert f"{row.index:>4}  sequence_reshape" in str(report)
    assert str(report).endswith(f"{len(report.rows) - 1} of {len(report.rows)} ops converted "
                                f"(opset 17); written to {tmp_path / 'm.onnx'}")
    # written, the unconverted op a node of fluid_nb's own domain
    model = onnx.load(str(tmp_path / "m.onnx"))
    assert [n.domain for n in model.graph.node if n.op_type == "sequence_reshape"] == \
        [fluid.onnx.DOMAIN]
    # strict: nothing written
    strict = fluid.onnx.export(main, tmp_path / "strict.onnx", feed=["words"], fetch=[out],
                               scope=scope, strict=True)
    assert strict.path is None and not (tmp_path / "strict.onnx").exists()


def test_bad_arguments_are_named(tmp_path):
    main, startup, out = _lod_program()
    with pytest.raises(InvalidArgument, match="opset expected an int in \\[13, "):
        fluid.onnx.export(main, tmp_path / "m.onnx", fetch=[out], opset=9)
    with pytest.raises(InvalidArgument, match="onnx.export: program expected a Program"):
        fluid.onnx.export("main", tmp_path / "m.onnx")
    with pytest.raises(fluid.errors.NotFound, match="'nothing'"):
        fluid.onnx.export(main, tmp_path / "m.onnx", fetch=["nothing"])


def test_the_command_line_exports_and_prints_the_report(tmp_path, capsys):
    assert cli(["export", str(FIXTURES / "cnn" / "separate"), "-o", str(tmp_path / "c.onnx")]) \
        == 0
    printed = capsys.readouterr().out
    assert re.search(r"\n +0 +conv2d +converted\n", printed)
    assert f"9 of 9 ops converted (opset 17); written to {tmp_path / 'c.onnx'}" in printed
    check_model(tmp_path / "c.onnx")


@pytest.mark.parametrize("net", ["resnet", "vgg"])
def test_the_books_image_classification_models_export_and_match(net, tmp_path):
    from tests.native.test_native_programs import image_classification_inference
    program, scope, feed, fetches = image_classification_inference(net)
    report = fluid.onnx.export(program, tmp_path / "m.onnx", scope=scope)
    assert report.complete, str(report)
    check_model(tmp_path / "m.onnx")
    want, = fluid.Executor(fluid.CPUPlace()).run(program, feed=feed, fetch_list=fetches,
                                                 scope=scope)
    got, = run_onnx(tmp_path / "m.onnx", feed)
    assert_same(got, want)


def test_without_the_onnx_package_the_error_says_how_to_get_it(monkeypatch, tmp_path):
    monkeypatch.setitem(__import__("sys").modules, "onnx", None)  # import onnx now fails
    with pytest.raises(fluid.errors.PreconditionNotMet,
                       match=r"the onnx package expected installed \(pip install onnx\), "
                             r"but received it is not installed"):
        fluid.onnx.export(fluid.Program(), tmp_path / "m.onnx", fetch=[])
    assert not (tmp_path / "m.onnx").exists()


@pytest.mark.parametrize("opset", [13, 17, 18, 20])
def test_the_same_program_exports_to_each_opset_it_asks_for(opset, tmp_path):
    """Reductions take their axes as an attribute before opset 18 and as an input from it;
    an operator the opset lacks (LayerNormalization before 17) is reported, not written."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[4, 5], dtype="float32")
        hidden = fluid.layers.fc(x, size=6, num_flatten_dims=2, act="tanh")
        pooled = fluid.layers.reduce_max(hidden, dim=1) + fluid.layers.reduce_mean(hidden, dim=1)
        normed = fluid.layers.layer_norm(hidden, begin_norm_axis=2)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    feed = {"x": np.random.RandomState(0).randn(3, 4, 5).astype("float32")}
    report = fluid.onnx.export(main, tmp_path / "m.onnx", feed=["x"], fetch=[pooled],
                               scope=scope, opset=opset, strict=True)
    assert report.complete
    model = onnx.load(str(tmp_path / "m.onnx"))
    assert {o.domain: o.version for o in model.opset_import}[""] == opset
    onnx.checker.check_model(model, full_check=True)
    got, = ort.InferenceSession(str(tmp_path / "m.onnx"),
                                providers=["CPUExecutionProvider"]).run(None, feed)
    want, = exe.run(main, feed=feed, fetch_list=[pooled], scope=scope)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    norm_report = fluid.onnx.export(main, None, feed=["x"], fetch=[normed], scope=scope,
                                    opset=opset)
    row = next(r for r in norm_report.rows if r.op_type == "layer_norm")
    if opset < 17:
        assert row.status == "not converted" and f"not in opset {opset}" in row.note
    else:
        assert row.status == "converted"
