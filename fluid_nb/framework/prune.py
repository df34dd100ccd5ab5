"""Pruning a program to what some targets need, as Fluid's ``Program._prune_with_input``,
and to its forward part, as ``Program.clone(for_test=True)`` prunes (``prune_backward``).

Walking each block's ops backwards, an op stays when it is a target, or when it writes a
variable a kept op reads and it is not an optimizer op (an optimizer op reads and writes
the parameter, so only a target keeps it). A kept op's inputs become needed, except the
fed variables: their producers go. An op with a sub-block keeps it, pruned the same way
from the names the op reads and writes. Each block keeps only the variables its kept ops
name (and fed targets, so a fed variable can still be fetched); blocks are renumbered in
the order they are reached, as Paddle's ``Prune`` does.

The executor's side (``Executor.run(use_prune=True)``, optimizer ops in ``fetch_list``) is
here too: splitting the fetch list, the cache key of a pruned program, and the feed that is
left once pruned-away variables are gone.
"""
import warnings

from ..errors import InvalidArgument, InvalidType, expected
from .attrs import AttrType

#: the ``op_role`` bit of optimizer ops (Paddle's ``OpRole.Optimize``)
OP_ROLE_OPTIMIZE = 2
#: the roles a test program drops (Backward, Optimize, LRSched) and the loss gradient's
#: role (Backward | Loss), whose op tells that a program has a backward part at all
NOT_FORWARD, LOSS_GRAD = 0x0001 | 0x0002 | 0x0010, 0x0001 | 0x0100


def is_optimize_op(op):
    return bool(int(op.attrs.get("op_role", 0) or 0) & OP_ROLE_OPTIMIZE)


def prune_with_input(program, feeded_var_names, targets):
    """A new program with only the ops ``targets`` need when ``feeded_var_names`` are fed.

    ``targets`` are Variables, names or Operators (an optimizer op to run). A named target
    stands for the first op of the global block that writes it (optimizer ops only when
    they are targets themselves); a fed target needs no op.
    """
    from .program import Operator, Variable
    if not isinstance(feeded_var_names, (list, tuple)):
        feeded_var_names = [feeded_var_names]
    if not isinstance(targets, (list, tuple)):
        targets = [targets]
    # a list among the targets (a fetch of fluid.gradients' result) stands for its members
    targets = [t for item in targets for t in (item if isinstance(item, (list, tuple))
                                                else [item])]
    where = "Program._prune_with_input"
    for name in feeded_var_names:
        if not isinstance(name, str):
            raise InvalidType(expected(where, "feeded_var_names", "a list of names (str)",
                                       f"{name!r} ({type(name).__name__})"))
    feeds = set(feeded_var_names)
    target_ops = [t for t in targets if isinstance(t, Operator)]
    chosen, fed_targets = set(), []
    for target in targets:
        if isinstance(target, Operator):
            if target.block.program is not program:
                raise InvalidArgument(expected(where, "target op", "an op of this program",
                                               f"'{target.type}' of another program"))
            chosen.add(id(target))
            continue
        if isinstance(target, Variable):
            name = target.name
        elif isinstance(target, str):
            name = target
        else:
            raise InvalidType(expected(where, "targets", "Variables, names or Operators",
                                       f"{target!r} ({type(target).__name__})") +
                              " (All targets of Program._prune_with_input() can only be "
                              "Variable or Operator, or a variable's name)")
        if name in feeds:
            fed_targets.append(name)
            continue
        op = _first_writer(program.global_block(), name, target_ops)
        if op is None:
            raise InvalidArgument(expected(where, f"target '{name}'",
                                           "a variable an op of the global block writes (or "
                                           "one that is fed)", "a variable no op writes"))
        chosen.add(id(op))
    pruned = _empty_like(program, ("_is_test",))
    moved = {}
    _prune_block(program, pruned, 0, -1, set(), feeds, chosen, moved)
    glob, source = pruned.global_block(), program.global_block()
    for name in fed_targets:
        var = source.vars.get(name)
        if var is not None and name not in glob.vars:
            glob.vars[name] = var._copy(glob)
    for block in pruned.blocks:  # a grad block names its forward block by index
        if block.forward_block_idx >= 0:
            block.forward_block_idx = moved.get(block.forward_block_idx, -1)
    pruned.current_block_idx = 0
    return pruned


