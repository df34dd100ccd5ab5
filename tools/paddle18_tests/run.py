"""Run Paddle 1.8's own unit tests against fluid_nb and tabulate what passes.

    python tools/paddle18_tests/run.py UNITTESTS WORK framework
    python tools/paddle18_tests/run.py UNITTESTS WORK ops [--jobs 2]
    python tools/paddle18_tests/run.py UNITTESTS WORK test_cond.py test_prune.py

UNITTESTS is ``python/paddle/fluid/tests/unittests`` of a Paddle v1.8.x source tree. The
files are copied to WORK/unittests (never changed in place), with a conftest that maps
``paddle.fluid`` to fluid_nb (paddle_alias.py) and, for the op tests, this folder's
op_test.py in place of Paddle's (which needs Paddle's C++ core; the original is kept as
op_test_paddle.py). Each group of files runs in its own pytest process under a time limit;
results land in WORK/results/<group>/ as JUnit XML, and the table counts each test once:

    passed      the test passed
    wrong       an assertion failed (a value, a shape, an op list)
    error       any other exception
    arg-check   a failing test that checks errors (assertRaises, or error in its name)
    dygraph     needs Fluid's imperative mode, which fluid_nb does not build
    download    needs a dataset download (no network)

The last two are reported apart: the rate is of the static-graph tests that ran.
"""
import argparse
import ast
import collections
import concurrent.futures
import os
import pathlib
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

HERE = pathlib.Path(__file__).resolve().parent
KINDS = ("passed", "wrong", "error", "arg-check", "dygraph", "download")
ERROR_NAME = re.compile(r"error|exception|raise|check_type|input_type|dtype_check", re.I)


def prepare(unittests, work):
    folder = work / "unittests"
    if not folder.exists():
        shutil.copytree(unittests, folder)
        (folder / "__init__.py").unlink(missing_ok=True)  # top-level modules, as Paddle's CI
        if (folder / "op_test.py").exists():
            (folder / "op_test.py").rename(folder / "op_test_paddle.py")
        shutil.copy(HERE / "op_test.py", folder / "op_test.py")
    conftest = (HERE / "conftest_template.py").read_text().format(tools=str(HERE))
    (folder / "conftest.py").write_text(conftest)
    return folder


def files_of(folder, what):
    if what == ["framework"]:
        return [line.strip() for line in (HERE / "framework_tests.txt").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    if what == ["ops"]:
        found = {p.name for p in folder.glob("test_*_op.py")}
        for path in folder.glob("test_*.py"):
            text = path.read_text(errors="replace")
            if "from op_test import" in text or "import op_test" in text:
                found.add(path.name)
        return sorted(found)
    return what


def run_group(folder, files, results, name, seconds_per_file):
    """One pytest process for ``files``; on a time-out, each file alone."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               "--continue-on-collection-errors"]
    try:
        subprocess.run(command + files + [f"--junitxml={results / (name + '.xml')}"],
                       cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=seconds_per_file * len(files))
    except subprocess.TimeoutExpired:
        (results / (name + ".xml")).unlink(missing_ok=True)
        for file in files:
            try:
                subprocess.run(command + [file, f"--junitxml={results / (file + '.xml')}"],
                               cwd=folder, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=seconds_per_file)
            except subprocess.TimeoutExpired:
                print(f"time-out: {file}", file=sys.stderr)


_methods_cache = {}


def _checks_errors(folder, file, cls, name):
    if ERROR_NAME.search(cls) or ERROR_NAME.search(name):
        return True
    if file not in _methods_cache:
        classes = {}
        try:
            for node in ast.parse((folder / file).read_text()).body:
                if isinstance(node, ast.ClassDef):
                    bases = [getattr(b, "id", getattr(b, "attr", "")) for b in node.bases]
                    classes[node.name] = (bases, {f.name: "assertRaises" in ast.unparse(f)
                                                  for f in node.body
                                                  if isinstance(f, ast.FunctionDef)})
        except (OSError, SyntaxError):
            pass
        _methods_cache[file] = classes
    classes, seen = _methods_cache[file], set()
    while cls in classes and cls not in seen:
        seen.add(cls)
        bases, methods = classes[cls]
        if name in methods:
            return methods[name]
        cls = bases[0] if bases else ""
    return False


def kind_of(folder, testcase):
    if testcase.find("skipped") is not None:
        return None
    bad = testcase.find("failure")
    bad = bad if bad is not None else testcase.find("error")
    if bad is None:
        return "passed"
    text = (bad.get("message") or "") + (bad.text or "")
    if "imperative (dygraph) mode" in text:
        return "dygraph"
    if "DownloadFailed" in text:
        return "download"
    classname = testcase.get("classname", "")
    file = classname.split(".")[0] + ".py"
    cls = classname.split(".")[-1] if "." in classname else ""
    if cls and _checks_errors(folder, file, cls, testcase.get("name", "")):
        return "arg-check"
    message = bad.get("message") or ""
    return "wrong" if "AssertionError" in message[:40] else "error"


def tabulate(folder, results, verbose):
    per_file = collections.defaultdict(collections.Counter)
    for path in sorted(results.glob("*.xml")):
        for testcase in ET.parse(path).getroot().iter("testcase"):
            kind = kind_of(folder, testcase)
            if kind:
                classname = testcase.get("classname", "")
                file = (classname or testcase.get("name", "")).split(".")[0] + ".py"
                per_file[file][kind] += 1
    total = collections.Counter()
    for file in sorted(per_file):
        total.update(per_file[file])
        if verbose:
            print(f"{file:48s} " + " ".join(f"{k} {per_file[file][k]:4d}" for k in KINDS))
    ran = sum(total[k] for k in ("passed", "wrong", "error", "arg-check"))
    print("| static tests that ran | passed | wrong | errors | arg-check | dygraph | download |")
    print(f"| {ran} | {total['passed']} ({100 * total['passed'] / max(ran, 1):.1f}%) | "
          f"{total['wrong']} | {total['error']} | {total['arg-check']} | {total['dygraph']} | "
          f"{total['download']} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("unittests", type=pathlib.Path)
    parser.add_argument("work", type=pathlib.Path)
    parser.add_argument("what", nargs="+", help="framework, ops, or test files")
    parser.add_argument("--group", type=int, default=8, help="files per pytest process")
    parser.add_argument("--seconds-per-file", type=int, default=300)
    parser.add_argument("--jobs", type=int, default=1, help="pytest processes at a time")
    parser.add_argument("-v", "--verbose", action="store_true", help="a row per file")
    args = parser.parse_args()
    folder = prepare(args.unittests.resolve(), args.work.resolve())
    files = [f for f in files_of(folder, args.what) if (folder / f).exists()]
    label = args.what[0] if args.what in (["framework"], ["ops"]) else "files"
    results = args.work.resolve() / "results" / label
    shutil.rmtree(results, ignore_errors=True)
    results.mkdir(parents=True)
    groups = [(files[start:start + args.group], f"group_{start // args.group:03d}")
              for start in range(0, len(files), args.group)]
    # each group is its own pytest process: ``--jobs`` of them run side by side
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        list(pool.map(lambda g: run_group(folder, g[0], results, g[1], args.seconds_per_file),
                      groups))
    tabulate(folder, results, args.verbose)


if __name__ == "__main__":
    main()
