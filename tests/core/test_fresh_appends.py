"""The layers of one op with several fresh outputs (``topk``, ``argsort``, ``cross_entropy``,
``softmax_with_cross_entropy``, ``dropout``, and ``accuracy``'s second op) or an input of
several variables (``concat``, ``sum``, ``stack``) or an output slot of several
(``split``, ``unstack``) append through
``transaction.append_fresh``: the record LayerHelper's way makes, all or nothing, without a
transaction's snapshot. The common case is C (``_op_record.append_fresh``, from a call whose
memos hold its answer on): it must make the record the Python way (``_append_fresh``) makes,
send every other call that way before it changes anything, and take back all it made when
the live session refuses to run the op."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.api.layers import loss, math, metric_op, nn
from fluid_nb.errors import InvalidArgument
from fluid_nb.framework import transaction, unique_name
from tests.core.op_records import fresh_fallbacks, record  # noqa: F401 (a fixture)

#: the layers, on x [13, 7] float32, probabilities p of that shape and labels [13, 1]
LAYERS = {
    "top_k": lambda v: fluid.layers.topk(v["x"], 3)[0],
    "argsort": lambda v: fluid.layers.argsort(v["x"], axis=1, descending=True)[1],
    "cross_entropy2": lambda v: fluid.layers.cross_entropy(v["p"], v["label"]),
    "softmax_with_cross_entropy": lambda v: fluid.layers.softmax_with_cross_entropy(
        v["x"], v["label"]),
    "dropout": lambda v: fluid.layers.dropout(v["x"], 0.25, seed=3),
    "accuracy": lambda v: fluid.layers.accuracy(v["p"], v["label"], k=2),
    # (an X of several names)
    "concat": lambda v: fluid.layers.concat([v["x"], v["p"], v["x"]], axis=1),
    "sum": lambda v: fluid.layers.sum([v["x"], v["p"]]),
    "stack": lambda v: fluid.layers.stack([v["p"], v["x"]], axis=2),
    # (an output slot of several temporaries)
    "split": lambda v: fluid.layers.split(v["x"], [2, 4, 1], dim=1)[1],
    "unstack": lambda v: fluid.layers.unstack(v["p"], axis=1)[3],
}


def _cell(calls=3, prefix=""):
    """Each layer ``calls`` times in a fresh program; its record and its outputs' names."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard(prefix):
        # (a shape no other test uses: the memos are the process's)
        values = {"x": fluid.data(name="x", shape=[13, 7], dtype="float32"),
                  "p": fluid.data(name="p", shape=[13, 7], dtype="float32"),
                  "label": fluid.data(name="label", shape=[13, 1], dtype="int64")}
        names = [LAYERS[layer](values).name for layer in LAYERS for _ in range(calls)]
    return main, names


def _python_way(monkeypatch):
    """Every layer's append_fresh the Python way's (the C path never asked)."""
    for module in (loss, math, metric_op, nn):
        monkeypatch.setattr(module, "append_fresh", transaction._append_fresh)


def test_a_repeated_layer_appends_in_c_from_its_second_call(fresh_fallbacks):
    _cell()
    # (accuracy's top_k is the first top_k of its signature: the Python way once)
    assert fresh_fallbacks.calls == ["top_k", "argsort", "cross_entropy2",
                                     "softmax_with_cross_entropy", "dropout", "top_k",
                                     "accuracy", "concat", "sum", "stack", "split",
                                     "unstack"]


def test_the_c_path_makes_the_record_the_python_way_makes(monkeypatch):
    made, names = _cell(prefix="a_")
    _python_way(monkeypatch)
    python, python_names = _cell(prefix="a_")
    assert names == python_names
    assert record(made) == record(python)
    for ours, theirs in zip(made.global_block().ops, python.global_block().ops):
        assert list(ours.outputs) == list(theirs.outputs)  # (cross_entropy2: Y, MatchX, XShape)
        # (the same frames, the layer's first; its offset is at the call or past its cache)
        assert ours.callstack[::2] == theirs.callstack[::2]
        assert ours.callstack[-2:] == theirs.callstack[-2:]  # (the cell's line)
    for name, var in made.global_block().vars.items():
        theirs = python.global_block().vars[name]
        if ".tmp_" in name:  # (the fields in the order the Python way writes them)
            assert list(var.__dict__) == list(theirs.__dict__)
        assert var.stop_gradient == theirs.stop_gradient  # (top_k's and dropout's Mask)


def test_calls_the_c_path_leaves_to_the_python_way(fresh_fallbacks):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[17, 5], dtype="float32")
        fluid.layers.topk(x, 2)
        fluid.layers.topk(x, 2)  # (C)
        with fluid.name_scope("scoped"):  # (annotations the Python way writes)
            fluid.layers.topk(x, 2)
        with transaction.atomic():
            fluid.layers.topk(x, 2)
        main.global_block().create_var(name="top_k_4.tmp_0", shape=[1], dtype="float32")
        taken = fluid.layers.topk(x, 2)[0]  # (a name taken: the Python way reuses it)
        fluid.layers.topk(x, 3)  # (a k not seen yet)
    assert fresh_fallbacks.calls == ["top_k"] * 5
    assert taken.name == "top_k_4.tmp_0" and taken.shape == (17, 2)


