"""Vision ops beyond conv2d/pool2d (conv3d, transposed convolutions, pool3d, max pooling
with index, ...) against direct-loop NumPy references, with float64 finite-difference
gradients on small shapes."""
import itertools

import numpy as np
import pytest

from .op_test import OpCase, assert_build_fails, table_tests

rng = np.random.RandomState(3)


def r(*shape, dtype="float32"):
    return rng.uniform(-1, 1, shape).astype(dtype)


# --- convolution references: one output (or input) position at a time ---------------------
def _pads(a, d, sizes, ksizes, strides):
    algo = a.get("padding_algorithm", "EXPLICIT")
    if algo == "VALID":
        return [(0, 0)] * d
    if algo == "SAME":
        pads = []
        for size, k, s in zip(sizes, ksizes, strides):
            total = max((-(-size // s) - 1) * s + k - size, 0)
            pads.append((total // 2, total - total // 2))
        return pads
    p = a.get("paddings", [0] * d)
    return [(v, v) for v in p] if len(p) == d else [(p[2 * i], p[2 * i + 1]) for i in range(d)]


def _channel_first(x, a):
    if a.get("data_format") in ("NHWC", "NDHWC"):
        return np.moveaxis(x, -1, 1)
    return x


def _restore(out, a):
    if a.get("data_format") in ("NHWC", "NDHWC"):
        return np.moveaxis(out, 1, -1)
    return out


def ref_conv_nd(i, a):
    x, w = _channel_first(i["Input"], a).astype(np.float64), i["Filter"]
    d = x.ndim - 2
    strides = a.get("strides", [1] * d)
    dil = a.get("dilations", [1] * d)
    pads = _pads(a, d, x.shape[2:], w.shape[2:], strides)
    if a.get("padding_algorithm") == "SAME":
        dil = [1] * d
    groups = a.get("groups", 1)
    xp = np.pad(x, ((0, 0), (0, 0)) + tuple(pads))
    out_sizes = [(s + p0 + p1 - (dl * (k - 1) + 1)) // st + 1 for s, (p0, p1), dl, k, st in
                 zip(x.shape[2:], pads, dil, w.shape[2:], strides)]
    m, cg = w.shape[:2]
    out = np.zeros((x.shape[0], m) + tuple(out_sizes))
    for o in range(m):
        g = o // (m // groups)
        for pos in itertools.product(*(range(s) for s in out_sizes)):
            region = tuple(slice(p * st, p * st + dl * (k - 1) + 1, dl) for p, st, dl, k in
                           zip(pos, strides, dil, w.shape[2:]))
            patch = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + region]
            out[(slice(None), o) + pos] = (patch * w[o]).reshape(x.shape[0], -1).sum(axis=1)
    return {"Output": _restore(out, a).astype(i["Input"].dtype)}


def ref_conv_transpose(i, a):
    x, w = _channel_first(i["Input"], a).astype(np.float64), i["Filter"]
    d = x.ndim - 2
    strides = a.get("strides", [1] * d)
    dil = a.get("dilations", [1] * d)
    pads = _pads(a, d, x.shape[2:], w.shape[2:], strides)
    if a.get("padding_algorithm") == "SAME":
        dil = [1] * d
    groups = a.get("groups", 1)
    c, mg = w.shape[:2]
    sizes = [(s - 1) * st - p0 - p1 + dl * (k - 1) + 1 for s, st, (p0, p1), dl, k in
             zip(x.shape[2:], strides, pads, dil, w.shape[2:])]
    if a.get("output_size"):
        sizes = list(a["output_size"])
    full = np.zeros((x.shape[0], mg * groups) + tuple(s + p0 + p1 + max(strides) * 3
                                                      for s, (p0, p1) in zip(sizes, pads)))
    for ci in range(c):
        g = ci // (c // groups)
        for pos in itertools.product(*(range(s) for s in x.shape[2:])):
            for tap in itertools.product(*(range(k) for k in w.shape[2:])):
                at = tuple(p * st + t * dl for p, st, t, dl in zip(pos, strides, tap, dil))
                full[(slice(None), slice(g * mg, (g + 1) * mg)) + at] += (
                    x[(slice(None), ci) + pos][:, None] * w[(ci, slice(None)) + tap][None, :])
    crop = tuple(slice(p0, p0 + s) for (p0, _), s in zip(pads, sizes))
    out = full[(slice(None), slice(None)) + crop]
    return {"Output": _restore(out, a).astype(i["Input"].dtype)}


# --- pooling references ------------------------------------------------------------------------
def _pool_bounds(size, k, s, pad, o, adaptive):
    if adaptive:
        start, end = o * size // k, -(-(o + 1) * size // k)
        return start, end, end - start
    start = o * s - pad
    # a non-exclusive average divides by the whole window, padding or not
    return max(start, 0), min(start + k, size), k


def ref_pool_nd(i, a, with_index=False):
    x = _channel_first(i["X"], a).astype(np.float64)
    d = x.ndim - 2
    sizes = x.shape[2:]
    ksize = list(sizes) if a.get("global_pooling") else a["ksize"]
    strides = a.get("strides", [1] * d)
    adaptive = a.get("adaptive", False)
    if a.get("global_pooling") or adaptive:
        pads = [(0, 0)] * d
    else:
        pads = _pads(a, d, sizes, ksize, strides)
    ceil = a.get("ceil_mode", False)
    if adaptive:
        out_sizes = list(ksize)
    else:
        out_sizes = [(s - k + p0 + p1 + (st - 1 if ceil else 0)) // st + 1
                     for s, k, st, (p0, p1) in zip(sizes, ksize, strides, pads)]
    is_max = with_index or a["pooling_type"] == "max"
    out = np.zeros(x.shape[:2] + tuple(out_sizes))
    mask = np.zeros(out.shape, dtype=np.int32)
    for pos in itertools.product(*(range(o) for o in out_sizes)):
        bounds = [_pool_bounds(s, k, st, p0, o, adaptive) for s, k, st, (p0, _), o in
                  zip(sizes, ksize, strides, pads, pos)]
        win = x[(slice(None), slice(None)) + tuple(slice(b0, b1) for b0, b1, _ in bounds)]
        at = (slice(None), slice(None)) + pos
        if is_max:
            flat = win.reshape(x.shape[:2] + (-1,))
            out[at] = flat.max(axis=-1)
            local = np.unravel_index(flat.argmax(axis=-1), win.shape[2:])
            mask[at] = np.ravel_multi_index(
                tuple(l + b0 for l, (b0, _, _) in zip(local, bounds)), sizes)
        else:
            exclusive = a.get("exclusive", True) or adaptive
            count = np.prod([(b1 - b0) if exclusive else ext for b0, b1, ext in bounds])
            out[at] = win.reshape(x.shape[:2] + (-1,)).sum(axis=-1) / count
    if with_index:
        return {"Out": out.astype(i["X"].dtype), "Mask": mask}
    return {"Out": _restore(out, a).astype(i["X"].dtype)}


def conv(op, name, inputs, attrs, grad=(), ref=ref_conv_nd, **kw):
    return OpCase(op, inputs, attrs=attrs, ref=ref, grad=list(grad), name=name, **kw)


def tconv(op, name, inputs, attrs, grad=(), **kw):
    return conv(op, name, inputs, attrs, grad, ref=ref_conv_transpose, **kw)


def pool3(name, x, attrs, grad=False, **kw):
    return OpCase("pool3d", {"X": x}, attrs=attrs, ref=ref_pool_nd,
                  grad=["X"] if grad else [], name=name, **kw)


def with_index(op, name, x, attrs, grad=False):
    return OpCase(op, {"X": x}, attrs=attrs, ref=lambda i, a: ref_pool_nd(i, a, True),
                  grad=["X"] if grad else [], name=name, grad_outputs=["Out"])


CONV_CASES = [
    conv("conv3d", "pad1", {"Input": r(2, 2, 4, 5, 4), "Filter": r(3, 2, 3, 3, 2)},
         {"paddings": [1, 1, 0]}),
    conv("conv3d", "strided_dilated_pads6", {"Input": r(1, 2, 6, 5, 5),
                                             "Filter": r(2, 1, 2, 2, 2)},
         {"strides": [2, 1, 2], "dilations": [2, 1, 1], "paddings": [1, 0, 0, 1, 1, 1],
          "groups": 2}),
    conv("conv3d", "ndhwc_same", {"Input": r(1, 4, 5, 3, 2), "Filter": r(2, 2, 3, 3, 3)},
         {"data_format": "NDHWC", "padding_algorithm": "SAME", "strides": [2, 2, 1]}),
    conv("conv3d", "grad", {"Input": r(1, 2, 3, 3, 3), "Filter": r(2, 2, 2, 2, 2)},
         {"paddings": [1, 0, 1], "strides": [2, 1, 1]}, grad=["Input", "Filter"]),
    tconv("conv2d_transpose", "basic", {"Input": r(2, 3, 3, 4), "Filter": r(3, 2, 3, 3)},
          {}),
    tconv("conv2d_transpose", "stride_pad_dilation",
          {"Input": r(1, 2, 3, 3), "Filter": r(2, 3, 3, 2)},
          {"strides": [2, 3], "paddings": [1, 0], "dilations": [1, 2]}),
    tconv("conv2d_transpose", "pads4_groups",
          {"Input": r(1, 4, 3, 3), "Filter": r(4, 1, 2, 3)},
          {"strides": [2, 2], "paddings": [0, 1, 1, 0], "groups": 2}),
    tconv("conv2d_transpose", "output_size",
          {"Input": r(1, 2, 3, 3), "Filter": r(2, 2, 3, 3)},
          {"strides": [2, 2], "paddings": [1, 1], "output_size": [6, 5]}),
    tconv("conv2d_transpose", "nhwc_same", {"Input": r(1, 3, 4, 2), "Filter": r(2, 3, 3, 3)},
          {"strides": [2, 2], "padding_algorithm": "SAME", "data_format": "NHWC"}),
    tconv("conv2d_transpose", "valid", {"Input": r(1, 2, 3, 3), "Filter": r(2, 1, 2, 2)},
          {"padding_algorithm": "VALID", "paddings": [3, 3]}),
    tconv("depthwise_conv2d_transpose", "c3", {"Input": r(1, 3, 3, 3),
                                               "Filter": r(3, 1, 3, 3)},
          {"groups": 3, "strides": [2, 2], "paddings": [1, 1]}),
    tconv("conv2d_transpose", "grad", {"Input": r(1, 2, 3, 2), "Filter": r(2, 2, 3, 2)},
          {"strides": [2, 1], "paddings": [1, 0]}, grad=["Input", "Filter"]),
    tconv("conv2d_transpose", "grad_groups_output_size",
          {"Input": r(1, 2, 2, 2), "Filter": r(2, 1, 2, 2)},
          {"strides": [2, 2], "groups": 2, "output_size": [5, 4]}, grad=["Input", "Filter"]),
    tconv("depthwise_conv2d_transpose", "grad", {"Input": r(1, 2, 2, 3),
                                                 "Filter": r(2, 1, 2, 2)},
          {"groups": 2, "strides": [2, 2]}, grad=["Input", "Filter"]),
    tconv("conv3d_transpose", "basic", {"Input": r(1, 2, 2, 3, 2),
                                        "Filter": r(2, 3, 2, 2, 3)},
          {"strides": [2, 1, 2], "paddings": [0, 1, 1]}),
    tconv("conv3d_transpose", "grad", {"Input": r(1, 2, 2, 2, 2), "Filter": r(2, 1, 2, 2, 2)},
          {"strides": [2, 2, 1]}, grad=["Input", "Filter"]),
]

POOL_CASES = [
    pool3("max", r(2, 2, 4, 4, 5), {"pooling_type": "max", "ksize": [2, 2, 2],
                                    "strides": [2, 2, 2]}),
    pool3("avg_pad_exclusive", r(1, 2, 4, 5, 4),
          {"pooling_type": "avg", "ksize": [3, 3, 2], "strides": [1, 2, 1],
           "paddings": [1, 1, 0]}),
    pool3("avg_inclusive_ceil", r(1, 2, 5, 5, 4),
          {"pooling_type": "avg", "ksize": [2, 3, 2], "strides": [2, 2, 2],
           "ceil_mode": True, "exclusive": False, "paddings": [0, 1, 1, 0, 0, 0]}),
    # windows reaching past the padding still divide by the whole ksize (Fluid 1.8's CPU
    # kernel), with more padding before than after
    pool3("avg_inclusive_asymmetric_pads", r(2, 3, 6, 7, 7),
          {"pooling_type": "avg", "ksize": [3, 3, 4], "strides": [1, 3, 2],
           "exclusive": False, "paddings": [1, 2, 1, 1, 1, 0]}),
    pool3("global_avg_ndhwc", r(2, 3, 4, 2, 3),
          {"pooling_type": "avg", "ksize": [1, 1, 1], "global_pooling": True,
           "data_format": "NDHWC"}),
    pool3("adaptive_avg", r(1, 2, 5, 4, 7), {"pooling_type": "avg", "ksize": [2, 3, 3],
                                             "adaptive": True}),
    pool3("adaptive_max", r(1, 2, 5, 4, 7), {"pooling_type": "max", "ksize": [3, 3, 2],
                                             "adaptive": True}),
    pool3("same_max", r(1, 1, 5, 4, 3), {"pooling_type": "max", "ksize": [3, 3, 3],
                                         "strides": [2, 2, 2],
                                         "padding_algorithm": "SAME"}),
    pool3("grad_max", r(1, 2, 3, 4, 3), {"pooling_type": "max", "ksize": [2, 2, 2],
                                         "strides": [1, 2, 1], "paddings": [1, 0, 0]},
          grad=True),
    pool3("grad_avg", r(1, 1, 3, 4, 4), {"pooling_type": "avg", "ksize": [2, 3, 2],
                                         "strides": [1, 1, 2], "paddings": [0, 1, 1],
                                         "exclusive": False}, grad=True),
    pool3("grad_adaptive_avg", r(1, 2, 3, 5, 2), {"pooling_type": "avg", "ksize": [2, 2, 1],
                                                  "adaptive": True}, grad=True),
    with_index("max_pool2d_with_index", "strided_pad", r(2, 2, 5, 6),
               {"ksize": [3, 3], "strides": [2, 2], "paddings": [1, 1]}),
    with_index("max_pool2d_with_index", "adaptive", r(1, 3, 7, 5),
               {"ksize": [3, 2], "adaptive": True}),
    with_index("max_pool2d_with_index", "global", r(2, 2, 3, 4),
               {"ksize": [1, 1], "global_pooling": True}),
    with_index("max_pool2d_with_index", "grad_adaptive", r(1, 2, 5, 4),
               {"ksize": [2, 3], "adaptive": True}, grad=True),
    with_index("max_pool3d_with_index", "adaptive", r(1, 2, 5, 3, 4),
               {"ksize": [2, 2, 3], "adaptive": True}),
    with_index("max_pool3d_with_index", "grad", r(1, 1, 4, 3, 4),
               {"ksize": [2, 2, 2], "strides": [2, 1, 2]}, grad=True),
]


# --- interpolation references: Paddle's per-pixel formulas ------------------------------------
def _interp_sizes(x_sizes, a, i):
    n = len(x_sizes)
    if "SizeTensor" in i:
        return [int(t.reshape(-1)[0]) for t in i["SizeTensor"]]
    sizes = [a.get(k, -1) for k in ("out_d", "out_h", "out_w")[3 - n:]]
    scale = float(i["Scale"].reshape(-1)[0]) if "Scale" in i else a.get("scale", 0.0)
    if scale > 0:
        sizes = [int(s * scale) for s in x_sizes]
    if "OutSize" in i:
        sizes = [int(v) for v in i["OutSize"]]
    return sizes


def _src_linear(k, size_in, size_out, a):
    align = a.get("align_corners", True)
    ratio = 0.0 if size_out <= 1 else ((size_in - 1) / (size_out - 1) if align
                                       else size_in / size_out)
    if a.get("align_mode", 1) == 0 and not align:
        src = max(ratio * (k + 0.5) - 0.5, 0.0)
    else:
        src = ratio * k
    low = max(int(src), 0)
    high = low + 1 if low < size_in - 1 else low
    return [(low, 1 - (src - low)), (high, src - low)]


def _src_nearest(k, size_in, size_out, a):
    align = a.get("align_corners", True)
    ratio = 0.0 if size_out <= 1 else ((size_in - 1) / (size_out - 1) if align
                                       else size_in / size_out)
    return [(int(ratio * k + 0.5) if align else int(ratio * k), 1.0)]


def _src_cubic(k, size_in, size_out, a):
    align = a.get("align_corners", True)
    ratio = 0.0 if size_out <= 1 else ((size_in - 1) / (size_out - 1) if align
                                       else size_in / size_out)
    src = ratio * k if align else ratio * (k + 0.5) - 0.5
    base = int(src)  # truncated toward 0: an upsampling's first rows get t < 0
    t = src - base
    A = -0.75
    c1 = lambda x: ((A + 2) * x - (A + 3)) * x * x + 1  # noqa: E731
    c2 = lambda x: ((A * x - 5 * A) * x + 8 * A) * x - 4 * A  # noqa: E731
    weights = [c2(t + 1), c1(t), c1(1 - t), c2(2 - t)]
    return [(min(max(base - 1 + j, 0), size_in - 1), w) for j, w in enumerate(weights)]


def ref_interp(method):
    pick = {"nearest": _src_nearest, "bicubic": _src_cubic}.get(method, _src_linear)

    def ref(i, a):
        x = i["X"].astype(np.float64)
        last = a.get("data_layout", "NCHW") == "NHWC"
        if last:
            x = np.moveaxis(x, -1, 1)
        in_sizes = x.shape[2:]
        sizes = _interp_sizes(in_sizes, a, i)
        out = np.zeros(x.shape[:2] + tuple(sizes))
        for pos in itertools.product(*(range(s) for s in sizes)):
            per_dim = [pick(k, si, so, a) for k, si, so in zip(pos, in_sizes, sizes)]
            for combo in itertools.product(*per_dim):
                w = np.prod([c[1] for c in combo])
                out[(slice(None), slice(None)) + pos] += w * x[
                    (slice(None), slice(None)) + tuple(c[0] for c in combo)]
        if last:
            out = np.moveaxis(out, 1, -1)
        return {"Out": out.astype(i["X"].dtype)}
    return ref


def interp(method, name, inputs, attrs, grad=False, **kw):
    return OpCase(f"{method}_interp", inputs, attrs=attrs, ref=ref_interp(method),
                  grad=["X"] if grad else [], name=name, **kw)


INTERP_CASES = [
    interp("bilinear", "align_corners", {"X": r(2, 2, 3, 4)}, {"out_h": 5, "out_w": 7}),
    interp("bilinear", "align_mode0", {"X": r(1, 2, 4, 4)},
           {"out_h": 7, "out_w": 3, "align_corners": False, "align_mode": 0}),
    interp("bilinear", "align_mode1_scale", {"X": r(1, 2, 3, 5)},
           {"scale": 1.5, "align_corners": False, "align_mode": 1}),
    interp("bilinear", "nhwc_outsize", {"X": r(1, 4, 3, 2), "OutSize": np.array([6, 5],
                                                                               "int32")},
           {"out_h": 2, "out_w": 2, "data_layout": "NHWC"}),
    interp("bilinear", "size_tensor", {"X": r(1, 1, 3, 3),
                                       "SizeTensor": [np.array([4], "int32"),
                                                      np.array([2], "int32")]},
           {"out_h": -1, "out_w": 2}),
    interp("bilinear", "scale_tensor", {"X": r(1, 1, 2, 3), "Scale": np.array([2.0],
                                                                              "float32")},
           {}),
    interp("nearest", "align_corners", {"X": r(2, 3, 4, 3)}, {"out_h": 7, "out_w": 5}),
    interp("nearest", "not_aligned", {"X": r(1, 2, 5, 4)},
           {"out_h": 3, "out_w": 8, "align_corners": False}),
    interp("trilinear", "align_mode0", {"X": r(1, 2, 3, 2, 3)},
           {"out_d": 4, "out_h": 3, "out_w": 5, "align_corners": False, "align_mode": 0}),
    interp("trilinear", "aligned", {"X": r(1, 1, 2, 3, 2)},
           {"out_d": 3, "out_h": 5, "out_w": 4}),
    interp("bicubic", "aligned", {"X": r(1, 2, 4, 5)}, {"out_h": 6, "out_w": 3}),
    interp("bicubic", "half_pixel", {"X": r(1, 1, 3, 4)},
           {"out_h": 5, "out_w": 7, "align_corners": False}),
    interp("bilinear", "grad", {"X": r(1, 2, 3, 3)},
           {"out_h": 4, "out_w": 5, "align_corners": False, "align_mode": 0}, grad=True),
    interp("nearest", "grad", {"X": r(1, 1, 3, 4)}, {"out_h": 5, "out_w": 2}, grad=True),
    interp("trilinear", "grad", {"X": r(1, 1, 2, 3, 2)}, {"out_d": 3, "out_h": 2, "out_w": 3},
           grad=True),
    interp("bicubic", "grad", {"X": r(1, 1, 3, 3)}, {"out_h": 4, "out_w": 4}, grad=True),
]

CASES = CONV_CASES + POOL_CASES + INTERP_CASES



def test_conv2d_transpose_refuses_output_size_out_of_reach():
    assert_build_fails("conv2d_transpose", {"Input": r(1, 2, 3, 3), "Filter": r(2, 2, 3, 3)},
                       {"strides": [2, 2], "output_size": [9, 7]}, "output_size")


def test_conv3d_refuses_channel_mismatch_and_rank():
    assert_build_fails("conv3d", {"Input": r(1, 3, 3, 3, 3), "Filter": r(2, 2, 2, 2, 2)}, {},
                       "input channels")
    assert_build_fails("conv3d", {"Input": r(1, 3, 3, 3), "Filter": r(2, 3, 2, 2, 2)}, {},
                       "5-D")


def test_pool3d_refuses_a_2d_ksize():
    assert_build_fails("pool3d", {"X": r(1, 1, 3, 3, 3)},
                       {"pooling_type": "max", "ksize": [2, 2]}, "ksize")


def test_max_pool_with_index_mask_is_int32():
    from .op_test import check_output
    case = POOL_CASES[-6]
    result = check_output(case)
    assert np.asarray(result["Mask"]).dtype == np.int32


# --- ROI pooling references: Paddle's per-bin loops -----------------------------------------
def _c_round(v):
    return np.floor(v + 0.5) if v >= 0 else -np.floor(-v + 0.5)


def _roi_images(i, n_rois):
    if "RoisNum" in i:
        return np.repeat(np.arange(len(i["RoisNum"])), i["RoisNum"])
    if "BatchRoINums" in i:
        return np.repeat(np.arange(len(i["BatchRoINums"])), i["BatchRoINums"])
    offsets = i["RoisLod"] if "RoisLod" in i else ROI_LOD[0]
    return np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))


def ref_roi_pool(i, a):
    x, rois = i["X"].astype(np.float64), i["ROIs"]
    n, c, h, w = x.shape
    ph, pw, scale = a.get("pooled_height", 1), a.get("pooled_width", 1), a["spatial_scale"]
    out = np.zeros((len(rois), c, ph, pw))
    arg = np.full(out.shape, -1, dtype=np.int64)
    for r, image in enumerate(_roi_images(i, len(rois))):
        x1, y1, x2, y2 = (int(_c_round(v * scale)) for v in rois[r])
        rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        for p in range(ph):
            for q in range(pw):
                h0 = min(max(int(np.floor(p * rh / ph)) + y1, 0), h)
                h1 = min(max(int(np.ceil((p + 1) * rh / ph)) + y1, 0), h)
                w0 = min(max(int(np.floor(q * rw / pw)) + x1, 0), w)
                w1 = min(max(int(np.ceil((q + 1) * rw / pw)) + x1, 0), w)
                if h1 <= h0 or w1 <= w0:
                    continue
                win = x[image, :, h0:h1, w0:w1].reshape(c, -1)
                out[r, :, p, q] = win.max(axis=1)
                k = win.argmax(axis=1)
                arg[r, :, p, q] = (h0 + k // (w1 - w0)) * w + w0 + k % (w1 - w0)
    return {"Out": out.astype(i["X"].dtype), "Argmax": arg}


def _bilinear(img, y, x):
    h, w = img.shape[1:]
    if y < -1 or y > h or x < -1 or x > w:
        return 0.0
    y, x = max(y, 0.0), max(x, 0.0)
    yl, xl = int(y), int(x)
    if yl >= h - 1:
        yl = yh = h - 1
        y = float(yl)
    else:
        yh = yl + 1
    if xl >= w - 1:
        xl = xh = w - 1
        x = float(xl)
    else:
        xh = xl + 1
    ly, lx = y - yl, x - xl
    return ((1 - ly) * (1 - lx) * img[:, yl, xl] + (1 - ly) * lx * img[:, yl, xh]
            + ly * (1 - lx) * img[:, yh, xl] + ly * lx * img[:, yh, xh])


def ref_roi_align(i, a):
    x, rois = i["X"].astype(np.float64), i["ROIs"]
    c = x.shape[1]
    ph, pw, scale = a.get("pooled_height", 1), a.get("pooled_width", 1), a["spatial_scale"]
    ratio, aligned = a.get("sampling_ratio", -1), a.get("aligned", False)
    out = np.zeros((len(rois), c, ph, pw))
    for r, image in enumerate(_roi_images(i, len(rois))):
        off = 0.5 if aligned else 0.0
        x1, y1, x2, y2 = (v * scale - off for v in rois[r])
        rw, rh = x2 - x1, y2 - y1
        if not aligned:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / ph, rw / pw
        gh = ratio if ratio > 0 else int(np.ceil(rh / ph))
        gw = ratio if ratio > 0 else int(np.ceil(rw / pw))
        count = max(gh * gw, 1)
        for p in range(ph):
            for q in range(pw):
                total = 0.0
                for iy in range(gh):
                    for ix in range(gw):
                        total = total + _bilinear(x[image], y1 + p * bh + (iy + 0.5) * bh / gh,
                                                  x1 + q * bw + (ix + 0.5) * bw / gw)
                out[r, :, p, q] = total / count
    return {"Out": out.astype(i["X"].dtype)}


def ref_psroi_pool(i, a):
    x, rois = i["X"].astype(np.float64), i["ROIs"]
    h, w = x.shape[2:]
    oc, ph, pw = a["output_channels"], a["pooled_height"], a["pooled_width"]
    scale = a["spatial_scale"]
    out = np.zeros((len(rois), oc, ph, pw))
    for r, image in enumerate(_roi_images(i, len(rois))):
        x1, y1 = _c_round(rois[r][0]) * scale, _c_round(rois[r][1]) * scale
        x2, y2 = (_c_round(rois[r][2]) + 1) * scale, (_c_round(rois[r][3]) + 1) * scale
        rh, rw = max(y2 - y1, 0.1), max(x2 - x1, 0.1)
        for ch in range(oc):
            for p in range(ph):
                for q in range(pw):
                    h0 = min(max(int(np.floor(rh / ph * p + y1)), 0), h)
                    h1 = min(max(int(np.ceil(rh / ph * (p + 1) + y1)), 0), h)
                    w0 = min(max(int(np.floor(rw / pw * q + x1)), 0), w)
                    w1 = min(max(int(np.ceil(rw / pw * (q + 1) + x1)), 0), w)
                    if h1 > h0 and w1 > w0:
                        out[r, ch, p, q] = x[image, (ch * ph + p) * pw + q, h0:h1,
                                             w0:w1].mean()
    return {"Out": out.astype(i["X"].dtype)}


def ref_prroi_pool(i, a):
    """Numerical integration of the bilinear surface (zero outside the map) over each bin."""
    x, rois = i["X"].astype(np.float64), i["ROIs"]
    c, h, w = x.shape[1:]
    ph, pw, scale = a["pooled_height"], a["pooled_width"], a.get("spatial_scale", 1.0)
    steps = 400
    out = np.zeros((len(rois), c, ph, pw))

    def hat(t):
        return np.maximum(0.0, 1 - np.abs(t))
    for r, image in enumerate(_roi_images(i, len(rois))):
        x1, y1, x2, y2 = (v * scale for v in rois[r])
        bh, bw = max(y2 - y1, 0) / ph, max(x2 - x1, 0) / pw
        for p in range(ph):
            for q in range(pw):
                if bh * bw == 0:
                    continue
                ys = y1 + bh * p + (np.arange(steps) + 0.5) * bh / steps
                xs = x1 + bw * q + (np.arange(steps) + 0.5) * bw / steps
                wy = hat(ys[:, None] - np.arange(h)[None, :]).mean(axis=0) * bh
                wx = hat(xs[:, None] - np.arange(w)[None, :]).mean(axis=0) * bw
                out[r, :, p, q] = np.einsum("h,chw,w->c", wy, x[image], wx) / (bh * bw)
    return {"Out": out.astype(i["X"].dtype)}


ROI_LOD = [[0, 2, 3]]
ROIS = np.array([[0.5, 1.0, 6.2, 5.1], [2.0, 0.0, 4.0, 7.5], [1.2, 2.3, 3.0, 3.1]],
                "float32")


def roi(op, name, x, attrs, ref, grad=False, extra=None, lod=True, **kw):
    inputs = {"X": x, "ROIs": ROIS}
    inputs.update(extra or {})
    return OpCase(op, inputs, attrs=attrs, ref=ref, grad=["X"] if grad else [], name=name,
                  lod={"ROIs": ROI_LOD} if lod else {}, grad_outputs=["Out"], **kw)


ROI_CASES = [
    roi("roi_pool", "lod", r(2, 3, 8, 8), {"pooled_height": 2, "pooled_width": 3,
                                           "spatial_scale": 1.0}, ref_roi_pool),
    roi("roi_pool", "scaled_rois_num", r(2, 2, 5, 6),
        {"pooled_height": 3, "pooled_width": 2, "spatial_scale": 0.5}, ref_roi_pool,
        extra={"RoisNum": np.array([1, 2], "int32")}, lod=False),
    roi("roi_pool", "grad", r(2, 1, 6, 6), {"pooled_height": 2, "pooled_width": 2,
                                            "spatial_scale": 0.7}, ref_roi_pool, grad=True),
    roi("roi_align", "lod", r(2, 3, 8, 8), {"pooled_height": 2, "pooled_width": 3,
                                            "spatial_scale": 1.0}, ref_roi_align),
    roi("roi_align", "ratio2_aligned", r(2, 2, 6, 7),
        {"pooled_height": 3, "pooled_width": 2, "spatial_scale": 0.6, "sampling_ratio": 2,
         "aligned": True}, ref_roi_align,
        extra={"RoisLod": np.array([0, 1, 3], "int64")}, lod=False),
    roi("roi_align", "grad", r(2, 2, 5, 5), {"pooled_height": 2, "pooled_width": 2,
                                             "spatial_scale": 0.8}, ref_roi_align, grad=True),
    roi("psroi_pool", "basic", r(2, 2 * 2 * 3, 7, 8),
        {"output_channels": 2, "pooled_height": 2, "pooled_width": 3, "spatial_scale": 0.9},
        ref_psroi_pool),
    roi("psroi_pool", "grad", r(2, 1 * 2 * 2, 5, 5),
        {"output_channels": 1, "pooled_height": 2, "pooled_width": 2, "spatial_scale": 0.8},
        ref_psroi_pool, grad=True),
    roi("prroi_pool", "basic", r(2, 2, 6, 8),
        {"pooled_height": 2, "pooled_width": 3, "spatial_scale": 0.9}, ref_prroi_pool,
        atol=1e-4, rtol=1e-3),
    roi("prroi_pool", "batch_roi_nums", r(2, 1, 5, 5),
        {"pooled_height": 2, "pooled_width": 2, "spatial_scale": 1.0}, ref_prroi_pool,
        extra={"BatchRoINums": np.array([2, 1], "int64")}, lod=False, atol=1e-4, rtol=1e-3),
    roi("prroi_pool", "grad", r(2, 1, 5, 5),
        {"pooled_height": 2, "pooled_width": 2, "spatial_scale": 0.8}, None, grad=True),
]

CASES = CASES + ROI_CASES
(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


# --- rearrangements: element-by-element references ----------------------------------------------
def ref_maxout(i, a):
    x, g = i["X"], a["groups"]
    axis = a.get("axis", 1) % 4
    xc = np.moveaxis(x, axis, 1)
    n, c, h, w = xc.shape
    out = np.zeros((n, c // g, h, w), x.dtype)
    for ch in range(c // g):
        out[:, ch] = xc[:, ch * g:(ch + 1) * g].max(axis=1)
    return {"Out": np.moveaxis(out, 1, axis)}


def ref_space_to_depth(i, a):
    x, bs = i["X"], a["blocksize"]
    b, c, h, w = x.shape
    out_c = c // (bs * bs)
    flat = np.zeros(x.size, x.dtype)
    for bi, k, j, ii in itertools.product(range(b), range(c), range(h), range(w)):
        c2, off = k % out_c, k // out_c
        w2, h2 = ii * bs + off % bs, j * bs + off // bs
        flat[w2 + w * bs * (h2 + h * bs * (c2 + out_c * bi))] = x[bi, k, j, ii]
    return {"Out": flat.reshape(b, c * bs * bs, h // bs, w // bs)}


def ref_pixel_shuffle(i, a):
    x, r = i["X"], a["upscale_factor"]
    last = a.get("data_format") == "NHWC"
    xc = np.moveaxis(x, -1, 1) if last else x
    n, c, h, w = xc.shape
    out = np.zeros((n, c // (r * r), h * r, w * r), x.dtype)
    for ch, hh, ww, p, q in itertools.product(range(c // (r * r)), range(h), range(w),
                                              range(r), range(r)):
        out[:, ch, hh * r + p, ww * r + q] = xc[:, ch * r * r + p * r + q, hh, ww]
    return {"Out": np.moveaxis(out, 1, -1) if last else out}


def ref_shuffle_channel(i, a):
    x, g = i["X"], a["group"]
    c = x.shape[1]
    out = np.empty_like(x)
    for gi in range(g):
        for j in range(c // g):
            out[:, j * g + gi] = x[:, gi * (c // g) + j]
    return {"Out": out}


def ref_temporal_shift(i, a):
    x, t, ratio = i["X"], a["seg_num"], a.get("shift_ratio", 0.25)
    nt, c = x.shape[:2]
    c1, c2 = int(c * ratio), int(c * 2 * ratio)
    out = np.zeros_like(x)
    for row in range(nt):
        n, it = divmod(row, t)
        for ch in range(c):
            src = it - 1 if ch < c1 else (it + 1 if ch < c2 else it)
            if 0 <= src < t:
                out[row, ch] = x[n * t + src, ch]
    return {"Out": out}


def ref_affine_channel(i, a):
    x = i["X"]
    shape = [1] * x.ndim
    shape[-1 if a.get("data_layout") == "NHWC" else 1] = -1
    return {"Out": x * i["Scale"].reshape(shape) + i["Bias"].reshape(shape)}


def ref_unfold(i, a):
    x = i["X"].astype(np.float64)
    kh, kw = a["kernel_sizes"]
    sh, sw = a.get("strides", [1, 1])
    dh, dw = a.get("dilations", [1, 1])
    top, left, bottom, right = a.get("paddings", [0, 0, 0, 0])
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    n, c = x.shape[:2]
    oh = (xp.shape[2] - (dh * (kh - 1) + 1)) // sh + 1
    ow = (xp.shape[3] - (dw * (kw - 1) + 1)) // sw + 1
    out = np.zeros((n, c * kh * kw, oh * ow))
    for y, z in itertools.product(range(oh), range(ow)):
        patch = xp[:, :, y * sh:y * sh + dh * (kh - 1) + 1:dh, z * sw:z * sw + dw * (kw - 1) + 1:dw]
        out[:, :, y * ow + z] = patch.reshape(n, -1)
    return {"Y": out.astype(i["X"].dtype)}


def ref_fsp(i, a):
    x, y = i["X"], i["Y"]
    hw = x.shape[2] * x.shape[3]
    return {"Out": np.einsum("nihw,njhw->nij", x, y) / hw}


def ref_btp(i, a):
    out = np.stack([np.einsum("nm,mk,nk->n", i["X"], w, i["Y"]) for w in i["Weight"]], 1)
    if "Bias" in i:
        out = out + i["Bias"]
    return {"Out": out.astype(i["X"].dtype)}


def ref_position_encoding(i, a):
    x = i["X"].astype(np.float64)
    alpha, beta = a.get("alpha", 1.0), a.get("beta", 1.0)
    half = x.shape[-1] // 2
    out = np.zeros_like(x)
    lod = ROI_LOD_PE if x.ndim == 2 else None
    rows = ([(r, r - s) for s, e in zip(lod[:-1], lod[1:]) for r in range(s, e)]
            if lod else None)
    for idx in np.ndindex(x.shape[:-1]):
        j = rows[idx[0]][1] if rows else idx[1]
        for k in range(half):
            val = j / 10000.0 ** (k / (half - 1)) if half > 1 else j / 10000.0
            out[idx + (k,)] = x[idx + (k,)] * alpha + np.sin(val) * beta
            out[idx + (half + k,)] = x[idx + (half + k,)] * alpha + np.cos(val) * beta
    return {"Out": out.astype(i["X"].dtype)}


ROI_LOD_PE = [0, 2, 5]


def op(name_op, name, inputs, attrs, ref, grad=(), **kw):
    return OpCase(name_op, inputs, attrs=attrs, ref=ref, grad=list(grad), name=name, **kw)


def distinct(*shape):
    """Values far apart, so a max has one clear winner under finite differences."""
    return (rng.permutation(int(np.prod(shape))).reshape(shape) * 0.1).astype("float32")


REARRANGE_CASES = [
    op("maxout", "axis1", {"X": r(2, 6, 3, 2)}, {"groups": 3}, ref_maxout),
    op("maxout", "axis3", {"X": r(2, 3, 2, 4)}, {"groups": 2, "axis": 3}, ref_maxout),
    op("maxout", "grad", {"X": distinct(1, 4, 2, 2)}, {"groups": 2}, ref_maxout, ["X"]),
    op("space_to_depth", "bs2", {"X": r(2, 8, 4, 6)}, {"blocksize": 2}, ref_space_to_depth),
    op("space_to_depth", "grad", {"X": r(1, 4, 2, 2)}, {"blocksize": 2}, ref_space_to_depth,
       ["X"]),
    op("pixel_shuffle", "r2", {"X": r(2, 8, 3, 2)}, {"upscale_factor": 2}, ref_pixel_shuffle),
    op("pixel_shuffle", "nhwc", {"X": r(1, 2, 3, 9)},
       {"upscale_factor": 3, "data_format": "NHWC"}, ref_pixel_shuffle),
    op("pixel_shuffle", "grad", {"X": r(1, 4, 2, 2)}, {"upscale_factor": 2},
       ref_pixel_shuffle, ["X"]),
    op("shuffle_channel", "g3", {"X": r(2, 6, 2, 3)}, {"group": 3}, ref_shuffle_channel),
    op("shuffle_channel", "grad", {"X": r(1, 4, 2, 2)}, {"group": 2}, ref_shuffle_channel,
       ["X"]),
    op("temporal_shift", "t3", {"X": r(6, 8, 2, 2)}, {"seg_num": 3, "shift_ratio": 0.25},
       ref_temporal_shift),
    op("temporal_shift", "grad", {"X": r(4, 4, 2, 1)}, {"seg_num": 2, "shift_ratio": 0.3},
       ref_temporal_shift, ["X"]),
    op("affine_channel", "nchw", {"X": r(2, 3, 2, 2), "Scale": r(3), "Bias": r(3)},
       {"data_layout": "NCHW"}, ref_affine_channel),
    op("affine_channel", "grad_nhwc", {"X": r(2, 2, 2, 3), "Scale": r(3), "Bias": r(3)},
       {"data_layout": "NHWC"}, ref_affine_channel, ["X", "Scale", "Bias"]),
    op("unfold", "basic", {"X": r(2, 3, 5, 4)},
       {"kernel_sizes": [2, 3], "strides": [1, 1], "paddings": [0, 1, 1, 0],
        "dilations": [1, 1]}, ref_unfold),
    op("unfold", "strided_dilated", {"X": r(1, 2, 7, 7)},
       {"kernel_sizes": [3, 2], "strides": [2, 3], "paddings": [1, 1, 1, 1],
        "dilations": [2, 1]}, ref_unfold),
    op("unfold", "grad", {"X": r(1, 2, 4, 4)},
       {"kernel_sizes": [2, 2], "strides": [2, 1], "paddings": [1, 0, 0, 1],
        "dilations": [1, 1]}, ref_unfold, ["X"]),
    op("fsp", "basic", {"X": r(2, 3, 4, 5), "Y": r(2, 2, 4, 5)}, {}, ref_fsp),
    op("fsp", "grad", {"X": r(1, 2, 2, 3), "Y": r(1, 3, 2, 3)}, {}, ref_fsp, ["X", "Y"]),
    op("bilinear_tensor_product", "bias", {"X": r(3, 4), "Y": r(3, 2), "Weight": r(5, 4, 2),
                                           "Bias": r(1, 5)}, {}, ref_btp),
    op("bilinear_tensor_product", "grad", {"X": r(2, 3), "Y": r(2, 2), "Weight": r(2, 3, 2),
                                           "Bias": r(1, 2)}, {}, ref_btp,
       ["X", "Y", "Weight", "Bias"]),
    op("add_position_encoding", "padded", {"X": r(2, 4, 6)}, {"alpha": 0.5, "beta": 2.0},
       ref_position_encoding),
    op("add_position_encoding", "lod", {"X": r(5, 4)}, {"alpha": 1.0, "beta": 0.5},
       ref_position_encoding, lod={"X": [ROI_LOD_PE]}),
    op("add_position_encoding", "grad", {"X": r(1, 3, 2)}, {"alpha": 0.7, "beta": 1.0},
       ref_position_encoding, ["X"]),
]

CASES = CASES + REARRANGE_CASES


# --- sampling ops: per-pixel references -----------------------------------------------------------
def ref_affine_grid(i, a):
    theta = i["Theta"]
    n, _, h, w = a["output_shape"]
    align = a.get("align_corners", True)

    def lin(size):
        p = np.linspace(-1, 1, size)
        return p if align else p * (size - 1) / size
    out = np.zeros((theta.shape[0], h, w, 2))
    for b, y, x in itertools.product(range(theta.shape[0]), range(h), range(w)):
        out[b, y, x] = theta[b] @ np.array([lin(w)[x], lin(h)[y], 1.0])
    return {"Output": out.astype(theta.dtype)}


def ref_grid_sampler(i, a):
    x, grid = i["X"].astype(np.float64), i["Grid"]
    n, c, h, w = x.shape
    align = a.get("align_corners", True)
    border = a.get("padding_mode", "zeros") == "border"
    out = np.zeros((n, c) + grid.shape[1:3])

    def at(b, yy, xx):
        if 0 <= yy < h and 0 <= xx < w:
            return x[b, :, yy, xx]
        return np.zeros(c)
    for b, p, q in itertools.product(range(n), range(grid.shape[1]), range(grid.shape[2])):
        gx, gy = grid[b, p, q]
        px = (gx + 1) * (w - 1) / 2 if align else ((gx + 1) * w - 1) / 2
        py = (gy + 1) * (h - 1) / 2 if align else ((gy + 1) * h - 1) / 2
        if border:
            px, py = min(max(px, 0), w - 1), min(max(py, 0), h - 1)
        if a.get("mode", "bilinear") == "nearest":
            out[b, :, p, q] = at(b, int(np.rint(py)), int(np.rint(px)))
            continue
        x0, y0 = int(np.floor(px)), int(np.floor(py))
        fx, fy = px - x0, py - y0
        out[b, :, p, q] = ((1 - fx) * (1 - fy) * at(b, y0, x0) + fx * (1 - fy) * at(b, y0, x0 + 1)
                           + (1 - fx) * fy * at(b, y0 + 1, x0) + fx * fy * at(b, y0 + 1, x0 + 1))
    return {"Output": out.astype(i["X"].dtype)}


def ref_im2sequence(i, a):
    x = i["X"]
    up, left, down, right = a["paddings"]
    cols = ref_unfold({"X": x}, {"kernel_sizes": a["kernels"], "strides": a["strides"],
                                 "paddings": [up, left, down, right]})["Y"]
    n, blocks = x.shape[0], cols.shape[2]
    rows = cols.transpose(0, 2, 1).reshape(n * blocks, -1)
    return {"Out": (rows, [[k * blocks for k in range(n + 1)]])}


def ref_im2sequence_real_sizes(i, a):
    """Image k's grid from its real size ceil(Y[k] / out_stride): the first oh x ow
    patches of the zero-padded image, read one by one."""
    x, sizes = i["X"], i["Y"]
    (kh, kw), (sh, sw) = a["kernels"], a["strides"]
    up, left, down, right = a["paddings"]
    rows, lod = [], [0]
    for image, (h, w) in zip(x, sizes):
        oh = (int(np.ceil(h / a["out_stride"][0])) + up + down - kh) // sh + 1
        ow = (int(np.ceil(w / a["out_stride"][1])) + left + right - kw) // sw + 1
        big = np.zeros((x.shape[1], 20, 20), x.dtype)
        big[:, up:up + x.shape[2], left:left + x.shape[3]] = image
        for r in range(oh):
            for c in range(ow):
                rows.append(big[:, r * sh:r * sh + kh, c * sw:c * sw + kw].reshape(-1))
        lod.append(lod[-1] + oh * ow)
    return {"Out": (np.array(rows), [lod])}


SEQ_LOD = [0, 3, 4, 7]


def ref_row_conv(i, a):
    x, f = i["X"].astype(np.float64), i["Filter"]
    out = np.zeros_like(x)
    if x.ndim == 3:
        for t in range(x.shape[1]):
            for k in range(f.shape[0]):
                if t + k < x.shape[1]:
                    out[:, t] += x[:, t + k] * f[k]
    else:
        for s, e in zip(SEQ_LOD[:-1], SEQ_LOD[1:]):
            for t in range(s, e):
                for k in range(f.shape[0]):
                    if t + k < e:
                        out[t] += x[t + k] * f[k]
    return {"Out": out.astype(i["X"].dtype)}


def ref_spectral_norm(i, a):
    w = i["Weight"].astype(np.float64)
    dim, eps = a.get("dim", 0), a.get("eps", 1e-12)
    mat = np.moveaxis(w, dim, 0).reshape(w.shape[dim], -1)
    u, v = i["U"].astype(np.float64), i["V"].astype(np.float64)
    for _ in range(a.get("power_iters", 1)):
        v = mat.T @ u
        v = v / (np.linalg.norm(v) + eps)
        u = mat @ v
        u = u / (np.linalg.norm(u) + eps)
    return {"Out": (w / (u @ mat @ v)).astype(i["Weight"].dtype)}


def ref_similarity_focus(i, a):
    x, axis = i["X"], a["axis"]
    moved = np.moveaxis(x, axis, 1)
    n, _, p, q = moved.shape
    mask = np.zeros((n, p, q))
    for b in range(n):
        for index in a["indexes"]:
            table = moved[b, index]
            order = np.argsort(-table, axis=None, kind="stable")
            rows, cols = set(), set()
            for flat in order:
                rr, cc = divmod(int(flat), q)
                if rr in rows or cc in cols:
                    continue
                rows.add(rr)
                cols.add(cc)
                mask[b, rr, cc] = 1
                if len(rows) == min(p, q):
                    break
    out = np.broadcast_to(mask[:, None], moved.shape)
    return {"Out": np.moveaxis(out, 1, axis).astype(x.dtype)}


def check_random_crop(result, inputs, attrs):
    out = np.asarray(result["Out"])
    x = inputs["X"]
    shape = attrs["shape"]
    assert out.shape == x.shape[:x.ndim - len(shape)] + tuple(shape)
    for row, crop in zip(x.reshape(-1, *x.shape[-2:]), out.reshape(-1, *shape)):
        found = any(np.array_equal(row[p:p + shape[0], q:q + shape[1]], crop)
                    for p in range(row.shape[0] - shape[0] + 1)
                    for q in range(row.shape[1] - shape[1] + 1))
        assert found, "each crop is a window of its own instance"
    assert np.asarray(result["SeedOut"]).dtype == np.int64


def _theta():
    return np.array([[[0.9, 0.2, 0.1], [-0.1, 1.1, 0.05]],
                     [[1.0, -0.3, 0.0], [0.2, 0.8, -0.1]]], "float32")


def _grid(n, h, w, spread=1.2):
    return rng.uniform(-spread, spread, (n, h, w, 2)).astype("float32")


SAMPLING_CASES = [
    op("affine_grid", "aligned", {"Theta": _theta()}, {"output_shape": [2, 1, 3, 4]},
       ref_affine_grid),
    op("affine_grid", "not_aligned", {"Theta": _theta()},
       {"output_shape": [2, 1, 4, 2], "align_corners": False}, ref_affine_grid),
    op("affine_grid", "output_shape_tensor", {"Theta": _theta(),
                                              "OutputShape": np.array([2, 1, 3, 3], "int32")},
       {}, lambda i, a: ref_affine_grid(i, {"output_shape": [2, 1, 3, 3]})),
    op("affine_grid", "grad", {"Theta": _theta()}, {"output_shape": [2, 1, 2, 3]},
       ref_affine_grid, ["Theta"]),
    op("grid_sampler", "aligned_zeros", {"X": r(2, 3, 4, 5), "Grid": _grid(2, 3, 2)}, {},
       ref_grid_sampler),
    op("grid_sampler", "not_aligned_border", {"X": r(1, 2, 3, 4), "Grid": _grid(1, 2, 3)},
       {"align_corners": False, "padding_mode": "border"}, ref_grid_sampler),
    op("grid_sampler", "nearest", {"X": r(1, 2, 3, 4), "Grid": _grid(1, 2, 2, 0.9)},
       {"mode": "nearest"}, ref_grid_sampler),
    op("grid_sampler", "grad", {"X": r(1, 2, 3, 3), "Grid": _grid(1, 2, 2, 1.1)}, {},
       ref_grid_sampler, ["X", "Grid"]),
    op("im2sequence", "basic", {"X": r(2, 2, 4, 5)},
       {"kernels": [2, 3], "strides": [2, 1], "paddings": [1, 0, 0, 1]}, ref_im2sequence),
    op("im2sequence", "real_sizes", {"X": r(3, 2, 4, 5),
                                     "Y": np.array([[8, 10], [5, 8], [3, 3]], "float32")},
       {"kernels": [2, 2], "strides": [2, 1], "paddings": [1, 1, 1, 1],
        "out_stride": [2, 2]}, ref_im2sequence_real_sizes),
    op("im2sequence", "grad", {"X": r(1, 2, 3, 3)},
       {"kernels": [2, 2], "strides": [1, 1], "paddings": [0, 1, 1, 0]}, ref_im2sequence,
       ["X"]),
    op("row_conv", "lod", {"X": r(7, 3), "Filter": r(3, 3)}, {}, ref_row_conv,
       lod={"X": [SEQ_LOD]}),
    op("row_conv", "padded", {"X": r(2, 4, 3), "Filter": r(2, 3)}, {}, ref_row_conv),
    op("row_conv", "grad", {"X": r(7, 2), "Filter": r(3, 2)}, {}, ref_row_conv,
       ["X", "Filter"], lod={"X": [SEQ_LOD]}),
    op("spectral_norm", "dim0", {"Weight": r(3, 4), "U": r(3), "V": r(4)},
       {"dim": 0, "power_iters": 2}, ref_spectral_norm),
    op("spectral_norm", "dim1_4d", {"Weight": r(2, 3, 2, 2), "U": r(3), "V": r(8)},
       {"dim": 1, "power_iters": 3, "eps": 1e-10}, ref_spectral_norm),
    op("spectral_norm", "grad_fixed_uv", {"Weight": r(3, 2), "U": r(3), "V": r(2)},
       {"dim": 0, "power_iters": 0}, ref_spectral_norm, ["Weight"]),
    op("similarity_focus", "axis1", {"X": r(2, 3, 3, 4)}, {"axis": 1, "indexes": [0, 2]},
       ref_similarity_focus),
    op("similarity_focus", "axis3", {"X": r(1, 4, 3, 2)}, {"axis": 3, "indexes": [1]},
       ref_similarity_focus),
    OpCase("random_crop", {"X": r(2, 3, 5, 6), "Seed": np.array([7], "int64")},
           attrs={"shape": [3, 4]}, check=check_random_crop, name="seeded",
           outputs={"Out": 1, "SeedOut": 1}),
]

CASES = CASES + SAMPLING_CASES


# --- deformable convolution: Paddle's per-sample loops ---------------------------------------------
def _dmcn_bilinear(img, y, x):
    h, w = img.shape
    if not (y > -1 and x > -1 and y < h and x < w):
        return 0.0
    y0, x0 = int(np.floor(y)), int(np.floor(x))
    ly, lx = y - y0, x - x0
    total = 0.0
    for yy, wy in ((y0, 1 - ly), (y0 + 1, ly)):
        for xx, wx in ((x0, 1 - lx), (x0 + 1, lx)):
            if 0 <= yy < h and 0 <= xx < w:
                total += wy * wx * img[yy, xx]
    return total


def ref_deformable_conv(i, a):
    x, off, w = i["Input"].astype(np.float64), i["Offset"], i["Filter"]
    mask = i.get("Mask")
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    sh, sw = a.get("strides", [1, 1])
    ph, pw = a.get("paddings", [0, 0])
    dh, dw = a.get("dilations", [1, 1])
    groups, dg = a.get("groups", 1), a.get("deformable_groups", 1)
    oh = (h + 2 * ph - (dh * (kh - 1) + 1)) // sh + 1
    ow = (wd + 2 * pw - (dw * (kw - 1) + 1)) // sw + 1
    cols = np.zeros((n, c, kh, kw, oh, ow))
    for b, ch, p, q, yi, xi in itertools.product(range(n), range(c), range(kh), range(kw),
                                                 range(oh), range(ow)):
        d = ch // (c // dg)
        tap = p * kw + q
        dy = off[b, d * 2 * kh * kw + 2 * tap, yi, xi]
        dx = off[b, d * 2 * kh * kw + 2 * tap + 1, yi, xi]
        val = _dmcn_bilinear(x[b, ch], yi * sh - ph + p * dh + dy, xi * sw - pw + q * dw + dx)
        if mask is not None:
            val *= mask[b, d * kh * kw + tap, yi, xi]
        cols[b, ch, p, q, yi, xi] = val
    out = np.zeros((n, m, oh, ow))
    for o in range(m):
        g = o // (m // groups)
        out[:, o] = np.einsum("ncpqij,cpq->nij", cols[:, g * cg:(g + 1) * cg], w[o])
    return {"Output": out.astype(i["Input"].dtype)}


def _deform_inputs(n, c, h, w, m, groups, dg, k, oh, ow, with_mask=True, spread=1.5):
    inputs = {"Input": r(n, c, h, w),
              "Offset": rng.uniform(-spread, spread, (n, 2 * dg * k * k, oh, ow)).astype(
                  "float32"),
              "Filter": r(m, c // groups, k, k)}
    if with_mask:
        inputs["Mask"] = rng.uniform(0, 1, (n, dg * k * k, oh, ow)).astype("float32")
    return inputs


DEFORMABLE_CASES = [
    op("deformable_conv", "basic", _deform_inputs(2, 2, 5, 5, 3, 1, 1, 3, 5, 5),
       {"paddings": [1, 1]}, ref_deformable_conv),
    op("deformable_conv", "groups_dg2_strided", _deform_inputs(1, 4, 6, 5, 4, 2, 2, 2, 3, 2),
       {"strides": [2, 2], "paddings": [0, 0], "groups": 2, "deformable_groups": 2},
       ref_deformable_conv),
    op("deformable_conv_v1", "dilated", _deform_inputs(1, 2, 6, 6, 2, 1, 1, 2, 4, 4, False),
       {"dilations": [2, 2], "paddings": [0, 0]}, ref_deformable_conv),
    op("deformable_conv", "grad", _deform_inputs(1, 2, 4, 4, 2, 1, 2, 2, 3, 3, spread=0.7),
       {"deformable_groups": 2}, ref_deformable_conv, ["Input", "Offset", "Filter", "Mask"],
       grad_atol=1e-5, grad_rtol=1e-3),
    op("deformable_conv_v1", "grad", _deform_inputs(1, 1, 4, 3, 2, 1, 1, 2, 5, 4, False, 0.6),
       {"paddings": [1, 1], "strides": [1, 1]}, ref_deformable_conv,
       ["Input", "Offset", "Filter"], grad_atol=1e-5, grad_rtol=1e-3),
]



def ref_deformable_psroi(i, a):
    x, rois, trans = i["Input"].astype(np.float64), i["ROIs"], i.get("Trans")
    n, c, h, w = x.shape
    oc, ph, pw = a["output_dim"], a["pooled_height"], a["pooled_width"]
    gh, gw = a.get("group_size", [1, 1])
    part_h, part_w = a.get("part_size") or [ph, pw]
    spp, scale, std = a.get("sample_per_part", 1), a.get("spatial_scale", 1.0), a["trans_std"]
    no_trans = a.get("no_trans", False) or trans is None
    classes = 1 if no_trans else trans.shape[1] // 2
    out = np.zeros((len(rois), oc, ph, pw))
    count = np.zeros(out.shape, dtype=np.int32)
    for r_, image in enumerate(_roi_images(i, len(rois))):
        sw_ = _c_round(rois[r_][0]) * scale - 0.5
        sh_ = _c_round(rois[r_][1]) * scale - 0.5
        rw = max((_c_round(rois[r_][2]) + 1) * scale - 0.5 - sw_, 0.1)
        rh = max((_c_round(rois[r_][3]) + 1) * scale - 0.5 - sh_, 0.1)
        bh, bw = rh / ph, rw / pw
        for ct, p, q in itertools.product(range(oc), range(ph), range(pw)):
            parth, partw = int(np.floor(p / ph * part_h)), int(np.floor(q / pw * part_w))
            cls = ct // (oc // classes)
            tx = 0.0 if no_trans else trans[r_, 2 * cls, parth, partw] * std
            ty = 0.0 if no_trans else trans[r_, 2 * cls + 1, parth, partw] * std
            ws, hs = q * bw + sw_ + tx * rw, p * bh + sh_ + ty * rh
            g_h = min(max(int(np.floor(p * gh / ph)), 0), gh - 1)
            g_w = min(max(int(np.floor(q * gw / pw)), 0), gw - 1)
            ch = (ct * gh + g_h) * gw + g_w
            total, k = 0.0, 0
            for ih, iw in itertools.product(range(spp), range(spp)):
                xx, yy = ws + iw * bw / spp, hs + ih * bh / spp
                if xx < -0.5 or xx > w - 0.5 or yy < -0.5 or yy > h - 0.5:
                    continue
                xx, yy = min(max(xx, 0), w - 1), min(max(yy, 0), h - 1)
                x1, y1 = int(np.floor(xx)), int(np.floor(yy))
                x2, y2 = int(np.ceil(xx)), int(np.ceil(yy))
                dx, dy = xx - x1, yy - y1
                img = x[image, ch]
                total += ((1 - dx) * (1 - dy) * img[y1, x1] + (1 - dx) * dy * img[y2, x1]
                          + dx * (1 - dy) * img[y1, x2] + dx * dy * img[y2, x2])
                k += 1
            out[r_, ct, p, q] = total / k if k else 0.0
            count[r_, ct, p, q] = k
    return {"Output": out.astype(i["Input"].dtype), "TopCount": count}


DPS_ROIS = np.array([[1.0, 1.0, 5.0, 4.0], [0.0, 2.0, 3.0, 6.0], [2.0, 0.0, 6.0, 5.0]],
                    "float32")


def dpsroi(name, x, attrs, trans=None, grad=(), **kw):
    inputs = {"Input": x, "ROIs": DPS_ROIS}
    if trans is not None:
        inputs["Trans"] = trans
    return OpCase("deformable_psroi_pooling", inputs, attrs=attrs, ref=ref_deformable_psroi,
                  grad=list(grad), name=name, lod={"ROIs": ROI_LOD}, grad_outputs=["Output"],
                  outputs={"Output": 1, "TopCount": 1}, **kw)


DEFORMABLE_CASES += [
    dpsroi("no_trans", r(2, 3, 7, 8),
           {"no_trans": True, "output_dim": 3, "pooled_height": 2, "pooled_width": 2,
            "sample_per_part": 2, "trans_std": 0.1, "spatial_scale": 1.0}),
    dpsroi("trans_position_sensitive", r(2, 2 * 2 * 2, 7, 8),
           {"output_dim": 2, "group_size": [2, 2], "pooled_height": 2, "pooled_width": 2,
            "part_size": [2, 2], "sample_per_part": 3, "trans_std": 0.2,
            "spatial_scale": 0.8},
           trans=rng.uniform(-0.5, 0.5, (3, 2, 2, 2)).astype("float32")),
    dpsroi("grad", r(2, 2, 7, 8),
           {"output_dim": 2, "pooled_height": 2, "pooled_width": 2, "sample_per_part": 2,
            "trans_std": 0.1, "spatial_scale": 0.9},
           trans=rng.uniform(-0.3, 0.3, (3, 4, 2, 2)).astype("float32"),
           grad=["Input", "Trans"], grad_atol=1e-5, grad_rtol=1e-3),
]

CASES = CASES + DEFORMABLE_CASES
(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)
