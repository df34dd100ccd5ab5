"""Start-up cost: how long ``import fluid_nb`` takes and how much memory it holds, next to
NumPy's own import (which it includes); and the peak memory of 500 W2 training steps (the
MLP 784-200-200-10, batch 64, Adam of train_step.py) next to the same step hand-written
in NumPy. Each figure comes from a fresh interpreter of its own.

Imports are timed with the bytecode cache in use, as an installed package has it (in a
temporary folder: ``PYTHONPYCACHEPREFIX``), and without it (every module compiled from its
source, as with ``PYTHONDONTWRITEBYTECODE`` and a clean tree). The W2 steps run with the
cache in use, filled by one W2 run first. Memory is the process's
resident set (``VmRSS``; its peak ``VmHWM``) from /proc, or ``ru_maxrss`` elsewhere.

    python benchmarks/startup.py [runs]
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPOSITORY = os.path.dirname(HERE)

#: prints {"seconds", "rss_kb", "peak_kb", "modules"} after importing the module {name}
IMPORT = """
import json, resource, sys, time
start = time.perf_counter()
import {name}
seconds = time.perf_counter() - start
status = dict(line.split(":", 1) for line in open("/proc/self/status")) \\
    if sys.platform.startswith("linux") else {{}}
kb = lambda key: int(status[key].split()[0]) if key in status else \\
    resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({{"seconds": seconds, "rss_kb": kb("VmRSS"), "peak_kb": kb("VmHWM"),
                  "modules": len(sys.modules)}}))
"""

#: prints the peak memory of 500 W2 steps built by train_step's ``{builder}``, and what the
#: process holds: modules, ops defined, Python-level allocations (with --trace)
TRAIN = """
import json, resource, sys, tracemalloc
trace = {trace}
if trace:
    tracemalloc.start()
sys.path.insert(0, {here!r})
import numpy as np
import train_step
rng = np.random.RandomState(0)
x = rng.rand(64, 784).astype("float32")
label = rng.randint(0, 10, (64, 1)).astype("int64")
step = train_step.{builder}(x, label)
for _ in range(500):
    step()
status = dict(line.split(":", 1) for line in open("/proc/self/status")) \\
    if sys.platform.startswith("linux") else {{}}
peak = int(status["VmHWM"].split()[0]) if status else \\
    resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
registry = sys.modules.get("fluid_nb.framework.registry")
found = {{"peak_kb": peak, "modules": len(sys.modules),
          "fluid_modules": sum(name.startswith("fluid_nb") for name in sys.modules),
          "ops": len(registry._OPS) if registry else 0}}
if trace:
    found["traced_kb"] = tracemalloc.get_traced_memory()[0] // 1024
    by_package = {{}}
    for stat in tracemalloc.take_snapshot().statistics("filename"):
        name = stat.traceback[0].filename
        key = ("fluid_nb" if "fluid_nb" in name else "numpy" if "numpy" in name
               else "import system" if "importlib" in name else "other")
        by_package[key] = by_package.get(key, 0) + stat.size // 1024
    found["traced_by"] = by_package
print(json.dumps(found))
"""


def run(code, env=None):
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPOSITORY, env=env)
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def environment(bytecode_cache, pycache, **flags):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if bytecode_cache:
        env["PYTHONPYCACHEPREFIX"] = pycache
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTHONPYCACHEPREFIX", None)
    env.update(flags)
    return env


def best_import(name, env, runs):
    """The fastest of ``runs`` fresh imports, with that run's memory."""
    results = [run(IMPORT.format(name=name), env) for _ in range(runs)]
    return min(results, key=lambda r: r["seconds"])


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    with tempfile.TemporaryDirectory() as pycache:
        for bytecode_cache in (True, False):
            env = environment(bytecode_cache, pycache)
            if bytecode_cache:  # fill the cache first
                run(IMPORT.format(name="fluid_nb"), env)
            numpy = best_import("numpy", env, runs)
            fluid = best_import("fluid_nb", env, runs)
            label = "cached bytecode" if bytecode_cache else "compiled from source"
            print(f"import, {label}, best of {runs}:")
            for name, r in (("numpy", numpy), ("fluid_nb", fluid)):
                print(f"  {name:9s} {r['seconds'] * 1e3:7.1f} ms  RSS {r['rss_kb'] / 1024:5.1f} MB"
                      f"  {r['modules']:4d} modules")
            print(f"  fluid_nb / numpy: {fluid['seconds'] / numpy['seconds']:.2f}x time, "
                  f"+{(fluid['rss_kb'] - numpy['rss_kb']) / 1024:.1f} MB")

        env = environment(True, pycache)
        # the modules a step loads when first used (op families, the optimizer) compiled
        # into the cache first, as an installed package has them: compiling them in the
        # measured process would add the compiler's own peak to the step's
        run(TRAIN.format(builder="w2_fluid", here=HERE, trace=False), env)
        print("500 W2 steps (MLP 784-200-200-10, batch 64, Adam), peak RSS:")
        for label, builder, flags in (
                ("NumPy by hand", "w2_numpy", {}),
                ("fluid_nb", "w2_fluid", {}),
                ("fluid_nb, system allocator", "w2_fluid",
                 {"FLAGS_use_system_allocator": "1"})):
            r = run(TRAIN.format(builder=builder, here=HERE, trace=False), {**env, **flags})
            print(f"  {label:27s} {r['peak_kb'] / 1024:5.1f} MB  {r['modules']:4d} modules "
                  f"({r['fluid_modules']} of fluid_nb), {r['ops']} ops defined")
        r = run(TRAIN.format(builder="w2_fluid", here=HERE, trace=True), env)
        parts = ", ".join(f"{k} {v / 1024:.1f}" for k, v in
                          sorted(r["traced_by"].items(), key=lambda kv: -kv[1]))
        print(f"  fluid_nb's Python-level allocations at the end (tracemalloc): "
              f"{r['traced_kb'] / 1024:.1f} MB ({parts} MB)")
        print("  (the NumPy step's process imports train_step, and with it fluid_nb)")


if __name__ == "__main__":
    main()
