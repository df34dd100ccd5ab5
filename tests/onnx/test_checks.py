"""A model read from outside is checked at one point before it is drawn, and an export that
fails leaves the destination as it was. (The hostile corpus, tests/errors/
test_hostile_onnx.py, runs the many damaged inputs; these pin the concepts.)"""
import io
import os
import pathlib

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb import cli
from fluid_nb.errors import InvalidArgument, NotFound, ResourceExhausted, Unimplemented
from fluid_nb.rewriters.onnx import checks

onnx = pytest.importorskip("onnx")

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "paddle" / "inference"


def _mlp_model():
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    program, _, _ = cli.load_model_for_run(str(FIXTURES / "mlp" / "separate"), exe, scope)
    return fluid.onnx.export(program, None, scope=scope).model


@pytest.mark.parametrize("model", ["mlp", "linreg", "cnn"])
def test_exported_models_pass_the_checks_that_onnx_checker_passes(model):
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    program, _, _ = cli.load_model_for_run(str(FIXTURES / model / "separate"), exe, scope)
    exported = fluid.onnx.export(program, None, scope=scope).model
    onnx.checker.check_model(exported, full_check=True)
    checks.check_model(exported, "test")  # no refusal of what onnx itself accepts


def test_initializer_dims_are_checked_against_the_data_without_decoding_it():
    model = _mlp_model()
    weight = next(i for i in model.graph.initializer if len(i.dims) == 2)
    weight.dims[0] = 2 ** 40  # decoding would try to reshape 128 floats to 2**44
    with pytest.raises(InvalidArgument, match=rf"initializer '{weight.name}' raw_data "
                                              r"expected 70368744177664 bytes .* but "
                                              r"received 512 bytes"):
        fluid.onnx.to_program(model)


def test_an_element_type_fluid_nb_has_no_dtype_for_is_unimplemented_not_guessed():
    model = _mlp_model()
    model.graph.input[0].type.tensor_type.elem_type = onnx.TensorProto.UINT64
    with pytest.raises(Unimplemented, match="graph input 'x' element type expected one of "
                                            "FLOAT, .* but received UINT64"):
        fluid.onnx.to_program(model)


def test_a_cycle_is_named_by_the_node_that_reads_a_value_not_made_yet():
    model = _mlp_model()
    model.graph.node[0].input[0] = model.graph.node[-1].output[0]
    with pytest.raises(InvalidArgument, match=r"node 'mul_0' \(MatMul\) input .* expected a "
                                              r"graph input, an initializer or an earlier "
                                              r"node's output"):
        fluid.onnx.to_program(model)


def test_limits_are_resource_errors_that_name_the_limit(monkeypatch):
    model = _mlp_model()
    monkeypatch.setattr(checks, "MAX_ITEMS", 3)
    with pytest.raises(ResourceExhausted, match=r"graph initializer expected at most 3 "
                                                r"entries, but received 7"):
        fluid.onnx.to_program(model)


def test_external_data_is_only_looked_at_never_opened(tmp_path, monkeypatch):
    """A FIFO would block a reader forever: refusing it proves the file was not opened;
    a valid reference draws without the data being read."""
    model = _mlp_model()
    weight = next(i for i in model.graph.initializer if len(i.dims) == 2)
    data = weight.raw_data
    weight.ClearField("raw_data")
    weight.data_location = onnx.TensorProto.EXTERNAL
    entry = weight.external_data.add()
    entry.key, entry.value = "location", "w.bin"
    (tmp_path / "m.onnx").write_bytes(model.SerializeToString())
    os.mkfifo(tmp_path / "w.bin")
    with pytest.raises(InvalidArgument, match="external data location expected a regular "
                                              "file, but received 'w.bin'"):
        fluid.onnx.to_program(tmp_path / "m.onnx")
    os.unlink(tmp_path / "w.bin")
    (tmp_path / "w.bin").write_bytes(data)
    opened = []
    real_open = open
    monkeypatch.setattr("builtins.open", lambda f, *a, **k: (opened.append(str(f)),
                                                             real_open(f, *a, **k))[1])
    program = fluid.onnx.to_program(tmp_path / "m.onnx")
    assert list(program.global_block().var(weight.name).shape) == list(weight.dims)
    assert not any(name.endswith("w.bin") for name in opened)


def test_a_failed_export_leaves_the_existing_file_and_no_partial_one(tmp_path):
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    program, _, _ = cli.load_model_for_run(str(FIXTURES / "mlp" / "separate"), exe, scope)
    target = tmp_path / "m.onnx"
    target.write_bytes(b"before")
    scope.find_var("fc_0.w_0").get_tensor().set(np.zeros((2, 2), "float32"),
                                                fluid.CPUPlace())
    with pytest.raises(InvalidArgument, match=r"parameter 'fc_0.w_0' in the scope expected "
                                              r"shape \[8, 16\] of float32 \(as the program "
                                              r"declares\), but received shape \[2, 2\]"):
        fluid.onnx.export(program, target, scope=scope)
    assert sorted(os.listdir(tmp_path)) == ["m.onnx"] and target.read_bytes() == b"before"


def test_exporting_over_a_directory_is_one_line_on_the_command_line(tmp_path, capsys):
    (tmp_path / "out").mkdir()
    code = cli.main(["export", str(FIXTURES / "mlp" / "separate"), "-o",
                     str(tmp_path / "out")], out=io.StringIO())
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1
    assert "path expected a file to write" in err and "an existing directory" in err
    assert sorted(os.listdir(tmp_path)) == ["out"] and not os.listdir(tmp_path / "out")


def test_an_export_into_a_missing_folder_is_not_found(tmp_path):
    with pytest.raises(NotFound, match="whose folder .* does not exist"):
        fluid.onnx.export(fluid.Program(), tmp_path / "nowhere" / "m.onnx")
