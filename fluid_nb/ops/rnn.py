"""Recurrent ops of Fluid's book: ``lstm`` and ``gru`` over LoD batches, ``gru_unit`` and
``lstm_unit`` for one step, each with its grad op.

``lstm``/``gru`` run as Paddle does: the LoD batch is reordered into time-step batches
(sequences sorted longest first, see :class:`rnn_units.BatchLayout`), one matrix product per
step, and the hidden (and cell) states are scattered back to the input's row order, sharing
its LoD. The ``Batch*`` intermediates keep the step-ordered values the grad ops reuse.
The input projections (``x @ W_x``) are not part of these ops: Fluid adds an ``fc`` before.
"""
from ..framework.infer import dims_match
from ..framework.registry import def_op, grads_like
from .rnn_units import (
    ACTIVATIONS, GRU_UNIT_ACTIVATIONS, BatchLayout, gru_step,
    gru_step_grad, gru_weight_grad, gru_weights, lod_offsets, lstm_step, lstm_step_grad, one_of)


def _rows(shape):
    return (shape[0] if shape else -1,)


def _check_rank2(ctx, slot):
    shape = ctx.input_shape(slot)
    ctx.check(len(shape) == 2, f"input '{slot}' rank", "2", f"{len(shape)} (shape "
              f"{list(shape)})")
    return shape


def _check_dims(ctx, slot, want):
    shape = ctx.input_shape(slot)
    ctx.check(len(shape) == len(want) and all(dims_match(a, b) for a, b in zip(shape, want)),
              f"shape of '{slot}'", list(want), list(shape))


def _grad_op(g, type, inputs, outputs, in_grads):
    """A grad op spec with forward inputs/outputs by slot and the gradients of ``in_grads``
    (only those the forward op has)."""
    ins = {slot: g.input(slot) for slot in inputs}
    ins.update({slot: g.output(slot) for slot in outputs})
    ins.update({slot + "@GRAD": g.output_grad(slot) for slot in ("Hidden",)
                if slot in outputs})
    outs = {slot + "@GRAD": g.input_grad(slot) for slot in in_grads if g.has_input(slot)}
    return [g.op(type, ins, outs)]


# --- lstm --------------------------------------------------------------------------------------
_LSTM_ATTRS = {
    "use_peepholes": ("bool", True),
    "is_reverse": ("bool", False),
    "gate_activation": ("string", "sigmoid", one_of(*ACTIVATIONS)),
    "cell_activation": ("string", "tanh", one_of(*ACTIVATIONS)),
    "candidate_activation": ("string", "tanh", one_of(*ACTIVATIONS)),
}


def _lstm_infer(ctx):
    x = _check_rank2(ctx, "Input")
    w = _check_rank2(ctx, "Weight")
    d = x[1] // 4 if x[1] >= 0 else w[0]
    ctx.check(x[1] < 0 or x[1] % 4 == 0, "input 'Input' width", "a multiple of 4 (4 * D)",
              x[1])
    _check_dims(ctx, "Weight", (d, 4 * d if d >= 0 else -1))
    width = (7 if ctx.attr("use_peepholes") else 4) * d if d >= 0 else -1
    _check_dims(ctx, "Bias", (1, width))
    if ctx.has_input("H0"):
        ctx.check(ctx.has_input("C0"), "input 'C0'", "a variable when H0 is given", "none")
    for slot in ("H0", "C0"):
        if ctx.has_input(slot):
            _check_dims(ctx, slot, (-1, d))
    dtype = ctx.input_dtype("Input")
    out = _rows(x) + (d,)
    ctx.set_output("Hidden", out, dtype)
    ctx.set_output("Cell", out, dtype)
    ctx.set_output("BatchGate", tuple(x), dtype)
    ctx.set_output("BatchCellPreAct", out, dtype)


def _lstm_setup(ctx, op, x, weight, bias):
    attrs = ctx.attrs
    xp = ctx.xp
    layout = BatchLayout(lod_offsets(op, x), attrs["is_reverse"])
    w, b = weight.array, bias.array.reshape(-1)
    d = w.shape[0]
    peep = (b[4 * d:5 * d], b[5 * d:6 * d], b[6 * d:7 * d]) if attrs["use_peepholes"] else None
    acts = (attrs["gate_activation"], attrs["cell_activation"], attrs["candidate_activation"])
    return xp, layout, w, b, d, peep, acts


