"""LoD machinery: rank tables and the ops DynamicRNN and IfElse are built from.

DynamicRNN (see ``exec/lod_rank_table.py``): ``lod_rank_table`` ranks the input's
sequences by length; ``lod_tensor_to_array`` cuts the batch into time steps (step ``t``
holds item ``t`` of every sequence longer than ``t``, in rank order, so each step's batch
is a prefix of the previous one); ``shrink_rnn_memory`` cuts the memory to that prefix;
``array_to_lod_tensor`` puts the steps back into the original sequence order;
``reorder_lod_tensor_by_rank`` puts a whole batch into rank order (initial memories).
IfElse: ``split_lod_tensor`` sends each sequence to the true or false branch by a mask,
``merge_lod_tensor`` interleaves the branches back.

LoD here is offset based. :func:`sub_lod` is Paddle's ``GetSubLoDAndAbsoluteOffset``: the
lengths, level by level, of items ``[start, end)`` of one level and the rows they span.
Index bookkeeping stays on the host (NumPy); data moves with ``ctx.xp``.
"""
import numpy as np

from ..errors import InvalidArgument, OutOfRange, expected
from ..tensor.lod_rank_table import LoDRankTable
from ..tensor.tensor import LoDTensor, LoDTensorArray, lengths_to_offsets
from ..tensor.dtypes import VarType
from ..tensor.transfer import host_scalar, to_host
from .common import kept_plan
from ..framework.registry import def_op


# --- LoD helpers ---------------------------------------------------------------------------
def sub_lod(lod, start, end, level):
    """(lengths of levels ``level``.. for items ``[start, end)`` of ``level``, (first row,
    end row)). Past the last level the items are rows."""
    lengths = []
    for offsets in lod[level:]:
        lengths.append([offsets[i + 1] - offsets[i] for i in range(start, end)])
        start, end = offsets[start], offsets[end]
    return lengths, (start, end)


def append_lod(lod, lengths):
    """Extend offset LoD ``lod`` (a list being built) by per-level ``lengths``."""
    if not lod:
        lod.extend([0] for _ in lengths)
    for offsets, more in zip(lod, lengths):
        for n in more:
            offsets.append(offsets[-1] + n)


def gather_rows(xp, array, ranges):
    """Rows ``[b, e)`` of each range, concatenated (an empty batch keeps the row shape)."""
    index = [np.arange(b, e) for b, e in ranges if e > b]
    if not index:
        return xp.zeros((0,) + tuple(array.shape[1:]), dtype=array.dtype)
    if len(index) == 1 and index[0][0] == 0 and index[0][-1] == array.shape[0] - 1:
        return array
    return array[xp.asarray(np.concatenate(index))]


def host_int(op, slot, value):
    """The single integer held by an index tensor (``I``, ``Mask``), read on the host (one
    copy from a device): it picks an array slot or a branch. The op declares host_reads."""
    array = value.array if isinstance(value, LoDTensor) else value
    if array is not None and array.size == 1:
        return int(host_scalar(array))
    raise InvalidArgument(expected(op, f"input '{slot}'", "a tensor of one element",
                                   None if array is None else list(array.shape)))


def host_bools(value):
    """A mask's values on the host (one copy from a device): they decide rows and LoD."""
    array = value.array if isinstance(value, LoDTensor) else value
    return to_host(array).reshape(-1).astype(bool).tolist()


def rank_table(op, value):
    if not isinstance(value, LoDRankTable):
        raise InvalidArgument(expected(op, "input 'RankTable'", "a LoDRankTable (made by "
                                       "lod_rank_table)", type(value).__name__))
    return value


def tensor(op, slot, value):
    if not isinstance(value, LoDTensor) or value.array is None:
        raise InvalidArgument(expected(op, f"input '{slot}'", "an initialised LoDTensor",
                                       type(value).__name__ if not isinstance(value, LoDTensor)
                                       else "an empty tensor"))
    return value


