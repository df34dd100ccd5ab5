"""The example scripts, imported as modules (they are scripts, not a package)."""
import importlib.util
import os
import pathlib
import subprocess
import sys

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def load_example(name):
    """``examples/<name>.py`` as a module, its ``main`` not run."""
    spec = importlib.util.spec_from_file_location(f"_example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_example_script(name, *args, cwd):
    """``python examples/<name>.py args...`` in ``cwd``, with this checkout importable;
    the finished process (its output captured as text)."""
    env = dict(os.environ)
    root = str(EXAMPLES.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, str(EXAMPLES / f"{name}.py"), *map(str, args)],
                          cwd=str(cwd), env=env, capture_output=True, text=True, timeout=120)
