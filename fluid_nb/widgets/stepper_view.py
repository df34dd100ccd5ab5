"""``StepperView``: a ``while`` loop's run, iteration by iteration (slider and play), with
the DynamicRNN picture when the loop is one: the rank-table order, the batch at each step
shrinking, the memory shrunk, and the outputs put back in input order.

The model is a loop trace (``format: "fluid-nb.loop"``, from :mod:`fluid_nb.viz.loop_trace`).
"""
import traitlets

from ..errors import InvalidArgument, OutOfRange
from ._base import ViewWidget, json_clean

LOOP_FORMAT = "fluid-nb.loop"


def _loop_model(trace):
    model = getattr(trace, "model", trace)  # a trace object or its model dict
    if callable(model):
        model = model()
    if not isinstance(model, dict) or model.get("format") != LOOP_FORMAT:
        found = model.get("format") if isinstance(model, dict) else type(model).__name__
        raise InvalidArgument(f"StepperView: trace expected a loop trace model (format "
                              f"'{LOOP_FORMAT}'), but received {found!r}")
    return json_clean(model)


class StepperView(ViewWidget):
    """Step through a loop trace: ``step`` (synced with the slider) is the iteration shown.

    Example::

        trace = trace_while(exe, main, feed=feed, scope=scope)
        stepper = StepperView(trace)
        stepper.step = 3            # the browser's slider follows (and vice versa)
    """

    _kind = traitlets.Unicode("stepper").tag(sync=True)
    #: the iteration shown (0-based), synced both ways with the slider
    step = traitlets.Int(0).tag(sync=True)

    def __init__(self, trace, step=0, **kwargs):
        model = _loop_model(trace)
        super().__init__(_model=model, **kwargs)
        self.step = step

    @property
    def iterations(self):
        return self._model.get("iterations", [])

    @traitlets.validate("step")
    def _valid_step(self, proposal):
        count = len(self._model.get("iterations", []))
        step = proposal["value"]
        if count and not 0 <= step < count:
            raise OutOfRange(f"StepperView.step: an iteration in [0, {count}) expected, but "
                             f"received {step}")
        return step

    def batch_sizes(self):
        """The DynamicRNN batch size at each step, or None when the loop is not one."""
        rnn = self._model.get("dynamic_rnn")
        return list(rnn["batch_sizes"]) if rnn else None

    def _fallback_bundle(self):
        return {"text/plain": self._text()}

    def _text(self):
        lines = [f"StepperView: {len(self.iterations)} iteration(s)"]
        sizes = self.batch_sizes()
        if sizes is not None:
            lines.append(f"  DynamicRNN batch per step: {sizes}")
        return "\n".join(lines)

    def __repr__(self):
        return self._text().splitlines()[0]
