"""Host steps: the small ops a loop body runs every iteration (tensor-array reads and
writes, counters, conditions, memory shrinking) do their common case in a step of their
own on the host instead of calling the kernel. Whatever the inputs, a host step leaves
what the kernel leaves, or raises what the kernel raises."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.exec.binding import make_step as _make_step
from fluid_nb.exec.executor import Executor
from fluid_nb.tensor.lod_rank_table import LoDRankTable
from fluid_nb.exec.scope import Scope
from fluid_nb.tensor.tensor import LoDTensor, LoDTensorArray
from fluid_nb.tensor.dtypes import VarType
from fluid_nb.ops import registry

HOST_STEP_OPS = ["read_from_array", "write_to_array", "increment", "less_than", "less_equal",
                 "greater_than", "greater_equal", "equal", "not_equal", "shrink_rnn_memory",
                 "shrink_rnn_memory_grad"]


class KernelsOnly(Executor):
    host_steps = False


def _tensor(array, lod=()):
    return LoDTensor(np.asarray(array), lod)


def _declare(block, name, value):
    if isinstance(value, LoDRankTable):
        block.create_var(name=name, type=VarType.LOD_RANK_TABLE)
    elif isinstance(value, list):
        block.create_var(name=name, type=VarType.LOD_TENSOR_ARRAY, dtype="float32",
                         shape=[-1, 2])
    else:
        array = value.array if isinstance(value, LoDTensor) else None
        dtype = str(array.dtype) if array is not None else "float32"
        shape = [-1] + list(array.shape[1:]) if array is not None and array.ndim else [1]
        block.create_var(name=name, dtype=dtype, shape=shape)


def _run_one(executor_class, op_type, inputs, outputs, attrs=None, out_before=None):
    """Run one op over ``inputs`` (slot -> value) with a fresh executor of
    ``executor_class``: (what its outputs hold after it, or the error it raised), and the
    step's name."""
    program = fluid.Program()
    block = program.global_block()
    for slot, value in inputs.items():
        _declare(block, slot.lower(), value)
    for slot in outputs:
        block.create_var(name="out_" + slot.lower().replace("@", "_"), dtype="float32")
    op = block.append_op(type=op_type, inputs={s: [s.lower()] for s in inputs},
                         outputs={s: ["out_" + s.lower().replace("@", "_")] for s in outputs},
                         attrs=attrs or {})
    scope = Scope()
    for slot, value in inputs.items():
        scope.var(slot.lower()).value = value
    out_name = op.output_arg_names[0]
    scope.var(out_name).value = out_before
    executor = executor_class(fluid.CPUPlace())
    prepared = executor.prepare(block)
    step = _make_step(prepared.ops[-1], scope.var, executor.place, executor, scope)
    try:
        step()
    except Exception as exc:  # noqa: BLE001 (the error is what is compared)
        return ("error", type(exc), str(exc)), _name(step)
    return ("value", scope.var(out_name).value), _name(step)


def _name(step):
    """A step's function name, or its class's for a step the executor made in C."""
    return getattr(step, "__qualname__", type(step).__name__)


def _same(a, b):
    if isinstance(a, LoDTensor) or isinstance(b, LoDTensor):
        assert type(a) is type(b)
        if a.array is None or b.array is None:
            assert a.array is None and b.array is None
        else:
            assert a.array.dtype == b.array.dtype and a.array.shape == b.array.shape
            np.testing.assert_array_equal(a.array, b.array)
        assert [list(level) for level in a._lod] == [list(level) for level in b._lod]
    elif isinstance(a, list):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    else:
        assert a is b or a == b


def _host_agrees(op_type, inputs, outputs=("Out",), attrs=None, out_before=None,
                 host_bound=True):
    """The host step and the kernel give the same result; returns it. ``host_bound``:
    whether the op's attributes let the executor bind the host step at all."""
    host, host_step = _run_one(Executor, op_type, inputs, outputs, attrs, out_before)
    kernel, kernel_step = _run_one(KernelsOnly, op_type, inputs, outputs, attrs, out_before)
    assert (host_step != kernel_step) == host_bound  # which steps the executors bound
    assert host[0] == kernel[0], (host, kernel)
    if host[0] == "error":
        assert host[1:] == kernel[1:]
    else:
        _same(host[1], kernel[1])
    return host


def test_every_host_step_op_binds_its_host_step_on_the_host_only():
    for op_type in HOST_STEP_OPS:
        assert registry.get(op_type).host_step is not None, op_type
    _, host_step = _run_one(Executor, "increment", {"X": _tensor([3])}, ["Out"])
    _, kernel_step = _run_one(KernelsOnly, "increment", {"X": _tensor([3])}, ["Out"])
    assert host_step.startswith("_increment_step") and not kernel_step.startswith(
        "_increment_step")


def _array(*rows):
    return LoDTensorArray(_tensor(np.full((n, 2), float(n), "float32")) for n in rows)


@pytest.mark.parametrize("index", [[0], [2], [3], [7], [-1], np.array([1.0]), [[1]],
                                   [0, 1]])
def test_read_from_array(index):
    previous = _tensor(np.zeros((1, 2), "float32"))
    result = _host_agrees("read_from_array", {"X": _array(3, 2, 1), "I": _tensor(index)},
                          out_before=previous)
    if np.size(index) == 1 and not 0 <= int(np.ravel(index)[0]) < 3:
        assert result == ("value", previous)  # past the end: Out as it was


