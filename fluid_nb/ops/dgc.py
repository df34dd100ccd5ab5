"""Deep gradient compression (Lin et al., 2018) as Fluid 1.8's DGC programs run it: ``dgc``
(momentum correction, local accumulation and top-k selection of the gradient to send),
``dgc_momentum`` (momentum before the ramp-up step, plain SGD after it, on the gradient
averaged over ``nranks``) and ``dgc_clip_by_norm`` (clip_by_norm from the ramp-up step on).

The programs these ops come from name the same variable as input and output (``U`` and
``U_out``, ``Grad`` and ``Grad_out``, ``Param`` and ``ParamOut``): where Fluid's kernel
leaves such an output alone at a step, the output here is its input's value (the same
thing for those programs, and defined for others); outputs without an input of their own
(``k``, ``EncodeGrad``, ``GatherBuff``) keep what they held. ``current_step`` and
``nranks`` are one-element float tensors read on the host. No gradients.
"""
from ..errors import InvalidArgument, expected
from ..framework.registry import def_op, no_gradient
from ..tensor.dtypes import VarType
from ..tensor.transfer import host_scalar
from .clip_ops import _clip_to_norm


def _step(current_step):
    return int(host_scalar(current_step))


def _ranks(op, nranks):
    ranks = int(host_scalar(nranks))
    if ranks <= 1:
        raise InvalidArgument(expected(op, "input 'nranks'", "> 1 (DGC needs several "
                                                               "trainers)", ranks))
    return ranks


def _like(ctx, pairs):
    for out, src in pairs:
        if ctx.has_input(src):
            ctx.set_output(out, ctx.input_shape(src), ctx.input_dtype(src))


# --- dgc -------------------------------------------------------------------------------------
def _dgc_infer(ctx):
    _like(ctx, [("U_out", "U"), ("V_out", "V"), ("Grad_out", "Grad")])
    ctx.set_output("EncodeGrad", (-1,), ctx.input_dtype("Grad"))
    ctx.set_output("GatherBuff", (-1,), ctx.input_dtype("Grad"))
    ctx.set_output("k", (1,), VarType.FP32)
    regular = ctx.attr("regular_type")
    ctx.check(regular in (0, 1, 2), "attribute 'regular_type'",
              "0 (none), 1 (L1 decay) or 2 (L2 decay)", regular)


def sparsity_at(sparsity, step, rampup_steps):
    """The sparsity of ramp-up period ``step * len(sparsity) / rampup_steps`` (the last
    one after the ramp-up)."""
    index = int(step * len(sparsity) / rampup_steps) if rampup_steps else len(sparsity)
    return sparsity[min(index, len(sparsity) - 1)]


def _dgc(ctx, u, v, grad, param, current_step, nranks):
    op, a, xp = "dgc", ctx.attrs, ctx.xp
    ranks = _ranks(op, nranks)
    g = grad * grad.dtype.type(ranks)
    if a["regular_type"] == 1:
        g = g + grad.dtype.type(a["regular_coeff"]) * xp.sign(param)
    elif a["regular_type"] == 2:
        g = g + grad.dtype.type(a["regular_coeff"]) * param
    g = g.astype(grad.dtype)
    step = _step(current_step)
    begin = int(a["rampup_begin_step"])
    if step < begin:
        return u, v, None, g, None, None
    if not a["sparsity"]:
        raise InvalidArgument(expected(op, "attribute 'sparsity'", "at least one value",
                                       "[]"))
    ratio = 1 - sparsity_at(a["sparsity"], float(step - a["rampup_begin_step"]),
                            a["rampup_step"])
    if not 0 <= ratio < 1:
        raise InvalidArgument(expected(op, "attribute 'sparsity'",
                                       "values in (0, 1]", list(a["sparsity"])))
    k = int(grad.size * ratio)
    m = grad.dtype.type(a["m"])
    if a["use_nesterov"]:
        u_out = m * (u + g)
        v_out = v + u_out + g
    else:
        u_out = m * u + g
        v_out = v + u_out
    flat_v, flat_u = v_out.reshape(-1), u_out.reshape(-1)
    # the k entries of largest magnitude are sent (and so cleared from the accumulators)
    top = xp.argsort(-xp.abs(flat_v), kind="stable")[:k]
    # float32 keeps the indices' int32 bits, as Fluid's encoding; wider floats their values
    index = top.astype("int32").view(grad.dtype) if grad.dtype.itemsize == 4 else \
        top.astype(grad.dtype)
    encoded = xp.concatenate([index, flat_v[top]])
    flat_v = flat_v.copy()
    flat_u = flat_u.copy()
    flat_v[top] = 0
    flat_u[top] = 0
    gather = xp.zeros((2 * k * ranks,), grad.dtype)
    return (flat_u.reshape(u.shape), flat_v.reshape(v.shape), encoded, xp.zeros_like(g),
            xp.full((1,), k, "float32"), gather)


