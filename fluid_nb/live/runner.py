"""Running one appended op at once, against the live session's scope.

The executor's binder is reused for a single op: ``exec.binding.bind_op`` resolves the op's
definition and kernel and binds its arguments to the scope's holders. An op's first run calls
the executor's plain or general step with its holders and keeps nothing (most live ops run
once; a first run is one C call, ``steps.first_run``, over a plan made once per op type,
unless it hands the op back to the Python steps); an op that runs again (re-feeding,
``live_step``) is bound and its step cached, so each later run costs one Python call plus
its kernel. A failure becomes the
executor's typed error naming the op (``exec.run_loop.op_error``).
Every variable of a live program, temporaries included, lives in the session scope, so
values stay visible after the op ran.
"""
from functools import partial
from time import perf_counter

from ..errors import PreconditionNotMet
from ..exec.binding import (KernelContext, bind_op, once_step, prepare_op,
                             shared_lod_outputs, takes_grad_lod)
from ..exec.feed_fetch import feed_tensor
from ..exec.scope import ScopeVariable
from ..exec.steps import drop_unreachable, first_run, plain_step
from ..exec.run_loop import op_error, output_values
from ..framework.attrs import AttrType
from ..framework.program import EMPTY_VAR_NAME
from ..memory import arena as _arena
from ..memory.places import host_arena
from ..ops import registry
from ..tensor.dtypes import VarType

#: the most input or output slots ``steps.first_run`` takes (its arguments on the C stack)
FIRST_RUN_SLOTS = 8


