"""Backward: append gradient ops to a program, as Fluid does.

``append_backward(loss)`` walks the ops that lead to ``loss`` in reverse and appends, for
each, the grad ops its definition's grad maker names. Along the way:

- the loss gradient starts as ``fill_constant(1.0)`` named ``<loss>@GRAD``;
- ops whose inputs need no gradient, or whose outputs do not reach the loss, are pruned;
- variables with ``stop_gradient`` and those in ``no_grad_set`` get no gradient (their grad
  slots are left empty, as Paddle writes them);
- a variable used by several ops receives several partial gradients: each is renamed
  ``<x>@GRAD@RENAME@block<b>@<k>`` and a ``sum`` op adds them into ``<x>@GRAD`` before the
  first op that reads it;
- a gradient an op needs but no later op produced (an unused output) is zero-filled with
  ``fill_zeros_like``.

The walker handles one block; an op whose definition has the ``has_sub_block`` trait gets its
sub-block differentiated first (``_differentiate_sub_block``), and the grad maker receives the
resulting grad block as ``g.grad_block``, so ``while_grad``/``conditional_block_grad`` plug in
without changing the walk.
"""
from ..errors import InvalidArgument, InvalidType, NotFound, Unimplemented, expected
from ..tensor.dtypes import VarType, is_float_dtype
from ..framework.blocks import block_attrs
from ..framework.program import EMPTY_VAR_NAME, GRAD_SUFFIX, Variable, grad_var_name
from ..framework.transaction import transactional_on
from ..ops import registry

#: Paddle's op roles, written as the ``op_role`` attribute
OP_ROLE_FORWARD, OP_ROLE_BACKWARD, OP_ROLE_OPTIMIZE = 0, 1, 2
OP_ROLE_LR_SCHED, OP_ROLE_LOSS = 16, 256


def _check_names(where, what, items):
    """``items`` must be None or a collection of Variables or variable names."""
    if items is None:
        return
    if not isinstance(items, (list, tuple, set, frozenset)) or not all(
            isinstance(v, (Variable, str)) for v in items):
        raise InvalidType(expected(where, what, "None or a list or set of Variables or "
                                       "variable names", f"{repr(items)[:60]} "
                                       f"({type(items).__name__})"))


def _check_variables(where, what, value, allow_none=False):
    """``value`` must be a Variable or a non-empty list of them (None entries if allowed)."""
    items = value if isinstance(value, (list, tuple)) else [value]
    if not items or not all(isinstance(v, Variable) or (allow_none and v is None)
                            for v in items):
        raise InvalidType(expected(where, what, "a Variable or a non-empty list of "
                                       "Variables", f"{repr(value)[:60]} "
                                       f"({type(value).__name__})"))


def _names(items):
    if items is None:
        return set()
    return {v.name if isinstance(v, Variable) else v for v in items}


def _stop_gradient_names(program):
    return {v.name for v in program.list_vars() if v.stop_gradient}


def _check_scalar_loss(loss):
    shape = loss.shape
    if any(d != 1 for d in shape):
        raise InvalidArgument(f"append_backward: loss '{loss.name}' expected a scalar (shape [] or "
                              f"[1]), but received shape {list(shape)}; reduce it first, e.g. "
                              f"with fluid.layers.mean")
    if not is_float_dtype(loss.dtype):
        raise InvalidArgument(f"append_backward: loss '{loss.name}' expected a floating-point "
                              f"dtype, but received {loss.dtype.name}")


_GRADIENT_KINDS = (VarType.LOD_TENSOR, VarType.LOD_TENSOR_ARRAY, VarType.SELECTED_ROWS)


def _carries_gradient(var):
    """Only floating-point tensors (and arrays of them) have gradients; a rank table, a
    step-scope list or an integer tensor does not."""
    return var is not None and var.type in _GRADIENT_KINDS and is_float_dtype(var.dtype)


def _undone(op, no_grad):
    """An op whose backward undoes it (``increment`` of a counter left differentiable, of
    any dtype): it joins the path so its inverse runs, as Fluid's backward appends it."""
    return ("inverse_in_backward" in registry.get(op.type).traits
            and any(name not in no_grad for name in op.input_arg_names))


