"""Metric layers: accuracy (top_k + accuracy ops)."""
from ...errors import InvalidType
from ...tensor.dtypes import VarType
from ...framework import program as _fw
from ...framework.program import Variable
from ...framework.transaction import (append_fresh, atomic, fresh_names, lean,
                                      take_back_fresh)
from ..layer_helper import LayerHelper
from .nn import topk
from .arg_checks import POSITIVE_INT, checks, optional, variable

__all__ = ["accuracy", "mean_iou", "auc"]


@lean  # (the usual call: top_k and the accuracy op, a refused op taking top_k back)
@checks(input=variable, label=variable, k=POSITIVE_INT, correct=optional(variable),
        total=optional(variable))
def accuracy(input, label, k=1, correct=None, total=None):
    """Fraction of rows whose ``label`` is among the top ``k`` scores of ``input``."""
    for name, value in (("input", input), ("label", label)):
        if not isinstance(value, Variable):
            raise InvalidType(f"accuracy: {name} expected Variable, but received "
                              f"{type(value).__name__}")
    if correct is not None or total is not None:
        with atomic():
            return _accuracy(input, label, k, correct, total)
    program = _fw._main_program
    block = program.blocks[program.current_block_idx]
    made = fresh_names(block, "top_k", 2)
    topk_out, topk_indices = topk(input, k=k)
    fraction, count = [(VarType.FP32, False)], [(VarType.INT32, False)]
    try:
        return append_fresh(block, "accuracy", {"Out": (topk_out.name,),
                                                "Indices": (topk_indices.name,),
                                                "Label": (label.name,)},
                            {"Accuracy": fraction, "Correct": count, "Total": count},
                            None, "accuracy")["Accuracy"][0]
    except BaseException:
        take_back_fresh(block, made, "top_k", 2)
        raise


def _accuracy(input, label, k, correct, total):
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
    from ...tensor.dtypes import VarType
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


def auc(input, label, curve="ROC", num_thresholds=2 ** 12 - 1, topk=1, slide_steps=1):
    """Area under the ROC (or PR) curve of ``input``'s positive-class probabilities (its
    last column) against 0/1 ``label``s, from counts kept in persistable variables: over the
    last ``slide_steps`` batches and over every batch. Returns ``(auc, batch_auc,
    [batch_stat_pos, batch_stat_neg, stat_pos, stat_neg])``, as Fluid does."""
    from ...framework import unique_name
    from ...tensor.dtypes import VarType
    from ...framework.program import default_main_program, default_startup_program
    from .arg_checks import INT, NON_NEGATIVE_INT, POSITIVE_INT, check, one_of, variable
    check("auc", "input", input, variable)
    check("auc", "label", label, variable)
    check("auc", "curve", curve, one_of("ROC", "PR"))
    check("auc", "num_thresholds", num_thresholds, POSITIVE_INT)
    check("auc", "topk", topk, INT)
    check("auc", "slide_steps", slide_steps, NON_NEGATIVE_INT)
    helper = LayerHelper("auc")
    buckets = num_thresholds + 1
    states = []
    for name, shape in (("batch_stat_pos", [(1 + slide_steps) * buckets + 1]),
                        ("batch_stat_neg", [(1 + slide_steps) * buckets + 1]),
                        ("stat_pos", [1, buckets]), ("stat_neg", [1, buckets])):
        var_name = unique_name.generate(f"auc_{name}")
        var = default_main_program().global_block().create_var(
            name=var_name, shape=shape, dtype=VarType.INT64, persistable=True)
        startup = default_startup_program().global_block()
        startup.create_var(name=var_name, shape=shape, dtype=VarType.INT64, persistable=True)
        startup.append_op(type="fill_constant", outputs={"Out": [var_name]},
                          attrs={"shape": shape, "dtype": int(VarType.INT64), "value": 0.0})
        states.append(var)
    batch_pos, batch_neg, stat_pos, stat_neg = states
    outputs = []
    for pos, neg, steps in ((batch_pos, batch_neg, slide_steps), (stat_pos, stat_neg, 0)):
        value = helper.create_variable_for_type_inference(VarType.FP64)
        helper.append_op(type="auc", inputs={"Predict": [input], "Label": [label],
                                             "StatPos": [pos], "StatNeg": [neg]},
                         outputs={"AUC": [value], "StatPosOut": [pos], "StatNegOut": [neg]},
                         attrs={"curve": curve, "num_thresholds": num_thresholds,
                                "slide_steps": steps})
        outputs.append(value)
    batch_auc, global_auc = outputs
    return global_auc, batch_auc, [batch_pos, batch_neg, stat_pos, stat_neg]
