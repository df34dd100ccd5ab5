"""Whole programs compiled to native code: training steps give the interpreter's losses
over 50 steps, a saved inference model compiles and predicts what the interpreter does,
the seeds' example generates the code the seeds show, and what cannot compile says why."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.rewriters import native
from fluid_nb.errors import InvalidArgument, PreconditionNotMet, Unimplemented
from fluid_nb.widgets import ProgramView

from ..trajectories import assert_float32_losses_agree, assert_float32_runs_agree


def fit_a_line(dtype="float32"):
    x = fluid.layers.data(name="x", shape=[13], dtype=dtype)
    y = fluid.layers.data(name="y", shape=[1], dtype=dtype)
    predict = fluid.layers.fc(input=x, size=1)
    loss = fluid.layers.mean(fluid.layers.square_error_cost(input=predict, label=y))
    fluid.optimizer.SGD(learning_rate=0.01).minimize(loss)
    return loss


def mlp(dtype="float32"):
    img = fluid.layers.data(name="img", shape=[784], dtype=dtype)
    label = fluid.layers.data(name="label", shape=[1], dtype="int64")
    h = fluid.layers.fc(input=img, size=200, act="relu")
    h = fluid.layers.fc(input=h, size=200, act="relu")
    logits = fluid.layers.fc(input=h, size=10)
    loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits, label))
    fluid.optimizer.Adam(learning_rate=0.001).minimize(loss)
    return loss


# what bounds the float32 drift of each: the longest sum in a step (fit_a_line's 20-row
# batch mean; the MLP's 784-feature products) and how far one update may move one element
# (SGD moves by the gradient, inside the drift; Adam by up to its learning rate)
DRIFT = {fit_a_line: dict(reduction=20), mlp: dict(reduction=784, largest_step=0.001)}


def _programs(build, dtype="float32"):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        loss = build(dtype=dtype)
    return main, startup, loss


def _feeds(build, rng, dtype="float32"):
    if build is fit_a_line:
        return {"x": rng.rand(20, 13).astype(dtype), "y": rng.rand(20, 1).astype(dtype)}
    return {"img": rng.uniform(-1, 1, (64, 784)).astype(dtype),
            "label": rng.randint(0, 10, (64, 1)).astype("int64")}


def _train_side_by_side(build, dtype, steps):
    """``steps`` training steps of one program from one start, interpreted and compiled:
    the losses of each and the scopes they leave."""
    main, startup, loss = _programs(build, dtype)
    feed = _feeds(build, np.random.RandomState(0), dtype)
    exe = fluid.Executor(fluid.CPUPlace())
    interpreted, compiled = fluid.Scope(), fluid.Scope()
    exe.run(startup, scope=interpreted)
    exe.run(startup, scope=compiled)
    program = native.compile(main, feed, [loss], scope=compiled)
    assert program.source.fallbacks == []
    want = [float(exe.run(main, feed=feed, fetch_list=[loss], scope=interpreted)[0][0])
            for _ in range(steps)]
    got = [float(exe.run(program, feed=feed, fetch_list=[loss], scope=compiled)[0][0])
           for _ in range(steps)]
    assert want[-1] < want[0] / 2  # it trained: the comparison means something
    params = main.global_block().all_parameters()
    # the parameters were updated in place in the scope: the interpreter reads them there
    return want, got, [(p.name, np.array(compiled.find_var(p.name).get_tensor()),
                        np.array(interpreted.find_var(p.name).get_tensor())) for p in params]


@pytest.mark.parametrize("build", [fit_a_line, mlp], ids=["W1_fit_a_line_sgd", "W2_mlp_adam"])
def test_a_compiled_float64_training_step_is_the_interpreters_for_50_steps(build):
    """In float64 the compiled program and the interpreter do the same arithmetic up to
    summation order, so 50 steps agree to rounding (about 1e-13 here)."""
    want, got, params = _train_side_by_side(build, "float64", 50)
    np.testing.assert_allclose(got, want, rtol=1e-9)
    for name, compiled, interpreted in params:
        assert compiled.dtype == np.float64
        np.testing.assert_allclose(compiled, interpreted, rtol=1e-9, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("build", [fit_a_line, mlp], ids=["W1_fit_a_line_sgd", "W2_mlp_adam"])
def test_a_compiled_float32_training_step_follows_the_interpreter_for_50_steps(build):
    """In float32 the two drift apart by rounding, each step through different BLAS kernels:
    the losses and the parameters stay within the drift that arithmetic allows (see
    tests/trajectories.py), whatever kernels this machine's BLAS picks."""
    want, got, params = _train_side_by_side(build, "float32", 50)
    assert_float32_losses_agree(got, want, DRIFT[build]["reduction"])
    for name, compiled, interpreted in params:
        assert_float32_runs_agree(compiled, interpreted, 50, name=name, **DRIFT[build])


