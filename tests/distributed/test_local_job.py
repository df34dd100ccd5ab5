"""A job started without blocking (``LocalJob``), as a notebook starts one: the call
returns while the processes run; ``status()`` joins what each process reports in its status
file to its state; ``wait`` returns the trainers' statuses, or raises ``JobFailed`` naming
the process that died (the others stopped), or ``ExecutionTimeout`` with the job still
running; ``stop`` leaves nothing running, from any thread."""
import io
import json
import os
import textwrap
import threading
import time

import pytest

from fluid_nb.distributed import launcher
from fluid_nb.distributed.job import JobFailed, ProcessStatus
from fluid_nb.errors import ExecutionTimeout

from .test_launch_stops import _alive

# every role reports a step and a loss (in the status file format), starts a grandchild,
# then waits for the file GO (or for ever); "fail" makes trainer 1 die at once
SCRIPT = textwrap.dedent("""\
    import json, os, subprocess, sys, time
    mode, go = sys.argv[1], sys.argv[2]
    trainer = os.environ.get("PADDLE_TRAINER_ID")
    child = subprocess.Popen(["sleep", "300"])
    print("grandchild", child.pid, flush=True)
    report = {"steps": 3, "last_loss": 0.25 if trainer else None,
              "bytes_sent": {"127.0.0.1:1": 10}, "bytes_received": {}, "updated": time.time()}
    with open(os.environ["FLUID_NB_STATUS_FILE"] + ".tmp", "w") as f:
        json.dump(report, f)
    os.replace(os.environ["FLUID_NB_STATUS_FILE"] + ".tmp", os.environ["FLUID_NB_STATUS_FILE"])
    if mode == "fail" and trainer == "1":
        print("trainer 1 gives up", flush=True)
        sys.exit(5)
    while not os.path.exists(go):
        time.sleep(0.05)
    child.kill()
""")


def _start(tmp_path, mode, pservers=1, trainers=2):
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    processes, _ = launcher.plan(pservers, trainers)
    out = io.StringIO()
    job = launcher.LocalJob(processes, str(script), [mode, str(tmp_path / "GO")], out=out)
    return job, processes, out


def _grandchildren(out):
    return [int(line.rsplit(" ", 1)[1]) for line in out.getvalue().splitlines()
            if "] grandchild " in line]


def _until(condition, seconds=20):
    end = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < end, "the condition did not hold in time"
        time.sleep(0.05)


def test_the_job_runs_while_the_caller_goes_on_and_reports_each_process(tmp_path):
    start = time.monotonic()
    job, processes, out = _start(tmp_path, "ok")
    try:
        assert time.monotonic() - start < 5  # started, not waited for
        assert not job.done
        _until(lambda: all(s.steps == 3 for s in job.status()))
        statuses = job.status()
        assert [s.label for s in statuses] == ["pserver.0", "trainer.0", "trainer.1"]
        assert all(isinstance(s, ProcessStatus) and s.state == "running" and s.node ==
                   "127.0.0.1" and s.exit_code is None for s in statuses)
        assert [s.last_loss for s in statuses] == [None, 0.25, 0.25]
        assert statuses[1].bytes_sent == {"127.0.0.1:1": 10}
        assert statuses[2].endpoint == processes[2].endpoint
        with pytest.raises(ExecutionTimeout, match="LocalJob.wait"):
            job.wait(timeout=0.3)
        assert not job.done  # a wait that timed out leaves the job running
        (tmp_path / "GO").write_text("")
        assert job.wait(timeout=30) == [0, 0]
        assert not os.path.exists(job.folder)  # a job that ended cleans up by itself
        assert [s.state for s in job.status()] == ["finished"] * 3
        assert job.status()[1].steps == 3  # the last reports outlive the job's folder
    finally:
        job.stop()
    assert not os.path.exists(job.folder)
    assert not [p.popen.pid for p in processes if _alive(p.popen.pid)]
    assert "[trainer.1] grandchild" in out.getvalue()


def test_a_trainer_that_dies_fails_the_job_naming_it(tmp_path):
    job, processes, out = _start(tmp_path, "fail")
    try:
        with pytest.raises(JobFailed, match=r"trainer\.1 on 127\.0\.0\.1 .* exited with "
                                            r"status 5") as failed:
            job.wait(timeout=30)
    finally:
        job.stop()
    error = failed.value
    assert (error.role, error.index, error.node, error.exit_code) == ("trainer", 1,
                                                                      "127.0.0.1", 5)
    assert error.log_tail[-1] == "trainer 1 gives up"
    assert job.log_tail("trainer", 1, lines=1) == ["trainer 1 gives up"]
    states = {s.label: s.state for s in job.status()}
    assert states == {"pserver.0": "stopped", "trainer.0": "stopped", "trainer.1": "failed"}
    assert "[launch] trainer.1 exited with status 5; stopping the others" in out.getvalue()
    pids = _grandchildren(out) + [p.popen.pid for p in processes]
    assert not [pid for pid in pids if _alive(pid)]


def test_a_job_started_and_stopped_from_another_thread_leaves_nothing_running(tmp_path):
    made, errors = [], []

    def notebook_cell():  # a kernel's thread: no signal handler may be installed here
        try:
            made.append(_start(tmp_path, "hang"))
        except BaseException as exc:  # noqa: BLE001  (reported by the test's thread)
            errors.append(exc)

    cell = threading.Thread(target=notebook_cell)
    cell.start()
    cell.join(30)
    assert not errors and made
    job, processes, out = made[0]
    _until(lambda: len(_grandchildren(out)) == 3)
    stopper = threading.Thread(target=job.stop)
    stopper.start()
    stopper.join(30)
    job.stop()  # again: nothing left to do
    assert job.done and job.wait(timeout=1) is not None
    assert {s.state for s in job.status()} == {"stopped"}
    pids = _grandchildren(out) + [p.popen.pid for p in processes]
    assert not [pid for pid in pids if _alive(pid)]
    assert json.dumps([s.as_dict() for s in job.status()])  # what a view serializes
