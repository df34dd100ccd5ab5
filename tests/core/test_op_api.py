"""The op-level API: ``fluid.op.Operator`` runs one op on a scope's variables (tensors and
SelectedRows) as the same op runs in a program; ``core.get_grad_op_desc`` makes the grad
ops ``append_backward`` makes; ``op.desc``/``block.desc``/``var.desc`` are views of the one
program."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb import core
from fluid_nb.errors import InvalidArgument, InvalidType, NotFound, OutOfRange
from fluid_nb.framework import AttrType
from fluid_nb.op import Operator

PLACE = fluid.CPUPlace()
rng = np.random.RandomState(7)


def _set(scope, name, array, lod=None):
    tensor = scope.var(name).get_tensor()
    tensor.set(array, PLACE)
    if lod is not None:
        tensor.set_lod(lod)
    return tensor


def _selected_rows(scope, name, rows, height, values):
    sr = scope.var(name).get_selected_rows()
    sr.set_height(height)
    sr.set_rows(rows)
    sr.get_tensor().set(values, PLACE)
    return sr


def _in_program(op_type, inputs, outputs, attrs):
    """The op's outputs run in an ordinary program (inputs fed)."""
    main = fluid.Program()
    block = main.global_block()
    for name, value in inputs.items():
        block.create_var(name=name, shape=value.shape, dtype=value.dtype)
    for name in outputs.values():
        block.create_var(name=name)
    block.append_op(type=op_type, inputs={slot: [slot.lower()] for slot in ("X", "Y")
                                          if slot.lower() in inputs},
                    outputs={slot: [name] for slot, name in outputs.items()}, attrs=attrs)
    return fluid.Executor(PLACE).run(main, feed=inputs, fetch_list=list(outputs.values()),
                                     scope=fluid.Scope())


# --- Operator.run on a scope ---------------------------------------------------------------
def test_an_operator_run_on_a_scope_equals_the_op_in_a_program():
    x, y = rng.rand(3, 4).astype("float32"), rng.rand(4, 5).astype("float32")
    scope = fluid.Scope()
    _set(scope, "x", x)
    _set(scope, "y", y)
    Operator("mul", X="x", Y="y", Out="out", x_num_col_dims=1).run(scope, PLACE)
    (expected,) = _in_program("mul", {"x": x, "y": y}, {"Out": "out"}, {"x_num_col_dims": 1})
    np.testing.assert_array_equal(np.array(scope.find_var("out").get_tensor()), expected)
    np.testing.assert_allclose(expected, x @ y, rtol=1e-6)


def test_an_operator_takes_the_scope_s_lod_and_keeps_it_on_outputs():
    scope = fluid.Scope()
    _set(scope, "x", rng.rand(5, 2).astype("float32"), lod=[[0, 2, 5]])
    Operator("scale", X="x", Out="y", scale=3.0).run(scope, PLACE)
    out = scope.find_var("y").get_tensor()
    assert out.lod() == [[0, 2, 5]]
    np.testing.assert_allclose(np.array(out), 3.0 * np.array(scope.find_var("x").get_tensor()))


def test_sparse_sgd_updates_the_rows_of_the_gradient_in_the_tensor_the_caller_holds():
    scope = fluid.Scope()
    param = _set(scope, "Param", np.full((10, 4), 5.0, "float32"))
    _set(scope, "LearningRate", np.array([2.0], "float32"))
    grad = np.ones((3, 4), "float32")
    grad[0, 0] = 2.0
    _selected_rows(scope, "Grad", [0, 4, 7], 10, grad)
    Operator("sgd", Param="Param", Grad="Grad", ParamOut="Param",
             LearningRate="LearningRate").run(scope, PLACE)
    want = np.full((10, 4), 5.0, "float32")
    want[[0, 4, 7]] -= 2.0 * grad
    np.testing.assert_array_equal(np.array(param), want)


def test_sgd_on_a_selected_rows_param_updates_the_rows_holding_the_gradient_s_ids():
    scope = fluid.Scope()
    table = _selected_rows(scope, "Param", [3, 5, 8], 10,
                           np.arange(6, dtype="float32").reshape(3, 2))
    values = table.get_tensor()
    _set(scope, "LearningRate", np.array([0.5], "float32"))
    _selected_rows(scope, "Grad", [8, 3, 8], 10, np.ones((3, 2), "float32"))
    Operator("sgd", Param="Param", Grad="Grad", ParamOut="Param",
             LearningRate="LearningRate").run(scope, PLACE)
    want = np.arange(6, dtype="float32").reshape(3, 2)
    want[0] -= 0.5
    want[2] -= 1.0  # row 8 appears twice: its gradients add up
    np.testing.assert_array_equal(np.array(values), want)
    assert table.rows() == [3, 5, 8] and table.height() == 10


