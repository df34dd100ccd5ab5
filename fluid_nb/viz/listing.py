"""Readable program listings: text (nested, indented blocks) and its HTML fallback form.

The text follows ``Program.to_string`` (same block headers and variable lines) with op lines
made for reading: ``{Out=[y]} = mul(inputs={X=[x], Y=[w]}, x_num_col_dims=1, y_num_col_dims=1)``
(no Python quotes around names; attributes sorted; Paddle's ``op_callstack`` left out).
A sub-block is listed, indented, right under the op that owns it.

:func:`model_listing` writes the same kind of text from a program model, for pages that hold
only the model (the HTML page's no-script section).

With memory figures (:func:`~fluid_nb.viz.program_model.program_memory`, keyed by op id) an
op that allocated something ends its line with ``  # allocates 1.0 MiB in 3 blocks: ...``.
"""
import html

from ..framework.blocks import block_attrs
from ..framework.program import EMPTY_VAR_NAME, _attr_text
from .program_model import HIDDEN_ATTRS, _dtype_text, memory_text, op_id

_INDENT = "    "


def holds_nothing(names):
    """Whether a slot's names bind no variable: none, or only Paddle's ``@EMPTY@`` place
    holders (a gradient nobody needs). A place holder among real names keeps its position."""
    return all(n == EMPTY_VAR_NAME for n in names)


def _args(args):
    """``X=[x], Y=[w]``; a slot that holds nothing is left out."""
    return ", ".join(f"{slot}=[{', '.join(names)}]" for slot, names in args.items()
                     if names and EMPTY_VAR_NAME not in names or not holds_nothing(names))


def op_line(op_type, inputs, outputs, attr_texts):
    """``{Out=[y]} = mul(inputs={X=[x], Y=[w]}, a=1, b="s")`` from slot dicts and
    ``(name, text)`` attribute pairs."""
    attrs = "".join(f", {name}={text}" for name, text in attr_texts)
    return f"{{{_args(outputs)}}} = {op_type}(inputs={{{_args(inputs)}}}{attrs})"


def _block_header(idx, parent_idx, forward_idx):
    return f"{{ // block_idx:{idx}  parent_idx:{parent_idx}  forward_idx:{forward_idx}"


def _var_prefix(parameter, persistable):
    return ("param " if parameter else "") + ("persist " if persistable else "")


# --- from a Program ----------------------------------------------------------------------
def _memory_suffix(memory, element_id):
    figure = (memory or {}).get("ops", {}).get(element_id)
    return f"  # {memory_text(figure)}" if figure else ""


def program_listing(program, with_vars=True, memory=None):
    """The readable listing of ``program``: block 0, its variables (unless ``with_vars`` is
    false) and ops, each sub-block nested under the op that owns it; with ``memory`` (a
    :func:`~fluid_nb.viz.program_model.program_memory` of this program) each op that
    allocated something says how much."""
    lines = []
    _program_block(program.global_block(), "", with_vars, lines, memory)
    return "\n".join(lines)


def _program_block(block, indent, with_vars, lines, memory=None):
    lines.append(indent + _block_header(block.idx, block.parent_idx, block.forward_block_idx))
    inner = indent + _INDENT
    if with_vars:
        for var in block.vars.values():
            lines.append(f"{inner}{_var_prefix(var.is_parameter, var.persistable)}"
                         f"{var.to_string()}")
        if block.vars and block.ops:
            lines.append("")
    for op in block.ops:
        texts = [(name, _attr_text(op, name, value)) for name, value in sorted(op.attrs.items())
                 if name not in HIDDEN_ATTRS]
        suffix = _memory_suffix(memory, op_id(op)) if memory else ""
        lines.append(inner + op_line(op.type, op.inputs, op.outputs, texts) + suffix)
        for _, sub_blocks in sorted(block_attrs(op).items()):
            for sub in sub_blocks:
                _program_block(sub, inner + _INDENT, with_vars, lines, memory)
    lines.append(indent + "}")


# --- from a program model ----------------------------------------------------------------
def _model_attr_text(value):
    if isinstance(value, str):
        if value[:1] == "b" and value[1:].isdigit():  # block attrs are "b<k>" in the model
            return f"block[{value[1:]}]"
        return f'"{value}"'
    return str(value)


def model_listing(model, with_vars=True):
    """The readable listing of a program model (the same layout as :func:`program_listing`;
    variables sorted by name, attributes as the model holds them; the bytes each op
    allocated when the model carries memory figures under ``"memory"``)."""
    blocks = {b["id"]: b for b in model["blocks"]}
    ops_of = {bid: [] for bid in blocks}
    for op in model["ops"]:
        ops_of.setdefault(op["block"], []).append(op)
    vars_of = {bid: [] for bid in blocks}
    for var in model["vars"]:
        vars_of.setdefault(var["block"], []).append(var)
    lines = []
    root = blocks.get("b0")
    if root is not None:
        _model_block(root, blocks, ops_of, vars_of, "", with_vars, lines, model.get("memory"))
    return "\n".join(lines)


