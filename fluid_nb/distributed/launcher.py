"""``fluid-nb launch``: start a parameter-server job's processes, as Fluid's launchers do.

    fluid-nb launch --pservers 2 --trainers 2 train.py --epochs 3

starts ``train.py`` four times: two parameter servers and two trainers, each told its role
through the environment variables Fluid 1.x's launchers (``paddle.distributed.launch_ps``,
fleet's role makers) and book scripts read:

=============================  =========================================================
``PADDLE_TRAINING_ROLE``,      ``PSERVER`` or ``TRAINER``
``TRAINING_ROLE``
``PADDLE_PSERVERS_IP_PORT_LIST``  every server's ``ip:port``, comma-separated
``PADDLE_PSERVER_IPS``         the servers' IPs, comma-separated
``PADDLE_PSERVER_PORT``        the server's own port (a server); a trainer gets it only
                               when all servers share one port (one per machine)
``PADDLE_TRAINERS_NUM``,       the number of trainers
``PADDLE_TRAINERS``
``PADDLE_TRAINER_ID``          the trainer's index (a trainer)
``PADDLE_PSERVER_ID``          the server's index (a server)
``PADDLE_TRAINER_ENDPOINTS``   every trainer's ``ip:port`` (ports after the servers')
``PADDLE_CURRENT_ENDPOINT``    the process's own ``ip:port``
``POD_IP``, ``PADDLE_PORT``    the process's own IP and port
=============================  =========================================================

On one machine (no ``--ips``) every process runs on 127.0.0.1 on ports found free now
(``--start-port P``: P, P+1, ...). Across machines, ``--ips a,b`` lists them; run the same
command on each (with the same ``--start-port``, default 6170): server i and trainer j live
on ``ips[i % n]`` and ``ips[j % n]``, and each launcher starts those of its own machine
(found by the addresses it can listen on, or ``--node-ip``).

The processes of one machine share its cores: unless the environment already says, each
gets ``cores // processes`` BLAS and OpenMP threads (``OMP_NUM_THREADS``,
``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``); a BLAS library's idle threads spin, and
several processes' spinning threads on the same cores made a matmul forty times slower.

Each line a process prints comes out prefixed with its role and index (``[trainer.1]``),
and goes to ``LOG_DIR/serverlog.I`` or ``workerlog.J`` with ``--log-dir``. Each process
starts a process group of its own (a new session), so that stopping it stops whatever it
started too. When one process fails, every group is stopped (SIGTERM to the group, SIGKILL
to what is left after a grace) and the launch exits with its status; it returns when every
process and every process they started has ended. An interrupt (Ctrl-C, which the terminal
no longer delivers to the job's groups) stops the job the same way and is raised again once
it has stopped. A process also ends if the launcher dies.

The job is a :class:`LocalJob`, which starts the processes and returns (a notebook's cell
goes on; :func:`run`, the command's, waits for it): its ``status()``, ``wait()``, ``stop()``
and ``log_tail()`` are :class:`~fluid_nb.distributed.job.Job`'s. Each process gets a status
file (``FLUID_NB_STATUS_FILE``); with ``--max-restarts R`` a server that dies while trainers
train is started again on its endpoint, from its checkpoint (``FLUID_NB_CHECKPOINT_DIR``,
saved every ``--checkpoint-every K`` rounds), up to R times.

The plan is checked before anything starts: counts of at least 1 (at most MAX_PROCESSES in
all), ports in 1..65535 for the whole range ``start_port + N``, ``--ips`` a non-empty list of
IPv4 addresses or host names.
"""
import collections
import contextlib
import ipaddress
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from ..errors import InvalidArgument, InvalidType, NotFound, expected
from .job import (CHECKPOINT_DIR_VARIABLE, CHECKPOINT_EVERY_VARIABLE, STATUS_FILE_VARIABLE,
                  Job, JobFailed, ProcessStatus)

