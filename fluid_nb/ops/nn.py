"""Neural-network ops: softmax, dropout, prelu and label_smooth here (convolution and
pooling are in ``conv``, batch_norm and layer_norm in ``norm``: the op index loads each
module for its own ops)."""
import numpy as np

from .. import c_parts
from ..errors import PreconditionNotMet, expected
from ..tensor.dtypes import VarType
from ..framework.registry import def_op, grad_maker, same_shape


# --- softmax -----------------------------------------------------------------------------
def _softmax_infer_shape(ctx):
    shape = ctx.input_shape("X")
    axis = ctx.attrs().get("axis", -1)
    rank = max(len(shape), 1)
    ctx.check(-rank <= axis < rank, "attribute 'axis'", f"in [{-rank}, {rank - 1}] for X of "
              f"rank {len(shape)}", axis)
    ctx.set_output("Out", shape, ctx.input_dtype("X"))


#: the host softmax over rows compiled code runs (ops/_norms.cc over the runtime's rows)
_norms = c_parts.load("fluid_nb.ops._norms", "the interpreter's layer norm and softmax")


def _along_rows(x, axis):
    """``x`` as [rows, its last dim] for the rows' C kernels, or None: another axis, a
    CuPy array (the NumPy formula then; the kernels take only contiguous float32 and float64
    rows, and answer NotImplemented otherwise)."""
    if axis not in (-1, x.ndim - 1) or not isinstance(x, np.ndarray):
        return None
    return x.reshape(-1, x.shape[-1]) if x.shape[-1] else None


