"""A compiled program and an ONNX export report as cell results in a real JupyterLab: the
compiled program shows its ops beside the generated source, a click on an op's function
name scrolls to the function; the report lists every op with its status."""
from .conftest import SLOW, screenshot
from .notebook_driver import cell, open_notebook, run_cell, write_notebook

SETUP = """import numpy as np
import fluid_nb as fluid
from fluid_nb.rewriters import native

main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    x = fluid.data('x', [None, 13], 'float32')
    y = fluid.data('y', [None, 1], 'float32')
    predict = fluid.layers.fc(x, 1)
    loss = fluid.layers.mean(fluid.layers.square_error_cost(predict, y))
    fluid.optimizer.SGD(0.01).minimize(loss)
scope, exe = fluid.Scope(), fluid.Executor(fluid.CPUPlace())
exe.run(startup, scope=scope)
rng = np.random.RandomState(0)
feed = {'x': rng.rand(20, 13).astype('float32'), 'y': rng.rand(20, 1).astype('float32')}
compiled = native.compile(main, feed, [loss], scope=scope)
compiled"""

REPORT = """inference = main.clone(for_test=True)
fluid.onnx.export(inference, None, feed=['x'], fetch=[predict], scope=scope)"""


def test_a_compiled_program_and_an_onnx_report_display_as_cell_results(page, lab):
    open_notebook(page, write_notebook(lab, "native_onnx.ipynb", [SETUP, REPORT]))
    run_cell(page, 0)
    shown = cell(page, 0).locator(".fluid-nb-native")
    shown.wait_for(timeout=SLOW)
    assert "13 ops compiled (cpp), 0 in the interpreter" in shown.inner_text()
    rows = shown.locator("table tr")
    assert rows.count() == 14  # a header and one row per op
    link = shown.locator("a[href='#fluid-fn-fluid_cpp_mul_grad_10']")
    assert link.inner_text() == "fluid_cpp_mul_grad_10"
    target = shown.locator("#fluid-fn-fluid_cpp_mul_grad_10")
    assert "static void fluid_cpp_mul_grad_10(void** v)" in target.inner_text()
    link.click()
    target.wait_for(state="visible", timeout=SLOW)
    assert target.is_visible()
    screenshot(page, "native_program")

    run_cell(page, 1)
    report = cell(page, 1).locator("table.fluid-nb-onnx-report")
    report.wait_for(timeout=SLOW)
    text = report.inner_text()
    assert "mul" in text and "elementwise_add" in text and "converted" in text
    footer = cell(page, 1).locator(".jp-OutputArea-output p").last.inner_text()
    assert footer == "2 of 2 ops converted (opset 17); no model written"


def test_a_compiled_programs_graph_shows_the_clicked_ops_function(page, lab):
    """ProgramView(compiled): the program graph whose op details hold the op's generated
    code."""
    open_notebook(page, write_notebook(lab, "native_view.ipynb", [
        SETUP, "from fluid_nb.widgets import ProgramView\nProgramView(compiled)"]))
    run_cell(page, 0)
    cell(page, 0).locator(".fluid-nb-native").wait_for(timeout=SLOW)
    run_cell(page, 1)
    graph = cell(page, 1).locator(".fluid-nb-program-widget .fluid-nb-program[data-nodes]")
    graph.wait_for(timeout=SLOW)
    mul_grad = cell(page, 1).locator(".fluid-nb-program svg g.node", has_text="mul_grad").first
    mul_grad.click()
    source = cell(page, 1).locator(".fluid-nb-native-source")
    source.wait_for(timeout=SLOW)
    assert source.inner_text().startswith("static void fluid_cpp_mul_grad_")
    assert "native function: fluid_cpp_mul_grad_" in \
        cell(page, 1).locator(".fluid-nb-native-name").inner_text()
    screenshot(cell(page, 1), "native_program_graph")
