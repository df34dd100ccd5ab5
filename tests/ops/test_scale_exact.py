"""``scale`` on host floats multiplies by a 0-d array of X's dtype kept per scale (NumPy
converts a Python float again at every call): the values must be NumPy's ``x * scale +
bias`` with Python floats to the last bit, signed zeros, NaNs, infinities and overflows
included, for every float dtype, both bias orders, and run after run."""
import numpy as np
import pytest

import fluid_nb as fluid

VALUES = np.array([0.0, -0.0, 1.0, -2.5, 1e-3, 3.0e38, -6.5e4, np.inf, -np.inf, np.nan,
                   1e-45, 7.0])

#: (scale, bias) pairs (the layer takes finite numbers): plain, zero and signed-zero scales
#: and biases (each after its positive twin: a memo must not take one for the other), one,
#: values past float16's and float32's range, a subnormal bias
PAIRS = [(0.999, 0.0), (2.0, 1.0), (1.0, -1.0), (1.0, 0.5), (0.0, 0.0), (-0.0, 0.0),
         (0.0, -0.0), (2.0, 0.0), (2.0, -0.0),
         (-1.0, -0.0), (1e300, 0.0), (1e5, -1e5), (0.5, 1e-45), (3.0, -1e300), (1.0, 1e300)]


def _expected(x, scale, bias, after):
    with np.errstate(all="ignore"):
        out = x * scale + bias if after and bias else x * scale if after else (x + bias) * scale
    return np.asarray(out).astype(x.dtype, copy=False)


def _bits(a):
    a = np.asarray(a)
    return a.view(f"u{a.dtype.itemsize}")


@pytest.mark.parametrize("after", [True, False])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_scale_is_numpys_product_with_python_floats_to_the_bit(dtype, after):
    with np.errstate(all="ignore"):
        x = VALUES.astype(dtype)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        data = fluid.data(name="x", shape=[len(x)], dtype=dtype)
        outs = [fluid.layers.scale(data, scale, bias, bias_after_scale=after)
                for scale, bias in PAIRS]
    exe = fluid.Executor(fluid.CPUPlace())
    with np.errstate(all="ignore"):
        for _ in range(2):  # (the second run reads the kept operands)
            got = exe.run(main, feed={"x": x}, fetch_list=outs)
            for (scale, bias), answer in zip(PAIRS, got):
                want = _expected(x, scale, bias, after)
                assert answer.dtype == want.dtype
                np.testing.assert_array_equal(_bits(answer), _bits(want),
                                              err_msg=f"scale {scale}, bias {bias}")


def test_a_live_product_by_a_number_is_numpys_to_the_bit():
    x = VALUES.astype("float32")
    main, startup, scope = fluid.Program(), fluid.Program(), fluid.Scope()
    with fluid.program_guard(main, startup), fluid.unique_name.guard(), \
            fluid.live(program=main, startup_program=startup, scope=scope), \
            np.errstate(all="ignore"):
        v = fluid.layers.data(name="x", shape=[len(x)], dtype="float32",
                              append_batch_size=False, value=x)
        for _ in range(2):
            pairs = [(v * 0.999, x * 0.999), (v - 1.0, x - 1.0), (v / 3.0, x * (1 / 3.0)),
                     (2.5 - v, x * -1.0 + 2.5), (v * -0.0, x * -0.0)]
            for got, want in pairs:
                np.testing.assert_array_equal(_bits(got.numpy()), _bits(want))


def test_kept_operands_cannot_be_written():
    from fluid_nb.ops import math
    operand = math._float_operand(0.999, np.dtype("float32"))
    assert operand.shape == () and operand.dtype == np.float32
    with pytest.raises(ValueError):
        operand[...] = 2.0
    assert math._float_operand(0.0, np.dtype("float32")) == 0.0  # (a zero stays a float)
    assert math._float_operand(-0.0, np.dtype("float32")).__class__ is float
