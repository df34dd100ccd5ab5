"""Generate LoD gradient fixtures: the LoD Paddle gives each gradient of a LoD variable.

Paddle's grad ops give an input's gradient that input's LoD (``ShareLoD(X, X@GRAD)`` in
their shape inference) -- or, for some ops, none. These fixtures record what Paddle 2.6
reports, op by op, for small programs over LoD inputs.

Output: tests/fixtures/paddle/lod_grads/<case>/ for the cases in CASES below, each
    __model__     ProgramDesc bytes of the main program with the ops of
                  paddle.static.append_backward(mean(square(out))) (op_callstack dropped);
                  this is the program Paddle ran to make expected.npz
    feed.npz      the feed, by name
    params.npz    parameter values after the startup program (only cases with parameters)
    expected.npz  fetched forward variables and every @GRAD variable of the program, by name
    meta.json     description, feed LoD (offsets), fetch names, the LoD (offsets; [] for
                  none) of every fetched tensor as Paddle reports it, op types
plus lod_grads/README.md (generated).

The loss is mean(square(out)) rather than mean(out) so that the gradient reaching ``out``
(2 * out / numel) differs element by element, which makes the gradient data of ops that
only move rows (sequence_reverse, sequence_pad, ...) worth comparing.

Run from the repo root:
    paddle-venv/bin/python tools/paddle_fixtures/gen_lod_grads.py [CASE...]
"""

import os
import sys

import numpy as np

sys.dont_write_bytecode = True  # keep tools/ free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C  # noqa: E402

paddle = C.import_paddle()
static = paddle.static
seq = static.nn.sequence_lod
from paddle.base import core  # noqa: E402
from paddle.base.layer_helper import LayerHelper  # noqa: E402

SEED = 17
LOD = [[0, 2, 5, 9]]  # three sequences of lengths 2, 3, 4


def uniform_attr(name, low=-0.5, high=0.5):
    return paddle.ParamAttr(name=name, initializer=paddle.nn.initializer.Uniform(low, high))


def raw_op(type, inputs, attrs=None, out_slot="Out", dtype="float32", extra_outs=()):
    """Append one op as Fluid 1.x's layers did; returns its ``out_slot`` variable (and the
    variables of ``extra_outs`` after it, when given)."""
    helper = LayerHelper(type)
    outs = {s: helper.create_variable_for_type_inference(dtype=dtype)
            for s in (out_slot,) + tuple(extra_outs)}
    helper.append_op(type=type, inputs=inputs, outputs={s: [v] for s, v in outs.items()},
                     attrs=attrs or {})
    return outs[out_slot] if not extra_outs else tuple(outs.values())


def lod_input(name, width, lod=LOD, dtype="float32", grad=True):
    var = static.data(name=name, shape=[None, width], dtype=dtype, lod_level=len(lod))
    var.stop_gradient = not grad
    return var


def rows(rs, lod, width):
    return rs.uniform(-1, 1, (lod[-1][-1], width)).astype("float32")


# --------------------------------------------------------------------------
# Cases. Each returns: feeds {name: (array, offset lod or None)}, outputs [(role, var)],
# what (a sentence).
# --------------------------------------------------------------------------
def case_sequence_reverse(rs):
    x = lod_input("x", 3)
    out = seq.sequence_reverse(x)
    return {"x": (rows(rs, LOD, 3), LOD)}, [("out", out)], \
        "out = sequence_reverse(x), x float32[9,3] LoD [[0,2,5,9]]"


def pool_case(pool_type):
    def case(rs):
        x = lod_input("x", 3)
        out = seq.sequence_pool(x, pool_type)
        return {"x": (rows(rs, LOD, 3), LOD)}, [("out", out)], \
            "out = sequence_pool(x, %s), x float32[9,3] LoD [[0,2,5,9]]" % pool_type.upper()
    return case


def case_sequence_softmax(rs):
    x = lod_input("x", 1)
    out = seq.sequence_softmax(x)
    return {"x": (rows(rs, LOD, 1), LOD)}, [("out", out)], \
        "out = sequence_softmax(x), x float32[9,1] LoD [[0,2,5,9]]"


