"""The layers that reshape a value (reshape, transpose, squeeze, unsqueeze, flatten) append
one op, X in, Out and the XShape its gradient reads out (``transaction.append_with_xshape``),
without a transaction's snapshot: the record LayerHelper's way makes (two temporaries of
one layer name), all or nothing. Their ops' shape inference (the ``infer_from_x`` trait)
is remembered per X's fields and attributes, for both outputs. The common case is C
(``_op_record.append_with_xshape``): it must make the record the Python way
(``_append_with_xshape``) makes, and send every other call that way before it changes
anything."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.api.layers import manip
from fluid_nb.errors import InvalidArgument
from fluid_nb.framework import callstack, transaction, unique_name
from tests.core.op_records import configure, inferences, record  # noqa: F401 (a fixture)

#: a layer call -> (op type, the layer name its temporaries take, Out's shape) for X [6, 1, 4]
CALLS = {
    "reshape": (lambda x: fluid.layers.reshape(x, [4, -1]), "reshape2", "reshape2", (4, 6)),
    "transpose": (lambda x: fluid.layers.transpose(x, [2, 0, 1]), "transpose2", "transpose",
                  (4, 6, 1)),
    "squeeze": (lambda x: fluid.layers.squeeze(x, [1]), "squeeze2", "squeeze", (6, 4)),
    "unsqueeze": (lambda x: fluid.layers.unsqueeze(x, 0), "unsqueeze2", "unsqueeze2",
                  (1, 6, 1, 4)),
    "flatten": (lambda x: fluid.layers.flatten(x, 2), "flatten2", "flatten", (6, 4)),
}


@pytest.mark.parametrize("layer", sorted(CALLS))
def test_one_op_two_temporaries_named_as_layer_helper_names_them(layer, inferences):
    call, op_type, name, shape = CALLS[layer]
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        # (a shape no other test uses: the memo is the process's)
        x = fluid.data(name="x", shape=[6, 1, 4], dtype="float64")
        outs = [call(x) for _ in range(3)]
    block = main.global_block()
    assert [op.type for op in block.ops] == [op_type] * 3
    assert [v.name for v in outs] == [f"{name}_{i}.tmp_0" for i in range(3)]
    for i, (op, out) in enumerate(zip(block.ops, outs)):
        assert op.outputs == {"Out": (out.name,), "XShape": (f"{name}_{i}.tmp_1",)}
        assert out.shape == shape and out.dtype == fluid.core.VarDesc.VarType.FP64
        xshape = block.var(f"{name}_{i}.tmp_1")
        assert xshape.shape == (0, 6, 1, 4) and xshape.dtype == out.dtype
    assert len(block.vars) == 7  # x and two temporaries a call
    assert inferences == [op_type]  # the second and third from the memo


def test_the_memo_keys_on_the_attributes_and_on_x():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[3, 10], dtype="float32")
        y = fluid.data(name="y", shape=[5, 6], dtype="float32")
        shapes = [fluid.layers.reshape(v, s).shape
                  for v, s in ((x, [5, 6]), (x, [6, 5]), (y, [5, 6]), (y, [-1, 10]),
                               (x, [5, 6]), (y, [-1, 10]))]
        permuted = [fluid.layers.transpose(v, p).shape
                    for v, p in ((x, [1, 0]), (y, [1, 0]), (x, [0, 1]), (x, [1, 0]))]
    assert shapes == [(5, 6), (6, 5), (5, 6), (3, 10), (5, 6), (3, 10)]
    assert permuted == [(10, 3), (6, 5), (3, 10), (10, 3)]


def test_a_refused_reshape_leaves_nothing_and_gives_its_names_back():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[4, 8], dtype="float32")
        fluid.layers.reshape(x, [8, 4])
        before = (list(main.global_block().vars), dict(unique_name._generator.ids))
        for _ in range(2):  # (the second with inference's memo filled for other shapes)
            with pytest.raises(InvalidArgument, match="reshape2"):
                fluid.layers.reshape(x, [5, 7])
            assert (list(main.global_block().vars), dict(unique_name._generator.ids)) == before
            assert [op.type for op in main.global_block().ops] == ["reshape2"]
        again = fluid.layers.reshape(x, [2, 16])
    assert again.name == "reshape2_1.tmp_0" and again.shape == (2, 16)


def test_the_other_forms_keep_their_transactions_and_names():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[4, 8], dtype="float32")
        dims = fluid.layers.fill_constant([2], "int32", 4)
        named = fluid.layers.reshape(x, [8, 4], name="r")
        activated = fluid.layers.reshape(x, [8, 4], act="relu")
        by_tensor = fluid.layers.reshape(x, dims)
        swapped = fluid.layers.transpose(x, [1, 0], name="t")
        count = len(main.global_block().ops)

        def refuse_relu(op):
            if op.type == "relu":
                raise RuntimeError("hook refused relu")
        main._append_hook = refuse_relu
        with pytest.raises(RuntimeError, match="refused relu"):
            fluid.layers.reshape(x, [8, 4], act="relu")
        main._append_hook = None
    assert named.name == "r.tmp_0" and swapped.name == "t.tmp_0"
    assert activated.op.type == "relu" and by_tensor.shape == (-1, -1)
    assert len(main.global_block().ops) == count  # the refused reshape + relu: both gone
    assert not [n for n in main.global_block().vars if n.startswith("reshape2_2")]


def test_live_reshapes_and_transposes_compute_numpys_values():
    main, startup, scope = fluid.Program(), fluid.Program(), fluid.Scope()
    a = np.arange(24, dtype="float32").reshape(2, 3, 4)
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        with fluid.live(program=main, startup_program=startup, scope=scope):
            x = fluid.layers.assign(a)
            for _ in range(2):
                np.testing.assert_array_equal(fluid.layers.reshape(x, [4, -1]).numpy(),
                                              a.reshape(4, -1))
                np.testing.assert_array_equal(fluid.layers.transpose(x, [2, 0, 1]).numpy(),
                                              a.transpose(2, 0, 1))
                np.testing.assert_array_equal(fluid.layers.flatten(x, 2).numpy(),
                                              a.reshape(6, 4))
                np.testing.assert_array_equal(fluid.layers.unsqueeze(x, [0]).numpy(),
                                              a[None])
            with pytest.raises(InvalidArgument, match="reshape2"):
                fluid.layers.reshape(x, [5, 5])
            assert [op.type for op in main.global_block().ops].count("reshape2") == 2


# --- the C path (_op_record.append_with_xshape) ----------------------------------------------
@pytest.fixture
def fallbacks():
    """The C path's fallback (the Python way), counting the op types it is handed."""
    calls = []

    def spy(*args):
        calls.append(args[1])
        return transaction._append_with_xshape(*args)
    configure(with_xshape=spy)
    yield calls
    configure(with_xshape=transaction._append_with_xshape)


