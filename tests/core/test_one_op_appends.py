"""A one-op layer (an elementwise or activation layer, a Variable's ``+``) appends through
``transaction.append_one_op``, whose common case is C (``_op_record.append_one_op``): a
formula op or scale (whose plain kernel stands for one) outside any transaction whose
memos (completed attributes, the slot check, inferred shapes) already hold the call's
answer. It must make the record the Python way
(``_append_one_op``) makes: the same temporary and op, field for field, the same names
handed out, the same program version, a stack that starts at the layer; a hook that raises
leaves nothing behind. Every other call goes the Python way before anything changes."""
import gc
import re
import tracemalloc
import weakref

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument
from fluid_nb.api.layers import math_op_patch, nn as nn_layers, ops as layer_ops
from fluid_nb.framework import callstack, program as fw, transaction
from fluid_nb.framework import unique_name
from tests.core.op_records import fallbacks, inferences, record  # noqa: F401 (fixtures)

#: the modules whose layers append through append_one_op (the one-op layers, a Variable's
#: operators, relu, leaky_relu and log)
LAYER_MODULES = (layer_ops, math_op_patch, nn_layers)


@pytest.fixture
def python_way(monkeypatch):
    """Every one-op layer appended the Python way (the modules' own name swapped)."""
    def use():
        for module in LAYER_MODULES:
            monkeypatch.setattr(module, "append_one_op", transaction._append_one_op)
    return use


def _cell(kind):
    """One-op calls of every form the C path takes, each twice (the first call of a
    signature fills the memos), on values fed as data."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        # (shapes no other test uses: the memos are the process's, filled here first)
        x = fluid.data(name="x", shape=[3, 29], dtype="float32")
        y = fluid.data(name="y", shape=[3, 29], dtype="float32")
        b = fluid.data(name="b", shape=[29], dtype="float32")
        for _ in range(2):
            out = [fluid.layers.elementwise_add(x, y), fluid.layers.elementwise_mul(x, b, axis=1),
                   fluid.layers.relu(x), fluid.layers.leaky_relu(x, alpha=0.3), x + y, x * 0.5,
                   x - 1.0, x < y, fluid.layers.elementwise_max(x, y)]
    return main, out


def test_the_c_path_makes_the_record_the_python_way_makes(fallbacks, python_way,
                                                          monkeypatch):
    entries = []

    def counted(*args):
        entries.append(args[1])
        return transaction.append_one_op(*args)
    for module in LAYER_MODULES:
        monkeypatch.setattr(module, "append_one_op", counted)
    c_program, _ = _cell("c")
    # each of the nine calls appends through append_one_op; of the formula ops and those
    # with a plain kernel (scale, less_than), only the first call of each signature goes the
    # Python way (the layer's elementwise_add and x + y share one; x * 0.5 and x - 1.0 are
    # two scales)
    assert len(entries) == 18
    assert sorted(fallbacks.calls) == [
        "elementwise_add", "elementwise_max", "elementwise_mul", "leaky_relu", "less_than",
        "relu", "scale", "scale"]
    python_way()
    python_program, _ = _cell("python")
    assert record(c_program) == record(python_program)


def test_each_new_op_records_its_field_values_not_the_memos(fallbacks):
    main, out = _cell("c")
    first, second = out[0], main.global_block().var("elementwise_add_1.tmp_0")
    assert first.shape == second.shape == (3, 29)
    ops = [op for op in main.global_block().ops if op.type == "elementwise_add"]
    assert ops[0].attrs == ops[1].attrs and ops[0].attrs is not ops[1].attrs
    ops[1].attrs["axis"] = 1  # (an op's attributes are its own)
    assert ops[0].attrs["axis"] == -1
    assert not gc.is_tracked(ops[1].inputs) and not gc.is_tracked(ops[1].outputs)


def test_names_continue_the_counters_as_the_python_way_does(fallbacks):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard("pre_"):
        x = fluid.data(name="x", shape=[2], dtype="float32")
        names = [fluid.layers.sigmoid(x).name for _ in range(12)]
        names += [(x + x).name for _ in range(3)]
    # Fluid's LayerHelper puts the generator's prefix on both names it asks for
    assert names[:2] == ["pre_pre_sigmoid_0.tmp_0", "pre_pre_sigmoid_1.tmp_0"]
    assert names[11] == "pre_pre_sigmoid_11.tmp_0"
    assert names[12:] == ["pre_tmp_0", "pre_tmp_1", "pre_tmp_2"]
    assert len(fallbacks.calls) <= 2  # (at most the first sigmoid and the first +: the rest C)


def test_a_non_ascii_prefix_is_named_alike():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard("é_"):
        x = fluid.data(name="x", shape=[2], dtype="float32")
        names = [fluid.layers.sigmoid(x).name for _ in range(3)]
    assert names == ["é_é_sigmoid_0.tmp_0", "é_é_sigmoid_1.tmp_0", "é_é_sigmoid_2.tmp_0"]


def test_a_counter_past_a_c_long_still_names_the_temporary(fallbacks):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[2], dtype="float32")
        fluid.layers.sigmoid(x)
        fluid.layers.sigmoid(x)
        del fallbacks.calls[:]
        unique_name._generator.ids["sigmoid"] = 2 ** 70
        out = fluid.layers.sigmoid(x)
    assert out.name == f"sigmoid_{2 ** 70}.tmp_0"
    assert fallbacks.calls == []  # (C: the format writes the count)


def test_a_variable_whose_shape_is_a_list_is_inferred_the_python_way(fallbacks):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data(name="x", shape=[2, 3], dtype="float32")
        fluid.layers.sigmoid(x)
        x.shape = [2, 3]  # (a list: no memo key can hold it)
        del fallbacks.calls[:]
        out = fluid.layers.sigmoid(x)
    assert fallbacks.calls == ["sigmoid"] and tuple(out.shape) == (2, 3)


def test_the_op_stack_starts_at_the_layers_caller_whichever_way_it_went():
    """An activation layer's common call is C (a one-op call, no frame of its own): its op's
    stack starts at the line that called the layer, whether the append was C or (the first
    call of a signature) Python; a call the layer's Python function takes starts at it."""
    main = fluid.Program()
    this_test = "test_the_op_stack_starts_at_the_layers_caller_whichever_way_it_went"
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data(name="x", shape=[-1, 23], dtype="float32")  # (a shape no test used)
        for _ in range(2):
            fluid.layers.tanh(x)  # the first the Python way (memos empty), the second C
        fluid.layers.tanh(x, name="named")  # (a name: the layer's Python function)
    innermost = [callstack.frames(op)[-1][2] for op in main.global_block().ops]
    assert innermost == [this_test, this_test, "layer"]


