"""fluid.DistributeTranspiler against Paddle's: the same models transpiled here and by Paddle's
transpiler (tests/fixtures/paddle/distributed, made by tools/paddle_fixtures/
make_distributed.py) give the same RPC ops in the same places with the same attributes, the
same parameter blocks on the same servers, and the same server programs, block by block.

Paddle 2.6's transpiler is Fluid 1.8's code; the fixture script gives it Fluid 1.8's protos
of the ops 2.6 no longer has. Differences from those files, followed by 1.8's sources here:
the forward and backward ops are Paddle 2.6's (``reduce_mean`` for ``mean``...), so the
trainer is compared on the transpiler's own ops; Paddle adds framework attributes to every
op (``op_namescope``, ``op_device``, an empty ``op_role_var``, ``op_role`` 0) and 2.6's
registered ops carry attributes 1.8's had not (``mkldnn_data_type``...), so only the
attributes fluid_nb defines are compared on non-RPC ops; ``grad_to_block_id`` and
``sparse_grad_to_param`` went through a Python set in Paddle, so their order is not pinned.
One value differs on purpose: ``transpile(sync_mode=False)`` with a default config gives
asynchronous servers here (``distributed_mode`` 2), where 1.8 took the servers' mode from
``config.sync_mode`` alone and made synchronous ones (0) that wait for barriers the trainers
never send.
"""
import os

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import (InvalidArgument, InvalidType, OutOfRange, PreconditionNotMet,
                             Unimplemented)
from fluid_nb.framework import codec
from fluid_nb.ops import registry

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "paddle", "distributed")
PSERVERS = "127.0.0.1:6170,127.0.0.1:6171"
ENDPOINTS = PSERVERS.split(",")

#: the transpiler's ops in a trainer program
TRANSPILER_OPS = {"send", "recv", "send_barrier", "fetch_barrier", "split_byref",
                  "split_selected_rows", "concat", "distributed_lookup_table", "fake_init"}
#: ops whose attribute names are pinned whole (Fluid 1.8's makers)
EXACT_ATTRS = {"send", "recv", "send_barrier", "fetch_barrier", "listen_and_serv",
               "split_byref", "split_selected_rows", "distributed_lookup_table", "fake_init"}
#: attributes Paddle's framework puts on every op
FRAMEWORK_ATTRS = {"op_namescope", "op_callstack", "op_device", "with_quant_attr"}
#: attributes whose order came out of a Python set in Paddle
SET_ORDERED = {"grad_to_block_id", "sparse_grad_to_param"}


# --- the models (as the fixture script builds them with Paddle) -----------------------------
def fit_a_line(optimizer):
    x = fluid.layers.data(name="x", shape=[13], dtype="float32")
    y = fluid.layers.data(name="y", shape=[1], dtype="float32")
    pred = fluid.layers.fc(input=x, size=1)
    optimizer.minimize(fluid.layers.mean(fluid.layers.square_error_cost(input=pred, label=y)))


def mlp(optimizer):
    img = fluid.layers.data(name="img", shape=[784], dtype="float32")
    label = fluid.layers.data(name="label", shape=[1], dtype="int64")
    h = fluid.layers.fc(input=img, size=200, act="relu")
    h = fluid.layers.fc(input=h, size=200, act="relu")
    pred = fluid.layers.fc(input=h, size=10, act="softmax")
    optimizer.minimize(fluid.layers.mean(fluid.layers.cross_entropy(input=pred, label=label)))


def sparse_embedding(optimizer):
    words = fluid.data(name="words", shape=[-1, 1], dtype="int64")
    label = fluid.layers.data(name="label", shape=[1], dtype="float32")
    emb = fluid.embedding(words, size=[10000, 16], is_sparse=True)
    pred = fluid.layers.fc(input=emb, size=1)
    optimizer.minimize(fluid.layers.mean(fluid.layers.square_error_cost(input=pred, label=label)))


def sgd():
    return fluid.optimizer.SGD(learning_rate=0.01)


