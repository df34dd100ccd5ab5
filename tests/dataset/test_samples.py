"""The small stand-ins for the book's datasets: written in the readers' own formats,
repeatable from their seed, and only used when asked for."""
import os

import numpy as np
import pytest

import fluid_nb.paddle as paddle
from fluid_nb.dataset import (cifar, common, imdb, imikolov, mnist, movielens, samples, wmt14,
                              wmt16)
from fluid_nb.errors import InvalidArgument


@pytest.fixture
def restored(monkeypatch, tmp_path):
    monkeypatch.setattr(common, "DATA_HOME", str(tmp_path / "real"))
    for module, attr in [(mnist, "TRAIN_IMAGE_MD5"), (mnist, "TRAIN_LABEL_MD5"),
                         (mnist, "TEST_IMAGE_MD5"), (mnist, "TEST_LABEL_MD5"),
                         (cifar, "CIFAR10_MD5"), (imikolov, "MD5"), (imdb, "MD5"),
                         (movielens, "MD5"), (wmt16, "DATA_MD5"), (wmt14, "MD5_TRAIN")]:
        monkeypatch.setattr(module, attr, getattr(module, attr))
    return tmp_path


def test_every_sample_reads_through_the_dataset_readers(restored):
    assert not samples.is_cached("mnist")
    home = samples.use_samples(home=str(restored / "samples"))
    assert common.DATA_HOME == home and samples.is_cached("mnist")
    image, label = next(paddle.dataset.mnist.train()())
    assert image.shape == (784,) and image.dtype == np.float32 and 0 <= label < 10
    image, label = next(paddle.dataset.cifar.train10()())
    assert image.shape == (3072,) and 0 <= label < 10
    words = paddle.dataset.imikolov.build_dict()  # every word over the 50-occurrence cut
    assert len(words) > 20 and len(next(paddle.dataset.imikolov.train(words, 5)())) == 5
    word_dict = paddle.dataset.imdb.word_dict()  # and over the 150-occurrence cut
    review, label = next(paddle.dataset.imdb.train(word_dict)())
    assert label in (0, 1) and all(0 <= w < len(word_dict) for w in review)
    rating = next(paddle.dataset.movielens.train()())
    assert len(rating) == 8 and paddle.dataset.movielens.max_user_id() > 0
    source, target, target_next = next(paddle.dataset.wmt14.train(30000)())
    assert source[0] == 0 and source[-1] == 1 and target[1:] == target_next[:-1]
    assert len(paddle.dataset.wmt14.get_dict(30000)[1]) > 10


def test_the_same_seed_writes_the_same_bytes(restored):
    first = samples.use_samples("imdb", home=str(restored / "a"), seed=4)
    second = samples.use_samples("imdb", home=str(restored / "b"), seed=4)
    path_a = common.cache_path(imdb.URL, "imdb").replace(second, first)
    path_b = common.cache_path(imdb.URL, "imdb")
    with open(path_a, "rb") as a, open(path_b, "rb") as b:
        assert a.read() == b.read()
    assert os.path.dirname(path_b).startswith(second)


def test_an_unknown_dataset_name_is_refused(restored):
    with pytest.raises(InvalidArgument, match="use_samples: dataset names expected some of"):
        samples.use_samples("mnist", "imagenet")
