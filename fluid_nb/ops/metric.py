"""Metric and selection ops: ``accuracy`` over top-k predictions, ``top_k``/``top_k_v2``
(values and int64 indices of the k largest or smallest entries) and ``arg_max``."""
from ..errors import InvalidArgument, expected
from ..framework.dtypes import VarType
from ..framework.infer import dims_match
from .registry import def_op, grad_maker, grads_like


# --- accuracy -----------------------------------------------------------------------------
def _accuracy_infer(ctx):
    out, label = ctx.input_shape("Out"), ctx.input_shape("Label")
    ctx.check(len(label) == 2, "input 'Label'", "rank 2 ([N, 1])", list(label))
    ctx.check(dims_match(label[1], 1), "input 'Label'", "shape [N, 1]", list(label))
    ctx.check(dims_match(out[0], label[0]), f"shapes of Out {list(out)} and Label "
              f"{list(label)}", "the same number of rows", f"{out[0]} and {label[0]}")
    ctx.set_output("Accuracy", (1,), VarType.FP32)
    ctx.set_output("Correct", (1,), VarType.INT32)
    ctx.set_output("Total", (1,), VarType.INT32)


def _accuracy(ctx, out, indices, label):
    xp = ctx.xp
    rows = indices.shape[0]
    hits = indices.reshape(rows, -1) == label.reshape(rows, -1)[:, :1]
    correct = hits.any(axis=1).sum().astype("int32").reshape(1)
    total = xp.full((1,), rows, dtype="int32")
    accuracy = (correct.astype("float32") / max(rows, 1)).astype("float32")
    return accuracy, correct, total


def_op("accuracy",
       inputs=["Out", "Indices", "Label"], outputs=["Accuracy", "Correct", "Total"],
       infer_shape=_accuracy_infer, share_lod=("Out", ["Accuracy"]),
       kernel=_accuracy,
       doc="Correct = number of rows i where Label[i] is among Indices[i, :] (the top-k "
           "predictions); Total = rows; Accuracy = Correct / Total (float32 [1]). No gradient.")


# --- top_k / top_k_v2 -----------------------------------------------------------------------
def _k_of(ctx, k_tensor):
    return int(k_tensor.reshape(-1)[0]) if k_tensor is not None else ctx.attrs["k"]


def _top_k_along(ctx, op, x, k, axis, largest):
    """(values, int64 indices) of the top ``k`` along ``axis``, best first; ties keep the
    lower index first and NaN counts as the largest value."""
    xp = ctx.xp
    size = x.shape[axis] if x.ndim else 1
    if not 1 <= k <= size:
        raise InvalidArgument(expected(op, "k", f"in [1, {size}] (the size of dim {axis})", k))
    if x.dtype.kind == "f":
        nan = xp.isnan(x)
        key = xp.where(nan, -xp.inf, -x) if largest else xp.where(nan, xp.inf, x)
    elif x.dtype.kind == "b":
        key = ~x if largest else x
    else:
        key = -x.astype("int64") if largest else x
    order = xp.argsort(key, axis=axis, kind="stable")
    indices = xp.take(order, xp.arange(k), axis=axis).astype("int64")
    return xp.take_along_axis(x, indices, axis=axis), indices


def _scatter_along(xp, shape, dtype, indices, values, axis):
    """Zeros of ``shape`` with ``values`` put at ``indices`` along ``axis`` (each row's
    indices are distinct, so plain assignment is exact)."""
    idx = xp.moveaxis(indices, axis, -1)
    k = idx.shape[-1]
    moved = tuple(n for i, n in enumerate(shape) if i != axis) + (shape[axis],)
    rows = idx.size // k if k else 0
    flat = xp.zeros((rows, moved[-1]), dtype=dtype)
    flat[xp.arange(rows)[:, None], idx.reshape(rows, k)] = \
        xp.moveaxis(values, axis, -1).reshape(rows, k)
    return xp.moveaxis(flat.reshape(moved), -1, axis)


def _top_k_infer(ctx, axis_attr):
    x = list(ctx.input_shape("X"))
    rank = len(x)
    ctx.check(rank >= 1, "input 'X'", "rank >= 1", x)
    axis = ctx.attr("axis") if axis_attr else -1
    ctx.check(-rank <= axis < rank, "attribute 'axis'", f"in [{-rank}, {rank})", axis)
    axis %= rank
    k = ctx.attr("k")
    if ctx.has_input("K"):
        k = -1  # known only when the K tensor is read at run time
    else:
        ctx.check(k >= 1, "attribute 'k'", ">= 1", k)
        ctx.check(x[axis] < 0 or k <= x[axis], "attribute 'k'",
                  f"<= {x[axis]} (the size of dim {axis} of X)", k)
    x[axis] = k
    ctx.set_output("Out", x, ctx.input_dtype("X"))
    ctx.set_output("Indices", x, VarType.INT64)


