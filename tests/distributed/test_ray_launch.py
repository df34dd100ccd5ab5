"""A parameter-server job on a Ray cluster (`launch(..., ray=ADDRESS)`, `fluid-nb launch
--ray`): Ray places the servers and trainers as actors over the nodes, each running the
script in a real subprocess; gRPC carries the training. Sync SGD on 2 servers and 2
trainers ends at single-process parameters; a process that dies stops the job within the
deadline, naming it, and leaves no actor and no process behind; a killed server comes back
from its checkpoint when restarts are allowed; without Ray the error says what to install.

The cluster is two Ray nodes on this machine (ray.cluster_utils.Cluster), shared by the
module's tests; the command-line test starts a head of its own with `ray start`."""
import contextlib
import io
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

from fluid_nb.distributed import launch
from fluid_nb.distributed.job import JobFailed
from fluid_nb.distributed.launcher import free_ports
from fluid_nb.errors import InvalidArgument

from ..trajectories import assert_float32_losses_agree, assert_float32_runs_agree
from .processes import REPO

EXAMPLES = REPO / "examples" / "distributed"
FIT_A_LINE = EXAMPLES / "fit_a_line.py"
MLP = EXAMPLES / "mlp.py"  # the job the failure and restart tests train
# Fluid's flags reach the processes from the driver's environment (FLAGS_*)
FLAGS = {"FLAGS_rpc_deadline": "60000", "FLAGS_rpc_round_deadline": "30000",
         "FLAGS_rpc_reconnect_deadline": "60000"}
# Ray's node start waits for its agents' port files, some for a fixed 15 s: on a loaded
# two-core machine the agents' imports can outlast that, and the node start fails. So the
# nodes start no log monitor (one Python process fewer to start at once), and a start is
# tried again (ATTEMPTS in all) after ending what the failed one left.
#   Token authentication is off for these clusters: Ray turns it on for a node it starts
# when a token file exists in the home folder (a local ray.init() writes one), and the
# drivers here would then need the token too.
RAY_START = {"RAY_agent_register_timeout_ms": "120000", "RAY_AUTH_MODE": "disabled"}
ATTEMPTS = 3


def _environment(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PADDLE_", "TRAINING_"))}
    env.update(FLAGS, **extra, PYTHONPATH=os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]))
    return env


