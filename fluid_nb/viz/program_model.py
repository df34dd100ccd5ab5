"""The program model: a program as plain JSON for the graph view (MIME ``PROGRAM_MIME``).

``program_model(program)`` is a pure function of the program (it reads, never changes it)
returning the dict the front end draws: blocks nested by parent (a sub-block's ``owner`` is the
``while``/``conditional_block`` op whose block attribute names it), op and variable nodes, data
edges, forward<->grad pairs, op roles, the ops added since a mark, and one DOT statement per
element (see :mod:`fluid_nb.viz.dot`).

Identity: op ids (``"op:<n>"``) are stable while a program grows or shrinks. Each Operator
and Variable object gets a serial number the first time a model (or a mark) sees it, counted
per program, so ops that were there keep their ids in later models, and ops appended later
get higher numbers. A live-mode rollback restores the very same objects, so their ids
survive it too. Variable ids are ``"v:<block idx>:<name>"``.

Canonical order (what :func:`~fluid_nb.viz.delta.apply_delta` restores): blocks by index;
ops by (block index, index in block); variables by (block index, name); edges by their op's
(block index, index), inputs before outputs, then slot, then variable id.
"""
import enum
import math
import operator
import re
import sys
import weakref

from ..errors import InvalidArgument, InvalidType
from ..framework.blocks import block_attr_indices
from ..tensor.dtypes import dtype_name
from ..framework.program import EMPTY_VAR_NAME, GRAD_SUFFIX, Program, holds_tensor
from . import dot as _dot
from .groups import program_hierarchy

MIME_TYPE = "application/vnd.fluid-nb.program+json"
FORMAT = "fluid-nb.program"
VERSION = 1

#: attributes left out of the model: Paddle's Python traceback of the building script
#: (tens of lines per op in saved files, nothing a reader of the graph needs)
HIDDEN_ATTRS = frozenset({"op_callstack"})

# Paddle's OpRole bits
ROLE_BACKWARD, ROLE_OPTIMIZE, ROLE_RPC, ROLE_DIST, ROLE_LRSCHED, ROLE_LOSS = 1, 2, 4, 8, 16, 256


def op_role_name(value):
    """Paddle's ``op_role`` bits as one role name.

    Precedence: learning-rate schedule, then optimize, then backward (so Backward|Loss = 257
    is ``"backward"``), then loss (256 alone, the loss op), then RPC/Dist (``"other"``);
    0 or no attribute is ``"forward"``.
    """
    try:
        bits = int(value or 0)
    except (TypeError, ValueError):
        return "other"
    if bits == 0:
        return "forward"
    if bits & ROLE_LRSCHED:
        return "lr_sched"
    if bits & ROLE_OPTIMIZE:
        return "optimize"
    if bits & ROLE_BACKWARD:
        return "backward"
    if bits & ROLE_LOSS:
        return "loss"
    return "other"


# --- stable identity ------------------------------------------------------------------------
class _Serials:
    """Serial numbers of objects, keyed by ``id`` with a weak reference to each object.

    Keyed by ``id`` rather than by the object: ``Variable`` overloads ``==`` to build an op,
    so it cannot be a dict key. The weak reference's callback drops the entry when its
    object dies, before the ``id`` can be reused.
    """

    def __init__(self):
        self._table = {}  # id(obj) -> (weakref, serial)

    def get(self, obj):
        entry = self._table.get(id(obj))
        if entry is not None and entry[0]() is obj:
            return entry[1]
        return None

    def set(self, obj, serial):
        key = id(obj)
        table = self._table

        def forget(ref, key=key):
            current = table.get(key)
            if current is not None and current[0] is ref:
                del table[key]

        table[key] = (weakref.ref(obj, forget), serial)
        return serial


_serials = _Serials()
_counters = weakref.WeakKeyDictionary()  # Program -> last serial handed out


