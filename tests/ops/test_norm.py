"""batch_norm and layer_norm against NumPy, with float64 finite-difference gradients."""
import numpy as np


from .op_test import OpCase, assert_build_fails, build, check_grad, check_output, table_tests

rng = np.random.RandomState(0)


def r(*shape, dtype="float32", low=-1.0, high=1.0):
    return rng.uniform(low, high, shape).astype(dtype)


def bn_inputs(shape, channel_axis=1, momentum_tensor=None):
    c = shape[channel_axis]
    inputs = {"X": r(*shape, low=-2, high=3), "Scale": r(c, low=0.5, high=1.5), "Bias": r(c),
              "Mean": r(c), "Variance": r(c, low=0.5, high=1.5)}
    if momentum_tensor is not None:
        inputs["MomentumTensor"] = np.array([momentum_tensor], dtype="float32")
    return inputs


def ref_bn(i, a):
    x = i["X"].astype(np.float64)
    axis = x.ndim - 1 if a.get("data_layout") == "NHWC" else 1
    axes = tuple(d for d in range(x.ndim) if d != axis)
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    eps = a.get("epsilon", 1e-5)
    momentum = a.get("momentum", 0.9)  # Paddle 2.6 ignores MomentumTensor
    mean, var = i["Mean"].astype(np.float64), i["Variance"].astype(np.float64)
    training = not ((a.get("is_test") and not a.get("trainable_statistics"))
                    or a.get("use_global_stats"))
    if training:
        mu, v = x.mean(axis=axes), x.var(axis=axes)
        out = {"MeanOut": mean * momentum + mu * (1 - momentum),
               "VarianceOut": var * momentum + v * (1 - momentum),
               "SavedMean": mu, "SavedVariance": 1 / np.sqrt(v + eps)}
    else:
        mu, v = mean, var
        zeros = np.zeros_like(mean)
        out = {"MeanOut": mean, "VarianceOut": var, "SavedMean": zeros, "SavedVariance": zeros}
    scale = i.get("Scale", np.ones(x.shape[axis]))
    bias = i.get("Bias", np.zeros(x.shape[axis]))
    y = (x - mu.reshape(shape)) / np.sqrt(v.reshape(shape) + eps) * scale.reshape(shape) \
        + bias.reshape(shape)
    out["Y"] = y
    dtype = i["X"].dtype
    return {k: val.astype(dtype) for k, val in out.items()}


def ref_ln(i, a):
    x = i["X"].astype(np.float64)
    begin = a.get("begin_norm_axis", 1)
    rows = x.reshape(int(np.prod(x.shape[:begin])), -1)
    mean, var = rows.mean(axis=1), rows.var(axis=1)
    y = (rows - mean[:, None]) / np.sqrt(var[:, None] + a.get("epsilon", 1e-5))
    if "Scale" in i:
        y = y * i["Scale"]
    if "Bias" in i:
        y = y + i["Bias"]
    dtype, lead = i["X"].dtype, x.shape[:begin]
    return {"Y": y.reshape(x.shape).astype(dtype), "Mean": mean.reshape(lead).astype(dtype),
            "Variance": var.reshape(lead).astype(dtype)}


def bn(name, inputs, attrs=None, grad=(), **kw):
    return OpCase("batch_norm", inputs, attrs=attrs or {}, ref=ref_bn, grad=list(grad),
                  grad_outputs=["Y"], name=name, **kw)


def ln(name, inputs, attrs=None, grad=(), **kw):
    return OpCase("layer_norm", inputs, attrs=attrs or {}, ref=ref_ln, grad=list(grad),
                  name=name, **kw)


