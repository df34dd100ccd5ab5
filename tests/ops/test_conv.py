"""conv2d, depthwise_conv2d and pool2d against direct-loop NumPy references, with float64
finite-difference gradients."""
import numpy as np
import pytest


from .op_test import OpCase, assert_build_fails, build, check_output, table_tests

rng = np.random.RandomState(0)


def r(*shape, dtype="float32"):
    return rng.uniform(-1, 1, shape).astype(dtype)


# --- references: one output element at a time, straight from the definitions ------------
def _pads4(p):
    return list(p) if len(p) == 4 else [p[0], p[0], p[1], p[1]]


def _same_pads(size, k, s):
    out = -(-size // s)
    total = max((out - 1) * s + k - size, 0)
    return [total // 2, total - total // 2]


def ref_conv(i, a):
    x, w = i["Input"], i["Filter"]
    nhwc = a.get("data_format") == "NHWC"
    if nhwc:
        x = x.transpose(0, 3, 1, 2)
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    sh, sw = a.get("strides", [1, 1])
    dh, dw = a.get("dilations", [1, 1])
    algo = a.get("padding_algorithm", "EXPLICIT")
    if algo == "SAME":
        pads = _same_pads(h, kh, sh) + _same_pads(wd, kw, sw)
        dh = dw = 1
    elif algo == "VALID":
        pads = [0, 0, 0, 0]
    else:
        pads = _pads4(a.get("paddings", [0, 0]))
    groups = a.get("groups", 1)
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pads[0], pads[1]), (pads[2], pads[3])))
    oh = (h + pads[0] + pads[1] - (dh * (kh - 1) + 1)) // sh + 1
    ow = (wd + pads[2] + pads[3] - (dw * (kw - 1) + 1)) // sw + 1
    out = np.zeros((n, m, oh, ow))
    per_group = m // groups
    for b in range(n):
        for o in range(m):
            g = o // per_group
            for y in range(oh):
                for z in range(ow):
                    patch = xp[b, g * cg:(g + 1) * cg,
                               y * sh:y * sh + dh * (kh - 1) + 1:dh,
                               z * sw:z * sw + dw * (kw - 1) + 1:dw]
                    out[b, o, y, z] = (patch * w[o]).sum()
    if "Bias" in i:
        out += i["Bias"].reshape(1, m, 1, 1)
    if nhwc:
        out = out.transpose(0, 2, 3, 1)
    if "ResidualData" in i:
        out += i["ResidualData"]
    return {"Output": out.astype(i["Input"].dtype)}


def ref_pool(i, a):
    """Paddle's Pool2dFunctor: windows start at k*stride - pad_before and are clipped; avg
    divides by the clipped size (exclusive) or the whole kh x kw window."""
    x = i["X"]
    nhwc = a.get("data_format") == "NHWC"
    if nhwc:
        x = x.transpose(0, 3, 1, 2)
    n, c, h, w = x.shape
    kh, kw = a["ksize"]
    sh, sw = a.get("strides", [1, 1])
    algo = a.get("padding_algorithm", "EXPLICIT")
    if a.get("global_pooling"):
        kh, kw = h, w
    if algo == "SAME":
        pads = _same_pads(h, kh, sh) + _same_pads(w, kw, sw)
    elif algo == "VALID" or a.get("global_pooling") or a.get("adaptive"):
        pads = [0, 0, 0, 0]
    else:
        pads = _pads4(a.get("paddings", [0, 0]))
    # Paddle's pool2d kernels honour ``adaptive`` for avg only; max keeps kh x kw windows
    # (the output size still comes from ksize)
    adaptive = a.get("adaptive", False) and a["pooling_type"] == "avg"
    ceil = a.get("ceil_mode", False)
    if a.get("adaptive", False):
        oh, ow = kh, kw
    else:
        oh = (h - kh + pads[0] + pads[1] + (sh - 1 if ceil else 0)) // sh + 1
        ow = (w - kw + pads[2] + pads[3] + (sw - 1 if ceil else 0)) // sw + 1
    out = np.zeros((n, c, oh, ow))
    for y in range(oh):
        for z in range(ow):
            if adaptive:
                h0, h1 = y * h // oh, -(-(y + 1) * h // oh)
                w0, w1 = z * w // ow, -(-(z + 1) * w // ow)
                size = (h1 - h0) * (w1 - w0)
            else:
                h0, w0 = y * sh - pads[0], z * sw - pads[2]
                h1, w1 = h0 + kh, w0 + kw
                size = kh * kw
                h0, w0, h1, w1 = max(h0, 0), max(w0, 0), min(h1, h), min(w1, w)
                if a.get("exclusive", True):
                    size = (h1 - h0) * (w1 - w0)
            win = x[:, :, h0:h1, w0:w1].astype(np.float64)
            if a["pooling_type"] == "max":
                out[:, :, y, z] = win.max(axis=(2, 3))
            else:
                out[:, :, y, z] = win.sum(axis=(2, 3)) / size
    if nhwc:
        out = out.transpose(0, 2, 3, 1)
    return {"Out": out.astype(i["X"].dtype)}


