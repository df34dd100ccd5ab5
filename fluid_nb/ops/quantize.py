"""Simulated ("fake") quantisation, as Fluid 1.8's quantisation-aware training inserts it.

A ``fake_quantize_*`` op maps a float tensor to the integers of a ``bit_length``-bit grid,
still stored as floats: with ``range = 2^(bit_length-1) - 1`` and a scale ``s``,

    Out = round(range * clip(X, -s, s) / s)

(``round`` halves away from zero; ``1 / s`` is ``1 / (s + 1e-6)`` for ``s <= 1e-30``). They
differ in where ``s`` comes from: the tensor's own ``max|X|`` (``abs_max``), one per slice
along dim 0 (``channel_wise``), the largest ``max|X|`` of the last ``window_size`` steps
(``range_abs_max``), or a moving average (``moving_average_abs_max``:
``accum' = r*accum + max|X|``, ``state' = r*state + 1``, ``s = accum' / state'``).
``fake_dequantize_*`` and ``dequantize_*`` map the grid back: ``Out = s * X / range``.
With ``is_test`` the scale is the ``InScale`` input and the state is left as it is.

As in Fluid 1.8 none of these ops has a grad op: the quantisation passes insert them into a
program that already has its backward and point the grad ops at their outputs, so the
gradient passes straight through them.
"""
from ..errors import InvalidArgument, expected
from ..framework.registry import def_op, no_gradient
from ..tensor.dtypes import VarType
from ..tensor.tensor import LoDTensor
from ..tensor.transfer import host_scalar

_FLOATS = (VarType.FP32, VarType.FP64)


def _bits_checker(bits):
    if not 1 <= bits <= 16:
        return "in [1, 16]"
    return None


_BITS = {"bit_length": ("int", 8, _bits_checker)}


def bin_count(bits):
    """The largest integer of a signed ``bits``-bit grid: 2^(bits-1) - 1."""
    return (1 << (bits - 1)) - 1


def _round_half_away(xp, v):
    """round() as C's: halves go away from zero (NumPy's rint goes to the even neighbour)."""
    t = xp.trunc(v)
    return xp.where(xp.abs(v - t) == 0.5, t + xp.sign(v), xp.rint(v))


def _inverse(xp, s):
    tiny = s <= 1e-30
    return xp.where(tiny, 1 / (s + 1e-6), 1 / xp.where(tiny, 1, s))


def clip_quantize(xp, x, s, bins):
    """round(bins * clip(x, -s, s) / s), ``s`` broadcast against ``x``."""
    s = s.astype(x.dtype)
    return _round_half_away(xp, (bins * _inverse(xp, s)).astype(x.dtype)
                            * xp.clip(x, -s, s)).astype(x.dtype)


def _abs_max(xp, x):
    return xp.abs(x).max().reshape(1) if x.size else xp.zeros((1,), x.dtype)


def _check_float(ctx, slot="X"):
    dtype = ctx.input_dtype(slot)
    ctx.check(dtype in _FLOATS, f"input '{slot}' dtype", "float32 or float64", dtype.name)


def _quant_infer(ctx):
    _check_float(ctx)
    x, dtype = ctx.input_shape("X"), ctx.input_dtype("X")
    ctx.set_output("Out", x, dtype)
    ctx.set_output("OutScale", (1,), dtype)
    ctx.share_lod("X", "Out")


# --- fake_quantize_abs_max, fake_channel_wise_quantize_abs_max -------------------------------
def _abs_max_quant(ctx, x):
    xp = ctx.xp
    scale = _abs_max(xp, x)
    return clip_quantize(xp, x, scale, bin_count(ctx.attrs["bit_length"])), scale


def_op("fake_quantize_abs_max", inputs=["X"], outputs=["Out", "OutScale"], attrs=_BITS,
       infer_shape=_quant_infer, grad=no_gradient, kernel=_abs_max_quant,
       doc="OutScale = max(|X|); Out = round(X / OutScale * (2^(bit_length-1) - 1)).")


def _channel_infer(ctx):
    _check_float(ctx)
    x, dtype = ctx.input_shape("X"), ctx.input_dtype("X")
    ctx.check(len(x) >= 1, "input 'X'", "a tensor of rank >= 1", list(x))
    ctx.set_output("Out", x, dtype)
    ctx.set_output("OutScale", (x[0],), dtype)
    ctx.share_lod("X", "Out")


