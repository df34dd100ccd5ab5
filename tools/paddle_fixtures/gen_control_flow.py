"""Generate control-flow / LoD training fixtures (forward + backward).

Output: tests/fixtures/paddle/control_flow/<name>/ for
    while_grad        while_loop of h = tanh(fc(h)) (shared fc), 4 steps -> mean; backward
    cond_select       cond(flag > 0, fc_a(x), fc_b(x)) -> mean; backward; two feeds
    dynamic_rnn_raw   Fluid 1.x DynamicRNN rebuilt from raw ops (lod_rank_table,
                      lod_tensor_to_array, while, shrink_rnn_memory, ...); backward
    text_classifier   lookup_table -> sequence_conv -> sequence_pool(max) -> fc softmax
                      -> cross_entropy -> mean; backward
plus control_flow/README.md (generated).

Each fixture folder holds
    main.pdmodel      ProgramDesc bytes (program.desc.serialize_to_string()) with the
                      backward ops appended by paddle.static.append_backward
    startup.pdmodel   the startup program (parameter initializers)
    params.npz        parameter values after running the startup program, by name
    feed.npz          the feed (cond_select: feed_true.npz / feed_false.npz)
    <feed>.lod.json   offset LoD of each LoD feed, e.g. [[0, 10, 18, 23, 30]]
    expected.npz      fetched outputs and gradients, by variable name
                      (cond_select: expected_true.npz / expected_false.npz)
    meta.json         feed / fetch names, LoD of fetched LoD tensors, op types per block,
                      parameters, a description of what the program computes

All parameters (biases included) use seeded uniform initializers, so params.npz is
exactly what the startup program produces with the stored random_seed.

Run from the repo root:
    paddle-venv/bin/python tools/paddle_fixtures/gen_control_flow.py
"""

import json
import os
import sys

import numpy as np

sys.dont_write_bytecode = True  # keep tools/ free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C  # noqa: E402

paddle = C.import_paddle()
static = paddle.static
from paddle.base import core  # noqa: E402
from paddle.base.layer_helper import LayerHelper  # noqa: E402

SEED = 11  # Program.random_seed of every main / startup program
VarType = core.VarDesc.VarType


def uniform_attr(name, low=-0.5, high=0.5):
    return paddle.ParamAttr(
        name=name, initializer=paddle.nn.initializer.Uniform(low, high)
    )


# --------------------------------------------------------------------------
# Fluid-style raw ops (as fluid.layers.* appended them in Fluid 1.x).
# --------------------------------------------------------------------------
def fluid_mean(x):
    helper = LayerHelper("mean")
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(type="mean", inputs={"X": [x]}, outputs={"Out": [out]})
    return out


def fluid_cross_entropy(prob, label):
    helper = LayerHelper("cross_entropy")
    out = helper.create_variable_for_type_inference(dtype=prob.dtype)
    helper.append_op(
        type="cross_entropy",
        inputs={"X": [prob], "Label": [label]},
        outputs={"Y": [out]},
        attrs={"soft_label": False, "ignore_index": -100},
    )
    return out


def fluid_embedding(ids, vocab, dim, param_name):
    """fluid.layers.embedding: a ``lookup_table`` op on int64 ids of shape [T, 1]."""
    helper = LayerHelper("embedding")
    w = helper.create_parameter(
        attr=uniform_attr(param_name), shape=[vocab, dim], dtype="float32"
    )
    out = helper.create_variable_for_type_inference(dtype="float32")
    helper.append_op(
        type="lookup_table",
        inputs={"Ids": [ids], "W": [w]},
        outputs={"Out": [out]},
        attrs={
            "is_sparse": False,
            "is_distributed": False,
            "remote_prefetch": False,
            "padding_idx": -1,
        },
    )
    return out


