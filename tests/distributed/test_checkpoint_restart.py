"""A parameter server that dies comes back: it saves its shard every K rounds (whole or not
at all), the job starts it again on its endpoint (``max_restarts``), it resumes from its
last checkpoint and the trainers, which kept calling it, finish the training. Without
restarts the job fails naming the server. A trainer's ``checkpoint_notify`` makes each
server write its shard where the op says."""
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.cli import main as cli
from fluid_nb.distributed import checkpoint, launcher
from fluid_nb.distributed.client import send_complete
from fluid_nb.distributed.job import JobFailed

from . import runtime_programs
from .processes import PROGRAMS, REPO, Job, free_endpoints

FIT_A_LINE = REPO / "examples" / "distributed" / "fit_a_line.py"
ENV = {"FLAGS_rpc_deadline": "60000", "FLAGS_rpc_round_deadline": "30000",
       "FLAGS_rpc_reconnect_deadline": "60000"}


def _start_fit_a_line(tmp_path, max_restarts, steps=200):
    processes, _ = launcher.plan(2, 2)
    job = launcher.LocalJob(processes, str(FIT_A_LINE),
                            ["--steps", str(steps), "--save", str(tmp_path / "saved")],
                            log_dir=str(tmp_path / "logs"), out=io.StringIO(),
                            extra_env=ENV, max_restarts=max_restarts, checkpoint_every=5)
    return job, processes


def _kill_server_at_step(job, processes, server, step, within=60):
    """SIGKILL server ``server`` once trainer 0 has printed ``step``; when that was."""
    end = time.monotonic() + within
    while not any(line.startswith(f"step {step} ") for line in job.log_tail("trainer", 0, 5)):
        assert time.monotonic() < end and not job.done, job.log_tail("trainer", 0)
        time.sleep(0.01)
    os.kill(processes[server].popen.pid, signal.SIGKILL)
    return time.monotonic()


def test_a_killed_server_resumes_from_its_checkpoint_and_the_job_finishes(tmp_path):
    job, processes = _start_fit_a_line(tmp_path, max_restarts=1)
    try:
        _kill_server_at_step(job, processes, 1, 40)
        assert job.wait(timeout=80) == [0, 0]
        statuses = job.status()
    finally:
        job.stop()
    assert [s.restarts for s in statuses] == [0, 1, 0, 0]
    assert [s.state for s in statuses] == ["finished"] * 4
    log = (tmp_path / "logs" / "serverlog.1").read_text()
    resumed = [line for line in log.splitlines() if "resumed from round" in line]
    assert len(resumed) == 1, log
    k = int(resumed[0].split("resumed from round ")[1].split()[0])
    assert k >= 5 and k % 5 == 0, resumed  # a periodic checkpoint, taken before the kill
    assert "resumed" not in (tmp_path / "logs" / "serverlog.0").read_text()
    # one whole checkpoint per server is left, the last one written
    for server in (0, 1):
        folder, manifest, _ = checkpoint.latest(str(tmp_path / "logs" / f"checkpoint.{server}"))
        assert manifest["round"] >= 195 and not [n for n in os.listdir(os.path.dirname(folder))
                                                  if n != os.path.basename(folder)]
    for t in range(2):
        saved = np.load(tmp_path / "saved" / f"trainer.{t}.npz")
        losses = saved["losses"]
        assert len(losses) == 200 and np.isfinite(losses).all()
        assert losses[-40:].mean() < 0.5 * losses[:40].mean(), losses  # still learning
        before, after = saved["held_out"]
        assert after < 0.5 * before
        for name in saved.files:
            if name.startswith("final/"):
                assert np.isfinite(saved[name]).all(), name


def test_without_restarts_a_killed_server_fails_the_job_naming_it(tmp_path):
    job, processes = _start_fit_a_line(tmp_path, max_restarts=0, steps=2000)
    try:
        killed = _kill_server_at_step(job, processes, 0, 20)
        with pytest.raises(JobFailed, match=r"pserver\.0 on 127\.0\.0\.1 .*status -9") as failed:
            job.wait(timeout=30)
        assert time.monotonic() - killed < 20  # the others stopped, not waited for
    finally:
        job.stop()
    error = failed.value
    assert (error.role, error.index, error.exit_code) == ("pserver", 0, -9)
    assert {s.label: s.state for s in job.status()} == {
        "pserver.0": "failed", "pserver.1": "stopped", "trainer.0": "stopped",
        "trainer.1": "stopped"}
    assert not [p for p in processes if p.popen.poll() is None]


