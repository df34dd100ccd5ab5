"""The interpreter's C steps (exec/_steps.c: plain, arrays) store what the general Python
step stores for the same kernel and holders: the same arrays, LoDs, untouched outputs and
emptied temporaries, and the same error when a kernel or an input fails."""
import gc
import sys
import types
import weakref

import numpy as np
import pytest

from fluid_nb.exec import steps as flavours
from fluid_nb.exec.scope import ScopeVariable
from fluid_nb.tensor.tensor import LoDTensor, LoDTensorArray

PLAIN_OP = types.SimpleNamespace(lod_aware=False)  # what the general step reads of an op
RUNTIME_OP = types.SimpleNamespace(lod_aware=True)  # its kernel takes values, not arrays


def _tensor(rows, lod=()):
    return LoDTensor(np.arange(rows * 2, dtype="float32").reshape(rows, 2), lod)


def _holders(*values):
    return [ScopeVariable(f"v{i}", value) for i, value in enumerate(values)]


def _outcome(step, outs, dead):
    """What running ``step`` left: its error, or each output's and dying holder's value."""
    try:
        step()
    except Exception as exc:  # noqa: BLE001 (the error is what is compared)
        return ("error", type(exc), str(exc))
    return ("stored", [h.value for h in outs], [h.value for h in dead])


def _same(a, b):
    if isinstance(a, LoDTensor):
        assert type(b) is LoDTensor
        assert (a.array is None) == (b.array is None)
        if a.array is not None:
            assert a.array.dtype == b.array.dtype and a.array.shape == b.array.shape
            np.testing.assert_array_equal(a.array, b.array)
        assert a._lod == b._lod
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    else:
        assert a is b or a == b


def _both(make_values, fn, ins, n_outs, lod_sources=(), dead=(), out_before=None,
          op=PLAIN_OP, flavour=None):
    """The C step's outcome, checked to be the Python general step's, over fresh holders
    each: ``ins`` and ``dead`` index the holders ``make_values()`` fills (None: an absent
    input). The C step is ``plain``'s (one output) or ``arrays``' unless ``flavour``
    (general, runtime) says."""
    outcomes = []
    for side in ("c", "python"):
        holders = _holders(*make_values())
        inputs = [None if i is None else holders[i] for i in ins]
        outs = [ScopeVariable(f"out{i}", out_before) for i in range(n_outs)]
        sources = {i: holders[s] for i, s in lod_sources}
        dying = tuple(holders[i] for i in dead)
        if side == "python":
            step = flavours.general_closure(fn, None, op, inputs, outs, sources, dying)
        elif flavour == "general":
            step = flavours.general(fn, None, op, inputs, outs, sources, dying)
        elif flavour == "runtime":
            step = flavours.runtime(fn, None, inputs[0], outs[0])
        elif n_outs == 1:
            step = flavours.plain(fn, None, inputs, outs[0], sources.get(0), dying)
        else:
            step = flavours.arrays(fn, None, inputs, outs, sources, dying)
        outcomes.append(_outcome(step, outs, dying))
    c, general = outcomes
    assert c[0] == general[0], (c, general)
    if c[0] == "error":
        assert c[1:] == general[1:]
    else:
        _same(c[1], general[1])
        _same(c[2], general[2])
    return c


def _add(ctx, x, y=None):
    return x + (0 if y is None else y)


@pytest.mark.parametrize("ins", [[0], [0, 1], [0, None], [0, 1, None, None]])
def test_a_plain_step_passes_the_arrays_and_none_for_absent_inputs(ins):
    seen = []

    def kernel(ctx, *arrays):
        seen.append([None if a is None else a.shape for a in arrays])
        return arrays[0] * 2

    outcome = _both(lambda: (_tensor(3), _tensor(3)), kernel, ins, 1)
    assert outcome[1][0]._lod == ()
    assert seen[0] == seen[1] == [None if i is None else (3, 2) for i in ins]


def test_a_plain_step_gives_its_output_the_lod_of_its_source():
    outcome = _both(lambda: (_tensor(3), _tensor(3, [[0, 1, 3]])), _add, [0, 1], 1,
                    lod_sources=[(0, 1)])
    assert outcome[1][0]._lod == [[0, 1, 3]]


def test_a_plain_step_makes_a_scalar_result_a_tensor_as_the_constructor_does():
    outcome = _both(lambda: (_tensor(3),), lambda ctx, x: np.float32(x.sum()), [0], 1)
    assert outcome[1][0].array.dtype == np.float32


def test_a_plain_step_empties_the_temporaries_that_die_there_after_storing():
    outcome = _both(lambda: (_tensor(2), _tensor(2), _tensor(1)), _add, [0, 1], 1,
                    dead=[0, 2])
    assert outcome[2] == [None, None]


@pytest.mark.parametrize("values", [
    lambda: (_tensor(2), None),                       # an input with no value
    lambda: (_tensor(2), LoDTensorArray()),          # a value with no array
])
def test_a_plain_step_fails_on_a_missing_array_as_python_does(values):
    assert _both(values, _add, [0, 1], 1)[0] == "error"


