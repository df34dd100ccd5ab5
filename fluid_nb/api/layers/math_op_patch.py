"""Python operators on Variable, as Fluid 1.x patches them in.

``x + 2`` appends a ``scale`` op; ``x + y`` an ``elementwise_add``; ``2 - x``,
``x ** 2`` put the number in a one-element ``fill_constant`` tensor first; ``x < y`` and
friends append the comparison ops (bool output); ``-x`` is ``scale(-1)``; ``x @ y`` is
``matmul``; ``x.astype('int64')`` is ``cast``. Outputs are named ``tmp_<n>``.

``==`` builds an ``equal`` op as in Fluid; Variables stay hashable by identity.
"""
from ...errors import InvalidType, expected
from ...framework import program as _fw
from ...framework import unique_name
from ...framework.memo import remember
from ...tensor.dtypes import VarType, convert_dtype
from ...framework.program import Variable

_COMPARE = {"equal", "not_equal", "less_than", "less_equal", "greater_than", "greater_equal"}


def _block(var):
    return var.block.program.current_block()


def _tmp(block, dtype):
    return block._create_temporary(unique_name._generator("tmp"), dtype
                                   if dtype.__class__ is VarType else convert_dtype(dtype))


def _scale(var, scale, bias):
    # one op, all or nothing itself (see _binary's impl: no transaction around it)
    return append_one_op(_block(var), "scale", {"X": (var.name,)},
                         {"scale": float(scale), "bias": float(bias)}, var.dtype)


def _scalar_tensor(block, value, dtype):
    var = _tmp(block, dtype)
    block.append_op(type="fill_constant", outputs={"Out": [var]},
                    attrs={"dtype": int(convert_dtype(dtype)), "shape": [1],
                           "value": float(value), "force_cpu": True})
    var.stop_gradient = True
    return var


def astype(self, dtype):
    """This variable cast to ``dtype`` (``cast``)."""
    out_dtype = dtype if dtype.__class__ is VarType else convert_dtype(dtype)
    # (one op, all or nothing itself: no transaction around it)
    return append_one_op(_block(self), "cast", {"X": (self.name,)},
                         {"in_dtype": int(self.dtype), "out_dtype": int(out_dtype)}, out_dtype)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) or \
        type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0


from ...framework.callstack import _op_record  # noqa: E402
from ...framework.transaction import append_one_op, atomic, lean, transactional  # noqa: E402,E501
from ...framework.transaction import _take_back_one_op, replayed  # noqa: E402
from ..layer_helper import LayerHelper  # noqa: E402


def _binary(method, op_type, reverse, scalar):
    scalar_form, scalar_method = _SCALARS[scalar] if scalar else (0, None)

    def impl(self, other):
        if other.__class__ is Variable and other.dtype == self.dtype and not reverse and \
                not (other.shape and other.shape[0] == -1 and len(other.shape) < len(self.shape)):
            # two Variables of one dtype, trailing alignment: one op, all or nothing itself
            return append_one_op(_block(self), op_type, {"X": (self.name,), "Y": (other.name,)},
                                 None, VarType.BOOL if op_type in _COMPARE else self.dtype)
        if scalar_method is not None and _is_number(other):  # a scale op: one op too
            return scalar_method(self, float(other))
        if _is_number(other):  # (x > 0.5, x ** 2: NumPy-like cells write them often)
            return _with_scalar(self, other, op_type, reverse)
        with atomic():
            return _binary_appended(self, other)

    def _binary_appended(self, other):
        if not isinstance(other, Variable):  # (two Variables: the common case, tested first)
            if scalar_method is not None and _is_number(other):
                return scalar_method(self, float(other))
            if not _is_number(other) and not isinstance(other, bool):
                return NotImplemented
            other = _scalar_tensor(_block(self), other, self.dtype)
        elif other.dtype != self.dtype:
            other = astype(other, self.dtype)
        x, y = (other, self) if reverse else (self, other)
        axis = -1
        if y.shape and y.shape[0] == -1 and len(y.shape) < len(x.shape):
            axis = 0  # Fluid aligns a batch-leading operand with the batch dim
        block = _block(self)
        out = _tmp(block, VarType.BOOL if op_type in _COMPARE else self.dtype)
        # the default axis left to the op's definition: completing defaults is its fast path
        block.append_op(type=op_type, inputs={"X": x, "Y": y}, outputs={"Out": out},
                        attrs=None if axis == -1 else {"axis": axis})
        return out
    impl.__name__, impl.__qualname__ = method, f"Variable.{method}"
    impl.__doc__ = f"``{op_type}`` of the operands{' (reversed)' if reverse else ''}."
    # its two common cases (two Variables, a Variable and a plain number) in C, impl the rest
    return _op_record.OneOpCall(lean(impl), _op_record.OPERATOR, op_type, globals(),
                                reverse=reverse, scalar=scalar_form,
                                out_dtype=VarType.BOOL if op_type in _COMPARE else None)


