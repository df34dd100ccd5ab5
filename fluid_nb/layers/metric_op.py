"""Metric layers: accuracy (top_k + accuracy ops)."""
from ..errors import InvalidArgument
from ..framework.dtypes import VarType
from ..framework.program import Variable
from ..layer_helper import LayerHelper
from .nn import topk
from .arg_checks import POSITIVE_INT, checks, optional, variable

__all__ = ["accuracy"]


@checks(input=variable, label=variable, k=POSITIVE_INT, correct=optional(variable),
        total=optional(variable))
def accuracy(input, label, k=1, correct=None, total=None):
    """Fraction of rows whose ``label`` is among the top ``k`` scores of ``input``."""
    for name, value in (("input", input), ("label", label)):
        if not isinstance(value, Variable):
            raise InvalidArgument(f"accuracy: {name} expected Variable, but received "
                                  f"{type(value).__name__}")
    helper = LayerHelper("accuracy")
    topk_out, topk_indices = topk(input, k=k)
    acc_out = helper.create_variable_for_type_inference(dtype=VarType.FP32)
    if correct is None:
        correct = helper.create_variable_for_type_inference(dtype=VarType.INT32)
    if total is None:
        total = helper.create_variable_for_type_inference(dtype=VarType.INT32)
    helper.append_op(type="accuracy",
                     inputs={"Out": [topk_out], "Indices": [topk_indices], "Label": [label]},
                     outputs={"Accuracy": [acc_out], "Correct": [correct], "Total": [total]})
    return acc_out
