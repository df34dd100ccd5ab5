"""The program model: blocks nested by owner, op and variable nodes, data edges (outer-block
variables for sub-block uses), forward<->grad pairs, roles, stable ids, `new` since a mark,
JSON-serialisable, and DOT that names every node."""
import json
import os
import pathlib
import re
import shutil
import subprocess

import numpy as np
import pytest

import fluid_nb as fluid
import fluid_nb.ops.control_flow  # noqa: F401  (control-flow ops registered)
from fluid_nb import viz
from fluid_nb.errors import InvalidArgument
from fluid_nb.viz.program_model import MAX_INLINE_ROWS

L = fluid.layers
FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "paddle"


def _fc_net(optimize=True):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = L.data(name="x", shape=[13], dtype="float32")
        y = L.data(name="y", shape=[1], dtype="float32")
        hidden = L.fc(x, size=8, act="relu")
        pred = L.fc(hidden, size=1)
        loss = L.mean(L.square_error_cost(input=pred, label=y))
        if optimize:
            fluid.optimizer.SGD(learning_rate=0.01).minimize(loss)
    return main


def _while_program():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        limit = L.fill_constant(shape=[1], dtype="int64", value=3)
        i = L.fill_constant(shape=[1], dtype="int64", value=0)
        total = L.fill_constant(shape=[2], dtype="float32", value=0.0)
        cond = L.less_than(i, limit)
        loop = L.While(cond=cond)
        with loop.block():
            L.assign(L.scale(total, scale=2.0, bias=1.0), total)
            L.increment(x=i, value=1, in_place=True)
            L.less_than(i, limit, cond=cond)
    return main


def _ops_by_type(model, op_type):
    return [op for op in model["ops"] if op["type"] == op_type]


def _by_id(model):
    return {e["id"]: e for kind in ("blocks", "ops", "vars") for e in model[kind]}


def test_fc_net_model_has_ops_vars_and_data_edges():
    main = _fc_net(optimize=False)
    model = viz.program_model(main, title="fc")
    assert model["format"] == "fluid-nb.program" and model["version"] == 1
    assert model["title"] == "fc" and model["revision"] == main._version
    assert [op["type"] for op in model["ops"]] == [op.type for op in main.global_block().ops]
    assert model["stats"] == {"blocks": 1, "ops": len(model["ops"]), "vars": len(model["vars"])}
    mul = model["ops"][0]
    assert mul["type"] == "mul" and mul["inputs"] == {"X": ["x"], "Y": ["fc_0.w_0"]}
    assert mul["attrs"]["x_num_col_dims"] == 1 and mul["role"] == "forward"
    edges = {(e["src"], e["dst"], e["slot"]) for e in model["edges"]}
    assert ("v:0:x", mul["id"], "X") in edges and ("v:0:fc_0.w_0", mul["id"], "Y") in edges
    assert (mul["id"], "v:0:fc_0.tmp_0", "Out") in edges
    weight = _by_id(model)["v:0:fc_0.w_0"]
    assert weight["parameter"] and weight["persistable"] and weight["shape"] == [13, 8]
    x = _by_id(model)["v:0:x"]
    assert x["shape"] == [-1, 13] and x["dtype"] == "float32" and x["type"] == "LOD_TENSOR"
    ids = _by_id(model)
    assert all(e["src"] in ids and e["dst"] in ids for e in model["edges"])
    assert len({e["id"] for e in model["edges"]}) == len(model["edges"])


def test_backward_and_optimizer_ops_get_roles_and_grad_pairs():
    model = viz.program_model(_fc_net())
    ops = _by_id(model)
    roles = {op["type"]: op["role"] for op in model["ops"]}
    assert roles["mean"] == "loss" and roles["sgd"] == "optimize" and roles["relu"] == "forward"
    assert roles["mean_grad"] == "backward" and roles["mul_grad"] == "backward"
    # fill_constant of the loss gradient carries Backward|Loss = 257: backward
    assert _ops_by_type(model, "fill_constant")[0]["role"] == "backward"
    muls, mul_grads = _ops_by_type(model, "mul"), _ops_by_type(model, "mul_grad")
    # the second fc's mul (reading the hidden layer) pairs with the grad op reading its Out@GRAD
    for mul in muls:
        grad = ops[mul["pair"]]
        assert grad["type"] == "mul_grad" and grad["pair"] == mul["id"]
        assert mul["outputs"]["Out"][0] + "@GRAD" in grad["inputs"]["Out@GRAD"]
    assert {g["id"] for g in mul_grads} == {m["pair"] for m in muls}
    assert all(op["pair"] is None for op in _ops_by_type(model, "sgd"))


