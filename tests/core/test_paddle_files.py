"""Programs and parameters saved by real PaddlePaddle 2.6 load, run and give Paddle's
outputs; saving them again here gives files that load back identically."""
import json
import pathlib

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.proto import framework_pb2 as pb

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "paddle"
MODELS = ["mlp", "linreg", "cnn"]


def _meta(model):
    return json.loads((FIXTURES / "inference" / model / "meta.json").read_text())


def _run(program, feeds, fetches, scope, x):
    exe = fluid.Executor(fluid.CPUPlace())
    return exe.run(program, feed={feeds[0]: x}, fetch_list=fetches, scope=scope)[0]


@pytest.mark.parametrize("model", MODELS)
def test_combined_pdmodel_gives_paddles_output(model):
    folder = FIXTURES / "inference" / model
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    program, feeds, fetches = fluid.io.load_inference_model(
        str(folder / "combined"), exe, model_filename="model.pdmodel",
        params_filename="model.pdiparams", scope=scope)
    assert feeds == _meta(model)["feed_names"]
    assert [v.name for v in fetches] == _meta(model)["fetch_names"]
    out = _run(program, feeds, fetches, scope, np.load(folder / "input.npy"))
    np.testing.assert_allclose(out, np.load(folder / "expected.npy"), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("model", MODELS)
def test_paddle2_path_prefix_loads(model):
    folder = FIXTURES / "inference" / model
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    program, feeds, fetches = fluid.io.load_inference_model(
        str(folder / "combined" / "model"), exe, scope=scope)
    out = _run(program, feeds, fetches, scope, np.load(folder / "input.npy"))
    np.testing.assert_allclose(out, np.load(folder / "expected.npy"), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("model", MODELS)
def test_separate_files_give_paddles_output(model):
    folder = FIXTURES / "inference" / model
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    program, feeds, fetches = fluid.io.load_inference_model(str(folder / "separate"), exe,
                                                            scope=scope)
    out = _run(program, feeds, fetches, scope, np.load(folder / "input.npy"))
    np.testing.assert_allclose(out, np.load(folder / "expected.npy"), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("layout", ["separate", "combined"])
def test_resaved_model_loads_back_identically(model, layout, tmp_path):
    folder = FIXTURES / "inference" / model
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    program, feeds, fetches = fluid.io.load_inference_model(str(folder / "separate"), exe,
                                                            scope=scope)
    params = "__params__" if layout == "combined" else None
    with fluid.scope_guard(scope):
        fluid.io.save_inference_model(str(tmp_path), feeds, fetches, exe, main_program=program,
                                      params_filename=params)
    scope2 = fluid.Scope()
    again, feeds2, fetches2 = fluid.io.load_inference_model(str(tmp_path), exe,
                                                            params_filename=params, scope=scope2)
    assert feeds2 == feeds and [v.name for v in fetches2] == [v.name for v in fetches]
    assert [op.type for op in again.global_block().ops] == \
        [op.type for op in program.global_block().ops]
    for var in program.list_vars():
        if fluid.io.is_persistable(var):
            np.testing.assert_array_equal(np.asarray(scope2.find_var(var.name).value),
                                          np.asarray(scope.find_var(var.name).value))
    x = np.load(folder / "input.npy")
    np.testing.assert_allclose(_run(again, feeds2, fetches2, scope2, x),
                               np.load(folder / "expected.npy"), rtol=1e-5, atol=1e-6)


def test_parameter_files_match_paddles_bytes(tmp_path):
    """A parameter written here is byte-for-byte the file Paddle wrote."""
    folder = FIXTURES / "inference" / "mlp" / "separate"
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    program, _, _ = fluid.io.load_inference_model(str(folder), exe, scope=scope)
    with fluid.scope_guard(scope):
        fluid.io.save_persistables(exe, str(tmp_path), program)
    for name in ["fc_0.w_0", "fc_2.b_0"]:
        assert (tmp_path / name).read_bytes() == (folder / name).read_bytes()
    combined = FIXTURES / "inference" / "mlp" / "combined" / "model.pdiparams"
    with fluid.scope_guard(scope):
        fluid.io.save_persistables(exe, str(tmp_path), program, filename="all.pdiparams")
    assert (tmp_path / "all.pdiparams").read_bytes() == combined.read_bytes()


PROGRAM_FILES = sorted(FIXTURES.glob("programs/*.pb")) + sorted(FIXTURES.glob("**/*.pdmodel")) \
    + sorted(FIXTURES.glob("**/__model__"))


@pytest.mark.parametrize("path", PROGRAM_FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_program_bytes_round_trip(path):
    data = path.read_bytes()
    program = fluid.Program.parse_from_string(data)
    again = program.serialize_to_string()
    assert pb.ProgramDesc.FromString(again) == pb.ProgramDesc.FromString(data)
    assert again == data


@pytest.mark.parametrize("path", PROGRAM_FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_clone_of_a_loaded_program_serializes_identically(path):
    data = path.read_bytes()
    assert fluid.Program.parse_from_string(data).clone().serialize_to_string() == data


def test_loaded_training_program_keeps_parameters_and_optimizer_state():
    meta = json.loads((FIXTURES / "training" / "mlp_adam" / "meta.json").read_text())
    program = fluid.Program.parse_from_string(
        (FIXTURES / "training" / "mlp_adam" / "main.pdmodel").read_bytes())
    names = {v.name for v in program.list_vars() if v.persistable}
    assert {v["name"] for v in meta["persistable_vars"]} <= names
    params = {v.name for v in program.all_parameters()}
    assert params == {p["name"] for p in meta["params"]}


def test_an_inference_model_of_a_parameter_leaves_out_the_optimizer_that_updates_it(tmp_path):
    """A target reading a parameter (a CRF decoder reads the transition matrix the optimizer
    updates) keeps the parameter's value, not the training ops that would write it: as in
    Paddle's pruning, an optimizer op stays only when it makes a target itself."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[3], dtype="float32")
        label = fluid.layers.data(name="label", shape=[1], dtype="float32")
        hidden = fluid.layers.fc(input=x, size=2, param_attr=fluid.ParamAttr(name="w"))
        loss = fluid.layers.mean(fluid.layers.square_error_cost(
            input=fluid.layers.reduce_sum(hidden, dim=1, keep_dim=True), label=label))
        fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
        weight = main.global_block().var("w")
        scaled = fluid.layers.scale(fluid.layers.matmul(x, weight), 2.0)  # reads w after sgd
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    with fluid.scope_guard(scope):
        fluid.io.save_inference_model(str(tmp_path), ["x"], [scaled], exe, main_program=main)
        program, feeds, fetches = fluid.io.load_inference_model(str(tmp_path), exe)
        assert [op.type for op in program.global_block().ops
                if op.type not in ("feed", "fetch")] == ["matmul", "scale", "scale"]
        (out,) = exe.run(program, feed={"x": np.ones((2, 3), "float32")}, fetch_list=fetches)
    w = np.asarray(scope.find_var("w").value)
    # (float32 sums: the weights are random, and a sum near zero loses relative digits)
    np.testing.assert_allclose(out, 2 * np.ones((2, 3)) @ w, rtol=1e-5, atol=1e-6)
