"""``fluid.default_scope_funcs``: a per-thread stack of scopes for code that creates
variables without an executor (Fluid 1.8's module of that name).

The bottom of each thread's stack is a fresh :class:`~fluid_nb.api.core.Scope` (not the
executor's ``global_scope()``); ``enter_local_scope`` pushes a kid of the current scope and
``leave_local_scope`` pops it and drops the kids of the scope below, so what a local scope
made is gone after it.
"""
import threading

from ..exec.scope import Scope

__all__ = ["get_cur_scope", "enter_local_scope", "leave_local_scope", "var", "find_var",
           "scoped_function"]

_thread = threading.local()


def _stack():
    stack = getattr(_thread, "scopes", None)
    if stack is None:
        stack = _thread.scopes = []
    if not stack:
        stack.append(Scope())
    return stack


def get_cur_scope():
    """The innermost scope of this thread."""
    return _stack()[-1]


def enter_local_scope():
    """Push a new kid of the current scope."""
    stack = _stack()
    stack.append(stack[-1].new_scope())


def leave_local_scope():
    """Pop the current local scope; the scope below drops its kids."""
    stack = _stack()
    if len(stack) > 1:  # the thread's root scope stays
        stack.pop()
    stack[-1].drop_kids()


def var(name):
    """The variable ``name`` of the current scope, created when missing."""
    return get_cur_scope().var(name)


def find_var(name):
    """The variable ``name`` in the current scope or its parents, or None."""
    return get_cur_scope().find_var(name)


def scoped_function(func):
    """Call ``func()`` inside a new local scope, left again however ``func`` ends."""
    enter_local_scope()
    try:
        func()
    finally:
        leave_local_scope()