def test_while_sub_block_nests_under_its_owner_with_outer_variable_edges():
    main = _while_program()
    model = viz.program_model(main)
    blocks = {b["id"]: b for b in model["blocks"]}
    loop = _ops_by_type(model, "while")[0]
    assert blocks["b1"]["parent"] == "b0" and blocks["b1"]["owner"] == loop["id"]
    assert blocks["b0"]["parent"] is None and blocks["b0"]["owner"] is None
    assert loop["sub_blocks"] == ["b1"] and loop["attrs"]["sub_block"] == "b1"
    scale = _ops_by_type(model, "scale")[0]
    assert scale["block"] == "b1"
    total = scale["inputs"]["X"][0]
    # `total` lives in block 0: the sub-block op's edge goes to the outer variable node
    assert (f"v:0:{total}", scale["id"]) in {(e["src"], e["dst"]) for e in model["edges"]}
    assert f"v:1:{total}" not in _by_id(model)
    dot = viz.assemble_dot(model)
    assert 'subgraph "cluster_b1" {' in dot and dot.count("{") == dot.count("}")


def test_conditional_block_sub_blocks_are_owned_by_their_ops():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x = L.data(name="x", shape=[2], dtype="float32", append_batch_size=False)
        p = L.data(name="p", shape=[1], dtype="bool", append_batch_size=False)
        L.cond(p, lambda: x * 2.0, lambda: x - 1.0)
    model = viz.program_model(main)
    conds = _ops_by_type(model, "conditional_block")
    assert len(conds) == 2
    blocks = {b["id"]: b for b in model["blocks"]}
    for op in conds:
        (bid,) = op["sub_blocks"]
        assert blocks[bid]["owner"] == op["id"] and blocks[bid]["parent"] == "b0"
        assert "conditional_block" in blocks[bid]["label"]
        inner = [o for o in model["ops"] if o["block"] == bid]
        assert inner and any(e["src"] == "v:0:x" and e["dst"] == inner[0]["id"]
                             for e in model["edges"])


def test_op_ids_stay_stable_as_the_program_grows_and_rolls_back():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = L.data(name="x", shape=[4], dtype="float32")
        h = L.fc(x, size=4)
        first = [op["id"] for op in viz.program_model(main)["ops"]]
        L.relu(h)
    grown = [op["id"] for op in viz.program_model(main)["ops"]]
    assert grown[:len(first)] == first and len(grown) == len(first) + 1
    main.global_block()._remove_op(len(main.global_block().ops) - 1)
    assert [op["id"] for op in viz.program_model(main)["ops"]] == first
    assert viz.op_id(main.global_block().ops[0]) == first[0]


def test_mark_flags_exactly_the_ops_and_vars_added_after_it():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = L.data(name="x", shape=[4], dtype="float32")
        h = L.fc(x, size=4)
        mark = viz.program_mark(main)
        out = L.relu(h)
    model = viz.program_model(main, mark=mark)
    assert [op["type"] for op in model["ops"] if op["new"]] == ["relu"]
    assert [v["name"] for v in model["vars"] if v["new"]] == [out.name]
    assert not any(op["new"] for op in viz.program_model(main)["ops"])
    with pytest.raises(InvalidArgument, match="same program"):
        viz.program_model(fluid.Program(), mark=mark)


def test_live_source_lines_reach_the_model():
    with fluid.live(name="viz_source_test") as session:
        x = L.data(name="x", shape=[3], dtype="float32", value=np.ones((2, 3), "float32"))
        L.scale(x, scale=2.0)
    model = viz.program_model(session.program)
    scale = _ops_by_type(model, "scale")[0]
    assert scale["source"] == f"{__file__}:{scale['source'].rsplit(':', 1)[1]}"
    assert int(scale["source"].rsplit(":", 1)[1]) > 0
    assert __file__ in scale["dot"]  # the tooltip says where the op was added


def test_op_role_bits_map_to_role_names():
    assert [viz.op_role_name(v) for v in (0, None, 1, 2, 16, 256, 257, 4, 8, 2 | 16)] == \
        ["forward", "forward", "backward", "optimize", "lr_sched", "loss", "backward",
         "other", "other", "lr_sched"]


