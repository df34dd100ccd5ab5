"""A live op of any shape runs its first run in one C call (``steps.first_run`` with the
runner's general plan): several outputs, optional and duplicable inputs and outputs,
kernels that keep something in their context. It stores what the Python path (``binding.once_step``,
taken while the arena's event log is on) stores, and hands back every op it does not
take before it changes anything."""
import contextlib

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.exec.steps import first_run
from fluid_nb.live import live, runner

L = fluid.layers
WORDS = np.arange(10, dtype="float32").reshape(5, 2) - 4


class _Watcher:
    """A memory view's stand-in: while one watches, every first run is the Python path's."""


@contextlib.contextmanager
def _cell(name, watched):
    with live(name) as s:
        if watched:
            s.watch_memory(_Watcher.instance)
        yield s, L.data(name="seq", shape=[2], dtype="float32", lod_level=1,
                        value=fluid.create_lod_tensor(WORDS, [[2, 3]], fluid.CPUPlace()))


_Watcher.instance = _Watcher()


@pytest.fixture
def taken(monkeypatch):
    """(op type, whether the C call took it) of each first run asked of ``first_run``."""
    calls = []

    def counted(*args):
        try:
            took = first_run(*args)
        except Exception:
            calls.append((args[0].type, "raised"))
            raise
        calls.append((args[0].type, took is not None))
        return took
    monkeypatch.setattr(runner, "first_run", counted)
    return calls


def _layers(seq):
    """One layer of each shape of op (the outputs to compare, in order)."""
    constant = fluid.ParamAttr(initializer=fluid.initializer.Constant(0.5))
    image = L.reshape(seq, [1, 1, 5, 2])
    top_values, top_indices = L.topk(seq, 1)
    return [
        L.reshape(seq, [5, 1, 2]),            # Out and XShape; the first dim kept: LoD too
        L.reshape(seq, [2, 5]),               # a new first dim: no LoD
        L.transpose(seq, [1, 0]),
        L.concat([seq, seq * 2.0], axis=1),   # a duplicable input; X[0]'s LoD
        L.stack([seq, seq]),
        L.sums([seq, seq]),
        L.fill_constant([2, 2], "float32", 1.0),
        L.fill_constant([2, 2], "float32", 2.0),   # (each keeps its constant in its context)
        L.mean(seq), L.reduce_mean(seq, dim=1),
        top_values, top_indices,              # two outputs, an int64 one
        L.squeeze(L.unsqueeze(seq, [1]), [1]),
        L.dropout(seq, 0.5, is_test=True),
        L.cast(seq, "float64"),
        L.layer_norm(seq),                    # three outputs, optional Scale and Bias
        L.fc(seq, 3, param_attr=constant),
        L.slice(seq, axes=[1], starts=[0], ends=[1]),
        L.softmax_with_cross_entropy(seq, L.fill_constant([5, 1], "int64", 1)),
        L.argmax(seq, 1),
        L.pool2d(image, 2),
        L.conv2d(image, 2, 1, param_attr=constant),
        L.one_hot(L.fill_constant([5, 1], "int64", 2), 4),  # an optional input left out
        *L.split(seq, 2, dim=1),              # a duplicable output, stored item by item
        *L.unstack(seq, axis=1),
        L.split(seq, [2, -1], dim=0)[1],      # (a piece along the sequences: X's LoD kept)
    ]


def test_ops_of_every_shape_store_in_one_call_what_the_python_path_stores(session_name,
                                                                           taken):
    def cell(name, watched):
        with _cell(name, watched) as (s, seq):
            outs = _layers(seq)
            return [(out.numpy(), out.lod()) for out in outs]

    lean = cell(session_name, False)
    took = {op_type for op_type, ran in taken if ran}
    assert {"reshape2", "transpose2", "concat", "stack", "sum", "fill_constant", "mean",
            "reduce_mean", "top_k", "squeeze2", "unsqueeze2", "dropout", "cast",
            "layer_norm", "mul", "slice", "softmax_with_cross_entropy", "arg_max", "pool2d",
            "conv2d", "one_hot", "split", "unstack"} <= took
    count = len(taken)
    general = cell(session_name + "_watched", True)
    assert len(taken) == count  # the event log on: no first run through the C call
    assert len(lean) == len(general)
    for (value, lod), (expected, expected_lod) in zip(lean, general):
        np.testing.assert_array_equal(value, expected)
        assert value.dtype == expected.dtype and lod == expected_lod
    seq_lod = [[0, 2, 5]]
    reshaped, flat, transposed, joined = (value for value, _ in lean[:4])
    assert lean[0][1] == seq_lod and lean[1][1] == [] and lean[2][1] == []
    np.testing.assert_array_equal(reshaped, WORDS.reshape(5, 1, 2))
    np.testing.assert_array_equal(flat, WORDS.reshape(2, 5))
    np.testing.assert_array_equal(transposed, WORDS.T)
    np.testing.assert_array_equal(joined, np.concatenate([WORDS, WORDS * 2], axis=1))
    assert lean[3][1] == seq_lod
    np.testing.assert_array_equal(lean[6][0], np.ones((2, 2), "float32"))
    np.testing.assert_array_equal(lean[7][0], np.full((2, 2), 2.0, "float32"))
    np.testing.assert_array_equal(lean[10][0], WORDS.max(axis=1, keepdims=True))
    np.testing.assert_array_equal(lean[11][0], WORDS.argmax(axis=1)[:, None])
    assert lean[11][0].dtype == np.int64
    np.testing.assert_allclose(lean[16][0], WORDS @ np.full((2, 3), 0.5, "float32"),
                               rtol=1e-6)
    np.testing.assert_array_equal(lean[-6][0], np.eye(4, dtype="float32")[[2] * 5])
    for piece, column in zip(lean[-5:-3] + lean[-3:-1], [WORDS[:, :1], WORDS[:, 1:]] * 2):
        np.testing.assert_array_equal(piece[0], column.reshape(piece[0].shape))
    np.testing.assert_array_equal(lean[-1][0], WORDS[2:])


