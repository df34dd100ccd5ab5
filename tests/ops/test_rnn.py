"""Recurrent ops (lstm, gru, gru_unit, lstm_unit) against plain per-sequence NumPy loops, with
float64 finite-difference gradients."""
import numpy as np
import pytest

import fluid_nb as fluid
import fluid_nb.ops.rnn  # noqa: F401  (registers the family until _families lists it)
from fluid_nb.errors import InvalidArgument

from .op_test import OpCase, build, check_output, table_tests

rng = np.random.RandomState(0)

LOD_A = [[0, 5, 8, 10, 14]]          # lengths 5, 3, 2, 4
LOD_DOC = [[0, 10, 18, 23, 30]]      # the design documents' lengths 10, 8, 5, 7
LOD_TINY = [[0, 1, 4, 6]]            # lengths 1, 3, 2: reordered by length
LOD_EMPTY = [[0, 0, 2, 2, 3]]       # lengths 0, 2, 0, 1: two empty sequences


def r(*shape, scale=0.5):
    return (rng.uniform(-1, 1, shape) * scale).astype("float32")


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


ACT = {"sigmoid": sigmoid, "tanh": np.tanh, "relu": lambda v: np.maximum(v, 0),
       "identity": lambda v: v}
UNIT_ACT = {0: "identity", 1: "sigmoid", 2: "tanh", 3: "relu"}


def sequences(lod, reverse):
    offsets = lod[-1]
    for k, (s, e) in enumerate(zip(offsets, offsets[1:])):
        yield k, (range(e - 1, s - 1, -1) if reverse else range(s, e))


# --- references: one sequence at a time, one row at a time ---------------------------------------
def lstm_ref(lod):
    def ref(i, a):
        x, w, b = i["Input"], i["Weight"], i["Bias"].reshape(-1)
        d = w.shape[0]
        gate = ACT[a.get("gate_activation", "sigmoid")]
        cell_act = ACT[a.get("cell_activation", "tanh")]
        cand_act = ACT[a.get("candidate_activation", "tanh")]
        peep = a.get("use_peepholes", True)
        w_ic, w_fc, w_oc = (b[4 * d:5 * d], b[5 * d:6 * d], b[6 * d:]) if peep else (0, 0, 0)
        hidden, cell = np.zeros((x.shape[0], d)), np.zeros((x.shape[0], d))
        for k, rows in sequences(lod, a.get("is_reverse", False)):
            h = i["H0"][k] if "H0" in i else np.zeros(d)
            c = i["C0"][k] if "C0" in i else np.zeros(d)
            for row in rows:
                z = x[row] + h @ w + b[:4 * d]
                cand = cand_act(z[:d])
                ig = gate(z[d:2 * d] + w_ic * c)
                fg = gate(z[2 * d:3 * d] + w_fc * c)
                c = fg * c + ig * cand
                og = gate(z[3 * d:] + w_oc * c)
                h = og * cell_act(c)
                hidden[row], cell[row] = h, c
        dtype = x.dtype
        return {"Hidden": hidden.astype(dtype), "Cell": cell.astype(dtype)}
    return ref


def gru_cell(x_row, h, w, b, act, gate, origin):
    d = w.shape[0]
    flat = w.reshape(-1)  # Paddle: first 2*D*D values are W_ur [D, 2D], the rest W_c [D, D]
    w_ur, w_c = flat[:2 * d * d].reshape(d, 2 * d), flat[2 * d * d:].reshape(d, d)
    z = x_row + b
    u = gate(z[:d] + h @ w_ur[:, :d])
    rg = gate(z[d:2 * d] + h @ w_ur[:, d:])
    c = act(z[2 * d:] + (rg * h) @ w_c)
    return u * h + (1 - u) * c if origin else (1 - u) * h + u * c


