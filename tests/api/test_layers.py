"""fluid.layers builds Paddle's programs: same op types, slots and names as the real Paddle
fixture programs, and forward passes that agree with NumPy."""
import os

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb import layers, nets
from fluid_nb.errors import InvalidArgument
from fluid_nb.api.layer_helper import LayerHelper
from fluid_nb.api.param_attr import ParamAttr

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "paddle")
TRAINING = os.path.join(FIXTURES, "training")
INFERENCE = os.path.join(FIXTURES, "inference")


def load_program(path):
    with open(path, "rb") as f:
        return fluid.Program.parse_from_string(f.read())


def build(fn, seed=0):
    """Run ``fn()`` under fresh main/startup programs and names; return (main, startup,
    fn's result)."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = seed
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        out = fn()
    return main, startup, out


def forward_ops(program):
    """Ops before the backward pass (Paddle's loss-grad fill_constant and *_grad ops)."""
    ops = []
    for op in program.global_block().ops:
        if op.type == "fill_constant" or op.type.endswith("_grad"):
            break
        ops.append(op)
    return ops


def op_signature(op):
    return (op.type, {k: list(v) for k, v in op.inputs.items() if v},
            {k: list(v) for k, v in op.outputs.items() if v})


def run(main, startup, feed, fetch, scope=None):
    scope = scope if scope is not None else fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    return exe.run(main, feed=feed, fetch_list=fetch, scope=scope), scope


def param(scope, name):
    return np.array(scope.find_var(name).get_tensor())


# --- programs equal to Paddle's ------------------------------------------------------------
def fit_a_line():
    x = layers.data(name="x", shape=[13], dtype="float32")
    y = layers.data(name="y", shape=[1], dtype="float32")
    pred = layers.fc(input=x, size=1)
    return layers.mean(layers.square_error_cost(input=pred, label=y))


def mlp():
    x = layers.data(name="x", shape=[784], dtype="float32")
    label = layers.data(name="label", shape=[1], dtype="int64")
    h = layers.fc(input=x, size=128, act="relu")
    h = layers.fc(input=h, size=64, act="relu")
    prob = layers.fc(input=h, size=10, act="softmax")
    return prob, label


def test_fit_a_line_forward_program_matches_paddle():
    ref = load_program(os.path.join(TRAINING, "fit_a_line_sgd", "main.pdmodel"))
    main, _, loss = build(fit_a_line, seed=90)
    assert [op_signature(op) for op in main.global_block().ops] == \
        [op_signature(op) for op in forward_ops(ref)]
    assert loss.name == "mean_0.tmp_0"
    for op, ref_op in zip(main.global_block().ops, forward_ops(ref)):
        for name in ("axis", "x_num_col_dims", "y_num_col_dims"):
            if name in ref_op.attrs:
                assert op.attrs[name] == ref_op.attrs[name], (op.type, name)


def test_fit_a_line_variables_and_parameters_match_paddle():
    ref = load_program(os.path.join(TRAINING, "fit_a_line_sgd", "main.pdmodel"))
    main, _, _ = build(fit_a_line, seed=90)
    ref_vars = {v.name: v for v in ref.list_vars() if v.name != "learning_rate_0"
                and "@GRAD" not in v.name}
    ours = {v.name: v for v in main.list_vars()}
    assert sorted(ours) == sorted(ref_vars)
    for name, var in ours.items():
        want = ref_vars[name]
        assert var.is_parameter == want.is_parameter, name
        assert var.persistable == want.persistable, name
        assert var.dtype == want.dtype, name
        # Paddle 2.6 builds its scalars 0-D; Fluid 1.x, whose API this is, built them [1]
        want_shape = (1,) if tuple(want.shape) == () else tuple(want.shape)
        assert tuple(var.shape) == want_shape, name


def test_fit_a_line_startup_program_matches_paddle():
    ref = load_program(os.path.join(TRAINING, "fit_a_line_sgd", "startup.pdmodel"))
    _, startup, _ = build(fit_a_line, seed=90)
    ref_ops = [op for op in ref.global_block().ops if op.output("Out") != ["learning_rate_0"]]
    ops = startup.global_block().ops
    assert [op_signature(op) for op in ops] == [op_signature(op) for op in ref_ops]
    for op, ref_op in zip(ops, ref_ops):
        for name in ("shape", "dtype", "seed", "value"):
            if name in ref_op.attrs:
                assert op.attrs[name] == ref_op.attrs[name], (op.type, name)
        for name in ("min", "max"):
            if name in ref_op.attrs:
                assert op.attrs[name] == pytest.approx(ref_op.attrs[name], rel=1e-6)
    for name in ("fc_0.w_0", "fc_0.b_0"):
        var = startup.global_block().var(name)
        assert var.persistable and var.is_parameter


def test_mlp_forward_program_matches_paddle():
    """Up to the loss: Paddle's fixture appends a raw ``cross_entropy`` op; Fluid 1.x's
    hard-label layer appends ``cross_entropy2``, so that op is compared by hand."""
    ref = load_program(os.path.join(TRAINING, "mlp_sgd", "main.pdmodel"))
    ref_ops = forward_ops(ref)

    def net():
        prob, label = mlp()
        return layers.mean(layers.cross_entropy(input=prob, label=label))

    main, startup, loss = build(net, seed=90)
    ops = main.global_block().ops
    assert [op_signature(op) for op in ops[:9]] == [op_signature(op) for op in ref_ops[:9]]
    ce = ops[9]
    assert ce.type == "cross_entropy2"
    assert ce.input("X") == ref_ops[9].input("X") and ce.input("Label") == ["label"]
    assert sorted(ce.outputs) == ["MatchX", "XShape", "Y"]
    assert ops[10].type == "mean" and ops[10].input("X") == ce.output("Y")
    params = sorted((p.name, tuple(p.shape)) for p in main.all_parameters())
    ref_params = sorted((p.name, tuple(p.shape)) for p in ref.all_parameters())
    assert params == ref_params
    assert [op.type for op in startup.global_block().ops] == \
        ["uniform_random", "fill_constant"] * 3


def test_soft_label_cross_entropy_uses_cross_entropy_op():
    def net():
        prob = layers.data("p", [4])
        label = layers.data("l", [4])
        return layers.cross_entropy(prob, label, soft_label=True)
    main, _, out = build(net)
    op = main.global_block().ops[-1]
    assert op.type == "cross_entropy" and op.attrs["soft_label"] is True
    assert out.name == "cross_entropy_0.tmp_0"


def test_data_layer_shapes_and_flags():
    def net():
        return (layers.data("a", [3, 4]), layers.data("b", [-1, 5]),
                layers.data("c", [None, 2], append_batch_size=True),
                layers.data("d", [1], dtype="int64", lod_level=1),
                layers.data("e", [2], value=np.ones((1, 2), "float32")))
    main, _, (a, b, c, d, e) = build(net)
    assert a.shape == (-1, 3, 4) and b.shape == (-1, 5) and c.shape == (-1, 2)
    assert d.lod_level == 1 and d.dtype == fluid.core.VarDesc.VarType.INT64
    assert a.stop_gradient and a.is_data and not a.need_check_feed
    assert e._sample_value.shape == (1, 2)
    assert main.global_block().ops == []


# --- forward passes against NumPy ------------------------------------------------------------
def test_fit_a_line_forward_matches_numpy():
    main, startup, loss = build(fit_a_line, seed=90)
    rs = np.random.RandomState(0)
    x = rs.uniform(-1, 1, (5, 13)).astype("float32")
    y = rs.uniform(-1, 1, (5, 1)).astype("float32")
    (got,), scope = run(main, startup, {"x": x, "y": y}, [loss])
    w, b = param(scope, "fc_0.w_0"), param(scope, "fc_0.b_0")
    limit = np.sqrt(6.0 / 14)
    assert np.all(np.abs(w) <= limit) and np.all(b == 0) and w.std() > 0
    np.testing.assert_allclose(got, np.mean((x @ w + b - y) ** 2), rtol=1e-5)


def test_mlp_forward_and_accuracy_match_numpy():
    def net():
        prob, label = mlp()
        loss = layers.mean(layers.cross_entropy(input=prob, label=label))
        return prob, loss, layers.accuracy(input=prob, label=label)
    main, startup, (prob, loss, acc) = build(net, seed=3)
    rs = np.random.RandomState(1)
    x = rs.uniform(0, 1, (6, 784)).astype("float32")
    label = rs.randint(0, 10, (6, 1)).astype("int64")
    (p, l, a), scope = run(main, startup, {"x": x, "label": label}, [prob, loss, acc])
    h = x
    for i, act in enumerate(["relu", "relu", "softmax"]):
        h = h @ param(scope, f"fc_{i}.w_0") + param(scope, f"fc_{i}.b_0")
        if act == "relu":
            h = np.maximum(h, 0)
        else:
            e = np.exp(h - h.max(1, keepdims=True))
            h = e / e.sum(1, keepdims=True)
    np.testing.assert_allclose(p, h, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(l, np.mean(-np.log(h[np.arange(6), label[:, 0]])), rtol=1e-4)
    np.testing.assert_allclose(a, np.mean(h.argmax(1) == label[:, 0]), rtol=1e-6)


@pytest.mark.parametrize("model", ["mlp", "linreg", "cnn"])
def test_inference_fixture_rebuilt_with_layers_gives_paddles_output(model):
    """The fixture networks rebuilt with fluid.layers take Paddle's saved parameters by
    name and reproduce Paddle's outputs."""
    def net():
        if model == "mlp":
            x = layers.data("x", [8])
            h = layers.fc(layers.fc(x, 16, act="relu"), 16, act="relu")
            return layers.fc(h, 4, act="softmax")
        if model == "linreg":
            return layers.fc(layers.data("x", [13]), 1)
        img = layers.data("img", [1, 8, 8])
        c = layers.conv2d(img, num_filters=4, filter_size=3, padding=1)
        r = layers.relu(layers.batch_norm(c, is_test=True))
        p = layers.pool2d(r, pool_size=2, pool_type="max", pool_stride=2)
        return layers.fc(p, 10, act="softmax")
    main, startup, out = build(net)
    folder = os.path.join(INFERENCE, model)
    feed_name = main.global_block().ops[0].input_arg_names[0]
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        fluid.io.load_params(exe, os.path.join(folder, "separate"), main_program=main)
        got = exe.run(main, feed={feed_name: np.load(os.path.join(folder, "input.npy"))},
                      fetch_list=[out])[0]
    np.testing.assert_allclose(got, np.load(os.path.join(folder, "expected.npy")),
                               rtol=1e-4, atol=1e-5)


def test_cnn_program_matches_paddle_inference_fixture():
    ref = load_program(os.path.join(INFERENCE, "cnn", "combined", "model.pdmodel"))

    def net():
        img = layers.data("img", [1, 8, 8])
        c = layers.conv2d(img, num_filters=4, filter_size=3, padding=1)
        return layers.batch_norm(c)
    main, startup, _ = build(net)
    ops = main.global_block().ops
    ref_ops = [op for op in ref.global_block().ops if op.type != "feed"][:3]
    assert [op.type for op in ops] == [op.type for op in ref_ops]
    assert ops[0].inputs == {"Input": ("img",), "Filter": ("conv2d_0.w_0",)}
    for name in ("strides", "paddings", "dilations", "groups", "padding_algorithm"):
        assert ops[0].attrs[name] == ref_ops[0].attrs[name], name
    bn, ref_bn = ops[2], ref_ops[2]
    for slot in ("X", "Scale", "Bias", "Mean", "Variance"):
        assert bn.input(slot) == ref_bn.input(slot), slot
    for slot in ("MeanOut", "VarianceOut", "SavedMean", "SavedVariance"):
        assert bn.output(slot) == ref_bn.output(slot), slot
    mean = main.global_block().var("batch_norm_0.w_1")
    assert mean.persistable and not mean.trainable and mean.stop_gradient
    init = {op.output("Out")[0]: op for op in startup.global_block().ops}
    assert init["conv2d_0.w_0"].type == "gaussian_random"
    assert init["conv2d_0.w_0"].attrs["std"] == pytest.approx((2.0 / 9) ** 0.5)
    assert [init[f"batch_norm_0.{n}"].attrs["value"] for n in ("w_0", "b_0", "w_1", "w_2")] \
        == [1.0, 0.0, 0.0, 1.0]


# --- individual layers -------------------------------------------------------------------------
def _conv_ref(x, w, b, pad):
    n, c, h, wd = x.shape
    f, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = np.zeros((n, f, h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1))
    for i in range(out.shape[2]):
        for j in range(out.shape[3]):
            patch = xp[:, :, i:i + kh, j:j + kw]
            out[:, :, i, j] = np.tensordot(patch, w, axes=([1, 2, 3], [1, 2, 3]))
    return out + b.reshape(1, -1, 1, 1)


def test_simple_img_conv_pool_matches_numpy():
    def net():
        img = layers.data("img", [2, 6, 6])
        return nets.simple_img_conv_pool(img, num_filters=3, filter_size=3, pool_size=2,
                                         pool_stride=2, act="relu", conv_padding=1)
    main, startup, out = build(net, seed=5)
    assert [op.type for op in main.global_block().ops] == \
        ["conv2d", "elementwise_add", "relu", "pool2d"]
    x = np.random.RandomState(2).randn(2, 2, 6, 6).astype("float32")
    (got,), scope = run(main, startup, {"img": x}, [out])
    conv = np.maximum(_conv_ref(x, param(scope, "conv2d_0.w_0"),
                                param(scope, "conv2d_0.b_0"), 1), 0)
    want = conv.reshape(2, 3, 3, 2, 3, 2).max(axis=(3, 5))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_depthwise_conv_chosen_like_fluid():
    def net():
        img = layers.data("img", [4, 5, 5])
        a = layers.conv2d(img, 8, 3, groups=4, use_cudnn=False)
        b = layers.conv2d(img, 8, 3, groups=4)
        return a, b
    main, _, _ = build(net)
    types = [op.type for op in main.global_block().ops if "conv" in op.type]
    assert types == ["depthwise_conv2d", "conv2d"]
    assert main.global_block().var("depthwise_conv2d_0.w_0").shape == (8, 1, 3, 3)


def test_fc_with_two_inputs_sums_and_names_each_weight():
    def net():
        a, b = layers.data("a", [3]), layers.data("b", [2, 2])
        return layers.fc([a, b], size=4, act="tanh", bias_attr=False)
    main, startup, out = build(net)
    ops = main.global_block().ops
    assert [op.type for op in ops] == ["mul", "mul", "sum", "tanh"]
    assert ops[2].input("X") == ["fc_0.tmp_0", "fc_0.tmp_1"]
    assert [p.name for p in main.all_parameters()] == ["fc_0.w_0", "fc_0.w_1"]
    assert main.global_block().var("fc_0.w_1").shape == (4, 4)
    a = np.ones((2, 3), "float32")
    b = np.full((2, 2, 2), 2, "float32")
    (got,), scope = run(main, startup, {"a": a, "b": b}, [out])
    want = np.tanh(a @ param(scope, "fc_0.w_0") + b.reshape(2, 4) @ param(scope, "fc_0.w_1"))
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_fc_param_attr_names_initializer_and_sharing():
    def net():
        x = layers.data("x", [2])
        attr = ParamAttr(name="shared_w", initializer=fluid.initializer.Constant(0.5),
                         learning_rate=0.1)
        a = layers.fc(x, 3, param_attr=attr, bias_attr=False, name="first")
        b = layers.fc(x, 3, param_attr=attr, bias_attr=False)
        return a, b
    main, startup, (a, b) = build(net)
    assert a.name == "first.tmp_0" and b.name == "fc_0.tmp_0"
    assert [p.name for p in main.all_parameters()] == ["shared_w"]
    assert main.global_block().var("shared_w").optimize_attr["learning_rate"] == 0.1
    assert [op.type for op in startup.global_block().ops] == ["fill_constant"]  # once
    (got_a, got_b), _ = run(main, startup, {"x": np.ones((1, 2), "float32")}, [a, b])
    np.testing.assert_allclose(got_a, [[1.0, 1.0, 1.0]])
    np.testing.assert_allclose(got_b, got_a)


def test_embedding_uses_lookup_table_and_padding_idx():
    def net():
        ids = layers.data("ids", [1], dtype="int64")
        return layers.embedding(ids, size=[10, 3], padding_idx=-1)
    main, startup, out = build(net)
    op = main.global_block().ops[0]
    assert op.type == "lookup_table" and op.attrs["padding_idx"] == 9
    assert op.inputs == {"Ids": ("ids",), "W": ("embedding_0.w_0",)}
    ids = np.array([[1], [9], [3]], "int64")
    (got,), scope = run(main, startup, {"ids": ids}, [out])
    table = param(scope, "embedding_0.w_0")
    np.testing.assert_allclose(got, np.stack([table[1], np.zeros(3), table[3]]))


def test_batch_norm_and_layer_norm_training_forward():
    def net():
        x = layers.data("x", [3, 2, 2])
        bn = layers.batch_norm(x, act="relu")
        ln = layers.layer_norm(layers.data("y", [6]), begin_norm_axis=1)
        return bn, ln
    main, startup, (bn, ln) = build(net)
    bn_op = next(op for op in main.global_block().ops if op.type == "batch_norm")
    assert bn_op.output("Y") == ["batch_norm_0.tmp_2"]
    assert bn_op.output("MeanOut") == bn_op.input("Mean") == ["batch_norm_0.w_1"]
    rs = np.random.RandomState(4)
    x = rs.randn(4, 3, 2, 2).astype("float32")
    y = rs.randn(5, 6).astype("float32")
    (got_bn, got_ln), scope = run(main, startup, {"x": x, "y": y}, [bn, ln])
    mu, var = x.mean(axis=(0, 2, 3), keepdims=True), x.var(axis=(0, 2, 3), keepdims=True)
    np.testing.assert_allclose(got_bn, np.maximum((x - mu) / np.sqrt(var + 1e-5), 0),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(param(scope, "batch_norm_0.w_1"), 0.1 * mu.reshape(-1),
                               rtol=1e-4, atol=1e-6)
    want_ln = (y - y.mean(1, keepdims=True)) / np.sqrt(y.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(got_ln, want_ln, rtol=1e-4, atol=1e-5)


def test_dropout_test_mode_scales_and_takes_program_seed():
    def net():
        x = layers.data("x", [4])
        return layers.dropout(x, 0.25, is_test=True), layers.dropout(x, 0.5)
    main, startup, (a, b) = build(net, seed=7)
    ops = main.global_block().ops
    assert ops[1].attrs["seed"] == 7 and ops[1].attrs["fix_seed"]
    x = np.ones((2, 4), "float32")
    (got, _), _ = run(main, startup, {"x": x}, [a, b])
    np.testing.assert_allclose(got, x * 0.75)


def test_shape_layers_match_numpy():
    def net():
        x = layers.data("x", [2, 3], append_batch_size=False)
        return [layers.reshape(x, [3, -1]), layers.transpose(x, [1, 0]),
                layers.unsqueeze(x, [0]), layers.squeeze(layers.unsqueeze(x, [1]), [1]),
                layers.concat([x, x], axis=1), layers.stack([x, x], axis=0),
                layers.slice(x, axes=[1], starts=[1], ends=[3]),
                layers.gather(x, layers.assign(np.array([1, 0], "int32"))),
                *layers.split(layers.concat([x, x], axis=1), 3, dim=1),
                layers.reduce_sum(x), layers.reduce_mean(x, dim=1, keep_dim=True),
                layers.reduce_max(x, dim=[0]), layers.reduce_min(x, dim=-1),
                layers.argmax(x, axis=1), layers.cast(x, "int64"),
                layers.sums([x, x]), layers.scale(x, 2.0, 1.0),
                layers.clip(x, 1.0, 4.0), layers.matmul(x, x, transpose_y=True),
                layers.mul(x, layers.transpose(x, [1, 0])),
                layers.elementwise_max(x, layers.fill_constant([3], "float32", 2.5)),
                layers.elementwise_pow(x, layers.fill_constant([1], "float32", 2.0)),
                layers.topk(x, 2)[0], layers.softmax(x), layers.leaky_relu(x - 3.0, 0.1)]
    main, startup, outs = build(net)
    x = np.arange(6, dtype="float32").reshape(2, 3)
    got, _ = run(main, startup, {"x": x}, outs)
    xx = np.concatenate([x, x], 1)
    e = np.exp(x - x.max(1, keepdims=True))
    want = [x.reshape(3, 2), x.T, x[None], x, xx, np.stack([x, x]), x[:, 1:3], x[[1, 0]],
            xx[:, :2], xx[:, 2:4], xx[:, 4:], x.sum(), x.mean(1, keepdims=True), x.max(0),
            x.min(-1), x.argmax(1), x.astype("int64"), 2 * x, 2 * x + 1, np.clip(x, 1, 4),
            x @ x.T, x @ x.T, np.maximum(x, 2.5), x ** 2, -np.sort(-x, 1)[:, :2],
            e / e.sum(1, keepdims=True), np.where(x - 3 > 0, x - 3, 0.1 * (x - 3))]
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(np.asarray(g).reshape(np.shape(w)), w, rtol=1e-5,
                                   err_msg=f"output {i}")


def test_creation_layers():
    def net():
        x = layers.data("x", [3], append_batch_size=False)
        g = layers.create_global_var([2], 3.0, "float32", persistable=True, name="gv")
        counter = layers.fill_constant([1], "int64", 0)
        layers.increment(counter, 2)
        p = layers.create_parameter([2, 2], "float32", name="cp",
                                    default_initializer=fluid.initializer.Constant(1.5))
        return [layers.zeros([2], "int32"), layers.ones([1, 2], "float32"),
                layers.zeros_like(x), layers.ones_like(x), g, counter, p,
                layers.assign(np.array([[1.5, 2.5]], "float32")),
                layers.less_than(x, layers.ones_like(x)),
                layers.one_hot(layers.assign(np.array([[0], [2]], "int64")), depth=3)]
    main, startup, outs = build(net)
    assert layers.create_tensor is not None
    assert startup.global_block().var("gv").persistable
    got, _ = run(main, startup, {"x": np.array([0.5, 1.0, 2.0], "float32")}, outs)
    want = [np.zeros(2), np.ones((1, 2)), np.zeros(3), np.ones(3), np.full(2, 3.0), [2],
            np.full((2, 2), 1.5), [[1.5, 2.5]], [True, False, False], np.eye(3)[[0, 2]]]
    for i, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(np.asarray(g, dtype="float64"), np.asarray(w, "float64"),
                                   err_msg=f"output {i}")
    assert got[0].dtype == np.int32 and got[5].dtype == np.int64
    assert got[-1].shape == (2, 3)


def test_random_layers_have_requested_shape_and_range():
    def net():
        return (layers.uniform_random([50, 4], min=2.0, max=3.0, seed=1),
                layers.gaussian_random([2000], mean=1.0, std=0.5, seed=2))
    main, startup, outs = build(net)
    (u, g), _ = run(main, startup, {}, list(outs))
    assert u.shape == (50, 4) and u.min() >= 2.0 and u.max() < 3.0
    assert abs(g.mean() - 1.0) < 0.05 and abs(g.std() - 0.5) < 0.05


def test_softmax_with_cross_entropy_matches_numpy():
    def net():
        logits = layers.data("logits", [4])
        label = layers.data("label", [1], dtype="int64")
        return layers.softmax_with_cross_entropy(logits, label, return_softmax=True)
    main, startup, (loss, sm) = build(net)
    assert main.global_block().ops[0].outputs == {
        "Softmax": ("softmax_with_cross_entropy_0.tmp_0",),
        "Loss": ("softmax_with_cross_entropy_0.tmp_1",)}
    z = np.random.RandomState(3).randn(3, 4).astype("float32")
    y = np.array([[0], [3], [1]], "int64")
    (got_loss, got_sm), _ = run(main, startup, {"logits": z, "label": y}, [loss, sm])
    e = np.exp(z - z.max(1, keepdims=True))
    p = e / e.sum(1, keepdims=True)
    np.testing.assert_allclose(got_sm, p, rtol=1e-5)
    np.testing.assert_allclose(got_loss[:, 0], -np.log(p[np.arange(3), y[:, 0]]), rtol=1e-5)


# --- Python operators on Variable ----------------------------------------------------------------
def test_variable_operators_build_fluid_ops_and_compute():
    def net():
        x = layers.data("x", [3], append_batch_size=False)
        y = layers.data("y", [3], append_batch_size=False)
        return [x + y, x - y, x * y, x / y, x + 1, x - 1, 2 - x, x * 3, 3 * x, x / 2, 2 / x,
                -x, x ** 2, x @ y, x < y, x >= y, x == y, x != y, x.astype("int32")]
    main, startup, outs = build(net)
    types = [op.type for op in main.global_block().ops]
    assert types[:4] == ["elementwise_add", "elementwise_sub", "elementwise_mul",
                         "elementwise_div"]
    assert types[4:6] == ["scale", "scale"]
    assert outs[0].name.startswith("tmp_")
    x = np.array([1.0, 2.0, 4.0], "float32")
    y = np.array([2.0, 2.0, 1.0], "float32")
    got, _ = run(main, startup, {"x": x, "y": y}, outs)
    want = [x + y, x - y, x * y, x / y, x + 1, x - 1, 2 - x, x * 3, 3 * x, x / 2, 2 / x, -x,
            x ** 2, x @ y, x < y, x >= y, x == y, x != y, x.astype("int32")]
    for i, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(np.asarray(g, "float64").reshape(np.shape(w)),
                                   np.asarray(w, "float64"), rtol=1e-6, err_msg=f"output {i}")
    assert got[14].dtype == np.bool_


def test_variables_stay_hashable_and_compare_with_none():
    main, _, x = build(lambda: layers.data("x", [3]))
    assert {x: 1}[x] == 1
    assert (x == None) is False  # noqa: E711


# --- LayerHelper and errors -----------------------------------------------------------------------
def test_layer_helper_names_and_bias_false():
    def net():
        helper = LayerHelper("my_layer", bias_attr=False, act="sigmoid")
        x = layers.data("x", [2])
        w = helper.create_parameter(attr=None, shape=[2, 2], dtype="float32")
        tmp = helper.create_variable_for_type_inference("float32")
        assert helper.append_bias_op(x) is x
        return helper.name, w, tmp, helper.append_activation(x)
    main, startup, (name, w, tmp, act) = build(net)
    assert name == "my_layer_0" and w.name == "my_layer_0.w_0"
    assert tmp.name == "my_layer_0.tmp_0" and act.name == "my_layer_0.tmp_1"
    assert main.global_block().ops[-1].type == "sigmoid"
    assert startup.global_block().ops[0].type == "uniform_random"


@pytest.mark.parametrize("make, message", [
    (lambda: layers.fc(layers.data("x", [3]), 2, num_flatten_dims=2), "fc"),
    (lambda: layers.conv2d(layers.data("x", [3, 4, 4]), 2, 3, padding="FULL"), "conv2d"),
    (lambda: layers.pool2d(layers.data("x", [3, 4, 4]), pool_type="min", pool_size=2),
     "pool2d"),
    (lambda: layers.split(layers.data("x", [5]), 2, dim=1), "split"),
    (lambda: layers.reshape(layers.data("x", [4]), [-1, -1]), "reshape"),
    (lambda: layers.fc(layers.data("x", [3]), 2, act=3), "fc"),
    (lambda: layers.mean("x"), "mean"),
    (lambda: layers.fc([layers.data("a", [3]), layers.data("b", [3], dtype="int64")], 2),
     "fc"),
])
def test_bad_arguments_raise_invalid_argument_naming_the_layer(make, message):
    with pytest.raises(InvalidArgument, match=message):
        build(make)


def test_fill_constant_batch_size_like_takes_the_batch_from_its_input():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.layers.data("x", [5], dtype="float32")
        filled = fluid.layers.fill_constant_batch_size_like(x, shape=[-1, 3], dtype="int64",
                                                             value=7)
    assert filled.shape == (-1, 3) and filled.stop_gradient
    fluid.verify(main)
    (got,) = fluid.Executor(fluid.CPUPlace()).run(
        main, feed={"x": np.zeros((4, 5), "float32")}, fetch_list=[filled], scope=fluid.Scope())
    np.testing.assert_array_equal(got, np.full((4, 3), 7, "int64"))


@pytest.mark.parametrize("call", [
    lambda x: fluid.layers.fc(input=x, size="3"),
    lambda x: fluid.layers.fc(input=[x, "y"], size=3),
    lambda x: fluid.layers.fc(input=x, size=3, act=5),
    lambda x: fluid.layers.dropout(x, dropout_prob="0.5"),
    lambda x: fluid.layers.reshape(x, shape="3"),
    lambda x: fluid.layers.fc(x, 3, 1, None, None, None, False, None, "extra"),
], ids=["size_str", "input_list_with_str", "act_int", "prob_str", "shape_str", "too_many"])
def test_an_argument_of_the_wrong_type_is_a_type_error_as_in_fluid(call):
    """Fluid raises TypeError for wrong argument types, and scripts catch it; the error is
    also an InvalidArgument in the project's format."""
    from fluid_nb.errors import InvalidArgument, InvalidType
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[4], dtype="float32")
        with pytest.raises(TypeError) as info:
            call(x)
    assert isinstance(info.value, InvalidType) and isinstance(info.value, InvalidArgument)
    assert " expected " in str(info.value) and ", but received " in str(info.value)
    assert len(main.global_block().ops) == 0


@pytest.mark.parametrize("call", [
    lambda x: fluid.layers.fc(input=x, size=0),
    lambda x: fluid.layers.fc(input=x, size=2.5),
    lambda x: fluid.layers.dropout(x, dropout_prob=1.5),
    lambda x: fluid.layers.fc(input=x, size=3, act="nope"),
], ids=["size_zero", "size_fraction", "prob_above_one", "act_unknown"])
def test_an_argument_of_the_right_type_but_a_wrong_value_is_not_a_type_error(call):
    from fluid_nb.errors import InvalidArgument
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[4], dtype="float32")
        with pytest.raises(InvalidArgument) as info:
            call(x)
    assert not isinstance(info.value, TypeError)


@pytest.mark.parametrize("op_type", fluid.layers.ops._ACTIVATIONS)
def test_every_activation_layer_builds_and_runs(op_type):
    """Each one-op activation layer of fluid.layers appends its op and runs it, with the
    input's shape and dtype (values: the op tables of tests/ops/test_activation.py)."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[3], dtype="float32")
        out = getattr(fluid.layers, op_type)(x)
    assert [op.type for op in main.global_block().ops] == [op_type]
    value = np.array([[0.25, 0.5, 1.5]], "float32")
    (got,) = fluid.Executor(fluid.CPUPlace()).run(main, feed={"x": value}, fetch_list=[out])
    assert got.shape == (1, 3) and got.dtype == np.float32 and np.all(np.isfinite(got))
