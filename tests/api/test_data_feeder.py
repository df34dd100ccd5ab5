"""DataFeeder turns a list of samples into feed tensors (with LoD for sequences)."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb import layers
from fluid_nb.api.data_feeder import DataFeeder
from fluid_nb.errors import InvalidArgument


def programs():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        img = layers.data("img", [2, 2])
        label = layers.data("label", [1], dtype="int64")
        words = layers.data("words", [1], dtype="int64", lod_level=1)
        para = layers.data("para", [1], dtype="int64", lod_level=2)
    return main, img, label, words, para


def test_dense_feed_reshapes_to_the_data_shape():
    main, img, label, _, _ = programs()
    feeder = DataFeeder([img, label], fluid.CPUPlace(), program=main)
    batch = [(np.arange(4).tolist(), 3), (np.ones(4), 5)]
    feed = feeder.feed(batch)
    assert sorted(feed) == ["img", "label"]
    arr = np.array(feed["img"])
    assert arr.shape == (2, 2, 2) and arr.dtype == np.float32
    np.testing.assert_array_equal(arr[0], [[0, 1], [2, 3]])
    lab = np.array(feed["label"])
    assert lab.shape == (2, 1) and lab.dtype == np.int64 and lab[:, 0].tolist() == [3, 5]
    assert feed["img"].lod() == []


def test_sequences_get_lod():
    main, _, _, words, para = programs()
    feeder = DataFeeder(["words", "para"], fluid.CPUPlace(), program=main)
    batch = [([1, 2, 3], [[1], [2, 3]]), ([4], [[4, 5, 6]])]
    feed = feeder.feed(batch)
    np.testing.assert_array_equal(np.array(feed["words"])[:, 0], [1, 2, 3, 4])
    assert feed["words"].lod() == [[0, 3, 4]]
    assert feed["words"].recursive_sequence_lengths() == [[3, 1]]
    assert feed["para"].recursive_sequence_lengths() == [[2, 1], [1, 2, 3]]
    assert np.array(feed["para"]).shape == (6, 1)


def test_feed_runs_through_the_executor():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = layers.data("x", [3])
        y = layers.reduce_sum(x, dim=[1])
    feeder = DataFeeder([x], fluid.CPUPlace(), program=main)
    out = fluid.Executor(fluid.CPUPlace()).run(
        main, feed=feeder.feed([([1, 2, 3],), ([4, 5, 6],)]), fetch_list=[y],
        scope=fluid.Scope())[0]
    np.testing.assert_allclose(out, [6, 15])


def test_decorate_reader_yields_feed_dicts():
    main, img, label, _, _ = programs()
    feeder = DataFeeder([img, label], fluid.CPUPlace(), program=main)

    def reader():
        for i in range(3):
            yield [(np.full(4, i), i)] * 2
    feeds = list(feeder.decorate_reader(reader, multi_devices=False)())
    assert len(feeds) == 3 and np.array(feeds[2]["label"]).tolist() == [[2], [2]]


def test_errors_name_the_problem():
    main, img, label, _, _ = programs()
    feeder = DataFeeder([img, label], fluid.CPUPlace(), program=main)
    with pytest.raises(InvalidArgument, match="2 entries"):
        feeder.feed([(np.zeros(4),)])
    with pytest.raises(InvalidArgument, match="reshape"):
        feeder.feed([(np.zeros(5), 1)])
    with pytest.raises(InvalidArgument, match="nope"):
        DataFeeder(["nope"], fluid.CPUPlace(), program=main)


def test_any_sample_sequence_from_any_iterable_feeds_alike():
    """Tuples, lists, named tuples and a mix of them, from a list or a generator: the same
    tensors, each of them the minibatch's own array (changing a sample afterwards changes
    nothing fed)."""
    import collections
    main, img, label, words, _ = programs()
    feeder = DataFeeder([img, label, words], fluid.CPUPlace(), program=main)
    Sample = collections.namedtuple("Sample", "img label words")
    rows = [np.arange(4.0), np.ones(4)]
    forms = [
        [(rows[0], 1, [7, 8]), (rows[1], 2, [9])],
        [[rows[0], 1, [7, 8]], (rows[1], 2, [9])],
        [Sample(rows[0], 1, [7, 8]), Sample(rows[1], 2, [9])],
        (sample for sample in [(rows[0], 1, [7, 8]), (rows[1], 2, [9])]),
    ]
    for batch in forms:
        feed = feeder.feed(batch)
        np.testing.assert_array_equal(np.array(feed["img"]).reshape(2, 4), rows)
        assert np.array(feed["label"]).tolist() == [[1], [2]]
        assert np.array(feed["words"]).tolist() == [[7], [8], [9]]
        assert feed["words"].recursive_sequence_lengths() == [[2, 1]]
    rows[0][:] = -1
    np.testing.assert_array_equal(np.array(feed["img"])[0].ravel(), np.arange(4.0))


def test_a_bad_sample_is_named_wherever_it_stands():
    main, img, label, _, _ = programs()
    feeder = DataFeeder([img, label], fluid.CPUPlace(), program=main)
    good = (np.zeros(4), 1)
    with pytest.raises(InvalidArgument, match="each sample expected 2 entries .* received 3"):
        feeder.feed([good, good, (np.zeros(4), 1, 2)])
    with pytest.raises(InvalidArgument, match=r"each sample expected a tuple or list of 2 "
                                              r"entries .* but received 5 \(int\)"):
        feeder.feed([good, 5])
    with pytest.raises(InvalidArgument, match="received 'ab'"):
        feeder.feed([good, "ab"])


def by_converter(feeder, batch):
    """What ``feeder.feed(batch)`` gives with every column through its converter (the way
    for LoD, casts, reshapes and refusals), or the error it raises."""
    stacked, feeder._stacked = feeder._stacked, [None] * len(feeder._stacked)
    try:
        return feeder.feed(batch)
    except InvalidArgument as refused:
        return refused
    finally:
        feeder._stacked = stacked


def fed_as_by_converter(feeder, batch, converters=True):
    """``feeder.feed(batch)``, checked against :func:`by_converter`: the same tensors (names,
    values, dtypes, shapes, LoD) or the same refusal with the same message (then None).
    ``converters=False``: no column may go through a converter."""
    expected = by_converter(feeder, batch)
    if isinstance(expected, InvalidArgument):
        with pytest.raises(InvalidArgument) as raised:
            feeder.feed(batch)
        assert str(raised.value) == str(expected)
        return None
    if converters:
        got = feeder.feed(batch)
    else:
        def no_converter(index):
            raise AssertionError("a converter was made")
        made, feeder._converter = feeder._converter, no_converter
        try:
            got = feeder.feed(batch)
        finally:
            feeder._converter = made
    assert list(got) == list(expected)
    for name in got:
        want, have = np.array(expected[name]), np.array(got[name])
        assert have.dtype == want.dtype and have.shape == want.shape, (name, batch)
        np.testing.assert_array_equal(have, want)
        assert got[name].lod() == expected[name].lod()
    return got


ROW = np.arange(4, dtype="float32")


@pytest.mark.parametrize("case,batch", [
    ("rows of the declared dtype", [(ROW, 3), (ROW + 1, 5)]),
    ("rows as lists", [(ROW.tolist(), 3), ([4.0, 5.0, 6.0, 7.0], 5)]),
    ("float64 rows into float32", [(ROW.astype("float64"), 3), (ROW * 2.0, 5)]),
    ("int rows into float32", [(np.arange(4), 3), (np.arange(4) * 2, 5)]),
    ("rows already [2, 2]", [(ROW.reshape(2, 2), 3), (ROW.reshape(2, 2), 5)]),
    ("labels as [1] arrays", [(ROW, np.array([3])), (ROW, np.array([5]))]),
    ("NaN and infinities", [(np.array([np.nan, np.inf, -np.inf, 0], "float32"), 1)]),
    ("one sample", [(ROW, 7)]),
    ("no sample", []),
    ("ragged rows", [(ROW, 3), (ROW[:3], 5)]),
    ("a row of the wrong width", [(ROW[:3], 3), (ROW[:3], 5)]),
    ("a None entry", [(ROW, None), (ROW, 5)]),
    ("a string entry", [(ROW, "3"), (ROW, 5)]),
    ("float labels into int64", [(ROW, 3.5), (ROW, 5)]),
    ("rows viewed from a reader's float64 array", list(zip(np.arange(8.0).reshape(2, 4), (3, 5)))),
    ("strided rows", [(np.arange(8.0)[::2], 3), (np.arange(8.0)[1::2], 5)]),
    ("byte-swapped rows", [(ROW.astype(">f4"), 3), (ROW.astype(">f4"), 5)]),
    ("rows of two dtypes", [(ROW, 3), (ROW.astype("float64"), 5)]),
    ("bool rows into float32", [(ROW > 1, 3), (ROW > 2, 5)]),
    ("complex rows", [(ROW.astype("complex64"), 3), (ROW.astype("complex64"), 5)]),
    ("rows [4, 1] against [2, 2]", [(ROW.reshape(4, 1), 3), (ROW.reshape(4, 1), 5)]),
    ("rows of 8 values", [(np.arange(8.0), 3), (np.arange(8.0), 5)]),
    ("a masked-array row", [(np.ma.array(ROW), 3), (np.ma.array(ROW), 5)]),
    ("a list row before array rows", [(ROW.tolist(), 3), (ROW, 5)]),
    ("0-d array labels", [(ROW, np.array(3)), (ROW, np.array(5))]),
    ("NumPy int labels", [(ROW, np.int64(3)), (ROW, np.int32(5))]),
    ("bool labels", [(ROW, True), (ROW, False)]),
    ("a label past int64", [(ROW, 2 ** 63), (ROW, 5)]),
    ("a label past uint64", [(ROW, 2 ** 64), (ROW, 5)]),
    ("a float label after an int one", [(ROW, 3), (ROW, 5.0)]),
    ("negative labels", [(ROW, -3), (ROW, -(2 ** 63))]),
])
def test_a_stacked_column_is_what_its_converter_makes(case, batch):
    """A column of entries of the declared dtype and shape is stacked straight into its
    tensor; every other column goes through the converter; either way the feed (values,
    dtype, shape, LoD) or the refusal is the same."""
    main, img, label, _, _ = programs()
    feeder = DataFeeder([img, label], fluid.CPUPlace(), program=main)
    got = fed_as_by_converter(feeder, batch)
    assert got is None or list(got) == ["img", "label"], case


@pytest.mark.parametrize("dtype,entries", [
    ("float32", [3, -5, 2 ** 40 + 1]),
    ("float32", [0.1, 2.5, -1e30]),
    ("float64", [0.1, 2.5, -1e300]),
    ("float64", [3, 5, 7]),
    ("int32", [3, -5, 2 ** 31 + 7]),
    ("int64", [True, 5, 7]),
    ("float32", [1e300, 1.0, 2.0]),
])
def test_a_column_of_python_numbers_is_what_its_converter_makes(dtype, entries):
    """Labels as a reader yields them (Python ints or floats) into a variable of any dtype:
    the stacked column has the converter's values, bit for bit, and its rounding and
    wrapping where the dtype is narrower."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        label = layers.data("label", [1], dtype=dtype)
    feeder = DataFeeder([label], fluid.CPUPlace(), program=main)
    batch = [(entry,) for entry in entries]
    with np.errstate(over="ignore"):
        expected, got = by_converter(feeder, batch), feeder.feed(batch)
    want, have = np.array(expected["label"]), np.array(got["label"])
    assert have.dtype == want.dtype == np.dtype(dtype) and have.shape == want.shape == (3, 1)
    np.testing.assert_array_equal(have, want)


