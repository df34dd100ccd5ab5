"""A Paddle program file opened from JupyterLab's file browser shows as a program graph."""
import shutil
import time
from pathlib import Path

from .conftest import SLOW, screenshot

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "paddle" / "training" / \
    "fit_a_line_sgd" / "main.pdmodel"
PROGRAM_API = "fluid-nb/api/program"
VIEWER = "Fluid program graph"


def _default_factory(page, path):
    return page.evaluate("path => window.jupyterapp.docRegistry.defaultWidgetFactory(path).name",
                         path)


def _main_area_text(page):
    """What the main area shows, for a failure message."""
    return page.evaluate("() => { const w = window.jupyterapp.shell.currentWidget;"
                         " return w ? `${w.node.className}: ${w.node.innerText.slice(0, 500)}`"
                         " : 'no current widget'; }")


def _late(route):
    time.sleep(1.5)
    route.continue_()


def test_program_files_open_with_the_program_viewer_by_default(page, lab):
    # what the file browser's double-click opens: the default factory of the file's type
    assert _default_factory(page, "fit_a_line.pdmodel") == VIEWER
    assert _default_factory(page, "model_dir/__model__") == VIEWER
    assert _default_factory(page, "exported.onnx") == VIEWER
    assert _default_factory(page, "notes.txt") != VIEWER


def test_pdmodel_opens_from_the_file_browser_as_a_graph(page, lab):
    shutil.copy(FIXTURE, lab.root / "fit_a_line.pdmodel")
    program_requests = []

    def count_program_requests(request):
        if PROGRAM_API in request.url:
            program_requests.append(request.url)
    page.on("request", count_program_requests)
    # the file's content arrives late, as on a slow machine: the tab exists before it does
    page.route("**/api/contents/fit_a_line.pdmodel?*", _late)
    try:
        # select the file in the file browser and open it with the browser's own Open
        # command (what its double-click and context menu do: the default viewer)
        page.evaluate("async () => { const app = window.jupyterapp;"
                      " await app.commands.execute('filebrowser:activate');"
                      " await app.commands.execute('filebrowser:refresh'); }")
        item = page.locator(".jp-DirListing-item", has_text="fit_a_line.pdmodel")
        item.click()
        page.locator(".jp-DirListing-item.jp-mod-selected",
                     has_text="fit_a_line.pdmodel").wait_for(timeout=SLOW)
        page.evaluate("async () => {"
                      " await window.jupyterapp.commands.execute('filebrowser:open'); }")
        graph = page.locator(".fluid-nb-program-file .fluid-nb-program[data-nodes]")
        error = page.locator(".fluid-nb-program-file .fluid-nb-program-error")
        shown = graph.or_(error).first
        try:
            shown.wait_for(state="attached", timeout=SLOW)
        except Exception as err:
            raise AssertionError(f"no graph and no error in {SLOW} ms; the main area shows "
                                 f"{_main_area_text(page)!r}\nlab log:\n{lab.log_tail()}") \
                from err
        assert error.count() == 0, f"{error.first.text_content()}\nlab log:\n{lab.log_tail()}"
        # the graph stays: nothing loads the file a second time and replaces it
        page.wait_for_timeout(1_000)
        assert error.count() == 0, f"{error.first.text_content()}\nlab log:\n{lab.log_tail()}"
        assert graph.count() == 1
        assert len(program_requests) == 1, program_requests
    finally:
        page.unroute("**/api/contents/fit_a_line.pdmodel?*", _late)
        page.remove_listener("request", count_program_requests)
    tab = page.locator(".lm-TabBar-tab.lm-mod-current", has_text="fit_a_line.pdmodel")
    assert tab.count() == 1
    nodes = page.locator(".fluid-nb-program-file svg g.node")
    assert nodes.count() == int(graph.get_attribute("data-nodes")) > 10
    texts = " ".join(nodes.all_text_contents())
    assert "mul" in texts and "sgd" in texts
    graph.wait_for(timeout=SLOW)  # visible, for the screenshot
    screenshot(page, "program_file_viewer")


def test_an_onnx_model_opens_as_a_graph_of_its_nodes(page, lab):
    """An exported model, opened from the file browser, is drawn by the same viewer."""
    import fluid_nb as fluid
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        image = fluid.layers.data(name="image", shape=[1, 28, 28], dtype="float32")
        conv = fluid.nets.simple_img_conv_pool(image, num_filters=4, filter_size=5,
                                               pool_size=2, pool_stride=2, act="relu")
        out = fluid.layers.fc(conv, size=10, act="softmax")
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    fluid.onnx.export(main, lab.root / "lenet.onnx", feed=["image"], fetch=[out], scope=scope,
                      strict=True)
    page.evaluate("async () => { const app = window.jupyterapp;"
                  " await app.commands.execute('filebrowser:refresh');"
                  " await app.commands.execute('docmanager:open', {path: 'lenet.onnx'}); }")
    graph = page.locator(".fluid-nb-program-file .fluid-nb-program[data-nodes]")
    error = page.locator(".fluid-nb-program-file .fluid-nb-program-error")
    try:
        graph.or_(error).first.wait_for(state="attached", timeout=SLOW)
    except Exception as err:
        raise AssertionError(f"no graph and no error in {SLOW} ms; the main area shows "
                             f"{_main_area_text(page)!r}\nlab log:\n{lab.log_tail()}") from err
    assert error.count() == 0, f"{error.first.text_content()}\nlab log:\n{lab.log_tail()}"
    nodes = page.locator(".fluid-nb-program-file svg g.node")
    texts = " ".join(nodes.all_text_contents())
    assert "Conv" in texts and "MaxPool" in texts and "Softmax" in texts
    graph.wait_for(timeout=SLOW)
    screenshot(page, "onnx_model_viewer")
