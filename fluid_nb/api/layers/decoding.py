"""Decoding layers: ``beam_search`` (one step) and ``beam_search_decode`` (the sentences),
as the Fluid 1.x machine translation programs use them inside a While loop."""
from ...errors import InvalidType, expected
from ...tensor.dtypes import VarType, dtype_name
from ...framework.program import Variable
from ..layer_helper import LayerHelper
from .arg_checks import INT, NON_NEGATIVE_INT, POSITIVE_INT, boolean, checks, variable

__all__ = ["beam_search", "beam_search_decode", "ctc_greedy_decoder"]


def _of_dtype(where, name, var, *dtypes):
    if not isinstance(var, Variable):
        raise InvalidType(expected(where, name, "a Variable", type(var).__name__))
    if dtype_name(var.dtype) not in dtypes:
        raise InvalidType(expected(where, f"{name}'s dtype", " or ".join(dtypes),
                                   dtype_name(var.dtype)))


@checks(beam_size=POSITIVE_INT, end_id=INT, level=NON_NEGATIVE_INT, is_accumulated=boolean,
        return_parent_idx=boolean)
def beam_search(pre_ids, pre_scores, ids, scores, beam_size, end_id, level=0,
                is_accumulated=True, name=None, return_parent_idx=False):
    """One step of beam search: the ``beam_size`` best continuations per source among the
    candidates ``ids``/``scores`` (one row per prefix; LoD level ``level`` groups the
    prefixes by source). Returns ``(selected_ids, selected_scores)``, and the prefix row of
    each (``parent_idx``) with ``return_parent_idx``."""
    _of_dtype("beam_search", "pre_ids", pre_ids, "int64")
    _of_dtype("beam_search", "pre_scores", pre_scores, "float32", "float64")
    if ids is not None:
        _of_dtype("beam_search", "ids", ids, "int64", "int32")
    _of_dtype("beam_search", "scores", scores, "float32", "float64")
    helper = LayerHelper("beam_search", name=name)
    selected_ids = helper.create_variable_for_type_inference(VarType.INT64)
    selected_scores = helper.create_variable_for_type_inference(pre_scores.dtype)
    parent_idx = helper.create_variable_for_type_inference(VarType.INT32)
    inputs = {"pre_ids": [pre_ids], "pre_scores": [pre_scores], "scores": [scores]}
    if ids is not None:
        inputs["ids"] = [ids]
    helper.append_op(type="beam_search", inputs=inputs,
                     outputs={"selected_ids": [selected_ids],
                              "selected_scores": [selected_scores],
                              "parent_idx": [parent_idx]},
                     attrs={"level": level, "beam_size": beam_size, "end_id": end_id,
                            "is_accumulated": is_accumulated})
    if return_parent_idx:
        return selected_ids, selected_scores, parent_idx
    return selected_ids, selected_scores


@checks(beam_size=POSITIVE_INT, end_id=INT)
def beam_search_decode(ids, scores, beam_size, end_id, name=None):
    """The sentences of a finished beam search from the tensor arrays of each step's
    selected ids and scores: ``(sentence_ids, sentence_scores)`` with LoD [sentences per
    source, words per sentence], best first per source."""
    for arg, var, dtypes in (("ids", ids, ("int64",)), ("scores", scores, ("float32",
                                                                           "float64"))):
        _of_dtype("beam_search_decode", arg, var, *dtypes)
        if var.type != VarType.LOD_TENSOR_ARRAY:
            raise InvalidType(expected("beam_search_decode", arg,
                                       "a tensor array (fluid.layers.create_array)",
                                       f"a variable of type {var.type.name}"))
    helper = LayerHelper("beam_search_decode", name=name)
    sentence_ids = helper.create_variable_for_type_inference(VarType.INT64)
    sentence_scores = helper.create_variable_for_type_inference(scores.dtype)
    helper.append_op(type="beam_search_decode", inputs={"Ids": [ids], "Scores": [scores]},
                     outputs={"SentenceIds": [sentence_ids],
                              "SentenceScores": [sentence_scores]},
                     attrs={"beam_size": beam_size, "end_id": end_id})
    return sentence_ids, sentence_scores


@checks(blank=NON_NEGATIVE_INT)
def ctc_greedy_decoder(input, blank, input_length=None, padding_value=0, name=None):
    """Best-path CTC decoding of per-step class probabilities: the most probable class of
    each step, repeats merged, ``blank`` removed. LoD input [Lp, classes]: returns the
    decoded id sequences (LoD). Padded input [N, T, classes] with ``input_length`` [N, 1]:
    returns (ids [N, T] padded with ``padding_value``, their lengths [N, 1])."""
    from .arg_checks import check
    from .manip import squeeze
    from .nn import topk
    check("ctc_greedy_decoder", "input", input, variable)
    if input_length is not None:
        check("ctc_greedy_decoder", "input_length", input_length, variable)
    _, ids = topk(input, k=1)
    helper = LayerHelper("ctc_greedy_decoder", name=name)
    out = helper.create_variable_for_type_inference(VarType.INT64)
    attrs = {"merge_repeated": True, "blank": blank, "padding_value": padding_value}
    if input_length is None:
        helper.append_op(type="ctc_align", inputs={"Input": [ids]}, outputs={"Output": [out]},
                         attrs=attrs)
        return out
    out_length = helper.create_variable_for_type_inference(VarType.INT64)
    helper.append_op(type="ctc_align",
                     inputs={"Input": [squeeze(ids, [2])], "InputLength": [input_length]},
                     outputs={"Output": [out], "OutputLength": [out_length]}, attrs=attrs)
    return out, out_length