def test_sgd_on_a_selected_rows_param_refuses_an_id_the_param_does_not_hold():
    scope = fluid.Scope()
    _selected_rows(scope, "Param", [3, 5], 10, np.zeros((2, 2), "float32"))
    _set(scope, "LearningRate", np.array([0.5], "float32"))
    _selected_rows(scope, "Grad", [4], 10, np.ones((1, 2), "float32"))
    op = Operator("sgd", Param="Param", Grad="Grad", ParamOut="Param",
                  LearningRate="LearningRate")
    with pytest.raises(OutOfRange, match="SelectedRows.index"):
        op.run(scope, PLACE)


def test_an_op_on_selected_rows_writes_into_the_selected_rows_the_scope_holds():
    scope = fluid.Scope()
    values = rng.rand(3, 4)
    _selected_rows(scope, "in", [0, 4, 7], 10, values)
    out = scope.var("out").get_selected_rows()
    out_tensor = out.get_tensor()
    Operator("scale", X="in", Out="out", scale=2.0).run(scope, PLACE)
    assert out.rows() == [0, 4, 7] and out.height() == 10
    np.testing.assert_array_equal(np.array(out_tensor), 2.0 * values)


def test_a_creation_op_fills_a_selected_rows_output_as_declared_by_the_scope():
    scope = fluid.Scope()
    out = scope.var("X").get_selected_rows()
    Operator("fill_constant", Out="X", shape=[4, 3], value=1.5, dtype=5).run(scope, PLACE)
    assert isinstance(scope.find_var("X").value, fluid.core.SelectedRows)
    np.testing.assert_array_equal(np.array(out.get_tensor()), np.full((4, 3), 1.5, "float32"))


def test_running_an_operator_adds_only_its_own_variables_to_the_scope():
    scope = fluid.Scope()
    _set(scope, "x", np.ones((2, 2), "float32"))
    Operator("scale", X="x", Out="y").run(scope, PLACE)
    assert sorted(scope.local_var_names()) == ["x", "y"]


def test_a_failing_operator_leaves_its_outputs_as_they_were():
    scope = fluid.Scope()
    _set(scope, "x", np.ones((2, 3), "float32"))
    _set(scope, "y", np.ones((4, 5), "float32"))
    out = _set(scope, "out", np.zeros((1,), "float32"))
    with pytest.raises(InvalidArgument, match="mul"):
        Operator("mul", X="x", Y="y", Out="out").run(scope, PLACE)
    np.testing.assert_array_equal(np.array(out), np.zeros((1,), "float32"))


# --- building an Operator ---------------------------------------------------------------------
def test_operator_keyword_arguments_split_into_slots_and_attributes():
    op = Operator("sum", X=["a", "b"], Out="c", use_mkldnn=False)
    assert op.type() == "sum"
    assert op.input("X") == ["a", "b"] and op.output("Out") == ["c"]
    assert op.inputs() == {"X": ["a", "b"]} and op.outputs() == {"Out": ["c"]}
    assert op.input_vars() == ["a", "b"] and op.output_vars() == ["c"]
    assert op.attr("use_mkldnn") is False
    assert Operator(type="scale", X="a", Out="b", scale=np.float32(2)).attr("scale") == 2.0


def test_operator_refuses_what_fluid_refuses():
    with pytest.raises(InvalidArgument, match="registered op type"):
        Operator("no_such_op", X="a")
    with pytest.raises(InvalidArgument, match="input 'X' expected one variable"):
        Operator("scale", X=["a", "b"], Out="c")
    with pytest.raises(InvalidArgument, match="attribute 'scale' expected float"):
        Operator("scale", X="a", Out="c", scale="big")
    with pytest.raises(InvalidType, match="a variable name or a list"):
        Operator("scale", X=3, Out="c")
    with pytest.raises(InvalidArgument, match="keyword arguments"):
        Operator("scale", "extra", X="a")
    with pytest.raises(InvalidType, match="a Scope"):
        Operator("scale", X="a", Out="c").run({}, PLACE)
    with pytest.raises(NotFound, match="scale: input 'X' expected a variable of the scope"):
        Operator("scale", X="a", Out="c").run(fluid.Scope(), PLACE)


