"""A parameter-server job on a Ray cluster: Ray places, starts, watches and stops the
processes; gRPC stays the data path between servers and trainers.

    job = RayJob("train.py", ["--steps", "20"], pservers=2, trainers=2,
                 address="10.0.0.1:6379")
    job.wait()      # [0, 0]: the trainers' exit statuses, or JobFailed

Each server and trainer is an actor (:class:`ProcessActor`) in a placement group: one
group of bundles for the servers and one for the trainers, each ``STRATEGY="SPREAD"``, so
that servers go to different nodes, and trainers too, as far as there are nodes (a small
cluster holds several of a role per node rather than refusing the job, as
``STRICT_SPREAD`` would). Each bundle asks ``cpus_per_process`` CPUs (default
:data:`CPUS_PER_PROCESS`, so that a 2+2 job fits a two-core node).

Each actor runs the script in a subprocess on its node, in a session of its own, so that
a process killed there is a real process whose exit the actor sees. The actor first finds
a free port of its node's IP (``ray.util.get_node_ip_address()``), the driver builds every
process's ``PADDLE_*`` environment from those endpoints (:func:`.launcher.set_environments`,
the same table ``fluid-nb launch`` sets), then the servers start, then the trainers. Beside
those a process gets ``FLUID_NB_STATUS_FILE`` (a file on its node, read back by the actor
when polled), the driver's ``FLAGS_*`` variables (Fluid's flags) and, for a server,
``FLUID_NB_CHECKPOINT_DIR`` (a folder on its node, the same across its restarts) and
``FLUID_NB_CHECKPOINT_EVERY``.

When :class:`RayJob` connects to the cluster itself (Ray not yet initialized in this
process), the script's folder travels to the nodes as the job's ``working_dir`` and the
fluid_nb package as a ``py_modules`` entry, so nodes need only Python and Ray. When this
process is already connected, the job runs under that connection's runtime environment
and the script by its absolute path: give ``ray.init`` a ``runtime_env``, or keep the
files at the same path on every node.

The driver polls every actor each :data:`POLL_INTERVAL` seconds for new output (printed
as ``[trainer.1@10.0.0.3] ...``, kept for :meth:`RayJob.log_tail` and ``log_dir``), its
status report and whether its process ended. A process that exits with a nonzero status
or is killed, or whose actor or node is lost, ends the job: every process is stopped
(SIGTERM to its group, SIGKILL after :data:`.launcher._STOP_GRACE` seconds, all actors in
parallel), every actor killed and the placement groups removed, and :meth:`RayJob.wait`
raises :class:`~.job.JobFailed` naming the process, its node and its last lines; all of
that within :data:`FAILURE_DEADLINE` seconds of the exit (Ray's own time to declare a
lost node dead comes before). A subprocess whose actor dies gets SIGTERM from the kernel
(``PR_SET_PDEATHSIG``, as ``fluid-nb launch`` starts it), so nothing is left on a node.

With ``max_restarts=R`` a server whose process dies while trainers still train is started
again by its actor: same node, same port (the trainers' endpoint lists stay right), same
checkpoint folder, up to R times; it resumes from its last checkpoint, and what its shard
learned since then is lost. A server whose actor or node is lost cannot keep its endpoint
and ends the job, as a trainer that fails does.

When every trainer has finished, the servers (which return once every trainer has sent
``COMPLETE``) get :data:`SERVER_END_GRACE` seconds to end, then are stopped.
"""
import collections
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import ray
from ray.exceptions import ActorUnavailableError, GetTimeoutError, RayActorError
from ray.util.placement_group import placement_group, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from ..errors import InvalidArgument, NotFound, Unavailable, expected
from . import launcher
from .job import (CHECKPOINT_DIR_VARIABLE, CHECKPOINT_EVERY_VARIABLE, STATUS_FILE_VARIABLE,
                  Job, JobFailed, ProcessStatus)
from .status import read_status

