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

from ...framework.program import EMPTY_VAR_NAME
from ...ops.creation import fill_value
from .emitter_table import EMITTERS, NoEmitter, emitter  # noqa: F401  (the table's home)
from .env import count as _count, is_static


def _one(op, slot, kind="inputs"):
    args = getattr(op, kind).get(slot) or []
    return args[0] if args else None


def _float(value, ctype):
    text = repr(float(value))
    special = {"inf": "INFINITY", "-inf": "-INFINITY", "nan": "NAN"}
    if text in special:
        return f"{ctype}({special[text]})"
    return f"{text}f" if ctype == "float" else text


def _fill_literal(value, ctype):
    """The C++ literal a filling op writes ``value`` as in a ``ctype`` tensor: a float as
    itself (inf and nan spelled out), a bool as the value's truth (0.5 is true, as NumPy's
    cast and Paddle's static_cast make it), an integer type truncated; NoEmitter for a value
    no integer holds (inf, nan)."""
    if ctype in ("float", "double"):
        return _float(value, ctype)
    if not math.isfinite(value):
        raise NoEmitter(f"value {value} for an integer tensor")
    return ("true" if value else "false") if ctype == "bool" else str(int(value))


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


def _matmul_sizes(op, env, x, y):
    """(batch, x stride, y stride, M, K, N) of Fluid's legacy matmul: a vector X is a row,
    a vector Y a column; equal batches, or one operand a matrix every item shares."""
    a = op.attrs
    if int(a.get("head_number", 1)) != 1:
        raise NoEmitter("head_number > 1")
    tx, ty = bool(a.get("transpose_X")), bool(a.get("transpose_Y"))
    xs, ys = list(env.shape(x)), list(env.shape(y))
    if not (is_static(xs) and is_static(ys)) or not xs or not ys:
        raise NoEmitter("sizes known only at run time" if xs and ys else "a 0-D operand")
    xm = [1] + xs if len(xs) == 1 else xs
    ym = ys + [1] if len(ys) == 1 else ys
    M, K = (xm[-1], xm[-2]) if tx else (xm[-2], xm[-1])
    K2, N = (ym[-1], ym[-2]) if ty else (ym[-2], ym[-1])
    if K != K2:
        raise NoEmitter(f"X {xs} and Y {ys}: widths {K} and {K2}")
    bx, by = _count(xm[:-2]) if len(xm) > 2 else 0, _count(ym[:-2]) if len(ym) > 2 else 0
    if bx and by and bx != by:
        raise NoEmitter(f"batches {bx} and {by}")
    batch = max(bx, by, 1)
    return batch, M * K if bx else 0, K * N if by else 0, M, K, N


def _flag(value):
    return "true" if value else "false"


@emitter("matmul")
def _matmul(op, env):
    x, y, out = _one(op, "X"), _one(op, "Y"), _one(op, "Out", "outputs")
    _same_float(op, env, x, y)
    batch, x_stride, y_stride, M, K, N = _matmul_sizes(op, env, x, y)
    ctype, a = env.ctype(x), op.attrs
    return [f"matmul({env.ptr(x)}, {env.ptr(y)}, {env.ptr(out)}, {batch}, {x_stride}, "
            f"{y_stride}, {M}, {K}, {N}, {_flag(a.get('transpose_X'))}, "
            f"{_flag(a.get('transpose_Y'))}, {ctype}({_float(a.get('alpha', 1.0), ctype)}));"]


@emitter("matmul_grad")
def _matmul_grad(op, env):
    x, y, dout = _one(op, "X"), _one(op, "Y"), _one(op, "Out@GRAD")
    dx, dy = _live(op, env, "X@GRAD"), _live(op, env, "Y@GRAD")
    _same_float(op, env, x, y, dout)
    batch, x_stride, y_stride, M, K, N = _matmul_sizes(op, env, x, y)
    if not (dx or dy):
        return []
    ctype, a = env.ctype(x), op.attrs
    absent = f"static_cast<{ctype}*>(nullptr)"
    sizes = (env.resize_like(dx, x) if dx else []) + (env.resize_like(dy, y) if dy else [])
    return sizes + [
        f"matmul_grad({env.ptr(x)}, {env.ptr(y)}, {env.ptr(dout)}, "
        f"{env.ptr(dx) if dx else absent}, {env.ptr(dy) if dy else absent}, {batch}, "
        f"{x_stride}, {y_stride}, {M}, {K}, {N}, {_flag(a.get('transpose_X'))}, "
        f"{_flag(a.get('transpose_Y'))}, {ctype}({_float(a.get('alpha', 1.0), ctype)}));"]


# --- shapes: a reshape copies, a transpose permutes --------------------------------------------------
def _dims8(values):
    """A Dims8 literal (the runtime's by-value dims of a tensor of rank <= 8)."""
    return "Dims8{{" + ", ".join(str(int(v)) for v in values) + "}}"


def _static(env, name, what="X"):
    shape = list(env.shape(name))
    if not is_static(shape):
        raise NoEmitter("sizes known only at run time")
    if len(shape) > 8:
        raise NoEmitter(f"{what} of rank {len(shape)}, 8 at most")
    return shape


@emitter("reshape2", "squeeze2", "unsqueeze2", "flatten2", "reshape", "squeeze", "unsqueeze",
         "flatten")
def _reshape(op, env):
    for slot, names in op.inputs.items():
        if slot != "X" and names:
            raise NoEmitter(f"{slot} given (a shape read at run time)")
    x, out = _one(op, "X"), _one(op, "Out", "outputs")
    count_ = _count(_static(env, x))
    if out == x:
        return []
    lines = [env.copy_of(x, out, count_)]
    if env.dynamic:
        # XShape holds no values, only its dims (the generator gives them to what the op
        # touches) and X's LoD; Out keeps X's LoD where its first dim is X's, as the
        # interpreter's
        xshape = _one(op, "XShape", "outputs")
        if xshape and env.has(xshape):
            env.ptr(xshape)
            lines.append(f"share_lod({env.tensor(x)}, {env.tensor(xshape)});")
        xs, outs = env.shape(x), env.shape(out)
        if xs and outs and xs[0] == outs[0]:
            env.kernel_sets(out)
            lines = env.resize(out, list(outs)) + lines + [
                f"share_lod({env.tensor(x)}, {env.tensor(out)});"]
    return lines


@emitter("reshape2_grad", "squeeze2_grad", "unsqueeze2_grad", "flatten2_grad", "reshape_grad",
         "squeeze_grad", "unsqueeze_grad", "flatten_grad")
def _reshape_grad(op, env):
    dout, dx = _one(op, "Out@GRAD"), _live(op, env, "X@GRAD")
    if not dx:
        return []
    count_ = _count(_static(env, dout, "Out@GRAD"))
    return [] if dx == dout else [env.copy_of(dout, dx, count_)]


