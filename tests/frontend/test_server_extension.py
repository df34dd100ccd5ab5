"""The Jupyter server extension, against a real ``jupyter server`` on 127.0.0.1: program files
decode to program models, parameter files to their tables of tensors; corrupt files, paths
outside the root and anonymous requests are refused; the viewer bundle is served to
logged-in users."""
import http.client
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "paddle"
FIT_A_LINE = FIXTURES / "training" / "fit_a_line_sgd" / "main.pdmodel"
DYNAMIC_RNN = FIXTURES / "control_flow" / "dynamic_rnn_raw" / "main.pdmodel"
MLP_COMBINED = FIXTURES / "inference" / "mlp" / "combined"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A running server: ``get(path, token=True)`` -> (status, headers, body bytes)."""

    def __init__(self, port, token, root):
        self.port, self.token, self.root = port, token, root

    def get(self, url_path, token=True):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        headers = {"Authorization": f"token {self.token}"} if token else {}
        conn.request("GET", url_path, headers=headers)
        response = conn.getresponse()
        body = response.read()
        conn.close()
        return response.status, dict(response.getheaders()), body

    def program(self, path, token=True):
        query = urllib.parse.urlencode({"path": path})
        status, _, body = self.get(f"/fluid-nb/api/program?{query}", token)
        return status, json.loads(body) if body else None

    def params(self, path, token=True):
        query = urllib.parse.urlencode({"path": path})
        status, _, body = self.get(f"/fluid-nb/api/params?{query}", token)
        return status, json.loads(body) if body else None


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("server")
    root = tmp / "root"
    (root / "models" / "rnn").mkdir(parents=True)
    shutil.copy(FIT_A_LINE, root / "models" / "fit_a_line.pdmodel")
    shutil.copy(DYNAMIC_RNN, root / "models" / "rnn" / "__model__")
    (root / "models" / "corrupt.pdmodel").write_bytes(b"\x0a\xff\xff\x07not a program")
    (root / "params").mkdir()
    for name in ("model.pdmodel", "model.pdiparams"):
        shutil.copy(MLP_COMBINED / name, root / "params" / name)
    shutil.copy(MLP_COMBINED / "model.pdiparams", root / "params" / "alone.pdiparams")
    (root / "params" / "truncated.pdiparams").write_bytes(
        (MLP_COMBINED / "model.pdiparams").read_bytes()[:-7])
    (root / "params" / "text.pdiparams").write_text("not a tensor at all\n")
    _save_params_folder(root / "saved_params")
    _export_onnx(root / "models" / "mlp.onnx")
    outside = tmp / "outside.pdmodel"
    shutil.copy(FIT_A_LINE, outside)
    (root / "models" / "link.pdmodel").symlink_to(outside)
    config = tmp / "config"
    config.mkdir()
    # enabled here too, so the test does not depend on where the package's config was installed
    (config / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": {"fluid_nb": True}}}))
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(config), JUPYTER_RUNTIME_DIR=str(tmp / "rt"),
               JUPYTER_DATA_DIR=str(tmp / "data"))
    log = open(tmp / "server.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyter_server", "--no-browser", "--allow-root",
         "--ip=127.0.0.1", f"--port={port}", "--ServerApp.port_retries=0",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}"],
        env=env, stdout=log, stderr=subprocess.STDOUT)
    running = Server(port, token, root)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if running.get("/api/status")[0] == 200:
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("jupyter server did not start:\n"
                                   + (tmp / "server.log").read_text(errors="replace"))
            time.sleep(0.3)
        yield running
    finally:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("POST", "/api/shutdown", headers={"Authorization": f"token {token}"})
            conn.getresponse().read()
        except OSError:
            pass
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.terminate()
            proc.wait(10)
        log.close()


def test_program_file_decodes_to_its_program_model(server):
    status, model = server.program("models/fit_a_line.pdmodel")
    assert status == 200, model
    assert model["format"] == "fluid-nb.program"
    types = {op["type"] for op in model["ops"]}
    assert {"mul", "elementwise_add", "sgd"} <= types
    assert model["stats"]["ops"] == len(model["ops"]) > 0


def test_file_named_model_with_sub_blocks_decodes(server):
    status, model = server.program("models/rnn/__model__")
    assert status == 200, model
    assert len(model["blocks"]) > 1
    assert any(op["sub_blocks"] for op in model["ops"])


def _export_onnx(path):
    """A small MLP exported to ONNX (the test tools include onnx)."""
    import fluid_nb as fluid
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[8], dtype="float32")
        out = fluid.layers.fc(fluid.layers.fc(x, size=6, act="relu"), size=3, act="softmax")
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    fluid.onnx.export(main, path, feed=["x"], fetch=[out], scope=scope, strict=True)


def test_an_onnx_model_decodes_to_the_program_model_of_its_graph(server):
    status, model = server.program("models/mlp.onnx")
    assert status == 200, model
    assert model["title"] == "mlp.onnx"
    types = [op["type"] for op in model["ops"]]
    assert types.count("MatMul") == 2 and "Softmax" in types and "Relu" in types


def test_corrupt_program_file_is_a_400_with_the_decoder_message(server):
    status, reply = server.program("models/corrupt.pdmodel")
    assert status == 400
    assert "ProgramDesc" in reply["message"] and "corrupt.pdmodel" in reply["message"]


@pytest.mark.parametrize("path", ["../outside.pdmodel", "models/../../outside.pdmodel",
                                  "/etc/passwd", "models/link.pdmodel"])
def test_paths_leaving_the_server_root_are_forbidden(server, path):
    status, reply = server.program(path)
    assert status == 403, reply
    assert "server root" in reply["message"]


def test_missing_program_file_is_a_404(server):
    assert server.program("models/none.pdmodel")[0] == 404


def test_program_api_needs_a_logged_in_user(server):
    status, _, body = server.get("/fluid-nb/api/program?path=models/fit_a_line.pdmodel",
                                 token=False)
    assert status == 403
    assert b"mul" not in body


def test_viewer_bundle_is_served_to_logged_in_users_only(server):
    status, headers, body = server.get("/fluid-nb/static/viewer.js")
    assert status == 200
    assert "javascript" in headers.get("Content-Type", "")
    assert b"fluidNbViewer" in body and len(body) > 1_000_000
    anonymous = server.get("/fluid-nb/static/viewer.js", token=False)
    assert anonymous[0] in (302, 403) and b"fluidNbViewer" not in anonymous[2]


def test_static_route_does_not_serve_files_outside_its_folder(server):
    status, _, body = server.get("/fluid-nb/static/..%2F__init__.py")
    assert status in (403, 404)
    assert b"_jupyter_server_extension_points" not in body


# --- parameter files ---------------------------------------------------------------------------
def test_parameter_file_decodes_to_its_table_of_tensors(server):
    from fluid_nb.viz.params_table import params_model
    status, model = server.params("params/model.pdiparams")
    assert status == 200, model
    assert model["format"] == "fluid-nb.params" and model["title"] == "model.pdiparams"
    assert model["names_from"] == "model.pdmodel"  # the program beside it names the records
    names = [row["name"] for row in model["rows"]]
    assert names == ["fc_0.b_0", "fc_0.w_0", "fc_1.b_0", "fc_1.w_0", "fc_2.b_0", "fc_2.w_0"]
    weight = model["rows"][1]
    assert weight["dtype"] == "float32" and weight["shape"] == [8, 16]
    assert len(weight["histogram"]) == model["bins"] and sum(weight["histogram"]) == 8 * 16
    assert weight["min"] <= weight["mean"] <= weight["max"]
    assert model == json.loads(json.dumps(
        params_model(server.root / "params" / "model.pdiparams")))  # what the CLI prints from


def test_parameter_file_alone_numbers_its_tensors(server):
    status, model = server.params("params/alone.pdiparams")
    assert status == 200 and model["names_from"] is None
    assert [row["name"] for row in model["rows"]] == [f"#{i}" for i in range(6)]


@pytest.mark.parametrize("name", ["truncated.pdiparams", "text.pdiparams"])
def test_damaged_parameter_file_is_a_400_naming_it(server, name):
    status, reply = server.params(f"params/{name}")
    assert status == 400, reply
    assert name in reply["message"] and "Traceback" not in reply["message"]


def _save_params_folder(folder):
    """Fluid 1.x's ``save_params``: one file per parameter, no program file."""
    import fluid_nb as fluid
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        fluid.layers.fc(fluid.data(name="x", shape=[-1, 4], dtype="float32"), 3)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    with fluid.scope_guard(scope):
        fluid.io.save_params(exe, str(folder), main)


def test_params_api_reads_a_folder_of_parameter_files_as_one_table(server):
    from fluid_nb.viz.params_table import params_model
    status, model = server.params("saved_params")
    assert status == 200 and model["kind"] == "directory"
    names = [row["name"] for row in model["rows"]]
    assert len(names) == 2 and names[0].endswith(".b_0") and names[1].endswith(".w_0")
    assert model["rows"] == params_model(server.root / "saved_params")["rows"]
    # a folder that is not parameters, and the program API, still take files only
    assert server.params("models")[0] == 400
    assert server.program("saved_params")[0] == 400


def test_params_api_refuses_like_the_program_api(server):
    assert server.params("../outside.pdmodel")[0] == 403
    assert server.params("params/none.pdiparams")[0] == 404
    assert server.params("params/model.pdiparams", token=False)[0] == 403