def gru_ref(lod):
    def ref(i, a):
        x, w = i["Input"], i["Weight"]
        d = w.shape[0]
        b = i["Bias"].reshape(-1) if "Bias" in i else np.zeros(3 * d)
        act, gate = ACT[a.get("activation", "tanh")], ACT[a.get("gate_activation", "sigmoid")]
        hidden = np.zeros((x.shape[0], d))
        for k, rows in sequences(lod, a.get("is_reverse", False)):
            h = i["H0"][k] if "H0" in i else np.zeros(d)
            for row in rows:
                h = gru_cell(x[row], h, w, b, act, gate, a.get("origin_mode", False))
                hidden[row] = h
        return {"Hidden": hidden.astype(x.dtype)}
    return ref


def gru_unit_ref(i, a):
    x, hp, w = i["Input"], i["HiddenPrev"], i["Weight"]
    d = w.shape[0]
    b = i["Bias"].reshape(-1) if "Bias" in i else np.zeros(3 * d)
    act = ACT[UNIT_ACT[a.get("activation", 2)]]
    gate = ACT[UNIT_ACT[a.get("gate_activation", 1)]]
    out = np.stack([gru_cell(x[n], hp[n], w, b, act, gate, a.get("origin_mode", False))
                    for n in range(x.shape[0])])
    return {"Hidden": out.astype(x.dtype)}


def lstm_unit_ref(i, a):
    x, c_prev = i["X"], i["C_prev"]
    d = c_prev.shape[1]
    ig, fg = sigmoid(x[:, :d]), sigmoid(x[:, d:2 * d] + a.get("forget_bias", 0.0))
    og, g = sigmoid(x[:, 2 * d:3 * d]), np.tanh(x[:, 3 * d:])
    c = fg * c_prev + ig * g
    return {"C": c.astype(x.dtype), "H": (og * np.tanh(c)).astype(x.dtype)}


def lstm_case(lod, d, name, peep=True, h0=False, c0=False, grad=(), **attrs):
    t, n = lod[-1][-1], len(lod[-1]) - 1
    inputs = {"Input": r(t, 4 * d), "Weight": r(d, 4 * d), "Bias": r(1, (7 if peep else 4) * d)}
    if h0:
        inputs["H0"] = r(n, d)
    if c0:
        inputs["C0"] = r(n, d)
    attrs["use_peepholes"] = peep
    return OpCase("lstm", inputs, attrs=attrs, ref=lstm_ref(lod), lod={"Input": lod},
                  grad=list(grad), grad_outputs=["Hidden"], name=name, grad_atol=1e-6)


def gru_case(lod, d, name, bias=True, h0=False, grad=(), **attrs):
    t, n = lod[-1][-1], len(lod[-1]) - 1
    inputs = {"Input": r(t, 3 * d), "Weight": r(d, 3 * d)}
    if bias:
        inputs["Bias"] = r(1, 3 * d)
    if h0:
        inputs["H0"] = r(n, d)
    return OpCase("gru", inputs, attrs=attrs, ref=gru_ref(lod), lod={"Input": lod},
                  grad=list(grad), name=name)


ALL_LSTM = ["Input", "Weight", "Bias"]

