"""A parameter-server job seen from where it was started: its processes, their state and
what they report, however they were placed (this machine's process groups, or a Ray
cluster's actors).

Each process of a job is told a status file through ``FLUID_NB_STATUS_FILE`` and reports
into it (:mod:`.status`): steps done, the last loss, bytes sent to and received from each
server. :meth:`Job.status` joins those reports to what the launcher knows (node, state, exit
status), one :class:`ProcessStatus` per process, which ``DistributedView`` shows as the job
trains.

Environment a launcher sets beside Fluid's ``PADDLE_*`` variables:

==============================  ========================================================
``FLUID_NB_STATUS_FILE``        where the process writes its status (JSON, replaced whole)
``FLUID_NB_CHECKPOINT_DIR``     a server's checkpoint directory (its shard of the
                                parameters and optimizer state); a server that finds a
                                whole checkpoint there at start resumes from it
``FLUID_NB_CHECKPOINT_EVERY``   a server saves every K optimize rounds (unset: only on
                                ``checkpoint_notify``)
==============================  ========================================================
"""
import time

from ..errors import ExecutionTimeout, FluidError, expected

#: the states a process of a job goes through
STATES = ("starting", "running", "restarting", "finished", "failed", "stopped")

STATUS_FILE_VARIABLE = "FLUID_NB_STATUS_FILE"
CHECKPOINT_DIR_VARIABLE = "FLUID_NB_CHECKPOINT_DIR"
CHECKPOINT_EVERY_VARIABLE = "FLUID_NB_CHECKPOINT_EVERY"


class JobFailed(FluidError, RuntimeError):
    """A process of a job died (killed, its node lost, an exception): the job was stopped.
    ``role``, ``index`` and ``node`` name the process, ``exit_code`` is its status (None
    when the process vanished with its node) and ``log_tail`` its last lines."""

    def __init__(self, message, role=None, index=None, node=None, exit_code=None,
                 log_tail=()):
        super().__init__(message)
        self.role, self.index, self.node = role, index, node
        self.exit_code, self.log_tail = exit_code, tuple(log_tail)


class ProcessStatus:
    """One process of a job as :meth:`Job.status` sees it. ``bytes_sent`` and
    ``bytes_received`` map a server's endpoint to the bytes this process sent it and got
    from it (a server's own maps are by trainer endpoint)."""

    __slots__ = ("role", "index", "node", "endpoint", "state", "exit_code", "steps",
                 "last_loss", "bytes_sent", "bytes_received", "restarts")

    def __init__(self, role, index, node, endpoint, state="starting", exit_code=None,
                 steps=0, last_loss=None, bytes_sent=None, bytes_received=None, restarts=0):
        self.role, self.index, self.node, self.endpoint = role, index, node, endpoint
        self.state, self.exit_code, self.steps, self.last_loss = state, exit_code, steps, last_loss
        self.bytes_sent = dict(bytes_sent or {})
        self.bytes_received = dict(bytes_received or {})
        self.restarts = restarts

    @property
    def label(self):
        return f"{self.role}.{self.index}"

    def as_dict(self):
        return {name: getattr(self, name) for name in self.__slots__}

    def __repr__(self):
        return (f"ProcessStatus({self.label} on {self.node}: {self.state}, "
                f"{self.steps} steps, loss {self.last_loss})")


class Job:
    """The interface of a started job (local process groups or Ray actors).

    ``processes``: the job's :class:`ProcessStatus` records in launch order (servers, then
    trainers). Implementations keep them current."""

    processes = ()

    def status(self):
        """Every process's :class:`ProcessStatus`, refreshed from its status report."""
        raise NotImplementedError

    def wait(self, timeout=None):
        """Block until the job ends; each trainer's exit status (a list). Raises
        :class:`JobFailed` when a process died, after the job was stopped, and
        ``ExecutionTimeout`` when ``timeout`` seconds pass first (the job keeps running)."""
        raise NotImplementedError

    def stop(self):
        """Stop every process; nothing of the job is left running. Idempotent."""
        raise NotImplementedError

    def log_tail(self, role, index, lines=20):
        """The last ``lines`` lines process ``role.index`` printed."""
        raise NotImplementedError

    def _wait_for_end(self, ended, timeout, where):
        """Block until the event ``ended`` is set, in short waits (an interrupt in the main
        thread is taken between them); ``ExecutionTimeout`` naming the processes and their
        states when ``timeout`` seconds pass first."""
        end = None if timeout is None else time.monotonic() + timeout
        while not ended.wait(0.2 if end is None else max(min(0.2, end - time.monotonic()), 0)):
            if end is not None and time.monotonic() >= end:
                raise ExecutionTimeout(expected(
                    where, "the job to end", f"within {timeout:g} s", "it still runs: "
                    + ", ".join(f"{p.label} {p.state}" for p in self.status())))

    @property
    def done(self):
        """True once every process has ended (or the job was stopped)."""
        return all(p.state in ("finished", "failed", "stopped") for p in self.processes)
