"""An ONNX model read back as a Program for the views: every node an op of its ONNX type with
the schema's slot names, the initializers parameters, If/Loop bodies sub-blocks; the program
listing, the program model, ProgramView and `fluid-nb show`/`render` all take it."""
import io

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb import cli
from fluid_nb.errors import InvalidArgument

onnx = pytest.importorskip("onnx")


def _export(make, path, feed):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        fetch = make()
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    report = fluid.onnx.export(main.clone(for_test=True), path, feed=feed, fetch=fetch,
                               scope=scope)
    return report


def _lenet():
    image = fluid.layers.data(name="image", shape=[1, 28, 28], dtype="float32")
    conv = fluid.nets.simple_img_conv_pool(image, num_filters=4, filter_size=5, pool_size=2,
                                           pool_stride=2, act="relu")
    return [fluid.layers.fc(conv, size=10, act="softmax")]


def _loop():
    x = fluid.layers.data(name="x", shape=[3], dtype="float32")
    i = fluid.layers.fill_constant([1], "int64", 0)
    three = fluid.layers.fill_constant([1], "int64", 3)
    total = fluid.layers.assign(x)
    condition = fluid.layers.less_than(i, three)
    loop = fluid.layers.While(condition)
    with loop.block():
        fluid.layers.assign(fluid.layers.tanh(total), total)
        fluid.layers.increment(i, in_place=True)
        fluid.layers.less_than(i, three, cond=condition)
    return [total]


def test_every_node_is_an_op_with_the_schemas_slots(tmp_path):
    path = tmp_path / "lenet.onnx"
    _export(_lenet, path, ["image"])
    model = onnx.load(str(path))
    program = fluid.onnx.to_program(path)
    block = program.global_block()
    assert [op.type for op in block.ops] == [n.op_type for n in model.graph.node]
    conv = next(op for op in block.ops if op.type == "Conv")
    assert set(conv.inputs) == {"X", "W"} and conv.outputs == {"Y": (conv.output("Y")[0],)}
    assert conv.attrs["kernel_shape"] == [5, 5]
    for init in model.graph.initializer:  # parameters, with their shapes
        var = block.var(init.name)
        assert var.persistable and list(var.shape) == list(init.dims)
    assert block.var("image").shape == (-1, 1, 28, 28)  # the batch dim is symbolic
    from fluid_nb.viz import program_listing
    listing = program_listing(program)
    assert "= Conv(inputs={X=[image], W=[" in listing


def test_a_loop_body_is_a_sub_block_in_the_program_model(tmp_path):
    from fluid_nb.viz import program_model
    path = tmp_path / "loop.onnx"
    _export(_loop, path, ["x"])
    program = fluid.onnx.to_program(onnx.load(str(path)))
    assert len(program.blocks) == 2
    loop = next(op for op in program.global_block().ops if op.type == "Loop")
    assert loop.attrs["body"] == 1  # the block's index, as in a decoded ProgramDesc
    assert "Loop(inputs={" in str(program) and "block_idx:1" in str(program)
    body_types = [op.type for op in program.block(1).ops]
    assert "Tanh" in body_types and "Less" in body_types
    model = program_model(program, title="loop.onnx")
    assert len(model["blocks"]) == 2 and any(op["sub_blocks"] for op in model["ops"])
    from fluid_nb.widgets import ProgramView
    view = ProgramView(program, title="loop.onnx")
    assert view._model["stats"]["ops"] == len(model["ops"])


def test_a_node_of_another_domain_keeps_it_in_its_type(tmp_path):
    def make():
        words = fluid.layers.data(name="words", shape=[1], dtype="int64", lod_level=1)
        emb = fluid.layers.embedding(input=words, size=[10, 4])
        return [fluid.layers.sequence_reshape(input=emb, new_dim=8)]
    path = tmp_path / "partial.onnx"
    _export(make, path, ["words"])
    types = [op.type for op in fluid.onnx.to_program(path).global_block().ops]
    assert f"{fluid.onnx.DOMAIN}::sequence_reshape" in types


def test_what_is_not_an_onnx_model_is_refused_by_name(tmp_path):
    with pytest.raises(InvalidArgument, match="no file .*missing.onnx"):
        fluid.onnx.to_program(tmp_path / "missing.onnx")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\xff\xfe not protobuf \x00")
    with pytest.raises(InvalidArgument, match="bad.onnx.*do not decode"):
        fluid.onnx.to_program(bad)
    with pytest.raises(InvalidArgument, match="an ONNX file's path or an onnx.ModelProto"):
        fluid.onnx.to_program(42)


def test_the_command_line_shows_and_renders_an_onnx_model(tmp_path, capsys):
    path = tmp_path / "lenet.onnx"
    _export(_lenet, path, ["image"])
    out = io.StringIO()
    assert cli.main(["show", str(path)], out=out) == 0
    assert out.getvalue().startswith("{ // block_idx:0") and "= Softmax(" in out.getvalue()
    dot = tmp_path / "lenet.dot"
    assert cli.main(["render", str(path), "-o", str(dot)], out=io.StringIO()) == 0
    text = dot.read_text()
    assert text.startswith("digraph") and "Conv" in text and "MaxPool" in text
    np.testing.assert_equal(capsys.readouterr().err, "")
