"""One converter per op type: a Fluid op instance -> ONNX nodes (opset 17).

A converter is ``convert(op, ctx)``: it reads the op's variables through ``ctx`` (names,
declared shapes, constant values of parameters) and adds nodes with ``ctx.node(...)``. It
returns None when the conversion is exact, or a sentence saying what it approximates; it
raises :class:`NotConvertible` with the reason when ONNX cannot express this instance.
"""
import numpy as np

from ...ops.creation import fill_value


class NotConvertible(Exception):
    """This op instance has no ONNX form (the message says why)."""


CONVERTERS = {}
#: op types with no ONNX form at all, and why (the report's reason for them)
UNCONVERTIBLE = {}


def converter(*op_types):
    def register(fn):
        for op_type in op_types:
            CONVERTERS[op_type] = fn
        return fn
    return register


def _in(op, slot):
    args = op.inputs.get(slot) or []
    return args[0] if args else None


def _out(op, slot):
    args = op.outputs.get(slot) or []
    return args[0] if args else None


def _no_tensor_attrs(op, *slots):
    for slot in slots:
        if op.inputs.get(slot):
            raise NotConvertible(f"{slot}: a value read at run time (a fixed attribute "
                                 "expected)")


# --- elementwise -------------------------------------------------------------------------------
# (add, sub, mul, max and min are lowered from their records' formulas: expressions.py)
_BINARY = {"elementwise_div": "Div", "elementwise_pow": "Pow"}


def _aligned_y(op, ctx, x, y):
    """Y shaped for ONNX's trailing broadcast under Paddle's ``axis``: Y's dims placed at
    ``axis`` of X, with 1s appended after them."""
    x_rank, y_shape = len(ctx.shape(x)), list(ctx.shape(y))
    axis = op.attrs.get("axis", -1)
    if axis == -1 or len(y_shape) == x_rank:
        return y
    while len(y_shape) > 1 and y_shape[-1] == 1:  # Paddle trims Y's trailing 1s
        y_shape.pop()
    trailing = x_rank - axis - len(y_shape)
    if trailing < 0:
        raise NotConvertible(f"axis {axis} puts Y {ctx.shape(y)} past X's rank {x_rank}")
    if trailing == 0:
        return y
    return ctx.reshaped(y, y_shape + [1] * trailing)


@converter(*_BINARY)
def _binary(op, ctx):
    x, y = _in(op, "X"), _in(op, "Y")
    ctx.node(_BINARY[op.type], [x, _aligned_y(op, ctx, x, y)], [_out(op, "Out")])


# --- activations and other maps ---------------------------------------------------------------------
# (the activations are lowered from their records' formulas: expressions.py)
_UNARY = {"assign": "Identity"}


@converter(*_UNARY)
def _unary(op, ctx):
    ctx.node(_UNARY[op.type], [_in(op, "X")], [_out(op, "Out")])


@converter("logical_not")
def _logical_not(op, ctx):
    x, out = _in(op, "X"), _out(op, "Out")
    if ctx.dtype(x) != np.bool_:  # Paddle: a non-zero value is true
        as_bool = ctx.tmp("bool")
        ctx.node("Cast", [x], [as_bool], to=ctx.onnx.TensorProto.BOOL)
        x = as_bool
    ctx.node("Not", [x], [out])


@converter("scale")
def _scale(op, ctx):
    _no_tensor_attrs(op, "ScaleTensor")
    x, out = _in(op, "X"), _out(op, "Out")
    scale, bias = float(op.attrs.get("scale", 1.0)), float(op.attrs.get("bias", 0.0))
    kind = ctx.dtype(x).kind
    if kind not in "fiu":
        raise NotConvertible(f"X of {ctx.dtype(x)}")
    if kind in "iu":  # as the kernel: scale and bias cast to X's integer type
        scale, bias = int(scale), int(bias)
    if bias == 0:
        ctx.node("Mul", [x, ctx.scalar(scale, x)], [out])
        return
    step = ctx.tmp("scaled")
    if op.attrs.get("bias_after_scale", True):
        ctx.node("Mul", [x, ctx.scalar(scale, x)], [step])
        ctx.node("Add", [step, ctx.scalar(bias, x)], [out])
    else:
        ctx.node("Add", [x, ctx.scalar(bias, x)], [step])
        ctx.node("Mul", [step, ctx.scalar(scale, x)], [out])


