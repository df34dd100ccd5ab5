"""``verify(program)``: the type-check pass every test program goes through.

Checks, per block: every op type is registered; slot names and arities fit the op's
definition; required attributes are present, and present ones have their declared types and pass their
checkers (:func:`attrs.attr_problems`, the check decoding uses too); BLOCK attributes name a
later block (a sub-block, never the op's own block or an ancestor); every input names a declared variable (here or in a parent block);
no temporary is written by two ops unless the second also reads it (an in-place update) or
it is a tensor array (written slot by slot) or the writer runs a sub-block (a branch) or
its value was read since it was last written (its buffer reused, as ``fluid.memory_optimize``
renames a later temporary to a dead one's name); the outputs of an op with the
``control_outputs`` trait only order later ops and count as no write;
re-running every op's infer_shape on a copy reproduces the declared output shapes and dtypes
(a reused buffer may be declared larger than what is written into it: same dtype, and the
written shape fits it as :func:`fits_buffer` says).
All problems are collected and raised together as one InvalidArgument.
"""
from ..errors import FluidError, InvalidArgument, expected
from .attrs import AttrType, attr_problems
from ..tensor.dtypes import VarType
from .infer import shapes_match
from .program import EMPTY_VAR_NAME


def verify(program, check_shapes=True):
    """Raise InvalidArgument listing every problem found in ``program``; return it if clean."""
    from . import registry
    problems = []
    for block in program.blocks:
        written = {}
        consumed = set()  # temporaries read since their last write: their buffer is free
        for index, op in enumerate(block.ops):
            where = f"block {block.idx} op {index} '{op.type}'"
            opdef = registry.find(op.type)
            if opdef is None:
                problems.append(f"{where}: op type expected registered, but it is unknown")
                continue
            try:
                opdef.check_slots(op.inputs, op.outputs)
            except FluidError as exc:
                problems.append(f"{where}: {exc}")
            problems.extend(f"{where}: {message}" for _, message in
                            attr_problems(op.type, op.attrs, op.attr_types, opdef.attrs))
            for name, value in op.attrs.items():
                kind = op.attr_type(name)
                if kind in (AttrType.BLOCK, AttrType.BLOCKS):
                    for idx in ([value] if kind == AttrType.BLOCK else value):
                        idx = getattr(idx, "idx", idx)
                        if not block.idx < idx < len(program.blocks):
                            problems.append(expected(f"{where}: attribute '{name}'",
                                                     "a later block",
                                                     f"in ({block.idx}, {len(program.blocks)})",
                                                     idx))
            for slot, args in op.inputs.items():
                for arg in args:
                    if arg != EMPTY_VAR_NAME and block._find_var_recursive(arg) is None:
                        problems.append(f"{where}: input '{slot}' expected a declared variable, "
                                        f"but '{arg}' is unbound")
            reads = set(op.input_arg_names)
            consumed |= reads
            # an op with a sub-block (a branch, a loop) may overwrite what an earlier op wrote
            overwrites = "has_sub_block" in opdef.traits
            if "control_outputs" in opdef.traits:
                # outputs named only to order later ops (fetch_barrier): nothing is written
                continue
            for slot, args in op.outputs.items():
                for arg in args:
                    if arg == EMPTY_VAR_NAME:
                        continue
                    var = block._find_var_recursive(arg)
                    if var is None:
                        problems.append(f"{where}: output '{slot}' expected a declared "
                                        f"variable, but '{arg}' is not declared")
                        continue
                    # a tensor array is written slot by slot (write_to_array, as in Paddle)
                    if arg in written and not var.persistable and arg not in consumed \
                            and var.type != VarType.LOD_TENSOR_ARRAY and not overwrites:
                        problems.append(f"{where}: output '{slot}' expected a fresh variable, "
                                        f"but '{arg}' was already written by op {written[arg]}")
                    written[arg] = index
            consumed.difference_update(op.output_arg_names)
    if check_shapes and not problems:
        problems.extend(_shape_problems(program, registry))
    if problems:
        raise InvalidArgument("verify: a well-formed program expected, but found:\n  "
                              + "\n  ".join(problems))
    return program


def fits_buffer(shape, buffer):
    """Whether a tensor of ``shape`` fits a buffer declared ``buffer`` (counting elements):
    both fully known and no larger, or -1 in the same positions and the known dims' product
    no larger."""
    if any(d < 0 for d in shape) or any(d < 0 for d in buffer):
        if [i for i, d in enumerate(shape) if d < 0] != [i for i, d in enumerate(buffer)
                                                          if d < 0]:
            return False
    return known_size(shape) <= known_size(buffer)


def known_size(shape):
    """The product of a shape's known dims (-1 counts as 1)."""
    size = 1
    for d in shape:
        if d >= 0:
            size *= d
    return size


def _shape_problems(program, registry):
    twin = program.clone()
    problems = []
    for block in twin.blocks:
        written = set()
        for index, op in enumerate(block.ops):
            # outputs written by an earlier op and not read here: a reused buffer
            outs, ins = op.output_arg_names, op.input_arg_names
            reuses = {a for a in outs if a in written and a not in ins}
            written.update(outs)
            opdef = registry.find(op.type)
            if opdef.infer_shape is None:
                continue
            declared = {a: (block.var_recursive(a).shape, block.var_recursive(a).dtype)
                        for a in op.output_arg_names if a != EMPTY_VAR_NAME}
            try:
                opdef.run_infer_shape(op)
            except FluidError as exc:
                problems.append(f"block {block.idx} op {index} '{op.type}': {exc}")
                continue
            for arg, (shape, dtype) in declared.items():
                var = block.var_recursive(arg)
                if var.persistable and not shape:
                    continue
                if arg in reuses and not var.persistable and var.dtype == dtype and \
                        fits_buffer(var.shape, program.blocks[block.idx].var_recursive(arg).shape):
                    continue
                if not shapes_match(var.shape, shape) or var.dtype != dtype:
                    problems.append(f"block {block.idx} op {index} '{op.type}': output '{arg}' "
                                    f"expected shape {list(var.shape)} {var.dtype.name} (from "
                                    f"infer_shape), but it is declared {list(shape)} "
                                    f"{dtype.name}")
    return problems
