"""DistributedView shows a started job live: one row per process (node, state, steps, last
loss, bytes per peer, restarts), followed by a kernel thread until the job ends or the view
closes, with or without the job's programs, and a plain table where widgets do not render."""
import io
import threading
import time

import pytest

import fluid_nb as fluid
from fluid_nb.distributed import launcher
from fluid_nb.distributed.job import Job, ProcessStatus
from fluid_nb.errors import InvalidArgument, InvalidType
from fluid_nb.viz.distributed_model import job_model
from fluid_nb.widgets import DistributedView

from tests.distributed.processes import REPO

FIT_A_LINE = REPO / "examples" / "distributed" / "fit_a_line.py"
SERVER, TRAINER = "127.0.0.1:6170", "127.0.0.1:6171"


def _statuses(steps, state="running", loss=0.5):
    return [ProcessStatus("pserver", 0, "127.0.0.1", SERVER, state, steps=steps,
                          bytes_sent={TRAINER: 10 * steps}, bytes_received={TRAINER: 20 * steps}),
            ProcessStatus("trainer", 0, "127.0.0.1", TRAINER, state, steps=steps,
                          last_loss=loss, bytes_sent={SERVER: 20 * steps},
                          bytes_received={SERVER: 10 * steps}, restarts=1)]


class ScriptedJob(Job):
    """A job whose status() walks through given snapshots (the last one repeats)."""

    def __init__(self, snapshots):
        self.snapshots, self.calls = list(snapshots), 0
        self.processes = self.snapshots[0]

    def status(self):
        self.processes = self.snapshots[min(self.calls, len(self.snapshots) - 1)]
        self.calls += 1
        return self.processes


def _wait_until(predicate, seconds=10.0):
    end = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)


def _pollers():
    return [t for t in threading.enumerate() if t.name == "fluid_nb-job-view"]


def test_the_job_model_has_a_row_per_process_with_its_progress():
    model = job_model(_statuses(3))
    trainer = model["processes"][1]
    assert [row["label"] for row in model["processes"]] == ["pserver.0", "trainer.0"]
    assert trainer["steps"] == 3 and trainer["last_loss"] == 0.5 and trainer["restarts"] == 1
    assert trainer["bytes_sent"] == {SERVER: 60} and trainer["bytes_received"] == {SERVER: 30}
    assert model["servers"] == [SERVER]
    assert model["stats"] == {"processes": 2, "running": 2, "steps": 3, "bytes": 90}
    assert not model["done"] and job_model(_statuses(3, "finished"))["done"]
    # a diverged loss stays plain JSON
    assert job_model(_statuses(1, loss=float("nan")))["processes"][1]["last_loss"] == "nan"


def test_a_job_alone_is_the_panel_and_follows_the_job_until_it_ends():
    job = ScriptedJob([_statuses(0), _statuses(2), _statuses(5), _statuses(7, "finished")])
    seen = []
    view = DistributedView.of_job(job, interval=0.01)
    view.observe(lambda change: seen.append(change["new"]["stats"]["steps"]), "_job")
    assert view._kind == "job" and view.model["lanes"] == []
    _wait_until(lambda: not view.following)
    assert view.job_model["done"] and view.job_model["processes"][1]["steps"] == 7
    assert seen == sorted(seen) and seen[-1] == 7
    calls = job.calls
    time.sleep(0.05)
    assert job.calls == calls  # nothing polls a job that has ended
    assert not _pollers()


def test_closing_the_view_stops_following():
    job = ScriptedJob([_statuses(1)])  # runs for ever
    view = DistributedView.of_job(job, interval=0.01)
    _wait_until(lambda: job.calls > 3)
    assert view.following
    view.close()
    assert not view.following and not _pollers()
    calls = job.calls
    time.sleep(0.05)
    assert job.calls == calls


def test_attaching_another_job_replaces_the_first():
    first, second = ScriptedJob([_statuses(1)]), ScriptedJob([_statuses(4)])
    view = DistributedView.of_job(first, interval=0.01)
    view.attach(second, interval=0.01)
    assert len(_pollers()) == 1
    assert view.refresh_job()["stats"]["steps"] == 4
    view.detach()
    assert not _pollers()
    assert view.job_model["stats"]["steps"] == 4  # the last rows stay shown


