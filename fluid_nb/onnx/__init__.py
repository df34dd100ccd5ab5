"""ONNX export: ``fluid.onnx.export(program, path, ...)`` writes an inference program as an
ONNX model and reports, op by op, what converted and why the rest did not."""
from .export import DOMAIN, Report, Row, export  # noqa: F401

__all__ = ["export", "Report", "Row"]
