"""Initializers: each appends to the startup block the one op that fills a parameter.

``Constant`` -> fill_constant, ``Uniform`` -> uniform_random, ``Normal`` ->
gaussian_random, ``TruncatedNormal`` -> truncated_gaussian_random, ``Xavier``/``MSRA`` ->
uniform_random or gaussian_random with a fan-based range, ``NumpyArrayInitializer`` ->
assign_value. A seed of 0 takes the startup program's ``random_seed``, as in Fluid.
"""
import contextlib
import math

import numpy as np

from ..errors import InvalidArgument, InvalidType
from ..framework import Block, Variable
from ..tensor.dtypes import VarType, convert_dtype
from ..ops import init_ops  # noqa: F401  (registers truncated_gaussian_random, assign_value)

_force_init_on_cpu = False


def force_init_on_cpu():
    """True inside ``init_on_cpu()``: fill ops get ``force_cpu=True``."""
    return _force_init_on_cpu


@contextlib.contextmanager
def init_on_cpu():
    global _force_init_on_cpu
    old, _force_init_on_cpu = _force_init_on_cpu, True
    try:
        yield
    finally:
        _force_init_on_cpu = old


class Initializer:
    """Base class: ``init(var, block)`` appends the initialising op to ``block``."""

    def __call__(self, var, block):
        raise NotImplementedError

    @staticmethod
    def _compute_fans(var):
        """(fan_in, fan_out) as Fluid computes them: a conv filter [out, in, k...] counts
        its receptive field; a matrix is [in, out]."""
        shape = var.shape
        if not shape:
            return 1, 1
        if len(shape) == 1:
            return shape[0], shape[0]
        if len(shape) == 2:
            return shape[0], shape[1]
        receptive = int(np.prod(shape[2:]))
        return shape[1] * receptive, shape[0] * receptive

    @staticmethod
    def _seed(seed, block):
        return seed if seed else block.program.random_seed

    def _into(self, var, block, append):
        """``append(out)`` appends the op that writes ``out``. A float16 variable is written
        as Fluid 1.8 writes it: the op fills a float32 temporary, then a cast (two ops)."""
        if convert_dtype(var.dtype) != VarType.FP16:
            return append(var)
        from ..framework import unique_name
        tmp = block.create_var(
            name=unique_name.generate(".".join([type(self).__name__, var.name, "tmp"])),
            shape=var.shape, dtype=VarType.FP32, persistable=False)
        append(tmp)
        return block.append_op(type="cast", inputs={"X": [tmp]}, outputs={"Out": [var]},
                               attrs={"in_dtype": int(VarType.FP32),
                                      "out_dtype": int(VarType.FP16)})


def _check_block(name, var, block):
    if not isinstance(var, Variable):
        raise InvalidType(f"{name}: var expected Variable, but received "
                          f"{type(var).__name__}")
    if not isinstance(block, Block):
        raise InvalidType(f"{name}: block expected Block, but received "
                          f"{type(block).__name__}")


class ConstantInitializer(Initializer):
    """Every element ``value``."""

    def __init__(self, value=0.0, force_cpu=False):
        self._value = value
        self._force_cpu = force_cpu

    def __call__(self, var, block):
        _check_block("ConstantInitializer", var, block)
        return self._into(var, block, lambda out: block.append_op(
            type="fill_constant", outputs={"Out": [out]},
            attrs={"shape": list(out.shape), "dtype": int(out.dtype),
                   "value": float(self._value), "str_value": str(float(self._value)),
                   "force_cpu": self._force_cpu or force_init_on_cpu()}))


class UniformInitializer(Initializer):
    """U[low, high)."""

    def __init__(self, low=-1.0, high=1.0, seed=0, diag_num=0, diag_step=0, diag_val=1.0):
        if low >= high:
            raise InvalidArgument(f"UniformInitializer: low expected less than high "
                                  f"({high}), but received {low}")
        self._low, self._high, self._seed_value = low, high, seed
        self._diag = (diag_num, diag_step, diag_val)

    def __call__(self, var, block):
        _check_block("UniformInitializer", var, block)
        diag_num, diag_step, diag_val = self._diag
        return self._into(var, block, lambda out: block.append_op(
            type="uniform_random", outputs={"Out": [out]},
            attrs={"shape": list(out.shape), "dtype": int(out.dtype),
                   "min": float(self._low), "max": float(self._high),
                   "seed": self._seed(self._seed_value, block), "diag_num": diag_num,
                   "diag_step": diag_step, "diag_val": float(diag_val)}))


class NormalInitializer(Initializer):
    """N(loc, scale^2)."""

    def __init__(self, loc=0.0, scale=1.0, seed=0):
        self._mean, self._std, self._seed_value = loc, scale, seed

    def __call__(self, var, block):
        _check_block("NormalInitializer", var, block)
        return self._into(var, block, lambda out: block.append_op(
            type="gaussian_random", outputs={"Out": [out]},
            attrs={"shape": list(out.shape), "dtype": int(out.dtype),
                   "mean": float(self._mean), "std": float(self._std),
                   "seed": self._seed(self._seed_value, block)}))