def test_the_factory_describes_registered_ops():
    assert "sgd" in Operator.types()
    assert Operator.get_op_input_names("sum") == ["X"]
    assert ("X", True) in Operator.get_op_inputs("sum")
    assert Operator.get_op_output_names("scale") == ["Out"]
    assert "scale" in Operator.get_op_attr_names("scale")


def test_the_retired_factories_import_and_say_what_replaces_them():
    from fluid_nb.errors import Unimplemented
    from fluid_nb.op import DynamicRecurrentOp
    with pytest.raises(Unimplemented, match="DynamicRNN"):
        DynamicRecurrentOp(inputs=["x"])


# --- grad op descs ----------------------------------------------------------------------------
def _mul_mean_program():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[3], dtype="float32")
        w = fluid.layers.create_parameter(shape=[3, 2], dtype="float32", name="w")
        out = fluid.layers.mul(x, w)
        loss = fluid.layers.mean(out)
    return main, startup, loss


def _comparable(op):
    attrs = {k: v for k, v in op.attrs.items() if k not in ("op_role", "op_role_var")}
    return op.type, op.inputs, {k: v for k, v in op.outputs.items() if v}, attrs


def test_grad_op_descs_are_the_ops_append_backward_appends():
    main, _, loss = _mul_mean_program()
    block = main.global_block()
    mul = next(op for op in block.ops if op.type == "mul")
    descs, grad_to_var = core.get_grad_op_desc(mul.desc, {"x@GRAD"}, [])
    fluid.backward.append_backward(loss)
    appended = next(op for op in block.ops if op.type == "mul_grad")
    assert len(descs) == 1
    assert _comparable(descs[0]._op) == _comparable(appended)
    assert descs[0].block() is None  # it stands alone until copied into a block
    assert grad_to_var == {"w@GRAD": "w"}


def test_gradients_in_the_no_grad_set_are_left_out():
    main, _, _ = _mul_mean_program()
    mul = next(op for op in main.global_block().ops if op.type == "mul")
    everything, to_var = core.get_grad_op_desc(mul.desc, set(), [])
    assert sorted(everything[0].output_arg_names()) == ["w@GRAD", "x@GRAD"]
    assert to_var == {"x@GRAD": "x", "w@GRAD": "w"}
    (desc,), to_var = core.get_grad_op_desc(mul.desc, {"w@GRAD", "x@GRAD"}, [])
    assert desc.output_arg_names() == [] and to_var == {}


def test_a_grad_op_built_from_descs_runs_like_append_backward_s():
    feed = {"x": rng.rand(4, 3).astype("float32")}

    def run(main, startup):
        scope = fluid.Scope()
        exe = fluid.Executor(PLACE)
        exe.run(startup, scope=scope)
        return exe.run(main, feed=feed, fetch_list=["w@GRAD"], scope=scope)[0]

    main, startup, loss = _mul_mean_program()
    fluid.backward.append_backward(loss)
    want = run(main, startup)

    main, startup, loss = _mul_mean_program()
    block = main.global_block()
    fluid.backward.append_backward(loss)
    grad_index = next(i for i, op in enumerate(block.ops) if op.type == "mul_grad")
    block._remove_op(grad_index)
    mul = next(op for op in block.ops if op.type == "mul")
    (grad,), _ = core.get_grad_op_desc(mul.desc, {"x@GRAD"}, [])
    new = block.desc.append_op()
    new.copy_from(grad)
    for name in grad.output_arg_names():
        block.desc.var(name.encode("ascii"))
    grad.infer_var_type(block.desc)
    grad.infer_shape(block.desc)
    main._sync_with_cpp()
    assert block.var("w@GRAD").shape == (3, 2)
    assert fluid.verify(main)
    np.testing.assert_allclose(run(main, startup), want, rtol=1e-6)


def test_an_op_without_a_gradient_has_no_grad_op_descs():
    main = fluid.Program()
    with fluid.program_guard(main):
        fluid.layers.fill_constant(shape=[1], dtype="float32", value=1.0)
    descs, to_var = core.get_grad_op_desc(main.global_block().ops[0].desc, set(), [])
    assert descs == [] and to_var == {}


