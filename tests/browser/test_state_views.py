"""The DynamicRNN stepper, the LoD tensor view and the scope view in a real JupyterLab."""
from .conftest import SLOW, screenshot
from .notebook_driver import cell, open_notebook, run_cell, write_notebook

# the design documents' encoder batch: 4 sequences of lengths 10, 8, 5, 7
DYNAMIC_RNN = """import numpy as np
import fluid_nb as fluid
from fluid_nb import layers
from fluid_nb.api.layers.rnn_layers import DynamicRNN
from fluid_nb.viz.loop_trace import trace_while
from fluid_nb.widgets import ScopeView, StepperView, TensorView

LENGTHS = [10, 8, 5, 7]
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup), fluid.unique_name.guard():
    x = layers.data("x", [2], dtype="float32", lod_level=1)
    boot = layers.data("boot", [2], dtype="float32")
    drnn = DynamicRNN()
    with drnn.block():
        word = drnn.step_input(x)
        acc = drnn.memory(init=boot, need_reorder=True)
        new_acc = layers.elementwise_add(acc, word)
        drnn.update_memory(acc, new_acc)
        drnn.output(new_acc)
    out = drnn()
scope, exe = fluid.Scope(), fluid.Executor(fluid.CPUPlace())
exe.run(startup, scope=scope)
rows = sum(LENGTHS)
x_value = fluid.create_lod_tensor(np.arange(2 * rows, dtype="float32").reshape(rows, 2),
                                  [LENGTHS], fluid.CPUPlace())
feed = {"x": x_value, "boot": np.zeros((4, 2), "float32")}
trace = trace_while(exe, main, feed=feed, scope=scope)
StepperView(trace)"""

CELLS = [
    DYNAMIC_RNN,
    "TensorView(np.arange(28, dtype='float32').reshape(14, 2),\n"
    "           lod=[[0, 3, 5, 8], [0, 2, 3, 5, 7, 8, 10, 13, 14]])",
    "net, net_startup = fluid.Program(), fluid.Program()\n"
    "with fluid.program_guard(net, net_startup):\n"
    "    hidden = layers.fc(layers.data('features', [3], dtype='float32'), size=4)\n"
    "exe.run(net_startup, scope=scope)\n"
    "exe.run(main, feed=feed, fetch_list=[out], scope=scope)\n"
    "ScopeView(scope)",
]

EXPECTED_BATCHES = [4, 4, 4, 4, 4, 3, 3, 2, 1, 1]


def test_stepper_shows_the_dynamic_rnn_batch_shrinking_step_by_step(page, lab):
    open_notebook(page, write_notebook(lab, "state_views.ipynb", CELLS))
    run_cell(page, 0)
    stepper = cell(page, 0).locator(".fluid-nb-stepper")
    slider = stepper.locator("input.fluid-nb-slider")
    slider.wait_for(timeout=SLOW)
    assert slider.get_attribute("max") == str(len(EXPECTED_BATCHES) - 1)
    shown = []
    for step in range(len(EXPECTED_BATCHES)):
        page.wait_for_function("([el, t]) => el.querySelector('.fluid-nb-rnn-step')"
                               "  && el.querySelector('.fluid-nb-rnn-step').textContent === t",
                               arg=[stepper.element_handle(), str(step)], timeout=SLOW)
        shown.append(int(stepper.locator(".fluid-nb-batch-size").inner_text()))
        # the slider's label counts as the headings do (from 0)
        assert stepper.locator(".fluid-nb-step-label").inner_text() == \
            f"step {step} of 0\u2013{len(EXPECTED_BATCHES) - 1}"
        if step in (0, 5, 9):
            screenshot(cell(page, 0), f"dynamic_rnn_stepper_step_{step}")
        slider.press("ArrowRight")  # the real slider, moved by the keyboard
    print(f"\nbatch size shown at each step: {shown}")
    assert shown == EXPECTED_BATCHES
    # the rank table lists the sequences longest first: input indices 0, 1, 3, 2
    ranks = stepper.locator(".fluid-nb-rank-table tbody tr td:nth-child(2)").all_inner_texts()
    assert ranks == ["0", "1", "3", "2"]

    # (f) a two-level LoD tensor as nested boxes, and the scope tree
    run_cell(page, 1)
    tensor = cell(page, 1).locator(".fluid-nb-tensor")
    tensor.wait_for(timeout=SLOW)
    assert tensor.locator(".fluid-nb-seq[data-level='0']").count() == 3
    assert tensor.locator(".fluid-nb-seq[data-level='1']").count() == 8
    assert tensor.locator(".fluid-nb-row").count() == 14
    screenshot(cell(page, 1), "tensor_view_two_level_lod")
    run_cell(page, 2)
    scope_view = cell(page, 2).locator(".fluid-nb-scope-view")
    scope_view.wait_for(timeout=SLOW)
    names = scope_view.locator("td:first-child code").all_inner_texts()
    assert {"fc_0.w_0", "fc_0.b_0", "feed", "fetch"} <= set(names), names
    screenshot(cell(page, 2), "scope_view")