class TruncatedNormalInitializer(Initializer):
    """N(loc, scale^2) cut at two standard deviations."""

    def __init__(self, loc=0.0, scale=1.0, seed=0):
        self._mean, self._std, self._seed_value = loc, scale, seed

    def __call__(self, var, block):
        _check_block("TruncatedNormalInitializer", var, block)
        return self._into(var, block, lambda out: block.append_op(
            type="truncated_gaussian_random", outputs={"Out": [out]},
            attrs={"shape": list(out.shape), "dtype": int(out.dtype),
                   "mean": float(self._mean), "std": float(self._std),
                   "seed": self._seed(self._seed_value, block)}))


class XavierInitializer(Initializer):
    """Glorot: U[-sqrt(6 / (fan_in + fan_out)), +..] or N(0, 2 / (fan_in + fan_out))."""

    def __init__(self, uniform=True, fan_in=None, fan_out=None, seed=0):
        self._uniform, self._fan_in, self._fan_out, self._seed_value = (
            uniform, fan_in, fan_out, seed)

    def __call__(self, var, block):
        _check_block("XavierInitializer", var, block)
        f_in, f_out = self._compute_fans(var)
        fan_in = f_in if self._fan_in is None else self._fan_in
        fan_out = f_out if self._fan_out is None else self._fan_out
        seed = self._seed(self._seed_value, block)
        if self._uniform:
            limit = math.sqrt(6.0 / float(fan_in + fan_out))
            return UniformInitializer(-limit, limit, seed)(var, block)
        std = math.sqrt(2.0 / float(fan_in + fan_out))
        return NormalInitializer(0.0, std, seed)(var, block)


class MSRAInitializer(Initializer):
    """He/Kaiming: U[-sqrt(6 / fan_in), +..] or N(0, 2 / fan_in)."""

    def __init__(self, uniform=True, fan_in=None, seed=0):
        self._uniform, self._fan_in, self._seed_value = uniform, fan_in, seed

    def __call__(self, var, block):
        _check_block("MSRAInitializer", var, block)
        fan_in = self._compute_fans(var)[0] if self._fan_in is None else self._fan_in
        seed = self._seed(self._seed_value, block)
        if self._uniform:
            limit = math.sqrt(6.0 / float(fan_in))
            return UniformInitializer(-limit, limit, seed)(var, block)
        return NormalInitializer(0.0, math.sqrt(2.0 / float(fan_in)), seed)(var, block)


class NumpyArrayInitializer(Initializer):
    """The given array (its shape must equal the variable's), via assign_value."""

    def __init__(self, value):
        if not isinstance(value, np.ndarray):
            raise InvalidType(f"NumpyArrayInitializer: value expected numpy.ndarray, but "
                              f"received {type(value).__name__}")
        self._value = value

    def __call__(self, var, block):
        _check_block("NumpyArrayInitializer", var, block)
        return self._into(var, block, lambda out: assign_value_op(block, out, self._value))


def assign_value_op(block, out, value):
    """Append assign_value writing NumPy ``value`` into ``out`` (cast to out's dtype)."""
    dtype = convert_dtype(out.dtype)
    attr = init_ops.VALUE_ATTR.get(dtype)
    if attr is None:
        raise InvalidArgument(f"assign_value: dtype expected one of bool, int32, int64, "
                              f"float32, but received {dtype.name}")
    if out.shape and -1 not in out.shape and tuple(out.shape) != tuple(value.shape):
        raise InvalidArgument(f"assign_value: value shape expected {list(out.shape)} (the "
                              f"variable's), but received {list(value.shape)}")
    flat = value.reshape(-1)
    if dtype == VarType.FP32:
        values = [float(v) for v in flat.astype(np.float32)]
    else:
        values = [int(v) for v in flat.astype(np.int64)]
    return block.append_op(type="assign_value", outputs={"Out": [out]},
                           attrs={"shape": list(value.shape), "dtype": int(dtype), attr: values})


class BilinearInitializer(Initializer):
    """Bilinear upsampling weights for a conv2d_transpose filter [C, 1, K, K]."""

    def __call__(self, var, block):
        _check_block("BilinearInitializer", var, block)
        shape = var.shape
        if len(shape) != 4 or shape[2] != shape[3]:
            raise InvalidArgument(f"BilinearInitializer: shape expected [C, N, K, K], but "
                                  f"received {list(shape)}")
        size = shape[3]
        f = math.ceil(size / 2.0)
        c = (2 * f - 1 - f % 2) / (2.0 * f)
        weight = np.zeros(int(np.prod(shape)), dtype=np.float32)
        for i in range(weight.size):
            x = i % size
            y = (i // size) % size
            weight[i] = (1 - abs(x / f - c)) * (1 - abs(y / f - c))
        return self._into(var, block,
                          lambda out: assign_value_op(block, out, weight.reshape(shape)))


Constant = ConstantInitializer
Uniform = UniformInitializer
Normal = NormalInitializer
TruncatedNormal = TruncatedNormalInitializer
Xavier = XavierInitializer
MSRA = MSRAInitializer
Bilinear = BilinearInitializer

__all__ = ["Constant", "Uniform", "Normal", "TruncatedNormal", "Xavier", "Bilinear", "MSRA",
           "ConstantInitializer", "UniformInitializer", "NormalInitializer",
           "TruncatedNormalInitializer", "XavierInitializer", "BilinearInitializer",
           "MSRAInitializer", "NumpyArrayInitializer", "force_init_on_cpu", "init_on_cpu"]
