"""WMT-16 multimodal English-German translation, Multi30K (``paddle.dataset.wmt16``), read
from ``wmt16.tar.gz`` in ``DATA_HOME/wmt16/``.

The tarball holds ``wmt16/train``, ``wmt16/test`` and ``wmt16/val``: one tokenised
sentence pair per line, ``english<TAB>german``.

Dictionaries are built from ``wmt16/train`` the first time a size is asked for and kept as
``DATA_HOME/wmt16/<lang>_<dict_size>.dict`` (one word per line, the line number is the
id), as Paddle keeps them: ``<s>`` = 0, ``<e>`` = 1, ``<unk>`` = 2, then the
``dict_size - 3`` most frequent words of that language (equal counts in order of first
appearance). Sizes are capped at the vocabulary sizes (``TOTAL_EN_WORDS``,
``TOTAL_DE_WORDS``).

A sample is ``(src_ids, trg_ids, trg_ids_next)``, three lists of int:
``src_ids = [0] + source + [1]``, ``trg_ids = [0] + target``,
``trg_ids_next = target + [1]``; unknown words are 2. Lines without exactly one tab are
skipped.
"""
import collections
import os
import tarfile
import tempfile

from ...errors import InvalidArgument, expected
from . import common

__all__ = ["train", "test", "validation", "get_dict", "fetch"]

DATA_URL = "http://paddlemodels.bj.bcebos.com/wmt/wmt16.tar.gz"
DATA_MD5 = "0c38be43600334966403524a40dcd81e"
SAVE_NAME = "wmt16.tar.gz"

TOTAL_EN_WORDS = 11250
TOTAL_DE_WORDS = 19220

START_MARK = "<s>"
END_MARK = "<e>"
UNK_MARK = "<unk>"
LANGUAGES = ("en", "de")


def _text(raw):
    return raw.decode("utf-8", "surrogateescape")


def _pairs(tar_file, member):
    with tarfile.open(tar_file, mode="r") as tar:
        for line in tar.extractfile(member):
            pair = _text(line).strip().split("\t")
            if len(pair) == 2:
                yield pair


def _check_lang(lang, what="src_lang"):
    if lang not in LANGUAGES:
        raise InvalidArgument(expected("wmt16", what, "'en' (English) or 'de' (German)",
                                       repr(lang)))


def _capped(lang, dict_size):
    return min(dict_size, TOTAL_EN_WORDS if lang == "en" else TOTAL_DE_WORDS)


def dict_path(lang, dict_size):
    """Where the ``lang`` dictionary of ``dict_size`` entries is kept."""
    return os.path.join(common.DATA_HOME, "wmt16", f"{lang}_{dict_size}.dict")


def build_dict(tar_file, dict_size, save_path, lang):
    """Count ``lang``'s words in ``wmt16/train`` and write the dictionary file."""
    if dict_size < 3:
        raise InvalidArgument(expected("wmt16", "dict_size", "at least 3 (<s>, <e>, <unk>)",
                                       dict_size))
    counts = collections.Counter()
    column = LANGUAGES.index(lang)
    for pair in _pairs(tar_file, "wmt16/train"):
        counts.update(pair[column].split())
    # a stable sort by count: equal counts keep their order of first appearance
    words = sorted(counts, key=counts.__getitem__, reverse=True)[:dict_size - 3]
    os.makedirs(os.path.dirname(save_path), exist_ok=True)
    fd, partial = tempfile.mkstemp(dir=os.path.dirname(save_path), suffix=".part")
    with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as out:
        out.write("".join(w + "\n" for w in [START_MARK, END_MARK, UNK_MARK, *words]))
    os.replace(partial, save_path)


def load_dict(tar_file, dict_size, lang, reverse=False):
    """word -> id (id -> word with ``reverse``), building the file first when it is
    missing or has another number of lines (as Paddle does)."""
    path = dict_path(lang, dict_size)
    if not os.path.exists(path) or _line_count(path) != dict_size:
        build_dict(tar_file, dict_size, path, lang)
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        words = [line.strip() for line in f]
    return dict(enumerate(words)) if reverse else {w: i for i, w in enumerate(words)}


def _line_count(path):
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def reader_creator(tar_file, file_name, src_dict_size, trg_dict_size, src_lang):
    """A reader of the pairs in member ``file_name`` (see the module docstring)."""
    trg_lang = "de" if src_lang == "en" else "en"

    def reader():
        src_dict = load_dict(tar_file, src_dict_size, src_lang)
        trg_dict = load_dict(tar_file, trg_dict_size, trg_lang)
        # both dictionaries give the marks the same ids; the source's are used
        start, end, unk = src_dict[START_MARK], src_dict[END_MARK], src_dict[UNK_MARK]
        src_col = LANGUAGES.index(src_lang)
        for pair in _pairs(tar_file, file_name):
            src_ids = [start, *[src_dict.get(w, unk) for w in pair[src_col].split()], end]
            trg_ids = [trg_dict.get(w, unk) for w in pair[1 - src_col].split()]
            yield src_ids, [start, *trg_ids], [*trg_ids, end]
    return reader


def _reader(file_name, src_dict_size, trg_dict_size, src_lang):
    _check_lang(src_lang)
    trg_lang = "de" if src_lang == "en" else "en"
    return reader_creator(common.download(DATA_URL, "wmt16", DATA_MD5, SAVE_NAME), file_name,
                          _capped(src_lang, src_dict_size), _capped(trg_lang, trg_dict_size),
                          src_lang)


def train(src_dict_size, trg_dict_size, src_lang="en"):
    """Reader of the 29,000 training pairs (see the module docstring for the layout)."""
    return _reader("wmt16/train", src_dict_size, trg_dict_size, src_lang)


def test(src_dict_size, trg_dict_size, src_lang="en"):
    """Reader of the 1,000 test pairs (see the module docstring for the layout)."""
    return _reader("wmt16/test", src_dict_size, trg_dict_size, src_lang)


def validation(src_dict_size, trg_dict_size, src_lang="en"):
    """Reader of the 1,014 validation pairs (see the module docstring for the layout)."""
    return _reader("wmt16/val", src_dict_size, trg_dict_size, src_lang)


def get_dict(lang, dict_size, reverse=False):
    """The ``lang`` dictionary of ``dict_size`` entries: word -> id, or id -> word with
    ``reverse``. Paddle requires a reader to have built it first; here it is built from the
    cached tarball when missing."""
    _check_lang(lang, "lang")
    return load_dict(common.download(DATA_URL, "wmt16", DATA_MD5, SAVE_NAME), lang=lang,
                     dict_size=_capped(lang, dict_size), reverse=reverse)


def fetch():
    """Download the tarball into the cache."""
    common.download(DATA_URL, "wmt16", DATA_MD5, SAVE_NAME)
