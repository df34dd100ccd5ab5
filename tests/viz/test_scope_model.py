"""The scope model: the scope tree, each variable's kind, shape, dtype, LoD, place and bytes,
step scopes under the variable that keeps them, totals per scope, caps."""
import json

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb import layers
from fluid_nb.errors import InvalidArgument
from fluid_nb.tensor.lod_rank_table import LoDRankTable
from fluid_nb.tensor.tensor import LoDTensor, LoDTensorArray, SelectedRows
from fluid_nb.viz.scope_model import describe_value, scope_model


def by_name(node):
    return {v["name"]: v for v in node["vars"]}


def all_nodes(node):
    yield node
    for entry in node["vars"]:
        for step in entry.get("scopes", ()):
            yield from all_nodes(step)
    for kid in node["kids"]:
        yield from all_nodes(kid)


def filled_scope():
    scope = fluid.Scope()
    scope.var("w").value = LoDTensor(np.ones((3, 4), "float32"))
    scope.var("seq").value = LoDTensor(np.arange(14, dtype="int64").reshape(14, 1),
                                       [[0, 5, 8, 10, 14]])
    scope.var("arr").value = LoDTensorArray([LoDTensor(np.zeros((2, 2), "float32")),
                                             LoDTensor(np.zeros((1, 2), "float32")),
                                             LoDTensor()])
    scope.var("table").value = LoDRankTable.from_lod([[0, 5, 8, 10, 14]])
    scope.var("grad").value = SelectedRows([0, 4], 10, LoDTensor(np.ones((2, 3), "float64")))
    scope.var("empty")
    scope.var("no_data").value = LoDTensor(None, [[0, 1]])
    return scope


def test_model_is_json_with_its_format_and_version():
    model = scope_model(filled_scope())
    assert model["format"] == "fluid-nb.scope" and model["version"] == 1
    assert json.loads(json.dumps(model, allow_nan=False)) == model


def test_tensor_entry_has_shape_dtype_lod_place_bytes():
    entries = by_name(scope_model(filled_scope())["root"])
    w, seq = entries["w"], entries["seq"]
    assert (w["kind"], w["shape"], w["dtype"], w["place"], w["bytes"]) == \
        ("LoDTensor", [3, 4], "float32", "CPUPlace", 48)
    assert w["preview"] == [1.0] * 8 and w["preview_truncated"]
    assert seq["lod"] == [[0, 5, 8, 10, 14]] and seq["dtype"] == "int64"


def test_each_kind_of_runtime_value_is_named():
    entries = by_name(scope_model(filled_scope())["root"])
    assert {n: e["kind"] for n, e in entries.items()} == {
        "w": "LoDTensor", "seq": "LoDTensor", "arr": "LoDTensorArray", "table": "LoDRankTable",
        "grad": "SelectedRows", "empty": "Uninitialized", "no_data": "Uninitialized"}
    assert not entries["empty"]["initialized"] and not entries["no_data"]["initialized"]
    assert entries["no_data"]["lod"] == [[0, 1]]


def test_tensor_array_shows_its_length_and_slots():
    arr = by_name(scope_model(filled_scope())["root"])["arr"]
    assert arr["length"] == 3 and arr["bytes"] == 16 + 8
    assert [slot["shape"] for slot in arr["items"]] == [[2, 2], [1, 2], None]
    assert [slot["kind"] for slot in arr["items"]] == ["LoDTensor", "LoDTensor", "Uninitialized"]


def test_rank_table_shows_its_items_in_rank_order():
    table = by_name(scope_model(filled_scope())["root"])["table"]
    assert table["items"] == [[0, 5], [3, 4], [1, 3], [2, 2]]
    assert table["level"] == 0 and table["count"] == 4


def test_selected_rows_show_rows_height_and_value():
    grad = by_name(scope_model(filled_scope())["root"])["grad"]
    assert grad["rows"] == [0, 4] and grad["height"] == 10 and grad["row_count"] == 2
    assert grad["shape"] == [2, 3] and grad["dtype"] == "float64" and grad["bytes"] == 48


def test_totals_sum_the_scopes_own_bytes_and_its_subtree():
    scope = filled_scope()
    kid = scope.new_scope()
    kid.var("h").value = LoDTensor(np.zeros((5,), "float32"))
    model = scope_model(scope)
    own = 48 + 14 * 8 + 24 + 48
    assert model["root"]["totals"] == {"vars": 7, "bytes": own, "subtree_bytes": own + 20}
    assert model["root"]["kids"][0]["totals"]["bytes"] == 20
    assert model["stats"]["scopes"] == 2 and model["stats"]["vars"] == 8
    assert model["stats"]["bytes"] == own + 20


