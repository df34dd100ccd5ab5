"""Loss ops: cross entropy on probabilities (``cross_entropy``, ``cross_entropy2``) and the
fused ``softmax_with_cross_entropy``.

Hard labels are integer class ids whose shape is the input's with the class dim set to 1 (for
``cross_entropy`` the class dim may also be dropped). A sample whose label equals
``ignore_index`` has loss 0 and gradient 0; any other label must lie in ``[0, classes)``.
On the host a label out of range is an error; on a device, where checking would copy the
labels to the host every step, it counts as ignored (loss and gradient 0).
"""
import numpy as np

from ..errors import InvalidArgument, expected
from ..tensor.tensor import LoDTensor, SelectedRows, index_add
from ..tensor.dtypes import VarType
from ..framework.infer import dims_match
from ..framework.registry import def_op, grad_maker
from ..tensor.transfer import host_list, host_scalar, to_host
from .common import compiled_elementwise, first_out_of_range

_INT_TYPES = (VarType.INT32, VarType.INT64)

#: Paddle's TolerableValue: log(0) is taken as -1e20 rather than -inf, so 0 * log(0) is 0
_HUGE = 1e20


def _log(xp, p):
    positive = p > 0
    return xp.where(positive, xp.log(xp.where(positive, p, 1)), -_HUGE).astype(p.dtype)


def _hard_rows(op, xp, label, classes, ignore_index):
    """Flat masks of the rows that count, and the int64 labels made safe to index."""
    on_gpu = compiled_elementwise(  # (one kernel where the expressions below launch nine)
        xp, "fluid_hard_label_rows", "T label, int64 classes, int64 ignore_index",
        "bool keep, int64 safe",
        "keep = label != ignore_index && label >= 0 && label < classes; "
        "safe = keep ? (long long)label : 0;")
    if on_gpu is not None:
        return on_gpu(label.reshape(-1), classes, ignore_index)
    label = label.reshape(-1).astype("int64")
    keep = label != ignore_index
    bad = keep & ((label < 0) | (label >= classes))
    if xp is not np:  # no host copy to check: an id out of range is ignored (module doc)
        keep = keep & ~bad
    elif bool(bad.any()):
        raise InvalidArgument(expected(op, "Label", f"class ids in [0, {classes}) or "
                                       f"ignore_index {ignore_index}",
                                       int(label[bad][0])))
    return keep, xp.where(keep, label, 0)


def _ids_in_range(xp, label, classes, ignore_index):
    """The labels as flat int64 ids when every one is a class id, in ``[0, classes)``, and
    ``ignore_index`` is none (so no sample is ignored): the usual batch, which needs no
    masks; None for any other, and on a device (a check there would copy the ids to the
    host). One comparison checks both bounds: a negative id read unsigned is past any
    class count."""
    if xp is not np or 0 <= ignore_index < classes:
        return None
    ids = label.reshape(-1).astype(np.int64, copy=False)
    return ids if first_out_of_range(ids, classes) is None else None


def _check_label_dtype(ctx, soft):
    dtype = ctx.input_dtype("Label")
    if soft:
        ctx.check(dtype == ctx.input_dtype("X"), "input 'Label' dtype",
                  "X's dtype (soft labels)", dtype.name)
    else:
        ctx.check(dtype in _INT_TYPES, "input 'Label' dtype", "int64 (or int32) class ids",
                  dtype.name)


# --- cross_entropy / cross_entropy2 -------------------------------------------------------
def _xe_infer_y(ctx, soft):
    x, label = ctx.input_shape("X"), ctx.input_shape("Label")
    rank = len(x)
    ctx.check(rank >= 1, "input 'X'", "rank >= 1", list(x))
    lead = min(rank - 1, len(label))
    ctx.check(all(dims_match(a, b) for a, b in zip(x[:lead], label[:lead])),
              f"shapes of X {list(x)} and Label {list(label)}",
              "equal dims except the last", "a mismatch")
    if soft:
        ctx.check(len(label) == rank and dims_match(label[-1], x[-1]),
                  "input 'Label' (soft_label)", f"shape {list(x)}", list(label))
    elif len(label) == rank:
        ctx.check(dims_match(label[-1], 1), "input 'Label'", "last dim 1 (hard labels)",
                  list(label))
    else:
        ctx.check(len(label) == rank - 1, "input 'Label'",
                  f"rank {rank} or {rank - 1} (hard labels)", list(label))
    _check_label_dtype(ctx, soft)
    y = list(label)
    if len(label) == rank:
        y[-1] = 1
    ctx.set_output("Y", y, ctx.input_dtype("X"))
    return x


def _cross_entropy(ctx, x, label):
    xp = ctx.xp
    if ctx.attrs["soft_label"]:
        y = -(label * _log(xp, x)).sum(axis=-1, keepdims=True)
        return y.astype(x.dtype).reshape(_y_shape(x, label))
    return _hard_xe(ctx, "cross_entropy", x, label)[0]


def _y_shape(x, label):
    return label.shape[:-1] + (1,) if label.ndim == x.ndim else label.shape


def _hard_xe(ctx, op, x, label):
    """(Y, MatchX): loss and the probability picked for each sample."""
    xp = ctx.xp
    classes = x.shape[-1]
    probs = x.reshape(-1, classes)
    ignore_index = ctx.attrs["ignore_index"]
    ids = _ids_in_range(xp, label, classes, ignore_index)
    if ids is not None:  # (no sample ignored: no masks)
        match = probs[np.arange(probs.shape[0]), ids]
        # (-log of a positive probability; a zero or NaN one takes _log's -1e20 rule)
        y = -np.log(match) if match.size and np.minimum.reduce(match) > 0 \
            else -_log(xp, match)
        return y.reshape(_y_shape(x, label)), match
    keep, safe = _hard_rows(op, xp, label, classes, ignore_index)
    match = xp.where(keep, probs[xp.arange(probs.shape[0]), safe], 0).astype(x.dtype)
    y = xp.where(keep, -_log(xp, match), 0).astype(x.dtype)
    return y.reshape(_y_shape(x, label)), match


def _cross_entropy_grad(ctx, x, label, dy):
    xp = ctx.xp
    classes = x.shape[-1]
    dy = dy.reshape(-1, 1)
    if ctx.attrs["soft_label"]:
        dx = -label.reshape(-1, classes) * dy / x.reshape(-1, classes)
    else:
        keep, safe = _hard_rows("cross_entropy_grad", xp, label, classes,
                                   ctx.attrs["ignore_index"])
        hit = (xp.arange(classes)[None, :] == safe[:, None]) & keep[:, None]
        dx = xp.where(hit, -dy / xp.where(hit, x.reshape(-1, classes), 1), 0)
    return dx.astype(x.dtype).reshape(x.shape)


def _xe_grad_infer(ctx):
    ctx.set_output("X@GRAD", ctx.input_shape("X"), ctx.input_dtype("Y@GRAD"))


def_op("cross_entropy",
       inputs=["X", "Label"], outputs=["Y"],
       attrs={"soft_label": ("bool", False), "ignore_index": ("int", -100)},
       infer_shape=lambda ctx: _xe_infer_y(ctx, ctx.attr("soft_label")),
       share_lod=("X", ["Y"]),
       grad=grad_maker("cross_entropy_grad", inputs=["X", "Label"], out_grads=["Y"],
                       in_grads=["X"]),
       kernel=_cross_entropy,
       doc="Cross entropy of probabilities X (classes on the last dim) against Label.\n"
           "Hard labels: Y[i] = -log(X[i, Label[i]]) (0 where Label[i] == ignore_index).\n"
           "Soft labels (soft_label=True, Label shaped like X): Y[i] = -sum_j Label[i,j] * "
           "log(X[i,j]).\nlog(0) is taken as -1e20. Y has X's shape with the last dim 1.")

def_op("cross_entropy_grad",
       inputs=["X", "Label", "Y@GRAD"], outputs=["X@GRAD"],
       attrs={"soft_label": ("bool", False), "ignore_index": ("int", -100)},
       infer_shape=_xe_grad_infer, share_lod=("X", ["X@GRAD"]),
       kernel=_cross_entropy_grad,
       doc="Gradient of cross_entropy: dX[i,j] = -dY[i] * Label[i,j] / X[i,j] (soft), or "
           "-dY[i] / X[i, Label[i]] at the label's column and 0 elsewhere (hard).")


def _xe2_infer(ctx):
    x = _xe_infer_y(ctx, soft=False)
    ctx.set_output("XShape", tuple(x) + (0,), ctx.input_dtype("X"))
    ctx.set_output("MatchX", tuple(x[:-1]) + (1,), ctx.input_dtype("X"))


