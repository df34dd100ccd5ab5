"""Statistics of ``paddle.tensor.stat`` (Fluid 1.8): ``var`` and ``std`` over chosen axes,
built from ``reduce_mean`` and elementwise ops as Fluid builds them."""
from ....errors import InvalidType, expected
from ....framework.program import Variable
from ....framework.type_checks import check_type, check_variable_and_dtype
from ... import layers
from ....tensor.dtypes import dtype_name
from ._common import FLOAT32_64
from .search import where

__all__ = ["std", "var"]


def _count(input, axes, dtype):
    """The number of elements each reduction averages, read from the run-time shape (so
    unknown dims count), as a [1] tensor of ``dtype``."""
    shape = layers.shape(input)
    n = None
    for axis in axes:
        dim = layers.cast(layers.slice(shape, axes=[0], starts=[axis], ends=[axis + 1]),
                          dtype)
        n = dim if n is None else layers.elementwise_mul(n, dim)
    return n


def var(input, axis=None, keepdim=False, unbiased=True, out=None, name=None):
    """The variance of ``input`` over ``axis`` (a list of dims; every dim when None):
    mean((x - mean(x))^2), times N / (N - 1) when ``unbiased`` (0 when N is 1), N the
    number of elements each variance is taken over. ``input`` is float32 or float64."""
    check_type(input, "input", Variable, "var")
    if dtype_name(input.dtype) not in FLOAT32_64:
        raise InvalidType(expected("var", "input's dtype", "float32 or float64",
                                   dtype_name(input.dtype)))
    rank = len(input.shape)
    if axis is not None and not isinstance(axis, (list, tuple)):
        axis = [axis]
    axes = list(axis) if axis else list(range(rank))
    axes = [a + rank if a < 0 else a for a in axes]
    mean = layers.reduce_mean(input, dim=axis, keep_dim=True)
    deviation = layers.square(layers.elementwise_sub(input, mean))
    tmp = layers.reduce_mean(deviation, dim=axis, keep_dim=keepdim, name=name)
    if unbiased:
        dtype = dtype_name(input.dtype)
        n = _count(input, axes, dtype)
        one = layers.fill_constant([1], dtype, 1.0)
        zero = layers.fill_constant([1], dtype, 0.0)
        factor = where(layers.greater_than(n, one),
                       layers.elementwise_div(n, layers.elementwise_sub(n, one)), zero)
        tmp = layers.elementwise_mul(tmp, factor)
    if out is None:
        return tmp
    layers.assign(tmp, out)
    return out


def std(input, axis=None, keepdim=False, unbiased=True, out=None, name=None):
    """The standard deviation sqrt(var(input, axis, keepdim, unbiased)) (see :func:`var`)."""
    check_variable_and_dtype(input, "input", FLOAT32_64, "std")
    tmp = layers.sqrt(var(input, axis=axis, keepdim=keepdim, unbiased=unbiased, name=name))
    if out is None:
        return tmp
    layers.assign(tmp, out)
    return out