def test_the_op_stack_starts_at_the_layer_for_a_type_not_loaded_yet(monkeypatch):
    """The first op of a type whose module is not loaded yet (the append looks it up): the
    same stack, from the layer on."""
    monkeypatch.setattr(fw, "_op_defs", {})  # (every type looked up as if not loaded)
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data(name="x", shape=[-1, 19], dtype="float32")
        fluid.layers.softsign(x)
        fluid.layers.reshape(x, [19, -1])
    for op in main.global_block().ops:
        functions = [function for _, _, function in callstack.frames(op)]
        assert functions[-1] in ("layer", "reshape"), functions
        assert "test_the_op_stack_starts_at_the_layer_for_a_type_not_loaded_yet" in functions


def _two_calls_then(fallbacks, appended):
    """Fill the memos with one call, forget the fallbacks seen, run ``appended``."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data(name="x", shape=[2, 3], dtype="float32")
        fluid.layers.sigmoid(x)
        del fallbacks.calls[:]
        appended(x)
    return main


@pytest.mark.parametrize("case", ["transaction", "name_scope", "op_role", "list attribute",
                                  "keyword argument", "name taken", "not a formula op"])
def test_calls_the_memos_cannot_answer_go_the_python_way(fallbacks, case):
    def appended(x):
        block = x.block
        if case == "transaction":
            with transaction.atomic():
                fluid.layers.sigmoid(x)
        elif case == "name_scope":
            with fluid.name_scope("encoder"):
                out = fluid.layers.sigmoid(x)
            # ("encoder_1" and on where an earlier test of this process took "encoder")
            assert re.fullmatch(r"/encoder(_\d+)?/", out.block.ops[-1].attrs["op_namescope"])
        elif case == "op_role":
            with _role(block.program, 2):
                fluid.layers.sigmoid(x)
            assert block.ops[-1].attrs["op_role"] == 2
        elif case == "list attribute":
            transaction.append_one_op(block, "sigmoid", {"X": (x.name,)},
                                      {"op_callstack": ["a"]}, x.dtype, "sigmoid")
        elif case == "keyword argument":
            transaction.append_one_op(block, "sigmoid", {"X": (x.name,)}, None, x.dtype,
                                      layer_type="sigmoid")
        elif case == "name taken":
            generator = unique_name._generator
            n = generator.ids.get("sigmoid", 0)
            block.create_var(name=f"sigmoid_{n}.tmp_0", shape=[7], dtype="float32")
            out = fluid.layers.sigmoid(x)
            assert out.shape == (2, 3)  # the variable reused, its fields inferred again
        elif case == "not a formula op":  # (nor one with a plain kernel, nor infer_from_x)
            for _ in range(2):
                transaction.append_one_op(block, "squared_l2_norm", {"X": (x.name,)}, None,
                                          x.dtype, "squared_l2_norm")
    main = _two_calls_then(fallbacks, appended)
    second = "squared_l2_norm" if case == "not a formula op" else "sigmoid"
    assert fallbacks.calls == [second] * (2 if case == "not a formula op" else 1)
    assert [op.type for op in main.global_block().ops][:2] == ["sigmoid", second]


class _role:
    def __init__(self, program, role):
        self.program, self.role = program, role

    def __enter__(self):
        self.old, self.program._current_role = self.program._current_role, self.role

    def __exit__(self, *exc):
        self.program._current_role = self.old


def test_a_selected_rows_input_is_inferred_afresh_the_python_way(fallbacks):
    """Shapes are remembered for LoD-tensor inputs only: a scale of a SelectedRows of the
    same shape, dtype and LoD level as a remembered LoDTensor goes the Python way, and its
    output is a SelectedRows as inference says."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[2, 37], dtype="float32")
        block = main.global_block()
        rows = block.create_var(name="rows", shape=[2, 37], dtype="float32",
                                type=fluid.core.VarDesc.VarType.SELECTED_ROWS)
        dense = [x * 3.0 for _ in range(2)]
        del fallbacks.calls[:]
        sparse = [rows * 3.0 for _ in range(2)]
        raw = block.create_var(name="raw", dtype="float32")
        block.append_op(type="scale", inputs={"X": rows}, outputs={"Out": raw},
                        attrs={"scale": 3.0, "bias": 0.0})
    assert fallbacks.calls == ["scale", "scale"]
    assert all(v.type == fluid.core.VarDesc.VarType.LOD_TENSOR for v in dense)
    assert all(v.type == fluid.core.VarDesc.VarType.SELECTED_ROWS and v.shape == (2, 37)
               for v in sparse + [raw])


