"""What a process of a job reports while it trains: its status file.

A launcher gives each process a file through ``FLUID_NB_STATUS_FILE`` (:mod:`.job`). In
such a process one :class:`Reporter` keeps

- ``steps``: a trainer's steps done, a server's updates applied (below);
- ``last_loss``: a trainer's loss of its last step (a float, or None);
- ``bytes_sent`` / ``bytes_received``: a trainer's bytes to and from each server endpoint
  (requests and replies that were answered); a server's to and from each trainer (keyed by
  the trainer's endpoint from ``PADDLE_TRAINER_ENDPOINTS``, else ``trainer <id>``);
- ``updated``: when it was written (seconds since the epoch);

and writes them as one JSON object, replaced whole (a temporary file, then ``os.replace``,
so a reader never sees half of it), at most every :data:`INTERVAL` seconds while events
come, and once more when the process exits. :func:`read_status` is the launchers' side.

What counts as a step:

- a trainer: one ``Executor.run`` of a program that holds a ``send`` op (the trainer
  program the transpiler makes). The startup program (its ``recv`` ops fetch the initial
  parameters), a program cloned for testing and any other run are not steps. The last loss
  is that run's first fetched value when it holds exactly one element;
- a server: one update it applied. In sync mode a round (every trainer's gradients, once
  its optimize blocks have run); in async mode each value that ran a block (a gradient its
  optimize block, a trainer's step counter the learning-rate schedule's).

Without the variable nothing is set up: the executor's and the RPC code's hooks are one
``is not None`` test of a module attribute each (:data:`reporter`).
"""
import atexit
import json
import math
import os
import threading
import time
import weakref

from ..exec import executor as _executor
from .job import STATUS_FILE_VARIABLE

#: the least time between two writes of the status file (seconds); the last state is also
#: written at exit
INTERVAL = 0.25

#: the fields of a status report
FIELDS = ("steps", "last_loss", "bytes_sent", "bytes_received", "updated")

#: this process's reporter, or None (no status file: nothing is counted)
reporter = None


class Reporter:
    """Counts one process's progress and writes it to ``path`` (see the module docstring).
    Thread-safe: the executor's thread, the RPC client's and the server's threads report."""

    def __init__(self, path, trainer_endpoints=()):
        self.path = os.fspath(path)
        self.steps = 0
        self.last_loss = None
        self.bytes_sent = {}
        self.bytes_received = {}
        #: a server's names for its trainers: trainer id -> endpoint
        self._trainers = dict(enumerate(trainer_endpoints))
        self._lock = threading.Lock()
        self._written = -math.inf  # time.monotonic() of the last write
        #: run plan -> whether a run of it is a step (its program holds a send op)
        self._is_step = weakref.WeakKeyDictionary()

    # --- events ---------------------------------------------------------------------------
    def ran(self, plan, fetched):
        """The executor ran ``plan`` (a RunPlan) and fetched ``fetched``."""
        is_step = self._is_step.get(plan)
        if is_step is None:
            is_step = self._is_step[plan] = any(
                op.type == "send" for op in plan.program.global_block().ops)
        if not is_step:
            return
        loss = _one_value(fetched[0]) if fetched else None
        with self._lock:
            self.steps += 1
            self.last_loss = loss
            self._write_if_due()

    def exchanged(self, endpoint, sent, received):
        """A trainer's call to server ``endpoint`` was answered: ``sent`` bytes went,
        ``received`` came back."""
        with self._lock:
            self._add(endpoint, sent, received)
            self._write_if_due()

    def served(self, trainer_id, received, sent):
        """A server answered trainer ``trainer_id``'s call of ``received`` bytes with
        ``sent`` bytes."""
        peer = self._trainers.get(trainer_id, f"trainer {trainer_id}")
        with self._lock:
            self._add(peer, sent, received)
            self._write_if_due()

    def updated(self):
        """A server applied an update (a sync round, or an async gradient)."""
        with self._lock:
            self.steps += 1
            self._write_if_due()

    def _add(self, peer, sent, received):
        self.bytes_sent[peer] = self.bytes_sent.get(peer, 0) + sent
        self.bytes_received[peer] = self.bytes_received.get(peer, 0) + received

    # --- the file -------------------------------------------------------------------------
    def snapshot(self):
        """The report as it would be written now (a dict of :data:`FIELDS`)."""
        with self._lock:
            return self._report()

    def _report(self):
        return {"steps": self.steps, "last_loss": self.last_loss,
                "bytes_sent": dict(self.bytes_sent),
                "bytes_received": dict(self.bytes_received), "updated": time.time()}

    def _write_if_due(self):
        if time.monotonic() - self._written >= INTERVAL:
            self._write()

    def write(self):
        """Write the report now (what happens at exit)."""
        with self._lock:
            self._write()

    def _write(self):
        self._written = time.monotonic()
        temporary = f"{self.path}.{os.getpid()}.tmp"
        try:
            with open(temporary, "w") as f:
                json.dump(self._report(), f)
            os.replace(temporary, self.path)
        except OSError:
            # the report is for watching the job: a folder gone or a full disk must not
            # stop the training it describes (the next write tries again)
            pass


def _one_value(value):
    """``value`` (an array or a LoDTensor) as a float when it holds one element, else None."""
    array = getattr(value, "array", value)
    try:
        if array is None or array.size != 1:
            return None
        return float(array.reshape(-1)[0])
    except (AttributeError, TypeError, ValueError):
        return None


def start(path, trainer_endpoints=None):
    """Report this process's progress into ``path`` from now on (and at exit); the reporter.
    What importing this module does when ``FLUID_NB_STATUS_FILE`` is set; a launcher that
    runs a role inside a process it keeps may call it itself. A second call returns the
    reporter already started."""
    global reporter
    if reporter is not None:
        return reporter
    if trainer_endpoints is None:
        listed = os.environ.get("PADDLE_TRAINER_ENDPOINTS", "")
        trainer_endpoints = [ep for ep in listed.split(",") if ep]
    started = Reporter(path, trainer_endpoints)
    reporter = started
    _executor.run_reporter = started  # the run path's hook (the executor imports nothing here)
    atexit.register(started.write)
    return started


def read_status(path):
    """The report in ``path`` as a dict (:data:`FIELDS`), or None when there is none yet or
    what is there is not a whole report (never raises for a file's content)."""
    try:
        with open(path) as f:
            report = json.load(f)
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not isinstance(report, dict) or any(field not in report for field in FIELDS):
        return None
    steps, loss = report["steps"], report["last_loss"]
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        return None
    if loss is not None and (isinstance(loss, bool) or not isinstance(loss, (int, float))):
        return None
    for field in ("bytes_sent", "bytes_received"):
        counts = report[field]
        if not isinstance(counts, dict) or not all(
                isinstance(n, int) and not isinstance(n, bool) for n in counts.values()):
            return None
    if not isinstance(report["updated"], (int, float)):
        return None
    return {field: report[field] for field in FIELDS}


if os.environ.get(STATUS_FILE_VARIABLE):
    start(os.environ[STATUS_FILE_VARIABLE])