def _lstm(ctx, x, h0, c0, weight, bias):
    xp, layout, w, b, d, peep, acts = _lstm_setup(ctx, "lstm", x, weight, bias)
    pre = layout.to_batch(xp, x.array) + b[:4 * d]
    n = pre.shape[0]
    gates = xp.empty_like(pre)
    hidden, cell, cell_act = (xp.empty((n, d), dtype=pre.dtype) for _ in range(3))
    h_prev = layout.reorder(xp, h0.array) if h0 is not None else None
    c_prev = layout.reorder(xp, c0.array) if c0 is not None else None
    for t, start, end, prev in layout.steps():
        z = pre[start:end]
        if prev is not None:
            h_prev = hidden[prev:prev + end - start]
            c_prev = cell[prev:prev + end - start]
        if h_prev is not None:
            z = z + h_prev @ w
        gates[start:end], cell[start:end], cell_act[start:end], hidden[start:end] = \
            lstm_step(xp, z, c_prev, peep, acts)
    return (layout.to_seq(xp, hidden), layout.to_seq(xp, cell), gates, cell_act)


def _lstm_grad(ctx, x, h0, c0, weight, bias, cell_out, hidden_out, dhidden, gates, cell_act):
    xp, layout, w, b, d, peep, acts = _lstm_setup(ctx, "lstm_grad", x, weight, bias)
    hidden = layout.to_batch(xp, hidden_out.array)
    cell = layout.to_batch(xp, cell_out.array)
    dh_all = layout.to_batch(xp, dhidden.array).copy()
    gates, cell_act = gates.array, cell_act.array
    # as in Paddle, Cell's own gradient is not an input: the cell gradient starts at zero
    dc_all = xp.zeros_like(cell)
    dgates = xp.empty_like(gates)
    dpeep = [xp.zeros(d, dtype=w.dtype) for _ in range(3)]
    h0o = layout.reorder(xp, h0.array) if h0 is not None else None
    c0o = layout.reorder(xp, c0.array) if c0 is not None else None
    dh0o = dc0o = None
    for t, start, end, prev in reversed(list(layout.steps())):
        n = end - start
        c_prev = cell[prev:prev + n] if prev is not None else c0o
        dz, dc_prev, dp = lstm_step_grad(xp, gates[start:end], cell[start:end],
                                         cell_act[start:end], c_prev, dh_all[start:end],
                                         dc_all[start:end], peep, acts)
        dgates[start:end] = dz
        if dp is not None:
            for k in range(3):
                dpeep[k] += dp[k]
        if prev is not None:
            dh_all[prev:prev + n] += dz @ w.T
            dc_all[prev:prev + n] += dc_prev
        else:
            if h0o is not None:
                dh0o = dz @ w.T
            dc0o = dc_prev
    # Weight's gradient summed over the steps: one product over every row
    first = layout.first_rows()
    dw = layout.previous(xp, hidden).T @ dgates[first:]
    if h0o is not None:
        dw += h0o.T @ dgates[:first]
    dx = layout.to_seq(xp, dgates) if ctx.wants("Input@GRAD") else None
    db = None
    if ctx.wants("Bias@GRAD"):
        parts = [dgates.sum(axis=0)] + (dpeep if peep is not None else [])
        db = xp.concatenate(parts).reshape(bias.array.shape)
    dh0 = layout.restore(xp, dh0o, h0.array) if h0 is not None else None
    dc0 = layout.restore(xp, dc0o, c0.array) if c0 is not None else None
    return dx, dh0, dc0, dw, db


def _lstm_grad_maker(g):
    return _grad_op(g, "lstm_grad", ["Input", "H0", "C0", "Weight", "Bias"],
                    ["Cell", "Hidden", "BatchGate", "BatchCellPreAct"],
                    ["Input", "H0", "C0", "Weight", "Bias"])


_lstm_grad_maker.grad_type = "lstm_grad"

