"""Ops that do the same work on different tensors share one compiled body.

A network repeats its layers: the ops of one layer and the next differ in the tensors they
touch, not in what they do to them. Each op keeps a function of its own (the program graph
links each op to it), and the ops whose functions would read the same line for line, but
for their tensors, call one body that takes the tensors as arguments. The compiler then
optimises each distinct body once. Sharing changes no value: in float64 the compiled step
is the interpreter's to rounding."""
import re

import numpy as np

import fluid_nb as fluid
from fluid_nb.rewriters import native


def _deep_mlp(dtype="float64", depth=4, width=16):
    """``depth`` hidden layers of one size: the same fc, relu and their gradients again and
    again, on the tensors of each layer."""
    x = fluid.layers.data(name="x", shape=[width], dtype=dtype)
    y = fluid.layers.data(name="y", shape=[1], dtype=dtype)
    h = x
    for _ in range(depth):
        h = fluid.layers.fc(input=h, size=width, act="relu")
    predict = fluid.layers.fc(input=h, size=1)
    loss = fluid.layers.mean(fluid.layers.square_error_cost(input=predict, label=y))
    fluid.optimizer.SGD(learning_rate=0.05).minimize(loss)
    return loss


def _programs(build, **kwargs):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        loss = build(**kwargs)
    return main, startup, loss


def _feed(width=16, dtype="float64"):
    rng = np.random.RandomState(0)
    return {"x": rng.uniform(-1, 1, (8, width)).astype(dtype),
            "y": rng.uniform(-1, 1, (8, 1)).astype(dtype)}


def _generated(main, startup, loss):
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    return native.generate(main, feed=_feed(), fetch=[loss], scope=scope)


def _ops_of(main, op_type):
    return [index for index, op in enumerate(main.global_block().ops) if op.type == op_type]


def test_the_relu_of_every_hidden_layer_calls_one_body():
    main, startup, loss = _programs(_deep_mlp)
    source = _generated(main, startup, loss)
    functions = dict(source.functions)
    relus = [functions[index] for index in _ops_of(main, "relu")]
    assert len(relus) == 4
    bodies = {source.shared_bodies[name] for name in relus}
    assert len(bodies) == 1
    body = bodies.pop()
    # one definition, called from each relu's function with that layer's tensors
    assert len(re.findall(rf"static void {body}\(", source.source)) == 1
    calls = [line.strip() for line in source.source.splitlines()
             if line.strip().startswith(f"{body}(")]
    assert len(calls) == 4 and len(set(calls)) == 4
    # the gradients repeat too: relu_grad, the products' and the SGD updates of one size
    grads = {source.shared_bodies.get(functions[i]) for i in _ops_of(main, "relu_grad")}
    assert len(grads) == 1 and None not in grads


def test_ops_of_other_shapes_or_other_aliasing_keep_bodies_of_their_own():
    program = fluid.Program()
    block = program.global_block()
    feed = {"a": np.ones((4, 16), "float32"), "b": np.ones((4, 8), "float32"),
            "c": np.ones((4, 16), "float32")}
    for name, value in feed.items():
        block.create_var(name=name, shape=list(value.shape), dtype="float32")
    for name, shape in (("ra", [4, 16]), ("rb", [4, 8]), ("rc", [4, 16]), ("s1", [4, 16]),
                        ("s2", [4, 16]), ("s3", [4, 16])):
        block.create_var(name=name, shape=shape, dtype="float32")
    block.append_op(type="relu", inputs={"X": "a"}, outputs={"Out": "ra"})
    block.append_op(type="relu", inputs={"X": "b"}, outputs={"Out": "rb"})  # other size
    block.append_op(type="relu", inputs={"X": "c"}, outputs={"Out": "rc"})  # as the first
    block.append_op(type="elementwise_add", inputs={"X": "a", "Y": "c"}, outputs={"Out": "s1"})
    block.append_op(type="elementwise_add", inputs={"X": "c", "Y": "a"}, outputs={"Out": "s2"})
    block.append_op(type="elementwise_add", inputs={"X": "a", "Y": "a"}, outputs={"Out": "s3"})
    source = native.generate(program, feed=feed, fetch=["ra", "rb", "rc", "s1", "s2", "s3"],
                             scope=fluid.Scope())
    functions = dict(source.functions)
    shared = source.shared_bodies
    assert shared[functions[0]] == shared[functions[2]]
    assert functions[1] not in shared
    # a + c and c + a are one body on two orders of arguments; a + a reads one tensor twice
    assert shared[functions[3]] == shared[functions[4]]
    assert functions[5] not in shared
    compiled = native.compile(program, feed, ["ra", "rb", "rc", "s1", "s2", "s3"],
                              scope=fluid.Scope())
    got = fluid.Executor(fluid.CPUPlace()).run(
        compiled, feed=feed, fetch_list=["ra", "rb", "rc", "s1", "s2", "s3"],
        scope=fluid.Scope())
    for value in got[:3]:
        np.testing.assert_array_equal(value, 1.0)
    for value in got[3:]:
        np.testing.assert_array_equal(value, 2.0)


def test_an_op_that_calls_a_shared_body_shows_its_function_and_the_body():
    main, startup, loss = _programs(_deep_mlp)
    source = _generated(main, startup, loss)
    index = _ops_of(main, "relu")[1]
    found = source.function_of(0, index)
    name = found["function"]
    body = source.shared_bodies[name]
    assert found["source"].startswith(f"static void {name}(void** v) {{")
    assert f"\n  {body}(static_cast<double*>(v[" in found["source"]
    assert re.search(rf"\n\n__attribute__\(\(noinline\)\) static void {body}\(double\* a0, "
                     rf"double\* a1\) {{\n  map1\(a0, a1, ", found["source"])
    assert found["source"].rstrip().endswith("}")


def test_a_deep_network_with_shared_bodies_trains_as_the_interpreter_does():
    main, startup, loss = _programs(_deep_mlp)
    feed = _feed()
    exe = fluid.Executor(fluid.CPUPlace())
    interpreted, compiled = fluid.Scope(), fluid.Scope()
    exe.run(startup, scope=interpreted)
    exe.run(startup, scope=compiled)
    program = native.compile(main, feed, [loss], scope=compiled)
    assert program.source.fallbacks == [] and program.source.shared_bodies
    want = [float(exe.run(main, feed=feed, fetch_list=[loss], scope=interpreted)[0][0])
            for _ in range(20)]
    got = [float(exe.run(program, feed=feed, fetch_list=[loss], scope=compiled)[0][0])
           for _ in range(20)]
    assert want[-1] < want[0]  # it trained: each layer's update reached its own parameters
    np.testing.assert_allclose(got, want, rtol=1e-10)
    for param in main.global_block().all_parameters():
        np.testing.assert_allclose(np.array(compiled.find_var(param.name).get_tensor()),
                                   np.array(interpreted.find_var(param.name).get_tensor()),
                                   rtol=1e-10, atol=1e-13, err_msg=param.name)


def test_a_program_without_repeats_shares_nothing():
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="x", shape=[3], dtype="float32")
    block.create_var(name="y", shape=[3], dtype="float32")
    block.create_var(name="z", shape=[3], dtype="float32")
    block.append_op(type="relu", inputs={"X": "x"}, outputs={"Out": "y"})
    block.append_op(type="tanh", inputs={"X": "y"}, outputs={"Out": "z"})
    source = native.generate(program, feed={"x": np.ones(3, "float32")}, fetch=["z"],
                             scope=fluid.Scope())
    assert source.shared_bodies == {}
    assert "_body_" not in source.source
