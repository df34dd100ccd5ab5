"""The Fluid 1.6+ RNN API: ``RNNCell``, ``GRUCell``, ``LSTMCell`` and ``rnn()``.

A cell maps ``(inputs, states)`` of one step to ``(outputs, new_states)``; ``rnn`` runs it
over the time dim of a padded batch in a ``While`` loop over tensor arrays (the number of
steps read from the inputs when the program runs, so the time dim may be unknown), and
with ``sequence_length`` keeps each sequence's state once it has ended (the step's mask
picks the old state). The GRU and LSTM cells are Fluid's BasicGRUUnit and
BasicLSTMUnit: the input and the previous hidden state concatenated, one matmul per gate
group; their parameters are made at the first call (when the input width is known) and
named ``<name>/BasicGRUUnit_N.w_0`` and so on (N counted when the cell is made), as
Fluid names them.
"""
from ...errors import InvalidArgument, InvalidType, expected
from ...framework import unique_name
from ...framework.program import Variable, default_main_program
from ..initializer import Constant
from ..layer_helper import LayerHelper
from . import control_flow, manip, nn, ops, tensor
from .manip import reshape, split, transpose
from .math import shape as nn_shape
from .utils import flatten, map_structure, pack_sequence_as

__all__ = ["RNNCell", "GRUCell", "LSTMCell", "rnn"]


_flatten, _pack_like, _map = flatten, pack_sequence_as, map_structure


class RNNCell:
    """One step of a recurrent network: ``call(inputs, states) -> (outputs, new_states)``."""

    def call(self, inputs, states, **kwargs):
        raise NotImplementedError("RNNCell.call: a cell defines the step it computes")

    def __call__(self, inputs, states, **kwargs):
        return self.call(inputs, states, **kwargs)

    def get_initial_states(self, batch_ref, shape=None, dtype=None, init_value=0,
                           batch_dim_idx=0):
        """States filled with ``init_value``, their batch size taken from ``batch_ref``'s
        dim ``batch_dim_idx`` (shapes and dtypes default to the cell's state_shape and
        state_dtype)."""
        if not isinstance(batch_ref, Variable):
            batch_ref = _flatten(batch_ref)[0]
        shapes = self.state_shape if shape is None else shape
        dtypes = self.state_dtype if dtype is None else dtype

        def is_shape(value):
            return isinstance(value, (list, tuple)) and all(isinstance(d, int) for d in value)

        def states_of(shape_part, dtype_part):
            if is_shape(shape_part):
                # the batch dim comes first; -1 is put there unless the shape has it
                full = list(shape_part) if shape_part[:1] in ([-1], (-1,)) else \
                    [-1] + list(shape_part)
                return tensor.fill_constant_batch_size_like(
                    input=batch_ref, shape=full, dtype=dtype_part,
                    value=init_value, input_dim_idx=batch_dim_idx)
            parts = dtype_part if isinstance(dtype_part, (list, tuple)) else \
                [dtype_part] * len(shape_part)
            return [states_of(s, d) for s, d in zip(shape_part, parts)]
        return states_of(shapes, dtypes)

    @property
    def state_shape(self):
        raise NotImplementedError("RNNCell.state_shape: a cell says the shape of its states")

    @property
    def state_dtype(self):
        return "float32"


def _check_hidden(where, hidden_size, dtype):
    if isinstance(hidden_size, bool) or not isinstance(hidden_size, int) or hidden_size < 1:
        raise InvalidType(expected(where, "hidden_size", "a positive int", repr(hidden_size)))
    if dtype not in ("float32", "float64"):
        raise InvalidType(expected(where, "dtype", "float32 or float64", repr(dtype)))


def _param(name, shape, dtype, attr, is_bias):
    """A parameter of a cell, named as Fluid names its BasicGRU/LSTMUnit's (the attr's own
    name wins)."""
    import copy
    from ..param_attr import ParamAttr
    attr = copy.deepcopy(ParamAttr._to_attr(attr)) if attr is not False else ParamAttr()
    attr.name = attr.name or name
    return tensor.create_parameter(shape=shape, dtype=dtype, name=attr.name, attr=attr,
                                   is_bias=is_bias,
                                   default_initializer=Constant(0.0) if is_bias else None)