@converter("softmax", "log_softmax")
def _softmax(op, ctx):
    ctx.node("Softmax" if op.type == "softmax" else "LogSoftmax", [_in(op, "X")],
             [_out(op, "Out")], axis=int(op.attrs.get("axis", -1)))


@converter("dropout")
def _dropout(op, ctx):
    if not op.attrs.get("is_test", False):
        raise NotConvertible("a training dropout (is_test=False draws a random mask)")
    x, out = _in(op, "X"), _out(op, "Out")
    if op.attrs.get("dropout_implementation", "downgrade_in_infer") == "upscale_in_train":
        ctx.node("Identity", [x], [out])
    else:
        ctx.node("Mul", [x, ctx.scalar(1.0 - float(op.attrs.get("dropout_prob", 0.5)), x)],
                 [out])


@converter("cast")
def _cast(op, ctx):
    ctx.node("Cast", [_in(op, "X")], [_out(op, "Out")], to=ctx.onnx_type(_out(op, "Out")))


@converter("sum")
def _sum(op, ctx):
    ctx.node("Sum", list(op.inputs["X"]), [_out(op, "Out")])


def _shape_input(op, ctx):
    """The int64 [rank] shape a fill_constant reads at run time (ShapeTensor, else
    ShapeTensorList's one-element tensors), or None when its shape is the attribute."""
    if op.inputs.get("ShapeTensor"):
        shape = ctx.tmp("shape")
        ctx.node("Cast", [_in(op, "ShapeTensor")], [shape], to=ctx.onnx.TensorProto.INT64)
        return shape
    parts = op.inputs.get("ShapeTensorList") or []
    if not parts:
        return None
    dims = []
    for part in parts:
        flat, dim = ctx.tmp("dim"), ctx.tmp("dim64")
        ctx.node("Reshape", [part, ctx.const(np.array([1], "int64"), "one")], [flat])
        ctx.node("Cast", [flat], [dim], to=ctx.onnx.TensorProto.INT64)
        dims.append(dim)
    shape = ctx.tmp("shape")
    ctx.node("Concat", dims, [shape], axis=0)
    return shape


@converter("fill_constant")
def _fill_constant(op, ctx):
    """A constant; a shape read at run time (a batch size taken from an input) becomes
    ConstantOfShape, a ValueTensor a Cast expanded to the shape."""
    out = _out(op, "Out")
    shape = _shape_input(op, ctx)
    value_tensor = _in(op, "ValueTensor")
    if shape is not None or value_tensor:
        if shape is None:
            shape = ctx.const(np.array(op.attrs.get("shape", [1]), "int64"), "shape")
        if value_tensor:
            value = ctx.tmp("value")
            ctx.node("Cast", [value_tensor], [value], to=ctx.onnx_type(out))
            flat = ctx.tmp("scalar")
            ctx.node("Reshape", [value, ctx.const(np.array([], "int64"), "scalar")], [flat])
            ctx.node("Expand", [flat, shape], [out])
        else:
            value = np.array([fill_value(op.type, op.attrs)], ctx.dtype(out))
            ctx.node("ConstantOfShape", [shape], [out],
                     value=ctx.onnx.numpy_helper.from_array(value, "value"))
        return
    value = fill_value(op.type, op.attrs)
    array = np.full(op.attrs.get("shape", [1]), value, dtype=ctx.dtype(out))
    declared = ctx.shape(out)
    if all(d >= 0 for d in declared) and int(np.prod(declared)) == array.size:
        array = array.reshape(declared)  # the variable's own rank (a 0-D value declared [1])
    ctx.node("Identity", [ctx.const(array, out)], [out])


