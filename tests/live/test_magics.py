"""%%fluid and %fluid driven through IPython's own shell."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.live import live, live_session

CELL = """%%fluid --program {name}
x = fluid.layers.data(name='x', shape=[3], dtype='float32',
                      value=np.arange(6, dtype='float32').reshape(2, 3))
h = fluid.layers.fc(input=x, size=4, act='relu')
y = fluid.layers.fc(input=h, size=1)
"""


def _state(s):
    block = s.program.global_block()
    return (len(block.ops), set(block.vars), len(s.startup_program.global_block().ops),
            {n: hd.value for n, hd in s.scope.vars.items()})


def test_good_cell_runs_and_reports_what_it_added(shell, capsys):
    result = shell.run_cell(CELL.format(name="m_good") + "y\n")
    assert result.success, result.error_in_exec
    s = live_session("m_good")
    assert [op.type for op in s.program.global_block().ops] == \
        ["mul", "elementwise_add", "relu", "mul", "elementwise_add"]
    report = s.last_report
    assert len(report.ops) == 5 and {"x", "fc_0.w_0"} <= {v.name for v in report.vars}
    text = repr(report)
    assert "mul(X=x[-1, 3]; Y=fc_0.w_0[3, 4]) -> Out=fc_0.tmp_0[-1, 4]" in text
    assert "fc_0.w_0" in report._repr_html_()
    assert result.result is shell.user_ns["y"]
    assert shell.user_ns["y"].numpy().shape == (2, 1)
    assert shell.user_ns["fluid"] is fluid


def test_failing_cell_is_rolled_back(shell):
    assert shell.run_cell(CELL.format(name="m_fail")).success
    s = live_session("m_fail")
    before = _state(s)
    result = shell.run_cell("%%fluid --program m_fail\n"
                            "z = fluid.layers.fc(input=h, size=3)\n"
                            "bad = fluid.layers.elementwise_add(z, h)\n")
    assert not result.success
    message = str(result.error_in_exec)
    assert "line 2" in message and "elementwise_add" in message and "[-1, 3]" in message
    assert _state(s) == before
    ok = shell.run_cell("%%fluid --program m_fail\nz = fluid.layers.fc(input=h, size=3)\n")
    assert ok.success and shell.user_ns["z"].name == "fc_2.tmp_1"


def test_refeed_reruns_only_downstream_ops(shell):
    assert shell.run_cell(CELL.format(name="m_feed")).success
    s = live_session("m_feed")
    before = s.stats["ops_run"]
    result = shell.run_cell("from fluid_nb.live import feed; rerun = feed(x, np.ones((2, 3), 'float32'))")
    assert result.success
    assert s.stats["ops_run"] - before == 5 == len(shell.user_ns["rerun"])
    h, x = shell.user_ns["h"], shell.user_ns["x"]
    w = s.scope.find_var("fc_0.w_0").value.numpy()
    b = s.scope.find_var("fc_0.b_0").value.numpy()
    np.testing.assert_allclose(h.numpy(), np.maximum(x.numpy() @ w + b, 0), rtol=1e-6)


def test_record_only_cell_runs_nothing(shell):
    assert shell.run_cell(CELL.replace("%%fluid --program {name}",
                                       "%%fluid --program m_rec --record-only --quiet")).success
    s = live_session("m_rec")
    assert len(s.program.global_block().ops) == 5 and s.stats["ops_run"] == 0
    assert shell.run_cell("%%fluid --program m_rec --quiet\nq = fluid.layers.scale(y)").success
    assert s.stats["ops_run"] == 6  # the recorded ops ran first


def test_step_flag_applies_updates(shell):
    assert shell.run_cell(CELL.format(name="m_step")).success
    s = live_session("m_step")
    assert shell.run_cell("%%fluid --program m_step --quiet\n"
                          "loss = fluid.layers.mean(y)\n"
                          "fluid.optimizer.SGD(learning_rate=0.5).minimize(loss)\n").success
    b0 = s.scope.find_var("fc_1.b_0").value.numpy().copy()
    assert shell.run_cell("%%fluid --program m_step --step --quiet\npass").success
    # loss = mean of y's two rows, so d loss / d b = 2 * 1/2 = 1 whatever the random
    # weights (a weight's gradient is 0 when every relu unit happens to be off)
    np.testing.assert_allclose(s.scope.find_var("fc_1.b_0").value.numpy(), b0 - 0.5,
                               rtol=1e-6)


def test_line_magic_inspects_and_resets(shell, tmp_path):
    assert shell.run_cell(CELL.format(name="m_line")).success
    shell.run_cell("%%fluid --program m_line --quiet\npass")  # make m_line the session shown
    s = live_session("m_line")
    for command in ("show", "ops", "graph", "scope"):
        assert shell.run_cell(f"%fluid {command}").success
    # the line magic talks to the session that was live last, or 'main'; drive m_line here
    assert shell.run_cell(f"%%fluid --program m_line --quiet\n"
                          f"get_ipython().run_line_magic('fluid', 'save {tmp_path}/m')").success
    assert all((tmp_path / f"m.{ext}").exists() for ext in ("pdmodel", "pdparams", "pdopt"))
    assert shell.run_cell("%%fluid --program m_line --quiet\n"
                          "get_ipython().run_line_magic('fluid', 'reset')").success
    assert not s.program.global_block().ops and not s.scope.vars
    assert not shell.run_cell("%fluid nonsense").success


def _shown_traceback(shell, capsys, code):
    """What IPython prints for a failing cell, and the cell's result."""
    capsys.readouterr()
    result = shell.run_cell(code)
    return result, capsys.readouterr().out