class RawDynamicRNN:
    """The op structure of Fluid 1.x ``fluid.layers.DynamicRNN``, from raw ops.

    Usage mirrors the old class::

        rnn = RawDynamicRNN(main_program)
        with rnn.block():
            x_t = rnn.step_input(x)
            h_prev = rnn.memory(shape=[H])
            h = cell(x_t, h_prev)
            rnn.update_memory(h_prev, h)
            rnn.output(h)
        out = rnn.outputs[0]
    """

    def __init__(self, program):
        self.program = program
        self.parent = program.current_block()
        self.helper = LayerHelper("dynamic_rnn")
        self.cond = self.parent.create_var(
            name=paddle.utils.unique_name.generate("dynamic_rnn_cond"),
            dtype="bool",
            shape=[1],
        )
        self.cond.stop_gradient = True
        self.step_idx = None
        self.zero_idx = None
        self.rank_table = None
        self.max_seq_len = None
        self.input_arrays = []
        self.mem_arrays = {}
        self.mem_links = []
        self.output_arrays = []
        self.outputs = []

    def _fill_int64(self, name, value):
        var = self.parent.create_var(
            name=paddle.utils.unique_name.generate(name), dtype="int64", shape=[1]
        )
        self.parent.append_op(
            type="fill_constant",
            outputs={"Out": [var]},
            attrs={
                "shape": [1],
                "dtype": int(VarType.INT64),
                "value": float(value),
                "force_cpu": True,
            },
        )
        return var

    def _less_than(self, block):
        block.append_op(
            type="less_than",
            inputs={"X": [self.step_idx], "Y": [self.max_seq_len]},
            outputs={"Out": [self.cond]},
            attrs={"force_cpu": True},
        )

    def block(self):
        rnn = self

        class _Guard:
            def __enter__(self_):
                rnn.step_idx = rnn._fill_int64("dynamic_rnn_step_idx", 0)
                rnn.step_idx.stop_gradient = False
                rnn.while_op = static.nn.control_flow.While(rnn.cond)
                rnn._while_guard = rnn.while_op.block()
                rnn._while_guard.__enter__()
                rnn.body = rnn.program.current_block()

            def __exit__(self_, *exc):
                if exc[0] is None:
                    body = rnn.body
                    body.append_op(
                        type="increment",
                        inputs={"X": [rnn.step_idx]},
                        outputs={"Out": [rnn.step_idx]},
                        attrs={"step": 1.0},
                    )
                    for new_mem, mem_array in rnn.mem_links:
                        body.append_op(
                            type="write_to_array",
                            inputs={"X": [new_mem], "I": [rnn.step_idx]},
                            outputs={"Out": [mem_array]},
                        )
                    rnn._less_than(body)
                rnn._while_guard.__exit__(*exc)
                if exc[0] is None:
                    for arr in rnn.output_arrays:
                        out = rnn.parent.create_var(
                            name=paddle.utils.unique_name.generate("array_to_lod_tensor"),
                            dtype=arr.dtype,
                        )
                        rnn.parent.append_op(
                            type="array_to_lod_tensor",
                            inputs={"X": [arr], "RankTable": [rnn.rank_table]},
                            outputs={"Out": [out]},
                        )
                        rnn.outputs.append(out)
                return False

        return _Guard()

    def _read(self, block, array, idx, dtype):
        out = block.create_var(
            name=paddle.utils.unique_name.generate("read_from_array"), dtype=dtype
        )
        block.append_op(
            type="read_from_array",
            inputs={"X": [array], "I": [idx]},
            outputs={"Out": [out]},
        )
        return out

    def step_input(self, x, level=0):
        parent = self.parent
        if self.rank_table is None:
            self.rank_table = parent.create_var(
                name=paddle.utils.unique_name.generate("lod_rank_table"),
                type=VarType.LOD_RANK_TABLE,
            )
            self.rank_table.stop_gradient = True
            parent.append_op(
                type="lod_rank_table",
                inputs={"X": [x]},
                outputs={"Out": [self.rank_table]},
                attrs={"level": level},
            )
            self.max_seq_len = parent.create_var(
                name=paddle.utils.unique_name.generate("dynamic_rnn_max_seq_len"),
                dtype="int64",
            )
            self.max_seq_len.stop_gradient = False
            parent.append_op(
                type="max_sequence_len",
                inputs={"RankTable": [self.rank_table]},
                outputs={"Out": [self.max_seq_len]},
            )
            # The initial condition is computed in the parent block (before the while op).
            self._less_than_parent()
        arr = parent.create_var(
            name=paddle.utils.unique_name.generate("dynamic_rnn_input_array"),
            type=VarType.LOD_TENSOR_ARRAY,
            dtype=x.dtype,
        )
        self.input_arrays.append(arr)
        parent.append_op(
            type="lod_tensor_to_array",
            inputs={"X": [x], "RankTable": [self.rank_table]},
            outputs={"Out": [arr]},
        )
        return self._read(self.body, arr, self.step_idx, x.dtype)

    def _less_than_parent(self):
        # Fluid 1.x appends this less_than to the parent block while the while
        # block is open; the while op itself is appended after its body.
        self._less_than(self.parent)

    def memory(self, shape, value=0.0, dtype="float32"):
        parent = self.parent
        if self.zero_idx is None:
            self.zero_idx = self._fill_int64("zero_idx", 0)
        in0 = self._read(parent, self.input_arrays[0], self.zero_idx, self.input_arrays[0].dtype)
        init = parent.create_var(
            name=paddle.utils.unique_name.generate("mem_init"), dtype=dtype
        )
        parent.append_op(
            type="fill_constant_batch_size_like",
            inputs={"Input": [in0]},
            outputs={"Out": [init]},
            attrs={
                "shape": [-1] + list(shape),
                "value": float(value),
                "dtype": int(VarType.FP32),
            },
        )
        mem_array = parent.create_var(
            name=paddle.utils.unique_name.generate("dynamic_rnn_mem_array"),
            type=VarType.LOD_TENSOR_ARRAY,
            dtype=dtype,
        )
        parent.append_op(
            type="write_to_array",
            inputs={"X": [init], "I": [self.zero_idx]},
            outputs={"Out": [mem_array]},
        )
        prev = self._read(self.body, mem_array, self.step_idx, dtype)
        shrunk = self.body.create_var(
            name=paddle.utils.unique_name.generate("shrink_rnn_memory"), dtype=dtype
        )
        self.body.append_op(
            type="shrink_rnn_memory",
            inputs={"X": [prev], "I": [self.step_idx], "RankTable": [self.rank_table]},
            outputs={"Out": [shrunk]},
        )
        self.mem_arrays[shrunk.name] = mem_array
        return shrunk

    def update_memory(self, ex_mem, new_mem):
        self.mem_links.append((new_mem, self.mem_arrays[ex_mem.name]))

    def output(self, *outs):
        for each in outs:
            arr = self.parent.create_var(
                name=paddle.utils.unique_name.generate("dynamic_rnn_output_array_" + each.name),
                type=VarType.LOD_TENSOR_ARRAY,
                dtype=each.dtype,
            )
            self.body.append_op(
                type="write_to_array",
                inputs={"X": [each], "I": [self.step_idx]},
                outputs={"Out": [arr]},
            )
            self.output_arrays.append(arr)


