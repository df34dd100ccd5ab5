"""Shape, index and layout layers: reshape (reshape2), transpose (transpose2), squeeze
(squeeze2), unsqueeze (unsqueeze2), split, stack, slice, strided_slice, gather, gather_nd,
scatter, expand, flatten (flatten2), unstack, pad, pad2d, crop, crop_tensor, and the layers
of tensor arrays, selected rows and click-through-rate features.

Where Fluid 1.8 takes a Variable for a list argument (slice's starts, split's sections,
expand's expand_times, ...), so do these: a whole list as one int tensor, or a list holding
Variables among ints, each int then becoming a ``fill_constant`` of shape [1]."""
from ...errors import InvalidArgument, InvalidAssertion, InvalidType
from ...tensor.dtypes import VarType
from ...framework.type_checks import require_variable
from ...framework import program as _fw
from ...framework.program import Variable
from ...framework.transaction import append_fresh, append_one_op, append_with_xshape, \
    atomic, lean, replayed
from ..layer_helper import LayerHelper
from .arg_checks import (INT, NAME, NUMBER, Refused, _is_int, activation, boolean, checks,
                         dims, int_in, int_typed, ints, one_of, optional, or_variable,
                         plain_ints, sections, variable, variable_list)

__all__ = ["reshape", "transpose", "squeeze", "unsqueeze", "split", "stack", "slice",
           "strided_slice", "gather", "expand", "expand_as", "flatten", "unstack", "gather_nd",
           "scatter", "scatter_nd_add", "scatter_nd", "multiplex", "shard_index", "pad",
           "pad2d", "pad_constant_like", "crop", "crop_tensor", "tensor_array_to_tensor",
           "lod_append", "merge_selected_rows", "get_tensor_from_selected_rows", "hash",
           "continuous_value_model", "filter_by_instag", "autoincreased_step_counter"]


_check_variable = require_variable


def _shape_list(value):
    """reshape's shape: a Variable, or a list of ints and Variables (the int values are
    the layer's asserts, as in Fluid 1.8)."""
    if plain_ints(value):
        return
    if not isinstance(value, Variable) and (not isinstance(value, (list, tuple)) or not all(
            isinstance(d, Variable) or _is_int(d) for d in value)):
        raise Refused("a list of ints (or Variables), or a Variable", wrong_type=True)


def _assert_reshape_dims(x, shape, plain=False):
    """At most one -1, a 0 (copy the input's dim) only where the input has that dim, every
    other dim positive: InvalidAssertion otherwise, as Fluid 1.8 asserts. (``plain``: the
    caller found ``shape`` to be plain ints.)"""
    if plain and shape.count(-1) < 2 and min(shape, default=0) > -2 and \
            0 not in shape[len(x.shape):]:
        return  # (plain ints that pass, told in a few C calls)
    unknown = [i for i, d in enumerate(shape) if not isinstance(d, Variable) and d == -1]
    bad = ("at most one -1" if len(unknown) > 1 else
           next((f"0 only at an index below the input's rank {len(x.shape)}"
                 for i, d in enumerate(shape) if not isinstance(d, Variable) and d == 0
                 and i >= len(x.shape)), None) or
           next(("dims > 0 besides one -1 and 0s" for d in shape
                 if not isinstance(d, Variable) and d < -1), None))
    if bad:
        raise InvalidAssertion(f"reshape: shape expected {bad}, but received {list(shape)}")


@lean  # (one op through append_with_xshape, or a transaction of its own)
@checks(x=variable, shape=_shape_list, actual_shape=optional(variable), act=activation,
        inplace=boolean, name=NAME)
def reshape(x, shape, actual_shape=None, act=None, inplace=False, name=None):
    """``x`` with a new shape (``reshape2``): one dim may be -1 (inferred), 0 copies the
    input's dim. ``shape`` may be a Variable or hold Variables (run-time dims)."""
    _check_variable("reshape", "x", x)
    if name is None and act is None and not inplace and actual_shape is None:
        plain = plain_ints(shape)
        if plain or isinstance(shape, (list, tuple)) and not any(isinstance(d, Variable)
                                                                 for d in shape):
            _assert_reshape_dims(x, shape, plain)
            return append_with_xshape(_fw._main_program.current_block(), "reshape2", x,
                                      {"shape": list(shape) if plain else
                                       [int(d) for d in shape]}, "reshape2")
    with atomic():
        return _reshape(x, shape, actual_shape, act, inplace, name)


reshape = replayed(reshape, globals())


