"""A Paddle program file opened from JupyterLab's file browser shows as a program graph."""
import shutil
from pathlib import Path

from .conftest import SLOW, screenshot

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "paddle" / "training" / \
    "fit_a_line_sgd" / "main.pdmodel"


def test_pdmodel_opens_from_the_file_browser_as_a_graph(page, lab):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    shutil.copy(FIXTURE, lab.root / "fit_a_line.pdmodel")
    page.evaluate("async () => { const app = window.jupyterapp;"
                  " await app.commands.execute('filebrowser:activate');"
                  " await app.commands.execute('filebrowser:refresh'); }")
    item = page.locator(".jp-DirListing-item", has_text="fit_a_line.pdmodel")
    tab = page.locator(".lm-TabBar-tab", has_text="fit_a_line.pdmodel")
    for attempt in range(2):  # the listing may redraw under the first double-click
        item.wait_for(timeout=SLOW)
        item.dblclick()
        try:
            tab.wait_for(timeout=15_000)
            break
        except PlaywrightTimeout:
            if attempt:
                raise
    graph = page.locator(".fluid-nb-program-file .fluid-nb-program[data-nodes]")
    graph.wait_for(timeout=SLOW)
    nodes = page.locator(".fluid-nb-program-file svg g.node")
    assert nodes.count() == int(graph.get_attribute("data-nodes")) > 10
    texts = " ".join(nodes.all_text_contents())
    assert "mul" in texts and "sgd" in texts
    screenshot(page, "program_file_viewer")
