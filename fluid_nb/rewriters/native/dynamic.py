"""The generator for programs whose sizes change from batch to batch: a LoD feed, a
``while`` loop over tensor arrays (DynamicRNN), their backward.

One build serves every batch. Each variable is a run-time object in the generated code
(``runtime/fluid_native_values.h``): a ``Tensor<T>`` with its dims and LoD, a
``TensorArray<T>``, a ``RankTable``, the ``StepScopes`` of a loop. Block 0's live in the
program's ``State``; a ``while`` body's in a record per step (``Block<b>Step``, the ones
``while_grad`` reads, kept for it) or one record all steps share (``Block<b>Temp``); a grad
body's in a record of its own. Sizes fixed by the program (a declared dim such as a hidden
width) are literals; the others (a batch, a step's rows) are read from the tensors' dims.

Each op is a function ``fluid_<target>_<type>_<index>`` (``_<block>_<index>`` in a
sub-block) taking the state (and, in a loop body, the step's record); a ``while`` runs its
body's function while the condition holds, keeping one record per step, and ``while_grad``
runs its grad body's over those records in reverse. ``fluid_run(state, v)`` binds the
feeds (``Exchange`` records: data, dims, LoD) and parameters (the scope's arrays) from
``v``, runs block 0 and fills the ``Exchange`` of each fetched variable.
"""
import collections
import dataclasses
from typing import List, Tuple

import numpy as np

from ...framework import registry
from ...framework.blocks import block_attrs, sub_block
from ...framework.program import EMPTY_VAR_NAME, grad_var_name
from ...ops.control_flow import grad_pairs
from ...tensor.dtypes import VarType, to_numpy_dtype
from .emitter_table import EMITTERS, NoEmitter
from .env import CTYPES, Dim, DynamicEnv, is_static
from .names import c_string, comment, escape, identifier

#: the runtime header of each target for these programs
HEADERS = {"cpp": "fluid_native_dynamic.h", "cuda": "fluid_native_cuda_dynamic.cuh"}

KINDS = {VarType.LOD_TENSOR: "dense", VarType.LOD_TENSOR_ARRAY: "array",
         VarType.LOD_RANK_TABLE: "rank_table", VarType.STEP_SCOPES: "step_scopes",
         VarType.SELECTED_ROWS: "SelectedRows"}
#: the trace's names of run-time values
TRACED_KINDS = {"LoDTensorArray": "array", "LoDRankTable": "rank_table", "list": "step_scopes",
                "SelectedRows": "SelectedRows"}

@dataclasses.dataclass(eq=False)
class Slot:
    """A variable as the generated code holds it: its kind, element type, shape (-1 where
    the size is read at run time; an array's items' shape), the record that holds it
    (``home``, an expression, and ``record``, its struct) and, for block 0's tensors, its
    place in ``fluid_run``'s pointer array."""
    name: str
    kind: str
    dtype: object
    shape: Tuple[int, ...]
    identifier: str
    home: str
    record: str
    role: str = "temporary"
    index: int = -1
    cxx_type: str = ""
    #: the generated code's own (a scratch buffer, a transpose): not in the pointer array
    internal: bool = False

    @property
    def fixed(self):
        """A parameter: a view of the scope's array, its shape the compiled one."""
        return self.role == "persistable"

    @property
    def ctype(self):
        if self.dtype not in CTYPES:
            raise NoEmitter(f"{self.name} is {self.dtype}, a type the runtime has no kernels "
                            f"for")
        return CTYPES[self.dtype]

    def dims(self):
        return tuple(Dim(f"{self.identifier}.dims[{k}]") if d < 0 else d
                     for k, d in enumerate(self.shape))

    def declaration(self):
        if self.cxx_type:
            return self.cxx_type
        if self.kind == "dense":
            return f"Tensor<{self.ctype}>"
        if self.kind == "array":
            return f"TensorArray<{self.ctype}>"
        if self.kind == "rank_table":
            return "RankTable"
        raise NoEmitter(f"{self.name}: a {self.kind} has no run-time form")


@dataclasses.dataclass
class Function:
    key: object          # op index in block 0, (block, index) in a sub-block, None: a runner
    op: object
    name: str
    params: str
    lines: List[str]