def test_the_book_readers_minibatches_are_stacked_without_a_converter():
    """uci_housing's reader yields float64 rows (views of its table) for fit_a_line's
    float32 layers, MNIST's float32 images and int labels: every column is stacked in one
    call, with the converter's values."""
    import itertools
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = layers.data("x", [13], dtype="float32")
        y = layers.data("y", [1], dtype="float32")
        img = layers.data("img", [784], dtype="float32")
        label = layers.data("label", [1], dtype="int64")
    rng = np.random.RandomState(0)
    houses = list(itertools.islice(fluid.dataset.uci_housing.train()(), 20))
    digits = [(rng.uniform(-1, 1, 784).astype("float32"), int(rng.randint(10)))
              for _ in range(64)]
    assert houses[0][0].dtype == np.float64 and not houses[0][0].flags.owndata
    for variables, batch, shapes in (([x, y], houses, [(20, 13), (20, 1)]),
                                     ([img, label], digits, [(64, 784), (64, 1)])):
        feeder = DataFeeder(variables, fluid.CPUPlace(), program=main)
        got = fed_as_by_converter(feeder, batch, converters=False)
        assert [np.array(got[v.name]).shape for v in variables] == shapes


def sequence_programs():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        words = layers.data("words", [1], dtype="int64", lod_level=1)
        values = layers.data("values", [1], dtype="float32", lod_level=1)
        pairs = layers.data("pairs", [2], dtype="float32", lod_level=1)
    return main, words, values, pairs


