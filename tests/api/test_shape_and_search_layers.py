"""fluid.layers' shape, search, sort and logical layers of Fluid 1.8 (shape, rank, size,
where, nonzero, argsort, cumsum, reduce_all/any, has_inf/has_nan/isfinite, reverse, flip,
roll, index_select, index_sample, unique), the composites (logsumexp, log_softmax, clamp,
addcmul, t, elementwise_equal), and the activation layers' dtype rules and signatures."""
import numpy as np
import pytest

import fluid_nb as fluid

L = fluid.layers


def _run(build, feed):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        data = {name: fluid.data(name=name, shape=[-1] + list(v.shape[1:]), dtype=str(v.dtype))
                for name, v in feed.items()}
        outs = build(**data)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    return main, outs, fluid.Executor(fluid.CPUPlace()).run(main, feed=feed, fetch_list=outs)


X = np.array([[3.0, -1.0, 2.0], [0.5, 4.0, -2.0]], "float32")


def test_shape_is_int32_and_known_at_run_time():
    main, outs, (value, count, ndim) = _run(
        lambda x: [L.shape(x), L.size(x), L.rank(x)], {"x": X})
    np.testing.assert_array_equal(value, [2, 3])
    assert value.dtype == np.int32 and outs[0].dtype == fluid.core.VarDesc.VarType.INT32
    np.testing.assert_array_equal(count, [6])
    assert count.dtype == np.int64
    assert int(ndim) == 2 and ndim.dtype == np.int32
    assert [op.type for op in main.global_block().ops][:2] == ["shape", "size"]


def test_where_of_one_condition_is_where_index():
    main, _, (coords, nz, rows, cols) = _run(
        lambda x: [L.where(L.greater_than(x, L.fill_constant([1], "float32", 1.0))),
                   L.nonzero(x), *L.nonzero(x, as_tuple=True)],
        {"x": X})
    np.testing.assert_array_equal(coords, np.argwhere(X > 1.0))
    np.testing.assert_array_equal(nz, np.argwhere(X))
    np.testing.assert_array_equal(rows[:, 0], np.nonzero(X)[0])
    np.testing.assert_array_equal(cols[:, 0], np.nonzero(X)[1])
    assert "where_index" in [op.type for op in main.global_block().ops]


def test_argsort_returns_values_and_int64_indices():
    main, outs, (values, ids, down) = _run(
        lambda x: [*L.argsort(x, axis=1), L.argsort(x, axis=0, descending=True)[0]], {"x": X})
    np.testing.assert_array_equal(values, np.sort(X, axis=1))
    np.testing.assert_array_equal(ids, np.argsort(X, axis=1))
    assert ids.dtype == np.int64
    np.testing.assert_array_equal(down, -np.sort(-X, axis=0))
    assert outs[0].stop_gradient and outs[1].stop_gradient


def test_cumsum_with_fluid_18_arguments():
    _, _, (plain, excl, rev) = _run(
        lambda x: [L.cumsum(x), L.cumsum(x, axis=0, exclusive=True),
                   L.cumsum(x, axis=1, reverse=True)], {"x": X})
    np.testing.assert_allclose(plain, np.cumsum(X, axis=-1))
    np.testing.assert_allclose(excl, np.cumsum(X, axis=0) - X)
    np.testing.assert_allclose(rev, np.flip(np.cumsum(np.flip(X, 1), axis=1), 1))


def test_cumsum_trains_through_its_gradient():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[2, 3], dtype="float32")
        x.stop_gradient = False
        (grad,) = fluid.gradients([L.reduce_sum(L.cumsum(x, axis=1))], [x])
    (value,) = fluid.Executor(fluid.CPUPlace()).run(main, feed={"x": X}, fetch_list=[grad])
    np.testing.assert_array_equal(value, [[3, 2, 1], [3, 2, 1]])


