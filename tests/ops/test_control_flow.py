"""while / while_grad / conditional_block / conditional_block_grad: forward values, the
backward through sub-blocks (finite differences in float64 and NumPy references), and a real
Paddle program with a while loop and conditional blocks."""
import os

import numpy as np
import pytest

import fluid_nb as fluid
import fluid_nb.ops.control_flow  # noqa: F401  (until control_flow is in ops/_families.py)
from fluid_nb.errors import InvalidArgument
from fluid_nb.tensor.tensor import LoDTensor
from fluid_nb.tensor.dtypes import VarType

L = fluid.layers
FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "paddle", "programs",
                       "control_flow.pb")


def _run(main, feed, fetch, scope=None):
    exe = fluid.Executor(fluid.CPUPlace())
    return exe.run(main, feed=feed, fetch_list=fetch, scope=scope or fluid.Scope())


def numeric_grad(main, feed, loss, name, scope, delta=1e-6):
    """Central differences of ``loss`` w.r.t. feed ``name`` (or the scope's value)."""
    exe = fluid.Executor(fluid.CPUPlace())
    fed = name in feed
    base = np.array(feed[name] if fed else scope.find_var(name).value.array, dtype="float64")
    grad = np.zeros_like(base)
    for k in range(base.size):
        values = []
        for sign in (1, -1):
            trial = base.copy()
            trial.flat[k] += sign * delta
            if fed:
                feed = dict(feed, **{name: trial})
            else:
                scope.find_var(name).value = LoDTensor(trial)
            values.append(float(exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0]))
        grad.flat[k] = (values[0] - values[1]) / (2 * delta)
    if not fed:
        scope.find_var(name).value = LoDTensor(base)
    return grad


# --- a real Paddle program ---------------------------------------------------------------------
@pytest.mark.parametrize("x, want", [(1.5, (5, 7.5, 15.0)), (-1.0, (5, -5.0, -6.0))])
def test_paddle_control_flow_program_runs(x, want):
    with open(FIXTURE, "rb") as f:
        program = fluid.Program.parse_from_string(f.read())
    fluid.verify(program)
    assert [op.type for op in program.global_block().ops].count("conditional_block") == 2
    i, acc, out = _run(program, {"x": np.array([x], "float32")},
                       ["fill_constant_1.tmp_0", "fill_constant_5.tmp_0", "_generated_var_5"])
    assert int(i[0]) == want[0]
    np.testing.assert_allclose(acc, [want[1]], rtol=1e-6)
    np.testing.assert_allclose(out, [want[2]], rtol=1e-6)


# --- while, built from raw ops -------------------------------------------------------------------
def _counting_program(is_test=False):
    main = fluid.Program()
    glob = main.global_block()
    with fluid.program_guard(main, fluid.Program()):
        i = L.fill_constant(shape=[1], dtype="int64", value=0)
        n = L.fill_constant(shape=[1], dtype="int64", value=4)
        total = L.fill_constant(shape=[1], dtype="float32", value=0.0)
        cond = L.less_than(i, n)
        body = main._create_block()
        step = body.create_var(name="step", dtype=VarType.FP32, shape=(1,))
        body.append_op(type="cast", inputs={"X": [i]}, outputs={"Out": [step]},
                       attrs={"in_dtype": int(VarType.INT64), "out_dtype": int(VarType.FP32)})
        body.append_op(type="elementwise_add", inputs={"X": [total], "Y": [step]},
                       outputs={"Out": [total]})
        body.append_op(type="increment", inputs={"X": [i]}, outputs={"Out": [i]},
                       attrs={"step": 1.0})
        body.append_op(type="less_than", inputs={"X": [i], "Y": [n]}, outputs={"Out": [cond]})
        main._rollback()
        scopes = glob.create_var(name="scopes", type=VarType.STEP_SCOPES)
        glob.append_op(type="while", inputs={"X": [i, n, total], "Condition": [cond]},
                       outputs={"Out": [i, total, cond], "StepScopes": [scopes]},
                       attrs={"sub_block": body.idx, "is_test": is_test})
    return main, i, total


