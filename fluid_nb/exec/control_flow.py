"""The kernels of the control-flow ops (defined in :mod:`fluid_nb.ops.control_flow`): they
run sub-blocks through the executor, so they live next to it and are attached to the op
definitions when this package is imported.

``while`` runs its sub-block (attribute ``sub_block``) over and over while ``Condition``
(a bool [1] tensor the body rewrites) holds. Each step runs in a fresh child scope: the
body's own variables live there, outer variables (``X`` read, ``Out`` written) are found
through the parent. Unless ``is_test``, the step scopes are kept in ``StepScopes`` for
``while_grad``, and, as Paddle does, each step scope keeps a snapshot of the ``X`` tensors
as they were when the step began (values here are never changed in place, so a snapshot is
a reference), so the backward of step t sees step t's inputs.

``while_grad`` runs the grad sub-block over the kept scopes in reverse. Before each step it
puts the current outer output gradients into the step scope (``Out@GRAD`` outside ->
``original_output_grad`` inside); after it, the gradient of each ``X`` is summed into the
outer ``X@GRAD``, except for a loop-carried variable (its ``X@GRAD`` is also an
``Out@GRAD``), whose gradient replaces the outer one: it is the gradient flowing into the
previous step.

``conditional_block`` runs its sub-block once in a child scope when ``Cond`` holds (the
first element of Cond with ``is_scalar_condition``; else: every Cond tensor non-empty);
``conditional_block_grad`` runs the grad sub-block in that scope, or, when the block did not
run, gives zero gradients.

The grad sub-block is built by ``backward.sub_block_backward``, the backward walker applied
to the forward sub-block with the parent's no-grad set.
"""
import numpy as np

from ..errors import InvalidArgument, expected
from ..framework import registry
from ..framework.program import grad_var_name
from ..ops.control_flow import grad_pairs
from ..tensor.dtypes import VarType, to_numpy_dtype
from ..tensor.tensor import LoDTensor, LoDTensorArray
from ..tensor.transfer import host_scalar
from .binding import names_in_block
from .frame import BodyFrame, names_held, reusable
from .scope import ScopeVariable


# --- scopes ------------------------------------------------------------------------------------
def _sub_block(ctx):
    return ctx.program.block(ctx.attrs["sub_block"])


def _child_scope(parent):
    """A kid scope; the caller drops it (``_drop``) when the op no longer needs it."""
    return parent.new_scope()


def _drop(parent, scopes):
    if not scopes:
        return
    kids, n = parent.kids, len(scopes)
    if kids[-n:] == list(scopes):  # the usual case: the last kids, in order (compared by
        del kids[-n:]              # identity: a Scope has no __eq__ of its own)
        return
    gone = {id(kid) for kid in scopes}
    parent.kids[:] = [kid for kid in parent.kids if id(kid) not in gone]


def _cond_value(op, value):
    if value.__class__ is LoDTensor and value.array.__class__ is np.ndarray \
            and value.array.shape == (1,):  # the common case: a [1] bool tensor on the host
        return bool(value.array[0])
    if not isinstance(value, LoDTensor) or value.array is None:
        raise InvalidArgument(expected(op, "input 'Condition'", "an initialised bool tensor",
                                       type(value).__name__))
    flat = value.array.reshape(-1)
    if flat.shape[0] != 1:
        raise InvalidArgument(expected(op, "input 'Condition'", "a tensor of one element",
                                       list(value.array.shape)))
    return bool(host_scalar(flat))  # a condition on a device: the one copy its meaning needs


def _frame(ctx, key, block, outer, names=frozenset(), reads=None):
    """The op's BodyFrame for ``block`` under ``outer``, bound once and kept in the op's
    cache for its later runs: a bound plan runs its ops with the same context, under the
    same local scope, every run. A new binding is made when the block was prepared again
    (the program changed), the scope is another one, or ``names`` (a frozenset: the
    holders the frame must have of its own) differ. Every user empties the frame's holders
    when it is done with them (also when a run fails), so a kept frame holds nothing."""
    held = ctx.cache.get(key)
    prepared = ctx.executor.prepare(block)
    if held is not None and held.outer is outer and held.prepared is prepared \
            and held.names == names and held.reads == reads:
        return held
    frame = ctx.cache[key] = BodyFrame(ctx.executor, block, outer, sorted(names), reads)
    return frame


