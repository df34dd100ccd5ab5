"""The loop model: a ``while`` op's run, iteration by iteration (and a DynamicRNN's picture).

Why a trace is recorded during a run: the ``while`` kernel runs each iteration in a step
scope (kept in ``StepScopes`` for ``while_grad`` unless ``is_test``), but those scopes hang
under the run's local scope, which ``Executor.run`` drops when the run ends, and the
executor frees every temporary right after its last use (the condition, the tensor arrays,
the rank table). So after ``Executor.run`` nothing of the loop is left to inspect, and
:func:`trace_while` instead runs the program once itself and watches the loop as it goes::

    trace = trace_while(exe, main, feed={"x": x_lod}, scope=scope)
    [it["condition"] for it in trace["iterations"]]          # [True, ..., True, False]
    trace["dynamic_rnn"]["batch_sizes"]                      # [4, 4, 4, 4, 4, 3, 3, 2, 1, 1]

It is one real run of ``program`` on ``scope`` (a training program updates its parameters,
as ``exe.run`` would), with the executor's place; the program is not changed. How it
watches, using only the executor's public seams: a recording ``Executor`` (its plan is
built for this run only, never cached on the program) wraps the kernels of the loop's body
(``Executor.prepare`` is how the ``while`` kernel gets the body) to learn the scope each
iteration runs in, and reads the executor's per-op trace hook (``Executor.trace``) to see
each op finish: after the body's last op the iteration's values are read and summarised at
once (values are never changed in place, so nothing is copied).

The model (``"format": "fluid-nb.loop"``, ``"version": 1``), JSON-serialisable::

    {"op": {"id", "type", "block", "index", "sub_block", "condition", "is_test",
            "inputs", "outputs"},
     "body": {"block", "ops": [types], "arrays": [names of tensor arrays it writes]},
     "initial_condition": bool,
     "invocations": [{"index", "iterations", "seconds"}],
     "iterations": [{"index", "invocation", "step", "condition",
                     "inputs": [value], "values": [value], "values_truncated",
                     "outputs": [value], "writes": [{"array", "slot", ...value}],
                     "ops", "seconds"}],
     "iteration_count": n, "truncated": bool,
     "dynamic_rnn": None | {...}, "caps": {...}}

``value`` is :func:`fluid_nb.viz.scope_model.describe_value` plus ``name``. Per iteration:
``inputs`` are the loop's non-persistable ``X`` variables as the step found them (what
``while_grad`` snapshots); ``values`` the variables of the step's own scope after it ran;
``outputs`` the loop's ``Out`` tensors after it ran (the counter, the condition); ``writes``
the tensor-array slots the step wrote (new or replaced); ``condition`` the loop condition
after the step (the last iteration's is False). A loop nested in another loop's body runs
once per outer iteration: each run is an ``invocation`` and ``step`` counts within it.

Invariants: ``len(iterations) == min(iteration_count, max_iterations)``; within an
invocation ``step`` runs 0, 1, ...; every iteration's ``condition`` is True except the
last of each invocation; ``initial_condition`` is False exactly when the first invocation
ran no iteration.

The ``dynamic_rnn`` section (when the loop is a DynamicRNN: a ``lod_rank_table`` feeds the
``lod_tensor_to_array`` whose array the body reads) describes its first invocation::

    {"rank_table": {"name", "level", "items": [{"rank", "index", "length"}]},
     "lengths": [input order], "sorted_lengths": [rank order],
     "batch_sizes": [sequences longer than t, for each step t],
     "steps": [{"step", "batch_size", "sequences": [input indices, rank order],
                "input_rows": {array name: rows at this step},
                "memories": [{"name", "source", "kind": "memory" | "static_input",
                              "before": shape, "after": shape, "before_lod", "after_lod"}]}],
     "step_inputs": [{"name", "array", "rows_per_step", "value": lod model of the input}],
     "outputs": [{"name", "array", "steps", "order": [{"sequence", "rank", "length", "rows"}],
                  "value": lod model of the output}],
     "restore_order": [rank of input sequence i, for each i]}

``batch_sizes`` come from the rank table and equal each step's shrunk memory rows and input
rows (the tests pin the design documents' batch); ``order`` says where each input sequence
sits in the output (back in input order) and from which rank it came.

Caps: at most ``max_iterations`` iterations are described (default 64; the rest are
counted), ``max_values`` variables per step scope (default 32), ``max_items`` numbers per
preview and slots per array (default 8), and the lod models of RNN inputs and outputs show
``max_rows`` rows (default 16). The design documents' DynamicRNN (10 steps, about 20
variables a step) gives about 5 KB per iteration and 70 KB in all.
"""
import copy

