"""Fluid 1.8's convolution, pooling, normalisation and image layers build Fluid's ops
(types, attributes, parameter names) and agree with NumPy."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb import layers
from fluid_nb.errors import InvalidArgument

from ..ops.test_vision import ref_conv_nd, ref_conv_transpose, ref_pool_nd

rng = np.random.RandomState(11)


def r(*shape):
    return rng.uniform(-1, 1, shape).astype("float32")


def build_and_run(fn, feed, seed=0):
    """Build ``fn()`` in fresh programs, run startup and main; return (main, scope,
    fetched arrays). ``seed``: the programs' random seed (0: drawn from the process's
    generator, whose state depends on what ran before)."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = seed
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        outs = fn()
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    fluid.verify(main)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    return main, scope, exe.run(main, feed=feed, fetch_list=outs, scope=scope)


def the_op(program, op_type):
    (op,) = [op for op in program.global_block().ops if op.type == op_type]
    return op


def param(scope, name):
    return np.asarray(scope.find_var(name).get_tensor())


def data(name, array):
    return fluid.data(name=name, shape=list(array.shape), dtype=str(array.dtype))


# --- padding forms -------------------------------------------------------------------------------
@pytest.mark.parametrize("layer, kwargs", [
    (layers.conv2d, {"num_filters": 2, "filter_size": 3}),
    (layers.pool2d, {"pool_size": 2}),
    (layers.conv2d_transpose, {"num_filters": 2, "filter_size": 3}),
])
@pytest.mark.parametrize("data_format, padding", [
    ("NCHW", [[0, 0], [1, 1], [1, 1], [1, 1]]),
    ("NCHW", [[1, 0], [0, 0], [1, 1], [1, 1]]),
    ("NHWC", [[0, 0], [1, 1], [1, 1], [0, 1]]),
])
def test_padding_pairs_of_batch_or_channel_dims_are_refused(layer, kwargs, data_format,
                                                           padding):
    """As Fluid 1.8: in the one-pair-per-dim form, batch and channel pairs must be [0, 0]."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[1, 3, 5, 5], dtype="float32")
        key = "pool_padding" if layer is layers.pool2d else "padding"
        with pytest.raises(InvalidArgument, match="batch and channel"):
            layer(x, data_format=data_format, **{key: padding}, **kwargs)
        assert not main.global_block().ops


def test_conv3d_padding_pairs_of_channel_dim_are_refused():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[1, 2, 4, 4, 4], dtype="float32")
        with pytest.raises(InvalidArgument, match="batch and channel"):
            layers.conv3d(x, 2, 3, padding=[[0, 0], [0, 1], [1, 1], [1, 1], [1, 1]])
        with pytest.raises(InvalidArgument, match="batch and channel"):
            layers.pool3d(x, 2, pool_padding=[[0, 0], [1, 1], [1, 1], [1, 1], [1, 1]],
                          data_format="NDHWC")


# --- convolutions -----------------------------------------------------------------------------
def test_conv2d_transpose_with_output_size_and_bias():
    x = r(2, 3, 4, 4)

    def net():
        return layers.conv2d_transpose(data("x", x), num_filters=4, filter_size=3, stride=2,
                                       padding=1, output_size=8, act="relu")
    main, scope, (out,) = build_and_run(net, {"x": x})
    op = the_op(main, "conv2d_transpose")
    assert op.attr("output_size") == [8, 8] and op.attr("paddings") == [1, 1]
    w = param(scope, "conv2d_transpose_0.w_0")
    assert w.shape == (3, 4, 3, 3)
    b = param(scope, "conv2d_transpose_0.b_0")
    want = ref_conv_transpose({"Input": x, "Filter": w},
                              {"strides": [2, 2], "paddings": [1, 1],
                               "output_size": [8, 8]})["Output"]
    want = np.maximum(want + b.reshape(1, -1, 1, 1), 0)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_conv2d_transpose_works_out_filter_size_from_output_size():
    x = r(1, 2, 3, 3)

    def net():
        return layers.conv2d_transpose(data("x", x), num_filters=2, output_size=[7, 8],
                                       stride=2, padding=[0, 1, 1, 0], bias_attr=False)
    main, scope, (out,) = build_and_run(net, {"x": x})
    op = the_op(main, "conv2d_transpose")
    assert op.attr("paddings") == [0, 1, 1, 0]
    assert param(scope, "conv2d_transpose_0.w_0").shape == (2, 2, 4, 5)
    assert out.shape == (1, 2, 7, 8)


def test_depthwise_conv2d_transpose_is_chosen_as_fluid_does():
    def net():
        x = fluid.data(name="x", shape=[1, 3, 4, 4], dtype="float32")
        return layers.conv2d_transpose(x, 3, filter_size=2, groups=3, use_cudnn=False)
    main, _, (out,) = build_and_run(net, {"x": r(1, 3, 4, 4)})
    assert the_op(main, "depthwise_conv2d_transpose").attr("groups") == 3
    assert out.shape == (1, 3, 5, 5)


def test_conv3d_matches_numpy_ndhwc():
    x = r(2, 4, 5, 3, 2)

    def net():
        return layers.conv3d(data("x", x), num_filters=3, filter_size=[3, 2, 2], stride=2,
                             padding="SAME", data_format="NDHWC")
    main, scope, (out,) = build_and_run(net, {"x": x})
    w, b = param(scope, "conv3d_0.w_0"), param(scope, "conv3d_0.b_0")
    assert w.shape == (3, 2, 3, 2, 2)
    want = ref_conv_nd({"Input": x, "Filter": w},
                       {"strides": [2, 2, 2], "padding_algorithm": "SAME",
                        "data_format": "NDHWC"})["Output"] + b
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_conv3d_transpose_writes_the_2d_layout_name():
    def net():
        x = fluid.data(name="x", shape=[1, 2, 2, 3, 2], dtype="float32")
        return layers.conv3d_transpose(x, num_filters=2, filter_size=2, stride=2)
    main, _, (out,) = build_and_run(net, {"x": r(1, 2, 2, 3, 2)})
    assert the_op(main, "conv3d_transpose").attr("data_format") == "NCHW"
    assert out.shape == (1, 2, 4, 6, 4)


# --- pooling -----------------------------------------------------------------------------------
def test_pool3d_matches_numpy():
    x = r(2, 2, 5, 4, 6)

    def net():
        return layers.pool3d(data("x", x), pool_size=[2, 3, 2], pool_type="avg",
                             pool_stride=2, pool_padding=[1, 0, 1, 1, 1, 0], ceil_mode=True)
    main, _, (out,) = build_and_run(net, {"x": x})
    want = ref_pool_nd({"X": x}, {"pooling_type": "avg", "ksize": [2, 3, 2],
                                  "strides": [2, 2, 2], "paddings": [1, 0, 1, 1, 1, 0],
                                  "ceil_mode": True})["Out"]
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


def test_adaptive_pool2d_max_gives_out_and_mask():
    x = r(2, 3, 7, 5)

    def net():
        return layers.adaptive_pool2d(data("x", x), pool_size=[3, 2], require_index=True)
    main, _, (out, mask) = build_and_run(net, {"x": x})
    op = the_op(main, "max_pool2d_with_index")
    assert op.attr("adaptive") is True and op.attr("ksize") == [3, 2]
    want = ref_pool_nd({"X": x}, {"ksize": [3, 2], "adaptive": True}, with_index=True)
    np.testing.assert_allclose(out, want["Out"], rtol=1e-6)
    np.testing.assert_array_equal(mask, want["Mask"])


def test_adaptive_pool3d_avg_uses_pool3d():
    x = r(1, 2, 5, 4, 3)

    def net():
        return layers.adaptive_pool3d(data("x", x), pool_size=2, pool_type="avg")
    main, _, (out,) = build_and_run(net, {"x": x})
    assert the_op(main, "pool3d").attr("adaptive") is True
    want = ref_pool_nd({"X": x}, {"pooling_type": "avg", "ksize": [2, 2, 2],
                                  "adaptive": True})["Out"]
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


def test_adaptive_pool_refuses_index_for_avg():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[1, 2, 4, 4], dtype="float32")
        with pytest.raises(InvalidArgument, match="require_index"):
            layers.adaptive_pool2d(x, 2, pool_type="avg", require_index=True)


def test_conv_transpose_trains_with_backward():
    """A conv2d_transpose learns a teacher's filter: the loss falls."""
    x = r(4, 2, 3, 3)
    teacher = r(2, 1, 2, 2)
    # stride 2 and a 2x2 filter: each input pixel paints its own 2x2 block of the output
    y = np.einsum("ncij,coab->noiajb", x, teacher).reshape(4, 1, 6, 6).astype(x.dtype)
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        xv, yv = data("x", x), data("y", y)
        out = layers.conv2d_transpose(xv, 1, filter_size=2, stride=2)
        loss = layers.mean(layers.square(out - yv))
        fluid.optimizer.SGD(0.5).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    losses = [float(exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss], scope=scope)[0])
              for _ in range(20)]
    assert losses[-1] < losses[0] * 0.5, losses


