"""Real Paddle 2.6 programs with LoD and control flow load here and give Paddle's outputs
and gradients (fixtures made by tools/paddle_fixtures/gen_control_flow.py)."""
import json
import pathlib

import numpy as np
import pytest

import fluid_nb as fluid

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "paddle" / "control_flow"


def run_fixture(name, feed_file="feed.npz", expected_file="expected.npz"):
    folder = FIXTURES / name
    meta = json.loads((folder / "meta.json").read_text())
    main = fluid.Program.parse_from_string((folder / "main.pdmodel").read_bytes())
    startup = fluid.Program.parse_from_string((folder / "startup.pdmodel").read_bytes())
    scope, exe = fluid.Scope(), fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    for pname, value in np.load(folder / "params.npz").items():
        scope.var(pname).get_tensor().set(value)
    feed = {}
    for fname, value in np.load(folder / feed_file).items():
        lod = meta.get("feed_lod", {}).get(fname)
        feed[fname] = (value, lod) if lod else value
    expected = dict(np.load(folder / expected_file).items())
    fetch = [n for n in meta["fetch_names"] if n in expected]
    got = exe.run(main, feed=feed, fetch_list=fetch, scope=scope, return_numpy=False)
    return meta, dict(zip(fetch, got)), expected


def _compare(meta, got, expected):
    for name, want in expected.items():
        if name not in got:
            continue
        value = got[name]
        np.testing.assert_allclose(np.asarray(value), want, rtol=2e-4, atol=1e-6, err_msg=name)
        lod = meta.get("fetch_lod", {}).get(name)
        if lod:
            assert value.lod() == lod, name


def test_lod_text_classifier_gives_paddles_outputs_and_gradients():
    meta, got, expected = run_fixture("text_classifier")
    assert "sequence_conv_grad" in meta["op_types"]["0"]
    _compare(meta, got, expected)


def test_while_loop_and_while_grad_give_paddles_outputs_and_gradients():
    meta, got, expected = run_fixture("while_grad")
    assert "while_grad" in meta["op_types"]["0"]
    _compare(meta, got, expected)


@pytest.mark.parametrize("branch", ["true", "false"])
def test_cond_with_select_input_gives_paddles_outputs_and_gradients(branch):
    meta, got, expected = run_fixture("cond_select", f"feed_{branch}.npz",
                                      f"expected_{branch}.npz")
    _compare(meta, got, expected)


def test_dynamic_rnn_from_raw_ops_gives_paddles_outputs_and_gradients():
    """The design documents' batch (lengths 10, 8, 5, 7) through Fluid's DynamicRNN
    machinery, forward and backward."""
    meta, got, expected = run_fixture("dynamic_rnn_raw")
    assert {"lod_rank_table", "shrink_rnn_memory", "while", "while_grad"} <= {
        t for types in meta["op_types"].values() for t in types}
    _compare(meta, got, expected)
