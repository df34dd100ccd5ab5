"""Fluid's control flow in ONNX: ``conditional_block`` and ``select_input`` become ``If``
nodes, a ``while`` loop whose body converts becomes a ``Loop``.

ONNX graphs are in static single assignment: a name is given a value once, in the graph and
all its subgraphs together. Fluid programs write a variable again and again (a loop's counter,
a ``Switch`` assigning the learning rate, ``increment`` in place), so the ops are first given
SSA names (:class:`Versions`): every write of a variable defined before gets a new name
``<name>.v<k>``, and the reads after it use that name. The last write in the main block keeps
the program's name, so the fetched outputs keep theirs; :meth:`_Context.shape` and the other
look-ups read through the aliases to the program's variable.

A ``conditional_block``'s outputs, when its condition is false, keep the values they had (or,
for a variable no op has written yet, no value: the else branch gives an empty tensor, which a
``select_input`` never picks, as it picks the block that ran).
"""
import numpy as np

from ...framework.blocks import sub_block
from ...framework.loops import dynamic_rnn_layout
from ...framework.program import EMPTY_VAR_NAME
from ...tensor.dtypes import VarType
from . import loops
from .converters import NotConvertible, _in, converter


class OpView:
    """An op with some variable names replaced: what converters read in place of the op."""

    def __init__(self, op, inputs, outputs):
        self.type, self.attrs, self.block = op.type, op.attrs, op.block
        self.inputs, self.outputs = inputs, outputs
        self.original = op


class Versions:
    """SSA names for the ops of one graph. ``current``: program name -> the name holding its
    value now. All the graphs of a model share ``defined`` (every name given a value, feeds
    and parameters included) and the counters of new names, as ONNX's SSA spans them all.
    ``previous``/``previous_defined``: the state before the op last viewed (what a converter
    needs of the values its op's outputs had)."""

    def __init__(self, ctx, defined, current=None, counts=None):
        self.ctx, self.defined = ctx, defined
        self.current = dict(current or {})
        self._counts = {} if counts is None else counts
        self.previous, self.previous_defined = dict(self.current), set(defined)

    def child(self, current):
        """The versions of a subgraph starting from ``current`` (names shared)."""
        return Versions(self.ctx, self.defined, current, self._counts)

    def fresh(self, name):
        """A new name for ``name``'s next value."""
        while True:
            k = self._counts.get(name, 0) + 1
            self._counts[name] = k
            new = f"{name}.v{k}"
            if new not in self.defined:
                break
        self.ctx.aliases[new] = self.ctx.aliases.get(name, name)
        self.defined.add(new)
        return new

    def read(self, name):
        return self.current.get(name, name)

    def value_before(self, name):
        """The name holding ``name`` before the op last viewed (None: it had no value)."""
        if name in self.previous:
            return self.previous[name]
        return name if name in self.previous_defined else None

    def view(self, op, last=None):
        """``op`` reading the current names and writing new ones: a name keeps its own
        when it has no value yet and it is the variable's last write (given ``last``, the
        main graph's last writes) or a variable of the subgraph's own block. Tensor arrays, rank tables and scopes keep their names: they are
        the converters' bookkeeping, not ONNX values."""
        self.previous, self.previous_defined = dict(self.current), set(self.defined)
        inputs = {slot: [self.read(n) for n in names] for slot, names in op.inputs.items()}
        outputs = {}
        for slot, names in op.outputs.items():
            renamed = []
            for n in names:
                if not n or n == EMPTY_VAR_NAME or not self._is_value(op, n):
                    renamed.append(n)
                    continue
                # a subgraph keeps the names of its block's own variables; the main graph
                # those of last writes
                own = n in op.block.vars if last is None else last.get(n) is op
                if n not in self.defined and own:
                    new = n
                    self.defined.add(n)
                else:
                    new = self.fresh(n)
                self.current[n] = new
                renamed.append(new)
            outputs[slot] = renamed
        return OpView(op, inputs, outputs)

    @staticmethod
    def _is_value(op, name):
        var = op.block._find_var_recursive(name)
        return var is None or var.type in (VarType.LOD_TENSOR, VarType.SELECTED_ROWS)


def last_writes(ops):
    """{variable: the last op of ``ops`` that writes it}."""
    last = {}
    for op in ops:
        for names in op.outputs.values():
            for n in names:
                last[n] = op
    return last


def _operator(op):
    """The program's op behind a converter's view of it."""
    return getattr(op, "original", op)


def _info(ctx, name):
    onnx = ctx.onnx
    return onnx.helper.make_tensor_value_info(name, ctx.onnx_type(name), None)


