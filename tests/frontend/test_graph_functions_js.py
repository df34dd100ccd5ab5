"""The front end's graph functions (TypeScript, run with Node) against the Python reference:
the same DOT text as ``assemble_dot``, the same model as ``apply_delta``, and segmented
layouts that draw every element exactly once and keep earlier segments when ops are
appended."""
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import fluid_nb as fluid
from fluid_nb.framework.program import Program
from fluid_nb.viz import apply_delta, assemble_dot, program_delta, program_model
from fluid_nb.viz.dot import visible_statements

from tests.browser.study_models import resnet_training

from .programs import deep_mlp

HERE = Path(__file__).resolve().parent
LABEXTENSION = HERE.parent.parent / "labextension"
ESBUILD = LABEXTENSION / "node_modules" / ".bin" / "esbuild"
DYNAMIC_RNN = HERE.parent / "fixtures" / "paddle" / "control_flow" / "dynamic_rnn_raw" / "main.pdmodel"

NODE_RE = re.compile(r'^\s*"((?:[^"\\]|\\.)*)" \[id=')
EDGE_RE = re.compile(r'-> "(?:[^"\\]|\\.)*" \[id="((?:[^"\\]|\\.)*)"')


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    """``run(command, payload)``: the harness's JSON answer."""
    node = shutil.which("node")
    # the source tree builds with Node and these node_modules; without them nothing here runs
    assert node and ESBUILD.exists(), "Node.js and labextension/node_modules are needed " \
        "(pip install -e . runs npm install)"
    tmp = tmp_path_factory.mktemp("harness")
    bundle = tmp / "harness.mjs"
    subprocess.run([str(ESBUILD), str(HERE / "graph_harness.mjs"), "--bundle",
                    "--platform=node", "--format=esm", f"--outfile={bundle}", "--log-level=error"],
                   check=True, cwd=LABEXTENSION)
    counter = iter(range(10**6))

    def run(command, payload):
        source = tmp / f"in{next(counter)}.json"
        source.write_text(json.dumps(payload))
        done = subprocess.run([node, str(bundle), command, str(source)], capture_output=True,
                              text=True, check=True, timeout=60)
        return json.loads(done.stdout)
    return run


@pytest.fixture(scope="module")
def rnn_model():
    return program_model(Program.parse_from_string(DYNAMIC_RNN.read_bytes()), title="rnn")


def test_front_end_dot_text_equals_python_assemble_dot(harness, rnn_model):
    assert len(rnn_model["blocks"]) > 1
    for collapsed in ([], ["b1"]):
        assert harness("assemble", {"model": rnn_model, "collapsed": collapsed}) == \
            assemble_dot(rnn_model, collapsed)


@pytest.mark.parametrize("as_nodes", [False, True])
@pytest.mark.parametrize("roles", [[], ["backward"], ["backward", "optimize"]])
def test_front_end_view_options_draw_what_python_draws(harness, rnn_model, as_nodes, roles):
    options = {"paramsAsNodes": as_nodes, "hiddenRoles": roles}
    assert harness("assemble", {"model": rnn_model, "options": options}) == \
        assemble_dot(rnn_model, params_as_nodes=as_nodes, hidden_roles=roles)


def test_collapsed_block_leaves_out_its_nodes_but_keeps_the_owner(harness, rnn_model):
    dot = harness("assemble", {"model": rnn_model, "collapsed": ["b1"]})
    owner = next(b["owner"] for b in rnn_model["blocks"] if b["id"] == "b1")
    inside = [op["id"] for op in rnn_model["ops"] if op["block"] == "b1"]
    assert f'"{owner}" [id=' in dot
    assert inside and all(f'"{op_id}" [id=' not in dot for op_id in inside)
    assert "cluster_b1" not in dot


def test_front_end_apply_delta_equals_python_apply_delta(harness):
    program, add_ops = deep_mlp(2, grow=10)
    old = program_model(program)
    add_ops()
    new = program_model(program)
    delta = program_delta(old, new)
    assert harness("apply", {"model": old, "delta": delta}) == apply_delta(old, delta)


def test_front_end_applies_changed_groups_as_python_does(harness):
    # a ResNet's groups after a cell appended to it, and back (a rolled-back cell): groups
    # replaced, added and gone, put back in the order the full model lists them
    program = resnet_training(20)
    old = program_model(program)
    with fluid.program_guard(program):
        fluid.layers.scale(program.global_block().var("pixel"), 2.0)
    new = program_model(program)
    for before, after in ((old, new), (new, old)):
        delta = program_delta(before, after)
        assert delta["groups"]["add"] and delta["groups"]["remove"]
        applied = harness("apply", {"model": before, "delta": delta})
        assert applied["hierarchy"] == after["hierarchy"] == \
            apply_delta(before, delta)["hierarchy"]


def _drawn(segments):
    nodes, edges, refs = [], [], {}
    for segment in segments:
        refs.update(segment["refs"])
        for line in segment["dot"].splitlines():
            edge = EDGE_RE.search(line)
            node = NODE_RE.match(line)
            if edge:
                edges.append(edge.group(1))
            elif node and node.group(1) not in segment["refs"]:
                nodes.append(node.group(1))
    return nodes, edges, refs


