"""``TensorView``: a tensor's values with its LoD drawn as nested boxes, one colour per
top-level sequence (the model is :func:`fluid_nb.viz.lod_model.lod_model`'s)."""
import traitlets

from ..errors import InvalidArgument
from ..tensor.tensor import LoDTensor
from ..viz.lod_model import lod_model
from ._base import ViewWidget, json_clean


def _tensor_of(value, lod):
    """What lod_model takes: ``value`` as given, or the ``(array, lod)`` pair."""
    if lod is None:
        return value
    if isinstance(value, LoDTensor):
        raise InvalidArgument("TensorView: lod expected only with a plain array (a LoDTensor "
                              "carries its own), but received both a LoDTensor and lod")
    return (value, lod)


class TensorView(ViewWidget):
    """Values with LoD boxes: every LoD level, offsets and lengths side by side, rows
    coloured by the top-level sequence they belong to.

    Example::

        t = fluid.create_lod_tensor(np.arange(14.0).reshape(14, 1), [[5, 3, 2, 4]], place)
        TensorView(t)
        TensorView(np.arange(14.0), lod=[[0, 5, 8, 10, 14]])   # offsets, as LoDTensor keeps

    ``value``: a LoDTensor, a live Variable, or an array (with ``lod``: offset-based LoD).
    """

    _kind = traitlets.Unicode("tensor").tag(sync=True)

    def __init__(self, value, lod=None, max_rows=64, **kwargs):
        self._source = _tensor_of(value, lod)
        self.max_rows = max_rows
        super().__init__(_model=json_clean(lod_model(self._source, max_rows=max_rows)),
                         **kwargs)

    def _fallback_bundle(self):
        return {"text/plain": _text(self._model)}

    def __repr__(self):
        return _text(self._model).splitlines()[0]


def _text(model):
    shape = "x".join(str(d) for d in model.get("shape", ())) or "scalar"
    lines = [f"TensorView({shape} {model.get('dtype', '?')}, "
             f"{len(model.get('levels', ()))} LoD level(s))"]
    for number, level in enumerate(model.get("levels", ())):
        lines.append(f"  level {number}: offsets {level.get('offsets')} lengths "
                     f"{level.get('lengths')}")
    return "\n".join(lines)
