"""positive_negative_pair and precision_recall against loop-by-loop NumPy references."""
import itertools

import numpy as np

from .op_test import OpCase, table_tests

rng = np.random.RandomState(16)


def pn_pair_ref(i, a):
    score, label, query = i["Score"], i["Label"], i["QueryID"]
    weight = i.get("Weight", np.ones((len(score), 1), "float32"))
    col = a.get("column", 0)
    pos = neg = neu = 0.0
    for p, q in itertools.combinations(range(len(score)), 2):
        if query[p, 0] != query[q, 0] or label[p, 0] == label[q, 0]:
            continue
        w = (weight[p, 0] + weight[q, 0]) * 0.5
        s1, s2 = score[p, col], score[q, col]
        if s1 == s2:
            neu += w
        elif (s1 - s2) * (label[p, 0] - label[q, 0]) > 0:
            pos += w
        else:
            neg += w
    outs = {}
    for slot, count, acc in (("PositivePair", pos, "AccumulatePositivePair"),
                             ("NegativePair", neg, "AccumulateNegativePair"),
                             ("NeutralPair", neu, "AccumulateNeutralPair")):
        outs[slot] = np.array([count + (i[acc][0] if acc in i else 0)], "float32")
    return outs


def pr_states(idx, labels, classes, weights):
    states = np.zeros((classes, 4))
    for k in range(len(idx)):
        w = weights[k, 0] if weights is not None else 1.0
        p, t = idx[k, 0], labels[k, 0]
        states[:, 2] += w
        if p == t:
            states[p, 0] += w
            states[p, 2] -= w
        else:
            states[t, 3] += w
            states[p, 1] += w
            states[t, 2] -= w
            states[p, 2] -= w
    return states


def pr_metrics(states):
    def ratio(n, d):
        return n / d if d > 0 else 1.0

    def f1(p, r):
        return 2 * p * r / (p + r) if p + r > 0 else 0.0
    mp = np.mean([ratio(s[0], s[0] + s[1]) for s in states])
    mr = np.mean([ratio(s[0], s[0] + s[3]) for s in states])
    tp, fp, fn = states[:, 0].sum(), states[:, 1].sum(), states[:, 3].sum()
    up, ur = ratio(tp, tp + fp), ratio(tp, tp + fn)
    return np.array([mp, mr, f1(mp, mr), up, ur, f1(up, ur)], "float32")


def pr_ref(i, a):
    classes = a["class_number"]
    batch = pr_states(i["Indices"], i["Labels"], classes, i.get("Weights"))
    accum = batch + i.get("StatesInfo", 0)
    return {"BatchMetrics": pr_metrics(batch), "AccumMetrics": pr_metrics(accum),
            "AccumStatesInfo": accum.astype("float32")}


n = 16
score = np.round(rng.normal(size=(n, 2)), 1).astype("float32")  # rounded: some ties
query = rng.randint(0, 3, (n, 1)).astype("int64")
label = rng.randint(0, 3, (n, 1)).astype("float32")
classes = 5
CASES = [
    OpCase("positive_negative_pair", {"Score": score, "Label": label, "QueryID": query},
           attrs={"column": -1}, ref=pn_pair_ref),
    OpCase("positive_negative_pair",
           {"Score": score, "Label": label, "QueryID": query,
            "AccumulatePositivePair": np.array([3.0], "float32"),
            "AccumulateNegativePair": np.array([1.0], "float32"),
            "AccumulateNeutralPair": np.array([2.0], "float32"),
            "Weight": rng.uniform(0.5, 1.5, (n, 1)).astype("float32")},
           attrs={"column": 0}, ref=pn_pair_ref, name="weighted_accumulated"),
    OpCase("precision_recall",
           {"MaxProbs": rng.uniform(0, 1, (n, 1)).astype("float32"),
            "Indices": rng.randint(0, classes, (n, 1)).astype("int32"),
            "Labels": rng.randint(0, classes, (n, 1)).astype("int32")},
           attrs={"class_number": classes}, ref=pr_ref),
    OpCase("precision_recall",
           {"MaxProbs": rng.uniform(0, 1, (n, 1)).astype("float32"),
            "Indices": rng.randint(0, classes, (n, 1)).astype("int32"),
            "Labels": rng.randint(0, classes, (n, 1)).astype("int32"),
            "Weights": rng.uniform(0, 1, (n, 1)).astype("float32"),
            "StatesInfo": rng.randint(0, 9, (classes, 4)).astype("float32")},
           attrs={"class_number": classes}, ref=pr_ref, name="weighted_accumulated"),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)
