"""Real processes for the distributed tests: servers and trainers on localhost ports chosen
free at run time, each with a time limit, and none left behind (``Job`` kills what remains
when the test ends, whatever happened)."""
import os
import pathlib
import signal
import subprocess
import sys
import time

from fluid_nb.distributed.launcher import free_ports, thread_environment

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
PROGRAMS = HERE / "runtime_programs.py"


def children_of(pid):
    """The pids of process ``pid``'s children, whichever of its threads started them (the
    kernel lists a child under the thread that forked it)."""
    found = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            found += [int(c) for c in f.read().split()]
    return found


def free_endpoints(count):
    return [f"127.0.0.1:{port}" for port in free_ports("127.0.0.1", count)]


class Job:
    """Processes started for one test; ``with Job(tmp_path) as job:`` kills the survivors
    on the way out and checks that none is left."""

    def __init__(self, folder, env=None):
        self.folder = pathlib.Path(folder)
        # the processes share the machine's cores as fluid-nb launch would share them
        self.env = dict(os.environ, PYTHONUNBUFFERED="1", **thread_environment(4),
                        **(env or {}))
        self.env["PYTHONPATH"] = os.pathsep.join(
            [str(REPO)] + [p for p in self.env.get("PYTHONPATH", "").split(os.pathsep) if p])
        self.procs = {}

    def start(self, label, args, env=None):
        out = open(self.folder / f"{label}.log", "wb")
        proc = subprocess.Popen([sys.executable, "-u", *map(str, args)],
                                env=dict(self.env, **(env or {})), stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=str(self.folder))
        out.close()
        self.procs[label] = proc
        return proc

    def output(self, label):
        return (self.folder / f"{label}.log").read_text(errors="replace")

    def wait_for_line(self, label, text, timeout):
        """Block until ``label``'s output holds ``text`` (or fail after ``timeout`` s)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if text in self.output(label):
                return
            if self.procs[label].poll() is not None and text not in self.output(label):
                raise AssertionError(f"{label} ended without printing {text!r}:\n"
                                     + self.output(label))
            time.sleep(0.05)
        raise AssertionError(f"{label} did not print {text!r} within {timeout} s:\n"
                             + self.output(label))

    def wait(self, timeout):
        """Every process's exit status once all have ended; fails (after killing them) if
        any is still running after ``timeout`` s."""
        end = time.monotonic() + timeout
        for label, proc in self.procs.items():
            try:
                proc.wait(timeout=max(end - time.monotonic(), 0.01))
            except subprocess.TimeoutExpired:
                self.kill()
                raise AssertionError(f"{label} still running after {timeout} s:\n"
                                     + "\n".join(f"--- {k}:\n{self.output(k)}"
                                                 for k in self.procs))
        return {label: proc.returncode for label, proc in self.procs.items()}

    def kill(self, label=None):
        for name, proc in self.procs.items():
            if (label is None or name == label) and proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()
        assert all(p.poll() is not None for p in self.procs.values())