@pytest.mark.parametrize("nesterov", [False, True], ids=["momentum", "nesterov"])
def test_a_compiled_momentum_step_is_the_interpreters(nesterov):
    """Momentum compiles (one loop over param, grad and velocity) and, in float64, 20 steps
    give the interpreter's losses and parameters to rounding."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[13], dtype="float64")
        y = fluid.layers.data(name="y", shape=[1], dtype="float64")
        predict = fluid.layers.fc(input=fluid.layers.fc(input=x, size=8, act="tanh"), size=1)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(input=predict, label=y))
        fluid.optimizer.Momentum(learning_rate=0.05, momentum=0.9, use_nesterov=nesterov,
                                 regularization=fluid.regularizer.L2Decay(1e-3)
                                 ).minimize(loss)
    feed = _feeds(fit_a_line, np.random.RandomState(2), "float64")
    exe = fluid.Executor(fluid.CPUPlace())
    interpreted, compiled = fluid.Scope(), fluid.Scope()
    exe.run(startup, scope=interpreted)
    exe.run(startup, scope=compiled)
    program = native.compile(main, feed, [loss], scope=compiled)
    assert program.source.fallbacks == []
    assert "momentum(" in program.source.source
    want = [float(exe.run(main, feed=feed, fetch_list=[loss], scope=interpreted)[0][0])
            for _ in range(20)]
    got = [float(exe.run(program, feed=feed, fetch_list=[loss], scope=compiled)[0][0])
           for _ in range(20)]
    assert want[-1] < want[0] / 2
    np.testing.assert_allclose(got, want, rtol=1e-9)
    for p in main.global_block().all_parameters():
        np.testing.assert_allclose(np.array(compiled.find_var(p.name).get_tensor()),
                                   np.array(interpreted.find_var(p.name).get_tensor()),
                                   rtol=1e-9, atol=1e-12, err_msg=p.name)


def test_the_interpreter_and_the_compiled_program_take_turns_on_one_scope():
    main, startup, loss = _programs(fit_a_line)
    feed = _feeds(fit_a_line, np.random.RandomState(1))
    exe, scope, reference = fluid.Executor(fluid.CPUPlace()), fluid.Scope(), fluid.Scope()
    exe.run(startup, scope=scope)
    exe.run(startup, scope=reference)
    program = native.compile(main, feed, [loss], scope=scope)
    got = [exe.run(program if k % 2 else main, feed=feed, fetch_list=[loss], scope=scope)[0]
           for k in range(6)]
    want = [exe.run(main, feed=feed, fetch_list=[loss], scope=reference)[0] for _ in range(6)]
    np.testing.assert_allclose(np.concatenate(got), np.concatenate(want), rtol=1e-5)


def test_a_saved_inference_model_compiles_and_predicts_as_the_interpreter(tmp_path):
    main, startup, loss = _programs(fit_a_line)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    predict = main.global_block().ops[1].outputs["Out"][0]  # fc's output after the bias
    with fluid.scope_guard(scope):
        fluid.io.save_inference_model(str(tmp_path), ["x"], [main.global_block().var(predict)],
                                      exe, main_program=main)
        program, feeds, fetches = fluid.io.load_inference_model(str(tmp_path), exe)
    x = np.random.RandomState(2).rand(7, 13).astype("float32")
    with fluid.scope_guard(scope):
        want, = exe.run(program, feed={feeds[0]: x}, fetch_list=fetches)
        compiled = native.compile(program, {feeds[0]: x}, fetches, scope=scope)
        got, = exe.run(compiled, feed={feeds[0]: x}, fetch_list=fetches)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    # another batch size: another specialisation, built on demand
    x5 = x[:5]
    with fluid.scope_guard(scope):
        np.testing.assert_allclose(exe.run(compiled, feed={feeds[0]: x5}, fetch_list=fetches)[0],
                                   want[:5], rtol=1e-5)
    assert len(compiled._built) == 2


def _recognize_digits(kind):
    img = fluid.layers.data(name="img", shape=[1, 28, 28], dtype="float32")
    if kind == "mlp":
        hidden = fluid.layers.fc(input=img, size=200, act="tanh")
        hidden = fluid.layers.fc(input=hidden, size=200, act="tanh")
    else:  # the book's LeNet: conv-pool, batch norm, conv-pool
        hidden = fluid.nets.simple_img_conv_pool(input=img, filter_size=5, num_filters=20,
                                                 pool_size=2, pool_stride=2, act="relu")
        hidden = fluid.layers.batch_norm(hidden)
        hidden = fluid.nets.simple_img_conv_pool(input=hidden, filter_size=5, num_filters=50,
                                                 pool_size=2, pool_stride=2, act="relu")
    return fluid.layers.fc(input=hidden, size=10, act="softmax")


@pytest.mark.parametrize("kind", ["mlp", "conv"])
def test_the_books_recognize_digits_inference_models_compile_fully(kind, tmp_path):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 4
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        prediction = _recognize_digits(kind)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    images = np.random.RandomState(3).rand(16, 1, 28, 28).astype("float32")
    with fluid.scope_guard(scope):
        fluid.io.save_inference_model(str(tmp_path), ["img"], [prediction], exe,
                                      main_program=main)
        program, feeds, fetches = fluid.io.load_inference_model(str(tmp_path), exe)
        compiled = native.compile(program, {"img": images}, fetches)
        assert compiled.source.fallbacks == []
        want, = exe.run(program, feed={"img": images}, fetch_list=fetches)
        got, = exe.run(compiled, feed={"img": images}, fetch_list=fetches)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    assert (got.argmax(axis=1) == want.argmax(axis=1)).all()


SEEDS_EXAMPLE = '''\
// op 0: assign(X=w_init) -> Out=W
static void fluid_cpp_assign_0(void** v) {
  float* v_w_init = static_cast<float*>(v[0]);
  float* v_W = static_cast<float*>(v[1]);
  copy(v_w_init, v_W, 6);
}

// op 1: mul(X=X, Y=W) -> Out=Y
static void fluid_cpp_mul_1(void** v) {
  float* v_X = static_cast<float*>(v[2]);
  float* v_W = static_cast<float*>(v[1]);
  float* v_Y = static_cast<float*>(v[3]);
  mul(v_X, v_W, v_Y, 4, 3, 2);
}

extern "C" void fluid_run(void** v) {
  fluid_cpp_assign_0(v);
  fluid_cpp_mul_1(v);
}
'''


def test_the_seeds_example_generates_the_seeds_listing():
    """The seeds' program: X read (here: fed), W assigned, Y = mult(X, W). Each op becomes a
    function that runs its kernel, and the entry calls them in order."""
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="X", shape=[4, 3], dtype="float32")
    block.create_var(name="w_init", shape=[3, 2], dtype="float32", persistable=True)
    block.create_var(name="W", shape=[3, 2], dtype="float32")
    block.create_var(name="Y", shape=[4, 2], dtype="float32")
    block.append_op(type="assign", inputs={"X": ["w_init"]}, outputs={"Out": ["W"]})
    block.append_op(type="mul", inputs={"X": ["X"], "Y": ["W"]}, outputs={"Out": ["Y"]})
    scope = fluid.Scope()
    scope.var("w_init").get_tensor().set(np.arange(6, dtype="float32").reshape(3, 2))
    x = np.ones((4, 3), "float32")
    source = native.generate(program, feed={"X": x}, fetch=["Y"], scope=scope)
    assert source.source.endswith(SEEDS_EXAMPLE), source.source
    got, = fluid.Executor(fluid.CPUPlace()).run(
        native.compile(program, {"X": x}, ["Y"], scope=scope), feed={"X": x},
        fetch_list=["Y"], scope=scope)
    np.testing.assert_array_equal(got, x @ np.arange(6, dtype="float32").reshape(3, 2))


def test_ops_without_native_code_run_in_the_interpreter_between_compiled_ones():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[4], dtype="float32")
        h = fluid.layers.fc(input=x, size=3, act="relu")
        y = fluid.layers.fc(input=fluid.layers.cumsum(h, axis=1), size=2)
        loss = fluid.layers.mean(y)
        fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    interpreted, compiled = fluid.Scope(), fluid.Scope()
    exe.run(startup, scope=interpreted)
    exe.run(startup, scope=compiled)
    feed = {"x": np.random.RandomState(0).rand(5, 4).astype("float32")}
    source = native.generate(main, feed=feed, fetch=[loss], scope=compiled)
    fell_back = [(i, t) for i, t, _ in source.fallbacks]
    assert [t for _, t in fell_back] == ["cumsum", "cumsum"]  # the op and its gradient
    assert all(why == "no emitter for this op type" for *_, why in source.fallbacks)
    kinds = [kind for kind, _, _ in source.segments]
    assert kinds == ["native", "interpreter", "native", "interpreter", "native"]
    assert f"// ops {fell_back[0][0]}-{fell_back[0][0]} run in the interpreter here" in \
        source.source
    program = native.compile(main, feed, [loss], scope=compiled)
    assert "<td>cumsum</td><td>interpreter: no emitter for this op type</td>" in \
        program._repr_html_()
    want = [exe.run(main, feed=feed, fetch_list=[loss], scope=interpreted)[0] for _ in range(5)]
    got = [exe.run(program, feed=feed, fetch_list=[loss], scope=compiled)[0] for _ in range(5)]
    np.testing.assert_allclose(np.concatenate(got), np.concatenate(want), rtol=1e-5)


def test_many_interpreted_runs_keep_their_plans_from_step_to_step():
    """A network whose ops fall back in many places (a ResNet's batch norms, a
    Transformer's layer norms) runs dozens of interpreted runs a step, more than the plans
    a scope keeps one by one: each keeps its plan all the same, so a step builds none."""
    from fluid_nb.exec.binding import stats
    from fluid_nb.exec.executor import SCOPE_PLANS
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        h = fluid.layers.data(name="x", shape=[4], dtype="float32")
        for _ in range(SCOPE_PLANS + 4):  # a compiled relu, then a cumsum that falls back
            h = fluid.layers.cumsum(fluid.layers.relu(h), axis=1)
        loss = fluid.layers.mean(h)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": np.random.RandomState(0).rand(5, 4).astype("float32")}
    program = native.compile(main, feed, [loss], scope=scope)
    runs = [kind for kind, _, _ in program.source.segments].count("interpreter")
    assert runs == SCOPE_PLANS + 4
    want = exe.run(main, feed=feed, fetch_list=[loss], scope=fluid.Scope())[0]
    first = exe.run(program, feed=feed, fetch_list=[loss], scope=scope)[0]
    built = stats["plans_built"]
    again = [exe.run(program, feed=feed, fetch_list=[loss], scope=scope)[0] for _ in range(3)]
    assert stats["plans_built"] == built
    for got in [first] + again:
        np.testing.assert_allclose(got, want, rtol=1e-6)
    # another scope gets plans of its own, and the first scope's stay
    other = fluid.Scope()
    exe.run(program, feed=feed, fetch_list=[loss], scope=other)
    assert stats["plans_built"] == built + runs
    exe.run(program, feed=feed, fetch_list=[loss], scope=scope)
    assert stats["plans_built"] == built + runs


def test_compiled_ops_read_the_array_an_interpreted_run_puts_in_a_persistables_place():
    """An op that falls back may give a persistable a new array (uniform_random draws one):
    the compiled ops after it read that array, not the one before it."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[4], dtype="float32", append_batch_size=False)
        noise = fluid.layers.create_global_var([4], 0.0, "float32", persistable=True,
                                               name="noise")
        doubled = fluid.layers.scale(x, 2.0)
        main.global_block().append_op(type="uniform_random", outputs={"Out": [noise]},
                                      attrs={"shape": [4], "min": -1.0, "max": 1.0,
                                             "seed": 0, "dtype": noise.dtype})
        out = fluid.layers.elementwise_add(doubled, noise)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    x = np.arange(4, dtype="float32")
    program = native.compile(main, {"x": x}, [out], scope=scope)
    assert [t for _, t, _ in program.source.fallbacks] == ["uniform_random"]
    drawn = []
    for _ in range(3):
        got, = exe.run(program, feed={"x": x}, fetch_list=[out], scope=scope)
        drawn.append(np.array(scope.find_var("noise").get_tensor()))
        np.testing.assert_array_equal(got, 2 * x + drawn[-1])
    assert not np.array_equal(drawn[0], drawn[1])  # a new draw each step


def test_a_standalone_program_cannot_fall_back():
    from fluid_nb.rewriters.native.standalone import standalone_source
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[4], dtype="float32")
        y = fluid.layers.fc(input=fluid.layers.cumsum(x), size=2)
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    with pytest.raises(InvalidArgument, match="op 0 cumsum: no emitter"):
        standalone_source(main, {"x": np.ones((3, 4), "float32")}, [y], scope)