from ..errors import InvalidArgument, InvalidType, NotFound, expected
from ..exec.executor import Executor, PreparedOp
from ..exec.feed_fetch import fetch_names as _fetch_names
from ..tensor.lod_rank_table import LoDRankTable
from ..tensor.place import CPUPlace
from ..exec.scope import Scope, global_scope
from ..tensor.tensor import LoDTensor, LoDTensorArray
from ..tensor.dtypes import VarType
from ..framework.loops import dynamic_rnn_layout as _framework_dynamic_rnn_layout
from ..framework.program import Operator, Program, default_main_program
from .lod_model import lod_model, row_starts
from .scope_model import describe_value

__all__ = ["trace_while", "find_while", "dynamic_rnn_layout"]

FORMAT = "fluid-nb.loop"
VERSION = 1


# --- which loop ---------------------------------------------------------------------------------
def find_while(program, while_op=None):
    """The ``while`` op of ``program`` to trace: ``while_op`` itself (an Operator of the
    program), the ``while_op``-th while op (an int, counting blocks in order), or the first
    one (None)."""
    loops = [op for block in program.blocks for op in block.ops if op.type == "while"]
    if isinstance(while_op, Operator):
        if not any(op is while_op for op in loops):
            raise InvalidArgument(expected("trace_while", "while_op",
                                           "a while op of the traced program",
                                           f"op '{while_op.type}' of another program or block"))
        return while_op
    if not loops:
        raise NotFound(expected("trace_while", "program", "a while op", "none in any block"))
    if while_op is None:
        return loops[0]
    if isinstance(while_op, int) and not isinstance(while_op, bool):
        if not 0 <= while_op < len(loops):
            raise InvalidArgument(expected("trace_while", "while_op",
                                           f"an index in [0, {len(loops)})", while_op))
        return loops[while_op]
    raise InvalidType(expected("trace_while", "while_op", "an Operator, an int or None",
                                   type(while_op).__name__))


def dynamic_rnn_layout(while_op):
    """The DynamicRNN around ``while_op`` as variable names, or None when it is no
    DynamicRNN (see :func:`fluid_nb.framework.loops.dynamic_rnn_layout`, which decides):
    ``{"table": rank table, "inputs": {array: LoD tensor split into it}, "shrinks": {shrunk
    value: (source, "memory" | "static_input")}, "outputs": {LoD tensor: array}}``."""
    layout = _framework_dynamic_rnn_layout(while_op)
    if layout is None:
        return None
    return {"table": layout.rank_table, "inputs": dict(layout.step_inputs),
            "shrinks": dict(layout.shrinks), "outputs": dict(layout.outputs)}


