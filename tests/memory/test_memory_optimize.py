"""fluid.memory_optimize and fluid.release_memory: buffer reuse by renaming and delete_var
ops. Results are bit-identical with and without them (training programs, a CNN, loops and
seeded random programs), a buffer is never reused while its variable is live, and what must
keep its name does; the transformed programs verify and round-trip through their bytes."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb import layers
from fluid_nb.errors import InvalidArgument, InvalidType
from fluid_nb.framework.attrs import AttrType
from fluid_nb.api.layers.rnn_layers import DynamicRNN
from fluid_nb.rewriters.memory_optimize import Reuse
from fluid_nb.framework.codec import decode_program, encode_program

TRANSFORMS = {
    "level0": lambda p: fluid.memory_optimize(p),
    "level1": lambda p: fluid.memory_optimize(p, level=1),
    "level1_grads": lambda p: fluid.memory_optimize(p, level=1, skip_grads=False),
    "release": lambda p: fluid.release_memory(p),
    "level1_release": lambda p: (fluid.memory_optimize(p, level=1), fluid.release_memory(p)),
}


# --- helpers -----------------------------------------------------------------------------
def check_valid(program, original=None):
    """The program verifies, and so does its decoded bytes, which encode back the same.
    (A DynamicRNN program decoded from bytes fails verify before any transform, on its rank
    table's shape: with ``original``, the decoded twin must fail exactly as the
    untransformed program's does.)"""
    fluid.verify(program)
    data = encode_program(program)
    twin = decode_program(data)
    assert encode_program(twin) == data
    try:
        fluid.verify(twin)
    except InvalidArgument as exc:
        if original is None:
            raise
        with pytest.raises(InvalidArgument) as before:
            fluid.verify(decode_program(encode_program(original)))
        assert str(exc) == str(before.value)
    return twin


def train(build, feeds, transform=None, fetch_names=None):
    """(fetched values per step, persistable values at the end) of running ``build()``'s
    program over ``feeds`` after ``transform``."""
    main, startup, fetch = build()
    if transform is not None:
        transform(main)
        check_valid(main, build()[0])
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    steps = [exe.run(main, feed=feed, fetch_list=fetch, scope=scope) for feed in feeds]
    params = {v.name: np.array(scope.find_var(v.name).value.array)
              for v in main.list_vars() if v.persistable and scope.find_var(v.name) is not None
              and isinstance(scope.find_var(v.name).value, fluid.LoDTensor)}
    return steps, params, main


def assert_identical(a, b):
    (steps_a, params_a, _), (steps_b, params_b, _) = a, b
    assert len(steps_a) == len(steps_b)
    for values_a, values_b in zip(steps_a, steps_b):
        for x, y in zip(values_a, values_b):
            x, y = np.asarray(x), np.asarray(y)
            assert x.dtype == y.dtype and x.shape == y.shape
            assert np.array_equal(x, y, equal_nan=True)
    assert params_a.keys() == params_b.keys()
    for name in params_a:
        assert params_a[name].dtype == params_b[name].dtype
        assert np.array_equal(params_a[name], params_b[name], equal_nan=True), name


def occurrences(program):
    """name -> block-0 op indices that use it (names inside an op's sub-blocks count)."""
    found = {}
    for index, op in enumerate(program.global_block().ops):
        names = set(op.input_arg_names) | set(op.output_arg_names) | sub_block_names(op)
        for name in names:
            found.setdefault(name, []).append(index)
    return found


def sub_block_names(op):
    names = set()
    for attr, value in op.attrs.items():
        if op.attr_type(attr) in (AttrType.BLOCK, AttrType.BLOCKS):
            for idx in (value if isinstance(value, list) else [value]):
                block = op.block.program.block(idx)
                for inner in block.ops:
                    names |= set(inner.input_arg_names) | set(inner.output_arg_names)
                    names |= sub_block_names(inner)
    return names


def assert_reuses_respect_liveness(original, program):
    """Every reuse in ``program``'s log took a buffer whose variable (as it stood when the
    reuse was made) was used for the last time before the op that now writes it."""
    spans = {n: (idx[0], idx[-1]) for n, idx in occurrences(original).items()}
    for reuse in program._memory_optimize_log:
        start, end = spans[reuse.var]
        assert start == reuse.op_index
        assert spans[reuse.reuses][1] < start, reuse
        spans[reuse.reuses] = (spans[reuse.reuses][0], end)  # the buffer now lives on
        del spans[reuse.var]


def mlp(optimizer, batch=None):
    def build():
        main, startup = fluid.Program(), fluid.Program()
        main.random_seed = startup.random_seed = 7
        with fluid.program_guard(main, startup), fluid.unique_name.guard():
            x = fluid.data(name="x", shape=[batch, 12], dtype="float32")
            y = fluid.data(name="y", shape=[batch, 1], dtype="int64")
            h = x
            for size in (16, 16, 16, 12):
                h = layers.fc(h, size=size, act="relu")
                h = layers.scale(h, scale=0.5)  # dies at once: a buffer to reuse
            prob = layers.fc(h, size=5, act="softmax")
            loss = layers.mean(layers.cross_entropy(prob, y))
            optimizer().minimize(loss)
        return main, startup, [loss]
    return build


def mlp_feeds(steps=4, batch=6, seed=0):
    rng = np.random.RandomState(seed)
    return [{"x": rng.randn(batch, 12).astype("float32"),
             "y": rng.randint(0, 5, (batch, 1)).astype("int64")} for _ in range(steps)]


# --- whole programs: bit-identical --------------------------------------------------------
@pytest.mark.parametrize("transform", sorted(TRANSFORMS))
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_mlp_training_is_bit_identical_after_the_transform(optimizer, transform):
    make = {"sgd": lambda: fluid.optimizer.SGD(0.1),
            "adam": lambda: fluid.optimizer.Adam(0.01)}[optimizer]
    feeds = mlp_feeds()
    plain = train(mlp(make), feeds)
    changed = train(mlp(make), feeds, TRANSFORMS[transform])
    assert_identical(plain, changed)
    main = changed[2]
    if transform.startswith("level"):
        assert main._memory_optimize_log, "an MLP with dying scale outputs reuses buffers"
        assert_reuses_respect_liveness(mlp(make)()[0], main)
    if "release" in transform:
        assert any(op.type == "delete_var" for op in main.global_block().ops)


def test_fixed_batch_mlp_reuses_more_at_level_one_and_stays_identical():
    make = lambda: fluid.optimizer.SGD(0.1)  # noqa: E731
    feeds = mlp_feeds()
    plain = train(mlp(make, batch=6), feeds)
    level0 = train(mlp(make, batch=6), feeds, TRANSFORMS["level0"])
    level1 = train(mlp(make, batch=6), feeds, TRANSFORMS["level1"])
    assert_identical(plain, level0)
    assert_identical(plain, level1)
    assert len(level1[2]._memory_optimize_log) > len(level0[2]._memory_optimize_log)


def cnn():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        img = fluid.data(name="img", shape=[None, 2, 8, 8], dtype="float32")
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        h = layers.conv2d(img, num_filters=4, filter_size=3, padding=1, act="relu")
        h = layers.pool2d(h, pool_size=2, pool_stride=2)
        h = layers.batch_norm(h, act="relu")
        h = layers.conv2d(h, num_filters=4, filter_size=3, padding=1)
        h = layers.scale(h, scale=2.0)
        h = layers.pool2d(h, pool_size=2, pool_stride=2, pool_type="avg")
        h = layers.fc(h, size=8, act="tanh")
        prob = layers.fc(h, size=3, act="softmax")
        loss = layers.mean(layers.cross_entropy(prob, label))
        fluid.optimizer.Momentum(0.05, momentum=0.9).minimize(loss)
    return main, startup, [loss]


@pytest.mark.parametrize("transform", ["level0", "level1", "level1_grads", "level1_release"])
def test_cnn_with_batch_norm_trains_bit_identically(transform):
    rng = np.random.RandomState(1)
    feeds = [{"img": rng.randn(4, 2, 8, 8).astype("float32"),
              "label": rng.randint(0, 3, (4, 1)).astype("int64")} for _ in range(3)]
    plain = train(cnn, feeds)
    changed = train(cnn, feeds, TRANSFORMS[transform])
    assert_identical(plain, changed)  # batch_norm's moving statistics included
    assert_reuses_respect_liveness(cnn()[0], changed[2])


def dynamic_rnn():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = layers.data("x", [3], dtype="float32", lod_level=1)
        proj = layers.scale(layers.fc(x, size=4), scale=0.5)
        drnn = DynamicRNN()
        with drnn.block():
            word = drnn.step_input(proj)
            prev = drnn.memory(shape=[4], value=0.0)
            hidden = layers.fc([word, prev], size=4, act="tanh")
            drnn.update_memory(prev, hidden)
            drnn.output(hidden)
        out = drnn()
        last = layers.sequence_pool(out, "last")
        h = layers.scale(layers.fc(last, size=4, act="relu"), scale=3.0)
        loss = layers.mean(layers.fc(h, size=1))
        fluid.optimizer.SGD(0.1).minimize(loss)
    return main, startup, [loss]


def snapshot_sub_blocks(program):
    return [[str(op) for op in block.ops] for block in program.blocks[1:]]


@pytest.mark.parametrize("transform", ["level0", "level1", "level1_grads", "level1_release"])
def test_dynamic_rnn_training_keeps_its_sub_blocks_and_results(transform):
    rng = np.random.RandomState(2)
    lengths = [3, 1, 4]
    feeds = [{"x": fluid.create_lod_tensor(rng.randn(sum(lengths), 3).astype("float32"),
                                           [lengths], fluid.CPUPlace())} for _ in range(3)]
    plain = train(dynamic_rnn, feeds)
    original = dynamic_rnn()[0]
    changed = train(dynamic_rnn, feeds, TRANSFORMS[transform])
    assert_identical(plain, changed)
    main = changed[2]
    assert snapshot_sub_blocks(main) == snapshot_sub_blocks(original)
    inner = set()
    for op in main.global_block().ops:
        inner |= sub_block_names(op)
        if sub_block_names(op):
            inner |= set(op.input_arg_names) | set(op.output_arg_names)
    for reuse in getattr(main, "_memory_optimize_log", []):
        assert reuse.var not in inner and reuse.reuses not in inner
    for op in main.global_block().ops:
        if op.type == "delete_var":
            assert not inner & set(op.input_arg_names)
    assert_reuses_respect_liveness(original, main)


def while_program():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[4, 4], dtype="float32")
        a = layers.relu(x)
        seed = layers.scale(a, scale=0.5)  # read inside the loop only
        i = layers.fill_constant(shape=[1], dtype="int64", value=0)
        n = layers.fill_constant(shape=[1], dtype="int64", value=3)
        acc = layers.fill_constant(shape=[4, 4], dtype="float32", value=0.0)
        cond = layers.less_than(i, n)
        loop = layers.While(cond)
        with loop.block():
            step = layers.elementwise_add(acc, seed)
            layers.assign(layers.tanh(step), acc)
            layers.increment(i, in_place=True)
            layers.less_than(i, n, cond=cond)
        b = layers.scale(acc, scale=2.0)
        c = layers.sigmoid(b)
        d = layers.exp(c)
        out = layers.reduce_sum(d)
    return main, startup, [out]


