"""The programs of a parameter-server job side by side, as one program model: each process
(a trainer, a server) is a lane, drawn as a cluster holding its blocks, and the RPC ops
are joined across the lanes.

``distributed_model(trainers, pservers)`` is a pure function of the programs. It returns a
model in the program model's format (MIME ``application/vnd.fluid-nb.program+json``, see
:mod:`.program_model`), so the program renderer, the standalone page and ``assemble_dot``
draw it as they draw one program. Each process's blocks are renumbered after the previous
process's (block ``b<n>``, variables ``v:<n>:<name>``, ops ``op:<k>`` counted over the job)
under one root block, ``job``; each process's block 0 is a child of it labelled with the
process. Besides each program's own edges, the model has one edge per RPC exchange
(``"kind"`` ``"rpc"``):

- ``send`` -> the ``listen_and_serv`` of each endpoint in its ``epmap`` (labelled with the
  variables sent there);
- ``listen_and_serv`` -> ``recv`` for each endpoint a recv fetches from (the variables it
  gets), and -> ``distributed_lookup_table`` for each table block it serves;
- ``send_barrier`` / ``fetch_barrier`` -> the ``listen_and_serv`` of each of its
  ``endpoints`` (dashed).

An endpoint with no server program among ``pservers`` gets no edge; ``missing`` lists it.

``job_model(job.status())`` is the other half of the job's view: its processes as they
train (state, steps, last loss, bytes per peer, restarts), one row each; ``job_html`` and
``job_rows_text`` are its plain fallbacks.
"""
import math

from ..errors import InvalidType, expected
from ..framework.program import Program
from . import dot as _dot
from .program_model import FORMAT, VERSION, program_model

JOB_BLOCK = "job"
#: received variables listed inside a listen_and_serv box; more are summed up
MAX_SERVE_ROWS = 8

#: colours of the exchange edges: gradients out, parameters back, barriers
SEND_COLOR, RECV_COLOR, BARRIER_COLOR = "#2563eb", "#16a34a", "#9ca3af"


def _lanes(trainers, pservers):
    """[(label, program)] for the trainers (a list, or {trainer id: program}) and the
    servers ({endpoint: program}, or a list whose listen_and_serv names the endpoint)."""
    lanes = []
    items = trainers.items() if isinstance(trainers, dict) else enumerate(trainers or ())
    for tid, program in items:
        lanes.append((f"trainer {tid}", program))
    if isinstance(pservers, dict):
        items = pservers.items()
    else:
        items = [(_serve_op(p).attrs.get("endpoint") if _serve_op(p) else f"#{i}", p)
                 for i, p in enumerate(pservers or ())]
    for endpoint, program in items:
        lanes.append((f"pserver {endpoint}", program))
    for label, program in lanes:
        if not isinstance(program, Program):
            raise InvalidType(expected("distributed_model", label, "a Program",
                                           type(program).__name__))
    return lanes


def _serve_op(program):
    return next((op for op in program.global_block().ops if op.type == "listen_and_serv"),
                None)


def _rename_statement(statement, old, new):
    return statement.replace(_dot.quote(old), _dot.quote(new))


