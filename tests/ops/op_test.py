"""Table-driven op tests: each op family lists ``OpCase`` rows; these helpers check them.

``check_output(case)`` builds a one-op program, verifies it, runs it and compares every
output with the case's NumPy reference (and the compile-time shapes with the run-time ones).
``check_grad(case)`` compares the op's grad ops (from its grad maker) with float64 central
finite differences of ``loss = sum_k sum(w_k * out_k)`` for fixed random weights ``w_k``.
"""
import dataclasses
import importlib
import pathlib
from typing import Any, Callable, Dict, List, Optional

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.tensor.dtypes import convert_dtype
from fluid_nb.framework.program import EMPTY_VAR_NAME
from fluid_nb.ops import registry
from fluid_nb.proto.paddle_versions import PADDLE_VERSION


@dataclasses.dataclass
class OpCase:
    """One row of an op table.

    inputs: slot -> array, or list of arrays for a duplicable slot.
    ref: ``ref(inputs, attrs) -> {slot: array | [arrays]}`` with the expected outputs
         (slots missing from the result are not compared).
    lod: slot -> LoD (offsets) for inputs that carry one; for a duplicable slot, either one
         LoD for every variable or :class:`EachLoD` with one LoD (or None) per variable.
    grad: input slots whose gradients are checked (float inputs only).
    grad_outputs: output slots the loss is built from (default: all float outputs ``ref``
         returns).
    outputs: output slot -> number of variables (default 1 per declared output slot;
         intermediate and dispensable slots included only when listed here or in ``ref``).
    """
    op: str
    inputs: Dict[str, Any]
    attrs: Dict[str, Any] = dataclasses.field(default_factory=dict)
    ref: Optional[Callable] = None
    grad: List[str] = dataclasses.field(default_factory=list)
    grad_outputs: Optional[List[str]] = None
    lod: Dict[str, Any] = dataclasses.field(default_factory=dict)
    outputs: Optional[Dict[str, int]] = None
    atol: float = 1e-5
    rtol: float = 1e-5
    grad_atol: float = 1e-6
    grad_rtol: float = 1e-4
    delta: float = 1e-6
    name: str = ""
    check: Optional[Callable] = None  # extra check(outputs, inputs, attrs) for random ops

    @property
    def id(self):
        return f"{self.op}-{self.name}" if self.name else self.op


class EachLoD(list):
    """The LoDs of a duplicable slot's variables, one per variable (None: no LoD)."""


def _lod_of(case, slot, i):
    lod = case.lod.get(slot)
    return lod[i] if isinstance(lod, EachLoD) else lod


def case_id(case):
    return case.id


def all_table_cases():
    """The rows of every op family's table (each tests/ops module's CASES)."""
    cases = []
    for path in sorted(pathlib.Path(__file__).parent.glob("test_*.py")):
        module = importlib.import_module(f"tests.ops.{path.stem}")
        cases.extend(getattr(module, "CASES", []))
    return cases


def _output_counts(case, expected):
    opdef = registry.get(case.op)
    counts = {}
    for slot in opdef.outputs:
        if case.outputs is not None and slot.name in case.outputs:
            counts[slot.name] = case.outputs[slot.name]
        elif expected is not None and slot.name in expected:
            value = expected[slot.name]
            counts[slot.name] = len(value) if slot.duplicable else 1
        elif case.outputs is None and not slot.dispensable and not slot.intermediate:
            counts[slot.name] = 1
        elif slot.intermediate and case.outputs is None:
            counts[slot.name] = 1
    return counts