def _cross_entropy2(ctx, x, label):
    y, match = _hard_xe(ctx, "cross_entropy2", x, label)
    # XShape carries only X's shape (with a trailing 0), as in Paddle
    xshape = ctx.xp.zeros(x.shape + (0,), dtype=x.dtype)
    return y, xshape, match.reshape(x.shape[:-1] + (1,))


def _cross_entropy_grad2(ctx, label, match_x, xshape, dy):
    xp = ctx.xp
    shape = xshape.shape[:-1]
    classes = shape[-1]
    keep, safe = _hard_rows("cross_entropy_grad2", xp, label, classes,
                               ctx.attrs["ignore_index"])
    match = match_x.reshape(-1, 1)
    hit = (xp.arange(classes)[None, :] == safe[:, None]) & keep[:, None]
    dx = xp.where(hit, -dy.reshape(-1, 1) / xp.where(keep[:, None], match, 1), 0)
    return dx.astype(dy.dtype).reshape(shape)


def _xe2_grad_infer(ctx):
    ctx.set_output("X@GRAD", ctx.input_shape("XShape")[:-1], ctx.input_dtype("Y@GRAD"))


def_op("cross_entropy2",
       inputs=["X", "Label"], outputs=["Y", "XShape", "MatchX"],
       attrs={"ignore_index": ("int", -100)},
       infer_shape=_xe2_infer, share_lod=("X", ["Y", "XShape"]),
       traits=("infer_from_inputs",),
       grad=grad_maker("cross_entropy_grad2", inputs=["Label"], outputs=["MatchX", "XShape"],
                       out_grads=["Y"], in_grads=["X"]),
       kernel=_cross_entropy2,
       doc="Hard-label cross entropy that keeps what its gradient needs instead of X:\n"
           "MatchX[i] = X[i, Label[i]], Y[i] = -log(MatchX[i]) (both 0 where Label[i] == "
           "ignore_index); XShape is an empty tensor shaped X.shape + [0].")

def_op("cross_entropy_grad2",
       inputs=["Label", "MatchX", "XShape", "Y@GRAD"], outputs=["X@GRAD"],
       attrs={"ignore_index": ("int", -100)},
       infer_shape=_xe2_grad_infer, share_lod=("XShape", ["X@GRAD"]),
       kernel=_cross_entropy_grad2,
       doc="Gradient of cross_entropy2: dX[i, Label[i]] = -dY[i] / MatchX[i], 0 elsewhere.")


# --- softmax_with_cross_entropy -----------------------------------------------------------
_SWCE_ATTRS = {
    "soft_label": ("bool", False),
    "use_softmax": ("bool", True),
    "numeric_stable_mode": ("bool", True),
    "ignore_index": ("int", -100),
    "axis": ("int", -1),
}


def _swce_check(ctx, shape, label):
    rank = len(shape)
    axis = ctx.attr("axis")
    ctx.check(-rank <= axis < rank, "attribute 'axis'", f"in [{-rank}, {rank})", axis)
    axis %= rank
    ctx.check(len(label) == rank and all(dims_match(a, b) for i, (a, b)
                                         in enumerate(zip(shape, label)) if i != axis),
              f"shapes of Logits {list(shape)} and Label {list(label)}",
              f"equal dims except axis {axis}", "a mismatch")
    if ctx.attr("soft_label"):
        ctx.check(dims_match(label[axis], shape[axis]), "input 'Label' (soft_label)",
                  f"dim {axis} equal to Logits' {shape[axis]}", label[axis])
    else:
        ctx.check(dims_match(label[axis], 1), "input 'Label'",
                  f"dim {axis} of size 1 (hard labels)", list(label))
    return axis


def _swce_infer(ctx):
    logits = ctx.input_shape("Logits")
    axis = _swce_check(ctx, logits, ctx.input_shape("Label"))
    if axis != len(logits) - 1:
        ctx.check(ctx.attr("numeric_stable_mode"), "attribute 'numeric_stable_mode'",
                  "True when axis is not the last dim", False)
    soft = ctx.attr("soft_label")
    ctx.check(ctx.input_dtype("Label") == ctx.input_dtype("Logits") if soft
              else ctx.input_dtype("Label") in _INT_TYPES, "input 'Label' dtype",
              "Logits' dtype (soft labels)" if soft else "int64 (or int32) class ids",
              ctx.input_dtype("Label").name)
    dtype = ctx.input_dtype("Logits")
    ctx.set_output("Softmax", logits, dtype)
    loss = list(logits)
    loss[axis] = 1
    ctx.set_output("Loss", loss, dtype)


def _hard_axis_label(op, xp, label, classes, ignore_index):
    """The keep-mask and safe-to-index int64 labels, both in the label's own shape."""
    keep, safe = _hard_rows(op, xp, label, classes, ignore_index)
    return keep.reshape(label.shape), safe.reshape(label.shape)


def _plain_hard_labels(attrs, logits, label):
    """The usual case, worth a fast path: [N, C] logits, [N, 1] class ids, softmax on."""
    return (logits.ndim == 2 and label.ndim == 2 and label.shape[1] == 1
            and attrs["axis"] in (-1, 1) and attrs["use_softmax"] and not attrs["soft_label"])


def _rows_and_ids(op, xp, label, classes, ignore_index):
    plain = _ids_in_range(xp, label, classes, ignore_index)
    if plain is not None:
        return np.arange(plain.shape[0]), plain, None
    ids = label.reshape(-1)
    keep = None
    # a device always masks (testing the ids for ignore_index would copy them to the host)
    if xp is not np or 0 <= ignore_index < classes or (
            (ids == ignore_index).any() if ids.size else False):
        keep, ids = _hard_rows(op, xp, label, classes, ignore_index)
    elif ids.size and (int(ids.min()) < 0 or int(ids.max()) >= classes):
        _hard_rows(op, xp, label, classes, ignore_index)  # raises, naming the bad id
    return xp.arange(ids.shape[0]), ids, keep


def _softmax_with_cross_entropy(ctx, logits, label):
    xp, attrs = ctx.xp, ctx.attrs
    if _plain_hard_labels(attrs, logits, label):
        shifted = logits - logits.max(axis=1, keepdims=True)
        exp = xp.exp(shifted)
        total = exp.sum(axis=1, keepdims=True)
        rows, ids, keep = _rows_and_ids("softmax_with_cross_entropy", xp, label,
                                        logits.shape[1], attrs["ignore_index"])
        loss = (xp.log(total[:, 0]) - shifted[rows, ids]).reshape(-1, 1)
        if keep is not None:
            loss = xp.where(keep.reshape(-1, 1), loss, 0)
        return (exp / total).astype(logits.dtype, copy=False), loss.astype(logits.dtype, copy=False)
    axis = attrs["axis"] % logits.ndim
    if attrs["use_softmax"]:
        shifted = logits - logits.max(axis=axis, keepdims=True)
        exp = xp.exp(shifted)
        total = exp.sum(axis=axis, keepdims=True)
        softmax = exp / total
        # log-softmax straight from the logits stays finite where softmax underflows
        log_p = shifted - xp.log(total)
    else:  # the input already holds probabilities
        softmax = logits.copy()
        log_p = _log(xp, logits)
    if attrs["soft_label"]:
        loss = -(label * log_p).sum(axis=axis, keepdims=True)
    else:
        keep, safe = _hard_axis_label("softmax_with_cross_entropy", xp, label,
                                      logits.shape[axis], attrs["ignore_index"])
        loss = xp.where(keep, -xp.take_along_axis(log_p, safe, axis=axis), 0)
    return softmax.astype(logits.dtype), loss.astype(logits.dtype)


def _softmax_with_cross_entropy_grad(ctx, label, softmax, dloss):
    xp, attrs = ctx.xp, ctx.attrs
    if _plain_hard_labels(attrs, softmax, label):
        rows, ids, keep = _rows_and_ids("softmax_with_cross_entropy_grad", xp, label,
                                        softmax.shape[1], attrs["ignore_index"])
        dx = softmax.copy()
        dx[rows, ids] -= 1
        dx *= dloss.reshape(-1, 1)
        if keep is not None:
            dx = xp.where(keep.reshape(-1, 1), dx, 0)
        return dx.astype(dloss.dtype, copy=False)
    axis = attrs["axis"] % softmax.ndim
    if attrs["soft_label"]:
        if attrs["use_softmax"]:
            dx = dloss * (softmax - label)
        else:
            dx = dloss * (-label / softmax)
    else:
        classes = softmax.shape[axis]
        keep, safe = _hard_axis_label("softmax_with_cross_entropy_grad", xp, label, classes,
                                      attrs["ignore_index"])
        ids_shape = [1] * softmax.ndim
        ids_shape[axis] = classes
        hit = xp.arange(classes).reshape(ids_shape) == safe
        if attrs["use_softmax"]:
            dx = dloss * (softmax - hit)
        else:
            dx = xp.where(hit, -dloss / xp.where(hit, softmax, 1), 0)
        dx = xp.where(keep, dx, 0)  # an ignored sample's row gets no gradient
    return dx.astype(dloss.dtype)


