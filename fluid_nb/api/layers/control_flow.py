"""Fluid's control_flow module: counters and comparisons (increment, less_than, ...,
the logical ops), tensor arrays and rank tables (array_write, lod_rank_table, ...), and the
blocks (While, IfElse, Switch, cond, case, switch_case, while_loop).

The block layers build exactly the ops Fluid built: a ``while`` op or ``conditional_block``
op whose ``sub_block`` holds the user's ops, with ``X``/``Input`` the outer variables the
block reads and ``Out`` the outer variables it writes. The comparison outputs are bool and
carry no gradient.
"""
import contextlib
import functools

from ...errors import InvalidArgument, InvalidType, expected
from ...framework.type_checks import check_type, check_variable_and_dtype, require_variable
from ...framework import program as _fw, unique_name
from ...framework.attrs import AttrType
from ...tensor.dtypes import VarType
from ...framework.program import Variable
from ...framework.transaction import append_one_op, atomic, lean
from ..layer_helper import LayerHelper
from .arg_checks import checks

__all__ = ["increment", "less_than", "less_equal", "greater_than", "greater_equal", "equal",
           "not_equal", "logical_and", "logical_or", "logical_xor", "logical_not",
           "create_array", "array_write", "array_read", "array_length", "lod_rank_table",
           "max_sequence_len", "lod_tensor_to_array", "array_to_lod_tensor", "shrink_memory",
           "reorder_lod_tensor_by_rank", "is_empty", "split_lod_tensor", "merge_lod_tensor",
           "select_input", "While", "ConditionalBlock", "IfElse", "Switch", "cond", "case",
           "switch_case", "while_loop", "Print", "py_func"]


def increment(x, value=1.0, in_place=True):
    """``x + value`` for a one-element ``x``, written back into ``x`` when in_place."""
    if not isinstance(x, Variable):
        raise InvalidType(f"increment: x expected Variable, but received "
                          f"{type(x).__name__}")
    helper = LayerHelper("increment")
    out = x if in_place else helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(type="increment", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"step": float(value)})
    return out


def _compare(op_type, x, y, cond, force_cpu=None):
    for name, value in (("x", x), ("y", y)):
        if not isinstance(value, Variable):
            raise InvalidType(f"{op_type}: {name} expected Variable, but received "
                              f"{type(value).__name__}")
    if cond is not None:
        check_type(cond, "cond", Variable, op_type)
    if force_cpu is not None:
        check_type(force_cpu, "force_cpu", bool, op_type)
    attrs = {}
    if force_cpu is not None:
        attrs["force_cpu"] = force_cpu
    inputs = {"X": (x.name,), "Y": (y.name,)}
    if cond is None:  # (the usual call: a fresh bool, one op)
        program = _fw._main_program
        cond = append_one_op(program.blocks[program.current_block_idx], op_type, inputs,
                             attrs, VarType.BOOL, op_type)
        cond.stop_gradient = True
        return cond
    with atomic():
        LayerHelper(op_type).append_op(type=op_type, inputs=inputs, outputs={"Out": [cond]},
                                       attrs=attrs)
    return cond


@lean  # (one op through append_one_op, or a transaction of its own)
@checks()  # (Fluid 1.8's dtypes of x and y, in the call's own frame)
def less_than(x, y, force_cpu=None, cond=None):
    return _compare("less_than", x, y, cond, force_cpu)


@lean  # (the same)
@checks()
def less_equal(x, y, cond=None):
    return _compare("less_equal", x, y, cond)


@lean  # (the same)
@checks()
def greater_than(x, y, cond=None):
    return _compare("greater_than", x, y, cond)


@lean  # (the same)
@checks()
def greater_equal(x, y, cond=None):
    return _compare("greater_equal", x, y, cond)


@lean  # (the same)
@checks()
def equal(x, y, cond=None):
    return _compare("equal", x, y, cond)


@lean  # (the same)
@checks()
def not_equal(x, y, cond=None):
    return _compare("not_equal", x, y, cond)


