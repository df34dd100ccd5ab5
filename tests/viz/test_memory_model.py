"""The memory model on real arenas and real runs: the block map covers each chunk's drawn
part exactly with the arena's own blocks, the timeline follows the event log op by op and
marks its peak, the variable table names the op that allocated each tensor, and the HTML
fallback draws all three."""
import gc
import re

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb import flags
from fluid_nb.memory import places
from fluid_nb.memory.events import Event
from fluid_nb.viz.memory_model import (FREE_COLOUR, MEMORY_FORMAT, MIN_SHOWN, USED_COLOUR,
                                       block_map, bytes_text, colour_at, legend, memory_html,
                                       memory_model, op_label, peaks, timeline,
                                       variable_table)

CPU = fluid.CPUPlace()


@pytest.fixture(autouse=True)
def own_arena():
    """A fresh host arena of 16 MiB chunks for each test; the flags as they were after."""
    saved = dict(flags._values)
    fluid.set_flags({"FLAGS_initial_cpu_memory_in_mb": 17})
    fresh = getattr(places, "fresh_host_arena", None)
    if fresh is not None:
        entry = fresh()
    else:
        places._host[0] = None
        entry = places.host_arena()
    fluid.memory.events(CPU)
    yield entry
    fluid.memory.record_events(CPU, False)
    flags._values.clear()
    flags._values.update(saved)
    flags.version[0] += 1


def mlp(hidden=32):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 1
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 16], "float32")
        label = fluid.data("label", [None, 1], "int64")
        h = fluid.layers.fc(x, hidden, act="relu")
        loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(
            fluid.layers.fc(h, 4), label))
        fluid.optimizer.Adam(0.01).minimize(loss)
    return main, startup, loss


def recorded_run(batch=8):
    main, startup, loss = mlp()
    scope, exe = fluid.Scope(), fluid.Executor(CPU)
    exe.run(startup, scope=scope)
    rng = np.random.RandomState(0)
    feed = {"x": rng.rand(batch, 16).astype("float32"),
            "label": rng.randint(0, 4, (batch, 1)).astype("int64")}
    exe.run(main, feed=feed, fetch_list=[loss], scope=scope)  # plans and constants made
    fluid.memory.record_events(CPU)
    exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    fluid.memory.record_events(CPU, False)
    return main, scope, fluid.memory.events(CPU)  # keep main: its plans hold arena blocks


# --- the block map --------------------------------------------------------------------------
def test_block_map_shows_a_split_and_the_merge_after_free():
    first = fluid.memory.alloc(CPU, 1000)     # one 1 KiB block: the chunk splits down to it
    second = fluid.memory.alloc(CPU, 3000)    # 4 KiB
    arena = block_map(fluid.memory.blocks(CPU), fluid.memory.stats(CPU))
    chunk, = arena["chunks"]
    used = [(b["offset"], b["size"]) for b in chunk["blocks"] if b["state"] == "used"]
    assert sorted(size for _, size in used) == [1024, 4096]
    assert chunk["used"] == 5120 and chunk["size"] == 16 << 20
    assert chunk["shown"] == MIN_SHOWN  # a 16 MiB bar of two slivers would say nothing
    # the drawn blocks tile [0, shown) without gaps; the rest is free, past the edge
    tiles = sorted((b["offset"], b["size"]) for b in chunk["blocks"])
    assert tiles[0][0] == 0
    assert all(a + s == b for (a, s), (b, _) in zip(tiles, tiles[1:]))
    assert tiles[-1][0] + tiles[-1][1] == chunk["shown"]
    assert chunk["used"] + chunk["free"] == chunk["size"]
    assert chunk["beyond"] == chunk["size"] - chunk["shown"]
    # free buddies of every size from 1 KiB up: the split
    assert {b["size"] for b in chunk["blocks"] if b["state"] == "free"} >= {1024, 8192}
    fluid.memory.free(CPU, first)
    fluid.memory.free(CPU, second)
    merged = block_map(fluid.memory.blocks(CPU), fluid.memory.stats(CPU))["chunks"][0]
    assert [(b["offset"], b["state"]) for b in merged["blocks"]] == [(0, "free")]
    assert merged["used"] == 0 and merged["beyond"] == merged["size"] - merged["shown"]