def _swce_grad_infer(ctx):
    _swce_check(ctx, ctx.input_shape("Softmax"), ctx.input_shape("Label"))
    ctx.set_output("Logits@GRAD", ctx.input_shape("Softmax"), ctx.input_dtype("Loss@GRAD"))


def_op("softmax_with_cross_entropy",
       inputs=["Logits", "Label"], outputs=["Softmax!", "Loss"],
       attrs=_SWCE_ATTRS,
       infer_shape=_swce_infer, share_lod=("Logits", ["Softmax", "Loss"]),
       traits=("infer_from_inputs",),
       grad=grad_maker("softmax_with_cross_entropy_grad", inputs=["Label"],
                       outputs=["Softmax"], out_grads=["Loss"], in_grads=["Logits"]),
       kernel=_softmax_with_cross_entropy,
       doc="Softmax = softmax(Logits) along ``axis`` (Logits itself when use_softmax=False);\n"
           "hard labels: Loss = -log(Softmax[Label]) = -Logits[Label] + log(sum(exp(Logits)))"
           " (0 where Label == ignore_index);\nsoft labels: Loss = -sum(Label * "
           "log(Softmax)). Loss has Logits' shape with dim ``axis`` 1.")

def_op("softmax_with_cross_entropy_grad",
       inputs=["Label", "Softmax", "Loss@GRAD"], outputs=["Logits@GRAD"],
       attrs=_SWCE_ATTRS,
       infer_shape=_swce_grad_infer,
       kernel=_softmax_with_cross_entropy_grad,
       doc="Gradient of softmax_with_cross_entropy: dLogits = dLoss * (Softmax - onehot(Label))"
           " (soft: Softmax - Label); with use_softmax=False dLogits = -dLoss * Label / "
           "Softmax. Ignored samples get 0.")


# --- the elementwise and pairwise losses of fluid.layers ------------------------------------------
def _like(*pairs):
    """infer_shape: each output takes the shape and dtype of its named input."""
    def infer(ctx):
        for out, src in pairs:
            if ctx.has_output(out):
                ctx.set_output(out, ctx.input_shape(src), ctx.input_dtype(src))
    return infer


def _sigmoid(xp, x):
    return xp.exp(xp.minimum(x, 0)) / (1 + xp.exp(-xp.abs(x)))


def _sce_mask(ctx, label, dtype):
    """The kept elements and the divisor (their count with normalize, at least 1; an array
    scalar of ``dtype``, so a device keeps it)."""
    keep = label != ctx.attrs["ignore_index"]
    count = ctx.xp.maximum(keep.sum(), 1).astype(dtype) if ctx.attrs["normalize"] else 1
    return keep, count


def _sigmoid_ce(ctx, x, label):
    xp = ctx.xp
    keep, count = _sce_mask(ctx, label, x.dtype)
    out = xp.maximum(x, 0) - x * label + xp.log1p(xp.exp(-xp.abs(x)))
    return (xp.where(keep, out, 0) / count).astype(x.dtype)


def _sigmoid_ce_grad(ctx, x, label, dout):
    xp = ctx.xp
    keep, count = _sce_mask(ctx, label, x.dtype)
    return (xp.where(keep, (_sigmoid(xp, x) - label) * dout, 0) / count).astype(x.dtype)


_SCE_ATTRS = {"normalize": ("bool", False), "ignore_index": ("int", -100)}
def_op("sigmoid_cross_entropy_with_logits", inputs=["X", "Label"], outputs=["Out"],
       attrs=_SCE_ATTRS, infer_shape=_like(("Out", "X")),
       grad=grad_maker("sigmoid_cross_entropy_with_logits_grad", inputs=["X", "Label"],
                       in_grads=["X"]),
       kernel=_sigmoid_ce,
       doc="Out = max(X, 0) - X * Label + log(1 + e^-|X|) elementwise (0 where Label is "
           "ignore_index; divided by the count of the others with normalize); dX = "
           "(sigmoid(X) - Label) * dOut likewise.")
def_op("sigmoid_cross_entropy_with_logits_grad", inputs=["X", "Label", "Out@GRAD"],
       outputs=["X@GRAD"], attrs=_SCE_ATTRS, infer_shape=_like(("X@GRAD", "X")),
       kernel=_sigmoid_ce_grad, doc="Gradient of sigmoid_cross_entropy_with_logits.")


def _huber(ctx, x, y):
    xp, delta = ctx.xp, ctx.attrs["delta"]
    r = y - x
    out = xp.where(xp.abs(r) <= delta, 0.5 * r * r, delta * (xp.abs(r) - 0.5 * delta))
    return out.astype(x.dtype), r


def _huber_grad(ctx, residual, dout):
    xp, delta = ctx.xp, ctx.attrs["delta"]
    slope = xp.where(xp.abs(residual) <= delta, residual, delta * xp.sign(residual)) * dout
    return -slope, slope


def_op("huber_loss", inputs=["X", "Y"], outputs=["Out", "Residual!"],
       attrs={"delta": ("float", 1.0)}, infer_shape=_like(("Out", "X"), ("Residual", "X")),
       grad=grad_maker("huber_loss_grad", outputs=["Residual"], in_grads=["X", "Y"]),
       kernel=_huber,
       doc="r = Y - X; Out = r^2 / 2 where |r| <= delta, else delta (|r| - delta / 2); "
           "dY = -dX = dOut * (r, or delta sign(r)).")
def_op("huber_loss_grad", inputs=["Residual", "Out@GRAD"], outputs=["X@GRAD?", "Y@GRAD?"],
       attrs={"delta": ("float", 1.0)},
       infer_shape=_like(("X@GRAD", "Residual"), ("Y@GRAD", "Residual")),
       kernel=_huber_grad, doc="Gradient of huber_loss.")


def _smooth_l1_parts(ctx, x, y, inside):
    diff = x - y
    if inside is not None:
        diff = diff * inside
    return diff


def _smooth_l1(ctx, x, y, inside, outside):
    xp = ctx.xp
    s2 = ctx.attrs["sigma"] ** 2
    diff = _smooth_l1_parts(ctx, x, y, inside)
    loss = xp.where(xp.abs(diff) < 1 / s2, 0.5 * s2 * diff * diff, xp.abs(diff) - 0.5 / s2)
    if outside is not None:
        loss = loss * outside
    out = loss.reshape(len(x), -1).sum(axis=1, keepdims=True).astype(x.dtype)
    return diff.astype(x.dtype), out


def _smooth_l1_grad(ctx, inside, outside, diff, dout):
    xp = ctx.xp
    s2 = ctx.attrs["sigma"] ** 2
    slope = xp.where(xp.abs(diff) < 1 / s2, s2 * diff, xp.sign(diff))
    scale = dout.reshape((len(diff),) + (1,) * (diff.ndim - 1))
    dx = slope * scale
    if outside is not None:
        dx = dx * outside
    if inside is not None:
        dx = dx * inside
    return dx.astype(diff.dtype), (-dx).astype(diff.dtype)


def _smooth_l1_infer(ctx):
    shape = ctx.input_shape("X")
    ctx.set_output("Diff", shape, ctx.input_dtype("X"))
    ctx.set_output("Out", (shape[0], 1), ctx.input_dtype("X"))


def _smooth_l1_grad_maker(g):
    ins = {"InsideWeight": g.input("InsideWeight"), "OutsideWeight": g.input("OutsideWeight"),
           "Diff": g.output("Diff"), "Out@GRAD": g.output_grad("Out")}
    outs = {"X@GRAD": g.input_grad("X"), "Y@GRAD": g.input_grad("Y")}
    return [g.op("smooth_l1_loss_grad", ins, outs)]


def_op("smooth_l1_loss", inputs=["X", "Y", "InsideWeight?", "OutsideWeight?"],
       outputs=["Diff!", "Out"], attrs={"sigma": ("float", 1.0)},
       infer_shape=_smooth_l1_infer, grad=_smooth_l1_grad_maker, kernel=_smooth_l1,
       doc="d = (X - Y) * InsideWeight; l = (sigma d)^2 / 2 where |d| < 1 / sigma^2, else "
           "|d| - 1 / (2 sigma^2); Out = the sum over each row of l * OutsideWeight, [N, 1].")
