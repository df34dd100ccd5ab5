"""The LoD tensor model: a tensor's sequences as nested boxes, for a view to draw.

``lod_model(value)`` turns a LoDTensor (or a live Variable, or an ``(array, lod)`` pair, or a
plain array) into a JSON-serialisable dict (MIME-free; the widgets and the standalone viewer
render it)::

    {"format": "fluid-nb.lod", "version": 1, "name": str | None,
     "initialized": bool, "shape": [int], "dtype": str | None, "place": str | None,
     "bytes": int, "rows": int,
     "levels": [{"level": l, "count": n, "offsets": [n + 1 ints], "lengths": [n ints],
                 "row_offsets": [n + 1 ints], "empty": [indices of length-0 sequences],
                 "truncated": bool}],
     "sequences": [node], "sequences_truncated": bool,
     "data": {"rows": [{"row": r, "sequence": i | None, "path": [i0, i1, ...],
                        "values": [numbers]}],
              "shown": k, "total": rows, "truncated": bool,
              "max_rows": int, "max_values": int, "values_truncated": bool}}

    node = {"level": l, "index": i, "start": a, "end": b, "length": b - a, "empty": a == b,
            "rows": [first row, end row], "children": [node of level l + 1, ...]}

Invariants (pinned by the tests):

- ``levels[l]["lengths"][i] == offsets[i + 1] - offsets[i]``: offsets and lengths side by side,
  the levels' ``offsets`` are the tensor's very LoD (when no level is ``truncated``).
  ``row_offsets`` are the same boundaries counted in rows, the form of the LoD figures in
  Fluid's early design documents (each level indexing rows directly):
  :func:`lod_from_row_offsets` turns that form into the offset LoD used here.
- A node of level ``l`` spans entries ``start..end`` of the level below (of rows at the last
  level); ``children`` are exactly those nested sequences, and ``rows`` the row range the
  node covers. Empty sequences are present with ``empty: true`` and a zero-width row range.
  The tree holds the sequences that hold the shown rows (all of them, trailing empty ones
  included, when every row is shown); ``sequences_truncated`` says when some are left out.
- Each shown data row carries ``sequence``, the index of the top-level (level 0) sequence
  holding it, and ``path``, its sequence index at every level; a front end colours by
  ``sequence``.
- A tensor without LoD has no sequences: ``levels == []``, ``sequences == []`` and each row's
  ``sequence`` is None (the rows are not one implicit sequence: Fluid ops treat a tensor
  without LoD as rows, not as a sequence).
- A 0-d tensor shows one row holding its one value (``rows == 1``).

Caps keep the model small whatever the tensor's size: the first ``max_rows`` rows (default
32), the first ``max_values`` numbers of each row (default 16), at most ``max_sequences``
entries per LoD level (default 1000), and tree nodes only for the shown rows (at most
``max_sequences``); each cap sets a ``truncated`` flag. Only the shown rows are copied to the host (a CuPy tensor is not copied
whole). Non-finite floats are sent as the strings "nan", "inf", "-inf" (JSON has no NaN).
"""
import math
from bisect import bisect_right

import numpy as np

from ..errors import InvalidArgument, InvalidType
from ..tensor.place import place_of
from ..tensor.tensor import LoDTensor, check_lod, lod_from_row_offsets, offsets_to_lengths

__all__ = ["lod_model", "lod_from_row_offsets", "json_value", "host_rows", "preview_values",
           "row_starts"]

FORMAT = "fluid-nb.lod"
VERSION = 1


# --- JSON-safe numbers, used by every state model ----------------------------------------------
def json_value(x):
    """A Python number (or bool, or string for NaN/inf/complex) for a NumPy scalar."""
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        f = float(x)
        if math.isnan(f):
            return "nan"
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return f
    if isinstance(x, (complex, np.complexfloating)):
        return str(complex(x))
    return str(x)


def host_rows(array, count):
    """The first ``count`` rows of ``array`` as a NumPy array (only those rows leave a GPU)."""
    part = array[:count] if array.ndim else array
    return part if isinstance(part, np.ndarray) else part.get()


def preview_values(array, limit):
    """(the first ``limit`` numbers of ``array`` in row-major order as JSON values, whether
    there were more)."""
    if array is None:
        return [], False
    size = int(array.size)
    if isinstance(array, np.ndarray):
        head = array.flat[:limit] if array.ndim else array.reshape(1)
    else:  # CuPy: copy only the head to the host
        head = array.reshape(-1)[:limit].get()
    return [json_value(x) for x in np.asarray(head).reshape(-1)], size > limit


