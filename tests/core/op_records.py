"""What two ways of appending ops must agree on: a program's record (every variable's fields,
every op's type, arguments and attributes, the program's version), and which op types had
their shape inference run rather than answered from a memo."""
import pytest

from fluid_nb.framework import registry

VAR_FIELDS = ("name", "type", "shape", "dtype", "lod_level", "persistable", "stop_gradient",
              "is_data", "need_check_feed", "error_clip")


def record(program):
    """The global block's variables (VAR_FIELDS each) and ops, and the program's version."""
    block = program.global_block()
    variables = [tuple(getattr(v, f) for f in VAR_FIELDS) for v in block.vars.values()]
    ops = [(op.type, op.inputs, op.outputs, op.attrs, op.attr_types, op.is_target)
           for op in block.ops]
    return variables, ops, program._version


@pytest.fixture
def inferences(monkeypatch):
    """The op types whose shape inference ran (not answered from a memo)."""
    ran = []
    infer = registry.OpDef._infer

    def counted(self, op):
        ran.append(op.type)
        return infer(self, op)
    monkeypatch.setattr(registry.OpDef, "_infer", counted)
    return ran
