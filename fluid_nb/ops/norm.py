"""Normalisation: batch_norm, layer_norm, instance_norm, group_norm, lrn, data_norm and
inplace_abn with their grad ops."""
import numpy as np

from .. import c_parts
from ..tensor.dtypes import VarType
from ..framework.registry import def_op, grad_maker, grads_like


def _epsilon_range(v):
    return None if 0.0 <= v <= 0.001 else "a value in [0, 0.001]"


def _group_epsilon_range(v):
    # group_norm alone allows a larger epsilon (Fluid checks [0, 1] there)
    return None if 0.0 <= v <= 1.0 else "a value in [0, 1]"


# --- batch_norm ------------------------------------------------------------------------
def _channel_axis(attrs, ndim):
    """NCHW: dim 1; NHWC: the last dim (a 2-D input is [N, C] either way)."""
    return ndim - 1 if attrs.get("data_layout", "NCHW") == "NHWC" else 1


def _bn_infer_shape(ctx):
    x_shape = ctx.input_shape("X")
    ctx.check(2 <= len(x_shape) <= 5, "input 'X'", "a 2-D to 5-D tensor", list(x_shape))
    c = x_shape[_channel_axis(ctx.attrs(), len(x_shape))]
    for slot in ("Scale", "Bias", "Mean", "Variance"):
        if not ctx.has_input(slot):
            continue
        shape = ctx.input_shape(slot)
        ctx.check(len(shape) == 1 and (c < 0 or shape[0] < 0 or shape[0] == c),
                  f"input '{slot}'", f"shape [{c}] (the channels of X {list(x_shape)})",
                  list(shape))
    ctx.set_output("Y", x_shape, ctx.input_dtype("X"))
    stat_dtype = ctx.input_dtype("Mean")
    for slot in ("MeanOut", "VarianceOut", "SavedMean", "SavedVariance"):
        if ctx.has_output(slot):
            ctx.set_output(slot, (c,), stat_dtype)
    if ctx.has_output("ReserveSpace"):
        ctx.set_output("ReserveSpace", (-1,), VarType.UINT8)


def _bn_forward(ctx, x, scale, bias, mean, variance, _momentum_tensor):
    xp, attrs = ctx.xp, ctx.attrs
    axis = _channel_axis(attrs, x.ndim)
    c = x.shape[axis]
    bshape = [1] * x.ndim
    bshape[axis] = c
    reduce_axes = tuple(i for i in range(x.ndim) if i != axis)
    eps = attrs.get("epsilon", 1e-5)
    # Paddle 2.6's kernels ignore MomentumTensor (verified against paddlepaddle 2.6.2 CPU);
    # Paddle before 2.3 let it override ``momentum``
    momentum = attrs.get("momentum", 0.9)
    test_mode = attrs.get("is_test", False) and not attrs.get("trainable_statistics", False)
    global_stats = test_mode or attrs.get("use_global_stats", False)
    stat_dtype = mean.dtype
    zeros = xp.zeros((c,), dtype=stat_dtype)
    reserve = xp.zeros((0,), dtype=xp.uint8) if ctx.wants("ReserveSpace") else None
    scale = xp.ones((c,), dtype=x.dtype) if scale is None else scale
    bias = xp.zeros((c,), dtype=x.dtype) if bias is None else bias
    if global_stats:
        use_mean = mean
        inv_std = 1.0 / xp.sqrt(variance + eps)
        mean_out, var_out, saved_mean, saved_inv_std = mean.copy(), variance.copy(), zeros, zeros
    else:
        if x.size // c == 1:  # Paddle: one value per channel, Y = X and stats untouched
            return x.copy(), mean.copy(), variance.copy(), zeros, zeros.copy(), reserve
        batch_mean = x.mean(axis=reduce_axes)
        batch_var = ((x - batch_mean.reshape(bshape)) ** 2).mean(axis=reduce_axes)
        mean_out = mean * momentum + batch_mean * (1.0 - momentum)
        var_out = variance * momentum + batch_var * (1.0 - momentum)
        inv_std = 1.0 / xp.sqrt(batch_var + eps)
        use_mean, saved_mean, saved_inv_std = batch_mean, batch_mean, inv_std
    y = (x - use_mean.reshape(bshape)) * (inv_std * scale).reshape(bshape) + bias.reshape(bshape)
    if attrs.get("fuse_with_relu", False):
        y = xp.maximum(y, 0)
    return (y.astype(x.dtype, copy=False), mean_out.astype(stat_dtype, copy=False),
            var_out.astype(stat_dtype, copy=False), saved_mean.astype(stat_dtype, copy=False),
            saved_inv_std.astype(stat_dtype, copy=False), reserve)