# --- while ---------------------------------------------------------------------------------------
def _no_copy_names(block):
    """X names a step need not snapshot: parameters and variables an op of the body both
    reads and writes (in-place counters), as Paddle's WhileOp."""
    names = {v.name for v in block.program.global_block().vars.values() if v.is_parameter}
    for op in block.ops:
        names |= set(op.input_arg_names) & set(op.output_arg_names)
    return names


def _while(ctx, xs, cond):
    outer = ctx.scope
    block = _sub_block(ctx)
    cond_name = ctx.input_names("Condition")[0]
    holder = ctx.op.outputs.get("StepScopes")
    if holder:  # as Paddle, a new run drops the previous run's step scopes
        old = outer.find_var(holder[0])
        _drop(outer, old.value if old is not None and isinstance(old.value, list) else ())
    running = _cond_value("while", cond)
    condition = outer.find_var(cond_name)
    if ctx.attrs["is_test"]:  # one scope for all iterations, as Paddle's inference mode
        frame = _frame(ctx, "frame", block, outer)
        try:
            while running:
                frame.run()
                running = _cond_value("while", condition.value)
        finally:
            frame.clear()
        return None, []
    run_iteration, snapshot_names, snapshot_holders = _iteration_runner(ctx, block, outer)
    tensor = LoDTensor
    scopes = []
    append = scopes.append
    while running:
        # the outer values a step reads, as they are before it runs (later steps
        # overwrite them, and the step's gradient needs these): tensors only, as Paddle
        append(run_iteration(snapshot_names, [
            value if isinstance(value := holder.value, tensor) else None
            for holder in snapshot_holders]))
        running = _cond_value("while", condition.value)
    return None, scopes


def _iteration_runner(ctx, block, outer):
    """(``run(names, values) -> step scope``, the names a step snapshots, their holders).
    ``run`` is one iteration of the body, its values and ``values`` (None where there is
    none) under ``names`` kept in a new kid scope of ``outer`` for while_grad. One binding
    serves every iteration unless the body holds sub-block ops, which keep the scope they
    ran in (nested step scopes hang under it): then each iteration binds to a scope of its
    own. The snapshot holders are found once: the body's ops create holders only in their
    own step scope, never in ``outer`` or above, so what a name finds cannot change in the
    loop. All three are kept for the next run under the same scope and program."""
    prepared = ctx.executor.prepare(block)
    held = ctx.cache.get("iteration_runner")
    if held is not None and held[0] is prepared and held[1] is outer:
        return held[2]
    found = [(name, holder) for name in _snapshot_names(ctx, block)
             if (holder := outer.find_var(name)) is not None]
    snapshot = (tuple(name for name, _ in found), tuple(holder for _, holder in found))
    if reusable(block):
        frame = _frame(ctx, "frame", block, outer)
        run, keep, clear = frame.run, frame.keep, frame.clear
        only = _grad_reads(ctx, block)

        def run_reused(names, values):
            try:
                run()
            except BaseException:
                clear()  # the next run starts from empty holders, as a new step scope
                raise
            return keep(names, values, only)
        runner = (run_reused,) + snapshot
    else:
        executor = ctx.executor

        def run_fresh(names, values):
            step = _child_scope(outer)
            executor.run_prepared(prepared, step)
            for name, value in zip(names, values):
                if value is not None:
                    step.var(name).value = value
            return step
        runner = (run_fresh,) + snapshot
    ctx.cache["iteration_runner"] = (prepared, outer, runner)
    return runner


def _per_version(ctx, key, block, compute):
    """``compute()``, kept in the op's cache under ``key`` while ``block`` is the same block
    of an unchanged program."""
    version = block.program._version
    held = ctx.cache.get(key)
    if held is None or held[0] != version or held[1] is not block:
        held = ctx.cache[key] = (version, block, compute())
    return held[2]


def _grad_reads(ctx, block):
    """The names the loop's ``while_grad`` (found by its StepScopes) reads in its grad body
    and the blocks nested there, or None when the program has no backward for this loop
    (worked out when the iteration runner is made).

    A step scope keeps only these, as Paddle's eager deletion keeps only a while op's
    ``skip_eager_deletion_vars`` (what its grad op needs): freeing the rest after each
    iteration (a fc's matmul outputs, say) lets the next iteration reuse their memory
    while it is still in cache. Without a backward every value stays, for views."""
    scopes = ctx.op.outputs.get("StepScopes")
    program = ctx.program
    grad_bodies = [program.block(op.attrs["sub_block"]) for any_block in program.blocks
                   for op in any_block.ops
                   if scopes and op.type == "while_grad"
                   and op.inputs.get("StepScopes") == scopes]
    if not grad_bodies:
        return None
    return frozenset().union(*[names_in_block(body, writes=False) for body in grad_bodies])


