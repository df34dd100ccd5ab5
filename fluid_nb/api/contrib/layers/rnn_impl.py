"""Fluid 1.8's ``contrib.layers`` RNNs built from basic operators: the units
``BasicGRUUnit`` and ``BasicLSTMUnit`` (one step; the ops are appended when the unit is
called) and the stacked, optionally bidirectional ``basic_gru`` and ``basic_lstm`` over a
padded batch.

The units are ``layers.GRUCell`` / ``layers.LSTMCell`` under Fluid 1.8's class names and
call signatures; their parameters are named ``<name_scope>/BasicGRUUnit_N.w_0`` and so on,
as Fluid names them. The stacked layers run all layers of one direction in one ``While``
loop over time (``layers.rnn``), so the number of steps may be unknown when the program is
built; with ``sequence_length``, every layer keeps its state at the steps past a
sequence's end (``h_t = m_t h'_t + (1 - m_t) h_{t-1}``, ``m_t = [t < length]``).
"""
import copy

from ... import layers
from ....errors import InvalidType, expected
from ....framework.program import Variable
from ...layers.rnn_cells import GRUCell, LSTMCell, RNNCell, _param, rnn
from ...param_attr import ParamAttr

__all__ = ["BasicGRUUnit", "basic_gru", "BasicLSTMUnit", "basic_lstm"]


def _named(attr, suffix):
    """``attr`` with ``suffix`` appended to its name when it has one (how Fluid keeps the
    parameters made from one named attr apart)."""
    if attr is None or attr is False:
        return attr
    attr = ParamAttr._to_attr(attr)
    if attr.name is None:
        return attr
    attr = copy.deepcopy(attr)
    attr.name += suffix
    return attr


class BasicGRUUnit(GRUCell):
    """One GRU step (gate order r, u; input and hidden state concatenated):

        [r, u] = act_g([x, h] W_g + b_g)           (``.w_0`` [D + H, 2H], ``.b_0`` [2H])
        m = act([x, r h] W_c + b_c)                (``.w_1`` [D + H, H], ``.b_1`` [H])
        h' = u h + (1 - u) m

    Example::

        unit = fluid.contrib.layers.BasicGRUUnit("gru_unit", hidden_size=256)
        new_hidden = unit(input, pre_hidden)
    """

    def __init__(self, name_scope, hidden_size, param_attr=None, bias_attr=None,
                 gate_activation=None, activation=None, dtype="float32"):
        if not isinstance(name_scope, str):
            raise InvalidType(expected("BasicGRUUnit", "name_scope", "a str",
                                       type(name_scope).__name__))
        super().__init__(hidden_size, param_attr=param_attr, bias_attr=bias_attr,
                         gate_activation=gate_activation, activation=activation,
                         dtype=dtype, name=name_scope)

    def _build(self, input_size):
        full, h = self._unit_name, self.hidden_size
        w_gate, w_cand = (_named(self._param_attr, s) for s in ("_gate", "_candidate"))
        b_gate, b_cand = (_named(self._bias_attr, s) for s in ("_gate", "_candidate"))
        self._params = (
            _param(f"{full}.w_0", [input_size + h, 2 * h], self._dtype, w_gate, False),
            _param(f"{full}.w_1", [input_size + h, h], self._dtype, w_cand, False),
            _param(f"{full}.b_0", [2 * h], self._dtype, b_gate, True),
            _param(f"{full}.b_1", [h], self._dtype, b_cand, True))

    def __call__(self, input, pre_hidden):
        """Append the step's ops; returns the new hidden state [N, H]."""
        return self.call(input, pre_hidden)[0]

    forward = __call__


