"""A table of the tensors in Paddle's parameter files, for reading them without a program.

Paddle saves parameters two ways: one combined file (``x.pdiparams``, ``__params__``) that
is the tensor records of the persistable variables one after another, sorted by name, with
no names in it; or a directory with one file per variable, named after it. ``read_params``
reads either; a combined file takes its names from the program beside it (``x.pdmodel``,
``__model__``) when there is one whose persistables match the records, else the records
are numbered. ``params_rows`` gives per tensor its dtype, shape, LoD, the min, max, mean
and standard deviation of its values and a 16-bin histogram; ``params_model`` joins them
with where the names came from, as the JSON the JupyterLab viewer of parameter files draws::

    {"format": "fluid-nb.params", "version": 1, "title": str, "kind": "combined" | "directory",
     "names_from": file name of the program that named the records | None,
     "bins": 16, "tensors": n, "values": n, "rows": params_rows(...)}

``params_text`` lays the rows out as the table ``fluid-nb show x.pdiparams`` prints.
"""
import os

import numpy as np

from ..errors import InvalidArgument, NotFound, expected
from ..proto import tensor_stream
from ..tensor.dtypes import VarType

PARAMS_FORMAT = "fluid-nb.params"
HISTOGRAM_BINS = 16
_PROGRAM_FILES = ("__model__",)
_COMBINED_NAMES = ("__params__",)


def is_params_path(path):
    """Whether ``path`` names parameters rather than a program: a ``.pdiparams`` file,
    ``__params__``, or a directory of per-variable files with no program file in it."""
    if str(path).endswith(".pdiparams") or os.path.basename(path) in _COMBINED_NAMES:
        return True
    if os.path.isdir(path):
        names = os.listdir(path)
        return bool(names) and not any(n in _PROGRAM_FILES or n.endswith(".pdmodel")
                                       for n in names)
    return False


def _program_beside(path):
    prefix = path[:-len(".pdiparams")] if path.endswith(".pdiparams") else None
    candidates = [prefix + ".pdmodel"] if prefix else []
    candidates.append(os.path.join(os.path.dirname(path) or ".", "__model__"))
    return next((c for c in candidates if os.path.isfile(c)), None)


def _persistable_names(program_path):
    from ..framework.program import Program
    with open(program_path, "rb") as f:
        program = Program.parse_from_string(f.read())
    saved = (VarType.LOD_TENSOR, VarType.SELECTED_ROWS)  # what save_vars writes
    return sorted({v.name for block in program.blocks for v in block.vars.values()
                   if v.persistable and v.type in saved})


def read_params(path):
    """``[(name, array, lod)]`` of a combined parameter file, or of a directory: its one
    combined file, else its per-variable files (a program file beside them is skipped)."""
    return _read_params(path)[0]


def _read_params(path):
    """``(records, kind, names_from)``: :func:`read_params`' records, ``"combined"`` or
    ``"directory"``, and the program file that named a combined file's records, or None."""
    if os.path.isdir(path):
        names = sorted(os.listdir(path))
        combined = [n for n in names if n.endswith(".pdiparams") or n in _COMBINED_NAMES]
        if len(combined) == 1:  # a model directory saved with one parameter file
            return _read_params(os.path.join(path, combined[0]))
        records = []
        for name in names:
            file = os.path.join(path, name)
            if not os.path.isfile(file) or name in _PROGRAM_FILES or name.endswith(".pdmodel"):
                continue
            with open(file, "rb") as f:
                array, lod = tensor_stream.read_one(f.read(), file)
            records.append((name, array, lod))
        if not records:
            raise NotFound(expected("params", f"parameter files in '{path}'",
                                    "one tensor file per variable", "an empty directory"))
        return records, "directory", None
    if not os.path.isfile(path):
        raise NotFound(expected("params", "a parameter file or directory", "an existing path",
                                repr(path)))
    with open(path, "rb") as f:
        records = tensor_stream.read_lod_tensors(f.read(), path)
    names = None
    program_path = _program_beside(path)
    if program_path is not None:
        try:
            found = _persistable_names(program_path)
        except (InvalidArgument, NotFound, OSError, ValueError):
            found = None  # an unreadable program only costs the names
        if found is not None and len(found) == len(records):
            names = found
    named_by = os.path.basename(program_path) if names is not None else None
    if names is None:
        names = [f"#{i}" for i in range(len(records))]
    return ([(name, array, lod) for name, (array, lod) in zip(names, records)], "combined",
            named_by)