def test_logical_reductions_and_finiteness():
    flags = np.array([[True, False], [True, True]])
    _, _, (all_rows, any_all, inf, nan, finite) = _run(
        lambda f, x: [L.reduce_all(f, dim=1), L.reduce_any(f), L.has_inf(x), L.has_nan(x),
                      L.isfinite(x)],
        {"f": flags, "x": np.array([[1.0, np.inf]], "float32")})
    np.testing.assert_array_equal(all_rows, [False, True])
    assert bool(np.asarray(any_all).reshape(-1)[0]) is True
    assert inf.tolist() == [True] and nan.tolist() == [False] and finite.tolist() == [False]


def test_reduce_all_refuses_a_float_tensor():
    with pytest.raises(TypeError, match="^reduce_all: input's dtype expected one of bool"):
        _run(lambda x: L.reduce_all(x), {"x": X})


def test_reverse_flip_roll_index_select_index_sample():
    def build(x):
        index = L.assign(np.array([1, 0, 1], "int64"))
        picks = L.assign(np.array([[2, 0], [1, 1]], "int64"))
        return [L.reverse(x, 0), L.flip(x, [1]), L.roll(x, 1), L.roll(x, [1], dims=[1]),
                L.index_select(x, index, dim=0), L.index_sample(x, picks)]
    _, _, (rev, flip, rolled, rolled1, selected, sampled) = _run(build, {"x": X})
    np.testing.assert_array_equal(rev, X[::-1])
    np.testing.assert_array_equal(flip, X[:, ::-1])
    np.testing.assert_array_equal(rolled, np.roll(X, 1))
    np.testing.assert_array_equal(rolled1, np.roll(X, 1, axis=1))
    np.testing.assert_array_equal(selected, X[[1, 0, 1]])
    np.testing.assert_array_equal(sampled, [[2.0, 3.0], [4.0, 4.0]])


def test_unique_keeps_the_order_of_first_appearance():
    values = np.array([2, 3, 3, 1, 5, 3], "int32")
    _, _, (out, index, out2, index2, count) = _run(
        lambda x: [*L.unique(L.reshape(x, [-1])), *L.unique_with_counts(L.reshape(x, [6]),
                                                                        dtype="int64")],
        {"x": values.reshape(1, 6)})
    np.testing.assert_array_equal(out, [2, 3, 1, 5])
    np.testing.assert_array_equal(index, [0, 1, 1, 2, 3, 1])
    assert index.dtype == np.int32 and index2.dtype == np.int64
    np.testing.assert_array_equal(count, [1, 3, 1, 1])