def _lod_for_table(op, x, table):
    """X's LoD, deep enough for the table's level. A gradient often arrives without LoD;
    where X is then a plain batch of rows, the table's own lengths give the ranked level."""
    level = table.level
    if len(x._lod) > level:
        return x._lod
    if not x._lod or x._lod == table.coarse_lod:
        offsets = lengths_to_offsets(table.lengths_by_index())
        if offsets[-1] == x.array.shape[0]:
            return table.coarse_lod + [offsets]
    raise InvalidArgument(expected(op, "input 'X'", f"a LoDTensor with at least {level + 1} "
                                   f"LoD levels (the rank table's level {level} + 1)",
                                   f"LoD {list(x._lod)} with {x.array.shape[0]} rows"))


# --- lod_rank_table, max_sequence_len ---------------------------------------------------------
def _rank_table_infer(ctx):
    ctx.set_output("Out", (), type=VarType.LOD_RANK_TABLE)


def _lod_rank_table(ctx, x):
    x = tensor("lod_rank_table", "X", x)
    level = ctx.attrs["level"]
    # a loop fed the same batch again ranks the same LoD: a copy of the table kept
    return kept_plan(ctx, "table", (x._lod[:level + 1],),
                     lambda: LoDRankTable.from_lod(x._lod, level)).copy()


def _non_negative(value):
    return None if value >= 0 else ">= 0"


def_op("lod_rank_table", inputs=["X"], outputs=["Out"],
       attrs={"level": ("int", 0, _non_negative)},
       infer_shape=_rank_table_infer, kernel=_lod_rank_table, lod_aware=True,
       doc="Out = the sequences of LoD level `level` of X as (index, length) pairs, sorted "
           "by length descending (stable); also keeps X's LoD levels above `level`.")


def _max_sequence_len(ctx, table):
    table = rank_table("max_sequence_len", table)
    return LoDTensor(ctx.xp.asarray([table[0][1] if table else 0], dtype="int64"))


def_op("max_sequence_len", inputs=["RankTable"], outputs=["Out"],
       infer_shape=lambda ctx: ctx.set_output("Out", (1,), VarType.INT64),
       kernel=_max_sequence_len, lod_aware=True, traits=("host_output",),
       doc="Out = [the longest length in RankTable] (int64; 0 for an empty table), on the "
           "host whatever the place (a loop bound, as in Paddle).")


# --- lod_tensor_to_array / array_to_lod_tensor ----------------------------------------------
def _to_array_infer(ctx):
    ctx.set_output("Out", ctx.input_shape("X"), ctx.input_dtype("X"),
                   lod_level=max(ctx.input_lod_level("X") - 1, 0),
                   type=VarType.LOD_TENSOR_ARRAY)


def _lod_tensor_to_array(ctx, x, table):
    op = "lod_tensor_to_array"
    x, table = tensor(op, "X", x), rank_table(op, table)
    lod = _lod_for_table(op, x, table)
    level = table.level
    steps = table[0][1] if table else 0
    if level == len(lod) - 1:  # the items are rows: each step is a gather, with no LoD
        return _rows_to_array(ctx, x.array, lod[level], table, steps)
    out = LoDTensorArray()
    for t in range(steps):
        step_lod, ranges = [], []
        for index, length in table:
            if t >= length:
                break
            start = lod[level][index] + t
            lengths, rows = sub_lod(lod, start, start + 1, level + 1)
            append_lod(step_lod, lengths)
            ranges.append(rows)
        out.append(LoDTensor(gather_rows(ctx.xp, x.array, ranges), step_lod))
    return out


def _rows_to_array(ctx, data, offsets, table, steps):
    if not steps:
        return LoDTensorArray()
    index, bounds = _step_major_rows(ctx, offsets, table, steps)
    # one gather for all steps; each step is then a slice (a view) of it
    rows = ctx.xp.take(data, index, axis=0)
    return LoDTensorArray(map(LoDTensor, map(rows.__getitem__, bounds)))