# --- resizing ------------------------------------------------------------------------------------
def test_resize_bilinear_builds_bilinear_interp_and_matches_numpy():
    from ..ops.test_vision import ref_interp
    x = r(2, 3, 4, 5)

    def net():
        return layers.resize_bilinear(data("x", x), out_shape=[6, 8], align_corners=False,
                                      align_mode=0)
    main, _, (out,) = build_and_run(net, {"x": x})
    op = the_op(main, "bilinear_interp")
    assert (op.attr("out_h"), op.attr("out_w"), op.attr("interp_method")) == (6, 8,
                                                                              "bilinear")
    want = ref_interp("bilinear")({"X": x}, {"out_h": 6, "out_w": 8, "align_corners": False,
                                             "align_mode": 0})["Out"]
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


def test_resize_nearest_by_scale_and_image_resize_short():
    x = r(1, 2, 4, 6)

    def net():
        xv = data("x", x)
        return (layers.resize_nearest(xv, scale=2.0),
                layers.image_resize_short(xv, out_short_len=2))
    main, _, (big, short) = build_and_run(net, {"x": x})
    np.testing.assert_array_equal(big.shape, (1, 2, 8, 12))
    assert the_op(main, "nearest_interp").attr("scale") == 2.0
    assert short.shape == (1, 2, 2, 3)