# --------------------------------------------------------------------------
# Networks. Each returns a dict: feeds (name -> (array, offset lod or None)),
# fetch vars, description.
# --------------------------------------------------------------------------
def lod_tensor(array, offset_lod, place):
    t = core.LoDTensor()
    t.set(array, place)
    if offset_lod is not None:
        t.set_lod(offset_lod)
    return t


def net_while_grad():
    rs = np.random.RandomState(101)
    x = static.data(name="x", shape=[None, 3], dtype="float32")
    x.stop_gradient = False
    i = paddle.full(shape=[1], fill_value=0, dtype="int64")
    n = paddle.full(shape=[1], fill_value=4, dtype="int64")

    def loop_cond(i, h):
        return paddle.less_than(i, n)

    def loop_body(i, h):
        h = static.nn.fc(
            h,
            size=3,
            activation="tanh",
            weight_attr=uniform_attr("step_fc.w_0"),
            bias_attr=uniform_attr("step_fc.b_0"),
        )
        return [i + 1, h]

    # Loop on a copy: while_loop writes its results back into the loop variables,
    # and the feed var x itself must stay the input.
    h0 = paddle.assign(x)
    i_out, h_out = static.nn.while_loop(loop_cond, loop_body, [i, h0])
    loss = fluid_mean(h_out)
    grads = static.append_backward(loss)
    return {
        "feeds": {"x": (rs.uniform(-1, 1, (2, 3)).astype("float32"), None)},
        "outputs": [("i", i_out), ("h", h_out), ("loss", loss)],
        "grads": grads,
        "extra_grads": ["x@GRAD"],
        "what": "x float32[2,3] (feed, stop_gradient=False); i = 0; h = assign(x); "
        "while i < 4: h = tanh(h @ step_fc.w_0 + step_fc.b_0), i += 1 "
        "(paddle.static.nn.while_loop, the fc weight is shared by all iterations); "
        "loss = mean(h) (raw `mean` op); paddle.static.append_backward(loss).",
    }


