"""lstmp and cudnn_lstm against plain NumPy loops (one sequence, one row, one step at a
time), with float64 finite-difference gradients for every float input."""
import numpy as np
import pytest

from fluid_nb.errors import InvalidArgument, Unimplemented
from fluid_nb.ops.rnn_lstm import weight_layout, weight_size

from .op_test import OpCase, check_output, table_tests
from .test_rnn import ACT, sequences

rng = np.random.RandomState(21)

LOD = [[0, 3, 4, 6]]           # lengths 3, 1, 2: reordered by length
LOD_EMPTY = [[0, 2, 2, 3]]     # an empty sequence in the middle


def r(*shape, scale=0.5):
    return (rng.uniform(-1, 1, shape) * scale).astype("float32")


# --- lstmp ----------------------------------------------------------------------------------
def lstmp_ref(lod):
    def ref(i, a):
        x, w, proj, b = i["Input"], i["Weight"], i["ProjWeight"], i["Bias"].reshape(-1)
        d, p = proj.shape
        gate = ACT[a.get("gate_activation", "sigmoid")]
        cell_act = ACT[a.get("cell_activation", "tanh")]
        cand_act = ACT[a.get("candidate_activation", "tanh")]
        proj_act = ACT[a.get("proj_activation", "tanh")]
        cell_clip, proj_clip = a.get("cell_clip", 0.0), a.get("proj_clip", 0.0)
        peep = a.get("use_peepholes", True)
        w_ic, w_fc, w_oc = (b[4 * d:5 * d], b[5 * d:6 * d], b[6 * d:]) if peep else (0, 0, 0)
        projection, cell = np.zeros((x.shape[0], p)), np.zeros((x.shape[0], d))
        for k, rows in sequences(lod, a.get("is_reverse", False)):
            r_prev = i["H0"][k] if "H0" in i else np.zeros(p)  # H0 is r_0 itself
            c = i["C0"][k] if "C0" in i else np.zeros(d)
            for row in rows:
                z = x[row] + r_prev @ w + b[:4 * d]
                cand = cand_act(z[:d])
                ig = gate(z[d:2 * d] + w_ic * c)
                fg = gate(z[2 * d:3 * d] + w_fc * c)
                c = fg * c + ig * cand
                if cell_clip > 0:
                    c = np.clip(c, -cell_clip, cell_clip)
                og = gate(z[3 * d:] + w_oc * c)
                h = og * cell_act(c)
                r_prev = proj_act(h @ proj)
                if proj_clip > 0:
                    r_prev = np.clip(r_prev, -proj_clip, proj_clip)
                projection[row], cell[row] = r_prev, c
        dtype = x.dtype
        return {"Projection": projection.astype(dtype), "Cell": cell.astype(dtype)}
    return ref


def lstmp_case(lod, d, p, name, peep=True, h0=False, c0=False, grad=(), scale=0.5, **attrs):
    t, n = lod[-1][-1], len(lod[-1]) - 1
    inputs = {"Input": r(t, 4 * d, scale=scale), "Weight": r(p, 4 * d, scale=scale),
              "ProjWeight": r(d, p, scale=scale), "Bias": r(1, (7 if peep else 4) * d)}
    if h0:
        inputs["H0"] = r(n, p)
    if c0:
        inputs["C0"] = r(n, d)
    attrs["use_peepholes"] = peep
    return OpCase("lstmp", inputs, attrs=attrs, ref=lstmp_ref(lod), lod={"Input": lod},
                  grad=list(grad), grad_outputs=["Projection"], name=name)


ALL_LSTMP = ["Input", "Weight", "ProjWeight", "Bias"]

# --- cudnn_lstm -----------------------------------------------------------------------------
def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def cudnn_lstm_ref(i, a):
    x = i["Input"].astype("float64")
    hidden, layers = a["hidden_size"], a["num_layers"]
    dirs = 2 if a.get("is_bidirec") else 1
    flat, at, pieces = i["W"].astype("float64"), 0, {}
    for layer, direction, name, shape in weight_layout(x.shape[2], hidden, layers, dirs == 2):
        size = int(np.prod(shape))
        pieces[layer, direction, name] = flat[at:at + size].reshape(shape)
        at += size
    last_h, last_c = np.zeros(i["InitH"].shape), np.zeros(i["InitC"].shape)
    layer_in = x
    for layer in range(layers):
        outs = []
        for direction in range(dirs):
            k = layer * dirs + direction
            p = {n: pieces[layer, direction, n] for n in ("w_ih", "w_hh", "b_ih", "b_hh")}
            h, c = i["InitH"][k].astype("float64"), i["InitC"][k].astype("float64")
            out = np.zeros(layer_in.shape[:2] + (hidden,))
            steps = range(len(x))[::-1] if direction else range(len(x))
            for t in steps:
                for b in range(x.shape[1]):
                    z = p["w_ih"] @ layer_in[t, b] + p["b_ih"] + p["w_hh"] @ h[b] + p["b_hh"]
                    ig, fg = sigmoid(z[:hidden]), sigmoid(z[hidden:2 * hidden])
                    g, og = np.tanh(z[2 * hidden:3 * hidden]), sigmoid(z[3 * hidden:])
                    c[b] = fg * c[b] + ig * g
                    h[b] = og * np.tanh(c[b])
                    out[t, b] = h[b]
            last_h[k], last_c[k] = h, c
            outs.append(out)
        layer_in = np.concatenate(outs, axis=2)
    dtype = i["Input"].dtype
    return {"Out": layer_in.astype(dtype), "LastH": last_h.astype(dtype),
            "LastC": last_c.astype(dtype)}


