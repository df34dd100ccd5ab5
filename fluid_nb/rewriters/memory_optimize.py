"""``fluid.memory_optimize`` and ``fluid.release_memory``: Fluid 1.x's memory-optimisation
transpiler, over block 0 of a program.

Block 0 is straight-line code (a loop or a branch is one op whose sub-block runs inside it),
so a variable's live range is the span from its first to its last occurrence; every name an
op's sub-blocks read or write counts as read by that op. A temporary dies at its last
occurrence when that op reads it and does not write it.

- ``memory_optimize`` renames a later temporary to the name of one already dead, in the op
  that defines it and every op that uses it, so both share one buffer (Fluid's rename of a
  variable to a "cache var" from its pool of dead ones). ``verify`` accepts the result: a
  temporary may be written again once its value has been read.
- ``release_memory`` inserts a ``delete_var`` op after each temporary's last use.

Neither touches persistable variables, data and fed variables (``is_data``, ``feed`` op
outputs), ``fetch`` op inputs, ``skip_opt_set``, non-LOD_TENSOR variables (tensor arrays,
rank tables, SelectedRows), variables without a shape, or any name a sub-block uses or an op
with a sub-block reads or writes. A temporary no op reads (a result such as the loss) keeps
its name. As in Fluid, an intermediate that you fetch must be listed in ``skip_opt_set``,
and both are meant for a program already complete (after ``minimize``).
"""
import collections

from ..errors import InvalidArgument, InvalidType, expected
from ..framework.blocks import block_attrs, walk_ops
from ..tensor.dtypes import VarType, dtype_name, dtype_size
from ..framework.program import EMPTY_VAR_NAME, GRAD_SUFFIX, Program, Variable, rename_argument
from ..framework.verify import fits_buffer, known_size

__all__ = ["memory_optimize", "release_memory"]

#: one reuse made by memory_optimize: ``var`` (now gone) was renamed to ``reuses`` from op
#: ``op_index`` on; ``bytes`` is its size (per unit of each -1 dim when it has any)
Reuse = collections.namedtuple("Reuse", "var reuses shape dtype bytes op_index")


def memory_optimize(input_program, skip_opt_set=None, print_log=False, level=0,
                    skip_grads=True):
    """Let later temporaries reuse the buffers of dead ones, by renaming them (in place).

    A temporary defined by one op (which does not also read it), read later, and dead before
    no earlier buffer is free takes the name of a temporary that is dead already: with
    ``level=0`` one of the same shape (-1 dims included) and dtype; with ``level=1`` the
    smallest dead one of the same dtype holding at least as many elements (shapes with -1
    compare only when the -1 sit in the same places). ``skip_grads`` leaves every name with
    ``@GRAD`` alone. ``print_log`` prints each reuse and the bytes saved; the reuses are
    kept as :class:`Reuse` records in ``input_program._memory_optimize_log``. Returns None,
    as Fluid's does. Results are bit-identical: only names change.

    Example::

        sgd.minimize(loss)
        fluid.memory_optimize(fluid.default_main_program(), skip_opt_set={pred.name})
        exe.run(feed=..., fetch_list=[loss, pred])
    """
    _check_program("memory_optimize", input_program)
    if level not in (0, 1) or isinstance(level, bool):
        raise InvalidArgument(expected("memory_optimize", "level", "0 or 1", repr(level)))
    skip = _skip_names("memory_optimize", skip_opt_set)
    analysis = _Analysis(input_program, skip, skip_grads)
    block = input_program.global_block()
    pool = []  # names of dead buffers, in the order they died
    log = []
    for index, op in enumerate(block.ops):
        for name in dict.fromkeys(op.output_arg_names):
            if not pool or not analysis.renamable(name, index):
                continue
            var = block.vars[name]
            pick = _pick(pool, var, block, level)
            if pick is None:
                continue
            buffer = pool.pop(pick)
            analysis.rename(name, buffer)
            size = known_size(var.shape) * dtype_size(var.dtype)
            log.append(Reuse(name, buffer, tuple(var.shape), dtype_name(var.dtype), size,
                             index))
            block._remove_var(name)
        pool.extend(analysis.dying_at(index))
    input_program._memory_optimize_log = log
    if log:
        input_program._changed()
    if print_log:
        _print_log(log)


def release_memory(input_program, skip_opt_set=None):
    """Insert a ``delete_var`` op after the last use of each temporary of block 0 (in
    place), so its value is dropped there. Returns None, as Fluid's does.

    Example::

        fluid.release_memory(fluid.default_main_program())
    """
    _check_program("release_memory", input_program)
    skip = _skip_names("release_memory", skip_opt_set)
    analysis = _Analysis(input_program, skip, skip_grads=False)
    block = input_program.global_block()
    done = {n for op in block.ops if op.type == "delete_var" for n in op.input_arg_names}
    inserts = []
    for index, op in enumerate(block.ops):
        if op.type == "delete_var":
            continue
        names = [n for n in analysis.dying_at(index) if n not in done]
        if names:
            inserts.append((index + 1, names))
    for position, names in reversed(inserts):  # from the end: earlier positions hold
        block._insert_op(position, type="delete_var", inputs={"X": names})