def _channel_quant(ctx, x):
    xp = ctx.xp
    if x.ndim < 1:
        raise InvalidArgument(expected("fake_channel_wise_quantize_abs_max", "input 'X'",
                                       "a tensor of rank >= 1", list(x.shape)))
    flat = xp.abs(x.reshape(x.shape[0], -1))
    scale = (flat.max(axis=1) if flat.shape[1] else xp.zeros(x.shape[0], x.dtype))
    scale = scale.astype(x.dtype)
    shaped = scale.reshape((-1,) + (1,) * (x.ndim - 1))
    return clip_quantize(xp, x, shaped, bin_count(ctx.attrs["bit_length"])), scale


def_op("fake_channel_wise_quantize_abs_max", inputs=["X"], outputs=["Out", "OutScale"],
       attrs=_BITS, infer_shape=_channel_infer, grad=no_gradient, kernel=_channel_quant,
       doc="OutScale[c] = max(|X[c]|) for each c along dim 0; "
           "Out[c] = round(X[c] / OutScale[c] * (2^(bit_length-1) - 1)).")


# --- fake_quantize_range_abs_max -------------------------------------------------------------
def _range_infer(ctx):
    _quant_infer(ctx)
    window = ctx.attr("window_size")
    ctx.check(window > 0, "attribute 'window_size'", "> 0", window)
    ctx.set_output("OutScales", (window,), ctx.input_dtype("X"))


def _held(ctx, slot, size, like):
    """The value output ``slot`` already holds in the scope (the scale window kept from
    the last step, as Fluid's kernel writes into the variable's own buffer), or zeros."""
    xp = ctx.xp
    names = ctx.output_names(slot)
    holder = ctx.scope.find_var(names[0]) if names else None
    value = holder.value if holder is not None else None
    array = value.array if isinstance(value, LoDTensor) else None
    if array is None or array.size != size:
        return xp.zeros((size,), like.dtype)
    return xp.asarray(array).reshape(-1).astype(like.dtype).copy()


def _range_quant(ctx, x, in_scale, iteration):
    xp = ctx.xp
    bins = bin_count(ctx.attrs["bit_length"])
    window = ctx.attrs["window_size"]
    if window <= 0:
        raise InvalidArgument(expected("fake_quantize_range_abs_max",
                                       "attribute 'window_size'", "> 0", window))
    last = in_scale.reshape(-1)[:1].astype(x.dtype)
    if ctx.attrs["is_test"]:
        scales = _held(ctx, "OutScales", window, x) if ctx.wants("OutScales") else None
        return clip_quantize(xp, x, last, bins), last, scales
    if iteration is None:
        raise InvalidArgument(expected("fake_quantize_range_abs_max", "input 'Iter'",
                                       "the step counter when is_test is false", "none"))
    step = int(host_scalar(iteration))
    scales = _held(ctx, "OutScales", window, x)
    cur = _abs_max(xp, x).astype(x.dtype)
    slot = step % window
    removed = scales[slot:slot + 1].copy()
    scales[slot:slot + 1] = cur
    # the window's maximum is searched again only when the one it drops was the maximum
    size = min(step, window)
    window_max = xp.abs(scales[:size]).max().reshape(1) if size else cur
    scale = xp.where(last < cur, cur,
                     xp.where(xp.abs(removed - last) < 1e-6, window_max, last))
    return clip_quantize(xp, x, scale, bins), scale.astype(x.dtype), scales


def_op("fake_quantize_range_abs_max", inputs=["X", "InScale", "Iter?"],
       outputs=["Out", "OutScale", "OutScales?"],
       attrs={"window_size": ("int", 10000), **_BITS, "is_test": ("bool", False)},
       infer_shape=_range_infer, grad=no_gradient, kernel=_range_quant,
       traits=("stateful",),  # (OutScales' window carries from one run to the next)
       host_reads="Iter: the step picks the window slot the new max(|X|) replaces",
       doc="OutScales[Iter % window_size] = max(|X|); OutScale = max(InScale, max(|X|)), "
           "or the window's largest entry when the entry replaced was InScale; "
           "Out = round(clip(X, -s, s) / s * (2^(bit_length-1) - 1)) with s = OutScale "
           "(s = InScale when is_test).")


# --- moving averages -------------------------------------------------------------------------
def _moving_infer(ctx):
    _quant_infer(ctx)
    dtype = ctx.input_dtype("X")
    ctx.set_output("OutState", (1,), dtype)
    ctx.set_output("OutAccum", (1,), dtype)


