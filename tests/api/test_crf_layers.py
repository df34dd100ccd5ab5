"""linear_chain_crf, crf_decoding and chunk_eval as layers: the program Fluid 1.8 builds
(op types, parameter names, slots), a tagger that trains on LoD and on padded batches, its
decoded path against brute force over every tag sequence, and argument checks."""
import itertools

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument

TAGS = 3
LENGTHS = [3, 1, 2]


def _score(x, w, tags):
    total = w[0, tags[0]] + w[1, tags[-1]] + sum(x[k, t] for k, t in enumerate(tags))
    return total + sum(w[2 + a, b] for a, b in zip(tags, tags[1:]))


def _viterbi(x, w):
    return list(max(itertools.product(range(x.shape[1]), repeat=len(x)),
                    key=lambda p: _score(x, w, p)))


def _batch(seed=0):
    """Features that say the tag: feature row = one-hot(tag) + noise."""
    rng = np.random.RandomState(seed)
    rows = sum(LENGTHS)
    tags = rng.randint(0, TAGS, rows)
    feats = (np.eye(TAGS)[tags] + 0.1 * rng.randn(rows, TAGS)).astype("float32")
    return feats, tags.reshape(-1, 1).astype("int64")


def _tagger(padded):
    if padded:
        feat = fluid.data("feat", [-1, max(LENGTHS), TAGS], "float32")
        label = fluid.data("label", [-1, max(LENGTHS)], "int64")
        length = fluid.data("length", [-1], "int64")
        emission = fluid.layers.fc(feat, size=TAGS, num_flatten_dims=2)
    else:
        feat = fluid.layers.data("feat", [TAGS], dtype="float32", lod_level=1)
        label = fluid.layers.data("label", [1], dtype="int64", lod_level=1)
        length = None
        emission = fluid.layers.fc(feat, size=TAGS)
    cost = fluid.layers.linear_chain_crf(emission, label, length=length,
                                         param_attr=fluid.ParamAttr(name="crfw"))
    avg_cost = fluid.layers.mean(cost)
    decoded = fluid.layers.crf_decoding(emission, param_attr=fluid.ParamAttr(name="crfw"),
                                        length=length)
    metrics = fluid.layers.chunk_eval(decoded, label, chunk_scheme="plain",
                                      num_chunk_types=TAGS - 1, seq_length=length)
    return emission, avg_cost, decoded, metrics


def _feed(padded):
    feats, tags = _batch()
    if not padded:
        place = fluid.CPUPlace()
        return {"feat": fluid.create_lod_tensor(feats, [LENGTHS], place),
                "label": fluid.create_lod_tensor(tags, [LENGTHS], place)}
    steps = max(LENGTHS)
    pf = np.zeros((len(LENGTHS), steps, TAGS), "float32")
    pl = np.zeros((len(LENGTHS), steps), "int64")
    start = 0
    for i, n in enumerate(LENGTHS):
        pf[i, :n], pl[i, :n] = feats[start:start + n], tags[start:start + n, 0]
        start += n
    return {"feat": pf, "label": pl, "length": np.array(LENGTHS, "int64")}


def test_the_program_is_fluid_18s():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        feat = fluid.layers.data("feat", [TAGS], dtype="float32", lod_level=1)
        label = fluid.layers.data("label", [1], dtype="int64", lod_level=1)
        cost = fluid.layers.linear_chain_crf(feat, label)
        path = fluid.layers.crf_decoding(feat, param_attr="linear_chain_crf_0.w_0")
    crf_op, decode_op = [op for op in main.global_block().ops]
    assert crf_op.type == "linear_chain_crf" and decode_op.type == "crf_decoding"
    assert crf_op.input("Transition") == ["linear_chain_crf_0.w_0"]
    assert main.global_block().var("linear_chain_crf_0.w_0").shape == (TAGS + 2, TAGS)
    assert sorted(crf_op.outputs) == ["Alpha", "EmissionExps", "LogLikelihood",
                                      "TransitionExps"]
    assert cost.name == crf_op.output("LogLikelihood")[0]
    assert decode_op.input("Transition") == ["linear_chain_crf_0.w_0"]
    assert path.dtype == fluid.core.VarDesc.VarType.INT64
    fluid.verify(main)


