"""Generate small real Paddle 2.6 inference models for the ONNX export tests.

Output: tests/fixtures/paddle/onnx_models/<name>/
    model.pdmodel        ProgramDesc bytes, from paddle.jit.save (a dygraph Layer traced
                         with an InputSpec) or paddle.static.save_inference_model
    model.pdiparams      the persistables (save_combine stream, sorted by name)
    feed_<k>.npy         the k-th input (k = 0, 1, ...), in meta.json's feed order
    feed_<k>.lod.json    its offset LoD, for a LoD input
    fetch_<k>.npy        Paddle's k-th output for those inputs, from the reloaded model
    fetch_<k>.lod.json   its offset LoD, for a LoD output
    meta.json            feed / fetch names, how it was saved, op types per block, what it
                         computes
plus onnx_models/README.md (generated): one line per model.

Parameters keep Paddle's own seeded initialisation, except biases and batch-norm
statistics, which are overwritten with seeded random values (Paddle's zeros and ones would
hide bugs in a consumer).

Run from the repo root:
    paddle-venv/bin/python tools/paddle_fixtures/gen_onnx_models.py [NAME...]

With ``--paddle2onnx`` it writes nothing: it converts every fixture with paddle2onnx
(installed in the same venv) and says, for each, whether onnxruntime then gives Paddle's
outputs; the LoD models are given to onnxruntime as Paddle takes them (the rows, without
their LoD, which ONNX has no place for):
    paddle-venv/bin/python tools/paddle_fixtures/gen_onnx_models.py --paddle2onnx
"""

import json
import os
import sys
import tempfile

import numpy as np

sys.dont_write_bytecode = True  # keep tools/ free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C  # noqa: E402

paddle = C.import_paddle()
static = paddle.static
from paddle.base import core  # noqa: E402

from gen_control_flow import RawDynamicRNN  # noqa: E402
from strip_callstacks import strip  # noqa: E402

SEED = 2024
ROOT = ("onnx_models",)


# --------------------------------------------------------------------------
# Dygraph models, saved with paddle.jit.save. Each builder returns
# (layer, [InputSpec], [input arrays], description).
# --------------------------------------------------------------------------
def _randomize_stats(layer, rs):
    """Random biases and batch-norm statistics (see the module docstring)."""
    for name, p in layer.named_parameters():
        if name.endswith("bias"):
            p.set_value(rs.uniform(-0.5, 0.5, p.shape).astype("float32"))
    for sub in layer.sublayers():
        if isinstance(sub, paddle.nn.layer.norm._BatchNormBase):
            sub.weight.set_value(rs.uniform(0.5, 1.5, sub.weight.shape).astype("float32"))
            sub._mean.set_value(rs.uniform(-0.5, 0.5, sub._mean.shape).astype("float32"))
            sub._variance.set_value(rs.uniform(0.5, 2.0, sub._variance.shape).astype("float32"))
        if isinstance(sub, paddle.nn.LayerNorm):
            sub.weight.set_value(rs.uniform(0.5, 1.5, sub.weight.shape).astype("float32"))


def _spec(shape, name, dtype="float32"):
    return paddle.static.InputSpec(shape=shape, dtype=dtype, name=name)


def jit_mlp(rs):
    nn = paddle.nn

    class MLP(nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(8, 16), nn.Linear(16, 4)

        def forward(self, x):
            return paddle.nn.functional.softmax(self.fc2(paddle.nn.functional.relu(self.fc1(x))))

    x = rs.uniform(-1, 1, (3, 8)).astype("float32")
    return MLP(), [_spec([None, 8], "x")], [x], "softmax(fc(relu(fc(x)))), x [N, 8]"


def jit_lenet_bn(rs):
    nn = paddle.nn

    class LeNet(nn.Layer):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2D(1, 4, 3, padding=1), nn.BatchNorm2D(4), nn.ReLU(), nn.MaxPool2D(2, 2),
                nn.Conv2D(4, 8, 3), nn.BatchNorm2D(8), nn.ReLU(), nn.MaxPool2D(2, 2))
            self.fc = nn.Linear(8 * 2 * 2, 10)

        def forward(self, x):
            return paddle.nn.functional.softmax(self.fc(paddle.flatten(self.features(x), 1)))

    x = rs.uniform(-1, 1, (2, 1, 12, 12)).astype("float32")
    return LeNet(), [_spec([None, 1, 12, 12], "img")], [x], (
        "LeNet-style: (conv2d, batch_norm, relu, max pool2d) x 2, paddle.flatten "
        "(flatten_contiguous_range), fc, softmax; img [N, 1, 12, 12]")


