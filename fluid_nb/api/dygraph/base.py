"""The entry points into Fluid's imperative mode, each refusing (see ``fluid.dygraph``)."""
import functools

from ...errors import Unimplemented, expected

__all__ = ["enabled", "guard", "no_grad", "to_variable", "refuse"]


def refuse(where):
    """The one error every imperative-mode entry raises."""
    raise Unimplemented(expected(where, "a mode fluid_nb has", "static graph (programs "
                                 "recorded by fluid.layers, run by an Executor or live mode)",
                                 "Fluid's imperative (dygraph) mode, which is not built"))


def enabled():
    """False: no imperative mode is ever on."""
    return False


def guard(place=None):
    refuse("fluid.dygraph.guard")


def to_variable(value, name=None, zero_copy=None):
    refuse("fluid.dygraph.to_variable")


def no_grad(func=None):
    """As a decorator, the function unchanged (static programs take no gradient unless
    ``append_backward`` asks); as a context manager, refused like the rest."""
    if callable(func):
        @functools.wraps(func)
        def call(*args, **kwargs):
            return func(*args, **kwargs)
        return call
    refuse("fluid.dygraph.no_grad")
