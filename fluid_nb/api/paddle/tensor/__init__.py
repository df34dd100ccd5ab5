"""``paddle.tensor``: the tensor functions Fluid 1.8 ships beside ``paddle.fluid`` as a
preview of its 2.0 API, for static graphs (programs run by an Executor).

They are grouped as Paddle groups them — :mod:`.creation`, :mod:`.math`, :mod:`.linalg`,
:mod:`.logic`, :mod:`.search`, :mod:`.random`, :mod:`.stat`, :mod:`.manipulation` — and
each appends the ops Fluid 1.8 appends, so a program built with them is Paddle's::

    import fluid_nb as fluid
    import fluid_nb.paddle as paddle

    x = fluid.data(name='x', shape=[3, 4], dtype='float32')
    upper = paddle.tensor.triu(x, diagonal=1)     # the tril_triu op
    norm = paddle.norm(x, p='fro')                # frobenius_norm
    best = paddle.argmax(x, axis=1)               # arg_max, int64 indices

Where Fluid 1.8 gives a function ``out=``, the result is written into that Variable.
"""
from . import creation, linalg, logic, manipulation, math, random, search, stat  # noqa: F401
from .creation import (arange, eye, fill_constant, full, full_like, linspace, meshgrid,
                       ones, ones_like, tril, triu, zeros, zeros_like)
from .linalg import bmm, cross, dist, dot, matmul, norm, t
from .logic import allclose, elementwise_equal, equal
from .manipulation import flip, roll
from .math import (add, addcmul, addmm, atan, clamp, div, elementwise_sum, log1p, logsumexp,
                   max, min, mm, mul, pow, sin, sqrt, sum, tanh)
from .random import randint, randn, randperm
from .search import argmax, index_sample, index_select, nonzero, sort, where
from .stat import std, var

__all__ = ["eye", "linspace", "arange", "full", "full_like", "triu", "tril", "meshgrid",
           "ones", "ones_like", "zeros", "zeros_like", "fill_constant",
           "std", "var", "equal", "allclose", "elementwise_equal",
           "randn", "randint", "randperm",
           "atan", "mul", "pow", "sin", "sqrt", "sum", "tanh", "elementwise_sum", "max", "min",
           "mm", "div", "add", "logsumexp", "log1p", "addcmul", "addmm", "clamp",
           "matmul", "dot", "norm", "dist", "t", "cross", "bmm",
           "flip", "roll",
           "argmax", "where", "index_select", "index_sample", "nonzero", "sort"]