#: seconds between two polls of the actors
POLL_INTERVAL = 0.5
#: the most a poll waits for an actor's answer before trying again next round
POLL_TIMEOUT = 5.0
#: seconds from a process's death to the job stopped: a poll, the others' SIGTERM grace
#: (launcher._STOP_GRACE), the actors killed and the placement groups removed
FAILURE_DEADLINE = 10.0
#: seconds the servers get to end on their own once every trainer has finished
SERVER_END_GRACE = 10.0
#: seconds the cluster gets to find room for the placement groups (and the actors to
#: start)
PLACEMENT_TIMEOUT = 60.0
#: CPUs each process's bundle asks for: a server mostly waits on the network, a trainer of
#: a small model on its servers; half a core each lets a 2+2 job run on a two-core node
CPUS_PER_PROCESS = 0.5
#: the last lines of each process kept for log_tail and JobFailed
TAIL_LINES = 200
#: actors are named ``<job id>.<label>`` in this namespace (ray.get_actor finds them)
NAMESPACE = "fluid_nb"


class ProcessActor:
    """One process of a job on its node: finds its endpoint, runs the script in a
    subprocess (its own session), reports output, status and exit, and stops it."""

    def __init__(self, job_id, label):
        self.ip = ray.util.get_node_ip_address()
        self.folder = os.path.join(tempfile.gettempdir(), "fluid_nb-ray", job_id, label)
        self.checkpoint_dir = os.path.join(self.folder, "checkpoint")
        os.makedirs(self.checkpoint_dir, exist_ok=True)
        self.status_file = os.path.join(self.folder, "status.json")
        self.process = None  # a launcher.Process (its popen) once started
        self.lines, self.lock, self.pump = [], threading.Lock(), None

    def endpoint(self):
        """This node's IP, a port free on it now, the Ray node's id and this actor's
        pid."""
        return (self.ip, launcher.free_ports(self.ip, 1)[0],
                ray.get_runtime_context().get_node_id(), os.getpid())

    def start(self, role, index, port, command, env, cpus):
        """Start ``command`` (again, after a restart) with ``env`` over this process's own
        environment; its pid."""
        process = launcher.Process(role, index, self.ip, port)
        threads = str(max(1, int(cpus)))  # the bundle's cores, at least one thread
        full = dict(os.environ, **{name: threads for name in launcher.THREAD_VARIABLES},
                    **env, PYTHONUNBUFFERED="1")
        full[STATUS_FILE_VARIABLE] = self.status_file
        if role == "PSERVER":
            full[CHECKPOINT_DIR_VARIABLE] = self.checkpoint_dir
        # the kernel's parent-death signal (launcher._command) comes when the thread that
        # started the process ends: an actor runs its calls on one thread, its main one
        process.popen = subprocess.Popen(
            launcher._command(sys.executable, command[0], command[1:]), env=full,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
        self.process = process
        self.pump = threading.Thread(target=self._pump, args=(process.popen.stdout,),
                                     daemon=True)
        self.pump.start()
        return process.popen.pid

    def _pump(self, stream):
        for raw in iter(stream.readline, b""):
            with self.lock:
                self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))
        stream.close()

    def poll(self):
        """New lines since the last poll, the status report, the exit status (None while
        the process runs)."""
        code = self.process.popen.poll() if self.process else None
        if code is not None:
            self.pump.join(timeout=2.0)  # its last lines come with its exit
        with self.lock:
            lines, self.lines = self.lines, []
        return {"lines": lines, "exit_code": code, "status": read_status(self.status_file)}

    def stop(self):
        """Stop the process's group (SIGTERM, SIGKILL after the grace); its last lines,
        status report and exit status."""
        if self.process is not None:
            launcher._stop([self.process])
            self.pump.join(timeout=2.0)
        return self.poll()

    def remove_job_folder(self):
        """Remove the job's folder on this node, every process's of it (called once all
        are stopped, so that the folder of a process whose actor was lost goes too)."""
        job_folder = os.path.dirname(self.folder)
        shutil.rmtree(job_folder, ignore_errors=True)
        try:
            os.rmdir(os.path.dirname(job_folder))  # the jobs' folder, when no other job has one
        except OSError:
            pass


