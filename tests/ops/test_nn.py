"""softmax and dropout against NumPy, with float64 finite-difference gradients."""
import numpy as np
import pytest


from .op_test import OpCase, assert_build_fails, build, run_case, table_tests

rng = np.random.RandomState(0)


def r(*shape, dtype="float32"):
    return rng.uniform(-1, 1, shape).astype(dtype)


def ref_softmax(i, a):
    x = i["X"].astype(np.float64)
    axis = a.get("axis", -1)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return {"Out": (e / e.sum(axis=axis, keepdims=True)).astype(i["X"].dtype)}


def consistent_with_mask(result, inputs, attrs):
    """Out is X where Mask keeps a unit (scaled for upscale_in_train) and 0 elsewhere."""
    x = inputs["X"]
    out, mask = np.asarray(result["Out"]), np.asarray(result["Mask"])
    assert mask.dtype == np.uint8 and mask.shape == x.shape
    assert set(np.unique(mask)) <= {0, 1}
    p = attrs.get("dropout_prob", 0.5)
    scale = 1 / (1 - p) if attrs.get("dropout_implementation") == "upscale_in_train" else 1
    np.testing.assert_allclose(out, x * mask * scale, rtol=1e-6)


def dropout(name, x, attrs, **kw):
    attrs = {"fix_seed": True, "seed": 17, **attrs}
    return OpCase("dropout", {"X": x}, attrs=attrs, check=consistent_with_mask, name=name, **kw)


CASES = [
    OpCase("softmax", {"X": r(3, 5)}, ref=ref_softmax, name="2d"),
    OpCase("softmax", {"X": r(2, 3, 4) * 5}, attrs={"axis": 1}, ref=ref_softmax, name="axis1"),
    OpCase("softmax", {"X": r(2, 3, 4)}, attrs={"axis": -3}, ref=ref_softmax,
           name="axis_neg3"),
    OpCase("softmax", {"X": r(4, 5)}, ref=ref_softmax, grad=["X"], name="grad"),
    OpCase("softmax", {"X": r(2, 3, 4)}, attrs={"axis": 1}, ref=ref_softmax, grad=["X"],
           name="grad_axis1"),
    # rows past the 16 lanes the host kernel keeps, values whose exp overflows unless the
    # row's maximum is taken first
    OpCase("softmax", {"X": r(3, 2, 37) * 120}, ref=ref_softmax, name="wide_rows_large"),
    OpCase("softmax", {"X": r(5, 19, dtype="float64")}, ref=ref_softmax, grad=["X"],
           name="grad_float64_rows"),
    dropout("downgrade", r(6, 7), {"dropout_prob": 0.4}),
    dropout("upscale", r(5, 4, 3), {"dropout_prob": 0.3,
                                    "dropout_implementation": "upscale_in_train"}),
    dropout("p0", r(4, 4), {"dropout_prob": 0.0}),
    dropout("p1", r(4, 4), {"dropout_prob": 1.0}),
    OpCase("dropout", {"X": r(3, 4)}, attrs={"dropout_prob": 0.25, "is_test": True},
           ref=lambda i, a: {"Out": i["X"] * np.float32(0.75)}, outputs={"Out": 1},
           name="is_test_downgrade"),
    OpCase("dropout", {"X": r(3, 4)},
           attrs={"dropout_prob": 0.25, "is_test": True,
                  "dropout_implementation": "upscale_in_train"},
           ref=lambda i, a: {"Out": i["X"]}, outputs={"Out": 1}, name="is_test_upscale"),
    OpCase("dropout", {"X": r(3, 4)}, attrs={"dropout_prob": 0.5, "fix_seed": True, "seed": 3},
           grad=["X"], grad_outputs=["Out"], name="grad_downgrade"),
    OpCase("dropout", {"X": r(2, 5)},
           attrs={"dropout_prob": 0.4, "fix_seed": True, "seed": 11,
                  "dropout_implementation": "upscale_in_train"},
           grad=["X"], grad_outputs=["Out"], name="grad_upscale"),
    # a test-mode dropout writes no Mask; its gradient (Paddle 2.6) scales as its output
    OpCase("dropout", {"X": r(3, 4)}, attrs={"dropout_prob": 0.25, "is_test": True},
           outputs={"Out": 1, "Mask": 1}, grad=["X"], grad_outputs=["Out"],
           check=lambda res, i, a: np.testing.assert_allclose(
               np.asarray(res["Out"]), i["X"] * np.float32(0.75), rtol=1e-6),
           name="grad_is_test_downgrade"),
    OpCase("dropout", {"X": r(3, 4)},
           attrs={"dropout_prob": 0.25, "is_test": True,
                  "dropout_implementation": "upscale_in_train"},
           outputs={"Out": 1, "Mask": 1}, grad=["X"], grad_outputs=["Out"],
           name="grad_is_test_upscale"),
    # the grad op alone: with is_test Paddle's dropout writes no Mask to differentiate
    OpCase("dropout_grad", {"Mask": np.ones((2, 3), "uint8"), "Out@GRAD": r(2, 3)},
           attrs={"dropout_prob": 0.4, "is_test": True},
           ref=lambda i, a: {"X@GRAD": i["Out@GRAD"] * np.float32(0.6)},
           name="is_test_downgrade"),
    OpCase("dropout_grad", {"Mask": np.ones((2, 3), "uint8"), "Out@GRAD": r(2, 3)},
           attrs={"dropout_prob": 0.4, "is_test": True,
                  "dropout_implementation": "upscale_in_train"},
           ref=lambda i, a: {"X@GRAD": i["Out@GRAD"]}, name="is_test_upscale"),
]




