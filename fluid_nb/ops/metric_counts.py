"""Metrics that count: ``positive_negative_pair`` (ordered pairs of a ranking, per query)
and ``precision_recall`` (per-class TP/FP/TN/FN and macro/micro precision, recall, F1).
Both can add to counts carried in from earlier batches. No gradient."""
from ..framework.infer import dims_match
from ..framework.registry import def_op, no_gradient


# --- positive_negative_pair ----------------------------------------------------------------
def _pn_pair_infer(ctx):
    score, label, query = (list(ctx.input_shape(s)) for s in ("Score", "Label", "QueryID"))
    ctx.check(len(score) == 2, "input 'Score'", "rank 2 ([N, columns])", score)
    for slot, shape in (("Label", label), ("QueryID", query)):
        ctx.check(len(shape) == 2 and dims_match(shape[0], score[0]) and dims_match(shape[1], 1),
                  f"input '{slot}'", f"shape [{score[0]}, 1]", shape)
    column = ctx.attr("column")
    ctx.check(score[1] < 0 or -score[1] <= column < score[1], "attribute 'column'",
              f"in [{-score[1]}, {score[1]})", column)
    for slot in ("PositivePair", "NegativePair", "NeutralPair"):
        ctx.set_output(slot, [1], ctx.input_dtype("Score"))


def _pn_pair(ctx, score, label, query, acc_pos, acc_neg, acc_neu, weight):
    xp = ctx.xp
    s = score[:, ctx.attrs["column"]].astype("float64")
    l = label[:, 0].astype("float64")
    q = query[:, 0]
    w = xp.ones_like(s) if weight is None else weight[:, 0].astype("float64")
    n = s.shape[0]
    upper = xp.triu(xp.ones((n, n), dtype=bool), k=1)
    # every unordered pair once, within one query, of different labels
    pairs = upper & (q[:, None] == q[None, :]) & (l[:, None] != l[None, :])
    pair_w = (w[:, None] + w[None, :]) * 0.5
    agree = (s[:, None] - s[None, :]) * (l[:, None] - l[None, :])
    tie = s[:, None] == s[None, :]
    counts = [(pair_w * (pairs & ~tie & (agree > 0))).sum(),
              (pair_w * (pairs & ~tie & (agree <= 0))).sum(),
              (pair_w * (pairs & tie)).sum()]
    outs = []
    for count, acc in zip(counts, (acc_pos, acc_neg, acc_neu)):
        total = count if acc is None else count + acc.reshape(())
        outs.append(xp.asarray(total).reshape(1).astype(score.dtype))
    return tuple(outs)


def_op("positive_negative_pair",
       inputs=["Score", "Label", "QueryID", "AccumulatePositivePair?",
               "AccumulateNegativePair?", "AccumulateNeutralPair?", "Weight?"],
       outputs=["PositivePair", "NegativePair", "NeutralPair"],
       attrs={"column": ("int", 0)}, infer_shape=_pn_pair_infer, grad=no_gradient,
       kernel=_pn_pair,
       doc="Over pairs (i, j) of one QueryID with different Labels, weighted by (W_i + W_j) "
           "/ 2 (W = Weight, else 1): PositivePair adds those whose Score[:, column] orders "
           "them as Label does, NegativePair those it orders the other way, NeutralPair "
           "those it ties; each plus its Accumulate* input when given ([1] each).")


# --- precision_recall ----------------------------------------------------------------------
def _pr_infer(ctx):
    classes = ctx.attr("class_number")
    ctx.check(classes > 0, "attribute 'class_number'", "> 0", classes)
    idx, labels = list(ctx.input_shape("Indices")), list(ctx.input_shape("Labels"))
    ctx.check(len(idx) == 2 and dims_match(idx[1], 1), "input 'Indices'", "shape [N, 1]", idx)
    ctx.check(len(labels) == 2 and dims_match(labels[0], idx[0]) and dims_match(labels[1], 1),
              "input 'Labels'", f"shape [{idx[0]}, 1]", labels)
    if ctx.has_input("StatesInfo"):
        states = list(ctx.input_shape("StatesInfo"))
        ctx.check(len(states) == 2 and dims_match(states[0], classes)
                  and dims_match(states[1], 4), "input 'StatesInfo'",
                  f"shape [{classes}, 4] (TP, FP, TN, FN per class)", states)
    dtype = ctx.input_dtype("MaxProbs")
    ctx.set_output("BatchMetrics", [6], dtype)
    ctx.set_output("AccumMetrics", [6], dtype)
    ctx.set_output("AccumStatesInfo", [classes, 4], dtype)


def _ratio(xp, num, den):
    """num / den, 1 where both are 0 (nothing predicted or nothing to find)."""
    safe = xp.where(den > 0, den, 1)
    return xp.where(den > 0, num / safe, 1.0)


def _f1(xp, p, r):
    total = p + r
    return xp.where(total > 0, 2 * p * r / xp.where(total > 0, total, 1), 0.0)


def _metrics(xp, states):
    tp, fp, fn = states[:, 0], states[:, 1], states[:, 3]
    macro_p = _ratio(xp, tp, tp + fp).mean()
    macro_r = _ratio(xp, tp, tp + fn).mean()
    micro_p = _ratio(xp, tp.sum(), tp.sum() + fp.sum())
    micro_r = _ratio(xp, tp.sum(), tp.sum() + fn.sum())
    return xp.stack([macro_p, macro_r, _f1(xp, macro_p, macro_r),
                     micro_p, micro_r, _f1(xp, micro_p, micro_r)])


def _precision_recall(ctx, max_probs, indices, labels, weights, states_info):
    xp = ctx.xp
    classes = ctx.attrs["class_number"]
    idx, lab = indices[:, 0].astype("int64"), labels[:, 0].astype("int64")
    w = xp.ones(idx.shape, "float64") if weights is None else weights[:, 0].astype("float64")
    cls = xp.arange(classes)
    predicted = (idx[:, None] == cls) * w[:, None]   # [N, classes]
    actual = (lab[:, None] == cls) * w[:, None]
    hit = (idx == lab)[:, None]
    tp = (predicted * hit).sum(axis=0)
    fp = (predicted * ~hit).sum(axis=0)
    fn = (actual * ~hit).sum(axis=0)
    tn = w.sum() - tp - fp - fn
    states = xp.stack([tp, fp, tn, fn], axis=1)
    accum = states if states_info is None else states + states_info.astype("float64")
    dtype = max_probs.dtype
    return (_metrics(xp, states).astype(dtype), _metrics(xp, accum).astype(dtype),
            accum.astype(dtype))


def_op("precision_recall",
       inputs=["MaxProbs", "Indices", "Labels", "Weights?", "StatesInfo?"],
       outputs=["BatchMetrics", "AccumMetrics", "AccumStatesInfo"],
       attrs={"class_number": ("int", None)}, infer_shape=_pr_infer, grad=no_gradient,
       kernel=_precision_recall,
       doc="Per class c, weighted by Weights (else 1): TP = predicted c and labelled c, FP = "
           "predicted c otherwise, FN = labelled c but predicted otherwise, TN = the rest. "
           "Metrics = [macro precision, macro recall, macro F1, micro precision, micro "
           "recall, micro F1] (a ratio of 0 / 0 is 1, F1 of 0 and 0 is 0). BatchMetrics "
           "from this batch; AccumStatesInfo = StatesInfo + this batch's [TP, FP, TN, FN]; "
           "AccumMetrics from those.")
