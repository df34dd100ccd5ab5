"""SGD's fused host update (ops/_fused_updates.cc): ParamOut = Param - LearningRate * Grad
in one C call, over the parameter when it is donated and into a new array otherwise, giving
the NumPy formula's values bit for bit; arrays it does not take are answered NotImplemented
and the kernel runs the formula for them."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.ops import _fused_updates, optimizer_ops
from fluid_nb.memory import places as memory_places


def formula(param, rate, grad):
    """The kernel's NumPy formula: the rate as a 0-d array of its own type."""
    return (param - rate.reshape(()) * grad).astype(param.dtype, copy=False)


class FormulaOnly:
    """The fused module with an sgd that takes nothing: the kernel's formula path."""

    def __init__(self):
        self.calls = 0

    def sgd(self, *args):
        self.calls += 1
        return NotImplemented

    def commit(self, updates):  # (a run's trailing updates: refused before any is written)
        raise ValueError("commit: the formula's way")

    def __getattr__(self, name):
        return getattr(_fused_updates, name)


def awkward(dtype, size):
    """Values with NaN, infinities, huge and tiny numbers and signed zeros among them."""
    rng = np.random.RandomState(size)
    values = rng.uniform(-3, 3, size).astype(dtype)
    specials = np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, 1e-30, 0.0, -0.0], dtype)
    values[:min(size, 8)] = specials[:min(size, 8)]
    return values


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("size", [0, 1, 7, 1031])
def test_a_new_parameter_has_the_formulas_values_bit_for_bit(dtype, size):
    param, grad = awkward(dtype, size), awkward(dtype, size)[::-1].copy()
    rate = np.array([0.37], "float32")
    before = param.copy()
    new = _fused_updates.sgd(param, rate, grad, False)
    assert new is not param and new.dtype == param.dtype and new.shape == param.shape
    np.testing.assert_array_equal(new.view(f"u{new.itemsize}"),
                                  formula(before, rate, grad).view(f"u{new.itemsize}"))
    np.testing.assert_array_equal(param, before)  # the inputs are only read


@pytest.mark.parametrize("dtype,rate_dtype", [("float32", "float32"), ("float64", "float32"),
                                              ("float64", "float64")])
def test_a_donated_parameter_is_written_in_place(dtype, rate_dtype):
    param = np.random.RandomState(1).uniform(-1, 1, (13, 4)).astype(dtype)
    grad = np.random.RandomState(2).uniform(-1, 1, (13, 4)).astype(dtype)
    rate = np.array([0.01], rate_dtype)
    expected = formula(param, rate, grad)
    assert _fused_updates.sgd(param, rate, grad, True) is param
    np.testing.assert_array_equal(param, expected)


def test_a_parameter_that_is_its_own_gradient_is_read_before_it_is_written():
    param = np.arange(6, dtype="float32")
    expected = formula(param, np.array([0.5], "float32"), param)
    assert _fused_updates.sgd(param, np.array([0.5], "float32"), param, True) is param
    np.testing.assert_array_equal(param, expected)


def test_under_executor_run_the_new_parameter_is_a_block_of_the_arena():
    """The new weight comes from NumPy's current allocator, which a run points at the
    arena: the event log shows the sgd op allocating it, and the scope holds that block."""
    if memory_places.host_arena() is None:
        pytest.skip("FLAGS_use_system_allocator is set: there is no host arena")
    main, startup, loss = fit_a_line("float32")
    exe, scope, cpu = fluid.Executor(fluid.CPUPlace()), fluid.Scope(), fluid.CPUPlace()
    exe.run(startup, scope=scope)
    fluid.memory.record_events(cpu)
    fluid.memory.events(cpu)
    try:
        exe.run(main, feed=batch("float32", np.random.RandomState(0)), fetch_list=[loss],
                scope=scope)
        log = fluid.memory.events(cpu)
    finally:
        fluid.memory.record_events(cpu, False)
    by_sgd = {e.variable: e for e in log if e.kind == "alloc" and e.op is not None
              and e.op[0] == "sgd"}
    assert set(by_sgd) == {"fc_0.w_0", "fc_0.b_0"}
    weight = scope.find_var("fc_0.w_0").value.array
    assert weight.__array_interface__["data"][0] == by_sgd["fc_0.w_0"].address