def case_sequence_expand(rs):
    xlod, ylod = [[0, 1, 3]], [[0, 2, 5]]
    x = lod_input("x", 2, xlod)
    y = lod_input("y", 1, ylod, grad=False)
    out = seq.sequence_expand(x, y, ref_level=0)
    return {"x": (rows(rs, xlod, 2), xlod), "y": (rows(rs, ylod, 1), ylod)}, \
        [("out", out)], \
        "out = sequence_expand(x, y, ref_level=0), x float32[3,2] LoD [[0,1,3]], " \
        "y float32[5,1] LoD [[0,2,5]] (x's sequence 0 twice, sequence 1 three times)"


def case_sequence_expand_as(rs):
    xlod, ylod = [[0, 1, 2, 3]], [[0, 2, 3, 7]]
    x = lod_input("x", 2, xlod)
    y = lod_input("y", 1, ylod, grad=False)
    out = seq.sequence_expand_as(x, y)
    return {"x": (rows(rs, xlod, 2), xlod), "y": (rows(rs, ylod, 1), ylod)}, \
        [("out", out)], \
        "out = sequence_expand_as(x, y), x float32[3,2] LoD [[0,1,2,3]], " \
        "y float32[7,1] LoD [[0,2,3,7]]"


def case_sequence_concat(rs):
    alod, blod = [[0, 2, 5]], [[0, 1, 3]]
    a = lod_input("a", 2, alod)
    b = lod_input("b", 2, blod)
    out = seq.sequence_concat([a, b])
    return {"a": (rows(rs, alod, 2), alod), "b": (rows(rs, blod, 2), blod)}, \
        [("out", out)], \
        "out = sequence_concat([a, b]), a float32[5,2] LoD [[0,2,5]], " \
        "b float32[3,2] LoD [[0,1,3]]"


def case_sequence_slice(rs):
    x = lod_input("x", 2)
    offset = static.data(name="offset", shape=[None, 1], dtype="int64")
    length = static.data(name="length", shape=[None, 1], dtype="int64")
    out = seq.sequence_slice(x, offset, length)
    return {"x": (rows(rs, LOD, 2), LOD),
            "offset": (np.array([[1], [0], [2]], "int64"), None),
            "length": (np.array([[1], [2], [2]], "int64"), None)}, [("out", out)], \
        "out = sequence_slice(x, offset=[1,0,2], length=[1,2,2]), x float32[9,2] " \
        "LoD [[0,2,5,9]]"


def case_sequence_slice_add(rs):
    x = lod_input("x", 2)
    offset = static.data(name="offset", shape=[None, 1], dtype="int64")
    length = static.data(name="length", shape=[None, 1], dtype="int64")
    sliced = seq.sequence_slice(x, offset, length)
    y = static.data(name="y", shape=[2], dtype="float32")
    y.stop_gradient = False
    out = raw_op("elementwise_add", {"X": [sliced], "Y": [y]}, {"axis": -1})
    return {"x": (rows(rs, LOD, 2), LOD),
            "offset": (np.array([[1], [0], [2]], "int64"), None),
            "length": (np.array([[1], [2], [2]], "int64"), None),
            "y": (rs.uniform(-1, 1, (2,)).astype("float32"), None)}, \
        [("sliced", sliced), ("out", out)], \
        "out = elementwise_add(sequence_slice(x, offset=[1,0,2], length=[1,2,2]), y), " \
        "x float32[9,2] LoD [[0,2,5,9]], y float32[2] dense (stop_gradient=False); Paddle " \
        "declares the slice's output with lod_level 0 although it holds a LoD at run time"


def case_sequence_pad_unpad(rs):
    x = lod_input("x", 2)
    pad_value = paddle.full(shape=[1], fill_value=0.0, dtype="float32")
    padded, length = seq.sequence_pad(x, pad_value)
    out = seq.sequence_unpad(padded, length)
    return {"x": (rows(rs, LOD, 2), LOD)}, [("padded", padded), ("length", length),
                                            ("out", out)], \
        "padded, length = sequence_pad(x, 0.0); out = sequence_unpad(padded, length), " \
        "x float32[9,2] LoD [[0,2,5,9]]"


def case_sequence_conv(rs):
    x = lod_input("x", 4)
    out = seq.sequence_conv(x, num_filters=3, filter_size=3,
                            param_attr=uniform_attr("seq_conv.w_0"),
                            bias_attr=uniform_attr("seq_conv.b_0"))
    return {"x": (rows(rs, LOD, 4), LOD)}, [("out", out)], \
        "out = sequence_conv(x, 3 filters, filter_size=3) + bias, x float32[9,4] " \
        "LoD [[0,2,5,9]]"


