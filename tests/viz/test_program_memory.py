"""Memory figures on the program model: a recorded run's allocations summed per op and keyed
by the model's op ids (ops of sub-blocks by block and index, over every loop iteration), the
text an op's details and the listing write, and the listing's memory column."""
import numpy as np

import fluid_nb as fluid
from fluid_nb import layers
from fluid_nb.api.layers.rnn_layers import DynamicRNN
from fluid_nb.memory.events import Event
from fluid_nb.viz import listing_html, model_listing, program_listing, program_model
from fluid_nb.viz.memory_model import bytes_text, op_allocations
from fluid_nb.viz.program_model import program_memory, memory_text

from .test_memory_model import CPU, own_arena, recorded_run  # noqa: F401  (fixture)

ALLOCS = ("alloc", "huge_alloc")


def by_op(events):
    """{op key: (block bytes, bytes asked, blocks)} straight from the events."""
    sums = {}
    for e in events:
        if e.kind in ALLOCS:
            b, r, n = sums.get(e.op, (0, 0, 0))
            sums[e.op] = (b + e.size, r + e.requested, n + 1)
    return sums


def dynamic_rnn_run(lengths=(3, 1, 4)):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, 3], dtype="float32", lod_level=1)
        proj = layers.fc(x, size=4)
        drnn = DynamicRNN()
        with drnn.block():
            word = drnn.step_input(proj)
            prev = drnn.memory(shape=[4], value=0.0)
            hidden = layers.fc([word, prev], size=4, act="tanh")
            drnn.update_memory(prev, hidden)
            drnn.output(hidden)
        loss = layers.mean(layers.sequence_pool(drnn(), "last"))
        fluid.optimizer.SGD(0.1).minimize(loss)
    scope, exe = fluid.Scope(), fluid.Executor(CPU)
    exe.run(startup, scope=scope)
    rng = np.random.RandomState(2)
    feed = {"x": fluid.create_lod_tensor(rng.randn(sum(lengths), 3).astype("float32"),
                                         [list(lengths)], CPU)}
    exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    fluid.memory.record_events(CPU)
    exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    fluid.memory.record_events(CPU, False)
    return main, scope, fluid.memory.events(CPU)


def test_each_op_of_a_training_step_gets_the_bytes_blocks_and_variables_it_allocated():
    main, _, events = recorded_run()
    model = program_model(main)
    figures = program_memory(model, events)
    ops = {op["id"]: op for op in model["ops"]}
    sums = by_op(events)
    assert figures["format"] == "fluid-nb.op-memory" and figures["events"] == len(events)
    assert len(figures["ops"]) >= 15  # forward, gradient and adam ops all allocate
    for oid, figure in figures["ops"].items():
        op = ops[oid]
        key = (op["type"], int(op["block"][1:]), op["index"])
        assert (figure["bytes"], figure["requested"], figure["blocks"]) == sums[key]
        assert figure["label"] == f"{op['type']} #{op['index']}"
        assert figure["bytes"] > 0 and figure["bytes"] >= figure["requested"]
    # the first fc's mul writes fc_0.tmp_0, 8 x 32 float32, in one 1 KiB block
    mul = next(op for op in model["ops"] if op["type"] == "mul")
    assert figures["ops"][mul["id"]] == {"label": "mul #0", "bytes": 1024, "requested": 1024,
                                         "blocks": 1, "vars": ["fc_0.tmp_0"],
                                         "vars_count": 1, "unnamed": 0}
    # the gradient of the 16 x 32 weight comes from its mul_grad
    w_grad = next(f for f in figures["ops"].values() if "fc_0.w_0@GRAD" in f["vars"])
    assert w_grad["label"].startswith("mul_grad #") and w_grad["requested"] >= 16 * 32 * 4
    adams = [f for oid, f in figures["ops"].items() if ops[oid]["type"] == "adam"]
    assert len(adams) == 4 and all("fc" in f["vars"][0] for f in adams)
    # min and max over the ops listed; nothing is lost: ops + outside = every allocation
    sizes = [f["bytes"] for f in figures["ops"].values()]
    assert (figures["min"], figures["max"], figures["total"]) == (min(sizes), max(sizes),
                                                                  sum(sizes))
    assert figures["unmatched"]["blocks"] == 0
    every = sum(b for b, _, _ in sums.values())
    assert figures["total"] + figures["outside"]["bytes"] == every
    assert list(figures["ops"]) == [op["id"] for op in model["ops"] if op["id"] in
                                    figures["ops"]]  # program order


