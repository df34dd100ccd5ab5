"""The scope model: a Scope tree with every variable's kind, shape, dtype, LoD, place, bytes.

``scope_model(scope)`` returns a JSON-serialisable dict::

    {"format": "fluid-nb.scope", "version": 1,
     "root": node, "truncated": bool,
     "stats": {"scopes": n, "vars": n, "bytes": b, "unique_bytes": b},
     "caps": {"max_depth": d, "max_vars": n, "max_items": k}}

    node = {"id": "s" | "<parent id>/<k>" | "<parent id>/<var name>/<k>", "depth": d,
            "vars": [entry], "vars_truncated": bool, "kids": [node],
            "totals": {"vars": n, "bytes": b, "subtree_bytes": b}, "truncated": bool}

    entry = describe_value(holder value) + {"name": str}, and for step scopes
            "scopes": [node]

``describe_value(value)`` is the one description of a runtime value, shared with the loop
trace: ``{"kind", "initialized", "shape", "dtype", "lod", "place", "bytes", "preview",
"preview_truncated"}`` plus, by kind: ``LoDTensorArray`` -> ``length`` and ``items`` (each
slot described without preview); ``LoDRankTable`` -> ``level``, ``count`` and ``items``
(``[index, length]`` pairs in rank order); ``SelectedRows`` -> ``height``, ``row_count``,
``rows``; ``StepScopes`` (a list of scopes kept by ``while`` or ``conditional_block``) ->
``count``; ``List`` (feed/fetch lists) -> ``length``. ``Uninitialized`` is a holder with no
value, or a LoDTensor with no data (its LoD, if any, is kept).

Invariants:

- Every scope reachable from the root appears exactly once: the kids that a variable of a
  scope keeps as step scopes are shown under that variable (``entry["scopes"]``), the other
  kids under ``node["kids"]``, in the scope's own order.
- ``totals["bytes"]`` is the sum of the scope's own entries' ``bytes`` (data bytes: a tensor
  array counts its slots, SelectedRows its value); ``subtree_bytes`` adds all nested scopes.
  Values shared by several holders (a step scope's snapshot of an outer input) count once
  per holder there; ``stats["unique_bytes"]`` counts each array object once.
- With ``program``, a variable the program declares ``[1]`` (a Fluid 1.x scalar: a mean, a
  learning rate) is shown ``[1]`` though a kernel left a 0-D array for it, as a fetch gives
  it (the executor's rule; see ``exec.executor.declared_scalar``).
- Scopes deeper than ``max_depth`` (the root has depth 0) are shown as nodes with
  ``truncated: true`` and no variables or kids; at most ``max_vars`` variables per scope
  (sorted by name), at most ``max_items`` numbers per preview, items per list and offsets
  (plus one) per LoD level.
"""
import numpy as np

from ..errors import InvalidArgument, InvalidType, expected
from ..framework.program import Program
from ..tensor.lod_rank_table import LoDRankTable
from ..tensor.place import place_of
from ..exec.scope import Scope
from ..tensor.tensor import LoDTensor, LoDTensorArray, SelectedRows
from .lod_model import preview_values

__all__ = ["scope_model", "describe_value", "declared_scalar_names"]

FORMAT = "fluid-nb.scope"
VERSION = 1


# --- one value ----------------------------------------------------------------------------------
def describe_value(value, max_items=8, preview=True, array_items=True):
    """The kind, shape, dtype, LoD, place, bytes and a short preview of a runtime value
    (see the module docstring); JSON-serialisable. ``array_items=False`` leaves out a tensor
    array's ``items`` (its length stays)."""
    if isinstance(value, LoDTensor):
        return _tensor(value, max_items, preview)
    if isinstance(value, LoDRankTable):  # a list subclass: before the list cases
        items = [[int(i), int(n)] for i, n in value[:max_items]]
        return _entry("LoDRankTable", True, level=value.level, count=len(value), items=items,
                      items_truncated=len(value) > max_items)
    if isinstance(value, LoDTensorArray):
        shown = value[:max_items] if array_items else ()
        slots = [_tensor(t, max_items, False) if isinstance(t, LoDTensor) else describe_value(t)
                 for t in shown]
        nbytes = sum(t.nbytes for t in value if isinstance(t, LoDTensor))
        return _entry("LoDTensorArray", True, bytes=nbytes, length=len(value), items=slots,
                      items_truncated=len(value) > len(slots))
    if isinstance(value, SelectedRows):
        tensor = _tensor(value.value, max_items, preview)
        tensor.update(kind="SelectedRows", height=value.height(), row_count=len(value.rows()),
                      rows=[int(r) for r in value.rows()[:max_items]],
                      rows_truncated=len(value.rows()) > max_items)
        return tensor
    if isinstance(value, list) and value and all(isinstance(s, Scope) for s in value):
        return _entry("StepScopes", True, count=len(value))
    if isinstance(value, list):
        return _entry("List", True, length=len(value))
    if value is None:
        return _entry("Uninitialized", False)
    return _entry(type(value).__name__, True)


def _entry(kind, initialized, **extra):
    entry = {"kind": kind, "initialized": initialized, "shape": None, "dtype": None, "lod": [],
             "lod_truncated": False, "place": None, "bytes": 0, "preview": [],
             "preview_truncated": False}
    entry.update(extra)
    return entry


