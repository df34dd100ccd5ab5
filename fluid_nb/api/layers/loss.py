"""Loss layers: square_error_cost, cross_entropy, softmax_with_cross_entropy, and the
further losses of Fluid 1.8 (sigmoid cross entropy, Huber, smooth L1, log, KL divergence,
ranking, BPR, MSE, Dice, N-pair)."""
from ...errors import InvalidArgument, expected
from ...framework import program as _fw
from ...framework.transaction import append_after, append_fresh, append_one_op, lean
from ...framework.type_checks import require_variable
from ..layer_helper import LayerHelper
from .arg_checks import INT, NUMBER, boolean, checks, optional, real_in, variable

__all__ = ["square_error_cost", "cross_entropy", "softmax_with_cross_entropy",
           "sigmoid_cross_entropy_with_logits", "huber_loss", "smooth_l1", "log_loss",
           "kldiv_loss", "margin_rank_loss", "rank_loss", "bpr_loss", "mse_loss", "dice_loss",
           "npair_loss", "edit_distance", "teacher_student_sigmoid_loss", "center_loss",
           "warpctc", "hsigmoid", "nce", "sampled_softmax_with_cross_entropy"]

#: Paddle's default ignore_index
kIgnoreIndex = -100


_check_variable = require_variable


def _block():
    program = _fw._main_program
    return program.blocks[program.current_block_idx]


@lean  # (its two ops through append_one_op and append_after, taken back together)
@checks(input=variable, label=variable)
def square_error_cost(input, label):
    """``(input - label)^2`` elementwise: ``elementwise_sub`` then ``square``."""
    _check_variable("square_error_cost", "input", input)
    _check_variable("square_error_cost", "label", label)
    block = _block()
    minus = append_one_op(block, "elementwise_sub", {"X": (input.name,), "Y": (label.name,)},
                          None, input.dtype, "square_error_cost")
    return append_after(block, [(block.ops[-1], minus.name, "square_error_cost")], "square",
                        {"X": (minus.name,)}, input.dtype, None, "square_error_cost")


@lean  # (one op through append_fresh)
@checks(input=variable, label=variable, soft_label=boolean, ignore_index=INT)
def cross_entropy(input, label, soft_label=False, ignore_index=kIgnoreIndex):
    """``-log(input[label])`` per row, ``input`` already a probability distribution.

    As in Fluid 1.x: hard labels use the ``cross_entropy2`` op (outputs Y, MatchX, XShape);
    ``soft_label=True`` uses ``cross_entropy`` (``-sum(label * log(input))``)."""
    _check_variable("cross_entropy", "input", input)
    _check_variable("cross_entropy", "label", label)
    inputs = {"X": (input.name,), "Label": (label.name,)}
    if not soft_label:  # (Y, XShape and MatchX named in that order, as Fluid makes them)
        fresh = [(input.dtype, False)]
        return append_fresh(_block(), "cross_entropy2", inputs,
                            {"Y": fresh, "XShape": fresh, "MatchX": fresh},
                            {"ignore_index": ignore_index}, "cross_entropy2",
                            ("Y", "MatchX", "XShape"))["Y"][0]
    return append_fresh(_block(), "cross_entropy", inputs, {"Y": [(input.dtype, False)]},
                        {"soft_label": soft_label, "ignore_index": ignore_index},
                        "cross_entropy")["Y"][0]


@lean  # (one op through append_fresh)
@checks(logits=variable, label=variable, soft_label=boolean, ignore_index=INT,
        numeric_stable_mode=boolean, return_softmax=boolean, axis=INT)
def softmax_with_cross_entropy(logits, label, soft_label=False, ignore_index=kIgnoreIndex,
                               numeric_stable_mode=True, return_softmax=False, axis=-1):
    """Softmax of ``logits`` and its cross entropy with ``label`` in one op; returns the loss
    (and the softmax when ``return_softmax``)."""
    _check_variable("softmax_with_cross_entropy", "logits", logits)
    _check_variable("softmax_with_cross_entropy", "label", label)
    fresh = [(logits.dtype, False)]
    made = append_fresh(_block(), "softmax_with_cross_entropy",
                        {"Logits": (logits.name,), "Label": (label.name,)},
                        {"Softmax": fresh, "Loss": fresh},
                        {"soft_label": soft_label, "ignore_index": ignore_index,
                         "numeric_stable_mode": numeric_stable_mode, "axis": axis},
                        "softmax_with_cross_entropy")
    softmax, loss = made["Softmax"][0], made["Loss"][0]
    if return_softmax:
        return loss, softmax
    return loss