def_op("lstm",
       inputs=["Input", "H0?", "C0?", "Weight", "Bias"],
       outputs=["Hidden", "Cell", "BatchGate!", "BatchCellPreAct!"],
       attrs=_LSTM_ATTRS, infer_shape=_lstm_infer, grad=_lstm_grad_maker,
       kernel=_lstm, lod_aware=True, share_lod=("Input", ["Hidden", "Cell"]),
       doc="LSTM over each sequence of a LoD batch (reversed with ``is_reverse``). Input "
           "[T, 4D] holds the projections x_t W_x in Paddle's gate order (candidate, input, "
           "forget, output); Weight [D, 4D] in the same order; Bias [1, 4D] (b_c, b_i, b_f, "
           "b_o), plus peepholes (w_ic, w_fc, w_oc) when ``use_peepholes`` ([1, 7D]):\n"
           "  z = Input_t + h_{t-1} Weight + b;  c~ = act_cand(z_c)\n"
           "  i = act_gate(z_i + w_ic * c_{t-1}); f = act_gate(z_f + w_fc * c_{t-1})\n"
           "  c_t = f * c_{t-1} + i * c~;  o = act_gate(z_o + w_oc * c_t)\n"
           "  h_t = o * act_cell(c_t)\n"
           "h_0/c_0 are H0/C0 ([N, D], one row per sequence) or zeros. Hidden, Cell: [T, D] "
           "with Input's LoD. BatchGate (activated gates) and BatchCellPreAct (act_cell(c)) "
           "are in time-step batch order (longest sequence first).")

def_op("lstm_grad",
       inputs=["Input", "H0?", "C0?", "Weight", "Bias", "Cell", "Hidden", "Hidden@GRAD",
               "BatchGate", "BatchCellPreAct"],
       outputs=["Input@GRAD?", "H0@GRAD?", "C0@GRAD?", "Weight@GRAD?", "Bias@GRAD?"],
       attrs=_LSTM_ATTRS,
       infer_shape=grads_like(**{"Input@GRAD": "Input", "H0@GRAD": "H0", "C0@GRAD": "C0",
                                 "Weight@GRAD": "Weight", "Bias@GRAD": "Bias"}),
       kernel=_lstm_grad, lod_aware=True,
       doc="Gradient of lstm: back through the time steps from the last; dInput = d z, "
           "dWeight = sum h_{t-1}^T dz, dBias = (sum dz, peephole grads). As in Paddle, only "
           "Hidden's gradient flows in (Cell@GRAD is not an input); dInput has no LoD, as "
           "Paddle's.")


# --- gru ---------------------------------------------------------------------------------------
_GRU_ATTRS = {
    "activation": ("string", "tanh", one_of(*ACTIVATIONS)),
    "gate_activation": ("string", "sigmoid", one_of(*ACTIVATIONS)),
    "is_reverse": ("bool", False),
    "origin_mode": ("bool", False),
}


def _gru_common_infer(ctx, x_slot, h_slot=None):
    x = _check_rank2(ctx, x_slot)
    w = _check_rank2(ctx, "Weight")
    d = w[0]
    _check_dims(ctx, "Weight", (d, 3 * d if d >= 0 else -1))
    _check_dims(ctx, x_slot, (-1, 3 * d if d >= 0 else -1))
    if ctx.has_input("Bias"):
        _check_dims(ctx, "Bias", (1, 3 * d if d >= 0 else -1))
    if h_slot is not None and ctx.has_input(h_slot):
        _check_dims(ctx, h_slot, (-1, d))
    return x, d


def _gru_infer(ctx):
    x, d = _gru_common_infer(ctx, "Input", "H0")
    dtype = ctx.input_dtype("Input")
    out = _rows(x) + (d,)
    ctx.set_output("BatchGate", tuple(x), dtype)
    ctx.set_output("BatchResetHiddenPrev", out, dtype)
    ctx.set_output("BatchHidden", out, dtype)
    ctx.set_output("Hidden", out, dtype)


def _gru(ctx, x, h0, weight, bias):
    xp, attrs = ctx.xp, ctx.attrs
    layout = BatchLayout(lod_offsets("gru", x), attrs["is_reverse"])
    w = weight.array
    d = w.shape[0]
    gate_w, state_w = gru_weights(w)
    pre = layout.to_batch(xp, x.array)
    if bias is not None:
        pre = pre + bias.array.reshape(-1)
    n = pre.shape[0]
    gates = xp.empty_like(pre)
    reset_h, hidden = xp.empty((n, d), dtype=pre.dtype), xp.empty((n, d), dtype=pre.dtype)
    h_prev = layout.reorder(xp, h0.array) if h0 is not None else None
    for t, start, end, prev in layout.steps():
        if prev is not None:
            h_prev = hidden[prev:prev + end - start]
        elif h_prev is None:  # no H0: a zero state
            h_prev = xp.zeros((end - start, d), dtype=pre.dtype)
        gates[start:end], reset_h[start:end], hidden[start:end] = gru_step(
            xp, pre[start:end], h_prev, gate_w, state_w, attrs["activation"],
            attrs["gate_activation"], attrs["origin_mode"])
    return gates, reset_h, hidden, layout.to_seq(xp, hidden)


