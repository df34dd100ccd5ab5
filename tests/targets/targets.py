"""The targets an op can be run on besides the interpreter, and how a table case runs there.

A target claims an op type through its own table: the native code generator through
``EMITTERS`` (for C++ and for CUDA, whose runtime header gives the same kernel calls their
device code), ONNX export through ``CONVERTERS``. A claimed case either runs, giving
``[(name, interpreter's value, target's value)]``, or is declined with the reason the
target gives (:class:`Declined`): an emitter's ``NoEmitter`` or a converter's
``NotConvertible``, or a kind of program the target does not run at all.
"""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.ops import registry
from fluid_nb.rewriters.native import compile, generate
from fluid_nb.rewriters.native.emitters import EMITTERS
from fluid_nb.rewriters.onnx.converters import CONVERTERS
from fluid_nb.tensor.place import is_compiled_with_cuda

from tests.ops.op_test import _as64, _loss_weights, build, grad_program


class Declined(Exception):
    """The target has no code for this case; the message says why."""


def claims(op_type):
    """The targets whose tables have an entry for ``op_type`` (forward)."""
    found = set()
    if op_type in EMITTERS:
        found |= {"native", "cuda"}
    if op_type in CONVERTERS:
        found.add("onnx")
    return found


def grad_op_types(case):
    """The types of the grad ops the case's op makes."""
    inputs = dict(case.inputs)
    _, op, _, _ = build(case, inputs, _expected(case, inputs))
    return [spec.type for spec in registry.make_grad_ops(op)]


def claims_grad(case):
    """The targets that have code for the case's op and every grad op it makes (none
    without ``grad``): the program checked runs both."""
    if not case.grad or case.op not in EMITTERS \
            or not all(t in EMITTERS for t in grad_op_types(case)):
        return set()
    return {"native", "cuda"}


def _expected(case, inputs):
    return case.ref(inputs, dict(case.attrs)) if case.ref is not None else None


def _interpreted(program, feed, fetch):
    return fluid.Executor(fluid.CPUPlace()).run(program, feed=feed, fetch_list=fetch,
                                                scope=fluid.Scope(), return_numpy=False)


# --- native code: C++ on the host, CUDA on a GPU ---------------------------------------------
def runs_here(target):
    """Whether compiled code of ``target`` ("cpp" or "cuda") can run on this machine."""
    return target == "cpp" or is_compiled_with_cuda()


def _native(case, program, feed, fetch, target):
    """Generate, build and run ``program`` for ``target`` ("cpp" or "cuda")."""
    source = generate(program, target=target, feed=feed, fetch=fetch, scope=fluid.Scope())
    if source.fallbacks:  # only an emitter may decline a case, and it says why
        for _, op_type, why in source.fallbacks:
            assert op_type in EMITTERS and why and why != "no emitter for this op type", (
                f"{case.id}: {op_type} fell back: {why}")
        raise Declined("; ".join(f"{op_type}: {why}" for _, op_type, why in source.fallbacks))
    if target == "cuda":
        if source.dynamic:
            raise Declined("a program with LoD or sub-blocks: the CUDA target generates "
                           "and builds it but does not run it")
        if not runs_here(target):
            pytest.skip("no CUDA GPU visible to CuPy")
    # the outputs the op writes (a testing dropout writes no Mask, in either)
    computed = {v.name for v in source.variables} - source.not_computed
    fetch = [name for name in fetch if name in computed]
    assert fetch, f"{case.id}: the compiled op computes none of its outputs"
    place = fluid.CUDAPlace(0) if target == "cuda" else fluid.CPUPlace()
    native = compile(program, feed, fetch, scope=fluid.Scope(), target=target)
    got = fluid.Executor(place).run(native, feed=feed, fetch_list=fetch, scope=fluid.Scope(),
                                    return_numpy=False)
    return fetch, got


def forward_program(case):
    """The case's one-op program: (program, feed, every output's name)."""
    inputs = dict(case.inputs)
    program, _, feed, outputs = build(case, inputs, _expected(case, inputs))
    return program, feed, [n for names in outputs.values() for n in names]


def gradient_program(case):
    """The case's op and its grad ops (float64 inputs, the loss weights of the
    finite-difference check): (program, feed, the ``grad`` inputs' gradient names)."""
    inputs = {k: _as64(v) for k, v in case.inputs.items()}
    expected = _expected(case, inputs)
    forward, loss_slots, weights = _loss_weights(case, inputs, expected)
    program, _, feed, targets = grad_program(case, inputs, expected, forward, loss_slots,
                                             weights)
    return program, feed, [name + "@GRAD" for _, name in targets]


def native_values(case, make, target="cpp", builds=None):
    """The case's program (``make``: forward_program or gradient_program) compiled for
    ``target``: [(name, interpreter's value, compiled value)] of what it computes. The
    compiled values come from the op's one build in ``builds`` (a OneBuildPerOp) where the
    case is part of it, else from a build of the case alone."""
    program, feed, fetch = make(case)
    built = builds.values(case) if builds is not None and runs_here(target) else None
    fetch, got = built if built is not None else _native(case, program, feed, fetch, target)
    return list(zip(fetch, _interpreted(program, feed, fetch), got))


# --- ONNX in onnxruntime ----------------------------------------------------------------------
#: table cases the ONNX target is not run on here, and why
_ONNX_ELSEWHERE = {
    "lod": "a LoD input: the model takes a sequence padded, with its lengths (that "
           "convention is checked against the executor in tests/onnx/test_sequences.py)",
    "sequence_unpad": "its output is a sequence, which the model gives padded (checked "
                      "against the executor in tests/onnx/test_sequences.py)",
}


def onnx_export(case, path):
    """The case's op exported alone (its inputs the model's inputs, its main output, the
    first declared slot, the model's output): (program, feed, fetch names, report)."""
    inputs = dict(case.inputs)
    program, _, feed, outputs = build(case, inputs, _expected(case, inputs))
    # the op's main output: what inference programs read; the statistics, masks and saved
    # values beside it serve training
    main_slot = registry.get(case.op).outputs[0].name
    fetch = list(outputs.get(main_slot, []))
    report = fluid.onnx.export(program, path, feed=list(feed), fetch=fetch,
                               scope=fluid.Scope(), strict=True)
    return program, feed, fetch, report


def onnx_outputs(case, tmp_path):
    """The case's op exported to ONNX and run in onnxruntime: its main output."""
    import onnx
    import onnxruntime as ort
    if case.lod:
        raise Declined(_ONNX_ELSEWHERE["lod"])
    if case.op in _ONNX_ELSEWHERE:
        raise Declined(_ONNX_ELSEWHERE[case.op])
    path = tmp_path / "op.onnx"
    program, feed, fetch, report = onnx_export(case, path)
    if not report.complete:  # declined: the converter said why, and nothing was written
        assert report.path is None and all(row.note for row in report.not_converted)
        assert all(row.op_type == case.op for row in report.not_converted)
        raise Declined("; ".join(row.note for row in report.not_converted))
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}
    got = session.run(fetch, {k: np.asarray(v) for k, v in feed.items() if k in names})
    want = [np.asarray(w) for w in _interpreted(program, feed, fetch)]
    # (a model's one-value output may be a scalar where the program has shape [1])
    got = [g.reshape(w.shape) if g.size == w.size == 1 else g for g, w in zip(got, want)]
    return list(zip(fetch, want, got))
