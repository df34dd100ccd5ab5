"""Every converter against the executor on the op tables' inputs: each case's op exported
alone (its inputs the model's inputs) and run in onnxruntime gives the executor's outputs
(float32 within 1e-5 relative); a case a converter declines is reported with the reason,
and every converter has a case it converts."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.onnx.converters import CONVERTERS
from fluid_nb.ops import registry

from tests.ops.op_test import all_table_cases, build, case_id

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

#: (sequence_unpad makes a sequence of a plain batch: its output is padded by the convention,
#: so it is checked against the executor in test_sequences.py)
CASES = [c for c in all_table_cases()
         if c.op in CONVERTERS and not c.lod and c.op != "sequence_unpad"]


def _export(case, tmp_path):
    inputs = dict(case.inputs)
    expected = case.ref(inputs, dict(case.attrs)) if case.ref is not None else None
    program, op, feed, outputs = build(case, inputs, expected)
    # the op's main output (its first declared slot): what inference programs read; the
    # statistics, masks and saved values beside it serve training
    main_slot = registry.get(case.op).outputs[0].name
    wanted = list(outputs.get(main_slot, []))
    report = fluid.onnx.export(program, tmp_path / "op.onnx", feed=list(feed),
                               fetch=wanted, scope=fluid.Scope(), strict=True)
    return program, feed, wanted, report


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_an_exported_op_gives_the_executors_outputs(case, tmp_path):
    program, feed, fetch, report = _export(case, tmp_path)
    if not report.complete:  # declined: the converter said why, and nothing was written
        assert report.path is None and all(row.note for row in report.not_converted)
        assert all(row.op_type == case.op for row in report.not_converted)
        return
    onnx.checker.check_model(onnx.load(str(tmp_path / "op.onnx")), full_check=True)
    session = ort.InferenceSession(str(tmp_path / "op.onnx"),
                                   providers=["CPUExecutionProvider"])
    got = session.run(fetch, {k: np.asarray(v) for k, v in feed.items()
                              if k in {i.name for i in session.get_inputs()}})
    want = fluid.Executor(fluid.CPUPlace()).run(program, feed=feed, fetch_list=fetch,
                                                scope=fluid.Scope())
    for name, g, w in zip(fetch, got, want):
        w = np.asarray(w)
        assert g.dtype == w.dtype, f"{case.id}: {name} {g.dtype} != {w.dtype}"
        g = g.reshape(w.shape) if g.size == w.size == 1 else g
        assert g.shape == w.shape, f"{case.id}: {name} {g.shape} != {w.shape}"
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=f"{case.id}: {name}")


def test_every_converter_converts_some_table_case(tmp_path):
    converted = set()
    for case in CASES:
        _, _, _, report = _export(case, tmp_path)
        if report.complete:
            converted.add(case.op)
    missing = sorted({c.op for c in CASES} - converted)
    assert not missing, f"converters that declined every table case: {missing}"
    untested = sorted(set(CONVERTERS) - {c.op for c in CASES} - NO_TABLE_CASE)
    assert not untested, f"converters without a plain table case: {untested}"


#: converters whose ops the tables feed only with a LoD, a rank table or a tensor array:
#: tests/onnx/test_sequences.py runs them through the padded convention (the text
#: classifiers, the DynamicRNN) and test_control_flow.py (cond, case, Switch)
NO_TABLE_CASE = {"lstm", "gru", "sequence_pool", "lod_rank_table", "max_sequence_len",
                 "conditional_block", "sequence_concat", "sequence_conv", "sequence_expand",
                 "sequence_expand_as", "sequence_pad", "sequence_reverse", "sequence_slice",
                 "sequence_softmax", "sequence_unpad",
                 "lod_tensor_to_array", "read_from_array", "write_to_array",
                 "shrink_rnn_memory", "array_to_lod_tensor", "while"}


def test_a_multi_head_matmul_is_declined_with_its_reason(tmp_path):
    from tests.ops.test_fluid18_semantics import HEAD_CASES
    _, _, _, report = _export(HEAD_CASES[0], tmp_path)
    assert not report.complete and report.path is None
    assert "head_number=4" in report.not_converted[0].note
