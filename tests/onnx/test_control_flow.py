"""Fluid's control flow in ONNX: ``cond`` (two conditional_blocks and a select_input) and
``case``/``Switch`` become If nodes, a ``While`` loop (and ``while_loop``) a Loop, and each
exported model gives the executor's outputs in onnxruntime on inputs that take every
branch and run the loop different numbers of times."""
import numpy as np
import pytest

import fluid_nb as fluid

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def build(make):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        fetch = make()
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    return main, scope, fetch


def check_against_executor(tmp_path, main, scope, fetch, feeds):
    """Export once, then every feed gives the executor's outputs in onnxruntime."""
    names = [f.name for f in fetch]
    report = fluid.onnx.export(main, tmp_path / "m.onnx", feed=list(feeds[0]), fetch=names,
                               scope=scope, strict=True)
    assert report.complete, str(report)
    model = onnx.load(str(tmp_path / "m.onnx"))
    onnx.checker.check_model(model, full_check=True)
    session = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    exe = fluid.Executor(fluid.CPUPlace())
    for feed in feeds:
        got = session.run(names, feed)
        want = exe.run(main, feed=feed, fetch_list=names, scope=scope)
        for name, g, w in zip(names, got, want):
            assert g.dtype == w.dtype and g.shape == w.shape, name
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=name)
    return report, model


def node_types(graph):
    """Every node type of ``graph`` and its subgraphs."""
    types = []
    for node in graph.node:
        types.append(node.op_type)
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                types += node_types(attribute.g)
    return types


def test_cond_takes_the_branch_its_predicate_picks(tmp_path):
    def make():
        x = fluid.layers.data(name="x", shape=[3], dtype="float32")
        positive = fluid.layers.greater_than(fluid.layers.reduce_sum(x),
                                             fluid.layers.fill_constant([1], "float32", 0.0))
        return [fluid.layers.cond(positive, lambda: fluid.layers.scale(x, 2.0),
                                  lambda: fluid.layers.relu(x) - 1.0)]
    main, scope, fetch = build(make)
    rng = np.random.RandomState(0)
    feeds = [{"x": np.abs(rng.randn(4, 3)).astype("float32")},
             {"x": -np.abs(rng.randn(2, 3)).astype("float32")}]
    report, model = check_against_executor(tmp_path, main, scope, fetch, feeds)
    types = [row.op_type for row in report.rows]
    assert types.count("conditional_block") == 2 and "select_input" in types
    assert node_types(model.graph).count("If") >= 3


def test_case_picks_the_first_true_branch_else_the_default(tmp_path):
    def make():
        x = fluid.layers.data(name="x", shape=[2], dtype="float32", append_batch_size=False)
        first = fluid.layers.reduce_sum(fluid.layers.slice(x, axes=[0], starts=[0], ends=[1]))
        zero = fluid.layers.fill_constant([1], "float32", 0.0)
        return [fluid.layers.case(
            pred_fn_pairs=[(fluid.layers.greater_than(first, zero), lambda: x * 3.0),
                           (fluid.layers.less_than(first, zero - 1.0), lambda: x - 5.0)],
            default=lambda: fluid.layers.exp(x))]
    main, scope, fetch = build(make)
    feeds = [{"x": np.array(v, "float32")} for v in ([2.0, 1.0], [-3.0, 1.0], [-0.5, 0.5])]
    check_against_executor(tmp_path, main, scope, fetch, feeds)


def test_switch_assigning_an_existing_variable(tmp_path):
    """Switch's blocks write a variable made before them: a false block keeps its value."""
    def make():
        x = fluid.layers.data(name="x", shape=[1], dtype="float32", append_batch_size=False)
        rate = fluid.layers.fill_constant([1], "float32", 0.0)
        with fluid.layers.Switch() as switch:
            with switch.case(fluid.layers.less_than(x, fluid.layers.fill_constant(
                    [1], "float32", 1.0))):
                fluid.layers.assign(fluid.layers.fill_constant([1], "float32", 0.1), rate)
            with switch.case(fluid.layers.less_than(x, fluid.layers.fill_constant(
                    [1], "float32", 5.0))):
                fluid.layers.assign(x * 0.01, rate)
            with switch.default():
                fluid.layers.assign(fluid.layers.fill_constant([1], "float32", 0.001), rate)
        return [rate]
    main, scope, fetch = build(make)
    feeds = [{"x": np.array([v], "float32")} for v in (0.5, 3.0, 9.0)]
    check_against_executor(tmp_path, main, scope, fetch, feeds)


