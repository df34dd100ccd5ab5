"""The Penn Treebank language-model text from Mikolov's ``simple-examples.tgz``
(``paddle.dataset.imikolov``), read from ``DATA_HOME/imikolov/``.

The tarball holds one sentence per line (words separated by spaces, rare words already
written ``<unk>``) in ``./simple-examples/data/ptb.train.txt`` (training) and
``ptb.valid.txt`` (test).

:func:`build_dict` counts the words of both files, adding one ``<s>`` and one ``<e>`` per
line, keeps those seen more than ``min_word_freq`` times, most frequent first (ties in
byte order), and gives ``<unk>`` the last id.

Samples, with ``word_idx`` mapping words to ids (unknown words to ``word_idx['<unk>']``):

* ``DataType.NGRAM`` (default): each line becomes ``<s> words <e>``; every window of ``n``
  consecutive ids is one sample, a tuple of ``n`` ints. Lines shorter than ``n`` give none.
* ``DataType.SEQ``: one sample per line, ``(src, trg)``: two lists of ints,
  ``src = [<s>] + ids`` and ``trg = ids + [<e>]``; with ``n > 0``, lines whose ``src`` is
  longer than ``n`` are skipped.
"""
import collections
import tarfile

from ...errors import InvalidArgument, expected
from . import common
from ._vocab import UNK, build_word_idx, decode

__all__ = ["DataType", "build_dict", "train", "test", "fetch"]

URL = "https://dataset.bj.bcebos.com/imikolov%2Fsimple-examples.tgz"
MD5 = "30177ea32e27c525793142b6bf2c8e2d"
TRAIN_FILE = "./simple-examples/data/ptb.train.txt"
TEST_FILE = "./simple-examples/data/ptb.valid.txt"
START, END = "<s>", "<e>"


class DataType:
    """What a sample is: an n-gram window or a whole line."""
    NGRAM = 1
    SEQ = 2


def _lines(tar, name):
    """The lines of member ``name`` as lists of words (the name compared without a leading
    ``./``, which some tar tools drop)."""
    wanted = name[2:] if name.startswith("./") else name
    for member in tar.getmembers():
        if member.isfile() and (member.name[2:] if member.name.startswith("./")
                                else member.name) == wanted:
            for line in tar.extractfile(member):
                yield [decode(w) for w in line.split()]
            return
    raise InvalidArgument(expected(f"imikolov: {tar.name}", "member", name, "no such file"))


def word_count(lines, word_freq=None):
    """Add the words of ``lines`` (and one ``<s>`` and ``<e>`` per line) to the counts."""
    word_freq = collections.defaultdict(int) if word_freq is None else word_freq
    for words in lines:
        for w in words:
            word_freq[w] += 1
        word_freq[START] += 1
        word_freq[END] += 1
    return word_freq


def build_dict(min_word_freq=50):
    """word -> id over the training and test text (see the module docstring)."""
    with tarfile.open(common.download(URL, "imikolov", MD5)) as tar:
        word_freq = word_count(_lines(tar, TEST_FILE), word_count(_lines(tar, TRAIN_FILE)))
    return build_word_idx(word_freq, min_word_freq)


def reader_creator(filename, word_idx, n, data_type):
    """A reader of member ``filename`` of the cached tarball (see the module docstring)."""
    if data_type not in (DataType.NGRAM, DataType.SEQ):
        raise InvalidArgument(expected("imikolov", "data_type",
                                       "DataType.NGRAM (1) or DataType.SEQ (2)", data_type))
    if data_type == DataType.NGRAM and n <= -1:
        raise InvalidArgument(expected("imikolov", "n (the n-gram length)", "n > -1", n))
    path = common.download(URL, "imikolov", MD5)

    def reader():
        unk = word_idx[UNK]
        with tarfile.open(path) as tar:
            for words in _lines(tar, filename):
                if data_type == DataType.NGRAM:
                    words = [START] + words + [END]
                    if len(words) < n:
                        continue
                    ids = [word_idx.get(w, unk) for w in words]
                    for i in range(n, len(ids) + 1):
                        yield tuple(ids[i - n:i])
                else:
                    ids = [word_idx.get(w, unk) for w in words]
                    src, trg = [word_idx[START]] + ids, ids + [word_idx[END]]
                    if n > 0 and len(src) > n:
                        continue
                    yield src, trg
    return reader


def train(word_idx, n, data_type=DataType.NGRAM):
    """Reader of ``ptb.train.txt`` (see the module docstring for the sample layout)."""
    return reader_creator(TRAIN_FILE, word_idx, n, data_type)


def test(word_idx, n, data_type=DataType.NGRAM):
    """Reader of ``ptb.valid.txt`` (see the module docstring for the sample layout)."""
    return reader_creator(TEST_FILE, word_idx, n, data_type)


def fetch():
    """Download the tarball into the cache."""
    common.download(URL, "imikolov", MD5)
