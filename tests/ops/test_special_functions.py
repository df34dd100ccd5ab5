"""The special functions NumPy lacks, on the host (``ops/_special.c``): the error function
of each element is the C library's, as ``math.erf`` gives it, bit for bit; an array the C
part does not take (half precision, a strided view) gets the same values per element."""
import math

import numpy as np
import pytest

from fluid_nb.ops import expr
from fluid_nb.ops.expr import _erf

rng = np.random.RandomState(0)
EDGES = [np.nan, np.inf, -np.inf, -0.0, 0.0, 5e-324, 1e-300, 0.5, -0.8, 3.5, -6.1, 30.0]


def per_element(x):
    return np.vectorize(math.erf, otypes=[x.dtype])(x) if x.size else x.copy()


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("shape", [(3, 11), (0, 4), (), (2, 3, 5)])
def test_erf_is_math_erf_bit_for_bit(dtype, shape):
    x = np.asarray(rng.randn(*shape) * 3).astype(dtype)
    if x.size >= len(EDGES):
        x.flat[:len(EDGES)] = np.array(EDGES).astype(dtype)
    got = _erf(np, x)
    assert got.dtype == x.dtype and got.shape == x.shape
    assert got.tobytes() == per_element(x).tobytes()


def test_a_strided_view_is_taken_per_element():
    x = rng.randn(6, 10).astype("float32")[:, ::3]
    assert expr._special.erf(x) is NotImplemented
    assert _erf(np, x).tobytes() == per_element(x).tobytes()


@pytest.mark.parametrize("value", [[0.5, 1.0], np.arange(4), np.ones(3, ">f8")])
def test_what_the_c_part_does_not_take_is_not_implemented(value):
    _erf(np, np.zeros(1))  # (loads the part)
    assert expr._special.erf(value) is NotImplemented


def test_a_large_exact_gelu_is_the_formula_of_each_element():
    import fluid_nb as fluid
    x = rng.randn(300, 700).astype("float32")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        data = fluid.data(name="x", shape=[300, 700], dtype="float32")
        out = fluid.layers.gelu(data)
    got, = fluid.Executor(fluid.CPUPlace()).run(main, feed={"x": x}, fetch_list=[out])
    wanted = 0.5 * x * (1 + per_element(x * np.float32(0.7071067811865476)))
    np.testing.assert_allclose(got, wanted, rtol=1e-6, atol=1e-7)
