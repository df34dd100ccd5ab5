"""The graph of a program people study reads at first sight: `fluid-nb render -o x.html` of a
ResNet-56 trained with Momentum, a 12-layer Transformer encoder with Adam and a DynamicRNN
classifier with Adam, opened at 1280x800, shows at least 15 labels at least 9 px tall,
fitted to the width, within a second of the page opening (two for a 5,000-op program).
Repeated structure is one box that opens on click, a search lands on the op that reads a
parameter, opening its groups, and hiding the backward pass hides the loop's gradient block.
"""
import subprocess
import sys

import pytest

from .conftest import SLOW, screenshot
from .study_models import STUDY_PROGRAMS, transformer_training

VIEWPORT = {"width": 1280, "height": 800}
PROGRAM = ".fluid-nb-program[data-first-paint-ms]"

#: what the page shows: its labels inside the view (SVG text, so searchable and read by
#: screen readers), their heights, the drawing's width against the view's, the page clock
FIRST_SIGHT = """() => {
  const el = document.querySelector('.fluid-nb-program');
  const graph = el.querySelector('.fluid-nb-program-graph');
  const view = graph.getBoundingClientRect();
  const labels = [...graph.querySelectorAll('svg text')]
    .map(t => t.getBoundingClientRect())
    .filter(r => r.height > 0 && r.bottom > view.top && r.top < view.bottom &&
                 r.right > view.left && r.left < view.right);
  const heights = labels.map(r => r.height).sort((a, b) => a - b);
  const svg = graph.querySelector('svg').getBoundingClientRect();
  return {
    labels: labels.length, median: heights[Math.floor(heights.length / 2)],
    drawnWidth: svg.width, viewWidth: graph.clientWidth,
    firstPaintMs: parseFloat(el.dataset.firstPaintMs), zoom: parseFloat(el.dataset.zoom),
    folded: el.dataset.folded, boxes: graph.querySelectorAll('g.node.group').length,
  };
}"""


def _render(lab, name, program):
    model = lab.root / f"{name}.pdmodel"
    model.write_bytes(program.desc.serialize_to_string())
    page = lab.root / f"{name}.html"
    subprocess.run([sys.executable, "-m", "fluid_nb.cli", "render", str(model), "-o", str(page)],
                   check=True, timeout=300, capture_output=True)
    return page.name


@pytest.fixture(scope="module")
def pages(lab):
    """The study programs (and a 5,000-op Transformer) as standalone pages in the lab's root."""
    made = {name: _render(lab, name, build()) for name, build in STUDY_PROGRAMS.items()}
    made["transformer72_adam"] = _render(lab, "transformer72_adam",
                                         transformer_training(n_layer=72))
    return made


def _open(page, lab, file_name):
    standalone = page.context.new_page()
    standalone.set_viewport_size(VIEWPORT)
    standalone.goto(f"{lab.base}/files/{file_name}?token={lab.token}")
    standalone.locator(PROGRAM).wait_for(timeout=SLOW)
    return standalone


@pytest.mark.parametrize("name, first_paint_limit_ms", [
    ("resnet56_momentum", 1000), ("transformer12_adam", 1000), ("dynamic_rnn_adam", 1000),
    ("transformer72_adam", 2000)])
def test_a_study_program_reads_at_first_sight(page, lab, pages, name, first_paint_limit_ms):
    standalone = _open(page, lab, pages[name])
    try:
        sight = standalone.evaluate(FIRST_SIGHT)
        print(f"\n{name}: {sight}")
        assert sight["folded"] == "true" and sight["boxes"] > 0, sight
        assert sight["labels"] >= 15, sight
        assert sight["median"] >= 9, sight
        assert sight["drawnWidth"] <= sight["viewWidth"] + 1, sight
        assert sight["firstPaintMs"] <= first_paint_limit_ms, sight
        screenshot(standalone, f"study_{name}_folded")
        # opened: the first series (or else the first folded group) of the forward pass
        box = standalone.locator("g.node.group.kind-series").first
        if not box.count():
            box = standalone.locator("g.node.group").first
        box.click()
        standalone.locator(".fluid-nb-program-crumbs button").nth(1).wait_for(timeout=SLOW)
        screenshot(standalone, f"study_{name}_opened")
    finally:
        standalone.close()


