"""Faults end in typed errors within their deadlines, and every process ends: a server
killed mid-training, a trainer killed mid-round, an endpoint nobody serves, malformed
messages, an endpoint another server holds."""
import time

import grpc
import numpy as np
import pytest

from fluid_nb import flags
from fluid_nb.distributed import messages
from fluid_nb.distributed import send_recv_pb2 as pb
from fluid_nb.distributed.client import RPCClient
from fluid_nb.errors import InvalidArgument, NotFound, Unavailable
from fluid_nb.tensor.tensor import LoDTensor

from .processes import PROGRAMS, Job, free_endpoints

SHORT = {"FLAGS_rpc_deadline": "8000", "FLAGS_rpc_round_deadline": "2000",
         "FLAGS_rpc_reconnect_deadline": "1000"}


def _server_killed_mid_training(tmp_path, env, wait):
    """A one-server job whose server is killed at step 2: the trainer's exit codes, the
    seconds from the kill to the job's end, the trainer's output and the endpoint."""
    endpoint, = free_endpoints(1)
    with Job(tmp_path, env) as job:
        job.start("pserver", [PROGRAMS, "pserver", endpoint, 0, 1, 0])
        job.start("trainer", [PROGRAMS, "trainer", endpoint, 0, 1, 0, 10000,
                              "--pause", "0.02"])
        job.wait_for_line("trainer", "step 2", timeout=30)
        job.kill("pserver")
        killed = time.monotonic()
        codes = job.wait(timeout=wait)
        spent = time.monotonic() - killed
    return codes, spent, job.output("trainer"), endpoint


def test_a_server_killed_mid_training_stops_its_trainer_with_unavailable(tmp_path):
    codes, spent, out, endpoint = _server_killed_mid_training(tmp_path, SHORT, wait=10)
    assert spent < 8  # within the call's deadline
    assert codes["trainer"] != 0
    assert "fluid_nb.errors.Unavailable" in out and endpoint in out, out
    assert "variable 'w0" in out or "variable 'BATCH_BARRIER@RECV'" in out \
        or "variable 'FETCH_BARRIER@RECV'" in out, out


def test_a_server_that_stays_away_fails_its_trainer_after_the_reconnect_deadline(tmp_path):
    codes, spent, out, endpoint = _server_killed_mid_training(
        tmp_path, dict(SHORT, FLAGS_rpc_deadline="60000", FLAGS_rpc_round_deadline="30000",
                       FLAGS_rpc_reconnect_deadline="2000"), wait=30)
    assert codes["trainer"] != 0
    assert 2.0 <= spent < 20, spent  # it kept calling for the reconnect deadline, then gave up
    assert "fluid_nb.errors.Unavailable" in out and endpoint in out, out


def test_a_trainer_killed_mid_round_is_named_by_the_server(tmp_path):
    endpoint, = free_endpoints(1)
    with Job(tmp_path, SHORT) as job:
        job.start("pserver", [PROGRAMS, "pserver", endpoint, 0, 2, 0])
        job.start("trainer0", [PROGRAMS, "trainer", endpoint, 0, 2, 0, 10000])
        job.start("trainer1", [PROGRAMS, "trainer", endpoint, 1, 2, 0, 10000,
                               "--hang-after", "2"])
        job.wait_for_line("trainer1", "hanging", timeout=30)  # its gradients sent, no barrier
        job.kill("trainer1")
        codes = job.wait(timeout=12)
    server, trainer = job.output("pserver"), job.output("trainer0")
    assert codes["pserver"] != 0 and codes["trainer0"] != 0
    assert "fluid_nb.errors.ExecutionTimeout" in server, server
    assert "send barriers (BATCH_BARRIER@RECV) of trainers [1]" in server, server
    assert f"listen_and_serv at {endpoint}" in server
    # the trainer still waiting is told why, naming the server and what it asked for
    assert "fluid_nb.errors.Unavailable" in trainer and endpoint in trainer, trainer
    assert "trainers [1]" in trainer and "variable '" in trainer, trainer