def _find_op_path(block, target_names, no_grad, stop_at=None):
    """Ops of ``block`` (up to ``stop_at``) that carry gradient from a variable that needs one
    to a target, in forward order."""
    ops = block.ops if stop_at is None else block.ops[:stop_at + 1]
    produced = {n for op in ops for n in op.output_arg_names}
    needs = set()
    for op in ops:  # forward: which variables depend on something that wants a gradient
        for name in op.input_arg_names:
            if name in no_grad or name in needs:
                continue
            var = block._find_var_recursive(name)
            if not _carries_gradient(var):
                continue
            # Fluid's rule: every variable not stop_gradient (nor in no_grad_set) gets a
            # gradient, whether a parameter, an input left differentiable, or an op's output
            # (a fill_constant whose stop_gradient the user set False)
            if name not in produced or not var.stop_gradient:
                needs.add(name)
        if needs & set(op.input_arg_names):
            for name in op.output_arg_names:
                if name not in no_grad and _carries_gradient(block._find_var_recursive(name)):
                    needs.add(name)
    reach = set(target_names)
    path = []
    for op in reversed(ops):  # backward: which of those reach a target
        outs = set(op.output_arg_names)
        if outs & reach and (needs & set(op.input_arg_names) or _undone(op, no_grad)):
            path.append(op)
            reach |= set(op.input_arg_names)
    path.reverse()
    return path


def _grad_specs_for(op, no_grad):
    opdef = registry.get(op.type)
    if opdef.grad is None:
        return None
    context = registry.GradContext(op, frozenset(no_grad))
    if "has_sub_block" in opdef.traits:
        context.grad_block = _differentiate_sub_block(op, no_grad)
    return opdef.grad(context)


def _differentiate_sub_block(op, no_grad):
    """Backward of an op's sub-block into a new grad block (control-flow ops)."""
    hook = getattr(registry.get(op.type), "sub_block_backward", None)
    if hook is None:
        raise Unimplemented(f"append_backward: op '{op.type}' has a sub-block, and its definition "
                            f"expected a sub_block_backward rule, but has none")
    return hook(op, no_grad)


def _no_grad_error(op, needs_grad):
    raise Unimplemented(f"append_backward: op '{op.type}' lies between the parameters and the "
                        f"loss (its inputs {sorted(needs_grad)} need gradients), so a grad maker "
                        f"expected, but the op has none; set stop_gradient=True on its inputs "
                        f"or define its gradient")


def make_backward_ops(block, op_path, no_grad, available):
    """Grad op specs for ``op_path`` (forward order), reversed, renamed and summed.

    ``available``: gradient names already present (the loss gradient). Returns specs in the
    order they must run.
    """
    specs = []
    for op in reversed(op_path):
        op_specs = _grad_specs_for(op, no_grad)
        if op_specs is None:
            needs = {n for n in op.input_arg_names if n not in no_grad}
            outputs = [block._find_var_recursive(n) for n in op.output_arg_names]
            if needs and any(_carries_gradient(v) for v in outputs):
                _no_grad_error(op, needs)
            continue
        for spec in op_specs:
            _drop_unwanted_grads(spec, no_grad)
            spec.attrs = dict(spec.attrs)
            spec.attrs["op_role"] = OP_ROLE_BACKWARD
            specs.append(spec)
    return _sum_repeated_and_fill_missing(block, specs, available)


def _drop_unwanted_grads(spec, no_grad):
    """A grad op writes no gradient of a ``no_grad`` variable. In a list slot the others
    keep their places, the unwanted ones named EMPTY_VAR_NAME (as Fluid's makers keep a
    duplicable input's gradients: concat_grad's k-th output is X[k]'s); a slot with none
    wanted is dropped."""
    for slot, args in spec.outputs.items():
        named = [EMPTY_VAR_NAME if a == EMPTY_VAR_NAME or a[:-len(GRAD_SUFFIX)] in no_grad
                 else a for a in args]
        spec.outputs[slot] = named if any(a != EMPTY_VAR_NAME for a in named) else []


