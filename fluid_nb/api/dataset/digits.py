"""Handwritten digits: 1,797 real 8x8 grey images (UCI optical digits, as distributed with
scikit-learn), in the shape of Paddle's MNIST readers.

Pixels (0..16) are scaled to [-1, 1] as Paddle scales MNIST's. A fixed shuffle (seed 0)
splits 1,437 training and 360 held-out test images. Samples are
``(image float32[64], label int64)``; reshape to ``[1, 8, 8]`` for convolutions.
"""
import gzip
import pathlib

import numpy as np

_FILE = pathlib.Path(__file__).with_name("data") / "digits.csv.gz"
_cache = {}
TEST_SIZE = 360


def load_data():
    """(train_images, train_labels, test_images, test_labels)."""
    if not _cache:
        with gzip.open(_FILE, "rt") as f:
            data = np.loadtxt(f, delimiter=",", dtype=np.float64)
        images = (data[:, :64] / 16.0 * 2.0 - 1.0).astype(np.float32)
        labels = data[:, 64].astype(np.int64)
        order = np.random.RandomState(0).permutation(len(labels))
        test, train = order[:TEST_SIZE], order[TEST_SIZE:]
        _cache["data"] = (images[train], labels[train], images[test], labels[test])
    return _cache["data"]


def _reader(images, labels):
    def reader():
        for image, label in zip(images, labels):
            yield image, int(label)
    return reader


def train():
    images, labels, _, _ = load_data()
    return _reader(images, labels)


def test():
    _, _, images, labels = load_data()
    return _reader(images, labels)
