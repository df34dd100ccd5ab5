"""The native code generator's emitters: one entry per op type, each turning one op instance
into the C++ body of its function (calls into ``runtime/fluid_native.h``).

An emitter is ``emit(op, env) -> [lines]``. ``env`` (see env.py) knows every variable's
shape and element type and gives its pointer expression (``env.ptr(name)``, named after the
variable in the function). In a program specialised on one set of feed shapes every size
is a literal; in one whose sizes change from batch to batch (LoD, sub-blocks) a size may be
a :class:`~.env.Dim` read at run time, and each emitter states the dims of its outputs
with ``env.resize`` (a no-op in the specialised case). An emitter that meets a case it does
not handle raises :class:`NoEmitter` saying why; the generator then reports the op as one
that stays in the interpreter.

This module holds the dense ops; ``lod_emitters.py`` the LoD, tensor-array and small
loop ops, ``loop_emitters.py`` ``while`` and ``while_grad``.
"""
import math

from ...ops.creation import fill_value
from .emitter_table import EMITTERS, NoEmitter, emitter  # noqa: F401  (the table's home)
from .env import count as _count


def _one(op, slot, kind="inputs"):
    args = getattr(op, kind).get(slot) or []
    return args[0] if args else None


def _float(value, ctype):
    text = repr(float(value))
    special = {"inf": "INFINITY", "-inf": "-INFINITY", "nan": "NAN"}
    if text in special:
        return f"{ctype}({special[text]})"
    return f"{text}f" if ctype == "float" else text


def _require_float(op, env, name):
    if env.ctype(name) not in ("float", "double"):
        raise NoEmitter(f"{name} is {env.ctype(name)}, a float type expected")


# --- matrix products ---------------------------------------------------------------------------
def _mul_dims(op, env):
    x, y = _one(op, "X"), _one(op, "Y")
    xs, ys = env.shape(x), env.shape(y)
    xc, yc = op.attrs.get("x_num_col_dims", 1), op.attrs.get("y_num_col_dims", 1)
    M, K = _count(xs[:xc]), _count(xs[xc:])
    K2, N = _count(ys[:yc]), _count(ys[yc:])
    if K != K2:
        raise NoEmitter(f"X flattens to [{M}, {K}] but Y to [{K2}, {N}]")
    return x, y, M, K, N


@emitter("mul")
def _mul(op, env):
    x, y, M, K, N = _mul_dims(op, env)
    _require_float(op, env, x)
    out = _one(op, "Out", "outputs")
    xc, yc = op.attrs.get("x_num_col_dims", 1), op.attrs.get("y_num_col_dims", 1)
    dims = list(env.shape(x)[:xc]) + list(env.shape(y)[yc:])
    return env.resize(out, dims) + [
        f"mul({env.ptr(x)}, {env.ptr(y)}, {env.ptr(out)}, {M}, {K}, {N});"]


@emitter("mul_grad")
def _mul_grad(op, env):
    x, y, M, K, N = _mul_dims(op, env)
    dout = _one(op, "Out@GRAD")
    dx, dy = _live(op, env, "X@GRAD"), _live(op, env, "Y@GRAD")
    total = env.accumulator(dy) if dy else None
    lines = []
    if total:  # dY added into a while_grad's total over the steps: one product, no copy
        dy = None
        zero, one = ("0.0f", "1.0f") if env.ctype(x) == "float" else ("0.0", "1.0")
        dims = ", ".join(str(d) for d in env.shape(y))
        lines += [f"const bool first = !{total}.initialised;",
                  f"if (first) {total}.resize({{{dims}}});",
                  f"gemm(true, false, {K}, {N}, {M}, {env.ptr(x)}, {env.ptr(dout)}, "
                  f"{total}.data, first ? {zero} : {one});"]
    transposed = env.transposed(y) if dx else None
    if transposed:  # dX = dOut @ (Y^T), Y^T made once for the loop: a plain product
        lines = env.resize_like(dx, x) + [
            f"gemm(false, false, {M}, {K}, {N}, {env.ptr(dout)}, {transposed}.data, "
            f"{env.ptr(dx)});"] + lines
        dx = None
    if not (dx or dy):
        return lines
    absent = f"static_cast<{env.ctype(x)}*>(nullptr)"
    sizes = (env.resize_like(dx, x) if dx else []) + (env.resize_like(dy, y) if dy else [])
    return sizes + [f"mul_grad({env.ptr(x)}, {env.ptr(y)}, {env.ptr(dout)}, "
                    f"{env.ptr(dx) if dx else absent}, {env.ptr(dy) if dy else absent}, "
                    f"{M}, {K}, {N});"] + lines


