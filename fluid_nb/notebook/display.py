"""Rich display without widgets: HTML, DOT and text for programs, variables, tensors, scopes.

Every renderer is a pure function of the state it is given (it never changes it).
:func:`install` attaches ``_repr_html_``/``_repr_mimebundle_`` to ``Variable``, ``Program``,
``LoDTensor`` and ``Scope`` so a notebook shows them well by plain display.
"""
import html

import numpy as np

from ..exec.scope import Scope
from ..live import step_report as _step_report
from ..tensor.tensor import LoDTensor, LoDTensorArray, SelectedRows
from ..framework.attrs import AttrType
from ..tensor.dtypes import dtype_name
from ..framework.program import EMPTY_VAR_NAME, Program, Variable, holds_tensor

# wide op tables scroll inside the output instead of being clipped; a cell wraps between
# words only, and an op type or a name (a row's first cell) not at all, so a narrow column
# is as wide as its longest word and never splits one ("fill_constant", "mean_0.tmp_0")
_STYLE = ("<style>.fluid-nb{max-width:100%;overflow-x:auto}"
          ".fluid-nb table{border-collapse:collapse;font-size:12px}"
          ".fluid-nb td,.fluid-nb th{border:1px solid #ddd;padding:2px 6px;text-align:left;"
          "vertical-align:top;overflow-wrap:normal;word-break:normal}"
          ".fluid-nb td>b,.fluid-nb td:first-child>code{white-space:nowrap}"
          ".fluid-nb code{font-size:12px}</style>")

_e = html.escape


def _shape(shape):
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _var_shape(block, name):
    var = block._find_var_recursive(name)
    if var is None:
        return "?"
    return _shape(var.shape) if holds_tensor(var) else f"({var.type.name.lower()})"


def _type_cells(var):
    """``[3, 4] float32`` for a tensor variable, its kind (``LOD_RANK_TABLE``) otherwise."""
    return f"{_shape(var.shape)} {dtype_name(var.dtype)}" if holds_tensor(var) else var.type.name


def _args_text(block, args, with_shapes=True):
    parts = []
    for slot, names in args.items():
        if all(n == EMPTY_VAR_NAME for n in names):  # a gradient nobody needs: nothing to show
            continue
        shown = ", ".join(f"{n}{_var_shape(block, n) if with_shapes else ''}" for n in names)
        parts.append(f"{slot}={shown}")
    return "; ".join(parts)


def op_text(op, with_shapes=True):
    """``type(X=x[-1, 3]; Y=w[3, 2]) -> Out=tmp[-1, 2]``."""
    return (f"{op.type}({_args_text(op.block, op.inputs, with_shapes)}) -> "
            f"{_args_text(op.block, op.outputs, with_shapes)}")


# --- tensors and variables ----------------------------------------------------------------
def value_summary(value, limit=6):
    """Text summary of a runtime value (shape, dtype, LoD, a few numbers)."""
    from ..live.session import preview
    if isinstance(value, LoDTensor) and value.array is not None:
        return f"{value.array.dtype} {preview(value, limit)}"
    if isinstance(value, np.ndarray):
        return f"{value.dtype} {preview(value, limit)}"
    return preview(value, limit)


def tensor_html(tensor, max_rows=8):
    """A LoDTensor as HTML: shape, dtype, LoD, and the leading rows of its data."""
    if tensor.array is None:
        return "<div class='fluid-nb'><b>LoDTensor</b> (not initialised)</div>"
    array = np.asarray(tensor)
    head = (f"<b>LoDTensor</b> shape {_shape(array.shape)} {array.dtype}"
            + (f", lod {_e(str(tensor._lod))}" if tensor._lod else ""))
    with np.printoptions(precision=4, threshold=64, edgeitems=3, suppress=True):
        body = np.array2string(array[:max_rows] if array.ndim else array)
    more = f"<br><i>... {array.shape[0] - max_rows} more rows</i>" \
        if array.ndim and array.shape[0] > max_rows else ""
    return f"{_STYLE}<div class='fluid-nb'>{head}<pre>{_e(body)}</pre>{more}</div>"


