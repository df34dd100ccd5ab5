"""The memory view in a real JupyterLab: the MLP training step's arena as chunk bars of
blocks coloured by variable with a legend entry per colour, the used-bytes timeline with
the run's peak marked and named apart from the arena's peak in the head (hovering an op
shows it and the variables alive), the variable table, and a live cell's allocations."""
import re

from .conftest import SLOW, screenshot
from .notebook_driver import cell, open_notebook, run_cell, write_notebook

MLP = """import numpy as np
import fluid_nb as fluid
from fluid_nb.widgets import MemoryView

fluid.set_flags({"FLAGS_initial_cpu_memory_in_mb": 17})   # 16 MiB chunks: easy to read
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
view = MemoryView(place, scope)
view.record(exe.run, main, feed=feed, fetch_list=[loss], scope=scope)
print('peak', view.peak, 'during', view.peak_op)
view"""

LIVE = """with fluid.live(scope=fluid.Scope()):
    live_view = MemoryView()
    ones = fluid.layers.fill_constant([256, 256], 'float32', 1.0)
    doubled = fluid.layers.relu(ones * 2.0)
live_view"""


def test_memory_view_draws_chunks_timeline_with_peak_and_table(page, lab):
    # the page is shared: a pointer left where an earlier test clicked could land on the
    # new chart and move its hover off the peak
    page.mouse.move(0, 0)
    open_notebook(page, write_notebook(lab, "memory_view.ipynb", [MLP, LIVE]))
    run_cell(page, 0)
    view = cell(page, 0).locator(".fluid-nb-memory-view")
    view.wait_for(timeout=SLOW)
    printed = cell(page, 0).locator(".jp-OutputArea-output pre").first.inner_text()
    peak, peak_op = re.search(r"peak (\d+) during (.+)", printed).groups()
    assert re.fullmatch(r"\w+ #\d+", peak_op), printed

    # the chunk bar: blocks named by the scope's variables, coloured, with free space light
    bar = view.locator("svg.fluid-nb-memory-chunk")
    assert bar.count() >= 1
    states = bar.first.locator("rect.fluid-nb-memory-block").evaluate_all(
        "rects => rects.map(r => [r.dataset.state, r.getAttribute('fill'),"
        " r.getBoundingClientRect().width])")
    by_state = {state: (fill, width) for state, fill, width in states}
    assert {"fc_0.w_0", "fc_0.w_0_moment1_0", "free"} <= set(by_state), sorted(by_state)
    assert by_state["free"][0] == "#eef1f4"
    assert by_state["fc_0.w_0"][0] != by_state["fc_0.w_0_moment1_0"][0]
    assert by_state["fc_0.w_0"][1] > 10  # a 1 MiB block is a visible part of the bar

    # the legend: an entry for every colour the bars fill with, grey and free space included
    fills = set(view.locator("svg.fluid-nb-memory-chunk rect").evaluate_all(
        "rects => rects.map(r => r.getAttribute('fill'))"))
    legend = view.locator(".fluid-nb-memory-legend .fluid-nb-memory-legend-item")
    entries = dict(legend.evaluate_all(
        "items => items.map(i => [i.dataset.colour, i.dataset.state])"))
    assert fills <= set(entries), sorted(fills - set(entries))
    assert {"#eef1f4", "#9aa4ad"} <= fills  # free space, and blocks no variable holds
    assert entries["#9aa4ad"] == "used" and entries["#eef1f4"] == "free"
    assert by_state["fc_0.w_0"][0] in entries and entries[by_state["fc_0.w_0"][0]] == "fc_0.w_0"
    grey = view.locator(".fluid-nb-memory-legend-item[data-state='used']").inner_text()
    assert "no variable" in grey, grey

    # the timeline: a line, the peak marked and labelled with its op
    chart = view.locator("svg.fluid-nb-memory-timeline")
    assert chart.locator("polyline.fluid-nb-memory-line").count() == 1
    assert chart.locator("circle.fluid-nb-memory-peak").count() == 1
    label = chart.locator("text.fluid-nb-memory-peak-label").text_content()
    assert label.startswith("run peak ") and label.endswith(peak_op), label
    # the head names both peaks, the run's in the timeline's words
    head = view.locator(".fluid-nb-head").first.inner_text()
    assert label in head and re.search(r"arena peak since start [\d.]+ [KMG]iB", head), head
    assert head.count("peak") == 2, head
    caption = view.locator(".fluid-nb-memory-timeline-box .fluid-nb-memory-caption").inner_text()
    assert label in caption, caption
    hover = view.locator(".fluid-nb-memory-hover")
    assert peak_op in hover.inner_text()  # the peak's op until the pointer moves
    columns = chart.locator("rect.fluid-nb-memory-column")
    assert columns.count() >= 20
    columns.nth(1).hover()
    first_op = hover.locator(".fluid-nb-memory-hover-op").inner_text()
    assert first_op.startswith("2. ") and "after" in first_op, first_op
    assert "named variable(s)" in hover.inner_text()

    # the table: each variable with its bytes, block and the op that allocated it
    rows = view.locator("table.fluid-nb-memory-vars tbody tr")
    table = {r[0]: r for r in (row.split("\t") for row in rows.all_inner_texts())}
    assert table["fc_0.w_0"][2].strip() == "1.0 MiB"  # 784 x 200 float32 in a 1 MiB block
    assert table["fc_0.w_0"][5].strip() == "yes"      # held in the arena now
    assert table["fc_0.tmp_0"][1].strip() == str(64 * 200 * 4)
    assert table["fc_0.tmp_0"][3].strip().startswith("mul #")
    chart.locator("circle.fluid-nb-memory-peak").hover()
    screenshot(view, "memory_view_mlp_adam")

    # a live cell's allocations become the timeline of a view that follows the session
    run_cell(page, 1)
    live = cell(page, 1).locator(".fluid-nb-memory-view")
    live.wait_for(timeout=SLOW)
    live_chart = live.locator("svg.fluid-nb-memory-timeline")
    live_chart.wait_for(timeout=SLOW)
    assert live_chart.locator("rect.fluid-nb-memory-column").count() == 3
    names = live.locator("table.fluid-nb-memory-vars td:first-child").all_inner_texts()
    assert any(name.strip().startswith("fill_constant") for name in names), names
    screenshot(cell(page, 1), "memory_view_live_cell")