# --- the entry point ----------------------------------------------------------------------------
def trace_while(executor=None, program=None, feed=None, fetch_list=None, scope=None,
                while_op=None, max_iterations=64, max_values=32, max_items=8, max_rows=16):
    """Run ``program`` once (as ``executor.run(program, feed, fetch_list, scope)`` would) and
    return the per-iteration model of its ``while`` op (see the module docstring).

    Looking changes nothing: every persistable variable of ``scope`` (parameters, optimizer
    accumulators, counters) holds the same value afterwards as before, even when the program
    trains (values are never written in place, so putting the old ones back is enough).

    ``executor`` gives the place (CPU when None); ``while_op`` picks the loop (see
    :func:`find_while`). Example::

        trace = trace_while(exe, main, feed={"x": x}, scope=scope)
        for it in trace["iterations"]:
            print(it["step"], it["condition"], [w["slot"] for w in it["writes"]])
    """
    program = default_main_program() if program is None else program
    program = getattr(program, "_program", program)  # CompiledProgram
    if not isinstance(program, Program):
        raise InvalidType(expected("trace_while", "program", "a Program",
                                       type(program).__name__))
    feed = {} if feed is None else feed
    if not isinstance(feed, dict):
        raise InvalidType(expected("trace_while", "feed", "a dict of name -> value",
                                       type(feed).__name__))
    scope = global_scope() if scope is None else scope
    if not isinstance(scope, Scope):
        raise InvalidType(expected("trace_while", "scope", "a Scope", type(scope).__name__))
    for cap, number in (("max_iterations", max_iterations), ("max_values", max_values),
                        ("max_items", max_items), ("max_rows", max_rows)):
        if not isinstance(number, int) or number < 0:
            raise InvalidArgument(expected("trace_while", cap, "an int >= 0", repr(number)))
    loop = find_while(program, while_op)
    place = getattr(executor, "place", None) or CPUPlace()
    caps = {"max_iterations": max_iterations, "max_values": max_values,
            "max_items": max_items, "max_rows": max_rows}
    recorder = _LoopRecorder(place, loop, caps)
    persistables = _persistable_values(program, scope)
    try:
        recorder.run_once(program, feed, _fetch_names(fetch_list), scope)
    finally:
        _restore(scope, persistables)
    return recorder.model()


def _persistable_values(program, scope):
    """name -> (holder, value) for the program's persistable variables (holder None: the
    scope has none yet)."""
    values = {}
    for var in program.list_vars():
        if var.persistable:
            holder = scope.find_var(var.name)
            values[var.name] = (holder, holder.value if holder is not None else None)
    return values


def _restore(scope, values):
    for name, (holder, value) in values.items():
        if holder is not None:
            holder.value = value
        elif name in scope.vars:  # made by the traced run
            scope.erase([name])


# --- watching a run -----------------------------------------------------------------------------
class _OpEvents(list):
    """The executor's per-op trace (``(op, seconds)`` appended after each op runs), turned
    into calls; nothing is stored."""

    __slots__ = ("on_op",)

    def append(self, event):
        self.on_op(*event)


