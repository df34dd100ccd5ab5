"""A parameter server keeps serving through malformed messages. While `fluid-nb launch` runs
fit_a_line with 2 servers and 2 trainers, a raw gRPC client sends each server every class
of malformed request (sizes whose product overflows, bytes that do not match the dims, an
unknown data type or name, a bad LoD, protobuf bytes that do not parse, a huge declared
size ..., step batches with one flaw next to a good variable). Each is answered at once
with an error status saying what was expected; the job goes on and ends with the
parameters of single-process training (sync), or trains (async)."""
import importlib.util
import subprocess
import sys
import threading
import time

import grpc
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.framework import unique_name

from ..trajectories import assert_float32_runs_agree
from .malformed import malformed_requests, send_raw
from .test_sync import EXAMPLES, REDUCTION, _environment, _single_process

SCRIPT = EXAMPLES / "fit_a_line.py"


def _received_variable(endpoints, endpoint, sync):
    """(name, shape) of a variable the server at ``endpoint`` receives, from the same
    transpilation its process makes."""
    sys.path.insert(0, str(EXAMPLES))
    try:
        spec = importlib.util.spec_from_file_location("fit_a_line_example", SCRIPT)
        example = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(example)
    finally:
        sys.path.remove(str(EXAMPLES))
    main, startup = fluid.Program(), fluid.Program()
    with unique_name.guard(), fluid.program_guard(main, startup):
        _, loss = example.network()
        fluid.optimizer.SGD(learning_rate=0.01).minimize(loss)
    config = fluid.DistributeTranspilerConfig()
    config.sync_mode = sync
    t = fluid.DistributeTranspiler(config=config)
    t.transpile(0, program=main, pservers=",".join(endpoints), trainers=2, sync_mode=sync,
                startup_program=startup)
    server = t.get_pserver_program(endpoint)
    serve = next(op for op in server.global_block().ops if op.type == "listen_and_serv")
    names = serve.input("X") or [entry.rpartition(":")[0]
                                 for entry in serve.attrs["grad_to_block_id"]]
    var = server.global_block().var(names[0])
    return var.name, list(var.shape)


class _Output:
    """The launcher's lines, each with the time it arrived."""

    def __init__(self, stream):
        self.lines = []
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream):
        for line in stream:
            self.lines.append((time.monotonic(), line))

    def wait_for(self, text, timeout=60):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            found = [line for _, line in self.lines if text in line]
            if found:
                return found[0]
            time.sleep(0.02)
        raise AssertionError(f"no {text!r} within {timeout} s:\n" + self.text())

    def text(self):
        return "".join(line for _, line in self.lines)


#: how a server that has ended (all its trainers completed) answers, or one that ends
#: while the request is on its way (gRPC cancels what the stopping server still holds)
STOPPED = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.ABORTED, grpc.StatusCode.CANCELLED)


def _requests(endpoints, sync):
    """{endpoint: the malformed requests for its server}, made before the servers serve (a
    40-step job can end within a second of serving: the attack must not spend it building
    requests)."""
    return {ep: malformed_requests(*_received_variable(endpoints, ep, sync), sync=sync)
            for ep in endpoints}


def _attack(requests, job):
    """Send every malformed request to every server until it stops serving or the job
    ends: {endpoint: [(label, expected code, code, details)]} in the order sent; None when
    the job ended before its servers could be reached (a loaded machine: try again)."""
    endpoints = list(requests)
    # "serving" is printed just before the server binds: a connection refused then is
    # tried again within milliseconds, not after gRPC's default 1 s backoff (the job may
    # be over by then)
    retry = [("grpc.initial_reconnect_backoff_ms", 20), ("grpc.max_reconnect_backoff_ms", 200)]
    channels = {ep: grpc.insecure_channel(ep, options=retry) for ep in endpoints}
    answers = {ep: [] for ep in endpoints}
    serving = set(endpoints)
    try:
        for channel in channels.values():  # each server listens (or the job is over)
            ready, end = grpc.channel_ready_future(channel), time.monotonic() + 60
            while not ready.done() and job.poll() is None and time.monotonic() < end:
                time.sleep(0.005)
            if not ready.done():
                ready.cancel()
                if job.poll() is None:
                    raise AssertionError("a server of the running job never listened")
                return None
        while serving and job.poll() is None:
            for ep in sorted(serving):
                for label, method, payload, want in requests[ep]:
                    code, details = send_raw(channels[ep], method, payload)
                    answers[ep].append((label, want, code, details, time.monotonic()))
                    if code in STOPPED:
                        serving.discard(ep)
                        break
    finally:
        for channel in channels.values():
            channel.close()
    return answers


