"""The README's "Live mode in Jupyter" cells run as written, in a fresh IPython shell with
nothing defined beforehand."""
import pathlib
import re

import fluid_nb as fluid
from fluid_nb.live import session as live_session_module

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def _live_mode_cells():
    text = README.read_text()
    section = text.split("## Live mode in Jupyter", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    first_magic = next(i for i, block in enumerate(blocks) if block.startswith("%%fluid"))
    return blocks[:first_magic + 1]  # the set-up cells and the first live cell


def test_readme_live_cells_run_as_written(shell, monkeypatch):
    cells = _live_mode_cells()
    assert cells[0].startswith("%load_ext fluid_nb") and cells[-1].startswith("%%fluid")
    for name in ("np", "x_sample"):  # the README must define what its cells use
        shell.user_ns.pop(name, None)
    # the cells use the default session: give it fresh programs and a fresh scope
    monkeypatch.setattr(live_session_module, "_sessions", {})
    with fluid.program_guard(fluid.Program(), fluid.Program()), \
            fluid.scope_guard(fluid.Scope()):
        for cell in cells:
            result = shell.run_cell(cell)
            assert result.success, (cell, result.error_before_exec or result.error_in_exec)
        rows = shell.user_ns["x_sample"].shape[0]
        assert shell.user_ns["hidden"].numpy().shape == (rows, 16)
        assert shell.user_ns["y_predict"].numpy().shape == (rows, 1)