def test_a_missing_compiler_is_a_typed_error(monkeypatch, tmp_path):
    monkeypatch.setenv("CXX", "no-such-compiler")
    monkeypatch.setenv("FLUID_NB_CACHE", str(tmp_path))
    main, startup, loss = _programs(fit_a_line)
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    with pytest.raises(PreconditionNotMet, match="a C\\+\\+ compiler expected"):
        native.compile(main, _feeds(fit_a_line, np.random.RandomState(0)), [loss], scope=scope)
    assert list(tmp_path.iterdir()) == []  # nothing half-built left behind


def test_builds_are_cached_by_their_source(monkeypatch, tmp_path):
    monkeypatch.setenv("FLUID_NB_CACHE", str(tmp_path))
    main, startup, loss = _programs(fit_a_line)
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    feed = _feeds(fit_a_line, np.random.RandomState(0))
    first = native.compile(main, feed, [loss], scope=scope)
    again = native.compile(main, feed, [loss], scope=scope)
    spec_a, spec_b = (next(iter(p._built.values())) for p in (first, again))
    assert (spec_a.cached, spec_b.cached) == (False, True)
    assert spec_a.library == spec_b.library
    # the library and the runtime library it links, each with the SHA-256 of its bytes it
    # is checked against before it is loaded
    runtime, = (tmp_path / "native").glob("fluid_runtime_*.so")
    assert sorted(p.name for p in (tmp_path / "native").iterdir()) == sorted(
        [spec_a.library.name, spec_a.library.name + ".sha256", runtime.name,
         runtime.name + ".sha256"])