def _refused_until_it_ended(ep, answers):
    """Check that the server at ``ep`` answered each request with its status until it ended
    (then only as an ended server does); the time it had refused every kind once, None
    when it ended before it had been sent each kind."""
    served = [a for a in answers if a[2] not in STOPPED]
    ended = answers[len(served):]
    for label, want, code, details, _ in served:
        assert code == want, (ep, label, code, details)
        assert "expected" in details, (ep, label, details)
    for label, _, code, details, _ in ended:
        assert code in STOPPED, (ep, label, code, details)
        if code == grpc.StatusCode.ABORTED:
            assert "all its trainers completed" in details, details
    seen, labels = set(), {a[0] for a in answers}
    for label, *_, at in served:
        seen.add(label)
        if seen == labels:
            return at
    return None  # (it ended before it had been sent every malformed request once)


def _attacked_job(tmp_path, args, sync):
    """Run the job and attack its servers while it trains: the job's output text, or None
    when the job ended (its trainers done) before the servers had refused every kind of
    malformed request during training, which a loaded machine can make happen; every other
    outcome is checked here."""
    job = subprocess.Popen([sys.executable, "-m", "fluid_nb.cli", "launch", "--pservers", "2",
                            "--trainers", "2", str(SCRIPT), *args, "--save", str(tmp_path)],
                           env=_environment(), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    try:
        out = _Output(job.stdout)
        plan = out.wait_for("[launch] 4 processes")
        endpoints = [part.split()[1] for part in plan.split(": ", 1)[1].split(", ")
                     if part.startswith("pserver")]
        requests = _requests(endpoints, sync)
        out.wait_for("[pserver.0] serving")
        out.wait_for("[pserver.1] serving")
        answers = _attack(requests, job)
        assert job.wait(timeout=120) == 0, out.text()
    finally:
        job.kill()
        job.wait()
    text = out.text()
    assert text.count("all trainers done") == 2, text
    if answers is None:
        return None
    refused = [_refused_until_it_ended(ep, answers[ep]) for ep in endpoints]
    if None in refused:
        return None
    # the servers refused every kind while the trainers were still training
    if not any(t > max(refused) and "] step " in line for t, line in out.lines):
        return None
    return text


@pytest.mark.parametrize("sync", [True, False], ids=["sync", "async"])
def test_malformed_messages_are_refused_while_the_job_trains_on(tmp_path, sync):
    args = ["--optimizer", "sgd", "--steps", "40"] + ([] if sync else ["--async"])
    # (a 40-step job can end within a second of serving: on a loaded machine it may be over
    # before the attack has sent every kind; such a run says nothing and is run again, while
    # a server that answers wrongly or stops fails every run)
    for _ in range(3):
        if _attacked_job(tmp_path, args, sync) is not None:
            break
    else:
        pytest.fail("three jobs ended before their servers had been sent every malformed "
                    "request while training")
    saved = [np.load(tmp_path / f"trainer.{t}.npz") for t in range(2)]
    if not sync:
        for trained in saved:
            before, after = trained["held_out"]
            assert after < 0.5 * before, (before, after)
        return
    _single_process("fit_a_line.py", args, tmp_path, tmp_path / "trainer.0.npz")
    local = np.load(tmp_path / "local.npz")
    for name in (k[len("final/"):] for k in local.files if k.startswith("final/")):
        for trained in saved:
            assert_float32_runs_agree(trained["final/" + name], local["final/" + name], 40,
                                      REDUCTION["fit_a_line.py"], None, name=name)