def _step_major_rows(ctx, offsets, table, steps):
    """(the rows of all steps, step-major and in rank order within a step, as an index
    array; each step's slice of them). They depend on the LoD and the table alone, so the
    op keeps the last ones it made: a loop fed batches of the same LoD reuses them."""
    def make():
        starts = np.array([offsets[index] for index, _ in table], dtype=np.int64)
        running = _running(table, steps)
        index = ctx.xp.asarray((starts[None, :] + np.arange(steps)[:, None])[running])
        ends = np.cumsum(running.sum(axis=1)).tolist()
        return index, [slice(begin, end) for begin, end in zip([0] + ends[:-1], ends)]
    return kept_plan(ctx, "rows", (offsets, table, steps), make)


def _to_array_grad(g):
    return [g.op("array_to_lod_tensor", {"X": g.output_grad("Out"),
                                         "RankTable": g.input("RankTable")},
                 {"Out": g.input_grad("X")})]


def_op("lod_tensor_to_array", inputs=["X", "RankTable"], outputs=["Out"],
       infer_shape=_to_array_infer, grad=_to_array_grad, kernel=_lod_tensor_to_array,
       lod_aware=True,
       doc="Out[t] = item t of every sequence (of RankTable's level of X) longer than t, "
           "in rank order; Out[t] keeps the LoD below that level. Gradient: "
           "array_to_lod_tensor.")


def _from_array_infer(ctx):
    ctx.set_output("Out", ctx.input_shape("X"), ctx.input_dtype("X"),
                   lod_level=ctx.input_lod_level("X") + 1, type=VarType.LOD_TENSOR)


def _array_to_lod_tensor(ctx, array, table):
    op = "array_to_lod_tensor"
    table = rank_table(op, table)
    if not isinstance(array, list) or not array:
        raise InvalidArgument(expected(op, "input 'X'", "a non-empty LoDTensorArray",
                                       "an empty array" if isinstance(array, list)
                                       else type(array).__name__))
    first = tensor(op, "X[0]", array[0]).array
    dims, dtype = first.shape[1:], first.dtype
    for t, step in enumerate(array):
        data = step.array if isinstance(step, LoDTensor) else None
        if data is None or data.shape[1:] != dims or data.dtype != dtype:
            tensor(op, f"X[{t}]", step)
            raise InvalidArgument(expected(op, f"X[{t}]", f"dims [-1, {list(dims)}"
                                           f"] and dtype {dtype} as X[0]",
                                           f"{list(data.shape)} {data.dtype}"))
    if not any([step._lod for step in array]):
        if table and table[0][1] > len(array):  # the table is sorted longest first
            raise InvalidArgument(expected(op, "input 'X'", f"at least {table[0][1]} steps "
                                           f"(a sequence's length in RankTable)", len(array)))
        plan = _input_order_rows(ctx, table, [step.array.shape[0] for step in array])
        if plan is not None:
            return _gather_steps(ctx, array, table, *plan)
    ranked = [0]
    inner = []
    pieces = []
    # rank positions in the order of the original sequences
    for position in sorted(range(len(table)), key=lambda p: table[p][0]):
        length = table[position][1]
        if length > len(array):
            raise InvalidArgument(expected(op, "input 'X'", f"at least {length} steps (a "
                                           f"sequence's length in RankTable)", len(array)))
        ranked.append(ranked[-1] + length)
        for t in range(length):
            lengths, (b, e) = sub_lod(array[t]._lod, position, position + 1, 0)
            append_lod(inner, lengths)
            if e > b:
                pieces.append(array[t].array[b:e])
    xp = ctx.xp
    data = xp.concatenate(pieces) if pieces else xp.zeros((0,) + first.shape[1:], first.dtype)
    return LoDTensor(data, table.coarse_lod + [ranked] + inner)


def _running(table, steps):
    """[step, rank position] -> True while that sequence of ``table`` still runs."""
    lengths = np.array([length for _, length in table], dtype=np.int64)
    return np.arange(steps)[:, None] < lengths[None, :]