def adam():
    return fluid.optimizer.Adam(learning_rate=0.001)


CASES = {
    "fit_a_line_sync": (fit_a_line, sgd, True, True),
    "fit_a_line_async": (fit_a_line, sgd, False, True),
    "mlp_sgd_sync": (mlp, sgd, True, True),
    "mlp_adam_sync": (mlp, adam, True, True),
    "mlp_sgd_unsliced": (mlp, sgd, True, False),
    "embedding_sparse_sync": (sparse_embedding, sgd, True, True),
}


def build(model, optimizer):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        model(optimizer())
    return main, startup


def transpile(case, trainer_id=0, **config_fields):
    model, optimizer, sync_mode, slice_var_up = CASES[case]
    main, startup = build(model, optimizer)
    config = fluid.DistributeTranspilerConfig()
    config.slice_var_up = slice_var_up
    for name, value in config_fields.items():
        setattr(config, name, value)
    t = fluid.DistributeTranspiler(config=config)
    t.transpile(trainer_id, program=main, pservers=PSERVERS, trainers=2, sync_mode=sync_mode,
                startup_program=startup)
    return t, main, startup


def paddle_program(case, name):
    with open(os.path.join(FIXTURES, case, name + ".pb"), "rb") as f:
        return codec.decode_program(f.read())


# --- what is compared -------------------------------------------------------------------------
class Names:
    """Renames the dummy control variables by order of first appearance, since both sides
    count them differently."""

    def __init__(self):
        self.seen = {}

    def __call__(self, name):
        if name.startswith("__control_var@"):
            return self.seen.setdefault(name, f"__control_var#{len(self.seen)}")
        return name


def _attr_value(name, value):
    if name in SET_ORDERED:
        return sorted(value)
    if name == "shape" and value == []:
        return [1]  # a scalar: [1] in Fluid 1.x, [] in Paddle 2.6 (see var_view)
    # Paddle wrote FLOAT attributes as float32
    if isinstance(value, float):
        return float(np.float32(value))
    if isinstance(value, list):
        return [float(np.float32(v)) if isinstance(v, float) else getattr(v, "idx", v)
                for v in value]
    return value


def op_view(op, names):
    """An op as compared: type, non-empty slots (control names normalised), attributes (all of
    an RPC op's, else those fluid_nb defines), framework attributes and empty defaults out."""
    defined = set(registry.get(op.type).attrs) | {"op_role", "op_role_var"}
    attrs = {}
    for name, value in op.attrs.items():
        if name in FRAMEWORK_ATTRS or (name == "op_role" and value == 0) or \
                (name == "op_role_var" and not value):
            continue
        if op.type in EXACT_ATTRS or name in defined:
            attrs[name] = _attr_value(name, value)
    return (op.type,
            {slot: [names(n) for n in args] for slot, args in op.inputs.items() if args},
            {slot: [names(n) for n in args] for slot, args in op.outputs.items() if args},
            attrs)


def var_view(var):
    # a scalar is [1] in a Fluid 1.x program (the learning rate) and [] in Paddle 2.6's
    # reference files: the same variable
    shape = tuple(var.shape) or (1,)
    return (var.type.name, shape, var.dtype.name, bool(var.persistable))


def trainer_view(program):
    """The transpiler's ops in order, each with the op before it when it is a send or a
    split (the op computing what is sent), and the variables they name."""
    names = Names()
    block = program.global_block()
    view, used = [], set()
    for i, op in enumerate(block.ops):
        if op.type not in TRANSPILER_OPS:
            continue
        entry = op_view(op, names)
        if op.type in ("send", "split_byref", "split_selected_rows") and \
                op.input("X") and op.input("X")[0] not in block.ops[i - 1].output_arg_names:
            entry += ("not right after the op making its input",)
        view.append(entry)
        used.update(op.input_arg_names + op.output_arg_names)
    vars_ = {names(n): var_view(block.var(n)) for n in sorted(used) if n.startswith("__")
             or ".block" in n or ".trainer_" in n}
    return view, vars_


