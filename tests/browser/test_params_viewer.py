"""A Paddle parameter file opened from JupyterLab's file browser shows as a table of its
tensors (name, dtype, shape, statistics, a histogram per tensor), and a damaged one as one
clear line in the tab."""
import shutil
from pathlib import Path

from fluid_nb.viz.params_table import params_model

from .conftest import SLOW, screenshot

MLP = Path(__file__).resolve().parents[1] / "fixtures" / "paddle" / "inference" / "mlp" / \
    "combined"
VIEWER = "Fluid parameters table"


def _main_area_text(page):
    """What the main area shows, for a failure message."""
    return page.evaluate("() => { const w = window.jupyterapp.shell.currentWidget;"
                         " return w ? `${w.node.className}: ${w.node.innerText.slice(0, 500)}`"
                         " : 'no current widget'; }")


def _shown(page, lab, what):
    """The table or the error of the current parameters tab, once one of them is there."""
    view = page.locator(".fluid-nb-params-file .fluid-nb-params-view")
    error = page.locator(".fluid-nb-params-file .fluid-nb-params-error")
    try:
        view.or_(error).first.wait_for(state="attached", timeout=SLOW)
    except Exception as err:
        raise AssertionError(f"{what}: no table and no error in {SLOW} ms; the main area shows "
                             f"{_main_area_text(page)!r}\nlab log:\n{lab.log_tail()}") from err
    return view, error


def test_parameter_files_open_with_the_table_by_default(page, lab):
    for path in ("model.pdiparams", "inference/__params__"):
        name = page.evaluate(
            "path => window.jupyterapp.docRegistry.defaultWidgetFactory(path).name", path)
        assert name == VIEWER, (path, name)


def test_pdiparams_opens_from_the_file_browser_as_a_table_of_its_tensors(page, lab):
    folder = lab.root / "mlp"
    folder.mkdir(exist_ok=True)
    for name in ("model.pdmodel", "model.pdiparams"):
        shutil.copy(MLP / name, folder / name)
    expected = params_model(folder / "model.pdiparams")
    # double-click the file in the file browser, as a user does
    page.evaluate("async () => { const app = window.jupyterapp;"
                  " await app.commands.execute('filebrowser:activate');"
                  " await app.commands.execute('filebrowser:go-to-path', {path: 'mlp'}); }")
    page.locator(".jp-DirListing-item", has_text="model.pdiparams").dblclick()
    view, error = _shown(page, lab, "model.pdiparams")
    assert error.count() == 0, f"{error.first.text_content()}\nlab log:\n{lab.log_tail()}"
    tab = page.locator(".lm-TabBar-tab.lm-mod-current", has_text="model.pdiparams")
    assert tab.count() == 1

    head = view.locator(".fluid-nb-params-head").inner_text()
    assert "6 tensors" in head and "484 values" in head and "model.pdmodel" in head, head
    rows = view.locator("table.fluid-nb-params-table tbody tr")
    assert rows.evaluate_all("rows => rows.map(r => r.dataset.name)") == \
        [row["name"] for row in expected["rows"]]
    for k, row in enumerate(expected["rows"]):
        cells = dict(rows.nth(k).locator("td").evaluate_all(
            "cells => cells.map(c => [c.dataset.column, c.innerText.trim()])"))
        assert cells["dtype"] == row["dtype"] == "float32"
        assert cells["shape"] == " × ".join(map(str, row["shape"])), cells
        for column in ("min", "max", "mean", "std"):  # the CLI's numbers, to the digit
            assert cells[column] == format(row[column], ".4g"), (row["name"], column, cells)
        bars = rows.nth(k).locator("svg.fluid-nb-params-histogram rect.fluid-nb-params-bar")
        assert bars.evaluate_all("bars => bars.map(b => Number(b.dataset.count))") == \
            row["histogram"]
        heights = bars.evaluate_all("bars => bars.map(b => Number(b.getAttribute('height')))")
        tallest = max(range(len(heights)), key=heights.__getitem__)
        assert row["histogram"][tallest] == max(row["histogram"])

    # the name filter keeps the matching rows
    view.locator("input.fluid-nb-params-filter").fill("w_0")
    visible = [r for r in rows.evaluate_all("rows => rows.filter(r => !r.hidden)"
                                            ".map(r => r.dataset.name)")]
    assert visible == ["fc_0.w_0", "fc_1.w_0", "fc_2.w_0"]
    view.locator("input.fluid-nb-params-filter").fill("")
    screenshot(page, "params_file_viewer")


def test_a_damaged_parameter_file_shows_one_clear_line(page, lab):
    (lab.root / "damaged.pdiparams").write_bytes((MLP / "model.pdiparams").read_bytes()[:-7])
    page.evaluate("async () => { const app = window.jupyterapp;"
                  " await app.commands.execute('filebrowser:refresh');"
                  " await app.commands.execute('docmanager:open', {path: 'damaged.pdiparams'}); }")
    view, error = _shown(page, lab, "damaged.pdiparams")
    assert view.count() == 0
    message = error.inner_text()
    assert message.startswith("Cannot show damaged.pdiparams: ") and "damaged.pdiparams" in \
        message.partition(": ")[2], message
    assert "Traceback" not in message and "UTF-8" not in message, message


def test_a_folder_of_parameter_files_opens_as_one_table_from_its_context_menu(page, lab):
    """Fluid 1.x's ``save_params`` writes one file per parameter, with no extension: the
    folder, not a file, is what to open."""
    import fluid_nb as fluid
    folder = lab.root / "saved_params"
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        fluid.layers.fc(fluid.data(name="x", shape=[-1, 4], dtype="float32"), 3)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    with fluid.scope_guard(scope):
        fluid.io.save_params(exe, str(folder), main)
    expected = params_model(folder)
    page.evaluate("async () => { const app = window.jupyterapp;"
                  " await app.commands.execute('filebrowser:activate');"
                  " await app.commands.execute('filebrowser:refresh'); }")
    item = page.locator(".jp-DirListing-item[data-isdir='true']", has_text="saved_params")
    item.click(button="right")
    page.locator(".lm-Menu-itemLabel", has_text="Open as Parameters Table").click()
    view, error = _shown(page, lab, "saved_params")
    assert error.count() == 0, error.first.text_content()
    rows = view.locator("table.fluid-nb-params-table tbody tr")
    assert rows.evaluate_all("rows => rows.map(r => r.dataset.name)") == \
        [row["name"] for row in expected["rows"]]
    assert len(expected["rows"]) == 2  # the fc's bias and weight
    tab = page.locator(".lm-TabBar-tab.lm-mod-current", has_text="saved_params")
    assert tab.count() == 1
    screenshot(page, "params_folder_viewer")
