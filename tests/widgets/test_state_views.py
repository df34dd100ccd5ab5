"""TensorView, ScopeView and StepperView carry their view models and a plain fallback."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument, OutOfRange
from fluid_nb.viz.loop_trace import trace_while
from fluid_nb.widgets import ScopeView, StepperView, TensorView

from tests.api.test_dynamic_rnn import LENGTHS, STEP_BATCHES, build_design_example, lod_feed


def test_tensor_view_shows_every_lod_level_and_colours_rows_by_sequence():
    value = np.arange(14, dtype="float32").reshape(14, 1)
    view = TensorView(value, lod=[[0, 5, 8, 10, 14]])
    model = view._model
    assert model["levels"][0]["lengths"] == [5, 3, 2, 4]
    assert [row["sequence"] for row in model["data"]["rows"]][4:6] == [0, 1]
    assert "offsets [0, 5, 8, 10, 14] lengths [5, 3, 2, 4]" in view._repr_mimebundle_()[0][
        "text/plain"]


def test_tensor_view_takes_a_lod_tensor_but_not_a_second_lod():
    tensor = fluid.create_lod_tensor(np.ones((3, 2), "float32"), [[2, 1]], fluid.CPUPlace())
    assert TensorView(tensor)._model["levels"][0]["offsets"] == [0, 2, 3]
    with pytest.raises(InvalidArgument, match="lod"):
        TensorView(tensor, lod=[[0, 3]])


def test_scope_view_shows_the_tree_and_refreshes():
    scope = fluid.Scope()
    scope.var("a").value = fluid.LoDTensor(np.ones((2, 2), "float32"))
    kid = scope.new_scope()
    kid.var("b").value = fluid.LoDTensor(np.zeros(3, "float64"))
    view = ScopeView(scope)
    root = view._model["root"]
    assert [v["name"] for v in root["vars"]] == ["a"]
    assert [v["name"] for v in root["kids"][0]["vars"]] == ["b"]
    scope.var("c").value = fluid.LoDTensor(np.ones(1, "float32"))
    view.refresh()
    assert [v["name"] for v in view._model["root"]["vars"]] == ["a", "c"]
    assert "<b>Scope</b>" in view._repr_mimebundle_()[0]["text/html"]


def test_scope_view_needs_a_scope():
    with pytest.raises(InvalidArgument, match="Scope"):
        ScopeView({"a": 1})


@pytest.fixture(scope="module")
def rnn_trace():
    main, startup, _, _ = build_design_example()
    scope, exe = fluid.Scope(), fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    rows = sum(LENGTHS)
    feed = {"x": lod_feed(np.arange(rows * 2, dtype="float32").reshape(rows, 2), LENGTHS),
            "boot": np.zeros((4, 2), "float32"), "static": np.ones((4, 3), "float32")}
    return trace_while(exe, main, feed=feed, scope=scope)


def test_stepper_view_steps_the_design_documents_dynamic_rnn(rnn_trace):
    view = StepperView(rnn_trace)
    assert len(view.iterations) == len(STEP_BATCHES)
    assert view.batch_sizes() == STEP_BATCHES
    view.step = 9
    with pytest.raises(OutOfRange, match=r"\[0, 10\)"):
        view.step = 10
    assert "batch per step: [4, 4, 4, 4, 4, 3, 3, 2, 1, 1]" in view._repr_mimebundle_()[0][
        "text/plain"]


def test_stepper_view_refuses_what_is_not_a_loop_trace():
    with pytest.raises(InvalidArgument, match="fluid-nb.loop"):
        StepperView({"format": "fluid-nb.lod"})