def _bn_backward(ctx, x, scale, bias, mean, variance, mean_out, variance_out, saved_mean,
                 saved_inv_std, reserve, dy):
    xp, attrs = ctx.xp, ctx.attrs
    axis = _channel_axis(attrs, x.ndim)
    c = x.shape[axis]
    bshape = [1] * x.ndim
    bshape[axis] = c
    reduce_axes = tuple(i for i in range(x.ndim) if i != axis)
    global_stats = attrs.get("is_test", False) or attrs.get("use_global_stats", False)
    # Paddle 2.6 passes the running statistics as MeanOut/VarianceOut, older Paddle as
    # Mean/Variance (only when they are used); they are the same variables
    mean = mean_out if mean_out is not None else mean
    variance = variance_out if variance_out is not None else variance
    if global_stats:
        mu, inv_std = mean, 1.0 / xp.sqrt(variance + attrs.get("epsilon", 1e-5))
    elif x.size // x.shape[axis] == 1:
        # one value per channel: the forward passed X through (Y = X), so dX = dY and
        # Scale and Bias get no gradient, as Paddle's kernel has it
        zeros = xp.zeros((x.shape[axis],), dtype=dy.dtype)
        return (dy.astype(x.dtype, copy=True) if ctx.wants("X@GRAD") else None,
                zeros if ctx.wants("Scale@GRAD") else None,
                zeros.copy() if ctx.wants("Bias@GRAD") else None)
    else:
        mu, inv_std = saved_mean, saved_inv_std
    x_hat = (x - mu.reshape(bshape)) * inv_std.reshape(bshape)
    d_bias = dy.sum(axis=reduce_axes)
    d_scale = (dy * x_hat).sum(axis=reduce_axes)
    dx = None
    if ctx.wants("X@GRAD"):
        k = (inv_std if scale is None else scale * inv_std).reshape(bshape)
        if global_stats:
            dx = dy * k
        else:
            m = x.size // x.shape[axis]
            dx = k * (dy - (d_bias.reshape(bshape) + x_hat * d_scale.reshape(bshape)) / m)
        dx = dx.astype(x.dtype, copy=False)
    d_scale = d_scale.astype(scale.dtype, copy=False) if ctx.wants("Scale@GRAD") else None
    d_bias = d_bias.astype(bias.dtype, copy=False) if ctx.wants("Bias@GRAD") else None
    return dx, d_scale, d_bias


def _bn_grad_maker(g):
    """Paddle 2.6's batch_norm_grad: the running statistics come in as MeanOut/VarianceOut
    (used only with is_test/use_global_stats; they are [C] vectors)."""
    ins = {"X": g.input("X"), "Scale": g.input("Scale"), "Bias": g.input("Bias"),
           "MeanOut": g.output("MeanOut"), "VarianceOut": g.output("VarianceOut"),
           "SavedMean": g.output("SavedMean"), "SavedVariance": g.output("SavedVariance"),
           "ReserveSpace": g.output("ReserveSpace"), "Y@GRAD": g.output_grad("Y")}
    outs = {"X@GRAD": g.input_grad("X")}
    for slot in ("Scale", "Bias"):
        if g.has_input(slot):
            outs[slot + "@GRAD"] = g.input_grad(slot)
    return [g.op("batch_norm_grad", ins, outs)]


_bn_grad_maker.grad_type = "batch_norm_grad"

_BN_ATTRS = {
    "momentum": ("float", 0.9),
    "epsilon": ("float", 1e-5, _epsilon_range),
    "data_layout": ("string", "NCHW"),
    "is_test": ("bool", False),
    "use_global_stats": ("bool", False),
    "trainable_statistics": ("bool", False),
    # Paddle's "extra" attributes (default False): typed, not filled in
    "use_mkldnn": ("bool", None),
    "fuse_with_relu": ("bool", None),
}

def_op("batch_norm",
       inputs=["X", "Scale?", "Bias?", "Mean", "Variance", "MomentumTensor?"],
       outputs=["Y", "MeanOut", "VarianceOut", "SavedMean!", "SavedVariance!", "ReserveSpace?"],
       attrs=_BN_ATTRS, infer_shape=_bn_infer_shape, share_lod=("X", ["Y"]),
       grad=_bn_grad_maker, kernel=_bn_forward,
       doc="""batch_norm: per-channel normalisation over every dim but the channel one.

Training: mu, var = mean and biased variance of X per channel;
  Y = (X - mu) / sqrt(var + epsilon) * Scale + Bias;
  MeanOut = Mean * momentum + mu * (1 - momentum) (VarianceOut likewise with var);
  SavedMean = mu, SavedVariance = 1 / sqrt(var + epsilon) (the inverse std, as Paddle).
is_test (without trainable_statistics) or use_global_stats: Y normalises with Mean and
Variance; MeanOut/VarianceOut = Mean/Variance, SavedMean/SavedVariance are zero.
MomentumTensor is accepted and ignored, as in Paddle 2.6 (older Paddle used it in place of
momentum). Scale/Bias default to ones/zeros. In Paddle
MeanOut/VarianceOut are the Mean/Variance variables themselves (updated in place).
ReserveSpace (a cuDNN workspace in Paddle) comes out empty.""")
def_op("batch_norm_grad",
       inputs=["X", "Scale?", "Bias?", "Mean?", "Variance?", "MeanOut?", "VarianceOut?",
               "SavedMean", "SavedVariance", "ReserveSpace?", "Y@GRAD"],
       outputs=["X@GRAD?", "Scale@GRAD?", "Bias@GRAD?"],
       attrs=_BN_ATTRS,
       infer_shape=grads_like(**{"X@GRAD": "X", "Scale@GRAD": "Scale", "Bias@GRAD": "Bias"}),
       kernel=_bn_backward,
       doc="""Gradient of batch_norm, x_hat = (X - mu) * inv_std, m = X.size / C:
Bias@GRAD = sum(dY), Scale@GRAD = sum(dY * x_hat) (per channel);
training: X@GRAD = Scale * inv_std * (dY - (Bias@GRAD + x_hat * Scale@GRAD) / m) with the
batch statistics SavedMean/SavedVariance; with is_test or use_global_stats:
X@GRAD = dY * Scale / sqrt(Variance + epsilon), the running Variance coming in as
VarianceOut (Paddle 2.6) or Variance (older programs).""")


# --- layer_norm --------------------------------------------------------------------------
def _split(shape, begin):
    left = right = 1
    for i, d in enumerate(shape):
        if d < 0:
            if i < begin:
                left = -1
            else:
                right = -1
        elif i < begin:
            left = left * d if left >= 0 else -1
        else:
            right = right * d if right >= 0 else -1
    return left, right


def _stat_dtype(dtype):
    return VarType.FP32 if dtype in (VarType.FP16, VarType.BF16) else dtype


