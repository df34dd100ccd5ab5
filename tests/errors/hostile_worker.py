"""The hostile-input corpus's worker: runs the cases of one family, one request at a time
(a JSON line on stdin naming the case; a JSON line back with what went wrong), and watches
each case as tests/errors/hostile.py describes. Started by the harness as
``python -m tests.errors.hostile_worker MODULE FUNCTION`` with the family's workdir in
``FLUID_NB_CORPUS_WORKDIR``."""
import importlib
import json
import os
import pathlib
import sys
import sysconfig
import time

WORKDIR = pathlib.Path(os.environ["FLUID_NB_CORPUS_WORKDIR"]).resolve()
REPO = pathlib.Path(__file__).resolve().parents[2]
# folders a case may write: the workdir, which holds the build cache and the temporary folder
WRITABLE = (str(WORKDIR), "/dev/null")
# and read: besides those, what any Python program reads to run
READABLE = WRITABLE + tuple(sorted({
    sys.prefix, sys.base_prefix, sys.exec_prefix, str(REPO),
    *(p for p in sysconfig.get_paths().values()),
    "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/proc", "/sys", "/dev", "/opt",
    "/bin", "/sbin", "/run"}))
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
# events that change the file system, and which of their arguments are paths changed (a
# link's target is not: the link is made beside it)
CHANGES = {"os.rename": (0, 1), "os.remove": (0,), "os.mkdir": (0,), "os.rmdir": (0,),
           "os.symlink": (1,), "os.link": (1,), "os.truncate": (0,), "os.chmod": (0,),
           "os.chown": (0,), "os.utime": (0,), "shutil.rmtree": (0,), "shutil.copyfile": (1,),
           "shutil.move": (0, 1), "os.mkfifo": (0,), "os.mknod": (0,)}
STARTS = {"subprocess.Popen": 0, "os.exec": 0, "os.posix_spawn": 0, "os.spawn": 1}


class Watch:
    """What a case did that it must not: collected by an audit hook while ``active``."""

    def __init__(self):
        self.active, self.allowed_programs, self.violations = False, (), []

    def begin(self, allowed_programs):
        self.allowed_programs, self.violations, self.active = tuple(allowed_programs), [], True

    def end(self):
        self.active = False
        return self.violations

    def hook(self, event, args):
        if not self.active:
            return
        self.active = False  # the checks below open nothing, but they must not recurse
        try:
            self._look(event, args)
        except Exception as error:  # a hook that raises would abort the audited call
            self.violations.append(f"the watch failed on {event}: {error!r}")
        finally:
            self.active = True

    def _look(self, event, args):
        if event == "open":
            path, mode, flags = args
            writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or \
                (isinstance(flags, int) and flags & WRITE_FLAGS)
            self._path(path, WRITABLE if writes else READABLE,
                       "wrote" if writes else "read", event)
        elif event in CHANGES:
            for index in CHANGES[event]:
                if index < len(args):
                    self._path(args[index], WRITABLE, "changed", event)
        elif event == "os.system":
            self.violations.append(f"ran a shell command: {args[0]!r:.200}")
        elif event in STARTS:
            program = args[STARTS[event]]
            if isinstance(program, (list, tuple)):
                program = program[0] if program else ""
            name = os.path.basename(os.fsdecode(program)) if program is not None else "?"
            if name not in self.allowed_programs:
                self.violations.append(f"started a program not allowed: {name!r:.200}")

    def _path(self, path, allowed, verb, event):
        if path is None or isinstance(path, int):  # an open file descriptor: nothing new
            return
        path = os.path.realpath(os.path.join(os.getcwd(), os.fsdecode(path)))
        if not any(path == root or path.startswith(root.rstrip("/") + "/") for root in allowed):
            self.violations.append(f"{verb} {path!r:.300} ({event})")


def files_state():
    """The workdir's files (the build cache and the temporary folder aside): a failure must
    leave them as they were."""
    state = {}
    for folder, dirs, files in os.walk(WORKDIR):
        if folder == str(WORKDIR):
            dirs[:] = [name for name in dirs if name not in ("cache", "tmp")]
        for name in dirs + files:
            path = os.path.join(folder, name)
            try:
                info = os.lstat(path)
                state[os.path.relpath(path, WORKDIR)] = (info.st_mode, info.st_size,
                                                         info.st_mtime_ns)
            except OSError:
                pass
    return state


def leftover_processes(deadline_seconds=3.0):
    """Children of this worker still alive after the case (waited for up to the deadline,
    then killed so the next case starts clean)."""
    import psutil
    me = psutil.Process()
    until = time.monotonic() + deadline_seconds
    while True:
        alive = [child for child in me.children(recursive=True)
                 if child.status() != psutil.STATUS_ZOMBIE]
        if not alive or time.monotonic() > until:
            break
        time.sleep(0.05)
    described = [f"{child.pid} {' '.join(child.cmdline())[:120]}" for child in alive]
    for child in alive:
        try:
            child.kill()
        except psutil.Error:
            pass
    for zombie in me.children(recursive=True):
        try:
            os.waitpid(zombie.pid, os.WNOHANG)
        except (ChildProcessError, OSError):
            pass
    return described


def run_case(case, seconds, allowed_programs, watch):
    from tests.errors.corpus import check
    from tests.errors.hostile import executed_marker
    marker = executed_marker(WORKDIR)
    failures = []
    files_before = files_state()
    watch.begin(allowed_programs)
    try:
        outcome = check(case, seconds)
    except AssertionError as error:
        outcome, failures = "failed", [str(error)[:1500]]
    finally:
        violations = watch.end()
    if marker.exists():
        failures.append("code from the input ran: the payload's marker file was created")
        marker.unlink()
    failures += violations[:10]
    left = leftover_processes()
    if left:
        failures.append(f"processes left running: {left}")
    if outcome == "refused":
        after = files_state()
        if after != files_before:
            changed = sorted(set(after.items()) ^ set(files_before.items()))
            failures.append(f"a failure changed files: {changed[:5]}")
    return {"outcome": outcome, "failures": failures}


def main(module_name, function_name):
    # the answers go over a channel of their own: what the cases print goes to stderr
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    for folder in ("cache", "tmp"):
        (WORKDIR / folder).mkdir(parents=True, exist_ok=True)
    os.environ.update(FLUID_NB_CACHE=str(WORKDIR / "cache"), TMPDIR=str(WORKDIR / "tmp"))
    import tempfile
    tempfile.tempdir = None  # read TMPDIR again
    os.chdir(WORKDIR)
    cases = {case.name: case for case in
             getattr(importlib.import_module(module_name), function_name)(WORKDIR)}
    watch = Watch()
    sys.addaudithook(watch.hook)
    for line in sys.stdin:
        request = json.loads(line)
        report = run_case(cases[request["name"]], request["seconds"],
                          request["allowed_programs"], watch)
        answers.write(json.dumps(report) + "\n")
        answers.flush()


if __name__ == "__main__":
    main(*sys.argv[1:3])
