"""CIFAR-10 and CIFAR-100 (``paddle.dataset.cifar``): 32x32 colour images read from the
"python version" tarballs Paddle downloads into ``DATA_HOME/cifar/``.

Samples are ``(image, label)``: ``image`` a float32 array of shape ``[3072]`` holding the
1024 red, then 1024 green, then 1024 blue values of the image, row by row, scaled to
``[0, 1]`` (``byte / 255``); ``label`` a Python int, ``0..9`` for CIFAR-10 and the fine
label ``0..99`` for CIFAR-100. Batches are read in the order the tarball stores them.

Each batch in the tarball is a pickled dict with ``data`` (uint8 ``[n, 3072]``) and
``labels`` (CIFAR-10) or ``fine_labels`` (CIFAR-100). The pickles are read by an
unpickler that only rebuilds NumPy arrays, lists, dicts, strings and numbers: a tampered
file cannot run code.
"""
import codecs
import io
import pickle
import tarfile

import numpy as np

from ...errors import InvalidArgument, expected
from . import common

__all__ = ["train10", "test10", "train100", "test100", "fetch"]

URL_PREFIX = "https://www.cs.toronto.edu/~kriz/"
CIFAR10_URL = URL_PREFIX + "cifar-10-python.tar.gz"
CIFAR10_MD5 = "c58f30108f718f92721af3b95e74349a"
CIFAR100_URL = URL_PREFIX + "cifar-100-python.tar.gz"
CIFAR100_MD5 = "eb9058c3a382ffc7106e4002c42a8d85"

_ARRAY_REBUILDER = np.zeros(1).__reduce__()[0]  # numpy's _reconstruct, wherever it lives
_SAFE_GLOBALS = {
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    ("numpy.core.multiarray", "_reconstruct"): _ARRAY_REBUILDER,
    ("numpy._core.multiarray", "_reconstruct"): _ARRAY_REBUILDER,
    ("_codecs", "encode"): codecs.encode,  # how Python 3 pickles bytes at protocol 2
}


class _ArrayUnpickler(pickle.Unpickler):
    """Rebuilds only the objects a CIFAR batch holds."""

    def find_class(self, module, name):
        try:
            return _SAFE_GLOBALS[(module, name)]
        except KeyError:
            raise InvalidArgument(expected("cifar: batch pickle", "only NumPy arrays",
                                           "numpy.ndarray", f"{module}.{name}")) from None


def load_batch(data):
    """A batch dict (bytes keys, as Paddle reads it) from the bytes of one pickle."""
    return _ArrayUnpickler(io.BytesIO(data), encoding="bytes").load()


def _samples(batch, name):
    labels = batch.get(b"labels", batch.get(b"fine_labels"))
    if b"data" not in batch or labels is None:
        raise InvalidArgument(expected(f"cifar: batch {name}", "keys",
                                       "data and labels (or fine_labels)", sorted(batch)))
    for sample, label in zip(batch[b"data"], labels):
        yield (sample / 255.0).astype(np.float32), int(label)


def reader_creator(filename, sub_name, cycle=False):
    """A reader of every batch in tarball ``filename`` whose member name contains
    ``sub_name``; with ``cycle`` it starts over at the end, forever."""
    def reader():
        with tarfile.open(filename, mode="r") as tar:
            members = [m for m in tar.getmembers() if m.isfile() and sub_name in m.name]
            while True:
                for member in members:
                    batch = load_batch(tar.extractfile(member).read())
                    yield from _samples(batch, member.name)
                if not cycle or not members:
                    break
    return reader


def train10(cycle=False):
    """Reader of the 50,000 CIFAR-10 training images (``data_batch_1..5``)."""
    return reader_creator(common.download(CIFAR10_URL, "cifar", CIFAR10_MD5), "data_batch",
                          cycle=cycle)


def test10(cycle=False):
    """Reader of the 10,000 CIFAR-10 test images (``test_batch``)."""
    return reader_creator(common.download(CIFAR10_URL, "cifar", CIFAR10_MD5), "test_batch",
                          cycle=cycle)


def train100():
    """Reader of the 50,000 CIFAR-100 training images, fine labels."""
    return reader_creator(common.download(CIFAR100_URL, "cifar", CIFAR100_MD5), "train")


def test100():
    """Reader of the 10,000 CIFAR-100 test images, fine labels."""
    return reader_creator(common.download(CIFAR100_URL, "cifar", CIFAR100_MD5), "test")


def fetch():
    """Download both tarballs into the cache."""
    common.download(CIFAR10_URL, "cifar", CIFAR10_MD5)
    common.download(CIFAR100_URL, "cifar", CIFAR100_MD5)
