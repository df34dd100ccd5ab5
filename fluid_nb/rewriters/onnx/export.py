"""Exporting an inference program to ONNX, with a report of every op.

The model is built with the ``onnx`` package: the parameters the converted ops read become
initializers (from the scope), the feeds are the graph's inputs with a symbolic dimension
wherever the variable declares -1, the fetches its outputs, and the program's variable names
are the ONNX value names (each node is named ``<op type>_<op index>[_<k>]``), so a node maps
back to its op. Ops with no ONNX form are reported with the reason; with ``strict=True`` no
file is written if there is any, otherwise they are written as nodes of the
``ai.fluid_nb`` domain (the graph stays whole and readable; onnxruntime refuses it).
"""
import dataclasses
import html
import numbers
from typing import List

import numpy as np

from ...errors import InvalidArgument, InvalidType, NotFound, PreconditionNotMet, expected
from ...exec.scope import Scope, global_scope
from ...framework.program import EMPTY_VAR_NAME, Program, Variable, without_feed_fetch_ops
from ...tensor.dtypes import to_numpy_dtype
from ...tensor.tensor import LoDTensor
from ...tensor.transfer import to_host
from . import loops  # noqa: F401  (registers the DynamicRNN converters)
from . import normalization, vision  # noqa: F401  (registers their converters)
from . import tensors  # noqa: F401  (registers the math and tensor-manipulation converters)
from . import sequences  # noqa: F401  (registers the sequence ops' converters)
from . import recurrent  # noqa: F401  (registers the rnn op's converter)
from . import expressions  # noqa: F401  (lowers every op defined by a formula; after the rest)
from .control_flow import Versions, last_writes
from .converters import CONVERTERS, ROW_WISE, SEQUENCE_AWARE, UNCONVERTIBLE, NotConvertible
from .files import output_path, write_atomically

DOMAIN = "ai.fluid_nb"


def _onnx():
    try:
        import onnx
    except ImportError:
        raise PreconditionNotMet(expected("ONNX export", "the onnx package",
                                          "installed (pip install onnx)",
                                          "it is not installed")) from None
    return onnx


@dataclasses.dataclass
class Row:
    """One op of the program: ``status`` is "converted", "approximated" or "not converted";
    ``note`` says what is approximated or why it did not convert."""
    index: int
    op_type: str
    status: str
    note: str = ""


@dataclasses.dataclass
class Report:
    """What :func:`export` did, op by op; ``path`` is None when nothing was written."""
    rows: List[Row]
    path: object
    opset: int
    inputs: List[str]
    outputs: List[str]
    #: how the model's inputs and outputs differ from the program's (a LoD's padding)
    conventions: List[str] = dataclasses.field(default_factory=list)
    #: the ONNX ModelProto (None when strict refused to build one)
    model: object = None

    @property
    def complete(self):
        return all(row.status != "not converted" for row in self.rows)

    @property
    def not_converted(self):
        return [row for row in self.rows if row.status == "not converted"]

    def __str__(self):
        width = max([len(r.op_type) for r in self.rows] + [7])
        lines = [f"{'op':>4}  {'type':<{width}}  status"]
        for r in self.rows:
            lines.append(f"{r.index:>4}  {r.op_type:<{width}}  {r.status}"
                         + (f": {r.note}" if r.note else ""))
        lines += [f"convention: {c}" for c in self.conventions]
        done = sum(r.status != "not converted" for r in self.rows)
        lines.append(f"{done} of {len(self.rows)} ops converted (opset {self.opset}); "
                     + (f"written to {self.path}" if self.path else "no model written"))
        return "\n".join(lines)

    def _repr_html_(self):
        body = "".join(
            f"<tr><td>{r.index}</td><td>{html.escape(r.op_type)}</td><td>{r.status}</td>"
            f"<td>{html.escape(r.note)}</td></tr>" for r in self.rows)
        return ("<table class='fluid-nb-onnx-report'><tr><th>op</th><th>type</th>"
                f"<th>status</th><th>note</th></tr>{body}</table>"
                f"<p>{html.escape(str(self).splitlines()[-1])}</p>")


