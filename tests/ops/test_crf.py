"""Linear-chain CRF ops against brute force: the negative log-likelihood against a sum over
every tag sequence of tiny batches, the Viterbi path against the best of every tag sequence,
chunk_eval against hand-counted chunks; float64 finite-difference gradients of
linear_chain_crf with respect to Emission and Transition, in both layouts."""
import itertools

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument
from fluid_nb.ops.crf import chunks

from .op_test import OpCase, build, check_output, table_tests

rng = np.random.RandomState(3)
TAGS = 3


def r(*shape):
    return rng.uniform(-1, 1, shape)


def score(x, w, tags):
    """score(s) = a[s_1] + b[s_L] + sum x[l, s_l] + sum w[2 + s_(l-1), s_l]."""
    total = w[0, tags[0]] + w[1, tags[-1]] + sum(x[k, t] for k, t in enumerate(tags))
    return total + sum(w[2 + a, b] for a, b in zip(tags, tags[1:]))


def all_paths(length, tags):
    return itertools.product(range(tags), repeat=length)


def brute_nll(x, w, labels):
    scores = [score(x, w, p) for p in all_paths(len(x), x.shape[1])]
    log_z = np.logaddexp.reduce(scores)
    return log_z - score(x, w, list(labels))


def brute_viterbi(x, w):
    return max(all_paths(len(x), x.shape[1]), key=lambda p: score(x, w, p))


def forward_vectors(x, w):
    """Paddle's Alpha: the forward vectors of one sequence, each scaled to unit sum."""
    ex, ew = np.exp(x - x.max(1, keepdims=True)), np.exp(w)
    alpha = np.zeros_like(x)
    alpha[0] = ew[0] * ex[0]
    alpha[0] /= alpha[0].sum()
    for k in range(1, len(x)):
        alpha[k] = ex[k] * (alpha[k - 1] @ ew[2:])
        alpha[k] /= alpha[k].sum()
    return alpha


def spans(offsets):
    return list(zip(offsets, offsets[1:]))


# --- linear_chain_crf -----------------------------------------------------------------------
def crf_ref_lod(offsets):
    def ref(i, a):
        x, w, label = i["Emission"], i["Transition"], i["Label"].reshape(-1)
        nll = [brute_nll(x[s:e], w, label[s:e]) if e > s else 0.0 for s, e in spans(offsets)]
        alpha = np.zeros_like(x)
        for s, e in spans(offsets):
            if e > s:
                alpha[s:e] = forward_vectors(x[s:e], w)
        return {"LogLikelihood": np.array(nll).reshape(-1, 1).astype(x.dtype),
                "Alpha": alpha.astype(x.dtype),
                "EmissionExps": np.exp(x - x.max(1, keepdims=True)).astype(x.dtype),
                "TransitionExps": np.exp(w).astype(x.dtype)}
    return ref


def crf_ref_padded(i, a):
    x, w, lengths = i["Emission"], i["Transition"], i["Length"].reshape(-1)
    label = i["Label"].reshape(x.shape[:2])
    nll = [brute_nll(x[b, :n], w, label[b, :n]) if n else 0.0 for b, n in enumerate(lengths)]
    # the whole padded emission is exponentiated, padding steps too
    exps = np.exp(x - x.max(2, keepdims=True))
    return {"LogLikelihood": np.array(nll).reshape(-1, 1).astype(x.dtype),
            "EmissionExps": exps}


LOD = [[0, 2, 5, 6]]
EMPTY_LOD = [[0, 3, 3, 5]]
LABEL6 = np.array([[0], [2], [1], [1], [0], [2]], "int64")
PAD_LENGTH = np.array([3, 0, 1, 2], "int64")
PAD_LABEL = rng.randint(0, TAGS, (4, 3)).astype("int64")


def decode_ref_lod(lod, with_label=False):
    def ref(i, a):
        x, w = i["Emission"], i["Transition"]
        path = np.concatenate([brute_viterbi(x[s:e], w) for s, e in spans(lod[0])])
        path = path.astype("int64").reshape(-1, 1)
        if with_label:
            path = (path == i["Label"]).astype("int64")
        return {"ViterbiPath": (path, lod)}
    return ref