def _lane_model(model, label, block_offset, op_offset):
    """``model`` (one program's) with ids renumbered after the previous lanes' and its block
    0 put under the job block; returns (model parts, {old op id: new op id})."""
    block_ids = {b["id"]: f"b{b['idx'] + block_offset}" for b in model["blocks"]}
    op_ids = {op["id"]: f"op:{op_offset + k + 1}" for k, op in enumerate(model["ops"])}
    var_ids = {}
    for var in model["vars"]:
        block_idx = int(var["block"][1:]) + block_offset
        var_ids[var["id"]] = f"v:{block_idx}:{var['name']}"
    ids = {**op_ids, **var_ids}
    blocks = []
    for b in model["blocks"]:
        root = b["parent"] is None
        blocks.append({**b, "id": block_ids[b["id"]], "idx": b["idx"] + block_offset,
                       "parent": JOB_BLOCK if root else block_ids[b["parent"]],
                       "owner": op_ids.get(b["owner"]) if b["owner"] else None,
                       "label": label if root else f"{label}: {b['label']}", "lane": label})
    ops = []
    for op in model["ops"]:
        new = op_ids[op["id"]]
        attrs = {name: ([block_ids.get(v, v) for v in value] if isinstance(value, list)
                        and name in _block_attrs(op) else block_ids.get(value, value)
                        if name in _block_attrs(op) else value)
                 for name, value in op["attrs"].items()}
        record = {**op, "id": new, "block": block_ids[op["block"]], "attrs": attrs,
                  "sub_blocks": [block_ids[b] for b in op["sub_blocks"]],
                  "pair": op_ids.get(op["pair"]) if op["pair"] else None, "lane": label,
                  "dot": _rename_statement(op["dot"], op["id"], new)}
        if "dot_inline" in op:
            record["dot_inline"] = _rename_statement(op["dot_inline"], op["id"], new)
        ops.append(record)
    variables = [{**v, "id": var_ids[v["id"]], "block": block_ids[v["block"]],
                  "dot": _rename_statement(v["dot"], v["id"], var_ids[v["id"]])}
                 for v in model["vars"]]
    edges = []
    serving = {op["id"]: op for op in ops if op["type"] == "listen_and_serv"}
    names = {v["id"]: v["name"] for v in variables}
    for e in model["edges"]:
        src, dst = ids[e["src"]], ids[e["dst"]]
        eid = f"e|{src}|{dst}|{e['slot']}"
        edge = {**e, "id": eid, "src": src, "dst": dst,
                "dot": _dot.edge_statement(eid, src, dst, e["slot"])}
        if dst in serving:
            # what a server receives is listed inside its listen_and_serv box: one node per
            # trainer's copy of every gradient would make the lane as wide as the job
            edge["inline"] = True
        edges.append(edge)
    for oid, op in serving.items():
        rows = [(f"X: {names[e['src']]}", False) for e in edges
                if e["dst"] == oid and e["src"] in names]
        if len(rows) > MAX_SERVE_ROWS:
            rows = rows[:MAX_SERVE_ROWS - 1] + [(f"… and {len(rows) - MAX_SERVE_ROWS + 1} "
                                                 f"more", False)]
        op["dot_inline"] = _dot.op_statement(oid, op["type"], op["role"],
                                             f"{op['type']} ({op['role']})", True, rows)
    return {"blocks": blocks, "ops": ops, "vars": variables, "edges": edges}, op_ids


def _block_attrs(op):
    """The attribute names of a model op that name blocks (their values are its sub_blocks)."""
    subs = set(op["sub_blocks"])
    return {name for name, value in op["attrs"].items()
            if (isinstance(value, list) and value and all(v in subs for v in value))
            or (isinstance(value, str) and value in subs)}


def _exchange_edge(kind, src, dst, names, color, tooltip, dashed=False):
    label = ", ".join(names) if len(names) <= 2 else f"{names[0]}, … ({len(names)})"
    eid = f"x|{kind}|{src}|{dst}"
    style = ", style=dashed" if dashed else ""
    statement = (f"{_dot.quote(src)} -> {_dot.quote(dst)} [id={_dot.quote(eid)}, "
                 f'class="rpc {kind}", color="{color}", fontcolor="{color}", penwidth=1.4, '
                 f"constraint=false, label={_dot.quote(label)}, fontsize=8{style}, "
                 f"tooltip={_dot.quote(tooltip)}];")
    return {"id": eid, "src": src, "dst": dst, "slot": kind, "kind": "rpc", "rpc": kind,
            "vars": list(names), "dot": statement}


def _group(names, endpoints):
    """{endpoint: [names]} in first-seen order."""
    grouped = {}
    for name, ep in zip(names, endpoints):
        grouped.setdefault(ep, []).append(name)
    return grouped


