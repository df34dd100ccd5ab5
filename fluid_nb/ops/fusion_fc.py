"""Fused fc ops of Fluid 1.8's inference programs (its CPU fuse passes write them):
``fusion_seqexpand_concat_fc`` (sequence_expand + concat + fc), ``fusion_seqconv_eltadd_relu``
(sequence_conv + elementwise_add + relu), ``fusion_repeated_fc_relu`` (a chain of fc + relu)
and ``fusion_squared_mat_sub`` (the pairwise-interaction term of a factorisation machine).

Each kernel runs the kernels of the ops it fuses (:func:`.compose.run_kernel`, the ``fc``
op for every matrix product with a bias). No gradient: these ops exist only in inference
programs.
"""
import numpy as np

from ..errors import InvalidArgument, expected
from ..framework.infer import dims_match
from ..framework.registry import def_op, no_gradient
from .compose import run_kernel
from .rnn_units import ACTIVATIONS, activate, one_of
from .sequence import lod_of, segment_ids
from .sequence_conv import _context_matrix, _context_plan


def _rank2(ctx, slot, index=0):
    shape = list(ctx.input_shape(slot, index))
    ctx.check(len(shape) == 2, f"input '{slot}'" + (f" #{index}" if index else ""),
              "rank 2", shape)
    return shape


# --- fusion_seqexpand_concat_fc --------------------------------------------------------------
def _seqexpand_infer(ctx):
    count = len(ctx.op.inputs.get("X", ()))
    ctx.check(count > 1, "input 'X'", "at least 2 variables (the sequences, then one row "
              "per sequence of each other input)", count)
    shapes = [_rank2(ctx, "X", i) for i in range(count)]
    w = _rank2(ctx, "FCWeight")
    widths = [s[1] for s in shapes]
    total = -1 if any(v < 0 for v in widths) else sum(widths)
    ctx.check(dims_match(w[0], total), "input 'FCWeight'",
              f"{total} rows (the sum of X's widths {widths})", w)
    if ctx.has_input("FCBias"):
        b = list(ctx.input_shape("FCBias"))
        ctx.check((len(b) == 1 and dims_match(b[0], w[1]))
                  or (len(b) == 2 and dims_match(b[0], 1) and dims_match(b[1], w[1])),
                  "input 'FCBias'", f"shape [{w[1]}] or [1, {w[1]}]", b)
    dtype = ctx.input_dtype("X")
    ctx.set_output("Out", [shapes[0][0], w[1]], dtype)
    ctx.set_output("FCOut", [-1, w[1]], dtype, lod_level=0)


def _check_one_row_each(op, xs, n):
    """The inputs after the first: one row per sequence (no LoD, or N sequences of one)."""
    for i, x in enumerate(xs[1:], start=1):
        lod = x.lod()
        rows = x.array.shape[0]
        if rows != n or (lod and (len(lod) != 1 or list(lod[0]) != list(range(n + 1)))):
            raise InvalidArgument(expected(
                op, f"input 'X' #{i}", f"{n} rows, one per sequence of X #0",
                f"shape {list(x.array.shape)} with LoD {lod}"))


def _seqexpand_concat_fc(ctx, xs, weight, bias):
    xp, op = ctx.xp, "fusion_seqexpand_concat_fc"
    offsets = lod_of(op, xs[0], "X", levels=1)[0]
    n = len(offsets) - 1
    _check_one_row_each(op, xs, n)
    w = weight.array
    m0 = xs[0].array.shape[1]
    out = run_kernel(ctx, "fc", xs[0].array, w[:m0], bias.array if bias is not None else None)
    # each other input meets its slice of the weight once per sequence, then is expanded
    fc_out, row = None, m0
    for x in xs[1:]:
        width = x.array.shape[1]
        part = run_kernel(ctx, "fc", x.array, w[row:row + width], None)
        fc_out = part if fc_out is None else fc_out + part
        row += width
    out = out + xp.take(fc_out, xp.asarray(segment_ids(offsets)), axis=0)
    return activate(xp, ctx.attrs["fc_activation"], out).astype(out.dtype, copy=False), fc_out