# --- matrix products -----------------------------------------------------------------------------------
@converter("mul")
def _mul(op, ctx):
    x, y, out = _in(op, "X"), _in(op, "Y"), _out(op, "Out")
    xc, yc = op.attrs.get("x_num_col_dims", 1), op.attrs.get("y_num_col_dims", 1)
    x_shape, y_shape = ctx.shape(x), ctx.shape(y)
    if yc != 1 or len(y_shape) != 2:
        y = ctx.reshaped(y, [int(np.prod(y_shape[:yc])), int(np.prod(y_shape[yc:]))])
    flat = x
    if len(x_shape) != 2 or xc != 1:
        flat = ctx.tmp("flat")
        ctx.node("Flatten", [x], [flat], axis=int(xc))
    if xc == 1:
        ctx.node("MatMul", [flat, y], [out])
        return
    product = ctx.tmp("product")
    ctx.node("MatMul", [flat, y], [product])
    # back to X.shape[:xc] + Y.shape[yc:]; at most the batch dim may be unknown (-1)
    lead = list(x_shape[:xc])
    if any(d < 0 for d in lead[1:]):
        raise NotConvertible(f"X {list(x_shape)} has unknown dims past the first")
    ctx.node("Reshape", [product, ctx.const(np.array(lead + list(y_shape[yc:]), "int64"))],
             [out])


def _transposed_last_two(ctx, name):
    rank = len(ctx.shape(name))
    if rank < 2:
        raise NotConvertible(f"transposing a {rank}-D operand")
    flipped = ctx.tmp("transposed")
    ctx.node("Transpose", [name], [flipped], perm=list(range(rank - 2)) + [rank - 1, rank - 2])
    return flipped


@converter("matmul", "matmul_v2")
def _matmul(op, ctx):
    x, y, out = _in(op, "X"), _in(op, "Y"), _out(op, "Out")
    if int(op.attrs.get("head_number", 1)) > 1:
        raise NotConvertible(f"head_number={op.attrs['head_number']} (a multi-head product)")
    trans_x = op.attrs.get("trans_x", op.attrs.get("transpose_X", False))
    trans_y = op.attrs.get("trans_y", op.attrs.get("transpose_Y", False))
    if trans_x:
        x = _transposed_last_two(ctx, x)
    if trans_y:
        y = _transposed_last_two(ctx, y)
    alpha = float(op.attrs.get("alpha", 1.0))
    if alpha == 1.0:
        ctx.node("MatMul", [x, y], [out])
    else:
        product = ctx.tmp("product")
        ctx.node("MatMul", [x, y], [product])
        ctx.node("Mul", [product, ctx.scalar(alpha, out)], [out])


# --- normalisation (convolution and pooling: vision.py) ----------------------------------------------------
@converter("batch_norm")
def _batch_norm(op, ctx):
    a = op.attrs
    if not (a.get("is_test") or a.get("use_global_stats")) or a.get("trainable_statistics"):
        raise NotConvertible("batch statistics (a training batch_norm); inference uses the "
                             "running ones (is_test)")
    if a.get("data_layout", "NCHW") != "NCHW":
        raise NotConvertible("NHWC layout")
    x, y = _in(op, "X"), _out(op, "Y")
    channels = ctx.shape(_in(op, "Mean"))[0]
    scale = _in(op, "Scale") or ctx.const(np.ones(channels, ctx.dtype(x)), "ones")
    bias = _in(op, "Bias") or ctx.const(np.zeros(channels, ctx.dtype(x)), "zeros")
    ctx.node("BatchNormalization", [x, scale, bias, _in(op, "Mean"), _in(op, "Variance")],
             [y], epsilon=float(a.get("epsilon", 1e-5)))


# --- shapes ------------------------------------------------------------------------------------------------
@converter("reshape2")
def _reshape(op, ctx):
    _no_tensor_attrs(op, "Shape", "ShapeTensor")
    ctx.node("Reshape", [_in(op, "X"), ctx.const(np.array(op.attrs["shape"], "int64"))],
             [_out(op, "Out")])


