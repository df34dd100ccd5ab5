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
and goes to ``LOG_DIR/serverlog.I`` or ``workerlog.J`` with ``--log-dir``. When one process
fails, the others are stopped (SIGTERM, then SIGKILL) and the launch exits with its status;
it returns when every process has ended. A process also ends if the launcher dies.
"""
import os
import signal
import socket
import subprocess
import sys
import threading
import time

from ..errors import InvalidArgument, NotFound, expected

DEFAULT_START_PORT = 6170
_STOP_GRACE = 5.0


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


def plan(pservers, trainers, ips=None, start_port=None, node_ip=None):
    """The job's processes (all machines), with their environments, and this machine's IP."""
    for what, n in (("--pservers", pservers), ("--trainers", trainers)):
        if not isinstance(n, int) or n < 1:
            raise InvalidArgument(expected("launch", what, "a count >= 1", n))
    ips = [ip.strip() for ip in ips.split(",") if ip.strip()] if isinstance(ips, str) \
        else list(ips or [])
    if not ips:
        ips = ["127.0.0.1"]
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
        base = DEFAULT_START_PORT if start_port is None else int(start_port)
        ports = [base + k for k in range(pservers + trainers)]
    if one_machine:
        for p, port in zip(servers + workers, ports):
            p.port = port
    else:  # the same numbering on every machine: port k of the machine's k-th process
        for group, offset in ((servers, 0), (workers, pservers)):
            for p in group:
                p.port = ports[offset + p.index // len(ips)]
    server_eps = ",".join(p.endpoint for p in servers)
    common = {
        "PADDLE_PSERVERS_IP_PORT_LIST": server_eps,
        "PADDLE_PSERVER_IPS": ",".join(p.ip for p in servers),
        "PADDLE_TRAINERS_NUM": str(trainers),
        "PADDLE_TRAINERS": str(trainers),
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
    return [p for p in servers + workers if p.ip == node_ip], node_ip


def _die_with_parent():
    """In the child before it runs the script: end it when the launcher dies (Linux)."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _pump(process, stream, out, log, lock):
    prefix = f"[{process.label}] "
    for raw in iter(stream.readline, b""):
        line = raw.decode("utf-8", "replace")
        if not line.endswith("\n"):
            line += "\n"
        with lock:
            out.write(prefix + line)
            out.flush()
            if log is not None:
                log.write(line)
                log.flush()
    stream.close()


#: the thread-count variables of the BLAS and OpenMP libraries NumPy may use
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def thread_environment(count, environ=None):
    """The thread-count variables for one of ``count`` processes sharing this machine's
    cores: each gets its share (at least 1). Variables already set are left as they are."""
    environ = os.environ if environ is None else environ
    share = str(max(1, (os.cpu_count() or 1) // max(count, 1)))
    return {name: share for name in THREAD_VARIABLES if name not in environ}


def run(processes, script, script_args=(), log_dir=None, out=None, python=None,
        extra_env=None):
    """Start ``processes`` running ``script script_args``; the job's exit status (0 when all
    ended well, else the first failure's, after stopping the rest)."""
    out = out if out is not None else sys.stdout
    if not os.path.isfile(script):
        raise NotFound(expected(script, "the training script", "an existing Python file",
                                "no such file"))
    print(f"[launch] {len(processes)} processes: "
          + ", ".join(f"{p.label} {p.endpoint}" for p in processes), file=out, flush=True)
    if log_dir:
        os.makedirs(log_dir, exist_ok=True)
    lock = threading.Lock()
    pumps, logs = [], []
    try:
        for p in processes:
            env = dict(os.environ, **thread_environment(len(processes)), **(extra_env or {}),
                       **p.env, PYTHONUNBUFFERED="1")
            p.popen = subprocess.Popen(
                [python or sys.executable, "-u", script, *script_args], env=env,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
            log = open(os.path.join(log_dir, p.log_name), "w") if log_dir else None
            logs.append(log)
            pump = threading.Thread(target=_pump, args=(p, p.popen.stdout, out, log, lock),
                                    daemon=True)
            pump.start()
            pumps.append(pump)
        status = _watch(processes, out, lock)
    finally:
        _stop(processes)
        for pump in pumps:
            pump.join(timeout=_STOP_GRACE)
        for log in logs:
            if log is not None:
                log.close()
    return status


def _watch(processes, out, lock):
    """Wait for every process; on the first failure stop the others. The job's status."""
    while True:
        running = False
        for p in processes:
            code = p.popen.poll()
            if code is None:
                running = True
            elif code != 0:
                with lock:
                    out.write(f"[launch] {p.label} exited with status {code}; stopping the "
                              f"others\n")
                    out.flush()
                _stop(processes)
                return code if code > 0 else 128 - code
        if not running:
            return 0
        time.sleep(0.05)


def _stop(processes):
    """SIGTERM to each process still running, SIGKILL to those left after the grace."""
    alive = [p for p in processes if p.popen is not None and p.popen.poll() is None]
    for p in alive:
        p.popen.terminate()
    end = time.monotonic() + _STOP_GRACE
    for p in alive:
        try:
            p.popen.wait(timeout=max(end - time.monotonic(), 0.01))
        except subprocess.TimeoutExpired:
            p.popen.kill()
            p.popen.wait()
