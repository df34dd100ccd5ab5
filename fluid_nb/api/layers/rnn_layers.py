"""DynamicRNN and StaticRNN of Fluid 1.x, built from the real ops inside a ``while`` loop.

The program a user inspects is the machinery itself. DynamicRNN, as Fluid 1.8 builds it:

- in the parent block: ``fill_constant`` (the step counter ``i``), ``lod_rank_table`` and
  ``max_sequence_len`` of the first step input, ``less_than(i, max_len)`` (the condition),
  ``lod_tensor_to_array`` per step input, ``reorder_lod_tensor_by_rank`` per static input
  and per memory init with ``need_reorder``, ``write_to_array(init, 0)`` per memory;
- in the ``while`` sub-block: ``read_from_array(inputs, i)``; ``read_from_array(mem, i)``
  then ``shrink_rnn_memory`` (the memory cut to the sequences still running at step i);
  ``shrink_rnn_memory`` of each reordered static input; the user's ops;
  ``write_to_array(out, i)`` per output; then ``increment(i)``,
  ``write_to_array(new_mem, i)`` per memory and ``less_than(i, max_len)``;
- after the loop: ``array_to_lod_tensor`` per output (the sequences back in input order).

StaticRNN (Fluid builds it on the ``recurrent`` op) is built here on the same ``while``
loop: each step input ``x`` ([T, N, ...], time major) is read at step ``i`` by ``slice``
(axes [0], StartsTensor ``i``, EndsTensor ``i + 1``, decrease_axis [0]), memories go through
a tensor array exactly as DynamicRNN's (without shrinking), each step output is written to
a tensor array, and after the loop the T entries are read back (``read_from_array`` at
constant indices) and ``stack``-ed into [T, N, ...]. T must be known when the RNN is built.
"""
import contextlib

from ...errors import InvalidArgument
from ...framework.type_checks import require_variable
from ...framework import unique_name
from ...tensor.dtypes import VarType
from ...framework import transaction
from ...framework.transaction import atomic
from ..layer_helper import LayerHelper
from .control_flow import While, increment, less_than
from .tensor import fill_constant

__all__ = ["DynamicRNN", "StaticRNN"]


_check_variable = require_variable


# --- the small array layers the RNNs are made of (Fluid's array_read/array_write/shrink_memory)
def _array_read(array, i):
    helper = LayerHelper("array_read")
    out = helper.create_variable_for_type_inference(dtype=array.dtype)
    helper.append_op(type="read_from_array", inputs={"X": [array], "I": [i]},
                     outputs={"Out": [out]})
    return out


def _array_write(x, i, array):
    LayerHelper("array_write").append_op(type="write_to_array", inputs={"X": [x], "I": [i]},
                                         outputs={"Out": [array]})
    return array


def _shrink_memory(x, i, table):
    helper = LayerHelper("shrink_memory")
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(type="shrink_rnn_memory", inputs={"X": [x], "I": [i], "RankTable": [table]},
                     outputs={"Out": [out]})
    return out


def _array_var(block, prefix, dtype):
    return block.create_var(name=unique_name.generate(prefix), type=VarType.LOD_TENSOR_ARRAY,
                            dtype=dtype)


@contextlib.contextmanager
def _in_block(block):
    """Layer functions called inside append to ``block`` (the RNN's parent block)."""
    program = block.program
    saved, program.current_block_idx = program.current_block_idx, block.idx
    try:
        yield block
    finally:
        program.current_block_idx = saved


