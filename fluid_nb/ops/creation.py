"""Tensor creation and copying: fill_constant, fill_any_like, fill_zeros_like, the random
initialisers (uniform_random, gaussian_random and their ``*_batch_size_like`` forms, randint,
randperm), assign, cast, increment, and the sequences and matrices Fluid 1.8 builds (range,
linspace, eye, diag, tril_triu).

Shapes may come from tensors at run time (``ShapeTensor``: one int tensor holding the shape;
``ShapeTensorList``: one single-element int tensor per dim); at compile time those dims are
unknown (-1).
"""
import math

import numpy as np

from ..errors import InvalidArgument, expected
from ..tensor.tensor import LoDTensor, LoDTensorArray, SelectedRows
from ..tensor.transfer import host_list
from ..tensor.dtypes import DATA_TYPES, VarType, convert_dtype, to_numpy_dtype
from ..framework.program import EMPTY_VAR_NAME
from ..framework.registry import def_op, grad_maker, no_gradient, same_shape
from ..memory.arena import outside_the_arena


# --- helpers shared with shape.py ------------------------------------------------------
def host_ints(value):
    """A list of Python ints from an int tensor (NumPy or device), or from a list of
    single-element tensors (a ``*TensorList`` slot): from a device, one copy. The op that
    reads them declares ``host_reads``."""
    ints, = host_int_lists(value)
    return ints if ints is not None else []


def host_int_lists(*values):
    """``host_ints`` of several tensors / tensor lists at once (None for an absent one or an
    empty list): their device values come over in one copy."""
    groups = []  # per value: its arrays, or None
    for value in values:
        if value is None or (isinstance(value, list) and not value):
            groups.append(None)
        else:
            groups.append([t.array if isinstance(t, LoDTensor) else t for t in
                           (value if isinstance(value, list) else [value])])
    arrays = [a for g in groups if g is not None for a in g]
    if not arrays:  # (the usual op: its attributes say it all, no tensor to read)
        return groups
    flats = iter(_host_lists(arrays))
    lists = []
    for g in groups:
        # one flat list per array of the group, in order
        lists.append(None if g is None else [int(v) for _ in g for v in next(flats)])
    return lists


def _host_lists(arrays):
    """Each array's values as a flat Python list. Device arrays come over in one copy:
    joined there first (np.concatenate dispatches to their module, CuPy's or the strict
    device's), so an op reading several shape or bound tensors waits on the device once."""
    flats = [a.reshape(-1) for a in arrays]
    on_device = [a for a in flats if not isinstance(a, np.ndarray)]
    if len(on_device) < 2:
        return [host_list(a) for a in flats]
    joined = host_list(np.concatenate(on_device))
    lists, at = [], 0
    for a in flats:
        if isinstance(a, np.ndarray):
            lists.append(a.tolist())
        else:
            lists.append(joined[at:at + a.size])
            at += a.size
    return lists


def dtype_attr(ctx, name, default=None):
    """The VarType named by int attribute ``name`` (``default`` where it is -1)."""
    value = ctx.attr(name)
    if value == -1 and default is not None:
        return convert_dtype(default)
    try:
        vt = convert_dtype(value)
    except InvalidArgument:
        vt = None
    if vt not in DATA_TYPES:
        ctx.fail(f"attribute '{name}'", "a data type number of VarType (e.g. 5 for float32)",
                 value)
    return vt


def numel_of(shape):
    """Elements of a compile-time shape, or -1 when a dim is unknown."""
    if any(d < 0 for d in shape):
        return -1
    return math.prod(shape)


def _attr_shape_or_tensor(ctx, list_gives_rank):
    """Output shape of a creation op: Attr(shape), or unknown dims when a tensor holds it.

    ``list_gives_rank``: a ShapeTensorList fixes the rank to its length (uniform_random,
    gaussian_random); fill_constant keeps Attr(shape) there, where Python put -1s.
    """
    shape = list(ctx.attr("shape"))
    has_list = ctx.has_input("ShapeTensorList")
    if has_list and list_gives_rank:
        return [-1] * len(ctx.op.inputs["ShapeTensorList"])
    if ctx.has_input("ShapeTensor") and not shape:
        n = numel_of(ctx.input_shape("ShapeTensor"))
        return [-1] * n if n >= 0 else [-1]
    if not ctx.has_input("ShapeTensor") and not has_list:
        for i, d in enumerate(shape):
            if d < 0:  # (the message formatted only then: a program's constants all pass)
                ctx.fail(f"attribute 'shape'[{i}]", "no less than 0", f"{d} (shape={shape})")
    return shape


