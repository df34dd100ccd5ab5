"""The layers that reshape a value (reshape, transpose, squeeze, unsqueeze, flatten) append
one op, X in, Out and the XShape its gradient reads out (``transaction.append_with_xshape``),
without a transaction's snapshot: the record LayerHelper's way makes (two temporaries of
one layer name), all or nothing. Their ops' shape inference (the ``infer_from_x`` trait)
is remembered per X's fields and attributes, for both outputs."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument
from fluid_nb.framework import registry, unique_name

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


@pytest.fixture
def inferences(monkeypatch):
    """The op types whose shape inference ran (not answered from the memo)."""
    ran = []
    infer = registry.OpDef._infer

    def counted(self, op):
        ran.append(op.type)
        return infer(self, op)
    monkeypatch.setattr(registry.OpDef, "_infer", counted)
    return ran


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