class _LoopRecorder(Executor):
    """An Executor that watches one ``while`` op (of the program it is given, identified by
    its body's block index, which ``Executor.run``'s program copy keeps)."""

    host_steps = False  # every op of the loop goes through its (watched) kernel

    def __init__(self, place, loop, caps):
        super().__init__(place)
        self.loop = loop
        self.body_idx = loop.block_attr("sub_block").idx
        self.parent_idx = loop.block.idx
        self.caps = caps
        self.cond_name = loop.input("Condition")[0]
        body = loop.block_attr("sub_block")
        self.last_body_op = len(body.ops) - 1
        self.array_names = _arrays_written(body)
        persistable = {name for name in loop.input("X")
                       if (var := loop.block._find_var_recursive(name)) is not None
                       and var.persistable}
        self.input_names = [n for n in loop.input("X") if n not in persistable]
        self.output_names = [n for n in loop.output("Out") if n not in self.array_names]
        self.rnn = dynamic_rnn_layout(loop)
        self.trace = _OpEvents()
        self.trace.on_op = self._after_op
        self.scopes = {}  # block idx -> the scope its ops ran in last
        self._wrapped = {}  # id(PreparedBlock) -> (it, its kernel-wrapped copy)
        self.current = None  # the iteration being recorded
        self.iterations, self.invocations = [], []
        self.iteration_count = 0
        self.step = 0  # within the current invocation
        self.captured = {"table": None, "inputs": {}, "outputs": {}, "shrinks": {}}

    # --- running --------------------------------------------------------------------------
    def run_once(self, program, feed, fetch_names, scope):
        """``Executor.run`` with the program's cached plans set aside for the run: a plan
        another executor built would run without this recorder, and a plan built here must
        not serve later runs."""
        keep = self._keep_alive(fetch_names)
        owner = global_scope() if scope is None else scope
        saved, owned = dict(program._plans), dict(owner.plans)
        program._plans.clear()
        try:
            results = Executor.run(self, program, feed, list(fetch_names + keep), scope=scope,
                                   return_numpy=False)
        finally:
            program._plans.clear()
            program._plans.update(saved)
            owner.plans.clear()
            owner.plans.update(owned)
        return results[:len(fetch_names)]

    def _build_plan(self, *args):
        plan = super()._build_plan(*args)
        self.scopes[0] = plan.local  # where block 0's temporaries live during the run
        return plan

    def _keep_alive(self, fetch_names):
        """Names to fetch as well, so that the executor does not free them before they are
        read: a DynamicRNN's input and output tensors and arrays die at the very op that
        reads them otherwise. (Sub-blocks free nothing early, so a loop nested in another
        loop needs none.)"""
        if self.rnn is None or self.parent_idx != 0:
            return ()
        names = list(self.rnn["inputs"]) + list(self.rnn["inputs"].values()) \
            + list(self.rnn["outputs"]) + list(self.rnn["outputs"].values())
        return tuple(n for n in dict.fromkeys(names) if n not in fetch_names)

    def prepare(self, block):
        prepared = super().prepare(block)
        if block.idx not in (self.body_idx, self.parent_idx):
            return prepared
        entry = self._wrapped.get(id(prepared))
        if entry is None or entry[0] is not prepared:
            twin = copy.copy(prepared)
            twin.ops = [PreparedOp(p.op, p.opdef, self._watch(p.kernel, block.idx), p.index)
                        for p in prepared.ops]
            entry = self._wrapped[id(prepared)] = (prepared, twin)
        return entry[1]

    def _watch(self, kernel, block_idx):
        """``kernel``, first noting the scope it runs in (the step's scope for the body)."""
        if kernel is None:
            return None

        def watched(ctx, *args):
            self.scopes[block_idx] = ctx.scope
            if block_idx == self.body_idx and self.current is None:
                self._begin_iteration(ctx.scope)
            return kernel(ctx, *args)
        return watched

    def _after_op(self, op, seconds):
        idx = op.block.idx
        if idx == self.body_idx:
            current = self.current
            if current is None:
                return
            current["ops"] += 1
            current["seconds"] += seconds
            if op.type == "shrink_rnn_memory" and self.rnn is not None \
                    and current["index"] < self.caps["max_iterations"]:
                self._shrunk(op, self.scopes[idx])
            if op is op.block.ops[self.last_body_op]:
                self._end_iteration(self.scopes[idx])
        elif idx == self.parent_idx:
            if op.type == "while" and op.attrs.get("sub_block") == self.body_idx:
                self._end_invocation(seconds)
            elif self.rnn is not None:
                self._rnn_op(op, self.scopes.get(idx))

    # --- iterations -----------------------------------------------------------------------
    def _begin_iteration(self, scope):
        detail = len(self.iterations) < self.caps["max_iterations"]
        self.current = {"index": self.iteration_count, "invocation": len(self.invocations),
                        "step": self.step, "condition": None,
                        "inputs": self._describe(scope, self.input_names) if detail else [],
                        "values": [], "values_truncated": False, "outputs": [], "writes": [],
                        "ops": 0, "seconds": 0.0}
        self.arrays_before = {name: _array_value(scope, name) for name in self.array_names} \
            if detail else {}

    def _end_iteration(self, scope):
        current, self.current = self.current, None
        current["condition"] = _condition(scope, self.cond_name)
        if len(self.iterations) < self.caps["max_iterations"]:
            names = sorted(scope.vars)
            cap = self.caps["max_values"]
            current["values"] = self._describe(scope, names[:cap], local=True)
            current["values_truncated"] = len(names) > cap
            current["outputs"] = self._describe(scope, self.output_names)
            current["writes"] = self._writes(scope)
            self.iterations.append(current)
        self.iteration_count += 1
        self.step += 1

    def _end_invocation(self, seconds):
        self.invocations.append({"index": len(self.invocations), "iterations": self.step,
                                 "seconds": seconds})
        self.step = 0

    def _describe(self, scope, names, local=False):
        items = []
        for name in names:
            holder = scope.vars.get(name) if local else scope.find_var(name)
            if holder is None:
                continue
            value = holder.value
            if isinstance(value, (LoDRankTable, Scope)) or (
                    isinstance(value, list) and value and isinstance(value[0], Scope)):
                continue  # shown elsewhere (rank table) or not a value of the step
            items.append(dict(name=name, **describe_value(value, self.caps["max_items"],
                                                          array_items=local)))
        return items

    def _writes(self, scope):
        writes = []
        for name in self.array_names:
            before, after = self.arrays_before.get(name) or [], _array_value(scope, name)
            for slot, tensor in enumerate(after or ()):
                if slot >= len(before) or tensor is not before[slot]:
                    writes.append(dict(array=name, slot=slot,
                                       **describe_value(tensor, self.caps["max_items"])))
        return writes

    # --- DynamicRNN -----------------------------------------------------------------------
    def _shrunk(self, op, scope):
        out = op.output("Out")[0]
        if out not in self.rnn["shrinks"]:
            return
        source, kind = self.rnn["shrinks"][out]
        before, after = _tensor_value(scope, source), _tensor_value(scope, out)
        self.captured["shrinks"].setdefault(self.current["index"], []).append({
            "name": out, "source": source, "kind": kind,
            "before": _shape(before), "after": _shape(after),
            "before_lod": before.lod() if before is not None else [],
            "after_lod": after.lod() if after is not None else []})

    def _rnn_op(self, op, scope):
        """Keep (references to) the values around the first invocation of the loop."""
        rnn, captured = self.rnn, self.captured
        if scope is None:
            return
        if op.type == "lod_rank_table" and op.output("Out") == [rnn["table"]] \
                and captured["table"] is None:
            captured["table"] = _value(scope, rnn["table"])
        elif op.type == "lod_tensor_to_array" and op.output("Out")[0] in rnn["inputs"] \
                and not self.invocations:
            array = op.output("Out")[0]
            captured["inputs"].setdefault(array, (_value(scope, op.input("X")[0]),
                                                  _value(scope, array)))
        elif op.type == "array_to_lod_tensor" and op.output("Out")[0] in rnn["outputs"] \
                and len(self.invocations) == 1:
            out = op.output("Out")[0]
            captured["outputs"].setdefault(out, (_value(scope, out),
                                                 _value(scope, op.input("X")[0])))

    # --- the model ------------------------------------------------------------------------
    def model(self):
        from .program_model import op_id
        loop = self.loop
        first = self.invocations[0]["iterations"] if self.invocations else 0
        return {
            "format": FORMAT, "version": VERSION,
            "op": {"id": op_id(loop), "type": loop.type, "block": loop.block.idx,
                   "index": next(k for k, op in enumerate(loop.block.ops) if op is loop),
                   "sub_block": self.body_idx, "condition": self.cond_name,
                   "is_test": bool(loop.attrs.get("is_test", False)),
                   "inputs": list(loop.input("X")), "outputs": list(loop.output("Out"))},
            "body": {"block": self.body_idx,
                     "ops": [op.type for op in loop.block_attr("sub_block").ops],
                     "arrays": list(self.array_names)},
            "initial_condition": first > 0,
            "invocations": self.invocations,
            "iterations": self.iterations,
            "iteration_count": self.iteration_count,
            "truncated": self.iteration_count > len(self.iterations),
            "dynamic_rnn": self._rnn_model() if self.rnn is not None else None,
            "caps": dict(self.caps),
        }

    def _rnn_model(self):
        table = self.captured["table"]
        if not isinstance(table, LoDRankTable):
            return None  # the loop never ran its rank table (an error stopped the run)
        caps = self.caps
        rank_of = {index: rank for rank, (index, _) in enumerate(table)}
        lengths = table.lengths_by_index()
        steps_run = self.invocations[0]["iterations"] if self.invocations else 0
        inputs = self.captured["inputs"]
        steps = []
        for t in range(min(steps_run, caps["max_iterations"])):
            batch = table.batch_size_at(t)
            steps.append({"step": t, "batch_size": batch,
                          "sequences": [index for index, _ in table[:batch]],
                          "input_rows": {name: _slot_rows(array, t)
                                         for name, (_, array) in inputs.items()},
                          "memories": self.captured["shrinks"].get(t, [])})
        max_len = table[0][1] if len(table) else 0
        return {
            "rank_table": {"name": self.rnn["table"], "level": table.level,
                           "items": [{"rank": r, "index": i, "length": n}
                                     for r, (i, n) in enumerate(table)]},
            "lengths": lengths,
            "sorted_lengths": [n for _, n in table],
            "batch_sizes": [table.batch_size_at(t) for t in range(max_len)],
            "steps": steps,
            "step_inputs": [
                {"name": self.rnn["inputs"][array], "array": array,
                 "rows_per_step": [_slot_rows(value, t) for t in range(len(value or ()))],
                 "value": _lod_model(x, caps)}
                for array, (x, value) in inputs.items()],
            "outputs": [self._rnn_output(name, out, array, table, rank_of)
                        for name, (out, array) in self.captured["outputs"].items()],
            "restore_order": [rank_of[i] for i in range(len(table))],
        }

    def _rnn_output(self, name, out, array, table, rank_of):
        order = []
        if isinstance(out, LoDTensor) and len(out._lod) > table.level:
            starts = row_starts(out.lod(), table.level)
            lengths = table.lengths_by_index()
            order = [{"sequence": i, "rank": rank_of[i], "length": lengths[i],
                      "rows": [starts[i], starts[i + 1]]} for i in range(len(table))]
        return {"name": name, "array": self.rnn["outputs"][name],
                "steps": len(array) if isinstance(array, list) else 0,
                "order": order, "value": _lod_model(out, self.caps)}


