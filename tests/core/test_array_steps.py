"""A loop's tensor-array reads and writes in C (``_steps.ArrayStep``): the common case (an
int index on the host, LoDTensors in a LoDTensorArray, a write to an array this run made)
is done without the op's Python step; every other case is handed to that step before
anything is changed, so both store the same. A loop run twice, and run by an executor
without host steps, gives the same arrays."""
import types

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.exec import steps as flavours
from fluid_nb.exec.executor import Executor
from fluid_nb.exec.scope import ScopeVariable
from fluid_nb.ops import registry
from fluid_nb.tensor.tensor import LoDTensor, LoDTensorArray

ArrayStep = flavours._steps.ArrayStep


class KernelsOnly(Executor):
    host_steps = False


def _tensor(rows, lod=()):
    return LoDTensor(np.full((rows, 2), float(rows), "float32"), lod)


def _index(value, dtype="int64"):
    return LoDTensor(np.array([value], dtype))


class Fallback:
    """The op's own step, counted: what the C step hands every other case to."""

    def __init__(self):
        self.calls = 0

    def __call__(self):
        self.calls += 1


def _read(array, index, before=None):
    x, i, out = ScopeVariable("x", array), ScopeVariable("i", index), \
        ScopeVariable("out", before)
    fallback = Fallback()
    ArrayStep(x, i, out, None, fallback)()
    return out.value, fallback.calls


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_a_read_shares_the_item_data_and_lod(dtype):
    item = _tensor(3, [[0, 1, 3]])
    array = LoDTensorArray([_tensor(1), item])
    got, handed_on = _read(array, _index(1, dtype))
    assert handed_on == 0
    assert type(got) is LoDTensor and got is not item
    assert got.array is item.array and got._lod is item._lod


@pytest.mark.parametrize("at", [2, 9, -1])
def test_a_read_past_either_end_leaves_out_as_it_was(at):
    before = _tensor(5)
    got, handed_on = _read(LoDTensorArray([_tensor(1), _tensor(2)]), _index(at), before)
    assert got is before and handed_on == 0


@pytest.mark.parametrize("array, index", [
    (LoDTensorArray([_tensor(1)]), LoDTensor(np.array([0.0], "float32"))),  # a float index
    (LoDTensorArray([_tensor(1)]), LoDTensor(np.array([0, 0], "int64"))),  # two elements
    (LoDTensorArray([_tensor(1)]), LoDTensor(np.array([0], ">i8"))),  # not native order
    (LoDTensorArray([_tensor(1)]), LoDTensor()),  # no index value
    ([_tensor(1)], _index(0)),  # a plain list, not a LoDTensorArray
    (_tensor(1), _index(0)),  # not an array at all
    (LoDTensorArray(["not a tensor"]), _index(0)),
])
def test_a_read_of_anything_else_is_the_op_own_step(array, index):
    before = _tensor(5)
    got, handed_on = _read(array, index, before)
    assert handed_on == 1 and got is before  # handed on before anything changed


def _writer(token):
    return types.SimpleNamespace(run_token=token)


def _write(x, index, old, executor):
    xh, ih, out = ScopeVariable("x", x), ScopeVariable("i", index), ScopeVariable("out", old)
    fallback = Fallback()
    ArrayStep(xh, ih, out, executor, fallback)()
    return out.value, fallback.calls


def test_a_write_to_this_runs_array_grows_it_in_place():
    token = object()
    array = LoDTensorArray([_tensor(1)])
    array.run_token = token
    x = _tensor(4, [[0, 4]])
    got, handed_on = _write(x, _index(3), array, _writer(token))
    assert handed_on == 0 and got is array and len(array) == 4
    assert [t.array for t in array[1:3]] == [None, None]  # the gap: empty tensors
    assert array[3] is not x and array[3].array is x.array and array[3]._lod is x._lod
    got, _ = _write(_tensor(2), _index(0, "int32"), array, _writer(token))
    assert got is array and len(array) == 4 and array[0].array.shape == (2, 2)


@pytest.mark.parametrize("case", ["another run", "no run", "no array", "plain list",
                                  "negative index", "float index", "array as x"])
def test_a_write_of_anything_else_is_the_op_own_step(case):
    token = object()
    old = LoDTensorArray([_tensor(1)])
    old.run_token = object() if case == "another run" else token
    x, index, executor = _tensor(2), _index(0), _writer(token)
    if case == "no run":
        old.run_token, executor = None, _writer(None)
    elif case == "no array":
        old = None
    elif case == "plain list":
        old = [_tensor(1)]
    elif case == "negative index":
        index = _index(-1)
    elif case == "float index":
        index = LoDTensor(np.array([0.0], "float32"))
    elif case == "array as x":
        x = LoDTensorArray([_tensor(1)])
    kept = list(old) if old is not None else None
    got, handed_on = _write(x, index, old, executor)
    assert handed_on == 1 and got is old
    assert (list(old) if old is not None else None) == kept  # nothing changed first


def test_the_array_ops_bind_the_c_step_over_their_own():
    for op_type in ("read_from_array", "write_to_array"):
        assert registry.get(op_type).host_step.__qualname__.startswith("_array_step")


def _loop_program(steps=4):
    """A while loop writing x * (i + 1) at i and reading back the previous slot."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[3], dtype="float32")
        i = fluid.layers.zeros(shape=[1], dtype="int64")
        limit = fluid.layers.fill_constant(shape=[1], dtype="int64", value=steps)
        written = fluid.layers.create_array("float32")
        previous = fluid.layers.create_array("float32")
        fluid.layers.array_write(x, i, array=written)
        cond = fluid.layers.less_than(i, limit)
        loop = fluid.layers.While(cond)
        with loop.block():
            last = fluid.layers.array_read(written, i)
            fluid.layers.array_write(last, i, array=previous)
            i = fluid.layers.increment(i, in_place=True)
            fluid.layers.array_write(fluid.layers.scale(last, 2.0), i, array=written)
            fluid.layers.less_than(i, limit, cond=cond)
        out, _ = fluid.layers.tensor_array_to_tensor(written, axis=0)
        back, _ = fluid.layers.tensor_array_to_tensor(previous, axis=0)
    return main, out, back


@pytest.mark.parametrize("executor_class", [Executor, KernelsOnly])
def test_a_loop_of_reads_and_writes_runs_as_with_the_kernels(executor_class):
    main, out, back = _loop_program()
    feed = {"x": np.arange(6, dtype="float32").reshape(2, 3)}
    exe = executor_class(fluid.CPUPlace())
    scope = fluid.Scope()
    for _ in range(2):  # a second run makes its arrays anew, then grows them in place
        got_out, got_back = exe.run(main, feed=feed, fetch_list=[out, back], scope=scope)
        want = np.concatenate([feed["x"] * 2 ** k for k in range(5)])
        np.testing.assert_array_equal(got_out, want)
        np.testing.assert_array_equal(got_back, want[:8])