@pytest.mark.parametrize("case,variable,batch", [
    ("word ids in lists", "words", [[1, 2, 3], [4], [5, 6]]),
    ("word ids in tuples and lists", "words", [(1, 2, 3), [4]]),
    ("an empty sequence among others", "words", [[1, 2], [], [3]]),
    ("only empty sequences", "words", [[], []]),
    ("no sample", "words", []),
    ("floats into int64", "words", [[1.5, 2.0], [3.0]]),
    ("an int then a float", "words", [[1, 2.0], [3]]),
    ("NumPy ints", "words", [[np.int64(1), 2], [3]]),
    ("bools", "words", [[True, False], [True]]),
    ("an id past int64", "words", [[1, 2 ** 63], [3]]),
    ("arrays as sequences", "words", [np.array([1, 2]), np.array([3])]),
    ("rows as items", "words", [[[1], [2]], [[3]]]),
    ("a string", "words", ["ab", [3]]),
    ("a number, not a sequence", "words", [5, [3]]),
    ("floats", "values", [[0.5, 1.5], [2.5]]),
    ("ints into float32", "values", [[1, 2], [2 ** 40 + 1]]),
    ("flat items for rows of 2", "pairs", [[0.5, 1.5, 2.5, 3.5], [4.5, 5.5]]),
    ("an odd number of items for rows of 2", "pairs", [[0.5, 1.5, 2.5], [4.5, 5.5]]),
    ("rows of 2", "pairs", [[[0.5, 1.5], [2.5, 3.5]], [[4.5, 5.5]]]),
])
def test_a_stacked_sequence_column_is_what_its_converter_makes(case, variable, batch):
    """A column of sequences (each a list or tuple of Python ints, or of floats) for a
    variable of one LoD level is stacked with its lengths; anything else goes through the
    converter; either way the values, dtype, shape and LoD, or the refusal, are the same."""
    main, *variables = sequence_programs()
    feeder = DataFeeder([v for v in variables if v.name == variable], fluid.CPUPlace(),
                        program=main)
    got = fed_as_by_converter(feeder, [(entry,) for entry in batch])
    assert got is None or list(got) == [variable], case


