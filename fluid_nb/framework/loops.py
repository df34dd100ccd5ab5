"""What a ``while`` loop is for: the DynamicRNN recogniser.

A DynamicRNN (``fluid.layers.DynamicRNN``, or the same ops written by hand) is a ``while``
op with ops around it in its own block and a body that follows a pattern:

- before the loop: ``lod_rank_table`` ranks the input sequences by length (the table), and
  ``lod_tensor_to_array`` splits each step input by that table into a tensor array;
- in the body: ``read_from_array`` reads step t of each step input and each memory's array,
  ``shrink_rnn_memory`` cuts a memory (or a static input) to the sequences still running,
  ``write_to_array`` writes the step's outputs and the memories' next values, and
  ``increment`` advances the step counter;
- after the loop: ``array_to_lod_tensor`` joins each output array back into a LoD tensor in
  the input order.

:func:`dynamic_rnn_layout` finds that pattern by the ops' types and slots, once, for every
part of the library that treats a DynamicRNN as one thing (the loop view, the ONNX export).
"""
import dataclasses

from .blocks import sub_block

__all__ = ["DynamicRNNLayout", "dynamic_rnn_layout"]


@dataclasses.dataclass(frozen=True)
class DynamicRNNLayout:
    """A DynamicRNN's parts, as variable names.

    ``rank_table``: the ``lod_rank_table`` output the step inputs are split by.
    ``step_inputs``: {array: the LoD tensor split into it}, one per step input the body reads.
    ``read_arrays``: every array the body reads a step of (step inputs and memory arrays).
    ``shrinks``: {shrunk value: (source, kind)} per ``shrink_rnn_memory`` of the body on the
    table: ``kind`` is ``"memory"`` when the source is a value read from an array in the body
    (a memory), ``"static_input"`` otherwise (a static input reordered by rank).
    ``outputs``: {LoD tensor: the array it is joined from}, per ``array_to_lod_tensor`` on
    the table after the loop.
    ``counter``: the step index (the X of the body's first ``increment``), or None.
    """
    while_op: object = dataclasses.field(repr=False)
    body: object = dataclasses.field(repr=False)
    rank_table: str
    step_inputs: dict
    read_arrays: frozenset
    shrinks: dict
    outputs: dict
    counter: object = None

    @property
    def memory_arrays(self):
        """The arrays the body reads that are no step input: the memories' arrays."""
        return self.read_arrays - set(self.step_inputs)


def _first(op, slot):
    return op.inputs[slot][0] if op.inputs.get(slot) else None


def _first_out(op, slot):
    return op.outputs[slot][0] if op.outputs.get(slot) else None


def dynamic_rnn_layout(while_op):
    """The :class:`DynamicRNNLayout` of ``while_op``, or None when it is no DynamicRNN: a
    ``lod_tensor_to_array`` in the loop's block makes an array the body reads, and the rank
    table it splits by is the output of a ``lod_rank_table`` of that block. The first such
    ``lod_tensor_to_array`` decides the table."""
    parent, body = while_op.block, sub_block(while_op)
    read_ops = [op for op in body.ops if op.type == "read_from_array"]
    read_arrays = frozenset(n for op in read_ops for n in op.inputs.get("X", ()))
    to_array = [op for op in parent.ops
                if op.type == "lod_tensor_to_array" and _first_out(op, "Out") in read_arrays]
    if not to_array:
        return None
    table = _first(to_array[0], "RankTable")
    if not any(op.type == "lod_rank_table" and op.outputs.get("Out") == (table,)
               for op in parent.ops):
        return None
    read_values = {_first_out(op, "Out") for op in read_ops}
    shrinks = {}
    for op in body.ops:
        if op.type == "shrink_rnn_memory" and op.inputs.get("RankTable") == (table,):
            source = _first(op, "X")
            shrinks[_first_out(op, "Out")] = (
                source, "memory" if source in read_values else "static_input")
    step_inputs = {_first_out(op, "Out"): _first(op, "X") for op in to_array
                   if op.inputs.get("RankTable") == (table,)}
    outputs = {_first_out(op, "Out"): _first(op, "X") for op in parent.ops
               if op.type == "array_to_lod_tensor" and op.inputs.get("RankTable") == (table,)}
    counter = next((_first(op, "X") for op in body.ops if op.type == "increment"), None)
    return DynamicRNNLayout(while_op, body, table, step_inputs, read_arrays, shrinks, outputs,
                            counter)