def _gru_grad(ctx, x, h0, weight, bias, gates, reset_h, batch_hidden, hidden, dhidden):
    xp, attrs = ctx.xp, ctx.attrs
    layout = BatchLayout(lod_offsets("gru_grad", x), attrs["is_reverse"])
    w = weight.array
    d = w.shape[0]
    gate_w, state_w = gru_weights(w)
    gates, reset_h, batch_hidden = gates.array, reset_h.array, batch_hidden.array
    dh_all = layout.to_batch(xp, dhidden.array).copy()
    dgates = xp.empty_like(gates)
    h0o = layout.reorder(xp, h0.array) if h0 is not None else None
    dh0o = None
    for t, start, end, prev in reversed(list(layout.steps())):
        n = end - start
        if prev is not None:
            h_prev = batch_hidden[prev:prev + n]
        else:
            h_prev = h0o if h0o is not None else xp.zeros((n, d), dtype=gates.dtype)
        dz, dh_prev, _, _ = gru_step_grad(
            xp, gates[start:end], reset_h[start:end], h_prev, dh_all[start:end], gate_w,
            state_w, attrs["activation"], attrs["gate_activation"], attrs["origin_mode"],
            weight_grads=False)
        dgates[start:end] = dz
        if prev is not None:
            dh_all[prev:prev + n] += dh_prev
        else:
            dh0o = dh_prev
    # the weights' gradients summed over the steps, each one product over every row
    first = layout.first_rows()
    d_gate_w = layout.previous(xp, batch_hidden).T @ dgates[first:, :2 * d]
    if h0o is not None:
        d_gate_w += h0o.T @ dgates[:first, :2 * d]
    d_state_w = reset_h.T @ dgates[:, 2 * d:]
    dx = layout.to_seq(xp, dgates) if ctx.wants("Input@GRAD") else None
    db = dgates.sum(axis=0).reshape(1, -1) if bias is not None and ctx.wants("Bias@GRAD") \
        else None
    dh0 = layout.restore(xp, dh0o, h0.array) if h0 is not None and ctx.wants("H0@GRAD") \
        else None
    return dx, dh0, gru_weight_grad(xp, d_gate_w, d_state_w), db


def _gru_grad_maker(g):
    return _grad_op(g, "gru_grad", ["Input", "H0", "Weight", "Bias"],
                    ["BatchGate", "BatchResetHiddenPrev", "BatchHidden", "Hidden"],
                    ["Input", "H0", "Weight", "Bias"])


_gru_grad_maker.grad_type = "gru_grad"

_GRU_FORMULA = (
    "Paddle's gate order is (update u, reset r, candidate c); Weight [D, 3D] is read as one "
    "buffer: its first 2*D*D values form the [D, 2D] update/reset weights W_ur, the last D*D "
    "the [D, D] candidate weights W_c:\n"
    "  [u, r] = act_gate(x_ur + h_{t-1} W_ur + b_ur)\n"
    "  c = act(x_c + (r * h_{t-1}) W_c + b_c)\n"
    "  h_t = (1 - u) * h_{t-1} + u * c      (origin_mode: u * h_{t-1} + (1 - u) * c)\n")

def_op("gru",
       inputs=["Input", "H0?", "Weight", "Bias?"],
       outputs=["BatchGate!", "BatchResetHiddenPrev!", "BatchHidden!", "Hidden"],
       attrs=_GRU_ATTRS, infer_shape=_gru_infer, grad=_gru_grad_maker,
       kernel=_gru, lod_aware=True, share_lod=("Input", ["Hidden"]),
       doc="GRU over each sequence of a LoD batch (reversed with ``is_reverse``); Input "
           "[T, 3D] holds the input projections. " + _GRU_FORMULA +
           "h_0 is H0 ([N, D], one row per sequence) or zeros. Hidden [T, D] has Input's "
           "LoD; the Batch* intermediates (activated gates, r * h_{t-1}, h) are in time-step "
           "batch order.")

