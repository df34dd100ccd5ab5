"""Converters of the vision ops: convolution (2-D, 3-D, transposed; NCHW or channel-last),
pooling (2-D, 3-D, adaptive, ceil_mode) and max pooling with its index, resizing, pixel
rearrangements, sampling grids, ROI and deformable sampling, YOLO boxes (opset 17).

Each converter reproduces the executor's kernel (fluid_nb/ops), not a reading of Paddle's
documentation: where ONNX's own op has the kernel's semantics it is used as it is
(ConvTranspose, MaxPool, Resize, DepthToSpace, GridSample, RoiAlign); where no ONNX op
matches a case (adaptive bins, ceil_mode windows, Paddle's average divisor with unequal
pads, deformable sampling, unfold's blocks) the kernel's own construction is written with
plain nodes: constant window matrices, a gather of every window, GridSample for the
bilinear reads. Those need the spatial sizes the program declares.
"""
import functools

import numpy as np

from ...ops.conv_nd import (ConvGeometry, PoolGeometry, TransposeGeometry, is_channel_last,
                           product)
from .converters import NotConvertible, _in, _out, converter
from ...ops.interp import cubic_matrix


# --- layout and shape helpers -----------------------------------------------------------------
def _ints(ctx, values, hint="ints"):
    return ctx.const(np.array(values, "int64"), hint)


def _channel_first_shape(shape, last):
    return (shape[0], shape[-1]) + tuple(shape[1:-1]) if last else tuple(shape)


def _channel_first(ctx, x, out, last):
    """(input, output, finish) of a channel-first computation of ``out`` from ``x``: with a
    channel-last layout ``x`` is transposed in, and ``finish()`` transposes the result into
    ``out``."""
    if not last:
        return x, out, lambda: None
    rank = len(ctx.shape(x))
    moved_in, moved_out = ctx.tmp("channel_first"), ctx.tmp("channel_first_out")
    ctx.node("Transpose", [x], [moved_in], perm=[0, rank - 1] + list(range(1, rank - 1)))
    return moved_in, moved_out, lambda: ctx.node(
        "Transpose", [moved_out], [out], perm=[0] + list(range(2, rank)) + [1])


def _value(ctx, kind, inputs, **attrs):
    """Add a one-output ``kind`` node; returns the output's name."""
    out = ctx.tmp(kind.lower())
    ctx.node(kind, inputs, [out], **attrs)
    return out


def _known(sizes, what):
    if any(s < 0 for s in sizes):
        raise NotConvertible(f"{what} needs the spatial sizes, declared {list(sizes)}")


def _pads(pairs):
    """ONNX's pads: every dim's start, then every dim's end."""
    return [p0 for p0, _ in pairs] + [p1 for _, p1 in pairs]


# --- convolutions -----------------------------------------------------------------------------
@converter("conv2d", "depthwise_conv2d", "conv3d")
def _conv(op, ctx):
    x, w, out = _in(op, "Input"), _in(op, "Filter"), _out(op, "Output")
    if op.inputs.get("Bias") or op.inputs.get("ResidualData"):
        raise NotConvertible("a fused Bias or ResidualData")
    last = is_channel_last(op.attrs)
    shape, w_shape = _channel_first_shape(ctx.shape(x), last), ctx.shape(w)
    g = ConvGeometry(op.type, op.attrs, shape[2:], w_shape[2:])
    attrs = dict(kernel_shape=list(w_shape[2:]), strides=g.strides, dilations=g.dilations,
                 group=int(op.attrs.get("groups", 1) or 1))
    if op.attrs.get("padding_algorithm") == "SAME" and any(s < 0 for s in shape[2:]):
        attrs["auto_pad"] = "SAME_UPPER"  # Paddle's SAME: the odd pixel after, as ONNX's
    else:
        attrs["pads"] = _pads(g.pads)
    xi, yo, finish = _channel_first(ctx, x, out, last)
    ctx.node("Conv", [xi, w], [yo], **attrs)
    finish()


@converter("conv2d_transpose", "depthwise_conv2d_transpose", "conv3d_transpose")
def _conv_transpose(op, ctx):
    """ConvTranspose with the executor's pads; output_size becomes the output_padding that
    reaches it (Paddle checks it lies in [least size, least size + stride))."""
    x, w, out = _in(op, "Input"), _in(op, "Filter"), _out(op, "Output")
    last = is_channel_last(op.attrs)
    shape, w_shape = _channel_first_shape(ctx.shape(x), last), ctx.shape(w)
    sizes = shape[2:]
    output_size = list(op.attrs.get("output_size") or [])
    if output_size or op.attrs.get("padding_algorithm") == "SAME":
        _known(sizes, "output_size or SAME padding")
    t = TransposeGeometry(op.type, op.attrs, sizes, w_shape[2:])
    if output_size:
        output_padding = [o - ((s - 1) * st - p0 - p1 + d * (k - 1) + 1) for o, s, st, d, k,
                          (p0, p1) in zip(t.out, sizes, t.strides, t.dilations, t.ksizes,
                                          t.pads)]
    else:
        output_padding = [int(v) for v in op.attrs.get("output_padding") or [0] * len(sizes)]
    xi, yo, finish = _channel_first(ctx, x, out, last)
    ctx.node("ConvTranspose", [xi, w], [yo], kernel_shape=list(w_shape[2:]),
             strides=t.strides, dilations=t.dilations, pads=_pads(t.pads),
             output_padding=output_padding, group=int(op.attrs.get("groups", 1) or 1))
    finish()