def _moving_scale(ctx, op, x, accum, state):
    """(scale, accum', state') of the moving average of max(|X|)."""
    xp = ctx.xp
    if accum is None or state is None:
        raise InvalidArgument(expected(op, "inputs 'InAccum' and 'InState'",
                                       "both given when is_test is false",
                                       f"InAccum={'given' if accum is not None else 'none'}, "
                                       f"InState={'given' if state is not None else 'none'}"))
    rate = ctx.attrs["moving_rate"]
    state = (rate * state.reshape(-1)[:1] + 1).astype(x.dtype)
    accum = (rate * accum.reshape(-1)[:1] + _abs_max(xp, x)).astype(x.dtype)
    return (accum / state).astype(x.dtype), accum, state


def _moving_kernel(op, dequantize):
    def kernel(ctx, x, in_scale, accum, state):
        xp = ctx.xp
        bins = bin_count(ctx.attrs["bit_length"])
        if ctx.attrs["is_test"]:
            scale, accum, state = in_scale.reshape(-1)[:1].astype(x.dtype), None, None
        else:
            scale, accum, state = _moving_scale(ctx, op, x, accum, state)
        out = clip_quantize(xp, x, scale, bins)
        if dequantize:
            out = (out * (scale / bins)).astype(x.dtype)
        return out, scale, state, accum
    return kernel


_MOVING = dict(inputs=["X", "InScale", "InAccum?", "InState?"],
               outputs=["Out", "OutScale", "OutState?", "OutAccum?"],
               attrs={"moving_rate": ("float", 0.9), **_BITS, "is_test": ("bool", False)},
               infer_shape=_moving_infer, grad=no_gradient)

def_op("fake_quantize_moving_average_abs_max",
       kernel=_moving_kernel("fake_quantize_moving_average_abs_max", False), **_MOVING,
       doc="OutState = r * InState + 1; OutAccum = r * InAccum + max(|X|); "
           "OutScale = OutAccum / OutState (r = moving_rate; InScale when is_test); "
           "Out = round(clip(X, -s, s) / s * (2^(bit_length-1) - 1)), s = OutScale.")

def_op("fake_quantize_dequantize_moving_average_abs_max",
       kernel=_moving_kernel("fake_quantize_dequantize_moving_average_abs_max", True),
       **_MOVING,
       doc="As fake_quantize_moving_average_abs_max, then back to X's scale: "
           "Out = round(clip(X, -s, s) / s * range) * s / range, range = "
           "2^(bit_length-1) - 1.")


def _scale_infer(ctx):
    _check_float(ctx)
    x, dtype = ctx.input_shape("X"), ctx.input_dtype("X")
    ctx.set_output("Out", x, dtype)
    for slot in ("OutScale", "OutState", "OutAccum"):
        ctx.set_output(slot, (1,), dtype)
    ctx.share_lod("X", "Out")


def _scale_kernel(ctx, x, accum, state):
    if ctx.attrs["is_test"]:
        return x.copy(), None, None, None
    scale, accum, state = _moving_scale(ctx, "moving_average_abs_max_scale", x, accum, state)
    return x.copy(), scale, state, accum


def_op("moving_average_abs_max_scale", inputs=["X", "InAccum?", "InState?"],
       outputs=["Out", "OutScale", "OutState?", "OutAccum?"],
       attrs={"moving_rate": ("float", 0.9), "is_test": ("bool", False)},
       infer_shape=_scale_infer, grad=no_gradient, kernel=_scale_kernel,
       doc="Out = X; OutState = r * InState + 1; OutAccum = r * InAccum + max(|X|); "
           "OutScale = OutAccum / OutState (r = moving_rate). With is_test only Out is "
           "written.")


# --- dequantisation --------------------------------------------------------------------------
def _dequant_infer(ctx):
    _check_float(ctx)
    ctx.set_output("Out", ctx.input_shape("X"), ctx.input_dtype("X"))
    ctx.share_lod("X", "Out")


def _dequant(ctx, x, scale):
    return (scale.reshape(-1)[:1].astype(x.dtype) * x / x.dtype.type(
        ctx.attrs["max_range"])).astype(x.dtype)