def _runtime_shape(op, shape_tensor, shape_list, attr_shape):
    """The output shape: from the shape tensor(s), read on the host (the op declares
    host_reads), else the attribute."""
    if shape_tensor is not None:
        shape = host_ints(shape_tensor)
    elif shape_list:
        shape = host_ints(shape_list)
    else:
        shape = attr_shape
    if shape and min(shape) < 0:
        raise InvalidArgument(expected(op, "shape", "dims no less than 0", list(shape)))
    return tuple(shape)


def fill_value(op_type, attrs):
    """The value a filling op writes: ``str_value`` when given (Paddle reads it as a
    double, "inf", "-inf" and "nan" spelled out: Python's ``float`` reads them so, in any
    case, with a sign and spaces around), else ``value``. The kernels, the native code
    generator and the ONNX exporter all read it here."""
    text = attrs.get("str_value")
    if not text:
        return attrs.get("value", 0.0)
    try:
        return float(text)
    except ValueError:
        raise InvalidArgument(expected(op_type, "attribute 'str_value'",
                                       "a number, 'inf', '-inf' or 'nan'", repr(text))) \
            from None


_CREATION_ATTRS = {"shape": ("longs", []), "dtype": ("int", int(VarType.FP32))}


# --- fill_constant -----------------------------------------------------------------------
def _fill_constant_infer(ctx):
    ctx.set_output("Out", _attr_shape_or_tensor(ctx, list_gives_rank=False),
                   dtype_attr(ctx, "dtype"))


def _as_declared_out(ctx, array):
    """``array`` as the op's Out is declared: a dense tensor, or the value of a SelectedRows
    (Paddle's creation kernels fill a SelectedRows Out's value and keep its rows and
    height)."""
    sparse = ctx.cache.get("selected_rows_out")
    if sparse is None:
        var = ctx.op.block._find_var_recursive(ctx.output_names("Out")[0])
        sparse = var is not None and var.type == VarType.SELECTED_ROWS
        ctx.cache["selected_rows_out"] = sparse
    if not sparse:
        return array
    ctx.cache.pop("constant", None)  # a SelectedRows is made afresh each run
    holder = ctx.scope.find_var(ctx.output_names("Out")[0])
    held = holder.value if holder is not None else None
    if isinstance(held, SelectedRows):
        return SelectedRows(held.rows(), held.height(), LoDTensor(array))
    return SelectedRows([], 0, LoDTensor(array))


def _fill_constant(ctx, value_tensor, shape_tensor, shape_list):
    from_attrs = value_tensor is None and shape_tensor is None and not shape_list
    if from_attrs:
        cached = ctx.cache.get("constant")
        if cached is not None:
            return cached
    return _as_declared_out(ctx, _constant(ctx, value_tensor, shape_tensor, shape_list,
                                           from_attrs))


def _constant(ctx, value_tensor, shape_tensor, shape_list, from_attrs):
    attrs = ctx.attrs
    shape = _runtime_shape("fill_constant", shape_tensor, shape_list, attrs["shape"])
    dtype = to_numpy_dtype(attrs["dtype"])
    if value_tensor is not None:
        # assigned where it lies: on a device the value fills Out there, never read on the host
        array = ctx.xp.empty(shape, dtype=dtype)
        array[...] = value_tensor.reshape(-1)[0]
        return array
    value = fill_value("fill_constant", attrs)
    if dtype.kind == "f":  # (NumPy's full is these two steps behind a Python frame)
        array = ctx.xp.empty(shape, dtype=dtype)
        array.fill(value)
    else:  # (full's cast: fill refuses a value out of an integer type's range)
        array = ctx.xp.full(shape, value, dtype=dtype)
    if from_attrs and array.size <= 4096 and hasattr(array, "flags"):
        # the same small constant every run (a loss gradient's 1.0): kept, read-only (a
        # run's temporaries are never written in place), for the runs after the second,
        # and outside the arena: a block kept for good, wherever this run's tensors left
        # room for it, would keep the blocks around it from merging again. Not at the
        # first run: a live op runs once, and the copy would be for nothing
        if "ran" not in ctx.cache:
            ctx.cache["ran"] = True
        elif not _out_persistable(ctx):
            array.flags.writeable = False
            kept = outside_the_arena(array.copy)
            kept.flags.writeable = False
            ctx.cache["constant"] = kept
    return array