# --- the further losses of fluid.layers ------------------------------------------------------
def _one_op(op_type, inputs, out_slot, dtype, attrs=None, extra_outputs=(), name=None):
    helper = LayerHelper(op_type, name=name)
    out = helper.create_variable_for_type_inference(dtype)
    outputs = {out_slot: [out]}
    for slot in extra_outputs:
        outputs[slot] = [helper.create_variable_for_type_inference(dtype)]
    helper.append_op(type=op_type, inputs=inputs, outputs=outputs, attrs=attrs or {})
    return out


@checks(x=variable, label=variable, ignore_index=INT, normalize=boolean)
def sigmoid_cross_entropy_with_logits(x, label, ignore_index=kIgnoreIndex, name=None,
                                      normalize=False):
    """Elementwise log loss of sigmoid(x) against label probabilities (labels equal to
    ``ignore_index`` count 0; ``normalize`` divides by the count of the others)."""
    return _one_op("sigmoid_cross_entropy_with_logits", {"X": [x], "Label": [label]}, "Out",
                   x.dtype, {"ignore_index": ignore_index, "normalize": normalize}, name=name)


@checks(input=variable, label=variable, delta=real_in(0.0))
def huber_loss(input, label, delta):
    """Out = r^2 / 2 where |r| <= delta, else delta (|r| - delta / 2), r = label - input."""
    return _one_op("huber_loss", {"X": [input], "Y": [label]}, "Out", input.dtype,
                   {"delta": float(delta)}, extra_outputs=("Residual",))


@checks(x=variable, y=variable, inside_weight=optional(variable),
        outside_weight=optional(variable), sigma=optional(real_in(0.0)))
def smooth_l1(x, y, inside_weight=None, outside_weight=None, sigma=None):
    """The smooth L1 loss of each row, [N, 1] (Fast R-CNN's box regression loss)."""
    inputs = {"X": [x], "Y": [y]}
    if inside_weight is not None:
        inputs["InsideWeight"] = [inside_weight]
    if outside_weight is not None:
        inputs["OutsideWeight"] = [outside_weight]
    return _one_op("smooth_l1_loss", inputs, "Out", x.dtype,
                   {"sigma": 1.0 if sigma is None else float(sigma)}, extra_outputs=("Diff",))


@checks(input=variable, label=variable, epsilon=real_in(0.0))
def log_loss(input, label, epsilon=1e-4, name=None):
    """Loss = -label log(input + eps) - (1 - label) log(1 - input + eps)."""
    return _one_op("log_loss", {"Predicted": [input], "Labels": [label]}, "Loss",
                   input.dtype, {"epsilon": float(epsilon)}, name=name)


@checks(x=variable, target=variable)
def kldiv_loss(x, target, reduction="mean", name=None):
    """KL divergence of ``target`` from the distribution whose logs are ``x``; reduction
    'none', 'sum', 'mean' or 'batchmean'."""
    from .arg_checks import check, one_of
    check("kldiv_loss", "reduction", reduction, one_of("none", "sum", "mean", "batchmean"))
    return _one_op("kldiv_loss", {"X": [x], "Target": [target]}, "Loss", x.dtype,
                   {"reduction": reduction}, name=name)


@checks(label=variable, left=variable, right=variable, margin=NUMBER)
def margin_rank_loss(label, left, right, margin=0.1, name=None):
    """Out = max(0, -label (left - right) + margin), label +1 or -1."""
    return _one_op("margin_rank_loss", {"X1": [left], "X2": [right], "Label": [label]},
                   "Out", left.dtype, {"margin": float(margin)},
                   extra_outputs=("Activated",), name=name)


@checks(label=variable, left=variable, right=variable)
def rank_loss(label, left, right, name=None):
    """RankNet: Out = log(1 + e^(left - right)) - label (left - right)."""
    return _one_op("rank_loss", {"Label": [label], "Left": [left], "Right": [right]}, "Out",
                   left.dtype, name=name)