def_op("fake_dequantize_max_abs", inputs=["X", "Scale"], outputs=["Out"],
       attrs={"max_range": ("float", None)},
       infer_shape=_dequant_infer, grad=no_gradient, kernel=_dequant,
       doc="Out = Scale * X / max_range.")


def _channel_dequant_infer(ctx):
    _dequant_infer(ctx)
    scales, bits = ctx.input_shapes("Scales"), ctx.attr("quant_bits")
    ctx.check(len(scales) in (1, 2), "input 'Scales'", "one or two tensors", len(scales))
    ctx.check(len(bits) >= len(scales), "attribute 'quant_bits'",
              f"one bit width per Scales tensor ({len(scales)})", list(bits))


def _channel_dequant(ctx, x, scales):
    op = "fake_channel_wise_dequantize_max_abs"
    bits = ctx.attrs["quant_bits"]
    if len(scales) not in (1, 2) or len(bits) < len(scales):
        raise InvalidArgument(expected(op, "inputs 'Scales' and attribute 'quant_bits'",
                                       "1 or 2 scale tensors and as many bit widths",
                                       f"{len(scales)} tensors, quant_bits={list(bits)}"))
    axis = 0 if len(scales) == 1 else 1
    if x.ndim <= axis or scales[0].size != x.shape[axis]:
        raise InvalidArgument(expected(op, "input 'Scales'[0]",
                                       f"one scale per entry of X's dim {axis}",
                                       f"{scales[0].size} scales for X of shape "
                                       f"{list(x.shape)}"))
    shape = [1] * x.ndim
    shape[axis] = -1
    factor = scales[0].reshape(shape).astype(x.dtype)
    max_range = bin_count(bits[0])
    if len(scales) == 2:
        if scales[1].size != 1:
            raise InvalidArgument(expected(op, "input 'Scales'[1]", "one value",
                                           f"{scales[1].size} values"))
        factor = factor * scales[1].reshape(-1)[:1].astype(x.dtype)
        max_range *= bin_count(bits[1])
    return (factor * x / x.dtype.type(max_range)).astype(x.dtype)


def_op("fake_channel_wise_dequantize_max_abs", inputs=["X", "Scales[]"], outputs=["Out"],
       attrs={"quant_bits": ("ints", [8])},
       infer_shape=_channel_dequant_infer, grad=no_gradient, kernel=_channel_dequant,
       doc="One scale tensor: Out[c] = Scales[0][c] * X[c] / (2^(quant_bits[0]-1) - 1) "
           "along dim 0. Two (weights, then the activation's single scale): "
           "Out[:, c] = Scales[0][c] * Scales[1] * X[:, c] / ((2^(quant_bits[0]-1) - 1) "
           "* (2^(quant_bits[1]-1) - 1)) along dim 1.")


def _int8_infer(ctx):
    dtype = ctx.input_dtype("X")
    ctx.check(dtype == VarType.INT8, "input 'X' dtype", "int8", dtype.name)
    ctx.set_output("Out", ctx.input_shape("X"), VarType.FP32)
    ctx.share_lod("X", "Out")


def _dequant_abs_max(ctx, x, scale):
    return (scale.reshape(-1)[:1].astype("float32") * x.astype("float32")
            / ctx.xp.float32(ctx.attrs["max_range"])).astype("float32")


def_op("dequantize_abs_max", inputs=["X", "Scale"], outputs=["Out"],
       attrs={"max_range": ("float", None)},
       infer_shape=_int8_infer, grad=no_gradient,
       kernel=_dequant_abs_max,
       doc="Out = Scale * X / max_range: an int8 X back to float32.")


def _dequant_log(ctx, x, table):
    xp = ctx.xp
    if table.size < 128:
        raise InvalidArgument(expected("dequantize_log", "input 'Dict'",
                                       "128 exponents (one per magnitude code)", table.size))
    codes = x.astype("int64")
    exponent = table.reshape(-1).astype("float32")[xp.where(codes < 0, codes + 128, codes)]
    magnitude = xp.power(xp.float32(2), exponent)
    return xp.where(codes < 0, -magnitude, magnitude).astype("float32")


def_op("dequantize_log", inputs=["X", "Dict"], outputs=["Out"],
       infer_shape=_int8_infer, grad=no_gradient,
       kernel=_dequant_log,
       doc="Out = 2^Dict[X] for X >= 0 and -2^Dict[X + 128] for X < 0: an int8 code of "
           "a log-quantised value back to float32.")