def _top_k(ctx, x, k_tensor):
    return _top_k_along(ctx, "top_k", x, _k_of(ctx, k_tensor), x.ndim - 1, True)


def _top_k_grad(ctx, x, indices, dout):
    return _scatter_along(ctx.xp, x.shape, dout.dtype, indices, dout, x.ndim - 1)


def_op("top_k",
       inputs=["X", "K?"], outputs=["Out", "Indices"],
       attrs={"k": ("int", 1)},
       infer_shape=lambda ctx: _top_k_infer(ctx, axis_attr=False),
       share_lod=("X", ["Out", "Indices"]),
       grad=grad_maker("top_k_grad", inputs=["X"], outputs=["Indices"], out_grads=["Out"],
                       in_grads=["X"]),
       kernel=_top_k,
       doc="Out, Indices = the k largest entries of X along its last dim (k from the K tensor "
           "when given), largest first; Indices is int64.")

def_op("top_k_grad",
       inputs=["X", "Indices", "Out@GRAD"], outputs=["X@GRAD"],
       attrs={"k": ("int", 1)},
       infer_shape=grads_like(**{"X@GRAD": "X"}),
       kernel=_top_k_grad,
       doc="Gradient of top_k: dX = zeros like X with dOut put back at Indices.")


def _top_k_v2(ctx, x, k_tensor):
    attrs = ctx.attrs
    # ``sorted=False`` leaves the order unspecified in Paddle; sorted order is one valid answer
    return _top_k_along(ctx, "top_k_v2", x, _k_of(ctx, k_tensor), attrs["axis"] % x.ndim,
                        attrs["largest"])


def _top_k_v2_grad(ctx, x, indices, dout):
    return _scatter_along(ctx.xp, x.shape, dout.dtype, indices, dout,
                          ctx.attrs["axis"] % x.ndim)


_TOP_K_V2_ATTRS = {"k": ("int", 1), "axis": ("int", -1), "largest": ("bool", True),
                   "sorted": ("bool", True)}

def_op("top_k_v2",
       inputs=["X", "K?"], outputs=["Out", "Indices"],
       attrs=_TOP_K_V2_ATTRS,
       infer_shape=lambda ctx: _top_k_infer(ctx, axis_attr=True),
       share_lod=("X", ["Out", "Indices"]),
       grad=grad_maker("top_k_v2_grad", inputs=["X"], outputs=["Indices"], out_grads=["Out"],
                       in_grads=["X"]),
       kernel=_top_k_v2,
       doc="Out, Indices = the k largest (largest=True) or smallest entries of X along "
           "``axis``, best first; Indices is int64.")

def_op("top_k_v2_grad",
       inputs=["X", "Indices", "Out@GRAD"], outputs=["X@GRAD"],
       attrs=_TOP_K_V2_ATTRS,
       infer_shape=grads_like(**{"X@GRAD": "X"}),
       kernel=_top_k_v2_grad,
       doc="Gradient of top_k_v2: dX = zeros like X with dOut put back at Indices.")


# --- arg_max --------------------------------------------------------------------------------
_INDEX_DTYPES = {2: VarType.INT32, 3: VarType.INT64}


def _arg_max_infer(ctx):
    x = list(ctx.input_shape("X"))
    attrs = ctx.attrs()
    ctx.check("axis" in attrs, "attribute 'axis'", "a value (it has no default)", "none")
    axis, rank = attrs["axis"], len(x)
    ctx.check(-rank <= axis < max(rank, 1), "attribute 'axis'", f"in [{-rank}, {rank})",
              axis)
    if attrs["flatten"]:
        out = [1]
    else:
        axis %= max(rank, 1)
        out = x[:axis] + ([1] if attrs["keepdims"] else []) + x[axis + 1:]
    ctx.set_output("Out", out, _INDEX_DTYPES[attrs["dtype"]])


def _arg_max(ctx, x):
    attrs = ctx.attrs
    dtype = "int32" if attrs["dtype"] == 2 else "int64"
    if attrs["flatten"]:
        return ctx.xp.argmax(x.reshape(-1)).astype(dtype).reshape(1)
    axis = attrs["axis"] % x.ndim
    out = ctx.xp.argmax(x, axis=axis).astype(dtype)
    return ctx.xp.expand_dims(out, axis) if attrs["keepdims"] else out


def_op("arg_max",
       inputs=["X"], outputs=["Out"],
       attrs={"axis": ("long", None), "keepdims": ("bool", False), "flatten": ("bool", False),
              "dtype": ("int", 3, lambda v: None if v in (2, 3) else "2 (int32) or 3 (int64)")},
       infer_shape=_arg_max_infer,
       kernel=_arg_max,
       doc="Out = the index of the first largest entry of X along ``axis`` (of the flattened X "
           "when flatten=True, giving shape [1]); int64 (dtype=3) or int32 (dtype=2). No "
           "gradient.")