def test_a_name_generator_of_another_class_names_the_python_way(fallbacks):
    class Numbered(unique_name.UniqueNameGenerator):
        def temporary(self, layer_type):
            return f"{layer_type}_out_{self(layer_type)}"

    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data(name="x", shape=[2, 3], dtype="float32")
        fluid.layers.sigmoid(x)
        with fluid.unique_name.guard(Numbered()):
            del fallbacks.calls[:]
            out = fluid.layers.sigmoid(x)
    assert out.name == "sigmoid_out_sigmoid_0" and fallbacks.calls == ["sigmoid"]


def test_a_program_of_another_class_records_the_python_way(fallbacks):
    """The C path reads a Block's, Program's and name generator's plain attributes from
    their instance dicts: a Program subclass, which may define any of them otherwise (here
    the append hook as a property), appends the Python way, and its hook still sees the op."""
    seen = []

    class Hooked(fluid.Program):  # (what Program.__init__ sets lands in the dict, unread)
        _append_hook = property(lambda self: seen.append,
                                lambda self, value: self.__dict__.update(_append_hook=value))

    main = Hooked()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data(name="x", shape=[2, 3], dtype="float32")
        fluid.layers.exp(x)
        del fallbacks.calls[:]
        out = fluid.layers.exp(x)
    assert fallbacks.calls == ["exp"] and out.shape == (2, 3)
    assert [op.type for op in seen] == ["exp", "exp"] and seen[-1] is main.global_block().ops[-1]


def test_an_input_of_a_parent_block_goes_the_python_way(fallbacks):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data(name="x", shape=[2, 3], dtype="float32")
        fluid.layers.exp(x)
        sub = main._create_block()
        del fallbacks.calls[:]
        out = fluid.layers.exp(x)
        main._rollback()
    assert fallbacks.calls == ["exp"] and out.block is sub and out.shape == (2, 3)


def _failing_hook(op):
    raise RuntimeError(f"hook refused {op.type}")


@pytest.mark.parametrize("way", ["c", "python"])
def test_a_hook_that_raises_leaves_nothing_behind(fallbacks, python_way, way):
    if way == "python":
        python_way()
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[2, 3], dtype="float32")
        fluid.layers.softsign(x)
        fluid.layers.softsign(x)
        before = (list(main.global_block().vars), len(main.global_block().ops),
                  dict(unique_name._generator.ids))
        main._append_hook = _failing_hook
        del fallbacks.calls[:]
        with pytest.raises(RuntimeError, match="hook refused softsign"):
            fluid.layers.softsign(x)
        main._append_hook = None
        after = (list(main.global_block().vars), len(main.global_block().ops),
                 dict(unique_name._generator.ids))
        assert after == before
        assert fluid.layers.softsign(x).name == "softsign_2.tmp_0"  # the name was taken back
    if way == "c":
        assert fallbacks.calls == []  # (the failing call was C's)


def test_a_live_op_that_fails_in_its_kernel_leaves_nothing_behind():
    main, startup, scope = fluid.Program(), fluid.Program(), fluid.Scope()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        with fluid.live(program=main, startup_program=startup, scope=scope):
            x = fluid.layers.fill_constant([2, 2], "int64", 7)
            y = fluid.layers.fill_constant([2, 2], "int64", 2)
            fluid.layers.elementwise_floordiv(x, y)  # (the memos filled)
            zero = fluid.layers.fill_constant([2, 2], "int64", 0)
            names, n_ops = list(main.global_block().vars), len(main.global_block().ops)
            with np.errstate(divide="raise"), pytest.raises(fluid.core.EnforceNotMet) as info:
                fluid.layers.elementwise_floordiv(x, zero)  # (NumPy raises, as asked)
            assert "elementwise_floordiv" in str(info.value)
            assert list(main.global_block().vars) == names
            assert len(main.global_block().ops) == n_ops
            assert not [n for n in scope.vars if n.startswith("elementwise_floordiv_1")]
            again = fluid.layers.elementwise_floordiv(x, y)
            assert again.name == "elementwise_floordiv_1.tmp_0"
            np.testing.assert_array_equal(again.numpy(), np.full((2, 2), 3))


def test_a_live_op_holder_made_in_c_names_its_variable():
    main, startup, scope = fluid.Program(), fluid.Program(), fluid.Scope()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        with fluid.live(program=main, startup_program=startup, scope=scope):
            c = fluid.layers.fill_constant([1, 2], "float32", 1.0)
            outs = [fluid.layers.scale(c, 2.0) for _ in range(2)] + [c + c for _ in range(2)]
            for out in outs:
                holder = scope.vars[out.name]
                assert holder.name == out.name and holder.value is not None
            np.testing.assert_array_equal(outs[-1].numpy(), [[2.0, 2.0]])


def test_appends_keep_no_memory_once_their_program_is_gone(fallbacks):
    def chain(n):
        main = fluid.Program()
        with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
            c = fluid.data(name="c", shape=[4], dtype="float32")
            one = fluid.data(name="one", shape=[4], dtype="float32")
            for _ in range(n):
                c = fluid.layers.elementwise_add(c, one)
        return weakref.ref(main)

    chain(50)
    gc.collect()
    tracemalloc.start()
    try:
        gone = chain(3000)
        gc.collect()
        first, _ = tracemalloc.get_traced_memory()
        for _ in range(3):
            chain(3000)
        gc.collect()
        last, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert gone() is None
    assert last - first < 64 * 1024  # (9,000 ops appended in between)
    assert len(fallbacks.calls) <= 4 * 2


def test_a_tensor_of_an_array_and_no_lod_is_not_walked_by_the_collector():
    from fluid_nb.tensor.tensor import LoDTensor
    plain = LoDTensor(np.ones(3, "float32"))
    with_lod = LoDTensor(np.ones((3, 1), "float32"), [[0, 1, 3]])
    assert not gc.is_tracked(plain) and gc.is_tracked(with_lod)
    plain.set_lod([[0, 3]])  # (a LoD given later: a list of lists of ints, no cycle)
    assert plain.lod() == [[0, 3]]