_RemoteProcessActor = ray.remote(ProcessActor)


class _Member:
    """The driver's record of one process: its status, actor, environment and output."""

    def __init__(self, role, index):
        self.process = launcher.Process(role, index, None, None)
        self.status = ProcessStatus("pserver" if role == "PSERVER" else "trainer", index,
                                    None, None)
        self.actor = self.pid = self.actor_pid = self.node_id = None
        self.tail = collections.deque(maxlen=TAIL_LINES)
        self.log = None

    @property
    def label(self):
        return self.process.label

    @property
    def prefix(self):
        return f"[{self.label}@{self.status.node}] "


class RayJob(Job):
    """A parameter-server job on a Ray cluster (the module docstring says how).

    ``address``: a Ray address ("ip:port" of the head's GCS, "ray://..."), or "local" to
    start a cluster in this process when none is connected. The constructor returns once
    every process has started; a thread of the job watches it. ``out`` (default
    ``sys.stdout``) gets every line, ``log_dir`` each process's log (``serverlog.I``,
    ``workerlog.J``, as ``fluid-nb launch``).
    """

    def __init__(self, script, script_args=(), *, pservers=2, trainers=2, address="local",
                 max_restarts=0, checkpoint_every=None, log_dir=None, out=None,
                 cpus_per_process=CPUS_PER_PROCESS):
        if not os.path.isfile(script):
            raise NotFound(expected(script, "the training script", "an existing Python file",
                                    "no such file"))
        pservers = launcher._checked_count("--pservers", pservers)
        trainers = launcher._checked_count("--trainers", trainers)
        if isinstance(cpus_per_process, bool) or not isinstance(cpus_per_process, (int, float)) \
                or not cpus_per_process > 0:
            raise InvalidArgument(expected("launch", "cpus_per_process", "a number > 0",
                                           repr(cpus_per_process)))
        _check_restarts(max_restarts, checkpoint_every)
        self.max_restarts = max_restarts
        self.id = uuid.uuid4().hex[:12]
        self._out = out if out is not None else sys.stdout
        self._cpus = cpus_per_process
        self._lock = threading.RLock()
        self._stop_lock = threading.Lock()
        self._ended = threading.Event()
        self._failure = None
        self._stopping = False  # stop() was called: what the processes do then is no failure
        self._torn_down = False
        self._watcher = None
        #: the job's placement groups (servers', trainers')
        self.placement_groups = []
        self._trainers_done_at = None
        self._members = [_Member("PSERVER", i) for i in range(pservers)] + \
                        [_Member("TRAINER", j) for j in range(trainers)]
        self.processes = [m.status for m in self._members]
        script = os.path.abspath(script)
        self._owns_connection = not ray.is_initialized()
        if self._owns_connection:
            _connect(address, script)
            command = [os.path.basename(script), *script_args]  # in the working_dir
        else:
            command = [script, *script_args]
        self._env = {k: v for k, v in os.environ.items() if k.startswith("FLAGS_")}
        if checkpoint_every is None and max_restarts:
            checkpoint_every = launcher.DEFAULT_CHECKPOINT_EVERY  # as fluid-nb launch
        if checkpoint_every is not None:
            self._env[CHECKPOINT_EVERY_VARIABLE] = str(checkpoint_every)
        self._command = command
        try:
            if log_dir:
                os.makedirs(log_dir, exist_ok=True)
                for m in self._members:
                    m.log = open(os.path.join(log_dir, m.process.log_name), "w")
            self._place()
            self._start_all()
        except BaseException:
            self._teardown()
            self._disconnect()
            raise
        self._watcher = threading.Thread(target=self._watch, daemon=True,
                                         name=f"fluid_nb-ray-job-{self.id}")
        self._watcher.start()

    # --- the interface ----------------------------------------------------------------------
    def status(self):
        with self._lock:
            return [ProcessStatus(**m.status.as_dict()) for m in self._members]

    def wait(self, timeout=None):
        self._wait_for_end(self._ended, timeout, "RayJob.wait")
        self._disconnect()
        if self._failure is not None:
            raise self._failure
        return [m.status.exit_code for m in self._members if m.process.role == "TRAINER"]

    def stop(self):
        self._stopping = True
        self._teardown()
        self._ended.set()
        if self._watcher is not None and self._watcher is not threading.current_thread():
            self._watcher.join(timeout=POLL_TIMEOUT + 1)  # its last poll, before disconnecting
        self._disconnect()

    def log_tail(self, role, index, lines=20):
        label = f"{'pserver' if str(role).lower() == 'pserver' else 'trainer'}.{index}"
        for m in self._members:
            if m.label == label:
                with self._lock:
                    return list(m.tail)[-lines:] if lines > 0 else []
        raise NotFound(expected("RayJob.log_tail", "process",
                                "one of " + ", ".join(m.label for m in self._members), label))

    @property
    def pids(self):
        """Each process's pids on its node, by label: (the script's, its actor's)."""
        return {m.label: (m.pid, m.actor_pid) for m in self._members}

    @property
    def node_ids(self):
        """The Ray node each process was placed on, by label."""
        return {m.label: m.node_id for m in self._members}

    @property
    def actor_names(self):
        """The actors' names in namespace :data:`NAMESPACE`."""
        return [f"{self.id}.{m.label}" for m in self._members]

    # --- placing and starting ---------------------------------------------------------------
    def _place(self):
        """One SPREAD placement group per role; an actor per process in its bundle."""
        for role in ("PSERVER", "TRAINER"):
            members = [m for m in self._members if m.process.role == role]
            group = placement_group([{"CPU": self._cpus}] * len(members), strategy="SPREAD",
                                    name=f"fluid_nb-{self.id}-{role.lower()}")
            self.placement_groups.append(group)
            for bundle, m in enumerate(members):
                m.actor = _RemoteProcessActor.options(
                    name=f"{self.id}.{m.label}", namespace=NAMESPACE,
                    num_cpus=self._cpus, max_restarts=0, max_concurrency=1,
                    scheduling_strategy=PlacementGroupSchedulingStrategy(
                        group, placement_group_bundle_index=bundle),
                ).remote(self.id, m.label)
        groups = self.placement_groups
        ready, _ = ray.wait([g.ready() for g in groups], num_returns=len(groups),
                            timeout=PLACEMENT_TIMEOUT)
        if len(ready) < len(groups):
            cpus = ray.cluster_resources().get("CPU", 0)
            raise Unavailable(expected(
                "launch", "room on the Ray cluster",
                f"{len(self._members)} bundles of {self._cpus} CPU within "
                f"{PLACEMENT_TIMEOUT:g} s", f"a cluster of {cpus:g} CPUs in all"))
        for m, (ip, port, node_id, actor_pid) in zip(self._members, ray.get(
                [m.actor.endpoint.remote() for m in self._members],
                timeout=PLACEMENT_TIMEOUT)):
            m.process.ip, m.process.port = ip, port
            m.node_id, m.actor_pid = node_id, actor_pid
            m.status.node, m.status.endpoint = ip, m.process.endpoint
        launcher.set_environments([m.process for m in self._members
                                   if m.process.role == "PSERVER"],
                                  [m.process for m in self._members
                                   if m.process.role == "TRAINER"])
        self._say(f"{len(self._members)} processes on Ray: " + ", ".join(
            f"{m.label} {m.process.endpoint}" for m in self._members))

    def _start(self, m):
        return m.actor.start.remote(m.process.role, m.process.index, m.process.port,
                                    self._command, dict(self._env, **m.process.env),
                                    self._cpus)

    def _start_all(self):
        """The servers first (their endpoints are in every trainer's environment already),
        then the trainers."""
        for role in ("PSERVER", "TRAINER"):
            members = [m for m in self._members if m.process.role == role]
            for m, pid in zip(members, ray.get([self._start(m) for m in members],
                                               timeout=PLACEMENT_TIMEOUT)):
                m.pid = pid
                m.status.state = "running"

    # --- watching ---------------------------------------------------------------------------
    def _say(self, text):
        with self._lock:
            self._out.write(f"[launch] {text}\n")
            self._out.flush()

    def _take(self, m, report):
        with self._lock:
            for line in report["lines"]:
                m.tail.append(line)
                self._out.write(m.prefix + line + "\n")
                if m.log is not None:
                    m.log.write(line + "\n")
            if report["lines"]:
                self._out.flush()
                if m.log is not None:
                    m.log.flush()
            status = report.get("status")
            if status:
                for name in ("steps", "last_loss", "bytes_sent", "bytes_received"):
                    if name in status:
                        setattr(m.status, name, status[name])

    def _watch(self):
        try:
            while not self._ended.is_set():
                if self._poll() or self._over():
                    break
                self._ended.wait(POLL_INTERVAL)
        except BaseException as error:  # the job must still be stopped; wait() raises it
            if self._failure is None and not self._stopping:
                self._failure = error
        finally:
            self._teardown()
            self._ended.set()

    def _poll(self):
        """One round over the running processes; True when the job failed."""
        running = [m for m in self._members if m.status.state in ("running", "restarting")]
        refs = [m.actor.poll.remote() for m in running]
        for m, ref in zip(running, refs):
            try:
                report = ray.get(ref, timeout=POLL_TIMEOUT)
            except (GetTimeoutError, ActorUnavailableError):
                continue  # busy or briefly unreachable: asked again next round
            except RayActorError as error:
                if self._stopping:
                    return True
                return self._fail(m, None, f"its actor was lost ({type(error).__name__})")
            self._take(m, report)
            code = report["exit_code"]
            if code is None or self._stopping:
                continue
            m.status.exit_code = code
            if code == 0:
                m.status.state = "finished"
            elif self._restartable(m):
                if not self._restart(m, code):
                    return True
            else:
                return self._fail(m, code, _exit_words(code))
        return False

    def _over(self):
        """True when every trainer has finished and the servers ended (or had their
        grace)."""
        if any(m.status.state != "finished" for m in self._members
               if m.process.role == "TRAINER"):
            return False
        if self._trainers_done_at is None:
            self._trainers_done_at = time.monotonic()
        servers_left = [m for m in self._members if m.process.role == "PSERVER"
                        and m.status.state != "finished"]
        if servers_left and time.monotonic() - self._trainers_done_at < SERVER_END_GRACE:
            return False
        if servers_left:
            self._say("every trainer finished; stopping "
                      + ", ".join(m.label for m in servers_left))
        return True

    def _restartable(self, m):
        trainers_left = any(t.status.state == "running" for t in self._members
                            if t.process.role == "TRAINER")
        return m.process.role == "PSERVER" and m.status.restarts < self.max_restarts \
            and trainers_left

    def _restart(self, m, code):
        """Start the server again through its actor; False when that failed the job."""
        m.status.restarts += 1
        m.status.state = "restarting"
        self._say(f"{m.label} on {m.status.node} {_exit_words(code)}; restarting it on "
                  f"{m.process.endpoint} ({m.status.restarts} of {self.max_restarts})")
        try:
            m.pid = ray.get(self._start(m), timeout=PLACEMENT_TIMEOUT)
        except RayActorError as error:
            self._fail(m, code, f"{_exit_words(code)}, and its actor was lost restarting "
                                f"it ({type(error).__name__})")
            return False
        except GetTimeoutError:
            self._fail(m, code, f"{_exit_words(code)}, and its actor did not start it again "
                                f"within {PLACEMENT_TIMEOUT:g} s")
            return False
        m.status.state, m.status.exit_code = "running", None
        return True

    def _fail(self, m, code, why):
        m.status.state = "failed"
        tail = list(m.tail)[-20:]
        self._say(f"{m.label} on {m.status.node} {why}; stopping the job")
        self._failure = JobFailed(
            f"{m.label} on {m.status.node} {why}; the job was stopped. Its last lines:\n"
            + ("\n".join("    " + line for line in tail) or "    (none)"),
            role=m.status.role, index=m.status.index, node=m.status.node, exit_code=code,
            log_tail=tail)
        return True

    # --- stopping ---------------------------------------------------------------------------
    def _teardown(self):
        """Stop every process (in parallel, each actor its own), kill the actors, remove
        the placement groups, close the logs (idempotent)."""
        with self._stop_lock:
            if self._torn_down:
                return
            self._torn_down = True
            started = [m for m in self._members if m.actor is not None]
            refs = {m: m.actor.stop.remote() for m in started}
            done = set(_wait_all(refs.values(), 2 * launcher._STOP_GRACE + 2))
            for m, ref in refs.items():
                try:
                    report = ray.get(ref, timeout=0)
                except ray.exceptions.RayError:  # its actor was lost, or it did not answer
                    done.discard(ref)
                    continue
                self._take(m, report)
                if m.status.exit_code is None and m.status.state in ("running", "restarting"):
                    m.status.exit_code = report["exit_code"]
            # each node's job folder, by one of the actors that answered on it
            cleaners = {}
            for m, ref in refs.items():
                if m.node_id not in cleaners and ref in done:
                    cleaners[m.node_id] = m.actor.remove_job_folder.remote()
            _wait_all(cleaners.values(), 5)
            for m in started:
                ray.kill(m.actor, no_restart=True)
            for group in self.placement_groups:
                remove_placement_group(group)
            with self._lock:
                for m in self._members:
                    if m.status.state not in ("finished", "failed"):
                        m.status.state = "stopped"
                    if m.log is not None:
                        m.log.close()
                        m.log = None

    def _disconnect(self):
        if self._owns_connection and ray.is_initialized():
            ray.shutdown()
        self._owns_connection = False