def convert_ops(ctx, block, versions, where):
    """The nodes of ``block``'s ops, reading and writing names through ``versions``
    (``ctx.nodes`` is left as it was)."""
    from .converters import CONVERTERS
    outer = ctx.nodes, ctx.op, ctx.op_index, ctx.block
    ctx.nodes, ctx.block = [], block
    try:
        for k, op in enumerate(block.ops):
            view = versions.view(op)
            ctx.start(view, f"{where}.{k}")
            convert = CONVERTERS.get(op.type)
            if convert is None:
                raise NotConvertible(f"its block's {op.type} (no converter)")
            try:
                convert(view, ctx)
            except NotConvertible as exc:
                raise NotConvertible(f"its block's {op.type}: {exc}") from None
        return ctx.nodes
    finally:
        ctx.nodes, ctx.op, ctx.op_index, ctx.block = outer


def _condition(op, ctx):
    """The bool scalar a conditional_block runs on."""
    conds = op.inputs.get("Cond") or []
    if not conds:
        raise NotConvertible("no Cond")
    if op.attrs.get("is_scalar_condition", False):  # the first element of Cond
        flat, first, flag = ctx.tmp("cond"), ctx.tmp("first"), ctx.tmp("flag")
        ctx.node("Reshape", [conds[0], ctx.const(np.array([-1], "int64"), "flat")], [flat])
        ctx.node("Gather", [flat, ctx.const(np.array(0, "int64"), "zero")], [first], axis=0)
        ctx.node("Cast", [first], [flag], to=ctx.onnx.TensorProto.BOOL)
        return flag
    flags = []  # otherwise the block runs when every Cond tensor holds an element
    for c in conds:
        size, flag = ctx.tmp("size"), ctx.tmp("nonempty")
        ctx.node("Size", [c], [size])
        ctx.node("Greater", [size, ctx.const(np.array(0, "int64"), "zero")], [flag])
        flags.append(flag)
    while len(flags) > 1:
        both = ctx.tmp("all")
        ctx.node("And", flags[:2], [both])
        flags = [both] + flags[2:]
    return flags[0]


def _identity(ctx, source, target):
    return ctx.onnx.helper.make_node("Identity", [source], [target], name=f"{target}.identity")


def _graph(ctx, nodes, name, inputs, outputs):
    info = ctx.onnx.helper.make_tensor_value_info
    return ctx.onnx.helper.make_graph(
        nodes, name, [info(n, t, s) for n, t, s in inputs],
        [info(n, ctx.onnx_type(n), None) for n in outputs])


@converter("conditional_block")
def _conditional_block(op, ctx):
    versions = ctx.extra["versions"]
    outs = [n for n in op.outputs.get("Out", []) if n != EMPTY_VAR_NAME]
    if not outs:
        return None  # a block with no outputs changes nothing a fetch can see
    flag = _condition(op, ctx)
    branch = versions.child(versions.previous)
    then_nodes = convert_ops(ctx, sub_block(_operator(op)), branch, ctx.op_index)
    else_nodes, then_outs, else_outs = [], [], []
    for out in outs:
        original = ctx.aliases.get(out, out)
        before = versions.value_before(original)
        written = branch.current.get(original)
        if written is None and before is None:
            raise NotConvertible(f"output {original!r} is neither written by the block nor "
                                 "held before it")
        then_out, else_out = versions.fresh(original), versions.fresh(original)
        then_nodes.append(_identity(ctx, written or before, then_out))
        if before is not None:  # a false condition leaves the value as it was
            else_nodes.append(_identity(ctx, before, else_out))
        else:  # no value yet: an empty tensor of the type, which a select_input never picks
            empty = np.zeros([0] * max(len(ctx.shape(original)), 1), ctx.dtype(original))
            else_nodes.append(ctx.onnx.helper.make_node(
                "Constant", [], [else_out], name=f"{else_out}.empty",
                value=ctx.onnx.numpy_helper.from_array(empty)))
        then_outs.append(then_out)
        else_outs.append(else_out)
    prefix = f"conditional_block_{ctx.op_index}"
    ctx.node("If", [flag], outs,
             then_branch=_graph(ctx, then_nodes, f"{prefix}_then", [], then_outs),
             else_branch=_graph(ctx, else_nodes, f"{prefix}_else", [], else_outs))