def build(case, inputs=None, expected=None):
    """A program with one op of ``case``; returns (program, op, feed, fetch names by slot)."""
    inputs = case.inputs if inputs is None else inputs
    program = fluid.Program()
    # the references are Paddle 2.x's, with its 0-D scalars: the program says it is one
    # (a program of the Fluid 1.x API gives a scalar shape [1]; tests/api pins that rule)
    program.version = PADDLE_VERSION
    block = program.global_block()
    opdef = registry.get(case.op)
    op_inputs, feed = {}, {}
    for slot in opdef.inputs:
        if slot.name not in inputs:
            continue
        value = inputs[slot.name]
        arrays = value if slot.duplicable else [value]
        names = []
        for i, array in enumerate(arrays):
            array = np.asarray(array)
            name = f"{slot.name.lower()}_{i}" if slot.duplicable else slot.name.lower()
            lod = _lod_of(case, slot.name, i)
            block.create_var(name=name, shape=array.shape, dtype=array.dtype,
                             lod_level=len(lod) if lod else 0)
            feed[name] = (array, [list(level) for level in lod]) if lod else array
            names.append(name)
        op_inputs[slot.name] = names
    op_outputs = {}
    for slot, count in _output_counts(case, expected).items():
        duplicable = opdef.output_slots[slot].duplicable
        op_outputs[slot] = [f"out_{slot.lower()}_{i}" if duplicable else f"out_{slot.lower()}"
                            for i in range(count)]
    op = block.append_op(type=case.op, inputs=op_inputs, outputs=op_outputs, attrs=dict(case.attrs))
    return program, op, feed, op_outputs


def run_case(case, inputs=None, expected=None, place=None):
    program, op, feed, outputs = build(case, inputs, expected)
    fetch = [n for names in outputs.values() for n in names]
    exe = fluid.Executor(place or fluid.CPUPlace())
    values = exe.run(program, feed=feed, fetch_list=fetch, scope=fluid.Scope(),
                     return_numpy=False)
    by_name = dict(zip(fetch, values))
    result = {}
    for slot, names in outputs.items():
        duplicable = registry.get(case.op).output_slots[slot].duplicable
        tensors = [by_name[n] for n in names]
        result[slot] = tensors if duplicable else tensors[0]
    return program, op, result


def check_output(case):
    inputs = {k: v for k, v in case.inputs.items()}
    expected = case.ref(inputs, dict(case.attrs)) if case.ref is not None else None
    program, op, result = run_case(case, inputs, expected)
    fluid.verify(program)
    block = program.global_block()
    for slot, names in op.outputs.items():
        tensors = result[slot] if isinstance(result[slot], list) else [result[slot]]
        for name, tensor in zip(names, tensors):
            if tensor is None or not isinstance(tensor, fluid.LoDTensor):
                continue
            assert tensor.array.__class__ is np.ndarray, (
                f"{case.id}: {slot} holds a {type(tensor.array).__name__}, not an ndarray")
            declared = block.var(name).shape
            actual = np.asarray(tensor).shape
            if slot.endswith("XShape"):
                continue
            assert len(declared) == len(actual) and all(
                d < 0 or d == a for d, a in zip(declared, actual)), (
                f"{case.id}: infer_shape said {slot} is {list(declared)}, kernel gave "
                f"{list(actual)}")
            assert convert_dtype(np.asarray(tensor).dtype) == block.var(name).dtype, (
                f"{case.id}: infer_shape said {slot} is {block.var(name).dtype.name}, kernel "
                f"gave {np.asarray(tensor).dtype}")
    if expected is not None:
        for slot, want in expected.items():
            got = result[slot]
            if isinstance(want, list):
                assert len(got) == len(want), f"{case.id}: {slot} count"
                pairs = list(zip(got, want))
            else:
                pairs = [(got, want)]
            for g, w in pairs:
                if isinstance(w, tuple):  # (array, lod)
                    w, w_lod = w
                    assert g.lod() == [list(l) for l in w_lod], (
                        f"{case.id}: {slot} LoD {g.lod()} != {w_lod}")
                g = np.asarray(g)
                w = np.asarray(w)
                assert g.shape == w.shape, f"{case.id}: {slot} shape {g.shape} != {w.shape}"
                if w.dtype.kind in "fc":
                    np.testing.assert_allclose(g, w, rtol=case.rtol, atol=case.atol,
                                               err_msg=f"{case.id}: {slot}")
                else:
                    np.testing.assert_array_equal(g, w, err_msg=f"{case.id}: {slot}")
    if case.check is not None:
        case.check(result, inputs, dict(case.attrs))
    return result