# --- small readers --------------------------------------------------------------------------------
def _arrays_written(block):
    names = []
    for op in block.ops:
        for name in op.output_arg_names:
            var = block._find_var_recursive(name)
            if var is not None and var.type == VarType.LOD_TENSOR_ARRAY and name not in names:
                names.append(name)
    return names


def _value(scope, name):
    holder = scope.find_var(name)
    return holder.value if holder is not None else None


def _array_value(scope, name):
    value = _value(scope, name)
    return list(value) if isinstance(value, list) else None


def _tensor_value(scope, name):
    value = _value(scope, name)
    return value if isinstance(value, LoDTensor) else None


def _condition(scope, name):
    value = _tensor_value(scope, name)
    if value is None or value.array is None:
        return None
    return bool(value.numpy().reshape(-1)[0])


def _shape(tensor):
    if tensor is None or tensor.array is None:
        return None
    return [int(d) for d in tensor.array.shape]


def _slot_rows(array, t):
    if not isinstance(array, LoDTensorArray) and not isinstance(array, list):
        return None
    if t >= len(array) or array[t].array is None:
        return None
    return int(array[t].array.shape[0])


def _lod_model(value, caps):
    if not isinstance(value, LoDTensor):
        return None
    return lod_model(value, max_rows=caps["max_rows"], max_values=caps["max_items"],
                     max_sequences=max(caps["max_rows"], 64))
