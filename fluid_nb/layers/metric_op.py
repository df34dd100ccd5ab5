"""Metric layers: accuracy (top_k + accuracy ops)."""
from ..errors import InvalidArgument
from ..framework.dtypes import VarType
from ..framework.program import Variable
from ..layer_helper import LayerHelper
from .nn import topk
from .arg_checks import POSITIVE_INT, checks, optional, variable

__all__ = ["accuracy", "mean_iou"]


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


def mean_iou(input, label, num_classes):
    """Mean intersection over union of predicted and true class ids (segmentation):
    returns ``(mean_iou, out_wrong, out_correct)``, the per-class counts as well."""
    from ..framework.dtypes import VarType
    from .arg_checks import POSITIVE_INT, check, variable
    check("mean_iou", "input", input, variable)
    check("mean_iou", "label", label, variable)
    check("mean_iou", "num_classes", num_classes, POSITIVE_INT)
    helper = LayerHelper("mean_iou")
    out_mean_iou = helper.create_variable_for_type_inference(VarType.FP32)
    out_wrong = helper.create_variable_for_type_inference(VarType.INT32)
    out_correct = helper.create_variable_for_type_inference(VarType.INT32)
    helper.append_op(type="mean_iou", inputs={"Predictions": [input], "Labels": [label]},
                     outputs={"OutMeanIou": [out_mean_iou], "OutWrong": [out_wrong],
                              "OutCorrect": [out_correct]},
                     attrs={"num_classes": num_classes})
    return out_mean_iou, out_wrong, out_correct