DEFAULT_START_PORT = 6170
#: the most processes one job may have (each gets a port of its machine)
MAX_PROCESSES = 1024
_STOP_GRACE = 5.0
#: a host name: dot-separated labels of letters, digits and inner hyphens
_HOST_NAME = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)(\.(?!-)[A-Za-z0-9-]{1,63}(?<!-))*")


class Process:
    """One process to start: its role, index, endpoint and environment."""

    def __init__(self, role, index, ip, port):
        self.role, self.index, self.ip, self.port = role, index, ip, port
        self.env = {}
        self.popen = None

    @property
    def endpoint(self):
        return f"{self.ip}:{self.port}"

    @property
    def label(self):
        return f"{'pserver' if self.role == 'PSERVER' else 'trainer'}.{self.index}"

    @property
    def log_name(self):
        return f"{'serverlog' if self.role == 'PSERVER' else 'workerlog'}.{self.index}"


def free_ports(ip, count):
    """``count`` ports on ``ip`` that nothing listens on now."""
    sockets, ports = [], []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((ip, 0))
            sockets.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in sockets:
            s.close()
    return ports


def _is_local(ip):
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((ip, 0))
        return True
    except OSError:
        return False


def _checked_count(what, n):
    if isinstance(n, bool) or not isinstance(n, int):
        raise InvalidType(expected("launch", what, "a count (an int)", repr(n)))
    if not 1 <= n <= MAX_PROCESSES:
        raise InvalidArgument(expected("launch", what, f"a count in [1, {MAX_PROCESSES}]", n))
    return n


def _checked_address(what, ip):
    """``ip`` if it is an IPv4 address or a host name, else InvalidArgument."""
    if isinstance(ip, str):
        try:
            ipaddress.IPv4Address(ip)
            return ip
        except ValueError:
            # digits and dots only: a mistyped IPv4 address, not a host name
            if not re.fullmatch(r"[0-9.]+", ip) and _HOST_NAME.fullmatch(ip) and len(ip) < 254:
                return ip
    raise InvalidArgument(expected("launch", what, "an IPv4 address or a host name",
                                   repr(ip)))


def _checked_ips(ips):
    """The machines' addresses: None means this one (127.0.0.1); a comma-separated string
    or a list must name at least one, each valid, none twice."""
    if ips is None:
        return ["127.0.0.1"]
    if isinstance(ips, str):
        ips = [ip.strip() for ip in ips.split(",")]
    elif not isinstance(ips, (list, tuple)):
        raise InvalidType(expected("launch", "--ips", "comma-separated addresses",
                                   type(ips).__name__))
    if not ips or ips == [""]:
        raise InvalidArgument(expected("launch", "--ips", "at least one address (omit --ips "
                                       "for this machine alone)", repr(",".join(ips))))
    checked = [_checked_address(f"--ips entry {i}", ip) for i, ip in enumerate(ips)]
    if len(set(checked)) != len(checked):
        raise InvalidArgument(expected("launch", "--ips", "distinct addresses", checked))
    return checked


def _checked_start_port(start_port, count):
    """``start_port`` (None: chosen later) if all ``count`` ports from it are ports."""
    if start_port is None:
        return None
    if isinstance(start_port, bool) or not isinstance(start_port, int):
        raise InvalidType(expected("launch", "--start-port", "a port number (an int)",
                                   repr(start_port)))
    if not 1 <= start_port <= 65536 - count:
        raise InvalidArgument(expected(
            "launch", "--start-port", f"a port in [1, {65536 - count}] (the job's {count} "
            f"ports from it must be ports, 1..65535)", start_port))
    return start_port


