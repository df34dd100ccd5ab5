"""Adam's fused host update (ops/_fused_updates.cc): one pass over a parameter and its two
moments, in place when the op's state is donated and into new arrays otherwise, giving the
values of the twelve-pass NumPy formula bit for bit, in float32 and float64; what it does
not take (other types, views, a variable in two slots) goes to the formula, and its own
arguments are checked before anything is written."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.ops import optimizer_ops, registry
from fluid_nb.ops import _fused_updates
from fluid_nb.tensor.tensor import LoDTensor

ATTRS = dict(beta1=0.9, beta2=0.999, epsilon=1e-8, lazy_mode=False, use_global_beta_pow=False,
             multi_precision=False)


class FusedCalls:
    """The fused update, counting its calls (one per update committed with a run's
    others)."""

    def __init__(self):
        self.calls = 0

    def adam(self, *args):
        self.calls += 1
        return _fused_updates.adam(*args)

    def commit(self, updates):  # (a run's trailing updates: each one an adam update)
        self.calls += len(updates)
        return _fused_updates.commit(updates)


@pytest.fixture
def fused_calls(monkeypatch):
    spy = FusedCalls()
    monkeypatch.setattr(optimizer_ops, "_fused", spy)
    return spy


def formula_only(monkeypatch):
    """The kernel as it is without the fused update: the NumPy formula for every type."""
    monkeypatch.setattr(optimizer_ops, "_FUSED_TYPES", ())


def train(dtype, steps=6):
    """The persistable values after ``steps`` Adam steps of a two-layer net in ``dtype``."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[9], dtype=dtype)
        label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        hidden = fluid.layers.fc(x, size=16, act="relu")
        logits = fluid.layers.fc(hidden, size=4)
        loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits, label))
        fluid.optimizer.Adam(learning_rate=0.01).minimize(loss)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    rng = np.random.RandomState(0)
    for _ in range(steps):
        exe.run(main, feed={"x": rng.uniform(-1, 1, (8, 9)).astype(dtype),
                            "label": rng.randint(0, 4, (8, 1)).astype("int64")},
                fetch_list=[loss], scope=scope)
    return {v.name: np.array(scope.find_var(v.name).get_tensor())
            for v in main.list_vars() if v.persistable}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_training_with_the_fused_update_gives_the_formulas_values_bit_for_bit(
        dtype, fused_calls, monkeypatch):
    fused = train(dtype)
    assert fused_calls.calls == 6 * 4  # every step, each of the four parameters
    formula_only(monkeypatch)
    formula = train(dtype)
    assert fused_calls.calls == 24  # the second run took the formula
    assert sorted(fused) == sorted(formula)
    for name in fused:
        assert fused[name].dtype == formula[name].dtype, name
        np.testing.assert_array_equal(fused[name], formula[name], err_msg=name)
    assert any("moment2" in name and np.any(value) for name, value in fused.items())


def adam_state(dtype, size=(30, 7)):
    rng = np.random.RandomState(1)
    return {"Param": rng.uniform(-1, 1, size).astype(dtype),
            "Grad": rng.uniform(-1, 1, size).astype(dtype),
            "Moment1": rng.uniform(-0.1, 0.1, size).astype(dtype),
            "Moment2": rng.uniform(0, 0.01, size).astype(dtype),
            "LearningRate": np.array([0.02], "float32"),
            "Beta1Pow": np.array([0.9 ** 3], "float32"),
            "Beta2Pow": np.array([0.999 ** 3], "float32")}