def _empty_like(program, more=()):
    """A program with no block that has ``program``'s seed, version, op versions and
    presence marks (and the fields ``more`` names), each a copy."""
    from .program import Program
    empty = Program()
    empty.blocks = []
    for field in ("random_seed", "version", "op_version_map", "_presence", *more):
        if field in program.__dict__:
            value = program.__dict__[field]
            setattr(empty, field, type(value)(value) if isinstance(value, (dict, set)) else value)
    return empty


def _role(op):
    role = op.attrs.get("op_role", 0)
    return role if isinstance(role, int) else 0


def prune_backward(program):
    """The forward part of ``program`` as Fluid's ``clone(for_test=True)`` keeps it, or None
    when ``program`` has no backward part (no op in the loss gradient's role).

    Every op whose role is backward, optimize or learning-rate schedule goes (whatever its
    block); each block keeps the variables its kept ops name, in its own order; a block
    left with no op (a gradient block) goes, and the others are renumbered in order, their
    parents and the sub-block attributes of the kept ops following them."""
    if not any(_role(op) == LOSS_GRAD for block in program.blocks for op in block.ops):
        return None
    from .program import Block
    pruned = _empty_like(program)
    moved = {}  # the source's block index -> the pruned one's
    for block in program.blocks:
        keep = [op for op in block.ops if not _role(op) & NOT_FORWARD]
        if not keep:
            continue
        parent = -1 if block.parent_idx < 0 else moved.get(block.parent_idx)
        if parent is None:
            raise InvalidArgument(expected(
                "Program.clone(for_test=True)", f"block {block.idx}'s parent",
                "a block with forward ops", f"block {block.idx} inside the gradient block "
                f"{block.parent_idx}, which has none"))
        new = Block(pruned, len(pruned.blocks), parent, block.forward_block_idx)
        if hasattr(block, "_presence"):
            new._presence = set(block._presence)
        pruned.blocks.append(new)
        moved[block.idx] = new.idx
        named = set()
        for op in keep:
            new.ops.append(op._copy(new))
            named.update(op.input_arg_names)
            named.update(op.output_arg_names)
        for name, var in block.vars.items():
            if name in named:
                new.vars[name] = var._copy(new)
    for block in pruned.blocks:
        block.forward_block_idx = moved.get(block.forward_block_idx, -1)
        for op in block.ops:
            for name, indices, many in _block_indices(op):
                if any(i not in moved for i in indices):
                    raise InvalidArgument(expected(
                        "Program.clone(for_test=True)", f"the sub-block of '{op.type}'",
                        "a block with forward ops", f"block {indices}, which has none"))
                given = op.attrs[name] if many else [op.attrs[name]]
                # (an index stays an index, a Block becomes the pruned program's)
                renamed = [moved[i] if isinstance(v, int) else pruned.blocks[moved[i]]
                           for v, i in zip(given, indices)]
                op.attrs[name] = renamed if many else renamed[0]
    pruned.current_block_idx = 0
    return pruned


def _first_writer(block, name, target_ops):
    for op in block.ops:
        if name in op.output_arg_names:
            if is_optimize_op(op) and not any(op is t for t in target_ops):
                continue
            return op
    return None


def _block_indices(op):
    """``(attribute name, [block indices], is BLOCKS)`` of each block attribute of ``op``."""
    for name, value in op.attrs.items():
        kind = op.attr_type(name)
        if kind == AttrType.BLOCK:
            yield name, [value if isinstance(value, int) else value.idx], False
        elif kind == AttrType.BLOCKS:
            yield name, [v if isinstance(v, int) else v.idx for v in value], True