def _reshape(x, shape, actual_shape, act, inplace, name):
    from .tensor import cast, fill_constant
    helper = LayerHelper("reshape2", act=act, name=name)
    inputs = {"X": [x]}
    attrs = {}
    if isinstance(shape, Variable):
        shape.stop_gradient = True
        inputs["Shape"] = [shape]
    elif isinstance(shape, (list, tuple)):
        _assert_reshape_dims(x, shape)
        attrs["shape"] = [-1 if isinstance(d, Variable) else int(d) for d in shape]
        if any(isinstance(d, Variable) for d in shape):
            inputs["ShapeTensor"] = [
                (d if d.dtype == VarType.INT32 else cast(d, "int32")) if isinstance(d, Variable)
                else fill_constant([1], "int32", d, force_cpu=True) for d in shape]
        elif isinstance(actual_shape, Variable):
            actual_shape.stop_gradient = True
            inputs["Shape"] = [actual_shape]
    else:
        raise InvalidArgument(f"reshape: shape expected list, tuple or Variable, but received "
                              f"{type(shape).__name__}")
    out = x if inplace else helper.create_variable_for_type_inference(dtype=x.dtype)
    x_shape = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(type="reshape2", inputs=inputs, outputs={"Out": [out], "XShape": [x_shape]},
                     attrs=attrs)
    return helper.append_activation(out)


@lean  # (one op through append_with_xshape, or a transaction of its own)
@checks(x=variable, perm=ints(None, 0), name=NAME)
def transpose(x, perm, name=None):
    """Dims permuted by ``perm`` (``transpose2``)."""
    _check_variable("transpose", "x", x)
    if len(perm) != len(x.shape):
        raise InvalidArgument(f"transpose: perm expected {len(x.shape)} dims (the input's "
                              f"rank), but received {list(perm)}")
    if name is None:
        return append_with_xshape(_fw._main_program.current_block(), "transpose2", x,
                                  {"axis": list(perm)}, "transpose")
    with atomic():
        helper = LayerHelper("transpose", name=name)
        out = helper.create_variable_for_type_inference(x.dtype)
        x_shape = helper.create_variable_for_type_inference(x.dtype)
        helper.append_op(type="transpose2", inputs={"X": [x]},
                         outputs={"Out": [out], "XShape": [x_shape]},
                         attrs={"axis": list(perm)})
    return out


transpose = replayed(transpose, globals())


@lean  # (one op through append_with_xshape, or a transaction of its own)
@checks(input=variable, axes=or_variable(ints()), name=NAME)
def squeeze(input, axes, name=None):
    """Size-1 dims ``axes`` removed (``squeeze2``)."""
    _check_variable("squeeze", "input", input)
    if name is None and not isinstance(axes, Variable):
        return append_with_xshape(_fw._main_program.current_block(), "squeeze2", input,
                                  {"axes": list(axes)}, "squeeze")
    with atomic():
        helper = LayerHelper("squeeze", name=name)
        out = helper.create_variable_for_type_inference(dtype=input.dtype)
        x_shape = helper.create_variable_for_type_inference(dtype=input.dtype)
        helper.append_op(type="squeeze2", inputs={"X": [input]},
                         outputs={"Out": [out], "XShape": [x_shape]},
                         attrs={"axes": list(axes)})
    return out


squeeze = replayed(squeeze, globals())


def _int_tensor_list(helper, values):
    """One int32 tensor per entry, as Fluid 1.8 passes a list holding Variables: each
    Variable as it is, each int as a ``fill_constant`` of shape [1] on the CPU."""
    from .tensor import fill_constant
    tensors = []
    for value in values:
        if isinstance(value, Variable):
            value.stop_gradient = True
            tensors.append(value)
        else:
            out = helper.create_variable_for_type_inference("int32")
            tensors.append(fill_constant([1], "int32", int(value), force_cpu=True, out=out))
    return tensors


def _holds_variable(values):
    return isinstance(values, (list, tuple)) and any(isinstance(v, Variable) for v in values)


def int_list_or_variable(low=None, one_int=False):
    """A list of ints (each >= ``low``) and Variables, or a Variable; an int too when
    ``one_int``."""
    def rule(value):
        if isinstance(value, Variable) or (one_int and _is_int(value) and (
                low is None or value >= low)):
            return
        if isinstance(value, (list, tuple)) and all(
                isinstance(v, Variable) or (_is_int(v) and (low is None or v >= low))
                for v in value):
            return
        bound = f" >= {low}" if low is not None else ""
        head = f"an int{bound}, " if one_int else ""
        # a value out of range is a ValueError; a container or an item of another type a
        # TypeError (an int where only a list goes is the wrong type too, as in Fluid)
        if isinstance(value, (list, tuple)):
            wrong_type = not all(isinstance(v, Variable) or _is_int(v) for v in value)
        else:
            wrong_type = not (one_int and _is_int(value))
        raise Refused(f"{head}a list of ints{bound} and Variables, or a Variable",
                      wrong_type=wrong_type)
    return rule


