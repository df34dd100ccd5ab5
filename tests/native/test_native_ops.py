"""Every op with an emitter, compiled to native code, gives the interpreter's outputs (their
LoD too) and gradients on the op tables' inputs: float32 within 1e-5 relative, float64
within 1e-12. A case with LoD compiles to a program whose sizes are read at run time, one
without to one specialised on its shapes. A case an emitter declines (a broadcast it has
no kernel for) must be reported as a fallback with its reason, and every emitter has table
cases (here or, for ops only a program can feed, in test_native_lod_ops.py)."""

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.native import compile, generate
from fluid_nb.native.emitters import EMITTERS
from fluid_nb.tensor.lod_rank_table import LoDRankTable
from fluid_nb.tensor.tensor import LoDTensorArray
from fluid_nb.ops import registry

from tests.ops.op_test import (_as64, _loss_weights, all_table_cases, build, case_id,
                                grad_program)




FORWARD = [c for c in all_table_cases() if c.op in EMITTERS]


def _grad_types(case):
    inputs = dict(case.inputs)
    expected = case.ref(inputs, dict(case.attrs)) if case.ref is not None else None
    _, op, _, _ = build(case, inputs, expected)
    return [spec.type for spec in registry.make_grad_ops(op)]


BACKWARD = [c for c in FORWARD if c.grad and all(t in EMITTERS for t in _grad_types(c))]


def _tolerance(values):
    return 1e-12 if any(np.asarray(v).dtype == np.float64 for v in values) else 1e-5


def _run_both(program, feed, fetch, case):
    """The interpreter's and the compiled program's values of ``fetch`` (None when the
    generator declines an op, after checking it said why)."""
    source = generate(program, feed=feed, fetch=fetch, scope=fluid.Scope())
    if source.fallbacks:  # only an emitter may decline a case, and it says why
        for _, op_type, why in source.fallbacks:
            assert op_type in EMITTERS and why and why != "no emitter for this op type", (
                f"{case.id}: {op_type} fell back: {why}")
        return None
    # the outputs the op writes (a testing dropout writes no Mask, in either)
    computed = {v.name for v in source.variables} - source.not_computed
    fetch[:] = [name for name in fetch if name in computed]
    assert fetch, f"{case.id}: the compiled op computes none of its outputs"
    want = fluid.Executor(fluid.CPUPlace()).run(program, feed=feed, fetch_list=fetch,
                                                scope=fluid.Scope(), return_numpy=False)
    native = compile(program, feed, fetch, scope=fluid.Scope())
    got = fluid.Executor(fluid.CPUPlace()).run(native, feed=feed, fetch_list=fetch,
                                               scope=fluid.Scope(), return_numpy=False)
    return want, got


def _compare(case, what, names, want, got):
    for name, w, g in zip(names, want, got):
        if isinstance(w, LoDRankTable):
            assert isinstance(g, LoDRankTable) and list(g) == list(w) \
                and g.coarse_lod == w.coarse_lod, f"{case.id}: {what} {name}: {g} != {w}"
            continue
        if isinstance(w, LoDTensorArray):
            assert isinstance(g, LoDTensorArray) and len(g) == len(w), (
                f"{case.id}: {what} {name}: {len(g)} items, {len(w)} interpreted")
            _compare(case, what, [f"{name}[{k}]" for k in range(len(w))], w, g)
            continue
        if w.array is None:  # an array's slot nothing wrote
            assert g.array is None, f"{case.id}: {what} {name}: a value the interpreter lacks"
            continue
        assert g.lod() == w.lod(), f"{case.id}: {what} {name} LoD {g.lod()} != {w.lod()}"
        w, g = np.asarray(w), np.asarray(g)
        assert g.shape == w.shape and g.dtype == w.dtype, (
            f"{case.id}: {what} {name} is {g.dtype}{list(g.shape)} compiled, "
            f"{w.dtype}{list(w.shape)} interpreted")
        if w.dtype.kind == "f":
            tol = _tolerance([w])
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol * max(1.0, np.abs(w).max(
                initial=0.0)) * 1e-2, err_msg=f"{case.id}: {what} {name}")
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"{case.id}: {what} {name}")


@pytest.mark.parametrize("case", FORWARD, ids=case_id)
def test_compiled_op_gives_the_interpreters_outputs(case):
    inputs = dict(case.inputs)
    expected = case.ref(inputs, dict(case.attrs)) if case.ref is not None else None
    program, op, feed, outputs = build(case, inputs, expected)
    fetch = [n for names in outputs.values() for n in names]
    both = _run_both(program, feed, fetch, case)
    if both is not None:
        _compare(case, "output", fetch, *both)


@pytest.mark.parametrize("case", BACKWARD, ids=case_id)
def test_compiled_grad_ops_give_the_interpreters_gradients(case):
    inputs = {k: _as64(v) for k, v in case.inputs.items()}
    expected = case.ref(inputs, dict(case.attrs)) if case.ref is not None else None
    forward, loss_slots, weights = _loss_weights(case, inputs, expected)
    program, op, feed, targets = grad_program(case, inputs, expected, forward, loss_slots,
                                              weights)
    fetch = [name + "@GRAD" for _, name in targets]
    both = _run_both(program, feed, fetch, case)
    if both is not None:
        _compare(case, "gradient", fetch, *both)


def test_every_emitter_has_table_cases_to_be_checked_on():
    from .test_native_lod_ops import op_types  # the ops only a program can feed
    covered = {c.op for c in FORWARD} | {t for c in BACKWARD for t in _grad_types(c)} \
        | op_types()
    missing = sorted(set(EMITTERS) - covered)
    assert not missing, f"emitters no op table case exercises: {missing}"
