"""A host build refuses fed class ids and embedding ids out of range as the interpreter
does, with its error, before anything of the step has run: every parameter, moment and
batch norm statistic is as it was, and the next good step trains as the interpreter's.
An ignore_index label and a padding id stay allowed. Each way a compiled step is called is
covered: the first call (general path), the bound step in C, the bound step in Python
(a fetch read from the scope), and a build whose sizes are read at run time (LoD)."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument
from fluid_nb.rewriters import native

CLASSES, WORDS, PADDING = 3, 7, 3


def _classifier():
    """Embedding (padding id 3) -> fc -> batch norm -> fc -> softmax cross entropy, and
    Momentum: ids, labels, running statistics and optimizer state in one step."""
    words = fluid.data(name="words", shape=[-1, 1], dtype="int64")
    label = fluid.data(name="label", shape=[-1, 1], dtype="int64")
    emb = fluid.layers.embedding(input=words, size=[WORDS, 4], padding_idx=PADDING,
                                 dtype="float64")
    h = fluid.layers.batch_norm(fluid.layers.fc(emb, 5), act="relu")
    logits = fluid.layers.fc(h, CLASSES)
    loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits, label))
    fluid.optimizer.Momentum(learning_rate=0.1, momentum=0.9).minimize(loss)
    return loss


def _copy(scope):
    copied = fluid.Scope()
    for name, held in scope.vars.items():
        if getattr(held.value, "array", None) is not None:
            copied.var(name).get_tensor().set(np.array(held.value.array))
    return copied


def _build():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        loss = _classifier()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    return main, loss, exe, scope, _copy(scope)


def _feed(words=(0, 1, 2, 3, 4, 5), labels=(0, 1, 2, 0, 1, 2)):
    return {"words": np.array(words, "int64").reshape(-1, 1),
            "label": np.array(labels, "int64").reshape(-1, 1)}


def _state(main, scope):
    """A copy of every persistable the step could change."""
    arrays = {v.name: getattr(getattr(scope.find_var(v.name), "value", None), "array", None)
              for v in main.global_block().vars.values() if v.persistable}
    return {name: np.array(array) for name, array in arrays.items() if array is not None}


def _interpreter_error(main, loss, exe, feed, scope):
    scope = _copy(scope)
    with pytest.raises(InvalidArgument) as caught:
        exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    return str(caught.value)


# the ways a step reaches the compiled code: the first call of a fresh build; the bound
# step in C (the usual repeated step); the bound step in Python (a fetch from the scope)
WAYS = ["first call", "bound C step", "bound Python step"]


def _compiled_step(main, loss, exe, scope, way):
    feed = _feed()
    program = native.compile(main, feed, [loss], scope=scope)
    fetch = [loss] if way != "bound Python step" else [loss, "fc_0.w_0"]
    if way != "first call":
        for _ in range(2):  # the second call runs through the bound layout
            exe.run(program, feed=feed, fetch_list=fetch, scope=scope)
        bound = program._step is not None
        assert bound == (way == "bound C step")
    return program, fetch, feed


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("slot, bad, value", [("label", 4, CLASSES), ("label", 0, -1),
                                             ("words", 2, WORDS), ("words", 5, -2)])
def test_an_id_out_of_range_raises_the_interpreters_error_before_the_step_runs(
        way, slot, bad, value):
    main, loss, exe, scope, _ = _build()
    program, fetch, feed = _compiled_step(main, loss, exe, scope, way)
    feed[slot][bad, 0] = value  # in place: the bound step sees the array it saw before
    before = _state(main, scope)
    with pytest.raises(InvalidArgument) as caught:
        exe.run(program, feed=feed, fetch_list=fetch, scope=scope)
    assert str(caught.value) == _interpreter_error(main, loss, exe, feed, scope)
    op, what = ("softmax_with_cross_entropy", "Label") if slot == "label" else \
        ("lookup_table", "Ids")
    assert str(caught.value).startswith(f"{op}: {what} expected ")
    assert str(caught.value).endswith(f"but received {value}")
    after = _state(main, scope)
    assert sorted(after) == sorted(before)
    for name, array in before.items():
        np.testing.assert_array_equal(after[name], array, err_msg=name)


@pytest.mark.parametrize("way", WAYS)
def test_after_a_refused_step_the_next_trains_as_the_interpreter(way):
    main, loss, exe, scope, interpreted = _build()
    program, fetch, feed = _compiled_step(main, loss, exe, scope, way)
    for _ in range(2 if way != "first call" else 0):  # the compiled scope's steps so far
        exe.run(main, feed=feed, fetch_list=[loss], scope=interpreted)
    feed["label"][0, 0] = CLASSES
    with pytest.raises(InvalidArgument):
        exe.run(program, feed=feed, fetch_list=fetch, scope=scope)
    feed["label"][0, 0] = 1
    for _ in range(3):
        got = exe.run(program, feed=feed, fetch_list=fetch, scope=scope)[0]
        want = exe.run(main, feed=feed, fetch_list=[loss], scope=interpreted)[0]
        np.testing.assert_allclose(got, want, rtol=1e-10)
    for name, array in _state(main, interpreted).items():
        np.testing.assert_allclose(_state(main, scope)[name], array, rtol=1e-9, atol=1e-12,
                                   err_msg=name)


@pytest.mark.parametrize("way", WAYS)
def test_ignore_index_labels_and_padding_ids_are_allowed(way):
    main, loss, exe, scope, interpreted = _build()
    program, fetch, feed = _compiled_step(main, loss, exe, scope, way)
    for _ in range(2 if way != "first call" else 0):
        exe.run(main, feed=feed, fetch_list=[loss], scope=interpreted)
    feed["label"][1, 0] = -100  # softmax_with_cross_entropy's default ignore_index
    feed["words"][:2, 0] = PADDING
    got = exe.run(program, feed=feed, fetch_list=fetch, scope=scope)[0]
    want = exe.run(main, feed=feed, fetch_list=[loss], scope=interpreted)[0]
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_the_host_build_names_the_fed_ids_it_checks_and_a_cuda_source_none():
    main, loss, exe, scope, _ = _build()
    host = native.generate(main, feed=_feed(), fetch=[loss], scope=scope)
    checked = [(r.name, r.op_type, r.slot, r.size, r.also) for r in host.id_ranges]
    assert checked == [("words", "lookup_table", "Ids", WORDS, PADDING),
                       ("label", "softmax_with_cross_entropy", "Label", CLASSES, -100)]
    # on a device the interpreter ignores such ids too (checking would copy them to the
    # host every step), and so does CUDA code
    cuda = native.generate(main, target="cuda", feed=_feed(), fetch=[loss], scope=scope)
    assert cuda.id_ranges == ()


def test_a_build_whose_sizes_are_read_at_run_time_checks_its_fed_labels():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        rows = fluid.data(name="rows", shape=[-1, 4], dtype="float64", lod_level=1)
        label = fluid.data(name="label", shape=[-1, 1], dtype="int64")
        pooled = fluid.layers.sequence_pool(rows, "sum")
        loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(
            fluid.layers.fc(pooled, CLASSES), label))
        fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)

    def feed(labels):
        rows = np.arange(24, dtype="float64").reshape(6, 4) / 24
        return {"rows": fluid.create_lod_tensor(rows, [[2, 4]], fluid.CPUPlace()),
                "label": np.array(labels, "int64").reshape(-1, 1)}
    program = native.compile(main, feed([0, 2]), [loss], scope=scope)
    assert program.source.dynamic
    exe.run(program, feed=feed([0, 2]), fetch_list=[loss], scope=scope)
    before = _state(main, scope)
    for labels in ([0, 3], [-1, 0]):
        with pytest.raises(InvalidArgument) as caught:
            exe.run(program, feed=feed(labels), fetch_list=[loss], scope=scope)
        assert str(caught.value) == ("softmax_with_cross_entropy: Label expected class ids "
                                     f"in [0, 3) or ignore_index -100, but received "
                                     f"{3 if labels[1] else -1}")
    for name, array in before.items():
        np.testing.assert_array_equal(_state(main, scope)[name], array, err_msg=name)
