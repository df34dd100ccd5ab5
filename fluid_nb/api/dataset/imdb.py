"""IMDB movie reviews (``paddle.dataset.imdb``): 25,000 training and 25,000 test reviews
labelled positive or negative, read from ``aclImdb_v1.tar.gz`` in ``DATA_HOME/imdb/``.

Each review is one file ``aclImdb/{train,test}/{pos,neg}/<id>_<stars>.txt``. Tokenising
is Paddle's: the file's bytes without trailing newlines, every ASCII punctuation
character deleted, ASCII letters lower-cased, split at whitespace. Words are ``str``
(the bytes read as UTF-8; undecodable bytes kept as lone surrogates, so ids never
depend on decoding); Paddle keeps them as ``bytes``, which gives the same ids.

:func:`word_dict` counts the words of all four folders, keeps those seen more than 150
times, most frequent first (ties in byte order), and gives ``<unk>`` the last id.

Samples are ``(word_ids, label)``: ``word_ids`` a list of int (unknown words map to
``word_idx['<unk>']``), ``label`` an int, **0 for positive and 1 for negative** (Paddle's
choice); all positive reviews come first, then all negative ones, each in tarball order.
"""
import collections
import re
import string
import tarfile

from . import common
from ._vocab import UNK, build_word_idx, decode

__all__ = ["build_dict", "word_dict", "train", "test", "tokenize", "fetch"]

URL = "https://dataset.bj.bcebos.com/imdb%2FaclImdb_v1.tar.gz"
MD5 = "7c2ac02c03563afcf9b574c7e56c153a"
CUTOFF = 150
_PUNCTUATION = string.punctuation.encode("latin-1")


def tokenize(pattern):
    """The word lists of the tarball's files whose names match ``pattern``, in tarball
    order (members are visited one after the other, never by random access)."""
    with tarfile.open(common.download(URL, "imdb", MD5)) as tar:
        for member in tar:
            if member.isfile() and pattern.match(member.name):
                text = tar.extractfile(member).read().rstrip(b"\n\r")
                yield [decode(w) for w in text.translate(None, _PUNCTUATION).lower().split()]


def build_dict(pattern, cutoff):
    """word -> id over the files matching ``pattern`` (words seen more than ``cutoff``
    times, most frequent first, ties in byte order, ``<unk>`` last)."""
    word_freq = collections.defaultdict(int)
    for words in tokenize(pattern):
        for w in words:
            word_freq[w] += 1
    return build_word_idx(word_freq, cutoff)


def reader_creator(pos_pattern, neg_pattern, word_idx):
    """A reader of the positive (label 0) then negative (label 1) reviews; the files are
    read and tokenised now, once."""
    unk = word_idx[UNK]
    samples = [([word_idx.get(w, unk) for w in words], label)
               for pattern, label in ((pos_pattern, 0), (neg_pattern, 1))
               for words in tokenize(pattern)]

    def reader():
        yield from samples
    return reader


def train(word_idx):
    """Reader of the 25,000 training reviews (see the module docstring for the layout)."""
    return reader_creator(re.compile(r"aclImdb/train/pos/.*\.txt$"),
                          re.compile(r"aclImdb/train/neg/.*\.txt$"), word_idx)


def test(word_idx):
    """Reader of the 25,000 test reviews (see the module docstring for the layout)."""
    return reader_creator(re.compile(r"aclImdb/test/pos/.*\.txt$"),
                          re.compile(r"aclImdb/test/neg/.*\.txt$"), word_idx)


def word_dict():
    """word -> id over all 50,000 reviews (see the module docstring)."""
    return build_dict(re.compile(r"aclImdb/((train)|(test))/((pos)|(neg))/.*\.txt$"), CUTOFF)


def fetch():
    """Download the tarball into the cache."""
    common.download(URL, "imdb", MD5)
