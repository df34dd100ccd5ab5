"""The `fluid-nb` command line: show, render, run, demo and lab, called in-process through
`main([...])`, plus one run of the installed console script."""
import importlib
import io
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

from fluid_nb.cli import commands as cli
from fluid_nb.errors import FluidError

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "paddle"
MLP = FIXTURES / "inference" / "mlp"
html_page_module = importlib.import_module("fluid_nb.viz.html_page")


def _main(argv, capsys):
    out = io.StringIO()
    code = cli.main([str(a) for a in argv], out=out)
    return code, out.getvalue(), capsys.readouterr().err


@pytest.fixture
def viewer_bundle(tmp_path, monkeypatch):
    path = tmp_path / "viewer.js"
    path.write_text("window.fluidNbViewer={renderProgram:function(el,m){el.textContent=m.title}};")
    monkeypatch.setattr(html_page_module, "VIEWER_JS", str(path))
    return path


@pytest.mark.parametrize("target", [MLP / "combined" / "model.pdmodel", MLP / "separate",
                                    MLP / "separate" / "__model__"])
def test_show_prints_the_listing_of_a_program_file(target, capsys):
    code, out, err = _main(["show", target], capsys)
    assert code == 0 and not err
    assert out.startswith("{ // block_idx:0")
    assert "= mul(inputs={X=[x], Y=[fc_0.w_0]}" in out and "= softmax(" in out


def test_show_of_a_missing_file_is_one_clear_line(tmp_path, capsys):
    code, out, err = _main(["show", tmp_path / "nope.pdmodel"], capsys)
    assert code == 1 and not out
    assert err.count("\n") == 1 and "nope.pdmodel" in err and "Traceback" not in err


def test_show_of_a_file_that_is_not_a_program_fails_cleanly(tmp_path, capsys):
    bad = tmp_path / "bad.pdmodel"
    bad.write_bytes(b"\xff\xfe not protobuf \x00")
    code, _, err = _main(["show", bad], capsys)
    assert code == 1 and "bad.pdmodel" in err and "Traceback" not in err


def _table(out):
    """``{name: (dtype, shape, min, max)}`` of a printed parameter table."""
    rows = {}
    for line in out.splitlines()[2:-1]:
        name, dtype, shape, low, high = line.split()[:5]
        rows[name] = (dtype, shape, float(low), float(high))
    return rows


@pytest.mark.parametrize("target,flags", [
    (MLP / "combined" / "model.pdiparams", []), (MLP / "combined", ["--params"]),
    (MLP / "separate", ["--params"])])
def test_show_of_parameters_tables_each_tensor(target, flags, capsys):
    """A combined file is named through the program beside it (its persistables, sorted),
    per-variable files by their file names; both give the same table."""
    code, out, err = _main(["show", target, *flags], capsys)
    assert code == 0 and not err
    rows = _table(out)
    assert sorted(rows) == ["fc_0.b_0", "fc_0.w_0", "fc_1.b_0", "fc_1.w_0", "fc_2.b_0",
                            "fc_2.w_0"]
    from fluid_nb.proto.tensor_stream import read_one
    weight, _ = read_one((MLP / "separate" / "fc_0.w_0").read_bytes(), "fc_0.w_0")
    dtype, shape, low, high = rows["fc_0.w_0"]
    assert (dtype, shape) == ("float32", "x".join(map(str, weight.shape)))
    assert low == pytest.approx(weight.min(), rel=1e-3)
    assert high == pytest.approx(weight.max(), rel=1e-3)
    assert out.rstrip().endswith(f"6 tensors, {484:,} values")


def test_a_combined_file_alone_numbers_its_records(tmp_path, capsys):
    alone = tmp_path / "weights.pdiparams"
    shutil.copy(MLP / "combined" / "model.pdiparams", alone)
    code, out, _ = _main(["show", alone], capsys)
    assert code == 0 and sorted(_table(out)) == [f"#{i}" for i in range(6)]


def test_params_rows_give_the_statistics_and_a_histogram():
    from fluid_nb.viz.params_table import params_rows
    values = np.array([[0, 1, 1], [2, 2, 2]], "float32")
    row, = params_rows([("w", values, [])])
    assert (row["min"], row["max"], row["mean"]) == (0, 2, pytest.approx(8 / 6))
    assert sum(row["histogram"]) == 6 and row["histogram"][0] == 1 and row["histogram"][-1] == 3
    constant, = params_rows([("c", np.full(4, 3.0), [])])
    assert sum(constant["histogram"]) == 4 and constant["std"] == 0
    empty, = params_rows([("e", np.zeros((0, 3), "float32"), [])])
    assert empty["min"] is None and empty["histogram"] is None


