"""fusion_seqexpand_concat_fc, fusion_seqconv_eltadd_relu, fusion_repeated_fc_relu and
fusion_squared_mat_sub against the unfused programs they stand for (sequence_expand, concat,
sequence_conv, mul, elementwise and activation ops), run by fluid_nb on the same inputs.
These ops have no gradient (inference only)."""
import numpy as np
import pytest

from fluid_nb.errors import InvalidArgument
from fluid_nb.ops import registry

from .op_test import EachLoD, OpCase, assert_build_fails, check_output, table_tests
from .unfused import Unfused

rng = np.random.RandomState(32)

LOD = [[0, 2, 5, 9]]
SHORT = [[0, 1, 3, 7]]  # sequences shorter than the context


def r(*shape, scale=0.5):
    return (rng.uniform(-1, 1, shape) * scale).astype("float32")


def _act(u, name, x):
    return x if name == "identity" else u.out(name, {"X": x})


# --- fusion_seqexpand_concat_fc -------------------------------------------------------------
def seqexpand_ref(lod):
    def ref(i, a):
        xs = i["X"]
        u = Unfused({"x0": (xs[0], lod), "w": i["FCWeight"]})
        parts = ["x0"] + [u.out("sequence_expand", {"X": u.input(f"x{k}", x), "Y": "x0"},
                                ref_level=0) for k, x in enumerate(xs[1:], start=1)]
        out = u.out("mul", {"X": u.out("concat", {"X": parts}, axis=1), "Y": "w"})
        if "FCBias" in i:
            out = u.out("elementwise_add", {"X": out,
                                            "Y": u.input("b", i["FCBias"].reshape(-1))})
        (out,) = u.run(_act(u, a.get("fc_activation", "identity"), out))
        return {"Out": (out, lod)}
    return ref


def seqexpand_case(name, widths=(3, 2, 4), lod=LOD, bias=True, one_row_lod=False, **attrs):
    n, t = len(lod[0]) - 1, lod[0][-1]
    xs = [r(t, widths[0])] + [r(n, w) for w in widths[1:]]
    inputs = {"X": xs, "FCWeight": r(sum(widths), 5)}
    if bias:
        inputs["FCBias"] = r(1, 5)
    lods = EachLoD([lod] + [[list(range(n + 1))] if one_row_lod else None] * (len(xs) - 1))
    return OpCase("fusion_seqexpand_concat_fc", inputs, attrs=attrs, lod={"X": lods},
                  ref=seqexpand_ref(lod), outputs={"Out": 1, "FCOut": 1}, name=name)


# --- fusion_seqconv_eltadd_relu --------------------------------------------------------------
def seqconv_ref(lod):
    def ref(i, a):
        u = Unfused({"x": (i["X"], lod), "f": i["Filter"], "b": i["Bias"].reshape(-1)})
        conv = u.out("sequence_conv", {"X": "x", "Filter": "f"},
                     contextLength=a["contextLength"], contextStart=a.get("contextStart", 0))
        (out,) = u.run(u.out("relu", {"X": u.out("elementwise_add", {"X": conv, "Y": "b"})}))
        return {"Out": (out, lod)}
    return ref


def seqconv_case(name, length, start=0, lod=LOD, width=3):
    inputs = {"X": r(lod[0][-1], width), "Filter": r(length * width, 4),
              "Bias": r(1, 4, scale=0.2)}
    return OpCase("fusion_seqconv_eltadd_relu", inputs,
                  attrs={"contextLength": length, "contextStart": start}, lod={"X": lod},
                  ref=seqconv_ref(lod), outputs={"Out": 1, "ColMat": 1}, name=name)


# --- fusion_repeated_fc_relu ------------------------------------------------------------------
def repeated_ref(i, a):
    u = Unfused({"x": i["X"]})
    y = "x"
    outs = []
    for k, (w, b) in enumerate(zip(i["W"], i["Bias"])):
        y = u.out("mul", {"X": y, "Y": u.input(f"w{k}", w)})
        y = u.out("relu", {"X": u.out("elementwise_add", {
            "X": y, "Y": u.input(f"b{k}", b.reshape(-1))})})
        outs.append(y)
    values = u.run(*outs)
    return {"ReluOut": values[:-1], "Out": values[-1]}


def repeated_case(name, widths, bias_shape=lambda n: (1, n)):
    ws = [r(a, b) for a, b in zip(widths[:-1], widths[1:])]
    bs = [r(*bias_shape(w.shape[1])) for w in ws]
    return OpCase("fusion_repeated_fc_relu", {"X": r(4, widths[0]), "W": ws, "Bias": bs},
                  ref=repeated_ref, outputs={"ReluOut": len(ws) - 1, "Out": 1}, name=name)


# --- fusion_squared_mat_sub -------------------------------------------------------------------
def squared_ref(i, a):
    u = Unfused({"x": i["X"], "y": i["Y"]})
    xy = u.out("square", {"X": u.out("matmul", {"X": "x", "Y": "y"})})
    x2y2 = u.out("matmul", {"X": u.out("square", {"X": "x"}), "Y": u.out("square", {"X": "y"})})
    out = u.out("scale", {"X": u.out("elementwise_sub", {"X": xy, "Y": x2y2})},
                scale=a.get("scalar", 1.0))
    xy, out = u.run(xy, out)
    return {"SquaredX": i["X"] ** 2, "SquaredY": i["Y"] ** 2, "SquaredXY": xy, "Out": out}