# --- desc views -------------------------------------------------------------------------------
def test_op_desc_reads_and_writes_the_op_itself():
    main, _, _ = _mul_mean_program()
    mul = next(op for op in main.global_block().ops if op.type == "mul")
    desc = mul.desc
    assert desc.type() == "mul" and desc.input("X") == ["x"] and desc.input("Y") == ["w"]
    assert desc.input_names() == list(mul.inputs)
    assert desc.output_arg_names() == mul.output_arg_names
    assert desc.attr("x_num_col_dims") == 1
    version = main._version
    desc.set_attr("x_num_col_dims", 2)
    assert mul.attr("x_num_col_dims") == 2 and main._version > version
    with pytest.raises(InvalidArgument, match="x_num_col_dims"):
        desc.set_attr("x_num_col_dims", "two")
    desc._rename_input("x", "x2")
    assert mul.input("X") == ["x2"]
    assert mul.desc == desc and mul.desc != main.global_block().ops[-1].desc


def test_every_op_desc_carries_fluid_s_generated_attributes():
    main = fluid.Program()
    with fluid.program_guard(main):
        a = fluid.layers.fill_constant(shape=[1], dtype="float32", value=1.0)
        with fluid.device_guard("cpu"):
            fluid.layers.scale(a, scale=2.0)
    maker = core.op_proto_and_checker_maker
    device = maker.kOpDeviceAttrName()
    plain, guarded = main.global_block().ops
    assert plain.desc.has_attr(device) and plain.desc.attr(device) == ""
    assert guarded.desc.attr(device) == "cpu"
    assert plain.desc.attr(maker.kOpRoleAttrName()) == int(maker.OpRole.Forward)
    assert maker.kOpRoleVarAttrName() == "op_role_var"
    assert plain.desc.attr_type(maker.kOpCreationCallstackAttrName()) == AttrType.STRINGS
    assert maker.OpRole.Backward == 1 and maker.OpRole.Loss == 256


def test_block_desc_lists_ops_and_makes_variables():
    main, _, _ = _mul_mean_program()
    block = main.global_block()
    desc = block.desc
    assert desc.op_size() == len(block.ops)
    assert desc.op(0).type() == block.ops[0].type
    assert desc.find_var(b"nothing") is None and not desc.has_var("nothing")
    made = desc.var(b"made")
    assert block.has_var("made") and made.name() == "made"
    made.set_dtype(core.VarDesc.VarType.FP64)
    made.set_shape([2, 3])
    assert block.var("made").dtype == core.VarDesc.VarType.FP64
    assert block.var("made").shape == (2, 3)
    assert desc.find_var("x").shape() == [-1, 3]
    with pytest.raises(OutOfRange):
        desc.op(99)


def test_an_op_desc_serializes_to_op_desc_bytes():
    from fluid_nb.proto import framework_pb2
    main, _, _ = _mul_mean_program()
    mul = next(op for op in main.global_block().ops if op.type == "mul")
    message = framework_pb2.OpDesc.FromString(mul.desc.serialize_to_string())
    assert message.type == "mul"
    assert {i.parameter: list(i.arguments) for i in message.inputs} == {"X": ["x"], "Y": ["w"]}


# --- tensor dims --------------------------------------------------------------------------------
def test_set_dims_reshapes_or_resizes_a_tensor():
    tensor = fluid.LoDTensor()
    tensor._set_dims([2, 3])
    assert tensor._get_dims() == [2, 3] and np.array(tensor).dtype == np.float32
    tensor.set(np.arange(6, dtype="float64"), PLACE)
    tensor._set_dims([3, 2])
    np.testing.assert_array_equal(np.array(tensor), np.arange(6).reshape(3, 2))
    tensor._set_dims([4])
    assert tensor._get_dims() == [4] and np.array(tensor).dtype == np.float64


def test_selected_rows_numel_counts_its_values():
    scope = fluid.Scope()
    empty = scope.var("empty").get_selected_rows()
    assert empty.numel() == 0
    assert _selected_rows(scope, "w", [1, 4], 6, np.ones((2, 3), "float32")).numel() == 6


@pytest.mark.gpu
def test_an_operator_on_a_gpu_place_equals_the_cpu_result():
    x = rng.rand(3, 4).astype("float32")
    results = []
    for place in (PLACE, fluid.CUDAPlace(0)):
        scope = fluid.Scope()
        scope.var("x").get_tensor().set(x, place)
        Operator("scale", X="x", Out="y", scale=2.0, bias=1.0).run(scope, place)
        results.append(np.array(scope.find_var("y").get_tensor()))
    np.testing.assert_allclose(results[1], results[0], rtol=1e-6)