def _permutation(op, rank):
    perm = [int(a) + rank if -rank <= int(a) < 0 else int(a) for a in op.attrs.get("axis", [])]
    if sorted(perm) != list(range(rank)):
        raise NoEmitter(f"axis {perm} is not a permutation of {rank} dims")
    return perm


@emitter("transpose2", "transpose")
def _transpose(op, env):
    x, out = _one(op, "X"), _one(op, "Out", "outputs")
    shape = _static(env, x)
    perm = _permutation(op, len(shape))
    if not shape:
        return [f"copy({env.ptr(x)}, {env.ptr(out)}, 1);"]
    return [f"transpose({env.ptr(x)}, {env.ptr(out)}, {len(shape)}, {_dims8(shape)}, "
            f"{_dims8(perm)});"]


@emitter("transpose2_grad", "transpose_grad")
def _transpose_grad(op, env):
    dout, dx = _one(op, "Out@GRAD"), _live(op, env, "X@GRAD")
    shape = _static(env, dout, "Out@GRAD")
    perm = _permutation(op, len(shape))
    if not dx:
        return []
    if not shape:
        return [f"copy({env.ptr(dout)}, {env.ptr(dx)}, 1);"]
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return [f"transpose({env.ptr(dout)}, {env.ptr(dx)}, {len(shape)}, {_dims8(shape)}, "
            f"{_dims8(inverse)});"]


# --- reductions over dims -----------------------------------------------------------------------------
def _reduction(op, env, x):
    """(X's dims, the reduced marks, the count each output sums) of reduce_sum/_mean."""
    shape = _static(env, x)
    a = op.attrs
    rank = len(shape)
    dims = [int(d) for d in a.get("dim", [])]
    if a.get("reduce_all") or not dims or len(dims) == rank or rank == 0:
        axes = set(range(rank))
    else:
        if any(not -rank <= d < rank for d in dims):
            raise NoEmitter(f"dim {dims} outside the rank {rank}")
        axes = {d % rank for d in dims}
    reduced = [1 if k in axes else 0 for k in range(rank)]
    return shape, reduced, _count([shape[k] for k in axes]) if axes else 1


@emitter("reduce_sum", "reduce_mean")
def _reduce(op, env):
    x, out = _one(op, "X"), _one(op, "Out", "outputs")
    if op.type == "reduce_mean":
        _same_float(op, env, x, out)
    elif env.ctype(x) not in ("float", "double", "int32_t", "int64_t"):
        raise NoEmitter(f"X is {env.ctype(x)}")
    shape, reduced, per_output = _reduction(op, env, x)
    ctype = env.ctype(out)  # (reduce_sum: int32 sums to int64, or to out_dtype)
    if ctype not in ("float", "double", "int32_t", "int64_t"):
        raise NoEmitter(f"Out is {ctype}")
    factor = _float(1.0 / max(per_output, 1), ctype) if op.type == "reduce_mean" else "1"
    return [f"reduce_sum({env.ptr(x)}, {env.ptr(out)}, {len(shape)}, {_dims8(shape or [1])}, "
            f"{_dims8(reduced or [1])}, {_count(env.shape(out))}, {ctype}({factor}));"]


@emitter("reduce_sum_grad", "reduce_mean_grad")
def _reduce_grad(op, env):
    x, dout, dx = _one(op, "X"), _one(op, "Out@GRAD"), _live(op, env, "X@GRAD")
    _same_float(op, env, x, dout)
    shape, reduced, per_output = _reduction(op, env, x)
    if not dx:
        return []
    ctype = env.ctype(x)
    factor = 1.0 / max(per_output, 1) if op.type == "reduce_mean_grad" else 1.0
    return env.resize_like(dx, x) + [
        f"reduce_sum_grad({env.ptr(dout)}, {env.ptr(dx)}, {len(shape) or 1}, "
        f"{_dims8(shape or [1])}, {_dims8(reduced or [1])}, {ctype}({_float(factor, ctype)}));"]


# --- elementwise ---------------------------------------------------------------------------------------
def _broadcast(op, env, x, y):
    """(pre, n, post): X viewed as [pre, n, post] and Y as [n], Paddle's axis rule."""
    xs, ys = list(env.shape(x)), list(env.shape(y))
    if env.same_shape(x, y):
        return 1, _count(xs), 1
    axis = op.attrs.get("axis", -1)
    if is_static(ys) and _count(ys) == 1:  # Paddle trims Y's trailing 1s: all, a scalar
        return _count(xs), 1, 1
    while len(ys) > 1 and ys[-1] == 1:
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
        lines.append(env.copy_of(dout, dx, pre * n * post))
    if dy:
        sign = "1" if op.type == "elementwise_add_grad" else "-1"
        if (pre, post) == (1, 1):
            lines.append(env.copy_of(dout, dy, n) if sign == "1"
                         else f"negate({env.ptr(dout)}, {env.ptr(dy)}, {n});")
        else:
            lines.append(f"reduce_to_y({env.ptr(dout)}, {env.ptr(dy)}, {pre}, {n}, {post}, "
                         f"{env.ctype(dy)}({sign}));")
    return lines


@emitter("elementwise_div")
def _elementwise_div(op, env):
    x, y, out = _one(op, "X"), _one(op, "Y"), _one(op, "Out", "outputs")
    _require_float(op, env, x)  # (integers divide toward zero: the interpreter's)
    ctype = env.ctype(x)
    divide = f"FLUID_LAMBDA({ctype} a, {ctype} b) -> {ctype} {{ return a / b; }}"
    lines = env.resize_like(out, x)
    if env.same_shape(x, y):
        return lines + [f"map2({env.ptr(x)}, {env.ptr(y)}, {env.ptr(out)}, "
                        f"{_count(env.shape(x))}, {divide});"]
    pre, n, post = _broadcast(op, env, x, y)
    return lines + [f"broadcast({env.ptr(x)}, {env.ptr(y)}, {env.ptr(out)}, {pre}, {n}, "
                    f"{post}, {divide});"]


@emitter("elementwise_div_grad")
def _elementwise_div_grad(op, env):
    y, out, dout = _one(op, "Y"), _one(op, "Out"), _one(op, "Out@GRAD")
    dx, dy = _live(op, env, "X@GRAD"), _live(op, env, "Y@GRAD")
    if out is None:
        raise NoEmitter("no Out (dY needs it)")
    _require_float(op, env, dout)
    pre, n, post = _broadcast(op, env, out, y)
    lines = (env.resize_like(dx, out) if dx else []) + (env.resize_like(dy, y) if dy else [])
    if dx:  # dX = dOut / Y (Y broadcast as in the forward op)
        ctype = env.ctype(dout)
        divide = f"FLUID_LAMBDA({ctype} a, {ctype} b) -> {ctype} {{ return a / b; }}"
        lines.append(f"broadcast({env.ptr(dout)}, {env.ptr(y)}, {env.ptr(dx)}, {pre}, {n}, "
                     f"{post}, {divide});")
    if dy:  # dY = -dOut * Out / Y, summed over what Y was broadcast across
        lines.append(f"div_reduce_to_y({env.ptr(dout)}, {env.ptr(out)}, {env.ptr(y)}, "
                     f"{env.ptr(dy)}, {pre}, {n}, {post});")
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
@emitter("cast")
def _cast(op, env):
    x, out = _one(op, "X"), _one(op, "Out", "outputs")
    env.ctype(x), env.ctype(out)  # (types the runtime has kernels for, or NoEmitter)
    return env.resize_like(out, x) + [
        f"convert({env.ptr(x)}, {env.ptr(out)}, {_count(env.shape(x))});"]