@converter("select_input")
def _select_input(op, ctx):
    """Out = X[Mask]: a chain of Ifs, one per choice but the last."""
    versions = ctx.extra["versions"]
    xs, out = list(op.inputs["X"]), op.outputs["Out"][0]
    original = ctx.aliases.get(out, out)
    scalar, mask = ctx.tmp("mask"), ctx.tmp("mask64")
    ctx.node("Reshape", [_in(op, "Mask"), ctx.const(np.array([], "int64"), "scalar")], [scalar])
    ctx.node("Cast", [scalar], [mask], to=ctx.onnx.TensorProto.INT64)
    prefix = f"select_input_{ctx.op_index}"

    def choose(k, target):
        """Nodes giving ``target`` = X[mask], knowing mask >= k."""
        if k == len(xs) - 1:
            return [_identity(ctx, xs[k], target)]
        is_k, picked, rest = (versions.fresh(f"{prefix}.{n}{k}") for n in ("is", "x", "rest"))
        ctx.aliases[picked] = ctx.aliases[rest] = original
        return [ctx.onnx.helper.make_node(
                    "Equal", [mask, ctx.const(np.array(k, "int64"), "choice")], [is_k],
                    name=f"{is_k}.equal"),
                ctx.onnx.helper.make_node(
                    "If", [is_k], [target], name=f"{prefix}.if{k}",
                    then_branch=_graph(ctx, [_identity(ctx, xs[k], picked)],
                                       f"{prefix}_x{k}", [], [picked]),
                    else_branch=_graph(ctx, choose(k + 1, rest), f"{prefix}_after{k}", [],
                                       [rest]))]

    ctx.nodes += choose(0, out)


@converter("while")
def _while(op, ctx):
    """A DynamicRNN's loop over a padded sequence (:mod:`.loops`), else a loop whose body
    converts: an ONNX Loop carrying what the body writes of the outer variables."""
    layout = dynamic_rnn_layout(_operator(op))
    if layout is not None:
        return loops.convert_dynamic_rnn(op, ctx, layout)
    onnx, versions = ctx.onnx, ctx.extra["versions"]
    block = sub_block(_operator(op))
    written = {n for body_op in block.ops for names in body_op.outputs.values() for n in names}
    condition = ctx.aliases.get(op.inputs["Condition"][0], op.inputs["Condition"][0])
    if condition not in written:
        raise NotConvertible(f"the body never writes its condition {condition!r} (the loop "
                             "would not end)")
    outs = {ctx.aliases.get(n, n): n for n in op.outputs.get("Out", [])
            if Versions._is_value(op, n)}
    carried = [n for n in outs if n in written and n != condition]
    initial = {n: versions.value_before(n) for n in carried}
    missing = [n for n in carried if initial[n] is None]
    if missing:
        raise NotConvertible(f"{missing[0]!r} is carried by the loop but has no value before "
                             "it")
    prefix = f"while_{ctx.op_index}"
    iteration, cond_in = versions.fresh(f"{prefix}.iteration"), versions.fresh(f"{prefix}.cond")
    body = versions.child(versions.previous)
    state_in = {n: versions.fresh(n) for n in carried}
    body.current.update(state_in)
    body_nodes = convert_ops(ctx, block, body, ctx.op_index)
    cond_out = versions.fresh(condition)
    state_out = [versions.fresh(n) for n in carried]
    body_nodes += _reshaped_bool(ctx, body.read(condition), cond_out)
    body_nodes += [_identity(ctx, body.read(n), name) for n, name in zip(carried, state_out)]
    graph = _graph(ctx, body_nodes, f"{prefix}_body",
                   [(iteration, onnx.TensorProto.INT64, []), (cond_in, onnx.TensorProto.BOOL, [])]
                   + [(state_in[n], ctx.onnx_type(n), None) for n in carried],
                   [cond_out] + state_out)
    first = versions.fresh(condition)
    ctx.nodes += _reshaped_bool(ctx, versions.value_before(condition), first)
    ctx.node("Loop", ["", first] + [initial[n] for n in carried], [outs[n] for n in carried],
             body=graph)
    if condition in outs:  # false once the loop has ended
        shape = [d if d > 0 else 1 for d in ctx.shape(condition)] or [1]
        ctx.node("Identity", [ctx.const(np.zeros(shape, bool), "false")], [outs[condition]])


def _reshaped_bool(ctx, source, target):
    """Nodes making the bool scalar ``target`` of the one-element ``source`` (a Fluid 1.x
    condition is a [1] tensor; a Loop's is a scalar)."""
    helper, scalar = ctx.onnx.helper, f"{target}.scalar"
    return [helper.make_node("Reshape", [source, ctx.const(np.array([], "int64"), "scalar")],
                             [scalar], name=f"{target}.reshape"),
            helper.make_node("Cast", [scalar], [target], to=ctx.onnx.TensorProto.BOOL,
                             name=f"{target}.cast")]
