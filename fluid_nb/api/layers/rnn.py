"""Fluid 1.8's recurrent layers over the ``lstm``, ``gru``, ``gru_unit`` and ``lstm_unit`` ops,
building the same ops, slots and names as Paddle (``lstm_0.w_0``, ``lstm_0.b_0``, ...).

The input projection is the caller's ``fc``: ``dynamic_lstm`` wants [T, 4D] and
``dynamic_gru`` [T, 3D] LoD input; ``lstm_unit`` adds its own ``fc`` on [x_t, h_{t-1}].
"""
from ...errors import InvalidArgument, InvalidType
from ...framework.program import Variable
from ..layer_helper import LayerHelper
from .nn import fc
from .tensor import concat

__all__ = ["dynamic_lstm", "dynamic_gru", "gru_unit", "lstm_unit"]

_GRU_UNIT_CODES = {"identity": 0, "sigmoid": 1, "tanh": 2, "relu": 3}


def _check_var(layer, name, value, optional=False):
    if value is None and optional:
        return
    if not isinstance(value, Variable):
        raise InvalidType(f"{layer}: {name} expected a Variable, but received "
                          f"{type(value).__name__}")


def _check_state(layer, name, state, size):
    """H0/C0: [batch, size] (Paddle asserts the shape at build time)."""
    _check_var(layer, name, state, optional=True)
    if state is not None and (len(state.shape) != 2 or state.shape[1] not in (size, -1)):
        raise InvalidArgument(f"{layer}: {name} shape expected [batch_size, {size}], but "
                              f"received {list(state.shape)}")


def _inputs(**slots):
    return {k: [v] for k, v in slots.items() if v is not None}


def dynamic_lstm(input, size, h_0=None, c_0=None, param_attr=None, bias_attr=None,
                 use_peepholes=True, is_reverse=False, gate_activation="sigmoid",
                 cell_activation="tanh", candidate_activation="tanh", dtype="float32",
                 name=None):
    """LSTM over LoD sequences (the ``lstm`` op). ``size`` is 4 * D; ``input`` [T, 4D] is
    the projected input (gate order candidate, input, forget, output). Parameters: Weight
    [D, 4D] and Bias [1, 7D] with peepholes, [1, 4D] without. Returns (hidden, cell), [T, D]
    each with the input's LoD."""
    _check_var("dynamic_lstm", "input", input)
    if size % 4:
        raise InvalidArgument(f"dynamic_lstm: size expected a multiple of 4 (4 * hidden "
                              f"size), but received {size}")
    helper = LayerHelper("lstm", input=input, param_attr=param_attr, bias_attr=bias_attr,
                         name=name)
    d = size // 4
    _check_state("dynamic_lstm", "h_0", h_0, d)
    _check_state("dynamic_lstm", "c_0", c_0, d)
    weight = helper.create_parameter(attr=helper.param_attr, shape=[d, 4 * d], dtype=dtype)
    bias = helper.create_parameter(attr=helper.bias_attr,
                                   shape=[1, (7 if use_peepholes else 4) * d], dtype=dtype,
                                   is_bias=True)
    hidden, cell, batch_gate, batch_cell_pre_act = (
        helper.create_variable_for_type_inference(dtype) for _ in range(4))
    helper.append_op(
        type="lstm",
        inputs=_inputs(Input=input, Weight=weight, Bias=bias, H0=h_0, C0=c_0),
        outputs={"Hidden": [hidden], "Cell": [cell], "BatchGate": [batch_gate],
                 "BatchCellPreAct": [batch_cell_pre_act]},
        attrs={"use_peepholes": use_peepholes, "is_reverse": is_reverse,
               "gate_activation": gate_activation, "cell_activation": cell_activation,
               "candidate_activation": candidate_activation})
    return hidden, cell


def dynamic_gru(input, size, param_attr=None, bias_attr=None, is_reverse=False,
                gate_activation="sigmoid", candidate_activation="tanh", h_0=None,
                origin_mode=False):
    """GRU over LoD sequences (the ``gru`` op). ``size`` is D; ``input`` [T, 3D] is the
    projected input (gate order update, reset, candidate). Parameters: Weight [D, 3D], Bias
    [1, 3D]. Returns hidden [T, D] with the input's LoD."""
    _check_var("dynamic_gru", "input", input)
    helper = LayerHelper("gru", input=input, param_attr=param_attr, bias_attr=bias_attr)
    _check_state("dynamic_gru", "h_0", h_0, size)
    dtype = helper.input_dtype()
    weight = helper.create_parameter(attr=helper.param_attr, shape=[size, 3 * size],
                                     dtype=dtype)
    bias = helper.create_parameter(attr=helper.bias_attr, shape=[1, 3 * size], dtype=dtype,
                                   is_bias=True)
    hidden, batch_gate, batch_reset_hidden_prev, batch_hidden = (
        helper.create_variable_for_type_inference(dtype) for _ in range(4))
    helper.append_op(
        type="gru",
        inputs=_inputs(Input=input, Weight=weight, Bias=bias, H0=h_0),
        outputs={"Hidden": [hidden], "BatchGate": [batch_gate],
                 "BatchResetHiddenPrev": [batch_reset_hidden_prev],
                 "BatchHidden": [batch_hidden]},
        attrs={"is_reverse": is_reverse, "gate_activation": gate_activation,
               "activation": candidate_activation, "origin_mode": origin_mode})
    return hidden