def _prune_block(source, pruned, idx, parent_idx, needed, feeds, chosen, moved):
    """Append to ``pruned`` block ``idx`` of ``source`` with the ops ``needed`` (names)
    and ``chosen`` (op ids) call for, then its kept ops' sub-blocks; returns its index."""
    from .program import Block
    block = source.blocks[idx]
    keep = []
    for op in reversed(block.ops):
        outputs = op.output_arg_names
        has_sub = any(True for _ in _block_indices(op))
        wanted = (any(n in needed for n in outputs)
                  or ((has_sub or parent_idx >= 0) and any(n in feeds for n in outputs)))
        if id(op) in chosen or (wanted and not is_optimize_op(op)):
            needed.update(n for n in op.input_arg_names if n not in feeds)
            keep.append(op)
    keep.reverse()
    new = Block(pruned, len(pruned.blocks), parent_idx, block.forward_block_idx)
    if hasattr(block, "_presence"):
        new._presence = set(block._presence)
    pruned.blocks.append(new)
    moved.setdefault(idx, new.idx)
    for op in keep:
        copy = op._copy(new)
        new.ops.append(copy)
        for name, indices, many in _block_indices(op):
            inner = {n for n in op.input_arg_names + op.output_arg_names if n not in feeds}
            if op.type == "recurrent":  # its states are named by attributes
                for attr in ("states", "ex_states"):
                    inner.update(n for n in op.attrs.get(attr, ()) if n not in feeds)
            new_indices = [_prune_block(source, pruned, i, new.idx, set(inner), feeds,
                                        chosen, moved) for i in indices]
            copy.attrs[name] = new_indices if many else new_indices[0]
    named = set()
    for op in keep:
        named.update(op.input_arg_names)
        named.update(op.output_arg_names)
    for name, var in block.vars.items():
        if name in named:
            new.vars[name] = var._copy(new)
    return new.idx




# --- the executor's side ----------------------------------------------------------------
def split_fetch_list(fetch_list):
    """``(variables and names, optimizer ops)`` of a fetch list that may hold optimizer ops,
    lists of them, or what ``minimize`` returns (``(optimize_ops, params_grads)``)."""
    from .program import Operator, Variable
    if fetch_list is None:
        return None, []
    if isinstance(fetch_list, (str, Variable)):
        return [fetch_list], []
    if not isinstance(fetch_list, (list, tuple)):
        return fetch_list, []  # the executor reports what is wrong with it
    fetches, ops = [], []

    def take(item):
        if isinstance(item, Operator):
            if not is_optimize_op(item):
                raise InvalidType(expected("Executor.run", "an op in fetch_list",
                                           "an optimizer op", f"'{item.type}'"))
            ops.append(item)
        else:
            fetches.append(item)

    for item in fetch_list:
        if isinstance(item, tuple) and item and isinstance(item[0], (list, tuple)) \
                and all(isinstance(op, Operator) for op in item[0]):
            for inner in item[0]:  # (optimize_ops, params_grads)
                take(inner)
        elif isinstance(item, (list, tuple)) and any(isinstance(i, Operator) for i in item):
            for inner in item:
                take(inner)
        else:
            take(item)  # a list of variables stays one item: the executor flattens it
    return fetches, ops


def cache_key(program, feed, fetch_list):
    """What a pruned program depends on besides the program's content: the fed names and
    the fetched names and ops (ops by identity: ``minimize`` returns fresh ones)."""
    from .program import Operator, Variable
    names = tuple(feed_names(feed))

    def one(item):
        if isinstance(item, Variable):
            return item.name
        if isinstance(item, Operator):
            return ("op", id(item))
        if isinstance(item, (list, tuple)):
            return tuple(one(i) for i in item)
        return item if isinstance(item, str) else ("?", id(item))

    return (id(program), names, tuple(one(i) for i in (fetch_list or ())))


def feed_names(feed):
    if isinstance(feed, dict):
        return list(feed)
    if isinstance(feed, (list, tuple)):
        return [name for each in feed if isinstance(each, dict) for name in each]
    return []


def feed_kept(program, feed):
    """``feed`` without the names ``program`` (pruned) no longer has, each with a warning,
    as Fluid's executor drops them; a new dict (or list of dicts): the caller's stays."""
    block = program.global_block()

    def kept(one):
        out = {}
        for name, value in one.items():
            if block.has_var(name):
                out[name] = value
            else:
                warnings.warn(f"The variable {name} is not found in program. It is not "
                              f"declared or is pruned.")
        return out

    if isinstance(feed, dict):
        return kept(feed)
    if isinstance(feed, (list, tuple)):
        return [kept(one) if isinstance(one, dict) else one for one in feed]
    return feed