# --- pooling ----------------------------------------------------------------------------------
def _window_indices(g, dim):
    """[out, longest] input positions of each output's window along ``dim``; a short
    window repeats its last position (which changes neither its maximum nor which position
    is the first maximum)."""
    bounds = g.bounds(dim)
    longest = max(end - start for start, end, _ in bounds)
    starts = np.array([b[0] for b in bounds])[:, None]
    lasts = np.array([b[1] - 1 for b in bounds])[:, None]
    return np.minimum(starts + np.arange(longest)[None, :], lasts)


def _gathered_windows(ctx, x, g):
    """x [N, C, *S] -> [N, C, *out, L] with every output's window flattened (row-major),
    and the [*out, L] flat spatial position of each entry."""
    d = len(g.sizes)
    current, indices = x, [_window_indices(g, dim) for dim in range(d)]
    for dim, index in enumerate(indices):  # [N, C, o0, L0, ..., o_dim, L_dim, S_dim+1 ...]
        gathered = ctx.tmp("windows")
        ctx.node("Gather", [current, ctx.const(index, "window")], [gathered], axis=2 + 2 * dim)
        current = gathered
    moved, flat = ctx.tmp("windows"), ctx.tmp("windows")
    ctx.node("Transpose", [current], [moved],
             perm=[0, 1] + [2 + 2 * i for i in range(d)] + [3 + 2 * i for i in range(d)])
    longest = [index.shape[1] for index in indices]
    ctx.node("Reshape", [moved, _ints(ctx, [0, 0] + list(g.out) + [product(longest)])],
             [flat])
    position = 0
    for dim, index in enumerate(indices):
        shape = [1] * (2 * d)
        shape[dim], shape[d + dim] = index.shape
        position = position * g.sizes[dim] + index.reshape(shape)
    return flat, position.reshape(tuple(g.out) + (-1,))


def _windowed_max(ctx, x, g, out, mask=None):
    """Max over each window of ``g`` by gathering them; ``mask``: also the flat spatial
    index of each window's first maximum (int32), as the executor gives it."""
    _known(g.sizes, "adaptive or ceil_mode max pooling")
    flat, position = _gathered_windows(ctx, x, g)
    ctx.node("ReduceMax", [flat], [out], axes=[-1], keepdims=0)
    if mask is None:
        return
    tap, table, shape, picked, index = (ctx.tmp(n) for n in
                                        ("tap", "table", "dims", "picked", "index"))
    ctx.node("ArgMax", [flat], [tap], axis=-1, keepdims=1, select_last_index=0)
    ctx.node("Shape", [flat], [shape])
    ctx.node("Expand", [ctx.const(position.astype("int64"), "positions"), shape], [table])
    ctx.node("GatherElements", [table, tap], [picked], axis=-1)
    ctx.node("Squeeze", [picked, _ints(ctx, [-1], "axes")], [index])
    ctx.node("Cast", [index], [mask], to=ctx.onnx.TensorProto.INT32)


def _window_matrices(g, attrs, dtype):
    """Average pooling as one [out, size] matrix per spatial dim: 1 / the executor's
    divisor where a position lies in an output's window (the divisor is a product of one
    count per dim, so it folds into the matrices)."""
    exclusive = attrs.get("exclusive", True) or g.adaptive
    matrices = []
    for dim, size in enumerate(g.sizes):
        m = np.zeros((g.out[dim], size))
        for i, (start, end, extent) in enumerate(g.bounds(dim)):
            m[i, start:end] = 1.0 / ((end - start) if exclusive else extent)
        matrices.append(m.astype(dtype))
    return matrices


def _contracted(ctx, x, g, matrices, out):
    """x [N, C, *S] with each spatial dim contracted against its [o, s] matrix: the last
    by a MatMul from the right, every earlier one by a MatMul from the left over the dims
    after it flattened."""
    _known(g.sizes, "adaptive or ceil_mode average pooling")
    d = len(g.sizes)
    current = out if d == 1 else ctx.tmp("pooled")
    ctx.node("MatMul", [x, ctx.const(matrices[-1].T, "window")], [current])
    done = [g.out[-1]]
    for dim in reversed(range(d - 1)):
        lead = list(g.sizes[:dim])
        flat, product_ = ctx.tmp("flat"), ctx.tmp("pooled")
        back = out if dim == 0 else ctx.tmp("pooled")
        ctx.node("Reshape", [current, _ints(ctx, [0, 0] + lead + [g.sizes[dim],
                                                                  product(done)])], [flat])
        ctx.node("MatMul", [ctx.const(matrices[dim], "window"), flat], [product_])
        done = [g.out[dim]] + done
        ctx.node("Reshape", [product_, _ints(ctx, [0, 0] + lead + done)], [back])
        current = back