class BasicLSTMUnit(LSTMCell):
    """One LSTM step (gate order i, j, f, o; input and hidden state concatenated):

        [i, j, f, o] = [x, h] W + b                (``.w_0`` [D + H, 4H], ``.b_0`` [4H])
        c' = c act_g(f + forget_bias) + act_g(i) act(j)
        h' = act(c') act_g(o)

    (Fluid 1.8's unit always uses sigmoid and tanh there; here ``gate_activation`` and
    ``activation`` act as its docstring says, with the same defaults.)

    Example::

        unit = fluid.contrib.layers.BasicLSTMUnit("lstm_unit", hidden_size=256)
        new_hidden, new_cell = unit(input, pre_hidden, pre_cell)
    """

    def __init__(self, name_scope, hidden_size, param_attr=None, bias_attr=None,
                 gate_activation=None, activation=None, forget_bias=1.0, dtype="float32"):
        if not isinstance(name_scope, str):
            raise InvalidType(expected("BasicLSTMUnit", "name_scope", "a str",
                                       type(name_scope).__name__))
        super().__init__(hidden_size, param_attr=param_attr, bias_attr=bias_attr,
                         gate_activation=gate_activation, activation=activation,
                         forget_bias=forget_bias, dtype=dtype, name=name_scope)

    def __call__(self, input, pre_hidden, pre_cell):
        """Append the step's ops; returns ``(new_hidden, new_cell)``, each [N, H]."""
        return tuple(self.call(input, [pre_hidden, pre_cell])[1])

    forward = __call__


class _Stacked(RNNCell):
    """All layers of one direction as one cell: layer i reads layer i - 1's (masked,
    dropped-out) output; the step's output is the last layer's, dropped out as well (as
    Fluid 1.8 does). The step's inputs are ``x`` or ``[x, mask]``."""

    def __init__(self, units, masked, dropout_prob, dropout_implementation):
        self.units, self.masked = units, masked
        self.dropout_prob, self.dropout_implementation = dropout_prob, dropout_implementation

    def call(self, inputs, states):
        x, mask = inputs if self.masked else (inputs, None)
        new_states = []
        for unit, pre in zip(self.units, states):
            new = unit(x, *pre) if isinstance(unit, BasicLSTMUnit) else (unit(x, pre),)
            if mask is not None:
                pre = pre if isinstance(unit, BasicLSTMUnit) else (pre,)
                new = tuple(_keep_ended(n, p, mask) for n, p in zip(new, pre))
            new_states.append(list(new) if isinstance(unit, BasicLSTMUnit) else new[0])
            x = new[0]
            if self.dropout_prob:
                x = layers.dropout(x, dropout_prob=self.dropout_prob,
                                   dropout_implementation=self.dropout_implementation)
        return x, new_states

    @property
    def state_shape(self):
        return [unit.state_shape for unit in self.units]


def _keep_ended(new, pre, mask):
    """new * m - pre * (m - 1): the new state where the sequence runs, else the old one."""
    return layers.elementwise_mul(new, mask, axis=0) - \
        layers.elementwise_mul(pre, mask - 1.0, axis=0)


