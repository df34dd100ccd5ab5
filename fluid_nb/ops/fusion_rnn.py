"""Fused recurrent ops of Fluid 1.8's inference programs (its CPU fuse passes write them):
``fusion_lstm`` and ``fusion_gru`` (an fc into an lstm / gru), ``fused_embedding_fc_lstm``
(a lookup of pre-multiplied embeddings into an lstm) and ``attention_lstm`` (an LSTM whose
input at each step is an attention-weighted sum of its sequence).

Each means a composition of ops fluid_nb already has, and its kernel runs theirs
(:func:`.compose.run_kernel`): the results do not depend on ``use_seq``, which only chose
Paddle's loop order. The ``Batched*``/``Reordered*`` intermediates hold the values in
``lstm``'s time-step batch order (see ``rnn_units.BatchLayout``). No gradient: these ops
exist only in inference programs.
"""
from ..errors import InvalidArgument, expected
from ..framework.infer import dims_match
from ..framework.registry import def_op, no_gradient
from ..tensor.tensor import LoDTensor
from .compose import run_kernel
from .rnn_units import ACTIVATIONS, BatchLayout, lstm_step, one_of
from .sequence import lod_of

_GATE_ACTS = {"gate_activation": ("string", "sigmoid", one_of(*ACTIVATIONS)),
              "cell_activation": ("string", "tanh", one_of(*ACTIVATIONS)),
              "candidate_activation": ("string", "tanh", one_of(*ACTIVATIONS))}
_LSTM_ATTRS = {"use_peepholes": ("bool", True), "is_reverse": ("bool", False),
               "use_seq": ("bool", True), **_GATE_ACTS}


# --- shared checks ----------------------------------------------------------------------------
def _rank2(ctx, slot):
    shape = list(ctx.input_shape(slot))
    ctx.check(len(shape) == 2, f"input '{slot}'", "rank 2", shape)
    return shape


def _check_lstm_weights(ctx, d):
    """WeightH [D, 4D], Bias [1, 4D] (or [1, 7D] with peepholes), H0 and C0 together."""
    wh = _rank2(ctx, "WeightH")
    ctx.check(dims_match(wh[0], d) and dims_match(wh[1], 4 * d if d >= 0 else -1),
              "input 'WeightH'", f"shape [D, 4D] with D = {d}", wh)
    b = _rank2(ctx, "Bias")
    width = (7 if ctx.attr("use_peepholes") else 4) * d if d >= 0 else -1
    ctx.check(dims_match(b[0], 1) and dims_match(b[1], width), "input 'Bias'",
              f"shape [1, {width}] ({'7' if ctx.attr('use_peepholes') else '4'} * D, "
              f"use_peepholes={ctx.attr('use_peepholes')})", b)
    if ctx.has_input("H0"):
        ctx.check(ctx.has_input("C0"), "input 'C0'", "a variable when H0 is given", "none")
        h0, c0 = list(ctx.input_shape("H0")), list(ctx.input_shape("C0"))
        ctx.check(len(h0) == 2 and h0 == c0, "inputs 'H0' and 'C0'", "the same shape [N, D]",
                  f"{h0} and {c0}")
        ctx.check(dims_match(h0[1], d), "input 'H0'", f"width D = {d}", h0)


def _sequences(op, tensor, slot):
    """The offsets of ``tensor``'s one LoD level."""
    return lod_of(op, tensor, slot, levels=1)[0]


def _check_state_rows(op, offsets, **states):
    n = len(offsets) - 1
    for slot, state in states.items():
        if state is not None and state.array.shape[0] != n:
            raise InvalidArgument(expected(op, f"input '{slot}'", f"{n} rows (one per "
                                           f"sequence)", list(state.array.shape)))