def test_a_scale_resizes_images_whose_size_is_known_only_at_run_time():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        images = layers.data(name="x", shape=[-1, 3, -1, -1], dtype="float32")
        bigger = layers.resize_bilinear(images, scale=2.0)
        nearer = layers.resize_nearest(images, scale=1.5)
    assert bigger.shape == nearer.shape == (-1, 3, -1, -1)
    exe = fluid.Executor(fluid.CPUPlace())
    for h, w in ((5, 6), (4, 9)):
        out, near = exe.run(main, feed={"x": r(2, 3, h, w)}, fetch_list=[bigger, nearer])
        assert out.shape == (2, 3, 2 * h, 2 * w)
        assert near.shape == (2, 3, int(1.5 * h), int(1.5 * w))


def test_image_resize_takes_variable_dims_as_size_tensor():
    x = r(1, 1, 3, 3)

    def net():
        h = layers.fill_constant([1], "int32", 5)
        return layers.image_resize(data("x", x), out_shape=[h, 4])
    main, _, (out,) = build_and_run(net, {"x": x})
    op = the_op(main, "bilinear_interp")
    assert len(op.input("SizeTensor")) == 2 and op.attr("out_h") == -1
    assert out.shape == (1, 1, 5, 4)


def test_resize_trilinear_and_interpolate_bicubic():
    x5, x4 = r(1, 2, 2, 3, 2), r(1, 1, 3, 3)

    def net():
        return (layers.resize_trilinear(data("x5", x5), out_shape=[3, 4, 5]),
                layers.interpolate(data("x4", x4), out_shape=[5, 5], resample="BICUBIC"))
    main, _, (tri, cubic) = build_and_run(net, {"x5": x5, "x4": x4})
    assert tri.shape == (1, 2, 3, 4, 5) and cubic.shape == (1, 1, 5, 5)
    np.testing.assert_allclose(cubic[0, 0, 0, 0], x4[0, 0, 0, 0], rtol=1e-5)


