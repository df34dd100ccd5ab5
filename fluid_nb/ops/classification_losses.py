"""Classification losses: ``hinge_loss``, ``modified_huber_loss``, ``bce_loss`` (each per
entry) and ``nll_loss`` (negative log-likelihood of the labelled class, weighted, reduced)."""
import contextlib

import numpy as np

from ..errors import InvalidArgument, expected
from ..framework.infer import dims_match
from ..framework.registry import def_op, grad_maker, grads_like
from ..tensor.dtypes import VarType


def _same_shapes(ctx, a, b):
    sa, sb = list(ctx.input_shape(a)), list(ctx.input_shape(b))
    ctx.check(len(sa) == len(sb) and all(dims_match(p, q) for p, q in zip(sa, sb)),
              f"input '{b}'", f"the shape of {a} {sa}", sb)
    return sa


def _sign_of_label(labels):
    """Labels in {0, 1} as {-1, +1}."""
    return 2 * labels - 1


# --- hinge_loss -------------------------------------------------------------------------------
def _hinge_infer(ctx):
    shape = _same_shapes(ctx, "Logits", "Labels")
    ctx.check(len(shape) == 2 and dims_match(shape[1], 1), "input 'Logits'", "shape [N, 1]",
              shape)
    ctx.set_output("Loss", shape, ctx.input_dtype("Logits"))


def _hinge_grad(ctx, logits, labels, dloss):
    y = _sign_of_label(labels)
    return (-y * (y * logits < 1) * dloss).astype(logits.dtype, copy=False)


def_op("hinge_loss", inputs=["Logits", "Labels"], outputs=["Loss"],
       infer_shape=_hinge_infer, share_lod=("Logits", ["Loss"]),
       grad=grad_maker("hinge_loss_grad", inputs=["Logits", "Labels"], out_grads=["Loss"],
                       in_grads=["Logits"]),
       kernel=lambda ctx, logits, labels: ctx.xp.maximum(
           1 - _sign_of_label(labels) * logits, 0).astype(logits.dtype, copy=False),
       doc="Loss = max(1 - (2 Labels - 1) Logits, 0), Labels in {0, 1}.")
def_op("hinge_loss_grad", inputs=["Logits", "Labels", "Loss@GRAD"], outputs=["Logits@GRAD"],
       infer_shape=grads_like(**{"Logits@GRAD": "Logits"}), kernel=_hinge_grad,
       doc="dLogits = -(2 Labels - 1) dLoss where (2 Labels - 1) Logits < 1, else 0.")


# --- modified_huber_loss ---------------------------------------------------------------------
def _huber_infer(ctx):
    shape = _same_shapes(ctx, "X", "Y")
    ctx.check(len(shape) == 2 and dims_match(shape[1], 1), "input 'X'", "shape [N, 1]", shape)
    dtype = ctx.input_dtype("X")
    ctx.set_output("IntermediateVal", shape, dtype)
    ctx.set_output("Out", shape, dtype)


def _huber(ctx, x, y):
    xp = ctx.xp
    z = x * _sign_of_label(y)
    out = xp.where(z < -1, -4 * z, xp.where(z < 1, (1 - z) * (1 - z), 0))
    return z.astype(x.dtype, copy=False), out.astype(x.dtype, copy=False)


def _huber_grad(ctx, y, z, dout):
    xp = ctx.xp
    s = _sign_of_label(y)
    dz = xp.where(z < -1, -4, xp.where(z < 1, -2 * (1 - z), 0))
    return (dz * s * dout).astype(z.dtype, copy=False)


def_op("modified_huber_loss", inputs=["X", "Y"], outputs=["IntermediateVal!", "Out"],
       infer_shape=_huber_infer, kernel=_huber,
       grad=grad_maker("modified_huber_loss_grad", inputs=["Y"], outputs=["IntermediateVal"],
                       out_grads=["Out"], in_grads=["X"]),
       doc="z = X (2 Y - 1) (IntermediateVal), Y in {0, 1}; Out = -4 z for z < -1, (1 - z)^2 "
           "for -1 <= z < 1, 0 for z >= 1.")
def_op("modified_huber_loss_grad", inputs=["Y", "IntermediateVal", "Out@GRAD"],
       outputs=["X@GRAD"], infer_shape=grads_like(**{"X@GRAD": "IntermediateVal"}),
       kernel=_huber_grad,
       doc="dX = dOut (2 Y - 1) * (-4 for z < -1, -2 (1 - z) for -1 <= z < 1, 0 otherwise).")


# --- bce_loss ----------------------------------------------------------------------------------
_LOG_FLOOR = -100.0  # log(0) is taken as -100, so a saturated input gives a finite loss
_GRAD_EPS = 1e-12


def _bce(ctx, x, label):
    xp = ctx.xp
    with _quiet(xp):
        log_x = xp.maximum(xp.log(x), _LOG_FLOOR)
        log_1x = xp.maximum(xp.log(1 - x), _LOG_FLOOR)
    return (-(label * log_x + (1 - label) * log_1x)).astype(x.dtype, copy=False)


def _quiet(xp):
    """NumPy's floating-point warnings off (log(0) is meant); CuPy has none."""
    errstate = getattr(xp, "errstate", None)
    return errstate(divide="ignore", invalid="ignore") if errstate else contextlib.nullcontext()


def _bce_grad(ctx, x, label, dout):
    xp = ctx.xp
    return (dout * (x - label) / xp.maximum((1 - x) * x, _GRAD_EPS)).astype(x.dtype, copy=False)


