"""Fluid 1.8's LSTM with a recurrent projection (``dynamic_lstmp``, op ``lstmp``) and its
stacked padded LSTM (``lstm``, op ``cudnn_lstm``), with Paddle's parameter shapes and names
(``lstmp_0.w_0`` [P, 4D], ``lstmp_0.w_1`` [D, P], ``lstmp_0.b_0``; ``cudnn_lstm_0.w_0``
flat)."""
from ...tensor.dtypes import convert_dtype
from ..layer_helper import LayerHelper
from ...ops.rnn_lstm import weight_size
from .arg_checks import (POSITIVE_INT, Refused, boolean, checks, int_in, one_of, optional,
                         real_in, variable)

__all__ = ["dynamic_lstmp", "lstm"]

_ACTIVATION = one_of("sigmoid", "tanh", "relu", "identity")


def _multiple_of_four(value):
    POSITIVE_INT(value)
    if value % 4:
        raise Refused("a positive multiple of 4 (4 * the hidden size)")


@checks(input=variable, size=_multiple_of_four, proj_size=POSITIVE_INT, use_peepholes=boolean,
        is_reverse=boolean, gate_activation=_ACTIVATION, cell_activation=_ACTIVATION,
        candidate_activation=_ACTIVATION, proj_activation=_ACTIVATION,
        h_0=optional(variable), c_0=optional(variable), cell_clip=optional(real_in(0)),
        proj_clip=optional(real_in(0)))
def dynamic_lstmp(input, size, proj_size, param_attr=None, bias_attr=None, use_peepholes=True,
                  is_reverse=False, gate_activation="sigmoid", cell_activation="tanh",
                  candidate_activation="tanh", proj_activation="tanh", dtype="float32",
                  name=None, h_0=None, c_0=None, cell_clip=None, proj_clip=None):
    """LSTM with a recurrent projection over LoD sequences: ``input`` [T, size] is the
    projected input (size = 4 D, gate order candidate, input, forget, output); each step

        h_t = o_t * act_cell(c_t),    r_t = act_proj(h_t W_proj)

    and the next step reads ``r_t`` (P = ``proj_size`` wide) instead of ``h_t``. Parameters:
    Weight [P, 4D], ProjWeight [D, P], Bias [1, 7D] with peepholes ([1, 4D] without).
    ``cell_clip``/``proj_clip`` bound c and r. ``h_0`` [N, P] is r_0 itself, ``c_0``
    [N, D]. Returns ``(projection [T, P], cell [T, D])`` with the input's LoD.
    """
    helper = LayerHelper("lstmp", input=input, param_attr=param_attr, bias_attr=bias_attr,
                         name=name)
    d = size // 4
    dtype = convert_dtype(dtype)
    weight = helper.create_parameter(attr=helper.param_attr, shape=[proj_size, 4 * d],
                                     dtype=dtype)
    proj_weight = helper.create_parameter(attr=helper.param_attr, shape=[d, proj_size],
                                          dtype=dtype)
    bias = helper.create_parameter(attr=helper.bias_attr,
                                   shape=[1, (7 if use_peepholes else 4) * d], dtype=dtype,
                                   is_bias=True)
    projection, cell, batch_hidden, batch_gate, batch_cell_pre_act = (
        helper.create_variable_for_type_inference(dtype) for _ in range(5))
    inputs = {"Input": [input], "Weight": [weight], "ProjWeight": [proj_weight],
              "Bias": [bias]}
    if h_0 is not None:
        inputs["H0"] = [h_0]
    if c_0 is not None:
        inputs["C0"] = [c_0]
    helper.append_op(
        type="lstmp", inputs=inputs,
        outputs={"Projection": [projection], "Cell": [cell], "BatchHidden": [batch_hidden],
                 "BatchGate": [batch_gate], "BatchCellPreAct": [batch_cell_pre_act]},
        attrs={"use_peepholes": use_peepholes, "is_reverse": is_reverse,
               "cell_clip": float(cell_clip or 0.0), "proj_clip": float(proj_clip or 0.0),
               "gate_activation": gate_activation, "cell_activation": cell_activation,
               "candidate_activation": candidate_activation,
               "proj_activation": proj_activation})
    return projection, cell


@checks(input=variable, init_h=variable, init_c=variable, max_len=int_in(0),
        hidden_size=POSITIVE_INT, num_layers=POSITIVE_INT, dropout_prob=real_in(0, 1),
        is_bidirec=boolean, is_test=boolean, seed=int_in(-1))
def lstm(input, init_h, init_c, max_len, hidden_size, num_layers, dropout_prob=0.0,
         is_bidirec=False, is_test=False, name=None, default_initializer=None, seed=-1):
    """A stacked (optionally bidirectional) LSTM over a padded, time-major batch ``input``
    [seq_len, batch, input_size], from ``init_h``/``init_c`` [num_layers * dirs, batch,
    hidden_size]; per step (gate order i, f, g, o; no peepholes)

        c_t = f c_{t-1} + i g,    h_t = o tanh(c_t)

    with dropout (``dropout_prob``, not when ``is_test``) between layers. One flat parameter
    holds every layer's W_ih, W_hh, b_ih and b_hh (``ops.rnn_lstm.weight_layout``).
    ``max_len`` is accepted for Fluid's signature (the input's length is used). Returns
    ``(out [seq_len, batch, hidden_size * dirs], last_h, last_c)``.
    """
    helper = LayerHelper("cudnn_lstm", input=input, name=name)
    dtype = input.dtype
    input_size = input.shape[-1]
    weight = helper.create_parameter(
        attr=helper.param_attr, shape=[weight_size(input_size, hidden_size, num_layers,
                                                   is_bidirec)],
        dtype=dtype, default_initializer=default_initializer)
    out, last_h, last_c, reserve, state_out = (
        helper.create_variable_for_type_inference(dtype) for _ in range(5))
    reserve.stop_gradient = state_out.stop_gradient = True
    helper.append_op(
        type="cudnn_lstm",
        inputs={"Input": [input], "InitH": [init_h], "InitC": [init_c], "W": [weight]},
        outputs={"Out": [out], "LastH": [last_h], "LastC": [last_c], "Reserve": [reserve],
                 "StateOut": [state_out]},
        attrs={"is_bidirec": is_bidirec, "input_size": input_size,
               "hidden_size": hidden_size, "num_layers": num_layers, "is_test": is_test,
               "dropout_prob": float(dropout_prob), "seed": seed})
    return out, last_h, last_c
