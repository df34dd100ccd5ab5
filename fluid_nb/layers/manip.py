"""Shape manipulation layers: reshape (reshape2), transpose (transpose2), squeeze
(squeeze2), unsqueeze (unsqueeze2), split, stack, slice, gather."""
from ..errors import InvalidArgument
from ..framework.dtypes import VarType
from ..framework.program import Variable
from ..layer_helper import LayerHelper
from .arg_checks import (INT, NAME, activation, boolean, checks, dims, ints, or_variable,
                         sections, variable, variable_list)

__all__ = ["reshape", "transpose", "squeeze", "unsqueeze", "split", "stack", "slice",
           "gather"]


def _check_variable(where, name, value):
    if not isinstance(value, Variable):
        raise InvalidArgument(f"{where}: {name} expected Variable, but received "
                              f"{type(value).__name__}")


@checks(x=variable, shape=dims(-1), act=activation, inplace=boolean, name=NAME)
def reshape(x, shape, actual_shape=None, act=None, inplace=False, name=None):
    """``x`` with a new shape (``reshape2``): one dim may be -1 (inferred), 0 copies the
    input's dim. ``shape`` may be a Variable or hold Variables (run-time dims)."""
    from .tensor import cast, fill_constant
    _check_variable("reshape", "x", x)
    helper = LayerHelper("reshape2", act=act, name=name)
    inputs = {"X": [x]}
    attrs = {}
    if isinstance(shape, Variable):
        shape.stop_gradient = True
        inputs["Shape"] = [shape]
    elif isinstance(shape, (list, tuple)):
        if sum(1 for d in shape if not isinstance(d, Variable) and d == -1) > 1:
            raise InvalidArgument(f"reshape: shape expected at most one -1, but received "
                                  f"{list(shape)}")
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


@checks(x=variable, perm=ints(None, 0), name=NAME)
def transpose(x, perm, name=None):
    """Dims permuted by ``perm`` (``transpose2``)."""
    _check_variable("transpose", "x", x)
    if len(perm) != len(x.shape):
        raise InvalidArgument(f"transpose: perm expected {len(x.shape)} dims (the input's "
                              f"rank), but received {list(perm)}")
    helper = LayerHelper("transpose", name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    x_shape = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="transpose2", inputs={"X": [x]},
                     outputs={"Out": [out], "XShape": [x_shape]}, attrs={"axis": list(perm)})
    return out


@checks(input=variable, axes=or_variable(ints()), name=NAME)
def squeeze(input, axes, name=None):
    """Size-1 dims ``axes`` removed (``squeeze2``)."""
    _check_variable("squeeze", "input", input)
    helper = LayerHelper("squeeze", name=name)
    out = helper.create_variable_for_type_inference(dtype=input.dtype)
    x_shape = helper.create_variable_for_type_inference(dtype=input.dtype)
    helper.append_op(type="squeeze2", inputs={"X": [input]},
                     outputs={"Out": [out], "XShape": [x_shape]}, attrs={"axes": list(axes)})
    return out


@checks(input=variable, axes=or_variable(ints()), name=NAME)
def unsqueeze(input, axes, name=None):
    """Size-1 dims inserted at ``axes`` (``unsqueeze2``)."""
    _check_variable("unsqueeze", "input", input)
    if isinstance(axes, int):
        axes = [axes]
    helper = LayerHelper("unsqueeze2", name=name)
    inputs = {"X": [input]}
    attrs = {}
    if isinstance(axes, Variable):
        axes.stop_gradient = True
        inputs["AxesTensor"] = [axes]
    else:
        attrs["axes"] = list(axes)
    out = helper.create_variable_for_type_inference(dtype=input.dtype)
    x_shape = helper.create_variable_for_type_inference(dtype=input.dtype)
    helper.append_op(type="unsqueeze2", inputs=inputs,
                     outputs={"Out": [out], "XShape": [x_shape]}, attrs=attrs)
    return out


