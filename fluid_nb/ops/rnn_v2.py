"""Paddle 2.x's ``rnn`` op (what ``paddle.nn.LSTM``, ``GRU`` and ``SimpleRNN`` save): a
stack of recurrent layers, each one or two directions, over a time-major padded batch.

Input [T, N, I]; PreState: [h0] ([h0, c0] for LSTM), each [L*D, N, H] (layer-major, the
direction inner); WeightList: every layer's and direction's W_ih [G*H, in], W_hh [G*H, H]
in that order, then their b_ih [G*H], b_hh [G*H] in the same order (G gates). With
SequenceLength [N] a sequence's steps past its length leave its state as it was and output
zeros; the backward direction therefore starts at each sequence's own last step.
Layer l > 0 reads the previous layer's Out (both directions concatenated).
"""
import numpy as np

from ..errors import InvalidArgument, Unimplemented, expected
from ..framework.registry import def_op
from ..tensor.transfer import to_host

#: gates per cell
GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _sigmoid(xp, x):
    return 1.0 / (1.0 + xp.exp(-x))


def cell(xp, mode, x_gates, h, c, w_hh, b_hh):
    """One step of ``mode``'s cell from the input's part of the gates ``x_gates`` = x W_ih^T
    + b_ih; with ``hg`` = h W_hh^T + b_hh:
    LSTM (gates i, f, g, o of x_gates + hg): c' = s(f) c + s(i) tanh(g), h' = s(o) tanh(c');
    GRU (gates r, z, n): r = s(x_r + h_r), z = s(x_z + h_z), n = tanh(x_n + r h_n),
    h' = z h + (1 - z) n; RNN_TANH / RNN_RELU: h' = act(x_gates + hg). Returns (h', c')."""
    hg = h @ w_hh.T + b_hh
    if mode == "LSTM":
        i, f, g, o = xp.split(x_gates + hg, 4, axis=-1)
        c = _sigmoid(xp, f) * c + _sigmoid(xp, i) * xp.tanh(g)
        return _sigmoid(xp, o) * xp.tanh(c), c
    if mode == "GRU":
        x_r, x_z, x_n = xp.split(x_gates, 3, axis=-1)
        h_r, h_z, h_n = xp.split(hg, 3, axis=-1)
        r, z = _sigmoid(xp, x_r + h_r), _sigmoid(xp, x_z + h_z)
        n = xp.tanh(x_n + r * h_n)
        return z * h + (1 - z) * n, None
    pre = x_gates + hg
    return (xp.tanh(pre) if mode == "RNN_TANH" else xp.maximum(pre, 0)), None


def _check(op, attrs, input_shape, weight_shapes, state_count):
    mode, layers, hidden = attrs["mode"], attrs["num_layers"], attrs["hidden_size"]
    if mode not in GATES:
        raise InvalidArgument(expected(op, "attribute 'mode'", f"one of {list(GATES)}",
                                       repr(mode)))
    if layers < 1 or hidden < 1:
        raise InvalidArgument(expected(op, "attributes 'num_layers', 'hidden_size'",
                                       "positive", f"{layers}, {hidden}"))
    if len(input_shape) != 3:
        raise InvalidArgument(expected(op, "Input", "a [time, batch, input] tensor",
                                       f"shape {list(input_shape)}"))
    directions = 2 if attrs["is_bidirec"] else 1
    want = 4 * layers * directions
    if len(weight_shapes) != want:
        raise InvalidArgument(expected(op, "WeightList", f"{want} tensors (W_ih, W_hh of each "
                                       "layer and direction, then their biases)",
                                       f"{len(weight_shapes)}"))
    rows = GATES[mode] * hidden
    for k, shape in enumerate(weight_shapes):
        if list(shape[:1]) not in ([rows], [-1]):
            raise InvalidArgument(expected(op, f"WeightList[{k}]", f"{rows} rows ({GATES[mode]}"
                                           f" gates of {hidden})", f"shape {list(shape)}"))
    states = 2 if mode == "LSTM" else 1
    if state_count != states:
        raise InvalidArgument(expected(op, "PreState", f"{states} tensor(s) for {mode}",
                                       f"{state_count}"))
    return directions