def _out_persistable(ctx):
    """Whether Out names a persistable variable (a bias or an optimizer's accumulator that
    a startup program fills once, and that updates may write in place): its array is its
    own, not a constant the op keeps."""
    persistable = ctx.cache.get("out_persistable")
    if persistable is None:
        names = ctx.output_names("Out")
        var = ctx.op.block._find_var_recursive(names[0]) if names else None
        persistable = ctx.cache["out_persistable"] = var is not None and var.persistable
    return persistable


def_op("fill_constant",
       inputs=["ValueTensor?", "ShapeTensor?", "ShapeTensorList[]?"], outputs=["Out"],
       attrs={**_CREATION_ATTRS, "value": ("float", 0.0), "str_value": ("string", ""),
              "force_cpu": ("bool", False), "place_type": ("int", -1)},
       infer_shape=_fill_constant_infer, kernel=_fill_constant,
       traits=("runtime_outputs", "infer_from_attrs"),
       host_reads="ShapeTensor / ShapeTensorList: Out's shape",
       doc="Out = a tensor of shape ``shape`` (or ShapeTensor / ShapeTensorList) and type "
           "``dtype``, every element equal to ValueTensor, else float(str_value) when "
           "str_value is non-empty, else ``value``. An Out declared SelectedRows gets the "
           "tensor as its value (its rows and height kept).")


# --- fill_any_like / fill_zeros_like -----------------------------------------------------
def _fill_any_like_infer(ctx):
    ctx.set_output("Out", ctx.input_shape("X"), dtype_attr(ctx, "dtype", ctx.input_dtype("X")))