def net_cond_select():
    rs = np.random.RandomState(202)
    x = static.data(name="x", shape=[None, 4], dtype="float32")
    x.stop_gradient = False
    flag = static.data(name="flag", shape=[1], dtype="float32")
    zero = paddle.full(shape=[1], fill_value=0.0, dtype="float32")
    pred = paddle.greater_than(flag, zero)

    def true_fn():
        return static.nn.fc(
            x, size=3, activation="tanh",
            weight_attr=uniform_attr("true_fc.w_0"), bias_attr=uniform_attr("true_fc.b_0"),
        )

    def false_fn():
        return static.nn.fc(
            x, size=3, activation="sigmoid",
            weight_attr=uniform_attr("false_fc.w_0"), bias_attr=uniform_attr("false_fc.b_0"),
        )

    out = static.nn.cond(pred, true_fn, false_fn)
    loss = fluid_mean(out)
    grads = static.append_backward(loss)
    xv = rs.uniform(-1, 1, (3, 4)).astype("float32")
    return {
        "feeds_by_case": {
            "true": {"x": (xv, None), "flag": (np.array([1.5], "float32"), None)},
            "false": {"x": (xv, None), "flag": (np.array([-0.5], "float32"), None)},
        },
        "outputs": [("pred", pred), ("out", out), ("loss", loss)],
        "grads": grads,
        "extra_grads": ["x@GRAD"],
        "what": "x float32[3,4] (stop_gradient=False), flag float32[1]; pred = flag > 0; "
        "out = cond(pred, tanh(fc_true(x)), sigmoid(fc_false(x))) "
        "(paddle.static.nn.cond: two conditional_block ops + select_input); "
        "loss = mean(out); append_backward. feed_true has flag=1.5, feed_false flag=-0.5, "
        "same x. The parameter gradients of the branch that did not run are fetched as "
        "zeros (Paddle's conditional_block_grad fills them).",
    }


DRNN_LENGTHS = [10, 8, 5, 7]