def test_failed_cell_shows_its_line_message_and_rollback_first_and_short(shell, capsys):
    assert shell.run_cell(CELL.format(name="m_short")).success
    result, shown = _shown_traceback(shell, capsys, "%%fluid --program m_short\n"
                                     "z = fluid.layers.fc(input=h, size=3)\n"
                                     "bad = fluid.layers.elementwise_add(z, h)\n")
    assert not result.success
    lines = shown.strip().splitlines()
    assert len(lines) <= 5, shown
    assert lines[0].startswith("InvalidArgument in In [") and \
        lines[0].endswith("line 2: bad = fluid.layers.elementwise_add(z, h)")
    assert "expected broadcastable dims" in lines[1]
    assert "rolled back: removed 2 ops (mul, elementwise_add)" in lines[2]
    assert "2 parameters (fc_2.w_0, fc_2.b_0) and 2 startup ops" in lines[2]
    assert "fluid_nb" not in shown  # no frames of the library before the useful line
    # the whole traceback stays one command away
    capsys.readouterr()
    shell.run_cell("%tb")
    full = capsys.readouterr().out
    assert "Traceback" in full and "broadcast_shape" in full


def test_failed_cell_with_a_plain_python_error_is_short_too(shell, capsys):
    result, shown = _shown_traceback(shell, capsys, "%%fluid --program m_name\n"
                                     "q = fluid.layers.fill_constant([1], 'float32', 1.0)\n"
                                     "r = undefined_name + q\n")
    assert not result.success and isinstance(result.error_in_exec, NameError)
    assert "NameError in In [" in shown and "line 2: r = undefined_name + q" in shown
    assert "removed 1 op (fill_constant) and 1 variable (fill_constant_0.tmp_0)" in shown


def test_graph_draws_the_program_and_dot_gives_its_source(shell):
    from fluid_nb.widgets import ProgramView
    assert shell.run_cell(CELL.format(name="m_graph")).success
    graph = shell.run_cell("%fluid graph").result
    assert isinstance(graph, ProgramView)
    dot = shell.run_cell("%fluid dot").result
    assert repr(dot).startswith("digraph")


def test_summary_shows_the_value_of_a_data_variable_no_op_read(shell):
    assert shell.run_cell("%%fluid --program m_data\n"
                          "y = fluid.layers.data(name='y', shape=[1], dtype='float32',\n"
                          "                      value=np.array([[1.5], [2.5]], 'float32'))\n"
                          ).success
    text = repr(live_session("m_data").last_report)
    assert "var y [-1, 1] float32 = float32 [1.5, 2.5] 2x1" in text


def test_step_says_which_parameters_changed_and_the_loss_before_and_after(shell):
    assert shell.run_cell(CELL.format(name="m_steprep")).success
    assert shell.run_cell("%%fluid --program m_steprep --quiet\n"
                          "loss = fluid.layers.mean(y)\n"
                          "fluid.optimizer.SGD(learning_rate=0.5).minimize(loss)\n").success
    s = live_session("m_steprep")
    b0 = s.scope.find_var("fc_1.b_0").value.numpy().copy()
    loss_before = float(shell.user_ns["loss"].numpy().reshape(-1)[0])
    assert shell.run_cell("%%fluid --program m_steprep --step\npass").success
    report = s.last_step_report
    changed = {name: delta for name, delta, _ in report.changes}
    assert set(changed) == {"fc_0.w_0", "fc_0.b_0", "fc_1.w_0", "fc_1.b_0"}
    # d loss / d fc_1.b_0 = 1 (the mean of y's rows), so the bias moved by lr * 1
    np.testing.assert_allclose(changed["fc_1.b_0"], 0.5, rtol=1e-6)
    np.testing.assert_allclose(s.scope.find_var("fc_1.b_0").value.numpy(), b0 - 0.5, rtol=1e-6)
    assert report.loss_name == shell.user_ns["loss"].name
    assert report.loss_before == pytest.approx(loss_before)
    assert report.loss_after == pytest.approx(float(shell.user_ns["loss"].numpy().reshape(-1)[0]))
    assert report.loss_after < report.loss_before
    text = repr(report)
    assert text.startswith("step: ran 4 update ops, changing 4 parameters")
    assert f"loss {report.loss_name}: " in text and "fc_1.b_0: |update| 0.5" in text


