"""A notebook with several widgets, executed headless and saved with widget state, stays
small: the widgets' front-end module is the small loader, not the Graphviz viewer."""
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

REPO = Path(__file__).resolve().parents[2]
WIDGET_JS = REPO / "fluid_nb" / "static" / "widget.js"

CELLS = [
    "%load_ext fluid_nb",
    "%%fluid\nimport numpy as np\n"
    "x = fluid.layers.data(name='x', shape=[3], dtype='float32', lod_level=1,\n"
    "                      value=(np.arange(15, dtype='float32').reshape(5, 3), [[0, 2, 5]]))\n"
    "h = fluid.layers.fc(input=x, size=4, act='relu')",
    "from fluid_nb.widgets import ProgramView, ScopeView, StepperView, TensorView, refresh_views\n"
    "view = ProgramView()\nview",
    "TensorView(x)",
    "ScopeView()",
    "import fluid_nb as fl\nfrom fluid_nb.viz.loop_trace import trace_while\n"
    "from tests.api.test_dynamic_rnn import LENGTHS, build_design_example, lod_feed\n"
    "with fl.unique_name.guard():\n"
    "    main, startup, _, _ = build_design_example()\n"
    "scope, exe = fl.Scope(), fl.Executor(fl.CPUPlace())\nexe.run(startup, scope=scope)\n"
    "feed = {'x': lod_feed(np.ones((30, 2), 'float32'), LENGTHS),\n"
    "        'boot': np.zeros((4, 2), 'float32'), 'static': np.ones((4, 3), 'float32')}\n"
    "StepperView(trace_while(exe, main, feed=feed, scope=scope))",
    "%%fluid\ny = fluid.layers.fc(input=h, size=2)",
    "refresh_views(view.program); view._model['stats']['ops']",
]


def test_notebook_with_four_widgets_saved_with_state_is_under_one_megabyte(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(REPO)}})
    client.execute()
    path = tmp_path / "widgets.ipynb"
    nbformat.write(nb, path)
    size = path.stat().st_size
    print(f"\nsaved notebook with 4 widgets and their state: {size:,} bytes")
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    widgets = [m["state"] for m in state.values() if m["model_name"] == "AnyModel"]
    assert sorted(w["_kind"] for w in widgets) == ["program", "scope", "stepper", "tensor"]
    for widget in widgets:
        assert len(widget["_esm"]) < 100_000  # the loader, not the viewer
        if WIDGET_JS.is_file():
            assert widget["_esm"] == WIDGET_JS.read_text()
    assert nb.cells[-1].outputs[0]["data"]["text/plain"] == "5"  # the view grew by 2 ops
    assert size < 1_000_000
