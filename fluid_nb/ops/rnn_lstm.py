"""Two more LSTMs of Fluid 1.8: ``lstmp`` (an LSTM over LoD sequences whose recurrent state
is a projection of the hidden state) and ``cudnn_lstm`` (a stacked, optionally
bidirectional LSTM over a padded, time-major batch with one flat weight), each with its grad
op. ``lstmp`` runs in the time-step batch order of ``lstm`` (see ``rnn_units.BatchLayout``).
"""
import numpy as np

from ..errors import InvalidArgument, Unimplemented, expected
from ..framework.registry import def_op, grads_like
from .rnn_units import (ACTIVATIONS, BatchLayout, activate, activate_grad, lod_offsets,
                        lstm_step, lstm_step_grad, one_of)

# --- lstmp ----------------------------------------------------------------------------------
_LSTMP_ATTRS = {
    "use_peepholes": ("bool", True),
    "is_reverse": ("bool", False),
    "cell_clip": ("float", 0.0),
    "proj_clip": ("float", 0.0),
    "gate_activation": ("string", "sigmoid", one_of(*ACTIVATIONS)),
    "cell_activation": ("string", "tanh", one_of(*ACTIVATIONS)),
    "candidate_activation": ("string", "tanh", one_of(*ACTIVATIONS)),
    "proj_activation": ("string", "tanh", one_of(*ACTIVATIONS)),
}


def _lstmp_infer(ctx):
    x = ctx.input_shape("Input")
    w, proj = ctx.input_shape("Weight"), ctx.input_shape("ProjWeight")
    ctx.check(len(x) == 2, "input 'Input' rank", "2", len(x))
    d = x[1] // 4 if x[1] >= 0 else proj[0]
    ctx.check(len(w) == 2 and len(proj) == 2, "ranks of 'Weight' and 'ProjWeight'", "2 and 2",
              f"{len(w)} and {len(proj)}")
    ctx.check(w[0] < 0 or proj[1] < 0 or w[0] == proj[1], "'Weight' rows",
              f"the projection size {proj[1]} (ProjWeight's columns)", w[0])
    ctx.check(d < 0 or w[1] < 0 or w[1] == 4 * d, "'Weight' columns", f"4 * {d}", w[1])
    ctx.check(d < 0 or proj[0] < 0 or proj[0] == d, "'ProjWeight' rows",
              f"the hidden size {d}", proj[0])
    width = (7 if ctx.attr("use_peepholes") else 4) * d
    bias = ctx.input_shape("Bias")
    ctx.check(d < 0 or tuple(bias) in ((1, width), (1, -1)), "shape of 'Bias'", [1, width],
              list(bias))
    if ctx.has_input("H0"):
        ctx.check(ctx.has_input("C0"), "input 'C0'", "a variable when H0 is given", "none")
        h0 = ctx.input_shape("H0")
        ctx.check(len(h0) == 2 and (h0[1] < 0 or proj[1] < 0 or h0[1] == proj[1]),
                  "input 'H0'", f"shape [N, {proj[1]}] (the initial projection)", list(h0))
    dtype = ctx.input_dtype("Input")
    ctx.set_output("Projection", (x[0], proj[1]), dtype)
    ctx.set_output("Cell", (x[0], d), dtype)
    ctx.set_output("BatchGate", tuple(x), dtype)
    ctx.set_output("BatchCellPreAct", (x[0], d), dtype)
    ctx.set_output("BatchHidden", (x[0], d), dtype)


def _project(xp, attrs, hidden, proj_weight):
    """r = clip(act_proj(h P)): (r, the activation before the clip)."""
    activated = activate(xp, attrs["proj_activation"], hidden @ proj_weight)
    clip = attrs["proj_clip"]
    return (xp.clip(activated, -clip, clip) if clip > 0 else activated), activated


def _lstmp_setup(ctx, op, x, weight, proj_weight, bias):
    attrs = ctx.attrs
    layout = BatchLayout(lod_offsets(op, x), attrs["is_reverse"])
    w, proj, b = weight.array, proj_weight.array, bias.array.reshape(-1)
    d = proj.shape[0]
    peep = (b[4 * d:5 * d], b[5 * d:6 * d], b[6 * d:7 * d]) if attrs["use_peepholes"] else None
    acts = (attrs["gate_activation"], attrs["cell_activation"], attrs["candidate_activation"])
    return layout, w, proj, b, d, peep, acts