@lean  # (one op through append_with_xshape, or a transaction of its own)
@checks(input=variable, axes=int_list_or_variable(one_int=True), name=NAME)
def unsqueeze(input, axes, name=None):
    """Size-1 dims inserted at ``axes`` (``unsqueeze2``), one after the other. ``axes`` may
    be an int, a list holding ints and Variables (AxesTensorList) or a Variable
    (AxesTensor)."""
    if _is_int(axes):
        axes = [axes]
    if name is None and not isinstance(axes, Variable) and not _holds_variable(axes):
        return append_with_xshape(_fw._main_program.current_block(), "unsqueeze2", input,
                                  {"axes": [int(a) for a in axes]}, "unsqueeze2")
    with atomic():
        return _unsqueeze(input, axes, name)


unsqueeze = replayed(unsqueeze, globals())


def _unsqueeze(input, axes, name):
    helper = LayerHelper("unsqueeze2", name=name)
    inputs = {"X": [input]}
    attrs = {}
    if isinstance(axes, Variable):
        axes.stop_gradient = True
        inputs["AxesTensor"] = [axes]
    elif _holds_variable(axes):
        inputs["AxesTensorList"] = _int_tensor_list(helper, axes)
    else:
        attrs["axes"] = [int(a) for a in axes]
    out = helper.create_variable_for_type_inference(dtype=input.dtype)
    x_shape = helper.create_variable_for_type_inference(dtype=input.dtype)
    helper.append_op(type="unsqueeze2", inputs=inputs,
                     outputs={"Out": [out], "XShape": [x_shape]}, attrs=attrs)
    return out


@lean  # (one op through append_fresh, or a transaction of its own)
@checks(input=variable, num_or_sections=sections, dim=or_variable(int_typed(INT)), name=NAME)
def split(input, num_or_sections, dim=-1, name=None):
    """A list of pieces along ``dim``: ``num`` equal ones, or the given section sizes (one
    may be -1). Sections may hold Variables (SectionsTensorList) and ``dim`` may be a
    Variable (AxisTensor)."""
    shape = input.shape
    attrs = {"num": num_or_sections if _is_int(num_or_sections) else 0}
    if not isinstance(dim, Variable):
        if not -len(shape) <= dim < len(shape):
            raise InvalidArgument(f"split: dim expected in [{-len(shape)}, {len(shape)}), but "
                                  f"received {dim}")
        dim = dim + len(shape) if dim < 0 else dim
        attrs["axis"] = dim
    sections = None
    if _is_int(num_or_sections):
        if _is_int(dim) and shape[dim] > 0 and shape[dim] % num_or_sections:
            raise InvalidArgument(f"split: num_or_sections expected to divide dim {dim} of "
                                  f"size {shape[dim]}, but received {num_or_sections}")
        num = num_or_sections
    else:
        sections = list(num_or_sections)
        if sum(1 for s in sections if not isinstance(s, Variable) and s == -1) > 1:
            raise InvalidArgument(f"split: num_or_sections expected at most one -1, but "
                                  f"received {sections}")
        num = len(sections)
        attrs["sections"] = [-1 if isinstance(s, Variable) else int(s) for s in sections]
    if name is None and not isinstance(dim, Variable) and not _holds_variable(sections):
        program = _fw._main_program  # (the usual call: ints, no name)
        return append_fresh(program.blocks[program.current_block_idx], "split",
                            {"X": (input.name,)}, {"Out": [(input.dtype, False)] * num},
                            attrs, "split")["Out"]
    with atomic():
        helper = LayerHelper("split", name=name)
        inputs = {"X": [input]}
        if isinstance(dim, Variable):
            dim.stop_gradient = True
            inputs["AxisTensor"] = [dim]
        if _holds_variable(sections):
            inputs["SectionsTensorList"] = _int_tensor_list(helper, sections)
        outs = [helper.create_variable_for_type_inference(dtype=input.dtype)
                for _ in range(num)]
        helper.append_op(type="split", inputs=inputs, outputs={"Out": outs}, attrs=attrs)
        return outs


def _stack_input(value):
    if not isinstance(value, Variable):
        variable_list(value)


@lean  # (one op through append_fresh, or a transaction of its own)
@checks(x=_stack_input, axis=INT)
def stack(x, axis=0):
    """Tensors of one shape stacked along a new dim ``axis`` (``stack``). A single Variable
    is a list of one; a tensor array (alone) has its items stacked by
    ``tensor_array_to_tensor`` with use_stack, as Fluid 1.8 does."""
    xs = [x] if isinstance(x, Variable) else list(x)
    if xs[0].type != VarType.LOD_TENSOR_ARRAY:  # (the usual call: tensors)
        program = _fw._main_program
        return append_fresh(program.blocks[program.current_block_idx], "stack",
                            {"X": tuple(var.name for var in xs)}, {"Y": [(xs[0].dtype, False)]},
                            {"axis": axis}, "stack")["Y"][0]
    with atomic():
        return _stack_array(x, xs, axis)


