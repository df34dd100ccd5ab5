"""The program's ops as groups: where each op was built (Fluid's ``op_callstack``), the
groups the graph folds (role sections, the user's calls, name scopes, inferred chains),
repeated structure as series, and ids that survive a program's growth."""
import glob
import json
import os

import pytest

import fluid_nb as fluid
from fluid_nb.framework import callstack
from fluid_nb.viz import program_model
from fluid_nb.viz.groups import MAX_CHILDREN
from tests.browser.study_models import dynamic_rnn_training, resnet_training, transformer_training

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "paddle")
RESNET_WITH_STACKS = os.path.join(FIXTURES, "programs", "resnet_callstack.pb")


class Tree:
    """A model's groups, read as a tree: children by label, series, every op placed."""

    def __init__(self, model):
        self.model = model
        self.groups = {g["id"]: g for g in model["hierarchy"]["groups"]}
        self.ops = {op["id"]: op for op in model["ops"]}
        self.root = model["hierarchy"]["root"]

    def children(self, gid=None):
        return self.root if gid is None else self.groups[gid]["children"]

    def labels(self, gid=None):
        return [self.groups[c]["label"] if c in self.groups else self.ops[c]["type"]
                for c in self.children(gid)]

    def child(self, label, gid=None):
        for c in self.children(gid):
            if c in self.groups and self.groups[c]["label"] == label:
                return c
        raise AssertionError(f"no group {label!r} under {gid}: {self.labels(gid)}")

    def ops_under(self, gid):
        found = []
        for c in self.children(gid):
            found.extend(self.ops_under(c) if c in self.groups else [c])
        return found


def section(tree, name):
    return tree.child(name)


# --- where ops were built -------------------------------------------------------------------
def conv_block(x):
    return fluid.layers.relu(fluid.layers.conv2d(x, num_filters=4, filter_size=3))


def test_an_op_knows_the_calls_that_built_it():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data(name="x", shape=[-1, 3, 8, 8], dtype="float32")
        conv_block(x)
    conv = main.global_block().ops[0]
    functions = [function for _, _, function in callstack.frames(conv)]
    # outermost first: this test, the user's function, the layer it called
    assert functions.index("test_an_op_knows_the_calls_that_built_it") < \
        functions.index("conv_block") < functions.index("conv2d")
    filename, line, _ = callstack.frames(conv)[functions.index("conv_block")]
    assert filename == __file__ and "conv2d" in open(__file__).read().splitlines()[line - 1]


def test_a_saved_program_keeps_op_callstack_in_fluids_format_and_not_among_the_attributes():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        conv_block(fluid.data(name="x", shape=[-1, 3, 8, 8], dtype="float32"))
    data = main.desc.serialize_to_string()
    loaded = fluid.Program.parse_from_string(data)
    built, read = main.global_block().ops[0], loaded.global_block().ops[0]
    assert "op_callstack" not in built.attrs and "op_callstack" not in read.attrs
    assert callstack.frames(read) == callstack.frames(built)
    strings = callstack.paddle_strings(read.callstack)
    # Fluid 1.x: traceback strings, innermost first, each with its source line
    assert strings[0].startswith('  File "') and ", in append_op\n" in strings[0]
    assert any("in conv_block\n    return fluid.layers.relu(" in s for s in strings)
    assert loaded.desc.serialize_to_string() == data  # written back byte for byte


def test_paddles_own_op_callstack_reads_outermost_first_and_writes_back_unchanged():
    data = open(RESNET_WITH_STACKS, "rb").read()
    program = fluid.Program.parse_from_string(data)
    assert program.desc.serialize_to_string() == data
    first_conv = program.global_block().ops[0]
    frames = callstack.frames(first_conv)
    assert frames[0][2] == "<module>" and frames[-1][2] == "__init__"
    assert ("/home/user/resnet_cifar.py", 29, "conv_bn_layer") in frames


# --- groups -------------------------------------------------------------------------------------
def test_a_resnet_reads_as_its_functions_with_its_blocks_as_series():
    tree = Tree(program_model(resnet_training(depth=56)))
    assert tree.labels() == ["forward", "backward", "optimizer"]
    forward = section(tree, "forward")
    net = tree.child("resnet_cifar10", forward)
    assert tree.labels(net) == ["conv_bn_layer", "stage \u00b7 basic_block \u00d79",
                                "stage \u00d72", "pool2d", "fc"]
    first_stage = tree.groups[tree.child("stage \u00b7 basic_block \u00d79", net)]
    assert first_stage["kind"] == "series" and first_stage["repeat"] == 9
    assert first_stage["ops"] == 9 * 8  # conv+bn+relu, conv+bn, add+relu
    # the gradient and the updates mirror the forward groups, series included
    for name in ("backward", "optimizer"):
        mirrored = tree.child("resnet_cifar10", section(tree, name))
        assert "stage \u00b7 basic_block \u00d79" in tree.labels(mirrored)


def test_every_op_of_block_0_is_in_exactly_one_place():
    model = program_model(resnet_training(depth=20))
    tree = Tree(model)
    placed = [op for c in tree.root for op in (tree.ops_under(c) if c in tree.groups else [c])]
    assert sorted(placed) == sorted(op["id"] for op in model["ops"] if op["block"] == "b0")
    for group in tree.groups.values():
        assert group["ops"] == len(tree.ops_under(group["id"]))
        assert len(group["children"]) <= MAX_CHILDREN