def_op("smooth_l1_loss_grad",
       inputs=["InsideWeight?", "OutsideWeight?", "Diff", "Out@GRAD"],
       outputs=["X@GRAD?", "Y@GRAD?"], attrs={"sigma": ("float", 1.0)},
       infer_shape=_like(("X@GRAD", "Diff"), ("Y@GRAD", "Diff")),
       kernel=_smooth_l1_grad, doc="Gradient of smooth_l1_loss.")


def _log_loss(ctx, p, label):
    xp, eps = ctx.xp, ctx.attrs["epsilon"]
    return (-label * xp.log(p + eps) - (1 - label) * xp.log(1 - p + eps)).astype(p.dtype)


def _log_loss_grad(ctx, p, label, dloss):
    eps = ctx.attrs["epsilon"]
    return (dloss * (-label / (p + eps) + (1 - label) / (1 - p + eps))).astype(p.dtype)


def_op("log_loss", inputs=["Predicted", "Labels"], outputs=["Loss"],
       attrs={"epsilon": ("float", 1e-4)}, infer_shape=_like(("Loss", "Predicted")),
       grad=grad_maker("log_loss_grad", inputs=["Predicted", "Labels"], out_grads=["Loss"],
                       in_grads=["Predicted"]),
       kernel=_log_loss,
       doc="Loss = -Labels log(Predicted + eps) - (1 - Labels) log(1 - Predicted + eps).")
def_op("log_loss_grad", inputs=["Predicted", "Labels", "Loss@GRAD"],
       outputs=["Predicted@GRAD"], attrs={"epsilon": ("float", 1e-4)},
       infer_shape=_like(("Predicted@GRAD", "Predicted")), kernel=_log_loss_grad,
       doc="Gradient of log_loss.")


def _kldiv_scale(ctx, x):
    reduction = ctx.attrs["reduction"]
    if reduction == "mean":
        return 1.0 / max(x.size, 1)
    if reduction == "batchmean":
        return 1.0 / max(len(x), 1)
    return 1.0


def _kldiv(ctx, x, target):
    xp = ctx.xp
    positive = target > 0
    loss = xp.where(positive, target * (xp.log(xp.where(positive, target, 1)) - x), 0)
    if ctx.attrs["reduction"] == "none":
        return loss.astype(x.dtype)
    return xp.asarray(loss.sum() * _kldiv_scale(ctx, x), dtype=x.dtype)


def _kldiv_grad(ctx, x, target, dloss):
    xp = ctx.xp
    scale = dloss if ctx.attrs["reduction"] == "none" else dloss.reshape(-1)[0]
    return (-xp.where(target > 0, target, 0) * scale * _kldiv_scale(ctx, x)).astype(x.dtype)


def _kldiv_infer(ctx):
    shape = ctx.input_shape("X") if ctx.attrs()["reduction"] == "none" else ()
    ctx.set_output("Loss", shape, ctx.input_dtype("X"))


def _reduction(value):
    if value not in ("none", "mean", "sum", "batchmean"):
        return "one of none, mean, sum, batchmean"
    return None


_KLDIV_ATTRS = {"reduction": ("string", "mean", _reduction)}
def_op("kldiv_loss", inputs=["X", "Target"], outputs=["Loss"], attrs=_KLDIV_ATTRS,
       infer_shape=_kldiv_infer,
       grad=grad_maker("kldiv_loss_grad", inputs=["X", "Target"], out_grads=["Loss"],
                       in_grads=["X"]),
       kernel=_kldiv,
       doc="l = Target (log Target - X) where Target > 0, else 0 (X holds log-probabilities); "
           "Loss = l (none), its sum, its mean, or its sum over the batch size (batchmean).")
def_op("kldiv_loss_grad", inputs=["X", "Target", "Loss@GRAD"], outputs=["X@GRAD"],
       attrs=_KLDIV_ATTRS, infer_shape=_like(("X@GRAD", "X")), kernel=_kldiv_grad,
       doc="Gradient of kldiv_loss.")


def _margin_rank(ctx, x1, x2, label):
    out = ctx.xp.maximum(0, -label * (x1 - x2) + ctx.attrs["margin"]).astype(x1.dtype)
    return out, (out > 0).astype(x1.dtype)


def _margin_rank_grad(ctx, label, activated, dout):
    d1 = -label * activated * dout
    return d1.astype(dout.dtype), (-d1).astype(dout.dtype)


def_op("margin_rank_loss", inputs=["X1", "X2", "Label"], outputs=["Out", "Activated!"],
       attrs={"margin": ("float", 0.0)},
       infer_shape=_like(("Out", "X1"), ("Activated", "X1")),
       grad=grad_maker("margin_rank_loss_grad", inputs=["Label"], outputs=["Activated"],
                       in_grads=["X1", "X2"]),
       kernel=_margin_rank,
       doc="Out = max(0, -Label (X1 - X2) + margin); dX1 = -dX2 = -Label dOut where Out > 0.")
def_op("margin_rank_loss_grad", inputs=["Label", "Activated", "Out@GRAD"],
       outputs=["X1@GRAD?", "X2@GRAD?"], attrs={"margin": ("float", 0.0)},
       infer_shape=_like(("X1@GRAD", "Label"), ("X2@GRAD", "Label")),
       kernel=_margin_rank_grad, doc="Gradient of margin_rank_loss.")


def _rank_infer(ctx):
    """Label, Left and Right each hold one value per pair: [N] or [N, 1] (mixed freely, as
    Fluid allows); Out has Label's shape."""
    shapes = {slot: list(ctx.input_shape(slot)) for slot in ("Label", "Left", "Right")}
    n = shapes["Label"][0] if shapes["Label"] else -1
    for slot, shape in shapes.items():
        ctx.check(len(shape) in (1, 2) and (len(shape) == 1 or dims_match(shape[1], 1))
                  and dims_match(shape[0], n), f"input '{slot}'", f"shape [{n}] or [{n}, 1]",
                  shape)
    ctx.set_output("Out", shapes["Label"], ctx.input_dtype("Left"))


def _rank(ctx, label, left, right):
    o = left.reshape(-1) - right.reshape(-1)
    out = ctx.xp.logaddexp(0, o) - label.reshape(-1) * o
    return out.reshape(label.shape).astype(left.dtype)


def _rank_grad(ctx, label, left, right, dout):
    d = (_sigmoid(ctx.xp, left.reshape(-1) - right.reshape(-1)) - label.reshape(-1)) \
        * dout.reshape(-1)
    return d.reshape(left.shape).astype(left.dtype), (-d).reshape(right.shape).astype(left.dtype)


def_op("rank_loss", inputs=["Label", "Left", "Right"], outputs=["Out"],
       infer_shape=_rank_infer,
       grad=grad_maker("rank_loss_grad", inputs=["Label", "Left", "Right"],
                       in_grads=["Left", "Right"]),
       kernel=_rank,
       doc="o = Left - Right; Out = log(1 + e^o) - Label o (RankNet), each input [N] or "
           "[N, 1], Out shaped as Label; dLeft = -dRight = (sigmoid(o) - Label) dOut.")
def_op("rank_loss_grad", inputs=["Label", "Left", "Right", "Out@GRAD"],
       outputs=["Left@GRAD?", "Right@GRAD?"],
       infer_shape=_like(("Left@GRAD", "Left"), ("Right@GRAD", "Right")),
       kernel=_rank_grad, doc="Gradient of rank_loss.")


def _bpr_parts(ctx, x, label):
    xp = ctx.xp
    label = label.reshape(-1).astype("int64")
    positive = x[xp.arange(len(x)), label][:, None]
    others = xp.ones(x.shape, dtype=bool)
    others[xp.arange(len(x)), label] = False
    return positive - x, others


def _bpr(ctx, x, label):
    xp = ctx.xp
    margin, others = _bpr_parts(ctx, x, label)
    log_sig = -xp.logaddexp(0, -margin)
    out = -(log_sig * others).sum(axis=1, keepdims=True) / max(x.shape[1] - 1, 1)
    return out.astype(x.dtype)


def _bpr_grad(ctx, x, label, dout):
    xp = ctx.xp
    margin, others = _bpr_parts(ctx, x, label)
    weight = (1 - _sigmoid(xp, margin)) * others / max(x.shape[1] - 1, 1) * dout
    dx = weight.copy()
    rows = xp.arange(len(x))
    dx[rows, label.reshape(-1).astype("int64")] = -weight.sum(axis=1)
    return dx.astype(x.dtype)


def _bpr_infer(ctx):
    ctx.set_output("Y", (ctx.input_shape("X")[0], 1), ctx.input_dtype("X"))


