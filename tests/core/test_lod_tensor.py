"""LoDTensor: offset LoD, sequence lengths, validation."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument


def test_design_document_lod_example():
    """The design documents' sentence batch: four sequences of 5, 3, 2 and 4 words."""
    t = fluid.create_lod_tensor(np.arange(14).reshape(14, 1).astype("float32"), [[5, 3, 2, 4]],
                                fluid.CPUPlace())
    assert t.lod() == [[0, 5, 8, 10, 14]]
    assert t.recursive_sequence_lengths() == [[5, 3, 2, 4]]
    assert t.shape() == [14, 1]
    assert t.has_valid_recursive_sequence_lengths()


def test_two_level_lod_example():
    t = fluid.LoDTensor()
    t.set(np.zeros((14, 1), "float32"), fluid.CPUPlace())
    t.set_lod([[0, 2, 3, 5, 7, 8, 10, 13, 14]])
    t.set_recursive_sequence_lengths([[2, 3, 1, 2], [2, 1, 2, 2, 1, 2, 3, 1]])
    assert t.lod() == [[0, 2, 5, 6, 8], [0, 2, 3, 5, 7, 8, 10, 13, 14]]


def test_list_of_id_sequences_becomes_int64_column():
    t = fluid.create_lod_tensor([[1, 2, 3], [4, 5]], [[3, 2]], fluid.CPUPlace())
    assert np.asarray(t).dtype == np.int64 and np.asarray(t).shape == (5, 1)


@pytest.mark.parametrize("lod, message", [
    ([[1, 5, 14]], "start at 0"),
    ([[0, 8, 5, 14]], "non-decreasing"),
    ([[0, 5, 13]], "number of rows"),
    ([[0, 1, 2], [0, 5, 8, 14]], "number of sequences"),
])
def test_invalid_lod_is_rejected_with_a_clear_message(lod, message):
    t = fluid.LoDTensor()
    t.set(np.zeros((14, 1), "float32"), fluid.CPUPlace())
    with pytest.raises(InvalidArgument, match=message):
        t.set_lod(lod)


def test_design_documents_two_level_example_in_row_offsets_is_paddles_lod():
    """Figure (b) of the design documents draws both levels in rows; Paddle stores the top
    level in units of the level below."""
    lod = fluid.lod_from_row_offsets([[0, 5, 8, 10, 14], [0, 2, 3, 5, 7, 8, 10, 13, 14]])
    assert lod == [[0, 3, 5, 6, 8], [0, 2, 3, 5, 7, 8, 10, 13, 14]]
    t = fluid.LoDTensor()
    t.set(np.arange(14, dtype="float32").reshape(14, 1), fluid.CPUPlace())
    t.set_lod(lod)
    assert t.recursive_sequence_lengths() == [[3, 2, 1, 2], [2, 1, 2, 2, 1, 2, 3, 1]]
    # the paragraphs still cover rows 0-5, 5-8, 8-10, 10-14
    sentences = lod[1]
    assert [sentences[i] for i in lod[0]] == [0, 5, 8, 10, 14]


def test_design_documents_row_offsets_given_as_paddles_lod_are_rejected_clearly():
    t = fluid.LoDTensor()
    t.set(np.zeros((14, 1), "float32"), fluid.CPUPlace())
    with pytest.raises(fluid.errors.InvalidArgument, match="number of sequences in level 1"):
        t.set_lod([[0, 5, 8, 10, 14], [0, 2, 3, 5, 7, 8, 10, 13, 14]])


def test_row_offsets_that_split_a_lower_sequence_are_rejected():
    with pytest.raises(fluid.errors.InvalidArgument, match=r"rows \[4\]"):
        fluid.lod_from_row_offsets([[0, 4, 14], [0, 2, 3, 5, 14]])


def test_fractional_lod_offsets_are_refused_not_truncated():
    t = fluid.LoDTensor(np.ones((3, 1), "float32"))
    with pytest.raises(InvalidArgument, match="integers, but received 1.5"):
        t.set_lod([[0, 1.5, 3]])
    t.set_lod([[0, 1.0, 3]])  # an integral float is an integer value
    assert t.lod() == [[0, 1, 3]] and all(type(x) is int for x in t.lod()[0])


def test_set_lod_none_and_nan_are_invalid_arguments():
    t = fluid.LoDTensor(np.ones((3, 1), "float32"))
    for bad in (None, [[0, float("nan"), 3]], 5, [5]):
        with pytest.raises(InvalidArgument, match="set_lod: LoD"):
            t.set_lod(bad)
    assert t.lod() == []


def test_lod_given_to_the_constructor_is_checked():
    with pytest.raises(InvalidArgument, match="non-decreasing"):
        fluid.LoDTensor(np.ones((3, 1), "float32"), [[0, 2, 1, 3]])


def test_print_shows_lod_dims_dtype_and_the_data():
    """``print(t)`` writes what Fluid 1.x writes: LoD, dims, layout, dtype, flattened data."""
    t = fluid.create_lod_tensor(np.array([[0.5], [1], [2.25]], "float32"), [[1, 2]],
                                fluid.CPUPlace())
    assert str(t) == ("\tlod: {{0, 1, 3}}\n\tdim: 3, 1\n\tlayout: NCHW\n\tdtype: float32\n"
                      "\tdata: [0.5 1 2.25]\n")
    assert "data: [1 0]" in str(fluid.LoDTensor(np.array([True, False])))
    assert "not initialised" in str(fluid.LoDTensor())