CASES = [
    # lstm forward on a small LoD and on the documentation's lengths
    lstm_case(LOD_A, 3, "peepholes"),
    lstm_case(LOD_A, 3, "no_peepholes_reverse", peep=False, is_reverse=True),
    lstm_case(LOD_DOC, 2, "doc_lengths_h0_c0", h0=True, c0=True),
    lstm_case(LOD_DOC, 2, "doc_lengths_reverse_acts", is_reverse=True,
              gate_activation="sigmoid", cell_activation="identity",
              candidate_activation="relu"),
    # lstm gradients on tiny sizes
    lstm_case(LOD_TINY, 2, "grad_peepholes", grad=ALL_LSTM),
    lstm_case(LOD_TINY, 2, "grad_no_peepholes_reverse", peep=False, is_reverse=True,
              grad=ALL_LSTM),
    lstm_case(LOD_TINY, 2, "grad_h0_c0", h0=True, c0=True, grad=ALL_LSTM + ["H0", "C0"]),
    lstm_case(LOD_TINY, 2, "grad_h0_c0_reverse_no_peep", peep=False, h0=True, c0=True,
              is_reverse=True, grad=["Weight", "H0", "C0"]),
    lstm_case(LOD_TINY, 2, "grad_c0_only", c0=True, grad=["Bias", "C0"]),
    # gru forward
    gru_case(LOD_A, 3, "basic"),
    gru_case(LOD_A, 3, "reverse_origin_mode", is_reverse=True, origin_mode=True),
    gru_case(LOD_DOC, 2, "doc_lengths_h0_no_bias", bias=False, h0=True),
    gru_case(LOD_DOC, 2, "doc_lengths_acts", activation="relu", gate_activation="sigmoid",
             is_reverse=True),
    # gru gradients
    gru_case(LOD_TINY, 2, "grad", grad=["Input", "Weight", "Bias"]),
    gru_case(LOD_TINY, 2, "grad_h0_reverse", h0=True, is_reverse=True,
             grad=["Input", "Weight", "Bias", "H0"]),
    gru_case(LOD_TINY, 2, "grad_origin_mode_h0", h0=True, origin_mode=True,
             grad=["Input", "Weight", "H0"]),
    gru_case(LOD_TINY, 2, "grad_no_bias", bias=False, grad=["Input", "Weight"]),
    # empty sequences have no step: skipped, their H0 unread (its gradient 0)
    gru_case(LOD_EMPTY, 2, "empty_sequences_h0", h0=True),
    gru_case(LOD_EMPTY, 2, "grad_empty_sequences_h0_reverse", h0=True, is_reverse=True,
             grad=["Input", "Weight", "Bias", "H0"]),
    lstm_case(LOD_EMPTY, 2, "grad_empty_sequences_h0_c0", h0=True, c0=True,
              grad=ALL_LSTM + ["H0", "C0"]),
    # one step: every weight gradient comes from the initial states alone
    gru_case([[0, 1, 2, 3]], 2, "grad_one_step_h0", h0=True, grad=["Input", "Weight", "H0"]),
    lstm_case([[0, 1, 2]], 2, "grad_one_step_h0_c0", h0=True, c0=True,
              grad=ALL_LSTM + ["H0", "C0"]),
    # gru_unit
    OpCase("gru_unit", {"Input": r(4, 9), "HiddenPrev": r(4, 3), "Weight": r(3, 9),
                        "Bias": r(1, 9)}, ref=gru_unit_ref, name="basic"),
    OpCase("gru_unit", {"Input": r(4, 9), "HiddenPrev": r(4, 3), "Weight": r(3, 9)},
           attrs={"activation": 0, "gate_activation": 1, "origin_mode": True},
           ref=gru_unit_ref, name="identity_origin_no_bias"),
    OpCase("gru_unit", {"Input": r(3, 6), "HiddenPrev": r(3, 2), "Weight": r(2, 6),
                        "Bias": r(1, 6)}, ref=gru_unit_ref,
           grad=["Input", "HiddenPrev", "Weight", "Bias"], grad_outputs=["Hidden"],
           name="grad"),
    OpCase("gru_unit", {"Input": r(3, 6), "HiddenPrev": r(3, 2), "Weight": r(2, 6)},
           attrs={"origin_mode": True, "activation": 2, "gate_activation": 2},
           ref=gru_unit_ref, grad=["Input", "HiddenPrev", "Weight"], grad_outputs=["Hidden"],
           name="grad_origin_tanh_gates"),
    # lstm_unit
    OpCase("lstm_unit", {"X": r(4, 12, scale=1.0), "C_prev": r(4, 3)}, ref=lstm_unit_ref,
           name="basic"),
    OpCase("lstm_unit", {"X": r(3, 8, scale=1.0), "C_prev": r(3, 2)},
           attrs={"forget_bias": 1.0}, ref=lstm_unit_ref, grad=["X", "C_prev"],
           name="grad_forget_bias"),
    OpCase("lstm_unit", {"X": r(3, 8, scale=1.0), "C_prev": r(3, 2)}, ref=lstm_unit_ref,
           grad=["X", "C_prev"], grad_outputs=["H"], name="grad_h_only"),
]


