"""Initialiser ops: ``truncated_gaussian_random`` (normal values redrawn outside two
standard deviations) and ``assign_value`` (a constant tensor written into the op's
attributes)."""
import numpy as np

from ..errors import InvalidArgument, expected
from ..tensor.dtypes import VarType, convert_dtype, to_numpy_dtype
from ..framework.registry import def_op


def _shape_infer(ctx, op_type):
    shape = list(ctx.attr("shape"))
    for i, d in enumerate(shape):
        ctx.check(d >= 0, f"attribute 'shape'[{i}]", "no less than 0", f"{d} (shape={shape})")
    ctx.set_output("Out", shape, convert_dtype(ctx.attr("dtype")))


# --- truncated_gaussian_random -------------------------------------------------------------
def _truncated_gaussian(ctx):
    attrs = ctx.attrs
    mean, std = attrs["mean"], attrs["std"]
    shape = tuple(attrs["shape"])
    rs = ctx.random_state()
    n = int(np.prod(shape, dtype=np.int64))
    # Paddle keeps draws within two standard deviations; redraw the rest until all fit
    values = rs.normal(0.0, 1.0, n)
    bad = np.abs(values) > 2.0
    while bad.any():
        values[bad] = rs.normal(0.0, 1.0, int(bad.sum()))
        bad = np.abs(values) > 2.0
    values = (mean + std * values).reshape(shape)
    return ctx.xp.asarray(values.astype(to_numpy_dtype(attrs["dtype"])))


def_op("truncated_gaussian_random", outputs=["Out"],
       attrs={"shape": ("ints", []), "mean": ("float", 0.0), "std": ("float", 1.0),
              "seed": ("int", 0), "dtype": ("int", int(VarType.FP32))},
       infer_shape=lambda ctx: _shape_infer(ctx, "truncated_gaussian_random"),
       kernel=_truncated_gaussian, traits=("stateful",),
       doc="Out ~ N(mean, std^2) truncated to [mean - 2 std, mean + 2 std] (out-of-range "
           "draws are redrawn). seed != 0 fixes the stream; 0 uses the program's seed.")


# --- assign_value --------------------------------------------------------------------------
#: which attribute holds the values for each dtype
VALUE_ATTR = {VarType.FP32: "fp32_values", VarType.INT32: "int32_values",
              VarType.INT64: "int64_values", VarType.BOOL: "bool_values"}


def _assign_value_infer(ctx):
    dtype = convert_dtype(ctx.attr("dtype"))
    ctx.check(dtype in VALUE_ATTR, "attribute 'dtype'", "one of bool, int32, int64, float32",
              dtype.name if isinstance(dtype, VarType) else dtype)
    shape = list(ctx.attr("shape"))
    values = ctx.attr(VALUE_ATTR[dtype]) or []
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    ctx.check(len(values) == n, f"attribute '{VALUE_ATTR[dtype]}'",
              f"{n} values (shape {shape})", f"{len(values)} values")
    _shape_infer(ctx, "assign_value")


def _assign_value(ctx):
    attrs = ctx.attrs
    dtype = convert_dtype(attrs["dtype"])
    name = VALUE_ATTR.get(dtype)
    if name is None:
        raise InvalidArgument(expected("assign_value", "attribute 'dtype'",
                                       "one of bool, int32, int64, float32", dtype))
    values = np.array(attrs[name] or [], dtype=to_numpy_dtype(dtype))
    return ctx.xp.asarray(values.reshape(tuple(attrs["shape"])))


def_op("assign_value", outputs=["Out"],
       attrs={"shape": ("ints", []), "dtype": ("int", int(VarType.FP32)),
              "bool_values": ("ints", []), "fp32_values": ("floats", []),
              "int32_values": ("ints", []), "int64_values": ("longs", [])},
       infer_shape=_assign_value_infer, kernel=_assign_value,
       doc="Out = the constant held in the attribute for ``dtype`` (fp32_values, "
           "int32_values, int64_values or bool_values), reshaped to ``shape``.")
