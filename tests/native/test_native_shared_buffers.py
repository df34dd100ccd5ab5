"""A copy the compiled code would make (a reshape, a gradient passed through an addition, an
assign) moves no bytes where one buffer serves both variables: the copy takes its source's
buffer, and the runtime's copy of a buffer onto itself does nothing.

One buffer serves when every reader finds there the value a buffer of its own would hold:
both are temporaries of one type and size, the copy is written by its op alone and read by
no op before it, and nothing writes the source again after the copy. Anything else keeps a
buffer of its own, and the compiled step gives the interpreter's values either way."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.rewriters import native
from fluid_nb.rewriters.native.generate import shared_buffers

from tests.native.test_native_training_models import (_assert_same_state, _programs,
                                                      _text_feeds, _train_both, _transformer)


def _program(variables, ops):
    """A block of float32 variables ``{name: shape}`` and ``ops``: (type, inputs, outputs,
    attrs) appended in order."""
    program = fluid.Program()
    block = program.global_block()
    for name, shape in variables.items():
        block.create_var(name=name, shape=shape, dtype="float32")
    for op_type, inputs, outputs, attrs in ops:
        block.append_op(type=op_type, inputs=inputs, outputs=outputs, attrs=attrs)
    return program


def _shares(source):
    return {v.name: v.shares for v in source.variables if v.shares is not None}


def _compiled_and_interpreted(program, feeds, fetch, scope_values=None):
    """The fetched values of each feed, compiled and interpreted, and the source."""
    def scope():
        held = fluid.Scope()
        for name, value in (scope_values or {}).items():
            held.var(name).get_tensor().set(value.copy())
        return held
    exe = fluid.Executor(fluid.CPUPlace())
    compiled_scope, interpreted_scope = scope(), scope()
    compiled = native.compile(program, feeds[0], fetch, scope=compiled_scope)
    got = [exe.run(compiled, feed=f, fetch_list=fetch, scope=compiled_scope) for f in feeds]
    want = [exe.run(program, feed=f, fetch_list=fetch, scope=interpreted_scope) for f in feeds]
    return got, want, compiled.source


def _assert_the_interpreters(got, want):
    for got_step, want_step in zip(got, want):
        for value, expected in zip(got_step, want_step):
            np.testing.assert_array_equal(value, expected)


def _feeds(shape=(4, 6)):
    rng = np.random.RandomState(0)
    return [{"x": rng.uniform(-1, 1, shape).astype("float32")} for _ in range(2)]


def test_a_reshape_reads_the_buffer_of_what_it_reshapes():
    program = _program({"x": [4, 6], "a": [4, 6], "b": [6, 4], "xs": [0, 4, 6], "c": [6, 4]}, [
        ("relu", {"X": "x"}, {"Out": "a"}, {}),
        ("reshape2", {"X": "a"}, {"Out": "b", "XShape": "xs"}, {"shape": [6, 4]}),
        ("scale", {"X": "b"}, {"Out": "c"}, {"scale": 2.0})])
    got, want, source = _compiled_and_interpreted(program, _feeds(), ["b", "c"])
    assert _shares(source) == {"b": "a"}
    assert "b: float [6, 4] (temporary, in a's buffer)" in source.source
    # each step's values, the reshaped shape among them, as the interpreter's
    _assert_the_interpreters(got, want)
    assert all(value.shape == (6, 4) for step in got for value in step)
    assert not np.array_equal(got[0][0], got[1][0])


def test_a_chain_of_copies_shares_the_first_buffer():
    program = _program({"x": [4, 6], "a": [4, 6], "b": [24], "xs": [0, 4, 6], "c": [24]}, [
        ("relu", {"X": "x"}, {"Out": "a"}, {}),
        ("reshape2", {"X": "a"}, {"Out": "b", "XShape": "xs"}, {"shape": [24]}),
        ("assign", {"X": "b"}, {"Out": "c"}, {})])
    got, want, source = _compiled_and_interpreted(program, _feeds(), ["a", "c"])
    assert _shares(source) == {"b": "a", "c": "a"}
    for got_step, want_step in zip(got, want):
        np.testing.assert_array_equal(got_step[1], want_step[1])
        np.testing.assert_array_equal(got_step[1], np.maximum(got_step[0], 0).ravel())


@pytest.mark.parametrize("rewritten", ["a", "b"])
def test_a_copy_or_its_source_written_again_keeps_a_buffer_of_its_own(rewritten):
    # one buffer for a and b would hand b the second value of a, or let the second write
    # of b change a
    program = _program({"x": [4, 6], "a": [4, 6], "b": [4, 6]}, [
        ("relu", {"X": "x"}, {"Out": "a"}, {}),
        ("assign", {"X": "a"}, {"Out": "b"}, {}),
        ("scale", {"X": "x"}, {"Out": rewritten}, {"scale": 3.0})])
    got, want, source = _compiled_and_interpreted(program, _feeds(), ["a", "b"])
    assert _shares(source) == {}
    _assert_the_interpreters(got, want)
    for a, b in got:
        assert not np.array_equal(a, b)


def test_a_copy_read_before_its_op_keeps_a_buffer_of_its_own():
    # (b read before the assign writes it: the value its buffer kept from the step before)
    program = _program({"x": [4, 6], "a": [4, 6], "b": [4, 6], "c": [4, 6]}, [
        ("scale", {"X": "b"}, {"Out": "c"}, {"scale": 2.0}),
        ("relu", {"X": "x"}, {"Out": "a"}, {}),
        ("assign", {"X": "a"}, {"Out": "b"}, {})])
    ops = program.global_block().ops
    shapes = {name: ((4, 6), np.dtype("float32")) for name in "xabc"}
    assert shared_buffers(ops, {2: [("a", "b")]}, {"a", "b", "c"}, shapes) == {}
    # the same copy with nothing reading b before it shares
    assert shared_buffers(ops[1:], {1: [("a", "b")]}, {"a", "b", "c"}, shapes) == {"b": "a"}
    # and none of another type or size
    for other in (((4, 6), np.dtype("float64")), ((4, 5), np.dtype("float32"))):
        assert shared_buffers(ops[1:], {1: [("a", "b")]}, {"a", "b", "c"},
                              dict(shapes, b=other)) == {}


def test_feeds_and_parameters_keep_their_buffers():
    weight = np.arange(24, dtype="float32").reshape(4, 6)
    program = _program({"x": [4, 6], "w": [4, 6], "fx": [24], "fw": [24], "xs": [0, 4, 6],
                        "ws": [0, 4, 6], "s": [24]}, [
        ("reshape2", {"X": "x"}, {"Out": "fx", "XShape": "xs"}, {"shape": [24]}),
        ("reshape2", {"X": "w"}, {"Out": "fw", "XShape": "ws"}, {"shape": [24]}),
        ("elementwise_add", {"X": "fx", "Y": "fw"}, {"Out": "s"}, {})])
    program.global_block().var("w").persistable = True
    got, want, source = _compiled_and_interpreted(program, _feeds(), ["fx", "fw", "s"],
                                                  {"w": weight})
    assert _shares(source) == {}
    _assert_the_interpreters(got, want)


def test_a_transformer_step_passes_its_reshapes_and_gradients_on_in_place():
    main, startup, loss = _programs(_transformer)
    program, want, got, interpreted, compiled = _train_both(main, startup, loss,
                                                            _text_feeds())
    shares = _shares(program.source)
    ops = main.global_block().ops
    written_by = {name: op.type for op in ops for names in op.outputs.values()
                  for name in names}
    kinds = {written_by[name] for name in shares}
    assert {"reshape2", "reshape2_grad", "elementwise_add_grad"} <= kinds
    np.testing.assert_allclose(np.ravel(got), np.ravel(want), rtol=1e-9)
    assert not np.allclose(want[0], want[-1])
    _assert_same_state(main, interpreted, compiled)