def _ln_infer_shape(ctx):
    x_shape = ctx.input_shape("X")
    begin = ctx.attrs().get("begin_norm_axis", 1)
    ctx.check(0 < begin < len(x_shape), "attribute 'begin_norm_axis'",
              f"a value in [1, {len(x_shape) - 1}] (X is {list(x_shape)})", begin)
    left, right = _split(x_shape, begin)
    for slot in ("Scale", "Bias"):
        if ctx.has_input(slot):
            shape = ctx.input_shape(slot)
            ctx.check(len(shape) == 1 and (right < 0 or shape[0] < 0 or shape[0] == right),
                      f"input '{slot}'", f"shape [{right}] (X dims from {begin} on, "
                      f"X is {list(x_shape)})", list(shape))
    dtype = ctx.input_dtype("X")
    ctx.set_output("Y", x_shape, dtype)
    # Paddle 2.6 keeps the leading dims: Mean/Variance are X.shape[:begin_norm_axis]
    ctx.set_output("Mean", x_shape[:begin], _stat_dtype(dtype))
    ctx.set_output("Variance", x_shape[:begin], _stat_dtype(dtype))


#: the host layer norm compiled code runs (ops/_norms.cc over the runtime's rows)
_norms = c_parts.load("fluid_nb.ops._norms", "the interpreter's layer norm and softmax")


def _ln_forward(ctx, x, scale, bias):
    xp = ctx.xp
    begin = ctx.attrs.get("begin_norm_axis", 1)
    eps = ctx.attrs.get("epsilon", 1e-5)
    left = 1
    for d in x.shape[:begin]:
        left *= d
    rows = x.reshape(left, -1)
    lead = x.shape[:begin]
    if xp is np:  # the rows compiled code runs (float32/float64, contiguous; else NotImplemented)
        done = _norms.layer_norm(rows, scale, bias, eps)
        if done is not NotImplemented:
            y, mean, var = done
            return y.reshape(x.shape), mean.reshape(lead), var.reshape(lead)
    mean = rows.mean(axis=1)
    centered = rows - mean[:, None]
    var = (centered ** 2).mean(axis=1)
    y = centered / xp.sqrt(var + eps)[:, None]
    if scale is not None:
        y = y * scale.reshape(1, -1)
    if bias is not None:
        y = y + bias.reshape(1, -1)
    stat = mean.dtype if x.dtype.itemsize >= 4 else xp.float32
    return (y.reshape(x.shape).astype(x.dtype, copy=False),
            mean.reshape(lead).astype(stat, copy=False), var.reshape(lead).astype(stat, copy=False))


def _ln_backward(ctx, x, scale, bias, mean, variance, dy):
    xp = ctx.xp
    eps = ctx.attrs.get("epsilon", 1e-5)
    left = mean.size
    rows, drows = x.reshape(left, -1), dy.reshape(left, -1)
    want_dx, want_dscale, want_dbias = wants = (
        ctx.wants("X@GRAD"), scale is not None and ctx.wants("Scale@GRAD"),
        bias is not None and ctx.wants("Bias@GRAD"))
    if xp is np:
        done = _norms.layer_norm_grad(rows, scale, mean.reshape(-1), variance.reshape(-1),
                                        drows, eps, *wants)
        if done is not NotImplemented:
            dx, d_scale, d_bias = done
            return (dx.reshape(x.shape) if dx is not None else None,
                    d_scale.reshape(scale.shape) if d_scale is not None else None,
                    d_bias.reshape(bias.shape) if d_bias is not None else None)
    inv_std = (1.0 / xp.sqrt(variance.reshape(-1) + eps))[:, None]
    x_hat = (rows - mean.reshape(-1, 1)) * inv_std
    dx = d_scale = d_bias = None
    if want_dscale:
        d_scale = (drows * x_hat).sum(axis=0).reshape(scale.shape).astype(scale.dtype,
                                                                           copy=False)
    if want_dbias:
        d_bias = drows.sum(axis=0).reshape(bias.shape).astype(bias.dtype, copy=False)
    if want_dx:
        g = drows * scale.reshape(1, -1) if scale is not None else drows
        dx = inv_std * (g - g.mean(axis=1, keepdims=True)
                        - x_hat * (g * x_hat).mean(axis=1, keepdims=True))
        dx = dx.reshape(x.shape).astype(x.dtype, copy=False)
    return dx, d_scale, d_bias


def _ln_grad_maker(g):
    ins = {"X": g.input("X"), "Scale": g.input("Scale"), "Bias": g.input("Bias"),
           "Mean": g.output("Mean"), "Variance": g.output("Variance"),
           "Y@GRAD": g.output_grad("Y")}
    outs = {"X@GRAD": g.input_grad("X")}
    for slot in ("Scale", "Bias"):
        if g.has_input(slot):
            outs[slot + "@GRAD"] = g.input_grad(slot)
    return [g.op("layer_norm_grad", ins, outs)]


_ln_grad_maker.grad_type = "layer_norm_grad"

_LN_ATTRS = {
    "epsilon": ("float", 1e-5, _epsilon_range),
    "begin_norm_axis": ("int", 1, lambda v: None if v > 0 else "a positive value"),
    # Paddle's "extra" attributes (default False): typed, not filled in
    "use_mkldnn": ("bool", None),
    "is_test": ("bool", None),
}