# --- the analysis ------------------------------------------------------------------------
class _Analysis:
    """Occurrences of each name in block 0 and which names may be renamed or reused."""

    def __init__(self, program, skip, skip_grads):
        block = program.global_block()
        self.block = block
        self.reads, self.writes = [], []
        self.occurrences = collections.defaultdict(list)  # name -> op indices, ascending
        fixed = set(skip)
        for block_ in program.blocks[1:]:
            for op in block_.ops:
                fixed.update(op.input_arg_names)
                fixed.update(op.output_arg_names)
        for index, op in enumerate(block.ops):
            reads, writes = set(op.input_arg_names), set(op.output_arg_names)
            inner = _sub_block_names(op)
            if inner is not None:  # the loop's or branch's own arguments stay as they are
                fixed |= reads | writes | inner
                reads |= inner
            if op.type == "feed" or (op.attrs.get("force_cpu") is True):
                fixed |= writes
            if op.type == "fetch":
                fixed |= reads
            self.reads.append(reads)
            self.writes.append(writes)
            for name in reads | writes:
                self.occurrences[name].append(index)
        self.fixed = fixed
        self.skip_grads = skip_grads

    def movable(self, name):
        """Whether ``name`` is a temporary of block 0 whose buffer may be shared."""
        var = self.block.vars.get(name)
        return (var is not None and name != EMPTY_VAR_NAME and name not in self.fixed
                and not var.persistable and not var.is_data and var.type == VarType.LOD_TENSOR
                and bool(var.shape) and not (self.skip_grads and GRAD_SUFFIX in name))

    def defined_here(self, name):
        """Its first occurrence writes it without reading it (no value from outside)."""
        first = self.occurrences[name][0]
        return name in self.writes[first] and name not in self.reads[first]

    def renamable(self, name, index):
        """Defined by op ``index`` alone, which does not read it, and read later on."""
        occurrences = self.occurrences.get(name)
        return (bool(occurrences) and occurrences[0] == index and len(occurrences) > 1
                and self.movable(name) and self.defined_here(name)
                and not any(name in self.writes[k] for k in occurrences[1:]))

    def dying_at(self, index):
        """The movable temporaries whose last occurrence is op ``index``, a read."""
        return [n for n in sorted(self.reads[index])
                if self.occurrences[n][-1] == index and n not in self.writes[index]
                and self.movable(n) and self.defined_here(n)]

    def rename(self, old, new):
        """``old`` becomes ``new`` in every op that uses it (all after ``new``'s last use)."""
        ops = self.block.ops
        for k in self.occurrences.pop(old):
            op = ops[k]
            rename_argument(op.inputs, old, new)
            rename_argument(op.outputs, old, new)
            role_var = op.attrs.get("op_role_var")
            if isinstance(role_var, list) and old in role_var:
                op.attrs["op_role_var"] = [new if a == old else a for a in role_var]
            for names in (self.reads[k], self.writes[k]):
                if old in names:
                    names.discard(old)
                    names.add(new)
            self.occurrences[new].append(k)


def _sub_block_names(op):
    """Every name the sub-blocks of ``op`` (and theirs) read or write; None when it has no
    block attribute (an empty BLOCKS list gives an empty set)."""
    attrs = block_attrs(op)
    if not attrs:
        return None
    names = set()
    for block in (b for blocks in attrs.values() for b in blocks):
        for _, _, inner in walk_ops(block):
            names.update(inner.input_arg_names)
            names.update(inner.output_arg_names)
    return names


def _pick(pool, var, block, level):
    """Index in ``pool`` of the buffer ``var`` takes, or None: level 0 the first of its
    shape, level 1 the smallest that fits (the first among equals); same dtype and LoD
    level always."""
    best, best_size = None, None
    for position, name in enumerate(pool):
        buffer = block.vars[name]
        if buffer.dtype != var.dtype or buffer.lod_level != var.lod_level:
            continue
        if level == 0:
            if tuple(buffer.shape) == tuple(var.shape):
                return position
        elif fits_buffer(var.shape, buffer.shape):
            size = known_size(buffer.shape)
            if best is None or size < best_size:
                best, best_size = position, size
    return best



def _print_log(log):
    total = 0
    batched = False
    for reuse in log:
        per = " per -1 unit" if any(d < 0 for d in reuse.shape) else ""
        batched = batched or bool(per)
        print(f"memory_optimize: {reuse.var} {list(reuse.shape)} {reuse.dtype} reuses "
              f"{reuse.reuses} ({reuse.bytes} bytes{per})")
        total += reuse.bytes
    print(f"memory_optimize: {len(log)} variables reuse dead buffers, saving {total} bytes"
          f"{' (per -1 unit where shapes have -1)' if batched else ''}")


# --- arguments ---------------------------------------------------------------------------
def _check_program(where, program):
    if not isinstance(program, Program):
        raise InvalidType(expected(where, "input_program", "a Program",
                                   type(program).__name__))


def _skip_names(where, skip_opt_set):
    """The names in ``skip_opt_set`` (None, or an iterable of names and Variables)."""
    if skip_opt_set is None:
        return set()
    if isinstance(skip_opt_set, (str, bytes)) or not hasattr(skip_opt_set, "__iter__"):
        raise InvalidType(expected(where, "skip_opt_set", "a set of variable names",
                                   type(skip_opt_set).__name__))
    names = set()
    for item in skip_opt_set:
        if isinstance(item, Variable):
            names.add(item.name)
        elif isinstance(item, str):
            names.add(item)
        else:
            raise InvalidType(expected(where, "skip_opt_set items", "variable names or "
                                       "Variables", type(item).__name__))
    return names