def _serial(program, obj):
    serial = _serials.get(obj)
    if serial is None:
        serial = _counters.get(program, 0) + 1
        _counters[program] = serial
        _serials.set(obj, serial)
    return serial


def op_id(op):
    """The stable model id of ``op`` (``"op:<n>"``); numbers it on first sight."""
    return f"op:{_serial(op.block.program, op)}"


class ProgramMark:
    """A point in a program's growth: ops and variables numbered after it are ``new``.

    Holds the program weakly and the last serial handed out when the mark was taken, so it
    costs nothing to keep and stays valid when ops are appended or rolled back.
    """

    __slots__ = ("_program", "serial")

    def __init__(self, program, serial):
        self._program = weakref.ref(program)
        self.serial = serial

    @property
    def program(self):
        return self._program()

    def __repr__(self):
        return f"ProgramMark(serial={self.serial})"


def program_mark(program):
    """A mark of ``program`` as it is now; ``program_model(program, mark=m)`` flags as
    ``new`` exactly the ops and variables added after this call."""
    if not isinstance(program, Program):
        raise InvalidType(f"program_mark: program expected Program, but received "
                          f"{type(program).__name__}")
    for block in program.blocks:  # number what exists now, so later additions rank above
        for op in block.ops:
            _serial(program, op)
        for var in block.vars.values():
            _serial(program, var)
    return ProgramMark(program, _counters.get(program, 0))


# --- values -----------------------------------------------------------------------------------
def json_value(value):
    """``value`` as plain JSON: NumPy scalars and arrays to Python, enums to their value,
    non-finite floats to ``"inf"``/``"-inf"``/``"nan"`` (JSON has none), bytes decoded."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, enum.Enum):
        return json_value(value.value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else str(value)
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    if hasattr(value, "tolist"):  # NumPy scalar or array
        return json_value(value.tolist())
    return str(value)


def cell_label(filename):
    """``In [7]`` for the file name IPython compiled a cell under (an ipykernel temporary
    file), else None. IPython is asked only when already imported (in a kernel)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    names = getattr(getattr(shell, "compile", None), "_filename_map", None)
    number = names.get(filename) if isinstance(names, dict) else None
    return f"In [{number}]" if number is not None else None


def _source_text(source):
    if source is None:
        return None
    filename = getattr(source, "filename", None)  # SourceLine: do not read the line's text
    lineno = source.lineno if filename is not None else source[1]
    filename = filename if filename is not None else source[0]
    cell = cell_label(filename)
    return f"{cell}, line {lineno}" if cell is not None else f"{filename}:{lineno}"


def _shape_text(shape):
    return "[" + ", ".join(map(str, shape)) + "]"


def _dtype_text(var):
    try:
        return dtype_name(var.dtype)
    except Exception:  # kinds without a tensor dtype (READER, RAW...) keep what they hold
        return str(getattr(var.dtype, "name", var.dtype)).lower()


def _grad_base(name):
    """``x`` for ``x@GRAD`` and ``x@GRAD@RENAME@block0@1``; None for other names."""
    at = name.find(GRAD_SUFFIX)
    return name[:at] if at > 0 else None