def append_one(op_type, inputs, outputs, attrs=None):
    """Append one ``op_type`` to a fresh program: ``inputs`` maps slot -> (shape, dtype) and
    names each variable after its slot; returns the op (its infer_shape has run)."""
    program = fluid.Program()
    block = program.global_block()
    for name, (shape, dtype) in inputs.items():
        block.create_var(name=name, shape=shape, dtype=dtype)
    return block.append_op(type=op_type, inputs={k: [k] for k in inputs},
                           outputs={k: [k.lower() + "_out"] for k in outputs},
                           attrs=attrs or {})


def assert_build_fails(op, inputs, attrs, *words):
    """Building ``op`` raises InvalidArgument whose message starts with the op's type and
    contains every one of ``words``."""
    import pytest
    from fluid_nb.errors import InvalidArgument
    with pytest.raises(InvalidArgument) as info:
        build(OpCase(op, inputs, attrs=attrs))
    message = str(info.value)
    assert message.startswith(op), message
    for word in words:
        assert word in message, message


def table_tests(cases):
    """The three tests of an op family's table: every case against its NumPy reference,
    every case with ``grad`` against float64 finite differences, and every case forward and
    backward on the strict device against the host. A test module binds them::

        (test_output_matches_numpy, test_grad_matches_finite_differences,
         test_runs_on_the_strict_device) = table_tests(CASES)
    """
    @pytest.mark.parametrize("case", cases, ids=case_id)
    def test_output_matches_numpy(case):
        check_output(case)

    grad_cases = [c for c in cases if c.grad]
    if grad_cases:
        @pytest.mark.parametrize("case", grad_cases, ids=case_id)
        def test_grad_matches_finite_differences(case):
            check_grad(case)
    else:
        def test_grad_matches_finite_differences():
            """A table without gradient cases is one of ops that have no gradient."""
            with_grads = sorted({c.op for c in cases
                                 if registry.get(c.op).grad not in (None, registry.no_gradient)})
            assert not with_grads, f"ops with a grad maker but no gradient case: {with_grads}"

    @pytest.mark.parametrize("case", cases, ids=case_id)
    def test_runs_on_the_strict_device(case):
        check_on_device(case)

    return (test_output_matches_numpy, test_grad_matches_finite_differences,
            test_runs_on_the_strict_device)


def _as64(value):
    if isinstance(value, list):
        return [_as64(v) for v in value]
    value = np.asarray(value)
    return value.astype(np.float64) if value.dtype.kind == "f" else value


def _loss_weights(case, inputs, expected):
    """The forward outputs, the slots the loss is built from and its fixed random weights."""
    _, _, forward = run_case(case, inputs, expected)
    loss_slots = case.grad_outputs or [s for s, v in forward.items()
                                       if not isinstance(v, list) and v is not None
                                       and np.asarray(v).dtype.kind == "f"
                                       and not registry.get(case.op).output_slots[s].intermediate]
    rng = np.random.RandomState(7)
    weights = {}
    for slot in loss_slots:
        out = forward[slot]
        if isinstance(out, list):
            weights[slot] = [rng.uniform(0.5, 1.5, np.asarray(o).shape) for o in out]
        else:
            weights[slot] = rng.uniform(0.5, 1.5, np.asarray(out).shape)
    return forward, loss_slots, weights


