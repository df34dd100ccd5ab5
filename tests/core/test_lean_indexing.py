"""``x[...]`` and ``layers.slice`` of int bounds append their one op through
``append_one_op``: all or nothing without a transaction's snapshot of both programs, the
record the transaction's general path makes (the same temporary, op and names, refusals
included). An index or bound holding a Variable still appends its tensors and ops in a
transaction. slice's and strided_slice's inference is remembered per Input's fields, the
attributes and Out's LoD level before; their kernels read bounds from the attributes
without reading tensors when no tensor gives them."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.api.layers import manip, math_op_patch
from fluid_nb.framework import transaction, unique_name
from tests.core.op_records import (  # noqa: F401 (fixtures)
    fallbacks, fresh_fallbacks, inferences, record, transactions)

#: each index on a [4, 8, 3] float32 x (``i``: an int64 [1] Variable), twice in a cell
INDEXES = {
    "x[0]": lambda x, i: x[0],
    "x[-1]": lambda x, i: x[-1],
    "x[:, 1:3]": lambda x, i: x[:, 1:3],
    "x[1:3, 2]": lambda x, i: x[1:3, 2],
    "x[:, -3:-1]": lambda x, i: x[:, -3:-1],
    "x[:, 2:100]": lambda x, i: x[:, 2:100],
    "x[::2]": lambda x, i: x[::2],
    "x[:, ::-1, 1]": lambda x, i: x[:, ::-1, 1],
    "x[:]": lambda x, i: x[:],
    "x[i]": lambda x, i: x[i],
    "x[1:i]": lambda x, i: x[1:i],
    "x[3:1], refused": lambda x, i: x[3:1],
    "x[0, 0, 0, 0], refused": lambda x, i: x[0, 0, 0, 0],
    "x['a'], refused": lambda x, i: x["a"],
    "x[::0], refused": lambda x, i: x[::0],
    "x[(1,)]": lambda x, i: x[(1,)],
    "x[-1, ::-1]": lambda x, i: x[-1, ::-1],
    "x[0, 0, 0]": lambda x, i: x[0, 0, 0],
    "x[np.int64(1)]": lambda x, i: x[np.int64(1)],
    "x[1:np.int64(3)]": lambda x, i: x[1:np.int64(3)],
    "x[True], refused": lambda x, i: x[True],
    "x[:, 1:3][0]": lambda x, i: x[:, 1:3][0],
}


def _general_way(var, item):
    """The transaction's general path of an index, whatever it holds."""
    return transaction.transactional(math_op_patch._getitem)(var, item, lean=False)


class GeneralIndex:
    """``x[item]`` the general way (Variable's own ``__getitem__`` swapped for it)."""

    def __init__(self, var):
        self.var = var

    def __getitem__(self, item):
        return _general_way(self.var, item)


def _outcome(index, general=False):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[4, 8, 3], dtype="float32")
        i = fluid.layers.fill_constant([1], "int64", 2)
        answers = []
        for _ in range(2):  # (the second from the memos)
            try:
                answers.append(index(GeneralIndex(x) if general else x, i).name)
            except Exception as error:
                answers.append((type(error), str(error)))
        answers.append((x + x).name)  # (the names handed out after)
    # (the attributes' order too: a program's text and views show it)
    return record(main), answers, [list(op.attrs) for op in main.global_block().ops]


@pytest.mark.parametrize("index", list(INDEXES))
def test_an_index_makes_the_record_the_general_way_makes(index):
    assert _outcome(INDEXES[index]) == _outcome(INDEXES[index], general=True)