def variable_html(var, value=None):
    """A Variable: its compile-time description and, in live mode, its value."""
    kind = "Parameter" if var.is_parameter else "Variable"
    desc = (f"<b>{kind}</b> <code>{_e(var.name)}</code> "
            + (f"shape {_type_cells(var)}" if holds_tensor(var) else _e(var.type.name))
            + (f" lod_level {var.lod_level}" if var.lod_level else "")
            + (" persistable" if var.persistable and not var.is_parameter else ""))
    if value is None:
        return f"{_STYLE}<div class='fluid-nb'>{desc}</div>"
    if isinstance(value, LoDTensor):
        return f"{_STYLE}<div class='fluid-nb'>{desc}{tensor_html(value)}</div>"
    return f"{_STYLE}<div class='fluid-nb'>{desc}<pre>{_e(value_summary(value))}</pre></div>"


def _live_value(var):
    from ..live.session import _session_of
    session = _session_of(var)
    if session is None:
        return None
    found = session.scope.find_var(var.name)
    return found.value if found is not None else None


# --- programs -----------------------------------------------------------------------------
def _attrs_text(op):
    items = []
    for name, value in sorted(op.attrs.items()):
        if name in ("op_role_var", "op_namescope", "op_callstack"):
            continue
        if op.attr_type(name) == AttrType.BLOCK:
            value = f"block[{value}]"
        items.append(f"{name}={value}")
    return ", ".join(items)


def ops_table_html(ops, with_source=True):
    """An HTML table of ops: index, type, inputs -> outputs with shapes, attrs, source line."""
    rows = []
    for op in ops:
        source = ""
        if with_source and op.source is not None:
            source = f"{_e(str(op.source[2] or ''))} <i>(line {op.source[1]})</i>"
        rows.append(f"<tr><td>{op.block.idx}</td><td><b>{_e(op.type)}</b></td>"
                    f"<td>{_e(_args_text(op.block, op.inputs))}</td>"
                    f"<td>{_e(_args_text(op.block, op.outputs))}</td>"
                    f"<td>{_e(_attrs_text(op))}</td><td>{source}</td></tr>")
    return ("<table><tr><th>block</th><th>op</th><th>inputs</th><th>outputs</th>"
            f"<th>attrs</th><th>added at</th></tr>{''.join(rows)}</table>")


def program_dot(program):
    """The program's dataflow graph as Graphviz DOT text (ops as boxes, variables as ovals)."""
    lines = ["digraph program {", "  rankdir=TB;", "  node [fontsize=10];"]
    seen = set()

    def var_node(block, name):
        key = f"v_{name}"
        if key not in seen:
            seen.add(key)
            var = block._find_var_recursive(name)
            label = name + (f"\\n{_shape(var.shape)}" if var is not None else "")
            style = ", style=filled, fillcolor=\"#fde68a\"" \
                if var is not None and var.persistable else ""
            lines.append(f"  \"{key}\" [label=\"{label}\", shape=ellipse{style}];")
        return key

    for block in program.blocks:
        if block.idx:
            lines.append(f"  subgraph cluster_{block.idx} {{ label=\"block {block.idx}\";")
        for i, op in enumerate(block.ops):
            node = f"op_{block.idx}_{i}"
            lines.append(f"  \"{node}\" [label=\"{op.type}\", shape=box, style=filled, "
                         f"fillcolor=\"#bfdbfe\"];")
            for names in op.inputs.values():
                for n in names:
                    lines.append(f"  \"{var_node(block, n)}\" -> \"{node}\";")
            for names in op.outputs.values():
                for n in names:
                    lines.append(f"  \"{node}\" -> \"{var_node(block, n)}\";")
        if block.idx:
            lines.append("  }")
    lines.append("}")
    return "\n".join(lines)


def program_html(program, max_ops=200):
    """A Program: per block, its variables and a table of its ops; the DOT graph folded."""
    parts = [_STYLE, "<div class='fluid-nb'>",
             f"<b>Program</b>: {len(program.blocks)} block(s), "
             f"{sum(len(b.ops) for b in program.blocks)} ops, "
             f"{sum(len(b.vars) for b in program.blocks)} variables"]
    for block in program.blocks:
        params = [v.name for v in block.vars.values() if v.is_parameter]
        parts.append(f"<details open><summary>block {block.idx} (parent {block.parent_idx}): "
                     f"{len(block.ops)} ops, {len(block.vars)} vars"
                     + (f", parameters {_e(', '.join(params))}" if params else "")
                     + "</summary>")
        parts.append(ops_table_html(block.ops[:max_ops]))
        if len(block.ops) > max_ops:
            parts.append(f"<i>... {len(block.ops) - max_ops} more ops</i>")
        parts.append("</details>")
    parts.append("<details><summary>graph (DOT)</summary><pre>"
                 f"{_e(program_dot(program))}</pre></details></div>")
    return "".join(parts)