def _initial_projection(xp, layout, h0):
    # Fluid 1.8 takes H0 as the initial projection r_0 itself ([N, P]), not a hidden state
    return None if h0 is None else layout.reorder(xp, h0.array)


def _lstmp(ctx, x, h0, c0, weight, proj_weight, bias):
    xp, attrs = ctx.xp, ctx.attrs
    layout, w, proj, b, d, peep, acts = _lstmp_setup(ctx, "lstmp", x, weight, proj_weight,
                                                     bias)
    pre = layout.to_batch(xp, x.array) + b[:4 * d]
    n = pre.shape[0]
    gates = xp.empty_like(pre)
    hidden, cell, cell_act = (xp.empty((n, d), dtype=pre.dtype) for _ in range(3))
    projection = xp.empty((n, proj.shape[1]), dtype=pre.dtype)
    r_prev = _initial_projection(xp, layout, h0)
    c_prev = layout.reorder(xp, c0.array) if c0 is not None else None
    for t, start, end, prev in layout.steps():
        z = pre[start:end]
        if prev is not None:
            r_prev = projection[prev:prev + end - start]
            c_prev = cell[prev:prev + end - start]
        if r_prev is not None:
            z = z + r_prev @ w
        gates[start:end], cell[start:end], cell_act[start:end], hidden[start:end] = \
            lstm_step(xp, z, c_prev, peep, acts, attrs["cell_clip"])
        projection[start:end] = _project(xp, attrs, hidden[start:end], proj)[0]
    return (layout.to_seq(xp, projection), layout.to_seq(xp, cell), gates, cell_act, hidden)


def _lstmp_grad(ctx, x, h0, c0, weight, proj_weight, bias, projection_out, cell_out, gates,
                cell_act, batch_hidden, dprojection):
    xp, attrs = ctx.xp, ctx.attrs
    layout, w, proj, b, d, peep, acts = _lstmp_setup(ctx, "lstmp_grad", x, weight,
                                                     proj_weight, bias)
    projection = layout.to_batch(xp, projection_out.array)
    cell = layout.to_batch(xp, cell_out.array)
    hidden = batch_hidden.array
    dr_all = layout.to_batch(xp, dprojection.array).copy()
    gates, cell_act = gates.array, cell_act.array
    dc_all = xp.zeros_like(cell)
    dgates = xp.empty_like(gates)
    dhp_all = xp.empty((hidden.shape[0], proj.shape[1]), dtype=hidden.dtype)
    dpeep = [xp.zeros(d, dtype=w.dtype) for _ in range(3)]
    r0 = _initial_projection(xp, layout, h0)
    c0o = layout.reorder(xp, c0.array) if c0 is not None else None
    dh0o = dc0o = None
    clip = attrs["proj_clip"]
    for t, start, end, prev in reversed(list(layout.steps())):
        n = end - start
        h = hidden[start:end]
        r, activated = _project(xp, attrs, h, proj)
        dr = dr_all[start:end]
        if clip > 0:
            dr = dr * ((activated > -clip) & (activated < clip))
        dhp = dhp_all[start:end] = activate_grad(xp, attrs["proj_activation"], dr, activated)
        dh = dhp @ proj.T
        c_prev = cell[prev:prev + n] if prev is not None else c0o
        dz, dc_prev, dp = lstm_step_grad(xp, gates[start:end], cell[start:end],
                                         cell_act[start:end], c_prev, dh, dc_all[start:end],
                                         peep, acts, attrs["cell_clip"])
        dgates[start:end] = dz
        if dp is not None:
            for k in range(3):
                dpeep[k] += dp[k]
        if prev is not None:
            dr_all[prev:prev + n] += dz @ w.T
            dc_all[prev:prev + n] += dc_prev
        else:
            if r0 is not None:
                dh0o = dz @ w.T
            dc0o = dc_prev
    # the weights' gradients summed over the steps, each one product over every row
    first = layout.first_rows()
    dw = layout.previous(xp, projection).T @ dgates[first:]
    if r0 is not None:
        dw += r0.T @ dgates[:first]
    dproj = hidden.T @ dhp_all
    dx = layout.to_seq(xp, dgates) if ctx.wants("Input@GRAD") else None
    db = None
    if ctx.wants("Bias@GRAD"):
        parts = [dgates.sum(axis=0)] + (dpeep if peep is not None else [])
        db = xp.concatenate(parts).reshape(bias.array.shape)
    dh0 = layout.restore(xp, dh0o, h0.array) if h0 is not None else None
    dc0 = layout.restore(xp, dc0o, c0.array) if c0 is not None else None
    return dx, dh0, dc0, dw, dproj, db


