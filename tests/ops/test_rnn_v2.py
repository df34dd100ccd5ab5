"""Paddle 2.x's rnn op (LSTM, GRU, RNN_TANH, RNN_RELU; layers, directions, sequence
lengths) against a NumPy reference that runs one sequence at a time, one time step at a
time, each direction over the sequence's own steps only."""
import numpy as np
import pytest

from .op_test import OpCase, assert_build_fails, table_tests

rng = np.random.RandomState(7)
GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def r(*shape, scale=0.5):
    return (rng.uniform(-1, 1, shape) * scale).astype("float32")


def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def step(mode, x, h, c, w_ih, w_hh, b_ih, b_hh):
    """One cell step on one sample (vectors), written gate by gate."""
    hidden = h.shape[0]
    xg, hg = w_ih @ x + b_ih, w_hh @ h + b_hh
    gate = [slice(k * hidden, (k + 1) * hidden) for k in range(GATES[mode])]
    if mode == "LSTM":
        i, f, g, o = (sigmoid(xg[s] + hg[s]) if k != 2 else np.tanh(xg[s] + hg[s])
                      for k, s in enumerate(gate))
        c = f * c + i * g
        return o * np.tanh(c), c
    if mode == "GRU":
        reset, update = sigmoid(xg[gate[0]] + hg[gate[0]]), sigmoid(xg[gate[1]] + hg[gate[1]])
        candidate = np.tanh(xg[gate[2]] + reset * hg[gate[2]])
        return update * h + (1 - update) * candidate, None
    pre = xg + hg
    return (np.tanh(pre) if mode == "RNN_TANH" else np.maximum(pre, 0)), None


def rnn_ref(mode, layers, directions, lengths):
    def ref(inputs, attrs):
        x = inputs["Input"].astype("float64")
        steps, batch, _ = x.shape
        weights = [w.astype("float64") for w in inputs["WeightList"]]
        count = layers * directions
        h0 = inputs["PreState"][0].astype("float64")
        c0 = inputs["PreState"][1].astype("float64") if mode == "LSTM" else None
        lens = lengths if lengths is not None else [steps] * batch
        hidden = h0.shape[-1]
        h_final, c_final = np.zeros_like(h0), np.zeros_like(h0)
        layer_in = x
        for layer in range(layers):
            out = np.zeros((steps, batch, directions * hidden))
            for d in range(directions):
                k = layer * directions + d
                w_ih, w_hh = weights[2 * k], weights[2 * k + 1]
                b_ih, b_hh = weights[2 * count + 2 * k], weights[2 * count + 2 * k + 1]
                for n in range(batch):
                    h, c = h0[k, n], (c0[k, n] if c0 is not None else None)
                    order = range(lens[n]) if d == 0 else range(lens[n] - 1, -1, -1)
                    for t in order:
                        h, c = step(mode, layer_in[t, n], h, c, w_ih, w_hh, b_ih, b_hh)
                        out[t, n, d * hidden:(d + 1) * hidden] = h
                    h_final[k, n] = h
                    if c is not None:
                        c_final[k, n] = c
            layer_in = out
        state = [h_final.astype("float32")]
        if mode == "LSTM":
            state.append(c_final.astype("float32"))
        return {"Out": layer_in.astype("float32"), "State": state}
    return ref


def rnn_case(name, mode, layers=1, bidirec=False, lengths=None, steps=4, batch=3, size=3,
             hidden=2):
    directions = 2 if bidirec else 1
    weights, biases = [], []
    for layer in range(layers):
        width = size if layer == 0 else directions * hidden
        for _ in range(directions):
            weights += [r(GATES[mode] * hidden, width), r(GATES[mode] * hidden, hidden)]
            biases += [r(GATES[mode] * hidden), r(GATES[mode] * hidden)]
    states = [r(layers * directions, batch, hidden)
              for _ in range(2 if mode == "LSTM" else 1)]
    inputs = {"Input": r(steps, batch, size, scale=1.0), "PreState": states,
              "WeightList": weights + biases}
    if lengths is not None:
        inputs["SequenceLength"] = np.array(lengths, "int64")
    return OpCase("rnn", inputs,
                  attrs={"mode": mode, "num_layers": layers, "is_bidirec": bidirec,
                         "hidden_size": hidden, "input_size": size, "is_test": True},
                  ref=rnn_ref(mode, layers, directions, lengths),
                  outputs={"Out": 1, "State": len(states)}, name=name)


CASES = [
    rnn_case("lstm", "LSTM"),
    rnn_case("lstm_two_layers_bidirectional", "LSTM", layers=2, bidirec=True),
    rnn_case("lstm_lengths_bidirectional", "LSTM", bidirec=True, lengths=[4, 1, 3]),
    rnn_case("gru", "GRU"),
    rnn_case("gru_two_layers_bidirectional_lengths", "GRU", layers=2, bidirec=True,
             lengths=[2, 4, 3]),
    rnn_case("rnn_tanh_two_layers", "RNN_TANH", layers=2),
    rnn_case("rnn_relu_bidirectional", "RNN_RELU", bidirec=True, lengths=[3, 4, 1]),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


@pytest.mark.parametrize("change, words", [
    (lambda case: case.attrs.update(mode="LSTMP"), "mode"),
    (lambda case: case.inputs["WeightList"].pop(), "WeightList"),
    (lambda case: case.inputs["PreState"].pop(), "PreState"),
    (lambda case: case.inputs.update(Input=case.inputs["Input"][0]), "Input"),
])
def test_a_wrong_rnn_names_what_is_wrong(change, words):
    case = rnn_case("bad", "LSTM")
    change(case)
    assert_build_fails("rnn", case.inputs, case.attrs, words)