def test_an_index_is_remembered_per_the_variables_rank():
    """What an item of ints and slices appends is remembered per x's rank and the item:
    the same item on a variable of fewer dims is refused there, and one of the same rank
    and other dims appends its own record."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[4, 8, 3], dtype="float32")
        y = fluid.data(name="y", shape=[5, 2], dtype="int64")
        z = fluid.data(name="z", shape=[2, 2, 9], dtype="float64")
        a, b = x[1, 2, 0], z[1, 2, 0]
        with pytest.raises(fluid.errors.InvalidType, match="at most 2 items"):
            y[1, 2, 0]
        c = y[1:, 0]
    ops = main.global_block().ops
    assert [op.inputs["Input"] for op in ops] == [("x",), ("z",), ("y",)]
    assert (a.shape, b.shape, c.shape, b.dtype) == ((1,), (1,), (4,), z.dtype)


def test_the_indexes_memo_keeps_a_few():
    math_op_patch._INDEXES.clear()
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[400], dtype="float32")
        for i in range(300):
            x[i:i + 1]
    assert 0 < len(math_op_patch._INDEXES) <= 256


def test_an_index_of_ints_opens_no_transaction_and_one_of_variables_one(transactions):
    with fluid.program_guard(fluid.Program(), fluid.Program()), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[4, 8, 3], dtype="float32")
        i = fluid.layers.fill_constant([1], "int64", 2)
        del transactions[:]
        x[0], x[1:3, ::-1], x[:, 2, 0:1]
        fluid.layers.slice(x, axes=[0, 2], starts=[1, 0], ends=[3, 2])
        assert transactions == []
        x[i]
        assert len(transactions) == 1
        x[0:i, 1]
        assert len(transactions) == 2
        fluid.layers.slice(x, axes=[1], starts=[i], ends=[5])
        assert len(transactions) == 3


SLICES = {
    "ints": dict(axes=[1], starts=[0], ends=[4]),
    "tuples, negative": dict(axes=(0, 2), starts=(1, -2), ends=(3, 10)),
    "a Variable start": dict(axes=[1], starts="i", ends=[5]),
    "a list holding a Variable": dict(axes=[0, 1], starts=[0, "i"], ends=[2, 6]),
    "refused: end before start": dict(axes=[1], starts=[5], ends=[2]),
    "refused: two starts for one axis": dict(axes=[1], starts=[0, 1], ends=[2]),
}


def _bounds(value, i):
    if value == "i":
        return i
    if isinstance(value, list):
        return [i if v == "i" else v for v in value]
    return value


def _sliced(layer, case):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[-1, 8, 3], dtype="float32", lod_level=1)
        i = fluid.layers.fill_constant([1], "int64", 2)
        kwargs = {k: _bounds(v, i) for k, v in SLICES[case].items()}
        answers = []
        for _ in range(2):
            try:
                answers.append(layer(x, **kwargs).name)
            except Exception as error:
                answers.append((type(error), str(error)))
        answers.append((x + x).name)
    return record(main), answers, [list(op.attrs) for op in main.global_block().ops]


@pytest.mark.parametrize("case", list(SLICES))
def test_layers_slice_makes_the_record_its_transaction_makes(case):
    def through_the_transaction(input, axes, starts, ends):
        with transaction.atomic():
            manip._one_per_axis("slice", axes, starts=starts, ends=ends)
            return manip._slice_of_tensors(input, axes, starts, ends)
    assert _sliced(fluid.layers.slice, case) == _sliced(through_the_transaction, case)


def test_a_refused_index_leaves_nothing_and_gives_its_name_back():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[4, 8], dtype="float32")
        x[0]
        before = (list(main.global_block().vars), dict(unique_name._generator.ids),
                  len(main.global_block().ops), main._version)
        with pytest.raises(fluid.errors.InvalidArgument, match="end >= start"):
            x[3:1]

        def refuse(op):
            raise RuntimeError(f"hook refused {op.type}")
        main._append_hook = refuse
        with pytest.raises(RuntimeError, match="refused strided_slice"):
            x[::2]
        main._append_hook = None
        assert (list(main.global_block().vars), dict(unique_name._generator.ids),
                len(main.global_block().ops)) == before[:3]
        assert x[1].name == "slice_1.tmp_0"


@pytest.mark.parametrize("op_type", ["slice", "strided_slice"])
def test_slice_inference_is_remembered_per_signature(inferences, op_type):
    strides = {"strides": [1]} if op_type == "strided_slice" else {}
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        # (a shape no other test slices: the memo is the op's, for every program)
        x = fluid.data(name="x", shape=[7, 5, 11], dtype="float32")
        block = main.global_block()

        def sliced(attrs, out=None):
            out = out or block.create_var(name=unique_name.generate("out"), dtype="float32")
            block.append_op(type=op_type, inputs={"Input": x}, outputs={"Out": out},
                            attrs={**attrs, **strides})
            return out
        first = sliced({"axes": [0], "starts": [1], "ends": [3]})
        again = sliced({"axes": [0], "starts": [1], "ends": [3]})
        other = sliced({"axes": [0], "starts": [1], "ends": [4]})
        assert (first.shape, again.shape, other.shape) == ((2, 5, 11), (2, 5, 11), (3, 5, 11))
        assert inferences == [op_type, op_type]
        # an Out that already holds a LoD level keeps it, as inference leaves it: the memo's
        # answer for a fresh Out (level 0) is not its answer
        held = block.create_var(name="held", dtype="float32", lod_level=1)
        sliced({"axes": [0], "starts": [1], "ends": [3]}, out=held)
        assert (held.shape, held.lod_level) == ((2, 5, 11), 1)


def test_live_indexes_give_numpy_values():
    a = np.arange(96, dtype="float32").reshape(4, 8, 3)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard(), \
            fluid.live(program=main, startup_program=startup, scope=fluid.Scope()):
        x = fluid.layers.data(name="x", shape=[4, 8, 3], dtype="float32",
                              append_batch_size=False, value=a)
        i = fluid.layers.fill_constant([1], "int64", 2)
        cases = [(x[0], a[0]), (x[-1], a[-1]), (x[:, 1:3], a[:, 1:3]),
                 (x[1:3, 2], a[1:3, 2]), (x[:, -3:-1], a[:, -3:-1]),
                 (x[:, 2:100], a[:, 2:100]), (x[::2], a[::2]), (x[:, ::-1, 1], a[:, ::-1, 1]),
                 (x[-3:, :, -1], a[-3:, :, -1]), (x[i], a[2]), (x[1:i], a[1:2]),
                 (fluid.layers.slice(x, axes=[0, 2], starts=[1, -2], ends=[3, 10]),
                  a[1:3, :, -2:])]
        for got, want in cases:
            # (a bound read at run time leaves its dim to run time, as in Fluid)
            assert all(d in (-1, w) for d, w in zip(got.shape, want.shape))
            assert len(got.shape) == want.ndim
            np.testing.assert_array_equal(got.numpy(), want, strict=True)


def test_a_last_item_pick_recorded_without_its_tensor_still_picks_the_last_item():
    """Fluid records ``x[i]`` for a run-time i of -1 as start -1, end 0 with infer_flags
    -1: the kernels read that pair as the last item. A program that keeps the flags but
    gives the bounds in attributes (no tensor) is read the same way."""
    a = np.arange(12, dtype="float32").reshape(4, 3)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard(), \
            fluid.live(program=main, startup_program=startup, scope=fluid.Scope()):
        x = fluid.layers.data(name="x", shape=[4, 3], dtype="float32",
                              append_batch_size=False, value=a)
        block = main.global_block()
        for op_type, strides in (("slice", {}), ("strided_slice", {"strides": [1]})):
            out = block.create_var(name=f"last_{op_type}", dtype="float32")
            block.append_op(type=op_type, inputs={"Input": x}, outputs={"Out": out},
                            attrs={"axes": [0], "starts": [-1], "ends": [0],
                                   "infer_flags": [-1], "decrease_axis": [0], **strides})
            np.testing.assert_array_equal(out.numpy(), a[-1])


def test_a_repeated_index_appends_in_c_from_its_inputs_memo(fallbacks, fresh_fallbacks,
                                                             inferences):
    """An op of one input that is no formula op (slice's Input, concat's one X) appends in
    C once its inference's memo (``_inferred_from_x``) holds the call's answer (concat's
    through ``append_fresh``)."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        # (a shape no other test indexes: the memos are the process's)
        x = fluid.data(name="x", shape=[9, 7, 5], dtype="float32")
        firsts = [x[2, 1:3], x[::2], fluid.layers.concat([x], axis=1)]
        assert fallbacks.calls + fresh_fallbacks.calls == ["slice", "strided_slice", "concat"]
        again = [x[2, 1:3], x[::2], fluid.layers.concat([x], axis=1), x[3, 1:3]]
        assert fallbacks.calls == ["slice", "strided_slice", "slice"]  # (x[3]: new)
        assert fresh_fallbacks.calls == ["concat"]
        assert inferences == ["slice", "strided_slice", "concat", "slice"]
    assert [v.shape for v in firsts + again] == [(2, 5), (5, 7, 5), (9, 7, 5), (2, 5),
                                                 (5, 7, 5), (9, 7, 5), (2, 5)]
    assert [v.name for v in again] == ["slice_2.tmp_0", "slice_3.tmp_0", "concat_1.tmp_0",
                                       "slice_4.tmp_0"]