def _input_order_rows(ctx, table, sizes):
    """Where the steps' rows go when they are rows without LoD (item t row p belongs to the
    sequence at rank position p): (the rows of the concatenated steps in output order, as an
    index array; the sequence offsets), or None when a step has fewer rows than sequences
    still running. They depend on the table and the steps' sizes alone, so the op keeps the
    last ones it made."""
    def make():
        running = _running(table, len(sizes))
        if (np.asarray(sizes) < running.sum(axis=1)).any():
            return None
        step_start = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        # [position, step] -> row of the concatenated steps; positions in input order, each
        # sequence's steps in time order: row-major order is the output's row order
        order = np.argsort(np.array([index for index, _ in table], dtype=np.int64),
                           kind="stable")
        rows = ctx.xp.asarray((step_start[None, :] + order[:, None])[running.T[order]])
        return rows, np.concatenate([[0], np.cumsum(running.sum(axis=0)[order])]).tolist()
    return kept_plan(ctx, "rows", (sizes, table), make)


def _gather_steps(ctx, array, table, rows, offsets):
    """Out of the steps of ``array`` (rows without LoD), gathered to ``rows`` of their
    concatenation; its LoD the table's coarse levels and ``offsets``."""
    steps = [step.array for step in array]
    return LoDTensor(ctx.xp.take(_concatenated(ctx, steps), rows, axis=0),
                     table.coarse_lod + [list(offsets)])


def _concatenated(ctx, steps):
    """The steps concatenated, into a buffer the op keeps between runs: it is the gather's
    source only, never a value anyone sees, and a fresh buffer of that size each run could
    be handed back to the OS and faulted in again every time."""
    xp, first = ctx.xp, steps[0]
    cache = getattr(ctx, "cache", None)
    if cache is None:
        return xp.concatenate(steps)
    total = sum([step.shape[0] for step in steps])
    buffer = cache.get("steps")
    if buffer is None or buffer.shape[0] < total or buffer.shape[1:] != first.shape[1:] \
            or buffer.dtype != first.dtype or not isinstance(buffer, type(first)):
        buffer = cache["steps"] = xp.empty((total,) + first.shape[1:], first.dtype)
    return xp.concatenate(steps, out=buffer[:total])


def _from_array_grad(g):
    return [g.op("lod_tensor_to_array", {"X": g.output_grad("Out"),
                                         "RankTable": g.input("RankTable")},
                 {"Out": g.input_grad("X")})]


def_op("array_to_lod_tensor", inputs=["X", "RankTable"], outputs=["Out"],
       infer_shape=_from_array_infer, grad=_from_array_grad, kernel=_array_to_lod_tensor,
       lod_aware=True,
       doc="The inverse of lod_tensor_to_array: sequence i (in original order) is row i's "
           "rank position of X[0], X[1], ... X[len_i - 1]; Out's LoD is RankTable's coarse "
           "LoD, the sequence lengths, then the steps' own LoD. Gradient: "
           "lod_tensor_to_array.")


# --- shrink_rnn_memory ------------------------------------------------------------------------
def _shrink_infer(ctx):
    shape = ctx.input_shape("X")
    # the batch shrinks at run time (Paddle keeps X's dims here)
    ctx.set_output("Out", (-1,) + tuple(shape[1:]) if shape else shape, ctx.input_dtype("X"))
    ctx.share_lod("X", "Out")


def _shrink_rnn_memory(ctx, x, table, i):
    op = "shrink_rnn_memory"
    x, table = tensor(op, "X", x), rank_table(op, table)
    keep = table.batch_size_at(host_int(op, "I", i))
    height, lod = keep, []
    if x._lod and len(x._lod[0]) > keep:
        if len(x._lod) > 1:
            lengths, (_, height) = sub_lod(x._lod, 0, keep, 0)
            append_lod(lod, lengths)
        else:
            lod = [x._lod[0][:keep + 1]]
            height = lod[0][-1]
    return LoDTensor(x.array[:height], lod)