def _reshaping_cell(prefix=""):
    """Each of CALLS on X [8, 1, 3] (a shape no other test uses: the memos are the
    process's), on a second X of that shape, and on an X [3, 1, 8]."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard(prefix):
        for n, shape in enumerate(((8, 1, 3), (8, 1, 3), (3, 1, 8))):
            x = fluid.data(name=f"x{n}", shape=list(shape), dtype="float32")
            for call, *_ in (CALLS[name] for name in sorted(CALLS)):
                call(x)
    return main


def test_the_c_path_makes_the_record_the_python_way_makes(fallbacks, monkeypatch):
    c_program = _reshaping_cell()
    # the first call of each op type and X's fields fills the memos the Python way; the
    # second on the same X is C
    assert sorted(fallbacks) == sorted(["flatten2", "reshape2", "squeeze2", "transpose2",
                                        "unsqueeze2"] * 2)
    monkeypatch.setattr(manip, "append_with_xshape", transaction._append_with_xshape)
    python_program = _reshaping_cell()
    assert record(c_program) == record(python_program)
    # C's, repeated calls the layers replay: the op's stack starts at the line calling the
    # layer (CALLS' lambdas), as a replay has no frame of its own
    for op in c_program.global_block().ops[5:10]:
        functions = [function for _, _, function in callstack.frames(op)]
        assert functions[-2:] == ["_reshaping_cell", "<lambda>"], functions


def test_both_temporaries_take_the_generators_prefix_as_layer_helper_gives_them(fallbacks):
    main = _reshaping_cell("pre_")
    names = [op.outputs for op in main.global_block().ops if op.type == "transpose2"]
    assert names[1] == {"Out": ("pre_pre_transpose_1.tmp_0",),
                        "XShape": ("pre_pre_transpose_1.tmp_1",)}
    assert "transpose2" not in fallbacks[5:]  # (the second transpose was C)


def test_a_hook_that_refuses_the_op_leaves_nothing_and_gives_the_names_back(fallbacks):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[3, 1, 11], dtype="float32")
        fluid.layers.squeeze(x, [1])
        before = (list(main.global_block().vars), dict(unique_name._generator.ids),
                  len(main.global_block().ops))

        def refuse(op):
            raise RuntimeError(f"hook refused {op.type}")
        main._append_hook = refuse
        del fallbacks[:]
        with pytest.raises(RuntimeError, match="refused squeeze2"):
            fluid.layers.squeeze(x, [1])
        main._append_hook = None
        assert fallbacks == []  # (C took it, and took it back)
        assert (list(main.global_block().vars), dict(unique_name._generator.ids),
                len(main.global_block().ops)) == before
        again = fluid.layers.squeeze(x, [1])
    assert again.name == "squeeze_1.tmp_0"


@pytest.mark.parametrize("case", ["transaction", "name taken", "parent block's X",
                                  "a list shape"])
def test_calls_the_memos_cannot_answer_go_the_python_way(fallbacks, case):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[9, 1, 2], dtype="float32")
        fluid.layers.unsqueeze(x, [0])
        del fallbacks[:]
        block = main.global_block()
        if case == "transaction":
            with transaction.atomic():
                fluid.layers.unsqueeze(x, [0])
        elif case == "name taken":
            block.create_var(name="unsqueeze2_1.tmp_1", shape=[1], dtype="float32")
            out = fluid.layers.unsqueeze(x, [0])
            assert block.var("unsqueeze2_1.tmp_1").shape == (0, 9, 1, 2)  # reused, inferred
            assert out.shape == (1, 9, 1, 2)
        elif case == "parent block's X":
            sub = main._create_block()
            fluid.layers.unsqueeze(x, [0])
            main._rollback()
            assert [op.type for op in sub.ops] == ["unsqueeze2"]
        elif case == "a list shape":
            x.shape = [9, 1, 2]  # (a list: no memo key can hold it)
            assert fluid.layers.unsqueeze(x, [0]).shape == (1, 9, 1, 2)
    assert fallbacks == ["unsqueeze2"]


def test_a_live_reshape_whose_run_fails_leaves_nothing_behind(fallbacks):
    """X of an unknown batch: inference cannot refuse [5, -1], the run does (32 elements
    in 5 rows); the C path takes back the op, both temporaries, their holders and their
    names."""
    main, startup, scope = fluid.Program(), fluid.Program(), fluid.Scope()
    with fluid.program_guard(main, startup), fluid.unique_name.guard(), \
            fluid.live(program=main, startup_program=startup, scope=scope):
        x = fluid.layers.data(name="x", shape=[8], dtype="float32",
                              value=np.ones((4, 8), "float32"))
        first = fluid.layers.reshape(x, [2, -1])  # (the memos filled the Python way)
        before = (list(main.global_block().vars), dict(unique_name._generator.ids),
                  len(main.global_block().ops), sorted(scope.vars))
        for _ in range(2):  # (the first fills inference's memo for [5, -1])
            del fallbacks[:]
            with pytest.raises(InvalidArgument, match="reshape2"):
                fluid.layers.reshape(x, [5, -1])
            assert (list(main.global_block().vars), dict(unique_name._generator.ids),
                    len(main.global_block().ops), sorted(scope.vars)) == before
        assert fallbacks == []  # (the second went C, and was taken back by it)
        again = fluid.layers.reshape(x, [2, -1])
        assert again.name == "reshape2_1.tmp_0"
        np.testing.assert_array_equal(again.numpy(), first.numpy())
