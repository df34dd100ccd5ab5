"""Loop step scopes kept as values (KeptScope) and the grad body's frame: a step scope makes
its holders only when looked at, and looking changes nothing while_grad computes."""
import gc
import weakref

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb import layers
from fluid_nb.errors import FluidError
from fluid_nb.exec.frame import BodyFrame, names_held
from fluid_nb.exec.scope import KeptScope, Scope
from fluid_nb.tensor.tensor import LoDTensor


def test_a_kept_scope_makes_its_holders_when_first_asked_for():
    parent = Scope()
    a, b = LoDTensor(np.ones(2)), LoDTensor(np.zeros(3))
    step = KeptScope(parent, {"a": a, "b": b})
    assert step.local_var_names() == ["a", "b"] and step.row is not None
    assert names_held([step, Scope()]) == {"a", "b"}
    assert step.find_var("a").value is a  # asking for a holder makes them all
    assert step.row is None and set(step.vars) == {"a", "b"}
    assert step.vars["b"].value is b and step.local_var_names() == ["a", "b"]
    step.var("c").value = a  # from now on the holders are the scope's state
    assert names_held([step]) == {"a", "b", "c"} and step.parent is parent


def test_a_kept_row_loads_into_the_working_holders_as_its_dict_says():
    program = fluid.Program()
    body = program._create_block()
    for name in ("x", "y"):
        body.create_var(name=name, shape=[2], dtype="float64")
    body.append_op(type="scale", inputs={"X": ["x"]}, outputs={"Out": ["y"]},
                   attrs={"scale": 2.0})
    program._rollback()
    frame = BodyFrame(fluid.Executor(fluid.CPUPlace()), body, Scope(), names=["x", "y"])
    x1, x2, y = (LoDTensor(np.full(2, v)) for v in (1.0, 2.0, 3.0))
    step = KeptScope(Scope(), names=("x", "y", "x"), row=[x1, None, x2])
    assert step.local_values() == {"x": x2}  # a later entry wins; None is no value
    frame.scope.vars["y"].value = y
    frame.load(step)
    assert frame.value("x") is x2 and frame.value("y") is None
    frame.scope.vars["y"].value = y
    frame.load(step, keep=frozenset({"y"}))  # a kept holder goes on as it was
    assert frame.value("x") is x2 and frame.value("y") is y
    frame.run()
    computed = frame.value("y")
    np.testing.assert_array_equal(computed.array, [4.0, 4.0])
    kept = frame.keep(("z",), [y], only=frozenset({"y"}))
    assert kept.names == ("y", "z") and kept.local_values() == {"y": computed, "z": y}
    assert frame.value("x") is None and frame.value("y") is None  # cleared for the next


def _tanh_cell(word, prev):
    return layers.fc(input=[word, prev], size=4, act="tanh")