def run_kernel(state, donated, grad_slot="Grad"):
    """The adam kernel on LoDTensors over ``state``'s arrays (not copies), with ``donated``
    slots the op's to write; returns (ParamOut, Moment1Out, Moment2Out) arrays."""
    ctx = type("Ctx", (), {})()
    ctx.xp, ctx.attrs, ctx.donated = np, dict(ATTRS), frozenset(donated)
    ctx.wants = lambda slot: True
    t = {k: LoDTensor(v) for k, v in state.items()}
    kernel = registry.get("adam").kernel_for("cpu")
    outs = kernel(ctx, t["Param"], t[grad_slot], t["LearningRate"], t["Moment1"],
                  t["Moment2"], t["Beta1Pow"], t["Beta2Pow"], None, None, None, None, None)
    return outs[:3]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_donated_state_is_updated_in_place_with_the_formulas_values(dtype, fused_calls,
                                                                    monkeypatch):
    state = adam_state(dtype)
    kept = {k: v.copy() for k, v in state.items()}
    outs = run_kernel(state, {"Param", "Moment1", "Moment2"})
    assert fused_calls.calls == 1
    for out, slot in zip(outs, ["Param", "Moment1", "Moment2"]):
        assert out is state[slot], f"{slot}: not updated in place"
    formula_only(monkeypatch)
    want = run_kernel({k: v.copy() for k, v in kept.items()}, set())
    for got, expect in zip(outs, want):
        np.testing.assert_array_equal(got, expect)
    np.testing.assert_array_equal(state["Grad"], kept["Grad"])


def test_state_not_donated_goes_into_new_arrays_and_leaves_the_inputs(fused_calls,
                                                                      monkeypatch):
    state = adam_state("float32")
    kept = {k: v.copy() for k, v in state.items()}
    outs = run_kernel(state, {"Param"})  # only part of the state: three new arrays
    assert fused_calls.calls == 1
    for slot, value in kept.items():
        np.testing.assert_array_equal(state[slot], value, err_msg=slot)
    assert not any(np.shares_memory(out, a) for out in outs for a in state.values())
    formula_only(monkeypatch)
    for got, expect in zip(outs, run_kernel(kept, set())):
        np.testing.assert_array_equal(got, expect)


def test_a_variable_in_two_slots_is_read_whole_before_anything_is_written(monkeypatch):
    # Grad bound to the parameter's own variable: the formula reads every input first
    state = adam_state("float32")
    kept = {k: v.copy() for k, v in state.items()}
    outs = run_kernel(state, {"Param", "Moment1", "Moment2"}, grad_slot="Param")
    formula_only(monkeypatch)
    want = run_kernel(kept, set(), grad_slot="Param")
    for got, expect in zip(outs, want):
        np.testing.assert_array_equal(got, expect)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nan_inf_and_overflow_come_out_as_the_formula_gives_them(dtype, fused_calls,
                                                                 monkeypatch):
    state = adam_state(dtype, size=(6,))
    state["Grad"] = np.array([np.nan, np.inf, -np.inf, 0, 1e30, -1e-30], dtype)
    state["Moment2"][:] = 0  # sqrt(0) + eps_hat: the smallest divisor
    state["Param"][3] = np.inf
    kept = {k: v.copy() for k, v in state.items()}
    fused = run_kernel(state, set())
    assert fused_calls.calls == 1
    formula_only(monkeypatch)
    with np.errstate(all="ignore"):
        formula = run_kernel(kept, set())
    for got, expect in zip(fused, formula):
        assert got.tobytes() == expect.tobytes(), (got, expect)  # NaN's bits included
    assert np.isnan(fused[0][0]) and np.isinf(fused[1][1]) and np.isinf(fused[2][1])


def test_types_and_layouts_it_does_not_take_go_to_the_formula(fused_calls):
    state = adam_state("float16")  # no fused float16 loop
    outs = run_kernel(state, set())
    assert fused_calls.calls == 0 and outs[0].dtype == np.float16
    state = adam_state("float32", size=(14, 6))
    state = {k: (v[:, ::2] if v.ndim == 2 else v) for k, v in state.items()}  # views
    outs = run_kernel(state, set())
    assert fused_calls.calls == 0 and outs[0].shape == (14, 3)


# --- the C function's own checks: typed errors, nothing written ------------------------------
def arrays(n=12, dtype="float32"):
    rng = np.random.RandomState(2)
    return [rng.uniform(0, 1, n).astype(dtype) for _ in range(4)]


SCALARS = (0.9, 0.999, 0.01, 1e-8)