def test_image_resize_refuses_wrong_rank_and_missing_size():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[1, 2, 3, 3], dtype="float32")
        with pytest.raises(InvalidArgument, match="5-D"):
            layers.image_resize(x, out_shape=[2, 2, 2], resample="TRILINEAR")
        with pytest.raises(InvalidArgument, match="out_shape or scale"):
            layers.resize_bilinear(x)
        with pytest.raises(InvalidArgument, match="resample"):
            layers.image_resize(x, out_shape=[2, 2], resample="BICUBIC")


# --- normalisation and activation layers ---------------------------------------------------------
def test_instance_norm_parameters_and_values():
    from ..ops.test_norm import ref_instance_norm
    x = r(2, 3, 4, 4)

    def net():
        return layers.instance_norm(data("x", x))
    main, scope, (out,) = build_and_run(net, {"x": x})
    scale, bias = param(scope, "instance_norm_0.w_0"), param(scope, "instance_norm_0.b_0")
    np.testing.assert_array_equal(scale, np.ones(3))
    want = ref_instance_norm({"X": x, "Scale": scale, "Bias": bias}, {})["Y"]
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_group_norm_has_no_affine_parameters_by_default_as_in_fluid_18():
    from ..ops.test_norm import ref_group_norm
    x = r(2, 4, 3, 3)

    def net():
        return (layers.group_norm(data("x", x), groups=2),
                layers.group_norm(data("x2", x), groups=2, param_attr=fluid.ParamAttr("gs"),
                                  bias_attr=fluid.ParamAttr("gb"), act="relu"))
    main, scope, (plain, affine) = build_and_run(net, {"x": x, "x2": x})
    ops = [op for op in main.global_block().ops if op.type == "group_norm"]
    assert "Scale" not in ops[0].inputs or not ops[0].input("Scale")
    assert ops[1].input("Scale") == ["gs"] and ops[1].input("Bias") == ["gb"]
    np.testing.assert_allclose(plain, ref_group_norm({"X": x}, {"groups": 2})["Y"],
                               rtol=1e-5, atol=1e-5)
    assert (affine >= 0).all()


def test_lrn_prelu_label_smooth():
    from ..ops.test_norm import ref_lrn
    x = r(2, 6, 3, 3)
    label = np.eye(4, dtype="float32")[[1, 3]]

    def net():
        xv = data("x", x)
        return (layers.lrn(xv, n=3, alpha=0.5),
                layers.prelu(xv, mode="channel"),
                layers.prelu(xv, mode="element", param_attr=fluid.ParamAttr("pe")),
                layers.label_smooth(data("label", label), epsilon=0.2))
    main, scope, (normed, pc, pe, smooth) = build_and_run(net, {"x": x, "label": label})
    np.testing.assert_allclose(normed, ref_lrn({"X": x}, {"n": 3, "alpha": 0.5})["Out"],
                               rtol=1e-5)
    assert param(scope, "prelu_0.w_0").shape == (1, 6, 1, 1)
    assert param(scope, "pe").shape == (1, 6, 3, 3)
    np.testing.assert_allclose(pc, np.where(x > 0, x, 0.25 * x), rtol=1e-6)
    np.testing.assert_allclose(smooth, label * 0.8 + 0.05, rtol=1e-6)