def _shrink_step(ctx, ins, out, kernel_step):
    """shrink_rnn_memory's host step: X rows without LoD (DynamicRNN's memories), a rank
    table and a host index of one element (anything else goes to the kernel, which names
    what it expected)."""
    x_holder, table_holder, index_holder = ins
    new = LoDTensor

    def step():
        x = x_holder.value
        try:
            if not x._lod:
                out.value = new(x.array[:table_holder.value.batch_size_at(
                    int(index_holder.value.array.item()))])
                return
        except Exception:  # no tensor, rank table or index of one element
            pass
        kernel_step()
    return step


def_op("shrink_rnn_memory", inputs=["X", "RankTable", "I"], outputs=["Out"],
       infer_shape=_shrink_infer, kernel=_shrink_rnn_memory, lod_aware=True,
       host_step=_shrink_step,
       grad=lambda g: [g.op("shrink_rnn_memory_grad",
                            {"X": g.input("X"), "Out@GRAD": g.output_grad("Out")},
                            {"X@GRAD": g.input_grad("X")})],
       doc="Out = the first k rows of X (k sequences when X has LoD), k = the number of "
           "sequences in RankTable longer than I: the batch size of time step I.")


def _shrink_grad_infer(ctx):
    ctx.set_output("X@GRAD", ctx.input_shape("X"), ctx.input_dtype("X"))
    ctx.share_lod("X", "X@GRAD")


def _shrink_rnn_memory_grad(ctx, x, dout):
    x = tensor("shrink_rnn_memory_grad", "X", x)
    return _grown(ctx.xp, x, dout.array if dout is not None else None)


def _grown(xp, x, rows):
    """X@GRAD: ``rows`` (Out@GRAD's, or None) in the first rows of zeros shaped like X."""
    if rows is not None and rows.shape == x.array.shape:
        return LoDTensor(rows, x._lod)  # nothing was cut at this step
    # zeros(shape, dtype) costs a quarter of zeros_like, and every row gets a value anyway
    dx = xp.zeros(x.array.shape, x.array.dtype)
    if rows is not None and rows.shape[0]:
        dx[:rows.shape[0]] = rows
    return LoDTensor(dx, x._lod)


def _shrink_grad_step(ctx, ins, out, kernel_step):
    """shrink_rnn_memory_grad's host step: X and Out@GRAD tensors (anything else goes to
    the kernel, which names what it expected)."""
    x_holder, dout_holder = ins
    if dout_holder is None:
        return kernel_step

    def step():
        x = x_holder.value
        try:
            out.value = _grown(np, x, dout_holder.value.array)
        except Exception:
            kernel_step()
    return step


def_op("shrink_rnn_memory_grad", inputs=["X", "Out@GRAD?"], outputs=["X@GRAD"],
       infer_shape=_shrink_grad_infer, kernel=_shrink_rnn_memory_grad, lod_aware=True,
       host_step=_shrink_grad_step,
       doc="X@GRAD = Out@GRAD in its first rows, zeros below (all zeros without Out@GRAD).")


# --- reorder_lod_tensor_by_rank ---------------------------------------------------------------
def _sequences(x):
    """(first row, rows, per-level lengths) of each top-level sequence of X; without LoD
    every row is a sequence of length 1."""
    if not x._lod:
        return [(i, 1, []) for i in range(x.array.shape[0])]
    result = []
    for i in range(len(x._lod[0]) - 1):
        lengths, (b, e) = sub_lod(x._lod, i, i + 1, 0)
        result.append((b, e - b, lengths))
    return result


def _copy_sequences(ctx, x, order):
    pieces, lod = [], []
    for first, rows, lengths in order:
        append_lod(lod, lengths)
        pieces.append((first, first + rows))
    return LoDTensor(gather_rows(ctx.xp, x.array, pieces), lod)