def test_params_model_is_the_table_as_json_with_where_the_names_came_from():
    import json
    from fluid_nb.viz.params_table import params_model, params_rows, read_params
    combined = params_model(MLP / "combined" / "model.pdiparams")
    assert (combined["format"], combined["kind"], combined["names_from"]) == \
        ("fluid-nb.params", "combined", "model.pdmodel")
    assert combined["title"] == "model.pdiparams" and combined["tensors"] == 6
    assert combined["values"] == 484 == sum(r["size"] for r in combined["rows"])
    assert json.loads(json.dumps(combined)) == combined
    separate = params_model(MLP / "separate", title="mlp")
    assert (separate["kind"], separate["names_from"], separate["title"]) == \
        ("directory", None, "mlp")
    assert separate["rows"] == params_rows(read_params(MLP / "separate"))
    assert [r["name"] for r in separate["rows"]] == [r["name"] for r in combined["rows"]]
    for row in combined["rows"]:
        low, high = row["histogram_range"]
        assert (low, high) == (row["min"], row["max"]) and len(row["histogram"]) == \
            combined["bins"]


def test_show_of_a_damaged_parameter_file_is_one_clear_line(tmp_path, capsys):
    bad = tmp_path / "bad.pdiparams"
    bad.write_bytes((MLP / "combined" / "model.pdiparams").read_bytes()[:-7])
    code, out, err = _main(["show", bad], capsys)
    assert code == 1 and not out and "bad.pdiparams" in err and "Traceback" not in err
    code, _, err = _main(["show", tmp_path / "missing.pdiparams"], capsys)
    assert code == 1 and "missing.pdiparams" in err


def test_render_dot_writes_the_assembled_graph(tmp_path, capsys):
    out_file = tmp_path / "mlp.dot"
    code, out, _ = _main(["render", MLP / "separate", "-o", out_file], capsys)
    dot = out_file.read_text()
    assert code == 0 and "wrote" in out
    assert dot.startswith("digraph program {") and dot.count("{") == dot.count("}")
    assert dot.count('class="op ') == 12  # feed, 3 x (mul, add, act), scale, fetch


def test_render_html_writes_a_self_contained_page(tmp_path, capsys, viewer_bundle):
    out_file = tmp_path / "mlp.html"
    code, _, _ = _main(["render", MLP / "combined" / "model.pdmodel", "-o", out_file], capsys)
    page = out_file.read_text()
    assert code == 0 and page.startswith("<!DOCTYPE html>")
    assert viewer_bundle.read_text() in page and "application/json" in page
    assert "= softmax(inputs=" in page  # the listing, readable without JavaScript