def _stack_array(x, xs, axis):
    helper = LayerHelper("stack", x=x)
    out = helper.create_variable_for_type_inference(xs[0].dtype)
    if len(xs) != 1:
        raise InvalidArgument(f"stack: x expected one LoDTensorArray alone, but received "
                              f"{len(xs)} Variables")
    index = helper.create_variable_for_type_inference("int32")
    helper.append_op(type="tensor_array_to_tensor", inputs={"X": xs},
                     outputs={"Out": [out], "OutIndex": [index]},
                     attrs={"axis": axis, "use_stack": True})
    return out


def _bounds_inputs(helper, name, values, slots, inputs, attrs, infer_flags):
    """Fluid 1.8's starts/ends/strides: a Variable (``slots[0]``; every bound unknown at
    compile time), a list holding Variables (``slots[1]``; -1 in the attribute and in
    infer_flags where a Variable stands) or ints."""
    if isinstance(values, Variable):
        values.stop_gradient = True
        inputs[slots[0]] = [values]
        infer_flags[:] = [-1] * len(infer_flags)
        return
    attrs[name] = [-1 if isinstance(v, Variable) else int(v) for v in values]
    if _holds_variable(values):
        inputs[slots[1]] = _int_tensor_list(helper, values)
        for i, v in enumerate(values):
            if isinstance(v, Variable):
                infer_flags[i] = -1


def _one_per_axis(layer, axes, **named):
    for name, values in named.items():
        if not isinstance(values, Variable) and len(values) != len(axes):
            raise InvalidArgument(f"{layer}: {name} expected {len(axes)} entries (one per "
                                  f"axis), but received {list(values)}")


@lean  # (ints: one op through append_one_op; bounds in Variables: a transaction of its own)
@checks(input=variable, axes=ints(None, 0), starts=int_list_or_variable(),
        ends=int_list_or_variable())
def slice(input, axes, starts, ends):
    """``input[starts:ends]`` on the dims ``axes`` (``slice``). ``starts`` / ``ends`` may be
    Variables (StartsTensor / EndsTensor) or lists holding Variables (StartsTensorList /
    EndsTensorList)."""
    _one_per_axis("slice", axes, starts=starts, ends=ends)
    if isinstance(starts, Variable) or isinstance(ends, Variable) or \
            _holds_variable(starts) or _holds_variable(ends):
        with atomic():
            return _slice_of_tensors(input, axes, starts, ends)
    program = _fw._main_program  # (the block a LayerHelper appends to)
    return append_one_op(program.blocks[program.current_block_idx], "slice",
                         {"Input": (input.name,)},
                         {"axes": list(axes), "starts": list(map(int, starts)),
                          "ends": list(map(int, ends)), "infer_flags": [1] * len(axes)},
                         input.dtype, "slice")


slice = replayed(slice, globals())


