"""Optimizer update ops against NumPy re-implementations of Paddle's formulas (two in-place
steps, dense and sparse gradients), and the learning-rate helpers floor, cos and pow."""
import warnings

import numpy as np
import pytest

import fluid_nb as fluid
import fluid_nb.ops.optimizer_ops  # noqa: F401  (registers the family before _families does)
from fluid_nb.errors import InvalidArgument
from fluid_nb.tensor.tensor import LoDTensor, SelectedRows
from fluid_nb.tensor.dtypes import VarType
from fluid_nb.ops import registry

from .op_test import OpCase, check_output, table_tests

rng = np.random.RandomState(0)


def r(*shape, low=-1, high=1, dtype="float32"):
    return rng.uniform(low, high, shape).astype(dtype)


def one(value, dtype="float32"):
    return np.array([value], dtype)


# --- NumPy references: ref(state, dense_grad, attrs) -> new state (by input slot) ----------------
def sgd_ref(s, g, a):
    return {"Param": s["Param"] - s["LearningRate"][0] * g}


def momentum_ref(s, g, a):
    g = g * a.get("rescale_grad", 1.0)
    if a.get("regularization_method") == "l2_decay":
        g = g + a["regularization_coeff"] * s["Param"]
    mu, lr = a["mu"], s["LearningRate"][0]
    v = mu * s["Velocity"] + g
    if a.get("use_nesterov"):
        p = s["Param"] - (g + mu * v) * lr
    else:
        p = s["Param"] - lr * v
    return {"Param": p, "Velocity": v}


def adam_ref(s, g, a):
    b1, b2, eps = a.get("beta1", 0.9), a.get("beta2", 0.999), a.get("epsilon", 1e-8)
    pow1, pow2 = s["Beta1Pow"][0], s["Beta2Pow"][0]
    m1 = b1 * s["Moment1"] + (1 - b1) * g
    m2 = b2 * s["Moment2"] + (1 - b2) * g * g
    lr = s["LearningRate"][0] * np.sqrt(1 - pow2) / (1 - pow1)
    p = s["Param"] - lr * m1 / (np.sqrt(m2) + eps * np.sqrt(1 - pow2))
    new = {"Param": p, "Moment1": m1, "Moment2": m2}
    if not a.get("use_global_beta_pow"):
        new.update(Beta1Pow=s["Beta1Pow"] * b1, Beta2Pow=s["Beta2Pow"] * b2)
    return new


def adamax_ref(s, g, a):
    b1, b2, eps = a.get("beta1", 0.9), a.get("beta2", 0.999), a.get("epsilon", 1e-8)
    m = b1 * s["Moment"] + (1 - b1) * g
    u = np.maximum(np.abs(g), b2 * s["InfNorm"] + eps)
    with np.errstate(divide="ignore", invalid="ignore"):  # Beta1Pow = 1: inf, as Paddle
        p = s["Param"] - s["LearningRate"][0] / (1 - s["Beta1Pow"][0]) * m / u
    return {"Param": p, "Moment": m, "InfNorm": u}


def adagrad_ref(s, g, a):
    m = s["Moment"] + g * g
    p = s["Param"] - s["LearningRate"][0] * g / (np.sqrt(m) + a.get("epsilon", 1e-6))
    return {"Param": p, "Moment": m}


def decayed_adagrad_ref(s, g, a):
    decay, eps = a.get("decay", 0.95), a.get("epsilon", 1e-6)
    m = decay * s["Moment"] + (1 - decay) * g * g
    return {"Param": s["Param"] - s["LearningRate"][0] * g / (np.sqrt(m) + eps), "Moment": m}


def rmsprop_ref(s, g, a):
    rho, eps, momentum = a.get("decay", 0.9), a.get("epsilon", 1e-10), a.get("momentum", 0.0)
    lr = s["LearningRate"][0]
    ms = rho * s["MeanSquare"] + (1 - rho) * g * g
    new = {"MeanSquare": ms}
    if a.get("centered"):
        mg = rho * s["MeanGrad"] + (1 - rho) * g
        mom = momentum * s["Moment"] + lr * g / np.sqrt(ms - mg * mg + eps)
        new["MeanGrad"] = mg
    else:
        mom = momentum * s["Moment"] + lr * g / np.sqrt(ms + eps)
    new.update(Moment=mom, Param=s["Param"] - mom)
    return new