def test_a_text_readers_minibatch_is_stacked_without_a_converter():
    """A sentiment reader's samples (a list of word ids, an int label): both columns are
    stacked, the words with their LoD."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        words = layers.data("words", [1], dtype="int64", lod_level=1)
        label = layers.data("label", [1], dtype="int64")
    rng = np.random.RandomState(0)
    batch = [(rng.randint(0, 5000, rng.randint(5, 51)).tolist(), int(rng.randint(2)))
             for _ in range(32)]
    feeder = DataFeeder([words, label], fluid.CPUPlace(), program=main)
    got = fed_as_by_converter(feeder, batch, converters=False)
    assert got["words"].recursive_sequence_lengths() == [[len(s[0]) for s in batch]]
    assert all(np.array(got[name]).dtype == np.int64 for name in ("words", "label"))


def test_a_stacked_column_is_a_new_array_the_samples_do_not_share():
    main, img, label, _, _ = programs()
    feeder = DataFeeder([img, label], fluid.CPUPlace(), program=main)
    rows = [ROW.reshape(2, 2).copy(), ROW.reshape(2, 2).copy()]
    feed = feeder.feed([(rows[0], 1), (rows[1], 2)])
    stacked = feed["img"].array
    assert stacked.shape == (2, 2, 2) and not any(np.shares_memory(stacked, r) for r in rows)
    rows[0][0, 0] = 99.0
    assert stacked[0, 0, 0] == 0.0


def test_a_book_scripts_minibatch_is_stacked_without_a_converter():
    """fit_a_line's reader yields (13 features, [price]) rows: both columns are stacked, and
    give what the converters give."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = layers.data("x", [13], dtype="float32")
        y = layers.data("y", [1], dtype="float32")
    rng = np.random.RandomState(0)
    batch = [(rng.rand(13).astype("float32"), rng.rand(1).astype("float32"))
             for _ in range(20)]
    feeder = DataFeeder([x, y], fluid.CPUPlace(), program=main)
    got = fed_as_by_converter(feeder, batch, converters=False)
    assert all(np.array(got[name]).dtype == np.float32 for name in ("x", "y"))
    assert np.array(got["x"]).shape == (20, 13) and np.array(got["y"]).shape == (20, 1)