def conv(op, name, inputs, attrs, grad=(), **kw):
    return OpCase(op, inputs, attrs=attrs, ref=ref_conv, grad=list(grad), name=name, **kw)


def pool(name, x, attrs, grad=False, **kw):
    return OpCase("pool2d", {"X": x}, attrs=attrs, ref=ref_pool, grad=["X"] if grad else [],
                  name=name, **kw)


CASES = [
    # conv2d
    conv("conv2d", "pad1", {"Input": r(2, 3, 5, 5), "Filter": r(4, 3, 3, 3)},
         {"strides": [1, 1], "paddings": [1, 1]}),
    conv("conv2d", "stride2_dilation2_pads4",
         {"Input": r(2, 3, 9, 8), "Filter": r(4, 3, 3, 2)},
         {"strides": [2, 1], "paddings": [1, 0, 2, 1], "dilations": [2, 2]}),
    conv("conv2d", "groups2", {"Input": r(2, 4, 5, 5), "Filter": r(6, 2, 3, 3)},
         {"groups": 2, "paddings": [1, 1]}),
    conv("conv2d", "nhwc", {"Input": r(2, 5, 6, 3), "Filter": r(4, 3, 3, 3)},
         {"data_format": "NHWC", "strides": [2, 2], "paddings": [1, 1]}),
    conv("conv2d", "same", {"Input": r(1, 2, 7, 6), "Filter": r(3, 2, 3, 2)},
         {"padding_algorithm": "SAME", "strides": [2, 2], "dilations": [3, 3]}),
    conv("conv2d", "valid", {"Input": r(1, 2, 6, 6), "Filter": r(3, 2, 3, 3)},
         {"padding_algorithm": "VALID", "paddings": [5, 5]}),
    conv("conv2d", "bias_residual", {"Input": r(1, 2, 4, 4), "Filter": r(3, 2, 3, 3),
                                     "Bias": r(3), "ResidualData": r(1, 3, 2, 2)}, {}),
    conv("conv2d", "grad", {"Input": r(1, 2, 4, 4), "Filter": r(2, 2, 3, 3)},
         {"paddings": [1, 1]}, grad=["Input", "Filter"]),
    conv("conv2d", "grad_strided", {"Input": r(1, 1, 5, 5), "Filter": r(2, 1, 2, 3)},
         {"strides": [2, 1], "paddings": [0, 1, 1, 0], "dilations": [2, 1]},
         grad=["Input", "Filter"]),
    conv("conv2d", "grad_groups_nhwc", {"Input": r(1, 3, 3, 4), "Filter": r(4, 2, 2, 2)},
         {"groups": 2, "data_format": "NHWC", "paddings": [1, 1], "strides": [2, 2]},
         grad=["Input", "Filter"]),
    conv("conv2d", "grad_bias", {"Input": r(1, 1, 3, 3), "Filter": r(2, 1, 2, 2),
                                 "Bias": r(2)}, {}, grad=["Input", "Filter", "Bias"]),
    # depthwise_conv2d
    conv("depthwise_conv2d", "c3", {"Input": r(2, 3, 6, 6), "Filter": r(3, 1, 3, 3)},
         {"groups": 3, "paddings": [1, 1], "strides": [2, 2]}),
    conv("depthwise_conv2d", "multiplier2", {"Input": r(1, 2, 5, 5), "Filter": r(4, 1, 3, 3)},
         {"groups": 2, "paddings": [1, 1]}),
    conv("depthwise_conv2d", "grad", {"Input": r(1, 2, 4, 4), "Filter": r(2, 1, 3, 3)},
         {"groups": 2, "paddings": [1, 1]}, grad=["Input", "Filter"]),
    # pool2d
    pool("max2x2", r(2, 3, 6, 6), {"pooling_type": "max", "ksize": [2, 2], "strides": [2, 2]}),
    pool("avg3x3_pad_exclusive", r(2, 2, 5, 5),
         {"pooling_type": "avg", "ksize": [3, 3], "strides": [1, 1], "paddings": [1, 1]}),
    pool("avg3x3_pad_inclusive", r(2, 2, 5, 5),
         {"pooling_type": "avg", "ksize": [3, 3], "strides": [2, 2], "paddings": [1, 1],
          "exclusive": False}),
    pool("avg_ceil_inclusive", r(1, 2, 6, 7),
         {"pooling_type": "avg", "ksize": [3, 3], "strides": [2, 2], "ceil_mode": True,
          "exclusive": False}),
    pool("max_ceil_pads4", r(1, 2, 7, 7),
         {"pooling_type": "max", "ksize": [3, 2], "strides": [2, 2], "ceil_mode": True,
          "paddings": [1, 0, 0, 1]}),
    pool("avg_pads4", r(1, 2, 6, 6),
         {"pooling_type": "avg", "ksize": [2, 3], "strides": [2, 2],
          "paddings": [0, 1, 2, 1], "exclusive": False}),
    pool("global_avg", r(2, 3, 4, 5),
         {"pooling_type": "avg", "ksize": [1, 1], "global_pooling": True}),
    pool("global_max_nhwc", r(2, 4, 5, 3),
         {"pooling_type": "max", "ksize": [1, 1], "global_pooling": True,
          "data_format": "NHWC"}),
    pool("adaptive_avg", r(2, 2, 5, 7),
         {"pooling_type": "avg", "ksize": [3, 2], "adaptive": True}),
    pool("adaptive_max_paddle_windows", r(2, 2, 7, 5),
         {"pooling_type": "max", "ksize": [3, 3], "adaptive": True}),
    pool("adaptive_max_strided", r(1, 2, 6, 6),
         {"pooling_type": "max", "ksize": [2, 2], "strides": [2, 2], "adaptive": True,
          "paddings": [1, 1]}),
    pool("same_nhwc", r(1, 5, 7, 2),
         {"pooling_type": "max", "ksize": [3, 3], "strides": [2, 2],
          "padding_algorithm": "SAME", "data_format": "NHWC"}),
    pool("grad_avg_exclusive", r(1, 2, 4, 4),
         {"pooling_type": "avg", "ksize": [3, 3], "strides": [1, 1], "paddings": [1, 1]},
         grad=True),
    pool("grad_avg_inclusive_ceil", r(1, 1, 5, 5),
         {"pooling_type": "avg", "ksize": [2, 2], "strides": [2, 2], "ceil_mode": True,
          "exclusive": False, "paddings": [1, 0, 0, 1]}, grad=True),
    pool("grad_max_overlapping", r(1, 2, 4, 4),
         {"pooling_type": "max", "ksize": [3, 3], "strides": [1, 1], "paddings": [1, 1]},
         grad=True),
    pool("grad_max_nhwc", r(1, 4, 4, 2),
         {"pooling_type": "max", "ksize": [2, 2], "strides": [2, 2], "data_format": "NHWC"},
         grad=True),
    pool("grad_adaptive_avg", r(1, 2, 5, 3),
         {"pooling_type": "avg", "ksize": [2, 2], "adaptive": True}, grad=True),
    pool("grad_adaptive_max", r(1, 2, 5, 3),
         {"pooling_type": "max", "ksize": [2, 2], "adaptive": True}, grad=True),
    pool("grad_global_avg", r(1, 2, 3, 3),
         {"pooling_type": "avg", "ksize": [1, 1], "global_pooling": True}, grad=True),
]