def _logical(op_type, x, y=None, out=None, name=None):
    check_variable_and_dtype(x, "x", ("bool",), op_type)
    if y is not None:
        check_variable_and_dtype(y, "y", ("bool",), op_type)
    if out is not None:
        check_type(out, "out", Variable, op_type)
    inputs = {"X": (x.name,)} if y is None else {"X": (x.name,), "Y": (y.name,)}
    if out is None and name is None:  # (the usual call: a fresh output, one op)
        program = _fw._main_program
        return append_one_op(program.blocks[program.current_block_idx], op_type, inputs,
                             None, x.dtype, op_type)
    with atomic():
        helper = LayerHelper(op_type, name=name)
        if out is None:
            out = helper.create_variable_for_type_inference(dtype=x.dtype)
        helper.append_op(type=op_type, inputs=inputs, outputs={"Out": [out]})
    return out


@lean  # (one op through append_one_op, or a transaction of its own)
def logical_and(x, y, out=None, name=None):
    return _logical("logical_and", x, y, out, name)


@lean  # (the same)
def logical_or(x, y, out=None, name=None):
    return _logical("logical_or", x, y, out, name)


@lean  # (the same)
def logical_xor(x, y, out=None, name=None):
    return _logical("logical_xor", x, y, out, name)


@lean  # (the same)
def logical_not(x, out=None, name=None):
    return _logical("logical_not", x, None, out, name)


_check_var = require_variable


# --- tensor arrays and rank tables --------------------------------------------------------------
def create_array(dtype):
    """An empty tensor array variable ``array_<n>.out``."""
    helper = LayerHelper("array")
    return helper.create_variable(name=f"{helper.name}.out", type=VarType.LOD_TENSOR_ARRAY,
                                  dtype=dtype)


def array_write(x, i, array=None):
    """``array[i] = x`` (write_to_array); a new array ``array_write_<n>.out`` when None."""
    _check_var("array_write", "x", x)
    _check_var("array_write", "i", i)
    helper = LayerHelper("array_write")
    if array is None:
        array = helper.create_variable(name=f"{helper.name}.out",
                                       type=VarType.LOD_TENSOR_ARRAY, dtype=x.dtype)
    helper.append_op(type="write_to_array", inputs={"X": [x], "I": [i]},
                     outputs={"Out": [array]})
    return array


def array_read(array, i):
    """``array[i]`` (read_from_array)."""
    _check_var("array_read", "array", array)
    _check_var("array_read", "i", i)
    helper = LayerHelper("array_read")
    out = helper.create_variable_for_type_inference(dtype=array.dtype)
    helper.append_op(type="read_from_array", inputs={"X": [array], "I": [i]},
                     outputs={"Out": [out]})
    return out


def array_length(array):
    """The number of tensors in ``array`` (lod_array_length, int64 [1])."""
    helper = LayerHelper("array_length")
    out = helper.create_variable_for_type_inference(dtype=VarType.INT64, stop_gradient=True)
    helper.append_op(type="lod_array_length", inputs={"X": [array]}, outputs={"Out": [out]})
    return out


def lod_rank_table(x, level=0):
    """The sequences of LoD level ``level`` of ``x`` ranked by length, longest first
    (``x`` a Variable, or a one-element list of one as Fluid also takes)."""
    check_type(x, "x", (Variable, list), "lod_rank_table")
    if isinstance(x, list):
        if len(x) != 1:
            raise InvalidArgument(expected("lod_rank_table", "x", "one Variable",
                                           f"a list of {len(x)}"))
        x = x[0]
        check_type(x, "x[0]", Variable, "lod_rank_table")
    helper = LayerHelper("lod_rank_table")
    table = helper.create_variable(type=VarType.LOD_RANK_TABLE,
                                   name=unique_name.generate("lod_rank_table"))
    helper.append_op(type="lod_rank_table", inputs={"X": [x]}, outputs={"Out": [table]},
                     attrs={"level": level})
    return table


def max_sequence_len(rank_table):
    helper = LayerHelper("max_seqence_len")  # sic: Fluid's helper name
    out = helper.create_variable_for_type_inference(dtype=VarType.INT64)
    helper.append_op(type="max_sequence_len", inputs={"RankTable": [rank_table]},
                     outputs={"Out": [out]})
    return out


def lod_tensor_to_array(x, table):
    helper = LayerHelper("lod_tensor_to_array")
    array = helper.create_variable(name=unique_name.generate("lod_tensor_to_array"),
                                   type=VarType.LOD_TENSOR_ARRAY, dtype=x.dtype)
    helper.append_op(type="lod_tensor_to_array", inputs={"X": [x], "RankTable": [table]},
                     outputs={"Out": [array]})
    return array