def test_while_loop_program_leaves_loop_variables_alone():
    feeds = [{"x": np.random.RandomState(4).randn(4, 4).astype("float32")}]
    plain = train(while_program, feeds)
    for transform in ("level0", "level1", "release"):
        changed = train(while_program, feeds, TRANSFORMS[transform])
        assert_identical(plain, changed)
        main = changed[2]
        assert snapshot_sub_blocks(main) == snapshot_sub_blocks(while_program()[0])
    main = train(while_program, feeds, TRANSFORMS["level0"])[2]
    # relu's output dies before the loop, but `seed` (read in the loop) keeps its own name;
    # after the loop, scale's output dies into sigmoid's, which dies into exp's
    renamed = {(r.var, r.reuses) for r in main._memory_optimize_log}
    assert renamed and all("scale_0" not in v and "scale_0" not in r for v, r in renamed)


# --- random programs -----------------------------------------------------------------------
def random_program(seed, backward):
    rng = np.random.RandomState(seed)
    batch = None if rng.rand() < 0.5 else int(rng.randint(2, 5))
    widths = [int(w) for w in rng.choice([3, 4, 6, 8], size=3)]

    def build():
        main, startup = fluid.Program(), fluid.Program()
        main.random_seed = startup.random_seed = seed + 1
        pick = np.random.RandomState(seed + 1000)
        with fluid.program_guard(main, startup), fluid.unique_name.guard():
            x = fluid.data(name="x", shape=[batch, widths[0]], dtype="float32")
            values = [x]
            for _ in range(int(pick.randint(6, 16))):
                kind = pick.randint(6)
                a = values[pick.randint(len(values))]
                same = [v for v in values if tuple(v.shape) == tuple(a.shape)]
                b = same[pick.randint(len(same))]
                if kind == 0:
                    new = layers.fc(a, size=int(pick.choice(widths)))
                elif kind == 1:
                    new = layers.elementwise_add(a, b)
                elif kind == 2:
                    new = layers.elementwise_mul(a, b)
                elif kind == 3:
                    new = getattr(layers, ["relu", "tanh", "sigmoid"][pick.randint(3)])(a)
                elif kind == 4:
                    new = layers.scale(a, scale=float(pick.uniform(0.5, 1.5)), bias=0.1)
                else:
                    w = layers.create_parameter([a.shape[-1], int(pick.choice(widths))],
                                                "float32")
                    new = layers.matmul(a, w)
                values.append(new)
            tail = values[-int(pick.randint(1, 4)):]
            loss = layers.sums([layers.mean(v) for v in tail])
            if backward and main.all_parameters():
                fluid.optimizer.SGD(0.05).minimize(loss)
        return main, startup, [loss]
    feeds = [{"x": np.random.RandomState(seed + 7).randn(batch or 3, widths[0])
              .astype("float32")} for _ in range(2 if backward else 1)]
    return build, feeds