@converter("transpose2")
def _transpose(op, ctx):
    x = _in(op, "X")
    rank = len(ctx.shape(x))
    ctx.node("Transpose", [x], [_out(op, "Out")], perm=[a % rank for a in op.attrs["axis"]])


@converter("flatten2", "flatten")
def _flatten(op, ctx):
    ctx.node("Flatten", [_in(op, "X")], [_out(op, "Out")], axis=int(op.attrs.get("axis", 1)))


@converter("flatten_contiguous_range")
def _flatten_range(op, ctx):
    """paddle.flatten: a Reshape to X's dims before start_axis (0: copied), -1 for the merged
    ones and the dims after stop_axis (their declared sizes, or read from X's Shape when
    unknown)."""
    x, out = _in(op, "X"), _out(op, "Out")
    shape = list(ctx.shape(x))
    rank = len(shape)
    if rank == 0:
        ctx.node("Reshape", [x, ctx.const(np.array([1], "int64"), "shape")], [out])
        return
    start, stop = op.attrs.get("start_axis", 1) % rank, op.attrs.get("stop_axis", 1) % rank
    after = shape[stop + 1:]
    if all(d >= 0 for d in after):
        target = ctx.const(np.array([0] * start + [-1] + after, "int64"), "shape")
    else:
        whole, target = ctx.tmp("shape"), ctx.tmp("target")
        ctx.node("Shape", [x], [whole])
        parts = [ctx.const(np.array([-1], "int64"), "merged")]
        for begin, end, at in ((0, start, 0), (stop + 1, rank, 1)):
            if begin < end:
                part = ctx.tmp("dims")
                ctx.node("Slice", [whole, ctx.const(np.array([begin], "int64"), "begin"),
                                   ctx.const(np.array([end], "int64"), "end")], [part])
                parts.insert(at if at == 0 else len(parts), part)
        ctx.node("Concat", parts, [target], axis=0)
    ctx.node("Reshape", [x, target], [out])


@converter("concat")
def _concat(op, ctx):
    _no_tensor_attrs(op, "AxisTensor")
    ctx.node("Concat", list(op.inputs["X"]), [_out(op, "Out")],
             axis=int(op.attrs.get("axis", 0)))


@converter("squeeze2")
def _squeeze(op, ctx):
    x = _in(op, "X")
    shape = ctx.shape(x)
    # Paddle keeps a listed dim that is not 1; ONNX refuses it
    axes = [a % len(shape) for a in op.attrs.get("axes", []) if shape[a] == 1]
    if op.attrs.get("axes") and not axes:
        ctx.node("Identity", [x], [_out(op, "Out")])
        return
    if any(shape[a] < 0 for a in op.attrs.get("axes", [])):
        raise NotConvertible("squeezing a dim whose size is unknown")
    inputs = [x] + ([ctx.const(np.array(axes, "int64"))] if axes else [])
    ctx.node("Squeeze", inputs, [_out(op, "Out")])


@converter("unsqueeze2")
def _unsqueeze(op, ctx):
    _no_tensor_attrs(op, "AxesTensor", "AxesTensorList")
    ctx.node("Unsqueeze", [_in(op, "X"), ctx.const(np.array(op.attrs["axes"], "int64"))],
             [_out(op, "Out")])


# --- reductions ---------------------------------------------------------------------------------------------
@converter("mean")
def _mean(op, ctx):
    reduced = ctx.tmp("mean")
    ctx.node("ReduceMean", [_in(op, "X")], [reduced], keepdims=0)
    ctx.node("Reshape", [reduced, ctx.const(np.array(list(ctx.shape(_out(op, "Out"))) or [],
                                                     "int64"))], [_out(op, "Out")])


_REDUCE = {"reduce_sum": "ReduceSum", "reduce_mean": "ReduceMean", "reduce_max": "ReduceMax",
           "reduce_min": "ReduceMin", "reduce_prod": "ReduceProd"}