def_op("bpr_loss", inputs=["X", "Label"], outputs=["Y"], infer_shape=_bpr_infer,
       grad=grad_maker("bpr_loss_grad", inputs=["X", "Label"], out_grads=["Y"],
                       in_grads=["X"]),
       kernel=_bpr,
       doc="Bayesian personalized ranking: Y_i = -1/(C-1) sum_{j != Label_i} "
           "log sigmoid(X_i,Label_i - X_ij).")
def_op("bpr_loss_grad", inputs=["X", "Label", "Y@GRAD"], outputs=["X@GRAD"],
       infer_shape=_like(("X@GRAD", "X")), kernel=_bpr_grad, doc="Gradient of bpr_loss.")


def _teacher_student(ctx, x, label):
    xp = ctx.xp
    soft = xp.maximum(x, 0) + xp.log1p(xp.exp(-xp.abs(x)))  # log(1 + e^x)
    hard_one = soft - x            # -log(sigmoid(x))
    out = xp.where(label < -1, soft,
                   xp.where(label < 0, hard_one,
                            xp.where(label < 1, soft + soft - x * label,
                                     hard_one + soft - x * (label - 1))))
    return out.astype(x.dtype)


def _teacher_student_grad(ctx, x, label, dy):
    xp, a = ctx.xp, ctx.attrs
    p = _sigmoid(xp, xp.clip(x, a["soft_max_lower_bound"], a["soft_max_up_bound"]))
    dx = xp.where(label < -1, p, xp.where(label < 0, p - 1, xp.where(
        label < 1, 2 * p - label, 2 * p - 1 - (label - 1))))
    return (dx * dy).astype(x.dtype)


_TS_ATTRS = {"soft_max_up_bound": ("float", 15.0), "soft_max_lower_bound": ("float", -15.0)}
def_op("teacher_student_sigmoid_loss", inputs=["X", "Label"], outputs=["Y"],
       attrs=_TS_ATTRS, infer_shape=_like(("Y", "X")),
       grad=grad_maker("teacher_student_sigmoid_loss_grad", inputs=["X", "Label"],
                       out_grads=["Y"], in_grads=["X"]),
       kernel=_teacher_student,
       doc="Label < -1: click 0, no teacher; < 0: click 1, no teacher; in [0, 1): click 0 "
           "and teacher score Label; >= 1: click 1 and teacher score Label - 1. Y sums the "
           "sigmoid cross entropies of X against the click and the teacher score.")
def_op("teacher_student_sigmoid_loss_grad", inputs=["X", "Label", "Y@GRAD"],
       outputs=["X@GRAD"], attrs=_TS_ATTRS, infer_shape=_like(("X@GRAD", "X")),
       kernel=_teacher_student_grad, doc="Gradient of teacher_student_sigmoid_loss.")


def _center_loss(ctx, x, label, centers, rate):
    xp = ctx.xp
    ids = label.reshape(-1).astype("int64")
    # checked on the host only: on a device it would copy the labels there every step
    if xp is np and ids.size and (int(ids.min()) < 0 or int(ids.max()) >= len(centers)):
        raise InvalidArgument(expected("center_loss", "Label", f"class ids in [0, "
                                       f"{len(centers)})", int(ids.max())))
    diff = x - centers[ids]
    loss = 0.5 * (diff * diff).sum(axis=1, keepdims=True)
    new_centers = centers
    if ctx.attrs["need_update"]:
        counts = xp.bincount(ids, minlength=len(centers)).astype(x.dtype)
        moves = xp.zeros_like(centers)
        index_add(xp, moves, ids, -diff)  # sum over the class of (center - x)
        # the rate as an array scalar of the centers' type: a device keeps it
        rate = rate.reshape(-1)[0].astype(moves.dtype)
        new_centers = centers - rate * moves / (1 + counts)[:, None]
    return diff.astype(x.dtype), loss.astype(x.dtype), new_centers.astype(centers.dtype)


def _center_loss_infer(ctx):
    shape = ctx.input_shape("X")
    ctx.set_output("SampleCenterDiff", shape, ctx.input_dtype("X"))
    ctx.set_output("Loss", (shape[0], 1), ctx.input_dtype("X"))
    ctx.set_output("CentersOut", ctx.input_shape("Centers"), ctx.input_dtype("Centers"))


def _center_loss_grad(ctx, diff, dloss):
    return (diff * dloss).astype(diff.dtype)


def_op("center_loss", inputs=["X", "Label", "Centers", "CenterUpdateRate"],
       outputs=["SampleCenterDiff!", "Loss", "CentersOut"],
       attrs={"cluster_num": ("int", 0), "need_update": ("bool", True)},
       infer_shape=_center_loss_infer,
       grad=grad_maker("center_loss_grad", outputs=["SampleCenterDiff"], out_grads=["Loss"],
                       in_grads=["X"]),
       kernel=_center_loss,
       doc="d_i = X_i - Centers[Label_i]; Loss_i = |d_i|^2 / 2; with need_update each center "
           "moves by -rate * sum over its samples of (center - X_i) / (1 + their count); "
           "dX = d * dLoss.")
def_op("center_loss_grad", inputs=["SampleCenterDiff", "Loss@GRAD"], outputs=["X@GRAD"],
       attrs={"cluster_num": ("int", 0), "need_update": ("bool", True)},
       infer_shape=_like(("X@GRAD", "SampleCenterDiff")), kernel=_center_loss_grad,
       doc="Gradient of center_loss.")


# --- warpctc: connectionist temporal classification ----------------------------------------------
def _ctc_one(logits, label, blank):
    """(-log p(label | logits), d(-log p) / d logits) for one sequence: softmax over the
    classes, forward-backward over the label with blanks between and around (log space)."""
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    steps = len(log_probs)
    extended = [blank]
    for token in label:
        extended += [int(token), blank]
    size = len(extended)
    ext = np.array(extended)
    # a step may skip a blank between two different labels
    skip = np.zeros(size, bool)
    skip[2:] = (ext[2:] != blank) & (ext[2:] != ext[:-2])
    neg_inf = -np.inf
    alpha = np.full((steps, size), neg_inf)
    alpha[0, 0] = log_probs[0, ext[0]]
    if size > 1:
        alpha[0, 1] = log_probs[0, ext[1]]
    for t in range(1, steps):
        previous = alpha[t - 1]
        stay = previous
        step = np.concatenate([[neg_inf], previous[:-1]])
        jump = np.where(skip, np.concatenate([[neg_inf, neg_inf], previous[:-2]]), neg_inf)
        alpha[t] = np.logaddexp(np.logaddexp(stay, step), jump) + log_probs[t, ext]
    beta = np.full((steps, size), neg_inf)
    beta[-1, -1] = log_probs[-1, ext[-1]]
    if size > 1:
        beta[-1, -2] = log_probs[-1, ext[-2]]
    skip_back = np.zeros(size, bool)
    skip_back[:-2] = skip[2:]
    for t in range(steps - 2, -1, -1):
        following = beta[t + 1]
        stay = following
        step = np.concatenate([following[1:], [neg_inf]])
        jump = np.where(skip_back, np.concatenate([following[2:], [neg_inf, neg_inf]]),
                        neg_inf)
        beta[t] = np.logaddexp(np.logaddexp(stay, step), jump) + log_probs[t, ext]
    ends = alpha[-1, -1] if size == 1 else np.logaddexp(alpha[-1, -1], alpha[-1, -2])
    if not np.isfinite(ends):  # the label cannot fit in the steps: warp-ctc's loss of 0
        return 0.0, np.zeros_like(logits)
    # posterior of each class at each step: sum over label positions of alpha beta / p
    occupancy = alpha + beta - log_probs[:, ext]
    collected = np.full(log_probs.shape, neg_inf)
    for position, token in enumerate(ext):
        collected[:, token] = np.logaddexp(collected[:, token], occupancy[:, position])
    gradient = np.exp(log_probs) - np.exp(collected - ends)
    return -ends, gradient


def _ctc_sequences(logits, label, logits_length, label_length):
    """(per-sequence logits [T, C], labels) from LoD tensors or padded ones with lengths, on
    the host: the forward-backward recursion is a loop per sequence there (one copy of each
    input from a device)."""
    values = to_host(logits.array).astype("float64")
    if logits_length is not None:  # padded: logits [Tmax, N, C], labels [N, Lmax]
        steps = to_host(logits_length.array).reshape(-1).astype("int64")
        lengths = to_host(label_length.array).reshape(-1).astype("int64")
        labels = to_host(label.array).reshape(len(steps), -1)
        return ([values[:steps[i], i] for i in range(len(steps))],
                [labels[i, :lengths[i]] for i in range(len(steps))], True)
    offsets, label_offsets = logits.lod()[0], label.lod()[0]
    flat = to_host(label.array).reshape(-1)
    return ([values[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)],
            [flat[label_offsets[i]:label_offsets[i + 1]] for i in range(len(offsets) - 1)],
            False)