def _exchanges(program, lane, op_ids, servers, missing):
    """The exchange edges of one trainer program's RPC ops (``servers``: endpoint -> the
    model id of its listen_and_serv)."""
    edges = []
    for block in program.blocks:
        for op in block.ops:
            oid = op_ids.get(_model_op_id(op))
            if op.type == "send":
                for ep, names in _group(op.input("X"), op.attrs.get("epmap", [])).items():
                    if ep in servers:
                        edges.append(_exchange_edge("send", oid, servers[ep], names,
                                                    SEND_COLOR, f"{lane} sends to {ep}"))
                    else:
                        missing.add(ep)
            elif op.type == "recv":
                outs = op.attrs.get("recv_varnames") or op.output("Out")
                for ep, names in _group(outs, op.attrs.get("epmap", [])).items():
                    if ep in servers:
                        edges.append(_exchange_edge("recv", servers[ep], oid, names,
                                                    RECV_COLOR, f"{lane} gets from {ep}"))
                    else:
                        missing.add(ep)
            elif op.type == "distributed_lookup_table":
                tables = _group(op.attrs.get("table_names", []), op.attrs.get("endpoints", []))
                for ep, names in tables.items():
                    if ep in servers:
                        edges.append(_exchange_edge("prefetch", servers[ep], oid, names,
                                                    RECV_COLOR, f"{lane} looks up rows on {ep}"))
                    else:
                        missing.add(ep)
            elif op.type in ("send_barrier", "fetch_barrier"):
                for ep in op.attrs.get("endpoints", []):
                    if ep in servers:
                        edges.append(_exchange_edge(op.type, oid, servers[ep], [op.type],
                                                    BARRIER_COLOR, f"{lane}: {op.type} to {ep}",
                                                    dashed=True))
                    else:
                        missing.add(ep)
    return edges


def _model_op_id(op):
    from .program_model import op_id
    return op_id(op)


def distributed_model(trainers=(), pservers=(), title="parameter-server job"):
    """The model of a job's programs side by side (see the module docstring).

    ``trainers``: trainer programs (a list, trainer ``i`` at index ``i``, or {id: program});
    ``pservers``: {endpoint: server program}, or server programs (their ``listen_and_serv``
    names the endpoint). Invariant: every edge joins two elements of the model, and each
    lane's part is that program's own model with renumbered ids."""
    lanes = _lanes(trainers, pservers)
    model = {"format": FORMAT, "version": VERSION, "revision": 0, "title": title,
             "blocks": [{"id": JOB_BLOCK, "idx": -1, "parent": None, "owner": None,
                         "label": title}],
             "ops": [], "vars": [], "edges": [], "dot_header": _dot.DOT_HEADER}
    block_offset = op_offset = 0
    lane_ops = []
    for label, program in lanes:
        part, op_ids = _lane_model(program_model(program), label, block_offset, op_offset)
        for key in ("blocks", "ops", "vars", "edges"):
            model[key].extend(part[key])
        lane_ops.append((label, program, op_ids))
        block_offset += len(program.blocks)
        op_offset += len(part["ops"])
    servers = {}
    for label, program, op_ids in lane_ops:
        serve = _serve_op(program)
        if serve is not None:
            servers[serve.attrs.get("endpoint")] = op_ids[_model_op_id(serve)]
    missing = set()
    for label, program, op_ids in lane_ops:
        model["edges"].extend(_exchanges(program, label, op_ids, servers, missing))
    model["lanes"] = [label for label, _, _ in lane_ops]
    model["missing_endpoints"] = sorted(missing)
    model["stats"] = {"blocks": len(model["blocks"]), "ops": len(model["ops"]),
                      "vars": len(model["vars"]), "lanes": len(lanes),
                      "exchanges": sum(1 for e in model["edges"] if e.get("kind") == "rpc")}
    return model


def distributed_listing_html(trainers=(), pservers=()):
    """The job's programs as text listings side by side, one column per process, for
    frontends without the graph renderer (the RPC ops' endpoints are in their attributes)."""
    import html
    from .listing import program_listing
    columns = "".join(
        f"<div style='flex:1 1 0;min-width:24em;overflow-x:auto'><b>{html.escape(label)}</b>"
        f"<pre style='font-size:11px'>{html.escape(program_listing(program, with_vars=False))}"
        f"</pre></div>" for label, program in _lanes(trainers, pservers))
    return f"<div class='fluid-nb-job' style='display:flex;gap:1em'>{columns}</div>"


# --- a running job ---------------------------------------------------------------------------
JOB_FORMAT = "fluid-nb.job"
#: the fields of one process in the job model, as ``ProcessStatus`` names them
PROCESS_FIELDS = ("role", "index", "node", "endpoint", "state", "exit_code", "steps",
                  "last_loss", "bytes_sent", "bytes_received", "restarts")
#: the states after which a process does nothing more
ENDED = ("finished", "failed", "stopped")