def _wait_all(refs, seconds):
    """Those of ``refs`` that are ready within ``seconds``."""
    refs = list(refs)
    return ray.wait(refs, num_returns=len(refs), timeout=seconds)[0] if refs else []


def _check_restarts(max_restarts, checkpoint_every):
    """The restart settings as ``fluid-nb launch`` checks them."""
    if isinstance(max_restarts, bool) or not isinstance(max_restarts, int) or max_restarts < 0:
        raise InvalidArgument(expected("launch", "--max-restarts", "a count >= 0",
                                       repr(max_restarts)))
    if checkpoint_every is not None and (isinstance(checkpoint_every, bool) or not isinstance(
            checkpoint_every, int) or checkpoint_every < 1):
        raise InvalidArgument(expected("launch", "--checkpoint-every",
                                       "a number of rounds >= 1", repr(checkpoint_every)))


def _connect(address, script):
    """``ray.init`` with the script's folder as the working_dir and fluid_nb as a module
    the nodes import."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # fluid_nb/
    runtime_env = {"working_dir": os.path.dirname(script), "py_modules": [package]}
    options = dict(runtime_env=runtime_env, namespace=NAMESPACE, log_to_driver=False,
                   logging_level="WARNING")
    try:
        # "local": a cluster of this process's own, never one another program started
        ray.init(address=address, **options)
    except ConnectionError as error:
        raise Unavailable(expected("launch", "--ray", "the address of a running Ray cluster",
                                   f"{address!r} ({error})")) from error


def _exit_words(code):
    if code is None:
        return "was lost"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"
