"""A run's trailing update ops written in place, all at once.

``Executor.run`` is all or nothing: it holds the value of every persistable the run writes
(the undo log, :mod:`.run_plan`) and puts them back if anything fails. While it holds them
an update op (sgd, momentum, adam) may not write its parameter and state in place, so it
writes new arrays, and a training step holds its optimizer state twice at its peak.

The update ops of a training program come last, after the backward pass; only fetches
follow them. Each of them (sgd, momentum, adam, adagrad, rmsprop) has a ``commit``
(``OpDef.commit``, ops/optimizer_ops.py): its update as data for one call that checks
every update before it writes any and then writes all of them with no Python code run in
between. The step of the first of the
trailing updates becomes one that prepares every op's update (the values its kernel would
read and the scalars it would work out; nothing written) and, when each op's state is
the run's alone to write (:func:`.steps.sole_owner` but for the undo log), commits them in
that one call: no error can come between the first write and the last, so the old values
need no copies. The other ops' steps do nothing in such a run. An op whose update cannot
be committed (a parameter's array held by the user, a sparse gradient, a master copy) runs
its own step first, before anything is written; the ops touch disjoint variables, so the
order does not matter. An executor that times its ops (``Executor.trace``) runs each one
as itself. Plans are bound without it where the updates write less than
``DONATE_MIN_BYTES`` in all (new arrays cost less than preparing the commit) and with
``FLAGS_inplace_update`` off.

The run still fails as a whole if anything fails before the commit. An exception that
comes after it (an interrupt while the fetches are taken) ends the run as a failure with
the updates made: the undo log holds the very tensors that were written.
"""
from ..framework.program import EMPTY_VAR_NAME
from .binding import DONATE_MIN_BYTES, _declared_bytes, memory_policy
from .steps import sole_owner


def committing(steps, prepared, local, written, executor):
    """``steps`` (one per op of ``prepared``, bound over ``local`` and its parent scope),
    with the steps of the trailing update ops (only ``fetch`` ops after them) made one
    commit where each of those ops has a ``commit``, names the same variable for each of
    its outputs as for the input it updates, and touches no variable another of them
    writes; ``written`` are the holders the run's undo log holds the values of. The steps
    unchanged where there are no such ops."""
    if not memory_policy()[1]:
        return steps
    ops = prepared.ops
    end = len(ops)
    while end and ops[end - 1].op.type == "fetch":
        end -= 1
    start = end
    while start and ops[start - 1].opdef is not None and ops[start - 1].opdef.commit is not None:
        start -= 1
    tail = [p.op for p in ops[start:end]]
    if not tail or not _writes_at_least(tail, DONATE_MIN_BYTES) or not _independent(tail):
        return steps  # (a few small updates: new arrays cost less than preparing them)
    in_undo_log = {id(holder) for holder in written}
    parts = []
    for prepared_op in ops[start:end]:
        part = _commit_part(prepared_op.op, prepared_op.opdef, local, in_undo_log)
        if part is None:
            return steps
        parts.append(part)
    steps = list(steps)
    done = [False] * len(parts)
    steps[start] = _commit_step(parts, steps[start:end], done, executor)
    for i in range(1, len(parts)):
        steps[start + i] = _unless_done(steps[start + i], done, i)
    return steps


def _writes_at_least(ops, least):
    """Whether the variables ``ops`` write are declared ``least`` bytes or more in all."""
    total = 0
    for op in ops:
        for name in set(op.output_arg_names):
            total += _declared_bytes(op.block._find_var_recursive(name))
            if total >= least:
                return True
    return False


def _independent(ops):
    """Whether no op of ``ops`` reads or writes a variable another of them writes: then
    they may run in any order (an update op writes its own parameter and state)."""
    seen, seen_writes = set(), set()  # (every name seen; the names written)
    for op in ops:
        writes = set(op.output_arg_names)
        reads = set(op.input_arg_names)
        writes.discard(EMPTY_VAR_NAME)
        reads.discard(EMPTY_VAR_NAME)
        if not writes.isdisjoint(seen) or not reads.isdisjoint(seen_writes):
            return False
        seen |= reads
        seen |= writes
        seen_writes |= writes
    return True


def _commit_part(op, opdef, local, in_undo_log):
    """``(commit, attrs, input holders, holders written, slots written)`` of one update
    op, or None when an output names another variable than its input, a slot holds more
    than one variable, or a holder written is not in the undo log."""
    inputs = op.inputs
    found = {}
    for slot, args in inputs.items():
        if len(args) > 1:
            return None
        if args and args[0] != EMPTY_VAR_NAME:
            found[slot] = local.find_var(args[0])
    written, writes = [], set()
    for slot, args in op.outputs.items():
        if not args or args[0] == EMPTY_VAR_NAME:
            continue
        source = slot[:-3] if slot.endswith("Out") else None
        holder = found.get(source)
        if holder is None or inputs[source] != args or id(holder) not in in_undo_log:
            return None
        written.append(holder)
        writes.add(source)
    holders = tuple(found.get(slot.name) for slot in opdef.inputs)
    return opdef.commit, op.attrs, holders, tuple(written), frozenset(writes)


def _commit_step(parts, own_steps, done, executor):
    """The step of the first trailing update: every op's update prepared (nothing written);
    the ops whose update cannot be committed run their own steps first (they may fail:
    nothing is written in place yet), then the others are committed in one call. Each op's
    ``done`` entry says its step has nothing left to do in this run."""
    count = len(parts)

    def commit_step():
        done[:] = [False] * count
        if executor.trace is not None:
            own_steps[0]()  # (a traced run times each op as itself)
            return
        apply, updates, chosen, others = None, [], [], []
        for i, (commit, attrs, holders, written, writes) in enumerate(parts):
            owned = all(sole_owner(holder, 1) for holder in written)  # (and the undo log)
            prepared = commit(attrs, [h.value if h is not None else None for h in holders],
                              writes) if owned else None
            if prepared is None or (apply is not None and prepared[0] != apply):
                others.append(i)
                continue
            apply = prepared[0]
            updates.append(prepared[1])
            chosen.append(i)
        if not updates:
            own_steps[0]()
            return
        for i in others:
            own_steps[i]()
            done[i] = True
        try:
            apply(updates)
        except (TypeError, ValueError):  # (checked before anything was written)
            for i in chosen:
                own_steps[i]()
        for i in chosen:
            done[i] = True
    return commit_step


def _unless_done(own_step, done, index):
    def step():
        if not done[index]:
            own_step()
    return step