def _snapshot_names(ctx, block):
    """X names a step snapshots: not in ``_no_copy_names``, and not declared as anything
    but a tensor (a tensor array or rank table is never copied, as in Paddle)."""
    no_copy = _no_copy_names(block)
    outside = ctx.program.block(ctx.op.block.idx)
    declared = {n: outside._find_var_recursive(n) for n in ctx.input_names("X")}
    return [n for n, var in declared.items() if n not in no_copy
            and (var is None or var.type == VarType.LOD_TENSOR)]


# --- while_grad ----------------------------------------------------------------------------------
def _zeros_like(xp, value):
    if isinstance(value, LoDTensor) and value.array is not None:
        return LoDTensor(xp.zeros_like(value.array), [list(l) for l in value._lod])
    if isinstance(value, list):
        return LoDTensorArray(_zeros_like(xp, t) for t in value)
    return None


def _add(a, b):
    """a + b for LoDTensors; None is zero."""
    if a is None:
        return b
    if b is None:
        return a
    return LoDTensor(a.array + b.array, [list(l) for l in a._lod])


def _prepare_grad_scope(step, grad_block, og_values):
    """Every gradient the grad block writes gets a holder of its own in ``step`` (so no
    gradient is written outside but through the op's outputs; a reversed counter increment
    still updates the outer counter); the incoming gradients go in first."""
    for name in _grads_written(grad_block):
        if step.find_local_var(name) is None:
            step.var(name)
    for name, value in og_values.items():
        step.var(name).value = value


def _grads_written(grad_block):
    return [name for op in grad_block.ops for name in op.output_arg_names if "@GRAD" in name]


def _grad_steps(ctx, block, outer, scopes, plan):
    """``run(step, current) -> values``: the grad block run over one kept step scope, with
    each inside output gradient of ``plan.og_names`` ((inside, outside) pairs) set to
    ``current[outside]``; ``values`` are the gradients it left under the names of
    ``plan.reads``, in that order. One binding serves every step when it can; then the
    holders named in ``plan.shared`` keep their value from step to step (``run.per_step``
    is False), ``run.frame`` is the frame to clear after the loop, and the binding leaves
    out the work on values not in ``plan.reads`` that no op of the block reads. The runner
    is kept for the next run while the plan, the outer scope and the names the steps hold
    are the same."""
    executor, og_names, reads = ctx.executor, plan.og_names, plan.reads
    if plan.per_step:
        prepared = executor.prepare(block)

        def run_per_step(step, current):
            _prepare_grad_scope(step, block, {inside: current[outside]
                                              for inside, outside in og_names})
            executor.run_prepared(prepared, step)
            found = [step.find_local_var(name) for name in reads]
            return [h.value if h is not None else None for h in found]
        run_per_step.per_step = True
        run_per_step.frame = None
        return run_per_step
    kept = names_held(scopes)  # the names some step scope holds
    held = ctx.cache.get("grad_runner")
    if held is not None and held[0] is plan and held[1] is outer and held[2] == kept:
        return held[3]
    grads = _grads_written(block)
    written = frozenset(name for op in block.ops for name in op.output_arg_names)
    insides = {inside for inside, _ in og_names}
    frame = _frame(ctx, "grad_frame", block, outer, frozenset(kept.union(grads, insides)),
                   frozenset(reads))
    working = frame.scope.vars
    og_holders = tuple((working[inside], outside) for inside, outside in og_names)
    absent = ScopeVariable("")  # a name the block has no holder for reads as None
    read_holders = tuple(working.get(name, absent) for name in reads)
    # Holders a step need not load: the shared ones; the incoming gradients, set right
    # after; and those no step holds and no op writes, which stay empty.
    not_loaded = plan.shared.union(insides, (name for name in working
                                             if name not in kept and name not in written))
    load, run = frame.load, frame.run

    def run_reused(step, current):
        load(step, not_loaded)
        for holder, outside in og_holders:
            holder.value = current[outside]
        run()
        return [holder.value for holder in read_holders]
    run_reused.per_step = False
    run_reused.frame = frame
    ctx.cache["grad_runner"] = (plan, outer, kept, run_reused)
    return run_reused