def _check(where, input, hidden_size, num_layers, sequence_length, init_states):
    if not isinstance(input, Variable):
        raise InvalidType(expected(where, "input", "a Variable", type(input).__name__))
    if len(input.shape) != 3:
        raise InvalidType(expected(where, "input", "a 3-D Variable",
                                   f"shape {list(input.shape)}"))
    for label, value in (("hidden_size", hidden_size), ("num_layers", num_layers)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidType(expected(where, label, "a positive int", repr(value)))
    for label, value in [("sequence_length", sequence_length)] + init_states:
        if value is not None and not isinstance(value, Variable):
            raise InvalidType(expected(where, label, "None or a Variable",
                                       type(value).__name__))


def _units(make, name, num_layers, param_attr, bias_attr, direction):
    """The units of one direction, named and with attrs suffixed as Fluid 1.8 does."""
    scope = "_layers_" if direction == "fw" else "_reverse_layers_"
    return [make(name + scope + str(i), _named(param_attr, f"_{direction}_w_{i}"),
                 _named(bias_attr, f"_{direction}_b_{i}")) for i in range(num_layers)]


def _initial(states, num_layers, directions, hidden_size, input, direction, dtype):
    """Per layer, the state [N, H] of one direction: ``states`` [L * dirs, N, H] seen as
    [L, dirs, N, H], or zeros."""
    if states is None:
        return [layers.fill_constant_batch_size_like(
            input=input, shape=[-1, hidden_size], dtype=dtype, value=0.0, input_dim_idx=1)
            for _ in range(num_layers)]
    grid = layers.reshape(states, shape=[num_layers, directions, -1, hidden_size])
    return [layers.reshape(layers.slice(grid, axes=[0, 1], starts=[i, direction],
                                        ends=[i + 1, direction + 1]),
                           shape=[-1, hidden_size]) for i in range(num_layers)]


def _last(states, num_layers, hidden_size):
    """The final states of the layers as [L, N, H]."""
    return layers.reshape(layers.concat(states, axis=0), shape=[num_layers, -1, hidden_size])


def _run(input, inits, hidden_size, num_layers, sequence_length, dropout_prob, bidirectional,
         batch_first, make_units, dropout_implementation, dtype):
    """The shared body of basic_gru and basic_lstm: ``inits`` holds the initial state
    tensors (h; or h and c); returns (output, [final state per init])."""
    if batch_first:
        input = layers.transpose(input, [1, 0, 2])
    mask = None
    if sequence_length is not None:
        steps = layers.slice(layers.shape(input), axes=[0], starts=[0], ends=[1])
        mask = layers.transpose(layers.sequence_mask(sequence_length, maxlen=steps,
                                                     dtype=input.dtype), [1, 0])
        mask.stop_gradient = True
    directions = 2 if bidirectional else 1
    outs, lasts = [], []
    for d, direction in enumerate(["fw", "bw"][:directions]):
        per_init = [_initial(s, num_layers, directions, hidden_size, input, d, dtype)
                    for s in inits]
        init = [list(states) if len(per_init) > 1 else states[0]
                for states in zip(*per_init)]
        cell = _Stacked(make_units(direction), mask is not None, dropout_prob,
                        dropout_implementation)
        out, final = rnn(cell, [input, mask] if mask is not None else input,
                         initial_states=init, time_major=True, is_reverse=d == 1)
        outs.append(out)
        finals = [[f] if len(inits) == 1 else f for f in final]
        lasts.append([_last([f[k] for f in finals], num_layers, hidden_size)
                      for k in range(len(inits))])
    rnn_out = outs[0] if directions == 1 else layers.concat(outs, axis=2)
    if batch_first:
        rnn_out = layers.transpose(rnn_out, [1, 0, 2])
    if directions == 1:
        return rnn_out, lasts[0]
    return rnn_out, [layers.reshape(layers.concat([fw, bw], axis=1),
                                    shape=[num_layers * 2, -1, hidden_size])
                     for fw, bw in zip(*lasts)]


def basic_gru(input, init_hidden, hidden_size, num_layers=1, sequence_length=None,
              dropout_prob=0.0, bidirectional=False, batch_first=True, param_attr=None,
              bias_attr=None, gate_activation=None, activation=None, dtype="float32",
              name="basic_gru"):
    """A stacked, optionally bidirectional GRU (``BasicGRUUnit`` per layer and direction)
    over a padded batch: ``input`` [N, T, D] ([T, N, D] unless ``batch_first``),
    ``init_hidden`` [L * dirs, N, H] (None: zeros), ``sequence_length`` [N] (None: every
    sequence runs T steps). Each step of layer l (l > 0 reads layer l - 1's output):

        [r, u] = act_g([x, h] W_g + b_g),  m = act([x, r h] W_c + b_c),
        h' = u h + (1 - u) m

    ``dropout_prob`` drops each layer's output (also the last layer's), not the states.
    Parameters are named ``<name>_layers_<l>/BasicGRUUnit_0.w_0`` (``_reverse_layers_``
    for the backward direction); a named ``param_attr``/``bias_attr`` gives
    ``<attr name>_fw_w_<l>_gate`` and so on.

    Returns ``(rnn_out, last_hidden)``: rnn_out [N, T, H * dirs] (time major unless
    ``batch_first``), last_hidden [L * dirs, N, H] (layer by layer, forward then
    backward).

    Example::

        out, last_h = fluid.contrib.layers.basic_gru(x, None, hidden_size=64,
                                                     num_layers=2, bidirectional=True)
    """
    _check("basic_gru", input, hidden_size, num_layers, sequence_length,
           [("init_hidden", init_hidden)])

    def make(direction):
        return _units(lambda scope, w, b: BasicGRUUnit(scope, hidden_size, w, b,
                                                       gate_activation, activation, dtype),
                      name, num_layers, param_attr, bias_attr, direction)
    rnn_out, (last_hidden,) = _run(input, [init_hidden], hidden_size, num_layers,
                                   sequence_length, dropout_prob, bidirectional, batch_first,
                                   make, "downgrade_in_infer", dtype)
    return rnn_out, last_hidden


def basic_lstm(input, init_hidden, init_cell, hidden_size, num_layers=1, sequence_length=None,
               dropout_prob=0.0, bidirectional=False, batch_first=True, param_attr=None,
               bias_attr=None, gate_activation=None, activation=None, forget_bias=1.0,
               dtype="float32", name="basic_lstm"):
    """A stacked, optionally bidirectional LSTM (``BasicLSTMUnit`` per layer and
    direction) over a padded batch: ``input`` [N, T, D] ([T, N, D] unless
    ``batch_first``), ``init_hidden``/``init_cell`` [L * dirs, N, H] (None: zeros),
    ``sequence_length`` [N]. Each step of layer l (l > 0 reads layer l - 1's output):

        [i, j, f, o] = [x, h] W + b
        c' = c sigmoid(f + forget_bias) + sigmoid(i) tanh(j),  h' = tanh(c') sigmoid(o)

    ``dropout_prob`` drops each layer's output (``upscale_in_train``), not the states.
    Parameters are named ``<name>_layers_<l>/BasicLSTMUnit_0.w_0`` (``_reverse_layers_``
    for the backward direction); a named ``param_attr``/``bias_attr`` gives
    ``<attr name>_fw_w_<l>``, ``<attr name>_bw_b_<l>`` and so on. (Fluid 1.8 gives the
    backward biases ``param_attr`` when ``bias_attr`` has no name; here they take
    ``bias_attr``.)

    Returns ``(rnn_out, last_hidden, last_cell)``: rnn_out [N, T, H * dirs] (time major
    unless ``batch_first``), last_hidden and last_cell [L * dirs, N, H].

    Example::

        out, last_h, last_c = fluid.contrib.layers.basic_lstm(
            x, None, None, hidden_size=64, num_layers=2, sequence_length=lengths)
    """
    _check("basic_lstm", input, hidden_size, num_layers, sequence_length,
           [("init_hidden", init_hidden), ("init_cell", init_cell)])
    if (init_hidden is None) != (init_cell is None):
        raise InvalidType(expected("basic_lstm", "init_hidden and init_cell",
                                   "both Variables or both None",
                                   f"{type(init_hidden).__name__} and "
                                   f"{type(init_cell).__name__}"))

    def make(direction):
        return _units(lambda scope, w, b: BasicLSTMUnit(
            scope, hidden_size, w, b, gate_activation, activation, forget_bias, dtype),
            name, num_layers, param_attr, bias_attr, direction)
    rnn_out, (last_hidden, last_cell) = _run(
        input, [init_hidden, init_cell], hidden_size, num_layers, sequence_length,
        dropout_prob, bidirectional, batch_first, make, "upscale_in_train", dtype)
    return rnn_out, last_hidden, last_cell
