"""Small stand-ins for Paddle's datasets, in their real file formats.

The book's chapters read ``paddle.dataset.mnist``, ``cifar``, ``imikolov``, ``imdb``,
``movielens``, ``wmt16`` and ``wmt14``, whose files are downloaded on first use. Without a network
(or to try a chapter in seconds), :func:`use_samples` writes a few hundred samples of each
into a cache folder, in the very layout the readers parse (gzipped IDX files, a tarball of
pickled batches, the PTB, aclImdb, WMT16 and WMT14 tarballs, the ml-1m zip), and makes the
readers take them::

    from fluid_nb.dataset import samples
    samples.use_samples("mnist", "imdb")        # before the readers are first called

The data is random but learnable (a digit's label decides where its bright block is, a
review's label which words it uses, a rating follows the user's and the movie's group), so
a chapter's loss falls on it. Everything is drawn from ``RandomState(seed)``: the same
seed writes the same bytes.

``use_samples`` changes process state on purpose, as a script's first lines would: it sets
``common.DATA_HOME`` to the sample folder and declares each written file's md5 as its
module's (the readers accept a cached file only with the md5 they know).
"""
import gzip
import io
import os
import pickle
import struct
import tarfile
import tempfile
import zipfile

import numpy as np

from ...errors import InvalidArgument, expected
from . import cifar, common, imdb, imikolov, mnist, movielens, wmt14, wmt16

__all__ = ["use_samples", "is_cached", "SAMPLES"]