def test_a_repeated_block_opens_and_a_search_lands_on_a_parameters_op(page, lab, pages):
    standalone = _open(page, lab, pages["resnet56_momentum"])
    try:
        program = standalone.locator(PROGRAM)
        series = program.locator("g.node.group.kind-series", has_text="basic_block \u00d79").first
        assert series.count() == 1
        series.click()
        # open: a cluster of the nine runs, each a box of its own
        cluster = program.locator("g.cluster", has_text="basic_block \u00d79").first
        cluster.wait_for(timeout=SLOW)
        standalone.wait_for_function(
            "() => document.querySelectorAll('g.node.group.kind-call').length >= 9")
        runs = program.locator("g.node.group", has_text="basic_block")
        assert runs.count() >= 9

        # a parameter deep inside a folded stage: the search opens its groups and selects
        # the op reading it
        search = program.locator(".fluid-nb-program-search")
        search.fill("conv2d_40.w_0")
        search.press("Enter")
        selected = program.locator("g.node.op.fluid-nb-selected")
        selected.wait_for(timeout=SLOW)
        assert selected.count() == 1
        assert "conv2d" in selected.locator("text").first.text_content()
        inside = standalone.evaluate(
            "() => { const g = document.querySelector('.fluid-nb-program-graph')"
            ".getBoundingClientRect(); const r = document.querySelector("
            "'g.node.op.fluid-nb-selected').getBoundingClientRect();"
            " return r.top >= g.top && r.bottom <= g.bottom && r.left >= g.left"
            " && r.right <= g.right; }")
        assert inside
        crumbs = program.locator(".fluid-nb-program-crumbs").text_content()
        assert "stage" in crumbs and "basic_block" in crumbs, crumbs
        details = program.locator(".fluid-nb-program-details").text_content()
        assert "conv2d_40.w_0" in details
        screenshot(standalone, "study_resnet56_search_landed")

        # Escape closes the innermost open group around the selection: one level up
        opened = int(program.get_attribute("data-open-groups"))
        program.locator(".fluid-nb-program-graph").press("Escape")
        standalone.wait_for_function(
            f"() => +document.querySelector('.fluid-nb-program').dataset.openGroups < {opened}")

        # a variable's writers and readers light up, as ops or as the boxes holding them
        variable = program.locator("g.node.var").first
        variable.click()
        assert program.locator("g.node.fluid-nb-related").count() >= 1
    finally:
        standalone.close()


def test_hiding_the_backward_pass_hides_the_loops_gradient_block(page, lab, pages):
    standalone = _open(page, lab, pages["dynamic_rnn_adam"])
    try:
        program = standalone.locator(PROGRAM)
        # everything open, so the loop and its gradient block are drawn
        standalone.evaluate("() => document.querySelectorAll('g.node.group').length")
        handle = program.element_handle()
        revision = program.get_attribute("data-render-ms")
        program.locator(".fluid-nb-show-backward input").uncheck()
        standalone.wait_for_function(
            "([el, r]) => el.dataset.hiddenRoles === 'backward' && el.dataset.renderMs !== r",
            arg=[handle, revision])
        texts = " ".join(program.locator("svg text").all_text_contents())
        assert "while_grad" not in texts and "@GRAD" not in texts, texts
        assert "backward" not in [t.strip() for t in
                                  program.locator("g.cluster > text").all_text_contents()]
    finally:
        standalone.close()


def test_a_cell_result_opens_at_the_part_it_was_shown_at(page, lab):
    from pathlib import Path
    from .notebook_driver import cell, open_notebook, run_cell, write_notebook
    repo = Path(__file__).resolve().parents[2]
    cells = [f"import sys\nsys.path.insert(0, {str(repo)!r})\n"
             "from fluid_nb import viz\n"
             "from tests.browser.study_models import resnet_training\n"
             "viz.show(resnet_training(depth=20), reveal='conv2d_9.w_0', hide='optimize')"]
    open_notebook(page, write_notebook(lab, "show_at.ipynb", cells))
    run_cell(page, 0)
    program = cell(page, 0).locator(".fluid-nb-program[data-first-paint-ms]")
    program.wait_for(timeout=SLOW)
    selected = program.locator("g.node.op.fluid-nb-selected")
    selected.wait_for(timeout=SLOW)
    assert program.get_attribute("data-hidden-roles") == "optimize"
    crumbs = program.locator(".fluid-nb-program-crumbs").text_content()
    assert "basic_block" in crumbs, crumbs
    details = program.locator(".fluid-nb-program-details").text_content()
    assert "conv2d_9.w_0" in details
    screenshot(cell(page, 0), "study_resnet20_shown_at_a_weight")