def adadelta_ref(s, g, a):
    rho, eps = a.get("rho", 0.95), a.get("epsilon", 1e-6)
    asg = rho * s["AvgSquaredGrad"] + (1 - rho) * g * g
    update = -np.sqrt(s["AvgSquaredUpdate"] + eps) / np.sqrt(asg + eps) * g
    asu = rho * s["AvgSquaredUpdate"] + (1 - rho) * update * update
    lr = s["LearningRate"][0] if "LearningRate" in s else 1.0
    return {"Param": s["Param"] + lr * update, "AvgSquaredGrad": asg, "AvgSquaredUpdate": asu}


def lamb_ref(s, g, a):
    b1, b2, eps, wd = a.get("beta1", 0.9), a.get("beta2", 0.999), a.get("epsilon", 1e-6), \
        a["weight_decay"]
    m1 = b1 * s["Moment1"] + (1 - b1) * g
    m2 = b2 * s["Moment2"] + (1 - b2) * g * g
    r_ = (m1 / (1 - s["Beta1Pow"][0])) / (np.sqrt(m2 / (1 - s["Beta2Pow"][0])) + eps) \
        + wd * s["Param"]
    trust = 1.0
    if wd > 0 or a.get("always_adapt"):
        pn, rn = np.linalg.norm(s["Param"]), np.linalg.norm(r_)
        trust = pn / rn if pn > 0 and rn > 0 else 1.0
    return {"Param": s["Param"] - s["LearningRate"][0] * trust * r_, "Moment1": m1,
            "Moment2": m2, "Beta1Pow": s["Beta1Pow"] * b1, "Beta2Pow": s["Beta2Pow"] * b2}


SHAPE = (5, 3)


def states():
    """Fresh initial states (float32) for each optimizer, by op type: (state, ref, attrs)."""
    pos = lambda: r(*SHAPE, low=0.1, high=1.0)  # noqa: E731  (accumulators of squares)
    lr = one(0.1)
    return {
        "sgd": ({"Param": r(*SHAPE), "LearningRate": lr}, sgd_ref, {}),
        "momentum": ({"Param": r(*SHAPE), "Velocity": r(*SHAPE), "LearningRate": lr},
                     momentum_ref, {"mu": 0.9}),
        "momentum-nesterov-l2": (
            {"Param": r(*SHAPE), "Velocity": r(*SHAPE), "LearningRate": lr}, momentum_ref,
            {"mu": 0.8, "use_nesterov": True, "regularization_method": "l2_decay",
             "regularization_coeff": 0.01, "rescale_grad": 0.5}),
        "adam": ({"Param": r(*SHAPE), "LearningRate": lr, "Moment1": r(*SHAPE),
                  "Moment2": pos(), "Beta1Pow": one(0.9), "Beta2Pow": one(0.999)},
                 adam_ref, {}),
        "adam-attrs": ({"Param": r(*SHAPE), "LearningRate": lr, "Moment1": r(*SHAPE),
                        "Moment2": pos(), "Beta1Pow": one(0.8 ** 3), "Beta2Pow": one(0.9 ** 3)},
                       adam_ref, {"beta1": 0.8, "beta2": 0.9, "epsilon": 1e-4}),
        "adamax": ({"Param": r(*SHAPE), "LearningRate": lr, "Moment": r(*SHAPE),
                    "InfNorm": pos(), "Beta1Pow": one(0.9)}, adamax_ref, {"epsilon": 0.05}),
        "adagrad": ({"Param": r(*SHAPE), "Moment": pos(), "LearningRate": lr}, adagrad_ref,
                    {"epsilon": 0.1}),
        "decayed_adagrad": ({"Param": r(*SHAPE), "Moment": pos(), "LearningRate": lr},
                            decayed_adagrad_ref, {"decay": 0.9, "epsilon": 0.1}),
        "rmsprop": ({"Param": r(*SHAPE), "MeanSquare": pos(), "LearningRate": lr,
                     "Moment": r(*SHAPE)}, rmsprop_ref, {"momentum": 0.5, "epsilon": 0.01}),
        "rmsprop-centered": ({"Param": r(*SHAPE), "MeanSquare": pos() + 1,
                              "MeanGrad": r(*SHAPE, low=-0.1, high=0.1), "LearningRate": lr,
                              "Moment": r(*SHAPE)}, rmsprop_ref,
                             {"momentum": 0.5, "centered": True, "decay": 0.8}),
        "adadelta": ({"Param": r(*SHAPE), "AvgSquaredGrad": pos(), "AvgSquaredUpdate": pos(),
                      "LearningRate": lr}, adadelta_ref, {"rho": 0.9, "epsilon": 0.01}),
        "adadelta-no-lr": ({"Param": r(*SHAPE), "AvgSquaredGrad": pos(),
                            "AvgSquaredUpdate": pos()}, adadelta_ref, {}),
        "lamb": ({"Param": r(*SHAPE), "LearningRate": lr, "Moment1": r(*SHAPE),
                  "Moment2": pos(), "Beta1Pow": one(0.9), "Beta2Pow": one(0.999)},
                 lamb_ref, {"weight_decay": 0.01, "epsilon": 0.01}),
        "lamb-no-decay": ({"Param": r(*SHAPE), "LearningRate": lr, "Moment1": r(*SHAPE),
                           "Moment2": pos(), "Beta1Pow": one(0.9), "Beta2Pow": one(0.999)},
                          lamb_ref, {"weight_decay": 0.0}),
        "lamb-always-adapt": ({"Param": r(*SHAPE), "LearningRate": lr, "Moment1": r(*SHAPE),
                               "Moment2": pos(), "Beta1Pow": one(0.9),
                               "Beta2Pow": one(0.999)},
                              lamb_ref, {"weight_decay": 0.0, "always_adapt": True}),
    }


