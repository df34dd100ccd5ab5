"""fusion_lstm, fusion_gru, fused_embedding_fc_lstm and attention_lstm against the unfused
programs they stand for (mul / lookup_table into lstm or gru; the attention LSTM unrolled
step by step into concat, mul, relu, softmax, matmul and the gate ops), run by fluid_nb on
the same inputs. These ops have no gradient (inference only)."""
import numpy as np
import pytest

from fluid_nb.errors import InvalidArgument
from fluid_nb.ops import registry

from .op_test import OpCase, assert_build_fails, check_output, run_case, table_tests
from .unfused import Unfused

rng = np.random.RandomState(31)

LOD = [[0, 2, 5, 9]]   # lengths 2, 3, 4: the time-step batches reorder them
ONE = [[0, 4]]         # one sequence (Paddle's kernels then skip the batch reordering)
M, D = 3, 2


def r(*shape, scale=0.5):
    return (rng.uniform(-1, 1, shape) * scale).astype("float32")


def _rows(lod):
    return lod[0][-1]


def _seqs(lod):
    return len(lod[0]) - 1


def _lstm_attrs(a):
    return {k: a[k] for k in ("use_peepholes", "is_reverse", "gate_activation",
                              "cell_activation", "candidate_activation") if k in a}


def _states(u, i, ins):
    for slot in ("H0", "C0"):
        if slot in i:
            ins[slot] = u.input(slot.lower(), i[slot])
    return ins


# --- fusion_lstm ----------------------------------------------------------------------------
def fusion_lstm_ref(lod):
    def ref(i, a):
        d4 = i["WeightH"].shape[1]
        u = Unfused({"x": (i["X"], lod), "wx": i["WeightX"], "wh": i["WeightH"],
                     "b": i["Bias"], "b4": i["Bias"].reshape(-1)[:d4]})
        proj = u.out("mul", {"X": "x", "Y": "wx"})
        ins = _states(u, i, {"Input": proj, "Weight": "wh", "Bias": "b"})
        out = u.op("lstm", ins, **_lstm_attrs(a))
        xx = u.out("elementwise_add", {"X": proj, "Y": "b4"})
        h, c, xx = u.run(out["Hidden"], out["Cell"], xx)
        want = {"Hidden": (h, lod), "Cell": (c, lod)}
        if a.get("use_seq", True):
            want["XX"] = xx
        return want
    return ref


def fusion_lstm_case(name, lod=LOD, peepholes=True, states=False, **attrs):
    n, t = _seqs(lod), _rows(lod)
    inputs = {"X": r(t, M), "WeightX": r(M, 4 * D), "WeightH": r(D, 4 * D),
              "Bias": r(1, (7 if peepholes else 4) * D)}
    if states:
        inputs.update(H0=r(n, D), C0=r(n, D))
    outputs = {"Hidden": 1, "Cell": 1, "XX": 1}
    if not attrs.get("use_seq", True):
        outputs.update(BatchedInput=1, BatchedHidden=1, BatchedCell=1)
        if states:
            outputs.update(ReorderedH0=1, ReorderedC0=1)
    return OpCase("fusion_lstm", inputs, attrs={"use_peepholes": peepholes, **attrs},
                  lod={"X": lod}, ref=fusion_lstm_ref(lod), outputs=outputs, name=name)


# --- fused_embedding_fc_lstm ------------------------------------------------------------------
VOCAB = 7


def embedding_lstm_ref(lod):
    def ref(i, a):
        b = i["Bias"].reshape(-1)
        d4 = i["WeightH"].shape[1]
        # the table rows already hold x W_x + the gate biases: only the peepholes remain
        peepholes_only = np.concatenate([np.zeros(d4, b.dtype), b[d4:]]).reshape(1, -1)
        u = Unfused({"ids": (i["Ids"], lod), "emb": i["Embeddings"], "wh": i["WeightH"],
                     "b": peepholes_only})
        x = u.out("lookup_table", {"W": "emb", "Ids": "ids"})
        ins = _states(u, i, {"Input": x, "Weight": "wh", "Bias": "b"})
        out = u.op("lstm", ins, **_lstm_attrs(a))
        h, c, x = u.run(out["Hidden"], out["Cell"], x)
        return {"Hidden": (h, lod), "Cell": (c, lod), "XX": x}
    return ref


def embedding_lstm_case(name, lod=LOD, peepholes=True, states=False, **attrs):
    n, t = _seqs(lod), _rows(lod)
    inputs = {"Ids": rng.randint(0, VOCAB, (t, 1)).astype("int64"),
              "Embeddings": r(VOCAB, 4 * D), "WeightH": r(D, 4 * D),
              "Bias": r(1, (7 if peepholes else 4) * D)}
    if states:
        inputs.update(H0=r(n, D), C0=r(n, D))
    return OpCase("fused_embedding_fc_lstm", inputs, attrs={"use_peepholes": peepholes, **attrs},
                  lod={"Ids": lod}, ref=embedding_lstm_ref(lod),
                  outputs={"Hidden": 1, "Cell": 1, "XX": 1}, name=name)


