"""ONNX export: ``fluid.onnx.export(program, path, ...)`` writes an inference program as an
ONNX model and reports, op by op, what converted and why the rest did not;
``fluid.onnx.to_program(model)`` reads an ONNX model back as a Program the views draw."""
from .export import DOMAIN, Report, Row, export  # noqa: F401
from .view import to_program  # noqa: F401

__all__ = ["export", "to_program", "Report", "Row"]