def test_the_c_append_reads_an_inputs_memo_only_for_the_ops_first_slot(fallbacks):
    """An op given X alone where X is not its first input slot is inferred afresh: the
    memo (of the first slot's calls) does not answer for it."""
    from fluid_nb.framework.registry import def_op, find

    def infer(ctx):  # (Out's rank says which slot was given)
        given = "Input" if ctx.has_input("Input") else "X"
        shape = ctx.input_shape(given)
        ctx.set_output("Out", shape if given == "Input" else list(shape) + [1],
                       ctx.input_dtype(given))
    if find("test_first_slot") is None:
        def_op("test_first_slot", inputs=["Input?", "X?"], outputs=["Out"],
               infer_shape=infer, traits=("infer_from_x",), kernel=lambda ctx, a, b: a)
    with fluid.program_guard(fluid.Program(), fluid.Program()), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[3, 2], dtype="float32")
        block = x.block
        by_input = [transaction.append_one_op(block, "test_first_slot", {"Input": (x.name,)},
                                              None, x.dtype) for _ in range(2)]
        by_x = [transaction.append_one_op(block, "test_first_slot", {"X": (x.name,)}, None,
                                          x.dtype) for _ in range(2)]
    assert [v.shape for v in by_input + by_x] == [(3, 2), (3, 2), (3, 2, 1), (3, 2, 1)]
    assert fallbacks.calls == ["test_first_slot", "test_first_slot", "test_first_slot"]