def test_block_map_names_the_scopes_variables_and_lists_huge_blocks():
    main, scope, _ = recorded_run()
    arena = block_map(fluid.memory.blocks(CPU, scope), fluid.memory.stats(CPU))
    states = {b["state"] for c in arena["chunks"] for b in c["blocks"]}
    assert {"fc_0.w_0", "fc_0.w_0_moment1_0", "fc_1.b_0", "free"} <= states
    assert arena["huge"] == []
    big = fluid.memory.alloc(CPU, 20 << 20)  # larger than a chunk: from the system
    arena = block_map(fluid.memory.blocks(CPU), fluid.memory.stats(CPU))
    assert arena["huge"] == [{"size": 20 << 20, "state": "used"}]  # exact, not 2^k
    fluid.memory.free(CPU, big)


# --- the timeline ---------------------------------------------------------------------------
def test_timeline_has_a_point_per_op_in_run_order_and_marks_the_peak():
    main, scope, log = recorded_run()
    line = timeline(log)
    labels = [p["label"] for p in line["points"]]
    # op indices are the run's: the executor's copy of the program with its feed ops first
    ran = [p["op"] for p in line["points"] if p["op"] is not None]
    assert [index for _, _, index in ran] == sorted(index for _, _, index in ran)
    types = [op.type for op in main.global_block().ops] + ["feed", "fetch"]
    assert {kind for kind, _, _ in ran} <= set(types)
    forward = [op for op in ran if op[0] != "feed"]
    assert [kind for kind, _, _ in forward][:3] == ["mul", "elementwise_add", "relu"]
    assert f"mul #{forward[0][2]}" in labels
    assert line["start"] == log[0].used - (log[0].size if log[0].kind == "alloc" else
                                           -log[0].size if log[0].kind == "free" else 0)
    assert line["end"] == log[-1].used == fluid.memory.used(CPU)
    assert line["events"] == len(log)
    # the peak is the most used after any event, and during the op the point names
    top = max(e.used for e in log)
    assert line["peak"]["used"] == top
    peak_point = line["points"][line["peak"]["index"]]
    assert peak_point["high"] == top and peak_point["label"] == line["peak"]["label"]
    assert all(p["high"] >= p["used"] for p in line["points"])


def test_timeline_points_know_the_named_variables_alive_after_them():
    _, _, log = recorded_run()
    line = timeline(log)
    by_label = {p["label"]: p for p in line["points"]}
    mul = next(p for label, p in by_label.items() if label.startswith("mul #"))
    assert dict(mul["alive"])["fc_0.tmp_0"] == 1024  # its block: 8 x 32 float32 rounded up
    # the last op: the temporaries were freed, the new weights and moments are alive
    last = line["points"][-1]
    alive = {name for name, _ in last["alive"]}
    assert "fc_0.tmp_0" not in alive
    assert last["alive_count"] >= len(last["alive"])
    assert last["alive_bytes"] >= sum(size for _, size in last["alive"])
    capped = timeline(log, max_alive=2)
    assert all(len(p["alive"]) <= 2 for p in capped["points"])
    assert [p["alive_count"] for p in capped["points"]] == [p["alive_count"] for p in
                                                            line["points"]]


def test_timeline_joins_neighbouring_ops_past_max_points_and_keeps_the_peak():
    _, _, log = recorded_run()
    full = timeline(log)
    short = timeline(log, max_points=5)
    assert short["truncated"] and not full["truncated"]
    assert len(short["points"]) <= 5
    assert short["peak"]["used"] == full["peak"]["used"]
    assert short["points"][-1]["used"] == full["points"][-1]["used"]
    assert sum(p["events"] for p in short["points"]) == len(log)
    assert " … " in short["points"][0]["label"]