class _Context:
    """What converters see: the program's variables and the graph being built."""

    def __init__(self, onnx, block, scope, op_index):
        self.onnx, self.block, self.scope = onnx, block, scope
        self.nodes, self.initializers = [], {}
        self.op, self.op_index, self._k = None, op_index, 0
        #: variables held padded (the padded-plus-lengths convention for a LoD): name ->
        #: the name of its lengths [batch] (int64)
        self.sequences = {}
        #: what converters of related ops share (rank tables, tensor arrays, the loop
        #: being converted, the SSA names)
        self.extra = {}
        #: SSA name -> the program variable it is a value of
        self.aliases = {}
        #: the model's opset, and the variables export gives as outputs
        self.opset, self.fetched = 17, set()

    def consumed(self, name):
        """Whether ``name`` is fetched or a later op of the program reads it (inside a
        control-flow block: assumed read)."""
        if not name:
            return False
        name = self.aliases.get(name, name)
        if name in self.fetched or not isinstance(self.op_index, int):
            return True
        later = self.block.ops[self.op_index + 1:]
        return any(name in args for op in later for args in op.inputs.values())

    def lengths(self, name):
        """The lengths of the sequence variable ``name`` (None: not a sequence)."""
        return self.sequences.get(name)

    def mask(self, padded, lengths, dtype=None):
        """[batch, time] true where a step is inside its sequence (cast to ``dtype``)."""
        onnx = self.onnx
        shape, time, steps, lens, mask = (self.tmp(n) for n in
                                          ("shape", "time", "steps", "lens", "mask"))
        self.node("Shape", [padded], [shape])
        self.node("Gather", [shape, self.const(np.array(1, "int64"), "one")], [time], axis=0)
        self.node("Range", [self.const(np.array(0, "int64"), "zero"), time,
                            self.const(np.array(1, "int64"), "one")], [steps])
        self.node("Unsqueeze", [lengths, self.const(np.array([1], "int64"), "axes")], [lens])
        self.node("Less", [steps, lens], [mask])
        if dtype is None:
            return mask
        cast = self.tmp("mask")
        self.node("Cast", [mask], [cast], to=onnx.helper.np_dtype_to_tensor_dtype(
            np.dtype(dtype)))
        return cast

    def start(self, op, index):
        self.op, self.op_index, self._k = op, index, 0

    def _var(self, name):
        var = self.block._find_var_recursive(self.aliases.get(name, name))
        if var is None:
            raise NotConvertible(f"variable {name!r} is not declared")
        return var

    def shape(self, name):
        if name in self.initializers:
            return tuple(self.initializers[name].shape)
        return tuple(self._var(name).shape)

    def dtype(self, name):
        if name in self.initializers:
            return self.initializers[name].dtype
        return np.dtype(to_numpy_dtype(self._var(name).dtype))

    def kind(self, name):
        held = self.scope.find_var(name)
        value = getattr(held, "value", None) if held is not None else None
        return "dense" if value is None or isinstance(value, LoDTensor) else \
            type(value).__name__

    def onnx_type(self, name):
        return self.onnx.helper.np_dtype_to_tensor_dtype(self.dtype(name))

    def node(self, op_type, inputs, outputs, **attrs):
        """Add an ONNX node of the model's opset: an operator the opset lacks makes the op
        not convertible; the reductions that take their axes as an input from opset 18 get
        them so."""
        since = _since_version(self.onnx, op_type, self.opset)
        if since is None:
            raise NotConvertible(f"ONNX's {op_type} is not in opset {self.opset}")
        if op_type in _AXES_INPUT_FROM_18 and self.opset >= 18 and "axes" in attrs:
            inputs = list(inputs) + [self.const(np.array(attrs.pop("axes"), "int64"), "axes")]
        name = f"{self.op.type}_{self.op_index}" + (f"_{self._k}" if self._k else "")
        self._k += 1
        self.nodes.append(self.onnx.helper.make_node(op_type, inputs, outputs, name=name,
                                                     **attrs))

    def tmp(self, hint):
        self._k += 1
        return f"{self.op.type}_{self.op_index}.{hint}_{self._k}"

    def const(self, array, hint="const"):
        # (a namespace of its own: a tmp and a const of one hint never share a name)
        name = f"{self.op.type}_{self.op_index}.{hint}_c{len(self.initializers)}"
        self.initializers[name] = np.asarray(array)
        return name

    def scalar(self, value, like):
        """A 0-D constant of ``like``'s element type."""
        return self.const(np.array(value, dtype=self.dtype(like)), "scalar")

    def reshaped(self, name, shape):
        """``name`` reshaped to ``shape``: a parameter's reshaped copy, else a Reshape."""
        var = self.block._find_var_recursive(name)
        if var is not None and var.persistable:
            return self.const(self.param(name).reshape(shape), "reshaped")
        out = self.tmp("reshaped")
        self.node("Reshape", [name, self.const(np.array(shape, "int64"), "shape")], [out])
        return out

    def param(self, name):
        """The value of parameter ``name`` in the scope. Every parameter is read here, so
        this is where a value that is not what the program declares (another shape or
        dtype: a scope of another model) is refused, naming the variable."""
        held = self.scope.find_var(name)
        value = getattr(held, "value", None) if held is not None else None
        if not isinstance(value, LoDTensor) or value.array is None:
            raise NotConvertible(f"parameter {name!r} has no value in the scope")
        array = np.asarray(to_host(value.array))
        var = self.block._find_var_recursive(name)
        if var is not None:
            _check_declared(name, array, var)
        return array


