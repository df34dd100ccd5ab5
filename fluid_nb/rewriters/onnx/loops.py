"""DynamicRNN's machinery in ONNX by the padded convention: a ``while`` loop over time
becomes an ONNX ``Loop`` over the padded batch.

Fluid sorts the sequences by length (a rank table), splits them into per-step tensor arrays
and shrinks the batch as sequences end. ONNX has none of that, so the padded batch keeps its
order and its size, and masks do the rest: step t reads column t of the padded input, the
memories stop changing once a sequence has ended, and the outputs are zero past each end.
The loop runs max(lengths) times; the rank table stands for the lengths it was made from.
"""
import numpy as np

from ...ops.creation import fill_value
from .converters import NotConvertible, _in, _out, converter

#: tensor arrays of the padded world: name -> ("input", padded, lengths) for a sequence
#: split by time, ("memory", initial value) for a memory, ("output", padded, lengths) for
#: the stacked outputs of a loop
ARRAYS = "arrays"


def _arrays(ctx):
    return ctx.extra.setdefault(ARRAYS, {})


def _table_lengths(ctx, table):
    lengths = ctx.extra.setdefault("tables", {}).get(table)
    if lengths is None:
        raise NotConvertible(f"rank table {table!r} of no padded sequence")
    return lengths


@converter("lod_rank_table")
def _rank_table(op, ctx):
    x = _in(op, "X")
    if ctx.lengths(x) is None or op.attrs.get("level", 0) != 0:
        raise NotConvertible("a rank table of a tensor without a LoD (or of a lower level)")
    ctx.extra.setdefault("tables", {})[_out(op, "Out")] = ctx.lengths(x)


@converter("max_sequence_len")
def _max_sequence_len(op, ctx):
    lengths = _table_lengths(ctx, _in(op, "RankTable"))
    ctx.node("ReduceMax", [lengths], [_out(op, "Out")], keepdims=1)
    ctx.extra.setdefault("max_lengths", set()).add(_out(op, "Out"))


@converter("lod_tensor_to_array")
def _to_array(op, ctx):
    x = _in(op, "X")
    lengths = _table_lengths(ctx, _in(op, "RankTable"))
    if ctx.lengths(x) != lengths:
        raise NotConvertible("splitting a sequence by another one's rank table")
    _arrays(ctx)[_out(op, "Out")] = ("input", x, lengths)


def _step(ctx, index):
    """A [1] int64 index as a scalar (Gather's index removes the time axis)."""
    scalar = ctx.tmp("step")
    ctx.node("Squeeze", [index, ctx.const(np.array([0], "int64"), "axes")], [scalar])
    return scalar


@converter("read_from_array")
def _read(op, ctx):
    array = _arrays(ctx).get(_in(op, "X"))
    if array is None:
        raise NotConvertible("a tensor array outside DynamicRNN's pattern")
    kind = array[0]
    loop = ctx.extra.get("loop")
    if loop is not None and _in(op, "I") == loop["counter"]:
        if kind == "input":  # step t of the padded input: its column t
            ctx.node("Gather", [array[1], loop["iteration"]], [_out(op, "Out")], axis=1)
        elif kind == "memory":
            ctx.node("Identity", [loop["states"][_in(op, "X")]], [_out(op, "Out")])
        else:
            raise NotConvertible("reading a loop's output inside it")
        return
    if kind == "input":  # before the loop: a step of the input (the memories' batch)
        ctx.node("Gather", [array[1], _step(ctx, _in(op, "I"))], [_out(op, "Out")], axis=1)
    elif kind == "memory":
        ctx.node("Identity", [array[1]], [_out(op, "Out")])
    else:
        raise NotConvertible("reading an output array")


@converter("write_to_array")
def _write(op, ctx):
    x, out = _in(op, "X"), _out(op, "Out")
    loop = ctx.extra.get("loop")
    if loop is None:  # before the loop: a memory's initial value
        _arrays(ctx)[out] = ("memory", x)
        return
    if _in(op, "I") != loop["counter"]:
        raise NotConvertible("a write at an index other than the step's")
    mask = loop["mask"]
    if out in loop["states"]:  # the next step's memory: frozen once a sequence has ended
        if not loop["advanced"]:
            raise NotConvertible("a memory written before the counter advances")
        new = ctx.tmp("state")
        ctx.node("Where", [mask, x, loop["states"][out]], [new])
        loop["next"][out] = new
    else:  # a step of an output: zero past each sequence's end
        zero = ctx.const(np.array(0, ctx.dtype(x)), "zero")
        step = ctx.tmp("output")
        ctx.node("Where", [mask, x, zero], [step])
        loop["scans"].append((out, step, x))