def test_model_is_plain_json_even_with_numpy_and_non_finite_attrs():
    main = fluid.Program()
    block = main.global_block()
    block.create_var(name="a", shape=[2], dtype="float32")
    block.append_op(type="some_unknown_op", inputs={"X": ["a"]}, outputs={},
                    attrs={"scale": np.float32(0.5), "limit": float("inf"),
                           "sizes": [np.int64(2), 3]})
    model = viz.program_model(main)
    attrs = json.loads(json.dumps(model, allow_nan=False))["ops"][0]["attrs"]
    assert attrs["scale"] == 0.5 and attrs["limit"] == "inf" and attrs["sizes"] == [2, 3]
    assert model["ops"][0]["role"] == "forward"


def _json_types_only(value, where="model"):
    """Every value one JSON reads back as itself: str, int, finite float, bool, None, list
    and dict with str keys (no tuples, NumPy scalars or enums)."""
    kind = type(value)
    if kind is list:
        for i, item in enumerate(value):
            _json_types_only(item, f"{where}[{i}]")
    elif kind is dict:
        for key, item in value.items():
            assert type(key) is str, (where, key)
            _json_types_only(item, f"{where}.{key}")
    else:
        assert value is None or kind in (str, int, bool, float), (where, kind)
        assert kind is not float or np.isfinite(value), (where, value)


def test_models_hold_json_types_only_so_views_send_them_as_built():
    # a ProgramView compares and sends the models as program_model builds them, with no
    # JSON round trip between: a tuple or a NumPy scalar would read as a change every cell
    programs = [_fc_net(), _while_program()]
    for path in sorted(FIXTURES.glob("**/*.pdmodel"))[:12]:
        programs.append(fluid.Program.parse_from_string(path.read_bytes()))
    odd = fluid.Program()
    odd.global_block().create_var(name="a", shape=(2,), dtype="float32")
    odd.global_block().append_op(type="some_unknown_op", inputs={"X": ["a"]}, outputs={},
                                 attrs={"scale": np.float32(0.5), "ids": (np.int64(2), 3),
                                        "limit": float("-inf"), "names": ["a", "b"]})
    programs.append(odd)
    for program in programs:
        mark = viz.program_mark(program)
        for model in (viz.program_model(program), viz.program_model(program, mark=mark)):
            _json_types_only(model)
            assert json.loads(json.dumps(model, allow_nan=False)) == model


def test_loaded_paddle_program_models_with_its_control_flow():
    data = (FIXTURES / "control_flow" / "while_grad" / "main.pdmodel").read_bytes()
    program = fluid.Program.parse_from_string(data)
    model = viz.program_model(program)
    json.dumps(model, allow_nan=False)
    assert model["stats"]["ops"] == sum(len(b.ops) for b in program.blocks)
    assert len(model["blocks"]) == len(program.blocks) > 1
    owned = [b for b in model["blocks"] if b["owner"] is not None]
    assert owned and all(_by_id(model)[b["owner"]]["type"] in ("while", "while_grad")
                         for b in owned)
    loop = _ops_by_type(model, "while")[0]
    assert _by_id(model)[loop["pair"]]["type"] == "while_grad"
    assert all("op_callstack" not in op["attrs"] for op in model["ops"])


def _check_dot(dot, model, collapsed=()):
    assert dot.startswith("digraph program {") and dot.endswith("}")
    assert dot.count("{") == dot.count("}") and dot.count("[") == dot.count("]")
    for element in model["ops"] + model["vars"]:
        if element["block"] not in collapsed:
            assert f'"{element["id"]}" [id="{element["id"]}"' in dot


def test_dot_names_every_node_by_its_model_id():
    model = viz.program_model(_fc_net())
    dot = viz.assemble_dot(model, params_as_nodes=True)
    _check_dot(dot, model)
    assert dot.count(" -> ") == len(model["edges"])
    sgd = _ops_by_type(model, "sgd")[0]["dot"]
    grad = _ops_by_type(model, "mul_grad")[0]["dot"]
    fwd = _ops_by_type(model, "mul")[0]["dot"]
    colours = [re.search(r'fillcolor="([^"]+)"', s) for s in (sgd, grad, fwd)]
    assert colours[0].group(1) != colours[1].group(1)  # optimizer and grad ops look different
    assert colours[2] is None  # forward ops take the header's default fill
    assert 'class="var parameter"' in _by_id(model)["v:0:fc_0.w_0"]["dot"]
    assert all("tooltip=" in e["dot"] for kind in ("ops", "vars", "edges") for e in model[kind])