def case_fc(rs):
    x = lod_input("x", 4)
    out = static.nn.fc(x, size=3, activation="tanh", weight_attr=uniform_attr("fc.w_0"),
                       bias_attr=uniform_attr("fc.b_0"))
    return {"x": (rows(rs, LOD, 4), LOD)}, [("out", out)], \
        "out = tanh(fc(x, 3)) (mul, elementwise_add, tanh), x float32[9,4] LoD [[0,2,5,9]]"


def case_elementwise_add(rs):
    x = lod_input("x", 3)
    y = static.data(name="y", shape=[3], dtype="float32")
    y.stop_gradient = False
    out = raw_op("elementwise_add", {"X": [x], "Y": [y]}, {"axis": -1})
    return {"x": (rows(rs, LOD, 3), LOD),
            "y": (rs.uniform(-1, 1, (3,)).astype("float32"), None)}, [("out", out)], \
        "out = elementwise_add(x, y), x float32[9,3] LoD [[0,2,5,9]], y float32[3] dense " \
        "(stop_gradient=False)"


def case_activations(rs):
    x = lod_input("x", 3)
    r = raw_op("relu", {"X": [x]})
    t = raw_op("tanh", {"X": [r]})
    out = raw_op("scale", {"X": [t]}, {"scale": 1.5, "bias": 0.25,
                                        "bias_after_scale": True})
    return {"x": (rows(rs, LOD, 3), LOD)}, [("relu", r), ("tanh", t), ("out", out)], \
        "out = scale(tanh(relu(x)), 1.5, bias 0.25), x float32[9,3] LoD [[0,2,5,9]]"


def case_lod_reset(rs):
    x = lod_input("x", 2)
    out = raw_op("lod_reset", {"X": [x]}, {"target_lod": [0, 4, 9]})
    return {"x": (rows(rs, LOD, 2), LOD)}, [("out", out)], \
        "out = lod_reset(x, target_lod=[0,4,9]), x float32[9,2] LoD [[0,2,5,9]]"


def case_sequence_scatter(rs):
    base = static.data(name="base", shape=[3, 5], dtype="float32")
    base.stop_gradient = False
    ilod = [[0, 2, 3, 5]]
    ids = static.data(name="ids", shape=[None, 1], dtype="int64", lod_level=1)
    upd = lod_input("upd", 1, ilod)
    out = seq.sequence_scatter(base, ids, upd)
    return {"base": (rs.uniform(-1, 1, (3, 5)).astype("float32"), None),
            "ids": (np.array([[0], [3], [1], [4], [2]], "int64"), ilod),
            "upd": (rows(rs, ilod, 1), ilod)}, [("out", out)], \
        "out = sequence_scatter(base, ids, upd), base float32[3,5] dense " \
        "(stop_gradient=False), ids int64[5,1] and upd float32[5,1] LoD [[0,2,3,5]]"


def case_dynamic_lstm(rs):
    x = lod_input("x", 12)
    helper = LayerHelper("lstm")
    w = helper.create_parameter(attr=uniform_attr("lstm.w_0"), shape=[3, 12], dtype="float32")
    b = helper.create_parameter(attr=uniform_attr("lstm.b_0"), shape=[1, 21], dtype="float32")
    hidden, cell, _, _ = raw_op(
        "lstm", {"Input": [x], "Weight": [w], "Bias": [b]},
        {"use_peepholes": True, "is_reverse": False, "gate_activation": "sigmoid",
         "cell_activation": "tanh", "candidate_activation": "tanh"},
        out_slot="Hidden", extra_outs=("Cell", "BatchGate", "BatchCellPreAct"))
    return {"x": (rows(rs, LOD, 12), LOD)}, [("cell", cell), ("out", hidden)], \
        "out, cell = lstm(x) as fluid.layers.dynamic_lstm(x, size=12, use_peepholes=True) " \
        "appends it (hidden 3, bias [1,21]), x float32[9,12] LoD [[0,2,5,9]]"