STATES = states()
NAMES = sorted(STATES)


def op_of(name):
    return name.split("-")[0]


# --- running an update op in place, as an optimizer program does ----------------------------
def run_in_place(op_type, state, grads, attrs, extra=None):
    """Run ``op_type`` once per gradient in ``grads`` with every ``<X>Out`` bound to ``X`` over
    persistable variables; return the final values by input slot (dense ones only)."""
    program = fluid.Program()
    block = program.global_block()
    scope = fluid.Scope()
    opdef = registry.get(op_type)
    values = dict(state, **(extra or {}))
    inputs = {}
    for slot, value in list(values.items()) + [("Grad", grads[0])]:
        name = slot.lower()
        if isinstance(value, SelectedRows):
            array = value.value.array
            block.create_var(name=name, type=VarType.SELECTED_ROWS, dtype=array.dtype,
                             shape=(value.height(),) + array.shape[1:], persistable=True)
        else:
            block.create_var(name=name, shape=value.shape, dtype=value.dtype, persistable=True)
            scope.var(name).value = LoDTensor(value.copy())
        inputs[slot] = [name]
    outputs = {s.name: [s.name[:-3].lower()] for s in opdef.outputs
               if s.name.endswith("Out") and s.name[:-3] in values}
    block.append_op(type=op_type, inputs=inputs, outputs=outputs, attrs=dict(attrs))
    fluid.verify(program)
    exe = fluid.Executor(fluid.CPUPlace())
    for grad in grads:
        scope.var("grad").value = grad if isinstance(grad, SelectedRows) else LoDTensor(grad)
        exe.run(program, scope=scope)
    return {slot: np.asarray(scope.find_var(slot.lower()).value) for slot in values}


def ref_steps(ref, state, grads, attrs, only_rows=False):
    """The reference applied once per gradient; ``only_rows``: rows absent from a sparse
    gradient keep their values (sgd, adagrad, lazy adam)."""
    s = {k: v.astype("float64") for k, v in state.items()}
    for grad in grads:
        dense = grad.to_dense() if isinstance(grad, SelectedRows) else grad
        new = ref(s, dense.astype("float64"), attrs)
        if only_rows and isinstance(grad, SelectedRows):
            keep = ~np.isin(np.arange(SHAPE[0]), grad.rows())
            for k, v in new.items():
                if v.shape == SHAPE:
                    new[k] = np.where(keep[:, None], s[k], v)
        s.update(new)
    return s


def assert_states(got, want, name):
    for slot, value in want.items():
        np.testing.assert_allclose(got[slot], value, rtol=2e-5, atol=1e-6,
                                   err_msg=f"{name}: {slot}")


def dense_grads():
    return [r(*SHAPE), r(*SHAPE)]