def grad_program(case, inputs, expected, forward, loss_slots, weights):
    """The forward op and its grad ops, ``Out@GRAD`` fed with the loss weights: (program,
    feed, [(input slot, variable)] whose gradients it fetches as ``variable@GRAD``)."""
    program, op, feed, outputs = build(case, inputs, expected)
    block = program.global_block()
    specs = registry.make_grad_ops(op)
    assert specs, f"{case.id}: the op has no grad maker"
    grad_feed = dict(feed)
    for slot in loss_slots:
        for i, name in enumerate(op.outputs[slot]):
            w = weights[slot][i] if isinstance(weights[slot], list) else weights[slot]
            gname = name + "@GRAD"
            block.create_var(name=gname, shape=w.shape, dtype=w.dtype)
            grad_feed[gname] = w
    for slot, names in op.outputs.items():  # outputs not in the loss get zero gradients
        if slot in loss_slots:
            continue
        for name in names:
            gname = name + "@GRAD"
            value = np.asarray(forward[slot][0] if isinstance(forward[slot], list) else forward[slot])
            if value.dtype.kind == "f":
                block.create_var(name=gname, shape=value.shape, dtype=value.dtype)
                grad_feed[gname] = np.zeros_like(value)
    produced = set()
    for spec in specs:
        for args in spec.outputs.values():
            for name in args:
                if name != EMPTY_VAR_NAME and not block.has_var(name):
                    src = block._find_var_recursive(name[:-len("@GRAD")])
                    block.create_var(name=name, shape=src.shape, dtype=src.dtype)
                produced.add(name)
        block.append_op(type=spec.type, inputs=spec.inputs, outputs=spec.outputs,
                        attrs=spec.attrs)
    fluid.verify(program)
    targets = []
    for slot in case.grad:
        for name in op.inputs[slot]:
            assert name + "@GRAD" in produced, f"{case.id}: no gradient produced for {slot}"
            targets.append((slot, name))
    return program, op, grad_feed, targets


def check_grad(case):
    """Analytic gradients (grad ops) against float64 central differences."""
    inputs = {k: _as64(v) for k, v in case.inputs.items()}
    expected = case.ref(inputs, dict(case.attrs)) if case.ref is not None else None
    forward, loss_slots, weights = _loss_weights(case, inputs, expected)

    def loss(values):
        _, _, outs = run_case(case, values, expected)
        total = 0.0
        for slot in loss_slots:
            o, w = outs[slot], weights[slot]
            if isinstance(o, list):
                total += sum(float((np.asarray(a) * b).sum()) for a, b in zip(o, w))
            else:
                total += float((np.asarray(o) * w).sum())
        return total

    program, op, grad_feed, targets = grad_program(case, inputs, expected, forward,
                                                   loss_slots, weights)
    exe = fluid.Executor(fluid.CPUPlace())
    analytic = exe.run(program, feed=grad_feed, fetch_list=[n + "@GRAD" for _, n in targets],
                       scope=fluid.Scope())
    # numeric
    for (slot, name), got in zip(targets, analytic):
        if isinstance(inputs[slot], list):
            index = op.inputs[slot].index(name)
            base = inputs[slot][index]
        else:
            index, base = None, inputs[slot]
        numeric = np.zeros_like(base, dtype=np.float64)
        flat = base.reshape(-1)
        for k in range(flat.size):
            saved = flat[k]
            values = dict(inputs)
            plus = base.copy().reshape(-1)
            plus[k] = saved + case.delta
            minus = base.copy().reshape(-1)
            minus[k] = saved - case.delta
            values[slot] = _replace(inputs[slot], index, plus.reshape(base.shape))
            f_plus = loss(values)
            values[slot] = _replace(inputs[slot], index, minus.reshape(base.shape))
            f_minus = loss(values)
            numeric.reshape(-1)[k] = (f_plus - f_minus) / (2 * case.delta)
        got = np.asarray(got)
        assert got.shape == base.shape, f"{case.id}: d{slot} shape {got.shape} != {base.shape}"
        np.testing.assert_allclose(got, numeric, rtol=case.grad_rtol, atol=case.grad_atol,
                                   err_msg=f"{case.id}: gradient of {slot} ({name})")


def _replace(value, index, new):
    if index is None:
        return new
    value = list(value)
    value[index] = new
    return value


# --- the strict device -------------------------------------------------------------------------
def _host(value):
    """A fetched value as host data (an explicit, counted transfer for device tensors)."""
    if isinstance(value, list):
        return [_host(v) for v in value]
    return value if value is None else np.asarray(value)