@checks(input=variable, label=variable)
def bpr_loss(input, label, name=None):
    """Bayesian personalized ranking of each row's labelled item above the others."""
    return _one_op("bpr_loss", {"X": [input], "Label": [label]}, "Y", input.dtype,
                   name=name)


@checks(input=variable, label=variable)
def mse_loss(input, label):
    """The mean of (input - label)^2."""
    from .nn import reduce_mean
    return reduce_mean(square_error_cost(input, label))


@checks(input=variable, label=variable, epsilon=real_in(0.0))
def dice_loss(input, label, epsilon=0.00001):
    """1 - 2 |X n Y| / (|X| + |Y|) averaged over the batch, with ``label`` class ids one-hot
    over ``input``'s last dim (segmentation)."""
    from .nn import one_hot, reduce_mean, reduce_sum
    label = one_hot(label, depth=input.shape[-1])
    dims = list(range(1, len(input.shape)))
    intersection = reduce_sum(input * label, dim=dims)
    denominator = reduce_sum(input, dim=dims) + reduce_sum(label, dim=dims)
    score = 1 - intersection * 2 / (denominator + epsilon)
    return reduce_mean(score)


@checks(anchor=variable, positive=variable, labels=variable, l2_reg=real_in(0.0))
def npair_loss(anchor, positive, labels, l2_reg=0.002):
    """N-pair loss (Sohn): softmax cross entropy of the anchor-positive similarities
    against the same-label matrix, plus l2_reg / 4 times the embeddings' mean squared norms."""
    from .control_flow import equal
    from .manip import expand, reshape, transpose
    from .nn import matmul, reduce_mean, reduce_sum
    from .ops import square
    from .tensor import cast
    batch = labels.shape[0]
    labels = expand(reshape(labels, [batch, 1]), [1, batch])
    same = cast(equal(labels, transpose(labels, [1, 0])), "float32")
    same = same / reduce_sum(same, dim=1, keep_dim=True)
    l2 = (reduce_mean(reduce_sum(square(anchor), 1)) +
          reduce_mean(reduce_sum(square(positive), 1))) * (0.25 * l2_reg)
    similarity = matmul(anchor, positive, transpose_y=True)
    entropy = softmax_with_cross_entropy(similarity, same, soft_label=True)
    return l2 + reduce_mean(reduce_sum(same * entropy, 0))


@checks(input=variable, label=variable, normalized=boolean,
        input_length=optional(variable), label_length=optional(variable))
def edit_distance(input, label, normalized=True, ignored_tokens=None, input_length=None,
                  label_length=None):
    """Levenshtein distances between hypotheses and references (int64 id sequences by LoD,
    or padded with lengths), divided by the reference length when ``normalized``; ids in
    ``ignored_tokens`` are erased first. Returns ``(distances [N, 1], sequence_num)``."""
    from ...tensor.dtypes import VarType
    helper = LayerHelper("edit_distance")
    if ignored_tokens:
        erased = []
        for seq in (input, label):
            out = helper.create_variable_for_type_inference(VarType.INT64)
            helper.append_op(type="sequence_erase", inputs={"X": [seq]},
                             outputs={"Out": [out]},
                             attrs={"tokens": [int(t) for t in ignored_tokens]})
            erased.append(out)
        input, label = erased
    inputs = {"Hyps": [input], "Refs": [label]}
    if input_length is not None:
        inputs["HypsLength"] = [input_length]
    if label_length is not None:
        inputs["RefsLength"] = [label_length]
    distance = helper.create_variable_for_type_inference(VarType.FP32)
    sequence_num = helper.create_variable_for_type_inference(VarType.INT64)
    helper.append_op(type="edit_distance", inputs=inputs,
                     outputs={"Out": [distance], "SequenceNum": [sequence_num]},
                     attrs={"normalized": normalized})
    return distance, sequence_num