# --- LSTMs over a projected input ---------------------------------------------------------------
def _lstm(ctx, projected, h0, c0, weight_h, bias):
    """lstm's kernel on the projection (a LoDTensor): (Hidden, Cell) in row order."""
    attrs = ctx.attrs
    hidden, cell, _, _ = run_kernel(
        ctx, "lstm", projected, h0, c0, weight_h, bias,
        use_peepholes=attrs["use_peepholes"], is_reverse=attrs["is_reverse"],
        gate_activation=attrs["gate_activation"], cell_activation=attrs["cell_activation"],
        candidate_activation=attrs["candidate_activation"])
    return hidden, cell


def _batched(ctx, offsets, h0, c0, *row_ordered):
    """The time-step batch order intermediates: each of ``row_ordered`` reordered, then the
    initial states in batch order (None where absent or not asked for)."""
    layout = BatchLayout(offsets, ctx.attrs["is_reverse"])
    xp = ctx.xp
    out = [layout.to_batch(xp, a) if a is not None else None for a in row_ordered]
    return out + [layout.reorder(xp, s.array) if s is not None else None for s in (h0, c0)]


def _fusion_lstm_infer(ctx):
    x, wx = _rank2(ctx, "X"), _rank2(ctx, "WeightX")
    ctx.check(dims_match(wx[0], x[1]), "input 'WeightX'", f"{x[1]} rows (X's width)", wx)
    d = wx[1] // 4 if wx[1] >= 0 else -1
    _check_lstm_weights(ctx, d)
    dtype = ctx.input_dtype("X")
    ctx.set_output("Hidden", [x[0], d], dtype)
    ctx.set_output("Cell", [x[0], d], dtype)
    # Paddle's batch mode keeps the narrower of X and X WeightX in XX
    xx = wx[1] if ctx.attr("use_seq") or x[1] < 0 or wx[1] < 0 else min(x[1], wx[1])
    ctx.set_output("XX", [x[0], xx], dtype)
    ctx.set_output("BatchedInput", [x[0], wx[1]], dtype)
    for slot in ("BatchedHidden", "BatchedCell"):
        ctx.set_output(slot, [x[0], d], dtype)
    for slot in ("ReorderedH0", "ReorderedC0"):
        ctx.set_output(slot, [-1, d], dtype)
    ctx.set_output("CheckedCell", [2, d], dtype)


def _fusion_lstm(ctx, x, weight_x, weight_h, bias, h0, c0):
    attrs = ctx.attrs
    offsets = _sequences("fusion_lstm", x, "X")
    _check_state_rows("fusion_lstm", offsets, H0=h0, C0=c0)
    projection = run_kernel(ctx, "fc", x.array, weight_x.array, None)
    hidden, cell = _lstm(ctx, LoDTensor(projection, x.lod()), h0, c0, weight_h, bias)
    d4 = weight_h.array.shape[1]
    xx = projection + bias.array.reshape(-1)[:d4]
    batched = [None] * 5
    if not attrs["use_seq"]:
        batched = _batched(ctx, offsets, h0, c0, xx, hidden, cell)
        if x.array.shape[1] <= d4:  # Paddle's XX then holds X in batch order
            xx = BatchLayout(offsets, attrs["is_reverse"]).to_batch(ctx.xp, x.array)
    return (hidden, cell, xx, *batched, None)


_LSTM_OUTPUTS = ["Hidden", "Cell", "XX!", "BatchedInput!", "BatchedHidden!", "BatchedCell!",
                 "ReorderedH0!", "ReorderedC0!"]
_LSTM_FORMULA = (
    "  z_t = x_t + h_{t-1} WeightH + Bias[:4D];  gates in lstm's order (candidate, input, "
    "forget, output), peepholes Bias[4D:7D] with use_peepholes:\n"
    "  c_t = f * c_{t-1} + i * act_cand(z_c);  h_t = o * act_cell(c_t)\n"
    "(as the lstm op; reversed with is_reverse). h_0, c_0 = H0, C0 ([N, D]) or zeros. "
    "Hidden, Cell: [T, D] with the input's LoD. No gradient (inference only).")

