"""ONNX export of the vision ops beyond the op tables' cases: a small decoder network, the
outputs the tables do not fetch (max pooling's Mask, yolo_box's Scores), resizing over
many input and output sizes, ROIs assigned to images by RoisNum, and a network whose
spatial sizes are known only at run time. Each runs in onnxruntime and gives the
executor's numbers (float32 within 1e-5 relative)."""
import numpy as np
import pytest

import fluid_nb as fluid
from tests.ops.op_test import OpCase, build

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _export_and_run(program, feed, fetch, path, scope=None):
    """(onnxruntime's outputs, the executor's outputs, the report) for ``fetch``."""
    scope = scope or fluid.Scope()
    report = fluid.onnx.export(program, path, feed=list(feed), fetch=fetch, scope=scope,
                               strict=True)
    assert report.complete, str(report)
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [getattr(f, "name", f) for f in fetch]
    got = session.run(names, {k: np.asarray(v) for k, v in feed.items()})
    want = fluid.Executor(fluid.CPUPlace()).run(program, feed=feed, fetch_list=names,
                                                scope=scope)
    return got, [np.asarray(w) for w in want], report


def _assert_same(got, want, atol=1e-6):
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=atol)


def _one_op(op, inputs, attrs, outputs):
    case = OpCase(op, inputs, attrs, outputs=outputs)
    program, _, feed, names = build(case)
    return program, feed, [names[slot][0] for slot in outputs]


