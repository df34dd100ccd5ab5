"""Driving notebooks in the Lab page: write one, open it, run its cells one by one."""
import nbformat

from .conftest import SLOW


def write_notebook(lab, name, cells):
    """Write a notebook of code cells into the lab's root folder."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, lab.root / name)
    return name


def open_notebook(page, name):
    """Open ``name`` in Lab and wait until its kernel is ready."""
    page.evaluate("async (path) => { await window.jupyterapp.commands.execute("
                  "'docmanager:open', {path}); }", name)
    page.wait_for_function(
        "(path) => { const w = window.jupyterapp.shell.currentWidget;"
        " return w && w.context && w.context.path === path && w.sessionContext; }",
        arg=name, timeout=SLOW)
    page.evaluate("async () => { const nb = window.jupyterapp.shell.currentWidget;"
                  " await nb.context.ready; await nb.sessionContext.ready;"
                  " while (!nb.sessionContext.session || !nb.sessionContext.session.kernel)"
                  "   await new Promise(r => setTimeout(r, 100)); }")
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=SLOW)


def run_cell(page, index):
    """Run cell ``index`` of the current notebook and wait until the kernel has finished it;
    fail with the cell's error text if it raised."""
    page.evaluate(
        "async (i) => { const app = window.jupyterapp; const nb = app.shell.currentWidget;"
        " nb.content.activeCellIndex = i; await app.commands.execute('notebook:run-cell'); }",
        index)
    page.wait_for_function(
        "(i) => { const nb = window.jupyterapp.shell.currentWidget;"
        " const cell = nb.content.widgets[i];"
        " return cell.model.executionCount !== null"
        "   && nb.sessionContext.session.kernel.status === 'idle'; }",
        arg=index, timeout=SLOW)
    errors = page.evaluate(
        "(i) => window.jupyterapp.shell.currentWidget.content.widgets[i].model.outputs.toJSON()"
        "  .filter(o => o.output_type === 'error').map(o => o.ename + ': ' + o.evalue)", index)
    if errors:
        raise AssertionError(f"cell {index} raised: {errors}")


def cell(page, index):
    """The locator of cell ``index`` of the current notebook."""
    return page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell").nth(index)
