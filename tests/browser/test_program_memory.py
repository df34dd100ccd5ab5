"""The program graph tinted by memory in a real JupyterLab: after a recorded MLP training
step, ``ProgramView.show_memory`` fills each op that allocated by its bytes (log scale, the
more the darker), draws the legend from the least to the most, a clicked op's details say
what it allocated, and ``show_memory(None)`` gives the ops their colours by role back."""
import json

from .conftest import SLOW, screenshot
from .notebook_driver import cell, open_notebook, run_cell, write_notebook

MLP = """import json
import numpy as np
import fluid_nb as fluid
from fluid_nb.widgets import MemoryView, ProgramView
from fluid_nb.viz.memory_model import bytes_text

fluid.set_flags({"FLAGS_initial_cpu_memory_in_mb": 17})
place = fluid.CPUPlace()
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    image = fluid.data('image', [None, 784], 'float32')
    label = fluid.data('label', [None, 1], 'int64')
    hidden = fluid.layers.fc(image, 200, act='relu')
    hidden = fluid.layers.fc(hidden, 200, act='relu')
    prediction = fluid.layers.fc(hidden, 10, act='softmax')
    loss = fluid.layers.mean(fluid.layers.cross_entropy(prediction, label))
    fluid.optimizer.Adam(0.001).minimize(loss)
scope, exe = fluid.Scope(), fluid.Executor(place)
exe.run(startup, scope=scope)
rng = np.random.RandomState(0)
feed = {'image': rng.rand(64, 784).astype('float32'),
        'label': rng.randint(0, 10, (64, 1)).astype('int64')}
exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
memory = MemoryView(place, scope)
memory.record(exe.run, main, feed=feed, fetch_list=[loss], scope=scope)"""

SHOW = """view = ProgramView(main, title='MLP step, ops by bytes allocated')
view"""

TINT = """figures = view.show_memory(memory)
print(json.dumps({"ops": figures["ops"], "min": bytes_text(figures["min"]),
                  "max": bytes_text(figures["max"])}))"""

CLEAR = "view.show_memory(None)"

GRAPH = ".fluid-nb-program-widget .fluid-nb-program"

FILLS = """nodes => nodes.map(g => {
  const shape = g.querySelector('polygon, path');
  return [g.id, g.getAttribute('data-bytes'), shape && shape.getAttribute('fill')];
})"""


def luminance(fill):
    r, g, b = (int(fill[i:i + 2], 16) / 255 for i in (1, 3, 5))
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def test_show_memory_tints_ops_by_bytes_with_a_legend_and_details(page, lab):
    open_notebook(page, write_notebook(lab, "program_memory.ipynb", [MLP, SHOW, TINT, CLEAR]))
    run_cell(page, 0)
    run_cell(page, 1)
    view = cell(page, 1)
    view.locator(f"{GRAPH}[data-revision]").wait_for(timeout=SLOW)
    # a training program this size opens folded: every op drawn once its groups are open
    if view.locator(GRAPH).get_attribute("data-folded") == "true":
        revision = view.locator(GRAPH).get_attribute("data-render-ms")
        view.locator(f"{GRAPH} .fluid-nb-open-groups").click()
        page.wait_for_function("([el, r]) => el.dataset.renderMs !== r",
                               arg=[view.locator(GRAPH).element_handle(), revision])
    ops = view.locator(f"{GRAPH} svg g.node.op")
    before = {op_id: fill for op_id, _, fill in ops.evaluate_all(FILLS)}
    assert len(before) >= 25 and view.locator(".fluid-nb-memory-legend").count() == 0

    run_cell(page, 2)
    printed = json.loads(cell(page, 2).locator(".jp-OutputArea-output pre").first.inner_text())
    figures = printed["ops"]
    page.wait_for_function(
        "([sel, n]) => document.querySelectorAll(sel).length === n",
        arg=[f"{GRAPH} svg g.node.op.fluid-nb-mem", len(figures)], timeout=SLOW)

    # every op that allocated is filled by its bytes: distinct bytes, distinct fills, the
    # more bytes the darker; the others keep their fill by role
    after = ops.evaluate_all(FILLS)
    tinted = {op_id: (int(size), fill) for op_id, size, fill in after if size is not None}
    assert set(tinted) == set(figures)
    assert all(tinted[k][0] == figures[k]["bytes"] for k in figures)
    by_bytes = {}
    for size, fill in tinted.values():
        by_bytes.setdefault(size, set()).add(fill)
    assert all(len(fills) == 1 for fills in by_bytes.values()), by_bytes
    ranked = sorted((size, luminance(fills.pop())) for size, fills in by_bytes.items())
    assert len({shade for _, shade in ranked}) >= 6, ranked
    # never lighter for more bytes, and darker for half again as many (sizes a few
    # hundred bytes apart among megabytes may round to the same colour)
    for (small, light), (large, dark) in zip(ranked, ranked[1:]):
        assert dark <= light, ranked
    for small, light in ranked:
        assert all(dark < light for large, dark in ranked if large >= 1.5 * small), ranked
    for op_id, _, fill in after:
        if op_id not in figures:
            assert fill == before[op_id], op_id

    # the legend: the scale from the least to the most bytes an op allocated
    legend = view.locator(".fluid-nb-memory-legend")
    assert legend.locator(".fluid-nb-memory-legend-min").inner_text() == printed["min"]
    assert legend.locator(".fluid-nb-memory-legend-max").inner_text() == printed["max"]
    bar = legend.locator(".fluid-nb-memory-legend-bar")
    assert "linear-gradient" in bar.evaluate("b => getComputedStyle(b).backgroundImage")
    assert bar.bounding_box()["width"] > 50

    # the details of the op that allocated most say how much, in how many blocks, for whom
    top = max(figures, key=lambda k: figures[k]["bytes"])
    view.locator(f"{GRAPH} svg g.node[id='{top}']").click()
    memory_row = view.locator(".fluid-nb-program-details .fluid-nb-details-memory")
    memory_row.wait_for(timeout=SLOW)
    text = memory_row.inner_text()
    blocks = figures[top]["blocks"]
    assert text.startswith(f"allocates {printed['max']} in {blocks} block"), text
    assert figures[top]["vars"][0] in text
    assert memory_row.locator(".fluid-nb-memory-swatch").count() == 1
    screenshot(view, "program_view_memory_mlp_adam")

    # a forward op's details, zoomed in: the first fc's mul and the block of its output
    mul = next(k for k, f in figures.items() if f["label"] == "mul #0")
    view.locator(f"{GRAPH} svg g.node[id='{mul}']").click()
    page.wait_for_function(
        "id => document.querySelector('.fluid-nb-program-details')?.dataset.selected === id",
        arg=mul, timeout=SLOW)
    assert memory_row.inner_text() == "allocates 64.0 KiB in 1 block: fc_0.tmp_0"

    # cleared: no tint, no legend, the colours by role again
    run_cell(page, 3)
    page.wait_for_function(
        "sel => document.querySelectorAll(sel).length === 0",
        arg=f"{GRAPH} svg g.node.op.fluid-nb-mem", timeout=SLOW)
    assert {op_id: fill for op_id, _, fill in ops.evaluate_all(FILLS)} == before
    assert view.locator(".fluid-nb-memory-legend").count() == 0
    assert "allocates" not in view.locator(".fluid-nb-program-details").inner_text()
