"""The program's ops as nested groups: what the graph view folds and opens.

A real model has hundreds of ops, but its author thought in a few dozen units: the layer
calls, the functions that made them (a ResNet's ``conv_bn_layer`` inside ``basicblock``
inside ``layer_warp``), the name scopes, and Fluid's roles (the forward pass, its gradient,
the parameter updates). :func:`program_hierarchy` recovers those units from what the program
itself records, for block 0 (an op's sub-blocks go wherever the op goes):

1. **Sections** by role: consecutive ops of one kind (forward and loss; backward;
   optimizer; learning-rate schedule) form a section. A program of one kind has none.
2. **Forward groups** from each op's ``op_namescope`` (outermost) and its call stack
   (:mod:`fluid_nb.framework.callstack`): one level per call from the user's code down to
   the public layer function (``fc``); the library's own helpers are left out. Consecutive
   ops of one call form one group; a call is a new one when the line reached inside the
   called function goes back (a loop calling ``basicblock`` again), or its call site
   changes. Where no op records a stack (an inference file saved without one), groups are
   inferred: each op reading a parameter (a conv, a matmul, an embedding) starts a chain
   that the ops after it join until the next one (conv + batch_norm + relu).
3. **Backward and optimizer groups** mirror the forward ones: a gradient op goes where its
   forward op is (the pair the program model finds), an update op where the first forward
   op reading its parameter is; ops with neither follow the op before them.
4. **Repeated structure**: consecutive runs of equal structure (the same labels and op
   types, shapes aside) become one series group, ``basicblock ×8``, whose members are the
   runs. A run may be several siblings long (an inferred ResNet block is two or three
   chains).
5. **Bounded width**: a group with more than ``MAX_CHILDREN`` children is cut into parts of
   consecutive children, so opening any group draws a bounded number of boxes.

Identity: a group's id is ``g:<serial of its first op>:<kind>:<label>`` (the serials are the
program model's op ids; a series' label without its count), so ids stay while a program
grows by appending, and an opened group stays open across a live cell's delta.

The result is ``{"root": [child id, ...], "groups": [group, ...]}`` with each group
``{"id", "parent" (None at the top), "label", "kind" ("section", "call", "scope",
"inferred", "series", "part"), "children": [op or group id, ...], "ops" (count inside),
"role", "source" ("file:line" of the call, when known), "repeat" (a series' run count)}``,
groups in pre-order.
"""
import os
import sysconfig

from ..framework import callstack as _callstack

#: children per group before it is cut into parts
MAX_CHILDREN = 24
#: longest run (in siblings) that repetition detection looks for
MAX_PERIOD = 6

_SECTION = {"forward": "forward", "loss": "forward", "other": "forward",
            "backward": "backward", "optimize": "optimize", "lr_sched": "lr_sched"}
_SECTION_LABEL = {"forward": "forward", "backward": "backward", "optimize": "optimizer",
                  "lr_sched": "learning rate"}

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
#: folders of the library whose public functions are the units a user calls
_PUBLIC = tuple(_PACKAGE + os.path.join("api", d) for d in ("layers" + os.sep, "nets.py",
                                                            "paddle" + os.sep,
                                                            "contrib" + os.sep))
#: the same folders in Paddle's own tree (stacks saved by Paddle)
_PADDLE_PUBLIC = ("/paddle/fluid/layers/", "/paddle/fluid/nets.py", "/paddle/fluid/contrib/",
                  "/paddle/nn/", "/paddle/tensor/", "/paddle/static/nn/")
#: Python's own library (contextlib's `with` machinery and the like)
_STDLIB = tuple({sysconfig.get_paths()["stdlib"].replace("\\", "/") + "/",
                 sysconfig.get_paths()["platstdlib"].replace("\\", "/") + "/"})
#: function names of wrappers (decorators, dispatch) that say nothing about the unit
_WRAPPERS = frozenset({"layer", "checked_layer", "wrapper", "__impl__", "call", "func", "inner",
                       "__call__", "_decorate_function", "__impl"})