(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


def _run_grad(op, inputs, attrs, out_slot, in_slot, dout):
    """Run ``op`` and its grad ops with a given output gradient; return the input grad."""
    import fluid_nb as fluid
    from fluid_nb.ops import registry
    case = OpCase(op, inputs, attrs=attrs)
    program, fwd, feed, outputs = build(case)
    block = program.global_block()
    out_name = outputs[out_slot][0]
    block.create_var(name=out_name + "@GRAD", shape=dout.shape, dtype=dout.dtype)
    feed[out_name + "@GRAD"] = dout
    for spec in registry.make_grad_ops(fwd):
        for args in spec.outputs.values():
            for name in args:
                if not block.has_var(name):
                    src = block.var(name[:-len("@GRAD")])
                    block.create_var(name=name, shape=src.shape, dtype=src.dtype)
        block.append_op(type=spec.type, inputs=spec.inputs, outputs=spec.outputs,
                        attrs=spec.attrs)
    in_name = fwd.inputs[in_slot][0]
    exe = fluid.Executor(fluid.CPUPlace())
    return exe.run(program, feed=feed, fetch_list=[in_name + "@GRAD"], scope=fluid.Scope())[0]


def test_max_pool_grad_goes_to_first_maximum_only():
    x = np.ones((1, 1, 2, 2), dtype="float32")
    dx = _run_grad("pool2d", {"X": x}, {"pooling_type": "max", "ksize": [2, 2],
                                        "strides": [2, 2]},
                   "Out", "X", np.full((1, 1, 1, 1), 3.0, dtype="float32"))
    np.testing.assert_array_equal(dx, [[[[3.0, 0.0], [0.0, 0.0]]]])


def test_conv2d_larger_input_is_fast_enough():
    import time
    case = OpCase("conv2d", {"Input": r(8, 16, 32, 32), "Filter": r(32, 16, 3, 3)},
                  attrs={"paddings": [1, 1]})
    start = time.perf_counter()
    check_output(OpCase(**{**case.__dict__, "ref": None}))
    assert time.perf_counter() - start < 5.0


_fails = assert_build_fails


def test_conv2d_channel_mismatch_names_op():
    _fails("conv2d", {"Input": r(1, 3, 5, 5), "Filter": r(4, 2, 3, 3)}, {},
           "input channels", "groups")


def test_conv2d_bad_paddings_and_rank():
    _fails("conv2d", {"Input": r(1, 3, 5, 5), "Filter": r(4, 3, 3, 3)},
           {"paddings": [1, 1, 1]}, "paddings")
    _fails("conv2d", {"Input": r(3, 5, 5), "Filter": r(4, 3, 3, 3)}, {}, "Input", "4-D")
    _fails("conv2d", {"Input": r(1, 3, 2, 2), "Filter": r(4, 3, 3, 3)}, {}, "output size")


def test_conv2d_groups_must_divide_filters():
    _fails("conv2d", {"Input": r(1, 4, 5, 5), "Filter": r(3, 2, 3, 3)}, {"groups": 2},
           "multiple of groups")


def test_pool2d_bad_attrs_name_op():
    _fails("pool2d", {"X": r(1, 1, 4, 4)}, {"pooling_type": "min", "ksize": [2, 2]},
           "pooling_type")
    _fails("pool2d", {"X": r(1, 1, 4, 4)}, {"pooling_type": "max"}, "ksize")
    _fails("pool2d", {"X": r(1, 1, 4, 4)}, {"pooling_type": "max", "ksize": [5, 5]},
           "output size")
    _fails("pool2d", {"X": r(1, 1, 4, 4)},
           {"pooling_type": "max", "ksize": [2, 2], "padding_algorithm": "FULL"},
           "padding_algorithm")


def test_unknown_batch_dim_infers_minus_one():
    import fluid_nb as fluid
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="x", shape=(-1, 3, 8, 8), dtype="float32")
    block.create_var(name="w", shape=(4, 3, 3, 3), dtype="float32")
    block.append_op(type="conv2d", inputs={"Input": ["x"], "Filter": ["w"]},
                    outputs={"Output": ["y"]}, attrs={"strides": [2, 2], "paddings": [1, 1]})
    block.append_op(type="pool2d", inputs={"X": ["y"]}, outputs={"Out": ["z"]},
                    attrs={"pooling_type": "avg", "ksize": [2, 2], "strides": [2, 2]})
    assert block.var("y").shape == (-1, 4, 4, 4)
    assert block.var("z").shape == (-1, 4, 2, 2)