def program_view(program):
    """Every block: parent, variables, ops."""
    names = Names()
    return [(b.parent_idx, {names(n): var_view(v) for n, v in b.vars.items()},
             [op_view(op, names) for op in b.ops]) for b in program.blocks]


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request):
    return request.param


def test_trainer_program_has_paddles_rpc_ops_blocks_and_placement(case):
    t, main, _ = transpile(case)
    ours = trainer_view(t.get_trainer_program(wait_port=False))
    theirs = trainer_view(paddle_program(case, "trainer_main"))
    assert ours[0] == theirs[0]
    assert ours[1] == theirs[1]


def test_trainer_startup_fetches_the_servers_parameters_as_paddles(case):
    t, _, startup = transpile(case)
    t.get_trainer_program(wait_port=False)
    theirs = paddle_program(case, "trainer_startup")
    assert trainer_view(startup) == trainer_view(theirs)
    # the initial values of what only the optimizer reads are gone, as in Paddle
    written = lambda p: sorted(n for op in p.global_block().ops for n in op.output_arg_names
                               if not n.startswith("__control_var"))
    assert written(startup) == written(theirs)


@pytest.mark.parametrize("index", [0, 1])
def test_server_program_matches_paddles_block_by_block(case, index):
    t, _, _ = transpile(case)
    ours = t.get_pserver_program(ENDPOINTS[index])
    theirs = paddle_program(case, f"pserver{index}")
    if not CASES[case][2]:  # an asynchronous case
        # the one deliberate difference (see the module docstring)
        serve = theirs.global_block().ops[0]
        assert serve.type == "listen_and_serv" and serve.attrs["distributed_mode"] == 0
        assert ours.global_block().ops[0].attrs["distributed_mode"] == 2
        serve.attrs["distributed_mode"] = 2
    assert program_view(ours) == program_view(theirs)


def test_an_asynchronous_transpile_with_a_default_config_makes_asynchronous_servers():
    t, _, _ = transpile("fit_a_line_async")
    assert not t.sync_mode and t.config.sync_mode  # the argument said async, the config not
    for endpoint in ENDPOINTS:
        serve = t.get_pserver_program(endpoint).global_block().ops[0]
        assert serve.attrs["distributed_mode"] != 0  # no barriers awaited


@pytest.mark.parametrize("index", [0, 1])
def test_server_startup_initialises_only_its_blocks_as_paddles(case, index):
    t, _, _ = transpile(case)
    _, ours = t.get_pserver_programs(ENDPOINTS[index])
    theirs = paddle_program(case, f"pserver{index}_startup")
    assert program_view(ours)[0][2] == program_view(theirs)[0][2]
    assert {n: v for n, v in ours.global_block().vars.items()}.keys() == \
        theirs.global_block().vars.keys()


def test_every_program_verifies_and_round_trips_through_the_codec(case):
    t, main, startup = transpile(case)
    programs = [t.get_trainer_program(wait_port=False), startup]
    for ep in ENDPOINTS:
        programs.extend(t.get_pserver_programs(ep))
    for program in programs:
        fluid.verify(program)
        data = codec.encode_program(program)
        again = codec.decode_program(data)
        assert codec.encode_program(again) == data
        assert program_view(again) == program_view(program)


# --- the rules, pinned from Fluid 1.8's sources -------------------------------------------------
def test_fluid_namespaces_resolve_to_one_transpiler():
    assert fluid.DistributeTranspiler is fluid.transpiler.DistributeTranspiler
    assert fluid.DistributeTranspilerConfig is fluid.transpiler.DistributeTranspilerConfig
    assert fluid.transpiler.RoundRobin is fluid.RoundRobin
    assert fluid.transpiler.ps_dispatcher.HashName is fluid.HashName
    assert fluid.transpiler.memory_optimize is fluid.memory_optimize
    config = fluid.DistributeTranspilerConfig()
    assert (config.slice_var_up, config.min_block_size, config.sync_mode,
            config.runtime_split_send_recv, config.mode) == (True, 8192, True, False, "pserver")


