"""Control-flow layers: While, while_loop, cond, case, switch_case, IfElse, Switch and the
tensor-array layers build Fluid's ops and compute what the program says."""
import numpy as np
import pytest

import fluid_nb as fluid
import fluid_nb.ops.control_flow  # noqa: F401  (until control_flow is in ops/_families.py)
from fluid_nb.errors import InvalidArgument

L = fluid.layers


def _run(main, feed, fetch, startup=None):
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    if startup is not None:
        exe.run(startup, scope=scope)
    return exe.run(main, feed=feed, fetch_list=fetch, scope=scope)


def _types(block):
    return [op.type for op in block.ops]


def test_while_layer_counts_and_sums_a_tensor_array():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        data = L.data(name="d", shape=[3], dtype="float32", append_batch_size=False)
        arr = L.create_array("float32")
        for k in range(4):
            L.array_write(L.scale(data, scale=float(k + 1)),
                          L.fill_constant(shape=[1], dtype="int64", value=k), array=arr)
        n = L.array_length(arr)
        i = L.fill_constant(shape=[1], dtype="int64", value=0)
        total = L.fill_constant(shape=[3], dtype="float32", value=0.0)
        cond = L.less_than(i, n)
        loop = L.While(cond=cond)
        with loop.block():
            L.assign(L.elementwise_add(total, L.array_read(arr, i)), total)
            L.increment(x=i, value=1, in_place=True)
            L.less_than(i, n, cond=cond)
    fluid.verify(main)
    op = main.global_block().ops[-1]
    assert op.type == "while" and op.block_attr("sub_block").idx == 1
    assert cond.name in op.output("Out") and cond.name not in op.input("X")
    assert {total.name, i.name} <= set(op.output("Out"))
    assert _types(main.block(1)) == ["read_from_array", "elementwise_add", "assign",
                                     "increment", "less_than"]
    dv = np.array([1.0, 2.0, -1.0], "float32")
    got_i, got_total, got_n = _run(main, {"d": dv}, [i, total, n])
    assert int(got_i[0]) == 4 and int(got_n[0]) == 4
    np.testing.assert_allclose(got_total, dv * (1 + 2 + 3 + 4))


def test_while_rejects_non_bool_condition():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = L.fill_constant(shape=[1], dtype="int64", value=0)
        with pytest.raises(InvalidArgument, match="While"):
            L.While(cond=x)


def test_while_loop():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        i = L.fill_constant(shape=[1], dtype="int64", value=0)
        ten = L.fill_constant(shape=[1], dtype="int64", value=10)
        s = L.fill_constant(shape=[1], dtype="float32", value=1.0)
        i_out, s_out = L.while_loop(lambda i, s: L.less_than(i, ten),
                                    lambda i, s: [L.increment(i, in_place=False),
                                                  L.scale(s, scale=2.0)], [i, s])
    fluid.verify(main)
    assert "while" in _types(main.global_block())
    got_i, got_s = _run(main, {}, [i_out, s_out])
    assert int(got_i[0]) == 10
    np.testing.assert_allclose(got_s, [1024.0])


def test_while_loop_gradient():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data(name="x", shape=[2], dtype="float64", append_batch_size=False)
        x.stop_gradient = False
        i = L.fill_constant(shape=[1], dtype="int64", value=0)
        three = L.fill_constant(shape=[1], dtype="int64", value=3)
        h = L.assign(x)
        _, h_out = L.while_loop(lambda i, h: L.less_than(i, three),
                                lambda i, h: [L.increment(i, in_place=False), L.tanh(h)],
                                [i, h])
        loss = L.reduce_sum(h_out)
        gx, = fluid.backward.gradients([loss], [x])
    fluid.verify(main)
    xv = np.array([0.3, -1.2])
    got, = _run(main, {"x": xv}, [gx])
    h1 = np.tanh(xv)
    h2 = np.tanh(h1)
    h3 = np.tanh(h2)
    np.testing.assert_allclose(got, (1 - h3 ** 2) * (1 - h2 ** 2) * (1 - h1 ** 2), rtol=1e-12)


@pytest.mark.parametrize("pred", [True, False])
def test_cond(pred):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data(name="x", shape=[2], dtype="float32", append_batch_size=False)
        p = L.data(name="p", shape=[1], dtype="bool", append_batch_size=False)
        a, b = L.cond(p, lambda: (x * 2.0, x + 1.0), lambda: (x - 1.0, x * x))
    fluid.verify(main)
    types = _types(main.global_block())
    assert types.count("conditional_block") == 2 and types.count("select_input") == 2
    assert "logical_not" in types and "cast" in types
    xv = np.array([3.0, -2.0], "float32")
    got_a, got_b = _run(main, {"x": xv, "p": np.array([pred])}, [a, b])
    np.testing.assert_allclose(got_a, xv * 2 if pred else xv - 1)
    np.testing.assert_allclose(got_b, xv + 1 if pred else xv * xv)