def test_shared_arrays_count_once_in_unique_bytes():
    scope = fluid.Scope()
    value = LoDTensor(np.zeros((10,), "float32"))
    scope.var("a").value = value
    scope.new_scope().var("a_snapshot").value = value
    stats = scope_model(scope)["stats"]
    assert stats["bytes"] == 80 and stats["unique_bytes"] == 40


def counter_loop():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        i = layers.fill_constant(shape=[1], dtype="int64", value=0)
        n = layers.fill_constant(shape=[1], dtype="int64", value=3)
        arr = layers.create_array("int64")
        cond = layers.less_than(x=i, y=n)
        loop = layers.While(cond=cond)
        with loop.block():
            square = layers.elementwise_mul(i, i)
            layers.array_write(square, i, array=arr)
            layers.increment(x=i, value=1, in_place=True)
            layers.less_than(x=i, y=n, cond=cond)
    return main, square


def test_step_scopes_of_a_while_appear_under_their_variable_once():
    main, square = counter_loop()
    scope = fluid.Scope()
    fluid.Executor().run_block(main.global_block(), scope)  # keeps every value in scope
    holder = main.global_block().ops[-1].output("StepScopes")[0]
    model = scope_model(scope)
    root = model["root"]
    steps = by_name(root)[holder]
    assert steps["kind"] == "StepScopes" and steps["count"] == 3
    assert [s["id"] for s in steps["scopes"]] == [f"s/{holder}/{k}" for k in range(3)]
    assert root["kids"] == []  # the step scopes are kids of scope, shown once, under holder
    ids = [node["id"] for node in all_nodes(root)]
    assert len(ids) == len(set(ids)) == 4 == model["stats"]["scopes"]
    squares = [by_name(s)[square.name]["preview"] for s in steps["scopes"]]
    assert squares == [[0], [1], [4]]
    arr = [v for v in root["vars"] if v["kind"] == "LoDTensorArray"][0]
    assert arr["length"] == 3


def test_depth_cap_truncates_deep_scopes():
    scope = fluid.Scope()
    deep = scope
    for depth in range(5):
        deep = deep.new_scope()
        deep.var(f"v{depth}").value = LoDTensor(np.zeros((1,), "float32"))
    model = scope_model(scope, max_depth=2)
    node = model["root"]
    for _ in range(3):
        node = node["kids"][0]
    assert node["depth"] == 3 and node["truncated"] and node["vars"] == []
    assert model["truncated"]


def test_variable_cap_keeps_the_first_names():
    scope = fluid.Scope()
    for k in range(10):
        scope.var(f"v{k}").value = LoDTensor(np.zeros((1,), "float32"))
    root = scope_model(scope, max_vars=3)["root"]
    assert [v["name"] for v in root["vars"]] == ["v0", "v1", "v2"]
    assert root["vars_truncated"] and root["totals"]["vars"] == 10
    assert root["totals"]["bytes"] == 40  # totals still count every variable


def test_describe_value_of_a_step_scope_list_and_a_feed_list():
    assert describe_value([fluid.Scope(), fluid.Scope()])["kind"] == "StepScopes"
    assert describe_value([LoDTensor(np.zeros(1))])["kind"] == "List"


def test_bad_arguments_raise_typed_errors():
    with pytest.raises(InvalidArgument, match="scope expected a Scope"):
        scope_model({"x": 1})
    with pytest.raises(InvalidArgument, match="max_depth expected an int >= 0"):
        scope_model(fluid.Scope(), max_depth=-1)


def test_with_its_program_a_scalar_keeps_the_1_a_fluid_1x_program_declares():
    """A kernel leaves a mean 0-D in the scope; the program declares it [1], as Fluid 1.x
    did, and the model given the program says [1] (the rest of the entry is the same)."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = layers.data(name="x", shape=[3], dtype="float32")
        loss = layers.mean(layers.fc(x, 2))
    loss.persistable = True  # kept in the scope after the run
    scope, exe = fluid.Scope(), fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    exe.run(main, feed={"x": np.ones((4, 3), "float32")}, fetch_list=[loss], scope=scope)
    assert main.global_block().var(loss.name).shape == (1,)
    bare = by_name(scope_model(scope)["root"])[loss.name]
    shaped = by_name(scope_model(scope, program=main)["root"])[loss.name]
    assert np.asarray(scope.find_var(loss.name).value).ndim == 0 and bare["shape"] == []
    assert shaped["shape"] == [1]
    assert {k: v for k, v in shaped.items() if k != "shape"} == \
        {k: v for k, v in bare.items() if k != "shape"}


def test_the_program_must_be_a_program():
    from fluid_nb.errors import InvalidType
    with pytest.raises(InvalidType, match="program"):
        scope_model(fluid.Scope(), program="main")
