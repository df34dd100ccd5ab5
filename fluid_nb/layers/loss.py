"""Loss layers: square_error_cost, cross_entropy, softmax_with_cross_entropy."""
from ..errors import InvalidArgument
from ..framework.program import Variable
from ..layer_helper import LayerHelper
from .arg_checks import INT, boolean, checks, variable

__all__ = ["square_error_cost", "cross_entropy", "softmax_with_cross_entropy"]

#: Paddle's default ignore_index
kIgnoreIndex = -100


def _check_variable(where, name, value):
    if not isinstance(value, Variable):
        raise InvalidArgument(f"{where}: {name} expected Variable, but received "
                              f"{type(value).__name__}")


@checks(input=variable, label=variable)
def square_error_cost(input, label):
    """``(input - label)^2`` elementwise: ``elementwise_sub`` then ``square``."""
    _check_variable("square_error_cost", "input", input)
    _check_variable("square_error_cost", "label", label)
    helper = LayerHelper("square_error_cost")
    minus = helper.create_variable_for_type_inference(dtype=input.dtype)
    helper.append_op(type="elementwise_sub", inputs={"X": [input], "Y": [label]},
                     outputs={"Out": [minus]})
    out = helper.create_variable_for_type_inference(dtype=input.dtype)
    helper.append_op(type="square", inputs={"X": [minus]}, outputs={"Out": [out]})
    return out


@checks(input=variable, label=variable, soft_label=boolean, ignore_index=INT)
def cross_entropy(input, label, soft_label=False, ignore_index=kIgnoreIndex):
    """``-log(input[label])`` per row, ``input`` already a probability distribution.

    As in Fluid 1.x: hard labels use the ``cross_entropy2`` op (outputs Y, MatchX, XShape);
    ``soft_label=True`` uses ``cross_entropy`` (``-sum(label * log(input))``)."""
    _check_variable("cross_entropy", "input", input)
    _check_variable("cross_entropy", "label", label)
    if not soft_label:
        helper = LayerHelper("cross_entropy2")
        out = helper.create_variable_for_type_inference(dtype=input.dtype)
        xshape = helper.create_variable_for_type_inference(dtype=input.dtype)
        match_x = helper.create_variable_for_type_inference(dtype=input.dtype)
        helper.append_op(type="cross_entropy2", inputs={"X": [input], "Label": [label]},
                         outputs={"Y": [out], "MatchX": [match_x], "XShape": [xshape]},
                         attrs={"ignore_index": ignore_index})
        return out
    helper = LayerHelper("cross_entropy")
    out = helper.create_variable_for_type_inference(dtype=input.dtype)
    helper.append_op(type="cross_entropy", inputs={"X": [input], "Label": [label]},
                     outputs={"Y": [out]},
                     attrs={"soft_label": soft_label, "ignore_index": ignore_index})
    return out


@checks(logits=variable, label=variable, soft_label=boolean, ignore_index=INT,
        numeric_stable_mode=boolean, return_softmax=boolean, axis=INT)
def softmax_with_cross_entropy(logits, label, soft_label=False, ignore_index=kIgnoreIndex,
                               numeric_stable_mode=True, return_softmax=False, axis=-1):
    """Softmax of ``logits`` and its cross entropy with ``label`` in one op; returns the loss
    (and the softmax when ``return_softmax``)."""
    _check_variable("softmax_with_cross_entropy", "logits", logits)
    _check_variable("softmax_with_cross_entropy", "label", label)
    helper = LayerHelper("softmax_with_cross_entropy")
    softmax = helper.create_variable_for_type_inference(dtype=logits.dtype)
    loss = helper.create_variable_for_type_inference(dtype=logits.dtype)
    helper.append_op(type="softmax_with_cross_entropy",
                     inputs={"Logits": [logits], "Label": [label]},
                     outputs={"Softmax": [softmax], "Loss": [loss]},
                     attrs={"soft_label": soft_label, "ignore_index": ignore_index,
                            "numeric_stable_mode": numeric_stable_mode, "axis": axis})
    if return_softmax:
        return loss, softmax
    return loss