def _tensor(tensor, max_items, preview):
    array = tensor.array
    lod = [[int(x) for x in level[:max_items + 1]] for level in tensor._lod]
    lod_truncated = any(len(level) > max_items + 1 for level in tensor._lod)
    if array is None:
        return _entry("Uninitialized", False, lod=lod, lod_truncated=lod_truncated)
    values, more = preview_values(array, max_items) if preview else ([], False)
    return _entry("LoDTensor", True, shape=[int(d) for d in array.shape], dtype=str(array.dtype),
                  lod=lod, lod_truncated=lod_truncated, place=repr(place_of(array)),
                  bytes=int(array.nbytes), preview=values, preview_truncated=more)


def declared_scalar_names(program):
    """The names ``program`` declares ``[1]`` in every block that declares them: a 0-D value
    held for one of them stands for that ``[1]`` (Fluid 1.x had no 0-D tensors). None
    gives an empty set."""
    if program is None:
        return frozenset()
    from ..exec.executor import declared_scalar
    scalars, other = set(), set()
    for block in program.blocks:
        for name, var in block.vars.items():
            (scalars if declared_scalar(var) else other).add(name)
    return frozenset(scalars - other)


def as_declared(entry, name, scalars):
    """``entry`` (a :func:`describe_value`) with the shape ``[1]`` where ``name`` is declared
    a scalar (see :func:`declared_scalar_names`) and the value is 0-D."""
    if name in scalars and entry["kind"] in ("LoDTensor", "SelectedRows") and \
            entry["shape"] == []:
        entry["shape"] = [1]
    return entry


# --- the tree -----------------------------------------------------------------------------------
def scope_model(scope, max_depth=4, max_vars=200, max_items=8, program=None):
    """The model of ``scope`` and the scopes under it (see the module docstring); with
    ``program`` (the program that filled the scope) scalars keep the shape it declares.

    Example::

        exe.run(startup, scope=scope)
        m = scope_model(scope, program=main)
        [(v["name"], v["kind"], v["shape"]) for v in m["root"]["vars"]]
    """
    if not isinstance(scope, Scope):
        raise InvalidType(expected("scope_model", "scope", "a Scope",
                                       type(scope).__name__))
    if program is not None and not isinstance(program, Program):
        raise InvalidType(expected("scope_model", "program", "a Program or None",
                                   type(program).__name__))
    for cap, number in (("max_depth", max_depth), ("max_vars", max_vars),
                        ("max_items", max_items)):
        if not isinstance(number, (int, np.integer)) or number < 0:
            raise InvalidArgument(expected("scope_model", cap, "an int >= 0", repr(number)))
    walk = _Walk(max_depth, max_vars, max_items, declared_scalar_names(program))
    root = walk.node(scope, "s", 0)
    return {"format": FORMAT, "version": VERSION, "root": root, "truncated": walk.truncated,
            "stats": {"scopes": walk.scopes, "vars": walk.vars, "bytes": root["totals"][
                "subtree_bytes"], "unique_bytes": sum(walk.arrays.values())},
            "caps": {"max_depth": max_depth, "max_vars": max_vars, "max_items": max_items}}


class _Walk:
    """One depth-first walk: counts scopes and variables, and remembers each array object
    once (for ``unique_bytes``)."""

    def __init__(self, max_depth, max_vars, max_items, scalars=frozenset()):
        self.max_depth, self.max_vars, self.max_items = max_depth, max_vars, max_items
        self.scalars = scalars
        self.truncated = False
        self.scopes = self.vars = 0
        self.arrays = {}

    def node(self, scope, ident, depth):
        self.scopes += 1
        node = {"id": ident, "depth": depth, "vars": [], "vars_truncated": False, "kids": [],
                "totals": {"vars": len(scope.vars), "bytes": 0, "subtree_bytes": 0},
                "truncated": False}
        if depth > self.max_depth:
            node["truncated"] = self.truncated = True
            return node
        names = sorted(scope.vars)
        node["vars_truncated"] = len(names) > self.max_vars
        self.truncated |= node["vars_truncated"]
        held = set()  # ids of kid scopes shown under a variable
        own = nested = 0
        for name in names:
            value = scope.vars[name].value
            entry = as_declared(describe_value(value, self.max_items), name, self.scalars)
            own += entry["bytes"]
            self._remember(value)
            if entry["kind"] == "StepScopes":
                entry["scopes"] = []
                for k, step in enumerate(value):
                    held.add(id(step))
                    kid = self.node(step, f"{ident}/{name}/{k}", depth + 1)
                    nested += kid["totals"]["subtree_bytes"]
                    entry["scopes"].append(kid)
            if len(node["vars"]) < self.max_vars:
                node["vars"].append(dict(name=name, **entry))
            self.vars += 1
        for k, kid_scope in enumerate(scope.kids):
            if id(kid_scope) in held:
                continue
            kid = self.node(kid_scope, f"{ident}/{k}", depth + 1)
            nested += kid["totals"]["subtree_bytes"]
            node["kids"].append(kid)
        node["totals"].update(bytes=own, subtree_bytes=own + nested)
        return node

    def _remember(self, value):
        if isinstance(value, SelectedRows):
            value = value.value
        tensors = value if isinstance(value, LoDTensorArray) else [value]
        for t in tensors:
            if isinstance(t, LoDTensor) and t.array is not None:
                self.arrays[id(t.array)] = int(t.array.nbytes)
