"""A run of block 0 bound to one scope, all or nothing.

A :class:`RunPlan` holds block 0's steps bound once to a scope (persistables) and a local
scope (the run's temporaries). ``run`` converts the feed, runs the steps and returns the
fetch list. Before the steps run it takes the values of the holders outside the run that
they write (persistables, the feed and fetch lists: references, not copies); if anything
fails (an op's error, memory running out, a KeyboardInterrupt) they are put back, so every
persistable is as it was before the run. Holding the old values is also what keeps update
ops from writing them in place (``steps.sole_owner`` sees the extra holder): the run's
trailing updates are committed at once instead, after everything that can fail
(:mod:`.update_commit`), and any other update writes new arrays, the old ones going when
the run ends.

On the host the same run is also C (``_steps.fast_run``, which Executor.run calls for a run
that repeats the last one): it reads the plan's parts in ``fast``, and a step that fails
there ends the run through ``_step_failed``, as ``run`` ends it.
"""
import numpy as np

from ..errors import NotFound, ResourceExhausted
from ..framework.blocks import sub_block_indices
from ..tensor.dtypes import VarType, to_numpy_dtype
from ..tensor.tensor import LoDTensor
from .binding import PreparedOp, bind
from .feed_fetch import (FetchedArray, as_declared_scalar, declared_scalar, feed_tensor,
                         fetched, shape_fits)
from .run_loop import op_error, run_steps, with_holders
from .steps import configure_fetches
from .update_commit import committing

configure_fetches(FetchedArray, as_declared_scalar, fetched)


