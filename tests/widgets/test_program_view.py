"""ProgramView: the full model once, deltas after; live cells grow it; clicks give details."""
import json

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument
from fluid_nb.live import live_session
from fluid_nb.viz import MIME_TYPE, apply_delta, program_model
from fluid_nb.widgets import ProgramView, refresh_views
from fluid_nb.widgets.program_view import _open_views

from .conftest import scale_chain


def _without_new(model):
    strip = lambda items: [{k: v for k, v in it.items() if k != "new"} for it in items]  # noqa: E731
    return {**model, "ops": strip(model["ops"]), "vars": strip(model["vars"])}


def test_first_model_is_the_program_model(fresh_names):
    program, _ = scale_chain(3)
    view = ProgramView(program, title="chain")
    assert view._model["stats"]["ops"] == 3 and view._model["title"] == "chain"
    assert _without_new(view._model) == _without_new(json.loads(json.dumps(
        program_model(program, title="chain"))))


def test_refresh_sends_a_delta_and_not_the_model(fresh_names, capture):
    program, startup = scale_chain(3)
    view = ProgramView(program)
    old = view._model
    sent = capture(view)
    scale_chain(2, program, startup)
    view.refresh()
    assert sent.updates() == []  # the model trait is not resent
    [message] = sent.custom()
    assert message["type"] == "delta"
    delta = message["delta"]
    assert [op["type"] for op in delta["add"]["ops"]] == ["scale", "scale"]
    assert all(op["new"] for op in delta["add"]["ops"])
    # the kernel's copy is what the front end gets by applying the delta, kept current
    # without a message: a page that reloads asks for the widget's state and gets it
    assert _without_new(apply_delta(old, delta)) == _without_new(view._model)
    assert view.get_state()["_model"] is view._model and view._model["stats"]["ops"] == 5
    assert {op["id"] for op in view._model["ops"] if op["new"]} == \
        {op["id"] for op in delta["add"]["ops"]}


def test_refresh_of_an_unchanged_program_sends_nothing(fresh_names, capture):
    program, _ = scale_chain(2)
    view = ProgramView(program)
    sent = capture(view)
    assert view.refresh() is None and sent == []


def test_delta_after_ten_ops_is_under_a_tenth_of_a_thousand_op_model(fresh_names, capture):
    program, startup = scale_chain(1000)
    view = ProgramView(program)
    full = len(json.dumps(view._model))
    sent = capture(view)
    scale_chain(10, program, startup)
    view.refresh()
    delta = len(json.dumps(sent.custom()[0]))
    assert delta < 0.1 * full, (delta, full)


def test_diff_lists_what_the_last_refresh_added_and_removed(fresh_names):
    program, startup = scale_chain(2)
    view = ProgramView(program)
    assert not view.diff()
    scale_chain(1, program, startup)
    view.refresh()
    diff = view.diff()
    assert [kind for _, kind, _ in diff.added_ops] == ["scale"]
    assert len(diff.added_vars) == 1 and "+1 ops" in repr(diff)
    del program.global_block().ops[-1]
    program._changed()
    view.refresh()
    assert len(view.diff().removed_ops) == 1 and "scale" not in view._repr_mimebundle_()[0][
        MIME_TYPE]["ops"][-1]["id"]


def test_front_end_out_of_step_gets_the_full_model_again(fresh_names, capture):
    program, _ = scale_chain(2)
    view = ProgramView(program)
    sent = capture(view)
    view._handle_custom_msg({"type": "need-model"}, [])
    [message] = sent.custom()
    assert message == {"type": "model", "model": view._model}


def test_refresh_views_refreshes_open_views_of_that_program_only(fresh_names, capture):
    grown, startup = scale_chain(1)
    other, _ = scale_chain(1)
    a, b, c = ProgramView(grown), ProgramView(grown), ProgramView(other)
    sent = {view: capture(view) for view in (a, b, c)}
    b.close()
    assert b not in _open_views
    scale_chain(1, grown, startup)
    assert refresh_views(grown) == [a]
    assert len(sent[a].custom()) == 1 and sent[c] == []


def test_program_must_be_a_program():
    with pytest.raises(InvalidArgument, match="Program"):
        ProgramView("main")


def test_fallback_bundle_has_program_model_html_and_widget(fresh_names):
    program, _ = scale_chain(2)
    data, _ = ProgramView(program)._repr_mimebundle_()
    assert data[MIME_TYPE]["stats"]["ops"] == 2
    assert "scale" in data["text/html"] and "scale" in data["text/plain"]
    assert "model_id" in data["application/vnd.jupyter.widget-view+json"]


# --- live cells ---------------------------------------------------------------------------------
CELL_1 = """%%fluid --program w_live --quiet
x = fluid.layers.data(name='x', shape=[3], dtype='float32',
                      value=np.arange(6, dtype='float32').reshape(2, 3))
h = fluid.layers.fc(input=x, size=4, act='relu')
"""
CELL_2 = "%%fluid --program w_live --quiet\ny = fluid.layers.fc(input=h, size=1)\n"
BAD_CELL = ("%%fluid --program w_live --quiet\nz = fluid.layers.fc(input=h, size=3)\n"
            "bad = fluid.layers.elementwise_add(z, h)\n")