def _representable(op, value, dtype):
    """``value`` checked to fit ``dtype`` (Paddle refuses a fill that would overflow; inf and
    nan are fine for floating types only)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f" and not math.isfinite(value):
        return value
    if dtype.kind == "b":
        low, high = 0, 1
    elif dtype.kind in "iu":
        low, high = np.iinfo(dtype).min, np.iinfo(dtype).max
    elif dtype.kind == "f":
        low, high = float(np.finfo(dtype).min), float(np.finfo(dtype).max)
    else:
        return value
    if not low <= value <= high:  # false for nan too
        raise InvalidArgument(expected(op, "attribute 'value'",
                                       f"a value in [{low}, {high}] (the range of {dtype})",
                                       value))
    return value


def _fill_any_like(ctx, x):
    dtype = ctx.attrs["dtype"]
    dtype = x.dtype if dtype == -1 else to_numpy_dtype(dtype)
    value = _representable("fill_any_like", ctx.attrs["value"], dtype)
    return ctx.xp.full(x.shape, value, dtype=dtype)


def_op("fill_any_like", inputs=["X"], outputs=["Out"],
       attrs={"value": ("float", 0.0), "dtype": ("int", -1)},
       infer_shape=_fill_any_like_infer, share_lod=("X", ["Out"]), kernel=_fill_any_like,
       plain_kernel=_fill_any_like,
       grad=no_gradient,
       doc="Out = a tensor shaped like X, every element ``value``, of type ``dtype`` "
           "(-1: X's type).")

def _zeros_like(ctx, x):
    """Zeros like a tensor (keeping its LoD), or like each tensor of a tensor array (the
    zero gradient of an array that nothing read)."""
    if isinstance(x, LoDTensorArray):
        return LoDTensorArray(_zeros_like(ctx, t) for t in x)
    array = x.array
    if type(array) is np.ndarray:  # zeros(shape, dtype) costs a quarter of zeros_like
        return LoDTensor(np.zeros(array.shape, array.dtype), x._lod)
    return LoDTensor(ctx.xp.zeros_like(array), x._lod)


def _zeros_like_plain(ctx, x):
    # (a dense X: its LoD is kept for Out by the plain run)
    return ctx.xp.zeros(x.shape, x.dtype)


def _zeros_like_infer(ctx):
    same_shape("X", "Out")(ctx)
    ctx.output_var("Out").type = ctx.input_var_type("X")


def_op("fill_zeros_like", inputs=["X"], outputs=["Out"],
       infer_shape=_zeros_like_infer, share_lod=("X", ["Out"]), kernel=_zeros_like,
       plain_kernel=_zeros_like_plain, lod_aware=True, traits=("runtime_outputs",),
       grad=no_gradient,
       doc="Out = zeros shaped and typed like X (for a tensor array, like each of its "
           "tensors).")


# --- random initialisers -------------------------------------------------------------------
def _random_infer(ctx):
    ctx.set_output("Out", _attr_shape_or_tensor(ctx, list_gives_rank=True),
                   dtype_attr(ctx, "dtype"))


def _uniform_infer(ctx):
    if not ctx.attr("min") < ctx.attr("max"):
        ctx.fail("attribute 'min'", f"less than max ({ctx.attr('max')})", ctx.attr("min"))
    for name in ("diag_num", "diag_step"):
        if ctx.attr(name) < 0:
            ctx.fail(f"attribute '{name}'", "no less than 0", ctx.attr(name))
    _random_infer(ctx)


def _set_diagonal(values, attrs, op_type):
    """Paddle's diag_num/diag_step/diag_val: values.flat[i * (diag_step + 1)] = diag_val for
    i < diag_num (in place)."""
    diag_num, diag_step = attrs["diag_num"], attrs["diag_step"]
    if diag_num <= 0:
        return
    flat = values.reshape(-1)
    last = (diag_num - 1) * (diag_step + 1)
    if last >= flat.size:
        raise InvalidArgument(expected(op_type, "attribute 'diag_num'",
                                       f"diagonal positions inside the {flat.size} elements",
                                       f"diag_num={diag_num}, diag_step={diag_step}"))
    flat[np.arange(diag_num) * (diag_step + 1)] = attrs["diag_val"]


def _uniform_random(ctx, shape_tensor, shape_list):
    attrs = ctx.attrs
    shape = _runtime_shape("uniform_random", shape_tensor, shape_list, attrs["shape"])
    dtype = to_numpy_dtype(attrs["dtype"])
    values = ctx.random_state().uniform(attrs["min"], attrs["max"], shape).astype(dtype)
    _set_diagonal(values, attrs, "uniform_random")
    return _as_declared_out(ctx, ctx.xp.asarray(values))


def_op("uniform_random", inputs=["ShapeTensor?", "ShapeTensorList[]?"], outputs=["Out"],
       attrs={**_CREATION_ATTRS, "min": ("float", -1.0), "max": ("float", 1.0),
              "seed": ("int", 0), "diag_num": ("int", 0), "diag_step": ("int", 0),
              "diag_val": ("float", 1.0)},
       infer_shape=_uniform_infer, kernel=_uniform_random,
       host_reads="ShapeTensor / ShapeTensorList: Out's shape",
       traits=("stateful", "runtime_outputs", "infer_from_attrs"),
       doc="Out ~ U[min, max) of shape ``shape`` (or the shape tensors); then, when "
           "diag_num > 0, Out.flat[i * (diag_step + 1)] = diag_val for i < diag_num. "
           "seed != 0 fixes the stream; 0 uses the program's random_seed. An Out declared "
           "SelectedRows gets the tensor as its value (its rows and height kept).")


def _gaussian_random(ctx, shape_tensor, shape_list):
    attrs = ctx.attrs
    shape = _runtime_shape("gaussian_random", shape_tensor, shape_list, attrs["shape"])
    values = ctx.random_state().normal(attrs["mean"], attrs["std"], shape)
    return ctx.xp.asarray(values.astype(to_numpy_dtype(attrs["dtype"])))


def_op("gaussian_random", inputs=["ShapeTensor?", "ShapeTensorList[]?"], outputs=["Out"],
       attrs={**_CREATION_ATTRS, "mean": ("float", 0.0), "std": ("float", 1.0),
              "seed": ("int", 0)},
       infer_shape=_random_infer, kernel=_gaussian_random,
       traits=("stateful", "infer_from_attrs"),
       host_reads="ShapeTensor / ShapeTensorList: Out's shape",
       doc="Out ~ N(mean, std^2) of shape ``shape`` (or the shape tensors).")


# --- assign --------------------------------------------------------------------------------
def _assign_infer(ctx):
    if ctx.has_input("X"):
        ctx.set_output("Out", ctx.input_shape("X"), ctx.input_dtype("X"),
                       type=ctx.input_var_type("X"))


def _assign(ctx, x):
    """Copies, so that later writes to Out never reach X (Paddle copies too)."""
    if x is None:
        return None
    if isinstance(x, LoDTensor):
        return LoDTensor(x.array.copy() if x.array is not None else None, x._lod)
    if isinstance(x, LoDTensorArray):
        return LoDTensorArray(LoDTensor(t.array.copy(), t.lod()) for t in x)
    if isinstance(x, SelectedRows):
        return SelectedRows(x.rows(), x.height(), LoDTensor(x.value.array.copy(), x.value.lod()))
    raise InvalidArgument(expected("assign", "input 'X'",
                                   "a LoDTensor, LoDTensorArray or SelectedRows",
                                   type(x).__name__))


def _assign_grad(g):
    dx = g.input_grad("X")
    if not g.has_input("X") or all(n == EMPTY_VAR_NAME for n in dx):
        return []
    return [g.op("assign", {"X": g.output_grad("Out")}, {"Out": dx}, {})]


def_op("assign", inputs=["X?"], outputs=["Out"], infer_shape=_assign_infer,
       share_lod=("X", ["Out"]), grad=_assign_grad, kernel=_assign, lod_aware=True,
       traits=("infer_from_x",),
       doc="Out = copy of X (a LoDTensor with its LoD, a LoDTensorArray or SelectedRows); "
           "the gradient is assign(Out@GRAD).")


# --- cast ----------------------------------------------------------------------------------
def _cast_infer(ctx):
    ctx.check("out_dtype" in ctx.attrs(), "attribute 'out_dtype'", "a data type number",
              "none")
    ctx.set_output("Out", ctx.input_shape("X"), dtype_attr(ctx, "out_dtype"))


def _cast_grad(g):
    dx = g.input_grad("X")
    if all(n == EMPTY_VAR_NAME for n in dx):
        return []
    in_dtype = g.attrs.get("in_dtype")
    if in_dtype is None:
        in_dtype = int(g.fwd.block.var_recursive(g.input("X")[0]).dtype)
    attrs = dict(g.attrs, in_dtype=g.attrs["out_dtype"], out_dtype=in_dtype)
    return [g.op("cast", {"X": g.output_grad("Out")}, {"Out": dx}, attrs)]


def _cast(ctx, x):
    return x.astype(to_numpy_dtype(ctx.attrs["out_dtype"]))


def_op("cast", inputs=["X"], outputs=["Out"],
       attrs={"in_dtype": ("int", None), "out_dtype": ("int", None)},
       infer_shape=_cast_infer, share_lod=("X", ["Out"]), grad=_cast_grad,
       kernel=_cast, plain_kernel=_cast,
       doc="Out = X converted to out_dtype (floats to ints truncate toward zero; non-zero "
           "to bool is true). The gradient is cast(Out@GRAD) back to in_dtype.")


# --- increment -----------------------------------------------------------------------------
def _increment_infer(ctx):
    shape = ctx.input_shape("X")
    n = numel_of(shape)
    ctx.check(n in (-1, 1), "input 'X'", "a tensor of exactly one element",
              f"shape {list(shape)}")
    ctx.set_output("Out", shape, ctx.input_dtype("X"))


def _increment(ctx, x):
    return x + _step_like(ctx, x)


def _step_like(ctx, x):
    """The op's step converted to X's type once, as a 0-d array (adding it keeps X's shape;
    adding two arrays costs a third of adding a NumPy scalar), kept for the next run."""
    cache = getattr(ctx, "cache", None)
    step = cache.get("step") if cache is not None else None
    if step is None or step.dtype != x.dtype or not isinstance(step, type(x)):
        step = ctx.xp.asarray(x.dtype.type(ctx.attrs["step"]))
        if isinstance(step, np.ndarray):
            step.flags.writeable = False  # shared by every run: never written
        if cache is not None:
            cache["step"] = step
    return step


def _increment_step(ctx, ins, out, kernel_step):
    """increment's host step: X a host array of the type of the step the kernel kept last
    (anything else goes to the kernel, which keeps the step for X's type)."""
    counter, = ins
    new, cache = LoDTensor, ctx.cache
    held = [None, None]  # the kept step's type and the step

    def step():
        x = counter.value
        try:
            if x.array.dtype is held[0]:
                out.value = new(x.array + held[1], x._lod)
                return
        except AttributeError:  # no tensor
            pass
        kernel_step()
        step_array = cache.get("step")
        if step_array.__class__ is np.ndarray:
            held[:] = step_array.dtype, step_array
    return step


def _increment_inverse(g):
    """No gradient flows through a counter; backward instead steps it back (Out -> X by
    -step), so the grad ops of array reads and writes indexed by it see the values their
    forward ops saw."""
    attrs = dict(g.attrs, step=-g.attrs.get("step", 1.0))
    return [g.op("increment", {"X": g.output("Out")}, {"Out": g.input("X")}, attrs)]


def_op("increment", inputs=["X"], outputs=["Out"], attrs={"step": ("float", 1.0)},
       infer_shape=_increment_infer, share_lod=("X", ["Out"]),
       grad=_increment_inverse, traits=("inverse_in_backward",),
       kernel=_increment, host_step=_increment_step, kernel_place_of="X",
       doc="Out = X + step, X one element; step is first converted to X's type (so an "
           "int counter adds int(step)). In backward (when X is left differentiable) an "
           "increment by -step restores X.")


# --- range and linspace: 1-D sequences from one-element tensors ---------------------------------
def _host_scalars(*tensors):
    """The value of each one-element tensor as a Python number (device values: one copy).
    range and linspace read them on the host: they decide Out's length."""
    return [values[0] for values in _host_lists([t.reshape(-1)[:1] for t in tensors])]


def _range_size(start, end, step):
    """Paddle's element count: ceil(|end - start| / |step|), refusing a step that never
    reaches ``end``."""
    if step == 0:
        raise InvalidArgument(expected("range", "input 'Step'", "a non-zero value", step))
    if (start < end and step < 0) or (start > end and step > 0):
        raise InvalidArgument(expected("range", "input 'Step'",
                                       f"a step that goes from {start} towards {end}", step))
    return int(math.ceil(abs((end - start) / step)))


def _range_infer(ctx):
    for slot in ("Start", "End", "Step"):
        n = numel_of(ctx.input_shape(slot))
        ctx.check(n in (1, -1), f"input '{slot}'", "one element", list(ctx.input_shape(slot)))
    ctx.set_output("Out", (-1,), ctx.input_dtype("Start"))


def _range(ctx, start, end, step):
    first, last, stride = _host_scalars(start, end, step)
    size = _range_size(first, last, stride)
    values = first + stride * ctx.xp.arange(size)
    return values.astype(start.dtype, copy=False)


def_op("range", inputs=["Start", "End", "Step"], outputs=["Out"], infer_shape=_range_infer,
       kernel=_range, grad=no_gradient,
       host_reads="Start, End, Step: they decide Out's length",
       doc="Out[i] = Start + i * Step for i < ceil(|End - Start| / |Step|): the half-open "
           "interval [Start, End) in steps (Start, End and Step one element each, of Out's "
           "type). A step of 0, or one pointing away from End, is refused.")


def _linspace_infer(ctx):
    for slot in ("Start", "Stop", "Num"):
        n = numel_of(ctx.input_shape(slot))
        ctx.check(n in (1, -1), f"input '{slot}'", "one element", list(ctx.input_shape(slot)))
    ctx.set_output("Out", (-1,), ctx.input_dtype("Start"))


def _linspace(ctx, start, stop, num):
    first, last, count = _host_scalars(start, stop, num)
    count = int(count)
    if count <= 0:
        raise InvalidArgument(expected("linspace", "input 'Num'", "a count above 0", count))
    step = (last - first) / (count - 1) if count > 1 else 0.0
    values = first + step * ctx.xp.arange(count, dtype=np.float64)
    return values.astype(start.dtype)


def_op("linspace", inputs=["Start", "Stop", "Num"], outputs=["Out"],
       infer_shape=_linspace_infer, kernel=_linspace, grad=no_gradient,
       host_reads="Start, Stop, Num: Num is Out's length, Start and Stop its values",
       doc="Out[i] = Start + i * (Stop - Start) / (Num - 1) for i < Num (Out = [Start] when "
           "Num is 1); Out has Start's type.")


# --- eye, diag and tril_triu --------------------------------------------------------------------
def _eye_columns(attrs):
    columns = attrs["num_columns"]
    return attrs["num_rows"] if columns == -1 else columns


def _eye_infer(ctx):
    rows, columns = ctx.attr("num_rows"), _eye_columns(ctx.attrs())
    ctx.check(rows >= 0, "attribute 'num_rows'", "no less than 0", rows)
    ctx.check(columns >= 0, "attribute 'num_columns'", "no less than 0 (or -1)", columns)
    ctx.set_output("Out", (rows, columns), dtype_attr(ctx, "dtype"))


def_op("eye", outputs=["Out"],
       attrs={"num_rows": ("long", 0), "num_columns": ("long", -1),
              "dtype": ("int", int(VarType.FP32))},
       infer_shape=_eye_infer, grad=no_gradient,
       kernel=lambda ctx: ctx.xp.eye(ctx.attrs["num_rows"], _eye_columns(ctx.attrs),
                                     dtype=to_numpy_dtype(ctx.attrs["dtype"])),
       doc="Out = the identity matrix of num_rows x num_columns (num_columns -1: square).")


def _diag_infer(ctx):
    shape = ctx.input_shape("Diagonal")
    ctx.check(len(shape) == 1, "input 'Diagonal'", "a 1-D tensor", list(shape))
    ctx.set_output("Out", (shape[0], shape[0]), ctx.input_dtype("Diagonal"))


def_op("diag", inputs=["Diagonal"], outputs=["Out"], infer_shape=_diag_infer,
       grad=no_gradient, kernel=lambda ctx, d: ctx.xp.diag(d),
       doc="Out = the N x N matrix with Diagonal (N values) on its diagonal, zeros elsewhere.")


def _tril_triu_mask(xp, shape, attrs):
    rows, columns = shape[-2], shape[-1]
    diagonal = attrs["diagonal"]
    if attrs["lower"]:
        return xp.tri(rows, columns, diagonal, dtype=bool)
    return ~xp.tri(rows, columns, diagonal - 1, dtype=bool)


def _tril_triu_infer(ctx):
    shape = ctx.input_shape("X")
    ctx.check(len(shape) >= 2, "input 'X'", "a tensor of rank 2 or more", list(shape))
    same_shape("X", "Out")(ctx)


def _tril_triu(ctx, x):
    mask = _tril_triu_mask(ctx.xp, x.shape, ctx.attrs)
    return ctx.xp.where(mask, x, 0).astype(x.dtype, copy=False)


_TRIL_TRIU_ATTRS = {"diagonal": ("int", 0), "lower": ("bool", True)}
def_op("tril_triu", inputs=["X"], outputs=["Out"], attrs=_TRIL_TRIU_ATTRS,
       infer_shape=_tril_triu_infer,
       grad=grad_maker("tril_triu_grad", out_grads=["Out"], in_grads=["X"]),
       kernel=_tril_triu,
       doc="Out = X on and below (lower) or on and above (upper) the diagonal ``diagonal`` of "
           "each matrix in the last two dims (0: the main one, positive: above it), zeros "
           "elsewhere. dX = dOut under the same mask.")
def_op("tril_triu_grad", inputs=["Out@GRAD"], outputs=["X@GRAD"], attrs=_TRIL_TRIU_ATTRS,
       infer_shape=same_shape("Out@GRAD", "X@GRAD"),
       kernel=lambda ctx, dout: _tril_triu(ctx, dout), doc="Gradient of tril_triu.")


# --- randint, randperm and the random *_batch_size_like ops ---------------------------------------
def _randint_infer(ctx):
    ctx.check(ctx.attr("low") < ctx.attr("high"), "attribute 'low'",
              f"less than high ({ctx.attr('high')})", ctx.attr("low"))
    ctx.set_output("Out", _attr_shape_or_tensor(ctx, list_gives_rank=True),
                   dtype_attr(ctx, "dtype"))


def _randint(ctx, shape_tensor, shape_list):
    attrs = ctx.attrs
    shape = _runtime_shape("randint", shape_tensor, shape_list, attrs["shape"])
    values = ctx.random_state().randint(attrs["low"], attrs["high"], shape, dtype=np.int64)
    return ctx.xp.asarray(values.astype(to_numpy_dtype(attrs["dtype"])))


def_op("randint", inputs=["ShapeTensor?", "ShapeTensorList[]?"], outputs=["Out"],
       attrs={"shape": ("longs", []), "low": ("int", 0), "high": ("int", 0),
              "seed": ("int", 0), "dtype": ("int", int(VarType.INT64))},
       infer_shape=_randint_infer, kernel=_randint, grad=no_gradient, traits=("stateful",),
       host_reads="ShapeTensor / ShapeTensorList: Out's shape",
       doc="Out ~ uniform integers in [low, high) of shape ``shape`` (or the shape tensors). "
           "seed != 0 fixes the stream; 0 uses the program's seed.")


def _randperm_infer(ctx):
    n = ctx.attr("n")
    ctx.check(n > 0, "attribute 'n'", "a count above 0", n)
    ctx.set_output("Out", (n,), dtype_attr(ctx, "dtype"))


def_op("randperm", outputs=["Out"],
       attrs={"n": ("int", 0), "dtype": ("int", int(VarType.INT64)), "seed": ("int", 0)},
       infer_shape=_randperm_infer, grad=no_gradient, traits=("stateful",),
       kernel=lambda ctx: ctx.xp.asarray(ctx.random_state().permutation(
           ctx.attrs["n"]).astype(to_numpy_dtype(ctx.attrs["dtype"]))),
       doc="Out = a random permutation of 0 .. n-1.")


def _batch_size_like_infer(ctx):
    shape = list(ctx.attr("shape"))
    in_shape = ctx.input_shape("Input")
    in_idx, out_idx = ctx.attr("input_dim_idx"), ctx.attr("output_dim_idx")
    ctx.check(bool(shape), "attribute 'shape'", "a non-empty list", shape)
    ctx.check(0 <= out_idx < len(shape), "attribute 'output_dim_idx'",
              f"in [0, {len(shape)}) (the rank of attribute 'shape')", out_idx)
    ctx.check(0 <= in_idx < len(in_shape), "attribute 'input_dim_idx'",
              f"in [0, {len(in_shape)}) (the rank of Input)", in_idx)
    shape[out_idx] = in_shape[in_idx]
    ctx.set_output("Out", tuple(shape), dtype_attr(ctx, "dtype"))


def _batch_shape(attrs, x):
    shape = list(attrs["shape"])
    shape[attrs["output_dim_idx"]] = x.shape[attrs["input_dim_idx"]]
    return tuple(shape)


def _uniform_batch_like(ctx, x):
    attrs = ctx.attrs
    values = ctx.random_state().uniform(attrs["min"], attrs["max"], _batch_shape(attrs, x))
    values = values.astype(to_numpy_dtype(attrs["dtype"]))
    _set_diagonal(values, attrs, "uniform_random_batch_size_like")
    return ctx.xp.asarray(values)


def _gaussian_batch_like(ctx, x):
    attrs = ctx.attrs
    values = ctx.random_state().normal(attrs["mean"], attrs["std"], _batch_shape(attrs, x))
    return ctx.xp.asarray(values.astype(to_numpy_dtype(attrs["dtype"])))


_BATCH_LIKE_ATTRS = {"shape": ("ints", []), "input_dim_idx": ("int", 0),
                     "output_dim_idx": ("int", 0), "seed": ("int", 0),
                     "dtype": ("int", int(VarType.FP32))}
def_op("uniform_random_batch_size_like", inputs=["Input"], outputs=["Out"],
       attrs={**_BATCH_LIKE_ATTRS, "min": ("float", -1.0), "max": ("float", 1.0),
              "diag_num": ("int", 0), "diag_step": ("int", 0), "diag_val": ("float", 1.0)},
       infer_shape=_batch_size_like_infer, kernel=_uniform_batch_like, grad=no_gradient,
       traits=("stateful",),
       doc="Out ~ U[min, max) of ``shape`` with shape[output_dim_idx] = "
           "Input.dims[input_dim_idx] (the batch size); diag_num > 0 sets diagonal values "
           "as uniform_random does.")
def_op("gaussian_random_batch_size_like", inputs=["Input"], outputs=["Out"],
       attrs={**_BATCH_LIKE_ATTRS, "mean": ("float", 0.0), "std": ("float", 1.0)},
       infer_shape=_batch_size_like_infer, kernel=_gaussian_batch_like, grad=no_gradient,
       traits=("stateful",),
       doc="Out ~ N(mean, std^2) of ``shape`` with shape[output_dim_idx] = "
           "Input.dims[input_dim_idx] (the batch size).")
