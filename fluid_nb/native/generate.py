"""ProgramDesc -> C++ source: one function per op instance, a ``fluid_run`` entry calling
them in block order (the seeds' native code generator).

The source is specialised on one set of feed shapes: a trace run of the program in the
interpreter (on a copy of the scope's persistables, so nothing the caller holds changes)
gives every variable's concrete shape and type, and the emitters write sizes as literals.
Variables are passed to ``fluid_run`` as one array of data pointers, in the order of
:attr:`NativeSource.variables`.
"""
import dataclasses
import html
import re
from typing import List, Tuple

import numpy as np

from ..errors import InvalidArgument, NotFound, Unimplemented, expected
from ..exec.executor import Executor
from ..exec.scope import Scope
from ..framework.program import EMPTY_VAR_NAME, Program, without_feed_fetch_ops
from ..tensor.place import CPUPlace
from ..tensor.tensor import LoDTensor, SelectedRows
from ..tensor.transfer import to_host
from .emitters import EMITTERS, NoEmitter

TARGETS = ("cpp", "cuda")
#: each target's runtime header (the emitters write one set of kernel calls for both)
HEADERS = {"cpp": "fluid_native.h", "cuda": "fluid_native_cuda.cuh"}
_CTYPES = {np.dtype("float32"): "float", np.dtype("float64"): "double",
           np.dtype("int64"): "int64_t", np.dtype("int32"): "int32_t",
           np.dtype("bool"): "bool", np.dtype("uint8"): "uint8_t", np.dtype("int8"): "int8_t"}


@dataclasses.dataclass
class Variable:
    """A variable the compiled code touches: its index in the pointer array, where its
    memory comes from (``feed``, ``persistable`` in the scope, or ``temporary`` owned by the
    compiled program) and its concrete shape and type."""
    name: str
    index: int
    role: str
    shape: Tuple[int, ...]
    dtype: np.dtype
    identifier: str


@dataclasses.dataclass
class NativeSource:
    """What :func:`generate` gives: the source text, the variables in pointer order, the
    ops compiled (``(op index, function name)``) and those that are not, with why."""
    source: str
    target: str
    variables: List[Variable]
    functions: List[Tuple[int, str]]
    fallbacks: List[Tuple[int, str, str]]
    feed_names: List[str]
    fetch_names: List[str]
    #: the program in run order: ("native", entry symbol, [op indices]) for a run of
    #: compiled ops, ("interpreter", None, [op indices]) for a run of ops that fell back
    segments: List[Tuple[str, object, List[int]]] = dataclasses.field(default_factory=list)

    def __str__(self):
        return self.source

    def _repr_html_(self):
        """The ops beside the source: each op's row links to its function (or says why it
        runs in the interpreter), each function's header links back to its op."""
        return _html(self)


class _Env:
    """What an emitter asks of the variables: shape, C type, kind and pointer expression."""

    def __init__(self, shapes, kinds, identifiers, index):
        self._shapes, self._kinds, self._identifiers = shapes, kinds, identifiers
        self._index = index
        self.used = []

    def scratch(self, count, dtype):
        """A work buffer of ``count`` elements for this op (the compiled program owns it)."""
        name = f"scratch@{self._index}"
        self._shapes[name] = ((int(count),), np.dtype(dtype))
        self._identifiers[name] = f"scratch_{self._index}"
        return self.ptr(name)

    def shape(self, name):
        return self._shapes[name][0]

    def has(self, name):
        """Whether ``name`` had a tensor value in the trace run."""
        return name in self._shapes

    def ctype(self, name):
        dtype = self._shapes[name][1]
        if dtype not in _CTYPES:
            raise NoEmitter(f"{name} is {dtype}, a type the runtime has no kernels for")
        return _CTYPES[dtype]

    def kind(self, name):
        return self._kinds.get(name, "dense")

    def ptr(self, name):
        if name not in self._shapes:
            raise NoEmitter(f"{name} has no value in the trace run")
        if self.kind(name) != "dense":
            raise NoEmitter(f"{name} is a {self.kind(name)}, not a dense tensor")
        self.ctype(name)  # a type the runtime knows
        if name not in self.used:
            self.used.append(name)
        return self._identifiers[name]