@pytest.mark.parametrize("shape, servers, min_block, blocks", [
    ((784, 200), 2, 8192, ["w:0:78400", "w:1:78400"]),    # two blocks of 392 rows
    ((200, 10), 2, 8192, ["w:0:2000"]),                    # under min_block_size: whole
    ((784, 200), 2, 100000, ["w:0:156800"]),               # a larger minimum: whole
    ((10001, 3), 2, 8192, ["w:0:15003", "w:1:15000"]),     # rounded up to whole rows
    ((100000,), 3, 8192, ["w:0:33334", "w:1:33334", "w:2:33332"]),
])
def test_slice_variable_cuts_rows_into_blocks_of_at_least_min_block_size(shape, servers,
                                                                         min_block, blocks):
    from fluid_nb.rewriters.transpiler.slicing import slice_variable

    class Var:
        name = "w"
    Var.shape = shape
    assert slice_variable([Var], servers, min_block) == blocks


def test_min_block_size_decides_which_parameters_are_cut():
    config = fluid.DistributeTranspilerConfig()
    config.min_block_size = 50000  # fc_0.w_0 (156800) is cut in two, fc_1.w_0 (40000) not
    main, startup = build(mlp, sgd)
    t = fluid.DistributeTranspiler(config=config)
    t.transpile(0, program=main, pservers=PSERVERS, trainers=2, startup_program=startup)
    assert {n: [v.name for v in vs] for n, vs in t.param_var_mapping.items()
            if len(vs) > 1} == {"fc_0.w_0": ["fc_0.w_0.block0", "fc_0.w_0.block1"]}
    assert [v.shape for v in t.param_var_mapping["fc_0.w_0"]] == [(392, 200), (392, 200)]


def test_hash_name_puts_a_gradient_block_on_its_parameter_blocks_server():
    import zlib
    config = fluid.DistributeTranspilerConfig()
    config.split_method = fluid.HashName
    main, startup = build(mlp, sgd)
    t = fluid.DistributeTranspiler(config=config)
    t.transpile(0, program=main, pservers=PSERVERS, trainers=2, startup_program=startup)
    for ep, held in t.param_grad_ep_mapping.items():
        for param, grad in zip(held["params"], held["grads"]):
            assert ENDPOINTS[zlib.crc32(param.name.encode()) % 2] == ep
            assert grad.name.split("@GRAD")[0] == param.name.split(".block")[0]
    program = t.get_trainer_program(wait_port=False)
    sent = {n: ep for op in program.global_block().ops if op.type == "send"
            for n, ep in zip(op.input("X"), op.attr("epmap"))}
    for ep, held in t.param_grad_ep_mapping.items():
        assert all(sent[g.name] == ep for g in held["grads"])


def test_one_synchronous_trainer_sends_and_servers_expect_the_plain_gradient_name():
    # Fluid 1.8 names the server's copies g.trainer_0 for one trainer too, though the trainer
    # sends g: here both sides use the plain name, so one trainer trains
    main, startup = build(fit_a_line, sgd)
    t = fluid.DistributeTranspiler()
    t.transpile(0, program=main, pservers=PSERVERS, trainers=1, startup_program=startup)
    trainer, _, *_ = verified(t, startup)
    sent = [n for op in trainer.global_block().ops if op.type == "send" for n in op.input("X")]
    assert sent == ["fc_0.b_0@GRAD", "fc_0.w_0@GRAD"]
    server = t.get_pserver_program(ENDPOINTS[0])
    (serve,) = server.global_block().ops
    assert serve.input("X") == ["fc_0.b_0@GRAD"] and serve.attr("Fanin") == 1
    assert [op.type for op in server.block(1).ops] == ["sgd"]