def gru_unit(input, hidden, size, param_attr=None, bias_attr=None, activation="tanh",
             gate_activation="sigmoid", origin_mode=False):
    """One GRU step (the ``gru_unit`` op). ``size`` is 3 * D; ``input`` [N, 3D], ``hidden``
    [N, D]. Returns (updated hidden, reset hidden prev, gate)."""
    _check_var("gru_unit", "input", input)
    _check_var("gru_unit", "hidden", hidden)
    for what, act in (("activation", activation), ("gate_activation", gate_activation)):
        if act not in _GRU_UNIT_CODES:
            raise InvalidArgument(f"gru_unit: {what} expected one of "
                                  f"{sorted(_GRU_UNIT_CODES)}, but received {act!r}")
    helper = LayerHelper("gru_unit", input=input, param_attr=param_attr, bias_attr=bias_attr)
    dtype = helper.input_dtype()
    d = size // 3
    weight = helper.create_parameter(attr=helper.param_attr, shape=[d, 3 * d], dtype=dtype)
    gate, reset_hidden_prev, updated_hidden = (
        helper.create_variable_for_type_inference(dtype) for _ in range(3))
    bias = None
    if helper.bias_attr:
        bias = helper.create_parameter(attr=helper.bias_attr, shape=[1, 3 * d], dtype=dtype,
                                       is_bias=True)
    helper.append_op(
        type="gru_unit",
        inputs=_inputs(Input=input, HiddenPrev=hidden, Weight=weight, Bias=bias),
        outputs={"Gate": [gate], "ResetHiddenPrev": [reset_hidden_prev],
                 "Hidden": [updated_hidden]},
        attrs={"activation": _GRU_UNIT_CODES[activation],
               "gate_activation": _GRU_UNIT_CODES[gate_activation],
               "origin_mode": origin_mode})
    return updated_hidden, reset_hidden_prev, gate


def lstm_unit(x_t, hidden_t_prev, cell_t_prev, forget_bias=0.0, param_attr=None,
              bias_attr=None, name=None):
    """One LSTM step: ``fc(concat([x_t, hidden_t_prev]), 4 * D)`` then the ``lstm_unit`` op
    (gate order input, forget, output, candidate). Returns (hidden, cell)."""
    for arg, value in (("x_t", x_t), ("hidden_t_prev", hidden_t_prev),
                       ("cell_t_prev", cell_t_prev)):
        _check_var("lstm_unit", arg, value)
        if len(value.shape) != 2:
            raise InvalidArgument(f"lstm_unit: rank of {arg} expected 2, but received "
                                  f"{len(value.shape)}")
    batch = {x_t.shape[0], hidden_t_prev.shape[0], cell_t_prev.shape[0]} - {-1}
    if len(batch) > 1:
        raise InvalidArgument(f"lstm_unit: dim 0 of x_t, hidden_t_prev and cell_t_prev "
                              f"expected equal, but received {x_t.shape[0]}, "
                              f"{hidden_t_prev.shape[0]}, {cell_t_prev.shape[0]}")
    if hidden_t_prev.shape[1] != cell_t_prev.shape[1]:
        raise InvalidArgument(f"lstm_unit: dim 1 of hidden_t_prev and cell_t_prev expected "
                              f"equal, but received {hidden_t_prev.shape[1]} and "
                              f"{cell_t_prev.shape[1]}")
    helper = LayerHelper("lstm_unit", input=x_t, name=name)
    if bias_attr is None:
        bias_attr = True
    size = cell_t_prev.shape[1]
    concat_out = concat(input=[x_t, hidden_t_prev], axis=1)
    fc_out = fc(input=concat_out, size=4 * size, param_attr=param_attr, bias_attr=bias_attr)
    dtype = x_t.dtype
    c = helper.create_variable_for_type_inference(dtype)
    h = helper.create_variable_for_type_inference(dtype)
    helper.append_op(type="lstm_unit", inputs={"X": [fc_out], "C_prev": [cell_t_prev]},
                     outputs={"C": [c], "H": [h]}, attrs={"forget_bias": forget_bias})
    return h, c