@pytest.mark.parametrize("backward", [False, True], ids=["forward", "sgd"])
def test_seeded_random_programs_give_bit_identical_results(backward):
    reused = 0
    for seed in range(50):
        build, feeds = random_program(seed, backward)
        plain = train(build, feeds)
        original = build()[0]
        for name in ("level0", "level1", "level1_grads", "level1_release"):
            changed = train(build, feeds, TRANSFORMS[name])
            assert_identical(plain, changed)
            assert_reuses_respect_liveness(original, changed[2])
            reused += len(changed[2]._memory_optimize_log)
    assert reused > 50  # the generator gives the transpiler something to do


# --- liveness ------------------------------------------------------------------------------
def chain(shapes=None, *, fetch_a_late=True, extra=None):
    """x -> a=relu -> b=scale -> c=scale -> d=a+c (or c alone) -> e=scale -> loss=mean."""
    shapes = shapes or {}
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[4, 8], dtype="float32")
        a = layers.relu(x)
        b = layers.scale(a, scale=2.0)
        c = layers.scale(b, scale=3.0)
        d = layers.elementwise_add(c, a) if fetch_a_late else layers.scale(c, scale=1.0)
        e = layers.scale(d, scale=0.5)
        if extra is not None:
            e = extra(e)
        loss = layers.mean(e)
    return main, {"a": a.name, "b": b.name, "c": c.name, "d": d.name, "e": e.name,
                  "loss": loss.name}