def test_relu_leaky_relu_and_log_name_their_outputs_as_layer_helper_does(fallbacks):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[2, 31], dtype="float32")
        names = [fluid.layers.relu(x, name="hidden").name]
        names += [layer(x).name for layer in (fluid.layers.relu, fluid.layers.log,
                                              fluid.layers.leaky_relu) for _ in range(2)]
        main._append_hook = _failing_hook  # a name= call: a transaction takes it all back
        with pytest.raises(RuntimeError, match="hook refused relu"):
            fluid.layers.relu(x, name="again")
        main._append_hook = None
    assert names == ["hidden.tmp_0", "relu_0.tmp_0", "relu_1.tmp_0", "log_0.tmp_0",
                     "log_1.tmp_0", "leaky_relu_0.tmp_0", "leaky_relu_1.tmp_0"]
    assert "again.tmp_0" not in main.global_block().vars
    assert [op.type for op in main.global_block().ops].count("relu") == 3
    # (the named relu's append filled relu's memos: every unnamed relu is C's; the first log
    # and leaky_relu the Python way's, their second C's)
    assert fallbacks.calls == ["log", "leaky_relu"]


def test_layers_softmax_appends_through_the_c_path_from_its_second_call(fallbacks):
    """softmax (a plain kernel's op) unnamed is one append_one_op, named as LayerHelper
    names it, its shape remembered per axis; a named one is a transaction of its own."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[2, 43], dtype="float32")
        del fallbacks.calls[:]
        outs = [fluid.layers.softmax(x, axis=axis) for axis in (-1, -1, 0, 0)]
        named = fluid.layers.softmax(x, name="probs")
        with pytest.raises(InvalidArgument, match="axis"):
            fluid.layers.softmax(x, axis=2)  # inference refuses it: nothing remembered
        with pytest.raises(InvalidArgument, match="axis"):
            fluid.layers.softmax(x, axis=2)
    assert [v.name for v in outs] == [f"softmax_{i}.tmp_0" for i in range(4)]
    assert named.name == "probs.tmp_0" and all(v.shape == (2, 43) for v in outs + [named])
    assert fallbacks.calls == ["softmax", "softmax", "softmax", "softmax"]  # (each refused
    assert [op.attrs["axis"] for op in main.global_block().ops] == [-1, -1, 0, 0, -1]  # too)
    assert len(main.global_block().vars) == 6  # x and the five outputs: no refused one


def test_layers_matmul_appends_through_the_c_path_from_its_second_call(fallbacks):
    """matmul (mul and matmul have plain kernels) unnamed is one append_one_op, C from the
    second call of a signature, named as LayerHelper names it; a product whose dims do not
    meet is refused with nothing left of it; a named one is a transaction of its own."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[3, 47], dtype="float32")
        w = fluid.data(name="w", shape=[47, 5], dtype="float32")
        del fallbacks.calls[:]
        outs = [fluid.layers.matmul(x, w) for _ in range(3)]
        outs += [fluid.layers.matmul(x, x, transpose_y=True, alpha=0.5) for _ in range(2)]
        for _ in range(2):
            with pytest.raises(InvalidArgument, match="matmul"):
                fluid.layers.matmul(x, x)  # [3, 47] x [3, 47]
        named = fluid.layers.matmul(x, w, name="product")
    assert [v.name for v in outs] == [f"matmul_{i}.tmp_0" for i in range(5)]
    assert [v.shape for v in outs] == [(3, 5)] * 3 + [(3, 3)] * 2
    assert named.name == "product.tmp_0" and named.shape == (3, 5)
    # the first call of each signature fills the memos; a refused one never does
    assert fallbacks.calls == ["matmul", "matmul", "matmul", "matmul"]
    ops = main.global_block().ops
    assert [op.type for op in ops] == ["matmul"] * 6
    assert [(op.attrs["transpose_Y"], op.attrs["alpha"]) for op in ops] == \
        [(False, 1.0)] * 3 + [(True, 0.5)] * 2 + [(False, 1.0)]
    assert len(main.global_block().vars) == 8  # x, w and the six products