@converter(*_REDUCE)
def _reduce(op, ctx):
    x, out = _in(op, "X"), _out(op, "Out")
    rank = len(ctx.shape(x))
    dims = op.attrs.get("dim", [0])
    dims = list(range(rank)) if op.attrs.get("reduce_all") or not dims else \
        [d % rank for d in dims]
    keep = int(bool(op.attrs.get("keep_dim", False)))
    if ctx.dtype(x) != ctx.dtype(out):  # out_dtype: Paddle casts first, then reduces
        cast = ctx.tmp("cast")
        ctx.node("Cast", [x], [cast], to=ctx.onnx_type(out))
        x = cast
    reduced = out if keep or len(dims) < rank or not ctx.shape(out) else ctx.tmp("reduced")
    if op.type == "reduce_sum":  # opset 13 takes ReduceSum's axes as an input
        ctx.node("ReduceSum", [x, ctx.const(np.array(dims, "int64"))], [reduced], keepdims=keep)
    else:
        ctx.node(_REDUCE[op.type], [x], [reduced], axes=dims, keepdims=keep)
    if reduced != out:  # everything reduced to the [1] Fluid 1.x declares
        ctx.node("Reshape", [reduced, ctx.const(np.array(ctx.shape(out), "int64"))], [out])


# --- lookups ------------------------------------------------------------------------------------------------
@converter("lookup_table", "lookup_table_v2")
def _lookup(op, ctx):
    ids, w, out = _in(op, "Ids"), _in(op, "W"), _out(op, "Out")
    if op.attrs.get("is_sparse") and ctx.kind(w) != "dense":
        raise NotConvertible("a SelectedRows table")
    padding = op.attrs.get("padding_idx", -1)
    if padding is not None and padding != -1:
        raise NotConvertible(f"padding_idx {padding} (rows read as zeros)")
    if op.type == "lookup_table":  # ids [N, 1]: the last dim goes
        squeezed = ctx.tmp("ids")
        ctx.node("Squeeze", [ids, ctx.const(np.array([-1], "int64"))], [squeezed])
        ids = squeezed
    ctx.node("Gather", [w, ids], [out], axis=0)


# --- sequences: a LoD as a padded batch with lengths ----------------------------------------------
#: ops whose converters work row by row: on a padded sequence they give a padded sequence
ROW_WISE = set(_BINARY) | set(_UNARY) | {
    "scale", "logical_not", "dropout", "cast", "sum", "mul", "lookup_table",
    "lookup_table_v2"}  # and every op lowered from its formula (expressions.py adds them)
#: ops whose converters read the lengths themselves
SEQUENCE_AWARE = {"sequence_pool", "lstm", "gru", "lod_rank_table", "lod_tensor_to_array"}


