"""A job's processes report their progress into their status files: a trainer its steps,
its last loss and its bytes to and from each server; a server its rounds and its bytes per
trainer. The report is replaced whole, and reading a file that is not a whole report gives
None."""
import json
import os
import re
import subprocess
import sys

import numpy as np

import fluid_nb as fluid
from fluid_nb.distributed import launcher, status
from fluid_nb.distributed.job import STATUS_FILE_VARIABLE
from fluid_nb.exec import executor

from .processes import REPO, Job

FIT_A_LINE = REPO / "examples" / "distributed" / "fit_a_line.py"
ENV = {"FLAGS_rpc_deadline": "60000", "FLAGS_rpc_round_deadline": "30000"}
STEPS = 6


def _clean_environment():
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("PADDLE_", "TRAINING_")) and k != STATUS_FILE_VARIABLE}


def test_a_trainer_and_its_servers_report_steps_loss_and_bytes(tmp_path, monkeypatch):
    for name in list(os.environ):
        if name.startswith(("PADDLE_", "TRAINING_")) or name == STATUS_FILE_VARIABLE:
            monkeypatch.delenv(name)
    processes, _ = launcher.plan(2, 1)
    files = {p.label: tmp_path / f"{p.label}.json" for p in processes}
    with Job(tmp_path, ENV) as job:
        for p in processes:
            job.start(p.label, [FIT_A_LINE, "--steps", STEPS],
                      env=dict(p.env, **{STATUS_FILE_VARIABLE: str(files[p.label])}))
        codes = job.wait(120)
        assert set(codes.values()) == {0}, {k: job.output(k) for k in codes}
        printed = [float(v) for v in re.findall(r"step \d+ loss (\S+)", job.output("trainer.0"))]
    assert len(printed) == STEPS
    servers = [p.endpoint for p in processes if p.role == "PSERVER"]
    trainer = status.read_status(files["trainer.0"])
    # the runs of the startup and of the held-out evaluation are not steps
    assert trainer["steps"] == STEPS
    assert abs(trainer["last_loss"] - printed[-1]) <= 1e-6 * max(1.0, abs(printed[-1]))
    assert sorted(trainer["bytes_sent"]) == sorted(trainer["bytes_received"]) == sorted(servers)
    assert all(trainer["bytes_sent"][ep] > 0 and trainer["bytes_received"][ep] > 0
               for ep in servers)
    trainer_endpoint = processes[-1].endpoint
    for p in processes[:2]:
        server = status.read_status(files[p.label])
        assert server["steps"] == STEPS  # one sync round per trainer step
        assert server["last_loss"] is None
        # what the trainer sent one server is what that server received from it
        assert server["bytes_received"] == {trainer_endpoint: trainer["bytes_sent"][p.endpoint]}
        assert server["bytes_sent"] == {trainer_endpoint: trainer["bytes_received"][p.endpoint]}
    assert not list(tmp_path.glob("*.tmp"))  # every write was replaced into place


def _program_run(reporter):
    """A plain program (no send op) run three times with ``reporter`` watching."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[3], dtype="float32")
        loss = fluid.layers.mean(fluid.layers.fc(input=x, size=1))
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    before, executor.run_reporter = executor.run_reporter, reporter
    try:
        exe.run(startup, scope=scope)
        for _ in range(3):
            exe.run(main, feed={"x": np.ones((2, 3), "float32")}, fetch_list=[loss],
                    scope=scope)
    finally:
        executor.run_reporter = before


def test_runs_of_programs_without_a_send_op_are_not_steps(tmp_path):
    reporter = status.Reporter(tmp_path / "status.json")
    _program_run(reporter)
    assert reporter.snapshot()["steps"] == 0 and reporter.snapshot()["last_loss"] is None


def test_a_report_is_written_whole_and_read_back(tmp_path):
    path = tmp_path / "status.json"
    reporter = status.Reporter(path, ["127.0.0.1:7001"])
    reporter.exchanged("127.0.0.1:6170", 100, 40)
    reporter.served(0, 30, 10)  # trainer 0, named by its endpoint
    reporter.served(3, 5, 1)    # a trainer the reporter has no endpoint for
    reporter.updated()
    reporter.write()
    report = status.read_status(path)
    assert report["steps"] == 1
    assert report["bytes_sent"] == {"127.0.0.1:6170": 100, "127.0.0.1:7001": 10,
                                    "trainer 3": 1}
    assert report["bytes_received"] == {"127.0.0.1:6170": 40, "127.0.0.1:7001": 30,
                                        "trainer 3": 5}
    assert set(report) == set(status.FIELDS)
    assert [p.name for p in tmp_path.iterdir()] == ["status.json"]


def test_writes_come_at_most_every_interval(tmp_path):
    path = tmp_path / "status.json"
    reporter = status.Reporter(path)
    reporter.updated()  # the first event writes at once
    assert status.read_status(path)["steps"] == 1
    for _ in range(50):  # within the interval: counted, not written
        reporter.updated()
    assert status.read_status(path)["steps"] == 1
    assert reporter.snapshot()["steps"] == 51


def test_a_partial_or_foreign_file_reads_as_no_report(tmp_path):
    whole = {"steps": 3, "last_loss": 0.5, "bytes_sent": {"a:1": 2}, "bytes_received": {},
             "updated": 1.0}
    path = tmp_path / "status.json"
    assert status.read_status(path) is None  # not written yet
    assert status.read_status(tmp_path) is None  # a folder
    text = json.dumps(whole)
    for content in [text[:len(text) // 2], "", "[1, 2]", "null", "\x00\xff garbage",
                    json.dumps({**whole, "steps": "3"}), json.dumps({**whole, "steps": -1}),
                    json.dumps({**whole, "last_loss": "low"}),
                    json.dumps({**whole, "bytes_sent": {"a:1": "many"}}),
                    json.dumps({k: v for k, v in whole.items() if k != "updated"})]:
        path.write_bytes(content.encode("latin-1"))
        assert status.read_status(path) is None, content
    path.write_text(text)
    assert status.read_status(path) == whole


def test_without_a_status_file_nothing_is_set_up(tmp_path):
    code = ("import fluid_nb.distributed, fluid_nb.exec.executor as e, fluid_nb.distributed.status"
            " as s; print(s.reporter is None and e.run_reporter is None)")
    done = subprocess.run([sys.executable, "-c", code], env=_clean_environment(),
                          capture_output=True, text=True, timeout=60, cwd=str(REPO))
    assert done.stdout.strip() == "True", done.stderr
    code = ("import fluid_nb.distributed.status as s, fluid_nb.exec.executor as e; "
            "print(e.run_reporter is s.reporter is not None)")
    env = dict(_clean_environment(), **{STATUS_FILE_VARIABLE: str(tmp_path / "s.json")})
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=60, cwd=str(REPO))
    assert done.stdout.strip() == "True", done.stderr
    # written at exit, though nothing was counted
    assert status.read_status(tmp_path / "s.json")["steps"] == 0
