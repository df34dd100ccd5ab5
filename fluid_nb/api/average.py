"""``fluid.average``: a running weighted average over batches (Fluid 1.x scripts average
their batch losses and accuracies with it)."""
import numpy as np

__all__ = ["WeightedAverage"]


def _number_or_matrix(where, name, value):
    if isinstance(value, bool) or not isinstance(
            value, (int, float, np.integer, np.floating, np.ndarray)):
        raise ValueError(f"WeightedAverage.{where}: {name} expected a number or a numpy "
                         f"array, but received {type(value).__name__}")


class WeightedAverage:
    """``eval() = sum(value * weight) / sum(weight)`` over the ``add(value, weight)`` calls
    since ``reset``."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.numerator = None
        self.denominator = None

    def add(self, value, weight):
        _number_or_matrix("add", "value", value)
        _number_or_matrix("add", "weight", weight)
        if self.numerator is None or self.denominator is None:
            self.numerator = value * weight
            self.denominator = weight
        else:
            self.numerator += value * weight
            self.denominator += weight

    def eval(self):
        if self.numerator is None or self.denominator is None:
            raise ValueError("WeightedAverage.eval: no data to average yet (call add first)")
        return self.numerator / self.denominator