@pytest.mark.parametrize("is_test", [False, True])
def test_while_counts(is_test):
    main, i, total = _counting_program(is_test)
    fluid.verify(main)
    scope = fluid.Scope()
    got_i, got_total = _run(main, {}, [i, total], scope)
    assert int(got_i[0]) == 4
    np.testing.assert_allclose(got_total, [0 + 1 + 2 + 3])
    op = main.global_block().ops[-1]
    assert op.type == "while" and op.attr("is_test") is is_test
    assert sorted(op.inputs) == ["Condition", "X"] and sorted(op.outputs) == ["Out",
                                                                             "StepScopes"]


def test_while_condition_must_have_one_element():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = L.fill_constant(shape=[2], dtype="int64", value=0)
        y = L.fill_constant(shape=[2], dtype="int64", value=1)
        cond = L.less_than(x, y)
        body = main._create_block()
        main._rollback()
        scopes = main.global_block().create_var(name="s", type=VarType.STEP_SCOPES)
        main.global_block().append_op(type="while", inputs={"X": [], "Condition": [cond]},
                                      outputs={"Out": [], "StepScopes": [scopes]},
                                      attrs={"sub_block": body.idx})
    with pytest.raises(InvalidArgument, match="while"):
        _run(main, {}, [])


# --- gradients through while ---------------------------------------------------------------------
def _rnn_program(steps=3):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data(name="x", shape=[2, 3], dtype="float64", append_batch_size=False)
        x.stop_gradient = False
        w = L.create_parameter(shape=[3, 3], dtype="float64", name="w")
        i = L.fill_constant(shape=[1], dtype="int64", value=0)
        n = L.fill_constant(shape=[1], dtype="int64", value=steps)
        h = L.assign(x)
        cond = L.less_than(i, n)
        loop = L.While(cond=cond)
        with loop.block():
            L.assign(L.tanh(L.matmul(h, w)), h)
            L.increment(x=i, value=1, in_place=True)
            L.less_than(i, n, cond=cond)
        loss = L.mean(h)
        params_grads = fluid.backward.append_backward(loss)
    return main, startup, loss, params_grads


def _rnn_reference(x, w, steps):
    """Forward and backward by hand: h_{t+1} = tanh(h_t W), loss = mean(h_T)."""
    hs = [x]
    for _ in range(steps):
        hs.append(np.tanh(hs[-1] @ w))
    dh = np.full_like(x, 1.0 / x.size)
    dw = np.zeros_like(w)
    for t in range(steps, 0, -1):
        dz = dh * (1 - hs[t] ** 2)
        dw += hs[t - 1].T @ dz
        dh = dz @ w.T
    return hs[-1].mean(), dw, dh