def sparse_grads():
    """Two steps of sparse gradients with repeated and unsorted rows; row 2 never appears."""
    return [SelectedRows([3, 0, 3], SHAPE[0], LoDTensor(r(3, SHAPE[1]))),
            SelectedRows([4, 1, 1, 4], SHAPE[0], LoDTensor(r(4, SHAPE[1])))]


@pytest.mark.parametrize("name", NAMES)
def test_two_dense_steps_match_numpy(name):
    state, ref, attrs = STATES[name]
    grads = dense_grads()
    got = run_in_place(op_of(name), state, grads, attrs)
    assert_states(got, ref_steps(ref, state, grads, attrs), name)
    for slot, value in state.items():  # the update really happened (or stayed where due)
        if value.shape == SHAPE and slot in ("Param",):
            assert not np.allclose(got[slot], value), f"{name}: {slot} did not change"


ROWS_ONLY = {"sgd", "adagrad"}


@pytest.mark.parametrize("name", NAMES)
def test_two_sparse_steps_with_repeated_rows_match_numpy(name):
    state, ref, attrs = STATES[name]
    grads = sparse_grads()
    got = run_in_place(op_of(name), state, grads, attrs)
    want = ref_steps(ref, state, grads, attrs, only_rows=op_of(name) in ROWS_ONLY)
    assert_states(got, want, name)


@pytest.mark.parametrize("lazy", [False, True])
def test_adam_sparse_lazy_mode_updates_only_present_rows(lazy):
    state, _, _ = STATES["adam"]
    grads = sparse_grads()
    got = run_in_place("adam", state, grads, {"lazy_mode": lazy})
    want = ref_steps(adam_ref, state, grads, {}, only_rows=lazy)
    assert_states(got, want, f"adam lazy={lazy}")
    untouched = 2  # no gradient ever names row 2
    same = np.allclose(got["Param"][untouched], state["Param"][untouched])
    assert same == lazy
    assert np.allclose(got["Moment1"][untouched], state["Moment1"][untouched]) == lazy


@pytest.mark.parametrize("lazy", [False, True])
def test_adam_sparse_into_separate_outputs_writes_only_present_rows_when_lazy(lazy):
    # Fluid's lazy update writes only the gradient's rows into each output's own buffer,
    # so outputs bound to other variables keep their other rows; otherwise every row is
    # computed (absent rows with a zero gradient)
    state, _, _ = STATES["adam"]
    grad = sparse_grads()[0]
    program = fluid.Program()
    block = program.global_block()
    scope = fluid.Scope()
    held = np.full(SHAPE, 7.0, "float32")
    inputs, outputs = {}, {}
    for slot, value in state.items():
        block.create_var(name=slot, shape=value.shape, dtype=value.dtype, persistable=True)
        scope.var(slot).value = LoDTensor(value.copy())
        inputs[slot] = [slot]
        block.create_var(name=slot + "Out", shape=value.shape, dtype=value.dtype,
                         persistable=True)
        scope.var(slot + "Out").value = LoDTensor(held.copy() if value.shape == SHAPE
                                                  else np.zeros_like(value))
        if slot != "LearningRate":
            outputs[slot + "Out"] = [slot + "Out"]
    block.create_var(name="grad", type=VarType.SELECTED_ROWS, dtype="float32",
                     shape=SHAPE, persistable=True)
    scope.var("grad").value = grad
    inputs["Grad"] = ["grad"]
    block.append_op(type="adam", inputs=inputs, outputs=outputs, attrs={"lazy_mode": lazy})
    fluid.Executor(fluid.CPUPlace()).run(program, scope=scope)
    want = ref_steps(adam_ref, state, [grad], {})
    present = np.isin(np.arange(SHAPE[0]), grad.rows())
    for slot in ("Param", "Moment1", "Moment2"):
        got = np.asarray(scope.find_var(slot + "Out").value)
        np.testing.assert_allclose(got[present], want[slot][present], rtol=2e-5, atol=1e-6)
        np.testing.assert_allclose(got[~present], held[~present] if lazy
                                   else want[slot][~present], rtol=2e-5, atol=1e-6)
        np.testing.assert_array_equal(np.asarray(scope.find_var(slot).value), state[slot])