def _same_on_both(case, what, on_host, on_device, rtol=1e-6, atol=1e-7):
    for slot, want in on_host.items():
        got = on_device[slot]
        pairs = list(zip(got, want)) if isinstance(want, list) else [(got, want)]
        for g, w in pairs:
            if w is None:
                assert g is None, f"{case.id}: {what} {slot} is None on the host only"
                continue
            if isinstance(w, fluid.LoDTensor):
                assert g.lod() == w.lod(), f"{case.id}: {what} {slot} LoD {g.lod()} != {w.lod()}"
            g, w = _host(g), _host(w)
            assert g.dtype == w.dtype and g.shape == w.shape, (
                f"{case.id}: {what} {slot} is {g.dtype}{list(g.shape)} on the device, "
                f"{w.dtype}{list(w.shape)} on the host")
            if w.dtype.kind in "fc":
                np.testing.assert_allclose(g, w, rtol=rtol, atol=atol,
                                           err_msg=f"{case.id}: {what} {slot} on the device")
            else:
                np.testing.assert_array_equal(g, w, err_msg=f"{case.id}: {what} {slot} on the device")


def _copied_back(results):
    """How many fetched tensors a device run copied to the host (those holding an array)."""
    values = [v for value in results.values()
              for v in (value if isinstance(value, list) else [value])]
    return sum(1 for v in values if isinstance(v, fluid.LoDTensor) and v.array is not None)


def _declared(op_type, copies, case):
    """Host copies beyond feeds and fetches only from an op that says it needs them."""
    if copies > 0:
        assert registry.get(op_type).host_reads, (
            f"{case.id}: {op_type} on the device copied {copies} value(s) to the host, but "
            f"its definition declares no host_reads")


def check_on_device(case, place=None):
    """The case's op, forward and (with ``grad``) backward, on a device place (default: the
    strict device): the same dtypes, shapes, LoD and values as on the host (random ops: the
    case's own ``check``), with no host transfers but the feeds and the fetches (counted on
    the strict device only).

    Returns the transfers each run made beyond those: {"forward": n, "backward": n}."""
    from fluid_nb.testing.strict_device import StrictDevicePlace, counting
    place = place or StrictDevicePlace()
    # the strict device computes with NumPy: the host's values to rounding; a GPU's
    # libraries sum in another order, so there the case's own tolerances apply
    close = ({} if isinstance(place, StrictDevicePlace)
             else {"rtol": max(case.rtol, 1e-5), "atol": max(case.atol, 1e-5)})
    inputs = dict(case.inputs)
    expected = case.ref(inputs, dict(case.attrs)) if case.ref is not None else None
    _, _, on_host = run_case(case, inputs, expected)
    with counting() as count:
        _, _, on_device = run_case(case, inputs, expected, place=place)
    extra = {"forward": count["to_host"] - _copied_back(on_device)}
    _declared(case.op, extra["forward"], case)
    if case.check is not None:
        case.check(on_device, inputs, dict(case.attrs))
    else:
        _same_on_both(case, "output", on_host, on_device, **close)
    if case.grad:
        inputs = {k: _as64(v) for k, v in case.inputs.items()}
        expected = case.ref(inputs, dict(case.attrs)) if case.ref is not None else None
        forward, loss_slots, weights = _loss_weights(case, inputs, expected)
        grads = {}
        for where in (fluid.CPUPlace(), place):
            program, _, feed, targets = grad_program(case, inputs, expected, forward,
                                                     loss_slots, weights)
            fetch = [n + "@GRAD" for _, n in targets]
            with counting() as count:
                grads[where.device] = dict(zip(fetch, fluid.Executor(where).run(
                    program, feed=feed, fetch_list=fetch, scope=fluid.Scope(),
                    return_numpy=False)))
        extra["backward"] = count["to_host"] - _copied_back(grads["gpu"])
        if extra["backward"] > 0:
            grad_ops = [o.type for o in program.global_block().ops]  # the forward op too
            assert any(registry.get(t).host_reads for t in grad_ops), (
                f"{case.id}: the ops {grad_ops} of the backward run on the device copied "
                f"{extra['backward']} "
                f"value(s) to the host, but none declares host_reads")
        _same_on_both(case, "gradient", grads["cpu"], grads["gpu"], **close)
    return extra
