"""The checked layers that append one op of no input (``fill_constant``, ``zeros``,
``ones``, ``uniform_random``, ``gaussian_random``) replay their repeated calls in C
(``transaction.created``): a call whose arguments equal an earlier call's, and made under
the same ``init_on_cpu()`` state, appends what that call gave ``append_one_op`` without
running the layer's checks again. The layer's Python function stays the definition:
whatever the arguments, and in whatever order calls come, a layer must append what its
Python function appends and return or raise what it returns or raises."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.api.initializer import init_on_cpu
from fluid_nb.framework import callstack
from fluid_nb.framework.program import Program
from tests.core.op_records import answer, record, replays_as_its_python_way


def _session(layer, calls):
    """The record and answers of ``calls`` (each a function of a Variable ``x`` giving
    (args, kwargs)) made in turn, each twice, in a fresh program."""
    main, startup = Program(), Program()
    answers = []
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[-1, 3], dtype="int32")
        for arguments in calls:
            for _ in range(2):
                args, kwargs = arguments(x)
                answers.append(answer(lambda: layer(*args, **kwargs)))
    return record(main), answers


#: one NaN for every call (a record holds the value it was given, and NaN equals only itself)
NAN = float("nan")

#: layer -> the calls it is tried with, in this order (repeats, then neighbours whose key
#: differs by a class or a value, and calls only the Python way answers)
CALLS = {
    "fill_constant": [
        lambda x: (([2, 3], "float32", 1.0), {}),
        lambda x: (([2, 3], "float32", 1), {}),
        lambda x: (([2, 3], "float32", True), {}),
        lambda x: (([2, 3], "float32", 0.0), {}),
        lambda x: (([2, 3], "float32", -0.0), {}),
        lambda x: (([2, 3], "float32", NAN), {}),
        lambda x: (([2, 3], "float32", float("inf")), {}),
        lambda x: (([2, 3], "int64", 7), {}),
        lambda x: (([2, 3], "int32", 7.0), {}),
        lambda x: (([2, 3], "bool", True), {}),
        lambda x: (([2, 3], "float64", 1.0), {}),
        lambda x: (((2, 3), "float32", 1.0), {}),
        lambda x: (([3, 2], "float32", 1.0), {}),
        lambda x: (([2, 3.0], "float32", 1.0), {}),
        lambda x: (([2, 3], "float32", 1.0, True), {}),
        lambda x: (([2, 3], "float32", 1.0), {"force_cpu": True}),
        lambda x: (([2, 3],), {"dtype": "float32", "value": 1.0}),
        lambda x: (([2, 3], np.float32, 1.0), {}),
        lambda x: (([2, 3], "float32", np.float32(1.0)), {}),
        lambda x: (([2, 3], "float32", x), {}),
        lambda x: (([2, x], "float32", 1.0), {}),
        lambda x: (([2, 3], "float32", 1.0), {"out": x}),
        lambda x: (([2, -3], "float32", 1.0), {}),
        lambda x: (([2, 3], "complex64", 1.0), {}),
        lambda x: (([2, 3], "float32", "1.0"), {}),
        lambda x: (([], "float32", 1.0), {}),
        lambda x: (([2, 3], "float32"), {}),
    ],
    "zeros": [
        lambda x: (([2, 3], "float32"), {}),
        lambda x: (([2, 3], "int64"), {}),
        lambda x: (([2, 3], "float32", True), {}),
        lambda x: (([2], "float32"), {"force_cpu": 1}),
        lambda x: (([2, -1], "float32"), {}),
    ],
    "ones": [
        lambda x: (([2, 3], "float32"), {}),
        lambda x: (([4], "int32"), {}),
        lambda x: (([2, 3], "float32"), {"force_cpu": True}),
        lambda x: (([x], "float32"), {}),
    ],
    "uniform_random": [
        lambda x: (([2, 3],), {}),
        lambda x: (([2, 3], "float64"), {}),
        lambda x: (([2, 3], "float32", -2.0, 2.0), {}),
        lambda x: (([2, 3], "float32", -2, 2), {}),
        lambda x: (([2, 3],), {"seed": 7}),
        lambda x: (([2, 3], "float32", 1.0, -1.0), {}),
        lambda x: (([2, 3], "int32"), {}),
        lambda x: (([2, 3],), {"seed": -1}),
        lambda x: ((x,), {}),
    ],
    "gaussian_random": [
        lambda x: (([2, 3],), {}),
        lambda x: (([2, 3], 1.0, 2.0), {}),
        lambda x: (([2, 3], 1, 2), {}),
        lambda x: (([2, 3],), {"seed": 3, "dtype": "float64"}),
        lambda x: (([2, 3], 0.0, -1.0), {}),
        lambda x: (([2, 3], 0.0, 1.0, 0, "int64"), {}),
    ],
}


@pytest.mark.parametrize("name", list(CALLS))
def test_a_created_layer_appends_what_its_python_way_appends(name):
    assert replays_as_its_python_way(getattr(fluid.layers, name), CALLS[name], _session)


@pytest.mark.parametrize("name", ["fill_constant", "zeros", "ones"])
def test_init_on_cpu_is_part_of_what_a_call_replays(name):
    layer = getattr(fluid.layers, name)
    args = ([2, 3], "float32", 1.0) if name == "fill_constant" else ([2, 3], "float32")
    main, startup = Program(), Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        layer(*args)
        layer(*args)
        with init_on_cpu():
            layer(*args)
            layer(*args)
        layer(*args)
    assert [op.attrs["force_cpu"] for op in main.global_block().ops] == \
        [False, False, True, True, False]


def test_a_repeated_call_appends_without_the_layers_frames():
    def cell():
        for _ in range(2):
            fluid.layers.fill_constant([1, 2], "float32", 0.5)
            fluid.layers.zeros([1, 2], "float32")
            fluid.layers.ones([1, 2], "float32")
            fluid.layers.uniform_random([1, 2])
            fluid.layers.gaussian_random([1, 2])

    main, startup = Program(), Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        cell()
    # (the first of each may be the Python way's, recording it: other tests call them too)
    frames = [callstack.frames(op)[-1][2] for op in main.global_block().ops]
    assert frames[5:] == ["cell"] * 5


def test_a_replayed_call_in_a_name_scope_and_a_sub_block_appends_there():
    def cell(fill):
        with fluid.name_scope("scoped"):
            fill([2], "int64", 3)
        i = fill([1], "int64", 0)
        limit = fill([1], "int64", 2)
        cond = fluid.layers.less_than(i, limit)
        loop = fluid.layers.While(cond)
        with loop.block():
            fill([2], "int64", 3)
            fluid.layers.increment(i, in_place=True)
            fluid.layers.less_than(i, limit, cond=cond)

    programs = []
    for fill in (fluid.layers.fill_constant, fluid.layers.fill_constant.__wrapped__):
        main, startup = Program(), Program()
        with fluid.program_guard(main, startup), fluid.unique_name.guard():
            fill([2], "int64", 3)  # (the replay recorded)
            cell(fill)
        # (a name scope is named afresh in each program: /scoped/, then /scoped_1/)
        scopes = [op.attrs.pop("op_namescope", None) for op in main.global_block().ops]
        assert scopes[1].startswith("/scoped") and scopes.count(None) == len(scopes) - 1
        programs.append([(op.type, op.inputs, op.outputs, op.attrs)
                         for block in main.blocks for op in block.ops])
    assert programs[0] == programs[1]
    assert [op[0] for op in programs[0]].count("fill_constant") == 5
    assert len(main.blocks) == 2 and main.blocks[1].ops[0].type == "fill_constant"


def test_replayed_live_constants_and_draws_run_as_the_python_ways_do():
    main, startup, scope = fluid.Program(), fluid.Program(), fluid.Scope()
    with fluid.program_guard(main, startup), fluid.unique_name.guard(), \
            fluid.live(program=main, startup_program=startup, scope=scope):
        for _ in range(3):
            np.testing.assert_array_equal(
                fluid.layers.fill_constant([2, 3], "int64", 7).numpy(), np.full((2, 3), 7))
            assert fluid.layers.fill_constant([2], "float32", 1.5).numpy().tolist() == [1.5] * 2
            assert fluid.layers.ones([3], "int32").numpy().tolist() == [1, 1, 1]
            draws = [fluid.layers.uniform_random([500], min=2.0, max=3.0).numpy()
                     for _ in range(2)]
            assert all(d.dtype == np.float32 and 2.0 <= d.min() and d.max() < 3.0
                       for d in draws)
            assert not np.array_equal(*draws)  # (a seed of 0: each run draws afresh)
            seeded = [fluid.layers.gaussian_random([50], seed=11).numpy() for _ in range(2)]
            np.testing.assert_array_equal(*seeded)


def test_a_refused_call_is_refused_again_and_appends_nothing():
    main, startup = Program(), Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        for _ in range(3):
            with pytest.raises(fluid.errors.InvalidArgument, match="shape"):
                fluid.layers.fill_constant([2, -3], "float32", 1.0)
            with pytest.raises(fluid.errors.InvalidType, match="dtype"):
                fluid.layers.uniform_random([2, 3], "int32")
        assert main.global_block().ops == []


# a made-up layer of the same shape as the others but whose op reads an input: never
# replayed, as the layers modules' created layers are made
from fluid_nb.framework.transaction import append_one_op, created  # noqa: E402

_TARGET = []


def _scaled_target(factor):
    block = fluid.default_main_program().current_block()
    return append_one_op(block, "scale", {"X": (_TARGET[0].name,)}, {"scale": factor},
                         _TARGET[0].dtype, "scale")


def test_a_created_layer_whose_op_reads_an_input_is_never_replayed():
    layer = created(_scaled_target, globals())
    main, startup = Program(), Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        for name in ("a", "a", "b", "b"):
            _TARGET[:] = [main.global_block().var(name) if name in main.global_block().vars
                          else fluid.data(name=name, shape=[2], dtype="float32")]
            layer(2.0)
    assert [op.inputs["X"] for op in main.global_block().ops] == [("a",), ("a",), ("b",),
                                                                  ("b",)]