@pytest.mark.parametrize("case, error, words", [
    ("grad float64", TypeError, "grad expected the elements of param"),
    ("moment1 short", ValueError, "moment1 expected 12 elements"),
    ("moment2 strided", TypeError, "moment2 expected a C-contiguous, writable"),
    ("param int32", TypeError, "param expected float32 or float64 elements"),
    ("param a list", TypeError, "param expected a C-contiguous"),
    ("moment1 read-only", TypeError, "moment1 expected a C-contiguous, writable"),
    ("moment2 is param", ValueError, "param and moment2 expected separate memory"),
    ("output overlaps grad", ValueError, "grad and param_out expected separate memory"),
    ("over grad, moment1_out is moment1", ValueError,
     "moment1 and moment1_out expected separate memory"),
    ("over grad, grad read-only", TypeError, "grad expected a C-contiguous, writable"),
])
def test_bad_arguments_are_refused_before_anything_is_written(case, error, words):
    param, grad, m1, m2 = arrays()
    outs = None  # in place
    if case == "grad float64":
        grad = grad.astype("float64")
    elif case == "moment1 short":
        m1 = m1[:5].copy()
    elif case == "moment2 strided":
        m2 = np.repeat(m2, 2)[::2]
    elif case == "param int32":
        param = (param * 10).astype("int32")
    elif case == "param a list":
        param = param.tolist()
    elif case == "moment1 read-only":
        m1.flags.writeable = False
    elif case == "moment2 is param":
        m2 = param
    elif case == "output overlaps grad":  # its memory, not the gradient itself
        outs = (grad[:], np.empty_like(m1), np.empty_like(m2))
    elif case == "over grad, moment1_out is moment1":
        outs = (grad, m1, np.empty_like(m2))
    elif case == "over grad, grad read-only":
        grad.flags.writeable = False
        outs = (grad, np.empty_like(m1), np.empty_like(m2))
    before = [np.array(a, copy=True) for a in (param, grad, m1, m2)]
    outs = outs or (param, m1, m2)
    with pytest.raises(error, match=words):
        _fused_updates.adam(param, grad, m1, m2, *outs, *SCALARS)
    for a, b in zip((param, grad, m1, m2), before):
        np.testing.assert_array_equal(np.asarray(a), b)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_new_parameter_over_the_gradient_has_the_values_of_a_new_array(dtype):
    param, grad, m1, m2 = arrays(n=1031, dtype=dtype)  # past any vector width
    grad[:4] = [np.nan, np.inf, -np.inf, 1e30]
    kept = [a.copy() for a in (param, grad, m1, m2)]
    ref = [np.empty_like(param) for _ in range(3)]
    _fused_updates.adam(param, grad.copy(), m1, m2, *ref, *SCALARS)
    m1_out, m2_out = np.empty_like(m1), np.empty_like(m2)
    _fused_updates.adam(param, grad, m1, m2, grad, m1_out, m2_out, *SCALARS)
    for got, expect in zip((grad, m1_out, m2_out), ref):
        assert got.tobytes() == expect.tobytes()  # NaN's and inf's bits included
    assert np.isnan(grad[0]) and np.isnan(m1_out[0])
    for a, b in zip((param, m1, m2), kept[:1] + kept[2:]):  # only the gradient written
        np.testing.assert_array_equal(a, b)


def test_the_kernel_writes_over_the_gradient_only_when_it_is_donated(fused_calls):
    state = adam_state("float32")
    kept = {k: v.copy() for k, v in state.items()}
    over = run_kernel(state, {"Grad"})
    assert over[0] is state["Grad"]
    assert not any(np.shares_memory(out, state[slot]) for out in over[1:]
                   for slot in ("Param", "Moment1", "Moment2"))
    for slot in ("Param", "Moment1", "Moment2"):
        np.testing.assert_array_equal(state[slot], kept[slot], err_msg=slot)
    fresh = run_kernel({k: v.copy() for k, v in kept.items()}, set())
    assert not np.shares_memory(fresh[0], kept["Grad"])
    for got, expect in zip(over, fresh):
        np.testing.assert_array_equal(got, expect)
    assert fused_calls.calls == 2


def test_the_inputs_of_an_update_into_new_arrays_may_share_memory():
    param, _, m1, m2 = arrays()
    outs = [np.empty_like(param) for _ in range(3)]
    _fused_updates.adam(param, param, m1, m2, *outs, *SCALARS)  # grad is param: only read
    ref = [np.empty_like(param) for _ in range(3)]
    _fused_updates.adam(param, param.copy(), m1, m2, *ref, *SCALARS)
    for got, expect in zip(outs, ref):
        np.testing.assert_array_equal(got, expect)