def test_bad_arguments_are_named():
    with pytest.raises(InvalidArgument, match="compile: program expected a Program"):
        native.compile("main", {}, [])
    with pytest.raises(Unimplemented, match="target expected 'cpp'"):
        native.generate(fluid.Program(), target="fortran")


def test_a_compiled_program_shows_its_ops_linked_to_their_functions():
    main, startup, loss = _programs(fit_a_line)
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    compiled = native.compile(main, _feeds(fit_a_line, np.random.RandomState(0)), [loss],
                              scope=scope)
    page = compiled._repr_html_()
    assert "13 ops compiled (cpp), 0 in the interpreter" in page
    for _, function in compiled.source.functions:
        assert f"href='#fluid-fn-{function}' id='fluid-op-{function}'" in page  # op -> code
        assert f"<span id='fluid-fn-{function}'><a href='#fluid-op-{function}'>" in page
    assert "<td>mul_grad</td>" in page and "&lt;" not in page.split("<pre>")[0]


@pytest.mark.parametrize("model", ["mlp", "linreg", "cnn"])
@pytest.mark.parametrize("layout", ["separate", "combined"])
def test_paddles_own_inference_models_compile_and_give_paddles_outputs(model, layout):
    """The models real PaddlePaddle 2.6.2 saved (tests/fixtures/paddle/inference), compiled
    whole, give the outputs Paddle computed."""
    import json
    import pathlib
    from fluid_nb.cli import load_model_for_run
    root = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "paddle" / "inference"
    meta = json.loads((root / model / "meta.json").read_text())
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    path = root / model / layout
    program, feeds, fetches = load_model_for_run(
        str(path if layout == "separate" else next(path.glob("*.pdmodel"))), exe, scope)
    assert feeds == meta["feed_names"]
    x = np.load(root / model / "input.npy")
    compiled = native.compile(program, {feeds[0]: x}, fetches, scope=scope)
    assert compiled.source.fallbacks == []
    got, = exe.run(compiled, feed={feeds[0]: x}, fetch_list=fetches, scope=scope)
    np.testing.assert_allclose(got, np.load(root / model / "expected.npy"), rtol=1e-5,
                               atol=1e-6)