def _pool_nd(op, ctx, x, out, g, is_max):
    """Pool channel-first ``x`` into ``out`` by ``g``: ONNX's pools where their windows
    and divisors are the executor's, its own construction otherwise."""
    attrs = op.attrs
    if g.global_pooling or (g.adaptive and all(k == 1 for k in g.ksizes)):
        ctx.node("GlobalMaxPool" if is_max else "GlobalAveragePool", [x], [out])
        return
    same_unknown = attrs.get("padding_algorithm") == "SAME" and any(s < 0 for s in g.sizes)
    if g.adaptive or attrs.get("ceil_mode"):
        if is_max:
            _windowed_max(ctx, x, g, out)
        else:
            _contracted(ctx, x, g, _window_matrices(g, attrs, ctx.dtype(x)), out)
        return
    pool = dict(kernel_shape=list(g.ksizes), strides=g.strides)
    if same_unknown:
        pool["auto_pad"] = "SAME_UPPER"
    else:
        pool["pads"] = _pads(g.pads)
    if is_max:
        ctx.node("MaxPool", [x], [out], **pool)
        return
    exclusive = bool(attrs.get("exclusive", True))
    if exclusive or all(p0 == p1 for p0, p1 in g.pads) and not same_unknown:
        # ONNX counts both pads; the executor's divisor stops at size + the leading pad,
        # which is the same window when the pads are equal
        ctx.node("AveragePool", [x], [out], count_include_pad=0 if exclusive else 1, **pool)
        return
    _contracted(ctx, x, g, _window_matrices(g, attrs, ctx.dtype(x)), out)


@converter("pool2d", "pool3d")
def _pool(op, ctx):
    x, out = _in(op, "X"), _out(op, "Out")
    last = is_channel_last(op.attrs)
    shape = _channel_first_shape(ctx.shape(x), last)
    g = PoolGeometry(op.type, op.attrs, shape[2:])
    is_max = op.attrs.get("pooling_type") == "max"
    if op.type == "pool2d" and g.adaptive and is_max and any(k != 1 for k in g.ksizes):
        raise NotConvertible("pool2d's adaptive max pooling: its kernel takes ksize windows "
                             "at the strides, not adaptive bins (max_pool2d_with_index is "
                             "the adaptive max)")
    xi, yo, finish = _channel_first(ctx, x, out, last)
    _pool_nd(op, ctx, xi, yo, g, is_max)
    finish()


@converter("max_pool2d_with_index", "max_pool3d_with_index")
def _max_pool_with_index(op, ctx):
    """MaxPool, whose Indices count over the whole tensor: Mask is their remainder by the
    spatial volume. Adaptive bins gather their windows instead."""
    x, out, mask = _in(op, "X"), _out(op, "Out"), _out(op, "Mask")
    shape = ctx.shape(x)
    g = PoolGeometry(op.type, op.attrs, shape[2:], with_index=True)
    if g.adaptive:
        _windowed_max(ctx, x, g, out, mask)
        return
    if not mask:
        ctx.node("MaxPool", [x], [out], kernel_shape=list(g.ksizes), strides=g.strides,
                 pads=_pads(g.pads))
        return
    _known(shape[2:], "the spatial index of the maximum (Mask)")
    indices, within = ctx.tmp("indices"), ctx.tmp("within")
    ctx.node("MaxPool", [x], [out, indices], kernel_shape=list(g.ksizes), strides=g.strides,
             pads=_pads(g.pads))
    ctx.node("Mod", [indices, ctx.const(np.array(product(shape[2:]), "int64"), "volume")],
             [within])
    ctx.node("Cast", [within], [mask], to=ctx.onnx.TensorProto.INT32)


# --- resizing ---------------------------------------------------------------------------------
_RESIZE_MODES = {"bilinear": "linear", "trilinear": "linear", "nearest": "nearest",
                 "bicubic": "cubic"}


def _resize_sizes(op, ctx, x, shape):
    """The int64 [rank] sizes of the Resize, by the executor's precedence: SizeTensor,
    OutSize, the Scale input, the scale attribute, out_d/out_h/out_w. Returns (name,
    the spatial sizes when known statically, else None)."""
    n = len(shape) - 2
    spatial = None
    scale = float(op.attrs.get("scale", 0.0) or 0.0)
    if op.inputs.get("SizeTensor"):
        joined = _value(ctx, "Concat", list(op.inputs["SizeTensor"]), axis=0)
        sizes = _value(ctx, "Cast", [joined], to=ctx.onnx.TensorProto.INT64)
    elif op.inputs.get("OutSize"):
        sizes = _value(ctx, "Cast", [_in(op, "OutSize")], to=ctx.onnx.TensorProto.INT64)
    elif op.inputs.get("Scale") or (scale > 0 and any(s < 0 for s in shape[2:])):
        # int(size * scale), in double as the host computes it
        double = ctx.onnx.TensorProto.DOUBLE
        factor = _value(ctx, "Cast", [_in(op, "Scale")], to=double) if \
            op.inputs.get("Scale") else ctx.const(np.array([scale], "float64"), "scale")
        whole = _value(ctx, "Shape", [x])
        tail = _value(ctx, "Slice", [whole, _ints(ctx, [2], "start"),
                                     _ints(ctx, [len(shape)], "end")])
        scaled = _value(ctx, "Mul", [_value(ctx, "Cast", [tail], to=double), factor])
        sizes = _value(ctx, "Cast", [_value(ctx, "Floor", [scaled])],
                       to=ctx.onnx.TensorProto.INT64)
    else:
        names = ("out_d", "out_h", "out_w")[3 - n:]
        spatial = [int(op.attrs.get(name, -1)) for name in names]
        if scale > 0:
            spatial = [int(s * scale) for s in shape[2:]]
        if all(d >= 0 for d in shape[:2]):
            return _ints(ctx, list(shape[:2]) + spatial, "sizes"), spatial
        sizes = _ints(ctx, spatial, "sizes")
    whole, lead, full = ctx.tmp("dims"), ctx.tmp("lead"), ctx.tmp("full_sizes")
    ctx.node("Shape", [x], [whole])
    ctx.node("Slice", [whole, _ints(ctx, [0], "start"), _ints(ctx, [2], "end")], [lead])
    ctx.node("Concat", [lead, sizes], [full], axis=0)
    return full, spatial


