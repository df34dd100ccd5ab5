"""``paddle.tensor`` (Fluid 1.8's 2.0-preview tensor functions) against NumPy, run as static
programs by an Executor, and the type and dtype errors they raise."""
import numpy as np
import pytest

import fluid_nb as fluid
import fluid_nb.paddle as paddle

RNG = np.random.RandomState(7)
A = RNG.uniform(0.1, 1.0, (3, 4)).astype("float32")
B = RNG.uniform(0.1, 1.0, (3, 4)).astype("float32")


def _run(build, **feeds):
    """Build ``build(*vars)`` over data vars named as ``feeds``; run; return the values and
    the program."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        vs = [fluid.data(name=k, shape=list(v.shape), dtype=str(v.dtype))
              for k, v in feeds.items()]
        outs = build(*vs)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    fluid.verify(main)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    return exe.run(main, feed=feeds, fetch_list=outs), main


def _one(build, **feeds):
    values, _ = _run(build, **feeds)
    return values[0]


@pytest.mark.parametrize("fn, reference", [
    (paddle.sin, np.sin), (paddle.sqrt, np.sqrt), (paddle.tanh, np.tanh),
    (paddle.atan, np.arctan), (paddle.log1p, np.log1p),
])
def test_elementwise_functions_match_numpy(fn, reference):
    np.testing.assert_allclose(_one(fn, x=A), reference(A), rtol=1e-6)


def test_out_receives_the_result_and_name_names_it():
    def build(x):
        out = fluid.data(name="out", shape=[3, 4], dtype="float32")
        res = paddle.sin(x, out=out)
        assert res is out
        named = paddle.sqrt(x, name="root")
        assert named.name.startswith("root")
        return res, named
    (sin, root), _ = _run(build, x=A)
    np.testing.assert_allclose(sin, np.sin(A), rtol=1e-6)
    np.testing.assert_allclose(root, np.sqrt(A), rtol=1e-6)


def test_add_scales_y_by_alpha_and_div_broadcasts():
    row = B[0].copy()
    add, div = _run(lambda x, y: (paddle.add(x, y, alpha=2), paddle.div(x, y)),
                    x=A, y=row)[0]
    np.testing.assert_allclose(add, A + 2 * row, rtol=1e-6)
    np.testing.assert_allclose(div, A / row, rtol=1e-6)


def test_mul_mm_matmul_bmm_and_addmm():
    w = RNG.rand(4, 5).astype("float32")
    got = _run(lambda x, w: (paddle.mul(x, w), paddle.mm(x, w),
                             paddle.matmul(x, x, transpose_y=True, alpha=0.5),
                             paddle.t(x)), x=A, w=w)[0]
    np.testing.assert_allclose(got[0], A @ w, rtol=1e-5)
    np.testing.assert_allclose(got[1], A @ w, rtol=1e-5)
    np.testing.assert_allclose(got[2], 0.5 * A @ A.T, rtol=1e-5)
    np.testing.assert_allclose(got[3], A.T)
    x3 = RNG.rand(2, 3, 4).astype("float64")
    y3 = RNG.rand(2, 4, 5).astype("float64")
    np.testing.assert_allclose(_one(paddle.bmm, x=x3, y=y3), x3 @ y3)
    inp = RNG.rand(3, 5).astype("float64")
    x = RNG.rand(3, 4).astype("float64")
    y = RNG.rand(4, 5).astype("float64")
    got = _one(lambda i, x, y: paddle.addmm(i, x, y, alpha=2.0, beta=0.5), i=inp, x=x, y=y)
    np.testing.assert_allclose(got, 0.5 * inp + 2.0 * x @ y)


def test_sum_max_min_over_dims_and_a_wider_sum_dtype():
    got, main = _run(lambda x: (paddle.sum(x), paddle.sum(x, dim=1, keep_dim=True),
                                paddle.max(x, dim=[0]), paddle.min(x, dim=-1),
                                paddle.sum(x, dtype="float64")), x=A)
    np.testing.assert_allclose(got[0], [A.sum()], rtol=1e-5)
    np.testing.assert_allclose(got[1], A.sum(1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(got[2], A.max(0))
    np.testing.assert_allclose(got[3], A.min(-1))
    assert got[4].dtype == np.float64
    assert [op.type for op in main.global_block().ops if op.type.startswith("reduce")] == \
        ["reduce_sum", "reduce_sum", "reduce_max", "reduce_min", "reduce_sum"]
    with pytest.raises(ValueError, match="dtype expected 'float64' or 'int64'"):
        _run(lambda x: paddle.sum(x, dtype="int32"), x=A)


def test_elementwise_sum_logsumexp_addcmul_and_pow():
    got = _run(lambda x, y: (paddle.elementwise_sum([x, y, x]),
                             paddle.logsumexp(x, dim=1),
                             paddle.addcmul(x, x, y, value=0.5),
                             paddle.pow(x, 3.0)), x=A, y=B)[0]
    np.testing.assert_allclose(got[0], 2 * A + B, rtol=1e-6)
    np.testing.assert_allclose(got[1], np.log(np.exp(A).sum(1)), rtol=1e-5)
    np.testing.assert_allclose(got[2], A + 0.5 * A * B, rtol=1e-6)
    np.testing.assert_allclose(got[3], A ** 3, rtol=1e-5)


def test_addcmul_value_must_match_the_input_kind():
    with pytest.raises(TypeError, match="addcmul: value expected float"):
        _run(lambda x: paddle.addcmul(x, x, x, value=1), x=A)
    ints = np.arange(6, dtype="int32").reshape(2, 3)
    got = _one(lambda x: paddle.addcmul(x, x, x, value=2), x=ints)
    np.testing.assert_array_equal(got, ints + 2 * ints * ints)


def test_creation_functions():
    def build():
        return (paddle.full([2, 3], 1.5), paddle.ones([2], dtype="int64"),
                paddle.zeros([3], "float64"), paddle.eye(3, 2, dtype="int32"),
                paddle.arange(1, 7, 2, dtype="int64"), paddle.linspace(0, 1, 5, "float64"))
    full, ones, zeros, eye, arange, linspace = _run(build)[0]
    np.testing.assert_array_equal(full, np.full([2, 3], 1.5, "float32"))
    assert ones.dtype == np.int64 and ones.tolist() == [1, 1]
    assert zeros.dtype == np.float64 and zeros.tolist() == [0, 0, 0]
    np.testing.assert_array_equal(eye, np.eye(3, 2, dtype="int32"))
    np.testing.assert_array_equal(arange, [1, 3, 5])
    np.testing.assert_allclose(linspace, np.linspace(0, 1, 5))


def test_like_functions_take_the_shape_and_their_dtype():
    got = _run(lambda x: (paddle.full_like(x, 7.0), paddle.ones_like(x),
                          paddle.zeros_like(x, dtype="int64")), x=A)[0]
    np.testing.assert_array_equal(got[0], np.full_like(A, 7.0))
    np.testing.assert_array_equal(got[1], np.ones_like(A))
    assert got[2].dtype == np.int64 and not got[2].any()


def test_tril_triu_and_meshgrid():
    m = RNG.rand(2, 4, 5)
    lo, up = _run(lambda x: (paddle.tensor.tril(x, -1), paddle.tensor.triu(x, 2)), x=m)[0]
    np.testing.assert_array_equal(lo, np.tril(m, -1))
    np.testing.assert_array_equal(up, np.triu(m, 2))
    a, b = np.arange(3.0), np.arange(4.0)
    ga, gb = _run(lambda a, b: paddle.tensor.meshgrid([a, b]), a=a, b=b)[0]
    want_a, want_b = np.meshgrid(a, b, indexing="ij")
    np.testing.assert_array_equal(ga, want_a)
    np.testing.assert_array_equal(gb, want_b)


def test_tril_refuses_a_vector_and_a_non_int_diagonal():
    with pytest.raises(ValueError, match="tril: input expected a tensor of rank 2"):
        _run(lambda x: paddle.tensor.tril(x), x=np.zeros(3))
    with pytest.raises(TypeError, match="triu: diagonal expected an int"):
        _run(lambda x: paddle.tensor.triu(x, diagonal=1.5), x=np.zeros((2, 2)))


def test_norms_and_dist():
    got = _run(lambda x, y: (paddle.norm(x), paddle.norm(x, p=1, axis=0),
                             paddle.norm(x, p=3), paddle.norm(x, p="fro", axis=[0, 1]),
                             paddle.dist(x, y, p=2)), x=A, y=B)[0]
    np.testing.assert_allclose(got[0], [np.sqrt((A ** 2).sum())], rtol=1e-5)
    np.testing.assert_allclose(got[1], np.abs(A).sum(0), rtol=1e-5)
    np.testing.assert_allclose(got[2], (np.abs(A) ** 3).sum(-1) ** (1 / 3), rtol=1e-5)
    np.testing.assert_allclose(got[3].reshape(-1), [np.linalg.norm(A)], rtol=1e-5)
    np.testing.assert_allclose(got[4], [np.linalg.norm(A - B)], rtol=1e-5)


def test_norm_refuses_what_it_does_not_compute():
    for kwargs in ({"p": "nuc"}, {"p": [1]}, {"p": [1], "axis": -1},
                   {"p": "nuc", "axis": [0, 1]}, {"axis": [0, 1, 2]}):
        with pytest.raises(ValueError, match="norm: "):
            _run(lambda x: paddle.norm(x, **kwargs), x=A)
    with pytest.raises(TypeError, match="dtype expected one of float32, float64"):
        _run(lambda x: paddle.norm(x), x=np.ones((2, 2), "int64"))


def test_dot_cross_flip_roll_index_select_and_index_sample():
    v = RNG.rand(2, 3)
    w = RNG.rand(2, 3)
    idx = np.array([2, 0], "int64")
    got = _run(lambda v, w, i: (paddle.dot(v, w), paddle.cross(v, w, dim=1),
                                paddle.flip(v, dims=[1]), paddle.roll(v, shifts=1, dims=1),
                                paddle.index_select(v, i, dim=1),
                                paddle.index_sample(v, fluid.layers.reshape(
                                    fluid.layers.concat([i, i]), [2, 2]))),
               v=v, w=w, i=idx)[0]
    np.testing.assert_allclose(got[0].reshape(-1), (v * w).sum(1))
    np.testing.assert_allclose(got[1], np.cross(v, w, axis=1))
    np.testing.assert_array_equal(got[2], v[:, ::-1])
    np.testing.assert_array_equal(got[3], np.roll(v, 1, axis=1))
    np.testing.assert_array_equal(got[4], v[:, idx])
    pairs = np.array([[2, 0], [2, 0]])
    np.testing.assert_array_equal(got[5], np.take_along_axis(v, pairs, axis=1))


def test_search_argmax_sort_where_nonzero():
    cond = A > 0.5
    got = _run(lambda x, y, c: (paddle.argmax(x, axis=1), paddle.argmax(x, dtype="int32"),
                                *paddle.sort(x, axis=0, descending=True),
                                paddle.where(c, x, y)), x=A, y=B, c=cond)[0]
    np.testing.assert_array_equal(got[0], A.argmax(1))
    assert got[1].dtype == np.int32
    np.testing.assert_array_equal(got[2], -np.sort(-A, axis=0))
    np.testing.assert_array_equal(got[3], np.argsort(-A, axis=0, kind="stable"))
    np.testing.assert_array_equal(got[4], np.where(cond, A, B))
    m = np.array([[0.0, 1.0], [2.0, 0.0]], "float32")
    coords, rows, cols = _run(lambda x: (paddle.nonzero(x),
                                         *paddle.nonzero(x, as_tuple=True)), x=m)[0]
    np.testing.assert_array_equal(coords, np.argwhere(m))
    np.testing.assert_array_equal(rows.reshape(-1), np.nonzero(m)[0])
    np.testing.assert_array_equal(cols.reshape(-1), np.nonzero(m)[1])


def test_where_broadcasts_x_and_y_of_different_shapes():
    cond = A > 0.5
    row = B[:1]
    got = _one(lambda c, x, y: paddle.where(c, x, y), c=cond, x=A, y=row)
    np.testing.assert_allclose(got, np.where(cond, A, row))


def test_logic_equal_allclose_elementwise_equal():
    got = _run(lambda x, y: (paddle.equal(x, x), paddle.equal(x, y),
                             paddle.allclose(x, x + 1e-9), paddle.elementwise_equal(x, y)),
               x=A, y=B)[0]
    assert got[0].tolist() == [True] and got[1].tolist() == [False]
    assert got[2].tolist() == [True]
    np.testing.assert_array_equal(got[3], A == B)


def test_var_and_std_unbiased_and_not():
    got = _run(lambda x: (paddle.var(x), paddle.std(x, axis=[1]),
                          paddle.var(x, axis=[0], unbiased=False, keepdim=True)), x=A)[0]
    np.testing.assert_allclose(got[0].reshape(-1), [A.var(ddof=1)], rtol=1e-5)
    np.testing.assert_allclose(got[1], A.std(1, ddof=1), rtol=1e-5)
    np.testing.assert_allclose(got[2], A.var(0, keepdims=True), rtol=1e-5)


def test_random_functions_draw_in_range_with_their_dtype():
    got = _run(lambda: (paddle.randint(3, 9, shape=[50]), paddle.randn([4, 5], dtype="float64"),
                        paddle.randperm(6, dtype="int32")))[0]
    assert got[0].dtype == np.int64 and got[0].min() >= 3 and got[0].max() < 9
    assert got[1].shape == (4, 5) and got[1].dtype == np.float64
    assert sorted(got[2].tolist()) == list(range(6)) and got[2].dtype == np.int32


def test_wrong_kinds_and_dtypes_are_type_errors():
    ints = np.ones((2, 2), "int32")
    cases = [
        lambda x: paddle.sin(x),                                   # float only
        lambda x: paddle.mm(x, x),
        lambda x: paddle.argmax(x, dtype="float32"),
        lambda x: paddle.full([1], 1, dtype="uint8"),
        lambda x: paddle.ones_like(x, dtype="int8"),
        lambda x: paddle.eye(2.5),
        lambda x: paddle.where(x, x, x),                           # condition must be bool
        lambda x: paddle.add(x, [1, 2]),
        lambda x: paddle.elementwise_sum(3),
    ]
    for case in cases:
        with pytest.raises(TypeError):
            _run(case, x=ints)


def test_device_must_be_cpu_or_gpu():
    with pytest.raises(ValueError, match="device expected None, 'cpu' or 'gpu'"):
        _run(lambda x: paddle.ones_like(x, device="tpu"), x=A)
    got = _one(lambda x: paddle.zeros_like(x, device="cpu"), x=A)
    assert not got.any()


def test_the_top_level_names_are_the_tensor_functions():
    for name in ("add", "norm", "argmax", "full", "randn", "matmul", "where", "sort"):
        assert getattr(paddle, name) is getattr(paddle.tensor, name)
    assert paddle.tensor.math.sum is paddle.sum
    assert "tril" not in paddle.__all__ and paddle.tensor.tril


def test_gradients_flow_through_the_tensor_functions():
    x = RNG.rand(3, 4)
    w = RNG.rand(4, 2)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        xv = fluid.data(name="x", shape=[3, 4], dtype="float64")
        wv = fluid.data(name="w", shape=[4, 2], dtype="float64")
        xv.stop_gradient = wv.stop_gradient = False
        loss = paddle.elementwise_sum([paddle.sum(paddle.mm(xv, wv)), paddle.norm(xv),
                                       paddle.logsumexp(paddle.addcmul(xv, xv, xv, 0.5))])
        grads = fluid.gradients([loss], [xv, wv])
    gx, gw = fluid.Executor(fluid.CPUPlace()).run(main, feed={"x": x, "w": w},
                                                  fetch_list=grads)
    inner = x + 0.5 * x * x
    soft = np.exp(inner) / np.exp(inner).sum()
    want_x = w.sum(1)[None, :].repeat(3, 0) + x / np.linalg.norm(x) + soft * (1 + x)
    np.testing.assert_allclose(gx, want_x, rtol=1e-10)
    np.testing.assert_allclose(gw, x.sum(0)[:, None].repeat(2, 1), rtol=1e-10)
