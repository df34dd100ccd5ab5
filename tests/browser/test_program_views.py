"""The program graph in a real JupyterLab: it grows cell by cell, an op can be clicked for
its attributes, a 1,000-op program renders in time and a 10-op update is a small delta."""
import json

from .conftest import SLOW, screenshot
from .notebook_driver import cell, open_notebook, run_cell, write_notebook

GROWTH_CELLS = [
    "%load_ext fluid_nb",
    "import numpy as np\n"
    "from fluid_nb.widgets import ProgramView\n"
    "view = ProgramView(title='fit a line, cell by cell')  # %%fluid cells refresh it\n"
    "view",
    "%%fluid --quiet\n"
    "x = fluid.layers.data(name='x', shape=[13], dtype='float32',\n"
    "                      value=np.random.rand(4, 13).astype('float32'))\n"
    "y = fluid.layers.data(name='y', shape=[1], dtype='float32',\n"
    "                      value=np.random.rand(4, 1).astype('float32'))",
    "%%fluid --quiet\nh = fluid.layers.fc(input=x, size=8, act='relu')",
    "%%fluid --quiet\ny_predict = fluid.layers.fc(input=h, size=1)",
    "%%fluid --quiet\n"
    "cost = fluid.layers.square_error_cost(input=y_predict, label=y)\n"
    "avg_cost = fluid.layers.mean(cost)",
    "%%fluid --quiet\nfluid.optimizer.SGD(learning_rate=0.01).minimize(avg_cost)",
]

GRAPH = ".fluid-nb-program-widget .fluid-nb-program"


def _node_count(page):
    return page.locator(f"{GRAPH} svg g.node").count()


def _wait_for_more_nodes(page, than):
    page.wait_for_function(
        "([selector, n]) => document.querySelectorAll(selector).length > n",
        arg=[f"{GRAPH} svg g.node", than], timeout=SLOW)
    return _node_count(page)


def test_program_view_grows_cell_by_cell_and_shows_op_details(page, lab):
    open_notebook(page, write_notebook(lab, "growth.ipynb", GROWTH_CELLS))
    run_cell(page, 0)
    run_cell(page, 1)
    page.wait_for_selector(f"{GRAPH}[data-revision]", timeout=SLOW)
    counts = [_node_count(page)]
    for index in range(2, len(GROWTH_CELLS)):
        run_cell(page, index)
        counts.append(_wait_for_more_nodes(page, counts[-1]))
        screenshot(cell(page, 1), f"program_view_after_cell_{index}")
    print(f"\ngraph nodes after each cell: {counts}")
    assert all(a < b for a, b in zip(counts, counts[1:])), counts
    # the ops of the last cell (backward and SGD) are the highlighted ones
    assert page.locator(f"{GRAPH} svg g.node.fluid-nb-new").count() > 0
    assert "sgd" in cell(page, 1).locator(".fluid-nb-added").inner_text()

    # (b) click an op: its attributes in the details panel, its kernel from the kernel side
    mul = page.locator(f"{GRAPH} svg g.node", has_text="mul").first
    op_id = mul.get_attribute("id")
    mul.click()
    details = cell(page, 1).locator(".fluid-nb-program-details")
    details.get_by_text("x_num_col_dims").wait_for(timeout=SLOW)
    text = details.inner_text()
    assert "mul" in text and "x_num_col_dims" in text and "y_num_col_dims" in text
    runtime = cell(page, 1).locator(f".fluid-nb-runtime-op[data-id='{op_id}']")
    runtime.wait_for(timeout=SLOW)
    assert "kernel: ops.math." in runtime.inner_text()
    screenshot(cell(page, 1), "program_view_op_details")

    # a variable with a value opens it as a TensorView inside the widget
    page.locator(f"{GRAPH} svg g.node[id='v:0:x']").click()
    value = cell(page, 1).locator(".fluid-nb-runtime-value[data-id='v:0:x'] .fluid-nb-tensor")
    value.wait_for(timeout=SLOW)
    assert "[4, 13]" in value.inner_text()
    screenshot(cell(page, 1), "program_view_variable_value")


