"""Backward with recomputation (Fluid 1.8's ``append_backward(..., checkpoints=...)``).

The ops that lead to the loss are cut into segments by the checkpoint variables. Walking
back from the loss, the grad ops of each segment are preceded by a copy of the segment's
forward ops, which write renamed copies ``<name>.subprog_<n>`` of the segment's
intermediates; the segment's grad ops read those copies. So only the checkpoints (and the
variables a segment shares with another) must outlive the forward pass. The last segment,
from the last checkpoint to the loss, is differentiated as usual.

The segments, in indices ``i`` of the op path (the ops that reach the loss and have a
gradient rule), as Fluid 1.8 forms them:

- checkpoints are sorted by the last op that writes them (inputs first); unknown ones drop;
- one checkpoint ``c``: the segment ``[0, last writer of c]``, when that writer is not op 0;
- several: for each consecutive pair ``(a, b)``, ``[first reader of a, last writer of b]``
  when the first comes before the second; ``[0, start of the first]`` is prepended.

Kept in memory (never renamed, never recomputed): checkpoints, parameters and other
persistables, variables a segment exchanges with ops outside it, inputs of the path, and
dropout seeds. A recomputed op is emitted only when one of its outputs is not kept.

Dropout draws its mask at random, so the recomputed mask would differ from the forward one:
as Fluid does, every dropout of the path gets a ``seed`` op inserted before it, whose output
(drawn afresh each run when the dropout has no fixed seed) feeds the dropout's ``Seed``
input in both the forward pass and the recomputation.
"""
from . import backward
from .backward import (OP_ROLE_BACKWARD, OP_ROLE_FORWARD, OP_ROLE_LOSS, _append_specs,
                       _carries_gradient, _check_names, _check_scalar_loss, _grad_specs_for,
                       _mark_role_vars, _names, _params_and_grads, _stop_gradient_names,
                       _sum_repeated_and_fill_missing)
from ..errors import InvalidType, NotFound, Unimplemented, expected
from ..framework import unique_name
from ..framework.blocks import block_attrs
from ..framework.program import EMPTY_VAR_NAME, GRAD_SUFFIX, Variable, grad_var_name
from ..framework.registry import GradOpSpec, no_gradient
from ..framework.transaction import transactional_on
from ..ops import registry
from ..tensor.dtypes import VarType

__all__ = ["append_backward_with_checkpoints"]


def _has_grad_rule(op_type):
    grad = registry.get(op_type).grad
    return grad is not None and grad is not no_gradient


def _refuse_sub_block(op):
    if block_attrs(op) or "has_sub_block" in registry.get(op.type).traits:
        raise Unimplemented(f"RecomputeOptimizer: op '{op.type}' has a sub-block, and "
                            f"recomputation expected ops without one (as in Fluid), but "
                            f"received it on the path to the loss")


def _op_path(block, loss_name, no_grad, stop_at):
    """Fluid's path: walking back from the loss, every op with a gradient rule that writes
    a variable the loss depends on (whether or not its inputs need a gradient)."""
    reach, path = {loss_name}, []
    for op in reversed(block.ops[:stop_at + 1]):
        if reach & set(op.output_arg_names) and _has_grad_rule(op.type):
            path.append(op)
            reach |= {n for n in op.input_arg_names if n not in no_grad}
    path.reverse()
    return path


def _seed_dropouts(block, path):
    """Insert a ``seed`` op before each dropout of ``path`` (in the block and in the path)
    and feed it to the dropout; returns what ``_unseed`` needs to undo it."""
    done = []
    for dropout in [op for op in path if op.type == "dropout" and not op.input("Seed")]:
        name = unique_name.generate_with_ignorable_key(unique_name.generate("seed") + ".tmp")
        block.create_var(name=name, shape=(1,), dtype=VarType.INT32, stop_gradient=False)
        seed = int(dropout.attrs.get("seed") or 0) if dropout.attrs.get("fix_seed") else 0
        seed_op = block._insert_op(block.ops.index(dropout), type="seed",
                                   outputs={"Out": [name]},
                                   attrs={"seed": seed, "op_role": OP_ROLE_FORWARD})
        path.insert(path.index(dropout), seed_op)
        saved = {k: dropout.attrs.pop(k) for k in ("fix_seed", "seed") if k in dropout.attrs}
        dropout.inputs["Seed"] = (name,)
        done.append((seed_op, dropout, saved))
    return done


