"""The hostile corpus's harness sees what it promises to see: a case that writes outside its
folder, runs a shell, starts a program it may not, leaves a process, crashes the worker,
runs a payload, hangs, changes files and then refuses, or raises an untyped error fails,
with the reason named; a typed refusal that touches nothing passes."""
import os
import pathlib
import signal
import subprocess
import time

import pytest

from fluid_nb.errors import InvalidArgument
from tests.errors.corpus import Case
from tests.errors.hostile import _Worker, executed_marker

OUTSIDE = pathlib.Path.home() / ".fluid_nb-corpus-harness-probe"


def _refuse():
    raise InvalidArgument("probe: input expected good, but received bad")


def _then_refuse(action):
    def act():
        action()
        _refuse()
    return act


def misbehaving_cases(workdir):
    def write_outside():
        with open(OUTSIDE, "w") as file:
            file.write("x")

    def read_outside():
        with open("/root/.bash_history" if os.path.exists("/root/.bash_history")
                  else pathlib.Path.home() / ".profile", "rb"):
            pass
    return [
        Case("harness", "refuses-cleanly", act=_refuse),
        Case("harness", "accepts-valid-input", act=lambda: 1, must_fail=False),
        Case("harness", "writes-outside", act=_then_refuse(write_outside)),
        Case("harness", "reads-outside", act=_then_refuse(read_outside)),
        Case("harness", "runs-a-shell", act=_then_refuse(lambda: os.system("true"))),
        Case("harness", "starts-a-program", act=_then_refuse(
            lambda: subprocess.run(["true"], check=False))),
        Case("harness", "leaves-a-process", act=_then_refuse(
            lambda: subprocess.Popen(["sleep", "30"]))),
        Case("harness", "crashes", act=lambda: os.kill(os.getpid(), signal.SIGSEGV)),
        Case("harness", "runs-a-payload", act=_then_refuse(
            lambda: executed_marker(workdir).write_text("ran"))),
        Case("harness", "hangs", act=lambda: time.sleep(60)),
        Case("harness", "changes-files-then-refuses", act=_then_refuse(
            lambda: (workdir / "left-behind.part").write_text("half"))),
        Case("harness", "raises-untyped", act=lambda: {}["missing"]),
    ]


EXPECTED = {
    "refuses-cleanly": None, "accepts-valid-input": None,
    "writes-outside": "wrote", "reads-outside": "read", "runs-a-shell": "shell command",
    "starts-a-program": "not allowed: 'true'", "leaves-a-process": "processes left running",
    "crashes": "SIGSEGV", "runs-a-payload": "marker", "hangs": "hang",
    "changes-files-then-refuses": "changed files", "raises-untyped": "untyped KeyError",
}


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    yield lambda: _Worker.for_family((__name__, "misbehaving_cases"), tmp_path_factory)
    if _Worker.current is not None:
        _Worker.current.stop()
    OUTSIDE.unlink(missing_ok=True)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_harness_names_what_a_case_did_wrong(worker, name):
    report = worker().run(name, seconds=1.0, allowed_programs=("sleep",))
    if EXPECTED[name] is None:
        assert report["failures"] == []
    else:
        assert any(EXPECTED[name] in failure for failure in report["failures"]), report