@pytest.mark.parametrize("padded", [False, True], ids=["lod", "padded"])
def test_a_crf_tagger_trains_and_decodes_the_best_path(padded):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 1
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        emission, avg_cost, decoded, metrics = _tagger(padded)
        fluid.optimizer.SGD(learning_rate=0.5).minimize(avg_cost)
    fluid.verify(main)
    scope, exe = fluid.Scope(), fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    feed = _feed(padded)
    losses = []
    for _ in range(30):
        loss, = exe.run(main, feed=feed, fetch_list=[avg_cost], scope=scope)
        losses.append(float(np.asarray(loss).reshape(-1)[0]))
    assert losses[-1] < 0.5 * losses[0]
    x, path, f1 = exe.run(main.clone(for_test=True), feed=feed,
                          fetch_list=[emission, decoded, metrics[2]], scope=scope)
    w = np.asarray(scope.find_var("crfw").get_tensor())
    x = np.asarray(x).reshape(-1, TAGS) if not padded else np.asarray(x)
    path = np.asarray(path)
    start = 0
    for i, n in enumerate(LENGTHS):
        if padded:
            assert list(path[i, :n]) == _viterbi(x[i, :n], w)
            assert not path[i, n:].any()
        else:
            assert list(path[start:start + n, 0]) == _viterbi(x[start:start + n], w)
        start += n
    assert np.asarray(f1).reshape(-1)[0] > 0.99  # the features say the tags


def test_crf_decoding_with_a_label_marks_the_right_steps():
    feats, tags = _batch()
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        feat = fluid.layers.data("feat", [TAGS], dtype="float32", lod_level=1)
        label = fluid.layers.data("label", [1], dtype="int64", lod_level=1)
        fluid.layers.linear_chain_crf(feat, label, param_attr="crfw")
        path = fluid.layers.crf_decoding(feat, param_attr="crfw")
        right = fluid.layers.crf_decoding(feat, param_attr="crfw", label=label)
    scope, exe = fluid.Scope(), fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    place = fluid.CPUPlace()
    p, ok = exe.run(main, feed={"feat": fluid.create_lod_tensor(feats, [LENGTHS], place),
                                "label": fluid.create_lod_tensor(tags, [LENGTHS], place)},
                    fetch_list=[path, right], scope=scope, return_numpy=False)
    assert ok.lod() == [[0, 3, 4, 6]]
    np.testing.assert_array_equal(np.asarray(ok), (np.asarray(p) == tags).astype("int64"))


def test_chunk_eval_layer_returns_six_values():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        infer = fluid.layers.data("infer", [1], dtype="int64", lod_level=1)
        label = fluid.layers.data("label", [1], dtype="int64", lod_level=1)
        outs = fluid.layers.chunk_eval(infer, label, "IOB", num_chunk_types=1)
    exe, place = fluid.Executor(fluid.CPUPlace()), fluid.CPUPlace()
    # B I O B  vs  B I O O: 2 inferred, 1 labelled, 1 right
    values = exe.run(main, feed={
        "infer": fluid.create_lod_tensor(np.array([[0], [1], [2], [0]]), [[4]], place),
        "label": fluid.create_lod_tensor(np.array([[0], [1], [2], [2]]), [[4]], place)},
        fetch_list=list(outs), scope=fluid.Scope())
    got = [float(np.asarray(v).reshape(-1)[0]) for v in values]
    assert got == pytest.approx([0.5, 1.0, 2 / 3, 2, 1, 1])
    assert [v.name for v in outs[:2]] == ["chunk_eval_0.tmp_0", "chunk_eval_0.tmp_1"]


@pytest.mark.parametrize("call,words", [
    (lambda f, l: fluid.layers.linear_chain_crf(l, l), "input expected a Variable of float32"),
    (lambda f, l: fluid.layers.linear_chain_crf(f, f), "label expected a Variable of int64"),
    (lambda f, l: fluid.layers.crf_decoding(f, param_attr="no_such"), "no_such"),
    (lambda f, l: fluid.layers.chunk_eval(l, l, "BIO", 2), "chunk_scheme expected"),
    (lambda f, l: fluid.layers.chunk_eval(l, l, "IOB", 0), "num_chunk_types expected"),
])
def test_bad_arguments_are_refused_with_the_layer_name(call, words):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        feat = fluid.layers.data("feat", [TAGS], dtype="float32", lod_level=1)
        label = fluid.layers.data("label", [1], dtype="int64", lod_level=1)
        count = len(main.global_block().ops)
        with pytest.raises((InvalidArgument, TypeError)) as info:
            call(feat, label)
        assert words in str(info.value)
        assert len(main.global_block().ops) == count