def _slice_of_tensors(input, axes, starts, ends):
    """``slice`` whose bounds Variables give, in part or whole."""
    helper = LayerHelper("slice")
    inputs = {"Input": [input]}
    attrs = {"axes": list(axes)}
    infer_flags = [1] * len(axes)
    _bounds_inputs(helper, "starts", starts, ("StartsTensor", "StartsTensorList"), inputs,
                   attrs, infer_flags)
    _bounds_inputs(helper, "ends", ends, ("EndsTensor", "EndsTensorList"), inputs, attrs,
                   infer_flags)
    attrs["infer_flags"] = infer_flags
    out = helper.create_variable_for_type_inference(dtype=input.dtype)
    helper.append_op(type="slice", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return out


@checks(input=variable, axes=ints(None, 0), starts=int_list_or_variable(),
        ends=int_list_or_variable(), strides=int_list_or_variable())
def strided_slice(input, axes, starts, ends, strides):
    """``input[starts:ends:strides]`` on the dims ``axes`` (``strided_slice``); each of
    starts, ends and strides may be a Variable or a list holding Variables."""
    _one_per_axis("strided_slice", axes, starts=starts, ends=ends, strides=strides)
    helper = LayerHelper("strided_slice")
    inputs = {"Input": [input]}
    attrs = {"axes": list(axes)}
    infer_flags = [1] * len(axes)
    for name, values in (("starts", starts), ("ends", ends), ("strides", strides)):
        title = name.capitalize()
        _bounds_inputs(helper, name, values, (f"{title}Tensor", f"{title}TensorList"), inputs,
                       attrs, infer_flags)
    attrs["infer_flags"] = infer_flags
    out = helper.create_variable_for_type_inference(dtype=input.dtype)
    helper.append_op(type="strided_slice", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return out


@lean  # (one op through append_fresh)
@checks(input=variable, index=variable, overwrite=boolean)
def gather(input, index, overwrite=True):
    """Rows of ``input`` picked by ``index`` (``gather``)."""
    _check_variable("gather", "input", input)
    _check_variable("gather", "index", index)
    program = _fw._main_program
    return append_fresh(program.blocks[program.current_block_idx], "gather",
                        {"X": (input.name,), "Index": (index.name,)},
                        {"Out": [(input.dtype, False)]}, {"overwrite": overwrite},
                        "gather")["Out"][0]


# --- repeat, flatten, unstack ----------------------------------------------------------------
@lean  # (one op through append_one_op, or a transaction of its own)
@checks(x=variable, expand_times=int_list_or_variable(1), name=NAME)
def expand(x, expand_times, name=None):
    """``x`` tiled ``expand_times[i]`` times along each dim i (``expand``):
    Out.shape[i] = x.shape[i] * expand_times[i]. ``expand_times`` may be a Variable
    (ExpandTimes) or a list holding Variables (expand_times_tensor)."""
    if x.dtype == VarType.BOOL and x.stop_gradient:
        raise InvalidArgument("expand: x of dtype bool expected stop_gradient=False, but "
                              "received stop_gradient=True")
    if name is None and x.dtype != VarType.BOOL and not isinstance(expand_times, Variable) \
            and not _holds_variable(expand_times):
        # (the usual call: ints, no name; a bool x, whose check reads its stop_gradient,
        # goes the general way every time: a replay's key does not hold that field)
        program = _fw._main_program
        return append_one_op(program.blocks[program.current_block_idx], "expand",
                             {"X": (x.name,)}, {"expand_times": [int(t) for t in expand_times]},
                             x.dtype, "expand")
    with atomic():
        return _expand(x, expand_times, name)


expand = replayed(expand, globals())


def _expand(x, expand_times, name):
    helper = LayerHelper("expand", name=name)
    inputs = {"X": [x]}
    attrs = {}
    if isinstance(expand_times, Variable):
        expand_times.stop_gradient = True
        inputs["ExpandTimes"] = [expand_times]
    else:
        attrs["expand_times"] = [-1 if isinstance(t, Variable) else int(t)
                                 for t in expand_times]
        if _holds_variable(expand_times):
            inputs["expand_times_tensor"] = _int_tensor_list(helper, expand_times)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="expand", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return out


@checks(x=variable, target_tensor=variable, name=NAME)
def expand_as(x, target_tensor, name=None):
    """``x`` tiled to ``target_tensor``'s shape (``expand_as``)."""
    helper = LayerHelper("expand_as", name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="expand_as", inputs={"X": [x], "target_tensor": [target_tensor]},
                     outputs={"Out": [out]})
    return out


@lean  # (one op through append_with_xshape, or a transaction of its own)
@checks(x=variable, axis=INT, name=NAME)
def flatten(x, axis=1, name=None):
    """``x`` as a matrix (``flatten2``): [prod(x.shape[:axis]), prod(x.shape[axis:])],
    axis in [0, rank(x)]."""
    if not 0 <= axis <= len(x.shape):
        raise InvalidArgument(f"flatten: axis expected in [0, {len(x.shape)}] (x's rank), but "
                              f"received {axis}")
    if name is None:
        return append_with_xshape(_fw._main_program.current_block(), "flatten2", x,
                                  {"axis": axis}, "flatten")
    with atomic():
        helper = LayerHelper("flatten", name=name)
        out = helper.create_variable_for_type_inference(x.dtype)
        x_shape = helper.create_variable_for_type_inference(x.dtype)
        helper.append_op(type="flatten2", inputs={"X": [x]},
                         outputs={"Out": [out], "XShape": [x_shape]}, attrs={"axis": axis})
    return out


flatten = replayed(flatten, globals())


@lean  # (one op through append_fresh)
@checks(x=variable, axis=INT, num=optional(int_in(1, want="a positive int")))
def unstack(x, axis=0, num=None):
    """The list of ``x`` taken at each index of dim ``axis`` (``unstack``); ``num``
    defaults to that dim's size, which must then be known."""
    rank = len(x.shape)
    if not -rank <= axis < rank:
        raise InvalidArgument(f"unstack: axis expected in [{-rank}, {rank}), but received "
                              f"{axis}")
    if num is None:
        if x.shape[axis] <= 0:
            raise InvalidArgument(f"unstack: num expected when dim {axis} of x is unknown, "
                                  f"but received None (x's shape {list(x.shape)})")
        num = x.shape[axis]
    program = _fw._main_program
    return append_fresh(program.blocks[program.current_block_idx], "unstack", {"X": (x.name,)},
                        {"Y": [(x.dtype, False)] * num}, {"axis": axis, "num": num},
                        "unstack")["Y"]


# --- gather and scatter by coordinates -------------------------------------------------------
@checks(input=variable, index=variable, name=NAME)
def gather_nd(input, index, name=None):
    """``input[index[..., 0], ..., index[..., k-1]]`` for every leading position of
    ``index`` (``gather_nd``): Out.shape = index.shape[:-1] + input.shape[k:]."""
    helper = LayerHelper("gather_nd", name=name)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="gather_nd", inputs={"X": [input], "Index": [index]},
                     outputs={"Out": [out]})
    return out


@checks(input=variable, index=variable, updates=variable, name=NAME, overwrite=boolean)
def scatter(input, index, updates, name=None, overwrite=True):
    """``input`` with rows ``index`` replaced by ``updates`` (``scatter``); with
    overwrite=False the updates of repeated rows are summed (the rows start from zero)."""
    helper = LayerHelper("scatter", name=name)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="scatter", inputs={"X": [input], "Ids": [index], "Updates": [updates]},
                     outputs={"Out": [out]}, attrs={"overwrite": overwrite})
    return out


