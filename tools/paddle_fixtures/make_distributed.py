"""Transpiled trainer and parameter-server programs from Paddle's legacy DistributeTranspiler,
written under tests/fixtures/paddle/distributed/ for tests/distributed/test_transpiler.py.

Run with a PaddlePaddle 2.6.2 install (see README.md here), from the repository root:

    paddle-venv/bin/python tools/paddle_fixtures/make_distributed.py

Paddle 2.6 keeps Fluid 1.8's transpiler (``paddle.distributed.transpiler``) but no longer
registers some of the ops it emits (``recv``, ``split_byref``, ``split_selected_rows``) and
changed others (``send``, ``distributed_lookup_table``). This script gives Paddle's
Python op table those ops' Fluid 1.8 protos (slots and attribute types as Fluid 1.8's op
makers declare them, defaults filled as 1.8's attribute checker would), so that the
transpiler's own code runs unchanged and its programs serialize; nothing else is touched.
Paddle 2.6's optimizer ops also have optional inputs 1.8's had not (``MasterParam``,
``SkipUpdate``...); left empty they trip the 1.8 code (``op.input(key)[0]``), so their
empty slots are removed before transpiling. The dummy variables that order the RPC ops get
counted names (``__control_var@0``, ...)
instead of Paddle's random ones, so that the files are reproducible.

For each case, each role is transpiled from a freshly built program, as separate trainer
and server processes do (Paddle's transpiler edits the programs it is given):
``trainer_main.pb`` and ``trainer_startup.pb`` (trainer 0), and per server ``pserver<i>.pb``
and ``pserver<i>_startup.pb``, plus ``summary.json`` (the case, the endpoints, op types per
block).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _common import fixture_dir, import_paddle, write_json  # noqa: E402

paddle = import_paddle()
from paddle.base import core, framework  # noqa: E402
from paddle.base.proto import framework_pb2  # noqa: E402
from paddle.distributed import transpiler as dist  # noqa: E402

ENDPOINTS = "127.0.0.1:6170,127.0.0.1:6171"
TRAINERS = 2

# --- Fluid 1.8's protos for the ops Paddle 2.6 no longer has as 1.8 had them ---------------
A = framework_pb2
ATTR = {"int": A.INT, "long": A.LONG, "bool": A.BOOLEAN, "string": A.STRING,
        "strings": A.STRINGS, "ints": A.INTS, "longs": A.LONGS}
FLUID_18_OPS = {
    # type: (inputs [(name, duplicable, dispensable)], outputs, [(attr, type, default)])
    "send": ([("X", True, False)], [("Out", True, False)], [
        ("trainer_id", "int", 0), ("epmap", "strings", ["127.0.0.1:6164"]),
        ("sections", "longs", []), ("send_varnames", "strings", []), ("num", "int", 0),
        ("merge_add", "bool", False), ("use_send_handler", "bool", True)]),
    "recv": ([("X", True, False)], [("Out", True, False)], [
        ("epmap", "strings", []), ("trainer_id", "int", 0), ("with_barrier", "bool", True),
        ("varnames", "strings", []), ("recv_varnames", "strings", []),
        ("do_not_run", "int", 0)]),
    "split_byref": ([("X", False, False)], [("Out", True, False)], [
        ("sections", "ints", []), ("num", "int", 0)]),
    "split_selected_rows": ([("X", False, False)], [("Out", True, False)], [
        ("height_sections", "longs", [])]),
    "distributed_lookup_table": ([("Ids", True, False), ("W", False, False)],
                                 [("Outputs", True, False)], [
        ("table_names", "strings", [""]), ("height_sections", "longs", []),
        ("endpoints", "strings", ["127.0.0.1:6164"]), ("trainer_id", "int", 0),
        ("lookup_table_version", "string", "lookup_table"), ("padding_idx", "long", -1),
        ("dtype", "int", 5)]),
}


def _install_fluid_18_protos():
    holder = framework.OpProtoHolder.instance()
    # the attributes Paddle's framework adds to every op
    generic = [("op_role", A.INT), ("op_role_var", A.STRINGS), ("op_namescope", A.STRING),
               ("op_callstack", A.STRINGS), ("op_device", A.STRING)]
    for op_type, (inputs, outputs, attrs) in FLUID_18_OPS.items():
        proto = framework_pb2.OpProto(type=op_type, comment="Fluid 1.8")
        for name, dup, disp in inputs:
            proto.inputs.add(name=name, comment="", duplicable=dup, dispensable=disp)
        for name, dup, disp in outputs:
            proto.outputs.add(name=name, comment="", duplicable=dup, dispensable=disp)
        for name, kind, _ in attrs:
            proto.attrs.add(name=name, type=ATTR[kind], comment="")
        for name, kind in generic:
            proto.attrs.add(name=name, type=kind, comment="", generated=True)
        holder.op_proto_map[op_type] = proto
    framework.Operator.OP_WITHOUT_KERNEL_SET = set(framework.Operator.OP_WITHOUT_KERNEL_SET) \
        | set(FLUID_18_OPS)

    init = framework.Operator.__init__

    def fluid_18_init(self, block, desc, type=None, inputs=None, outputs=None, attrs=None):
        if type in FLUID_18_OPS:  # 1.8's checker fills the defaults
            attrs = {**{n: d for n, _, d in FLUID_18_OPS[type][2]}, **(attrs or {})}
        return init(self, block, desc, type, inputs, outputs, attrs)

    framework.Operator.__init__ = fluid_18_init
    check = core.OpDesc.check_attrs
    core.OpDesc.check_attrs = lambda desc: None if desc.type() in FLUID_18_OPS else check(desc)
    extra = core.get_op_extra_attrs
    core.get_op_extra_attrs = lambda t: {} if t in FLUID_18_OPS else extra(t)


_install_fluid_18_protos()
_control = [0]


def _control_var_name():
    name = "%s@%d" % (framework.CONTROL_DEP_VAR_PREFIX, _control[0])
    _control[0] += 1
    return name


framework.generate_control_dev_var_name = _control_var_name
paddle.framework.generate_control_dev_var_name = _control_var_name  # the transpiler's import


# --- the models (the same layers the tests build with fluid_nb) ------------------------------
def fit_a_line(optimizer):
    x = paddle.static.data(name="x", shape=[-1, 13], dtype="float32")
    y = paddle.static.data(name="y", shape=[-1, 1], dtype="float32")
    pred = paddle.static.nn.fc(x, size=1)
    loss = paddle.mean(paddle.nn.functional.square_error_cost(pred, y))
    optimizer.minimize(loss)


def mlp(optimizer):
    img = paddle.static.data(name="img", shape=[-1, 784], dtype="float32")
    label = paddle.static.data(name="label", shape=[-1, 1], dtype="int64")
    h = paddle.static.nn.fc(img, size=200, activation="relu")
    h = paddle.static.nn.fc(h, size=200, activation="relu")
    pred = paddle.static.nn.fc(h, size=10, activation="softmax")
    loss = paddle.mean(paddle.nn.functional.cross_entropy(pred, label, use_softmax=False))
    optimizer.minimize(loss)


def sparse_embedding(optimizer):
    words = paddle.static.data(name="words", shape=[-1, 1], dtype="int64")
    label = paddle.static.data(name="label", shape=[-1, 1], dtype="float32")
    emb = paddle.static.nn.embedding(words, size=[10000, 16], is_sparse=True)
    pred = paddle.static.nn.fc(emb, size=1)  # [N, 1, 16] flattened to [N, 16]
    loss = paddle.mean(paddle.nn.functional.square_error_cost(pred, label))
    optimizer.minimize(loss)


def sgd():
    return paddle.optimizer.SGD(learning_rate=0.01)


def adam():
    return paddle.optimizer.Adam(learning_rate=0.001)


CASES = {
    # name: (model, optimizer, sync_mode, slice_var_up)
    "fit_a_line_sync": (fit_a_line, sgd, True, True),
    "fit_a_line_async": (fit_a_line, sgd, False, True),
    "mlp_sgd_sync": (mlp, sgd, True, True),
    "mlp_adam_sync": (mlp, adam, True, True),
    "mlp_sgd_unsliced": (mlp, sgd, True, False),
    "embedding_sparse_sync": (sparse_embedding, sgd, True, True),
}


def _build_and_transpile(case):
    model, optimizer, sync_mode, slice_var_up = CASES[case]
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup), paddle.utils.unique_name.guard():
        model(optimizer())
    for op in main.global_block().ops:
        if op.attr("op_role") == int(core.op_proto_and_checker_maker.OpRole.Optimize):
            for slot in op.desc.input_names():
                if not op.desc.input(slot):
                    op.desc.remove_input(slot)
            for slot in op.desc.output_names():
                if not op.desc.output(slot):
                    op.desc.remove_output(slot)
    config = dist.DistributeTranspilerConfig()
    config.slice_var_up = slice_var_up
    t = dist.DistributeTranspiler(config=config)
    _control[0] = 0
    t.transpile(0, program=main, pservers=ENDPOINTS, trainers=TRAINERS, sync_mode=sync_mode,
                startup_program=startup)
    return t, main, startup


def _op_types(program):
    return [[op.type for op in block.ops] for block in program.blocks]


def _write(path, program):
    # op_callstack holds this machine's paths: dropped, as strip_callstacks.py does
    for block in program.blocks:
        for op in block.ops:
            if op.desc.has_attr("op_callstack"):
                op.desc.remove_attr("op_callstack")
    with open(path, "wb") as f:
        f.write(program.desc.serialize_to_string())


def main():
    root = fixture_dir("distributed", clean=True)
    endpoints = ENDPOINTS.split(",")
    summary = {"endpoints": endpoints, "trainers": TRAINERS, "cases": {}}
    for case in CASES:
        out = fixture_dir("distributed", case)
        t, _, startup = _build_and_transpile(case)
        trainer = t.get_trainer_program(wait_port=False)
        _write(os.path.join(out, "trainer_main.pb"), trainer)
        _write(os.path.join(out, "trainer_startup.pb"), startup)
        entry = {"sync_mode": CASES[case][2], "slice_var_up": CASES[case][3],
                 "trainer_main": _op_types(trainer), "trainer_startup": _op_types(startup)}
        for i, ep in enumerate(endpoints):
            t, _, _ = _build_and_transpile(case)
            server = t.get_pserver_program(ep)
            server_startup = t.get_startup_program(ep, server)
            _write(os.path.join(out, "pserver%d.pb" % i), server)
            _write(os.path.join(out, "pserver%d_startup.pb" % i), server_startup)
            entry["pserver%d" % i] = _op_types(server)
            entry["pserver%d_startup" % i] = _op_types(server_startup)
        summary["cases"][case] = entry
    write_json(os.path.join(root, "summary.json"), summary)


if __name__ == "__main__":
    main()