# --- the model ----------------------------------------------------------------------------------
def program_model(program, mark=None, title=None):
    """The program model of ``program`` (see the module docstring and the contract).

    Invariants: the result is JSON-serialisable; ``program`` is not changed; op ids are stable
    across calls while the program grows or is rolled back; ``new`` is true exactly for ops and
    variables added after ``mark`` (a :func:`program_mark` of this program; all false without
    one); every edge joins two elements of the model; lists are in canonical order.
    """
    if not isinstance(program, Program):
        raise InvalidType(f"program_model: program expected Program, but received "
                          f"{type(program).__name__}")
    if mark is not None:
        if not isinstance(mark, ProgramMark):
            raise InvalidType(f"program_model: mark expected the result of program_mark(), "
                              f"but received {type(mark).__name__}")
        if mark.program is not program:
            raise InvalidArgument("program_model: mark expected to come from the same program, "
                                  "but it was taken on another one")
    since = mark.serial if mark is not None else None

    block_indices = {}  # id(op) -> {attribute: [block index]} of its block attributes
    owners = {}  # block idx -> (id, type) of the op holding it
    op_records = []  # (op, id, serial, block idx, index)
    for block in program.blocks:
        for index, op in enumerate(block.ops):
            serial = _serial(program, op)
            oid = f"op:{serial}"
            op_records.append((op, oid, serial, block.idx, index))
            block_indices[id(op)] = indices = block_attr_indices(op)
            for idx in (i for values in indices.values() for i in values):
                owners.setdefault(idx, (oid, op.type))
    pairs = _pair_grad_ops(op_records)

    blocks = []
    for block in program.blocks:
        owner, owner_type = owners.get(block.idx, (None, None))
        label = f"block {block.idx}" + (f" ({owner_type})" if owner_type else "")
        blocks.append({"id": f"b{block.idx}", "idx": block.idx,
                       "parent": f"b{block.parent_idx}" if block.parent_idx >= 0 else None,
                       "owner": owner, "label": label})

    variables = []
    inline_rows = {}  # variable id -> the text of its row inside an op's box
    persistable_ids = set()
    quoted = {}  # variable id -> its DOT string (edges name each variable many times)
    kinds = {}  # VarType -> (name, holds a tensor)
    dtypes = {}  # the var's dtype -> its text
    for block in program.blocks:
        bid = f"b{block.idx}"
        block_vars = block.vars
        for name in sorted(block_vars):
            var = block_vars[name]
            vid = f"v:{block.idx}:{name}"
            shape = list(map(int, var.shape))
            kind, tensor = kinds.get(var.type) or kinds.setdefault(
                var.type, (var.type.name, holds_tensor(var)))
            dtype = dtypes.get(var.dtype)
            if dtype is None:
                dtype = dtypes[var.dtype] = _dtype_text(var)
            parameter = bool(var.is_parameter)
            persistable = bool(var.persistable)
            lod_level = var.lod_level
            shape_text = _shape_text(shape)
            # a LOD_RANK_TABLE or STEP_SCOPES has no shape or dtype to show: its kind instead
            label = shape_text if tensor else f"({kind.lower()})"
            tooltip = (f"{kind} {dtype} {shape_text}" if tensor else kind) + (
                f" lod_level {lod_level}" if lod_level else "") + (
                ", parameter" if parameter else ", persistable" if persistable else "")
            # parameters and other persistable variables (learning rates, moments) are read by
            # ops all over the program: drawn inside those ops, they add no long edges
            if persistable:
                persistable_ids.add(vid)
            inline_rows[vid] = f"{name} {label}"
            quoted[vid] = _dot.quote(vid)
            variables.append({
                "id": vid, "block": bid, "name": name, "type": kind, "dtype": dtype,
                "shape": shape, "lod_level": int(lod_level), "inline": persistable,
                "persistable": persistable, "parameter": parameter,
                "stop_gradient": bool(var.stop_gradient),
                "new": since is not None and _serial(program, var) > since,
                "dot": _dot.var_statement(vid, name, label, parameter, persistable, tooltip)})

    # the names each block's ops write: a sub-block's input that none of them does comes
    # from outside the block, and is drawn inside the op that reads it
    written = {}
    for op, _, _, bidx, _ in op_records:
        names = written.setdefault(bidx, set())
        for args in op.outputs.values():
            names.update(args)

    ops = []
    edges = []
    seen_edges = set()
    sources = {}  # an op's source -> its text
    for op, oid, serial, bidx, index in op_records:
        block = op.block
        block_vars = block.vars
        block_names = block_indices[id(op)]
        attrs = {}
        sub_blocks = []
        for name, value in op.attrs.items():
            if name in HIDDEN_ATTRS:
                continue
            if name in block_names:
                if isinstance(value, (list, tuple)):
                    attrs[name] = [f"b{v}" for v in value]
                    sub_blocks.extend(attrs[name])
                else:
                    attrs[name] = f"b{value}"
                    sub_blocks.append(attrs[name])
            elif value.__class__ in _PLAIN_JSON:  # (most attributes: as they are)
                attrs[name] = value
            else:
                attrs[name] = json_value(value)
        role = op_role_name(op.attrs.get("op_role"))
        source = op.source
        if source is not None:
            key = source if source.__class__ is tuple else id(source)
            text = sources.get(key)
            if text is None:
                text = sources[key] = _source_text(source)
            source = text
        quoted_op = _dot.quote(oid)
        op_edges = []
        for direction, args in ((0, op.inputs), (1, op.outputs)):
            for slot, names in args.items():
                for name in names:
                    if name == EMPTY_VAR_NAME:
                        continue
                    var = block_vars.get(name)
                    if var is None:
                        var = block._find_var_recursive(name)
                        if var is None:  # named but declared nowhere (a loaded file may)
                            continue
                    var_block = var.block.idx
                    vid = f"v:{var_block}:{name}"
                    if direction == 0:
                        src, dst, quoted_src, quoted_dst = vid, oid, quoted[vid], quoted_op
                    else:
                        src, dst, quoted_src, quoted_dst = oid, vid, quoted_op, quoted[vid]
                    eid = f"e|{src}|{dst}|{slot}"
                    if eid in seen_edges:
                        continue
                    seen_edges.add(eid)
                    edge = {"id": eid, "src": src, "dst": dst, "slot": slot,
                            "dot": _dot.quoted_edge_statement(eid, quoted_src, quoted_dst,
                                                              slot)}
                    if vid in persistable_ids or (direction == 0 and _read_inside(
                            role, name, var_block, bidx, written)):
                        edge["inline"] = True
                    op_edges.append((direction, slot, vid, edge))
        op_edges.sort(key=_EDGE_ORDER)
        edges.extend(e[3] for e in op_edges)
        tooltip = f"{op.type} ({role})" + (f"\n{source}" if source is not None else "")
        rows = _inline_rows(op_edges, inline_rows, persistable_ids)
        record = {
            "id": oid, "block": f"b{bidx}", "index": index, "type": op.type, "role": role,
            "inputs": {k: list(v) for k, v in op.inputs.items()},
            "outputs": {k: list(v) for k, v in op.outputs.items()},
            "attrs": attrs, "sub_blocks": sub_blocks, "pair": pairs.get(oid),
            "new": since is not None and serial > since, "source": source,
            "dot": _dot.op_statement(oid, op.type, role, tooltip, bool(sub_blocks))}
        if rows:
            record["dot_inline"] = _dot.op_statement(oid, op.type, role, tooltip,
                                                     bool(sub_blocks), rows)
        ops.append(record)

    roles = {record["id"]: record["role"] for record in ops}
    op_ids = {id(op): (oid, serial) for op, oid, serial, _, _ in op_records}
    hierarchy = program_hierarchy(program, op_ids, roles, pairs)
    return {
        "format": FORMAT, "version": VERSION, "revision": int(program._version),
        "title": title if title is not None else "program",
        "blocks": blocks, "ops": ops, "vars": variables, "edges": edges,
        "dot_header": _dot.DOT_HEADER, "hierarchy": hierarchy,
        "stats": {"blocks": len(blocks), "ops": len(ops), "vars": len(variables)},
    }


