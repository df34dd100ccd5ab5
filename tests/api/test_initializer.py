"""Initializers append Paddle's op to the startup block; the values have the right
statistics; ParamAttr normalisation."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb import initializer as init
from fluid_nb import layers
from fluid_nb.errors import InvalidArgument
from fluid_nb.api.param_attr import ParamAttr, WeightNormParamAttr


def init_param(initializer, shape, dtype="float32", seed=0):
    """(the startup op, the parameter's value) for one parameter of ``shape``."""
    main, startup = fluid.Program(), fluid.Program()
    startup.random_seed = seed
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        layers.create_parameter(shape, dtype, name="p", default_initializer=initializer)
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    (op,) = startup.global_block().ops
    return op, np.array(scope.find_var("p").get_tensor())


def test_constant():
    op, value = init_param(init.Constant(2.5), [3, 4])
    assert op.type == "fill_constant" and op.attrs["value"] == 2.5
    assert op.attrs["shape"] == [3, 4] and op.attrs["dtype"] == 5
    np.testing.assert_array_equal(value, np.full((3, 4), 2.5, "float32"))


def test_constant_int():
    op, value = init_param(init.ConstantInitializer(7), [2], dtype="int64")
    assert value.dtype == np.int64 and value.tolist() == [7, 7]


def test_uniform_range_and_seed():
    op, value = init_param(init.Uniform(-0.5, 2.0, seed=3), [200, 50])
    assert op.type == "uniform_random" and op.attrs["seed"] == 3
    assert value.min() >= -0.5 and value.max() < 2.0
    assert abs(value.mean() - 0.75) < 0.05
    _, again = init_param(init.Uniform(-0.5, 2.0, seed=3), [200, 50])
    np.testing.assert_array_equal(value, again)


def test_seed_zero_takes_the_startup_programs_random_seed():
    op, _ = init_param(init.Normal(), [2], seed=90)
    assert op.attrs["seed"] == 90


def test_normal_statistics():
    op, value = init_param(init.NormalInitializer(1.0, 2.0, seed=4), [100, 100])
    assert op.type == "gaussian_random"
    assert abs(value.mean() - 1.0) < 0.05 and abs(value.std() - 2.0) < 0.05


def test_truncated_normal_stays_within_two_std():
    op, value = init_param(init.TruncatedNormal(0.5, 0.1, seed=5), [100, 100])
    assert op.type == "truncated_gaussian_random"
    assert value.min() >= 0.3 - 1e-6 and value.max() <= 0.7 + 1e-6
    assert abs(value.mean() - 0.5) < 0.01
    # a normal truncated at 2 std has std ~0.88 of the untruncated one
    assert abs(value.std() - 0.088) < 0.005


@pytest.mark.parametrize("shape, fan_in, fan_out", [
    ([64, 32], 64, 32), ([8, 4, 3, 3], 36, 72), ([10], 10, 10)])
def test_xavier_uniform_and_normal_limits(shape, fan_in, fan_out):
    op, value = init_param(init.Xavier(seed=1), shape)
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    assert op.type == "uniform_random"
    assert op.attrs["max"] == pytest.approx(limit) and op.attrs["min"] == pytest.approx(-limit)
    assert np.abs(value).max() <= limit
    op, _ = init_param(init.XavierInitializer(uniform=False, seed=1), shape)
    assert op.type == "gaussian_random"
    assert op.attrs["std"] == pytest.approx(np.sqrt(2.0 / (fan_in + fan_out)))


def test_msra():
    op, value = init_param(init.MSRA(seed=2), [8, 4, 3, 3])
    assert op.attrs["max"] == pytest.approx(np.sqrt(6.0 / 36))
    op, value = init_param(init.MSRAInitializer(uniform=False, seed=2), [400, 100])
    assert op.type == "gaussian_random"
    assert abs(value.std() - np.sqrt(2.0 / 400)) < 0.005


@pytest.mark.parametrize("dtype", ["float32", "int32", "int64"])
def test_numpy_array_initializer(dtype):
    array = np.arange(6).reshape(2, 3).astype(dtype)
    op, value = init_param(init.NumpyArrayInitializer(array), [2, 3], dtype=dtype)
    assert op.type == "assign_value" and op.attrs["shape"] == [2, 3]
    np.testing.assert_array_equal(value, array)
    assert value.dtype == np.dtype(dtype)


def test_bilinear():
    _, value = init_param(init.Bilinear(), [1, 1, 4, 4])
    row = np.array([0.25, 0.75, 0.75, 0.25])
    np.testing.assert_allclose(value[0, 0], np.outer(row, row), rtol=1e-6)


def test_errors():
    with pytest.raises(InvalidArgument, match="UniformInitializer"):
        init.Uniform(1.0, 0.0)
    with pytest.raises(InvalidArgument, match="NumpyArrayInitializer"):
        init.NumpyArrayInitializer([1, 2])
    with pytest.raises(InvalidArgument, match="assign_value"):
        init_param(init.NumpyArrayInitializer(np.zeros((3,), "float32")), [2])


def test_param_attr_to_attr_forms():
    assert isinstance(ParamAttr._to_attr(None), ParamAttr)
    assert ParamAttr._to_attr("w").name == "w"
    assert isinstance(ParamAttr._to_attr(init.Constant(1.0)).initializer, init.Constant)
    assert ParamAttr._to_attr(False) is False
    assert isinstance(ParamAttr._to_attr(True), ParamAttr)
    attr = ParamAttr(name="x", learning_rate=0.5, trainable=False)
    assert ParamAttr._to_attr(attr) is attr
    kwargs = attr._to_kwargs(with_initializer=True)
    assert kwargs["optimize_attr"] == {"learning_rate": 0.5} and kwargs["trainable"] is False
    assert "initializer" in kwargs and "initializer" not in attr._to_kwargs()
    assert WeightNormParamAttr(dim=0, name="v").dim == 0
    with pytest.raises(InvalidArgument, match="ParamAttr"):
        ParamAttr._to_attr(3.5)


def test_non_trainable_param_attr_gives_stop_gradient_parameter():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = layers.data("x", [2])
        layers.fc(x, 2, param_attr=ParamAttr(trainable=False))
    w = main.global_block().var("fc_0.w_0")
    assert not w.trainable and w.stop_gradient