def test_a_tiny_decoder_exports_and_matches_the_executor(tmp_path):
    """conv -> batch_norm -> transposed conv (stride 2) -> batch_norm -> bilinear resize
    (half-pixel) -> grouped transposed conv -> nearest resize, as an inference model with
    trained-looking statistics; the batch is symbolic."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        code = fluid.layers.data(name="code", shape=[4, 5, 5], dtype="float32")
        h = fluid.layers.conv2d(code, num_filters=8, filter_size=3, padding=1)
        h = fluid.layers.batch_norm(h, act="relu")
        h = fluid.layers.conv2d_transpose(h, num_filters=6, filter_size=4, stride=2,
                                          padding=1)
        h = fluid.layers.batch_norm(h, act="relu")
        h = fluid.layers.resize_bilinear(h, out_shape=[13, 17], align_corners=False,
                                         align_mode=0)
        h = fluid.layers.conv2d_transpose(h, num_filters=4, filter_size=3, padding=1,
                                          groups=2)
        h = fluid.layers.resize_nearest(h, out_shape=[20, 20], align_corners=False)
        image = fluid.layers.sigmoid(fluid.layers.conv2d(h, num_filters=3, filter_size=1))
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    rng = np.random.RandomState(0)
    for var in main.global_block().vars.values():  # statistics and scales away from 0 / 1
        if var.persistable and ("mean" in var.name or "variance" in var.name
                                or "batch_norm" in var.name):
            held = scope.find_var(var.name).get_tensor()
            shape = np.asarray(held).shape
            held.set(rng.uniform(0.5, 1.5, shape).astype("float32"), fluid.CPUPlace())
    with fluid.scope_guard(scope):
        fluid.io.save_inference_model(str(tmp_path / "model"), ["code"], [image], exe,
                                      main_program=main)
        program, feeds, fetches = fluid.io.load_inference_model(str(tmp_path / "model"), exe)
    types = [op.type for op in program.global_block().ops]
    assert {"conv2d_transpose", "batch_norm", "bilinear_interp", "nearest_interp"} <= \
        set(types)
    for batch in (2, 3):
        feed = {"code": rng.randn(batch, 4, 5, 5).astype("float32")}
        got, want, _ = _export_and_run(program, feed, fetches, tmp_path / "decoder.onnx",
                                       scope)
        assert want[0].shape == (batch, 3, 20, 20)
        _assert_same(got, want)
    nodes = {n.op_type for n in onnx.load(str(tmp_path / "decoder.onnx")).graph.node}
    assert {"ConvTranspose", "BatchNormalization", "Resize"} <= nodes


@pytest.mark.parametrize("op, shape, attrs", [
    ("max_pool2d_with_index", (2, 3, 7, 6), {"ksize": [3, 2], "strides": [2, 2],
                                             "paddings": [1, 0]}),
    ("max_pool2d_with_index", (1, 2, 7, 5), {"ksize": [3, 2], "adaptive": True}),
    ("max_pool3d_with_index", (1, 2, 4, 5, 4), {"ksize": [2, 3, 2], "strides": [2, 1, 2],
                                                "paddings": [0, 1, 0]}),
    ("max_pool3d_with_index", (1, 2, 5, 3, 4), {"ksize": [2, 2, 3], "adaptive": True}),
], ids=["2d", "2d_adaptive", "3d", "3d_adaptive"])
def test_max_pooling_gives_the_executors_mask(op, shape, attrs, tmp_path):
    """Mask: the flat spatial index of each window's first maximum; ties included (the
    input holds repeated values)."""
    x = np.random.RandomState(1).randint(0, 4, shape).astype("float32")
    program, feed, fetch = _one_op(op, {"X": x}, attrs, {"Out": 1, "Mask": 1})
    got, want, _ = _export_and_run(program, feed, fetch, tmp_path / "pool.onnx")
    assert want[1].dtype == np.int32
    _assert_same(got, want)


def test_yolo_box_gives_the_executors_boxes_and_scores(tmp_path):
    x = np.random.RandomState(2).randn(2, 2 * 8, 3, 4).astype("float32")
    img_size = np.array([[96, 128], [64, 80]], "int32")
    program, feed, fetch = _one_op(
        "yolo_box", {"X": x, "ImgSize": img_size},
        {"anchors": [10, 13, 16, 30], "class_num": 3, "conf_thresh": 0.4,
         "downsample_ratio": 32, "scale_x_y": 1.1}, {"Boxes": 1, "Scores": 1})
    got, want, _ = _export_and_run(program, feed, fetch, tmp_path / "yolo.onnx")
    assert (want[1] == 0).any() and (want[1] > 0).any()  # some boxes under the threshold
    _assert_same(got, want)


_RESIZES = {
    "bilinear_aligned": ("bilinear_interp", {"align_corners": True}),
    "bilinear_half_pixel": ("bilinear_interp", {"align_corners": False, "align_mode": 0}),
    "bilinear_corner": ("bilinear_interp", {"align_corners": False, "align_mode": 1}),
    "nearest_aligned": ("nearest_interp", {"align_corners": True}),
    "nearest_corner": ("nearest_interp", {"align_corners": False}),
    "bicubic_aligned": ("bicubic_interp", {"align_corners": True}),
    "bicubic_half_pixel": ("bicubic_interp", {"align_corners": False}),
}


@pytest.mark.parametrize("kind", sorted(_RESIZES))
def test_resizing_matches_the_executor_from_every_size_to_every_size(kind, tmp_path):
    """One program resizing inputs of 1 to 6 rows and columns to 1 to 9 (upsampling,
    downsampling, non-integer ratios, a single row); bicubic without align_corners to a
    size of 1 has no ONNX form (the executor samples position -0.5) and is declined.
    onnxruntime evaluates the cubic weights' polynomials in float32 (the executor in
    double): where the negative weights cancel to an output near 0, they differ by a few
    float32 steps of the inputs (~1e-6), the tolerance bicubic gets."""
    op_type, attrs = _RESIZES[kind]
    program = fluid.Program()
    block = program.global_block()
    rng = np.random.RandomState(3)
    feed, fetch = {}, []
    sizes = [(h, w, oh, ow) for h, w in ((1, 3), (2, 5), (4, 4), (6, 3))
             for oh, ow in ((1, 2), (3, 7), (5, 4), (9, 9), (8, 3))]
    for k, (h, w, oh, ow) in enumerate(sizes):
        if kind == "bicubic_half_pixel" and 1 in (oh, ow):
            continue
        name = f"x{k}"
        if name not in feed:
            feed[name] = rng.randn(1, 2, h, w).astype("float32")
            block.create_var(name=name, shape=(1, 2, h, w), dtype="float32")
        out = block.create_var(name=f"out{k}", dtype="float32")
        block.append_op(type=op_type, inputs={"X": [name]}, outputs={"Out": [out.name]},
                        attrs=dict(attrs, out_h=oh, out_w=ow))
        fetch.append(out.name)
    got, want, _ = _export_and_run(program, feed, fetch, tmp_path / "resize.onnx")
    _assert_same(got, want, atol=5e-6 if op_type == "bicubic_interp" else 1e-6)


@pytest.mark.parametrize("out_h,out_w", [(1, 2), (7, 9), (2, 2)])
def test_bicubic_without_align_corners_takes_fluids_source_rows(out_h, out_w, tmp_path):
    """Fluid truncates an upsampling's negative source toward 0 (and samples -0.5 for an
    output of size 1) where ONNX's cubic Resize floors: with known sizes the export is the
    executor's interpolation matrices, so the first rows agree too."""
    x = np.random.RandomState(3).randn(2, 3, 4, 5).astype("float32")
    program, feed, fetch = _one_op("bicubic_interp", {"X": x},
                                   {"out_h": out_h, "out_w": out_w, "align_corners": False},
                                   {"Out": 1})
    got, want, _ = _export_and_run(program, feed, fetch, tmp_path / "bicubic.onnx")
    _assert_same(got, want, atol=2e-6)


