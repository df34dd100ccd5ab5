"""Installing from a clone (`pip install -e .`, whose build hook runs npm in labextension/)
leaves the clone as it was: npm installs what package-lock.json pins without rewriting it.
And the plain install brings every package the notebooks import."""
import ast
import json
import os
import pathlib
import shutil
import subprocess
import sys
from importlib import metadata

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = pathlib.Path(__file__).resolve().parents[2]
FRONT_END = ROOT / "labextension"


def _build_kwargs():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    with open(ROOT / "pyproject.toml", "rb") as f:
        hook = tomllib.load(f)["tool"]["hatch"]["build"]["hooks"]["jupyter-builder"]
    return {kind: hook[kind] for kind in ("build-kwargs", "editable-build-kwargs")}


def _committed_lock():
    """package-lock.json as committed (the working copy may hold an earlier install's edits)."""
    try:
        return subprocess.run(["git", "show", "HEAD:labextension/package-lock.json"], cwd=ROOT,
                              capture_output=True, check=True, timeout=60).stdout
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: an unpacked source
        return (FRONT_END / "package-lock.json").read_bytes()


@pytest.mark.parametrize("kind", ["build-kwargs", "editable-build-kwargs"])
def test_the_builds_npm_install_leaves_package_lock_as_committed(kind, tmp_path):
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed (pip install -e . needs it to build the front end)")
    npm = _build_kwargs()[kind]["npm"]
    lock = _committed_lock()
    shutil.copy(FRONT_END / "package.json", tmp_path / "package.json")
    (tmp_path / "package-lock.json").write_bytes(lock)
    # the same install the build runs, resolved against the lock only (no node_modules)
    done = subprocess.run([*npm, "install", "--package-lock-only", "--ignore-scripts",
                           "--no-audit", "--no-fund"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, npm_config_loglevel="error"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "package-lock.json").read_bytes() == lock, \
        f"`{' '.join(npm)} install` rewrote package-lock.json: a fresh install dirties the clone"


def _imported_modules(notebook):
    """The top-level modules a notebook's code cells import."""
    modules = set()
    for cell in json.loads(notebook.read_text())["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = "\n".join(line for line in "".join(cell["source"]).splitlines()
                           if not line.lstrip().startswith(("%", "!")))
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                modules.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                modules.add(node.module.split(".")[0])
    return modules


def _main_requirements():
    """The distributions `pip install .` brings: the project's dependencies and theirs
    (without extras), by their canonical names."""
    tomllib = pytest.importorskip("tomllib")
    with open(ROOT / "pyproject.toml", "rb") as f:
        pending = list(tomllib.load(f)["project"]["dependencies"])
    brought = set()
    while pending:
        requirement = Requirement(pending.pop())
        if requirement.marker and not requirement.marker.evaluate({"extra": ""}):
            continue
        name = canonicalize_name(requirement.name)
        if name in brought:
            continue
        brought.add(name)
        try:
            pending += metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            pytest.fail(f"{name} (a dependency of the plain install) is not installed",
                        pytrace=False)
    return brought


@pytest.mark.parametrize("notebook", sorted((ROOT / "notebooks").glob("*.ipynb")),
                         ids=lambda path: path.stem)
def test_the_plain_install_brings_every_package_a_notebook_imports(notebook):
    brought = _main_requirements()
    distributions = metadata.packages_distributions()
    missing = {}
    for module in _imported_modules(notebook) - set(sys.stdlib_module_names) - {"fluid_nb"}:
        names = {canonicalize_name(d) for d in distributions.get(module, [module])}
        if not names & brought:
            missing[module] = sorted(names)
    assert not missing, f"{notebook.name} imports what `pip install .` does not bring: {missing}"
