"""The loop model: a while op's run iteration by iteration (condition, step values, tensor-array
slots written), and for a DynamicRNN the rank table, the shrinking batch, the memories cut
at each step and the outputs put back in input order."""
import json

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb import layers
from fluid_nb.errors import InvalidArgument, NotFound
from fluid_nb.exec import executor as executor_module
from fluid_nb.api.layers.rnn_layers import DynamicRNN
from fluid_nb.viz.loop_trace import dynamic_rnn_layout, find_while, trace_while

# the design documents' batch: lengths 10, 8, 5, 7 -> ranked 10, 8, 7, 5
LENGTHS = [10, 8, 5, 7]
STEP_BATCHES = [4, 4, 4, 4, 4, 3, 3, 2, 1, 1]


def by_name(values):
    return {v["name"]: v for v in values}


# --- a plain While loop -----------------------------------------------------------------------
def squares_loop(n=5, is_test=False, with_length=True):
    """i = 0; while i < n: arr[i] = i * i; i += 1"""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        i = layers.fill_constant(shape=[1], dtype="int64", value=0)
        limit = layers.fill_constant(shape=[1], dtype="int64", value=n)
        arr = layers.create_array("int64")
        cond = layers.less_than(x=i, y=limit)
        loop = layers.While(cond=cond, is_test=is_test)
        with loop.block():
            square = layers.elementwise_mul(i, i)
            layers.array_write(square, i, array=arr)
            layers.increment(x=i, value=1, in_place=True)
            layers.less_than(x=i, y=limit, cond=cond)
        length = layers.array_length(arr) if with_length else None  # needs a written array
    return main, {"i": i, "arr": arr, "cond": cond, "square": square, "length": length}


def test_plain_loop_model_is_json_with_its_format_and_version():
    main, _ = squares_loop()
    trace = trace_while(fluid.Executor(), main, scope=fluid.Scope())
    assert trace["format"] == "fluid-nb.loop" and trace["version"] == 1
    assert json.loads(json.dumps(trace, allow_nan=False)) == trace


def test_plain_loop_conditions_hold_until_the_last_iteration():
    main, v = squares_loop(5)
    trace = trace_while(fluid.Executor(), main, scope=fluid.Scope())
    assert trace["iteration_count"] == 5 and not trace["truncated"]
    assert [it["condition"] for it in trace["iterations"]] == [True] * 4 + [False]
    assert [it["step"] for it in trace["iterations"]] == [0, 1, 2, 3, 4]
    assert trace["initial_condition"] is True
    assert [inv["iterations"] for inv in trace["invocations"]] == [5]
    assert trace["op"]["condition"] == v["cond"].name and trace["op"]["type"] == "while"
    assert trace["body"]["ops"] == ["elementwise_mul", "write_to_array", "increment",
                                    "less_than"]


def test_plain_loop_records_each_steps_values_and_the_counter():
    main, v = squares_loop(5)
    trace = trace_while(fluid.Executor(), main, scope=fluid.Scope())
    its = trace["iterations"]
    assert [by_name(it["values"])[v["square"].name]["preview"] for it in its] == \
        [[0], [1], [4], [9], [16]]
    # the counter as the step found it, and after the step
    assert [by_name(it["inputs"])[v["i"].name]["preview"] for it in its] == \
        [[0], [1], [2], [3], [4]]
    assert [by_name(it["outputs"])[v["i"].name]["preview"] for it in its] == \
        [[1], [2], [3], [4], [5]]
    assert all(it["ops"] == 4 and it["seconds"] >= 0 for it in its)


def test_plain_loop_records_the_tensor_array_slot_each_step_writes():
    main, v = squares_loop(5)
    trace = trace_while(fluid.Executor(), main, scope=fluid.Scope())
    writes = [[(w["array"], w["slot"], w["preview"]) for w in it["writes"]]
              for it in trace["iterations"]]
    assert writes == [[(v["arr"].name, t, [t * t])] for t in range(5)]
    assert trace["body"]["arrays"] == [v["arr"].name]


