"""A loop body bound once and run for every iteration.

``while`` runs its body in a new step scope per iteration and keeps the step scopes for
``while_grad``, which runs the grad body once per kept scope. Binding a block to a scope
(resolving every op's holders and building its step closures) costs about as much as
running a small op, so binding per iteration would double a loop's cost.

A ``BodyFrame`` binds the block once to a working scope whose holders the closures keep.
An iteration runs the closures; ``keep`` then moves the working values into a fresh step
scope (a ``KeptScope``: the same values, nothing is copied, and holders made only when
someone other than ``while_grad`` looks) and clears the working holders, so every
iteration starts from an empty scope as it would in a new step scope (given ``only``, it
keeps just those names: ``while`` passes what its ``while_grad`` reads, and the rest is
freed, as Paddle's eager deletion frees what a while op's grad does not need). ``load``
does the reverse for the grad body: it puts a kept step scope's values into the working
holders.

The invariant that makes this equal to per-iteration scopes: every name the body resolves
to a step scope has a holder in the working scope (the caller names them, and binding
creates the rest there), and no op of the body keeps the scope it ran in (ops with
sub-blocks do: ``reusable`` says no for such bodies, and they bind per iteration). A loop
that keeps nothing (``is_test``) runs any body in one frame, as Paddle runs it in one scope.

A frame given ``reads`` (the names its caller reads after an iteration; a grad body, whose
working values are not kept) binds without the work on values nothing reads.
"""
from .executor import bind, run_steps, stats
from .scope import KeptScope, Scope


def reusable(block):
    """True when ``block``'s ops can share one binding across iterations."""
    for op in block.ops:
        if "sub_block" in op.attrs or "sub_blocks" in op.attrs:
            return False
    return True


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
        if "sub_block" in op.attrs or "sub_blocks" in op.attrs:
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
    """The set of names any of ``scopes`` holds (a kept step's names without making its
    holders)."""
    return set().union(*[step.local_values() for step in scopes])


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

    def run(self):
        run_steps(self.prepared, self.steps, self.executor.trace)

    def keep(self, extra=(), only=None):
        """A new kid scope of ``outer`` holding this iteration's values (those named in
        ``only``, a frozenset, when given: the rest are freed here) and the ``(name,
        value)`` pairs of ``extra``; the working holders are cleared for the next
        iteration."""
        kept = self._holders_where(frozenset() if only is None else only, only is not None)
        values = {name: value for holder, name in kept if (value := holder.value) is not None}
        for holder in self.holders:
            holder.value = None
        for name, value in extra:
            values[name] = value
        step = KeptScope(self.outer, values)
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
        get = step.local_values().get
        for holder, name in self._holders_where(keep, False):
            holder.value = get(name)

    def clear(self):
        """Empty every working holder (a frame kept for a later run holds nothing)."""
        for holder in self.holders:
            holder.value = None

    def value(self, name):
        holder = self.scope.vars.get(name)
        return holder.value if holder is not None else None
