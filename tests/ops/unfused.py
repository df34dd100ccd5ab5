"""The reference of a fused op: a program of the unfused ops it stands for, built from
fluid_nb's own ops on the same inputs and run on the CPU.

    ref = Unfused({"x": (x, lod), "w": w})
    proj = ref.op("mul", {"X": "x", "Y": "w"})["Out"]
    hidden = ref.op("lstm", {"Input": proj, ...}, outputs=["Hidden", "Cell", ...])["Hidden"]
    ref.run(hidden)  # -> [array]
"""
import itertools

import numpy as np

import fluid_nb as fluid
from fluid_nb.ops import registry

_names = itertools.count()


class Unfused:
    def __init__(self, feeds):
        """``feeds``: name -> array, or (array, LoD offsets)."""
        self.program = fluid.Program()
        self.block = self.program.global_block()
        self.feed = {}
        for name, value in feeds.items():
            self.input(name, value)

    def input(self, name, value):
        array, lod = value if isinstance(value, tuple) else (value, None)
        array = np.asarray(array)
        self.block.create_var(name=name, shape=array.shape, dtype=array.dtype,
                              lod_level=len(lod) if lod else 0)
        self.feed[name] = (array, [list(level) for level in lod]) if lod else array
        return name

    def op(self, type, inputs, outputs=None, **attrs):
        """Append op ``type``; ``inputs`` maps slot -> a name or a list of names; returns
        slot -> output name for ``outputs`` (default: the op's non-intermediate outputs)."""
        if outputs is None:
            outputs = [s.name for s in registry.get(type).outputs if not s.intermediate]
        names = {slot: f"{type}_{next(_names)}_{slot.lower()}" for slot in outputs}
        self.block.append_op(
            type=type, inputs={k: v if isinstance(v, list) else [v] for k, v in inputs.items()},
            outputs={k: [v] for k, v in names.items()}, attrs=attrs)
        return names

    def out(self, type, inputs, **attrs):
        """The one output 'Out' of op ``type``."""
        return self.op(type, inputs, ["Out"], **attrs)["Out"]

    def run(self, *fetch):
        fluid.verify(self.program)
        values = fluid.Executor(fluid.CPUPlace()).run(
            self.program, feed=self.feed, fetch_list=list(fetch), scope=fluid.Scope(),
            return_numpy=False)
        return [np.asarray(v) for v in values]