def_op("fusion_lstm",
       inputs=["X", "WeightX", "WeightH", "Bias", "H0?", "C0?"],
       outputs=_LSTM_OUTPUTS + ["CheckedCell!"],
       attrs=_LSTM_ATTRS, infer_shape=_fusion_lstm_infer, grad=no_gradient,
       kernel=_fusion_lstm, lod_aware=True, share_lod=("X", ["Hidden", "Cell", "XX"]),
       doc="fc followed by lstm over each sequence of X [T, M] (one LoD level): x_t = "
           "X_t WeightX (WeightX [M, 4D]; the fc's bias is folded into Bias), then\n"
           + _LSTM_FORMULA + " XX holds X WeightX + Bias[:4D] (in batch mode with M <= 4D, X "
           "in time-step batch order).")


def _embedding_lstm_infer(ctx):
    ids, table = list(ctx.input_shape("Ids")), _rank2(ctx, "Embeddings")
    ctx.check(len(ids) == 2 and dims_match(ids[1], 1), "input 'Ids'", "shape [T, 1]", ids)
    wh = _rank2(ctx, "WeightH")
    d = wh[1] // 4 if wh[1] >= 0 else -1
    ctx.check(dims_match(table[1], 4 * d if d >= 0 else -1), "input 'Embeddings'",
              f"width 4D = {4 * d} (rows already multiplied by the fc weight)", table)
    _check_lstm_weights(ctx, d)
    dtype = ctx.input_dtype("Embeddings")
    for slot in ("Hidden", "Cell", "BatchedHidden", "BatchedCell"):
        ctx.set_output(slot, [ids[0], d], dtype)
    for slot in ("XX", "BatchedInput"):
        ctx.set_output(slot, [ids[0], table[1]], dtype)
    for slot in ("ReorderedH0", "ReorderedC0"):
        ctx.set_output(slot, [-1, d], dtype)


def _embedding_lstm(ctx, ids, embeddings, weight_h, bias, h0, c0):
    xp = ctx.xp
    offsets = _sequences("fused_embedding_fc_lstm", ids, "Ids")
    _check_state_rows("fused_embedding_fc_lstm", offsets, H0=h0, C0=c0)
    xx = run_kernel(ctx, "lookup_table", embeddings, ids)
    # the table rows already hold x W_x + b: the bias's gate part is not added again
    b = bias.array.reshape(-1)
    d4 = weight_h.array.shape[1]
    peepholes_only = xp.concatenate([xp.zeros((d4,), dtype=b.dtype), b[d4:]]).reshape(1, -1)
    hidden, cell = _lstm(ctx, LoDTensor(xx, ids.lod()), h0, c0, weight_h,
                         LoDTensor(peepholes_only))
    batched = [None] * 5
    if not ctx.attrs["use_seq"]:
        batched = _batched(ctx, offsets, h0, c0, xx, hidden, cell)
    return (hidden, cell, xx, *batched)


def_op("fused_embedding_fc_lstm",
       inputs=["Ids", "Embeddings", "WeightH", "Bias", "H0?", "C0?"],
       outputs=_LSTM_OUTPUTS,
       attrs=_LSTM_ATTRS, infer_shape=_embedding_lstm_infer, grad=no_gradient,
       kernel=_embedding_lstm, lod_aware=True, share_lod=("Ids", ["Hidden", "Cell", "XX"]),
       doc="lookup_table followed by lstm: x_t = Embeddings[Ids_t] (Ids [T, 1] int64 with one "
           "LoD level; Embeddings [V, 4D] holds each word's embedding already multiplied by "
           "the fc weight, plus the fc and gate biases, so Bias[:4D] is not added again), "
           "then\n" + _LSTM_FORMULA.replace(" + Bias[:4D]", "") + " XX holds the looked-up "
           "rows.")


