"""``while`` and ``while_grad`` as C++: a sub-block is a function run in a loop, over records
that stand for the interpreter's step scopes (exec/control_flow.py is the specification).

``while`` runs its body's function while ``Condition`` holds. The body's variables that
its ``while_grad``'s grad body reads live in a record per step (``Block<b>Step``), kept in
the ``StepScopes`` variable; the others in one record all steps share. With ``is_test``
(or no StepScopes) one record serves every step.

``while_grad`` runs the grad body over the kept records, last step first. Its variables are
those of its own record, the step's record and block 0, as the interpreter finds them in
the step scope and above, with the interpreter's three ways a gradient crosses steps:

- an incoming output gradient (``original_output_grad``) is the outer ``Out@GRAD`` itself,
  and a loop-carried one (an ``X@GRAD`` that is also an ``Out@GRAD``) is written there, so
  the next (earlier) step reads what this one left;
- the gradient of an input array is one outer array every step writes its slot of;
- any other input's gradient is the step's own, summed into the outer ``X@GRAD`` (the last
  step's first); one no step gave is zeros shaped like the input.

A body is compiled whole or not at all (an op without native code inside a loop cannot run
in the interpreter between compiled ones), and loops inside loops are not compiled.
"""
import collections

from ...exec.executor import names_in_block
from ...framework.blocks import block_attrs, sub_block
from ...framework.program import EMPTY_VAR_NAME, grad_var_name
from ...ops.control_flow import grad_pairs
from .emitter_table import NoEmitter, emitter


def _body(op, env):
    if not env.dynamic:
        raise NoEmitter("a sub-block in a program specialised without them")
    if env.block != 0:
        raise NoEmitter("a loop inside a sub-block (nested loops are not compiled)")
    program = env.program.program
    block = sub_block(op)
    for inner in block.ops:
        if block_attrs(inner):
            raise NoEmitter(f"{inner.type} in block {block.idx}: a sub-block inside a loop "
                            f"body (nested sub-blocks are not compiled)")
    return program, block


def _no_copy_names(program, block):
    """What a step scope need not snapshot (the interpreter's rule): parameters and what
    one op of the body both reads and writes (an in-place counter)."""
    names = {v.name for v in program.global_block().vars.values() if v.is_parameter}
    for op in block.ops:
        names |= set(op.input_arg_names) & set(op.output_arg_names)
    return names


def _resets(slots, names, gen):
    """Each step starts with empty arrays and tables of its own, as a fresh step scope
    (block 0's, which a grad body writes through, keep theirs)."""
    lines = []
    for name in names:
        slot = slots[name]
        if slot.record != "State" and slot.kind in ("array", "rank_table") \
                and slot in gen.records.get(slot.record, ()):
            lines.append(f"{slot.home}.{slot.identifier}."
                         f"{'reset' if slot.kind == 'array' else 'clear'}();")
    return lines