def _with_scalar(var, value, op_type, reverse):
    """``var <op> value`` for a plain number ``value``, as Fluid appends it: the number in a
    [1] ``fill_constant`` tensor of var's dtype, then the op on the two; each op through
    ``append_one_op`` (all or nothing itself), the tensor taken back when the op is refused,
    without a transaction's snapshot of both programs. The record the transaction's way
    (``_binary_appended``) makes."""
    block = _block(var)
    scalar = append_one_op(block, "fill_constant", {},
                           {"dtype": int(var.dtype), "shape": [1], "value": float(value),
                            "force_cpu": True}, var.dtype)
    scalar.stop_gradient = True
    filled = block.ops[-1]
    x, y = (scalar, var) if reverse else (var, scalar)
    try:
        return append_one_op(block, op_type, {"X": (x.name,), "Y": (y.name,)}, None,
                             VarType.BOOL if op_type in _COMPARE else var.dtype)
    except BaseException:
        # (the op took back its own temporary and name: the tensor's name is the last)
        _take_back_one_op(block, filled, scalar.name, None, unique_name._generator)
        raise


def _matmul(self, other):
    if not isinstance(other, Variable):
        return NotImplemented
    # (one op, all or nothing itself: no transaction around it)
    return append_one_op(_block(self), "matmul", {"X": (self.name,), "Y": (other.name,)},
                         {"transpose_X": False, "transpose_Y": False, "alpha": 1.0},
                         self.dtype)


def _neg(self):
    return _scale(self, -1.0, 0.0)


#: how an operator with a plain number s appends a scale op (Fluid's), by name: the form's
#: number in ``_op_record.OneOpCall`` (which appends the same op in C) and the Python
#: way
_SCALARS = {"plus": (1, lambda v, s: _scale(v, 1.0, s)),
            "minus": (2, lambda v, s: _scale(v, 1.0, -s)),
            "minus_from": (3, lambda v, s: _scale(v, -1.0, s)),
            "times": (4, lambda v, s: _scale(v, s, 0.0)),
            "divided": (5, lambda v, s: _scale(v, 1.0 / s, 0.0))}

_TABLE = (
    ("__add__", "elementwise_add", False, "plus"),
    ("__radd__", "elementwise_add", False, "plus"),
    ("__sub__", "elementwise_sub", False, "minus"),
    ("__rsub__", "elementwise_sub", True, "minus_from"),
    ("__mul__", "elementwise_mul", False, "times"),
    ("__rmul__", "elementwise_mul", False, "times"),
    ("__div__", "elementwise_div", False, "divided"),
    ("__truediv__", "elementwise_div", False, "divided"),
    ("__rdiv__", "elementwise_div", True, None),
    ("__rtruediv__", "elementwise_div", True, None),
    ("__pow__", "elementwise_pow", False, None),
    ("__rpow__", "elementwise_pow", True, None),
    ("__floordiv__", "elementwise_floordiv", False, None),
    ("__mod__", "elementwise_mod", False, None),
    ("__eq__", "equal", False, None),
    ("__ne__", "not_equal", False, None),
    ("__lt__", "less_than", False, None),
    ("__le__", "less_equal", False, None),
    ("__gt__", "greater_than", False, None),
    ("__ge__", "greater_equal", False, None),
)


#: what ``x[item]`` appends for an item of ints and slices whose bounds are ints or None
#: (``_index_key``), per x's rank and that key: (op type, attributes), or None for nothing
#: (``x[:]`` is x). The bounds' checks cost a cell's index more than its op's record
_INDEXES = {}


