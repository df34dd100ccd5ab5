"""MemoryView: records a run into its timeline, follows a live program cell by cell, sends
its model to the front end on refresh, and carries an HTML fallback with the block map,
the timeline with its peak and the variable table."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb import flags
from fluid_nb.errors import InvalidArgument
from fluid_nb.live.session import live_session
from fluid_nb.memory import places
from fluid_nb.widgets import MemoryView
from fluid_nb.widgets.memory_view import refresh_memory_views

CPU = fluid.CPUPlace()


@pytest.fixture(autouse=True)
def own_arena():
    saved = dict(flags._values)
    fluid.set_flags({"FLAGS_initial_cpu_memory_in_mb": 17})
    fresh = getattr(places, "fresh_host_arena", None)
    if fresh is not None:
        fresh()
    else:
        places._host[0] = None
    fluid.memory.events(CPU)
    yield
    fluid.memory.record_events(CPU, False)
    flags._values.clear()
    flags._values.update(saved)
    flags.version[0] += 1


def mlp():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 16], "float32")
        label = fluid.data("label", [None, 1], "int64")
        h = fluid.layers.fc(x, 32, act="relu")
        loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(
            fluid.layers.fc(h, 4), label))
        fluid.optimizer.Adam(0.01).minimize(loss)
    scope, exe = fluid.Scope(), fluid.Executor(CPU)
    exe.run(startup, scope=scope)
    rng = np.random.RandomState(0)
    feed = {"x": rng.rand(8, 16).astype("float32"),
            "label": rng.randint(0, 4, (8, 1)).astype("int64")}
    return main, scope, exe, feed, loss


def test_recording_a_run_gives_the_timeline_its_peak_and_turns_the_log_back_off(capture):
    main, scope, exe, feed, loss = mlp()
    view = MemoryView(scope=scope)
    assert view._kind == "memory" and view.timeline is None and view.peak is None
    assert "fc_0.w_0" in {r["name"] for r in view._model["variables"]}  # held, not recorded
    sent = capture(view)
    with view.recording():
        exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    assert fluid.memory.arena_of(CPU).recording is False
    assert view.events and view.peak == max(e.used for e in view.events)
    assert view.peak_op == view.timeline["peak"]["label"]
    assert any(p["label"].startswith("mul #") for p in view.timeline["points"])
    rows = {r["name"]: r for r in view._model["variables"]}
    assert rows["fc_0.tmp_0"]["op"].startswith("mul #")
    assert sent.updates() and sent.updates()[-1]["_model"]["timeline"]["peak"]["used"] == \
        view.peak
    result = view.record(exe.run, main, feed=feed, fetch_list=[loss], scope=scope)
    assert result[0].shape == (1,)
    assert fluid.memory.events(CPU) == []  # the view drained what it recorded


def test_refresh_shows_the_arena_as_it_is_now():
    view = MemoryView()
    before = view._model["stats"]["used"]
    address = fluid.memory.alloc(CPU, 5000)
    view.refresh()
    assert view._model["stats"]["used"] == before + 8192
    assert any(b["size"] == 8192 and b["state"] == "used"
               for c in view._model["map"]["chunks"] for b in c["blocks"])
    fluid.memory.free(CPU, address)


def test_a_view_of_a_live_program_takes_each_cells_allocations():
    main, startup, scope = fluid.Program(), fluid.Program(), fluid.Scope()
    with fluid.live(program=main, startup_program=startup, scope=scope) as session:
        view = MemoryView()
        assert view.scope is scope and view._session is session
        x = fluid.layers.fill_constant([64, 64], "float32", 1.0)
    first = view.timeline
    assert [p["label"] for p in first["points"]] == ["fill_constant #0"]
    assert first["points"][0]["alive"] == [[x.name, 64 * 64 * 4]]
    with fluid.live(program=main, startup_program=startup, scope=scope):
        y = fluid.layers.relu(x * 2.0)
    labels = [p["label"] for p in view.timeline["points"]]
    assert labels == ["scale #1", "relu #2"]
    names = {r["name"] for r in view._model["variables"]}
    assert {y.name, x.name} <= names
    # a view of another program is left alone
    other = MemoryView(program=fluid.Program())
    assert refresh_memory_views(main) == [view]
    assert other.timeline is None


def test_a_live_session_logs_allocations_only_while_a_view_follows_it():
    main, startup, scope = fluid.Program(), fluid.Program(), fluid.Scope()
    with fluid.live(program=main, startup_program=startup, scope=scope):
        fluid.memory.events(fluid.CPUPlace())  # (whatever earlier code left in the log)
        fluid.layers.fill_constant([16, 16], "float32", 1.0)
        assert fluid.memory.events(fluid.CPUPlace()) == []  # nobody watching: no log
        view = MemoryView()
        z = fluid.layers.fill_constant([16, 16], "float32", 2.0)
        logged = fluid.memory.events(fluid.CPUPlace())
        assert z.name in {e.variable for e in logged if e.kind == "alloc"}
        assert {e.op[0] for e in logged if e.op is not None} == {"fill_constant"}
    assert fluid.memory.record_events(fluid.CPUPlace(), False) is False  # off again after
    view.close()


def test_a_view_of_a_fluid_cells_program_takes_each_cells_allocations(shell, capture):
    assert shell.run_cell("%%fluid --program m_live --quiet\n"
                          "x = fluid.layers.fill_constant([32, 32], 'float32', 1.0)\n").success
    session = live_session("m_live")
    view = MemoryView(program=session.program)
    assert view.scope is session.scope and "m_live" in view.title
    # the session recorded nothing before a view followed it: the log is off without one
    assert view.timeline is None
    sent = capture(view)
    assert shell.run_cell("%%fluid --program m_live --quiet\n"
                          "y = fluid.layers.relu(x)\n").success
    assert [p["label"] for p in view.timeline["points"]] == ["relu #1"]
    assert view.timeline["points"][0]["alive"] == [[shell.user_ns["y"].name, 32 * 32 * 4]]
    assert sent.updates() and sent.updates()[-1]["_model"]["timeline"] == view.timeline
    # a cell that allocates nothing keeps the last cell's timeline
    assert shell.run_cell("%%fluid --program m_live --quiet\nz = 1\n").success
    assert [p["label"] for p in view.timeline["points"]] == ["relu #1"]


def test_fallback_html_has_the_bars_the_timeline_with_the_peak_and_the_table():
    main, scope, exe, feed, loss = mlp()
    view = MemoryView(scope=scope)
    bundle = view._repr_mimebundle_()[0]
    assert "class='fluid-nb-chunk'" in bundle["text/html"]
    assert "<polyline" not in bundle["text/html"]  # nothing recorded yet
    view.record(exe.run, main, feed=feed, fetch_list=[loss], scope=scope)
    bundle = view._repr_mimebundle_()[0]
    page = bundle["text/html"]
    assert "<polyline" in page and "class='fluid-nb-peak'" in page and "fc_0.w_0" in page
    assert bundle["text/plain"].startswith("MemoryView: ")
    said = view._model["peaks"]
    assert said["run"]["bytes"] == view.peak and said["run"]["op"] == view.peak_op
    assert said["run"]["text"] in bundle["text/plain"]
    assert said["arena"]["text"] in bundle["text/plain"]
    assert bundle["text/plain"].count(" peak ") == 2  # each peak once, with its own words
    assert "class='fluid-nb-memory-legend'" in page
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_memory_view_checks_its_arguments():
    with pytest.raises(InvalidArgument, match="Scope"):
        MemoryView(scope={"a": 1})
    with pytest.raises(InvalidArgument, match="Program"):
        MemoryView(program="main")