def test_timeline_of_no_events_is_none_and_of_hand_made_events_follows_them():
    assert timeline([]) is None
    events = [Event("alloc", 0, 1024, 1000, 1024, ("mul", 0, 0), "a"),
              Event("alloc", 1024, 1024, 1000, 2048, ("relu", 0, 1), "b"),
              Event("free", 0, 1024, 0, 1024, ("relu", 0, 1), None),
              Event("free", 1024, 1024, 0, 0, None, None)]
    line = timeline(events)
    assert [(p["label"], p["used"], p["high"]) for p in line["points"]] == [
        ("mul #0", 1024, 1024), ("relu #1", 1024, 2048), ("outside ops", 0, 0)]
    assert [p["alive"] for p in line["points"]] == [[["a", 1024]], [["b", 1024]], []]
    assert line["peak"] == {"index": 1, "used": 2048, "label": "relu #1"}
    assert line["start"] == 0


def test_without_eager_deletion_the_run_keeps_its_temporaries_and_peaks_higher():
    peaks = {}
    for keep in (0.0, -1.0):
        fluid.set_flags({"FLAGS_eager_delete_tensor_gb": keep})
        _, _, log = recorded_run(batch=64)
        line = timeline(log)
        peaks[keep] = line["peak"]["used"]
        alive = {name for p in line["points"][-3:] for name, _ in p["alive"]}
        assert ("fc_0.tmp_0" in alive) == (keep < 0), keep
    assert peaks[-1.0] > peaks[0.0]


# --- the variables --------------------------------------------------------------------------
def test_variable_table_names_the_allocating_op_and_what_is_still_held():
    main, scope, log = recorded_run()
    rows = {r["name"]: r for r in variable_table(log, fluid.memory.holders(CPU, scope))}
    tmp = rows["fc_0.tmp_0"]
    assert tmp["bytes"] == 8 * 32 * 4 and tmp["block"] == 1024
    assert tmp["op"].startswith("mul #")
    assert tmp["alive"] is False and tmp["in_scope"] is False
    weight = rows["fc_0.w_0"]  # new from the optimizer, or updated in its own block
    assert weight["alive"] and weight["in_scope"] and weight["block"] == 16 * 32 * 4
    assert weight["op"] is None or weight["op"].startswith("adam #")
    # largest block first
    blocks = [r["block"] for r in rows.values()]
    assert blocks == sorted(blocks, reverse=True)
    # held in the arena but not allocated by the recorded run: listed with no op
    learning_rate = rows["learning_rate_0"]
    assert learning_rate["op"] is None and learning_rate["in_scope"]
    assert learning_rate["block"] == 256 and learning_rate["bytes"] == 256  # no nbytes given
    model_rows = {r["name"]: r for r in memory_model(CPU, scope, log)["variables"]}
    assert model_rows["learning_rate_0"]["bytes"] == 4  # one float32, from the scope


# --- all of it ------------------------------------------------------------------------------
def test_memory_model_joins_the_parts_and_colours_every_named_variable():
    main, scope, log = recorded_run()
    # earlier tests' garbage in the arena, freed by a collection between the two reads,
    # would move the used bytes: the collector waits until both are taken
    gc.collect()
    gc.disable()
    try:
        model = memory_model(CPU, scope, log, title="mlp")
        used_now = fluid.memory.used(CPU)
    finally:
        gc.enable()
    assert model["format"] == MEMORY_FORMAT and model["title"] == "mlp"
    assert model["stats"]["used"] == used_now
    assert model["timeline"]["events"] == len(log)
    named = {b["state"] for c in model["map"]["chunks"] for b in c["blocks"]} - {"free", "used"}
    named |= {r["name"] for r in model["variables"]}
    assert named <= set(model["colours"])
    ranked = [r["name"] for r in model["variables"]]
    assert [model["colours"][name] for name in ranked[:3]] == [colour_at(k) for k in range(3)]
    assert len(set(list(model["colours"].values())[:8])) == 8  # neighbours differ
    assert memory_model(CPU, scope)["timeline"] is None


def test_memory_html_draws_bars_the_timeline_with_its_peak_and_the_table():
    _, scope, log = recorded_run()
    model = memory_model(CPU, scope, log)
    page = memory_html(model)
    assert page.count("class='fluid-nb-chunk'") == len(model["map"]["chunks"])
    assert "<polyline points=" in page and "class='fluid-nb-peak'" in page
    peak = model["timeline"]["peak"]
    run_text = f"run peak {bytes_text(peak['used'])} during {peak['label']}"
    assert page.count(run_text) == 2  # the head and the timeline say it in the same words
    assert model["peaks"]["arena"]["text"] in page
    for entry in model["legend"]:
        assert f"data-colour='{entry['colour']}'" in page
    assert "<th>allocated by</th>" in page and "fc_0.w_0" in page
    assert model["colours"]["fc_0.w_0"] in page
    widths = [float(w) for w in re.findall(r"width:([\d.]+)%", page)]
    assert widths and max(widths) <= 100