class OpRunner:
    """Runs ops over one scope: an op's first run directly, later runs through the step
    it then binds and caches."""

    def __init__(self, scope, place, executor):
        self.scope = scope
        self.place = place
        self.executor = executor
        self.steps = {}  # op -> (its bound step, a no-argument callable; the kernel bound)
        self._by_type = {}  # op type -> (kernel, simple binding or None): see _resolved
        #: op type -> the plan of a formula op's first run (``steps.first_run``), or False
        #: for other types: see _first_plan
        self._first_plans = {}
        #: first runs find holders in the scope's own dict: a session's scope has no parent
        self._root_scope = scope.parent is None
        #: op type -> what :func:`_recomputable` says of it
        self._recompute_kinds = {}
        self.last_run = {}  # op -> seconds its kernel took the last time it ran (views show it)
        self.on_host = place.device == "cpu"
        #: output name -> op for values :meth:`drop_unreachable` let go: the op computes it
        #: again when it is next read
        self.dropped = {}
        #: output name -> the order it was let go in (apart from ``dropped``: a pair per
        #: value would be one more record per op for the cyclic collector to walk)
        self._dropped_order = {}
        self._dropped_count = 0

    def clear(self):
        self.steps.clear()
        self.last_run.clear()
        self.dropped.clear()
        self._dropped_order.clear()
        self._first_plans.clear()  # (each context points at an op of its type)

    def drop_unreachable(self, ops, block):
        """Let go of the values of ``ops``' outputs (ops of ``block`` that ran, in program
        order) that nothing can reach and that can be computed again: the outputs of an op
        that is a function of its inputs (see :func:`_recomputable`) whose inputs are
        tensors, each output a tensor that is no data, no parameter and not persistable,
        not among the op's inputs, written by no later op of ``ops``, and whose Variable
        nobody but the block holds (the user's names, a view, the notebook's output history
        all hold theirs). An op lets go of all its outputs or none. Each is computed again,
        from the values it needs, when it is next read. Returns the ops whose outputs are
        still reachable, to be looked at again later. Every bound step goes (a step holds
        its inputs' holders: one of a dropped value would keep it, and a rerun would read
        it stale); a rerun binds its ops again."""
        self.steps.clear()
        first = self._dropped_count + 1  # (the order a value is let go in: program order)
        self._dropped_count += len(ops)
        # (the walk is C: a live loop looks at every op it appends once)
        return drop_unreachable(ops, block.vars, self.scope.vars, self._recompute_kinds,
                                _recompute_kind, VarType.LOD_TENSOR, self.dropped,
                                self._dropped_order, first)

    def compute_dropped(self, name):
        """Compute the dropped value ``name`` again, with the dropped values it needs first
        (in program order); returns its scope holder."""
        dropped, dropped_order = self.dropped, self._dropped_order
        values = self.scope.vars
        needed, wanted = {}, [name]
        while wanted:
            wanted_name = wanted.pop()
            op = dropped.get(wanted_name)
            order = dropped_order.get(wanted_name)
            if op is None or order in needed:
                continue
            needed[order] = op
            # (a name written again since it was let go holds its new value: not computed)
            wanted.extend(n for args in op.inputs.values() for n in args
                          if n in dropped and n not in values)
        for order in sorted(needed):
            op = needed[order]
            for names in op.outputs.values():
                for out in names:
                    dropped.pop(out, None)
                    dropped_order.pop(out, None)
            self.steps.pop(op, None)
            self.run(op)
        return self.scope.vars.get(name) or self.scope.var(name)

    def forget(self, keep):
        """Drop cached steps of ops not in ``keep`` (a set of ops)."""
        self.steps = {op: entry for op, entry in self.steps.items() if op in keep}
        self.last_run = {op: t for op, t in self.last_run.items() if op in keep}
        self.dropped = {name: op for name, op in self.dropped.items() if op in keep}
        self._dropped_order = {name: self._dropped_order[name] for name in self.dropped}
        self._first_plans = {op_type: plan for op_type, plan in self._first_plans.items()
                             if not plan or plan[4].op in keep}

    def bound_kernel(self, op):
        """The kernel this runner bound for ``op``, or None when the op has not run here."""
        entry = self.steps.get(op)
        if entry is not None:
            return entry[1]
        known = self._by_type.get(op.type) if op in self.last_run else None
        # an op's first run keeps no step: its type's kernel is the one
        return known[0] if known is not None else None

    def run(self, op, first_run_tried=False):
        """Run ``op`` once. An op that has not run here is called with its holders as
        arguments, nothing kept (most live ops run once, and a sweep lets every kept step
        go); one that has run before is bound, and its step kept for the runs after.
        ``first_run_tried``: ``steps.first_run`` said None to this op already."""
        entry = self.steps.get(op)
        if entry is not None:
            step, args = entry[0], ()
        elif op in self.last_run:
            step, args = self._build(op)[0], ()
        else:
            plan = self._first_plans.get(op.type)
            if plan is None:
                plan = self._first_plan(op)
            if plan and self._root_scope and not first_run_tried:
                arena = host_arena() if self.on_host else None
                if arena is None or not arena.arena.recording:
                    try:
                        took = first_run(op, plan, self.scope.vars, _set_handler,
                                         None if arena is None else arena.capsule)
                    except Exception as exc:  # a FluidError, or a kernel's own failure
                        raise op_error(exc, op) from exc
                    if took is not None:
                        self.last_run[op] = took
                        return
            args = self._simple_args(op)
            if args is not None:
                step = plain_step
            else:
                step, args = self._once(op) or self._build(op)[0], ()
        arena = host_arena() if self.on_host else None
        try:
            if arena is None:
                start = perf_counter()
                step(*args)
                self.last_run[op] = perf_counter() - start
            elif not arena.arena.recording:  # the common case, inline: every live op
                previous = _set_handler(arena.capsule)
                try:
                    start = perf_counter()
                    step(*args)
                    self.last_run[op] = perf_counter() - start
                finally:
                    _set_handler(previous)
            else:
                self._run_recorded(op, partial(step, *args) if args else step, arena)
        except Exception as exc:  # a FluidError, or a kernel's own failure
            raise op_error(exc, op) from exc

    def _run_recorded(self, op, step, arena):
        """Run ``step`` with NumPy allocating from the host arena and its event log on (a
        live session turns it on while a memory view follows it): the blocks are tagged
        with the op and the variables they hold."""
        previous = _set_handler(arena.capsule)
        recorder, executor = arena.recorder, self.executor
        executor.watch = recorder  # a sub-block the op runs tags its own ops
        recorder.before_new(op)
        try:
            start = perf_counter()
            step()
            self.last_run[op] = perf_counter() - start
        finally:
            recorder.after(op, output_values(op, self.scope))
            executor.watch = None
            _set_handler(previous)

    def _resolved(self, op_type):
        """``(kernel, simple binding or None)`` of a registered op type on this runner's
        place, worked out once per type; ``(None, None)`` for a type with no definition or
        kernel."""
        known = self._by_type.get(op_type)
        if known is None:
            opdef = registry.find(op_type)
            kernel = opdef.kernel_for(self.place.device) if opdef is not None else None
            if kernel is None:
                return None, None
            known = self._by_type[op_type] = (kernel, _simple_binding(opdef))
        return known

    def _first_plan(self, op):
        """The plan of ``steps.first_run`` for ``op``'s type, worked out once per type:
        ``(kernel, input slots, output slot, index of the LoD source or None, context,
        shared)`` for an op with a plain binding (one output, one or two inputs); the same
        for an op with a plain kernel, a LoD-aware one's over its required inputs
        (``first_run`` takes an op only when it has no other input and its inputs hold
        LoDTensors); on the host, the general plan (:meth:`_general_plan`) for an op of any
        other shape; False for an op without a kernel, or one the general plan does not
        take. A formula op's kernel, or a plain one, is a pure function of its inputs,
        attributes and array module: its first runs share the plan's context (``shared``),
        pointed at each op in turn. Any other kernel may keep something in its context
        (``ctx.cache``): each of its first runs copies the plan's for its op."""
        fn, binding = self._by_type.get(op.type) or self._resolved(op.type)
        opdef = None if fn is None else registry.find(op.type)
        plain = None if opdef is None else opdef.plain_kernel
        plan = False
        if binding is not None:
            in_slots, out_slot, src_index, wanted, formula = binding
            plan = (plain or fn, in_slots, out_slot, src_index,
                    KernelContext(op, self.place, self.executor, self.scope, wanted),
                    formula or plain is not None)
        elif plain is not None:  # a LoD-aware op's dense case: Out keeps X's LoD
            plan = (plain, tuple(opdef._required_inputs), "Out", 0,
                    KernelContext(op, self.place, self.executor, self.scope,
                                  frozenset(("Out",))), True)
        elif fn is not None and self.on_host:
            plan = self._general_plan(op, opdef, fn)
        self._first_plans[op.type] = plan
        return plan

    def _general_plan(self, op, opdef, fn):
        """``steps.first_run``'s general plan for ``op``'s type: ``(kernel, (input slot,
        duplicable) pairs, (output slot, duplicable) pairs, per output the index of its LoD
        source among the inputs or None, context, whether the kernel takes runtime
        values)``, as ``binding.once_step`` binds the op (a duplicable output, ``split``'s,
        stored item by item); False for an op of more slots than the C call takes, or
        gradients taking their inputs' LoD."""
        if takes_grad_lod(opdef) or \
                len(opdef.inputs) > FIRST_RUN_SLOTS or len(opdef.outputs) > FIRST_RUN_SLOTS:
            return False
        in_slots = tuple((slot.name, slot.duplicable) for slot in opdef.inputs)
        out_slots = tuple((slot.name, slot.duplicable) for slot in opdef.outputs)
        source = None
        if opdef.share_lod is not None:
            names = [name for name, _ in in_slots]
            if opdef.share_lod[0] not in names:
                return False
            source = names.index(opdef.share_lod[0])
        shared = set(shared_lod_outputs(opdef))
        sources = tuple(source if index in shared else None for index in range(len(out_slots)))
        ctx = KernelContext(op, self.place, self.executor, self.scope,
                            frozenset(slot.name for slot in opdef.outputs))
        return (fn, in_slots, out_slots, sources, ctx, opdef.lod_aware)

    def _once(self, op):
        """The step of ``op``'s first run when the plain one does not fit (several
        outputs, a LoD-aware kernel, an absent optional input): the executor's general
        step, nothing kept; None where the binder decides (no definition or kernel, a
        device place)."""
        known = self._by_type.get(op.type)
        if known is None or not self.on_host:
            return None
        self._input_holders(op, [name for names in op.inputs.values() for name in names])
        return once_step(op, registry.find(op.type), known[0], self._holder, self.place,
                         self.executor, self.scope)

    def _build(self, op):
        args = self._simple_args(op)
        if args is not None:
            # a partial of a module-level step, not a closure: a kept step holds its values
            # alive, and a partial is two objects for the collector where a closure is eight
            step, kernel = partial(plain_step, *args), args[1]
        else:
            prepare_op(op, self.place.device)  # an unknown op type fails before its inputs
            self._input_holders(op, [name for names in op.inputs.values() for name in names])
            step, prepared = bind_op(op, self.scope, self.executor, self._holder)
            kernel = prepared.kernel
        entry = self.steps[op] = (step, kernel)
        return entry

    def _holder(self, name):
        """The scope holder of ``name``, created in the session scope when missing."""
        found = self.scope.find_var(name)
        return found if found is not None else self.scope.var(name)

    def _input_holders(self, op, names):
        """The holders of the inputs ``names``, each given a value first when it has none."""
        find = self.scope.find_var
        holders = []
        for name in names:
            found = find(name)
            if found is None or found.value is None:
                found = self._provide_input(op, name)
            holders.append(found)
        return holders

    def _simple_args(self, op):
        """The arguments of ``steps.plain_step`` (the executor's plain one-output step) for
        ``op``: its output's holder, the kernel and a context of its own, the holder of its
        LoD source (or None) and its inputs' holders, bound with less work per op than
        ``bind_op`` does (an op appended in live mode usually runs once, so binding is part
        of its cost). None when the op needs the general binder."""
        fn, binding = self._by_type.get(op.type) or self._resolved(op.type)
        if binding is None:
            return None
        in_slots, out_slot, src_index, wanted, _ = binding
        try:
            out_name = op.outputs[out_slot][0]
        except (KeyError, IndexError):
            return None
        if out_name == EMPTY_VAR_NAME:
            return None
        scope = self.scope
        # a session's own scope (no parent) answers from its dict: no walk up, no call
        find = scope.vars.get if scope.parent is None else scope.find_var
        inputs = op.inputs
        ins = []
        for slot in in_slots:
            try:
                name = inputs[slot][0]
            except (KeyError, IndexError):
                return None  # an optional input left out: the general binder handles it
            holder = find(name)
            if holder is None or holder.value is None:
                holder = self._provide_input(op, name)
            ins += holder,
        out = find(out_name)
        if out is None:  # (a live op's new output: made here, as Scope.var would)
            out = scope.vars[out_name] = ScopeVariable(out_name)
        ctx = KernelContext(op, self.place, self.executor, scope, wanted)
        return (out, fn, ctx, None if src_index is None else ins[src_index], *ins)

    def _provide_input(self, op, name):
        """An input without a value: feed a data variable's sample value, or say what to do.
        Returns the input's scope holder (created when missing)."""
        if name in self.dropped:
            return self.compute_dropped(name)
        var = op.block._find_var_recursive(name)
        sample = getattr(var, "_sample_value", None) if var is not None else None
        if sample is not None:
            holder = self.scope.var(name)
            holder.value = feed_tensor(name, var, sample, self.place)
            return holder
        if var is not None and var.is_data:
            raise PreconditionNotMet(
                f"{op.type}: input '{name}' expected a value in live mode, but the data "
                f"variable has none; give it one with fluid.layers.data(..., value=arr) "
                f"or fluid.feed({name!r}, arr)")
        return self._holder(name)