def test_layers_reductions_append_through_the_c_path_their_dims_in_the_memo(fallbacks):
    """reduce_sum/mean/max/min/prod unnamed are one append_one_op each; their list
    attribute ``dim`` keys shape inference's memo as a tuple, in C and in Python alike, so
    each call after the first of a signature is C's and each dims' shape its own."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[3, 53], dtype="float32")
        del fallbacks.calls[:]
        outs = [fluid.layers.reduce_mean(x, dim=d) for d in (0, 1, 0, 1, [0, 1], -1)]
        outs += [fluid.layers.reduce_sum(x, dim=[1], keep_dim=True) for _ in range(2)]
        outs += [layer(x) for layer in (fluid.layers.reduce_max, fluid.layers.reduce_min,
                                        fluid.layers.reduce_prod)]
        named = fluid.layers.reduce_mean(x, dim=1, name="row_means")
        with pytest.raises(InvalidArgument, match="dim"):
            fluid.layers.reduce_mean(x, dim=2)
    assert [v.shape for v in outs] == [(53,), (3,), (53,), (3,), (1,), (3,), (3, 1), (3, 1),
                                      (1,), (1,), (1,)]
    assert [v.name for v in outs[:6]] == [f"reduce_mean_{i}.tmp_0" for i in range(6)]
    assert named.name == "row_means.tmp_0" and named.shape == (3,)
    # the first call of each signature fills the memos (dim 0, dim 1, both, -1, sum, max,
    # min, prod); the repeated ones are C's
    assert fallbacks.calls == ["reduce_mean"] * 4 + ["reduce_sum", "reduce_max",
                                                     "reduce_min", "reduce_prod"]
    assert [op.attrs["dim"] for op in main.global_block().ops[:6]] == \
        [[0], [1], [0], [1], [0, 1], [-1]]
    assert len(main.global_block().vars) == 13  # x, the eleven outputs and the named one


def test_live_matmul_multiplies_as_numpy_does():
    main, startup, scope = fluid.Program(), fluid.Program(), fluid.Scope()
    a = np.random.RandomState(3).uniform(-1, 1, (4, 6)).astype("float32")
    b = np.random.RandomState(4).uniform(-1, 1, (5, 6)).astype("float32")
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        with fluid.live(program=main, startup_program=startup, scope=scope):
            x, y = fluid.layers.assign(a), fluid.layers.assign(b)
            products = [fluid.layers.matmul(x, y, transpose_y=True, alpha=2.0)
                        for _ in range(3)]
            for product in products:
                np.testing.assert_allclose(product.numpy(), 2.0 * a @ b.T, rtol=1e-6)
            with pytest.raises(InvalidArgument, match="matmul"):
                fluid.layers.matmul(x, y)
            assert [op.type for op in main.global_block().ops].count("matmul") == 3


def test_layers_scale_names_its_output_as_layer_helper_does(fallbacks):
    """layers.scale without a name, an activation or a ScaleTensor is one op through
    append_one_op (C from its second call), named as LayerHelper names it; the other forms
    are one transaction each, taken back whole when an op is refused."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[2, 41], dtype="float32")
        factor = fluid.data(name="f", shape=[1], dtype="float32")
        del fallbacks.calls[:]
        plain = [fluid.layers.scale(x, 2.0, bias=0.5) for _ in range(3)]
        named = fluid.layers.scale(x, 2.0, name="halved")
        activated = fluid.layers.scale(x, 2.0, act="relu")
        by_tensor = fluid.layers.scale(x, factor)
        main._append_hook = lambda op: op.type == "relu" and _failing_hook(op)
        count = len(main.global_block().ops)
        with pytest.raises(RuntimeError, match="hook refused relu"):
            fluid.layers.scale(x, 3.0, act="relu")
        main._append_hook = None
    assert [v.name for v in plain] == ["scale_0.tmp_0", "scale_1.tmp_0", "scale_2.tmp_0"]
    assert fallbacks.calls == ["scale"]  # the first: its memos filled, the rest C
    assert named.name == "halved" and by_tensor.name == "scale_4.tmp_0"
    assert [op.type for op in main.global_block().ops][3:] == ["scale", "scale", "relu",
                                                              "scale"]
    assert activated.block.ops[5].outputs["Out"] == (activated.name,)
    assert len(main.global_block().ops) == count  # the refused scale + relu: both gone
    assert main.global_block().ops[-1].inputs["ScaleTensor"] == ("f",)