def case_dynamic_gru(rs):
    x = lod_input("x", 9)
    helper = LayerHelper("gru")
    w = helper.create_parameter(attr=uniform_attr("gru.w_0"), shape=[3, 9], dtype="float32")
    b = helper.create_parameter(attr=uniform_attr("gru.b_0"), shape=[1, 9], dtype="float32")
    hidden = raw_op(
        "gru", {"Input": [x], "Weight": [w], "Bias": [b]},
        {"is_reverse": True, "gate_activation": "sigmoid", "activation": "tanh",
         "origin_mode": False},
        out_slot="Hidden", extra_outs=("BatchGate", "BatchResetHiddenPrev", "BatchHidden"))[0]
    return {"x": (rows(rs, LOD, 9), LOD)}, [("out", hidden)], \
        "out = gru(x) as fluid.layers.dynamic_gru(x, size=3, is_reverse=True) appends it, " \
        "x float32[9,9] LoD [[0,2,5,9]]"


def case_two_level(rs):
    lod = [[0, 2, 3], [0, 2, 5, 9]]
    x = lod_input("x", 3, lod)
    t = raw_op("tanh", {"X": [x]})
    pooled = seq.sequence_pool(t, "sum")
    out = seq.sequence_reverse(pooled)
    return {"x": (rows(rs, lod, 3), lod)}, [("tanh", t), ("pooled", pooled), ("out", out)], \
        "out = sequence_reverse(sequence_pool(tanh(x), SUM)), x float32[9,3] with the " \
        "2-level LoD [[0,2,3],[0,2,5,9]] (the pool removes the last level, the reverse " \
        "works on the one left)"


CASES = [
    ("sequence_reverse", case_sequence_reverse),
    ("sequence_pool_sum", pool_case("sum")),
    ("sequence_pool_average", pool_case("average")),
    ("sequence_pool_sqrt", pool_case("sqrt")),
    ("sequence_pool_max", pool_case("max")),
    ("sequence_pool_last", pool_case("last")),
    ("sequence_pool_first", pool_case("first")),
    ("sequence_softmax", case_sequence_softmax),
    ("sequence_expand", case_sequence_expand),
    ("sequence_expand_as", case_sequence_expand_as),
    ("sequence_concat", case_sequence_concat),
    ("sequence_slice", case_sequence_slice),
    ("sequence_slice_add", case_sequence_slice_add),
    ("sequence_pad_unpad", case_sequence_pad_unpad),
    ("sequence_conv", case_sequence_conv),
    ("fc", case_fc),
    ("elementwise_add", case_elementwise_add),
    ("activations", case_activations),
    ("lod_reset", case_lod_reset),
    ("sequence_scatter", case_sequence_scatter),
    ("dynamic_lstm", case_dynamic_lstm),
    ("dynamic_gru", case_dynamic_gru),
    ("two_level", case_two_level),
]


# --------------------------------------------------------------------------
# Building, running, writing.
# --------------------------------------------------------------------------
def build(case, index):
    main, startup = C.fresh_programs(SEED)
    with paddle.utils.unique_name.guard(), static.program_guard(main, startup):
        feeds, outputs, what = case(np.random.RandomState(1000 + index))
        out = dict(outputs)["out"]
        loss = raw_op("mean", {"X": [raw_op("square", {"X": [out]})]})
        static.append_backward(loss)
    return main, startup, feeds, outputs + [("loss", loss)], what


def stripped_bytes(program):
    """The program's bytes without ``op_callstack`` (the generating machine's paths)."""
    desc = core.ProgramDesc(program.desc.serialize_to_string())
    for b in range(desc.num_blocks()):
        block = desc.block(b)
        for i in range(block.op_size()):
            if block.op(i).has_attr("op_callstack"):
                block.op(i).remove_attr("op_callstack")
    return desc.serialize_to_string()


def grad_names(program):
    """Every @GRAD variable an op of block 0 writes, in the order they are written."""
    names = []
    for op in program.global_block().ops:
        for name in op.output_arg_names:
            if "@GRAD" in name and name not in names:
                names.append(name)
    return names


def lod_tensor(array, lod, place):
    t = core.LoDTensor()
    t.set(array, place)
    if lod is not None:
        t.set_lod(lod)
    return t