def exponential_decay_adamax(optimizer=None):
    x = fluid.layers.data(name="x", shape=[13], dtype="float32")
    y = fluid.layers.data(name="y", shape=[1], dtype="float32")
    loss = fluid.layers.mean(fluid.layers.square_error_cost(
        input=fluid.layers.fc(input=x, size=1), label=y))
    lr = fluid.layers.exponential_decay(0.1, decay_steps=10, decay_rate=0.5)
    fluid.optimizer.Adamax(learning_rate=lr).minimize(loss)


def verified(t, startup):
    """Every program of transpiler ``t``, each checked by verify and the codec."""
    programs = [t.get_trainer_program(wait_port=False), startup]
    for ep in ENDPOINTS:
        programs.extend(t.get_pserver_programs(ep))
    for program in programs:
        fluid.verify(program)
        data = codec.encode_program(program)
        assert codec.encode_program(codec.decode_program(data)) == data
    return programs


def test_learning_rate_schedule_runs_in_its_own_block_before_the_updates():
    main, startup = build(exponential_decay_adamax, lambda: None)
    lr_types = [op.type for op in main.global_block().ops if op.attrs.get("op_role") == 16]
    t = fluid.DistributeTranspiler()
    t.transpile(0, program=main, pservers=PSERVERS, trainers=2, startup_program=startup)
    verified(t, startup)
    trainer = t.get_trainer_program(wait_port=False)
    assert not [op for op in trainer.global_block().ops if op.attrs.get("op_role") == 16]
    server, server_startup = t.get_pserver_programs(ENDPOINTS[0])
    (serve,) = server.global_block().ops
    assert serve.attr("lr_decay_block_id") == 1 and serve.attr("optimize_blocks") == [1, 2]
    assert [op.type for op in server.block(1).ops] == lr_types
    # the update blocks are children of the schedule's block (Fluid's pre_block_idx)
    assert server.block(1).parent_idx == 0 and server.block(2).parent_idx == 1
    assert [op.type for op in server.block(2).ops] == ["sum", "scale", "adamax", "scale"]
    made = [n for op in server_startup.global_block().ops for n in op.output_arg_names]
    assert "@LR_DECAY_COUNTER@" in made


def test_asynchronous_trainers_each_send_a_step_counter_the_server_sums():
    main, startup = build(exponential_decay_adamax, lambda: None)
    t = fluid.DistributeTranspiler()
    t.transpile(1, program=main, pservers=PSERVERS, trainers=2, sync_mode=False,
                startup_program=startup)
    trainer, _, *_ = verified(t, startup)
    types = [op.type for op in trainer.global_block().ops]
    assert "send_barrier" not in types and "fetch_barrier" not in types
    (counter_send,) = [op for op in trainer.global_block().ops if op.type == "send"
                       and op.input("X") == ["@LR_DECAY_COUNTER@.trainer_1"]]
    assert counter_send.attr("epmap") == ENDPOINTS
    assert counter_send.attr("merge_add") and not counter_send.attr("use_send_handler")
    # each recv waits for the send of its own gradient instead of a barrier
    sends = {op.input("X")[0]: op.output("Out")[0] for op in trainer.global_block().ops
             if op.type == "send"}
    for op in trainer.global_block().ops:
        if op.type == "recv":
            assert op.input("X") == [sends[op.output("Out")[0] + "@GRAD"]]
    starts = {op.output("Out")[0]: op.attr("value") for op in startup.global_block().ops
              if op.type == "fill_constant"}
    assert starts["@LR_DECAY_COUNTER@"] == -2.0
    assert starts["@LR_DECAY_COUNTER@.trainer_0"] == starts["@LR_DECAY_COUNTER@.trainer_1"] == 1
    server = t.get_pserver_program(ENDPOINTS[0])
    (total,) = [op for op in server.block(1).ops if op.type == "sum"]
    assert total.input("X") == ["@LR_DECAY_COUNTER@.trainer_0", "@LR_DECAY_COUNTER@.trainer_1"]