def test_a_slot_of_several_outputs_names_them_in_a_run_and_infers_each(fresh_fallbacks):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[37, 9], dtype="float32")
        pieces = [fluid.layers.split(x, [2, -1, 3], dim=1) for _ in range(3)]
        thirds = [fluid.layers.split(x, 3, dim=1) for _ in range(2)]  # (another count)
        with pytest.raises(InvalidArgument, match="divide dim 1"):
            fluid.layers.split(x, 4, dim=1)
    assert fresh_fallbacks.calls == ["split", "split"]  # (each count's first call)
    for n, made in enumerate(pieces):
        assert [v.name for v in made] == [f"split_{n}.tmp_{k}" for k in range(3)]
        assert [v.shape for v in made] == [(37, 2), (37, 4), (37, 3)]
        assert main.global_block().ops[n].outputs == {"Out": tuple(v.name for v in made)}
    assert [v.shape for v in thirds[1]] == [(37, 3)] * 3
    assert [v.name for v in thirds[1]] == [f"split_4.tmp_{k}" for k in range(3)]
    assert "split_5.tmp_0" not in main.global_block().vars  # (the refused call made none)


def test_a_refused_input_of_several_names_leaves_nothing(fresh_fallbacks):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[29, 3], dtype="float32")
        fluid.layers.concat([x, x], axis=0)
        block = main.global_block()
        names, ops = list(block.vars), list(block.ops)
        for _ in range(2):  # (top_k's X takes one variable: the slot check refuses two)
            with pytest.raises(InvalidArgument, match="top_k: input 'X' expected one"):
                transaction.append_fresh(block, "top_k", {"X": ("x", "x")},
                                         {"Out": [(x.dtype, True)],
                                          "Indices": [(x.dtype, True)]}, {"k": 1}, "top_k")
        assert list(block.vars) == names and block.ops == ops
        assert "top_k" not in unique_name._generator.ids
        joined = fluid.layers.concat([x, x], axis=0)  # (C)
    assert fresh_fallbacks.calls == ["concat", "top_k", "top_k"]
    assert joined.shape == (58, 3) and joined.name == "concat_1.tmp_0"


def _live_cell(scope):
    main, startup = fluid.Program(), fluid.Program()
    session = fluid.live(program=main, startup_program=startup, scope=scope)
    return main, startup, session


def _value(name, array, live=True):
    """A data variable holding ``array`` (its value in a live session)."""
    return fluid.layers.data(name=name, shape=list(array.shape), dtype=str(array.dtype),
                             append_batch_size=False, **({"value": array} if live else {}))


def test_a_refused_run_takes_back_the_op_its_temporaries_and_names():
    rng = np.random.RandomState(0)
    scope = fluid.Scope()
    main, startup, session = _live_cell(scope)
    with fluid.program_guard(main, startup), fluid.unique_name.guard(), session:
        p = _value("p", rng.dirichlet(np.ones(3), 19).astype("float32"))
        good = _value("good", rng.randint(0, 3, (19, 1)))
        bad = _value("bad", np.full((19, 1), 5))
        first = fluid.layers.cross_entropy(p, good)
        block = main.global_block()
        ops, names = list(block.ops), list(block.vars)
        counters = dict(unique_name._generator.ids)
        for _ in range(2):  # (the memo holds the signature: the C path runs the op)
            with pytest.raises(InvalidArgument, match=r"class ids in \[0, 3\).*5"):
                fluid.layers.cross_entropy(p, bad)
            assert block.ops == ops and list(block.vars) == names
            assert unique_name._generator.ids == counters
            assert "cross_entropy2_1.tmp_0" not in scope.vars
        second = fluid.layers.cross_entropy(p, good)
    assert (first.name, second.name) == ("cross_entropy2_0.tmp_0", "cross_entropy2_1.tmp_0")
    np.testing.assert_array_equal(second.numpy(), first.numpy())


@pytest.mark.parametrize("live", [False, True])
def test_a_refused_accuracy_takes_back_its_top_k(live):
    scope = fluid.Scope()
    main, startup, session = _live_cell(scope)
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        if live:
            session.__enter__()
        try:
            p = _value("p", np.eye(4, dtype="float32")[np.arange(23) % 4], live)
            wide = _value("wide", np.zeros((23, 2), "int64"), live)
            label = _value("label", (np.arange(23) % 4)[:, None], live)
            block = main.global_block()
            names = list(block.vars)
            for _ in range(2):
                with pytest.raises(InvalidArgument, match="Label' expected shape"):
                    fluid.layers.accuracy(p, wide)
                assert block.ops == [] and list(block.vars) == names
                assert unique_name._generator.ids == {}
            accuracy = fluid.layers.accuracy(p, label)
        finally:
            if live:
                session.__exit__(None, None, None)
    assert [op.type for op in block.ops] == ["top_k", "accuracy"]
    assert block.ops[0].outputs["Out"] == ("top_k_0.tmp_0",)
    assert accuracy.name == "accuracy_0.tmp_0"
    if live:
        assert accuracy.numpy().tolist() == [1.0]


def test_a_remembered_inference_is_not_given_to_an_out_of_another_kind():
    """assign's inference gives Out X's kind; its memo holds shapes, dtypes and LoD levels
    alone, so an Out of another kind (a SelectedRows declared before) is inferred."""
    from fluid_nb.tensor.dtypes import VarType
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[31, 2], dtype="float32")
        block = main.global_block()
        for name, kind in (("dense", VarType.LOD_TENSOR), ("sparse", VarType.SELECTED_ROWS)):
            out = block.create_var(name=name, shape=[31, 2], dtype="float32", type=kind)
            block.append_op(type="assign", inputs={"X": [x]}, outputs={"Out": [out]})
    assert block.var("sparse").type == VarType.LOD_TENSOR