# --- fusion_gru -------------------------------------------------------------------------------
def fusion_gru_ref(lod):
    def ref(i, a):
        feeds = {"x": (i["X"], lod), "wx": i["WeightX"], "wh": i["WeightH"]}
        u = Unfused(feeds)
        xx = u.out("mul", {"X": "x", "Y": "wx"})
        if "Bias" in i:
            xx = u.out("elementwise_add", {"X": xx, "Y": u.input("b", i["Bias"].reshape(-1))})
        ins = {"Input": xx, "Weight": "wh"}
        if "H0" in i:
            ins["H0"] = u.input("h0", i["H0"])
        attrs = {k: a[k] for k in ("activation", "gate_activation", "is_reverse") if k in a}
        h = u.op("gru", ins, ["Hidden"], **attrs)["Hidden"]
        h, xx = u.run(h, xx)
        return {"Hidden": (h, lod), "XX": xx} if a.get("use_seq", True) else \
            {"Hidden": (h, lod)}
    return ref


def fusion_gru_case(name, lod=LOD, bias=True, h0=True, **attrs):
    inputs = {"X": r(_rows(lod), M), "WeightX": r(M, 3 * D), "WeightH": r(D, 3 * D)}
    if bias:
        inputs["Bias"] = r(1, 3 * D)
    if h0:
        inputs["H0"] = r(_seqs(lod), D)
    outputs = {"Hidden": 1, "XX": 1}
    if not attrs.get("use_seq", True):
        outputs.update(BatchedInput=1, BatchedOut=1, **({"ReorderedH0": 1} if h0 else {}))
    return OpCase("fusion_gru", inputs, attrs=attrs, lod={"X": lod}, ref=fusion_gru_ref(lod),
                  outputs=outputs, name=name)


# --- attention_lstm ---------------------------------------------------------------------------
_ACT_OPS = {"sigmoid": "sigmoid", "tanh": "tanh", "relu": "relu"}


def _act(u, name, x):
    if name == "identity":
        return x
    return u.out(_ACT_OPS[name], {"X": x})


def attention_ref(lod):
    """Each sequence and step unrolled into the ops of the attention and of one LSTM step."""
    def ref(i, a):
        x, w, b = i["X"], i["LSTMWeight"], i["LSTMBias"].reshape(-1)
        d = w.shape[1] // 4
        u = Unfused({"aw": i["AttentionWeight"], "wh": w[:d], "wx": w[d:], "b": b})
        gate, cell_act, cand = (a.get(k, dflt) for k, dflt in (
            ("gate_activation", "sigmoid"), ("cell_activation", "tanh"),
            ("candidate_activation", "tanh")))
        hidden, cell = [], []
        for s, (start, end) in enumerate(zip(lod[0][:-1], lod[0][1:])):
            xs = u.input(f"x{s}", x[start:end])
            c_prev = u.input(f"c0_{s}", i["C0"][s:s + 1])
            h_prev = u.input(f"h0_{s}", i["H0"][s:s + 1]) if "H0" in i else None
            for _ in range(end - start):
                expanded = u.out("expand", {"X": c_prev}, expand_times=[end - start, 1])
                both = u.out("concat", {"X": [xs, expanded]}, axis=1)
                score = u.out("mul", {"X": both, "Y": "aw"})
                if "AttentionBias" in i:
                    score = u.out("elementwise_add", {"X": score, "Y": u.input(
                        f"ab{len(hidden)}", i["AttentionBias"].reshape(1))})
                score = u.out("relu", {"X": score})
                if "AttentionScalar" in i:
                    score = u.out("elementwise_mul", {"X": score, "Y": u.input(
                        f"as{len(hidden)}", i["AttentionScalar"].reshape(1))})
                    if "AttentionScalarBias" in i:
                        score = u.out("elementwise_add", {"X": score, "Y": u.input(
                            f"asb{len(hidden)}", i["AttentionScalarBias"].reshape(1))})
                    score = u.out("relu", {"X": score})
                row = u.op("reshape2", {"X": score}, ["Out", "XShape"],
                           shape=[1, end - start])["Out"]
                alpha = u.out("softmax", {"X": row})
                lstm_x = u.out("matmul", {"X": alpha, "Y": xs})
                z = u.out("elementwise_add", {"X": u.out("mul", {"X": lstm_x, "Y": "wx"}),
                                              "Y": "b"})
                if h_prev is not None:
                    z = u.out("elementwise_add", {"X": z, "Y": u.out(
                        "mul", {"X": h_prev, "Y": "wh"})})
                names = [f"z{len(hidden)}_{k}" for k in range(4)]
                u.block.append_op(type="split", inputs={"X": [z]}, outputs={"Out": names},
                                  attrs={"num": 4, "axis": 1})
                f, ig, o = (_act(u, gate, n) for n in names[:3])
                c = u.out("elementwise_add", {
                    "X": u.out("elementwise_mul", {"X": f, "Y": c_prev}),
                    "Y": u.out("elementwise_mul", {"X": ig, "Y": _act(u, cand, names[3])})})
                h = u.out("elementwise_mul", {"X": o, "Y": _act(u, cell_act, c)})
                hidden.append(h)
                cell.append(c)
                c_prev, h_prev = c, h
        values = u.run(*hidden, *cell)
        t = len(hidden)
        return {"Hidden": (np.concatenate(values[:t]), lod),
                "Cell": (np.concatenate(values[t:]), lod)}
    return ref


