"""Searching and selecting of ``paddle.tensor.search`` (Fluid 1.8): ``argmax``, ``sort``,
``where``, ``nonzero``, ``index_select`` and ``index_sample``."""
from ....framework.program import Variable
from ....framework.type_checks import check_type, check_variable_and_dtype
from ...layer_helper import LayerHelper
from ... import layers
# index_select and index_sample are fluid_nb.api.layers' own: same signature, checks and ops
from ...layers.math import index_sample, index_select
from ....tensor.dtypes import VarType
from ._common import NUMBERS, check_dtype_arg, result

__all__ = ["argmax", "where", "index_select", "nonzero", "sort", "index_sample"]


def argmax(input, axis=None, dtype=None, out=None, keepdims=False, name=None):
    """The index of the largest element along ``axis`` (the last when None) (``arg_max``);
    int64 indices unless ``dtype`` is 'int32'. With ``keepdims`` the reduced dim stays as
    size 1. The result gets no gradient."""
    check_variable_and_dtype(input, "input", ("float32", "float64", "int8", "int16",
                                              "int32", "int64", "uint8"), "arg_max")
    attrs = {}
    if dtype is None:
        vt = VarType.INT64
    else:
        vt = check_dtype_arg("arg_max", dtype, ("int32", "int64"))
        attrs["dtype"] = int(vt)
    helper = LayerHelper("arg_max", name=name)
    out = result(helper, vt, out, name)
    attrs.update(axis=-1 if axis is None else axis, keepdims=keepdims)
    helper.append_op(type="arg_max", inputs={"X": [input]}, outputs={"Out": [out]},
                     attrs=attrs)
    out.stop_gradient = True
    return out


def sort(input, axis=-1, descending=False, out=None, name=None):
    """``input`` sorted along ``axis`` (ascending unless ``descending``), and the int64
    positions the sorted elements came from: returns (out, indices) (``argsort``)."""
    check_variable_and_dtype(input, "input", NUMBERS, "sort")
    helper = LayerHelper("sort", name=name)
    out = result(helper, input.dtype, out, name)
    ids = helper.create_variable_for_type_inference(VarType.INT64, stop_gradient=True)
    helper.append_op(type="argsort", inputs={"X": [input]},
                     outputs={"Out": [out], "Indices": [ids]},
                     attrs={"axis": axis, "descending": descending})
    return out, ids


def where(condition, x, y, name=None):
    """out[i] = x[i] where condition[i] else y[i] (``where``). When ``x`` and ``y`` differ in
    shape they are broadcast: x * cast(condition) + y * cast(not condition)."""
    check_variable_and_dtype(condition, "condition", ("bool",), "where")
    check_variable_and_dtype(x, "x", NUMBERS, "where")
    check_variable_and_dtype(y, "y", NUMBERS, "where")
    if list(x.shape) != list(y.shape):
        chosen = layers.elementwise_mul(x, layers.cast(condition, x.dtype))
        other = layers.elementwise_mul(y, layers.cast(layers.logical_not(condition), x.dtype))
        return layers.elementwise_add(chosen, other)
    helper = LayerHelper("where", name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="where", inputs={"Condition": [condition], "X": [x], "Y": [y]},
                     outputs={"Out": [out]})
    return out


def nonzero(input, as_tuple=False):
    """The coordinates of ``input``'s non-zero elements (``where_index``): an int64 tensor
    [count, rank]; with ``as_tuple``, a tuple of rank [count, 1] tensors, one per dim."""
    check_type(input, "input", Variable, "nonzero")
    coords = layers.where(input)
    if not as_tuple:
        return coords
    rank = len(input.shape)
    if rank == 1:
        return (coords,)
    return tuple(layers.slice(coords, axes=[1], starts=[i], ends=[i + 1])
                 for i in range(rank))