def test_a_transformers_layers_are_one_series_and_updates_follow_their_layer():
    tree = Tree(program_model(transformer_training(n_layer=12)))
    stacks = {}
    for name in ("forward", "backward", "optimizer"):
        stacks[name] = tree.child("encoder \u00b7 encoder_layer \u00d712", section(tree, name))
        assert tree.groups[stacks[name]]["repeat"] == 12
    layer = tree.children(stacks["forward"])[0]
    assert tree.labels(layer) == ["multi_head_attention", "add_and_norm",
                                  "positionwise_feed_forward", "add_and_norm"]
    # one layer's updates sit in that layer's copy: 4 attention weights, 2 feed-forward
    # weights and biases, 2 layer norms' scale and bias
    assert all(tree.groups[u]["ops"] == 12 for u in tree.children(stacks["optimizer"]))


def test_a_dynamic_rnns_loop_is_one_group_with_its_while():
    model = program_model(dynamic_rnn_training())
    tree = Tree(model)
    block = tree.child("block", section(tree, "forward"))
    assert "while" in tree.labels(block)
    grad_block = tree.child("block", section(tree, "backward"))
    assert "while_grad" in tree.labels(grad_block)


def test_name_scopes_group_their_ops():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data(name="x", shape=[-1, 4], dtype="float32")
        with fluid.name_scope("encoder"):
            with fluid.name_scope("attention"):
                h = fluid.layers.fc(x, 4)
            h = fluid.layers.fc(h, 4)
        fluid.layers.fc(h, 2)
    tree = Tree(program_model(main))
    # (a scope's name is made unique in the process, as Fluid does: encoder, encoder_1, ...)
    encoder = next(c for c in tree.root if c in tree.groups
                   and tree.groups[c]["label"].startswith("encoder"))
    assert tree.groups[encoder]["kind"] == "scope"
    assert tree.labels(encoder)[0].startswith("attention")


def test_a_file_without_stacks_gets_chains_inferred_from_its_weighted_ops():
    path = glob.glob(os.path.join(FIXTURES, "onnx_models", "resnet_block", "*.pdmodel"))[0]
    tree = Tree(program_model(fluid.Program.parse_from_string(open(path, "rb").read())))
    assert tree.labels() == ["feed", "conv2d \u00b7 batch_norm \u00b7 relu",
                             "conv2d \u00b7 batch_norm",
                             "conv2d \u00b7 batch_norm \u00b7 elementwise_add",
                             "matmul_v2 \u00b7 elementwise_add \u00b7 scale", "fetch"]
    assert all(tree.groups[g]["kind"] == "inferred" for g in tree.root if g in tree.groups)


def test_paddles_own_training_program_groups_as_the_same_functions():
    program = fluid.Program.parse_from_string(open(RESNET_WITH_STACKS, "rb").read())
    tree = Tree(program_model(program))
    net = tree.child("resnet_cifar10", section(tree, "forward"))
    assert tree.labels(net) == ["conv_bn_layer", "layer_warp \u00b7 basicblock \u00d72",
                                "layer_warp \u00d72", "pool2d"]
    assert "resnet_cifar10" in tree.labels(section(tree, "optimizer"))


def test_group_ids_stay_while_a_program_grows():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[-1, 3, 8, 8], dtype="float32")
        h = conv_block(x)
        h = conv_block(h)
    before = program_model(main)["hierarchy"]
    with fluid.program_guard(main, startup):
        fluid.layers.fc(h, 2)
    after = program_model(main)["hierarchy"]
    before_ids = {g["id"] for g in before["groups"]}
    assert "g:1:series:conv_block" in before_ids and before_ids <= {g["id"] for g in after["groups"]}


def test_the_delta_carries_the_groups_when_they_change():
    from fluid_nb.viz import apply_delta, program_delta
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        h = conv_block(fluid.data(name="x", shape=[-1, 3, 8, 8], dtype="float32"))
    old = program_model(main)
    with fluid.program_guard(main, startup):
        fluid.layers.fc(h, 2)
    new = program_model(main)
    delta = program_delta(old, new)
    assert delta["groups"]["add"] and "hierarchy" not in delta
    assert apply_delta(old, delta)["hierarchy"] == new["hierarchy"]
    assert "groups" not in program_delta(new, new)


def test_a_one_op_cell_sends_the_groups_on_its_path_not_all_of_them():
    # a ResNet-56's program has about 500 groups; an op appended after it changes the
    # groups above it (the sections, the outer calls no longer shared by every op), not
    # the hundreds of calls inside them
    from fluid_nb.viz import apply_delta, program_delta
    from tests.browser.study_models import resnet_training
    main = resnet_training()
    old = program_model(main)
    with fluid.program_guard(main):
        fluid.layers.scale(main.global_block().var("pixel"), 2.0)
    new = program_model(main)
    delta = program_delta(old, new)
    changed = {group["id"] for group in delta["groups"]["add"]}
    assert len(new["hierarchy"]["groups"]) > 400 and 0 < len(changed) < 20
    assert len(json.dumps(delta["groups"])) < 0.1 * len(json.dumps(new["hierarchy"]))
    assert apply_delta(old, delta)["hierarchy"] == new["hierarchy"]
    # and back: a rollback removes the op's groups again
    undo = program_delta(new, old)
    assert apply_delta(new, undo)["hierarchy"] == old["hierarchy"]


@pytest.mark.parametrize("hidden", [(), ("backward",)])
def test_hiding_backward_hides_the_gradient_blocks_in_the_flat_drawing_too(hidden):
    from fluid_nb.viz.dot import assemble_dot
    model = program_model(dynamic_rnn_training())
    text = assemble_dot(model, hidden_roles=hidden)
    grad_block = [b for b in model["blocks"] if "while_grad" in b["label"]][0]
    drawn = f'cluster_{grad_block["id"]}' in text and "@GRAD" in text
    assert drawn == (not hidden)
