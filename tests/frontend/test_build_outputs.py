"""The front-end build outputs: the JupyterLab extension, the standalone viewer and the
widget module exist, are what they claim, and JupyterLab sees the extension."""
import json
import re
import subprocess
import sys
from pathlib import Path

import fluid_nb

PACKAGE = Path(fluid_nb.__file__).resolve().parent
LABEXTENSION = PACKAGE / "labextension"
STATIC = PACKAGE / "static"
MIME_TYPE = "application/vnd.fluid-nb.program+json"


def test_labextension_package_declares_mime_renderer_and_file_viewer_plugins():
    meta = json.loads((LABEXTENSION / "package.json").read_text())
    assert meta["name"] == "fluid-nb-labext"
    built = meta["jupyterlab"]["_build"]
    assert built["mimeExtension"] == "./mimeExtension"
    assert built["extension"] == "./extension"
    assert (LABEXTENSION / built["load"]).is_file()


def test_labextension_bundle_registers_the_program_mime_type():
    chunks = [p.read_text(errors="replace") for p in (LABEXTENSION / "static").glob("*.js")]
    assert any(MIME_TYPE in text for text in chunks)
    # the file viewer's file type: .pdmodel files and files named __model__
    assert any(".pdmodel" in text and "__model__" in text for text in chunks)


def test_viewer_bundle_defines_the_viewer_api_with_graphviz_wasm_inlined():
    text = (STATIC / "viewer.js").read_text(errors="replace")
    assert len(text) > 1_000_000, "Graphviz (WebAssembly) is missing from the viewer bundle"
    assert "\\0asm" in text and "WebAssembly.instantiate" in text
    assert "fluidNbViewer" in text
    for name in ("renderProgram", "applyDelta", "renderTensor", "renderScope", "renderStepper",
                 "renderMemory"):
        assert re.search(rf"\b{name}\b", text), name
    # no network: the bundle names no remote address to load code or data from
    assert not re.search(r"""(import\(|fetch\()\s*["']https?://""", text)


def test_widget_module_is_small_because_it_loads_the_viewer_from_the_server():
    text = (STATIC / "widget.js").read_text()
    assert 0 < len(text) < 100_000, len(text)
    assert "WebAssembly" not in text


def _jupyter(*args):
    done = subprocess.run([sys.executable, "-m", "jupyter", *args], capture_output=True,
                          text=True, timeout=120)
    return re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)


def test_jupyter_labextension_list_shows_the_extension_enabled_and_ok():
    listing = _jupyter("labextension", "list")
    assert re.search(r"fluid-nb-labext v\S+ enabled OK \(python, fluid_nb\)", listing), listing


def test_jupyter_server_extension_list_shows_fluid_nb_enabled_and_ok():
    listing = _jupyter("server", "extension", "list")
    assert re.search(r"fluid_nb enabled", listing), listing
    assert re.search(r"fluid_nb \S+ OK", listing), listing
