"""The memory model: the host arena's block map, a run's used bytes op by op, and which
variable holds how much, as plain JSON for :class:`fluid_nb.widgets.MemoryView` and its
HTML fallback.

``memory_model(place, scope, events)`` reads the arena (``fluid.memory.blocks`` and
``stats``) and joins three pure parts::

    {"format": "fluid-nb.memory", "version": 1, "title": str,
     "stats": fluid.memory.stats(place),
     "map": block_map(...), "timeline": timeline(...) or None,
     "variables": variable_table(...), "colours": {name: css colour},
     "legend": legend(...), "peaks": peaks(...)}

(the colours go by the table's order, then by name, :func:`colour_at`)

``legend(arena_map, colours)`` -- one entry per colour the block map draws::

    [{"state": "free" | "used" | name, "label": str, "colour": css colour,
      "bytes": b, "blocks": n}]

  free space first (the bars' background), then blocks no variable of the scope holds,
  then the variables, the most bytes first.

``peaks(stats, timeline)`` -- the two peaks a view shows, each with the words it is shown
with, so no figure reads as the other::

    {"arena": {"bytes": b, "text": "arena peak since start 18.3 MiB"},
     "run": {"bytes": b, "op": label, "text": "run peak 8.3 MiB during mul #3"} | None}

  the arena's is the most bytes it held since it was made (or ``fluid.memory.reset_peak``),
  earlier runs and the startup program included; the run's is the most during the events.

``block_map(blocks, stats)`` -- the chunks as bars::

    {"chunk_size": b, "min_block": b, "fragmentation": f, "free": b, "largest_free": b,
     "chunks": [{"index": k, "size": b, "shown": b, "used": b, "free": b, "beyond": b,
                 "blocks": [{"offset": o, "size": b, "state": "free" | "used" | name}]}],
     "huge": [{"size": b, "state": ...}]}

  ``shown`` is the part of the chunk drawn: the smallest power of two (at least 64 KiB)
  that holds every block in use, since a 256 MiB chunk with a few MiB in use would be a
  bar of slivers; ``beyond`` is the free space past it (free blocks there are left out).

``timeline(events)`` -- used bytes op by op (events of one op in a row make one point)::

    {"start": b, "end": b, "events": n, "truncated": bool,
     "peak": {"index": k, "used": b, "label": str},
     "points": [{"label": "mul #2", "op": [type, block, index] | None, "used": b (after),
                 "high": b (the most during it), "events": n,
                 "alive": [[name, bytes]] (largest first, at most max_alive),
                 "alive_count": n, "alive_bytes": b}]}

  ``alive`` is as the op left it. A variable is alive from the alloc that named it to the
  free of its block; only blocks allocated within the events are known by name. Op indices
  are those of the program that ran: ``Executor.run``'s copy, with its feed ops first.

``variable_table(events, holders)`` -- one row per variable, the largest block first::

    [{"name", "bytes" (requested), "block" (the block's size), "op" (label of the op that
      allocated it last, or None: before the events), "allocs": n, "alive": bool (not freed by the end of the
      events), "in_scope": bool (its tensor lies in the arena now)}]

``op_allocations(events)`` -- what each op allocated, summed over every run of it (a loop
body's op runs once per iteration)::

    {(type, block, index) | None: {"bytes": b (block sizes), "requested": b, "blocks": n,
                                   "variables": [name, ...] (first allocation first),
                                   "unnamed": n (blocks no variable kept: temporaries)}}

Nothing here changes the arena; reading the events drains them (``fluid.memory.events``),
so callers pass the events they read.
"""
import html

__all__ = ["MEMORY_FORMAT", "FREE_COLOUR", "USED_COLOUR", "block_map", "timeline",
           "variable_table", "op_allocations", "legend", "peaks", "memory_model",
           "memory_html", "timeline_svg", "op_label", "colour_at", "bytes_text"]

MEMORY_FORMAT = "fluid-nb.memory"

#: the least of a chunk the block map draws
MIN_SHOWN = 64 << 10

#: free space in the block map
FREE_COLOUR = "#eef1f4"
#: a block in use that no variable of the scope holds
USED_COLOUR = "#9aa4ad"

_ALLOCS = ("alloc", "huge_alloc")
_FREES = ("free", "huge_free")