def build_rnn(backward=True, cell=_tanh_cell, size=4):
    """A DynamicRNN over 3-wide float64 rows, ``hidden = cell(word, prev)`` with ``size``
    wide memories, and loss = the mean of each sequence's last hidden state."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = layers.data("x", [3], dtype="float64", lod_level=1)
        drnn = layers.DynamicRNN()
        with drnn.block():
            word = drnn.step_input(x)
            prev = drnn.memory(shape=[size], dtype="float64")
            hidden = cell(word, prev)
            drnn.update_memory(prev, hidden)
            drnn.output(hidden)
        loss = layers.mean(layers.sequence_last_step(drnn()))
        if backward:
            fluid.backward.append_backward(loss)
    return main, startup, loss


class _LookAtSteps(list):
    """An executor trace that, right after each ``while`` op, makes the holders of every
    step scope it kept (as a scope view would) before ``while_grad`` reads them."""

    def __init__(self, local):
        super().__init__()
        self.local = local
        self.looked = 0

    def append(self, item):
        if item[0].type == "while":
            for kid in self.local.kids:
                if isinstance(kid, KeptScope):
                    assert kid.vars  # materialised here
                    self.looked += 1
        super().append(item)


def test_step_scopes_looked_at_before_while_grad_give_the_same_gradients():
    main, startup, loss = build_rnn()
    lengths = [3, 1, 4]
    rng = np.random.RandomState(2)
    feed = {"x": fluid.create_lod_tensor(rng.uniform(-1, 1, (sum(lengths), 3)), [lengths],
                                         fluid.CPUPlace())}
    grads = [p.name + "@GRAD" for p in main.global_block().all_parameters()]
    scope, exe = fluid.Scope(), fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    exe.run(main, feed=feed, fetch_list=[loss] + grads, scope=scope)  # weights' caches warm
    want = exe.run(main, feed=feed, fetch_list=[loss] + grads, scope=scope)
    plan = next(iter(main._plans.values()))[1]()
    exe.trace = _LookAtSteps(plan.local)
    got = exe.run(main, feed=feed, fetch_list=[loss] + grads, scope=scope)
    assert exe.trace.looked == max(lengths)  # one kept scope per step
    exe.trace = None
    for name, a, b in zip(["loss"] + grads, got, want):
        np.testing.assert_array_equal(a, b, err_msg=name)
    assert plan.local.kids == []  # while_grad dropped the step scopes it read


class _StepNames(list):
    """An executor trace that records, right after each ``while`` op, the names each step
    scope it kept holds."""

    def __init__(self, local):
        super().__init__()
        self.local = local
        self.steps = []

    def append(self, item):
        if item[0].type == "while":
            self.steps = [set(kid.local_values()) for kid in self.local.kids
                          if isinstance(kid, KeptScope)]
        super().append(item)


def _step_names(main, startup, loss):
    lengths = [3, 1, 4]
    feed = {"x": fluid.create_lod_tensor(np.random.RandomState(2).uniform(
        -1, 1, (sum(lengths), 3)), [lengths], fluid.CPUPlace())}
    scope, exe = fluid.Scope(), fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    plan = next(iter(main._plans.values()))[1]()
    exe.trace = _StepNames(plan.local)
    exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    assert len(exe.trace.steps) == max(lengths)
    return exe.trace.steps


def _body_and_grad_body(main):
    ops = main.global_block().ops
    loop = next(op for op in ops if op.type == "while")
    body = main.block(loop.attrs["sub_block"])
    grad = [main.block(op.attrs["sub_block"]) for op in ops if op.type == "while_grad"]
    return body, (grad[0] if grad else None)


def test_a_step_scope_keeps_only_what_while_grad_reads():
    main, startup, loss = build_rnn()
    body, grad_body = _body_and_grad_body(main)
    read = {n for op in grad_body.ops for n in op.input_arg_names}
    made_here = {n for op in body.ops for n in op.output_arg_names if n in body.vars}
    matmul_outputs = {op.output("Out")[0] for op in body.ops if op.type == "mul"}
    assert matmul_outputs and not matmul_outputs & read  # fc's products: sum's grad is
    for names in _step_names(main, startup, loss):      # scale, which needs no inputs
        assert made_here & read <= names  # all the backward needs of the step
        assert not names & matmul_outputs  # freed after the step (Paddle's eager deletion)
        assert names & made_here <= read


def test_without_a_backward_a_step_scope_keeps_every_value():
    main, startup, loss = build_rnn(backward=False)
    body, grad_body = _body_and_grad_body(main)
    assert grad_body is None
    made_here = {n for op in body.ops for n in op.output_arg_names if n in body.vars}
    for names in _step_names(main, startup, loss):
        assert made_here <= names


def _rnn_feed(lengths, seed, width=3):
    data = np.random.RandomState(seed).uniform(-1, 1, (sum(lengths), width))
    return {"x": fluid.create_lod_tensor(data, [lengths], fluid.CPUPlace())}


def _fresh_run(main, startup, fetch, feed):
    # (a weight's transposed copy, laid out on its second run, rounds the products a
    # little differently from the transposed view of a first run: compare within 1e-12)
    scope, exe = fluid.Scope(), fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    return exe.run(main, feed=feed, fetch_list=fetch, scope=scope)


def test_one_executor_running_a_loop_in_two_scopes_keeps_them_apart():
    # runs alternate between two scopes holding different weights; each run gives what a
    # fresh executor gives on a copy of its scope
    main, startup, loss = build_rnn()
    fetch = [loss] + [p.name + "@GRAD" for p in main.global_block().all_parameters()]
    exe = fluid.Executor(fluid.CPUPlace())
    scopes = [fluid.Scope(), fluid.Scope()]
    for scope in scopes:
        exe.run(startup, scope=scope)
    scopes[1].find_var(main.global_block().all_parameters()[0].name).get_tensor().set(
        np.full((3, 4), 0.25))  # the two scopes hold different weights
    feeds = [_rnn_feed([3, 1, 4], 2), _rnn_feed([2, 5], 3)]
    for _ in range(2):
        for scope, feed in zip(scopes, feeds):
            got = exe.run(main, feed=feed, fetch_list=fetch, scope=scope)
            want_scope, want_exe = fluid.Scope(), fluid.Executor(fluid.CPUPlace())
            for holder in scope.vars.values():
                if holder.is_initialized():
                    want_scope.var(holder.name).value = holder.value
            want = want_exe.run(main, feed=feed, fetch_list=fetch, scope=want_scope)
            for name, a, b in zip(["loss"] + fetch[1:], got, want):
                np.testing.assert_allclose(a, b, rtol=1e-12, err_msg=name)


class _InputRows(list):
    """An executor trace that, right after ``lod_tensor_to_array``, takes a weak reference
    to the rows of the loop's input array (every step's input is a view of them)."""

    def __init__(self, local):
        super().__init__()
        self.local = local
        self.rows = None

    def append(self, item):
        if item[0].type == "lod_tensor_to_array" and self.rows is None:
            steps = self.local.find_var(item[0].output("Out")[0]).value
            self.rows = weakref.ref(steps[0].array.base)
        super().append(item)


def test_a_loop_that_failed_half_way_holds_nothing_and_runs_again():
    main, startup, loss = build_rnn()
    fetch = [loss] + [p.name + "@GRAD" for p in main.global_block().all_parameters()]
    scope, exe = fluid.Scope(), fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    feed = _rnn_feed([3, 1, 4], 2)
    exe.run(main, feed=feed, fetch_list=fetch, scope=scope)
    exe.trace = _InputRows(next(iter(main._plans.values()))[1]().local)
    failed = False
    try:  # rows of the wrong width: the fc of the first step fails
        exe.run(main, feed=_rnn_feed([3, 1, 4], 2, width=5), fetch_list=fetch, scope=scope)
    except FluidError:
        failed = True  # (the traceback, which holds the step's values, goes here)
    assert failed
    gc.collect()
    assert exe.trace.rows() is None  # no working holder of the loop keeps the step's input
    exe.trace = None
    got = exe.run(main, feed=feed, fetch_list=fetch, scope=scope)
    want = _fresh_run(main, startup, fetch, feed)
    for name, a, b in zip(["loss"] + fetch[1:], got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, err_msg=name)