def _live(op, env, slot):
    """The variable of output ``slot`` when the op has one that someone reads."""
    name = _one(op, slot, "outputs")
    return name if name and not env.dead(name) else None


# --- elementwise ---------------------------------------------------------------------------------------
def _broadcast(op, env, x, y):
    """(pre, n, post): X viewed as [pre, n, post] and Y as [n], Paddle's axis rule."""
    xs, ys = list(env.shape(x)), list(env.shape(y))
    if env.same_shape(x, y):
        return 1, _count(xs), 1
    axis = op.attrs.get("axis", -1)
    while len(ys) > 1 and ys[-1] == 1:  # Paddle trims Y's trailing 1s
        ys.pop()
    if axis == -1:
        axis = len(xs) - len(ys)
    if not (0 <= axis <= len(xs) - len(ys)) or xs[axis:axis + len(ys)] != ys:
        raise NoEmitter(f"Y {env.shape(y)} does not broadcast over X {env.shape(x)} at "
                        f"axis {op.attrs.get('axis', -1)} without a general broadcast")
    return _count(xs[:axis]), _count(ys), _count(xs[axis + len(ys):])


@emitter("elementwise_add_grad", "elementwise_sub_grad")
def _elementwise_grad(op, env):
    x, y, dout = _one(op, "X"), _one(op, "Y"), _one(op, "Out@GRAD")
    dx, dy = _live(op, env, "X@GRAD"), _live(op, env, "Y@GRAD")
    pre, n, post = _broadcast(op, env, x, y)
    lines = (env.resize_like(dx, x) if dx else []) + (env.resize_like(dy, y) if dy else [])
    if dx:
        lines.append(f"copy({env.ptr(dout)}, {env.ptr(dx)}, {pre * n * post});")
    if dy:
        sign = "1" if op.type == "elementwise_add_grad" else "-1"
        if (pre, post) == (1, 1):
            call = "copy" if sign == "1" else "negate"
            lines.append(f"{call}({env.ptr(dout)}, {env.ptr(dy)}, {n});")
        else:
            lines.append(f"reduce_to_y({env.ptr(dout)}, {env.ptr(dy)}, {pre}, {n}, {post}, "
                         f"{env.ctype(dy)}({sign}));")
    return lines


@emitter("elementwise_mul_grad")
def _elementwise_mul_grad(op, env):
    x, y, dout = _one(op, "X"), _one(op, "Y"), _one(op, "Out@GRAD")
    dx, dy = _live(op, env, "X@GRAD"), _live(op, env, "Y@GRAD")
    _require_float(op, env, x)
    pre, n, post = _broadcast(op, env, x, y)
    lines = (env.resize_like(dx, x) if dx else []) + (env.resize_like(dy, y) if dy else [])
    if dx:  # dX = dOut * Y (Y broadcast as in the forward op)
        ctype = env.ctype(x)
        times = f"FLUID_LAMBDA({ctype} a, {ctype} b) -> {ctype} {{ return a * b; }}"
        lines.append(f"broadcast({env.ptr(dout)}, {env.ptr(y)}, {env.ptr(dx)}, {pre}, "
                     f"{n}, {post}, {times});")
    if dy:  # dY = dOut * X, summed over what Y was broadcast across
        lines.append(f"mul_reduce_to_y({env.ptr(dout)}, {env.ptr(x)}, {env.ptr(dy)}, {pre}, "
                     f"{n}, {post});")
    return lines


# --- activations and other maps ----------------------------------------------------------------------
@emitter("assign")
def _assign(op, env):
    x, out = _one(op, "X"), _one(op, "Out", "outputs")
    return env.resize_like(out, x) + [
        f"copy({env.ptr(x)}, {env.ptr(out)}, {_count(env.shape(x))});"]


@emitter("scale")
def _scale(op, env):
    if op.inputs.get("ScaleTensor"):
        raise NoEmitter("ScaleTensor: a scale read at run time")
    x, out = _one(op, "X"), _one(op, "Out", "outputs")
    _require_float(op, env, x)
    ctype, a = env.ctype(x), op.attrs
    sizes = env.resize_like(out, x)
    return sizes + [f"scale({env.ptr(x)}, {env.ptr(out)}, {_count(env.shape(x))}, "
            f"{_float(a.get('scale', 1.0), ctype)}, {_float(a.get('bias', 0.0), ctype)}, "
            f"{'true' if a.get('bias_after_scale', True) else 'false'});"]