def test_prelu_refuses_unknown_mode():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[2, 3], dtype="float32")
        with pytest.raises(InvalidArgument, match="mode"):
            layers.prelu(x, mode="row")


# --- ROI pooling -------------------------------------------------------------------------------
def test_roi_layers_take_lod_rois_and_match_numpy():
    from ..ops.test_vision import ROIS, ROI_LOD, ref_roi_align, ref_roi_pool
    x = r(2, 3, 8, 8)

    def net():
        xv = data("x", x)
        rois = fluid.data(name="rois", shape=[-1, 4], dtype="float32", lod_level=1)
        return (layers.roi_pool(xv, rois, pooled_height=2, pooled_width=2, spatial_scale=0.5),
                layers.roi_align(xv, rois, pooled_height=2, pooled_width=3,
                                 sampling_ratio=2))
    lod_rois = fluid.create_lod_tensor(ROIS, [[2, 1]], fluid.CPUPlace())
    main, _, (pooled, aligned) = build_and_run(net, {"x": x, "rois": lod_rois})
    assert the_op(main, "roi_pool").output("Argmax")
    attrs = {"pooled_height": 2, "pooled_width": 2, "spatial_scale": 0.5}
    np.testing.assert_allclose(pooled, ref_roi_pool({"X": x, "ROIs": ROIS}, attrs)["Out"],
                               rtol=1e-6)
    attrs = {"pooled_height": 2, "pooled_width": 3, "spatial_scale": 1.0,
             "sampling_ratio": 2}
    np.testing.assert_allclose(aligned, ref_roi_align({"X": x, "ROIs": ROIS}, attrs)["Out"],
                               rtol=1e-5, atol=1e-6)
    assert ROI_LOD == [[0, 2, 3]]


def test_psroi_and_prroi_pool_layers():
    x = r(2, 8, 6, 6)

    def net():
        xv = data("x", x)
        rois = fluid.data(name="rois", shape=[-1, 4], dtype="float32", lod_level=1)
        nums = layers.assign(np.array([2, 1], "int64"))
        return (layers.psroi_pool(xv, rois, output_channels=2, spatial_scale=1.0,
                                  pooled_height=2, pooled_width=2),
                layers.prroi_pool(xv, rois, pooled_height=3, pooled_width=3,
                                  batch_roi_nums=nums))
    from ..ops.test_vision import ROIS
    lod_rois = fluid.create_lod_tensor(ROIS, [[2, 1]], fluid.CPUPlace())
    main, _, (ps, pr) = build_and_run(net, {"x": x, "rois": lod_rois})
    assert ps.shape == (3, 2, 2, 2) and pr.shape == (3, 8, 3, 3)
    assert the_op(main, "prroi_pool").input("BatchRoINums")


# --- rearrangement layers ----------------------------------------------------------------------
def test_rearrangement_layers_match_their_references():
    from ..ops import test_vision as ref
    x = r(4, 8, 4, 4)

    def net():
        xv = data("x", x)
        return (layers.maxout(xv, groups=2), layers.space_to_depth(xv, 2),
                layers.pixel_shuffle(xv, 2), layers.shuffle_channel(xv, 4),
                layers.temporal_shift(xv, seg_num=2, shift_ratio=0.25),
                layers.unfold(xv, [2, 2], strides=2, paddings=[1, 0]))
    main, _, outs = build_and_run(net, {"x": x})
    wants = [ref.ref_maxout({"X": x}, {"groups": 2})["Out"],
             ref.ref_space_to_depth({"X": x}, {"blocksize": 2})["Out"],
             ref.ref_pixel_shuffle({"X": x}, {"upscale_factor": 2})["Out"],
             ref.ref_shuffle_channel({"X": x}, {"group": 4})["Out"],
             ref.ref_temporal_shift({"X": x}, {"seg_num": 2})["Out"],
             ref.ref_unfold({"X": x}, {"kernel_sizes": [2, 2], "strides": [2, 2],
                                       "paddings": [1, 0, 1, 0]})["Y"]]
    for got, want in zip(outs, wants):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    assert the_op(main, "unfold").attr("paddings") == [1, 0, 1, 0]