def _concat_parts(op, env):
    """(the inputs, their sizes along the axis, pre, post, total, Out's dims) of a concat
    (or its gradient) of static, dense tensors of one type whose other dims agree."""
    if op.inputs.get("AxisTensor"):
        raise NoEmitter("AxisTensor: the axis read at run time")
    if env.dynamic:
        raise NoEmitter("a program with LoD (Out's LoD joins the inputs')")
    xs = list(op.inputs.get("X") or [])
    if not xs or any(env.kind(x) != "dense" for x in xs):
        raise NoEmitter("X expected as one or more dense tensors")
    shapes = [list(env.shape(x)) for x in xs]
    first = shapes[0]
    if not first or not all(is_static(s) for s in shapes):
        raise NoEmitter("sizes known only at run time" if first else "0-D inputs")
    if len({env.ctype(x) for x in xs}) != 1:
        raise NoEmitter("inputs of different types")
    axis = op.attrs.get("axis", 0) % len(first)
    if any(len(s) != len(first) or s[:axis] != first[:axis] or s[axis + 1:] != first[axis + 1:]
           for s in shapes):
        raise NoEmitter("inputs whose other dims differ")
    sizes = [s[axis] for s in shapes]
    dims = first[:axis] + [sum(sizes)] + first[axis + 1:]
    return xs, sizes, _count(first[:axis]), _count(first[axis + 1:]), sum(sizes), dims


@emitter("concat")
def _concat(op, env):
    xs, sizes, pre, post, total, dims = _concat_parts(op, env)
    out = _one(op, "Out", "outputs")
    lines, offset = env.resize(out, dims), 0
    for x, n in zip(xs, sizes):
        lines.append(f"concat_part({env.ptr(x)}, {env.ptr(out)}, {pre}, {n}, {post}, "
                     f"{total}, {offset});")
        offset += n
    return lines


@emitter("concat_grad")
def _concat_grad(op, env):
    xs, sizes, pre, post, total, _ = _concat_parts(op, env)
    dout = _one(op, "Out@GRAD")
    grads = list(op.outputs.get("X@GRAD") or [])
    lines, offset = [], 0
    for k, (x, n) in enumerate(zip(xs, sizes)):
        dx = grads[k] if k < len(grads) else None
        if dx and dx != EMPTY_VAR_NAME and not env.dead(dx):
            lines += env.resize_like(dx, x) + [
                f"split_part({env.ptr(dout)}, {env.ptr(dx)}, {pre}, {n}, {post}, {total}, "
                f"{offset});"]
        offset += n
    return lines


@emitter("assign")
def _assign(op, env):
    x, out = _one(op, "X"), _one(op, "Out", "outputs")
    return env.resize_like(out, x) + [env.copy_of(x, out, _count(env.shape(x)))]


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
    literal = _fill_literal(fill_value(op.type, op.attrs), ctype)
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


def _around_axis(op, env, name):
    """(pre, n, post): ``name`` viewed around the op's ``axis``; the sizes before the axis
    may be read at run time (a LoD batch's rows), the rest are known."""
    shape = env.shape(name)
    if not shape:
        raise NoEmitter("a 0-D tensor")
    axis = op.attrs.get("axis", -1)
    axis = axis + len(shape) if axis < 0 else axis
    if not is_static(shape[axis:]):
        raise NoEmitter("sizes known only at run time")
    return _count(shape[:axis]), shape[axis], _count(shape[axis + 1:])


@emitter("softmax")
def _softmax(op, env):
    x, out = _one(op, "X"), _one(op, "Out", "outputs")
    _require_float(op, env, x)
    pre, n, post = _around_axis(op, env, x)
    call = (f"softmax({env.ptr(x)}, {env.ptr(out)}, {pre}, {n});" if post == 1 else
            f"softmax_axis({env.ptr(x)}, {env.ptr(out)}, {pre}, {n}, {post});")
    return env.resize_like(out, x) + [call]


@emitter("softmax_grad")
def _softmax_grad(op, env):
    out, dout, dx = _one(op, "Out"), _one(op, "Out@GRAD"), _live(op, env, "X@GRAD")
    _require_float(op, env, out)
    pre, n, post = _around_axis(op, env, out)
    if not dx:
        return []
    return env.resize_like(dx, out) + [
        f"softmax_grad({env.ptr(out)}, {env.ptr(dout)}, {env.ptr(dx)}, {pre}, {n}, {post});"]


def _plain_xent(op, env, label, values):
    """Whether a softmax_with_cross_entropy (or its gradient) is the common case the row
    kernels take: the last axis, the softmax on, int64 hard labels."""
    a, shape = op.attrs, env.shape(values)
    return (not a.get("soft_label") and a.get("use_softmax", True)
            and env.ctype(label) == "int64_t"
            and a.get("axis", -1) in (-1, len(shape) - 1))


def _xent_labels(op, env, label, values):
    """(hard labels' pointer, soft labels' pointer) for the general kernels, one null."""
    if op.attrs.get("soft_label"):
        if env.ctype(label) != env.ctype(values) or env.shape(label) != env.shape(values):
            raise NoEmitter("soft labels expected of the logits' type and shape")
        return "static_cast<const int64_t*>(nullptr)", env.ptr(label)
    if env.ctype(label) not in ("int64_t", "int32_t"):
        raise NoEmitter(f"Label is {env.ctype(label)}, int64 or int32 expected")
    return env.ptr(label), f"static_cast<const {env.ctype(values)}*>(nullptr)"


def _xent_flags(op):
    return (f"{int(op.attrs.get('ignore_index', -100))}, "
            f"{'true' if op.attrs.get('use_softmax', True) else 'false'}")


@emitter("softmax_with_cross_entropy")
def _softmax_xent(op, env):
    logits, label = _one(op, "Logits"), _one(op, "Label")
    softmax, loss = _one(op, "Softmax", "outputs"), _one(op, "Loss", "outputs")
    _require_float(op, env, logits)
    if _plain_xent(op, env, label, logits):  # (sizes may be read at run time here)
        rows, classes = _rows_classes(op, env, logits)
        loss_dims = list(env.shape(logits)[:-1]) + [1]
        return env.resize_like(softmax, logits) + env.resize(loss, loss_dims) + [
            f"softmax_cross_entropy({env.ptr(logits)}, {env.ptr(label)}, {env.ptr(softmax)}, "
            f"{env.ptr(loss)}, {rows}, {classes}, {int(op.attrs.get('ignore_index', -100))});"]
    pre, n, post = _around_axis(op, env, logits)
    hard, soft = _xent_labels(op, env, label, logits)
    shape = list(env.shape(logits))
    axis = op.attrs.get("axis", -1) % len(shape)
    loss_dims = shape[:axis] + [1] + shape[axis + 1:]
    return env.resize_like(softmax, logits) + env.resize(loss, loss_dims) + [
        f"softmax_cross_entropy_axis({env.ptr(logits)}, {hard}, {soft}, {env.ptr(softmax)}, "
        f"{env.ptr(loss)}, {pre}, {n}, {post}, {_xent_flags(op)});"]