#: op types that start a chain when groups are inferred, when they read a parameter: the
#: layers' weighted ops (what follows them, a bias add, a norm, an activation, joins them)
_ANCHORS = frozenset({
    "conv2d", "depthwise_conv2d", "conv2d_transpose", "depthwise_conv2d_transpose", "conv3d",
    "conv3d_transpose", "mul", "matmul", "matmul_v2", "fc", "lookup_table",
    "lookup_table_v2", "lstm", "gru", "dynamic_lstm", "dynamic_gru", "lstmp", "fusion_lstm",
    "fusion_gru", "sequence_conv", "row_conv", "nce", "hierarchical_sigmoid", "bilinear_tensor_product",
    "multihead_matmul", "deformable_conv", "prelu",
    # the same layers in an ONNX model read as a program (fluid_nb.rewriters.onnx.view)
    "Conv", "ConvTranspose", "Gemm", "MatMul", "Gather", "LSTM", "GRU", "RNN", "PRelu"})
#: ops that belong to no chain: the program's inputs and outputs
_OUTSIDE = frozenset({"feed", "fetch", "read"})


def _frame_kind(filename):
    """``"public"`` (a library layer function), ``"internal"`` (the library's machinery or
    a package's) or ``"user"``."""
    if filename.startswith(_PACKAGE):
        return "public" if filename.startswith(_PUBLIC) else "internal"
    normal = filename.replace("\\", "/")
    if "/paddle/" in normal:
        return "public" if any(p in normal for p in _PADDLE_PUBLIC) else "internal"
    if normal.startswith(_STDLIB):
        return "internal"
    if ("site-packages" in normal or "dist-packages" in normal or normal.startswith("<")
            and not normal.startswith(("<stdin>", "<ipython-input", "<string>"))):
        return "internal"
    return "user"


def _call_levels(op, kinds, frames_seen=None):
    """An op's call levels, outermost first: ``(key, label, source, line)`` per call, where
    ``key`` names the call site (the caller's frames and the called function), ``line`` is
    the line reached inside the called function (what tells a second call from the same
    site), ``source`` the call's ``file:line``. ``kinds`` and ``frames_seen`` are the
    caller's memos (file name -> its kind and base name; see ``callstack.frames``)."""
    kept = []
    for frame in _callstack.frames(op, frames_seen):
        filename = frame[0]
        kind = kinds.get(filename)
        if kind is None:
            kind = kinds[filename] = (_frame_kind(filename), os.path.basename(filename))
        if kind[0] == "user" or (kind[0] == "public" and not frame[2].startswith("_")
                                 and frame[2] not in _WRAPPERS):
            kept.append(frame)
    levels = []
    site = ()
    for depth in range(1, len(kept)):
        caller, callee = kept[depth - 1], kept[depth]
        site = site + (caller,)
        levels.append(((site, callee[2]), callee[2],
                       f"{kinds[caller[0]][1]}:{caller[1]}", callee[1]))
    return levels


def _scope_levels(op):
    scope = op.attrs.get("op_namescope") if op.attrs else None
    if not scope or not isinstance(scope, str) or scope == "/":
        return []
    parts = [p for p in scope.split("/") if p]
    return [(("scope",) + tuple(parts[:k + 1]), parts[k], None, 0) for k in range(len(parts))]


class _Group:
    __slots__ = ("label", "kind", "children", "source", "role", "repeat", "key", "last_line",
                 "first_line")

    def __init__(self, label, kind, source=None, key=None):
        self.label, self.kind, self.source, self.key = label, kind, source, key
        self.children = []  # op ids and _Groups
        self.role = None
        self.repeat = 0
        self.last_line = self.first_line = 0


