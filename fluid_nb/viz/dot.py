"""DOT text for the program graph: one statement per node and edge, and their assembly.

Each op, variable and edge of a program model carries its own DOT statement (``"dot"``), so a
delta that adds ten ops carries ten small statements and the front end re-assembles the graph
without any DOT knowledge beyond :func:`assemble_dot`'s few lines (mirrored in TypeScript).

Every node statement names the node by its model id and sets ``id="<model id>"`` and a
``class``, so the SVG Graphviz makes has ``<g id="<model id>" class="node op role-...">``;
that is how clicks map back to model elements. Statements never depend on the ``new`` flags,
so an element's statement changes only when the element itself does.
"""

GRAD_SUFFIX = "@GRAD"

#: the graph, node and edge defaults (a node is a forward op unless its statement says
#: otherwise, which keeps the statements of the common case short); ``assemble_dot`` closes
#: the brace
DOT_HEADER = (
    "digraph program {\n"
    '  graph [rankdir=TB, fontname="Helvetica", fontsize=10, nodesep=0.25, ranksep=0.3, '
    'newrank=true];\n'
    '  node [fontname="Helvetica", fontsize=10, height=0.3, margin="0.08,0.03", shape=box, '
    'style=filled, fillcolor="#dbeafe"];\n'
    '  edge [arrowsize=0.6, color="#6b7280"];')

#: op fill colours by role (light colours: text stays readable on light and dark pages)
ROLE_FILL = {
    "forward": "#dbeafe",
    "backward": "#fee2e2",
    "optimize": "#dcfce7",
    "lr_sched": "#ede9fe",
    "loss": "#fef3c7",
    "other": "#e5e7eb",
}

#: op styles by role: gradients dashed, updates rounded
ROLE_STYLE = {
    "backward": "filled,dashed",
    "optimize": "filled,rounded,bold",
    "lr_sched": "filled,rounded",
}

PARAMETER_FILL = "#fcd34d"
#: the text colour of parameter rows inside an op's box (amber, as parameter nodes)
PARAMETER_TEXT = "#92400e"
#: the text colour of other rows (values read from far away: forward values in a gradient
#: op, a sub-block's inputs from outside it)
VALUE_TEXT = "#4b5563"
PERSISTABLE_FILL = "#fef3c7"
VARIABLE_FILL = "#ffffff"


def quote(text):
    """``text`` as a DOT double-quoted string (backslashes and quotes escaped)."""
    if text.__class__ is not str:
        text = str(text)
    if "\\" in text or '"' in text or "\n" in text:  # (rare: most names need nothing)
        text = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return '"' + text + '"'


def _lines(*parts):
    """Quoted DOT string whose parts are separated by DOT's ``\\n`` line break."""
    return '"' + "\\n".join(p.replace("\\", "\\\\").replace('"', '\\"') if "\\" in p or '"' in p
                           else p for p in parts) + '"'


def _html(text):
    text = str(text)
    if "&" not in text and "<" not in text and ">" not in text and '"' not in text:
        return text  # (names and shapes: nothing to escape)
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def _rows_label(op_type, rows):
    """An HTML-like label: the op type, then one small row per variable drawn inside
    (``(text, persistable)`` pairs: persistable rows amber, others grey)."""
    cells = "".join(
        f'<tr><td align="left"><font point-size="9" '
        f'color="{PARAMETER_TEXT if persistable else VALUE_TEXT}">'
        f"{_html(text)}</font></td></tr>" for text, persistable in rows)
    return (f'<<table border="0" cellborder="0" cellspacing="0" cellpadding="1">'
            f"<tr><td>{_html(op_type)}</td></tr>{cells}</table>>")