@emitter("softmax_with_cross_entropy_grad")
def _softmax_xent_grad(op, env):
    softmax, label = _one(op, "Softmax"), _one(op, "Label")
    dloss, dlogits = _one(op, "Loss@GRAD"), _one(op, "Logits@GRAD", "outputs")
    _require_float(op, env, softmax)
    sizes = env.resize_like(dlogits, softmax)
    if _plain_xent(op, env, label, softmax):
        rows, classes = _rows_classes(op, env, softmax)
        return sizes + [f"softmax_cross_entropy_grad({env.ptr(softmax)}, {env.ptr(label)}, "
                        f"{env.ptr(dloss)}, {env.ptr(dlogits)}, {rows}, {classes}, "
                        f"{int(op.attrs.get('ignore_index', -100))});"]
    pre, n, post = _around_axis(op, env, softmax)
    hard, soft = _xent_labels(op, env, label, softmax)
    return sizes + [
        f"softmax_cross_entropy_axis_grad({env.ptr(softmax)}, {hard}, {soft}, "
        f"{env.ptr(dloss)}, {env.ptr(dlogits)}, {pre}, {n}, {post}, {_xent_flags(op)});"]


def _class_rows(op, env, x, label):
    """(rows, classes) of probabilities X [..., classes] with hard labels [..., 1]."""
    _require_float(op, env, x)
    if env.ctype(label) not in ("int64_t", "int32_t"):
        raise NoEmitter(f"Label is {env.ctype(label)}, int64 or int32 expected")
    xs = env.shape(x)
    if not xs or not is_static(xs[-1:]):
        raise NoEmitter("the class count known only at run time" if xs else "a 0-D X")
    return _count(xs[:-1]), xs[-1]


@emitter("cross_entropy2")
def _cross_entropy2(op, env):
    x, label = _one(op, "X"), _one(op, "Label")
    y, match = _one(op, "Y", "outputs"), _live(op, env, "MatchX")
    rows, classes = _class_rows(op, env, x, label)
    absent = f"static_cast<{env.ctype(x)}*>(nullptr)"
    # (XShape holds no values: only its shape, which the buffer has)
    return [f"cross_entropy2({env.ptr(x)}, {env.ptr(label)}, {env.ptr(y)}, "
            f"{env.ptr(match) if match else absent}, {rows}, {classes}, "
            f"{int(op.attrs.get('ignore_index', -100))});"]


@emitter("cross_entropy_grad2")
def _cross_entropy_grad2(op, env):
    label, match, dy = _one(op, "Label"), _one(op, "MatchX"), _one(op, "Y@GRAD")
    xshape, dx = _one(op, "XShape"), _live(op, env, "X@GRAD")
    if not dx:
        return []
    _require_float(op, env, dy)
    if env.ctype(label) not in ("int64_t", "int32_t"):
        raise NoEmitter(f"Label is {env.ctype(label)}, int64 or int32 expected")
    # X's dims: MatchX's ([..., 1], sizes of a LoD batch read at run time) with the class
    # count XShape keeps (X's dims + [0]) last
    kept = list(env.shape(xshape))
    classes, rows = kept[-2:-1], list(env.shape(match))[:-1]
    if not is_static(classes) or len(kept) < 2:
        raise NoEmitter("the class count known only at run time")
    dims = rows + classes
    return env.resize(dx, dims) + [
        f"cross_entropy_grad2({env.ptr(label)}, {env.ptr(match)}, {env.ptr(dy)}, "
        f"{env.ptr(dx)}, {_count(dims[:-1])}, {dims[-1]}, "
        f"{int(op.attrs.get('ignore_index', -100))});"]


@emitter("top_k")
def _top_k(op, env):
    if op.inputs.get("K"):
        raise NoEmitter("K read at run time (it decides the outputs' shape)")
    x = _one(op, "X")
    out, indices = _one(op, "Out", "outputs"), _one(op, "Indices", "outputs")
    xs = env.shape(x)
    if not is_static(xs) or not xs:
        raise NoEmitter("sizes known only at run time" if xs else "a 0-D X")
    k = int(op.attrs.get("k", 1))
    if not 1 <= k <= xs[-1]:
        raise NoEmitter(f"k {k} outside [1, {xs[-1]}] (the interpreter says so)")
    if env.ctype(indices) != "int64_t":
        raise NoEmitter(f"Indices is {env.ctype(indices)}")
    dims = list(xs[:-1]) + [k]
    return env.resize(out, dims) + env.resize(indices, dims) + [
        f"top_k({env.ptr(x)}, {env.ptr(out)}, {env.ptr(indices)}, {_count(xs[:-1])}, "
        f"{xs[-1]}, {k});"]


@emitter("accuracy")
def _accuracy(op, env):
    indices, label = _one(op, "Indices"), _one(op, "Label")
    outs = [_one(op, slot, "outputs") for slot in ("Accuracy", "Correct", "Total")]
    shape = env.shape(indices)
    if not is_static(shape) or len(shape) < 1:
        raise NoEmitter("sizes known only at run time")
    if env.ctype(indices) != "int64_t" or env.ctype(label) not in ("int64_t", "int32_t"):
        raise NoEmitter(f"Indices {env.ctype(indices)}, Label {env.ctype(label)}: int64 "
                        "indices and int labels expected")
    want = ("float", "int32_t", "int32_t")
    for name, ctype in zip(outs, want):
        if name and env.ctype(name) != ctype:
            raise NoEmitter(f"{name} is {env.ctype(name)}, {ctype} expected")
    if not outs[0]:
        raise NoEmitter("no Accuracy output")
    absent = "static_cast<int32_t*>(nullptr)"
    rows = shape[0]
    return [f"accuracy({env.ptr(indices)}, {env.ptr(label)}, {env.ptr(outs[0])}, "
            f"{env.ptr(outs[1]) if outs[1] else absent}, "
            f"{env.ptr(outs[2]) if outs[2] else absent}, {rows}, {_count(shape) // max(rows, 1)});"]