CASES = [
    seqexpand_case("relu", fc_activation="relu"),
    seqexpand_case("identity_no_bias", bias=False),
    seqexpand_case("two_inputs_tanh", widths=(1, 1), fc_activation="tanh"),
    seqexpand_case("one_row_sequences", widths=(2, 3, 1, 2), one_row_lod=True,
                   fc_activation="sigmoid"),
    seqconv_case("centred", 3, start=-1),
    seqconv_case("forward", 4),
    seqconv_case("backward", 3, start=-2),
    seqconv_case("short_sequences", 5, start=-2, lod=SHORT),
    seqconv_case("one_row_context", 1),
    repeated_case("two", (3, 4, 2)),
    repeated_case("three_flat_biases", (5, 3, 6, 2), bias_shape=lambda n: (n,)),
    OpCase("fusion_squared_mat_sub", {"X": r(3, 4), "Y": r(4, 5)}, attrs={"scalar": 0.5},
           ref=squared_ref, outputs={"SquaredX": 1, "SquaredY": 1, "SquaredXY": 1, "Out": 1},
           name="scalar"),
    OpCase("fusion_squared_mat_sub", {"X": r(1, 2), "Y": r(2, 3)}, ref=squared_ref,
           outputs={"Out": 1}, name="default"),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


@pytest.mark.parametrize("op", ["fusion_seqexpand_concat_fc", "fusion_seqconv_eltadd_relu",
                                "fusion_repeated_fc_relu", "fusion_squared_mat_sub"])
def test_fused_fcs_have_no_gradient(op):
    assert registry.get(op).grad is registry.no_gradient


def test_seqexpand_concat_fc_keeps_the_sequences_and_the_per_sequence_part():
    case = seqexpand_case("parts", widths=(2, 3))
    out = check_output(case)
    assert out["Out"].lod() == LOD
    x1, w = case.inputs["X"][1], case.inputs["FCWeight"]
    np.testing.assert_allclose(np.asarray(out["FCOut"]), x1 @ w[2:], rtol=1e-5, atol=1e-6)


# --- argument errors ---------------------------------------------------------------------------
def test_seqexpand_concat_fc_checks_its_inputs():
    xs = [r(9, 3), r(3, 2)]
    assert_build_fails("fusion_seqexpand_concat_fc", {"X": xs[:1], "FCWeight": r(3, 5)}, {},
                       "at least 2")
    assert_build_fails("fusion_seqexpand_concat_fc", {"X": xs, "FCWeight": r(4, 5)}, {},
                       "FCWeight", "5")
    assert_build_fails("fusion_seqexpand_concat_fc",
                       {"X": xs, "FCWeight": r(5, 5), "FCBias": r(2, 5)}, {}, "FCBias")
    assert_build_fails("fusion_seqexpand_concat_fc", {"X": xs, "FCWeight": r(5, 5)},
                       {"fc_activation": "softmax"}, "fc_activation")


def test_seqexpand_concat_fc_needs_one_row_per_sequence():
    case = seqexpand_case("rows")
    case.inputs["X"][1] = r(4, 2)
    case.ref = None
    with pytest.raises(InvalidArgument, match="X' #1.*3 rows"):
        check_output(case)


def test_seqconv_eltadd_relu_checks_its_inputs():
    inputs = {"X": r(9, 3), "Filter": r(9, 4), "Bias": r(1, 4)}
    assert_build_fails("fusion_seqconv_eltadd_relu", inputs, {"contextLength": 2}, "Filter")
    assert_build_fails("fusion_seqconv_eltadd_relu", inputs,
                       {"contextLength": 3, "contextStart": -3}, "contextStart")
    assert_build_fails("fusion_seqconv_eltadd_relu", inputs,
                       {"contextLength": 3, "contextStride": 2}, "contextStride")
    assert_build_fails("fusion_seqconv_eltadd_relu", {**inputs, "Bias": r(1, 3)},
                       {"contextLength": 3}, "Bias")


def test_seqconv_eltadd_relu_needs_one_level_of_sequences():
    case = seqconv_case("levels", 2)
    case.lod = {"X": [[0, 1, 3], [0, 2, 5, 9]]}
    case.ref = None
    with pytest.raises(InvalidArgument, match="1 level"):
        check_output(case)


def test_repeated_fc_relu_checks_its_chain():
    x = r(4, 3)
    assert_build_fails("fusion_repeated_fc_relu", {"X": x, "W": [r(3, 2)], "Bias": [r(1, 2)]},
                       {}, "at least 2")
    assert_build_fails("fusion_repeated_fc_relu",
                       {"X": x, "W": [r(3, 2), r(2, 2)], "Bias": [r(1, 2)]}, {}, "Bias")
    assert_build_fails("fusion_repeated_fc_relu",
                       {"X": x, "W": [r(3, 2), r(3, 2)], "Bias": [r(1, 2), r(1, 2)]}, {},
                       "W' #1")
    assert_build_fails("fusion_repeated_fc_relu",
                       {"X": x, "W": [r(3, 2), r(2, 2)], "Bias": [r(1, 2), r(1, 3)]}, {},
                       "Bias' #1")


def test_squared_mat_sub_checks_the_product():
    assert_build_fails("fusion_squared_mat_sub", {"X": r(3, 4), "Y": r(3, 4)}, {}, "Y")
    assert_build_fails("fusion_squared_mat_sub", {"X": r(3, 4, 1), "Y": r(4, 2)}, {}, "rank 2")
