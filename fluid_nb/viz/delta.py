"""Program deltas: what changed between two program models, and applying it.

A delta is what a live view sends when a cell adds (or a rollback removes) ops, instead of the
whole model. :func:`apply_delta` is the Python reference of what the front end does with it.

Rules of the format (``"fluid-nb.program-delta"``, version 1):
- ``remove`` lists ids; ``add`` and ``update`` carry whole elements (``update`` replaces the
  element with the same id: ops and variables whose content changed, e.g. a shape).
- A block whose fields changed (its owner or parent, after a rollback and a new block of the
  same index) is listed in both ``remove.blocks`` and ``add.blocks``, and so is an edge (its
  ``inline`` flag, once its sub-block writes the variable too); apply removes first.
- ``new`` flags: ops and variables in ``add`` are new, every other element is not (the front
  end highlights exactly the added ops). ``new`` alone never makes an element an update.
- ``groups``: the ops' groups (the model's ``hierarchy``, :mod:`fluid_nb.viz.groups`),
  only when they changed: ``root`` whole, ``remove`` the ids of groups gone or changed,
  ``add`` the groups new or changed, whole. A cell that appends one op changes the groups
  on its path from the top (a section's children, a series' count), not the hundreds
  beside them.
- After applying, lists are put back into the model's canonical order (see
  :mod:`fluid_nb.viz.program_model`), so ``apply_delta(old, program_delta(old, new))``
  equals ``new`` up to the ``new`` flags, and assembles to the same DOT text.
"""
from ..errors import InvalidArgument
from .program_model import FORMAT, VERSION

DELTA_FORMAT = "fluid-nb.program-delta"
KINDS = ("blocks", "ops", "vars", "edges")


def _without_new(element):
    if "new" not in element:
        return element
    return {k: v for k, v in element.items() if k != "new"}


def _check_model(model, where):
    if not isinstance(model, dict) or model.get("format") != FORMAT:
        found = model.get("format") if isinstance(model, dict) else type(model).__name__
        raise InvalidArgument(f"{where}: a program model expected (format {FORMAT!r}), "
                              f"but received {found!r}")


def program_delta(old, new):
    """The delta that turns program model ``old`` into ``new`` (both from ``program_model``).

    Invariant: ``apply_delta(old, program_delta(old, new)) == new`` up to ``new`` flags; the
    delta's size grows with what changed, not with the program.
    """
    _check_model(old, "program_delta: old")
    _check_model(new, "program_delta: new")
    add, remove, update = {}, {}, {"ops": [], "vars": []}
    for kind in KINDS:
        before = {e["id"]: e for e in old[kind]}
        after_ids = set()
        added, changed = [], []
        for element in new[kind]:
            eid = element["id"]
            after_ids.add(eid)
            previous = before.get(eid)
            if previous is None:
                added.append(dict(element, new=True) if "new" in element else element)
            elif previous != element and _without_new(previous) != _without_new(element):
                changed.append(element)
        removed = [eid for eid in before if eid not in after_ids]
        if kind in ("blocks", "edges"):  # no update of these: a changed one is replaced
            removed.extend(e["id"] for e in changed)
            added.extend(changed)
        elif kind in update:
            update[kind] = [dict(e, new=False) if "new" in e else e for e in changed]
        add[kind] = added
        remove[kind] = removed
    delta = {"format": DELTA_FORMAT, "version": VERSION, "base": old["revision"],
             "revision": new["revision"], "title": new["title"],
             "add": add, "remove": remove, "update": update}
    if old.get("hierarchy") != new.get("hierarchy"):
        delta["groups"] = _groups_delta(old.get("hierarchy"), new.get("hierarchy"))
    return delta


_NO_GROUPS = {"root": [], "groups": []}


def _groups_delta(old, new):
    before = {group["id"]: group for group in (old or _NO_GROUPS)["groups"]}
    new = new or _NO_GROUPS
    after, add = set(), []
    for group in new["groups"]:
        after.add(group["id"])
        if before.get(group["id"]) != group:
            add.append(group)
    remove = [gid for gid in before if gid not in after]
    remove.extend(group["id"] for group in add if group["id"] in before)
    return {"root": list(new["root"]), "remove": remove, "add": add}


def _apply_groups(hierarchy, change):
    """The hierarchy after a delta's ``groups``, in the pre-order ``program_hierarchy``
    lists its groups in (each group, then the groups among its children)."""
    gone = set(change["remove"])
    groups = {group["id"]: group for group in (hierarchy or _NO_GROUPS)["groups"]
              if group["id"] not in gone}
    groups.update((group["id"], group) for group in change["add"])
    ordered = []

    def visit(ids):
        for gid in ids:
            group = groups.get(gid)
            if group is not None:  # (an op id)
                ordered.append(group)
                visit(group["children"])
    visit(change["root"])
    return {"root": list(change["root"]), "groups": ordered}


def apply_delta(model, delta):
    """The model ``delta`` makes of ``model`` (which is not changed).

    Removes, then replaces updated elements, then adds; sets ``new`` on the added ops and
    variables only; restores canonical order and recomputes ``stats``.
    """
    _check_model(model, "apply_delta: model")
    if not isinstance(delta, dict) or delta.get("format") != DELTA_FORMAT:
        found = delta.get("format") if isinstance(delta, dict) else type(delta).__name__
        raise InvalidArgument(f"apply_delta: a program delta expected (format "
                              f"{DELTA_FORMAT!r}), but received {found!r}")
    if delta["base"] != model["revision"]:
        raise InvalidArgument(f"apply_delta: a delta based on revision {model['revision']} "
                              f"expected, but received one based on {delta['base']}")
    result = dict(model)
    for kind in KINDS:
        gone = set(delta["remove"].get(kind, ()))
        replaced = {e["id"]: e for e in delta.get("update", {}).get(kind, ())}
        elements = []
        for element in model[kind]:
            if element["id"] in gone:
                continue
            element = replaced.get(element["id"], element)
            elements.append(dict(element, new=False) if "new" in element else element)
        elements.extend(delta["add"].get(kind, ()))
        result[kind] = elements
    _canonical_order(result)
    if "groups" in delta:
        result["hierarchy"] = _apply_groups(model.get("hierarchy"), delta["groups"])
    result["revision"] = delta["revision"]
    result["title"] = delta.get("title", model["title"])
    result["stats"] = {"blocks": len(result["blocks"]), "ops": len(result["ops"]),
                       "vars": len(result["vars"])}
    return result


def _block_idx(block_id):
    return int(block_id[1:])


def _canonical_order(model):
    model["blocks"].sort(key=lambda b: b["idx"])
    model["ops"].sort(key=lambda o: (_block_idx(o["block"]), o["index"]))
    model["vars"].sort(key=lambda v: (_block_idx(v["block"]), v["name"]))
    position = {o["id"]: (_block_idx(o["block"]), o["index"]) for o in model["ops"]}

    def edge_key(edge):
        if edge["dst"] in position:  # var -> op: an input
            return position[edge["dst"]] + (0, edge["slot"], edge["src"])
        return position.get(edge["src"], (1 << 30, 0)) + (1, edge["slot"], edge["dst"])
    model["edges"].sort(key=edge_key)