def test_sparse_grad_equals_its_dense_form_where_paddle_updates_every_row():
    for name in ("momentum", "adam", "rmsprop", "lamb"):
        state, _, attrs = STATES[name]
        sparse = sparse_grads()
        dense = [g.to_dense() for g in sparse]
        a = run_in_place(name, state, sparse, attrs)
        b = run_in_place(name, state, dense, attrs)
        for slot in a:
            np.testing.assert_allclose(a[slot], b[slot], rtol=1e-6, atol=1e-7,
                                       err_msg=f"{name}: {slot}")


def test_empty_sparse_grad_leaves_everything_unchanged():
    state, _, _ = STATES["adam"]
    empty = SelectedRows([], SHAPE[0], LoDTensor(np.zeros((0, SHAPE[1]), "float32")))
    got = run_in_place("adam", state, [empty], {})
    for slot, value in state.items():
        np.testing.assert_array_equal(got[slot], value, err_msg=slot)


# --- adam's optional inputs -----------------------------------------------------------------------
def test_adam_tensors_override_attributes():
    state, _, _ = STATES["adam"]
    grads = dense_grads()
    extra = {"Beta1Tensor": one(0.8), "Beta2Tensor": one(0.95), "EpsilonTensor": one(1e-3)}
    got = run_in_place("adam", state, grads, {"beta1": 0.1, "beta2": 0.2, "epsilon": 0.3},
                       extra=extra)
    want = ref_steps(adam_ref, state, grads, {"beta1": 0.8, "beta2": 0.95, "epsilon": 1e-3})
    assert_states(got, want, "adam tensors")


def test_adam_skip_update_copies_inputs():
    state, _, _ = STATES["adam"]
    got = run_in_place("adam", state, dense_grads(), {},
                       extra={"SkipUpdate": np.array([True])})
    for slot, value in state.items():
        np.testing.assert_array_equal(got[slot], value, err_msg=slot)


def test_adam_global_beta_pow_leaves_powers_alone():
    state, _, _ = STATES["adam"]
    grads = dense_grads()
    got = run_in_place("adam", state, grads, {"use_global_beta_pow": True})
    want = ref_steps(adam_ref, state, grads, {"use_global_beta_pow": True})
    assert_states(got, want, "adam global pow")
    np.testing.assert_array_equal(got["Beta1Pow"], state["Beta1Pow"])
    np.testing.assert_array_equal(got["Beta2Pow"], state["Beta2Pow"])


def test_lamb_skip_update_copies_inputs():
    state, _, attrs = STATES["lamb"]
    got = run_in_place("lamb", state, dense_grads(), attrs,
                       extra={"SkipUpdate": np.array([True])})
    for slot, value in state.items():
        np.testing.assert_array_equal(got[slot], value, err_msg=slot)


def test_multi_precision_updates_the_master_copy():
    param16 = r(*SHAPE).astype("float16")
    master = param16.astype("float32") + np.float32(1e-4)
    grads = dense_grads()
    state = {"Param": param16, "Velocity": np.zeros(SHAPE, "float32"),
             "LearningRate": one(0.1), "MasterParam": master}
    got = run_in_place("momentum", state, grads, {"mu": 0.9, "multi_precision": True})
    want = ref_steps(momentum_ref, {"Param": master, "Velocity": state["Velocity"],
                                    "LearningRate": state["LearningRate"]}, grads, {"mu": 0.9})
    np.testing.assert_allclose(got["MasterParam"], want["Param"], rtol=2e-5, atol=1e-6)
    assert got["Param"].dtype == np.float16
    np.testing.assert_array_equal(got["Param"], got["MasterParam"].astype("float16"))


def test_kernels_leave_their_inputs_untouched():
    state, _, _ = STATES["adam"]
    ctx = type("Ctx", (), {})()
    ctx.xp = np
    ctx.attrs = dict(beta1=0.9, beta2=0.999, epsilon=1e-8, lazy_mode=True,
                     use_global_beta_pow=False, multi_precision=False)
    ctx.wants = lambda slot: True
    tensors = {k: LoDTensor(v.copy()) for k, v in state.items()}
    grad = sparse_grads()[0]
    grad_before = grad.value.array.copy()
    kernel = registry.get("adam").kernel_for("cpu")
    kernel(ctx, tensors["Param"], grad, tensors["LearningRate"], tensors["Moment1"],
           tensors["Moment2"], tensors["Beta1Pow"], tensors["Beta2Pow"], None, None, None,
           None, None)
    for slot, t in tensors.items():
        np.testing.assert_array_equal(t.array, state[slot], err_msg=slot)
    np.testing.assert_array_equal(grad.value.array, grad_before)