def renames(program):
    return [(r.var, r.reuses) for r in program._memory_optimize_log]


def test_a_buffer_is_reused_only_after_its_variable_is_dead():
    main, n = chain()
    fluid.memory_optimize(main)
    # a is read by d, so neither c nor d may take it; b dies at c, so d takes b; a and c
    # die at d, so e takes the first of them
    assert renames(main) == [(n["d"], n["b"]), (n["e"], n["a"])]
    types = [(op.type, op.input_arg_names, op.output_arg_names)
             for op in main.global_block().ops]
    assert types[3] == ("elementwise_add", [n["c"], n["a"]], [n["b"]])
    assert types[4] == ("scale", [n["b"]], [n["a"]])
    assert n["d"] not in main.global_block().vars and n["e"] not in main.global_block().vars
    check_valid(main)


def test_level_one_reuses_a_larger_dead_buffer_and_level_zero_does_not():
    def narrow(e):  # a [4, 4] temporary after the [4, 8] ones died
        return layers.scale(layers.slice(e, axes=[1], starts=[0], ends=[4]), scale=1.0)
    main0, n = chain(fetch_a_late=False, extra=narrow)
    fluid.memory_optimize(main0, level=0)
    shapes0 = {r.var: r.shape for r in main0._memory_optimize_log}
    assert all(shape == (4, 8) for shape in shapes0.values())
    main1, _ = chain(fetch_a_late=False, extra=narrow)
    fluid.memory_optimize(main1, level=1)
    shapes1 = {r.var: r.shape for r in main1._memory_optimize_log}
    assert (4, 4) in shapes1.values() and len(shapes1) > len(shapes0)
    check_valid(main1)  # verify accepts a [4, 4] written into a [4, 8] buffer
    feed = {"x": np.random.RandomState(0).randn(4, 8).astype("float32")}
    runs = []
    for program in (chain(fetch_a_late=False, extra=narrow)[0], main0, main1):
        exe = fluid.Executor(fluid.CPUPlace())
        runs.append(exe.run(program, feed=feed, fetch_list=[n["loss"]],
                            scope=fluid.Scope())[0])
    assert np.array_equal(runs[0], runs[1]) and np.array_equal(runs[0], runs[2])