def _lstmp_grad_maker(g):
    ins = {slot: g.input(slot) for slot in ("Input", "H0", "C0", "Weight", "ProjWeight",
                                            "Bias")}
    ins.update({slot: g.output(slot) for slot in ("Projection", "Cell", "BatchGate",
                                                  "BatchCellPreAct", "BatchHidden")})
    ins["Projection@GRAD"] = g.output_grad("Projection")
    outs = {slot + "@GRAD": g.input_grad(slot)
            for slot in ("Input", "H0", "C0", "Weight", "ProjWeight", "Bias")
            if g.has_input(slot)}
    return [g.op("lstmp_grad", ins, outs)]


_lstmp_grad_maker.grad_type = "lstmp_grad"

def_op("lstmp",
       inputs=["Input", "H0?", "C0?", "Weight", "ProjWeight", "Bias"],
       outputs=["Projection", "Cell", "BatchGate!", "BatchCellPreAct!", "BatchHidden!"],
       attrs=_LSTMP_ATTRS, infer_shape=_lstmp_infer, grad=_lstmp_grad_maker,
       kernel=_lstmp, lod_aware=True, share_lod=("Input", ["Projection", "Cell"]),
       doc="LSTM with a recurrent projection over each sequence of a LoD batch. Input "
           "[T, 4D] (gate order candidate, input, forget, output), Weight [P, 4D] reads the "
           "previous projection, ProjWeight [D, P], Bias as lstm's ([1, 7D] with peepholes):\n"
           "  z = Input_t + r_{t-1} Weight + b; gates and c_t as in lstm, c_t clipped to "
           "+-cell_clip when cell_clip > 0\n"
           "  h_t = o * act_cell(c_t);  r_t = act_proj(h_t ProjWeight), clipped to "
           "+-proj_clip when proj_clip > 0\n"
           "r_0 = H0 ([N, P]) and c_0 = C0 ([N, D]), or zeros. Projection [T, P] and Cell "
           "[T, D] keep Input's LoD; BatchHidden holds h in time-step batch order.")

def_op("lstmp_grad",
       inputs=["Input", "H0?", "C0?", "Weight", "ProjWeight", "Bias", "Projection", "Cell",
               "BatchGate", "BatchCellPreAct", "BatchHidden", "Projection@GRAD"],
       outputs=["Input@GRAD?", "H0@GRAD?", "C0@GRAD?", "Weight@GRAD?", "ProjWeight@GRAD?",
                "Bias@GRAD?"],
       attrs=_LSTMP_ATTRS,
       infer_shape=grads_like(**{f"{s}@GRAD": s for s in ("Input", "H0", "C0", "Weight",
                                                          "ProjWeight", "Bias")}),
       kernel=_lstmp_grad, lod_aware=True, share_lod=("Input", ["Input@GRAD"]),
       doc="Gradient of lstmp: back through the steps from the last, through the projection "
           "(no gradient where it or the cell was clipped) into the LSTM step.")