CASES = [
    bn("train_nchw", bn_inputs((3, 4, 3, 2))),
    bn("train_nhwc", bn_inputs((2, 3, 2, 5), channel_axis=3), {"data_layout": "NHWC"}),
    bn("train_2d", bn_inputs((6, 4)), {"momentum": 0.5, "epsilon": 1e-4}),
    bn("train_5d", bn_inputs((2, 3, 2, 2, 2))),
    bn("momentum_tensor_ignored", bn_inputs((4, 3, 2), momentum_tensor=0.25)),
    bn("is_test", bn_inputs((2, 3, 4, 4)), {"is_test": True}),
    bn("use_global_stats", bn_inputs((2, 3, 4)), {"use_global_stats": True}),
    bn("is_test_trainable_statistics", bn_inputs((3, 2, 3)),
       {"is_test": True, "trainable_statistics": True}),
    bn("no_scale_bias", {k: v for k, v in bn_inputs((3, 2, 2)).items()
                         if k not in ("Scale", "Bias")}),
    bn("grad_train", bn_inputs((2, 3, 2, 2)), grad=["X", "Scale", "Bias"]),
    bn("grad_no_scale", {k: v for k, v in bn_inputs((3, 2, 2)).items() if k != "Scale"},
       grad=["X", "Bias"]),
    bn("grad_train_nhwc", bn_inputs((3, 2, 4), channel_axis=2), {"data_layout": "NHWC"},
       grad=["X", "Scale", "Bias"]),
    bn("grad_global_stats", bn_inputs((2, 3, 2, 2)), {"use_global_stats": True},
       grad=["X", "Scale", "Bias"]),
    bn("grad_is_test", bn_inputs((4, 3)), {"is_test": True}, grad=["X", "Scale", "Bias"]),
    ln("begin1", {"X": r(3, 4, 5), "Scale": r(20), "Bias": r(20)}),
    ln("begin2", {"X": r(2, 3, 4, 2), "Scale": r(8), "Bias": r(8)},
       {"begin_norm_axis": 2, "epsilon": 1e-4}),
    ln("no_scale_bias", {"X": r(4, 6)}),
    ln("scale_only", {"X": r(3, 5), "Scale": r(5)}),
    ln("grad", {"X": r(3, 6), "Scale": r(6), "Bias": r(6)}, grad=["X", "Scale", "Bias"]),
    ln("grad_begin2", {"X": r(2, 3, 4), "Scale": r(4)}, {"begin_norm_axis": 2},
       grad=["X", "Scale"]),
    ln("grad_plain", {"X": r(2, 2, 5)}, grad=["X"]),
]




# --- instance_norm, group_norm, lrn: loops over samples, groups and channels ----------------
def ref_instance_norm(i, a):
    x = i["X"].astype(np.float64)
    eps = a.get("epsilon", 1e-5)
    n, c = x.shape[:2]
    y = np.empty_like(x)
    mean = np.empty(n * c)
    inv_std = np.empty(n * c)
    for b in range(n):
        for ch in range(c):
            m, v = x[b, ch].mean(), x[b, ch].var()
            mean[b * c + ch], inv_std[b * c + ch] = m, 1 / np.sqrt(v + eps)
            y[b, ch] = (x[b, ch] - m) / np.sqrt(v + eps)
            if "Scale" in i:
                y[b, ch] *= i["Scale"][ch]
            if "Bias" in i:
                y[b, ch] += i["Bias"][ch]
    dt = i["X"].dtype
    return {"Y": y.astype(dt), "SavedMean": mean.astype(dt), "SavedVariance": inv_std.astype(dt)}


def ref_group_norm(i, a):
    x = i["X"].astype(np.float64)
    nhwc = a.get("data_layout") == "NHWC"
    if nhwc:
        x = np.moveaxis(x, -1, 1)
    eps, groups = a.get("epsilon", 1e-5), a.get("groups", 1)
    n, c = x.shape[:2]
    per = c // groups
    y = np.empty_like(x)
    mean, var = np.empty((n, groups)), np.empty((n, groups))
    for b in range(n):
        for g in range(groups):
            part = x[b, g * per:(g + 1) * per]
            mean[b, g], var[b, g] = part.mean(), part.var()
            y[b, g * per:(g + 1) * per] = (part - mean[b, g]) / np.sqrt(var[b, g] + eps)
    shape = [1, c] + [1] * (x.ndim - 2)
    if "Scale" in i:
        y = y * i["Scale"].reshape(shape)
    if "Bias" in i:
        y = y + i["Bias"].reshape(shape)
    if nhwc:
        y = np.moveaxis(y, 1, -1)
    dt = i["X"].dtype
    return {"Y": y.astype(dt), "Mean": mean.astype(dt), "Variance": var.astype(dt)}