@converter("sequence_pool")
def _sequence_pool(op, ctx):
    x, out = _in(op, "X"), _out(op, "Out")
    lengths = ctx.lengths(x)
    if lengths is None:
        raise NotConvertible("X without a LoD (fed as a plain tensor)")
    kind = op.attrs.get("pooltype", "AVERAGE").upper()
    dtype = ctx.dtype(x)
    if kind in ("SUM", "AVERAGE", "SQRT"):
        mask = ctx.mask(x, lengths, dtype)
        mask3, masked, total = ctx.tmp("mask3"), ctx.tmp("masked"), ctx.tmp("total")
        ctx.node("Unsqueeze", [mask, ctx.const(np.array([-1], "int64"), "axes")], [mask3])
        ctx.node("Mul", [x, mask3], [masked])
        ctx.node("ReduceSum", [masked, ctx.const(np.array([1], "int64"), "axes")],
                 [total if kind != "SUM" else out], keepdims=0)
        if kind != "SUM":  # divided by the length, or its square root
            count, column = ctx.tmp("count"), ctx.tmp("column")
            ctx.node("Cast", [lengths], [count], to=ctx.onnx_type(x))
            ctx.node("Unsqueeze", [count, ctx.const(np.array([1], "int64"), "axes")], [column])
            divisor = column
            if kind == "SQRT":
                divisor = ctx.tmp("root")
                ctx.node("Sqrt", [column], [divisor])
            ctx.node("Div", [total, divisor], [out])
    elif kind == "MAX":
        mask = ctx.mask(x, lengths)
        mask3, floor = ctx.tmp("mask3"), ctx.scalar(np.finfo(dtype).min, x)
        ctx.node("Unsqueeze", [mask, ctx.const(np.array([-1], "int64"), "axes")], [mask3])
        kept = ctx.tmp("kept")
        ctx.node("Where", [mask3, x, floor], [kept])
        ctx.node("ReduceMax", [kept], [out], axes=[1], keepdims=0)
    elif kind in ("LAST", "FIRST"):
        if kind == "FIRST":
            ctx.node("Gather", [x, ctx.const(np.array(0, "int64"), "first")], [out], axis=1)
        else:  # row b's step lengths[b] - 1
            last, index = ctx.tmp("last"), ctx.tmp("index")
            ctx.node("Sub", [lengths, ctx.const(np.array(1, "int64"), "one")], [last])
            ctx.node("Unsqueeze", [last, ctx.const(np.array([1], "int64"), "axes")], [index])
            ctx.node("GatherND", [x, index], [out], batch_dims=1)
    else:
        raise NotConvertible(f"pooltype {kind}")
    return "an empty sequence pools to its padding, not to pad_value" if \
        op.attrs.get("pad_value", 0.0) else None


_ACTIVATIONS = {"sigmoid": "Sigmoid", "tanh": "Tanh", "relu": "Relu", "identity": None}


@converter("lstm")
def _lstm(op, ctx):
    """Paddle's lstm (its Input already projected, gates in the order candidate, input,
    forget, output) as ONNX's LSTM (gates input, output, forget, cell): W is the permutation
    that reorders Input's gates, R Weight's blocks transposed, B the bias, P the peepholes."""
    x, weight, bias = _in(op, "Input"), _in(op, "Weight"), _in(op, "Bias")
    lengths = ctx.lengths(x)
    if lengths is None:
        raise NotConvertible("Input without a LoD (fed as a plain tensor)")
    if op.inputs.get("H0") or op.inputs.get("C0"):
        raise NotConvertible("an initial H0 or C0 (they follow the batch's rank order)")
    if ctx.consumed(_out(op, "Cell")):
        raise NotConvertible("Cell is read (ONNX's LSTM gives only the last cell state)")
    names = []
    for attr in ("gate_activation", "candidate_activation", "cell_activation"):
        activation = _ACTIVATIONS.get(op.attrs.get(attr))
        if activation is None:
            raise NotConvertible(f"{attr} {op.attrs.get(attr)!r}")
        names.append(activation)
    w, b = ctx.param(weight), ctx.param(bias).reshape(-1)
    d = w.shape[0]
    order = [1, 3, 2, 0]  # ONNX's i, o, f, c among Paddle's c, i, f, o
    perm = np.zeros((4 * d, 4 * d), w.dtype)
    for k, block in enumerate(order):
        perm[k * d + np.arange(d), block * d + np.arange(d)] = 1
    r = np.concatenate([w[:, block * d:(block + 1) * d].T for block in order])
    gate_bias = np.concatenate([b[block * d:(block + 1) * d] for block in order])
    onnx_b = np.concatenate([gate_bias, np.zeros_like(gate_bias)])[None]
    inputs = [None, ctx.const(perm[None], "W"), ctx.const(r[None], "R"),
              ctx.const(onnx_b, "B"), None, "", ""]
    if op.attrs.get("use_peepholes", True):
        w_ic, w_fc, w_oc = (b[(4 + k) * d:(5 + k) * d] for k in range(3))
        inputs.append(ctx.const(np.concatenate([w_ic, w_oc, w_fc])[None], "P"))
    else:
        inputs = inputs[:5]  # no initial states, no peepholes
    time_major, lens32, y, squeezed = (ctx.tmp(n) for n in ("time_major", "lens", "y", "h"))
    ctx.node("Transpose", [x], [time_major], perm=[1, 0, 2])
    ctx.node("Cast", [lengths], [lens32], to=ctx.onnx.TensorProto.INT32)
    inputs[0], inputs[4] = time_major, lens32
    ctx.node("LSTM", inputs, [y], hidden_size=int(d), activations=names,
             direction="reverse" if op.attrs.get("is_reverse") else "forward")
    ctx.node("Squeeze", [y, ctx.const(np.array([1], "int64"), "axes")], [squeezed])
    hidden = _out(op, "Hidden")
    ctx.node("Transpose", [squeezed], [hidden], perm=[1, 0, 2])
    ctx.sequences[hidden] = lengths


