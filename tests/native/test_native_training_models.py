"""The training steps of a convolutional network and of a Transformer encoder compile whole
and train as the interpreter does.

Every op of a ResNet-style step has native code (convolutions and their gradients, batch
norm with the batch's statistics and its gradient, pooling, the loss, the metrics, the
optimizer), in NCHW and NHWC; every op of a Transformer encoder's step has native code but
a training dropout's random mask, which the interpreter draws between the compiled runs.
In float64 the compiled steps keep every parameter and statistic the interpreter's to
rounding."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.rewriters import native

from tests.browser.study_models import encoder, resnet_training

STEPS = 4


def _convnet(layout, dtype="float64"):
    """Two residual convolutions with batch norm, a strided convolution with a bias, max and
    global average pooling, softmax, cross entropy, accuracy (top-k) and Momentum."""
    nhwc = layout == "NHWC"
    shape = [-1, 8, 8, 3] if nhwc else [-1, 3, 8, 8]
    images = fluid.data(name="images", shape=shape, dtype=dtype)
    label = fluid.data(name="label", shape=[-1, 1], dtype="int64")

    def conv(x, channels, stride=1, bias=False):
        return fluid.layers.conv2d(x, channels, 3, stride=stride, padding=1,
                                   bias_attr=None if bias else False, data_format=layout)

    def norm(x, act=None):
        return fluid.layers.batch_norm(x, act=act, data_layout=layout)

    h = norm(conv(images, 4), act="relu")
    h = fluid.layers.elementwise_add(norm(conv(h, 4)), h, act="relu")
    h = conv(h, 6, stride=2, bias=True)
    h = fluid.layers.pool2d(h, pool_size=2, pool_type="max", pool_stride=2, data_format=layout)
    h = fluid.layers.pool2d(h, pool_type="avg", global_pooling=True, data_format=layout)
    predict = fluid.layers.fc(h, size=3, act="softmax")
    loss = fluid.layers.mean(fluid.layers.cross_entropy(input=predict, label=label))
    fluid.layers.accuracy(input=predict, label=label, k=2)
    fluid.optimizer.Momentum(learning_rate=0.05, momentum=0.9).minimize(loss)
    return loss


def _transformer(dtype="float64"):
    """Two encoder layers (attention through reshape, transpose and matmul, layer norm,
    a feed-forward block) over an embedding, a mean over the sequence and Adam; dropout
    at rate 0 keeps its training form (a drawn mask) but draws all ones."""
    words = fluid.data(name="words", shape=[-1, 6, 1], dtype="int64")
    label = fluid.data(name="label", shape=[-1, 1], dtype="int64")
    emb = fluid.layers.embedding(input=words, size=[20, 8], dtype=dtype)
    emb = fluid.layers.reshape(emb, shape=[0, 6, 8])
    pooled = fluid.layers.reduce_mean(encoder(emb, 2, 8, 2, 16, 0.0), dim=1)
    predict = fluid.layers.fc(input=pooled, size=2, act="softmax")
    loss = fluid.layers.mean(fluid.layers.cross_entropy(input=predict, label=label))
    fluid.optimizer.Adam(learning_rate=0.01).minimize(loss)
    return loss


def _programs(build, *args):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        loss = build(*args)
    return main, startup, loss


def _conv_feeds(layout):
    rng = np.random.RandomState(1)
    shape = (4, 8, 8, 3) if layout == "NHWC" else (4, 3, 8, 8)
    return [{"images": rng.uniform(-1, 1, shape).astype("float64"),
             "label": rng.randint(0, 3, (4, 1)).astype("int64")} for _ in range(STEPS)]


def _text_feeds():
    rng = np.random.RandomState(2)
    return [{"words": rng.randint(0, 20, (3, 6, 1)).astype("int64"),
             "label": rng.randint(0, 2, (3, 1)).astype("int64")} for _ in range(STEPS)]


def _train_both(main, startup, loss, feeds):
    """(interpreter's losses, compiled losses, the two scopes) after the same steps from
    the same start."""
    exe = fluid.Executor(fluid.CPUPlace())
    interpreted, compiled = fluid.Scope(), fluid.Scope()
    exe.run(startup, scope=interpreted)
    exe.run(startup, scope=compiled)
    program = native.compile(main, feed=feeds[0], fetch_list=[loss], scope=compiled)
    want = [exe.run(main, feed=f, fetch_list=[loss], scope=interpreted)[0] for f in feeds]
    got = [exe.run(program, feed=f, fetch_list=[loss], scope=compiled)[0] for f in feeds]
    return program, want, got, interpreted, compiled


def _assert_same_state(main, interpreted, compiled):
    names = [v.name for v in main.list_vars() if v.persistable and v.name not in
             ("feed", "fetch")]
    assert len(names) > 10
    for name in names:
        want = np.asarray(interpreted.find_var(name).get_tensor())
        got = np.asarray(compiled.find_var(name).get_tensor())
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_a_convolutional_step_compiles_whole_and_trains_as_the_interpreter(layout):
    main, startup, loss = _programs(_convnet, layout)
    program, want, got, interpreted, compiled = _train_both(main, startup, loss,
                                                            _conv_feeds(layout))
    assert program.source.fallbacks == []
    types = set(program.source.op_types.values())
    assert {"conv2d_grad", "batch_norm_grad", "pool2d_grad", "top_k", "accuracy",
            "cross_entropy_grad2", "momentum"} <= types
    np.testing.assert_allclose(np.ravel(got), np.ravel(want), rtol=1e-9)
    # (the weights moved: a step that did nothing would agree as well)
    assert not np.allclose(want[0], want[-1])
    _assert_same_state(main, interpreted, compiled)


def test_a_transformer_step_leaves_only_the_drawn_dropout_masks_to_the_interpreter():
    main, startup, loss = _programs(_transformer)
    program, want, got, interpreted, compiled = _train_both(main, startup, loss,
                                                            _text_feeds())
    assert {op_type for _, op_type, _ in program.source.fallbacks} == {"dropout"}
    types = set(program.source.op_types.values())
    assert {"matmul_grad", "transpose2_grad", "reshape2_grad", "layer_norm_grad",
            "lookup_table_grad", "reduce_mean_grad", "dropout_grad", "adam"} <= types
    np.testing.assert_allclose(np.ravel(got), np.ravel(want), rtol=1e-9)
    assert not np.allclose(want[0], want[-1])
    _assert_same_state(main, interpreted, compiled)


def test_the_study_resnet_step_compiles_whole():
    main, startup, loss = resnet_training(8, with_startup=True)
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    rng = np.random.RandomState(0)
    feed = {"pixel": rng.rand(2, 3, 32, 32).astype("float32"),
            "label": rng.randint(0, 10, (2, 1)).astype("int64")}
    source = native.generate(main, feed=feed, fetch=[loss], scope=scope)
    assert source.fallbacks == []
    assert len(source.functions) == len(main.global_block().ops)