@checks(ref=variable, index=variable, updates=variable, name=NAME)
def scatter_nd_add(ref, index, updates, name=None):
    """``ref`` with ``updates[i...]`` added at the coordinates ``index[i...]``
    (``scatter_nd_add``); repeated coordinates sum."""
    if ref.dtype != updates.dtype:
        raise InvalidArgument(f"scatter_nd_add: updates expected dtype {ref.dtype.name} (ref's), "
                              f"but received {updates.dtype.name}")
    helper = LayerHelper("scatter_nd_add", name=name)
    out = helper.create_variable_for_type_inference(ref.dtype)
    helper.append_op(type="scatter_nd_add",
                     inputs={"X": [ref], "Index": [index], "Updates": [updates]},
                     outputs={"Out": [out]})
    return out


@checks(index=variable, updates=variable, shape=dims(1), name=NAME)
def scatter_nd(index, updates, shape, name=None):
    """``scatter_nd_add`` into zeros of ``shape``."""
    from .tensor import zeros
    return scatter_nd_add(zeros(shape, updates.dtype), index, updates, name)


@checks(inputs=variable_list, index=variable)
def multiplex(inputs, index):
    """Row i of the result is row i of ``inputs[index[i]]`` (``multiplex``)."""
    if len(inputs) < 2:
        raise InvalidArgument(f"multiplex: inputs expected at least 2 Variables, but received "
                              f"{len(inputs)}")
    helper = LayerHelper("multiplex")
    out = helper.create_variable_for_type_inference(inputs[0].dtype)
    helper.append_op(type="multiplex", inputs={"X": list(inputs), "Ids": [index]},
                     outputs={"Out": [out]})
    return out


@checks(input=variable, index_num=int_in(1, want="a positive int"),
        nshards=int_in(1, want="a positive int"), shard_id=INT, ignore_value=INT)
def shard_index(input, index_num, nshards, shard_id, ignore_value=-1):
    """Ids made local to shard ``shard_id`` of ``nshards`` (``shard_index``): with
    shard_size = ceil(index_num / nshards), id - shard_id * shard_size for the ids of that
    shard, ``ignore_value`` for the others."""
    if not 0 <= shard_id < nshards:
        raise InvalidArgument(f"shard_index: shard_id expected in [0, {nshards}), but "
                              f"received {shard_id}")
    helper = LayerHelper("shard_index")
    out = helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
    helper.append_op(type="shard_index", inputs={"X": [input]}, outputs={"Out": [out]},
                     attrs={"index_num": index_num, "nshards": nshards,
                            "shard_id": shard_id, "ignore_value": ignore_value})
    return out


# --- pad and crop ----------------------------------------------------------------------------
@checks(x=variable, paddings=ints(None, 0), pad_value=NUMBER, name=NAME)
def pad(x, paddings, pad_value=0., name=None):
    """``x`` padded with ``pad_value``: paddings[2i] before and paddings[2i+1] after each
    dim i (``pad``)."""
    if len(paddings) != 2 * len(x.shape):
        raise InvalidArgument(f"pad: paddings expected {2 * len(x.shape)} ints (two per dim "
                              f"of x), but received {list(paddings)}")
    helper = LayerHelper("pad", name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="pad", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"paddings": list(paddings), "pad_value": float(pad_value)})
    return out


@checks(input=variable, paddings=or_variable(ints(4, 0)),
        mode=one_of("constant", "reflect", "edge"), pad_value=NUMBER,
        data_format=one_of("NCHW", "NHWC"), name=NAME)
def pad2d(input, paddings=[0, 0, 0, 0], mode="constant", pad_value=0.0, data_format="NCHW",
          name=None):
    """The H and W dims of a 4-D ``input`` padded by paddings = [top, bottom, left, right]
    (``pad2d``; a Variable gives them at run time): 'constant' fills ``pad_value``,
    'reflect' mirrors without repeating the edge, 'edge' repeats the edge."""
    inputs = {"X": [input]}
    attrs = {"mode": mode, "pad_value": float(pad_value), "data_format": data_format}
    if isinstance(paddings, Variable):
        inputs["Paddings"] = [paddings]
        attrs["paddings"] = []
    else:
        attrs["paddings"] = list(paddings)
    helper = LayerHelper("pad2d", name=name)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="pad2d", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return out