def test_read_from_array_of_something_else_fails_as_the_kernel_does():
    assert _host_agrees("read_from_array", {"X": _tensor(np.ones((2, 2), "float32")),
                                            "I": _tensor([0])})[0] == "error"


@pytest.mark.parametrize("index", [[0], [1], [3], [5], [-2], [[2]], [0, 1]])
def test_write_to_array(index):
    before = _array(3, 2)
    result = _host_agrees("write_to_array", {"X": _tensor(np.ones((4, 2), "float32"),
                                                          [[0, 1, 4]]),
                                             "I": _tensor(index)}, out_before=before)
    assert [t.array.shape[0] for t in before] == [3, 2]  # another run's array stays
    if result[0] == "value":
        assert result[1] is not before


def test_write_to_array_of_an_array_fails_as_the_kernel_does():
    _host_agrees("write_to_array", {"X": _array(2), "I": _tensor([0])})


@pytest.mark.parametrize("counter, step", [
    (np.array([3], "int64"), 1.0), (np.array([3], "int32"), 1.0),
    (np.array([4], "int64"), -1.0), (np.array([0.5], "float32"), 2.5),
    (np.array([[2]], "int64"), 1.0)])
def test_increment(counter, step):
    result = _host_agrees("increment", {"X": _tensor(counter)}, attrs={"step": step})
    assert result[1].array.dtype == counter.dtype and result[1].array.shape == counter.shape


def test_increment_twice_with_the_step_kept_for_the_first_type():
    # the host step adds the step the kernel kept; a counter of another type goes back to
    # the kernel, which keeps a step of that type
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="i", dtype="int64", shape=[1])
    block.create_var(name="o", dtype="int64", shape=[1])
    block.append_op(type="increment", inputs={"X": ["i"]}, outputs={"Out": ["o"]},
                    attrs={"step": 2.0})
    scope, executor = Scope(), Executor(fluid.CPUPlace())
    step = _make_step(executor.prepare(block).ops[-1], scope.var, executor.place, executor,
                      scope)
    for counter in (np.array([1], "int64"), np.array([5], "int64"), np.array([7], "int32"),
                    np.array([7], "int64")):
        scope.var("i").value = _tensor(counter)
        step()
        got = scope.var("o").value.array
        assert got.dtype == counter.dtype and got.tolist() == [counter[0] + 2]


def test_increment_of_no_tensor_fails_as_the_kernel_does():
    assert _host_agrees("increment", {"X": LoDTensor()})[0] == "error"


@pytest.mark.parametrize("op_type", ["less_than", "less_equal", "greater_than",
                                     "greater_equal", "equal", "not_equal"])
@pytest.mark.parametrize("x, y, axis", [
    ([3], [5], -1), ([5], [5], -1), ([[1.0, 2.0], [3.0, 4.0]], [2.0, 3.0], -1),
    ([[1.0, 2.0], [3.0, 4.0]], [2.0, 3.0], 0), ([1.0, 2.0, 3.0], [1.0, 2.0], -1)])
def test_comparisons(op_type, x, y, axis):
    _host_agrees(op_type, {"X": _tensor(np.array(x), [[0, 1, len(x)]] if len(x) > 1 else ()),
                           "Y": _tensor(np.array(y))}, attrs={"axis": axis},
                 host_bound=axis == -1)  # Y aligned by another axis: the kernel's work


def test_a_comparison_of_no_tensor_fails_as_the_kernel_does():
    assert _host_agrees("less_than", {"X": LoDTensor(), "Y": _tensor([1])})[0] == "error"


_TABLE = LoDRankTable([(2, 4), (0, 3), (1, 1)])


@pytest.mark.parametrize("index", [[0], [1], [2], [3], [9], [0, 1]])
@pytest.mark.parametrize("lod", [(), [[0, 2, 3, 5]]])
def test_shrink_rnn_memory(index, lod):
    memory = _tensor(np.arange(10, dtype="float32").reshape(5, 2), lod)
    _host_agrees("shrink_rnn_memory", {"X": memory, "RankTable": _TABLE, "I": _tensor(index)})


def test_shrink_rnn_memory_without_a_rank_table_fails_as_the_kernel_does():
    assert _host_agrees("shrink_rnn_memory", {"X": _tensor(np.ones((3, 2), "float32")),
                                              "RankTable": _array(1),
                                              "I": _tensor([0])})[0] == "error"


@pytest.mark.parametrize("rows", [3, 2, 0])
def test_shrink_rnn_memory_grad(rows):
    memory = _tensor(np.ones((3, 2), "float32"), [[0, 1, 3]])
    result = _host_agrees("shrink_rnn_memory_grad",
                          {"X": memory, "Out@GRAD": _tensor(np.full((rows, 2), 2.0,
                                                                    "float32"))},
                          outputs=("X@GRAD",))
    np.testing.assert_array_equal(result[1].array.sum(axis=1), [4.0] * rows + [0.0] * (3 - rows))


def test_shrink_rnn_memory_grad_of_no_tensor_fails_as_the_kernel_does():
    assert _host_agrees("shrink_rnn_memory_grad",
                        {"X": LoDTensor(), "Out@GRAD": _tensor(np.ones((1, 2), "float32"))},
                        outputs=("X@GRAD",))[0] == "error"