# --- fusion_gru -----------------------------------------------------------------------------------
def _fusion_gru_infer(ctx):
    x, wx, wh = _rank2(ctx, "X"), _rank2(ctx, "WeightX"), _rank2(ctx, "WeightH")
    ctx.check(dims_match(wx[0], x[1]), "input 'WeightX'", f"{x[1]} rows (X's width)", wx)
    d = wx[1] // 3 if wx[1] >= 0 else -1
    d3 = 3 * d if d >= 0 else -1
    ctx.check(dims_match(wh[0], d) and dims_match(wh[1], d3), "input 'WeightH'",
              f"shape [D, 3D] with D = {d}", wh)
    if ctx.has_input("H0"):
        h0 = list(ctx.input_shape("H0"))
        ctx.check(len(h0) == 2 and dims_match(h0[1], d), "input 'H0'", f"shape [N, {d}]", h0)
    if ctx.has_input("Bias"):
        b = _rank2(ctx, "Bias")
        ctx.check(dims_match(b[0], 1) and dims_match(b[1], d3), "input 'Bias'",
                  f"shape [1, {d3}]", b)
    dtype = ctx.input_dtype("X")
    for slot in ("Hidden", "BatchedOut"):
        ctx.set_output(slot, [x[0], d], dtype)
    xx = wx[1] if ctx.attr("use_seq") or x[1] < 0 or wx[1] < 0 else min(x[1], wx[1])
    ctx.set_output("XX", [x[0], xx], dtype)
    ctx.set_output("BatchedInput", [x[0], wx[1]], dtype)
    ctx.set_output("ReorderedH0", [-1, d], dtype)


def _fusion_gru(ctx, x, h0, weight_x, weight_h, bias):
    attrs = ctx.attrs
    offsets = _sequences("fusion_gru", x, "X")
    _check_state_rows("fusion_gru", offsets, H0=h0)
    xx = run_kernel(ctx, "fc", x.array, weight_x.array,
                    bias.array if bias is not None else None)
    _, _, batched_out, hidden = run_kernel(
        ctx, "gru", LoDTensor(xx, x.lod()), h0, weight_h, None,
        activation=attrs["activation"], gate_activation=attrs["gate_activation"],
        is_reverse=attrs["is_reverse"])
    if attrs["use_seq"]:
        return None, xx, None, None, hidden
    batched_input, reordered_h0, _ = _batched(ctx, offsets, h0, None, xx)
    if x.array.shape[1] <= xx.shape[1]:  # Paddle's XX then holds X in batch order
        xx = BatchLayout(offsets, attrs["is_reverse"]).to_batch(ctx.xp, x.array)
    return reordered_h0, xx, batched_input, batched_out, hidden


def_op("fusion_gru",
       inputs=["X", "H0?", "WeightX", "WeightH", "Bias?"],
       outputs=["ReorderedH0!", "XX!", "BatchedInput!", "BatchedOut!", "Hidden"],
       attrs={"activation": ("string", "tanh", one_of(*ACTIVATIONS)),
              "gate_activation": ("string", "sigmoid", one_of(*ACTIVATIONS)),
              "is_reverse": ("bool", False), "use_seq": ("bool", True)},
       infer_shape=_fusion_gru_infer, grad=no_gradient, kernel=_fusion_gru, lod_aware=True,
       share_lod=("X", ["Hidden", "XX"]),
       doc="fc followed by gru over each sequence of X [T, M] (one LoD level): x_t = X_t "
           "WeightX + Bias (WeightX [M, 3D], Bias [1, 3D] optional), then the gru op's step "
           "with WeightH [D, 3D] (its first 2*D*D values the update/reset weights, the last "
           "D*D the candidate's):\n"
           "  [u, r] = act_gate(x_ur + h_{t-1} W_ur);  c = act(x_c + (r * h_{t-1}) W_c)\n"
           "  h_t = (1 - u) * h_{t-1} + u * c\n"
           "reversed with is_reverse; h_0 = H0 ([N, D]) or zeros. Hidden [T, D] has X's LoD; "
           "XX holds X WeightX + Bias. No gradient (inference only).")