@checks(x=variable, y=variable, pad_value=NUMBER, name=NAME)
def pad_constant_like(x, y, pad_value=0., name=None):
    """``y`` padded at the end of each dim with ``pad_value`` up to ``x``'s shape
    (``pad_constant_like``)."""
    helper = LayerHelper("pad_constant_like", name=name)
    out = helper.create_variable_for_type_inference(y.dtype)
    helper.append_op(type="pad_constant_like", inputs={"X": [x], "Y": [y]},
                     outputs={"Out": [out]}, attrs={"pad_value": float(pad_value)})
    return out


@checks(x=variable, shape=or_variable(ints(None, 1, "dims")),
        offsets=optional(or_variable(ints(None, 0))), name=NAME)
def crop(x, shape=None, offsets=None, name=None):
    """``x[offsets[i] : offsets[i] + shape[i]]`` on every dim (``crop``); ``shape`` may be a
    Variable whose shape is taken (Y), ``offsets`` a Variable (Offsets)."""
    if shape is None:
        raise InvalidArgument("crop: shape expected a list of ints or a Variable, but "
                              "received None")
    helper = LayerHelper("crop", name=name)
    offsets = [0] * len(x.shape) if offsets is None else offsets
    inputs = {"X": [x]}
    attrs = {}
    if isinstance(shape, Variable):
        inputs["Y"] = [shape]
    else:
        attrs["shape"] = list(shape)
    if isinstance(offsets, Variable):
        inputs["Offsets"] = [offsets]
    else:
        attrs["offsets"] = list(offsets)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="crop", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return out


def _crop_dims(value):
    """crop_tensor's shape: -1 (the rest of the dim) or a positive int, or a Variable."""
    if isinstance(value, Variable):
        return
    int_list_or_variable(-1)(value)
    if any(_is_int(d) and d == 0 for d in value):
        raise Refused("a list of ints (positive or -1) and Variables, or a Variable")


@checks(x=variable, shape=_crop_dims, offsets=optional(int_list_or_variable(0)), name=NAME)
def crop_tensor(x, shape=None, offsets=None, name=None):
    """``x[offsets[i] : offsets[i] + shape[i]]`` on every dim (``crop_tensor``), shape[i] =
    -1 taking the rest of the dim. ``shape`` and ``offsets`` may each be a Variable (Shape,
    Offsets) or a list holding Variables (ShapeTensor, OffsetsTensor)."""
    helper = LayerHelper("crop_tensor", name=name)
    offsets = [0] * len(x.shape) if offsets is None else offsets
    inputs = {"X": [x]}
    attrs = {}
    if isinstance(offsets, Variable):
        offsets.stop_gradient = True
        inputs["Offsets"] = [offsets]
        attrs["offsets"] = [-1] * len(x.shape)
    else:
        attrs["offsets"] = [-1 if isinstance(o, Variable) else int(o) for o in offsets]
        if _holds_variable(offsets):
            inputs["OffsetsTensor"] = _int_tensor_list(helper, offsets)
    if isinstance(shape, Variable):
        shape.stop_gradient = True
        inputs["Shape"] = [shape]
    else:
        attrs["shape"] = [0 if isinstance(d, Variable) else int(d) for d in shape]
        if _holds_variable(shape):
            inputs["ShapeTensor"] = _int_tensor_list(helper, shape)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="crop_tensor", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return out


# --- tensor arrays, LoD and selected rows ----------------------------------------------------
def _array_or_variables(value):
    if not isinstance(value, Variable):
        variable_list(value)


@checks(input=_array_or_variables, axis=INT, name=NAME, use_stack=boolean)
def tensor_array_to_tensor(input, axis=1, name=None, use_stack=False):
    """(the items of the tensor array ``input`` concatenated along ``axis`` — stacked along
    a new dim with use_stack —, each item's size along axis as an int32 tensor)
    (``tensor_array_to_tensor``)."""
    helper = LayerHelper("tensor_array_to_tensor", name=name)
    xs = [input] if isinstance(input, Variable) else list(input)
    out = helper.create_variable_for_type_inference(xs[0].dtype)
    out_index = helper.create_variable_for_type_inference("int32")
    helper.append_op(type="tensor_array_to_tensor", inputs={"X": xs},
                     outputs={"Out": [out], "OutIndex": [out_index]},
                     attrs={"axis": axis, "use_stack": use_stack})
    return out, out_index


@checks(x=variable, level=or_variable(ints(None, 0)))
def lod_append(x, level):
    """``x`` with one more LoD level below its own: ``level`` (offsets), or a Variable's
    (``lod_reset`` with append)."""
    helper = LayerHelper("lod_append")
    inputs = {"X": [x]}
    attrs = {"append": True}
    if isinstance(level, Variable):
        inputs["Y"] = [level]
    else:
        attrs["target_lod"] = list(level)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="lod_reset", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return out


