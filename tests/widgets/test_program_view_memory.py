"""ProgramView.show_memory: a recorded run's bytes per op reach the front end as the small
``_memory`` trait (not a new model), a MemoryView's recording works as well as its events,
``None`` clears them, and frontends without widgets get them in the model and the listing."""
import json

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument
from fluid_nb.viz import MIME_TYPE
from fluid_nb.viz.program_model import program_memory
from fluid_nb.widgets import MemoryView, ProgramView

from ..viz.test_memory_model import CPU, mlp, own_arena, recorded_run  # noqa: F401  (fixture)


def test_show_memory_sends_the_figures_alone_and_none_clears_them(capture):
    main, _, events = recorded_run()
    view = ProgramView(main, title="mlp")
    assert view.memory is None
    sent = capture(view)
    shown = view.show_memory(events)
    assert shown == json.loads(json.dumps(program_memory(view._model, events)))
    assert view.memory == shown and len(shown["ops"]) >= 15
    # one trait update carrying the figures: no model, no delta
    assert sent.custom() == [] and sent.updates() == [{"_memory": shown}]
    assert len(json.dumps(shown)) < len(json.dumps(view._model)) / 3
    mul = view._model["ops"][0]
    assert shown["ops"][mul["id"]]["vars"] == ["fc_0.tmp_0"]
    assert view.show_memory(None) is None
    assert view.memory is None and view._memory == {}
    assert sent.updates()[-1] == {"_memory": {}}


def test_show_memory_reads_a_memory_views_recording():
    main, startup, loss = mlp()
    scope, exe = fluid.Scope(), fluid.Executor(CPU)
    exe.run(startup, scope=scope)
    rng = np.random.RandomState(0)
    feed = {"x": rng.rand(8, 16).astype("float32"),
            "label": rng.randint(0, 4, (8, 1)).astype("int64")}
    exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    memory_view = MemoryView(CPU, scope)
    memory_view.record(exe.run, main, feed=feed, fetch_list=[loss], scope=scope)
    view = ProgramView(main)
    figures = view.show_memory(memory_view)
    assert figures == json.loads(json.dumps(program_memory(view._model, memory_view.events)))
    adam = [f for f in figures["ops"].values() if f["label"].startswith("adam #")]
    assert len(adam) == 4
    assert max(figures["ops"].values(), key=lambda f: f["bytes"])["bytes"] == figures["max"]


def test_show_memory_refuses_what_is_not_events():
    main, _, _ = recorded_run()
    view = ProgramView(main)
    for wrong in ("events", 3, {"ops": {}}, [("alloc", 1, 2)]):
        with pytest.raises(InvalidArgument, match="ProgramView.show_memory: events expected"):
            view.show_memory(wrong)
    assert view.memory is None


def test_fallback_model_and_listing_carry_the_figures():
    main, _, events = recorded_run()
    view = ProgramView(main)
    data = view._repr_mimebundle_()[0]
    assert "memory" not in data[MIME_TYPE] and "allocates" not in data["text/html"]
    figures = view.show_memory(events)
    data = view._repr_mimebundle_()[0]
    assert data[MIME_TYPE]["memory"] == figures
    assert data[MIME_TYPE]["ops"] == view._model["ops"]
    assert "# allocates 1.0 KiB in 1 block: fc_0.tmp_0" in data["text/html"]
    assert "fluid-nb-listing-memory" in data["text/html"]
    assert "memory" not in view._model  # the widget's model trait stays the program's


def test_figures_survive_a_delta_that_grows_the_program(fresh_names):
    main, _, events = recorded_run()
    view = ProgramView(main)
    figures = view.show_memory(events)
    with fluid.program_guard(main):
        fluid.layers.scale(main.global_block().var("fc_0.tmp_0"), scale=2.0)
    assert view.refresh()["type"] == "delta"
    assert view.memory == figures  # the ops that ran keep their ids, and their figures