def test_a_repeated_fill_constant_appends_in_c_from_its_attributes_memo(fallbacks, inferences):
    """fill_constant of no tensor (``infer_from_attrs``): its inference is remembered per
    its attributes and Out's LoD level, and a repeated call appends in C, as a number on
    an operator's other side does (``x > 0.5``)."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        # (shapes and values no other test fills: the memos are the process's)
        ones = [fluid.layers.fill_constant([3, 17], "float32", 1.0) for _ in range(2)]
        x = fluid.data(name="x", shape=[3, 17], dtype="float32")
        masks = [x > 0.125 for _ in range(2)]
        assert fallbacks.calls == ["fill_constant", "fill_constant", "greater_than"]
        assert inferences == ["fill_constant", "fill_constant", "greater_than"]
        # a raw fill_constant into a variable of LoD level 1 keeps the level (the memo's
        # answer for a fresh Out is not its answer)
        block = main.global_block()
        held = block.create_var(name="held", dtype="float32", lod_level=1)
        block.append_op(type="fill_constant", outputs={"Out": held},
                        attrs={"shape": [3, 17], "dtype": 5, "value": 1.0})
        assert (held.shape, held.lod_level) == ((3, 17), 1)
    assert [v.shape for v in ones] == [(3, 17)] * 2
    assert [v.shape for v in masks] == [(3, 17)] * 2
    assert [v.name for v in ones + masks] == ["fill_constant_0.tmp_0", "fill_constant_1.tmp_0",
                                              "tmp_1", "tmp_3"]


def test_a_repeated_random_initialiser_appends_in_c_and_draws_its_own_numbers(
        fallbacks, inferences):
    """uniform_random and gaussian_random of no shape tensor (``infer_from_attrs``): their
    inference is remembered per their attributes, so a repeated call appends in C; an
    attribute inference refuses is refused at every call (a refusal is not remembered);
    each op still draws afresh from the program's stream."""
    main, startup, scope = fluid.Program(), fluid.Program(), fluid.Scope()
    main.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard(), \
            fluid.live(program=main, startup_program=startup, scope=scope):
        # (shapes no other test draws: the memos are the process's)
        uniform = [fluid.layers.uniform_random([5, 13], min=-0.25, max=0.25)
                   for _ in range(3)]
        normal = [fluid.layers.gaussian_random([13, 5], std=0.5) for _ in range(3)]
        for _ in range(2):
            with pytest.raises(fluid.errors.InvalidArgument, match="'min' expected less"):
                fluid.layers.uniform_random([5, 13], min=0.25, max=-0.25)
        assert fallbacks.calls == ["uniform_random", "gaussian_random", "uniform_random",
                                   "uniform_random"]
        assert inferences == ["uniform_random", "gaussian_random", "uniform_random",
                              "uniform_random"]
        draws = [v.numpy() for v in uniform + normal]
    assert [v.shape for v in uniform + normal] == [(5, 13)] * 3 + [(13, 5)] * 3
    assert all(np.abs(d).max() <= 0.25 for d in draws[:3])
    assert not np.array_equal(draws[0], draws[1]) and not np.array_equal(draws[3], draws[4])
    assert [op.type for op in main.global_block().ops] == ["uniform_random"] * 3 + \
        ["gaussian_random"] * 3