@emitter("while")
def _while(op, env):
    program, block = _body(op, env)
    gen = env.program
    steps = tuple(n for n in op.outputs.get("StepScopes") or () if n != EMPTY_VAR_NAME)
    keeps = steps and not op.attrs.get("is_test", False)
    grad_bodies = [sub_block(other)
                   for any_block in program.blocks for other in any_block.ops
                   if keeps and other.type == "while_grad"
                   and other.inputs.get("StepScopes") == steps]
    read_later = set().union(*[names_in_block(body, writes=False) for body in grad_bodies])
    # a step's gradient reads the outer tensors as they were when the step ran: the
    # interpreter snapshots them in the step scope; compiled code reads them as they are
    written_outside = {n for inner in block.ops for n in inner.output_arg_names
                       if n not in block.vars and env.kind(n) == "dense"}
    changed = sorted((written_outside & read_later) - _no_copy_names(program, block))
    if changed:
        raise NoEmitter(f"the gradient reads {changed}, which the body changes (step "
                        f"snapshots are not compiled)")
    record = f"Block{block.idx}Step"
    temp, temp_home = gen.temp_record(block.idx)
    own = {}
    for name, var in block.vars.items():
        if name in read_later:
            own[name] = gen.new_slot(var, "k", record)
        else:
            own[name] = gen.new_slot(var, temp_home, temp)
    slots = collections.ChainMap(own, env.slots)
    gen.declare_record(record)
    params = f"State& s, {record}& k"
    calls = gen.compile_block(block.idx, slots, params)
    runner = gen.runner(f"fluid_{gen.target}_block_{block.idx}", params, "s, k", calls,
                        record_resets=_resets(slots, own, gen))
    condition = env.tensor(op.inputs["Condition"][0])
    env.kernel_sets(*(n for args in op.outputs.values() for n in args))
    if keeps:
        scopes = env.slot(steps[0])
        scopes.cxx_type = f"StepScopes<{record}>"
        gen.loops[steps[0]] = (block.idx, record, slots)
        return [f"{scopes.identifier}.count = 0;",
                f"while (condition({condition})) {runner}(s, {scopes.identifier}.next());"]
    single = gen.record_slot(f"{record}@single", record)
    env.use_slot(single)
    return [f"while (condition({condition})) {runner}(s, {single.identifier});"]


def _added_directly(grad_block, sums, og_alias):
    """The summed gradients the one op writing them (a mul_grad, as its Y@GRAD) may add into
    the total itself: written by no other op, read by none, not an incoming gradient."""
    writers = collections.Counter(n for op in grad_block.ops for n in op.output_arg_names)
    read = {n for op in grad_block.ops for n in op.input_arg_names}
    return {inside for inside, _, _ in sums
            if writers[inside] == 1 and inside not in read and inside not in og_alias
            and any(op.type == "mul_grad" and (op.outputs.get("Y@GRAD") or [None])[0] == inside
                    for op in grad_block.ops)}


def _transposes(grad_block, slots, env, gen):
    """The parameters (2-D, not written in the grad body) that its mul_grads multiply a
    live dOut by, transposed: made once before the loop, as gen.transposes says."""
    written = {n for op in grad_block.ops for n in op.output_arg_names}
    made = []
    for op in grad_block.ops:
        if op.type != "mul_grad" or op.attrs.get("y_num_col_dims", 1) != 1:
            continue
        y, dx = op.inputs["Y"][0], (op.outputs.get("X@GRAD") or [None])[0]
        param = slots.get(y)
        if param is None or not param.fixed or len(param.shape) != 2 or y in written \
                or not dx or env.dead(dx) or (grad_block.idx, y) in gen.transposes:
            continue
        made_here = gen.transposes[(grad_block.idx, y)] = gen.transpose_slot(param)
        env.slot(y)  # the while_grad function reads it
        made.append((param, made_here))
    return made