# --- cudnn_lstm -----------------------------------------------------------------------------
def weight_layout(input_size, hidden_size, num_layers, is_bidirec):
    """The pieces of cudnn_lstm's flat weight, in order: for each layer, for each direction
    (forward, then backward): W_ih [4H, in], W_hh [4H, H], b_ih [4H], b_hh [4H], gates in
    the order input, forget, cell candidate, output (``in`` is the input size for layer 0,
    H times the directions above). Returns [(layer, direction, name, shape)]."""
    pieces = []
    directions = 2 if is_bidirec else 1
    for layer in range(num_layers):
        width = input_size if layer == 0 else hidden_size * directions
        for direction in range(directions):
            pieces += [(layer, direction, "w_ih", (4 * hidden_size, width)),
                       (layer, direction, "w_hh", (4 * hidden_size, hidden_size)),
                       (layer, direction, "b_ih", (4 * hidden_size,)),
                       (layer, direction, "b_hh", (4 * hidden_size,))]
    return pieces


def weight_size(input_size, hidden_size, num_layers, is_bidirec):
    return sum(int(np.prod(shape)) for *_, shape in
               weight_layout(input_size, hidden_size, num_layers, is_bidirec))


def _split_weight(attrs, flat):
    pieces, at = {}, 0
    for layer, direction, name, shape in weight_layout(
            attrs["input_size"], attrs["hidden_size"], attrs["num_layers"], attrs["is_bidirec"]):
        size = int(np.prod(shape))
        pieces[layer, direction, name] = flat[at:at + size].reshape(shape)
        at += size
    return pieces


def _sigmoid(xp, v):
    return 1.0 / (1.0 + xp.exp(-v))


def _run_direction(xp, x, h, c, p, reverse):
    """One LSTM direction over x [S, B, in] from (h, c): (outputs [S, B, H], h, c, and the
    per-step record (x_t, h_prev, c_prev, i, f, g, o, c) for the gradient)."""
    steps = range(len(x) - 1, -1, -1) if reverse else range(len(x))
    hidden = p["w_hh"].shape[1]
    out = xp.empty(x.shape[:2] + (hidden,), dtype=x.dtype)
    record = []
    for t in steps:
        z = x[t] @ p["w_ih"].T + p["b_ih"] + h @ p["w_hh"].T + p["b_hh"]
        i, f = _sigmoid(xp, z[:, :hidden]), _sigmoid(xp, z[:, hidden:2 * hidden])
        g, o = xp.tanh(z[:, 2 * hidden:3 * hidden]), _sigmoid(xp, z[:, 3 * hidden:])
        c_new = f * c + i * g
        h_new = o * xp.tanh(c_new)
        record.append((t, h, c, i, f, g, o, c_new))
        h, c = h_new, c_new
        out[t] = h
    return out, h, c, record


def _dropout_masks(ctx, shape, count):
    attrs = ctx.attrs
    p = attrs["dropout_prob"]
    if attrs["is_test"] or p <= 0 or count == 0:
        return np.ones((count,) + shape)
    rng = np.random.RandomState(attrs["seed"] if attrs["seed"] > 0 else None)
    # upscale in training: kept values are divided by 1 - p
    return (rng.uniform(size=(count,) + shape) >= p) / (1.0 - p)


def _cudnn_lstm_forward(ctx, x, init_h, init_c, flat, masks):
    xp, attrs = ctx.xp, ctx.attrs
    pieces = _split_weight(attrs, flat)
    directions = 2 if attrs["is_bidirec"] else 1
    last_h, last_c = xp.empty_like(init_h), xp.empty_like(init_c)
    layer_input, records, inputs = x, [], []
    for layer in range(attrs["num_layers"]):
        if layer:
            layer_input = layer_input * xp.asarray(masks[layer - 1], dtype=x.dtype)
        inputs.append(layer_input)
        outs = []
        for direction in range(directions):
            k = layer * directions + direction
            p = {name: pieces[layer, direction, name]
                 for name in ("w_ih", "w_hh", "b_ih", "b_hh")}
            out, last_h[k], last_c[k], record = _run_direction(
                xp, layer_input, init_h[k], init_c[k], p, reverse=direction == 1)
            outs.append(out)
            records.append(record)
        layer_input = xp.concatenate(outs, axis=2) if directions == 2 else outs[0]
    return layer_input, last_h, last_c, records, inputs


