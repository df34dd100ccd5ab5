"""Sequence labelling layers: ``linear_chain_crf`` (the training cost), ``crf_decoding``
(the best tag sequence under the learnt transitions) and ``chunk_eval`` (chunk precision,
recall and F1), each one op of the same name, as in Fluid 1.8.

A batch is either a LoD batch (emissions ``[N, D]``, labels ``[N, 1]`` with one LoD level)
or padded (emissions ``[B, S, D]``, labels ``[B, S]`` or ``[B, S, 1]``, and ``length``
``[B]`` or ``[B, 1]`` int64 with the valid steps of each row).
"""
from ...tensor.dtypes import VarType, convert_dtype
from ...framework.program import Variable
from ..layer_helper import LayerHelper
from ..param_attr import ParamAttr
from .arg_checks import POSITIVE_INT, Refused, checks, ints, one_of, optional, variable

__all__ = ["linear_chain_crf", "crf_decoding", "chunk_eval"]


def variable_of(*dtypes):
    """A Variable of one of ``dtypes`` (names)."""
    def rule(value):
        if not isinstance(value, Variable):
            raise Refused(f"a Variable of {' or '.join(dtypes)}", wrong_type=True)
        if value.dtype not in {convert_dtype(d) for d in dtypes}:
            raise Refused(f"a Variable of {' or '.join(dtypes)}, not "
                          f"{value.dtype.name.lower()}", wrong_type=True)
    return rule


FLOAT_VARIABLE = variable_of("float32", "float64")
INT64_VARIABLE = variable_of("int64")


@checks(input=FLOAT_VARIABLE, label=INT64_VARIABLE, length=optional(variable))
def linear_chain_crf(input, label, param_attr=None, length=None):
    """The negative log-likelihood of each sequence's labels under a linear-chain CRF:
    ``log Z(x) - score(label)``, with

        score(s) = a[s_1] + b[s_L] + sum_l x[l, s_l] + sum_l w[2 + s_(l-1), s_l]

    where ``x`` is ``input`` (unscaled emission scores, one column per tag) and the learnt
    transition parameter ``[D + 2, D]`` holds the start weights ``a`` (row 0), the end
    weights ``b`` (row 1) and the tag-to-tag weights ``w``; ``Z`` sums ``exp(score)`` over
    every tag sequence. Returns ``[num_sequences, 1]``; minimise its mean.

    Example::

        emission = fluid.layers.fc(input=feature, size=num_tags)
        cost = fluid.layers.linear_chain_crf(
            input=emission, label=target, param_attr=fluid.ParamAttr(name='crfw'))
        avg_cost = fluid.layers.mean(cost)
    """
    helper = LayerHelper("linear_chain_crf", param_attr=param_attr)
    tags = input.shape[2] if length is not None else input.shape[1]
    transition = helper.create_parameter(attr=helper.param_attr, shape=[tags + 2, tags],
                                         dtype=input.dtype)
    alpha, emission_exps, transition_exps, log_likelihood = (
        helper.create_variable_for_type_inference(input.dtype) for _ in range(4))
    inputs = {"Emission": [input], "Transition": [transition], "Label": [label]}
    if length is not None:
        inputs["Length"] = [length]
    helper.append_op(type="linear_chain_crf", inputs=inputs,
                     outputs={"Alpha": [alpha], "EmissionExps": [emission_exps],
                              "TransitionExps": [transition_exps],
                              "LogLikelihood": [log_likelihood]})
    return log_likelihood


@checks(input=FLOAT_VARIABLE, label=optional(variable), length=optional(variable))
def crf_decoding(input, param_attr, label=None, length=None):
    """The Viterbi path: for each sequence, the tag sequence of highest ``score`` (see
    :func:`linear_chain_crf`) under the transition parameter named by ``param_attr``
    (the one ``linear_chain_crf`` learnt). Returns int64 tags ``[N, 1]`` with the input's
    LoD, or ``[B, S]`` when padded; with ``label``, 1 where the decoded tag is right and 0
    where it is not.

    Example::

        crf_decode = fluid.layers.crf_decoding(
            input=emission, param_attr=fluid.ParamAttr(name='crfw'))
    """
    helper = LayerHelper("crf_decoding")
    attr = ParamAttr._to_attr(param_attr)
    transition = helper.get_parameter(getattr(attr, "name", None))
    path = helper.create_variable_for_type_inference(VarType.INT64)
    inputs = {"Emission": [input], "Transition": [transition]}
    if label is not None:
        inputs["Label"] = [label]
    if length is not None:
        inputs["Length"] = [length]
    helper.append_op(type="crf_decoding", inputs=inputs, outputs={"ViterbiPath": [path]})
    return path


@checks(input=INT64_VARIABLE, label=INT64_VARIABLE,
        chunk_scheme=one_of("IOB", "IOE", "IOBES", "plain"),
        num_chunk_types=POSITIVE_INT,
        excluded_chunk_types=optional(ints(None, 0, "chunk types")),
        seq_length=optional(variable))
def chunk_eval(input, label, chunk_scheme, num_chunk_types, excluded_chunk_types=None,
               seq_length=None):
    """Chunk detection quality of predicted tags ``input`` against ``label``: returns
    (precision, recall, f1_score, num_infer_chunks, num_label_chunks, num_correct_chunks).

    Tag ``v`` is position ``v % n`` of chunk type ``v // n``, with ``n`` tags per type by
    ``chunk_scheme`` (IOB 2, IOE 2, IOBES 4, plain 1) and ``num_chunk_types * n`` outside
    any chunk. A chunk counts as correct when its first step, last step and type all
    match. ``precision = correct / inferred``, ``recall = correct / labelled``,
    ``f1 = 2 * precision * recall / (precision + recall)``. Padded input needs
    ``seq_length``.
    """
    helper = LayerHelper("chunk_eval")
    precision, recall, f1_score = (
        helper.create_variable_for_type_inference("float32") for _ in range(3))
    num_infer, num_label, num_correct = (
        helper.create_variable_for_type_inference("int64") for _ in range(3))
    inputs = {"Inference": [input], "Label": [label]}
    if seq_length is not None:
        inputs["SeqLength"] = [seq_length]
    helper.append_op(type="chunk_eval", inputs=inputs,
                     outputs={"Precision": [precision], "Recall": [recall],
                              "F1-Score": [f1_score], "NumInferChunks": [num_infer],
                              "NumLabelChunks": [num_label], "NumCorrectChunks": [num_correct]},
                     attrs={"num_chunk_types": num_chunk_types, "chunk_scheme": chunk_scheme,
                            "excluded_chunk_types": list(excluded_chunk_types or [])})
    return precision, recall, f1_score, num_infer, num_label, num_correct