def test_inference_loop_reusing_one_scope_is_traced_the_same():
    main, v = squares_loop(4, is_test=True)
    trace = trace_while(fluid.Executor(), main, scope=fluid.Scope())
    assert trace["op"]["is_test"]
    assert [by_name(it["values"])[v["square"].name]["preview"] for it in trace["iterations"]] \
        == [[0], [1], [4], [9]]
    assert [[w["slot"] for w in it["writes"]] for it in trace["iterations"]] == \
        [[0], [1], [2], [3]]


def test_loop_that_never_runs_has_no_iterations():
    main, _ = squares_loop(0, with_length=False)
    trace = trace_while(fluid.Executor(), main, scope=fluid.Scope())
    assert trace["iterations"] == [] and trace["iteration_count"] == 0
    assert trace["initial_condition"] is False
    assert [inv["iterations"] for inv in trace["invocations"]] == [0]


def test_iterations_beyond_the_cap_are_counted_not_described():
    main, _ = squares_loop(12)
    trace = trace_while(fluid.Executor(), main, scope=fluid.Scope(), max_iterations=4)
    assert len(trace["iterations"]) == 4 and trace["iteration_count"] == 12
    assert trace["truncated"] and trace["invocations"][0]["iterations"] == 12


def test_trace_returns_nothing_of_itself_to_the_programs_plan_cache():
    main, v = squares_loop(3)
    scope = fluid.Scope()
    exe = fluid.Executor()
    assert np.asarray(exe.run(main, fetch_list=[v["length"]], scope=scope)[0]).tolist() == [3]
    plans = dict(main._plans)
    trace_while(exe, main, scope=scope, fetch_list=[v["length"]])
    assert main._plans == plans
    built = executor_module.stats["plans_built"]
    assert np.asarray(exe.run(main, fetch_list=[v["length"]], scope=scope)[0]).tolist() == [3]
    assert executor_module.stats["plans_built"] == built  # the cached plan was used again


def test_executor_run_leaves_no_step_scopes_behind():
    # why the trace records during the run: nothing of the loop survives Executor.run
    main, v = squares_loop(5)
    scope = fluid.Scope()
    exe = fluid.Executor()
    for _ in range(3):
        exe.run(main, fetch_list=[v["length"]], scope=scope)
    (plan,) = scope.plans.values()
    assert plan.local.kids == [] and scope.kids == []


def nested_loops(outer_n=2, inner_n=3):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        i = layers.fill_constant(shape=[1], dtype="int64", value=0)
        n = layers.fill_constant(shape=[1], dtype="int64", value=outer_n)
        m = layers.fill_constant(shape=[1], dtype="int64", value=inner_n)
        total = layers.fill_constant(shape=[1], dtype="int64", value=0)
        cond = layers.less_than(x=i, y=n)
        outer = layers.While(cond=cond)
        with outer.block():
            j = layers.fill_constant(shape=[1], dtype="int64", value=0)
            inner_cond = layers.less_than(x=j, y=m)
            inner = layers.While(cond=inner_cond)
            with inner.block():
                layers.increment(x=total, value=1, in_place=True)
                layers.increment(x=j, value=1, in_place=True)
                layers.less_than(x=j, y=m, cond=inner_cond)
            layers.increment(x=i, value=1, in_place=True)
            layers.less_than(x=i, y=n, cond=cond)
    return main, total