PERF_CELLS = [
    "%load_ext fluid_nb",
    "import json, time\nimport numpy as np\nimport fluid_nb as fl\n"
    "from IPython.display import display\n"
    "from fluid_nb.viz import MIME_TYPE, program_model\n"
    "from fluid_nb.widgets import ProgramView\n"
    "big, big_start = fl.Program(), fl.Program()\n"
    "with fl.program_guard(big, big_start):\n"
    "    v = fl.layers.data('x', [16], dtype='float32')\n"
    "    for _ in range(1000):\n"
    "        v = fl.layers.scale(v, scale=1.0)\n"
    "model = program_model(big, title='1,000 ops')\n"
    "print('ops', model['stats']['ops'], 'model bytes', len(json.dumps(model)))\n"
    "display({MIME_TYPE: model}, raw=True)",
    "view = ProgramView(big, title='1,000 ops, then 10 more')\nview",
    "with fl.program_guard(big, big_start):\n"
    "    for _ in range(10):\n"
    "        v = fl.layers.scale(v, scale=2.0)\n"
    "message = view.refresh()\n"
    "print('delta bytes', len(json.dumps(message)), 'full bytes', len(json.dumps(view._model)))",
]


def test_thousand_op_program_renders_fast_and_updates_by_small_deltas(page, lab):
    frames = []

    def on_socket(ws):
        ws.on("framereceived", lambda payload: frames.append(payload))
    page.on("websocket", on_socket)
    open_notebook(page, write_notebook(lab, "performance.ipynb", PERF_CELLS))
    run_cell(page, 0)
    run_cell(page, 1)
    mime = cell(page, 1).locator(".fluid-nb-program[data-render-ms]")
    mime.wait_for(timeout=SLOW)
    render_ms = float(mime.get_attribute("data-render-ms"))
    nodes = int(mime.get_attribute("data-nodes"))

    run_cell(page, 2)
    graph = cell(page, 2).locator(".fluid-nb-program[data-render-ms]")
    graph.wait_for(timeout=SLOW)
    revision = graph.get_attribute("data-revision")
    run_cell(page, 3)
    page.wait_for_function(
        "([el, old]) => el.dataset.revision !== old", arg=[graph.element_handle(), revision],
        timeout=SLOW)
    delta_ms = float(graph.get_attribute("data-render-ms"))
    screenshot(cell(page, 2), "program_view_1000_ops_after_delta")
    page.remove_listener("websocket", on_socket)

    full_bytes = len(json.dumps(page.evaluate(
        "() => { const w = window.jupyterapp.shell.currentWidget;"
        " return w.content.widgets[1].model.outputs.get(1).data; }")))
    delta_frames = [f for f in frames if _text(f) and "fluid-nb.program-delta" in _text(f)]
    assert len(delta_frames) == 1, f"{len(delta_frames)} delta messages"
    delta_bytes = len(_bytes(delta_frames[0]))
    printed = cell(page, 3).locator(".jp-OutputArea-output").inner_text()
    print(f"\n1,000-op program: {nodes} graph nodes, first render {render_ms:.0f} ms "
          f"(target < 2000); model output {full_bytes:,} bytes")
    print(f"+10 ops: delta message on the wire {delta_bytes:,} bytes "
          f"({100 * delta_bytes / full_bytes:.1f}% of the full model; target < 10%), "
          f"delta render {delta_ms:.0f} ms (target < 300); kernel side: {printed.strip()}")
    # drawn folded: a box per group, opened at first sight while the labels stay readable
    assert mime.get_attribute("data-folded") == "true" and 10 <= nodes <= 80
    assert render_ms < 2000
    assert delta_bytes < 0.1 * full_bytes
    assert delta_ms < 300


def _text(payload):
    return payload if isinstance(payload, str) else bytes(payload).decode("utf-8", "replace")


def _bytes(payload):
    return payload.encode() if isinstance(payload, str) else bytes(payload)