def _sum_repeated_and_fill_missing(block, specs, available):
    writers = {}  # grad name -> [(spec, slot, index)]
    for spec in specs:
        reads = {n for args in spec.inputs.values() for n in args}
        for slot, args in spec.outputs.items():
            for i, name in enumerate(args):
                if name in reads or name == EMPTY_VAR_NAME:  # in place (while_grad's
                    continue  # loop-carried gradient) updates the one value, not a partial
                writers.setdefault(name, []).append((spec, slot, i))
    repeated = {n for n, w in writers.items() if len(w) > 1}
    renamed = {}
    for name in repeated:
        parts = []
        for k, (spec, slot, i) in enumerate(writers[name]):
            new = f"{name}@RENAME@block{block.idx}@{k}"
            spec.outputs[slot][i] = new
            parts.append(new)
        renamed[name] = parts
    # Every writer of x@GRAD is a grad op of a consumer of x, so in reverse order all of them
    # come before the first reader (the grad op of x's producer): sum there, or at the end.
    result = []
    produced = set(available)
    pending = dict(renamed)
    for spec in specs:
        for args in spec.inputs.values():
            for name in args:
                if not name.endswith(GRAD_SUFFIX) or name in produced:
                    continue
                if name in pending:
                    result.append(_sum_spec(name, pending.pop(name)))
                elif name not in writers and block._find_var_recursive(
                        name[:-len(GRAD_SUFFIX)]) is not None:
                    result.append(registry.GradOpSpec(
                        "fill_zeros_like", {"X": [name[:-len(GRAD_SUFFIX)]]}, {"Out": [name]},
                        {"op_role": OP_ROLE_BACKWARD}))
                produced.add(name)
        result.append(spec)
        for args in spec.outputs.values():
            produced.update(args)
    for name, parts in pending.items():
        result.append(_sum_spec(name, parts))
    return result


def _sum_spec(name, parts):
    return registry.GradOpSpec("sum", {"X": parts}, {"Out": [name]},
                               {"op_role": OP_ROLE_BACKWARD})


def _append_specs(block, specs):
    ops = []
    for spec in specs:
        for args in spec.outputs.values():
            for name in args:
                if name == EMPTY_VAR_NAME or block._find_var_recursive(name) is not None:
                    continue
                base = name.split("@GRAD")[0]
                forward = block._find_var_recursive(base)
                if forward is not None:
                    block.create_var(name=name, shape=forward.shape, dtype=forward.dtype,
                                     lod_level=forward.lod_level, type=forward.type)
                else:
                    block.create_var(name=name)
        ops.append(block.append_op(type=spec.type, inputs=spec.inputs, outputs=spec.outputs,
                                   attrs=spec.attrs))
    return ops


def _program_of(*args, **kwargs):
    """The program of the loss / first target (none known: the default programs)."""
    first = args[0] if args else kwargs.get("loss", kwargs.get("targets"))
    first = first[0] if isinstance(first, (list, tuple)) and first else first
    block = getattr(first, "block", None)
    return [block.program] if block is not None else []


def _checkpointed_backward(loss, checkpoints, parameter_list, no_grad_set):
    raise Unimplemented(expected("append_backward", "checkpoints", "the recompute rule "
                                 "(fluid_nb.autodiff.recompute, imported with fluid_nb)",
                                 "none attached"))


def attach_checkpointed_backward(rule):
    """``rule(loss, checkpoints, parameter_list, no_grad_set)``: backward with recomputation,
    which ``append_backward`` hands ``checkpoints`` to."""
    global _checkpointed_backward
    _checkpointed_backward = rule