def net_dynamic_rnn_raw():
    rs = np.random.RandomState(303)
    offsets = [0] + list(np.cumsum(DRNN_LENGTHS))
    x = static.data(name="x", shape=[None, 4], dtype="float32", lod_level=1)
    x.stop_gradient = False
    rnn = RawDynamicRNN(static.default_main_program())
    with rnn.block():
        x_t = rnn.step_input(x)
        h_prev = rnn.memory(shape=[3], value=0.0)
        h = static.nn.fc(
            [x_t, h_prev],
            size=3,
            activation="tanh",
            weight_attr=[uniform_attr("rnn_fc.w_x"), uniform_attr("rnn_fc.w_h")],
            bias_attr=uniform_attr("rnn_fc.b_0"),
        )
        rnn.update_memory(h_prev, h)
        rnn.output(h)
    seq = rnn.outputs[0]
    last = static.nn.sequence_lod.sequence_pool(seq, "last")
    loss = fluid_mean(last)
    grads = static.append_backward(loss)
    xv = rs.uniform(-1, 1, (offsets[-1], 4)).astype("float32")
    return {
        "feeds": {"x": (xv, [[int(o) for o in offsets]])},
        "outputs": [("seq", seq), ("last", last), ("loss", loss)],
        "grads": grads,
        "extra_grads": ["x@GRAD"],
        "what": "Fluid 1.x DynamicRNN op structure built from raw ops: x float32[30,4] "
        "with LoD [[0,10,18,23,30]] (lengths 10,8,5,7; stop_gradient=False). "
        "lod_rank_table(x) -> max_sequence_len -> less_than(step_idx=0, max_len) -> "
        "lod_tensor_to_array(x) (time-major, sequences sorted by length desc); "
        "memory init = fill_constant_batch_size_like(read_from_array(input_array, 0), "
        "[-1,3], 0) written to a mem array; while: x_t = read_from_array(input_array, i), "
        "h_prev = shrink_rnn_memory(read_from_array(mem_array, i)), "
        "h = tanh(x_t @ rnn_fc.w_x + h_prev @ rnn_fc.w_h + rnn_fc.b_0) (fc with two "
        "inputs: mul, mul, sum, elementwise_add, tanh), write_to_array(h -> output "
        "array, i), increment(i), write_to_array(h -> mem_array, i), less_than; "
        "then seq = array_to_lod_tensor(output_array) (LoD [[0,10,18,23,30]] again, "
        "original order), last = sequence_pool(seq, LAST), loss = mean(last); "
        "append_backward.",
    }


TC_LENGTHS = [5, 3, 2, 4]


def net_text_classifier():
    rs = np.random.RandomState(404)
    offsets = [0] + list(np.cumsum(TC_LENGTHS))
    ids = static.data(name="ids", shape=[None, 1], dtype="int64", lod_level=1)
    label = static.data(name="label", shape=[None, 1], dtype="int64")
    emb = fluid_embedding(ids, vocab=20, dim=8, param_name="emb.w_0")
    conv = static.nn.sequence_lod.sequence_conv(
        emb,
        num_filters=6,
        filter_size=3,
        act="tanh",
        param_attr=uniform_attr("seq_conv.w_0"),
        bias_attr=uniform_attr("seq_conv.b_0"),
    )
    pooled = static.nn.sequence_lod.sequence_pool(conv, "max")
    prob = static.nn.fc(
        pooled, size=2, activation="softmax",
        weight_attr=uniform_attr("cls_fc.w_0"), bias_attr=uniform_attr("cls_fc.b_0"),
    )
    loss = fluid_mean(fluid_cross_entropy(prob, label))
    grads = static.append_backward(loss)
    idv = rs.randint(0, 20, (offsets[-1], 1)).astype("int64")
    lv = np.array([[0], [1], [1], [0]], "int64")
    return {
        "feeds": {"ids": (idv, [[int(o) for o in offsets]]), "label": (lv, None)},
        "outputs": [("emb", emb), ("conv", conv), ("pooled", pooled), ("prob", prob), ("loss", loss)],
        "grads": grads,
        "extra_grads": [],
        "what": "ids int64[14,1] with LoD [[0,5,8,10,14]] (4 sentences, lengths 5,3,2,4), "
        "label int64[4,1]; emb = lookup_table(emb.w_0[20,8], ids) (fluid.layers.embedding, "
        "is_sparse=False, padding_idx=-1); conv = tanh(sequence_conv(emb, filter_size=3, "
        "6 filters, padding_start=-1, seq_conv.w_0[24,6]) + seq_conv.b_0); "
        "pooled = sequence_pool(conv, MAX) [4,6]; prob = softmax(fc(pooled, 2)); "
        "loss = mean(cross_entropy(prob, label)); append_backward.",
    }


