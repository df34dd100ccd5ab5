"""UCI housing (Boston, 506 rows, 13 features), prepared as Paddle's ``uci_housing`` does
(also ``paddle.dataset.uci_housing``).

Each feature column becomes ``(x - mean) / (max - min)`` over all 506 rows; the price (in
$1000s) is left as is. The first 80% of rows (404) are the training set, the rest (102)
the test set. Samples are ``(features float64[13], price float64[1])``, Paddle's dtypes
(``DataFeeder`` casts them to the data layers' float32); :func:`load_data` gives the same
rows as float32 arrays.

The data ships inside the package, so nothing is downloaded: the file is the public
dataset as distributed with scikit-learn 1.1, the same 506 rows Paddle downloads from
:data:`URL` as ``housing.data``.
"""
import csv
import pathlib

import numpy as np

FEATURE_NAMES = ["CRIM", "ZN", "INDUS", "CHAS", "NOX", "RM", "AGE", "DIS", "RAD", "TAX",
                 "PTRATIO", "B", "LSTAT"]
URL = "http://paddlemodels.bj.bcebos.com/uci_housing/housing.data"
MD5 = "d4accdce7a25600298819f8e28e8d593"
_FILE = pathlib.Path(__file__).with_name("data") / "boston_house_prices.csv"
_cache = {}


def load_data(ratio=0.8):
    """(train, test) float32 arrays of shape [rows, 14]: 13 normalised features + price."""
    train, test = _normalised(ratio)
    return train.astype(np.float32), test.astype(np.float32)


def _normalised(ratio):
    """(train, test) float64 rows, normalised and split as Paddle does."""
    if ratio not in _cache:
        with open(_FILE, newline="") as f:
            rows = list(csv.reader(f))[2:]
        data = np.array(rows, dtype=np.float64)
        maximums, minimums = data.max(axis=0), data.min(axis=0)
        averages = data.sum(axis=0) / data.shape[0]
        for i in range(data.shape[1] - 1):
            data[:, i] = (data[:, i] - averages[i]) / (maximums[i] - minimums[i])
        offset = int(data.shape[0] * ratio)
        _cache[ratio] = (data[:offset], data[offset:])
    return _cache[ratio]


def _reader(ratio, part):
    """A reader of the ``part`` (0: train, 1: test) rows' samples: read-only views of the
    cached table, made once (slicing two views a row took a third of an epoch's reading)."""
    key = (ratio, part)
    if key not in _samples:
        data = _normalised(ratio)[part]
        data.flags.writeable = False  # samples are views of the cached rows
        _samples[key] = [(row[:-1], row[-1:]) for row in data]
    samples = _samples[key]

    def reader():
        yield from samples
    return reader


_samples = {}  # (ratio, part) -> the samples, made once


def train():
    """Reader of the 404 training samples ``(features float64[13], price float64[1])``."""
    return _reader(0.8, 0)


def test():
    """Reader of the 102 test samples ``(features float64[13], price float64[1])``."""
    return _reader(0.8, 1)