def image_classification_inference(net, batch=2):
    """The book's image_classification network (``resnet``: ResNet-20 for CIFAR-10,
    ``vgg``: VGG-16 with batch norm and dropout), saved as an inference model and loaded
    back: (program, scope, feed, fetch list)."""
    import importlib.util
    import pathlib
    import tempfile
    path = pathlib.Path(__file__).resolve().parents[2] / "examples" / "book" / \
        "image_classification.py"
    spec = importlib.util.spec_from_file_location("book_image_classification", path)
    book = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(book)
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 2
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        img = fluid.layers.data(name="pixel", shape=[3, 32, 32], dtype="float32")
        prediction = book.resnet_cifar10(img, 20) if net == "resnet" else book.vgg_bn_drop(img)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    with tempfile.TemporaryDirectory() as folder, fluid.scope_guard(scope):
        fluid.io.save_inference_model(folder, ["pixel"], [prediction], exe, main_program=main)
        program, _, fetches = fluid.io.load_inference_model(folder, exe)
    images = np.random.RandomState(0).rand(batch, 3, 32, 32).astype("float32")
    return program, scope, {"pixel": images}, fetches


@pytest.mark.parametrize("net", ["resnet", "vgg"])
def test_the_books_image_classification_models_compile_fully(net):
    program, scope, feed, fetches = image_classification_inference(net)
    exe = fluid.Executor(fluid.CPUPlace())
    compiled = native.compile(program, feed, fetches, scope=scope)
    assert compiled.source.fallbacks == []
    want, = exe.run(program, feed=feed, fetch_list=fetches, scope=scope)
    got, = exe.run(compiled, feed=feed, fetch_list=fetches, scope=scope)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_feeds_go_through_the_executors_checks():
    """A float64 feed of a float32 variable is cast as the executor casts it; a value that
    is no array of numbers, or one a cast would change, is refused with its name."""
    main, startup, loss = _programs(fit_a_line)
    scope, reference = fluid.Scope(), fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    exe.run(startup, scope=reference)
    feed = _feeds(fit_a_line, np.random.RandomState(0))
    compiled = native.compile(main, feed, [loss], scope=scope)
    wide = {name: value.astype("float64") for name, value in feed.items()}
    got, = exe.run(compiled, feed=wide, fetch_list=[loss], scope=scope)
    want, = exe.run(main, feed=wide, fetch_list=[loss], scope=reference)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert len(compiled._built) == 1  # the same float32 build
    with pytest.raises(InvalidArgument, match="feed 'x'"):
        exe.run(compiled, feed=dict(feed, x="twenty rows"), fetch_list=[loss], scope=scope)
    with pytest.raises(InvalidArgument, match="feed 'y': dtype expected float32"):
        exe.run(compiled, feed=dict(feed, y=feed["y"].astype("complex64")), fetch_list=[loss],
                scope=scope)