def test_parameters_are_drawn_inside_the_ops_that_use_them():
    model = viz.program_model(_fc_net())
    dot = viz.assemble_dot(model)
    persistable = [v for v in model["vars"] if v["persistable"]]
    assert persistable and all(v["inline"] for v in persistable)
    assert not any(v["inline"] for v in model["vars"] if not v["persistable"])
    for var in persistable:  # no node, and so no edge, for a parameter or a learning rate
        assert f'"{var["id"]}"' not in dot
    temporaries = [v for v in model["vars"] if not v["persistable"]]
    _check_dot(dot, {"ops": model["ops"], "vars": temporaries})
    mul = _ops_by_type(model, "mul")[0]
    assert "Y: fc_0.w_0 [13, 8]" in mul["dot_inline"] and "Y: fc_0.w_0" not in mul["dot"]
    sgd = _ops_by_type(model, "sgd")[0]["dot_inline"]
    assert "Param \u2192 ParamOut: fc_0" in sgd and "LearningRate: learning_rate_0" in sgd
    # an op using no persistable variable has no second statement
    assert all("dot_inline" not in op for op in _ops_by_type(model, "relu"))
    # fewer, shorter edges: none to a persistable variable
    inner = {v["id"] for v in persistable}
    assert all(e.get("inline") for e in model["edges"] if {e["src"], e["dst"]} & inner)
    assert dot.count(" -> ") == sum(1 for e in model["edges"] if not e.get("inline"))


def test_gradient_ops_draw_the_forward_values_they_read_inside_their_box():
    model = viz.program_model(_fc_net())
    dot = viz.assemble_dot(model)
    ops = {op["id"]: op for op in model["ops"]}
    backward_reads = [e for e in model["edges"]
                      if e["dst"] in ops and ops[e["dst"]]["role"] == "backward"]
    forward_reads = [e for e in backward_reads if "@GRAD" not in e["src"]]
    assert forward_reads and all(e.get("inline") for e in forward_reads)
    # the gradients themselves stay edges: the backward pass reads as a chain
    assert all(not e.get("inline") for e in backward_reads if "@GRAD" in e["src"])
    relu_grad = _ops_by_type(model, "relu_grad")[0]
    assert "Out: fc_0.tmp_2 [-1, 8]" in relu_grad["dot_inline"]
    assert f'"v:0:fc_0.tmp_2" -> "{relu_grad["id"]}"' not in dot
    assert f'"v:0:fc_0.tmp_2" -> "{relu_grad["id"]}"' in viz.assemble_dot(
        model, params_as_nodes=True)


def test_a_sub_block_draws_inputs_from_outside_it_inside_the_op_that_reads_them():
    model = viz.program_model(_while_program())
    ops = {op["id"]: op for op in model["ops"]}
    by_id = _by_id(model)
    inner_reads = [e for e in model["edges"] if e["dst"] in ops
                   and ops[e["dst"]]["block"] == "b1"]
    written_inside = {e["dst"] for e in model["edges"]
                      if e["src"] in ops and ops[e["src"]]["block"] == "b1"}
    outside = [e for e in inner_reads if by_id[e["src"]]["block"] != "b1"]
    assert outside
    for edge in outside:  # an edge into the cluster only for what the loop itself writes
        assert bool(edge.get("inline")) == (edge["src"] not in written_inside), edge["id"]
    assert any(not e.get("inline") for e in outside)


def test_a_sub_block_is_tied_to_the_op_that_owns_it():
    model = viz.program_model(_while_program())
    loop = _ops_by_type(model, "while")[0]
    first = next(op for op in model["ops"] if op["block"] == "b1")
    tie = f'"{loop["id"]}" -> "{first["id"]}" [style=invis];'
    assert tie in viz.assemble_dot(model).splitlines()[-2]
    assert tie not in viz.assemble_dot(model, collapsed={"b1"})


def test_an_op_lists_at_most_a_few_rows_and_counts_the_rest():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        xs = [fluid.layers.create_parameter(shape=[2], dtype="float32", name=f"p{i}")
              for i in range(12)]
        fluid.layers.sums(xs)
    op = _ops_by_type(viz.program_model(main), "sum")[0]
    rows = re.findall(r'<tr><td align="left">(.*?)</td></tr>', op["dot_inline"])
    assert len(rows) == MAX_INLINE_ROWS
    assert "and 5 more" in rows[-1]


def test_backward_and_optimizer_ops_can_be_hidden_with_their_gradients():
    model = viz.program_model(_fc_net())
    dot = viz.assemble_dot(model, hidden_roles=("backward", "optimize"))
    for op in model["ops"]:
        drawn = f'"{op["id"]}" [' in dot
        assert drawn == (op["role"] not in ("backward", "optimize")), op["type"]
    assert "@GRAD" not in dot
    assert '"v:0:fc_0.tmp_0" [' in dot  # forward temporaries stay


