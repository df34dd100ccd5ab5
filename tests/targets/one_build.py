"""One native build per op: the cases of an op merged into one program and compiled once.

Building C++ takes about a second a program, running it a millisecond; the table and its
edge-value variants give hundreds of programs, a few dozen per op. So the cases of one op
(their one-op programs, or their grad programs) are merged into one program, each case's
variables renamed ``c<k>_<name>``, built once and run once; each case then takes its own
values from that run. The cases with LoD (a build whose sizes are read at run time) and
those without (a build specialised on the shapes) are merged apart, so each case runs on
the kind of build it gets alone. The comparison is unchanged: each case's values against
the interpreter's on the case's own program.

A case is left to be generated and built alone (by the caller) when its program cannot be
made, when the generator declines an op of it (so the decline is reported as the case's
own), or when the merged build fails (so the failure is reported by the case it is of).
"""
import fluid_nb as fluid
from fluid_nb.framework.program import EMPTY_VAR_NAME
from fluid_nb.rewriters.native import compile, generate


def _renamed(k):
    return lambda name: name if name == EMPTY_VAR_NAME else f"c{k}_{name}"


def merge(parts):
    """One program of ``parts`` ([(program, feed, fetch)], one block each): (program, feed,
    fetch, the op indices of each part)."""
    merged = fluid.Program()
    merged.version = parts[0][0].version
    block = merged.global_block()
    feed, fetch, spans = {}, [], []
    for k, (program, part_feed, part_fetch) in enumerate(parts):
        rename = _renamed(k)
        for var in program.global_block().vars.values():
            block.create_var(name=rename(var.name), type=var.type, shape=var.shape,
                             dtype=var.dtype, lod_level=var.lod_level,
                             persistable=var.persistable)
        start = len(block.ops)
        for op in program.global_block().ops:
            block.append_op(type=op.type,
                            inputs={s: [rename(n) for n in a] for s, a in op.inputs.items()},
                            outputs={s: [rename(n) for n in a] for s, a in op.outputs.items()},
                            attrs=dict(op.attrs))
        spans.append(range(start, len(block.ops)))
        feed.update((rename(name), value) for name, value in part_feed.items())
        fetch += [rename(name) for name in part_fetch]
    return merged, feed, fetch, spans


def _key(case):
    return case.op, bool(case.lod)


class OneBuildPerOp:
    """The compiled values of the cases of each op, built once per op for ``target``.

    ``make(case) -> (program, feed, fetch)`` gives a case's program; ``cases``: all cases
    that may be asked for."""

    def __init__(self, cases, make, target):
        self.make, self.target = make, target
        self.cases = {}  # (op, with LoD) -> [cases]
        for case in cases:
            self.cases.setdefault(_key(case), []).append(case)
        self.built = {}  # (op, with LoD) -> {id(case): (fetch names, compiled values)}

    def values(self, case):
        """(the names the case's compiled program computes, their compiled values), or None
        when the case is to be generated and built alone."""
        key = _key(case)
        if key not in self.built:
            self.built[key] = self._build(self.cases.get(key, []))
        return self.built[key].get(id(case))

    def _build(self, cases):
        parts = []
        for case in cases:
            try:
                parts.append((case, self.make(case)))
            except Exception:  # noqa: BLE001  (the case's own test reports it)
                continue
        # the cases the generator declines an op of report that alone
        while parts:
            merged, feed, fetch, spans = merge([part for _, part in parts])
            try:
                source = generate(merged, target=self.target, feed=feed, fetch=fetch,
                                  scope=fluid.Scope())
            except Exception:  # noqa: BLE001
                return {}
            declined = {k for k, span in enumerate(spans)
                        for index, _, _ in source.fallbacks if index in span}
            if not declined:
                break
            parts = [part for k, part in enumerate(parts) if k not in declined]
        if not parts:
            return {}
        computed = {v.name for v in source.variables} - source.not_computed
        fetch = [name for name in fetch if name in computed]
        place = fluid.CUDAPlace(0) if self.target == "cuda" else fluid.CPUPlace()
        try:
            native = compile(merged, feed, fetch, scope=fluid.Scope(), target=self.target)
            got = dict(zip(fetch, fluid.Executor(place).run(
                native, feed=feed, fetch_list=fetch, scope=fluid.Scope(),
                return_numpy=False)))
        except Exception:  # noqa: BLE001
            return {}
        values = {}
        for k, (case, (_, _, part_fetch)) in enumerate(parts):
            names = [name for name in part_fetch if _renamed(k)(name) in got]
            if names:  # (a case computing none of its outputs fails alone)
                values[id(case)] = (names, [got[_renamed(k)(name)] for name in names])
        return values