# --- one-step table: compile-time shapes and dtypes against the kernels ----------------------
def update_case(name):
    state, ref, attrs = STATES[name]
    grad = r(*SHAPE)
    inputs = dict(state, Grad=grad)

    def expected(i, a):
        s = {k: np.asarray(v, "float64") for k, v in i.items() if k != "Grad"}
        return {k + "Out": v for k, v in ref(s, np.asarray(i["Grad"], "float64"), a).items()}
    return OpCase(op_of(name), inputs, attrs=attrs, ref=expected, rtol=2e-5, atol=1e-6,
                  name=name)


def floor_input():
    # away from integers, so the finite differences of floor are 0
    return (np.arange(12).reshape(3, 4) * 0.37 - 2.1 + 0.05).astype("float32")


CASES = [update_case(name) for name in NAMES] + [
    OpCase("floor", {"X": floor_input()}, ref=lambda i, a: {"Out": np.floor(i["X"])},
           grad=["X"]),
    OpCase("ceil", {"X": floor_input()}, ref=lambda i, a: {"Out": np.ceil(i["X"])},
           grad=["X"]),
    OpCase("cos", {"X": r(3, 4, low=-3, high=3)}, ref=lambda i, a: {"Out": np.cos(i["X"])},
           grad=["X"]),
    OpCase("pow", {"X": r(3, 4, low=0.5, high=2)}, attrs={"factor": 2.5},
           ref=lambda i, a: {"Out": np.power(i["X"], 2.5)}, grad=["X"], rtol=1e-4),
    OpCase("pow", {"X": r(3, 4, low=0.5, high=2), "FactorTensor": one(-0.5)},
           attrs={"factor": 3.0}, ref=lambda i, a: {"Out": np.power(i["X"], -0.5)},
           grad=["X"], rtol=1e-4, name="factor_tensor"),
    OpCase("pow", {"X": r(2, 3)}, ref=lambda i, a: {"Out": i["X"]}, name="default_factor"),
]



def ftrl_ref(i, a):
    """FTRL-proximal, written from its formula (McMahan et al., with Fluid's lr_power)."""
    p, n, z, g = (np.asarray(i[k], "float64") for k in
                  ("Param", "SquaredAccumulator", "LinearAccumulator", "Grad"))
    lr, power = i["LearningRate"][0], a["lr_power"]
    l1, l2 = a["l1"] + 1e-10, a["l2"] + 1e-10  # Fluid's kernel adds 1e-10 to both
    new_n = n + g ** 2
    new_z = z + g - (new_n ** -power - n ** -power) / lr * p
    denominator = new_n ** -power / lr + 2 * l2
    new_p = np.where(np.abs(new_z) > l1, (l1 * np.sign(new_z) - new_z) / denominator, 0.0)
    return {"ParamOut": new_p, "SquaredAccumOut": new_n, "LinearAccumOut": new_z}


def lars_ref(i, a):
    p, v, g = (np.asarray(i[k], "float64") for k in ("Param", "Velocity", "Grad"))
    decay = a["lars_weight_decay"]
    local_lr = i["LearningRate"][0] * a["lars_coeff"] * np.linalg.norm(p) / (
        np.linalg.norm(g) + decay * np.linalg.norm(p))
    new_v = a["mu"] * v + local_lr * (g + decay * p)
    return {"ParamOut": p - new_v, "VelocityOut": new_v}


def _ftrl_state():
    return {"Param": r(*SHAPE), "SquaredAccumulator": r(*SHAPE, low=0.1, high=1.0),
            "LinearAccumulator": r(*SHAPE), "Grad": r(*SHAPE), "LearningRate": one(0.1)}


def _dpsgd_check(outputs, inputs, attrs):
    """Without noise the step is the clipped gradient's; the noise is one draw per step."""
    p, g, lr = inputs["Param"], inputs["Grad"], inputs["LearningRate"][0]
    norm = np.linalg.norm(g)
    scale = norm / attrs["clip"] if norm > attrs["clip"] else 1.0
    residual = (p - lr * g / scale) - np.asarray(outputs["ParamOut"], "float64")
    noise = residual * attrs["batch_size"] / lr
    assert np.allclose(noise, noise.flat[0], atol=1e-4)  # the same draw for every element
    if attrs["sigma"] == 0:
        assert abs(noise.flat[0]) < 1e-4