def test_print_of_a_big_tensor_counts_what_it_leaves_out():
    text = str(fluid.LoDTensor(np.zeros((30, 50), "int64")))
    assert text.endswith(" ... (500 more)]\n") and text.count(" 0") == 999


class _Fetched(np.ndarray):
    """An ndarray subclass (as the executor's fetched arrays are)."""


@pytest.mark.parametrize("args, kwargs", [
    ((), {}), ((None,), {}), ((np.ones(3, "float32"),), {}),
    ((np.ones(3, "float32"), ()), {}), ((np.ones(3, "float32"), None), {}),
    ((np.ones(3, "float32"), []), {}), ((np.ones((3, 1)), [[0, 1, 3]]), {}),
    (([[2, 1]],), {}), ((np.float32(2.5),), {}), ((3,), {}),
    ((np.ones(2).view(_Fetched),), {}), ((), {"array": np.ones(2), "lod": ()}),
    ((np.ones((3, 1)),), {"lod": [[0, 3]]}),
])
def test_the_constructor_in_c_makes_what_the_python_constructor_makes(args, kwargs):
    from fluid_nb.tensor.tensor import LoDTensor
    made = LoDTensor(*args, **kwargs)
    by_python = LoDTensor.__new__(LoDTensor)
    by_python._init(*args, **kwargs)
    assert type(made) is LoDTensor
    assert type(made.array) is type(by_python.array)
    if made.array is not None:
        np.testing.assert_array_equal(made.array, by_python.array)
        given = kwargs.get("array", args[0] if args else None)
        assert (made.array is given) == (by_python.array is given)  # no copy either way
    assert made._lod == by_python._lod and type(made._lod) is type(by_python._lod)


def test_the_constructor_in_c_refuses_what_the_python_one_refuses():
    from fluid_nb.tensor.tensor import LoDTensor
    with pytest.raises(InvalidArgument, match="LoD"):
        LoDTensor(np.ones((3, 1)), [[0, 2, 1]])
    with pytest.raises(TypeError):
        LoDTensor(np.ones(3), (), "a third argument")
    tensor = LoDTensor(np.ones(3))
    tensor.__init__(np.zeros(2))  # a second call replaces, as in Python
    assert tensor.array.shape == (2,) and tensor._lod == ()


def test_a_tensor_pickles_and_copies_with_its_data_and_lod():
    import copy
    import pickle
    from fluid_nb.tensor.tensor import LoDTensor
    tensor = LoDTensor(np.arange(6.0).reshape(3, 2), [[0, 1, 3]])
    for again in (pickle.loads(pickle.dumps(tensor)), copy.copy(tensor),
                  copy.deepcopy(tensor)):
        assert type(again) is LoDTensor and again._lod == [[0, 1, 3]]
        np.testing.assert_array_equal(again.array, tensor.array)
    empty = pickle.loads(pickle.dumps(LoDTensor()))
    assert empty.array is None and empty._lod == ()


def _outcome(check):
    try:
        check()
    except InvalidArgument as error:
        return str(error)
    return "valid"


def _random_lod(rng):
    """Offsets of one to three levels, valid or broken in one of the ways check_lod names."""
    lengths = [list(rng.randint(0, 4, rng.randint(1, 6)))]
    for _ in range(rng.randint(0, 3)):
        lengths.append(list(rng.randint(0, 4, sum(lengths[-1]))))
    lod = [[0] + np.cumsum(level).tolist() for level in lengths]
    breakage = rng.randint(6)
    level = lod[rng.randint(len(lod))]
    if breakage == 1:
        level[0] = 1  # not starting at 0
    elif breakage == 2 and len(level) > 2:
        level[1], level[2] = level[2] + 1, level[1]  # decreasing
    elif breakage == 3:
        level.append(level[-1] + 1)  # one sequence more than the level below holds
    elif breakage == 4:
        level.clear()
    rows = lod[-1][-1] if lod[-1] else 0
    return lod, rows + (rng.randint(-1, 2) if rng.randint(4) == 0 else 0)


def test_a_plain_lod_is_checked_as_the_general_path_checks_it():
    """Levels of ints take the C check; the same levels as arrays take the Python one: they
    accept the same LoDs and name the same fault in the same words."""
    from fluid_nb.tensor.tensor import check_lod, checked_lod
    rng = np.random.RandomState(0)
    seen = set()
    for _ in range(400):
        lod, rows = _random_lod(rng)
        as_arrays = [np.array(level, dtype="int64") for level in lod]
        for rows_given in (rows, None):
            plain = _outcome(lambda: check_lod(lod, rows_given))
            general = _outcome(lambda: check_lod(as_arrays, rows_given))
            assert plain == general, (lod, rows_given)
            assert _outcome(lambda: checked_lod(lod, rows_given)) == plain
            seen.add(plain.split("expected")[-1][:12] if plain != "valid" else plain)
    assert len(seen) >= 5  # valid, and each fault above (start, order, end, rows)


@pytest.mark.parametrize("lod", [
    [[0, True, 2]],  # a bool is not an offset
    [[0, 1, 2 ** 70]],  # past int64
    ([0, 1, 3],),  # a tuple of levels
    [(0, 1, 3)],
])
def test_what_the_c_check_leaves_is_still_checked_or_taken(lod):
    t = fluid.LoDTensor()
    t.set(np.zeros((3, 1), "float32"), fluid.CPUPlace())
    if lod[0][-1] == 3:
        t.set_lod(lod)
        assert t.lod() == [[0, 1, 3]]
    else:
        with pytest.raises(InvalidArgument):
            t.set_lod(lod)