@pytest.mark.parametrize("as_nodes", [True, False])
@pytest.mark.parametrize("which", ["mlp", "rnn"])
def test_segmented_layout_draws_every_element_exactly_once(harness, rnn_model, which,
                                                           as_nodes):
    model = program_model(deep_mlp(20)) if which == "mlp" else rnn_model
    segments = harness("segments", {"model": model, "threshold": 0, "per": 7,
                                    "options": {"paramsAsNodes": as_nodes}})
    assert len(segments) > 2
    nodes, edges, refs = _drawn(segments)
    # drawn inside their ops, parameters are no nodes and their edges (and those of forward
    # values read by gradient ops) are rows of the ops' boxes
    inner = set() if as_nodes else {v["id"] for v in model["vars"] if v["inline"]}
    assert as_nodes or inner
    drawn = visible_statements(model, params_as_nodes=as_nodes)
    assert sorted(nodes) == sorted(drawn)
    assert sorted(edges) == sorted(e["id"] for e in model["edges"]
                                   if as_nodes or not e.get("inline"))
    var_ids = {v["id"] for v in model["vars"]} - inner
    assert refs and set(refs.values()) <= var_ids


def test_small_program_is_one_segment_with_the_full_dot(harness, rnn_model):
    segments = harness("segments", {"model": rnn_model, "threshold": 150, "per": 40})
    assert [s["dot"] for s in segments] == [assemble_dot(rnn_model)]


def test_appending_ops_lays_out_only_the_last_segments_again(harness):
    program, add_ops = deep_mlp(30, grow=10)
    old = program_model(program)
    add_ops()
    new = program_model(program)
    before = [s["dot"] for s in harness("segments", {"model": old, "threshold": 150, "per": 40})]
    after = [s["dot"] for s in harness("segments", {"model": new, "threshold": 150, "per": 40})]
    changed = [i for i, dot in enumerate(after) if i >= len(before) or before[i] != dot]
    assert len(old["ops"]) > 150 and changed
    assert len(after) - 2 <= min(changed), changed


def test_details_panel_shows_a_slot_of_only_empty_place_holders_as_empty(harness):
    """Paddle's files write ``@EMPTY@`` for a gradient nobody needs: the panel says the slot
    is empty instead of naming a variable ``@EMPTY@``; among real names it keeps its place."""
    import fluid_nb as fluid
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[3], dtype="float32")
        fluid.backward.append_backward(fluid.layers.mean(fluid.layers.fc(x, size=2)))
    mul_grad = next(op for op in main.global_block().ops if op.type == "mul_grad")
    mul_grad.outputs["X@GRAD"] = ["@EMPTY@"]
    model = program_model(main)
    op_id = next(op["id"] for op in model["ops"] if op["type"] == "mul_grad")
    slots = harness("slots", {"model": model})[op_id]
    assert slots["out:X@GRAD"] == [] and slots["out:Y@GRAD"] == ["fc_0.w_0@GRAD"]
    mul_grad.outputs["X@GRAD"] = ["@EMPTY@", "x@GRAD"]
    slots = harness("slots", {"model": program_model(main)})[op_id]
    assert slots["out:X@GRAD"] == ["@EMPTY@", "x@GRAD"]


# --- the folded drawing of a large program (labextension/src/hierarchy.ts) -------------------
@pytest.fixture(scope="module")
def resnet_model():
    from tests.browser.study_models import resnet_training
    return program_model(resnet_training(depth=20), title="resnet20")


def _node_ids(dot):
    return [m.group(1) for line in dot.splitlines() if (m := NODE_RE.match(line))]


def test_first_sight_draws_few_boxes_and_every_shown_op_once(harness, resnet_model):
    drawing = harness("folded", {"model": resnet_model})
    nodes = _node_ids(drawing["dot"])
    assert len(nodes) == len(set(nodes))  # every node stated once
    assert len(nodes) <= 60 and drawing["boxes"]
    groups = {g["id"] for g in resnet_model["hierarchy"]["groups"]}
    # every op is drawn as itself or as a box holding it; every box is drawn
    assert set(drawing["drawnAs"]) == {op["id"] for op in resnet_model["ops"]}
    for op_id, drawn_as in drawing["drawnAs"].items():
        assert drawn_as == op_id or drawn_as in groups
        assert drawn_as in nodes
    # the sections and the model function are open, the series are folded
    labels = {g["id"]: g["label"] for g in resnet_model["hierarchy"]["groups"]}
    opened = {labels[g] for g in drawing["open"]}
    assert {"forward", "backward", "optimizer", "resnet_cifar10"} <= opened
    assert not any("\u00d7" in label for label in opened)
    # edges join drawn nodes only
    for src, dst in re.findall(r'^\s*"((?:[^"\\]|\\.)*)" -> "((?:[^"\\]|\\.)*)"',
                               drawing["dot"], re.M):
        assert src in nodes and dst in nodes, (src, dst)


def test_opening_a_series_draws_its_runs_as_boxes(harness, resnet_model):
    first = harness("folded", {"model": resnet_model})
    groups = {g["id"]: g for g in resnet_model["hierarchy"]["groups"]}
    series = next(g for g in first["boxes"] if groups[g]["kind"] == "series")
    opened = harness("folded", {"model": resnet_model, "open": first["open"] + [series]})
    assert f'subgraph "cluster_{series}"' in opened["dot"]
    nodes = set(_node_ids(opened["dot"]))
    assert set(groups[series]["children"]) <= nodes
    assert series not in nodes


def test_hidden_roles_leave_their_sections_out_of_the_folded_drawing(harness, resnet_model):
    drawing = harness("folded", {"model": resnet_model,
                                 "options": {"hiddenRoles": ["backward", "optimize"]}})
    roles = {op["id"]: op["role"] for op in resnet_model["ops"]}
    assert all(roles[op] not in ("backward", "optimize") for op in drawing["drawnAs"])
    assert "backward" not in drawing["dot"] and "optimizer" not in drawing["dot"]
