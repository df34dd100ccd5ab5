"""What the transpiler records beside the programs it writes: where each parameter piece and
optimizer state lives (``program._parameters_on_pservers``) and the distributed marks, and
how it treats a sparse nce table."""
import math

import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument

PSERVERS = "127.0.0.1:6170,127.0.0.1:6171"
ENDPOINTS = PSERVERS.split(",")


def wide_fc(optimizer):
    # fc_w is 300 x 100 = 30000 elements: cut in two blocks of 150 rows
    x = fluid.layers.data(name="x", shape=[300], dtype="float32")
    y = fluid.layers.data(name="y", shape=[1], dtype="float32")
    pred = fluid.layers.fc(input=x, size=100, param_attr=fluid.ParamAttr(name="fc_w"),
                           bias_attr=fluid.ParamAttr(name="fc_b"))
    optimizer.minimize(fluid.layers.mean(fluid.layers.square_error_cost(input=pred, label=y)))


def transpiled(model, optimizer, trainer_id=0):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        model(optimizer)
    t = fluid.DistributeTranspiler()
    t.transpile(trainer_id, program=main, pservers=PSERVERS, trainers=2,
                startup_program=startup)
    return t, main, startup


def numel(shape):
    return math.prod(shape)


def test_the_pieces_of_each_parameter_on_the_servers_make_it_whole():
    t, main, _ = transpiled(wide_fc, fluid.optimizer.SGD(learning_rate=0.1))
    record = main._parameters_on_pservers
    params = record.get_distributed_vars_by_vtypes(["Param"], groupby=True)
    assert set(params) == {"fc_w", "fc_b"}
    pieces = sorted(params["fc_w"], key=lambda v: v.block_id)
    assert [(v.slice.name, v.slice.shape, v.offset, v.is_slice) for v in pieces] == [
        ("fc_w.block0", (150, 100), 0, True), ("fc_w.block1", (150, 100), 15000, True)]
    assert sum(numel(v.slice.shape) for v in pieces) == numel(pieces[0].origin.shape)
    (bias,) = params["fc_b"]
    assert (bias.is_slice, bias.block_id, bias.offset) == (False, 0, 0)
    # each piece is recorded on the server the trainer sends its gradient to
    for op in main.global_block().ops:
        if op.type == "recv":
            for name, ep in zip(op.output("Out"), op.attrs["epmap"]):
                assert record.get_distributed_var_by_slice(name).endpoint == ep


def test_optimizer_state_is_recorded_cut_like_its_parameter():
    _, main, _ = transpiled(wide_fc, fluid.optimizer.Adam(learning_rate=0.1))
    record = main._parameters_on_pservers
    for ep in ENDPOINTS:
        w_piece = record.get_distributed_var_by_origin_and_ep("fc_w", ep)
        states = [v for v in record.get_distributed_vars_by_ep(ep, "Optimizer")
                  if v.origin.name.startswith("fc_w_")]
        by_kind = {v.origin.name.split("_")[2]: v for v in states}
        # the moments have the parameter's shape, so each server holds its block's rows
        for kind in ("moment1", "moment2"):
            assert by_kind[kind].slice.shape == w_piece.slice.shape
            assert (by_kind[kind].offset, by_kind[kind].block_id) == \
                (w_piece.offset, w_piece.block_id)
        # the beta powers are one number each, held whole
        for kind in ("beta1", "beta2"):
            assert (by_kind[kind].is_slice, tuple(by_kind[kind].slice.shape)) == (False, (1,))


def test_trainer_and_server_programs_carry_the_distributed_marks():
    t, main, _ = transpiled(wide_fc, fluid.optimizer.SGD(learning_rate=0.1), trainer_id=1)
    assert main._is_distributed is True and main._is_chief is False
    assert main._endpoints == ENDPOINTS
    server = t.get_pserver_program(ENDPOINTS[0])
    assert server._parameters_on_pservers is main._parameters_on_pservers
    assert server._endpoints == ENDPOINTS


def test_a_failed_transpile_leaves_no_marks():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        fluid.layers.fc(input=fluid.layers.data(name="x", shape=[3], dtype="float32"), size=2)
    with pytest.raises(InvalidArgument):
        fluid.DistributeTranspiler().transpile(0, program=main, pservers=PSERVERS,
                                               startup_program=startup)
    assert not hasattr(main, "_parameters_on_pservers")


def sparse_nce(optimizer):
    x = fluid.layers.data(name="input", shape=[10], dtype="float32")
    label = fluid.layers.data(name="label", shape=[1], dtype="int64")
    cost = fluid.layers.nce(input=x, label=label, num_total_classes=20, param_attr="nce_w",
                            bias_attr="nce_b", seed=1, num_neg_samples=5, is_sparse=True)
    optimizer.minimize(fluid.layers.mean(cost))


def test_a_sparse_nce_table_is_received_since_nce_reads_it_on_the_trainer():
    t, main, startup = transpiled(sparse_nce, fluid.optimizer.SGD(learning_rate=0.1))
    trainer = t.get_trainer_program(wait_port=False)
    received = {n for op in trainer.global_block().ops if op.type == "recv"
                for n in op.output("Out")}
    assert {"nce_w", "nce_b"} <= received
    startup_ops = [op.type for op in startup.global_block().ops]
    assert "fake_init" not in startup_ops
    assert {n for op in startup.global_block().ops if op.type == "recv"
            for n in op.output("Out")} >= {"nce_w", "nce_b"}
    # the trainer sends its gradient and one server updates it
    assert [op for op in trainer.global_block().ops if op.type == "send"
            and "nce_w" in op.attrs["op_role_var"]]
    updates = [op for ep in ENDPOINTS for block in t.get_pserver_program(ep).blocks[1:]
               for op in block.ops if op.type == "sgd" and op.input("Param") == ["nce_w"]]
    assert len(updates) == 1
