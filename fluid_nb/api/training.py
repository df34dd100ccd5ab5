"""A training loop for notebooks and scripts: a progress bar, a loss history you can plot.

    history = fluid.train_loop(exe, main_program, reader=fluid.io.batch(train, 20),
                               feeder=fluid.DataFeeder([x, y], place), loss=avg_cost,
                               epochs=10)
    history.losses       # one float per step
    history              # in a notebook: an SVG plot of the curve

It is the ordinary static path underneath: ``exe.run(program, feed=feeder.feed(batch),
fetch_list=[loss])`` once per batch.
"""
import math

import numpy as np


class LossHistory:
    """Losses per step (and per epoch averages); renders as an SVG line in notebooks."""

    def __init__(self):
        self.steps = []
        self.losses = []
        self.epoch_ends = []
        self.metrics = {}

    def record(self, loss, **metrics):
        self.steps.append(len(self.steps))
        self.losses.append(float(loss))
        for name, value in metrics.items():
            self.metrics.setdefault(name, []).append(float(value))

    def end_epoch(self):
        self.epoch_ends.append(len(self.losses))

    def epoch_means(self):
        means, start = [], 0
        for end in self.epoch_ends:
            if end > start:
                means.append(float(np.mean(self.losses[start:end])))
            start = end
        return means

    @property
    def last(self):
        return self.losses[-1] if self.losses else None

    def __len__(self):
        return len(self.losses)

    def __repr__(self):
        if not self.losses:
            return "LossHistory(empty)"
        return (f"LossHistory({len(self.losses)} steps, first {self.losses[0]:.6g}, "
                f"last {self.losses[-1]:.6g}, min {min(self.losses):.6g})")

    def to_svg(self, width=360, height=120):
        """The loss curve as a small SVG (log scale when it spans two decades)."""
        values = [v for v in self.losses if math.isfinite(v)]
        if len(values) < 2:
            return f"<svg width='{width}' height='{height}'></svg>"
        log = min(values) > 0 and max(values) / min(values) > 100
        ys = [math.log10(v) for v in values] if log else values
        lo, hi = min(ys), max(ys)
        span = (hi - lo) or 1.0
        pad = 6
        points = " ".join(
            f"{pad + i * (width - 2 * pad) / (len(ys) - 1):.1f},"
            f"{height - pad - (y - lo) / span * (height - 2 * pad):.1f}"
            for i, y in enumerate(ys))
        label = f"loss{' (log)' if log else ''}: {values[0]:.4g} → {values[-1]:.4g}"
        return (f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
                f"style='background:#fff;border:1px solid #ddd'>"
                f"<polyline fill='none' stroke='#1f6feb' stroke-width='1.5' points='{points}'/>"
                f"<text x='{pad}' y='14' font-size='11' font-family='sans-serif' "
                f"fill='#333'>{label}</text></svg>")

    def _repr_html_(self):
        return self.to_svg()

    def plot(self, ax=None):
        """Plot with matplotlib (when installed); returns the axes."""
        import matplotlib.pyplot as plt
        ax = ax or plt.gca()
        ax.plot(self.steps, self.losses)
        ax.set_xlabel("step")
        ax.set_ylabel("loss")
        return ax


def train_loop(executor, program, reader, feeder, loss, epochs=1, scope=None,
               fetch_list=None, progress=True, on_step=None, history=None):
    """Run ``program`` over every batch of ``reader()`` for ``epochs`` epochs.

    ``feeder`` is a DataFeeder (or any callable/object with ``feed(batch) -> dict``);
    ``loss`` the variable to record; ``fetch_list`` extra variables whose values go to
    ``on_step(step, loss, *extra)``. Returns the LossHistory (extended if one is given).
    """
    history = history if history is not None else LossHistory()
    fetch = [loss] + list(fetch_list or [])
    feed = feeder.feed if hasattr(feeder, "feed") else feeder
    bar = _progress(progress, epochs)
    try:
        for epoch in range(epochs):
            for batch in reader():
                values = executor.run(program, feed=feed(batch), fetch_list=fetch, scope=scope)
                value = float(np.asarray(values[0]).reshape(-1)[0])
                history.record(value)
                if bar is not None:
                    bar.set_postfix(epoch=epoch, loss=f"{value:.5g}", refresh=False)
                    bar.update(1)
                if on_step is not None:
                    on_step(len(history) - 1, value, *values[1:])
            history.end_epoch()
    finally:
        if bar is not None:
            bar.close()
    return history


def _progress(progress, epochs):
    if not progress:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(desc=f"training ({epochs} epoch{'s' if epochs != 1 else ''})", unit="step")