class GRUCell(RNNCell):
    """h' = u h + (1 - u) act(W_c [x, r h] + b_c), [r, u] = act_g(W_g [x, h] + b_g)."""

    def __init__(self, hidden_size, param_attr=None, bias_attr=None, gate_activation=None,
                 activation=None, dtype="float32", name="GRUCell"):
        _check_hidden("GRUCell", hidden_size, dtype)
        self.hidden_size, self._dtype, self._name = hidden_size, dtype, name
        self._param_attr, self._bias_attr = param_attr, bias_attr
        self._gate_activation = gate_activation or ops.sigmoid
        self._activation = activation or ops.tanh
        # named when the cell is made, its parameters at the first call (the input width
        # is known then), as Fluid's BasicGRUUnit does
        self._unit_name = unique_name.generate(f"{name}/BasicGRUUnit")
        self._params = None

    def _build(self, input_size):
        full = self._unit_name
        h = self.hidden_size
        self._params = (
            _param(f"{full}.w_0", [input_size + h, 2 * h], self._dtype, self._param_attr, False),
            _param(f"{full}.w_1", [input_size + h, h], self._dtype, self._param_attr, False),
            _param(f"{full}.b_0", [2 * h], self._dtype, self._bias_attr, True),
            _param(f"{full}.b_1", [h], self._dtype, self._bias_attr, True))

    def call(self, inputs, states):
        for label, value in (("inputs", inputs), ("states", states)):
            if not isinstance(value, Variable):
                raise InvalidType(expected("GRUCell", label, "a Variable",
                                           type(value).__name__))
        if self._params is None:
            self._build(inputs.shape[-1])
        gate_w, cand_w, gate_b, cand_b = self._params
        gates = self._gate_activation(nn.matmul(tensor.concat([inputs, states], 1), gate_w)
                                      + gate_b)
        r, u = split(gates, num_or_sections=2, dim=1)
        candidate = self._activation(
            nn.matmul(tensor.concat([inputs, r * states], 1), cand_w) + cand_b)
        new_hidden = u * states + (1.0 - u) * candidate
        return new_hidden, new_hidden

    @property
    def state_shape(self):
        return [self.hidden_size]

    @property
    def state_dtype(self):
        return self._dtype


class LSTMCell(RNNCell):
    """[i, j, f, o] = W [x, h] + b; c' = c sigmoid(f + forget_bias) + sigmoid(i) tanh(j);
    h' = tanh(c') sigmoid(o)."""

    def __init__(self, hidden_size, param_attr=None, bias_attr=None, gate_activation=None,
                 activation=None, forget_bias=1.0, dtype="float32", name="LSTMCell"):
        _check_hidden("LSTMCell", hidden_size, dtype)
        self.hidden_size, self._dtype, self._name = hidden_size, dtype, name
        self._param_attr, self._bias_attr = param_attr, bias_attr
        self._gate_activation = gate_activation or ops.sigmoid
        self._activation = activation or ops.tanh
        self._forget_bias = float(forget_bias)
        self._unit_name = unique_name.generate(f"{name}/BasicLSTMUnit")
        self._params = None

    def _build(self, input_size):
        full = self._unit_name
        h = self.hidden_size
        self._params = (
            _param(f"{full}.w_0", [input_size + h, 4 * h], self._dtype, self._param_attr, False),
            _param(f"{full}.b_0", [4 * h], self._dtype, self._bias_attr, True))

    def call(self, inputs, states):
        if not isinstance(states, (list, tuple)) or len(states) != 2:
            raise InvalidType(expected("LSTMCell", "states", "a list [hidden, cell]",
                                       type(states).__name__))
        pre_hidden, pre_cell = states
        if self._params is None:
            self._build(inputs.shape[-1])
        weight, bias = self._params
        gates = nn.matmul(tensor.concat([inputs, pre_hidden], 1), weight) + bias
        i, j, f, o = split(gates, num_or_sections=4, dim=-1)
        new_cell = pre_cell * self._gate_activation(f + self._forget_bias) + \
            self._gate_activation(i) * self._activation(j)
        new_hidden = self._activation(new_cell) * self._gate_activation(o)
        return new_hidden, [new_hidden, new_cell]

    @property
    def state_shape(self):
        return [[self.hidden_size], [self.hidden_size]]

    @property
    def state_dtype(self):
        return self._dtype


def rnn(cell, inputs, initial_states=None, sequence_length=None, time_major=False,
        is_reverse=False, **kwargs):
    """Run ``cell`` over the time dim of ``inputs`` ([batch, time, ...], or [time, batch,
    ...] with ``time_major``). Returns ``(outputs, final_states)``: the outputs of every
    step (same layout as the inputs) and the states after each sequence's last step.

    With lengths ``L = sequence_length``, step ``t`` keeps the old state of a sequence that
    has ended: ``state_t = new_t * m_t + state_{t-1} * (1 - m_t)``, ``m_t = [t < L]``.
    The steps run in a ``While`` loop whose bound is read from the inputs when the program
    runs, so the time dim may be unknown (-1) when the program is built. Extra keyword
    arguments go to ``cell.call`` at every step (inputs that do not vary over time).
    """
    if not isinstance(cell, RNNCell):
        raise InvalidType(expected("rnn", "cell", "an RNNCell", type(cell).__name__))
    if sequence_length is not None and not isinstance(sequence_length, Variable):
        raise InvalidType(expected("rnn", "sequence_length", "None or a Variable",
                                   type(sequence_length).__name__))
    for i, x in enumerate(_flatten(inputs)):
        if not isinstance(x, Variable):
            raise InvalidType(expected("rnn", f"inputs[{i}]", "a Variable", type(x).__name__))
    if initial_states is None:
        initial_states = cell.get_initial_states(batch_ref=inputs,
                                                 batch_dim_idx=1 if time_major else 0)

    def batch_time_swapped(x):
        return transpose(x, [1, 0] + list(range(2, len(x.shape))))

    if not time_major:
        inputs = _map(batch_time_swapped, inputs)
    steps = _time_steps(_flatten(inputs)[0])
    mask = None
    if sequence_length is not None:
        mask = transpose(_sequence_mask(sequence_length, steps,
                                        _flatten(initial_states)[0].dtype), [1, 0])
    if is_reverse:
        inputs = _map(lambda x: _reverse(x, axis=[0]), inputs)
        mask = _reverse(mask, axis=[0]) if mask is not None else None
    if mask is not None:
        mask.stop_gradient = True
    outputs_arrays, final_states = _run_steps(cell, inputs, initial_states, mask, steps,
                                              kwargs)
    final_outputs = _map(lambda array: manip.tensor_array_to_tensor(
        array, axis=0, use_stack=True)[0], outputs_arrays)
    if is_reverse:
        final_outputs = _map(lambda x: _reverse(x, axis=[0]), final_outputs)
    if not time_major:
        final_outputs = _map(batch_time_swapped, final_outputs)
    return final_outputs, final_states