def_op("layer_norm", inputs=["X", "Scale?", "Bias?"], outputs=["Y", "Mean!", "Variance!"],
       attrs=_LN_ATTRS, infer_shape=_ln_infer_shape, share_lod=("X", ["Y"]),
       grad=_ln_grad_maker, kernel=_ln_forward,
       doc="""layer_norm: X viewed as [left, right], left = prod(dims[:begin_norm_axis]).

Mean/Variance (shape X.shape[:begin_norm_axis], as Paddle 2.6) are each row's mean and
biased variance;
Y = (X - Mean) / sqrt(Variance + epsilon) * Scale + Bias, Scale/Bias of shape [right].""")
def_op("layer_norm_grad",
       inputs=["X", "Scale?", "Bias?", "Mean", "Variance", "Y@GRAD"],
       outputs=["X@GRAD?", "Scale@GRAD?", "Bias@GRAD?"],
       attrs=_LN_ATTRS,
       infer_shape=grads_like(**{"X@GRAD": "X", "Scale@GRAD": "Scale", "Bias@GRAD": "Bias"}),
       kernel=_ln_backward,
       doc="""Gradient of layer_norm per row, x_hat = (X - Mean) / sqrt(Variance + eps),
g = dY * Scale: X@GRAD = (g - mean(g) - x_hat * mean(g * x_hat)) / sqrt(Variance + eps);
Scale@GRAD = sum over rows of dY * x_hat; Bias@GRAD = sum over rows of dY.""")


# --- instance_norm and group_norm: normalising rows of a regrouped X -----------------------
def _row_stats(rows, eps):
    """(mean, inverse std, x_hat) of each row of a 2-D array (biased variance)."""
    mean = rows.mean(axis=1, keepdims=True)
    centered = rows - mean
    var = (centered ** 2).mean(axis=1, keepdims=True)
    inv_std = 1.0 / (var + eps) ** 0.5
    return mean[:, 0], var[:, 0], inv_std, centered * inv_std


def _row_norm_grad(x_hat, inv_std, g):
    """d(x_hat) / d(rows) applied to ``g`` (the gradient reaching x_hat), row by row."""
    return inv_std * (g - g.mean(axis=1, keepdims=True)
                      - x_hat * (g * x_hat).mean(axis=1, keepdims=True))


def _channel_shape(ndim, channel_axis):
    shape = [1] * ndim
    shape[channel_axis] = -1
    return shape


def _in_infer_shape(ctx):
    x_shape = ctx.input_shape("X")
    ctx.check(2 <= len(x_shape) <= 5, "input 'X'", "a 2-D to 5-D tensor", list(x_shape))
    c = x_shape[1]
    for slot in ("Scale", "Bias"):
        if ctx.has_input(slot):
            shape = ctx.input_shape(slot)
            ctx.check(len(shape) == 1 and (c < 0 or shape[0] < 0 or shape[0] == c),
                      f"input '{slot}'", f"shape [{c}] (the channels of X)", list(shape))
    dtype = ctx.input_dtype("X")
    ctx.set_output("Y", x_shape, dtype)
    nc = x_shape[0] * c if x_shape[0] >= 0 and c >= 0 else -1
    for slot in ("SavedMean", "SavedVariance"):
        if ctx.has_output(slot):
            ctx.set_output(slot, (nc,), _stat_dtype(dtype))


def _in_forward(ctx, x, scale, bias):
    n, c = x.shape[:2]
    rows = x.reshape(n * c, -1)
    mean, _, inv_std, x_hat = _row_stats(rows, ctx.attrs.get("epsilon", 1e-5))
    y = x_hat.reshape(x.shape)
    cshape = _channel_shape(x.ndim, 1)
    if scale is not None:
        y = y * scale.reshape(cshape)
    if bias is not None:
        y = y + bias.reshape(cshape)
    return y.astype(x.dtype, copy=False), mean, inv_std[:, 0]


def _in_backward(ctx, x, scale, saved_mean, saved_inv_std, dy):
    n, c = x.shape[:2]
    rows = x.reshape(n * c, -1)
    inv_std = saved_inv_std.reshape(-1, 1)
    x_hat = (rows - saved_mean.reshape(-1, 1)) * inv_std
    drows = dy.reshape(n * c, -1)
    dx = d_scale = d_bias = None
    if ctx.wants("X@GRAD"):
        g = drows if scale is None else drows * ctx.xp.tile(scale, n)[:, None]
        dx = _row_norm_grad(x_hat, inv_std, g).reshape(x.shape).astype(x.dtype, copy=False)
    if ctx.wants("Scale@GRAD"):
        d_scale = (drows * x_hat).sum(axis=1).reshape(n, c).sum(axis=0).astype(x.dtype)
    if ctx.wants("Bias@GRAD"):
        d_bias = drows.sum(axis=1).reshape(n, c).sum(axis=0).astype(x.dtype)
    return dx, d_scale, d_bias


def _in_grad_maker(g):
    ins = {"X": g.input("X"), "Scale": g.input("Scale"), "SavedMean": g.output("SavedMean"),
           "SavedVariance": g.output("SavedVariance"), "Y@GRAD": g.output_grad("Y")}
    outs = {"X@GRAD": g.input_grad("X")}
    for slot in ("Scale", "Bias"):
        if g.has_input(slot):
            outs[slot + "@GRAD"] = g.input_grad(slot)
    return [g.op("instance_norm_grad", ins, outs)]


def _in_grad_shapes(ctx):
    if ctx.has_output("X@GRAD"):
        ctx.set_output("X@GRAD", ctx.input_shape("X"), ctx.input_dtype("X"))
    c = ctx.input_shape("X")[1]
    for slot in ("Scale@GRAD", "Bias@GRAD"):
        if ctx.has_output(slot):
            ctx.set_output(slot, (c,), ctx.input_dtype("X"))


_in_grad_maker.grad_type = "instance_norm_grad"
_IN_ATTRS = {"epsilon": ("float", 1e-5, _epsilon_range)}