def test_channel_mixing_layers():
    x, y = r(2, 3, 4, 4), r(2, 5, 4, 4)
    a, b = r(3, 4), r(3, 2)

    def net():
        xv = data("x", x)
        scale = layers.assign(np.array([1.0, 2.0, 3.0], "float32"))
        bias = layers.assign(np.array([0.5, 0.0, -1.0], "float32"))
        seq = fluid.data(name="seq", shape=[-1, 4], dtype="float32", lod_level=1)
        return (layers.affine_channel(xv, scale, bias, act="relu"),
                layers.fsp_matrix(xv, data("y", y)),
                layers.bilinear_tensor_product(data("a", a), data("b", b), size=6),
                layers.add_position_encoding(seq, alpha=1.0, beta=1.0))
    seq = fluid.create_lod_tensor(r(5, 4), [[2, 3]], fluid.CPUPlace())
    main, scope, (aff, fsp, btp, pe) = build_and_run(
        net, {"x": x, "y": y, "a": a, "b": b, "seq": seq})
    want = np.maximum(x * np.array([1, 2, 3]).reshape(1, 3, 1, 1)
                      + np.array([0.5, 0, -1]).reshape(1, 3, 1, 1), 0)
    np.testing.assert_allclose(aff, want, rtol=1e-6)
    assert fsp.shape == (2, 3, 5) and btp.shape == (3, 6) and pe.shape == (5, 4)
    assert param(scope, "bilinear_tensor_product_0.w_0").shape == (6, 4, 2)
    assert param(scope, "bilinear_tensor_product_0.b_0").shape == (1, 6)


# --- sampling and patch layers -----------------------------------------------------------------
def test_affine_grid_then_grid_sampler_is_identity_for_the_identity_transform():
    x = r(2, 3, 4, 5)
    theta = np.tile(np.array([[1, 0, 0], [0, 1, 0]], "float32"), (2, 1, 1))

    def net():
        grid = layers.affine_grid(data("theta", theta), out_shape=[2, 3, 4, 5])
        return layers.grid_sampler(data("x", x), grid)
    main, _, (out,) = build_and_run(net, {"x": x, "theta": theta})
    np.testing.assert_allclose(out, x, rtol=1e-5, atol=1e-6)
    assert the_op(main, "affine_grid").attr("output_shape") == [2, 3, 4, 5]


def test_im2sequence_row_conv_spectral_norm_similarity_focus():
    from ..ops import test_vision as ref
    x = r(2, 2, 3, 3)

    def net():
        xv = data("x", x)
        seq = layers.im2sequence(xv, filter_size=2, stride=1, padding=[0, 0, 1, 1])
        ahead = layers.row_conv(seq, future_context_size=1)
        w = layers.create_parameter([3, 4], "float32", name="sn_w")
        return seq, ahead, layers.spectral_norm(w, power_iters=60), \
            layers.similarity_focus(xv, axis=1, indexes=[0])
    # spectral_norm starts its power iterations from Normal(0, 1) vectors: a fixed seed, so
    # that 60 iterations converge whatever state earlier tests left the generator in
    main, scope, (seq, ahead, normed, mask) = build_and_run(net, {"x": x}, seed=7)
    want = ref.ref_im2sequence({"X": x}, {"kernels": [2, 2], "strides": [1, 1],
                                          "paddings": [0, 0, 1, 1]})["Out"][0]
    np.testing.assert_allclose(seq, want, rtol=1e-6)
    assert ahead.shape == want.shape
    assert param(scope, "row_conv_0.w_0").shape == (2, 8)
    assert abs(np.linalg.svd(normed, compute_uv=False)[0] - 1.0) < 1e-3
    assert set(np.unique(mask)) <= {0.0, 1.0}