def dynamic_rnn(hidden=16, width=8, dtype="float32"):
    """W3 at a small size: a tanh DynamicRNN over a LoD batch, the mean of each sequence's
    last state, trained by SGD on its three parameters."""
    x = fluid.layers.data(name="x", shape=[width], dtype=dtype, lod_level=1)
    rnn = fluid.layers.DynamicRNN()
    with rnn.block():
        step = rnn.step_input(x)
        prev = rnn.memory(shape=[hidden], value=0.0)
        h = fluid.layers.fc(input=[step, prev], size=hidden, act="tanh",
                            param_attr=[fluid.ParamAttr(name="w"), fluid.ParamAttr(name="u")],
                            bias_attr=fluid.ParamAttr(name="b"))
        rnn.update_memory(prev, h)
        rnn.output(h)
    loss = fluid.layers.mean(fluid.layers.sequence_last_step(rnn()))
    fluid.optimizer.SGD(learning_rate=0.5).minimize(loss)
    return loss


def _lod_batches(count, width=8, seed=0):
    rng = np.random.RandomState(seed)
    batches = []
    for _ in range(count):
        lengths = rng.randint(1, 10, rng.randint(3, 9)).tolist()
        data = rng.uniform(-1, 1, (sum(lengths), width)).astype("float32")
        batches.append({"x": fluid.create_lod_tensor(data, [lengths], fluid.CPUPlace())})
    return batches