def array_to_lod_tensor(x, table):
    helper = LayerHelper("array_to_lod_tensor")
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(type="array_to_lod_tensor", inputs={"X": [x], "RankTable": [table]},
                     outputs={"Out": [out]})
    return out


def shrink_memory(x, i, table):
    helper = LayerHelper("shrink_memory")
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(type="shrink_rnn_memory",
                     inputs={"X": [x], "I": [i], "RankTable": [table]}, outputs={"Out": [out]})
    return out


def reorder_lod_tensor_by_rank(x, rank_table):
    helper = LayerHelper("reorder_lod_tensor_by_rank")
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(type="reorder_lod_tensor_by_rank",
                     inputs={"X": [x], "RankTable": [rank_table]}, outputs={"Out": [out]})
    return out


def is_empty(x, cond=None):
    helper = LayerHelper("is_empty")
    if cond is None:
        cond = helper.create_variable_for_type_inference(dtype=VarType.BOOL, stop_gradient=True)
    helper.append_op(type="is_empty", inputs={"X": [x]}, outputs={"Out": [cond]})
    return cond


def split_lod_tensor(input, mask, level=0):
    where = "fluid.layers.split_lod_tensor"
    check_type(input, "input", (Variable, list, tuple, type(None)), where)
    check_type(mask, "mask", (Variable, list), where)
    check_type(level, "level", int, where)
    helper = LayerHelper("split_lod_tensor")
    out_true = helper.create_variable_for_type_inference(dtype=input.dtype)
    out_false = helper.create_variable_for_type_inference(dtype=input.dtype)
    helper.append_op(type="split_lod_tensor", inputs={"X": [input], "Mask": [mask]},
                     outputs={"OutTrue": [out_true], "OutFalse": [out_false]},
                     attrs={"level": level})
    return out_true, out_false


def merge_lod_tensor(in_true, in_false, x, mask, level=0):
    where = "fluid.layers.merge_lod_tensor"
    check_type(x, "x", (Variable, list, tuple, type(None)), where)
    check_type(mask, "mask", (Variable, list), where)
    check_type(in_true, "in_true", (Variable, list, tuple, type(None)), where)
    check_type(in_false, "in_false", (Variable, list, tuple, type(None)), where)
    helper = LayerHelper("merge_lod_tensor")
    out = helper.create_variable_for_type_inference(dtype=in_true.dtype)
    helper.append_op(type="merge_lod_tensor",
                     inputs={"X": [x], "Mask": [mask], "InTrue": [in_true],
                             "InFalse": [in_false]},
                     outputs={"Out": [out]}, attrs={"level": level})
    return out


def select_input(inputs, mask):
    """``inputs[mask]`` (select_input; mask an int32 [1])."""
    helper = LayerHelper("select_input")
    first = inputs[0]
    out = helper.create_variable(dtype=first.dtype, shape=first.shape, type=first.type)
    helper.append_op(type="select_input", inputs={"X": list(inputs), "Mask": [mask]},
                     outputs={"Out": [out]})
    return out


# --- sub-blocks ----------------------------------------------------------------------------------
def _block_reads_writes(block, reads=None, writes=None):
    """(names read before written, names written) by ``block``'s ops, nested blocks
    included, in first-use order."""
    reads = [] if reads is None else reads
    writes = {} if writes is None else writes
    program = block.program
    for op in block.ops:
        for name in op.input_arg_names:
            if name not in writes and name not in reads:
                reads.append(name)
        for name, value in op.attrs.items():
            if op.attr_type(name) == AttrType.BLOCK:
                inner_reads, _ = _block_reads_writes(program.block(value))
                reads.extend(n for n in inner_reads if n not in writes and n not in reads)
        for name in op.output_arg_names:
            writes.setdefault(name, None)
    return reads, list(writes)


@contextlib.contextmanager
def _sub_block(complete):
    """Ops appended inside go to a new block; ``complete(block)`` then adds the op that runs
    it to the parent block."""
    from ...framework.program import default_main_program
    from ...framework.transaction import atomic
    # the block, the ops inside it and the op that runs it are one transaction: a body that
    # fails (or a parent op that cannot be made from it) leaves the program as it was
    with atomic():
        program = default_main_program()
        block = program._create_block()
        try:
            yield block
        finally:
            program._rollback()
        complete(block)