# --- DynamicRNN -------------------------------------------------------------------------------
class DynamicRNN:
    """An RNN over a batch of variable-length sequences (LoD level ``level`` of the step
    inputs). Sequences are ranked by length, so each step's batch is the prefix of the ranking
    still running; outputs come back as LoD tensors in the input order.

    Example::

        drnn = fluid.layers.DynamicRNN()
        with drnn.block():
            word = drnn.step_input(sentence)
            prev = drnn.memory(shape=[200])
            hidden = fluid.layers.fc(input=[word, prev], size=200, act='relu')
            drnn.update_memory(prev, hidden)
            drnn.output(hidden)
        last = fluid.layers.sequence_last_step(drnn())
    """

    BEFORE_RNN, IN_RNN, AFTER_RNN = 0, 1, 2

    def __init__(self, name=None):
        self.helper = LayerHelper("dynamic_rnn", name=name)
        self.status = DynamicRNN.BEFORE_RNN
        self.lod_rank_table = None
        self.max_seq_len = None
        self.step_idx = None
        self.zero_idx = None
        self.mem_dict = {}
        self.mem_link = []
        self.input_array = []
        self.output_array = []
        self.outputs = []
        self.cond = self.helper.create_variable_for_type_inference(dtype="bool")
        self.cond.stop_gradient = False

    # --- the block ------------------------------------------------------------------------
    @contextlib.contextmanager
    def block(self):
        """The step: ops appended inside run once per time step."""
        if self.status != DynamicRNN.BEFORE_RNN:
            raise InvalidArgument("DynamicRNN.block: expected to be entered once, but it was "
                                  "entered again")
        with atomic():  # a step that fails leaves nothing of the loop behind
            yield from self._block()

    def _block(self):
        self.step_idx = fill_constant(shape=[1], dtype="int64", value=0, force_cpu=True)
        self.step_idx.stop_gradient = False
        self.status = DynamicRNN.IN_RNN
        with While(self.cond).block():
            yield
            if self.lod_rank_table is None:
                raise InvalidArgument("DynamicRNN.block: step_input expected to be called in "
                                      "the block, but it was not")
            increment(x=self.step_idx, value=1.0, in_place=True)
            for new_mem, mem_array in self.mem_link:
                _array_write(new_mem, self.step_idx, mem_array)
            less_than(x=self.step_idx, y=self.max_seq_len, force_cpu=True, cond=self.cond)
        self.status = DynamicRNN.AFTER_RNN
        for array in self.output_array:
            helper = LayerHelper("array_to_lod_tensor")
            out = helper.create_variable_for_type_inference(dtype=array.dtype)
            helper.append_op(type="array_to_lod_tensor",
                             inputs={"X": [array], "RankTable": [self.lod_rank_table]},
                             outputs={"Out": [out]})
            self.outputs.append(out)

    def __call__(self, *args, **kwargs):
        """The outputs (one Variable, or a list) as LoD tensors in the input order."""
        if self.status != DynamicRNN.AFTER_RNN:
            raise InvalidArgument("DynamicRNN: outputs expected to be read after the block, "
                                  "but the block has not finished")
        return self.outputs[0] if len(self.outputs) == 1 else self.outputs

    # --- inputs ---------------------------------------------------------------------------
    def step_input(self, x, level=0):
        """Step t of the sequences of ``x`` (LoD level ``level``): item t of each sequence
        longer than t, in rank order. The first step input fixes the rank table."""
        self._assert_in_rnn("step_input")
        _check_variable("DynamicRNN.step_input", "x", x)
        parent = self._parent_block()
        if self.lod_rank_table is None:
            self.lod_rank_table = parent.create_var(
                name=unique_name.generate("lod_rank_table"), type=VarType.LOD_RANK_TABLE)
            self.lod_rank_table.stop_gradient = True
            parent.append_op(type="lod_rank_table", inputs={"X": [x]},
                             outputs={"Out": [self.lod_rank_table]}, attrs={"level": level})
            self.max_seq_len = parent.create_var(
                name=unique_name.generate("dynamic_rnn_max_seq_len"), dtype="int64")
            self.max_seq_len.stop_gradient = False
            parent.append_op(type="max_sequence_len",
                             inputs={"RankTable": [self.lod_rank_table]},
                             outputs={"Out": [self.max_seq_len]})
            if transaction.journal is not None:  # made before the block: restore on failure
                transaction.note_change(self.cond)
            self.cond.stop_gradient = True
            parent.append_op(type="less_than",
                             inputs={"X": [self.step_idx], "Y": [self.max_seq_len]},
                             outputs={"Out": [self.cond]}, attrs={"force_cpu": True})
        input_array = _array_var(parent, "dynamic_rnn_input_array", x.dtype)
        self.input_array.append((input_array, x.dtype))
        parent.append_op(type="lod_tensor_to_array",
                         inputs={"X": [x], "RankTable": [self.lod_rank_table]},
                         outputs={"Out": [input_array]})
        return _array_read(input_array, self.step_idx)

    def static_input(self, x):
        """``x`` whole at every step, its sequences (rows without LoD) in rank order and cut
        to those still running."""
        self._assert_in_rnn("static_input")
        _check_variable("DynamicRNN.static_input", "x", x)
        if self.lod_rank_table is None:
            raise InvalidArgument("DynamicRNN.static_input: step_input expected to be called "
                                  "first, but it was not")
        parent = self._parent_block()
        reordered = parent.create_var(
            name=unique_name.generate("dynamic_rnn_static_input_reordered"),
            type=VarType.LOD_TENSOR, dtype=x.dtype)
        parent.append_op(type="reorder_lod_tensor_by_rank",
                         inputs={"X": [x], "RankTable": [self.lod_rank_table]},
                         outputs={"Out": [reordered]})
        return _shrink_memory(reordered, self.step_idx, self.lod_rank_table)

    # --- memories -------------------------------------------------------------------------
    def memory(self, init=None, shape=None, value=0.0, need_reorder=False, dtype="float32"):
        """A value carried from step to step: ``init`` (reordered by rank when need_reorder:
        one row/sequence per input sequence, in input order), or ``value`` of ``shape`` (no
        batch dim) per sequence. Each step sees it cut to the sequences still running."""
        self._assert_in_rnn("memory")
        self._init_zero_idx()
        parent = self._parent_block()
        if init is None:
            if shape is None:
                raise InvalidArgument("DynamicRNN.memory: shape expected when init is None, "
                                      "but received None")
            if not self.input_array:
                raise InvalidArgument("DynamicRNN.memory: step_input expected before "
                                      "memory(shape=...), but it was not called")
            init = parent.create_var(name=unique_name.generate("mem_init"), dtype=dtype)
            array, in_dtype = self.input_array[0]
            in0 = parent.create_var(name=unique_name.generate("in0"), dtype=in_dtype)
            parent.append_op(type="read_from_array",
                             inputs={"X": [array], "I": [self.zero_idx]}, outputs={"Out": [in0]})
            parent.append_op(type="fill_constant_batch_size_like", inputs={"Input": [in0]},
                             outputs={"Out": [init]},
                             attrs={"shape": [-1] + [int(d) for d in shape],
                                    "value": float(value), "dtype": int(init.dtype)})
            return self.memory(init=init)
        _check_variable("DynamicRNN.memory", "init", init)
        if self.lod_rank_table is None:
            raise InvalidArgument("DynamicRNN.memory: step_input expected before memory, "
                                  "but it was not called")
        if need_reorder:
            reordered = parent.create_var(
                name=unique_name.generate("dynamic_rnn_mem_init_reordered"),
                type=VarType.LOD_TENSOR, dtype=init.dtype)
            parent.append_op(type="reorder_lod_tensor_by_rank",
                             inputs={"X": [init], "RankTable": [self.lod_rank_table]},
                             outputs={"Out": [reordered]})
            init = reordered
        mem_array = _array_var(parent, "dynamic_rnn_mem_array", init.dtype)
        parent.append_op(type="write_to_array", inputs={"X": [init], "I": [self.zero_idx]},
                         outputs={"Out": [mem_array]})
        memory = _shrink_memory(_array_read(mem_array, self.step_idx), self.step_idx,
                                self.lod_rank_table)
        self.mem_dict[memory.name] = mem_array
        return memory

    def update_memory(self, ex_mem, new_mem):
        """The memory ``ex_mem`` holds ``new_mem`` at the next step."""
        self._assert_in_rnn("update_memory")
        _check_variable("DynamicRNN.update_memory", "ex_mem", ex_mem)
        _check_variable("DynamicRNN.update_memory", "new_mem", new_mem)
        mem_array = self.mem_dict.get(ex_mem.name)
        if mem_array is None:
            raise InvalidArgument(f"DynamicRNN.update_memory: ex_mem expected a memory made "
                                  f"by DynamicRNN.memory, but received '{ex_mem.name}'")
        self.mem_link.append((new_mem, mem_array))

    def output(self, *outputs):
        """Collect each output's step values (returned by ``drnn()`` as LoD tensors)."""
        self._assert_in_rnn("output")
        parent = self._parent_block()
        for each in outputs:
            _check_variable("DynamicRNN.output", "outputs", each)
            array = _array_var(parent, "_".join([self.helper.name, "output_array", each.name]),
                               each.dtype)
            _array_write(each, self.step_idx, array)
            self.output_array.append(array)

    # --- internals --------------------------------------------------------------------------
    def _init_zero_idx(self):
        if self.zero_idx is None:
            parent = self._parent_block()
            self.zero_idx = parent.create_var(name=unique_name.generate("zero_idx"),
                                              dtype="int64")
            parent.append_op(type="fill_constant", outputs={"Out": [self.zero_idx]},
                             attrs={"shape": [1], "dtype": int(VarType.INT64), "value": 0.0,
                                    "force_cpu": True})

    def _parent_block(self):
        return self.helper.main_program.current_block().parent_block

    def _assert_in_rnn(self, method):
        if self.status != DynamicRNN.IN_RNN:
            raise InvalidArgument(f"DynamicRNN.{method}: expected to be called inside "
                                  f"DynamicRNN.block(), but it was called outside")