def test_runtime_split_sends_whole_gradients_with_their_block_names():
    config = fluid.DistributeTranspilerConfig()
    config.sync_mode = False
    config.runtime_split_send_recv = True
    main, startup = build(mlp, sgd)
    t = fluid.DistributeTranspiler(config=config)
    assert t.distributed_mode == 1  # ASYNC
    t.transpile(0, program=main, pservers=PSERVERS, trainers=2, sync_mode=False,
                startup_program=startup)
    trainer, _, *_ = verified(t, startup)
    ops = trainer.global_block().ops
    assert not [op for op in ops if op.type in ("split_byref", "concat")]
    (send,) = [op for op in ops if op.type == "send" and op.input("X") == ["fc_0.w_0@GRAD"]]
    assert send.attr("send_varnames") == ["fc_0.w_0@GRAD.block0", "fc_0.w_0@GRAD.block1"]
    assert send.attr("sections") == [392, 392]
    (recv,) = [op for op in ops if op.type == "recv" and op.output("Out") == ["fc_0.w_0"]]
    assert recv.attr("recv_varnames") == ["fc_0.w_0.block0", "fc_0.w_0.block1"]
    (serve,) = t.get_pserver_program(ENDPOINTS[0]).global_block().ops
    assert serve.attr("distributed_mode") == 1


def test_a_sparse_gradient_is_split_by_rows_and_its_table_looked_up_on_the_servers():
    t, main, startup = transpile("embedding_sparse_sync")
    trainer = t.get_trainer_program(wait_port=False)
    block = trainer.global_block()
    assert block.var("embedding_0.w_0@GRAD").type == fluid.core.VarDesc.VarType.SELECTED_ROWS
    (lookup,) = [op for op in block.ops if op.type == "distributed_lookup_table"]
    assert lookup.attr("table_names") == ["embedding_0.w_0.block0", "embedding_0.w_0.block1"]
    assert lookup.attr("height_sections") == [5000, 5000]
    assert not [op for op in block.ops if op.type == "lookup_table_v2"]
    assert [op.type for op in startup.global_block().ops
            if "embedding_0.w_0" in op.output_arg_names] == ["fake_init"]
    server = t.get_pserver_program(ENDPOINTS[1])
    assert server.global_block().ops[0].attr("sparse_grad_to_param") == [
        "embedding_0.w_0@GRAD.block1:embedding_0.w_0.block1"]


def test_one_transpiler_gives_the_trainer_and_the_servers_in_any_order():
    # Fluid's get_trainer_program drops the optimizer's variables its servers are built
    # from; here each role comes out the same whichever is asked first
    t1, _, _ = transpile("mlp_adam_sync")
    first_servers = [program_view(p) for ep in ENDPOINTS for p in t1.get_pserver_programs(ep)]
    t2, _, _ = transpile("mlp_adam_sync")
    t2.get_trainer_program(wait_port=False)
    assert [program_view(p) for ep in ENDPOINTS
            for p in t2.get_pserver_programs(ep)] == first_servers


# --- errors ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("pservers", ["127.0.0.1", "127.0.0.1:6170;127.0.0.1:6171",
                                      "127.0.0.1:6170,", ":6170", "127.0.0.1:70000",
                                      "127.0.0.1:6170,127.0.0.1:6170", "127.0.0.1: 6170"])
def test_a_bad_pservers_string_is_refused_by_name(pservers):
    main, startup = build(fit_a_line, sgd)
    with pytest.raises(InvalidArgument, match="pservers.*'ip:port'|distinct endpoints"):
        fluid.DistributeTranspiler().transpile(0, program=main, pservers=pservers, trainers=2,
                                               startup_program=startup)
    assert not [op for op in main.global_block().ops if op.type == "send"]  # untouched


def test_pservers_must_be_a_string():
    main, startup = build(fit_a_line, sgd)
    with pytest.raises(InvalidType, match="pservers"):
        fluid.DistributeTranspiler().transpile(0, program=main, pservers=ENDPOINTS,
                                               startup_program=startup)