#: reductions whose axes moved from an attribute to an input in opset 18
_AXES_INPUT_FROM_18 = {"ReduceMax", "ReduceMin", "ReduceMean", "ReduceProd", "ReduceL1",
                       "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}
_SINCE = {}


def _since_version(onnx, op_type, opset):
    """The opset version of ``op_type``'s definition in ``opset`` (None: not in it)."""
    key = (op_type, opset)
    if key not in _SINCE:
        try:
            _SINCE[key] = onnx.defs.get_schema(op_type, opset, "").since_version
        except onnx.defs.SchemaError:
            _SINCE[key] = None
    return _SINCE[key]


def _check_declared(name, array, var):
    """Refuse the scope's ``array`` for ``var`` unless its shape (a declared -1 matches any
    size) and dtype are the declared ones."""
    shape = list(var.shape) if var.shape is not None else None
    dtype = np.dtype(to_numpy_dtype(var.dtype))
    fits = shape is None or (len(shape) == array.ndim and
                             all(d < 0 or d == n for d, n in zip(shape, array.shape)))
    if not fits or array.dtype != dtype:
        raise InvalidArgument(expected(
            "onnx.export", f"parameter {name!r} in the scope",
            f"shape {shape} of {dtype} (as the program declares)",
            f"shape {list(array.shape)} of {array.dtype}"))


def _names(value, what, block):
    """The variable names ``value`` gives for ``what`` (feed or fetch): a list or tuple of
    Variables or names (one alone is taken as a list of it), each a variable of ``block``,
    none twice."""
    if isinstance(value, (str, Variable)):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise InvalidType(expected("onnx.export", what, "a list of Variables or names",
                                   type(value).__name__))
    names = []
    for k, item in enumerate(value):
        name = item.name if isinstance(item, Variable) else item
        if not isinstance(name, str) or not name:
            raise InvalidType(expected("onnx.export", f"{what}[{k}]",
                                       "a Variable or a variable's name", repr(item)[:80]))
        if not block.has_var(name):
            raise NotFound(expected("onnx.export", f"{what}[{k}]", "a variable of the program",
                                    repr(name)))
        if name in names:
            raise InvalidArgument(expected("onnx.export", f"{what}[{k}]",
                                           "each variable once", f"{name!r} again"))
        names.append(name)
    return names


def _check_arguments(onnx, program, path, scope, opset, strict):
    """Refuse arguments of the wrong type or range before any work is done."""
    if not isinstance(program, Program):
        raise InvalidType(expected("onnx.export", "program", "a Program",
                                   type(program).__name__))
    top = onnx.defs.onnx_opset_version()
    if not isinstance(opset, numbers.Integral) or isinstance(opset, bool) or \
            not 13 <= opset <= top:
        raise InvalidArgument(expected("onnx.export", "opset", f"an int in [13, {top}]",
                                       repr(opset)))
    if scope is not None and not isinstance(scope, Scope):
        raise InvalidType(expected("onnx.export", "scope", "a fluid_nb Scope or None",
                                   f"{type(scope).__name__} {scope!r}"[:80]))
    if not isinstance(strict, bool):
        raise InvalidType(expected("onnx.export", "strict", "True or False", repr(strict)))
    if path is not None:
        output_path(path, "onnx.export")


def _value_info(onnx, name, shape, dtype, symbol):
    dims = [d if d >= 0 else f"{symbol}_{i}" if i else "batch" for i, d in enumerate(shape)]
    return onnx.helper.make_tensor_value_info(
        name, onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), dims)