#: attribute values the model holds as they are (a float only when finite: see json_value)
_PLAIN_JSON = frozenset((str, int, bool))
#: an op's edges in canonical order: inputs before outputs, then slot, then variable id
_EDGE_ORDER = operator.itemgetter(0, 1, 2)


def _read_inside(role, name, var_block, op_block, written):
    """Whether an op draws its input ``name`` as a row of its box instead of an edge: a
    gradient op reading a forward value (the edge would run back across the whole forward
    pass), or a sub-block op reading a variable of another block that no op of its own
    block writes (an edge into the cluster from far outside it)."""
    if role == "backward" and GRAD_SUFFIX not in name:
        return True
    return var_block != op_block and name not in written.get(op_block, ())


#: rows listed inside one op's box; more are summed up in its last row
MAX_INLINE_ROWS = 8


def _inline_rows(op_edges, inline_rows, persistable_ids):
    """The rows an op's box lists: one ``(text, persistable)`` per variable drawn inside it,
    with its input slots and, for one it also writes (an update in place), its output slots:
    ``Moment1 → Moment1Out: adam_0.moment1_0 [13, 1]``. Past ``MAX_INLINE_ROWS`` the last
    row says how many more there are (the details panel lists every input)."""
    slots = {}
    for direction, slot, vid, edge in op_edges:
        if "inline" in edge:
            found = slots.get(vid)
            if found is None:
                found = slots[vid] = ([], [])
            found[direction].append(slot)
    if not slots:
        return []
    rows = []
    for vid, (reads, writes) in slots.items():
        text = "/".join(reads)
        if writes:
            text += (" \u2192 " if reads else "\u2192 ") + "/".join(writes)
        rows.append((f"{text}: {inline_rows[vid]}", vid in persistable_ids))
    if len(rows) > MAX_INLINE_ROWS:
        more = len(rows) - MAX_INLINE_ROWS + 1
        rows = rows[:MAX_INLINE_ROWS - 1] + [(f"\u2026 and {more} more", False)]
    return rows