#: traits of ops whose outputs are not a function of their inputs alone, or are no tensors
_NOT_RECOMPUTABLE = frozenset({"stateful", "has_sub_block", "runtime_outputs", "host_output",
                               "control_outputs"})


def _recomputable(opdef):
    """Whether a live session may let go of an op's outputs and run the op again for them:
    a formula op's output slot (a pure function of its tensor inputs); True for another op
    that is a function of its inputs (no state, no sub-block, no in-place update, no
    outputs decided at run time), let go of only when its variables are all dense tensors;
    False otherwise."""
    if opdef is None:
        return False
    if opdef.formula is not None:
        return opdef.formula.output
    return not (opdef.traits & _NOT_RECOMPUTABLE or opdef.in_place or any(
        spec.type in (AttrType.BLOCK, AttrType.BLOCKS) for spec in opdef.attrs.values()))


def _recompute_kind(op_type):
    return _recomputable(registry.find(op_type))


def _set_handler(capsule):
    """NumPy's allocator switched to ``capsule``: the C module's function itself once it is
    loaded (a live op switches twice; the Python wrapper would cost two calls more)."""
    global _set_handler
    _set_handler = _arena._module().set_handler
    return _set_handler(capsule)


def _simple_binding(opdef):
    """For ops with one or two plain input slots and one plain output (run by
    ``steps.plain_step``): ``(input slots, output slot, index of the LoD source among the
    inputs or None, wanted outputs, whether the op is a formula op)``; None for ops that
    need the general binder (as the executor's binder says: a kernel that returns runtime
    values, such as a detection op's LoDTensor with its own LoD, is stored as it is)."""
    binding = None
    in_slots = tuple(s.name for s in opdef.inputs)
    if not opdef.lod_aware and "runtime_outputs" not in opdef.traits \
            and len(opdef.outputs) == 1 and not opdef.outputs[0].duplicable \
            and not any(s.duplicable for s in opdef.inputs) and 0 < len(in_slots) <= 2:
        out = opdef.outputs[0].name
        src = None
        if opdef.share_lod is not None and out in opdef.share_lod[1]:
            src = opdef.share_lod[0]
        if src is None or src in in_slots:
            binding = (in_slots, out, None if src is None else in_slots.index(src),
                       frozenset((out,)), opdef.formula is not None)
    return binding
