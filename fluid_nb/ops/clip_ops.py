"""Gradient-clipping and regularization helper ops, and the SelectedRows helpers they use.

Fluid's clips build on these: GradientClipByNorm is one ``clip_by_norm`` per gradient;
GradientClipByGlobalNorm merges a sparse gradient (``merge_selected_rows`` then
``get_tensor_from_selected_rows``), takes ``squared_l2_norm`` (or square + reduce_sum) of
each, and scales by clip / max(clip, sqrt(sum)); L1Decay adds ``sign(param) * coeff``.

``merge_add`` is Paddle's MergeAdd (also the ``sum`` of SelectedRows): the inputs' rows
concatenated when no row id repeats, else their distinct ids ascending, each with the sum of
its values. ``merged_rows`` applies it to one SelectedRows for the optimizer ops.
"""
import numpy as np

from ..errors import InvalidArgument, expected
from ..tensor.tensor import LoDTensor, SelectedRows, index_add
from ..tensor.dtypes import VarType
from ..framework.program import EMPTY_VAR_NAME
from . import expr
from .expr import Formula
from ..framework.registry import def_op, grad_maker, grads_like, same_shape


def merge_add(xp, inputs, where):
    """(rows, height, values) of the SelectedRows ``inputs`` added together, as Paddle's
    MergeAdd: inputs without rows are skipped (whatever their value holds); when no row id
    repeats, rows and values are the inputs' concatenated in order, else rows are the
    distinct ids ascending and values[i] = sum of the values of id rows[i]. Row ids are not
    checked against the height (Fluid reads them only as keys here). ``values`` is None
    when no input has rows; it may be the one input's own array."""
    active = [s for s in inputs if s.rows()]
    if not active:
        return np.zeros((0,), np.int64), (inputs[0].height() if inputs else 0), None
    height, width = active[0].height(), None
    for s in active:
        count = len(s.rows())
        values = s.value.array
        if values is None or values.shape[0] != count:
            raise InvalidArgument(expected(where, "SelectedRows value", f"{count} rows (one "
                                           f"per row id)", None if values is None else
                                           list(values.shape)))
        if width is None:
            width = tuple(values.shape[1:])
        elif tuple(values.shape[1:]) != width:
            raise InvalidArgument(expected(where, "row shape of each SelectedRows",
                                           f"{list(width)} (as the first one's)",
                                           list(values.shape[1:])))
        if s.height() != height:
            raise InvalidArgument(expected(where, "height of each SelectedRows",
                                           f"{height} (as the first one's)", s.height()))
    # row ids are host-side bookkeeping, so NumPy is right here even on a GPU place
    rows = np.concatenate([np.asarray(s.rows(), dtype=np.int64) for s in active])
    arrays = [s.value.array for s in active]
    unique, inverse = np.unique(rows, return_inverse=True)
    if unique.size == rows.size:
        return rows, height, arrays[0] if len(arrays) == 1 else xp.concatenate(arrays)
    merged = xp.zeros((unique.size,) + width, dtype=arrays[0].dtype)
    index_add(xp, merged, xp.asarray(inverse),
              arrays[0] if len(arrays) == 1 else xp.concatenate(arrays))
    return unique, height, merged


def merged_rows(xp, selected, where, height=None):
    """(rows, values) of ``selected`` merged by ``merge_add`` (an int64 row array on the
    host; values may be ``selected``'s own array). ``height``, when given (the parameter's
    rows), bounds the row ids: the optimizers index the parameter with them."""
    rows, _, values = merge_add(xp, [selected], where)
    if values is None:
        values = selected.value.array
        values = xp.zeros((0,) + tuple(values.shape[1:] if values is not None else ()),
                          dtype=values.dtype if values is not None else np.float32)
    if height is not None and rows.size and (rows.min() < 0 or rows.max() >= height):
        raise InvalidArgument(expected(where, "SelectedRows row ids", f"in [0, {height})",
                                       rows.tolist()))
    return rows, values


# --- clip_by_norm -------------------------------------------------------------------------
def _clip_to_norm(xp, x, max_norm):
    norm = xp.sqrt(xp.sum(x.astype("float64") ** 2))
    # the factor max_norm / norm, or exactly 1 where norm <= max_norm, chosen without
    # reading the norm (it stays on a device); the floor keeps a max_norm <= 0 off 0 / 0
    scale = max_norm / xp.maximum(norm, max(max_norm, np.finfo(np.float64).tiny))
    if x.dtype.kind == "f":  # multiplied in X's type, as a Python number would be
        scale = scale.astype(x.dtype)
    return (x * scale).astype(x.dtype, copy=False)


def _clip_by_norm_infer(ctx):
    ctx.check("max_norm" in ctx.attrs(), "attribute 'max_norm'", "a float", "none")
    ctx.set_output("Out", ctx.input_shape("X"), ctx.input_dtype("X"),
                   type=ctx.input_var_type("X"))
    # here rather than share_lod: the executor's LoD sharing cannot read a SelectedRows X
    ctx.share_lod("X", "Out")


