"""imikolov (PTB tarball), imdb (aclImdb tarball) and movielens (ml-1m zip), read from
small files in those formats; dictionaries and samples worked out by hand."""
import numpy as np
import pytest

import fluid_nb.paddle as paddle
from fluid_nb.dataset import imdb, imikolov, movielens
from fluid_nb.errors import InvalidArgument

from .conftest import tar_bytes, zip_bytes


@pytest.fixture
def ptb(put):
    members = {"./simple-examples/": b"",
               "./simple-examples/data/ptb.train.txt": b" a b a <unk> \n b a c \n",
               "./simple-examples/data/ptb.valid.txt": b" a c \n"}
    put(imikolov, "MD5", imikolov.URL, "imikolov", tar_bytes(members))


def test_imikolov_dict_counts_both_files_with_line_marks_and_unk_last(ptb):
    # a: 4, <s>/<e>: 3 (one per line), b: 2, c: 2; the text's own <unk> is not counted
    assert paddle.dataset.imikolov.build_dict(min_word_freq=1) == \
        {"a": 0, "<e>": 1, "<s>": 2, "b": 3, "c": 4, "<unk>": 5}
    assert imikolov.build_dict(min_word_freq=2) == {"a": 0, "<e>": 1, "<s>": 2, "<unk>": 3}
    assert imikolov.build_dict() == {"<unk>": 0}  # Paddle's default keeps words seen > 50 times


def test_imikolov_ngram_windows_over_marked_lines(ptb):
    word_idx = imikolov.build_dict(min_word_freq=1)
    assert list(imikolov.train(word_idx, 3)()) == [
        (2, 0, 3), (0, 3, 0), (3, 0, 5), (0, 5, 1),
        (2, 3, 0), (3, 0, 4), (0, 4, 1)]
    assert list(imikolov.test(word_idx, 5)()) == []  # 4 ids < 5: no window
    assert list(imikolov.test(word_idx, 4)()) == [(2, 0, 4, 1)]


def test_imikolov_seq_samples_and_length_limit(ptb):
    word_idx = imikolov.build_dict(min_word_freq=1)
    seq = imikolov.DataType.SEQ
    assert list(imikolov.train(word_idx, 0, seq)()) == [
        ([2, 0, 3, 0, 5], [0, 3, 0, 5, 1]), ([2, 3, 0, 4], [3, 0, 4, 1])]
    assert list(imikolov.train(word_idx, 4, seq)()) == [([2, 3, 0, 4], [3, 0, 4, 1])]
    with pytest.raises(InvalidArgument, match="data_type expected"):
        imikolov.train(word_idx, 3, data_type=7)


IMDB_FILES = {
    "aclImdb/train/pos/0_9.txt": b"Great movie, GREAT fun!\n",
    "aclImdb/train/neg/1_2.txt": b"Boring... a boring movie.\r\n",
    "aclImdb/train/unsup/2_0.txt": b"great great great great",
    "aclImdb/test/pos/3_10.txt": b"Caf\xc3\xa9 \xc3\x89COLE great",
    "aclImdb/test/neg/4_1.txt": b"boring",
    "aclImdb/README": b"not a review",
}


@pytest.fixture
def aclimdb(put):
    put(imdb, "MD5", imdb.URL, "imdb", tar_bytes(IMDB_FILES))


def test_imdb_tokenises_as_paddle_bytes_punctuation_removed_ascii_lowered(aclimdb):
    import re
    docs = list(imdb.tokenize(re.compile(r"aclImdb/.*\.txt$")))
    assert docs[0] == ["great", "movie", "great", "fun"]
    assert docs[1] == ["boring", "a", "boring", "movie"]
    assert docs[3] == ["café", "École", "great"]  # only ASCII letters are lower-cased


def test_imdb_word_dict_over_train_and_test_reviews(aclimdb, monkeypatch):
    assert paddle.dataset.imdb.word_dict() == {"<unk>": 0}  # nothing is seen > 150 times
    monkeypatch.setattr(imdb, "CUTOFF", 1)
    # great: 3 (the unsup folder is not counted), boring: 3, movie: 2
    assert imdb.word_dict() == {"boring": 0, "great": 1, "movie": 2, "<unk>": 3}