# --- convolution, pooling, batch norm (NCHW) -------------------------------------------------------
class _Conv:
    """One conv2d's sizes as its kernels take them (NCHW), and the scratch it works in (one
    the program's convolutions share): a sample's im2col columns, then (NHWC) the operands
    turned channels-first."""

    def __init__(self, op, env, x, w):
        from ...ops.conv import ConvGeometry
        _require_float(op, env, x)
        xs, ws = env.shape(x), env.shape(w)
        if not (is_static(xs) and is_static(ws)):
            raise NoEmitter("sizes known only at run time")
        g = self.geometry = ConvGeometry(op.type, op.attrs, xs, ws)
        (pt, _), (pl, _) = g.pads
        (oh, ow), (kh, kw) = g.out, g.ksizes
        self.N, self.C, self.M = xs[0], g.channels, ws[0]
        self.spots, self.out_spots = _count(g.sizes), oh * ow
        self.sizes = (f"{self.N}, {self.C}, {g.sizes[0]}, {g.sizes[1]}, {self.M}, {kh}, {kw}, "
                      f"{oh}, {ow}, {g.strides[0]}, {g.strides[1]}, {pt}, {pl}, "
                      f"{g.dilations[0]}, {g.dilations[1]}, {g.groups}")
        self.env, self.x = env, x
        self.parts = [(self.C // g.groups) * kh * kw * oh * ow]  # a sample's columns first

    def part(self, count_):
        """The offset in the scratch of a new part of ``count_`` elements."""
        self.parts.append(count_)
        return sum(self.parts[:-1])

    def scratch(self):
        """The scratch's pointer, made once every part is known."""
        dtype = "float32" if self.env.ctype(self.x) == "float" else "float64"
        return self.env.scratch(sum(self.parts), dtype, shared=True)

    def output_dims(self):
        g = self.geometry
        return [self.N, *g.out, self.M] if g.channel_last else [self.N, self.M, *g.out]


@emitter("conv2d", "depthwise_conv2d")
def _conv2d(op, env):
    """Out = conv(Input, Filter) (+ Bias per output channel) (+ ResidualData); NHWC through
    channels-first copies of Input and Out in the scratch."""
    x, w, out = _one(op, "Input"), _one(op, "Filter"), _one(op, "Output", "outputs")
    bias, residual = _one(op, "Bias"), _one(op, "ResidualData")
    conv = _Conv(op, env, x, w)
    last = conv.geometry.channel_last
    at_x = conv.part(conv.N * conv.C * conv.spots) if last else None
    at_out = conv.part(conv.N * conv.M * conv.out_spots) if last else None
    scratch = conv.scratch()
    x_first = f"({scratch} + {at_x})" if last else env.ptr(x)
    out_first = f"({scratch} + {at_out})" if last else env.ptr(out)
    lines = env.resize(out, conv.output_dims())
    if last:
        lines.append(f"to_channels_first({env.ptr(x)}, {x_first}, {conv.N}, {conv.spots}, "
                     f"{conv.C});")
    lines.append(f"conv2d({x_first}, {env.ptr(w)}, {out_first}, {scratch}, {conv.sizes});")
    if bias:
        lines.append(f"add_channel_bias({out_first}, {env.ptr(bias)}, {conv.N}, {conv.M}, "
                     f"{conv.out_spots});")
    if last:
        lines.append(f"to_channels_last({out_first}, {env.ptr(out)}, {conv.N}, {conv.M}, "
                     f"{conv.out_spots});")
    if residual:
        if not env.same_shape(residual, out):
            raise NoEmitter(f"ResidualData {env.shape(residual)} is not the output's shape")
        lines.append(f"add_into({env.ptr(out)}, {env.ptr(residual)}, "
                     f"{conv.N * conv.M * conv.out_spots});")
    return lines


@emitter("conv2d_grad", "depthwise_conv2d_grad")
def _conv2d_grad(op, env):
    x, w, dout = _one(op, "Input"), _one(op, "Filter"), _one(op, "Output@GRAD")
    dx, dw = _live(op, env, "Input@GRAD"), _live(op, env, "Filter@GRAD")
    db = _live(op, env, "Bias@GRAD") if op.inputs.get("Bias") else None
    conv = _Conv(op, env, x, w)
    if not (dx or dw or db):
        return []
    last = conv.geometry.channel_last
    at_x = conv.part(conv.N * conv.C * conv.spots) if last and dw else None
    at_dout = conv.part(conv.N * conv.M * conv.out_spots) if last else None
    at_dx = conv.part(conv.N * conv.C * conv.spots) if last and dx else None
    scratch = conv.scratch()
    ctype = env.ctype(x)
    absent = f"static_cast<{ctype}*>(nullptr)"
    x_first = f"({scratch} + {at_x})" if at_x is not None else env.ptr(x)
    dout_first = f"({scratch} + {at_dout})" if last else env.ptr(dout)
    dx_first = (f"({scratch} + {at_dx})" if last else env.ptr(dx)) if dx else absent
    lines = ((env.resize_like(dx, x) if dx else []) + (env.resize_like(dw, w) if dw else [])
             + (env.resize(db, [conv.M]) if db else []))
    if last:
        if dw:
            lines.append(f"to_channels_first({env.ptr(x)}, {x_first}, {conv.N}, "
                         f"{conv.spots}, {conv.C});")
        lines.append(f"to_channels_first({env.ptr(dout)}, {dout_first}, {conv.N}, "
                     f"{conv.out_spots}, {conv.M});")
    if dx or dw:
        lines.append(f"conv2d_grad({x_first}, {env.ptr(w)}, {dout_first}, {dx_first}, "
                     f"{env.ptr(dw) if dw else absent}, {scratch}, {conv.sizes});")
    if dx and last:
        lines.append(f"to_channels_last({dx_first}, {env.ptr(dx)}, {conv.N}, {conv.C}, "
                     f"{conv.spots});")
    if db:
        lines.append(f"channel_sums({dout_first}, {env.ptr(db)}, {conv.N}, {conv.M}, "
                     f"{conv.out_spots});")
    return lines


class _Pool:
    """One pool2d's sizes as its kernels take them (NCHW), and the scratch an NHWC one works
    in (its operands turned channels-first)."""

    def __init__(self, op, env, x):
        from ...ops.conv import PoolGeometry
        _require_float(op, env, x)
        xs = env.shape(x)
        if not is_static(xs):
            raise NoEmitter("sizes known only at run time")
        g = self.geometry = PoolGeometry(op.type, op.attrs, xs)
        (pt, _), (pl, _) = g.pads
        (oh, ow), (kh, kw) = g.out, g.ksizes
        is_max = op.attrs.get("pooling_type") == "max"
        # adaptive max pools over Paddle's regular windows of ksize (as the interpreter);
        # adaptive average over the bins
        adaptive = g.adaptive and not is_max
        exclusive = bool(op.attrs.get("exclusive", True))
        self.N, self.C = xs[0], xs[3] if g.channel_last else xs[1]
        self.spots, self.out_spots = _count(g.sizes), oh * ow
        flag = lambda value: "true" if value else "false"  # noqa: E731
        self.sizes = (f"{self.N * self.C}, {g.sizes[0]}, {g.sizes[1]}, {kh}, {kw}, {oh}, {ow}, "
                      f"{g.strides[0]}, {g.strides[1]}, {pt}, {pl}, {flag(is_max)}, "
                      f"{flag(exclusive)}, {flag(adaptive)}")
        self.env, self.x, self.parts = env, x, []

    def output_dims(self):
        g = self.geometry
        return [self.N, *g.out, self.C] if g.channel_last else [self.N, self.C, *g.out]

    def channels_first(self, name, spots):
        """(lines, pointer): ``name`` as the kernels read it (NHWC: a channels-first copy in
        the scratch, placed by :meth:`place`)."""
        if not self.geometry.channel_last:
            return [], self.env.ptr(name)
        self.parts.append((name, self.N * self.C * spots))
        at = f"@{len(self.parts) - 1}@"
        return [f"to_channels_first({self.env.ptr(name)}, {at}, {self.N}, {spots}, "
                f"{self.C});"], at

    def place(self, lines):
        """``lines`` with each scratch part's pointer filled in."""
        if not self.parts:
            return lines
        dtype = "float32" if self.env.ctype(self.x) == "float" else "float64"
        scratch = self.env.scratch(sum(n for _, n in self.parts), dtype, shared=True)
        offset = 0
        for k, (_, count_) in enumerate(self.parts):
            lines = [line.replace(f"@{k}@", f"({scratch} + {offset})") for line in lines]
            offset += count_
        return lines


@emitter("pool2d")
def _pool2d(op, env):
    x, out = _one(op, "X"), _one(op, "Out", "outputs")
    pool = _Pool(op, env, x)
    lines, x_first = pool.channels_first(x, pool.spots)
    if pool.geometry.channel_last:
        pool.parts.append((out, pool.N * pool.C * pool.out_spots))
        out_first = f"@{len(pool.parts) - 1}@"
        lines += [f"pool2d({x_first}, {out_first}, {pool.sizes});",
                  f"to_channels_last({out_first}, {env.ptr(out)}, {pool.N}, {pool.C}, "
                  f"{pool.out_spots});"]
    else:
        lines.append(f"pool2d({x_first}, {env.ptr(out)}, {pool.sizes});")
    return env.resize(out, pool.output_dims()) + pool.place(lines)


@emitter("pool2d_grad")
def _pool2d_grad(op, env):
    x, dout, dx = _one(op, "X"), _one(op, "Out@GRAD"), _live(op, env, "X@GRAD")
    pool = _Pool(op, env, x)
    if not dx:
        return []
    lines, x_first = pool.channels_first(x, pool.spots)
    more, dout_first = pool.channels_first(dout, pool.out_spots)
    lines += more
    if pool.geometry.channel_last:
        pool.parts.append((dx, pool.N * pool.C * pool.spots))
        dx_first = f"@{len(pool.parts) - 1}@"
        lines += [f"pool2d_grad({x_first}, {dout_first}, {dx_first}, {pool.sizes});",
                  f"to_channels_last({dx_first}, {env.ptr(dx)}, {pool.N}, {pool.C}, "
                  f"{pool.spots});"]
    else:
        lines.append(f"pool2d_grad({x_first}, {dout_first}, {env.ptr(dx)}, {pool.sizes});")
    return env.resize_like(dx, x) + pool.place(lines)


def _norm_view(op, env, x):
    """X as [pre, C, post] around its channel axis (the last one in NHWC, else 1)."""
    xs = env.shape(x)
    if not is_static(xs) or len(xs) < 2:
        raise NoEmitter("sizes known only at run time" if len(xs) >= 2 else "a 0-D or 1-D X")
    axis = len(xs) - 1 if op.attrs.get("data_layout", "NCHW") == "NHWC" else 1
    return f"{_count(xs[:axis])}, {xs[axis]}, {_count(xs[axis + 1:])}"


def _global_stats(op):
    """Whether batch_norm normalises with the running statistics (not the batch's)."""
    a = op.attrs
    return bool((a.get("is_test") and not a.get("trainable_statistics"))
                or a.get("use_global_stats"))


def _same_float(op, env, x, *names):
    _require_float(op, env, x)
    for name in names:
        if name and env.ctype(name) != env.ctype(x):
            raise NoEmitter(f"{name} is {env.ctype(name)}, X {env.ctype(x)}")


@emitter("batch_norm")
def _batch_norm(op, env):
    a = op.attrs
    x, y = _one(op, "X"), _one(op, "Y", "outputs")
    mean, variance = _one(op, "Mean"), _one(op, "Variance")
    scale, bias = _one(op, "Scale"), _one(op, "Bias")
    _same_float(op, env, x, mean, variance, scale, bias)
    ctype = env.ctype(x)
    view = _norm_view(op, env, x)
    absent = f"static_cast<const {ctype}*>(nullptr)"
    optional = lambda name: env.ptr(name) if name else absent  # noqa: E731
    epsilon = f"{ctype}({_float(a.get('epsilon', 1e-5), ctype)})"
    relu = "true" if a.get("fuse_with_relu") else "false"
    lines = env.resize_like(y, x)
    outs = {slot: _one(op, slot, "outputs") for slot in
            ("MeanOut", "VarianceOut", "SavedMean", "SavedVariance")}
    if not _global_stats(op):
        if not (outs["MeanOut"] and outs["VarianceOut"]):
            raise NoEmitter("no MeanOut or VarianceOut")
        saved = [env.ptr(outs[s]) if outs[s] and env.has(outs[s])
                 else f"static_cast<{ctype}*>(nullptr)" for s in ("SavedMean", "SavedVariance")]
        momentum = float(a.get("momentum", 0.9))
        return lines + [
            f"batch_norm_training({env.ptr(x)}, {optional(scale)}, {optional(bias)}, "
            f"{env.ptr(mean)}, {env.ptr(variance)}, {env.ptr(y)}, {env.ptr(outs['MeanOut'])}, "
            f"{env.ptr(outs['VarianceOut'])}, {saved[0]}, {saved[1]}, {view}, {epsilon}, "
            f"{ctype}({_float(momentum, ctype)}), {ctype}({_float(1.0 - momentum, ctype)}), "
            f"{relu});"]
    lines.append(f"batch_norm_inference({env.ptr(x)}, {optional(scale)}, {optional(bias)}, "
                 f"{env.ptr(mean)}, {env.ptr(variance)}, {env.ptr(y)}, {view}, {epsilon}, "
                 f"{relu});")
    # the statistics pass through; the saved ones are zero, as the interpreter leaves them
    for out_slot, source in (("MeanOut", mean), ("VarianceOut", variance)):
        out = outs[out_slot]
        if out and out != source:
            lines.append(f"copy({env.ptr(source)}, {env.ptr(out)}, {_count(env.shape(source))});")
    for out_slot in ("SavedMean", "SavedVariance"):
        out = outs[out_slot]
        if out and env.has(out):
            lines.append(f"fill({env.ptr(out)}, {_count(env.shape(out))}, {ctype}(0));")
    return lines


@emitter("batch_norm_grad")
def _batch_norm_grad(op, env):
    x, dy = _one(op, "X"), _one(op, "Y@GRAD")
    scale = _one(op, "Scale")
    dx, dscale, dbias = (_live(op, env, s) for s in ("X@GRAD", "Scale@GRAD", "Bias@GRAD"))
    if op.attrs.get("fuse_with_relu"):
        raise NoEmitter("fuse_with_relu (the gradient of the relu is not in the op)")
    global_stats = _global_stats(op)
    if global_stats:  # the running statistics: Paddle 2.6 passes them as MeanOut/VarianceOut
        mean = _one(op, "MeanOut") or _one(op, "Mean")
        stat = _one(op, "VarianceOut") or _one(op, "Variance")
    else:
        mean, stat = _one(op, "SavedMean"), _one(op, "SavedVariance")
    if not (mean and stat):
        raise NoEmitter("no statistics to normalise with")
    _same_float(op, env, x, dy, scale, mean, stat)
    ctype = env.ctype(x)
    view = _norm_view(op, env, x)
    if not (dx or dscale or dbias):
        return []
    absent = f"static_cast<{ctype}*>(nullptr)"
    sizes = ((env.resize_like(dx, x) if dx else [])
             + (env.resize_like(dscale, scale) if dscale and scale else [])
             + (env.resize_like(dbias, _one(op, "Bias")) if dbias and _one(op, "Bias") else []))
    pointer = lambda name: env.ptr(name) if name else absent  # noqa: E731
    return sizes + [
        f"batch_norm_grad({env.ptr(x)}, "
        f"{env.ptr(scale) if scale else f'static_cast<const {ctype}*>(nullptr)'}, "
        f"{env.ptr(mean)}, {env.ptr(stat)}, {env.ptr(dy)}, {pointer(dx)}, {pointer(dscale)}, "
        f"{pointer(dbias)}, {view}, {'true' if global_stats else 'false'}, "
        f"{ctype}({_float(op.attrs.get('epsilon', 1e-5), ctype)}));"]


def _layer_rows(op, env, x):
    shape = _static(env, x)
    begin = int(op.attrs.get("begin_norm_axis", 1))
    if not 0 < begin < len(shape):
        raise NoEmitter(f"begin_norm_axis {begin} for X of rank {len(shape)}")
    return _count(shape[:begin]), _count(shape[begin:])


@emitter("layer_norm")
def _layer_norm(op, env):
    x, y = _one(op, "X"), _one(op, "Y", "outputs")
    scale, bias = _one(op, "Scale"), _one(op, "Bias")
    mean, variance = _live(op, env, "Mean"), _live(op, env, "Variance")
    _same_float(op, env, x, scale, bias, mean, variance)
    left, right = _layer_rows(op, env, x)
    ctype = env.ctype(x)
    const_absent = f"static_cast<const {ctype}*>(nullptr)"
    absent = f"static_cast<{ctype}*>(nullptr)"
    pointer = lambda name, none: env.ptr(name) if name and env.has(name) else none  # noqa: E731
    return env.resize_like(y, x) + [
        f"layer_norm({env.ptr(x)}, {pointer(scale, const_absent)}, {pointer(bias, const_absent)}, "
        f"{env.ptr(y)}, {pointer(mean, absent)}, {pointer(variance, absent)}, {left}, {right}, "
        f"{ctype}({_float(op.attrs.get('epsilon', 1e-5), ctype)}));"]


@emitter("layer_norm_grad")
def _layer_norm_grad(op, env):
    x, dy, scale = _one(op, "X"), _one(op, "Y@GRAD"), _one(op, "Scale")
    mean, variance = _one(op, "Mean"), _one(op, "Variance")
    dx, dscale, dbias = (_live(op, env, s) for s in ("X@GRAD", "Scale@GRAD", "Bias@GRAD"))
    _same_float(op, env, x, dy, scale, mean, variance)
    left, right = _layer_rows(op, env, x)
    if not (dx or dscale or dbias):
        return []
    ctype = env.ctype(x)
    absent = f"static_cast<{ctype}*>(nullptr)"
    pointer = lambda name: env.ptr(name) if name else absent  # noqa: E731
    sizes = ((env.resize_like(dx, x) if dx else [])
             + (env.resize(dscale, [right]) if dscale else [])
             + (env.resize(dbias, [right]) if dbias else []))
    return sizes + [
        f"layer_norm_grad({env.ptr(x)}, "
        f"{env.ptr(scale) if scale else f'static_cast<const {ctype}*>(nullptr)'}, "
        f"{env.ptr(mean)}, {env.ptr(variance)}, {env.ptr(dy)}, {pointer(dx)}, "
        f"{pointer(dscale)}, {pointer(dbias)}, {left}, {right}, "
        f"{ctype}({_float(op.attrs.get('epsilon', 1e-5), ctype)}));"]


# --- embeddings, dropout's gradient ----------------------------------------------------------------
def _lookup_sizes(op, env, w, ids):
    ws, shape = _static(env, w, "W"), _static(env, ids, "Ids")
    if len(ws) != 2:
        raise NoEmitter(f"W of rank {len(ws)}, 2 expected")
    if env.ctype(ids) not in ("int64_t", "int32_t"):
        raise NoEmitter(f"Ids is {env.ctype(ids)}")
    return _count(shape), ws[0], ws[1], int(op.attrs.get("padding_idx", -1))


@emitter("lookup_table", "lookup_table_v2")
def _lookup_table(op, env):
    w, ids, out = _one(op, "W"), _one(op, "Ids"), _one(op, "Out", "outputs")
    _require_float(op, env, w)
    if op.attrs.get("is_distributed"):
        raise NoEmitter("a distributed table")
    # (remote_prefetch, which the layers set on every sparse table, matters only to the
    # distributed transpiler: untranspiled, the lookup is local)
    count_, V, D, padding = _lookup_sizes(op, env, w, ids)
    return [f"lookup_table({env.ptr(w)}, {env.ptr(ids)}, {env.ptr(out)}, {count_}, {V}, {D}, "
            f"{padding});"]


@emitter("lookup_table_grad", "lookup_table_v2_grad")
def _lookup_table_grad(op, env):
    w, ids, dout = _one(op, "W"), _one(op, "Ids"), _one(op, "Out@GRAD")
    dw = _live(op, env, "W@GRAD")
    _require_float(op, env, w)
    if not dw:
        return []
    if env.kind(dw) != "dense" or op.attrs.get("is_sparse"):
        raise NoEmitter("a sparse gradient (SelectedRows)")
    count_, V, D, padding = _lookup_sizes(op, env, w, ids)
    return env.resize_like(dw, w) + [
        f"lookup_table_grad({env.ptr(ids)}, {env.ptr(dout)}, {env.ptr(dw)}, {count_}, {V}, "
        f"{D}, {padding});"]


@emitter("one_hot", "one_hot_v2")
def _one_hot(op, env):
    if op.inputs.get("depth_tensor"):
        raise NoEmitter("depth_tensor: a depth read at run time (it decides Out's shape)")
    ids, out = _one(op, "X"), _one(op, "Out", "outputs")
    if env.ctype(ids) not in ("int64_t", "int32_t"):
        raise NoEmitter(f"X is {env.ctype(ids)}, int64 or int32 expected")
    shape = env.shape(ids)
    if not shape or (op.type == "one_hot" and shape[-1] != 1):
        raise NoEmitter("ids of shape [..., 1] expected" if shape else "0-D ids")
    depth = int(op.attrs.get("depth", -1))
    rows = list(shape[:-1]) if op.type == "one_hot" else list(shape)
    # (an id out of range: the row stays zeros; a fed one is checked first, id_ranges.py)
    return env.resize(out, rows + [depth]) + [
        f"one_hot({env.ptr(ids)}, {env.ptr(out)}, {_count(rows)}, {depth});"]


def _exactly(value, ctype):
    """A C literal of ``value`` rounded to ``ctype`` as NumPy rounds a Python float to it."""
    return f"{ctype}({float(value)!r})"


@emitter("label_smooth")
def _label_smooth(op, env):
    x, out = _one(op, "X"), _one(op, "Out", "outputs")
    _require_float(op, env, x)
    shape, ctype = env.shape(x), env.ctype(x)
    if not shape or not is_static(shape[-1:]):
        raise NoEmitter("the class count known only at run time" if shape else "a 0-D X")
    eps, prior = float(op.attrs.get("epsilon", 0.0)), _one(op, "PriorDist")
    keep = _exactly(1.0 - eps, ctype)
    sizes = env.resize_like(out, x)
    if prior is None:  # Out = (1 - eps) X + eps / K
        smooth = (f"FLUID_LAMBDA({ctype} v) -> {ctype} {{ return {keep} * v + "
                  f"{_exactly(eps / shape[-1], ctype)}; }}")
        return sizes + [f"map1({env.ptr(x)}, {env.ptr(out)}, {_count(shape)}, {smooth});"]
    if _count(env.shape(prior)) != shape[-1] or env.ctype(prior) != ctype:
        raise NoEmitter("PriorDist expected of X's type with a value per class")
    smooth = (f"FLUID_LAMBDA({ctype} v, {ctype} p) -> {ctype} {{ return {keep} * v + "
              f"{_exactly(eps, ctype)} * p; }}")
    return sizes + [f"broadcast({env.ptr(x)}, {env.ptr(prior)}, {env.ptr(out)}, "
                    f"{_count(shape[:-1])}, {shape[-1]}, 1, {smooth});"]


@emitter("label_smooth_grad")
def _label_smooth_grad(op, env):
    dout, dx = _one(op, "Out@GRAD"), _live(op, env, "X@GRAD")
    _require_float(op, env, dout)
    if not dx:
        return []
    ctype = env.ctype(dout)
    keep = _exactly(1.0 - float(op.attrs.get("epsilon", 0.0)), ctype)
    return env.resize_like(dx, dout) + [
        f"map1({env.ptr(dout)}, {env.ptr(dx)}, {_count(env.shape(dout))}, "
        f"FLUID_LAMBDA({ctype} v) -> {ctype} {{ return {keep} * v; }});"]


@emitter("dropout_grad")
def _dropout_grad(op, env):
    dout, dx = _one(op, "Out@GRAD"), _live(op, env, "X@GRAD")
    _require_float(op, env, dout)
    if not dx:
        return []
    a, ctype = op.attrs, env.ctype(dout)
    p = float(a.get("dropout_prob", 0.5))
    upscale = a.get("dropout_implementation", "downgrade_in_infer") == "upscale_in_train"
    count_ = _count(_static(env, dout, "Out@GRAD"))
    sizes = env.resize_like(dx, dout)
    if a.get("is_test"):  # no Mask: dOut, or dOut (1 - p)
        keep = 1.0 if upscale else 1.0 - p
        return sizes + [f"scale({env.ptr(dout)}, {env.ptr(dx)}, {count_}, "
                        f"{ctype}({_float(keep, ctype)}), {ctype}(0), true);"]
    mask = _one(op, "Mask")
    if not mask or not env.has(mask) or env.ctype(mask) != "uint8_t":
        raise NoEmitter("no uint8 Mask")
    if upscale and p == 1.0:
        return sizes + [f"fill({env.ptr(dx)}, {count_}, {ctype}(0));"]
    return sizes + [f"dropout_grad({env.ptr(mask)}, {env.ptr(dout)}, {env.ptr(dx)}, {count_}, "
                    f"{ctype}({_float(1.0 - p, ctype)}), {_flag(upscale)});"]


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


@emitter("adagrad")
def _adagrad(op, env):
    if op.inputs.get("MasterParam") or op.attrs.get("multi_precision"):
        raise NoEmitter("MasterParam or multi_precision")
    grad = _one(op, "Grad")
    if env.kind(grad) != "dense":
        raise NoEmitter("a sparse gradient")
    lines, target = _updated(op, env, [("ParamOut", "Param"), ("MomentOut", "Moment")])
    param = target["Param"]
    pointers = ", ".join(env.ptr(n) for n in (param, grad, target["Moment"],
                                              _one(op, "LearningRate")))
    return lines + [f"adagrad({pointers}, {_count(env.shape(param))}, "
                    f"{_exactly(op.attrs.get('epsilon', 1e-6), env.ctype(param))});"]


@emitter("rmsprop")
def _rmsprop(op, env):
    a, grad = op.attrs, _one(op, "Grad")
    if env.kind(grad) != "dense":
        raise NoEmitter("a sparse gradient")
    centered = bool(a.get("centered"))
    if centered and not (_one(op, "MeanGrad") and _one(op, "MeanGradOut", "outputs")):
        raise NoEmitter("centered without MeanGrad and MeanGradOut")
    pairs = [("ParamOut", "Param"), ("MomentOut", "Moment"), ("MeanSquareOut", "MeanSquare")]
    if _one(op, "MeanGrad") and _one(op, "MeanGradOut", "outputs"):
        pairs.append(("MeanGradOut", "MeanGrad"))  # (kept as it was when not centered)
    lines, target = _updated(op, env, pairs)
    param = target["Param"]
    ctype = env.ctype(param)
    mean_grad = env.ptr(target["MeanGrad"]) if centered else f"static_cast<{ctype}*>(nullptr)"
    decay = float(a.get("decay", 0.9))
    pointers = ", ".join([env.ptr(param), env.ptr(grad), env.ptr(target["MeanSquare"]),
                          mean_grad, env.ptr(target["Moment"]), env.ptr(_one(op, "LearningRate"))])
    return lines + [f"rmsprop({pointers}, {_count(env.shape(param))}, "
                    f"{_exactly(decay, ctype)}, {_exactly(1.0 - decay, ctype)}, "
                    f"{_exactly(a.get('epsilon', 1e-10), ctype)}, "
                    f"{_exactly(a.get('momentum', 0.0), ctype)});"]


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