def_op("fusion_seqexpand_concat_fc",
       inputs=["X[]", "FCWeight", "FCBias?"], outputs=["Out", "FCOut!"],
       attrs={"fc_activation": ("string", "identity", one_of(*ACTIVATIONS))},
       infer_shape=_seqexpand_infer, grad=no_gradient, kernel=_seqexpand_concat_fc,
       lod_aware=True, share_lod=("X", ["Out"]),
       doc="Out = act(concat(X_0, sequence_expand(X_1, X_0), ..., sequence_expand(X_k, X_0)) "
           "FCWeight + FCBias): X_0 [T, M_0] holds sequences (one LoD level); each other X_i "
           "[N, M_i] one row per sequence, repeated for each of its rows. FCWeight [M_0 + ... "
           "+ M_k, D]; act = fc_activation (identity, sigmoid, tanh, relu). Out [T, D] has "
           "X_0's LoD; FCOut [N, D] = sum_i X_i FCWeight_i over the inputs after the first. No "
           "gradient (inference only).")


# --- fusion_seqconv_eltadd_relu --------------------------------------------------------------
_SEQCONV_ATTRS = {
    "contextLength": ("int", None, lambda v: None if v > 0 else "> 0"),
    "contextStart": ("int", 0),
    "contextStride": ("int", 1, lambda v: None if v == 1 else "1 (the only stride "
                                                              "supported)"),
}


def _seqconv_infer(ctx):
    ctx.check("contextLength" in ctx.attrs(), "attribute 'contextLength'", "an int > 0",
              "none")
    x, w = _rank2(ctx, "X"), _rank2(ctx, "Filter")
    length, start = ctx.attr("contextLength"), ctx.attr("contextStart")
    ctx.check(length + start > 0, "attribute 'contextStart'",
              f"> -contextLength = {-length}", start)
    ctx.check(x[1] < 0 or dims_match(w[0], length * x[1]), "input 'Filter'",
              f"{length * x[1]} rows (contextLength * X's width)", w)
    b = list(ctx.input_shape("Bias"))
    ctx.check(any(v < 0 for v in b) or w[1] < 0 or int(np.prod(b)) == w[1], "input 'Bias'",
              f"{w[1]} values (Filter's width)", b)
    dtype = ctx.input_dtype("X")
    ctx.set_output("Out", [x[0], w[1]], dtype)
    ctx.set_output("ColMat", [x[0], w[0]], dtype, lod_level=0)


def _seqconv_eltadd_relu(ctx, x, filter, bias):
    op = "fusion_seqconv_eltadd_relu"
    lod_of(op, x, "X", levels=1)
    w, b = filter.array, bias.array
    if b.size != w.shape[1]:
        raise InvalidArgument(expected(op, "input 'Bias'", f"{w.shape[1]} values (Filter's "
                                       "width)", list(b.shape)))
    src, pad = _context_plan(op, x, ctx.attrs)
    col = _context_matrix(ctx.xp, x.array, None, src, pad)
    return run_kernel(ctx, "fc", col, w, b.reshape(-1), activation_type="relu"), col


def_op("fusion_seqconv_eltadd_relu",
       inputs=["X", "Filter", "Bias"], outputs=["Out", "ColMat!"],
       attrs=_SEQCONV_ATTRS, infer_shape=_seqconv_infer, grad=no_gradient,
       kernel=_seqconv_eltadd_relu, lod_aware=True, share_lod=("X", ["Out"]),
       doc="Out = relu(sequence_conv(X, Filter) + Bias): ColMat[t] = concat(X[t + "
           "contextStart + j] for j < contextLength) within t's sequence (one LoD level), "
           "zeros outside it; Out = relu(ColMat Filter + Bias). Filter [contextLength * M, N], "
           "Bias N values; contextStride 1. Out [T, N] has X's LoD. No gradient (inference "
           "only).")


