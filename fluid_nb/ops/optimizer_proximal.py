"""Proximal update ops: ``proximal_gd`` and ``proximal_adagrad``, a gradient step followed
by the proximal operator of ``l1 |w| + l2 / 2 |w|^2`` (soft thresholding, then shrinking)."""
from ..framework.registry import def_op
from .optimizer_ops import _array, _as, _dense_grad, _scalar, _update_infer

_ATTRS = {"l1": ("float", 0.0), "l2": ("float", 0.0)}


def _proximal(xp, prox, lr, l1, l2):
    """argmin_w |w - prox|^2 / (2 lr) + l1 |w| + l2 / 2 |w|^2."""
    if l1 > 0:
        return xp.sign(prox) * xp.maximum(xp.abs(prox) - lr * l1, 0) / (1 + lr * l2)
    return prox / (1 + lr * l2)


def _proximal_gd(ctx, param, grad, lr):
    xp, a = ctx.xp, ctx.attrs
    p = _array(param)
    g = _dense_grad(xp, grad, p, "proximal_gd")
    rate = _as(_scalar(ctx, lr), p.dtype)
    return _proximal(xp, p - rate * g, rate, a["l1"], a["l2"]).astype(p.dtype, copy=False)


def _proximal_adagrad(ctx, param, moment, grad, lr):
    xp, a = ctx.xp, ctx.attrs
    p, m = _array(param), _array(moment)
    g = _dense_grad(xp, grad, p, "proximal_adagrad")
    rate = _as(_scalar(ctx, lr), p.dtype)
    m_out = m + g * g
    new = _proximal(xp, p - rate * g / xp.sqrt(m_out), rate, a["l1"], a["l2"])
    return new.astype(p.dtype, copy=False), m_out.astype(m.dtype, copy=False)


def_op("proximal_gd", inputs=["Param", "Grad", "LearningRate"], outputs=["ParamOut"],
       attrs=_ATTRS, infer_shape=_update_infer(()), kernel=_proximal_gd, lod_aware=True,
       doc="prox = Param - lr * Grad; ParamOut = sign(prox) max(|prox| - lr l1, 0) / "
           "(1 + lr l2) (prox / (1 + lr l2) when l1 is 0).")
def_op("proximal_adagrad", inputs=["Param", "Moment", "Grad", "LearningRate"],
       outputs=["ParamOut", "MomentOut"], attrs=_ATTRS,
       infer_shape=_update_infer(("Moment",)), kernel=_proximal_adagrad, lod_aware=True,
       doc="MomentOut = Moment + Grad^2; prox = Param - lr * Grad / sqrt(MomentOut); "
           "ParamOut = sign(prox) max(|prox| - lr l1, 0) / (1 + lr l2) (prox / (1 + lr l2) "
           "when l1 is 0).")
