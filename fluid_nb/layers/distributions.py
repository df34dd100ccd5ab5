"""Probability distributions of fluid.layers: Uniform, Normal, Categorical, MultivariateNormalDiag."""

__all__ = []