_GRAD_TYPE = re.compile(r"(.+)_grad(\d*)$")


def _pair_grad_ops(op_records):
    """{op id: paired op id} for forward ops and their ``<type>_grad`` ops (both ways).

    Rule: a ``T_grad`` op pairs with the latest not-yet-paired op of type ``T`` (earlier in
    program order: blocks by index, ops in order) that outputs a variable whose gradient
    (``name@GRAD``, ``@RENAME`` suffixes ignored) the grad op reads. If it reads none (a grad op
    fed only by forward values), the grad op's outputs are used instead: it pairs with the
    latest unpaired ``T`` op that reads ``name`` where the grad op writes ``name@GRAD``.
    Backward writes grad ops in reverse forward order, so "latest unpaired" matches the
    forward op of the same step when a variable is written by several ops of one type.
    """
    producers = {}  # (type, output name) -> [(order, op id)]
    consumers = {}  # (type, input name) -> [(order, op id)]
    pairs = {}
    forward_types = {}  # op type -> the type it is the gradient of, or None
    for order, (op, oid, _, _, _) in enumerate(op_records):
        op_type = op.type
        forward_type = forward_types.get(op_type, False)
        if forward_type is False:
            grad = _GRAD_TYPE.match(op_type)
            # conv2d_grad -> conv2d, cross_entropy_grad2 -> cross_entropy2
            forward_type = forward_types[op_type] = None if grad is None else \
                grad.group(1) + grad.group(2)
        if forward_type is not None:
            found = _candidates(op.inputs, forward_type, producers)
            if not found:
                found = _candidates(op.outputs, forward_type, consumers)
            best = max((c for c in found if c[1] not in pairs), default=None)
            if best is not None:
                pairs[oid] = best[1]
                pairs[best[1]] = oid
            continue
        for names in op.outputs.values():
            for name in names:
                producers.setdefault((op_type, name), []).append((order, oid))
        for names in op.inputs.values():
            for name in names:
                consumers.setdefault((op_type, name), []).append((order, oid))
    return pairs


def _candidates(args, forward_type, index):
    found = []
    for names in args.values():
        for name in names:
            base = _grad_base(name)
            if base is not None:
                found.extend(index.get((forward_type, base), ()))
    return found


# --- memory figures per op --------------------------------------------------------------------
MEMORY_FIGURES_FORMAT = "fluid-nb.op-memory"