def test_a_compiled_dynamic_rnn_trains_as_the_interpreter_over_batches_of_any_lod():
    """W3 forward, backward and SGD compile whole (while, while_grad, the tensor arrays and
    LoD included) into one build, which follows the interpreter's losses for 50 steps over
    batches whose sequence count, lengths and trip count change every step."""
    main, startup, loss = _programs(dynamic_rnn)
    exe = fluid.Executor(fluid.CPUPlace())
    interpreted, compiled = fluid.Scope(), fluid.Scope()
    exe.run(startup, scope=interpreted)
    exe.run(startup, scope=compiled)
    batches = _lod_batches(5)
    program = native.compile(main, batches[0], [loss], scope=compiled)
    assert program.source.fallbacks == [] and program.source.dynamic
    assert {"while", "while_grad", "sgd"} <= set(program.source.op_types.values())
    want = [float(exe.run(main, feed=batches[k % 5], fetch_list=[loss], scope=interpreted)[0][0])
            for k in range(50)]
    got = [float(exe.run(program, feed=batches[k % 5], fetch_list=[loss], scope=compiled)[0][0])
           for k in range(50)]
    assert want[-1] < want[0]
    # float32 through different kernels: within the drift of 50 steps of sums over the
    # step's input and state (8 + 16 terms) and over the batch's rows (tests/trajectories.py)
    reduction = 8 + 16 + sum(len(b["x"].recursive_sequence_lengths()[0]) for b in batches)
    assert_float32_losses_agree(got, want, reduction)
    assert len(program._built) == 1  # one build for every LoD
    for name in ("w", "u", "b"):
        assert_float32_runs_agree(np.array(compiled.find_var(name).get_tensor()),
                                  np.array(interpreted.find_var(name).get_tensor()), 50,
                                  reduction, name=name)


def test_a_compiled_dynamic_program_checks_its_feeds():
    main, startup, loss = _programs(dynamic_rnn)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    batch = _lod_batches(1)[0]
    program = native.compile(main, batch, [loss], scope=scope)
    data = np.asarray(batch["x"])
    lod = batch["x"].lod()
    with pytest.raises(InvalidArgument, match="feed 'x': shape expected \\[-1, 8\\]"):
        exe.run(program, feed={"x": (np.ones((data.shape[0], 9), "float32"), lod)},
                fetch_list=[loss], scope=scope)
    with pytest.raises(InvalidArgument, match="feed 'x'.*dtype expected float32"):
        exe.run(program, feed={"x": (data.astype("complex64"), lod)}, fetch_list=[loss],
                scope=scope)
    # a batch without LoD reaches the rank table, which says what it wanted
    with pytest.raises(InvalidArgument, match="lod_rank_table \\(block 0, op 1\\): attribute "
                                              "'level' expected in \\[0, 0\\)"):
        exe.run(program, feed={"x": data}, fetch_list=[loss], scope=scope)
    with pytest.raises(fluid.errors.NotFound, match="feed expected a value for 'x'"):
        exe.run(program, feed={}, fetch_list=[loss], scope=scope)
    # float64 data is cast as the executor casts it, by the same build
    reference = fluid.Scope()
    exe.run(startup, scope=reference)
    for name in ("w", "u", "b"):
        reference.var(name).get_tensor().set(np.array(scope.find_var(name).get_tensor()),
                                             fluid.CPUPlace())
    wide = {"x": (data.astype("float64"), lod)}
    np.testing.assert_allclose(exe.run(program, feed=wide, fetch_list=[loss], scope=scope)[0],
                               exe.run(main, feed=wide, fetch_list=[loss], scope=reference)[0],
                               rtol=1e-5)
    assert len(program._built) == 1