def test_random_crop_draws_new_offsets_each_run():
    x = np.arange(2 * 6 * 6, dtype="float32").reshape(2, 6, 6)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        out = layers.random_crop(data("x", x), shape=[3, 3], seed=5)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    crops = [exe.run(main, feed={"x": x}, fetch_list=[out], scope=scope)[0]
             for _ in range(4)]
    assert crops[0].shape == (2, 3, 3)
    assert any(not np.array_equal(crops[0], c) for c in crops[1:])


def test_data_norm_summaries_and_values():
    x = r(4, 3)

    def net():
        return layers.data_norm(data("x", x), param_attr={"batch_size": 100.0,
                                                          "batch_sum": 10.0,
                                                          "batch_square": 400.0})
    main, scope, (out,) = build_and_run(net, {"x": x})
    assert param(scope, "dn.batch_size").tolist() == [100.0] * 3
    np.testing.assert_allclose(out, (x - 0.1) * np.sqrt(100 / 400.0), rtol=1e-5)


def test_inplace_abn_writes_over_its_input_and_trains():
    x = r(6, 3, 2, 2)
    y = r(6, 3, 2, 2)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        xv = data("x", x)
        hidden = layers.conv2d(xv, 3, 1, bias_attr=False)
        normed = layers.inplace_abn(hidden, act="leaky_relu", act_alpha=0.1)
        assert normed is hidden
        loss = layers.mean(layers.square(normed - data("y", y)))
        fluid.optimizer.SGD(0.2).minimize(loss)
    op = the_op(main, "inplace_abn")
    assert op.output("Y") == op.input("X") and op.attr("activation") == "leaky_relu"
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    losses = [float(exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss], scope=scope)[0])
              for _ in range(15)]
    assert losses[-1] < losses[0]


def test_deformable_conv_with_zero_offsets_is_conv2d():
    x = r(2, 3, 5, 5)

    def net():
        xv = data("x", x)
        offset = layers.fill_constant([2, 18, 5, 5], "float32", 0.0)
        mask = layers.fill_constant([2, 9, 5, 5], "float32", 1.0)
        deformed = layers.deformable_conv(xv, offset, mask, num_filters=4, filter_size=3,
                                          padding=1, param_attr=fluid.ParamAttr("dw"),
                                          bias_attr=False)
        plain = layers.conv2d(xv, 4, 3, padding=1, param_attr=fluid.ParamAttr("dw"),
                              bias_attr=False)
        v1 = layers.deformable_conv(xv, offset, None, num_filters=4, filter_size=3,
                                    padding=1, modulated=False)
        return deformed, plain, v1
    main, _, (deformed, plain, v1) = build_and_run(net, {"x": x})
    np.testing.assert_allclose(deformed, plain, rtol=1e-5, atol=1e-5)
    assert v1.shape == (2, 4, 5, 5)
    assert the_op(main, "deformable_conv_v1").attr("deformable_groups") == 1


def test_deformable_roi_pooling_without_trans_matches_the_op_reference():
    from ..ops.test_vision import DPS_ROIS, ref_deformable_psroi
    x = r(2, 3, 7, 8)

    def net():
        rois = fluid.data(name="rois", shape=[-1, 4], dtype="float32", lod_level=1)
        trans = layers.fill_constant([3, 2, 2, 2], "float32", 0.0)
        return layers.deformable_roi_pooling(data("x", x), rois, trans, no_trans=True,
                                             pooled_height=2, pooled_width=2,
                                             sample_per_part=2)
    lod_rois = fluid.create_lod_tensor(DPS_ROIS, [[2, 1]], fluid.CPUPlace())
    main, _, (out,) = build_and_run(net, {"x": x, "rois": lod_rois})
    want = ref_deformable_psroi({"Input": x, "ROIs": DPS_ROIS},
                                {"no_trans": True, "output_dim": 3, "pooled_height": 2,
                                 "pooled_width": 2, "sample_per_part": 2,
                                 "trans_std": 0.1})["Output"]
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    assert the_op(main, "deformable_psroi_pooling").attr("output_dim") == 3