@transactional_on(_program_of)
def append_backward(loss, parameter_list=None, no_grad_set=None, callbacks=None,
                    checkpoints=None):
    """Append the backward pass of ``loss`` to its program.

    Returns ``[(parameter, gradient variable)]`` for the trainable parameters that the loss
    depends on, in the order they were created, or for those of ``parameter_list`` in its
    order, as Fluid returns them (the optimizers sort by name when they apply them).
    With ``checkpoints`` (Variables), the activations between them are recomputed in the
    backward pass rather than kept (see :mod:`fluid_nb.autodiff.recompute`). ``callbacks`` are
    accepted for compatibility and not called.
    """
    if not isinstance(loss, Variable):
        raise InvalidType(f"append_backward: loss expected Variable, but received "
                          f"{type(loss).__name__}")
    _check_names("append_backward", "no_grad_set", no_grad_set)
    _check_names("append_backward", "parameter_list", parameter_list)
    if parameter_list is not None:
        glob = loss.block.program.global_block()
        for item in parameter_list:
            name = item.name if isinstance(item, Variable) else item
            if glob._find_var_recursive(name) is None:
                raise NotFound(expected("append_backward", "parameter_list",
                                        "names of variables of the loss's program",
                                        f"'{name}', which it does not have"))
    if callbacks is not None and (not isinstance(callbacks, (list, tuple)) or not all(
            callable(c) for c in callbacks)):
        raise InvalidType(expected("append_backward", "callbacks",
                                   "None or a list of functions", repr(callbacks)[:60]))
    _check_scalar_loss(loss)
    if checkpoints:  # recompute.py, attached from above (it builds on this module)
        return _checkpointed_backward(loss, checkpoints, parameter_list, no_grad_set)
    block = loss.block
    program = block.program
    no_grad = _stop_gradient_names(program) | _names(no_grad_set)
    writer = [i for i, op in enumerate(block.ops) if loss.name in op.output_arg_names]
    if not writer:
        raise NotFound(f"append_backward: loss '{loss.name}' expected to be computed by an op "
                       f"of its block, but no op writes it")
    loss_index = writer[-1]
    block.ops[loss_index].attrs["op_role"] = OP_ROLE_FORWARD | OP_ROLE_LOSS
    op_path = _find_op_path(block, [loss.name], no_grad, stop_at=loss_index)
    loss_grad = grad_var_name(loss.name)
    first_new_op = len(block.ops)
    block.create_var(name=loss_grad, shape=loss.shape, dtype=loss.dtype)
    block.append_op(type="fill_constant", outputs={"Out": [loss_grad]},
                    attrs={"shape": list(loss.shape), "value": 1.0, "dtype": int(loss.dtype),
                           "force_cpu": False, "op_role": OP_ROLE_BACKWARD | OP_ROLE_LOSS})
    specs = make_backward_ops(block, op_path, no_grad, {loss_grad})
    _append_specs(block, specs)
    written = {n for op in block.ops[first_new_op:] for n in op.output_arg_names}
    params_grads = _params_and_grads(program, block, parameter_list, loss, written)
    _mark_role_vars(block, params_grads)
    program._changed()
    return params_grads


def _mark_role_vars(block, params_grads):
    """Paddle's ``op_role_var`` = [param, grad] on the op that writes each gradient last
    (the transpiler and the optimizers find a parameter's gradient op by it)."""
    wanted = {grad.name for _, grad in params_grads}
    last_writer = {}
    for op in reversed(block.ops):  # one pass, not one per parameter: a program's
        for name in op.output_arg_names:  # backward grows with its size squared otherwise
            if name in wanted and name not in last_writer:
                last_writer[name] = op
        if len(last_writer) == len(wanted):
            break
    for param, grad in params_grads:
        op = last_writer.get(grad.name)
        if op is not None:
            op.attrs["op_role_var"] = [param.name, grad.name]


def _params_and_grads(program, block, parameter_list, loss, written=None):
    """The (parameter, gradient) pairs of this backward pass; with ``written`` (the names
    its ops write), a gradient left by an earlier pass (another loss's) is not one."""
    if parameter_list is not None:
        names = [p.name if isinstance(p, Variable) else p for p in parameter_list]
        params = [program.global_block().var(n) for n in names]
    else:
        params = [p for p in program.global_block().all_parameters() if p.trainable]
    result = []
    for param in params:
        grad_name = grad_var_name(param.name)
        if block._find_var_recursive(grad_name) is None or (
                written is not None and grad_name not in written):
            if parameter_list is not None:
                raise InvalidArgument(f"append_backward: parameter '{param.name}' expected a "
                                      f"path to loss '{loss.name}', but the loss does not "
                                      f"depend on it (or it is marked stop_gradient)")
            continue
        result.append((param, block._find_var_recursive(grad_name)))
    return result