def _check_cudnn_lstm(ctx, x, flat, weight_list, sequence_length):
    attrs = ctx.attrs
    if weight_list or sequence_length is not None:
        raise Unimplemented(expected("cudnn_lstm", "inputs", "Input, InitH, InitC and the flat "
                                     "weight W", "WeightList or SequenceLength (not supported)"))
    if flat is None:
        raise InvalidArgument(expected("cudnn_lstm", "input 'W'", "the flat weight", "none"))
    want = weight_size(attrs["input_size"], attrs["hidden_size"], attrs["num_layers"],
                       attrs["is_bidirec"])
    if flat.size != want or x.shape[-1] != attrs["input_size"]:
        raise InvalidArgument(expected(
            "cudnn_lstm", "input and weight sizes", f"Input [..., {attrs['input_size']}] and W "
            f"[{want}]", f"Input {list(x.shape)} and W [{flat.size}]"))


def _cudnn_lstm(ctx, x, init_h, init_c, flat, weight_list, sequence_length):
    _check_cudnn_lstm(ctx, x, flat, weight_list, sequence_length)
    attrs = ctx.attrs
    directions = 2 if attrs["is_bidirec"] else 1
    masks = _dropout_masks(ctx, x.shape[:2] + (attrs["hidden_size"] * directions,),
                           attrs["num_layers"] - 1)
    out, last_h, last_c, _, _ = _cudnn_lstm_forward(ctx, x, init_h, init_c, flat.reshape(-1),
                                                    masks)
    # Reserve keeps the dropout masks the gradient needs; StateOut the generator's state
    # (none here: a seed per run)
    reserve = ctx.xp.asarray(masks.astype(x.dtype))
    return reserve, ctx.xp.zeros((1,), dtype=x.dtype), out, last_h, last_c


def _cudnn_lstm_grad(ctx, x, init_h, init_c, flat, weight_list, sequence_length, reserve,
                     dout, dlast_h, dlast_c):
    _check_cudnn_lstm(ctx, x, flat, weight_list, sequence_length)
    xp, attrs = ctx.xp, ctx.attrs
    directions = 2 if attrs["is_bidirec"] else 1
    hidden = attrs["hidden_size"]
    masks = reserve  # the saved masks, where the arrays are (xp.asarray keeps them)
    _, _, _, records, inputs = _cudnn_lstm_forward(ctx, x, init_h, init_c, flat.reshape(-1),
                                                   masks)
    pieces = _split_weight(attrs, flat.reshape(-1))
    grads = {key: xp.zeros_like(value) for key, value in pieces.items()}
    d_init_h, d_init_c = xp.zeros_like(init_h), xp.zeros_like(init_c)
    d_layer_out = dout if dout is not None else xp.zeros(
        x.shape[:2] + (hidden * directions,), dtype=x.dtype)
    for layer in reversed(range(attrs["num_layers"])):
        d_input = xp.zeros_like(inputs[layer])
        for direction in range(directions):
            k = layer * directions + direction
            p = {name: pieces[layer, direction, name]
                 for name in ("w_ih", "w_hh", "b_ih", "b_hh")}
            g = {name: grads[layer, direction, name] for name in p}
            d_out = d_layer_out[:, :, direction * hidden:(direction + 1) * hidden]
            dh = dlast_h[k].copy() if dlast_h is not None else xp.zeros_like(init_h[k])
            dc = dlast_c[k].copy() if dlast_c is not None else xp.zeros_like(init_c[k])
            for t, h_prev, c_prev, i, f, gg, o, c in reversed(records[k]):
                dh = dh + d_out[t]
                tanh_c = xp.tanh(c)
                dc = dc + dh * o * (1 - tanh_c ** 2)
                dz = xp.concatenate([dc * gg * i * (1 - i), dc * c_prev * f * (1 - f),
                                     dc * i * (1 - gg ** 2), dh * tanh_c * o * (1 - o)], axis=1)
                g["w_ih"] += dz.T @ inputs[layer][t]
                g["w_hh"] += dz.T @ h_prev
                g["b_ih"] += dz.sum(axis=0)
                g["b_hh"] += dz.sum(axis=0)
                d_input[t] += dz @ p["w_ih"]
                dh = dz @ p["w_hh"]
                dc = dc * f
            d_init_h[k], d_init_c[k] = dh, dc
        if layer:
            d_layer_out = d_input * xp.asarray(masks[layer - 1], dtype=x.dtype)
        else:
            dx = d_input
    flat_grad = xp.concatenate([grads[layer, direction, name].reshape(-1)
                                for layer, direction, name, _ in weight_layout(
                                    attrs["input_size"], hidden, attrs["num_layers"],
                                    attrs["is_bidirec"])]).reshape(flat.shape)
    return dx, d_init_h, d_init_c, flat_grad