@converter("shrink_rnn_memory")
def _shrink(op, ctx):
    # the padded batch never shrinks: the masks keep ended sequences' memories as they were
    ctx.node("Identity", [_in(op, "X")], [_out(op, "Out")])


@converter("increment")
def _increment(op, ctx):
    loop = ctx.extra.get("loop")
    if loop is not None and _in(op, "X") == loop["counter"]:
        if op.attrs.get("step", 1.0) != 1.0:
            raise NotConvertible("a step counter advancing by other than 1")
        loop["advanced"] = True  # the loop's own index stands for the counter
        return
    x = _in(op, "X")
    ctx.node("Add", [x, ctx.const(np.array(op.attrs.get("step", 1.0)).astype(ctx.dtype(x)),
                                  "step")], [_out(op, "Out")])


@converter("less_than")
def _less_than(op, ctx):
    loop = ctx.extra.get("loop")
    if loop is not None and _in(op, "X") == loop["counter"]:
        return  # the loop's own condition: the trip count stands for it
    x, y = _in(op, "X"), _in(op, "Y")
    if op.attrs.get("axis", -1) != -1 and len(ctx.shape(y)) != len(ctx.shape(x)):
        raise NotConvertible(f"axis {op.attrs['axis']} (ONNX broadcasts from the end)")
    ctx.node("Less", [x, y], [_out(op, "Out")])


@converter("array_to_lod_tensor")
def _from_array(op, ctx):
    array = _arrays(ctx).get(_in(op, "X"))
    if array is None or array[0] != "output":
        raise NotConvertible("joining an array other than a loop's outputs")
    out = _out(op, "Out")
    ctx.node("Identity", [array[1]], [out])
    ctx.sequences[out] = array[2]


@converter("fill_constant_batch_size_like")
def _fill_like(op, ctx):
    source, out = _in(op, "Input"), _out(op, "Out")
    shape = list(op.attrs["shape"])
    into, take = op.attrs.get("output_dim_idx", 0), op.attrs.get("input_dim_idx", 0)
    whole, batch, dims = ctx.tmp("shape"), ctx.tmp("batch"), ctx.tmp("dims")
    ctx.node("Shape", [source], [whole])
    ctx.node("Gather", [whole, ctx.const(np.array([take], "int64"), "dim")], [batch], axis=0)
    parts = []
    for k, d in enumerate(shape):
        parts.append(batch if k == into else ctx.const(np.array([d], "int64"), "dim"))
    ctx.node("Concat", parts, [dims], axis=0)
    value = np.array([fill_value(op.type, op.attrs)], ctx.dtype(out))
    ctx.node("ConstantOfShape", [dims], [out],
             value=ctx.onnx.numpy_helper.from_array(value, "value"))