class While:
    """``while cond: <the ops added inside with while_op.block()>``.

    ``cond`` is a bool variable of one element; the body must update it (e.g.
    ``less_than(i, n, cond=cond)``). Example::

        i = fluid.layers.fill_constant(shape=[1], dtype='int64', value=0)
        n = fluid.layers.fill_constant(shape=[1], dtype='int64', value=10)
        cond = fluid.layers.less_than(x=i, y=n)
        loop = fluid.layers.While(cond=cond)
        with loop.block():
            fluid.layers.increment(x=i, value=1, in_place=True)
            fluid.layers.less_than(x=i, y=n, cond=cond)
    """

    def __init__(self, cond, is_test=False, name=None):
        _check_var("While", "cond", cond)
        if cond.dtype != VarType.BOOL:
            raise InvalidType(f"While: cond expected a bool variable, but received "
                              f"{cond.dtype.name}")
        size = 1
        for d in cond.shape:
            size *= d
        if size != 1:
            raise InvalidType(f"While: cond expected shape [1] (one element), but "
                              f"received {list(cond.shape)}")
        self.helper = LayerHelper("while", name=name)
        self.cond_var = cond
        self.is_test = is_test

    def block(self):
        return _sub_block(self._complete)

    def _complete(self, body):
        parent = body.parent_block
        reads, writes = _block_reads_writes(body)
        x_vars = [parent._find_var_recursive(n) for n in reads if n != self.cond_var.name]
        x_vars = [v for v in x_vars if v is not None and v.name not in body.vars]
        out_vars = [parent._find_var_recursive(n) for n in [self.cond_var.name] + writes]
        seen, outs = set(), []
        for v in out_vars:
            if v is not None and v.name not in seen and v.name not in body.vars:
                seen.add(v.name)
                outs.append(v)
        step_scopes = parent.create_var(type=VarType.STEP_SCOPES)
        parent.append_op(type="while", inputs={"X": x_vars, "Condition": [self.cond_var]},
                         outputs={"Out": outs, "StepScopes": [step_scopes]},
                         attrs={"sub_block": body.idx, "is_test": self.is_test})


class ConditionalBlock:
    """Runs the ops added inside ``with cb.block():`` when ``inputs`` say so (the first
    element of inputs[0] with ``is_scalar_condition``; else every input non-empty)."""

    def __init__(self, inputs, is_scalar_condition=False, name=None):
        for each in inputs:
            _check_var("ConditionalBlock", "inputs", each)
        self.inputs = list(inputs)
        self.is_scalar_condition = is_scalar_condition
        self.helper = LayerHelper("conditional_block", name=name)

    def block(self):
        return _sub_block(self.complete)

    def complete(self, inside):
        parent = inside.parent_block
        reads, writes = _block_reads_writes(inside)
        params = [parent._find_var_recursive(n) for n in reads if n not in inside.vars]
        params = [v for v in params if v is not None]
        outs = [parent._find_var_recursive(n) for n in writes if n not in inside.vars]
        outs = [v for v in outs if v is not None]
        scope = parent.create_var(type=VarType.STEP_SCOPES)
        parent.append_op(type="conditional_block",
                         inputs={"Cond": self.inputs, "Input": params},
                         outputs={"Out": outs, "Scope": [scope]},
                         attrs={"sub_block": inside.idx,
                                "is_scalar_condition": self.is_scalar_condition})


