"""Timing helpers shared by the benchmarks: best-of-N medians, printed as ratios, and
counts of the Python bytecodes a path runs."""
import os
import time


def best_time(fn, repeat=7, number=1):
    """The fastest of ``repeat`` timings of ``number`` calls, in seconds per call."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def interleaved_best(fns, rounds=15, number=20):
    """{label: seconds per call}: the fastest of ``rounds`` timings of ``number`` calls of
    each of ``fns`` (label -> callable). The candidates take turns within each round, and
    the order of turns rotates from round to round, so that neither a machine speeding up
    or slowing down meanwhile nor coming right after another candidate (whose data then
    fills the caches) favours one of them."""
    best = {label: float("inf") for label in fns}
    order = list(fns)
    for _ in range(rounds):
        for label in order:
            fn = fns[label]
            start = time.perf_counter()
            for _ in range(number):
                fn()
            best[label] = min(best[label], (time.perf_counter() - start) / number)
        order = order[1:] + order[:1]
    return best


def interleaved_samples(fns, rounds=9):
    """{label: sorted list of ``rounds`` results}: each of ``fns`` (label -> callable that
    returns its own timing) is called once per round, the candidates taking turns in an
    order that rotates from round to round (see :func:`interleaved_best`)."""
    samples = {label: [] for label in fns}
    order = list(fns)
    for _ in range(rounds):
        for label in order:
            samples[label].append(fns[label]())
        order = order[1:] + order[:1]
    return {label: sorted(values) for label, values in samples.items()}


def spread(values):
    """The spread of sorted timings: (median - best) / best, as a fraction."""
    return (values[len(values) // 2] - values[0]) / values[0]


def torch_or_none():
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    return torch


def row(label, value, unit, reference=None, ref_label=None):
    """Print ``value`` (in ``unit``); with ``reference`` (same unit) also the ratio."""
    text = f"{label:<48s}{value:10.2f} {unit}"
    if reference:
        text += f"   ({value / reference:5.2f}x {ref_label})"
    print(text)


def opcode_tracer(counts):
    """A trace function for ``sys.settrace`` or ``threading.settrace`` that counts the
    Python bytecodes run (opcode events) into ``counts``, by (file name, function): a count
    the machine's load does not move."""
    def per_opcode(frame, event, arg):
        if event == "opcode":
            key = (os.path.basename(frame.f_code.co_filename), frame.f_code.co_name)
            counts[key] = counts.get(key, 0) + 1
        return per_opcode

    def per_function(frame, event, arg):
        frame.f_trace_opcodes = True
        return per_opcode
    return per_function