def test_collapsed_block_leaves_out_its_nodes_and_edges():
    model = viz.program_model(_while_program())
    dot = viz.assemble_dot(model, collapsed={"b1"})
    _check_dot(dot, model, collapsed={"b1"})
    assert "cluster_b1" not in dot
    loop = _ops_by_type(model, "while")[0]
    assert f'"{loop["id"]}" [' in dot  # the owning op stays
    hidden = {op["id"] for op in model["ops"] if op["block"] == "b1"}
    assert not any(f'"{h}"' in dot for h in hidden)


def test_dot_names_with_quotes_and_backslashes_stay_inside_their_strings():
    main = fluid.Program()
    main.global_block().create_var(name='we"ird\\name', shape=[1], dtype="float32")
    model = viz.program_model(main)
    dot = viz.assemble_dot(model)
    assert '"v:0:we\\"ird\\\\name"' in dot
    assert dot.count("{") == dot.count("}")


# CI installs Graphviz, so there a missing dot is a failure, not a skip
@pytest.mark.skipif(shutil.which("dot") is None and not os.environ.get("CI"),
                    reason="Graphviz's dot binary not installed")
def test_graphviz_lays_out_the_dot_with_model_ids():
    for model in (viz.program_model(_while_program()), viz.program_model(_fc_net())):
        for as_nodes in (False, True):  # parameter rows are HTML-like labels
            svg = subprocess.run(["dot", "-Tsvg"], text=True, capture_output=True, check=True,
                                 input=viz.assemble_dot(model, params_as_nodes=as_nodes)
                                 ).stdout
            for op in model["ops"]:
                assert f'id="{op["id"]}"' in svg


def test_program_displays_as_a_model_with_html_and_text_fallbacks():
    import fluid_nb.notebook  # noqa: F401  (attaches the display methods)
    main = _fc_net()
    version = main._version
    bundle = main._repr_mimebundle_()
    assert bundle[viz.MIME_TYPE]["format"] == "fluid-nb.program"
    assert bundle[viz.MIME_TYPE]["stats"]["ops"] == len(main.global_block().ops)
    assert bundle["text/plain"] == str(main)
    assert "<table>" in bundle["text/html"] and "mul(inputs={X=[x]" in bundle["text/html"]
    json.dumps(bundle)
    assert main._version == version  # displaying changes nothing


def test_a_cell_is_named_by_its_execution_count_not_its_temporary_file():
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    shell.run_cell("import fluid_nb as fluid\n"
                   "viz_cell = fluid.Program()\n"
                   "with fluid.live(name='viz_cell_source', program=viz_cell,\n"
                   "                startup_program=fluid.Program(), scope=fluid.Scope()):\n"
                   "    v = fluid.layers.fill_constant([1], 'float32', 1.0)\n", store_history=True)
    count = shell.execution_count - 1
    model = viz.program_model(shell.user_ns["viz_cell"])
    assert model["ops"][0]["source"] == f"In [{count}], line 5"


def test_kinds_without_a_tensor_show_their_kind_not_a_shape_and_dtype():
    from fluid_nb.notebook import display
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.layers.data(name="x", shape=[3], dtype="float32", lod_level=1)
        table = fluid.layers.lod_rank_table(x)
        y = fluid.layers.data(name="y", shape=[3], dtype="float32")
        loss = fluid.layers.mean(fluid.layers.elementwise_sub(x, y))
        x.stop_gradient = False
        fluid.backward.append_backward(loss)
    assert repr(table) == f"Variable({table.name}, type=LOD_RANK_TABLE)"
    model = viz.program_model(main)
    record = _by_id(model)[f"v:0:{table.name}"]
    assert "(lod_rank_table)" in record["dot"] and "float32" not in record["dot"]
    rank_op = _ops_by_type(model, "lod_rank_table")[0]
    assert display.op_text(main.global_block().ops[0]).endswith(
        f"Out={table.name}(lod_rank_table)")
    assert rank_op["type"] == "lod_rank_table"
    html = display.variable_html(table)
    assert "LOD_RANK_TABLE" in html and "float32" not in html
    # an empty slot (y's gradient is not needed) is left out of the op's text
    grad = [op for op in main.global_block().ops if op.type == "elementwise_sub_grad"][0]
    assert grad.outputs["Y@GRAD"] == ()
    assert "Y@GRAD" not in display.op_text(grad) and "X@GRAD=x@GRAD" in display.op_text(grad)