def test_composites_logsumexp_log_softmax_clamp_addcmul_t_equal():
    def build(x):
        return [L.logsumexp(x, dim=1), L.log_softmax(x), L.clamp(x, min=0.0, max=2.5),
                L.addcmul(x, x, x, value=0.5), L.t(x), L.elementwise_equal(x, x)]
    main, _, (lse, lsm, clamped, acm, tr, eq) = _run(build, {"x": X})
    np.testing.assert_allclose(lse, np.log(np.exp(X).sum(1)), rtol=1e-6)
    shifted = X - X.max(-1, keepdims=True)
    np.testing.assert_allclose(lsm, shifted - np.log(np.exp(shifted).sum(-1, keepdims=True)),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(clamped, np.clip(X, 0, 2.5))
    np.testing.assert_allclose(acm, X + 0.5 * X * X)
    np.testing.assert_array_equal(tr, X.T)
    assert eq.dtype == np.bool_ and eq.all()
    types = [op.type for op in main.global_block().ops]
    assert {"softmax", "clip", "transpose2", "equal"} <= set(types)


@pytest.mark.parametrize("layer", ["sigmoid", "tanh", "log", "sqrt", "softsign", "cos"])
def test_float_only_activation_layers_refuse_integers_as_a_type_error(layer):
    with pytest.raises(TypeError, match=rf"^{layer}: (x's dtype|input 'X') expected"):
        _run(lambda x: getattr(L, layer)(x), {"x": np.array([[1, 2]], "int32")})


@pytest.mark.parametrize("layer", ["exp", "abs", "square"])
def test_exp_abs_square_take_integers_as_in_fluid_18(layer):
    _run(lambda x: getattr(L, layer)(x), {"x": np.array([[1, 2]], "int64")})


def test_activation_layers_take_fluid_18_positional_arguments():
    main, _, (elu, shrink, hsig) = _run(
        lambda x: [L.elu(x, 0.5), L.softshrink(x, alpha=1.0), L.hard_sigmoid(x, 0.1, 0.2)],
        {"x": X})
    np.testing.assert_allclose(elu, np.where(X > 0, X, 0.5 * (np.exp(X) - 1)), rtol=1e-6)
    np.testing.assert_allclose(shrink, np.where(X > 1, X - 1, np.where(X < -1, X + 1, 0)))
    np.testing.assert_allclose(hsig, np.clip(0.1 * X + 0.2, 0, 1), rtol=1e-6)
    ops = main.global_block().ops
    assert ops[0].attr("alpha") == 0.5 and ops[1].attr("lambda") == 1.0


def test_products_distances_and_diagonals():
    a = np.arange(6, dtype="float32").reshape(2, 3)

    def build(x):
        m = L.assign(a.T.copy())
        batch = L.assign(np.ones((2, 3, 2), "float32"))
        v = L.assign(np.array([1.0, 2.0, 3.0], "float32"))
        w = L.assign(np.array([0.0, 1.0, 0.0], "float32"))
        gx, gy = L.meshgrid([v, L.assign(np.array([5.0, 6.0], "float32"))])
        return [L.addmm(L.assign(np.ones((1, 2), "float32")), x, m, alpha=2.0, beta=0.5),
                L.bmm(L.assign(np.ones((2, 2, 3), "float32")), batch), L.dot(v, w),
                L.dist(x, L.assign(np.zeros((2, 3), "float32")), p=1), L.cross(v, w),
                L.diag_embed(v), gx, gy, L.kron(v, w), L.trace(L.assign(np.eye(3, dtype="float32"))),
                L.allclose(v, v)]
    _, _, values = _run(build, {"x": X})
    addmm, bmm, dot, dist, cross, embed, gx, gy, kron, trace, close = values
    np.testing.assert_allclose(addmm, 0.5 + 2.0 * X @ a.T)
    np.testing.assert_allclose(bmm, np.full((2, 2, 2), 3.0))
    np.testing.assert_allclose(dot, [2.0])
    np.testing.assert_allclose(dist, [np.abs(X).sum()])
    np.testing.assert_allclose(cross, np.cross([1, 2, 3], [0, 1, 0]))
    np.testing.assert_allclose(embed, np.diag([1.0, 2.0, 3.0]))
    assert gx.shape == gy.shape == (3, 2)
    np.testing.assert_allclose(kron, np.kron([1, 2, 3], [0, 1, 0]))
    np.testing.assert_allclose(trace, [3.0])
    assert close.tolist() == [True]


def test_sampling_id_draws_columns_by_probability():
    probs = np.tile(np.array([[0.0, 1.0, 0.0]], "float32"), (4, 1))
    _, _, (ids,) = _run(lambda x: L.sampling_id(x, seed=3), {"x": probs})
    np.testing.assert_array_equal(ids, [1, 1, 1, 1])


def test_sign_and_sum_check_fluid_18_dtypes():
    with pytest.raises(TypeError, match="^sign: x's dtype expected one of float16"):
        _run(lambda x: L.sign(x), {"x": np.array([[1, -2]], "int32")})
    with pytest.raises(TypeError, match="^sum: x's dtype expected one of float32"):
        _run(lambda x: L.sum([x, x]), {"x": np.array([[True]])})
    _, _, (total,) = _run(lambda x: L.sum([x, x]), {"x": np.array([[1, 2]], "int64")})
    np.testing.assert_array_equal(total, [[2, 4]])
