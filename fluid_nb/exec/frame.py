"""A loop body bound once and run for every iteration.

``while`` runs its body in a new step scope per iteration and keeps the step scopes for
``while_grad``, which runs the grad body once per kept scope. Binding a block to a scope
(resolving every op's holders and building its step closures) costs about as much as
running a small op, so binding per iteration would double a loop's cost.

A ``BodyFrame`` binds the block once to a working scope whose holders the closures keep.
An iteration runs the closures; ``keep`` then moves the working values into a fresh step
scope (a ``KeptScope``: the same values as a row, in the order of a names tuple all the
frame's steps share; nothing is copied, and holders are made only when someone other than
``while_grad`` looks) and clears the working holders, so every
iteration starts from an empty scope as it would in a new step scope (given ``only``, it
keeps just those names: ``while`` passes what its ``while_grad`` reads, and the rest is
freed, as Paddle's eager deletion frees what a while op's grad does not need). ``load``
does the reverse for the grad body: it puts a kept step scope's values into the working
holders, lined up with the row's names once for all the steps of a loop.

The invariant that makes this equal to per-iteration scopes: every name the body resolves
to a step scope has a holder in the working scope (the caller names them, and binding
creates the rest there), and no op of the body keeps the scope it ran in (ops with
sub-blocks do: ``reusable`` says no for such bodies, and they bind per iteration). A loop
that keeps nothing (``is_test``) runs any body in one frame, as Paddle runs it in one scope.

A frame given ``reads`` (the names its caller reads after an iteration; a grad body, whose
working values are not kept) binds without the work on values nothing reads.
"""
from ..framework.blocks import block_attr_indices
from .binding import bind, stats
from .run_loop import run_steps
from .scope import KeptScope, Scope, ScopeVariable


def reusable(block):
    """True when ``block``'s ops can share one binding across iterations."""
    return not any(block_attr_indices(op) for op in block.ops)


def _unwanted(prepared, outer, names, reads):
    """op index -> outputs nobody needs, for a frame whose caller reads only ``reads``
    after an iteration and keeps nothing else (a grad body): values of the working scope
    that no later op of the block reads. Outer variables are always wanted, and so is
    everything an op with a sub-block writes."""
    block = prepared.block

    def working(name):
        return name in names or name in block.vars or outer.find_var(name) is None

    needed = set(reads)
    unwanted = {}
    for index in range(len(prepared.ops) - 1, -1, -1):
        op = prepared.ops[index].op
        if block_attr_indices(op):
            drop = set()
        else:
            drop = {n for n in op.output_arg_names if n not in needed and working(n)}
        if drop:
            unwanted[index] = frozenset(drop)
        kept = [n for n in op.output_arg_names if n not in drop]
        if kept or not op.output_arg_names:  # the op runs: what it reads is needed
            needed.update(op.input_arg_names)
    return unwanted


def names_held(scopes):
    """The set of names any of ``scopes`` may hold: a kept step's row names (which may
    include names without a value; steps kept by one frame share one tuple, read once),
    or the names a scope with holders holds."""
    rows, held = {}, []
    for step in scopes:
        names = getattr(step, "names", None)
        if names is not None:
            rows[id(names)] = names
        else:
            held.append(step.local_values())
    return set().union(*rows.values(), *held)


class BodyFrame:
    """``block`` bound once over a working scope under ``outer``."""

    def __init__(self, executor, block, outer, names=(), reads=None):
        self.executor = executor
        self.prepared = executor.prepare(block)
        self.outer = outer
        self.scope = Scope(outer)  # a working scope: not one of outer's kids
        self.names = frozenset(names)  # the names given: holders here, not outside
        self.reads = reads
        for name in names:
            self.scope.var(name)
        unwanted = None if reads is None else _unwanted(self.prepared, outer, self.names,
                                                         reads)
        self.steps = bind(self.prepared, self.scope, self.scope, executor,
                          unwanted=unwanted)
        stats["frames_bound"] += 1
        self.holders = tuple(self.scope.vars.values())
        self._subsets = {}  # (names, inside) -> (holder, name) pairs: see _holders_where
        self._keep_plans = {}  # (only, extra names) -> (row names, holders kept): keep
        self._load_plan = None  # the last _plan_load: the steps of a loop share one

    def run(self):
        executor = self.executor
        run_steps(self.prepared, self.steps, executor.trace, executor.watch, self.scope)

    def keep(self, extra_names=(), extra_values=(), only=None):
        """A new kid scope of ``outer`` holding this iteration's values (those named in
        ``only``, a frozenset, when given: the rest are freed here) and ``extra_values``
        under ``extra_names`` (a tuple); the working holders are cleared for the next
        iteration."""
        plan = self._keep_plans.get((only, extra_names))
        if plan is None:
            pairs = self._holders_where(frozenset() if only is None else only,
                                        only is not None)
            plan = self._keep_plans[only, extra_names] = (
                tuple(name for _, name in pairs) + extra_names,
                tuple(holder for holder, _ in pairs))
        names, kept = plan
        row = [holder.value for holder in kept]
        row += extra_values
        self.clear()
        step = KeptScope(self.outer, names=names, row=row)
        self.outer.kids.append(step)
        return step

    def _holders_where(self, names, inside):
        """(holder, name) pairs of the working holders whose names are in ``names`` (a
        frozenset; not in it when ``inside`` is False), found once per such set."""
        pairs = self._subsets.get((names, inside))
        if pairs is None:
            pairs = self._subsets[names, inside] = tuple(
                (h, h.name) for h in self.holders if (h.name in names) == inside)
        return pairs

    def load(self, step, keep=frozenset()):
        """Set the working holders to ``step``'s values (None where it has none), except
        the holders named in ``keep`` (a frozenset), which go on from the previous
        iteration."""
        names = getattr(step, "names", None)
        if names is None:  # a scope with holders
            get = step.local_values().get
            for holder, name in self._holders_where(keep, False):
                holder.value = get(name)
            return
        plan = self._load_plan
        if plan is None or plan[0] is not names or plan[1] is not keep:
            plan = self._load_plan = self._plan_load(names, keep)
        for holder, value in zip(plan[2], step.row):
            holder.value = value
        for holder in plan[3]:
            holder.value = None

    def _plan_load(self, names, keep):
        """(names, keep, a holder per row entry, the holders to empty) for loading rows
        named ``names``: a row entry for a holder in ``keep`` or without a working holder
        (or named again later in the row, whose last entry wins, as in a dict) goes to a
        holder nobody reads."""
        working = {name: holder for holder, name in self._holders_where(keep, False)}
        sink = ScopeVariable("")
        aligned = [working.pop(name, sink) for name in reversed(names)]
        return names, keep, tuple(reversed(aligned)), tuple(working.values())

    def clear(self):
        """Empty every working holder (a frame kept for a later run holds nothing)."""
        for holder in self.holders:
            holder.value = None

    def value(self, name):
        holder = self.scope.vars.get(name)
        return holder.value if holder is not None else None