#: variables listed per op in the memory figures (the count says how many there were)
MAX_MEMORY_VARS = 8


def program_memory(model, events, max_vars=MAX_MEMORY_VARS):
    """What each op of a program model allocated during a recorded run: the arena's events
    (``fluid.memory.events(place)``, :class:`~fluid_nb.memory.events.Event` records) summed
    per op and keyed by the model's op ids, for the graph to tint its ops by::

        {"format": "fluid-nb.op-memory", "version": 1, "events": n,
         "ops": {op id: {"label": "mul #2", "bytes": b (block sizes), "requested": b (asked),
                         "blocks": n, "vars": [name, ...] (at most max_vars),
                         "vars_count": n, "unnamed": n (blocks no variable kept)}},
         "min": b, "max": b (over the ops listed), "total": b, "blocks": n,
         "outside": {"bytes", "requested", "blocks"} (feeding, fetching, no op),
         "unmatched": {"bytes", "requested", "blocks"} (ops this model does not have)}

    Events name ops as ``(type, block index, op index)`` in the user's program, so ops of
    sub-blocks map by (block, index), summed over every iteration of a loop. An event whose
    op is not at that place in the model, or is of another type there (the program changed
    after the run), counts as ``unmatched``. Only ops that allocated something are listed.

    Example::

        fluid.memory.record_events(place)
        exe.run(main, feed=feed, fetch_list=[loss])
        figures = program_memory(program_model(main), fluid.memory.events(place))
        figures["ops"]["op:3"]    # {'bytes': 65536, 'requested': 51200, 'blocks': 1, ...}
    """
    from .memory_model import op_allocations, op_label

    at = {(int(op["block"][1:]), op["index"]): op for op in model["ops"]}
    ops = {}
    outside = {"bytes": 0, "requested": 0, "blocks": 0}
    unmatched = dict(outside)
    events = list(events)
    for key, entry in op_allocations(events).items():
        found = None if key is None else at.get((key[1], key[2]))
        if found is None or found["type"] != key[0]:
            if key is None or key[2] < 0 or key[0] in ("feed", "fetch"):
                into = outside
            else:
                into = unmatched
            for field in into:
                into[field] += entry[field]
            continue
        ops[found["id"]] = {"label": op_label(key),
                            "bytes": entry["bytes"], "requested": entry["requested"],
                            "blocks": entry["blocks"], "vars": entry["variables"][:max_vars],
                            "vars_count": len(entry["variables"]),
                            "unnamed": entry["unnamed"]}
    sizes = [figure["bytes"] for figure in ops.values()]
    order = {op["id"]: k for k, op in enumerate(model["ops"])}
    return {"format": MEMORY_FIGURES_FORMAT, "version": 1, "events": len(events),
            "ops": dict(sorted(ops.items(), key=lambda item: order[item[0]])),
            "min": min(sizes, default=0), "max": max(sizes, default=0),
            "total": sum(sizes), "blocks": sum(f["blocks"] for f in ops.values()),
            "outside": outside, "unmatched": unmatched}


def memory_text(figure):
    """``"allocates 1.0 MiB in 3 blocks: fc_0.tmp_0, fc_0.tmp_1, fc_0.tmp_2"`` for one op's
    memory figures (an entry of :func:`program_memory`'s ``ops``), ``"allocates nothing"``
    for None; the front end's details panel writes the same."""
    from .memory_model import bytes_text

    if not figure:
        return "allocates nothing"
    blocks = figure["blocks"]
    text = f"allocates {bytes_text(figure['bytes'])} in {blocks} block{'s' if blocks != 1 else ''}"
    names = list(figure["vars"])
    more = figure["vars_count"] - len(names)
    if more > 0:
        names.append(f"… {more} more")
    if figure.get("unnamed"):
        names.append(f"{figure['unnamed']} unnamed")
    return text + (": " + ", ".join(names) if names else "")