class IfElse:
    """Per-row branching (Fluid 1.x): ``cond`` is a bool [N, 1] mask; inside
    ``true_block()``/``false_block()``, ``input(x)`` gives the rows of x for that branch
    (split_lod_tensor), ``output(...)`` collects the branch's results, and ``ie()`` merges
    them back in row order (merge_lod_tensor). Both branches always run (on possibly empty
    inputs), as in Fluid."""

    OUT_IF_ELSE_BLOCKS, IN_IF_ELSE_TRUE_BLOCKS, IN_IF_ELSE_FALSE_BLOCKS = 0, 1, 2

    def __init__(self, cond, name=None):
        _check_var("IfElse", "cond", cond)
        self.helper = LayerHelper("ifelse", name=name)
        self.cond = cond
        self.input_table = {}
        self.status = IfElse.OUT_IF_ELSE_BLOCKS
        self.conditional_true_block = ConditionalBlock(inputs=[self.cond])
        self.conditional_false_block = ConditionalBlock(inputs=[self.cond])
        self.output_table = ([], [])  # (false outputs, true outputs), as Fluid

    def _parent_block(self):
        program = self.helper.main_program
        return program.block(program.current_block().parent_idx)

    def input(self, x):
        if self.status == IfElse.OUT_IF_ELSE_BLOCKS:
            raise InvalidArgument("IfElse.input: a call inside true_block() or false_block() "
                                  "expected, but it was called outside")
        if id(x) not in self.input_table:
            parent = self._parent_block()
            key = "ifelse_input" + self.helper.name
            out_true = parent.create_var(name=unique_name.generate_with_ignorable_key(key),
                                         dtype=x.dtype)
            out_false = parent.create_var(name=unique_name.generate_with_ignorable_key(key),
                                          dtype=x.dtype)
            parent.append_op(type="split_lod_tensor", inputs={"X": [x], "Mask": [self.cond]},
                             outputs={"OutTrue": [out_true], "OutFalse": [out_false]},
                             attrs={"level": 0})
            self.input_table[id(x)] = (out_true, out_false)
        out_true, out_false = self.input_table[id(x)]
        return out_true if self.status == IfElse.IN_IF_ELSE_TRUE_BLOCKS else out_false

    @contextlib.contextmanager
    def _branch(self, is_true):
        block = self.conditional_true_block if is_true else self.conditional_false_block
        self.status = IfElse.IN_IF_ELSE_TRUE_BLOCKS if is_true \
            else IfElse.IN_IF_ELSE_FALSE_BLOCKS
        try:
            with block.block():
                yield
        finally:
            self.status = IfElse.OUT_IF_ELSE_BLOCKS

    def true_block(self):
        return self._branch(True)

    def false_block(self):
        return self._branch(False)

    def output(self, *outs):
        from .tensor import assign
        if self.status == IfElse.OUT_IF_ELSE_BLOCKS:
            raise InvalidArgument("IfElse.output: a call inside true_block() or false_block() "
                                  "expected, but it was called outside")
        table = self.output_table[1 if self.status == IfElse.IN_IF_ELSE_TRUE_BLOCKS else 0]
        parent = self._parent_block()
        for each in outs:
            _check_var("IfElse.output", "outs", each)
            outside = parent.create_var(
                name=unique_name.generate_with_ignorable_key(self.helper.name + "_output"),
                dtype=each.dtype)
            table.append(outside)
            assign(input=each, output=outside)

    def __call__(self):
        if self.status != IfElse.OUT_IF_ELSE_BLOCKS:
            raise InvalidArgument("IfElse(): a call outside the branches expected, but it was "
                                  "called inside one")
        false_len, true_len = map(len, self.output_table)
        if false_len == 0 and true_len == 0:
            raise InvalidArgument("IfElse(): outputs from true_block/false_block expected, "
                                  "but neither branch called output()")
        if false_len != true_len and false_len != 0 and true_len != 0:
            raise InvalidArgument(f"IfElse(): both branches expected the same number of "
                                  f"outputs, but received {true_len} (true) and {false_len} "
                                  f"(false)")
        if false_len == 0 or true_len == 0:
            return self.output_table[0 if false_len != 0 else 1]
        return [merge_lod_tensor(in_true=t, in_false=f, x=self.cond, mask=self.cond, level=0)
                for f, t in zip(*self.output_table)]