@checks(input=variable, label=variable, soft_max_up_bound=NUMBER, soft_max_lower_bound=NUMBER)
def teacher_student_sigmoid_loss(input, label, soft_max_up_bound=15.0,
                                 soft_max_lower_bound=-15.0):
    """The click and teacher-score sigmoid cross entropies of a CTR model distilled from a
    teacher (``label`` encodes both; see the op)."""
    return _one_op("teacher_student_sigmoid_loss", {"X": [input], "Label": [label]}, "Y",
                   input.dtype, {"soft_max_up_bound": float(soft_max_up_bound),
                                 "soft_max_lower_bound": float(soft_max_lower_bound)})


@checks(input=variable, label=variable, alpha=NUMBER, update_center=boolean)
def center_loss(input, label, num_classes, alpha, param_attr, update_center=True):
    """Center loss (Wen et al.): half the squared distance of each feature row to its
    class center; the centers (a parameter, initialised 0) move towards their samples at
    rate ``alpha`` at every run when ``update_center``. Returns the loss, [N, 1]."""
    from ..initializer import Constant
    from .arg_checks import POSITIVE_INT, check
    from .tensor import create_global_var
    check("center_loss", "num_classes", num_classes, POSITIVE_INT)
    helper = LayerHelper("center_loss", param_attr=param_attr)
    centers = helper.create_parameter(attr=helper.param_attr,
                                      shape=[num_classes, input.shape[1]], dtype=input.dtype,
                                      default_initializer=Constant(0.0))
    centers.stop_gradient = True
    rate = create_global_var(shape=[1], value=float(alpha), dtype="float32", persistable=True,
                             name="center_loss_alpha")
    diff = helper.create_variable_for_type_inference(input.dtype)
    loss = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="center_loss",
                     inputs={"X": [input], "Label": [label], "Centers": [centers],
                             "CenterUpdateRate": [rate]},
                     outputs={"SampleCenterDiff": [diff], "Loss": [loss],
                              "CentersOut": [centers]},
                     attrs={"cluster_num": num_classes, "need_update": update_center})
    return loss


@checks(input=variable, label=variable, blank=INT, norm_by_times=boolean,
        input_length=optional(variable), label_length=optional(variable))
def warpctc(input, label, blank=0, norm_by_times=False, input_length=None, label_length=None):
    """CTC loss of unnormalised class scores ``input`` (LoD sequences [T, C + 1], or padded
    [Tmax, N, C + 1] with ``input_length``/``label_length``) against id ``label``s; the
    ``blank`` class separates repeats. Returns the loss of each sequence, [N, 1]."""
    inputs = {"Logits": [input], "Label": [label]}
    if input_length is not None:
        inputs["LogitsLength"] = [input_length]
    if label_length is not None:
        inputs["LabelLength"] = [label_length]
    return _one_op("warpctc", inputs, "Loss", input.dtype,
                   {"blank": blank, "norm_by_times": norm_by_times},
                   extra_outputs=("WarpCTCGrad",))


@checks(input=variable, label=variable, path_table=optional(variable),
        path_code=optional(variable), is_custom=boolean, is_sparse=boolean)
def hsigmoid(input, label, num_classes, param_attr=None, bias_attr=None, name=None,
             path_table=None, path_code=None, is_custom=False, is_sparse=False):
    """Hierarchical sigmoid: the cost of ``label`` along its path in a binary tree of
    sigmoid classifiers (Paddle's default tree over ``num_classes``, or a custom one given
    by ``path_table``/``path_code``). Parameters W [num_classes - 1, dim] and bias
    [num_classes - 1, 1]; returns the cost, [N, 1]."""
    from .arg_checks import check, int_in
    check("hsigmoid", "num_classes", num_classes, int_in(2))
    if is_custom and (path_table is None or path_code is None):
        raise InvalidArgument("hsigmoid: path_table and path_code expected with is_custom, "
                              "but one of them is None")
    helper = LayerHelper("hierarchical_sigmoid", param_attr=param_attr, bias_attr=bias_attr,
                         name=name)
    dim = input.shape[1]
    rows = num_classes if is_custom else num_classes - 1
    weights = helper.create_parameter(attr=helper.param_attr, shape=[rows, dim],
                                      dtype=input.dtype, is_bias=False)
    inputs = {"X": [input], "W": [weights], "Label": [label]}
    if is_custom:
        inputs["PathTable"], inputs["PathCode"] = [path_table], [path_code]
    if helper.bias_attr:
        bias = helper.create_parameter(attr=helper.bias_attr, shape=[rows, 1],
                                       dtype=input.dtype, is_bias=True)
        inputs["Bias"] = [bias]
    out = helper.create_variable_for_type_inference(input.dtype)
    pre_out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="hierarchical_sigmoid", inputs=inputs,
                     outputs={"Out": [out], "PreOut": [pre_out]},
                     attrs={"num_classes": num_classes, "is_sparse": is_sparse})
    return out


