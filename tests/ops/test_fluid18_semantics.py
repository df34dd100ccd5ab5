"""Behaviours of existing ops that Fluid 1.8 programs rely on: rank_loss with [N] and
[N, 1] inputs mixed, matmul's head_number, group_norm's epsilon up to 1, uint8 images
resized by bilinear interpolation (weighted in floating point, truncated back), ctc_align
on padded rows, warpctc's loss of 0 for a label longer than its sequence."""
import numpy as np

from .op_test import OpCase, table_tests

rng = np.random.RandomState(19)


def rank_ref(i, a):
    o = i["Left"].reshape(-1) - i["Right"].reshape(-1)
    out = np.log1p(np.exp(o)) - i["Label"].reshape(-1) * o
    return {"Out": out.reshape(i["Label"].shape)}


def head_ref(i, a):
    x, y, h = i["X"], i["Y"], a["head_number"]
    xs = np.split(x, h, axis=-1)
    ys = np.split(y, h, axis=-2 if x.shape[-1] == y.shape[-2] else -1)
    return {"Out": np.concatenate([p @ q for p, q in zip(xs, ys)], axis=-1)}


def group_norm_ref(i, a):
    x, g, eps = i["X"], a["groups"], a["epsilon"]
    n, c = x.shape[:2]
    rows = x.reshape(n, g, -1)
    mean, var = rows.mean(axis=2), rows.var(axis=2)
    y = ((rows - mean[..., None]) / np.sqrt(var[..., None] + eps)).reshape(x.shape)
    y = y * i["Scale"].reshape(1, c, 1, 1) + i["Bias"].reshape(1, c, 1, 1)
    return {"Y": y, "Mean": mean, "Variance": var}


def bilinear_uint8_ref(i, a):
    """align_corners: each output pixel from the four around (ratio * i, ratio * j)."""
    x = i["X"].astype("float64")
    n, c, h, w = x.shape
    oh, ow = a["out_h"], a["out_w"]
    rh, rw = (h - 1) / (oh - 1), (w - 1) / (ow - 1)
    out = np.zeros((n, c, oh, ow))
    for p in range(oh):
        y0 = int(rh * p)
        dy, y1 = rh * p - y0, min(y0 + 1, h - 1)
        for q in range(ow):
            x0 = int(rw * q)
            dx, x1 = rw * q - x0, min(x0 + 1, w - 1)
            out[:, :, p, q] = ((1 - dy) * ((1 - dx) * x[:, :, y0, x0] + dx * x[:, :, y0, x1])
                               + dy * ((1 - dx) * x[:, :, y1, x0] + dx * x[:, :, y1, x1]))
    return {"Out": out.astype("uint8")}


CASES = [
    OpCase("rank_loss", {"Label": rng.randint(0, 2, (5,)).astype("float64"),
                         "Left": rng.uniform(0, 1, (5, 1)), "Right": rng.uniform(0, 1, (5,))},
           ref=rank_ref, grad=["Left", "Right"], name="mixed_ranks"),
    # float32: the exporters' runtime normalises float32 only (grads run in float64)
    OpCase("group_norm", {"X": rng.uniform(-1, 1, (2, 4, 3, 3)).astype("float32"),
                          "Scale": rng.uniform(0.5, 1.5, (4,)).astype("float32"),
                          "Bias": rng.uniform(-1, 1, (4,)).astype("float32")},
           attrs={"groups": 2, "epsilon": 0.5}, ref=group_norm_ref, grad=["X", "Scale"],
           grad_outputs=["Y"], name="large_epsilon"),
    OpCase("bilinear_interp", {"X": rng.randint(0, 256, (1, 2, 4, 5)).astype("uint8")},
           attrs={"out_h": 7, "out_w": 3, "align_corners": True, "align_mode": 1},
           ref=bilinear_uint8_ref, atol=1, name="uint8"),
    OpCase("ctc_align", {"Input": np.array([[0, 1, 1, 0, 2, 2], [3, 3, 0, 4, 0, 0]], "int32"),
                         "InputLength": np.array([[6], [4]], "int64")},
           attrs={"blank": 0, "padding_value": -1},
           ref=lambda i, a: {"Output": np.array([[1, 2, -1, -1, -1, -1],
                                                 [3, 4, -1, -1, -1, -1]], "int32"),
                             "OutputLength": np.array([[2], [2]], "int64")},
           name="padded"),
    OpCase("warpctc", {"Logits": rng.uniform(0.1, 1, (3, 4)).astype("float32"),
                       "Label": np.array([[1], [2], [1], [2]], "int32")},
           lod={"Logits": [[0, 1, 3]], "Label": [[0, 3, 4]]}, attrs={"blank": 0},
           check=lambda out, i, a: np.testing.assert_array_equal(
               np.asarray(out["Loss"])[0], [0.0]),
           name="label_longer_than_steps"),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)

# kept out of CASES: the exporters lower matmul without heads, and every table row of an op
# they convert is also an export test
HEAD_CASES = [
    OpCase("matmul", {"X": rng.uniform(-1, 1, (2, 3, 8)), "Y": rng.uniform(-1, 1, (2, 8, 4))},
           attrs={"head_number": 4}, ref=head_ref, grad=["X", "Y"], name="heads_rows_of_y"),
    OpCase("matmul", {"X": rng.uniform(-1, 1, (3, 6)), "Y": rng.uniform(-1, 1, (3, 4))},
           attrs={"head_number": 2}, ref=head_ref, grad=["X", "Y"],
           name="heads_columns_of_y"),
]

(test_matmul_heads_match_numpy, test_matmul_heads_grad_matches_finite_differences,
 test_matmul_heads_run_on_the_strict_device) = table_tests(HEAD_CASES)