def test_ops_of_a_dynamic_rnns_sub_blocks_sum_every_step():
    main, _, events = dynamic_rnn_run(lengths=(3, 1, 4))
    model = program_model(main)
    figures = program_memory(model, events)
    ops = {op["id"]: op for op in model["ops"]}
    sums = by_op(events)
    in_block = {b: [oid for oid in figures["ops"] if ops[oid]["block"] == b]
                for b in ("b0", "b1", "b2")}
    assert all(in_block.values()), in_block  # the loop body and its gradient block too
    for oid in in_block["b1"] + in_block["b2"]:
        op = ops[oid]
        key = (op["type"], int(op["block"][1:]), op["index"])
        assert figures["ops"][oid]["bytes"] == sums[key][0]
    # the step's fc output: one block per step of the longest sequence (4 steps)
    tanh = next(oid for oid in in_block["b1"] if ops[oid]["type"] == "tanh")
    assert figures["ops"][tanh]["blocks"] == 4
    assert figures["ops"][tanh]["vars"] == [ops[tanh]["outputs"]["Out"][0]]
    assert figures["ops"][tanh]["label"] == f"tanh #{ops[tanh]['index']} (block 1)"
    assert figures["unmatched"]["blocks"] == 0


def test_events_of_other_ops_are_unmatched_and_feeds_outside():
    main, _, events = recorded_run()
    model = program_model(main)
    first = model["ops"][0]
    made = [Event("alloc", 1, 1024, 1000, 1024, (first["type"], 0, 0), "a"),
            Event("alloc", 2, 512, 500, 1536, (first["type"], 0, 0), None),
            Event("free", 2, 512, 0, 1024, (first["type"], 0, 0), None),
            Event("alloc", 3, 256, 200, 1280, ("feed", 0, -1), "x"),
            Event("huge_alloc", 4, 1 << 20, 1 << 20, 1 << 20, None, "big"),
            Event("alloc", 5, 256, 100, 1280, ("conv2d", 0, 0), "c"),    # another type there
            Event("alloc", 6, 256, 100, 1280, ("relu", 3, 9), "d")]      # no such block
    figures = program_memory(model, made)
    assert figures["ops"] == {first["id"]: {
        "label": f"{first['type']} #0", "bytes": 1536, "requested": 1500, "blocks": 2,
        "vars": ["a"], "vars_count": 1, "unnamed": 1}}
    assert figures["outside"] == {"bytes": 256 + (1 << 20), "requested": 200 + (1 << 20),
                                  "blocks": 2}
    assert figures["unmatched"] == {"bytes": 512, "requested": 200, "blocks": 2}
    empty = program_memory(model, [])
    assert empty["ops"] == {} and (empty["min"], empty["max"], empty["total"]) == (0, 0, 0)
    # op_allocations keeps every variable once, in the order of its first block
    assert op_allocations(made)[None]["variables"] == ["big"]


def test_memory_text_names_bytes_blocks_and_variables():
    figure = {"label": "adam #3", "bytes": 3 << 20, "requested": 3 << 20, "blocks": 12,
              "vars": ["w", "m1"], "vars_count": 5, "unnamed": 4}
    assert memory_text(figure) == "allocates 3.0 MiB in 12 blocks: w, m1, … 3 more, 4 unnamed"
    assert memory_text({**figure, "blocks": 1, "vars": ["w"], "vars_count": 1,
                        "unnamed": 0}) == "allocates 3.0 MiB in 1 block: w"
    assert memory_text(None) == "allocates nothing"


def test_the_listing_shows_each_ops_bytes_when_given_figures():
    main, _, events = recorded_run()
    model = program_model(main)
    figures = program_memory(model, events)
    plain = program_listing(main)
    listed = program_listing(main, memory=figures)
    assert "allocates" not in plain
    lines = [line for line in listed.splitlines() if "= " in line]
    assert len(lines) == len(model["ops"])
    for op, line in zip(model["ops"], lines):
        figure = figures["ops"].get(op["id"])
        assert line.endswith(f"  # {memory_text(figure)}") == bool(figure), line
    assert lines[0].endswith("# allocates 1.0 KiB in 1 block: fc_0.tmp_0")
    # the page's listing from the model alone says the same
    from_model = model_listing({**model, "memory": figures}, with_vars=False).splitlines()
    assert [line.partition("  # ")[2] for line in from_model] == \
        [line.partition("  # ")[2] for line in
         program_listing(main, with_vars=False, memory=figures).splitlines()]
    page = listing_html(main, memory=figures)
    assert f"{len(figures['ops'])} ops allocated {bytes_text(figures['total'])}" in page
    assert "<tr><td>mul #0</td><td>1.0 KiB</td><td>1024</td><td>1</td><td>fc_0.tmp_0</td>" \
        in page
    assert "Memory" not in listing_html(main)