def _alias_tables(probs):
    """Walker's alias tables of the distribution ``probs`` (n entries): (alias, alias_probs)
    such that drawing i uniformly, then keeping it with chance alias_probs[i] and else taking
    alias[i], draws i with chance probs[i]. Entries of scale exactly 1 have alias -1."""
    n = len(probs)
    alias, keep = [0] * n, [0.0] * n
    over, under = [], []  # (id, scaled probability), first in first out
    for i, p in enumerate(probs):
        scaled = p * n
        if scaled > 1.0:
            over.append((i, scaled))
        elif scaled < 1.0:
            under.append((i, scaled))
        else:
            keep[i], alias[i] = scaled, -1
    while over and under:
        (big, big_p), (small, small_p) = over.pop(0), under.pop(0)
        keep[small], alias[small] = small_p, big
        rest = big_p + small_p - 1.0
        if rest > 1.0:
            over.append((big, rest))
        elif rest < 1.0:
            under.append((big, rest))
        else:
            keep[big], alias[big] = rest, -1
    for leftover in (over, under):  # rounding leaves at most one: it always keeps itself
        if leftover:
            keep[leftover[0][0]], alias[leftover[0][0]] = 1.0, -1
    return alias, keep


@checks(input=variable, label=variable, sample_weight=optional(variable), seed=INT,
        is_sparse=boolean)
def nce(input, label, num_total_classes, sample_weight=None, param_attr=None, bias_attr=None,
        num_neg_samples=None, name=None, sampler="uniform", custom_dist=None, seed=0,
        is_sparse=False):
    """Noise-contrastive estimation: the true label(s) of each row told apart from
    ``num_neg_samples`` (default 10) classes drawn by ``sampler`` ("uniform", "log_uniform",
    or "custom_dist": the probabilities ``custom_dist`` of the num_total_classes, drawn by
    Walker's alias method). Weight [num_total_classes, dim] and bias [num_total_classes, 1]
    parameters; returns the cost over num_neg_samples + 1, [N, 1], as Fluid does."""
    from .arg_checks import POSITIVE_INT, check, one_of
    check("nce", "num_total_classes", num_total_classes, POSITIVE_INT)
    check("nce", "sampler", sampler, one_of("uniform", "log_uniform", "custom_dist"))
    negatives = 10 if num_neg_samples is None else num_neg_samples
    check("nce", "num_neg_samples", negatives, POSITIVE_INT)
    helper = LayerHelper("nce", param_attr=param_attr, bias_attr=bias_attr, name=name)
    dim = input.shape[1]
    weight = helper.create_parameter(attr=helper.param_attr, shape=[num_total_classes, dim],
                                     dtype=input.dtype, is_bias=False)
    inputs = {"Input": [input], "Label": [label], "Weight": [weight]}
    if helper.bias_attr:
        inputs["Bias"] = [helper.create_parameter(attr=helper.bias_attr,
                                                  shape=[num_total_classes, 1],
                                                  dtype=input.dtype, is_bias=True)]
    if sample_weight is not None:
        inputs["SampleWeight"] = [sample_weight]
    if sampler == "custom_dist":
        inputs.update(_custom_dist_inputs(helper, custom_dist, num_total_classes))
    cost = helper.create_variable_for_type_inference(input.dtype)
    logits = helper.create_variable_for_type_inference(input.dtype)
    labels = helper.create_variable_for_type_inference(label.dtype)
    helper.append_op(type="nce", inputs=inputs,
                     outputs={"Cost": [cost], "SampleLogits": [logits],
                              "SampleLabels": [labels]},
                     attrs={"num_total_classes": int(num_total_classes),
                            "num_neg_samples": int(negatives),
                            "sampler": ("uniform", "log_uniform", "custom_dist").index(sampler),
                            "seed": seed,
                            "is_sparse": is_sparse})
    return cost / (negatives + 1)