def test_roi_align_takes_each_rois_image_from_rois_num(tmp_path):
    """Two images with 2 and 3 ROIs (counts, Paddle 2.x's RoisNum), unaligned with an
    adaptive sampling grid; one ROI reaches past the map and one is smaller than a
    pixel."""
    x = np.random.RandomState(4).randn(2, 3, 9, 11).astype("float32")
    rois = np.array([[0, 0, 8, 6], [2.5, 1, 14, 9.5], [1, 1, 1.4, 1.2], [3, 2, 10, 8],
                     [-2, -1, 5, 4]], "float32")
    program, feed, fetch = _one_op(
        "roi_align", {"X": x, "ROIs": rois, "RoisNum": np.array([2, 3], "int32")},
        {"pooled_height": 3, "pooled_width": 2, "spatial_scale": 0.75,
         "sampling_ratio": -1}, {"Out": 1})
    got, want, _ = _export_and_run(program, feed, fetch, tmp_path / "roi.onnx")
    _assert_same(got, want)


def test_spatial_sizes_known_only_at_run_time(tmp_path):
    """A 3-D network declared [-1, 2, -1, -1, -1]: SAME convolution pads as ONNX's
    SAME_UPPER, the pools and the transposed convolution need no sizes; it runs at two
    sizes."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        volume = fluid.layers.data(name="volume", shape=[-1, 2, -1, -1, -1],
                                   append_batch_size=False, dtype="float32")
        h = fluid.layers.conv3d(volume, num_filters=3, filter_size=3, stride=2,
                                padding="SAME")
        h = fluid.layers.pool3d(h, pool_size=2, pool_type="max", pool_stride=1,
                                pool_padding=1)
        h = fluid.layers.conv3d_transpose(h, num_filters=2, filter_size=2, stride=2)
        out = fluid.layers.pool3d(h, pool_size=3, pool_type="avg", pool_stride=2,
                                  pool_padding=1, exclusive=False)
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    rng = np.random.RandomState(5)
    for shape in ((1, 2, 5, 6, 7), (2, 2, 4, 3, 8)):
        feed = {"volume": rng.randn(*shape).astype("float32")}
        got, want, _ = _export_and_run(main, feed, [out], tmp_path / "dynamic.onnx", scope)
        _assert_same(got, want)
    graph = onnx.load(str(tmp_path / "dynamic.onnx")).graph
    conv, = [n for n in graph.node if n.op_type == "Conv"]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in conv.attribute}
    assert attrs["auto_pad"] == b"SAME_UPPER"


@pytest.mark.parametrize("aligned", [True, False], ids=["aligned", "unaligned"])
def test_affine_grid_builds_its_base_grid_from_output_shape_at_run_time(aligned, tmp_path):
    """The grid's size read from OutputShape: one model serves every size, a single row or
    column included (its position is 0)."""
    theta = np.random.RandomState(6).randn(2, 2, 3).astype("float32")
    program, feed, fetch = _one_op(
        "affine_grid", {"Theta": theta, "OutputShape": np.array([2, 1, 3, 4], "int32")},
        {"align_corners": aligned}, {"Output": 1})
    fluid.onnx.export(program, tmp_path / "grid.onnx", feed=list(feed), fetch=fetch,
                      scope=fluid.Scope(), strict=True)
    session = ort.InferenceSession(str(tmp_path / "grid.onnx"),
                                   providers=["CPUExecutionProvider"])
    for h, w in ((3, 4), (1, 5), (6, 1), (1, 1)):
        feed["outputshape"] = np.array([2, 1, h, w], "int32")
        got, = session.run(fetch, feed)
        want, = fluid.Executor(fluid.CPUPlace()).run(program, feed=feed, fetch_list=fetch,
                                                     scope=fluid.Scope())
        assert got.shape == (2, h, w, 2)
        _assert_same([got], [np.asarray(want)])


def test_a_resize_by_scale_of_unknown_sizes_works_them_out_in_the_graph(tmp_path):
    """int(size * scale) from the input's run-time shape, as the executor computes it (a
    program from a file declaring its spatial sizes -1)."""
    x = np.zeros((1, 2, 4, 5), "float32")
    program, feed, fetch = _one_op("bilinear_interp", {"X": x},
                                   {"scale": 1.7, "align_corners": False, "align_mode": 0},
                                   {"Out": 1})
    block = program.global_block()
    block.var("x").shape, block.var(fetch[0]).shape = (-1, 2, -1, -1), (-1, 2, -1, -1)
    rng = np.random.RandomState(7)
    for shape in ((1, 2, 4, 5), (2, 2, 7, 3)):
        feed = {"x": rng.randn(*shape).astype("float32")}
        got, want, _ = _export_and_run(program, feed, fetch, tmp_path / "scale.onnx")
        assert want[0].shape[2:] == (int(shape[2] * 1.7), int(shape[3] * 1.7))
        _assert_same(got, want)