def test_nested_loop_is_traced_per_invocation():
    main, total = nested_loops(2, 3)
    trace = trace_while(fluid.Executor(), main, scope=fluid.Scope(), while_op=1)
    assert trace["op"]["block"] == 1
    assert [inv["iterations"] for inv in trace["invocations"]] == [3, 3]
    assert [(it["invocation"], it["step"]) for it in trace["iterations"]] == \
        [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    assert [by_name(it["outputs"])[total.name]["preview"] for it in trace["iterations"]] == \
        [[1], [2], [3], [4], [5], [6]]
    outer = trace_while(fluid.Executor(), main, scope=fluid.Scope())
    assert outer["op"]["block"] == 0 and outer["iteration_count"] == 2


def test_the_loop_to_trace_is_checked():
    main, _ = squares_loop()
    other, _ = squares_loop()
    assert find_while(main) is main.global_block().ops[3]
    with pytest.raises(InvalidArgument, match="while_op expected a while op of the traced"):
        trace_while(fluid.Executor(), main, while_op=other.global_block().ops[3])
    with pytest.raises(InvalidArgument, match=r"while_op expected an index in \[0, 1\)"):
        trace_while(fluid.Executor(), main, while_op=3)
    plain = fluid.Program()
    with fluid.program_guard(plain, fluid.Program()):
        layers.fill_constant(shape=[1], dtype="int64", value=0)
    with pytest.raises(NotFound, match="program expected a while op"):
        trace_while(fluid.Executor(), plain)
    with pytest.raises(InvalidArgument, match="feed expected a dict"):
        trace_while(fluid.Executor(), main, feed=[1])


# --- DynamicRNN -------------------------------------------------------------------------------
def design_rnn():
    """The design documents' batch through a DynamicRNN: a step input, a static input, a
    counter memory and an accumulator memory booted per sequence."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = layers.data("x", [2], dtype="float32", lod_level=1)
        boot = layers.data("boot", [2], dtype="float32")
        static = layers.data("static", [3], dtype="float32")
        drnn = DynamicRNN()
        with drnn.block():
            word = drnn.step_input(x)
            seen = drnn.static_input(static)
            count = drnn.memory(shape=[1], value=0.0)
            acc = drnn.memory(init=boot, need_reorder=True)
            new_count = layers.scale(count, bias=1.0)
            new_acc = layers.elementwise_add(acc, word)
            drnn.update_memory(count, new_count)
            drnn.update_memory(acc, new_acc)
            drnn.output(new_acc, seen)
        outs = drnn()
    return main, startup, drnn, outs, {"count": count, "acc": acc, "seen": seen}


def design_feed():
    rows = sum(LENGTHS)
    x = np.arange(rows * 2, dtype="float32").reshape(rows, 2)
    boot = np.array([[100, 1000], [200, 2000], [300, 3000], [400, 4000]], "float32")
    static = np.arange(12, dtype="float32").reshape(4, 3)
    return {"x": fluid.create_lod_tensor(x, [LENGTHS], fluid.CPUPlace()), "boot": boot,
            "static": static}


@pytest.fixture(scope="module")
def rnn_trace():
    main, startup, drnn, outs, memories = design_rnn()
    scope = fluid.Scope()
    exe = fluid.Executor()
    exe.run(startup, scope=scope)
    trace = trace_while(exe, main, feed=design_feed(), scope=scope, max_rows=40)
    return trace, drnn, outs, memories


def test_dynamic_rnn_is_recognised_from_the_ops_around_the_loop():
    main, _, drnn, outs, _ = design_rnn()
    layout = dynamic_rnn_layout(find_while(main))
    assert layout["table"] == drnn.lod_rank_table.name
    assert layout["inputs"] == {drnn.input_array[0][0].name: "x"}
    assert layout["outputs"] == {out.name: arr.name for out, arr in zip(outs, drnn.output_array)}
    assert sorted(kind for _, kind in layout["shrinks"].values()) == \
        ["memory", "memory", "static_input"]
    plain, _ = squares_loop()
    assert dynamic_rnn_layout(find_while(plain)) is None


def test_dynamic_rnn_rank_table_sorts_the_design_batch(rnn_trace):
    rnn = rnn_trace[0]["dynamic_rnn"]
    assert rnn["lengths"] == [10, 8, 5, 7] and rnn["sorted_lengths"] == [10, 8, 7, 5]
    assert [(item["rank"], item["index"], item["length"]) for item in rnn["rank_table"]["items"]] \
        == [(0, 0, 10), (1, 1, 8), (2, 3, 7), (3, 2, 5)]


def test_dynamic_rnn_batch_shrinks_as_the_rank_table_says(rnn_trace):
    trace = rnn_trace[0]
    rnn = trace["dynamic_rnn"]
    assert rnn["batch_sizes"] == STEP_BATCHES
    assert [step["batch_size"] for step in rnn["steps"]] == STEP_BATCHES
    # the rows each step really read from the input array
    assert [step["input_rows"] for step in rnn["steps"]] == \
        [{list(step["input_rows"])[0]: b} for step, b in zip(rnn["steps"], STEP_BATCHES)]
    assert rnn["step_inputs"][0]["rows_per_step"] == STEP_BATCHES
    # the running sequences are a prefix of the ranking
    assert [step["sequences"] for step in rnn["steps"]][5] == [0, 1, 3]
    assert rnn["steps"][9]["sequences"] == [0]
    assert trace["iteration_count"] == 10
    assert [it["condition"] for it in trace["iterations"]] == [True] * 9 + [False]


def test_dynamic_rnn_memories_are_cut_to_the_running_batch(rnn_trace):
    trace, _, _, memories = rnn_trace
    rnn = trace["dynamic_rnn"]
    for t, step in enumerate(rnn["steps"]):
        cut = by_name(step["memories"])
        before_batch = STEP_BATCHES[t - 1] if t else 4
        assert cut[memories["count"].name]["kind"] == "memory"
        assert cut[memories["count"].name]["before"] == [before_batch, 1]
        assert cut[memories["count"].name]["after"] == [STEP_BATCHES[t], 1]
        assert cut[memories["acc"].name]["after"] == [STEP_BATCHES[t], 2]
        assert cut[memories["seen"].name]["kind"] == "static_input"
        assert cut[memories["seen"].name]["before"] == [4, 3]  # the whole reordered input
        assert cut[memories["seen"].name]["after"] == [STEP_BATCHES[t], 3]


def test_dynamic_rnn_outputs_are_restored_to_input_order(rnn_trace):
    trace, _, outs, _ = rnn_trace
    rnn = trace["dynamic_rnn"]
    assert rnn["restore_order"] == [0, 1, 3, 2]
    acc_out = by_name(rnn["outputs"])[outs[0].name]
    assert acc_out["steps"] == 10
    assert [(o["sequence"], o["rank"], o["length"], o["rows"]) for o in acc_out["order"]] == \
        [(0, 0, 10, [0, 10]), (1, 1, 8, [10, 18]), (2, 3, 5, [18, 23]), (3, 2, 7, [23, 30])]
    value = acc_out["value"]
    assert value["levels"][0]["lengths"] == LENGTHS
    feed = design_feed()
    x, boot = np.asarray(feed["x"]), feed["boot"]
    got = np.array([row["values"] for row in value["data"]["rows"]], "float32")
    off = np.concatenate([[0], np.cumsum(LENGTHS)])
    for i in range(4):  # sequence i: its boot plus the running sum of its own rows
        np.testing.assert_array_equal(got[off[i]:off[i + 1]],
                                      boot[i] + np.cumsum(x[off[i]:off[i + 1]], axis=0))
    seen = by_name(rnn["outputs"])[outs[1].name]["value"]
    static = design_feed()["static"]
    seen_rows = np.array([row["values"] for row in seen["data"]["rows"]], "float32")
    np.testing.assert_array_equal(seen_rows[off[2]:off[3]], np.tile(static[2], (5, 1)))


def test_dynamic_rnn_trace_stays_small(rnn_trace):
    size = len(json.dumps(rnn_trace[0]))
    assert size < 150_000, size


def test_dynamic_rnn_with_backward_and_update_is_traced():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = layers.data("x", [3], dtype="float32", lod_level=1)
        drnn = DynamicRNN()
        with drnn.block():
            word = drnn.step_input(x)
            prev = drnn.memory(shape=[4])
            hidden = layers.fc(input=[word, prev], size=4, act="tanh")
            drnn.update_memory(prev, hidden)
            drnn.output(hidden)
        loss = layers.mean(layers.sequence_pool(drnn(), "sum"))
        fluid.optimizer.SGD(0.1).minimize(loss)
    scope = fluid.Scope()
    exe = fluid.Executor()
    exe.run(startup, scope=scope)
    lengths = [2, 4, 1]
    feed = {"x": fluid.create_lod_tensor(np.ones((7, 3), "float32"), [lengths],
                                         fluid.CPUPlace())}
    before = {p.name: scope.find_var(p.name).value.array for p in main.all_parameters()}
    trace = trace_while(exe, main, feed=feed, scope=scope, fetch_list=[loss])
    assert trace["iteration_count"] == 4
    # tracing is looking: the SGD step it ran is undone
    assert all(scope.find_var(name).value.array is value for name, value in before.items())
    rnn = trace["dynamic_rnn"]
    assert rnn["batch_sizes"] == [3, 2, 1, 1] and rnn["restore_order"] == [1, 0, 2]
    assert [step["memories"][0]["after"] for step in rnn["steps"]] == \
        [[3, 4], [2, 4], [1, 4], [1, 4]]