def _accumulate_ref(i, a):
    """ModelAverage's window after one update (the window closes at min_average_window)."""
    s1 = i["in_sum_1"] + i["param"]
    n_acc, n_upd = int(i["in_num_accumulates"][0]) + 1, int(i["in_num_updates"][0]) + 1
    n_old, s2, s3 = int(i["in_old_num_accumulates"][0]), i["in_sum_2"], i["in_sum_3"]
    if n_acc >= a["min_average_window"] and n_acc >= min(a["max_average_window"],
                                                         n_upd * a["average_window"]):
        s3, s1, s2, n_old, n_acc = s1 + s2, 0 * s1, 0 * s2, n_acc, 0
    return {"out_sum_1": s1, "out_sum_2": s2, "out_sum_3": s3,
            "out_num_accumulates": np.array([n_acc]), "out_old_num_accumulates":
            np.array([n_old]), "out_num_updates": np.array([n_upd])}


def _accumulate_inputs(n_acc):
    return {"param": r(*SHAPE), "in_sum_1": r(*SHAPE), "in_sum_2": r(*SHAPE),
            "in_sum_3": r(*SHAPE), "in_num_accumulates": np.array([n_acc], "int64"),
            "in_old_num_accumulates": np.array([2], "int64"),
            "in_num_updates": np.array([n_acc + 5], "int64")}


CASES += [
    OpCase("ftrl", _ftrl_state(), attrs={"l1": 0.1, "l2": 0.2, "lr_power": -0.5},
           ref=ftrl_ref, rtol=2e-5, atol=1e-6),
    OpCase("ftrl", _ftrl_state(), attrs={"l1": 0.0, "l2": 0.0, "lr_power": -0.3},
           ref=ftrl_ref, rtol=2e-5, atol=1e-6, name="lr_power"),
    OpCase("lars_momentum", {"Param": r(*SHAPE), "Velocity": r(*SHAPE), "Grad": r(*SHAPE),
                             "LearningRate": one(0.1)},
           attrs={"mu": 0.9, "lars_coeff": 0.01, "lars_weight_decay": 0.001},
           ref=lars_ref, rtol=2e-5, atol=1e-6),
    OpCase("dpsgd", {"Param": r(*SHAPE), "Grad": r(*SHAPE) * 10, "LearningRate": one(0.1)},
           attrs={"clip": 1.0, "batch_size": 4.0, "sigma": 0.5, "seed": 3},
           check=_dpsgd_check),
    OpCase("dpsgd", {"Param": r(*SHAPE), "Grad": r(*SHAPE), "LearningRate": one(0.1)},
           attrs={"clip": 100.0, "batch_size": 4.0, "sigma": 0.0}, check=_dpsgd_check,
           name="no_noise"),
    OpCase("average_accumulates", _accumulate_inputs(3),
           attrs={"average_window": 0.5, "min_average_window": 10, "max_average_window": 20},
           ref=_accumulate_ref, name="window_open"),
    OpCase("average_accumulates", _accumulate_inputs(9),
           attrs={"average_window": 0.5, "min_average_window": 10, "max_average_window": 20},
           ref=_accumulate_ref, name="window_closes"),
]


