"""fluid.nets compositions: the layers each builds (as Fluid 1.8 does) and their values
against NumPy."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument


def _run(build, feed):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 2
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        outputs = build()
    fluid.verify(main)
    scope, exe = fluid.Scope(), fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    values = exe.run(main, feed=feed, fetch_list=list(outputs), scope=scope)
    return main, scope, values


def _softmax(a):
    e = np.exp(a - a.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_sequence_conv_pool_is_a_sequence_conv_then_a_pool():
    data = np.random.RandomState(0).rand(7, 4).astype("float32")

    def build():
        x = fluid.layers.data(name="x", shape=[4], dtype="float32", lod_level=1)
        return (fluid.nets.sequence_conv_pool(x, num_filters=3, filter_size=3,
                                              act="tanh", pool_type="sqrt"),)

    main, scope, (out,) = _run(build, {"x": fluid.create_lod_tensor(data, [[4, 3]],
                                                                   fluid.CPUPlace())})
    types = [op.type for op in main.global_block().ops]
    assert types == ["sequence_conv", "elementwise_add", "tanh", "sequence_pool"]
    w = np.asarray(scope.find_var("sequence_conv_0.w_0").get_tensor())
    b = np.asarray(scope.find_var("sequence_conv_0.b_0").get_tensor())
    want = []
    for seq in (data[:4], data[4:]):
        padded = np.concatenate([np.zeros((1, 4)), seq, np.zeros((1, 4))])
        context = np.stack([padded[t:t + 3].reshape(-1) for t in range(len(seq))])
        conv = np.tanh(context @ w + b)
        want.append(conv.sum(0) / np.sqrt(len(seq)))
    np.testing.assert_allclose(out, np.array(want), rtol=1e-5, atol=1e-6)


def test_glu_gates_one_half_with_the_other():
    data = np.random.RandomState(1).randn(3, 6).astype("float32")

    def build():
        x = fluid.data(name="x", shape=[3, 6], dtype="float32")
        return (fluid.nets.glu(x, dim=1),)

    _, _, (out,) = _run(build, {"x": data})
    np.testing.assert_allclose(out, data[:, :3] / (1 + np.exp(-data[:, 3:])), rtol=1e-5)


def test_single_head_attention_is_softmax_of_scaled_products():
    rng = np.random.RandomState(2)
    q, k, v = (rng.randn(2, n, 4).astype("float32") for n in (3, 5, 5))

    def build():
        qs = fluid.data(name="q", shape=[2, 3, 4], dtype="float32")
        ks = fluid.data(name="k", shape=[2, 5, 4], dtype="float32")
        vs = fluid.data(name="v", shape=[2, 5, 4], dtype="float32")
        return (fluid.nets.scaled_dot_product_attention(qs, ks, vs),)

    _, _, (out,) = _run(build, {"q": q, "k": k, "v": v})
    want = _softmax(q @ k.transpose(0, 2, 1) / 2.0) @ v
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


def test_multi_head_attention_projects_splits_and_joins():
    rng = np.random.RandomState(3)
    q, k = rng.randn(2, 3, 4).astype("float32"), rng.randn(2, 5, 4).astype("float32")
    v = rng.randn(2, 5, 6).astype("float32")

    def build():
        qs = fluid.data(name="q", shape=[-1, 3, 4], dtype="float32")
        ks = fluid.data(name="k", shape=[-1, 5, 4], dtype="float32")
        vs = fluid.data(name="v", shape=[-1, 5, 6], dtype="float32")
        return (fluid.nets.scaled_dot_product_attention(qs, ks, vs, num_heads=2),)

    main, scope, (out,) = _run(build, {"q": q, "k": k, "v": v})
    assert out.shape == (2, 3, 6)

    def proj(x, i):
        w = np.asarray(scope.find_var(f"fc_{i}.w_0").get_tensor())
        b = np.asarray(scope.find_var(f"fc_{i}.b_0").get_tensor())
        return x @ w + b

    def heads(x):
        n, length, hidden = x.shape
        return x.reshape(n, length, 2, hidden // 2).transpose(0, 2, 1, 3)

    qh, kh, vh = heads(proj(q, 0)), heads(proj(k, 1)), heads(proj(v, 2))
    ctx = _softmax(qh @ kh.transpose(0, 1, 3, 2) / np.sqrt(2)) @ vh
    want = ctx.transpose(0, 2, 1, 3).reshape(2, 3, 6)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shapes,heads,words", [
    ([[2, 3, 4], [2, 5, 3], [2, 5, 4]], 1, "hidden size"),
    ([[2, 3, 4], [2, 5, 4], [2, 4, 4]], 1, "length"),
    ([[2, 3, 4], [2, 5, 4], [2, 5, 4]], 3, "multiple of num_heads"),
    ([[2, 4], [2, 4], [2, 4]], 1, "3-D"),
])
def test_attention_refuses_mismatched_shapes(shapes, heads, words):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        q, k, v = (fluid.data(name=n, shape=s, dtype="float32")
                   for n, s in zip("qkv", shapes))
        with pytest.raises(InvalidArgument, match=words):
            fluid.nets.scaled_dot_product_attention(q, k, v, num_heads=heads)
    assert not main.global_block().ops


def test_nets_refuse_integer_input_as_a_type_error():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64", lod_level=1)
        with pytest.raises(TypeError, match="sequence_conv_pool: input"):
            fluid.nets.sequence_conv_pool(ids, num_filters=2, filter_size=3)