def _infer(ctx):
    attrs = ctx.attrs()
    x = ctx.input_shape("Input")
    directions = _check("rnn", attrs, x, ctx.input_shapes("WeightList"),
                        len(ctx.op.inputs.get("PreState", [])))
    dtype = ctx.input_dtype("Input")
    ctx.set_output("Out", [x[0], x[1], directions * attrs["hidden_size"]], dtype)
    ctx.set_outputs("State", ctx.input_shapes("PreState"), dtype)
    ctx.set_output("Reserve", [0], dtype)


def _rnn(ctx, x, pre_state, weights, sequence_length):
    xp, attrs = ctx.xp, ctx.attrs
    mode, layers = attrs["mode"], attrs["num_layers"]
    directions = _check("rnn", attrs, x.shape, [w.shape for w in weights], len(pre_state))
    if not attrs["is_test"] and attrs["dropout_prob"] > 0 and layers > 1:
        raise Unimplemented(expected("rnn", "dropout between layers", "is_test or "
                                     "dropout_prob 0 (training dropout is not implemented)",
                                     f"dropout_prob {attrs['dropout_prob']}"))
    steps, batch = x.shape[:2]
    mask = None
    if sequence_length is not None:  # [T, N, 1]: step t is inside sequence n
        lengths = xp.asarray(to_host(sequence_length).astype(np.int64))
        mask = (xp.arange(steps)[:, None] < lengths[None, :])[:, :, None]
    count = layers * directions
    matrices, biases = weights[:2 * count], weights[2 * count:]
    h0 = pre_state[0]
    c0 = pre_state[1] if mode == "LSTM" else None
    hs, cs, inputs = [], [], x
    for layer in range(layers):
        outs = []
        for direction in range(directions):
            k = layer * directions + direction
            w_ih, w_hh = matrices[2 * k], matrices[2 * k + 1]
            b_ih, b_hh = biases[2 * k], biases[2 * k + 1]
            x_gates = inputs @ w_ih.T + b_ih
            h, c = h0[k], (c0[k] if c0 is not None else None)
            out = xp.zeros((steps, batch, h.shape[-1]), dtype=x.dtype)
            for t in (range(steps) if direction == 0 else reversed(range(steps))):
                new_h, new_c = cell(xp, mode, x_gates[t], h, c, w_hh, b_hh)
                if mask is not None:
                    new_h = xp.where(mask[t], new_h, h)
                    if new_c is not None:
                        new_c = xp.where(mask[t], new_c, c)
                    out[t] = xp.where(mask[t], new_h, 0)
                else:
                    out[t] = new_h
                h, c = new_h, new_c
            outs.append(out)
            hs.append(h)
            cs.append(c)
        inputs = outs[0] if directions == 1 else xp.concatenate(outs, axis=-1)
    state = [xp.stack(hs).astype(x.dtype)]
    if mode == "LSTM":
        state.append(xp.stack(cs).astype(x.dtype))
    return inputs.astype(x.dtype), None, None, state


def_op("rnn", inputs=["Input", "PreState[]", "WeightList[]", "SequenceLength?"],
       outputs=["Out", "DropoutState?", "Reserve!?", "State[]"],
       attrs={"dropout_prob": ("float", 0.0), "is_bidirec": ("bool", False),
              "input_size": ("int", 10), "hidden_size": ("int", 100),
              "num_layers": ("int", 1), "mode": ("string", "RNN_TANH"), "seed": ("int", 0),
              "is_test": ("bool", False)},
       infer_shape=_infer, kernel=_rnn, host_reads="SequenceLength: the lengths mask the steps",
       doc="Out [T, N, D*H] and State (h, and c for LSTM) [L*D, N, H] of num_layers "
           "recurrent layers (D = 2 when is_bidirec) of mode LSTM, GRU, RNN_TANH or "
           "RNN_RELU over Input [T, N, I] from PreState; see the module docstring for the "
           "weights' order and the cell formulas. No gradient (an inference op here).")