def_op("instance_norm", inputs=["X", "Scale?", "Bias?"],
       outputs=["Y", "SavedMean!", "SavedVariance!"], attrs=_IN_ATTRS,
       infer_shape=_in_infer_shape, grad=_in_grad_maker, kernel=_in_forward,
       doc="""instance_norm: each (sample, channel) slice of X [N, C, ...] normalised over
its spatial positions: Y = (X - mu) / sqrt(var + epsilon) * Scale[c] + Bias[c];
SavedMean [N*C] = mu, SavedVariance [N*C] = 1 / sqrt(var + epsilon) (the inverse std).""")
def_op("instance_norm_grad",
       inputs=["X", "Scale?", "SavedMean", "SavedVariance", "Y@GRAD"],
       outputs=["X@GRAD?", "Scale@GRAD?", "Bias@GRAD?"], attrs=_IN_ATTRS,
       infer_shape=_in_grad_shapes, kernel=_in_backward,
       doc="""Gradient of instance_norm per slice, g = dY * Scale[c]: X@GRAD = inv_std *
(g - mean(g) - x_hat * mean(g * x_hat)); Scale@GRAD = sum of dY * x_hat, Bias@GRAD = sum of
dY per channel.""")


def _gn_channel_axis(attrs, ndim):
    return ndim - 1 if attrs.get("data_layout", "NCHW") == "NHWC" else 1


def _gn_infer_shape(ctx):
    attrs = ctx.attrs()
    x_shape = ctx.input_shape("X")
    ctx.check(len(x_shape) >= 2, "input 'X'", "a tensor of rank >= 2", list(x_shape))
    c = x_shape[_gn_channel_axis(attrs, len(x_shape))]
    groups = attrs.get("groups", 1)
    ctx.check(groups >= 1 and (c < 0 or c % groups == 0), "attribute 'groups'",
              f"a positive divisor of the {c} channels", groups)
    for slot in ("Scale", "Bias"):
        if ctx.has_input(slot):
            shape = ctx.input_shape(slot)
            ctx.check(len(shape) == 1 and (c < 0 or shape[0] < 0 or shape[0] == c),
                      f"input '{slot}'", f"shape [{c}] (the channels of X)", list(shape))
    dtype = ctx.input_dtype("X")
    ctx.set_output("Y", x_shape, dtype)
    for slot in ("Mean", "Variance"):
        if ctx.has_output(slot):
            ctx.set_output(slot, (x_shape[0], groups), _stat_dtype(dtype))


def _gn_rows(xp, x, attrs):
    """X as [N*G, C/G * spatial] rows (channel-first)."""
    axis = _gn_channel_axis(attrs, x.ndim)
    xc = xp.moveaxis(x, axis, 1)
    return xc, xc.reshape(x.shape[0] * attrs.get("groups", 1), -1)


def _gn_forward(ctx, x, scale, bias):
    xp, attrs = ctx.xp, ctx.attrs
    axis = _gn_channel_axis(attrs, x.ndim)
    xc, rows = _gn_rows(xp, x, attrs)
    mean, var, _, x_hat = _row_stats(rows, attrs.get("epsilon", 1e-5))
    y = x_hat.reshape(xc.shape)
    cshape = _channel_shape(x.ndim, 1)
    if scale is not None:
        y = y * scale.reshape(cshape)
    if bias is not None:
        y = y + bias.reshape(cshape)
    n, groups = x.shape[0], attrs.get("groups", 1)
    return (xp.ascontiguousarray(xp.moveaxis(y, 1, axis)).astype(x.dtype, copy=False),
            mean.reshape(n, groups), var.reshape(n, groups))


def _gn_backward(ctx, x, scale, bias, mean, variance, dy):
    xp, attrs = ctx.xp, ctx.attrs
    axis = _gn_channel_axis(attrs, x.ndim)
    xc, rows = _gn_rows(xp, x, attrs)
    inv_std = 1.0 / (variance.reshape(-1, 1) + attrs.get("epsilon", 1e-5)) ** 0.5
    x_hat = (rows - mean.reshape(-1, 1)) * inv_std
    dyc = xp.moveaxis(dy, axis, 1)
    reduce_axes = (0,) + tuple(range(2, x.ndim))
    x_hat_c = x_hat.reshape(xc.shape)
    dx = d_scale = d_bias = None
    if ctx.wants("X@GRAD"):
        g = dyc if scale is None else dyc * scale.reshape(_channel_shape(x.ndim, 1))
        dxc = _row_norm_grad(x_hat, inv_std, g.reshape(rows.shape)).reshape(xc.shape)
        dx = xp.ascontiguousarray(xp.moveaxis(dxc, 1, axis)).astype(x.dtype, copy=False)
    if scale is not None and ctx.wants("Scale@GRAD"):
        d_scale = (dyc * x_hat_c).sum(axis=reduce_axes).astype(scale.dtype, copy=False)
    if bias is not None and ctx.wants("Bias@GRAD"):
        d_bias = dyc.sum(axis=reduce_axes).astype(bias.dtype, copy=False)
    return dx, d_scale, d_bias


def _gn_grad_maker(g):
    ins = {"X": g.input("X"), "Scale": g.input("Scale"), "Bias": g.input("Bias"),
           "Mean": g.output("Mean"), "Variance": g.output("Variance"),
           "Y@GRAD": g.output_grad("Y")}
    outs = {"X@GRAD": g.input_grad("X")}
    for slot in ("Scale", "Bias"):
        if g.has_input(slot):
            outs[slot + "@GRAD"] = g.input_grad(slot)
    return [g.op("group_norm_grad", ins, outs)]


_gn_grad_maker.grad_type = "group_norm_grad"
_GN_ATTRS = {"epsilon": ("float", 1e-5, _group_epsilon_range), "groups": ("int", 1),
             "data_layout": ("string", "NCHW")}