def _reorder_infer(ctx):
    ctx.set_output("Out", ctx.input_shape("X"), ctx.input_dtype("X"))
    ctx.share_lod("X", "Out")


def _reorder(ctx, x, table):
    op = "reorder_lod_tensor_by_rank"
    x, table = tensor(op, "X", x), rank_table(op, table)
    sequences = _sequences(x)
    for index, _ in table:
        if index >= len(sequences):
            raise OutOfRange(expected(op, "RankTable index", f"below {len(sequences)} (the "
                                      f"sequences of X)", index))
    return _copy_sequences(ctx, x, [sequences[index] for index, _ in table])


def_op("reorder_lod_tensor_by_rank", inputs=["X", "RankTable"], outputs=["Out"],
       infer_shape=_reorder_infer, kernel=_reorder, lod_aware=True,
       grad=lambda g: [g.op("reorder_lod_tensor_by_rank_grad",
                            {"X": g.output_grad("Out"), "RankTable": g.input("RankTable")},
                            {"Out": g.input_grad("X")}, attrs={})],
       doc="Out = X's top-level sequences (rows without LoD) in RankTable order: "
           "Out = [X[index] for index, _ in RankTable].")


def _reorder_grad(ctx, x, table):
    op = "reorder_lod_tensor_by_rank_grad"
    x, table = tensor(op, "X", x), rank_table(op, table)
    sequences = _sequences(x)
    if len(sequences) != len(table):
        raise InvalidArgument(expected(op, "input 'X'", f"{len(table)} sequences (one per "
                                       f"RankTable item)", len(sequences)))
    # ranked position p holds original sequence table[p].index: undo that
    by_index = sorted(range(len(table)), key=lambda p: table[p][0])
    return _copy_sequences(ctx, x, [sequences[p] for p in by_index])


def_op("reorder_lod_tensor_by_rank_grad", inputs=["X", "RankTable"], outputs=["Out"],
       infer_shape=_reorder_infer, kernel=_reorder_grad, lod_aware=True,
       doc="The inverse reorder: X (Out@GRAD, in rank order) back to original order.")


# --- split_lod_tensor / merge_lod_tensor ------------------------------------------------------
def _check_mask(ctx):
    shape = ctx.input_shape("Mask")
    ctx.check(len(shape) == 2 and (shape[1] in (1, -1)), "input 'Mask'",
              "a [N, 1] bool tensor (IfElse's cond must be 2-D with second dim 1)", list(shape))


def _split_infer(ctx):
    _check_mask(ctx)
    shape = ctx.input_shape("X")
    rows_unknown = (-1,) + tuple(shape[1:]) if shape else shape
    for slot in ("OutTrue", "OutFalse"):
        ctx.set_output(slot, rows_unknown, ctx.input_dtype("X"),
                       lod_level=max(ctx.input_lod_level("X") - ctx.attr("level"), 0))


def _split_lod_tensor(ctx, x, mask):
    op = "split_lod_tensor"
    x = tensor(op, "X", x)
    level = ctx.attrs["level"]
    lod = x._lod
    units = len(lod[level]) - 1 if level < len(lod) else x.array.shape[0]
    flags = host_bools(mask)
    if len(flags) != units:
        raise InvalidArgument(expected(op, "input 'Mask'", f"{units} entries (the items of "
                                       f"LoD level {level} of X)", len(flags)))
    outs = []
    for branch in (True, False):
        branch_lod, ranges = [], []
        for i, flag in enumerate(flags):
            if flag == branch:
                lengths, rows = sub_lod(lod, i, i + 1, level)
                append_lod(branch_lod, lengths)
                ranges.append(rows)
        outs.append(LoDTensor(gather_rows(ctx.xp, x.array, ranges), branch_lod))
    return tuple(outs)