# --- fusion_repeated_fc_relu ------------------------------------------------------------------
def _repeated_infer(ctx):
    count = len(ctx.op.inputs.get("W", ()))
    ctx.check(count > 1, "input 'W'", "at least 2 weights", count)
    biases = len(ctx.op.inputs.get("Bias", ()))
    ctx.check(biases == count, "input 'Bias'", f"{count} biases (one per weight)", biases)
    relus = len(ctx.op.outputs.get("ReluOut", ()))
    ctx.check(relus in (0, count - 1), "output 'ReluOut'",
              f"{count - 1} variables (one per fc but the last)", relus)
    x = _rank2(ctx, "X")
    width = x[1]
    shapes = []
    for i in range(count):
        w = _rank2(ctx, "W", i)
        ctx.check(dims_match(w[0], width), f"input 'W' #{i}",
                  f"{width} rows (the width of what it multiplies)", w)
        b = list(ctx.input_shape("Bias", i))
        ctx.check(any(v < 0 for v in b) or w[1] < 0 or int(np.prod(b)) == w[1],
                  f"input 'Bias' #{i}", f"{w[1]} values", b)
        width = w[1]
        shapes.append([x[0], width])
    dtype = ctx.input_dtype("X")
    if relus:
        ctx.set_outputs("ReluOut", shapes[:-1], dtype, lod_level=0)
    ctx.set_output("Out", shapes[-1], dtype)


def _repeated_fc_relu(ctx, x, weights, biases):
    if len(weights) != len(biases):
        raise InvalidArgument(expected("fusion_repeated_fc_relu", "input 'Bias'",
                                       f"{len(weights)} biases", len(biases)))
    outs = []
    for w, b in zip(weights, biases):
        x = run_kernel(ctx, "fc", x, w, b.reshape(-1), activation_type="relu")
        outs.append(x)
    return outs[:-1], outs[-1]


def_op("fusion_repeated_fc_relu",
       inputs=["X", "W[]", "Bias[]"], outputs=["ReluOut[]!", "Out"],
       infer_shape=_repeated_infer, grad=no_gradient, kernel=_repeated_fc_relu,
       share_lod=("X", ["Out"]),
       doc="y_0 = X;  y_i = relu(y_{i-1} W_i + Bias_i) for each weight (at least 2); Out = "
           "the last y, ReluOut the ones before. X [T, K]. No gradient (inference only).")


# --- fusion_squared_mat_sub -------------------------------------------------------------------
def _squared_infer(ctx):
    x, y = list(ctx.input_shape("X")), list(ctx.input_shape("Y"))
    ctx.check(len(x) == 2 and len(y) == 2, "inputs 'X' and 'Y'", "rank 2 matrices",
              f"{x} and {y}")
    ctx.check(dims_match(x[1], y[0]), "input 'Y'", f"{x[1]} rows (X's width)", y)
    dtype = ctx.input_dtype("X")
    ctx.set_output("SquaredX", x, dtype)
    ctx.set_output("SquaredY", y, dtype)
    ctx.set_output("SquaredXY", [x[0], y[1]], dtype)
    ctx.set_output("Out", [x[0], y[1]], dtype)


def _squared_mat_sub(ctx, x, y):
    squared_xy = x @ y
    squared_xy = squared_xy * squared_xy
    squared_x, squared_y = x * x, y * y
    out = (squared_xy - squared_x @ squared_y) * ctx.attrs["scalar"]
    return squared_x, squared_y, squared_xy, out.astype(x.dtype, copy=False)


def_op("fusion_squared_mat_sub",
       inputs=["X", "Y"], outputs=["SquaredX!", "SquaredY!", "SquaredXY!", "Out"],
       attrs={"scalar": ("float", 1.0)},
       infer_shape=_squared_infer, grad=no_gradient, kernel=_squared_mat_sub,
       doc="Out = ((X Y)^2 - X^2 Y^2) * scalar, squares elementwise (X [M, K], Y [K, N]); "
           "SquaredX = X^2, SquaredY = Y^2, SquaredXY = (X Y)^2. No gradient (inference "
           "only).")