def test_live_view_grows_cell_by_cell_and_ignores_rolled_back_cells(shell, capture):
    assert shell.run_cell(CELL_1).success
    session = live_session("w_live")
    view = ProgramView(session.program)
    assert view.title == "live program 'w_live'" and view.scope is session.scope
    sent = capture(view)
    counts = [view._model["stats"]["ops"]]
    assert shell.run_cell(CELL_2).success
    refresh_views(session.program)
    counts.append(view._model["stats"]["ops"])
    assert counts == [3, 5]
    assert [op["type"] for op in sent.custom()[0]["delta"]["add"]["ops"]] == \
        ["mul", "elementwise_add"]
    assert not shell.run_cell(BAD_CELL).success
    refresh_views(session.program)
    assert len(sent.custom()) == 1  # the rolled-back cell left the program as it was


def test_view_follows_a_live_session_across_reset(shell, capture):
    assert shell.run_cell(CELL_1.replace("w_live", "w_reset")).success
    session = live_session("w_reset")
    shell.run_cell("%%fluid --program w_reset --quiet\n"
                   "from fluid_nb.widgets import ProgramView\nview = ProgramView()\n")
    view = shell.user_ns["view"]
    assert view.program is session.program
    sent = capture(view)
    session.reset()
    refresh_views(session.program)
    [message] = sent.custom()
    assert message["type"] == "model" and message["model"]["stats"]["ops"] == 0


def test_clicked_variable_shows_its_live_value_as_lod_model(shell):
    assert shell.run_cell(CELL_1.replace("w_live", "w_value")).success
    view = ProgramView(live_session("w_value").program)
    view.selected = "v:0:x"
    value = view._details["value"]
    assert value["format"] == "fluid-nb.lod" and value["shape"] == [2, 3]
    assert value["data"]["rows"][1]["values"] == [3.0, 4.0, 5.0]


def test_clicked_op_shows_kernel_and_last_run_time(fresh_names):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data("x", [3], dtype="float32")
        fluid.layers.fc(x, 2)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    exe.trace = []
    exe.run(main, feed={"x": np.ones((2, 3), "float32")}, scope=scope)
    view = ProgramView(main, scope=scope, trace=exe.trace)
    mul = next(op["id"] for op in view._model["ops"] if op["type"] == "mul")
    view.selected = mul
    details = view._details
    assert details["kind"] == "op" and details["device"] == "cpu"
    assert "mul" in details["kernel"] and details["last_run_ms"] >= 0
    view.selected = "v:0:fc_0.w_0"  # a parameter: its value from the given scope
    assert view._details["value"]["shape"] == [3, 2]


def test_unknown_selection_is_reported_not_raised(fresh_names):
    program, _ = scale_chain(1)
    view = ProgramView(program)
    view.selected = "op:999999"
    assert "no op or variable" in view._details["error"]


def test_clicks_and_searches_from_the_front_end_set_the_traits(fresh_names):
    program, _ = scale_chain(2)
    view = ProgramView(program)
    op = view._model["ops"][1]["id"]
    view._handle_custom_msg({"type": "select", "id": op}, [])
    assert view.selected == op and view._details["kind"] == "op"
    view._handle_custom_msg({"type": "search", "text": "scale"}, [])
    assert view.search == "scale"
    view._handle_custom_msg({"type": "select", "id": ""}, [])
    assert view.selected == "" and view._details == {}


def test_view_made_before_the_first_live_cell_follows_the_session_after_it(shell):
    program = fluid.Program()
    view = ProgramView(program)
    assert view.scope is None
    session = fluid.enable_live("w_later", program=program)
    fluid.disable_live()
    assert view.program is session.program and view.scope is session.scope


def test_a_view_that_fails_to_refresh_warns_and_the_others_still_refresh(fresh_names, capture,
                                                                          monkeypatch):
    program, startup = scale_chain(1)
    broken, fine = ProgramView(program, title="broken"), ProgramView(program)
    sent = capture(fine)

    def fail():
        raise RuntimeError("front end gone")
    monkeypatch.setattr(broken, "refresh", fail)
    scale_chain(1, program, startup)
    with pytest.warns(RuntimeWarning, match="'broken' could not refresh: RuntimeError"):
        assert refresh_views(program) == [fine]
    assert len(sent.custom()) == 1


def test_a_live_with_block_refreshes_open_views_by_a_delta(fresh_names, capture):
    with fluid.live("w_block") as session:
        x = fluid.layers.data(name="x", shape=[2], dtype="float32",
                              value=np.ones((1, 2), "float32"))
    view = ProgramView(session.program)
    sent = capture(view)
    with fluid.live("w_block"):
        fluid.layers.scale(x, scale=2.0)
    [message] = sent.custom()
    assert message["type"] == "delta"
    assert [op["type"] for op in message["delta"]["add"]["ops"]] == ["scale"]