def test_a_repeated_sum_infers_once_per_its_inputs_fields(inferences):
    """sum of several tensors (``infer_from_x`` over its X of several variables): its
    inference is remembered per their number and each one's shape, dtype and LoD level, as
    concat's is; a sum of other inputs, or of inputs inference refuses, infers again."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        # (shapes no other test sums: the memos are the process's)
        x = fluid.data(name="x", shape=[7, 19], dtype="float32")
        y = fluid.data(name="y", shape=[-1, 19], dtype="float32")
        sums = [fluid.layers.sum([x, y]) for _ in range(3)] + [fluid.layers.sum([x, y, x])]
        for _ in range(2):
            with pytest.raises(fluid.errors.InvalidArgument, match="shape of X"):
                fluid.layers.sum([x, fluid.data(name="z", shape=[3, 19], dtype="float32")])
    assert inferences == ["sum", "sum", "sum", "sum"]
    assert [v.shape for v in sums] == [(7, 19)] * 4


def test_a_repeated_loss_infers_once_per_every_inputs_fields(inferences):
    """softmax_with_cross_entropy and cross_entropy2 (``infer_from_inputs``): inference is
    remembered per every input slot's variables' fields and the attributes, so a repeated
    loss infers once; other labels, other attributes or a refused label infer again."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        # (shapes no other test fills: the memos are the process's)
        x = fluid.data(name="x", shape=[11, 23], dtype="float32")
        label = fluid.data(name="label", shape=[11, 1], dtype="int64")
        soft = fluid.data(name="soft", shape=[11, 23], dtype="float32")
        losses = [fluid.layers.softmax_with_cross_entropy(x, label) for _ in range(3)]
        losses += [fluid.layers.softmax_with_cross_entropy(x, soft, soft_label=True)
                   for _ in range(2)]
        losses += [fluid.layers.cross_entropy(x, label) for _ in range(2)]
        for _ in range(2):
            with pytest.raises(fluid.errors.InvalidArgument, match="input 'Label' expected"):
                fluid.layers.softmax_with_cross_entropy(x, soft)
    assert inferences == ["softmax_with_cross_entropy", "softmax_with_cross_entropy",
                          "cross_entropy2", "softmax_with_cross_entropy",
                          "softmax_with_cross_entropy"]
    assert [v.shape for v in losses] == [(11, 1)] * 7


def test_a_repeated_topk_infers_once_per_its_inputs_fields(inferences):
    """top_k (``infer_from_x``, two outputs): its inference is remembered per X's fields and
    k, so a repeated topk infers once; a K tensor, another k or a refused k infer again."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        # (shapes no other test ranks: the memos are the process's)
        x = fluid.data(name="x", shape=[9, 29], dtype="float32")
        ranked = [fluid.layers.topk(x, 3) for _ in range(3)] + [fluid.layers.topk(x, 4)]
        k = fluid.layers.fill_constant([1], "int32", 2)
        by_tensor = [fluid.layers.topk(x, k) for _ in range(2)]
        for _ in range(2):
            with pytest.raises(fluid.errors.InvalidArgument, match="attribute 'k'"):
                fluid.layers.topk(x, 30)
    assert inferences.count("top_k") == 6
    assert [values.shape for values, _ in ranked] == [(9, 3)] * 3 + [(9, 4)]
    assert [indices.shape for _, indices in by_tensor] == [(9, -1)] * 2
