"""An ONNX model file run on arrays: what ``fluid-nb run model.onnx --feed x=x.npy`` does.

The executor runs Fluid programs; the Program
:func:`~fluid_nb.rewriters.onnx.to_program` reads from an ONNX model holds ONNX's ops (it is
for reading and drawing), so an ONNX model runs in onnxruntime, the runtime ONNX models are
written for. The model is checked first (see
:mod:`.checks`); a model holding ops of fluid_nb's own domain (``ai.fluid_nb``, what
``fluid.onnx.export`` writes for an op no ONNX op expresses) is refused, naming them, since
onnxruntime has no kernel for them: the Fluid model it came from runs instead.
"""
import os

import numpy as np

from ...errors import InvalidArgument, PreconditionNotMet, Unimplemented, expected
from .export import DOMAIN
from .view import _load, _onnx


class OnnxModel:
    """An ONNX model file ready to run: ``inputs`` ({name: (dtype, dims)}, a dim None where
    the model leaves it free), ``outputs`` (names), :meth:`run`."""

    def __init__(self, path, where="run"):
        self.where = where
        model = _load(path, where)
        own = sorted(_own_domain_ops(model.graph))
        if own:
            raise Unimplemented(expected(
                where, f"model {os.fspath(path)!r}", "ONNX ops only (it runs in onnxruntime)",
                f"ops of fluid_nb's own domain {DOMAIN} ({', '.join(own)}), written by "
                f"fluid.onnx.export where no ONNX op fits; run the Fluid model it was "
                f"exported from (fluid-nb run MODEL_DIR)"))
        helper = _onnx().helper
        initialized = {init.name for init in model.graph.initializer}
        self.inputs = {}
        for value in model.graph.input:
            if value.name in initialized:  # (an input with a default: a parameter)
                continue
            tensor = value.type.tensor_type
            dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.elem_type)) \
                if tensor.elem_type else None
            dims = [d.dim_value if d.HasField("dim_value") else None
                    for d in tensor.shape.dim] if tensor.HasField("shape") else None
            self.inputs[value.name] = (dtype, dims)
        self.outputs = [value.name for value in model.graph.output]
        self._session = _session(path, where)

    def run(self, feeds, fetch=()):
        """``[(name, array)]`` of the outputs ``fetch`` names (default: all, in order) on
        ``feeds`` ({input name: array}; :func:`check_feed` has checked each)."""
        fetch = list(fetch) or self.outputs
        unknown = [name for name in fetch if name not in self.outputs]
        if unknown:
            raise InvalidArgument(expected(
                self.where, "--fetch", f"outputs of the ONNX model ({', '.join(self.outputs)}): "
                f"onnxruntime fetches only those", ", ".join(unknown)))
        arrays = {name: self.check_feed(name, value) for name, value in feeds.items()}
        try:
            values = self._session.run(fetch, arrays)
        except Exception as exc:  # a shape the model does not take: onnxruntime's words
            raise InvalidArgument(expected(self.where, "feeds", "values the ONNX model takes",
                                           f"arrays onnxruntime refused: {exc}")) from None
        return list(zip(fetch, values))

    def check_feed(self, name, value):
        """``value`` for input ``name``, refused unless its dtype and rank are the input's
        (onnxruntime converts nothing) and its fixed dims match."""
        dtype, dims = self.inputs[name]
        value = np.asarray(value)
        if dtype is not None and value.dtype != dtype:
            raise InvalidArgument(expected(self.where, f"feed {name!r}", f"{dtype} values",
                                           f"{value.dtype} values (convert the array, e.g. "
                                           f"a.astype('{dtype}'))"))
        if dims is not None and (value.ndim != len(dims) or any(
                d is not None and d != g for d, g in zip(dims, value.shape))):
            want = "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"
            raise InvalidArgument(expected(self.where, f"feed {name!r}", f"shape {want}",
                                           list(value.shape)))
        return value


def _own_domain_ops(graph):
    """The op types of ``graph`` (sub-graphs included) in fluid_nb's own domain."""
    found = set()
    for node in graph.node:
        if node.domain == DOMAIN:
            found.add(node.op_type)
        for attribute in node.attribute:
            for sub in ([attribute.g] if attribute.HasField("g") else []) + list(attribute.graphs):
                found |= _own_domain_ops(sub)
    return found


def _session(path, where):
    try:
        import onnxruntime
    except ImportError:
        raise PreconditionNotMet(expected(where, "the onnxruntime package",
                                          "installed to run an ONNX model (pip install "
                                          "onnxruntime)", "it is not installed")) from None
    try:
        return onnxruntime.InferenceSession(os.fspath(path), providers=["CPUExecutionProvider"])
    except Exception as exc:  # a model onnxruntime cannot load (an op it lacks, say)
        raise InvalidArgument(expected(where, f"model {os.fspath(path)!r}",
                                       "a model onnxruntime can load",
                                       f"one it refused: {exc}")) from None