def_op("gru_grad",
       inputs=["Input", "H0?", "Weight", "Bias?", "BatchGate", "BatchResetHiddenPrev",
               "BatchHidden", "Hidden", "Hidden@GRAD"],
       outputs=["Input@GRAD?", "H0@GRAD?", "Weight@GRAD?", "Bias@GRAD?"],
       attrs=_GRU_ATTRS,
       infer_shape=grads_like(**{"Input@GRAD": "Input", "H0@GRAD": "H0",
                                 "Weight@GRAD": "Weight", "Bias@GRAD": "Bias"}),
       kernel=_gru_grad, lod_aware=True,
       doc="Gradient of gru, back through the time steps from the last; dInput has no "
           "LoD, as Paddle's.")


# --- gru_unit ----------------------------------------------------------------------------------
_GRU_UNIT_ATTRS = {
    "activation": ("int", 2, one_of(*GRU_UNIT_ACTIVATIONS)),
    "gate_activation": ("int", 1, one_of(*GRU_UNIT_ACTIVATIONS)),
    "origin_mode": ("bool", False),
}


def _gru_unit_infer(ctx):
    x, d = _gru_common_infer(ctx, "Input")
    _check_rank2(ctx, "HiddenPrev")
    _check_dims(ctx, "HiddenPrev", (x[0], d))
    dtype = ctx.input_dtype("Input")
    ctx.set_output("Gate", (x[0], 3 * d if d >= 0 else -1), dtype)
    ctx.set_output("ResetHiddenPrev", (x[0], d), dtype)
    ctx.set_output("Hidden", (x[0], d), dtype)


def _unit_acts(attrs):
    return GRU_UNIT_ACTIVATIONS[attrs["activation"]], \
        GRU_UNIT_ACTIVATIONS[attrs["gate_activation"]]


def _gru_unit(ctx, x, h_prev, weight, bias):
    gate_w, state_w = gru_weights(weight)
    pre = x + bias.reshape(1, -1) if bias is not None else x
    act, gate_act = _unit_acts(ctx.attrs)
    # gru_unit uses Eigen's plain sigmoid (no input clipping, unlike lstm/gru)
    return gru_step(ctx.xp, pre, h_prev, gate_w, state_w, act, gate_act,
                    ctx.attrs["origin_mode"], clip=False)


def _gru_unit_grad(ctx, x, h_prev, weight, bias, gates, reset_h, dh):
    xp = ctx.xp
    gate_w, state_w = gru_weights(weight)
    act, gate_act = _unit_acts(ctx.attrs)
    dz, dh_prev, dgw, dsw = gru_step_grad(xp, gates, reset_h, h_prev, dh, gate_w, state_w,
                                          act, gate_act, ctx.attrs["origin_mode"])
    db = dz.sum(axis=0).reshape(bias.shape) if bias is not None else None
    return dz, dh_prev, gru_weight_grad(xp, dgw, dsw), db


def _gru_unit_grad_maker(g):
    ins = {slot: g.input(slot) for slot in ("Input", "HiddenPrev", "Weight", "Bias")}
    ins.update(Gate=g.output("Gate"), ResetHiddenPrev=g.output("ResetHiddenPrev"))
    ins["Hidden@GRAD"] = g.output_grad("Hidden")
    outs = {s + "@GRAD": g.input_grad(s) for s in ("Input", "HiddenPrev", "Weight", "Bias")
            if g.has_input(s)}
    return [g.op("gru_unit_grad", ins, outs)]


_gru_unit_grad_maker.grad_type = "gru_unit_grad"

def_op("gru_unit",
       inputs=["Input", "HiddenPrev", "Weight", "Bias?"],
       outputs=["Gate!", "ResetHiddenPrev!", "Hidden"],
       attrs=_GRU_UNIT_ATTRS, infer_shape=_gru_unit_infer, grad=_gru_unit_grad_maker,
       kernel=_gru_unit,
       doc="One GRU step on a batch: Input [N, 3D], HiddenPrev [N, D]. " + _GRU_FORMULA +
           "Activations are codes: 0 identity, 1 sigmoid, 2 tanh, 3 relu. Gate holds the "
           "activated [u, r, c], ResetHiddenPrev r * h_{t-1}.")

