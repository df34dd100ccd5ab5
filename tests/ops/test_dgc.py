"""dgc, dgc_momentum and dgc_clip_by_norm against NumPy references, and the steps where
they leave their (in-place) outputs alone."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument
from .op_test import OpCase, run_case, table_tests

rng = np.random.RandomState(9)
SHAPE = (6, 5)
P, G, V, U = (rng.rand(*SHAPE).astype("float32") for _ in range(4))
LR = np.array([0.01], "float32")
RANKS = np.array([2.0], "float32")


def step(value):
    return np.array([value], "float32")


def momentum_ref(i, a):
    g = i["Grad"] / 2
    if i["current_step"][0] < a["rampup_begin_step"]:
        v = a["mu"] * i["Velocity"] + g
        p = i["Param"] - (g + a["mu"] * v) * LR if a["use_nesterov"] else i["Param"] - LR * v
        return {"ParamOut": p, "VelocityOut": v, "Grad_out": g}
    return {"ParamOut": i["Param"] - LR * g, "VelocityOut": i["Velocity"], "Grad_out": g}


SPARSITY = [0.75, 0.9375]


def dgc_ref(i, a):
    g = 2 * i["Grad"] + a.get("regular_coeff", 0.0) * i["Param"]
    period = min(int((i["current_step"][0] - a["rampup_begin_step"]) * len(SPARSITY)
                     / a["rampup_step"]), len(SPARSITY) - 1)
    k = int(g.size * (1 - SPARSITY[period]))
    m = a["m"]
    if a["use_nesterov"]:
        u = m * (i["U"] + g)
        v = i["V"] + u + g
    else:
        u = m * i["U"] + g
        v = i["V"] + u
    top = np.argsort(-np.abs(v.reshape(-1)), kind="stable")[:k]
    encoded = np.concatenate([top.astype("int32").view("float32"), v.reshape(-1)[top]])
    u, v = u.reshape(-1).copy(), v.reshape(-1).copy()
    u[top] = v[top] = 0
    return {"U_out": u.reshape(SHAPE), "V_out": v.reshape(SHAPE), "EncodeGrad": encoded,
            "Grad_out": np.zeros(SHAPE, "float32"), "k": np.array([k], "float32")}


def clip_ref(i, a):
    norm = np.sqrt((i["X"].astype("float64") ** 2).sum())
    return {"Out": (i["X"] * min(1.0, a["max_norm"] / norm)).astype("float32")}


MOMENTUM_IN = {"Param": P, "Grad": G, "Velocity": V, "LearningRate": LR, "nranks": RANKS}
DGC_IN = {"U": U, "V": V, "Grad": G, "Param": P, "nranks": RANKS}
DGC_ATTRS = {"m": 0.9, "use_nesterov": True, "sparsity": SPARSITY, "rampup_begin_step": 2.0,
             "rampup_step": 4.0, "regular_coeff": 1e-4, "regular_type": 2}
DGC_OUTS = {"U_out": 1, "V_out": 1, "EncodeGrad": 1, "Grad_out": 1, "k": 1, "GatherBuff": 1}

CASES = [
    OpCase("dgc_momentum", dict(MOMENTUM_IN, current_step=step(3)),
           attrs={"mu": 0.9, "use_nesterov": False, "rampup_begin_step": 10.0},
           ref=momentum_ref, outputs={"ParamOut": 1, "VelocityOut": 1, "Grad_out": 1},
           name="momentum_before_rampup"),
    OpCase("dgc_momentum", dict(MOMENTUM_IN, current_step=step(3)),
           attrs={"mu": 0.9, "use_nesterov": True, "rampup_begin_step": 10.0},
           ref=momentum_ref, outputs={"ParamOut": 1, "VelocityOut": 1, "Grad_out": 1},
           name="nesterov"),
    OpCase("dgc_momentum", dict(MOMENTUM_IN, current_step=step(12)),
           attrs={"mu": 0.9, "rampup_begin_step": 10.0}, ref=momentum_ref,
           outputs={"ParamOut": 1, "VelocityOut": 1, "Grad_out": 1},
           name="sgd_from_rampup"),
    OpCase("dgc", dict(DGC_IN, current_step=step(3)), attrs=DGC_ATTRS, ref=dgc_ref,
           outputs=DGC_OUTS,
           name="first_period"),
    OpCase("dgc", dict(DGC_IN, current_step=step(5)),
           attrs=dict(DGC_ATTRS, use_nesterov=False, regular_type=0, regular_coeff=0.0),
           ref=dgc_ref, outputs=DGC_OUTS, name="second_period_plain_momentum"),
    OpCase("dgc_clip_by_norm", {"X": G, "current_step": step(4)},
           attrs={"max_norm": 1.0, "rampup_begin_step": 2.0}, ref=clip_ref),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


def _run_in_place(op_type, values, pairs, attrs):
    """Run ``op_type`` with each output naming its input (as DGC programs do); return the
    scope's values after the run."""
    program = fluid.Program()
    block = program.global_block()
    scope = fluid.Scope()
    inputs, outputs = {}, {}
    for slot, value in values.items():
        name = slot.lower()
        block.create_var(name=name, shape=value.shape, dtype=value.dtype, persistable=True)
        scope.var(name).get_tensor().set(value, fluid.CPUPlace())
        inputs[slot] = [name]
    for out, src in pairs.items():
        if src in values:
            outputs[out] = [src.lower()]
        else:
            block.create_var(name=out.lower(), persistable=True)
            outputs[out] = [out.lower()]
    block.append_op(type=op_type, inputs=inputs, outputs=outputs, attrs=attrs)
    fluid.Executor(fluid.CPUPlace()).run(program, scope=scope)
    return {name: scope.find_var(name).value for name in
            [n for names in outputs.values() for n in names]}


def test_dgc_before_rampup_only_scales_the_gradient():
    out = _run_in_place("dgc", dict(DGC_IN, current_step=step(1)),
                        {"U_out": "U", "V_out": "V", "Grad_out": "Grad", "EncodeGrad": None,
                         "k": None, "GatherBuff": None}, DGC_ATTRS)
    np.testing.assert_array_equal(np.asarray(out["u"]), U)
    np.testing.assert_array_equal(np.asarray(out["v"]), V)
    np.testing.assert_allclose(np.asarray(out["grad"]), 2 * G + 1e-4 * P, rtol=1e-6)


def test_dgc_momentum_with_negative_rampup_writes_nothing():
    out = _run_in_place("dgc_momentum", dict(MOMENTUM_IN, current_step=step(3)),
                        {"ParamOut": "Param", "VelocityOut": "Velocity", "Grad_out": "Grad"},
                        {"mu": 0.9})
    np.testing.assert_array_equal(np.asarray(out["param"]), P)
    np.testing.assert_array_equal(np.asarray(out["grad"]), G)


def test_dgc_clip_before_rampup_keeps_x():
    out = _run_in_place("dgc_clip_by_norm", {"X": G * 10, "current_step": step(1)},
                        {"Out": "X"}, {"max_norm": 1.0, "rampup_begin_step": 2.0})
    np.testing.assert_array_equal(np.asarray(out["x"]), G * 10)


def test_dgc_needs_several_trainers():
    case = OpCase("dgc_momentum", dict(MOMENTUM_IN, current_step=step(3),
                                       nranks=np.array([1.0], "float32")),
                  attrs={"mu": 0.9, "rampup_begin_step": 10.0},
                  outputs={"ParamOut": 1, "VelocityOut": 1, "Grad_out": 1})
    with pytest.raises(InvalidArgument, match="several"):
        run_case(case)