@converter("bilinear_interp", "nearest_interp", "trilinear_interp", "bicubic_interp")
def _interp(op, ctx):
    """Resize with the executor's source coordinates: align_corners maps the corner
    pixels (ONNX's align_corners); without it, linear align_mode 0 and cubic take
    half-pixel centres, linear align_mode 1 and nearest the top-left corners (asymmetric).
    Nearest rounds half up with align_corners (round_prefer_ceil) and truncates without
    (floor). An output size 1 samples position 0, as pytorch_half_pixel does."""
    x, out = _in(op, "X"), _out(op, "Out")
    method = op.type[:-len("_interp")]
    last = op.attrs.get("data_layout", "NCHW") in ("NHWC", "NDHWC")
    shape = _channel_first_shape(ctx.shape(x), last)
    aligned = bool(op.attrs.get("align_corners", True))
    attrs = {"mode": _RESIZE_MODES[method]}
    if aligned:
        coordinates = "align_corners"
    elif method == "bicubic" or (method != "nearest" and op.attrs.get("align_mode", 1) == 0):
        # linear: the executor also clamps a negative source to 0, as ONNX's linear does
        coordinates = "pytorch_half_pixel" if method != "bicubic" else "half_pixel"
    else:
        coordinates = "asymmetric"
    attrs["coordinate_transformation_mode"] = coordinates
    if method == "nearest":
        attrs["nearest_mode"] = "round_prefer_ceil" if aligned else "floor"
    if method == "bicubic":
        attrs.update(cubic_coeff_a=-0.75, exclude_outside=0)
    xi, yo, finish = _channel_first(ctx, x, out, last)
    sizes, spatial = _resize_sizes(op, ctx, xi, shape)
    note = None
    if method == "bicubic" and not aligned and spatial is not None \
            and all(d >= 0 for d in shape[2:]) and ctx.dtype(x).kind == "f":
        # Fluid truncates the source toward 0 (an upsampling's first rows take base 0 and a
        # negative fraction) where ONNX's cubic Resize floors it: with the sizes known, the
        # executor's own interpolation matrices, one MatMul per axis, give its values
        dtype = ctx.dtype(x)
        rows = cubic_matrix(shape[2], spatial[0], False).astype(dtype)
        cols = cubic_matrix(shape[3], spatial[1], False).T.astype(dtype)
        tall = _value(ctx, "MatMul", [ctx.const(rows, "cubic_rows"), xi])
        ctx.node("MatMul", [tall, ctx.const(cols, "cubic_columns")], [yo])
        finish()
        return None
    if method == "bicubic" and not aligned:
        # the executor's source for an output of size 1 is -0.5, ONNX's half_pixel the
        # input's centre
        if spatial is not None and 1 in spatial:
            raise NotConvertible("bicubic without align_corners to an output size of 1 "
                                 "(the executor samples at -0.5, ONNX at the centre)")
        if spatial is None:
            note = ("an output size of 1 read at run time samples the input's centre, the "
                    "executor position -0.5")
    ctx.node("Resize", [xi, "", "", sizes], [yo], **attrs)
    finish()
    return note


# --- rearrangements ---------------------------------------------------------------------------
@converter("pixel_shuffle")
def _pixel_shuffle(op, ctx):
    """Out[n, c, h*r + i, w*r + j] = X[n, c*r*r + i*r + j, h, w]: DepthToSpace's CRD
    order."""
    x, out = _in(op, "X"), _out(op, "Out")
    xi, yo, finish = _channel_first(ctx, x, out, op.attrs.get("data_format") == "NHWC")
    ctx.node("DepthToSpace", [xi], [yo], blocksize=int(op.attrs.get("upscale_factor", 1)),
             mode="CRD")
    finish()