# --- fill_constant: its usual call appends as one op --------------------------------------
def _constants(fill_constant):
    """The constants a program makes, through ``fill_constant`` (the layer, or its
    transaction's way): several dtypes, values and shapes, the second of each alike."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard("c_"):
        outs = []
        for _ in range(2):
            outs += [fill_constant([2, 3], "float32", 1.5), fill_constant((4,), "int64", 7),
                     fill_constant([1], "bool", True), fill_constant([2], "float64", -0.25,
                                                                     force_cpu=True)]
    return main, outs


def test_a_usual_fill_constant_makes_the_record_its_transaction_makes():
    from fluid_nb.api.layers import tensor as tensor_layers
    one_op, _ = _constants(fluid.layers.fill_constant)

    def through_the_transaction(shape, dtype, value, force_cpu=False, out=None):
        with transaction.atomic():
            return tensor_layers._fill_constant(shape, value, force_cpu, out,
                                                tensor_layers.convert_dtype(dtype))
    helper_way, outs = _constants(through_the_transaction)
    assert record(one_op) == record(helper_way)
    assert [list(op.attrs.items()) for op in one_op.global_block().ops] == [
        list(op.attrs.items()) for op in helper_way.global_block().ops]  # (in Fluid's order)
    assert all(out.stop_gradient for out in outs)
    assert [out.name for out in outs[:2]] == ["c_c_fill_constant_0.tmp_0",
                                              "c_c_fill_constant_1.tmp_0"]


def test_zeros_and_ones_are_fill_constants_checked_once_without_a_transaction(monkeypatch):
    """``zeros`` and ``ones`` check their arguments and append fill_constant's one op (its
    body, not its checks again): the record fill_constant makes, no transaction opened."""
    from fluid_nb.api.layers import tensor as tensor_layers

    def through_fill_constant(shape, dtype, value, force_cpu=False):
        return tensor_layers.fill_constant(shape, dtype, value, force_cpu)

    def through_zeros_and_ones(shape, dtype, value, force_cpu=False):
        layer = {0.0: fluid.layers.zeros, 1.0: fluid.layers.ones}[value]
        return layer(shape, dtype, force_cpu)

    def constants(make):
        main = fluid.Program()
        with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
            outs = [make([2, 3], "float32", 0.0), make((4,), "int64", 1.0),
                    make([1], "bool", 1.0, True), make([2], "float64", 0.0)]
            outs += [make([2, 3], "float32", 0.0)]
        return record(main), [list(op.attrs.items()) for op in main.global_block().ops], \
            [out.name for out in outs], all(out.stop_gradient for out in outs)
    opened = []
    open_ = transaction._open
    monkeypatch.setattr(transaction, "_open", lambda programs: opened.append(1) or
                        open_(programs))
    assert constants(through_zeros_and_ones) == constants(through_fill_constant)
    assert opened == []
    with pytest.raises(InvalidArgument, match="zeros: shape"):
        fluid.layers.zeros([-2], "float32")


def test_a_refused_fill_constant_leaves_nothing_and_gives_its_name_back():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        fluid.layers.fill_constant([2], "int32", 1)
        before = (list(main.global_block().vars), dict(unique_name._generator.ids),
                  len(main.global_block().ops))

        def refuse(op):
            raise RuntimeError(f"hook refused {op.type}")
        main._append_hook = refuse
        with pytest.raises(RuntimeError, match="refused fill_constant"):
            fluid.layers.fill_constant([2], "int32", 2)
        main._append_hook = None
        assert (list(main.global_block().vars), dict(unique_name._generator.ids),
                len(main.global_block().ops)) == before
        again = fluid.layers.fill_constant([2], "int32", 3)
    assert again.name == "fill_constant_1.tmp_0" and again.op.attrs["str_value"] == "3"


def test_the_other_fill_constants_keep_their_transactions():
    """A Variable value, a shape holding a Variable, an ``out`` given: a transaction each,
    all or nothing (the shape's own constants go with a refused call)."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        n = fluid.layers.fill_constant([1], "int32", 3)
        value = fluid.layers.fill_constant([1], "float32", 2.0)
        by_value = fluid.layers.fill_constant([2], "float32", value)
        by_dim = fluid.layers.fill_constant([n, 2], "float32", 1.0)
        out = main.global_block().create_var(name="out", dtype="float32")
        given = fluid.layers.fill_constant([3], "float32", 4.0, out=out)
        count, names = len(main.global_block().ops), list(main.global_block().vars)

        def refuse(op):
            if op.type == "fill_constant" and op.inputs.get("ShapeTensorList"):
                raise RuntimeError("hook refused the constant")
        main._append_hook = refuse
        with pytest.raises(RuntimeError, match="refused the constant"):
            fluid.layers.fill_constant([n, 5], "float32", 1.0)  # ([5] is a constant first)
        main._append_hook = None
    assert by_value.op.inputs["ValueTensor"] == (value.name,)
    assert by_dim.op.inputs["ShapeTensorList"][0] == n.name and by_dim.shape == (-1, 2)
    assert given is out and out.shape == (3,)
    assert len(main.global_block().ops) == count and list(main.global_block().vars) == names


# --- concat: its usual call appends as one op, its inference remembered --------------------
def _joins(concat):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        a = fluid.data(name="a", shape=[-1, 3, 13], dtype="float32", lod_level=1)
        b = fluid.data(name="b", shape=[-1, 5, 13], dtype="float32")
        c = fluid.data(name="c", shape=[2, 3, 13], dtype="float32")
        outs = [concat([a, b], 1), concat([a, b, a], 1), concat([a, c], 0), concat([a], 2),
                concat([b, a], -2), concat([a, b], 1), concat([c, c, c], 0)]
    return main, outs


def test_a_usual_concat_makes_the_record_its_transaction_makes(inferences):
    from fluid_nb.api.layers import tensor as tensor_layers
    one_op, outs = _joins(fluid.layers.concat)

    def through_the_transaction(input, axis=0, name=None):
        with transaction.atomic():
            return tensor_layers._concat(input, axis, name)
    helper_way, _ = _joins(through_the_transaction)
    assert record(one_op) == record(helper_way)
    assert [out.shape for out in outs] == [(-1, 8, 13), (-1, 11, 13), (-1, 3, 13),
                                           (-1, 3, 13), (-1, 8, 13), (-1, 8, 13), (6, 3, 13)]
    assert [out.lod_level for out in outs] == [1, 1, 1, 1, 0, 1, 0]  # (X[0]'s)
    # each signature inferred once (the memo is the op's, for every program): the sixth
    # call is the first's again
    assert inferences == ["concat"] * 6


def test_a_refused_concat_leaves_nothing_and_mixed_dtypes_are_refused():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        a = fluid.data(name="a", shape=[2, 3], dtype="float32")
        b = fluid.data(name="b", shape=[2, 3], dtype="float64")
        fluid.layers.concat([a, a])
        before = (list(main.global_block().vars), dict(unique_name._generator.ids),
                  len(main.global_block().ops))
        with pytest.raises(InvalidArgument, match="one data type"):
            fluid.layers.concat([a, b])
        with pytest.raises(InvalidArgument, match="concat"):
            fluid.layers.concat([a, a], 2)  # (no axis 2 in rank 2)

        def refuse(op):
            raise RuntimeError(f"hook refused {op.type}")
        main._append_hook = refuse
        with pytest.raises(RuntimeError, match="refused concat"):
            fluid.layers.concat([a, a])
        main._append_hook = None
        assert (list(main.global_block().vars), dict(unique_name._generator.ids),
                len(main.global_block().ops)) == before
        again = fluid.layers.concat([a, a], 1)
    assert again.name == "concat_1.tmp_0" and again.shape == (2, 6)


# -x, x.astype(...) and x @ y: one op each through append_one_op, all or nothing without a
# transaction's snapshot of the programs; their record is the one a transaction around
# LayerHelper-style appends made
def _transacted_cast(x, dtype):
    block = x.block.program.current_block()
    out = math_op_patch._tmp(block, dtype)
    block.append_op(type="cast", inputs={"X": [x]}, outputs={"Out": [out]},
                    attrs={"in_dtype": int(x.dtype), "out_dtype": int(out.dtype)})
    return out


def _transacted_matmul(x, y):
    block = x.block.program.current_block()
    out = math_op_patch._tmp(block, x.dtype)
    block.append_op(type="matmul", inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]},
                    attrs={"transpose_X": False, "transpose_Y": False, "alpha": 1.0})
    return out