def convert_dynamic_rnn(op, ctx, layout):
    """The loop of a DynamicRNN (``layout``: its
    :class:`~fluid_nb.framework.loops.DynamicRNNLayout`): its body converted into an ONNX
    Loop's graph."""
    onnx = ctx.onnx
    body_block, counter = layout.body, layout.counter
    arrays = _arrays(ctx)
    inputs = [a for a in arrays.values() if a[0] == "input"]
    if counter is None or not inputs:
        raise NotConvertible("a while loop that is not a DynamicRNN over a padded sequence")
    lengths = inputs[0][2]
    memories = {n: a[1] for n, a in arrays.items()
                if a[0] == "memory" and n in layout.read_arrays}
    prefix = f"while_{ctx.op_index}"
    iteration, condition = f"{prefix}.t", f"{prefix}.cond"
    states = {n: f"{prefix}.{n}.state" for n in memories}
    mask, step_mask = f"{prefix}.mask", f"{prefix}.step_mask"
    loop = {"counter": counter, "iteration": iteration, "states": states, "next": {},
            "scans": [], "advanced": False, "mask": mask}
    outer_nodes, outer_op, outer_index, outer_block = ctx.nodes, ctx.op, ctx.op_index, ctx.block
    ctx.nodes, ctx.extra["loop"], ctx.block = [], loop, body_block
    try:
        # the step's mask: [batch, 1], true while t < length
        ctx.start(op, f"{outer_index}.mask")
        ctx.node("Less", [iteration, lengths], [step_mask])
        ctx.node("Unsqueeze", [step_mask, ctx.const(np.array([1], "int64"), "axes")], [mask])
        skipped = _condition_ops(op, body_block, counter, ctx)
        for k, body_op in enumerate(body_block.ops):
            if k in skipped:
                continue
            ctx.start(body_op, f"{outer_index}.{k}")
            convert = _converter_of(body_op.type)
            if convert is None:
                raise NotConvertible(f"the loop's {body_op.type} (no converter)")
            convert(body_op, ctx)
        body_nodes = ctx.nodes
        scan_likes = [(ctx.dtype(x), len(ctx.shape(x))) for _, _, x in loop["scans"]]
        state_types = {n: ctx.dtype(memories[n]) for n in states}
    finally:
        ctx.nodes, ctx.extra["loop"], ctx.block = outer_nodes, None, outer_block
        ctx.op, ctx.op_index = outer_op, outer_index
    missing = [n for n in states if n not in loop["next"]]
    if missing:
        raise NotConvertible(f"memory {missing[0]} is read but never written back")
    true = f"{prefix}.true"
    body_nodes.append(onnx.helper.make_node(
        "Identity", [ctx.const(np.array(True), "true")], [true], name=f"{prefix}.cond_out"))
    def info(name, dtype):
        return onnx.helper.make_tensor_value_info(
            name, onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), None)
    body = onnx.helper.make_graph(
        body_nodes, f"{prefix}_body",
        [onnx.helper.make_tensor_value_info(iteration, onnx.TensorProto.INT64, []),
         onnx.helper.make_tensor_value_info(condition, onnx.TensorProto.BOOL, [])]
        + [info(states[n], state_types[n]) for n in states],
        [onnx.helper.make_tensor_value_info(true, onnx.TensorProto.BOOL, [])]
        + [info(loop["next"][n], state_types[n]) for n in states]
        + [info(step, dtype) for (_, step, _), (dtype, _) in zip(loop["scans"], scan_likes)])
    # the trip count: the longest sequence
    ctx.start(op, outer_index)
    trips = ctx.tmp("trips")
    ctx.node("ReduceMax", [lengths], [trips], keepdims=0)
    finals = [ctx.tmp("final") for _ in states]
    stacked = [ctx.tmp("stacked") for _ in loop["scans"]]
    ctx.node("Loop", [trips, ""] + [memories[n] for n in states], finals + stacked, body=body)
    for (array, _, _), name, (_, step_rank) in zip(loop["scans"], stacked, scan_likes):
        padded = ctx.tmp("padded")  # [time, batch, ...] -> [batch, time, ...]
        ctx.node("Transpose", [name], [padded], perm=[1, 0] + list(range(2, step_rank + 1)))
        arrays[array] = ("output", padded, lengths)
    for n, final in zip(states, finals):
        arrays[n] = ("memory", final)


#: ops that may pass the loop's condition on to the while's Condition variable
_CONDITION_COPIES = {"assign", "cast"}


def _condition_ops(op, body_block, counter, ctx):
    """The indices of the body's ops that only compute the loop's condition (counter <
    max_sequence_len, copied into the while's Condition, as a loop written by hand with
    ``assign(less_than(i, n), cond)`` does): the Loop's trip count stands for them."""
    condition = ctx.aliases.get(op.inputs["Condition"][0], op.inputs["Condition"][0])
    names, skipped, ops = {condition}, set(), body_block.ops
    maxima = {ctx.aliases.get(n, n) for n in ctx.extra.get("max_lengths", ())}

    def read_by_kept(name):
        return any(name in args for j, o in enumerate(ops) if j not in skipped
                   for args in o.inputs.values())

    for k in reversed(range(len(ops))):
        body_op = ops[k]
        outs = [n for args in body_op.outputs.values() for n in args]
        if not outs or not all(n in names for n in outs):
            continue
        if body_op.type == "less_than":
            if _in(body_op, "X") != counter or _in(body_op, "Y") not in maxima:
                raise NotConvertible("a loop condition other than step < max_sequence_len")
        elif body_op.type not in _CONDITION_COPIES:
            raise NotConvertible(f"the loop's condition computed by {body_op.type}")
        skipped.add(k)
        names.update(n for args in body_op.inputs.values() for n in args
                     if n in body_block.vars and not read_by_kept(n))
    return skipped


def _converter_of(op_type):
    from .converters import CONVERTERS
    return CONVERTERS.get(op_type)