@emitter("while_grad")
def _while_grad(op, env):
    program, grad_block = _body(op, env)
    gen = env.program
    steps = op.inputs.get("StepScopes") or []
    loop = gen.loops.get(steps[0]) if steps else None
    if loop is None:
        raise NoEmitter("its while op was not compiled with step scopes kept")
    _, record, body_slots = loop
    x_names, x_grads = op.inputs.get("X") or [], op.outputs.get("X@GRAD") or []
    inside_ogs = list(op.attrs.get("original_output_grad") or ())
    outside_ogs = op.inputs.get("Out@GRAD") or []
    if len(inside_ogs) != len(outside_ogs):
        raise NoEmitter(f"attribute 'original_output_grad' names {len(inside_ogs)} gradients "
                        f"for {len(outside_ogs)} Out@GRAD")
    og_alias = dict(zip(inside_ogs, outside_ogs))
    carried = set(outside_ogs)
    own, sums, shared = {}, [], []
    for k, j in grad_pairs(x_names, x_grads):
        inside, outside = grad_var_name(x_names[k]), x_grads[j]
        if env.dead(outside):  # nobody reads this gradient: no step computes it
            continue
        outer = env.slot(outside)
        if outside in carried:
            if og_alias.get(inside, outside) != outside:
                raise NoEmitter(f"{outside} flows between steps under two names")
            own[inside] = outer
        elif outer.kind == "array":
            own[inside] = outer
            shared.append((outer, x_names[k]))
        elif outer.kind == "dense":
            sums.append((inside, outer, x_names[k]))
        else:
            raise NoEmitter(f"the gradient {outside} is a {outer.kind}")
    for inside, outside in og_alias.items():
        own.setdefault(inside, env.slot(outside))
    temp, temp_home = gen.temp_record(grad_block.idx)
    written = {n for inner in grad_block.ops for n in inner.output_arg_names if "@GRAD" in n}
    for name in sorted(set(grad_block.vars) | written):
        if name in own or name == EMPTY_VAR_NAME:
            continue
        like = body_slots.get(name)
        var = grad_block.vars.get(name)
        if var is None and like is None:
            continue
        own[name] = gen.new_slot(var, temp_home, temp, like)
    slots = collections.ChainMap(own, body_slots)
    direct = _added_directly(grad_block, sums, og_alias)
    for inside, outer, _ in sums:
        if inside in direct:
            gen.accumulators[inside] = outer
    transposes = _transposes(grad_block, slots, env, gen)
    params = f"State& s, {record}& k"
    calls = gen.compile_block(grad_block.idx, slots, params)
    locals_ = [own[inside] for inside, _, _ in sums if inside not in direct]
    for slot in locals_:
        gen.use(slot)
    runner = gen.runner(f"fluid_{gen.target}_block_{grad_block.idx}", params, "s, k", calls,
                        head=[f"{slot.home}.{slot.identifier}.clear();" for slot in locals_],
                        record_resets=_resets(slots, own, gen))
    scopes = env.tensor(steps[0])
    lines = []
    for name in outside_ogs:  # an absent incoming gradient is zeros (an empty array)
        slot = env.slot(name)
        if slot.kind == "dense":
            dims = ", ".join(str(max(int(d), 1)) for d in slot.shape)
            lines.append(f"if (!{slot.identifier}.initialised) {{ {slot.identifier}.resize("
                         f"{{{dims}}}); fill({slot.identifier}.data, {slot.identifier}.numel(),"
                         f" {slot.ctype}(0)); }}")
    for param, made in transposes:
        gen.use(made)
        lines.append(f"transpose({param.identifier}, {param.shape[0]}, {param.shape[1]}, "
                     f"{made.home}.{made.identifier});")
    lines += [f"{outer.identifier}.reset();" for outer, _ in shared]
    lines += [f"{outer.identifier}.clear();" for inside, outer, _ in sums if inside in direct]
    lines += [f"bool started_{n} = false;" for n, (inside, _, _) in enumerate(sums)
              if inside not in direct]
    lines.append(f"for (int64_t t = {scopes}.count; t-- > 0;) {{")
    lines.append(f"  {runner}(s, {scopes}.records[t]);")
    for n, (inside, outer, _) in enumerate(sums):
        if inside not in direct:
            local = own[inside]
            lines.append(f"  accumulate({local.home}.{local.identifier}, {outer.identifier}, "
                         f"started_{n});")
    lines.append("}")
    for n, (inside, outer, x) in enumerate(sums):
        started = f"{outer.identifier}.initialised" if inside in direct else f"started_{n}"
        lines.append(f"if (!{started}) zeros_like({env.tensor(x)}, {outer.identifier});")
    for outer, x in shared:
        lines.append(f"if (!{outer.identifier}.size) zeros_like({env.tensor(x)}, "
                     f"{outer.identifier});")
    lines.append(f"{scopes}.count = 0;  // the step scopes go with the loop's gradient")
    env.kernel_sets(*(n for args in op.outputs.values() for n in args))
    return lines