def _unseed(block, done):
    for seed_op, dropout, saved in done:
        block.ops.remove(seed_op)
        del dropout.inputs["Seed"]
        dropout.attrs.update(saved)
    block.program._changed()


class _Uses:
    """For each variable of the path: the indices of the ops that read and that write it."""

    def __init__(self, path):
        self.readers, self.writers = {}, {}
        for i, op in enumerate(path):
            for name in op.input_arg_names:
                self.readers.setdefault(name, []).append(i)
                self.writers.setdefault(name, [])
            for name in op.output_arg_names:
                self.writers.setdefault(name, []).append(i)
                self.readers.setdefault(name, [])

    def sort(self, names):
        """Known checkpoints by their last writer; inputs (no writer) first."""
        known = [n for n in names if n in self.writers]
        return sorted(known, key=lambda n: max(self.writers[n], default=-1))

    def crossing(self, begin, end, path):
        """Variables written in [begin, end) and read after it, or read in it and written
        before it."""
        out = set()
        for op in path[begin:end]:
            out |= {n for n in op.output_arg_names if any(i >= end for i in self.readers[n])}
            out |= {n for n in op.input_arg_names if any(i < begin for i in self.writers[n])}
        return out


def _segments(uses, checkpoints):
    if len(checkpoints) == 1:
        last = max(uses.writers[checkpoints[0]], default=-1)
        segments = [[0, last + 1]] if last > 0 else []
    else:
        segments = []
        for a, b in zip(checkpoints, checkpoints[1:]):
            first = min(uses.readers[a], default=float("inf"))
            last = max(uses.writers[b], default=-1)
            if first < last:
                segments.append([first, last + 1])
    if segments and segments[0][0] != 0:
        segments.insert(0, [0, segments[0][0]])
    return segments


def _kept(block, path, uses, segments):
    kept = set()
    for begin, end in segments:
        kept |= uses.crossing(begin, end, path)
    kept |= {n for op in path if op.type == "seed" for n in op.output_arg_names}
    kept |= {n for n, w in uses.writers.items()
             if not w and uses.readers[n] and not _persistable(block, n)}
    return kept


def _persistable(block, name):
    var = block._find_var_recursive(name)
    return var is not None and var.persistable


def _renamed(spec, names):
    for slots in (spec.inputs, spec.outputs):
        for slot, args in slots.items():
            slots[slot] = [names.get(a, a) for a in args]
    return spec


def _grad_specs(op, no_grad, names):
    _refuse_sub_block(op)
    specs = []
    for spec in _grad_specs_for(op, no_grad) or ():
        spec.outputs = {slot: [a for a in args if a != EMPTY_VAR_NAME and
                               a[:-len(GRAD_SUFFIX)] not in no_grad]
                        for slot, args in spec.outputs.items()}
        spec.attrs = dict(spec.attrs, op_role=OP_ROLE_BACKWARD)
        specs.append(_renamed(spec, names))
    return specs


def _recompute_specs(block, ops, in_memory, names):
    """Copies of the segment's ops that write something not kept in memory, renamed."""
    specs = []
    for op in ops:
        if any(not _persistable(block, n) and n not in in_memory
               for n in op.output_arg_names):
            spec = GradOpSpec(op.type, {k: list(v) for k, v in op.inputs.items()},
                              {k: list(v) for k, v in op.outputs.items()},
                              dict(op.attrs, op_role=OP_ROLE_BACKWARD))
            specs.append(_renamed(spec, names))
    return specs


def _drop_no_grad_branches(specs, no_grad):
    """Fluid's pruning: a grad op goes when it writes no gradient that is wanted, or reads
    only gradients that are not (its outputs join those); recomputed ops stay."""
    no_grad = {grad_var_name(n) for n in no_grad}
    kept = []
    for spec in specs:
        outs = [n for args in spec.outputs.values() for n in args]
        grads_in = [n for args in spec.inputs.values() for n in args if GRAD_SUFFIX in n]
        if not outs or all(n in no_grad for n in outs):
            continue
        if grads_in and all(n in no_grad for n in grads_in):
            no_grad.update(outs)
            continue
        kept.append(spec)
    return kept