@converter("shuffle_channel")
def _shuffle_channel(op, ctx):
    x, out = _in(op, "X"), _out(op, "Out")
    group = int(op.attrs.get("group", 1))
    c = ctx.shape(x)[1]
    _known([c], "shuffle_channel's channel split")
    grouped, swapped, shape = ctx.tmp("grouped"), ctx.tmp("swapped"), ctx.tmp("dims")
    ctx.node("Reshape", [x, _ints(ctx, [0, group, c // group, -1])], [grouped])
    ctx.node("Transpose", [grouped], [swapped], perm=[0, 2, 1, 3])
    ctx.node("Shape", [x], [shape])
    ctx.node("Reshape", [swapped, shape], [out])


@converter("temporal_shift")
def _temporal_shift(op, ctx):
    """The clip [N, T, C, H, W] padded by one zero segment on each side of T: channels
    [0, c1) read segment t - 1, [c1, c2) segment t + 1, the rest segment t."""
    x, out = _in(op, "X"), _out(op, "Out")
    last = op.attrs.get("data_format", "NCHW") == "NHWC"
    _, c, h, w = _channel_first_shape(ctx.shape(x), last)
    _known([c, h, w], "temporal_shift's channel split")
    t = int(op.attrs.get("seg_num", 1))
    ratio = float(op.attrs.get("shift_ratio", 0.25))
    c1, c2 = int(c * ratio), int(c * 2 * ratio)
    xi, yo, finish = _channel_first(ctx, x, out, last)
    clip, padded = ctx.tmp("clip"), ctx.tmp("padded")
    ctx.node("Reshape", [xi, _ints(ctx, [-1, t, c, h, w])], [clip])
    ctx.node("Pad", [clip, _ints(ctx, [0, 1, 0, 0, 0, 0, 1, 0, 0, 0], "pads")], [padded])
    parts = []
    for start, lo, hi in ((0, 0, c1), (2, c1, c2), (1, c2, c)):
        if hi > lo:
            part = ctx.tmp("part")
            ctx.node("Slice", [padded, _ints(ctx, [start, lo], "starts"),
                               _ints(ctx, [start + t, hi], "ends"),
                               _ints(ctx, [1, 2], "axes")], [part])
            parts.append(part)
    shifted = ctx.tmp("shifted")
    ctx.node("Concat", parts, [shifted], axis=2)
    ctx.node("Reshape", [shifted, _ints(ctx, [-1, c, h, w])], [yo])
    finish()


@converter("unfold")
def _unfold(op, ctx):
    """im2col as one Gather: the padded map's positions of every (tap, block) pair, taps
    (i, j) in rows and blocks row-major in columns."""
    x, out = _in(op, "X"), _out(op, "Y")
    _, c, h, w = ctx.shape(x)
    _known([c, h, w], "unfold's block positions")
    top, left, bottom, right = op.attrs.get("paddings", [0, 0, 0, 0])
    g = ConvGeometry(op.type, {"strides": op.attrs.get("strides", [1, 1]),
                               "dilations": op.attrs.get("dilations", [1, 1]),
                               "paddings": [top, bottom, left, right]},
                     (h, w), op.attrs["kernel_sizes"])
    (kh, kw), (oh, ow) = g.ksizes, g.out
    wide = w + left + right
    rows = (np.arange(kh) * g.dilations[0])[:, None, None, None] + \
        (np.arange(oh) * g.strides[0])[None, None, :, None]
    cols = (np.arange(kw) * g.dilations[1])[None, :, None, None] + \
        (np.arange(ow) * g.strides[1])[None, None, None, :]
    positions = (rows * wide + cols).reshape(kh * kw, oh * ow)
    padded, flat, picked = ctx.tmp("padded"), ctx.tmp("flat"), ctx.tmp("picked")
    ctx.node("Pad", [x, _ints(ctx, [0, 0, top, left, 0, 0, bottom, right], "pads")],
             [padded])
    ctx.node("Reshape", [padded, _ints(ctx, [0, c, -1])], [flat])
    ctx.node("Gather", [flat, ctx.const(positions, "positions")], [picked], axis=2)
    ctx.node("Reshape", [picked, _ints(ctx, [0, c * kh * kw, oh * ow])], [out])


# --- sampling ---------------------------------------------------------------------------------
@converter("grid_sampler")
def _grid_sampler(op, ctx):
    mode = op.attrs.get("mode", "bilinear")
    padding = op.attrs.get("padding_mode", "zeros")
    if mode not in ("bilinear", "nearest") or padding not in ("zeros", "border"):
        raise NotConvertible(f"mode {mode!r} with padding_mode {padding!r}")
    ctx.node("GridSample", [_in(op, "X"), _in(op, "Grid")], [_out(op, "Output")], mode=mode,
             padding_mode=padding, align_corners=int(bool(op.attrs.get("align_corners", True))))


@converter("affine_grid")
def _affine_grid(op, ctx):
    """Output [N, H, W, 2] = the base grid [H*W, 3] of (x, y, 1) times Theta^T; a
    constant for a fixed output_shape, built from OutputShape at run time otherwise."""
    theta, out = _in(op, "Theta"), _out(op, "Output")
    aligned = bool(op.attrs.get("align_corners", True))
    dtype = ctx.dtype(theta)
    if op.inputs.get("OutputShape"):
        base, shape = _runtime_base_grid(ctx, _in(op, "OutputShape"), aligned, dtype)
    else:
        _, _, h, w = op.attrs["output_shape"]

        def line(size):  # the executor's linspace(-1, 1), times (size-1)/size unaligned
            points = np.linspace(-1.0, 1.0, size, dtype=dtype) if size > 1 else \
                np.zeros(1, dtype)
            return points if aligned else points * (size - 1) / size
        grid = np.ones((h, w, 3), dtype)
        grid[:, :, 0], grid[:, :, 1] = line(w)[None, :], line(h)[:, None]
        base, shape = ctx.const(grid.reshape(h * w, 3), "base"), _ints(ctx, [0, h, w, 2])
    flipped = _value(ctx, "Transpose", [theta], perm=[0, 2, 1])
    ctx.node("Reshape", [_value(ctx, "MatMul", [base, flipped]), shape], [out])


def _runtime_base_grid(ctx, output_shape, aligned, dtype):
    """(base grid [H*W, 3], the output's shape [0, H, W, 2]) for H, W read from
    OutputShape [N, C, H, W]: positions -1 + 2k / (size - 1) (0 for a size of 1), or
    (2k + 1) / size - 1 without align_corners."""
    to = ctx.onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    dims = _value(ctx, "Cast", [output_shape], to=ctx.onnx.TensorProto.INT64)
    one = ctx.const(np.array(1, dtype), "one")
    lines, sizes = [], []
    for axis in (3, 2):  # x runs along W, y along H
        size = _value(ctx, "Slice", [dims, _ints(ctx, [axis], "start"),
                                     _ints(ctx, [axis + 1], "end")])
        steps = _value(ctx, "Range", [ctx.const(np.array(0, "int64"), "zero"),
                                      _value(ctx, "Squeeze", [size]),
                                      ctx.const(np.array(1, "int64"), "step")])
        k = _value(ctx, "Cast", [steps], to=to)
        extent = _value(ctx, "Cast", [size], to=to)
        twice = _value(ctx, "Mul", [k, ctx.const(np.array(2, dtype), "two")])
        if aligned:
            gaps = _value(ctx, "Max", [_value(ctx, "Sub", [extent, one]), one])
            points = _value(ctx, "Sub", [_value(ctx, "Div", [twice, gaps]), one])
            single = _value(ctx, "Equal", [extent, one])
            points = _value(ctx, "Where", [single, ctx.const(np.array(0, dtype), "zero_f"),
                                           points])
        else:
            points = _value(ctx, "Sub", [_value(ctx, "Div", [
                _value(ctx, "Add", [twice, one]), extent]), one])
        lines.append(points)
        sizes.append(size)
    width, height = sizes
    hw = _value(ctx, "Concat", [height, width], axis=0)
    xs = _value(ctx, "Expand", [_value(ctx, "Unsqueeze", [lines[0], _ints(ctx, [0], "axes")]),
                                hw])
    ys = _value(ctx, "Expand", [_value(ctx, "Unsqueeze", [lines[1], _ints(ctx, [1], "axes")]),
                                hw])
    ones = _value(ctx, "ConstantOfShape", [hw],
                  value=ctx.onnx.numpy_helper.from_array(np.array([1], dtype)))
    stacked = _value(ctx, "Concat", [_value(ctx, "Unsqueeze", [v, _ints(ctx, [-1], "axes")])
                                     for v in (xs, ys, ones)], axis=-1)
    base = _value(ctx, "Reshape", [stacked, _ints(ctx, [-1, 3], "rows")])
    shape = _value(ctx, "Concat", [_ints(ctx, [0], "batch"), height, width,
                                   _ints(ctx, [2], "pair")], axis=0)
    return base, shape


def _roi_batch_indices(op, ctx, count):
    """Each ROI's image [R] (int64), from RoisNum (ROIs per image) or RoisLod (offsets):
    the number of images whose ROIs end at or before it."""
    if op.inputs.get("RoisNum"):
        counts, ends = ctx.tmp("counts"), ctx.tmp("ends")
        ctx.node("Cast", [_in(op, "RoisNum")], [counts], to=ctx.onnx.TensorProto.INT64)
        ctx.node("CumSum", [counts, ctx.const(np.array(0, "int64"), "axis")], [ends])
    elif op.inputs.get("RoisLod"):
        offsets, ends = ctx.tmp("offsets"), ctx.tmp("ends")
        ctx.node("Cast", [_in(op, "RoisLod")], [offsets], to=ctx.onnx.TensorProto.INT64)
        ctx.node("Slice", [offsets, _ints(ctx, [1], "start"),
                           _ints(ctx, [np.iinfo(np.int64).max], "end")], [ends])
    else:
        raise NotConvertible("ROIs assigned to images by their LoD (give RoisNum or RoisLod)")
    rois, positions, column, row, passed, as_int, ids = (ctx.tmp(n) for n in (
        "rois_dims", "positions", "column", "row", "passed", "passed_int", "batch_ids"))
    ctx.node("Shape", [count], [rois])
    ctx.node("Gather", [rois, ctx.const(np.array(0, "int64"), "first")], [row])
    ctx.node("Range", [ctx.const(np.array(0, "int64"), "zero"), row,
                       ctx.const(np.array(1, "int64"), "one")], [positions])
    ctx.node("Unsqueeze", [positions, _ints(ctx, [1], "axes")], [column])
    ctx.node("GreaterOrEqual", [column, ends], [passed])
    ctx.node("Cast", [passed], [as_int], to=ctx.onnx.TensorProto.INT64)
    ctx.node("ReduceSum", [as_int, _ints(ctx, [1], "axes")], [ids], keepdims=0)
    return ids


@converter("roi_align")
def _roi_align(op, ctx):
    """RoiAlign (avg): aligned is half_pixel, unaligned output_half_pixel (ROIs at least
    1 x 1); sampling_ratio -1 is ONNX's adaptive 0."""
    x, rois, out = _in(op, "X"), _in(op, "ROIs"), _out(op, "Out")
    ids = _roi_batch_indices(op, ctx, rois)
    aligned = bool(op.attrs.get("aligned", False))
    ctx.node("RoiAlign", [x, rois, ids], [out], mode="avg",
             output_height=int(op.attrs.get("pooled_height", 1)),
             output_width=int(op.attrs.get("pooled_width", 1)),
             sampling_ratio=max(int(op.attrs.get("sampling_ratio", -1)), 0),
             spatial_scale=float(op.attrs.get("spatial_scale", 1.0)),
             coordinate_transformation_mode="half_pixel" if aligned else "output_half_pixel")


@converter("deformable_conv", "deformable_conv_v1")
def _deformable_conv(op, ctx):
    """The executor's construction: every tap of every output position samples the input
    bilinearly at its place plus its offset (GridSample, zeros outside the map, on each
    deformable group's channels), times the mask, then the samples are multiplied with the
    filter as im2col columns, one MatMul per group."""
    x, offset, w = (_in(op, s) for s in ("Input", "Offset", "Filter"))
    out = _out(op, "Output")
    n, c, h, wd = ctx.shape(x)
    m, _, kh, kw = ctx.shape(w)
    _known([c, h, wd], "deformable sampling")
    sh, sw = op.attrs.get("strides", [1, 1])
    ph, pw = op.attrs.get("paddings", [0, 0])
    dh, dw = op.attrs.get("dilations", [1, 1])
    groups = int(op.attrs.get("groups", 1) or 1)
    dg = int(op.attrs.get("deformable_groups", 1) or 1)
    oh = (h + 2 * ph - (dh * (kh - 1) + 1)) // sh + 1
    ow = (wd + 2 * pw - (dw * (kw - 1) + 1)) // sw + 1
    k = kh * kw
    dtype = ctx.dtype(x)
    # the regular sampling places [K, oh, ow], as unaligned GridSample coordinates
    # (2 p + 1) / size - 1, whose offsets scale by 2 / size
    rows = (np.arange(kh) * dh).repeat(kw)[:, None, None] + (np.arange(oh) * sh - ph)[
        None, :, None]
    cols = np.tile(np.arange(kw) * dw, kh)[:, None, None] + (np.arange(ow) * sw - pw)[
        None, None, :]
    base = np.stack([np.broadcast_to((2 * cols + 1) / wd - 1, (k, oh, ow)),
                     np.broadcast_to((2 * rows + 1) / h - 1, (k, oh, ow))], axis=-1)
    pairs, flipped, swapped, scaled, grid, flat_grid, grouped_x, sampled, values = (
        ctx.tmp(s) for s in ("pairs", "flipped", "swapped", "scaled", "grid", "flat_grid",
                             "grouped_x", "sampled", "values"))
    # Offset [N, dg*K*2, oh, ow] holds (dy, dx) per tap: to [N, dg, K, oh, ow, (dx, dy)]
    ctx.node("Reshape", [offset, _ints(ctx, [-1, dg, k, 2, oh, ow])], [pairs])
    ctx.node("Gather", [pairs, _ints(ctx, [1, 0], "dx_dy")], [flipped], axis=3)
    ctx.node("Transpose", [flipped], [swapped], perm=[0, 1, 2, 4, 5, 3])
    ctx.node("Mul", [swapped, ctx.const(np.array([2.0 / wd, 2.0 / h], dtype), "steps")],
             [scaled])
    ctx.node("Add", [scaled, ctx.const(base.astype(dtype), "base")], [grid])
    ctx.node("Reshape", [grid, _ints(ctx, [-1, k * oh, ow, 2])], [flat_grid])
    ctx.node("Reshape", [x, _ints(ctx, [-1, c // dg, h, wd])], [grouped_x])
    ctx.node("GridSample", [grouped_x, flat_grid], [sampled], mode="bilinear",
             padding_mode="zeros", align_corners=0)
    # [N*dg, C/dg, K*oh, ow] -> [N, dg, C/dg, K, oh*ow]
    ctx.node("Reshape", [sampled, _ints(ctx, [-1, dg, c // dg, k, oh * ow])], [values])
    if op.type == "deformable_conv":
        mask, modulated = ctx.tmp("mask"), ctx.tmp("modulated")
        ctx.node("Reshape", [_in(op, "Mask"), _ints(ctx, [-1, dg, 1, k, oh * ow])], [mask])
        ctx.node("Mul", [values, mask], [modulated])
        values = modulated
    columns, weights, product_ = ctx.tmp("columns"), ctx.tmp("weights"), ctx.tmp("product")
    ctx.node("Reshape", [values, _ints(ctx, [-1, groups, c // groups * k, oh * ow])],
             [columns])
    ctx.node("Reshape", [w, _ints(ctx, [groups, m // groups, c // groups * k])], [weights])
    ctx.node("MatMul", [weights, columns], [product_])
    ctx.node("Reshape", [product_, _ints(ctx, [-1, m, oh, ow])], [out])


# --- detection --------------------------------------------------------------------------------
@converter("yolo_box")
def _yolo_box(op, ctx):
    """The executor's decoding, in double as it computes: X [N, A (5 + C), H, W] viewed
    as [N, A, 5 + C, H, W]; centres (cell + s sigmoid(t) - (s - 1) / 2) * image / grid,
    sizes e^t * anchor * image / (downsample * grid), confidence sigmoid(t_obj), boxes and
    scores of confidence under conf_thresh zero."""
    x, img_size = _in(op, "X"), _in(op, "ImgSize")
    a = op.attrs
    anchors = np.array(a["anchors"], "float64").reshape(-1, 2)
    count, classes = len(anchors), int(a["class_num"])
    scale = float(a.get("scale_x_y", 1.0))
    double = ctx.onnx.TensorProto.DOUBLE
    t = {}
    node = functools.partial(_value, ctx)

    def value(v):
        return ctx.const(np.array(v, "float64"), "value")

    wide = node("Cast", [x], to=double)
    dims = node("Shape", [x])
    grid_hw = node("Slice", [dims, _ints(ctx, [2], "start"), _ints(ctx, [4], "end")])
    shape = node("Concat", [_ints(ctx, [0, count, 5 + classes], "lead"), grid_hw], axis=0)
    values = node("Reshape", [wide, shape])
    for i, name in enumerate(("x", "y", "w", "h", "obj")):
        t[name] = node("Gather", [values, ctx.const(np.array(i, "int64"), "field")], axis=2)
    sizes = node("Cast", [img_size], to=double)
    image = {}
    for i, name in enumerate(("h", "w")):  # ImgSize rows are (height, width): [N, 1, 1, 1]
        column = node("Gather", [sizes, ctx.const(np.array(i, "int64"), "field")], axis=1)
        image[name] = node("Reshape", [column, _ints(ctx, [-1, 1, 1, 1], "column")])
    grid = {}
    for i, name in enumerate(("h", "w")):
        extent = node("Gather", [dims, ctx.const(np.array(2 + i, "int64"), "axis")])
        steps = node("Range", [ctx.const(np.array(0, "int64"), "zero"), extent,
                               ctx.const(np.array(1, "int64"), "one")])
        cells = node("Cast", [steps], to=double)
        grid[name] = node("Reshape", [cells, _ints(ctx, [-1, 1] if name == "h" else [-1],
                                                   "cells")])
        grid[name + "_size"] = node("Cast", [extent], to=double)
    centre = {}
    for axis, size in (("x", "w"), ("y", "h")):
        shifted = node("Mul", [node("Sigmoid", [t[axis]]), value(scale)])
        shifted = node("Add", [node("Add", [grid[size], shifted]), value(-0.5 * (scale - 1))])
        centre[axis] = node("Div", [node("Mul", [shifted, image[size]]), grid[size + "_size"]])
    extent = {}
    for k, (field, size) in enumerate((("w", "w"), ("h", "h"))):
        anchor = value(anchors[:, k].reshape(1, count, 1, 1))
        stretched = node("Mul", [node("Mul", [node("Exp", [t[field]]), anchor]), image[size]])
        cells = node("Mul", [grid[size + "_size"], value(float(a.get("downsample_ratio", 32)))])
        extent[field] = node("Div", [stretched, cells])
    half_w = node("Div", [extent["w"], value(2.0)])
    half_h = node("Div", [extent["h"], value(2.0)])
    corners = [node("Sub", [centre["x"], half_w]), node("Sub", [centre["y"], half_h]),
               node("Add", [centre["x"], half_w]), node("Add", [centre["y"], half_h])]
    if a.get("clip_bbox", True):
        corners[0] = node("Max", [corners[0], value(0.0)])
        corners[1] = node("Max", [corners[1], value(0.0)])
        corners[2] = node("Min", [corners[2], node("Sub", [image["w"], value(1.0)])])
        corners[3] = node("Min", [corners[3], node("Sub", [image["h"], value(1.0)])])
    conf = node("Sigmoid", [t["obj"]])
    keep = node("GreaterOrEqual", [conf, value(float(a.get("conf_thresh", 0.01)))])
    stacked = node("Concat", [node("Unsqueeze", [c, _ints(ctx, [-1], "axes")])
                              for c in corners], axis=-1)
    kept = node("Where", [node("Unsqueeze", [keep, _ints(ctx, [-1], "axes")]), stacked,
                          value(0.0)])
    boxes = node("Reshape", [kept, _ints(ctx, [0, -1, 4], "boxes")])
    ctx.node("Cast", [boxes], [_out(op, "Boxes")], to=ctx.onnx_type(x))
    if not _out(op, "Scores"):
        return
    logits = node("Slice", [values, _ints(ctx, [5], "start"), _ints(ctx, [5 + classes], "end"),
                            _ints(ctx, [2], "axes")])
    conf_c = node("Unsqueeze", [conf, _ints(ctx, [2], "axes")])
    scored = node("Mul", [conf_c, node("Sigmoid", [logits])])
    chosen = node("Where", [node("Unsqueeze", [keep, _ints(ctx, [2], "axes")]), scored,
                            value(0.0)])
    moved = node("Transpose", [chosen], perm=[0, 1, 3, 4, 2])
    scores = node("Reshape", [moved, _ints(ctx, [0, -1, classes], "scores")])
    ctx.node("Cast", [scores], [_out(op, "Scores")], to=ctx.onnx_type(x))