def _warpctc(ctx, logits, label, logits_length, label_length):
    a = ctx.attrs
    sequences, labels, padded = _ctc_sequences(logits, label, logits_length, label_length)
    losses, grads = [], []
    for seq, lab in zip(sequences, labels):
        loss, grad = _ctc_one(seq, lab, a["blank"])
        if a["norm_by_times"]:
            grad = grad / max(len(seq), 1)
        losses.append(loss)
        grads.append(grad)
    dtype = logits.array.dtype
    xp = ctx.xp
    if padded:
        whole = np.zeros(logits.array.shape)
        for i, grad in enumerate(grads):
            whole[:len(grad), i] = grad
        grad_tensor = LoDTensor(xp.asarray(whole.astype(dtype)))
    else:
        grad_tensor = LoDTensor(xp.asarray(np.concatenate(grads).astype(dtype)), logits.lod())
    loss = LoDTensor(xp.asarray(np.array(losses, dtype).reshape(-1, 1)))
    return grad_tensor, loss


def _warpctc_grad(ctx, ctc_grad, logits, dloss):
    grad = ctc_grad.array
    scale = dloss.array.reshape(-1)
    if logits.array.ndim == 3:  # padded: sequence i is column i
        out = grad * scale[None, :, None]
    else:  # each sequence's rows (the LoD is host data) take its scale
        offsets = logits.lod()[0]
        rows = ctx.xp.repeat(scale, np.diff(offsets).tolist())
        out = grad * rows[:, None]
    return LoDTensor(out.astype(grad.dtype), logits.lod())


def _warpctc_infer(ctx):
    shape = ctx.input_shape("Logits")
    ctx.set_output("WarpCTCGrad", shape, ctx.input_dtype("Logits"))
    ctx.set_output("Loss", (-1, 1), ctx.input_dtype("Logits"))


def _warpctc_grad_maker(g):
    return [g.op("warpctc_grad", {"WarpCTCGrad": g.output("WarpCTCGrad"),
                                  "Logits": g.input("Logits"),
                                  "Loss@GRAD": g.output_grad("Loss")},
                 {"Logits@GRAD": g.input_grad("Logits")})]


_CTC_ATTRS = {"blank": ("int", 0), "norm_by_times": ("bool", False)}
def_op("warpctc", inputs=["Logits", "Label", "LogitsLength?", "LabelLength?"],
       outputs=["WarpCTCGrad!", "Loss"], attrs=_CTC_ATTRS, infer_shape=_warpctc_infer,
       grad=_warpctc_grad_maker, kernel=_warpctc, lod_aware=True,
       traits={"runtime_outputs"},
       host_reads="Logits, Label (and LogitsLength, LabelLength): the CTC forward-backward "
                  "is a loop per sequence and label on the host (one copy of each in, the "
                  "loss and gradient copied back once)",
       doc="Loss_i = -log p(Label_i | Logits_i), the CTC likelihood of sequence i's labels "
           "under softmax(Logits) summed over every alignment with blanks (LoD sequences, or "
           "padded [Tmax, N, C] with LogitsLength/LabelLength); WarpCTCGrad = softmax - the "
           "posterior of each class (divided by the length with norm_by_times). A label "
           "that cannot fit in its sequence's steps gives a loss and gradient of 0, as "
           "warp-ctc does.")
def_op("warpctc_grad", inputs=["WarpCTCGrad", "Logits", "Loss@GRAD"], outputs=["Logits@GRAD"],
       attrs=_CTC_ATTRS,
       infer_shape=lambda ctx: ctx.set_output("Logits@GRAD", ctx.input_shape("Logits"),
                                              ctx.input_dtype("Logits")),
       kernel=_warpctc_grad, lod_aware=True, doc="Gradient of warpctc.")


# --- hierarchical_sigmoid: a binary tree of sigmoids over the classes ------------------------------
def _hsigmoid_paths(ctx, x, label, path_table, path_code):
    """(node, bit, valid), each [N, L]: the inner nodes from leaf to root of each sample's
    path, their bits and which steps the path has. Paddle's default tree: class c is the
    leaf c + num_classes of a heap, node n's parent is n // 2, inner node k (heap number
    k + 1) owns row k of W and Bias; L is the longest path any class has, as Paddle's
    PreOut width. Custom trees: PathTable's node ids (-1 ends a path) and PathCode's bits.
    On the array module, so a device keeps the labels."""
    xp = ctx.xp
    if path_table is not None:
        table = path_table.astype("int64")
        valid = table >= 0
        return xp.where(valid, table, 0), path_code.astype("int64"), valid
    classes = ctx.attrs["num_classes"]
    code = label.reshape(-1, 1).astype("int64") + classes
    steps = xp.arange(max(classes - 1, 1).bit_length(), dtype="int64")[None, :]
    parent = code >> (steps + 1)
    valid = parent >= 1
    return xp.where(valid, parent - 1, 0), (code >> steps) & 1, valid


def _hsigmoid_pre(xp, x64, w64, bias, node, valid):
    pre = xp.einsum("nd,nkd->nk", x64, w64[node])
    if bias is not None:
        pre = pre + bias.astype("float64").reshape(-1)[node]
    return xp.where(valid, xp.clip(pre, -40.0, 40.0), 0)


def _hsigmoid(ctx, x, w, label, path_table, path_code, bias):
    xp = ctx.xp
    node, bit, valid = _hsigmoid_paths(ctx, x, label, path_table, path_code)
    pre = _hsigmoid_pre(xp, x.astype("float64"), w.astype("float64"), bias, node, valid)
    # PreOut holds log(1 + e^pre) over the whole width: a step past the end of a shorter
    # path has pre = 0 and adds log 2 to Out, as Fluid's kernel sums the full row
    soft = xp.logaddexp(0, pre)
    out = soft.sum(axis=1, keepdims=True) - (xp.where(valid, bit, 0) * pre).sum(
        axis=1, keepdims=True)
    return out.astype(x.dtype), soft.astype(x.dtype), None


def _hsigmoid_grad(ctx, x, w, label, path_table, path_code, bias, pre_out, dout):
    xp = ctx.xp
    node, bit, valid = _hsigmoid_paths(ctx, x, label, path_table, path_code)
    x64, w64 = x.astype("float64"), w.astype("float64")
    pre = _hsigmoid_pre(xp, x64, w64, bias, node, valid)  # (PreOut holds it soft-relu'd)
    # the clip passes no gradient at its bounds
    live = valid & (pre > -40.0) & (pre < 40.0)
    d = xp.where(live, (1 / (1 + xp.exp(-pre)) - bit) * dout.astype("float64").reshape(-1, 1),
                 0)
    dx = xp.einsum("nk,nkd->nd", d, w64[node])
    dw = xp.zeros_like(w64)
    index_add(xp, dw, node.reshape(-1), (d[:, :, None] * x64[:, None, :]).reshape(-1, x.shape[1]))
    db = None
    if bias is not None:
        db = xp.zeros(bias.size, "float64")
        index_add(xp, db, node.reshape(-1), d.reshape(-1))
        db = db.reshape(bias.shape).astype(x.dtype)
    return dx.astype(x.dtype), dw.astype(x.dtype), db


def _hsigmoid_infer(ctx):
    rows = ctx.input_shape("X")[0]
    attrs = ctx.attrs()
    width = max(int(attrs["num_classes"]) - 1, 1).bit_length()
    ctx.set_output("Out", (rows, 1), ctx.input_dtype("X"))
    ctx.set_output("PreOut", (rows, width), ctx.input_dtype("X"))


def _hsigmoid_grad_maker(g):
    ins = {slot: g.input(slot) for slot in ("X", "W", "Label", "PathTable", "PathCode",
                                            "Bias")}
    ins["PreOut"] = g.output("PreOut")
    ins["Out@GRAD"] = g.output_grad("Out")
    outs = {"X@GRAD": g.input_grad("X"), "W@GRAD": g.input_grad("W"),
            "Bias@GRAD": g.input_grad("Bias")}
    return [g.op("hierarchical_sigmoid_grad", ins, outs)]


_HSIGMOID_ATTRS = {"num_classes": ("int", 2), "is_sparse": ("bool", False),
                   "remote_prefetch": ("bool", False), "trainer_id": ("int", 0),
                   "height_sections": ("longs", []), "epmap": ("strings", []),
                   "table_names": ("strings", [])}