def run(program, startup, feeds, fetch_names, place):
    """Startup, then the program once per fetch (so a variable the run never writes is
    reported, not fatal) and once with every fetch (which must agree)."""
    scope = static.Scope()
    with static.scope_guard(scope):
        exe = static.Executor(place)
        exe.run(startup)
        params = {p.name: C.scope_array(scope, p.name).copy()
                  for p in sorted(startup.global_block().all_parameters(), key=lambda p: p.name)}
        feed = {k: lod_tensor(a, lod, place) for k, (a, lod) in feeds.items()}
        results, missing = {}, {}
        for name in fetch_names:
            try:
                (t,) = exe.run(program, feed=feed, fetch_list=[name], return_numpy=False)
                results[name] = (np.array(t), [list(map(int, level)) for level in t.lod()])
            except Exception as e:  # noqa: BLE001
                missing[name] = str(e).strip().splitlines()[-1][:300]
        names = list(results)
        together = exe.run(program, feed=feed, fetch_list=names, return_numpy=False)
        for name, t in zip(names, together):
            assert np.array_equal(np.array(t), results[name][0]), name
            assert [list(map(int, level)) for level in t.lod()] == results[name][1], name
    return params, results, missing


def generate(name, case, index, place):
    out_dir = C.fixture_dir("lod_grads", name, clean=True)
    (main, startup, feeds, outputs, what), again = build(case, index), build(case, index)
    data = stripped_bytes(main)
    assert data == stripped_bytes(again[0]), name
    program = static.Program.parse_from_string(data)  # run the very bytes saved
    fetch_names = [v.name for _, v in outputs] + grad_names(main)
    params, results, missing = run(program, startup, feeds, fetch_names, place)
    assert not missing, (name, missing)
    for n, (value, _) in results.items():
        assert np.isfinite(value).all(), (name, n)

    C.write_bytes(os.path.join(out_dir, "__model__"), data)
    np.savez(os.path.join(out_dir, "feed.npz"), **{k: a for k, (a, _) in feeds.items()})
    if params:
        np.savez(os.path.join(out_dir, "params.npz"), **params)
    np.savez(os.path.join(out_dir, "expected.npz"), **{n: r[0] for n, r in results.items()})
    block = main.global_block()
    meta = {
        "paddle_version": paddle.__version__,
        "description": what + "; loss = mean(square(out)); append_backward(loss).",
        "feed_names": list(feeds),
        "feed_lod": {k: lod for k, (_, lod) in feeds.items() if lod is not None},
        "outputs": {role: v.name for role, v in outputs},
        "fetch_names": list(results),
        "fetch_lod": {n: r[1] for n, r in results.items()},
        "declared_lod_level": {n.split("@GRAD")[0]: block.var(n.split("@GRAD")[0]).lod_level
                               for n in results if block.has_var(n.split("@GRAD")[0])},
        "missing_fetches": missing,
        "op_types": C.op_types(block),
    }
    C.write_json(os.path.join(out_dir, "meta.json"), meta)
    print(name, {n: (r[0].shape, r[1]) for n, r in results.items()},
          "missing:" if missing else "", list(missing) or "")
    return meta


def main():
    only = sys.argv[1:]
    place = paddle.CPUPlace()
    root = C.fixture_dir("lod_grads", clean=not only)
    readme = [
        "# LoD gradient fixtures",
        "",
        "Generated by `tools/paddle_fixtures/gen_lod_grads.py` with PaddlePaddle %s on CPU."
        % paddle.__version__,
        "",
        "Each folder: `__model__` (the main ProgramDesc with its backward ops), `feed.npz`, "
        "`params.npz` (cases with parameters), `expected.npz` (forward variables and every "
        "`@GRAD` variable, by name) and `meta.json` (feed LoD, and the LoD Paddle reports "
        "for each fetched tensor, `[]` for none).",
        "",
    ]
    for index, (name, case) in enumerate(CASES):
        if only and name not in only:
            continue
        meta = generate(name, case, index, place)
        readme.append("- `%s`: %s Gradient LoD: %s." % (
            name, meta["description"],
            ", ".join("`%s` %s" % (n, meta["fetch_lod"][n])
                      for n in meta["fetch_names"] if "@GRAD" in n)))
    if not only:
        with open(os.path.join(root, "README.md"), "w") as f:
            f.write("\n".join(readme) + "\n")
    print("total bytes:", C.dir_size(root))


if __name__ == "__main__":
    main()