def _custom_dist_inputs(helper, custom_dist, classes):
    """The CustomDist* inputs of nce's custom sampler: the probabilities and their alias
    tables, as parameters set once by the startup program and never trained."""
    import numpy as np
    from ..initializer import NumpyArrayInitializer
    from ..param_attr import ParamAttr
    if custom_dist is None or len(custom_dist) != classes:
        raise InvalidArgument(expected("nce", "custom_dist", f"{classes} probabilities (one "
                                       "a class) with sampler 'custom_dist'",
                                       None if custom_dist is None else len(custom_dist)))
    alias, keep = _alias_tables([float(p) for p in custom_dist])
    tables = {}
    for slot, values in (("CustomDistProbs", np.asarray(custom_dist, "float32")),
                         ("CustomDistAlias", np.asarray(alias, "int32")),
                         ("CustomDistAliasProbs", np.asarray(keep, "float32"))):
        table = helper.create_parameter(attr=ParamAttr(), shape=list(values.shape),
                                        dtype=values.dtype,
                                        default_initializer=NumpyArrayInitializer(values))
        table.stop_gradient = True
        tables[slot] = [table]
    return tables


@checks(logits=variable, label=variable, remove_accidental_hits=boolean,
        use_customized_samples=boolean, seed=INT)
def sampled_softmax_with_cross_entropy(logits, label, num_samples, num_true=1,
                                       remove_accidental_hits=True,
                                       use_customized_samples=False, customized_samples=None,
                                       customized_probabilities=None, seed=0):
    """Softmax cross entropy over the true classes and ``num_samples`` classes drawn
    log-uniformly (the logits corrected by the chance of each being drawn), for
    vocabularies too large for a full softmax. Returns the loss over num_true, [N, 1]."""
    from ...tensor.dtypes import VarType
    from .arg_checks import POSITIVE_INT, check
    check("sampled_softmax_with_cross_entropy", "num_samples", num_samples, POSITIVE_INT)
    check("sampled_softmax_with_cross_entropy", "num_true", num_true, POSITIVE_INT)
    helper = LayerHelper("sample_logits")
    inputs = {"Logits": [logits], "Labels": [label]}
    if use_customized_samples:
        inputs["CustomizedSamples"] = [customized_samples]
        inputs["CustomizedProbabilities"] = [customized_probabilities]
    made = {slot: helper.create_variable_for_type_inference(dtype) for slot, dtype in (
        ("Samples", VarType.INT64), ("Probabilities", logits.dtype),
        ("SampledLogits", logits.dtype), ("SampledLabels", VarType.INT64),
        ("LogitsDim", VarType.INT64), ("LabelsDim", VarType.INT64))}
    helper.append_op(type="sample_logits", inputs=inputs,
                     outputs={slot: [var] for slot, var in made.items()},
                     attrs={"use_customized_samples": use_customized_samples, "uniq": True,
                            "remove_accidental_hits": remove_accidental_hits,
                            "num_samples": num_samples, "seed": seed})
    # the true classes lead each row of samples: their one-hot rows summed are the labels
    one_hot = helper.create_variable_for_type_inference(logits.dtype)
    helper.append_op(type="one_hot_v2", inputs={"X": [made["SampledLabels"]]},
                     outputs={"Out": [one_hot]},
                     attrs={"depth": num_samples + num_true,
                            "dtype": int(logits.dtype)})
    from .nn import reduce_sum
    soft_labels = reduce_sum(one_hot, dim=1)
    softmax = helper.create_variable_for_type_inference(logits.dtype)
    loss = helper.create_variable_for_type_inference(logits.dtype)
    helper.append_op(type="softmax_with_cross_entropy",
                     inputs={"Logits": [made["SampledLogits"]], "Label": [soft_labels]},
                     outputs={"Softmax": [softmax], "Loss": [loss]},
                     attrs={"soft_label": True, "ignore_index": -100,
                            "numeric_stable_mode": False})
    return loss / num_true