@pytest.mark.parametrize("trainer_id, trainers", [(2, 2), (-1, 2), (0, 0)])
def test_trainer_id_must_be_one_of_the_trainers(trainer_id, trainers):
    main, startup = build(fit_a_line, sgd)
    error = OutOfRange if trainers else InvalidArgument
    with pytest.raises(error, match="trainer_id|trainers"):
        fluid.DistributeTranspiler().transpile(trainer_id, program=main, pservers=PSERVERS,
                                               trainers=trainers, startup_program=startup)


def test_a_distributed_lookup_table_is_refused_as_not_built():
    def model(optimizer):
        words = fluid.data(name="words", shape=[-1, 1], dtype="int64")
        emb = fluid.embedding(words, size=[100, 4], is_sparse=True, is_distributed=True)
        optimizer.minimize(fluid.layers.mean(emb))
    main, startup = build(model, sgd)
    with pytest.raises(Unimplemented, match="embedding_0.w_0.*is_distributed=True"):
        fluid.DistributeTranspiler().transpile(0, program=main, pservers=PSERVERS,
                                               trainers=2, startup_program=startup)


def test_a_program_without_optimizer_ops_is_refused():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        fluid.layers.fc(input=fluid.layers.data(name="x", shape=[3], dtype="float32"), size=2)
    with pytest.raises(InvalidArgument, match="minimize"):
        fluid.DistributeTranspiler().transpile(0, program=main, pservers=PSERVERS,
                                               startup_program=startup)


def test_an_optimizer_the_servers_cannot_run_is_refused():
    main, startup = build(fit_a_line, lambda: fluid.optimizer.Lamb(learning_rate=0.01))
    with pytest.raises(Unimplemented, match="lamb"):
        fluid.DistributeTranspiler().transpile(0, program=main, pservers=PSERVERS,
                                               startup_program=startup)


def test_config_and_call_order_errors_name_what_was_expected():
    config = fluid.DistributeTranspilerConfig()
    config.min_block_size = 1024
    with pytest.raises(InvalidArgument, match="min_block_size.*>= 8192"):
        fluid.DistributeTranspiler(config=config)
    config = fluid.DistributeTranspilerConfig()
    config.split_method = "RoundRobin"
    with pytest.raises(InvalidType, match="split_method"):
        fluid.DistributeTranspiler(config=config)
    with pytest.raises(InvalidArgument, match="runtime_split_send_recv"):
        fluid.DistributeTranspilerConfig().runtime_split_send_recv = True
    config = fluid.DistributeTranspilerConfig()
    config.mode = "nccl2"
    main, startup = build(fit_a_line, sgd)
    with pytest.raises(Unimplemented, match="nccl2"):
        fluid.DistributeTranspiler(config=config).transpile(0, program=main, trainers=2,
                                                            startup_program=startup)
    t = fluid.DistributeTranspiler()
    with pytest.raises(PreconditionNotMet, match="transpile"):
        t.get_trainer_program(wait_port=False)
    t.transpile(0, program=main, pservers=PSERVERS, trainers=2, startup_program=startup)
    with pytest.raises(InvalidArgument, match="one of the pservers"):
        t.get_pserver_program("127.0.0.1:9999")
    with pytest.raises(PreconditionNotMet, match="used once"):
        t.transpile(0, program=main, pservers=PSERVERS, trainers=2, startup_program=startup)


def test_waiting_for_servers_that_never_come_has_a_deadline():
    import socket
    from fluid_nb.errors import ExecutionTimeout
    from fluid_nb.rewriters.transpiler.distribute_transpiler import wait_server_ready
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ExecutionTimeout, match=f"127.0.0.1:{port}"):
        wait_server_ready([f"127.0.0.1:{port}"], timeout=0.3)
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        wait_server_ready([f"127.0.0.1:{listening.getsockname()[1]}"], timeout=5)