def export(program, path=None, feed=None, fetch=None, scope=None, opset=17, strict=False):
    """Export the ops of block 0 of the inference ``program`` that ``fetch`` depends on to
    the ONNX file ``path`` (None: only report). ``feed``: the inputs (Variables or names;
    default: the program's feed ops, else its data variables); ``fetch``: the outputs
    (Variables or names; default: its fetch ops); ``scope``: where the parameters are;
    each must have the shape and dtype the program declares. Returns the
    :class:`Report`. A refused call (a typed error) writes nothing: a file already at
    ``path`` is left as it was, and no partial file is left beside it."""
    onnx = _onnx()
    _check_arguments(onnx, program, path, scope, opset, strict)
    opset = int(opset)
    scope = global_scope() if scope is None else scope
    block = program.global_block()
    feed_names = _names(feed, "feed", block) if feed is not None else \
        [op.outputs["Out"][0] for op in block.ops if op.type == "feed"] or \
        [v.name for v in block.vars.values() if getattr(v, "is_data", False)]
    fetch_names = _names(fetch, "fetch", block) if fetch is not None else \
        [op.inputs["X"][0] for op in block.ops if op.type == "fetch"]
    if not fetch_names:
        raise InvalidArgument(expected("onnx.export", "fetch", "the outputs to export",
                                       "an empty list" if fetch is not None else
                                       "none (the program has no fetch ops)"))
    body = without_feed_fetch_ops(program).global_block()
    ctx = _Context(onnx, body, scope, 0)
    ctx.opset, ctx.fetched = opset, set(fetch_names)
    conventions, graph_inputs = [], []
    for name in feed_names:
        var = block.var(name)
        dtype = to_numpy_dtype(var.dtype)
        if var.lod_level > 1:
            raise InvalidArgument(expected("onnx.export", f"feed {name!r}",
                                           "a LoD of at most one level",
                                           f"{var.lod_level} levels"))
        if var.lod_level == 1:  # padded [batch, time, ...] with its lengths
            ctx.sequences[name] = f"{name}_lengths"
            graph_inputs += [_value_info(onnx, name, [-1, -1] + list(var.shape[1:]), dtype, name),
                             _value_info(onnx, f"{name}_lengths", [-1], "int64", name)]
            conventions.append(f"{name} has a LoD: the model takes it padded, [batch, time"
                               f"{', ...' if len(var.shape) > 1 else ''}], with "
                               f"{name}_lengths [batch] (int64)")
        else:
            graph_inputs.append(_value_info(onnx, name, var.shape, dtype, name))
    rows = []
    produced = set(feed_names) | set(ctx.sequences.values())
    needed = _needed(body, fetch_names, feed_names)
    # SSA names: every write of a variable that has a value gets a new name (see
    # control_flow); the parameters and feeds are the values there before any op
    versions = ctx.extra["versions"] = Versions(
        ctx, produced | {v.name for v in body.vars.values() if v.persistable})
    last = last_writes([body.ops[i] for i in needed])
    for index in needed:
        op = versions.view(body.ops[index], last)
        ctx.start(op, index)
        convert = CONVERTERS.get(op.type)
        before = len(ctx.nodes)
        sequence_in = [n for args in op.inputs.values() for n in args if ctx.lengths(n)]
        try:
            if convert is None:
                raise NotConvertible(UNCONVERTIBLE.get(
                    op.type, "no converter for this op type (no ONNX counterpart written)"))
            if sequence_in and op.type not in SEQUENCE_AWARE | ROW_WISE:
                raise NotConvertible(f"a LoD input ({sequence_in[0]}): the padded convention "
                                     f"does not cover {op.type}")
            note = convert(op, ctx)
            if sequence_in and op.type in ROW_WISE:  # row by row: the output is padded too
                for args in op.outputs.values():
                    for n in args:
                        ctx.sequences.setdefault(n, ctx.lengths(sequence_in[0]))
            rows.append(Row(index, op.type, "approximated" if note else "converted",
                            note or ""))
        except NotConvertible as exc:
            del ctx.nodes[before:]
            rows.append(Row(index, op.type, "not converted", str(exc)))
            if sequence_in and op.type not in SEQUENCE_AWARE:  # assume it keeps the LoD
                for args in op.outputs.values():
                    for n in args:
                        ctx.sequences.setdefault(n, ctx.lengths(sequence_in[0]))
            outs = [n for args in op.outputs.values() for n in args if n != EMPTY_VAR_NAME]
            ins = [n for args in op.inputs.values() for n in args if n != EMPTY_VAR_NAME]
            ctx.nodes.append(onnx.helper.make_node(op.type, ins, outs, name=f"{op.type}_{index}",
                                                   domain=DOMAIN))
    produced.update(n for node in ctx.nodes for n in node.output)
    # the parameters: every input no node produces and no feed gives
    read = _outer_reads(onnx, ctx.nodes)
    # an op left unconverted may read what is no tensor (a rank table, a tensor array): its
    # node names the program's variable, which has no value to give
    unconverted = {n for node in ctx.nodes if node.domain == DOMAIN for n in node.input}
    for name in dict.fromkeys(read):
        if name in produced or name in ctx.initializers:
            continue
        try:
            ctx.initializers[name] = ctx.param(name)
        except NotConvertible as exc:
            if name in unconverted:
                continue
            raise NotFound(expected("onnx.export", f"input {name!r}",
                                    "a feed or a parameter with a value in the scope",
                                    str(exc))) from None
    report = Report(rows, None, opset, feed_names, fetch_names, conventions)
    if not report.complete and strict:
        return report
    outputs = []
    for n in fetch_names:
        var = block.var(n)
        if versions.read(n) != n:  # a feed or parameter the program writes: a new name
            conventions.append(f"{n} is an input the program rewrites: the model gives its "
                               f"final value as {versions.read(n)}")
            n = versions.read(n)
        if ctx.lengths(n):  # a sequence comes out padded, its lengths beside it
            outputs += [_value_info(onnx, n, [-1, -1] + list(var.shape[1:]),
                                    to_numpy_dtype(var.dtype), n),
                        _value_info(onnx, ctx.lengths(n), [-1], "int64", n)]
            conventions.append(f"{n} has a LoD: the model gives it padded, with "
                               f"{ctx.lengths(n)}")
        else:
            outputs.append(_value_info(onnx, n, var.shape, to_numpy_dtype(var.dtype), n))
    graph = onnx.helper.make_graph(
        ctx.nodes, "fluid_nb_program", graph_inputs, outputs,
        # (np.array, not ascontiguousarray, which makes a 0-D constant 1-D)
        [onnx.numpy_helper.from_array(np.array(a, order="C"), name)
         for name, a in ctx.initializers.items()])
    imports = [onnx.helper.make_opsetid("", opset)]
    if not report.complete:
        imports.append(onnx.helper.make_opsetid(DOMAIN, 1))
    model = onnx.helper.make_model(graph, opset_imports=imports, producer_name="fluid_nb",
                                   doc_string=_doc(report))
    model.ir_version = min(model.ir_version, 8)  # readable by onnxruntimes of opset 17
    if path is not None:
        write_atomically(path, model.SerializeToString(), "onnx.export")
        report.path = path
    report.model = model
    return report