# --------------------------------------------------------------------------
# Running and writing.
# --------------------------------------------------------------------------
def run_case(main, startup, feeds, fetch_names, place):
    """Run startup then main once; return (params, {name: (array, lod)}, missing)."""
    scope = static.Scope()
    with static.scope_guard(scope):
        exe = static.Executor(place)
        exe.run(startup)
        params = {
            p.name: C.scope_array(scope, p.name).copy()
            for p in sorted(main.all_parameters(), key=lambda p: p.name)
        }
        feed = {k: lod_tensor(a, lod, place) for k, (a, lod) in feeds.items()}
        results, missing = {}, []
        for name in fetch_names:
            # Fetch one at a time so a variable the run never wrote (e.g. the
            # gradient of a branch that was not taken) is reported, not fatal.
            try:
                (t,) = exe.run(main, feed=feed, fetch_list=[name], return_numpy=False)
                results[name] = (np.array(t), [list(map(int, l)) for l in t.lod()])
            except Exception as e:  # noqa: BLE001
                missing.append({"name": name, "error": str(e).strip().splitlines()[-1][:300]})
    return params, results, missing


def run_all_at_once(main, startup, feeds, fetch_names, place):
    """Same as run_case but with one exe.run; used to check consistency."""
    scope = static.Scope()
    with static.scope_guard(scope):
        exe = static.Executor(place)
        exe.run(startup)
        feed = {k: lod_tensor(a, lod, place) for k, (a, lod) in feeds.items()}
        res = exe.run(main, feed=feed, fetch_list=fetch_names, return_numpy=False)
    return {n: np.array(t) for n, t in zip(fetch_names, res)}


def write_feed(out_dir, suffix, feeds):
    np.savez(os.path.join(out_dir, "feed%s.npz" % suffix), **{k: a for k, (a, _) in feeds.items()})
    for k, (_, lod) in feeds.items():
        if lod is not None:
            C.write_json(os.path.join(out_dir, "%s.lod.json" % k), lod)


def describe(program):
    return [
        "  - block %d (parent %d): %s"
        % (b.idx, b.parent_idx, ", ".join(op.type for op in b.ops) or "(no ops)")
        for b in program.blocks
    ]


def build(net):
    main, startup = C.fresh_programs(SEED)
    with paddle.utils.unique_name.guard(), static.program_guard(main, startup):
        spec = net()
    return main, startup, spec


def generate(name, net, place):
    out_dir = C.fixture_dir("control_flow", name, clean=True)
    # Builds are deterministic: a second build serializes to the same bytes (built
    # from the same source line, since op_callstack records line numbers).
    (main, startup, spec), (main2, startup2, _) = [build(net) for _ in range(2)]
    data = main.desc.serialize_to_string()
    assert data == main2.desc.serialize_to_string(), name
    assert startup.desc.serialize_to_string() == startup2.desc.serialize_to_string(), name
    assert static.Program.parse_from_string(data).desc.serialize_to_string() == data

    outputs = [(role, v.name) for role, v in spec["outputs"]]
    grad_names = [g.name for _, g in spec["grads"]] + spec["extra_grads"]
    fetch_names = [n for _, n in outputs] + grad_names
    cases = spec.get("feeds_by_case") or {"": spec["feeds"]}

    C.write_bytes(os.path.join(out_dir, "main.pdmodel"), data)
    C.write_bytes(os.path.join(out_dir, "startup.pdmodel"), startup.desc.serialize_to_string())

    meta = {
        "paddle_version": paddle.__version__,
        "description": spec["what"],
        "random_seed": SEED,
        "feed_names": sorted(next(iter(cases.values())).keys()),
        "feed_lod": {},
        "outputs": {role: n for role, n in outputs},
        "gradients": {p.name: g.name for p, g in spec["grads"]},
        "fetch_names": [],
        "fetch_lod": {},
        "missing_fetches": {},
        "parameters": C.parameter_list(main),
        "op_types": C.all_op_types(main),
        "block_parents": {str(b.idx): b.parent_idx for b in main.blocks},
        "startup_op_types": C.all_op_types(startup),
    }
    params = None
    for case, feeds in cases.items():
        suffix = "_" + case if case else ""
        p, results, missing = run_case(main, startup, feeds, fetch_names, place)
        if params is None:
            params = p
        for k in p:
            assert np.array_equal(p[k], params[k])
        # The one-call run must agree with the one-fetch-per-call runs.
        ok_names = [n for n in fetch_names if n in results]
        together = run_all_at_once(main, startup, feeds, ok_names, place)
        for n in ok_names:
            assert np.array_equal(together[n], results[n][0]), (name, case, n)
        for n in ok_names:
            assert np.isfinite(results[n][0]).all(), (name, n)
        write_feed(out_dir, suffix, feeds)
        np.savez(os.path.join(out_dir, "expected%s.npz" % suffix),
                 **{n: results[n][0] for n in ok_names})
        key = case or "default"
        for k, (_, lod) in feeds.items():
            if lod is not None:
                meta["feed_lod"][k] = lod
        meta["fetch_names"] = ok_names if not case else sorted(set(meta["fetch_names"]) | set(ok_names), key=fetch_names.index)
        meta["fetch_lod"][key] = {n: results[n][1] for n in ok_names if results[n][1]}
        if missing:
            meta["missing_fetches"][key] = missing
        print(name, key, {n: results[n][0].shape for n in ok_names}, "missing:", [m["name"] for m in missing])
    if len(cases) == 1:
        meta["fetch_lod"] = meta["fetch_lod"]["default"]
        meta["missing_fetches"] = meta["missing_fetches"].get("default", [])
    else:
        meta["cases"] = {
            c: {k: v[0].reshape(-1).tolist() if k == "flag" else "see feed_%s.npz" % c
                for k, v in f.items()}
            for c, f in cases.items()
        }
    np.savez(os.path.join(out_dir, "params.npz"), **params)
    C.write_json(os.path.join(out_dir, "meta.json"), meta)
    return main, meta, out_dir