def _accumulate(total, value):
    """total + value, where ``total`` is owned here (a tensor array is filled in place:
    each step's gradient array holds only the slots that step wrote)."""
    if value is None:
        return total
    if not isinstance(value, list):
        return _add(total, value)
    if total is None:
        total = LoDTensorArray()
    for k, item in enumerate(value):
        if item.array is None:
            continue
        while len(total) <= k:
            total.append(LoDTensor())
        held = total[k]
        total[k] = item if held.array is None else LoDTensor(held.array + item.array,
                                                             [list(l) for l in held._lod])
    return total


class _Total:
    """The sum of one gradient over the steps. The first sum of two steps makes a new
    array, owned here and seen by nobody else until the loop ends, so later steps add
    into it in place (one array for the whole loop instead of one per step)."""

    __slots__ = ("value", "owned")

    def __init__(self):
        self.value = None
        self.owned = False

    def add(self, value):
        """Add one step's gradient (not None)."""
        total = self.value
        if self.owned and value.__class__ is LoDTensor:  # the common case, tested first
            a, b = total.array, value.array
            if b is not None and a.shape == b.shape and a.dtype == b.dtype:
                a += b  # the same values a + b would give, without a new array
                return
        if total is None:
            self.value = value  # a step's own value: not ours to change
            return
        if isinstance(value, list) or isinstance(total, list):
            self.value = _accumulate(total, value)
            return
        self.value = _add(total, value)
        self.owned = True


class _GradPlan:
    """What a while_grad run works out from its program alone (and from which inputs are
    tensor arrays), kept while the program is unchanged.

    ``og_names``: (inside, outside) pairs of the incoming output gradients; ``pairs``: (X
    index, X@GRAD index) of the gradients computed (one no later op reads is not, unless
    it is carried from step to step); ``reads``: the gradient names the grad block leaves
    for them; ``shared``: gradients of the body's input arrays, one array collecting every
    step's slots (as Paddle shares each step's written slots into the outer array). How
    each gradient combines over the steps, as (position in ``reads``, X@GRAD name):
    ``sums`` are summed, ``flows`` (a loop-carried variable's, also an ``Out@GRAD``) flow
    into the previous step, ``lasts`` are the shared array the last step leaves."""

    def __init__(self, ctx, block, arrays):
        inside_ogs = list(ctx.attrs.get("original_output_grad") or ())
        self.outside_ogs = ctx.input_names("Out@GRAD")
        if len(inside_ogs) != len(self.outside_ogs):
            raise InvalidArgument(expected("while_grad", "attribute 'original_output_grad'",
                                           f"{len(self.outside_ogs)} names (one per "
                                           f"Out@GRAD)", len(inside_ogs)))
        self.og_names = tuple(zip(inside_ogs, self.outside_ogs))
        self.per_step = not reusable(block)
        x_names = ctx.input_names("X")
        self.x_grads = x_grads = ctx.output_names("X@GRAD")
        carried = self.carried = frozenset(self.outside_ogs)
        self.pairs = [(k, j) for k, j in grad_pairs(x_names, x_grads)
                      if x_grads[j] in carried or x_grads[j] not in ctx.unused]
        self.shared = frozenset(grad_var_name(x_names[k]) for k, j in self.pairs
                                if x_grads[j] not in carried and arrays[k])
        self.reads = tuple(dict.fromkeys(grad_var_name(x_names[k]) for k, _ in self.pairs))
        where = {name: i for i, name in enumerate(self.reads)}
        self.sums, self.flows, self.lasts = [], [], []
        for k, j in self.pairs:
            gname, i = x_grads[j], where[grad_var_name(x_names[k])]
            if gname in carried:
                self.flows.append((i, gname))
            elif self.reads[i] in self.shared and not self.per_step:
                self.lasts.append((i, gname))
            else:
                self.sums.append((i, gname))