def op_statement(op_id, op_type, role, tooltip, has_sub_blocks=False, rows=()):
    """The node statement of an op: a box labelled with its type, filled by role; ``rows``
    (``(text, persistable)`` pairs such as ``("Y: fc_0.w_0 [13, 1]", True)``) are drawn
    inside the box under the type, for the variables it reads or writes without an edge."""
    extra = ""
    if role != "forward":
        extra += f', fillcolor="{ROLE_FILL.get(role, ROLE_FILL["other"])}"'
    if role in ROLE_STYLE:
        extra += f', style="{ROLE_STYLE[role]}"'
    if has_sub_blocks:
        extra += ", peripheries=2"
    label = _rows_label(op_type, rows) if rows else quote(op_type)
    quoted_id = quote(op_id)
    return (f'{quoted_id} [id={quoted_id}, class="op role-{role}", label={label}'
            f'{extra}, tooltip={quote(tooltip)}];')


def var_statement(var_id, name, shape_text, parameter, persistable, tooltip):
    """The node statement of a variable: an ellipse labelled name and shape; parameters
    bold and amber, other persistables pale amber, temporaries white."""
    if parameter:
        kind, style, fill = "parameter", ', style="filled,bold"', PARAMETER_FILL
    elif persistable:
        kind, style, fill = "persistable", "", PERSISTABLE_FILL
    else:
        kind, style, fill = "temporary", "", VARIABLE_FILL
    quoted_id = quote(var_id)
    return (f'{quoted_id} [id={quoted_id}, class="var {kind}", '
            f'label={_lines(name, shape_text)}, shape=ellipse{style}, fillcolor="{fill}", '
            f'tooltip={quote(tooltip)}];')


def edge_statement(edge_id, src, dst, slot):
    """The statement of a data edge; its tooltip is the op's slot."""
    return quoted_edge_statement(edge_id, quote(src), quote(dst), slot)


def quoted_edge_statement(edge_id, quoted_src, quoted_dst, slot):
    """:func:`edge_statement` with its ends already quoted (a model quotes each variable's
    id once for all the edges that name it)."""
    return f'{quoted_src} -> {quoted_dst} [id={quote(edge_id)}, tooltip={quote(slot)}];'


def visible_statements(model, params_as_nodes=False, hidden_roles=()):
    """``{element id: DOT statement}`` of the ops and variables drawn under the view options.

    * ``params_as_nodes`` false (the default): an edge marked ``inline`` is not drawn; the
      op lists the variable inside its box instead (its ``dot_inline`` statement). Those are
      the edges of parameters and other persistable variables (``inline`` variables, never
      nodes then), of forward values read by gradient ops and of a sub-block's inputs from
      outside it: the edges that would run across the whole drawing.
    * ``hidden_roles`` (``"backward"``, ``"optimize"``): ops of those roles are left out,
      and so are the sub-blocks they own (a ``while_grad``'s block) with all they hold.

    A variable that edges touch is drawn only when a drawn edge joins it to a drawn op (so
    hiding the gradient ops hides the gradients too).
    """
    hidden_roles = set(hidden_roles)
    statements = {}
    touched_by_shown = set()
    touched = set()
    shown_ops = set()
    hidden_blocks = _blocks_of_hidden_ops(model, hidden_roles)
    for op in model["ops"]:
        if op["role"] in hidden_roles or op["block"] in hidden_blocks:
            continue
        shown_ops.add(op["id"])
        inline = op.get("dot_inline")
        statements[op["id"]] = inline if inline is not None and not params_as_nodes else op["dot"]
    for edge in model["edges"]:
        drawn = params_as_nodes or not edge.get("inline")
        for end, other in ((edge["src"], edge["dst"]), (edge["dst"], edge["src"])):
            touched.add(end)
            if drawn and other in shown_ops:
                touched_by_shown.add(end)
    for var in model["vars"]:
        if var.get("inline") and not params_as_nodes or var["block"] in hidden_blocks:
            continue
        if "backward" in hidden_roles and GRAD_SUFFIX in var["name"]:
            continue  # a gradient nothing uses yet is the backward pass's too
        if var["id"] in touched and var["id"] not in touched_by_shown:
            continue
        statements[var["id"]] = var["dot"]
    return statements