def _build_by_levels(ops, levels_of):
    """A tree of groups over ``ops`` (``(op id, serial, op)``) from each op's levels
    (outermost first; see :func:`_call_levels`). Returns the top's children and, per op id,
    the list of groups from the top down to the one holding it."""
    root = _Group("", "root")
    open_groups = []  # the chain of groups the previous op was in
    paths = {}
    for oid, _, op in ops:
        levels = levels_of(op)
        depth = 0
        while depth < len(open_groups) and depth < len(levels):
            group = open_groups[depth]
            key, _, _, line = levels[depth]
            # a second call from the same site starts again at (or above) the first line
            # the first call reached; a line going back less far is a loop or a `with`
            # statement's exit inside the same call
            if group.key != key or (line < group.last_line and line <= group.first_line):
                break
            group.last_line = line
            depth += 1
        del open_groups[depth:]
        parent = open_groups[-1] if open_groups else root
        for key, label, source, line in levels[depth:]:
            group = _Group(label, "scope" if key[0] == "scope" else "call", source, key)
            group.last_line = group.first_line = line
            parent.children.append(group)
            open_groups.append(group)
            parent = group
        parent.children.append(oid)
        paths[oid] = list(open_groups)
    return root.children, paths


def _infer_chains(ops, parameter_names):
    """Groups for ops without a recorded stack: each weighted op reading a parameter (a
    conv, a matmul, an embedding) starts a chain, the ops after it join it (a bias add, a
    norm, an activation, a pool). Feeds and fetches stay outside. Returns the children list
    and the op -> path map, as the builder does."""
    children = []
    paths = {}
    chain = None
    for oid, _, op in ops:
        if op.type in _OUTSIDE:
            children.append(oid)
            paths[oid] = []
            continue
        anchor = op.type in _ANCHORS and any(
            name in parameter_names for names in op.inputs.values() for name in names)
        if anchor or chain is None:
            chain = _Group(op.type, "inferred")
            children.append(chain)
        elif len(chain.children) < 12 and op.type not in chain.label.split(" \u00b7 "):
            if chain.label.count("\u00b7") < 2:
                chain.label += " \u00b7 " + op.type
        chain.children.append(oid)
        paths[oid] = [chain]
    return children, paths


def _mirror(ops, anchor_of, forward_paths, forward_order):
    """Groups for backward or optimizer ops that mirror the forward groups: each op goes
    into copies of the groups its anchor (a forward op id, from ``anchor_of``) is in; ops
    without an anchor follow the op before them (the first ones the op after them).

    The copies are keyed by the forward group, not by position: an optimizer updates the
    parameters in its own order, and its updates of one layer still land in one group
    (the ops of these sections do not depend on each other's order inside a group).
    """
    anchors = [anchor_of(oid, op) for oid, _, op in ops]
    last = None
    for k, anchor in enumerate(anchors):  # forward fill, then back fill the head
        if anchor is not None and anchor in forward_paths:
            last = anchor
        else:
            anchors[k] = last
    following = None
    for k in range(len(anchors) - 1, -1, -1):
        if anchors[k] is None:
            anchors[k] = following
        else:
            following = anchors[k]
    root = _Group("", "root")
    copies = {}  # (id of the parent copy, id of the forward group) -> copy
    order = {}
    for (oid, _, op), anchor in zip(ops, anchors):
        parent = root
        for forward in (forward_paths.get(anchor, ()) if anchor is not None else ()):
            key = (id(parent), id(forward))
            group = copies.get(key)
            if group is None:
                group = copies[key] = _Group(forward.label, forward.kind, forward.source)
                parent.children.append(group)
            parent = group
        parent.children.append(oid)
        order[oid] = forward_order.get(anchor, len(forward_order))
    # in the forward order: a backward pass runs backwards and an optimizer in its own
    # order, and equal layers must read as equal for their series to be found
    _sort_mirror(root, order)
    return root.children


def _sort_mirror(group, order):
    def position(node):
        if isinstance(node, _Group):
            return _sort_mirror(node, order)
        return order[node]
    keyed = [(position(child), k, child) for k, child in enumerate(group.children)]
    keyed.sort(key=lambda item: item[:2])
    group.children = [child for _, _, child in keyed]
    return keyed[0][0] if keyed else 0


def _simplify(children):
    """Groups that hold one op become that op; a group holding one group takes that group's
    children (keeping its own label: the outer call says more, ``shortcut`` over the
    ``conv_bn_layer`` it calls)."""
    result = []
    for child in children:
        if isinstance(child, _Group):
            child.children = _simplify(child.children)
            while len(child.children) == 1 and isinstance(child.children[0], _Group):
                inner = child.children[0]
                child.children = inner.children
                if child.source is None:
                    child.source = inner.source
            if len(child.children) == 1:
                result.append(child.children[0])
                continue
            if not child.children:
                continue
        result.append(child)
    return result