@transactional_on(_program_of)
def gradients(targets, inputs, target_gradients=None, no_grad_set=None):
    """Gradients of ``sum(targets * target_gradients)`` with respect to ``inputs``.

    Returns one gradient variable per input (None where the targets do not depend on it).
    ``target_gradients`` default to ones of each target's shape.
    """
    _check_variables("gradients", "targets", targets)
    _check_variables("gradients", "inputs", inputs)
    if target_gradients is not None:
        _check_variables("gradients", "target_gradients", target_gradients, allow_none=True)
    _check_names("gradients", "no_grad_set", no_grad_set)
    targets = targets if isinstance(targets, (list, tuple)) else [targets]
    inputs = inputs if isinstance(inputs, (list, tuple)) else [inputs]
    if target_gradients is not None and not isinstance(target_gradients, (list, tuple)):
        target_gradients = [target_gradients]
    if target_gradients is not None and len(target_gradients) != len(targets):
        raise InvalidArgument(expected("gradients", "target_gradients",
                                       f"one per target ({len(targets)})",
                                       f"{len(target_gradients)}"))
    block = targets[0].block
    program = block.program
    no_grad = (_stop_gradient_names(program) | _names(no_grad_set)) - {v.name for v in inputs}
    last = max(i for i, op in enumerate(block.ops)
               if set(op.output_arg_names) & {t.name for t in targets})
    available = set()
    for k, target in enumerate(targets):
        name = grad_var_name(target.name)
        given = target_gradients[k] if target_gradients is not None else None
        if given is None:
            block.create_var(name=name, shape=target.shape, dtype=target.dtype)
            shape = [d if d >= 0 else 1 for d in target.shape]
            if any(d < 0 for d in target.shape):
                block.append_op(type="fill_any_like", inputs={"X": [target]},
                                outputs={"Out": [name]},
                                attrs={"value": 1.0, "op_role": OP_ROLE_BACKWARD})
            else:
                block.append_op(type="fill_constant", outputs={"Out": [name]},
                                attrs={"shape": shape, "value": 1.0, "dtype": int(target.dtype),
                                       "op_role": OP_ROLE_BACKWARD})
        else:
            block.create_var(name=name, shape=given.shape, dtype=given.dtype)
            block.append_op(type="assign", inputs={"X": [given]}, outputs={"Out": [name]},
                            attrs={"op_role": OP_ROLE_BACKWARD})
        available.add(name)
    op_path = _find_op_path(block, [t.name for t in targets], no_grad, stop_at=last)
    _append_specs(block, make_backward_ops(block, op_path, no_grad, available))
    program._changed()
    return [block._find_var_recursive(grad_var_name(v.name)) for v in inputs]


calc_gradient = gradients


# --- backward of a sub-block -------------------------------------------------------------------
def _sub_block_op_path(block, targets, no_grad):
    """Ops of ``block`` that carry gradient to ``targets``, plus in-place ``increment`` ops
    of counters: their reverse restores the counter step by step in the backward pass. A
    counter not in ``no_grad`` always (the device DynamicRNN uses with
    ``step_idx.stop_gradient = False``); one in it when an op of the path reads it (a
    tensor-array index), as Paddle keeps in a while block the ops that write what the
    path reads."""
    needs, written = set(), set()
    for op in block.ops:
        for name in op.input_arg_names:
            var = block._find_var_recursive(name)
            if name not in no_grad and name not in written and var is not None \
                    and (is_float_dtype(var.dtype) or var.type == VarType.LOD_TENSOR_ARRAY):
                needs.add(name)  # read before any write in this step: comes from outside
        if needs & set(op.input_arg_names):
            for name in op.output_arg_names:
                var = block._find_var_recursive(name)
                if name not in no_grad and var is not None and (
                        is_float_dtype(var.dtype) or var.type == VarType.LOD_TENSOR_ARRAY):
                    needs.add(name)
        written |= set(op.output_arg_names)
    def in_place_counter(op):
        return op.type == "increment" and op.input("X") == op.output("Out")

    reach, path = set(targets), []
    for op in reversed(block.ops):
        counter = in_place_counter(op) and op.input("X")[0] not in no_grad
        if counter or (set(op.output_arg_names) & reach and needs & set(op.input_arg_names)):
            path.append(op)
            reach |= set(op.input_arg_names)
    path.reverse()
    read = {name for op in path if not in_place_counter(op) for name in op.input_arg_names}
    return [op for op in block.ops if op in path or (
        in_place_counter(op) and op.input("X")[0] in read)]


def _sub_block_grad_specs(block, path, no_grad, available):
    specs = []
    increment_has_grad = registry.get("increment").grad is not None
    for op in reversed(path):
        if op.type == "increment" and op.input("X") == op.output("Out") and \
                not increment_has_grad:
            specs.append(registry.GradOpSpec(
                "increment", {"X": op.output("Out")}, {"Out": op.input("X")},
                {"step": -float(op.attrs.get("step", 1.0)),
                 "op_role": OP_ROLE_BACKWARD}))
            continue
        op_specs = _grad_specs_for(op, no_grad)
        if op_specs is None:
            continue  # comparisons, counters: nothing to differentiate
        for spec in op_specs:
            _drop_unwanted_grads(spec, no_grad)
            spec.attrs = dict(spec.attrs)
            spec.attrs["op_role"] = OP_ROLE_BACKWARD
            specs.append(spec)
    return _sum_repeated_and_fill_missing(block, specs, available)


