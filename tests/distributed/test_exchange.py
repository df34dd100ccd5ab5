"""A sync step travels as one call per server (``SendAndGetVariables``), while the programs
keep Fluid's one op per variable: the plan that groups a block's RPC ops, the batch's wire
form, the number of calls a trainer makes per step with 1 and 2 servers, and a server that
takes a batching trainer and a trainer calling per variable in the same rounds."""
import collections
import json
import threading

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb import flags
from fluid_nb.distributed import exchange, messages
from fluid_nb.distributed import send_recv_pb2 as pb
from fluid_nb.distributed.client import RPCClient, client
from fluid_nb.framework import unique_name
from fluid_nb.tensor.tensor import LoDTensor

from .processes import PROGRAMS, Job, free_endpoints
from .runtime_programs import SHAPE, expected_params, grad_name, trainer_programs

FAST = {"FLAGS_rpc_deadline": "20000", "FLAGS_rpc_round_deadline": "10000"}
ENDPOINTS = ["127.0.0.1:6170", "127.0.0.1:6171"]


def _transpiled(sync=True):
    """(trainer program, startup) of an MLP whose wide weights are cut across 2 servers."""
    main, startup = fluid.Program(), fluid.Program()
    with unique_name.guard(), fluid.program_guard(main, startup):
        image = fluid.layers.data(name="image", shape=[64], dtype="float32")
        label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        hidden = fluid.layers.fc(input=image, size=256, act="relu")
        prediction = fluid.layers.fc(input=hidden, size=10, act="softmax")
        loss = fluid.layers.mean(fluid.layers.cross_entropy(input=prediction, label=label))
        fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    config = fluid.DistributeTranspilerConfig()
    config.sync_mode = sync
    t = fluid.DistributeTranspiler(config=config)
    t.transpile(0, program=main, pservers=",".join(ENDPOINTS), trainers=2, sync_mode=sync,
                startup_program=startup)
    return t.get_trainer_program(wait_port=False), startup


def _roles(program):
    return [(op.type, exchange.role_of(op)) for op in program.global_block().ops
            if op.type in ("send", "send_barrier", "recv", "fetch_barrier")]


def test_a_sync_step_groups_every_send_recv_and_barrier_under_the_send_barrier():
    program, _ = _transpiled()
    roles = _roles(program)
    kinds = {kind: [role[0] for t, role in roles if t == kind] for kind, _ in roles}
    assert kinds["send"] and set(kinds["send"]) == {exchange.DEFERRED}
    assert kinds["send_barrier"] == [exchange.LEADING]
    assert kinds["recv"] and set(kinds["recv"]) == {exchange.TAKEN}
    assert kinds["fetch_barrier"] == [exchange.TAKEN]
    group, = {role[1] for _, role in roles}
    assert group.endpoints == ENDPOINTS and group.fenced == set(ENDPOINTS)
    # each server's call gets what the recvs ask it for, in the recvs' order
    asked = [source for _, sources in group.recvs for source in sources]
    for endpoint in ENDPOINTS:
        assert group.gets[endpoint] == [name for ep, name in asked if ep == endpoint]
    assert sum(map(len, group.gets.values())) == len(asked) > len(ENDPOINTS)


def test_an_async_step_groups_its_sends_under_the_first_recv_after_them():
    program, startup = _transpiled(sync=False)  # async: no barriers
    roles = _roles(program)
    assert {kind for kind, _ in roles} == {"send", "recv"}
    kinds = [(kind, role[0]) for kind, role in roles]
    first_recv = kinds.index(("recv", exchange.LEADING))
    assert set(kinds[:first_recv]) == {("send", exchange.DEFERRED)}
    assert set(kinds[first_recv + 1:]) == {("recv", exchange.TAKEN)}
    group, = {role[1] for _, role in roles}
    assert not group.barrier and group.fetch is None and set(group.endpoints) == set(ENDPOINTS)
    asked = [source for _, sources in group.recvs for source in sources]
    for endpoint in ENDPOINTS:
        assert group.gets[endpoint] == [name for ep, name in asked if ep == endpoint]
    assert all(role is None for _, role in _roles(startup))  # the startup's recvs


def test_async_sends_no_recv_follows_call_on_their_own():
    program, _ = _transpiled(sync=False)
    block = program.global_block()
    for index in reversed(range(len(block.ops))):
        if block.ops[index].type == "recv":
            block._remove_op(index)
    assert [role for _, role in _roles(program)] == [None] * len(_roles(program))


def test_a_send_to_a_server_its_barrier_does_not_name_is_not_deferred():
    program, _ = _transpiled()
    block = program.global_block()
    barrier = next(op for op in block.ops if op.type == "send_barrier")
    barrier._set_attr("endpoints", ENDPOINTS[:1])  # (the program changes: a new plan)
    for op in block.ops:
        role = exchange.role_of(op)
        if op.type == "send":
            deferred = role is not None and role[0] == exchange.DEFERRED
            assert deferred == (set(op.attrs["epmap"]) <= {ENDPOINTS[0]}), op.attrs["epmap"]
        if op.type == "recv" and ENDPOINTS[1] in op.attrs["epmap"]:
            assert role is None  # its server gets no batch: it asks on its own