def ref_lrn(i, a):
    x = i["X"].astype(np.float64)
    nhwc = a.get("data_format") == "NHWC"
    if nhwc:
        x = np.moveaxis(x, -1, 1)
    n, k, alpha, beta = a.get("n", 5), a.get("k", 1.0), a.get("alpha", 1e-4), a.get("beta", 0.75)
    c = x.shape[1]
    mid = np.full(x.shape, k)
    for ch in range(c):
        for j in range(ch - (n - 1) // 2, ch - (n - 1) // 2 + n):
            if 0 <= j < c:
                mid[:, ch] += alpha * x[:, j] ** 2
    out = x * mid ** -beta
    if nhwc:
        out, mid = np.moveaxis(out, 1, -1), np.moveaxis(mid, 1, -1)
    return {"Out": out.astype(i["X"].dtype), "MidOut": mid.astype(i["X"].dtype)}


NORM_CASES = [
    OpCase("instance_norm", {"X": r(2, 3, 4, 5), "Scale": r(3), "Bias": r(3)},
           attrs={"epsilon": 1e-5}, ref=ref_instance_norm, name="nchw"),
    OpCase("instance_norm", {"X": r(2, 3, 6)}, ref=ref_instance_norm, name="no_scale_3d"),
    OpCase("instance_norm", {"X": r(2, 2, 3, 3), "Scale": r(2), "Bias": r(2)},
           ref=ref_instance_norm, grad=["X", "Scale", "Bias"], grad_outputs=["Y"],
           name="grad"),
    OpCase("group_norm", {"X": r(2, 6, 3, 4), "Scale": r(6), "Bias": r(6)},
           attrs={"groups": 3}, ref=ref_group_norm, name="nchw"),
    OpCase("group_norm", {"X": r(2, 3, 2, 4)}, attrs={"groups": 2, "data_layout": "NHWC"},
           ref=ref_group_norm, name="nhwc_no_affine"),
    OpCase("group_norm", {"X": r(2, 4, 3, 2), "Scale": r(4), "Bias": r(4)},
           attrs={"groups": 2}, ref=ref_group_norm, grad=["X", "Scale", "Bias"],
           grad_outputs=["Y"], name="grad"),
    OpCase("group_norm", {"X": r(1, 3, 2, 4), "Scale": r(4)},
           attrs={"groups": 2, "data_layout": "NHWC"}, ref=ref_group_norm,
           grad=["X", "Scale"], grad_outputs=["Y"], name="grad_nhwc"),
    OpCase("lrn", {"X": r(2, 7, 3, 3)}, attrs={"n": 5, "k": 2.0, "alpha": 0.1, "beta": 0.75},
           ref=ref_lrn, name="n5"),
    OpCase("lrn", {"X": r(1, 3, 2, 6)}, attrs={"n": 4, "alpha": 0.5, "data_format": "NHWC"},
           ref=ref_lrn, name="n4_nhwc"),
    OpCase("lrn", {"X": r(1, 5, 2, 2)}, attrs={"n": 3, "alpha": 0.3, "beta": 0.6},
           ref=ref_lrn, grad=["X"], grad_outputs=["Out"], name="grad"),
    OpCase("lrn", {"X": r(1, 4, 2, 1)}, attrs={"n": 4, "alpha": 0.3, "k": 1.5},
           ref=ref_lrn, grad=["X"], grad_outputs=["Out"], name="grad_even_window"),
]



def ref_data_norm(i, a):
    x = i["X"].astype(np.float64)
    means = i["BatchSum"] / i["BatchSize"]
    scales = np.sqrt(i["BatchSize"] / i["BatchSquareSum"])
    y = (x - means) * scales
    if a.get("enable_scale_and_shift"):
        y = y * i["scale_w"] + i["bias"]
    slot = a.get("slot_dim", -1)
    if slot > 0:
        for row in range(x.shape[0]):
            for start in range(0, x.shape[1], slot):
                if abs(x[row, start]) < 1e-5:
                    y[row, start:start + slot] = 0
    dt = i["X"].dtype
    return {"Y": y.astype(dt), "Means": means.astype(dt), "Scales": scales.astype(dt)}


def dn_inputs(n, c):
    return {"X": r(n, c), "BatchSize": r(c, low=50, high=100), "BatchSum": r(c, low=-5, high=5),
            "BatchSquareSum": r(c, low=40, high=90)}


def ref_inplace_abn(i, a):
    y = ref_bn(i, a)
    z = y["Y"].astype(np.float64)
    alpha = a.get("alpha", 1.0)
    if a.get("activation") == "leaky_relu":
        z = np.where(z >= 0, z, alpha * z)
    elif a.get("activation") == "elu":
        z = np.where(z >= 0, z, alpha * (np.exp(np.minimum(z, 0)) - 1))
    y["Y"] = z.astype(i["X"].dtype)
    return y


def ref_data_norm_channels(i, a):
    """N-D X: the same normalisation per channel (axis 1, NCHW), via [rows, C]."""
    x = i["X"]
    rows = np.moveaxis(x, 1, -1).reshape(-1, x.shape[1])
    y = ref_data_norm(dict(i, X=rows), a)
    y["Y"] = np.moveaxis(y["Y"].reshape(np.moveaxis(x, 1, -1).shape), -1, 1)
    return y


_nchw = dict(dn_inputs(2, 3), X=r(2, 3, 2, 2))
_slotted = dn_inputs(3, 4)
_slotted["X"][1, 0] = 0.0
_scaled = dict(dn_inputs(3, 2), scale_w=r(2, low=0.5, high=1.5), bias=r(2))

NORM_CASES += [
    OpCase("data_norm", dn_inputs(4, 3), ref=ref_data_norm, name="basic"),
    OpCase("data_norm", _slotted, attrs={"slot_dim": 2}, ref=ref_data_norm, name="slot_dim"),
    OpCase("data_norm", _scaled, attrs={"enable_scale_and_shift": True}, ref=ref_data_norm,
           name="scale_and_shift"),
    OpCase("data_norm", dn_inputs(3, 2), ref=ref_data_norm, grad=["X"], grad_outputs=["Y"],
           name="grad"),
    OpCase("data_norm", _nchw, ref=ref_data_norm_channels, grad=["X"], grad_outputs=["Y"],
           name="nchw_4d"),
    OpCase("inplace_abn", bn_inputs((2, 3, 2, 2)),
           attrs={"activation": "leaky_relu", "alpha": 0.1}, ref=ref_inplace_abn,
           name="leaky_relu", outputs={"Y": 1, "MeanOut": 1, "VarianceOut": 1,
                                       "SavedMean": 1, "SavedVariance": 1}),
    OpCase("inplace_abn", bn_inputs((2, 3, 3)), attrs={"activation": "elu", "alpha": 0.5},
           ref=ref_inplace_abn, name="elu"),
    OpCase("inplace_abn", bn_inputs((3, 2, 2)), attrs={"activation": "leaky_relu",
                                                       "alpha": 0.2},
           ref=ref_inplace_abn, grad=["X", "Scale", "Bias"], grad_outputs=["Y"],
           name="grad_leaky_relu"),
    OpCase("inplace_abn", bn_inputs((3, 2, 2)), attrs={"activation": "elu", "alpha": 0.7},
           ref=ref_inplace_abn, grad=["X", "Scale", "Bias"], grad_outputs=["Y"],
           name="grad_elu"),
    OpCase("inplace_abn", bn_inputs((3, 2, 2)), attrs={"activation": "identity",
                                                       "use_global_stats": True},
           ref=ref_inplace_abn, grad=["X", "Scale", "Bias"], grad_outputs=["Y"],
           name="grad_global_stats"),
]

CASES = CASES + NORM_CASES

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


def test_batch_norm_single_value_per_channel_passes_x_through():
    inputs = bn_inputs((1, 3))
    result = check_output(OpCase("batch_norm", inputs))
    np.testing.assert_array_equal(np.asarray(result["Y"]), inputs["X"])
    np.testing.assert_array_equal(np.asarray(result["MeanOut"]), inputs["Mean"])


def test_batch_norm_grad_op_has_paddle_26_slots():
    from fluid_nb.ops import registry
    _, op, _, _ = build(OpCase("batch_norm", bn_inputs((2, 3))))
    (spec,) = registry.make_grad_ops(op)
    assert spec.type == "batch_norm_grad"
    assert set(spec.inputs) == {"X", "Scale", "Bias", "MeanOut", "VarianceOut", "SavedMean",
                                "SavedVariance", "Y@GRAD"}
    assert spec.inputs["MeanOut"] == op.output("MeanOut")
    assert set(spec.outputs) == {"X@GRAD", "Scale@GRAD", "Bias@GRAD"}


def test_batch_norm_grad_accepts_older_mean_variance_slots():
    """Paddle before 2.4 fed the running statistics as Mean/Variance (global stats only)."""
    inputs = bn_inputs((2, 3))
    x, scale, var = inputs["X"], inputs["Scale"], inputs["Variance"]
    dy = r(2, 3)
    case = OpCase("batch_norm_grad",
                  {"X": x, "Scale": scale, "Bias": inputs["Bias"], "Mean": inputs["Mean"],
                   "Variance": var, "SavedMean": np.zeros(3, "float32"),
                   "SavedVariance": np.zeros(3, "float32"), "Y@GRAD": dy},
                  attrs={"use_global_stats": True},
                  ref=lambda i, a: {"X@GRAD": dy * scale / np.sqrt(var + 1e-5)},
                  outputs={"X@GRAD": 1})
    check_output(case)


_fails = assert_build_fails


def test_batch_norm_errors_name_op_and_slot():
    inputs = bn_inputs((2, 3, 4))
    inputs["Scale"] = r(4)
    _fails("batch_norm", inputs, {}, "Scale", "[3]")
    _fails("batch_norm", bn_inputs((2, 3)), {"epsilon": 0.5}, "epsilon")
    _fails("batch_norm", {**bn_inputs((2, 3)), "X": r(3)}, {}, "X", "2-D to 5-D")


def test_layer_norm_errors_name_op_and_slot():
    _fails("layer_norm", {"X": r(2, 3)}, {"begin_norm_axis": 2}, "begin_norm_axis")
    _fails("layer_norm", {"X": r(2, 3), "Scale": r(4)}, {}, "Scale", "[3]")


def test_batch_norm_single_value_per_channel_passes_the_gradient_through():
    """Y = X when each channel holds one value (a batch of 1): dX = dY, and Scale and Bias
    get no gradient; float64 finite differences agree."""
    inputs = bn_inputs((1, 3))
    case = OpCase("batch_norm", inputs, ref=lambda ins, attrs: {"Y": ins["X"]},
                  grad=["X", "Scale", "Bias"], grad_outputs=["Y"])
    check_grad(case)