@emitter("fill_constant")
def _fill_constant(op, env):
    if op.inputs.get("ValueTensor") or op.inputs.get("ShapeTensor") \
            or op.inputs.get("ShapeTensorList"):
        raise NoEmitter("a value or shape read at run time")
    out = _one(op, "Out", "outputs")
    ctype = env.ctype(out)
    value = fill_value(op.type, op.attrs)
    floating = ctype in ("float", "double")
    if not floating and not math.isfinite(value):
        raise NoEmitter(f"value {value} for an integer tensor")
    literal = _float(value, ctype) if floating else str(int(value))
    return [f"fill({env.ptr(out)}, {_count(env.shape(out))}, {ctype}({literal}));"]


@emitter("dropout")
def _dropout(op, env):
    a = op.attrs
    if not a.get("is_test", False):
        raise NoEmitter("a training dropout (a random mask)")
    x, out = _one(op, "X"), _one(op, "Out", "outputs")
    _require_float(op, env, x)
    ctype = env.ctype(x)
    # testing: upscale_in_train passes X through, downgrade_in_infer scales by 1 - p;
    # no Mask is written, as in Paddle
    keep = 1.0 if a.get("dropout_implementation", "downgrade_in_infer") == \
        "upscale_in_train" else 1.0 - float(a.get("dropout_prob", 0.5))
    sizes = env.resize_like(out, x)
    return sizes + [f"scale({env.ptr(x)}, {env.ptr(out)}, {_count(env.shape(x))}, "
            f"{_float(keep, ctype)}, {ctype}(0), true);"]


# --- reductions, softmax, losses -----------------------------------------------------------------------
@emitter("mean")
def _mean(op, env):
    x, out = _one(op, "X"), _one(op, "Out", "outputs")
    _require_float(op, env, x)
    return [f"mean({env.ptr(x)}, {env.ptr(out)}, {_count(env.shape(x))});"]


@emitter("mean_grad")
def _mean_grad(op, env):
    x, dout, dx = _one(op, "X"), _one(op, "Out@GRAD"), _one(op, "X@GRAD", "outputs")
    return env.resize_like(dx, x) + [
        f"mean_grad({env.ptr(dout)}, {env.ptr(dx)}, {_count(env.shape(x))});"]


def _rows_classes(op, env, name):
    shape = env.shape(name)
    axis = op.attrs.get("axis", -1)
    if axis not in (-1, len(shape) - 1):
        raise NoEmitter(f"axis {axis}: the last axis expected")
    return _count(shape[:-1]), shape[-1]


@emitter("softmax")
def _softmax(op, env):
    x, out = _one(op, "X"), _one(op, "Out", "outputs")
    _require_float(op, env, x)
    rows, classes = _rows_classes(op, env, x)
    return env.resize_like(out, x) + [f"softmax({env.ptr(x)}, {env.ptr(out)}, {rows}, {classes});"]


def _hard_labels(op, env, label):
    a = op.attrs
    if a.get("soft_label") or not a.get("use_softmax", True):
        raise NoEmitter("soft labels or use_softmax=False")
    if env.ctype(label) != "int64_t":
        raise NoEmitter(f"Label is {env.ctype(label)}, int64 expected")


@emitter("softmax_with_cross_entropy")
def _softmax_xent(op, env):
    logits, label = _one(op, "Logits"), _one(op, "Label")
    softmax, loss = _one(op, "Softmax", "outputs"), _one(op, "Loss", "outputs")
    _hard_labels(op, env, label)
    rows, classes = _rows_classes(op, env, logits)
    loss_dims = list(env.shape(logits)[:-1]) + [1]
    return env.resize_like(softmax, logits) + env.resize(loss, loss_dims) + [
            f"softmax_cross_entropy({env.ptr(logits)}, {env.ptr(label)}, {env.ptr(softmax)}, "
            f"{env.ptr(loss)}, {rows}, {classes}, {int(op.attrs.get('ignore_index', -100))});"]


@emitter("softmax_with_cross_entropy_grad")
def _softmax_xent_grad(op, env):
    softmax, label = _one(op, "Softmax"), _one(op, "Label")
    dloss, dlogits = _one(op, "Loss@GRAD"), _one(op, "Logits@GRAD", "outputs")
    _hard_labels(op, env, label)
    rows, classes = _rows_classes(op, env, softmax)
    sizes = env.resize_like(dlogits, softmax)
    return sizes + [f"softmax_cross_entropy_grad({env.ptr(softmax)}, {env.ptr(label)}, "
            f"{env.ptr(dloss)}, {env.ptr(dlogits)}, {rows}, {classes}, "
            f"{int(op.attrs.get('ignore_index', -100))});"]