def _transacted_neg(x):
    block = x.block.program.current_block()
    out = math_op_patch._tmp(block, x.dtype)
    block.append_op(type="scale", inputs={"X": [x]}, outputs={"Out": [out]},
                    attrs={"scale": -1.0, "bias": 0.0})
    return out


def _transacted_scalar(x, value, op_type, reverse=False):
    """``x <op> value`` as the transaction's way appends it: the number's [1] tensor, then
    the op."""
    block = x.block.program.current_block()
    scalar = math_op_patch._scalar_tensor(block, value, x.dtype)
    a, b = (scalar, x) if reverse else (x, scalar)
    out = math_op_patch._tmp(block, "bool" if op_type in math_op_patch._COMPARE else x.dtype)
    block.append_op(type=op_type, inputs={"X": a, "Y": b}, outputs={"Out": out})
    return out


OPERATOR_CALLS = {
    "x > 0.5": (lambda v: v["x"] > 0.5,
                lambda v: _transacted_scalar(v["x"], 0.5, "greater_than")),
    "1 < x": (lambda v: 1 < v["x"], lambda v: _transacted_scalar(v["x"], 1, "greater_than")),
    "x == 2.0": (lambda v: v["x"] == 2.0, lambda v: _transacted_scalar(v["x"], 2.0, "equal")),
    "x ** 2": (lambda v: v["x"] ** 2, lambda v: _transacted_scalar(v["x"], 2, "elementwise_pow")),
    "2 ** x": (lambda v: 2 ** v["x"],
               lambda v: _transacted_scalar(v["x"], 2, "elementwise_pow", reverse=True)),
    "x % 3": (lambda v: v["x"] % 3, lambda v: _transacted_scalar(v["x"], 3, "elementwise_mod")),
    "2 / x": (lambda v: 2 / v["x"],
              lambda v: _transacted_scalar(v["x"], 2, "elementwise_div", reverse=True)),
    "x ** 2.5": (lambda v: v["x"] ** 2.5,
                 lambda v: _transacted_scalar(v["x"], 2.5, "elementwise_pow")),
    "n > -3": (lambda v: v["n"] > -3, lambda v: _transacted_scalar(v["n"], -3, "greater_than")),
    "n // np.int64(2)": (lambda v: v["n"] // np.int64(2),
                         lambda v: _transacted_scalar(v["n"], 2, "elementwise_floordiv")),
    "-x": (lambda v: -v["x"], lambda v: _transacted_neg(v["x"])),
    "x.astype('float64')": (lambda v: v["x"].astype("float64"),
                            lambda v: _transacted_cast(v["x"], "float64")),
    "x.astype(VarType.INT32)": (lambda v: v["x"].astype(fluid.core.VarDesc.VarType.INT32),
                                lambda v: _transacted_cast(v["x"],
                                                           fluid.core.VarDesc.VarType.INT32)),
    "x @ w": (lambda v: v["x"] @ v["w"], lambda v: _transacted_matmul(v["x"], v["w"])),
    "x @ z, refused": (lambda v: v["x"] @ v["z"], lambda v: _transacted_matmul(v["x"], v["z"])),
    "x.astype('float33'), refused": (lambda v: v["x"].astype("float33"),
                                     lambda v: _transacted_cast(v["x"], "float33")),
}


@pytest.mark.parametrize("call", list(OPERATOR_CALLS))
def test_an_operators_one_op_is_the_record_a_transaction_made(call):
    def outcome(apply):
        main = fluid.Program()
        with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
            v = {"x": fluid.data(name="x", shape=[-1, 3], dtype="float32"),
                 "n": fluid.data(name="n", shape=[-1, 3], dtype="int64"),
                 "w": fluid.data(name="w", shape=[3, 2], dtype="float32"),
                 "z": fluid.data(name="z", shape=[2, 5], dtype="float32")}
            answers = []
            for _ in range(2):  # (the second from the memos)
                try:
                    answers.append(apply(v).name)
                except Exception as error:
                    answers.append((type(error), str(error)))
            answers.append((v["x"] + v["x"]).name)  # (the names handed out after)
        # (the attributes' order too: a program's text and views show it)
        return record(main), answers, [list(op.attrs) for op in main.global_block().ops]
    operator, transacted = OPERATOR_CALLS[call]
    assert outcome(operator) == outcome(transaction.transactional(transacted))