def test_a_step_cell_that_builds_nothing_shows_the_step_alone(shell, capsys):
    assert shell.run_cell(CELL.format(name="m_steponly")).success
    assert shell.run_cell("%%fluid --program m_steponly --quiet\n"
                          "loss = fluid.layers.mean(y)\n"
                          "fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)\n").success
    capsys.readouterr()
    assert shell.run_cell("%%fluid --program m_steponly --step\npass").success
    shown = capsys.readouterr().out
    assert shown.startswith("step: ran 4 update ops"), shown
    assert "+0 ops" not in shown
    # a cell that builds something and steps shows both, what it added first
    assert shell.run_cell("%%fluid --program m_steponly --step\n"
                          "z = fluid.layers.scale(y, scale=2.0)\n").success
    shown = capsys.readouterr().out
    assert shown.startswith("%%fluid: +1 ops") and "step: ran 4 update ops" in shown


def test_a_cell_is_named_by_its_own_prompt_number(shell, capsys):
    """The short error and the ops' source lines say In [n] for the n the cell ran as,
    whichever point of the run IPython advances its counter at."""
    from fluid_nb.viz.program_model import cell_label
    good = shell.run_cell(CELL.format(name="m_number"), store_history=True)
    assert good.success and good.execution_count is not None
    op = live_session("m_number").program.global_block().ops[0]
    assert cell_label(op.source.filename) == f"In [{good.execution_count}]"
    capsys.readouterr()
    bad = shell.run_cell("%%fluid --program m_number\nz = fluid.layers.fc(input=h, size=3)\n"
                         "bad = fluid.layers.elementwise_add(z, h)\n", store_history=True)
    assert not bad.success
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(f"InvalidArgument in In [{bad.execution_count}], line 2: ")


@pytest.mark.parametrize("line", ["%%fluid --bogus\npass", "%%fluid --place tpu\npass",
                                  "%fluid nonsense"])
def test_a_mistyped_magic_line_is_one_short_error(shell, capsys, line):
    capsys.readouterr()
    result = shell.run_cell(line)
    assert not result.success
    captured = capsys.readouterr()
    lines = captured.out.strip().splitlines()
    assert lines[0].startswith("InvalidArgument: %") and "expected" in lines[0], lines
    assert lines[1:] == ["(the full traceback: %tb)"]
    assert captured.err == ""  # no argparse usage text besides it


def test_a_step_without_a_cell_body_is_the_line_magic(shell, capsys):
    """IPython refuses an empty ``%%fluid --step`` cell and points to ``%fluid``: both
    ``%fluid --step`` and ``%fluid step`` take the step and show its report."""
    assert shell.run_cell(CELL.format(name="m_stepline")).success
    assert shell.run_cell("%%fluid --program m_stepline --quiet\n"
                          "loss = fluid.layers.mean(y)\n"
                          "fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)\n").success
    s = live_session("m_stepline")
    b0 = s.scope.find_var("fc_1.b_0").value.numpy().copy()
    result = shell.run_cell("%fluid --program m_stepline --step")
    assert result.success and repr(result.result).startswith("step: ran 4 update ops")
    np.testing.assert_allclose(s.scope.find_var("fc_1.b_0").value.numpy(), b0 - 0.1, rtol=1e-6)
    with live("m_stepline"):
        result = shell.run_cell("%fluid step")
    assert result.success and "<b>%%fluid --step</b> ran 4 update ops" in \
        result.result._repr_html_()
    assert not shell.run_cell("%fluid --program m_stepline").success  # nothing to do


def test_live_step_returns_its_report(shell):
    assert shell.run_cell(CELL.format(name="m_stepfn")).success
    assert shell.run_cell("%%fluid --program m_stepfn --quiet\n"
                          "loss = fluid.layers.mean(y)\n"
                          "fluid.optimizer.SGD(learning_rate=0.5).minimize(loss)\n").success
    report = fluid.live_step(live_session("m_stepfn"))
    assert [op.type for op in report.ops] == ["sgd"] * 4
    assert repr(report).startswith("step: ran 4 update ops, changing 4 parameters")
    assert report.loss_after < report.loss_before


def test_cell_report_tables_never_split_a_word(shell):
    """The report's columns are as wide as their longest word: the style lets a cell wrap
    between words only, and op types (fill_constant) and variable names not at all."""
    assert shell.run_cell(CELL.format(name="m_words") + "loss = fluid.layers.mean(y)\n"
                          "fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)\n").success
    page = live_session("m_words").last_report._repr_html_()
    style = page.split("<style>", 1)[1].split("</style>", 1)[0]
    assert "anywhere" not in style and "break-all" not in style and "break-word" not in style
    assert ".fluid-nb td>b,.fluid-nb td:first-child>code{white-space:nowrap}" in style
    assert "<td><b>fill_constant</b></td>" in page  # an op type: a <b> in its cell
    assert "<tr><td><code>mean_0.tmp_0</code></td>" in page  # a name: its row's first cell