def _blocks_of_hidden_ops(model, hidden_roles):
    """Ids of the blocks owned, directly or through their parents' owners, by an op of a
    hidden role."""
    if not hidden_roles:
        return set()
    ops = {op["id"]: op for op in model["ops"]}
    owners = {block["id"]: block["owner"] for block in model["blocks"]}
    hidden = {}

    def is_hidden(block_id, depth=0):
        if block_id not in hidden:
            owner = ops.get(owners.get(block_id))
            hidden[block_id] = owner is not None and depth < 64 and (
                owner["role"] in hidden_roles or is_hidden(owner["block"], depth + 1))
        return hidden[block_id]
    return {block_id for block_id in owners if is_hidden(block_id)}


def assemble_dot(model, collapsed=(), params_as_nodes=False, hidden_roles=()):
    """The whole DOT text of a program model.

    Order (the front end's ``assembleDot`` writes the same text): ``dot_header``; block b0's
    node statements (ops, then variables, in model order); then for each child block,
    recursively nested, ``subgraph "cluster_<bid>" {`` + ``label="<label>";`` + its nodes +
    its child clusters + ``}``; then every edge drawn whose two ends are shown; then the
    :func:`owner_ties`; then ``}``.
    A block in ``collapsed`` is left out together with its nested blocks (the op that owns it
    stays). Lines are indented two spaces per level. ``params_as_nodes`` and ``hidden_roles``
    choose what is drawn (see :func:`visible_statements`).
    """
    collapsed = set(collapsed)
    statements = visible_statements(model, params_as_nodes, hidden_roles)
    nodes = {block["id"]: [] for block in model["blocks"]}
    for element in model["ops"]:
        if element["id"] in statements:
            nodes.setdefault(element["block"], []).append(element)
    for element in model["vars"]:
        if element["id"] in statements:
            nodes.setdefault(element["block"], []).append(element)
    children = {}
    roots = []
    for block in model["blocks"]:
        if block["parent"] is None:
            roots.append(block)
        else:
            children.setdefault(block["parent"], []).append(block)

    lines = [model["dot_header"]]
    shown = set()

    def emit_nodes(block_id, indent):
        for element in nodes.get(block_id, ()):
            shown.add(element["id"])
            lines.append(indent + statements[element["id"]])

    def emit_cluster(block, indent):
        if block["id"] in collapsed:
            return
        lines.append(f"{indent}subgraph {quote('cluster_' + block['id'])} {{")
        lines.append(f"{indent}  label={quote(block['label'])};")
        emit_nodes(block["id"], indent + "  ")
        for child in children.get(block["id"], ()):
            emit_cluster(child, indent + "  ")
        lines.append(f"{indent}}}")

    for root in roots:
        if root["id"] in collapsed:
            continue
        emit_nodes(root["id"], "  ")
        for child in children.get(root["id"], ()):
            emit_cluster(child, "  ")
    for edge in model["edges"]:
        if edge["src"] in shown and edge["dst"] in shown and (
                params_as_nodes or not edge.get("inline")):
            lines.append("  " + edge["dot"])
    lines.extend("  " + tie for tie in owner_ties(model, shown))
    lines.append("}")
    return "\n".join(lines)


def owner_ties(model, shown):
    """Invisible edges from the op owning each drawn sub-block to the block's first drawn
    op: with its inputs drawn inside its ops a sub-block may have no edge to the rest of the
    graph, and Graphviz would then place it anywhere, far from its owner."""
    first = {}
    for op in model["ops"]:
        if op["id"] in shown:
            first.setdefault(op["block"], op["id"])
    return [f"{quote(block['owner'])} -> {quote(first[block['id']])} [style=invis];"
            for block in model["blocks"]
            if block["owner"] in shown and block["id"] in first]
