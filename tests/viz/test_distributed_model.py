"""A parameter-server job's programs side by side: one lane per process in one program model,
each send joined to the listen_and_serv of its endpoints, each recv joined back from them."""
import json

import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument
from fluid_nb.viz import MIME_TYPE, assemble_dot, program_model
from fluid_nb.viz.distributed_model import JOB_BLOCK, distributed_model
from fluid_nb.widgets import DistributedView

PSERVERS = "127.0.0.1:6170,127.0.0.1:6171"
ENDPOINTS = PSERVERS.split(",")


def mlp_job(trainer_id=0):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        img = fluid.layers.data(name="img", shape=[784], dtype="float32")
        label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        h = fluid.layers.fc(input=img, size=200, act="relu")
        pred = fluid.layers.fc(input=h, size=10, act="softmax")
        loss = fluid.layers.mean(fluid.layers.cross_entropy(input=pred, label=label))
        fluid.optimizer.SGD(learning_rate=0.01).minimize(loss)
    t = fluid.DistributeTranspiler()
    t.transpile(trainer_id, program=main, pservers=PSERVERS, trainers=2,
                startup_program=startup)
    return t


@pytest.fixture(scope="module")
def job():
    trainers = {i: mlp_job(i).get_trainer_program(wait_port=False) for i in range(2)}
    t = mlp_job(0)
    servers = {ep: t.get_pserver_program(ep) for ep in ENDPOINTS}
    return trainers, servers, distributed_model(trainers, servers)


def _lane_of(model):
    return {op["id"]: op["lane"] for op in model["ops"]}


def test_each_process_is_a_lane_under_the_job_block(job):
    trainers, servers, model = job
    assert model["lanes"] == ["trainer 0", "trainer 1"] + [f"pserver {ep}" for ep in ENDPOINTS]
    roots = [b for b in model["blocks"] if b["parent"] == JOB_BLOCK]
    assert [b["label"] for b in roots] == model["lanes"]
    programs = list(trainers.values()) + list(servers.values())
    assert len(model["blocks"]) == 1 + sum(len(p.blocks) for p in programs)
    # each lane holds its program's ops, in order
    for label, program in zip(model["lanes"], programs):
        assert [op["type"] for op in model["ops"] if op["lane"] == label] == \
            [op["type"] for op in program_model(program)["ops"]]
    ids = [x["id"] for x in model["blocks"] + model["ops"] + model["vars"] + model["edges"]]
    assert len(ids) == len(set(ids))
    elements = {x["id"] for x in model["ops"] + model["vars"]}
    assert all(e["src"] in elements and e["dst"] in elements for e in model["edges"])
    json.dumps(model)  # plain JSON


def test_every_send_goes_to_the_server_of_each_endpoint_and_every_recv_comes_back(job):
    trainers, servers, model = job
    lane = _lane_of(model)
    serve = {lane[op["id"]].split()[-1]: op["id"] for op in model["ops"]
             if op["type"] == "listen_and_serv"}
    rpc = [e for e in model["edges"] if e.get("kind") == "rpc"]
    for tid, program in trainers.items():
        sent = {}
        for op in program.global_block().ops:
            for name, ep in zip(op.input("X"), op.attrs.get("epmap", [])):
                if op.type == "send":
                    sent.setdefault(ep, []).extend([name])
        drawn = {}
        for e in rpc:
            if e["rpc"] == "send" and lane[e["src"]] == f"trainer {tid}":
                assert e["dst"] == serve[lane[e["dst"]].split()[-1]]
                drawn.setdefault(lane[e["dst"]].split()[-1], []).extend(e["vars"])
        assert drawn == sent
        got = {}
        for op in program.global_block().ops:
            if op.type == "recv":
                for name, ep in zip(op.output("Out"), op.attr("epmap")):
                    got.setdefault(ep, []).append(name)
        back = {}
        for e in rpc:
            if e["rpc"] == "recv" and lane[e["dst"]] == f"trainer {tid}":
                assert e["src"] in serve.values()
                back.setdefault(lane[e["src"]].split()[-1], []).extend(e["vars"])
        assert back == got
        for kind in ("send_barrier", "fetch_barrier"):
            assert sorted(lane[e["dst"]] for e in rpc if e["rpc"] == kind
                          and lane[e["src"]] == f"trainer {tid}") == \
                [f"pserver {ep}" for ep in ENDPOINTS]


def test_the_dot_text_has_a_cluster_per_lane_and_the_exchanges(job):
    _, _, model = job
    text = assemble_dot(model)
    for block in model["blocks"]:
        if block["parent"] == JOB_BLOCK:
            assert f'subgraph "cluster_{block["id"]}"' in text
    exchanges = [e for e in model["edges"] if e.get("kind") == "rpc"]
    assert exchanges and all(e["dot"] in text for e in exchanges)
    assert text.count("{") == text.count("}")


def test_an_endpoint_without_its_server_program_is_listed_not_drawn():
    t = mlp_job()
    trainer = t.get_trainer_program(wait_port=False)
    model = distributed_model([trainer], {ENDPOINTS[0]: t.get_pserver_program(ENDPOINTS[0])})
    assert model["missing_endpoints"] == [ENDPOINTS[1]]
    lane = _lane_of(model)
    assert {lane[e["src"]] for e in model["edges"] if e.get("rpc") == "recv"} == \
        {f"pserver {ENDPOINTS[0]}"}


def test_a_view_of_the_transpiler_draws_its_trainer_and_every_server():
    t = mlp_job(1)
    view = DistributedView.of_transpiler(t)
    assert view._kind == "program" and view.model["lanes"] == \
        ["trainer 1"] + [f"pserver {ep}" for ep in ENDPOINTS]
    kinds = {(kind, src, dst) for kind, src, dst, _ in view.exchanges()}
    assert ("send", "trainer 1", f"pserver {ENDPOINTS[0]}") in kinds
    assert ("recv", f"pserver {ENDPOINTS[1]}", "trainer 1") in kinds
    bundle = view._fallback_bundle()
    assert bundle[MIME_TYPE] is view.model
    assert all(label in bundle["text/html"] for label in view.model["lanes"])
    assert "listen_and_serv" in bundle["text/html"]
    assert bundle["text/vnd.graphviz"] == view.dot()


def test_bad_inputs_are_named():
    with pytest.raises(InvalidArgument, match="trainer 0.*a Program"):
        distributed_model(["not a program"], {})
    with pytest.raises(InvalidArgument, match="after transpile"):
        DistributedView.of_transpiler(fluid.DistributeTranspiler())
