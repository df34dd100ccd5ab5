"""``paddle.nn`` (Fluid 1.8's 2.0-preview layers and functions, static graph),
``paddle.compat`` and ``paddle.version``: each layer against NumPy through an Executor run,
gradients where they flow, and the argument checks."""
import numpy as np
import pytest

import fluid_nb as fluid
import fluid_nb.paddle as paddle
import fluid_nb.paddle.nn.functional as F
from fluid_nb.errors import InvalidArgument, InvalidType

RNG = np.random.RandomState(7)


def _run(build, feed, extra_fetch=()):
    """Build with fresh programs and names, run startup then main; return the fetches."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        data = {name: fluid.data(name=name, shape=list(v.shape), dtype=str(v.dtype))
                for name, v in feed.items()}
        out = build(data)
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        outs += [fetch(data, outs) for fetch in extra_fetch]
    fluid.verify(main)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    return exe.run(main, feed=feed, fetch_list=outs)


def _log_softmax(x, axis=-1):
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def _nll(x, label, weight=None, reduction="mean", ignore_index=-100):
    """The per-element losses of ``x`` [N, C, ...] at ``label`` [N, ...], reduced."""
    c = x.shape[1]
    w = np.ones(c) if weight is None else weight
    moved = np.moveaxis(x, 1, -1).reshape(-1, c)
    flat = label.reshape(-1)
    keep = flat != ignore_index
    safe = np.where(keep, flat, 0)
    wn = np.where(keep, w[safe], 0.0)
    losses = -wn * moved[np.arange(flat.size), safe]
    if reduction == "none":
        return losses.reshape(label.shape)
    if reduction == "sum":
        return np.array([losses.sum()])
    return np.array([losses.sum() / wn.sum()])


# --- activations -----------------------------------------------------------------------------
@pytest.mark.parametrize("make, reference", [
    (lambda: paddle.nn.ReLU(), lambda x: np.maximum(x, 0)),
    (lambda: paddle.nn.Sigmoid(), lambda x: 1 / (1 + np.exp(-x))),
    (lambda: paddle.nn.LogSoftmax(), _log_softmax),
    (lambda: paddle.nn.LogSoftmax(axis=0), lambda x: _log_softmax(x, 0)),
], ids=["ReLU", "Sigmoid", "LogSoftmax", "LogSoftmax_axis0"])
def test_activation_layers_match_numpy_and_their_gradient(make, reference):
    x = RNG.uniform(-1, 1, (5, 6))
    layer = make()

    def build(v):
        v["x"].stop_gradient = False
        y = layer(v["x"])
        fluid.backward.append_backward(fluid.layers.reduce_sum(fluid.layers.square(y)))
        return y

    y, dx = _run(build, {"x": x},
                 extra_fetch=[lambda v, outs: v["x"].block.var(v["x"].name + "@GRAD")])
    np.testing.assert_allclose(y, reference(x), rtol=1e-7)
    eps, numeric = 1e-6, np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        hi, lo = x.copy(), x.copy()
        hi[i] += eps
        lo[i] -= eps
        numeric[i] = ((reference(hi) ** 2).sum() - (reference(lo) ** 2).sum()) / (2 * eps)
    np.testing.assert_allclose(dx, numeric, rtol=1e-5, atol=1e-7)


def test_functional_activations_and_relu_in_place():
    x = RNG.uniform(-1, 1, (3, 4)).astype("float32")
    relu, sig, logsm = _run(lambda v: [F.relu(v["x"]), F.sigmoid(v["x"]),
                                       F.log_softmax(v["x"], axis=1, dtype="float64")],
                            {"x": x})
    np.testing.assert_allclose(relu, np.maximum(x, 0))
    np.testing.assert_allclose(sig, 1 / (1 + np.exp(-x)), rtol=1e-6)
    assert logsm.dtype == np.float64
    np.testing.assert_allclose(logsm, _log_softmax(x.astype("float64"), 1), rtol=1e-6)

    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        v = fluid.data(name="x", shape=[3, 4], dtype="float32")
        assert F.relu(v, inplace=True) is v
        assert [op.type for op in main.global_block().ops] == ["relu"]


def test_activation_checks_refuse_wrong_types():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        ints = fluid.data(name="i", shape=[2, 3], dtype="int32")
        for fn in (F.relu, F.sigmoid, F.log_softmax, paddle.nn.ReLU(), paddle.nn.Sigmoid()):
            with pytest.raises(TypeError):
                fn(ints)
        with pytest.raises(InvalidType):
            F.relu(np.ones((2, 3), "float32"))
        x = fluid.data(name="x", shape=[2, 3], dtype="float32")
        with pytest.raises(TypeError):
            F.log_softmax(x, dtype="int32")


# --- losses -------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(6, 4), (3, 4, 2, 5), (3, 4, 5), (2, 3, 2, 2, 2)],
                         ids=["1D", "2D", "3-D input", "5-D input"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True], ids=["", "weight"])
def test_nll_loss_matches_numpy(shape, reduction, weighted):
    x = RNG.uniform(-2, 0, shape)
    label = RNG.randint(0, shape[1], (shape[0],) + shape[2:]).astype("int64")
    label.reshape(-1)[0] = 1  # (never all ignored)
    label.reshape(-1)[-1] = 2  # the ignored class below
    weight = RNG.uniform(0.2, 1.0, shape[1])
    feed = {"x": x, "label": label}
    if weighted:
        feed["w"] = weight
    loss = paddle.nn.NLLLoss(reduction=reduction, ignore_index=2)  # made outside a program

    (got,) = _run(lambda v: paddle.nn.NLLLoss(weight=v.get("w"), reduction=reduction,
                                               ignore_index=2)(v["x"], v["label"]), feed)
    want = _nll(x, label, weight if weighted else None, reduction, ignore_index=2)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-10)
    assert loss.reduction == reduction


def test_nll_loss_after_log_softmax_trains_its_input_gradient():
    x = RNG.uniform(-1, 1, (4, 3))
    label = np.array([0, 2, 1, 2], "int64")

    def build(v):
        v["x"].stop_gradient = False
        loss = paddle.nn.NLLLoss()(F.log_softmax(v["x"]), v["label"])
        fluid.backward.append_backward(loss)
        return loss

    loss, dx = _run(build, {"x": x, "label": label},
                    extra_fetch=[lambda v, outs: v["x"].block.var(v["x"].name + "@GRAD")])
    p = np.exp(_log_softmax(x))
    onehot = np.eye(3)[label]
    np.testing.assert_allclose(loss, [-(np.log(p) * onehot).sum() / 4], rtol=1e-10)
    np.testing.assert_allclose(dx, (p - onehot) / 4, rtol=1e-8)


def test_bce_l1_mse_and_cross_entropy_losses_match_numpy():
    p = RNG.uniform(0.05, 0.95, (5, 3))
    y = RNG.randint(0, 2, (5, 3)).astype("float64")
    w = RNG.uniform(0.5, 1.5, (5, 3))
    bce = -(y * np.log(p) + (1 - y) * np.log(1 - p))
    for reduction, reduce in (("mean", np.mean), ("sum", np.sum), ("none", lambda a: a)):
        got = _run(lambda v: [paddle.nn.BCELoss(reduction=reduction)(v["p"], v["y"]),
                              paddle.nn.BCELoss(v["w"], reduction)(v["p"], v["y"]),
                              paddle.nn.L1Loss(reduction)(v["p"], v["y"])],
                   {"p": p, "y": y, "w": w})
        np.testing.assert_allclose(np.asarray(got[0]).reshape(-1),
                                   np.ravel(reduce(bce)), rtol=1e-10)
        np.testing.assert_allclose(np.asarray(got[1]).reshape(-1),
                                   np.ravel(reduce(bce * w)), rtol=1e-10)
        np.testing.assert_allclose(np.asarray(got[2]).reshape(-1),
                                   np.ravel(reduce(np.abs(p - y))), rtol=1e-10)
        a, b = p.astype("float32"), y.astype("float32")
        (mse,) = _run(lambda v: paddle.nn.MSELoss(reduction)(v["a"], v["b"]), {"a": a, "b": b})
        np.testing.assert_allclose(np.asarray(mse).reshape(-1),
                                   np.ravel(reduce((a - b) ** 2)), rtol=1e-5)

    logits = RNG.uniform(-1, 1, (4, 5))
    label = RNG.randint(0, 5, (4, 1)).astype("int64")
    cw = RNG.uniform(0.5, 1.5, 5)
    log_p = _log_softmax(logits)[np.arange(4), label[:, 0]]
    plain, weighted = _run(
        lambda v: [paddle.nn.CrossEntropyLoss(reduction="sum")(v["x"], v["l"]),
                   paddle.nn.CrossEntropyLoss(v["w"], "none")(v["x"], v["l"])],
        {"x": logits, "l": label, "w": cw})
    np.testing.assert_allclose(plain, [-log_p.sum()], rtol=1e-10)
    np.testing.assert_allclose(weighted.reshape(-1), -cw[label[:, 0]] * log_p, rtol=1e-10)


def test_loss_argument_checks():
    for make in (lambda: paddle.nn.BCELoss(reduction="avg"),
                 lambda: paddle.nn.L1Loss(reduction="max"),
                 lambda: paddle.nn.MSELoss(reduction="")):
        with pytest.raises(ValueError):
            make()
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data(name="x", shape=[4, 3], dtype="float64")
        x1 = fluid.data(name="x1", shape=[4], dtype="float64")
        label = fluid.data(name="label", shape=[4], dtype="int64")
        label32 = fluid.data(name="label32", shape=[4], dtype="int32")
        # NLLLoss and CrossEntropyLoss check their reduction at the call, as Fluid 1.8
        with pytest.raises(InvalidArgument):
            paddle.nn.NLLLoss(reduction="avg")(x, label)
        with pytest.raises(InvalidArgument):
            paddle.nn.CrossEntropyLoss(reduction="avg")(x, label)
        with pytest.raises(TypeError):
            paddle.nn.NLLLoss()(x, label32)
        with pytest.raises(TypeError):
            paddle.nn.NLLLoss()(label, label)
        with pytest.raises(ValueError):
            paddle.nn.NLLLoss()(x1, label)
        with pytest.raises(TypeError):
            paddle.nn.NLLLoss(weight=np.ones(3))(x, label)
        with pytest.raises(TypeError):
            paddle.nn.MSELoss()(x, x)  # float32 only
        with pytest.raises(TypeError):
            paddle.nn.BCELoss()(label, label)


# --- layers with parameters, extension functions ------------------------------------------------
def test_hsigmoid_layer_and_function_agree_with_numpy():
    feature, classes = 4, 6
    x = RNG.uniform(-1, 1, (3, feature)).astype("float32")
    label = np.array([[0], [3], [5]], "int64")
    w = RNG.uniform(-1, 1, (classes - 1, feature)).astype("float32")
    b = RNG.uniform(-1, 1, (classes - 1, 1)).astype("float32")
    attr = fluid.ParamAttr(initializer=fluid.initializer.NumpyArrayInitializer(w))
    battr = fluid.ParamAttr(initializer=fluid.initializer.NumpyArrayInitializer(b))
    layer_out, fn_out = _run(
        lambda v: [paddle.nn.HSigmoid(feature, classes, attr, battr)(v["x"], v["label"]),
                   F.hsigmoid(v["x"], v["label"], v["w"], v["b"], classes)],
        {"x": x, "label": label, "w": w, "b": b})

    def cost(xi, c):  # the default tree: node ids and codes from the code c + num_classes
        code, total, steps = c + classes, 0.0, 0
        while code > 1:
            node, bit = (code >> 1) - 1, code & 1
            pre = np.clip(w[node] @ xi + b[node, 0], -40, 40)
            total += np.log1p(np.exp(pre)) - bit * pre
            code >>= 1
            steps += 1
        # a path shorter than the widest pays log 2 per missing step (pre = 0)
        return total + ((classes - 1).bit_length() - steps) * np.log(2.0)
    want = np.array([[cost(x[i], label[i, 0])] for i in range(3)])
    np.testing.assert_allclose(fn_out, want, rtol=1e-5)
    np.testing.assert_allclose(layer_out, want, rtol=1e-5)
    with pytest.raises(ValueError):
        paddle.nn.HSigmoid(feature, 1)


def test_row_conv_instance_norm_and_diag_embed_match_numpy():
    x = RNG.uniform(-1, 1, (2, 5, 3)).astype("float32")
    w = RNG.uniform(-1, 1, (3, 3)).astype("float32")
    attr = fluid.ParamAttr(initializer=fluid.initializer.NumpyArrayInitializer(w))
    by_fn, by_layer = _run(lambda v: [F.row_conv(v["x"], v["w"]),
                                      paddle.nn.RowConv(3, 2, attr)(v["x"])],
                           {"x": x, "w": w})
    want = np.zeros_like(x)
    for t in range(5):
        for i in range(3):
            if t + i < 5:
                want[:, t] += x[:, t + i] * w[i]
    np.testing.assert_allclose(by_fn, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(by_layer, want, rtol=1e-5, atol=1e-6)

    img = RNG.uniform(-1, 1, (2, 3, 4, 4)).astype("float32")
    (normed,) = _run(lambda v: paddle.nn.InstanceNorm(3)(v["img"]), {"img": img})
    mean = img.mean(axis=(2, 3), keepdims=True)
    np.testing.assert_allclose(normed, (img - mean) / np.sqrt(img.var(axis=(2, 3),
                                                                     keepdims=True) + 1e-5),
                               rtol=1e-4, atol=1e-5)

    d = RNG.uniform(-1, 1, (2, 3)).astype("float32")
    e0, e1 = _run(lambda v: [F.diag_embed(v["d"]), F.diag_embed(v["d"], offset=1)], {"d": d})
    np.testing.assert_allclose(e0, np.stack([np.diag(r) for r in d]))
    np.testing.assert_allclose(e1, np.stack([np.diag(r, 1) for r in d]))


def test_interpolate_resizes_and_refuses_bad_arguments():
    img = RNG.uniform(-1, 1, (1, 2, 3, 3)).astype("float32")
    (out,) = _run(lambda v: F.interpolate(v["img"], out_shape=[6, 6], resample="NEAREST",
                                          align_corners=False), {"img": img})
    np.testing.assert_allclose(out, img.repeat(2, axis=2).repeat(2, axis=3))
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data(name="x", shape=[1, 2, 3, 3], dtype="float32")
        with pytest.raises(TypeError):
            F.interpolate(img, out_shape=[6, 6])
        with pytest.raises(ValueError):
            F.interpolate(x, out_shape=[6, 6], resample="LINEAR")
        with pytest.raises(ValueError):
            F.interpolate(x, out_shape=[6])
        with pytest.raises(TypeError):
            F.interpolate(x, out_shape=[6, 6], align_corners=1)
        with pytest.raises(TypeError):
            F.interpolate(x, scale=np.array([2.0], "float32"))
        with pytest.raises(TypeError):
            F.interpolate(x, out_shape=[6, 6], actual_shape=[6, 6])


@pytest.mark.parametrize("n, transpose, data_format", [
    (2, False, "NCHW"), (2, False, "NHWC"), (3, False, "NCDHW"), (2, True, "NCHW"),
    (3, True, "NDHWC")])
def test_convolutions_agree_with_fluid_layers_and_the_layer_classes(n, transpose,
                                                                    data_format):
    channels, filters, groups = 4, 6, 2
    spatial = (5, 6) if n == 2 else (3, 4, 5)
    last = data_format.endswith("C")
    shape = (2,) + spatial + (channels,) if last else (2, channels) + spatial
    x = RNG.uniform(-1, 1, shape).astype("float32")
    k = (3,) * n
    wshape = ((channels, filters // groups) if transpose else (filters, channels // groups)) + k
    w = RNG.uniform(-1, 1, wshape).astype("float32")
    b = RNG.uniform(-1, 1, (filters,)).astype("float32")
    opts = dict(padding=1, stride=2, groups=groups, act="relu", data_format=data_format)
    name = f"conv{n}d" + ("_transpose" if transpose else "")
    fn = getattr(F, name)
    layer_cls = getattr(paddle.nn, f"Conv{n}D" + ("Transpose" if transpose else ""))
    init = fluid.initializer.NumpyArrayInitializer

    def build(v):
        by_fn = fn(v["x"], v["w"], v["b"], **opts)
        by_layer = layer_cls(channels, filters, 3, param_attr=fluid.ParamAttr(initializer=init(w)),
                             bias_attr=fluid.ParamAttr(initializer=init(b)), **opts)(v["x"])
        by_fluid = getattr(fluid.layers, name)(
            v["x"], filters, filter_size=3, param_attr=fluid.ParamAttr(initializer=init(w)),
            bias_attr=fluid.ParamAttr(initializer=init(b)), **opts)
        return [by_fn, by_layer, by_fluid]

    by_fn, by_layer, by_fluid = _run(build, {"x": x, "w": w, "b": b})
    assert by_fn.shape == by_fluid.shape and by_fn.min() >= 0
    np.testing.assert_allclose(by_fn, by_fluid, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(by_layer, by_fluid, rtol=1e-5, atol=1e-6)


def test_convolution_argument_checks():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data(name="x", shape=[-1, 3, 8, 8], dtype="float32")
        w = fluid.data(name="w", shape=[4, 3, 3, 3], dtype="float32")
        for bad in (dict(padding="middle"), dict(padding=[[1, 1], [0, 0], [1, 1], [1, 1]]),
                    dict(padding=[1, 2, 3]), dict(data_format="CHWN"),
                    dict(use_cudnn="yes"), dict(groups=2)):
            with pytest.raises(ValueError):
                F.conv2d(x, w, **bad)
        with pytest.raises(ValueError):
            F.conv2d_transpose(x, w, output_size="big")
        with pytest.raises(TypeError):
            F.conv2d(x, np.ones((4, 3, 3, 3), "float32"))
        with pytest.raises(ValueError):
            paddle.nn.Conv2D(3, 4, 3, groups=2)
        with pytest.raises(ValueError):
            paddle.nn.Conv3D(3, 4, 3, param_attr=False)
        with pytest.raises(ValueError):
            paddle.nn.Conv2DTranspose(3, 4, 3, output_size="big")


# --- the Layer base --------------------------------------------------------------------------
class Affine(paddle.nn.Layer):
    def __init__(self, size):
        super().__init__()
        self.weight = self.create_parameter([size], default_initializer=
                                            fluid.initializer.ConstantInitializer(2.0))
        self.bias = self.create_parameter([size], is_bias=True)
        self.act = paddle.nn.ReLU()

    def forward(self, x):
        return self.act(fluid.layers.elementwise_add(
            fluid.layers.elementwise_mul(x, self.weight), self.bias))


def test_a_derived_layer_registers_parameters_and_builds_ops_per_call():
    x = np.array([[-1.0, 0.5, 2.0]], "float32")
    seen = []

    def build(v):
        layer = Affine(3)
        assert layer.full_name() == "affine_0"
        assert [name for name, _ in layer.named_parameters()] == ["weight", "bias"]
        assert [p.name for p in layer.parameters()] == ["affine_0.w_0", "affine_0.b_0"]
        assert list(layer.state_dict()) == ["weight", "bias"]
        assert layer.sublayers() == [layer.act]
        layer.register_forward_post_hook(lambda lyr, inputs, out: seen.append(out))
        handle = layer.register_forward_pre_hook(lambda lyr, inputs: seen.append("pre"))
        first = layer(v["x"])
        handle.remove()
        return [first, layer(v["x"])]  # a second call shares the parameters

    first, second = _run(build, {"x": x})
    np.testing.assert_allclose(first, np.maximum(2 * x, 0))
    np.testing.assert_allclose(second, first)
    assert seen[0] == "pre" and len(seen) == 3
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        layer = Affine(2)
    layer.eval()
    assert not layer.training and not layer.act.training
    with pytest.raises(TypeError):
        layer.weight = np.ones(2)
    with pytest.raises(NotImplementedError):
        paddle.nn.Layer()(1)


# --- compat and version ----------------------------------------------------------------------
def test_compat_and_version_report_what_fluid_nb_is():
    assert paddle.compat.long_type is int and paddle.compat.long_type(3.0) == 3
    assert "long_type" in paddle.compat.__all__
    version = paddle.version
    assert version.full_version == fluid.FLUID_VERSION
    assert version.full_version == ".".join([version.major, version.minor, version.patch])
    assert version.rc == "0" and version.istaged is False
    assert version.mkl() == version.with_mkl == "OFF"
    assert isinstance(version.commit, str) and version.commit
    import fluid_nb.paddle.version as same
    assert same is version


# --- live mode and training ------------------------------------------------------------------
def test_layers_give_values_at_once_in_live_mode():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard(), \
            fluid.live(program=main, startup_program=startup, scope=fluid.Scope()):
        x = fluid.layers.data(name="x", shape=[2, 3, 5, 5], append_batch_size=False,
                              value=np.ones((2, 3, 5, 5), "float32"))
        conv = paddle.nn.Conv2D(3, 4, 3, param_attr=fluid.ParamAttr(
            initializer=fluid.initializer.ConstantInitializer(0.5)))
        y = conv(x)  # the new parameters' startup ops ran first
        loss = paddle.nn.MSELoss()(y, fluid.layers.zeros_like(y))
        np.testing.assert_allclose(y.numpy(), np.full((2, 4, 3, 3), 27 * 0.5))
        np.testing.assert_allclose(loss.numpy(), [13.5 ** 2])


def test_a_layers_parameters_train_with_an_optimizer():
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (16, 3)).astype("float32")
    label = (x @ np.array([1.0, -2.0, 0.5], "float32"))[:, None] > 0

    class Logistic(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.weight = self.create_parameter([3, 1])
            self.sigmoid = paddle.nn.Sigmoid()

        def forward(self, inputs):
            return self.sigmoid(fluid.layers.matmul(inputs, self.weight))

    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        xv = fluid.data(name="x", shape=[-1, 3], dtype="float32")
        yv = fluid.data(name="y", shape=[-1, 1], dtype="float32")
        model = Logistic()
        loss = paddle.nn.BCELoss()(model(xv), yv)
        fluid.optimizer.SGD(learning_rate=1.0,
                            parameter_list=model.parameters()).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    feed = {"x": x, "y": label.astype("float32")}
    losses = [exe.run(main, feed=feed, fetch_list=[loss])[0][0] for _ in range(30)]
    assert losses[-1] < 0.5 * losses[0]