def _single_process(args, save, init):
    done = subprocess.run([sys.executable, str(FIT_A_LINE), *args, "--save", str(save),
                           "--init", str(init)], env=_environment(), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def assert_trained_as_one_process(save, steps):
    """The trainers' parameters after ``steps`` sync SGD steps on half batches are those of
    single-process training on whole batches from the same initial parameters."""
    trainers = [np.load(save / f"trainer.{t}.npz") for t in range(2)]
    args = ["--steps", str(steps)]
    _single_process(args, save, save / "trainer.0.npz")
    local = np.load(save / "local.npz")
    names = [k[len("final/"):] for k in local.files if k.startswith("final/")]
    assert len(names) == 2
    for name in names:
        moved = np.abs(local["final/" + name] - local["initial/" + name]).max()
        assert moved > 1e-3, name  # training changed it: the comparison means something
        for t in trainers:
            assert_float32_runs_agree(t["final/" + name], local["final/" + name], steps, 20,
                                      name=name)
    assert_float32_losses_agree((trainers[0]["losses"] + trainers[1]["losses"]) / 2,
                                local["losses"], 20)


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return False


def _wait_gone(pids, within=15.0):
    """The pids still alive after waiting up to ``within`` seconds."""
    end = time.monotonic() + within
    while True:
        left = [pid for pid in pids if pid and _alive(pid)]
        if not left or time.monotonic() > end:
            return left
        time.sleep(0.1)


def _processes_with(text):
    """Pids of the processes whose command line holds ``text``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if text.encode() in f.read() and _alive(int(entry)):
                        found.append(int(entry))
            except OSError:
                continue
    return found


# --- no cluster needed ----------------------------------------------------------------------
def test_without_ray_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails
    monkeypatch.delitem(sys.modules, "fluid_nb.distributed.ray_launch", raising=False)
    with pytest.raises(ImportError, match=r'pip install "fluid_nb\[ray\]"') as failed:
        launch(str(FIT_A_LINE), ray="10.0.0.1:6379")
    assert type(failed.value).__name__ == "RayNotInstalled"


def test_without_ray_the_job_runs_on_this_machine(tmp_path):
    script = tmp_path / "job.py"
    script.write_text("import os\nprint(os.environ['PADDLE_TRAINING_ROLE'])\n")
    out = io.StringIO()
    job = launch(str(script), pservers=1, trainers=2, out=out, wait=False)
    try:
        assert type(job).__name__ == "LocalJob"
        assert job.wait(timeout=60) == [0, 0]
    finally:
        job.stop()
    assert "[trainer.1] TRAINER" in out.getvalue() and "[pserver.0] PSERVER" in out.getvalue()


def test_auto_needs_ray_address(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with pytest.raises(InvalidArgument, match="RAY_ADDRESS"):
        launch(str(FIT_A_LINE), ray="auto")


def test_the_command_line_runs_a_job_on_a_ray_cluster_it_is_pointed_at(tmp_path):
    """The acceptance run: `ray start --head`, then `fluid-nb launch --ray auto` with
    RAY_ADDRESS; 20 steps of sync SGD train to single-process parameters, nothing of the
    job is left, and the head is stopped (its own processes, found by its folder)."""
    pytest.importorskip("ray")
    import ray
    ip = ray.util.get_node_ip_address()
    env = _environment(**RAY_START)
    ray_cli = os.path.join(os.path.dirname(sys.executable), "ray")
    for attempt in range(ATTEMPTS):
        port, client_port = free_ports(ip, 2)
        folder = _ray_folder()
        env["RAY_TMPDIR"] = folder
        started = subprocess.run([ray_cli, "start", "--head", "--num-cpus", "2", "--port",
                                  str(port), "--ray-client-server-port", str(client_port),
                                  "--temp-dir", folder, "--include-dashboard", "false",
                                  "--include-log-monitor", "false", "--disable-usage-stats"],
                                 env=env, cwd=folder, capture_output=True, text=True,
                                 timeout=240)
        if started.returncode == 0:
            break
        _stop_ray_processes(folder)
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        save = tmp_path / "save"
        done = subprocess.run(
            [sys.executable, "-m", "fluid_nb.cli", "launch", "--ray", "auto", "--pservers",
             "2", "--trainers", "2", str(FIT_A_LINE), "--steps", "20", "--save", str(save)],
            env=dict(env, RAY_ADDRESS=f"{ip}:{port}"), capture_output=True, text=True,
            timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        assert not _processes_with(str(save))  # the job's processes ended with it
        for label in ("pserver.0", "pserver.1"):
            assert f"[{label}@{ip}] all trainers done" in done.stdout, done.stdout
        assert_trained_as_one_process(save, 20)
    finally:
        _stop_ray_processes(folder)


def _ray_folder():
    """A fresh folder for one Ray head and its nodes, also Ray's default temporary folder
    (``RAY_TMPDIR``) for whoever uses it: Ray writes the address of the cluster it starts to
    ``<default>/ray/ray_current_cluster`` whatever folder its nodes were given, and fails
    where that folder does not exist (a fresh machine's /tmp)."""
    # short: Ray's socket paths under it must stay within the OS's limit (107 bytes)
    folder = tempfile.mkdtemp(prefix="rayt", dir="/tmp")
    os.makedirs(os.path.join(folder, "ray"))
    return folder


def _stop_ray_processes(folder):
    """What `ray stop` does, for the processes of the Ray nodes started with ``folder``
    only (found by it on their command lines): SIGTERM, then SIGKILL to those left; then
    the folder goes."""
    pids = _processes_with(folder)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    for pid in _wait_gone(pids, 10):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert not _wait_gone(pids, 10)
    shutil.rmtree(folder, ignore_errors=True)


# --- on a two-node cluster ------------------------------------------------------------------
@pytest.fixture(scope="module")
def cluster():
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster
    saved = {name: os.environ.get(name) for name in [*RAY_START, "RAY_TMPDIR"]}
    os.environ.update(RAY_START)
    try:
        for attempt in range(ATTEMPTS):
            folder, nodes = _ray_folder(), None
            os.environ["RAY_TMPDIR"] = folder
            try:
                nodes = Cluster(initialize_head=True, head_node_args={
                    "num_cpus": 2, "include_dashboard": False, "include_log_monitor": False,
                    "temp_dir": folder})
                nodes.add_node(num_cpus=2, temp_dir=folder)
                nodes.wait_for_nodes()
                break
            except Exception:
                if nodes is not None:
                    nodes.shutdown()
                _stop_ray_processes(folder)
                if attempt == ATTEMPTS - 1:
                    raise
        yield nodes
        if ray.is_initialized():
            ray.shutdown()
        nodes.shutdown()
        _stop_ray_processes(folder)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture
def flags(monkeypatch):
    for name, value in FLAGS.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def connected(cluster):
    """This process connected to the cluster (the job runs under that connection)."""
    import ray
    ray.init(address=cluster.address, namespace="fluid_nb-tests", log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()


def test_two_servers_and_two_trainers_on_two_nodes_train_as_one_process(cluster, flags,
                                                                       tmp_path):
    out = io.StringIO()
    job = launch(str(FIT_A_LINE), ["--steps", "20", "--save", str(tmp_path)],
                 ray=cluster.address, log_dir=str(tmp_path / "logs"), out=out, wait=False)
    try:
        assert job.wait(timeout=240) == [0, 0]
    finally:
        job.stop()
    # the servers went to different nodes, and the trainers too (SPREAD)
    nodes = job.node_ids
    assert nodes["pserver.0"] != nodes["pserver.1"]
    assert nodes["trainer.0"] != nodes["trainer.1"]
    assert [s.state for s in job.status()] == ["finished"] * 4
    assert [s.steps for s in job.status()][2:] == [20, 20]  # the trainers' status reports
    text = out.getvalue()
    assert "[pserver.1@" in text and "] all trainers done" in text, text
    assert job.log_tail("trainer", 1, 1)[0].startswith("held-out loss")
    assert (tmp_path / "logs" / "workerlog.1").read_text().splitlines()[-1].startswith(
        "held-out loss")
    assert_trained_as_one_process(tmp_path, 20)


FAILING = """\
import os, sys
print("trainer" if os.getenv("PADDLE_TRAINER_ID") else "server", "here")
if os.getenv("PADDLE_TRAINER_ID") == "1":
    sys.exit(3)
"""


def test_the_command_line_prints_the_failure_and_exits_with_its_status(cluster, tmp_path,
                                                                       capsys):
    from fluid_nb.cli import main as cli
    script = tmp_path / "failing.py"
    script.write_text(FAILING)
    out = io.StringIO()
    code = cli(["launch", "--ray", cluster.address, "--pservers", "1", "--trainers", "2",
                str(script)], out=out)
    assert code == 3, out.getvalue()
    err = capsys.readouterr().err
    assert "fluid-nb launch: trainer.1 on " in err and "exited with status 3" in err, err
    assert "    trainer here" in err  # its last lines


def _start_long_job(tmp_path, **options):
    out = io.StringIO()
    job = launch(str(MLP), ["--steps", "20000", "--save", str(tmp_path)],
                 ray="local", out=out, wait=False, **options)
    return job, out


def _wait_for_step(job, step, within=120):
    """Block until trainer 0 has printed step ``step`` or a later one (its lines come a
    poll's worth at a time)."""
    end = time.monotonic() + within
    while not any(line.startswith("step ") and int(line.split()[1]) >= step
                  for line in job.log_tail("trainer", 0, 50)):
        assert time.monotonic() < end and not job.done, job.log_tail("trainer", 0)
        time.sleep(0.05)


def assert_nothing_of_the_job_is_left(ray, job):
    for name in job.actor_names:
        with pytest.raises(ValueError):
            ray.get_actor(name, namespace="fluid_nb")
    pids = [pid for pair in job.pids.values() for pid in pair]
    assert len(pids) == 8 and not _wait_gone(pids)
    table = ray.util.placement_group_table()
    assert {table[g.id.hex()]["state"] for g in job.placement_groups} == {"REMOVED"}
    # the processes' folders (status files, checkpoints) on the node, a lost actor's too
    assert not os.path.exists(os.path.join(tempfile.gettempdir(), "fluid_nb-ray", job.id))


def test_a_killed_server_stops_the_job_within_the_deadline_naming_it(connected, flags,
                                                                     tmp_path):
    from fluid_nb.distributed.ray_launch import FAILURE_DEADLINE
    job, out = _start_long_job(tmp_path)
    try:
        _wait_for_step(job, 5)
        os.kill(job.pids["pserver.1"][0], signal.SIGKILL)
        killed = time.monotonic()
        with pytest.raises(JobFailed, match=r"pserver\.1 on \S+ was killed by SIGKILL") as e:
            job.wait(timeout=60)
        # the deadline, and as much again for a loaded machine
        assert time.monotonic() - killed < 2 * FAILURE_DEADLINE, out.getvalue()
    finally:
        job.stop()
    error = e.value
    assert (error.role, error.index, error.exit_code) == ("pserver", 1, -9)
    assert error.node == job.status()[1].node
    assert any(line.startswith("serving ") for line in error.log_tail), error.log_tail
    assert {s.label: s.state for s in job.status()} == {
        "pserver.0": "stopped", "pserver.1": "failed", "trainer.0": "stopped",
        "trainer.1": "stopped"}
    assert_nothing_of_the_job_is_left(connected, job)


def test_a_lost_actor_takes_its_process_with_it_and_fails_the_job(connected, flags,
                                                                  tmp_path):
    job, out = _start_long_job(tmp_path)
    try:
        _wait_for_step(job, 2)
        script_pid, _ = job.pids["trainer.1"]
        connected.kill(connected.get_actor(job.actor_names[3], namespace="fluid_nb"))
        # the kernel ends the script when its actor dies (parent-death signal)
        assert not _wait_gone([script_pid], 10)
        with pytest.raises(JobFailed, match=r"trainer\.1 on \S+ its actor was lost") as e:
            job.wait(timeout=60)
    finally:
        job.stop()
    assert (e.value.role, e.value.index, e.value.exit_code) == ("trainer", 1, None)
    assert_nothing_of_the_job_is_left(connected, job)


def test_a_killed_server_comes_back_from_its_checkpoint_and_the_job_finishes(
        connected, flags, tmp_path):
    out = io.StringIO()
    job = launch(str(MLP), ["--steps", "200", "--save", str(tmp_path)], ray="local",
                 max_restarts=1, checkpoint_every=5, log_dir=str(tmp_path / "logs"),
                 out=out, wait=False)
    try:
        _wait_for_step(job, 40)
        first = job.pids["pserver.1"][0]
        os.kill(first, signal.SIGKILL)
        assert job.wait(timeout=240) == [0, 0], out.getvalue()
        statuses = job.status()
    finally:
        job.stop()
    assert [s.restarts for s in statuses] == [0, 1, 0, 0]
    assert [s.state for s in statuses] == ["finished"] * 4
    assert job.pids["pserver.1"][0] != first
    # on its node and port again: the trainers' endpoint lists stay right
    assert f"restarting it on {statuses[1].endpoint} (1 of 1)" in out.getvalue()
    log = (tmp_path / "logs" / "serverlog.1").read_text()
    resumed = [line for line in log.splitlines() if "resumed from round" in line]
    assert len(resumed) == 1, log
    k = int(resumed[0].split("resumed from round ")[1].split()[0])
    assert k >= 5 and k % 5 == 0, resumed  # a periodic checkpoint, taken before the kill
    for t in range(2):
        saved = np.load(tmp_path / f"trainer.{t}.npz")
        assert len(saved["losses"]) == 200 and np.isfinite(saved["losses"]).all()
        before, after = saved["held_out"]
        assert after < 0.5 * before
    assert_nothing_of_the_job_is_left(connected, job)
