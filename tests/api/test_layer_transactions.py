"""A layer call is a transaction: when it fails, the main and startup programs, the
unique-name counters and (in live mode) the live scope are as they were before the call."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument, NotFound
from fluid_nb.framework import transaction, unique_name

L = fluid.layers


def _contents(*programs):
    return [[(list(block.vars), [op.type for op in block.ops]) for block in program.blocks]
            for program in programs]


def test_a_failed_elementwise_add_leaves_no_output_variable(programs):
    x = fluid.data("x", [None, 3, 8, 8], "float32")
    y = fluid.data("y", [None, 4], "float32")
    before = _contents(*programs)
    with pytest.raises(InvalidArgument, match="broadcastable"):
        L.elementwise_add(x, y)
    with pytest.raises(InvalidArgument, match="broadcastable"):
        x + y
    assert _contents(*programs) == before


def test_a_failed_conv2d_leaves_no_parameter_and_no_initializer(programs):
    main, startup = programs
    y = fluid.data("y", [None, 4], "float32")
    before = _contents(main, startup)
    with pytest.raises(InvalidArgument, match="4-D"):
        L.conv2d(y, num_filters=4, filter_size=3)
    assert _contents(main, startup) == before
    assert not startup.global_block().ops


def test_unique_names_are_as_if_the_failed_call_never_happened(programs):
    y = fluid.data("y", [None, 4], "float32")
    with pytest.raises(InvalidArgument):
        L.conv2d(y, num_filters=4, filter_size=3)
    img = fluid.data("img", [None, 3, 8, 8], "float32")
    L.conv2d(img, num_filters=4, filter_size=3)
    assert "conv2d_0.w_0" in programs[0].global_block().vars  # not conv2d_1.w_0


def test_a_while_loop_whose_body_fails_leaves_no_condition_and_no_block(programs):
    main, _ = programs
    i = L.fill_constant([1], "int64", 0)
    n = L.fill_constant([1], "int64", 3)
    before = _contents(*programs)
    with pytest.raises(InvalidArgument, match="structure of loop_vars"):
        L.while_loop(lambda i: L.less_than(i, n), lambda i: [i, i], [i])
    assert _contents(*programs) == before and len(main.blocks) == 1


def test_a_failed_minimize_leaves_no_gradient_no_update_and_no_accumulator(programs):
    x = fluid.data("x", [None, 4], "float32")
    loss = L.mean(L.fc(x, size=2))
    before = _contents(*programs)
    adam = fluid.optimizer.Adam(0.01)
    with pytest.raises(NotFound, match="nope"):
        adam.minimize(loss, parameter_list=["fc_0.w_0", "nope"])
    assert _contents(*programs) == before and not adam._accumulators
    adam.minimize(loss)  # the same optimizer then works
    assert any(op.type == "adam" for op in programs[0].global_block().ops)


def test_a_with_block_that_fails_midway_removes_its_sub_block_and_earlier_ops(programs):
    main, _ = programs
    x = fluid.data("x", [None, 4], "float32")
    i = L.fill_constant([1], "int64", 0)
    n = L.fill_constant([1], "int64", 3)
    cond = L.less_than(i, n)
    before = _contents(*programs)
    with pytest.raises(InvalidArgument):
        with L.While(cond).block():
            h = L.fc(x, size=3)  # parameters and ops, then a failure
            L.increment(i, in_place=True)
            L.elementwise_add(h, x)
    assert _contents(*programs) == before
    assert main.current_block_idx == 0


@pytest.mark.parametrize("failing", ["case", "default"])
def test_a_switch_whose_block_fails_leaves_no_negated_condition(programs, failing):
    # case() appends a logical_not for the cases after it before its conditional block
    # opens: the whole `with Switch()` is the transaction, not each case's block alone
    x = fluid.data("x", [None, 4], "float32")
    lr = L.fill_constant([1], "float32", 0.5)
    small = L.less_than(lr, L.fill_constant([1], "float32", 1.0))
    before = _contents(*programs)
    with pytest.raises(InvalidArgument, match="broadcastable"):
        with L.Switch() as switch:
            with switch.case(small):
                L.assign(L.fill_constant([1], "float32", 0.1), lr)
                if failing == "case":
                    L.elementwise_add(L.fc(x, size=3), x)
            with switch.default():
                L.elementwise_add(L.fc(x, size=3), x)
    assert _contents(*programs) == before
    assert programs[0].current_block_idx == 0


def test_a_static_rnn_whose_step_fails_leaves_nothing(programs):
    xs = fluid.data("xs", [5, 2, 4], "float32")
    before = _contents(*programs)
    rnn = L.StaticRNN()
    with pytest.raises(InvalidArgument, match="broadcastable"):
        with rnn.step():
            word = rnn.step_input(xs)
            L.elementwise_add(L.fc(word, size=3), word)
    assert _contents(*programs) == before


def test_nested_layers_share_one_transaction(programs, monkeypatch):
    snapshots = []
    real = transaction._open

    def counting(*args):
        snapshots.append(1)
        return real(*args)
    x = fluid.data("x", [None, 3, 8, 8], "float32")
    monkeypatch.setattr(transaction, "_open", counting)
    fluid.nets.simple_img_conv_pool(x, num_filters=2, filter_size=3, pool_size=2,
                                    pool_stride=2, act="relu")
    assert len(snapshots) == 1  # conv2d, its activation and pool2d inside the net: one


def test_a_failed_layer_in_live_mode_leaves_the_live_scope_as_it_was():
    main, startup, scope = fluid.Program(), fluid.Program(), fluid.Scope()
    with fluid.program_guard(main, startup), unique_name.guard(), \
            fluid.live(name="transaction_live", program=main, startup_program=startup,
                       scope=scope) as session:
        x = L.data(name="x", shape=[4], dtype="float32", value=np.ones((2, 4), "float32"))
        h = L.fc(x, size=3)
        names = set(scope.vars)
        before = _contents(main, startup)
        pred = L.less_than(L.fill_constant([1], "float32", 0.0),
                           L.fill_constant([1], "float32", 1.0))
        names = set(scope.vars)
        before = _contents(main, startup)
        with pytest.raises(InvalidArgument):  # the branch's fc runs, then its add fails
            L.cond(pred, lambda: L.elementwise_add(L.fc(h, size=5), x), lambda: h)
        assert set(scope.vars) == names and _contents(main, startup) == before
        ops = {op for op in main.global_block().ops}
        assert set(session.runner.steps) <= ops | set(startup.global_block().ops)


def test_one_op_layers_that_fail_when_run_live_leave_nothing_and_take_their_names_back():
    main, startup, scope = fluid.Program(), fluid.Program(), fluid.Scope()
    with fluid.program_guard(main, startup), unique_name.guard(), \
            fluid.live(name="one_op_live", program=main, startup_program=startup,
                       scope=scope) as session:
        # shapes agree when appended (-1 rows), not when run: the kernel fails
        x = L.data(name="x", shape=[3], dtype="float32", value=np.ones((2, 3), "float32"))
        y = L.data(name="y", shape=[3], dtype="float32", value=np.ones((4, 3), "float32"))
        x.numpy(), y.numpy()  # (their values enter the scope when first read)
        unfed = L.data(name="unfed", shape=[3], dtype="float32")  # no value: scale fails
        names, before = set(scope.vars), _contents(main, startup)
        for failing in (lambda: L.elementwise_add(x, y), lambda: x + y,
                        lambda: L.elementwise_mul(x, y, act="relu"), lambda: unfed * 2.0,
                        lambda: 1.0 - unfed):
            with pytest.raises(fluid.errors.FluidError):
                failing()
            assert set(scope.vars) == names and _contents(main, startup) == before
        ops = set(main.global_block().ops) | set(startup.global_block().ops)
        assert set(session.runner.steps) <= ops
        # the names the failed calls took are handed out again
        assert L.elementwise_add(x, x).name == "elementwise_add_0.tmp_0"
        assert (x + x).name == "tmp_0"
        assert L.relu(x).name == "relu_0.tmp_0"
        assert (x * 2.0).name == "tmp_1"
        np.testing.assert_array_equal((x * 2.0 - 1.0).numpy(), np.ones((2, 3)))
