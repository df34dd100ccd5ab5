"""How closely two computations of one training run may agree, derived from the arithmetic.

Two float32 paths through the same program (the interpreter and a compiled program, NumPy
and a device, one process and a job split over servers) sum in different orders, through
different BLAS kernels. Each step, a product of K terms carries a relative rounding error of
about sqrt(K) float32 units (the probabilistic bound for a K-term sum), and training carries
every step's error on into the next. So after ``steps`` steps two runs agree, tensor by
tensor, to about ``steps * sqrt(K) * eps32`` of the tensor's size, measured in the norm of
the whole tensor. Element by element they may differ more: Adam divides each gradient by
its own running magnitude, so a weight whose gradient is near the rounding floor moves by
rounding noise of up to the learning rate a step. A comparison of float32 trajectories
therefore checks norms against the first bound and elements against the optimizer's step.
Where a test claims exact agreement, it runs in float64 instead."""
import numpy as np

EPS32 = float(np.finfo(np.float32).eps)


def float32_drift(steps, reduction):
    """The relative drift two float32 runs may show after ``steps`` steps whose longest
    product sums ``reduction`` terms."""
    return steps * np.sqrt(reduction) * EPS32


def assert_float32_runs_agree(got, want, steps, reduction, largest_step=None, name=""):
    """``got`` follows ``want``: the difference is within :func:`float32_drift` of ``want``'s
    norm, and no element differs by more than ``steps`` moves of ``largest_step`` (the most one
    update can move one element, e.g. Adam's learning rate) or, without it, by more than the
    drift of ``want``'s largest element."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape, (name, got.shape, want.shape)
    assert np.isfinite(got).all() and np.isfinite(want).all(), name
    drift = float32_drift(steps, reduction)
    size = np.linalg.norm(want)
    apart = np.linalg.norm(got - want)
    assert apart <= drift * size, (f"{name}: the runs are {apart:.3g} apart in norm, more "
                                   f"than the drift {drift:.3g} times the norm {size:.3g}")
    scale = np.abs(want).max(initial=0.0)
    bound = steps * largest_step if largest_step is not None else drift * scale
    worst = np.abs(got - want).max(initial=0.0)
    assert worst <= bound, (f"{name}: an element differs by {worst:.3g}, more than "
                            f"{bound:.3g}")


def assert_float32_losses_agree(got, want, reduction, name="loss"):
    """Two float32 loss curves of one run, step by step: step k within the drift of k steps."""
    assert len(got) == len(want), (name, len(got), len(want))
    for step, (g, w) in enumerate(zip(got, want), start=1):
        assert_float32_runs_agree([g], [w], step, reduction, name=f"{name} of step {step}")