def test_render_svg_without_graphviz_names_what_is_missing(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` binary reachable
    code, _, err = _main(["render", MLP / "separate", "-o", tmp_path / "g.svg"], capsys)
    assert code == 1 and "dot" in err and ".html" in err and "Traceback" not in err


def test_render_refuses_an_unknown_output_kind(tmp_path, capsys):
    code, _, err = _main(["render", MLP / "separate", "-o", tmp_path / "g.png"], capsys)
    assert code == 1 and ".html, .svg or .dot" in err


@pytest.mark.parametrize("target", [MLP / "combined" / "model.pdmodel", MLP / "separate"])
def test_run_prints_and_saves_the_fetched_arrays(target, tmp_path, capsys):
    code, out, err = _main(["run", target, "--feed", f"x={MLP / 'input.npy'}",
                            "--save-dir", tmp_path], capsys)
    assert code == 0 and not err
    assert out.startswith("save_infer_model/scale_0.tmp_0: shape [3, 4] float32")
    saved = np.load(tmp_path / "save_infer_model_scale_0.tmp_0.npy")
    np.testing.assert_allclose(saved, np.load(MLP / "expected.npy"), rtol=1e-5, atol=1e-6)


def test_run_fetches_a_named_variable(capsys):
    code, out, _ = _main(["run", MLP / "separate", "--feed", f"x={MLP / 'input.npy'}",
                          "--fetch", "fc_0.tmp_0"], capsys)
    assert code == 0 and out.startswith("fc_0.tmp_0: shape [3, 16] float32")


def test_run_with_a_bad_feed_prints_the_executors_error_in_one_line(tmp_path, capsys):
    np.save(tmp_path / "bad.npy", np.ones((3, 5), "float32"))
    argv = ["run", MLP / "separate", "--feed", f"x={tmp_path / 'bad.npy'}"]
    code, out, err = _main(argv, capsys)
    assert code == 1 and not out
    assert err.count("\n") == 1 and "feed 'x'" in err and "[3, 5]" in err
    with pytest.raises(FluidError):
        _main(["--debug"] + argv, capsys)


def test_run_without_a_feed_for_an_input_says_which(capsys):
    code, _, err = _main(["run", MLP / "separate"], capsys)
    assert code == 1 and "--feed" in err and "x" in err


def test_demo_trains_prints_a_summary_and_writes_the_page(tmp_path, capsys, viewer_bundle):
    page = tmp_path / "demo.html"
    code, out, _ = _main(["demo", "-o", page, "--steps", "30"], capsys)
    assert code == 0 and page.exists()
    assert "= sgd(inputs=" in out and "= mul_grad(inputs=" in out
    # a Fluid 1.x program: its scalars (the learning rate, the mean) are declared [1]
    assert "persist var learning_rate_0 : LOD_TENSOR.shape(1,)" in out
    assert ".shape()" not in out
    # one summary line, not a line per step: "... loss A at step 0 -> B at step 29 ..."
    assert not [line for line in out.splitlines() if line.startswith("step ")]
    summary, = [line for line in out.splitlines() if line.startswith("trained 30 SGD steps")]
    first, last = (float(summary.split(" loss ")[1].split()[0]),
                   float(summary.split("-> ")[1].split()[0]))
    assert last < first
    assert f"wrote {page}" in out and "fit_a_line" in page.read_text()


def test_demo_page_by_default_is_ignored_by_git():
    ignored = (pathlib.Path(cli.__file__).resolve().parents[2] / ".gitignore").read_text()
    default = cli.build_parser().parse_args(["demo"]).output
    assert f"/{default}" in ignored.splitlines()


def test_demo_without_built_assets_fails_before_training(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(html_page_module, "VIEWER_JS", str(tmp_path / "missing.js"))
    code, out, err = _main(["demo", "-o", tmp_path / "d.html", "--steps", "3"], capsys)
    assert code == 1 and "not built" in err and "step" not in out


def test_lab_runs_jupyterlab_on_the_notebooks_folder(tmp_path, capsys, monkeypatch):
    ran = []
    monkeypatch.setattr(cli, "_running_as_root", lambda: False)
    monkeypatch.setattr(cli, "hand_over_to", lambda command: ran.append(command) or 0)
    code, _, _ = _main(["lab", "--dir", tmp_path, "--port", "8899", "--no-browser"], capsys)
    assert code == 0
    assert ran == [[sys.executable, "-m", "fluid_nb.server.lab",
                    f"--ServerApp.root_dir={tmp_path}", "--port", "8899", "--no-browser"]]


def test_lab_as_root_passes_allow_root_and_says_so(tmp_path, capsys, monkeypatch):
    ran = []
    monkeypatch.setattr(cli, "_running_as_root", lambda: True)
    monkeypatch.setattr(cli, "hand_over_to", lambda command: ran.append(command) or 0)
    code, out, _ = _main(["lab", "--dir", tmp_path, "--no-browser"], capsys)
    assert code == 0 and "running as root: passing --allow-root" in out
    assert ran[0][-2:] == ["--no-browser", "--allow-root"]
    # given by the user, it is not added twice
    _main(["lab", "--dir", tmp_path, "--allow-root"], capsys)
    assert ran[1].count("--allow-root") == 1


def test_lab_help_says_other_arguments_go_to_jupyter(capsys):
    with pytest.raises(SystemExit):
        cli.main(["lab", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "passed on to jupyter lab" in text and "--allow-root" in text


def test_help_shows_an_example_of_each_command_in_plain_text(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    text = capsys.readouterr().out
    assert "``" not in text  # the docstring's markup stays out of the terminal
    for command in ("show", "render", "run", "demo", "lab"):
        assert f"\n    fluid-nb {command}" in text, command


def test_lab_folder_holds_example_program_files_that_open():
    models = pathlib.Path(cli.notebooks_dir()) / "models"
    files = sorted(models.rglob("*.pdmodel")) + sorted(models.rglob("__model__"))
    assert len(files) >= 3
    kinds = set()
    for file in files:
        program = cli.load_program(str(file))
        kinds |= {op.type for block in program.blocks for op in block.ops}
    assert {"while", "conv2d"} <= kinds


def test_lab_defaults_to_the_notebooks_folder_beside_the_package():
    folder = cli.notebooks_dir()
    assert folder == str(pathlib.Path(cli.__file__).resolve().parents[2] / "notebooks")
    assert cli.lab_command(folder)[-1] == f"--ServerApp.root_dir={folder}"


def test_lab_without_a_notebooks_folder_is_a_clear_error(tmp_path, capsys):
    code, _, err = _main(["lab", "--dir", tmp_path / "missing"], capsys)
    assert code == 1 and "--dir" in err and "missing" in err


def test_run_takes_a_paddle_2_path_prefix(capsys):
    x = MLP / "input.npy"
    prefix = MLP / "combined" / "model"
    code, out, err = _main(["run", prefix, "--feed", f"x={x}"], capsys)
    assert code == 0 and not err
    assert out == _main(["run", f"{prefix}.pdmodel", "--feed", f"x={x}"], capsys)[1]


def test_show_into_a_closed_pipe_ends_quietly(tmp_path):
    import fluid_nb as fluid
    program = fluid.Program()  # a listing far larger than a pipe's buffer
    block = program.global_block()
    block.create_var(name="v0", shape=[1], dtype="float32")
    for i in range(3000):
        block.append_op(type="scale", inputs={"X": f"v{i}"}, outputs={"Out": f"v{i + 1}"},
                        attrs={"scale": 2.0})
    (tmp_path / "big.pdmodel").write_bytes(program.desc.serialize_to_string())
    exe = shutil.which("fluid-nb")
    assert exe is not None, "the fluid-nb console script is not installed: pip install -e ."
    done = subprocess.run(f"'{exe}' show '{tmp_path}/big.pdmodel' | head -n 2",
                          shell=True, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONWARNINGS="ignore"))
    assert done.returncode == 0 and len(done.stdout.splitlines()) == 2
    assert done.stderr == ""


def test_installed_console_script_shows_a_program():
    exe = shutil.which("fluid-nb")
    if exe is None:
        pytest.fail("the fluid-nb console script is not installed: pip install -e .")
    done = subprocess.run([exe, "show", str(MLP / "combined" / "model.pdmodel")],
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONWARNINGS="ignore"))
    assert done.returncode == 0, done.stderr
    assert "= softmax(inputs=" in done.stdout


def test_jupyter_lists_the_extension_enabled_and_ok():
    """What a user checks after installing: `jupyter labextension list` (the one beside
    fluid-nb) shows the extension installed with the package, enabled and compatible."""
    import re
    exe = shutil.which("fluid-nb")
    assert exe is not None, "the fluid-nb console script is not installed: pip install -e ."
    jupyter = os.path.join(os.path.dirname(exe), "jupyter")
    assert os.path.isfile(jupyter), f"no jupyter beside {exe}: JupyterLab is not installed"
    done = subprocess.run([jupyter, "labextension", "list"], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, PYTHONWARNINGS="ignore"))
    listing = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)
    assert done.returncode == 0, listing
    assert re.search(r"fluid-nb-labext v\S+ enabled\s+OK \(python, fluid_nb\)", listing), listing


class _RunningLab:
    """`fluid-nb lab` as a user starts it (as root in CI: it adds --allow-root itself), on a
    free port of 127.0.0.1, with its own Jupyter runtime and config folders."""
    token = "first-contact"

    def __init__(self, tmp_path):
        import socket
        exe = shutil.which("fluid-nb")
        assert exe is not None, "the fluid-nb console script is not installed: pip install -e ."
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
                   JUPYTER_CONFIG_DIR=str(tmp_path / "config"))
        self.process = subprocess.Popen(
            [exe, "lab", "--dir", str(tmp_path), "--no-browser", "--ip=127.0.0.1",
             f"--port={self.port}", "--ServerApp.port_retries=0",
             f"--IdentityProvider.token={self.token}"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}?token={self.token}"

    def get(self, path, timeout=5):
        import urllib.request
        with urllib.request.urlopen(self.url(path), timeout=timeout) as response:
            return response.read().decode()

    def wait_for_page(self, seconds=90):
        import time
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.output()[-2000:]
            try:
                return self.get("/lab")
            except OSError:
                time.sleep(0.5)
        raise AssertionError(f"JupyterLab did not answer within {seconds} s")

    def answers(self):
        try:
            self.get("/api", timeout=2)
            return True
        except OSError:
            return False

    def output(self):
        return self.process.stdout.read().decode(errors="replace")

    def stop(self):
        """Stop the process started, and any server it left behind (through the server's
        own shutdown request)."""
        import urllib.request
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
        if self.answers():
            try:
                urllib.request.urlopen(urllib.request.Request(self.url("/api/shutdown"),
                                                              method="POST"), timeout=10)
            except OSError:
                pass


def test_fluid_nb_lab_starts_jupyterlab_with_the_extension(tmp_path):
    """`fluid-nb lab` serves JupyterLab, whose page lists the fluid_nb extension among the
    federated ones."""
    import json
    lab = _RunningLab(tmp_path)
    try:
        page = lab.wait_for_page()
        config = json.loads(page.split('id="jupyter-config-data"', 1)[1]
                            .split(">", 1)[1].split("</script>", 1)[0])
        names = [ext["name"] for ext in config.get("federated_extensions", [])]
        assert "fluid-nb-labext" in names, names
    finally:
        lab.stop()


@pytest.mark.skipif(os.name != "posix", reason="signals as POSIX sends them")
@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGINT"])
def test_stopping_fluid_nb_lab_while_it_serves_requests_stops_it(tmp_path, signal_name, ctrl_c):
    """The stop does not depend on what the server is doing when the signal comes: with
    requests being served at that moment (an interrupt landing in a request handler; worker
    threads busy as the loop stops), JupyterLab still shuts down, with no traceback."""
    import signal
    import threading
    lab = _RunningLab(tmp_path)
    output = []
    reader = threading.Thread(target=lambda: output.append(lab.output()), daemon=True)
    reader.start()  # the log is read as it comes, so the server never waits on a full pipe
    served, stopping = threading.Semaphore(0), threading.Event()

    def browse():
        while not stopping.is_set():
            try:
                lab.get("/api/contents", timeout=5)
                served.release()
            except OSError:
                pass
    clients = [threading.Thread(target=browse, daemon=True) for _ in range(4)]
    try:
        lab.wait_for_page()
        for client in clients:
            client.start()
        for _ in range(40):  # the clients are busy: requests keep being served
            assert served.acquire(timeout=60), "JupyterLab stopped answering /api/contents"
        lab.process.send_signal(getattr(signal, signal_name))
        stopping.set()
        lab.process.wait(timeout=60)
        reader.join(timeout=30)
        assert "Traceback" not in output[0], output[0][-3000:]
        assert "received signal 15, stopping" in output[0]
        assert not lab.answers(), "JupyterLab still serves after fluid-nb lab was stopped"
    finally:
        stopping.set()
        lab.stop()


@pytest.mark.skipif(os.name != "posix", reason="signals as POSIX sends them")
@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGINT"])
def test_stopping_fluid_nb_lab_stops_jupyterlab(tmp_path, signal_name, ctrl_c):
    """A signal to the `fluid-nb lab` process (a service manager's SIGTERM, Ctrl-C's SIGINT)
    reaches JupyterLab itself: the server shuts down, nothing is left serving, and no
    traceback of fluid-nb is printed."""
    import signal
    lab = _RunningLab(tmp_path)
    try:
        lab.wait_for_page()
        lab.process.send_signal(getattr(signal, signal_name))
        lab.process.wait(timeout=60)
        left_serving = lab.answers()
        output = lab.output()
        assert not left_serving, "JupyterLab still serves after fluid-nb lab was stopped"
        assert "Traceback" not in output, output[-3000:]
    finally:
        lab.stop()


# --- ONNX models, output paths, feed names ---------------------------------------------------
def _exported_mlp(tmp_path, capsys):
    path = tmp_path / "mlp.onnx"
    code, _, err = _main(["export", MLP / "separate", "-o", path], capsys)
    assert code == 0, err
    return path


def test_run_takes_an_onnx_model_and_gives_the_fluid_models_outputs(tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    model = _exported_mlp(tmp_path, capsys)
    code, out, err = _main(["run", model, "--feed", f"x={MLP / 'input.npy'}",
                            "--save-dir", tmp_path / "out"], capsys)
    assert code == 0 and not err
    assert out.startswith("save_infer_model/scale_0.tmp_0: shape [3, 4] float32")
    saved = np.load(tmp_path / "out" / "save_infer_model_scale_0.tmp_0.npy")
    np.testing.assert_allclose(saved, np.load(MLP / "expected.npy"), rtol=1e-5, atol=1e-6)


def test_run_of_an_onnx_model_refuses_what_onnxruntime_would_not_take(tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    model = _exported_mlp(tmp_path, capsys)
    np.save(tmp_path / "f64.npy", np.load(MLP / "input.npy").astype("float64"))
    np.save(tmp_path / "wide.npy", np.ones((3, 5), "float32"))
    code, _, err = _main(["run", model, "--feed", f"x={tmp_path / 'f64.npy'}"], capsys)
    assert code == 1 and "feed 'x' expected float32 values" in err and "float64" in err
    code, _, err = _main(["run", model, "--feed", f"x={tmp_path / 'wide.npy'}"], capsys)
    assert code == 1 and "shape [?, 8]" in err and "[3, 5]" in err
    code, _, err = _main(["run", model, "--feed", f"x={MLP / 'input.npy'}",
                          "--fetch", "fc_0.tmp_0"], capsys)
    assert code == 1 and "outputs of the ONNX model (save_infer_model/scale_0.tmp_0)" in err


def test_run_of_an_onnx_model_with_fluid_nb_ops_names_them_and_what_to_run(tmp_path, capsys):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    from fluid_nb.rewriters.onnx import DOMAIN
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    graph = helper.make_graph([helper.make_node("some_fluid_op", ["x"], ["y"], domain=DOMAIN)],
                              "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid(DOMAIN, 1)])
    path = tmp_path / "own.onnx"
    onnx.save(model, str(path))
    np.save(tmp_path / "x.npy", np.ones(2, "float32"))
    code, _, err = _main(["run", path, "--feed", f"x={tmp_path / 'x.npy'}"], capsys)
    assert code == 1 and "Traceback" not in err
    assert "some_fluid_op" in err and DOMAIN in err and "fluid-nb run MODEL_DIR" in err


def test_compile_and_export_of_an_onnx_model_say_what_they_take(tmp_path, capsys):
    pytest.importorskip("onnx")
    model = _exported_mlp(tmp_path, capsys)
    code, _, err = _main(["export", model, "-o", tmp_path / "again.onnx"], capsys)
    assert code == 1 and "Fluid inference model" in err and "wire type" not in err


@pytest.mark.parametrize("command", ["show", "render"])
def test_show_and_render_help_name_onnx_models(command, capsys):
    with pytest.raises(SystemExit):
        cli.main([command, "--help"])
    assert ".onnx" in capsys.readouterr().out


def test_help_of_run_names_onnx_models(capsys):
    with pytest.raises(SystemExit):
        cli.main(["run", "--help"])
    assert ".onnx" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["g.svg", "g.dot", "g.html"])
def test_render_into_a_missing_folder_names_it_and_writes_nothing(name, tmp_path, capsys):
    target = tmp_path / "nodir" / name
    code, out, err = _main(["render", MLP / "separate", "-o", target], capsys)
    assert code == 1 and not out and "Errno" not in err
    assert str(target) in err and "does not exist" in err and str(tmp_path / "nodir") in err
    assert not (tmp_path / "nodir").exists()


def test_render_into_a_directory_says_it_is_one(tmp_path, capsys):
    (tmp_path / "d.dot").mkdir()
    code, _, err = _main(["render", MLP / "separate", "-o", tmp_path / "d.dot"], capsys)
    assert code == 1 and "an existing directory" in err and "Errno" not in err


def test_run_with_a_feed_that_is_no_input_lists_the_models_inputs(capsys):
    code, _, err = _main(["run", MLP / "separate", "--feed", f"img={MLP / 'input.npy'}"],
                         capsys)
    assert code == 1
    assert "img, which is not an input of the model" in err
    assert "the model's inputs (x)" in err


def test_notebook_checkpoints_are_ignored_by_git_anywhere():
    root = pathlib.Path(cli.__file__).resolve().parents[2]
    assert ".ipynb_checkpoints/" in (root / ".gitignore").read_text().splitlines()
    if (root / ".git").exists() and shutil.which("git"):
        done = subprocess.run(["git", "-C", str(root), "check-ignore", "-q",
                               "notebooks/models/.ipynb_checkpoints/a-checkpoint.ipynb"])
        assert done.returncode == 0
