"""Widgets (anywidget, ipywidgets 8) that draw fluid_nb's view models in the browser.

- :class:`ProgramView`: the program graph, updated by deltas as live cells grow it;
- :class:`TensorView`: a tensor's values with its LoD as nested boxes;
- :class:`ScopeView`: the scope tree;
- :class:`StepperView`: a ``while`` loop (or a DynamicRNN) stepped iteration by iteration;
- :class:`MemoryView`: the host memory arena: block map, a run's used bytes op by op, variables;
- :class:`DistributedView`: a parameter-server job's programs side by side, RPCs between them.

Every widget also carries a plain fallback (HTML or text, and the program MIME bundle for
``ProgramView``) for frontends without widgets.
"""
from .distributed_view import DistributedView
from .memory_view import MemoryView
from .program_view import ProgramView, refresh_views
from .scope_view import ScopeView
from .stepper_view import StepperView
from .tensor_view import TensorView

__all__ = ["DistributedView", "MemoryView", "ProgramView", "ScopeView", "StepperView", "TensorView",
           "refresh_views"]
