"""``fluid.profiler``: time every op the executors run, and print a table per op type.

    with fluid.profiler.profiler("CPU", sorted_key="total"):
        for batch in reader():
            exe.run(main, feed=feeder.feed(batch))

prints, for each op type, the number of calls and the total, average, minimum and maximum
time (measured around each op's step, in milliseconds), as Fluid's profiler summarises
its events; with ``profile_path`` the same table is also written to that file. While it
records, every executor times each op (a clock read per op).
"""
import contextlib

from ..errors import InvalidArgument, PreconditionNotMet, expected
from ..exec.executor import Executor

__all__ = ["profiler", "start_profiler", "stop_profiler", "reset_profiler", "cuda_profiler"]

_STATES = ("CPU", "GPU", "All")
_KEYS = (None, "calls", "total", "max", "min", "ave")


def start_profiler(state="All", tracer_option="Default"):
    """Start timing every op that any executor runs."""
    if state not in _STATES:
        raise InvalidArgument(expected("start_profiler", "state", "one of CPU, GPU, All",
                                       repr(state)))
    Executor.trace = []


def reset_profiler():
    """Forget what was recorded so far (the profiler keeps recording)."""
    if Executor.trace is not None:
        Executor.trace.clear()


def summary(records, sorted_key=None):
    """Rows ``(op type, calls, total, average, min, max)`` in milliseconds."""
    by_type = {}
    for op, seconds in records:
        by_type.setdefault(op.type, []).append(seconds * 1e3)
    rows = [(name, len(t), sum(t), sum(t) / len(t), min(t), max(t))
            for name, t in by_type.items()]
    column = {"calls": 1, "total": 2, "ave": 3, "min": 4, "max": 5}.get(sorted_key)
    if column is not None:
        rows.sort(key=lambda row: row[column], reverse=(sorted_key != "min"))
    return rows


def _table(rows):
    lines = ["------------------------->     Profiling Report     <-------------------------",
             f"{'Event':<28}{'Calls':>8}{'Total(ms)':>12}{'Ave(ms)':>10}{'Min(ms)':>10}"
             f"{'Max(ms)':>10}"]
    for name, calls, total, ave, low, high in rows:
        lines.append(f"{name:<28}{calls:>8}{total:>12.4f}{ave:>10.4f}{low:>10.4f}{high:>10.4f}")
    return "\n".join(lines)


def stop_profiler(sorted_key=None, profile_path="/tmp/profile"):
    """Stop timing, print the table (and write it to ``profile_path`` when given);
    returns the rows."""
    if sorted_key not in _KEYS:
        raise InvalidArgument(expected("stop_profiler", "sorted_key",
                                       "None, calls, total, max, min or ave", repr(sorted_key)))
    records = Executor.trace
    if records is None:
        raise PreconditionNotMet("stop_profiler: a started profiler expected, but none is "
                                 "running (call start_profiler first)")
    Executor.trace = None
    rows = summary(records, sorted_key)
    table = _table(rows)
    print(table)
    if profile_path:
        with open(profile_path, "w") as f:
            f.write(table + "\n")
    return rows


@contextlib.contextmanager
def profiler(state="All", sorted_key=None, profile_path="/tmp/profile",
             tracer_option="Default"):
    """Time the ops run inside the block; print (and save) the table at its end."""
    start_profiler(state, tracer_option)
    try:
        yield
    finally:
        stop_profiler(sorted_key, profile_path)


@contextlib.contextmanager
def cuda_profiler(output_file, output_mode=None, config=None):
    """NVIDIA's profiler (nvprof) around the block: it needs a CUDA GPU and nvprof, which
    fluid_nb does not drive; refused with the reason."""
    raise PreconditionNotMet("cuda_profiler: NVIDIA's command-line profiler expected, but "
                             "fluid_nb runs CUDA through CuPy and does not start nvprof; use "
                             "fluid.profiler.profiler('GPU') to time the ops")
    yield  # pragma: no cover  (a generator, so the error comes at `with`)