def _selected_rows(where, x):
    if x.type != VarType.SELECTED_ROWS:
        raise InvalidType(f"{where}: x expected a SELECTED_ROWS Variable, but received "
                          f"{x.type.name}")


@checks(x=variable, name=NAME)
def merge_selected_rows(x, name=None):
    """The SelectedRows ``x`` with its repeated rows summed into one (``merge_selected_rows``)."""
    helper = LayerHelper("merge_selected_rows", name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="merge_selected_rows", inputs={"X": [x]}, outputs={"Out": [out]})
    return out


@checks(x=variable, name=NAME)
def get_tensor_from_selected_rows(x, name=None):
    """The value tensor of the SelectedRows ``x`` (``get_tensor_from_selected_rows``)."""
    _selected_rows("get_tensor_from_selected_rows", x)
    helper = LayerHelper("get_tensor_from_selected_rows", name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="get_tensor_from_selected_rows", inputs={"X": [x]},
                     outputs={"Out": [out]})
    return out


# --- features of click-through-rate models ---------------------------------------------------
@checks(input=variable, hash_size=int_in(1, want="a positive int"),
        num_hash=int_in(1, want="a positive int"), name=NAME)
def hash(input, hash_size, num_hash=1, name=None):
    """``num_hash`` hashes of each row of int ids (``hash``): XXH64 of the row's bytes with
    seeds 0..num_hash-1, modulo ``hash_size``; shape input.shape[:-1] + [num_hash, 1]."""
    if input.dtype not in (VarType.INT32, VarType.INT64):
        raise InvalidType(f"hash: input expected dtype int32 or int64, but received "
                          f"{input.dtype.name}")
    helper = LayerHelper("hash", name=name)
    out = helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
    helper.append_op(type="hash", inputs={"X": [input]}, outputs={"Out": [out]},
                     attrs={"num_hash": num_hash, "mod_by": hash_size})
    return out


@checks(input=variable, cvm=variable, use_cvm=boolean)
def continuous_value_model(input, cvm, use_cvm=True):
    """Show and click counts in the first two columns of ``input`` (``cvm``): use_cvm
    turns them into log(show + 1) and log(click + 1) - log(show + 1); otherwise they are
    dropped. Their gradient is ``cvm``, the counts themselves."""
    helper = LayerHelper("cvm")
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="cvm", inputs={"X": [input], "CVM": [cvm]}, outputs={"Y": [out]},
                     attrs={"use_cvm": use_cvm})
    return out


@checks(ins=variable, ins_tag=variable, filter_tag=variable, is_lod=boolean,
        out_val_if_empty=INT)
def filter_by_instag(ins, ins_tag, filter_tag, is_lod, out_val_if_empty=0):
    """[the instances of ``ins`` having a tag in ``filter_tag``, their loss weights]
    (``filter_by_instag``); an instance is a row, or a LoD sequence when ``is_lod``."""
    helper = LayerHelper("filter_by_instag")
    out = helper.create_variable_for_type_inference(ins.dtype)
    loss_weight = helper.create_variable_for_type_inference("float32")
    index_map = helper.create_variable_for_type_inference(ins_tag.dtype)
    helper.append_op(type="filter_by_instag",
                     inputs={"Ins": [ins], "Ins_tag": [ins_tag], "Filter_tag": [filter_tag]},
                     outputs={"Out": [out], "LossWeight": [loss_weight],
                              "IndexMap": [index_map]},
                     attrs={"is_lod": is_lod, "out_val_if_empty": out_val_if_empty})
    return [out, loss_weight]


# --- counters --------------------------------------------------------------------------------
@checks(counter_name=NAME, begin=INT, step=INT)
def autoincreased_step_counter(counter_name=None, begin=1, step=1):
    """A persistable int64 counter of shape [1] (``@STEP_COUNTER@`` by default): the startup
    program sets it to begin - 1 and an ``increment`` by ``step``, put first in the main
    program, advances it on every run (so the first run sees begin - 1 + step: ``begin``
    for step 1). Asking again for the same name returns the same counter."""
    from ..initializer import Constant
    helper = LayerHelper("global_step_counter")
    name = counter_name or "@STEP_COUNTER@"
    block = helper.main_program.global_block()
    if name in block.vars:
        return block.vars[name]
    counter = helper.create_global_variable(name=name, dtype="int64", shape=[1],
                                            persistable=True)
    helper.set_variable_initializer(counter, Constant(value=begin - 1, force_cpu=True))
    block._prepend_op(type="increment", inputs={"X": [counter]}, outputs={"Out": [counter]},
                      attrs={"step": float(step)})
    counter.stop_gradient = True
    return counter