def _shape(declared, traced):
    """-1 where a size is read at run time: where the program declares -1 (or a size the
    trace run did not have)."""
    if traced is None:
        return tuple(int(d) for d in declared)
    traced = tuple(int(d) for d in traced)
    if len(declared) != len(traced):
        return traced if all(d >= 0 for d in declared) else tuple(-1 for _ in traced)
    return tuple(t if d >= 0 and d == t else -1 for d, t in zip(declared, traced))


def _droppable(op):
    """An op whose work is its outputs' values alone (no sub-block, no state)."""
    opdef = registry.find(op.type)
    return not block_attrs(op) and any(
        n != EMPTY_VAR_NAME for n in op.output_arg_names) and (
        opdef is None or not ({"stateful", "has_sub_block"} & opdef.traits))


def unneeded(program, fetch_names):
    """(ops, names): the ops ((block, index)) whose outputs nothing needs, and the names no
    op reads: not fetched, not persistable, read by no op that is kept (by name, in any
    block: a conservative reading of scopes). A while_grad reads a step's gradient of X
    when its X@GRAD is needed; that read keeps alive the ops of its gradient block (and
    their sub-blocks) that write the step's gradient, not an op outside of it writing the
    same name (Fluid's backward names the loop's summed input gradient as the step's).
    The generated code neither runs those ops nor writes those names (a gradient of the
    loop's input array that no one reads, say)."""
    ops = [(block.idx, index, op) for block in program.blocks
           for index, op in enumerate(block.ops)]
    kept = set(fetch_names) | {v.name for block in program.blocks
                               for v in block.vars.values() if v.persistable}

    def within(idx, ancestor):
        while idx >= 0 and idx != ancestor:
            idx = program.block(idx).parent_idx
        return idx == ancestor

    dropped = set()
    while True:
        read, step_reads = set(kept), set()  # step_reads: (gradient block, name)
        for b, i, op in ops:
            if (b, i) not in dropped:
                read.update(op.input_arg_names)
        for b, i, op in ops:  # what a while_grad sums, of the gradients that are needed
            if op.type == "while_grad" and (b, i) not in dropped:
                xs = op.inputs.get("X") or []
                grad_block = sub_block(op).idx
                step_reads.update((grad_block, grad_var_name(xs[k])) for k, j in
                                  grad_pairs(xs, op.outputs.get("X@GRAD") or [])
                                  if op.outputs["X@GRAD"][j] in read)

        def needed(b, name):
            return name in read or any(n == name and within(b, g) for g, n in step_reads)
        more = {(b, i) for b, i, op in ops if (b, i) not in dropped and _droppable(op)
                and not any(needed(b, n) for n in op.output_arg_names)}
        if not more:
            outputs = {n for _, _, op in ops for n in op.output_arg_names}
            return dropped, outputs - read - {n for _, n in step_reads} - {EMPTY_VAR_NAME}
        dropped |= more


