"""``paddle.nn.functional``'s extension functions (Fluid 1.8): ``diag_embed`` and
``row_conv`` with its filter passed in."""
import numpy as np

from .... import layers
from .....framework.type_checks import check_variable_and_dtype
from ....layer_helper import LayerHelper

__all__ = ["row_conv", "diag_embed"]


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Each vector along ``input``'s last dim placed on diagonal ``offset`` (0 the main,
    > 0 above, < 0 below) of the square planes in dims ``dim1``, ``dim2`` of a result one
    rank higher (``diag_embed``); ``input`` may be a NumPy array (copied in by
    ``assign``). The output takes no gradient."""
    if isinstance(input, np.ndarray):
        input = layers.assign(input)
    return layers.diag_embed(input, offset=offset, dim1=dim1, dim2=dim2)


def row_conv(input, weight, act=None):
    """Lookahead convolution (``row_conv``): ``out[t] = sum_{i=0}^{k} input[t + i] *
    weight[i]`` within each sequence (a LoD tensor [T, D], or padded [N, T, D]),
    ``weight`` [k + 1, D]; then ``act``."""
    check_variable_and_dtype(input, "input", ("float32", "float64"), "row_conv")
    check_variable_and_dtype(weight, "weight", ("float32", "float64"), "row_conv")
    helper = LayerHelper("row_conv", act=act)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="row_conv", inputs={"X": [input], "Filter": [weight]},
                     outputs={"Out": [out]})
    return helper.append_activation(out)
