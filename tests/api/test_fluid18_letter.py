"""Fluid 1.8's behaviour at the letter, where scripts and tests depend on it: the Python
exception a bad argument raises, the dtypes a layer accepts, where an initializer's op
goes, what clipping returns, what backward differentiates and what fetch takes."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb import initializer
from fluid_nb.errors import InvalidArgument, InvalidType, Unimplemented

L = fluid.layers


# --- a wrong type is a TypeError, as in Fluid --------------------------------------------
@pytest.mark.parametrize("call", [
    lambda x, b: L.relu6(1),
    lambda x, b: fluid.append_backward("loss"),
    lambda x, b: fluid.append_backward(L.mean(x), parameter_list="w"),
    lambda x, b: fluid.append_backward(L.mean(x), callbacks=lambda *a: None),
    lambda x, b: L.cond(None, lambda: x, lambda: x),
    lambda x, b: L.cond(b, "not a function", lambda: x),
    lambda x, b: L.case("not a list"),
    lambda x, b: L.case([(b, "not a function")]),
    lambda x, b: L.switch_case(L.fill_constant([1], "int64", 1), "not a list"),
    lambda x, b: L.while_loop(b, lambda i: i, [x]),
    lambda x, b: L.while_loop(lambda i: b, lambda i: i, x),
    lambda x, b: fluid.optimizer.SGD(0.1, grad_clip="clip"),
    lambda x, b: fluid.clip.GradientClipByNorm(1.0, need_clip="all"),
    lambda x, b: fluid.ParamAttr(name=3),
    lambda x, b: fluid.program_guard("main").__enter__(),
])
def test_a_wrong_type_is_a_type_error_and_an_invalid_argument(programs, call):
    x = fluid.data("x", [2, 3])
    b = L.fill_constant([1], "bool", True)
    with pytest.raises(TypeError) as caught:
        call(x, b)
    assert isinstance(caught.value, InvalidType) and isinstance(caught.value, InvalidArgument)


def test_a_wrong_value_stays_a_value_error(programs):
    with pytest.raises(ValueError) as caught:
        L.case([])
    assert not isinstance(caught.value, TypeError)


# --- dtypes: each layer takes what Fluid 1.8's takes ----------------------------------------
def test_relu_refuses_an_int32_input_at_the_call_naming_the_dtypes(programs):
    main, _ = programs
    ints = fluid.data("ints", [2], "int32")
    ops_before = len(main.global_block().ops)
    for layer in (L.relu, L.nn.relu):
        with pytest.raises(TypeError, match=r"relu: x's dtype expected one of float16, "
                                            r"float32, float64, but received int32"):
            layer(ints)
    assert len(main.global_block().ops) == ops_before


def test_the_dtypes_fluid_accepts_still_build(programs):
    floats = fluid.data("floats", [2], "float64")
    ids = fluid.data("ids", [2, 1], "int64")
    assert L.relu(floats).dtype == floats.dtype
    assert L.one_hot(ids, depth=4) is not None
    with pytest.raises(TypeError, match="one_hot: input's dtype"):
        L.one_hot(floats, depth=4)


def test_check_variable_and_dtype_is_where_fluid_keeps_it(programs):
    from fluid_nb.data_feeder import check_dtype, check_type, check_variable_and_dtype
    x = fluid.data("x", [2], "float32")
    check_variable_and_dtype(x, "x", ["float32"], "my_layer")
    check_type(3, "n", int, "my_layer")
    with pytest.raises(TypeError, match="my_layer: x's dtype expected one of int64"):
        check_variable_and_dtype(x, "x", ["int64"], "my_layer")
    with pytest.raises(TypeError, match="my_layer: n expected int, but received str"):
        check_type("3", "n", int, "my_layer")
    with pytest.raises(TypeError):
        check_dtype(x.dtype, "x", ("int32", "int64"), "my_layer")


def test_reduce_sum_of_int32_stays_int32_as_fluid_sums_it(programs):
    x = fluid.data("x", [3], "int32")
    total = L.reduce_sum(x)
    out, = fluid.Executor(fluid.CPUPlace()).run(feed={"x": np.array([1, 2, 3], "int32")},
                                                 fetch_list=[total])
    assert total.dtype == x.dtype and out.dtype == np.int32 and out.item() == 6


# --- initializers are ops of the block that creates the parameter -------------------------
def test_create_parameter_appends_its_initializer_to_that_block_once():
    block = fluid.Program().global_block()
    for _ in range(2):
        block.create_parameter(name="w", shape=[5, 10], dtype="float32",
                               initializer=initializer.UniformInitializer(-4.2, 3.1, 123))
    assert [op.type for op in block.ops] == ["uniform_random"]
    op = block.ops[0]
    assert (op.attr("min"), op.attr("max"), op.attr("seed")) == pytest.approx((-4.2, 3.1, 123))
    assert op.output("Out") == ["w"]


def test_a_float16_parameter_is_filled_in_float32_then_cast():
    block = fluid.Program().global_block()
    block.create_parameter(name="h", shape=[4], dtype="float16",
                           initializer=initializer.ConstantInitializer(0.5))
    fill, cast = block.ops
    assert (fill.type, cast.type) == ("fill_constant", "cast")
    assert block.var(fill.output("Out")[0]).dtype == fluid.core.VarDesc.VarType.FP32
    assert cast.output("Out") == ["h"]
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(block.program, scope=scope)
    value = np.array(scope.find_var("h").get_tensor())
    assert value.dtype == np.float16 and (value == 0.5).all()


def test_a_layer_still_puts_one_init_op_per_parameter_in_the_startup(programs):
    main, startup = programs
    L.fc(fluid.data("x", [None, 3]), size=2)
    written = [name for op in startup.global_block().ops for name in op.output_arg_names]
    assert sorted(written) == ["fc_0.b_0", "fc_0.w_0"]


def test_a_new_parameter_does_not_look_through_the_blocks_initializers(programs, monkeypatch):
    """Only a name the block already had can have an op writing it: 300 fc layers (600
    parameters) look at no op of the startup block, where each parameter looked at every
    initializer before it (180,000 looks, a second and a half on two cores)."""
    from fluid_nb.framework.program import Operator
    main, startup = programs
    looks = []
    names = Operator.output_arg_names
    monkeypatch.setattr(Operator, "output_arg_names",
                        property(lambda op: looks.append(op) or names.fget(op)))
    x = fluid.data("x", [None, 3])
    for _ in range(300):
        x = L.fc(x, size=3)
    assert len(startup.global_block().ops) == 600
    assert not [op for op in looks if op.block is startup.global_block()]
    L.fc(x, size=3, param_attr="fc_0.w_0")  # an existing parameter, shared: looked for
    assert len(startup.global_block().ops) == 601  # (its bias only)


def test_an_initialised_parameter_refuses_a_second_init_op():
    block = fluid.Program().global_block()
    block.create_parameter(name="w", shape=[2], dtype="float32")
    for value in (1.0, 2.0):
        initializer.ConstantInitializer(value)(block.var("w"), block)
    with pytest.raises(fluid.errors.PreconditionNotMet, match="at most one op"):
        block.create_parameter(name="w", shape=[2], dtype="float32",
                               initializer=initializer.ConstantInitializer(3.0))


# --- clipping --------------------------------------------------------------------------------
@pytest.mark.parametrize("clip", [
    lambda keep: fluid.clip.GradientClipByValue(1.0, need_clip=keep),
    lambda keep: fluid.clip.GradientClipByNorm(1.0, need_clip=keep),
    lambda keep: fluid.clip.GradientClipByGlobalNorm(1.0, need_clip=keep),
])
def test_clips_drop_missing_gradients_and_clip_only_what_need_clip_picks(programs, clip):
    block = fluid.default_main_program().global_block()
    x = block.create_parameter(name="x", shape=[2, 3], dtype="float32")
    y = block.create_parameter(name="y", shape=[2, 3], dtype="float32")
    result = clip(lambda param: param.name == "x")([(x, None), (x, y), (y, x)])
    assert [p.name for p, _ in result] == ["x", "y"]
    assert result[0][1] is not y        # x's gradient clipped: a new variable
    assert result[1][1] is x            # y's left alone


# --- backward -----------------------------------------------------------------------------
def test_a_constant_made_differentiable_gets_its_gradient_through_cond(programs):
    main, _ = programs
    a = L.fill_constant([1], "float32", 1.23)
    b = L.fill_constant([1], "float32", 1.25)
    a.stop_gradient = b.stop_gradient = False
    out = L.cond(a - b < -1.0, lambda: a, lambda: b)
    fluid.append_backward(out)
    assert (a.grad_name, b.grad_name) == (a.name + "@GRAD", b.name + "@GRAD")
    got = fluid.Executor(fluid.CPUPlace()).run(main, fetch_list=[out, a.grad_name,
                                                                 b.grad_name])
    assert [v.item() for v in got] == [np.float32(1.25), 0.0, 1.0]


def test_fetch_list_takes_the_list_gradients_returns(programs):
    main, startup = programs
    x = fluid.data("x", [2])
    x.stop_gradient = False
    y = L.reduce_sum(x * x)
    grads = fluid.gradients([y], [x])
    exe = fluid.Executor(fluid.CPUPlace())
    got = exe.run(main, feed={"x": np.array([1.0, 3.0], "float32")}, fetch_list=[y, grads])
    assert len(got) == 2
    np.testing.assert_allclose(got[1], [2.0, 6.0])


def test_variable_op_is_the_op_that_wrote_it(programs):
    x = fluid.data("x", [2])
    y = L.relu(x)
    assert y.op.type == "relu" and x.op is None


# --- modules Fluid 1.8 code imports --------------------------------------------------------
def test_default_scope_funcs_keep_a_stack_of_local_scopes():
    from fluid_nb import default_scope_funcs as scopes
    scopes.var("outer")

    def inside():
        scopes.var("inner").set_int(10)
        assert scopes.find_var("outer") is not None and scopes.find_var("inner").get_int() == 10
    scopes.scoped_function(inside)
    assert scopes.find_var("inner") is None and scopes.find_var("outer") is not None


def test_layers_utils_nest_like_fluid():
    from fluid_nb.layers import utils
    nest = {"b": [1, (2, 3)], "a": 4}
    assert utils.flatten(nest) == [4, 1, 2, 3]
    assert utils.map_structure(lambda v: v * 10, nest) == {"a": 40, "b": [10, (20, 30)]}
    assert utils.pack_sequence_as([0, (0,)], ["p", "q"]) == ["p", ("q",)]
    with pytest.raises(InvalidArgument):
        utils.assert_same_structure([1, 2], [1])


def test_dygraph_imports_and_refuses_when_entered():
    from fluid_nb.dygraph import base, nn
    assert not base.enabled()
    for enter in (lambda: fluid.dygraph.guard(), lambda: base.to_variable(np.ones(2)),
                  lambda: nn.Linear(2, 3)):
        with pytest.raises(Unimplemented, match="imperative"):
            enter()


def test_while_loop_carries_nested_lists_and_dicts(programs):
    main, _ = programs
    i = L.zeros([1], "int64")
    ten = L.fill_constant([1], "int64", 10)
    state = {"total": L.fill_constant([1], "int64", 0)}
    history = [L.fill_constant([2], "float32", 1.0)]

    def cond(i, ten, state, history):
        return L.less_than(i, ten)

    def body(i, ten, state, history):
        state["total"] = state["total"] + i     # changes body's copy, not the caller's dict
        history[0] = history[0] * 2.0
        return [L.increment(i), ten, state, history]
    out = L.while_loop(cond, body, [i, ten, state, history])
    assert out[2] is state and out[3] is history
    total, doubled = fluid.Executor(fluid.CPUPlace()).run(
        main, fetch_list=[state["total"], history[0]])
    assert total.item() == sum(range(10))
    np.testing.assert_allclose(doubled, [1024.0, 1024.0])


def test_while_loop_body_must_keep_the_structure(programs):
    x = L.fill_constant([1], "int64", 0)
    with pytest.raises(ValueError, match="structure of loop_vars"):
        L.while_loop(lambda a, b: L.less_than(a, b), lambda a, b: [a],
                     [x, L.fill_constant([1], "int64", 3)])


def test_switch_case_takes_a_uint8_index_as_fluid_casts_it(programs):
    main, _ = programs
    index = L.cast(L.fill_constant([1], "int32", 1), "uint8")
    out = L.switch_case(index, {0: lambda: L.fill_constant([1], "float32", 10.0),
                                1: lambda: L.fill_constant([1], "float32", 20.0)})
    got, = fluid.Executor(fluid.CPUPlace()).run(main, fetch_list=[out])
    assert got.item() == 20.0


def test_asking_for_a_variable_again_with_another_shape_is_a_value_error(programs):
    block = fluid.default_main_program().global_block()
    first = block.create_var(name="w", shape=[784, 100], dtype="float64")
    assert block.create_var(name="w") is first
    with pytest.raises(ValueError, match=r"shape expected \[784, 100\]"):
        block.create_var(name="w", shape=(24, 100))


@pytest.mark.parametrize("shape, dtype", [(None, "float32"), ([], "float32"), ([1], None)])
def test_a_parameter_needs_a_shape_and_a_dtype(programs, shape, dtype):
    with pytest.raises(ValueError):
        fluid.default_main_program().global_block().create_parameter(
            name="p", shape=shape, dtype=dtype)


def test_program_random_seed_is_an_int(programs):
    main, _ = programs
    main.random_seed = 7
    with pytest.raises(ValueError):
        main.random_seed = "seed"
    assert main.random_seed == 7


def test_minimize_returns_the_per_parameter_rate_scale_with_the_update(programs):
    x = fluid.data("x", [None, 3])
    y = L.fc(x, size=1, param_attr=fluid.ParamAttr(learning_rate=1.1), bias_attr=False)
    optimize_ops, _ = fluid.optimizer.SGD(0.1).minimize(L.mean(y))
    assert [op.type for op in optimize_ops] == ["scale", "sgd"]
    assert optimize_ops[0].attr("scale") == pytest.approx(1.1)
    assert optimize_ops[0].attr("op_role") == 16 | 2   # LRSched | Optimize, as in Fluid


def test_optimizers_name_their_accumulators_as_fluid_does():
    assert fluid.optimizer.Momentum._velocity_acc_str == "velocity"
    assert (fluid.optimizer.Adam._moment1_acc_str, fluid.optimizer.Adam._beta2_pow_acc_str) \
        == ("moment1", "beta2_pow_acc")


def test_copy_param_info_from_takes_the_training_attributes(programs):
    main, _ = programs
    L.fc(fluid.data("x", [None, 3]), size=2,
         param_attr=fluid.ParamAttr(name="w", learning_rate=0.5, trainable=False))
    copy = fluid.Program.parse_from_string(main.serialize_to_string())  # desc only
    assert copy.global_block().var("w").optimize_attr["learning_rate"] == 1.0
    copy._copy_param_info_from(main)
    weight = copy.global_block().var("w")
    assert weight.optimize_attr["learning_rate"] == 0.5 and not weight.trainable
    with pytest.raises(TypeError):
        copy._copy_param_info_from("program")


def test_gradients_keep_their_inputs_lod(programs):
    """Paddle's grad ops share X's LoD with X@GRAD: here through sequence_reverse and mul."""
    main, startup = programs
    x = fluid.data("x", [None, 3], lod_level=1)
    x.stop_gradient = False
    reversed_x = L.sequence_reverse(x)
    y = L.mul(reversed_x, L.create_parameter([3, 2], "float32"))
    fluid.append_backward(L.mean(y))
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    feed = fluid.create_lod_tensor(np.arange(15, dtype="float32").reshape(5, 3), [[2, 3]],
                                   fluid.CPUPlace())
    grads = exe.run(main, feed={"x": feed}, return_numpy=False,
                    fetch_list=[x.grad_name, reversed_x.grad_name])
    assert [g.lod() for g in grads] == [[[0, 2, 5]], [[0, 2, 5]]]


def test_append_backward_with_checkpoints_recomputes_between_them(programs):
    main, _ = programs
    x = fluid.data("x", [None, 4])
    hidden = L.fc(x, size=4, act="relu")
    middle = L.fc(hidden, size=4, act="relu")
    loss = L.mean(L.fc(middle, size=1))
    fluid.append_backward(loss, checkpoints=[hidden, middle])
    recomputed = [name for name in main.global_block().vars if ".subprog_" in name]
    assert recomputed, "no forward op was recomputed in the backward pass"


def test_all_attrs_hands_out_sub_blocks_as_blocks_and_clone_keeps_transpiler_marks(programs):
    main, _ = programs
    i = L.fill_constant([1], "int64", 0)
    n = L.fill_constant([1], "int64", 3)
    L.while_loop(lambda i: L.less_than(i, n), lambda i: [L.increment(i)], [i])
    loop = next(op for op in main.global_block().ops if op.type == "while")
    body = loop.all_attrs()["sub_block"]
    assert isinstance(body, fluid.framework.Block) and body is main.block(1)
    assert loop.attr("sub_block") == 1      # attr() keeps the index
    main._is_distributed, main._endpoints = True, ["127.0.0.1:6170"]
    twin = main.clone()
    assert twin._is_distributed and twin._endpoints == ["127.0.0.1:6170"]


def test_an_empty_shape_is_an_assertion_as_fluid_asserts_it(programs):
    """Fluid 1.8 refuses ``shape=[]`` with ``assert``: scripts catch AssertionError, and the
    error stays fluid_nb's typed InvalidArgument."""
    import fluid_nb.paddle as paddle
    for build in (lambda: L.fill_constant([], "float32", 1.0), lambda: L.zeros([], "int32"),
                  lambda: L.randn([]), lambda: paddle.full([], 1.0),
                  lambda: paddle.logsumexp(None)):
        with pytest.raises(AssertionError) as caught:
            build()
        assert isinstance(caught.value, InvalidArgument)


def test_fluid_18_dygraph_classes_are_importable_from_fluid_and_refuse():
    for cls in (fluid.LayerNorm, fluid.NCE, fluid.dygraph.BatchNorm, fluid.dygraph.Pool2D):
        with pytest.raises(Unimplemented, match="imperative"):
            cls()


def test_nd_index_errors_carry_fluids_sentence(programs):
    x = L.data("x", [3, 4, 5], dtype="float32")
    index = L.data("index", [2, 10], dtype="int32")
    with pytest.raises(InvalidArgument, match=r"Input\(Index\)\.shape\[-1\] should be no "
                                              r"greater than Input\(X\)\.rank"):
        L.gather_nd(x, index)
    with pytest.raises(InvalidArgument, match="Updates has wrong shape"):
        L.scatter_nd(L.data("i7", [2, 1], dtype="int32"),
                     L.data("u7", [2, 4, 5, 20], dtype="float32"), [3, 4, 5])