def test_a_batch_is_written_as_protobuf_writes_it():
    values = [messages.encode(f"g{i}", LoDTensor(np.full(shape, i, "float32")), 300)
              for i, shape in enumerate([[3, 2], [300, 200]])]
    serialized = [value.SerializeToString() for value in values]
    want = pb.VariableBatch(trainer_id=300, variables=values, send_barrier=True,
                            get_varnames=["w0", "w1"], fetch_barrier=True)
    assert messages.batch_request(300, serialized, True, ["w0", "w1"], True) \
        == want.SerializeToString()
    assert messages.batch_request(0, [], False, [], False) == b""
    reply = messages.batch_reply(serialized)
    assert pb.VariableBatch.FromString(reply) == pb.VariableBatch(variables=values)
    got = messages.decode_batch(reply, ["g0", "g1"], "test")
    np.testing.assert_array_equal(got[1].array, np.full([300, 200], 1, "float32"))


def test_a_reply_that_is_not_what_was_asked_is_refused():
    reply = messages.batch_reply([messages.encode("w1", LoDTensor(np.ones(SHAPE, "float32")))
                                  .SerializeToString()])
    with pytest.raises(fluid.errors.InvalidArgument, match=r"reply variables expected "
                       r"\['w0'\]"):
        messages.decode_batch(reply, ["w0"], "SendAndGetVariables from here")
    with pytest.raises(fluid.errors.InvalidArgument, match="a VariableBatch"):
        messages.decode_batch(b"\xff\xff\xff", ["w0"], "SendAndGetVariables from here")


@pytest.fixture
def short_deadline(monkeypatch):
    """This process's calls give up as the servers' processes would (FAST)."""
    monkeypatch.setitem(flags._values, "FLAGS_rpc_deadline", 20000)


def _servers_and_one_trainer(job, endpoints, mode):
    """Start a server per endpoint (``mode``: 0 sync, 1 async) and ready the job's only
    trainer: (its main program, the scope its startup ran in, its executor)."""
    for k in range(len(endpoints)):
        job.start(f"pserver{k}", [PROGRAMS, "pserver", ",".join(endpoints), k, 1, mode])
    main, startup = trainer_programs(endpoints, 0, 1, mode)
    scope, exe = fluid.Scope(), fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    return main, scope, exe


def _step_counting_calls(exe, main, scope, names):
    """A trainer step's fetched values and the calls it made, by method."""
    rpc = client()
    before = collections.Counter(rpc.calls)
    values = exe.run(main, scope=scope, fetch_list=names)
    made = collections.Counter(rpc.calls)
    made.subtract(before)
    return values, +made


@pytest.mark.parametrize("servers", [1, 2])
def test_a_sync_step_is_one_call_per_server(tmp_path, servers, short_deadline):
    endpoints = free_endpoints(servers)
    steps = 3
    with Job(tmp_path, FAST) as job:
        main, scope, exe = _servers_and_one_trainer(job, endpoints, 0)
        rpc = client()
        names = [f"w{k}" for k in range(servers)]
        for _ in range(steps):
            values, made = _step_counting_calls(exe, main, scope, names)
            assert made == {pb.BATCH_METHOD: servers}
        exe.close()
        assert job.wait(timeout=30) == {f"pserver{k}": 0 for k in range(servers)}
        closed = collections.Counter(rpc.calls)
        exe.close()  # the servers it told are done: nobody is told again
        assert rpc.calls == closed
    for got, want in zip(values, expected_params(servers, 1, 0, steps)):
        np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("servers", [1, 2])
def test_an_async_step_is_one_call_per_server(tmp_path, servers, short_deadline):
    """Each server applies the step's gradient as it comes and answers the parameter as the
    gradient left it: after ``n`` steps ``w{k} = 1 - n * 0.1 * (k + 1)``, as per variable."""
    endpoints = free_endpoints(servers)
    steps = 3
    with Job(tmp_path, FAST) as job:
        main, scope, exe = _servers_and_one_trainer(job, endpoints, 1)
        names = [f"w{k}" for k in range(servers)]
        for step in range(steps):
            values, made = _step_counting_calls(exe, main, scope, names)
            assert made == {pb.BATCH_METHOD: servers}
            for got, want in zip(values, expected_params(servers, 1, 1, step + 1)):
                np.testing.assert_allclose(got, want, rtol=1e-6)
        exe.close()
        assert job.wait(timeout=30) == {f"pserver{k}": 0 for k in range(servers)}
        finals = [[json.loads(line[len("final "):]) for line
                   in job.output(f"pserver{k}").splitlines() if line.startswith("final ")]
                  for k in range(servers)]
    for final, want in zip(finals, expected_params(servers, 1, 1, steps)):  # the servers end
        np.testing.assert_allclose(np.reshape(final, SHAPE), want, rtol=1e-6)  # with them