def _index_key(item):
    """``item`` as a key of ``_INDEXES``: each int itself, each slice its bounds; None for
    an item holding anything else (a Variable, a NumPy int: the general way reads it)."""
    key = []
    for index in (item if item.__class__ is tuple else (item,)):
        if index.__class__ is int:
            key.append(index)
        elif index.__class__ is slice:
            start, stop, step = bounds = index.start, index.stop, index.step
            if not ((start is None or start.__class__ is int) and
                    (stop is None or stop.__class__ is int) and
                    (step is None or step.__class__ is int)):
                return None
            key.append(bounds)
        else:
            return None
    return key


def _indexed(var, item):
    """``Variable.__getitem__``: :func:`_getitem`, with what an item of ints and slices of
    ints appends remembered per x's rank and the item (the op appended alone, all or
    nothing itself)."""
    key = _index_key(item)
    if key is None:
        return _getitem(var, item)
    key = (len(var.shape), *key)
    found = _INDEXES.get(key, _INDEXES)
    if found is _INDEXES:  # (not seen: worked out, or refused, as _getitem does)
        parts = _index_parts(var, item, True)
        found = remember(_INDEXES, key, _index_op(*parts) if parts[0] else None)
    if found is None:
        return var
    program = _fw._main_program  # (the block a LayerHelper appends to)
    return append_one_op(program.blocks[program.current_block_idx], found[0],
                         {"Input": (var.name,)}, found[1], var.dtype, "slice")


def _index_parts(var, item, lean):
    """(axes, starts, ends, steps, decrease_axis) of ``x[item]``, as Fluid slices; None
    when ``lean`` and the item holds a Variable (indexed again in a transaction)."""
    items = item if isinstance(item, tuple) else (item,)
    if len(items) > len(var.shape):
        raise InvalidType(expected("Variable.__getitem__", "index",
                                   f"at most {len(var.shape)} items (one per dim)",
                                   repr(item)))
    axes, starts, ends, steps, decrease = [], [], [], [], []
    for axis, index in enumerate(items):
        if isinstance(index, slice):
            if lean and (isinstance(index.start, Variable) or isinstance(index.stop, Variable)
                         or isinstance(index.step, Variable)):
                return None
            step = 1 if index.step is None else index.step
            # (a Variable's == builds an op: bounds are compared only when they are ints)
            known = not isinstance(step, Variable)
            if index.start is None and index.stop is None and known and step == 1:
                continue
            if known and step == 0:
                raise InvalidType(expected("Variable.__getitem__", "slice step",
                                           "a non-zero int", 0))
            big = 2 ** 31 - 1
            backwards = known and step < 0  # a run-time step counts forwards, as in Fluid
            start = index.start if index.start is not None else (big if backwards else 0)
            stop = index.stop if index.stop is not None else (-big if backwards else big)
            axes.append(axis)
            starts.append(_bound(start))
            ends.append(_bound(stop))
            steps.append(_bound(step))
        elif isinstance(index, Variable):  # x[i] for a run-time i: the range [i, i + 1)
            if lean:
                return None
            axes.append(axis)
            starts.append(index)
            ends.append(_plus_one(index))
            steps.append(1)
            decrease.append(axis)
        elif isinstance(index, int) and not isinstance(index, bool):
            axes.append(axis)
            starts.append(index)
            ends.append(index + 1 if index != -1 else 2 ** 31 - 1)
            steps.append(1)
            decrease.append(axis)
        else:
            raise InvalidType(expected("Variable.__getitem__", "index",
                                       "ints and slices", repr(index)))
    return axes, starts, ends, steps, decrease