# --- StaticRNN --------------------------------------------------------------------------------
class StaticRNN:
    """An RNN over equal-length sequences given time major ([T, N, ...]).

    Example::

        rnn = fluid.layers.StaticRNN()
        with rnn.step():
            word = rnn.step_input(x_emb)                      # [N, D] at each step
            prev = rnn.memory(shape=[-1, hidden], batch_ref=word)
            hidden = fluid.layers.fc(input=[word, prev], size=hidden, act='relu')
            rnn.update_memory(prev, hidden)
            rnn.step_output(hidden)
        result = rnn()                                       # [T, N, hidden]
    """

    BEFORE_RNN_BLOCK, IN_RNN_BLOCK, AFTER_RNN_BLOCK = 0, 1, 2

    def __init__(self, name=None):
        self.helper = LayerHelper("static_rnn", name=name)
        self.status = StaticRNN.BEFORE_RNN_BLOCK
        self.seq_len = None
        self.step_idx = None
        self.step_end = None  # step_idx + 1, the slice end of the step inputs
        self.zero_idx = None
        self.cond = None
        self.sources = {}  # step input name -> the [T, N, ...] variable it slices
        self.memories = {}  # memory name -> [mem_array, new value or None]
        self.output_arrays = []
        self.outputs = []

    @contextlib.contextmanager
    def step(self):
        """The step: ops appended inside run once per time step."""
        if self.status != StaticRNN.BEFORE_RNN_BLOCK:
            raise InvalidArgument("StaticRNN.step: expected to be entered once, but it was "
                                  "entered again")
        with atomic():  # a step that fails leaves nothing of the loop behind
            yield from self._step()

    def _step(self):
        self.step_idx = fill_constant(shape=[1], dtype="int64", value=0, force_cpu=True)
        self.zero_idx = fill_constant(shape=[1], dtype="int64", value=0, force_cpu=True)
        self.cond = self.helper.create_variable_for_type_inference(dtype="bool")
        self.cond.stop_gradient = True
        # the loop bound (T) and the first condition are set by the first step_input
        self.status = StaticRNN.IN_RNN_BLOCK
        with While(self.cond).block():
            yield
            if self.seq_len is None:
                raise InvalidArgument("StaticRNN.step: step_input expected to be called in "
                                      "the block, but it was not")
            increment(x=self.step_idx, value=1.0, in_place=True)
            for name, (mem_array, new) in self.memories.items():
                if new is None:
                    raise InvalidArgument(f"StaticRNN.step: memory '{name}' expected to be "
                                          f"updated by update_memory, but it was not")
                _array_write(new, self.step_idx, mem_array)
            less_than(x=self.step_idx, y=self.seq_len_var, force_cpu=True, cond=self.cond)
        self.status = StaticRNN.AFTER_RNN_BLOCK
        for array in self.output_arrays:
            steps = []
            for t in range(self.seq_len):
                index = fill_constant(shape=[1], dtype="int64", value=t, force_cpu=True)
                steps.append(_array_read(array, index))
            helper = LayerHelper("stack")
            out = helper.create_variable_for_type_inference(dtype=array.dtype)
            helper.append_op(type="stack", inputs={"X": steps}, outputs={"Y": [out]},
                             attrs={"axis": 0})
            self.outputs.append(out)

    def step_input(self, x):
        """Row t of ``x`` ([T, ...]) at step t. All step inputs share T."""
        self._assert_in_rnn("step_input")
        _check_variable("StaticRNN.step_input", "x", x)
        if not x.shape or x.shape[0] < 0:
            raise InvalidArgument(f"StaticRNN.step_input: x expected a known sequence length "
                                  f"in dim 0, but received shape {list(x.shape)}")
        if self.seq_len is None:
            self.seq_len = int(x.shape[0])
            parent = self._parent_block()
            with _in_block(parent):
                self.seq_len_var = fill_constant(shape=[1], dtype="int64", value=self.seq_len,
                                                 force_cpu=True)
                less_than(x=self.step_idx, y=self.seq_len_var, force_cpu=True, cond=self.cond)
            # this step's bounds as values of the step itself (the counter is updated in
            # place, so the backward pass would read its last value): kept per step
            self.step_begin = increment(x=self.step_idx, value=0.0, in_place=False)
            self.step_end = increment(x=self.step_idx, value=1.0, in_place=False)
        elif self.seq_len != x.shape[0]:
            raise InvalidArgument(f"StaticRNN.step_input: x expected sequence length "
                                  f"{self.seq_len} (dim 0, as the first step input), but "
                                  f"received {x.shape[0]}")
        helper = LayerHelper("slice")
        out = helper.create_variable_for_type_inference(dtype=x.dtype)
        helper.append_op(type="slice",
                         inputs={"Input": [x], "StartsTensor": [self.step_begin],
                                 "EndsTensor": [self.step_end]},
                         outputs={"Out": [out]},
                         attrs={"axes": [0], "starts": [-1], "ends": [-1],
                                "decrease_axis": [0], "infer_flags": [-1]})
        self.sources[out.name] = x
        return out

    def memory(self, init=None, shape=None, batch_ref=None, init_value=0.0,
               init_batch_dim_idx=0, ref_batch_dim_idx=1):
        """A value carried from step to step: ``init``, or ``init_value`` of ``shape`` with
        dim ``init_batch_dim_idx`` the batch size of ``batch_ref`` (dim
        ``ref_batch_dim_idx``; a step input stands for its whole [T, N, ...] input)."""
        self._assert_in_rnn("memory")
        parent = self._parent_block()
        if init is None:
            if shape is None or batch_ref is None:
                raise InvalidArgument("StaticRNN.memory: shape and batch_ref expected when "
                                      "init is None, but received None")
            _check_variable("StaticRNN.memory", "batch_ref", batch_ref)
            ref = self.sources.get(batch_ref.name, batch_ref)
            if parent._find_var_recursive(ref.name) is None:
                raise InvalidArgument(f"StaticRNN.memory: batch_ref expected a step input or "
                                      f"a variable outside the step, but received "
                                      f"'{batch_ref.name}'")
            boot = parent.create_var(
                name=unique_name.generate("@".join([self.helper.name, "memory_boot"])),
                dtype=batch_ref.dtype)
            parent.append_op(type="fill_constant_batch_size_like", inputs={"Input": [ref]},
                             outputs={"Out": [boot]},
                             attrs={"shape": [int(d) for d in shape],
                                    "value": float(init_value), "dtype": int(boot.dtype),
                                    "input_dim_idx": ref_batch_dim_idx,
                                    "output_dim_idx": init_batch_dim_idx})
            return self.memory(init=boot)
        _check_variable("StaticRNN.memory", "init", init)
        mem_array = _array_var(parent, "@".join([self.helper.name, "mem_array"]), init.dtype)
        parent.append_op(type="write_to_array", inputs={"X": [init], "I": [self.zero_idx]},
                         outputs={"Out": [mem_array]})
        pre_mem = _array_read(mem_array, self.step_idx)
        self.memories[pre_mem.name] = [mem_array, None]
        return pre_mem

    def update_memory(self, mem, var):
        """The memory ``mem`` holds ``var`` at the next step."""
        self._assert_in_rnn("update_memory")
        _check_variable("StaticRNN.update_memory", "mem", mem)
        _check_variable("StaticRNN.update_memory", "var", var)
        if mem.name not in self.memories:
            raise InvalidArgument(f"StaticRNN.update_memory: mem expected a memory made by "
                                  f"StaticRNN.memory, but received '{mem.name}'")
        self.memories[mem.name][1] = var

    def step_output(self, o):
        """Collect ``o`` at every step; ``rnn()`` returns them stacked ([T, ...])."""
        self._assert_in_rnn("step_output")
        _check_variable("StaticRNN.step_output", "o", o)
        array = _array_var(self._parent_block(), "@".join([self.helper.name, "out_array"]),
                           o.dtype)
        _array_write(o, self.step_idx, array)
        self.output_arrays.append(array)

    def output(self, *outputs):
        for each in outputs:
            self.step_output(each)

    def __call__(self, *args, **kwargs):
        if self.status != StaticRNN.AFTER_RNN_BLOCK:
            raise InvalidArgument("StaticRNN: outputs expected to be read after the step "
                                  "block, but the block has not finished")
        if not self.outputs:
            raise InvalidArgument("StaticRNN: outputs expected (step_output), but the RNN "
                                  "has none")
        return self.outputs[0] if len(self.outputs) == 1 else self.outputs

    def _parent_block(self):
        return self.helper.main_program.current_block().parent_block

    def _assert_in_rnn(self, method):
        if self.status != StaticRNN.IN_RNN_BLOCK:
            raise InvalidArgument(f"StaticRNN.{method}: expected to be called inside "
                                  f"StaticRNN.step(), but it was called outside")