@pytest.mark.parametrize("new, buffer, fits", [
    ((4, 4), (4, 8), True), ((4, 8), (4, 4), False), ((-1, 4), (-1, 8), True),
    ((-1, 8), (-1, 4), False), ((-1, 4), (4, 8), False), ((4, 4), (-1, 8), False),
    ((2, -1), (-1, 2), False), ((-1, 2, 3), (-1, 6), True), ((-1, 6), (-1, 6), True)])
def test_level_one_compares_sizes_only_when_the_minus_ones_line_up(new, buffer, fits):
    main = _scale_pair(buffer, new)
    fluid.memory_optimize(main, level=1)
    assert renames(main) == ([("new", "old")] if fits else [])
    check_valid(main)
    main = _scale_pair(buffer, new)
    fluid.memory_optimize(main, level=0)
    assert renames(main) == ([("new", "old")] if new == buffer else [])


def _scale_pair(buffer, new):
    main = fluid.Program()
    block = main.global_block()
    block.create_var(name="x", shape=buffer, dtype="float32", is_data=True)
    block.create_var(name="y", shape=new, dtype="float32", is_data=True)
    block.append_op("scale", {"X": "x"}, {"Out": "old"})
    block.append_op("scale", {"X": "old"}, {"Out": "old2"})
    block.append_op("scale", {"X": "y"}, {"Out": "new"})
    block.append_op("scale", {"X": "new"}, {"Out": "out"})
    block.append_op("scale", {"X": "old2"}, {"Out": "out2"})
    return main


def test_dtype_must_match_even_at_level_one():
    main = fluid.Program()
    block = main.global_block()
    block.create_var(name="x", shape=[4, 8], dtype="float64", is_data=True)
    block.create_var(name="y", shape=[4, 2], dtype="float32", is_data=True)
    block.append_op("scale", {"X": "x"}, {"Out": "old"})
    block.append_op("scale", {"X": "old"}, {"Out": "old2"})
    block.append_op("scale", {"X": "y"}, {"Out": "new"})
    block.append_op("scale", {"X": "new"}, {"Out": "out"})
    fluid.memory_optimize(main, level=1)
    assert renames(main) == []


def test_skip_opt_set_names_are_neither_renamed_nor_reused():
    main, n = chain()
    fluid.memory_optimize(main, skip_opt_set={n["b"]})
    assert all(n["b"] not in pair for pair in renames(main))
    main, n = chain()
    d = main.global_block().var(n["d"])
    fluid.memory_optimize(main, skip_opt_set=[d])  # Variables are accepted too
    assert all(n["d"] not in pair for pair in renames(main))


def test_data_persistable_and_unread_results_keep_their_names():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[4, 8], dtype="float32")
        kept = layers.create_global_var([4, 8], 0.0, "float32", persistable=True, name="kept")
        a = layers.relu(x)
        layers.assign(a, kept)
        b = layers.scale(kept, scale=2.0)
        c = layers.scale(b, scale=2.0)
        d = layers.scale(c, scale=2.0)
        out = layers.scale(d, scale=2.0)  # read by no op: a result to fetch
    fluid.memory_optimize(main)
    names = {name for pair in renames(main) for name in pair}
    assert names and not names & {"x", "kept", out.name}
    assert out.name in main.global_block().vars


