"""Hostile-input corpus, ONNX: models exported from fluid_nb programs, then damaged through
onnx's own messages (dims against data, element types, dangling names, duplicate outputs,
cycles, nested subgraphs, huge repeated fields, opset imports, attribute types, external
data leading outside the model's folder or to what is not a file) or byte by byte
(truncations, bit flips), read by ``fluid.onnx.to_program``, ``fluid-nb show`` and the Lab
viewer; and ``fluid.onnx.export``'s arguments and output paths. Every refusal is typed, says
what was expected, opens nothing outside the model's folder and leaves every file as it was.
"""
import io
import os
import pathlib
import random

import numpy as np

import fluid_nb as fluid
from fluid_nb import cli
from tests.errors.corpus import Case, program_state, scope_state
from tests.errors.hostile import executed_marker, family_test
from tests.onnx.test_view import _loop

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "paddle" / "inference"
_BASES = {}


def _onnx():
    import onnx
    return onnx


# --- the models the damage starts from ----------------------------------------------------

def _fixture_model(label):
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    program, _, _ = cli.load_model_for_run(str(FIXTURES / label / "separate"), exe, scope)
    return fluid.onnx.export(program, None, scope=scope).model


def _loop_model():
    """A While loop: its ONNX form has a Loop node with a body subgraph."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        total, = _loop()
    return fluid.onnx.export(main, None, feed=["x"], fetch=[total], scope=fluid.Scope()).model


BUILDERS = {"mlp": lambda: _fixture_model("mlp"), "cnn": lambda: _fixture_model("cnn"),
            "loop": _loop_model}


def base(label):
    """A fresh copy of the base model ``label`` (built once per process)."""
    if label not in _BASES:
        _BASES[label] = BUILDERS[label]()
    copy = _onnx().ModelProto()
    copy.CopyFrom(_BASES[label])
    return copy


def _nested_ifs(depth):
    """A model whose output comes through ``depth`` If nodes, each in the then-branch of the
    one above; the innermost reads the outermost graph's input. Built in place, top down
    (copying a subgraph in would go through protobuf's decoder, which stops at its own
    depth limit)."""
    helper, TensorProto = _onnx().helper, _onnx().TensorProto
    model = helper.make_model(helper.make_graph(
        [], "level0", [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                       helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])], []),
        opset_imports=[helper.make_opsetid("", 17)])
    graph = model.graph
    for level in range(depth + 1):
        name = f"y{level}"
        graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, [1]))
        if level == depth:
            graph.node.append(helper.make_node("Identity", ["x"], [name]))
            break
        node = graph.node.add()
        node.op_type, node.input[:], node.output[:] = "If", ["c"], [name]
        other = node.attribute.add()
        other.name, other.type = "else_branch", _onnx().AttributeProto.GRAPH
        other.g.name = f"else{level}"
        other.g.node.append(helper.make_node("Identity", ["x"], [f"e{level}"]))
        other.g.output.append(helper.make_tensor_value_info(f"e{level}", TensorProto.FLOAT,
                                                            [1]))
        then = node.attribute.add()
        then.name, then.type = "then_branch", _onnx().AttributeProto.GRAPH
        graph = then.g
        graph.name = f"level{level + 1}"
    return model


# --- how a model reaches the reader ---------------------------------------------------------

class ModelFile:
    """A damaged model written, when its case starts, to a folder of its own (under the
    worker's temporary folder, which the harness does not compare)."""

    def __init__(self, workdir, name, make, extra=None):
        self.folder = pathlib.Path(workdir) / "tmp" / "onnx" / name
        self.path = self.folder / "model.onnx"
        self.make, self.extra = make, extra

    def setup(self):
        self.folder.mkdir(parents=True, exist_ok=True)
        data = self.make()
        if not isinstance(data, bytes):
            data = data.SerializeToString()
        self.path.write_bytes(data)
        if self.extra is not None:
            self.extra(self.folder)

    def state(self):
        return {p.name: (p.is_file() and p.read_bytes()) for p in sorted(self.folder.iterdir())
                if not p.is_fifo()}


def _read(path):
    from fluid_nb.viz import program_listing
    return program_listing(fluid.onnx.to_program(path))


def _show(path):
    return cli.main(["--debug", "show", str(path)], out=io.StringIO())


def _viewer(path):
    from fluid_nb.server.handlers import program_model_of_file
    return program_model_of_file(pathlib.Path(path))


READERS = {"read": _read, "show": _show, "viewer": _viewer}


def _file_case(workdir, sub, name, make, must_fail=True, mentions=(), extra=None,
               reader="read"):
    model = ModelFile(workdir, f"{sub}-{name}-{reader}", make, extra)
    return Case("onnx", f"{sub}-{name}" + ("" if reader == "read" else f"-{reader}"),
                act=lambda: READERS[reader](model.path), state=model.state,
                must_fail=must_fail, mentions=mentions, setup=model.setup)


def _edit(label, change):
    def make():
        model = base(label)
        change(model)
        return model
    return make


# --- the damage ----------------------------------------------------------------------------

def _init(model):
    """The model's first weight matrix (its first initializer of two dims or more)."""
    return next(i for i in model.graph.initializer if len(i.dims) >= 2)


def _set_dims(dims):
    def change(model):
        init = _init(model)
        del init.dims[:]
        init.dims.extend(dims)
    return change


def _dims_cases(workdir):
    cases = []
    for label in ("mlp", "cnn"):
        for name, dims in [("2^31x2^31", [2 ** 31, 2 ** 31]), ("2^40", [2 ** 40]),
                           ("negative", [-1, 8]), ("rank-65", [1] * 65),
                           ("zero-with-data", [0]), ("one-more-row", None)]:
            change = _set_dims(dims) if dims is not None else \
                (lambda m: _init(m).dims.__setitem__(0, _init(m).dims[0] + 1))
            cases.append(_file_case(workdir, "dims", f"{label}-{name}", _edit(label, change),
                                    mentions=("initializer",)))
    return cases


def _data_cases(workdir):
    def raw(delta):
        def change(model):
            init = _init(model)
            init.raw_data = init.raw_data[:len(init.raw_data) + delta] if delta < 0 else \
                init.raw_data + b"\0" * delta
        return change

    def typed(count, field="float_data"):
        def change(model):
            init = _init(model)
            values = np.frombuffer(init.raw_data, "float32")
            init.ClearField("raw_data")
            values = values.tolist()[:count] if count is not None else values.tolist()
            if field == "int64_data":
                values = [int(v) for v in values]
            getattr(init, field).extend(values)
        return change

    cases = []
    for label in ("mlp", "cnn"):
        cases += [
            _file_case(workdir, "data", f"{label}-raw-short", _edit(label, raw(-1)),
                       mentions=("raw_data", "bytes")),
            _file_case(workdir, "data", f"{label}-raw-long", _edit(label, raw(4))),
            _file_case(workdir, "data", f"{label}-raw-empty", _edit(label, raw(-10 ** 9))),
            _file_case(workdir, "data", f"{label}-float-data-short", _edit(label, typed(3)),
                       mentions=("float_data",)),
            _file_case(workdir, "data", f"{label}-wrong-field",
                       _edit(label, typed(None, "int64_data"))),
            _file_case(workdir, "data", f"{label}-float-data", _edit(label, typed(None)),
                       must_fail=False),
        ]
    return cases


def _element_cases(workdir):
    def init_type(code):
        return lambda m: setattr(_init(m), "data_type", code)

    def input_type(code):
        return lambda m: setattr(m.graph.input[0].type.tensor_type, "elem_type", code)

    def output_type(code):
        return lambda m: setattr(m.graph.output[0].type.tensor_type, "elem_type", code)

    def constant(code):
        def change(model):
            helper = _onnx().helper
            tensor = helper.make_tensor("k", _onnx().TensorProto.FLOAT, [2], [1.0, 2.0])
            tensor.data_type = code
            model.graph.node.insert(0, helper.make_node("Constant", [], ["k_out"],
                                                        value=tensor))
        return change

    return [
        _file_case(workdir, "elem", "init-undefined", _edit("mlp", init_type(0)),
                   mentions=("UNDEFINED",)),
        _file_case(workdir, "elem", "init-unknown-999", _edit("mlp", init_type(999))),
        _file_case(workdir, "elem", "init-negative", _edit("mlp", init_type(-3))),
        _file_case(workdir, "elem", "init-string", _edit("mlp", init_type(8))),
        _file_case(workdir, "elem", "init-uint32", _edit("mlp", init_type(12)),
                   mentions=("UINT32",)),
        _file_case(workdir, "elem", "init-int64-size-differs", _edit("mlp", init_type(7))),
        _file_case(workdir, "elem", "init-int32-same-size", _edit("mlp", init_type(6)),
                   must_fail=False),
        _file_case(workdir, "elem", "input-undefined", _edit("cnn", input_type(0))),
        _file_case(workdir, "elem", "input-unknown", _edit("cnn", input_type(12345))),
        _file_case(workdir, "elem", "output-undefined", _edit("cnn", output_type(0))),
        _file_case(workdir, "elem", "constant-undefined", _edit("mlp", constant(0))),
        _file_case(workdir, "elem", "constant-float", _edit("mlp", constant(1)),
                   must_fail=False),
    ]


def _graph_cases(workdir):
    def rename_input(index, slot, name):
        return lambda m: m.graph.node[index].input.__setitem__(slot, name)

    def rename_output(index, name):
        return lambda m: m.graph.node[index].output.__setitem__(0, name)

    def reverse(model):
        nodes = list(model.graph.node)[::-1]
        del model.graph.node[:]
        model.graph.node.extend(nodes)

    def swap_first_two(model):
        first, second = (type(n)() for n in model.graph.node[:2])
        first.CopyFrom(model.graph.node[1])
        second.CopyFrom(model.graph.node[0])
        model.graph.node[0].CopyFrom(first)
        model.graph.node[1].CopyFrom(second)

    def self_loop(model):
        node = model.graph.node[2]
        node.input[0] = node.output[0]

    def mutual(model):  # node 1 reads node 2's output and node 2 node 1's
        model.graph.node[1].input[0] = model.graph.node[2].output[0]

    def duplicate_initializer(model):
        model.graph.initializer.append(model.graph.initializer[1])

    def duplicate_input(model):
        model.graph.input.append(model.graph.input[0])

    def duplicate_graph_output(model):
        model.graph.output.append(model.graph.output[0])

    def output_twice_in_node(model):
        model.graph.node[0].output.append(model.graph.node[0].output[0])

    def dangling_graph_output(model):
        model.graph.output[0].name = "made_by_nothing"

    def body(model):
        loop = next(n for n in model.graph.node if n.op_type == "Loop")
        return next(a.g for a in loop.attribute if a.name == "body")

    def body_dangling(model):
        body(model).node[0].input[0] = "not_in_body_or_outside"

    def body_reads_later(model):
        graph = body(model)
        graph.node[0].input[0] = graph.node[-1].output[0]

    def empty_op_type(model):
        model.graph.node[0].op_type = ""

    cases = [
        ("dangling", "node-input", "mlp", rename_input(0, 1, "no_such_value"), ("node",)),
        ("dangling", "first-node-input", "cnn", rename_input(0, 0, "ghost"), ("ghost",)),
        ("dangling", "graph-output", "mlp", dangling_graph_output, ("made_by_nothing",)),
        ("dangling", "loop-body-input", "loop", body_dangling, ("body",)),
        ("duplicate", "node-outputs", "mlp", rename_output(3, "fc_0.tmp_0"), ()),
        ("duplicate", "output-is-initializer", "cnn", lambda m: m.graph.node[0].output.
         __setitem__(0, m.graph.initializer[2].name), ()),
        ("duplicate", "output-is-input", "mlp", rename_output(0, "x"), ()),
        ("duplicate", "initializer", "mlp", duplicate_initializer, ()),
        ("duplicate", "graph-input", "cnn", duplicate_input, ()),
        ("duplicate", "graph-output", "cnn", duplicate_graph_output, ()),
        ("duplicate", "output-twice-in-a-node", "mlp", output_twice_in_node, ()),
        ("cycle", "reversed-nodes", "mlp", reverse, ()),
        ("cycle", "swapped-nodes", "cnn", swap_first_two, ()),
        ("cycle", "node-reads-itself", "mlp", self_loop, ()),
        ("cycle", "two-nodes", "cnn", mutual, ()),
        ("cycle", "loop-body-out-of-order", "loop", body_reads_later, ()),
        ("node", "empty-op-type", "mlp", empty_op_type, ()),
    ]
    return [_file_case(workdir, sub, f"{label}-{name}", _edit(label, change),
                       mentions=mentions) for sub, name, label, change, mentions in cases]


def _attribute_cases(workdir):
    def retype(code, index=0):
        def change(model):
            node = next(n for n in model.graph.node if n.attribute)
            node.attribute[index].type = code
        return change

    def duplicate(model):
        node = next(n for n in model.graph.node if n.attribute)
        node.attribute.append(node.attribute[0])

    def unnamed(model):
        next(n for n in model.graph.node if n.attribute).attribute[0].name = ""

    def graph_as_ints(model):  # a body whose attribute says INTS: never recursed into
        loop = next(n for n in model.graph.node if n.op_type == "Loop")
        next(a for a in loop.attribute if a.name == "body").type = \
            _onnx().AttributeProto.INTS

    return [
        _file_case(workdir, "attr", "undefined-type", _edit("cnn", retype(0))),
        # (an enum: a number protobuf does not know decodes as UNDEFINED, made here so)
        _file_case(workdir, "attr", "ints-typed-tensor", _edit("cnn", retype(4)),
                   must_fail=None),
        _file_case(workdir, "attr", "ints-typed-graphs", _edit("cnn", retype(10)),
                   must_fail=None),
        _file_case(workdir, "attr", "duplicate-name", _edit("cnn", duplicate)),
        _file_case(workdir, "attr", "empty-name", _edit("cnn", unnamed)),
        _file_case(workdir, "attr", "body-typed-ints", _edit("loop", graph_as_ints),
                   must_fail=None),
    ]


def _opset_cases(workdir):
    def opsets(*pairs):
        def change(model):
            del model.opset_import[:]
            model.opset_import.extend(_onnx().helper.make_opsetid(d, v) for d, v in pairs)
        return change

    def set_ir(version):
        return lambda m: setattr(m, "ir_version", version)

    def foreign_domain(model):
        model.graph.node[0].domain = "com.example.never.imported"

    return [
        _file_case(workdir, "opset", "none", _edit("mlp", opsets())),
        _file_case(workdir, "opset", "default-0", _edit("mlp", opsets(("", 0)))),
        _file_case(workdir, "opset", "default-999", _edit("mlp", opsets(("", 999)))),
        _file_case(workdir, "opset", "default-negative", _edit("mlp", opsets(("", -17)))),
        _file_case(workdir, "opset", "domain-twice", _edit("mlp", opsets(("", 17), ("", 13)))),
        _file_case(workdir, "opset", "ai.onnx-and-default", _edit(
            "mlp", opsets(("", 17), ("ai.onnx", 17)))),
        _file_case(workdir, "opset", "node-domain-not-imported", _edit("mlp", foreign_domain),
                   mentions=("com.example.never.imported",)),
        _file_case(workdir, "opset", "ir-version-0", _edit("mlp", set_ir(0))),
        _file_case(workdir, "opset", "ir-version-999", _edit("mlp", set_ir(999))),
        _file_case(workdir, "opset", "opset-13", _edit("mlp", opsets(("", 13))),
                   must_fail=False),
    ]


def _size_cases(workdir):
    helper = _onnx().helper

    def many_inputs(model):
        model.graph.node[0].input.extend(["x"] * 100_001)

    def many_ints(model):
        model.graph.node[0].attribute.append(helper.make_attribute("huge", [1] * 100_001))

    def rank(model):
        dims = model.graph.input[0].type.tensor_type.shape.dim
        for _ in range(70):
            dims.add().dim_value = 1

    def negative_dim(model):
        model.graph.input[0].type.tensor_type.shape.dim[1].dim_value = -5

    def many_outputs(model):
        model.graph.output.extend([model.graph.output[0]] * 100_001)

    return [
        _file_case(workdir, "size", "100001-node-inputs", _edit("mlp", many_inputs),
                   mentions=("at most",)),
        _file_case(workdir, "size", "100001-attribute-ints", _edit("mlp", many_ints)),
        _file_case(workdir, "size", "input-rank-72", _edit("cnn", rank)),
        _file_case(workdir, "size", "input-dim-negative", _edit("cnn", negative_dim)),
        _file_case(workdir, "size", "100001-graph-outputs", _edit("mlp", many_outputs)),
    ]


def _function_cases(workdir):
    """Model-local functions, called by a node added to the mlp model: calls that come back
    to themselves (inlining them would never end), bodies with dangling names."""
    helper = _onnx().helper

    def with_functions(*bodies, outputs=("b",)):
        def change(model):
            for name, nodes in bodies:
                model.functions.append(helper.make_function(
                    "local.fns", name, ["a"], list(outputs), nodes,
                    [helper.make_opsetid("", 17), helper.make_opsetid("local.fns", 1)]))
            model.opset_import.append(helper.make_opsetid("local.fns", 1))
            model.graph.node.append(helper.make_node(bodies[0][0], ["x"], ["called"],
                                                     domain="local.fns"))
        return change

    def call(name):
        return helper.make_node(name, ["a"], ["b"], domain="local.fns")

    rows = [
        ("valid", with_functions(("Twice", [helper.make_node("Add", ["a", "a"], ["b"])])),
         False, ()),
        ("calls-itself", with_functions(("Loopy", [call("Loopy")])), True, ("cycle",)),
        ("calls-each-other", with_functions(("Ping", [call("Pong")]), ("Pong", [call("Ping")])),
         True, ("cycle",)),
        ("dangling-body-input", with_functions(
            ("Lost", [helper.make_node("Relu", ["nowhere"], ["b"])])), True, ("nowhere",)),
        ("output-not-made", with_functions(
            ("Empty", [helper.make_node("Relu", ["a"], ["c"])])), True, ()),
        ("defined-twice", with_functions(
            ("Twice", [helper.make_node("Relu", ["a"], ["b"])]),
            ("Twice", [helper.make_node("Relu", ["a"], ["b"])])), True, ()),
    ]
    return [_file_case(workdir, "function", name, _edit("mlp", change), must_fail=must_fail,
                       mentions=mentions) for name, change, must_fail, mentions in rows]


def _depth_cases(workdir):
    cases = [
        _file_case(workdir, "depth", "ifs-8", lambda: _nested_ifs(8), must_fail=False),
        _file_case(workdir, "depth", "ifs-17", lambda: _nested_ifs(17), mentions=("nested",)),
        _file_case(workdir, "depth", "ifs-40", lambda: _nested_ifs(40)),
    ]
    deep = {}

    def in_memory(depth):  # deeper than the protobuf decoder would let a file be
        def act():
            if depth not in deep:
                deep[depth] = _nested_ifs(depth)
            return fluid.onnx.to_program(deep[depth])
        return act
    cases += [Case("onnx", f"depth-ifs-{d}-in-memory", act=in_memory(d)) for d in (17, 200)]
    return cases


def _byte_cases(workdir):
    cases = []
    for label in ("mlp", "cnn", "loop"):
        rng = random.Random(f"onnx-bytes-{label}")
        for k in range(10):
            fraction, bit = rng.random(), rng.randrange(8)

            def flipped(label=label, fraction=fraction, bit=bit):
                data = bytearray(base(label).SerializeToString())
                data[int(fraction * len(data))] ^= 1 << bit
                return bytes(data)
            cases.append(_file_case(workdir, "bitflip", f"{label}-{k}", flipped,
                                    must_fail=None))
        for k in range(5):
            fraction = rng.random()

            def truncated(label=label, fraction=fraction):
                data = base(label).SerializeToString()
                return data[:max(1, int(fraction * len(data)))]
            cases.append(_file_case(workdir, "truncated", f"{label}-{k}", truncated,
                                    must_fail=None))
    def not_utf8(label, name):
        """Every occurrence of ``name`` with its first byte made 0xff: consistent, but not
        text (protobuf then hands the field over as bytes)."""
        return lambda: base(label).SerializeToString().replace(name, b"\xff" + name[1:])
    for label, name in [("mlp", b"fc_0.tmp_0"), ("mlp", b"fc_0.w_0"), ("cnn", b"Relu"),
                        ("cnn", b"kernel_shape"), ("loop", b"body"), ("cnn", b"img")]:
        cases.append(_file_case(workdir, "utf8", f"{label}-{name.decode()}",
                                not_utf8(label, name), mentions=("UTF-8",)))
    cases += [_file_case(workdir, "bytes", "empty", lambda: b"", must_fail=None),
              _file_case(workdir, "bytes", "pickle", lambda: b"\x80\x04\x95 not a model",
                         mentions=("decode",)),
              _file_case(workdir, "bytes", "zeros", lambda: bytes(4096), must_fail=None)]
    return cases


def _external_cases(workdir):
    """The second initializer of the mlp model moved to a file named ``location``."""
    def moved(location, offset=None, length="own"):
        def make():
            model = base("mlp")
            init = _init(model)
            init.ClearField("raw_data")
            init.data_location = _onnx().TensorProto.EXTERNAL
            entries = {"location": location}
            if offset is not None:
                entries["offset"] = str(offset)
            if length is not None:
                entries["length"] = str(8 * 16 * 4 if length == "own" else length)
            for key, value in entries.items():
                entry = init.external_data.add()
                entry.key, entry.value = key, value
            return model
        return make

    def data_file(name="weights.bin", size=8 * 16 * 4):
        return lambda folder: (folder / name).write_bytes(bytes(size))

    def link(case, target):
        """Put the link in the case's folder now: making a link counts, for the harness, as
        a change to its target, and a case may change nothing outside the workdir."""
        folder = pathlib.Path(workdir) / "tmp" / "onnx" / f"external-{case}-read"
        folder.mkdir(parents=True, exist_ok=True)
        if not os.path.lexists(folder / "weights.bin"):
            os.symlink(target, folder / "weights.bin")

    def fifo(folder):
        (folder / "weights.bin").unlink(missing_ok=True)
        os.mkfifo(folder / "weights.bin")

    def directory(folder):
        (folder / "weights.bin").mkdir(exist_ok=True)

    def outside_file(folder):
        (folder.parent / "outside.bin").write_bytes(bytes(8 * 16 * 4))

    link("link-to-etc", "/etc/hostname")
    link("link-to-proc", "/proc/self/environ")
    link("link-to-outside", pathlib.Path(workdir) / "tmp" / "onnx" / "outside.bin")
    marker = executed_marker(workdir)
    cases = [
        ("valid", moved("weights.bin"), data_file(), False, ()),
        ("valid-no-length", moved("weights.bin", length=None), data_file(), False, ()),
        ("valid-offset", moved("weights.bin", offset=64), data_file(size=64 + 512), False, ()),
        ("parent-folder", moved("../outside.bin"), outside_file, True, ("relative",)),
        ("deep-parent", moved("../../../../../../../etc/passwd", length=None), None, True, ()),
        ("absolute-etc", moved("/etc/passwd", length=None), None, True, ("relative",)),
        ("proc-environ", moved("/proc/self/environ", length=None), None, True, ()),
        ("proc-relative", moved("sub/../../../../../../proc/self/mem"), None, True, ()),
        ("marker-path", moved(str(marker)), None, True, ()),
        ("link-to-etc", moved("weights.bin", length=None), None, True, ("outside",)),
        ("link-to-proc", moved("weights.bin"), None, True, ("outside",)),
        ("link-to-outside", moved("weights.bin"), outside_file, True, ("outside",)),
        ("missing-file", moved("weights.bin"), None, True, ("does not exist",)),
        ("fifo", moved("weights.bin"), fifo, True, ("regular",)),
        ("directory", moved("weights.bin"), directory, True, ("regular",)),
        ("nul-in-location", moved("weights.bin\0.txt"), data_file(), True, ()),
        ("empty-location", moved(""), data_file(), True, ()),
        ("file-too-short", moved("weights.bin"), data_file(size=100), True, ("bytes",)),
        ("offset-past-end", moved("weights.bin", offset=10 ** 12), data_file(), True, ()),
        ("negative-offset", moved("weights.bin", offset=-8), data_file(), True, ()),
        ("length-differs", moved("weights.bin", length=4), data_file(), True, ()),
        ("offset-not-a-number", moved("weights.bin", offset="1e3; touch EXECUTED"),
         data_file(), True, ()),
    ]
    return [_file_case(workdir, "external", name, make, must_fail, mentions, extra)
            for name, make, extra, must_fail, mentions in cases]


def _reader_cases(workdir):
    """The same damage through ``fluid-nb show`` and the Lab viewer's file handler, and
    model paths that are not model files."""
    picks = [("dims", "2^40", _edit("mlp", _set_dims([2 ** 40]))),
             ("elem", "undefined", _edit("mlp", lambda m: setattr(_init(m), "data_type", 0))),
             ("dangling", "input", _edit("cnn", lambda m: m.graph.node[1].input.
                                         __setitem__(0, "nowhere"))),
             ("depth", "ifs-17", lambda: _nested_ifs(17)),
             ("bytes", "pickle", lambda: b"\x80\x04\x95 not a model")]
    cases = []
    for reader in ("show", "viewer"):
        for sub, name, make in picks:
            cases.append(_file_case(workdir, sub, name, make, reader=reader))
        cases.append(_file_case(workdir, "valid", "cnn", lambda: base("cnn"), must_fail=False,
                                reader=reader))

    def fifo_model():
        folder = pathlib.Path(workdir) / "tmp" / "onnx" / "fifo-model"
        folder.mkdir(parents=True, exist_ok=True)
        if not (folder / "model.onnx").exists():
            os.mkfifo(folder / "model.onnx")
        return folder / "model.onnx"

    folder = pathlib.Path(workdir) / "tmp" / "onnx"
    cases += [
        Case("onnx", "path-fifo-model", act=lambda: fluid.onnx.to_program(fifo_model()),
             mentions=("regular",)),
        Case("onnx", "path-dev-zero", act=lambda: fluid.onnx.to_program("/dev/zero")),
        Case("onnx", "path-directory", act=lambda: fluid.onnx.to_program(folder)),
        Case("onnx", "path-missing", act=lambda: fluid.onnx.to_program(folder / "no.onnx")),
        Case("onnx", "path-nul", act=lambda: fluid.onnx.to_program("model\0.onnx")),
        Case("onnx", "path-bytes", act=lambda: fluid.onnx.to_program(b"model.onnx")),
        Case("onnx", "path-int", act=lambda: fluid.onnx.to_program(42)),
        Case("onnx", "show-dev-zero-onnx", act=lambda: _show("/dev/zero/x.onnx")),
    ]
    return cases


# --- export: arguments and output paths ---------------------------------------------------

class Exported:
    """A small trained-looking program and its scope, built on first use."""

    def __init__(self):
        self.built = None

    def get(self):
        if self.built is None:
            main, startup = fluid.Program(), fluid.Program()
            main.random_seed = startup.random_seed = 1
            with fluid.program_guard(main, startup), fluid.unique_name.guard():
                x = fluid.layers.data(name="x", shape=[4], dtype="float32")
                out = fluid.layers.fc(x, size=3, act="softmax")
            scope = fluid.Scope()
            fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
            self.built = main.clone(for_test=True), scope, out
        return self.built

    def state(self):
        program, scope, _ = self.get()
        return program_state(program), scope_state(scope)


def _export_argument_cases(workdir):
    made = Exported()
    out = pathlib.Path(workdir) / "exports"

    def export(**kwargs):
        def act():
            program, scope, fetch = made.get()
            arguments = dict(path=out / "m.onnx", feed=["x"], fetch=[fetch], scope=scope)
            arguments.update({k: (v(program, scope, fetch) if callable(v) else v)
                              for k, v in kwargs.items()})
            return fluid.onnx.export(program, **arguments)
        return act

    def replaced(name, array):
        """A scope like the program's whose parameter ``name`` (fc's w or b) holds
        ``array``."""
        def make(program, scope, fetch):
            other = fluid.Scope()
            for param in program.global_block().all_parameters():
                value = np.asarray(scope.find_var(param.name).get_tensor())
                if name in param.name:
                    value = array
                other.var(param.name).get_tensor().set(value, fluid.CPUPlace())
            return other
        return make

    rows = [
        ("scope-str", dict(scope="x"), True), ("scope-int", dict(scope=42), True),
        ("scope-dict", dict(scope={}), True), ("scope-list", dict(scope=[]), True),
        ("fetch-unknown", dict(fetch=["nothing"]), True),
        ("fetch-int", dict(fetch=[42]), True), ("fetch-none-item", dict(fetch=[None]), True),
        ("fetch-float", dict(fetch=3.5), True), ("fetch-dict", dict(fetch={"a": 1}), True),
        ("fetch-empty-name", dict(fetch=[""]), True), ("fetch-empty", dict(fetch=[]), True),
        ("fetch-twice", dict(fetch=lambda p, s, f: [f, f.name]), True),
        ("fetch-one-variable", dict(fetch=lambda p, s, f: f), False),
        ("feed-unknown", dict(feed=["nothing"]), True), ("feed-int", dict(feed=[1]), True),
        ("feed-dict", dict(feed={"x": 1}), True), ("feed-twice", dict(feed=["x", "x"]), True),
        ("feed-name", dict(feed="x"), False),
        ("opset-9", dict(opset=9), True), ("opset-999", dict(opset=999), True),
        ("opset-str", dict(opset="17"), True), ("opset-float", dict(opset=17.0), True),
        ("opset-bool", dict(opset=True), True), ("opset-none", dict(opset=None), True),
        ("opset-numpy-int", dict(opset=np.int64(17)), False),
        ("strict-str", dict(strict="yes"), True),
        ("param-wrong-shape", dict(scope=replaced("w_0", np.zeros((3, 4), "float32"))),
         ("fc_0.w_0", "[4, 3]", "[3, 4]")),
        ("param-wrong-rank", dict(scope=replaced("w_0", np.zeros((12,), "float32"))), True),
        ("param-wrong-dtype", dict(scope=replaced("b_0", np.zeros((3,), "float64"))), True),
        ("param-int-dtype", dict(scope=replaced("b_0", np.zeros((3,), "int32"))), True),
        ("valid", {}, False),
    ]
    # (a tuple in place of True: the words the refusal must mention)
    cases = [Case("onnx", f"export-{name}", act=export(**kwargs), state=made.state,
                  must_fail=bool(outcome),
                  mentions=outcome if isinstance(outcome, tuple) else ())
             for name, kwargs, outcome in rows]
    cases.append(Case("onnx", "export-program-str", act=lambda: fluid.onnx.export("main"),
                      mentions=("Program",)))
    cases.append(Case("onnx", "export-program-none", act=lambda: fluid.onnx.export(None)))
    return cases


def _export_path_cases(workdir):
    made = Exported()
    out = pathlib.Path(workdir) / "exports"
    out.mkdir(parents=True, exist_ok=True)
    existing = out / "existing.onnx"
    if not existing.exists():
        existing.write_bytes(b"the model that was here before")
    (out / "a-directory").mkdir(exist_ok=True)

    def export(path, **kwargs):
        def act():
            program, scope, fetch = made.get()
            arguments = dict(feed=["x"], fetch=[fetch], scope=scope)
            arguments.update(kwargs)
            return fluid.onnx.export(program, path() if callable(path) else path, **arguments)
        return act

    def files():
        return sorted((p.name, p.is_file() and p.read_bytes()) for p in out.iterdir())

    def state():
        return made.state(), files()

    def cli_export(target):
        return lambda: cli.main(["--debug", "export", str(FIXTURES / "mlp" / "separate"),
                                 "-o", str(target)], out=io.StringIO())

    def wrong_shape_scope():
        program, scope, _ = made.get()
        other = fluid.Scope()
        for param in program.global_block().all_parameters():
            other.var(param.name).get_tensor().set(np.zeros((2, 2), "float32"),
                                                   fluid.CPUPlace())
        return other

    rows = [
        ("missing-folder", out / "no-such-folder" / "m.onnx", {}, ("does not exist",)),
        ("empty-name", "", {}, ()),
        ("nul-byte", str(out / "m\0.onnx"), {}, ("NUL",)),
        ("name-too-long", out / ("m" * 300 + ".onnx"), {}, ("bytes",)),
        ("existing-directory", out / "a-directory", {}, ("directory",)),
        ("trailing-slash", str(out) + "/", {}, ()),
        ("under-a-file", existing / "m.onnx", {}, ()),
        ("bytes-path", os.fsencode(out / "m.onnx"), {}, ()),
        ("int-path", 3, {}, ()),
    ]
    cases = [Case("onnx", f"export-path-{name}", act=export(path, **kw), state=state,
                  mentions=mentions) for name, path, kw, mentions in rows]
    cases += [
        Case("onnx", "export-path-existing-kept-on-failure",
             act=lambda: export(existing, scope=wrong_shape_scope())(), state=state),
        Case("onnx", "export-path-existing-kept-on-bad-opset",
             act=export(existing, opset=99), state=state),
        Case("onnx", "export-path-cli-existing-directory",
             act=cli_export(out / "a-directory"), state=state, mentions=("directory",)),
        Case("onnx", "export-path-cli-missing-folder",
             act=cli_export(out / "nowhere" / "m.onnx"), state=state),
        Case("onnx", "export-path-cli-new-file", act=cli_export(out / "cli.onnx"),
             must_fail=False),
        Case("onnx", "export-path-new-file", act=export(out / "new.onnx"), must_fail=False),
    ]
    return cases


def cases(workdir):
    workdir = pathlib.Path(workdir)
    # the damaged models' folders go in here: made now, so that no case changes the workdir
    (workdir / "tmp" / "onnx").mkdir(parents=True, exist_ok=True)
    return (_dims_cases(workdir) + _data_cases(workdir) + _element_cases(workdir)
            + _graph_cases(workdir) + _attribute_cases(workdir) + _opset_cases(workdir)
            + _size_cases(workdir) + _function_cases(workdir) + _depth_cases(workdir)
            + _byte_cases(workdir)
            + _external_cases(workdir) + _reader_cases(workdir)
            + _export_argument_cases(workdir) + _export_path_cases(workdir))


test_corpus = family_test(cases, seconds=20)