_CUDNN_LSTM_ATTRS = {
    "dropout_prob": ("float", 0.0), "is_bidirec": ("bool", False),
    "input_size": ("int", 10), "hidden_size": ("int", 100), "num_layers": ("int", 1),
    "is_test": ("bool", False), "seed": ("int", 0),
}


def _cudnn_lstm_infer(ctx):
    attrs = ctx.attrs()
    x = ctx.input_shape("Input")
    ctx.check(len(x) == 3, "input 'Input' rank", "3 ([seq_len, batch, input_size])", len(x))
    directions = 2 if attrs["is_bidirec"] else 1
    dtype = ctx.input_dtype("Input")
    ctx.set_output("Out", (x[0], x[1], attrs["hidden_size"] * directions), dtype)
    for slot, init in (("LastH", "InitH"), ("LastC", "InitC")):
        ctx.set_output(slot, tuple(ctx.input_shape(init)), dtype)
    ctx.set_output("Reserve", (max(attrs["num_layers"] - 1, 0), x[0], x[1],
                               attrs["hidden_size"] * directions), dtype)
    ctx.set_output("StateOut", (1,), dtype)


def _cudnn_lstm_grad_maker(g):
    ins = {slot: g.input(slot) for slot in ("Input", "InitH", "InitC", "W", "WeightList",
                                            "SequenceLength")}
    ins["Reserve"] = g.output("Reserve")
    ins.update({f"{slot}@GRAD": g.output_grad(slot) for slot in ("Out", "LastH", "LastC")})
    outs = {f"{slot}@GRAD": g.input_grad(slot) for slot in ("Input", "InitH", "InitC", "W")
            if g.has_input(slot)}
    return [g.op("cudnn_lstm_grad", ins, outs)]


_cudnn_lstm_grad_maker.grad_type = "cudnn_lstm_grad"

def_op("cudnn_lstm",
       inputs=["Input", "InitH", "InitC", "W?", "WeightList[]?", "SequenceLength?"],
       outputs=["Reserve!", "StateOut!", "Out", "LastH", "LastC"],
       attrs=_CUDNN_LSTM_ATTRS, infer_shape=_cudnn_lstm_infer, grad=_cudnn_lstm_grad_maker,
       kernel=_cudnn_lstm, traits=("stateful",),  # (dropout between layers draws)
       doc="Stacked LSTM over a padded, time-major batch Input [S, B, in] (every sequence "
           "S steps). Per layer and direction, from InitH/InitC [layers * dirs, B, H]:\n"
           "  z = x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh;  i, f, o = sigmoid, g = tanh "
           "(gate order i, f, g, o)\n"
           "  c_t = f c_{t-1} + i g;  h_t = o tanh(c_t)\n"
           "the backward direction runs from the last step; a layer reads the previous one's "
           "outputs (both directions concatenated), after dropout (dropout_prob, upscaled, "
           "not in is_test). W is one flat weight laid out as weight_layout() says. Out [S, "
           "B, H * dirs]; LastH, LastC the final states.")

def_op("cudnn_lstm_grad",
       inputs=["Input", "InitH", "InitC", "W?", "WeightList[]?", "SequenceLength?",
               "Reserve", "Out@GRAD?", "LastH@GRAD?", "LastC@GRAD?"],
       outputs=["Input@GRAD?", "InitH@GRAD?", "InitC@GRAD?", "W@GRAD?"],
       attrs=_CUDNN_LSTM_ATTRS,
       infer_shape=grads_like(**{f"{s}@GRAD": s for s in ("Input", "InitH", "InitC", "W")}),
       kernel=_cudnn_lstm_grad,
       doc="Gradient of cudnn_lstm: the forward recomputed with the saved dropout masks, then "
           "back through time and the layers.")
