"""CoNLL-2005 semantic role labelling (``paddle.dataset.conll05``), as Paddle ships it:
the public test set (``conll05st-tests.tar.gz``) stands in for training data, plus a word
dictionary, a verb dictionary, a label dictionary and pre-trained word embeddings, all in
``DATA_HOME/conll05st/``.

Files:

* ``conll05st-release/test.wsj/words/test.wsj.words.gz`` in the tarball: one word per
  line, an empty line after each sentence;
* ``.../props/test.wsj.props.gz``: for each word line, whitespace-separated columns: the
  predicate's lemma (or ``-``), then one column per predicate of the sentence in bracket
  notation (``(A0*``, ``*``, ``*)``, ``(V*)``, ...);
* ``wordDict.txt``, ``verbDict.txt``: one entry per line, the line number is the id;
* ``targetDict.txt``: the labels; each tag ``X`` met as ``B-X`` or ``I-X`` gets ids
  ``B-X`` = 2k and ``I-X`` = 2k+1, and ``O`` the id after the last;
* ``emb``: the embedding file that :func:`get_embedding` returns the path of: a 16-byte
  header, then float32 values, ``[len(word_dict), 32]`` row by row.

One sample per (sentence, predicate), 9 fields, each a list with one int per word of
the sentence::

    (word_ids, ctx_n2, ctx_n1, ctx_0, ctx_p1, ctx_p2, predicate_ids, mark, label_ids)

``ctx_n2`` .. ``ctx_p2`` repeat the id of the word two before .. two after the predicate
(``bos``/``eos`` past the sentence's ends), ``predicate_ids`` repeats the predicate's id
in the verb dictionary, ``mark`` is 1 on the predicate and the two words either side of
it and 0 elsewhere, ``label_ids`` are the IOB labels' ids. Words missing from the word
dictionary get id 0 (``UNK_IDX``); a predicate or label missing from its dictionary gives
``None``, as in Paddle.

One difference: Paddle numbers the tags in the iteration order of a Python set, which
changes from one process to the next; here tags keep their order of first appearance in
``targetDict.txt``, so ids are the same in every run.
"""
import gzip
import tarfile

from ...errors import InvalidArgument, expected
from . import common

__all__ = ["get_dict", "get_embedding", "test", "fetch", "UNK_IDX"]

DATA_URL = "http://paddlemodels.bj.bcebos.com/conll05st/conll05st-tests.tar.gz"
DATA_MD5 = "387719152ae52d60422c016e92a742fc"
WORDDICT_URL = "http://paddlemodels.bj.bcebos.com/conll05st%2FwordDict.txt"
WORDDICT_MD5 = "ea7fb7d4c75cc6254716f0177a506baa"
VERBDICT_URL = "http://paddlemodels.bj.bcebos.com/conll05st%2FverbDict.txt"
VERBDICT_MD5 = "0d2977293bbb6cbefab5b0f97db1e77c"
TRGDICT_URL = "http://paddlemodels.bj.bcebos.com/conll05st%2FtargetDict.txt"
TRGDICT_MD5 = "d8c7f03ceb5fc2e5a0fa7503a4353751"
EMB_URL = "http://paddlemodels.bj.bcebos.com/conll05st%2Femb"
EMB_MD5 = "bf436eb0faa1f6f9103017f8be57cdb7"

WORDS_NAME = "conll05st-release/test.wsj/words/test.wsj.words.gz"
PROPS_NAME = "conll05st-release/test.wsj/props/test.wsj.props.gz"
UNK_IDX = 0


def _text_lines(filename):
    with open(filename, encoding="utf-8", errors="surrogateescape") as f:
        return [line.strip() for line in f]


def load_dict(filename):
    """entry -> line number."""
    return {entry: i for i, entry in enumerate(_text_lines(filename))}


def load_label_dict(filename):
    """IOB label -> id (see the module docstring)."""
    tags = {}
    for line in _text_lines(filename):
        if line.startswith(("B-", "I-")):
            tags.setdefault(line[2:], None)
    labels = {}
    for tag in tags:
        labels["B-" + tag] = len(labels)
        labels["I-" + tag] = len(labels)
    labels["O"] = len(labels)
    return labels


