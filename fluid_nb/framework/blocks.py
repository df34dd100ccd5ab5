"""The blocks an op runs, and the walk over ops through them.

An op runs sub-blocks (``while``'s body, ``conditional_block``'s branch, ``listen_and_serv``'s
``optimize_blocks``) through its attributes of type BLOCK (one block index) or BLOCKS (a list
of them). Which attributes those are is decided here, once, by the attribute's declared type:

1. the type the op records for it (``op.attr_types``: ops read from a file, unknown ops);
2. else the type the op's definition declares for it (``AttrSpec.type``);
3. else, for an attribute nothing declares, its value (a Block, or a list of Blocks) or its
   conventional name (``sub_block``: one block, ``sub_blocks``: a list).

A name alone never decides for a declared attribute: a ``sub_block`` declared INT is an int.

Invariant: for every op, ``sub_blocks(op) == [b for bs in block_attrs(op).values() for b in bs]``
and ``walk_ops(block)`` yields each op of ``block`` before the ops of its sub-blocks, the
ops of a sub-block right after the op that runs it (depth first, in attribute order).
"""
from ..errors import InvalidArgument, expected
from . import registry
from .attrs import AttrType

__all__ = ["block_attr_indices", "block_attrs", "sub_blocks", "sub_block_indices",
           "sub_block", "walk_ops"]

_BLOCK_KINDS = (AttrType.BLOCK, AttrType.BLOCKS)
_SCALARS = frozenset((int, float, bool, str))
#: what an attribute no one declares holds when it has Fluid's name for a block attribute
_CONVENTIONAL = {"sub_block": AttrType.BLOCK, "sub_blocks": AttrType.BLOCKS}


def _is_block(value):
    return hasattr(value, "idx") and hasattr(value, "ops")


def _block_kind(op, opdef, name, value):
    """BLOCK or BLOCKS when attribute ``name`` of ``op`` (defined by ``opdef``, None for an
    op type fluid_nb does not define) names blocks, else None."""
    kind = op.attr_types.get(name)
    if kind is None:
        spec = opdef.attrs.get(name) if opdef is not None else None
        if spec is not None:
            kind = spec.type
        elif _is_block(value):
            kind = AttrType.BLOCK
        elif isinstance(value, (list, tuple)) and value and all(_is_block(v) for v in value):
            kind = AttrType.BLOCKS
        else:
            kind = _CONVENTIONAL.get(name)
    return kind if kind in _BLOCK_KINDS else None


def block_attr_indices(op):
    """``{attribute name: [block index]}`` for each attribute of ``op`` that names blocks,
    in the op's attribute order: a BLOCK attribute gives one index, a BLOCKS one its list
    (which may be empty: the attribute is still there). Nothing is looked up, so a view
    can show an index its program does not have."""
    found = {}
    opdef = registry.find(op.type)
    plain = opdef.plain_attrs if opdef is not None else ()
    types = op.attr_types
    declared = opdef.attrs if opdef is not None else {}
    for name, value in op.attrs.items():
        recorded = types.get(name) if types else None
        if recorded is not None:
            if recorded not in _BLOCK_KINDS:
                continue  # rule 1
        elif name in plain:
            continue  # declared, and no block (most attributes of most ops): rule 2
        elif value.__class__ in _SCALARS and name not in declared \
                and name not in _CONVENTIONAL:
            continue  # nothing declares it, and a number or string is no block: rule 3
        kind = _block_kind(op, opdef, name, value)
        if kind is not None:
            values = [value] if kind == AttrType.BLOCK else list(value)
            found[name] = [getattr(v, "idx", v) for v in values]
    return found


def block_attrs(op):
    """``{attribute name: [Block]}``: :func:`block_attr_indices` with each index looked up
    in ``op``'s program."""
    indices = block_attr_indices(op)
    if not indices:
        return {}
    program = op.block.program
    return {name: [program.block(i) for i in values] for name, values in indices.items()}


def sub_blocks(op):
    """The blocks ``op`` runs, in attribute order (empty for an op without any)::

        sub_blocks(while_op) == [while_op.block.program.block(while_op.attr("sub_block"))]
    """
    return [block for blocks in block_attrs(op).values() for block in blocks]


def sub_block_indices(op):
    """The indices of the blocks ``op`` runs, in attribute order, none looked up (the
    executor's binder asks for every op of a plan)."""
    return [index for indices in block_attr_indices(op).values() for index in indices]


def sub_block(op):
    """The one block ``op`` runs (``while``, ``conditional_block`` and their grads); an op
    that runs none, or several, is refused with InvalidArgument."""
    blocks = sub_blocks(op)
    if len(blocks) != 1:
        raise InvalidArgument(expected(op.type, "sub-blocks", "exactly one",
                                       f"{len(blocks)} ({sorted(block_attr_indices(op))})"))
    return blocks[0]


def walk_ops(block, nested=True):
    """``(block, index, op)`` for each op of ``block``; with ``nested``, each op is followed
    by the ops of the blocks it runs (and theirs), so ``block`` is always the op's own block
    and ``index`` its place there."""
    for index, op in enumerate(block.ops):
        yield block, index, op
        if nested:
            for inner in sub_blocks(op):
                yield from walk_ops(inner)
