"""All-or-nothing program rewrites: a rewrite that fails leaves its programs as they were.

A transpiler rewrites the user's programs in place (ops inserted in the middle, variables
renamed, ops deleted, attributes set), so truncating to the lengths before the call (what
layer transactions do, where everything is appended) is not enough. A snapshot here keeps,
for each block, its op and variable objects in order, and each op's slots and attributes
and each variable's fields as copies; restoring puts the same objects back with those
contents. Objects the user holds (the loss variable, a parameter) stay the program's own.
"""
import contextlib

from ...framework import unique_name


def _copied(value):
    """A copy of a slot map, an attribute value or a field deep enough that the rewrite's
    in-place edits (renaming an argument in a slot's list) do not reach it."""
    if isinstance(value, dict):
        return {k: _copied(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copied(v) for v in value]
    return value


def _op_state(op):
    return (op, _copied(op.inputs), _copied(op.outputs), _copied(op.attrs),
            dict(op.attr_types), op.is_target)


def _block_state(block):
    fields = {k: v for k, v in vars(block).items() if k not in ("ops", "vars")}
    return (block, fields, list(block.ops), list(block.vars.items()),
            [_op_state(op) for op in block.ops],
            [(var, dict(vars(var))) for var in block.vars.values()])


def snapshot(program):
    """What :func:`restore` needs to put ``program`` back as it is now."""
    fields = {k: v for k, v in vars(program).items()
              if k not in ("blocks", "_plans", "_version")}
    return (program, fields, [_block_state(block) for block in program.blocks])


def restore(state):
    """Put the program of ``state`` (from :func:`snapshot`) back as it was then."""
    program, fields, blocks = state
    vars(program).update(fields)
    program.blocks[:] = [block for block, *_ in blocks]
    for block, block_fields, ops, variables, op_states, var_states in blocks:
        vars(block).update(block_fields)
        block.ops[:] = ops
        block.vars.clear()
        block.vars.update(variables)
        for op, inputs, outputs, attrs, attr_types, is_target in op_states:
            op.inputs, op.outputs, op.attrs = inputs, outputs, attrs
            op.attr_types, op.is_target = attr_types, is_target
        for var, var_fields in var_states:
            vars(var).clear()
            vars(var).update(var_fields)
    program._plans.clear()
    program._changed()


@contextlib.contextmanager
def all_or_nothing(owner, *programs):
    """Run the block as one rewrite of ``programs`` by ``owner`` (the transpiler): if it
    raises, the programs, the owner's attributes and the unique-name counters are put back
    as they were before it began."""
    states = [snapshot(p) for p in dict.fromkeys(programs)]  # each program once
    owner_fields = dict(vars(owner))
    generator = unique_name._generator
    counters = dict(generator.ids)
    try:
        yield
    except BaseException:
        for state in states:
            restore(state)
        vars(owner).clear()
        vars(owner).update(owner_fields)
        generator.ids.clear()
        generator.ids.update(counters)
        raise