def _incoming_grads(ctx, plan, ogs):
    """outside Out@GRAD name -> its value, an absent one made: zeros shaped like its
    variable, or an empty gradient array for an array nothing read after the loop (its
    reads give zeros shaped like the forward value written there)."""
    current = {}
    for name, value in zip(plan.outside_ogs, ogs or ()):
        if value is None or (isinstance(value, LoDTensor) and value.array is None):
            var = ctx.program.block(ctx.op.block.idx)._find_var_recursive(name)
            if var is not None and var.type == VarType.LOD_TENSOR_ARRAY:
                current[name] = LoDTensorArray()
                continue
            shape = [max(d, 1) for d in var.shape] if var is not None else [1]
            dtype = var.dtype if var is not None else VarType.FP32
            value = LoDTensor(ctx.xp.zeros(shape, dtype=to_numpy_dtype(dtype)))
        current[name] = value
    return current


def _while_grad(ctx, xs, outs, ogs, scopes):
    block = _sub_block(ctx)
    arrays = tuple(isinstance(x, list) for x in xs)
    plan = _per_version(ctx, ("grad_plan", arrays), block,
                        lambda: _GradPlan(ctx, block, arrays))
    current = _incoming_grads(ctx, plan, ogs)
    scopes = scopes or ()
    run_step = _grad_steps(ctx, block, ctx.scope, scopes, plan)
    totals = {gname: _Total() for _, gname in plan.sums}
    sums = [(i, totals[gname]) for i, gname in plan.sums]
    flows, lasts, last = plan.flows, plan.lasts, {}
    try:
        for step in reversed(scopes):
            values = run_step(step, current)
            for i, total in sums:
                value = values[i]
                if value is not None:
                    total.add(value)
            for i, gname in flows:
                value = values[i]
                if value is not None:
                    current[gname] = value
            for i, gname in lasts:
                last[gname] = values[i]
    finally:
        if run_step.frame is not None:
            run_step.frame.clear()  # the last step's values go with the loop
    _drop(ctx.scope, scopes)
    result = [None] * len(plan.x_grads)
    for k, j in plan.pairs:
        gname = plan.x_grads[j]
        if gname in plan.carried:
            result[j] = current[gname]
        else:
            value = totals[gname].value if gname in totals else last.get(gname)
            result[j] = value if value is not None else _zeros_like(ctx.xp, xs[k])
    return result



# --- conditional_block -------------------------------------------------------------------------
def _need_run(op, conds, scalar):
    if scalar:
        if not conds:
            raise InvalidArgument(expected(op, "input 'Cond'", "a variable", "none"))
        return _cond_value(op, conds[0])
    return all(isinstance(c, LoDTensor) and c.array is not None and c.array.size != 0
               for c in conds)


def _conditional_block(ctx, conds, inputs):
    outer = ctx.scope
    holder = ctx.op.outputs.get("Scope")
    if holder:
        old = outer.find_var(holder[0])
        _drop(outer, old.value if old is not None and isinstance(old.value, list) else ())
    if not _need_run("conditional_block", conds, ctx.attrs["is_scalar_condition"]):
        return None, []
    step = _child_scope(outer)
    ctx.executor.run_prepared(ctx.executor.prepare(_sub_block(ctx)), step)
    return None, [step]


def _conditional_block_grad(ctx, conds, inputs, outs, ogs, scopes):
    xp, outer = ctx.xp, ctx.scope
    names = ctx.input_names("Input")
    grads = ctx.output_names("Input@GRAD")
    inputs = inputs or []
    ran = _need_run("conditional_block_grad", conds, ctx.attrs["is_scalar_condition"])
    pairs = grad_pairs(names, grads)
    result = [None] * len(grads)
    if not ran or not scopes:
        for k, j in pairs:
            result[j] = _zeros_like(xp, inputs[k])
        return result
    step = scopes[0]
    block = _sub_block(ctx)
    og_values = {}
    for name, value in zip(ctx.input_names("Out@GRAD"), ogs or ()):
        if value is not None:
            og_values[name] = value
    _prepare_grad_scope(step, block, og_values)
    ctx.executor.run_prepared(ctx.executor.prepare(block), step)
    for k, j in pairs:
        found = step.find_local_var(grad_var_name(names[k]))
        value = found.value if found is not None else None
        if value is None or (isinstance(value, LoDTensor) and value.array is None):
            value = _zeros_like(xp, inputs[k])
        result[j] = value
    _drop(outer, scopes)
    return result



registry.attach_kernel("while", _while)
registry.attach_kernel("while_grad", _while_grad)
registry.attach_kernel("conditional_block", _conditional_block)
registry.attach_kernel("conditional_block_grad", _conditional_block_grad)