@pytest.mark.parametrize("case", [
    "float64 rate, float32 param", "int32 arrays", "a strided gradient", "two shapes",
    "a rate of two elements", "a read-only parameter in place", "overlapping views in place",
    "a float16 parameter", "a subclass", "a big-endian gradient"])
def test_what_the_loop_does_not_take_is_answered_not_implemented(case):
    param = np.linspace(-1, 1, 12).astype("float32")
    grad = np.linspace(1, 2, 12).astype("float32")
    rate, in_place = np.array([0.1], "float32"), False
    if case == "float64 rate, float32 param":
        rate = rate.astype("float64")
    elif case == "int32 arrays":
        param, grad = param.astype("int32"), grad.astype("int32")
    elif case == "a strided gradient":
        grad = np.linspace(1, 2, 24).astype("float32")[::2]
    elif case == "two shapes":
        grad = grad.reshape(3, 4)
    elif case == "a rate of two elements":
        rate = np.array([0.1, 0.2], "float32")
    elif case == "a read-only parameter in place":
        param.flags.writeable, in_place = False, True
    elif case == "overlapping views in place":
        whole = np.linspace(-1, 1, 13).astype("float32")
        param, grad, in_place = whole[1:], whole[:-1], True
    elif case == "a float16 parameter":
        param, grad = param.astype("float16"), grad.astype("float16")
    elif case == "a subclass":
        param = param.reshape(3, 4).view(np.matrix)
        grad = grad.reshape(3, 4)
    elif case == "a big-endian gradient":
        grad = grad.astype(">f4")
    before = param.copy()
    assert _fused_updates.sgd(param, rate, grad, in_place) is NotImplemented
    np.testing.assert_array_equal(param, before)


@pytest.mark.parametrize("count", [0, 2, 5])
def test_a_wrong_number_of_arguments_is_a_type_error(count):
    with pytest.raises(TypeError, match="sgd"):
        _fused_updates.sgd(*[np.ones(2)] * count)


def test_what_is_not_an_array_is_left_to_the_formula():
    assert _fused_updates.sgd([1.0], np.ones(1), np.ones(1), False) is NotImplemented


def fit_a_line(dtype):
    """fit_a_line's programs in ``dtype`` with SGD, and its loss."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[13], dtype=dtype)
        y = fluid.layers.data(name="y", shape=[1], dtype=dtype)
        predict = fluid.layers.fc(input=x, size=1)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(input=predict, label=y))
        fluid.optimizer.SGD(learning_rate=0.01).minimize(loss)
    return main, startup, loss


def batch(dtype, rng):
    return {"x": rng.uniform(-1, 1, (20, 13)).astype(dtype),
            "y": rng.uniform(-1, 1, (20, 1)).astype(dtype)}


def train(dtype, steps=5):
    """The persistable values after ``steps`` SGD steps of fit_a_line in ``dtype``."""
    main, startup, loss = fit_a_line(dtype)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    rng = np.random.RandomState(0)
    for _ in range(steps):
        exe.run(main, feed=batch(dtype, rng), fetch_list=[loss], scope=scope)
    return {v.name: np.array(scope.find_var(v.name).get_tensor())
            for v in main.list_vars() if v.persistable}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_training_gives_the_formulas_parameters_bit_for_bit(dtype, monkeypatch):
    fused = train(dtype)
    formula_only = FormulaOnly()
    monkeypatch.setattr(optimizer_ops, "_fused", formula_only)
    by_formula = train(dtype)
    assert formula_only.calls == 5 * 2  # the weight and the bias, each step
    assert fused.keys() == by_formula.keys()
    for name in fused:
        np.testing.assert_array_equal(fused[name], by_formula[name], err_msg=name)