def test_a_trainer_waits_for_a_server_started_again_on_its_endpoint(tmp_path):
    endpoint, = free_endpoints(1)
    steps = 40
    server_env = {"FLUID_NB_CHECKPOINT_DIR": str(tmp_path / "ckpt"),
                  "FLUID_NB_CHECKPOINT_EVERY": "1"}
    with Job(tmp_path, ENV) as job:
        job.start("pserver", [PROGRAMS, "pserver", endpoint, 0, 1, 0], env=server_env)
        job.start("trainer", [PROGRAMS, "trainer", endpoint, 0, 1, 0, steps,
                              "--pause", "0.05"])
        job.wait_for_line("trainer", "step 10", timeout=30)
        job.kill("pserver")
        time.sleep(1.0)  # the trainer calls a dead endpoint meanwhile
        job.start("pserver2", [PROGRAMS, "pserver", endpoint, 0, 1, 0], env=server_env)
        codes = job.wait(timeout=60)
    assert codes == {"pserver": -9, "pserver2": 0, "trainer": 0}, job.output("trainer")
    assert "resumed from round" in job.output("pserver2")
    final = np.array(json.loads(job.output("trainer").split("final ")[1])[0])
    # every round was saved: nothing is lost, and a round optimized but not answered
    # before the kill is taken again with the trainer's retried step
    done = [runtime_programs.expected_params(1, 1, 0, n)[0].ravel() for n in (steps,
                                                                             steps + 1)]
    assert any(np.allclose(final, d, atol=1e-5) for d in done), (final, done)


def test_the_command_line_gives_servers_their_checkpoint_folder_and_rounds(tmp_path, capsys):
    script = tmp_path / "show.py"
    script.write_text("import os\nprint(os.environ.get('FLUID_NB_CHECKPOINT_DIR'), "
                      "os.environ.get('FLUID_NB_CHECKPOINT_EVERY'))\n")
    out = io.StringIO()
    logs = tmp_path / "logs"
    assert cli(["launch", "--pservers", "1", "--trainers", "1", "--max-restarts", "2",
                "--checkpoint-every", "7", "--log-dir", str(logs), str(script)], out=out) == 0
    assert f"[pserver.0] {logs / 'checkpoint.0'} 7" in out.getvalue()
    assert "[trainer.0] None None" in out.getvalue()  # trainers save nothing
    assert cli(["launch", "--pservers", "1", "--trainers", "1", "--max-restarts", "-1",
                str(script)], out=io.StringIO()) == 1
    assert "--max-restarts expected a count >= 0" in capsys.readouterr().err


# --- the checkpoint itself ---------------------------------------------------------------------
def _state_program():
    program = fluid.Program()
    block = program.global_block()
    for name in ("a", "b"):
        block.create_var(name=name, shape=[256, 256], dtype="float32", persistable=True)
    block.create_var(name="not_saved@GRAD", shape=[2], dtype="float32")
    return program


def _scope_at(value):
    scope = fluid.Scope()
    for name in ("a", "b"):
        scope.var(name).get_tensor().set(np.full([256, 256], value, "float32"),
                                         fluid.CPUPlace())
    scope.var("not_saved@GRAD").get_tensor().set(np.ones([2], "float32"), fluid.CPUPlace())
    return scope


def test_a_checkpoint_holds_the_persistable_state_and_its_round(tmp_path):
    program = _state_program()
    folder = checkpoint.save(str(tmp_path), program, _scope_at(3.0), 12)
    assert sorted(os.listdir(folder)) == ["MANIFEST", "STATE"]
    assert json.loads((tmp_path / os.path.basename(folder) / "MANIFEST").read_text())[
        "variables"] == ["a", "b"]  # no gradient
    scope = _scope_at(0.0)
    assert checkpoint.restore(str(tmp_path), program, scope) == 12
    np.testing.assert_array_equal(np.array(scope.find_var("b").get_tensor()),
                                  np.full([256, 256], 3.0, "float32"))
    assert checkpoint.restore(str(tmp_path / "none"), program, scope) is None


def test_a_variable_name_is_data_in_the_manifest_never_a_path(tmp_path):
    program = fluid.Program()
    hostile = "../../outside"
    program.global_block().create_var(name=hostile, shape=[3], dtype="float32",
                                      persistable=True)
    scope = fluid.Scope()
    scope.var(hostile).get_tensor().set(np.arange(3, dtype="float32"), fluid.CPUPlace())
    (tmp_path / "d").mkdir()
    folder = checkpoint.save(str(tmp_path / "d"), program, scope, 1)
    assert sorted(os.listdir(folder)) == ["MANIFEST", "STATE"]
    assert sorted(os.listdir(tmp_path)) == ["d"]  # nothing written beside the directory
    restored = fluid.Scope()
    assert checkpoint.restore(str(tmp_path / "d"), program, restored) == 1
    np.testing.assert_array_equal(np.array(restored.find_var(hostile).get_tensor()),
                                  np.arange(3, dtype="float32"))