class Switch:
    """``with Switch() as s: with s.case(c1): ...; with s.default(): ...``: the first case
    whose scalar condition holds runs (conditional blocks on ``c_k and not c_1..c_k-1``)."""

    def __init__(self, name=None):
        self.helper = LayerHelper("switch", name=name)
        self.inside_scope = False
        self.pre_not_conditions = []
        self._transaction = None

    def case(self, condition):
        if not self.inside_scope:
            raise InvalidArgument("Switch.case: a call inside 'with Switch()' expected, but "
                                  "it was called outside")
        _check_var("Switch.case", "condition", condition)
        if condition.dtype != VarType.BOOL:
            raise InvalidType(f"Switch.case: condition expected bool, but received "
                              f"{condition.dtype.name}")
        if not self.pre_not_conditions:
            block = ConditionalBlock([condition], is_scalar_condition=True)
            self.pre_not_conditions.append(logical_not(x=condition))
        else:
            pre_not = self.pre_not_conditions[-1]
            self.pre_not_conditions.append(
                logical_and(x=pre_not, y=logical_not(x=condition)))
            block = ConditionalBlock([logical_and(x=pre_not, y=condition)],
                                     is_scalar_condition=True)
        return block.block()

    def default(self):
        if not self.pre_not_conditions:
            raise InvalidArgument("Switch.default: at least one case before default expected, "
                                  "but there is none")
        block = ConditionalBlock([self.pre_not_conditions[-1]], is_scalar_condition=True)
        return block.block()

    def __enter__(self):
        # the whole switch is one transaction: case() appends the negated condition for the
        # cases after it outside its own conditional block
        self._transaction = atomic()
        self._transaction.__enter__()
        self.inside_scope = True
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.inside_scope = False
        transaction, self._transaction = self._transaction, None
        if exc_type is not None:
            self.pre_not_conditions = []  # they were rolled back with the program
        return transaction.__exit__(exc_type, exc_val, exc_tb)


# --- functional control flow (Paddle 2.x static) ----------------------------------------------
def _flatten(value):
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        out = []
        for item in value:
            out.extend(_flatten(item))
        return out
    return [value]


def _pack_like(structure, flat):
    flat = iter(flat)

    def pack(s):
        if isinstance(s, (list, tuple)):
            return type(s)(pack(item) for item in s)
        return next(flat)
    return pack(structure)


def _copy_to_parent(var):
    from .tensor import assign
    from ...framework.program import default_main_program
    program = default_main_program()
    parent = program.block(program.current_block().parent_idx)
    out = parent.create_var(dtype=var.dtype, shape=var.shape, type=var.type)
    assign(var, out)
    return out


def cond(pred, true_fn=None, false_fn=None, name=None):
    """``true_fn()`` if pred else ``false_fn()`` (pred a bool [1]): each branch runs in a
    conditional_block, its results copied out; select_input picks the taken branch's."""
    from .tensor import cast
    check_variable_and_dtype(pred, "pred", ["bool"], "cond")
    check_type(name, "name", (str, type(None)), "cond")
    for label, fn in (("true_fn", true_fn), ("false_fn", false_fn)):
        if fn is not None and not callable(fn):
            raise InvalidType(expected("cond", label, "None or a callable", type(fn).__name__))
    true_out = false_out = None
    if true_fn is not None:
        block = ConditionalBlock([pred], is_scalar_condition=True)
        with block.block():
            result = true_fn()
            if result is not None:
                true_out = _pack_like(result, [_copy_to_parent(v) for v in _flatten(result)])
    if false_fn is not None:
        block = ConditionalBlock([logical_not(pred)], is_scalar_condition=True)
        with block.block():
            result = false_fn()
            if result is not None:
                false_out = _pack_like(result, [_copy_to_parent(v) for v in _flatten(result)])
    if true_out is None and false_out is None:
        return None
    if true_out is None or false_out is None:
        raise InvalidArgument(f"cond: true_fn and false_fn expected both to return values or "
                              f"both None, but {'true_fn' if true_out is None else 'false_fn'} "
                              f"returned None ({_INCOMPATIBLE})")
    flat_true, flat_false = _flatten(true_out), _flatten(false_out)
    if len(flat_true) != len(flat_false):
        raise InvalidArgument(f"cond: true_fn and false_fn expected the same number of "
                              f"outputs, but received {len(flat_true)} and {len(flat_false)} "
                              f"({_INCOMPATIBLE})")
    mask = cast(pred, dtype="int32")
    merged = [select_input([f, t], mask) for f, t in zip(flat_false, flat_true)]
    return _pack_like(true_out, merged)


#: Fluid's words for branches whose results cannot be merged, kept so code that matches them
#: still recognises the error
_INCOMPATIBLE = "Incompatible return values of true_fn and false_fn in cond"