def _signature(node, types, memo):
    if not isinstance(node, _Group):
        return types[node]
    found = memo.get(id(node))
    if found is None:
        found = memo[id(node)] = (node.label, node.repeat,
                                  tuple(_signature(c, types, memo) for c in node.children))
    return found


def _series(children, types, memo):
    """``children`` with runs of equal structure folded into series groups (bottom-up)."""
    for child in children:
        if isinstance(child, _Group):
            child.children = _series(child.children, types, memo)
    signatures = [_signature(c, types, memo) for c in children]
    result = []
    i = 0
    count = len(children)
    while i < count:
        best_period, best_runs = 1, 1
        for period in range(1, min(MAX_PERIOD, (count - i) // 2) + 1):
            unit = signatures[i:i + period]
            runs = 1
            while signatures[i + runs * period:i + (runs + 1) * period] == unit:
                runs += 1
            if runs >= 2 and period * runs > best_period * best_runs:
                best_period, best_runs = period, runs
        if best_runs < 2 or (best_period == 1 and not isinstance(children[i], _Group)
                             and best_runs < 3):
            result.append(children[i])
            i += 1
            continue
        members = []
        for run in range(best_runs):
            part = children[i + run * best_period:i + (run + 1) * best_period]
            if best_period == 1:
                members.append(part[0])
            else:
                member = _Group(" \u00b7 ".join(_label(c, types) for c in part[:2]) +
                                (" \u2026" if best_period > 2 else ""), "part")
                member.children = part
                members.append(member)
        first = members[0]
        series = _Group(f"{_label(first, types)} \u00d7{best_runs}", "series",
                        first.source if isinstance(first, _Group) else None)
        series.repeat = best_runs
        series.children = members
        result.append(series)
        i += best_period * best_runs
    return result


def _into_series(children):
    """A group whose only child is a series becomes that series, named by both
    (``layer_warp · basicblock ×9``): a box that opens onto one box says nothing."""
    result = []
    for child in children:
        if isinstance(child, _Group):
            child.children = _into_series(child.children)
            if len(child.children) == 1 and isinstance(child.children[0], _Group) \
                    and child.children[0].kind == "series" and child.kind != "section":
                inner = child.children[0]
                inner.label = f"{child.label} \u00b7 {inner.label}"
                inner.source = child.source or inner.source
                child = inner
        result.append(child)
    return result


def _label(node, types):
    return node.label if isinstance(node, _Group) else types[node]


def _bounded(children, types, first_index):
    """``children`` cut into parts of at most ``MAX_CHILDREN`` (recursively, so a part is
    bounded too), labelled by the op positions they span."""
    for child in children:
        if isinstance(child, _Group):
            child.children = _bounded(child.children, types, first_index)
    while len(children) > MAX_CHILDREN:
        size = MAX_CHILDREN
        if len(children) <= MAX_CHILDREN * MAX_CHILDREN:
            size = -(-len(children) // -(-len(children) // MAX_CHILDREN))
        parts = []
        for start in range(0, len(children), size):
            piece = children[start:start + size]
            positions = [first_index[op] for node in piece for op in _ops_in(node)]
            lo, hi = min(positions), max(positions)  # (a mirrored pass is not in op order)
            part = _Group(f"ops {lo}\u2013{hi}", "part")
            part.children = piece
            parts.append(part)
        children = parts
    return children


def _ops_in(node):
    if not isinstance(node, _Group):
        return [node]
    return [op for child in node.children for op in _ops_in(child)]


def program_hierarchy(program, op_ids, roles, pairs):
    """The groups of block 0's ops (see the module docstring).

    ``op_ids`` maps each op of the program (by ``id()``) to ``(model id, serial)``; ``roles``
    maps model op ids to role names and ``pairs`` forward <-> grad op ids, as the program
    model has them.
    """
    block = program.global_block()
    records = [(op_ids[id(op)][0], op_ids[id(op)][1], op) for op in block.ops]
    if not records:
        return {"root": [], "groups": []}
    types = {oid: op.type for oid, _, op in records}
    index_of = {oid: k for k, (oid, _, _) in enumerate(records)}
    parameter_names = {name for name, var in block.vars.items() if var.persistable}

    sections = []  # [kind, [records]]
    for record in records:
        kind = _SECTION.get(roles[record[0]], "forward")
        if not sections or sections[-1][0] != kind:
            sections.append([kind, []])
        sections[-1][1].append(record)

    kinds = {}
    forward_ops = [r for kind, rs in sections if kind == "forward" for r in rs]
    has_stacks = any(op.callstack for _, _, op in forward_ops)
    if has_stacks:
        frames_seen = {}

        def levels_of(op):
            return _scope_levels(op) + _call_levels(op, kinds, frames_seen)
    else:
        def levels_of(op):
            return _scope_levels(op)
    forward_paths = {}
    built = {}  # id(section records) -> children
    for kind, section_records in sections:
        if kind != "forward":
            continue
        children, paths = _build_by_levels(section_records, levels_of)
        if not has_stacks and not any(paths.values()):
            children, paths = _infer_chains(section_records, parameter_names)
        forward_paths.update(paths)
        built[id(section_records)] = children
    # the common outer calls (the script's main(), a model function around everything)
    # say nothing: drop levels every forward op shares
    tops = [c for children in built.values() for c in children]
    while len(tops) == 1 and isinstance(tops[0], _Group):
        only = tops[0]
        for key in built:
            built[key] = only.children
        for path in forward_paths.values():
            if path and path[0] is only:
                path.pop(0)
        tops = only.children

    first_reader = {}
    for oid, _, op in forward_ops:
        for names in op.inputs.values():
            for name in names:
                first_reader.setdefault(name, oid)

    def grad_anchor(oid, op):
        return pairs.get(oid)

    def update_anchor(oid, op):
        for slot in ("Param", "X", "Input"):
            for name in op.inputs.get(slot, ()):
                if name in parameter_names and name in first_reader:
                    return first_reader[name]
        for names in op.inputs.values():
            for name in names:
                base = name.split("@GRAD", 1)[0]
                if base in parameter_names and base in first_reader:
                    return first_reader[base]
        return None

    top = []
    for kind, section_records in sections:
        if kind == "forward":
            children = built[id(section_records)]
        elif kind == "backward":
            children = _mirror(section_records, grad_anchor, forward_paths, index_of)
        else:
            children = _mirror(section_records, update_anchor, forward_paths, index_of)
        children = _simplify(children)
        memo = {}
        children = _series(children, types, memo)
        children = _into_series(children)
        children = _bounded(children, types, index_of)
        if len(sections) == 1:
            top = children
            break
        section = _Group(_SECTION_LABEL[kind], "section")
        section.role = kind
        section.children = children
        top.append(section)
    top = _bounded(top, types, index_of)

    groups = []
    serial_of = {oid: serial for oid, serial, _ in records}

    def first_serial(node):
        while isinstance(node, _Group):
            node = node.children[0]
        return serial_of[node]

    used = set()

    def emit(node, parent, depth, role):
        # named by what does not change as the program grows: its first op, its kind and
        # its label without a series' count (a part's label changes: parts are renamed)
        base = "" if node.kind == "part" else node.label.rsplit(" \u00d7", 1)[0]
        gid = f"g:{first_serial(node)}:{node.kind}:{base}"
        while gid in used:
            gid += "'"
        used.add(gid)
        role = node.role or role
        record = {"id": gid, "parent": parent, "label": node.label, "kind": node.kind,
                  "children": [], "ops": 0, "role": role, "source": node.source}
        if node.repeat:
            record["repeat"] = node.repeat
        groups.append(record)
        for child in node.children:
            if isinstance(child, _Group):
                child_id, count = emit(child, gid, depth + 1, role)
                record["children"].append(child_id)
                record["ops"] += count
            else:
                record["children"].append(child)
                record["ops"] += 1
        return gid, record["ops"]

    root = []
    for node in top:
        root.append(emit(node, None, 0, None)[0] if isinstance(node, _Group) else node)
    return {"root": root, "groups": groups}