def_op("hierarchical_sigmoid",
       inputs=["X", "W", "Label", "PathTable?", "PathCode?", "Bias?"],
       outputs=["Out", "PreOut!", "W_Out?"], attrs=_HSIGMOID_ATTRS,
       infer_shape=_hsigmoid_infer, grad=_hsigmoid_grad_maker, kernel=_hsigmoid,
       doc="Each label is a leaf of a binary tree (Paddle's default heap tree over "
           "num_classes leaves, or PathTable/PathCode); z_ij = clip(X_i . W[node_ij] + "
           "Bias[node_ij], -40, 40) along the path (0 past its end), PreOut_ij = log(1 + "
           "e^z_ij) over the whole width, Out_i = sum_j PreOut_ij - sum_j bit_ij z_ij.")
def_op("hierarchical_sigmoid_grad",
       inputs=["X", "W", "Label", "PathTable?", "PathCode?", "Bias?", "PreOut", "Out@GRAD"],
       outputs=["X@GRAD?", "W@GRAD?", "Bias@GRAD?"], attrs=_HSIGMOID_ATTRS,
       infer_shape=lambda ctx: [ctx.set_output(out, ctx.input_shape(src),
                                               ctx.input_dtype(src))
                                for out, src in (("X@GRAD", "X"), ("W@GRAD", "W"),
                                                 ("Bias@GRAD", "Bias"))
                                if ctx.has_output(out)],
       kernel=_hsigmoid_grad, doc="Gradient of hierarchical_sigmoid.")


# --- nce: noise-contrastive estimation ------------------------------------------------------------
def _nce_probability(xp, attrs, classes, ids, custom=()):
    """The sampler's probability of drawing each id: uniform, log-uniform (Zipf's law
    over ids sorted by frequency), or the custom distribution's CustomDistProbs[id]."""
    if attrs["sampler"] == 1:
        return xp.log((ids + 2.0) / (ids + 1.0)) / np.log(classes + 1.0)
    if attrs["sampler"] == 2:
        return _custom_dist(attrs, classes, custom)[0].astype("float64")[ids]
    return xp.full(ids.shape, 1.0 / classes)


def _custom_dist(attrs, classes, custom):
    """(probs, alias, alias_probs) of the custom sampler (2), each with one entry a class."""
    if any(table is None for table in custom):
        raise InvalidArgument(expected("nce", "inputs CustomDistProbs, CustomDistAlias and "
                                       "CustomDistAliasProbs", "given with sampler 2 "
                                       "(custom_dist)", "some of them missing"))
    tables = [table.reshape(-1) for table in custom]
    for name, table in zip(("CustomDistProbs", "CustomDistAlias", "CustomDistAliasProbs"),
                           tables):
        if table.size != classes:
            raise InvalidArgument(expected("nce", f"input '{name}'", f"{classes} entries "
                                           f"(num_total_classes)", table.size))
    return tables


def _nce_draw(ctx, classes, count, custom=()):
    """The negative ids, drawn on the host (the op's random state is NumPy's). The custom
    sampler is Walker's alias method: a uniform id i and u ~ U[0, 1) give i when
    u <= alias_probs[i], else alias[i] (i itself where alias[i] is -1)."""
    rng = ctx.random_state()
    if ctx.attrs["sampler"] == 1:  # log-uniform: floor(exp(u log(C + 1))) - 1
        u = rng.random_sample(count)
        return (np.exp(u * np.log(classes + 1.0)).astype("int64") - 1).clip(0, classes - 1)
    ids = rng.randint(0, classes, count).astype("int64")
    if ctx.attrs["sampler"] == 2:
        _, alias, alias_probs = (to_host(t) for t in _custom_dist(ctx.attrs, classes, custom))
        u = rng.random_sample(count)
        swap = (u > alias_probs[ids]) & (alias[ids] >= 0)
        ids = np.where(swap, alias[ids].astype("int64"), ids)
    return ids


def _nce_forward(ctx, x, label, weight, bias, sample_weight, custom=()):
    xp, a = ctx.xp, ctx.attrs
    classes, negatives = a["num_total_classes"], a["num_neg_samples"]
    true = label.reshape(len(x), -1).astype("int64")
    if a["custom_neg_classes"]:
        sampled = np.tile(np.array(a["custom_neg_classes"], "int64"), (len(x), 1))
    else:
        sampled = _nce_draw(ctx, classes, len(x) * negatives,
                            custom).reshape(len(x), negatives)
    # the draws go to where the labels are (host to device: no read back)
    labels = xp.concatenate([true, xp.asarray(sampled)], axis=1)
    x64, w64 = x.astype("float64"), weight.astype("float64")
    logits = xp.einsum("nd,nkd->nk", x64, w64[labels])
    if bias is not None:
        logits = logits + bias.astype("float64").reshape(-1)[labels]
    o = 1 / (1 + xp.exp(-logits))
    b = _nce_probability(xp, a, classes, labels, custom) * negatives
    num_true = true.shape[1]
    cost = xp.where(xp.arange(labels.shape[1]) < num_true, -xp.log(o / (o + b)),
                    -xp.log(b / (o + b))).sum(axis=1, keepdims=True)
    if sample_weight is not None:
        cost = cost * sample_weight.astype("float64").reshape(-1, 1)
    return cost, o, labels, b, num_true


def _nce(ctx, x, label, weight, bias, sample_weight, *custom):
    cost, o, labels, _, _ = _nce_forward(ctx, x, label, weight, bias, sample_weight, custom)
    return cost.astype(x.dtype), o.astype(x.dtype), labels


def _nce_grad(ctx, x, label, weight, bias, sample_weight, probs, alias, alias_probs,
              sample_logits, sample_labels, dcost):
    xp, a = ctx.xp, ctx.attrs
    labels = sample_labels.astype("int64")
    o = sample_logits.astype("float64")
    b = _nce_probability(xp, a, a["num_total_classes"], labels,
                         (probs, alias, alias_probs)) * a["num_neg_samples"]
    num_true = label.reshape(len(labels), -1).shape[1]
    dz = xp.where(xp.arange(labels.shape[1]) < num_true, -b * (1 - o) / (o + b),
                  o * (1 - o) / (o + b))
    scale = dcost.astype("float64").reshape(-1, 1)
    if sample_weight is not None:
        scale = scale * sample_weight.astype("float64").reshape(-1, 1)
    dz = dz * scale
    x64, w64 = x.astype("float64"), weight.astype("float64")
    dx = xp.einsum("nk,nkd->nd", dz, w64[labels])
    contributions = (dz[:, :, None] * x64[:, None, :]).reshape(-1, x64.shape[1])
    if a["is_sparse"]:
        dw = _nce_sparse_weight_grad(xp, labels, contributions, weight.shape[0], x.dtype)
    else:
        dw = xp.zeros_like(w64)
        index_add(xp, dw, labels.reshape(-1), contributions)
        dw = dw.astype(x.dtype)
    db = None
    if bias is not None:
        db = xp.zeros(bias.size)
        index_add(xp, db, labels.reshape(-1), dz.reshape(-1))
        db = db.reshape(bias.shape).astype(bias.dtype)
    return dx.astype(x.dtype), dw, db


def _nce_sparse_weight_grad(xp, labels, contributions, height, dtype):
    """Fluid's sparse Weight@GRAD: one row per distinct sampled id, ascending (a row list
    on the host: the ids are read there), each the sum of that id's contributions."""
    ids, inverse = np.unique(to_host(labels).reshape(-1), return_inverse=True)
    rows = xp.zeros((ids.size, contributions.shape[1]), "float64")
    index_add(xp, rows, xp.asarray(inverse.reshape(-1)), contributions)
    return SelectedRows(ids.tolist(), height, LoDTensor(rows.astype(dtype)))


def _nce_grad_var_type(ctx):
    """Weight@GRAD is SelectedRows when the nce is sparse."""
    if ctx.attr("is_sparse") and ctx.has_output("Weight@GRAD"):
        ctx.output_var("Weight@GRAD").type = VarType.SELECTED_ROWS


def _nce_infer(ctx):
    rows = ctx.input_shape("Input")[0]
    attrs = ctx.attrs()
    width = ctx.input_shape("Label")[-1] + attrs["num_neg_samples"]
    ctx.set_output("Cost", (rows, 1), ctx.input_dtype("Input"))
    ctx.set_output("SampleLogits", (rows, width), ctx.input_dtype("Input"))
    ctx.set_output("SampleLabels", (rows, width), VarType.INT64)


def _nce_grad_maker(g):
    ins = {slot: g.input(slot) for slot in ("Input", "Label", "Weight", "Bias",
                                            "SampleWeight", "CustomDistProbs",
                                            "CustomDistAlias", "CustomDistAliasProbs")}
    ins.update({"SampleLogits": g.output("SampleLogits"),
                "SampleLabels": g.output("SampleLabels"), "Cost@GRAD": g.output_grad("Cost")})
    return [g.op("nce_grad", ins, {"Input@GRAD": g.input_grad("Input"),
                                   "Weight@GRAD": g.input_grad("Weight"),
                                   "Bias@GRAD": g.input_grad("Bias")})]


