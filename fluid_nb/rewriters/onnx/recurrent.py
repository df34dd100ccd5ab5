"""Paddle 2.x's ``rnn`` op (``paddle.nn.LSTM``, ``GRU``, ``SimpleRNN``) as ONNX's LSTM, GRU
and RNN nodes, one per layer (both directions in one node), the layers chained.

Both sides are time-major ([T, N, ...]); what differs is the weights' layout. Paddle's gates
are LSTM (i, f, g, o), GRU (r, z, n); ONNX's LSTM (i, o, f, c), GRU (z, r, h), so the gate
blocks of W_ih, W_hh and the biases are reordered. Paddle's GRU applies the reset gate to
h W_hn + b_hn, ONNX's with ``linear_before_reset=1``. W = [W_fw, W_bw] stacked by
direction, B = [b_ih, b_hh] per direction. SequenceLength is ONNX's ``sequence_lens``:
both zero a sequence's outputs past its end, keep its last state, and run the backward
direction from its own last step (checked against the executor's kernel,
:mod:`fluid_nb.ops.rnn_v2`).
"""
import numpy as np

from .converters import NotConvertible, _in, _out, converter

#: ONNX's gate order as indices into Paddle's gate blocks, and the node type
_LAYOUT = {"LSTM": ("LSTM", [0, 3, 1, 2]), "GRU": ("GRU", [1, 0, 2]),
           "RNN_TANH": ("RNN", [0]), "RNN_RELU": ("RNN", [0])}


def _reordered(array, order):
    """``array``'s gate blocks (equal parts along axis 0) in ``order``."""
    blocks = np.split(array, len(order), axis=0)
    return np.concatenate([blocks[i] for i in order], axis=0)


class _Weights:
    """The ONNX W, R and B of one layer: constants when the weights are parameters, else
    nodes that reorder and stack the values the graph reads (weights fed as inputs)."""

    def __init__(self, ctx, names, count, order):
        self.ctx, self.order, self.count = ctx, order, count
        self.names = names
        self.constant = all(getattr(ctx.block._find_var_recursive(n), "persistable", False)
                            for n in names)
        self.values = [ctx.param(n) for n in names] if self.constant else None

    def _gates(self, k):
        if self.constant:
            return _reordered(self.values[k], self.order)
        ctx, parts = self.ctx, [self.ctx.tmp("gate") for _ in self.order]
        # (equal parts: opset 18 asks for their number)
        equal = {"num_outputs": len(parts)} if ctx.opset >= 18 else {}
        ctx.node("Split", [self.names[k]], parts, axis=0, **equal)
        out = ctx.tmp("gates")
        ctx.node("Concat", [parts[i] for i in self.order], [out], axis=0)
        return out

    def _stacked(self, items, hint):
        if self.constant:
            return self.ctx.const(np.stack(items), hint)
        ctx, rows = self.ctx, []
        for item in items:
            row = ctx.tmp(hint)
            ctx.node("Unsqueeze", [item, ctx.const(np.array([0], "int64"), "axes")], [row])
            rows.append(row)
        if len(rows) == 1:
            return rows[0]
        out = ctx.tmp(hint)
        ctx.node("Concat", rows, [out], axis=0)
        return out

    def layer(self, ks):
        """(W, R, B) of the directions ``ks`` (indices into the layers' weight pairs)."""
        bias = 2 * self.count
        w = self._stacked([self._gates(2 * k) for k in ks], "W")
        r = self._stacked([self._gates(2 * k + 1) for k in ks], "R")
        biases = []
        for k in ks:
            ih, hh = self._gates(bias + 2 * k), self._gates(bias + 2 * k + 1)
            if self.constant:
                biases.append(np.concatenate([ih, hh]))
            else:
                both = self.ctx.tmp("bias")
                self.ctx.node("Concat", [ih, hh], [both], axis=0)
                biases.append(both)
        return w, r, self._stacked(biases, "B")


def _slice_rows(ctx, name, begin, end):
    out = ctx.tmp("state")
    ctx.node("Slice", [name, ctx.const(np.array([begin], "int64"), "begin"),
                       ctx.const(np.array([end], "int64"), "end"),
                       ctx.const(np.array([0], "int64"), "axis")], [out])
    return out


@converter("rnn")
def _rnn(op, ctx):
    a = op.attrs
    mode = a.get("mode", "RNN_TANH")
    if mode not in _LAYOUT:
        raise NotConvertible(f"mode {mode!r}")
    if not a.get("is_test", False) and a.get("dropout_prob", 0.0) > 0 and \
            a.get("num_layers", 1) > 1:
        raise NotConvertible("dropout between layers (a training rnn)")
    node_type, order = _LAYOUT[mode]
    layers, hidden = int(a["num_layers"]), int(a["hidden_size"])
    directions = 2 if a.get("is_bidirec", False) else 1
    count = layers * directions
    names = list(op.inputs.get("WeightList", []))
    if len(names) != 4 * count:
        raise NotConvertible(f"{len(names)} weights for {layers} layer(s) of {directions} "
                             f"direction(s) ({4 * count} expected)")
    weights = _Weights(ctx, names, count, order)
    pre = list(op.inputs.get("PreState", []))
    states = list(op.outputs.get("State", []))
    lengths = None
    if op.inputs.get("SequenceLength"):
        lengths = ctx.tmp("lengths")
        ctx.node("Cast", [_in(op, "SequenceLength")], [lengths],
                 to=ctx.onnx.TensorProto.INT32)
    attrs = {"hidden_size": hidden, "direction": "bidirectional" if directions == 2
             else "forward"}
    if node_type == "GRU":
        attrs["linear_before_reset"] = 1
    if node_type == "RNN":
        attrs["activations"] = ["Tanh" if mode == "RNN_TANH" else "Relu"] * directions
    x, finals = _in(op, "Input"), [[] for _ in pre]
    for layer in range(layers):
        ks = range(layer * directions, (layer + 1) * directions)
        w, r, b = weights.layer(ks)
        begin, end = layer * directions, (layer + 1) * directions
        initial = [_slice_rows(ctx, p, begin, end) if layers > 1 else p for p in pre]
        inputs = [x, w, r, b, lengths or ""] + initial
        y, outs = ctx.tmp("y"), [ctx.tmp("final") for _ in pre]
        ctx.node(node_type, inputs, [y] + outs, **attrs)
        for final, out in zip(finals, outs):
            final.append(out)
        # [T, D, N, H] -> [T, N, D * H]
        moved = ctx.tmp("moved")
        ctx.node("Transpose", [y], [moved], perm=[0, 2, 1, 3])
        x = _out(op, "Out") if layer == layers - 1 else ctx.tmp("layer_out")
        ctx.node("Reshape", [moved, ctx.const(np.array([0, 0, -1], "int64"), "shape")], [x])
    for state, parts in zip(states, finals):
        if len(parts) == 1:
            ctx.node("Identity", parts, [state])
        else:
            ctx.node("Concat", parts, [state], axis=0)