def test_an_endpoint_nobody_serves_is_unavailable_within_the_deadline(tmp_path):
    endpoint, = free_endpoints(1)
    with Job(tmp_path, {"FLAGS_rpc_deadline": "1500"}) as job:
        started = time.monotonic()
        job.start("trainer", [PROGRAMS, "trainer", endpoint, 0, 1, 0, 3])
        codes = job.wait(timeout=20)
        spent = time.monotonic() - started
    out = job.output("trainer")
    assert codes["trainer"] != 0
    assert "fluid_nb.errors.Unavailable" in out, out
    assert f"GetVariable to {endpoint}, variable 'w0'" in out, out
    assert "tries in 1." in out  # it retried for the deadline's 1.5 s, then gave up
    assert spent < 15


@pytest.fixture
def one_server(tmp_path, monkeypatch):
    """A sync server for one trainer, and a client with short deadlines."""
    endpoint, = free_endpoints(1)
    monkeypatch.setitem(flags._values, "FLAGS_rpc_deadline", 8000)
    with Job(tmp_path, {"FLAGS_rpc_round_deadline": "20000"}) as job:
        job.start("pserver", [PROGRAMS, "pserver", endpoint, 0, 1, 0])
        yield job, endpoint, RPCClient()


def test_malformed_messages_are_refused_and_change_nothing(one_server):
    job, endpoint, rpc = one_server
    start = rpc.get_variable(endpoint, "w0")  # waits for the server to listen
    np.testing.assert_array_equal(start.numpy(), np.ones((3, 2), "float32"))

    raw = grpc.insecure_channel(endpoint).unary_unary(f"/{pb.SERVICE}/SendVariable")
    with pytest.raises(grpc.RpcError) as garbage:
        raw(b"\xff\xff\xff", timeout=5)
    assert garbage.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "do not parse" in garbage.value.details()

    short = messages.encode("w0@GRAD", LoDTensor(np.ones((3, 2), "float32")))
    short.serialized = short.serialized[:-4]
    with pytest.raises(InvalidArgument) as cut:
        rpc.call(endpoint, "SendVariable", short)
    assert f"SendVariable to {endpoint}, variable 'w0@GRAD'" in str(cut.value)
    assert "serialized bytes expected 24" in str(cut.value)

    with pytest.raises(InvalidArgument) as wrong_type:
        rpc.send_variable(endpoint, "w0@GRAD", LoDTensor(np.ones((3, 2), "float64")))
    assert "data type expected FP32, but received FP64" in str(wrong_type.value)
    with pytest.raises(InvalidArgument) as wrong_dims:
        rpc.send_variable(endpoint, "w0@GRAD", LoDTensor(np.ones((2, 3), "float32")))
    assert "dims expected [3, 2]" in str(wrong_dims.value)
    with pytest.raises(NotFound) as unknown:
        rpc.send_variable(endpoint, "nobody@GRAD", LoDTensor(np.ones((3, 2), "float32")))
    assert "variable 'nobody@GRAD' expected one the server receives (w0@GRAD)" \
        in str(unknown.value)

    rpc.send_complete()  # the trainer is done: the server returns
    assert job.wait(timeout=10) == {"pserver": 0}
    final = job.output("pserver").splitlines()[-1]
    assert final == "final [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]"  # nothing was written
    with pytest.raises(Unavailable) as gone:  # and a server that stopped is named
        rpc.get_variable(endpoint, "w0")
    assert f"GetVariable to {endpoint}, variable 'w0'" in str(gone.value)


def test_a_second_server_on_a_taken_endpoint_is_refused(tmp_path):
    endpoint, = free_endpoints(1)
    # the get below starts a round: with a short round deadline the first server would end
    # (its trainer never comes) before a slowly started second one binds the port
    patient = dict(SHORT, FLAGS_rpc_round_deadline="600000")
    with Job(tmp_path, patient) as job:
        job.start("first", [PROGRAMS, "pserver", endpoint, 0, 1, 0])
        job.wait_for_line("first", "serving", timeout=30)
        RPCClient().get_variable(endpoint, "w0")  # the first one listens
        job.start("second", [PROGRAMS, "pserver", endpoint, 0, 1, 0])
        # a generous deadline: a loaded machine starts a Python process slowly
        assert job.procs["second"].wait(timeout=60) != 0
        assert job.procs["first"].poll() is None  # still serving: the port was taken
    out = job.output("second")
    assert f"fluid_nb.errors.Unavailable: listen_and_serv: endpoint expected an address " \
           f"this machine can listen on, but received {endpoint}" in out, out