# --- attention_lstm -----------------------------------------------------------------------------
def _attention_infer(ctx):
    x, w = _rank2(ctx, "X"), _rank2(ctx, "LSTMWeight")
    m = x[1]
    d = w[1] // 4 if w[1] >= 0 else -1
    known = m >= 0 and d >= 0
    ctx.check(not known or dims_match(w[0], d + m), "input 'LSTMWeight'",
              f"shape [D + M, 4D] = [{d + m}, {4 * d}]", w)
    b = _rank2(ctx, "LSTMBias")
    ctx.check(dims_match(b[0], 1) and dims_match(b[1], w[1]), "input 'LSTMBias'",
              f"shape [1, {w[1]}]", b)
    c0 = _rank2(ctx, "C0")
    ctx.check(dims_match(c0[1], d), "input 'C0'", f"shape [N, {d}]", c0)
    if ctx.has_input("H0"):
        h0 = list(ctx.input_shape("H0"))
        ctx.check(len(h0) == 2 and all(dims_match(a, c) for a, c in zip(h0, c0)),
                  "input 'H0'", f"C0's shape {c0}", h0)
    aw = _rank2(ctx, "AttentionWeight")
    ctx.check(not known or (dims_match(aw[0], m + d) and dims_match(aw[1], 1)),
              "input 'AttentionWeight'", f"shape [M + D, 1] = [{m + d}, 1]", aw)
    if ctx.has_input("AttentionScalarBias"):
        ctx.check(ctx.has_input("AttentionScalar"), "input 'AttentionScalar'",
                  "a variable when AttentionScalarBias is given", "none")
    for slot in ("AttentionBias", "AttentionScalar", "AttentionScalarBias"):
        if ctx.has_input(slot):
            shape = list(ctx.input_shape(slot))
            ctx.check(len(shape) == 2 and all(dims_match(s, 1) for s in shape),
                      f"input '{slot}'", "shape [1, 1]", shape)
    dtype = ctx.input_dtype("X")
    for slot in ("Hidden", "Cell"):
        ctx.set_output(slot, [x[0], d], dtype)
    ctx.set_output("AttentionedX", [x[0], 1], dtype)
    ctx.set_output("AttentionFCOut", [-1, 1], dtype)
    ctx.set_output("LSTMX", [1, m], dtype)
    ctx.set_output("LSTMOUT", [1, w[1]], dtype)


def _to_lstm_order(xp, a, d):
    """Columns in attention_lstm's gate order (forget, input, output, candidate) put in
    lstm's (candidate, input, forget, output)."""
    return xp.concatenate([a[..., 3 * d:], a[..., d:2 * d], a[..., :d], a[..., 2 * d:3 * d]],
                          axis=-1)


def _attention_scores(xp, attended, cell, cell_weight, scalar, scalar_bias):
    """softmax over the sequence of relu(scalar * relu(X w_x + b + c_{t-1} w_c) + s_b)
    (the outer scale and relu only with AttentionScalar)."""
    score = xp.maximum(attended + cell @ cell_weight, 0)
    if scalar is not None:
        score = score * scalar
        if scalar_bias is not None:
            score = score + scalar_bias
        score = xp.maximum(score, 0)
    e = xp.exp(score - score.max())
    return e / e.sum()


