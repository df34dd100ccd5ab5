"""The front end's memory figures (TypeScript, run with Node) against Python: the details
panel writes the same text as ``memory_text``, byte counts read as ``bytes_text`` writes
them, and the fills grow darker with the bytes on a log scale, equal bytes equal fills."""
import re

from fluid_nb.viz.memory_model import bytes_text
from fluid_nb.viz.program_model import memory_text

from .test_graph_functions_js import harness  # noqa: F401  (fixture)


def figure(label, size, blocks=1, names=("v",), count=None, unnamed=0):
    return {"label": label, "bytes": size, "requested": size, "blocks": blocks,
            "vars": list(names), "vars_count": count or len(names), "unnamed": unnamed}


def luminance(fill):
    r, g, b = (int(fill[i:i + 2], 16) / 255 for i in (1, 3, 5))
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def test_texts_and_fills_match_python_and_follow_the_bytes(harness):  # noqa: F811
    ops = {"op:1": figure("mul #0", 256), "op:2": figure("relu #1", 4096, 3, ["a", "b"], 5, 2),
           "op:3": figure("adam #9", 1 << 20, 25, ["w"], unnamed=20),
           "op:4": figure("tanh #2 (block 1)", 65536, 4), "op:5": figure("sum #3", 4096)}
    figures = {"format": "fluid-nb.op-memory", "version": 1, "events": 9, "ops": ops,
               "min": 256, "max": 1 << 20, "total": 0, "blocks": 0,
               "outside": {"bytes": 0, "requested": 0, "blocks": 0},
               "unmatched": {"bytes": 0, "requested": 0, "blocks": 0}}
    sizes = [0, 1000, 1024, 1536, 65536, 3 << 20, 5 << 30]
    out = harness("memory", {"figures": figures, "sizes": sizes})
    assert out["texts"] == {oid: memory_text(f) for oid, f in ops.items()}
    assert out["texts"]["op:2"] == "allocates 4.0 KiB in 3 blocks: a, b, … 3 more, 2 unnamed"
    assert out["nothing"] == memory_text(None) == "allocates nothing"
    assert out["bytes"] == [bytes_text(n) for n in sizes]
    fills = out["fills"]
    assert all(re.fullmatch(r"#[0-9a-f]{6}", f) for f in fills.values()), fills
    assert fills["op:2"] == fills["op:5"]  # equal bytes, equal fill
    order = ["op:1", "op:2", "op:4", "op:3"]  # 256 B < 4 KiB < 64 KiB < 1 MiB
    shades = [luminance(fills[k]) for k in order]
    assert shades == sorted(shades, reverse=True) and len(set(shades)) == 4
    # the ends of the scale, and black labels stay readable on the darkest (contrast >= 4.5)
    assert fills["op:1"] == "#fde68a" and fills["op:3"] == "#e5484d"
    assert (shades[-1] + 0.05) / 0.05 >= 4.5
    # the scale is logarithmic: 8 KiB is half way from 8 B to 8 MiB
    middle = harness("memory", {"figures": {**figures, "ops": {"m": figure("m", 8192)},
                                            "min": 8, "max": 1 << 23}})["fills"]["m"]
    assert middle == "#fb923c"  # the scale's middle colour