def _run_steps(cell, inputs, initial_states, mask, steps, kwargs):
    """The While loop of ``rnn``: step t slices row t of every time-major input, reads the
    states of step t from tensor arrays and writes step t + 1's. Returns the arrays of the
    step outputs and the final states."""
    step_idx = tensor.fill_constant([1], "int64", 0, force_cpu=True)
    step_idx.stop_gradient = True
    cond = control_flow.less_than(step_idx, steps)
    states_arrays = _map(lambda x: control_flow.array_write(x, step_idx), initial_states)
    outputs_arrays = None
    with control_flow.While(cond).block():
        # this step's bounds as values of the step itself: the backward pass of the loop
        # must not read the in-place counter's last value
        begin = control_flow.increment(step_idx, value=0.0, in_place=False)
        end = control_flow.increment(step_idx, value=1.0, in_place=False)
        step_inputs = _map(lambda x: _time_row(x, begin, end), inputs)
        states = _map(lambda array: control_flow.array_read(array, step_idx), states_arrays)
        outputs, new_states = cell.call(step_inputs, _map(lambda x: x, states), **kwargs)
        if len(_flatten(new_states)) != len(_flatten(states)):
            raise InvalidArgument(expected("rnn", "the new states of cell.call",
                                           f"{len(_flatten(states))} states as the initial "
                                           f"ones", len(_flatten(new_states))))
        if mask is not None:
            step_mask = _time_row(mask, begin, end)
            new_states = _map(lambda old, new: ops.elementwise_mul(new, step_mask, axis=0)
                              - ops.elementwise_mul(old, step_mask - 1.0, axis=0),
                              states, new_states)
        outputs_arrays = _map(lambda x: _array_in_parent_block(x.dtype), outputs)
        _map(lambda x, array: control_flow.array_write(x, i=step_idx, array=array),
             outputs, outputs_arrays)
        control_flow.increment(x=step_idx, value=1.0, in_place=True)
        _map(lambda x, array: control_flow.array_write(x, i=step_idx, array=array),
             new_states, states_arrays)
        control_flow.less_than(step_idx, steps, cond=cond)
    final_states = _pack_like(new_states, [control_flow.array_read(array, step_idx)
                                           for array in _flatten(states_arrays)])
    return outputs_arrays, final_states


def _time_steps(x):
    """The length of dim 0 of ``x`` when the program runs, as an int64 [1]."""
    length = reshape(x=_slice_rows(nn_shape(x), 0, 1), shape=[1])
    length = tensor.cast(length, "int64")
    length.stop_gradient = True
    return length


def _slice_rows(x, begin, end):
    from .manip import slice as slice_layer
    return slice_layer(x, axes=[0], starts=[begin], ends=[end])


def _time_row(x, begin, end):
    """Row ``begin`` of dim 0 of ``x``, the dim dropped (begin and end are int64 [1])."""
    helper = LayerHelper("slice")
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(type="slice",
                     inputs={"Input": [x], "StartsTensor": [begin], "EndsTensor": [end]},
                     outputs={"Out": [out]},
                     attrs={"axes": [0], "starts": [-1], "ends": [-1],
                            "decrease_axis": [0], "infer_flags": [-1]})
    return out


def _array_in_parent_block(dtype):
    program = default_main_program()
    current = program.current_block_idx
    program.current_block_idx = program.current_block().parent_idx
    try:
        return control_flow.create_array(dtype)
    finally:
        program.current_block_idx = current


def _reverse(x, axis):
    from .math import reverse
    return reverse(x, axis=axis)


def _sequence_mask(lengths, maxlen, dtype):
    from .sequence import sequence_mask
    return sequence_mask(lengths, maxlen=maxlen, dtype=dtype)
