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
