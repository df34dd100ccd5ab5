"""The ops a one-op table case cannot feed (they read tensor arrays, rank tables or a loop's
step scopes), checked in the smallest programs that exercise them: each compiled whole,
built once, gives the interpreter's values, their LoD and the gradients on two batches of
different LoD, float32 within 1e-5 relative and float64 within 1e-12."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.framework.program import grad_var_name
from fluid_nb.rewriters import native
from fluid_nb.rewriters.native.dynamic import unneeded
from fluid_nb.tensor.lod_rank_table import LoDRankTable
from fluid_nb.tensor.tensor import LoDTensorArray


def _sequences(dtype, lengths, width=3, seed=0):
    data = np.random.RandomState(seed).uniform(-1, 1, (sum(lengths), width)).astype(dtype)
    return fluid.create_lod_tensor(data, [lengths], fluid.CPUPlace())


BATCHES = ([3, 1, 4, 2], [2, 5, 1])  # the second: other lengths, fewer sequences


def array_round_trip(dtype):
    """lod_rank_table, max_sequence_len, lod_tensor_to_array, array_to_lod_tensor and their
    gradients (each other)."""
    x = fluid.layers.data(name="x", shape=[3], dtype=dtype, lod_level=1)
    x.stop_gradient = False
    table = fluid.layers.lod_rank_table(x)
    longest = fluid.layers.max_sequence_len(table)
    steps = fluid.layers.lod_tensor_to_array(x, table)
    back = fluid.layers.array_to_lod_tensor(steps, table)
    loss = fluid.layers.mean(fluid.layers.sequence_pool(back * back, "sum"))
    fluid.backward.append_backward(loss)
    return [loss, longest, table, steps, back, "x@GRAD"]


def read_shrink_write(dtype):
    """read_from_array, shrink_rnn_memory at step 1, write_to_array, and their gradients
    (write_to_array, shrink_rnn_memory_grad, read_from_array) reaching a memory ``m`` (a row
    per sequence)."""
    x = fluid.layers.data(name="x", shape=[3], dtype=dtype, lod_level=1)
    m = fluid.layers.data(name="m", shape=[3], dtype=dtype)
    m.stop_gradient = False
    table = fluid.layers.lod_rank_table(x)
    steps = fluid.layers.lod_tensor_to_array(x, table)
    zero = fluid.layers.fill_constant(shape=[1], dtype="int64", value=0)
    one = fluid.layers.fill_constant(shape=[1], dtype="int64", value=1)
    first = fluid.layers.array_read(steps, zero)
    shrunk = fluid.layers.shrink_memory(m + first, one, table)
    written = fluid.layers.array_write(shrunk * 2.0, one)
    again = fluid.layers.array_read(written, one)
    loss = fluid.layers.mean(again * again)
    fluid.backward.append_backward(loss)
    return [loss, first, shrunk, written, again, "m@GRAD"]


def dynamic_rnn(dtype, pool="last", backward=True, input_gradient=False):
    """A DynamicRNN (while, while_grad and the machinery around them) and its backward
    (with ``input_gradient``, also the input's gradient, fetched)."""
    x = fluid.layers.data(name="x", shape=[3], dtype=dtype, lod_level=1)
    x.stop_gradient = not input_gradient
    rnn = fluid.layers.DynamicRNN()
    with rnn.block():
        step = rnn.step_input(x)
        prev = rnn.memory(shape=[4], value=0.0, dtype=dtype)
        h = fluid.layers.fc(input=[step, prev], size=4, act="tanh")
        rnn.update_memory(prev, h)
        rnn.output(h)
    pooled = fluid.layers.sequence_pool(rnn(), pool)
    if not backward:
        return [pooled]
    loss = fluid.layers.mean(pooled)
    grads = fluid.backward.append_backward(loss)
    return [loss] + [g.name for _, g in grads] + (["x@GRAD"] if input_gradient else [])


def while_loop(dtype):
    """A While over a counter, without a backward: the loop's step scopes kept, its
    arrays read and written (a running sum of each row of the batch)."""
    x = fluid.layers.data(name="x", shape=[3], dtype=dtype, lod_level=1)
    table = fluid.layers.lod_rank_table(x)
    steps = fluid.layers.lod_tensor_to_array(x, table)
    n = fluid.layers.max_sequence_len(table)
    i = fluid.layers.fill_constant(shape=[1], dtype="int64", value=0)
    total = fluid.layers.array_read(steps, i)
    sums = fluid.layers.array_write(total, i)
    fluid.layers.increment(i, in_place=True)
    cond = fluid.layers.less_than(i, n)
    loop = fluid.layers.While(cond)
    with loop.block():
        row = fluid.layers.array_read(steps, i)
        before = fluid.layers.array_read(sums, fluid.layers.increment(i, -1.0, in_place=False))
        fluid.layers.array_write(fluid.layers.shrink_memory(before, i, table) + row, i,
                                 array=sums)
        fluid.layers.increment(i, in_place=True)
        fluid.layers.less_than(i, n, cond=cond)
    return [sums, fluid.layers.array_to_lod_tensor(sums, table), i]


# (sequence_pool's other pool types are the op tables' cases, in tests/targets)
PROGRAMS = {"array_round_trip": array_round_trip, "read_shrink_write": read_shrink_write,
            "dynamic_rnn": dynamic_rnn, "while_loop": while_loop,
            "dynamic_rnn_input_gradient": lambda d: dynamic_rnn(d, input_gradient=True),
            # cloned for test: the loop's steps share one record (is_test)
            "dynamic_rnn_inference": lambda d: dynamic_rnn(d, "max", backward=False)}


def build(name, dtype):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        fetch = [getattr(f, "name", f) for f in PROGRAMS[name](dtype)]
    if name.endswith("_inference"):
        main = main.clone(for_test=True)
    return main, startup, fetch


def op_types():
    """Every op type the programs hold (in any block)."""
    types = set()
    for name in PROGRAMS:
        main, _, _ = build(name, "float32")
        types |= {op.type for block in main.blocks for op in block.ops}
    return types


def _same(name, want, got, tol, what):
    if isinstance(want, LoDRankTable):
        assert isinstance(got, LoDRankTable) and list(got) == list(want) \
            and got.coarse_lod == want.coarse_lod, f"{what}: {got} != {want}"
        return
    if isinstance(want, LoDTensorArray):
        assert isinstance(got, LoDTensorArray) and len(got) == len(want), what
        for k, (w, g) in enumerate(zip(want, got)):
            _same(name, w, g, tol, f"{what}[{k}]")
        return
    if want.array is None:  # an array's slot nothing wrote
        assert got.array is None, f"{what}: a value where the interpreter has none"
        return
    assert got.lod() == want.lod(), f"{what}: LoD {got.lod()} != {want.lod()}"
    w, g = np.asarray(want), np.asarray(got)
    assert g.shape == w.shape and g.dtype == w.dtype, \
        f"{what}: {g.dtype}{g.shape} != {w.dtype}{w.shape}"
    np.testing.assert_allclose(g, w, rtol=tol, atol=tol * max(1.0, np.abs(w).max(initial=0)) * 1e-2,
                               err_msg=what)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_compiled_program_gives_the_interpreters_values_on_every_batch(name, dtype):
    main, startup, fetch = build(name, dtype)
    exe = fluid.Executor(fluid.CPUPlace())
    interpreted, compiled_scope = fluid.Scope(), fluid.Scope()
    exe.run(startup, scope=interpreted)
    exe.run(startup, scope=compiled_scope)
    feeds = [{"x": _sequences(dtype, lengths, seed=k)} for k, lengths in enumerate(BATCHES)]
    if main.global_block().has_var("m"):  # a memory: a row per sequence
        for k, feed in enumerate(feeds):
            feed["m"] = np.random.RandomState(9 + k).uniform(-1, 1, (len(BATCHES[k]), 3)) \
                .astype(dtype)
    compiled = native.compile(main, feeds[0], fetch, scope=compiled_scope)
    assert compiled.source.fallbacks == [] and compiled.source.dynamic
    tol = 1e-12 if dtype == "float64" else 1e-5
    for k, feed in enumerate(feeds):
        want = exe.run(main, feed=feed, fetch_list=fetch, scope=interpreted, return_numpy=False)
        got = exe.run(compiled, feed=feed, fetch_list=fetch, scope=compiled_scope,
                      return_numpy=False)
        for f, w, g in zip(fetch, want, got):
            _same(f, w, g, tol, f"{name} {dtype} batch {k}: {f}")
    assert len(compiled._built) == 1  # one build for both batches



def _rnn_program(input_needs_gradient):
    """The DynamicRNN program, its input needing a gradient (fetched) or not."""
    name = "dynamic_rnn_input_gradient" if input_needs_gradient else "dynamic_rnn"
    return build(name, "float32")


def _input_gradient(main):
    """(the ops that make the gradient of the loop's input array, the gradient of the row
    each step reads from it): ``[(block, index)]`` and a name."""
    array = next(op for op in main.global_block().ops
                 if op.type == "lod_tensor_to_array").output("Out")[0]
    writers = [(block.idx, index) for block in main.blocks
               for index, op in enumerate(block.ops)
               if any(n.split("@RENAME@")[0] == grad_var_name(array)
                      for n in op.output_arg_names) and op.type != "while_grad"]
    step_read = next(op for block in main.blocks[1:] for op in block.ops
                     if op.type == "read_from_array" and op.input("X")[0] == array)
    return writers, grad_var_name(step_read.output("Out")[0])


def _same_as_interpreter(main, startup, fetch):
    exe = fluid.Executor(fluid.CPUPlace())
    interpreted, compiled_scope = fluid.Scope(), fluid.Scope()
    exe.run(startup, scope=interpreted)
    exe.run(startup, scope=compiled_scope)
    feed = {"x": _sequences("float32", BATCHES[0])}
    compiled = native.compile(main, feed, fetch, scope=compiled_scope)
    want = exe.run(main, feed=feed, fetch_list=fetch, scope=interpreted, return_numpy=False)
    got = exe.run(compiled, feed=feed, fetch_list=fetch, scope=compiled_scope,
                  return_numpy=False)
    for f, w, g in zip(fetch, want, got):
        _same(f, w, g, 1e-5, f)


def test_a_loop_input_gradient_nobody_reads_is_not_computed():
    # Fluid's backward gives the summed gradient of the loop's input array the name each
    # step's gradient has inside the gradient block: the step's write must not keep the
    # sum alive, nor the sum the step's write
    main, startup, fetch = _rnn_program(input_needs_gradient=False)
    dropped, dead = unneeded(main, fetch)
    writers, step_input_gradient = _input_gradient(main)
    assert len(writers) == 3  # the step's write, the first row's write, the sum
    assert set(writers) <= dropped
    assert step_input_gradient in dead  # so no step multiplies for it
    _same_as_interpreter(main, startup, fetch)


def test_a_loop_input_gradient_that_is_fetched_is_computed_as_the_interpreter_does():
    main, startup, fetch = _rnn_program(input_needs_gradient=True)
    dropped, dead = unneeded(main, fetch)
    writers, step_input_gradient = _input_gradient(main)
    assert writers and not set(writers) & dropped
    assert step_input_gradient not in dead
    _same_as_interpreter(main, startup, fetch)
