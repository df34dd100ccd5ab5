"""MNIST handwritten digits (``paddle.dataset.mnist``): 60,000 training and 10,000 test
images of 28x28 grey pixels, read from the four gzipped IDX files Paddle downloads into
``DATA_HOME/mnist/``.

Samples are ``(image, label)``: ``image`` a float32 array of shape ``[784]`` (rows of 28
pixels, top to bottom) with values in ``[-1, 1]`` (``pixel / 255 * 2 - 1``), ``label`` a
Python int in ``0..9``, in file order.

IDX format: a big-endian header (magic 2051, count, rows, cols for images; magic 2049,
count for labels) followed by one unsigned byte per pixel or label.

A reader reads its two files at its first pass and keeps their bytes (47 MB for the
training set) for its later passes, which scale them to float32 a block of images at a
time: an epoch after the first reads nothing from disk. The bytes go with the reader.
"""
import gzip
import struct

import numpy as np

from ...errors import InvalidArgument, expected
from . import common

__all__ = ["train", "test", "fetch"]

URL_PREFIX = "https://dataset.bj.bcebos.com/mnist/"
TEST_IMAGE_URL = URL_PREFIX + "t10k-images-idx3-ubyte.gz"
TEST_IMAGE_MD5 = "9fb629c4189551a2d022fa330f9573f3"
TEST_LABEL_URL = URL_PREFIX + "t10k-labels-idx1-ubyte.gz"
TEST_LABEL_MD5 = "ec29112dd5afa0611ce80d1b7f02629c"
TRAIN_IMAGE_URL = URL_PREFIX + "train-images-idx3-ubyte.gz"
TRAIN_IMAGE_MD5 = "f68b3c2dcbeaaa9fbdd348bbdeb94873"
TRAIN_LABEL_URL = URL_PREFIX + "train-labels-idx1-ubyte.gz"
TRAIN_LABEL_MD5 = "d53e105ee54ea40749a09fcbcd1e9432"

IMAGE_MAGIC = 2051
LABEL_MAGIC = 2049


def _read_idx(filename, magic, header):
    """(header fields, payload bytes) of a gzipped IDX file, its magic number checked."""
    with gzip.open(filename, "rb") as f:
        data = f.read()
    fields = struct.unpack_from(header, data, 0)
    if fields[0] != magic:
        raise InvalidArgument(expected(f"mnist: {filename}", "IDX magic number", magic,
                                       fields[0]))
    return fields, data[struct.calcsize(header):]


def _pixels(image_filename, label_filename):
    """(pixels uint8 [n, rows*cols], labels uint8 [n]) of two IDX files, checked."""
    (_, count, rows, cols), pixels = _read_idx(image_filename, IMAGE_MAGIC, ">IIII")
    (_, label_count), labels = _read_idx(label_filename, LABEL_MAGIC, ">II")
    if label_count != count or len(pixels) < count * rows * cols or len(labels) < count:
        raise InvalidArgument(expected(
            f"mnist: {image_filename}", "images and labels",
            f"{count} images of {rows}x{cols} pixels and {count} labels",
            f"{len(pixels)} pixel bytes and {label_count} labels ({len(labels)} bytes)"))
    return (np.frombuffer(pixels, np.uint8, count * rows * cols).reshape(count, rows * cols),
            np.frombuffer(labels, np.uint8, count))


def _scaled(pixels):
    # the same float32 steps as Paddle's reader, so the values agree bit for bit
    return pixels.astype(np.float32) / 255.0 * 2.0 - 1.0


def load(image_filename, label_filename):
    """(images float32 [n, rows*cols] in [-1, 1], labels uint8 [n]) from two IDX files."""
    pixels, labels = _pixels(image_filename, label_filename)
    return _scaled(pixels), labels


#: images scaled at a time by a reader: a block's arrays stay in the processor's cache,
#: where the whole training set's (188 MB of float32, three times over) made every page anew
_BLOCK = 1024


def reader_creator(image_filename, label_filename):
    """A reader of ``(image float32[784], label int)`` from two gzipped IDX files. The files
    are read at the reader's first pass and their pixels (a byte each) kept for the next
    ones: they go with the reader."""
    read = []

    def reader():
        if not read:
            read.append(_pixels(image_filename, label_filename))
        pixels, labels = read[0]
        for start in range(0, len(labels), _BLOCK):
            yield from zip(_scaled(pixels[start:start + _BLOCK]),
                           labels[start:start + _BLOCK].tolist())
    return reader


def train():
    """Reader of the 60,000 training samples (see the module docstring for the layout)."""
    return reader_creator(
        common.download(TRAIN_IMAGE_URL, "mnist", TRAIN_IMAGE_MD5),
        common.download(TRAIN_LABEL_URL, "mnist", TRAIN_LABEL_MD5))


def test():
    """Reader of the 10,000 test samples (see the module docstring for the layout)."""
    return reader_creator(
        common.download(TEST_IMAGE_URL, "mnist", TEST_IMAGE_MD5),
        common.download(TEST_LABEL_URL, "mnist", TEST_LABEL_MD5))


def fetch():
    """Download the four files into the cache."""
    train()
    test()