def test_a_sent_gradient_travels_as_it_was_when_its_send_ran(tmp_path, short_deadline):
    """The deferred send leaves its value's array with the barrier, not a copy: an op
    between them that updates the gradient (sgd with the gradient as its parameter, which
    writes in place where it can) must not change what the server gets."""
    endpoint, = free_endpoints(1)
    steps = 2
    with Job(tmp_path, FAST) as job:
        main, scope, exe = _servers_and_one_trainer(job, [endpoint], 0)
        block = main.global_block()
        at = next(i for i, op in enumerate(block.ops) if op.type == "send_barrier")
        grad = block.var(grad_name(0, 0, 1, 0))
        rate = block.create_var(name="zeroing_rate", shape=[1], dtype="float32")
        block._insert_op(at, type="fill_constant", outputs={"Out": [rate]},
                         attrs={"shape": [1], "dtype": int(rate.dtype), "value": 1.0})
        block._insert_op(at + 1, type="sgd", inputs={"Param": [grad], "Grad": [grad],
                                                     "LearningRate": [rate]},
                         outputs={"ParamOut": [grad]})
        for _ in range(steps):
            w, g = exe.run(main, scope=scope, fetch_list=["w0", grad.name])
            np.testing.assert_array_equal(g, np.zeros(SHAPE, "float32"))  # zeroed after
        exe.close()
        assert job.wait(timeout=30) == {"pserver0": 0}
    np.testing.assert_allclose(w, expected_params(1, 1, 0, steps)[0], rtol=1e-6)


def test_a_batching_trainer_and_one_calling_per_variable_share_the_rounds(tmp_path,
                                                                          short_deadline):
    endpoint, = free_endpoints(1)
    steps = 4
    got = {0: [], 1: []}

    def batching():  # trainer 0: one call a step
        rpc = RPCClient(trainer_id=0)
        grad = messages.encode(grad_name(0, 0, 2, 0), LoDTensor(np.full(SHAPE, 1.0, "float32")),
                               0).SerializeToString()
        for _ in range(steps):
            value, = rpc.exchange({endpoint: ([(grad_name(0, 0, 2, 0), grad)], True, ["w0"],
                                              True)})[endpoint]
            got[0].append(value.array)
        assert rpc.calls == {pb.BATCH_METHOD: steps}
        rpc.send_complete()

    def per_variable():  # trainer 1: four rounds of calls a step, as Fluid's own client
        rpc = RPCClient(trainer_id=1)
        for _ in range(steps):
            rpc.send_variable(endpoint, grad_name(0, 1, 2, 0),
                              LoDTensor(np.full(SHAPE, 2.0, "float32")))
            rpc.batch_barrier(endpoint)
            got[1].append(rpc.get_variable(endpoint, "w0").array)
            rpc.fetch_barrier(endpoint)
        rpc.send_complete()

    with Job(tmp_path, FAST) as job:
        job.start("pserver", [PROGRAMS, "pserver", endpoint, 0, 2, 0])
        failures = []

        def run(role):
            try:
                role()
            except Exception as exc:  # noqa: BLE001  (reported by the test's thread)
                failures.append(exc)

        threads = [threading.Thread(target=run, args=(role,)) for role in (batching,
                                                                           per_variable)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not failures, failures
        assert job.wait(timeout=30) == {"pserver": 0}
    for step in range(steps):  # both see each round's parameters: the mean gradient 1.5
        want = expected_params(1, 2, 0, step + 1)[0]
        np.testing.assert_allclose(got[0][step], want, rtol=1e-6)
        np.testing.assert_allclose(got[1][step], want, rtol=1e-6)


def test_a_refused_batch_names_what_it_carried_and_the_server_serves_on(tmp_path,
                                                                      short_deadline):
    endpoint, = free_endpoints(1)
    ones = LoDTensor(np.ones(SHAPE, "float32"))
    good = messages.encode("w0@GRAD", ones).SerializeToString()
    stray = messages.encode("no_such@GRAD", ones).SerializeToString()
    with Job(tmp_path, FAST) as job:
        job.start("pserver", [PROGRAMS, "pserver", endpoint, 0, 1, 0])
        rpc = RPCClient(trainer_id=0)
        with pytest.raises(fluid.errors.NotFound) as refused:
            rpc.exchange({endpoint: ([("w0@GRAD", good), ("no_such@GRAD", stray)], True,
                                     ["w0"], True)})
        assert str(refused.value).startswith(
            f"{pb.BATCH_METHOD} to {endpoint}, variable 'w0@GRAD' (with no_such@GRAD, "
            f"BATCH_BARRIER@RECV, w0, FETCH_BARRIER@RECV): the server refused it: ")
        assert "variable 'no_such@GRAD' expected one the server receives" \
            in str(refused.value)
        value, = rpc.exchange({endpoint: ([("w0@GRAD", good)], True, ["w0"], True)})[endpoint]
        np.testing.assert_allclose(value.array, expected_params(1, 1, 0, 1)[0], rtol=1e-6)
        rpc.send_complete()
        assert job.wait(timeout=30) == {"pserver": 0}