def test_labels_and_byte_texts():
    assert op_label(("mul", 0, 2)) == "mul #2"
    assert op_label(("relu", 1, 0)) == "relu #0 (block 1)"
    assert op_label(None) == "outside ops"
    assert [bytes_text(n) for n in (512, 65536, 3 << 20)] == ["512 B", "64.0 KiB", "3.0 MiB"]


# --- the legend and the peaks ---------------------------------------------------------------
def test_legend_has_an_entry_for_every_colour_the_block_map_draws():
    main, scope, log = recorded_run()
    keep = fluid.memory.alloc(CPU, 3000)  # a block no variable of the scope holds: grey
    model = memory_model(CPU, scope, log)
    entries = {e["state"]: e for e in model["legend"]}
    drawn = {b["state"] for c in model["map"]["chunks"] for b in c["blocks"]}
    assert drawn | {"free"} == set(entries)
    assert entries["free"]["colour"] == FREE_COLOUR and entries["used"]["colour"] == USED_COLOUR
    assert "no variable" in entries["used"]["label"]
    assert all(entries[name]["colour"] == model["colours"][name]
               for name in drawn - {"free", "used"})
    fills = {FREE_COLOUR} | {entries[state]["colour"] for state in drawn}
    assert fills == {e["colour"] for e in model["legend"]}
    # free first, then grey, then the variables by their bytes in the map
    order = [e["state"] for e in model["legend"]]
    assert order[:2] == ["free", "used"]
    sizes = [e["bytes"] for e in model["legend"][2:]]
    assert sizes == sorted(sizes, reverse=True)
    by_state = {}
    for c in model["map"]["chunks"]:
        for b in c["blocks"]:
            by_state[b["state"]] = by_state.get(b["state"], 0) + b["size"]
    assert entries["fc_0.w_0"]["bytes"] == by_state["fc_0.w_0"]
    assert entries["free"]["bytes"] == sum(c["free"] for c in model["map"]["chunks"])
    fluid.memory.free(CPU, keep)


def test_legend_covers_huge_blocks_and_is_empty_without_chunks():
    arena = {"chunks": [], "huge": [{"size": 20 << 20, "state": "used"}]}
    entry, = legend(arena, {})
    assert entry["label"].startswith("in use, held by no variable")
    assert {k: entry[k] for k in ("state", "colour", "bytes", "blocks")} == {
        "state": "used", "colour": USED_COLOUR, "bytes": 20 << 20, "blocks": 1}
    assert legend({"chunks": [], "huge": []}, {}) == []


def test_the_arena_peak_and_the_run_peak_are_named_apart():
    main, scope, log = recorded_run()
    big = fluid.memory.alloc(CPU, 4 << 20)  # after the run: the arena's peak only
    fluid.memory.free(CPU, big)
    model = memory_model(CPU, scope, log)
    said = model["peaks"]
    assert said["arena"]["bytes"] == fluid.memory.peak(CPU) > said["run"]["bytes"]
    assert said["run"]["bytes"] == model["timeline"]["peak"]["used"]
    assert said["arena"]["text"] == f"arena peak since start {bytes_text(fluid.memory.peak(CPU))}"
    assert said["run"]["text"] == (f"run peak {bytes_text(said['run']['bytes'])} during "
                                   f"{model['timeline']['peak']['label']}")
    assert said["run"]["op"] == model["timeline"]["peak"]["label"]
    assert peaks({"peak": 1 << 20}, None) == {
        "arena": {"bytes": 1 << 20, "text": "arena peak since start 1.0 MiB"}, "run": None}
    page = memory_html(model)
    assert "peak " + bytes_text(said["arena"]["bytes"]) not in page.replace(
        said["arena"]["text"], "")  # the arena's figure only with its own words