def_op("split_lod_tensor", inputs=["X", "Mask"], outputs=["OutTrue", "OutFalse"],
       attrs={"level": ("int", 0, _non_negative)},
       infer_shape=_split_infer, kernel=_split_lod_tensor, lod_aware=True,
       host_reads="Mask: which items go to each branch decides the outputs' rows and LoD",
       grad=lambda g: [g.op("merge_lod_tensor",
                            {"X": g.input("X"), "Mask": g.input("Mask"),
                             "InTrue": g.output_grad("OutTrue"),
                             "InFalse": g.output_grad("OutFalse")},
                            {"Out": g.input_grad("X")})],
       doc="OutTrue / OutFalse = the items of LoD level `level` of X (rows without LoD) "
           "whose Mask entry is true / false, in order, with their lower LoD levels.")


def _merge_infer(ctx):
    _check_mask(ctx)
    shape = ctx.input_shape("InTrue")
    ctx.set_output("Out", (-1,) + tuple(shape[1:]) if shape else shape,
                   ctx.input_dtype("InTrue"), lod_level=ctx.input_lod_level("X"))


def _initialised(value):
    return isinstance(value, LoDTensor) and value.array is not None


def _merge_lod_tensor(ctx, x, mask, in_true, in_false):
    op = ctx.op.type  # merge_lod_tensor or its inference form
    branches = {True: in_true, False: in_false}
    present = [v for v in (in_true, in_false) if _initialised(v)]
    if not present:
        raise InvalidArgument(expected(op, "inputs 'InTrue', 'InFalse'", "at least one "
                                       "initialised tensor", "neither"))
    like = present[0].array
    taken = {True: 0, False: 0}
    lod, pieces = [], []
    for flag in host_bools(mask):
        branch = branches[flag]
        index = taken[flag]
        rows = branch.array.shape[0] if _initialised(branch) else 0
        units = len(branch._lod[0]) - 1 if _initialised(branch) and branch._lod else rows
        if index >= units:
            raise InvalidArgument(expected(op, f"input '{'InTrue' if flag else 'InFalse'}'",
                                           f"more than {index} items (Mask selects it more "
                                           f"often)", units))
        lengths, (b, e) = sub_lod(branch._lod, index, index + 1, 0)
        append_lod(lod, lengths)
        if e > b:
            pieces.append(branch.array[b:e])
        taken[flag] = index + 1
    xp = ctx.xp
    data = xp.concatenate(pieces) if pieces else xp.zeros((0,) + like.shape[1:], like.dtype)
    level = ctx.attrs["level"]
    coarse = x._lod[:level] if isinstance(x, LoDTensor) else []
    return LoDTensor(data, [list(level) for level in coarse] + lod)


def_op("merge_lod_tensor", inputs=["X", "Mask", "InTrue", "InFalse"], outputs=["Out"],
       attrs={"level": ("int", 0, _non_negative)},
       infer_shape=_merge_infer, kernel=_merge_lod_tensor, lod_aware=True,
       host_reads="Mask: which branch each item comes from decides the rows and LoD",
       grad=lambda g: [g.op("split_lod_tensor",
                            {"X": g.output_grad("Out"), "Mask": g.input("Mask")},
                            {"OutTrue": g.input_grad("InTrue"),
                             "OutFalse": g.input_grad("InFalse")})],
       doc="The inverse of split_lod_tensor: item i of Out is the next top-level item of "
           "InTrue if Mask[i] else of InFalse; X's LoD levels above `level` go on top.")

# the inference form IfElse programs are rewritten to: the same merge, no gradient (Paddle's
# also clears InTrue and InFalse afterwards to free them; here the executor frees each value
# after its last reader anyway, and an op never changes its inputs)
def_op("merge_lod_tensor_infer", inputs=["X", "Mask", "InTrue", "InFalse"], outputs=["Out"],
       attrs={"level": ("int", 0, _non_negative)},
       infer_shape=_merge_infer, kernel=_merge_lod_tensor, lod_aware=True,
       host_reads="Mask: which branch each item comes from decides the rows and LoD",
       doc="merge_lod_tensor for inference programs (no gradient).")
