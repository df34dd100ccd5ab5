"""Comparisons of ``paddle.tensor.logic`` (Fluid 1.8): ``elementwise_equal`` (one bool per
element), ``equal`` (one bool for the whole tensor) and ``allclose``."""
from ....framework.program import Variable
from ....framework.type_checks import check_type
from ...layer_helper import LayerHelper
# allclose and elementwise_equal are fluid_nb.api.layers' own: same signature, checks and ops
from ...layers.math import allclose, elementwise_equal
from ....tensor.dtypes import VarType

__all__ = ["equal", "allclose", "elementwise_equal"]


def equal(x, y, axis=-1, name=None):
    """[True] when ``x`` and ``y`` have one shape and are equal element by element, else
    [False]: a bool tensor of shape [1] (``equal_reduce``; ``y`` broadcast from ``axis``)."""
    check_type(x, "x", Variable, "equal")
    check_type(y, "y", Variable, "equal")
    helper = LayerHelper("equal_reduce", name=name)
    out = helper.create_variable_for_type_inference(VarType.BOOL)
    helper.append_op(type="equal_reduce", inputs={"X": [x], "Y": [y]},
                     outputs={"Out": [out]}, attrs={"axis": axis})
    return out