@pytest.mark.parametrize("v, want", [(0.5, 10.0), (1.5, 20.0), (9.0, 30.0)])
def test_case(v, want):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data(name="x", shape=[1], dtype="float32", append_batch_size=False)
        one = L.fill_constant(shape=[1], dtype="float32", value=1.0)
        two = L.fill_constant(shape=[1], dtype="float32", value=2.0)
        out = L.case([(L.less_than(x, one), lambda: L.fill_constant([1], "float32", 10.0)),
                      (L.less_than(x, two), lambda: L.fill_constant([1], "float32", 20.0))],
                     default=lambda: L.fill_constant([1], "float32", 30.0))
    fluid.verify(main)
    got, = _run(main, {"x": np.array([v], "float32")}, [out])
    np.testing.assert_allclose(got, [want])


@pytest.mark.parametrize("index, want", [(0, 1.0), (2, 3.0), (7, -1.0)])
def test_switch_case(index, want):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        k = L.data(name="k", shape=[1], dtype="int32", append_batch_size=False)
        out = L.switch_case(k, {0: lambda: L.fill_constant([1], "float32", 1.0),
                                1: lambda: L.fill_constant([1], "float32", 2.0),
                                2: lambda: L.fill_constant([1], "float32", 3.0)},
                            default=lambda: L.fill_constant([1], "float32", -1.0))
    fluid.verify(main)
    got, = _run(main, {"k": np.array([index], "int32")}, [out])
    np.testing.assert_allclose(got, [want])


@pytest.mark.parametrize("v, want", [(0.5, 1.0), (1.5, 2.0), (5.0, 3.0)])
def test_switch(v, want):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data(name="x", shape=[1], dtype="float32", append_batch_size=False)
        lr = L.create_global_var(shape=[1], value=0.0, dtype="float32", persistable=True,
                                 name="lr")
        one = L.fill_constant([1], "float32", 1.0)
        two = L.fill_constant([1], "float32", 2.0)
        three = L.fill_constant([1], "float32", 3.0)
        with L.Switch() as switch:
            with switch.case(L.less_than(x, one)):
                L.assign(one, lr)
            with switch.case(L.less_than(x, two)):
                L.assign(two, lr)
            with switch.default():
                L.assign(three, lr)
    fluid.verify(main)
    assert _types(main.global_block()).count("conditional_block") == 3
    got, = _run(main, {"x": np.array([v], "float32")}, [lr], startup)
    np.testing.assert_allclose(got, [want])


def test_switch_case_outside_with_fails():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        c = L.less_than(L.fill_constant([1], "float32", 0.0), L.fill_constant([1], "float32",
                                                                               1.0))
        with pytest.raises(InvalidArgument, match="Switch.case"):
            L.Switch().case(c)


def test_ifelse_routes_rows_and_merges_them_back():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data(name="x", shape=[2], dtype="float32")
        mask = L.data(name="mask", shape=[1], dtype="bool")
        ie = L.IfElse(mask)
        with ie.true_block():
            ie.output(L.scale(ie.input(x), scale=-1.0))
        with ie.false_block():
            ie.output(L.scale(ie.input(x), scale=10.0))
        out, = ie()
    fluid.verify(main)
    types = _types(main.global_block())
    assert types.count("split_lod_tensor") == 1 and types.count("conditional_block") == 2
    assert types[-1] == "merge_lod_tensor"
    xv = np.array([[1, 2], [3, 4], [5, 6]], "float32")
    mv = np.array([[True], [False], [True]])
    got, = _run(main, {"x": xv, "mask": mv}, [out])
    np.testing.assert_allclose(got, np.where(mv, -xv, 10 * xv))


def test_ifelse_output_outside_a_branch_fails():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        mask = L.data(name="mask", shape=[1], dtype="bool")
        with pytest.raises(InvalidArgument, match="IfElse.output"):
            L.IfElse(mask).output(mask)


def test_rank_table_layers_build_fluid_ops():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data(name="x", shape=[1], dtype="float32", lod_level=1)
        table = L.lod_rank_table(x)
        length = L.max_sequence_len(table)
        arr = L.lod_tensor_to_array(x, table)
        back = L.array_to_lod_tensor(arr, table)
        reordered = L.reorder_lod_tensor_by_rank(x, table)
        empty = L.is_empty(x)
    fluid.verify(main)
    assert _types(main.global_block()) == ["lod_rank_table", "max_sequence_len",
                                           "lod_tensor_to_array", "array_to_lod_tensor",
                                           "reorder_lod_tensor_by_rank", "is_empty"]
    xv = fluid.create_lod_tensor(np.arange(6, dtype="float32").reshape(6, 1), [[2, 3, 1]],
                                 fluid.CPUPlace())
    got_len, got_back, got_re, got_empty = _run(main, {"x": xv},
                                                [length, back, reordered, empty])
    assert int(got_len[0]) == 3 and not bool(got_empty[0])
    np.testing.assert_allclose(got_back.ravel(), np.arange(6))
    np.testing.assert_allclose(got_re.ravel(), [2, 3, 4, 0, 1, 5])
