"""`fluid-nb launch` leaves no process behind: each role runs in a process group of its own,
and stopping the job stops whole groups, so what a role started (here a `sleep 300`) ends
with it, when a trainer fails, when a role ignores SIGTERM, and on Ctrl-C, which ends the
launch with one line and status 130."""
import io
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from fluid_nb.cli import main as cli
from fluid_nb.distributed import launcher as launch

from .processes import REPO, children_of

# every role starts a grandchild and says its pid; trainer 1 fails at once when told to,
# leaving its grandchild behind; "stubborn" roles ignore SIGTERM
SCRIPT = textwrap.dedent("""\
    import os, signal, subprocess, sys, time
    mode = sys.argv[1]
    child = subprocess.Popen(["sleep", "300"])
    print("grandchild", child.pid, flush=True)
    if mode == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if mode == "fail" and os.environ.get("PADDLE_TRAINER_ID") == "1":
        time.sleep(0.5)
        os._exit(4)
    time.sleep(300)
""")


def _alive(pid):
    """True while ``pid`` runs (a zombie has ended: only its exit status is left)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def _grandchildren(text):
    return [int(line.rsplit(" ", 1)[1]) for line in text.splitlines()
            if "] grandchild " in line]


def _write_script(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    return script


def test_a_failing_trainer_takes_what_it_started_with_it(tmp_path):
    out = io.StringIO()
    start = time.monotonic()
    code = cli(["launch", "--pservers", "1", "--trainers", "2", str(_write_script(tmp_path)),
                "fail"], out=out)
    spent = time.monotonic() - start
    text = out.getvalue()
    assert code == 4, text
    assert "[launch] trainer.1 exited with status 4; stopping the others" in text
    pids = _grandchildren(text)
    assert len(pids) == 3, text  # one sleep per role, the failed trainer's included
    assert not [pid for pid in pids if _alive(pid)]
    assert spent < 30


def test_a_role_that_ignores_sigterm_is_killed_after_the_grace(tmp_path, monkeypatch, ctrl_c):
    monkeypatch.setattr(launch, "_STOP_GRACE", 1.0)
    processes, _ = launch.plan(1, 1)
    out = io.StringIO()
    script = str(_write_script(tmp_path))
    stopper = threading.Timer(3.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    stopper.start()  # Ctrl-C once the roles are up
    try:
        with pytest.raises(KeyboardInterrupt):
            launch.run(processes, script, ["stubborn"], out=out)
    finally:
        stopper.cancel()
    pids = _grandchildren(out.getvalue())
    assert len(pids) == 2, out.getvalue()
    assert not [pid for pid in pids + [p.popen.pid for p in processes] if _alive(pid)]


def test_ctrl_c_stops_the_job_and_says_so_in_one_line(tmp_path, ctrl_c):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    # the launcher leads its own group, as a shell's foreground job does: Ctrl-C is a
    # SIGINT to that whole group
    proc = subprocess.Popen([sys.executable, "-m", "fluid_nb.cli", "launch", "--pservers", "1",
                             "--trainers", "1", str(_write_script(tmp_path)), "hang"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        lines = [proc.stdout.readline() for _ in range(3)]  # the plan, two grandchildren
        pids = _grandchildren("".join(lines))
        assert len(pids) == 2, lines
        children = children_of(proc.pid)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130
    assert err == "fluid-nb launch: interrupted; its 2 processes were stopped\n", err
    assert len(children) == 2
    assert not [pid for pid in pids + children if _alive(pid)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_the_roles_end_when_the_launcher_is_killed(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-m", "fluid_nb.cli", "launch", "--pservers", "1",
                             "--trainers", "1", str(_write_script(tmp_path)), "hang"], env=env,
                            stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        lines = [proc.stdout.readline() for _ in range(3)]
        pids = _grandchildren("".join(lines))
        children = children_of(proc.pid)
        proc.kill()  # nothing of the launcher runs: the kernel tells the roles
        proc.wait()
        end = time.monotonic() + 10
        while [pid for pid in children if _alive(pid)] and time.monotonic() < end:
            time.sleep(0.05)
        assert len(children) == 2 and not [pid for pid in children if _alive(pid)]
    finally:
        for pid in pids:  # the roles' own children are theirs to stop
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.mark.parametrize("arguments,says", [
    (["--start-port", "70000"], "--start-port expected a port in [1, 65533]"),
    (["--start-port", "-5"], "--start-port expected a port in [1, 65533]"),
    (["--start-port", "0"], "--start-port expected a port in [1, 65533]"),
    (["--start-port", "65534"], "the job's 3 ports from it must be ports"),
    (["--ips", ""], "--ips expected at least one address"),
    (["--ips", "10.0.0.1,,10.0.0.2"], "--ips entry 1 expected an IPv4 address or a host name"),
    (["--trainers", "0"], "--trainers expected a count in [1, 1024]"),
])
def test_a_plan_that_cannot_run_is_refused_in_one_line(tmp_path, capsys, arguments, says):
    code = cli(["launch", "--pservers", "1", "--trainers", "2", *arguments,
                str(_write_script(tmp_path)), "hang"], out=io.StringIO())
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("fluid-nb launch: error: launch: ") and err.count("\n") == 1, err
    assert says in err
