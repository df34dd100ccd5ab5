"""MovieLens 1M (``paddle.dataset.movielens``): one million ratings of 3,900 movies by
6,040 users, read from ``ml-1m.zip`` in ``DATA_HOME/movielens/``.

The zip holds ``ml-1m/users.dat`` (``UserID::Gender::Age::Occupation::Zip``),
``ml-1m/movies.dat`` (``MovieID::Title (Year)::Genre|Genre...``) and
``ml-1m/ratings.dat`` (``UserID::MovieID::Rating::Timestamp``), Latin-1 text.

A sample is one rating, a list of 8 fields::

    [user_id, gender, age, job_id, movie_id, category_ids, title_ids, [score]]

``user_id``, ``movie_id``, ``job_id`` (0..20): the ints of the files; ``gender``: 0 male,
1 female; ``age``: the index of the user's age group in :data:`age_table`;
``category_ids``: list of int (ids in :func:`movie_categories`); ``title_ids``: list of int,
the lower-cased words of the title without its ``(year)`` (ids in
:func:`get_movie_title_dict`); ``score``: float, ``stars * 2 - 5`` (so -3.0 .. 5.0).

Ratings are split as Paddle splits them: a generator seeded with ``rand_seed`` draws one
number per line of ``ratings.dat`` and a line goes to the test set when it is below
``test_ratio``. The generator is a private ``numpy.random.RandomState`` (the draws equal
those of ``np.random.seed(rand_seed)``), so NumPy's global random state is left alone.

One difference: Paddle numbers title words and categories in the iteration order of a
Python set, which changes from one process to the next; here they are numbered in sorted
order, so ids are the same in every run.
"""
import functools
import re
import zipfile

import numpy as np

from ...errors import InvalidArgument, expected
from . import common

__all__ = ["train", "test", "get_movie_title_dict", "max_movie_id", "max_user_id",
           "max_job_id", "movie_categories", "user_info", "movie_info", "age_table",
           "MovieInfo", "UserInfo", "fetch"]

URL = "https://dataset.bj.bcebos.com/movielens%2Fml-1m.zip"
MD5 = "c4d9eecfca2ab87c1945afe126590906"

age_table = [1, 18, 25, 35, 45, 50, 56]
_TITLE = re.compile(r"^(.*)\((\d+)\)$")


class MovieInfo:
    """A movie: ``index`` (its id), ``categories`` (genre names), ``title`` (without the
    year)."""

    def __init__(self, index, categories, title, meta=None):
        self.index = int(index)
        self.categories = categories
        self.title = title
        self._meta = meta
        self._ids = None

    def value(self):
        """``[movie_id, category_ids, title_word_ids]``, as in a sample (new lists at each
        call: a sample is the reader's caller's to change)."""
        if self._ids is None:  # a movie is in thousands of ratings: its ids are looked up once
            self._ids = (tuple(self._meta.categories[c] for c in self.categories),
                         tuple(self._meta.title_words[w.lower()] for w in self.title.split()))
        return [self.index, list(self._ids[0]), list(self._ids[1])]

    def __repr__(self):
        return f"<MovieInfo id({self.index}), title({self.title}), " \
               f"categories({self.categories})>"


class UserInfo:
    """A user: ``index`` (id), ``is_male``, ``age`` (index into ``age_table``),
    ``job_id``."""

    def __init__(self, index, gender, age, job_id):
        self.index = int(index)
        self.is_male = gender == "M"
        self.age = age_table.index(int(age))
        self.job_id = int(job_id)

    def value(self):
        """``[user_id, gender (0 male, 1 female), age index, job_id]``, as in a sample."""
        return [self.index, 0 if self.is_male else 1, self.age, self.job_id]

    def __repr__(self):
        return f"<UserInfo id({self.index}), gender({'M' if self.is_male else 'F'}), " \
               f"age({age_table[self.age]}), job({self.job_id})>"


class _Meta:
    """Users, movies and the two dictionaries of one zip file."""

    def __init__(self, path):
        self.movies, self.users = {}, {}
        titles, categories = set(), set()
        with zipfile.ZipFile(path) as package:
            for movie_id, title, genres in _records(package, "ml-1m/movies.dat", 3):
                match = _TITLE.match(title)
                if match is None:
                    raise InvalidArgument(expected("movielens: movies.dat", "title",
                                                   "'Name (Year)'", repr(title)))
                genres = genres.split("|")
                categories.update(genres)
                titles.update(w.lower() for w in match.group(1).split())
                self.movies[int(movie_id)] = MovieInfo(movie_id, genres, match.group(1), self)
            for uid, gender, age, job, _ in _records(package, "ml-1m/users.dat", 5):
                self.users[int(uid)] = UserInfo(uid, gender, age, job)
        self.title_words = {w: i for i, w in enumerate(sorted(titles))}
        self.categories = {c: i for i, c in enumerate(sorted(categories))}


def _records(package, name, fields):
    with package.open(name) as f:
        for line in f:
            parts = line.decode("latin-1").strip().split("::")
            if len(parts) != fields:
                raise InvalidArgument(expected(f"movielens: {name}", "fields per line",
                                               fields, f"{len(parts)} in {line!r}"))
            yield parts


@functools.lru_cache(maxsize=4)
def _meta_of(path, md5):
    return _Meta(path)


def _meta():
    path = common.download(URL, "movielens", MD5)
    return path, _meta_of(path, MD5)


def _reader_creator(rand_seed, test_ratio, is_test):
    path, meta = _meta()

    def reader():
        draws = np.random.RandomState(rand_seed)
        with zipfile.ZipFile(path) as package:
            for uid, movie_id, stars, _ in _records(package, "ml-1m/ratings.dat", 4):
                if (draws.random_sample() < test_ratio) == is_test:
                    score = float(stars) * 2 - 5.0
                    yield (meta.users[int(uid)].value() + meta.movies[int(movie_id)].value()
                           + [[score]])
    return reader


def train(rand_seed=0, test_ratio=0.1):
    """Reader of the training ratings (see the module docstring for the 8 fields)."""
    return _reader_creator(rand_seed, test_ratio, is_test=False)


def test(rand_seed=0, test_ratio=0.1):
    """Reader of the test ratings (see the module docstring for the 8 fields)."""
    return _reader_creator(rand_seed, test_ratio, is_test=True)


def get_movie_title_dict():
    """Lower-cased title word -> id."""
    return _meta()[1].title_words


def movie_categories():
    """Genre name -> id."""
    return _meta()[1].categories


def user_info():
    """User id -> :class:`UserInfo`."""
    return _meta()[1].users


def movie_info():
    """Movie id -> :class:`MovieInfo`."""
    return _meta()[1].movies


def max_user_id():
    """The largest user id."""
    return max(user_info())


def max_movie_id():
    """The largest movie id."""
    return max(movie_info())


def max_job_id():
    """The largest occupation id."""
    return max(u.job_id for u in user_info().values())


def fetch():
    """Download the zip into the cache."""
    common.download(URL, "movielens", MD5)
