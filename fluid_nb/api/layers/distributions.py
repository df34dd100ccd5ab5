"""Probability distributions of fluid.layers: Uniform, Normal, Categorical and
MultivariateNormalDiag, as Fluid 1.8 defines them. Each builds its results from layers
(so they are ops of the program, differentiable where the formulas are): ``sample``,
``entropy``, ``log_prob`` (Uniform, Normal) and ``kl_divergence``. Parameters are floats,
lists, NumPy arrays or Variables (float32); floats and arrays become constants of the
program."""
import math

import numpy as np

from ...errors import InvalidType, expected
from ...framework.program import Variable
from . import control_flow, nn, ops, tensor

__all__ = ["Uniform", "Normal", "Categorical", "MultivariateNormalDiag"]


def _as_variable(where, name, value):
    """A Variable, or the float32 constant holding ``value``."""
    if isinstance(value, Variable):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float, list, tuple, np.ndarray)):
        raise InvalidType(expected(where, name, "a float, a list, a NumPy array or a Variable",
                                   type(value).__name__))
    array = np.asarray(value, dtype="float32")
    return tensor.assign(array.reshape(1) if array.ndim == 0 else array)


def _sample_shape(where, shape):
    if not isinstance(shape, (list, tuple)) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape):
        raise InvalidType(expected(where, "shape", "a list of positive ints", repr(shape)))
    return list(shape)


class Uniform:
    """The uniform distribution on [low, high): density 1 / (high - low)."""

    def __init__(self, low, high):
        self.low = _as_variable("Uniform", "low", low)
        self.high = _as_variable("Uniform", "high", high)

    def sample(self, shape, seed=0):
        """``shape + batch shape`` draws: low + (high - low) * u, u ~ U[0, 1)."""
        shape = _sample_shape("Uniform.sample", shape)
        batch = list((self.low + self.high).shape)
        u = tensor.uniform_random(shape + batch, min=0.0, max=1.0, seed=seed)
        return self.low + (self.high - self.low) * u

    def log_prob(self, value):
        """log(1 / (high - low)) inside [low, high), -inf outside."""
        inside = tensor.cast(control_flow.less_than(self.low, value), "float32") * \
            tensor.cast(control_flow.less_than(value, self.high), "float32")
        return nn.log(inside) - nn.log(self.high - self.low)

    def entropy(self):
        """log(high - low)."""
        return nn.log(self.high - self.low)


class Normal:
    """The normal distribution N(loc, scale^2)."""

    def __init__(self, loc, scale):
        self.loc = _as_variable("Normal", "loc", loc)
        self.scale = _as_variable("Normal", "scale", scale)

    def sample(self, shape, seed=0):
        """``shape + batch shape`` draws: loc + scale * z, z ~ N(0, 1)."""
        shape = _sample_shape("Normal.sample", shape)
        batch = list((self.loc + self.scale).shape)
        z = tensor.gaussian_random(shape + batch, mean=0.0, std=1.0, seed=seed)
        return self.loc + self.scale * z

    def entropy(self):
        """1/2 + log(sqrt(2 pi) scale)."""
        return nn.log(self.scale) + (0.5 + 0.5 * math.log(2 * math.pi))

    def log_prob(self, value):
        """-(value - loc)^2 / (2 scale^2) - log(scale) - log(sqrt(2 pi))."""
        variance = self.scale * self.scale
        return (-1.0 * ((value - self.loc) * (value - self.loc)) / (2.0 * variance)
                - nn.log(self.scale) - 0.5 * math.log(2 * math.pi))

    def kl_divergence(self, other):
        """KL(self || other) = (r + t - 1 - log r) / 2, r = (scale / other.scale)^2,
        t = ((loc - other.loc) / other.scale)^2."""
        if not isinstance(other, Normal):
            raise InvalidType(expected("Normal.kl_divergence", "other", "a Normal",
                                       type(other).__name__))
        ratio = self.scale / other.scale
        ratio = ratio * ratio
        t = (self.loc - other.loc) / other.scale
        return 0.5 * (ratio + t * t - 1.0 - nn.log(ratio))


class Categorical:
    """The categorical distribution of softmax(logits) over the last dim."""

    def __init__(self, logits):
        self.logits = _as_variable("Categorical", "logits", logits)

    def _log_normalised(self):
        shifted = self.logits - nn.reduce_max(self.logits, dim=-1, keep_dim=True)
        total = nn.reduce_sum(ops.exp(shifted), dim=-1, keep_dim=True)
        return shifted - nn.log(total)

    def entropy(self):
        """-sum p log p over the last dim (kept as size 1)."""
        log_p = self._log_normalised()
        return -1.0 * nn.reduce_sum(ops.exp(log_p) * log_p, dim=-1, keep_dim=True)

    def kl_divergence(self, other):
        """sum p (log p - log q) over the last dim (kept as size 1)."""
        if not isinstance(other, Categorical):
            raise InvalidType(expected("Categorical.kl_divergence", "other", "a Categorical",
                                       type(other).__name__))
        log_p, log_q = self._log_normalised(), other._log_normalised()
        return nn.reduce_sum(ops.exp(log_p) * (log_p - log_q), dim=-1, keep_dim=True)


class MultivariateNormalDiag:
    """A k-dimensional normal with mean ``loc`` [k] and a diagonal covariance ``scale``
    [k, k] (as Fluid takes it: the matrix, zero off the diagonal)."""

    def __init__(self, loc, scale):
        self.loc = _as_variable("MultivariateNormalDiag", "loc", loc)
        self.scale = _as_variable("MultivariateNormalDiag", "scale", scale)

    def _diagonal(self, matrix):
        k = matrix.shape[-1]
        eye = tensor.assign(np.eye(k, dtype="float32"))
        return nn.reduce_sum(matrix * eye, dim=-1)

    def entropy(self):
        """(k (1 + log 2 pi) + log det scale) / 2."""
        k = self.scale.shape[-1]
        log_det = nn.reduce_sum(nn.log(self._diagonal(self.scale)))
        return 0.5 * (log_det + k * (1.0 + math.log(2 * math.pi)))

    def kl_divergence(self, other):
        """(tr(S2^-1 S1) + (m2 - m1)' S2^-1 (m2 - m1) - k + log(det S2 / det S1)) / 2."""
        if not isinstance(other, MultivariateNormalDiag):
            raise InvalidType(expected("MultivariateNormalDiag.kl_divergence", "other",
                                       "a MultivariateNormalDiag", type(other).__name__))
        k = self.scale.shape[-1]
        s1, s2 = self._diagonal(self.scale), self._diagonal(other.scale)
        diff = other.loc - self.loc
        trace = nn.reduce_sum(s1 / s2)
        quadratic = nn.reduce_sum(diff * diff / s2)
        log_ratio = nn.reduce_sum(nn.log(s2)) - nn.reduce_sum(nn.log(s1))
        return 0.5 * (trace + quadratic + log_ratio - float(k))
