"""A parameter-server job's programs side by side in a real JupyterLab: DistributedView
draws trainer 0 and both servers as lanes, and the RPC exchanges (gradients sent, parameters
received, barriers) as edges from the trainer's lane to the servers'."""
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


def test_the_trainer_and_servers_show_side_by_side_with_their_exchanges(page, lab):
    open_notebook(page, write_notebook(lab, "job.ipynb", [JOB, "view.exchanges()"]))
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
