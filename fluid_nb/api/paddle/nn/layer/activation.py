"""Activation layers of ``paddle.nn`` (Fluid 1.8): ``ReLU``, ``Sigmoid``, ``LogSoftmax``
and the hierarchical-sigmoid cost ``HSigmoid`` with its own parameters."""
import warnings

from .....errors import InvalidArgument, expected
from .. import functional
from .layers import Layer

__all__ = ["ReLU", "Sigmoid", "LogSoftmax", "HSigmoid"]


class ReLU(Layer):
    """``out = max(input, 0)``; with ``inplace`` the output is the input Variable."""

    def __init__(self, inplace=False):
        super().__init__()
        self._inplace = inplace

    def forward(self, input):
        return functional.relu(input, self._inplace)


class Sigmoid(Layer):
    """``out = 1 / (1 + exp(-input))``."""

    def __init__(self, inplace=False):
        super().__init__()
        self._inplace = inplace

    def forward(self, input):
        return functional.sigmoid(input, self._inplace)


class LogSoftmax(Layer):
    """``out = log(softmax(input))`` along ``axis`` (None: the last)."""

    def __init__(self, axis=None):
        super().__init__()
        self._axis = axis

    def forward(self, input):
        return functional.log_softmax(input, self._axis)


class HSigmoid(Layer):
    """Hierarchical sigmoid cost (see ``functional.hsigmoid``) with its weight
    [C, feature_size] (Xavier) and bias [C, 1] (zeros) as parameters, ``C =
    num_classes - 1`` for the default tree, ``num_classes`` (the non-leaf nodes) for a
    custom one, whose ``path_table`` and ``path_code`` are passed at the call."""

    def __init__(self, feature_size, num_classes, param_attr=None, bias_attr=None,
                 is_custom=False, is_sparse=False, dtype="float32"):
        super().__init__()
        if num_classes < 2 and not is_custom:
            raise InvalidArgument(expected("HSigmoid", "num_classes",
                                           ">= 2 with the default tree", num_classes))
        if is_sparse and not is_custom:
            warnings.warn("HSigmoid: sparse mode needs a custom tree; using dense updates")
            is_sparse = False
        self._feature_size = feature_size
        self._num_classes = num_classes
        self._is_custom = is_custom
        self._is_sparse = is_sparse
        self._param_attr = param_attr
        self._bias_attr = bias_attr
        self._dtype = dtype
        nodes = num_classes if is_custom else num_classes - 1
        self.weight = self.create_parameter([nodes, feature_size], attr=param_attr,
                                            is_bias=False, dtype=dtype)
        self.bias = self.create_parameter([nodes, 1], attr=bias_attr, is_bias=True,
                                          dtype=dtype)

    def forward(self, input, label, path_table=None, path_code=None):
        return functional.hsigmoid(input, label, self.weight, self.bias, self._num_classes,
                                   path_table=path_table, path_code=path_code,
                                   is_sparse=self._is_sparse)