def ref_prelu(i, a):
    x, alpha = i["X"], i["Alpha"]
    mode = a.get("mode", "all")
    if mode == "all":
        al = alpha.reshape(())
    elif mode == "channel":
        shape = [1] * x.ndim
        shape[-1 if a.get("data_format") == "NHWC" else 1] = -1
        al = alpha.reshape(shape)
    else:
        al = alpha.reshape((1,) + x.shape[1:])
    return {"Out": np.where(x > 0, x, al * x).astype(x.dtype)}


def ref_label_smooth(i, a):
    eps = a.get("epsilon", 0.0)
    prior = i["PriorDist"] if "PriorDist" in i else 1.0 / i["X"].shape[-1]
    return {"Out": ((1 - eps) * i["X"] + eps * prior).astype(i["X"].dtype)}


def _away_from_zero(*shape):
    x = r(*shape)
    return np.where(np.abs(x) < 0.05, 0.3, x).astype("float32")


ACTIVATION_CASES = [
    OpCase("prelu", {"X": r(2, 3, 4), "Alpha": np.array([0.2], "float32")},
           attrs={"mode": "all"}, ref=ref_prelu, name="all"),
    OpCase("prelu", {"X": r(2, 3, 2, 2), "Alpha": r(1, 3, 1, 1)}, attrs={"mode": "channel"},
           ref=ref_prelu, name="channel"),
    OpCase("prelu", {"X": r(2, 2, 2, 3), "Alpha": r(3)},
           attrs={"mode": "channel", "data_format": "NHWC"}, ref=ref_prelu,
           name="channel_nhwc"),
    OpCase("prelu", {"X": r(2, 3, 2), "Alpha": r(1, 3, 2)}, attrs={"mode": "element"},
           ref=ref_prelu, name="element"),
    OpCase("prelu", {"X": _away_from_zero(2, 3), "Alpha": np.array([0.3], "float32")},
           attrs={"mode": "all"}, ref=ref_prelu, grad=["X", "Alpha"], name="grad_all"),
    OpCase("prelu", {"X": _away_from_zero(2, 2, 3), "Alpha": r(1, 2, 1)},
           attrs={"mode": "channel"}, ref=ref_prelu, grad=["X", "Alpha"],
           name="grad_channel"),
    OpCase("prelu", {"X": _away_from_zero(2, 3), "Alpha": r(1, 3)},
           attrs={"mode": "element"}, ref=ref_prelu, grad=["X", "Alpha"],
           name="grad_element"),
    OpCase("label_smooth", {"X": np.eye(4, dtype="float32")[[0, 2, 3]]},
           attrs={"epsilon": 0.1}, ref=ref_label_smooth, name="uniform"),
    OpCase("label_smooth", {"X": np.eye(3, dtype="float32")[[1, 2]],
                            "PriorDist": np.array([[0.2, 0.3, 0.5]], "float32")},
           attrs={"epsilon": 0.2}, ref=ref_label_smooth, name="prior"),
    OpCase("label_smooth", {"X": r(2, 3)}, attrs={"epsilon": 0.3}, ref=ref_label_smooth,
           grad=["X"], name="grad"),
]