def _softmax(ctx, x):
    xp = ctx.xp
    if x.ndim == 0:
        return xp.ones_like(x)
    axis = ctx.attrs.get("axis", -1)
    rows = _along_rows(x, axis)
    if rows is not None:
        done = _norms.softmax(rows)
        if done is not NotImplemented:
            return done.reshape(x.shape)
    e = xp.exp(x - x.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(x.dtype, copy=False)


def _softmax_grad(ctx, out, dout):
    if out.ndim == 0:
        return ctx.xp.zeros_like(dout)
    axis = ctx.attrs.get("axis", -1)
    rows = _along_rows(out, axis)
    if rows is not None and dout.shape == out.shape:
        done = _norms.softmax_grad(rows, dout.reshape(rows.shape))
        if done is not NotImplemented:
            return done.reshape(out.shape)
    dx = out * (dout - (dout * out).sum(axis=axis, keepdims=True))
    return dx.astype(dout.dtype, copy=False)


_SOFTMAX_ATTRS = {
    "axis": ("int", -1),
    # Paddle's "extra" attributes (Paddle 2.6 defaults: "AnyLayout", True, False, False):
    # typed, not filled in, as Paddle 2.6 does not write them into programs; no effect here
    "data_format": ("string", None),
    "use_cudnn": ("bool", None),
    "use_mkldnn": ("bool", None),
    "is_test": ("bool", None),
}

def_op("softmax", inputs=["X"], outputs=["Out"], attrs=_SOFTMAX_ATTRS,
       infer_shape=_softmax_infer_shape, share_lod=("X", ["Out"]),
       grad=grad_maker("softmax_grad", outputs=["Out"], out_grads=["Out"], in_grads=["X"]),
       kernel=_softmax, plain_kernel=_softmax,
       doc="Out = exp(X - max(X)) / sum(exp(X - max(X))) along ``axis``.")
def_op("softmax_grad", inputs=["Out", "Out@GRAD"], outputs=["X@GRAD"], attrs=_SOFTMAX_ATTRS,
       infer_shape=same_shape("Out@GRAD", "X@GRAD"), kernel=_softmax_grad,
       doc="X@GRAD = Out * (dOut - sum(dOut * Out, axis)).")


# --- dropout -----------------------------------------------------------------------------
def _dropout_infer_shape(ctx):
    shape = ctx.input_shape("X")
    ctx.set_output("Out", shape, ctx.input_dtype("X"))
    if ctx.has_output("Mask"):
        ctx.set_output("Mask", shape, VarType.UINT8)


def _dropout_random_state(ctx, seed_tensor):
    """Paddle's seed order: the Seed input, then ``seed`` when ``fix_seed``, then the
    program's random_seed / fresh entropy."""
    if seed_tensor is not None:
        seed = int(seed_tensor.reshape(-1)[0])
        if seed:
            return ctx.random_state(seed=seed % (2 ** 32))
    if ctx.attrs.get("fix_seed", False) and ctx.attrs.get("seed", 0):
        return ctx.random_state("seed")
    return ctx.random_state(seed_attr="")  # no op seed: the program's seed or entropy


_DRAWN_IN_ONE_PASS = (np.dtype("float32"), np.dtype("float64"))
#: dropout's draw in one pass (ops/_draws.cc)
_draws = c_parts.load("fluid_nb.ops._draws", "dropout's draw in one pass")


def _layout_agrees():
    """Whether ops/_draws.cc may read an MT19937's words itself: NumPy's layout of the
    generator's state is not its public API, so a generator advanced into its words is
    compared with its own account of them."""
    probe = np.random.MT19937(20260515)
    probe.random_raw(3)
    state = probe.state["state"]
    return bool(_draws.layout_agrees(probe.capsule, np.ascontiguousarray(state["key"], np.uint32),
                                     int(state["pos"])))


#: _layout_agrees(), asked at the first draw (None until then): importing numpy.random here
#: would put it and the hashing modules it loads, 6 MB, in every process that runs a relu
_own_generator = None


def _dropout(ctx, x, seed_tensor):
    xp, attrs = ctx.xp, ctx.attrs
    p = float(attrs.get("dropout_prob", 0.5))
    upscale = attrs.get("dropout_implementation", "downgrade_in_infer") == "upscale_in_train"
    if attrs.get("is_test", False):
        out = x.copy() if upscale else x * (1.0 - p)
        return out.astype(x.dtype, copy=False), None  # Paddle writes no Mask when testing
    if p == 1.0:
        return xp.zeros_like(x), xp.zeros(x.shape, dtype=xp.uint8)
    # a unit is dropped when its uniform draw falls below p (Paddle's rule)
    random_state = _dropout_random_state(ctx, seed_tensor)
    generator = getattr(random_state, "_bit_generator", None)
    if (xp is np and x.dtype in _DRAWN_IN_ONE_PASS and x.flags.c_contiguous
            and isinstance(generator, np.random.MT19937)):
        # the same draws, mask and values in one pass, without an array of doubles
        global _own_generator
        if _own_generator is None:
            _own_generator = _layout_agrees()
        with generator.lock:
            return _draws.dropout_draw(generator.capsule, x, p, upscale, _own_generator)
    keep = random_state.uniform(0.0, 1.0, x.shape) >= p
    mask = xp.asarray(keep.astype(np.uint8))
    out = x * mask
    if upscale:
        out = out / (1.0 - p)
    return out.astype(x.dtype, copy=False), mask


def _dropout_grad(ctx, mask, dout):
    # runtime tensors in: a test-mode dropout wrote no Mask, and its gradient reads none
    attrs = ctx.attrs
    p = float(attrs.get("dropout_prob", 0.5))
    upscale = attrs.get("dropout_implementation", "downgrade_in_infer") == "upscale_in_train"
    dout = dout.array
    if attrs.get("is_test", False):
        dx = dout.copy() if upscale else dout * (1.0 - p)
        return dx.astype(dout.dtype, copy=False)
    if mask is None or mask.array is None:
        raise PreconditionNotMet(expected("dropout_grad", "input 'Mask'", "the mask a training "
                                          "dropout wrote", "no value"))
    mask = mask.array
    if upscale:
        dx = ctx.xp.zeros_like(dout) if p == 1.0 else dout * mask / (1.0 - p)
    else:
        dx = dout * mask
    return dx.astype(dout.dtype, copy=False)


_DROPOUT_ATTRS = {
    "dropout_prob": ("float", 0.5, lambda v: None if 0.0 <= v <= 1.0 else "a value in [0, 1]"),
    "is_test": ("bool", False),
    "dropout_implementation": ("string", "downgrade_in_infer",
                               lambda v: None if v in ("downgrade_in_infer", "upscale_in_train")
                               else "'downgrade_in_infer' or 'upscale_in_train'"),
    # "extra" attributes in Paddle 2.6 (defaults False and 0): typed, not filled in
    "fix_seed": ("bool", None),
    "seed": ("int", None),
}

def_op("dropout", inputs=["X", "Seed?"], outputs=["Out", "Mask!"], attrs=_DROPOUT_ATTRS,
       infer_shape=_dropout_infer_shape, share_lod=("X", ["Out"]),
       grad=grad_maker("dropout_grad", outputs=["Mask"], out_grads=["Out"], in_grads=["X"]),
       kernel=_dropout, traits=("stateful", "infer_from_x"),  # (the mask is drawn)
       doc="""dropout: Mask[i] = 0 with probability dropout_prob (uniform draw < p), else 1
(uint8). Training: Out = X * Mask ("downgrade_in_infer", the default) or
X * Mask / (1 - p) ("upscale_in_train"). is_test: Out = X * (1 - p), or X when
upscale_in_train (no Mask). The Seed input, or ``seed`` with fix_seed, fixes the draw.""")
def_op("dropout_grad", inputs=["Mask", "Out@GRAD"], outputs=["X@GRAD"], attrs=_DROPOUT_ATTRS,
       infer_shape=same_shape("Out@GRAD", "X@GRAD"), kernel=_dropout_grad, lod_aware=True,
       doc="X@GRAD = dOut * Mask (/ (1 - p) when upscale_in_train); with is_test "
           "dOut * (1 - p), or dOut when upscale_in_train.")


# --- prelu -----------------------------------------------------------------------------------
def _prelu_alpha(xp, x, alpha, attrs):
    """Alpha laid out to broadcast against X by ``mode``: one value (all), one per channel
    (channel: dim 1, or the last dim with data_format NHWC), one per element of a sample
    (element)."""
    mode = attrs.get("mode", "all")
    if mode == "all":
        return alpha.reshape(())
    if mode == "channel":
        shape = [1] * x.ndim
        axis = x.ndim - 1 if attrs.get("data_format", "NCHW") == "NHWC" else 1
        shape[axis] = -1
        return alpha.reshape(shape)
    return alpha.reshape((1,) + x.shape[1:])


def _prelu_infer_shape(ctx):
    x_shape, a_shape = ctx.input_shape("X"), ctx.input_shape("Alpha")
    mode = ctx.attrs().get("mode", "all")
    count = 1
    for d in a_shape:
        count = -1 if d < 0 or count < 0 else count * d
    if mode == "all":
        ctx.check(count in (-1, 1), "input 'Alpha'", "one value for mode 'all'",
                  list(a_shape))
    elif mode == "channel":
        ctx.check(len(x_shape) >= 2, "input 'X'", "rank >= 2 for mode 'channel'",
                  list(x_shape))
        axis = len(x_shape) - 1 if ctx.attrs().get("data_format") == "NHWC" else 1
        c = x_shape[axis]
        ctx.check(count < 0 or c < 0 or count == c, "input 'Alpha'",
                  f"{c} values (one per channel)", list(a_shape))
    else:
        per_sample = 1
        for d in x_shape[1:]:
            per_sample = -1 if d < 0 or per_sample < 0 else per_sample * d
        ctx.check(count < 0 or per_sample < 0 or count == per_sample, "input 'Alpha'",
                  f"{per_sample} values (one per element of a sample)", list(a_shape))
    ctx.set_output("Out", x_shape, ctx.input_dtype("X"))


def _prelu(ctx, x, alpha):
    a = _prelu_alpha(ctx.xp, x, alpha, ctx.attrs)
    return ctx.xp.where(x > 0, x, a * x).astype(x.dtype, copy=False)


def _prelu_grad(ctx, x, alpha, dout):
    xp = ctx.xp
    a = _prelu_alpha(xp, x, alpha, ctx.attrs)
    dx = da = None
    if ctx.wants("X@GRAD"):
        dx = xp.where(x > 0, dout, a * dout).astype(x.dtype, copy=False)
    if ctx.wants("Alpha@GRAD"):
        contribution = xp.where(x > 0, 0, x * dout)
        a_full = xp.broadcast_to(a, x.shape) if a.ndim else None
        if a_full is None:
            da = contribution.sum()
        else:
            axes = tuple(i for i in range(x.ndim) if a.shape[i] == 1)
            da = contribution.sum(axis=axes)
        da = da.reshape(alpha.shape).astype(alpha.dtype, copy=False)
    return dx, da


_PRELU_ATTRS = {"mode": ("string", "all",
                         lambda v: None if v in ("all", "channel", "element")
                         else "'all', 'channel' or 'element'"),
                "data_format": ("string", "NCHW")}

def_op("prelu", inputs=["X", "Alpha"], outputs=["Out"], attrs=_PRELU_ATTRS,
       infer_shape=_prelu_infer_shape, share_lod=("X", ["Out"]),
       grad=grad_maker("prelu_grad", inputs=["X", "Alpha"], out_grads=["Out"],
                       in_grads=["X", "Alpha"]),
       kernel=_prelu,
       doc="""prelu: Out = X where X > 0, Alpha * X elsewhere; Alpha is one value (mode
'all'), one per channel ('channel', dim 1 or the last with data_format NHWC) or one per
element of a sample ('element', shape [1, *X.shape[1:]]).""")
def_op("prelu_grad", inputs=["X", "Alpha", "Out@GRAD"], outputs=["X@GRAD?", "Alpha@GRAD?"],
       attrs=_PRELU_ATTRS,
       infer_shape=lambda ctx: _grads_like_inputs(ctx, ("X", "Alpha")), kernel=_prelu_grad,
       doc="X@GRAD = dOut where X > 0, Alpha * dOut elsewhere; Alpha@GRAD = the sum of "
           "X * dOut over the negative X each alpha value scales.")


def _grads_like_inputs(ctx, slots):
    for slot in slots:
        if ctx.has_output(slot + "@GRAD"):
            ctx.set_output(slot + "@GRAD", ctx.input_shape(slot), ctx.input_dtype(slot))


# --- label_smooth --------------------------------------------------------------------------------
def _label_smooth(ctx, x, prior):
    eps = ctx.attrs.get("epsilon", 0.0)
    if prior is not None:
        out = (1.0 - eps) * x + eps * prior.reshape(1, -1)
    else:
        out = (1.0 - eps) * x + eps / x.shape[-1]
    return out.astype(x.dtype, copy=False)


def _label_smooth_grad(ctx, dout):
    return ((1.0 - ctx.attrs.get("epsilon", 0.0)) * dout).astype(dout.dtype, copy=False)


_LS_ATTRS = {"epsilon": ("float", 0.0,
                         lambda v: None if 0.0 <= v <= 1.0 else "a value in [0, 1]")}

def_op("label_smooth", inputs=["X", "PriorDist?"], outputs=["Out"], attrs=_LS_ATTRS,
       infer_shape=same_shape("X", "Out"), share_lod=("X", ["Out"]),
       grad=grad_maker("label_smooth_grad", out_grads=["Out"], in_grads=["X"]),
       kernel=_label_smooth,
       doc="""label_smooth: Out = (1 - epsilon) * X + epsilon * PriorDist, with PriorDist
[1, K] or, without it, the uniform 1 / K (K the last dim of X).""")
def_op("label_smooth_grad", inputs=["Out@GRAD"], outputs=["X@GRAD"], attrs=_LS_ATTRS,
       infer_shape=same_shape("Out@GRAD", "X@GRAD"), kernel=_label_smooth_grad,
       doc="X@GRAD = (1 - epsilon) * dOut.")