(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


def test_adamax_with_beta1_pow_one_gives_ieee_inf_without_warnings():
    state, ref, attrs = STATES["adamax"]
    moment = state["Moment"].copy()
    moment[0, 0] = 0.0  # 0 * inf: nan there, as in IEEE arithmetic
    case = update_case("adamax")
    case.inputs = dict(case.inputs, Beta1Pow=one(1.0), Moment=moment,
                       Grad=np.zeros(SHAPE, "float32"))
    case.name = "beta1_pow_one"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning (or ZeroDivisionError) fails here
        result = check_output(case)
    param = np.asarray(result["ParamOut"])
    assert np.isnan(param[0, 0]) and np.isinf(param.reshape(-1)[1:]).all()
    assert np.geterr()["divide"] == "warn"  # the global NumPy settings are left alone


def test_update_ops_have_no_gradient_and_lr_helpers_do():
    for name in ("sgd", "momentum", "adam", "adamax", "adagrad", "decayed_adagrad", "rmsprop",
                 "adadelta", "lamb"):
        assert registry.get(name).grad is None, name
    assert registry.get("pow").grad.grad_type == "pow_grad"
    assert registry.get("cos").grad.grad_type == "cos_grad"
    assert [s.name for s in registry.get("floor_grad").inputs] == ["Out@GRAD"]


def test_adam_attribute_defaults_are_paddles():
    attrs = {n: s.default for n, s in registry.get("adam").attrs.items()}
    assert attrs == {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, "lazy_mode": False,
                     "min_row_size_to_use_multithread": 1000, "multi_precision": False,
                     "use_global_beta_pow": False}


# --- compile-time errors ----------------------------------------------------------------------
def _append(op_type, shapes, attrs, outputs):
    program = fluid.Program()
    block = program.global_block()
    inputs = {}
    for slot, shape in shapes.items():
        block.create_var(name=slot.lower(), shape=shape, dtype="float32", persistable=True)
        inputs[slot] = [slot.lower()]
    outs = {slot: [slot[:-3].lower()] for slot in outputs}
    block.append_op(type=op_type, inputs=inputs, outputs=outs, attrs=attrs)


ADAM_SHAPES = {"Param": (4, 3), "Grad": (4, 3), "LearningRate": (1,), "Moment1": (4, 3),
               "Moment2": (4, 3), "Beta1Pow": (1,), "Beta2Pow": (1,)}
ADAM_OUTS = ["ParamOut", "Moment1Out", "Moment2Out", "Beta1PowOut", "Beta2PowOut"]


@pytest.mark.parametrize("op_type, shapes, attrs, outputs, words", [
    ("adam", dict(ADAM_SHAPES, Moment1=(3, 4)), {}, ADAM_OUTS, "Moment1"),
    ("adam", dict(ADAM_SHAPES, Grad=(4, 2)), {}, ADAM_OUTS, "Grad"),
    ("adam", dict(ADAM_SHAPES, Beta1Pow=(2,)), {}, ADAM_OUTS, "Beta1Pow"),
    ("sgd", {"Param": (4, 3), "Grad": (4, 3), "LearningRate": (2,)}, {}, ["ParamOut"],
     "LearningRate"),
    ("momentum", {"Param": (4, 3), "Grad": (4, 3), "Velocity": (4, 3), "LearningRate": (1,)},
     {}, ["ParamOut", "VelocityOut"], "mu"),
    ("lamb", {k: v for k, v in ADAM_SHAPES.items()}, {}, ADAM_OUTS, "weight_decay"),
    ("rmsprop", {"Param": (4, 3), "Grad": (4, 3), "MeanSquare": (4, 3), "Moment": (4, 3),
                 "LearningRate": (1,)}, {"centered": True},
     ["ParamOut", "MomentOut", "MeanSquareOut"], "MeanGrad"),
])
def test_bad_inputs_raise_invalid_argument(op_type, shapes, attrs, outputs, words):
    with pytest.raises(InvalidArgument) as info:
        _append(op_type, shapes, attrs, outputs)
    assert str(info.value).startswith(op_type + ":") and words in str(info.value)


def test_sparse_rows_beyond_the_parameter_are_refused():
    state, _, _ = STATES["sgd"]
    bad = SelectedRows([0, SHAPE[0]], SHAPE[0], LoDTensor(r(2, SHAPE[1])))
    with pytest.raises(InvalidArgument, match=r"sgd: SelectedRows row ids expected in \[0, 5\)"):
        run_in_place("sgd", state, [bad], {})


def test_sparse_grad_skips_the_shape_check_against_param():
    program = fluid.Program()
    block = program.global_block()
    for name, shape in (("param", (10, 3)), ("lr", (1,))):
        block.create_var(name=name, shape=shape, dtype="float32")
    block.create_var(name="grad", shape=(-1, 3), dtype="float32", type=VarType.SELECTED_ROWS)
    block.append_op(type="sgd", inputs={"Param": ["param"], "LearningRate": ["lr"],
                                        "Grad": ["grad"]}, outputs={"ParamOut": ["param"]})
    assert block.var("param").shape == (10, 3)