def cudnn_case(name, seq=3, batch=2, size=3, hidden=2, layers=1, bidirec=False, grad=(),
               dtype="float32"):
    dirs = 2 if bidirec else 1
    inputs = {"Input": r(seq, batch, size).astype(dtype),
              "InitH": r(layers * dirs, batch, hidden).astype(dtype),
              "InitC": r(layers * dirs, batch, hidden).astype(dtype),
              "W": r(weight_size(size, hidden, layers, bidirec), scale=0.8).astype(dtype)}
    attrs = {"input_size": size, "hidden_size": hidden, "num_layers": layers,
             "is_bidirec": bidirec, "is_test": True}
    return OpCase("cudnn_lstm", inputs, attrs=attrs, ref=cudnn_lstm_ref, grad=list(grad),
                  grad_outputs=["Out", "LastH", "LastC"], name=name,
                  outputs={"Out": 1, "LastH": 1, "LastC": 1, "Reserve": 1, "StateOut": 1})


CASES = [
    lstmp_case(LOD, 3, 2, "peepholes"),
    lstmp_case(LOD, 3, 2, "no_peepholes_reverse_h0_c0", peep=False, is_reverse=True,
               h0=True, c0=True),
    lstmp_case(LOD, 2, 3, "clips_identity_projection", scale=2.0, cell_clip=0.6,
               proj_clip=0.4, proj_activation="identity"),
    lstmp_case(LOD_EMPTY, 2, 2, "empty_sequence", h0=True, c0=True),
    lstmp_case(LOD, 2, 2, "grad_peepholes", grad=ALL_LSTMP),
    lstmp_case(LOD, 2, 2, "grad_reverse_h0_c0", is_reverse=True, h0=True, c0=True,
               grad=ALL_LSTMP + ["H0", "C0"]),
    lstmp_case(LOD, 2, 1, "grad_no_peepholes_relu_projection", peep=False,
               proj_activation="relu", grad=ALL_LSTMP),
    cudnn_case("one_layer"),
    cudnn_case("two_layers_bidirectional", layers=2, bidirec=True),
    cudnn_case("grad_one_layer", grad=["Input", "InitH", "InitC", "W"]),
    cudnn_case("grad_two_layers_bidirectional", seq=2, layers=2, bidirec=True, hidden=2,
               size=2, grad=["Input", "InitH", "InitC", "W"]),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


def test_lstmp_clip_bounds_hold():
    case = lstmp_case(LOD, 2, 3, "bounds", scale=3.0, cell_clip=0.3, proj_clip=0.2,
                      proj_activation="identity")
    out = check_output(case)
    assert np.abs(np.asarray(out["Cell"])).max() <= 0.3 + 1e-7
    assert np.abs(np.asarray(out["Projection"])).max() <= 0.2 + 1e-7
    assert out["Projection"].lod() == LOD


def test_lstmp_weight_must_read_the_projection():
    case = lstmp_case(LOD, 3, 2, "bad_weight")
    case.inputs["Weight"] = r(3, 12)  # [D, 4D] as lstm's, not [P, 4D]
    case.ref = lambda i, a: {}
    with pytest.raises(InvalidArgument, match="Weight"):
        check_output(case)


def test_cudnn_lstm_dropout_applies_between_layers_only_in_training():
    case = cudnn_case("dropout", layers=2)
    case.attrs.update(is_test=False, dropout_prob=0.5, seed=7)
    out = check_output(OpCase(case.op, case.inputs, case.attrs, ref=lambda i, a: {},
                              outputs=case.outputs))
    masks = np.asarray(out["Reserve"])
    assert masks.shape == (1, 3, 2, 2) and set(np.unique(masks)) <= {0.0, 2.0}
    # one layer has no layer after it: no dropout at all
    single = cudnn_case("dropout_one_layer")
    single.attrs.update(is_test=False, dropout_prob=0.5, seed=7)
    check_output(single)


def test_cudnn_lstm_refuses_a_weight_of_the_wrong_size():
    case = cudnn_case("bad_w")
    case.inputs["W"] = r(10)
    case.ref = lambda i, a: {}
    with pytest.raises(InvalidArgument, match="W"):
        check_output(case)


def test_cudnn_lstm_refuses_sequence_lengths():
    case = cudnn_case("lengths")
    case.inputs["SequenceLength"] = np.array([3, 2], "int32")
    case.ref = lambda i, a: {}
    with pytest.raises(Unimplemented, match="SequenceLength"):
        check_output(case)