def_op("bce_loss", inputs=["X", "Label"], outputs=["Out"],
       infer_shape=lambda ctx: ctx.set_output("Out", _same_shapes(ctx, "X", "Label"),
                                              ctx.input_dtype("X")),
       share_lod=("X", ["Out"]),
       grad=grad_maker("bce_loss_grad", inputs=["X", "Label"], out_grads=["Out"],
                       in_grads=["X"]),
       kernel=_bce,
       doc="Out = -(Label log(X) + (1 - Label) log(1 - X)), each log at least -100.")
def_op("bce_loss_grad", inputs=["X", "Label", "Out@GRAD"], outputs=["X@GRAD"],
       infer_shape=grads_like(**{"X@GRAD": "X"}), kernel=_bce_grad,
       doc="dX = dOut (X - Label) / max(X (1 - X), 1e-12).")


# --- nll_loss ----------------------------------------------------------------------------------
_REDUCTIONS = ("none", "mean", "sum")
_NLL_ATTRS = {"ignore_index": ("long", -100),
              "reduction": ("string", "mean",
                            lambda v: None if v in _REDUCTIONS else f"one of {_REDUCTIONS}")}


def _nll_infer(ctx):
    x, label = list(ctx.input_shape("X")), list(ctx.input_shape("Label"))
    ctx.check(len(x) in (2, 4), "input 'X'", "rank 2 ([N, C]) or 4 ([N, C, H, W])", x)
    want = [x[0]] + x[2:]
    ctx.check(len(label) == len(want) and all(dims_match(a, b) for a, b in zip(label, want)),
              "input 'Label'", f"shape {want} (X's without the class dim)", label)
    ctx.check(ctx.input_dtype("Label") in (VarType.INT64, VarType.INT32), "input 'Label' dtype",
              "int64", ctx.input_dtype("Label").name)
    if ctx.has_input("Weight"):
        w = list(ctx.input_shape("Weight"))
        ctx.check(len(w) == 1 and dims_match(w[0], x[1]), "input 'Weight'",
                  f"shape [{x[1]}] (one weight per class)", w)
    dtype = ctx.input_dtype("X")
    out = want if ctx.attr("reduction") == "none" else [1]
    ctx.set_output("Out", out, dtype)
    ctx.set_output("Total_weight", [1], dtype)


def _nll_weights(ctx, x, label, weight):
    """(the class index per entry, clipped so it can index; the weight per entry, 0 where
    the label is ignore_index)."""
    xp = ctx.xp
    ignored = label == ctx.attrs["ignore_index"]
    index = xp.where(ignored, 0, label).astype("int64")
    if xp is np:  # checked on the host; a device would copy the labels there
        bad = (index < 0) | (index >= x.shape[1])
        if bool(bad.any()):
            raise InvalidArgument(expected("nll_loss", "input 'Label'",
                                           f"class ids in [0, {x.shape[1]}) or ignore_index",
                                           int(label[bad].reshape(-1)[0])))
    w = xp.ones(x.shape[1], dtype=x.dtype) if weight is None else weight
    return index, xp.where(ignored, 0, w[index]).astype(x.dtype)


def _picked(xp, x, index):
    """x[n, index[n, ...], ...]: the input at the labelled class of each entry."""
    return xp.take_along_axis(x, xp.expand_dims(index, 1), axis=1).squeeze(1)


def _nll(ctx, x, label, weight):
    xp = ctx.xp
    index, w = _nll_weights(ctx, x, label, weight)
    losses = -_picked(xp, x, index) * w
    reduction = ctx.attrs["reduction"]
    total = w.sum().reshape(1).astype(x.dtype)
    if reduction == "none":
        return losses.astype(x.dtype, copy=False), xp.zeros(1, dtype=x.dtype)
    out = losses.sum()
    if reduction == "mean":
        out = out / total[0]
    return out.reshape(1).astype(x.dtype), total


def _nll_grad(ctx, x, label, weight, total, dout):
    xp = ctx.xp
    index, w = _nll_weights(ctx, x, label, weight)
    reduction = ctx.attrs["reduction"]
    if reduction == "none":
        scale = -w * dout
    else:
        scale = -w * dout.reshape(())
        if reduction == "mean":
            scale = scale / total.reshape(())
    classes = xp.arange(x.shape[1]).reshape((1, -1) + (1,) * (x.ndim - 2))
    at_label = xp.expand_dims(index, 1) == classes
    return (at_label * xp.expand_dims(scale, 1)).astype(x.dtype, copy=False)


def_op("nll_loss", inputs=["X", "Label", "Weight?"], outputs=["Out", "Total_weight"],
       attrs=_NLL_ATTRS, infer_shape=_nll_infer,
       grad=grad_maker("nll_loss_grad", inputs=["X", "Label", "Weight"],
                       outputs=["Total_weight"], out_grads=["Out"], in_grads=["X"]),
       kernel=_nll,
       doc="loss[n] = -Weight[c] X[n, c] for c = Label[n] (and per pixel for [N, C, H, W]); "
           "0 where Label is ignore_index. Total_weight = sum of the used weights. Out = "
           "the losses (reduction 'none', Total_weight then 0), their sum ('sum'), or sum / "
           "Total_weight ('mean').")
def_op("nll_loss_grad", inputs=["X", "Label", "Weight?", "Total_weight", "Out@GRAD"],
       outputs=["X@GRAD"], attrs=_NLL_ATTRS, infer_shape=grads_like(**{"X@GRAD": "X"}),
       kernel=_nll_grad,
       doc="dX[n, c] = -Weight[c] dOut (dOut[n] for 'none'; / Total_weight for 'mean') at "
           "c = Label[n], 0 elsewhere.")