NETS = [
    ("while_grad", net_while_grad),
    ("cond_select", net_cond_select),
    ("dynamic_rnn_raw", net_dynamic_rnn_raw),
    ("text_classifier", net_text_classifier),
]


def main():
    only = sys.argv[1:]
    place = paddle.CPUPlace()
    root = C.fixture_dir("control_flow", clean=not only)
    readme = [
        "# Control-flow and LoD training fixtures",
        "",
        "Generated by `tools/paddle_fixtures/gen_control_flow.py` with PaddlePaddle %s "
        "on CPU." % paddle.__version__,
        "",
        "Each folder: `main.pdmodel` (ProgramDesc bytes with backward ops), "
        "`startup.pdmodel`, `params.npz` (parameters after startup), `feed.npz` "
        "(+ `<feed>.lod.json` with the offset LoD of LoD feeds), `expected.npz` "
        "(fetched outputs and gradients by variable name) and `meta.json` (feed/fetch "
        "names, LoD of fetched LoD tensors, op types per block). `cond_select` has "
        "`feed_true.npz`/`expected_true.npz` and `feed_false.npz`/`expected_false.npz` "
        "instead.",
        "",
    ]
    for name, net in NETS:
        if only and name not in only:
            continue
        prog, meta, out_dir = generate(name, net, place)
        readme.append("## `%s` (%d bytes on disk)" % (name, C.dir_size(out_dir)))
        readme.append("")
        readme.append(meta["description"])
        readme.append("")
        readme.append("Feeds: %s. Fetched: %s." % (
            ", ".join("`%s`" % n for n in meta["feed_names"]),
            ", ".join("`%s`" % n for n in meta["fetch_names"])))
        if meta["missing_fetches"]:
            readme.append("")
            readme.append("Not fetchable (never written by the run): `%s`" % json.dumps(meta["missing_fetches"]))
        readme.append("")
        readme.append("Blocks and op types of `main.pdmodel`, in order:")
        readme.append("")
        readme.extend(describe(prog))
        readme.append("")
    if not only:
        with open(os.path.join(root, "README.md"), "w") as f:
            f.write("\n".join(readme))
    print("total bytes:", C.dir_size(root))


if __name__ == "__main__":
    main()