def params_model(path, title=None):
    """The table of the parameters at ``path`` (a combined file or a directory, as
    :func:`read_params` reads them) as plain JSON (see the module's text). A damaged or
    foreign file is the typed error ``read_params`` raises, naming the file. Example::

        model = params_model("inference/model.pdiparams")
        [(r["name"], r["shape"]) for r in model["rows"]]   # [('fc_0.b_0', [16]), ...]
    """
    records, kind, named_by = _read_params(os.fspath(path))
    rows = params_rows(records)
    return {"format": PARAMS_FORMAT, "version": 1,
            "title": title if title is not None else os.path.basename(os.fspath(path)),
            "kind": kind, "names_from": named_by, "bins": HISTOGRAM_BINS,
            "tensors": len(rows), "values": sum(r["size"] for r in rows), "rows": rows}


def params_rows(records):
    """Per tensor: name, dtype, shape, lod, size, and for non-empty numeric tensors min,
    max, mean, std, ``histogram`` (counts over ``[min, max]`` in 16 equal bins: its
    ``histogram_range``, widened by half a unit each way when every value is the same) and
    ``non_finite`` (values left out of all of these: NaN and infinities)."""
    rows = []
    for name, array, lod in records:
        row = {"name": name, "dtype": str(array.dtype), "shape": list(array.shape),
               "lod": [list(level) for level in lod], "size": int(array.size),
               "min": None, "max": None, "mean": None, "std": None, "histogram": None,
               "histogram_range": None}
        if array.size and array.dtype.kind in "biuf":
            values = array.astype(np.float64).reshape(-1)
            finite = values[np.isfinite(values)]
            if finite.size:
                row.update(min=float(finite.min()), max=float(finite.max()),
                           mean=float(finite.mean()), std=float(finite.std()))
                low, high = row["min"], row["max"]
                if low == high:  # one value: a bin of width one around it
                    low, high = low - 0.5, high + 0.5
                counts, _ = np.histogram(finite, bins=HISTOGRAM_BINS, range=(low, high))
                row["histogram"] = [int(c) for c in counts]
                row["histogram_range"] = [low, high]
            row["non_finite"] = int(values.size - finite.size)
        rows.append(row)
    return rows


_BARS = " ▁▂▃▄▅▆▇█"


def sparkline(counts):
    """The histogram as one line of block characters (the tallest bin is a full block)."""
    if not counts:
        return ""
    top = max(counts)
    return "".join(_BARS[0 if c == 0 else max(1, round(8 * c / top))] for c in counts)


def params_text(rows, title=None):
    """The rows as an aligned text table, with a total line."""
    def number(value):
        return "" if value is None else format(value, ".4g")

    header = ("name", "dtype", "shape", "min", "max", "mean", "std", "histogram")
    table = [header] + [
        (r["name"], r["dtype"], "x".join(map(str, r["shape"])) or "scalar", number(r["min"]),
         number(r["max"]), number(r["mean"]), number(r["std"]),
         sparkline(r["histogram"]) + (f" ({r['non_finite']} not finite)"
                                      if r.get("non_finite") else ""))
        for r in rows]
    widths = [max(len(line[k]) for line in table) for k in range(len(header))]
    lines = [title] if title else []
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip()
              for line in table]
    total = sum(r["size"] for r in rows)
    lines.append(f"{len(rows)} tensors, {total:,} values")
    return "\n".join(lines)