def case(pred_fn_pairs, default=None, name=None):
    """The fn of the first pair whose pred holds, else ``default`` (else the last fn)."""
    check_type(pred_fn_pairs, "pred_fn_pairs", (list, tuple), "case")
    if not pred_fn_pairs:
        raise InvalidArgument("case: pred_fn_pairs expected a non-empty list of (pred, fn), "
                              "but received an empty one")
    pairs = list(pred_fn_pairs)
    for pair in pairs:
        if not isinstance(pair, tuple) or len(pair) != 2 or not callable(pair[1]):
            raise InvalidType(f"case: each pair expected (bool Variable, callable), but "
                              f"received {pair!r}")
        check_variable_and_dtype(pair[0], "pred", ["bool"], "case")
    if default is not None and not callable(default):
        raise InvalidType(expected("case", "default", "None or a callable",
                                   type(default).__name__))
    if default is None:
        default = pairs[-1][1]
        pairs = pairs[:-1]
    false_fn = default
    for pred, true_fn in reversed(pairs):
        false_fn = functools.partial(cond, pred=pred, true_fn=true_fn, false_fn=false_fn)
    return false_fn()


def switch_case(branch_index, branch_fns, default=None, name=None):
    """``branch_fns[branch_index]()``; ``default`` (else the largest index's fn) otherwise.
    ``branch_fns``: a dict index -> fn, a list of (index, fn), or a list of fns."""
    from .tensor import cast, fill_constant
    check_variable_and_dtype(branch_index, "branch_index", ["uint8", "int32", "int64"],
                             "switch_case")
    if branch_index.dtype != VarType.INT64:  # Fluid compares the index as int64
        branch_index = cast(branch_index, "int64")
    check_type(branch_fns, "branch_fns", (list, tuple, dict), "switch_case")
    if isinstance(branch_fns, dict):
        items = list(branch_fns.items())
    elif all(callable(fn) for fn in branch_fns):
        items = list(enumerate(branch_fns))
    else:
        items = list(branch_fns)
    for item in items:
        if not isinstance(item, tuple) or len(item) != 2 or not isinstance(item[0], int) \
                or not callable(item[1]):
            raise InvalidType(expected("switch_case", "branch_fns items", "(int index, "
                                       "callable) pairs or callables", repr(item)[:60]))
    if default is not None and not callable(default):
        raise InvalidType(expected("switch_case", "default", "None or a callable",
                                   type(default).__name__))
    keys = [k for k, _ in items]
    if len(set(keys)) != len(keys):
        raise InvalidArgument(f"switch_case: branch indices expected unique, but received "
                              f"{keys}")
    items.sort(key=lambda kv: kv[0])
    if default is None:
        default = items[-1][1]
        items = items[:-1]
    pairs = []
    for index, fn in items:
        value = fill_constant(shape=[1], dtype=branch_index.dtype, value=index)
        pairs.append((equal(branch_index, value), fn))
    false_fn = default
    for pred, true_fn in pairs:
        false_fn = functools.partial(cond, pred=pred, true_fn=true_fn, false_fn=false_fn)
    return false_fn()


def while_loop(cond, body, loop_vars, is_test=False, name=None):
    """``while cond(*loop_vars): loop_vars = body(*loop_vars)``; returns loop_vars (the
    same variables, updated in place by assign at the end of each step). ``loop_vars`` may
    nest lists and dicts of Variables; ``body`` returns the same structure (it gets copies
    of the containers, so changing them in place leaves the outer ones as they were)."""
    from .tensor import assign
    from .utils import assert_same_structure, flatten, is_sequence, pack_sequence_as
    if not callable(cond) or not callable(body):
        raise InvalidType("while_loop: cond and body expected callables, but received "
                          f"{type(cond).__name__} and {type(body).__name__}")
    check_type(loop_vars, "loop_vars", (list, tuple), "while_loop")
    if not loop_vars:
        raise InvalidArgument("while_loop: loop_vars expected a non-empty list, but received "
                              "an empty one")
    pre_cond = cond(*loop_vars)
    check_variable_and_dtype(pre_cond, "cond(*loop_vars)", ["bool"], "while_loop")
    if any(int(d) != 1 for d in pre_cond.shape):
        raise InvalidType(expected("while_loop", "cond(*loop_vars)", "a bool of shape [1]",
                                   f"shape {list(pre_cond.shape)}"))
    loop = While(pre_cond, is_test=is_test, name=name)
    with loop.block():
        inner = loop_vars
        if any(is_sequence(v) for v in loop_vars):  # fresh containers for body to change
            inner = pack_sequence_as(loop_vars, flatten(loop_vars))
        outs = body(*inner)
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        try:
            assert_same_structure(list(loop_vars), outs, check_types=False)
        except InvalidArgument as mismatch:
            raise InvalidArgument(expected("while_loop", "body's results", "the structure "
                                           "of loop_vars (same length and nesting)",
                                           str(mismatch))) from None
        now_cond = cond(*outs)
        for new, old in zip(flatten(outs), flatten(list(loop_vars))):
            if new is not old:
                assign(new, old)
        assign(now_cond, pre_cond)
    return loop_vars