def _clip_by_norm_kernel(ctx, x):
    max_norm = ctx.attrs["max_norm"]
    if isinstance(x, SelectedRows):
        rows, values = merged_rows(ctx.xp, x, "clip_by_norm")
        return SelectedRows(rows.tolist(), x.height(),
                            LoDTensor(_clip_to_norm(ctx.xp, values, max_norm)))
    return LoDTensor(_clip_to_norm(ctx.xp, x.array, max_norm), x.lod())


def_op("clip_by_norm", inputs=["X"], outputs=["Out"], attrs={"max_norm": ("float", None)},
       infer_shape=_clip_by_norm_infer, kernel=_clip_by_norm_kernel,
       lod_aware=True,
       doc="Out = X * max_norm / ||X||_2 when ||X||_2 > max_norm, else X. A SelectedRows X "
           "is merged first and gives a SelectedRows. No gradient (Paddle has none).")


# --- squared_l2_norm ------------------------------------------------------------------------
def _squared_l2_norm_kernel(ctx, x):
    return ctx.xp.sum(x * x).reshape(1).astype(x.dtype, copy=False)


def_op("squared_l2_norm", inputs=["X"], outputs=["Out"],
       infer_shape=lambda ctx: ctx.set_output("Out", (1,), ctx.input_dtype("X")),
       grad=grad_maker("squared_l2_norm_grad", inputs=["X"], out_grads=["Out"], in_grads=["X"]),
       kernel=_squared_l2_norm_kernel,
       doc="Out = sum(X^2), shape [1]; dX = 2 * X * dOut.")
def_op("squared_l2_norm_grad", inputs=["X", "Out@GRAD"], outputs=["X@GRAD"],
       infer_shape=grads_like(**{"X@GRAD": "X"}),
       kernel=lambda ctx, x, dout: (2 * x * dout.reshape(())).astype(x.dtype, copy=False),
       doc="Gradient of squared_l2_norm.")


# --- sign -------------------------------------------------------------------------------------
def _sign_grad(g):
    # Paddle's maker: the gradient is a scale of Out@GRAD by 0 (sign is flat almost everywhere)
    (name,) = g.input_grad("X")
    if name == EMPTY_VAR_NAME:
        return []
    return [g.op("scale", {"X": g.output_grad("Out")}, {"Out": [name]},
                 {"scale": 0.0, "bias": 0.0, "bias_after_scale": True})]


# a formula with Paddle's own grad maker: every target renders sign(X) from the record
_SIGN = Formula(expr.sign(expr.X), {"x": "X"}, "Out", onnx="Sign")
_sign_kernel = expr.numpy_function(_SIGN.expr, ["x"], cast_like="x")
def_op("sign", inputs=["X"], outputs=["Out"], infer_shape=same_shape("X", "Out"),
       share_lod=("X", ["Out"]), grad=_sign_grad,
       kernel=lambda ctx, x: _sign_kernel(ctx.xp, x, ctx.attrs), formula=_SIGN,
       traits=("elementwise",),
       doc="Out = sign(X) (-1, 0 or 1); the gradient is 0 (a scale op by 0).")


# --- SelectedRows helpers ---------------------------------------------------------------------
def _selected_rows_input(ctx):
    kind = ctx.input_var_type("X")
    ctx.check(kind == VarType.SELECTED_ROWS, "input 'X'", "a SELECTED_ROWS variable",
              getattr(kind, "name", kind))


def _merge_infer(ctx):
    _selected_rows_input(ctx)
    ctx.set_output("Out", ctx.input_shape("X"), ctx.input_dtype("X"),
                   type=VarType.SELECTED_ROWS)


def _require_selected_rows(where, x):
    if not isinstance(x, SelectedRows):
        raise InvalidArgument(expected(where, "input X", "a SelectedRows", type(x).__name__))


def _merge_kernel(ctx, x):
    _require_selected_rows("merge_selected_rows", x)
    rows, values = merged_rows(ctx.xp, x, "merge_selected_rows")
    return SelectedRows(rows.tolist(), x.height(), LoDTensor(values.copy()))


def_op("merge_selected_rows", inputs=["X"], outputs=["Out"], infer_shape=_merge_infer,
       kernel=_merge_kernel, lod_aware=True,
       doc="Out = X with duplicate rows summed into one, as Paddle's MergeAdd: rows "
           "ascending when an id repeats, else X's rows in their order.")


def _get_tensor_infer(ctx):
    _selected_rows_input(ctx)
    shape = ctx.input_shape("X")
    # the value holds one row per row id, so its first dim is known only at run time
    ctx.set_output("Out", (-1,) + tuple(shape[1:]) if shape else shape, ctx.input_dtype("X"),
                   type=VarType.LOD_TENSOR)


def _get_tensor_kernel(ctx, x):
    _require_selected_rows("get_tensor_from_selected_rows", x)
    return x.value.array.copy()


def_op("get_tensor_from_selected_rows", inputs=["X"], outputs=["Out"],
       infer_shape=_get_tensor_infer, kernel=_get_tensor_kernel, lod_aware=True,
       doc="Out = the value tensor of SelectedRows X (one row per row id, row ids dropped).")