# --- scopes -------------------------------------------------------------------------------
def _holder_row(name, value, scalars=frozenset()):
    if value is None:
        kind, shape, dtype, nbytes = "empty", "", "", 0
    elif isinstance(value, LoDTensor):
        kind = "LoDTensor"
        shape = "" if value.array is None else "[1]" if (
            name in scalars and value.array.ndim == 0) else _shape(value.array.shape)
        dtype = str(value.array.dtype) if value.array is not None else ""
        nbytes = value.nbytes
    elif isinstance(value, LoDTensorArray):
        kind, shape, dtype, nbytes = f"LoDTensorArray[{len(value)}]", "", "", \
            sum(t.nbytes for t in value if isinstance(t, LoDTensor))
    elif isinstance(value, SelectedRows):
        kind, shape, dtype, nbytes = "SelectedRows", f"{len(value.rows())} rows", "", \
            value.value.nbytes
    else:
        kind, shape, dtype, nbytes = type(value).__name__, "", "", 0
    return (f"<tr><td><code>{_e(name)}</code></td><td>{kind}</td><td>{shape}</td>"
            f"<td>{dtype}</td><td>{nbytes}</td></tr>")


def scope_html(scope, depth=0, max_depth=3, program=None):
    """A Scope: its variables (type, shape, dtype, bytes) and, nested, its kid scopes. With
    ``program`` (default: the live session's, for a live session's scope) a 0-D value of a
    variable it declares [1] is shown [1], as a fetch gives it."""
    from ..viz.scope_model import declared_scalar_names
    if program is None and depth == 0:
        from ..live.session import session_of_scope
        session = session_of_scope(scope)
        program = session.program if session is not None else None
    scalars = declared_scalar_names(program)
    rows = "".join(_holder_row(n, h.value, scalars) for n, h in sorted(scope.vars.items()))
    total = sum(h.value.nbytes for h in scope.vars.values() if isinstance(h.value, LoDTensor))
    text = (f"<b>Scope</b>: {len(scope.vars)} variables, {total} bytes in tensors, "
            f"{len(scope.kids)} kid scope(s)<table><tr><th>name</th><th>type</th><th>shape</th>"
            f"<th>dtype</th><th>bytes</th></tr>{rows}</table>")
    if depth < max_depth:
        for kid in scope.kids:
            text += (f"<div style='margin-left:1.5em'>"
                     f"{scope_html(kid, depth + 1, max_depth, program)}</div>")
    return (_STYLE + f"<div class='fluid-nb'>{text}</div>") if depth == 0 else text


def scope_text(scope):
    lines = [f"Scope: {len(scope.vars)} variables, {len(scope.kids)} kids"]
    for name, h in sorted(scope.vars.items()):
        lines.append(f"  {name}: {value_summary(h.value) if h.value is not None else 'empty'}")
    return "\n".join(lines)