def test_a_while_loop_runs_as_many_times_as_its_condition_holds(tmp_path):
    def make():
        x = fluid.layers.data(name="x", shape=[4], dtype="float32")
        limit = fluid.layers.data(name="limit", shape=[1], dtype="int64",
                                  append_batch_size=False)
        i = fluid.layers.fill_constant([1], "int64", 0)
        total = fluid.layers.assign(x)
        condition = fluid.layers.less_than(i, limit)
        loop = fluid.layers.While(condition)
        with loop.block():
            fluid.layers.assign(fluid.layers.tanh(total) * 2.0 + x, total)
            fluid.layers.increment(i, in_place=True)
            fluid.layers.less_than(i, limit, cond=condition)
        return [total, i]
    main, scope, fetch = build(make)
    rng = np.random.RandomState(1)
    feeds = [{"x": rng.randn(3, 4).astype("float32"), "limit": np.array([n], "int64")}
             for n in (1, 4, 7)]
    report, model = check_against_executor(tmp_path, main, scope, fetch, feeds)
    assert "Loop" in node_types(model.graph)


def test_while_loop_with_loop_vars(tmp_path):
    def make():
        x = fluid.layers.data(name="x", shape=[3], dtype="float32", append_batch_size=False)
        i = fluid.layers.fill_constant([1], "int64", 0)
        ten = fluid.layers.fill_constant([1], "int64", 10)
        i, y = fluid.layers.while_loop(
            lambda i, y: fluid.layers.less_than(i, ten),
            lambda i, y: [fluid.layers.increment(i), fluid.layers.elementwise_add(y, y * 0.5)],
            [i, fluid.layers.assign(x)])
        return [y, i]
    main, scope, fetch = build(make)
    check_against_executor(tmp_path, main, scope, fetch,
                           [{"x": np.array([1.0, -2.0, 0.5], "float32")}])


def test_a_fed_variable_the_loop_rewrites_comes_out_under_a_stated_name(tmp_path):
    """while_loop writes its results back into its loop variables: here the feed itself.
    ONNX cannot give an input a second value under its name, so the output is renamed and
    the report says so."""
    def make():
        x = fluid.layers.data(name="x", shape=[3], dtype="float32", append_batch_size=False)
        i = fluid.layers.fill_constant([1], "int64", 0)
        three = fluid.layers.fill_constant([1], "int64", 3)
        _, y = fluid.layers.while_loop(lambda i, y: fluid.layers.less_than(i, three),
                                       lambda i, y: [fluid.layers.increment(i), y * 2.0],
                                       [i, x])
        return [y]
    main, scope, (y,) = build(make)
    report = fluid.onnx.export(main, tmp_path / "m.onnx", feed=["x"], fetch=[y], scope=scope)
    assert y.name == "x"
    renamed = report.model.graph.output[0].name
    assert renamed != "x" and f"as {renamed}" in " ".join(report.conventions)
    session = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    x = np.array([1.0, -2.0, 0.5], "float32")
    np.testing.assert_allclose(session.run([renamed], {"x": x})[0], x * 8.0)


def test_a_loop_whose_condition_the_body_never_writes_is_reported(tmp_path):
    def make():
        x = fluid.layers.data(name="x", shape=[1], dtype="float32", append_batch_size=False)
        condition = fluid.layers.less_than(x, fluid.layers.fill_constant([1], "float32", 1.0))
        total = fluid.layers.assign(x)
        loop = fluid.layers.While(condition)
        with loop.block():
            fluid.layers.assign(total + 1.0, total)
        return [total]
    main, scope, fetch = build(make)
    report = fluid.onnx.export(main, tmp_path / "m.onnx", feed=["x"], fetch=fetch, scope=scope,
                               strict=True)
    row = next(r for r in report.rows if r.op_type == "while")
    assert row.status == "not converted" and "never writes its condition" in row.note
    assert report.path is None and not (tmp_path / "m.onnx").exists()
