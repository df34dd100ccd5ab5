"""unpool, spp, conv_shift and fc against loop-by-loop NumPy references, with float64
finite-difference gradients."""
import math

import numpy as np

from .op_test import OpCase, table_tests

rng = np.random.RandomState(18)


def r(*shape, dtype="float64"):
    return rng.uniform(-1, 1, shape).astype(dtype)


def max_pool_with_indices(x, k, s):
    n, c, h, w = x.shape
    oh, ow = (h - k) // s + 1, (w - k) // s + 1
    vals, idx = np.zeros((n, c, oh, ow)), np.zeros((n, c, oh, ow), "int32")
    for i in range(oh):
        for j in range(ow):
            win = x[:, :, i * s:i * s + k, j * s:j * s + k].reshape(n, c, -1)
            a = win.argmax(axis=2)
            vals[:, :, i, j] = win.max(axis=2)
            idx[:, :, i, j] = (i * s + a // k) * w + j * s + a % k
    return vals, idx


def unpool_ref(i, a):
    x, idx = i["X"], i["Indices"]
    k, s, p = a["ksize"], a["strides"], a["paddings"]
    oh = (x.shape[2] - 1) * s[0] - 2 * p[0] + k[0]
    ow = (x.shape[3] - 1) * s[1] - 2 * p[1] + k[1]
    out = np.zeros(x.shape[:2] + (oh * ow,))
    for n, c, h, w in np.ndindex(*x.shape):
        out[n, c, idx[n, c, h, w]] = x[n, c, h, w]
    return {"Out": out.reshape(x.shape[:2] + (oh, ow))}


def spp_ref(i, a):
    x = i["X"]
    n, c, h, w = x.shape
    parts = []
    for level in range(a["pyramid_height"]):
        bins = 2 ** level
        kh, kw = math.ceil(h / bins), math.ceil(w / bins)
        ph, pw = (kh * bins - h + 1) // 2, (kw * bins - w + 1) // 2
        out = np.zeros((n, c, bins, bins))
        for bi in range(bins):
            for bj in range(bins):
                win = x[:, :, max(bi * kh - ph, 0):min(bi * kh - ph + kh, h),
                        max(bj * kw - pw, 0):min(bj * kw - pw + kw, w)]
                out[:, :, bi, bj] = (win.max(axis=(2, 3)) if a["pooling_type"] == "max"
                                     else win.mean(axis=(2, 3)))
        parts.append(out.reshape(n, -1))
    return {"Out": np.concatenate(parts, axis=1)}


def conv_shift_ref(i, a):
    x, y = i["X"], i["Y"]
    m, n = x.shape[1], y.shape[1]
    out = np.zeros_like(x)
    for col in range(m):
        for j in range(n):
            out[:, col] += x[:, (col + j - (n - 1) // 2) % m] * y[:, j]
    return {"Out": out}


def fc_ref(i, a):
    x, w = i["Input"], i["W"]
    k = a.get("in_num_col_dims", 1)
    if a.get("padding_weights"):
        w = w[:-4, :-4]
    out = x.reshape(int(np.prod(x.shape[:k])), -1) @ w
    if "Bias" in i:
        out = out + i["Bias"].reshape(1, -1)
    if a.get("activation_type") == "relu":
        out = np.maximum(out, 0)
    return {"Out": out.reshape(x.shape[:k] + (w.shape[1],))}


pooled, where = max_pool_with_indices(r(2, 3, 6, 6), 2, 2)
spp_x = rng.permutation(2 * 2 * 7 * 7).reshape(2, 2, 7, 7) / 50.0  # distinct: no max ties
CASES = [
    OpCase("unpool", {"X": pooled, "Indices": where},
           attrs={"ksize": [2, 2], "strides": [2, 2], "paddings": [0, 0]}, ref=unpool_ref,
           grad=["X"]),
    OpCase("spp", {"X": spp_x}, attrs={"pyramid_height": 3, "pooling_type": "max"},
           ref=spp_ref, grad=["X"]),
    OpCase("spp", {"X": r(2, 2, 5, 6)}, attrs={"pyramid_height": 2, "pooling_type": "avg"},
           ref=spp_ref, grad=["X"], name="avg"),
    OpCase("conv_shift", {"X": r(3, 7), "Y": r(3, 3)}, ref=conv_shift_ref, grad=["X", "Y"]),
    OpCase("fc", {"Input": r(2, 3, 2, 2), "W": r(12, 5), "Bias": r(1, 5)},
           attrs={"activation_type": "relu"}, ref=fc_ref),
    OpCase("fc", {"Input": r(2, 3, 4), "W": r(8, 9)},
           attrs={"in_num_col_dims": 2, "padding_weights": True}, ref=fc_ref,
           name="padded_weights"),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


def test_conv_shift_wants_an_odd_kernel():
    from .op_test import assert_build_fails
    assert_build_fails("conv_shift", {"X": r(2, 5), "Y": r(2, 2)}, {}, "Y", "odd")