def attention_case(name, lod=LOD, h0=True, scalar=True, scalar_bias=True, bias=True,
                   **attrs):
    n, t = _seqs(lod), _rows(lod)
    inputs = {"X": r(t, M), "C0": r(n, D), "AttentionWeight": r(M + D, 1, scale=1.0),
              "LSTMWeight": r(D + M, 4 * D), "LSTMBias": r(1, 4 * D)}
    if h0:
        inputs["H0"] = r(n, D)
    if bias:
        inputs["AttentionBias"] = r(1, 1)
    if scalar:
        inputs["AttentionScalar"] = np.array([[1.5]], "float32")
        if scalar_bias:
            inputs["AttentionScalarBias"] = r(1, 1)
    return OpCase("attention_lstm", inputs, attrs=attrs, lod={"X": lod},
                  ref=attention_ref(lod), outputs={"Hidden": 1, "Cell": 1, "AttentionedX": 1},
                  name=name)


CASES = [
    fusion_lstm_case("peepholes"),
    fusion_lstm_case("no_peepholes", peepholes=False),
    fusion_lstm_case("states_reverse", states=True, is_reverse=True),
    fusion_lstm_case("batch_mode", states=True, use_seq=False),
    fusion_lstm_case("batch_mode_no_states", use_seq=False, is_reverse=True),
    fusion_lstm_case("one_sequence", lod=ONE, peepholes=False),
    fusion_lstm_case("activations", gate_activation="relu", cell_activation="sigmoid",
                     candidate_activation="identity"),
    embedding_lstm_case("peepholes"),
    embedding_lstm_case("states_reverse", peepholes=False, states=True, is_reverse=True),
    embedding_lstm_case("batch_mode", states=True, use_seq=False),
    fusion_gru_case("h0_bias"),
    fusion_gru_case("no_h0_no_bias", bias=False, h0=False),
    fusion_gru_case("reverse", is_reverse=True),
    fusion_gru_case("batch_mode", use_seq=False),
    fusion_gru_case("batch_mode_no_h0", use_seq=False, h0=False, is_reverse=True),
    fusion_gru_case("activations", activation="relu", gate_activation="tanh"),
    attention_case("full"),
    attention_case("no_h0", h0=False),
    attention_case("no_scalar", scalar=False, bias=False),
    attention_case("scalar_without_bias", scalar_bias=False),
    attention_case("one_sequence", lod=ONE),
    attention_case("activations", gate_activation="relu", cell_activation="tanh",
                   candidate_activation="sigmoid"),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


@pytest.mark.parametrize("op", ["fusion_lstm", "fusion_gru", "fused_embedding_fc_lstm",
                                "attention_lstm"])
def test_fused_rnns_have_no_gradient(op):
    assert registry.get(op).grad is registry.no_gradient


def test_results_do_not_depend_on_use_seq():
    for make in (fusion_lstm_case, embedding_lstm_case):
        seq = make("seq", states=True)
        batch = OpCase(seq.op, seq.inputs, attrs={**seq.attrs, "use_seq": False}, lod=seq.lod,
                       outputs={"Hidden": 1, "Cell": 1})
        a, b = run_case(seq)[2], run_case(batch)[2]
        for slot in ("Hidden", "Cell"):
            np.testing.assert_array_equal(np.asarray(a[slot]), np.asarray(b[slot]))


def test_batch_mode_intermediates_are_in_time_step_order():
    # lengths 2, 3, 4 run longest first: step 0 holds rows 5, 2, 0; step 1 rows 6, 3, 1; ...
    order = [5, 2, 0, 6, 3, 1, 7, 4, 8]
    case = fusion_lstm_case("order", states=True, use_seq=False)
    out = run_case(case)[2]
    x, wx, b = case.inputs["X"], case.inputs["WeightX"], case.inputs["Bias"]
    np.testing.assert_allclose(np.asarray(out["BatchedInput"]),
                               (x @ wx + b[0, :4 * D])[order], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(out["BatchedHidden"]),
                                  np.asarray(out["Hidden"])[order])
    # M = 3 <= 4D: Paddle's batch mode keeps X itself, reordered, in XX
    np.testing.assert_array_equal(np.asarray(out["XX"]), x[order])
    np.testing.assert_array_equal(np.asarray(out["ReorderedH0"]), case.inputs["H0"][[2, 1, 0]])


# --- argument errors ---------------------------------------------------------------------------
def _lstm_inputs(**changes):
    inputs = {"X": r(9, M), "WeightX": r(M, 4 * D), "WeightH": r(D, 4 * D),
              "Bias": r(1, 7 * D)}
    inputs.update(changes)
    return inputs


def test_fusion_lstm_checks_its_weights():
    assert_build_fails("fusion_lstm", _lstm_inputs(WeightX=r(M + 1, 4 * D)), {}, "WeightX")
    assert_build_fails("fusion_lstm", _lstm_inputs(WeightH=r(D, 3 * D)), {}, "WeightH")
    # 4D wide without peepholes' 3D more
    assert_build_fails("fusion_lstm", _lstm_inputs(Bias=r(1, 4 * D)), {}, "Bias", "7")
    assert_build_fails("fusion_lstm", _lstm_inputs(H0=r(3, D)), {}, "C0")
    assert_build_fails("fusion_lstm", _lstm_inputs(H0=r(3, D), C0=r(2, D)), {}, "H0")
    assert_build_fails("fusion_lstm", _lstm_inputs(), {"gate_activation": "softmax"},
                       "gate_activation")


def test_fusion_lstm_needs_sequences_and_one_state_per_sequence():
    case = fusion_lstm_case("no_lod")
    case.lod = {}
    case.ref = None
    with pytest.raises(InvalidArgument, match="fusion_lstm: input 'X'"):
        check_output(case)
    case = fusion_lstm_case("states", states=True)
    case.inputs["H0"] = r(2, D)
    case.inputs["C0"] = r(2, D)
    case.ref = None
    with pytest.raises(InvalidArgument, match="H0.*3 rows"):
        check_output(case)


def test_fused_embedding_fc_lstm_checks_the_table_width():
    inputs = {"Ids": np.zeros((9, 1), "int64"), "Embeddings": r(VOCAB, 3 * D),
              "WeightH": r(D, 4 * D), "Bias": r(1, 7 * D)}
    assert_build_fails("fused_embedding_fc_lstm", inputs, {}, "Embeddings")
    inputs.update(Embeddings=r(VOCAB, 4 * D), Ids=np.zeros((9, 2), "int64"))
    assert_build_fails("fused_embedding_fc_lstm", inputs, {}, "Ids")


def test_fusion_gru_checks_its_weights():
    inputs = {"X": r(9, M), "WeightX": r(M, 3 * D), "WeightH": r(D, 4 * D)}
    assert_build_fails("fusion_gru", inputs, {}, "WeightH")
    inputs.update(WeightH=r(D, 3 * D), Bias=r(1, 2 * D))
    assert_build_fails("fusion_gru", inputs, {}, "Bias")
    inputs.update(Bias=r(1, 3 * D), H0=r(3, D + 1))
    assert_build_fails("fusion_gru", inputs, {}, "H0")


def test_attention_lstm_checks_its_weights():
    good = attention_case("shapes").inputs
    assert_build_fails("attention_lstm", {**good, "LSTMWeight": r(M, 4 * D)}, {},
                       "LSTMWeight")
    assert_build_fails("attention_lstm", {**good, "AttentionWeight": r(M, 1)}, {},
                       "AttentionWeight")
    assert_build_fails("attention_lstm", {**good, "AttentionScalar": r(1, 2)}, {},
                       "AttentionScalar")
    no_scalar = {k: v for k, v in good.items() if k != "AttentionScalar"}
    assert_build_fails("attention_lstm", no_scalar, {}, "AttentionScalar")
    assert_build_fails("attention_lstm", {**good, "C0": r(3, D + 1)}, {}, "C0")


def test_attention_lstm_needs_one_cell_state_per_sequence():
    case = attention_case("c0_rows")
    case.inputs["C0"] = r(2, D)
    case.inputs["H0"] = r(2, D)
    case.ref = None
    with pytest.raises(InvalidArgument, match="attention_lstm: input 'C0'"):
        check_output(case)