def decode_ref_padded(with_label=False):
    def ref(i, a):
        x, w, lengths = i["Emission"], i["Transition"], i["Length"].reshape(-1)
        path = np.zeros(x.shape[:2], "int64")
        for b, n in enumerate(lengths):
            if n:
                path[b, :n] = brute_viterbi(x[b, :n], w)
        if with_label:
            label = i["Label"].reshape(x.shape[:2])
            valid = np.arange(x.shape[1])[None, :] < lengths[:, None]
            path = ((path == label) & valid).astype("int64")
        return {"ViterbiPath": path}
    return ref


# --- chunk_eval -----------------------------------------------------------------------------
def _filled(rows, lengths, filler=-1):
    rows = rows.copy()
    for row, n in zip(rows, lengths):
        row[n:] = filler
    return rows


def chunk_ref(offsets=None, lengths=None, width=None):
    """Chunks counted by hand-checked rules (tests below pin ``chunks`` itself)."""
    def ref(i, a):
        infer, label = i["Inference"].reshape(-1), i["Label"].reshape(-1)
        if lengths is not None:
            sp = [(b * width, b * width + n) for b, n in enumerate(lengths)]
        else:
            sp = spans(offsets)
        excluded = set(a.get("excluded_chunk_types", []))
        n_i = n_l = n_c = 0
        for s, e in sp:
            got = {c for c in chunks(infer[s:e], a["num_chunk_types"],
                                     a.get("chunk_scheme", "IOB")) if c[2] not in excluded}
            want = {c for c in chunks(label[s:e], a["num_chunk_types"],
                                      a.get("chunk_scheme", "IOB")) if c[2] not in excluded}
            n_i, n_l, n_c = n_i + len(got), n_l + len(want), n_c + len(got & want)
        p = n_c / n_i if n_i else 0.0
        rc = n_c / n_l if n_l else 0.0
        f = 2 * p * rc / (p + rc) if n_c else 0.0
        return {"Precision": np.array([p], "float32"), "Recall": np.array([rc], "float32"),
                "F1-Score": np.array([f], "float32"),
                "NumInferChunks": np.array([n_i], "int64"),
                "NumLabelChunks": np.array([n_l], "int64"),
                "NumCorrectChunks": np.array([n_c], "int64")}
    return ref


# IOB with 2 chunk types: B-0=0 I-0=1 B-1=2 I-1=3 O=4
IOB_LABEL = np.array([[0], [1], [4], [2], [3], [3], [4], [0], [2], [1]], "int64")
IOB_INFER = np.array([[0], [1], [4], [2], [3], [4], [4], [0], [2], [3]], "int64")