def test_a_job_shows_above_its_programs(fresh_names):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[13], dtype="float32")
        y = fluid.layers.data(name="y", shape=[1], dtype="float32")
        cost = fluid.layers.square_error_cost(input=fluid.layers.fc(input=x, size=1), label=y)
        fluid.optimizer.SGD(learning_rate=0.01).minimize(fluid.layers.mean(cost))
    t = fluid.DistributeTranspiler()
    t.transpile(0, program=main, startup_program=startup, pservers=SERVER, trainers=1)
    view = DistributedView.of_transpiler(t).attach(ScriptedJob([_statuses(2, "finished")]))
    assert view._kind == "program" and len(view.model["lanes"]) == 2
    assert not view.following and view.job_model["done"]
    bundle = view._repr_mimebundle_()[0]
    html = bundle["text/html"]
    assert html.index("data-process='trainer.0'") < html.index("<pre")  # rows, then listings
    assert "trainer.0" in bundle["text/plain"] and "steps 2" in bundle["text/plain"]


def test_the_plain_fallback_is_the_table_of_processes():
    view = DistributedView.of_job(ScriptedJob([_statuses(3, "finished")]))
    html = view._repr_html_()
    assert "<tr data-process='pserver.0'>" in html and "<tr data-process='trainer.0'>" in html
    assert f"{SERVER}: 60 B" in html and "finished" in html
    bundle = view._repr_mimebundle_()[0]
    assert bundle["text/html"] == html and "application/vnd.fluid-nb.program+json" not in bundle
    assert "2 processes, 0 running, 3 trainer steps (done)" in repr(view)


def test_attach_wants_a_job_and_a_positive_interval():
    view = DistributedView()
    with pytest.raises(InvalidType, match="job"):
        view.attach(object())
    with pytest.raises(InvalidArgument, match="interval"):
        view.attach(ScriptedJob([_statuses(1)]), interval=0)
    with pytest.raises(InvalidArgument, match="attached job"):
        view.refresh_job()
    assert view._repr_html_().startswith("<i>")


def test_a_status_that_fails_ends_the_following_and_says_why():
    class Failing(ScriptedJob):
        def status(self):
            if self.calls >= 2:
                raise OSError("the cluster went away")
            return super().status()
    view = DistributedView.of_job(Failing([_statuses(1)]), interval=0.01)
    _wait_until(lambda: not view.following)
    assert "the cluster went away" in view.job_model["error"]
    assert "no longer followed: OSError: the cluster went away" in view._repr_html_()


def test_the_rows_of_a_real_local_job_update_as_it_trains():
    processes, _ = launcher.plan(2, 2)
    steps = 200  # a few hundred milliseconds of rounds at the least: polls land between
    job = launcher.LocalJob(processes, str(FIT_A_LINE), ["--steps", str(steps)],
                            out=io.StringIO())
    try:
        view = DistributedView.of_job(job, interval=0.05)
        seen = []
        view.observe(lambda change: seen.append(
            [row["steps"] for row in change["new"]["processes"]]), "_job")
        assert job.wait(timeout=180) == [0, 0]
        _wait_until(lambda: not view.following, 30)
    finally:
        job.stop()
    model = view.job_model
    assert [row["label"] for row in model["processes"]] == \
        ["pserver.0", "pserver.1", "trainer.0", "trainer.1"]
    assert all(row["state"] == "finished" and row["exit_code"] == 0
               for row in model["processes"])
    servers = model["servers"]
    for row in model["processes"]:
        assert row["steps"] == steps  # every trainer step, and every server round
        peers = servers if row["role"] == "trainer" else \
            [p["endpoint"] for p in model["processes"] if p["role"] == "trainer"]
        assert sorted(row["bytes_sent"]) == sorted(peers)
        assert all(row["bytes_sent"][p] > 0 and row["bytes_received"][p] > 0 for p in peers)
    assert all(row["last_loss"] is not None for row in model["processes"][2:])
    # the view saw the steps grow: never back, and through states between none and all
    trainer_steps = [s[2:] for s in seen]
    assert all(a <= b for earlier, later in zip(trainer_steps, trainer_steps[1:])
               for a, b in zip(earlier, later))
    assert any(0 < sum(s) < 2 * steps for s in trainer_steps), trainer_steps
    assert not _pollers()