def test_feed_and_fetch_targets_of_an_inference_model_keep_their_names(tmp_path):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, 6], dtype="float32")
        h = layers.fc(layers.scale(layers.fc(x, size=6), scale=0.5), size=6)
        mid = layers.scale(h, scale=2.0)
        out = layers.fc(layers.tanh(mid), size=2)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    with fluid.scope_guard(scope):
        fluid.io.save_inference_model(str(tmp_path), ["x"], [mid, out], exe, main)
        program, feeds, fetches = fluid.io.load_inference_model(str(tmp_path), exe)
    feed = {"x": np.random.RandomState(0).randn(3, 6).astype("float32")}
    with fluid.scope_guard(scope):
        want = exe.run(program, feed=feed, fetch_list=fetches)
    fluid.memory_optimize(program, level=1)
    fluid.release_memory(program)
    check_valid(program)
    touched = {name for pair in renames(program) for name in pair}
    for op in program.global_block().ops:
        if op.type == "delete_var":
            touched |= set(op.input_arg_names)
    assert touched and not touched & {"x", *[v.name for v in fetches]}
    with fluid.scope_guard(scope):
        got = exe.run(program, feed=feed, fetch_list=fetches)
    for a, b in zip(want, got):
        assert np.array_equal(a, b)


def test_names_used_by_a_sub_block_are_never_touched():
    main, _, _ = while_program()
    inner = set()
    for op in main.global_block().ops:
        names = sub_block_names(op)
        if names:
            inner |= names | set(op.input_arg_names) | set(op.output_arg_names)
    fluid.memory_optimize(main, level=1)
    fluid.release_memory(main)
    for var, reuses in renames(main):
        assert var not in inner and reuses not in inner
    for op in main.global_block().ops:
        if op.type == "delete_var":
            assert not inner & set(op.input_arg_names)


def test_gradients_are_skipped_unless_skip_grads_is_false():
    make = lambda: fluid.optimizer.SGD(0.1)  # noqa: E731
    main = mlp(make, batch=6)()[0]
    fluid.memory_optimize(main, level=1)
    assert all("@GRAD" not in v and "@GRAD" not in r for v, r in renames(main))
    main = mlp(make, batch=6)()[0]
    fluid.memory_optimize(main, level=1, skip_grads=False)
    assert any("@GRAD" in v or "@GRAD" in r for v, r in renames(main))
    for op in main.global_block().ops:  # optimizer ops name the gradient they read
        role_var = op.attrs.get("op_role_var")
        if role_var and op.type == "sgd":
            assert role_var[1] == op.input("Grad")[0]


def test_the_transformed_program_saves_loads_and_verifies():
    main = dynamic_rnn()[0]
    fluid.memory_optimize(main, level=1, skip_grads=False)
    fluid.release_memory(main)
    twin = check_valid(main, dynamic_rnn()[0])
    assert [str(op) for op in twin.global_block().ops] == \
        [str(op) for op in main.global_block().ops]
    assert main.desc.serialize_to_string() == encode_program(twin)


def test_verify_still_rejects_a_reuse_that_does_not_fit_or_a_write_over_a_live_value():
    main = _scale_pair((4, 4), (4, 8))
    block = main.global_block()
    for op in block.ops[2:4]:  # rename by hand what level 1 refuses: [4, 8] into [4, 4]
        op._rename_input("new", "old")
        op._rename_output("new", "old")
    with pytest.raises(InvalidArgument, match="'old'"):
        fluid.verify(main)
    main = fluid.Program()
    block = main.global_block()
    block.create_var(name="x", shape=[4], dtype="float32", is_data=True)
    block.append_op("scale", {"X": "x"}, {"Out": "t"})
    block.append_op("scale", {"X": "x"}, {"Out": "t"})  # t never read in between
    with pytest.raises(InvalidArgument, match="already written"):
        fluid.verify(main)


def test_print_log_lists_each_reuse_and_the_bytes_saved(capsys):
    main, n = chain()
    assert fluid.memory_optimize(main, print_log=True) is None
    out = capsys.readouterr().out
    assert f"memory_optimize: {n['d']} [4, 8] float32 reuses {n['b']} (128 bytes)" in out
    assert "2 variables reuse dead buffers, saving 256 bytes" in out
    assert all(isinstance(r, Reuse) and r.bytes == 128 for r in main._memory_optimize_log)