CASES = [
    OpCase("linear_chain_crf", {"Emission": r(6, TAGS), "Transition": r(TAGS + 2, TAGS),
                                "Label": LABEL6},
           lod={"Emission": LOD, "Label": LOD}, ref=crf_ref_lod(LOD[0]),
           grad=["Emission", "Transition"], grad_outputs=["LogLikelihood"]),
    OpCase("linear_chain_crf", {"Emission": r(5, TAGS).astype("float32"),
                                "Transition": r(TAGS + 2, TAGS).astype("float32"),
                                "Label": LABEL6[:5]},
           lod={"Label": EMPTY_LOD}, ref=crf_ref_lod(EMPTY_LOD[0]), atol=1e-4,
           name="empty_sequence_fp32"),
    OpCase("linear_chain_crf", {"Emission": 4 * r(4, 3, TAGS),
                                "Transition": 2 * r(TAGS + 2, TAGS),
                                "Label": PAD_LABEL, "Length": PAD_LENGTH},
           ref=crf_ref_padded, grad=["Emission", "Transition"],
           grad_outputs=["LogLikelihood"], name="padded"),
    OpCase("linear_chain_crf", {"Emission": r(2, 3, TAGS), "Transition": r(TAGS + 2, TAGS),
                                "Label": PAD_LABEL[:2, :, None],
                                "Length": np.array([[2], [3]], "int64")},
           ref=crf_ref_padded, name="padded_label_rank3"),
    OpCase("crf_decoding", {"Emission": r(6, TAGS), "Transition": r(TAGS + 2, TAGS)},
           lod={"Emission": LOD}, ref=decode_ref_lod(LOD)),
    OpCase("crf_decoding", {"Emission": 3 * r(6, TAGS), "Transition": r(TAGS + 2, TAGS),
                            "Label": LABEL6},
           lod={"Emission": LOD, "Label": LOD}, ref=decode_ref_lod(LOD, with_label=True),
           name="with_label"),
    OpCase("crf_decoding", {"Emission": r(4, 3, TAGS), "Transition": r(TAGS + 2, TAGS),
                            "Length": PAD_LENGTH},
           ref=decode_ref_padded(), name="padded"),
    OpCase("crf_decoding", {"Emission": 3 * r(4, 3, TAGS), "Transition": r(TAGS + 2, TAGS),
                            "Label": PAD_LABEL, "Length": PAD_LENGTH},
           ref=decode_ref_padded(with_label=True), name="padded_with_label"),
    OpCase("chunk_eval", {"Inference": IOB_INFER, "Label": IOB_LABEL},
           lod={"Inference": [[0, 7, 10]], "Label": [[0, 7, 10]]},
           attrs={"num_chunk_types": 2, "chunk_scheme": "IOB"},
           ref=chunk_ref(offsets=[0, 7, 10])),
    OpCase("chunk_eval", {"Inference": IOB_INFER, "Label": IOB_LABEL},
           lod={"Inference": [[0, 7, 10]], "Label": [[0, 7, 10]]},
           attrs={"num_chunk_types": 2, "chunk_scheme": "IOB", "excluded_chunk_types": [1]},
           ref=chunk_ref(offsets=[0, 7, 10]), name="excluded"),
    OpCase("chunk_eval", {"Inference": IOB_INFER.reshape(2, 5),
                          "Label": IOB_LABEL.reshape(2, 5),
                          "SeqLength": np.array([5, 3], "int64")},
           attrs={"num_chunk_types": 2}, ref=chunk_ref(lengths=[5, 3], width=5),
           name="padded"),
    # the filler past each length (-1 here) is never read, so it may be any value
    OpCase("chunk_eval", {"Inference": _filled(IOB_INFER.reshape(2, 5), [5, 3]),
                          "Label": _filled(IOB_LABEL.reshape(2, 5), [5, 3]),
                          "SeqLength": np.array([5, 3], "int64")},
           attrs={"num_chunk_types": 2}, ref=chunk_ref(lengths=[5, 3], width=5),
           name="padded_with_filler"),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


def test_case_values_are_the_brute_force_ones():
    """The references above enumerate every path: pin one by hand as well."""
    x = np.array([[1.0, 0.0], [0.0, 2.0]])
    w = np.zeros((4, 2))
    # four paths with scores 1, 3, 0, 2: Z = e + e^3 + 1 + e^2; label [0, 1] scores 3
    want = np.log(np.e + np.e ** 3 + 1 + np.e ** 2) - 3
    assert np.isclose(brute_nll(x, w, [0, 1]), want)
    result = check_output(OpCase("linear_chain_crf", {"Emission": x, "Transition": w,
                                                      "Label": np.array([[0], [1]])},
                                 lod={"Label": [[0, 2]]}))
    assert np.isclose(np.asarray(result["LogLikelihood"])[0, 0], want)


def test_viterbi_ties_go_to_the_lower_tag():
    x, w = np.zeros((3, 2)), np.zeros((4, 2))
    result = check_output(OpCase("crf_decoding", {"Emission": x, "Transition": w},
                                 lod={"Emission": [[0, 3]]}))
    assert np.asarray(result["ViterbiPath"]).reshape(-1).tolist() == [0, 0, 0]


@pytest.mark.parametrize("scheme,labels,want", [
    # IOB, one type: B=0 I=1 O=2; an I after O opens a chunk
    ("IOB", [0, 1, 2, 1, 1, 0, 0], [(0, 1, 0), (3, 4, 0), (5, 5, 0), (6, 6, 0)]),
    # IOE, one type: I=0 E=1 O=2; a chunk closes after E
    ("IOE", [0, 1, 1, 2, 0, 0], [(0, 1, 0), (2, 2, 0), (4, 5, 0)]),
    # IOBES, two types: B-0 I-0 E-0 S-0 = 0..3, B-1 .. S-1 = 4..7, O = 8
    ("IOBES", [0, 1, 2, 3, 8, 4, 6, 7], [(0, 2, 0), (3, 3, 0), (5, 6, 1), (7, 7, 1)]),
    # plain, three types: the tag is the type, O = 3; a type change starts a chunk
    ("plain", [0, 0, 1, 3, 2, 2], [(0, 1, 0), (2, 2, 1), (4, 5, 2)]),
])
def test_chunks_follow_the_tagging_scheme(scheme, labels, want):
    types = {"IOB": 1, "IOE": 1, "IOBES": 2, "plain": 3}[scheme]
    assert chunks(labels, types, scheme) == want


def test_chunk_eval_counts_only_exact_matches():
    result = check_output(OpCase("chunk_eval", {"Inference": IOB_INFER, "Label": IOB_LABEL},
                                 lod={"Label": [[0, 10]]}, attrs={"num_chunk_types": 2}))
    # label chunks: (0,1,0) (3,5,1) (7,7,0) (8,8,1) (9,9,0) (an I of another type opens one);
    # inferred: (0,1,0) (3,4,1) (7,7,0) (8,9,1): two match exactly
    counts = [int(np.asarray(result[k])[0]) for k in
              ("NumInferChunks", "NumLabelChunks", "NumCorrectChunks")]
    assert counts == [4, 5, 2]
    precision, recall = 2 / 4, 2 / 5
    assert np.isclose(np.asarray(result["F1-Score"])[0],
                      2 * precision * recall / (precision + recall))


def test_crf_refuses_a_label_beyond_the_tags():
    case = OpCase("linear_chain_crf", {"Emission": r(2, TAGS), "Transition": r(TAGS + 2, TAGS),
                                       "Label": np.array([[0], [TAGS]])},
                  lod={"Label": [[0, 2]]})
    with pytest.raises(InvalidArgument, match="linear_chain_crf: input 'Label' values"):
        check_output(case)


def test_crf_refuses_a_transition_of_the_wrong_shape():
    case = OpCase("linear_chain_crf", {"Emission": r(2, TAGS), "Transition": r(TAGS, TAGS),
                                       "Label": np.array([[0], [1]])},
                  lod={"Label": [[0, 2]]})
    with pytest.raises(InvalidArgument, match="linear_chain_crf: input 'Transition'"):
        build(case)


def test_crf_gradient_is_marginals_minus_labels():
    """dEmission rows sum to 0 (a distribution minus a one-hot), scaled by dLogLikelihood."""
    x, w = r(4, TAGS), r(TAGS + 2, TAGS)
    program = fluid.Program()
    with fluid.program_guard(program, fluid.Program()):
        emission = fluid.data("emission", [-1, TAGS], "float64", lod_level=1)
        emission.stop_gradient = False
        label = fluid.data("label", [-1, 1], "int64", lod_level=1)
        block = program.global_block()
        trans = block.create_parameter(name="trans", shape=[TAGS + 2, TAGS], dtype="float64")
        nll = fluid.layers.linear_chain_crf(emission, label, param_attr=fluid.ParamAttr(
            name="trans"))
        fluid.backward.append_backward(fluid.layers.reduce_sum(nll))
    scope = fluid.Scope()
    scope.var("trans").get_tensor().set(w, fluid.CPUPlace())
    d_x, = fluid.Executor(fluid.CPUPlace()).run(
        program, feed={"emission": (x, [[0, 4]]), "label": (np.array([[0], [1], [2], [0]]),
                                                            [[0, 4]])},
        fetch_list=[emission.name + "@GRAD"], scope=scope)
    np.testing.assert_allclose(d_x.sum(axis=1), 0, atol=1e-12)
