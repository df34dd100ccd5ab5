"""``contrib.memory_usage``: an estimate of the memory a program's global block needs for a
batch size, from the shapes of the LoD tensors its ops write."""
from ...errors import InvalidArgument, InvalidType, expected
from ...framework import Program
from ...tensor.dtypes import VarType, dtype_size

__all__ = ["memory_usage"]


def memory_usage(program, batch_size):
    """``(low, high, unit)``: the bytes of every LoD tensor an op of the global block
    writes (each counted once; the one negative dim of a shape ``-k`` stands for
    ``k * batch_size``), in B, KB or MB, plus 5% (low) and 10% (high) for what the
    runtime adds.

    Example::

        low, high, unit = fluid.contrib.memory_usage(main, batch_size=32)
    """
    if not isinstance(program, Program):
        raise InvalidType(expected("memory_usage", "program", "a Program",
                                   type(program).__name__))
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
        raise InvalidArgument(expected("memory_usage", "batch_size", "a positive int",
                                       repr(batch_size)))
    block = program.global_block()
    seen, total = {"@EMPTY@"}, 0.0
    for op in block.ops:
        for name in op.output_arg_names:
            if name in seen:
                continue
            seen.add(name)
            var = block.vars[name]
            if var.type != VarType.LOD_TENSOR:
                continue
            if sum(1 for d in var.shape if d < 0) > 1:
                raise InvalidArgument(expected("memory_usage", f"the shape of '{name}'",
                                               "at most one negative dim", list(var.shape)))
            count = 1
            for d in var.shape:
                count *= batch_size * -d if d < 0 else d
            total += count * dtype_size(var.dtype)
    unit = "B"
    for bigger in ("KB", "MB"):
        if total <= 1024:
            break
        total, unit = total / 1024, bigger
    return total * 1.05, total * 1.1, unit
