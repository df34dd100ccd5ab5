"""`fluid-nb launch`: the processes it plans with Fluid's PADDLE_* environment, on one
machine and across several, and the job it runs: prefixed and collected logs, every
process stopped when one fails."""
import io
import os
import re
import subprocess
import sys
import textwrap
import time

import pytest

from fluid_nb.cli import main as cli
from fluid_nb.distributed import launcher as launch
from fluid_nb.errors import InvalidArgument, NotFound

from .processes import REPO, children_of


def test_one_machine_gets_free_ports_and_fluids_environment():
    processes, node = launch.plan(2, 2)
    assert node == "127.0.0.1"
    assert [p.label for p in processes] == ["pserver.0", "pserver.1", "trainer.0", "trainer.1"]
    assert len({p.port for p in processes}) == 4
    servers = f"{processes[0].endpoint},{processes[1].endpoint}"
    for p in processes:
        env = p.env
        assert env["PADDLE_PSERVERS_IP_PORT_LIST"] == servers
        assert env["PADDLE_TRAINERS_NUM"] == env["PADDLE_TRAINERS"] == "2"
        assert env["PADDLE_TRAINING_ROLE"] == env["TRAINING_ROLE"] == p.role
        assert env["PADDLE_CURRENT_ENDPOINT"] == p.endpoint == f"{env['POD_IP']}:" \
                                                             f"{env['PADDLE_PORT']}"
        assert env["PADDLE_TRAINER_ENDPOINTS"] == \
            f"{processes[2].endpoint},{processes[3].endpoint}"
    assert processes[1].env["PADDLE_PSERVER_ID"] == "1"
    assert processes[1].env["PADDLE_PSERVER_PORT"] == str(processes[1].port)
    assert processes[3].env["PADDLE_TRAINER_ID"] == "1"
    assert "PADDLE_TRAINER_ID" not in processes[0].env
    # two servers on one machine have two ports: a trainer gets no single PSERVER_PORT
    assert "PADDLE_PSERVER_PORT" not in processes[2].env


def test_across_machines_each_launcher_starts_its_own_share():
    ips = "10.1.0.1,10.1.0.2"
    mine, node = launch.plan(2, 4, ips, start_port=7000, node_ip="10.1.0.2")
    theirs, _ = launch.plan(2, 4, ips, start_port=7000, node_ip="10.1.0.1")
    assert node == "10.1.0.2"
    assert [(p.label, p.endpoint) for p in mine] == [
        ("pserver.1", "10.1.0.2:7000"), ("trainer.1", "10.1.0.2:7002"),
        ("trainer.3", "10.1.0.2:7003")]
    assert [p.label for p in theirs] == ["pserver.0", "trainer.0", "trainer.2"]
    for p in mine + theirs:  # every launcher computes the same job
        assert p.env["PADDLE_PSERVERS_IP_PORT_LIST"] == "10.1.0.1:7000,10.1.0.2:7000"
        assert p.env["PADDLE_PSERVER_IPS"] == ips
    # one server per machine on the same port: book scripts build ip:port from these two
    assert mine[1].env["PADDLE_PSERVER_PORT"] == "7000"


def test_a_launch_must_know_which_machine_it_is_on():
    with pytest.raises(NotFound, match="this machine's IP expected exactly one of --ips"):
        launch.plan(1, 1, "10.255.0.1,10.255.0.2")
    with pytest.raises(InvalidArgument, match="--node-ip expected one of"):
        launch.plan(1, 1, "10.255.0.1,10.255.0.2", node_ip="10.255.0.3")
    with pytest.raises(InvalidArgument, match=r"--trainers expected a count in \[1, 1024\]"):
        launch.plan(1, 0)


SCRIPT = textwrap.dedent("""\
    import os, sys, time
    role, trainer = os.environ["PADDLE_TRAINING_ROLE"], os.getenv("PADDLE_TRAINER_ID")
    print(role, trainer, os.environ["PADDLE_CURRENT_ENDPOINT"], sys.argv[1:])
    print("second line", file=sys.stderr)
    sys.stdout.flush()
    if sys.argv[1] == "fail" and trainer == "1":
        sys.exit(3)
    time.sleep(0.2 if sys.argv[1] == "ok" else 60)
""")


def _launch(tmp_path, *args):
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    out = io.StringIO()
    start = time.monotonic()
    code = cli(["launch", "--pservers", "1", "--trainers", "2", "--log-dir",
                str(tmp_path / "logs"), str(script), *args], out=out)
    return code, out.getvalue(), time.monotonic() - start


def test_the_job_prints_each_processs_lines_prefixed_and_keeps_its_log(tmp_path):
    code, out, _ = _launch(tmp_path, "ok", "--lr", "0.1")
    assert code == 0
    for label, role, trainer in (("pserver.0", "PSERVER", "None"), ("trainer.0", "TRAINER", "0"),
                                 ("trainer.1", "TRAINER", "1")):
        assert re.search(rf"^\[{label}\] {role} {trainer} 127\.0\.0\.1:\d+ "
                         rf"\['ok', '--lr', '0\.1'\]$", out, re.M), out
        assert f"[{label}] second line" in out
    assert sorted(os.listdir(tmp_path / "logs")) == ["serverlog.0", "workerlog.0",
                                                     "workerlog.1"]
    log = (tmp_path / "logs" / "workerlog.1").read_text()
    assert log.startswith("TRAINER 1 ") and "second line" in log and "[" not in log[:1]


def test_one_failure_stops_every_other_process(tmp_path):
    code, out, spent = _launch(tmp_path, "fail")
    assert code == 3
    assert "[launch] trainer.1 exited with status 3; stopping the others" in out
    assert spent < 30  # the others (sleeping a minute) were stopped, not waited for


def test_the_command_line_launcher_stops_its_job_when_it_is_terminated(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-m", "fluid_nb.cli", "launch", "--pservers", "1",
                             "--trainers", "1", str(script), "sleep"], env=env,
                            stdout=subprocess.PIPE, text=True)
    try:
        seen = [proc.stdout.readline() for _ in range(3)]  # the plan and the two processes
        pids = children_of(proc.pid)
        assert len(pids) == 2, seen
        proc.terminate()
        assert proc.wait(timeout=20) != 0
        for pid in pids:
            assert not _alive(pid)
    finally:
        proc.kill()
        proc.wait()


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_the_processes_share_the_cores_unless_told_otherwise():
    threads = launch.thread_environment(4, environ={"MKL_NUM_THREADS": "3"})
    share = str(max(1, (os.cpu_count() or 1) // 4))
    assert threads == {"OMP_NUM_THREADS": share, "OPENBLAS_NUM_THREADS": share}