def _emit(block, path, segments, checkpoints, kept, no_grad):
    """The backward specs in Fluid's order, and the renamed variables {old: new}."""
    in_memory = kept | set(checkpoints)
    specs, names, end = [], {}, len(path)
    for n, (begin, stop) in enumerate(reversed(segments)):
        for op in reversed(path[stop:end]):  # the part after the segment: no recomputation
            specs += _grad_specs(op, no_grad, names)
        end = begin
        for op in path[begin:stop]:
            _refuse_sub_block(op)
            for name in op.input_arg_names + op.output_arg_names:
                if not (_persistable(block, name) or name in in_memory or name in names):
                    names[name] = f"{name}.subprog_{n}"
        specs += _recompute_specs(block, path[begin:stop], in_memory, names)
        for op in reversed(path[begin:stop]):
            specs += _grad_specs(op, no_grad, names)
    for op in reversed(path[:end]):
        specs += _grad_specs(op, no_grad, names)
    return specs, names


def _program_of(loss, *args, **kwargs):
    block = getattr(loss, "block", None)
    return [block.program] if block is not None else []


def _check(loss, checkpoints, parameter_list, no_grad_set):
    where = "append_backward"
    if not isinstance(loss, Variable):
        raise InvalidType(expected(where, "loss", "a Variable", type(loss).__name__))
    if not isinstance(checkpoints, (list, tuple)) or not all(
            isinstance(c, Variable) for c in checkpoints):
        raise InvalidType(expected(where, "checkpoints", "a list of Variables",
                                   f"{repr(checkpoints)[:60]} ({type(checkpoints).__name__})"))
    _check_names(where, "no_grad_set", no_grad_set)
    _check_names(where, "parameter_list", parameter_list)
    glob = loss.block.program.global_block()
    for item in parameter_list or ():
        name = item.name if isinstance(item, Variable) else item
        if glob._find_var_recursive(name) is None:
            raise NotFound(expected(where, "parameter_list", "names of variables of the "
                                    "loss's program", f"'{name}', which it does not have"))
    _check_scalar_loss(loss)


@transactional_on(_program_of)
def append_backward_with_checkpoints(loss, checkpoints, parameter_list=None, no_grad_set=None):
    """``append_backward`` with recomputation between ``checkpoints`` (see the module
    docstring); returns ``[(parameter, gradient)]`` as ``append_backward`` does.

    Example::

        hidden = fluid.layers.fc(x, 64, act="relu")
        loss = fluid.layers.mean(fluid.layers.fc(hidden, 1))
        params_grads = append_backward_with_checkpoints(loss, [hidden])
    """
    _check(loss, checkpoints, parameter_list, no_grad_set)
    block, program = loss.block, loss.block.program
    writer = [i for i, op in enumerate(block.ops) if loss.name in op.output_arg_names]
    if not writer:
        raise NotFound(f"append_backward: loss '{loss.name}' expected to be computed by an op "
                       f"of its block, but no op writes it")
    no_grad = _stop_gradient_names(program) | _names(no_grad_set) | {
        name for name, var in block.vars.items() if not _carries_gradient(var)}
    loss_op = block.ops[writer[-1]]
    path = _op_path(block, loss.name, no_grad, writer[-1])
    seeded = _seed_dropouts(block, path)
    try:
        uses = _Uses(path)
        names = uses.sort(list(dict.fromkeys(c.name for c in checkpoints)))
        segments = _segments(uses, names) if names else []
        kept = _kept(block, path, uses, segments)
        specs, renamed = _emit(block, path, segments, names, kept, no_grad)
        loss_grad = grad_var_name(loss.name)
        specs = _drop_no_grad_branches(specs, no_grad)
        specs = _sum_repeated_and_fill_missing(block, specs, {loss_grad})
        block.create_var(name=loss_grad, shape=loss.shape, dtype=loss.dtype)
        block.append_op(type="fill_constant", outputs={"Out": [loss_grad]},
                        attrs={"shape": list(loss.shape), "value": 1.0,
                               "dtype": int(loss.dtype), "force_cpu": False,
                               "op_role": OP_ROLE_BACKWARD | OP_ROLE_LOSS})
        for old, new in renamed.items():
            var = block._find_var_recursive(old)
            block.create_var(name=new, shape=var.shape, dtype=var.dtype,
                             lod_level=var.lod_level, type=var.type)
        _append_specs(block, specs)
        params_grads = _params_and_grads(program, block, parameter_list, loss)
    except BaseException:
        _unseed(block, seeded)  # inserted, not appended: the transaction cannot undo it
        raise
    loss_op.attrs["op_role"] = OP_ROLE_FORWARD | OP_ROLE_LOSS
    _mark_role_vars(block, params_grads)
    program._changed()
    return params_grads


# fluid.append_backward(loss, checkpoints=...) hands its checkpoints to this rule
backward.attach_checkpointed_backward(append_backward_with_checkpoints)