def trace(program, feed, scope):
    """{name: (shape, dtype)} and {name: kind} of every variable of block 0 after one
    interpreter run of ``program`` on ``feed``, made on a copy of ``scope``'s persistables."""
    block = program.global_block()
    scratch = Scope()
    for var in block.vars.values():
        if not var.persistable:
            continue
        held = scope.find_var(var.name)
        value = getattr(held, "value", None) if held is not None else None
        if isinstance(value, LoDTensor) and value.array is not None:
            scratch.var(var.name).get_tensor().set(np.array(to_host(value.array)))
    names = sorted({name for op in block.ops for args in op.outputs.values() for name in args
                    if name != EMPTY_VAR_NAME and block.has_var(name)
                    and not block.var(name).persistable})
    values = Executor(CPUPlace()).run(program, feed=feed, fetch_list=names, scope=scratch,
                                      return_numpy=False)
    shapes, kinds = {}, {}
    for name, value in list(zip(names, values)) + [
            (var.name, scratch.find_var(var.name).value) for var in block.vars.values()
            if var.persistable and scratch.find_var(var.name) is not None]:
        if isinstance(value, SelectedRows):
            kinds[name] = "SelectedRows"
        elif isinstance(value, LoDTensor) and value.array is not None:
            array = np.asarray(value.array)
            shapes[name] = (tuple(array.shape), array.dtype)
            if value.lod():
                kinds[name] = "dense"  # the LoD rides along unused by dense kernels
        elif value is not None:
            kinds[name] = type(value).__name__
    for name, value in feed.items():
        array = np.asarray(value)
        shapes[name] = (tuple(array.shape), array.dtype)
    return shapes, kinds


def _identifier(name, taken):
    base = re.sub(r"[^0-9A-Za-z_]", "_", name)
    if not base or base[0].isdigit():
        base = "v_" + base
    text, k = base, 1
    while text in taken:
        text, k = f"{base}_{k}", k + 1
    taken.add(text)
    return text


def generate(program, target="cpp", feed=None, fetch=None, scope=None):
    """The C++ (``target="cpp"``) or CUDA (``"cuda"``) source of block 0 of ``program`` for
    the shapes of ``feed`` (name -> array): one function ``fluid_<target>_<op type>_<index>``
    per op, ``fluid_run`` calling them in order (on device pointers for CUDA). ``fetch``: the variables (or names) read back; ``scope``: where the
    parameters are (default: the global scope). Ops without an emitter are listed in
    ``fallbacks`` with the reason (a program with any cannot be compiled whole yet)."""
    from ..exec.scope import global_scope
    if not isinstance(program, Program):
        raise InvalidArgument(expected("generate", "program", "a Program",
                                       type(program).__name__))
    if target not in TARGETS:
        raise Unimplemented(expected("generate", "target", " or ".join(map(repr, TARGETS)),
                                     repr(target)))
    feed = {name: np.asarray(value) for name, value in (feed or {}).items()}
    fetch_names = [getattr(f, "name", f) for f in (fetch or [])]
    scope = global_scope() if scope is None else scope
    block = program.global_block()
    if len(program.blocks) > 1:
        raise Unimplemented(expected("generate", "program", "one block (sub-blocks are not "
                                     "compiled yet)", f"{len(program.blocks)} blocks"))
    for name in fetch_names:
        if not block.has_var(name):
            raise NotFound(expected("generate", "fetch", "variables of the program",
                                    repr(name)))
    program = without_feed_fetch_ops(program)
    block = program.global_block()
    shapes, kinds = trace(program, feed, scope)
    taken = set()
    identifiers = {name: _identifier(name, taken) for name in sorted(shapes)}
    functions, fallbacks, bodies = [], [], []
    used_order = []
    for index, op in enumerate(block.ops):
        emit = EMITTERS.get(op.type)
        if emit is None:
            fallbacks.append((index, op.type, "no emitter for this op type"))
            continue
        env = _Env(shapes, kinds, identifiers, index)
        try:
            lines = emit(op, env)
        except NoEmitter as exc:
            fallbacks.append((index, op.type, str(exc)))
            continue
        function = f"fluid_{target}_{op.type}_{index}"
        functions.append((index, function))
        bodies.append((index, op, function, env.used, lines))
        used_order += [n for n in env.used if n not in used_order]
    segments = _segments(block, bodies, fallbacks)
    for kind, _, indices in segments:  # values crossing into or out of the interpreter
        if kind == "interpreter":
            for index in indices:
                op = block.ops[index]
                for args in list(op.inputs.values()) + list(op.outputs.values()):
                    used_order += [n for n in args if n in shapes and kinds.get(n, "dense")
                                   == "dense" and n not in used_order]
    for name in fetch_names:
        if name not in used_order and name in shapes:
            used_order.append(name)
    variables = []
    for name in used_order:
        var = block._find_var_recursive(name)
        role = ("feed" if name in feed else "persistable" if var is not None and var.persistable
                else "temporary")
        variables.append(Variable(name, len(variables), role, shapes[name][0], shapes[name][1],
                                  identifiers[name]))
    source = _source(program, target, variables, bodies, fallbacks, segments)
    return NativeSource(source, target, variables, functions, fallbacks, sorted(feed),
                        fetch_names, segments)


