"""fluid.layers' distributions against their closed forms and NumPy draws."""
import math

import numpy as np
import pytest

import fluid_nb as fluid


def _run(build):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        outs = build()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    return exe.run(main, fetch_list=list(outs))


def test_uniform_samples_log_prob_and_entropy():
    low, high = np.array([0.0, 2.0], "float32"), np.array([1.0, 6.0], "float32")
    value = np.array([0.5, 7.0], "float32")

    def build():
        u = fluid.layers.Uniform(low, high)
        return [u.sample([2000], seed=3), u.log_prob(fluid.layers.assign(value)), u.entropy()]
    draws, log_prob, entropy = _run(build)
    assert draws.shape == (2000, 2)
    assert (draws >= low).all() and (draws < high).all()
    np.testing.assert_allclose(draws.mean(0), (low + high) / 2, atol=0.1)
    np.testing.assert_allclose(log_prob, [0.0, -np.inf])
    np.testing.assert_allclose(entropy, np.log(high - low), rtol=1e-6)


def test_normal_against_closed_forms():
    loc, scale = np.array([0.0, 1.0], "float32"), np.array([1.0, 2.0], "float32")
    other_loc, other_scale = np.array([0.5, -1.0], "float32"), np.array([2.0, 0.5], "float32")
    value = np.array([0.3, -0.4], "float32")

    def build():
        n = fluid.layers.Normal(loc, scale)
        m = fluid.layers.Normal(other_loc, other_scale)
        return [n.sample([4000], seed=5), n.entropy(), n.log_prob(fluid.layers.assign(value)),
                n.kl_divergence(m)]
    draws, entropy, log_prob, kl = _run(build)
    np.testing.assert_allclose(draws.mean(0), loc, atol=0.1)
    np.testing.assert_allclose(draws.std(0), scale, rtol=0.05)
    np.testing.assert_allclose(entropy, 0.5 + 0.5 * math.log(2 * math.pi) + np.log(scale),
                               rtol=1e-6)
    np.testing.assert_allclose(log_prob, -(value - loc) ** 2 / (2 * scale ** 2) - np.log(
        scale) - 0.5 * math.log(2 * math.pi), rtol=1e-5)
    ratio = (scale / other_scale) ** 2
    np.testing.assert_allclose(kl, 0.5 * (ratio + ((loc - other_loc) / other_scale) ** 2 - 1
                                          - np.log(ratio)), rtol=1e-5)


def test_categorical_entropy_and_kl():
    a = np.array([[1.0, 2.0, 0.5]], "float32")
    b = np.array([[0.2, 0.1, 2.0]], "float32")
    p = np.exp(a) / np.exp(a).sum()
    q = np.exp(b) / np.exp(b).sum()
    entropy, kl = _run(lambda: [fluid.layers.Categorical(a).entropy(),
                                fluid.layers.Categorical(a).kl_divergence(
                                    fluid.layers.Categorical(b))])
    np.testing.assert_allclose(entropy, [[-(p * np.log(p)).sum()]], rtol=1e-5)
    np.testing.assert_allclose(kl, [[(p * np.log(p / q)).sum()]], rtol=1e-5)


def test_multivariate_normal_diag():
    loc1, cov1 = np.array([0.0, 1.0], "float32"), np.diag([1.0, 4.0]).astype("float32")
    loc2, cov2 = np.array([1.0, 0.0], "float32"), np.diag([2.0, 1.0]).astype("float32")
    entropy, kl = _run(lambda: [
        fluid.layers.MultivariateNormalDiag(loc1, cov1).entropy(),
        fluid.layers.MultivariateNormalDiag(loc1, cov1).kl_divergence(
            fluid.layers.MultivariateNormalDiag(loc2, cov2))])
    np.testing.assert_allclose(entropy, [0.5 * (2 * (1 + math.log(2 * math.pi))
                                                + math.log(4.0))], rtol=1e-5)
    s1, s2, d = np.diag(cov1), np.diag(cov2), loc2 - loc1
    want = 0.5 * ((s1 / s2).sum() + (d * d / s2).sum() - 2 + np.log(s2.prod() / s1.prod()))
    np.testing.assert_allclose(kl, [want], rtol=1e-5)


def test_a_parameter_of_the_wrong_type_is_a_type_error():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        with pytest.raises(TypeError, match="loc expected a float"):
            fluid.layers.Normal("zero", 1.0)
        with pytest.raises(TypeError, match="other expected a Normal"):
            fluid.layers.Normal(0.0, 1.0).kl_divergence(fluid.layers.Uniform(0.0, 1.0))
