"""Compiled float32 exp (the formulas', the softmax's and the losses' on the host: a polynomial
whose loops vectorise) is within 1 ulp of the correctly rounded value over the floats whose
exp is finite or rounds to a subnormal or 0, overflows to inf past FLT_MAX, keeps NaN, and a
compiled softmax over a vocabulary-sized row agrees with the interpreter's."""
import numpy as np

import fluid_nb as fluid
from fluid_nb.rewriters import native


def _compiled(build, feed):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        out = build()
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    program = native.compile(main, feed, [out], scope=scope)
    return (exe.run(program, feed=feed, fetch_list=[out], scope=scope)[0],
            exe.run(main, feed=feed, fetch_list=[out], scope=scope)[0])


def _ulps(a, b):
    return np.abs(a.view(np.int32).astype(np.int64) - b.view(np.int32).astype(np.int64))


def test_exp_is_within_one_ulp_of_the_correctly_rounded_value():
    patterns = np.arange(0, 2 ** 32, 4099, dtype=np.uint64).astype(np.uint32)
    values = patterns.view(np.float32)
    x = values[(values > -110) & (values < 95)]
    x = np.concatenate([x, np.float32([0.0, -0.0, 88.72283, 88.7229, -87.33654, -88.0, -100.0,
                                       -103.97, -103.98, -104.0, -200.0])])
    got, _ = _compiled(lambda: fluid.layers.exp(fluid.data("x", [-1], "float32")), {"x": x})
    with np.errstate(over="ignore"):
        want = np.exp(x.astype(np.float64)).astype(np.float32)
    finite = np.isfinite(want)
    assert _ulps(np.asarray(got)[finite], want[finite]).max() <= 1
    assert np.array_equal(np.isinf(got), np.isinf(want))
    subnormal = (want > 0) & (want < np.finfo(np.float32).tiny)
    assert subnormal.sum() > 10 and (np.asarray(got)[subnormal] > 0).all()


def test_exp_keeps_the_special_values():
    x = np.float32([np.nan, np.inf, -np.inf, 89.0, 1000.0, -1000.0])
    got, want = _compiled(lambda: fluid.layers.exp(fluid.data("x", [-1], "float32")), {"x": x})
    np.testing.assert_array_equal(got, np.float32([np.nan, np.inf, 0.0, np.inf, np.inf, 0.0]))
    np.testing.assert_array_equal(got, want)


def test_a_softmax_over_a_vocabulary_agrees_with_the_interpreter():
    rng = np.random.RandomState(0)
    x = rng.uniform(-8, 8, (7, 2074)).astype("float32")
    got, want = _compiled(lambda: fluid.layers.softmax(fluid.data("x", [-1, 2074], "float32")),
                          {"x": x})
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-12)
    np.testing.assert_allclose(np.asarray(got).sum(axis=1), 1.0, rtol=1e-5)


def test_softmax_rows_of_every_tail_length_find_their_maximum():
    # rows of 1 to 40 classes: no lane, part of the 16 lanes, whole lanes and a tail; each
    # row's largest value put in turn at every position, 100 where the rest are at most 4:
    # a maximum that missed it would leave e^(100 - 4) to overflow to inf
    widths = [1, 2, 5, 15, 16, 17, 31, 32, 33, 40]
    rng = np.random.RandomState(1)
    feed = {}
    for n in widths:
        x = rng.uniform(-4, 4, (n, n)).astype("float32")
        x[np.arange(n), np.arange(n)] = 100.0
        feed[f"x{n}"] = x

    def build():
        return fluid.layers.concat([fluid.layers.reshape(fluid.layers.softmax(
            fluid.data(f"x{n}", [-1, n], "float32")), [-1]) for n in widths], axis=0)

    got, want = _compiled(build, feed)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-30)
    start = 0
    for n in widths:
        rows = np.asarray(got)[start:start + n * n].reshape(n, n)
        np.testing.assert_allclose(rows.sum(axis=1), 1.0, rtol=1e-5)
        np.testing.assert_allclose(np.diag(rows), 1.0, rtol=1e-5)
        start += n * n