CASES = CASES + ACTIVATION_CASES

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


def _mask(x, attrs, seed_input=None):
    inputs = {"X": x}
    if seed_input is not None:
        inputs["Seed"] = np.array([seed_input], dtype="int32")
    _, _, result = run_case(OpCase("dropout", inputs, attrs=attrs))
    return np.asarray(result["Mask"])


def test_dropout_fixed_seed_repeats_and_seeds_differ():
    x = np.ones((20, 30), dtype="float32")
    a = _mask(x, {"fix_seed": True, "seed": 5})
    np.testing.assert_array_equal(a, _mask(x, {"fix_seed": True, "seed": 5}))
    assert (a != _mask(x, {"fix_seed": True, "seed": 6})).any()


def test_dropout_seed_attr_ignored_without_fix_seed_but_seed_input_used():
    x = np.ones((20, 30), dtype="float32")
    # without fix_seed the seed attribute is not used: fresh entropy gives fresh masks
    masks = [_mask(x, {"fix_seed": False, "seed": 5}) for _ in range(3)]
    assert any((m != masks[0]).any() for m in masks[1:])
    a = _mask(x, {}, seed_input=9)
    np.testing.assert_array_equal(a, _mask(x, {}, seed_input=9))


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_keep_rate_matches_probability(p):
    x = np.ones((200, 200), dtype="float32")
    mask = _mask(x, {"dropout_prob": p, "fix_seed": True, "seed": 123})
    # 40000 Bernoulli draws: the standard error of the keep rate is below 0.0025
    assert abs(mask.mean() - (1 - p)) < 0.01


def test_dropout_upscale_preserves_mean():
    x = np.ones((200, 200), dtype="float32")
    _, _, result = run_case(OpCase("dropout", {"X": x}, attrs={
        "dropout_prob": 0.3, "dropout_implementation": "upscale_in_train", "fix_seed": True,
        "seed": 1}))
    assert abs(np.asarray(result["Out"]).mean() - 1.0) < 0.02


def test_dropout_mask_declared_uint8():
    from fluid_nb.tensor.dtypes import VarType
    program, op, _, _ = build(OpCase("dropout", {"X": r(2, 3)}))
    mask = program.global_block().var(op.outputs["Mask"][0])
    assert mask.dtype == VarType.UINT8 and mask.shape == (2, 3)


def test_grad_makers_take_only_what_the_gradient_needs():
    from fluid_nb.ops import registry
    _, op, _, _ = build(OpCase("softmax", {"X": r(2, 3)}))
    (spec,) = registry.make_grad_ops(op)
    assert spec.type == "softmax_grad" and set(spec.inputs) == {"Out", "Out@GRAD"}
    _, op, _, _ = build(OpCase("dropout", {"X": r(2, 3)}))
    (spec,) = registry.make_grad_ops(op)
    assert spec.type == "dropout_grad" and set(spec.inputs) == {"Mask", "Out@GRAD"}


_fails = assert_build_fails


def test_errors_name_op_and_attribute():
    _fails("softmax", {"X": r(2, 3)}, {"axis": 2}, "axis")
    _fails("dropout", {"X": r(2, 3)}, {"dropout_prob": 1.5}, "dropout_prob")
    _fails("dropout", {"X": r(2, 3)}, {"dropout_implementation": "scale"},
           "dropout_implementation")


def test_softmax_rows_holding_nan_or_infinities_come_out_as_numpys_formula():
    # a NaN or +inf anywhere in a row makes the whole row NaN; -inf gives that class 0, and
    # a row of -inf alone is NaN
    x = np.array([[np.nan, 1, 2], [1, np.nan, 2], [np.inf, 1, 2], [1, 2, np.inf],
                  [-np.inf, 1, 2], [-np.inf] * 3, [1, 2, 3]], "float32")
    _, _, result = run_case(OpCase("softmax", {"X": x}))
    got = np.asarray(result["Out"])
    with np.errstate(invalid="ignore"):
        want = ref_softmax({"X": x}, {})["Out"]
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert np.isnan(got[:4]).all() and np.isnan(got[5]).all()
    np.testing.assert_allclose(got[[4, 6]], want[[4, 6]], rtol=1e-6)