def _segments(block, bodies, fallbacks):
    """The ops in order as runs: a compiled run gets an entry (``fluid_run`` when the whole
    program compiled, ``fluid_segment_<k>`` otherwise), a fallen-back run none."""
    compiled = {index for index, *_ in bodies}
    if not fallbacks:
        return [("native", "fluid_run", sorted(compiled))] if bodies else []
    runs = []
    for index in range(len(block.ops)):
        kind = "native" if index in compiled else "interpreter"
        if runs and runs[-1][0] == kind:
            runs[-1][1].append(index)
        else:
            runs.append((kind, [index]))
    return [(kind, f"fluid_segment_{k}" if kind == "native" else None, indices)
            for k, (kind, indices) in enumerate(runs)]


def _describe(op):
    ins = ", ".join(f"{slot}={'/'.join(args)}" for slot, args in op.inputs.items() if args)
    outs = ", ".join(f"{slot}={'/'.join(args)}" for slot, args in op.outputs.items() if args)
    return f"{op.type}({ins}) -> {outs}"


def _source(program, target, variables, bodies, fallbacks, segments):
    by_name = {v.name: v for v in variables}
    header = HEADERS[target]
    lines = ["// Generated by fluid_nb's native code generator from a ProgramDesc: block 0,",
             f"// {len(bodies)} ops compiled, specialised on these shapes. Each op is a function",
             f"// that runs its kernel ({header}); fluid_run calls them in block order.",
             f'#include "{header}"', "", "using namespace fluid_native;", "",
             "// the variables, in the order of fluid_run's pointer array"]
    for v in variables:
        lines.append(f"//   v[{v.index}] {v.name}: {_CTYPES.get(v.dtype, v.dtype)} "
                     f"{list(v.shape)} ({v.role})")
    for index, op_type, why in fallbacks:
        lines.append(f"// not compiled: op {index} {op_type} ({why})")
    lines.append("")
    for index, op, function, used, body in bodies:
        lines.append(f"// op {index}: {_describe(op)}")
        lines.append(f"static void {function}(void** v) {{")
        for name in used:
            v = by_name[name]
            ctype = _CTYPES[v.dtype]
            lines.append(f"  {ctype}* {v.identifier} = static_cast<{ctype}*>(v[{v.index}]);")
        lines += ["  " + line for line in body]
        lines += ["}", ""]
    function_of = {index: function for index, _, function, _, _ in bodies}
    for kind, symbol, indices in segments:
        if kind == "interpreter":
            lines.append(f"// ops {indices[0]}-{indices[-1]} run in the interpreter here")
            continue
        lines.append(f'extern "C" void {symbol}(void** v) {{')
        lines += [f"  {function_of[i]}(v);" for i in indices]
        lines.append("}")
    return "\n".join(lines) + "\n"


def _html(source):
    functions = dict(source.functions)
    why = {index: (op_type, reason) for index, op_type, reason in source.fallbacks}
    ops = sorted(set(functions) | set(why))
    rows = []
    for index in ops:
        if index in functions:
            name = functions[index]
            cell = f"<a href='#fluid-fn-{name}' id='fluid-op-{name}'><code>{name}</code></a>"
            op_type = name[len(f"fluid_{source.target}_"):].rsplit("_", 1)[0]
        else:
            op_type, reason = why[index]
            cell = f"interpreter: {html.escape(reason)}"
        rows.append(f"<tr><td>{index}</td><td>{html.escape(op_type)}</td><td>{cell}</td></tr>")
    code = []
    for line in source.source.splitlines():
        escaped = html.escape(line)
        match = re.match(r"static void (fluid_\w+)\(", line)
        if match:
            name = match.group(1)
            escaped = (f"<span id='fluid-fn-{name}'><a href='#fluid-op-{name}'>"
                       f"{escaped}</a></span>")
        code.append(escaped)
    return ("<div class='fluid-nb-native'>"
            f"<p>{len(source.functions)} ops compiled ({source.target}), "
            f"{len(source.fallbacks)} in the interpreter</p>"
            "<table><tr><th>op</th><th>type</th><th>native code</th></tr>"
            + "".join(rows) + "</table><pre>" + "\n".join(code) + "</pre></div>")