(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


# --- batch layout, as the design document's rank table says ---------------------------------
def test_lstm_batch_intermediates_follow_length_order():
    case = lstm_case(LOD_DOC, 2, "layout")
    out = check_output(case)
    cell = np.asarray(out["Cell"])
    pre_act = np.asarray(out["BatchCellPreAct"])
    offsets, lengths = LOD_DOC[0], [10, 8, 5, 7]
    order = [0, 1, 3, 2]  # sorted 10, 8, 7, 5
    rows = [offsets[s] + t for t in range(10) for s in order if lengths[s] > t]
    np.testing.assert_allclose(pre_act, np.tanh(cell[rows]), rtol=1e-5, atol=1e-6)
    assert out["Hidden"].lod() == LOD_DOC and out["Cell"].lod() == LOD_DOC


def test_gru_batch_hidden_follows_length_order_reversed():
    case = gru_case(LOD_DOC, 2, "layout", is_reverse=True)
    out = check_output(case)
    hidden, batch = np.asarray(out["Hidden"]), np.asarray(out["BatchHidden"])
    offsets, lengths = LOD_DOC[0], [10, 8, 5, 7]
    rows = [offsets[s] + lengths[s] - 1 - t for t in range(10) for s in [0, 1, 3, 2]
            if lengths[s] > t]
    np.testing.assert_allclose(batch, hidden[rows], rtol=1e-6)
    assert out["Hidden"].lod() == LOD_DOC


# --- errors ------------------------------------------------------------------------------------
def _fails(case, *words):
    with pytest.raises(InvalidArgument) as info:
        build(case)
    message = str(info.value)
    assert message.startswith(case.op), message
    for word in words:
        assert word in message, message


def test_lstm_bias_width_must_match_peepholes():
    case = lstm_case(LOD_A, 3, "bad_bias", peep=False)
    case.attrs["use_peepholes"] = True
    _fails(case, "Bias", "[1, 21]")


def test_lstm_weight_shape_checked():
    case = lstm_case(LOD_A, 3, "bad_weight")
    case.inputs["Weight"] = r(3, 8)
    _fails(case, "Weight")


def test_lstm_h0_needs_c0():
    case = lstm_case(LOD_A, 3, "h0_only", h0=True)
    _fails(case, "C0")


def test_lstm_activation_attr_checked():
    case = lstm_case(LOD_A, 3, "bad_act", gate_activation="softmax")
    _fails(case, "gate_activation")


def test_gru_input_width_checked():
    case = gru_case(LOD_A, 3, "bad_input")
    case.inputs["Input"] = r(14, 8)
    _fails(case, "Input")


def test_gru_unit_activation_code_checked():
    case = OpCase("gru_unit", {"Input": r(2, 6), "HiddenPrev": r(2, 2), "Weight": r(2, 6)},
                  attrs={"activation": 7})
    _fails(case, "activation")


def test_lstm_unit_width_checked():
    _fails(OpCase("lstm_unit", {"X": r(2, 7), "C_prev": r(2, 2)}), "X")


def test_lstm_without_lod_fails_at_run_time():
    case = lstm_case(LOD_A, 3, "no_lod")
    case.lod = {}
    program, op, feed, outputs = build(case)
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(InvalidArgument) as info:
        exe.run(program, feed=feed, fetch_list=outputs["Hidden"], scope=fluid.Scope())
    assert str(info.value).startswith("lstm"), str(info.value)


def test_the_cells_sigmoid_clips_its_input_as_paddles_kernels_do():
    """sigmoid(clip(x, -40, 13)), NaN kept, in the input's float type, bit for bit."""
    from fluid_nb.ops.rnn_units import activate
    for dtype in ("float32", "float64"):
        x = np.array([-1e30, -41.0, -40.0, -3.5, 0.0, 2.25, 13.0, 13.5, 1e30, np.inf, -np.inf,
                      np.nan], dtype=dtype)
        want = 1.0 / (1.0 + np.exp(-np.clip(x, -40.0, 13.0)))
        got = activate(np, "sigmoid", x)
        assert got.dtype == x.dtype and got.tobytes() == want.tobytes()
        assert got[0] == got[1] == got[2] and got[6] == got[7] == got[8]
