"""Write and execute the book chapter notebooks 11-15 under notebooks/ from the cell lists in
``tools/book_notebooks/``.

Unlike 02-04 these are stored executed, outputs included (the graph of each training
program is part of what they show), so the script runs each notebook in a fresh kernel
before writing it::

    python tools/make_book_notebooks.py                 # all five
    python tools/make_book_notebooks.py 11 14           # the ones whose number is given

A cell is ``("md", text)`` or ``("code", id, source)``; markdown cells are numbered
``md-<k>``. ``tests/notebooks/test_book_chapters.py`` finds a cell's output by its id.
"""
import argparse
import importlib.util
import sys
from pathlib import Path

import nbclient
import nbformat

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "notebooks"
CELL_DIR = Path(__file__).resolve().parent / "book_notebooks"

KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}

#: notebook number -> (file name, module in tools/book_notebooks holding its CELLS)
NOTEBOOKS = {
    "11": ("11_fit_a_line.ipynb", "fit_a_line"),
    "12": ("12_recognize_digits.ipynb", "recognize_digits"),
    "13": ("13_image_classification.ipynb", "image_classification"),
    "14": ("14_recommender_system.ipynb", "recommender_system"),
    "15": ("15_machine_translation.ipynb", "machine_translation"),
}


def cells_of(module_name):
    spec = importlib.util.spec_from_file_location(module_name, CELL_DIR / f"{module_name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CELLS


def build(cells):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    markdown = 0
    for cell in cells:
        if cell[0] == "md":
            markdown += 1
            nb.cells.append(nbformat.v4.new_markdown_cell(cell[1], id=f"md-{markdown}"))
        else:
            _, cell_id, source = cell
            nb.cells.append(nbformat.v4.new_code_cell(source, id=cell_id))
    return nb


def execute(nb):
    """Run ``nb`` top to bottom in a fresh kernel (from the repository root); a cell that
    raises stops the run with the error."""
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=300,
                                     record_timing=False,
                                     resources={"metadata": {"path": str(ROOT)}})
    client.execute()
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = _joined_streams(cell.outputs)
    return nb


def _joined_streams(outputs):
    """``outputs`` with each run of stdout (or stderr) pieces as one output: how a print is
    cut into messages depends on timing, and the stored file should not."""
    joined = []
    for output in outputs:
        if (output.output_type == "stream" and joined
                and joined[-1].output_type == "stream" and joined[-1].name == output.name):
            joined[-1].text += output.text
        else:
            joined.append(output)
    return joined


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("numbers", nargs="*", help=f"some of {sorted(NOTEBOOKS)} "
                        "(default: all)")
    args = parser.parse_args(argv)
    unknown = [n for n in args.numbers if n not in NOTEBOOKS]
    if unknown:
        parser.error(f"no notebook numbered {unknown}")
    for number in args.numbers or NOTEBOOKS:
        name, module_name = NOTEBOOKS[number]
        nb = execute(build(cells_of(module_name)))
        path = NOTEBOOK_DIR / name
        nbformat.write(nb, path)
        print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