def _getitem(var, item, lean=True):
    """``x[i]``, ``x[a:b]``, ``x[:, i]``, ``x[::-1]``: a ``slice`` op (``strided_slice`` when
    a step is not 1), an int index dropping its dim (``decrease_axis``), as Fluid slices.
    ``lean``: an item of ints and slices of ints appends its op alone, and one holding a
    Variable is indexed again in a transaction."""
    parts = _index_parts(var, item, lean)
    if parts is None:
        return _getitem_in_transaction(var, item)
    axes, starts, ends, steps, decrease = parts
    if not axes:
        return var
    if lean:  # (ints and slices of ints: one op, all or nothing itself, as NumPy-like
        # cells index often)
        program = _fw._main_program  # (the block a LayerHelper appends to)
        op_type, attrs = _index_op(axes, starts, ends, steps, decrease)
        return append_one_op(program.blocks[program.current_block_idx], op_type,
                             {"Input": (var.name,)}, attrs, var.dtype, "slice")
    helper = LayerHelper("slice")
    out = helper.create_variable_for_type_inference(var.dtype)
    strided = any(isinstance(step, Variable) or step != 1 for step in steps)
    inputs = {"Input": [var]}
    attrs = {"axes": axes, "decrease_axis": decrease, "infer_flags": [1] * len(axes)}
    bounds = [("starts", "StartsTensorList", starts), ("ends", "EndsTensorList", ends)]
    if strided:
        bounds.append(("strides", "StridesTensorList", steps))
    for attr, slot, values in bounds:
        attrs[attr] = [-1 if isinstance(v, Variable) else v for v in values]
        if any(isinstance(v, Variable) for v in values):
            # as Fluid: every bound of the list a [1] tensor, the attribute -1 where a
            # Variable gives it, and its shape left to run time
            inputs[slot] = [_bound_tensor(v) for v in values]
            for i, v in enumerate(values):
                if isinstance(v, Variable):
                    attrs["infer_flags"][i] = -1
    helper.append_op(type="strided_slice" if strided else "slice", inputs=inputs,
                     outputs={"Out": [out]}, attrs=attrs)
    return out


def _index_op(axes, starts, ends, steps, decrease):
    """(op type, attributes) of an index whose bounds are all ints: ``strided_slice`` with
    ``strides`` for a step other than 1, else ``slice``; the attributes in the order
    ``_getitem``'s general path writes them."""
    attrs = {"axes": axes, "decrease_axis": decrease, "infer_flags": [1] * len(axes),
             "starts": starts, "ends": ends}
    if steps.count(1) == len(steps):
        return "slice", attrs
    attrs["strides"] = steps
    return "strided_slice", attrs


def _bound(value):
    """A slice bound: a Variable (read at run time) or an int."""
    if isinstance(value, Variable):
        value.stop_gradient = True
        return value
    return int(value)


def _bound_tensor(value):
    from .tensor import fill_constant
    if isinstance(value, Variable):
        return value
    return fill_constant([1], "int32", value, force_cpu=True)


def _plus_one(index):
    from .tensor import fill_constant
    from ..layer_helper import LayerHelper
    index.stop_gradient = True
    helper = LayerHelper("elementwise_add")
    end = helper.create_variable_for_type_inference(index.dtype)
    helper.append_op(type="elementwise_add",
                     inputs={"X": [index], "Y": [fill_constant([1], index.dtype, 1,
                                                               force_cpu=True)]},
                     outputs={"Out": [end]}, attrs={"axis": -1})
    end.stop_gradient = True
    return end


def _runtime_index(var, item):
    """``x[item]`` for an item holding a Variable (a bound read at run time): its bound
    tensors and ops appended in a transaction, all or nothing."""
    return _getitem(var, item, lean=False)


_getitem_in_transaction = transactional(_runtime_index)


def monkey_patch_variable():
    """Attach the operators to Variable (fluid_nb.api.layers calls this on import)."""
    # each operator is a layer call, so all or nothing (a failed `a + b` leaves no
    # temporary): the binary ones keep themselves so, the others through a transaction
    for method, op_type, reverse, scalar_method in _TABLE:
        setattr(Variable, method, _binary(method, op_type, reverse, scalar_method))
    # (these three: one op each, all or nothing itself; -x and x.astype(...) replay a
    # repeated call in C, keyed by x's fields and the dtype asked for)
    Variable.__neg__ = replayed(_neg, globals())
    Variable.__matmul__ = _matmul
    Variable.astype = replayed(astype, globals())
    Variable.__getitem__ = _indexed
    Variable.__hash__ = object.__hash__
    # numpy scalars on the left (np.float32(2) * x) defer to Variable.__rmul__
    Variable.__array_ufunc__ = None