def test_a_compiled_loop_shows_its_sub_blocks_ops_and_what_it_left_out():
    main, startup, loss = _programs(dynamic_rnn)
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    source = native.compile(main, _lod_batches(1)[0], [loss], scope=scope).source
    page = source._repr_html_()
    body_mul = dict(source.functions)[(1, 3)]  # the body's first product, in block 1
    assert body_mul == "fluid_cpp_mul_1_3"
    assert f"<td>1.3</td><td>mul</td><td><a href='#fluid-fn-{body_mul}'" in page
    assert f"<span id='fluid-fn-{body_mul}'>" in page
    # gradients read by no one are not computed: the memory's boot row's (its read), and the
    # loop's input array's (the step's write, the first row's zeros and write, the sum); their
    # ops are left out, and the page says why
    assert dict(source.dropped) == {19: "read_from_array", 20: "fill_zeros_like",
                                    21: "write_to_array", 22: "sum",
                                    (2, 12): "write_to_array"}
    assert "left out: nothing reads its outputs" in page
    assert "struct Block1Step {" in source.source and "while (condition(" in source.source


def test_a_standalone_program_needs_dense_feeds():
    from fluid_nb.rewriters.native.standalone import standalone_source
    main, startup, loss = _programs(dynamic_rnn)
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    with pytest.raises(Unimplemented, match="a standalone program: program expected one "
                                            "without LoD or sub-blocks"):
        standalone_source(main, _lod_batches(1)[0], [loss], scope)


def _op_id(view, block, op_type):
    return next(op["id"] for op in view._model["ops"]
                if op["type"] == op_type and op["block"] == f"b{block}")


def test_the_program_graph_of_a_compiled_program_gives_each_op_its_function():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[4], dtype="float32")
        y = fluid.layers.fc(input=fluid.layers.cumsum(x, axis=1), size=2)
        loss = fluid.layers.mean(y)
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    feed = {"x": np.random.RandomState(0).rand(5, 4).astype("float32")}
    compiled = native.compile(main, feed, [loss], scope=scope)
    view = ProgramView(compiled)
    assert view.title == "compiled (cpp)"
    view.selected = _op_id(view, 0, "mul")
    found = view._details["native"]
    assert found["function"].startswith("fluid_cpp_mul_")
    assert found["source"].startswith(f"static void {found['function']}(")
    assert found["source"].rstrip().endswith("}") and "mul(" in found["source"]
    view.selected = _op_id(view, 0, "cumsum")
    assert view._details["native"] == {
        "reason": "runs in the interpreter: no emitter for this op type"}


def test_the_graph_of_a_compiled_loop_gives_its_body_ops_their_functions():
    main, startup, loss = _programs(dynamic_rnn)
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    compiled = native.compile(main, _lod_batches(1)[0], [loss], scope=scope)
    view = ProgramView(compiled, title="W3")
    view.selected = _op_id(view, 1, "mul")
    assert view._details["native"]["function"] == "fluid_cpp_mul_1_3"
    assert "fluid_cpp_mul_1_3(" in view._details["native"]["source"]


def test_a_program_not_built_has_no_view():
    main, _, loss = _programs(fit_a_line)
    with pytest.raises(PreconditionNotMet, match="ProgramView: the compiled program expected "
                                                 "built"):
        ProgramView(native.NativeProgram(main, [loss.name]))
