"""hinge_loss, modified_huber_loss, bce_loss and nll_loss against NumPy, with float64
finite-difference gradients."""
import numpy as np

from .op_test import OpCase, table_tests

rng = np.random.RandomState(14)


def r(*shape, low=-1.0, high=1.0, dtype="float64"):
    return rng.uniform(low, high, shape).astype(dtype)


def labels01(*shape, dtype="float64"):
    return rng.randint(0, 2, shape).astype(dtype)


def hinge_ref(i, a):
    return {"Loss": np.maximum(1 - (2 * i["Labels"] - 1) * i["Logits"], 0)}


def huber_ref(i, a):
    z = i["X"] * (2 * i["Y"] - 1)
    out = np.where(z < -1, -4 * z, np.where(z < 1, (1 - z) ** 2, 0))
    return {"IntermediateVal": z, "Out": out}


def bce_ref(i, a):
    x, t = i["X"], i["Label"]
    return {"Out": -(t * np.log(x) + (1 - t) * np.log(1 - x))}


def nll_ref(i, a):
    x, label = i["X"], i["Label"]
    w = i.get("Weight", np.ones(x.shape[1], x.dtype))
    ignore = a.get("ignore_index", -100)
    losses = np.zeros(label.shape, x.dtype)
    total = 0.0
    for idx in np.ndindex(*label.shape):
        c = label[idx]
        if c == ignore:
            continue
        losses[idx] = -x[(idx[0], c) + idx[1:]] * w[c]
        total += w[c]
    reduction = a.get("reduction", "mean")
    if reduction == "none":
        return {"Out": losses, "Total_weight": np.zeros(1, x.dtype)}
    out = losses.sum() / (total if reduction == "mean" else 1)
    return {"Out": np.array([out], x.dtype), "Total_weight": np.array([total], x.dtype)}


# logits kept away from the hinge's kink at (2y - 1) x = 1
logits = r(8, 1, low=-3, high=3)
logits[np.abs(np.abs(logits) - 1) < 0.05] = 0.5
huber_x = r(8, 1, low=-2, high=2)
huber_x[np.abs(np.abs(huber_x) - 1) < 0.05] = 0.3
label_with_ignored = rng.randint(0, 4, (6,)).astype("int64")
label_with_ignored[2] = -100

CASES = [
    OpCase("hinge_loss", {"Logits": logits, "Labels": labels01(8, 1)}, ref=hinge_ref,
           grad=["Logits"]),
    OpCase("modified_huber_loss", {"X": huber_x, "Y": labels01(8, 1)}, ref=huber_ref,
           grad=["X"], grad_outputs=["Out"]),
    OpCase("bce_loss", {"X": r(3, 4, low=0.1, high=0.9), "Label": labels01(3, 4)},
           ref=bce_ref, grad=["X"]),
    OpCase("nll_loss", {"X": r(6, 4), "Label": label_with_ignored}, ref=nll_ref, grad=["X"],
           grad_outputs=["Out"]),
    OpCase("nll_loss", {"X": r(5, 3), "Label": rng.randint(0, 3, (5,)).astype("int64"),
                        "Weight": r(3, low=0.1, high=1)},
           attrs={"reduction": "sum"}, ref=nll_ref, grad=["X"], grad_outputs=["Out"],
           name="weighted_sum"),
    OpCase("nll_loss", {"X": r(2, 3, 2, 2),
                        "Label": rng.randint(0, 3, (2, 2, 2)).astype("int64")},
           attrs={"reduction": "none"}, ref=nll_ref, grad=["X"], grad_outputs=["Out"],
           name="2d_none"),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


def test_bce_loss_is_finite_at_saturated_inputs():
    from .op_test import check_output
    out = check_output(OpCase("bce_loss", {"X": np.array([0.0, 1.0]),
                                           "Label": np.array([1.0, 0.0])}))["Out"]
    np.testing.assert_allclose(np.asarray(out), [100.0, 100.0])


def test_nll_loss_rejects_a_label_outside_the_classes():
    import pytest
    from fluid_nb.errors import InvalidArgument
    from .op_test import check_output
    with pytest.raises(InvalidArgument, match="nll_loss: input 'Label' expected class ids"):
        check_output(OpCase("nll_loss", {"X": r(2, 3), "Label": np.array([0, 3], "int64")}))
