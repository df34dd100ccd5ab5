"""The checked layers that append one op on their first argument (``scale``, ``mean``,
``cast``, ``clip``, ``leaky_relu``, the reductions, the reshape family, ``argmax``,
``argmin``, ``zeros_like``, ``ones_like``, ``one_hot``, ``slice``; a Variable's ``-x`` and
``x.astype``) replay their repeated calls in C
(``transaction.replayed``): a call whose other arguments and first argument's shape, dtype,
LoD level and type equal an earlier call's appends what that call gave ``append_one_op``,
without running the layer's checks again. The layer's Python function stays the
definition: whatever the arguments, and in whatever order calls come, a layer must append
what its Python function appends and return or raise what it returns or raises."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.api.layers import nn as layer_nn
from fluid_nb.framework import callstack
from fluid_nb.framework.program import Program
from tests.core.op_records import answer, record, replays_as_its_python_way


def _variables():
    return {"x": fluid.data(name="x", shape=[-1, 3], dtype="float32"),
            "x2": fluid.data(name="x2", shape=[-1, 3], dtype="float32"),
            "row": fluid.data(name="row", shape=[-1], dtype="float32"),
            "ints": fluid.data(name="ints", shape=[-1, 3], dtype="int64"),
            "bools": fluid.data(name="bools", shape=[-1, 3], dtype="bool"),
            "unit": fluid.data(name="unit", shape=[-1, 1, 3], dtype="float32"),
            "ids": fluid.data(name="ids", shape=[-1, 1], dtype="int64"),
            "depth": fluid.data(name="depth", shape=[1], dtype="int32"),
            "w": fluid.layers.create_parameter([2, 3], "float32", name="w")}


def _session(layer, calls):
    """The record and answers of ``calls`` (each (argument maker, keywords)) made in turn,
    each twice and then on ``x2`` for ``x`` (a first argument of the same fields), in a
    fresh program."""
    main, startup = Program(), Program()
    answers = []
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        v = _variables()
        for arguments in calls:
            for given in (v, v, dict(v, x=v["x2"])):
                args, kwargs = arguments(given)
                answers.append(answer(lambda: layer(*args, **kwargs)))
    return record(main), answers, main


#: layer -> the calls it is tried with, in this order (repeats, then neighbours whose key
#: differs by a class, a value, x's fields)
CALLS = {
    "scale": [
        lambda v: ((v["x"],), {}),
        lambda v: ((v["x"], 2.0), {}),
        lambda v: ((v["x"], 2.0, 1.0), {}),
        lambda v: ((v["x"], 2.0), {"bias": 1.0, "bias_after_scale": False}),
        lambda v: ((v["x"],), {"scale": 2.0}),
        lambda v: ((v["x"],), {"bias": 2.0}),
        lambda v: ((v["x"], 1.0), {}),
        lambda v: ((v["x"], True), {}),
        lambda v: ((v["x"], 1), {}),
        lambda v: ((v["x"], -0.5), {"act": "relu"}),
        lambda v: ((v["x"], 2.0), {"name": "named"}),
        lambda v: ((v["x"], v["x2"]), {}),
        lambda v: ((v["x"], float("nan")), {}),
        lambda v: ((v["x"], "2"), {}),
        lambda v: ((v["ints"], 3), {}),
        lambda v: ((v["bools"], 2.0), {}),
        lambda v: ((v["w"], 2.0), {}),
        lambda v: ((), {"x": v["x"], "scale": 2.0}),
        lambda v: ((v["x"], 2.0), {"scale": 3.0}),
        lambda v: ((v["x"], 2.0), {"unknown": 1}),
        lambda v: ((3.0, 2.0), {}),
    ],
    "mean": [
        lambda v: ((v["x"],), {}),
        lambda v: ((v["x"],), {"name": None}),
        lambda v: ((v["x"], None), {}),
        lambda v: ((v["x"],), {"name": "named"}),
        lambda v: ((v["row"],), {}),
        lambda v: ((v["ints"],), {}),
        lambda v: ((v["x"], 1), {}),
        lambda v: (([v["x"]],), {}),
    ],
    "cast": [
        lambda v: ((v["x"], "float64"), {}),
        lambda v: ((v["x"], "int32"), {}),
        lambda v: ((v["x"],), {"dtype": "float64"}),
        lambda v: ((v["x"], np.float64), {}),
        lambda v: ((v["x"], "complex64"), {}),
        lambda v: ((v["x"], "float33"), {}),
        lambda v: ((v["bools"], "float32"), {}),
        lambda v: ((v["ints"], "float32"), {}),
        lambda v: ((v["row"], "float64"), {}),
        lambda v: ((v["x"], 5), {}),
    ],
    "clip": [
        lambda v: ((v["x"], 0.2, 0.8), {}),
        lambda v: ((v["x"], 0.8, 0.2), {}),
        lambda v: ((v["x"], 1, 2), {}),
        lambda v: ((v["x"], True, 2), {}),
        lambda v: ((v["x"],), {"min": 0.1, "max": 0.5}),
        lambda v: ((v["x"], 0.1, 0.5), {"name": "named"}),
        lambda v: ((v["ints"], 0.1, 0.5), {}),
        lambda v: ((v["x"], 0.1), {}),
    ],
    "leaky_relu": [
        lambda v: ((v["x"],), {}),
        lambda v: ((v["x"], 0.1), {}),
        lambda v: ((v["x"],), {"alpha": 0.1}),
        lambda v: ((v["x"], 1), {}),
        lambda v: ((v["x"], "a"), {}),
        lambda v: ((v["x"], 0.1, "named"), {}),
        lambda v: ((v["ints"], 0.1), {}),
    ],
}
CALLS.update({
    "reshape": [
        lambda v: ((v["x"], [-1]), {}),
        lambda v: ((v["x"], [0, 3]), {}),
        lambda v: ((v["x"], (3, -1)), {}),
        lambda v: ((v["x"],), {"shape": [-1, 1, 3]}),
        lambda v: ((v["x"], [-1, -1]), {}),
        lambda v: ((v["x"], [3.0]), {}),
        lambda v: ((v["x"], [-1, 3]), {"act": "relu"}),
        lambda v: ((v["x"], [-1, 3]), {"inplace": True}),
        lambda v: ((v["x"], [-1, 3]), {"name": "named"}),
        lambda v: ((v["x"], v["ints"]), {}),
        lambda v: ((v["row"], [-1, 1]), {}),
    ],
    "transpose": [
        lambda v: ((v["x"], [1, 0]), {}),
        lambda v: ((v["x"], [0, 1]), {}),
        lambda v: ((v["x"], (1, 0)), {}),
        lambda v: ((v["x"],), {"perm": [1, 0]}),
        lambda v: ((v["x"], [1]), {}),
        lambda v: ((v["x"], [1, 0], "named"), {}),
        lambda v: ((v["row"], [0]), {}),
        lambda v: ((v["row"], [1, 0]), {}),
    ],
    "squeeze": [
        lambda v: ((v["unit"], [1]), {}),
        lambda v: ((v["unit"], [-1]), {}),
        lambda v: ((v["unit"], (1,)), {}),
        lambda v: ((v["unit"], [1]), {"name": "named"}),
        lambda v: ((v["x"], [1]), {}),
        lambda v: ((v["x"], []), {}),
    ],
    "unsqueeze": [
        lambda v: ((v["x"], 0), {}),
        lambda v: ((v["x"], [0]), {}),
        lambda v: ((v["x"], [0, 3]), {}),
        lambda v: ((v["x"], [-1]), {}),
        lambda v: ((v["x"], [9]), {}),
        lambda v: ((v["x"], True), {}),
        lambda v: ((v["x"], [0]), {"name": "named"}),
        lambda v: ((v["row"], [1]), {}),
    ],
    "flatten": [
        lambda v: ((v["x"],), {}),
        lambda v: ((v["x"], 0), {}),
        lambda v: ((v["x"], 2), {}),
        lambda v: ((v["x"], 3), {}),
        lambda v: ((v["x"],), {"axis": 1}),
        lambda v: ((v["x"], 1, "named"), {}),
        lambda v: ((v["row"], 1), {}),
    ],
})
CALLS.update({
    "argmax": [
        lambda v: ((v["x"],), {}),
        lambda v: ((v["x"], 1), {}),
        lambda v: ((v["x"],), {"axis": -1}),
        lambda v: ((v["x"], 2), {}),
        lambda v: ((v["x"], 1.0), {}),
        lambda v: ((v["ints"], 1), {}),
        lambda v: ((v["bools"], 1), {}),
    ],
    "argmin": [
        lambda v: ((v["x"], 1), {}),
        lambda v: ((v["row"], 0), {}),
    ],
    "zeros_like": [
        lambda v: ((v["x"],), {}),
        lambda v: ((v["x"],), {"out": None}),
        lambda v: ((v["x"],), {"out": v["x2"]}),
        lambda v: ((v["ints"],), {}),
    ],
    "ones_like": [
        lambda v: ((v["x"],), {}),
        lambda v: ((v["x"], v["x2"]), {}),
        lambda v: ((v["bools"],), {}),
    ],
})
CALLS["one_hot"] = [
    lambda v: ((v["ids"], 8), {}),
    lambda v: ((v["ids"], 8, True), {}),
    lambda v: ((v["ids"],), {"depth": 8}),
    lambda v: ((v["ids"], v["depth"]), {}),
    lambda v: ((v["ids"], 0), {}),
    lambda v: ((v["ids"], 8.0), {}),
    lambda v: ((v["x"], 8), {}),
    lambda v: ((v["unit"], 8), {}),
]
_REDUCE_CALLS = [
    lambda v: ((v["x"],), {}),
    lambda v: ((v["x"], 1), {}),
    lambda v: ((v["x"],), {"dim": 1}),
    lambda v: ((v["x"], [1]), {}),
    lambda v: ((v["x"], (1,)), {}),
    lambda v: ((v["x"], [0, 1]), {}),
    lambda v: ((v["x"], -1, True), {}),
    lambda v: ((v["x"], 1), {"keep_dim": True}),
    lambda v: ((v["row"], 1), {}),
    lambda v: ((v["row"], 0), {}),
    lambda v: ((v["x"], 1.0), {}),
    lambda v: ((v["x"], True), {}),
    lambda v: ((v["x"], [1.0]), {}),
    lambda v: ((v["x"], 2), {}),
    lambda v: ((v["x"], []), {}),
    lambda v: ((v["x"], 1), {"name": "named"}),
    lambda v: ((v["ints"], 1), {}),
    lambda v: ((v["bools"], 1), {}),
]
CALLS["slice"] = [
    lambda v: ((v["x"], [1], [0], [2]), {}),
    lambda v: ((v["x"],), {"axes": [1], "starts": [0], "ends": [2]}),
    lambda v: ((v["x"], [1], [-2], [100]), {}),
    lambda v: ((v["x"], [0, 1], [0, 1], [1, 3]), {}),
    lambda v: ((v["x"], (1,), (0,), (2,)), {}),
    lambda v: ((v["x"], [1], [2], [1]), {}),
    lambda v: ((v["x"], [1], [0], [2, 3]), {}),
    lambda v: ((v["x"], [5], [0], [2]), {}),
    lambda v: ((v["x"], [1], [0.0], [2]), {}),
    lambda v: ((v["x"], [1], v["depth"], [2]), {}),
    lambda v: ((v["x"], [1], [v["depth"]], [2]), {}),
    lambda v: ((v["row"], [0], [1], [2]), {}),
    lambda v: ((v["w"], [1], [0], [2]), {}),
    lambda v: ((v["ints"], [1], [0], [2]), {}),
]
for _reduction in ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"):
    CALLS[_reduction] = _REDUCE_CALLS


@pytest.mark.parametrize("name", list(CALLS))
def test_a_replayed_layer_appends_what_its_python_way_appends(name):
    assert replays_as_its_python_way(getattr(fluid.layers, name), CALLS[name], _session)


#: a Variable's methods of one op replayed as the layers above: -x, x.astype(dtype)
METHOD_CALLS = {
    "__neg__": [
        lambda v: ((v["x"],), {}),
        lambda v: ((v["row"],), {}),
        lambda v: ((v["ints"],), {}),
        lambda v: ((v["bools"],), {}),
        lambda v: ((v["w"],), {}),
        lambda v: ((v["unit"],), {}),
    ],
    "astype": [
        lambda v: ((v["x"], "float64"), {}),
        lambda v: ((v["x"], "float32"), {}),
        lambda v: ((v["x"], "int64"), {}),
        lambda v: ((v["x"],), {"dtype": "float64"}),
        lambda v: ((v["x"], np.float64), {}),
        lambda v: ((v["x"], np.dtype("float16")), {}),
        lambda v: ((v["x"], fluid.core.VarDesc.VarType.FP64), {}),
        lambda v: ((v["x"], "float33"), {}),
        lambda v: ((v["x"], 5), {}),
        lambda v: ((v["ints"], "float32"), {}),
        lambda v: ((v["bools"], "int32"), {}),
        lambda v: ((v["w"], "float64"), {}),
    ],
}


@pytest.mark.parametrize("method", list(METHOD_CALLS))
def test_a_variables_replayed_method_appends_what_its_python_way_appends(method):
    from fluid_nb.framework.program import Variable
    assert replays_as_its_python_way(getattr(Variable, method), METHOD_CALLS[method],
                                     _session)


def _innermost(program):
    return [callstack.frames(op)[-1][2] for op in program.global_block().ops]


def test_a_repeated_call_appends_without_the_layers_frames():
    def cell(v):
        x = v["x"]
        for _ in range(2):
            fluid.layers.reduce_sum(x, dim=1)
            fluid.layers.scale(x, 0.5, 0.25)
            fluid.layers.cast(x, "float64")
            fluid.layers.mean(x)
            fluid.layers.clip(x, -1.0, 1.0)
            fluid.layers.leaky_relu(x, alpha=0.3)
            fluid.layers.reshape(x, [-1])
            fluid.layers.transpose(x, [1, 0])
            fluid.layers.unsqueeze(x, [0])
            fluid.layers.squeeze(v["unit"], [1])
            fluid.layers.flatten(x)
            fluid.layers.argmax(x, 1)
            fluid.layers.zeros_like(x)

    main, startup = Program(), Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        cell(_variables())
    # (the first of each may be the Python way's, recording it: other tests call them too)
    assert _innermost(main)[13:] == ["cell"] * 13


def test_a_call_appending_more_than_one_op_is_never_replayed():
    main, startup = Program(), Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = _variables()["x"]
        for _ in range(3):
            fluid.layers.scale(x, 0.5, act="relu")
    # (a replay of the first op alone would leave the activation out)
    assert [op.type for op in main.global_block().ops] == ["scale", "relu"] * 3


def test_a_replayed_ops_lists_are_its_own():
    main, startup = Program(), Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = _variables()["x"]
        first = fluid.layers.reduce_sum(x, dim=[1])
        first.op.attrs["dim"].append(0)  # (a user editing one op's attributes)
        second = fluid.layers.reduce_sum(x, dim=[1])
        third = fluid.layers.reduce_sum(x, dim=[1])
    assert second.op.attrs["dim"] == [1] and third.op.attrs["dim"] == [1]
    assert second.op.attrs["dim"] is not third.op.attrs["dim"]


SWAPPED = {
    "append_one_op": (lambda x: [fluid.layers.reduce_mean(x, dim=1),
                                 fluid.layers.leaky_relu(x, 0.2)], ["reduce_mean", "leaky_relu"]),
    "append_with_xshape": (lambda x: [fluid.layers.reshape(x, [-1]),
                                      fluid.layers.transpose(x, [1, 0])],
                           ["reshape2", "transpose2"]),
}


@pytest.mark.parametrize("appender", list(SWAPPED))
def test_another_appender_has_every_call_go_the_python_way(appender, monkeypatch):
    from fluid_nb.api.layers import manip
    module = layer_nn if appender == "append_one_op" else manip
    seen = []
    real = getattr(module, appender)

    def spy(*args):
        seen.append(args[1])
        return real(*args)
    monkeypatch.setattr(module, appender, spy)
    calls, op_types = SWAPPED[appender]
    main, startup = Program(), Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = _variables()["x"]
        for _ in range(3):
            calls(x)
    assert seen == op_types * 3


def test_a_layer_is_its_python_functions_stand_in():
    import inspect
    layer = fluid.layers.reduce_sum
    assert layer.__name__ == "reduce_sum" and layer.__module__ == layer_nn.__name__
    assert str(inspect.signature(layer)) == "(input, dim=None, keep_dim=False, name=None)"
    assert layer.__wrapped_transaction__  # (all or nothing itself: no wrapper around it)


def test_a_replayed_live_op_runs_as_the_python_ways_does():
    values = np.arange(12, dtype="float32").reshape(4, 3) - 5
    main, startup, scope = fluid.Program(), fluid.Program(), fluid.Scope()
    with fluid.program_guard(main, startup), fluid.unique_name.guard(), \
            fluid.live(program=main, startup_program=startup, scope=scope):
        x = fluid.layers.data(name="x", shape=[4, 3], dtype="float32",
                              append_batch_size=False, value=values)
        ids = fluid.layers.data(name="ids", shape=[3, 1], dtype="int64",
                                append_batch_size=False,
                                value=np.array([[1], [3], [0]], "int64"))
        for _ in range(3):
            outs = [fluid.layers.reduce_sum(x, dim=1), fluid.layers.scale(x, 2.0, 1.0),
                    fluid.layers.cast(x, "int32"), fluid.layers.mean(x),
                    fluid.layers.clip(x, -2.0, 3.0), fluid.layers.leaky_relu(x, 0.5),
                    fluid.layers.reduce_max(x, dim=[0], keep_dim=True),
                    fluid.layers.reshape(x, [3, 4]), fluid.layers.transpose(x, [1, 0]),
                    fluid.layers.unsqueeze(x, [1]), fluid.layers.flatten(x, 0)]
            got = [out.numpy() for out in outs]
            expected = [values.sum(1), values * 2 + 1, values.astype("int32"),
                        values.mean(), np.clip(values, -2, 3),
                        np.where(values > 0, values, values * 0.5),
                        values.max(0, keepdims=True), values.reshape(3, 4), values.T,
                        values[:, None], values.reshape(1, 12)]
            for value, want in zip(got, expected):
                np.testing.assert_allclose(value, want, rtol=1e-6)
                assert value.dtype == want.dtype
            hot = fluid.layers.one_hot(ids, 4).numpy()
            np.testing.assert_array_equal(hot, np.eye(4, dtype="float32")[[1, 3, 0]])


# layers of other shapes, made replayed as the layers modules make theirs: none of their
# calls may be replayed (each appends more than one op, or returns something else)
from fluid_nb.framework.transaction import append_one_op, replayed  # noqa: E402


def _block():
    return fluid.default_main_program().current_block()


def _two_appends(x):
    out = append_one_op(_block(), "scale", {"X": (x.name,)}, {"scale": 2.0}, x.dtype, "scale")
    append_one_op(_block(), "relu", {"X": (out.name,)}, None, x.dtype, "relu")
    return out


def _an_append_and_another_op(x):
    out = append_one_op(_block(), "scale", {"X": (x.name,)}, {"scale": 2.0}, x.dtype, "scale")
    _block().append_op(type="relu", inputs={"X": out}, outputs={"Out": out})
    return out


def _another_result(x):
    append_one_op(_block(), "scale", {"X": (x.name,)}, {"scale": 2.0}, x.dtype, "scale")
    return x


def _with_xshape_on_another(x):
    from fluid_nb.framework.transaction import append_with_xshape
    other = _block().var("x2")
    return append_with_xshape(_block(), "reshape2", other, {"shape": [-1]}, "reshape2")


def _x_twice(x):
    return append_one_op(_block(), "elementwise_add", {"X": (x.name,), "Y": (x.name,)}, None,
                         x.dtype, "elementwise_add")


#: a program besides the main one, with variables of x's and x2's names
_OTHER = []


def _an_append_to_another_program(x):
    out = append_one_op(_block(), "scale", {"X": (x.name,)}, {"scale": 2.0}, x.dtype, "scale")
    other = _OTHER[-1].global_block()
    append_one_op(other, "relu", {"X": (x.name,)}, None, x.dtype, "relu")
    return out


def _an_append_elsewhere_and_an_op_here(x):
    out = append_one_op(_OTHER[-1].global_block(), "scale", {"X": (x.name,)}, {"scale": 2.0},
                        x.dtype, "scale")
    _block().append_op(type="relu", inputs={"X": x}, outputs={"Out": x})
    return out


LAYERS = {_an_append_elsewhere_and_an_op_here: ["relu"], _two_appends: ["scale", "relu"], _an_append_and_another_op: ["scale", "relu"],
          _another_result: ["scale"], _x_twice: ["elementwise_add"],
          _an_append_to_another_program: ["scale"], _with_xshape_on_another: ["reshape2"]}


@pytest.mark.parametrize("layer", list(LAYERS), ids=lambda layer: layer.__name__)
def test_a_layer_doing_other_than_one_append_on_x_is_never_replayed(layer):
    calls = [lambda v: ((v["x"],), {})]
    sessions = []
    for way in (replayed(layer, globals()), layer):
        other = Program()
        for name in ("x", "x2"):
            other.global_block().create_var(name=name, shape=[-1, 3], dtype="float32")
        _OTHER.append(other)
        sessions.append((_session(way, calls), other))
    (got, got_other), (python_way, python_other) = sessions
    assert got[:2] == python_way[:2]
    assert [op.type for op in got[2].global_block().ops] == LAYERS[layer] * 3
    assert len(got_other.global_block().ops) == len(python_other.global_block().ops)


@pytest.mark.parametrize("field, value", [("shape", [-1, 3]), ("lod_level", [0])])
def test_a_variable_whose_fields_make_no_key_goes_the_python_way(field, value):
    def calls(layer):
        main, startup = Program(), Program()
        with fluid.program_guard(main, startup), fluid.unique_name.guard():
            x = _variables()["x"]
            setattr(x, field, value)  # (an unhashable field: a list set by hand)
            answers = [answer(lambda: layer(x, dim=1)) for _ in range(2)]
        return record(main), answers
    replayed_way, python_way = calls(fluid.layers.reduce_sum), \
        calls(fluid.layers.reduce_sum.__wrapped__)
    assert replayed_way == python_way


def test_a_replayed_live_op_whose_run_fails_leaves_nothing_behind():
    """Inference cannot refuse reshape to [16, -1] of an unknown batch; the run of a second
    value with the same fields but 24 elements does: the replay takes back the op, both
    temporaries, their holders and their names, and raises the Python way's error."""
    from fluid_nb.framework import unique_name

    def session(layer):
        main, startup, scope = fluid.Program(), fluid.Program(), fluid.Scope()
        with fluid.program_guard(main, startup), fluid.unique_name.guard(), \
                fluid.live(program=main, startup_program=startup, scope=scope):
            a = fluid.layers.data(name="a", shape=[8], dtype="float32",
                                  value=np.ones((4, 8), "float32"))
            b = fluid.layers.data(name="b", shape=[8], dtype="float32",
                                  value=np.ones((3, 8), "float32"))
            layer(a, [16, -1])
            layer(a, [16, -1])  # (a replay from here on)
            layer(b, [12, -1])  # (b's value in the scope before the failing run)
            before = (list(main.global_block().vars), dict(unique_name._generator.ids),
                      len(main.global_block().ops), sorted(scope.vars))
            with pytest.raises(Exception) as raised:
                layer(b, [16, -1])
            after = (list(main.global_block().vars), dict(unique_name._generator.ids),
                     len(main.global_block().ops), sorted(scope.vars))
            again = layer(a, [16, -1]).name
        return before == after, type(raised.value), str(raised.value), again

    replayed_way = session(fluid.layers.reshape)
    assert replayed_way[0]
    assert replayed_way == session(fluid.layers.reshape.__wrapped__)


@pytest.mark.parametrize("name", ["reduce_sum", "reshape", "cast", "argmax", "zeros_like"])
def test_a_replayed_layer_pickles_by_reference_as_its_function_does(name):
    import pickle
    layer = getattr(fluid.layers, name)
    assert pickle.loads(pickle.dumps(layer, protocol=pickle.HIGHEST_PROTOCOL)) is layer