def test_paddle_cnn_inference_fixture_matches():
    """conv2d + batch_norm(is_test) + pool2d + softmax as saved by Paddle 2.6.2."""
    import os
    import fluid_nb as fluid
    load = getattr(getattr(fluid, "io", None), "load_inference_model", None)
    if load is None:
        pytest.skip("fluid_nb.api.io.load_inference_model is not available")
    here = os.path.join(os.path.dirname(__file__), "..", "fixtures", "paddle", "inference", "cnn")
    exe = fluid.Executor(fluid.CPUPlace())
    program, feeds, fetches = load(os.path.join(here, "combined"), exe,
                                   model_filename="model.pdmodel",
                                   params_filename="model.pdiparams")
    out = exe.run(program, feed={feeds[0]: np.load(os.path.join(here, "input.npy"))},
                  fetch_list=fetches)[0]
    np.testing.assert_allclose(out, np.load(os.path.join(here, "expected.npy")),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("data_format, padding", [
    ("NHWC", [[0, 0], [1, 1], [2, 2], [0, 0]]),
    ("NCHW", [[0, 0], [0, 0], [1, 1], [2, 2]]),
])
def test_pool2d_layer_reads_one_padding_pair_per_dim_of_its_layout(data_format, padding):
    """fluid.layers.pool2d's four-pair pool_padding names every dim of the data layout:
    for NHWC the pairs of H and W are the second and third (batch and channel pad 0)."""
    import fluid_nb as fluid
    x = r(2, 5, 6, 3) if data_format == "NHWC" else r(2, 3, 5, 6)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        data = fluid.layers.data(name="x", shape=list(x.shape), dtype="float32",
                                 append_batch_size=False)
        out = fluid.layers.pool2d(data, pool_size=3, pool_type="avg", pool_stride=1,
                                  pool_padding=padding, data_format=data_format)
    (got,) = fluid.Executor(fluid.CPUPlace()).run(main, feed={"x": x}, fetch_list=[out])
    want = ref_pool({"X": x}, {"pooling_type": "avg", "ksize": [3, 3], "strides": [1, 1],
                               "paddings": [1, 1, 2, 2], "data_format": data_format})["Out"]
    assert out.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("groups", [1, 2])
def test_conv2d_over_a_few_samples_at_a_time_equals_the_whole_batch(monkeypatch, groups):
    """With a small column budget conv2d and its gradient work a sample or two at a time;
    the output and both gradients match the reference and the whole-batch kernels."""
    from fluid_nb.ops import conv
    x, w = r(5, 4, 6, 6), r(6, 4 // groups, 3, 3)
    attrs = {"paddings": [1, 1], "groups": groups}
    dout = r(5, 6, 6, 6)

    def outputs():
        case = OpCase("conv2d", {"Input": x, "Filter": w}, attrs=attrs)
        check_output(OpCase(**{**case.__dict__, "ref": ref_conv}))
        return [_run_grad("conv2d", {"Input": x, "Filter": w}, attrs, "Output", slot, dout)
                for slot in ("Input", "Filter")]

    whole = outputs()
    per_sample = 4 * 9 * 36 * 4
    monkeypatch.setattr(conv, "COLUMNS_BUDGET", 2 * per_sample)  # two samples at a time
    assert conv._samples_per_step(x, conv.ConvGeometry("conv2d", {
        **{"strides": [1, 1], "dilations": [1, 1], "data_format": "NCHW",
           "padding_algorithm": "EXPLICIT"}, **attrs}, x.shape, w.shape)) == 2
    for got, want in zip(outputs(), whole):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("groups", [1, 2])
def test_conv2d_takes_the_whole_batch_in_one_product_per_group(monkeypatch, groups):
    """Forward, filter gradient and input gradient each multiply once per group over every
    sample that fits the column budget, not once per sample: each product meets BLAS's
    threads, and on a busy machine a meeting may wait for a thread the system put aside."""
    x, w = r(8, 4, 5, 5), r(6, 4 // groups, 3, 3)
    attrs = {"paddings": [1, 1], "groups": groups}
    calls = []
    real_matmul = np.matmul

    def counted(a, b, *args, **kwargs):
        calls.append((a.shape, b.shape))
        return real_matmul(a, b, *args, **kwargs)

    monkeypatch.setattr(np, "matmul", counted)
    out = build_and_run_conv(x, w, attrs)
    assert len(calls) == 1 and calls[0][0][0] == groups == calls[0][1][0]
    assert calls[0][1][2] == 8 * 5 * 5  # the columns of all eight samples side by side
    np.testing.assert_allclose(out, ref_conv({"Input": x, "Filter": w}, attrs)["Output"],
                               rtol=1e-5, atol=1e-5)
    calls.clear()
    for slot in ("Filter", "Input"):
        _run_grad("conv2d", {"Input": x, "Filter": w}, attrs, "Output", slot, r(8, 6, 5, 5))
    # each run: the forward's product and one for each gradient
    assert len(calls) == 6 and all(a[0] == groups for a, _ in calls)


def build_and_run_conv(x, w, attrs):
    import fluid_nb as fluid
    program, _, feed, outputs = build(OpCase("conv2d", {"Input": x, "Filter": w},
                                             attrs=attrs))
    exe = fluid.Executor(fluid.CPUPlace())
    return exe.run(program, feed=feed, fetch_list=[outputs["Output"][0]],
                   scope=fluid.Scope())[0]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_padding_an_image_batch_gives_np_pads_values(dtype):
    """Convolutions and pools pad with _pad_nchw: np.pad's constant padding, asymmetric pads
    and pool's -inf included, bit for bit (ints take np.pad itself)."""
    from fluid_nb.ops.conv import _pad_nchw
    x = (np.random.RandomState(4).randn(2, 3, 5, 4) * 10).astype(dtype)
    for pads, value in [(((1, 1), (1, 1)), 0), (((0, 2), (3, 0)), 0), (((2, 1), (0, 1)), -1),
                        (((1, 0), (1, 0)), -np.inf if dtype != "int32" else -7)]:
        want = np.pad(x, ((0, 0), (0, 0)) + pads, constant_values=value)
        got = _pad_nchw(np, x, pads, value)
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