def test_while_grad_matches_numpy_and_finite_differences():
    steps = 3
    main, startup, loss, params_grads = _rnn_program(steps)
    fluid.verify(main)
    assert [p.name for p, _ in params_grads] == ["w"]
    types = [op.type for op in main.global_block().ops]
    assert "while_grad" in types
    grad_op = main.global_block().ops[types.index("while_grad")]
    grad_block = main.block(grad_op.attr("sub_block"))
    assert grad_block.forward_block_idx == main.global_block().ops[types.index("while")] \
        .attr("sub_block")
    assert grad_op.attr("original_output_grad") == grad_op.input("Out@GRAD")
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    xv = np.random.RandomState(1).randn(2, 3)
    wv = scope.find_var("w").value.array.copy()
    feed = {"x": xv}
    got_loss, gw, gx = exe.run(main, feed=feed, fetch_list=[loss, "w@GRAD", "x@GRAD"],
                               scope=scope)
    ref_loss, ref_dw, ref_dx = _rnn_reference(xv, wv, steps)
    np.testing.assert_allclose(got_loss, [ref_loss], rtol=1e-10)
    np.testing.assert_allclose(gw, ref_dw, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(gx, ref_dx, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(gw, numeric_grad(main, feed, loss, "w", scope), rtol=1e-5,
                               atol=1e-9)
    np.testing.assert_allclose(gx, numeric_grad(main, feed, loss, "x", scope), rtol=1e-5,
                               atol=1e-9)


def test_while_grad_through_tensor_array():
    """sum_t a[t] * w over an array: the counter's reverse increment restores i per step."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        xs = [L.data(name=f"x{k}", shape=[2], dtype="float64", append_batch_size=False)
              for k in range(3)]
        w = L.create_parameter(shape=[2], dtype="float64", name="w")
        i = L.fill_constant(shape=[1], dtype="int64", value=0)
        arr = None
        for k, x in enumerate(xs):
            x.stop_gradient = False
            arr = L.array_write(x, L.fill_constant(shape=[1], dtype="int64", value=k),
                                array=arr)
        n = L.array_length(arr)
        acc = L.fill_constant(shape=[2], dtype="float64", value=0.0)
        acc.stop_gradient = False  # fill_constant's output is stop_gradient, as in Fluid
        i.stop_gradient = False  # as DynamicRNN's step_idx: increment is reversed
        cond = L.less_than(i, n)
        loop = L.While(cond=cond)
        with loop.block():
            item = L.array_read(arr, i)
            L.assign(L.elementwise_add(acc, L.elementwise_mul(item, w)), acc)
            L.increment(x=i, value=1, in_place=True)
            L.less_than(i, n, cond=cond)
        loss = L.reduce_sum(L.elementwise_mul(acc, acc))
        fluid.backward.append_backward(loss)
    fluid.verify(main)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    rng = np.random.RandomState(2)
    feed = {f"x{k}": rng.randn(2) for k in range(3)}
    wv = scope.find_var("w").value.array.copy()
    got_acc, gw, gx1 = exe.run(main, feed=feed, fetch_list=[acc, "w@GRAD", "x1@GRAD"],
                               scope=scope)
    total = sum(feed.values())
    np.testing.assert_allclose(got_acc, total * wv, rtol=1e-12)
    np.testing.assert_allclose(gw, 2 * total * wv * total, rtol=1e-10)
    np.testing.assert_allclose(gx1, 2 * total * wv * wv, rtol=1e-10)
    np.testing.assert_allclose(gw, numeric_grad(main, feed, loss, "w", scope), rtol=1e-5)
    np.testing.assert_allclose(gx1, numeric_grad(main, feed, loss, "x1", scope), rtol=1e-5)


# --- conditional_block ---------------------------------------------------------------------------
def _cond_program():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data(name="x", shape=[3], dtype="float64", append_batch_size=False)
        x.stop_gradient = False
        p = L.data(name="p", shape=[1], dtype="bool", append_batch_size=False)
        out = L.cond(p, lambda: L.tanh(x) * 2.0, lambda: L.exp(x))
        loss = L.reduce_sum(L.elementwise_mul(out, out))
        fluid.backward.append_backward(loss)
    return main, out, loss


@pytest.mark.parametrize("pred", [True, False])
def test_conditional_block_grad_matches_finite_differences(pred):
    main, out, loss = _cond_program()
    fluid.verify(main)
    types = [op.type for op in main.global_block().ops]
    assert types.count("conditional_block") == 2 and types.count("conditional_block_grad") == 2
    xv = np.array([0.1, -0.5, 0.3])
    feed = {"x": xv, "p": np.array([pred])}
    scope = fluid.Scope()
    got, gx = _run(main, feed, [out, "x@GRAD"], scope)
    want = np.tanh(xv) * 2 if pred else np.exp(xv)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    dwant = 2 * want * ((1 - np.tanh(xv) ** 2) * 2 if pred else np.exp(xv))
    np.testing.assert_allclose(gx, dwant, rtol=1e-10)
    np.testing.assert_allclose(gx, numeric_grad(main, feed, loss, "x", scope), rtol=1e-5)


def test_conditional_block_not_scalar_runs_when_inputs_non_empty():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data(name="x", shape=[-1, 2], dtype="float32", append_batch_size=False)
        y = L.create_global_var(shape=[1], value=-1.0, dtype="float32", persistable=True)
        block = L.ConditionalBlock([x])
        with block.block():
            L.assign(L.reduce_sum(x), y)
    op = main.global_block().ops[-1]
    assert op.type == "conditional_block" and op.attr("is_scalar_condition") is False
    fluid.verify(main)
    for rows, want in ((2, 4.0), (0, -1.0)):
        scope = fluid.Scope()
        fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
        got, = _run(main, {"x": np.ones((rows, 2), "float32")}, [y], scope)
        np.testing.assert_allclose(got, [want])