# --- what a live cell added ---------------------------------------------------------------
class CellReport:
    """What a ``%%fluid`` cell added: ops, new variables (with value previews), new blocks."""

    def __init__(self, added, session):
        self.ops = added["main"][0]
        self.vars = added["main"][1]
        self.blocks = added["main"][2]
        self.startup_ops = added["startup"][0]
        self.session = session
        self.values = {}
        from ..exec.feed_fetch import as_declared_scalar as _as_declared_scalar, declared_scalar
        for var in self.vars:
            found = session.scope.find_var(var.name)
            if found is not None and found.value is not None:
                # a 0-D result previewed as the [1] its variable declares, as numpy() gives it
                self.values[var.name] = _as_declared_scalar(found.value) \
                    if declared_scalar(var) else found.value
            elif getattr(var, "_sample_value", None) is not None:
                # a data variable given value= that no op of the cell read yet
                self.values[var.name] = var._sample_value
        self.update_ops = [op for op in self.ops if op in set(session.update_ops)]

    def _var_line(self, var):
        value = self.values.get(var.name)
        kind = "param " if var.is_parameter else ""
        text = f"{kind}{var.name} {_type_cells(var)}"
        return text + (f" = {value_summary(value)}" if value is not None else "")

    def __repr__(self):
        lines = [f"%%fluid: +{len(self.ops)} ops, +{len(self.vars)} vars, "
                 f"+{len(self.blocks)} blocks, +{len(self.startup_ops)} startup ops"]
        for op in self.ops:
            mark = " (recorded, not run)" if op in self.update_ops else ""
            lines.append(f"  op  {op_text(op)}{mark}")
        for var in self.vars:
            lines.append(f"  var {self._var_line(var)}")
        for block in self.blocks:
            lines.append(f"  block {block.idx} (parent {block.parent_idx}): {len(block.ops)} ops")
        return "\n".join(lines)

    def _repr_html_(self):
        parts = [_STYLE, "<div class='fluid-nb'>",
                 f"<b>%%fluid</b> added {len(self.ops)} ops, {len(self.vars)} variables, "
                 f"{len(self.blocks)} blocks ({len(self.startup_ops)} startup ops)"]
        if self.ops:
            parts.append(ops_table_html(self.ops))
        if self.update_ops:
            parts.append(f"<i>{len(self.update_ops)} update op(s) recorded, not run: "
                         f"fluid.live_step() or %%fluid --step applies them</i>")
        if self.vars:
            rows = "".join(
                f"<tr><td><code>{_e(v.name)}</code></td>"
                + (f"<td>{_shape(v.shape)}</td><td>{dtype_name(v.dtype)}</td>" if holds_tensor(v)
                   else f"<td colspan='2'>{_e(v.type.name)}</td>")
                + f"<td>{'param' if v.is_parameter else ''}</td>"
                f"<td><code>{_e(value_summary(self.values[v.name])) if v.name in self.values else ''}"
                f"</code></td></tr>" for v in self.vars)
            parts.append("<table><tr><th>variable</th><th>shape</th><th>dtype</th><th></th>"
                         f"<th>value</th></tr>{rows}</table>")
        for block in self.blocks:
            parts.append(f"<div>new block {block.idx} (parent {block.parent_idx}), "
                         f"{len(block.ops)} ops</div>")
        parts.append("</div>")
        return "".join(parts)


class StepReport(_step_report.StepReport):
    """What ``%%fluid --step`` applied (see :mod:`fluid_nb.live.step_report`), as a table."""

    def _repr_html_(self):
        lines = self.lines()
        rows = "".join(f"<tr><td><code>{_e(n)}</code></td><td>{d:.4g}</td><td>{v:.4g}</td></tr>"
                       for n, d, v in self.changes)
        parts = [_STYLE, "<div class='fluid-nb'>", f"<b>%%fluid --step</b> {_e(lines[0][6:])}"]
        if self.loss_name is not None and self.loss_before is not None:
            parts.append(f"<div>loss <code>{_e(self.loss_name)}</code>: "
                         f"{self.loss_before:.6g} &rarr; {self.loss_after:.6g}</div>")
        if rows:
            parts.append("<table><tr><th>parameter</th><th>|update|</th><th>|parameter|</th>"
                         f"</tr>{rows}</table>")
        parts.append("</div>")
        return "".join(parts)


class Graph:
    """A program's DOT graph; displays as DOT text (Graphviz renders it where available)."""

    def __init__(self, program):
        self.dot = program_dot(program)

    def __repr__(self):
        return self.dot

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/plain": self.dot, "text/vnd.graphviz": self.dot,
                "text/html": f"{_STYLE}<div class='fluid-nb'><pre>{_e(self.dot)}</pre></div>"}


# --- attaching to the classes -------------------------------------------------------------
def _variable_html(self):
    return variable_html(self, _live_value(self))


def _program_html(self):
    return program_html(self)


def _program_bundle(self, include=None, exclude=None):
    """The program model for the graph renderer, with a readable HTML listing and the text
    listing for frontends without it (and the DOT text for those that draw Graphviz)."""
    from .. import viz
    model = viz.program_model(self)
    return {viz.MIME_TYPE: model, "text/html": viz.listing_html(self),
            "text/plain": str(self), "text/vnd.graphviz": viz.assemble_dot(model)}


def _bundle_of(html_fn):
    def bundle(self, include=None, exclude=None):
        return {"text/plain": repr(self), "text/html": html_fn(self)}
    return bundle


def install():
    """Give Variable, Program, LoDTensor and Scope their notebook representations."""
    Variable._repr_html_ = _variable_html
    Variable._repr_mimebundle_ = _bundle_of(_variable_html)
    Program._repr_html_ = _program_html
    Program._repr_mimebundle_ = _program_bundle
    LoDTensor._repr_html_ = tensor_html
    LoDTensor._repr_mimebundle_ = _bundle_of(tensor_html)
    Scope._repr_html_ = scope_html
    Scope._repr_mimebundle_ = _bundle_of(scope_html)
