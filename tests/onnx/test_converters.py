"""Every converter has a plain table case it converts, and a case it declines is reported
with the reason. The cases themselves run in onnxruntime against the executor in
tests/targets/test_targets_agree.py, with every other target that claims their ops."""
import pytest

from fluid_nb.rewriters.onnx.converters import CONVERTERS

from tests.ops.op_test import all_table_cases
from tests.targets.targets import onnx_export

onnx = pytest.importorskip("onnx")

#: (sequence_unpad makes a sequence of a plain batch: its output is padded by the convention,
#: so it is checked against the executor in test_sequences.py)
CASES = [c for c in all_table_cases()
         if c.op in CONVERTERS and not c.lod and c.op != "sequence_unpad"]


def _export(case, tmp_path):
    return onnx_export(case, tmp_path / "op.onnx")


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