# --- the model ----------------------------------------------------------------------------------
def lod_model(value, max_rows=32, max_values=16, max_sequences=1000, name=None):
    """The nested-sequence model of ``value`` (see the module docstring for its layout).

    ``value``: a LoDTensor, a Variable with a live value, an ``(array, lod)`` pair (``lod``
    as offsets, e.g. ``[[0, 5, 8, 10, 14]]``) or an array. Example::

        t = fluid.create_lod_tensor(np.arange(14).reshape(14, 1), [[5, 3, 2, 4]], place)
        m = lod_model(t)
        m["levels"][0]["lengths"]            # [5, 3, 2, 4]
        m["data"]["rows"][6]["sequence"]     # 1 (row 6 lies in the second sequence)
    """
    for cap, number in (("max_rows", max_rows), ("max_values", max_values),
                        ("max_sequences", max_sequences)):
        if not isinstance(number, (int, np.integer)) or number < 0:
            raise InvalidArgument(f"lod_model: {cap} expected an int >= 0, but received "
                                  f"{number!r}")
    tensor, name = _as_tensor(value, name)
    array, lod = tensor.array, tensor.lod()
    rows = _row_count(array)
    if lod:
        check_lod(lod, rows if array is not None else None, where=f"lod_model({name or 'value'})")
    starts = [row_starts(lod, level) for level in range(len(lod))]
    return {
        "format": FORMAT, "version": VERSION, "name": name,
        "initialized": array is not None,
        "shape": [int(d) for d in array.shape] if array is not None else [],
        "dtype": str(array.dtype) if array is not None else None,
        "place": repr(place_of(array)) if array is not None else None,
        "bytes": int(array.nbytes) if array is not None else 0,
        "rows": rows,
        "levels": [_level(level, offsets, starts[level], max_sequences)
                   for level, offsets in enumerate(lod)],
        **_tree(lod, starts, min(rows, max_rows), max_sequences),
        "data": _data(array, rows, starts, max_rows, max_values),
    }


def _as_tensor(value, name):
    from ..framework.program import Variable  # framework never imports viz; no cycle
    if isinstance(value, Variable):
        name = name if name is not None else value.name
        value = value.value  # the live value (raises PreconditionNotMet outside live mode)
    if isinstance(value, LoDTensor):
        return value, name
    if isinstance(value, tuple) and len(value) == 2:
        array, lod = value
        if not isinstance(lod, (list, tuple)) or \
                not all(isinstance(level, (list, tuple)) for level in lod):
            raise InvalidArgument(f"lod_model: (array, lod) expected lod as a list of offset "
                                  f"lists, but received {lod!r}")
        tensor = LoDTensor(_array(array))
        tensor.set_lod(lod)  # checks the LoD against the rows
        return tensor, name
    if isinstance(value, np.ndarray) or hasattr(value, "__cuda_array_interface__"):
        return LoDTensor(value), name
    if isinstance(value, (list, int, float, np.generic)):
        return LoDTensor(np.asarray(value)), name
    raise InvalidType(f"lod_model: value expected a LoDTensor, a live Variable, an "
                      f"(array, lod) pair or an array, but received {type(value).__name__}")


def _array(array):
    if isinstance(array, LoDTensor):
        return array.array
    return array if hasattr(array, "__cuda_array_interface__") else np.asarray(array)


def _row_count(array):
    if array is None:
        return 0
    return int(array.shape[0]) if array.ndim else 1


def row_starts(lod, level):
    """The first row of each sequence of ``level`` of ``lod`` (plus the end row): the
    level's offsets composed down through the finer levels."""
    offsets = lod[level]
    for finer in lod[level + 1:]:
        offsets = [finer[k] for k in offsets]
    return offsets


def _level(level, offsets, row_offsets, cap):
    count = len(offsets) - 1
    lengths = offsets_to_lengths(offsets)
    return {"level": level, "count": count,
            "offsets": offsets[:cap + 1], "lengths": lengths[:cap],
            "row_offsets": row_offsets[:cap + 1],
            "empty": [i for i, n in enumerate(lengths) if n == 0][:cap],
            "truncated": count > cap}


def _tree(lod, starts, shown, budget):
    """The level-0 sequences holding the shown rows, each with its nested sequences (depth
    first), at most ``budget`` nodes. When every row is shown, every sequence is (trailing
    empty ones too)."""
    if not lod:
        return {"sequences": [], "sequences_truncated": False}
    every = shown == starts[0][-1]
    left = [budget]
    last = len(lod) - 1

    def wanted(level, index):
        return left[0] > 0 and (every or starts[level][index] < shown)

    def node(level, index):
        left[0] -= 1
        a, b = lod[level][index], lod[level][index + 1]
        item = {"level": level, "index": index, "start": a, "end": b, "length": b - a,
                "empty": a == b, "rows": [starts[level][index], starts[level][index + 1]],
                "children": []}
        if level < last:
            item["children"] = [node(level + 1, k) for k in range(a, b)
                                if wanted(level + 1, k)]
        return item

    top = [node(0, i) for i in range(len(lod[0]) - 1) if wanted(0, i)]
    nodes = sum(len(offsets) - 1 for offsets in lod)
    return {"sequences": top, "sequences_truncated": budget - left[0] < nodes}


def _data(array, rows, starts, max_rows, max_values):
    shown = min(rows, max_rows)
    out = {"rows": [], "shown": shown, "total": rows, "truncated": rows > shown,
           "max_rows": max_rows, "max_values": max_values, "values_truncated": False}
    if array is None or shown == 0:
        return out
    head = host_rows(array, shown).reshape(shown, -1) if array.ndim else \
        host_rows(array, 1).reshape(1, 1)
    out["values_truncated"] = head.shape[1] > max_values
    for r in range(shown):
        path = [bisect_right(level_starts, r) - 1 for level_starts in starts]
        out["rows"].append({"row": r, "sequence": path[0] if path else None, "path": path,
                            "values": [json_value(x) for x in head[r, :max_values]]})
    return out