@checks(input=variable, num_or_sections=sections, dim=or_variable(INT), name=NAME)
def split(input, num_or_sections, dim=-1, name=None):
    """A list of pieces along ``dim``: ``num`` equal ones, or the given section sizes (one
    may be -1)."""
    _check_variable("split", "input", input)
    helper = LayerHelper("split", name=name)
    shape = input.shape
    inputs = {"X": [input]}
    attrs = {"num": num_or_sections if isinstance(num_or_sections, int) else 0}
    if isinstance(dim, Variable):
        inputs["AxisTensor"] = [dim]
    else:
        if not -len(shape) <= dim < len(shape):
            raise InvalidArgument(f"split: dim expected in [{-len(shape)}, {len(shape)}), but "
                                  f"received {dim}")
        dim = dim + len(shape) if dim < 0 else dim
        attrs["axis"] = dim
    if isinstance(num_or_sections, int):
        if num_or_sections <= 1:
            raise InvalidArgument(f"split: num_or_sections expected an int > 1 or a list, but "
                                  f"received {num_or_sections}")
        if isinstance(dim, int) and shape[dim] > 0 and shape[dim] % num_or_sections:
            raise InvalidArgument(f"split: num_or_sections expected to divide dim {dim} of "
                                  f"size {shape[dim]}, but received {num_or_sections}")
        num = num_or_sections
    elif isinstance(num_or_sections, (list, tuple)):
        sections = list(num_or_sections)
        if sum(1 for s in sections if not isinstance(s, Variable) and s == -1) > 1:
            raise InvalidArgument(f"split: num_or_sections expected at most one -1, but "
                                  f"received {sections}")
        num = len(sections)
        attrs["sections"] = [-1 if isinstance(s, Variable) else int(s) for s in sections]
    else:
        raise InvalidArgument(f"split: num_or_sections expected int, list or tuple, but "
                              f"received {type(num_or_sections).__name__}")
    outs = [helper.create_variable_for_type_inference(dtype=input.dtype) for _ in range(num)]
    helper.append_op(type="split", inputs=inputs, outputs={"Out": outs}, attrs=attrs)
    return outs


@checks(x=variable_list, axis=INT)
def stack(x, axis=0):
    """Tensors of one shape stacked along a new dim ``axis`` (``stack``)."""
    helper = LayerHelper("stack", x=x)
    xs = helper.multiple_input("x")
    out = helper.create_variable_for_type_inference(xs[0].dtype)
    helper.append_op(type="stack", inputs={"X": xs}, outputs={"Y": [out]}, attrs={"axis": axis})
    return out


@checks(input=variable, axes=ints(None, 0), starts=or_variable(dims(-2**62)),
        ends=or_variable(dims(-2**62)))
def slice(input, axes, starts, ends):
    """``input[starts:ends]`` on the dims ``axes`` (``slice``)."""
    _check_variable("slice", "input", input)
    if not (len(axes) == len(starts) == len(ends)):
        raise InvalidArgument(f"slice: axes, starts and ends expected equal lengths, but "
                              f"received {len(axes)}, {len(starts)}, {len(ends)}")
    if any(isinstance(v, Variable) for v in list(starts) + list(ends)):
        raise InvalidArgument("slice: starts and ends expected ints, but received Variables "
                              "(tensor bounds are not supported by this layer)")
    helper = LayerHelper("slice")
    out = helper.create_variable_for_type_inference(dtype=input.dtype)
    helper.append_op(type="slice", inputs={"Input": [input]}, outputs={"Out": [out]},
                     attrs={"axes": list(axes), "starts": list(starts), "ends": list(ends),
                            "infer_flags": [1] * len(axes)})
    return out


@checks(input=variable, index=variable, overwrite=boolean)
def gather(input, index, overwrite=True):
    """Rows of ``input`` picked by ``index`` (``gather``)."""
    _check_variable("gather", "input", input)
    _check_variable("gather", "index", index)
    helper = LayerHelper("gather")
    out = helper.create_variable_for_type_inference(dtype=input.dtype)
    helper.append_op(type="gather", inputs={"X": [input], "Index": [index]},
                     outputs={"Out": [out]}, attrs={"overwrite": overwrite})
    return out