def test_a_failing_kernel_stores_nothing_and_frees_nothing():
    def failing(ctx, x):
        raise ValueError("shapes differ")

    before = LoDTensor(np.ones(1, "float32"))
    outcome = _both(lambda: (_tensor(2),), failing, [0], 1, dead=[0], out_before=before)
    assert outcome == ("error", ValueError, "shapes differ")


def test_an_arrays_step_stores_each_result_as_stored_does():
    array = LoDTensorArray([_tensor(1)])

    def kernel(ctx, x, y, z):
        assert z is None  # an absent input
        return x * 2, None, array, LoDTensor(y), np.float64(3.0)

    outcome = _both(lambda: (_tensor(2, [[0, 2]]), _tensor(2)), kernel, [0, 1, None], 5,
                    lod_sources=[(0, 0), (3, 0)], dead=[1], out_before=_tensor(1))
    first, untouched, kept, relabelled, scalar = outcome[1]
    assert first._lod == [[0, 2]] and untouched.array.shape == (1, 2)
    assert kept is array and relabelled._lod == [[0, 2]]
    assert scalar.array.dtype == np.float64 and outcome[2] == [None]


def test_an_arrays_step_takes_a_list_result_and_fails_on_a_short_one():
    _both(lambda: (_tensor(2),), lambda ctx, x: [x, x + 1], [0], 2)
    assert _both(lambda: (_tensor(2),), lambda ctx, x: (x,), [0], 2)[0] == "error"


@pytest.mark.parametrize("n_outs", [1, 3])
def test_a_general_step_takes_runtime_values_and_stores_tensors_as_they_are(n_outs):
    array = LoDTensorArray([_tensor(1)])

    def kernel(ctx, x, absent, y):
        assert isinstance(x, LoDTensor) and absent is None and isinstance(y, LoDTensorArray)
        results = (LoDTensor(x.array * 3, x._lod), None, y)
        return results[0] if n_outs == 1 else results

    outcome = _both(lambda: (_tensor(2, [[0, 1, 2]]), array), kernel, [0, None, 1], n_outs,
                    op=RUNTIME_OP, flavour="general", dead=[0])
    assert outcome[1][0]._lod == [[0, 1, 2]] and outcome[2] == [None]
    if n_outs == 3:
        assert outcome[1][1] is None and outcome[1][2] is array


def test_a_general_step_without_inputs_stores_what_its_kernel_makes():
    outcome = _both(lambda: (), lambda ctx: np.full((2, 2), 7.0, "float32"), [], 1,
                    flavour="general")
    assert outcome[1][0].array[0, 0] == 7.0


@pytest.mark.parametrize("result", [lambda x: x, lambda x: x.array + 1, lambda x: None])
def test_a_runtime_step_stores_a_tensor_as_it_is_and_an_array_as_a_tensor(result):
    outcome = _both(lambda: (_tensor(2, [[0, 2]]),), lambda ctx, x: result(x), [0], 1,
                    op=RUNTIME_OP, flavour="runtime", out_before=_tensor(1))
    if result(_tensor(1)) is None:
        assert outcome[1][0].array.shape == (1, 2)  # left as it was


def test_a_holder_of_another_class_is_read_and_written_through_its_attribute():
    class Watched(ScopeVariable):
        __slots__ = ("writes",)

        def __setattr__(self, name, value):
            if name == "value":
                object.__setattr__(self, "writes", getattr(self, "writes", 0) + 1)
            object.__setattr__(self, name, value)

    source, out = Watched("x", _tensor(2)), Watched("out")
    flavours.plain(_add, None, [source], out, None, ())()
    np.testing.assert_array_equal(out.value.array, source.value.array)
    assert out.writes == 2  # made, then stored


def test_plain_step_is_one_call_of_a_plain_step():
    x, y, out = ScopeVariable("x", _tensor(2, [[0, 2]])), ScopeVariable("y", _tensor(2)), \
        ScopeVariable("out")
    flavours.plain_step(out, _add, None, x, x, y)
    _same(out.value, LoDTensor(x.value.array + y.value.array, [[0, 2]]))
    flavours.plain_step(out, _add, None, None, y)
    assert out.value._lod == ()
    with pytest.raises(TypeError, match="plain_step expected"):
        flavours.plain_step(out, _add, None)


def test_steps_hold_no_reference_longer_than_they_live():
    x, out = ScopeVariable("x", _tensor(4)), ScopeVariable("out")
    array = x.value.array
    step = flavours.plain(_add, None, [x], out, None, ())
    for _ in range(3):
        step()
    held = sys.getrefcount(array)
    for _ in range(1000):
        step()
    assert sys.getrefcount(array) == held

    class Context:
        pass

    ctx = Context()
    ctx.step = flavours.arrays(lambda c, a: (a, a), ctx, [x], [out, out], {})  # a cycle
    gone = weakref.ref(ctx)
    del ctx
    gc.collect()
    assert gone() is None