def _iob(column, where):
    """One predicate's bracket column as IOB labels."""
    labels, tag, inside = [], "O", False
    for cell in column:
        if cell == "*":
            labels.append("I-" + tag if inside else "O")
        elif cell == "*)":
            labels.append("I-" + tag)
            inside = False
        elif "(" in cell:
            tag = cell[1:cell.find("*")]
            labels.append("B-" + tag)
            inside = ")" not in cell
        else:
            raise InvalidArgument(expected(where, "label", "'*', '*)' or '(TAG*...'",
                                           repr(cell)))
    return labels


def corpus_reader(data_path, words_name, props_name):
    """A reader of ``(words, predicate, iob_labels)`` per predicate of each sentence."""
    def reader():
        with tarfile.open(data_path) as tar, \
                gzip.GzipFile(fileobj=tar.extractfile(words_name)) as words_file, \
                gzip.GzipFile(fileobj=tar.extractfile(props_name)) as props_file:
            sentence, rows = [], []
            for word, props in zip(words_file, props_file):
                word = word.strip().decode("utf-8", "surrogateescape")
                props = props.strip().decode("utf-8", "surrogateescape").split()
                if props:
                    sentence.append(word)
                    rows.append(props)
                    continue
                if rows:  # an empty line ends the sentence
                    columns = list(zip(*rows))
                    predicates = [p for p in columns[0] if p != "-"]
                    for predicate, column in zip(predicates, columns[1:]):
                        yield sentence, predicate, _iob(column, f"conll05: {props_name}")
                sentence, rows = [], []
    return reader


def _context(sentence, at, pad):
    return sentence[at] if 0 <= at < len(sentence) else pad


def reader_creator(corpus, word_dict, predicate_dict, label_dict):
    """A reader of the 9-field samples (see the module docstring) over ``corpus``."""
    def reader():
        for sentence, predicate, labels in corpus():
            if "B-V" not in labels:
                raise InvalidArgument(expected("conll05", "labels of a predicate",
                                               "one B-V", labels))
            verb = labels.index("B-V")
            n = len(sentence)
            mark = [1 if abs(i - verb) <= 2 else 0 for i in range(n)]
            contexts = [_context(sentence, verb + d, "bos" if d < 0 else "eos")
                        for d in (-2, -1, 0, 1, 2)]
            yield ([word_dict.get(w, UNK_IDX) for w in sentence],
                   *[[word_dict.get(c, UNK_IDX)] * n for c in contexts],
                   [predicate_dict.get(predicate)] * n,
                   mark,
                   [label_dict.get(label) for label in labels])
    return reader


def get_dict():
    """``(word_dict, verb_dict, label_dict)``: entry -> id (see the module docstring)."""
    word_dict = load_dict(common.download(WORDDICT_URL, "conll05st", WORDDICT_MD5))
    verb_dict = load_dict(common.download(VERBDICT_URL, "conll05st", VERBDICT_MD5))
    label_dict = load_label_dict(common.download(TRGDICT_URL, "conll05st", TRGDICT_MD5))
    return word_dict, verb_dict, label_dict


def get_embedding():
    """The path of the embedding file (16-byte header, then float32
    ``[len(word_dict), 32]``)."""
    return common.download(EMB_URL, "conll05st", EMB_MD5)


def test():
    """Reader of the CoNLL-05 test set (see the module docstring for the 9 fields)."""
    word_dict, verb_dict, label_dict = get_dict()
    corpus = corpus_reader(common.download(DATA_URL, "conll05st", DATA_MD5),
                           WORDS_NAME, PROPS_NAME)
    return reader_creator(corpus, word_dict, verb_dict, label_dict)


def fetch():
    """Download the five files into the cache."""
    get_dict()
    get_embedding()
    common.download(DATA_URL, "conll05st", DATA_MD5)