def _json_number(value):
    """A loss as JSON holds it: a float, None, or the text of a non-finite one."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else repr(value)


def job_model(statuses, title="parameter-server job"):
    """The model of a running job's processes: one row per process, in the order given
    (``statuses``: :class:`~fluid_nb.distributed.job.ProcessStatus` records, or dicts of
    their fields, as ``Job.status()`` returns them).

    ``{"format": "fluid-nb.job", "title", "processes": [{"label": "trainer.0", <the
    fields>}], "servers": [endpoints], "done", "stats": {"processes", "running", "steps",
    "bytes"}}``. ``stats.steps`` is the trainers' steps summed, ``stats.bytes`` every byte
    the trainers sent and received; ``done`` is true once every process has ended. A
    non-finite loss is its text (``"nan"``), so the model stays plain JSON."""
    rows = []
    for record in statuses:
        fields = record.as_dict() if hasattr(record, "as_dict") else dict(record)
        row = {name: fields.get(name) for name in PROCESS_FIELDS}
        row["label"] = f"{row['role']}.{row['index']}"
        row["steps"] = int(row["steps"] or 0)
        row["restarts"] = int(row["restarts"] or 0)
        row["last_loss"] = _json_number(row["last_loss"])
        row["bytes_sent"] = {str(k): int(v) for k, v in (row["bytes_sent"] or {}).items()}
        row["bytes_received"] = {str(k): int(v)
                                 for k, v in (row["bytes_received"] or {}).items()}
        rows.append(row)
    trainers = [row for row in rows if row["role"] == "trainer"]
    return {"format": JOB_FORMAT, "title": title, "processes": rows,
            "servers": [row["endpoint"] for row in rows if row["role"] == "pserver"],
            "done": bool(rows) and all(row["state"] in ENDED for row in rows),
            "stats": {"processes": len(rows),
                      "running": sum(row["state"] == "running" for row in rows),
                      "steps": sum(row["steps"] for row in trainers),
                      "bytes": sum(sum(row["bytes_sent"].values())
                                   + sum(row["bytes_received"].values())
                                   for row in trainers)}}


def _bytes_text(count):
    for unit, size in (("MB", 1 << 20), ("KB", 1 << 10)):
        if count >= size:
            return f"{count / size:.1f} {unit}"
    return f"{count} B"


def _per_peer(counts):
    return "; ".join(f"{peer}: {_bytes_text(n)}" for peer, n in sorted(counts.items()))


def _loss_and_state(row, missing):
    """A row's last loss as text (``missing`` when none yet) and its state with the exit
    status once there is one."""
    loss = row["last_loss"]
    loss = f"{loss:.6g}" if isinstance(loss, float) else missing if loss is None else loss
    state = row["state"] if row["exit_code"] is None else f"{row['state']} ({row['exit_code']})"
    return loss, state


def job_rows_text(model):
    """The job model's rows as text lines (the widget's plain fallback): process, node,
    state, steps, last loss, bytes per peer, restarts."""
    lines = []
    for row in model["processes"]:
        loss, state = _loss_and_state(row, missing="-")
        lines.append(f"{row['label']:<11} {row['node'] or '-':<15} {state:<14} "
                     f"steps {row['steps']:<6} loss {loss:<10} "
                     f"sent [{_per_peer(row['bytes_sent'])}] "
                     f"received [{_per_peer(row['bytes_received'])}] "
                     f"restarts {row['restarts']}")
    return lines


def job_html(model):
    """The job model as an HTML table, for frontends without the widget."""
    import html
    head = ("process", "node", "state", "steps", "last loss", "sent", "received", "restarts")
    body = []
    for row in model["processes"]:
        loss, state = _loss_and_state(row, missing="")
        cells = (row["label"], row["node"] or "", state, str(row["steps"]), loss,
                 _per_peer(row["bytes_sent"]), _per_peer(row["bytes_received"]),
                 str(row["restarts"]))
        body.append(f"<tr data-process='{html.escape(row['label'])}'>"
                    + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    stats = model["stats"]
    caption = (f"{html.escape(model['title'])}: {stats['processes']} processes, "
               f"{stats['running']} running, {stats['steps']} trainer steps"
               + (" (done)" if model["done"] else ""))
    error = f"<div><i>no longer followed: {html.escape(model['error'])}</i></div>" \
        if model.get("error") else ""
    return ("<table class='fluid-nb-job-table'><caption style='text-align:left'><b>"
            f"{caption}</b></caption><thead><tr>"
            + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>"
            + "".join(body) + "</tbody></table>" + error)
