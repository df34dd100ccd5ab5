"""The ``paddle`` names that Fluid 1.x scripts use besides ``paddle.fluid``.

A script written for Fluid 1.x runs with its two import lines changed::

    import fluid_nb.paddle as paddle      # was: import paddle
    import fluid_nb as fluid              # was: import paddle.fluid as fluid

    train_reader = paddle.batch(
        paddle.reader.shuffle(paddle.dataset.uci_housing.train(), buf_size=500),
        batch_size=20)

``paddle.batch`` and ``paddle.reader`` are the reader decorators of ``fluid_nb.api.reader``,
``paddle.dataset`` is ``fluid_nb.api.dataset`` (Paddle's datasets: where their files are
cached and how to provide them offline is in ``paddle.dataset.common``), and
``paddle.fluid`` is ``fluid_nb`` itself. Nothing here is a copy: each name is the object
it stands for. ``paddle.nn`` holds Fluid 1.8's 2.0-preview layer classes and functions
(static-graph mode), ``paddle.compat`` the Python 2/3 helpers and ``paddle.version`` the
version fields.
"""
import fluid_nb as fluid
from .. import dataset, reader
from ..reader.decorator import batch
from . import compat, nn, version

__all__ = ["batch", "reader", "dataset", "fluid", "compat", "nn", "version"]

# ``import fluid_nb.paddle.dataset.mnist`` and the like find the very modules above (not
# second copies with their own caches and constants): see fluid_nb.fluid_paths

# ``paddle.tensor`` and, at top level, the tensor functions Fluid 1.8's ``paddle`` names
# there (``paddle.add``, ``paddle.norm``, ``paddle.argmax`` ...; static graph only)
from . import tensor  # noqa: E402
from .tensor import (add, addcmul, addmm, allclose, arange, argmax, atan, bmm,  # noqa: E402,F401
                     clamp, cross, dist, div, dot, elementwise_equal, elementwise_sum, equal,
                     eye, fill_constant, flip, full, full_like, index_sample, index_select,
                     linspace, log1p, logsumexp, matmul, max, meshgrid, min, mm, mul,
                     nonzero, norm, ones, ones_like, pow, randint, randn, randperm, roll,
                     sin, sort, sqrt, std, sum, t, tanh, var, where, zeros, zeros_like)

__all__ += ["tensor"] + [name for name in tensor.__all__ if name not in ("tril", "triu")]