class DynamicGenerator:
    """Generates one program's source (see the module docstring). ``shapes`` and ``kinds``
    are the trace run's ({name: (shape, dtype)}, {name: kind}) of block 0's variables."""

    def __init__(self, program, target, shapes, kinds, feed_names, fetch_names):
        self.program, self.target = program, target
        self.feed_names, self.fetch_names = list(feed_names), list(fetch_names)
        #: the ops nothing needs, and the names no one reads (see ``unneeded``)
        self.dropped, self.dead = unneeded(program, fetch_names)
        #: a gradient a while_grad sums over its steps -> the slot of the total an op adds
        #: it into directly
        self.accumulators = {}
        #: (grad block, parameter) a loop's products use transposed -> its transpose's slot
        self.transposes = {}
        self.taken = set()
        self.functions = []
        self.records = collections.OrderedDict(State=[])
        self.record_order = []  # the structs before State, in the order they are made
        self.index = []         # block 0's tensors in fluid_run's pointer array
        self.scratch = {}
        self.loops = {}         # a while's StepScopes name -> its body's (block, record, slots)
        self.temp_members = {}  # a record all steps share -> its member of State
        self.block0 = self._block0_slots(shapes, kinds)

    # --- slots -------------------------------------------------------------------------------
    def _block0_slots(self, shapes, kinds):
        block = self.program.global_block()
        slots = {}
        names = list(block.vars) + [n for n in self.feed_names if n not in block.vars]
        for name in names:
            var = block.vars.get(name)
            traced = shapes.get(name)
            kind = TRACED_KINDS.get(kinds.get(name), None) or (
                KINDS.get(var.type, "other") if var is not None else "dense")
            if traced is not None:
                dtype = np.dtype(traced[1])
            elif var is not None and var.type in (VarType.LOD_TENSOR, VarType.LOD_TENSOR_ARRAY):
                dtype = np.dtype(to_numpy_dtype(var.dtype))
            else:
                dtype = None
            declared = tuple(var.shape) if var is not None else ()
            shape = _shape(declared, traced[0] if traced is not None else None)
            role = ("feed" if name in self.feed_names else
                    "persistable" if var is not None and var.persistable else "temporary")
            if role == "persistable":
                shape = tuple(int(d) for d in traced[0]) if traced is not None else shape
            slots[name] = Slot(name, kind, dtype, shape, identifier(name, self.taken), "s",
                               "State", role)
        return slots

    def new_slot(self, var, home, record, like=None):
        """A slot for ``var`` (declared in a sub-block; ``like``: the slot of the same name
        above, for a gradient the grad body holds of its own) held in ``record``."""
        if var is None:
            return dataclasses.replace(like, identifier=identifier(like.name, self.taken),
                                       home=home, record=record, role="temporary", index=-1,
                                       cxx_type="")
        kind = KINDS.get(var.type, "other")
        dtype = np.dtype(to_numpy_dtype(var.dtype)) \
            if var.type in (VarType.LOD_TENSOR, VarType.LOD_TENSOR_ARRAY) else None
        return Slot(var.name, kind, dtype, tuple(int(d) for d in var.shape),
                    identifier(var.name, self.taken), home, record)

    def temp_record(self, block_idx):
        """(struct, expression) of the record block ``block_idx``'s steps share."""
        record = f"Block{block_idx}Temp"
        self.temp_members[record] = f"block{block_idx}"
        return record, f"s.block{block_idx}"

    def declare_record(self, record):
        """Declare struct ``record`` even if it holds nothing (a loop's step record)."""
        self.records.setdefault(record, [])
        if record not in self.record_order:
            self.record_order.append(record)

    def record_slot(self, name, record):
        """A member of State that is one ``record`` (the single step of a loop that keeps
        no step scopes)."""
        return Slot(name, "record", None, (), identifier(name, self.taken), "s", "State",
                    cxx_type=record)

    def transpose_slot(self, param):
        """The slot of parameter slot ``param``'s transpose (a 2-D one)."""
        name = f"{param.name}@transposed"
        return Slot(name, "dense", param.dtype, tuple(reversed(param.shape)),
                    identifier(name, self.taken), "s", "State", internal=True)

    def scratch_slot(self, name, block, dtype):
        slot = self.scratch.get(name)
        if slot is None:
            slot = self.scratch[name] = Slot(name, "dense", dtype, (-1,),
                                             identifier(name, self.taken), "s", "State",
                                             internal=True)
        return slot

    def use(self, slot):
        """Declare ``slot`` in its record (once) and give block 0's tensors their place in
        the pointer array."""
        members = self.records.setdefault(slot.record, [])
        if slot not in members:
            members.append(slot)
            if slot.record != "State" and slot.record not in self.record_order:
                self.record_order.append(slot.record)
            if slot.record == "State" and slot.kind in ("dense", "array", "rank_table") \
                    and slot.index < 0 and not slot.internal:
                slot.index = len(self.index)
                self.index.append(slot)

    # --- ops ----------------------------------------------------------------------------------
    def emit(self, block_idx, index, op, slots, params):
        """The function of one op (its name), or NoEmitter saying why there is none."""
        emit = EMITTERS.get(op.type)
        if emit is None:
            raise NoEmitter("no emitter for this op type")
        env = DynamicEnv(slots, self, block_idx, index, op)
        body = emit(op, env)
        sizes, shares = [], []
        for slot_name, args in op.outputs.items():
            for name in args:
                slot = slots.get(name)
                if name == EMPTY_VAR_NAME or slot is None or name not in env.used \
                        or slot.kind != "dense" or slot.fixed or name in env.sized:
                    continue
                dims = slot.dims()
                if not is_static(dims):
                    raise NoEmitter(f"output {name}: its dims at run time are not given "
                                    f"by the emitter")
                sizes.append(f"{slot.identifier}.resize({{{', '.join(map(str, dims))}}});")
        opdef = registry.find(op.type)
        # outputs take the LoD the op shares (a LoD-aware kernel's emitter that sets its
        # outputs' LoD says so; the executor's rule: an output without LoD of its own)
        if opdef is not None and opdef.share_lod is not None:
            source_slot, targets = opdef.share_lod
            sources = op.inputs.get(source_slot) or []
            source = slots.get(sources[0]) if sources else None
            for target_slot in targets:
                for name in op.outputs.get(target_slot) or []:
                    slot = slots.get(name)
                    if source is None or slot is None or source.kind != "dense" \
                            or slot.kind != "dense" or slot.fixed or name not in env.used \
                            or name in env.lod_set or name == sources[0]:
                        continue
                    shares.append(f"share_lod({source.identifier}, {slot.identifier});")
        for name in env.used:
            self.use(slots[name])
        function = (f"fluid_{self.target}_{op.type}_{index}" if block_idx == 0
                    else f"fluid_{self.target}_{op.type}_{block_idx}_{index}")
        lines = [f"  s.at = {c_string(f'{op.type} (block {block_idx}, op {index})')};"]
        for name in env.used:
            slot = slots[name]
            lines.append(f"  {slot.declaration()}& {slot.identifier} = "
                         f"{slot.home}.{slot.identifier};")
        lines += ["  " + line for line in env.prologue + sizes + body + shares]
        self.functions.append(Function(index if block_idx == 0 else (block_idx, index), op,
                                       function, params, lines))
        return function

    def compile_block(self, block_idx, slots, params):
        """The functions of every op of block ``block_idx`` in order; NoEmitter names the
        first op that has no native code (a sub-block cannot fall back)."""
        names = []
        for index, op in enumerate(self.program.block(block_idx).ops):
            if (block_idx, index) in self.dropped:
                continue
            try:
                names.append(self.emit(block_idx, index, op, slots, params))
            except NoEmitter as exc:
                raise NoEmitter(f"block {block_idx} op {index} {op.type}: {exc}") from None
        return names

    def runner(self, name, params, args, calls, head=(), record_resets=()):
        """A function running ``calls`` (function names) with ``args`` in order."""
        lines = ["  " + line for line in list(head) + list(record_resets)]
        lines += [f"  {call}({args});" for call in calls]
        self.functions.append(Function(None, None, name, params, lines))
        return name

    # --- the source ---------------------------------------------------------------------------
    def source(self, ops_compiled, fallbacks, block0_calls):
        header = HEADERS[self.target]
        lines = ["// Generated by fluid_nb's native code generator from a ProgramDesc: every",
                 f"// block, {ops_compiled} ops compiled. Sizes fixed by the program are "
                 "literals; the", "// others are read from the tensors' dims at run time, so "
                 "one build serves every", f"// batch and LoD. Kernels: {header}.",
                 f'#include "{header}"', "", "using namespace fluid_native;", "",
                 "// block 0's tensors, in the order of fluid_run's pointer array"]
        for slot in self.index:
            kind = {"array": "an array of ", "rank_table": "a rank table"}.get(slot.kind, "")
            what = "" if slot.kind == "rank_table" else f"{slot.ctype} {list(slot.shape)}"
            lines.append(f"//   v[{slot.index}] "
                         + escape(f"{slot.name}: {kind}{what} ({slot.role})"))
        for index, op_type, why in fallbacks:
            lines.append(comment(f"not compiled: op {index} {op_type} ({why})"))
        lines.append("")
        for record in self.record_order:
            lines.append(f"struct {record} {{")
            members = [(slot.declaration(), slot.identifier, slot.kind != "rank_table")
                       for slot in self.records[record]]
            lines += [f"  {kind} {name};" for kind, name, _ in members]
            lines += _drop_shared(members)
            lines += ["};", ""]
        members = [(slot.declaration(), slot.identifier, slot.kind != "rank_table")
                   for slot in self.records["State"]]
        members += [(record, self.temp_members[record], True)
                    for record in self.record_order if record in self.temp_members]
        lines += ["struct State {", "  void** v = nullptr;", '  const char* at = "";',
                  "  std::string error;"]
        lines += [f"  {kind} {name};" for kind, name, _ in members]
        lines += _drop_shared(members)
        lines += ["};", ""]
        for function in self.functions:
            if function.op is not None:
                where = (f"op {function.key}" if isinstance(function.key, int)
                         else f"block {function.key[0]} op {function.key[1]}")
                lines.append(comment(f"{where}: {_describe(function.op)}"))
            lines.append(f"static void {function.name}({function.params}) {{")
            lines += function.lines
            lines += ["}", ""]
        lines += self._entry(block0_calls)
        return "\n".join(lines) + "\n"

    def _entry(self, calls):
        binds, resets, fetches = [], [], []
        for slot in self.records["State"]:
            target = f"s.{slot.identifier}"
            if slot.kind == "dense" and slot.role == "feed":
                binds.append(f"feed({target}, *static_cast<const Exchange*>(v[{slot.index}]));")
            elif slot.kind == "dense" and slot.role == "persistable":
                dims = ", ".join(str(d) for d in slot.shape)
                binds.append(f"{target}.view(static_cast<{slot.ctype}*>(v[{slot.index}]), "
                             f"{{{dims}}});")
            elif slot.kind == "dense" and slot.index >= 0:
                fetches.append(f"if (v[{slot.index}]) fetch({target}, "
                               f"*static_cast<Exchange*>(v[{slot.index}]));")
            if slot.kind in ("array", "rank_table"):
                resets.append(f"{target}.{'reset' if slot.kind == 'array' else 'clear'}();")
                fetches.append(f"if (v[{slot.index}]) fetch({target}, "
                               f"*static_cast<ArrayExchange*>(v[{slot.index}]));")
            elif slot.kind == "step_scopes":
                resets.append(f"{target}.count = 0;")
        # the last run's values let go of the buffers they share, so that this run's
        # writes find them unshared (and write in place)
        body = (["s.v = v;", "s.drop_shared();"] + binds + resets
                + [f"{call}(s);" for call in calls] + fetches)
        return (['extern "C" void* fluid_create() { return new State(); }', "",
                 'extern "C" void fluid_destroy(void* state) {',
                 "  delete static_cast<State*>(state);", "}",
                 "", "// the message of the last failed run",
                 'extern "C" const char* fluid_error(void* state) {',
                 "  return static_cast<State*>(state)->error.c_str();", "}", "",
                 "// 0, or the ErrorCode of a failure (fluid_error says what and where)",
                 'extern "C" int fluid_run(void* state, void** v) {',
                 "  State& s = *static_cast<State*>(state);", "  try {"]
                + ["    " + line for line in body]
                + ["  } catch (const Error& e) {",
                   '    s.error = std::string(s.at) + ": " + e.message;',
                   "    return e.code;",
                   "  } catch (const std::bad_alloc&) {",
                   '    s.error = std::string(s.at) + ": out of memory";',
                   "    return 4;", "  }", "  return 0;", "}"])


def _drop_shared(members):
    """A record's drop_shared(): each of its values lets go of the buffers it shares."""
    calls = [f"    {name}.drop_shared();" for _, name, shares in members if shares]
    return ["  void drop_shared() {"] + calls + ["  }"]


def _describe(op):
    ins = ", ".join(f"{slot}={'/'.join(args)}" for slot, args in op.inputs.items() if args)
    outs = ", ".join(f"{slot}={'/'.join(args)}" for slot, args in op.outputs.items() if args)
    return f"{op.type}({ins}) -> {outs}"