def_op("dgc", inputs=["U", "V", "Grad", "Param", "current_step", "nranks"],
       outputs=["U_out", "V_out", "EncodeGrad", "Grad_out", "k", "GatherBuff"],
       attrs={"m": ("float", 0.9), "use_nesterov": ("bool", True),
              "sparsity": ("floats", None), "rampup_begin_step": ("float", 0.0),
              "rampup_step": ("float", None), "regular_coeff": ("float", 0.0),
              "regular_type": ("int", 0)},
       infer_shape=_dgc_infer, grad=no_gradient, kernel=_dgc, traits=("stateful",),
       host_reads="current_step, nranks: they decide whether and how much to select",
       doc="g = nranks * Grad (+ regular_coeff * sign(Param) or * Param); Grad_out = g "
           "before current_step reaches rampup_begin_step. From then: U' = m * (U + g), "
           "V' = V + U' + g (use_nesterov; else U' = m * U + g, V' = V + U'); the k = "
           "numel * (1 - sparsity[period]) entries of largest |V'| go to EncodeGrad "
           "([k int32 indices as floats, k values]) and are zeroed in U_out, V_out; "
           "Grad_out = 0; k as a float.")


# --- dgc_momentum ----------------------------------------------------------------------------
def _dgc_momentum_infer(ctx):
    _like(ctx, [("ParamOut", "Param"), ("VelocityOut", "Velocity"), ("Grad_out", "Grad")])


def _dgc_momentum(ctx, param, grad, velocity, lr, current_step, nranks):
    a = ctx.attrs
    if int(a["rampup_begin_step"]) < 0:
        return param, velocity, grad
    ranks = _ranks("dgc_momentum", nranks)
    g = (grad * grad.dtype.type(1.0 / ranks)).astype(grad.dtype)
    rate = lr.reshape(-1)[:1].astype(param.dtype)
    if _step(current_step) < int(a["rampup_begin_step"]):
        mu = param.dtype.type(a["mu"])
        v_out = mu * velocity + g
        step = (g + mu * v_out) * rate if a["use_nesterov"] else rate * v_out
        return (param - step).astype(param.dtype), v_out.astype(velocity.dtype), g
    return (param - rate * g).astype(param.dtype), velocity, g


def_op("dgc_momentum",
       inputs=["Param", "Grad", "Velocity", "LearningRate", "current_step", "nranks"],
       outputs=["ParamOut", "VelocityOut", "Grad_out"],
       attrs={"mu": ("float", None), "use_nesterov": ("bool", False),
              "rampup_begin_step": ("float", -1.0)},
       infer_shape=_dgc_momentum_infer, grad=no_gradient, kernel=_dgc_momentum,
       host_reads="current_step, nranks: they choose momentum or SGD",
       doc="g = Grad / nranks = Grad_out. Before rampup_begin_step: VelocityOut = "
           "mu * Velocity + g, ParamOut = Param - lr * VelocityOut (use_nesterov: Param - "
           "lr * (g + mu * VelocityOut)); from it on: ParamOut = Param - lr * g. Nothing "
           "changes when rampup_begin_step < 0.")


# --- dgc_clip_by_norm ------------------------------------------------------------------------
def _dgc_clip_infer(ctx):
    ctx.set_output("Out", ctx.input_shape("X"), ctx.input_dtype("X"))
    ctx.share_lod("X", "Out")


def _dgc_clip_by_norm(ctx, x, current_step):
    begin = int(ctx.attrs["rampup_begin_step"])
    if begin < 0 or _step(current_step) < begin:
        return x
    return _clip_to_norm(ctx.xp, x, ctx.attrs["max_norm"])


def_op("dgc_clip_by_norm", inputs=["X", "current_step"], outputs=["Out"],
       attrs={"max_norm": ("float", None), "rampup_begin_step": ("float", -1.0)},
       infer_shape=_dgc_clip_infer, grad=no_gradient, kernel=_dgc_clip_by_norm,
       host_reads="current_step: it decides whether to clip",
       doc="From rampup_begin_step on (and when it is >= 0): Out = X * max_norm / ||X||_2 "
           "when ||X||_2 > max_norm, else X. Before it, Out = X.")
