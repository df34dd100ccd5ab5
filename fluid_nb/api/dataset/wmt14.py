"""WMT-14 French-English, the reduced set Paddle ships (``paddle.dataset.wmt14``), read from
``wmt14.tgz`` in ``DATA_HOME/wmt14/``.

The tarball holds ``src.dict`` and ``trg.dict`` (one word per line, the line number is the
id; the first three lines are ``<s>``, ``<e>``, ``<unk>``, so ``<unk>`` is id 2) and the
members ending in ``train/train``, ``test/test`` and ``gen/gen``: one sentence pair per
line, ``source<TAB>target``, words separated by spaces.

Dictionaries keep the first ``dict_size`` lines of each file. A sample is
``(src_ids, trg_ids, trg_ids_next)``, three lists of int:
``src_ids = [<s>] + source + [<e>]``, ``trg_ids = [<s>] + target`` and
``trg_ids_next = target + [<e>]`` (unknown words are ``UNK_IDX`` = 2). Lines without
exactly one tab are skipped, and so are pairs whose ``src_ids`` (with its marks) or target
(without) is longer than 80.
"""
import tarfile

from ...errors import InvalidArgument, expected
from . import common

__all__ = ["train", "test", "gen", "get_dict", "fetch"]

URL_TRAIN = "http://paddlemodels.bj.bcebos.com/wmt/wmt14.tgz"
MD5_TRAIN = "0791583d57d5beb693b9414c5b36798c"

START = "<s>"
END = "<e>"
UNK = "<unk>"
UNK_IDX = 2
MAX_LENGTH = 80


def _text(raw):
    return raw.decode("utf-8", "surrogateescape")


def _member(tar, suffix):
    names = [m.name for m in tar.getmembers() if m.isfile() and m.name.endswith(suffix)]
    if len(names) != 1:
        raise InvalidArgument(expected(f"wmt14: {tar.name}", f"members ending in {suffix}",
                                       "exactly one", names))
    return tar.extractfile(names[0])


def read_dicts(tar_file, dict_size):
    """``(src_dict, trg_dict)``: word -> id for the first ``dict_size`` lines of each."""
    def first_lines(f):
        out = {}
        for i, line in enumerate(f):
            if i >= dict_size:
                break
            out[_text(line.strip())] = i
        return out
    with tarfile.open(tar_file, mode="r") as tar:
        return first_lines(_member(tar, "src.dict")), first_lines(_member(tar, "trg.dict"))


def reader_creator(tar_file, file_name, dict_size):
    """A reader of the pairs in the members ending in ``file_name`` (see the module
    docstring)."""
    def reader():
        src_dict, trg_dict = read_dicts(tar_file, dict_size)
        with tarfile.open(tar_file, mode="r") as tar:
            members = [m for m in tar.getmembers() if m.isfile() and m.name.endswith(file_name)]
            for member in members:
                for line in tar.extractfile(member):
                    pair = _text(line).strip().split("\t")
                    if len(pair) != 2:
                        continue
                    src_ids = [src_dict.get(w, UNK_IDX) for w in [START, *pair[0].split(), END]]
                    trg_ids = [trg_dict.get(w, UNK_IDX) for w in pair[1].split()]
                    if len(src_ids) > MAX_LENGTH or len(trg_ids) > MAX_LENGTH:
                        continue
                    yield src_ids, [trg_dict[START], *trg_ids], [*trg_ids, trg_dict[END]]
    return reader


def _tarball():
    return common.download(URL_TRAIN, "wmt14", MD5_TRAIN)


def train(dict_size):
    """Reader of the training pairs (see the module docstring for the layout)."""
    return reader_creator(_tarball(), "train/train", dict_size)


def test(dict_size):
    """Reader of the test pairs (see the module docstring for the layout)."""
    return reader_creator(_tarball(), "test/test", dict_size)


def gen(dict_size):
    """Reader of the generation pairs (see the module docstring for the layout)."""
    return reader_creator(_tarball(), "gen/gen", dict_size)


def get_dict(dict_size, reverse=True):
    """``(src_dict, trg_dict)``; with ``reverse`` (the default) id -> word, else
    word -> id."""
    src_dict, trg_dict = read_dicts(_tarball(), dict_size)
    if reverse:
        src_dict = {i: w for w, i in src_dict.items()}
        trg_dict = {i: w for w, i in trg_dict.items()}
    return src_dict, trg_dict


def fetch():
    """Download the tarball into the cache."""
    _tarball()
