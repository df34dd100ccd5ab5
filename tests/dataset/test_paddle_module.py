"""fluid_nb.paddle: the names a Fluid 1.x script imports from ``paddle``, paddle.batch's
semantics and checks, and each dataset's error when its file is absent and there is no
network."""
import importlib

import numpy as np
import pytest

import fluid_nb
import fluid_nb.paddle as paddle
from fluid_nb import reader as fluid_reader
from fluid_nb.dataset import (cifar, common, conll05, imdb, imikolov, mnist, movielens,
                              uci_housing, wmt14, wmt16)
from fluid_nb.errors import InvalidArgument


def numbers(n):
    def reader():
        yield from range(n)
    return reader


def test_paddle_names_are_the_fluid_nb_objects_not_copies():
    assert paddle.fluid is fluid_nb and paddle.fluid.layers is fluid_nb.layers
    assert paddle.dataset is fluid_nb.dataset and paddle.reader is fluid_reader
    assert paddle.batch is fluid_reader.batch
    for name in ("shuffle", "buffered", "compose", "chain", "map_readers", "firstn",
                 "xmap_readers", "cache"):
        assert getattr(paddle.reader, name) is getattr(fluid_reader.decorator, name)
    assert importlib.import_module("fluid_nb.paddle.dataset.mnist") is mnist
    assert importlib.import_module("fluid_nb.paddle.dataset.common") is common
    assert importlib.import_module("fluid_nb.paddle.reader") is fluid_reader


def test_batch_groups_samples_and_keeps_the_short_last_batch():
    assert list(paddle.batch(numbers(7), batch_size=3)()) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(paddle.batch(numbers(6), 3)()) == [[0, 1, 2], [3, 4, 5]]
    assert list(paddle.batch(numbers(2), 5)()) == [[0, 1]]
    assert list(paddle.batch(numbers(0), 5)()) == []


def test_batch_drop_last_drops_only_a_short_last_batch():
    assert list(paddle.batch(numbers(7), 3, drop_last=True)()) == [[0, 1, 2], [3, 4, 5]]
    assert list(paddle.batch(numbers(6), 3, drop_last=True)()) == [[0, 1, 2], [3, 4, 5]]
    assert list(paddle.batch(numbers(2), 5, drop_last=True)()) == []


def test_batch_size_goes_through_int_as_in_paddle():
    assert list(paddle.batch(numbers(5), "2")()) == [[0, 1], [2, 3], [4]]
    assert list(paddle.batch(numbers(5), 2.9)()) == [[0, 1], [2, 3], [4]]


@pytest.mark.parametrize("size", [0, -3, 0.5])
def test_batch_refuses_a_size_below_one_at_once_as_a_value_error(size):
    with pytest.raises(InvalidArgument) as info:
        paddle.batch(numbers(5), size)
    assert isinstance(info.value, ValueError)
    assert str(info.value) == f"batch: batch_size expected a positive int, but received {size!r}"


def test_batch_refuses_a_size_that_is_not_a_number():
    with pytest.raises(TypeError) as info:
        paddle.batch(numbers(5), None)
    assert isinstance(info.value, InvalidArgument)
    with pytest.raises(ValueError, match="received 'ten'"):
        paddle.batch(numbers(5), "ten")


def test_shuffle_then_batch_as_the_book_chains_them():
    reader = paddle.batch(paddle.reader.shuffle(numbers(10), buf_size=4), batch_size=3)
    batches = list(reader())
    assert [len(b) for b in batches] == [3, 3, 3, 1]
    flat = [x for b in batches for x in b]
    assert sorted(flat) == list(range(10))
    assert sorted(flat[:4]) == [0, 1, 2, 3]  # shuffled within windows of buf_size


