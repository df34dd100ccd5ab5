"""Reader decorators."""
import random

import pytest

from fluid_nb import reader as rd
from fluid_nb.errors import InvalidArgument


def numbers(n):
    def r():
        yield from range(n)
    return r


def test_batch():
    assert list(rd.batch(numbers(5), 2)()) == [[0, 1], [2, 3], [4]]
    assert list(rd.batch(numbers(5), 2, drop_last=True)()) == [[0, 1], [2, 3]]
    with pytest.raises(InvalidArgument, match="batch_size"):
        rd.batch(numbers(5), 0)


def test_shuffle_keeps_the_samples():
    random.seed(0)
    out = list(rd.shuffle(numbers(100), buf_size=30)())
    assert sorted(out) == list(range(100)) and out != list(range(100))
    assert sorted(out[:30]) == list(range(30))  # shuffles within the window


def windows_shuffled(samples, buf_size):
    """Paddle's definition of shuffle: fill a buffer until it holds buf_size samples,
    random.shuffle it, yield it; the rest likewise at the end."""
    buf = []
    for sample in samples:
        buf.append(sample)
        if len(buf) >= buf_size:
            random.shuffle(buf)
            yield from buf
            buf = []
    if buf:
        random.shuffle(buf)
        yield from buf


@pytest.mark.parametrize("n,buf_size", [(100, 30), (100, 100), (100, 500), (7, 1), (7, 0),
                                        (7, -3), (10, 2.5), (0, 30), (60, 30)])
def test_shuffle_draws_what_paddles_definition_draws(n, buf_size):
    """Under the same random.seed, the same order as Paddle's shuffle, window by window,
    and the generator left where that definition leaves it."""
    random.seed(7)
    expected = list(windows_shuffled(range(n), buf_size))
    after_expected = random.random()
    random.seed(7)
    assert list(rd.shuffle(numbers(n), buf_size=buf_size)()) == expected
    assert random.random() == after_expected


def test_batch_groups_any_reader_lazily():
    """Groups of batch_size as the samples come; the last one shorter (or dropped); a
    reader is read only as far as the groups taken need."""
    read = []

    def counting():
        for i in range(10):
            read.append(i)
            yield i
    groups = rd.batch(lambda: counting(), 4)()
    assert next(groups) == [0, 1, 2, 3] and read == [0, 1, 2, 3]
    assert list(groups) == [[4, 5, 6, 7], [8, 9]]
    assert list(rd.batch(lambda: counting(), 5, drop_last=True)()) == [[0, 1, 2, 3, 4],
                                                                        [5, 6, 7, 8, 9]]
    assert list(rd.batch(lambda: counting(), 3, drop_last=True)()) == [[0, 1, 2], [3, 4, 5],
                                                                        [6, 7, 8]]
    assert list(rd.batch(numbers(0), 3)()) == []


def test_buffered_firstn_chain_cache_map():
    assert list(rd.buffered(numbers(50), 4)()) == list(range(50))
    assert list(rd.firstn(numbers(10), 3)()) == [0, 1, 2]
    assert list(rd.chain(numbers(2), numbers(3))()) == [0, 1, 0, 1, 2]
    assert list(rd.map_readers(lambda a, b: a + b, numbers(3), numbers(4))()) == [0, 2, 4]
    calls = []

    def once():
        calls.append(1)
        yield from range(3)
    cached = rd.cache(once)
    assert list(cached()) == list(cached()) == [0, 1, 2] and len(calls) == 1


def test_compose():
    def pairs():
        for i in range(3):
            yield (i, -i)
    assert list(rd.compose(pairs, numbers(3))()) == [(0, 0, 0), (1, -1, 1), (2, -2, 2)]
    with pytest.raises(rd.ComposeNotAligned):
        list(rd.compose(numbers(2), numbers(3))())
    assert list(rd.compose(numbers(2), numbers(3), check_alignment=False)()) == \
        [(0, 0), (1, 1)]


def test_xmap_readers():
    ordered = list(rd.xmap_readers(lambda x: x * 2, numbers(20), 3, 4, order=True)())
    assert ordered == [2 * i for i in range(20)]
    unordered = list(rd.xmap_readers(lambda x: x * 2, numbers(20), 3, 4)())
    assert sorted(unordered) == ordered


def test_multiprocess_reader():
    out = list(rd.multiprocess_reader([numbers(5), numbers(3)])())
    assert sorted(out) == [0, 0, 1, 1, 2, 2, 3, 4]