def plan(pservers, trainers, ips=None, start_port=None, node_ip=None):
    """The job's processes (all machines), with their environments, and this machine's IP.
    Every argument is checked before anything is planned (see the module docstring)."""
    pservers = _checked_count("--pservers", pservers)
    trainers = _checked_count("--trainers", trainers)
    if pservers + trainers > MAX_PROCESSES:
        raise InvalidArgument(expected("launch", "--pservers + --trainers",
                                       f"at most {MAX_PROCESSES} processes",
                                       pservers + trainers))
    ips = _checked_ips(ips)
    start_port = _checked_start_port(start_port, pservers + trainers)
    if node_ip is not None:
        node_ip = _checked_address("--node-ip", node_ip)
    if node_ip is None:
        local = [ip for ip in ips if _is_local(ip)]
        if len(ips) > 1 and len(local) != 1:
            raise NotFound(expected("launch", "this machine's IP",
                                    f"exactly one of --ips {ips} (or give --node-ip)",
                                    f"{local or 'none'} among the addresses it can use"))
        node_ip = local[0] if local else ips[0]
    elif node_ip not in ips:
        raise InvalidArgument(expected("launch", "--node-ip", f"one of {ips}",
                                       node_ip))
    one_machine = len(ips) == 1
    servers = [Process("PSERVER", i, ips[i % len(ips)], None) for i in range(pservers)]
    workers = [Process("TRAINER", j, ips[j % len(ips)], None) for j in range(trainers)]
    if start_port is None and one_machine:
        ports = free_ports(ips[0], pservers + trainers)
    else:
        base = DEFAULT_START_PORT if start_port is None else start_port
        ports = [base + k for k in range(pservers + trainers)]
    if one_machine:
        for p, port in zip(servers + workers, ports):
            p.port = port
    else:  # the same numbering on every machine: port k of the machine's k-th process
        for group, offset in ((servers, 0), (workers, pservers)):
            for p in group:
                p.port = ports[offset + p.index // len(ips)]
    set_environments(servers, workers)
    return [p for p in servers + workers if p.ip == node_ip], node_ip


def set_environments(servers, workers):
    """Give each of ``servers`` and ``workers`` (:class:`Process` records whose ip and port
    are set) the ``PADDLE_*`` environment of its role (the module docstring's table)."""
    server_eps = ",".join(p.endpoint for p in servers)
    common = {
        "PADDLE_PSERVERS_IP_PORT_LIST": server_eps,
        "PADDLE_PSERVER_IPS": ",".join(p.ip for p in servers),
        "PADDLE_TRAINERS_NUM": str(len(workers)),
        "PADDLE_TRAINERS": str(len(workers)),
        "PADDLE_TRAINER_ENDPOINTS": ",".join(p.endpoint for p in workers),
    }
    shared_port = {p.port for p in servers}
    for p in servers + workers:
        p.env = dict(common, PADDLE_TRAINING_ROLE=p.role, TRAINING_ROLE=p.role,
                     PADDLE_CURRENT_ENDPOINT=p.endpoint, POD_IP=p.ip, PADDLE_PORT=str(p.port))
        if p.role == "PSERVER":
            p.env.update(PADDLE_PSERVER_ID=str(p.index), PADDLE_PSERVER_PORT=str(p.port))
        else:
            p.env["PADDLE_TRAINER_ID"] = str(p.index)
            if len(shared_port) == 1:
                p.env["PADDLE_PSERVER_PORT"] = str(next(iter(shared_port)))


#: the first program a process runs (Linux): it asks the kernel to send it SIGTERM when the
#: launcher dies (PR_SET_PDEATHSIG, which exec keeps), then becomes ``python -u script``.
#: Done in the child with no Python code between fork and exec (no ``preexec_fn``): that
#: code is unsafe beside the launcher's threads, and it runs the fork handlers of libraries
#: loaded in the launcher (gRPC's abort the child when a channel or server has been used).
_DIE_WITH_LAUNCHER = (
    "import ctypes, os, signal, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)\n"
    "if os.getppid() != int(sys.argv[1]):\n"  # the launcher died before the prctl
    "    os._exit(1)\n"
    "os.execv(sys.argv[2], sys.argv[2:])\n")


def _command(python, script, script_args):
    """The command line of one process: ``python -u script args``, started through
    _DIE_WITH_LAUNCHER where the kernel has PR_SET_PDEATHSIG."""
    command = [python, "-u", script, *script_args]
    if not sys.platform.startswith("linux"):
        return command
    # -I -S: the first program reads neither the environment's Python settings nor site
    return [python, "-I", "-S", "-c", _DIE_WITH_LAUNCHER, str(os.getpid()), *command]


#: the thread-count variables of the BLAS and OpenMP libraries NumPy may use
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def thread_environment(count, environ=None):
    """The thread-count variables for one of ``count`` processes sharing this machine's
    cores: each gets its share (at least 1). Variables already set are left as they are."""
    environ = os.environ if environ is None else environ
    share = str(max(1, (os.cpu_count() or 1) // max(count, 1)))
    return {name: share for name in THREAD_VARIABLES if name not in environ}


def run(processes, script, script_args=(), log_dir=None, out=None, python=None,
        extra_env=None, max_restarts=0, checkpoint_every=None):
    """Start ``processes`` running ``script script_args``; the job's exit status (0 when all
    ended well, else the first failure's, after stopping the rest). Whatever way it ends
    (a failure, an interrupt, an error of its own), no process of the job, nor any process
    one of them started, is left running. The job is a :class:`LocalJob` waited for here."""
    out = out if out is not None else sys.stdout
    job = None
    try:
        with _interrupts_deferred():  # a started job is always recorded, then stopped
            job = LocalJob(processes, script, script_args, log_dir, out, python, extra_env,
                           max_restarts=max_restarts, checkpoint_every=checkpoint_every)
        job.wait()
        return 0
    except JobFailed as failure:
        code = failure.exit_code
        return code if code > 0 else 128 - code
    finally:
        if job is not None:
            with _interrupts_deferred():
                job.stop()


#: a process's last lines kept for :meth:`LocalJob.log_tail`
_TAIL_LINES = 200
#: with restarts and no --checkpoint-every, a server saves every this many rounds
DEFAULT_CHECKPOINT_EVERY = 10


class LocalJob(Job):
    """A job of this machine's process groups, started at once and watched from a thread
    of its own: the call returns while the job runs (a notebook cell can go on), and
    :meth:`status`, :meth:`wait`, :meth:`stop` and :meth:`log_tail` work from any thread.

    ``processes`` are :func:`plan`'s; each is told a status file (``FLUID_NB_STATUS_FILE``)
    in a folder the job owns and removes when it stops. Its lines go to ``out`` (default
    ``sys.stdout``) prefixed with its label, and to ``log_dir`` as :func:`run` says.

    When a process fails, every other is stopped (SIGTERM to its group, SIGKILL after a
    grace) and :meth:`wait` raises :class:`~fluid_nb.distributed.job.JobFailed` naming it;
    except that a server that dies while trainers still train is started again, on the
    same endpoint, up to ``max_restarts`` times: it resumes from the last checkpoint in
    its checkpoint directory (``FLUID_NB_CHECKPOINT_DIR``: ``log_dir/checkpoint.I``, or
    one in the job's own folder), which it writes every ``checkpoint_every`` optimize
    rounds (``FLUID_NB_CHECKPOINT_EVERY``; with restarts and none given,
    ``DEFAULT_CHECKPOINT_EVERY``). A trainer that fails always ends the job.

        job = LocalJob(plan(1, 2)[0], "train.py", out=io.StringIO())
        job.status()            # [ProcessStatus(pserver.0 on 127.0.0.1: running, ...), ...]
        job.wait(timeout=600)   # [0, 0]: the trainers' exit statuses
    """

    def __init__(self, processes, script, script_args=(), log_dir=None, out=None,
                 python=None, extra_env=None, max_restarts=0, checkpoint_every=None):
        if not os.path.isfile(script):
            raise NotFound(expected(script, "the training script", "an existing Python file",
                                    "no such file"))
        if isinstance(max_restarts, bool) or not isinstance(max_restarts, int) \
                or max_restarts < 0:
            raise InvalidArgument(expected("launch", "--max-restarts", "a count >= 0",
                                           repr(max_restarts)))
        if checkpoint_every is not None and (isinstance(checkpoint_every, bool) or not
                                             isinstance(checkpoint_every, int)
                                             or checkpoint_every < 1):
            raise InvalidArgument(expected("launch", "--checkpoint-every",
                                           "a number of rounds >= 1", repr(checkpoint_every)))
        self._planned = list(processes)
        self.processes = [ProcessStatus("pserver" if p.role == "PSERVER" else "trainer",
                                        p.index, p.ip, p.endpoint) for p in self._planned]
        self._command = _command(python or sys.executable, script, list(script_args))
        self._out = out if out is not None else sys.stdout
        self.max_restarts = max_restarts
        self._lock = threading.RLock()     # the records, the logs, the output
        self._stop_lock = threading.Lock()  # one stop at a time
        self._ended = threading.Event()
        self._failure = None
        self._stopped = False
        self._pumps, self._logs = [], {}
        self._tails = {p.label: collections.deque(maxlen=_TAIL_LINES) for p in self._planned}
        self.folder = tempfile.mkdtemp(prefix="fluid_nb-job-")
        if checkpoint_every is None and max_restarts:
            checkpoint_every = DEFAULT_CHECKPOINT_EVERY
        common = dict(os.environ, **thread_environment(len(self._planned)),
                      **(extra_env or {}), PYTHONUNBUFFERED="1")
        self._env = {}
        for p in self._planned:
            env = dict(common, **p.env)
            env[STATUS_FILE_VARIABLE] = self._status_file(p)
            if p.role == "PSERVER" and checkpoint_every is not None:
                folder = os.path.join(log_dir or self.folder, f"checkpoint.{p.index}")
                # a job starts from its startup programs: an earlier job's checkpoint in
                # the same log folder is not this one's (as its logs, it is replaced)
                shutil.rmtree(folder, ignore_errors=True)
                env[CHECKPOINT_DIR_VARIABLE] = folder
                env[CHECKPOINT_EVERY_VARIABLE] = str(checkpoint_every)
            self._env[p.label] = env
        print(f"[launch] {len(self._planned)} processes: "
              + ", ".join(f"{p.label} {p.endpoint}" for p in self._planned),
              file=self._out, flush=True)
        try:
            if log_dir:
                os.makedirs(log_dir, exist_ok=True)
                for p in self._planned:
                    self._logs[p.label] = open(os.path.join(log_dir, p.log_name), "w")
            # the job's own thread starts the processes and outlives them: the kernel
            # signals a child (PR_SET_PDEATHSIG) when the *thread* that started it ends, and
            # the caller's may be a short-lived one (a notebook's)
            started, failure = threading.Event(), []
            self._watcher = threading.Thread(target=self._start_and_watch,
                                             args=(started, failure), daemon=True,
                                             name="fluid_nb-job-watch")
            self._watcher.start()
            started.wait()
            if failure:
                raise failure[0]
        except BaseException:
            self.stop()
            raise

    # --- the interface ----------------------------------------------------------------------
    def status(self):
        with self._lock:
            for p, record in zip(self._planned, self.processes):
                self._refresh(p, record)
            return [ProcessStatus(**record.as_dict()) for record in self.processes]

    def wait(self, timeout=None):
        self._wait_for_end(self._ended, timeout, "LocalJob.wait")
        if self._failure is not None:
            raise self._failure
        return [r.exit_code for r in self.processes if r.role == "trainer"]

    def stop(self):
        self._halt()
        self._ended.set()

    def _halt(self):
        """Stop every process, collect their last lines and reports, remove the job's
        folder (idempotent)."""
        with self._stop_lock:
            with self._lock:
                self._stopped = True
            _stop(self._planned)
            with self._lock:
                for p, record in zip(self._planned, self.processes):
                    if p.popen is not None and record.exit_code is None:
                        record.exit_code = p.popen.poll()
                    if record.state not in ("finished", "failed"):
                        record.state = "stopped"
            for pump in self._pumps:
                pump.join(timeout=_STOP_GRACE)
            with self._lock:
                for p, record in zip(self._planned, self.processes):
                    self._refresh(p, record)  # the last reports, before their folder goes
                for log in self._logs.values():
                    log.close()
                self._logs = {}
            shutil.rmtree(self.folder, ignore_errors=True)

    def log_tail(self, role, index, lines=20):
        label = f"{'pserver' if str(role).lower() == 'pserver' else 'trainer'}.{index}"
        tail = self._tails.get(label)
        if tail is None:
            raise NotFound(expected("LocalJob.log_tail", "process",
                                    "one of " + ", ".join(self._tails), label))
        with self._lock:
            return list(tail)[-lines:] if lines > 0 else []

    # --- the processes ----------------------------------------------------------------------
    def _status_file(self, p):
        return os.path.join(self.folder, f"{p.label}.status.json")

    def _start(self, p):
        p.popen = subprocess.Popen(self._command, env=self._env[p.label],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
        pump = threading.Thread(target=self._pump, args=(p, p.popen.stdout), daemon=True,
                                name=f"fluid_nb-job-{p.label}")
        pump.start()
        self._pumps.append(pump)

    def _pump(self, p, stream):
        prefix = f"[{p.label}] "
        record = self.processes[self._planned.index(p)]
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", "replace")
            if not line.endswith("\n"):
                line += "\n"
            with self._lock:
                if record.state == "starting":
                    record.state = "running"
                self._tails[p.label].append(line.rstrip("\n"))
                self._out.write(prefix + line)
                self._out.flush()
                log = self._logs.get(p.label)
                if log is not None:
                    log.write(line)
                    log.flush()
        stream.close()

    def _refresh(self, p, record):
        """What the process last reported (its state and exit status are the watcher's)."""
        report = _read_report(self._status_file(p))
        if report:
            if record.state == "starting":
                record.state = "running"
            for name in ("steps", "last_loss", "bytes_sent", "bytes_received"):
                if name in report:
                    setattr(record, name, report[name])

    def _say(self, text):
        with self._lock:
            self._out.write(f"[launch] {text}\n")
            self._out.flush()

    def _start_and_watch(self, started, failure):
        """The job's thread: start every process (an error goes to ``failure``), say so
        (``started``), then watch them."""
        try:
            for p in self._planned:
                self._start(p)
        except BaseException as exc:  # noqa: BLE001  (raised by the caller's thread)
            failure.append(exc)
            return
        finally:
            started.set()
        self._watch()

    def _watch(self):
        """Until every process has ended: restart a server that died while trainers train
        (restarts left), else stop the job at the first failure."""
        while not self._ended.is_set():
            failed = []
            with self._lock:
                if self._stopped:
                    return
                for p, record in zip(self._planned, self.processes):
                    if record.state not in ("starting", "running") or p.popen is None:
                        continue
                    code = p.popen.poll()
                    if code is None:
                        continue
                    record.exit_code = code
                    record.state = "finished" if code == 0 else "failed"
                    if code != 0:
                        failed.append((p, record, code))
                running = any(r.state in ("starting", "running", "restarting")
                              for r in self.processes)
            for p, record, code in failed:
                if not self._restartable(record):
                    self._fail(p, record, code)
                    return
            for p, record, code in failed:
                self._restart(p, record, code)
            if not running and not failed:  # all ended well: the job's folder goes
                self._halt()
                self._ended.set()
                return
            time.sleep(0.05)

    def _restartable(self, record):
        trainers_left = any(r.role == "trainer" and r.state in ("starting", "running")
                            for r in self.processes)
        return record.role == "pserver" and record.restarts < self.max_restarts \
            and trainers_left

    def _restart(self, p, record, code):
        """The same server again, on its endpoint, with its checkpoint directory."""
        with self._lock:
            record.state = "restarting"
            record.restarts += 1
        self._say(f"{p.label} exited with status {code}; restarting it on {p.endpoint} "
                  f"(restart {record.restarts} of {self.max_restarts})")
        _stop([p])  # what the dead server started goes with it
        with self._stop_lock, self._lock:
            if self._stopped:
                return
            record.exit_code = None
            self._start(p)
            record.state = "starting"

    def _fail(self, p, record, code):
        self._say(f"{p.label} exited with status {code}; stopping the others")
        self._halt()
        restarts = f" after {record.restarts} restarts" if record.restarts else ""
        self._failure = JobFailed(
            f"launch: {record.label} on {record.node} ({record.endpoint}) exited with status "
            f"{code}{restarts}; the job was stopped", role=record.role, index=record.index,
            node=record.node, exit_code=code, log_tail=self.log_tail(record.role,
                                                                     record.index))
        self._ended.set()


def _read_report(path):
    """A process's status report (:func:`fluid_nb.distributed.status.read_status`), or
    None while it has written none."""
    if not os.path.exists(path):
        return None
    try:
        from .status import read_status
    except ImportError:
        return None
    try:
        return read_status(path)
    except (OSError, ValueError):  # being replaced, or cut short by a kill
        return None


@contextlib.contextmanager
def _interrupts_deferred():
    """Hold a Ctrl-C that arrives inside the block until its end, so that it cannot fall
    between starting a process and recording it, or cut a stop short (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(frame))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if not caught or previous == signal.SIG_IGN:
        return
    if callable(previous):  # Python's own handler raises KeyboardInterrupt
        previous(signal.SIGINT, caught[0])
    else:
        raise KeyboardInterrupt


def live_groups(groups):
    """Those of the process groups ``groups`` that hold a live process (zombies aside)."""
    groups = set(groups)
    if not os.path.isdir("/proc"):  # no process table to read: ask the kernel
        return {pgid for pgid in groups if _signal_group(pgid, 0)}
    live = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:  # it ended meanwhile
            continue
        # the fields after the command's closing parenthesis: state, ppid, pgrp, ...
        state, _, pgrp = stat[stat.rindex(b")") + 2:].split()[:3]
        if int(pgrp) in groups and state not in (b"Z", b"X"):
            live.add(int(pgrp))
    return live


def _signal_group(pgid, signum):
    """Send ``signum`` to group ``pgid``; False when no process of it is there."""
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _wait_groups(groups, seconds):
    """The groups still holding a live process after waiting up to ``seconds``."""
    end = time.monotonic() + seconds
    while True:
        left = live_groups(groups)
        if not left or time.monotonic() >= end:
            return sorted(left)
        time.sleep(0.05)


def _stop(processes):
    """Stop each process's whole group (the process and whatever it started): SIGTERM,
    then SIGKILL to the groups still alive after the grace; reap the processes."""
    started = [p for p in processes if p.popen is not None]
    # a process started with start_new_session leads a group whose id is its pid; the id
    # stays the group's while any member lives, even once the leader has been reaped
    groups = [p.popen.pid for p in started]
    for pgid in groups:
        _signal_group(pgid, signal.SIGTERM)
    left = _wait_groups(groups, _STOP_GRACE)
    for pgid in left:
        _signal_group(pgid, signal.SIGKILL)
    if left:
        _wait_groups(left, _STOP_GRACE)
    for p in started:
        try:
            p.popen.wait(timeout=_STOP_GRACE)
        except subprocess.TimeoutExpired:  # not killable (stopped in the kernel): let it be
            pass