def_op("gru_unit_grad",
       inputs=["Input", "HiddenPrev", "Weight", "Bias?", "Gate", "ResetHiddenPrev",
               "Hidden@GRAD"],
       outputs=["Input@GRAD?", "HiddenPrev@GRAD?", "Weight@GRAD?", "Bias@GRAD?"],
       attrs=_GRU_UNIT_ATTRS,
       infer_shape=grads_like(**{"Input@GRAD": "Input", "HiddenPrev@GRAD": "HiddenPrev",
                                 "Weight@GRAD": "Weight", "Bias@GRAD": "Bias"}),
       kernel=_gru_unit_grad,
       doc="Gradient of gru_unit from the activated gates and r * h_{t-1}.")


# --- lstm_unit ---------------------------------------------------------------------------------
_LSTM_UNIT_ATTRS = {"forget_bias": ("float", 0.0)}


def _lstm_unit_infer(ctx):
    x = _check_rank2(ctx, "X")
    c = _check_rank2(ctx, "C_prev")
    ctx.check(dims_match(x[0], c[0]), "dim 0 of 'X' and 'C_prev'", "equal sizes",
              f"{x[0]} and {c[0]}")
    ctx.check(dims_match(x[1], 4 * c[1] if c[1] >= 0 else -1), "width of 'X'",
              "4 * the width of C_prev", f"{x[1]} against C_prev {list(c)}")
    dtype = ctx.input_dtype("X")
    ctx.set_output("C", tuple(c), dtype)
    ctx.set_output("H", tuple(c), dtype)


def _lstm_unit_gates(xp, x, forget_bias):
    d = x.shape[1] // 4
    sig = lambda v: 1.0 / (1.0 + xp.exp(-v))  # noqa: E731
    return (sig(x[:, :d]), sig(x[:, d:2 * d] + forget_bias), sig(x[:, 2 * d:3 * d]),
            xp.tanh(x[:, 3 * d:]))


def _lstm_unit(ctx, x, c_prev):
    i, f, o, g = _lstm_unit_gates(ctx.xp, x, ctx.attrs["forget_bias"])
    c = f * c_prev + i * g
    return c, o * ctx.xp.tanh(c)


def _lstm_unit_grad(ctx, x, c_prev, c, dh, dc):
    xp = ctx.xp
    i, f, o, g = _lstm_unit_gates(xp, x, ctx.attrs["forget_bias"])
    tanh_c = xp.tanh(c)
    dh = dh if dh is not None else xp.zeros_like(c)
    dc_total = dh * o * (1 - tanh_c * tanh_c) + (dc if dc is not None else 0)
    dx = xp.concatenate([dc_total * g * i * (1 - i), dc_total * c_prev * f * (1 - f),
                         dh * tanh_c * o * (1 - o), dc_total * i * (1 - g * g)], axis=1)
    return dx.astype(x.dtype, copy=False), (dc_total * f).astype(x.dtype, copy=False)


def _lstm_unit_grad_maker(g):
    ins = {"X": g.input("X"), "C_prev": g.input("C_prev"), "C": g.output("C"),
           "H@GRAD": g.output_grad("H"), "C@GRAD": g.output_grad("C")}
    outs = {"X@GRAD": g.input_grad("X"), "C_prev@GRAD": g.input_grad("C_prev")}
    return [g.op("lstm_unit_grad", ins, outs)]


_lstm_unit_grad_maker.grad_type = "lstm_unit_grad"

def_op("lstm_unit",
       inputs=["X", "C_prev"], outputs=["C", "H"],
       attrs=_LSTM_UNIT_ATTRS, infer_shape=_lstm_unit_infer, grad=_lstm_unit_grad_maker,
       kernel=_lstm_unit,
       doc="One LSTM step on a batch: X [N, 4D] holds the projections in the order (input, "
           "forget, output, candidate) — not lstm's order:\n"
           "  i = sigmoid(X_i); f = sigmoid(X_f + forget_bias); o = sigmoid(X_o); "
           "g = tanh(X_g)\n"
           "  C = f * C_prev + i * g;  H = o * tanh(C)")

def_op("lstm_unit_grad",
       inputs=["X", "C_prev", "C", "H@GRAD?", "C@GRAD?"], outputs=["X@GRAD?", "C_prev@GRAD?"],
       attrs=_LSTM_UNIT_ATTRS,
       infer_shape=grads_like(**{"X@GRAD": "X", "C_prev@GRAD": "C_prev"}),
       kernel=_lstm_unit_grad,
       doc="Gradient of lstm_unit: dC_total = dC + dH * o * (1 - tanh(C)^2); dC_prev = "
           "dC_total * f; the gate gradients through the sigmoid/tanh derivatives.")
