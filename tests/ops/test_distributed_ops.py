"""The parameter-server ops: the split ops the trainer runs before sending (table rows and a
SelectedRows case), and the RPC ops' definitions as Fluid 1.8's makers give them."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument
from fluid_nb.framework import codec
from fluid_nb.framework.attrs import AttrType
from fluid_nb.ops import registry
from fluid_nb.tensor.tensor import LoDTensor, SelectedRows
from tests.ops.op_test import OpCase, table_tests

rng = np.random.RandomState(7)


def r(*shape):
    return rng.uniform(-1, 1, shape).astype("float32")


def _rows_ref(x, sizes):
    return {"Out": np.split(x, np.cumsum(sizes[:-1]), axis=0)}


CASES = [
    OpCase("split_byref", {"X": r(7, 3)}, attrs={"sections": [4, 3]}, outputs={"Out": 2},
           ref=lambda i, a: _rows_ref(i["X"], [4, 3]), grad=["X"], grad_outputs=["Out"],
           name="sections"),
    OpCase("split_byref", {"X": r(6, 2, 2)}, attrs={"num": 3}, outputs={"Out": 3},
           ref=lambda i, a: _rows_ref(i["X"], [2, 2, 2]), grad=["X"], grad_outputs=["Out"],
           name="num"),
    OpCase("fake_init", {}, attrs={"shape": [3, 2]},
           ref=lambda i, a: {"Out": np.zeros((3, 2), "float32")}),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


def test_split_byref_pieces_share_the_input_memory():
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="x", shape=(5, 2), dtype="float32")
    block.append_op(type="split_byref", inputs={"X": ["x"]}, outputs={"Out": ["a", "b"]},
                    attrs={"sections": [2, 3]})
    assert [block.var(n).shape for n in ("a", "b")] == [(2, 2), (3, 2)]
    x = np.arange(10, dtype="float32").reshape(5, 2)
    exe = fluid.Executor(fluid.CPUPlace())
    a, b = exe.run(program, feed={"x": x}, fetch_list=["a", "b"], scope=fluid.Scope())
    np.testing.assert_array_equal(np.concatenate([a, b]), x)


def test_split_byref_sections_must_cover_the_rows():
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="x", shape=(5, 2), dtype="float32")
    with pytest.raises(InvalidArgument, match="split_byref.*summing to the split dim 5"):
        block.append_op(type="split_byref", inputs={"X": ["x"]}, outputs={"Out": ["a", "b"]},
                        attrs={"sections": [2, 2]})


def test_split_byref_gradient_is_a_concat_on_rows():
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="x", shape=(4, 2), dtype="float32")
    op = block.append_op(type="split_byref", inputs={"X": ["x"]},
                         outputs={"Out": ["a", "b"]}, attrs={"num": 2})
    (spec,) = registry.make_grad_ops(op)
    assert spec.type == "concat" and spec.attrs == {"axis": 0}
    assert spec.inputs == {"X": ["a@GRAD", "b@GRAD"]} and spec.outputs == {"Out": ["x@GRAD"]}


def _split_selected_rows(x, sections, place=None):
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="x", type=fluid.core.VarDesc.VarType.SELECTED_ROWS,
                     shape=(x.height(), 2), dtype="float32", persistable=True)
    outs = [f"out{i}" for i in range(len(sections))]
    block.append_op(type="split_selected_rows", inputs={"X": ["x"]}, outputs={"Out": outs},
                    attrs={"height_sections": sections})
    fluid.verify(program)
    scope = fluid.Scope()
    scope.var("x").value = x
    values = fluid.Executor(place or fluid.CPUPlace()).run(program, fetch_list=outs,
                                                           scope=scope, return_numpy=False)
    return block, values


def test_split_selected_rows_gives_each_piece_its_rows_renumbered():
    values = np.arange(10, dtype="float32").reshape(5, 2)
    x = SelectedRows([7, 1, 4, 1, 9], 10, LoDTensor(values))
    block, (low, high) = _split_selected_rows(x, [4, 6])
    assert [block.var(n).type for n in ("out0", "out1")] == \
        [fluid.core.VarDesc.VarType.SELECTED_ROWS] * 2
    assert block.var("out0").shape == (4, 2) and block.var("out1").shape == (6, 2)
    assert low.rows() == [1, 1] and low.height() == 4
    np.testing.assert_array_equal(np.asarray(low.get_tensor()), values[[1, 3]])
    assert high.rows() == [3, 0, 5] and high.height() == 6  # 7, 4, 9 less the first 4 rows
    np.testing.assert_array_equal(np.asarray(high.get_tensor()), values[[0, 2, 4]])


def test_split_selected_rows_runs_on_the_strict_device_without_host_copies():
    from fluid_nb.testing.strict_device import StrictDevicePlace, counting, to_device
    values = np.arange(8, dtype="float32").reshape(4, 2)
    x = SelectedRows([5, 0, 3, 8], 9, LoDTensor(to_device(values)))
    with counting() as count:
        _, (low, high) = _split_selected_rows(x, [4, 5], StrictDevicePlace())
    assert low.rows() == [0, 3] and high.rows() == [1, 4]
    np.testing.assert_array_equal(low.get_tensor().array.get(), values[[1, 2]])
    np.testing.assert_array_equal(high.get_tensor().array.get(), values[[0, 3]])
    assert count["to_host"] == 0, count


def test_fake_init_gives_the_shape_without_the_memory():
    program = fluid.Program()
    program.global_block().create_var(name="table", persistable=True)
    program.global_block().append_op(type="fake_init", outputs={"Out": ["table"]},
                                     attrs={"shape": [1000, 64]})
    assert program.global_block().var("table").shape == (1000, 64)
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(program, scope=scope)
    table = scope.find_var("table").get_tensor().array
    assert table.shape == (1000, 64) and table.strides == (0, 0) and not table.any()


def test_split_selected_rows_row_ids_must_fall_inside_the_sections():
    x = SelectedRows([0, 9], 10, LoDTensor(np.ones((2, 2), "float32")))
    with pytest.raises(InvalidArgument, match=r"row ids expected in \[0, 8\).*received 9"):
        _split_selected_rows(x, [4, 4])
    # the sections may reach past the height (the last piece keeps its own height)
    _, (low, high) = _split_selected_rows(x, [4, 8])
    assert low.rows() == [0] and high.rows() == [5] and high.height() == 8


# Fluid 1.8's makers (paddle/fluid/operators/distributed_ops/*_op.cc): slots, then each
# attribute's type and default
RPC_OPS = {
    "send": (["X[]?"], ["Out[]"], {
        "trainer_id": (AttrType.INT, 0), "epmap": (AttrType.STRINGS, ["127.0.0.1:6164"]),
        "sections": (AttrType.LONGS, []), "send_varnames": (AttrType.STRINGS, []),
        "num": (AttrType.INT, 0), "merge_add": (AttrType.BOOLEAN, False),
        "use_send_handler": (AttrType.BOOLEAN, True)}),
    "recv": (["X[]?"], ["Out[]"], {
        "epmap": (AttrType.STRINGS, []), "trainer_id": (AttrType.INT, 0),
        "with_barrier": (AttrType.BOOLEAN, True), "varnames": (AttrType.STRINGS, []),
        "recv_varnames": (AttrType.STRINGS, []), "do_not_run": (AttrType.INT, 0)}),
    "send_barrier": (["X[]?"], ["Out[]"], {
        "trainer_id": (AttrType.INT, 0), "endpoints": (AttrType.STRINGS, ["127.0.0.1:6164"]),
        "half_async": (AttrType.BOOLEAN, False)}),
    "fetch_barrier": (["X[]?"], ["Out[]"], {
        "trainer_id": (AttrType.INT, 0),
        "endpoints": (AttrType.STRINGS, ["127.0.0.1:6164"])}),
    "listen_and_serv": (["X[]?"], [], {
        "endpoint": (AttrType.STRING, "127.0.0.1:6164"), "pserver_id": (AttrType.INT, -1),
        "grad_to_block_id": (AttrType.STRINGS, []), "distributed_mode": (AttrType.INT, 0),
        "dc_asgd": (AttrType.BOOLEAN, False), "optimize_blocks": (AttrType.BLOCKS, []),
        "prefetch_var_name_to_block_id": (AttrType.STRINGS, []),
        "sparse_grad_to_param": (AttrType.STRINGS, []), "Fanin": (AttrType.INT, 1),
        "checkpint_block_id": (AttrType.INT, -1), "lr_decay_block_id": (AttrType.INT, -1),
        "rpc_get_thread_num": (AttrType.INT, 1), "rpc_send_thread_num": (AttrType.INT, 1),
        "rpc_prefetch_thread_num": (AttrType.INT, 1)}),
    "split_byref": (["X"], ["Out[]"], {
        "sections": (AttrType.INTS, []), "num": (AttrType.INT, 0)}),
    "split_selected_rows": (["X"], ["Out[]"], {"height_sections": (AttrType.LONGS, [])}),
    "distributed_lookup_table": (["Ids[]", "W"], ["Outputs[]"], {
        "table_names": (AttrType.STRINGS, [""]), "height_sections": (AttrType.LONGS, []),
        "endpoints": (AttrType.STRINGS, ["127.0.0.1:6164"]), "trainer_id": (AttrType.INT, 0),
        "lookup_table_version": (AttrType.STRING, "lookup_table"),
        "padding_idx": (AttrType.LONG, -1), "dtype": (AttrType.INT, 5)}),
    "fake_init": ([], ["Out"], {"shape": (AttrType.LONGS, None)}),
    "checkpoint_notify": ([], [], {
        "epmap": (AttrType.STRINGS, ["127.0.0.1:6164"]), "dir": (AttrType.STRING, None),
        "lookup_table": (AttrType.STRING, None), "trainer_id": (AttrType.INT, 0)}),
}


@pytest.mark.parametrize("op_type", sorted(RPC_OPS))
def test_distributed_op_has_fluid_1_8_slots_attributes_and_defaults(op_type):
    inputs, outputs, attrs = RPC_OPS[op_type]
    opdef = registry.get(op_type)
    assert [repr(s) for s in opdef.inputs] == inputs
    assert [repr(s) for s in opdef.outputs] == outputs
    assert {n: (s.type, s.default) for n, s in opdef.attrs.items()} == attrs


def test_rpc_ops_make_a_program_that_verifies_and_round_trips():
    program = fluid.Program()
    block = program.global_block()
    for name in ("w@GRAD", "w"):
        block.create_var(name=name, shape=(3, 2), dtype="float32")
    block.create_var(name="w.block0", shape=(3, 2), dtype="float32")
    for name in ("dummy", "barrier"):
        block.create_var(name=name)
    eps = ["127.0.0.1:6170", "127.0.0.1:6171"]
    block.append_op(type="send", inputs={"X": ["w@GRAD"]}, outputs={"Out": ["dummy"]},
                    attrs={"epmap": eps[:1]})
    block.append_op(type="send_barrier", inputs={"X": ["dummy"]},
                    outputs={"Out": ["barrier"]}, attrs={"endpoints": eps})
    block.append_op(type="recv", inputs={"X": ["barrier"]}, outputs={"Out": ["w.block0"]},
                    attrs={"epmap": eps[:1]})
    # Paddle's write-after-write: the barrier names what recv wrote, writing nothing
    block.append_op(type="fetch_barrier", inputs={"X": ["barrier"]},
                    outputs={"Out": ["w.block0"]}, attrs={"endpoints": eps})
    server = fluid.Program()
    optimize = server._create_block()
    server._rollback()
    server.global_block().create_var(name="w@GRAD", shape=(3, 2), dtype="float32")
    server.global_block().append_op(
        type="listen_and_serv", inputs={"X": ["w@GRAD"]}, outputs={},
        attrs={"endpoint": eps[0], "optimize_blocks": [optimize], "Fanin": 2,
               "grad_to_block_id": ["w@GRAD:1"]})
    for prog in (program, server):
        fluid.verify(prog)
        data = codec.encode_program(prog)
        assert codec.encode_program(codec.decode_program(data)) == data
    (serve,) = codec.decode_program(codec.encode_program(server)).global_block().ops
    assert serve.attr("optimize_blocks") in ([1], [optimize]) or \
        [getattr(b, "idx", b) for b in serve.attr("optimize_blocks")] == [1]