# --- convolution, pooling, batch norm (NCHW) -------------------------------------------------------
@emitter("conv2d", "depthwise_conv2d")
def _conv2d(op, env):
    from ...ops.conv import ConvGeometry
    x, w, out = _one(op, "Input"), _one(op, "Filter"), _one(op, "Output", "outputs")
    if op.inputs.get("Bias") or op.inputs.get("ResidualData"):
        raise NoEmitter("a fused Bias or ResidualData")
    _require_float(op, env, x)
    xs, ws = env.shape(x), env.shape(w)
    g = ConvGeometry(op.type, op.attrs, xs, ws)
    if g.channel_last:
        raise NoEmitter("NHWC layout")
    (pt, _), (pl, _) = g.pads
    (oh, ow), (kh, kw) = g.out, g.ksizes
    rows = (xs[1] // g.groups) * kh * kw
    cols = env.scratch(rows * oh * ow, "float32" if env.ctype(x) == "float" else "float64")
    sizes = env.resize(out, [xs[0], ws[0], oh, ow])
    return sizes + [f"conv2d({env.ptr(x)}, {env.ptr(w)}, {env.ptr(out)}, {cols}, {xs[0]}, {xs[1]}, "
            f"{xs[2]}, {xs[3]}, {ws[0]}, {kh}, {kw}, {oh}, {ow}, {g.strides[0]}, "
            f"{g.strides[1]}, {pt}, {pl}, {g.dilations[0]}, {g.dilations[1]}, {g.groups});"]


@emitter("pool2d")
def _pool2d(op, env):
    from ...ops.conv import PoolGeometry
    x, out = _one(op, "X"), _one(op, "Out", "outputs")
    _require_float(op, env, x)
    xs = env.shape(x)
    g = PoolGeometry(op.type, op.attrs, xs)
    if g.channel_last or g.adaptive:
        raise NoEmitter("NHWC layout or adaptive pooling")
    (pt, _), (pl, _) = g.pads
    (oh, ow), (kh, kw) = g.out, g.ksizes
    is_max = op.attrs.get("pooling_type") == "max"
    exclusive = bool(op.attrs.get("exclusive", True))
    sizes = env.resize(out, [xs[0], xs[1], oh, ow])
    return sizes + [f"pool2d({env.ptr(x)}, {env.ptr(out)}, {xs[0] * xs[1]}, {xs[2]}, {xs[3]}, "
            f"{kh}, {kw}, {oh}, {ow}, {g.strides[0]}, {g.strides[1]}, {pt}, {pl}, "
            f"{'true' if is_max else 'false'}, {'true' if exclusive else 'false'});"]


@emitter("batch_norm")
def _batch_norm(op, env):
    a = op.attrs
    if not (a.get("is_test") or a.get("use_global_stats")) or a.get("trainable_statistics"):
        raise NoEmitter("batch statistics (training): only the running statistics' form")
    if a.get("data_layout", "NCHW") != "NCHW" or a.get("fuse_with_relu"):
        raise NoEmitter("a layout other than NCHW, or fuse_with_relu")
    x, y = _one(op, "X"), _one(op, "Y", "outputs")
    _require_float(op, env, x)
    xs = env.shape(x)
    mean, variance = _one(op, "Mean"), _one(op, "Variance")
    scale, bias = _one(op, "Scale"), _one(op, "Bias")
    ctype = env.ctype(x)
    if env.ctype(mean) != ctype:
        raise NoEmitter("statistics of another type than X")
    absent = f"static_cast<const {ctype}*>(nullptr)"
    lines = env.resize_like(y, x)
    lines += [f"batch_norm_inference({env.ptr(x)}, {env.ptr(scale) if scale else absent}, "
             f"{env.ptr(bias) if bias else absent}, {env.ptr(mean)}, {env.ptr(variance)}, "
             f"{env.ptr(y)}, {xs[0]}, {xs[1]}, {_count(xs[2:])}, "
             f"{ctype}({_float(a.get('epsilon', 1e-5), ctype)}));"]
    # the statistics pass through; the saved ones are zero, as the interpreter leaves them
    for out_slot, source in (("MeanOut", mean), ("VarianceOut", variance)):
        out = _one(op, out_slot, "outputs")
        if out and out != source:
            lines.append(f"copy({env.ptr(source)}, {env.ptr(out)}, {_count(env.shape(source))});")
    for out_slot in ("SavedMean", "SavedVariance"):
        out = _one(op, out_slot, "outputs")
        if out and env.has(out):
            lines.append(f"fill({env.ptr(out)}, {_count(env.shape(out))}, {ctype}(0));")
    return lines


# --- optimizers ------------------------------------------------------------------------------------------
def _updated(op, env, pairs):
    """The update kernels work in place: each output that is not its input (ParamOut other
    than Param) starts as a copy of the input. Returns (copy lines, {input slot: the
    variable the kernel updates})."""
    lines, target = [], {}
    for out_slot, in_slot in pairs:
        source, out = _one(op, in_slot), _one(op, out_slot, "outputs")
        if out is None:
            raise NoEmitter(f"no {out_slot}")
        if out != source:
            lines.append(f"copy({env.ptr(source)}, {env.ptr(out)}, "
                         f"{_count(env.shape(source))});")
        target[in_slot] = out
    return lines, target


@emitter("sgd")
def _sgd(op, env):
    grad, lr = _one(op, "Grad"), _one(op, "LearningRate")
    if env.kind(grad) != "dense":
        raise NoEmitter("a sparse gradient")
    lines, target = _updated(op, env, [("ParamOut", "Param")])
    param = target["Param"]
    return lines + [f"sgd({env.ptr(param)}, {env.ptr(grad)}, {env.ptr(lr)}, "
                    f"{_count(env.shape(param))});"]


@emitter("momentum")
def _momentum(op, env):
    a = op.attrs
    if op.inputs.get("MasterParam") or a.get("multi_precision"):
        raise NoEmitter("MasterParam or multi_precision")
    if a.get("regularization_method") not in ("", "l2_decay"):
        raise NoEmitter(f"regularization_method {a['regularization_method']!r}")
    grad = _one(op, "Grad")
    if env.kind(grad) != "dense":
        raise NoEmitter("a sparse gradient")
    lines, target = _updated(op, env, [("ParamOut", "Param"), ("VelocityOut", "Velocity")])
    param = target["Param"]
    ctype = env.ctype(param)
    pointers = ", ".join(env.ptr(n) for n in (param, grad, target["Velocity"],
                                              _one(op, "LearningRate")))
    l2 = a.get("regularization_method") == "l2_decay"
    flag = lambda value: "true" if value else "false"  # noqa: E731
    return lines + [f"momentum({pointers}, {_count(env.shape(param))}, "
                    f"{ctype}({_float(a['mu'], ctype)}), "
                    f"{ctype}({_float(a.get('rescale_grad', 1.0), ctype)}), {flag(l2)}, "
                    f"{ctype}({_float(a.get('regularization_coeff', 0.0), ctype)}), "
                    f"{flag(a.get('use_nesterov'))});"]


@emitter("adam")
def _adam(op, env):
    pows = [("Beta1PowOut", "Beta1Pow"), ("Beta2PowOut", "Beta2Pow")]
    update_pows = all(op.outputs.get(out) for out, _ in pows)
    for slot in ("Beta1Tensor", "Beta2Tensor", "EpsilonTensor", "MasterParam", "SkipUpdate"):
        if op.inputs.get(slot):
            raise NoEmitter(f"{slot} given")
    a = op.attrs
    if a.get("lazy_mode") or a.get("use_global_beta_pow") or a.get("multi_precision"):
        raise NoEmitter("lazy_mode, use_global_beta_pow or multi_precision")
    grad = _one(op, "Grad")
    if env.kind(grad) != "dense":
        raise NoEmitter("a sparse gradient")
    lines, target = _updated(op, env, [("ParamOut", "Param"), ("Moment1Out", "Moment1"),
                                       ("Moment2Out", "Moment2")]
                             + (pows if update_pows else []))
    param = target["Param"]
    ctype = env.ctype(param)
    names = [param, grad, _one(op, "LearningRate"), target["Moment1"], target["Moment2"],
             target.get("Beta1Pow", _one(op, "Beta1Pow")),
             target.get("Beta2Pow", _one(op, "Beta2Pow"))]
    pointers = ", ".join(env.ptr(n) for n in names)
    return lines + [f"adam({pointers}, {_count(env.shape(param))}, "
            f"{ctype}({_float(a['beta1'], ctype)}), {ctype}({_float(a['beta2'], ctype)}), "
            f"{ctype}({_float(a['epsilon'], ctype)}), {'true' if update_pows else 'false'});"]


def supported(op_type):
    return op_type in EMITTERS