class RunPlan:
    """Block 0 bound to one scope; ``run`` feeds, steps and fetches."""

    def __init__(self, executor, program, run_program, prepared, scope, local, feed_names,
                 feed_var_name, fetch_var_name, fetch_names, release=True):
        self.executor = executor
        self.program = program
        self.prepared = prepared
        self.scope = scope
        self.local = local
        self.steps = bind(prepared, scope, local, executor, release=release)
        self.feed_holder = scope.var(feed_var_name)
        self.fetch_holder = scope.var(fetch_var_name)
        self.local_holders = list(local.vars.values())
        #: the holders outside the run (persistables, outer variables, the feed and fetch
        #: lists) that it writes: their values before the run are the undo log of a run
        #: that fails
        self.written = written_outside(prepared, scope, local,
                                       (self.feed_holder, self.fetch_holder))
        if executor.place.device == "cpu":  # the trailing updates written in place at once
            self.steps = committing(self.steps, prepared, local, self.written, executor)
        self.feed_checks = []
        block = run_program.global_block()
        for name in feed_names:
            var = block._find_var_recursive(name)
            if var is None:
                raise NotFound(f"Executor.run: feed '{name}' expected to name a variable of the "
                               f"program, but there is none")
            want = to_numpy_dtype(var.dtype) if var.type == VarType.LOD_TENSOR else None
            check_shape = var.shape if var.need_check_feed and var.shape else None
            self.feed_checks.append((name, var, want, check_shape))
        self.n_fetch = len(fetch_names)
        # fetches a Fluid 1.x program declares [1]: a kernel's 0-D result is given that shape
        self.scalar_fetches = tuple(i for i, name in enumerate(fetch_names)
                                    if declared_scalar(block._find_var_recursive(name)))
        self.place = executor.place
        self.on_host = self.place.device == "cpu"
        #: what ``_steps.fast_run`` reads (see fast_parts), or None: runs go the Python way
        self.fast = self.fast_parts() if self.on_host else None

    def fast_parts(self):
        """The plan as ``_steps.fast_run`` reads it: ((name, dtype, declared shape or
        None) per feed, written, scope, local, feed_holder, fetch_holder, n_fetch, steps,
        local_holders, scalar_fetches); None when a feed is not a LoDTensor variable."""
        feeds = []
        for name, var, want, check_shape in self.feed_checks:
            if want is None:
                return None
            feeds.append((name, want, None if check_shape is None else
                          tuple(int(d) for d in check_shape)))
        return (tuple(feeds), tuple(self.written), self.scope, self.local, self.feed_holder,
                self.fetch_holder, self.n_fetch, tuple(self.steps), tuple(self.local_holders),
                tuple(self.scalar_fetches))

    def run(self, feed, return_numpy):
        tensors = []
        cpu = self.on_host
        for name, var, want, check_shape in self.feed_checks:
            value = feed[name]
            if cpu and value.__class__ is np.ndarray and value.dtype == want and (
                    check_shape is None or shape_fits(check_shape, value.shape)):
                tensors.append(LoDTensor(value))  # the common case: nothing to convert
            elif cpu and value.__class__ is LoDTensor and not value._lod and \
                    value.array.__class__ is np.ndarray and value.array.dtype == want and (
                        check_shape is None or shape_fits(check_shape, value.array.shape)):
                tensors.append(value)  # (a DataFeeder's): what feed_tensor returns for it
            else:
                tensors.append(feed_tensor(name, var, value, self.place))
        # holding the old values also keeps update ops from writing them in place
        # (``sole_owner``), so after a failure they are intact and simply put back
        undo = [holder.value for holder in self.written]
        self.scope.kids.append(self.local)
        try:
            self.feed_holder.value = tensors
            self.fetch_holder.value = [None] * self.n_fetch
            run_steps(self.prepared, self.steps, self.executor.trace, self.executor.watch,
                      self.local)
            results = self.fetch_holder.value
        except BaseException as exc:  # an interrupt too: the run is all or nothing
            self._failed(undo, exc)
        self._end()
        for i in self.scalar_fetches:
            results[i] = as_declared_scalar(results[i])
        if return_numpy:
            return list(map(fetched, results))
        return results

    def _failed(self, undo, exc):
        """The end of a run that raised ``exc``: every holder it wrote gets its old value
        back, the run's scope goes, and ``exc`` is raised (a ResourceExhausted saying what
        holds the arena, the run's temporaries still among them)."""
        try:
            put_back(self.written, undo)
            if isinstance(exc, ResourceExhausted):
                raise with_holders(exc, self.place, self.scope) from exc.__cause__
            raise exc
        finally:
            self._end()

    def _step_failed(self, undo, index, exc):
        """The end of a ``_steps.fast_run`` run whose step ``index`` raised ``exc`` (None:
        not a step), as ``run`` ends it: the error located at the op (``run_steps``'
        wrapping), then ``_failed``."""
        if index is not None and isinstance(exc, Exception):
            failed = self.prepared.ops[index]
            try:
                raise op_error(exc, failed.op, failed.index) from exc
            except Exception as located:
                exc = located
        self._failed(undo, exc)

    def _end(self):
        self.scope.kids.remove(self.local)
        # the step scopes a while/conditional_block kept hang under the local scope; as
        # Paddle deletes the local scope with its kids, they go with the run
        self.local.drop_kids()
        for holder in self.local_holders:
            holder.value = None


def written_outside(prepared, scope, local, also=()):
    """``also`` and the holders of ``scope`` (or its ancestors) that the ops of the
    prepared block and of the blocks nested in them write, in a fixed order; the run's own
    temporaries (``local``) are not among them."""
    holders = {id(holder): holder for holder in also}
    for name in sorted(names_written(prepared.ops)):
        if local.find_local_var(name) is None:
            holder = scope.find_var(name)
            if holder is not None:
                holders[id(holder)] = holder
    return tuple(holders.values())


def names_written(ops):
    """Every name ``ops`` (Operators, or PreparedOps, which keep their ops' sub-block
    indices) and the ops of the blocks nested in them write."""
    names = set()
    for op in ops:
        if op.__class__ is PreparedOp:
            indices, op = op.block_indices(), op.op
        else:
            indices = sub_block_indices(op)
        names.update(op.output_arg_names)
        for idx in indices:
            names |= names_written(op.block.program.block(idx).ops)
    return names


def put_back(holders, values):
    """Give each holder its value from before the run. Only reference assignments, and
    started over if an interrupt lands among them, so it always finishes whole."""
    while True:
        try:
            for holder, value in zip(holders, values):
                holder.value = value
            return
        except KeyboardInterrupt:
            continue