_NCE_ATTRS = {"num_total_classes": ("int", None), "num_neg_samples": ("int", 10),
              "sampler": ("int", 0, lambda v: None if v in (0, 1, 2) else
                          "0 (uniform), 1 (log-uniform) or 2 (custom distribution)"),
              "seed": ("int", 0), "custom_neg_classes": ("ints", []),
              "is_sparse": ("bool", False), "is_test": ("bool", False),
              "remote_prefetch": ("bool", False), "height_sections": ("longs", []),
              "epmap": ("strings", []), "table_names": ("strings", [])}
def_op("nce", inputs=["Input", "Label", "Weight", "Bias?", "SampleWeight?",
                      "CustomDistProbs?", "CustomDistAlias?", "CustomDistAliasProbs?"],
       outputs=["Cost", "SampleLogits!", "SampleLabels!"], attrs=_NCE_ATTRS,
       infer_shape=_nce_infer, grad=_nce_grad_maker,
       kernel=_nce, traits=("stateful",),  # (the negative classes are drawn)
       doc="Per row: the true labels and num_neg_samples drawn ones (uniform, log-uniform "
           "with sampler 1, or sampler 2's CustomDist* alias tables; custom_neg_classes fixes "
           "them); o = sigmoid(Input . Weight[id] + "
           "Bias[id]), b = num_neg_samples * P(id); Cost = sum over the true of "
           "-log(o / (o + b)) plus over the drawn of -log(b / (o + b)), times SampleWeight.")
def_op("nce_grad", inputs=["Input", "Label", "Weight", "Bias?", "SampleWeight?",
                           "CustomDistProbs?", "CustomDistAlias?", "CustomDistAliasProbs?",
                           "SampleLogits", "SampleLabels", "Cost@GRAD"],
       outputs=["Input@GRAD?", "Weight@GRAD?", "Bias@GRAD?"], attrs=_NCE_ATTRS,
       infer_shape=lambda ctx: [ctx.set_output(out, ctx.input_shape(src),
                                               ctx.input_dtype(src))
                                for out, src in (("Input@GRAD", "Input"),
                                                 ("Weight@GRAD", "Weight"),
                                                 ("Bias@GRAD", "Bias"))
                                if ctx.has_output(out)],
       infer_var_type=_nce_grad_var_type, traits=("runtime_outputs",), kernel=_nce_grad,
       host_reads="SampleLabels, only with is_sparse: the SelectedRows gradient's row list "
                  "is host data",
       doc="Gradient of nce. With is_sparse, Weight@GRAD is a SelectedRows: the distinct "
           "sampled ids ascending, each row the sum of its gradient (Bias@GRAD stays dense).")


# --- sample_logits: the logits of the true classes and of drawn ones -------------------------------
def _sample_logits(ctx, logits, labels, customized_samples, customized_probabilities):
    xp, a = ctx.xp, ctx.attrs
    rows, classes = logits.shape
    true = labels.reshape(rows, -1).astype("int64")
    log_range = np.log(classes + 1.0)
    if a["use_customized_samples"]:
        samples = customized_samples.astype("int64")
        probabilities = customized_probabilities.astype("float64")
    else:
        # the draws run on the host (the op's random state is NumPy's) and go to where the
        # labels are, a copy to a device and none back
        rng = ctx.random_state()
        count = a["num_samples"]
        drawn, tries = [], 0
        while len(drawn) < count:  # log-uniform draws, unique ones kept (uniq)
            tries += 1
            value = int(np.exp(rng.random_sample() * log_range)) - 1
            value = min(max(value, 0), classes - 1)
            if not a["uniq"] or value not in drawn:
                drawn.append(value)
        negatives = xp.asarray(np.array(drawn, "int64"))
        samples = xp.concatenate([true, xp.tile(negatives, (rows, 1))], axis=1)
        p = xp.log((samples + 2.0) / (samples + 1.0)) / log_range
        probabilities = 1 - (1 - p) ** tries if a["uniq"] else p * count
    sampled = xp.take_along_axis(logits.astype("float64"), samples, axis=1)
    sampled = sampled - xp.log(probabilities)
    num_true = true.shape[1]
    if a["remove_accidental_hits"]:  # a drawn class that is a true one of its row
        hits = (samples[:, num_true:, None] == true[:, None, :]).any(axis=2)
        drawn_part = xp.where(hits, sampled[:, num_true:] - 1e20, sampled[:, num_true:])
        sampled = xp.concatenate([sampled[:, :num_true], drawn_part], axis=1)
    sampled_labels = xp.tile(xp.arange(num_true, dtype="int64"), (rows, 1))
    return (samples, probabilities.astype(logits.dtype), sampled.astype(logits.dtype),
            sampled_labels, None, None)


def _sample_logits_grad(ctx, samples, dsampled, logits_dim):
    xp = ctx.xp
    rows = dsampled.shape[0]
    # the class count decides the gradient's shape: read on the host
    classes = host_list(logits_dim)[1] if logits_dim is not None else \
        host_scalar(samples.max()) + 1
    grad = xp.zeros((rows, classes), "float64")
    xp.add.at(grad, (xp.arange(rows)[:, None].repeat(samples.shape[1], 1), samples),
              dsampled.astype("float64"))
    return grad.astype(dsampled.dtype)


def _sample_logits_infer(ctx):
    rows, _ = ctx.input_shape("Logits")
    attrs = ctx.attrs()
    width = ctx.input_shape("Labels")[-1] + attrs["num_samples"]
    ctx.set_output("Samples", (rows, width), VarType.INT64)
    ctx.set_output("Probabilities", (rows, width), ctx.input_dtype("Logits"))
    ctx.set_output("SampledLogits", (rows, width), ctx.input_dtype("Logits"))
    ctx.set_output("SampledLabels", (rows, ctx.input_shape("Labels")[-1]), VarType.INT64)
    if ctx.has_output("LogitsDim"):
        ctx.set_output("LogitsDim", (2,), VarType.INT64)
    if ctx.has_output("LabelsDim"):
        ctx.set_output("LabelsDim", (2,), VarType.INT64)


def _sample_logits_kernel(ctx, logits, labels, customized_samples, customized_probabilities):
    samples, probs, sampled, sampled_labels, _, _ = _sample_logits(
        ctx, logits, labels, customized_samples, customized_probabilities)
    xp = ctx.xp
    dims = xp.asarray(logits.shape, dtype="int64")
    label_dims = xp.asarray(labels.reshape(len(logits), -1).shape, dtype="int64")
    return samples, probs, sampled, sampled_labels, dims, label_dims


def _sample_logits_grad_maker(g):
    return [g.op("sample_logits_grad",
                 {"Samples": g.output("Samples"), "SampledLogits@GRAD":
                  g.output_grad("SampledLogits"), "LogitsDim": g.output("LogitsDim")},
                 {"Logits@GRAD": g.input_grad("Logits")})]


_SAMPLE_ATTRS = {"use_customized_samples": ("bool", False), "uniq": ("bool", True),
                 "remove_accidental_hits": ("bool", True), "num_samples": ("int", None),
                 "seed": ("int", 0)}
def_op("sample_logits",
       inputs=["Logits", "Labels", "CustomizedSamples?", "CustomizedProbabilities?"],
       outputs=["Samples", "Probabilities", "SampledLogits", "SampledLabels",
                "LogitsDim!", "LabelsDim!"],
       attrs=_SAMPLE_ATTRS, infer_shape=_sample_logits_infer, grad=_sample_logits_grad_maker,
       kernel=_sample_logits_kernel, traits=("stateful",),  # (the samples are drawn)
       doc="Samples = each row's true labels then num_samples classes drawn log-uniformly "
           "(unique with uniq, shared by the rows); SampledLogits = Logits[Samples] - log Q, "
           "Q the chance a class is drawn (1 - (1 - p)^tries with uniq), -1e20 more where a "
           "drawn class is one of the row's true labels (remove_accidental_hits); "
           "SampledLabels = 0 .. num_true - 1.")
def_op("sample_logits_grad", inputs=["Samples", "SampledLogits@GRAD", "LogitsDim"],
       outputs=["Logits@GRAD"], attrs=_SAMPLE_ATTRS,
       host_reads="LogitsDim (or Samples' largest id without it): the class count decides "
                  "Logits@GRAD's shape",
       infer_shape=lambda ctx: ctx.set_output("Logits@GRAD", (-1, -1),
                                              ctx.input_dtype("SampledLogits@GRAD")),
       kernel=_sample_logits_grad, doc="dLogits = dSampledLogits added back at Samples.")
