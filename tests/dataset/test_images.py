"""mnist (gzipped IDX files) and cifar (tarballs of pickled batches), read from small files
written in those formats."""
import os
import pickle
import struct

import numpy as np
import pytest

import fluid_nb.paddle as paddle
from fluid_nb.dataset import cifar, mnist
from fluid_nb.errors import InvalidArgument

from .conftest import gz, tar_bytes


def _idx_images(pixels):
    n, rows, cols = pixels.shape
    return struct.pack(">IIII", 2051, n, rows, cols) + pixels.astype(np.uint8).tobytes()


def _idx_labels(labels):
    return struct.pack(">II", 2049, len(labels)) + bytes(labels)


@pytest.fixture
def mnist_files(put):
    rng = np.random.RandomState(3)
    train_pixels = rng.randint(0, 256, size=(3, 28, 28))
    train_pixels[0, 0, :2] = [0, 255]
    test_pixels = rng.randint(0, 256, size=(2, 28, 28))
    put(mnist, "TRAIN_IMAGE_MD5", mnist.TRAIN_IMAGE_URL, "mnist", gz(_idx_images(train_pixels)))
    put(mnist, "TRAIN_LABEL_MD5", mnist.TRAIN_LABEL_URL, "mnist", gz(_idx_labels([7, 0, 9])))
    put(mnist, "TEST_IMAGE_MD5", mnist.TEST_IMAGE_URL, "mnist", gz(_idx_images(test_pixels)))
    put(mnist, "TEST_LABEL_MD5", mnist.TEST_LABEL_URL, "mnist", gz(_idx_labels([4, 1])))
    return train_pixels, test_pixels


def test_mnist_samples_are_784_float32_in_minus1_1_and_int_labels(mnist_files):
    train_pixels, test_pixels = mnist_files
    samples = list(paddle.dataset.mnist.train()())
    assert [label for _, label in samples] == [7, 0, 9]
    for (image, label), pixels in zip(samples, train_pixels):
        assert type(label) is int
        assert image.dtype == np.float32 and image.shape == (784,)
        want = pixels.reshape(784).astype(np.float32) / 255.0 * 2.0 - 1.0
        np.testing.assert_array_equal(image, want)
    assert samples[0][0][0] == -1.0 and samples[0][0][1] == 1.0
    test = list(paddle.dataset.mnist.test()())
    assert [label for _, label in test] == [4, 1]
    np.testing.assert_allclose(test[1][0], test_pixels[1].reshape(784) / 127.5 - 1, atol=1e-6)


def test_an_mnist_reader_reads_its_files_once_and_scales_them_a_block_at_a_time(
        mnist_files, monkeypatch):
    """Across blocks (of two images here) the samples are the whole file's, in file order;
    a later pass yields the same samples from the pixels the reader kept (the files may be
    gone by then), whatever the caller did to the first pass's arrays."""
    monkeypatch.setattr(mnist, "_BLOCK", 2)
    train_pixels, _ = mnist_files
    reader = paddle.dataset.mnist.train()
    first = list(reader())
    want = train_pixels.reshape(3, 784).astype(np.float32) / 255.0 * 2.0 - 1.0
    np.testing.assert_array_equal(np.stack([image for image, _ in first]), want)
    assert [label for _, label in first] == [7, 0, 9]
    for image, _ in first:
        image[:] = 5.0
    for name in os.listdir(os.path.join(mnist.common.DATA_HOME, "mnist")):
        os.remove(os.path.join(mnist.common.DATA_HOME, "mnist", name))
    again = list(reader())
    np.testing.assert_array_equal(np.stack([image for image, _ in again]), want)
    assert [label for _, label in again] == [7, 0, 9]


def test_mnist_rejects_a_file_that_is_not_idx(put):
    put(mnist, "TRAIN_IMAGE_MD5", mnist.TRAIN_IMAGE_URL, "mnist", gz(b"\0" * 64))
    put(mnist, "TRAIN_LABEL_MD5", mnist.TRAIN_LABEL_URL, "mnist", gz(_idx_labels([1])))
    with pytest.raises(InvalidArgument, match="IDX magic number expected 2051, but received 0"):
        next(mnist.train()())


def _batch(rows, labels, key=b"labels"):
    return pickle.dumps({b"batch_label": b"x", key: labels,
                         b"data": np.asarray(rows, dtype=np.uint8)}, protocol=2)


@pytest.fixture
def cifar10(put):
    rng = np.random.RandomState(5)
    rows = [rng.randint(0, 256, size=(n, 3072)) for n in (2, 1, 2)]
    members = {
        "cifar-10-batches-py/batches.meta": pickle.dumps({b"label_names": [b"cat"]}),
        "cifar-10-batches-py/data_batch_1": _batch(rows[0], [3, 6]),
        "cifar-10-batches-py/data_batch_2": _batch(rows[1], [9]),
        "cifar-10-batches-py/test_batch": _batch(rows[2], [0, 1]),
    }
    put(cifar, "CIFAR10_MD5", cifar.CIFAR10_URL, "cifar", tar_bytes(members))
    return rows


def test_cifar10_samples_are_3072_float32_in_0_1_with_labels_in_tar_order(cifar10):
    samples = list(paddle.dataset.cifar.train10()())
    assert [label for _, label in samples] == [3, 6, 9]
    for (image, label), want in zip(samples, np.concatenate(cifar10[:2])):
        assert type(label) is int
        assert image.dtype == np.float32 and image.shape == (3072,)
        np.testing.assert_array_equal(image, (want / 255.0).astype(np.float32))
    test = list(cifar.test10()())
    assert [label for _, label in test] == [0, 1]
    assert all(0.0 <= img.min() and img.max() <= 1.0 for img, _ in test)


def test_cifar10_cycle_starts_over(cifar10):
    it = cifar.test10(cycle=True)()
    assert [next(it)[1] for _ in range(5)] == [0, 1, 0, 1, 0]


def test_cifar100_uses_the_fine_labels(put):
    rows = np.arange(2 * 3072).reshape(2, 3072) % 256
    members = {
        "cifar-100-python/meta": pickle.dumps({b"fine_label_names": []}),
        "cifar-100-python/test": pickle.dumps({b"fine_labels": [42], b"coarse_labels": [1],
                                               b"data": rows[:1].astype(np.uint8)}),
        "cifar-100-python/train": pickle.dumps({b"fine_labels": [99, 5], b"coarse_labels":
                                                [0, 0], b"data": rows.astype(np.uint8)}),
    }
    put(cifar, "CIFAR100_MD5", cifar.CIFAR100_URL, "cifar", tar_bytes(members))
    assert [label for _, label in cifar.train100()()] == [99, 5]
    (image, label), = list(cifar.test100()())
    assert label == 42
    np.testing.assert_array_equal(image, (rows[0] / 255.0).astype(np.float32))


class _Payload:
    def __reduce__(self):
        return (os.system, ("echo owned",))


def test_cifar_pickles_cannot_run_code(put):
    members = {"cifar-10-batches-py/test_batch": pickle.dumps({b"data": _Payload()})}
    put(cifar, "CIFAR10_MD5", cifar.CIFAR10_URL, "cifar", tar_bytes(members))
    with pytest.raises(InvalidArgument, match="only NumPy arrays"):
        next(cifar.test10()())
