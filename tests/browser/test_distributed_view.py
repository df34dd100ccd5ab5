"""A parameter-server job's programs side by side in a real JupyterLab: DistributedView
draws trainer 0 and both servers as lanes, and the RPC exchanges (gradients sent, parameters
received, barriers) as edges from the trainer's lane to the servers'; and a running job's
processes as rows that move while it trains."""
from tests.distributed.processes import REPO

from .conftest import SLOW, screenshot
from .notebook_driver import cell, open_notebook, run_cell, write_notebook

JOB = """import fluid_nb as fluid
from fluid_nb.widgets import DistributedView

main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    x = fluid.layers.data(name='x', shape=[13], dtype='float32')
    y = fluid.layers.data(name='y', shape=[1], dtype='float32')
    cost = fluid.layers.square_error_cost(input=fluid.layers.fc(input=x, size=1), label=y)
    fluid.optimizer.SGD(learning_rate=0.01).minimize(fluid.layers.mean(cost))
t = fluid.DistributeTranspiler()
t.transpile(0, program=main, startup_program=startup,
            pservers='127.0.0.1:6170,127.0.0.1:6171', trainers=2)
view = DistributedView.of_transpiler(t)
view"""

GRAPH = ".fluid-nb-program-widget .fluid-nb-program"

# a job that has ended, attached to the view above: its rows join the drawn programs
ATTACH = """from fluid_nb.distributed.job import Job, ProcessStatus

class Ended(Job):
    processes = [ProcessStatus('trainer', 0, '127.0.0.1', '127.0.0.1:6172', 'finished',
                               exit_code=0, steps=20, last_loss=0.25)]
    def status(self):
        return self.processes

view.attach(Ended()).following"""


def test_the_trainer_and_servers_show_side_by_side_with_their_exchanges(page, lab):
    open_notebook(page, write_notebook(lab, "job.ipynb", [JOB, "view.exchanges()", ATTACH]))
    run_cell(page, 0)
    graph = cell(page, 0).locator(f"{GRAPH}[data-nodes]")
    graph.wait_for(timeout=SLOW)
    nodes = cell(page, 0).locator(f"{GRAPH} svg g.node")
    assert nodes.count() == int(graph.get_attribute("data-nodes")) > 10
    texts = " ".join(nodes.all_text_contents())
    for op_type in ("send", "send_barrier", "recv", "fetch_barrier", "listen_and_serv"):
        assert op_type in texts, op_type
    lanes = cell(page, 0).locator(f"{GRAPH} svg g.cluster")
    lane_text = " ".join(lanes.all_text_contents())
    assert "trainer 0" in lane_text and "127.0.0.1:6170" in lane_text \
        and "127.0.0.1:6171" in lane_text, lane_text
    run_cell(page, 1)
    exchanges = cell(page, 1).locator(".jp-OutputArea-output").inner_text()
    assert "'send'" in exchanges and "'recv'" in exchanges
    # every exchange is drawn: an edge between a trainer op and a server's listen_and_serv
    drawn = page.evaluate(
        "selector => [...document.querySelectorAll(selector)].map(e => e.textContent)",
        f"{GRAPH} svg g.edge title")
    assert len(drawn) > 0
    graph.wait_for(timeout=SLOW)
    screenshot(cell(page, 0), "distributed_view")
    run_cell(page, 2)
    row = cell(page, 0).locator(".fluid-nb-program-widget .fluid-nb-job-host "
                                "tr[data-process='trainer.0']")
    row.wait_for(timeout=SLOW)
    assert row.locator("[data-field=steps]").inner_text() == "20"
    assert row.locator("[data-field=state]").inner_text() == "finished (0)"
    assert cell(page, 0).locator(f"{GRAPH} svg g.node").count() == int(
        graph.get_attribute("data-nodes"))  # the graph stays drawn below the rows


LIVE_JOB = """import io
from fluid_nb.distributed import launcher
from fluid_nb.widgets import DistributedView

# a long run, stopped by the last cell once the rows have been seen to move
job = launcher.LocalJob(launcher.plan(1, 2)[0], {script!r}, ["--steps", "5000"],
                        out=io.StringIO())
view = DistributedView.of_job(job, interval=0.2)
view"""

STOP = """import time
job.stop()
for _ in range(100):  # the view's thread sees the end at its next look
    if not view.following:
        break
    time.sleep(0.1)
print("states", sorted({p.state for p in job.status()}), "following", view.following)"""

PANEL = ".fluid-nb-job-host .fluid-nb-job"


def test_a_running_jobs_rows_appear_and_its_steps_grow(page, lab):
    script = str(REPO / "examples" / "distributed" / "fit_a_line.py")
    open_notebook(page, write_notebook(lab, "live_job.ipynb",
                                       [LIVE_JOB.format(script=script), STOP]))
    try:
        run_cell(page, 0)
        rows = cell(page, 0).locator(f"{PANEL} tbody tr")
        cell(page, 0).locator(f"{PANEL} tr[data-process='trainer.1']").wait_for(timeout=SLOW)
        assert [rows.nth(k).get_attribute("data-process") for k in range(rows.count())] == \
            ["pserver.0", "trainer.0", "trainer.1"]
        steps = f"{PANEL} tr[data-process='trainer.0'] [data-field=steps]"
        # the trainer's steps number, as the page shows it, grows while the job trains
        page.wait_for_function("s => Number(document.querySelector(s).textContent) > 0",
                               arg=steps, timeout=SLOW)
        first = int(cell(page, 0).locator(steps).inner_text())
        page.wait_for_function("([s, n]) => Number(document.querySelector(s).textContent) > n",
                               arg=[steps, first], timeout=SLOW)
        assert cell(page, 0).locator(f"{PANEL} tr[data-process='trainer.0'] "
                                     "[data-field=loss]").inner_text() != ""
        sent = cell(page, 0).locator(f"{PANEL} tr[data-process='trainer.0'] "
                                     "[data-field=sent]").inner_text()
        assert "127.0.0.1:" in sent and "B" in sent, sent
        screenshot(cell(page, 0), "distributed_view_live_job")
    finally:
        run_cell(page, 1)
    out = cell(page, 1).locator(".jp-OutputArea-output").inner_text()
    assert "following False" in out and "running" not in out, out