def test_imdb_samples_positive_first_labelled_0_then_negative_labelled_1(aclimdb):
    word_idx = {"boring": 0, "great": 1, "movie": 2, "<unk>": 3}
    assert list(paddle.dataset.imdb.train(word_idx)()) == [
        ([1, 2, 1, 3], 0), ([0, 3, 0, 2], 1)]
    assert list(imdb.test(word_idx)()) == [([3, 3, 1], 0), ([0], 1)]


ML_MOVIES = (b"1::Toy Story (1995)::Animation|Children's|Comedy\n"
             b"2::Jumanji (1995)::Adventure|Children's|Fantasy\n")
ML_USERS = b"1::F::1::10::48067\n2::M::56::16::70072\n"
ML_RATINGS = b"".join(b"%d::%d::%d::97830%04d\n" % (1 + i % 2, 1 + (i // 2) % 2, 1 + i % 5, i)
                      for i in range(40))


@pytest.fixture
def ml1m(put):
    put(movielens, "MD5", movielens.URL, "movielens",
        zip_bytes({"ml-1m/movies.dat": ML_MOVIES, "ml-1m/users.dat": ML_USERS,
                   "ml-1m/ratings.dat": ML_RATINGS, "ml-1m/README": b"readme"}))


def _expected_ratings(is_test, seed=0, ratio=0.1):
    draws = np.random.RandomState(seed).random_sample(40)
    users = {1: [1, 1, 0, 10], 2: [2, 0, 6, 16]}
    movies = {1: [1, [1, 2, 3], [2, 1]], 2: [2, [0, 2, 4], [0]]}
    return [users[1 + i % 2] + movies[1 + (i // 2) % 2] + [[float(1 + i % 5) * 2 - 5.0]]
            for i in range(40) if (draws[i] < ratio) == is_test]


def test_movielens_info_helpers(ml1m):
    ml = paddle.dataset.movielens
    assert ml.movie_categories() == {"Adventure": 0, "Animation": 1, "Children's": 2,
                                     "Comedy": 3, "Fantasy": 4}
    assert ml.get_movie_title_dict() == {"jumanji": 0, "story": 1, "toy": 2}
    assert (ml.max_user_id(), ml.max_movie_id(), ml.max_job_id()) == (2, 2, 16)
    user = ml.user_info()[2]
    assert (user.index, user.is_male, ml.age_table[user.age], user.job_id) == (2, True, 56, 16)
    assert user.value() == [2, 0, 6, 16]
    movie = ml.movie_info()[1]
    assert movie.title.split() == ["Toy", "Story"]
    assert movie.categories == ["Animation", "Children's", "Comedy"]
    assert movie.value() == [1, [1, 2, 3], [2, 1]]


def test_movielens_samples_are_the_callers_to_change(ml1m):
    """A movie's ids are looked up once, but every sample holds lists of its own: changing
    one sample's categories or title changes no other sample, and no later reading."""
    first = list(paddle.dataset.movielens.train()())
    for sample in first:
        sample[5].append(99)
        sample[6][:] = []
    assert list(paddle.dataset.movielens.train()()) == _expected_ratings(is_test=False)
    assert paddle.dataset.movielens.movie_info()[1].value() == [1, [1, 2, 3], [2, 1]]


def test_movielens_samples_split_as_paddle_without_touching_numpys_global_rng(ml1m):
    state = np.random.get_state()
    train = list(paddle.dataset.movielens.train()())
    test = list(movielens.test()())
    assert train == _expected_ratings(is_test=False)
    assert test == _expected_ratings(is_test=True)
    assert len(train) + len(test) == 40 and test
    assert list(movielens.test(rand_seed=3, test_ratio=0.5)()) == \
        _expected_ratings(True, seed=3, ratio=0.5)
    after = np.random.get_state()
    assert all(np.array_equal(a, b) for a, b in zip(state, after))
    sample = train[0]
    assert len(sample) == 8 and isinstance(sample[7][0], float)
