"""Input layers: ``fluid.layers.data`` (Fluid 1.x) and ``fluid.data`` (Fluid 1.6+)."""
from ..errors import InvalidArgument
from ..framework.dtypes import VarType
from ..layer_helper import LayerHelper
from .arg_checks import NON_NEGATIVE_INT, boolean, checks, data_shape, dtype, string

__all__ = ["data"]


def _check_name_shape(where, name, shape):
    if not isinstance(name, str):
        raise InvalidArgument(f"{where}: name expected str, but received {type(name).__name__}")
    if not isinstance(shape, (list, tuple)):
        raise InvalidArgument(f"{where}: shape expected list or tuple, but received "
                              f"{type(shape).__name__}")


@checks(name=string, shape=data_shape, append_batch_size=boolean, dtype=dtype,
        lod_level=NON_NEGATIVE_INT, stop_gradient=boolean)
def data(name, shape, append_batch_size=True, dtype="float32", lod_level=0,
         type=VarType.LOD_TENSOR, stop_gradient=True, value=None):
    """A global input variable to feed. With ``append_batch_size`` (and no None or negative
    dim given) the batch dim -1 is put in front: ``data('x', [13])`` has shape [-1, 13].

    As in Fluid 1.x, fed shapes are not checked (``need_check_feed`` is False; ``fluid.data``
    checks). ``value=`` (an array) is kept on the variable as ``_sample_value`` for live mode.
    """
    _check_name_shape("data", name, shape)
    helper = LayerHelper("data", name=name)
    shape = list(shape)
    for i, d in enumerate(shape):
        if d is None:
            shape[i] = -1
            append_batch_size = False
        elif d < 0:
            append_batch_size = False
    if append_batch_size:
        shape = [-1] + shape
    var = helper.create_global_variable(name=name, shape=shape, dtype=dtype, type=type,
                                        stop_gradient=stop_gradient, lod_level=lod_level,
                                        is_data=True, need_check_feed=False)
    if value is not None:
        var._sample_value = value
    return var


def fluid_data(name, shape, dtype="float32", lod_level=0, value=None):
    """``fluid.data``: the shape as given (None or -1 for any size); fed values are
    checked against it (``need_check_feed``)."""
    _check_name_shape("data", name, shape)
    helper = LayerHelper("data", name=name)
    shape = [-1 if d is None else int(d) for d in shape]
    var = helper.create_global_variable(name=name, shape=shape, dtype=dtype,
                                        type=VarType.LOD_TENSOR, stop_gradient=True,
                                        lod_level=lod_level, is_data=True, need_check_feed=True)
    if value is not None:
        var._sample_value = value
    return var
