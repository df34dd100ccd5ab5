"""Activation functions of ``paddle.nn.functional`` (Fluid 1.8): each adds its ops to the
current block of the default main program and returns the output Variable."""
from .....framework.program import Variable
from .....framework.type_checks import check_dtype, check_variable_and_dtype
from .... import layers
from ....layer_helper import LayerHelper
from .....tensor.dtypes import convert_dtype
from .....errors import InvalidType, expected

__all__ = ["hsigmoid", "relu", "sigmoid", "log_softmax"]

_FLOATS = ("float16", "float32", "float64")


def relu(input, inplace=False, name=None):
    """``out = max(input, 0)`` (``relu``). With ``inplace`` the op writes ``input`` itself
    (and returns it): only when ``input`` feeds no other op."""
    check_variable_and_dtype(input, "input", _FLOATS, "relu")
    helper = LayerHelper("relu", name=name)
    out = input if inplace else helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="relu", inputs={"X": [input]}, outputs={"Out": [out]})
    return out


def sigmoid(input, inplace=False, name=None):
    """``out = 1 / (1 + exp(-input))`` (``sigmoid``); ``inplace`` is accepted and, as in
    Fluid 1.8's static mode, a new output is made all the same."""
    check_variable_and_dtype(input, "input", _FLOATS, "sigmoid")
    helper = LayerHelper("sigmoid", name=name)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="sigmoid", inputs={"X": [input]}, outputs={"Out": [out]})
    return out


def log_softmax(input, axis=None, dtype=None, name=None):
    """``out = log(exp(x_i) / sum_j exp(x_j))`` along ``axis`` (None: the last), as
    ``softmax`` then ``log``; with ``dtype`` the input is first cast to it (float32 or
    float64)."""
    axis = -1 if axis is None else axis
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise InvalidType(expected("log_softmax", "axis", "an int or None",
                                   f"{axis!r} ({type(axis).__name__})"))
    if dtype is None:
        check_variable_and_dtype(input, "input", _FLOATS, "log_softmax")
    else:
        if not isinstance(input, Variable):
            raise InvalidType(expected("log_softmax", "input", "Variable",
                                       type(input).__name__))
        dtype = convert_dtype(dtype)
        check_dtype(dtype, "dtype", ("float32", "float64"), "log_softmax")
    # the ops themselves are fluid.layers.log_softmax's (cast, softmax, log)
    return layers.log_softmax(input, axis, dtype, name)


def hsigmoid(input, label, weight, bias, num_classes, path_table=None, path_code=None,
             is_sparse=False):
    """Hierarchical sigmoid (``hierarchical_sigmoid``): the cost of ``label``'s path
    through a binary tree of classifiers, ``sum_j softrelu(pre_j) - sum_j code_j * pre_j``
    with ``pre_j = w_{node_j} . x + b_{node_j}`` over the path's nodes. The default tree
    (no ``path_table``/``path_code``) has ``num_classes - 1`` nodes, the rows of
    ``weight`` [num_classes - 1, D] and ``bias``; a custom tree passes each sample's path
    (node ids, -1 padded) and codes. Returns the cost, [N, 1]."""
    check_variable_and_dtype(input, "input", ("float32", "float64"), "hsigmoid")
    check_variable_and_dtype(label, "label", ("int64",), "hsigmoid")
    for name, value in (("weight", weight), ("bias", bias)):
        if value is not None and not isinstance(value, Variable):
            raise InvalidType(expected("hsigmoid", name, "Variable", type(value).__name__))
    if (path_table is None) != (path_code is None):
        raise InvalidType(expected("hsigmoid", "path_table and path_code",
                                   "both Variables (a custom tree) or both None",
                                   "only one of them"))
    helper = LayerHelper("hierarchical_sigmoid")
    inputs = {"X": [input], "W": [weight], "Label": [label]}
    if bias is not None:
        inputs["Bias"] = [bias]
    if path_table is not None:
        inputs["PathTable"], inputs["PathCode"] = [path_table], [path_code]
    out = helper.create_variable_for_type_inference(input.dtype)
    pre_out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="hierarchical_sigmoid", inputs=inputs,
                     outputs={"Out": [out], "PreOut": [pre_out]},
                     attrs={"num_classes": num_classes, "is_sparse": is_sparse,
                            "remote_prefetch": is_sparse})
    return out
