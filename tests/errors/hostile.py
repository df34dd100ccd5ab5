"""The hostile-input corpus's harness: the first-contact rule (tests/errors/corpus.py), run
where a hostile input can do its worst, and watched for what it must never do.

A family of cases is a function ``cases(workdir) -> [Case]`` in a test module, turned into a
parametrized test by :func:`family_test`. The parent process builds the list once for the
test ids; a worker process of its own builds it again and runs each case there, so a case
that crashes the interpreter (SIGSEGV, SIGBUS from a corrupt library) or hangs past every
limit fails alone and the next case gets a fresh worker. Around each case the worker checks,
besides the corpus rule (a typed error that says what was expected, with ``state()`` as it
was, or valid input handled):

- nothing executed: the file :func:`executed_marker` never appears (every payload a family
  plants tries to create exactly that file), and no program starts but the ones the family
  allows (a compiler, say);
- nothing outside the allowed folders read or written: an audit hook sees every file the
  interpreter opens, renames, removes or creates; writes may go to the workdir only (the
  worker's temporary folder and the build cache are inside it), reads also to the Python
  installation, the repository and the system's folders;
- no process left behind: the worker has no live child after the case;
- files as they were after a refusal: the workdir (its cache and temporary folders aside)
  holds the same files, with the same sizes and times.
"""
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile

import pytest

from tests.interrupts import ctrl_c_as_in_a_terminal

REPO = pathlib.Path(__file__).resolve().parents[2]
CASE_SECONDS = 10.0
# beyond the case's own limit (which the worker enforces), the parent waits this long before
# it takes the worker for hung and kills it
WORKER_GRACE_SECONDS = 30.0


def executed_marker(workdir):
    """The file a payload creates if it ever runs: proof that code from the input executed."""
    return pathlib.Path(workdir) / "EXECUTED"


def family_test(cases, seconds=CASE_SECONDS, allowed_programs=()):
    """A pytest test running each case of ``cases(workdir)`` in an isolated worker.
    ``allowed_programs``: basenames of the programs the cases may start (``"c++"``)."""
    with tempfile.TemporaryDirectory(prefix="fluid_nb-corpus-") as listing:
        names = [case.name for case in cases(pathlib.Path(listing))]
    duplicated = sorted({name for name in names if names.count(name) > 1})
    assert not duplicated, f"{cases.__module__}: case names used twice: {duplicated[:5]}"
    family = (cases.__module__, cases.__name__)

    @pytest.mark.parametrize("name", names)
    def test_hostile_case(name, tmp_path_factory):
        worker = _Worker.for_family(family, tmp_path_factory)
        report = worker.run(name, seconds, allowed_programs)
        assert not report["failures"], f"{name}: " + "; ".join(report["failures"])
    return test_hostile_case


class _Worker:
    """One worker process per family, replaced when it dies or hangs."""
    current = None

    @classmethod
    def for_family(cls, family, tmp_path_factory):
        if cls.current is not None and (cls.current.family != family or not cls.current.alive()):
            cls.current.stop()
            cls.current = None
        if cls.current is None:
            cls.current = cls(family, tmp_path_factory.mktemp("hostile"))
        return cls.current

    def __init__(self, family, workdir):
        self.family, self.workdir = family, workdir
        self.log = open(workdir.parent / f"{workdir.name}.worker.log", "w+b")
        env = dict(os.environ, FLUID_NB_CORPUS_WORKDIR=str(workdir),
                   PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
        # the worker takes Ctrl-C as a terminal's job does, for the cases that press it
        with ctrl_c_as_in_a_terminal():
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tests.errors.hostile_worker", *family],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, env=env,
                cwd=str(REPO), start_new_session=True)

    def alive(self):
        return self.process.poll() is None

    def run(self, name, seconds, allowed_programs):
        request = {"name": name, "seconds": seconds, "allowed_programs": list(allowed_programs)}
        try:
            self.process.stdin.write((json.dumps(request) + "\n").encode())
            self.process.stdin.flush()
        except OSError:
            return self._died("before the case started")
        import selectors
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            if not selector.select(timeout=seconds + WORKER_GRACE_SECONDS):
                self.stop()
                return {"failures": [f"hang: no answer within {seconds + WORKER_GRACE_SECONDS} s "
                                     "(the worker was killed)"]}
        line = self.process.stdout.readline()
        if not line:
            return self._died("during the case")
        return json.loads(line)

    def _died(self, when):
        code = self.process.wait(timeout=30)
        how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
        self.log.seek(0)
        tail = self.log.read().decode(errors="replace")[-1500:]
        self.stop()
        return {"failures": [f"crash: the worker died {when} ({how}); its last words: {tail}"]}

    def stop(self):
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process.wait(timeout=30)
        for stream in (self.process.stdin, self.process.stdout):
            try:
                stream.close()
            except OSError:
                pass
        self.log.close()
        shutil.rmtree(self.workdir, ignore_errors=True)
        if _Worker.current is self:
            _Worker.current = None