def test_each_first_run_keeps_its_own_context(session_name, taken):
    """A kernel may keep what it worked out in its context (fill_constant its constant,
    increment its step in X's type): each op's first run has a context of its own, so the
    second constant is not the first one again. Only a formula op's kernel, or a plain
    one, shares its type's context."""
    with _cell(session_name, False) as (s, seq):
        ones = L.fill_constant([3], "float32", 1.0)
        twos = L.fill_constant([3], "float32", 2.0)
        again = L.fill_constant([3], "float32", 1.0)
        counter = L.fill_constant([1], "float32", 1.0)
        plus_one = L.increment(counter, 1.0, in_place=False)
        plus_two = L.increment(counter, 2.0, in_place=False)
        L.relu(seq)
    assert [ran for op_type, ran in taken if op_type == "fill_constant"] == [True] * 4
    assert [ran for op_type, ran in taken if op_type == "increment"] == [True] * 2
    np.testing.assert_array_equal(ones.numpy(), [1, 1, 1])
    np.testing.assert_array_equal(twos.numpy(), [2, 2, 2])
    np.testing.assert_array_equal(again.numpy(), [1, 1, 1])
    np.testing.assert_array_equal(plus_one.numpy(), [2])
    np.testing.assert_array_equal(plus_two.numpy(), [3])
    plans = s.runner._first_plans
    assert plans["fill_constant"][4].cache == {}  # (the plan's context is copied, never run)
    assert plans["increment"][5] is False and plans["relu"][5] is True


def test_an_output_left_out_is_not_made(session_name, taken):
    """An op that names only some of its outputs (a raw ``append_op`` of transpose2 without
    XShape) runs in the C call with a context that does not want the others: nothing is
    stored for them."""
    with _cell(session_name, False) as (s, seq):
        L.transpose(seq, [1, 0])  # (the type's plan, made from an op naming both)
        block = s.program.global_block()
        out = block.create_var(name="out", dtype="float32")
        holders = set(s.scope.vars)
        block.append_op(type="transpose2", inputs={"X": [seq]}, outputs={"Out": [out]},
                        attrs={"axis": [1, 0]})
    assert taken[-1] == ("transpose2", True)
    np.testing.assert_array_equal(out.numpy(), WORDS.T)
    assert set(s.scope.vars) == holders | {"out"}


def _general_op(session_name):
    """A live transpose2 and its general plan, with the scope's holders."""
    with _cell(session_name, False) as (s, seq):
        out = L.transpose(seq, [1, 0])
    op = s.program.global_block().ops[-1]
    return s, op, s.runner._first_plans[op.type], out


def _no_switch(capsule):
    return None


def test_an_op_the_call_does_not_take_is_handed_back_unchanged(session_name):
    """``first_run`` answers None, having made no holder, for an input holding no
    LoDTensor, an input slot the plan does not name, an output slot of two names; a plan
    of the wrong form is a TypeError."""
    s, op, plan, out = _general_op(session_name)
    assert len(plan) == 6 and plan[1] == (("X", False),)
    values = {name: h for name, h in s.scope.vars.items() if name not in op.output_arg_names}
    assert first_run(op, plan, dict(values), _no_switch, None) is not None  # it takes this

    def handed_back(op, values):
        before = dict(values)
        assert first_run(op, plan, values, _no_switch, None) is None
        assert values == before

    handed_back(op, {name: h for name, h in values.items() if name != "seq"})
    empty = dict(values)
    empty["seq"] = type(values["seq"])("seq")  # a holder of no value
    handed_back(op, empty)
    inputs, outputs = op.inputs, op.outputs
    op.inputs = {**inputs, "Extra": ("seq",)}
    handed_back(op, dict(values))
    op.inputs, op.outputs = inputs, {**outputs, "Out": (out.name, "other")}
    handed_back(op, dict(values))
    op.outputs = outputs
    with pytest.raises(TypeError, match="plan"):
        first_run(op, plan + (None,), dict(values), _no_switch, None)
    with pytest.raises(TypeError, match="plan"):
        first_run(op, plan[:5], dict(values), _no_switch, None)
    with pytest.raises(TypeError, match="slot, duplicable"):
        first_run(op, (plan[0], ("X",), *plan[2:]), dict(values), _no_switch, None)


def test_a_failing_kernel_leaves_no_holder_and_names_the_op(session_name, taken):
    """A kernel failing in the C call: the op is taken back with the holders it made, and
    the error names the op, as the Python path's does."""
    from fluid_nb.errors import FluidError
    with _cell(session_name, False) as (s, seq):
        L.gather(seq, L.fill_constant([1], "int64", 0))  # (the type's plan made)
        far = L.fill_constant([1], "int64", 7)
        ops = list(s.program.global_block().ops)
        holders = set(s.scope.vars)
        with pytest.raises(FluidError, match="gather"):
            L.gather(seq, far)  # row 7 of 5
    assert taken[-1] == ("gather", "raised")
    assert s.program.global_block().ops == ops
    assert set(s.scope.vars) == holders