def _attention_lstm(ctx, x, c0, h0, att_w, att_b, att_scalar, att_scalar_bias, lstm_w,
                    lstm_b):
    xp, attrs = ctx.xp, ctx.attrs
    offsets = _sequences("attention_lstm", x, "X")
    _check_state_rows("attention_lstm", offsets, C0=c0, H0=h0)
    xa, w = x.array, lstm_w.array
    m, d = xa.shape[1], w.shape[1] // 4
    aw = att_w.array
    attended = run_kernel(ctx, "fc", xa, aw[:m], att_b.array if att_b is not None else None)
    scalar = att_scalar.array.reshape(()) if att_scalar is not None else None
    scalar_bias = att_scalar_bias.array.reshape(()) if att_scalar_bias is not None else None
    w_h, w_x = _to_lstm_order(xp, w[:d], d), _to_lstm_order(xp, w[d:], d)
    b = _to_lstm_order(xp, lstm_b.array.reshape(1, -1), d)
    acts = (attrs["gate_activation"], attrs["cell_activation"], attrs["candidate_activation"])
    hidden = xp.empty((xa.shape[0], d), dtype=xa.dtype)
    cell = xp.empty_like(hidden)
    weights = lstm_x = gates = None
    for s, (start, end) in enumerate(zip(offsets[:-1], offsets[1:])):
        c_prev = c0.array[s:s + 1]
        h_prev = h0.array[s:s + 1] if h0 is not None else None
        for t in range(start, end):
            weights = _attention_scores(xp, attended[start:end, 0], c_prev, aw[m:, 0],
                                        scalar, scalar_bias)
            lstm_x = weights[None, :] @ xa[start:end]
            z = lstm_x @ w_x + b
            if h_prev is not None:
                z = z + h_prev @ w_h
            gates, c_prev, _, h_prev = lstm_step(xp, z, c_prev, None, acts)
            hidden[t], cell[t] = h_prev[0], c_prev[0]
    # the intermediates keep the last step's values, as Paddle's buffers do
    lengths = [e - s for s, e in zip(offsets[:-1], offsets[1:])]
    fc_out = xp.zeros((max(lengths, default=0), 1), dtype=xa.dtype)
    if weights is not None:
        fc_out[:weights.shape[0], 0] = weights
        gates = xp.concatenate([gates[:, 2 * d:3 * d], gates[:, d:2 * d], gates[:, 3 * d:],
                                gates[:, :d]], axis=1)
    else:
        lstm_x = xp.zeros((1, m), dtype=xa.dtype)
        gates = xp.zeros((1, 4 * d), dtype=xa.dtype)
    return hidden, cell, attended, fc_out, lstm_x, gates


def_op("attention_lstm",
       inputs=["X", "C0", "H0?", "AttentionWeight", "AttentionBias?", "AttentionScalar?",
               "AttentionScalarBias?", "LSTMWeight", "LSTMBias"],
       outputs=["Hidden", "Cell", "AttentionedX!", "AttentionFCOut!", "LSTMX!", "LSTMOUT!"],
       attrs=_GATE_ACTS, infer_shape=_attention_infer, grad=no_gradient,
       kernel=_attention_lstm, lod_aware=True, share_lod=("X", ["Hidden", "Cell"]),
       doc="An LSTM over each sequence x_1..x_L of X [T, M] (one LoD level) whose input at "
           "step t attends over the whole sequence, from C0 [N, D] (required) and H0 (or "
           "zeros). AttentionWeight [M + D, 1] = (w_x; w_c):\n"
           "  a_j = relu(x_j w_x + AttentionBias + c_{t-1} w_c);  with AttentionScalar s: "
           "a_j = relu(s * a_j + AttentionScalarBias)\n"
           "  alpha = softmax(a) over the sequence;  u_t = sum_j alpha_j x_j  ([1, M])\n"
           "  z = [h_{t-1}, u_t] LSTMWeight + LSTMBias  (LSTMWeight [D + M, 4D], gate order "
           "forget, input, output, candidate)\n"
           "  c_t = f * c_{t-1} + i * act_cand(z_c);  h_t = o * act_cell(c_t)  (f, i, o = "
           "act_gate; no peepholes)\n"
           "Hidden, Cell: [T, D] with X's LoD. AttentionedX = X w_x + AttentionBias; LSTMX, "
           "LSTMOUT, AttentionFCOut hold the last step's u, activated gates and alpha. No "
           "gradient (inference only).")
