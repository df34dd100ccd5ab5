"""The loss layers of ``paddle.nn`` (Fluid 1.8): made with their options, called with
``(input, label)``; each returns the loss Variable ([1] when reduced by 'mean' or 'sum')."""
from .... import layers
from .....errors import InvalidArgument, InvalidType, expected
from .....framework.program import Variable
from .....framework.type_checks import check_variable_and_dtype
from ....layer_helper import LayerHelper
from .layers import Layer

__all__ = ["CrossEntropyLoss", "MSELoss", "L1Loss", "NLLLoss", "BCELoss"]

_REDUCTIONS = ("sum", "mean", "none")


def _check_reduction(where, reduction):
    if reduction not in _REDUCTIONS:
        raise InvalidArgument(expected(where, "reduction", "'sum', 'mean' or 'none'",
                                       repr(reduction)))


def _check_weight(where, weight):
    if weight is not None and not isinstance(weight, Variable):
        raise InvalidType(expected(where, "weight", "a Variable or None",
                                   type(weight).__name__))


def _reduce(out, reduction):
    if reduction == "sum":
        return layers.reduce_sum(out)
    if reduction == "mean":
        return layers.reduce_mean(out)
    return out


class CrossEntropyLoss(Layer):
    """Softmax cross entropy of ``input`` logits [N, C] against int64 class ids ``label``
    [N, 1]: ``loss_n = -log softmax(input_n)[label_n]``; with ``weight`` [C] each term is
    scaled by ``weight[label_n]`` (taken as ``-log(p ** weight)``), then reduced by
    ``reduction`` ('mean', 'sum' or 'none'; checked at the call)."""

    def __init__(self, weight=None, reduction="mean"):
        super().__init__()
        self.weight = weight
        self.reduction = reduction

    def forward(self, input, label):
        allowed = ("float32", "float64", "int32", "int64")
        check_variable_and_dtype(input, "input", allowed, "cross_entropy_loss")
        check_variable_and_dtype(label, "label", allowed, "cross_entropy_loss")
        _check_reduction("cross_entropy_loss", self.reduction)
        _check_weight("cross_entropy_loss", self.weight)
        prob = layers.softmax(input)
        if self.weight is not None:
            prob = layers.elementwise_pow(prob, self.weight, axis=-1)
        return _reduce(layers.cross_entropy(prob, label), self.reduction)


class MSELoss(Layer):
    """Mean square error: ``(input - label) ** 2`` elementwise, then reduced by
    ``reduction`` ('mean', 'sum' or 'none'); float32 inputs."""

    def __init__(self, reduction="mean"):
        _check_reduction("MSELoss", reduction)
        super().__init__()
        self.reduction = reduction

    def forward(self, input, label):
        check_variable_and_dtype(input, "input", ("float32",), "MSELoss")
        check_variable_and_dtype(label, "label", ("float32",), "MSELoss")
        square = layers.square(layers.elementwise_sub(input, label))
        return _reduce(square, self.reduction)


class L1Loss(Layer):
    """``|input - label|`` elementwise, then reduced by ``reduction`` ('mean', 'sum' or
    'none')."""

    def __init__(self, reduction="mean"):
        _check_reduction("L1Loss", reduction)
        super().__init__()
        self.reduction = reduction

    def forward(self, input, label):
        allowed = ("float32", "float64", "int32", "int64")
        check_variable_and_dtype(input, "input", allowed, "l1_loss")
        check_variable_and_dtype(label, "label", allowed, "l1_loss")
        return _reduce(layers.elementwise_sub(input, label, act="abs"), self.reduction)


class BCELoss(Layer):
    """Binary cross entropy of probabilities ``input`` in (0, 1) against ``label``
    (``bce_loss``): ``-(label * log(input) + (1 - label) * log(1 - input))``, times
    ``weight`` (broadcast from dim 0) when given, then reduced by ``reduction``."""

    def __init__(self, weight=None, reduction="mean"):
        _check_reduction("bce_loss", reduction)
        super().__init__()
        self.weight = weight
        self.reduction = reduction

    def forward(self, input, label):
        check_variable_and_dtype(input, "input", ("float32", "float64"), "bce_loss")
        check_variable_and_dtype(label, "label", ("float32", "float64"), "bce_loss")
        _check_weight("bce_loss", self.weight)
        helper = LayerHelper("bce_loss")
        out = helper.create_variable_for_type_inference(input.dtype)
        helper.append_op(type="bce_loss", inputs={"X": [input], "Label": [label]},
                         outputs={"Out": [out]})
        if self.weight is not None:
            out = layers.elementwise_mul(out, self.weight, axis=0)
        return _reduce(out, self.reduction)


class NLLLoss(Layer):
    """Negative log likelihood of log-probabilities ``input`` [N, C] or [N, C, d1, ...]
    against int64 class ids ``label`` [N] or [N, d1, ...] (``nll_loss``):
    ``l_n = -w[y_n] * x[n, y_n]``, ``w = weight`` (ones when None) with
    ``w[ignore_index] = 0``; 'mean' gives ``sum_n l_n / sum_n w[y_n]``, 'sum' ``sum_n l_n``,
    'none' the ``l_n`` in the label's shape. Inputs of other ranks than 2 and 4 go through
    [N, C, 1, -1]. ``reduction`` is checked at the call."""

    def __init__(self, weight=None, reduction="mean", ignore_index=-100):
        super().__init__()
        self.weight = weight
        self.reduction = reduction
        self.ignore_index = ignore_index

    def forward(self, input, label):
        check_variable_and_dtype(input, "input", ("float32", "float64"), "nll_loss")
        check_variable_and_dtype(label, "label", ("int64",), "nll_loss")
        _check_reduction("nll_loss", self.reduction)
        _check_weight("nll_loss", self.weight)
        x_shape = list(input.shape)
        if len(x_shape) < 2:
            raise InvalidArgument(expected("nll_loss", "input", "2 or more dimensions",
                                           f"shape {x_shape}"))
        folded = len(x_shape) not in (2, 4)
        if folded:
            # (0 copies the batch dim, which may be unknown at compile time)
            input = layers.reshape(input, shape=[0, x_shape[1], 1, -1])
            label = layers.reshape(label, shape=[0, 1, -1])
        inputs = {"X": [input], "Label": [label]}
        if self.weight is not None:
            inputs["Weight"] = [self.weight]
        helper = LayerHelper("nll_loss")
        out = helper.create_variable_for_type_inference(input.dtype)
        total_weight = helper.create_variable_for_type_inference(input.dtype)
        helper.append_op(type="nll_loss", inputs=inputs,
                         outputs={"Out": [out], "Total_weight": [total_weight]},
                         attrs={"reduction": self.reduction,
                                "ignore_index": self.ignore_index})
        if folded and self.reduction == "none":
            out = layers.reshape(out, shape=[0] + x_shape[2:])
        return out
