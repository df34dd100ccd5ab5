"""How the distribute transpiler cuts variables into blocks and names the pieces.

A parameter (and its gradient) of ``numel`` elements is cut by rows into at most one block
per server, each block at least ``min_block_size`` elements and a whole number of rows:

    split_count = min(servers, max(1, floor(numel / min_block_size)))
    block_size  = ceil(numel / split_count), rounded up to a multiple of the row width
    blocks      = ceil(numel / block_size), the last one holding what is left

Block ``i`` of ``w`` is the variable ``w.block{i}``; in synchronous training with several
trainers, trainer ``t``'s gradient of it is ``w@GRAD.block{i}.trainer_{t}`` (and an uncut
gradient ``w@GRAD.trainer_{t}``). These are Fluid 1.8's names, which the servers and the
trainers agree on.
"""
import math

BLOCK_SUFFIX = ".block"
TRAINER_SUFFIX = ".trainer_"


class VarBlock:
    """Block ``offset`` of variable ``varname``, ``size`` elements; its string form
    ``"name:offset:size"`` is Fluid's."""

    __slots__ = ("varname", "offset", "size")

    def __init__(self, varname, offset, size):
        self.varname, self.offset, self.size = varname, offset, size

    def __str__(self):
        return f"{self.varname}:{self.offset}:{self.size}"

    __repr__ = __str__


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def slice_variable(var_list, slice_count, min_block_size):
    """The blocks of each variable in ``var_list`` (as ``"name:block_id:size"`` strings, in
    order) when cut for ``slice_count`` servers with blocks of at least ``min_block_size``
    elements (the rule in the module docstring)."""
    blocks = []
    for var in var_list:
        numel = _numel(var.shape)
        split_count = min(slice_count, max(1, numel // min_block_size))
        block_size = -(-numel // split_count)
        if len(var.shape) >= 2:
            width = _numel(var.shape[1:])
            if block_size % width:
                block_size += width - block_size % width
        split_count = math.ceil(numel / block_size)
        for block_id in range(split_count):
            size = min(block_size, numel - block_id * block_size)
            blocks.append(str(VarBlock(var.name, block_id, size)))
    return blocks


def same_or_split_var(piece_name, var_name):
    """Whether ``piece_name`` is ``var_name`` itself or one of its blocks."""
    return piece_name == var_name or piece_name.startswith(var_name + BLOCK_SUFFIX)


def varname_parts(name):
    """(original name, "blockN" or "", "trainer_T" or "") of a block or per-trainer name:
    ``w@GRAD.block1.trainer_0`` -> ("w@GRAD", "block1", "trainer_0")."""
    trainer_at = name.find(TRAINER_SUFFIX)
    trainer = name[trainer_at + 1:] if trainer_at >= 0 else ""
    end = trainer_at if trainer_at >= 0 else len(name)
    block_at = name.find(BLOCK_SUFFIX)
    block = name[block_at + 1:end] if block_at >= 0 else ""
    return name[:min(block_at if block_at >= 0 else len(name), end)], block, trainer


def orig_varname(name):
    """The variable a block or per-trainer name belongs to."""
    return varname_parts(name)[0]