def _model_block(block, blocks, ops_of, vars_of, indent, with_vars, lines, memory=None):
    parent = blocks.get(block["parent"]) if block["parent"] else None
    lines.append(indent + _block_header(block["idx"], parent["idx"] if parent else -1, -1))
    inner = indent + _INDENT
    if with_vars:
        for var in vars_of[block["id"]]:
            kind = var["type"]
            text = f"var {var['name']} : {kind}"
            if kind in ("LOD_TENSOR", "SELECTED_ROWS", "LOD_TENSOR_ARRAY"):
                text += f".shape{tuple(var['shape'])}.dtype({var['dtype']})"
                if kind != "SELECTED_ROWS":
                    text += f".lod_level({var['lod_level']})"
            lines.append(inner + _var_prefix(var["parameter"], var["persistable"]) + text)
        if vars_of[block["id"]] and ops_of[block["id"]]:
            lines.append("")
    for op in ops_of[block["id"]]:
        texts = [(name, _model_attr_text(value)) for name, value in sorted(op["attrs"].items())]
        lines.append(inner + op_line(op["type"], op["inputs"], op["outputs"], texts)
                     + _memory_suffix(memory, op["id"]))
        for bid in op["sub_blocks"]:
            if bid in blocks:
                _model_block(blocks[bid], blocks, ops_of, vars_of, inner + _INDENT, with_vars,
                             lines, memory)
    lines.append(indent + "}")


# --- HTML ------------------------------------------------------------------------------
# the tables scroll sideways instead of splitting a word: a cell wraps between words only,
# a variable's name not at all
_STYLE = ("<style>.fluid-nb-listing{max-width:100%;overflow-x:auto}"
          ".fluid-nb-listing table{border-collapse:collapse;font-size:12px}"
          ".fluid-nb-listing td,.fluid-nb-listing th{border:1px solid #ddd;padding:2px 6px;"
          "text-align:left;overflow-wrap:normal;word-break:normal}"
          ".fluid-nb-listing td>code{white-space:nowrap}"
          ".fluid-nb-listing pre{font-size:12px;overflow-x:auto}</style>")


def _memory_html(memory, max_rows):
    """The memory figures as HTML: the total, then one row per op that allocated something
    (in program order): the op, bytes of its blocks, bytes asked, blocks, variables."""
    from .memory_model import bytes_text

    e = html.escape
    ops = memory.get("ops") or {}
    if not ops:
        return "<p class='fluid-nb-listing-memory'><b>Memory</b>: no op allocated anything</p>"
    rows = "".join(
        f"<tr><td>{e(f['label'])}</td><td>{bytes_text(f['bytes'])}</td><td>{f['requested']}"
        f"</td><td>{f['blocks']}</td><td>{e(memory_text(f).partition(': ')[2])}</td></tr>"
        for f in list(ops.values())[:max_rows])
    more = f"<p><i>{len(ops) - max_rows} more ops</i></p>" if len(ops) > max_rows else ""
    return (f"<p class='fluid-nb-listing-memory'><b>Memory</b>: {len(ops)} ops allocated "
            f"{bytes_text(memory['total'])} in {memory['blocks']} blocks</p>"
            "<table class='fluid-nb-listing-memory'><tr><th>op</th><th>allocated</th>"
            f"<th>bytes asked</th><th>blocks</th><th>variables</th></tr>{rows}</table>{more}")


def listing_html(program, max_vars=500, memory=None):
    """The program as plain HTML (for frontends without the graph renderer): a summary, the
    op listing with nested blocks, and a table of variables (at most ``max_vars`` rows).
    With ``memory`` (:func:`~fluid_nb.viz.program_model.program_memory` of a recorded run)
    each op's line ends with the bytes it allocated. Every name is escaped."""
    e = html.escape
    n_ops = sum(len(b.ops) for b in program.blocks)
    n_vars = sum(len(b.vars) for b in program.blocks)
    rows = []
    for block in program.blocks:
        for var in block.vars.values():
            if len(rows) == max_vars:
                break
            flags = "parameter" if var.is_parameter else "persistable" if var.persistable else ""
            rows.append(f"<tr><td>{block.idx}</td><td><code>{e(var.name)}</code></td>"
                        f"<td>{e(var.type.name)}</td><td>{e(_dtype_text(var))}</td>"
                        f"<td>{e(str(list(var.shape)))}</td><td>{var.lod_level}</td>"
                        f"<td>{flags}</td></tr>")
    more = f"<p><i>{n_vars - len(rows)} more variables</i></p>" if n_vars > len(rows) else ""
    return (f"{_STYLE}<div class='fluid-nb-listing'><p><b>Program</b>: {len(program.blocks)} "
            f"block(s), {n_ops} ops, {n_vars} variables</p>"
            + (_memory_html(memory, max_vars) if memory else "")
            + f"<pre>{e(program_listing(program, with_vars=False, memory=memory))}</pre>"
            "<table><tr><th>block</th><th>variable</th><th>type</th><th>dtype</th><th>shape</th>"
            f"<th>lod_level</th><th></th></tr>{''.join(rows)}</table>{more}</div>")