# every loader that needs a file, with the module constant naming the URL it downloads
LOADERS = [
    ("mnist.train", lambda: mnist.train(), mnist, "TRAIN_IMAGE_URL"),
    ("mnist.test", lambda: mnist.test(), mnist, "TEST_IMAGE_URL"),
    ("cifar.train10", lambda: cifar.train10(), cifar, "CIFAR10_URL"),
    ("cifar.test100", lambda: cifar.test100(), cifar, "CIFAR100_URL"),
    ("imikolov.build_dict", lambda: imikolov.build_dict(), imikolov, "URL"),
    ("imikolov.train", lambda: imikolov.train({"<unk>": 0}, 5), imikolov, "URL"),
    ("movielens.train", lambda: movielens.train(), movielens, "URL"),
    ("movielens.max_user_id", lambda: movielens.max_user_id(), movielens, "URL"),
    ("imdb.word_dict", lambda: imdb.word_dict(), imdb, "URL"),
    ("imdb.train", lambda: imdb.train({"<unk>": 0}), imdb, "URL"),
    ("conll05.get_dict", lambda: conll05.get_dict(), conll05, "WORDDICT_URL"),
    ("conll05.get_embedding", lambda: conll05.get_embedding(), conll05, "EMB_URL"),
    ("wmt14.train", lambda: wmt14.train(30000), wmt14, "URL_TRAIN"),
    ("wmt14.get_dict", lambda: wmt14.get_dict(30000), wmt14, "URL_TRAIN"),
    ("wmt16.train", lambda: wmt16.train(10000, 10000), wmt16, "DATA_URL"),
    ("wmt16.get_dict", lambda: wmt16.get_dict("de", 10000), wmt16, "DATA_URL"),
]


@pytest.mark.parametrize("name, load, module, url_name", LOADERS, ids=[x[0] for x in LOADERS])
def test_absent_file_without_network_says_which_file_from_where_to_where(
        name, load, module, url_name, data_home, offline):
    url = getattr(module, url_name)
    with pytest.raises(common.DownloadFailed) as info:
        load()
    message = str(info.value)
    folder = "conll05st" if module is conll05 else module.__name__.rsplit(".", 1)[1]
    save_name = "wmt16.tar.gz" if module is wmt16 else None
    assert url in message
    assert common.cache_path(url, folder, save_name) in message
    assert str(data_home) in message
    assert offline and offline[0][1] == common.TIMEOUT


def test_conll05_test_needs_the_dictionaries_and_the_tarball(data_home, offline):
    with pytest.raises(common.DownloadFailed, match="wordDict"):
        conll05.test()


def test_uci_housing_is_packaged_and_split_and_normalised_as_paddle(data_home, offline):
    train = list(paddle.dataset.uci_housing.train()())
    test = list(paddle.dataset.uci_housing.test()())
    assert (len(train), len(test)) == (404, 102)
    assert offline == []  # never downloads
    x, y = train[0]
    assert x.dtype == np.float64 and x.shape == (13,) and y.dtype == np.float64 and y.shape == (1,)
    raw = np.loadtxt(uci_housing._FILE, delimiter=",", skiprows=2)
    assert y[0] == raw[0, 13] == 24.0 and test[-1][1][0] == raw[-1, 13]
    span = raw.max(axis=0) - raw.min(axis=0)
    np.testing.assert_allclose(x, (raw[0, :13] - raw[:, :13].mean(axis=0)) / span[:13],
                               rtol=1e-12)
    assert np.allclose(uci_housing.load_data()[0][0, :13], x)


def test_uci_housing_yields_the_tables_rows_read_only_every_epoch():
    """Each reading of a reader yields the same samples: read-only views of the packaged
    table's rows (features, price), in the table's order."""
    reader = paddle.dataset.uci_housing.train()
    first, again = list(reader()), list(paddle.dataset.uci_housing.train()())
    table = uci_housing._normalised(0.8)[0]
    assert len(first) == len(again) == len(table)
    for (x, y), (x2, y2), row in zip(first, again, table):
        assert x is x2 and y is y2
        assert np.shares_memory(x, table) and not x.flags.writeable and not y.flags.writeable
        np.testing.assert_array_equal(np.concatenate([x, y]), row)
    with pytest.raises(ValueError, match="read-only"):
        first[0][0][0] = 1.0