def test_an_operator_with_a_number_refused_takes_its_tensor_back():
    """``x > 0.5``: the number's tensor and then the comparison, each all or nothing; a
    refused comparison takes the tensor, its holder and its name back too."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[2, 3], dtype="float32")
        x > 0.5
        before = (list(main.global_block().vars), dict(unique_name._generator.ids),
                  len(main.global_block().ops))

        def refuse(op):
            if op.type == "greater_than":
                raise RuntimeError("hook refused greater_than")
        main._append_hook = refuse
        for _ in range(2):  # (the second from the memos: the C path's refusal)
            with pytest.raises(RuntimeError, match="refused greater_than"):
                x > 0.5
            assert (list(main.global_block().vars), dict(unique_name._generator.ids),
                    len(main.global_block().ops)) == before
        main._append_hook = None
        assert (x > 0.5).name == "tmp_3"


def test_an_operator_with_a_number_appends_its_two_ops_in_c(monkeypatch):
    """``x > 0.5``, ``x ** 2``, ``2 / x``: the number's tensor and the op appended in one C
    call, math_op_patch._with_scalar (the definition) not called; a number C does not read
    (a bool, a NumPy scalar) goes that Python way."""
    ways = []
    python_way = math_op_patch._with_scalar
    monkeypatch.setattr(math_op_patch, "_with_scalar",
                        lambda *args: ways.append(args[2]) or python_way(*args))
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[-1, 3], dtype="float32")
        outs = [x > 0.5, x ** 2, 2 / x, x == -1]
        assert ways == []
        x > np.float32(0.5)
        assert ways == ["greater_than"]
        version = main._version
        with pytest.raises(OverflowError):  # (the Python way's float() refuses it)
            x > 2 ** 2000
        assert ways[-1] == "greater_than" and main._version == version
    assert [op.type for op in main.global_block().ops] == \
        ["fill_constant", "greater_than", "fill_constant", "elementwise_pow", "fill_constant",
         "elementwise_div", "fill_constant", "equal", "fill_constant", "greater_than"]
    assert [out.dtype for out in outs] == [fluid.core.VarDesc.VarType.BOOL,
                                           fluid.core.VarDesc.VarType.FP32,
                                           fluid.core.VarDesc.VarType.FP32,
                                           fluid.core.VarDesc.VarType.BOOL]
    assert all(v.stop_gradient for name, v in main.global_block().vars.items()
               if name in {op.outputs["Out"][0] for op in main.global_block().ops
                           if op.type == "fill_constant"})


def test_a_replayed_layer_whose_python_way_compares_with_a_number_is_never_replayed():
    """A replayed layer is recorded by counting its Python way's appends: an operator's two
    ops must be counted, not appended past the count (the layer would replay one op)."""
    def compared_then_scaled(x, value):
        x > value
        return transaction.append_one_op(x.block, "scale", {"X": (x.name,)}, {"scale": 2.0},
                                         x.dtype, "scale")
    layer = transaction.replayed(compared_then_scaled,
                                 {"append_one_op": transaction.append_one_op})
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[-1, 3], dtype="float32")
        for _ in range(3):
            layer(x, 0.5)
    assert [op.type for op in main.global_block().ops] == \
        ["fill_constant", "greater_than", "scale"] * 3


def test_live_operators_with_numbers_give_numpy_values():
    a = (np.arange(12, dtype="float32").reshape(3, 4) - 4) / 3
    n = np.arange(12, dtype="int64").reshape(3, 4) - 3
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard(), \
            fluid.live(program=main, startup_program=startup, scope=fluid.Scope()):
        x = fluid.layers.data(name="x", shape=[3, 4], dtype="float32", append_batch_size=False,
                              value=a)
        i = fluid.layers.data(name="i", shape=[3, 4], dtype="int64", append_batch_size=False,
                              value=n)
        for _ in range(2):  # (the second from the memos: the C paths)
            for got, want in [(x > 0.5, a > 0.5), (1 < x, 1 < a), (x == 1.0, a == 1.0),
                              (x ** 2, a ** 2), (2 ** x, 2 ** a), (x % 3, a % 3),
                              (i // 2, n // 2), (i % 3, n % 3), (i ** 2, n ** 2),
                              (x < x * 2, a < a * 2), (i >= i, n >= n)]:
                np.testing.assert_array_equal(got.numpy(), want, strict=True)


def test_a_comparison_writing_a_loops_condition_in_its_body_is_inferred_each_time():
    """less_than's inference is remembered per signature; one whose Out is a parent block's
    variable (a While loop's condition, updated in its body) has no Out in its own block to
    remember it by: inferred, not remembered."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        i = fluid.layers.fill_constant([1], "int64", 0)
        n = fluid.layers.fill_constant([1], "int64", 5)
        total = fluid.layers.fill_constant([1], "int64", 0)
        cond = fluid.layers.less_than(i, n)
        loop = fluid.layers.While(cond)
        with loop.block():
            fluid.layers.assign(total + i, total)
            fluid.layers.increment(i, in_place=True)
            # (the operands this block's, Out the parent's; twice: the second call has the
            # memo's signature)
            step, limit = i * 1, n * 1
            fluid.layers.less_than(step, limit, cond=cond)
            fluid.layers.less_than(step, limit, cond=cond)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    got, = exe.run(main, fetch_list=[total])
    assert got.tolist() == [10]


def _spec(op_type):
    return fw._op_defs[op_type]


def test_a_memo_s_answer_changed_between_appends_is_the_next_append_s():
    """The C path keeps the last key each inference memo answered and its answer, for as
    long as the memo is unchanged: an answer put in its place between two appends (or the
    memo cleared, as a full one is) is the next append's."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        c = fluid.data(name="c", shape=[5, 31], dtype="float32")
        one = fluid.data(name="one", shape=[5, 31], dtype="float32")
        for _ in range(3):
            c = c + one
        memo = _spec("elementwise_add")._inferred
        key = next(k for k in memo if k[:6] == ((5, 31), c.dtype, 0, (5, 31), c.dtype, 0))
        answered = memo[key]
        try:
            memo[key] = ((5, 7), answered[1], 0)
            assert (c + one).shape == (5, 7)
            memo[key] = answered
            assert (c + one).shape == (5, 31)
            memo.clear()
            assert (c + one).shape == (5, 31) and memo[key] == answered  # (inferred again)
        finally:
            memo[key] = answered


def test_a_definition_s_memo_replaced_between_appends_is_the_one_read(inferences):
    """What an append reads of its op's definition (its memos, its attribute defaults) is
    kept while the definition is unchanged: a memo replaced between two appends is read,
    and filled, by the next."""
    main, startup = fluid.Program(), fluid.Program()
    spec = _spec("elementwise_sub")
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        c = fluid.data(name="c", shape=[5, 37], dtype="float32")
        one = fluid.data(name="one", shape=[5, 37], dtype="float32")
        for _ in range(3):
            c = c - one
        kept = spec._inferred
        try:
            del inferences[:]
            spec._inferred = {}
            assert (c - one).shape == (5, 37) and inferences == ["elementwise_sub"]
            assert len(spec._inferred) == 1
            assert (c - one).shape == (5, 37) and inferences == ["elementwise_sub"]
        finally:
            spec._inferred = kept