def test_a_feeder_for_a_gpu_is_made_without_touching_its_array_module():
    """Only a feed on the host stacks columns; making the feeder asks nothing of CuPy."""
    main, img, label, _, _ = programs()
    feeder = DataFeeder([img, label], fluid.CUDAPlace(0), program=main)
    assert feeder._stacked == [None, None] and feeder.place._xp is None


def random_entry(rng, kind, width):
    """One sample's entry of ``kind`` for a variable of ``width`` values a row."""
    if kind == "row":
        dtype = rng.choice(["float32", "float64", "int64", "int32", "uint8", "bool", ">f4"])
        row = (rng.standard_normal(width) * 100).astype(dtype)
        return row[::2] if rng.random_sample() < 0.05 else row
    if kind == "int":
        return [0, 1, -7, 2 ** 31 + 1, 2 ** 62, 2 ** 63, -(2 ** 63)][rng.randint(7)]
    if kind == "float":
        return float(rng.choice([0.5, -1e30, np.nan, np.inf, 3.0]))
    if kind == "ints":
        return [int(v) for v in rng.randint(-5, 5000, rng.randint(0, 6))]
    if kind == "floats":
        return [float(v) for v in rng.standard_normal(rng.randint(0, 6))]
    odd = [None, "ab", [1, [2]], np.int64(3), True, 2.5]
    return odd[rng.randint(len(odd))]


@pytest.mark.parametrize("seed", range(40))
def test_random_minibatches_feed_as_their_converters_make_them(seed):
    """Minibatches drawn at random (rows of mixed dtypes and widths, strided and
    byte-swapped rows, big and negative ints, NaN, sequences of ints or floats, empty
    sequences, odd entries) for dense and sequence variables of several dtypes: every
    column fed is the converter's, value for value, or the same refusal."""
    rng = np.random.RandomState(seed)
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        dtype = rng.choice(["float32", "float64", "int64", "int32"])
        dense = layers.data("dense", [int(rng.choice([1, 3, 4]))], dtype=dtype)
        grid = layers.data("grid", [2, 2], dtype="float32")
        words = layers.data("words", [1], dtype=rng.choice(["int64", "float32"]),
                            lod_level=1)
    width = dense.shape[1]
    for _ in range(8):
        size = int(rng.randint(1, 6))
        kinds = [rng.choice(["row", "int", "float", "odd"], p=[0.5, 0.2, 0.2, 0.1]),
                 rng.choice(["row", "odd"], p=[0.9, 0.1]),
                 rng.choice(["ints", "floats", "odd"], p=[0.6, 0.3, 0.1])]
        mixed = rng.random_sample() < 0.2  # each sample's kind drawn again
        batch = []
        for _ in range(size):
            these = [rng.choice(["row", "int", "float", "ints", "odd"]) for _ in kinds] \
                if mixed else kinds
            batch.append((random_entry(rng, these[0], width),
                          random_entry(rng, these[1], int(rng.choice([4, 4, 4, 3]))),
                          random_entry(rng, these[2], 0)))
        feeder = DataFeeder([dense, grid, words], fluid.CPUPlace(), program=main)
        with np.errstate(all="ignore"):
            got = fed_as_by_converter(feeder, batch)
        assert got is None or list(got) == ["dense", "grid", "words"]