def jit_resnet_block(rs):
    nn = paddle.nn

    class Block(nn.Layer):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2D(4, 8, 3, stride=2, padding=1, bias_attr=False)
            self.bn1 = nn.BatchNorm2D(8)
            self.conv2 = nn.Conv2D(8, 8, 3, padding=1, bias_attr=False)
            self.bn2 = nn.BatchNorm2D(8)
            self.down = nn.Sequential(nn.Conv2D(4, 8, 1, stride=2, bias_attr=False),
                                      nn.BatchNorm2D(8))
            self.pool = nn.AdaptiveAvgPool2D(1)
            self.fc = nn.Linear(8, 5)

        def forward(self, x):
            h = paddle.nn.functional.relu(self.bn1(self.conv1(x)))
            h = paddle.nn.functional.relu(self.bn2(self.conv2(h)) + self.down(x))
            return self.fc(paddle.flatten(self.pool(h), 1))

    x = rs.uniform(-1, 1, (2, 4, 8, 8)).astype("float32")
    return Block(), [_spec([None, 4, 8, 8], "x")], [x], (
        "ResNet basic block with a strided 1x1 projection shortcut, adaptive average pool "
        "to 1x1, flatten, fc; x [N, 4, 8, 8]")


def jit_flatten(rs):
    nn = paddle.nn

    class Flat(nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(5, 3)

        def forward(self, x):
            middle = self.fc(paddle.flatten(x, start_axis=1, stop_axis=2))
            return middle, paddle.flatten(x, start_axis=2, stop_axis=-1)

    x = rs.uniform(-1, 1, (2, 3, 4, 5)).astype("float32")
    return Flat(), [_spec([None, 3, 4, 5], "x")], [x], (
        "paddle.flatten over middle axes (1..2, then an fc on the last) and over the trailing "
        "axes (2..-1); x [N, 3, 4, 5]")


def _rnn_model(cell, **kwargs):
    class Model(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.rnn = cell(**kwargs)

        def forward(self, x):
            out, state = self.rnn(x)
            return (out,) + (tuple(state) if isinstance(state, (tuple, list)) else (state,))

    return Model()


def jit_lstm(rs):
    x = rs.uniform(-1, 1, (3, 5, 4)).astype("float32")
    return _rnn_model(paddle.nn.LSTM, input_size=4, hidden_size=6), \
        [_spec([None, 5, 4], "x")], [x], (
            "paddle.nn.LSTM(4, 6), one layer (the rnn op, mode LSTM); outputs out, h, c; "
            "x [N, 5, 4]")


def jit_lstm_bidir2(rs):
    x = rs.uniform(-1, 1, (3, 5, 4)).astype("float32")
    return _rnn_model(paddle.nn.LSTM, input_size=4, hidden_size=5, num_layers=2,
                      direction="bidirect"), [_spec([None, 5, 4], "x")], [x], (
        "paddle.nn.LSTM(4, 5, num_layers=2, direction='bidirect'); outputs out, h, c; "
        "x [N, 5, 4]")


def jit_gru(rs):
    x = rs.uniform(-1, 1, (3, 5, 4)).astype("float32")
    return _rnn_model(paddle.nn.GRU, input_size=4, hidden_size=6, direction="bidirect"), \
        [_spec([None, 5, 4], "x")], [x], (
            "paddle.nn.GRU(4, 6, direction='bidirect'), one layer; outputs out, h; "
            "x [N, 5, 4]")


def jit_simple_rnn(rs):
    x = rs.uniform(-1, 1, (3, 5, 4)).astype("float32")
    return _rnn_model(paddle.nn.SimpleRNN, input_size=4, hidden_size=5, num_layers=2), \
        [_spec([None, 5, 4], "x")], [x], (
            "paddle.nn.SimpleRNN(4, 5, num_layers=2) (tanh); outputs out, h; x [N, 5, 4]")


def jit_lstm_lengths(rs):
    class Model(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.rnn = paddle.nn.LSTM(4, 6)
            self.fc = paddle.nn.Linear(6, 2)

        def forward(self, x, lengths):
            out, (h, c) = self.rnn(x, sequence_length=lengths)
            return out, self.fc(h[-1])

    x = rs.uniform(-1, 1, (3, 5, 4)).astype("float32")
    lengths = np.array([5, 2, 4], "int64")
    return Model(), [_spec([None, 5, 4], "x"), _spec([None], "lengths", "int64")], \
        [x, lengths], (
            "paddle.nn.LSTM(4, 6) over a padded batch with sequence_length (the rnn op's "
            "SequenceLength); outputs out (zero past each end) and fc(h)")


def jit_attention(rs):
    class Block(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.layer = paddle.nn.TransformerEncoderLayer(
                d_model=8, nhead=2, dim_feedforward=16, dropout=0.0, activation="gelu")

        def forward(self, x):
            return self.layer(x)

    x = rs.uniform(-1, 1, (2, 5, 8)).astype("float32")
    return Block(), [_spec([None, 5, 8], "x")], [x], (
        "paddle.nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, "
        "dropout=0, gelu): matmul_v2, softmax, layer_norm; x [N, 5, 8]")


def jit_text_lstm(rs):
    nn = paddle.nn

    class TextLSTM(nn.Layer):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(20, 8)
            self.rnn = nn.LSTM(8, 6, direction="bidirect")
            self.fc = nn.Linear(12, 3)

        def forward(self, ids):
            out, _ = self.rnn(self.embedding(ids))
            return paddle.nn.functional.softmax(self.fc(paddle.mean(out, axis=1)))

    ids = rs.randint(0, 20, (4, 7)).astype("int64")
    return TextLSTM(), [_spec([None, 7], "ids", "int64")], [ids], (
        "paddle.nn.Embedding(20, 8) (lookup_table_v2) -> bidirectional LSTM(8, 6) -> mean "
        "over time -> fc softmax; ids int64 [N, 7]")


def jit_mobile_block(rs):
    nn = paddle.nn

    class MobileBlock(nn.Layer):
        def __init__(self):
            super().__init__()
            self.expand = nn.Sequential(nn.Conv2D(3, 8, 1, bias_attr=False), nn.BatchNorm2D(8),
                                        nn.Hardswish())
            self.depthwise = nn.Sequential(
                nn.Conv2D(8, 8, 3, padding=1, groups=8, bias_attr=False), nn.BatchNorm2D(8),
                nn.Hardswish())
            self.squeeze = nn.Sequential(nn.AdaptiveAvgPool2D(1), nn.Conv2D(8, 2, 1), nn.ReLU(),
                                         nn.Conv2D(2, 8, 1), nn.Hardsigmoid())
            self.project = nn.Sequential(nn.Conv2D(8, 3, 1, bias_attr=False), nn.BatchNorm2D(3))

        def forward(self, x):
            h = self.depthwise(self.expand(x))
            return x + self.project(h * self.squeeze(h))

    x = rs.uniform(-1, 1, (2, 3, 6, 6)).astype("float32")
    return MobileBlock(), [_spec([None, 3, 6, 6], "x")], [x], (
        "MobileNetV3-style inverted residual: 1x1 conv, depthwise 3x3 conv, batch_norm, "
        "hardswish, squeeze-excite (adaptive pool, hardsigmoid, broadcast multiply), 1x1 "
        "projection and the residual add; x [N, 3, 6, 6]")


JIT_MODELS = [
    ("mlp", jit_mlp),
    ("lenet_bn", jit_lenet_bn),
    ("resnet_block", jit_resnet_block),
    ("flatten", jit_flatten),
    ("lstm", jit_lstm),
    ("lstm_bidir2", jit_lstm_bidir2),
    ("gru_bidir", jit_gru),
    ("simple_rnn2", jit_simple_rnn),
    ("lstm_lengths", jit_lstm_lengths),
    ("attention", jit_attention),
    ("text_lstm", jit_text_lstm),
    ("mobile_block", jit_mobile_block),
]


# --------------------------------------------------------------------------
# Static models, saved with paddle.static.save_inference_model. Each builder
# runs inside program_guard and returns (feed vars, fetch vars, feeds, what);
# feeds: [(array, offset LoD or None)] in the feed vars' order.
# --------------------------------------------------------------------------
def _attr(name):
    return paddle.ParamAttr(name=name, initializer=paddle.nn.initializer.Uniform(-0.5, 0.5))


def static_while_loop(rs):
    x = static.data(name="x", shape=[None, 3], dtype="float32")
    limit = static.data(name="limit", shape=[1], dtype="int64")
    i = paddle.full(shape=[1], fill_value=0, dtype="int64")

    def body(i, h):
        h = static.nn.fc(h, size=3, activation="tanh", weight_attr=_attr("step_fc.w_0"),
                         bias_attr=_attr("step_fc.b_0"))
        return [i + 1, h]

    i_out, h_out = static.nn.while_loop(lambda i, h: paddle.less_than(i, limit), body,
                                        [i, paddle.assign(x)])
    feeds = [(rs.uniform(-1, 1, (2, 3)).astype("float32"), None),
             (np.array([4], "int64"), None)]
    return [x, limit], [h_out, i_out], feeds, (
        "paddle.static.nn.while_loop: i = 0, h = x; while i < limit: h = tanh(fc(h)), "
        "i += 1 (the fc shared by every step); x [N, 3], limit int64 [1]")


def static_cond(rs):
    x = static.data(name="x", shape=[None, 4], dtype="float32")
    flag = static.data(name="flag", shape=[1], dtype="float32")
    pred = paddle.greater_than(flag, paddle.full([1], 0.0, "float32"))
    out = static.nn.cond(
        pred,
        lambda: static.nn.fc(x, 3, activation="tanh", weight_attr=_attr("true_fc.w_0"),
                             bias_attr=_attr("true_fc.b_0")),
        lambda: static.nn.fc(x, 3, activation="sigmoid", weight_attr=_attr("false_fc.w_0"),
                             bias_attr=_attr("false_fc.b_0")))
    feeds = [(rs.uniform(-1, 1, (3, 4)).astype("float32"), None),
             (np.array([-0.5], "float32"), None)]
    return [x, flag], [out], feeds, (
        "paddle.static.nn.cond(flag > 0, tanh(fc(x)), sigmoid(fc(x))) (conditional_block "
        "x 2 + select_input); x [N, 4], flag [1]")


DRNN_LENGTHS = [4, 6, 2]


def static_dynamic_rnn(rs):
    offsets = [0] + [int(o) for o in np.cumsum(DRNN_LENGTHS)]
    x = static.data(name="x", shape=[None, 4], dtype="float32", lod_level=1)
    rnn = RawDynamicRNN(static.default_main_program())
    with rnn.block():
        x_t = rnn.step_input(x)
        h_prev = rnn.memory(shape=[3], value=0.0)
        h = static.nn.fc([x_t, h_prev], size=3, activation="tanh",
                         weight_attr=[_attr("rnn_fc.w_x"), _attr("rnn_fc.w_h")],
                         bias_attr=_attr("rnn_fc.b_0"))
        rnn.update_memory(h_prev, h)
        rnn.output(h)
    seq = rnn.outputs[0]
    last = static.nn.sequence_lod.sequence_pool(seq, "last")
    prob = static.nn.fc(last, 2, activation="softmax", weight_attr=_attr("cls_fc.w_0"),
                        bias_attr=_attr("cls_fc.b_0"))
    feeds = [(rs.uniform(-1, 1, (offsets[-1], 4)).astype("float32"), [offsets])]
    return [x], [prob, seq], feeds, (
        "Fluid 1.x DynamicRNN from raw ops (lod_rank_table, lod_tensor_to_array, while with "
        "read_from_array / shrink_rnn_memory / write_to_array, array_to_lod_tensor): "
        "h = tanh(fc([x_t, h_prev])), then sequence_pool LAST and fc softmax; x [T, 4] with "
        "LoD lengths %s" % DRNN_LENGTHS)


def _raw(op_type, inputs, out_dtype, attrs=None, out_type=None):
    """Append one op of Fluid's LoD machinery, which 2.6 has no public API for; its Out."""
    block = static.default_main_program().current_block()
    kwargs = {"type": out_type} if out_type is not None else {}
    if out_dtype is not None:
        kwargs["dtype"] = out_dtype
    out = block.create_var(name=paddle.utils.unique_name.generate(op_type), **kwargs)
    block.append_op(type=op_type, inputs=inputs, outputs={"Out": [out]}, attrs=attrs or {})
    return out


def static_dynamic_rnn_by_hand(rs):
    offsets = [0] + [int(o) for o in np.cumsum(DRNN_LENGTHS)]
    x = static.data(name="x", shape=[None, 4], dtype="float32", lod_level=1)
    table = _raw("lod_rank_table", {"X": [x]}, None, {"level": 0},
                 core.VarDesc.VarType.LOD_RANK_TABLE)
    max_len = _raw("max_sequence_len", {"RankTable": [table]}, "int64")
    steps = _raw("lod_tensor_to_array", {"X": [x], "RankTable": [table]}, "float32", None,
                 core.VarDesc.VarType.LOD_TENSOR_ARRAY)
    i = paddle.zeros([1], "int64")
    memory = paddle.tensor.create_array("float32")
    first = paddle.tensor.array_read(steps, i)
    paddle.tensor.array_write(paddle.full_like(first[:, :3], 0.0), i, memory)
    outputs = paddle.tensor.create_array("float32")
    cond = paddle.less_than(i, max_len)
    loop = static.nn.control_flow.While(cond)
    with loop.block():
        x_t = paddle.tensor.array_read(steps, i)
        h_prev = _raw("shrink_rnn_memory", {"X": [paddle.tensor.array_read(memory, i)],
                                            "I": [i], "RankTable": [table]}, "float32")
        h = static.nn.fc([x_t, h_prev], size=3, activation="tanh",
                         weight_attr=[_attr("rnn_fc.w_x"), _attr("rnn_fc.w_h")],
                         bias_attr=_attr("rnn_fc.b_0"))
        paddle.tensor.array_write(h, i, outputs)
        paddle.increment(i)
        paddle.tensor.array_write(h, i, memory)
        paddle.assign(paddle.less_than(i, max_len), cond)
    seq = _raw("array_to_lod_tensor", {"X": [outputs], "RankTable": [table]}, "float32")
    last = static.nn.sequence_lod.sequence_pool(seq, "last")
    feeds = [(rs.uniform(-1, 1, (offsets[-1], 4)).astype("float32"), [offsets])]
    return [x], [last, seq], feeds, (
        "a DynamicRNN written by hand with 2.6's While, array_read / array_write, "
        "increment and assign(less_than(i, max_len), cond) (the LoD ops lod_rank_table, "
        "max_sequence_len, lod_tensor_to_array, shrink_rnn_memory, array_to_lod_tensor "
        "appended raw): h = tanh(fc([x_t, h_prev])), memory starting at full_like(x_0[:, :3], "
        "0); outputs sequence_pool LAST and the sequence; x [T, 4] with LoD lengths %s"
        % DRNN_LENGTHS)


EMB_LENGTHS = [5, 3, 1, 4]


def static_embedding_sequence(rs):
    offsets = [0] + [int(o) for o in np.cumsum(EMB_LENGTHS)]
    ids = static.data(name="ids", shape=[None], dtype="int64", lod_level=1)
    emb = static.nn.embedding(ids, size=[20, 8], param_attr=_attr("emb.w_0"))
    conv = static.nn.sequence_lod.sequence_conv(
        emb, num_filters=6, filter_size=3, act="tanh", param_attr=_attr("seq_conv.w_0"),
        bias_attr=_attr("seq_conv.b_0"))
    pooled = static.nn.sequence_lod.sequence_pool(conv, "max")
    prob = static.nn.fc(pooled, 2, activation="softmax", weight_attr=_attr("cls_fc.w_0"),
                        bias_attr=_attr("cls_fc.b_0"))
    feeds = [(rs.randint(0, 20, (offsets[-1],)).astype("int64"), [offsets])]
    return [ids], [prob], feeds, (
        "static.nn.embedding (lookup_table_v2) -> sequence_conv (3, tanh) -> sequence_pool "
        "MAX -> fc softmax; ids int64 [T] with LoD lengths %s" % EMB_LENGTHS)


STATIC_MODELS = [
    ("while_loop", static_while_loop),
    ("cond", static_cond),
    ("dynamic_rnn", static_dynamic_rnn),
    ("dynamic_rnn_by_hand", static_dynamic_rnn_by_hand),
    ("embedding_sequence", static_embedding_sequence),
]


# --------------------------------------------------------------------------
# Saving, reloading and writing.
# --------------------------------------------------------------------------
def save_jit(name, builder, out_dir):
    rs = np.random.RandomState(SEED)
    paddle.disable_static()
    try:
        paddle.seed(SEED)
        with paddle.utils.unique_name.guard():
            layer, specs, inputs, what = builder(rs)
            layer.eval()
            _randomize_stats(layer, rs)
            paddle.jit.save(layer, os.path.join(out_dir, "model"), input_spec=specs)
    finally:
        paddle.enable_static()
    info = os.path.join(out_dir, "model.pdiparams.info")
    if os.path.exists(info):  # dygraph bookkeeping, not part of the inference model
        os.remove(info)
    return [(a, None) for a in inputs], what


def save_static(name, builder, out_dir, place):
    rs = np.random.RandomState(SEED)
    main, startup = C.fresh_programs(SEED)
    with paddle.utils.unique_name.guard(), static.program_guard(main, startup):
        feed_vars, fetch_vars, feeds, what = builder(rs)
    scope = static.Scope()
    with static.scope_guard(scope):
        exe = static.Executor(place)
        exe.run(startup)
        static.save_inference_model(os.path.join(out_dir, "model"), feed_vars, fetch_vars,
                                    exe, program=main)
    return feeds, what


def lod_tensor(array, lod, place):
    t = core.LoDTensor()
    t.set(array, place)
    if lod is not None:
        t.set_lod(lod)
    return t


def run_saved(out_dir, feeds, place):
    """Paddle's outputs of the saved model, reloaded as an inference program."""
    scope = static.Scope()
    with static.scope_guard(scope):
        exe = static.Executor(place)
        program, feed_names, fetch_vars = static.load_inference_model(
            os.path.join(out_dir, "model"), exe)
        feed = {n: lod_tensor(a, lod, place) for n, (a, lod) in zip(feed_names, feeds)}
        results = exe.run(program, feed=feed, fetch_list=fetch_vars, return_numpy=False)
    outs = [(np.array(t), [list(map(int, level)) for level in t.lod()]) for t in results]
    return program, feed_names, [v.name for v in fetch_vars], outs


def generate(name, save, place):
    out_dir = C.fixture_dir(*ROOT, name, clean=True)
    feeds, what = save(out_dir)
    strip(os.path.join(out_dir, "model.pdmodel"))
    program, feed_names, fetch_names, outs = run_saved(out_dir, feeds, place)
    for k, (array, lod) in enumerate(feeds):
        np.save(os.path.join(out_dir, "feed_%d.npy" % k), array)
        if lod is not None:
            C.write_json(os.path.join(out_dir, "feed_%d.lod.json" % k), lod)
    for k, (array, lod) in enumerate(outs):
        np.save(os.path.join(out_dir, "fetch_%d.npy" % k), array)
        if lod:
            C.write_json(os.path.join(out_dir, "fetch_%d.lod.json" % k), lod)
    meta = {
        "feed_names": feed_names,
        "fetch_names": fetch_names,
        "saved_by": save.__doc__,
        "description": what,
        "op_types": C.all_op_types(program),
    }
    C.write_json(os.path.join(out_dir, "meta.json"), meta)
    return meta, out_dir


def savers(place):
    out = []
    for name, builder in JIT_MODELS:
        def save(out_dir, builder=builder, name=name):
            return save_jit(name, builder, out_dir)
        save.__doc__ = "paddle.jit.save"
        out.append((name, save))
    for name, builder in STATIC_MODELS:
        def save(out_dir, builder=builder, name=name):
            return save_static(name, builder, out_dir, place)
        save.__doc__ = "paddle.static.save_inference_model"
        out.append((name, save))
    return out


# --------------------------------------------------------------------------
# paddle2onnx, for comparison.
# --------------------------------------------------------------------------
def paddle2onnx_gives_paddles_outputs(name):
    """Convert one fixture with paddle2onnx and run it in onnxruntime: True when the
    outputs are Paddle's (the verdict is printed)."""
    import onnxruntime as ort
    import paddle2onnx

    folder = os.path.join(C.FIXTURE_ROOT, *ROOT, name)
    meta = json.load(open(os.path.join(folder, "meta.json")))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.onnx")
        try:
            paddle2onnx.export(os.path.join(folder, "model.pdmodel"),
                               os.path.join(folder, "model.pdiparams"), path,
                               opset_version=17, verbose=False)
            session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            feeds = {i.name: np.load(os.path.join(folder, "feed_%d.npy" % k))
                     for k, i in enumerate(session.get_inputs())}
            got = session.run(None, feeds)
            ok = len(got) == len(meta["fetch_names"]) and all(
                g.shape == np.load(os.path.join(folder, "fetch_%d.npy" % k)).shape and
                np.allclose(g, np.load(os.path.join(folder, "fetch_%d.npy" % k)),
                            rtol=1e-4, atol=1e-5)
                for k, g in enumerate(got))
            verdict = "equal" if ok else "different outputs"
        except Exception as exc:  # noqa: BLE001
            ok, verdict = False, "failed: " + str(exc).strip().splitlines()[-1][:160]
    print("%-20s %s" % (name, verdict), flush=True)
    return ok


def check_paddle2onnx():
    """Each fixture in its own process: paddle2onnx aborts the process on some programs."""
    import subprocess

    root = os.path.join(C.FIXTURE_ROOT, *ROOT)
    names = sorted(n for n in os.listdir(root) if os.path.isdir(os.path.join(root, n)))
    good = 0
    for name in names:
        run = subprocess.run([sys.executable, os.path.abspath(__file__), "--paddle2onnx-one",
                              name], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True)
        if run.returncode not in (0, 1):
            print("%-20s failed: the converter aborted (exit status %d)"
                  % (name, run.returncode))
        else:
            print(run.stdout.strip().splitlines()[-1])
            good += run.returncode == 0
    print("%d of %d models give Paddle's outputs through paddle2onnx" % (good, len(names)))


def main():
    args = sys.argv[1:]
    if args == ["--paddle2onnx"]:
        return check_paddle2onnx()
    if args[:1] == ["--paddle2onnx-one"]:
        sys.exit(0 if paddle2onnx_gives_paddles_outputs(args[1]) else 1)
    place = paddle.CPUPlace()
    root = C.fixture_dir(*ROOT, clean=not args)
    readme = [
        "# Paddle 2.6 inference models for the ONNX export tests",
        "",
        "Generated by `tools/paddle_fixtures/gen_onnx_models.py` with PaddlePaddle %s on "
        "CPU. Each folder: `model.pdmodel` + `model.pdiparams`, `feed_<k>.npy` "
        "(+ `feed_<k>.lod.json`, the offset LoD of a LoD input), `fetch_<k>.npy` (Paddle's "
        "outputs of the reloaded model, + `fetch_<k>.lod.json`) and `meta.json`."
        % paddle.__version__,
        "",
    ]
    for name, save in savers(place):
        if args and name not in args:
            continue
        meta, out_dir = generate(name, save, place)
        readme.append("- `%s` (%s, %d bytes): %s." % (name, meta["saved_by"],
                                                      C.dir_size(out_dir),
                                                      meta["description"]))
    readme.append("")
    if not args:
        with open(os.path.join(root, "README.md"), "w") as f:
            f.write("\n".join(readme))
    print("total bytes:", C.dir_size(root))


if __name__ == "__main__":
    main()