def_op("group_norm", inputs=["X", "Scale?", "Bias?"], outputs=["Y", "Mean!", "Variance!"],
       attrs=_GN_ATTRS, infer_shape=_gn_infer_shape, grad=_gn_grad_maker,
       kernel=_gn_forward,
       doc="""group_norm: the channels of X (NCHW, or NHWC with data_layout) split into
``groups``; each (sample, group) normalised over its channels and positions:
Y = (X - mu) / sqrt(var + epsilon) * Scale[c] + Bias[c]; Mean and Variance [N, groups]
(the biased variance).""")
def_op("group_norm_grad",
       inputs=["X", "Scale?", "Bias?", "Mean", "Variance", "Y@GRAD"],
       outputs=["X@GRAD?", "Scale@GRAD?", "Bias@GRAD?"], attrs=_GN_ATTRS,
       infer_shape=grads_like(**{"X@GRAD": "X", "Scale@GRAD": "Scale", "Bias@GRAD": "Bias"}),
       kernel=_gn_backward,
       doc="""Gradient of group_norm per (sample, group) row, g = dY * Scale[c]:
X@GRAD = inv_std * (g - mean(g) - x_hat * mean(g * x_hat)); Scale@GRAD = sum of
dY * x_hat, Bias@GRAD = sum of dY per channel.""")


# --- lrn -----------------------------------------------------------------------------------------
def _lrn_window_sum(xp, sq, n):
    """sum of ``sq`` over channels [c - (n-1)//2, c - (n-1)//2 + n) (channel axis 1)."""
    before = (n - 1) // 2
    pad = [(0, 0)] * sq.ndim
    pad[1] = (before + 1, n - 1 - before)
    cums = xp.cumsum(xp.pad(sq, pad), axis=1)
    c = sq.shape[1]
    return cums[:, n:n + c] - cums[:, 0:c]


def _lrn_forward(ctx, x):
    xp, attrs = ctx.xp, ctx.attrs
    last = attrs.get("data_format", "NCHW") == "NHWC"
    xc = xp.moveaxis(x, -1, 1) if last else x
    mid = attrs.get("k", 1.0) + attrs.get("alpha", 1e-4) * _lrn_window_sum(
        xp, xc * xc, attrs.get("n", 5))
    out = xc * mid ** (-attrs.get("beta", 0.75))
    if last:
        out, mid = xp.moveaxis(out, 1, -1), xp.moveaxis(mid, 1, -1)
    return (xp.ascontiguousarray(out).astype(x.dtype, copy=False),
            xp.ascontiguousarray(mid).astype(x.dtype, copy=False))


def _lrn_backward(ctx, x, out, mid, dout):
    xp, attrs = ctx.xp, ctx.attrs
    last = attrs.get("data_format", "NCHW") == "NHWC"
    move = (lambda a: xp.moveaxis(a, -1, 1)) if last else (lambda a: a)
    xc, midc, dc = move(x), move(mid), move(dout)
    beta, alpha, n = attrs.get("beta", 0.75), attrs.get("alpha", 1e-4), attrs.get("n", 5)
    # channel i's square feeds the window of channel c exactly when c's window holds i:
    # the transposed window, [i - (n - 1 - (n-1)//2), i + (n-1)//2]
    ratio = dc * xc * midc ** (-beta - 1)
    flipped = _lrn_window_sum(xp, ratio[:, ::-1], n)[:, ::-1]
    dx = dc * midc ** (-beta) - 2.0 * alpha * beta * xc * flipped
    if last:
        dx = xp.moveaxis(dx, 1, -1)
    return xp.ascontiguousarray(dx).astype(x.dtype, copy=False)


_LRN_ATTRS = {"n": ("int", 5), "k": ("float", 1.0), "alpha": ("float", 1e-4),
              "beta": ("float", 0.75), "data_format": ("string", "AnyLayout"),
              "is_test": ("bool", None), "use_mkldnn": ("bool", None)}


def _lrn_infer_shape(ctx):
    x_shape = ctx.input_shape("X")
    ctx.check(len(x_shape) == 4, "input 'X'", "a 4-D tensor", list(x_shape))
    ctx.check(ctx.attrs().get("n", 5) > 0, "attribute 'n'", "a positive size",
              ctx.attrs().get("n"))
    ctx.set_output("Out", x_shape, ctx.input_dtype("X"))
    if ctx.has_output("MidOut"):
        ctx.set_output("MidOut", x_shape, ctx.input_dtype("X"))


def_op("lrn", inputs=["X"], outputs=["Out", "MidOut!"], attrs=_LRN_ATTRS,
       infer_shape=_lrn_infer_shape,
       grad=grad_maker("lrn_grad", inputs=["X"], outputs=["Out", "MidOut"],
                       out_grads=["Out"], in_grads=["X"]),
       kernel=_lrn_forward,
       doc="""lrn: local response normalisation across channels of X [N, C, H, W] (NHWC
with data_format). MidOut = k + alpha * sum_{j = c - (n-1)//2}^{c - (n-1)//2 + n - 1}
X[j]^2 (channels outside [0, C) left out); Out = X * MidOut^(-beta).""")
def_op("lrn_grad", inputs=["X", "Out", "MidOut", "Out@GRAD"], outputs=["X@GRAD"],
       attrs=_LRN_ATTRS, infer_shape=grads_like(**{"X@GRAD": "X"}), kernel=_lrn_backward,
       doc="""Gradient of lrn: X@GRAD[i] = dOut[i] * MidOut[i]^(-beta) - 2 * alpha * beta *
X[i] * sum over the channels c whose window holds i of dOut[c] * X[c] * MidOut[c]^(-beta-1).""")


# --- data_norm ---------------------------------------------------------------------------------
def _dn_channels(ctx, x_shape):
    last = ctx.attrs().get("data_layout", "NCHW") == "NHWC"
    return x_shape[-1] if last else x_shape[1]


def _dn_rows(x, attrs):
    """X as [rows, C]: the channel axis (1, or the last with NHWC) last, the rest flattened
    into rows; and the function that puts such a [rows, C] array back in X's layout."""
    if x.ndim == 2:
        return x, lambda a: a
    axis = x.ndim - 1 if attrs.get("data_layout", "NCHW") == "NHWC" else 1
    moved = x if axis == x.ndim - 1 else x.swapaxes(axis, -1)
    shape = moved.shape

    def back(a):
        a = a.reshape(shape)
        return a if axis == x.ndim - 1 else a.swapaxes(axis, -1)
    return moved.reshape(-1, shape[-1]), back