@converter("gru")
def _gru(op, ctx):
    """Paddle's gru (Input projected, gates update u, reset r, candidate c; Weight one
    buffer of W_ur [D, 2D] then W_c [D, D]) as ONNX's GRU (gates z, r, h; reset before the
    candidate's product). Paddle's h = (1 - u) h_prev + u c is ONNX's with z = 1 - u, which
    for a sigmoid gate is the gate of the negated pre-activation; origin_mode has z = u."""
    x, weight, bias = _in(op, "Input"), _in(op, "Weight"), _in(op, "Bias")
    lengths = ctx.lengths(x)
    if lengths is None:
        raise NotConvertible("Input without a LoD (fed as a plain tensor)")
    if op.inputs.get("H0"):
        raise NotConvertible("an initial H0 (it follows the batch's rank order)")
    origin = bool(op.attrs.get("origin_mode", False))
    gate, act = op.attrs.get("gate_activation", "sigmoid"), op.attrs.get("activation", "tanh")
    if not origin and gate != "sigmoid":
        raise NotConvertible(f"gate_activation {gate!r} without origin_mode (z = 1 - u "
                             "needs a sigmoid gate)")
    names = [_ACTIVATIONS.get(gate), _ACTIVATIONS.get(act)]
    if None in names:
        raise NotConvertible(f"activations {gate!r}, {act!r}")
    flat = ctx.param(weight).reshape(-1)
    d = int(round((flat.size / 3) ** 0.5))
    w_ur, w_c = flat[:2 * d * d].reshape(d, 2 * d), flat[2 * d * d:].reshape(d, d)
    b = ctx.param(bias).reshape(-1) if bias else np.zeros(3 * d, flat.dtype)
    sign = 1 if origin else -1
    eye = np.eye(d, dtype=flat.dtype)
    w = np.zeros((3 * d, 3 * d), flat.dtype)
    w[:d, :d], w[d:2 * d, d:2 * d], w[2 * d:, 2 * d:] = sign * eye, eye, eye
    r = np.concatenate([sign * w_ur[:, :d].T, w_ur[:, d:].T, w_c.T])
    onnx_b = np.concatenate([sign * b[:d], b[d:2 * d], b[2 * d:], np.zeros(3 * d, b.dtype)])
    time_major, lens32, y, squeezed = (ctx.tmp(n) for n in ("time_major", "lens", "y", "h"))
    ctx.node("Transpose", [x], [time_major], perm=[1, 0, 2])
    ctx.node("Cast", [lengths], [lens32], to=ctx.onnx.TensorProto.INT32)
    ctx.node("GRU", [time_major, ctx.const(w[None], "W"), ctx.const(r[None], "R"),
                     ctx.const(onnx_b[None], "B"), lens32], [y], hidden_size=d,
             activations=names, linear_before_reset=0,
             direction="reverse" if op.attrs.get("is_reverse") else "forward")
    ctx.node("Squeeze", [y, ctx.const(np.array([1], "int64"), "axes")], [squeezed])
    hidden = _out(op, "Hidden")
    ctx.node("Transpose", [squeezed], [hidden], perm=[1, 0, 2])
    ctx.sequences[hidden] = lengths