def bytes_text(size):
    """``size`` bytes the way people read them: ``512 B``, ``64.0 KiB``, ``3.2 MiB``."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift:
            return f"{size / (1 << shift):.1f} {unit}"
    return f"{size} B"


def op_label(op):
    """``"mul #2"`` for op index 2 of block 0, ``"mul #2 (block 1)"`` in a sub-block, and
    ``"outside ops"`` for None (feeding, fetching, the user's own arrays)."""
    if op is None:
        return "outside ops"
    kind, block, index = op
    return f"{kind} #{index}" + (f" (block {block})" if block else "")


def colour_at(rank):
    """The colour of the ``rank``-th variable (by block size, largest first): hues spread by
    the golden angle, so the big blocks that sit side by side never look alike."""
    return f"hsl({rank * 137.508 % 360:.0f}, 62%, 58%)"


# --- the block map --------------------------------------------------------------------------
def block_map(blocks, stats):
    """The chunks as bars of blocks (see the module's text) from ``fluid.memory.blocks``'
    ``[(chunk, offset, size, state)]`` and ``fluid.memory.stats``' dict."""
    chunk_size = stats["chunk_size"]
    by_chunk = {}
    huge = []
    for chunk, offset, size, state in blocks:
        if chunk is None:
            huge.append({"size": size, "state": state})
        else:
            by_chunk.setdefault(chunk, []).append((offset, size, state))
    chunks = []
    for index in range(max(stats["chunks"], max(by_chunk, default=-1) + 1)):
        listing = sorted(by_chunk.get(index, ()))
        end = max((o + s for o, s, state in listing if state != "free"), default=0)
        shown = min(chunk_size, max(MIN_SHOWN, 1 << max(end - 1, 0).bit_length()))
        drawn, beyond = [], 0
        for offset, size, state in listing:
            if offset >= shown:
                beyond += size
                continue
            if offset + size > shown:  # a free block straddling the edge (a whole chunk)
                beyond += offset + size - shown
                size = shown - offset
            drawn.append({"offset": offset, "size": size, "state": state})
        used = sum(s for _, s, state in listing if state != "free")
        chunks.append({"index": index, "size": chunk_size, "shown": shown, "used": used,
                       "free": sum(s for _, s, state in listing if state == "free"),
                       "beyond": beyond, "blocks": drawn})
    return {"chunk_size": chunk_size, "min_block": stats["min_block"],
            "fragmentation": stats["fragmentation"], "free": stats["free"],
            "largest_free": stats["largest_free"], "chunks": chunks, "huge": huge}


# --- the timeline ---------------------------------------------------------------------------
def _change(event):
    if event.kind in _ALLOCS:
        return event.size
    if event.kind in _FREES:
        return -event.size
    return 0


def timeline(events, max_alive=12, max_points=1500):
    """Used bytes after each op of ``events`` (``fluid.memory.events``' records, oldest
    first), the peak marked, and the named variables alive at each point (see the module's
    text); None when there are no events. Past ``max_points`` points, neighbouring points
    are joined (each keeps the highest use of those it joins)."""
    if not events:
        return None
    start = events[0].used - _change(events[0])
    alive = {}  # block address -> (variable name, block bytes)
    points = []
    current = None
    for event in events:
        if current is None or event.op != current["op_key"]:
            if current is not None:
                current["alive"] = dict(alive)  # as the previous op left it
            current = {"op_key": event.op, "high": event.used, "events": 0}
            points.append(current)
        if event.kind in _ALLOCS:
            if event.variable is not None:
                alive[event.address] = (event.variable, event.size)
            else:
                alive.pop(event.address, None)
        elif event.kind in _FREES:
            alive.pop(event.address, None)
        current["used"] = event.used
        current["high"] = max(current["high"], event.used)
        current["events"] += 1
    current["alive"] = dict(alive)
    truncated = len(points) > max_points
    if truncated:
        points = _joined(points, max_points)
    out = []
    for point in points:
        named = {}
        for name, size in point["alive"].values():
            named[name] = named.get(name, 0) + size
        ranked = sorted(named.items(), key=lambda item: (-item[1], item[0]))
        op = point["op_key"]
        out.append({"label": point.get("label") or op_label(op),
                    "op": list(op) if op is not None else None,
                    "used": point["used"], "high": point["high"], "events": point["events"],
                    "alive": [list(item) for item in ranked[:max_alive]],
                    "alive_count": len(ranked), "alive_bytes": sum(named.values())})
    top = max(range(len(out)), key=lambda k: out[k]["high"])
    return {"start": start, "end": events[-1].used, "events": len(events),
            "truncated": truncated, "points": out,
            "peak": {"index": top, "used": out[top]["high"], "label": out[top]["label"]}}


def _joined(points, max_points):
    size = -(-len(points) // max_points)
    joined = []
    for at in range(0, len(points), size):
        group = points[at:at + size]
        highest = max(group, key=lambda p: p["high"])
        labels = [op_label(group[0]["op_key"]), op_label(group[-1]["op_key"])]
        joined.append({"op_key": highest["op_key"], "used": group[-1]["used"],
                       "high": highest["high"], "alive": highest["alive"],
                       "events": sum(p["events"] for p in group),
                       "label": labels[0] if len(group) == 1 else " … ".join(labels)})
    return joined


# --- the variables --------------------------------------------------------------------------
def variable_table(events, holders=(), nbytes=None):
    """One row per variable named in ``events`` or held in the arena (``holders``:
    ``fluid.memory.holders``' ``[(name, block bytes)]``), the largest block first (see the
    module's text). ``nbytes`` (``{name: bytes of its data}``) gives the bytes of a held
    variable no event names; without it they are its blocks' bytes."""
    rows = {}
    alive = {}  # address -> name
    for event in events:
        if event.kind in _ALLOCS and event.variable is not None:
            row = rows.setdefault(event.variable, {"name": event.variable, "allocs": 0})
            row.update(bytes=event.requested, block=event.size, op=op_label(event.op))
            row["allocs"] += 1
            alive[event.address] = event.variable
        elif event.kind in _ALLOCS or event.kind in _FREES:
            alive.pop(event.address, None)
    still = set(alive.values())
    held = dict(holders)
    for row in rows.values():
        row["alive"] = row["name"] in still
        row["in_scope"] = row["name"] in held
    for name, size in held.items():
        if name not in rows:
            rows[name] = {"name": name, "bytes": (nbytes or {}).get(name, size),
                          "block": size, "op": None,
                          "allocs": 0, "alive": True, "in_scope": True}
    return sorted(rows.values(), key=lambda r: (-r["block"], r["name"]))


# --- what the colours and peaks mean ---------------------------------------------------------
#: the legend's words for the two states that are not variable names
_STATE_LABELS = {"free": "free",
                 "used": "in use, held by no variable of the scope (temporaries, plans, "
                         "fetched or user arrays)"}


def legend(arena_map, colours):
    """One entry per colour ``block_map``'s ``arena_map`` draws (see the module's text):
    each state's colour (``colours`` for variable names), its bytes and blocks in the map
    (huge blocks included; free bytes are all the chunks' free space, drawn or not)."""
    totals = {}
    for block in [b for c in arena_map["chunks"] for b in c["blocks"]] + arena_map["huge"]:
        entry = totals.setdefault(block["state"], [0, 0])
        entry[0] += block["size"]
        entry[1] += 1
    if arena_map["chunks"]:  # the background of every bar
        free = totals.setdefault("free", [0, 0])
        free[0] = sum(c["free"] for c in arena_map["chunks"])

    def rank(state):
        return (state != "free", state != "used", -totals[state][0], state)

    return [{"state": state, "label": _STATE_LABELS.get(state, state),
             "colour": _colour_of(colours, state), "bytes": totals[state][0],
             "blocks": totals[state][1]} for state in sorted(totals, key=rank)]


def _colour_of(colours, state):
    if state == "free":
        return FREE_COLOUR
    return colours.get(state, USED_COLOUR) if state != "used" else USED_COLOUR


def _run_peak_text(peak):
    return f"run peak {bytes_text(peak['used'])} during {peak['label']}"


def peaks(stats, line):
    """The arena's peak and the recorded run's (``line``: :func:`timeline`'s, or None),
    each with its words (see the module's text)."""
    run = None
    if line:
        peak = line["peak"]
        run = {"bytes": peak["used"], "op": peak["label"], "text": _run_peak_text(peak)}
    return {"arena": {"bytes": stats["peak"],
                      "text": f"arena peak since start {bytes_text(stats['peak'])}"},
            "run": run}


# --- by op ---------------------------------------------------------------------------------
def op_allocations(events):
    """What each op of ``events`` allocated (see the module's text): the alloc and
    huge_alloc events summed per ``Event.op`` (None: outside ops), block bytes and bytes
    asked, the number of blocks, and the variables whose blocks they were, in the order of
    their first allocation."""
    found = {}
    for event in events:
        if event.kind not in _ALLOCS:
            continue
        entry = found.get(event.op)
        if entry is None:
            entry = found[event.op] = {"bytes": 0, "requested": 0, "blocks": 0,
                                       "variables": [], "unnamed": 0, "_seen": set()}
        entry["bytes"] += event.size
        entry["requested"] += event.requested
        entry["blocks"] += 1
        if event.variable is None:
            entry["unnamed"] += 1
        elif event.variable not in entry["_seen"]:
            entry["_seen"].add(event.variable)
            entry["variables"].append(event.variable)
    for entry in found.values():
        del entry["_seen"]
    return found


# --- all of it, read from the arena ---------------------------------------------------------
def memory_model(place, scope=None, events=(), title="memory", max_alive=12):
    """The arena of ``place`` now (block map with the variables of ``scope``), the timeline
    of ``events`` and the variable table, with a colour per variable name (see the module's
    text). Example::

        fluid.memory.record_events(place)
        exe.run(main, feed=feed, fetch_list=[loss])
        model = memory_model(place, fluid.global_scope(), fluid.memory.events(place))
        model["timeline"]["peak"]      # {'index': 24, 'used': 9485824, 'label': 'adam #26'}
    """
    from .. import memory

    stats = memory.stats(place)
    events = list(events)
    holders = memory.holders(place, scope) if scope is not None else []
    arena_map = block_map(memory.blocks(place, scope), stats)
    line = timeline(events, max_alive=max_alive)
    table = variable_table(events, holders, _data_bytes(scope, holders))
    names = [row["name"] for row in table]  # the table's order: the largest first
    others = set()
    for chunk in arena_map["chunks"]:
        others.update(b["state"] for b in chunk["blocks"])
    others.update(b["state"] for b in arena_map["huge"])
    for point in (line or {}).get("points", ()):
        others.update(name for name, _ in point["alive"])
    names += sorted(others - set(names) - {"free", "used"})
    colours = {name: colour_at(rank) for rank, name in enumerate(names)}
    return {"format": MEMORY_FORMAT, "version": 1, "title": title, "stats": stats,
            "map": arena_map, "timeline": line, "variables": table, "colours": colours,
            "legend": legend(arena_map, colours), "peaks": peaks(stats, line)}


def _data_bytes(scope, holders):
    """``{name: bytes of the arrays its value holds}`` for the held variables ``scope`` (or
    a parent) finds."""
    from ..memory.events import arrays_in

    found = {}
    for name, _ in holders:
        holder = scope.find_var(name)
        if holder is not None:
            found[name] = sum(int(a.nbytes) for a in arrays_in(holder.value))
    return found


# --- HTML for frontends without the widget --------------------------------------------------
def _colour(model, state):
    return _colour_of(model["colours"], state)


def _map_html(model, esc):
    parts = []
    for chunk in model["map"]["chunks"]:
        shown = chunk["shown"]
        cells = "".join(
            f"<div title='{esc(b['state'])}: {bytes_text(b['size'])} at {b['offset']}' "
            f"style='position:absolute;top:0;bottom:0;left:{100 * b['offset'] / shown:.4f}%;"
            f"width:{max(100 * b['size'] / shown, 0.15):.4f}%;background:"
            f"{_colour(model, b['state'])};border-right:1px solid #fff'></div>"
            for b in chunk["blocks"])
        parts.append(
            f"<div>chunk {chunk['index']}: {bytes_text(chunk['used'])} used, first "
            f"{bytes_text(shown)} of {bytes_text(chunk['size'])} shown"
            + (f" ({bytes_text(chunk['beyond'])} free beyond)" if chunk["beyond"] else "")
            + f"</div><div class='fluid-nb-chunk' style='position:relative;height:22px;"
            f"border:1px solid #888;background:{FREE_COLOUR};margin:2px 0 6px'>{cells}</div>")
    for block in model["map"]["huge"]:
        parts.append(f"<div>huge block: {esc(block['state'])}, {bytes_text(block['size'])}</div>")
    parts.append(_legend_html(model, esc))
    return "".join(parts)


def _legend_html(model, esc):
    items = "".join(
        f"<span class='fluid-nb-memory-legend-item' data-colour='{esc(e['colour'])}' "
        f"style='margin-right:10px;white-space:nowrap'><span style='display:inline-block;"
        f"width:10px;height:10px;border:1px solid #999;background:{e['colour']}'></span> "
        f"{esc(e['label'])} {bytes_text(e['bytes'])}</span> "
        for e in model.get("legend") or ())
    return f"<div class='fluid-nb-memory-legend'>{items}</div>" if items else ""


def timeline_svg(line, width=640, height=140):
    """The timeline as an inline SVG: used bytes after each op as a polyline, the run's
    peak as a red dot with its op and bytes (what the HTML fallback and saved notebooks
    show)."""
    points = line["points"]
    low = min([line["start"]] + [p["used"] for p in points])
    high = max(p["high"] for p in points)
    span = max(high - low, 1)
    pad, bottom = 8, height - 18

    def xy(k, value):
        x = pad + (width - 2 * pad) * (k + 1) / len(points)
        return x, bottom - (bottom - pad) * (value - low) / span

    coords = [xy(-1, line["start"])]
    before = line["start"]
    for k, point in enumerate(points):  # a staircase: level between ops, a step at each
        coords += [xy(k, before), xy(k, point["high"]), xy(k, point["used"])]
        before = point["used"]
    polyline = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
    peak = line["peak"]
    px, py = xy(peak["index"], peak["used"])
    anchor = "end" if px > width / 2 else "start"
    label = html.escape(_run_peak_text(peak))
    return (f"<svg class='fluid-nb-memory-timeline' xmlns='http://www.w3.org/2000/svg' "
            f"width='{width}' height='{height}' viewBox='0 0 {width} {height}'>"
            f"<rect x='0' y='0' width='{width}' height='{height}' fill='#fff' stroke='#ccc'/>"
            f"<polyline points='{polyline}' fill='none' stroke='#1976d2' stroke-width='1.5'/>"
            f"<circle class='fluid-nb-peak' cx='{px:.1f}' cy='{py:.1f}' r='4' fill='#d32f2f'/>"
            f"<text x='{px + (-7 if anchor == 'end' else 7):.1f}' y='{max(py - 6, 10):.1f}' "
            f"font-size='11' fill='#d32f2f' "
            f"text-anchor='{anchor}'>{label}</text>"
            f"<text x='{pad}' y='{height - 4}' font-size='10' fill='#666'>"
            f"{bytes_text(low)} … {bytes_text(high)} over {len(points)} ops</text></svg>")


def memory_html(model, max_rows=40):
    """The memory model as plain HTML: the chunks as bars of coloured blocks (free space
    light), the timeline as an inline SVG with the peak marked, and the variable table; for
    saved notebooks, nbviewer and frontends without widgets."""
    esc = html.escape
    stats = model["stats"]
    said = model["peaks"]
    head = (f"<b>{esc(model['title'])}</b>: {bytes_text(stats['used'])} used now in "
            f"{stats['used_blocks']} blocks, {esc(said['arena']['text'])}, "
            + (f"{esc(said['run']['text'])}, " if said["run"] else "")
            + f"{stats['chunks']} chunk(s) of {bytes_text(stats['chunk_size'])}, "
            f"largest free {bytes_text(stats['largest_free'])}, fragmentation "
            f"{stats['fragmentation']:.2f}")
    parts = [f"<div class='fluid-nb fluid-nb-memory'><div>{head}</div>",
             _map_html(model, esc)]
    if model["timeline"]:
        parts.append(timeline_svg(model["timeline"]))
    rows = "".join(
        f"<tr><td><span style='display:inline-block;width:10px;height:10px;background:"
        f"{_colour(model, r['name'])}'></span> {esc(r['name'])}</td><td>{r['bytes']}</td>"
        f"<td>{bytes_text(r['block'])}</td><td>{esc(r['op'] or 'earlier')}</td>"
        f"<td>{'yes' if r['alive'] else ''}</td></tr>"
        for r in model["variables"][:max_rows])
    if rows:
        more = len(model["variables"]) - max_rows
        parts.append("<table class='fluid-nb-memory-vars'><tr><th>variable</th><th>bytes</th>"
                     f"<th>block</th><th>allocated by</th><th>alive</th></tr>{rows}</table>"
                     + (f"<div>… {more} more</div>" if more > 0 else ""))
    parts.append("</div>")
    return "".join(parts)