def _dn_infer_shape(ctx):
    x_shape = ctx.input_shape("X")
    ctx.check(2 <= len(x_shape) <= 5, "input 'X'", "a tensor of 2 to 5 dims (N, C, ...)",
              list(x_shape))
    c = _dn_channels(ctx, x_shape)
    for slot in ("BatchSize", "BatchSum", "BatchSquareSum"):
        shape = ctx.input_shape(slot)
        ctx.check(len(shape) == 1 and (c < 0 or shape[0] < 0 or shape[0] == c),
                  f"input '{slot}'", f"shape [{c}]", list(shape))
    dtype = ctx.input_dtype("X")
    ctx.set_output("Y", x_shape, dtype)
    for slot in ("Means", "Scales"):
        ctx.set_output(slot, (c,), dtype)
    for slot in ("BatchSize", "BatchSum", "BatchSquareSum"):
        if ctx.has_output(slot):
            ctx.set_output(slot, (c,), dtype)


def _dn_empty_slots(xp, x, slot_dim):
    """With slot_dim > 0: a [N, C] mask, True on the slots whose first value (the show
    count) is 0 — Paddle leaves those outputs 0."""
    n, c = x.shape
    shows = x.reshape(n, c // slot_dim, slot_dim)[:, :, :1]
    return xp.broadcast_to(xp.abs(shows) < 1e-5, (n, c // slot_dim, slot_dim)).reshape(n, c)


def _dn_forward(ctx, x, batch_size, batch_sum, batch_square_sum, scale_w, bias):
    xp, attrs = ctx.xp, ctx.attrs
    x, back = _dn_rows(x, attrs)
    means = batch_sum / batch_size
    scales = xp.sqrt(batch_size / batch_square_sum)
    y = (x - means) * scales
    if attrs.get("enable_scale_and_shift", False) and scale_w is not None:
        y = y * scale_w + bias
    slot_dim = attrs.get("slot_dim", -1)
    if slot_dim > 0:
        y = xp.where(_dn_empty_slots(xp, x, slot_dim), 0, y)
    return (back(y.astype(x.dtype, copy=False)), means, scales, batch_size.copy(),
            batch_sum.copy(), batch_square_sum.copy())


def _dn_backward(ctx, x, scales, means, scale_w, bias, dy):
    """X@GRAD = dY * Scales (* scale_w); the statistics' "gradients" are this batch's
    count, sum and centred square sum (+ N * epsilon), which the optimizer folds into the
    running summaries."""
    xp, attrs = ctx.xp, ctx.attrs
    x, back = _dn_rows(x, attrs)
    dy = _dn_rows(dy, attrs)[0]
    n = x.shape[0]
    scale_on = attrs.get("enable_scale_and_shift", False) and scale_w is not None
    dx = dy * scales * (scale_w if scale_on else 1.0)
    slot_dim = attrs.get("slot_dim", -1)
    if slot_dim > 0:
        dx = xp.where(_dn_empty_slots(xp, x, slot_dim), 0, dx)
    d_size = xp.full((x.shape[1],), float(n), dtype=x.dtype)
    d_sum = x.sum(axis=0)
    d_square = ((x - means) ** 2).sum(axis=0) + n * attrs.get("epsilon", 1e-4)
    d_scale = d_bias = None
    if scale_on:
        d_scale = (dy * (x - means) * scales).sum(axis=0)
        d_bias = dy.sum(axis=0)
    return (back(dx.astype(x.dtype, copy=False)), d_size, d_sum.astype(x.dtype),
            d_square.astype(x.dtype), d_scale, d_bias)


def _dn_grad_maker(g):
    ins = {"X": g.input("X"), "Scales": g.output("Scales"), "Means": g.output("Means"),
           "scale_w": g.input("scale_w"), "bias": g.input("bias"),
           "Y@GRAD": g.output_grad("Y")}
    outs = {s + "@GRAD": g.input_grad(s) for s in
            ("X", "BatchSize", "BatchSum", "BatchSquareSum", "scale_w", "bias")
            if g.has_input(s)}
    return [g.op("data_norm_grad", ins, outs)]


def _dn_grad_shapes(ctx):
    if ctx.has_output("X@GRAD"):
        ctx.set_output("X@GRAD", ctx.input_shape("X"), ctx.input_dtype("X"))
    c = _dn_channels(ctx, ctx.input_shape("X"))
    for slot in ("BatchSize", "BatchSum", "BatchSquareSum", "scale_w", "bias"):
        if ctx.has_output(slot + "@GRAD"):
            ctx.set_output(slot + "@GRAD", (c,), ctx.input_dtype("X"))


_dn_grad_maker.grad_type = "data_norm_grad"
_DN_ATTRS = {"epsilon": ("float", 1e-4), "slot_dim": ("int", -1),
             "summary_decay_rate": ("float", 0.9999999), "sync_stats": ("bool", False),
             "enable_scale_and_shift": ("bool", False), "data_layout": ("string", "NCHW")}

def_op("data_norm",
       inputs=["X", "BatchSize", "BatchSum", "BatchSquareSum", "scale_w?", "bias?"],
       outputs=["Y", "Means", "Scales", "BatchSize?", "BatchSum?", "BatchSquareSum?"],
       attrs=_DN_ATTRS, infer_shape=_dn_infer_shape, grad=_dn_grad_maker,
       kernel=_dn_forward,
       doc="""data_norm: normalisation by running summaries (CTR models): Means =
BatchSum / BatchSize, Scales = sqrt(BatchSize / BatchSquareSum), Y = (X - Means) * Scales
(* scale_w + bias with enable_scale_and_shift). slot_dim > 0: X's columns are slots of
slot_dim values whose first is a show count; slots with show 0 give 0. The summaries come
out unchanged (BatchSize/BatchSum/BatchSquareSum outputs are the same variables).""")
def_op("data_norm_grad",
       inputs=["X", "Scales", "Means", "scale_w?", "bias?", "Y@GRAD"],
       outputs=["X@GRAD?", "BatchSize@GRAD?", "BatchSum@GRAD?", "BatchSquareSum@GRAD?",
                "scale_w@GRAD?", "bias@GRAD?"],
       attrs=_DN_ATTRS,
       infer_shape=_dn_grad_shapes, kernel=_dn_backward,
       doc=_dn_backward.__doc__)


# --- inplace_abn: batch_norm fused with an invertible activation --------------------------------
def _abn_activate(xp, z, attrs):
    act, alpha = attrs.get("activation", ""), attrs.get("alpha", 1.0)
    if act == "leaky_relu":
        return xp.where(z >= 0, z, alpha * z)
    if act == "elu":
        return xp.where(z >= 0, z, alpha * (xp.exp(xp.minimum(z, 0)) - 1))
    return z


def _abn_undo(xp, y, dy, attrs):
    """(pre-activation z, dL/dz) from the output Y (the activation is inverted, since X
    was overwritten by Y)."""
    act, alpha = attrs.get("activation", ""), attrs.get("alpha", 1.0)
    if act == "leaky_relu":
        return xp.where(y >= 0, y, y / alpha), xp.where(y >= 0, dy, dy * alpha)
    if act == "elu":
        return (xp.where(y >= 0, y, xp.log1p(xp.minimum(y, 0) / alpha)),
                xp.where(y >= 0, dy, dy * (y + alpha)))
    return y, dy


def _abn_forward(ctx, x, scale, bias, mean, variance, momentum_tensor):
    outs = list(_bn_forward(ctx, x, scale, bias, mean, variance, momentum_tensor))
    outs[0] = _abn_activate(ctx.xp, outs[0], ctx.attrs).astype(x.dtype, copy=False)
    return tuple(outs)


def _abn_backward(ctx, y, scale, bias, mean_out, variance_out, saved_mean, saved_inv_std, dy):
    xp, attrs = ctx.xp, ctx.attrs
    axis = _channel_axis(attrs, y.ndim)
    bshape = [1] * y.ndim
    bshape[axis] = y.shape[axis]
    reduce_axes = tuple(i for i in range(y.ndim) if i != axis)
    z, dz = _abn_undo(xp, y, dy, attrs)
    x_hat = (z - bias.reshape(bshape)) / scale.reshape(bshape)
    global_stats = attrs.get("is_test", False) or attrs.get("use_global_stats", False)
    inv_std = 1.0 / xp.sqrt(variance_out + attrs.get("epsilon", 1e-5)) if global_stats \
        else saved_inv_std
    d_bias = dz.sum(axis=reduce_axes)
    d_scale = (dz * x_hat).sum(axis=reduce_axes)
    k = (scale * inv_std).reshape(bshape)
    if global_stats:
        dx = dz * k
    else:
        m = y.size // y.shape[axis]
        dx = k * (dz - (d_bias.reshape(bshape) + x_hat * d_scale.reshape(bshape)) / m)
    return (dx.astype(y.dtype, copy=False) if ctx.wants("X@GRAD") else None,
            d_scale.astype(scale.dtype) if ctx.wants("Scale@GRAD") else None,
            d_bias.astype(bias.dtype) if ctx.wants("Bias@GRAD") else None)


def _abn_grad_maker(g):
    ins = {"Y": g.output("Y"), "Scale": g.input("Scale"), "Bias": g.input("Bias"),
           "MeanOut": g.output("MeanOut"), "VarianceOut": g.output("VarianceOut"),
           "SavedMean": g.output("SavedMean"), "SavedVariance": g.output("SavedVariance"),
           "Y@GRAD": g.output_grad("Y")}
    outs = {s + "@GRAD": g.input_grad(s) for s in ("X", "Scale", "Bias")}
    return [g.op("inplace_abn_grad", ins, outs)]


_abn_grad_maker.grad_type = "inplace_abn_grad"
_ABN_ATTRS = dict(_BN_ATTRS, activation=("string", "identity",
                                         lambda v: None if v in ("", "identity", "leaky_relu",
                                                                 "elu")
                                         else "'identity', 'leaky_relu' or 'elu'"),
                  alpha=("float", 1.0))

def_op("inplace_abn",
       inputs=["X", "Scale", "Bias", "Mean", "Variance", "MomentumTensor?"],
       outputs=["Y", "MeanOut", "VarianceOut", "SavedMean!", "SavedVariance!",
                "ReserveSpace?"],
       attrs=_ABN_ATTRS, infer_shape=_bn_infer_shape, grad=_abn_grad_maker,
       kernel=_abn_forward,
       doc="""inplace_abn: batch_norm followed by ``activation`` (identity, leaky_relu with
slope alpha, or elu with alpha), written over X (Y is X's variable). The gradient reads Y
only: it inverts the activation to recover x_hat = (z - Bias) / Scale.""")
def_op("inplace_abn_grad",
       inputs=["Y", "Scale", "Bias", "MeanOut?", "VarianceOut?", "SavedMean",
               "SavedVariance", "Y@GRAD"],
       outputs=["X@GRAD?", "Scale@GRAD?", "Bias@GRAD?"], attrs=_ABN_ATTRS,
       infer_shape=grads_like(**{"X@GRAD": "Y", "Scale@GRAD": "Scale", "Bias@GRAD": "Bias"}),
       kernel=_abn_backward,
       doc="""Gradient of inplace_abn from Y: z = activation^-1(Y), dz = dY *
activation'(z), x_hat = (z - Bias) / Scale, then batch_norm's gradient with dz.""")