def test_a_save_that_fails_leaves_the_previous_checkpoint_whole(tmp_path, monkeypatch):
    program = _state_program()
    checkpoint.save(str(tmp_path), program, _scope_at(1.0), 5)

    def crash(*args):
        raise OSError("disk full")
    monkeypatch.setattr(os, "rename", crash)
    with pytest.raises(OSError, match="disk full"):
        checkpoint.save(str(tmp_path), program, _scope_at(2.0), 10)
    monkeypatch.undo()
    assert os.listdir(tmp_path) == ["round-00000005"]
    # what a kill leaves: a folder being written, and any folder without its whole manifest
    partial = tmp_path / ".partial-x"
    partial.mkdir()
    (partial / "STATE").write_bytes(b"cut")
    for name, manifest in (("round-00000010", None), ("round-00000011", '{"format": "x"}'),
                           ("round-00000012", '{"format": "%s", "round": 12, "variables": '
                                              '["a", "b"]}' % checkpoint._FORMAT)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "STATE").write_bytes(b"cut")
        if manifest:
            (tmp_path / name / "MANIFEST").write_text(manifest)
    scope = _scope_at(0.0)
    assert checkpoint.restore(str(tmp_path), program, scope) == 5
    assert float(np.array(scope.find_var("a").get_tensor())[0, 0]) == 1.0


# a process saving round after round (every variable equal to the round) until killed
SAVER = textwrap.dedent("""\
    import sys
    import numpy as np
    import fluid_nb as fluid
    from fluid_nb.distributed import checkpoint
    program = fluid.Program()
    for name in "abcd":
        program.global_block().create_var(name=name, shape=[512, 512], dtype="float32",
                                          persistable=True)
    scope = fluid.Scope()
    for r in range(1, 100000):
        for name in "abcd":
            scope.var(name).get_tensor().set(np.full([512, 512], r, "float32"),
                                             fluid.CPUPlace())
        checkpoint.save(sys.argv[1], program, scope, r)
        print(r, flush=True)
""")


def test_a_process_killed_while_saving_never_leaves_a_half_checkpoint_to_load(tmp_path):
    script = tmp_path / "saver.py"
    script.write_text(SAVER)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    program = fluid.Program()
    for name in "abcd":
        program.global_block().create_var(name=name, shape=[512, 512], dtype="float32",
                                          persistable=True)
    rng = np.random.default_rng(0)
    for attempt in range(4):
        proc = subprocess.Popen([sys.executable, str(script), str(tmp_path / "ckpt")],
                                env=env, stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout.readline().strip()  # a first checkpoint is whole
            time.sleep(float(rng.uniform(0.0, 0.3)))
            proc.kill()
        finally:
            proc.kill()
            proc.wait()
        scope = fluid.Scope()
        r = checkpoint.restore(str(tmp_path / "ckpt"), program, scope)
        assert r is not None and r >= 1
        for name in "abcd":  # every variable of the round the manifest names
            values = np.array(scope.find_var(name).get_tensor())
            assert (values == r).all(), (attempt, name, r)


def test_checkpoint_notify_has_every_server_save_its_shard(tmp_path):
    endpoint, = free_endpoints(1)
    with Job(tmp_path, ENV) as job:
        job.start("pserver", [PROGRAMS, "pserver", endpoint, 0, 1, 0])
        main, startup = runtime_programs.trainer_programs([endpoint], 0, 1, 0)
        exe = fluid.Executor(fluid.CPUPlace())
        scope = fluid.Scope()
        exe.run(startup, scope=scope)
        for _ in range(3):
            exe.run(main, scope=scope)
        notify = fluid.Program()
        notify.global_block().append_op(
            type="checkpoint_notify", inputs={}, outputs={},
            attrs={"epmap": [endpoint], "dir": str(tmp_path / "notified"),
                   "lookup_table": "", "trainer_id": 0})
        exe.run(notify, scope=scope)
        send_complete()
        assert job.wait(timeout=30) == {"pserver": 0}
    server_main, _ = runtime_programs.pserver_programs([endpoint], 0, 1, 0)
    restored = fluid.Scope()
    assert checkpoint.restore(str(tmp_path / "notified" / "pserver_0"), server_main,
                              restored) == 3
    np.testing.assert_allclose(np.array(restored.find_var("w0").get_tensor()),
                               runtime_programs.expected_params(1, 1, 0, 3)[0])
    np.testing.assert_allclose(np.array(restored.find_var("lr").get_tensor()), [0.1])