def sub_block_backward(op, no_grad):
    """The grad block of ``op``'s sub-block: the backward walk of the forward sub-block
    towards the op's ``Out`` variables, whose gradients come from outside."""
    program = op.block.program
    forward = program.block(op.attrs["sub_block"])
    current = program.current_block_idx
    # Paddle's grad block has parent op.block and forward_block_idx = forward.idx; our Block
    # lookup climbs parents only, so the grad block hangs under the forward block to see its
    # variables at compile time (Block._find_var_recursive could also try forward_block_idx).
    grad_block = program._create_block(parent_idx=forward.idx)
    grad_block.forward_block_idx = forward.idx
    program.current_block_idx = current
    outs = [n for n in op.output("Out") if n != EMPTY_VAR_NAME]
    available = set()
    for name in outs:  # the gradients flowing in from outside, declared where they are read
        var = forward._find_var_recursive(name)
        gname = grad_var_name(name)
        available.add(gname)
        if var is not None and grad_block._find_var_recursive(gname) is None:
            grad_block.create_var(name=gname, shape=var.shape, dtype=var.dtype,
                                  lod_level=var.lod_level, type=var.type)
    path = _sub_block_op_path(forward, outs, set(no_grad))
    specs = _sub_block_grad_specs(forward, path, set(no_grad), available)
    _append_specs(grad_block, specs)
    return grad_block


for _op_type in ("while", "conditional_block"):
    registry.attach_sub_block_backward(_op_type, sub_block_backward)


# --- Fluid 1.8's module-level helpers, over the same rules as the walk above ---------------
def _append_grad_suffix_(name):
    """``name@GRAD``."""
    return grad_var_name(name)


def _strip_grad_suffix_(name):
    """The forward name of a gradient: ``x@GRAD`` and ``x@GRAD@RENAME@...`` give ``x``."""
    pos = name.find(GRAD_SUFFIX)
    return name[:pos] if pos != -1 else name


def _get_stop_gradients_(program):
    """{block index: {``v@GRAD`` for every variable v of the block with stop_gradient}}."""
    return {block.idx: {grad_var_name(v.name) for v in block.vars.values() if v.stop_gradient}
            for block in program.blocks}


def _has_gradient_rule(op_type):
    opdef = registry.find(op_type)
    return opdef is not None and opdef.grad is not None


def _find_op_path_(block, outputs, inputs, no_grad_set):
    """The ops of ``block`` between ``inputs`` (all of the block's inputs when empty) and
    ``outputs``, in program order: an op is on the path when it has a gradient rule, reads
    what the path from ``inputs`` reaches and writes what ``outputs`` depend on (names in
    ``no_grad_set`` do not propagate). With ``inputs``, the stop_gradient variables the path
    reads but ``inputs`` do not reach are added to ``no_grad_set``."""
    no_grad_set = set() if no_grad_set is None else no_grad_set
    from_inputs = {v.name for v in inputs}
    to_outputs = {v.name for v in outputs}
    keep = [True] * len(block.ops)
    if inputs:
        for i, op in enumerate(block.ops):
            if from_inputs & set(op.input_arg_names) and _has_gradient_rule(op.type):
                from_inputs |= set(op.output_arg_names) - no_grad_set
            else:
                keep[i] = False
    for i in reversed(range(len(block.ops))):
        op = block.ops[i]
        if to_outputs & set(op.output_arg_names) and _has_gradient_rule(op.type):
            to_outputs |= set(op.input_arg_names) - no_grad_set
        else:
            keep[i] = False
    path = [op for op, kept in zip(block.ops, keep) if kept]
    if inputs:
        for op in path:
            for name in op.input_arg_names:
                if name not in from_inputs and block.var(name).stop_gradient:
                    no_grad_set.add(name)
    return path


def _find_no_grad_vars(block, op_path, targets, no_grad_set):
    """Outputs of ``op_path`` that nothing later on the path (nor ``targets``) reads and that
    are not stop_gradient: their gradients are known to be 0."""
    used = {v.name for v in targets}
    unused = set()
    for op in reversed(op_path):
        if not block_attrs(op):
            reads = set(op.input_arg_names)
            for name in op.output_arg_names:
                if name not in used and name not in reads and not block.var(name).stop_gradient:
                    unused.add(name)
        used |= set(op.input_arg_names) - set(no_grad_set)
    return unused