def _put(module, md5_attr, url, folder, payload, save_name=None):
    path = common.cache_path(url, folder, save_name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(payload)
    setattr(module, md5_attr, common.md5file(path))


def _tar(members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    # gzipped with a fixed header time ("w:gz" stamps the current second, so two writes a
    # second apart differed)
    return gzip.compress(buf.getvalue(), mtime=0)


# --- images ---------------------------------------------------------------------------------
def _digit_images(rng, labels):
    """28x28 grey images: faint noise and a bright 8x8 block whose place is the label."""
    images = rng.randint(0, 60, size=(len(labels), 28, 28))
    for image, label in zip(images, labels):
        row, col = divmod(int(label), 5)
        image[2 + 12 * row:10 + 12 * row, 1 + 5 * col:9 + 5 * col] = 230
    return images.astype(np.uint8)


def _write_mnist(rng, train=512, test=128):
    for count, image_url, image_md5, label_url, label_md5 in [
            (train, mnist.TRAIN_IMAGE_URL, "TRAIN_IMAGE_MD5", mnist.TRAIN_LABEL_URL,
             "TRAIN_LABEL_MD5"),
            (test, mnist.TEST_IMAGE_URL, "TEST_IMAGE_MD5", mnist.TEST_LABEL_URL,
             "TEST_LABEL_MD5")]:
        labels = rng.randint(0, 10, size=count)
        images = _digit_images(rng, labels)
        _put(mnist, image_md5, image_url, "mnist", gzip.compress(
            struct.pack(">IIII", 2051, count, 28, 28) + images.tobytes(), mtime=0))
        _put(mnist, label_md5, label_url, "mnist", gzip.compress(
            struct.pack(">II", 2049, count) + labels.astype(np.uint8).tobytes(), mtime=0))


def _cifar_batch(rng, count):
    """Rows of 3072 bytes (the red, green and blue planes of a 32x32 image) whose three
    channel levels are set by the label."""
    labels = rng.randint(0, 10, size=count)
    levels = np.array([[40 + 20 * ((label * k) % 10) for k in (1, 3, 7)] for label in labels])
    planes = levels[:, :, None] + rng.randint(0, 40, size=(count, 3, 1024))
    rows = planes.clip(0, 255).astype(np.uint8).reshape(count, 3072)
    return pickle.dumps({b"batch_label": b"sample", b"labels": [int(v) for v in labels],
                         b"data": rows}, protocol=2)


def _write_cifar(rng, train=256, test=64):
    _put(cifar, "CIFAR10_MD5", cifar.CIFAR10_URL, "cifar", _tar({
        "cifar-10-batches-py/batches.meta": pickle.dumps(
            {b"label_names": [b"c%d" % i for i in range(10)]}, protocol=2),
        "cifar-10-batches-py/data_batch_1": _cifar_batch(rng, train),
        "cifar-10-batches-py/test_batch": _cifar_batch(rng, test)}))


# --- text -------------------------------------------------------------------------------------
_WORDS = ("the market said its shares rose in new york trading as investors bought stock "
          "after company reported higher profit for year while bank sold bonds").split()
_CONSONANTS, _VOWELS = "bdfgklmnprstvz", "aeiou"


def _made_up_words(count, syllables=3):
    """``count`` distinct made-up words (``"bababat"``, ``"dababat"``, ...), the same every
    time: the j-th word spells j in base 70, one consonant-vowel syllable per digit."""
    pairs = [c + v for v in _VOWELS for c in _CONSONANTS]
    words = []
    for j in range(count):
        digits = [(j // len(pairs) ** k) % len(pairs) for k in range(syllables)]
        words.append("".join(pairs[d] for d in digits) + "t")
    return words


#: PTB's dictionary has about 2,000 words over its 50-occurrence cut and the book infers
#: with fixed ids up to 211; the sample's dictionary is past that too
_PTB_VOCABULARY = _WORDS + _made_up_words(240 - len(_WORDS))


def _write_imikolov(rng, train=1900, test=300):
    """PTB-style lines from a chain where each word mostly has one successor (a
    permutation of the vocabulary), so the next word of an n-gram can be learnt; every
    word occurs more than the 50 times the dictionary asks for."""
    size = len(_PTB_VOCABULARY)
    successor = {w: _PTB_VOCABULARY[(7 * i + 1) % size] for i, w in enumerate(_PTB_VOCABULARY)}

    def lines(count):
        out = []
        for _ in range(count):
            word = _PTB_VOCABULARY[rng.randint(size)]
            sentence = []
            for _ in range(rng.randint(6, 12)):
                sentence.append(word)
                word = successor[word] if rng.rand() < 0.9 else \
                    _PTB_VOCABULARY[rng.randint(size)]
            out.append(" " + " ".join(sentence) + " \n")
        return "".join(out).encode()
    _put(imikolov, "MD5", imikolov.URL, "imikolov", _tar({
        "./simple-examples/": b"",
        "./simple-examples/data/ptb.train.txt": lines(train),
        "./simple-examples/data/ptb.valid.txt": lines(test)}))


_POSITIVE = "good great fun love best wonderful".split()
_NEGATIVE = "bad boring awful worst hate dull".split()
_NEUTRAL = "the movie film story was and this it actor plot".split()


def _write_imdb(rng, train=300, test=100):
    """aclImdb reviews: a positive one mostly uses positive words, a negative one negative
    words, both among neutral ones; each word occurs more than the 150 times the word
    dictionary asks for."""
    members = {}
    for split, count in (("train", train), ("test", test)):
        for i in range(count):
            positive = i % 2 == 0
            own = _POSITIVE if positive else _NEGATIVE
            words = [own[rng.randint(len(own))] if rng.rand() < 0.4 else
                     _NEUTRAL[rng.randint(len(_NEUTRAL))] for _ in range(rng.randint(8, 20))]
            folder = "pos" if positive else "neg"
            members[f"aclImdb/{split}/{folder}/{i}_{9 if positive else 2}.txt"] = \
                (" ".join(words).capitalize() + ".").encode()
    _put(imdb, "MD5", imdb.URL, "imdb", _tar(members))


#: ml-1m's 18 genres
_GENRES = ["Action", "Adventure", "Animation", "Children's", "Comedy", "Crime",
           "Documentary", "Drama", "Fantasy", "Film-Noir", "Horror", "Musical", "Mystery",
           "Romance", "Sci-Fi", "Thriller", "War", "Western"]
_TITLE_WORDS = "night day love war return city last first dark star king house".split()


def _write_movielens(rng, users=60, movies=120, ratings=6400, title_length=37):
    """ml-1m files: a user's rating follows whether the movie's first genre is one the
    user's group likes, plus noise. Movie ids step by 8 up to 959 and titles are long, so
    that ids the book infers with (movie 783, title words up to 4140) exist; the training
    part holds the 21 batches of 256 that the book trains before it saves its model."""
    user_lines, movie_lines, rating_lines = [], [], []
    for uid in range(1, users + 1):
        user_lines.append(f"{uid}::{'MF'[uid % 2]}::{movielens.age_table[uid % 7]}::"
                          f"{uid % 21}::{10000 + uid}\n")
    genres_of = {}
    unique_words = iter(_made_up_words(movies * (title_length - 2)))
    movie_ids = [7 + 8 * k for k in range(movies)]
    for k, mid in enumerate(movie_ids):
        first = _GENRES[k % len(_GENRES)]
        second = _GENRES[(k * 5 + 3) % len(_GENRES)]
        genres_of[mid] = first
        words = [_TITLE_WORDS[(k * m) % len(_TITLE_WORDS)] for m in (1, 7)]
        words += [next(unique_words) for _ in range(title_length - 2)]
        genres = first if second == first else f"{first}|{second}"
        movie_lines.append(f"{mid}::{' '.join(words).title()} ({1980 + k % 30})::{genres}\n")
    for i in range(ratings):
        uid, mid = rng.randint(1, users + 1), movie_ids[rng.randint(movies)]
        liked = _GENRES.index(genres_of[mid]) % 3 == uid % 3
        score = int(np.clip(round((4.5 if liked else 2.0) + rng.randn() * 0.5), 1, 5))
        rating_lines.append(f"{uid}::{mid}::{score}::{978300000 + i}\n")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, lines in (("users.dat", user_lines), ("movies.dat", movie_lines),
                            ("ratings.dat", rating_lines)):
            archive.writestr(zipfile.ZipInfo(f"ml-1m/{name}", (1980, 1, 1, 0, 0, 0)),
                             "".join(lines).encode("latin-1"))
    _put(movielens, "MD5", movielens.URL, "movielens", buf.getvalue())


_ENGLISH = ("the a cat dog bird sees likes eats small big red old house tree fish man "
            "woman child").split()


def _write_wmt16(rng, train=400, test=40, val=20):
    """English-German pairs where each English word has one German word and the order is
    kept, so a sequence-to-sequence model can learn the mapping; tab-separated lines in
    wmt16/train, wmt16/test and wmt16/val."""
    german = {word: "de_" + word[::-1] for word in _ENGLISH}

    def lines(count):
        out = []
        for _ in range(count):
            words = [_ENGLISH[rng.randint(len(_ENGLISH))] for _ in range(rng.randint(3, 7))]
            out.append(" ".join(words) + "\t" + " ".join(german[w] for w in words) + "\n")
        return "".join(out).encode()
    _put(wmt16, "DATA_MD5", wmt16.DATA_URL, "wmt16", _tar({
        "wmt16/train": lines(train), "wmt16/test": lines(test), "wmt16/val": lines(val)}),
        save_name=wmt16.SAVE_NAME)


def _write_wmt14(rng, train=300, test=30, gen=10):
    """French-English pairs in wmt14.tgz, each (made-up) French word standing for one
    English word in the same place; src.dict and trg.dict start with <s>, <e>, <unk>."""
    french = {word: "fr_" + word[::-1] for word in _ENGLISH}

    def lines(count):
        out = []
        for _ in range(count):
            words = [_ENGLISH[rng.randint(len(_ENGLISH))] for _ in range(rng.randint(3, 7))]
            out.append(" ".join(french[w] for w in words) + "\t" + " ".join(words) + "\n")
        return "".join(out).encode()

    def dictionary(words):
        return "".join(f"{w}\n" for w in ["<s>", "<e>", "<unk>", *words]).encode()
    _put(wmt14, "MD5_TRAIN", wmt14.URL_TRAIN, "wmt14", _tar({
        "wmt14/src.dict": dictionary(sorted(french.values())),
        "wmt14/trg.dict": dictionary(sorted(_ENGLISH)),
        "wmt14/train/train": lines(train), "wmt14/test/test": lines(test),
        "wmt14/gen/gen": lines(gen)}))


#: dataset name -> the (url, module name, md5 attribute) of each file its readers download
_FILES = {
    "mnist": [(mnist, url, "mnist", md5) for url, md5 in [
        (mnist.TRAIN_IMAGE_URL, "TRAIN_IMAGE_MD5"), (mnist.TRAIN_LABEL_URL, "TRAIN_LABEL_MD5"),
        (mnist.TEST_IMAGE_URL, "TEST_IMAGE_MD5"), (mnist.TEST_LABEL_URL, "TEST_LABEL_MD5")]],
    "cifar": [(cifar, cifar.CIFAR10_URL, "cifar", "CIFAR10_MD5")],
    "imikolov": [(imikolov, imikolov.URL, "imikolov", "MD5")],
    "imdb": [(imdb, imdb.URL, "imdb", "MD5")],
    "movielens": [(movielens, movielens.URL, "movielens", "MD5")],
    "wmt16": [(wmt16, wmt16.DATA_URL, "wmt16", "DATA_MD5", wmt16.SAVE_NAME)],
    "wmt14": [(wmt14, wmt14.URL_TRAIN, "wmt14", "MD5_TRAIN")],
}


def is_cached(name):
    """True when the dataset's real files are in the cache with the md5s its module
    declares (so its readers need no download)."""
    for module, url, folder, md5_attr, *save_name in _FILES[name]:
        path = common.cache_path(url, folder, *save_name)
        if not os.path.exists(path) or common.md5file(path) != getattr(module, md5_attr):
            return False
    return True


#: dataset name -> writer of its sample files
SAMPLES = {"mnist": _write_mnist, "cifar": _write_cifar, "imikolov": _write_imikolov,
           "imdb": _write_imdb, "movielens": _write_movielens, "wmt16": _write_wmt16,
           "wmt14": _write_wmt14}


def use_samples(*names, home=None, seed=0):
    """Write the sample files of datasets ``names`` (all of :data:`SAMPLES` when none are
    given) under ``home`` (a new temporary folder when None), make it ``DATA_HOME`` and
    declare the files' md5s as their modules'; returns ``home``."""
    unknown = [n for n in names if n not in SAMPLES]
    if unknown:
        raise InvalidArgument(expected("use_samples", "dataset names",
                                       f"some of {sorted(SAMPLES)}", unknown))
    home = home if home is not None else tempfile.mkdtemp(prefix="fluid_nb_samples_")
    common.DATA_HOME = str(home)
    rng = np.random.RandomState(seed)
    for name in names or SAMPLES:
        SAMPLES[name](rng)
    return str(home)