# --- Print and py_func ---------------------------------------------------------------------
def Print(input, first_n=-1, message=None, summarize=20, print_tensor_name=True,
          print_tensor_type=True, print_tensor_shape=True, print_tensor_lod=True,
          print_phase="both"):
    """Print ``input`` whenever the program runs (at most ``first_n`` times; the first
    ``summarize`` values) and pass it on; with ``print_phase`` "backward" or "both" its
    gradient is printed in the backward pass too. Returns the passed-on variable."""
    from .arg_checks import check, int_in, one_of_lower, variable
    check("Print", "input", input, variable)
    check("Print", "first_n", first_n, int_in(-1))
    check("Print", "summarize", summarize, int_in(-1))
    check("Print", "print_phase", print_phase, one_of_lower("forward", "backward", "both"))
    helper = LayerHelper("print", **locals())
    output = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="print", inputs={"In": [input]}, outputs={"Out": [output]},
                     attrs={"first_n": first_n, "summarize": summarize,
                            "message": message or "", "print_tensor_name": print_tensor_name,
                            "print_tensor_type": print_tensor_type,
                            "print_tensor_shape": print_tensor_shape,
                            "print_tensor_lod": print_tensor_lod,
                            "print_phase": print_phase.upper()})
    return output


def py_func(func, x, out, backward_func=None, skip_vars_in_backward_input=None):
    """Run the Python function ``func`` as an op: ``func(*x_arrays)`` returns the values of
    ``out`` (Variables the caller created, e.g. with ``create_global_var`` or
    ``default_main_program().current_block().create_var``). ``backward_func(*x, *out,
    *out_grads)`` (less ``skip_vars_in_backward_input``) returns the gradients of ``x``."""
    from ...ops.io_ops import PY_FUNCS
    from .arg_checks import check, variable, variables
    if not callable(func):
        from ...errors import InvalidType, expected
        raise InvalidType(expected("py_func", "func", "a callable", type(func).__name__))
    if backward_func is not None and not callable(backward_func):
        from ...errors import InvalidType, expected
        raise InvalidType(expected("py_func", "backward_func", "None or a callable",
                                   type(backward_func).__name__))
    xs = [] if x is None else [x] if isinstance(x, Variable) else list(x)
    outs = [] if out is None else [out] if isinstance(out, Variable) else list(out)
    for item in xs:
        check("py_func", "x", item, variable)
    if outs:
        check("py_func", "out", outs, variables)
    skip = skip_vars_in_backward_input or []
    skip = [skip] if isinstance(skip, Variable) else list(skip)
    skip_names = [v.name if isinstance(v, Variable) else v for v in skip]
    PY_FUNCS.append(func)
    forward_id = len(PY_FUNCS) - 1
    backward_id = -1
    if backward_func is not None:
        PY_FUNCS.append(backward_func)
        backward_id = len(PY_FUNCS) - 1
    helper = LayerHelper("py_func", **locals())
    helper.append_op(type="py_func", inputs={"X": xs}, outputs={"Out": outs},
                     attrs={"forward_callable_id": forward_id,
                            "backward_callable_id": backward_id,
                            "skip_vars_in_backward_input": skip_names})
    return out


def __getattr__(name):
    # Fluid 1.8 defines its RNN builders in layers/control_flow.py; here they live in
    # rnn_layers (which builds on this module), reached under the old path too
    if name in ("StaticRNN", "DynamicRNN"):
        from . import rnn_layers
        return getattr(rnn_layers, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