def test_a_program_already_run_runs_again_after_the_transform():
    make = lambda: fluid.optimizer.SGD(0.1)  # noqa: E731
    feeds = mlp_feeds(steps=2)
    main, startup, fetch = mlp(make)()
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    exe.run(main, feed=feeds[0], fetch_list=fetch, scope=scope)
    version = main._version
    fluid.memory_optimize(main)
    fluid.release_memory(main)
    assert main._version > version
    second = exe.run(main, feed=feeds[1], fetch_list=fetch, scope=scope)
    plain_main, plain_startup, plain_fetch = mlp(make)()
    exe2, scope2 = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe2.run(plain_startup, scope=scope2)
    exe2.run(plain_main, feed=feeds[0], fetch_list=plain_fetch, scope=scope2)
    want = exe2.run(plain_main, feed=feeds[1], fetch_list=plain_fetch, scope=scope2)
    assert np.array_equal(second[0], want[0])


# --- release_memory and delete_var ---------------------------------------------------------
def test_release_memory_deletes_each_temporary_right_after_its_last_use():
    main, n = chain()
    fluid.release_memory(main)
    ops = main.global_block().ops
    deleted = {}
    for index, op in enumerate(ops):
        if op.type == "delete_var":
            for name in op.input_arg_names:
                deleted[name] = index
    assert set(deleted) == {n["a"], n["b"], n["c"], n["d"], n["e"]}  # not x, not the loss
    for name, index in deleted.items():
        users = [i for i, op in enumerate(ops) if op.type != "delete_var"
                 and name in op.input_arg_names + op.output_arg_names]
        assert users[-1] == index - 1 or all(ops[k].type == "delete_var"
                                             for k in range(users[-1] + 1, index))
    count = len(ops)
    fluid.release_memory(main)  # nothing left to release
    assert len(main.global_block().ops) == count
    check_valid(main)


def test_release_memory_respects_skip_opt_set():
    main, n = chain()
    fluid.release_memory(main, skip_opt_set={n["c"]})
    deleted = {name for op in main.global_block().ops if op.type == "delete_var"
               for name in op.input_arg_names}
    assert n["c"] not in deleted and n["b"] in deleted


def test_delete_var_drops_the_values_it_names_from_the_scope():
    main = fluid.Program()
    block = main.global_block()
    block.create_var(name="kept", shape=[2], dtype="float32", persistable=True)
    block.create_var(name="gone", shape=[2], dtype="float32", persistable=True)
    for name in ("kept", "gone"):
        block.append_op("fill_constant", outputs={"Out": name},
                        attrs={"shape": [2], "dtype": 5, "value": 1.5})
    block.append_op("delete_var", inputs={"X": ["gone"]})
    fluid.verify(main)
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(main, scope=scope)
    assert scope.find_var("gone").value is None
    assert np.array_equal(np.asarray(scope.find_var("kept").value), [1.5, 1.5])


def test_a_value_read_after_delete_var_is_reported_as_missing():
    main = fluid.Program()
    block = main.global_block()
    block.create_var(name="x", shape=[3], dtype="float32", is_data=True)
    block.append_op("scale", {"X": "x"}, {"Out": "t"})
    block.append_op("delete_var", inputs={"X": ["t"]})
    block.append_op("scale", {"X": "t"}, {"Out": "u"})
    with pytest.raises(InvalidArgument, match="scale: input 'X' expected a LoDTensor.*NoneType"):
        fluid.Executor(fluid.CPUPlace()).run(main, feed={"x": np.ones(3, "float32")},
                                             fetch_list=["u"], scope=fluid.Scope())


# --- arguments -----------------------------------------------------------------------------
def test_bad_arguments_raise_typed_errors():
    main, _ = chain()
    with pytest.raises(InvalidType, match="memory_optimize: input_program expected a Program"):
        fluid.memory_optimize("main")
    with pytest.raises(InvalidType, match="release_memory: input_program expected a Program"):
        fluid.release_memory(None)
    for level in (2, -1, "0", True):
        with pytest.raises(InvalidArgument, match="level expected 0 or 1"):
            fluid.memory_optimize(main, level=level)
    with pytest.raises(InvalidType, match="skip_opt_set expected a set of variable names"):
        fluid.release_memory(main, skip_opt_set=3)
    with pytest.raises(InvalidType, match="skip_opt_set items expected variable names"):
        fluid.memory_optimize(main, skip_opt_set=[1])