def _outer_reads(onnx, nodes, local=()):
    """The names ``nodes`` read that they do not make themselves, subgraphs (a Loop's
    body) included: what must come from outside (feeds, parameters, outer values)."""
    made = set(local) | {n for node in nodes for n in node.output}
    reads = []
    for node in nodes:
        reads += [n for n in node.input if n and n not in made]
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                graph = attribute.g
                inner_local = {i.name for i in graph.input} | {i.name for i in graph.initializer}
                reads += [n for n in _outer_reads(onnx, graph.node, inner_local)
                          if n not in made]
    return reads


def _needed(block, fetch_names, feed_names):
    """The indices of the ops the fetches depend on (back from them to the feeds), in order:
    a program holding other outputs too exports only what is asked for."""
    needed, keep = set(fetch_names), []
    for index in reversed(range(len(block.ops))):
        op = block.ops[index]
        if any(n in needed for args in op.outputs.values() for n in args):
            keep.append(index)
            needed.update(n for args in op.inputs.values() for n in args
                          if n not in feed_names)
    return sorted(keep)



def _doc(report):
    approximations = [f"op {r.index} {r.op_type}: {r.note}" for r in report.rows
                      if r.status == "approximated"]
    text = "Exported by fluid_nb from a Fluid ProgramDesc; node names are <op type>_<index>."
    if report.conventions:
        text += " " + "; ".join(report.conventions) + "."
    if approximations:
        text += " Approximations: " + "; ".join(approximations)
    return text
