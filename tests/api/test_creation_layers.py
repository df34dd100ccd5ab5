"""The tensor-making layers of fluid.layers (range, arange, linspace, full, full_like, eye,
diag, tril, triu, the random layers, assign of constants) as Fluid 1.8 scripts call them."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument


def _run(build, feed=None):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        outs = build()
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    return main, outs, exe.run(main, feed=feed or {}, fetch_list=outs)


def _op_types(main):
    return [op.type for op in main.global_block().ops]


def test_range_and_arange_build_the_range_op_over_fill_constants():
    main, outs, (r, a, f) = _run(lambda: [fluid.layers.range(1, 10, 3, "int64"),
                                          fluid.layers.arange(0, 5),
                                          fluid.layers.arange(1.0, 2.0, 0.25, "float64")])
    np.testing.assert_array_equal(r, np.arange(1, 10, 3))
    assert r.dtype == np.int64 and outs[0].dtype == fluid.core.VarDesc.VarType.INT64
    np.testing.assert_array_equal(a, np.arange(5, dtype="float32"))
    assert a.dtype == np.float32
    np.testing.assert_allclose(f, [1.0, 1.25, 1.5, 1.75])
    assert _op_types(main).count("range") == 3
    assert all(v.stop_gradient for v in outs)


def test_range_takes_variables_and_casts_them_to_dtype():
    def build():
        end = fluid.layers.fill_constant([1], "int32", 4)
        return fluid.layers.range(0, end, 1, "int64")
    main, _, (value,) = _run(build)
    np.testing.assert_array_equal(value, [0, 1, 2, 3])
    assert "cast" in _op_types(main)


def test_linspace_includes_both_ends():
    _, _, (value, single) = _run(lambda: [fluid.layers.linspace(0, 10, 5, "float32"),
                                          fluid.layers.linspace(3, 10, 1, "float64")])
    np.testing.assert_allclose(value, [0.0, 2.5, 5.0, 7.5, 10.0])
    np.testing.assert_allclose(single, [3.0])


def test_full_and_full_like():
    def build():
        x = fluid.layers.fill_constant([2, 3], "int64", 0)
        return [fluid.layers.full([2, 2], 1.5), fluid.layers.full([3], 7, dtype="int32"),
                fluid.layers.full_like(x, 4), fluid.layers.full_like(x, 0.5, dtype="float32")]
    main, outs, (a, b, c, d) = _run(build)
    np.testing.assert_array_equal(a, np.full((2, 2), 1.5, "float32"))
    np.testing.assert_array_equal(b, np.full(3, 7, "int32"))
    assert c.dtype == np.int64 and d.dtype == np.float32
    np.testing.assert_array_equal(c, np.full((2, 3), 4))
    np.testing.assert_array_equal(d, np.full((2, 3), 0.5))
    assert _op_types(main).count("fill_any_like") == 2


def test_eye_diag_tril_triu():
    def build():
        x = fluid.layers.assign(np.arange(12, dtype="float32").reshape(3, 4))
        return [fluid.layers.eye(2, 3), fluid.layers.eye(2, batch_shape=[3]),
                fluid.layers.diag(np.array([3, 4, 5], "int32")),
                fluid.layers.tril(x), fluid.layers.triu(x, diagonal=1)]
    main, outs, (eye, batched, diag, low, up) = _run(build)
    x = np.arange(12, dtype="float32").reshape(3, 4)
    np.testing.assert_array_equal(eye, np.eye(2, 3))
    assert batched.shape == (3, 2, 2)
    np.testing.assert_array_equal(batched[1], np.eye(2))
    np.testing.assert_array_equal(diag, np.diag([3, 4, 5]))
    np.testing.assert_array_equal(low, np.tril(x))
    np.testing.assert_array_equal(up, np.triu(x, 1))
    assert _op_types(main).count("tril_triu") == 2


def test_tril_passes_the_gradient_under_its_mask():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[3, 3], dtype="float32")
        x.stop_gradient = False
        loss = fluid.layers.reduce_sum(fluid.layers.tril(x))
        (grad,) = fluid.gradients([loss], [x])
    (value,) = fluid.Executor(fluid.CPUPlace()).run(
        main, feed={"x": np.ones((3, 3), "float32")}, fetch_list=[grad])
    np.testing.assert_array_equal(value, np.tril(np.ones((3, 3))))


def test_random_layers_draw_within_their_ranges():
    def build():
        x = fluid.data(name="x", shape=[-1, 2], dtype="float32")
        return [fluid.layers.randint(-3, 3, shape=[200], seed=1),
                fluid.layers.randint(5, seed=2), fluid.layers.randn([50, 4]),
                fluid.layers.randperm(10, seed=3),
                fluid.layers.uniform_random_batch_size_like(x, [-1, 3], min=0.0, max=0.5),
                fluid.layers.gaussian_random_batch_size_like(x, [-1, 6], seed=4)]
    feed = {"x": np.zeros((5, 2), "float32")}
    _, outs, (ints, one, normal, perm, uniform, gaussian) = _run(build, feed)
    assert ints.dtype == np.int64 and ints.min() >= -3 and ints.max() < 3
    assert one.shape == (1,) and 0 <= one[0] < 5
    assert normal.shape == (50, 4) and normal.dtype == np.float32
    np.testing.assert_array_equal(np.sort(perm), np.arange(10))
    assert uniform.shape == (5, 3) and uniform.min() >= 0 and uniform.max() < 0.5
    assert gaussian.shape == (5, 6)
    assert tuple(outs[4].shape) == (-1, 3)


def test_randint_with_low_not_below_high_is_refused():
    with pytest.raises(InvalidArgument, match="^randint: low expected less than high"):
        _run(lambda: fluid.layers.randint(4, 2))


def test_creation_layers_refuse_a_dtype_fluid_does_not_allow_there():
    with pytest.raises(TypeError, match="^range: dtype expected one of"):
        _run(lambda: fluid.layers.range(0, 3, 1, "bool"))
    with pytest.raises(TypeError, match="^randperm: dtype expected one of int64, int32"):
        _run(lambda: fluid.layers.randperm(3, dtype="float32"))


def test_assign_writes_a_bool_array_through_bool_values():
    main, outs, (value,) = _run(lambda: fluid.layers.assign(np.array([[True, False, True]])))
    np.testing.assert_array_equal(value, [[True, False, True]])
    assert value.dtype == np.bool_
    (op,) = main.global_block().ops
    assert op.type == "assign_value" and op.attr("bool_values") == [1, 0, 1]


def test_fill_constant_takes_a_bool_value_as_fluid_does():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        flag = fluid.layers.fill_constant([2], "bool", True)
        x = fluid.data("x", [None, 3])
        done = fluid.layers.fill_constant_batch_size_like(x, [-1], "bool", False)
    got = fluid.Executor(fluid.CPUPlace()).run(
        main, feed={"x": np.zeros((3, 3), "float32")}, fetch_list=[flag, done])
    assert got[0].tolist() == [True, True] and got[1].tolist() == [False] * 3
